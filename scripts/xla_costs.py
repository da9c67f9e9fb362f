#!/usr/bin/env python3
"""xla_costs.py — fxplain's cost model beside XLA's own, kernel by kernel.

XLA:GPU logs every estimate its GpuPerformanceModel makes when its verbose log is on for that file
(TF_CPP_VMODULE=gpu_performance_model=8): for each instruction priority-fusion considers, the launch
(blocks, threads), flops, bytes read and written, and the read, write, compute and total times. This
script compiles a module with real XLA:GPU (scripts/xla_reference.py, deviceless) with that log on,
takes XLA's first estimate of every instruction of the module priority-fusion received (each
instruction standing alone: EstimateRunTimeForInstruction), asks fxplain's cost model for the same
instructions (the replay tool's --estimates), and prints where they differ, grouped by opcode and by
which part of the estimate differs.

Usage:
  xla_costs.py --replay PATH [--device h100|a100] [--show N] [--tolerance F] MODULE.hlo [WORKDIR]
      PATH: the replay tool (build/tests/xla_replay); MODULE.hlo: any module XLA can compile
  xla_costs.py --replay PATH --log XLA_STDERR.txt PRE_FUSION.hlo
      compare against a log and pre-fusion module made earlier

Exit 0 when it ran (whatever it found), 2 on bad input or when XLA could not compile the module.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["flops", "bytes_read", "bytes_written", "blocks", "read_time", "write_time", "compute_time",
          "exec_time"]


def duration_us(text):
    """absl::Duration text (1.5us, 245ns, 1.2ms, 0) in microseconds."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0
    total = 0.0
    for num, unit in re.findall(r"([0-9.eE+-]+)(ns|us|ms|s|m|h)", text):
        total += float(num) * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, "m": 6e7, "h": 3.6e9}[unit]
    return total


def parse_log(path):
    """XLA's first standalone estimate of each instruction: {name: {field: value}}."""
    out = {}
    name = None
    cur = None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.split("] ", 1)[1].rstrip("\n") if "] " in raw else raw.rstrip("\n")
            m = re.match(r"Runtime data for HLO: (\S+)$", line)
            if m:
                name = m.group(1)
                cur = {} if name not in out else None
                continue
            if cur is None:
                continue
            m = re.match(r"blocks: \{(\d+), \d+, \d+\}, threads/block: \{(\d+)", line)
            if m:
                cur["blocks"] = int(m.group(1))
                continue
            m = re.match(r"\s*(flops|bytes_read|bytes_written): (\d+)", line)
            if m:
                cur[m.group(1)] = float(m.group(2))
                continue
            m = re.match(r"\s*(read_time|write_time|compute_time|exec_time): (\S+)", line)
            if m:
                cur[m.group(1)] = duration_us(m.group(2))
                if m.group(1) == "exec_time":
                    out[name] = cur
                    cur = None
    return out


def opcodes(pre_fusion_text):
    ops = {}
    for line in pre_fusion_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?(\S+) = \S+(?:\[[^\]]*\])?(?:\{[^}]*\})? ([a-z-]+)\(", line)
        if m:
            ops[m.group(1)] = m.group(2)
        else:
            m = re.match(r"\s*(?:ROOT )?%?(\S+) = .*? ([a-z-]+)\(", line)
            if m:
                ops.setdefault(m.group(1), m.group(2))
    return ops


def ours(replay, pre, device):
    p = subprocess.run([replay, "--device", device, "--estimates", pre], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"xla_costs.py: {replay} --estimates failed: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) != 9:
            continue
        out[parts[0]] = dict(zip(FIELDS, (float(x) for x in parts[1:])))
    return out


def compare(xla, mine, ops, tol, show):
    by_op = collections.Counter()
    bad_op = collections.Counter()
    bad_field = collections.Counter()
    examples = collections.defaultdict(list)
    for name, x in xla.items():
        if name not in mine or x.get("exec_time", 0) == 0:
            continue
        o = mine[name]
        op = ops.get(name, "?")
        by_op[op] += 1
        diff = [f for f in FIELDS if f in x and abs(o[f] - x[f]) > tol * max(abs(x[f]), 1e-3)]
        if diff:
            bad_op[op] += 1
            for f in diff:
                bad_field[(op, f)] += 1
            if len(examples[op]) < show:
                examples[op].append((name, diff, x, o))
    total = sum(by_op.values())
    agree = total - sum(bad_op.values())
    print(f"{agree}/{total} instructions estimated alike (every part within {tol:.0%})")
    for op, n in sorted(by_op.items(), key=lambda kv: -bad_op[kv[0]]):
        if not bad_op[op]:
            continue
        fields = ", ".join(f"{f} {bad_field[(op, f)]}" for f in FIELDS if bad_field[(op, f)])
        print(f"  {op:24s} {bad_op[op]}/{n} differ: {fields}")
        for name, diff, x, o in examples[op]:
            print(f"    {name}: " + "; ".join(f"{f} XLA {x[f]:g} fxplain {o[f]:g}" for f in diff))


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog="xla_costs.py")
    p.add_argument("--replay", required=True)
    p.add_argument("--device", default="h100")
    p.add_argument("--log")
    p.add_argument("--show", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=0.01)
    p.add_argument("module")
    p.add_argument("workdir", nargs="?")
    a = p.parse_args(argv)
    if a.log:
        log, pre = a.log, a.module
    else:
        work = a.workdir or tempfile.mkdtemp(prefix="xla_costs.")
        name = os.path.basename(a.module)
        for suffix in (".hlo", ".txt"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="gpu_performance_model=8")
        r = subprocess.run([sys.executable, os.path.join(HERE, "xla_reference.py"), "--device", a.device,
                            "--keep-dump", "--no-gzip", a.module, work], env=env)
        log = os.path.join(work, name + ".xla_dump", "xla_stderr.txt")
        pre = os.path.join(work, name + ".pre_fusion.hlo")
        if r.returncode != 0 or not os.path.exists(pre):
            sys.exit(2)
    xla = parse_log(log)
    mine = ours(a.replay, pre, a.device)
    compare(xla, mine, opcodes(open(pre).read()), a.tolerance, a.show)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

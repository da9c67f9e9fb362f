#!/usr/bin/env python3
"""xla_pass_times.py -- how long real XLA:GPU's own passes take on a module, to set beside
bench_pipeline's figures for fxplain.

Compiles each MODULE.hlo with XLA:GPU deviceless (scripts/xla_reference.py's worker: jax's CUDA
plugin through the PJRT C API, for scripts/xla/DEVICE.txtpb), without any dump, with XLA's pass
timer on (TF_CPP_VMODULE=hlo_pass_pipeline=1: XLA logs "HLO pass: NAME time: ..." after every
pass), and prints for the module's own compilation (not the small modules XLA's autotuner compiles
on the side):

  compile      wall seconds of the whole compile (the worker's start, parse and LLVM included)
  passes       every HLO pass on the module, summed (a pipeline run as a pass is not counted twice)
  to fusion    the passes up to the end of XLA's fusion pipeline (priority-fusion,
               multi_output_fusion and the passes between): what fxplain's priority pipeline covers
  priority-fusion, multi_output_fusion   those two passes alone

Usage: python3 bench/xla_pass_times.py [--device h100|a100] [--timeout S] MODULE.hlo...
       python3 bench/xla_pass_times.py --log FILE...
With --log, reads XLA logs written with the timer on instead (a JAX program compiled under
TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=hlo_pass_pipeline=1, e.g. `bench/cartpole_scan_gpu.py -`);
the compile column is then empty.
Needs the pinned jax wheels scripts/test.sh installs; exits 3 when they are missing.
"""
import collections
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "..", "scripts", "xla_reference.py")

RUNNING = re.compile(r"\] Running HLO pass pipeline on module ([^:]+): (\S+)")
TIMED = re.compile(r"^\S+ \S+\s+(\d+) hlo_pass_pipeline\.cc:\d+\] HLO pass: (\S+) time: .*?\((\d+) us\)")


def parse(log):
    """Per-pass microseconds of the first module the log names (the one compiled), and the
    microseconds of its passes up to the end of its fusion pipeline."""
    compiled = None
    pipelines = set()  # the compiled module's pipelines
    current = {}       # thread -> the module whose pipeline last started on it
    timed = []         # (pass, us) on the compiled module, in order
    after_fusion = False
    through_fusion = 0
    for line in log.splitlines():
        m = RUNNING.search(line)
        if m:
            module, pipeline = m.group(1), m.group(2)
            thread = line.split()[2] if len(line.split()) > 2 else ""
            current[thread] = module
            if compiled is None:
                compiled = module
            if module == compiled:
                pipelines.add(pipeline)
                if pipeline != "fusion" and "fusion" in pipelines:
                    after_fusion = True
            continue
        m = TIMED.match(line)
        if not m or current.get(m.group(1)) != compiled:
            continue
        name, us = m.group(2), int(m.group(3))
        timed.append((name, us))
        if not after_fusion and name not in pipelines:
            through_fusion += us
    totals = collections.Counter()
    for name, us in timed:
        if name not in pipelines:  # a pipeline timed as a pass holds passes already counted
            totals[name] += us
    return totals, through_fusion


def main(argv):
    device, timeout, files, logs = "h100", 1800, [], False
    k = 0
    while k < len(argv):
        if argv[k] == "--log":
            logs = True
            k += 1
        elif argv[k] == "--device" and k + 1 < len(argv):
            device = argv[k + 1]
            k += 2
        elif argv[k] == "--timeout" and k + 1 < len(argv):
            timeout = float(argv[k + 1])
            k += 2
        elif argv[k].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            files.append(argv[k])
            k += 1
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    config = device if os.path.isfile(device) else os.path.join(HERE, "..", "scripts", "xla", device + ".txtpb")
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="", TF_CPP_MIN_LOG_LEVEL="0",
               TF_CPP_VMODULE="hlo_pass_pipeline=1")
    print(f"{'module':44} {'compile':>9} {'passes':>9} {'to fusion':>10} {'priority-fusion':>16} "
          f"{'multi_output':>13}")
    status = 0
    for path in files:
        name = os.path.basename(path)
        if logs:
            try:
                with open(path, errors="replace") as f:
                    totals, to_fusion = parse(f.read())
            except OSError as e:
                print(f"xla_pass_times: {path}: {e.strerror}", file=sys.stderr)
                status = 1
                continue
            print(f"{name:44} {'-':>9} {sum(totals.values()) / 1e6:8.3f}s {to_fusion / 1e6:9.3f}s "
                  f"{totals['priority-fusion'] / 1e3:13.1f} ms {totals['multi_output_fusion'] / 1e3:10.1f} ms")
            continue
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, DRIVER, "--worker", config, path], env=env,
                               capture_output=True, text=True, timeout=timeout)
            rc, err = p.returncode, p.stderr
        except subprocess.TimeoutExpired:
            rc, err = -9, ""
        wall = time.time() - t0
        if rc == 3 or "No module named" in err:
            print("xla_pass_times: the pinned jax wheels are missing (scripts/test.sh installs them)",
                  file=sys.stderr)
            return 3
        totals, to_fusion = parse(err)
        if not totals:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {rc}"
            print(f"{name:44} no pass times (rc {rc}): {last[:120]}")
            status = 1
            continue
        # The compile may fail after the HLO passes (a sort's CUB scratch query needs a device):
        # the pass times are complete then, and the row says so.
        note = "" if rc == 0 else "  (failed after its HLO passes)"
        print(f"{name:44} {wall:8.1f}s {sum(totals.values()) / 1e6:8.3f}s {to_fusion / 1e6:9.3f}s "
              f"{totals['priority-fusion'] / 1e3:13.1f} ms {totals['multi_output_fusion'] / 1e3:10.1f} ms{note}")
        sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""corpus_cpu.py — fxplain's CPU backend against XLA:CPU on every corpus module both can run.

    python3 bench/corpus_cpu.py [--fxplain build/fxplain] [--before OLD_FXPLAIN]
                                [--corpus tests/data/hlo-corpus] [--pipeline priority] [--repeat 5]
                                [--timeout 300] [--only NAME] [--markdown FILE]

For each module of the corpus (smallest file first):
  * XLA:CPU (jax's own CPU client, in a child process: XLA may abort) parses the HLO text,
    compiles it with its whole CPU pipeline, and runs it on random inputs: one warm-up run, then
    the median of --repeat runs (each waits for its outputs; the inputs are put on the device
    before the clock starts, afresh for each run since a module may donate them).
  * fxplain, in a child process, as a user would:
        fxplain -e 'load FILE; pipeline P; step all; run --backend cpu --repeat N'
    and the median that `run` prints (compile time excluded: `run` compiles the kernels, or
    finds them in its cache, before it times anything; the first of its runs is not a warm-up,
    so the median of 5 is used).
  XLA's parser here does not know topk's is_stable attribute: it is dropped (ties only).
  Inputs on both sides are seeded random data of the same kind (floats in [-1, 1), integers in
  [0, 16), booleans), not the same values: bf16 and the f8 types have no NumPy dtype to hand
  fxplain a file in. Every module here has trip counts fixed by the program, not by the data.
With --before, an older build of fxplain (e.g. main's) runs each module too, right after the
current one, and the table shows both and the ratio of each to XLA:CPU: before/after side by side
under the same load.
A module either side cannot run (an XLA parse or compile error, fxplain refusing an op, more
memory than the machine has, past --timeout) is listed with the reason. Both sides use every core
(XLA:CPU's thread pool; `set threads 0`). Prints the table (markdown with --markdown FILE too),
the geometric mean of XLA time / fxplain time over the modules both ran (above 1: fxplain
faster), and the machine's load before and after.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

WORKER = r"""
import json, os, sys, time
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np
import jax
from jaxlib import _hlo
from jax._src.lib import xla_client as xc
path, repeat = sys.argv[1], int(sys.argv[2])
import re
text = open(path).read()
# XLA's parser in this jax does not know topk's is_stable (as scripts/xla_reference.py does).
text = re.sub(r",\s*is_stable=(true|false)", "", text)
t0 = time.perf_counter()
mod = _hlo.hlo_module_from_text(text)
comp = xc.XlaComputation(mod.as_serialized_hlo_module_proto())
dev = jax.devices("cpu")[0]
exe = dev.client.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto()),
                                  xc.DeviceList((dev,)), xc.CompileOptions())
compile_s = time.perf_counter() - t0
rng = np.random.default_rng(2026)
host = []
for s in comp.program_shape().parameter_shapes():
    if s.is_tuple():
        print(json.dumps({"error": "a tuple parameter"})); sys.exit(0)
    dt = np.dtype(s.numpy_dtype())
    dims = tuple(s.dimensions())
    if dt == np.bool_:
        a = rng.integers(0, 2, dims).astype(np.bool_)
    elif np.issubdtype(dt, np.integer):
        a = rng.integers(0, 16, dims).astype(dt)
    elif np.issubdtype(dt, np.complexfloating):
        a = (rng.uniform(-1, 1, dims) + 1j * rng.uniform(-1, 1, dims)).astype(dt)
    else:
        a = rng.uniform(-1, 1, dims).astype(np.float32).astype(dt)
    host.append(a)
def once():
    # Fresh device buffers for every run, put there before the clock starts: a module with
    # input_output_alias donates its inputs to its outputs.
    args = [jax.device_put(a, dev) for a in host]
    for a in args:
        a.block_until_ready()
    t = time.perf_counter()
    outs = exe.execute(args)
    for o in outs:
        o.block_until_ready()
    return time.perf_counter() - t
once()
times = []
for _ in range(repeat):
    times.append(once())
times.sort()
print(json.dumps({"median_s": times[len(times) // 2], "compile_s": compile_s}))
"""


def load():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return ["?", "?", "?"]


def run_xla(path, repeat, timeout):
    try:
        p = subprocess.run([sys.executable, "-c", WORKER, path, str(repeat)], capture_output=True, text=True,
                           timeout=timeout, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    except subprocess.TimeoutExpired:
        return None, f"XLA:CPU took longer than {timeout} s"
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            r = json.loads(line)
            if "error" in r:
                return None, "XLA:CPU: " + r["error"]
            return r, None
    err = [l for l in p.stderr.splitlines() if re.search(r"[Ee]rror|INVALID|UNIMPLEMENTED|Killed", l)]
    if not err and p.returncode < 0:
        return None, f"XLA:CPU: killed by signal {-p.returncode} (SIGKILL when 9: most likely the out-of-memory killer)"
    return None, "XLA:CPU: " + (err[-1].strip()[:160] if err else f"exit status {p.returncode}")


def run_fxplain(fxplain, path, pipeline, repeat, timeout):
    cmd = f"load {path}; pipeline {pipeline}; step all; run --backend cpu --repeat {repeat}"
    t0 = time.perf_counter()
    try:
        p = subprocess.run([fxplain, "-e", cmd], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"fxplain took longer than {timeout} s (pipeline, kernel compile and runs)", None
    wall = time.perf_counter() - t0
    m = re.search(r"time ([0-9.]+) (ns|us|ms|s) \(median of", p.stdout)
    if p.returncode != 0 or not m:
        err = [l for l in (p.stderr + p.stdout).splitlines() if "error" in l]
        why = err[-1] if err else f"exit status {p.returncode}"
        return None, "fxplain: " + re.sub(r"^.*?error: ", "", why)[:160], wall
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    interp = "interpreter" in p.stdout and "run on the interpreter" in p.stdout
    return {"median_s": float(m.group(1)) * scale, "notes": "some kernels on the interpreter" if interp else ""}, \
        None, wall


def fmt_t(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fxplain", default="build/fxplain")
    ap.add_argument("--before", default="", help="an older fxplain to run each module with too")
    ap.add_argument("--corpus", default=os.environ.get("FXPLAIN_HLO_CORPUS") or "tests/data/hlo-corpus")
    ap.add_argument("--pipeline", default="priority")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", default="")
    a = ap.parse_args()
    files = sorted((f for f in os.listdir(a.corpus) if f.endswith(".hlo") and a.only in f),
                   key=lambda f: os.path.getsize(os.path.join(a.corpus, f)))
    start_load = load()
    print(f"load average at start: {' '.join(start_load)} ({os.cpu_count()} cores)", flush=True)
    print(f"fxplain: {a.fxplain}, pipeline {a.pipeline}, `run --backend cpu --repeat {a.repeat}`; XLA:CPU: "
          f"jax's CPU client, median of {a.repeat} after a warm-up", flush=True)
    rows = []
    for f in files:
        path = os.path.join(a.corpus, f)
        x, xerr = run_xla(path, a.repeat, a.timeout)
        y, yerr, wall = run_fxplain(a.fxplain, path, a.pipeline, a.repeat, a.timeout)
        ratio = x["median_s"] / y["median_s"] if x and y and y["median_s"] > 0 else None
        bratio, b = None, None
        if a.before:
            b, berr, _ = run_fxplain(a.before, path, a.pipeline, a.repeat, a.timeout)
            bratio = x["median_s"] / b["median_s"] if x and b and b["median_s"] > 0 else None
        why = "; ".join(e for e in (xerr, yerr) if e)
        rows.append((f, x, y, ratio, why, b, bratio))
        before = f"  before {fmt_t(b and b['median_s']):>10s} {('%.2fx' % bratio) if bratio else '-':>7s}" if a.before else ""
        print(f"{f:58s} XLA {fmt_t(x and x['median_s']):>10s}  fxplain {fmt_t(y and y['median_s']):>10s}  "
              f"{('%.2fx' % ratio) if ratio else '':>7s}{before}  {why}{(' ' + y['notes']) if y and y['notes'] else ''}",
              flush=True)
    both = [r for r in rows if r[3]]
    gm = math.exp(sum(math.log(r[3]) for r in both) / len(both)) if both else None
    end_load = load()
    summary = (f"{len(both)} of {len(rows)} modules ran on both; geometric mean of XLA:CPU time / fxplain time: "
               f"{gm:.2f}x" if gm else "no module ran on both")
    bsummary = ""
    if a.before:
        bboth = [r for r in rows if r[3] and r[6]]
        if bboth:
            g_after = math.exp(sum(math.log(r[3]) for r in bboth) / len(bboth))
            g_before = math.exp(sum(math.log(r[6]) for r in bboth) / len(bboth))
            bsummary = (f"over the {len(bboth)} modules both builds ran: {g_before:.2f}x before ({a.before}), "
                        f"{g_after:.2f}x after; faster than before on "
                        f"{sum(1 for r in bboth if r[2]['median_s'] < r[5]['median_s'])}")
    print(summary)
    if bsummary:
        print(bsummary)
    wins = sum(1 for r in both if r[3] >= 1)
    print(f"fxplain faster on {wins}, XLA:CPU faster on {len(both) - wins}")
    print(f"load average at end: {' '.join(end_load)}")
    if a.markdown:
        with open(a.markdown, "w") as out:
            if a.before:
                out.write("| module | XLA:CPU | fxplain CPU | XLA / fxplain | before | XLA / before | why not both |\n")
                out.write("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
            else:
                out.write("| module | XLA:CPU | fxplain CPU | XLA / fxplain | why not both |\n")
                out.write("| --- | ---: | ---: | ---: | --- |\n")
            for f, x, y, ratio, why, b, bratio in rows:
                before = f" {fmt_t(b and b['median_s'])} | {('%.2fx' % bratio) if bratio else '-'} |" if a.before else ""
                out.write(f"| `{f}` | {fmt_t(x and x['median_s'])} | {fmt_t(y and y['median_s'])} | "
                          f"{('%.2fx' % ratio) if ratio else '-'} |{before} {why}{(' ' + y['notes']) if y and y['notes'] else ''} |\n")
            out.write(f"\n{summary}; fxplain faster on {wins}, XLA:CPU faster on {len(both) - wins}. "
                      f"Load average {' '.join(start_load)} at start, {' '.join(end_load)} at end.\n")
            if bsummary:
                out.write(f"\n{bsummary}.\n")


if __name__ == "__main__":
    main()

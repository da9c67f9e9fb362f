#!/usr/bin/env python3
"""jax_test.py FXPLAIN SRCDIR OUTDIR — fxplain on real XLA:GPU dumps that nobody here wrote.

Compiles a transformer block, a training step with an Adam update and the paper's CartPole step
with real XLA:GPU (deviceless, make_dumps.py, every pass dumped), then checks with fxplain: every
snapshot of the main module loads as a stage of the `xla` pipeline, the decision log has XLA's
counts, `why` on XLA's first fusion shows XLA's verdict and fxplain's, and `find PROGRAM.py:LINE`
maps a Python line to its kernels; and the `xla` command compiles a module with real XLA and
shows its kernels beside fxplain's. Exit 77 (skipped) without the jax wheels.
"""
import json
import os
import re
import subprocess
import sys

fx, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
txtpb = os.path.join(src, "scripts", "xla", "h100.txtpb")
r = subprocess.run([sys.executable, os.path.join(src, "tests", "xla_dumps", "make_dumps.py"), out, txtpb,
                    "block", "train", "cartpole"], capture_output=True, text=True)
if r.returncode == 77:
    print(r.stdout.strip())
    sys.exit(77)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    sys.exit(1)
failed = False


def run(cmds):
    p = subprocess.run([fx, "-e", cmds], capture_output=True, text=True, cwd=src)
    return p.returncode, p.stdout + p.stderr


for line in r.stdout.splitlines():
    name, prog, *marks = line.split()
    dump = os.path.join(out, name)
    rc, text = run(f"load {dump}")
    m = re.search(r"pipeline xla: (\d+) stages", text)
    if rc != 0 or not m:
        print(f"FAIL {name}: load\n{text[-2000:]}")
        failed = True
        continue
    last = int(m.group(1)) - 1
    rc, text = run(f"load {dump}; goto {last}; passes")
    if rc != 0 or "not run" in text:
        print(f"FAIL {name}: not every snapshot loads as a stage\n{text[-3000:]}")
        failed = True
    logs = [f for f in os.listdir(dump) if f.endswith(".priority_fusion_dump.txt") and ".jit_f." in f]
    steps = open(os.path.join(dump, logs[0])).read()
    want = (f"{steps.count('  fusion {')} fusions, {steps.count('  producer_ineligible {')} ineligible producers, "
            f"{steps.count('  update_priority {')} priority updates")
    rc, text = run(f"load {dump}")
    if want not in text:
        print(f"FAIL {name}: the decision log's counts, expected '{want}'\n{text[-1500:]}")
        failed = True
    fm = re.search(r'  fusion \{\n    fusion_name: "[^"]*"\n    producer_name: "([^"]*)"\n    consumer_name: "([^"]*)"', steps)
    if fm:
        rc, text = run(f"load {dump}; goto priority-fusion; why {fm.group(1)} {fm.group(2)}")
        if rc != 0 or "XLA fused" not in text or ("fxplain agrees" not in text and "DISAGREE" not in text):
            print(f"FAIL {name}: why {fm.group(1)} {fm.group(2)} shows not both verdicts\n{text[-2000:]}")
            failed = True
    for mark in marks:
        label, lineno = mark.split("=")
        base = os.path.basename(prog)
        rc, text = run(f"load {dump}; goto priority-fusion; find {base}:{lineno}")
        if rc != 0 or not re.search(rf"\d+ instructions? from {re.escape(base)}:{lineno} at stage \d+, in \d+ kernels?:", text):
            print(f"FAIL {name}: find {base}:{lineno} ({label}) maps to no kernel\n{text[-2000:]}")
            failed = True
    if name == "block":
        # The report steps through XLA's log with a picture per step and the steps as JSON.
        html_path = os.path.join(out, name + ".html")
        rc, text = run(f"load {dump}; goto priority-fusion; report {html_path}")
        html = open(html_path).read() if rc == 0 else ""
        m = re.search(r'<script type="application/json" class="xla-steps-data">(.*?)</script>', html, re.S)
        js = json.loads(m.group(1)) if m else []
        kinds = [x["kind"] for x in js]
        counts = (f"{kinds.count('fusion')} fusions, {kinds.count('producer_ineligible')} ineligible producers, "
                  f"{kinds.count('update_priority')} priority updates")
        pictures = html.count('<template id="xla-steps-')
        if rc != 0 or counts != want or pictures == 0 or pictures != sum(x["picture"] for x in js):
            print(f"FAIL {name}: report: steps {counts} (want {want}), {pictures} pictures\n{text[-1500:]}")
            failed = True
        else:
            print(f"{name}: report with {len(js)} steps as JSON, {pictures} drawn")
    print(f"{name}: {last + 1} stages, {want}")
# The xla command: real XLA:GPU on a loaded module, its kernels beside fxplain's.
p = subprocess.run([fx, "-e", "load tests/xla_driver/softmax.hlo; xla --device h100"], capture_output=True, text=True,
                   cwd=src, env=dict(os.environ, FXPLAIN_PYTHON=sys.executable))
text = p.stdout + p.stderr
if p.returncode != 0 or "kernels: real XLA 1" not in text or "same (7 instructions)" not in text:
    print(f"FAIL xla command\n{text[-3000:]}")
    failed = True
else:
    print("xla command: XLA's kernels beside fxplain's")
sys.exit(1 if failed else 0)

#!/usr/bin/env python3
"""driver.py — ctest xla_driver.reference_DEVICE: scripts/xla_reference.py makes real XLA:GPU's
references for two small modules on one device, and they hold what XLA is known to do to them:

  softmax.hlo   XLA's own rewriter has already made the softmax into two fusions before
                priority-fusion, which joins them: 2 fusions before, 1 after, 1 at the end.
  mean_var.hlo  two row reductions of the same input: priority-fusion makes one reduction
                fusion of each (2), multi_output_fusion joins the siblings into one multi-output
                fusion (1).

Each run must write the five outputs (the three stages, the final module and the
FusionProcessDump) and a record with status ok. Skipped (exit 77) when the python running it
does not have the wheels (the driver exits 3). Usage: driver.py REPO_ROOT DEVICE WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = {  # module: fusions in (pre_fusion, after_priority_fusion, after_multi_output_fusion)
    "softmax": (2, 1, 1),
    "mean_var": (0, 2, 1),
}
STAGES = ("pre_fusion", "after_priority_fusion", "after_multi_output_fusion")
OUTPUTS = [s + ".hlo" for s in STAGES] + ["after_opt.hlo", "priority_fusion_dump.txt"]


def fusions(path):
    return len(re.findall(r"\s=\s[^=\n]*?\sfusion\(", open(path).read()))


def main():
    root, device, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    driver = os.path.join(root, "scripts", "xla_reference.py")
    bad = 0
    for name, want in EXPECTED.items():
        p = subprocess.run([sys.executable, driver, "--device", device,
                            os.path.join(HERE, name + ".hlo"), work],
                           capture_output=True, text=True)
        if p.returncode == 3:
            print("skipped: " + p.stderr.strip())
            return 77
        print(p.stdout.strip())
        if p.returncode != 0:
            print(f"{name}: the driver failed (exit {p.returncode}):\n{p.stderr.strip()}")
            bad += 1
            continue
        missing = [o for o in OUTPUTS if not os.path.isfile(os.path.join(work, f"{name}.{o}"))]
        if missing:
            print(f"{name}: no " + ", ".join(f"{name}.{o}" for o in missing))
            bad += 1
            continue
        record = json.load(open(os.path.join(work, f"{name}.xla_reference.json")))
        got = tuple(fusions(os.path.join(work, f"{name}.{s}.hlo")) for s in STAGES)
        if record["status"] != "ok" or got != want:
            print(f"{name}: status {record['status']}, fusions (pre, after priority-fusion, after "
                  f"multi_output_fusion) = {got}, expected ok and {want}")
            bad += 1
        if "fusion {" not in open(os.path.join(work, f"{name}.priority_fusion_dump.txt")).read():
            print(f"{name}: the FusionProcessDump holds no fusion step")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tests scripts/xla_compare.py itself on XLA's own results: a compilation agrees with itself, the
module before fusion does not agree with the module after it, and the kernels found are the ones
XLA built (by count, and for layer norm by their members)."""
import os
import sys

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "scripts"))
import xla_compare  # noqa: E402

ref = os.path.join(root, "tests", "xla", "h100")
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    failures += 0 if cond else 1


def path(name, stage):
    return os.path.join(ref, f"{name}.{stage}.hlo.gz")


# XLA renames what it clones (exp.0.0 becomes exp.0.3): matching by what each value computes
# must still find every kernel identical to itself.
for name in ("mha_block_1x12x128x64_bf16", "dlrm_keras_jax_f32_test_step", "resnet50_keras_jax_f32"):
    mof = path(name, "after_multi_output_fusion")
    r = xla_compare.compare(path(name, "pre_fusion"), mof, mof)
    check(r["identical"] and r["pair_f1"] == 1.0 and r["unmatched"] == {"xla": 0, "ours": 0},
          f"{name}: XLA's kernels agree with themselves ({r['xla_kernels']} kernels, nothing unmatched)")

# Layer norm: XLA merges its two Triton fusions into one kernel; the module before fusion has two.
name = "layer_norm_1x4096x768_bf16"
r = xla_compare.compare(path(name, "pre_fusion"), path(name, "after_multi_output_fusion"), path(name, "pre_fusion"))
check(not r["identical"] and r["xla_kernels"] == 1 and r["our_kernels"] == 2 and r["pair_f1"] == 0.0,
      f"{name}: before fusion 2 kernels against XLA's 1, pair F1 0")
d = r["first_difference"] or {}
check(d.get("xla_members") == ["triton_softmax.2", "triton_softmax.3"] and len(d.get("ours", [])) == 2,
      f"{name}: the first difference names XLA's kernel and the two it splits into")

# The mha block: 3 kernels after fusion; before it, 5 (the exp between the softmax fusions
# and the two GEMMs each alone).
name = "mha_block_1x12x128x64_bf16"
r = xla_compare.compare(path(name, "pre_fusion"), path(name, "after_multi_output_fusion"), path(name, "pre_fusion"))
check(r["xla_kernels"] == 3 and r["our_kernels"] == 5, f"{name}: 3 kernels after XLA's fusion, 5 before")

# A file that is not HLO gets one clear error.
try:
    xla_compare.compare(os.path.join(root, "README.md"), path(name, "pre_fusion"), path(name, "pre_fusion"))
    check(False, "a README is refused as HLO")
except xla_compare.HloError as e:
    check("not an HLO module" in str(e), f"a README is refused as HLO: {e}")

print(f"{failures} failed")
sys.exit(1 if failures else 0)

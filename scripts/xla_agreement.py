#!/usr/bin/env python3
"""How close fxplain's priority pipeline comes to XLA:GPU, module by module.

    xla_agreement.py REFDIR [--fxplain build/fxplain] [--device h100] [--only SUBSTR]
                     [--markdown] [--json] [--keep DIR]

REFDIR holds XLA's results for each module NAME (as scripts/xla_reference.py writes them):
NAME.pre_fusion.hlo (what XLA's priority-fusion received) and NAME.after_multi_output_fusion.hlo
(the end of XLA's fusion pipeline); either may be gzip-compressed. NAME.pre_fusion.hlo.pb, XLA's
proto dump of the pre-fusion module, when there, gives fxplain XLA's instruction ids (XLA breaks
ties in priority-fusion's queue by them; the text does not print them). For each module, fxplain
loads the pre-fusion module, runs its priority pipeline with the simplification passes off (XLA
has already run them), saves the last stage, and scripts/xla_compare.py compares the kernels.

Prints one line per module, `identical` or the first differing kernel, then the totals: modules
identical, mean pair F1. Exit status 0 when every module is identical (or, with --at-least and
--min-f1, when the agreement is at least that), 1 otherwise.
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla_compare  # noqa: E402

# XLA's pipeline has run every simplification before priority-fusion sees the module.
SIMPLIFICATION = ["call-inliner", "sharding-remover", "comparison-expander", "scatter-expander", "slice-sinker",
                  "reshape-mover", "algsimp", "constant-folding", "while-loop-constant-sinking",
                  "while-loop-simplifier", "conditional-simplifier", "cse",
                  "dce", "tuple-simplifier", "tree-reduction-rewriter", "float-normalization-bf16",
                  "simplify-fp-conversions", "while-loop-unroll", "simplification-fixpoint", "convert-mover",
                  "simplification-2"]


def find(refdir, name, what):
    for p in (f"{refdir}/{name}.{what}.hlo", f"{refdir}/{name}.{what}.hlo.gz"):
        if os.path.exists(p):
            return p
    return None


def plain(path, tmp):
    """fxplain reads plain text: a .gz reference is unpacked into tmp first."""
    if not path.endswith(".gz"):
        return path
    out = os.path.join(tmp, os.path.basename(path)[:-3])
    with gzip.open(path, "rb") as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


def place_ids(refdir, name, pre_p, tmp):
    """XLA's proto dump of the pre-fusion module (NAME.pre_fusion.hlo.pb, for XLA's instruction
    ids, which break the priority queue's ties) goes beside the text, where fxplain looks for it.
    Returns the text's path to load, or pre_p when there is no proto dump."""
    for p in (f"{refdir}/{name}.pre_fusion.hlo.pb", f"{refdir}/{name}.pre_fusion.hlo.pb.gz"):
        if not os.path.exists(p):
            continue
        text = pre_p
        if os.path.dirname(os.path.abspath(pre_p)) != os.path.abspath(tmp):
            text = os.path.join(tmp, os.path.basename(pre_p))
            shutil.copyfile(pre_p, text)
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rb") as f, open(text + ".pb", "wb") as g:
            shutil.copyfileobj(f, g)
        return text
    return pre_p


def run_fxplain(fxplain, pre, out, device, timeout, stage="multi_output_fusion"):
    cmds = [f"load {pre}", f"set device {device}", "pipeline priority"]
    cmds += [f"set pass {p} off" for p in SIMPLIFICATION]
    if stage == "priority_fusion":
        # XLA's after_priority_fusion module is written before the fusion pipeline's cse and dce.
        cmds += [f"set pass {p} off" for p in ("fusion-cse", "fusion-dce", "multi_output_fusion")]
    cmds += ["step all", f"save {out}"]
    t0 = time.time()
    r = subprocess.run([fxplain, "-e", "; ".join(cmds)], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, FXPLAIN_HISTORY="/dev/null"))
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(msg[0] if msg else f"fxplain exited with {r.returncode}")
    return time.time() - t0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("refdir")
    ap.add_argument("--fxplain", default=os.path.join(os.path.dirname(__file__), "..", "build", "fxplain"))
    ap.add_argument("--device", default="h100")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="keep fxplain's last stages in this folder")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--at-least", type=int, default=None,
                    help="succeed when at least this many modules are identical (a floor the tests hold)")
    ap.add_argument("--min-f1", type=float, default=None,
                    help="and the mean pair F1 is at least this")
    ap.add_argument("--stage", choices=["multi_output_fusion", "priority_fusion"], default="multi_output_fusion",
                    help="compare the end of the fusion pipeline (default) or priority-fusion alone")
    ap.add_argument("--no-ids", dest="ids", action="store_false",
                    help="leave out XLA's instruction ids (NAME.pre_fusion.hlo.pb): fxplain then numbers the "
                         "module in the order of its text")
    ap.add_argument("--readme", action="store_true",
                    help="print the README's table: both stages side by side, in Markdown")
    a = ap.parse_args(argv)
    if a.readme:
        return readme_table(a, argv)
    names = sorted(os.path.basename(p).split(".pre_fusion.hlo")[0]
                   for p in glob.glob(os.path.join(a.refdir, "*.pre_fusion.hlo"))
                   + glob.glob(os.path.join(a.refdir, "*.pre_fusion.hlo.gz")))
    if a.only:
        names = [n for n in names if any(s in n for s in a.only)]
    if not names:
        print(f"xla_agreement: error: no NAME.pre_fusion.hlo in {a.refdir}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        outdir = a.keep or tmp
        os.makedirs(outdir, exist_ok=True)
        for n in names:
            pre, xla = find(a.refdir, n, "pre_fusion"), find(a.refdir, n, "after_" + a.stage)
            row = {"module": n}
            try:
                if not xla:
                    raise RuntimeError(f"no after_{a.stage} reference")
                pre_p = plain(pre, tmp)
                if a.ids:
                    pre_p = place_ids(a.refdir, n, pre_p, tmp)
                ours = os.path.join(outdir, n + ".fxplain.hlo")
                row["seconds"] = run_fxplain(a.fxplain, pre_p, ours, a.device, a.timeout, a.stage)
                r = xla_compare.compare(pre_p, xla, ours)
                row.update(r)
                row["text"] = xla_compare.describe(r)
            except (RuntimeError, xla_compare.HloError, subprocess.TimeoutExpired) as e:
                row.update({"identical": False, "pair_f1": 0.0, "text": f"error: {e}",
                            "xla_kernels": None, "our_kernels": None})
            rows.append(row)
            if not a.json and not a.markdown:
                print(f"{n}: kernels XLA {row['xla_kernels']}, fxplain {row['our_kernels']}, "
                      f"pair F1 {row['pair_f1']:.3f}: {row['text']}", flush=True)
    same = sum(1 for r in rows if r["identical"])
    mean = sum(r["pair_f1"] for r in rows) / len(rows)
    if a.json:
        print(json.dumps({"device": a.device, "modules": rows, "identical": same, "mean_pair_f1": mean}))
    elif a.markdown:
        print("| module | XLA kernels | fxplain kernels | pair F1 | identical? |")
        print("| --- | ---: | ---: | ---: | --- |")
        for r in rows:
            print(f"| {r['module']} | {r['xla_kernels']} | {r['our_kernels']} | {r['pair_f1']:.3f} | "
                  f"{'yes' if r['identical'] else 'no'} |")
        print(f"\n{same} of {len(rows)} identical on {a.device}; mean pair F1 {mean:.3f}.")
    else:
        print(f"{same} of {len(rows)} modules identical on {a.device}; mean pair F1 {mean:.3f}")
    if a.at_least is not None or a.min_f1 is not None:
        ok = (a.at_least is None or same >= a.at_least) and (a.min_f1 is None or mean >= a.min_f1 - 5e-4)
        if not ok:
            print(f"xla_agreement: agreement fell: {same} identical (floor {a.at_least}), mean pair F1 "
                  f"{mean:.3f} (floor {a.min_f1})", file=sys.stderr)
        return 0 if ok else 1
    return 0 if same == len(rows) else 1


def readme_table(a, argv):
    """Both stages, one row per module, as the README's "How close to XLA" shows them."""
    import io
    import contextlib
    base = [x for x in argv if x != "--readme"]
    out = {}
    for stage in ("priority_fusion", "multi_output_fusion"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(base + ["--json", "--stage", stage])
        out[stage] = json.loads(buf.getvalue())
    p, m = out["priority_fusion"], out["multi_output_fusion"]
    print("| module | after priority-fusion: XLA / fxplain kernels | identical? | "
          "after multi_output_fusion: XLA / fxplain kernels | identical? | pair F1 |")
    print("| --- | ---: | --- | ---: | --- | ---: |")
    for rp, rm in zip(p["modules"], m["modules"]):
        print(f"| {rp['module']} | {rp['xla_kernels']} / {rp['our_kernels']} | {'yes' if rp['identical'] else 'no'} | "
              f"{rm['xla_kernels']} / {rm['our_kernels']} | {'yes' if rm['identical'] else 'no'} | {rm['pair_f1']:.3f} |")
    n = len(p["modules"])
    print(f"\nOn {p['device']}: priority-fusion alone ends with XLA's kernels on {p['identical']} of {n} modules "
          f"(mean pair F1 {p['mean_pair_f1']:.3f}); the whole fusion pipeline on {m['identical']} of {n} "
          f"(mean pair F1 {m['mean_pair_f1']:.3f}).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

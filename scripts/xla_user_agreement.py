#!/usr/bin/env python3
"""How close fxplain comes to XLA:GPU from what a user dumps: the module as JAX wrote it.

    xla_user_agreement.py CORPUS_DIR REFDIR [--fxplain build/fxplain] [--device h100] [--only S]
                          [--min-f1 X] [--same-count]

For each CORPUS_DIR/NAME.hlo with XLA's results in REFDIR (NAME.pre_fusion.hlo and
NAME.after_multi_output_fusion.hlo, from scripts/xla_reference.py), fxplain runs its whole
priority pipeline, simplification included, on the module as written, and its kernels are compared
with the kernels XLA built from the same module.

The two compilations simplify differently, so only the instructions both keep are compared: XLA
appends `.0` to the names of the instructions its priority-fusion receives, and fxplain keeps the
names it loaded (a duplicated copy is `NAME.clone`). An instruction of the user's module counts
when both end with it inside (or as) a kernel. Prints per module the kernel counts of both, how
many of the user's instructions were compared, and the pair F1 over them. With --min-f1 or
--same-count, exits 1 when the mean pair F1 is below X or a module's kernel counts differ.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla_compare  # noqa: E402
from xla_agreement import find, plain  # noqa: E402

CLONE = re.compile(r"(\.clone(\.\d+)?)+$")


def user_name_of_xla(name):
    return name[:-2] if name.endswith(".0") else name


def our_kernels(path):
    """fxplain's kernels by name: kernel -> set of user instruction names."""
    mod = xla_compare.load(path)
    comps = mod["comps"]
    ks = {}
    for cname in xla_compare.control_computations(mod):
        for ins in comps[cname]["instrs"]:
            op = ins["op"]
            if op in xla_compare.NO_KERNEL or op in xla_compare.CONTROL:
                continue
            members = set()
            if op == "fusion":
                stack = list(ins["calls"])
                while stack:
                    body = comps.get(stack.pop())
                    if not body:
                        continue
                    for x in body["instrs"]:
                        if x["op"] == "fusion":
                            stack += x["calls"]
                        elif x["op"] not in xla_compare.NO_KERNEL:
                            members.add(CLONE.sub("", x["name"]))
            else:
                members.add(CLONE.sub("", ins["name"]))
            ks[ins["name"]] = members
    return ks


def f1(ka, kb, universe):
    def pairs(ks):
        ps = set()
        for m in ks.values():
            m = sorted(m & universe)
            for i in range(len(m)):
                for j in range(i + 1, len(m)):
                    ps.add((m[i], m[j]))
        return ps
    pa, pb = pairs(ka), pairs(kb)
    return 1.0 if not pa and not pb else 2 * len(pa & pb) / (len(pa) + len(pb))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("refdir")
    ap.add_argument("--fxplain", default=os.path.join(os.path.dirname(__file__), "..", "build", "fxplain"))
    ap.add_argument("--device", default="h100")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--min-f1", type=float)
    ap.add_argument("--same-count", action="store_true")
    a = ap.parse_args(argv)
    names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(a.corpus, "*.hlo")))
    if a.only:
        names = [n for n in names if any(s in n for s in a.only)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            pre, xla = find(a.refdir, n, "pre_fusion"), find(a.refdir, n, "after_multi_output_fusion")
            if not pre or not xla:
                continue
            ours = os.path.join(tmp, n + ".fxplain.hlo")
            cmds = f"load {os.path.join(a.corpus, n + '.hlo')}; set device {a.device}; pipeline priority; step all; save {ours}"
            r = subprocess.run([a.fxplain, "-e", cmds], capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                print(f"{n}: fxplain failed: {(r.stderr or r.stdout).strip().splitlines()[:1]}")
                continue
            pre_p = plain(pre, tmp)
            sig_owner, _ = xla_compare.originals(xla_compare.load(pre_p))
            xk_raw, _ = xla_compare.kernels(xla_compare.load(xla), sig_owner)
            xk = {k: {user_name_of_xla(x) for x in m} for k, m in xk_raw.items()}
            ok = our_kernels(ours)
            universe = set().union(*xk.values()) & set().union(*ok.values()) if xk and ok else set()
            score = f1(xk, ok, universe) if len(universe) >= 2 else None
            rows.append((n, len(xk), len(ok), len(universe), score))
            print(f"{n}: kernels XLA {len(xk)}, fxplain {len(ok)}; {len(universe)} of the user's instructions in "
                  f"both; pair F1 " + (f"{score:.3f}" if score is not None else "n/a (XLA renamed them)"), flush=True)
    scored = [r for r in rows if r[4] is not None]
    if scored:
        print(f"mean pair F1 {sum(r[4] for r in scored) / len(scored):.3f} over the {len(scored)} modules where "
              f"both keep two or more of the user's instructions; kernels in all {len(rows)} modules: XLA "
              f"{sum(r[1] for r in rows)}, fxplain {sum(r[2] for r in rows)}")
    if not rows and (a.min_f1 is not None or a.same_count):
        print("no module was compared")
        return 1
    if a.min_f1 is not None and (not scored or sum(r[4] for r in scored) / len(scored) < a.min_f1):
        print(f"below the floor: mean pair F1 under {a.min_f1}")
        return 1
    if a.same_count and any(r[1] != r[2] for r in rows):
        print("kernel counts differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

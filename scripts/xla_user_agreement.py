#!/usr/bin/env python3
"""How close fxplain comes to XLA:GPU from what a user dumps: the module as JAX wrote it.

    xla_user_agreement.py CORPUS_DIR REFDIR [--fxplain build/fxplain] [--device h100] [--only S]
                          [--min-f1 X] [--min-kernel-f1 X] [--min-structure-f1 X] [--at-least N]
                          [--max-pre-distance X] [--same-count] [--json] [--markdown] [--keep DIR]

For each CORPUS_DIR/NAME.hlo with XLA's results in REFDIR (NAME.pre_fusion.hlo and
NAME.after_multi_output_fusion.hlo, from scripts/xla_reference.py), fxplain runs its whole
priority pipeline, simplification included, on the module as written, and its kernels after
multi_output_fusion (the point XLA's reference is dumped at, before the CSE that follows) are
compared with the kernels XLA built from the same module. The two compilations simplify differently, so
these measures are reported per module:

  - *kernel F1*, on every module: each kernel is described by what it computes, and the two
    multisets of descriptions are matched. A kernel's description is its kind (a fusion; a
    `kCustom` fusion with its backend, e.g. `kCustom/__triton`; an unfused instruction's opcode, a
    custom call's target; kLoop and kInput are not told apart, a reduction among the instructions
    says it), its outputs (element types and sizes), and the multiset of the instructions it
    computes, each as (opcode, element type, number of elements). Instructions that compute
    nothing or only reinterpret memory (parameter, constant, tuple, get-tuple-element, bitcast,
    reshape, copy, a bitcast-convert between types of one width) are left out, so names, layouts and XLA's reshape-to-bitcast rewrites do not
    count. A CUB sort's scratch buffer is not among its outputs: its size is CUB's, asked on the
    device after fusion, which fxplain does not model. Kernel F1 = 2 * matched / (kernels XLA + kernels fxplain): 1.0 exactly when both build
    the same kernels, up to names and layouts.
  - *structure F1*: the same over coarser descriptions (the kind, the outputs, and the
    instructions that are not elementwise: reductions, data movement, library calls), so a kernel
    with one more convert, or a multiply where the other has a divide, still matches.
  - *pair F1*, where names survive: XLA appends `.0` to the names of the instructions its
    priority-fusion receives, and fxplain keeps the names it loaded (a duplicated copy is
    `NAME.clone`). Over the user's instructions both end with inside (or as) a kernel, the pairs
    that share a kernel are compared ("n/a" when fewer than two survive in both).
  - *pre-fusion distance*: fxplain's stage just before priority-fusion against the module XLA's
    priority-fusion received (NAME.pre_fusion.hlo): the opcode histograms of both (fusion bodies
    counted, reshape, bitcast and same-width bitcast-convert counted as one, parameters, constants, tuples and
    get-tuple-elements left out), distance = sum |XLA - fxplain| / sum (XLA + fxplain), 0 when the
    same. The opcodes that differ most are named: they point at the pass that is missing.

Exit status 1 when a floor is not met: --min-f1 (mean pair F1 over the modules that have one),
--min-kernel-f1 and --min-structure-f1 (mean over every module), --at-least (modules with kernel
F1 1.0), --max-pre-distance (mean pre-fusion distance), --same-count (every module's kernel counts
equal).
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xla_compare  # noqa: E402
from xla_agreement import find, plain  # noqa: E402
from xla_reference import unfuse  # noqa: E402

CLONE = re.compile(r"(\.clone(\.\d+)?)+$")
# Left out of a kernel's description: they compute nothing, or only reinterpret memory (XLA turns
# reshapes into bitcasts and inserts copies as its layouts require).
NOT_COMPUTE = xla_compare.NO_KERNEL | {"reshape", "copy"}
# Left out of the pre-fusion histogram: plumbing, and constants (how many there are says more about
# CSE's bookkeeping than about a missing pass).
NOT_COUNTED = {"parameter", "constant", "tuple", "get-tuple-element"}
# Elementwise instructions (and broadcast and iota, which feed them): what the structure measure
# leaves out, so a convert XLA adds (bf16 arithmetic done in f32) or a divide it turns into a
# multiply does not make a kernel another one.
ELEMENTWISE = {
    "abs", "add", "and", "atan2", "bitcast-convert", "broadcast", "cbrt", "ceil", "clamp", "clz", "compare",
    "complex", "convert", "cosine", "divide", "erf", "exp", "exponential-minus-one", "floor", "imag", "iota",
    "is-finite", "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
    "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even",
    "rsqrt", "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt",
    "stochastic-convert", "subtract", "tan", "tanh", "xor"}
FUSION_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=.*?\sfusion\(")
FUSION_KIND = re.compile(r"\bkind=(k\w+)")
BACKEND_KIND = re.compile(r'"fusion_backend_config"\s*:\s*\{\s*"kind"\s*:\s*"([^"]+)"')
ARRAY = re.compile(r"([a-z]+\d*)\[([\d,]*)\]")


def user_name_of_xla(name):
    return name[:-2] if name.endswith(".0") else name


# ---------- the modules ----------

def load(path):
    """An HLO module (xla_compare's reading) with each fusion's kind and backend by name."""
    mod = xla_compare.load(path)
    kinds = {}
    for line in xla_compare.read_text(path).split("\n"):
        m = FUSION_LINE.match(line)
        if m:
            k, b = FUSION_KIND.search(line), BACKEND_KIND.search(line)
            # kLoop, kInput and kOutput follow from what the fusion computes (a reduction hero
            # makes kInput), which the description already holds; a kCustom fusion is its backend.
            kind = k.group(1) if k else "kLoop"
            kinds[m.group(1)] = f"{kind}/{b.group(1) if b else '?'}" if kind == "kCustom" else ""
    mod["fusion_kinds"] = kinds
    return mod


def shape_key(shape):
    """A shape as element type and number of elements (a tuple: each element's), layout-free."""
    parts = []
    for ty, dims in ARRAY.findall(shape):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        parts.append(f"{ty}:{n}")
    return ",".join(parts)


def fused_instructions(mod, fusion):
    """Every instruction a fusion computes, nested fusions inlined."""
    comps, out, stack = mod["comps"], [], list(fusion["calls"])
    while stack:
        body = comps.get(stack.pop())
        if not body:
            continue
        for x in body["instrs"]:
            if x["op"] == "fusion":
                stack += x["calls"]
            else:
                out.append(x)
    return out


WIDTH = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
         "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def reinterprets(mod, x):
    """A bitcast-convert between types of one width: memory read as another type (XLA prints it
    as a bitcast once layouts are assigned)."""
    if x["op"] != "bitcast-convert" or not x["operands"]:
        return False
    src = mod["comps"][x["comp"]]["by_name"].get(x["operands"][0])
    a, b = ARRAY.match(x["shape"]), ARRAY.match(src["shape"]) if src else None
    return bool(a and b and a.group(2) == b.group(2) and WIDTH.get(a.group(1), 0) == WIDTH.get(b.group(1), -1))


def computes(mod, x):
    return x["op"] not in NOT_COMPUTE and not reinterprets(mod, x)


def opname(ins):
    if ins["op"] == "custom-call":
        m = re.match(r'\s*"([^"]*)"', dict(ins["attrs"]).get("custom_call_target", ""))
        return f"custom-call:{m.group(1) if m else '?'}"
    return ins["op"]


def kernel_instructions(mod):
    """The kernels of a module: (name, top-level instruction, instructions it computes)."""
    comps, out = mod["comps"], []
    for cname in xla_compare.control_computations(mod):
        for ins in comps[cname]["instrs"]:
            op = ins["op"]
            if op in xla_compare.NO_KERNEL or op in xla_compare.CONTROL:
                continue
            out.append((ins["name"], ins, fused_instructions(mod, ins) if op == "fusion" else [ins]))
    return out


CUB_SORT = re.compile(r"custom-call:xla\.gpu\.ext\.cub_sort_")


def output_key(ins, kind):
    """A kernel's outputs as shape_key gives them, but for a CUB sort's scratch buffer (its last
    output): XLA sizes it after fusion by asking CUB on the device (or a table of sizes measured
    on each GPU), which fxplain cannot do without a GPU; its call keeps the one byte XLA's
    SortRewriter writes first. The keys and values it sorts are compared."""
    key = shape_key(ins["shape"])
    if CUB_SORT.match(kind) and key.rsplit(",", 1)[-1].startswith("u8:"):
        key = key.rsplit(",", 1)[0]
    return key


def descriptor(mod, ins, members):
    """What a kernel computes, as a hashable value (see the module's docstring)."""
    kind = ("fusion " + mod["fusion_kinds"].get(ins["name"], "")).strip() if ins["op"] == "fusion" else opname(ins)
    ops = collections.Counter((opname(x), output_key(x, opname(x))) for x in members if computes(mod, x))
    return (kind, output_key(ins, kind), tuple(sorted(ops.items())))


def structure(mod, ins, members):
    """A kernel's coarser description: its kind, outputs and the instructions that are not
    elementwise (reductions, data movement, library calls: what decides the emitter)."""
    kind = ("fusion " + mod["fusion_kinds"].get(ins["name"], "")).strip() if ins["op"] == "fusion" else opname(ins)
    heroes = collections.Counter((opname(x), output_key(x, opname(x))) for x in members
                                 if computes(mod, x) and x["op"] not in ELEMENTWISE)
    return (kind, output_key(ins, kind), tuple(sorted(heroes.items())))


def descriptors(mod, how=descriptor):
    return collections.Counter(how(mod, ins, members) for _, ins, members in kernel_instructions(mod))


def kernel_f1(dx, do):
    nx, no = sum(dx.values()), sum(do.values())
    matched = sum((dx & do).values())
    return (1.0 if nx + no == 0 else 2 * matched / (nx + no)), matched


# ---------- pair F1 over the user's names ----------

def named_kernels(mod, rename):
    """kernel -> set of user instruction names it computes."""
    return {name: {rename(x["name"]) for x in members if x["op"] not in xla_compare.NO_KERNEL}
            for name, _, members in kernel_instructions(mod)}


def pair_f1(ka, kb, universe):
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


# ---------- the pre-fusion histogram ----------

def histogram(mod):
    h = collections.Counter()
    for _, ins, members in kernel_instructions(mod):
        for x in members:
            if x["op"] not in NOT_COUNTED:
                h["reshape/bitcast" if x["op"] in ("reshape", "bitcast") or reinterprets(mod, x) else opname(x)] += 1
    for cname in xla_compare.control_computations(mod):  # loops, conditionals, calls themselves
        for ins in mod["comps"][cname]["instrs"]:
            if ins["op"] in xla_compare.CONTROL:
                h[ins["op"]] += 1
            elif ins["op"] == "bitcast":
                h["reshape/bitcast"] += 1
    return h


def pre_distance(hx, ho):
    total = sum(hx.values()) + sum(ho.values())
    diff = sum(abs(hx[k] - ho[k]) for k in set(hx) | set(ho))
    more_x = sorted(((hx[k] - ho[k], k) for k in hx if hx[k] > ho[k]), reverse=True)
    more_o = sorted(((ho[k] - hx[k], k) for k in ho if ho[k] > hx[k]), reverse=True)
    return (diff / total if total else 0.0), more_x, more_o


def top(diffs, n=3):
    return ", ".join(f"{k} +{d}" for d, k in diffs[:n]) or "nothing"


# ---------- running fxplain ----------

def before_priority_fusion(fxplain):
    """The priority pipeline's stage number just before priority-fusion."""
    r = subprocess.run([fxplain, "-e", "pipeline priority"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, FXPLAIN_HISTORY="/dev/null"))
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+priority-fusion\b", line)
        if m:
            return int(m.group(1)) - 1
    raise RuntimeError("fxplain's priority pipeline has no priority-fusion stage")


def run_fxplain(fxplain, module, device, pre_stage, pre_out, out):
    cmds = [f"load {module}", f"set device {device}", "pipeline priority", f"goto {pre_stage}",
            f"save {pre_out}", "step all", "goto multi_output_fusion", f"save {out}"]
    r = subprocess.run([fxplain, "-e", "; ".join(cmds)], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, FXPLAIN_HISTORY="/dev/null"))
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise RuntimeError(msg[0] if msg else f"fxplain exited with {r.returncode}")


def reference_workaround(refdir, n):
    """The workaround scripts/xla_reference.py compiled module n with (INDEX.tsv's column), or ''."""
    try:
        with open(os.path.join(refdir, "INDEX.tsv")) as f:
            rows = [l.rstrip("\n").split("\t") for l in f]
    except OSError:
        return ""
    head = rows[0] if rows else []
    if "input" not in head or "workaround" not in head:
        return ""
    for r in rows[1:]:
        if len(r) == len(head) and r[head.index("input")] == n:
            return r[head.index("workaround")]
    return ""


def as_xla_compiled_it(a, n, tmp):
    """The module as XLA got it: where the reference turned the input's own fusions into calls
    (--unfuse: XLA:GPU's verifier rejects XLA:CPU's kCustom __ynn_fusion), fxplain gets the same
    calls, from its own printing of the module (one instruction per line)."""
    path = os.path.join(a.corpus, n + ".hlo")
    if reference_workaround(a.refdir, n) != "unfuse":
        return path
    printed = os.path.join(tmp, n + ".printed.hlo")
    r = subprocess.run([a.fxplain, "-e", f"load {path}; save {printed}"], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, FXPLAIN_HISTORY="/dev/null"))
    if r.returncode != 0:
        raise RuntimeError(f"fxplain could not print {n} to unfuse it")
    out = os.path.join(tmp, n + ".unfused.hlo")
    with open(printed) as f, open(out, "w") as g:
        g.write(unfuse(f.read()))
    return out


def compare_module(a, n, tmp, pre_stage):
    pre, xla = find(a.refdir, n, "pre_fusion"), find(a.refdir, n, "after_multi_output_fusion")
    if not pre or not xla:
        return None
    ours, ours_pre = os.path.join(tmp, n + ".fxplain.hlo"), os.path.join(tmp, n + ".fxplain_pre.hlo")
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        ours, ours_pre = os.path.join(a.keep, n + ".fxplain.hlo"), os.path.join(a.keep, n + ".fxplain_pre.hlo")
    run_fxplain(a.fxplain, as_xla_compiled_it(a, n, tmp), a.device, pre_stage, ours_pre, ours)
    xmod, omod, xpre = load(xla), load(ours), load(plain(pre, tmp))
    kf1, matched = kernel_f1(descriptors(xmod), descriptors(omod))
    sf1, smatched = kernel_f1(descriptors(xmod, structure), descriptors(omod, structure))
    # Pair F1 under the user's names: only XLA's instructions that are originals of its
    # pre-fusion module (found by signature) keep a user's name.
    sig_owner, _ = xla_compare.originals(xpre)
    xk_raw, _ = xla_compare.kernels(xmod, sig_owner)
    xk = {k: {user_name_of_xla(x) for x in m} for k, m in xk_raw.items()}
    ok = named_kernels(omod, lambda s: CLONE.sub("", s))
    universe = set().union(*xk.values()) & set().union(*ok.values()) if xk and ok else set()
    pf1 = pair_f1(xk, ok, universe) if len(universe) >= 2 else None
    dist, more_x, more_o = pre_distance(histogram(xpre), histogram(load(ours_pre)))
    nx, no = len(kernel_instructions(xmod)), len(kernel_instructions(omod))
    return {"module": n, "xla_kernels": nx, "fxplain_kernels": no, "kernel_f1": kf1, "matched": matched,
            "structure_f1": sf1, "structure_matched": smatched,
            "compared": len(universe), "pair_f1": pf1, "pre_distance": dist,
            "pre_xla_more": [[k, d] for d, k in more_x], "pre_fxplain_more": [[k, d] for d, k in more_o]}


def line(r):
    pf = f"{r['pair_f1']:.3f} over {r['compared']} names" if r["pair_f1"] is not None else "n/a"
    return (f"{r['module']}: kernels XLA {r['xla_kernels']}, fxplain {r['fxplain_kernels']}; kernel F1 "
            f"{r['kernel_f1']:.3f} ({r['matched']} the same), structure {r['structure_f1']:.3f}; pair F1 {pf}; pre-fusion distance "
            f"{r['pre_distance']:.3f} (XLA more: {top([(d, k) for k, d in r['pre_xla_more']])}; fxplain more: "
            f"{top([(d, k) for k, d in r['pre_fxplain_more']])})")


def summary(rows):
    n = len(rows)
    scored = [r for r in rows if r["pair_f1"] is not None]
    out = {"modules": n,
           "mean_kernel_f1": sum(r["kernel_f1"] for r in rows) / n if n else 0.0,
           "same_kernels": sum(1 for r in rows if r["kernel_f1"] == 1.0),
           "mean_structure_f1": sum(r["structure_f1"] for r in rows) / n if n else 0.0,
           "xla_kernels": sum(r["xla_kernels"] for r in rows),
           "fxplain_kernels": sum(r["fxplain_kernels"] for r in rows),
           "matched": sum(r["matched"] for r in rows),
           "pair_f1_modules": len(scored),
           "mean_pair_f1": sum(r["pair_f1"] for r in scored) / len(scored) if scored else None,
           "mean_pre_distance": sum(r["pre_distance"] for r in rows) / n if n else 0.0}
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("refdir")
    ap.add_argument("--fxplain", default=os.path.join(os.path.dirname(__file__), "..", "build", "fxplain"))
    ap.add_argument("--device", default="h100")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--min-f1", type=float, help="floor: mean pair F1 over the modules that have one")
    ap.add_argument("--min-kernel-f1", type=float, help="floor: mean kernel F1 over every module")
    ap.add_argument("--min-structure-f1", type=float, help="floor: mean structure F1 over every module")
    ap.add_argument("--at-least", type=int, help="floor: modules whose kernels are all the same (kernel F1 1.0)")
    ap.add_argument("--max-pre-distance", type=float, help="ceiling: mean pre-fusion distance")
    ap.add_argument("--same-count", action="store_true", help="every module's kernel counts must be equal")
    ap.add_argument("--json", action="store_true", help="one JSON object: the rows and the summary")
    ap.add_argument("--markdown", action="store_true", help="a README table after the lines")
    ap.add_argument("--keep", help="keep fxplain's two stages per module in this folder")
    a = ap.parse_args(argv)
    names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(a.corpus, "*.hlo")))
    if a.only:
        names = [n for n in names if any(s in n for s in a.only)]
    rows, failed = [], 0
    pre_stage = before_priority_fusion(a.fxplain)
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            try:
                r = compare_module(a, n, tmp, pre_stage)
            except (RuntimeError, xla_compare.HloError, subprocess.TimeoutExpired) as e:
                print(f"{n}: fxplain failed: {e}", flush=True)
                failed += 1
                continue
            if r is None:
                continue
            rows.append(r)
            if not a.json:
                print(line(r), flush=True)
    s = summary(rows)
    if a.json:
        print(json.dumps({"rows": rows, "summary": s}))
    elif rows:
        print(f"kernel F1 {s['mean_kernel_f1']:.3f}, structure {s['mean_structure_f1']:.3f} (means over "
              f"{s['modules']} modules; {s['same_kernels']} build "
              f"the same kernels); kernels XLA {s['xla_kernels']}, fxplain {s['fxplain_kernels']}, "
              f"{s['matched']} the same")
        if s["mean_pair_f1"] is not None:
            print(f"mean pair F1 {s['mean_pair_f1']:.3f} over the {s['pair_f1_modules']} modules where both keep two "
                  f"or more of the user's instructions")
        print(f"mean pre-fusion distance {s['mean_pre_distance']:.3f}")
    if a.markdown and rows:
        print("\n| module | kernels XLA / fxplain | kernel F1 | structure F1 | pair F1 | pre-fusion distance |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            pf = f"{r['pair_f1']:.3f}" if r["pair_f1"] is not None else "n/a"
            print(f"| {r['module']} | {r['xla_kernels']} / {r['fxplain_kernels']} | {r['kernel_f1']:.3f} | "
                  f"{r['structure_f1']:.3f} | {pf} | "
                  f"{r['pre_distance']:.3f} |")
    floors = [a.min_f1, a.min_kernel_f1, a.min_structure_f1, a.at_least, a.max_pre_distance]
    if not rows and (any(f is not None for f in floors) or a.same_count):
        print("no module was compared")
        return 1
    bad = []
    if failed:
        bad.append(f"fxplain failed on {failed} module(s)")
    if a.min_f1 is not None and (s["mean_pair_f1"] is None or s["mean_pair_f1"] < a.min_f1):
        bad.append(f"mean pair F1 under {a.min_f1}")
    if a.min_kernel_f1 is not None and s["mean_kernel_f1"] < a.min_kernel_f1:
        bad.append(f"mean kernel F1 under {a.min_kernel_f1}")
    if a.min_structure_f1 is not None and s["mean_structure_f1"] < a.min_structure_f1:
        bad.append(f"mean structure F1 under {a.min_structure_f1}")
    if a.at_least is not None and s["same_kernels"] < a.at_least:
        bad.append(f"fewer than {a.at_least} modules build the same kernels")
    if a.max_pre_distance is not None and s["mean_pre_distance"] > a.max_pre_distance:
        bad.append(f"mean pre-fusion distance over {a.max_pre_distance}")
    if a.same_count and any(r["xla_kernels"] != r["fxplain_kernels"] for r in rows):
        bad.append("kernel counts differ")
    for b in bad:
        print(f"below the floor: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

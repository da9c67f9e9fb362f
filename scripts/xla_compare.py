#!/usr/bin/env python3
"""Compares the kernels of two compilations of one HLO module: which original instructions share
a kernel.

    xla_compare.py PRE.hlo XLA.hlo OURS.hlo [--json]

PRE is the module both compilations started from (for XLA's priority fusion: the module it
received, NAME.pre_fusion.hlo); XLA and OURS are what each made of it (XLA's module after
multi_output_fusion, and the stage fxplain saved). Files may be gzip-compressed.

Names cannot be trusted to match: XLA renames every instruction it clones into a fusion
(`exp.0.0` becomes `exp.0.3`), and a fusion merged into another gets new names throughout. So an
instruction is recognised by what it computes: a structural signature of its opcode, shape,
attributes and the signatures of its operands, down to the module's parameters. Every fusion of
a compiled module is inlined (a multi-output fusion's get-tuple-elements read its root tuple),
each inlined instruction remembers its kernel, and each signature is looked up among the
original module's instructions. The kernels are then compared as sets of original instructions:

  - an *original instruction* is a top-level instruction of PRE that computes something (not a
    parameter, constant, tuple, get-tuple-element or bitcast, which launch nothing);
  - a *kernel* is a top-level instruction of a compiled module that launches work, with the set
    of original instructions inside it (a duplicated producer is in each of its kernels);
  - the two compilations are *identical* when they have the same set of kernels;
  - *pair F1*: the pairs of original instructions that share a kernel, compared as sets
    (1.0 when both have none).

Exit status: 0 identical, 1 different, 2 on bad input.
"""
import gzip
import hashlib
import json
import re
import sys

NO_KERNEL = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
             "partition-id", "replica-id"}
CONTROL = {"while", "conditional", "call", "async-start", "async-done", "async-update"}


class HloError(Exception):
    pass


def read_text(path):
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt") as f:
                return f.read()
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise HloError(f"{path}: cannot read: {e.strerror}")


def closing(s, i):
    """Index of the bracket that closes the one at s[i] (quotes respected)."""
    depth, quote = 0, None
    for j in range(i, len(s)):
        c = s[j]
        if quote:
            if c == "\\":
                continue
            if c == quote:
                quote = None
            continue
        if c == '"':
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(s)


HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s")
INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
CALL_ATTRS = ("calls", "to_apply", "body", "condition", "branch_computations",
              "called_computations", "async_execution_thread")
DROP_ATTRS = {"metadata", "backend_config", "frontend_attributes", "sharding", "statistics",
              "origin", "control-predecessors", "schedule", "operand_precision", "kind",
              "result_accuracy", "output_to_operand_aliasing"}


def split_attrs(s):
    """Top-level `key=value` pairs of an attribute list, in order."""
    out, i, n = [], 0, len(s)
    while i < n:
        while i < n and s[i] in " ,":
            i += 1
        m = re.match(r"([\w\-]+)=", s[i:])
        if not m:
            break
        key = m.group(1)
        j = i + m.end()
        k = j
        while k < n and s[k] != ",":
            if s[k] in "([{\"":
                k = closing(s, k)
            k += 1
        out.append((key, s[j:k].strip()))
        i = k
    return out


def parse_module(text, path):
    comps, order, entry, cur = {}, [], None, None
    for lineno, line in enumerate(text.split("\n"), 1):
        if cur is None:
            if not line.strip() or line.startswith("HloModule") or line.startswith("//"):
                continue
            if line.rstrip().endswith("{"):
                m = HEADER.match(line)
                if m:
                    cur = {"name": m.group(2), "instrs": [], "by_name": {}, "root": None}
                    comps[cur["name"]] = cur
                    order.append(cur["name"])
                    if m.group(1):
                        entry = cur["name"]
            continue
        if line.startswith("}"):
            if cur["root"] is None and cur["instrs"]:
                cur["root"] = cur["instrs"][-1]["name"]
            cur = None
            continue
        m = INSTR.match(line)
        if not m:
            continue
        root, name, rest = m.group(1), m.group(2), m.group(3)
        i = closing(rest, 0) + 1 if rest.startswith("(") else rest.find(" ")
        if i <= 0:
            raise HloError(f"{path}:{lineno}: cannot read the instruction '{name}'")
        shape = rest[:i].strip()
        rest = rest[i:].lstrip()
        mo = re.match(r"([\w\-]+)\(", rest)
        if not mo:
            raise HloError(f"{path}:{lineno}: cannot read the opcode of '{name}'")
        op = mo.group(1)
        j = closing(rest, mo.end() - 1)
        args, attrs = rest[mo.end():j], rest[j + 1:].lstrip(", ")
        args = re.sub(r"/\*.*?\*/", "", args)  # XLA marks every fifth operand: /*index=5*/
        if op in ("constant", "parameter"):
            operands, literal = [], args.strip()
        else:
            literal = ""
            operands = [a.strip().split(" ")[-1].lstrip("%") for a in split_top(args) if a.strip()]
        calls, kept = [], []
        for key, val in split_attrs(attrs):
            if key in CALL_ATTRS:
                calls += [c.lstrip("%") for c in re.findall(r"%?[\w.\-]+", val)]
                kept.append((key, None))
            elif key not in DROP_ATTRS:
                kept.append((key, re.sub(r"\s+", "", val)))
        ins = {"name": name, "op": op, "shape": strip_layout(shape), "operands": operands,
               "calls": calls, "attrs": kept, "literal": literal, "comp": cur["name"]}
        cur["instrs"].append(ins)
        cur["by_name"][name] = ins
        if root:
            cur["root"] = name
    if entry is None:
        if not order:
            raise HloError(f"{path}: no computation found (is this an HLO module?)")
        entry = order[-1]
    return {"comps": comps, "entry": entry, "path": path}


def split_top(s):
    parts, depth, start = [], 0, 0
    for k, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:k])
            start = k + 1
    parts.append(s[start:])
    return parts


def strip_layout(shape):
    shape = re.sub(r"/\*.*?\*/", "", shape)  # tuple shapes mark every fifth element too
    return re.sub(r"\{[^{}]*\}", "", shape).replace(" ", "")


def control_computations(mod):
    """The computations whose instructions are kernels or host control: the entry and what its
    while/conditional/call instructions call, transitively (not fused or reducer bodies)."""
    comps, seen, stack = mod["comps"], [], [mod["entry"]]
    while stack:
        n = stack.pop()
        if n in seen or n not in comps:
            continue
        seen.append(n)
        for ins in comps[n]["instrs"]:
            if ins["op"] in CONTROL:
                stack += ins["calls"]
    return seen


class Signer:
    """Structural signatures of the values of a module, with every fusion inlined."""

    def __init__(self, mod):
        self.mod = mod
        self.comp_sig_cache = {}

    def comp_sig(self, name):
        """A called computation (reducer, comparator, loop body) by its structure."""
        if name in self.comp_sig_cache:
            return self.comp_sig_cache[name]
        self.comp_sig_cache[name] = "rec:" + name  # recursion guard
        comp = self.mod["comps"].get(name)
        if comp is None:
            return "?" + name
        env = {}
        for ins in comp["instrs"]:
            if ins["op"] == "parameter":
                env[ins["name"]] = h("param", ins["shape"], ins["literal"])
            else:
                env[ins["name"]] = self.sign(ins, [env.get(o, "?") for o in ins["operands"]])
        s = h("comp", env.get(comp["root"], "?"))
        self.comp_sig_cache[name] = s
        return s

    def sign(self, ins, opsigs):
        if ins["op"] == "get-tuple-element":
            return h("gte", dict(ins["attrs"]).get("index"), opsigs[0] if opsigs else "?")
        attrs = tuple((k, v if v is not None else "") for k, v in ins["attrs"])
        called = tuple(self.comp_sig(c) for c in ins["calls"]) if ins["op"] not in CONTROL else ()
        lit = canon_literal(ins["literal"]) if ins["op"] == "constant" else ""
        return h(ins["op"], ins["shape"], attrs, called, lit, tuple(opsigs))


def canon_literal(lit):
    lit = lit.strip()
    try:
        v = float(lit)
        return "%.6g" % v
    except ValueError:
        return hashlib.sha1(re.sub(r"\s+", "", lit).encode()).hexdigest()[:16]


def h(*parts):
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:20]


def flatten(mod):
    """Every value a module computes in its control computations, fusions inlined: a list of
    (signature, kernel, top-level owner name, opcode)."""
    signer = Signer(mod)
    comps = mod["comps"]
    out = []
    for cname in control_computations(mod):
        comp = comps[cname]
        env = {}  # top-level name -> signature (a fusion with a tuple root -> list of signatures)
        for ins in comp["instrs"]:
            ops = [env.get(o, "?" + o) for o in ins["operands"]]
            op = ins["op"]
            if op == "parameter":
                env[ins["name"]] = h("param", cname, ins["name"])
                continue
            if op == "get-tuple-element" and isinstance(ops[0], list):
                idx = int(dict(ins["attrs"]).get("index", "0"))
                env[ins["name"]] = ops[0][idx]
                continue
            ops = [o if not isinstance(o, list) else h("tuple", tuple(o)) for o in ops]
            if op == "fusion":
                env[ins["name"]] = inline(signer, comps, ins, ops, out, ins["name"], ins["name"])
                continue
            s = signer.sign(ins, ops)
            if op == "tuple":
                env[ins["name"]] = list(ops)
            else:
                env[ins["name"]] = s
            kernel = None if op in NO_KERNEL or op in CONTROL else ins["name"]
            out.append((s, kernel, ins["name"], op))
    return out


def inline(signer, comps, fusion, opsigs, out, kernel, owner):
    body = comps.get(fusion["calls"][0]) if fusion["calls"] else None
    if body is None:
        raise HloError(f"fusion {fusion['name']} calls no computation in the module")
    env = {}
    for ins in body["instrs"]:
        op = ins["op"]
        if op == "parameter":
            k = int(ins["literal"]) if ins["literal"].isdigit() else -1
            env[ins["name"]] = opsigs[k] if 0 <= k < len(opsigs) else "?"
            continue
        ops = [env.get(o, "?" + o) for o in ins["operands"]]
        if op == "get-tuple-element" and isinstance(ops[0], list):
            env[ins["name"]] = ops[0][int(dict(ins["attrs"]).get("index", "0"))]
            continue
        ops = [o if not isinstance(o, list) else h("tuple", tuple(o)) for o in ops]
        if op == "fusion":
            env[ins["name"]] = inline(signer, comps, ins, ops, out, kernel, owner)
            continue
        if op == "tuple":
            env[ins["name"]] = list(ops)
            continue
        s = signer.sign(ins, ops)
        env[ins["name"]] = s
        out.append((s, kernel, owner, op))
    return env.get(body["root"], "?")


def load(path):
    text = read_text(path)
    if "HloModule" not in text[:2000]:
        raise HloError(f"{path}:1:1: not an HLO module (its text does not start with HloModule)")
    return parse_module(text, path)


def originals(pre):
    """Signature -> the original instructions (top-level names of PRE) computing it."""
    owner_of = {}
    units = []
    for s, kernel, owner, op in flatten(pre):
        owner_of.setdefault(s, set()).add(owner)
        if kernel is not None and owner not in units:
            units.append(owner)
    # Only instructions that compute something are originals. A value computed by several of
    # them (a constant expression inside two fusions, two equal broadcasts) says nothing about
    # which one a kernel holds, so it is not used.
    unit_set = set(units)
    out = {}
    for s, owners in owner_of.items():
        mine = {o for o in owners if o in unit_set}
        out[s] = mine if len(mine) == 1 else set()
    return out, units


def kernels(mod, sig_owner):
    """The kernels of a compiled module: kernel name -> set of original instructions."""
    ks, unmatched = {}, 0
    for s, kernel, owner, op in flatten(mod):
        if kernel is None:
            continue
        members = sig_owner.get(s)
        if members is None:
            if op not in NO_KERNEL:
                unmatched += 1
            members = set()
        ks.setdefault(kernel, set()).update(members)
    return {k: frozenset(v) for k, v in ks.items() if v}, unmatched


def pairs(ks):
    ps = set()
    for members in ks.values():
        m = sorted(members)
        for a in range(len(m)):
            for b in range(a + 1, len(m)):
                ps.add((m[a], m[b]))
    return ps


def compare(pre_path, xla_path, ours_path):
    pre = load(pre_path)
    sig_owner, units = originals(pre)
    xk, xun = kernels(load(xla_path), sig_owner)
    ok, oun = kernels(load(ours_path), sig_owner)
    xs, os_ = set(xk.values()), set(ok.values())
    px, po = pairs(xk), pairs(ok)
    f1 = 1.0 if not px and not po else 2 * len(px & po) / (len(px) + len(po))
    first = None
    for name, members in xk.items():  # in XLA's order
        if members not in os_:
            theirs = sorted({k for k, m in ok.items() if m & members})
            first = {"xla_kernel": name, "xla_members": sorted(members),
                     "ours": [{"kernel": k, "members": sorted(ok[k])} for k in theirs]}
            break
    extra = None
    if first is None:
        for name, members in ok.items():
            if members not in xs:
                extra = {"our_kernel": name, "members": sorted(members)}
                break
    return {"identical": xs == os_, "xla_kernels": len(xs), "our_kernels": len(os_),
            "pair_f1": f1, "first_difference": first, "extra_kernel": extra,
            "unmatched": {"xla": xun, "ours": oun}, "originals": len(units)}


def describe(r):
    if r["identical"]:
        return f"identical ({r['xla_kernels']} kernels)"
    if r["first_difference"]:
        d = r["first_difference"]
        ours = "; ".join(f"{o['kernel']} {{{', '.join(o['members'][:6])}{', ...' if len(o['members']) > 6 else ''}}}"
                         for o in d["ours"][:3]) or "no kernel"
        mem = d["xla_members"]
        return (f"differs: XLA's {d['xla_kernel']} {{{', '.join(mem[:6])}{', ...' if len(mem) > 6 else ''}}}"
                f" is ours {ours}")
    e = r["extra_kernel"]
    return f"differs: our {e['our_kernel']} {{{', '.join(e['members'][:6])}}} is not an XLA kernel"


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        r = compare(*args)
    except HloError as e:
        print(f"xla_compare: error: {e}", file=sys.stderr)
        return 2
    if "--json" in argv:
        print(json.dumps(r))
    else:
        print(f"kernels: XLA {r['xla_kernels']}, ours {r['our_kernels']}; pair F1 {r['pair_f1']:.3f}; "
              + describe(r))
    return 0 if r["identical"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

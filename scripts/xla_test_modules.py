#!/usr/bin/env python3
"""xla_test_modules.py: how many of the HLO modules in XLA's own test files fxplain reads.

Usage: xla_test_modules.py FXPLAIN TEST.cc... [--work DIR] [--jobs N] [--no-xla] [--list]

Every raw string (R"(...)" or R"hlo(...)hlo") in the given XLA test sources that starts with
`HloModule` is one module. Modules in a test that expects XLA to refuse the text (EXPECT_FALSE on a
parse, a status message or StatusIs matcher) are left out, and so is any module XLA's own parser
(jaxlib's hlo_module_from_text, where jax is installed) refuses: those are templates with $0/%s
holes, or forms newer than the installed XLA, and they are counted apart. Each remaining module goes
through fxplain three ways, each counted:
  parsed        `load M; save A` (one run with the next line)
  passes        `load M; save A; pipeline priority; step all`
  fixed point   `load A; save B` and A == B byte for byte
A failure is named with the first line of fxplain's message. The test files come from a checkout of
openxla/xla: xla/hlo/parser/hlo_parser_test.cc, the GPU fusion tests
(xla/backends/gpu/transforms/priority_fusion_test.cc, multi_output_fusion_test.cc, ...), the
simplifier tests (xla/hlo/transforms/simplifiers/*_test.cc). The figures in the README were
measured so (README, "Every module XLA prints loads")."""
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tempfile

RAW = re.compile(r'R"(\w{0,16})\((.*?)\)\1"', re.S)
# A top-level item of a C++ test file: a test, a helper, a table of test data.
TOP = re.compile(r"^(?:TEST(?:_F|_P)?\(|std::|static |class |struct |INSTANTIATE_|void |absl::|[A-Za-z_:<>]+ \w+\()", re.M)
REFUSED = ("EXPECT_FALSE(", "status().message()", "StatusIs(", "Not(IsOk", "IsError(", "ExpectHasSubstr(")


def modules(path):
    src = open(path, encoding="utf-8").read()
    starts = [m.start() for m in TOP.finditer(src)] + [len(src)]
    out = []
    for m in RAW.finditer(src):
        text = m.group(2)
        if not text.lstrip().startswith("HloModule"):
            continue
        k = max(i for i in range(len(starts)) if starts[i] <= m.start()) if starts[0] <= m.start() else -1
        item = src[starts[k]:starts[k + 1]] if k >= 0 else src[:starts[0]]
        line = src.count("\n", 0, m.start()) + 1
        # a test that expects an error status shows it with one of these; its modules are
        # meant to be refused (hlo_parser_test.cc's tests of bad text)
        refused = any(r in item for r in REFUSED) and ".ok()" in item or "status().message()" in item \
            or "StatusIs(" in item
        out.append((os.path.basename(path), line, text, refused))
    return out


def xla_accepts(paths):
    """XLA's own parser's verdict on each file ('' where it accepts), or None where jax is not
    installed. One process reads them all; where XLA's parser aborts on one, it is counted as
    refused and a new process goes on with the next."""
    py = os.environ.get("FXPLAIN_PYTHON", "python3")
    code = ("import sys\nfrom jaxlib import _hlo\nprint('ready', flush=True)\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n        _hlo.hlo_module_from_text(open(p).read()); msg = ''\n"
            "    except Exception as e:\n        msg = ' '.join(str(e).split())[:200] or 'refused'\n"
            "    print('v ' + msg, flush=True)\n")
    res = []
    while len(res) < len(paths):
        try:
            r = subprocess.run([py, "-c", code] + paths[len(res):], capture_output=True, text=True,
                               timeout=900)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = r.stdout.splitlines()
        if not lines or lines[0] != "ready":
            return None
        res += [ln[2:] for ln in lines[1:]]
        if len(res) < len(paths) and r.returncode != 0:
            res.append("XLA's parser aborted: " + (r.stderr.strip().splitlines() or ["?"])[-1][:160])
    return res


def first_error(out):
    for ln in out.splitlines():
        if "error" in ln.lower() or "cannot" in ln or "not " in ln:
            return ln.strip()[:160]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return lines[-1].strip()[:160] if lines else "(no message)"


def fx(fxplain, script, timeout=120):
    try:
        r = subprocess.run(["nice", fxplain, "-e", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s" % timeout
    return r.returncode == 0, r.stdout + r.stderr


def main():
    args = sys.argv[1:]
    use_xla = "--no-xla" not in args
    listing = "--list" in args
    work = None
    jobs = 1
    if "--jobs" in args:
        jobs = max(1, int(args[args.index("--jobs") + 1]))
        del args[args.index("--jobs"):args.index("--jobs") + 2]
    if "--work" in args:
        work = args[args.index("--work") + 1]
        del args[args.index("--work"):args.index("--work") + 2]
    args = [a for a in args if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__)
        return 2
    fxplain, sources = args[0], args[1:]
    work = work or tempfile.mkdtemp(prefix="xlamods")
    os.makedirs(work, exist_ok=True)
    seen, mods, expected_bad = set(), [], 0
    for s in sources:
        for name, line, text, refused in modules(s):
            h = hashlib.sha1(text.encode()).hexdigest()
            if h in seen:
                continue
            seen.add(h)
            if refused:
                expected_bad += 1
                continue
            p = os.path.join(work, "%s_%d.hlo" % (name.replace("_test.cc", ""), line))
            with open(p, "w") as f:
                f.write(text)
            mods.append(p)
    verdict = xla_accepts(mods) if use_xla else None
    xla_refused = []
    if verdict is not None:
        xla_refused = [(p, v) for p, v in zip(mods, verdict) if v]
        mods = [p for p, v in zip(mods, verdict) if not v]
    n = len(mods)

    def one(p):
        """(parsed, passes, fixed point, failures) of one module"""
        a, b = p[:-4] + ".1.out", p[:-4] + ".2.out"
        for f in (a, b):
            if os.path.exists(f):
                os.remove(f)
        # one run loads, prints and goes through the passes; the printed file says how far it got
        ok, out = fx(fxplain, "load %s; save %s; pipeline priority; step all" % (p, a))
        if not os.path.exists(a):
            return 0, 0, 0, [(p, "parse", first_error(out))]
        got, bad = [1, 0, 0], []
        if ok:
            got[1] = 1
        else:
            bad.append((p, "passes", first_error(out)))
        ok, out = fx(fxplain, "load %s; save %s" % (a, b))
        if not ok:
            bad.append((p, "reload", first_error(out)))
        elif open(a).read() != open(b).read():
            bad.append((p, "fixed point", "the printed text changes when printed again"))
        else:
            got[2] = 1
        return got[0], got[1], got[2], bad

    parsed = fixed = passes = 0
    fails = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for a, b, c, bad in pool.map(one, mods):
            parsed += a
            passes += b
            fixed += c
            fails += bad
    for p, stage, msg in fails:
        print("FAIL %-10s %s: %s" % (stage, os.path.basename(p), msg))
    if listing:
        for p, v in xla_refused:
            print("XLA refuses %s: %s" % (os.path.basename(p), v))
    print("sources: %d test file%s, %d modules that start with HloModule (each text once)"
          % (len(sources), "" if len(sources) == 1 else "s", len(seen)))
    print("left out: %d in tests that expect XLA to refuse them, %d that XLA's own parser refuses"
          % (expected_bad, len(xla_refused)) + ("" if verdict is not None else " (jax not installed: not checked)"))
    print("parsed %d of %d, printed back to a fixed point %d of %d, through the priority pipeline %d of %d"
          % (parsed, n, fixed, n, passes, n))
    return 0 if not fails else 1


if __name__ == "__main__":
    sys.exit(main())

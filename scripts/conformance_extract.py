#!/usr/bin/env python3
"""conformance_extract.py: skeleton cases for tests/conformance/ from one of XLA's GPU fusion test
files (C++ with the HLO in R"(...)" strings).

Usage: conformance_extract.py TEST.cc PASS [DEVICE] > skeleton.txt

Each TEST_F becomes one `case` with the test's HLO, the pass to run, and XLA's own assertion lines
kept as `#|` comments; the `expect` facts are written by hand from those lines (a case with none
is not counted). Raw strings that hold FileCheck patterns stay comments too."""
import re
import sys

src = open(sys.argv[1], encoding="utf-8").read()
pass_name = sys.argv[2]
device = sys.argv[3] if len(sys.argv) > 3 else None

tests = [(m.start(), m.group(1), m.group(2)) for m in re.finditer(r"^TEST_F\((\w+),\s*(\w+)\)", src, re.M)]
raw = re.compile(r'R"(\w*)\((.*?)\)\1"', re.S)
# raw strings outside any test (shared modules): name -> text
shared = {}
for m in re.finditer(r'(?:constexpr|const|static)[^=;]*?\b(k\w+)(?:\[\])?\s*=\s*R"(\w*)\((.*?)\)\2"', src, re.S):
    shared[m.group(1)] = m.group(3)

print("# Generated skeleton from %s; facts by hand." % sys.argv[1].split("/")[-1])
for k, (pos, cls, name) in enumerate(tests):
    end = tests[k + 1][0] if k + 1 < len(tests) else len(src)
    body = src[pos:end]
    line = src.count("\n", 0, pos) + 1
    hlos, rest, last = [], [], 0
    for m in raw.finditer(body):
        rest.append(body[last:m.start()])
        text = m.group(2)
        if ("ENTRY" in text or "HloModule" in text) and "CHECK" not in text:
            hlos.append(text)
            rest.append("<HLO>")
        else:
            rest.append("R\"(" + text + ")\"")
        last = m.end()
    rest.append(body[last:])
    pre = re.search(r"StrCat\(\s*(k\w+)\s*,", body)
    if hlos and pre and pre.group(1) in shared:  # a shared prefix (reducers) joined to the test's HLO
        hlos[0] = shared[pre.group(1)] + "\n" + hlos[0]
    if not hlos:
        for key, text in shared.items():
            if re.search(r"\b%s\b" % key, body):
                hlos.append(text)
                break
    print()
    print("case %s" % name)
    print("# XLA: TEST_F(%s, %s), line %d" % (cls, name, line))
    for l in "".join(rest).splitlines()[1:]:
        if l.strip() and l.strip() not in ("}", "})", ")"):
            print("#| " + l.rstrip())
    print("pass %s" % pass_name)
    if device:
        print("device %s" % device)
    if len(hlos) != 1:
        print("# NOTE: %d HLO modules in this test" % len(hlos))
    for h in hlos[:1]:
        print("hlo")
        lines = h.strip("\n").splitlines()
        ind = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        for l in lines:
            print(l[ind:].rstrip())
        print("end")

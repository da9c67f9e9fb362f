#!/usr/bin/env bash
# forms_test.sh FXPLAIN — the HLO forms XLA prints that fxplain once refused (ragged-dot,
# dynamic-reshape, f8e8m0fnu, async-start/-update/-done with calls=, one value for a whole constant,
# names with several dots): each loads, prints back to a fixed point, runs through the priority
# pipeline, and runs, or says by name what fxplain cannot run.
set -u
FX=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
for f in tests/xla_dumps/data/forms/*.hlo; do
  n=$(basename "$f" .hlo)
  if ! "$FX" -e "load $f; save $T/$n.1.hlo; load $T/$n.1.hlo; save $T/$n.2.hlo" > "$T/$n.log" 2>&1; then
    echo "FAIL $n: does not load or print back"; cat "$T/$n.log"; fail=1; continue
  fi
  if ! cmp -s "$T/$n.1.hlo" "$T/$n.2.hlo"; then echo "FAIL $n: printing is not a fixed point"; diff "$T/$n.1.hlo" "$T/$n.2.hlo"; fail=1; fi
  out=$("$FX" -e "load $f; pipeline priority; step all; kernels; run" 2>&1)
  case $n in
    ragged_dot) want="the interpreter does not implement ragged-dot" ;;
    dynamic_reshape) want="the interpreter does not implement dynamic-reshape" ;;
    *) want="kernel plan:" ;;
  esac
  if ! grep -qF -- "$want" <<<"$out"; then echo "FAIL $n: expected '$want' in:"; echo "$out" | tail -8; fail=1; fi
done
out=$("$FX" -e "load tests/xla_dumps/data/forms/splat_constant.hlo; show" 2>&1)
grep -qF "constant(0)" <<<"$out" || { echo "FAIL splat_constant prints back as constant(0)"; fail=1; }
[ $fail = 0 ] && echo "ok: every form loads, prints back, runs or names what it cannot run"
exit $fail

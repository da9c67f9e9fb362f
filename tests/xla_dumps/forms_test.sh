#!/usr/bin/env bash
# forms_test.sh FXPLAIN — the HLO forms XLA prints that fxplain once refused (ragged-dot, scaled-dot,
# dynamic-reshape, f8e8m0fnu, async-start/-update/-done with calls=, one value for a whole constant,
# names with several dots, a custom-call's literal=SHAPE VALUE, a module attribute whose string
# spans lines (origin_recovery_table), the s1/u1/s2/u2/f4e2m1fn types,
# stochastic-convert, ragged-all-to-all, scan, a computation written in its caller's braces
# (to_apply={...}, branch_computations={{...}, {...}}), `HloModule NAME:`, a module header that goes
# on after a comma on the next line, replica groups over a mesh's axes, a signature without its
# colons and a space between a type and its dimensions, `(x f32 [4,8])`, operand instructions
# without their shape, a convolution/while/conditional/call/map whose shape is left out, a
# signature whose parameters disagree with its body (XLA keeps only its result), a reducer's
# 1-tuple, a bitcast-convert across bit widths, the short async form with its own calls=, a space
# after a module attribute's '=', the buffer shape b(s32[2]), and the gathers XLA's rules take that no backend here computes):
# each loads, prints back to a fixed point, runs through the priority pipeline,
# and runs, or says by name what fxplain cannot run. Where jax is installed, XLA's own parser
# (jaxlib's hlo_module_from_text) must accept each form too: they are XLA's, not ours.
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
    scaled_dot) want="the interpreter does not implement scaled-dot" ;;
    dynamic_reshape) want="the interpreter does not implement dynamic-reshape" ;;
    stochastic_convert) want="the interpreter does not implement stochastic-convert" ;;
    ragged_all_to_all) want="the interpreter does not implement ragged-all-to-all" ;;
    scan) want="the interpreter does not implement scan" ;;
    custom_call_literal) want="custom-call target \"foo\" is not known to the interpreter" ;;
    vectorized_int8_conv) want="conv1: convolution operands do not match their dim_labels" ;;
    narrow_types) want="cannot run: a is s2, an element type fxplain reads, prints, plans and fuses but computes no value of" ;;
    gather_empty_slice) want="cannot run: g is a gather that XLA takes but fxplain computes no value of: its collapsed_slice_dims 0 has slice size 0" ;;
    gather_batching_in_map) want="cannot run: g is a gather that XLA takes but fxplain computes no value of: its batching dimension 0 is also in start_index_map" ;;
    buffer_shape) want="pinned: custom-call target \"Pin\" is not known to the interpreter" ;;
    bitcast_convert_s4) want="packed: bitcast-convert from s4 to s8 packs 4-bit values; the interpreter does not compute it" ;;
    *) want="kernel plan:" ;;
  esac
  if ! grep -qF -- "$want" <<<"$out"; then echo "FAIL $n: expected '$want' in:"; echo "$out" | tail -8; fail=1; fi
done
out=$("$FX" -e "load tests/xla_dumps/data/forms/inferred_control.hlo; show" 2>&1)
for want in '%conv = f32[1,6,6,4]{3,2,1,0} convolution' '%loop = (s32[], f32[8]) while' '%sel = f32[8]{0} conditional' \
    '%c = f32[8]{0} call' '%m = f32[8]{0} map'; do
  grep -qF -- "$want" <<<"$out" || { echo "FAIL inferred_control: expected '$want' (the shape XLA infers)"; fail=1; }
done
out=$("$FX" -e "load tests/xla_dumps/data/forms/nested_shapeless.hlo; show" 2>&1)
grep -qE '= f32\[4,8\]\{1,0\} clamp\(%broadcast\.[0-9]+, %add\.[0-9]+, %broadcast\.[0-9]+\)' <<<"$out" \
  || { echo "FAIL nested_shapeless: the nested clamp is an instruction of its own, its shape inferred"; echo "$out"; fail=1; }
out=$("$FX" -e "load tests/xla_dumps/data/forms/reduce_tuple1.hlo; show" 2>&1)
grep -qF '%w = (f32[4,6]) reduce-window' <<<"$out" || { echo "FAIL reduce_tuple1: the reduce-window's result is a 1-tuple"; fail=1; }
out=$("$FX" -e "load tests/xla_dumps/data/forms/async_sugar_calls.hlo; show" 2>&1)
grep -qF 'fusion-start(%p0.5), kind=kLoop, calls=%op' <<<"$out" || { echo "FAIL async_sugar_calls prints the fusion's calls= back"; fail=1; }
out=$("$FX" -e "load tests/xla_dumps/data/forms/buffer_shape.hlo; show" 2>&1)
grep -qF '%loop = (s32[], b(s32[2])) while' <<<"$out" || { echo "FAIL buffer_shape prints b(s32[2]) back"; fail=1; }
out=$("$FX" -e "load tests/xla_dumps/data/forms/splat_constant.hlo; show" 2>&1)
grep -qF "constant(0)" <<<"$out" || { echo "FAIL splat_constant prints back as constant(0)"; fail=1; }
out=$("$FX" -e "load tests/xla_dumps/data/forms/custom_call_literal.hlo; show" 2>&1)
grep -qF 'literal=s32[2]{0} {1, 2}' <<<"$out" || { echo "FAIL custom_call_literal prints its literal back"; fail=1; }
py=${FXPLAIN_PYTHON:-python3}
if "$py" -c 'from jaxlib import _hlo' 2> /dev/null; then
  "$py" - tests/xla_dumps/data/forms/*.hlo <<'PY' || fail=1
import sys
from jaxlib import _hlo
bad = 0
for path in sys.argv[1:]:
    try:
        _hlo.hlo_module_from_text(open(path).read())
    except Exception as e:
        print(f"FAIL {path}: XLA's own parser refuses it: {str(e)[:300]}")
        bad = 1
sys.exit(bad)
PY
fi
[ $fail = 0 ] && echo "ok: every form loads, prints back, runs or names what it cannot run"
exit $fail

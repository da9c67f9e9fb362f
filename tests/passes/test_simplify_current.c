/* test_simplify_current.c — the priority pipeline's simplification as today's XLA does it:
 * algsimp's rewrites (compiler/passes/algsimp_current.c), comparison-expander,
 * constant-folding's today rules, scatter-expander, reshape-mover, slice-sinker,
 * tree-reduction-rewriter, today's CSE (iotas; inside fusions after priority-fusion),
 * float-normalization-bf16 and simplify-fp-conversions. Each test gives the HLO the pass gets, checks the rewrites it
 * reports and the instructions it leaves, that the reference interpreter computes the same
 * numbers before and after, and that the classic pipeline's pass leaves the same module alone. */
#include "pass_check.h"

/* The classic algsimp makes none of today's rewrites on text. */
static void classic_leaves_alone(const char *text) {
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(!run_pass(&pass_algsimp, m, &log));
  ir_module_free(m);
}

static const char *const arithmetic =
    "HloModule arith\n\n"
    "ENTRY main {\n"
    "  x = f32[8] parameter(0)\n"
    "  y = f32[8] parameter(1)\n"
    "  one = f32[] constant(1)\n"
    "  b1 = f32[8] broadcast(one), dimensions={}\n"
    "  sub = f32[8] subtract(x, b1)\n"
    "  four = f32[] constant(4)\n"
    "  b4 = f32[8] broadcast(four), dimensions={}\n"
    "  div = f32[8] divide(sub, b4)\n"
    "  ay = f32[8] abs(y)\n"
    "  sq = f32[8] sqrt(ay)\n"
    "  dsq = f32[8] divide(div, sq)\n"
    "  e = f32[8] exponential(y)\n"
    "  de = f32[8] divide(dsq, e)\n"
    "  ninf = f32[] constant(-inf)\n"
    "  bn = f32[8] broadcast(ninf), dimensions={}\n"
    "  mx = f32[8] maximum(de, bn)\n"
    "  ROOT r = f32[8] add(mx, y)\n"
    "}\n";

TEST(arithmetic_canonical_forms) {
  IrModule *m = hlo(arithmetic);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced sub(x, 1) by sub(x, -1): subtracting a constant is adding its negation\n"
            "algsimp rewrite: replaced div(sub, 4) by div(sub, 0.25): dividing by a constant is multiplying by its "
            "reciprocal\n"
            "algsimp rewrite: replaced dsq(div, sq) by dsq(div, rsqrt): dividing by sqrt(B) is multiplying by "
            "rsqrt(B)\n"
            "algsimp rewrite: replaced de(dsq, e) by de(dsq, e.25): dividing by exp(B) is multiplying by exp(-B)\n"
            "algsimp rewrite: replaced mx(de, -inf) by de: the maximum with the lowest value of the type is the other "
            "operand\n");
  CHECK_STR(line_of(m, "sub"), "%sub = f32[8] add(%x, %negate.20)");
  CHECK_STR(line_of(m, "negate"), "%negate = f32[] constant(-1)");
  CHECK_STR(line_of(m, "div"), "%div = f32[8] multiply(%sub, %reciprocal.22)");
  CHECK_STR(line_of(m, "reciprocal"), "%reciprocal = f32[] constant(0.25)");
  CHECK_STR(line_of(m, "dsq"), "%dsq = f32[8] multiply(%div, %rsqrt)");
  CHECK_STR(line_of(m, "rsqrt"), "%rsqrt = f32[8] rsqrt(%ay)");
  CHECK_STR(line_of(m, "de"), "%de = f32[8] multiply(%dsq, %e.25)");
  CHECK_STR(line_of(m, "r"), "%r = f32[8] add(%de, %y)");
  CHECK(count_op(m, IR_OP_DIVIDE) == 0 && count_op(m, IR_OP_SQRT) == 0 && count_op(m, IR_OP_MAXIMUM) == 0);
  /* A second run has nothing left to do. */
  Log again = {{0}, 0};
  CHECK(!run_pass(&pass_algsimp_current, m, &again));
  ir_module_free(m);
  classic_leaves_alone(arithmetic);
}

/* An integer times zero is zero, and what only fed it is gone (in_place_dynamic_update_slice's
 * random index: a while loop whose result was multiplied by 0); a float times zero stays (NaN). */
static const char *const times_zero =
    "HloModule times_zero\n\n"
    "ENTRY main {\n"
    "  a = u32[] parameter(0)\n"
    "  b = u32[] parameter(1)\n"
    "  f = f32[4] parameter(2)\n"
    "  x = u32[] xor(a, b)\n"
    "  zero = u32[] constant(0)\n"
    "  m = u32[] multiply(x, zero)\n"
    "  s = u32[] add(m, b)\n"
    "  fz = f32[] constant(0)\n"
    "  bz = f32[4] broadcast(fz), dimensions={}\n"
    "  fm = f32[4] multiply(bz, f)\n"
    "  ROOT t = (u32[], f32[4]) tuple(s, fm)\n"
    "}\n";

TEST(integer_times_zero) {
  IrModule *m = hlo(times_zero);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf, "algsimp rewrite: replaced m(x, 0) by zero: an integer times zero is zero\n"
                     "algsimp rewrite: replaced s(0, b) by b: adding zero\n");
  CHECK_STR(line_of(m, "x"), "(none)");
  CHECK_STR(line_of(m, "fm"), "%fm = f32[4] multiply(%bz, %f)");
  CHECK(count_op(m, IR_OP_XOR) == 0 && count_op(m, IR_OP_MULTIPLY) == 1);
  ir_module_free(m);
  classic_leaves_alone(times_zero);
}

/* Comparisons with 0 of values known to be >= 0 (each case as XLA:GPU's algsimp treats it, run on
 * jaxlib 0.10.2): a clamped index's `i < 0 ? i + n : i` reads i; a minimum with an unknown
 * value, a maximum with -1, and `x > 0` stay. */
static const char *const never_negative =
    "HloModule never_negative\n\n"
    "ENTRY main {\n"
    "  x = s32[] parameter(0)\n"
    "  t = f32[200] parameter(1)\n"
    "  y = f32[] parameter(2)\n"
    "  u = u32[] parameter(3)\n"
    "  zero = s32[] constant(0)\n"
    "  mone = s32[] constant(-1)\n"
    "  hi = s32[] constant(199)\n"
    "  n = s32[] constant(200)\n"
    "  mx = s32[] maximum(zero, x)\n"
    "  m = s32[] minimum(hi, mx)\n"
    "  neg = pred[] compare(m, zero), direction=LT\n"
    "  wrapped = s32[] add(m, n)\n"
    "  idx = s32[] select(neg, wrapped, m)\n"
    "  d = f32[1] dynamic-slice(t, idx), dynamic_slice_sizes={1}\n"
    "  m2 = s32[] minimum(hi, x)\n"
    "  keep1 = pred[] compare(m2, zero), direction=LT\n"
    "  mx3 = s32[] maximum(mone, x)\n"
    "  keep2 = pred[] compare(mx3, zero), direction=LT\n"
    "  ax = s32[] abs(x)\n"
    "  keep3 = pred[] compare(ax, zero), direction=GT\n"
    "  gt = pred[] compare(zero, ax), direction=GT\n"
    "  fz = f32[] constant(0)\n"
    "  ay = f32[] abs(y)\n"
    "  ge = pred[] compare(ay, fz), direction=GE\n"
    "  uz = u32[] constant(0)\n"
    "  ult = pred[] compare(u, uz), direction=LT\n"
    "  io = s32[4] iota(), iota_dimension=0\n"
    "  z4 = s32[4] broadcast(zero), dimensions={}\n"
    "  ilt = pred[4] compare(io, z4), direction=LT\n"
    "  ey = f32[] exponential(y)\n"
    "  ege = pred[] compare(ey, fz), direction=GE\n"
    "  nz = f32[] constant(-0)\n"
    "  mxz = f32[] maximum(nz, y)\n"
    "  keep4 = pred[] compare(mxz, fz), direction=LT\n"
    "  ROOT r = (f32[1], pred[], pred[], pred[], pred[], pred[], pred[], pred[4], pred[], pred[]) tuple(d, keep1, keep2, "
    "keep3, gt, ge, ult, ilt, ege, keep4)\n"
    "}\n";

/* HandleSelect on predicates, as jnp.tril(jnp.ones(..., bool)) lowers a causal mask: select(p, true,
 * false) is p and select(p, false, true) is not(p) (what real XLA:GPU made of this module); a select
 * with two other predicates stays. Both eras drop a select whose branches are one value. */
static const char *const pred_selects =
    "HloModule sel\n\n"
    "ENTRY main {\n"
    "  a = f32[8] parameter(0)\n"
    "  b = f32[8] parameter(1)\n"
    "  q = pred[8] parameter(2)\n"
    "  p = pred[8] compare(a, b), direction=LT\n"
    "  t = pred[] constant(true)\n"
    "  f = pred[] constant(false)\n"
    "  bt = pred[8] broadcast(t), dimensions={}\n"
    "  bf = pred[8] broadcast(f), dimensions={}\n"
    "  same = pred[8] select(p, bt, bf)\n"
    "  negated = pred[8] select(p, bf, bt)\n"
    "  kept = pred[8] select(p, q, bf)\n"
    "  ROOT r = (pred[8], pred[8], pred[8]) tuple(same, negated, kept)\n"
    "}\n";

static const char *const same_branches =
    "HloModule same\n\n"
    "ENTRY main {\n"
    "  a = f32[8] parameter(0)\n"
    "  b = f32[8] parameter(1)\n"
    "  p = pred[8] compare(a, b), direction=LT\n"
    "  s = f32[8] select(p, a, a)\n"
    "  ROOT r = f32[8] add(s, b)\n"
    "}\n";

TEST(select_of_predicates) {
  IrModule *m = hlo(pred_selects);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "replaced same(p, 1, 0) by p: a select of true where the condition holds and false "
                          "elsewhere is the condition");
  CHECK_CONTAINS(log.buf, "replaced negated(p, 0, 1) by not: a select of false where the condition holds and true "
                          "elsewhere is its negation");
  CHECK_STR(line_of(m, "not"), "%not = pred[8] not(%p)");
  CHECK(count_op(m, IR_OP_SELECT) == 1 && count_op(m, IR_OP_NOT) == 1);
  ir_module_free(m);
  classic_leaves_alone(pred_selects);
  for (int era = 0; era < 2; era++) {
    IrModule *n = hlo(same_branches);
    CHECK(n != NULL);
    if (!n) return;
    Log l2 = {{0}, 0};
    CHECK(run_pass_same_numbers(era ? &pass_algsimp_current : &pass_algsimp, n, &l2));
    CHECK_CONTAINS(l2.buf, "replaced s(p, a, a) by a: both branches are the same value");
    CHECK(count_op(n, IR_OP_SELECT) == 0);
    ir_module_free(n);
  }
}

TEST(compare_never_negative) {
  IrModule *m = hlo(never_negative);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced neg(m, 0) by false: m is never negative, so the comparison with 0 is always "
            "false\n"
            "algsimp rewrite: replaced idx(0, wrapped, m) by m: the condition is always false\n"
            "algsimp rewrite: replaced gt(0, ax) by false.38: ax is never negative, so the comparison with 0 is "
            "always false\n"
            "algsimp rewrite: replaced ge(ay, 0) by true: ay is never negative, so the comparison with 0 is always "
            "true\n"
            "algsimp rewrite: replaced ult(u, 0) by false.40: u is never negative, so the comparison with 0 is always "
            "false\n"
            "algsimp rewrite: replaced ilt(io, 0) by false.42: io is never negative, so the comparison with 0 is "
            "always false\n"
            "algsimp rewrite: replaced ege(ey, 0) by true.43: ey is never negative, so the comparison with 0 is always "
            "true\n");
  CHECK_STR(line_of(m, "d"), "%d = f32[1] dynamic-slice(%t, %m), dynamic_slice_sizes={1}");
  /* keep1, keep2, keep3 and keep4 (the maximum of -0 and y may be -0: XLA's IsNonNegative asks
   * for the sign bit, not >= 0) */
  CHECK(count_op(m, IR_OP_COMPARE) == 4 && count_op(m, IR_OP_SELECT) == 0);
  ir_module_free(m);
  classic_leaves_alone(never_negative);
}

/* Integer division and remainder by powers of two: shifts and masks, the sign kept for signed
 * integers (JAX's floor_divide and % by 2 in a binary search, as jax.issue.33666 lowers it). */
static const char *const powers_of_two =
    "HloModule pow2\n\n"
    "ENTRY main {\n"
    "  a = s32[16] parameter(0)\n"
    "  u = u32[16] parameter(1)\n"
    "  two = s32[] constant(2)\n"
    "  b2 = s32[16] broadcast(two), dimensions={}\n"
    "  q = s32[16] divide(a, b2)\n"
    "  r = s32[16] remainder(a, b2)\n"
    "  eight = u32[] constant(8)\n"
    "  b8 = u32[16] broadcast(eight), dimensions={}\n"
    "  uq = u32[16] divide(u, b8)\n"
    "  ur = u32[16] remainder(u, b8)\n"
    "  ROOT t = (s32[16], s32[16], u32[16], u32[16]) tuple(q, r, uq, ur)\n"
    "}\n";

TEST(integer_powers_of_two) {
  IrModule *m = hlo(powers_of_two);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced q(a, 2) by q.22: dividing a signed integer by a power of two is a shift of its "
            "magnitude, with its sign\n"
            "algsimp rewrite: replaced r(a, 2) by r.32: a signed integer modulo a power of two is the low bits of its "
            "magnitude, with its sign\n"
            "algsimp rewrite: replaced uq(u, 8) by uq(u, 3): dividing an unsigned integer by a power of two is a right "
            "shift\n"
            "algsimp rewrite: replaced ur(u, 8) by ur(u, 7): an unsigned integer modulo a power of two is its low "
            "bits\n");
  CHECK_STR(line_of(m, "q.22"), "%q.22 = s32[16] select(%dividend_is_negative, %negated_quotient, %quotient)");
  CHECK_STR(line_of(m, "quotient"), "%quotient = s32[16] shift-right-logical(%abs_dividend, %shift.14)");
  CHECK_STR(line_of(m, "abs_dividend"), "%abs_dividend = s32[16] select(%dividend_is_negative, %negated_dividend, %a)");
  CHECK_STR(line_of(m, "uq"), "%uq = u32[16] shift-right-logical(%u, %shift.34)");
  CHECK_STR(line_of(m, "ur"), "%ur = u32[16] and(%u, %mask.36)");
  CHECK(count_op(m, IR_OP_DIVIDE) == 0 && count_op(m, IR_OP_REMAINDER) == 0);
  ir_module_free(m);
  classic_leaves_alone(powers_of_two);
}

/* XLA's HandleMultiply: Mul(Mul(a, broadcast(c)), broadcast(s)) with s not a constant becomes
 * Mul(a, broadcast(Mul(s, c))) (an optimizer's learning rate times its scale, as dlrm's Adam step
 * writes it); (A * C1) * C2 with scalar constants becomes A * (C1 * C2). Values unchanged. */
static const char *const mul_constants =
    "HloModule mulc\n\n"
    "ENTRY main {\n"
    "  w = f32[8,4] parameter(0)\n"
    "  lr = f32[] parameter(1)\n"
    "  c = f32[] constant(0.5)\n"
    "  bc = f32[8,4] broadcast(c), dimensions={}\n"
    "  m1 = f32[8,4] multiply(w, bc)\n"
    "  blr = f32[8,4] broadcast(lr), dimensions={}\n"
    "  m2 = f32[8,4] multiply(m1, blr)\n"
    "  d = f32[] constant(3)\n"
    "  bd = f32[8,4] broadcast(d), dimensions={}\n"
    "  m3 = f32[8,4] multiply(w, bc)\n"
    "  m4 = f32[8,4] multiply(m3, bd)\n"
    "  ROOT r = (f32[8,4], f32[8,4]) tuple(m2, m4)\n"
    "}\n";

TEST(multiply_constants_reassociate) {
  IrModule *m = hlo(mul_constants);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "replaced m2(m1, blr) by m2(w, broadcast):");
  CHECK_CONTAINS(log.buf, "the scalar factors meet before the broadcast");
  CHECK_CONTAINS(log.buf, "replaced m4(m3, 3) by m4(w, broadcast.17):");
  CHECK_CONTAINS(log.buf, "the constants are multiplied first");
  IrInstr *m2 = ir_module_find_instr(m, "m2");
  CHECK(m2 && m2->operands[0] == ir_module_find_instr(m, "w") && m2->operands[1]->op == IR_OP_BROADCAST);
  if (m2) {
    const IrInstr *inner = m2->operands[1]->operands[0];
    CHECK(inner->op == IR_OP_MULTIPLY && ir_shape_is_scalar(&inner->shape) &&
          inner->operands[0] == ir_module_find_instr(m, "lr") && inner->operands[1] == ir_module_find_instr(m, "c"));
  }
  check_same_values(mul_constants, m, 7);
  ir_module_free(m);
}

/* A reduce-precision to its operand's own precision is its operand (bf16 to 8 exponent and 7
 * mantissa bits); to fewer bits than the type has (f32 to bf16's), it rounds and stays. */
static const char *const reduce_precisions =
    "HloModule rp\n\n"
    "ENTRY main {\n"
    "  b = bf16[16] parameter(0)\n"
    "  f = f32[16] parameter(1)\n"
    "  rb = bf16[16] reduce-precision(b), exponent_bits=8, mantissa_bits=7\n"
    "  rf = f32[16] reduce-precision(f), exponent_bits=8, mantissa_bits=7\n"
    "  rf2 = f32[16] reduce-precision(f), exponent_bits=8, mantissa_bits=23\n"
    "  ROOT r = (bf16[16], f32[16], f32[16]) tuple(rb, rf, rf2)\n"
    "}\n";

TEST(no_op_reduce_precision_goes) {
  IrModule *m = hlo(reduce_precisions);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "replaced rb(b) by b: a reduce-precision to its operand's own precision changes nothing");
  CHECK_CONTAINS(log.buf, "replaced rf2(f) by f:");
  CHECK(count_op(m, IR_OP_REDUCE_PRECISION) == 1 && ir_module_find_instr(m, "rf") != NULL);
  check_same_values(reduce_precisions, m, 7);
  ir_module_free(m);
}

/* In XLA's HandleBroadcast order: a broadcast first sinks below the elementwise ops that read it
 * with scalar broadcasts (or the same broadcast of a like value), so they run on the smaller shape;
 * only a broadcast of an iota that cannot sink becomes an iota. So iota * 16, as jax writes
 * iota_2x32_shape, stays a multiply of the small iota (as in XLA's modules), and the iota that is
 * added to it along the other dimension becomes an iota of the large shape. */
static const char *const broadcasts =
    "HloModule bcast\n\n"
    "ENTRY main {\n"
    "  x = f32[16] parameter(0)\n"
    "  io = u64[16] iota(), iota_dimension=0\n"
    "  bio = u64[16,16] broadcast(io), dimensions={1}\n"
    "  io2 = u64[16] iota(), iota_dimension=0\n"
    "  bio2 = u64[16,16] broadcast(io2), dimensions={0}\n"
    "  k = u64[] constant(16)\n"
    "  bk = u64[16,16] broadcast(k), dimensions={}\n"
    "  mk = u64[16,16] multiply(bio2, bk)\n"
    "  a = u64[16,16] add(mk, bio)\n"
    "  bx = f32[16,16] broadcast(x), dimensions={0}\n"
    "  three = f32[] constant(3)\n"
    "  b3 = f32[16,16] broadcast(three), dimensions={}\n"
    "  m = f32[16,16] multiply(bx, b3)\n"
    "  e = f32[16,16] exponential(m)\n"
    "  c = f32[16,16] convert(a)\n"
    "  ROOT s = f32[16,16] add(e, c)\n"
    "}\n";

TEST(broadcast_rewrites) {
  IrModule *m = hlo(broadcasts);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced bio(io) by io.18: a broadcast of an iota is an iota\n"
            "algsimp rewrite: mk of broadcast bio2 now runs on io2's 16 elements (as mk.20) and bio2.21 broadcasts the "
            "result: an elementwise operation commutes with a broadcast\n"
            "algsimp rewrite: m of broadcast bx now runs on x's 16 elements (as m.23) and bx.24 broadcasts the result: an "
            "elementwise operation commutes with a broadcast\n"
            "algsimp rewrite: e of broadcast bx.24 now runs on m.23's 16 elements (as e.25) and bx.26 broadcasts the "
            "result: an elementwise operation commutes with a broadcast\n");
  CHECK_STR(line_of(m, "io.18"), "%io.18 = u64[16,16] iota(), iota_dimension=1");
  CHECK_STR(line_of(m, "mk.20"), "%mk.20 = u64[16] multiply(%io2, %bk.19)");
  CHECK_STR(line_of(m, "bio2.21"), "%bio2.21 = u64[16,16] broadcast(%mk.20), dimensions={0}");
  CHECK_STR(line_of(m, "a"), "%a = u64[16,16] add(%bio2.21, %io.18)");
  CHECK_STR(line_of(m, "m.23"), "%m.23 = f32[16] multiply(%x, %b3.22)");
  CHECK_STR(line_of(m, "e.25"), "%e.25 = f32[16] exponential(%m.23)");
  CHECK_STR(line_of(m, "s"), "%s = f32[16,16] add(%bx.26, %c)");
  ir_module_free(m);
  classic_leaves_alone(broadcasts);
}

/* MaxText's loop index arithmetic: (8 - i) - 1, then + 8 where it wrapped. XLA's pre-fusion module
 * has 7 - i and 15 - i: subtracting 1 becomes adding -1, then (C1 - A) + C2 becomes (C1 + C2) - A
 * and constant-folding folds the sums. A constant first in an add goes second; (A + C1) + C2 of
 * broadcast scalars becomes A + broadcast(C1 + C2); an integer A + (B - A) is B. */
static const char *const adds =
    "HloModule adds\n\n"
    "ENTRY main {\n"
    "  i = s32[] parameter(0)\n"
    "  x = f32[8] parameter(1)\n"
    "  n = s32[4] parameter(2)\n"
    "  eight = s32[] constant(8)\n"
    "  one = s32[] constant(1)\n"
    "  d = s32[] subtract(eight, i)\n"
    "  d1 = s32[] subtract(d, one)\n"
    "  w = s32[] add(d1, eight)\n"
    "  two = f32[] constant(2)\n"
    "  b2 = f32[8] broadcast(two), dimensions={}\n"
    "  three = f32[] constant(3)\n"
    "  b3 = f32[8] broadcast(three), dimensions={}\n"
    "  x2 = f32[8] add(x, b2)\n"
    "  x3 = f32[8] add(x2, b3)\n"
    "  c = s32[4] constant({1, 2, 3, 4})\n"
    "  cn = s32[4] add(c, n)\n"
    "  m = s32[4] subtract(cn, n)\n"
    "  back = s32[4] add(n, m)\n"
    "  ROOT t = (s32[], s32[], f32[8], s32[4]) tuple(d1, w, x3, back)\n"
    "}\n";

TEST(add_reassociates_constants) {
  IrModule *m = hlo(adds);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "(C1 - A) + C2 is (C1 + C2) - A");
  CHECK_CONTAINS(log.buf, "(A + C1) + C2 is A + (C1 + C2)");
  CHECK_CONTAINS(log.buf, "constants go on the right of an add");
  CHECK_CONTAINS(log.buf, "A + (B - A) is B");
  IrInstr *d1 = ir_module_find_instr(m, "d1"), *w = ir_module_find_instr(m, "w"), *x3 = ir_module_find_instr(m, "x3");
  CHECK(d1 && d1->op == IR_OP_SUBTRACT && d1->operands[1] == ir_module_find_instr(m, "i") &&
        d1->operands[0]->op == IR_OP_ADD);
  CHECK(x3 && x3->op == IR_OP_ADD && x3->operands[0] == ir_module_find_instr(m, "x") &&
        x3->operands[1]->op == IR_OP_BROADCAST && x3->operands[1]->operands[0]->op == IR_OP_ADD);
  /* w's inner constant is a sum until constant-folding folds it; the next round reassociates w,
     as XLA's simplification repeats until nothing changes: 7 - i and 15 - i, as in XLA's module */
  Log fold = {{0}, 0};
  CHECK(run_pass(&pass_constant_folding_current, m, &fold));
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &fold));
  CHECK(run_pass(&pass_constant_folding_current, m, &fold));
  CHECK(w && w->op == IR_OP_SUBTRACT && w->operands[1] == ir_module_find_instr(m, "i"));
  CHECK(d1 && d1->operands[0]->op == IR_OP_CONSTANT && d1->operands[0]->literal->values[0] == 7);
  CHECK(w && w->operands[0]->op == IR_OP_CONSTANT && w->operands[0]->literal->values[0] == 15);
  IrInstr *root = m->entry->root;
  CHECK(root->operands[3] == ir_module_find_instr(m, "cn")); /* n + ((c + n) - n) is c + n */
  check_same_values(adds, m, 4);
  ir_module_free(m);
  classic_leaves_alone(adds);
}

/* A reshape of an iota is an iota when the iota's dimension stays one dimension (argsort's
 * s32[65536] iota reshaped to [1,65536]), or the mixed-radix sum of iotas when it splits. */
static const char *const reshaped_iotas =
    "HloModule ri\n\n"
    "ENTRY main {\n"
    "  io = s32[65536] iota(), iota_dimension=0\n"
    "  r = s32[1,65536] reshape(io)\n"
    "  io2 = s32[24] iota(), iota_dimension=0\n"
    "  r2 = s32[2,3,4] reshape(io2)\n"
    "  io3 = s32[1] iota(), iota_dimension=0\n"
    "  r3 = s32[] reshape(io3)\n"
    "  ROOT t = (s32[1,65536], s32[2,3,4], s32[]) tuple(r, r2, r3)\n"
    "}\n";

TEST(reshape_of_iota) {
  IrModule *m = hlo(reshaped_iotas);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "a reshape of an iota is an iota");
  CHECK_CONTAINS(log.buf, "a reshape of an iota is a sum of iotas");
  IrInstr *root = m->entry->root;
  CHECK(root->operands[0]->op == IR_OP_IOTA && strcmp(ir_attr_text(root->operands[0], "iota_dimension"), "1") == 0);
  /* iota(2) + 4 * iota(1) + 12 * iota(0) */
  CHECK(root->operands[1]->op == IR_OP_ADD && count_op(m, IR_OP_IOTA) == 5 && count_op(m, IR_OP_MULTIPLY) == 2);
  /* a reshape of a one-element iota to a scalar has no dimension to carry it: it stays */
  CHECK(root->operands[2]->op == IR_OP_RESHAPE);
  check_same_values(reshaped_iotas, m, 4);
  ir_module_free(m);
  classic_leaves_alone(reshaped_iotas);
}

/* convert-mover: a widening convert moves down through a concatenate with a constant that bf16
 * holds exactly (the constant is converted instead; constant-folding folds it), a narrowing convert
 * moves up through a transpose and then a slice; a constant bf16 cannot hold stops the move down,
 * and a convert whose operand has another reader does not move up. */
static const char *const converts =
    "HloModule cm\n\n"
    "ENTRY main {\n"
    "  a = bf16[4,8] parameter(0)\n"
    "  w = f32[8,16] parameter(1)\n"
    "  ca = f32[4,8] convert(a)\n"
    "  k = f32[2,8] constant({{1, 2, 3, 4, 5, 6, 7, 0.5}, {-1, -2, -3, -4, -5, -6, -7, 0.25}})\n"
    "  cat = f32[6,8] concatenate(ca, k), dimensions={0}\n"
    "  cb = f32[4,8] convert(a)\n"
    "  bad = f32[1,8] constant({{0.1, 0, 0, 0, 0, 0, 0, 0}})\n"
    "  cat2 = f32[5,8] concatenate(cb, bad), dimensions={0}\n"
    "  s = f32[8,8] slice(w), slice={[0:8], [0:8]}\n"
    "  t = f32[8,8] transpose(s), dimensions={1,0}\n"
    "  n = bf16[8,8] convert(t)\n"
    "  w2 = f32[8,16] parameter(2)\n"
    "  t2 = f32[16,8] transpose(w2), dimensions={1,0}\n"
    "  n2 = bf16[16,8] convert(t2)\n"
    "  ROOT r = (f32[6,8], f32[5,8], bf16[8,8], bf16[16,8], f32[16,8]) tuple(cat, cat2, n, n2, t2)\n"
    "}\n";

TEST(convert_mover) {
  IrModule *m = hlo(converts);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_convert_mover, m, &log));
  IrInstr *root = m->entry->root;
  /* cat: convert(concatenate(a, convert(k))) */
  const IrInstr *c0 = root->operands[0];
  CHECK(c0->op == IR_OP_CONVERT && c0->operands[0]->op == IR_OP_CONCATENATE && c0->operands[0]->shape.type == IR_BF16);
  CHECK(c0->operands[0]->operands[1]->op == IR_OP_CONVERT && c0->operands[0]->operands[1]->operands[0]->op == IR_OP_CONSTANT);
  /* cat2 stays: 0.1 is not a bf16 value */
  CHECK(root->operands[1]->op == IR_OP_CONCATENATE && root->operands[1]->shape.type == IR_F32);
  /* n: transpose(slice(convert(w))) in bf16 */
  const IrInstr *t = root->operands[2];
  CHECK(t->op == IR_OP_TRANSPOSE && t->shape.type == IR_BF16 && t->operands[0]->op == IR_OP_SLICE &&
        t->operands[0]->shape.type == IR_BF16 && t->operands[0]->operands[0]->op == IR_OP_CONVERT);
  /* n2 stays after t2, which the tuple reads too */
  CHECK(root->operands[3]->op == IR_OP_CONVERT && root->operands[3]->operands[0] == root->operands[4]);
  CHECK_CONTAINS(log.buf, "the narrower type moves fewer bytes");
  Log again = {{0}, 0};
  CHECK(!run_pass(&pass_convert_mover, m, &again));
  check_same_values(converts, m, 5);
  ir_module_free(m);
}

/* transpose(dot(a, b)) swapping the two non-batch dimensions is dot(b, a) (DLRM's gradients: XLA's
 * pre-fusion module has the swapped dot and no transpose); not when the dot has another reader,
 * nor when the transpose moves a batch dimension. */
static const char *const dot_transposes =
    "HloModule dt\n\n"
    "ENTRY main {\n"
    "  a = f32[4,8,16] parameter(0)\n"
    "  b = f32[4,16,32] parameter(1)\n"
    "  d = f32[4,8,32] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
    "  t = f32[4,32,8] transpose(d), dimensions={0,2,1}\n"
    "  d2 = f32[4,8,32] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
    "  t2 = f32[32,8,4] transpose(d2), dimensions={2,1,0}\n"
    "  d3 = f32[4,8,32] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
    "  t3 = f32[4,32,8] transpose(d3), dimensions={0,2,1}\n"
    "  ROOT r = (f32[4,32,8], f32[32,8,4], f32[4,32,8], f32[4,8,32]) tuple(t, t2, t3, d3)\n"
    "}\n";

TEST(transpose_of_dot_swaps_operands) {
  IrModule *m = hlo(dot_transposes);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *r = m->entry->root;
  const IrInstr *t = r->operands[0];
  CHECK(t->op == IR_OP_DOT && t->operands[0] == ir_module_find_instr(m, "b") && t->operands[1] == ir_module_find_instr(m, "a"));
  CHECK(t->op == IR_OP_DOT && strcmp(ir_attr_text(t, "lhs_contracting_dims"), "{1}") == 0 &&
        strcmp(ir_attr_text(t, "rhs_contracting_dims"), "{2}") == 0);
  CHECK(r->operands[1]->op == IR_OP_TRANSPOSE && r->operands[2]->op == IR_OP_TRANSPOSE);
  CHECK_CONTAINS(log.buf, "with the operands swapped instead");
  check_same_values(dot_transposes, m, 6);
  ir_module_free(m);
  classic_leaves_alone(dot_transposes);
}

/* XLA's RemoveDegenerateDimensionFromDot: size-1 dimensions are reshaped away from both operands
 * (a size-1 batch dimension too), the dimension numbers renumbered, the result reshaped back. */
static const char *dot_degenerate_hlo =
    "HloModule degenerate\n\n"
    "ENTRY main {\n"
    "  x = f32[1,64] parameter(0)\n"
    "  w = f32[64,32] parameter(1)\n"
    "  d = f32[1,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  q = f32[1,8,16] parameter(2)\n"
    "  k = f32[1,12,16] parameter(3)\n"
    "  s = f32[1,8,12] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}\n"
    "  ROOT t = (f32[1,32], f32[1,8,12]) tuple(d, s)\n"
    "}\n";

TEST(dot_drops_size_one_dimensions) {
  IrModule *m = hlo(dot_degenerate_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *r = m->entry->root;
  const IrInstr *d = r->operands[0], *s = r->operands[1];
  CHECK(d->op == IR_OP_RESHAPE && d->operands[0]->op == IR_OP_DOT);
  if (d->op == IR_OP_RESHAPE) {
    const IrInstr *nd = d->operands[0];
    CHECK(nd->shape.rank == 1 && nd->shape.dims[0] == 32 && nd->operands[0]->shape.rank == 1);
    CHECK(strcmp(ir_attr_text(nd, "lhs_contracting_dims"), "{0}") == 0);
  }
  CHECK(s->op == IR_OP_RESHAPE && s->operands[0]->op == IR_OP_DOT);
  if (s->op == IR_OP_RESHAPE) {
    const IrInstr *nd = s->operands[0];
    CHECK(nd->shape.rank == 2 && nd->shape.dims[0] == 8 && nd->shape.dims[1] == 12);
    CHECK(ir_attr_text(nd, "lhs_batch_dims") == NULL);
    CHECK(strcmp(ir_attr_text(nd, "lhs_contracting_dims"), "{1}") == 0 &&
          strcmp(ir_attr_text(nd, "rhs_contracting_dims"), "{1}") == 0);
  }
  CHECK_CONTAINS(log.buf, "size-1 dimensions");
  check_same_values(dot_degenerate_hlo, m, 9);
  ir_module_free(m);
}

/* A broadcast's operand loses its size-1 dimensions (HandleBroadcast): Gemma's attention mask,
 * a pred[1,1] reduce broadcast and reshaped, becomes a broadcast of a scalar, which the reshape
 * then reads as a broadcast itself; a [3,1] operand keeps its 3. */
static const char *const degenerate_broadcast_hlo =
    "HloModule degb\n\n"
    "ENTRY main {\n"
    "  p = pred[1,1] parameter(0)\n"
    "  b = pred[1,1,8,4] broadcast(p), dimensions={0,1}\n"
    "  r = pred[1,1,4,2,4] reshape(b)\n"
    "  x = f32[1,1,4,2,4] parameter(1)\n"
    "  c = f32[] constant(0)\n"
    "  bc = f32[1,1,4,2,4] broadcast(c), dimensions={}\n"
    "  s = f32[1,1,4,2,4] select(r, bc, x)\n"
    "  y = f32[3,1] parameter(2)\n"
    "  by = f32[3,5,1] broadcast(y), dimensions={0,2}\n"
    "  ROOT t = (f32[1,1,4,2,4], f32[3,5,1]) tuple(s, by)\n"
    "}\n";

TEST(broadcast_drops_size_one_operand_dimensions) {
  IrModule *m = hlo(degenerate_broadcast_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *root = m->entry->root;
  const IrInstr *sel = root->operands[0], *by = root->operands[1];
  CHECK(sel->op == IR_OP_SELECT);
  if (sel->op == IR_OP_SELECT) {
    const IrInstr *mask = sel->operands[0];
    CHECK(mask->op == IR_OP_BROADCAST && ir_shape_is_scalar(&mask->operands[0]->shape));
    CHECK(mask->op == IR_OP_BROADCAST && mask->operands[0]->op == IR_OP_RESHAPE &&
          strcmp(mask->operands[0]->operands[0]->name, "p") == 0);
  }
  CHECK(by->op == IR_OP_BROADCAST && by->operands[0]->op == IR_OP_RESHAPE && by->operands[0]->shape.rank == 1 &&
        strcmp(ir_attr_text(by, "dimensions"), "{0}") == 0);
  CHECK_CONTAINS(log.buf, "dimensions of size 1 are reshaped away");
  check_same_values(degenerate_broadcast_hlo, m, 5);
  classic_leaves_alone(degenerate_broadcast_hlo);
  ir_module_free(m);
}

/* Today's HandleSlice rules: a slice of a pad (only padding; exactly the operand; inside the
 * operand), of a broadcast (reading its operand whole; cut), of a concatenate over two of its
 * four operands, of the leading rows of a reshape (TryToReorderSliceAndReshape), of a reverse
 * (TryToReorderSliceAndReverse), and a stride that reaches past the end (RemoveRedundantStride). */
static const char *const slices_hlo =
    "HloModule slices\n\n"
    "ENTRY main {\n"
    "  x = f32[4,6] parameter(0)\n"
    "  v = f32[] parameter(1)\n"
    "  p = f32[8,9] pad(x, v), padding=2_2x1_2\n"
    "  in_padding = f32[2,9] slice(p), slice={[0:2], [0:9]}\n"
    "  undone = f32[4,6] slice(p), slice={[2:6], [1:7]}\n"
    "  inside = f32[2,3] slice(p), slice={[3:5], [2:5]}\n"
    "  y = f32[5] parameter(2)\n"
    "  b = f32[5,7] broadcast(y), dimensions={0}\n"
    "  whole = f32[5,3] slice(b), slice={[0:5], [2:5]}\n"
    "  cut = f32[2,7] slice(b), slice={[1:3], [0:7]}\n"
    "  z = f32[4,6] parameter(3)\n"
    "  c = f32[4,24] concatenate(x, z, x, z), dimensions={1}\n"
    "  middle = f32[4,6] slice(c), slice={[0:4], [8:14]}\n"
    "  w = f32[6,4] parameter(4)\n"
    "  r = f32[3,8] reshape(w)\n"
    "  lead = f32[2,8] slice(r), slice={[0:2], [0:8]}\n"
    "  rv = f32[4,6] reverse(x), dimensions={1}\n"
    "  sr = f32[4,2] slice(rv), slice={[0:4], [1:5:2]}\n"
    "  one = f32[4,1] slice(x), slice={[0:4], [2:6:5]}\n"
    "  ROOT t = (f32[2,9], f32[4,6], f32[2,3], f32[5,3], f32[2,7], f32[4,6], f32[2,8], f32[4,2], f32[4,1]) "
    "tuple(in_padding, undone, inside, whole, cut, middle, lead, sr, one)\n"
    "}\n";

TEST(slices_move_onto_what_they_read) {
  IrModule *m = hlo(slices_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *root = m->entry->root;
  CHECK(root->noperands == 9);
  if (root->noperands != 9) return;
  const IrInstr *const *o = (const IrInstr *const *)root->operands;
  CHECK(o[0]->op == IR_OP_BROADCAST && strcmp(o[0]->operands[0]->name, "v") == 0);
  CHECK(strcmp(o[1]->name, "x") == 0);
  CHECK(o[2]->op == IR_OP_SLICE && strcmp(o[2]->operands[0]->name, "x") == 0 &&
        strcmp(ir_attr_text(o[2], "slice"), "{[1:3], [1:4]}") == 0);
  CHECK(o[3]->op == IR_OP_BROADCAST && strcmp(o[3]->operands[0]->name, "y") == 0);
  CHECK(o[4]->op == IR_OP_BROADCAST && o[4]->operands[0]->op == IR_OP_SLICE &&
        strcmp(o[4]->operands[0]->operands[0]->name, "y") == 0 &&
        strcmp(ir_attr_text(o[4]->operands[0], "slice"), "{[1:3]}") == 0);
  CHECK(o[5]->op == IR_OP_SLICE && o[5]->operands[0]->op == IR_OP_CONCATENATE && o[5]->operands[0]->noperands == 2 &&
        strcmp(o[5]->operands[0]->operands[0]->name, "z") == 0 && strcmp(ir_attr_text(o[5], "slice"), "{[0:4], [2:8]}") == 0);
  CHECK(o[6]->op == IR_OP_RESHAPE && o[6]->operands[0]->op == IR_OP_SLICE &&
        strcmp(o[6]->operands[0]->operands[0]->name, "w") == 0 &&
        strcmp(ir_attr_text(o[6]->operands[0], "slice"), "{[0:4], [0:4]}") == 0);
  CHECK(o[7]->op == IR_OP_REVERSE && o[7]->operands[0]->op == IR_OP_SLICE &&
        strcmp(o[7]->operands[0]->operands[0]->name, "x") == 0 &&
        strcmp(ir_attr_text(o[7]->operands[0], "slice"), "{[0:4], [2:5:2]}") == 0);
  CHECK(o[8]->op == IR_OP_SLICE && strcmp(ir_attr_text(o[8], "slice"), "{[0:4], [2:3]}") == 0);
  CHECK_CONTAINS(log.buf, "reads only the pad's padding");
  CHECK_CONTAINS(log.buf, "takes back exactly what was padded");
  CHECK_CONTAINS(log.buf, "reads only operands 1 to 2 of c");
  CHECK_CONTAINS(log.buf, "leading rows of a reshape");
  CHECK_CONTAINS(log.buf, "stride 1");
  check_same_values(slices_hlo, m, 5);
  ir_module_free(m);
}

/* Today's HandleDynamicSlice rules: a dynamic slice of all of its operand is the operand; a
 * dimension taken whole starts at 0; dynamic slices of a broadcast, a unit-dimension reshape and
 * a transpose move onto their operand; constant starts make a slice, clamped as the operation
 * clamps them (start 7 of 6 columns, 3 taken: column 3). */
static const char *const dynamic_slices_hlo =
    "HloModule ds\n\n"
    "ENTRY main {\n"
    "  x = f32[4,6] parameter(0)\n"
    "  i = s32[] parameter(1)\n"
    "  j = s32[] parameter(2)\n"
    "  all = f32[4,6] dynamic-slice(x, i, j), dynamic_slice_sizes={4,6}\n"
    "  rows = f32[2,6] dynamic-slice(x, i, j), dynamic_slice_sizes={2,6}\n"
    "  y = f32[5] parameter(3)\n"
    "  b = f32[5,7] broadcast(y), dimensions={0}\n"
    "  db = f32[2,3] dynamic-slice(b, i, j), dynamic_slice_sizes={2,3}\n"
    "  w = f32[4,1,6] parameter(4)\n"
    "  r = f32[4,6] reshape(w)\n"
    "  dr = f32[2,3] dynamic-slice(r, i, j), dynamic_slice_sizes={2,3}\n"
    "  t = f32[6,4] transpose(x), dimensions={1,0}\n"
    "  dt = f32[3,2] dynamic-slice(t, i, j), dynamic_slice_sizes={3,2}\n"
    "  k1 = s32[] constant(1)\n"
    "  k7 = s32[] constant(7)\n"
    "  dc = f32[2,3] dynamic-slice(x, k1, k7), dynamic_slice_sizes={2,3}\n"
    "  ROOT out = (f32[4,6], f32[2,6], f32[2,3], f32[2,3], f32[3,2], f32[2,3]) tuple(all, rows, db, dr, dt, dc)\n"
    "}\n";

TEST(dynamic_slices_move_onto_what_they_read) {
  IrModule *m = hlo(dynamic_slices_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *root = m->entry->root;
  CHECK(root->noperands == 6);
  if (root->noperands != 6) return;
  const IrInstr *const *o = (const IrInstr *const *)root->operands;
  double v = -1;
  CHECK(strcmp(o[0]->name, "x") == 0);
  CHECK(o[1]->op == IR_OP_DYNAMIC_SLICE && strcmp(o[1]->operands[1]->name, "i") == 0 &&
        o[1]->operands[2]->op == IR_OP_CONSTANT && simp_splat_value(o[1]->operands[2], &v) && v == 0);
  CHECK(o[2]->op == IR_OP_BROADCAST && o[2]->operands[0]->op == IR_OP_DYNAMIC_SLICE &&
        strcmp(o[2]->operands[0]->operands[0]->name, "y") == 0 && strcmp(o[2]->operands[0]->operands[1]->name, "i") == 0);
  CHECK(o[3]->op == IR_OP_RESHAPE && o[3]->operands[0]->op == IR_OP_DYNAMIC_SLICE &&
        strcmp(o[3]->operands[0]->operands[0]->name, "w") == 0 && o[3]->operands[0]->shape.rank == 3 &&
        strcmp(o[3]->operands[0]->operands[3]->name, "j") == 0);
  CHECK(o[4]->op == IR_OP_TRANSPOSE && o[4]->operands[0]->op == IR_OP_DYNAMIC_SLICE &&
        strcmp(o[4]->operands[0]->operands[0]->name, "x") == 0 && strcmp(o[4]->operands[0]->operands[1]->name, "j") == 0 &&
        strcmp(o[4]->operands[0]->operands[2]->name, "i") == 0);
  CHECK(o[5]->op == IR_OP_SLICE && strcmp(o[5]->operands[0]->name, "x") == 0 &&
        strcmp(ir_attr_text(o[5], "slice"), "{[1:3], [3:6]}") == 0);
  CHECK_CONTAINS(log.buf, "the dynamic slice takes the whole operand");
  CHECK_CONTAINS(log.buf, "their starts are 0");
  CHECK_CONTAINS(log.buf, "a dynamic slice at constant starts is a slice");
  check_same_values(dynamic_slices_hlo, m, 5);
  classic_leaves_alone(dynamic_slices_hlo);
  ir_module_free(m);
}

/* After layout normalization the simplifier runs again, layout-sensitive (XLA's
 * layout_normalization pipeline): a slice of a
 * concatenate inside one operand is the operand (the CartPole's `done` check, once its transpose
 * became a bitcast), a convert of a broadcast scalar converts the scalar (what float
 * normalization's converts become), but a slice of a reshape stays where it is: reordering them
 * is off after layout assignment, as in XLA. */
static const char *const post_layout_hlo =
    "HloModule post\n\n"
    "ENTRY main {\n"
    "  a = f32[8,1]{1,0} parameter(0)\n"
    "  b = f32[8,3]{1,0} parameter(1)\n"
    "  c = f32[8,4]{1,0} concatenate(a, b), dimensions={1}\n"
    "  s = f32[8,1]{1,0} slice(c), slice={[0:8], [0:1]}\n"
    "  r = f32[4,8]{1,0} reshape(c)\n"
    "  lead = f32[2,8]{1,0} slice(r), slice={[0:2], [0:8]}\n"
    "  h = bf16[] parameter(2)\n"
    "  hb = bf16[8,4]{1,0} broadcast(h), dimensions={}\n"
    "  hc = f32[8,4]{1,0} convert(hb)\n"
    "  ROOT t = (f32[8,1]{1,0}, f32[2,8]{1,0}, f32[8,4]{1,0}) tuple(s, lead, hc)\n"
    "}\n";

TEST(after_layout_normalization_slices_simplify_again) {
  IrModule *m = hlo(post_layout_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_post_layout, m, &log));
  const IrInstr *root = m->entry->root;
  CHECK(strcmp(root->operands[0]->name, "a") == 0);
  CHECK(root->operands[1]->op == IR_OP_SLICE && root->operands[1]->operands[0]->op == IR_OP_RESHAPE);
  CHECK(root->operands[2]->op == IR_OP_BROADCAST && root->operands[2]->operands[0]->op == IR_OP_CONVERT &&
        ir_shape_is_scalar(&root->operands[2]->operands[0]->shape));
  CHECK_CONTAINS(log.buf, "slice of concatenate");
  ir_module_free(m);
  /* before layout assignment the reshape and the slice swap */
  m = hlo(post_layout_hlo);
  if (!m) return;
  Log log2 = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log2));
  CHECK(m->entry->root->operands[1]->op == IR_OP_RESHAPE);
  ir_module_free(m);
}

/* Today's HandleReduce rules: a sum of a negation is the negation of the sum; a reduce of a
 * transpose reduces the transposed value (a transpose after it when the kept dimensions come out
 * reordered); a reduce of a reduce with one reducer and init is one reduce; a reduce of a reshape
 * that changes only reduced dimensions reduces the reshape's operand, one that changes only kept
 * ones reduces first and reshapes after. */
static const char *const reduces_hlo =
    "HloModule reds\n\n"
    "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n\n"
    "sum2 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(b, a)\n}\n\n"
    "ENTRY main {\n"
    "  x = f32[4,6,8] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  n = f32[4,6,8] negate(x)\n"
    "  rn = f32[4,8] reduce(n, z), dimensions={1}, to_apply=sum\n"
    "  t = f32[8,4,6] transpose(x), dimensions={2,0,1}\n"
    "  rt = f32[8,4] reduce(t, z), dimensions={2}, to_apply=sum\n"
    "  t2 = f32[6,8,4] transpose(x), dimensions={1,2,0}\n"
    "  rt2 = f32[6,4] reduce(t2, z), dimensions={1}, to_apply=sum\n"
    "  r1 = f32[4,8] reduce(x, z), dimensions={1}, to_apply=sum\n"
    "  rr = f32[8] reduce(r1, z), dimensions={0}, to_apply=sum2\n"
    "  y = f32[4,48] parameter(1)\n"
    "  ry = f32[4,6,8] reshape(y)\n"
    "  rs = f32[4] reduce(ry, z), dimensions={1,2}, to_apply=sum\n"
    "  w = f32[24,5] parameter(2)\n"
    "  rw = f32[4,6,5] reshape(w)\n"
    "  rk = f32[4,6] reduce(rw, z), dimensions={2}, to_apply=sum\n"
    "  ROOT o = (f32[4,8], f32[8,4], f32[6,4], f32[8], f32[4], f32[4,6]) tuple(rn, rt, rt2, rr, rs, rk)\n"
    "}\n";

TEST(reduces_move_onto_what_they_read) {
  IrModule *m = hlo(reduces_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *o = m->entry->root;
  CHECK(o->noperands == 6);
  if (o->noperands != 6) return;
  const IrInstr *const *v = (const IrInstr *const *)o->operands;
  /* negate(reduce(x)) */
  CHECK(v[0]->op == IR_OP_NEGATE && v[0]->operands[0]->op == IR_OP_REDUCE &&
        strcmp(v[0]->operands[0]->operands[0]->name, "x") == 0);
  /* rt: x's dimension 1 reduced, kept 2 then 0: a transpose of the [4,8] result */
  CHECK(v[1]->op == IR_OP_TRANSPOSE && v[1]->operands[0]->op == IR_OP_REDUCE &&
        strcmp(ir_attr_text(v[1]->operands[0], "dimensions"), "{1}") == 0 &&
        strcmp(ir_attr_text(v[1], "dimensions"), "{1,0}") == 0);
  /* rt2: x's dimension 2 reduced, kept 1 then 0: transposed too */
  CHECK(v[2]->op == IR_OP_TRANSPOSE && strcmp(ir_attr_text(v[2]->operands[0], "dimensions"), "{2}") == 0);
  /* rr: one reduce of x over {0,1} (the reducers add in either order), keeping its name */
  CHECK(v[3]->op == IR_OP_REDUCE && strcmp(v[3]->operands[0]->name, "x") == 0 &&
        strcmp(ir_attr_text(v[3], "dimensions"), "{0,1}") == 0 && strcmp(v[3]->name, "rr") == 0);
  /* rs: the reshape splits only reduced dimensions: y's dimension 1 reduced */
  CHECK(v[4]->op == IR_OP_REDUCE && strcmp(v[4]->operands[0]->name, "y") == 0 &&
        strcmp(ir_attr_text(v[4], "dimensions"), "{1}") == 0);
  /* rk: the reshape splits only the kept dimension: reduce w's dimension 1, then reshape [24] */
  CHECK(v[5]->op == IR_OP_RESHAPE && v[5]->operands[0]->op == IR_OP_REDUCE &&
        strcmp(v[5]->operands[0]->operands[0]->name, "w") == 0);
  CHECK_CONTAINS(log.buf, "the sum of a negation is the negation of the sum");
  CHECK_CONTAINS(log.buf, "(the same reducer and init) is one reduce");
  CHECK_CONTAINS(log.buf, "changes only kept dimensions");
  check_same_values(reduces_hlo, m, 5);
  ir_module_free(m);
}

/* A dot that contracts nothing is an outer product: XLA multiplies broadcasts (HandleDot's
 * RewriteAsMultiplyDotWithZeroLhsContractingDim): DLRM's gradient of a [6272,1] x [1,192] dense
 * layer, and a batched one whose batch dimension is not first on the right. */
static const char *const outer_products_hlo =
    "HloModule outer\n\n"
    "ENTRY main {\n"
    "  a = f32[8,1] parameter(0)\n"
    "  b = f32[4,1] parameter(1)\n"
    "  d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
    "  x = f32[2,3] parameter(2)\n"
    "  y = f32[5,2] parameter(3)\n"
    "  e = f32[2,3,5] dot(x, y), lhs_batch_dims={0}, rhs_batch_dims={1}\n"
    "  ROOT t = (f32[8,4], f32[2,3,5]) tuple(d, e)\n"
    "}\n";

TEST(outer_products_multiply_broadcasts) {
  IrModule *m = hlo(outer_products_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *t = m->entry->root;
  for (int k = 0; k < 2; k++) {
    const IrInstr *mul = t->operands[k];
    CHECK(mul->op == IR_OP_MULTIPLY && mul->operands[0]->op == IR_OP_BROADCAST && mul->operands[1]->op == IR_OP_BROADCAST);
  }
  /* y is transposed to batch first, [2,5], and broadcast onto dimensions 0 and 2 */
  const IrInstr *by = t->operands[1]->operands[1];
  CHECK(by->operands[0]->op == IR_OP_TRANSPOSE && strcmp(ir_attr_text(by, "dimensions"), "{0,2}") == 0);
  CHECK(count_op(m, IR_OP_DOT) == 0);
  CHECK_CONTAINS(log.buf, "an outer product is a multiply of broadcasts");
  check_same_values(outer_products_hlo, m, 5);
  ir_module_free(m);
}

/* A reshape of a broadcast that leaves the broadcast operand's dimensions whole is a broadcast
 * (HandleReshape): what reshape-mover's inverse reshape of a broadcast operand becomes, so the
 * weight of Gemma 2's attention reaches the multiply through one transpose only. One that splits
 * an operand dimension stays. */
static const char *const reshaped_broadcasts_hlo =
    "HloModule rb\n\n"
    "ENTRY main {\n"
    "  x = f32[6] parameter(0)\n"
    "  b = f32[6,8] broadcast(x), dimensions={0}\n"
    "  r = f32[6,2,4] reshape(b)\n"
    "  y = f32[8] parameter(1)\n"
    "  c = f32[6,8] broadcast(y), dimensions={1}\n"
    "  q = f32[6,2,4] reshape(c)\n"
    "  ROOT t = (f32[6,2,4], f32[6,2,4]) tuple(r, q)\n"
    "}\n";

TEST(reshape_of_broadcast_is_a_broadcast) {
  IrModule *m = hlo(reshaped_broadcasts_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  const IrInstr *t = m->entry->root;
  CHECK(t->operands[0]->op == IR_OP_BROADCAST && strcmp(t->operands[0]->operands[0]->name, "x") == 0 &&
        strcmp(ir_attr_text(t->operands[0], "dimensions"), "{0}") == 0);
  CHECK(t->operands[1]->op == IR_OP_RESHAPE && t->operands[1]->operands[0]->op == IR_OP_BROADCAST);
  CHECK_CONTAINS(log.buf, "leaves the broadcast operand's dimensions whole");
  check_same_values(reshaped_broadcasts_hlo, m, 5);
  ir_module_free(m);
}

/* A division by a non-constant stays (integers too: XLA does not simplify integer division
 * further). */
TEST(what_stays) {
  IrModule *m = hlo("HloModule stay\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4] parameter(0)\n"
                    "  y = f32[4] parameter(1)\n"
                    "  a = s32[4] parameter(2)\n"
                    "  d = f32[4] divide(x, y)\n"
                    "  three = s32[] constant(3)\n"
                    "  b3 = s32[4] broadcast(three), dimensions={}\n"
                    "  q = s32[4] divide(a, b3)\n"
                    "  c = f32[] constant(2)\n"
                    "  bc = f32[4] broadcast(c), dimensions={}\n"
                    "  k = f32[4] subtract(bc, x)\n"
                    "  ROOT t = (f32[4], s32[4], f32[4]) tuple(d, q, k)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(!run_pass(&pass_algsimp_current, m, &log));
  CHECK(log.n == 0);
  ir_module_free(m);
}

/* A reduction over dimensions of size 1 is a reshape (argsort's reduce_and over [N,M,1]); a reduce of
 * that reshape then reduces what it reshaped (HandleReduce's reduce of a reshape). */
TEST(reduce_of_unit_dimensions) {
  IrModule *m = hlo("HloModule red\n\n"
                    "and_pred {\n"
                    "  a = pred[] parameter(0)\n"
                    "  b = pred[] parameter(1)\n"
                    "  ROOT c = pred[] and(a, b)\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4,3,1] parameter(0)\n"
                    "  z = f32[] constant(0)\n"
                    "  b = f32[4,3,1] broadcast(z), dimensions={}\n"
                    "  g = pred[4,3,1] compare(x, b), direction=GT\n"
                    "  t = pred[] constant(true)\n"
                    "  r = pred[4,3] reduce(g, t), dimensions={2}, to_apply=and_pred\n"
                    "  s = pred[4] reduce(r, t), dimensions={1}, to_apply=and_pred\n"
                    "  ROOT o = (pred[4,3], pred[4]) tuple(r, s)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "algsimp rewrite: replaced r(g, 1) by reshape: the reduced dimensions have size 1: nothing "
                          "is reduced, the operand is reshaped\n");
  /* then s reduces a reshape that changes only the dimension it reduces: it reduces g itself */
  CHECK_CONTAINS(log.buf, "the reshape it reduces changes only reduced dimensions");
  CHECK_STR(line_of(m, "s"), "%s = pred[4] reduce(%g, %t), dimensions={1,2}, to_apply=%and_pred");
  ir_module_free(m);
}

/* Total-order float comparisons (sort comparators) become integer comparisons; -0 < 0, and NaNs
 * order after +inf (before -inf when negative), as before. */
TEST(comparison_expander) {
  const char *text = "HloModule cmp\n\n"
                     "ENTRY main {\n"
                     "  x = f32[8] parameter(0)\n"
                     "  k = f32[8] constant({-0, 0, nan, -inf, inf, -1.5, 2.25, 0})\n"
                     "  lt = pred[8] compare(x, k), direction=LT, type=TOTALORDER\n"
                     "  ge = pred[8] compare(k, x), direction=GE, type=TOTALORDER\n"
                     "  h = bf16[8] convert(x)\n"
                     "  kh = bf16[8] convert(k)\n"
                     "  hl = pred[8] compare(kh, h), direction=LT, type=TOTALORDER\n"
                     "  plain = pred[8] compare(x, k), direction=LT\n"
                     "  ROOT t = (pred[8], pred[8], pred[8], pred[8]) tuple(lt, ge, hl, plain)\n"
                     "}\n";
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_comparison_expander, m, &log));
  CHECK_STR(log.buf,
            "comparison-expander rewrite: lt compares x and k as s32 integers (select LT select.22): a total-order "
            "comparison of f32; each side is its bits as a signed integer, the magnitude bits flipped when negative, "
            "so the integers order as the floats\n"
            "comparison-expander rewrite: ge compares k and x as s32 integers (select.30 GE select.34): a total-order "
            "comparison of f32; each side is its bits as a signed integer, the magnitude bits flipped when negative, "
            "so the integers order as the floats\n"
            "comparison-expander rewrite: hl compares kh and h as s32 integers (select.44 LT select.48): a total-order "
            "comparison of bf16; each side is its bits as a signed integer, the magnitude bits flipped when negative, "
            "so the integers order as the floats\n");
  CHECK_STR(line_of(m, "lt"), "%lt = pred[8] compare(%select, %select.22), direction=LT");
  CHECK_STR(line_of(m, "select"), "%select = s32[8] select(%compare, %xor, %bitcast)");
  CHECK_STR(line_of(m, "bitcast"), "%bitcast = s32[8] bitcast-convert(%x)");
  CHECK_STR(line_of(m, "plain"), "%plain = pred[8] compare(%x, %k), direction=LT");
  ir_module_free(m);
}

/* Constants of one value become broadcasts, 0, 1, 2, ... an iota; a broadcast scalar feeding a
 * slice or reshape is a broadcast to its shape; an op of scalar broadcasts is a broadcast of the
 * op on the scalars. */
static const char *const constants =
    "HloModule consts\n\n"
    "ENTRY main {\n"
    "  x = f32[4] parameter(0)\n"
    "  twos = f32[4] constant({2, 2, 2, 2})\n"
    "  idx = s32[4] constant({0, 1, 2, 3})\n"
    "  one = f32[1] constant({1})\n"
    "  m = f32[4] multiply(x, twos)\n"
    "  c = f32[4] convert(idx)\n"
    "  h = f32[] constant(0.5)\n"
    "  bh = f32[2,4] broadcast(h), dimensions={}\n"
    "  sl = f32[1,4] slice(bh), slice={[1:2], [0:4]}\n"
    "  rs = f32[4] reshape(sl)\n"
    "  t = f32[] constant(3)\n"
    "  bt = f32[4] broadcast(t), dimensions={}\n"
    "  e = f32[4] exponential(bt)\n"
    "  a = f32[4] add(m, c)\n"
    "  b = f32[4] add(a, rs)\n"
    "  ROOT r = (f32[4], f32[4], f32[1]) tuple(b, e, one)\n"
    "}\n";

TEST(constants_and_scalar_broadcasts) {
  IrModule *m = hlo(constants);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced twos() by twos.19: every element is the same: a broadcast scalar\n"
            "algsimp rewrite: replaced idx() by idx.20: its values are 0, 1, 2, ...: an iota\n"
            "algsimp rewrite: replaced sl(0.5) by bh.21: a slice of a broadcast scalar is a broadcast of the scalar\n"
            "algsimp rewrite: replaced rs(0.5) by bh.22: a reshape of a broadcast scalar is a broadcast of the scalar\n"
            "algsimp rewrite: e of broadcast bt now runs on the scalar t (as e.23) and bt.24 broadcasts the result: an "
            "elementwise operation commutes with a broadcast\n");
  CHECK_STR(line_of(m, "twos.19"), "%twos.19 = f32[4] broadcast(%twos.18), dimensions={}");
  CHECK_STR(line_of(m, "idx.20"), "%idx.20 = s32[4] iota(), iota_dimension=0");
  CHECK_STR(line_of(m, "e.23"), "%e.23 = f32[] exponential(%t)");
  /* A one-element array stays a constant (it is a scalar in all but shape). */
  CHECK_STR(line_of(m, "one"), "%one = f32[1] constant({1})");
  CHECK(count_op(m, IR_OP_SLICE) == 0 && count_op(m, IR_OP_RESHAPE) == 0);
  ir_module_free(m);
  classic_leaves_alone(constants);
}

/* Today's folding: an op with a constant operand folds (slices too); an op of broadcasts alone
 * waits for algsimp; slices and reshapes of an elided constant are elided constants, one per
 * distinct slice. */
TEST(constant_folding_today) {
  IrModule *m = hlo("HloModule fold\n\n"
                    "ENTRY main {\n"
                    "  x = f32[] parameter(0)\n"
                    "  tab = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})\n"
                    "  s = f32[1] slice(tab), slice={[2:3]}\n"
                    "  v = f32[] reshape(s)\n"
                    "  big = f32[20,200] constant({...})\n"
                    "  r0 = f32[1,200] slice(big), slice={[0:1], [0:200]}\n"
                    "  r1 = f32[1,200] slice(big), slice={[0:1], [0:200]}\n"
                    "  q0 = f32[200] reshape(r0)\n"
                    "  q1 = f32[200] reshape(r1)\n"
                    "  k = f32[] constant(2)\n"
                    "  bk = f32[200] broadcast(k), dimensions={}\n"
                    "  e = f32[200] add(bk, bk)\n"
                    "  y = f32[] add(x, v)\n"
                    "  ROOT t = (f32[], f32[200], f32[200], f32[200]) tuple(y, q0, q1, e)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass(&pass_constant_folding_current, m, &log));
  CHECK_STR(log.buf,
            "constant-folding fold: folded s(tab) to constant {3}\n"
            "constant-folding fold: folded v(3) to constant 3\n"
            "constant-folding fold: folded r0(big) to constant {...}\n"
            "constant-folding fold: replaced r1 by r0: the same slice of the elided constant big\n"
            "constant-folding fold: folded q0(r0) to constant {...}\n"
            "constant-folding fold: replaced q1 by q0: the same reshape of the elided constant r0\n");
  CHECK_STR(line_of(m, "y"), "%y = f32[] add(%x, %v)");
  CHECK_STR(line_of(m, "v"), "%v = f32[] constant(3)");
  CHECK_STR(line_of(m, "t"), "%t = (f32[], f32[200], f32[200], f32[200]) tuple(%y, %q0, %q0, %e)");
  /* add(broadcast, broadcast) has no constant operand: left to algsimp. */
  CHECK_STR(line_of(m, "e"), "%e = f32[200] add(%bk, %bk)");
  ir_module_free(m);
}

/* A reduce of constants folds when its reducer is one binary operation (or, add, max: row by row
 * in order); one with another reducer stays, and so does the classic pass's. */
static const char *const reduces_of_constants =
    "HloModule fred\n\n"
    "or_ {\n"
    "  a = pred[] parameter(0)\n"
    "  b = pred[] parameter(1)\n"
    "  ROOT r = pred[] or(a, b)\n"
    "}\n\n"
    "add_ {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT r = f32[] add(b, a)\n"
    "}\n\n"
    "twice {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  s = f32[] add(a, b)\n"
    "  ROOT r = f32[] add(s, b)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[] parameter(0)\n"
    "  flags = pred[4] constant({false, true, false, false})\n"
    "  no = pred[] constant(false)\n"
    "  any = pred[] reduce(flags, no), dimensions={0}, to_apply=or_\n"
    "  m = f32[2,3] constant({{1, 2, 3}, {10, 20, 30}})\n"
    "  zero = f32[] constant(0)\n"
    "  rows = f32[2] reduce(m, zero), dimensions={1}, to_apply=add_\n"
    "  cols = f32[3] reduce(m, zero), dimensions={0}, to_apply=add_\n"
    "  odd = f32[2] reduce(m, zero), dimensions={1}, to_apply=twice\n"
    "  y = f32[] select(any, x, zero)\n"
    "  ROOT t = (f32[], f32[2], f32[3], f32[2]) tuple(y, rows, cols, odd)\n"
    "}\n";

/* A concatenate of constants (a constant and a broadcast of one) folds, as today's XLA folds any
 * operation of constants: scatter-expander's bounds check on constant indices becomes constant. */
TEST(constant_folding_concatenate) {
  static const char *const text = "HloModule cat\n\n"
                                  "ENTRY main {\n"
                                  "  a = s32[2,1] constant({{0}, {1}})\n"
                                  "  z = s32[] constant(3)\n"
                                  "  b = s32[2,2] broadcast(z), dimensions={}\n"
                                  "  c = s32[2,3] concatenate(a, b), dimensions={1}\n"
                                  "  x = s32[2,3] parameter(0)\n"
                                  "  ROOT r = s32[2,3] add(c, x)\n"
                                  "}\n";
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_constant_folding_current, m, &log));
  CHECK_STR(log.buf, "constant-folding fold: folded c(a, 3) to constant {{0, 3, 3}, {1, 3, 3}}\n");
  ir_module_free(m);
  m = hlo(text);
  CHECK(m != NULL);
  if (!m) return;
  Log classic = {{0}, 0};
  CHECK(!run_pass(&pass_constant_folding, m, &classic));
  ir_module_free(m);
}

TEST(constant_folding_reduces) {
  IrModule *m = hlo(reduces_of_constants);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_constant_folding_current, m, &log));
  CHECK_STR(log.buf, "constant-folding fold: folded any(flags, 0) to constant true\n"
                     "constant-folding fold: folded rows(m, 0) to constant {6, 60}\n"
                     "constant-folding fold: folded cols(m, 0) to constant {11, 22, 33}\n");
  CHECK_STR(line_of(m, "odd"), "%odd = f32[2] reduce(%m, %zero), dimensions={1}, to_apply=%twice");
  IrModule *c = hlo(reduces_of_constants);
  CHECK(c != NULL);
  if (!c) return;
  Log log2 = {{0}, 0};
  CHECK(!run_pass(&pass_constant_folding, c, &log2));
  ir_module_free(c);
  ir_module_free(m);
}

/* tree-reduction-rewriter: reductions too large for one race-free kernel become two. */
static const char *const big_reductions =
    "HloModule tree\n\n"
    "add {\n"
    "  a = s32[] parameter(0)\n"
    "  b = s32[] parameter(1)\n"
    "  ROOT r = s32[] add(a, b)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  i = s32[1000000] iota(), iota_dimension=0\n"
    "  sq = s32[1000000] multiply(i, i)\n"
    "  zero = s32[] constant(0)\n"
    "  all = s32[] reduce(sq, zero), dimensions={0}, to_apply=add\n"
    "  c = s32[1,6272,1,192] parameter(0)\n"
    "  cols = s32[1,192] reduce(c, zero), dimensions={0,1}, to_apply=add\n"
    "  p = s32[20011] parameter(1)\n"
    "  odd = s32[] reduce(p, zero), dimensions={0}, to_apply=add\n"
    "  b = s32[16,4,32] parameter(2)\n"
    "  batch = s32[4] reduce(b, zero), dimensions={0,2}, to_apply=add\n"
    "  f = s32[8,4096] parameter(3)\n"
    "  fits = s32[8] reduce(f, zero), dimensions={1}, to_apply=add\n"
    "  ROOT t = (s32[], s32[1,192], s32[], s32[4], s32[8]) tuple(all, cols, odd, batch, fits)\n"
    "}\n";

TEST(tree_reduction_rewriter) {
  IrModule *m = hlo(big_reductions);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_tree_reduction, m, &log));
  CHECK_STR(log.buf,
            /* 1,000,000 = 1000 x 1000, as XLA splits jax.b380442861's sum */
            "tree-reduction-rewriter rewrite: split all (a row reduction of 1000000 elements: more than 16384 are not "
            "race free; 1000000 = 1000 x 1000) into all.inner (s32[1000,1000] -> s32[1000]) and all.outer (-> s32[])\n"
            /* units dropped, 6272 = 64 x 98 (no padding; 64 a power of two), swapped for a column */
            "tree-reduction-rewriter rewrite: split cols (a column reduction of 6272 elements: more than 4096 are not "
            "race free; 6272 = 64 x 98) into cols.inner (s32[64,98,192] -> s32[64,192]) and cols.outer (-> s32[192])\n"
            /* 20011 is not a product of two near its root: padded by 5 with the initial value */
            "tree-reduction-rewriter rewrite: split odd (a row reduction of 20011 elements: more than 16384 are not "
            "race free; 20016 = 144 x 139, padded) into odd.inner (s32[144,139] -> s32[144]) and odd.outer (-> s32[])\n"
            "tree-reduction-rewriter rewrite: split batch (a row reduction over 16 major rows: more than 8 are not race "
            "free) into batch.inner (s32[16,4,32] -> s32[16,4]) and batch.outer (-> s32[4])\n");
  /* Each result is read in the reduction's own shape. */
  CHECK_STR(line_of(m, "t"), "%t = (s32[], s32[1,192], s32[], s32[4], s32[8]) tuple(%all.outer, %cols.26, %odd.outer, "
                             "%batch.outer, %fits)");
  CHECK_STR(line_of(m, "odd.padded"), "%odd.padded = s32[20016]{0} pad(%p, %zero), padding=0_5");
  /* Every reduction left is race free: nothing more to split. */
  Log again = {{0}, 0};
  CHECK(!run_pass(&pass_tree_reduction, m, &again));
  ir_module_free(m);
}

/* reduce-window-rewriter: cumulative reduce-windows longer than 16 become a scan of blocks of 16
 * and a scan of their totals; reduce-windows of rank 1 become rank 2. */
static const char *const scans =
    "HloModule scans\n\n"
    "add {\n"
    "  a = s32[] parameter(0)\n"
    "  b = s32[] parameter(1)\n"
    "  ROOT r = s32[] add(a, b)\n"
    "}\n\n"
    "max {\n"
    "  a = s32[] parameter(0)\n"
    "  b = s32[] parameter(1)\n"
    "  ROOT r = s32[] maximum(a, b)\n"
    "}\n\n"
    "add2 {\n"
    "  a = s32[] parameter(0)\n"
    "  b = s32[] parameter(1)\n"
    "  c = s32[] parameter(2)\n"
    "  d = s32[] parameter(3)\n"
    "  s = s32[] add(a, c)\n"
    "  t = s32[] add(b, d)\n"
    "  ROOT r = (s32[], s32[]) tuple(s, t)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = s32[3,40] parameter(0)\n"
    "  zero = s32[] constant(0)\n"
    /* jnp.cumsum(x, axis=1): 40 -> 48 = 3 blocks of 16, padded */
    "  fwd = s32[3,40] reduce-window(x, zero), window={size=1x40 pad=0_0x39_0}, to_apply=add\n"
    "  y = s32[40,2] parameter(1)\n"
    "  low = s32[] constant(-2147483648)\n"
    /* a backward exclusive running maximum down the columns: 41 results, the last the initial
       value; the column dimension is moved last and back */
    "  bwd = s32[41,2] reduce-window(y, low), window={size=40x1 pad=0_40x0_0}, to_apply=max\n"
    /* at most 16: a reduce-window of its own */
    "  z = s32[4,16] parameter(2)\n"
    "  short = s32[4,16] reduce-window(z, zero), window={size=1x16 pad=0_0x15_0}, to_apply=add\n"
    /* rank 1: [20] -> [20, 1] */
    "  v = s32[20] parameter(3)\n"
    "  win = s32[18] reduce-window(v, zero), window={size=3}, to_apply=add\n"
    /* two inputs reduced together: left as it is */
    "  pair = (s32[18], s32[18]) reduce-window(v, v, zero, zero), window={size=3}, to_apply=add2\n"
    "  ROOT t = (s32[3,40], s32[41,2], s32[4,16], s32[18], (s32[18], s32[18])) tuple(fwd, bwd, short, win, pair)\n"
    "}\n";

TEST(reduce_window_rewriter) {
  IrModule *m = hlo(scans);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_reduce_window_rewriter, m, &log));
  CHECK_STR(log.buf,
            "reduce-window-rewriter rewrite: fwd: a forward scan of 40 elements (more than 16) in dimension 1 becomes "
            "fwd.block_scan: blocks of 16 s32[3,3,16], their 3 totals scanned by fwd.totals_scan (s32[3,4]), padded "
            "with the initial value\n"
            "reduce-window-rewriter rewrite: bwd: an exclusive backward scan of 40 elements (more than 16) in dimension 0 "
            "becomes bwd.block_scan: blocks of 16 s32[2,3,16], their 3 totals scanned by bwd.totals_scan (s32[2,4]), "
            "padded with the initial value\n"
            "reduce-window-rewriter rewrite: win: a reduce-window of rank 1 becomes one of rank 2 ([20] -> [20, 1])\n"
            "reduce-window-rewriter keep: pair reduces 2 inputs together; XLA rewrites such a reduce-window of rank 1 "
            "too, fxplain only reduce-windows of one input, so it stays as it is\n");
  CHECK_STR(line_of(m, "fwd.block_scan"), "%fwd.block_scan = s32[3,3,16]{2,1,0} reduce-window(%fwd.blocks, %zero), "
                                          "window={size=1x1x16 pad=0_0x0_0x15_0}, to_apply=%add");
  /* the totals' scan is exclusive: one result more, the last sliced off */
  CHECK_STR(line_of(m, "fwd.totals_scan"), "%fwd.totals_scan = s32[3,4]{1,0} reduce-window(%fwd.block_totals.1, %zero), "
                                           "window={size=1x3 pad=0_0x3_0}, to_apply=%add");
  CHECK_STR(line_of(m, "bwd.block_scan"), "%bwd.block_scan = s32[2,3,16]{2,1,0} reduce-window(%bwd.blocks, %low), "
                                          "window={size=1x1x16 pad=0_0x0_0x0_15}, to_apply=%max");
  CHECK_STR(line_of(m, "bwd.transposed"), "%bwd.transposed = s32[2,40]{1,0} transpose(%y), dimensions={1,0}");
  CHECK(ir_module_find_instr(m, "short") != NULL);
  CHECK_STR(line_of(m, "win.r2.1"), "%win.r2.1 = s32[18,1]{1,0} reduce-window(%win.r2, %zero), window={size=3x1}, "
                                    "to_apply=%add");
  /* Everything left is at most 16 long and of rank 2: a second run changes nothing. */
  Log again = {{0}, 0};
  CHECK(!run_pass(&pass_reduce_window_rewriter, m, &again));
  ir_module_free(m);
  /* A scan of 1024: 64 blocks, whose 64 totals are again 4 blocks of 16; an exclusive scan of 4
     is left. Three reduce-windows, the same numbers. */
  IrModule *big = hlo("HloModule big\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                      "  ROOT r = f32[] add(a, b)\n}\n\nENTRY main {\n  x = f32[2,1024] parameter(0)\n"
                      "  zero = f32[] constant(0)\n"
                      "  ROOT s = f32[2,1024] reduce-window(x, zero), window={size=1x1024 pad=0_0x1023_0}, to_apply=add\n}\n");
  CHECK(big != NULL);
  if (!big) return;
  Log l2 = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_reduce_window_rewriter, big, &l2));
  CHECK_CONTAINS(l2.buf, "s: a forward scan of 1024 elements (more than 16) in dimension 1 becomes s.block_scan: blocks "
                         "of 16 f32[2,64,16], their 64 totals scanned by s.totals_scan (f32[2,65])");
  CHECK_CONTAINS(l2.buf, "s.totals_scan: an exclusive forward scan of 64 elements (more than 16) in dimension 1 becomes");
  CHECK(count_op(big, IR_OP_REDUCE_WINDOW) == 3);
  ir_module_free(big);
}

/* algsimp: a reduce of a broadcast (HandleReduce's three rules, as jaxlib 0.10.2's XLA makes them). */
TEST(reduce_of_broadcast) {
  IrModule *m = hlo("HloModule rb\n\n"
                    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\n"
                    "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] maximum(a, b)\n}\n\n"
                    "ENTRY main {\n"
                    "  v = f32[6,4] parameter(0)\n"
                    "  w = f32[6] parameter(1)\n"
                    "  s = f32[] parameter(2)\n"
                    "  i = f32[] parameter(3)\n"
                    "  z = f32[] constant(0)\n"
                    /* the reduced dimension is one of v's: reduce v, broadcast */
                    "  bv = f32[6,5,4] broadcast(v), dimensions={0,2}\n"
                    "  commute = f32[5,4] reduce(bv, z), dimensions={0}, to_apply=add\n"
                    /* a sum over the dimension the broadcast added: i + w * 5 */
                    "  bw = f32[6,5] broadcast(w), dimensions={0}\n"
                    "  sum = f32[6] reduce(bw, i), dimensions={1}, to_apply=add\n"
                    /* the max of a broadcast scalar over everything: max(s, i); over part of it: kept */
                    "  bs = f32[6,5] broadcast(s), dimensions={}\n"
                    "  all = f32[] reduce(bs, i), dimensions={0,1}, to_apply=mx\n"
                    "  part = f32[6] reduce(bs, i), dimensions={1}, to_apply=mx\n"
                    "  ROOT t = (f32[5,4], f32[6], f32[], f32[6]) tuple(commute, sum, all, part)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "every dimension it reduces is one of v's, which bv broadcasts: it reduces v and broadcasts the "
                          "smaller result");
  CHECK_CONTAINS(log.buf, "a sum over dimensions bw added to w is the initial value plus w times 5, broadcast");
  CHECK_CONTAINS(log.buf, "a maximum of bs over every dimension of a broadcast scalar is the maximum of s and the initial "
                          "value");
  CHECK_STR(line_of(m, "t"), "%t = (f32[5,4], f32[6], f32[], f32[6]) tuple(%bv.24, %add, %maximum, %part)");
  CHECK_STR(line_of(m, "bv.24"), "%bv.24 = f32[5,4] broadcast(%commute.23), dimensions={1}");
  CHECK_STR(line_of(m, "commute.23"), "%commute.23 = f32[4] reduce(%v, %z), dimensions={0}, to_apply=%add");
  CHECK_STR(line_of(m, "add"), "%add = f32[6] add(%broadcast, %multiply)");
  CHECK_STR(line_of(m, "multiply"), "%multiply = f32[6] multiply(%w, %constant.26)");
  CHECK_STR(line_of(m, "maximum"), "%maximum = f32[] maximum(%s, %i)");
  CHECK(ir_module_find_instr(m, "part") != NULL);
  CHECK(count_op(m, IR_OP_REDUCE) == 2);
  ir_module_free(m);
}

/* algsimp: reduce-windows (XLA's HandleReduceWindow): a window of one element, windows over whole
 * dimensions, and pads folded into the window (interior padding as base dilation; through a
 * convert when the padding is at least a tenth of the scanned dimension). */
TEST(reduce_window_simplifications) {
  IrModule *m = hlo("HloModule rw\n\n"
                    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\n"
                    "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] maximum(a, b)\n}\n\n"
                    "mx64 {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT r = f64[] maximum(a, b)\n}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[8,30] parameter(0)\n"
                    "  g = f32[2,4,4,3] parameter(1)\n"
                    "  z = f32[] constant(0)\n"
                    "  ninf = f32[] constant(-inf)\n"
                    "  p = f32[8,34] pad(x, z), padding=0_0x2_2\n"
                    "  s = f32[8,32] reduce-window(p, z), window={size=1x3}, to_apply=add\n"
                    "  one = f32[8,32] reduce-window(x, ninf), window={size=1x1 pad=0_0x1_1}, to_apply=mx\n"
                    "  full = f32[8,1] reduce-window(x, z), window={size=1x30}, to_apply=add\n"
                    "  pc = f32[8,34] pad(x, ninf), padding=0_0x2_2\n"
                    "  c = f64[8,34] convert(pc)\n"
                    "  ninf64 = f64[] constant(-inf)\n"
                    "  m = f64[8,32] reduce-window(c, ninf64), window={size=1x3}, to_apply=mx64\n"
                    /* jax.grad of a 2x2 average pool: the gradient padded inside and out, summed */
                    "  gp = f32[2,9,9,3] pad(g, z), padding=0_0x1_1_1x1_1_1x0_0\n"
                    "  up = f32[2,8,8,3] reduce-window(gp, z), window={size=1x2x2x1}, to_apply=add\n"
                    /* a pad of another value than the initial one stays */
                    "  q = f32[8,34] pad(x, ninf), padding=0_0x2_2\n"
                    "  keep = f32[8,32] reduce-window(q, z), window={size=1x3}, to_apply=add\n"
                    "  ROOT t = (f32[8,32], f32[8,32], f32[8,1], f64[8,32], f32[2,8,8,3], f32[8,32]) "
                    "tuple(s, one, full, m, up, keep)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "the pad p of the initial value becomes the window's padding");
  CHECK_CONTAINS(log.buf, "a window of one element is the maximum of each element and the initial value, padded where the "
                          "window was");
  CHECK_CONTAINS(log.buf, "its windows cover whole dimensions: a reduce of them, reshaped");
  CHECK_CONTAINS(log.buf, "the pad pc (through its convert) of the initial value becomes the window's padding");
  CHECK_CONTAINS(log.buf, "the pad gp of the initial value becomes the window's padding and base dilation");
  CHECK_STR(line_of(m, "s"), "%s = f32[8,32] reduce-window(%x, %z), window={size=1x3 pad=0_0x2_2}, to_apply=%add");
  CHECK_STR(line_of(m, "up"), "%up = f32[2,8,8,3] reduce-window(%g, %z), window={size=1x2x2x1 pad=0_0x1_1x1_1x0_0 "
                              "lhs_dilate=1x2x2x1}, to_apply=%add");
  CHECK_STR(line_of(m, "keep"), "%keep = f32[8,32] reduce-window(%q, %z), window={size=1x3}, to_apply=%add");
  CHECK(count_op(m, IR_OP_PAD) == 2); /* q, and the one-element window's */
  ir_module_free(m);
}

/* constant-folding folds bf16 as XLA's evaluator does: each result rounded to nearest even (the
 * pad value convert-mover leaves as convert(f32 0) becomes bf16[] constant(0)). */
TEST(constant_folding_bf16) {
  IrModule *m = hlo("HloModule bf\n\n"
                    "ENTRY main {\n"
                    "  x = bf16[8] parameter(0)\n"
                    "  z = f32[] constant(0)\n"
                    "  tenth = f32[] constant(0.1)\n"
                    "  zb = bf16[] convert(z)\n"
                    "  tb = bf16[] convert(tenth)\n"
                    "  third = bf16[] constant(0.333984375)\n"
                    "  prod = bf16[] multiply(tb, third)\n"
                    "  p = bf16[10] pad(x, zb), padding=1_1\n"
                    "  b = bf16[10] broadcast(prod), dimensions={}\n"
                    "  ROOT r = bf16[10] add(p, b)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_constant_folding_current, m, &log));
  CHECK_STR(line_of(m, "zb"), "%zb = bf16[] constant(0)");
  /* 0.1 is 0.10009765625 in bf16; times 0.333984375 is 0.0334300994873046875 in f32, 0.033447265625
     in bf16 */
  CHECK_STR(line_of(m, "tb"), "(none)");
  CHECK_STR(line_of(m, "prod"), "%prod = bf16[] constant(0.0334472656)");
  ir_module_free(m);
}

/* algsimp: x * convert(mask) is select(mask, x, 0), in either order, for floats and integers. */
TEST(multiply_by_converted_pred) {
  IrModule *m = hlo("HloModule mp\n\n"
                    "ENTRY main {\n"
                    "  p = pred[4,8] parameter(0)\n"
                    "  y = f32[4,8] parameter(1)\n"
                    "  z = s32[4,8] parameter(2)\n"
                    "  cp = f32[4,8] convert(p)\n"
                    "  m1 = f32[4,8] multiply(y, cp)\n"
                    "  ci = s32[4,8] convert(p)\n"
                    "  m2 = s32[4,8] multiply(ci, z)\n"
                    "  ROOT t = (f32[4,8], s32[4,8]) tuple(m1, m2)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "a multiplication by cp, a pred p converted, is a select of y where p holds and 0 elsewhere");
  CHECK_CONTAINS(log.buf, "a multiplication by ci, a pred p converted, is a select of z where p holds and 0 elsewhere");
  CHECK(count_op(m, IR_OP_MULTIPLY) == 0 && count_op(m, IR_OP_SELECT) == 2 && count_op(m, IR_OP_CONVERT) == 0);
  ir_module_free(m);
}

/* algsimp inlines a map whose computation is one elementwise operation of its parameters (the
 * maps reduce-window-rewriter makes), and one that returns a parameter; others stay. */
TEST(map_inlining) {
  IrModule *m = hlo("HloModule maps\n\n"
                    "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] multiply(a, b)\n}\n\n"
                    "second {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n\n"
                    "both {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  e = f32[] exponential(a)\n"
                    "  ROOT r = f32[] add(e, b)\n}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4,8] parameter(0)\n"
                    "  y = f32[4,8] parameter(1)\n"
                    "  m1 = f32[4,8] map(x, y), dimensions={0,1}, to_apply=mul\n"
                    "  m2 = f32[4,8] map(x, m1), dimensions={0,1}, to_apply=second\n"
                    "  m3 = f32[4,8] map(m2, y), dimensions={0,1}, to_apply=both\n"
                    "  ROOT t = (f32[4,8], f32[4,8]) tuple(m2, m3)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_CONTAINS(log.buf, "map m1 inlined: its computation mul is one multiply of its parameters");
  CHECK_CONTAINS(log.buf, "replaced m2(x, r.1) by r.1: the mapped computation returns that operand");
  CHECK_STR(line_of(m, "t"), "%t = (f32[4,8], f32[4,8]) tuple(%r.1, %m3)");
  CHECK_STR(line_of(m, "r.1"), "%r.1 = f32[4,8] multiply(%x, %y)");
  CHECK(count_op(m, IR_OP_MAP) == 1);
  ir_module_free(m);
}

/* Today's CSE never merges an iota itself, but users of two equal iotas are the same, and an
 * instruction reading both reads one. */
TEST(cse_and_iotas) {
  IrModule *m = hlo("HloModule iotas\n\n"
                    "ENTRY main {\n"
                    "  x = s32[8] parameter(0)\n"
                    "  i1 = s32[8] iota(), iota_dimension=0\n"
                    "  i2 = s32[8] iota(), iota_dimension=0\n"
                    "  a1 = s32[8] add(x, i1)\n"
                    "  a2 = s32[8] add(x, i2)\n"
                    "  sq = s32[8] multiply(i1, i2)\n"
                    "  ROOT t = (s32[8], s32[8], s32[8]) tuple(a1, a2, sq)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_cse_current, m, &log));
  CHECK_STR(log.buf, "cse rewrite: replaced a2 by a1: the same add of the same operands\n"
                     "cse rewrite: sq reads i1 where it reads the same iota i2\n");
  CHECK_STR(line_of(m, "t"), "%t = (s32[8], s32[8], s32[8]) tuple(%a1, %a1, %sq)");
  CHECK_STR(line_of(m, "sq"), "%sq = s32[8] multiply(%i1, %i1)");
  /* The classic CSE (the paper's pipeline) merges the iotas themselves. */
  IrModule *c = hlo("HloModule iotas\n\nENTRY main {\n  i1 = s32[8] iota(), iota_dimension=0\n"
                    "  i2 = s32[8] iota(), iota_dimension=0\n  ROOT t = (s32[8], s32[8]) tuple(i1, i2)\n}\n");
  CHECK(c != NULL);
  if (!c) return;
  Log log2 = {{0}, 0};
  CHECK(run_pass(&pass_cse, c, &log2));
  CHECK_STR(log2.buf, "cse rewrite: replaced i2 by i1: the same iota of the same operands\n");
  ir_module_free(c);
  ir_module_free(m);
}

/* After priority-fusion, CSE runs inside the fused computations only: the copy of exp(p) fusion
 * made for a second user in the same kernel becomes one; the entry computation is left alone. */
TEST(cse_inside_fusions) {
  IrModule *m = hlo("HloModule fcse\n\n"
                    "fused {\n"
                    "  p = f32[4] parameter(0)\n"
                    "  e = f32[4] exponential(p)\n"
                    "  e.clone = f32[4] exponential(p)\n"
                    "  ROOT r = f32[4] add(e, e.clone)\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = f32[4] parameter(0)\n"
                    "  n1 = f32[4] negate(x)\n"
                    "  n2 = f32[4] negate(x)\n"
                    "  f = f32[4] fusion(n1), kind=kLoop, calls=fused\n"
                    "  ROOT t = (f32[4], f32[4]) tuple(f, n2)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_fusion_cse, m, &log));
  CHECK_STR(log.buf, "fusion-cse rewrite: replaced e.clone by e: the same exponential of the same operands\n");
  CHECK_STR(line_of(m, "r"), "%r = f32[4] add(%e, %e)");
  CHECK(ir_module_find_instr(m, "n2") != NULL);
  ir_module_free(m);
}

/* float-normalization-bf16: what the GPU has no bf16 instruction for computes in f32, by compute
 * capability; simplify-fp-conversions then removes the converts left back to back. */
static const char *const bf16_ops =
    "HloModule fnorm\n\n"
    "ENTRY main {\n"
    "  x = bf16[8] parameter(0)\n"
    "  y = bf16[8] parameter(1)\n"
    "  d = bf16[8] divide(x, y)\n"
    "  s = bf16[8] sqrt(d)\n"
    "  a = bf16[8] add(s, x)\n"
    "  e = bf16[8] exponential(a)\n"
    "  ROOT r = bf16[8] maximum(e, y)\n"
    "}\n";

TEST(float_normalization) {
  IrModule *m = hlo(bf16_ops);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers_for(&pass_float_normalization, m, &log, device_lookup("h100")));
  CHECK_STR(log.buf, "float-normalization-bf16 rewrite: d computes in f32: the GPU (sm_90) has no bf16 divide; its "
                     "operands and result are converted\n"
                     "float-normalization-bf16 rewrite: s computes in f32: the GPU (sm_90) has no bf16 sqrt; its "
                     "operands and result are converted\n");
  CHECK_STR(line_of(m, "d"), "%d = f32[8] divide(%convert, %convert.10)");
  /* s reads d through f32 -> bf16 -> f32: one chain simplify-fp-conversions removes. */
  Log log2 = {{0}, 0};
  CHECK(run_pass_same_numbers_for(&pass_simplify_fp_conversions, m, &log2, device_lookup("h100")));
  CHECK_STR(log2.buf, "simplify-fp-conversions rewrite: convert.12 ends 2 conversions of d and has its type (f32): it "
                      "is d\n");
  CHECK_STR(line_of(m, "s"), "%s = f32[8] sqrt(%d)");
  CHECK_STR(line_of(m, "a"), "%a = bf16[8] add(%convert.13, %x)");
  ir_module_free(m);

  /* An A100 has no bf16 add either; a Turing GPU no bf16 maximum; a device without an sm_
   * architecture changes nothing. */
  const char *const devs[] = {"a100", "rtx2080ti"};
  const int expect[] = {3, 4};
  for (int k = 0; k < 2; k++) {
    IrModule *d = hlo(bf16_ops);
    CHECK(d != NULL);
    if (!d) return;
    Log l = {{0}, 0};
    CHECK(run_pass_same_numbers_for(&pass_float_normalization, d, &l, device_lookup(devs[k])));
    CHECK(l.n == expect[k]);
    ir_module_free(d);
  }
  IrModule *none = hlo(bf16_ops);
  CHECK(none != NULL);
  if (!none) return;
  Log l3 = {{0}, 0};
  CHECK(!run_pass(&pass_float_normalization, none, &l3));
  ir_module_free(none);
}

/* A reduce whose computation adds in bf16 on an A100: the reduce works in f32 with an f32 copy of
 * its computation. */
TEST(float_normalization_reduce) {
  IrModule *m = hlo("HloModule fred\n\n"
                    "add {\n"
                    "  a = bf16[] parameter(0)\n"
                    "  b = bf16[] parameter(1)\n"
                    "  ROOT s = bf16[] add(a, b)\n"
                    "}\n\n"
                    "ENTRY main {\n"
                    "  x = bf16[4,16] parameter(0)\n"
                    "  z = bf16[] constant(0)\n"
                    "  ROOT r = bf16[4] reduce(x, z), dimensions={1}, to_apply=add\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers_for(&pass_float_normalization, m, &log, device_lookup("a100")));
  CHECK(strstr(log.buf, "float-normalization-bf16 rewrite: r computes in f32: the GPU (sm_80) has no bf16 reduce; its "
                        "operands, its result and its computation are converted\n") != NULL);
  IrInstr *r = ir_module_find_instr(m, "r");
  CHECK(r && r->shape.type == IR_F32);
  IrComputation *f = r ? ir_attr_comp(r, "to_apply") : NULL;
  CHECK(f && strcmp(f->name, "add") != 0 && f->root && f->root->shape.type == IR_F32 && f->params[0]->shape.type == IR_F32);
  /* On an H100 the bf16 add is supported: nothing changes. */
  IrModule *h = hlo("HloModule fred\n\nadd {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
                    "  ROOT s = bf16[] add(a, b)\n}\n\nENTRY main {\n  x = bf16[4,16] parameter(0)\n"
                    "  z = bf16[] constant(0)\n  ROOT r = bf16[4] reduce(x, z), dimensions={1}, to_apply=add\n}\n");
  CHECK(h != NULL);
  if (!h) return;
  Log log2 = {{0}, 0};
  CHECK(!run_pass_for(&pass_float_normalization, h, &log2, device_lookup("h100")));
  ir_module_free(h);
  ir_module_free(m);
}

/* x.at[i].set(v) and x.at[i].add(v): scatters that write one window become dynamic-update-slices
 * (the bounds check kept for a dynamic index); with constant indices into zeros, algsimp and
 * constant folding leave a pad. */
static const char *const scatters =
    "HloModule scat\n\n"
    "set {\n"
    "  a = f32[] parameter(0)\n"
    "  ROOT b = f32[] parameter(1)\n"
    "}\n\n"
    "add {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT r = f32[] add(a, b)\n"
    "}\n\n"
    "ENTRY main {\n"
    "  x = f32[10] parameter(0)\n"
    "  i = s32[] parameter(1)\n"
    "  v = f32[] parameter(2)\n"
    "  ix = s32[1] reshape(i)\n"
    "  s1 = f32[10] scatter(x, ix, v), update_window_dims={}, inserted_window_dims={0}, "
    "scatter_dims_to_operand_dims={0}, index_vector_dim=0, to_apply=add\n"
    "  z = f32[] constant(0)\n"
    "  zs = f32[4,4] broadcast(z), dimensions={}\n"
    "  ij = s32[2] constant({1, 2})\n"
    "  s2 = f32[4,4] scatter(zs, ij, v), update_window_dims={}, inserted_window_dims={0,1}, "
    "scatter_dims_to_operand_dims={0,1}, index_vector_dim=0, to_apply=set\n"
    "  ROOT t = (f32[10], f32[4,4]) tuple(s1, s2)\n"
    "}\n";

TEST(scatter_expander) {
  IrModule *m = hlo(scatters);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_scatter_expander, m, &log));
  CHECK_STR(log.buf,
            "scatter-expander rewrite: s1 writes one window (f32[1] at 1 index): it is dynamic-update-slice, a "
            "dynamic-update-slice of x with add(old window, update), the old window kept where the index is out of bounds\n"
            "scatter-expander rewrite: s2 writes one window (f32[1,1] at 2 indices): it is dynamic-update-slice.65, a "
            "dynamic-update-slice of zs with the update, the old window kept where the index is out of bounds\n");
  CHECK(count_op(m, IR_OP_SCATTER) == 0);
  CHECK_STR(line_of(m, "dynamic-update-slice"),
            "%dynamic-update-slice = f32[10] dynamic-update-slice(%x, %select, %reshape)");
  CHECK_STR(line_of(m, "select"), "%select = f32[1]{0} select(%broadcast.35, %r.38, %dynamic-slice)");
  /* The bounds check as XLA's CheckIndexValidity builds it: one vector compare each way, reduced
   * with `and`, broadcast to the window. */
  CHECK_STR(line_of(m, "broadcast.35"), "%broadcast.35 = pred[1]{0} broadcast(%reduce), dimensions={}");
  CHECK_STR(line_of(m, "reduce"),
            "%reduce = pred[] reduce(%and, %constant.29), dimensions={0}, to_apply=%and.reduce_sub_computation");
  CHECK_STR(line_of(m, "and"), "%and = pred[1]{0} and(%compare, %compare.27)");
  CHECK_STR(line_of(m, "compare.27"), "%compare.27 = pred[1]{0} compare(%constant.25, %reshape.22), direction=GE");
  CHECK_STR(line_of(m, "constant.25"), "%constant.25 = s32[1]{0} constant({9})");
  /* The constant-index scatter into zeros folds down to a pad, as XLA's does. */
  Log l2 = {{0}, 0};
  run_pass_same_numbers(&pass_constant_folding_current, m, &l2);
  run_pass_same_numbers(&pass_algsimp_current, m, &l2);
  CHECK_CONTAINS(l2.buf, "writing into a broadcast scalar at constant starts is padding the update with the scalar");
  CHECK(count_op(m, IR_OP_PAD) == 1);
  ir_module_free(m);
}

/* DLRM's gradient: a vector broadcast along the rows, transposed into the product. Moving the
 * transpose below the multiply makes the broadcast again in the operand's order (XLA's
 * ApplyInverseRearrange for a broadcast), not a transpose of it. */
static const char *const transposed_broadcast_hlo =
    "HloModule tb\n\n"
    "ENTRY main {\n"
    "  v = f32[6] parameter(0)\n"
    "  x = f32[6,4] parameter(1)\n"
    "  b = f32[4,6] broadcast(v), dimensions={1}\n"
    "  bt = f32[6,4] transpose(b), dimensions={1,0}\n"
    "  xt = f32[4,6] transpose(x), dimensions={1,0}\n"
    "  m = f32[4,6] multiply(b, xt)\n"
    "  ROOT r = (f32[4,6], f32[6,4]) tuple(m, bt)\n"
    "}\n";

TEST(reshape_mover_makes_a_broadcast_again) {
  IrModule *m = hlo(transposed_broadcast_hlo);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_reshape_mover, m, &log));
  const IrInstr *t = m->entry->root->operands[0];
  CHECK(t->op == IR_OP_TRANSPOSE && t->operands[0]->op == IR_OP_MULTIPLY);
  if (t->op == IR_OP_TRANSPOSE && t->operands[0]->op == IR_OP_MULTIPLY) {
    const IrInstr *mul = t->operands[0], *nb = mul->operands[0];
    /* v along dimension 0 of the [6,4] operand order */
    CHECK(nb->op == IR_OP_BROADCAST && strcmp(nb->operands[0]->name, "v") == 0 &&
          strcmp(ir_attr_text(nb, "dimensions"), "{0}") == 0);
  }
  /* nothing transposes the broadcast but the input's own bt (the rearrange's operand gets its
     inverse transpose, which algsimp folds) */
  const IrInstr *b = ir_computation_find_instr(m->entry, "b");
  CHECK(b && b->nusers == 1 && strcmp(b->users[0]->name, "bt") == 0);
  check_same_values(transposed_broadcast_hlo, m, 6);
  ir_module_free(m);
}

/* cos(q[i]) for each i: reshape-mover moves the squeezes below the cosines, slice-sinker makes the
 * cosines one over q. */
TEST(reshape_mover_and_slice_sinker) {
  IrModule *m = hlo("HloModule sinks\n\n"
                    "ENTRY main {\n"
                    "  q = f32[3] parameter(0)\n"
                    "  s0 = f32[1] slice(q), slice={[0:1]}\n"
                    "  r0 = f32[] reshape(s0)\n"
                    "  c0 = f32[] cosine(r0)\n"
                    "  s1 = f32[1] slice(q), slice={[1:2]}\n"
                    "  r1 = f32[] reshape(s1)\n"
                    "  c1 = f32[] cosine(r1)\n"
                    "  s2 = f32[1] slice(q), slice={[2:3]}\n"
                    "  r2 = f32[] reshape(s2)\n"
                    "  c2 = f32[] cosine(r2)\n"
                    "  two = f32[] constant(2)\n"
                    "  a0 = f32[] add(c0, two)\n"
                    "  ROOT t = (f32[], f32[], f32[]) tuple(a0, c1, c2)\n"
                    "}\n");
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(!run_pass(&pass_slice_sinker, m, &log)); /* the cosines read reshapes, not slices */
  CHECK(run_pass_same_numbers(&pass_reshape_mover, m, &log));
  CHECK_STR(log.buf,
            "reshape-mover rewrite: c0 now runs before the reshape r0 (on f32[1], as c0.15) and r0.16 reshapes its result\n"
            "reshape-mover rewrite: c1 now runs before the reshape r1 (on f32[1], as c1.17) and r1.18 reshapes its result\n"
            "reshape-mover rewrite: c2 now runs before the reshape r2 (on f32[1], as c2.19) and r2.20 reshapes its result\n");
  Log l2 = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_slice_sinker, m, &l2));
  CHECK_STR(l2.buf, "slice-sinker rewrite: cosine of 3 slices of q runs once on q (as c0.21) and each result is a slice "
                    "of it\n");
  CHECK_STR(line_of(m, "c0.21"), "%c0.21 = f32[3] cosine(%q)");
  CHECK(count_op(m, IR_OP_COS) == 1);
  ir_module_free(m);
  /* Three slices of one element each cover q's three; two would not: computing cosine over all
   * of q would be more work than before (XLA's ShouldTransform). */
  IrModule *two = hlo("HloModule two\n\n"
                      "ENTRY main {\n"
                      "  q = f32[3] parameter(0)\n"
                      "  s0 = f32[1] slice(q), slice={[0:1]}\n"
                      "  c0 = f32[1] cosine(s0)\n"
                      "  s1 = f32[1] slice(q), slice={[1:2]}\n"
                      "  c1 = f32[1] cosine(s1)\n"
                      "  ROOT t = (f32[1], f32[1]) tuple(c0, c1)\n"
                      "}\n");
  CHECK(two != NULL);
  if (!two) return;
  Log l3 = {{0}, 0};
  CHECK(!run_pass(&pass_slice_sinker, two, &l3));
  CHECK(count_op(two, IR_OP_COS) == 2);
  ir_module_free(two);
}

int main(void) {
  RUN(arithmetic_canonical_forms);
  RUN(reduce_window_rewriter);
  RUN(map_inlining);
  RUN(reduce_of_broadcast);
  RUN(reduce_window_simplifications);
  RUN(constant_folding_bf16);
  RUN(multiply_by_converted_pred);
  RUN(integer_times_zero);
  RUN(compare_never_negative);
  RUN(select_of_predicates);
  RUN(integer_powers_of_two);
  RUN(multiply_constants_reassociate);
  RUN(no_op_reduce_precision_goes);
  RUN(broadcast_rewrites);
  RUN(add_reassociates_constants);
  RUN(reshape_of_iota);
  RUN(convert_mover);
  RUN(transpose_of_dot_swaps_operands);
  RUN(dot_drops_size_one_dimensions);
  RUN(broadcast_drops_size_one_operand_dimensions);
  RUN(slices_move_onto_what_they_read);
  RUN(dynamic_slices_move_onto_what_they_read);
  RUN(after_layout_normalization_slices_simplify_again);
  RUN(what_stays);
  RUN(reduce_of_unit_dimensions);
  RUN(reduces_move_onto_what_they_read);
  RUN(outer_products_multiply_broadcasts);
  RUN(reshape_of_broadcast_is_a_broadcast);
  RUN(comparison_expander);
  RUN(constants_and_scalar_broadcasts);
  RUN(constant_folding_today);
  RUN(constant_folding_reduces);
  RUN(constant_folding_concatenate);
  RUN(tree_reduction_rewriter);
  RUN(cse_and_iotas);
  RUN(cse_inside_fusions);
  RUN(float_normalization);
  RUN(float_normalization_reduce);
  RUN(scatter_expander);
  RUN(reshape_mover_and_slice_sinker);
  RUN(reshape_mover_makes_a_broadcast_again);
  return check_summary();
}

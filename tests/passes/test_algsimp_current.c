/* test_algsimp_current.c — the priority pipeline's algsimp: today's XLA rewrites
 * (compiler/passes/algsimp_current.c). Each test gives the HLO algsimp gets, checks the rewrites
 * it reports and the instructions it leaves, that the reference interpreter computes the same
 * numbers before and after, and that the classic pipeline's algsimp leaves the same module
 * alone. */
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

/* broadcast(iota) is an iota; a broadcast sinks below the elementwise ops that read it with
 * scalar broadcasts, so they run on the smaller shape. */
static const char *const broadcasts =
    "HloModule bcast\n\n"
    "ENTRY main {\n"
    "  x = f32[16] parameter(0)\n"
    "  io = u64[16] iota(), iota_dimension=0\n"
    "  bio = u64[16,16] broadcast(io), dimensions={1}\n"
    "  bx = f32[16,16] broadcast(x), dimensions={0}\n"
    "  three = f32[] constant(3)\n"
    "  b3 = f32[16,16] broadcast(three), dimensions={}\n"
    "  m = f32[16,16] multiply(bx, b3)\n"
    "  e = f32[16,16] exponential(m)\n"
    "  c = f32[16,16] convert(bio)\n"
    "  ROOT s = f32[16,16] add(e, c)\n"
    "}\n";

TEST(broadcast_rewrites) {
  IrModule *m = hlo(broadcasts);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {{0}, 0};
  CHECK(run_pass_same_numbers(&pass_algsimp_current, m, &log));
  CHECK_STR(log.buf,
            "algsimp rewrite: replaced bio(io) by io.12: a broadcast of an iota is an iota\n"
            "algsimp rewrite: m of broadcast bx now runs on x's 16 elements (as m.14) and bx.15 broadcasts the result: an "
            "elementwise operation commutes with a broadcast\n"
            "algsimp rewrite: e of broadcast bx.15 now runs on m.14's 16 elements (as e.16) and bx.17 broadcasts the result: "
            "an elementwise operation commutes with a broadcast\n");
  CHECK_STR(line_of(m, "io.12"), "%io.12 = u64[16,16] iota(), iota_dimension=1");
  CHECK_STR(line_of(m, "m.14"), "%m.14 = f32[16] multiply(%x, %b3.13)");
  CHECK_STR(line_of(m, "e.16"), "%e.16 = f32[16] exponential(%m.14)");
  CHECK_STR(line_of(m, "bx.17"), "%bx.17 = f32[16,16] broadcast(%e.16), dimensions={0}");
  CHECK_STR(line_of(m, "s"), "%s = f32[16,16] add(%bx.17, %c)");
  ir_module_free(m);
  classic_leaves_alone(broadcasts);
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

int main(void) {
  RUN(arithmetic_canonical_forms);
  RUN(integer_powers_of_two);
  RUN(broadcast_rewrites);
  RUN(what_stays);
  return check_summary();
}

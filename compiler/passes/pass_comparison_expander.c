/* pass_comparison_expander.c — comparison-expander: a floating-point comparison in total order
 * (`type=TOTALORDER`, what JAX's sort and searchsorted comparators ask for, so that -0 < 0 and
 * NaNs have a place) becomes a comparison of integers (XLA's ComparisonExpander, which XLA:GPU runs
 * before its simplification passes: GPUs compare floats only in the IEEE partial order).
 *
 * Each side x is read as a signed integer of its width (bitcast-convert); a negative one has its
 * magnitude bits flipped (x ^ INT_MAX), so that the integers order as the floats do in total
 * order; then the two integers are compared with the same direction. bf16 is first converted to
 * f32 (as XLA does: no direct bf16 comparison). The comparison keeps its name (its users read it
 * as before); the new instructions take names made from it. Every computation is expanded, sort
 * comparators and loop bodies included. Each expansion is reported: "lt_to.1 compares
 * select_n.5 and select_n.7 as integers: a total-order comparison of f32 ...". Runs in the
 * priority pipeline only. */
#include <math.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static IrType signed_of(int bytes) { return bytes == 2 ? IR_S16 : bytes == 4 ? IR_S32 : IR_S64; }

/* A scalar constant v of type t broadcast to `shape` (the scalar itself for a scalar shape). */
static IrInstr *splat(IrInstr *at, const IrShape *shape, IrType t, double v, const char *base) {
  IrShape s = ir_shape_scalar(t);
  IrInstr *c = ir_instr_new_before(at->parent, at, IR_OP_CONSTANT, &s, NULL, 0, base);
  if (!c || !(c->literal = ir_literal_new(&at->parent->module->arena, &v, 1, t, &s))) return NULL;
  if (ir_shape_is_scalar(shape)) return c;
  IrInstr *b = ir_instr_new_before(at->parent, at, IR_OP_BROADCAST, shape, &c, 1, base);
  if (b) ir_attr_set_text(b, "dimensions", "{}");
  return b;
}

/* x (float, shape `fs`) as an integer that orders as x does in total order (XLA's
 * BitcastConvertFloatingPointToIntegral): select(i < 0, i ^ INT_MAX, i), i = bitcast-convert(x). */
static IrInstr *ordered_int(IrInstr *at, IrInstr *x, const IrShape *is, const IrShape *ps, IrInstr *zero, IrInstr *max) {
  IrComputation *c = at->parent;
  IrInstr *i = ir_instr_new_before(c, at, IR_OP_BITCAST_CONVERT, is, &x, 1, "bitcast");
  if (!i) return NULL;
  IrInstr *cops[2] = {i, zero};
  IrInstr *neg = ir_instr_new_before(c, at, IR_OP_COMPARE, ps, cops, 2, "compare");
  if (!neg) return NULL;
  ir_attr_set_text(neg, "direction", "LT");
  IrInstr *xops[2] = {max, i};
  IrInstr *flip = ir_instr_new_before(c, at, IR_OP_XOR, is, xops, 2, "xor");
  IrInstr *sops[3] = {neg, flip, i};
  return flip ? ir_instr_new_before(c, at, IR_OP_SELECT, is, sops, 3, "select") : NULL;
}

/* Expands compare i; returns 1 when done, 0 when it is not a total-order float comparison, -1
 * when out of memory. */
static int expand(IrInstr *i, PassContext *cx) {
  const char *ty = ir_attr_text(i, "type");
  if (i->op != IR_OP_COMPARE || i->noperands != 2 || !ty || strcmp(ty, "TOTALORDER") != 0) return 0;
  IrInstr *l = i->operands[0], *r = i->operands[1];
  IrType ft = l->shape.type, orig = ft;
  if (!ir_type_is_float(ft) || ir_type_is_f8(ft) || !ir_shape_is_array(&l->shape)) return 0;
  Arena *a = &i->parent->module->arena;
  if (ft == IR_BF16) {
    IrShape f32 = simp_shape_retyped(a, &l->shape, IR_F32);
    l = ir_instr_new_before(i->parent, i, IR_OP_CONVERT, &f32, &l, 1, "convert");
    r = l ? ir_instr_new_before(i->parent, i, IR_OP_CONVERT, &f32, &r, 1, "convert") : NULL;
    if (!r) return -1;
    ft = IR_F32;
  }
  IrType it = signed_of(ir_type_bytes(ft));
  IrShape is = simp_shape_retyped(a, &l->shape, it), ps = simp_shape_retyped(a, &l->shape, IR_PRED);
  double imax = ldexp(1, ir_type_bytes(ft) * 8 - 1) - 1;
  IrInstr *zero = splat(i, &is, it, 0, "constant");
  IrInstr *max = zero ? splat(i, &is, it, imax, "constant") : NULL;
  IrInstr *li = max ? ordered_int(i, l, &is, &ps, zero, max) : NULL;
  IrInstr *ri = li ? ordered_int(i, r, &is, &ps, zero, max) : NULL;
  if (!ri) return -1;
  char was_l[256], was_r[256];
  snprintf(was_l, sizeof was_l, "%s", i->operands[0]->name);
  snprintf(was_r, sizeof was_r, "%s", i->operands[1]->name);
  ir_set_operand(i, 0, li);
  ir_set_operand(i, 1, ri);
  ir_attr_remove(i, "type");
  const char *dir = ir_compare_direction(i);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name, .result = i->name,
                    .accepted = true};
  pass_emit(cx->sink, &d,
            "%s compares %s and %s as %s integers (%s %s %s): a total-order comparison of %s; each side is its bits "
            "as a signed integer, the magnitude bits flipped when negative, so the integers order as the floats",
            i->name, was_l, was_r, ir_type_name(it), li->name, dir ? dir : "?", ri->name,
            ir_type_name(orig));
  return 1;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int n = 0, ncmp = 0;
  /* The comparisons as the pass starts (the integer comparisons it writes need nothing). */
  IrInstr **cmps = simp_collect(m, IR_OP_COMPARE, &ncmp);
  if (!cmps) return fx_error_set(cx->err, NULL, 0, 0, "comparison-expander: out of memory");
  for (int k = 0; k < ncmp; k++) {
    if (cmps[k]->dead) continue;
    int r = expand(cmps[k], cx);
    if (r < 0) {
      fx_free(cmps);
      return fx_error_set(cx->err, NULL, 0, 0, "comparison-expander: out of memory");
    }
    n += r;
  }
  fx_free(cmps);
  *changed = n > 0;
  return true;
}

const Pass pass_comparison_expander = {
    "comparison-expander", "total-order float comparisons (sort and searchsorted comparators) as integer comparisons", run};

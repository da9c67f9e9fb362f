/* pass_convert_mover.c — convert-mover: XLA's ConvertMover (convert_mover.cc), which XLA:GPU runs with
 * algsimp to a fixed point ("simplification-2") after dot-merger and transpose-folding, before
 * layout assignment. Converts move across the ops that only move data, so that data moves in the
 * narrower type:
 *
 *   down:  op(convert_f32(x_bf16), ...) -> convert_f32(op(x_bf16, ...))   a widening convert
 *   up:    convert_bf16(op(x_f32, ...)) -> op(convert_bf16(x_f32), ...)   a narrowing convert
 *
 * for op a concatenate, pad, reshape, slice or transpose (OpCommutesWithConvert). Down: every
 * operand is a convert read only there, or a constant that survives the round trip to the narrow
 * type (it is converted there; constant-folding folds it), and the converts all start from one
 * type. Up: the op is read only by the convert; each of its operands gets a convert, which may move
 * further up. Sub-byte types stay where they are. Fusion bodies are left alone. Priority pipeline
 * only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool commutes(IrOpcode op) {
  return op == IR_OP_CONCATENATE || op == IR_OP_PAD || op == IR_OP_RESHAPE || op == IR_OP_SLICE || op == IR_OP_TRANSPOSE;
}

static bool sub_byte(IrType t) { return ir_type_bits(t) < 8 && t != IR_PRED; }

/* The value v of type `from` converted to `to` and back is v (XLA's IsLosslesslyConvertibleTo). */
static double round_trip(IrType to, double v) {
  if (ir_type_is_float(to)) {
    if (to == IR_F32) return (double)(float)v;
    if (to == IR_F64) return v;
    if (to == IR_BF16 || to == IR_F16) {
      /* round to the narrow type's significand (8 or 11 bits) and exponent range */
      int sig = to == IR_BF16 ? 8 : 11;
      if (v == 0 || isnan(v) || isinf(v)) return v;
      int e;
      double m = frexp(v, &e);
      double r = ldexp(nearbyint(ldexp(m, sig)), e - sig);
      if (to == IR_F16 && fabs(r) > 65504) return INFINITY;
      if (to == IR_F16 && fabs(r) < ldexp(1, -24)) return 0;
      return r;
    }
    return NAN; /* 8-bit floats: treated as not lossless */
  }
  if (ir_type_is_int(to)) {
    int bits = ir_type_bits(to);
    double lo = ir_type_is_signed(to) ? -ldexp(1, bits - 1) : 0, hi = ir_type_is_signed(to) ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
    if (v != trunc(v) || v < lo || v > hi) return NAN;
    return v;
  }
  if (to == IR_PRED) return v != 0 ? 1 : 0;
  return NAN;
}

static bool lossless(const IrInstr *c, IrType to) {
  if (!c->literal || c->literal->elided || !c->literal->values) return false;
  for (int64_t k = 0; k < c->literal->count; k++) {
    double v = c->literal->values[k], r = round_trip(to, v);
    if (!(r == v || (isnan(r) && isnan(v) && ir_type_is_float(to)))) return false;
  }
  return true;
}

typedef struct {
  PassContext *cx;
  int moved;
} Mover;

static void report(Mover *mv, const char *op_name, const char *convert_name, const char *what) {
  PassDecision d = {.pass = mv->cx->pass, .stage = mv->cx->stage, .action = "rewrite", .producer = convert_name,
                    .consumer = op_name, .result = op_name, .accepted = true};
  pass_emit(mv->cx->sink, &d, "%s", what);
  mv->moved++;
}

/* instr(widening converts, constants) -> convert(instr(narrow operands)). */
static bool move_down(Mover *mv, IrInstr *i) {
  if (!commutes(i->op) || i->noperands == 0) return true;
  const IrInstr *conv = NULL;
  for (int k = 0; k < i->noperands; k++) {
    const IrInstr *o = i->operands[k];
    if (o->op == IR_OP_CONVERT && o->nusers == 1 && o->noperands == 1) {
      if (!conv) conv = o;
    } else if (o->op != IR_OP_CONSTANT) {
      return true;
    }
  }
  if (!conv) return true;
  IrType src = conv->operands[0]->shape.type, dst = conv->shape.type;
  for (int k = 0; k < i->noperands; k++) {
    const IrInstr *o = i->operands[k];
    if (o->op == IR_OP_CONVERT && o->operands[0]->shape.type != src) return true;
    if (o->op == IR_OP_CONSTANT && !lossless(o, src)) return true;
  }
  if (ir_type_bits(src) >= ir_type_bits(dst) || sub_byte(src) || !ir_shape_is_array(&i->shape)) return true;
  IrComputation *c = i->parent;
  IrModule *m = c->module;
  IrInstr *small[IR_REMAP_SMALL], **ops = i->noperands <= IR_REMAP_SMALL ? small : fx_malloc(sizeof *ops * (size_t)i->noperands);
  if (!ops) return false;
  bool ok = true;
  for (int k = 0; k < i->noperands && ok; k++) {
    IrInstr *o = i->operands[k];
    if (o->op == IR_OP_CONVERT) {
      ops[k] = o->operands[0];
    } else {
      IrShape s = simp_shape_retyped(&m->arena, &o->shape, src);
      ops[k] = simp_add_like(c, i, IR_OP_CONVERT, &s, &o, 1, "convert", o);
      ok = ops[k] != NULL;
    }
  }
  IrInstr *narrow = ok ? ir_instr_copy(c, i, ops, i->name) : NULL;
  if (ops != small) fx_free(ops);
  if (!narrow) return false;
  narrow->shape = simp_shape_retyped(&m->arena, &i->shape, src);
  IrInstr *wide = ir_instr_new(c, IR_OP_CONVERT, &i->shape, &narrow, 1, "convert");
  if (!wide) return false;
  wide->loc = i->loc;
  char name[256], what[600];
  snprintf(name, sizeof name, "%s", i->name);
  snprintf(what, sizeof what,
           "%s now moves %s instead of %s and %s widens its result after it: a %s commutes with a convert, and "
           "the narrower type moves fewer bytes",
           narrow->name, ir_type_name(src), ir_type_name(dst), wide->name, ir_op_name(i->op));
  simp_replace(i, wide);
  report(mv, name, wide->name, what);
  return true;
}

/* convert(instr(x)), a narrowing convert of an op read only there -> instr(convert(x)). Returns the
 * new operand converts through *added (at most n), for the walk to look at next. */
static bool move_up(Mover *mv, IrInstr *cv, IrInstr **added, int *nadded, int max) {
  *nadded = 0;
  if (cv->dead || cv->op != IR_OP_CONVERT || cv->noperands != 1) return true;
  IrInstr *x = cv->operands[0];
  if (x->nusers != 1 || x->is_root || !commutes(x->op) || !ir_shape_is_array(&x->shape)) return true;
  IrType src = x->shape.type, dst = cv->shape.type;
  if (ir_type_bits(src) <= ir_type_bits(dst) || sub_byte(dst) || x->noperands > max) return true;
  IrComputation *c = cv->parent;
  IrModule *m = c->module;
  IrInstr *small[IR_REMAP_SMALL], **ops = x->noperands <= IR_REMAP_SMALL ? small : fx_malloc(sizeof *ops * (size_t)x->noperands);
  if (!ops) return false;
  bool ok = true;
  for (int k = 0; k < x->noperands && ok; k++) {
    IrInstr *o = x->operands[k];
    IrShape s = simp_shape_retyped(&m->arena, &o->shape, dst);
    ops[k] = simp_add_like(c, cv, IR_OP_CONVERT, &s, &o, 1, "convert", cv);
    ok = ops[k] != NULL;
    if (ok) added[(*nadded)++] = ops[k];
  }
  IrInstr *nx = ok ? ir_instr_copy(c, x, ops, x->name) : NULL;
  if (ops != small) fx_free(ops);
  if (!nx) return false;
  nx->shape = simp_shape_retyped(&m->arena, &x->shape, dst);
  char name[256], what[600];
  snprintf(name, sizeof name, "%s", cv->name);
  snprintf(what, sizeof what,
           "%s narrows to %s before %s instead of after it (now %s): a %s commutes with a convert, and the narrower "
           "type moves fewer bytes",
           name, ir_type_name(dst), x->name, nx->name, ir_op_name(x->op));
  simp_replace(cv, nx);
  report(mv, nx->name, name, what);
  return true;
}

static bool move_in(Mover *mv, IrComputation *c) {
  /* down, in post-order (new instructions go after, and are not visited) */
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof *order * (size_t)(n ? n : 1));
  if (!order) return false;
  memcpy(order, c->instrs, sizeof *order * (size_t)n);
  bool ok = true;
  for (int k = 0; k < n && ok; k++)
    if (!order[k]->dead && order[k]->parent == c) ok = move_down(mv, order[k]);
  fx_free(order);
  if (!ok) return false;
  ir_computation_sort(c);
  /* up, from the bottom: a work list, the converts a move adds looked at first */
  n = c->ninstrs;
  int cap = n + 64, len = 0;
  IrInstr **work = fx_malloc(sizeof *work * (size_t)cap);
  if (!work) return false;
  for (int k = 0; k < n; k++) work[len++] = c->instrs[k]; /* popped from the end: bottom first */
  IrInstr *added[IR_REMAP_SMALL];
  while (len > 0 && ok) {
    IrInstr *i = work[--len];
    if (i->dead || i->parent != c || i->op != IR_OP_CONVERT) continue;
    int na = 0;
    ok = move_up(mv, i, added, &na, IR_REMAP_SMALL);
    if (len + na > cap) {
      cap = 2 * (len + na);
      IrInstr **w = fx_realloc(work, sizeof *w * (size_t)cap);
      if (!w) ok = false;
      else work = w;
    }
    for (int q = na - 1; ok && q >= 0; q--) work[len++] = added[q];
  }
  fx_free(work);
  if (ok) ir_computation_sort(c);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  Mover mv = {cx, 0};
  *changed = false;
  int nc = m->ncomps;
  IrComputation **comps = fx_malloc(sizeof *comps * (size_t)(nc ? nc : 1));
  if (!comps) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(comps, m->comps, sizeof *comps * (size_t)nc);
  bool ok = true;
  for (int k = 0; k < nc && ok; k++)
    if (!simp_is_fused_computation(comps[k])) ok = move_in(&mv, comps[k]);
  fx_free(comps);
  if (!ok) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  *changed = mv.moved > 0;
  return true;
}

const Pass pass_convert_mover = {
    "convert-mover",
    "widening converts move down and narrowing converts up across concatenate, pad, reshape, slice and transpose "
    "(XLA's ConvertMover)",
    run,
};

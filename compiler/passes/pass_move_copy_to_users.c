/* pass_move_copy_to_users.c — XLA:GPU's MoveCopyToUsers (move_copy_to_users.cc; in the
 * layout_normalization pipeline, right after layout assignment, run until it changes nothing): a
 * copy layout assignment made to change a value's layout sinks below the operations that work in
 * any layout, so that what they compute is computed once in the value's own layout and only their
 * result is copied, or the copy goes altogether:
 *
 *   reduce(copy(x), init)                 -> reduce(x, init)   a reduction reads any layout
 *                                                              (a column reduction, say)
 *   slice(copy(x))                        -> copy(slice(x))
 *   dynamic-slice(copy(x), starts...)     -> copy(dynamic-slice(x, starts...))
 *   op(copy(x)), a unary elementwise op   -> copy(op(x))       (a convert too; not a
 *                                                              reduce-precision or bitcast-convert)
 *   op(copy(a), copy(b)), binary, a and b of one shape and layout -> copy(op(a, b))
 *   concatenate(copy(a), copy(b), ...), all of one layout         -> copy(concatenate(a, b, ...))
 *
 * The moved operation keeps its name and takes its operand's layout; the copy after it makes the
 * layout its readers were given. (XLA also moves copies below pads, reverses and reduce-windows;
 * fxplain's layout assignment leaves those in the default layout, so no copy feeds them.)
 * Layout-normalization then makes each remaining copy a transpose. Runs only for GPU device
 * profiles, after layout-assignment; fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool is_copy(const IrInstr *x) { return x && x->op == IR_OP_COPY && x->noperands == 1 && ir_shape_is_array(&x->shape); }

/* Whether two arrays of one rank have the same layout. */
static bool same_layout(const IrShape *a, const IrShape *b) {
  if (a->rank != b->rank) return false;
  bool da = ir_shape_default_layout(a), db = ir_shape_default_layout(b);
  if (da || db) return da == db;
  return memcmp(a->minor_to_major, b->minor_to_major, sizeof(int) * (size_t)a->rank) == 0;
}

/* s (an array) with the layout of `like` (the default when like has none), in m's arena. */
static bool with_layout_of(IrModule *m, const IrShape *s, const IrShape *like, IrShape *out) {
  if (!ir_shape_copy(&m->arena, out, s)) return false;
  if (out->rank == 0) return true;
  int *m2m = arena_alloc(&m->arena, sizeof(int) * (size_t)out->rank);
  if (!m2m) return false;
  for (int k = 0; k < out->rank; k++)
    m2m[k] = like->has_layout && like->rank == out->rank ? like->minor_to_major[k] : out->rank - 1 - k;
  out->minor_to_major = m2m;
  out->has_layout = true;
  return true;
}

/* Whether copies feeding i can move below it (XLA's handlers' conditions). */
static bool copies_move_below(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_REDUCE:
    return i->noperands == 2 && ir_shape_is_array(&i->shape) && is_copy(i->operands[0]);
  case IR_OP_SLICE:
  case IR_OP_DYNAMIC_SLICE:
    return i->noperands >= 1 && is_copy(i->operands[0]);
  case IR_OP_CONCATENATE: {
    if (i->noperands < 1 || !is_copy(i->operands[0])) return false;
    /* the layouts alone: the dimensions differ along the concatenated one */
    for (int k = 1; k < i->noperands; k++)
      if (!is_copy(i->operands[k]) || !same_layout(&i->operands[0]->operands[0]->shape, &i->operands[k]->operands[0]->shape))
        return false;
    return true;
  }
  case IR_OP_COPY:
  case IR_OP_REDUCE_PRECISION:
  case IR_OP_BITCAST_CONVERT:
    return false;
  default:
    break;
  }
  if (!ir_op_is_elementwise(i->op) || !ir_shape_is_array(&i->shape)) return false;
  if (i->noperands == 1) return is_copy(i->operands[0]);
  if (i->noperands == 2)
    return is_copy(i->operands[0]) && is_copy(i->operands[1]) &&
           ir_shape_equal(&i->operands[0]->operands[0]->shape, &i->operands[1]->operands[0]->shape) &&
           same_layout(&i->operands[0]->operands[0]->shape, &i->operands[1]->operands[0]->shape);
  return false;
}

/* Moves the copies that feed i below it (i qualifies: copies_move_below). */
static bool move(IrInstr *i, PassContext *cx) {
  IrComputation *c = i->parent;
  IrModule *m = c->module;
  IrInstr *copy0 = i->operands[0], *x = copy0->operands[0];
  IrInstr *ops[64];
  IrInstr **o = i->noperands <= 64 ? ops : fx_malloc(sizeof(IrInstr *) * (size_t)i->noperands);
  if (!o) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  bool moved_all = i->op != IR_OP_REDUCE && i->op != IR_OP_SLICE && i->op != IR_OP_DYNAMIC_SLICE;
  for (int k = 0; k < i->noperands; k++)
    o[k] = (k == 0 || moved_all) && is_copy(i->operands[k]) ? i->operands[k]->operands[0] : i->operands[k];
  char name[256];
  snprintf(name, sizeof name, "%s", i->name);
  IrShape s;
  bool ok = i->op == IR_OP_REDUCE ? ir_shape_copy(&m->arena, &s, &i->shape) : with_layout_of(m, &i->shape, &x->shape, &s);
  IrInstr *placed = ok ? ir_instr_copy(c, i, o, i->name) : NULL;
  if (o != ops) fx_free(o);
  if (!placed) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  placed->shape = s;
  IrInstr *result = placed;
  if (i->op != IR_OP_REDUCE) {
    result = ir_instr_new(c, IR_OP_COPY, &i->shape, &placed, 1, ir_module_series_name(m, "copy", false));
    if (!result) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    result->loc = i->loc;
  }
  char msg[600];
  if (i->op == IR_OP_REDUCE)
    snprintf(msg, sizeof msg, "%s reads %s without %s: a reduction reads its operand in any layout, so no copy is needed",
             name, x->name, copy0->name);
  else
    snprintf(msg, sizeof msg, "%s moved below %s: the %s works in any layout, so it runs on %s as it lies and %s copies "
             "its result into the layout %s had", copy0->name, name, ir_op_name(i->op), x->name, result->name, name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = copy0->name, .consumer = name,
                    .result = name, .accepted = true};
  pass_emit(cx->sink, &d, "%s", msg);
  simp_replace(i, result);
  ir_instr_rename(placed, name); /* `why` still finds it */
  ir_computation_sort(c); /* the new instructions were appended */
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  for (int ci = 0; ci < m->ncomps; ci++) {
    IrComputation *c = m->comps[ci];
    if (simp_is_fused_computation(c)) continue;
    /* XLA runs the pass until it changes nothing; a move re-sorts the computation, so the walk
       starts over after each */
    for (bool again = true; again;) {
      again = false;
      for (int k = 0; k < c->ninstrs && !again; k++) {
        IrInstr *i = c->instrs[k];
        if (i->dead || !copies_move_below(i)) continue;
        if (!move(i, cx)) return false;
        *changed = again = true;
      }
    }
  }
  return true;
}

const Pass pass_move_copy_to_users = {"move-copy-to-users",
                                      "sinks layout assignment's copies below reductions, slices and elementwise "
                                      "operations, which work in any layout (XLA's MoveCopyToUsers)",
                                      run};

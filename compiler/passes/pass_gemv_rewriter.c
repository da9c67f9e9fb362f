/* pass_gemv_rewriter.c — XLA:GPU's GemvRewriter (gemv_rewriter.cc, hlo_normalization, just before
 * splitk-rewriter and triton-gemm-rewriter, on Ampere and later): a matrix-vector product gets a
 * size-1 dimension where its vector has no non-contracting one, so it is a matrix multiplication
 * Triton's GEMM emitter (which wants one contracting and one non-contracting dimension per
 * operand) takes like any other:
 *
 *   dot(x: f32[2304], W: f32[2304,9216]), contracting {0} and {0}  : f32[9216]
 *     ->  bitcast(dot(bitcast(x): f32[2304,1], W) : f32[1,9216]) : f32[9216]
 *
 * The new dimension is the most minor of that operand; in the result it goes where that side's
 * non-contracting dimension sits (before the right operand's, after the left operand's). Only
 * when exactly one side is a vector (a vector-vector product stays a dot) and the other has
 * exactly one non-contracting dimension (what DotDecomposer leaves). Fused computations are left
 * alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"


/* The operand with a size-1 dimension appended. */
static IrInstr *widen(IrComputation *c, IrInstr *dot, IrInstr *x) {
  int64_t d[IR_MAX_RANK];
  memcpy(d, x->shape.dims, sizeof(int64_t) * (size_t)x->shape.rank);
  d[x->shape.rank] = 1;
  IrShape s = ir_shape_array(&c->module->arena, x->shape.type, x->shape.rank + 1, d);
  return simp_add_like(c, dot, IR_OP_BITCAST, &s, &x, 1, "bitcast", dot);
}

static bool rewrite(IrInstr *dot, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrComputation *c = dot->parent;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd) || !ir_shape_is_array(&dot->shape) ||
      !ir_shape_default_layout(&dot->shape) || dot->shape.rank + 1 > IR_MAX_RANK)
    return true;
  const IrShape *l = &dot->operands[0]->shape, *r = &dot->operands[1]->shape;
  int lnc = l->rank - dd.nlhs_batch - dd.nlhs_contract, rnc = r->rank - dd.nrhs_batch - dd.nrhs_contract;
  if (!((lnc == 0 && rnc == 1) || (lnc == 1 && rnc == 0))) return true; /* matrix-matrix, vector-vector */
  bool lhs_vector = lnc == 0;
  /* the vector gets a new most-minor dimension: its layout must be normalized
     (GetLayoutWithNewMinorMostDimension); the matrix may come in any layout ({0,1}: a transposed
     weight layout-assignment made a bitcast) */
  if (!ir_shape_default_layout(lhs_vector ? l : r) || l->rank + 1 > IR_MAX_RANK || r->rank + 1 > IR_MAX_RANK)
    return true;
  IrInstr *ops[2] = {dot->operands[0], dot->operands[1]};
  ops[lhs_vector ? 0 : 1] = widen(c, dot, ops[lhs_vector ? 0 : 1]);
  if (!ops[0] || !ops[1]) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int64_t od[IR_MAX_RANK];
  int rank = dot->shape.rank;
  memcpy(od, dot->shape.dims, sizeof(int64_t) * (size_t)rank);
  if (lhs_vector) { /* [..., n] -> [..., 1, n] */
    od[rank] = rank ? od[rank - 1] : 1;
    if (rank) od[rank - 1] = 1;
  } else { /* [..., m] -> [..., m, 1] */
    od[rank] = 1;
  }
  IrShape os = ir_shape_array(&c->module->arena, dot->shape.type, rank + 1, od);
  IrInstr *nd = simp_add_like(c, dot, IR_OP_DOT, &os, ops, 2, "dot", dot);
  if (!nd) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  for (int k = 0; k < dot->nattrs; k++) /* dimension numbers, precision, metadata */
    if (dot->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(nd, dot->attrs[k].key, dot->attrs[k].text);
  IrInstr *back = simp_add_like(c, dot, IR_OP_BITCAST, &dot->shape, &nd, 1, "bitcast", dot);
  if (!back) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char dname[256], shape[160];
  snprintf(dname, sizeof dname, "%s", dot->name);
  ir_shape_format(&nd->shape, false, shape, sizeof shape);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = dname, .consumer = nd->name,
                    .result = nd->name, .accepted = true};
  simp_replace(dot, back);
  pass_emit(cx->sink, &d,
            "%s multiplies a matrix by a vector: its %s operand gets a size-1 dimension, so %s (%s) is a matrix "
            "multiplication Triton's GEMM emitter takes", dname, lhs_vector ? "left" : "right", nd->name, shape);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  const char *arch = cx->device ? cx->device->arch : "";
  int sm = strncmp(arch, "sm_", 3) == 0 ? atoi(arch + 3) : 0;
  if (sm < 80 || (cx->settings && !cx->settings->dot_is_library)) return true; /* where XLA runs Triton GEMMs */
  return simp_rewrite_each(m, cx, IR_OP_DOT, rewrite, NULL, false, changed);
}

const Pass pass_gemv_rewriter = {
    "gemv-rewriter",
    "a matrix-vector dot gets a size-1 dimension on its vector so Triton's GEMM emitter takes it (XLA:GPU's "
    "GemvRewriter; Ampere+)",
    run,
};

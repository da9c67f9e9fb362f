/* pass_dot_decomposer.c — XLA's DotDecomposer (dot_decomposer.cc, at the start of XLA:GPU's
 * optimization pipeline), with what the TransposeFolding pass after it undoes: a dot whose
 * operands have several contracting or several non-contracting dimensions (an einsum such as
 * `bsd,dnh->bsnh`) becomes a matrix multiplication of one contracting and at most one
 * non-contracting dimension per operand, batch dimensions first:
 *
 *   lhs -> transpose to [batch..., non-contracting..., contracting...] -> reshape [batch..., M, K]
 *   rhs -> transpose to [batch..., contracting..., non-contracting...] -> reshape [batch..., K, N]
 *   dot([batch..., M, K], [batch..., K, N]) -> reshape back to the original result
 *
 * (a non-contracting size of 1 is left out, as XLA does). An identity transpose is not made
 * (XLA's simplifier removes it). XLA also moves the batch dimensions of a dot that already has
 * one contracting and one non-contracting dimension per operand to the front, but TransposeFolding
 * (with GPU's CanFoldTransposeOperandIntoDot) folds that transpose straight back into the dot's
 * dimension numbers, so such a dot is left as it is. The reshapes become bitcasts after layout
 * assignment; the transposes are real and usually end in the Triton GEMM fusion's prologue.
 *
 * Fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* Whether each operand already has one contracting dimension and at most one other besides its
 * batch dimensions (what TransposeFolding leaves as DotDecomposer's input was). */
static bool matrix_like(const IrInstr *dot, const IrDotDims *dd) {
  for (int k = 0; k < 2; k++) {
    int rank = dot->operands[k]->shape.rank;
    int nb = k ? dd->nrhs_batch : dd->nlhs_batch, nc = k ? dd->nrhs_contract : dd->nlhs_contract;
    if (nc != 1 || rank - nb - nc > 1) return false;
  }
  return true;
}

static IrInstr *add(IrComputation *c, IrInstr *before, IrOpcode op, const IrShape *s, IrInstr *operand,
                    const char *base, const IrInstr *from) {
  return simp_add_like(c, before, op, s, &operand, 1, base, from);
}

/* CanonicalizeOperand: operand k of dot as [batch..., NC, K] (lhs) or [batch..., K, NC] (rhs),
 * NC left out when 1. Returns the reshape (or NULL when out of memory). */
static IrInstr *canonical_operand(IrInstr *dot, int k, const IrDotDims *dd, int64_t *out_nc) {
  IrInstr *op = dot->operands[k];
  const IrShape *s = &op->shape;
  const int64_t *batch = k ? dd->rhs_batch : dd->lhs_batch, *contract = k ? dd->rhs_contract : dd->lhs_contract;
  int nb = k ? dd->nrhs_batch : dd->nlhs_batch, nc = k ? dd->nrhs_contract : dd->nlhs_contract;
  int64_t perm[IR_MAX_RANK], ncdims[IR_MAX_RANK];
  int np = 0, nnc = 0;
  int64_t csize = 1, ncsize = 1;
  for (int d = 0; d < s->rank; d++) {
    if (ir_dims_contain(contract, nc, d)) csize *= s->dims[d];
    else if (!ir_dims_contain(batch, nb, d)) {
      ncdims[nnc++] = d;
      ncsize *= s->dims[d];
    }
  }
  for (int q = 0; q < nb; q++) perm[np++] = batch[q];
  if (k == 0) {
    for (int q = 0; q < nnc; q++) perm[np++] = ncdims[q];
    for (int q = 0; q < nc; q++) perm[np++] = contract[q];
  } else {
    for (int q = 0; q < nc; q++) perm[np++] = contract[q];
    for (int q = 0; q < nnc; q++) perm[np++] = ncdims[q];
  }
  bool identity = true;
  for (int q = 0; q < np; q++) identity &= perm[q] == q;
  IrComputation *c = dot->parent;
  IrInstr *v = op;
  if (!identity) {
    int64_t td[IR_MAX_RANK];
    for (int q = 0; q < np; q++) td[q] = s->dims[perm[q]];
    IrShape ts = ir_shape_array(&c->module->arena, s->type, np, td);
    v = add(c, dot, IR_OP_TRANSPOSE, &ts, op, "transpose", dot);
    if (!v) return NULL;
    ir_attr_set_dims(v, "dimensions", perm, np);
  }
  int64_t rd[IR_MAX_RANK];
  int nr = 0;
  for (int q = 0; q < nb; q++) rd[nr++] = s->dims[batch[q]];
  if (k == 0) {
    if (ncsize != 1) rd[nr++] = ncsize;
    rd[nr++] = csize;
  } else {
    rd[nr++] = csize;
    if (ncsize != 1) rd[nr++] = ncsize;
  }
  *out_nc = ncsize;
  IrShape rs = ir_shape_array(&c->module->arena, s->type, nr, rd);
  return add(c, dot, IR_OP_RESHAPE, &rs, v, "reshape", dot);
}

static bool decompose(IrInstr *dot, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd) || matrix_like(dot, &dd)) return true;
  IrComputation *c = dot->parent;
  int64_t m, n;
  IrInstr *lhs = canonical_operand(dot, 0, &dd, &m);
  IrInstr *rhs = lhs ? canonical_operand(dot, 1, &dd, &n) : NULL;
  if (!rhs) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int nb = dd.nlhs_batch;
  int64_t od[IR_MAX_RANK], bd[IR_MAX_RANK];
  int no = 0;
  for (int q = 0; q < nb; q++) {
    od[no++] = dot->operands[0]->shape.dims[dd.lhs_batch[q]];
    bd[q] = q;
  }
  if (m != 1) od[no++] = m;
  if (n != 1) od[no++] = n;
  IrShape ds = ir_shape_array(&c->module->arena, dot->shape.type, no, od);
  IrInstr *ops[2] = {lhs, rhs};
  IrInstr *nd = ir_instr_new_before(c, dot, IR_OP_DOT, &ds, ops, 2, ir_module_series_name(c->module, "dot", false));
  if (!nd) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  if (nb) ir_attr_set_dims(nd, "lhs_batch_dims", bd, nb);
  int64_t lc = nb + (m != 1 ? 1 : 0), rc = nb;
  ir_attr_set_dims(nd, "lhs_contracting_dims", &lc, 1);
  if (nb) ir_attr_set_dims(nd, "rhs_batch_dims", bd, nb);
  ir_attr_set_dims(nd, "rhs_contracting_dims", &rc, 1);
  for (int k = 0; k < dot->nattrs; k++) {
    const IrAttr *a = &dot->attrs[k];
    if (a->kind == IR_ATTR_TEXT && strstr(a->key, "_dims") == NULL) ir_attr_set_text(nd, a->key, a->text);
  }
  nd->loc = dot->loc;
  IrInstr *back = add(c, dot, IR_OP_RESHAPE, &dot->shape, nd, "reshape", dot);
  if (!back) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char name[256], from[128], to[128];
  snprintf(name, sizeof name, "%s", dot->name);
  ir_shape_format(&dot->shape, false, from, sizeof from);
  ir_shape_format(&nd->shape, false, to, sizeof to);
  simp_replace(dot, back);
  *changed = true;
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = name,
                    .consumer = nd->name, .result = nd->name, .accepted = true};
  pass_emit(cx->sink, &d, "%s (%s) has several contracting or non-contracting dimensions: it becomes the matrix "
            "multiplication %s (%s) of its operands transposed and reshaped, batch dimensions first, and a reshape "
            "back (DotDecomposer)", name, from, nd->name, to);
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  return simp_rewrite_each(m, cx, IR_OP_DOT, decompose, NULL, true, changed);
}

const Pass pass_dot_decomposer = {
    "dot_decomposer",
    "a dot with several contracting or non-contracting dimensions becomes a batched matrix multiplication between "
    "transposes and reshapes (XLA's DotDecomposer)",
    run,
};

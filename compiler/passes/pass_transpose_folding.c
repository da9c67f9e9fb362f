/* pass_transpose_folding.c — XLA's TransposeFolding (transpose_folding.cc) with XLA:GPU's rule for
 * dots (CanFoldTransposeOperandIntoDot, matmul_utils.cc), run after the simplification pipeline:
 * a transpose that feeds a dot is folded into the dot's dimension numbers, so the matrix
 * multiplication reads the untransposed operand in whatever order it needs and the transpose costs
 * nothing (`x @ w.T` as JAX writes it, or the transposes DotDecomposer made):
 *
 *   dot(transpose(a), b), lhs_contracting_dims={1}  ->  dot(a, b), lhs_contracting_dims={perm[1]}
 *
 * A transpose is folded when the dot's operands both have at least two dimensions, the operand's
 * non-contracting dimensions keep their relative order through the transpose (the dot's result
 * shape does not change), and the untransposed operand is still a matrix a GEMM reads
 * (MatrixLayout::For: its batch, contracting and non-contracting dimensions each physically
 * contiguous, and the batch not the most minor). The transpose stays where something else reads
 * it. Fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* CanFoldTransposeOperandIntoDot for operand k (a transpose with permutation perm). */
static bool can_fold(const IrInstr *dot, const IrDotDims *dd, int k, const int64_t *perm) {
  const IrInstr *t = dot->operands[k];
  int rank = t->shape.rank;
  const int64_t *batch = k ? dd->rhs_batch : dd->lhs_batch, *contract = k ? dd->rhs_contract : dd->lhs_contract;
  int nb = k ? dd->nrhs_batch : dd->nlhs_batch, nc = k ? dd->nrhs_contract : dd->nlhs_contract;
  int64_t noncontract[IR_MAX_RANK], tb[IR_MAX_RANK], tc[IR_MAX_RANK], tn[IR_MAX_RANK];
  int nn = 0;
  for (int d = 0; d < rank; d++)
    if (!ir_dims_contain(batch, nb, d) && !ir_dims_contain(contract, nc, d)) noncontract[nn++] = d;
  for (int q = 0; q < nb; q++) tb[q] = perm[batch[q]];
  for (int q = 0; q < nc; q++) tc[q] = perm[contract[q]];
  for (int q = 0; q < nn; q++) tn[q] = perm[noncontract[q]];
  /* the non-contracting dimensions keep their relative order */
  for (int q = 1; q < nn; q++)
    if (tn[q] < tn[q - 1]) return false;
  return simp_matrix_layout(rank, NULL, tb, nb, tc, nc, tn, nn);
}

static bool is_nonidentity_transpose(const IrInstr *t, int64_t *perm) {
  if (t->op != IR_OP_TRANSPOSE || t->noperands != 1) return false;
  int n = ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK);
  if (n != t->shape.rank) return false;
  for (int q = 0; q < n; q++)
    if (perm[q] != q) return true;
  return false;
}

static void format_dims(const int64_t *v, int n, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "{");
  for (int k = 0; k < n; k++) len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%lld", k ? "," : "", (long long)v[k]);
  snprintf(buf + len, len < size ? size - len : 0, "}");
}

static bool fold(IrInstr *dot, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd)) return true;
  if (dot->operands[0]->shape.rank < 2 || dot->operands[1]->shape.rank < 2) return true; /* a 1-D operand */
  int64_t perm[2][IR_MAX_RANK];
  bool foldable[2];
  for (int k = 0; k < 2; k++)
    foldable[k] = is_nonidentity_transpose(dot->operands[k], perm[k]) && can_fold(dot, &dd, k, perm[k]);
  if (!foldable[0] && !foldable[1]) return true;
  for (int k = 0; k < 2; k++) {
    if (!foldable[k]) continue;
    IrInstr *t = dot->operands[k];
    int64_t *batch = k ? dd.rhs_batch : dd.lhs_batch, *contract = k ? dd.rhs_contract : dd.lhs_contract;
    int nb = k ? dd.nrhs_batch : dd.nlhs_batch, nc = k ? dd.nrhs_contract : dd.nlhs_contract;
    for (int q = 0; q < nb; q++) batch[q] = perm[k][batch[q]];
    for (int q = 0; q < nc; q++) contract[q] = perm[k][contract[q]];
    char tname[256], cdims[64];
    snprintf(tname, sizeof tname, "%s", t->name);
    if (nb) ir_attr_set_dims(dot, k ? "rhs_batch_dims" : "lhs_batch_dims", batch, nb);
    ir_attr_set_dims(dot, k ? "rhs_contracting_dims" : "lhs_contracting_dims", contract, nc);
    ir_set_operand(dot, k, t->operands[0]);
    format_dims(contract, nc, cdims, sizeof cdims);
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "fold", .producer = tname, .consumer = dot->name,
                      .result = dot->name, .accepted = true};
    pass_emit(cx->sink, &d, "the transpose %s is folded into %s, which now reads %s and contracts its dimensions %s: a "
              "GEMM reads the operand in either order, so the transpose costs nothing", tname, dot->name,
              t->operands[0]->name, cdims);
    simp_drop_dead(t);
  }
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  return simp_rewrite_each(m, cx, IR_OP_DOT, fold, NULL, false, changed);
}

const Pass pass_transpose_folding = {
    "transpose-folding",
    "a transpose feeding a dot is folded into the dot's dimension numbers (XLA's TransposeFolding with XLA:GPU's "
    "CanFoldTransposeOperandIntoDot)",
    run,
};

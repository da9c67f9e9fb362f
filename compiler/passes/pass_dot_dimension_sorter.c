/* pass_dot_dimension_sorter.c — XLA:GPU's DotDimensionSorter (dot_dimension_sorter.cc, first in
 * the optimization pipeline, before dot_decomposer): the contracting dimensions of a dot are
 * reordered, pairs kept, so that one side lists them in ascending order. An einsum such as
 * `BTNH,NHD->BTD` contracts lhs {3,2} with rhs {1,0}; sorted by the lhs it contracts {2,3} with
 * {0,1}, and DotDecomposer then needs no transpose on either side: the contraction already runs
 * over the operands' memory in order.
 *
 * A dot is sorted when one side's contracting dimensions are consecutive numbers but not in
 * order and the other side's are not consecutive (it cannot get worse), or both are consecutive
 * and neither is in order (DistinctNumbersAreConsecutiveIfSorted); the sort follows the lhs when
 * its numbers are consecutive, else the rhs. Dots whose operands carry a layout other than the
 * default are left alone, as XLA does. Fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* DistinctNumbersAreConsecutiveIfSorted */
static bool consecutive(const int64_t *v, int n) {
  if (n == 0) return true;
  int64_t lo = v[0], hi = v[0];
  for (int k = 0; k < n; k++) {
    for (int q = 0; q < k; q++)
      if (v[q] == v[k]) return false;
    if (v[k] < lo) lo = v[k];
    if (v[k] > hi) hi = v[k];
  }
  return hi - lo + 1 == n;
}

static bool sorted(const int64_t *v, int n) {
  for (int k = 1; k < n; k++)
    if (v[k] < v[k - 1]) return false;
  return true;
}

static void format_dims(const int64_t *v, int n, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "{");
  for (int k = 0; k < n; k++)
    len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%lld", k ? "," : "", (long long)v[k]);
  snprintf(buf + len, len < size ? size - len : 0, "}");
}

static bool sort_dot(IrInstr *dot, PassContext *cx, bool *changed) {
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_dot_dims(dot, &dd) || dd.nlhs_contract == 0) return true;
  if (!ir_shape_default_layout(&dot->operands[0]->shape) || !ir_shape_default_layout(&dot->operands[1]->shape))
    return true;
  int n = dd.nlhs_contract;
  bool cl = consecutive(dd.lhs_contract, n), cr = consecutive(dd.rhs_contract, n);
  bool sl = sorted(dd.lhs_contract, n), sr = sorted(dd.rhs_contract, n);
  if (!((cl && !sl && !cr) || (cr && !sr && !cl) || (cl && !sl && cr && !sr))) return true;
  /* the permutation that sorts the key side: position k goes where its number ranks */
  const int64_t *key = cl ? dd.lhs_contract : dd.rhs_contract;
  int64_t lo = key[0];
  for (int k = 1; k < n; k++)
    if (key[k] < lo) lo = key[k];
  int64_t nl[IR_MAX_RANK], nr[IR_MAX_RANK];
  for (int k = 0; k < n; k++) {
    int64_t to = key[k] - lo;
    nl[to] = dd.lhs_contract[k];
    nr[to] = dd.rhs_contract[k];
  }
  char was[80], now_l[80], now_r[80];
  format_dims(dd.lhs_contract, n, was, sizeof was);
  format_dims(nl, n, now_l, sizeof now_l);
  format_dims(nr, n, now_r, sizeof now_r);
  ir_attr_set_dims(dot, "lhs_contracting_dims", nl, n);
  ir_attr_set_dims(dot, "rhs_contracting_dims", nr, n);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = dot->name, .result = dot->name,
                    .accepted = true};
  pass_emit(cx->sink, &d, "%s contracts its lhs dimensions %s (pairs kept) in the order %s with the rhs's %s: the "
            "contraction then runs over %s's memory in order and needs no transpose (DotDimensionSorter)",
            dot->name, was, now_l, now_r, cl ? dot->operands[0]->name : dot->operands[1]->name);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++)
      if (comp->instrs[k]->op == IR_OP_DOT && !sort_dot(comp->instrs[k], cx, changed)) return false;
  }
  return true;
}

const Pass pass_dot_dimension_sorter = {
    "dot_dimension_sorter",
    "a dot's contracting dimensions are put in ascending order on one side, pairs kept (XLA:GPU's DotDimensionSorter)",
    run,
};

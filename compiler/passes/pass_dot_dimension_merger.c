/* pass_dot_dimension_merger.c — XLA:GPU's DotDimensionMerger (dot_dimension_merger.cc, after
 * layout normalization, in nvptx_post-layout_assignment_part_1): a dot with several batch
 * dimensions, consecutive and in order on both sides and consecutive in both operands' layouts,
 * gets one batch dimension, their product: its operands and its result are read through bitcasts.
 *
 *   dot(q: f32[2,4,64,32], k: f32[2,4,64,32]), lhs_batch_dims={0,1}, ...
 *     ->  bitcast(dot(bitcast(q): f32[8,64,32], bitcast(k): f32[8,64,32]), lhs_batch_dims={0}, ...)
 *
 * What then fuses into the GEMM sees the merged dimension: attention's mask, broadcast over the
 * heads, is no longer a dimension Triton can tile from the mask, and XLA computes it apart.
 * (XLA writes reshapes, which its layout-sensitive simplifier makes bitcasts; after layout
 * normalization every such reshape is one, so fxplain writes the bitcasts.) Fused computations
 * are left alone; only for GPU devices. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* DistinctNumbersAreConsecutiveIfSorted, with the numbers also in ascending order. */
static bool consecutive_sorted(const int64_t *v, int n) {
  for (int k = 1; k < n; k++)
    if (v[k] != v[k - 1] + 1) return false;
  return true;
}

/* LayoutUtil::AreDimensionsConsecutive: the dimensions sit next to each other in s's
 * minor-to-major order (in any order among themselves). */
static bool consecutive_in_layout(const IrShape *s, const int64_t *dims, int n) {
  int pos[IR_MAX_RANK], lo = IR_MAX_RANK, hi = -1;
  if (s->has_layout && s->minor_to_major)
    for (int k = 0; k < s->rank; k++) pos[s->minor_to_major[k]] = k;
  else
    for (int k = 0; k < s->rank; k++) pos[k] = s->rank - 1 - k;
  for (int q = 0; q < n; q++) {
    int p = pos[dims[q]];
    if (p < lo) lo = p;
    if (p > hi) hi = p;
  }
  return hi - lo + 1 == n;
}

/* s with dimensions first .. first+n-1 merged into dimension first (Shape::DeleteDimension for the
 * others, their layout positions removed and the later dimensions renumbered). */
static IrShape merged(Arena *a, const IrShape *s, int first, int n, int64_t size) {
  int64_t d[IR_MAX_RANK];
  int r = 0;
  for (int k = 0; k < s->rank; k++) {
    if (k > first && k < first + n) continue;
    d[r++] = k == first ? size : s->dims[k];
  }
  IrShape out = ir_shape_array(a, s->type, r, d);
  if (s->has_layout && s->minor_to_major && out.minor_to_major) {
    int q = 0;
    for (int k = 0; k < s->rank; k++) {
      int dim = s->minor_to_major[k];
      if (dim > first && dim < first + n) continue;
      out.minor_to_major[q++] = dim >= first + n ? dim - (n - 1) : dim;
    }
    out.has_layout = true;
  }
  return out;
}

static bool merge(IrInstr *dot, PassContext *cx, bool *changed) {
  (void)cx;
  IrDotDims dd;
  if (dot->noperands != 2 || !ir_shape_is_array(&dot->shape) || !ir_dot_dims(dot, &dd)) return true;
  int nb = dd.nlhs_batch;
  if (nb < 2 || dd.nrhs_batch != nb || !consecutive_sorted(dd.lhs_batch, nb) || !consecutive_sorted(dd.rhs_batch, nb))
    return true;
  IrInstr *l = dot->operands[0], *r = dot->operands[1];
  if (!ir_shape_is_array(&l->shape) || !ir_shape_is_array(&r->shape) ||
      !consecutive_in_layout(&l->shape, dd.lhs_batch, nb) || !consecutive_in_layout(&r->shape, dd.rhs_batch, nb))
    return true;
  int lb = (int)dd.lhs_batch[0], rb = (int)dd.rhs_batch[0];
  int64_t size = 1;
  for (int q = 0; q < nb; q++) size *= l->shape.dims[dd.lhs_batch[q]];
  Arena *a = &dot->parent->module->arena;
  IrShape ls = merged(a, &l->shape, lb, nb, size), rs = merged(a, &r->shape, rb, nb, size);
  IrShape ds = merged(a, &dot->shape, 0, nb, size);
  char name[300];
  snprintf(name, sizeof name, "%s.lhs", dot->name);
  IrInstr *nl = simp_add_like(dot->parent, dot, IR_OP_BITCAST, &ls, &l, 1, name, dot);
  snprintf(name, sizeof name, "%s.rhs", dot->name);
  IrInstr *nr = nl ? simp_add_like(dot->parent, dot, IR_OP_BITCAST, &rs, &r, 1, name, dot) : NULL;
  IrInstr *ops[2] = {nl, nr};
  IrInstr *nd = nr ? simp_add_like(dot->parent, dot, IR_OP_DOT, &ds, ops, 2, dot->name, dot) : NULL;
  if (!nd) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  for (int k = 0; k < dot->nattrs; k++)
    if (dot->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(nd, dot->attrs[k].key, dot->attrs[k].text);
  int64_t lc[IR_MAX_RANK], rc[IR_MAX_RANK], b0 = lb, b1 = rb;
  /* ShiftDimensions: the contracting dimensions past the batch ones move down */
  for (int q = 0; q < dd.nlhs_contract; q++) lc[q] = dd.lhs_contract[q] - (dd.lhs_contract[q] > lb ? nb - 1 : 0);
  for (int q = 0; q < dd.nrhs_contract; q++) rc[q] = dd.rhs_contract[q] - (dd.rhs_contract[q] > rb ? nb - 1 : 0);
  ir_attr_set_dims(nd, "lhs_batch_dims", &b0, 1);
  ir_attr_set_dims(nd, "rhs_batch_dims", &b1, 1);
  ir_attr_set_dims(nd, "lhs_contracting_dims", lc, dd.nlhs_contract);
  ir_attr_set_dims(nd, "rhs_contracting_dims", rc, dd.nrhs_contract);
  IrInstr *out = simp_add_like(dot->parent, dot, IR_OP_BITCAST, &dot->shape, &nd, 1, dot->name, dot);
  if (!out) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char desc[200];
  size_t len = (size_t)snprintf(desc, sizeof desc, "{");
  for (int q = 0; q < nb && len < sizeof desc; q++)
    len += (size_t)snprintf(desc + len, sizeof desc - len, "%s%lld", q ? "," : "", (long long)dd.lhs_batch[q]);
  if (len < sizeof desc) snprintf(desc + len, sizeof desc - len, "}");
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = dot->name,
                    .result = nd->name, .accepted = true};
  pass_emit(cx->sink, &d, "%s's %d batch dimensions %s become one of %lld (%s and %s read the operands, the result "
                          "is read back through a bitcast)",
            dot->name, nb, desc, (long long)size, nl->name, nr->name);
  simp_replace(dot, out);
  *changed = true;
  return true;
}

static bool merge_one(IrInstr *i, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  return merge(i, cx, changed);
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true; /* XLA:GPU's pass: nothing for the host */
  return simp_rewrite_each(m, cx, IR_OP_DOT, merge_one, NULL, false, changed);
}

const Pass pass_dot_dimension_merger = {
    "dot_dimension_merger",
    "merges a dot's consecutive batch dimensions into one (XLA's DotDimensionMerger, after layout normalization)", run};

/* pass_batched_gather_scatter.c — batched-gather-scatter-normalizer: XLA's
 * BatchedGatherScatterNormalizer (batched_gather_scatter_normalizer.cc), which XLA:GPU runs early in
 * its optimization pipeline, before the dot and sort rewrites. A gather or scatter with batching
 * dimensions (what jnp.take_along_axis and vmapped indexing lower to) becomes an ordinary one: the
 * batch position is added to each index vector as an iota, so
 *
 *   gather(x: bf16[1024,512], idx: s32[1024,512,1]), operand_batching_dims={0},
 *          start_indices_batching_dims={0}, start_index_map={1}, collapsed_slice_dims={1}
 *     ->  gather(x, concatenate(iota(s32[1024,512,1], dim 0), idx) : s32[1024,512,2]),
 *          start_index_map={0,1}, collapsed_slice_dims={0,1}
 *
 * The emitters then see one kind of gather and scatter; the new iota and concatenate are what XLA's
 * kernel computes too. The index type grows to s32 (or s64) when a batch dimension does not fit in
 * it; a gather whose batching dimensions are also in its start_index_map stays as it is (XLA's
 * CanNormalizeBatchGather: the rewritten map would name a dimension twice). Fusion bodies are left
 * alone. Priority pipeline only. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool overlap(const int64_t *a, int na, const int64_t *b, int nb) {
  for (int k = 0; k < na; k++)
    if (ir_dims_contain(b, nb, a[k])) return true;
  return false;
}

static bool ascending(const int64_t *v, int n) {
  for (int k = 1; k < n; k++)
    if (v[k] < v[k - 1]) return false;
  return true;
}

/* XLA's PromoteTypeForSize: an integer type in which `size` does not fit becomes s32 or s64. */
static IrType promote_for_size(IrType t, int64_t size) {
  if (!ir_type_is_int(t)) return t;
  int bits = ir_type_bits(t);
  int64_t max = bits >= 64 ? INT64_MAX : ir_type_is_signed(t) ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
  if (size <= max) return t;
  return size <= INT32_MAX ? IR_S32 : IR_S64;
}

/* XLA's CreateConcatIndices: the indices with an iota per batching dimension before them along
 * index_vector_dim (a trailing size-1 dimension added first when the index vector is implicit). */
static IrInstr *concat_indices(IrInstr *at, IrInstr *indices, int64_t ivd, const int64_t *bdims, int nb) {
  IrComputation *c = at->parent;
  Arena *a = &c->module->arena;
  IrType et = indices->shape.type;
  for (int k = 0; k < nb; k++) et = promote_for_size(et, indices->shape.dims[bdims[k]]);
  if (et != indices->shape.type) {
    IrShape cs = ir_shape_array(a, et, indices->shape.rank, indices->shape.dims);
    if (!(indices = simp_add_like(c, at, IR_OP_CONVERT, &cs, &indices, 1, "convert", at))) return NULL;
  }
  int rank = indices->shape.rank;
  int64_t dims[IR_MAX_RANK + 1];
  memcpy(dims, indices->shape.dims, sizeof *dims * (size_t)rank);
  bool on_last = ivd == rank;
  if (on_last) {
    if (rank >= IR_MAX_RANK) return NULL;
    dims[rank++] = 1;
    IrShape rs = ir_shape_array(a, et, rank, dims);
    if (!(indices = simp_add_like(c, at, IR_OP_RESHAPE, &rs, &indices, 1, "reshape", at))) return NULL;
  }
  dims[ivd] = 1;
  IrShape is = ir_shape_array(a, et, rank, dims);
  IrInstr *parts[IR_MAX_RANK + 1];
  for (int k = 0; k < nb; k++) {
    if (!(parts[k] = simp_add_like(c, at, IR_OP_IOTA, &is, NULL, 0, "iota", at))) return NULL;
    ir_attr_set_int(parts[k], "iota_dimension", bdims[k]);
  }
  parts[nb] = indices;
  dims[ivd] = nb + (on_last ? 1 : indices->shape.dims[ivd]);
  IrShape cs = ir_shape_array(a, et, rank, dims);
  IrInstr *cat = simp_add_like(c, at, IR_OP_CONCATENATE, &cs, parts, nb + 1, "concatenate", at);
  if (cat) ir_attr_set_dims(cat, "dimensions", &ivd, 1);
  return cat;
}

/* XLA's GetUpdatedIndicesAreSorted: the copy keeps indices_are_sorted only when the batching
 * dimensions and the new index map are both in ascending order (each iota is). */
static void keep_sorted_flag(const IrInstr *old, IrInstr *now, const int64_t *bdims, int nb, const int64_t *map, int nmap) {
  const char *sorted = ir_attr_text(old, "indices_are_sorted");
  if (sorted && strcmp(sorted, "true") == 0 && !(ascending(bdims, nb) && ascending(map, nmap)))
    ir_attr_remove(now, "indices_are_sorted");
}

static void report(PassContext *cx, const char *was, IrInstr *now, const IrInstr *cat, const char *what, int nb) {
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = was, .consumer = now->name,
                    .result = now->name, .accepted = true};
  pass_metric(&d, "batching_dims", nb);
  pass_emit(cx->sink, &d,
            "%s becomes %s, an ordinary %s: its %d batching dimension%s join%s each index vector as an iota (%s), "
            "as XLA's BatchedGatherScatterNormalizer writes every batched %s",
            was, now->name, what, nb, nb == 1 ? "" : "s", nb == 1 ? "s" : "", cat->name, what);
}

static bool normalize_gather(IrInstr *g, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  if (g->noperands != 2) return true;
  IrGatherDims d;
  ir_gather_dims(g, &d);
  if (d.noperand_batching == 0 || d.noperand_batching != d.nindices_batching ||
      overlap(d.operand_batching, d.noperand_batching, d.start_map, d.nstart_map) ||
      d.nstart_map + d.noperand_batching > IR_MAX_RANK || d.ncollapsed + d.noperand_batching > IR_MAX_RANK)
    return true;
  IrInstr *cat = concat_indices(g, g->operands[1], d.index_vector_dim, d.indices_batching, d.nindices_batching);
  if (!cat) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int64_t map[IR_MAX_RANK], collapsed[IR_MAX_RANK];
  int nmap = 0, ncol = 0;
  for (int k = 0; k < d.noperand_batching; k++) map[nmap++] = d.operand_batching[k];
  for (int k = 0; k < d.nstart_map; k++) map[nmap++] = d.start_map[k];
  for (int k = 0; k < d.ncollapsed; k++) collapsed[ncol++] = d.collapsed[k];
  for (int k = 0; k < d.noperand_batching; k++) collapsed[ncol++] = d.operand_batching[k];
  ir_dims_sort(collapsed, ncol);
  IrInstr *ops[2] = {g->operands[0], cat};
  IrInstr *ng = ir_instr_copy(g->parent, g, ops, ir_module_series_name(g->parent->module, "gather", false));
  if (!ng) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_remove(ng, "operand_batching_dims");
  ir_attr_remove(ng, "start_indices_batching_dims");
  ir_attr_set_dims(ng, "collapsed_slice_dims", collapsed, ncol);
  ir_attr_set_dims(ng, "start_index_map", map, nmap);
  keep_sorted_flag(g, ng, d.indices_batching, d.nindices_batching, map, nmap);
  char was[256];
  snprintf(was, sizeof was, "%s", g->name);
  simp_replace(g, ng);
  report(cx, was, ng, cat, "gather", d.noperand_batching);
  *changed = true;
  return true;
}

static bool normalize_scatter(IrInstr *s, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  int64_t ib[IR_MAX_RANK], sib[IR_MAX_RANK], inserted[2 * IR_MAX_RANK], map[2 * IR_MAX_RANK];
  int nib = ir_attr_dims_or_empty(s, "input_batching_dims", ib);
  int nsib = ir_attr_dims_or_empty(s, "scatter_indices_batching_dims", sib);
  int nins = ir_attr_dims_or_empty(s, "inserted_window_dims", inserted);
  int nmap0 = ir_attr_dims_or_empty(s, "scatter_dims_to_operand_dims", map);
  if (nib == 0 || nib != nsib || s->noperands < 3 || s->noperands % 2 == 0) return true;
  int n = (s->noperands - 1) / 2;
  IrInstr *indices = s->operands[n];
  int64_t ivd = indices->shape.rank;
  ir_attr_int(s, "index_vector_dim", &ivd);
  IrInstr *cat = concat_indices(s, indices, ivd, sib, nsib);
  if (!cat) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int64_t newmap[2 * IR_MAX_RANK];
  int nmap = 0;
  for (int k = 0; k < nib; k++) newmap[nmap++] = ib[k];
  for (int k = 0; k < nmap0; k++) newmap[nmap++] = map[k];
  for (int k = 0; k < nib; k++) inserted[nins++] = ib[k];
  ir_dims_sort(inserted, nins);
  IrInstr *small[IR_REMAP_SMALL], **ops = s->noperands <= IR_REMAP_SMALL ? small : fx_malloc(sizeof *ops * (size_t)s->noperands);
  if (!ops) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(ops, s->operands, sizeof *ops * (size_t)s->noperands);
  ops[n] = cat;
  IrInstr *ns = ir_instr_copy(s->parent, s, ops, ir_module_series_name(s->parent->module, "scatter", false));
  if (ops != small) fx_free(ops);
  if (!ns) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_remove(ns, "input_batching_dims");
  ir_attr_remove(ns, "scatter_indices_batching_dims");
  ir_attr_set_dims(ns, "inserted_window_dims", inserted, nins);
  ir_attr_set_dims(ns, "scatter_dims_to_operand_dims", newmap, nmap);
  keep_sorted_flag(s, ns, sib, nsib, newmap, nmap);
  char was[256];
  snprintf(was, sizeof was, "%s", s->name);
  simp_replace(s, ns);
  report(cx, was, ns, cat, "scatter", nib);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  bool g = false, s = false;
  if (!simp_rewrite_each(m, cx, IR_OP_GATHER, normalize_gather, NULL, true, &g)) return false;
  if (!simp_rewrite_each(m, cx, IR_OP_SCATTER, normalize_scatter, NULL, true, &s)) return false;
  *changed = g || s;
  return true;
}

const Pass pass_batched_gather_scatter = {
    "batched-gather-scatter-normalizer",
    "a gather or scatter with batching dimensions becomes an ordinary one, the batch positions added to the indices "
    "as iotas (XLA's BatchedGatherScatterNormalizer)",
    run,
};

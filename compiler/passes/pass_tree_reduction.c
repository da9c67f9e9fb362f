/* pass_tree_reduction.c — tree-reduction-rewriter: a reduction too large for one pass of XLA's
 * reduction emitter becomes two reductions (XLA:GPU's TreeReductionRewriter, ReductionRewriterVisitor,
 * with the reduction normalization XLA runs before it: ReductionDegenerateDimRemover and
 * ReductionDimensionGrouper), for the priority pipeline.
 *
 * XLA's reduction emitter writes each result element from one block, without atomics, only when
 * the reduction is "race free" (reduction_utils.cc, ReductionIsRaceFree): a row reduction (the
 * minor dimension reduced) of at most 1024 threads x 16 = 16,384 minor elements and at most 8
 * major reduced rows (BatchedReductionRaceFreeBound), a column reduction of at most 32 x 128 =
 * 4,096 reduced elements. A larger one is rewritten, until every reduction is race free:
 *
 *  - a row reduction over more than 8 major rows reduces the minor dimension first, then the
 *    major one (RewriteBatchDimensionLargerThanTile);
 *  - otherwise its reduced dimension of k elements is padded (with the initial value) to k1 x k2
 *    and reshaped to [k1, k2]: an inner reduction reduces k2, an outer one k1
 *    (ComputeSplitParams: k2 near sqrt(k), at most the bound, with the least padding, a power of
 *    two among equals; then the two swapped when that reads better, as XLA decides).
 *
 * Before it, as XLA's normalization passes do, dimensions of size 1 are dropped and adjacent
 * reduced dimensions are merged (a reshape); a reshape brings the result back to the reduction's
 * shape. Only reductions the reduction emitter takes (from or to contiguous dimensions:
 * fusion_contiguous_reduce) and of one input are rewritten (XLA also splits variadic ones).
 * jax.b380442861 sums 1,000,000 squares: XLA reduces [1000,1000] to [1000], then to a scalar,
 * two kernels where one reduction would be one.
 *
 * Each split is reported: "split reduce.14 (a row reduction of 1000000 elements: more than
 * 16384 are not race free) into reduce.14.inner (s32[1000,1000] -> s32[1000]) and
 * reduce.14.outer (-> s32[])". */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../fusion/fusion.h"
#include "passes.h"
#include "simplify.h"

#define ROW_BOUND (1024 * 16)   /* MinThreadsXRowReduction x the row tiling's 16 */
#define COLUMN_BOUND (32 * 128) /* WarpSize x the column tiling's 128 */
#define BATCH_BOUND 8           /* BatchedReductionRaceFreeBound */

/* The reduce's input with unit dimensions dropped and adjacent reduced dimensions merged. */
typedef struct {
  int n;
  int64_t dims[IR_MAX_RANK];
  bool reduced[IR_MAX_RANK];
} Grouped;

static bool group(const IrInstr *r, Grouped *g) {
  const IrShape *in = &r->operands[0]->shape;
  int64_t rd[IR_MAX_RANK];
  int nr = ir_attr_dims(r, "dimensions", rd, IR_MAX_RANK);
  if (!ir_shape_is_array(in) || !ir_shape_default_layout(in) || nr < 0) return false;
  bool red[IR_MAX_RANK] = {false};
  for (int k = 0; k < nr; k++) {
    if (rd[k] < 0 || rd[k] >= in->rank) return false;
    red[rd[k]] = true;
  }
  g->n = 0;
  for (int d = 0; d < in->rank; d++) {
    if (in->dims[d] == 1) continue;
    if (g->n > 0 && red[d] && g->reduced[g->n - 1]) {
      g->dims[g->n - 1] *= in->dims[d];
    } else {
      g->dims[g->n] = in->dims[d];
      g->reduced[g->n++] = red[d];
    }
  }
  return true;
}

/* GetReductionKindAndContiguousComponents on the grouped input: a row reduction is {major
 * reduced, kept, minor reduced}, a column one {major kept, reduced, minor kept}. Sets rd to the
 * grouped reduced dimensions (sorted). False when it is not one of the two. */
static bool components(const Grouped *g, bool *row, int64_t d[3], int *rd, int *nrd) {
  *nrd = 0;
  for (int k = 0; k < g->n; k++)
    if (g->reduced[k]) {
      if (*nrd == 2) return false;
      rd[(*nrd)++] = k;
    }
  if (*nrd == 0) return false;
  d[0] = d[1] = d[2] = 1;
  if (g->reduced[g->n - 1]) {
    *row = true;
    if (*nrd == 2 && rd[0] != 0) return false; /* kept dimensions on both sides of a reduced one */
    if (*nrd == 2) d[0] = g->dims[0];
    for (int k = *nrd == 2 ? 1 : 0; k < g->n - 1; k++) d[1] *= g->dims[k];
    d[2] = g->dims[g->n - 1];
    return true;
  }
  if (*nrd != 1) return false;
  *row = false;
  for (int k = 0; k < rd[0]; k++) d[0] *= g->dims[k];
  d[1] = g->dims[rd[0]];
  for (int k = rd[0] + 1; k < g->n; k++) d[2] *= g->dims[k];
  return true;
}

static bool single_bit(uint64_t v) { return v && !(v & (v - 1)); }

/* ShouldSwapInnerAndOuterReducedMinorDimension. */
static bool should_swap(uint64_t k1, uint64_t k2, uint64_t n, int64_t bound, bool row) {
  if (k1 > (uint64_t)bound) return false;
  if (row) {
    bool maybe_vectorized = k2 % 2 == 0 && n % 2 == 0;
    if (maybe_vectorized) return k2 * 2 < k1 || k1 % 2 == 0;
    return n % 2 == 0 || k1 % 2 != 0;
  }
  return true;
}

/* ComputeSplitParams: k elements as k1 x k2 (k1 * k2 >= k). */
static void split_params(int64_t k, int64_t bound, bool row, int64_t *k1, int64_t *k2) {
  uint64_t n = (uint64_t)k;
  uint64_t b = (uint64_t)floor(sqrt((double)k));
  if (b > (uint64_t)bound) b = (uint64_t)bound;
  if (b < 1) b = 1;
  uint64_t min_pad = (b - n % b) % b;
  uint64_t best1 = (n + min_pad) / b;
  for (uint64_t i = b - 1; i > b / 2; --i) {
    uint64_t pad = (i - n % i) % i;
    if (pad < min_pad || (pad == min_pad && single_bit(i))) {
      min_pad = pad;
      best1 = (n + pad) / i;
    }
  }
  uint64_t best2 = (n + min_pad) / best1;
  if (best1 >= best2 && should_swap(best1, best2, n, bound, row)) {
    uint64_t t = best1;
    best1 = best2;
    best2 = t;
  }
  *k1 = (int64_t)best1;
  *k2 = (int64_t)best2;
}

static IrInstr *add_before(IrInstr *at, IrOpcode op, IrShape *shape, IrInstr *const *ops, int n, const char *base) {
  return ir_instr_new_before(at->parent, at, op, shape, ops, n, base);
}

/* A reduce of x by r's reducer and initial value over dims, its shape x's without them. */
static IrInstr *reduce_of(IrInstr *r, IrInstr *x, const int64_t *dims, int nd, const char *base) {
  Arena *a = &r->parent->module->arena;
  int64_t out[IR_MAX_RANK];
  int n = 0;
  for (int d = 0; d < x->shape.rank; d++) {
    bool red = false;
    for (int k = 0; k < nd; k++) red = red || dims[k] == d;
    if (!red) out[n++] = x->shape.dims[d];
  }
  IrShape s = ir_shape_array(a, r->shape.type, n, out);
  IrInstr *ops[2] = {x, r->operands[1]};
  IrInstr *y = add_before(r, IR_OP_REDUCE, &s, ops, 2, base);
  if (!y) return NULL;
  ir_attr_set_dims(y, "dimensions", dims, nd);
  ir_attr_set_comp(y, "to_apply", ir_attr_comp(r, "to_apply"));
  y->loc = r->loc;
  const char *meta = ir_attr_text(r, "metadata");
  if (meta) ir_attr_set_text(y, "metadata", meta);
  return y;
}

static IrInstr *reshape_to(IrInstr *at, IrInstr *x, IrType t, int n, const int64_t *dims, const char *base) {
  IrShape s = ir_shape_array(&at->parent->module->arena, t, n, dims);
  if (ir_shape_same_dims(&s, &x->shape)) return x;
  return add_before(at, IR_OP_RESHAPE, &s, &x, 1, base);
}

/* Rewrites r when it is not race free. Returns 1 when rewritten, 0 when not, -1 out of memory. */
static int rewrite(IrInstr *r, PassContext *cx) {
  if (r->op != IR_OP_REDUCE || r->noperands != 2 || !r->operands[0] || !r->operands[1] || !ir_shape_is_array(&r->shape) ||
      !ir_attr_comp(r, "to_apply") || !fusion_contiguous_reduce(r))
    return 0;
  Grouped g;
  bool row;
  int64_t d[3];
  int rd[2], nrd;
  if (!group(r, &g) || !components(&g, &row, d, rd, &nrd)) return 0;
  bool race_free = row ? d[2] <= ROW_BOUND && d[0] <= BATCH_BOUND : d[1] <= COLUMN_BOUND;
  if (race_free) return 0;
  IrInstr *x = r->operands[0];
  IrType t = x->shape.type;
  char name[160];
  snprintf(name, sizeof name, "%s.grouped", r->name);
  IrInstr *gx = reshape_to(r, x, t, g.n, g.dims, name);
  if (!gx) return -1;
  IrInstr *inner, *outer;
  char why[200], in_s[96], mid_s[96], out_s[96];
  snprintf(name, sizeof name, "%s.inner", r->name);
  if (row && d[0] > BATCH_BOUND) {
    /* RewriteBatchDimensionLargerThanTile: the minor reduced dimension, then the major one. */
    int64_t minor = rd[nrd - 1], major = 0;
    inner = reduce_of(r, gx, &minor, 1, name);
    snprintf(name, sizeof name, "%s.outer", r->name);
    outer = inner ? reduce_of(r, inner, &major, 1, name) : NULL;
    snprintf(why, sizeof why, "a row reduction over %" PRId64 " major rows: more than %d are not race free", d[0],
             BATCH_BOUND);
  } else {
    int64_t bound = row ? ROW_BOUND : COLUMN_BOUND;
    int dim = rd[nrd - 1];
    int64_t k = g.dims[dim], k1, k2;
    split_params(k, bound, row, &k1, &k2);
    IrInstr *px = gx;
    if (k1 * k2 != k) {
      /* Padded with the initial value, which the reduction ignores. */
      int64_t pd[IR_MAX_RANK];
      memcpy(pd, g.dims, sizeof(int64_t) * (size_t)g.n);
      pd[dim] = k1 * k2;
      IrShape ps = ir_shape_array(&r->parent->module->arena, t, g.n, pd);
      IrInstr *ops[2] = {gx, r->operands[1]};
      snprintf(name, sizeof name, "%s.padded", r->name);
      px = add_before(r, IR_OP_PAD, &ps, ops, 2, name);
      if (!px) return -1;
      int64_t lo[IR_MAX_RANK] = {0}, hi[IR_MAX_RANK] = {0};
      hi[dim] = k1 * k2 - k;
      ir_attr_set_padding(px, lo, hi, NULL, g.n);
    }
    if (g.n + 1 > IR_MAX_RANK) return 0;
    int64_t sd[IR_MAX_RANK];
    int ns = 0;
    for (int q = 0; q < g.n; q++) {
      if (q == dim) {
        sd[ns++] = k1;
        sd[ns++] = k2;
      } else {
        sd[ns++] = g.dims[q];
      }
    }
    snprintf(name, sizeof name, "%s.split", r->name);
    IrInstr *sx = reshape_to(r, px, t, ns, sd, name);
    if (!sx) return -1;
    int64_t in_dims[2];
    for (int q = 0; q < nrd; q++) in_dims[q] = rd[q] == dim ? rd[q] + 1 : rd[q];
    snprintf(name, sizeof name, "%s.inner", r->name);
    inner = reduce_of(r, sx, in_dims, nrd, name);
    int64_t out_dim = dim - (nrd - 1);
    snprintf(name, sizeof name, "%s.outer", r->name);
    outer = inner ? reduce_of(r, inner, &out_dim, 1, name) : NULL;
    snprintf(why, sizeof why, "a %s reduction of %" PRId64 " elements: more than %" PRId64 " are not race free; %" PRId64
             " = %" PRId64 " x %" PRId64 "%s",
             row ? "row" : "column", k, bound, k1 * k2, k1, k2, k1 * k2 != k ? ", padded" : "");
  }
  if (!outer) return -1;
  IrInstr *res = reshape_to(r, outer, r->shape.type, r->shape.rank, r->shape.dims, r->name);
  if (!res) return -1;
  PassDecision dec = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = r->name,
                      .result = res->name, .accepted = true};
  pass_metric(&dec, "elements", (double)ir_shape_elements(&x->shape));
  ir_shape_format(&inner->operands[0]->shape, false, in_s, sizeof in_s);
  ir_shape_format(&inner->shape, false, mid_s, sizeof mid_s);
  ir_shape_format(&outer->shape, false, out_s, sizeof out_s);
  pass_emit(cx->sink, &dec, "split %s (%s) into %s (%s -> %s) and %s (-> %s)", r->name, why, inner->name, in_s, mid_s,
            outer->name, out_s);
  simp_replace(r, res);
  return 1;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int done = 0;
  /* XLA runs it to a fixed point: a split's inner reduction may need splitting again. */
  for (int round = 0; round < 8 && !pass_interrupted(cx); round++) {
    int before = done;
    for (int c = 0; c < m->ncomps; c++) {
      IrComputation *comp = m->comps[c];
      if (simp_is_fused_computation(comp)) continue;
      for (int k = 0; k < comp->ninstrs; k++) {
        IrInstr *r = comp->instrs[k];
        if (r->dead || r->op != IR_OP_REDUCE) continue;
        int n0 = comp->ninstrs;
        int res = rewrite(r, cx);
        if (res < 0) return fx_error_set(cx->err, NULL, 0, 0, "tree-reduction-rewriter: out of memory");
        if (res > 0) {
          done++;
          /* The new reductions sit before r's old place: look at them in the next round. */
          k += comp->ninstrs - n0;
          if (k < -1) k = -1;
        }
      }
    }
    if (done == before) break;
  }
  *changed = done > 0;
  return true;
}

const Pass pass_tree_reduction = {
    "tree-reduction-rewriter",
    "splits a reduction too large for one race-free pass of the reduction emitter into two (rows over 16,384 or "
    "over 8 major rows, columns over 4,096 reduced elements)",
    run};

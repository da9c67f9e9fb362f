/* pass_reduce_window_rewriter.c — reduce-window-rewriter: a cumulative reduce-window (what
 * jnp.cumsum, jnp.cumprod, lax.cummax and lax.cumlogsumexp lower to) longer than 16 becomes a
 * two-level scan, and a reduce-window of rank 1 becomes one of rank 2 (XLA's ReduceWindowRewriter,
 * base length 16, which XLA:GPU runs in its optimization pipeline before simplification, until
 * it changes nothing). Priority pipeline only: XLA:GPU has run it since 2024.
 *
 * A scan is a reduce-window whose window is trivial (size 1, stride 1, no padding, no dilation)
 * in every dimension but one, and in that one covers the whole dimension of n elements, stride 1,
 * padded n - 1 below (an inclusive forward scan), n below (exclusive: n + 1 results, the first the
 * initial value), or the same above (backward). Each dimension runs quadratically in one
 * reduce-window; XLA rewrites one longer than 16 (kept in the scan dimension s):
 *
 *   1. s moved last by a transpose (swapping it with the last dimension), when it is not last;
 *   2. padded with the initial value up to k, a multiple of 16, and reshaped to [..., k/16, 16];
 *   3. a scan of each block of 16 (reduce-window, window 16 in the new last dimension);
 *   4. each block's total, the block scan's last column (a slice, reshaped to [..., k/16]);
 *   5. an exclusive scan of the k/16 totals (reduce-window, window k/16 padded k/16: k/16 + 1
 *      results, the last sliced off), which the next round rewrites again when longer than 16;
 *   6. broadcast back to [..., k/16, 16] and combined with the block scans by the reducer (a map,
 *      which algsimp makes the reducer's one operation when it is one);
 *   7. reshaped back, transposed back, the padding sliced off; an exclusive scan padded with the
 *      initial value at its start.
 *
 * jnp.cumsum over 1024 columns: a scan of 64 blocks of 16, the 64 block totals again as 4 blocks of
 * 16, and an exclusive scan of 4: three reduce-windows, two kernels after fusion where the single
 * reduce-window was one. A reduce-window of rank 1 that is not rewritten so (the last level of a
 * rank-1 scan, a 1-D pooling) gets a second dimension of size 1: [n] -> [n, 1], its window
 * another dimension of size 1, and the result reshaped back.
 *
 * Reduce-windows of several inputs (XLA rewrites those as well) are left alone, and say so. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define BASE_LENGTH 16  /* the base length XLA:GPU gives ReduceWindowRewriter */
#define MAX_ROUNDS 25   /* HloPassFix's iteration limit */

static IrInstr *add(IrInstr *at, IrOpcode op, const IrShape *s, IrInstr **ops, int n, const char *base) {
  return simp_add_like(at->parent, at, op, s, ops, n, base, at);
}

static IrShape array(IrInstr *at, IrType t, int rank, const int64_t *dims) {
  return ir_shape_array(&at->parent->module->arena, t, rank, dims);
}

/* A window of `rank` trivial dimensions. */
static void trivial_window(IrWindow *w, int rank) {
  memset(w, 0, sizeof *w);
  w->rank = rank;
  w->has_size = true;
  for (int d = 0; d < rank; d++) ir_window_set_trivial(w, d);
}

/* A reduce-window of x by rw's reducer and initial value with window w and result dims. */
static IrInstr *reduce_window(IrInstr *rw, IrInstr *x, const IrWindow *w, const int64_t *dims, const char *base) {
  IrShape s = array(rw, rw->shape.type, w->rank, dims);
  IrInstr *ops[2] = {x, rw->operands[1]};
  IrInstr *y = add(rw, IR_OP_REDUCE_WINDOW, &s, ops, 2, base);
  if (!y) return NULL;
  ir_attr_set_window(y, w);
  ir_attr_set_comp(y, "to_apply", ir_attr_comp(rw, "to_apply"));
  return y;
}

static IrInstr *reshape(IrInstr *rw, IrInstr *x, int rank, const int64_t *dims, const char *base) {
  IrShape s = array(rw, x->shape.type, rank, dims);
  return add(rw, IR_OP_RESHAPE, &s, &x, 1, base);
}

static IrInstr *transpose(IrInstr *rw, IrInstr *x, const int64_t *perm, const char *base) {
  int64_t d[IR_MAX_RANK];
  for (int k = 0; k < x->shape.rank; k++) d[k] = x->shape.dims[perm[k]];
  IrShape s = array(rw, x->shape.type, x->shape.rank, d);
  IrInstr *y = add(rw, IR_OP_TRANSPOSE, &s, &x, 1, base);
  if (y) ir_attr_set_dims(y, "dimensions", perm, x->shape.rank);
  return y;
}

/* x padded with rw's initial value by lo below and hi above dimension dim. */
static IrInstr *pad(IrInstr *rw, IrInstr *x, int dim, int64_t lo, int64_t hi, const char *base) {
  int r = x->shape.rank;
  int64_t d[IR_MAX_RANK], plo[IR_MAX_RANK] = {0}, phi[IR_MAX_RANK] = {0};
  memcpy(d, x->shape.dims, sizeof(int64_t) * (size_t)r);
  d[dim] += lo + hi;
  plo[dim] = lo;
  phi[dim] = hi;
  IrShape s = array(rw, x->shape.type, r, d);
  IrInstr *ops[2] = {x, rw->operands[1]};
  IrInstr *y = add(rw, IR_OP_PAD, &s, ops, 2, base);
  if (y) ir_attr_set_padding(y, plo, phi, NULL, r);
  return y;
}

/* x's elements [start, limit) of dimension dim. */
static IrInstr *slice(IrInstr *rw, IrInstr *x, int dim, int64_t start, int64_t limit, const char *base) {
  int r = x->shape.rank;
  int64_t st[IR_MAX_RANK] = {0}, lim[IR_MAX_RANK];
  memcpy(lim, x->shape.dims, sizeof(int64_t) * (size_t)r);
  st[dim] = start;
  lim[dim] = limit;
  int64_t d[IR_MAX_RANK];
  memcpy(d, x->shape.dims, sizeof(int64_t) * (size_t)r);
  d[dim] = limit - start;
  IrShape s = array(rw, x->shape.type, r, d);
  IrInstr *y = add(rw, IR_OP_SLICE, &s, &x, 1, base);
  if (y) ir_attr_set_slice(y, st, lim, NULL, r);
  return y;
}

typedef struct {
  int dim;         /* the scan dimension */
  int64_t n;       /* its length */
  bool forward;    /* padded below: element i reduces 0..i (else i..n-1) */
  bool exclusive;  /* padded by n: n + 1 results, the first (last) the initial value */
} Scan;

/* TryOptimizeCumSumOrProd's test: whether rw (of one input, window w) is a scan longer than
 * BASE_LENGTH. */
static bool is_long_scan(const IrInstr *rw, const IrWindow *w, Scan *sc) {
  const IrShape *in = &rw->operands[0]->shape;
  int dim = -1;
  for (int d = 0; d < w->rank; d++) {
    if (ir_window_dim_trivial(w, d)) continue;
    if (dim >= 0) return false; /* more than one non-trivial dimension */
    dim = d;
  }
  if (dim < 0) return false;
  int64_t n = in->dims[dim];
  if (n <= BASE_LENGTH) return false;
  bool fwd = (w->pad_lo[dim] == n - 1 || w->pad_lo[dim] == n) && w->pad_hi[dim] == 0;
  bool bwd = (w->pad_hi[dim] == n - 1 || w->pad_hi[dim] == n) && w->pad_lo[dim] == 0;
  if (w->stride[dim] != 1 || w->size[dim] != n || (!fwd && !bwd) || w->reversal[dim] || w->lhs_dilate[dim] != 1 ||
      w->rhs_dilate[dim] != 1)
    return false;
  sc->dim = dim;
  sc->n = n;
  sc->forward = fwd;
  sc->exclusive = fwd ? w->pad_lo[dim] == n : w->pad_hi[dim] == n;
  return true;
}

/* RewriteScanAsTreeReduction for a reduce-window of one input. Returns the value that replaces
 * rw, NULL when out of memory; why[nwhy] says what it became. */
static IrInstr *rewrite_scan(IrInstr *rw, const Scan *sc, char *why, size_t nwhy) {
  IrComputation *f = ir_attr_comp(rw, "to_apply");
  IrInstr *x = rw->operands[0];
  int rank = x->shape.rank, last = rank - 1;
  char name[200];
  /* 1. the scan dimension last */
  int64_t perm[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) perm[d] = d;
  if (sc->dim != last) {
    perm[sc->dim] = last;
    perm[last] = sc->dim;
    snprintf(name, sizeof name, "%s.transposed", rw->name);
    if (!(x = transpose(rw, x, perm, name))) return NULL;
  }
  /* 2. padded to a multiple of the base length, in blocks */
  int64_t k = (sc->n + BASE_LENGTH - 1) / BASE_LENGTH * BASE_LENGTH, ncol = k / BASE_LENGTH;
  if (k != sc->n) {
    snprintf(name, sizeof name, "%s.padded", rw->name);
    if (!(x = pad(rw, x, last, 0, k - sc->n, name))) return NULL;
  }
  int64_t td[IR_MAX_RANK];
  memcpy(td, x->shape.dims, sizeof(int64_t) * (size_t)rank);
  td[last] = ncol;
  td[rank] = BASE_LENGTH;
  snprintf(name, sizeof name, "%s.blocks", rw->name);
  IrInstr *tiled = reshape(rw, x, rank + 1, td, name);
  if (!tiled) return NULL;
  /* 3. a scan of each block */
  IrWindow w;
  trivial_window(&w, rank + 1);
  w.size[rank] = BASE_LENGTH;
  if (sc->forward) w.pad_lo[rank] = BASE_LENGTH - 1;
  else w.pad_hi[rank] = BASE_LENGTH - 1;
  snprintf(name, sizeof name, "%s.block_scan", rw->name);
  IrInstr *outer = reduce_window(rw, tiled, &w, td, name);
  if (!outer) return NULL;
  /* 4. each block's total */
  snprintf(name, sizeof name, "%s.block_totals", rw->name);
  IrInstr *col = slice(rw, outer, rank, sc->forward ? BASE_LENGTH - 1 : 0, sc->forward ? BASE_LENGTH : 1, name);
  if (!col || !(col = reshape(rw, col, rank, td, name))) return NULL;
  /* 5. an exclusive scan of the totals */
  trivial_window(&w, rank);
  w.size[last] = ncol;
  if (sc->forward) w.pad_lo[last] = ncol;
  else w.pad_hi[last] = ncol;
  int64_t cd[IR_MAX_RANK];
  memcpy(cd, td, sizeof(int64_t) * (size_t)rank);
  cd[last] = ncol + 1;
  snprintf(name, sizeof name, "%s.totals_scan", rw->name);
  IrInstr *in = reduce_window(rw, col, &w, cd, name);
  if (!in) return NULL;
  snprintf(name, sizeof name, "%s.block_offsets", rw->name);
  IrInstr *offs = slice(rw, in, last, sc->forward ? 0 : 1, sc->forward ? ncol : ncol + 1, name);
  if (!offs) return NULL;
  /* 6. the offsets broadcast over each block and combined with the block scans */
  IrShape ts = array(rw, rw->shape.type, rank + 1, td);
  int64_t bd[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) bd[d] = d;
  IrInstr *b = add(rw, IR_OP_BROADCAST, &ts, &offs, 1, name);
  if (!b) return NULL;
  ir_attr_set_dims(b, "dimensions", bd, rank);
  IrInstr *mops[2] = {outer, b};
  snprintf(name, sizeof name, "%s.scan", rw->name);
  IrInstr *y = add(rw, IR_OP_MAP, &ts, mops, 2, name);
  if (!y) return NULL;
  for (int d = 0; d <= rank; d++) bd[d] = d;
  ir_attr_set_dims(y, "dimensions", bd, rank + 1);
  ir_attr_set_comp(y, "to_apply", f);
  /* 7. back to the input's shape */
  if (!(y = reshape(rw, y, rank, x->shape.dims, name))) return NULL;
  if (sc->dim != last && !(y = transpose(rw, y, perm, name))) return NULL;
  if (k != sc->n && !(y = slice(rw, y, sc->dim, 0, sc->n, name))) return NULL;
  if (sc->exclusive && !(y = pad(rw, y, sc->dim, sc->forward ? 1 : 0, sc->forward ? 0 : 1, name))) return NULL;
  char s1[96], s2[96];
  ir_shape_format(&outer->shape, false, s1, sizeof s1);
  ir_shape_format(&in->shape, false, s2, sizeof s2);
  snprintf(why, nwhy,
           "%s%s scan of %" PRId64 " elements (more than %d) in dimension %d becomes %s: blocks of %d %s, their %" PRId64
           " totals scanned by %s (%s)%s",
           sc->exclusive ? "an exclusive " : "a ", sc->forward ? "forward" : "backward", sc->n, BASE_LENGTH, sc->dim, outer->name,
           BASE_LENGTH, s1, ncol, in->name, s2,
           k != sc->n ? ", padded with the initial value" : "");
  return y;
}

/* Replace1DReduceWindowWithReshape: [n] -> [n, 1], the window one more trivial dimension. */
static IrInstr *rewrite_r1(IrInstr *rw, const IrWindow *w0) {
  char name[200];
  int64_t d[2] = {rw->operands[0]->shape.dims[0], 1};
  snprintf(name, sizeof name, "%s.r2", rw->name);
  IrInstr *x = reshape(rw, rw->operands[0], 2, d, name);
  if (!x) return NULL;
  IrWindow w = *w0;
  w.rank = 2;
  ir_window_set_trivial(&w, 1);
  int64_t od[2] = {rw->shape.dims[0], 1};
  IrInstr *y = reduce_window(rw, x, &w, od, name);
  if (!y) return NULL;
  return reshape(rw, y, 1, rw->shape.dims, rw->name);
}

/* Rewrites rw when it is a long scan or of rank 1. Returns 1 when rewritten, 0 when not, -1 out
 * of memory. */
static int rewrite(IrInstr *rw, PassContext *cx, bool first_round) {
  if (rw->noperands < 2 || !ir_attr_comp(rw, "to_apply")) return 0;
  for (int k = 0; k < rw->noperands; k++)
    if (!rw->operands[k]) return 0;
  const IrShape *in = &rw->operands[0]->shape;
  if (!ir_shape_is_array(in) || in->rank + 1 > IR_MAX_RANK) return 0;
  IrWindow w;
  char why[600];
  if (!ir_attr_window(rw, in->rank, &w, why, sizeof why)) return 0;
  Scan sc = {0};
  bool scan = is_long_scan(rw, &w, &sc);
  if (!scan && in->rank != 1) return 0;
  PassDecision dec = {.pass = cx->pass, .stage = cx->stage, .producer = rw->name};
  if (rw->noperands != 2 || !ir_shape_is_array(&rw->shape)) {
    if (!first_round) return 0;
    dec.action = "keep";
    pass_emit(cx->sink, &dec,
              "%s reduces %d inputs together; XLA rewrites %s too, fxplain only reduce-windows of one input, so it "
              "stays as it is",
              rw->name, rw->noperands / 2, scan ? "such a scan" : "such a reduce-window of rank 1");
    return 0;
  }
  IrInstr *res;
  if (scan) {
    res = rewrite_scan(rw, &sc, why, sizeof why);
  } else {
    res = rewrite_r1(rw, &w);
    snprintf(why, sizeof why, "a reduce-window of rank 1 becomes one of rank 2 ([%" PRId64 "] -> [%" PRId64 ", 1])",
             in->dims[0], in->dims[0]);
  }
  if (!res) return -1;
  dec.action = "rewrite";
  dec.result = res->name;
  dec.accepted = true;
  pass_metric(&dec, "elements", (double)ir_shape_elements(in));
  pass_emit(cx->sink, &dec, "%s: %s", rw->name, why);
  simp_replace(rw, res);
  return 1;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int done = 0;
  /* XLA runs it until it changes nothing: the scan of the block totals may be long again, and
     the last level of a rank-1 scan is of rank 1. Each round rewrites what was there at its
     start, in post order. */
  for (int round = 0; round < MAX_ROUNDS && !pass_interrupted(cx); round++) {
    int n, before = done;
    IrInstr **rws = simp_collect(m, IR_OP_REDUCE_WINDOW, &n);
    if (!rws) return fx_error_set(cx->err, NULL, 0, 0, "reduce-window-rewriter: out of memory");
    for (int k = 0; k < n; k++) {
      if (rws[k]->dead) continue;
      int res = rewrite(rws[k], cx, round == 0);
      if (res < 0) {
        fx_free(rws);
        return fx_error_set(cx->err, NULL, 0, 0, "reduce-window-rewriter: out of memory");
      }
      done += res;
    }
    fx_free(rws);
    if (done == before) break;
  }
  *changed = done > 0;
  return true;
}

const Pass pass_reduce_window_rewriter = {
    "reduce-window-rewriter",
    "rewrites a cumulative reduce-window (cumsum, cumprod, cummax) longer than 16 as a scan of blocks of 16 and a scan of "
    "their totals, and a reduce-window of rank 1 as one of rank 2 (XLA's ReduceWindowRewriter)",
    run};

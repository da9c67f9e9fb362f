/* fusion_analysis.c — what XLA's GPU fusion passes ask about a fusion before they build it: is
 * an op fusible at all, which emitter a (hypothetical) fusion would get, what its hero is, and
 * how long its kernel would take by XLA's GpuPerformanceModel. Shared by priority-fusion and
 * today's multi_output_fusion; each function names the XLA function it follows. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_analysis.h"
#include "gpu_fusible.h"
#include "../plan/plan.h"

/* ---------- what may fuse (XLA's priority_fusion.cc IsFusible) ---------- */

const IrInstr *fusion_fused_root(const IrInstr *i) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  return fc && fc->root ? fc->root : i;
}

static bool kind_is(const IrInstr *i, const char *kind) {
  const char *k = ir_fusion_kind(i);
  return strcmp(k ? k : "kLoop", kind) == 0;
}

/* A Triton fusion XLA built earlier (the softmax rewriter's `__triton`, not a Triton GEMM):
 * XLA's IsGenericTritonFusion. Priority fusion grows these through CanFuseTriton. */
bool fusion_is_generic_triton(const IrInstr *i) {
  if (i->op != IR_OP_FUSION || !kind_is(i, "kCustom")) return false;
  const char *bc = ir_attr_text(i, "backend_config");
  return bc && strstr(bc, "\"kind\":\"__triton\"") != NULL;
}

/* A map over every dimension in order (dimensions={0,1,...} or none given): XLA counts it
 * elementwise (HloMapInstruction::IsElementwiseImpl), so it fuses like an add. */
bool fusion_map_is_elementwise(const IrInstr *i) {
  if (i->op != IR_OP_MAP || !ir_shape_is_array(&i->shape)) return false;
  int64_t d[IR_MAX_RANK];
  int n = ir_attr_dims_or_empty(i, "dimensions", d);
  if (n == 0) return true;
  if (n != i->shape.rank) return false;
  for (int k = 0; k < n; k++)
    if (d[k] != k) return false;
  return true;
}

/* XLA's IsFusible for priority fusion: side-effect free, and elementwise or an op the loop,
 * reduction, scatter or concatenate emitters can take. Library calls (dot, convolution,
 * custom-call, sort, rng) are opaque kernels unless the user made them fusible with `set library`. */
bool fusion_xla_fusible(const IrInstr *i, const PassSettings *s) {
  if (i->dead) return false;
  if (ir_op_is_elementwise(i->op)) return i->op != IR_OP_RNG;
  switch (i->op) {
  case IR_OP_FUSION: return !kind_is(i, "kCustom");
  case IR_OP_COPY:
  case IR_OP_IOTA:
  case IR_OP_CONSTANT:
  case IR_OP_REDUCE:
  case IR_OP_BROADCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
  case IR_OP_PAD:
  case IR_OP_REDUCE_WINDOW:
  case IR_OP_RESHAPE:
  case IR_OP_REVERSE:
  case IR_OP_SCATTER:
  case IR_OP_SLICE:
  case IR_OP_TRANSPOSE: return true;
  case IR_OP_MAP: return fusion_map_is_elementwise(i); /* HloMapInstruction::IsElementwise */
  case IR_OP_BITCAST: /* IsFusibleBitcast: only one that keeps the bit width (KeepsBitwidth) */
    return fusion_keeps_bitwidth(i);
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION: return !fusion_is_library_call(i, s);
  default: return false;
  }
}


/* The bodies of consumer c and producer p (NULL where one is no fusion), found once per search:
 * looking a body up is a search of the instruction's attributes. */
typedef struct {
  const IrInstr *c, *p;
  const IrComputation *cb, *pb;
} PairBodies;

static PairBodies pair_bodies(const IrInstr *c, const IrInstr *p) {
  PairBodies b = {c, p, c->op == IR_OP_FUSION ? ir_fused_computation(c) : NULL,
                  p && p->op == IR_OP_FUSION ? ir_fused_computation(p) : NULL};
  return b;
}

/* Operand k of x, followed across the fusion boundaries of consumer c and producer p (the
 * fusion being considered; p may be NULL); NULL when it lies outside the fusion. */
static const IrInstr *fused_operand(const IrInstr *x, int k, const PairBodies *b) {
  const IrInstr *c = b->c, *p = b->p;
  if (k < 0 || k >= x->noperands) return NULL;
  const IrInstr *o = x->operands[k];
  for (int guard = 0; guard < 4 && o; guard++) {
    if (o->op == IR_OP_PARAMETER && o->parent && !o->parent->is_entry) {
      const IrInstr *owner = NULL;
      if (b->cb && o->parent == b->cb) owner = c;
      else if (b->pb && o->parent == b->pb) owner = p;
      if (!owner || o->param_number < 0 || o->param_number >= owner->noperands) return NULL;
      o = owner->operands[o->param_number];
      if (owner == p) return NULL; /* a parameter of the producer: outside */
      continue;
    }
    if (p && o == p) {
      const IrInstr *r = fusion_fused_root(p);
      return r->op == IR_OP_TUPLE ? NULL : r;
    }
    if (o->parent && b->cb && o->parent == b->cb) return o;
    if (b->pb && o->parent == b->pb) return o;
    return NULL;
  }
  return NULL;
}

static int normalized_transpose(const IrInstr *x, int64_t *dims, int *perm);
static bool tiled_transpose(const IrInstr *x, int64_t *blocks);

/* IsIntermediate: an op with 1..allowed operands that moves no data: elementwise, a bitcast, a
 * reshape or a transpose that only moves unit dimensions. */
static bool intermediate(const IrInstr *x, int allowed) {
  if (x->noperands == 0 || x->noperands > allowed) return false;
  if (ir_op_is_elementwise(x->op)) return true;
  if (x->op == IR_OP_BITCAST || x->op == IR_OP_RESHAPE) return true;
  if (x->op == IR_OP_TRANSPOSE) {
    int64_t d[IR_MAX_RANK];
    int pm[IR_MAX_RANK];
    return normalized_transpose(x, d, pm) <= 1;
  }
  return false;
}

/* A map from instructions to small integers by instruction id, cleared in O(1) by a stamp: for
 * the operand lookups of wide instructions. put returns false when x's slot holds another
 * instruction (ids are unique in a module, so only across modules), get returns -1 then or for
 * an id out of range: the caller falls back to a scan. */
typedef struct {
  const IrInstr **who;
  unsigned *stamp;
  int *val;
  int n;
  unsigned now;
} IdMap;

static bool idmap_begin(IdMap *m, int need) {
  if (need > m->n) {
    int nn = m->n ? m->n : 1024;
    while (nn < need) nn *= 2;
    const IrInstr **w = fx_realloc(m->who, sizeof *w * (size_t)nn);
    if (w) m->who = w;
    int *v = w ? fx_realloc(m->val, sizeof *v * (size_t)nn) : NULL;
    if (v) m->val = v;
    unsigned *st = v ? fx_realloc(m->stamp, sizeof *st * (size_t)nn) : NULL;
    if (!st) return false;
    m->stamp = st;
    memset(st + m->n, 0, sizeof *st * (size_t)(nn - m->n));
    m->n = nn;
  }
  if (++m->now == 0) {
    memset(m->stamp, 0, sizeof *m->stamp * (size_t)m->n);
    m->now = 1;
  }
  return true;
}

static int idmap_get(const IdMap *m, const IrInstr *x, int *val) {
  if (x->id < 0 || x->id >= m->n) return -1;
  if (m->stamp[x->id] != m->now) return 0;
  if (m->who[x->id] != x) return -1;
  *val = m->val[x->id];
  return 1;
}

/* Records x -> v unless x is there already (the first one stays). */
static bool idmap_put(IdMap *m, const IrInstr *x, int v) {
  if (x->id < 0 || x->id >= m->n) return false;
  if (m->stamp[x->id] == m->now) return m->who[x->id] == x;
  m->stamp[x->id] = m->now;
  m->who[x->id] = x;
  m->val[x->id] = v;
  return true;
}

static int module_ids(const IrInstr *x) { return x && x->parent && x->parent->module ? x->parent->module->next_id : 0; }

/* The instructions a hero search has queued, by instruction id with a stamp per search, so the
 * search stays linear in what it visits. Two instructions with one id (never in one module)
 * would fall back to a scan of the queue. */
static _Thread_local struct {
  const IrInstr **who;
  unsigned *stamp;
  int n;
  unsigned now;
} queued;

/* Starts a search; false when out of memory (the caller then scans). */
static bool queued_begin(const IrInstr *c, const IrInstr *p) {
  int need = c->parent && c->parent->module ? c->parent->module->next_id : 0;
  if (p && p->parent && p->parent->module && p->parent->module->next_id > need) need = p->parent->module->next_id;
  if (need > queued.n) {
    int nn = queued.n ? queued.n : 1024;
    while (nn < need) nn *= 2;
    const IrInstr **w = fx_realloc(queued.who, sizeof *w * (size_t)nn);
    if (w) queued.who = w;
    unsigned *st = w ? fx_realloc(queued.stamp, sizeof *st * (size_t)nn) : NULL;
    if (!st) return false;
    queued.stamp = st;
    memset(st + queued.n, 0, sizeof *st * (size_t)(nn - queued.n));
    queued.n = nn;
  }
  if (++queued.now == 0) { /* wrapped: old stamps could match again */
    memset(queued.stamp, 0, sizeof *queued.stamp * (size_t)queued.n);
    queued.now = 1;
  }
  return true;
}

/* Whether x is queued already (1), not (0), or unknown (-1: its id slot holds another). */
static int queued_has(const IrInstr *x) {
  if (x->id < 0 || x->id >= queued.n) return -1;
  if (queued.stamp[x->id] != queued.now) return 0;
  return queued.who[x->id] == x ? 1 : -1;
}

static void queued_add(const IrInstr *x) {
  if (x->id < 0 || x->id >= queued.n || queued.stamp[x->id] == queued.now) return;
  queued.stamp[x->id] = queued.now;
  queued.who[x->id] = x;
}

/* FindNonTrivialHero's two searches in one walk: the one tiled transpose (*t) and the one
 * concatenate (*cat) reachable from h through intermediates of up to 3 operands (breadth first, not
 * past a match); NULL where there is none or there are two. Neither kind is an intermediate (a
 * concatenate never is; a tiled transpose's normalized form has two dimensions or more, an
 * intermediate transpose's at most one), so both searches visit the same instructions. Out of
 * memory, both are NULL. */
static void find_unique_heroes(const IrInstr *h, const PairBodies *b, const IrInstr **t, const IrInstr **cat) {
  const IrInstr *stack_buf[256];
  const IrInstr **queue = stack_buf;
  int cap = 256, head = 0, tail = 0;
  const IrInstr *ft = NULL, *fc = NULL;
  bool multi_t = false, multi_c = false, ok = true;
  bool stamps = queued_begin(b->c, b->p);
  queue[tail++] = h;
  if (stamps) queued_add(h);
  while (head < tail && ok && !(multi_t && multi_c)) {
    const IrInstr *x = queue[head++];
    bool mt = tiled_transpose(x, NULL), mc = x->op == IR_OP_CONCATENATE;
    if (mt) {
      if (ft && ft != x) multi_t = true;
      ft = x;
    }
    if (mc) {
      if (fc && fc != x) multi_c = true;
      fc = x;
    }
    if (mt || mc || !intermediate(x, 3)) continue;
    for (int k = 0; k < x->noperands; k++) {
      const IrInstr *o = fused_operand(x, k, b);
      if (!o) continue;
      int has = stamps ? queued_has(o) : -1;
      bool seen = has == 1;
      for (int q = 0; has < 0 && q < tail && !seen; q++) seen = queue[q] == o;
      if (seen) continue;
      if (tail == cap) {
        const IrInstr **nq = fx_malloc(sizeof *nq * (size_t)cap * 2);
        if (!nq) {
          ok = false;
          break;
        }
        memcpy(nq, queue, sizeof *nq * (size_t)tail);
        if (queue != stack_buf) fx_free(queue);
        queue = nq;
        cap *= 2;
      }
      queue[tail++] = o;
      if (stamps) queued_add(o);
    }
  }
  if (queue != stack_buf) fx_free(queue);
  *t = ok && !multi_t ? ft : NULL;
  *cat = ok && !multi_c ? fc : NULL;
}

/* FindNonTrivialHero: up the chain of single-operand intermediates; then a unique tiled transpose
 * or concatenate through elementwise ops of up to 3 operands (the shared-memory transpose and
 * concatenate emitters take those); a reduce at the end of the chain; else the root itself. */
static const IrInstr *find_hero(const IrInstr *root, const IrInstr *c, const IrInstr *p) {
  PairBodies b = pair_bodies(c, p);
  const IrInstr *h = root;
  for (int guard = 0; guard < 100000 && intermediate(h, 1); guard++) {
    const IrInstr *o = fused_operand(h, 0, &b);
    if (!o) break;
    h = o;
  }
  const IrInstr *t, *cat;
  find_unique_heroes(h, &b, &t, &cat);
  if (t) return t;
  if (cat) return cat;
  return h->op == IR_OP_REDUCE ? h : root;
}

/* Whether the fusion of p into c (p may be NULL: c alone) is a reduction fusion in XLA's
 * HloFusionAnalysis: some root's hero, found through single-operand elementwise ops and bitcasts,
 * is a reduction from or to contiguous dimensions. */
/* The heroes of the fusion of p into c (p may be NULL): each root of c, followed into p where
 * it is p's output, then up through single-operand elementwise ops and bitcasts across both
 * bodies (HloFusionAnalysis's FindNonTrivialHero on the producer-consumer fusion). */
static int pair_heroes_found(const IrInstr *c, const IrInstr *p, const IrInstr **out, int max);

/* While a caller that changes nothing holds it open (fusion_memo_open), the heroes of each pair
 * asked about are kept: one evaluation asks for the same pair's heroes a dozen times (launch,
 * emitter, coalescing, CanFuse), and each search may walk a large body. */
#define HERO_MEMO 32
static _Thread_local struct {
  int depth, n;
  struct {
    const IrInstr *c, *p;
    int m;
    const IrInstr *h[64];
  } e[HERO_MEMO];
} hero_memo;

void fusion_memo_open(void) { hero_memo.depth++; }

static void tiling_memo_clear(void);

void fusion_memo_close(void) {
  if (hero_memo.depth > 0 && --hero_memo.depth == 0) {
    hero_memo.n = 0;
    tiling_memo_clear();
  }
}

static int pair_heroes(const IrInstr *c, const IrInstr *p, const IrInstr **out, int max) {
  if (hero_memo.depth <= 0 || max != 64) return pair_heroes_found(c, p, out, max);
  int used = hero_memo.n < HERO_MEMO ? hero_memo.n : HERO_MEMO;
  for (int k = 0; k < used; k++)
    if (hero_memo.e[k].c == c && hero_memo.e[k].p == p) {
      memcpy(out, hero_memo.e[k].h, sizeof *out * (size_t)hero_memo.e[k].m);
      return hero_memo.e[k].m;
    }
  int m = pair_heroes_found(c, p, out, max);
  int slot = hero_memo.n++ % HERO_MEMO; /* the oldest goes when full */
  hero_memo.e[slot].c = c;
  hero_memo.e[slot].p = p;
  hero_memo.e[slot].m = m;
  memcpy(hero_memo.e[slot].h, out, sizeof *out * (size_t)m);
  return m;
}

static int pair_heroes_found(const IrInstr *c, const IrInstr *p, const IrInstr **out, int max) {
  const IrInstr *r = fusion_fused_root(c);
  const IrInstr *roots[64];
  int n = 0;
  if (r->op == IR_OP_TUPLE && c->op == IR_OP_FUSION)
    for (int k = 0; k < r->noperands && n < 64; k++) roots[n++] = r->operands[k];
  else
    roots[n++] = r;
  int m = 0;
  for (int k = 0; k < n && m < max; k++) {
    const IrInstr *h = roots[k];
    if (h->op == IR_OP_PARAMETER && c->op == IR_OP_FUSION && p && h->param_number >= 0 &&
        h->param_number < c->noperands && c->operands[h->param_number] == p)
      h = fusion_fused_root(p);
    out[m++] = find_hero(h, c, p);
  }
  return m;
}

bool fusion_reduction_emitter(const IrInstr *c, const IrInstr *p) {
  const IrInstr *h[64];
  int n = pair_heroes(c, p, h, 64);
  for (int k = 0; k < n; k++)
    if (fusion_contiguous_reduce(h[k])) return true;
  return false;
}

/* Whether the fusion of p into c would get XLA's transpose emitter: no reduction hero, and a hero
 * that is a tiled transpose. */
static bool pair_transpose_emitter(const IrInstr *c, const IrInstr *p) {
  if (fusion_reduction_emitter(c, p)) return false;
  const IrInstr *h[64];
  int n = pair_heroes(c, p, h, 64);
  for (int k = 0; k < n; k++)
    if (fusion_tiled_transpose(h[k])) return true;
  return false;
}

/* The first dimension, minor to major, that is not of size 1 (default layout when none). */
static int first_nonunit_minor(const IrShape *s) {
  for (int k = 0; k < s->rank; k++) {
    int d = s->has_layout && s->minor_to_major ? s->minor_to_major[k] : s->rank - 1 - k;
    if (s->dims[d] != 1) return d;
  }
  return -1;
}

/* TransposesMinorDimension: a transpose or copy that changes which dimension is minor (unit
 * dimensions aside). */
static bool transposes_minor(const IrInstr *x) {
  if (x->noperands < 1) return false;
  const IrShape *in = &x->operands[0]->shape, *out = &x->shape;
  if (x->op == IR_OP_COPY) return ir_shape_is_array(in) && first_nonunit_minor(in) != first_nonunit_minor(out);
  if (x->op != IR_OP_TRANSPOSE) return false;
  int64_t perm[IR_MAX_RANK];
  int n = ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK);
  int o = first_nonunit_minor(out);
  if (n != out->rank || o < 0) return false;
  return perm[o] != first_nonunit_minor(in);
}

/* IsReadCoalescedHeuristic's is_broadcast: the transposed value is a broadcast or an iota,
 * through bitcasts and elementwise ops. */
static bool from_broadcast(const IrInstr *x) {
  for (int guard = 0; guard < 100000; guard++) {
    if (x->op == IR_OP_BROADCAST || x->op == IR_OP_IOTA) return true;
    if (x->noperands != 1 || (x->op != IR_OP_BITCAST && !ir_op_is_elementwise(x->op))) return false;
    x = x->operands[0];
  }
  return false;
}

static bool bad_transpose(const IrInstr *i) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  int n = fc ? fc->ninstrs : 1;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = fc ? fc->instrs[k] : i;
    if (transposes_minor(x) && !from_broadcast(x->operands[0])) return true;
  }
  return false;
}

/* IsReadCoalescedHeuristic: a transpose of the minor dimension outside the transpose emitter, or
 * two row reductions fused together, break coalescing (p may be NULL: c alone). */
static bool reads_coalesced(const IrInstr *c, const IrInstr *p) {
  if (!(p ? pair_transpose_emitter(c, p) : fusion_emitter_kind(c) == FUSION_EMITTER_TRANSPOSE)) {
    if (bad_transpose(c) || (p && bad_transpose(p))) return false;
  }
  if (p && fusion_reduction_emitter(c, p) && fusion_reduction_emitter(p, NULL) && fusion_reduction_emitter(c, NULL))
    return false;
  return true;
}

bool fusion_reads(const IrInstr *p, const IrInstr *x) {
  for (int k = 0; k < p->noperands; k++)
    if (p->operands[k] == x) return true;
  return false;
}

#define MEMORY_COMPUTE_PARALLELISM 0.95
/* DeviceDescription's dram_to_l2_transaction_size_bytes (the target configs leave it out). */
#define DRAM_TO_L2_TRANSACTION_BYTES 64.0

static bool launches(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_BITCAST: return false;
  default: return true;
  }
}


/* What XLA's emitter iterates over for i (with producer p fused in, when p is given): fills the
 * root h it writes and returns the hero that sets the launch (a reduction through p included). */
static const IrInstr *launch_hero(const IrInstr *i, const IrInstr *p, const IrInstr **h) {
  const IrInstr *r = fusion_fused_root(i);
  *h = r->op == IR_OP_TUPLE && r->noperands ? r->operands[0] : r;
  const IrInstr *heroes[64];
  const IrInstr *hero = pair_heroes(i, p, heroes, 64) > 0 ? heroes[0] : *h;
  if (p && !fusion_contiguous_reduce(hero) && fusion_reduction_emitter(i, p)) {
    const IrInstr *ph = fusion_hero(fusion_fused_root(p));
    if (fusion_contiguous_reduce(ph)) hero = ph;
  }
  return hero;
}

static bool tiled_transpose(const IrInstr *x, int64_t *blocks);

typedef struct {
  int64_t blocks, threads;
} Launch;

/* CalculateLaunchDimensions: 128 threads a block, each thread unrolled over `unroll` elements
 * (ComputeLoopFusionConfig, gpu_fusible.c); one thread for a single element. */
static Launch loop_launch(int64_t e, int unroll) {
  Launch l = {1, 1};
  if (e <= 1) return l;
  if (unroll < 1) unroll = 1;
  int64_t n = (e + unroll - 1) / unroll;
  l.threads = n < 128 ? n : 128;
  l.blocks = (n + l.threads - 1) / l.threads;
  return l;
}

/* GetReductionKindAndContiguousComponents: the reduce's input as three extents, minor last:
 * a row reduction (the minor-most dimension reduced) is {major reduced, kept, minor reduced}, a
 * column reduction {major kept, reduced, minor kept}. Unit dimensions do not count. */
static bool reduction_shape_runs(const IrInstr *r, int64_t out[3], int *nruns);
static bool reduction_shape(const IrInstr *r, int64_t out[3]) {
  int n;
  return reduction_shape_runs(r, out, &n);
}

static bool reduction_shape_runs(const IrInstr *r, int64_t out[3], int *nruns) {
  const IrShape *in = &r->operands[0]->shape;
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(r, "dimensions", dims, IR_MAX_RANK);
  bool reduced[IR_MAX_RANK] = {0};
  for (int k = 0; k < nd; k++)
    if (dims[k] >= 0 && dims[k] < in->rank) reduced[dims[k]] = true;
  int64_t runs[3] = {1, 1, 1}; /* minor run first */
  int run = -1, last = -1;
  bool row = true, first = true;
  for (int k = 0; k < in->rank; k++) {
    int d = in->has_layout && in->minor_to_major ? in->minor_to_major[k] : in->rank - 1 - k;
    if (d < 0 || d >= in->rank || in->dims[d] == 1) continue;
    int r2 = reduced[d] ? 1 : 0;
    if (first) {
      row = r2 == 1;
      first = false;
    }
    if (r2 != last) {
      run++;
      last = r2;
    }
    if (run < 3) runs[run] *= in->dims[d];
  }
  out[0] = runs[2];
  out[1] = runs[1];
  out[2] = runs[0];
  *nruns = run + 1;
  return row;
}

/* GetVectorSizeForMlir: 2 elements a load for 32-bit inputs, up to 4 for narrower ones, when the
 * minor extent is even and every thread keeps work. */
static int reduction_vector(int64_t minor, int64_t threads, int in_bits) {
  if (minor % 2 != 0 || threads * 2 > minor) return 1;
  if (in_bits >= 32) return 2;
  if (threads * 4 > minor) return 2;
  return minor % 4 == 0 ? 4 : 2;
}

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : a; }

/* The launch of XLA's reduction emitters (CreateReductionFusion): multi-row for short
 * power-of-two rows, else row (16 reduced elements a thread, up to 1024 threads a row, rows packed
 * to 256 threads a block); small column when the minor kept extent divides a warp, else column
 * (32x32 threads, each block 32 x vector columns). */
static Launch reduction_launch(const DeviceProfile *d, const IrInstr *r, int bits, int out_bits) {
  int64_t s[3];
  bool row = reduction_shape(r, s);
  if (bits == INT_MAX) bits = out_bits; /* a fusion without inputs */
  if (bits <= 0 || bits == INT_MAX) bits = 32;
  if (out_bits <= 0 || out_bits == INT_MAX) out_bits = bits;
  int sms = d && d->sm_count > 0 ? d->sm_count : 1;
  Launch l;
  if (row) {
    int64_t minor = s[2], kept = s[1];
    if (minor > 0 && (minor & (minor - 1)) == 0) {
      /* MultiRowReductionFusion::TryCreate */
      int small = bits < out_bits ? bits : out_bits, large = bits > out_bits ? bits : out_bits;
      int64_t v = minor < 64 / small ? minor : 64 / small;
      if (large >= 32 && 128 / large < v) v = 128 / large;
      if (v < 1) v = 1;
      if (minor <= 32 * v) {
        for (;;) {
          int64_t tr = minor / v, tk = kept * tr <= 256 ? kept : 256 / tr;
          if (v <= 1 || ceil_div(kept, tk) >= sms) break;
          v /= 2;
        }
        if (minor <= 32 * v) {
          int64_t tr = minor / v, tk = kept * tr <= 256 ? kept : 256 / tr;
          if (tk < 1) tk = 1;
          l.blocks = ceil_div(kept, tk);
          l.threads = tk * tr;
          return l;
        }
      }
    }
    int64_t tr = ((ceil_div(minor, 16) + 31) / 32) * 32;
    if (tr > 1024) tr = 1024;
    int64_t tk = 1;
    if (tr * 2 <= 256) tk = kept * tr <= 256 ? kept : 256 / tr;
    int v = reduction_vector(minor, tr, bits);
    int64_t in2 = minor / v, tile = 16 / v < ceil_div(in2, tr) ? 16 / v : ceil_div(in2, tr);
    if (tile < 1) tile = 1;
    l.blocks = ceil_div(kept, tk) * ceil_div(in2, tile * tr);
    l.threads = tk * tr;
    return l;
  }
  int64_t major = s[0], minor = s[2];
  if (minor > 0 && 32 % minor == 0) {
    /* SmallColumnReductionFusion */
    int v = reduction_vector(s[1] * s[2], 32, bits);
    int64_t threads = 128, shared = v * threads / minor;
    while (shared > 32 && v > 1) {
      v /= 2;
      shared /= 2;
    }
    if (shared > 32) threads /= shared / 32;
    l.blocks = major;
    l.threads = threads;
    return l;
  }
  int v = reduction_vector(minor, 32, bits);
  l.blocks = major * ceil_div(minor, 32 * v);
  l.threads = 1024;
  return l;
}

/* SmallestBitWidth of a shape's elements (a tuple's arrays; PRED counts 8 bits), folded into *bits. */
static void smallest_bits(const IrShape *sh, int *bits) {
  if (sh->type == IR_TUPLE) {
    for (int k = 0; k < sh->ntuple; k++) smallest_bits(&sh->tuple[k], bits);
    return;
  }
  int b = 8 * ir_type_bytes(sh->type);
  if (b > 0 && b < *bits) *bits = b;
}

/* HloFusionAnalysis's InputOutputInfo for i with producer p fused in (p NULL: i alone): the
 * smallest element width among the kernel's inputs (its parameters: the operands of p and of i,
 * less p) and among its outputs (the roots). INT_MAX when there are none. */
static void io_bits(const IrInstr *i, const IrInstr *p, int *in_bits, int *out_bits) {
  *in_bits = *out_bits = INT_MAX;
  for (int k = 0; k < i->noperands; k++)
    if (i->operands[k] != p) smallest_bits(&i->operands[k]->shape, in_bits);
  for (int k = 0; p && k < p->noperands; k++) smallest_bits(&p->operands[k]->shape, in_bits);
  const IrInstr *r = fusion_fused_root(i);
  if (r->op == IR_OP_TUPLE)
    for (int k = 0; k < r->noperands; k++) smallest_bits(&r->operands[k]->shape, out_bits);
  else
    smallest_bits(&r->shape, out_bits);
}

/* The launch XLA's emitter would pick for i (with producer p fused in, when p is given):
 * a reduction's threads each sum some 32 inputs (a small reduction runs in one block); the
 * transpose emitter a block of 128 threads per 32x32 tile of the two swapped minor dimensions; the
 * concatenate emitter runs over its largest operand; the in-place dynamic-update-slice emitter over
 * the update; the loop emitter over the output (EstimateFusionLaunchDimensions). */
static Launch launch_dims(const DeviceProfile *d, const IrInstr *i, const IrInstr *p) {
  const IrInstr *h;
  const IrInstr *hero = launch_hero(i, p, &h);
  if (fusion_contiguous_reduce(hero) && hero->noperands) {
    /* The reduction emitters vectorize by the kernel's narrowest input (GetVectorSizeForMlir),
     * the multi-row one by its narrowest input and output. */
    int in_bits, out_bits;
    io_bits(i, p, &in_bits, &out_bits);
    return reduction_launch(d, hero, in_bits, out_bits);
  }
  if (p ? pair_transpose_emitter(i, p) : fusion_emitter_kind(i) == FUSION_EMITTER_TRANSPOSE) {
    const IrInstr *t[64];
    Launch l;
    int n = pair_heroes(i, p, t, 64);
    for (int k = 0; k < n; k++)
      if (tiled_transpose(t[k], &l.blocks)) {
        l.threads = 128;
        return l;
      }
  }
  /* IsDynamicUpdateSliceFusion: a root that is a dynamic-update-slice, or a bitcast of one. */
  const IrInstr *dus = h;
  if (dus->op == IR_OP_BITCAST && dus->noperands == 1) {
    dus = dus->operands[0];
    if (dus->op == IR_OP_PARAMETER && i->op == IR_OP_FUSION && dus->param_number >= 0 && dus->param_number < i->noperands)
      dus = i->operands[dus->param_number];
    if (p && dus == p) dus = fusion_fused_root(p);
  }
  if (dus->op == IR_OP_DYNAMIC_UPDATE_SLICE && dus->noperands > 1)
    return loop_launch(ir_shape_elements(&dus->operands[1]->shape), 1);
  if (h->op == IR_OP_SCATTER && h->noperands >= 3) /* the scatter emitter runs over the updates */
    return loop_launch(ir_shape_elements(&h->operands[h->noperands - 1]->shape), 1);
  if (hero->op == IR_OP_CONCATENATE && hero->noperands <= 4 && !(i->op == IR_OP_FUSION && fusion_fused_root(i)->op == IR_OP_TUPLE)) {
    /* UseConcatenateFusion: one concatenate hero of at most 4 operands. */
    h = hero;
    int64_t largest = 0;
    for (int k = 0; k < h->noperands; k++) {
      int64_t e = ir_shape_elements(&h->operands[k]->shape);
      largest = e > largest ? e : largest;
    }
    return loop_launch(largest, fusion_loop_unroll(d, 0, i, p, largest));
  }
  int64_t e = ir_shape_is_array(&h->shape) ? ir_shape_elements(&h->shape) : 1;
  return loop_launch(e, fusion_loop_unroll(d, 0, i, p, e));
}

static int64_t launch_blocks(const DeviceProfile *d, const IrInstr *i, const IrInstr *p) { return launch_dims(d, i, p).blocks; }

/* ---------- absl::Duration and the float arithmetic of XLA's cost model ----------
 *
 * XLA keeps every time as an absl::Duration, a whole number of quarter nanoseconds (ticks), and
 * computes bandwidths and ratios in float (GpuPerformanceModelBase: AdjustBandwidth, ReadTime*,
 * WriteTime, ComputeTime). Priority fusion breaks ties among equal priorities by instruction id,
 * so a time one tick off reorders the queue: each piece is computed here with XLA's own types and
 * roundings, and handed on as microseconds that are exact multiples of a tick. */
#define TICKS_PER_SECOND 4000000000LL

static double ticks_us(int64_t t) { return (double)t / 4000.0; }
static int64_t us_ticks(double us) { return llround(us * 4000.0); }

/* absl::Seconds(double) of a non-negative time (MakePosDoubleDuration): whole seconds, then the
 * fraction rounded to the nearest tick. */
static int64_t seconds_ticks(double s) {
  if (!(s >= 0) || !isfinite(s)) return s > 0 ? INT64_MAX / 2 : 0;
  if (s >= 9.0e9) return INT64_MAX / 2;
  int64_t secs = (int64_t)s;
  return secs * TICKS_PER_SECOND + (int64_t)round((s - (double)secs) * (double)TICKS_PER_SECOND);
}

/* absl::Duration * double (ScaleDouble<std::multiplies>): seconds and ticks scaled apart, the
 * fraction carried down and rounded to the nearest tick. */
static int64_t ticks_scale(int64_t t, double r) {
  if (t <= 0 || !(r >= 0) || !isfinite(r)) return 0;
  double hi_int, lo_int;
  double hi_frac = modf((double)(t / TICKS_PER_SECOND) * r, &hi_int);
  double lo = (double)(t % TICKS_PER_SECOND) * r / (double)TICKS_PER_SECOND + hi_frac;
  double lo_frac = modf(lo, &lo_int);
  return ((int64_t)hi_int + (int64_t)lo_int) * TICKS_PER_SECOND + (int64_t)round(lo_frac * (double)TICKS_PER_SECOND);
}

/* DeviceDescription's numbers with their types: memory_bandwidth() an int64 of bytes a second,
 * clock_rate_ghz() a float. */
static int64_t dram_bytes_per_s(const DeviceProfile *d) { return llround((d && d->dram_gbps > 0 ? d->dram_gbps : 1000.0) * 1e9); }
static float clock_ghz_f(const DeviceProfile *d) { return (float)(d && d->clock_ghz > 0 ? d->clock_ghz : 1.0); }

/* CalculateEffectiveFlopsPerNs: each busy lane does clock x 2 flops a nanosecond (the float
 * clock doubled, widened to double, times the lanes, cut to an integer). */
static int64_t flops_per_ns(const DeviceProfile *d, int64_t threads, int64_t blocks) {
  int fpus = d && d->fpus_per_sm > 0 ? d->fpus_per_sm : 128;
  int sms = d && d->sm_count > 0 ? d->sm_count : 1;
  int64_t lanes = (threads < fpus ? threads : fpus) * (blocks < sms ? blocks : sms);
  double per_fpu = (double)(clock_ghz_f(d) * 2.0f);
  int64_t per_ns = (int64_t)(per_fpu * (double)lanes);
  return per_ns < 1 ? 1 : per_ns;
}

/* ComputeTime: absl::Nanoseconds(1.0f * flops / flops_per_ns), a float quotient scaling one
 * nanosecond. */
static double compute_ticks_us(double flops, int64_t per_ns) {
  if (flops <= 0) return 0;
  float r = (float)(int64_t)flops / (float)per_ns;
  return ticks_us(ticks_scale(4, (double)r));
}

/* ComputeTime with the launch XLA's emitter picks: a small kernel keeps few lanes busy. */
static double compute_us(const DeviceProfile *d, const IrInstr *i, const IrInstr *p, double flops) {
  if (flops <= 0) return 0;
  Launch l = launch_dims(d, i, p);
  return compute_ticks_us(flops, flops_per_ns(d, l.threads, l.blocks));
}

/* CombineComputeAndMemoryAccessTime: compute and memory overlap, but not perfectly
 * (kMemoryComputeParallelism of the shorter one is hidden). */
static double combine(double compute, double memory) {
  int64_t c = us_ticks(compute), m = us_ticks(memory);
  return ticks_us(c + m - ticks_scale(c < m ? c : m, MEMORY_COMPUTE_PARALLELISM));
}

/* AdjustBandwidth: a kernel of few blocks cannot use the whole memory system; each block moves at
 * most 32 bytes a clock. In float, as XLA. */
static float adjust_bw(const DeviceProfile *d, float bw, int64_t blocks) {
  float per_block = clock_ghz_f(d) * 1.0e9f * 32.0f;
  float max_bw = (float)blocks * per_block;
  return bw < max_bw ? bw : max_bw;
}

/* WriteTime: absl::Seconds(1.0f * bytes / memory_bandwidth), in float. */
static double write_us_at(double bytes, int64_t bytes_per_s) {
  return ticks_us(seconds_ticks((double)((float)(int64_t)bytes / (float)bytes_per_s)));
}
static double write_time_us(const DeviceProfile *d, double bytes) { return write_us_at(bytes, dram_bytes_per_s(d)); }

/* ReadTimeWithDRAMHeuristic: the first read of an operand comes from DRAM; re-reads (a broadcast
 * or a slice read by many threads) come from L2 (2.5x) or L1 (another 8x) when the operand fits.
 * An uncoalesced read uses one element of each DRAM-to-L2 transaction
 * (GetCoalescingUtilizationRate), for the first read and for re-reads that miss L2. */
static double read_us_rate(const DeviceProfile *d, int64_t blocks, double net, double total, double rate);

static double read_us(const DeviceProfile *d, int64_t blocks, double net, double total, const IrInstr *op, bool coalesced) {
  double rate = 1;
  if (!coalesced) {
    int elem = op && ir_shape_is_array(&op->shape) ? ir_type_bytes(op->shape.type) : 4;
    rate = (double)(elem > 0 ? elem : 4) / DRAM_TO_L2_TRANSACTION_BYTES;
  }
  return read_us_rate(d, blocks, net, total, rate);
}

/* ReadTimeWithDRAMHeuristic with its hbm_bandwidth_utilization_rate: bandwidths in float, the
 * byte counts int64, each quotient a float. */
static double read_us_rate(const DeviceProfile *d, int64_t blocks, double net, double total, double rate) {
  int64_t bw = dram_bytes_per_s(d);
  int64_t n_net = (int64_t)net, n_total = (int64_t)total;
  float dram_bw = (float)((double)bw * rate);
  float rest_bw = (float)bw;
  if (d && d->l2_cache_bytes > 0 && n_net < (int64_t)d->l2_cache_bytes) {
    rest_bw *= 2.5f; /* kL2CacheSpeedup */
    if (d->l1_cache_bytes_per_sm > 0 && n_net < (int64_t)d->l1_cache_bytes_per_sm * d->sm_count) rest_bw *= 8.0f; /* kL1CacheSpeedup */
  } else {
    rest_bw = (float)((double)rest_bw * rate);
  }
  dram_bw = adjust_bw(d, dram_bw, blocks);
  rest_bw = adjust_bw(d, rest_bw, blocks);
  int64_t first = n_net < n_total ? n_net : n_total;
  return ticks_us(seconds_ticks((double)((float)first / dram_bw)) +
                  seconds_ticks((double)((float)(n_total - first) / rest_bw)));
}

static double operand_size(const IrInstr *op) { return (double)ir_shape_bytes(&op->shape); }

/* ---------- the estimate cache (XLA's GpuPerformanceModelCache) ----------
 *
 * Priority fusion asks for the cost analysis of a producer and of each of its users several
 * times per evaluation (its time, each fused pair, each IR size), and evaluates the same
 * instructions again after every fusion next to them; a fusion's analysis walks its whole body.
 * While a pass holds the cache open, the analysis of each instruction and the estimate of each
 * fusion are kept by instruction id. An analysis depends on the instruction (a fusion's body and
 * kind included) and its operands' shapes only, and so does a fusion's estimate (heroes,
 * coalescing and launch dimensions are found inside the body), so the pass that mutates the IR
 * must forget every instruction a mutation touches, and their users (perf_cache_forget; a user
 * that is no fusion only when the shape of its operand changed: its analysis reads nothing else
 * of its operands, and its estimate is not kept); as a second guard an entry is also dropped
 * when its body, root, or operand and parameter counts differ from when it was made. A lone
 * instruction's estimate is not kept: its coalescing check looks along its operands' operands.
 * FXPLAIN_PERF_CACHE_CHECK=1 recomputes every hit and aborts on a difference (for tests). */

typedef struct {
  const IrInstr *instr;
  const IrComputation *body; /* signature: what the entry was made from */
  const IrInstr *root;
  int ninstrs, nparams, noperands;
  const DeviceProfile *cost_d, *est_d;
  bool have_cost, have_est;
  HloCost cost;
  PerfEstimate est;
  bool have_fact[PERF_NFACTS];
  int64_t fact[PERF_NFACTS];
  bool have_ir_size;
  double ir_size; /* fusion_ir_size's sum over the body */
} CacheEntry;

static _Thread_local struct {
  int depth;       /* open when > 0 */
  CacheEntry **by_id;
  int n;
  int check;       /* -1: not read yet */
  /* The device of the last analysis asked for one: an analysis asked for any device is made for
   * it, so that the estimates asking next for that device find it kept. */
  const DeviceProfile *last_d;
  bool have_last_d;
} cache = {0, NULL, 0, -1, NULL, false};

void perf_cache_open(void) {
  if (cache.check < 0) {
    const char *v = getenv("FXPLAIN_PERF_CACHE_CHECK");
    cache.check = v && *v && *v != '0';
  }
  cache.depth++;
}

static void entry_clear(CacheEntry *e) {
  if (e->have_cost) hlo_cost_free(&e->cost);
  memset(e, 0, sizeof *e);
}

void perf_cache_close(void) {
  if (cache.depth <= 0 || --cache.depth > 0) return;
  for (int k = 0; k < cache.n; k++)
    if (cache.by_id[k]) {
      entry_clear(cache.by_id[k]);
      fx_free(cache.by_id[k]);
    }
  fx_free(cache.by_id);
  cache.by_id = NULL;
  cache.n = 0;
  cache.last_d = NULL;
  cache.have_last_d = false;
}

void perf_cache_forget(const IrInstr *i) {
  /* An entry already forgotten (instr NULL) is all zeros: nothing to clear. */
  if (i && cache.depth > 0 && i->id >= 0 && i->id < cache.n && cache.by_id[i->id] && cache.by_id[i->id]->instr)
    entry_clear(cache.by_id[i->id]);
}

/* The entry of fusion i, emptied when it no longer matches i; NULL when the cache is closed, i
 * is no fusion or memory runs out (the caller then computes without it). Entries never move. */
static CacheEntry *cache_entry(const IrInstr *i) {
  if (cache.depth <= 0 || i->id < 0) return NULL;
  const IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  if (i->op == IR_OP_FUSION && !fc) return NULL;
  if (i->id >= cache.n) {
    int nn = cache.n ? cache.n : 1024;
    while (nn <= i->id) nn *= 2;
    CacheEntry **g = fx_realloc(cache.by_id, sizeof *g * (size_t)nn);
    if (!g) return NULL;
    memset(g + cache.n, 0, sizeof *g * (size_t)(nn - cache.n));
    cache.by_id = g;
    cache.n = nn;
  }
  CacheEntry *e = cache.by_id[i->id];
  if (!e) {
    e = fx_calloc(1, sizeof *e);
    if (!e) return NULL;
    cache.by_id[i->id] = e;
  }
  const IrInstr *root = fc ? fc->root : NULL;
  int ninstrs = fc ? fc->ninstrs : 0, nparams = fc ? fc->nparams : 0;
  if (e->instr != i || e->body != fc || e->root != root || e->ninstrs != ninstrs || e->nparams != nparams ||
      e->noperands != i->noperands) {
    entry_clear(e);
    e->instr = i;
    e->body = fc;
    e->root = root;
    e->ninstrs = ninstrs;
    e->nparams = nparams;
    e->noperands = i->noperands;
  }
  return e;
}

int64_t perf_cache_fact(const IrInstr *i, PerfFact f, int64_t (*compute)(const IrInstr *)) {
  CacheEntry *e = i->op == IR_OP_FUSION ? cache_entry(i) : NULL;
  if (e && e->have_fact[f]) {
    if (cache.check && compute(i) != e->fact[f]) {
      fprintf(stderr, "perf cache: stale fusion fact %d of %s\n", (int)f, i->name);
      abort(); /* FXPLAIN_PERF_CACHE_CHECK only */
    }
    return e->fact[f];
  }
  int64_t v = compute(i);
  e = i->op == IR_OP_FUSION ? cache_entry(i) : NULL; /* compute may have asked the cache too */
  if (e) {
    e->fact[f] = v;
    e->have_fact[f] = true;
  }
  return v;
}

static bool same_doubles(const double *a, const double *b, int n) {
  return n <= 0 || (a && b && memcmp(a, b, sizeof(double) * (size_t)n) == 0);
}

/* FXPLAIN_PERF_CACHE_CHECK: a kept analysis must equal a fresh one, bit for bit. */
static void check_cost(const DeviceProfile *d, const IrInstr *i, const HloCost *kept) {
  HloCost fresh;
  bool ok = hlo_cost_analyze(d, i, &fresh);
  int nb = kept->nbody;
  bool same = ok && fresh.nbody == kept->nbody && fresh.flops == kept->flops && fresh.out_bytes == kept->out_bytes && fresh.n == kept->n &&
              fresh.body == kept->body && same_doubles(fresh.op_bytes, kept->op_bytes, kept->n) &&
              same_doubles(fresh.op_util, kept->op_util, kept->n) && same_doubles(fresh.util, kept->util, nb) &&
              same_doubles(fresh.times, kept->times, nb) && same_doubles(fresh.root_util, kept->root_util, nb) &&
              same_doubles(fresh.root_ir, kept->root_ir, nb);
  for (int k = 0; same && k < nb; k++) {
    same = fresh.nroots[k] == kept->nroots[k] &&
           (!fresh.nroots[k] || memcmp(fresh.roots[k], kept->roots[k], sizeof(int) * (size_t)fresh.nroots[k]) == 0);
  }
  hlo_cost_free(&fresh);
  if (ok && !same) {
    fprintf(stderr, "perf cache: stale cost analysis of %s\n", i->name);
    abort(); /* FXPLAIN_PERF_CACHE_CHECK only: a stale entry is a bug in the forgetting */
  }
}

/* The cost analysis of i: the kept one (for fusions while the cache is open; any_device: the
 * caller reads only device-independent parts) or a fresh one in *tmp. NULL on allocation
 * failure. Hand it back with cost_release. */
static const HloCost *cost_get(const DeviceProfile *d, const IrInstr *i, bool any_device, HloCost *tmp) {
  CacheEntry *e = cache_entry(i);
  if (e && e->have_cost && (any_device || e->cost_d == d)) {
    if (cache.check) check_cost(e->cost_d, i, &e->cost);
    return &e->cost;
  }
  /* IR sizes ask first for any device; priority fusion's estimates then ask for its device. */
  if (!any_device) {
    cache.last_d = d;
    cache.have_last_d = true;
  } else if (e && cache.have_last_d) {
    d = cache.last_d;
  }
  if (!hlo_cost_analyze(d, i, tmp)) {
    hlo_cost_free(tmp);
    return NULL;
  }
  if (!e) return tmp;
  if (e->have_cost) hlo_cost_free(&e->cost);
  e->cost = *tmp;
  e->cost_d = d;
  e->have_cost = true;
  memset(tmp, 0, sizeof *tmp);
  return &e->cost;
}

static void cost_release(const HloCost *c, HloCost *tmp) {
  if (c == tmp) hlo_cost_free(tmp);
}

/* EstimateRunTimeForInstruction: every operand slot is read as its cost analysis says (a slot
 * that repeats an operand reads it again, as XLA counts it), the output written once. */
static bool triton_config_estimate(const DeviceProfile *d, const IrInstr *i, PerfEstimate *e);

static void estimate(const DeviceProfile *d, const IrInstr *i, PerfEstimate *e) {
  memset(e, 0, sizeof *e);
  if (!launches(i)) return;
  if (fusion_is_generic_triton(i) && triton_config_estimate(d, i, e)) return;
  HloCost tmp;
  const HloCost *c = cost_get(d, i, false, &tmp);
  if (!c) return;
  e->blocks = launch_blocks(d, i, NULL);
  bool coalesced = reads_coalesced(i, NULL);
  for (int k = 0; k < i->noperands; k++) {
    int first = hlo_cost_operand_index(i, i->operands[k]);
    double total = c->op_bytes[first >= 0 ? first : k];
    double size = operand_size(i->operands[k]);
    e->bytes_read += total;
    e->read_us += read_us(d, e->blocks, total < size ? total : size, total, i->operands[k], coalesced);
  }
  e->bytes_written = c->out_bytes;
  e->write_us = write_time_us(d, e->bytes_written);
  e->flops = c->flops;
  e->compute_us = compute_us(d, i, NULL, e->flops);
  e->exec_us = combine(e->compute_us, e->read_us + e->write_us);
  cost_release(c, &tmp);
}

void perf_estimate(const DeviceProfile *d, const IrInstr *i, PerfEstimate *e) {
  /* Only a fusion's estimate is kept: a lone transpose's coalescing looks up its operand chain. */
  CacheEntry *ce = i->op == IR_OP_FUSION ? cache_entry(i) : NULL;
  if (ce && ce->have_est && ce->est_d == d) {
    *e = ce->est;
    if (cache.check) {
      int saved = cache.depth;
      cache.depth = 0; /* a fresh estimate, the cache out of the way */
      PerfEstimate fresh;
      estimate(d, i, &fresh);
      cache.depth = saved;
      if (memcmp(&fresh, e, sizeof fresh) != 0) {
        fprintf(stderr, "perf cache: stale estimate of %s\n", i->name);
        abort(); /* FXPLAIN_PERF_CACHE_CHECK only */
      }
    }
    return;
  }
  estimate(d, i, e);
  ce = i->op == IR_OP_FUSION ? cache_entry(i) : NULL;
  if (ce && ce->have_cost) { /* the analysis succeeded: the estimate is whole */
    ce->est = *e;
    ce->est_d = d;
    ce->have_est = true;
  }
}

double perf_exec_us(const DeviceProfile *d, const IrInstr *i) {
  PerfEstimate e;
  perf_estimate(d, i, &e);
  return e.exec_us;
}


static bool fused_param(const HloCost *c, int k, const IrInstr **out) {
  *out = c->body && k >= 0 && k < c->body->nparams ? c->body->params[k] : NULL;
  return *out != NULL;
}

/* GetCommonUtilization: how much of operand (producer's slot pk) the producer and the consumer
 * read in common, when the producer reads it elementwise from its root. */
/* kc: the first slot of c reading that operand (-1: c does not), pslot: c's first slot reading
 * the producer (both found by the caller, which knows them already). */
static double common_utilization(const HloCost *pc, int pk, const HloCost *cc, int kc, int pslot) {
  const IrInstr *p = pc->instr, *c = cc->instr;
  if (kc < 0) return 0;
  bool elementwise = ir_op_is_elementwise(p->op);
  const IrInstr *param;
  if (!elementwise && pc->body && fused_param(pc, pk, &param))
    elementwise = hlo_cost_common_elementwise(pc, param, pc->body->root) == 1.0;
  if (!elementwise) return 0;
  if (cc->body) {
    const IrInstr *a, *b;
    if (!fused_param(cc, kc, &a) || !fused_param(cc, pslot, &b)) return 0;
    return hlo_cost_common_elementwise(cc, a, b);
  }
  return ir_op_is_elementwise(c->op) ? 1 : 0;
}

/* EstimateRunTimeForFusion: consumer c with producer p inlined. Each distinct operand of the fused
 * kernel is read as much as the producer reads it times the share of the producer's output c
 * uses, plus what c reads of it directly, less what both read of the same elements
 * (GetSharedOperandBytesAccessed); the kernel computes the producer's flops once per use and
 * writes what c writes. */
double perf_fused_exec_us(const DeviceProfile *d, const IrInstr *p, const IrInstr *c) {
  if ((fusion_is_generic_triton(p) || fusion_is_generic_triton(c)) && c->op != IR_OP_BITCAST) {
    /* CanFuseTriton caches the best tiling's time for the pair (TryFindTopKBestTilingsForFusion),
     * and EstimateRunTimesForPriorityFusion takes it from there. A bitcast user is never judged
     * (CanFuseWithAllNonBitcastUsers passes over it), so no tiled time is kept for it and its fused
     * time is the regular model's, below: a Triton softmax fused into the bitcast that feeds a dot
     * reads its input once per output element there, and XLA keeps such a normalization apart. */
    TritonTiling tt;
    if (fusion_triton_tiling(d, p, c, NULL, &tt) == 1) return tt.best.exec_us;
  }
  fusion_memo_open();
  HloCost ptmp, ctmp;
  const HloCost *pcp = cost_get(d, p, false, &ptmp), *ccp = cost_get(d, c, false, &ctmp);
  double t = 0;
  if (pcp && ccp) {
    const HloCost pc = *pcp, cc = *ccp;
    /* The slots of c that read p (directly, or an element of p's tuple through a
     * get-tuple-element, which only a tuple-shaped p can have), in one walk: the first one's
     * utilization, and the flops below count each (multiply(x, x) computes x twice), their float
     * utilizations summed in slot order. */
    int pk = -1;
    float util_all = 0;
    bool p_tuple = p->shape.type == IR_TUPLE;
    for (int k = 0; k < c->noperands; k++) {
      const IrInstr *o = c->operands[k];
      if (o != p && !(p_tuple && o->op == IR_OP_GET_TUPLE_ELEMENT && o->noperands == 1 && o->operands[0] == p)) continue;
      if (pk < 0 && o == p) pk = k;
      if (k < cc.n) util_all += (float)cc.op_util[k];
    }
    double util = pk >= 0 ? cc.op_util[pk] : 0;
    /* Which slot of c reads an operand of p matters for what c reads of it and for the elements
     * both read: a consumer that reads no byte and is neither a fusion nor elementwise (a root
     * tuple of thousands of outputs) has neither, so its slots are not looked up. */
    bool c_slots = !(cc.reads_nothing && !cc.body && !ir_op_is_elementwise(c->op));
    /* Wide instructions (a root tuple of thousands of outputs) look their operands up by id
     * instead of by scans: the same first slots, the same first 512 distinct operands. */
    static _Thread_local IdMap slot_p, slot_c, seen_ids;
    bool wide = p->noperands + c->noperands > 32;
    if (wide) {
      int need = module_ids(p) > module_ids(c) ? module_ids(p) : module_ids(c);
      wide = idmap_begin(&slot_p, need) && idmap_begin(&slot_c, need) && idmap_begin(&seen_ids, need);
      for (int k = 0; wide && k < p->noperands; k++) wide = idmap_put(&slot_p, p->operands[k], k);
      for (int k = 0; wide && c_slots && k < c->noperands; k++) wide = idmap_put(&slot_c, c->operands[k], k);
    }
    int64_t blocks = launch_blocks(d, c, p);
    bool coalesced = reads_coalesced(c, p);
    double read = 0;
    const IrInstr *seen[512];
    int nseen = 0;
    const IrInstr *both[2] = {p, c};
    for (int s2 = 0; s2 < 2; s2++) {
      const IrInstr *x = both[s2];
      /* A consumer that reads nothing (a root tuple of thousands of outputs) adds no read time for
       * an operand the producer does not read, and every one the producer reads is in `seen`
       * (it had fewer than 512): the walk over its operands would skip each, so it is left out. */
      if (s2 == 1 && cc.reads_nothing && nseen < 512 && isfinite(util) && blocks > 0) break;
      for (int k = 0; k < x->noperands; k++) {
        const IrInstr *op = x->operands[k];
        if (op == p) continue;
        bool dup = false;
        int got = wide ? idmap_get(&seen_ids, op, &(int){0}) : -1;
        if (got < 0)
          for (int j = 0; j < nseen; j++) dup = dup || seen[j] == op;
        else
          dup = got == 1;
        if (dup) continue;
        if (nseen < 512) {
          seen[nseen++] = op;
          if (wide) idmap_put(&seen_ids, op, 1); /* a clash leaves it out: get says -1, a scan decides */
        }
        int kp = -1, kc = -1;
        if (!wide || idmap_get(&slot_p, op, &kp) < 0) kp = hlo_cost_operand_index(p, op);
        if (c_slots && (!wide || idmap_get(&slot_c, op, &kc) < 0)) kc = hlo_cost_operand_index(c, op);
        double by_p = kp >= 0 ? pc.op_bytes[kp] : 0, by_c = kc >= 0 ? cc.op_bytes[kc] : 0;
        double common = kp >= 0 ? common_utilization(&pc, kp, &cc, kc, pk) : 0;
        /* Nothing read (a tuple's operands): the read time is a zero, which leaves the sum as it
         * is, as long as no NaN can come of it (0 x inf, or 0 / 0 bandwidth with no blocks). */
        if (by_p == 0 && by_c == 0 && common == 0 && isfinite(util) && blocks > 0) continue;
        double size = operand_size(op);
        double total = round(by_p * util) + by_c - round(size * common);
        read += read_us(d, blocks, total < size ? total : size, total, op, coalesced);
      }
    }
    double write = write_time_us(d, cc.out_bytes);
    /* CombinedGpuPerformanceModel::EstimateRunTimeForFusionUncached: the producer's flops count
     * once for every operand slot of c that reads it (util_all, above); int64 flops = producer
     * flops x that + consumer flops. */
    double flops = (double)(int64_t)((float)(int64_t)pc.flops * util_all + (float)(int64_t)cc.flops);
    t = combine(compute_us(d, c, p, flops), read + write);
  }
  if (pcp) cost_release(pcp, &ptmp);
  if (ccp) cost_release(ccp, &ctmp);
  fusion_memo_close();
  return t;
}

/* ---------- heroes and emitters (XLA's HloFusionAnalysis) ---------- */

/* FindNonTrivialHero inside the fusion root belongs to (or for a lone instruction). */
const IrInstr *fusion_hero(const IrInstr *root) {
  const IrInstr *c = root->parent && root->parent->fusion_instr ? root->parent->fusion_instr : root;
  return find_hero(root, c, NULL);
}

/* ShapeUtil::GetNormalizedLogicalTransposeShape: x's transpose with unit dimensions dropped and
 * runs of dimensions that stay next to each other merged. Fills the output extents (out order)
 * and, for each, the position of its input run; returns how many (0 when x is no transpose). */
static int normalized_transpose(const IrInstr *x, int64_t *dims, int *perm) {
  if (x->op != IR_OP_TRANSPOSE || x->noperands != 1) return 0;
  int64_t p[IR_MAX_RANK];
  int r = x->shape.rank;
  if (r < 1 || ir_attr_dims(x, "dimensions", p, IR_MAX_RANK) != r) return 0;
  const IrShape *in = &x->operands[0]->shape;
  int rank_of[IR_MAX_RANK], nin = 0;
  for (int d = 0; d < r; d++) rank_of[d] = in->dims[d] != 1 ? nin++ : -1;
  int n = 0, last = -2;
  int64_t group[IR_MAX_RANK];
  for (int k = 0; k < r; k++) {
    if (x->shape.dims[k] == 1 || p[k] < 0 || p[k] >= r) continue;
    int rk = rank_of[p[k]];
    if (rk == last + 1 && n > 0) {
      dims[n - 1] *= x->shape.dims[k];
    } else {
      group[n] = rk;
      dims[n++] = x->shape.dims[k];
    }
    last = rk;
  }
  /* Number the runs by their order in the input. */
  for (int j = 0; j < n; j++) {
    int before = 0;
    for (int q = 0; q < n; q++) before += group[q] < group[j];
    perm[j] = before;
  }
  return n;
}

int fusion_normalized_transpose(const IrInstr *x, int64_t *dims, int *perm) { return normalized_transpose(x, dims, perm); }

static bool big_enough(int64_t a, int64_t b) {
  /* kMinDimensionToTransposeTiled, kMinDimensionToTransposeTiled2, kMinTotalDimensionsToTransposeTiled */
  return (a >= 16 && b >= 16) || (a >= 8 && b >= 8 && a * b >= 64 * 128);
}

/* GetDescriptionForTiledTransposeEmitter: a transpose the shared-memory tiled emitter takes: the
 * minor dimension changes and both the input's and the output's minor runs are large enough, or
 * the minor dimension stays but is at most 64 bits wide and the next ones swap so. *blocks gets
 * its launch: a block of 128 threads per 32x32 tile of the two runs, for every other element. */
static bool tiled_transpose(const IrInstr *x, int64_t *blocks) {
  int64_t d[IR_MAX_RANK];
  int p[IR_MAX_RANK];
  int n = normalized_transpose(x, d, p);
  int64_t b = 0, total = 1, kept = 1;
  for (int k = 0; k < n; k++) total *= d[k];
  int m = n;
  if (n >= 3 && p[n - 1] == n - 1 && d[n - 1] * 8 * ir_type_bytes(x->shape.type) <= 64) {
    kept = d[n - 1];
    m = n - 1;
  }
  if (m >= 2 && p[m - 1] != m - 1) {
    int64_t in_minor = 0, out_minor = d[m - 1];
    for (int k = 0; k < m; k++)
      if (p[k] == m - 1) in_minor = d[k];
    if (in_minor > 0 && big_enough(in_minor, out_minor))
      b = (total / (in_minor * out_minor * kept)) * ((in_minor + 31) / 32) * ((out_minor + 31) / 32);
  }
  if (blocks) *blocks = b;
  return b > 0;
}

bool fusion_tiled_transpose(const IrInstr *x) { return tiled_transpose(x, NULL); }

static int roots_of(const IrInstr *i, const IrInstr **out, int max) {
  const IrInstr *r = fusion_fused_root(i);
  int n = 0;
  if (i->op == IR_OP_FUSION && r->op == IR_OP_TUPLE)
    for (int k = 0; k < r->noperands && n < max; k++) out[n++] = r->operands[k];
  else
    out[n++] = r;
  return n;
}

/* IsReductionFromOrToContiguousDimensions with today's IsUnnestedReductionFasterThanElemental: the
 * reduced (or the kept) dimensions are contiguous, and the reduction emitter beats a loop: a row
 * of at least a warp, or a power of two that divides one (several rows share a warp); a column
 * unless it is short (XLA's sweep of small column reductions). */
bool fusion_contiguous_reduce(const IrInstr *x) {
  if (x->op != IR_OP_REDUCE || x->noperands == 0) return false;
  const IrShape *in = &x->operands[0]->shape;
  if (!ir_shape_is_array(in) || in->rank == 0) return true;
  int64_t d[3];
  int runs;
  bool row = reduction_shape_runs(x, d, &runs);
  if (runs > 3) return false;
  if (row) return d[2] >= 32 || (d[2] > 0 && 32 % d[2] == 0);
  int64_t major = d[1], minor = d[2];
  bool elemental = major < 32 || (major < 64 && minor < 32) || (major < 128 && minor < 8) || (major < 256 && minor < 3);
  return !elemental;
}

/* The emitter of i's body by its roots' heroes (each root's hero searched once). */
static int64_t emitter_by_heroes(const IrInstr *i) {
  const IrInstr *roots[64], *heroes[64];
  int n = roots_of(i, roots, 64);
  for (int k = 0; k < n; k++) heroes[k] = fusion_hero(roots[k]);
  for (int k = 0; k < n; k++)
    if (fusion_contiguous_reduce(heroes[k])) return FUSION_EMITTER_REDUCTION;
  for (int k = 0; k < n; k++)
    if (fusion_tiled_transpose(heroes[k])) return FUSION_EMITTER_TRANSPOSE;
  if (n == 1 && roots[0]->op != IR_OP_TUPLE && heroes[0]->op == IR_OP_CONCATENATE && heroes[0]->noperands <= 4)
    return FUSION_EMITTER_CONCATENATE;
  if (n == 1 && roots[0]->op == IR_OP_SCATTER) return FUSION_EMITTER_SCATTER;
  return FUSION_EMITTER_LOOP;
}

FusionEmitter fusion_emitter_kind(const IrInstr *i) {
  if (i->op == IR_OP_FUSION && kind_is(i, "kCustom")) return FUSION_EMITTER_CUSTOM;
  /* A fusion's is kept with its other facts: every launch estimate asks for it, and each hero
   * search may walk a large body. */
  return (FusionEmitter)(i->op == IR_OP_FUSION ? perf_cache_fact(i, PERF_FACT_EMITTER, emitter_by_heroes)
                                               : emitter_by_heroes(i));
}

/* ---------- IR size (GpuHloCostAnalysis::FusionCalculateUtilizations) ---------- */


/* IrSize from the emission counts of the cost analysis: how many times the emitter writes out
 * each instruction of a fusion's body. */
bool fusion_ir_size(const IrInstr *i, double *size, const IrInstr *param_of, double *param_size) {
  *size = 1;
  if (param_size) *param_size = 1;
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  if (!fc) return true;
  /* Emission counts do not depend on the device: any kept analysis will do. */
  HloCost tmp;
  const HloCost *c = cost_get(NULL, i, true, &tmp);
  if (!c) return false;
  /* The sum over the body is kept with the fusion's analysis: every candidate pair asks it of
   * both sides, and a fusion grows. */
  CacheEntry *e = cache_entry(i);
  if (e && e->have_cost && e->have_ir_size && !cache.check) {
    *size = e->ir_size;
  } else {
    *size = 0;
    for (int k = 0; k < fc->ninstrs; k++) *size += c->times[k];
    if (e && e->have_cost && e->have_ir_size && *size != e->ir_size) {
      fprintf(stderr, "perf cache: stale IR size of %s\n", i->name);
      abort(); /* FXPLAIN_PERF_CACHE_CHECK only */
    }
    if (e && e->have_cost && c == &e->cost) {
      e->ir_size = *size;
      e->have_ir_size = true;
    }
  }
  if (param_of && param_size) {
    double rep = 0;
    for (int o = 0; o < i->noperands && o < fc->nparams; o++)
      if (i->operands[o] == param_of && fc->params[o] && c->param_index[o] >= 0) rep += c->times[c->param_index[o]];
    *param_size = rep > 0 ? rep : 1;
  }
  cost_release(c, &tmp);
  return true;
}

bool fusion_merged_too_large(const IrInstr *p, const IrInstr *c, double *merged) {
  double ps, cs, repl = 1;
  if (!fusion_ir_size(p, &ps, NULL, NULL) || !fusion_ir_size(c, &cs, p, &repl)) {
    *merged = 0;
    return false;
  }
  *merged = ps * repl + cs;
  return *merged > FUSION_MAX_IR_SIZE;
}

/* ---------- Triton tiling (SymbolicTileAnalysis with TritonEmitterConstraints) ----------
 *
 * Priority fusion grows a Triton fusion only when the fused computation can be tiled
 * (PriorityFusionQueue::CanFuseTriton -> GpuPerformanceModelWithIndexingAnalysis::
 * TryFindTopKBestTilingsForFusion): it enumerates the root's tilings (each dimension a power of
 * two below its size, or the whole size: PossibleTileSizesForOneDimension), propagates each from
 * the root to every instruction and operand of the fusion (SymbolicTileAnalysis: an elementwise
 * op takes its user's tile, a reduce the whole of its reduced dimensions, a broadcast and a
 * transpose the tile of the dimensions they map), and keeps a tiling only when every tile, its
 * sizes padded to powers of two (GetPaddedTileSize), fits in registers (DoesTileFitsInRegisters:
 * at most 0.4 x registers_per_block_limit elements; this XLA skips such a tiling, so "found 0
 * valid tiling candidates") and under Triton's limit of 1048576 elements per tensor
 * (TritonEmitterConstraints, kMaxTensorNumElements). With none left: "No valid tilings found".
 * Before that, SymbolicTileAnalysis::AnalyzeFusion must derive a symbolic tile for every
 * instruction: range_walk below follows which indices each instruction is read at and refuses
 * the reshapes and concatenates XLA cannot tile. fxplain follows tile sizes and index ranges, not
 * XLA's affine maps; an op whose tiling it does not model (pad, gather, dot, ...) or a reshape it
 * cannot map ends the analysis with no verdict (the caller then applies no tiling rule). The
 * verdicts and times were checked against jaxlib 0.10.2's XLA (whose TryFindTopKBestTilings-
 * ForFusion, unlike the TryFindBestTilingForFusion of earlier versions, drops a tiling that does
 * not fit in registers instead of timing it as infinite). */

#define TILE_MAX_VISITS 4096
#define TILE_MAX_TILED 384
#define TILE_HASH 1024 /* a power of two above twice TILE_MAX_TILED */

/* One tiled instruction of the fused computation (TiledHloInstruction): inside it, or an operand
 * of the fusion (then x is that operand, outside). */
typedef struct {
  const IrInstr *x;
  bool inside;
  int rank;
  int64_t t[IR_MAX_RANK];
  int64_t padded; /* the tile's elements, each size padded to a power of 2 */
} TiledInstr;

/* What the tiling search asks of an instruction at every tiling (the dimensions attribute of a
 * broadcast, transpose or reduce; the flops per element and the bytes of a fusion operand), read
 * once per search: a search tries up to thousands of tilings of the same instructions. Keyed by
 * instruction, valid for the search stamped `search`; a full table just answers afresh. */
#define TILE_FACTS 1024
typedef struct {
  const IrInstr *x;
  unsigned search;
  bool have_dims, have_per, have_size;
  int ndims;
  int64_t dims[IR_MAX_RANK];
  double per, size;
} TileFact;
static _Thread_local struct {
  unsigned search;
  TileFact e[TILE_FACTS];
} tile_facts;

static void tile_facts_begin(void) {
  if (++tile_facts.search == 0) { /* wrapped: old stamps could match again */
    for (int k = 0; k < TILE_FACTS; k++) tile_facts.e[k].search = 0;
    tile_facts.search = 1;
  }
}

/* x's entry in this search (made empty when new), or NULL when the table is full. */
static TileFact *tile_fact(const IrInstr *x) {
  unsigned h = (unsigned)(((uintptr_t)x >> 4) * 2654435761u) & (TILE_FACTS - 1);
  for (int probe = 0; probe < 64; probe++, h = (h + 1) & (TILE_FACTS - 1)) {
    TileFact *f = &tile_facts.e[h];
    if (f->search != tile_facts.search) {
      memset(f, 0, sizeof *f);
      f->x = x;
      f->search = tile_facts.search;
      return f;
    }
    if (f->x == x) return f;
  }
  return NULL;
}

/* ir_attr_dims(x, "dimensions", out, IR_MAX_RANK), read once per search. */
static int tile_dims(const IrInstr *x, int64_t *out) {
  TileFact *f = tile_fact(x);
  if (!f) return ir_attr_dims(x, "dimensions", out, IR_MAX_RANK);
  if (!f->have_dims) {
    f->ndims = ir_attr_dims(x, "dimensions", f->dims, IR_MAX_RANK);
    f->have_dims = true;
  }
  if (f->ndims > 0) memcpy(out, f->dims, sizeof(int64_t) * (size_t)(f->ndims < IR_MAX_RANK ? f->ndims : IR_MAX_RANK));
  return f->ndims;
}

typedef struct {
  const IrInstr *p, *c;          /* the producer and consumer (c NULL: p alone) */
  const IrComputation *pbody, *cbody;
  double max_elems;              /* register limit, in elements */
  TiledInstr tiled[TILE_MAX_TILED];
  int ntiled, visits;
  /* The tiled instructions of the current walk by instruction, so each visit finds its earlier
   * tiles without a scan of the list: bucket heads (index + 1, valid when stamped with `walk`)
   * and a chain through the list. */
  short head[TILE_HASH];
  unsigned head_walk[TILE_HASH];
  short next[TILE_MAX_TILED];
  unsigned walk;
  bool unknown;                  /* an op fxplain does not tile: no verdict */
  const IrInstr *too_big;        /* the first tile over the limit */
  int64_t too_big_elems;
  int warps;                     /* the block's warps from the fusion's own config; 0: GetNumWarps */
} TileWalk;

/* The bucket of the tile hash an instruction's tiles chain from. */
static unsigned tile_bucket(const IrInstr *x) {
  return (unsigned)(((uintptr_t)x >> 4) * 2654435761u) & (TILE_HASH - 1);
}

static int64_t pow2_ceil(int64_t v) {
  if (v <= 1) return 1;
  if (v > (INT64_C(1) << 62)) return INT64_C(1) << 62; /* no tile is this large; stays positive */
  return INT64_C(1) << (64 - __builtin_clzll((unsigned long long)(v - 1)));
}

/* The instruction that operand k of x reads in the fused computation of p into c, and whether it
 * is inside that computation (false: an operand of the fusion, read from memory). */
static const IrInstr *tile_operand(const TileWalk *w, const IrInstr *x, int k, bool *inside) {
  const IrInstr *o = x->operands[k];
  const IrInstr *outer = NULL;
  if (o->op == IR_OP_PARAMETER && w->cbody && o->parent == w->cbody) {
    if (o->param_number < 0 || o->param_number >= w->c->noperands) return *inside = false, o;
    outer = w->c->operands[o->param_number];
  } else if (o->op == IR_OP_PARAMETER && w->pbody && o->parent == w->pbody) {
    *inside = false;
    return o;
  } else if (x == w->c || x == w->p) {
    outer = o;
  } else {
    *inside = true; /* inside a body */
    return o;
  }
  if (outer == w->p && w->c) {
    *inside = true;
    return fusion_fused_root(w->p);
  }
  *inside = false;
  return o;
}

static bool tile_walk(TileWalk *w, const IrInstr *x, const int64_t *t, int rank, bool inside);

/* The instruction outside the fused computation that parameter (or top-level operand) o is. */
static const IrInstr *tile_outer(const TileWalk *w, const IrInstr *o) {
  if (o->op == IR_OP_PARAMETER && w->cbody && o->parent == w->cbody && o->param_number >= 0 &&
      o->param_number < w->c->noperands)
    return w->c->operands[o->param_number];
  if (o->op == IR_OP_PARAMETER && w->pbody && o->parent == w->pbody && o->param_number >= 0 &&
      o->param_number < w->p->noperands)
    return w->p->operands[o->param_number];
  return o;
}

static bool tile_visit_operand(TileWalk *w, const IrInstr *x, int k, const int64_t *t, int rank) {
  bool inside = false;
  const IrInstr *o = tile_operand(w, x, k, &inside);
  return tile_walk(w, o, t, rank, inside);
}

/* The next group of a reshape's dimensions with equal running products: advances *pi over the
 * output's dimensions and *pj over the operand's to the group's end, trailing dimensions of size 1
 * taken in on either side. False when the products never meet. */
static bool reshape_group(const IrShape *out, const IrShape *in, int *pi, int *pj) {
  int i = *pi, j = *pj;
  int64_t pa = i < out->rank ? out->dims[i++] : 1, pb = j < in->rank ? in->dims[j++] : 1;
  while (pa != pb) {
    if (pa < pb && i < out->rank) pa *= out->dims[i++];
    else if (j < in->rank) pb *= in->dims[j++];
    else if (i < out->rank) pa *= out->dims[i++];
    else return false;
  }
  while (i < out->rank && out->dims[i] == 1 && (j >= in->rank || in->dims[j] != 1)) i++;
  while (j < in->rank && in->dims[j] == 1 && (i >= out->rank || out->dims[i] != 1)) j++;
  *pi = i;
  *pj = j;
  return true;
}

/* Maps a tile of a reshape's output onto its operand (the symbolic tile of a reshape's indexing
 * map): within each group of dimensions with equal running products, the tile must be a
 * contiguous run (dimensions minor to the first partial one whole, those major to it 1), and its
 * length is cut into the operand's dimensions the same way. False when it is not. */
static bool reshape_tile(const IrShape *out, const int64_t *t, const IrShape *in, int64_t *ti) {
  int i = 0, j = 0;
  while (i < out->rank || j < in->rank) {
    int i0 = i, j0 = j;
    if (!reshape_group(out, in, &i, &j)) return false;
    /* The run's length: from the minor end, whole dimensions, then one partial, then ones. */
    int64_t len = 1;
    bool partial = false;
    for (int k = i - 1; k >= i0; k--) {
      if (out->dims[k] == 1) continue;
      if (partial) {
        if (t[k] != 1) return false;
        continue;
      }
      len *= t[k];
      if (t[k] != out->dims[k]) partial = true;
    }
    /* Cut it into the operand's group the same way. */
    for (int k = j - 1; k >= j0; k--) {
      int64_t d = in->dims[k];
      if (d == 1) ti[k] = 1;
      else if (len >= d) {
        if (len % d) return false;
        ti[k] = d;
        len /= d;
      } else {
        ti[k] = len;
        len = 1;
      }
    }
    if (len != 1) return false;
  }
  return true;
}

static bool tile_walk(TileWalk *w, const IrInstr *x, const int64_t *t, int rank, bool inside) {
  if (w->unknown || ++w->visits > TILE_MAX_VISITS) return w->unknown = true, false;
  /* Each instruction once per distinct tile (SymbolicTileAnalysis deduplicates tiled
   * instructions by value); an operand of the fusion is the instruction outside it. */
  const IrInstr *key = inside ? x : tile_outer(w, x);
  int64_t padded = 1;
  for (int d = 0; d < rank; d++) padded *= pow2_ceil(t[d]);
  unsigned b = tile_bucket(key);
  int first = w->head_walk[b] == w->walk ? w->head[b] - 1 : -1;
  for (int k = first; k >= 0; k = w->next[k])
    if (w->tiled[k].x == key && w->tiled[k].rank == rank && w->tiled[k].inside == inside &&
        memcmp(w->tiled[k].t, t, sizeof(int64_t) * (size_t)rank) == 0)
      return true;
  if (w->ntiled >= TILE_MAX_TILED) return w->unknown = true, false;
  w->next[w->ntiled] = (short)first;
  w->head[b] = (short)(w->ntiled + 1);
  w->head_walk[b] = w->walk;
  TiledInstr *ti = &w->tiled[w->ntiled++];
  ti->x = key;
  ti->inside = inside;
  ti->rank = rank;
  ti->padded = padded;
  memcpy(ti->t, t, sizeof(int64_t) * (size_t)rank);
  /* DoesTileFitsInRegisters and kMaxTensorNumElements, for every tiled instruction, the fusion's
   * operands included. */
  if ((double)padded > w->max_elems || padded > 1048576) {
    w->too_big = x;
    w->too_big_elems = padded;
    return false;
  }
  if (!inside || x->op == IR_OP_PARAMETER || x->op == IR_OP_CONSTANT || x->op == IR_OP_IOTA) return true;
  int64_t ot[IR_MAX_RANK];
  if (ir_op_is_elementwise(x->op)) {
    for (int k = 0; k < x->noperands; k++) {
      int r = x->operands[k]->shape.rank;
      if (!tile_visit_operand(w, x, k, r == rank ? t : ot, r == rank ? rank : 0)) return false;
    }
    return true;
  }
  switch (x->op) {
  case IR_OP_BROADCAST: {
    int64_t dims[IR_MAX_RANK];
    int r = x->operands[0]->shape.rank;
    if (tile_dims(x, dims) != r) return w->unknown = true, false;
    for (int d = 0; d < r; d++) {
      if (dims[d] < 0 || dims[d] >= rank) return w->unknown = true, false;
      ot[d] = t[dims[d]];
    }
    return tile_visit_operand(w, x, 0, ot, r);
  }
  case IR_OP_TRANSPOSE: {
    int64_t perm[IR_MAX_RANK];
    if (tile_dims(x, perm) != rank) return w->unknown = true, false;
    for (int d = 0; d < rank; d++) {
      if (perm[d] < 0 || perm[d] >= rank) return w->unknown = true, false;
      ot[perm[d]] = t[d];
    }
    return tile_visit_operand(w, x, 0, ot, rank);
  }
  case IR_OP_SLICE:
    if (x->operands[0]->shape.rank != rank) return w->unknown = true, false;
    return tile_visit_operand(w, x, 0, t, rank);
  case IR_OP_REDUCE: {
    int64_t dims[IR_MAX_RANK];
    int n = x->noperands / 2;
    if (n < 1) return w->unknown = true, false;
    const IrShape *in = &x->operands[0]->shape;
    int nd = tile_dims(x, dims);
    if (nd < 0) return w->unknown = true, false;
    int kept = 0;
    for (int d = 0; d < in->rank; d++) {
      bool reduced = false;
      for (int k = 0; k < nd; k++) reduced |= dims[k] == d;
      if (reduced) ot[d] = in->dims[d];
      else {
        if (kept >= rank) return w->unknown = true, false;
        ot[d] = t[kept++];
      }
    }
    for (int k = 0; k < n; k++)
      if (!tile_visit_operand(w, x, k, ot, in->rank)) return false;
    for (int k = n; k < x->noperands; k++)
      if (!tile_visit_operand(w, x, k, ot, 0)) return false;
    return true;
  }
  case IR_OP_CONCATENATE: {
    /* TritonEmitterConstraints::DeriveCustomConstraints: the tile along the concatenated
     * dimension, padded to a power of two, divides every operand's size there. */
    int64_t cd[1];
    if (ir_attr_dims(x, "dimensions", cd, 1) != 1 || cd[0] < 0 || cd[0] >= rank) return w->unknown = true, false;
    int64_t pt = pow2_ceil(t[cd[0]]);
    for (int k = 0; k < x->noperands; k++)
      if (x->operands[k]->shape.rank != rank || x->operands[k]->shape.dims[cd[0]] % pt) return false;
    for (int k = 0; k < x->noperands; k++)
      if (!tile_visit_operand(w, x, k, t, rank)) return false;
    return true;
  }
  case IR_OP_BITCAST:
  case IR_OP_RESHAPE:
    if (x->shape.type == IR_TUPLE) return w->unknown = true, false;
    /* A tile that is no contiguous run of a reshape's group breaks the constraints its symbolic
     * tile carries (the analysis itself succeeded: range_walk): SymbolicTileAnalysis::
     * GetValidTilings leaves that tiling out, and the others are still tried. */
    if (!reshape_tile(&x->shape, t, &x->operands[0]->shape, ot)) return false;
    return tile_visit_operand(w, x, 0, ot, x->operands[0]->shape.rank);
  default: return w->unknown = true, false;
  }
}

/* ---- which indices the root reads (the domain of SymbolicTileAnalysis's indexing maps) ----
 *
 * SymbolicTile::FromIndexingMap fails ("Failed to compute symbolic tile for ... d2 * 256 + d3 +
 * 128") when a reshape merges dimensions whose minor part the root reads only partly (a slice
 * downstream took part of it) while it still reads several values of a more major part: the
 * indices are then no strided interval. Each dimension carries the first index read and how many
 * are read, from the root's whole output up to the fusion's operands. */

typedef struct {
  int64_t off[IR_MAX_RANK], len[IR_MAX_RANK];
  bool split[IR_MAX_RANK]; /* the major part of a dimension a reshape split, read at several indices */
  bool cat[IR_MAX_RANK];   /* a dimension a concatenate joined pieces of size 1 along */
} IndexRange;

/* 1: fine, 0: a reshape XLA cannot tile (w->too_big names it), -1: no verdict. */
static int range_walk(TileWalk *w, const IrInstr *x, const IndexRange *r, bool inside);

static int range_operand(TileWalk *w, const IrInstr *x, int k, const IndexRange *r) {
  bool inside = false;
  const IrInstr *o = tile_operand(w, x, k, &inside);
  return range_walk(w, o, r, inside);
}

static bool full_dim(const IndexRange *r, const IrShape *sh, int d) { return r->off[d] == 0 && r->len[d] == sh->dims[d]; }

/* Maps the ranges of a reshape's output onto its operand, group by group; 0 when XLA's symbolic
 * tile fails, -1 when fxplain cannot tell. */
static int reshape_range(const IrShape *out, const IndexRange *r, const IrShape *in, IndexRange *ri) {
  int i = 0, j = 0;
  while (i < out->rank || j < in->rank) {
    int i0 = i, j0 = j;
    if (!reshape_group(out, in, &i, &j)) return -1;
    /* The output side, minor to major: a dimension read partly, with a more major one read at
     * several indices, is no strided interval. */
    int64_t off = 0, len = 1, stride = 1;
    bool partial = false;
    for (int k = i - 1; k >= i0; k--) {
      if (partial && r->len[k] > 1) return 0;
      off += r->off[k] * stride;
      if (!partial) len *= r->len[k];
      if (!full_dim(r, out, k)) partial = true;
      stride *= out->dims[k];
    }
    /* A dimension a concatenate joined pieces of size 1 along, merged with others: each piece's
     * index is a shifted unit inside a sum of dimensions ("d0 * 41 + d1 * 41 + d2 - 41"), which
     * has no symbolic tile either. */
    int64_t group = 1;
    for (int k = i0; k < i; k++) group *= out->dims[k];
    for (int k = i0; k < i; k++)
      if (r->cat[k] && group > out->dims[k]) return 0;
    /* The operand side: the interval [off, off + len), cut minor to major. A dimension that is
     * the major part of a split keeps that in mind; one mapped one to one keeps its mark. */
    int nout = 0, nin = 0, one_out = -1;
    for (int k = i0; k < i; k++)
      if (out->dims[k] != 1) nout++, one_out = k;
    for (int k = j0; k < j; k++) nin += in->dims[k] != 1;
    bool minor_seen = false;
    for (int k = j - 1; k >= j0; k--) {
      ri->split[k] = in->dims[k] != 1 && (nin >= 2 ? minor_seen : nout == 1 && nin == 1 && r->split[one_out]);
      ri->cat[k] = in->dims[k] != 1 && nout == 1 && nin == 1 && r->cat[one_out];
      if (in->dims[k] != 1) minor_seen = true;
    }
    for (int k = j - 1; k >= j0; k--) {
      int64_t d = in->dims[k];
      if (len % d == 0 && off % d == 0) {
        ri->off[k] = 0;
        ri->len[k] = d;
        len /= d;
        off /= d;
      } else if (off / d == (off + len - 1) / d) {
        ri->off[k] = off % d;
        ri->len[k] = len;
        off /= d;
        len = 1;
      } else {
        return -1;
      }
    }
  }
  return 1;
}

/* ShouldProceedWithSymbolicTileDerivation: a reshape whose own indexing map has no symbolic
 * tile ("Bailing out on reshape"). ComputeReshapeIndexingMap puts a unit output dimension in the
 * group of the dimensions after it; when that group splits one output dimension into several
 * (bf16[1,41,1,256] from [1,41,2,128]: d2 * 2 + d3 floordiv 128), or merges several into several,
 * the map is no symbolic tile. */
static bool reshape_bails_out(const IrShape *out, const IrShape *in) {
  int i = 0, j = 0;
  while (i < out->rank && j < in->rank) {
    int i0 = i, j0 = j;
    if (out->dims[i] == 1 && in->dims[j] == 1) {
      i++, j++;
      continue;
    }
    while (i < out->rank && out->dims[i] == 1) i++;
    while (j < in->rank && in->dims[j] == 1) j++;
    if (i >= out->rank || j >= in->rank) break;
    int units = i - i0;
    (void)j0;
    int64_t pa = out->dims[i++], pb = in->dims[j++];
    int no = 1, ni = 1;
    while (pa != pb) {
      if (pa < pb && i < out->rank) no += out->dims[i] != 1, pa *= out->dims[i++];
      else if (pb < pa && j < in->rank) ni += in->dims[j] != 1, pb *= in->dims[j++];
      else return false;
    }
    if ((units > 0 && ni >= 2) || (no >= 2 && ni >= 2)) return true;
  }
  return false;
}

static int range_walk(TileWalk *w, const IrInstr *x, const IndexRange *r, bool inside) {
  if (++w->visits > TILE_MAX_VISITS) return -1;
  if (!inside || x->op == IR_OP_PARAMETER || x->op == IR_OP_CONSTANT || x->op == IR_OP_IOTA) return 1;
  int rank = x->shape.type == IR_TUPLE ? 0 : x->shape.rank, v = 1;
  IndexRange o;
  if (ir_op_is_elementwise(x->op)) {
    for (int k = 0; k < x->noperands && v == 1; k++)
      if (x->operands[k]->shape.rank == rank) v = range_operand(w, x, k, r);
    return v;
  }
  switch (x->op) {
  case IR_OP_BROADCAST: {
    int64_t dims[IR_MAX_RANK];
    int n = x->operands[0]->shape.rank;
    if (ir_attr_dims(x, "dimensions", dims, IR_MAX_RANK) != n) return -1;
    for (int d = 0; d < n; d++) {
      if (dims[d] < 0 || dims[d] >= rank) return -1;
      o.off[d] = r->off[dims[d]];
      o.len[d] = r->len[dims[d]];
      o.split[d] = r->split[dims[d]];
      o.cat[d] = r->cat[dims[d]];
    }
    return range_operand(w, x, 0, &o);
  }
  case IR_OP_TRANSPOSE: {
    int64_t perm[IR_MAX_RANK];
    if (ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK) != rank) return -1;
    for (int d = 0; d < rank; d++) {
      if (perm[d] < 0 || perm[d] >= rank) return -1;
      o.off[perm[d]] = r->off[d];
      o.len[perm[d]] = r->len[d];
      o.split[perm[d]] = r->split[d];
      o.cat[perm[d]] = r->cat[d];
    }
    return range_operand(w, x, 0, &o);
  }
  case IR_OP_SLICE: {
    int64_t st[IR_MAX_RANK], lim[IR_MAX_RANK], str[IR_MAX_RANK];
    if (ir_attr_slice(x, st, lim, str, IR_MAX_RANK) != rank || x->operands[0]->shape.rank != rank) return -1;
    for (int d = 0; d < rank; d++) {
      if (str[d] != 1 && r->len[d] > 1) return -1;
      o.off[d] = st[d] + r->off[d] * str[d];
      o.len[d] = r->len[d];
      o.split[d] = r->split[d];
      o.cat[d] = r->cat[d];
    }
    return range_operand(w, x, 0, &o);
  }
  case IR_OP_REDUCE: {
    int64_t dims[IR_MAX_RANK];
    int n = x->noperands / 2;
    const IrShape *in = &x->operands[0]->shape;
    int nd = ir_attr_dims(x, "dimensions", dims, IR_MAX_RANK), kept = 0;
    if (n < 1 || nd < 0) return -1;
    int orank = x->shape.type == IR_TUPLE && x->shape.ntuple ? x->shape.tuple[0].rank : rank;
    for (int d = 0; d < in->rank; d++) {
      bool reduced = false;
      for (int k = 0; k < nd; k++) reduced |= dims[k] == d;
      if (reduced) {
        o.off[d] = 0;
        o.len[d] = in->dims[d];
        o.split[d] = o.cat[d] = false;
      } else {
        if (kept >= orank) return -1;
        o.off[d] = r->off[kept];
        o.split[d] = r->split[kept];
        o.cat[d] = r->cat[kept];
        o.len[d] = r->len[kept++];
      }
    }
    for (int k = 0; k < n && v == 1; k++) v = range_operand(w, x, k, &o);
    return v;
  }
  case IR_OP_CONCATENATE: {
    int64_t cd[1];
    if (ir_attr_dims(x, "dimensions", cd, 1) != 1 || cd[0] < 0 || cd[0] >= rank) return -1;
    /* Concatenating along the major part of a dimension a reshape split gives an index like
     * (d3 floordiv 128) * 128 + d3 - 128, which has no symbolic tile. */
    if (r->split[cd[0]]) {
      w->too_big = x;
      return 0;
    }
    int64_t start = 0, lo = r->off[cd[0]], hi = lo + r->len[cd[0]];
    for (int k = 0; k < x->noperands && v == 1; k++) {
      int64_t size = x->operands[k]->shape.dims[cd[0]];
      int64_t a = lo > start ? lo : start, b = hi < start + size ? hi : start + size;
      if (a < b) {
        o = *r;
        o.off[cd[0]] = a - start;
        o.len[cd[0]] = b - a;
        o.cat[cd[0]] = size == 1;
        v = range_operand(w, x, k, &o);
      }
      start += size;
    }
    return v;
  }
  case IR_OP_BITCAST:
  case IR_OP_RESHAPE: {
    if (x->shape.type == IR_TUPLE) return -1;
    if (reshape_bails_out(&x->shape, &x->operands[0]->shape)) {
      w->too_big = x;
      return 0;
    }
    v = reshape_range(&x->shape, r, &x->operands[0]->shape, &o);
    if (v == 0) w->too_big = x;
    if (v != 1) return v;
    return range_operand(w, x, 0, &o);
  }
  default: return -1;
  }
}

/* BandwidthUtilizationRateHeuristicForTiledMemoryAccess: the share of each DRAM-to-L2
 * transaction a tile uses, from the bytes it reads contiguously (minor to major, up to the first
 * dimension it takes only part of). */
static double tile_bandwidth_rate(const IrShape *sh, const int64_t *t, int rank) {
  if (sh->type == IR_TUPLE || rank != sh->rank) return 1;
  int64_t contiguous = 1;
  for (int k = 0; k < rank; k++) {
    int dim = sh->has_layout && sh->minor_to_major ? sh->minor_to_major[k] : rank - 1 - k;
    if (dim < 0 || dim >= rank) break;
    int64_t size = sh->dims[dim], ts = t[dim] < size ? t[dim] : size;
    contiguous *= ts;
    if (t[dim] < size) break;
  }
  double bytes = (double)contiguous * ir_type_bytes(sh->type);
  double effective = DRAM_TO_L2_TRANSACTION_BYTES * ceil(bytes / DRAM_TO_L2_TRANSACTION_BYTES);
  return effective > 0 ? bytes / effective : 1;
}

static double read_us_rate(const DeviceProfile *d, int64_t blocks, double net, double total, double rate);

/* EstimateRunTimeForTiledHloComputation with GetLaunchDimensionsForTiledFusion: one block per
 * output tile, 1 to 8 warps by the largest tile (GetNumWarps); each tile inside computes its
 * padded elements (FlopsPerElement: indexing ops are free), each operand tile reads its
 * elements, at the bandwidth its contiguous run uses; the root is written once. The tiles are
 * those of the last walk (w->tiled). */
static int tiled_estimate(const DeviceProfile *d, const TileWalk *w, const IrInstr *root, const int64_t *t, int rank,
                          PerfEstimate *e) {
  memset(e, 0, sizeof *e);
  int64_t blocks = 1, largest = 1;
  for (int k = 0; k < rank; k++) blocks *= (root->shape.dims[k] + t[k] - 1) / t[k];
  for (int k = 0; k < w->ntiled; k++)
    if (w->tiled[k].padded > largest) largest = w->tiled[k].padded;
  int warps = w->warps > 0 ? w->warps : largest <= 256 ? 1 : largest <= 1024 ? 2 : largest <= 4096 ? 4 : 8;
  e->blocks = blocks;
  bool done[TILE_MAX_TILED] = {false};
  for (int k = 0; k < w->ntiled; k++) {
    const TiledInstr *ti = &w->tiled[k];
    if (ti->inside) {
      const IrInstr *x = ti->x;
      switch (x->op) {
      case IR_OP_BITCAST: case IR_OP_BROADCAST: case IR_OP_CONSTANT: case IR_OP_DYNAMIC_SLICE:
      case IR_OP_DYNAMIC_UPDATE_SLICE: case IR_OP_GATHER: case IR_OP_IOTA: case IR_OP_PAD:
      case IR_OP_PARAMETER: case IR_OP_SLICE: case IR_OP_TRANSPOSE: case IR_OP_TUPLE: continue;
      default: break;
      }
      TileFact *f = tile_fact(x);
      double per;
      if (f && f->have_per) {
        per = f->per;
      } else {
        const IrShape *sh = x->shape.type == IR_TUPLE && x->shape.ntuple ? &x->shape.tuple[0] : &x->shape;
        double n = (double)ir_shape_elements(sh);
        per = n > 0 ? round(hlo_cost_instr_flops(d, x) / n) : 0;
        if (f) {
          f->per = per;
          f->have_per = true;
        }
      }
      e->flops += per * (double)blocks * (double)ti->padded;
      continue;
    }
    if (done[k]) continue;
    /* n_bytes_total_map: every tile of one operand together, at the lowest rate among them, in
     * the order they were tiled. The tiles of one operand share its hash chain (newest first). */
    int same[TILE_MAX_TILED], nsame = 0;
    unsigned b = tile_bucket(ti->x);
    for (int j = w->head_walk[b] == w->walk ? w->head[b] - 1 : -1; j >= k; j = w->next[j])
      if (!w->tiled[j].inside && w->tiled[j].x == ti->x) same[nsame++] = j;
    double total = 0, rate = 1;
    for (int q = nsame - 1; q >= 0; q--) {
      const TiledInstr *tj = &w->tiled[same[q]];
      done[same[q]] = true;
      int64_t elems = 1;
      for (int z = 0; z < tj->rank; z++) elems *= tj->t[z];
      total += (double)ir_type_bytes(tj->x->shape.type) * (double)blocks * (double)elems;
      double r = tile_bandwidth_rate(&tj->x->shape, tj->t, tj->rank);
      if (r < rate) rate = r;
    }
    TileFact *f = tile_fact(ti->x);
    double size;
    if (f && f->have_size) {
      size = f->size;
    } else {
      size = operand_size(ti->x);
      if (f) {
        f->size = size;
        f->have_size = true;
      }
    }
    e->bytes_read += total;
    e->read_us += read_us_rate(d, blocks, total < size ? total : size, total, rate);
  }
  e->bytes_written = (double)ir_shape_bytes(&root->shape);
  double wrate = tile_bandwidth_rate(&root->shape, t, rank);
  /* The effective bandwidth is an integer number of bytes a second, and the write time a double
   * quotient: absl::Seconds(1.0 * bytes / effective_bandwidth). */
  int64_t eff = (int64_t)(wrate * (double)dram_bytes_per_s(d));
  e->write_us = eff > 0 ? ticks_us(seconds_ticks(1.0 * e->bytes_written / (double)eff)) : 0;
  /* ComputeTime with the tiled launch: num_warps x 32 threads a block. */
  if (e->flops > 0) e->compute_us = compute_ticks_us(e->flops, flops_per_ns(d, (int64_t)warps * 32, blocks));
  e->exec_us = combine(e->compute_us, e->read_us + e->write_us);
  return warps;
}

/* Whether one tiling of the root (tile sizes t) is valid; sets w->unknown when no verdict. */
static bool tiling_valid(TileWalk *w, const IrInstr *root, const int64_t *t, int rank) {
  w->ntiled = 0;
  w->visits = 0;
  w->too_big = NULL;
  if (++w->walk == 0) { /* wrapped: old stamps could match again */
    memset(w->head_walk, 0, sizeof w->head_walk);
    w->walk = 1;
  }
  return tile_walk(w, root, t, rank, true);
}

static int triton_tiling_warps(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, const int64_t *only,
                               int warps, bool first_valid, TritonTiling *out);

/* While the memo is open (fusion_memo_open: nothing changes), the search's result for each pair
 * asked about is kept: priority-fusion asks it of a pair in CanFuse and again for the pair's time,
 * as XLA's CanFuseTriton keeps the best tiling for EstimateRunTimesForPriorityFusion. */
#define TILING_MEMO 8
static _Thread_local struct {
  int n;
  struct {
    const DeviceProfile *d;
    const IrInstr *p, *c;
    int verdict;
    bool complete; /* every tiling tried (else it stopped at the first valid one) */
    TritonTiling t;
  } e[TILING_MEMO];
} tiling_memo;

static void tiling_memo_clear(void) { tiling_memo.n = 0; }

static int memo_tiling(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, bool first_valid,
                       TritonTiling *out) {
  if (hero_memo.depth <= 0) return triton_tiling_warps(d, p, c, NULL, 0, first_valid, out);
  int used = tiling_memo.n < TILING_MEMO ? tiling_memo.n : TILING_MEMO;
  for (int k = 0; k < used; k++)
    if (tiling_memo.e[k].d == d && tiling_memo.e[k].p == p && tiling_memo.e[k].c == c &&
        (tiling_memo.e[k].complete || first_valid)) {
      *out = tiling_memo.e[k].t;
      return tiling_memo.e[k].verdict;
    }
  int verdict = triton_tiling_warps(d, p, c, NULL, 0, first_valid, out);
  int slot = tiling_memo.n++ % TILING_MEMO; /* the oldest goes when full */
  tiling_memo.e[slot].d = d;
  tiling_memo.e[slot].p = p;
  tiling_memo.e[slot].c = c;
  tiling_memo.e[slot].verdict = verdict;
  /* a search that found no valid tiling tried them all */
  tiling_memo.e[slot].complete = !first_valid || verdict != 1;
  tiling_memo.e[slot].t = *out;
  return verdict;
}

int fusion_triton_tiling(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, const int64_t *only,
                         TritonTiling *out) {
  if (only) return triton_tiling_warps(d, p, c, only, 0, false, out);
  return memo_tiling(d, p, c, false, out);
}

int fusion_triton_can_tile(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, TritonTiling *out) {
  return memo_tiling(d, p, c, true, out);
}

/* The tiling a Triton fusion's backend config gives it (block_level_fusion_config: the first
 * output tile's sizes and num_warps), as TritonFusion::GetLaunchConfig reads it. */
static bool triton_config(const IrInstr *i, int64_t *tiles, int rank, int *warps) {
  const char *bc = ir_attr_text(i, "backend_config");
  const char *blk = bc ? strstr(bc, "\"block_level_fusion_config\"") : NULL;
  if (!blk) return false;
  const char *nw = strstr(blk, "\"num_warps\":");
  *warps = 0;
  if (nw) {
    nw += strlen("\"num_warps\":");
    while (*nw == '"' || *nw == ' ') nw++;
    *warps = atoi(nw);
  }
  const char *sz = strstr(blk, "\"sizes\":[");
  if (!sz) return false;
  sz += strlen("\"sizes\":[");
  int n = 0;
  while (*sz && *sz != ']' && n < rank) {
    while (*sz == '"' || *sz == ' ' || *sz == ',') sz++;
    if (*sz < '0' || *sz > '9') break;
    tiles[n++] = strtoll(sz, (char **)&sz, 10);
  }
  return n == rank;
}

/* EstimateRunTimeForTriton: a Triton fusion made earlier is timed with the tiling its backend
 * config records (TritonFusion::GetLaunchConfig, then EstimateRunTimeForTiledFusion), not the
 * best one. Returns false when it has none fxplain can read. */
void fusion_triton_config_text(const TritonTiling *tt, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n,
                              "{\"fusion_backend_config\":{\"kind\":\"__triton\",\"block_level_fusion_config\":{"
                              "\"num_warps\":\"%d\",\"output_tiles\":[{\"sizes\":[",
                              tt->warps);
  for (int d = 0; d < tt->rank && k < n; d++)
    k += (size_t)snprintf(buf + k, n - k, "%s\"%lld\"", d ? "," : "", (long long)tt->valid[d]);
  if (k < n) snprintf(buf + k, n - k, "]}],\"num_ctas\":1,\"num_stages\":1}}}");
}

static bool triton_config_estimate(const DeviceProfile *d, const IrInstr *i, PerfEstimate *e) {
  const IrInstr *root = fusion_fused_root(i);
  int64_t tiles[IR_MAX_RANK];
  int warps = 0;
  if (root->shape.type == IR_TUPLE || root->shape.rank < 1 || !triton_config(i, tiles, root->shape.rank, &warps))
    return false;
  TritonTiling tt;
  if (triton_tiling_warps(d, i, NULL, tiles, warps, false, &tt) != 1) return false;
  *e = tt.best;
  return true;
}

static int triton_tiling_warps(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, const int64_t *only,
                               int warps, bool first_valid, TritonTiling *out) {
  memset(out, 0, sizeof *out);
  tile_facts_begin();
  TileWalk *w = fx_calloc(1, sizeof *w);
  if (!w) return -1;
  w->warps = warps;
  w->p = p;
  w->c = c;
  w->pbody = p->op == IR_OP_FUSION ? ir_fused_computation(p) : NULL;
  w->cbody = c && c->op == IR_OP_FUSION ? ir_fused_computation(c) : NULL;
  /* registers_per_block_limit: 65536 on every NVIDIA GPU since Kepler. */
  w->max_elems = 0.4 * (d && d->registers_per_block > 0 ? d->registers_per_block : 65536);
  out->max_elems = (int64_t)w->max_elems;
  const IrInstr *root = fusion_fused_root(c ? c : p);
  int rank = root->shape.rank, verdict = 0;
  if (root->shape.type == IR_TUPLE || rank > 8) {
    fx_free(w);
    return -1;
  }
  /* SymbolicTileAnalysis::AnalyzeFusion first derives a symbolic tile for every instruction. */
  IndexRange all;
  for (int k = 0; k < rank; k++) {
    all.off[k] = 0;
    all.len[k] = root->shape.dims[k];
    all.split[k] = all.cat[k] = false;
  }
  w->visits = 0;
  if (range_walk(w, root, &all, true) == 0) {
    out->untileable = w->too_big;
    fx_free(w);
    return 0;
  }
  w->too_big = NULL;
  /* Every tiling of the root: the odometer over PossibleTileSizesForOneDimension, the last
   * dimension fastest (GetGoodTilings' order; the first of equal times wins). */
  int64_t t[IR_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    if (root->shape.dims[k] < 1) {
      fx_free(w);
      return -1;
    }
    t[k] = only ? only[k] : 1;
  }
  for (long n = 0;; n++) {
    if (n >= 20000) {
      verdict = -1;
      break;
    }
    out->tilings++;
    bool ok = tiling_valid(w, root, t, rank);
    if (w->unknown) {
      verdict = -1;
      break;
    }
    if (ok) {
      PerfEstimate e;
      int warps = tiled_estimate(d, w, root, t, rank, &e);
      if (verdict == 0 || e.exec_us < out->best.exec_us) {
        out->best = e;
        out->warps = warps;
        memcpy(out->valid, t, sizeof(int64_t) * (size_t)rank);
        out->rank = rank;
      }
      verdict = 1;
      if (first_valid) break;
    } else if (w->too_big && !out->too_big) {
      out->too_big = w->too_big;
      out->too_big_elems = w->too_big_elems;
    }
    if (only) break;
    int k = rank - 1;
    for (; k >= 0; k--) {
      int64_t dim = root->shape.dims[k];
      if (t[k] < dim) {
        t[k] = t[k] * 2 < dim ? t[k] * 2 : dim;
        break;
      }
      t[k] = 1;
    }
    if (k < 0) break;
  }
  fx_free(w);
  return verdict;
}

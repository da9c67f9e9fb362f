/* pass_priority_fusion.c — XLA's priority-fusion (GPU, since 2024): fuse producers in order of
 * how much time fusing them saves, by the cost model on the device profile.
 *
 * This follows XLA's PriorityFusion (xla/service/gpu/transforms/priority_fusion.cc) step by step,
 * because an explanation is only as true as the kernels it explains:
 *
 *   - the queue holds producers keyed by (priority, instruction id), the largest first; a
 *     priority below zero is never queued;
 *   - bitcasts come first (infinite priority: they are free) and are fused into the consumers
 *     that can take them; constants are never queued: small (one-element) constants are fused
 *     into every fusible user at the end;
 *   - a producer is eligible only when every user that is not a bitcast can take it
 *     (CanFuseWithAllNonBitcastUsers: "not fusing because there are only bitcast users" when
 *     none is), and is then fused into all of its users at once, duplicated when there are
 *     several;
 *   - priority = time unfused - time fused, from GpuPerformanceModel's
 *     EstimateRunTimesForPriorityFusion: one kernel launch overhead (1 us) per kernel, each
 *     kernel's time the larger of compute and memory (reads of its operands, writes of its
 *     output, at the device's DRAM bandwidth), the fused consumer reading the producer's
 *     operands instead of its output;
 *   - after a fusion, the new fusion and its operands get new priorities.
 *
 * The rules (CanFuse) are XLA's, in XLA's order: fusibility, no fusion into a lone bitcast,
 * scatter's in-place operand, reduce into reduce, a reduction fusion turned into a loop fusion,
 * the operand/shared-memory budget, merged IR size, the root, in-place operands.
 *
 * Unlike XLA, which stops at the first consumer that refuses, every consumer's verdict is
 * computed and reported, each with `us_fused` and `us_unfused`: a consumer the rules refuse gets
 * its own reason; consumers that would take the producer but cannot because another refuses get
 * `code_duplication` (the producer cannot go into all of its users); a fusion the cost model
 * predicts to be slower gets `slower_if_fused`. A producer is reported again only when its
 * verdict changes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_analysis.h"
#include "fusion_build.h"
#include "fusion_rules.h"
#include "gpu_fusible.h"
#include "../passes/passes.h"
#include "../plan/plan.h"

typedef struct {
  double prio;
  int id;
  int version;
  IrInstr *instr;
} HeapItem;

/* GpuPerformanceModelCache's fused times of one producer: consumer id -> time. */
typedef struct {
  int cons;
  double us;
} PairTime;

typedef struct {
  PairTime *v;
  int n, cap;
} PairList;

/* PriorityFusionQueue's state, per instruction id: the queue (a heap whose stale entries are
 * skipped by version), the priority each queued producer holds (reverse_map_), and the
 * performance model's cache as XLA keeps it (GpuPerformanceModelCache): each instruction's time
 * as one kernel and each producer's fused time with each consumer, kept until XLA invalidates
 * them (InvalidateCaches), stale or not. */
typedef struct {
  HeapItem *h;
  int n, cap;
  int *version;     /* per instruction id */
  unsigned *logged; /* per instruction id: a hash of the last reported refusal (0: none) */
  /* per instruction id: the times (in ticks) whose difference is the priority it is queued with:
   * a full update sets them, an incremental one adds its changes */
  int64_t *t_unfused, *t_fused;
  unsigned char *queued;
  double *exec;     /* per instruction id: EstimateRunTimeForInstruction's exec time */
  unsigned char *exec_ok;
  PairList *pairs;  /* per producer id */
  /* per instruction id, for the fusion step under way (step): the step in which it joined the
   * step's touched list, and in which it got an OpUpdate, at up_at[id] (so a broadcast fused into
   * thousands of users finds its operands' entries without scanning the lists) */
  int *touched_step, *up_step, *up_at;
  int step;
  int nversion;
} Queue;

#define GROW(arr, type)                                                                                                \
  do {                                                                                                                 \
    type *nv_ = fx_realloc(q->arr, sizeof(type) * (size_t)nc);                                                         \
    if (!nv_) return false;                                                                                            \
    memset(nv_ + q->nversion, 0, sizeof(type) * (size_t)(nc - q->nversion));                                           \
    q->arr = nv_;                                                                                                      \
  } while (0)

static bool q_version_ok(Queue *q, int id) {
  if (id < q->nversion) return true;
  int nc = q->nversion ? q->nversion : 256;
  while (nc <= id) nc *= 2;
  GROW(version, int);
  GROW(logged, unsigned);
  GROW(t_unfused, int64_t);
  GROW(t_fused, int64_t);
  GROW(queued, unsigned char);
  GROW(exec, double);
  GROW(exec_ok, unsigned char);
  GROW(pairs, PairList);
  GROW(touched_step, int);
  GROW(up_step, int);
  GROW(up_at, int);
  q->nversion = nc;
  return true;
}
#undef GROW

static void q_free(Queue *q) {
  for (int k = 0; k < q->nversion; k++) fx_free(q->pairs[k].v);
  fx_free(q->h);
  fx_free(q->version);
  fx_free(q->logged);
  fx_free(q->t_unfused);
  fx_free(q->t_fused);
  fx_free(q->queued);
  fx_free(q->exec);
  fx_free(q->exec_ok);
  fx_free(q->pairs);
  fx_free(q->touched_step);
  fx_free(q->up_step);
  fx_free(q->up_at);
  memset(q, 0, sizeof *q);
}

/* XLA's queue is a std::map keyed by (priority, unique id), taken from the largest end. */
static bool before(const HeapItem *a, const HeapItem *b) {
  return a->prio > b->prio || (a->prio == b->prio && a->id > b->id);
}

static bool q_push(Queue *q, IrInstr *i, double prio) {
  if (!q_version_ok(q, i->id)) return false;
  if (q->n == q->cap) {
    int nc = q->cap ? q->cap * 2 : 256;
    HeapItem *nh = fx_realloc(q->h, sizeof(HeapItem) * (size_t)nc);
    if (!nh) return false;
    q->h = nh;
    q->cap = nc;
  }
  int k = q->n++;
  q->queued[i->id] = 1;
  q->h[k] = (HeapItem){prio, i->id, q->version[i->id], i};
  while (k > 0) {
    int p = (k - 1) / 2;
    if (!before(&q->h[k], &q->h[p])) break;
    HeapItem t = q->h[p];
    q->h[p] = q->h[k];
    q->h[k] = t;
    k = p;
  }
  return true;
}

static bool q_pop(Queue *q, HeapItem *out) {
  while (q->n > 0) {
    *out = q->h[0];
    q->h[0] = q->h[--q->n];
    int k = 0;
    for (;;) {
      int l = 2 * k + 1, r = l + 1, b = k;
      if (l < q->n && before(&q->h[l], &q->h[b])) b = l;
      if (r < q->n && before(&q->h[r], &q->h[b])) b = r;
      if (b == k) break;
      HeapItem t = q->h[b];
      q->h[b] = q->h[k];
      q->h[k] = t;
      k = b;
    }
    if (out->id < q->nversion && out->version == q->version[out->id]) return true;
  }
  return false;
}

/* What Triton's emitter supports (XLA's IsTritonSupportedInstruction, in broad strokes). */
static bool triton_supported(const IrInstr *i) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  int n = fc ? fc->ninstrs : 1;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = fc ? fc->instrs[k] : i;
    /* IsTritonSupportedInstruction: no complex element types (c64, c128). */
    if (ir_type_is_complex(x->shape.type)) return false;
    if (ir_op_is_elementwise(x->op)) continue;
    switch (x->op) {
    case IR_OP_PARAMETER:
    case IR_OP_CONSTANT:
    case IR_OP_BROADCAST:
    case IR_OP_BITCAST:
    case IR_OP_RESHAPE:
    case IR_OP_REDUCE:
    case IR_OP_TRANSPOSE:
    case IR_OP_IOTA:
    case IR_OP_CONCATENATE:
    case IR_OP_SLICE: continue;
    default: return false;
    }
  }
  return true;
}

/* Refuses an op that is not fusible, with the reason fxplain's vocabulary gives it. */
static bool refuse_unfusible(const IrInstr *i, const char *side, const PassContext *cx, FusionVerdict *v) {
  if (fusion_is_library_call(i, cx->settings) || i->op == IR_OP_CUSTOM_CALL) {
    char lib[160];
    fusion_library_name(i, lib, sizeof lib);
    return fusion_refuse(v, FR_CUSTOM_CALL, "%s is %s: an opaque kernel, so nothing can be fused into or out of it as %s",
                         i->name, lib, side);
  }
  if (i->op == IR_OP_FUSION)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a custom (%s) fusion built by an earlier pass; it takes no other %s",
                         i->name, ir_fusion_kind(i) ? ir_fusion_kind(i) : "kCustom",
                         strcmp(side, "a producer") == 0 ? "consumer" : "producer");
  if (i->op == IR_OP_BITCAST)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a bitcast from %s to %s: it changes the bit width, so XLA does not "
                         "fuse it (IsFusibleBitcast): the %s is not fusible", i->name,
                         ir_type_name(i->operands[0]->shape.type), ir_type_name(i->shape.type),
                         strcmp(side, "a producer") == 0 ? "producer" : "consumer");
  return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a %s (%s), which is not fusible: the %s is not fusible", i->name,
                       ir_op_name(i->op), ir_op_info(i->op)->description,
                       strcmp(side, "a producer") == 0 ? "producer" : "consumer");
}

/* ---------- XLA's fusion analysis, as far as the rules need it ---------- */

/* A reduce with >= 16 inputs per output (XLA: "small reductions are emitted using the elemental
 * emitter anyway"). */
static bool significant_reduce(const IrInstr *i) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  int n = fc ? fc->ninstrs : 1;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = fc ? fc->instrs[k] : i;
    if (x->op != IR_OP_REDUCE || !ir_shape_is_array(&x->shape) || x->noperands == 0) continue;
    int64_t out = ir_shape_elements(&x->shape);
    if (out > 0 && ir_shape_elements(&x->operands[0]->shape) / out >= FUSION_REDUCE_MIN_ELEMENTS) return true;
  }
  return false;
}

/* The operand of c's in-place root (dynamic-update-slice, scatter) that it writes into, or NULL. */
static const IrInstr *in_place_buffer(const IrInstr *c, IrOpcode *op) {
  const IrInstr *r = fusion_fused_root(c);
  if ((r->op != IR_OP_DYNAMIC_UPDATE_SLICE && r->op != IR_OP_SCATTER) || r->noperands == 0) return NULL;
  *op = r->op;
  const IrInstr *b = r->operands[0];
  if (c->op == IR_OP_FUSION) {
    if (b->op != IR_OP_PARAMETER || b->param_number < 0 || b->param_number >= c->noperands) return NULL;
    return c->operands[b->param_number];
  }
  return b;
}

/* The operand numbers of c whose buffers c updates in place (XLA's GetInPlaceInputOutputPairs for
 * dynamic-update-slice and scatter, alone or as the roots of a fusion). Returns the count. */
static int in_place_operands(const IrInstr *c, int *out, int max, const IrInstr **dus) {
  const IrInstr *r = fusion_fused_root(c);
  const IrInstr *roots[64];
  int nr = 0, n = 0;
  *dus = NULL;
  if (r->op == IR_OP_TUPLE && c->op == IR_OP_FUSION)
    for (int k = 0; k < r->noperands && nr < 64; k++) roots[nr++] = r->operands[k];
  else
    roots[nr++] = r;
  for (int k = 0; k < nr && n < max; k++) {
    const IrInstr *x = roots[k];
    if ((x->op != IR_OP_DYNAMIC_UPDATE_SLICE && x->op != IR_OP_SCATTER) || x->noperands == 0) continue;
    if (x->op == IR_OP_DYNAMIC_UPDATE_SLICE && !*dus) *dus = x;
    const IrInstr *b = x->operands[0];
    while (c->op == IR_OP_FUSION && b->op == IR_OP_BITCAST && b->noperands == 1) b = b->operands[0];
    if (c->op != IR_OP_FUSION) out[n++] = 0;
    else if (b->op == IR_OP_PARAMETER && b->param_number >= 0 && b->param_number < c->noperands)
      out[n++] = (int)b->param_number;
  }
  return n;
}

/* ShouldFuseInPlaceOp's is_nonelementwise_op: not a fusion, an elementwise op, a bitcast or a
 * parameter (a constant counts). */
static bool non_elementwise(const IrInstr *x) {
  return x->op != IR_OP_FUSION && !ir_op_is_elementwise(x->op) && x->op != IR_OP_BITCAST && x->op != IR_OP_PARAMETER;
}

/* XLA's ExtractInstructions: i itself, or the instructions of its fused body, that match. Returns
 * how many match and the first in *first. */
static int extract(const IrInstr *i, bool (*match)(const IrInstr *), IrOpcode op, const IrInstr **first) {
  IrComputation *fc = i->op == IR_OP_FUSION ? ir_fused_computation(i) : NULL;
  int n = fc ? fc->ninstrs : 1, count = 0;
  *first = NULL;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = fc ? fc->instrs[k] : i;
    if (match ? !match(x) : x->op != op) continue;
    if (!count++) *first = x;
  }
  return count;
}

/* Whether a non-elementwise op of consumer fusion c (other than its in-place root) reads the
 * parameter through which c reads p. */
static bool conflicts(const IrInstr *x, const IrInstr *param, const void *ctx) {
  const IrInstr *root = ctx;
  return x != param && x != root && non_elementwise(x) &&
         !(root->op == IR_OP_TUPLE && fusion_reads(root, x) &&
           (x->op == IR_OP_DYNAMIC_UPDATE_SLICE || x->op == IR_OP_SCATTER));
}

static bool consumer_conflict(const IrInstr *c, const IrInstr *p) {
  IrComputation *fc = ir_fused_computation(c);
  if (!fc) return false;
  return fusion_find_in_uses(c, fc, p, conflicts, fusion_fused_root(c)) != NULL;
}

/* IsSafeToFuseSliceIntoDusFusion's has_nonelementwise_uses_except_dus: whether x, or anything that
 * uses x's value inside the fused computation, is a non-elementwise op other than the in-place
 * dynamic-update-slice (a parameter passes its uses on; memo: 1 no, 2 yes, by body index). */
static bool nonelementwise_use(const IrComputation *fc, const IrInstr *x, const IrInstr *dus, unsigned char *memo) {
  int k = 0;
  while (k < fc->ninstrs && fc->instrs[k] != x) k++;
  if (k < fc->ninstrs && memo[k]) return memo[k] == 2;
  bool v = x != dus && !ir_op_is_elementwise(x->op) && x->op != IR_OP_PARAMETER;
  for (int u = 0; !v && u < x->nusers; u++) v = nonelementwise_use(fc, x->users[u], dus, memo);
  if (k < fc->ninstrs) memo[k] = v ? 2 : 1;
  return v;
}

/* IsSafeToFuseSliceIntoDusFusion: fusing a slice or dynamic-slice into a fusion that updates the
 * same buffer in place is safe only when no other non-elementwise op of the fusion reads the
 * slice's value: that op would then share its operand with the in-place buffer. */
static bool safe_slice_into_dus_fusion(const IrInstr *p, const IrInstr *c, const IrInstr *dus) {
  IrComputation *fc = ir_fused_computation(c);
  if (!fc) return true;
  unsigned char *memo = fx_calloc((size_t)(fc->ninstrs ? fc->ninstrs : 1), 1);
  bool safe = true;
  for (int k = 0; safe && k < c->noperands && k < fc->nparams; k++) {
    if (c->operands[k] != p || !fc->params[k]) continue;
    if (!memo) return false; /* out of memory: refuse, as the unsafe case */
    safe = !nonelementwise_use(fc, fc->params[k], dus, memo);
  }
  fx_free(memo);
  return safe;
}

/* XLA's InstructionFusion::ShouldFuseInPlaceOp: a consumer that updates a buffer in place takes a
 * producer that is (or reads) that buffer only when the producer is elementwise, or a single slice
 * or dynamic-slice of exactly the region the consumer's one dynamic-update-slice writes. */
static bool should_fuse_in_place_op(const IrInstr *p, const IrInstr *c, FusionVerdict *v) {
  int idx[16];
  const IrInstr *dus_unused = NULL;
  int n = in_place_operands(c, idx, 16, &dus_unused);
  for (int k = 0; k < n; k++) {
    const IrInstr *buf = c->operands[idx[k]];
    for (int i = 0; i < c->noperands; i++)
      if (i != idx[k] && c->operands[i] == buf)
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s updates %s in place and also reads it through another operand; fusing into it is "
                             "unsafe",
                             c->name, buf->name);
    if (buf != p && !fusion_reads(p, buf)) continue;
    const IrInstr *pne = NULL;
    int npne = extract(p, non_elementwise, IR_OP_COUNT, &pne);
    if (npne > 1)
      return fusion_refuse(v, FR_IN_PLACE,
                           "%s %s %s, which %s updates in place, and holds %d non-elementwise ops (XLA: producer "
                           "fusion has multiple non-elementwise ops, bailing)",
                           p->name, buf == p ? "is" : "reads", buf->name, c->name, npne);
    if (npne == 0) {
      if (c->op == IR_OP_FUSION && consumer_conflict(c, p))
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s reads %s's value with a non-elementwise op as well as updating it in place (XLA: "
                             "non-elementwise ops in consumer lead to inplace conflict after fusion)",
                             c->name, p->name);
      continue;
    }
    const IrInstr *dus = NULL;
    int ndus = extract(c, NULL, IR_OP_DYNAMIC_UPDATE_SLICE, &dus);
    if (ndus == 0) continue;
    if (ndus > 1)
      return fusion_refuse(v, FR_IN_PLACE, "%s holds %d dynamic-update-slices (XLA: multiple dus ops, bailing)", c->name,
                           ndus);
    int rank = dus->shape.rank;
    if (pne->op == IR_OP_SLICE || pne->op == IR_OP_DYNAMIC_SLICE) {
      if (dus->noperands < 2 + rank || !ir_shape_equal(&pne->shape, &dus->operands[1]->shape))
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s's %s has another shape than the update %s writes in place", p->name,
                             ir_op_name(pne->op), dus->name);
    }
    if (pne->op == IR_OP_SLICE || pne->op == IR_OP_DYNAMIC_SLICE) {
      if (!fusion_slice_matches_dus(p, pne, buf, c, dus, v)) return false;
      bool slice = pne->op == IR_OP_SLICE;
      if (c->op == IR_OP_FUSION && !safe_slice_into_dus_fusion(p, c, dus))
        return fusion_refuse(v, FR_IN_PLACE,
                             "%s's %s would also reach another non-elementwise op of %s, which would then read the "
                             "buffer %s updates in place (XLA: Fusing %s into DUS will also fuse another "
                             "non-elementwise op with shared operand as DUS)",
                             p->name, slice ? "slice" : "dynamic-slice", c->name, c->name, slice ? "slice" : "DS");
      continue;
    }
    return fusion_refuse(v, FR_IN_PLACE,
                         "%s %s %s through a %s while %s updates it in place (XLA: unrecognized in-place update "
                         "non-elementwise output pair)",
                         p->name, buf == p ? "is" : "reads", buf->name, ir_op_name(pne->op), c->name);
  }
  return true;
}

/* XLA's CanEmitInputFusedScatter: nothing fuses into the output of a scatter, nor into (or reads)
 * the buffer a scatter updates in place; its other operands fuse like any. */
static bool can_emit_input_fused_scatter(const IrInstr *p, const IrInstr *c, FusionVerdict *v) {
  if (fusion_fused_root(p)->op == IR_OP_SCATTER)
    return fusion_refuse(v, FR_IN_PLACE, "%s is a scatter: XLA does not fuse into the output of scatter", p->name);
  IrOpcode ipop = IR_OP_COUNT;
  const IrInstr *buf = in_place_buffer(c, &ipop);
  if (buf && ipop == IR_OP_SCATTER) {
    if (buf == p)
      return fusion_refuse(v, FR_IN_PLACE, "%s is the buffer %s scatters into in place: XLA does not fuse into the "
                           "in-place operand of scatter", p->name, c->name);
    if (fusion_reads(p, buf))
      return fusion_refuse(v, FR_IN_PLACE, "%s reads %s, the buffer %s scatters into in place", p->name, buf->name,
                           c->name);
  }
  return true;
}

/* ---------- XLA's CanFuse ---------- */

static bool can_fuse(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  const PassSettings *s = cx->settings;
  memset(v, 0, sizeof *v);
  if (fusion_pass_disabled((PassContext *)cx, "priority-fusion"))
    return fusion_refuse(v, FR_POLICY, "priority-fusion is switched off");
  if (fusion_is_generic_triton(p) || fusion_is_generic_triton(c)) {
    /* CanFuseTriton: the other side must be fusible and supported by Triton's emitter. */
    const IrInstr *other = fusion_is_generic_triton(p) ? c : p;
    if (!fusion_xla_fusible(other, s) && !fusion_is_generic_triton(other)) return refuse_unfusible(other, other == p ? "a producer" : "a consumer", cx, v);
    if (!triton_supported(other))
      return fusion_refuse(v, FR_NOT_FUSIBLE, "%s holds an op Triton's emitter does not support, so it cannot join the Triton fusion %s",
                           other->name, other == p ? c->name : p->name);
    /* XLA decides a Triton fusion by whether it can be tiled (CanFuseTriton) and checks nothing
     * else: SymbolicTileAnalysis::AnalyzeFusion, then TryFindTopKBestTilingsForFusion. */
    TritonTiling tt;
    int tiled = fusion_triton_can_tile(cx->device, p, c, &tt);
    if (tiled == 0 && tt.untileable)
      return fusion_refuse(v, FR_NOT_FUSIBLE,
                           "%s merges dimensions of which the fused Triton kernel of %s into %s reads only part of "
                           "the minor one but several of the major one: XLA's SymbolicTileAnalysis fails to compute a "
                           "symbolic tile for it",
                           tt.untileable->name, p->name, c->name);
    /* TryFindTopKBestTilingsForFusion keeps only tilings whose every tile fits in registers
     * (DoesTileFitsInRegisters); with none left CanFuseTriton refuses: "Fusion can not be tiled
     * with SymbolicTileAnalysis: No valid tilings found." */
    if (tiled == 0)
      return fusion_refuse(v, FR_REGISTERS,
                           "none of the %ld tilings of the Triton fusion %s into %s fits in registers: %s needs a tile "
                           "of %lld elements (padded to powers of two), over XLA's %lld (0.4 x registers per block; "
                           "XLA: No valid tilings found)",
                           tt.tilings, p->name, c->name, tt.too_big ? tt.too_big->name : "an operand",
                           (long long)tt.too_big_elems, (long long)tt.max_elems);
    fusion_verdict_ok(v, "%s fuses into the Triton fusion %s", p->name, c->name);
    return true;
  } else {
    if (!fusion_xla_fusible(p, s)) return refuse_unfusible(p, "a producer", cx, v);
    if (!fusion_xla_fusible(c, s)) return refuse_unfusible(c, "a consumer", cx, v);
  }
  if (c->op == IR_OP_BITCAST)
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a bitcast: XLA does not fuse into a single bitcast as consumer", c->name);
  if (!can_emit_input_fused_scatter(p, c, v)) return false;
  if (significant_reduce(p) && significant_reduce(c))
    return fusion_refuse(v, FR_REDUCE_INTO_REDUCE,
                         "both %s and %s contain a reduction of 16 or more inputs per output: XLA does not fuse a "
                         "reduce into a reduce",
                         p->name, c->name);
  if (fusion_reduction_emitter(p, NULL) && !fusion_reduction_emitter(c, p))
    return fusion_refuse(v, FR_REDUCE_EPILOGUE,
                         "%s is a reduction fusion; with %s fused into its output it would become a loop fusion and "
                         "lose the reduction emitter (XLA fuses only single-operand elementwise epilogues)",
                         p->name, c->name);
  /* FusionFitsInBudget. */
  /* FusionFitsInBudget(consumer, producer, is_consumer_producer_fusion): the distinct operands of
   * both (less the edge being fused) and the output buffers of both (SubshapeCount: a tuple counts
   * itself and its elements), unless the fusion has no more operands than the consumer had. */
  int outs = fusion_subshape_count(&c->shape) + fusion_subshape_count(&p->shape);
  int nops = fusion_operands_and_outputs(p, c, false) - (c->shape.type == IR_TUPLE ? c->shape.ntuple : 1);
  int ops = nops + outs;
  int budget = s && s->operand_budget > 0 && s->operand_budget != 64 ? s->operand_budget : 96;
  fusion_verdict_metric(v, "operands", ops);
  if (c->noperands + p->noperands - 1 + outs > budget && nops > c->noperands && ops > budget) {
    fusion_verdict_metric(v, "budget", budget);
    return fusion_refuse(v, FR_OPERAND_BUDGET,
                         "fusing %s into %s would give the kernel %d operands and outputs; budget %d", p->name,
                         c->name, ops, budget);
  }
  const DeviceProfile *d = cx->device;
  int64_t smem = fusion_shared_memory(p) + fusion_shared_memory(c);
  if (d && d->is_gpu && d->shared_mem_per_block > 0 && smem > d->shared_mem_per_block) {
    fusion_verdict_metric(v, "shared_bytes", (double)smem);
    return fusion_refuse(v, FR_SHARED_MEMORY,
                         "the reductions of %s and %s together need %" PRId64 " B of shared memory per block; %s "
                         "has %d B",
                         p->name, c->name, smem, d->name, d->shared_mem_per_block);
  }
  int red = fusion_unnested_reductions(p) + fusion_unnested_reductions(c);
  if (red > FUSION_MAX_UNNESTED_REDUCTIONS)
    return fusion_refuse(v, FR_UNNESTED_REDUCTIONS,
                         "fusing %s into %s would put %d unnested reductions in one kernel; limit %d", p->name,
                         c->name, red, FUSION_MAX_UNNESTED_REDUCTIONS);
  /* ProducerConsumerMergedTooLarge: the producer's code is emitted once per emission of the
   * consumer's parameter. */
  double merged = 0;
  if (fusion_merged_too_large(p, c, &merged)) {
    fusion_verdict_metric(v, "ir_size", merged);
    return fusion_refuse(v, FR_IR_SIZE,
                         "fusing %s into %s would emit %.0f instructions (the producer once per use); limit %d: an "
                         "overly large code duplication",
                         p->name, c->name, merged, FUSION_MAX_IR_SIZE);
  }
  if (p->is_root)
    return fusion_refuse(v, FR_ROOT, "%s is the root of %s: XLA does not fuse into the output of the root instruction",
                         p->name, p->parent ? p->parent->name : "its computation");
  if (!should_fuse_in_place_op(p, c, v)) return false;
  fusion_verdict_ok(v, "%s fuses into %s", p->name, c->name);
  return true;
}

/* ---------- the cost model: XLA's GpuPerformanceModel ---------- */

typedef struct {
  bool all_ok;
  bool any_non_bitcast;
  double us_unfused, us_fused;
  int n;
  FusionVerdict *v; /* one per user */
  IrInstr **users;
} Eval;

static void eval_free(Eval *e) {
  fx_free(e->v);
  fx_free(e->users);
  memset(e, 0, sizeof *e);
}

/* ---------- GpuPerformanceModelCache ----------
 *
 * XLA asks its performance model through a cache (EstimateRunTimeForInstructionCached,
 * EstimateRunTimeForFusionCached) and drops an entry only when priority fusion invalidates it:
 * the producer it fused and the consumers it fused into (InvalidateCaches). Every other time
 * stays as it was computed, even where a fresh estimate would now differ (a transpose's
 * coalescing looks along its operand chain, which fusion may have changed), so the priorities
 * XLA compares are made of those kept times, and so are fxplain's. With q NULL nothing is kept. */

static double c_exec(Queue *q, const DeviceProfile *d, IrInstr *i) {
  if (!q || !q_version_ok(q, i->id)) return perf_exec_us(d, i);
  if (!q->exec_ok[i->id]) {
    q->exec[i->id] = perf_exec_us(d, i);
    q->exec_ok[i->id] = 1;
  }
  return q->exec[i->id];
}

static PairTime *pair_find(Queue *q, int p, int c) {
  if (p >= q->nversion) return NULL;
  PairList *l = &q->pairs[p];
  for (int k = 0; k < l->n; k++)
    if (l->v[k].cons == c) return &l->v[k];
  return NULL;
}

static double c_fused(Queue *q, const DeviceProfile *d, IrInstr *p, IrInstr *c) {
  if (!q || !q_version_ok(q, p->id)) return perf_fused_exec_us(d, p, c);
  PairTime *t = pair_find(q, p->id, c->id);
  if (t) return t->us;
  double us = perf_fused_exec_us(d, p, c);
  PairList *l = &q->pairs[p->id];
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 4;
    PairTime *nv = fx_realloc(l->v, sizeof(PairTime) * (size_t)nc);
    if (!nv) return us; /* not kept: the next ask computes it again */
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = (PairTime){c->id, us};
  return us;
}

/* GpuPerformanceModelCache::Invalidate: x's own time, its fused times as a producer, and its
 * fused times as the consumer of each operand (through a get-tuple-element, of the tuple). */
static void c_invalidate(Queue *q, const IrInstr *x) {
  if (x->id >= q->nversion) return;
  q->exec_ok[x->id] = 0;
  q->pairs[x->id].n = 0;
  for (int k = 0; k < x->noperands; k++) {
    const IrInstr *o = x->operands[k];
    if (!o) continue;
    if (o->op == IR_OP_GET_TUPLE_ELEMENT && o->noperands == 1) o = o->operands[0];
    if (o->id >= q->nversion) continue;
    PairList *l = &q->pairs[o->id];
    for (int j = 0; j < l->n; j++)
      if (l->v[j].cons == x->id) l->v[j--] = l->v[--l->n];
  }
}

/* EstimateRunTimesForPriorityFusion over the given consumers: one launch per kernel, the producer
 * and each consumer apart, against each consumer with the producer fused in. */
static void run_times(Queue *q, const DeviceProfile *d, IrInstr *p, IrInstr **cons, int n, double *unfused,
                      double *fused) {
  *unfused = PERF_LAUNCH_US * (n + 1) + c_exec(q, d, p);
  *fused = PERF_LAUNCH_US * n;
  for (int u = 0; u < n; u++) {
    *unfused += c_exec(q, d, cons[u]);
    *fused += c_fused(q, d, p, cons[u]);
  }
}

/* CanFuseWithAllNonBitcastUsers and EstimateRunTimesForPriorityFusion for producer p. Every
 * user's verdict is computed (XLA stops at the first refusal). XLA estimates the times only of a
 * producer every user can take, through its cache (q); the times of a refused one are estimated
 * here too, for the report, and not kept. Returns false on allocation failure. */
static bool evaluate(const PassContext *cx, Queue *q, IrInstr *p, Eval *e, bool times) {
  memset(e, 0, sizeof *e);
  e->n = p->nusers;
  e->v = fx_calloc((size_t)(e->n ? e->n : 1), sizeof(FusionVerdict));
  e->users = fx_malloc(sizeof(IrInstr *) * (size_t)(e->n ? e->n : 1));
  if (!e->v || !e->users) return false;
  if (e->n) memcpy(e->users, p->users, sizeof(IrInstr *) * (size_t)e->n);
  fusion_memo_open(); /* nothing changes until it closes */
  e->all_ok = e->n > 0;
  for (int u = 0; u < e->n; u++) {
    IrInstr *c = e->users[u];
    /* Users that are bitcasts keeping the bit width are skipped (IsFusibleBitcast); any other
     * bitcast is a consumer like the rest, and not a fusible one. */
    if (c->op == IR_OP_BITCAST && fusion_xla_fusible(c, cx->settings)) {
      fusion_refuse(&e->v[u], FR_NOT_FUSIBLE, "%s is a bitcast: it is skipped, and takes %s only when %s's other users do",
                    c->name, p->name, p->name);
      e->v[u].ok = true; /* does not block the producer */
      continue;
    }
    e->any_non_bitcast = true;
    if (!can_fuse(p, c, cx, &e->v[u])) e->all_ok = false;
  }
  if (!e->any_non_bitcast) e->all_ok = false;
  /* In the pass (q set), a refused producer's times are only for its report: push_eval
   * estimates them when the report is written, not at every evaluation. */
  if (times && (e->all_ok || !q)) run_times(e->all_ok ? q : NULL, cx->device, p, e->users, e->n, &e->us_unfused, &e->us_fused);
  fusion_memo_close();
  return true;
}

static void put_times(FusionVerdict *v, const Eval *e) {
  fusion_verdict_metric(v, "us_fused", e->us_fused);
  fusion_verdict_metric(v, "us_unfused", e->us_unfused);
}

static unsigned refusal_hash(const Eval *e, bool slower) {
  unsigned h = slower ? 7u : 3u;
  for (int u = 0; u < e->n; u++) {
    const char *r = e->v[u].ok ? "ok" : e->v[u].reason;
    for (const char *q = r ? r : ""; *q; q++) h = h * 31u + (unsigned char)*q;
    h = h * 31u + (unsigned)e->users[u]->id;
  }
  return h ? h : 1u;
}

/* Whether report_refusal would write p's refusal: its verdict changed since the last report. */
static bool refusal_is_new(const Queue *q, const IrInstr *p, const Eval *e, bool slower) {
  return p->id >= q->nversion || q->logged[p->id] != refusal_hash(e, slower);
}

/* Reports a refused producer: every consumer's reason, once per change of verdict. */
static void report_refusal(PassContext *cx, Queue *q, IrInstr *p, Eval *e, bool slower) {
  if (!refusal_is_new(q, p, e, slower)) return;
  if (p->id < q->nversion) q->logged[p->id] = refusal_hash(e, slower);
  const char *first_bad = NULL;
  for (int u = 0; u < e->n; u++)
    if (!e->v[u].ok && !first_bad) first_bad = e->users[u]->name;
  if (!e->any_non_bitcast) {
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    fusion_refuse(&v, FR_NOT_FUSIBLE, "%s has only bitcast users: XLA does not fuse it (not fusing because there are "
                  "only bitcast users) until they are fused into their own consumers", p->name);
    fusion_verdict_emit(cx, "fuse", p->name, e->n ? e->users[0]->name : "-", NULL, &v);
    return;
  }
  for (int u = 0; u < e->n; u++) {
    FusionVerdict *v = &e->v[u];
    if (e->users[u]->op == IR_OP_BITCAST) continue;
    if (v->ok) {
      if (first_bad) {
        fusion_refuse(v, FR_CODE_DUPLICATION,
                      "%s could go into %s, but not into %s, so it must be written out anyway: priority fusion "
                      "fuses a producer into all of its %d users or none",
                      p->name, fusion_consumer_label(e->users[u], p), first_bad, e->n);
      } else {
        fusion_refuse(v, FR_SLOWER_IF_FUSED,
                      "fusing %s into its %d %s would take %.2f us instead of %.2f us on %s: it will execute slower "
                      "if fused",
                      p->name, e->n, e->n == 1 ? "user" : "users", e->us_fused, e->us_unfused, cx->device->name);
      }
    }
    put_times(v, e);
    fusion_verdict_emit(cx, "fuse", p->name, fusion_consumer_label(e->users[u], p), NULL, v);
  }
}

static bool queueable(const IrInstr *p, const PassSettings *s) {
  switch (p->op) {
  case IR_OP_PARAMETER:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_CONSTANT: return false; /* constants: fused at the end */
  default: return p->nusers > 0 && (fusion_xla_fusible(p, s) || fusion_is_generic_triton(p));
  }
}

/* XLA's priority is an absl::Duration, a whole number of quarter nanoseconds, so equal times give
 * exactly equal priorities and the tie goes to the instruction id; in microseconds as doubles,
 * 2.002 - 1.002 and 2.001 - 1.001 differ in the last bit. The priority is kept in those quarters. */
double priority_fusion_priority(double us_unfused, double us_fused) {
  return (double)(llround(us_unfused * 4000.0) - llround(us_fused * 4000.0));
}

static int64_t ticks(double us) { return llround(us * 4000.0); }

/* What one fusion step changed for one operand of the fusions it made (operands_to_new_consumers_
 * and operands_to_removed_consumers_runtimes): the new fusions that read it, and, when it was
 * queued, the times its old consumers (the fused producer and its users) added to its priority. */
typedef struct {
  IrInstr *op;
  IrInstr **news;
  int nnews, cap;
  bool incremental;
  int64_t rem_unfused, rem_fused;
} OpUpdate;

/* CalculateProducerPriority: computes p's priority and queues it when it is not negative. An
 * incremental update (inc, for a producer already queued whose consumers a fusion replaced) adds
 * to the priority it had the times of the new consumers less those of the replaced ones, as XLA
 * does, instead of estimating every user again. */
static bool push_eval(PassContext *cx, Queue *q, IrInstr *p, const OpUpdate *inc) {
  if (!q_version_ok(q, p->id)) return false;
  bool was_queued = q->queued[p->id];
  q->version[p->id]++;
  q->queued[p->id] = 0;
  if (p->dead || !queueable(p, cx->settings)) return true;
  if (p->op == IR_OP_BITCAST) return q_push(q, p, INFINITY);
  bool incremental = inc && inc->incremental && was_queued;
  Eval e;
  if (!evaluate(cx, q, p, &e, !incremental)) {
    eval_free(&e);
    return false;
  }
  bool ok = true;
  if (!e.all_ok) {
    /* the times the report shows, estimated only when it is written (no cache: XLA keeps no
       times for a producer it refused) */
    if (refusal_is_new(q, p, &e, false)) run_times(NULL, cx->device, p, e.users, e.n, &e.us_unfused, &e.us_fused);
    report_refusal(cx, q, p, &e, false);
    eval_free(&e);
    return true;
  }
  if (incremental) {
    double nu, nf;
    run_times(q, cx->device, p, inc->news, inc->nnews, &nu, &nf);
    q->t_unfused[p->id] += ticks(nu) - inc->rem_unfused;
    q->t_fused[p->id] += ticks(nf) - inc->rem_fused;
    e.us_unfused = (double)q->t_unfused[p->id] / 4000.0;
    e.us_fused = (double)q->t_fused[p->id] / 4000.0;
  } else {
    q->t_unfused[p->id] = ticks(e.us_unfused);
    q->t_fused[p->id] = ticks(e.us_fused);
  }
  double prio = (double)(q->t_unfused[p->id] - q->t_fused[p->id]);
  if (prio < 0) report_refusal(cx, q, p, &e, true);
  else ok = q_push(q, p, prio);
  eval_free(&e);
  return ok;
}

bool priority_fusion_judge(const PassContext *cx, IrInstr *p, PriorityJudgement *out) {
  memset(out, 0, sizeof *out);
  Eval e;
  if (!evaluate(cx, NULL, p, &e, true)) {
    eval_free(&e);
    return false;
  }
  out->eligible = e.all_ok;
  out->us_fused = e.us_fused;
  out->us_unfused = e.us_unfused;
  out->users = e.n;
  if (!e.any_non_bitcast) {
    out->reason = FR_NOT_FUSIBLE;
    snprintf(out->detail, sizeof out->detail, "%s has only bitcast users", p->name);
  }
  for (int u = 0; u < e.n && !out->reason; u++)
    if (!e.v[u].ok) {
      out->reason = e.v[u].reason;
      snprintf(out->detail, sizeof out->detail, "%s", e.v[u].detail);
    }
  eval_free(&e);
  return true;
}

/* What fusing a producer into a consumer changed, for the estimate cache: the fusion (the
 * consumer itself, or the fusion that took its place), the producer, and the users of the fusion
 * (an operand of theirs changed). The fusion's other operands are untouched: they only gained a
 * user, which no estimate depends on. A user that is no fusion keeps only its cost analysis,
 * which reads its operands' shapes and nothing else of them, so it stays when the fusion has the
 * shape of the consumer it replaced (always, as priority fusion makes no multi-output fusion):
 * a root tuple of thousands of outputs is then not analysed again after every fusion that feeds
 * it. The producer's users are forgotten once its step is over (forget_producer_users). */
static void forget_fused(const IrInstr *f, const IrInstr *cons, const IrInstr *p) {
  perf_cache_forget(f);
  perf_cache_forget(cons);
  perf_cache_forget(p);
  bool same_shape = f == cons || ir_shape_equal(&f->shape, &cons->shape);
  for (int u = 0; u < f->nusers; u++)
    if (!same_shape || f->users[u]->op == IR_OP_FUSION) perf_cache_forget(f->users[u]);
  if (f != cons)
    for (int u = 0; u < cons->nusers; u++) perf_cache_forget(cons->users[u]);
}

/* After a producer went into its consumers: the producer and the users it has left. Its users
 * did not change (it only lost some of them), so forgetting them once the step is over, rather
 * than after each consumer, is enough: a broadcast fused into its thousands of users would
 * otherwise forget every user once per user. */
static void forget_producer_users(const IrInstr *p) {
  perf_cache_forget(p);
  for (int u = 0; u < p->nusers; u++) perf_cache_forget(p->users[u]);
}

/* PriorityFusion::ChooseKind: a fusion's kind follows the emitter XLA's fusion analysis picks for
 * it: reduction, transpose, concatenate and scatter emitters make kInput, the loop emitter kLoop;
 * Triton and custom fusions keep kCustom. */
static void choose_kind(IrInstr *f) {
  const char *k = ir_fusion_kind(f);
  if (fusion_is_generic_triton(f) || (k && strcmp(k, "kCustom") == 0)) return;
  ir_attr_set_text(f, "kind", fusion_emitter_kind(f) == FUSION_EMITTER_LOOP ? "kLoop" : "kInput");
}

/* The OpUpdate of o in this step, or NULL. */
static OpUpdate *op_update_of(const Queue *q, OpUpdate *ups, const IrInstr *o) {
  return o->id < q->nversion && q->up_step[o->id] == q->step ? &ups[q->up_at[o->id]] : NULL;
}

/* The OpUpdate of o among the n of this step, added when absent; NULL on allocation failure. */
static OpUpdate *op_update(Queue *q, OpUpdate **ups, int *n, int *cap, IrInstr *o) {
  OpUpdate *had = op_update_of(q, *ups, o);
  if (had) return had;
  if (!q_version_ok(q, o->id)) return NULL;
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    OpUpdate *nv = fx_realloc(*ups, sizeof(OpUpdate) * (size_t)nc);
    if (!nv) return NULL;
    memset(nv + *cap, 0, sizeof(OpUpdate) * (size_t)(nc - *cap));
    *ups = nv;
    *cap = nc;
  }
  OpUpdate *u = &(*ups)[(*n)++];
  IrInstr **keep = u->news;
  int keep_cap = u->cap;
  memset(u, 0, sizeof *u);
  u->news = keep; /* the array is reused from step to step */
  u->cap = keep_cap;
  u->op = o;
  q->up_step[o->id] = q->step;
  q->up_at[o->id] = *n - 1;
  return u;
}

/* Each new fusion is added to its operands' entries right after it is made, so one already
 * there is the last one added. */
static bool add_new_consumer(OpUpdate *u, IrInstr *f) {
  if (u->nnews > 0 && u->news[u->nnews - 1] == f) return true;
  if (u->nnews == u->cap) {
    int nc = u->cap ? u->cap * 2 : 4;
    IrInstr **nv = fx_realloc(u->news, sizeof(IrInstr *) * (size_t)nc);
    if (!nv) return false;
    u->news = nv;
    u->cap = nc;
  }
  u->news[u->nnews++] = f;
  return true;
}

static bool add_touched(Queue *q, IrInstr ***t, int *n, int *cap, IrInstr *x) {
  if (!q_version_ok(q, x->id)) return false;
  if (q->touched_step[x->id] == q->step) return true;
  q->touched_step[x->id] = q->step;
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 64;
    IrInstr **nt = fx_realloc(*t, sizeof(IrInstr *) * (size_t)nc);
    if (!nt) return false;
    *t = nt;
    *cap = nc;
  }
  (*t)[(*n)++] = x;
  return true;
}

/* ComputeRuntimesOfRemovedConsumers: for each queued operand of this step's fusions, the times
 * its replaced consumers (the users of producer p and p itself) added to its priority, as they
 * were kept when it was last updated. */
static void removed_runtimes(Queue *q, OpUpdate *ups, int nups, IrInstr *p, IrInstr **cur, int ncur) {
  for (int k = 0; k < nups; k++) {
    OpUpdate *u = &ups[k];
    int o = u->op->id;
    if (o >= q->nversion || !q->queued[o] || !q->exec_ok[o]) continue;
    u->rem_unfused = ticks(q->exec[o]) + ticks(PERF_LAUNCH_US);
    u->rem_fused = 0;
    for (int j = 0; j <= ncur; j++) {
      IrInstr *cons = j < ncur ? cur[j] : p;
      PairTime *t = pair_find(q, o, cons->id);
      if (!t) continue;
      u->rem_fused += ticks(t->us);
      if (cons->id < q->nversion && q->exec_ok[cons->id]) u->rem_unfused += ticks(q->exec[cons->id]);
    }
    u->incremental = true;
  }
}

static bool prio_computation(IrComputation *c, PassContext *cx, int *fused) {
  Queue q;
  memset(&q, 0, sizeof q);
  bool ok = true;
  int n0 = c->ninstrs;
  IrInstr **initial = fx_malloc(sizeof(IrInstr *) * (size_t)(n0 ? n0 : 1));
  if (!initial) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(initial, c->instrs, sizeof(IrInstr *) * (size_t)n0);
  /* The estimates of the fusions in c are kept until the constants are fused: only fusion_fuse
   * below changes c in between, and forget_fused drops what each call touches. */
  perf_cache_open();
  /* PriorityFusionQueue's constructor estimates every fusible instruction as one kernel first
   * (UpdatePerformanceModelCache), then computes the priorities. */
  for (int k = 0; k < n0; k++)
    if (fusion_xla_fusible(initial[k], cx->settings) || fusion_is_generic_triton(initial[k]))
      c_exec(&q, cx->device, initial[k]);
  for (int k = 0; k < n0 && ok; k++) ok = push_eval(cx, &q, initial[k], NULL);
  fx_free(initial);
  HeapItem it;
  IrInstr **touched = NULL, **cur = NULL;
  int ntouched = 0, cap = 0, ncur = 0, curcap = 0;
  OpUpdate *ups = NULL;
  int nups = 0, upcap = 0;
  while (ok && !pass_interrupted(cx) && q_pop(&q, &it)) { /* Ctrl-C: stop at the next producer */
    IrInstr *p = it.instr;
    if (p->dead || p->parent != c) continue;
    q.queued[p->id] = 0; /* dequeued */
    Eval e;
    if (!evaluate(cx, &q, p, &e, true)) {
      eval_free(&e);
      ok = false;
      break;
    }
    char pname[256];
    snprintf(pname, sizeof pname, "%s", p->name);
    ntouched = nups = ncur = 0;
    q.step++; /* the per-id marks of the last step no longer count */
    /* current_consumers_: every user; of a bitcast, those that can take it (DequeueNextProducer). */
    if (e.n > curcap) {
      IrInstr **nc = fx_realloc(cur, sizeof(IrInstr *) * (size_t)e.n);
      if (!nc) {
        eval_free(&e);
        ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
        break;
      }
      cur = nc;
      curcap = e.n;
    }
    for (int u = 0; u < e.n; u++)
      if (p->op != IR_OP_BITCAST || (e.users[u]->op != IR_OP_BITCAST && e.v[u].ok)) cur[ncur++] = e.users[u];
    int nfuse = 0;
    for (int u = 0; u < e.n; u++) nfuse += e.users[u]->op != IR_OP_BITCAST && (p->op != IR_OP_BITCAST || e.v[u].ok);
    bool dup = nfuse > 1 || (nfuse == 1 && e.n > 1);
    for (int u = 0; u < e.n && ok; u++) {
      IrInstr *cons = e.users[u];
      if (cons->op == IR_OP_BITCAST) continue;
      /* A bitcast producer goes into the consumers that can take it (DequeueNextProducer). */
      if (p->op == IR_OP_BITCAST && !e.v[u].ok) {
        put_times(&e.v[u], &e);
        fusion_verdict_emit(cx, "fuse", pname, fusion_consumer_label(cons, p), NULL, &e.v[u]);
        continue;
      }
      char label[256];
      snprintf(label, sizeof label, "%s", fusion_consumer_label(cons, p));
      /* A Triton pair: CanFuseTriton's best tiling becomes the new fusion's backend config. */
      char tconfig[512] = "";
      if (fusion_is_generic_triton(p) || fusion_is_generic_triton(cons)) {
        TritonTiling tt;
        if (fusion_triton_tiling(cx->device, p, cons, NULL, &tt) == 1) fusion_triton_config_text(&tt, tconfig, sizeof tconfig);
      }
      IrInstr *f = fusion_fuse(cons, p);
      if (!f) {
        ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory fusing %s", cx->pass, pname);
        break;
      }
      if (tconfig[0]) ir_attr_set_text(f, "backend_config", tconfig);
      choose_kind(f);
      forget_fused(f, cons, p);
      FusionVerdict *v = &e.v[u];
      if (p->op == IR_OP_BITCAST)
        fusion_verdict_ok(v, "%s is a bitcast, free to fuse: XLA fuses bitcasts first", pname);
      else
        fusion_verdict_ok(v, "fusing %s into its %d %s saves %.2f us on %s (%.2f us unfused, %.2f us fused)", pname,
                          e.n, e.n == 1 ? "user" : "users", e.us_unfused - e.us_fused, cx->device->name, e.us_unfused,
                          e.us_fused);
      put_times(v, &e);
      fusion_verdict_emit(cx, dup ? "duplicate" : "fuse", pname, label, f->name, v);
      (*fused)++;
      /* OnFusingInstruction: a consumer the fusion replaced leaves the queue; the new fusion and
       * its operands get new priorities, and each operand learns its new consumer. */
      if (f != cons && cons->id < q.nversion) {
        q.version[cons->id]++;
        q.queued[cons->id] = 0;
      }
      for (int o = 0; o < f->noperands && ok; o++) {
        IrInstr *op = f->operands[o];
        if (op == p || op->op == IR_OP_CONSTANT || op->op == IR_OP_GET_TUPLE_ELEMENT) continue;
        OpUpdate *up = op_update(&q, &ups, &nups, &upcap, op);
        ok = up && add_new_consumer(up, f) && add_touched(&q, &touched, &ntouched, &cap, op);
      }
      ok = ok && add_touched(&q, &touched, &ntouched, &cap, f);
      if (!ok) fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    }
    eval_free(&e);
    if (!ok) break;
    forget_producer_users(p);
    removed_runtimes(&q, ups, nups, p, cur, ncur);
    /* InvalidateCaches: the producer once it is gone, and every consumer. */
    if (p->dead || p->parent != c || p->nusers == 0) {
      c_invalidate(&q, p);
      q.version[p->id]++;
      q.queued[p->id] = 0;
    }
    for (int k = 0; k < ncur; k++) c_invalidate(&q, cur[k]);
    /* UpdatePriorities. */
    for (int k = 0; k < ntouched && ok; k++) {
      IrInstr *x = touched[k];
      if (x->dead || x->parent != c) continue;
      ok = push_eval(cx, &q, x, op_update_of(&q, ups, x));
    }
  }
  for (int k = 0; k < upcap; k++) fx_free(ups[k].news);
  fx_free(ups);
  fx_free(cur);
  fx_free(touched);
  perf_cache_close();
  /* Small constants go into every fusible user last (XLA: "Fuse all constants"): the constants
   * are listed first, since fusing one into its last user takes it out of the computation. */
  int nk = 0;
  IrInstr **consts = ok ? fx_malloc(sizeof(IrInstr *) * (size_t)(c->ninstrs ? c->ninstrs : 1)) : NULL;
  if (ok && !consts) ok = false;
  for (int k = 0; ok && k < c->ninstrs; k++) {
    IrInstr *k0 = c->instrs[k];
    if (!k0->dead && k0->op == IR_OP_CONSTANT && ir_shape_is_array(&k0->shape) && ir_shape_elements(&k0->shape) <= 1)
      consts[nk++] = k0;
  }
  for (int k = 0; k < nk && ok; k++) {
    IrInstr *k0 = consts[k];
    int nu = k0->nusers;
    IrInstr **users = fx_malloc(sizeof(IrInstr *) * (size_t)(nu ? nu : 1));
    if (!users) {
      ok = false;
      break;
    }
    memcpy(users, k0->users, sizeof(IrInstr *) * (size_t)nu);
    for (int u = 0; u < nu && ok; u++) {
      IrInstr *user = users[u];
      /* Into Triton fusions too (XLA's FuseSmallConstantIntoTritonFusion). */
      if (user->dead || !(fusion_xla_fusible(user, cx->settings) || fusion_is_generic_triton(user))) continue;
      FusionVerdict sv;
      if (!can_emit_input_fused_scatter(k0, user, &sv)) continue;
      char cname[256];
      snprintf(cname, sizeof cname, "%s", k0->name);
      IrInstr *f = fusion_fuse(user, k0);
      if (!f) {
        ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory fusing %s", cx->pass, cname);
        break;
      }
      choose_kind(f);
      (*fused)++;
    }
    fx_free(users);
  }
  fx_free(consts);
  q_free(&q);
  if (*fused) ir_computation_sort(c);
  if (!ok && !cx->err->set) fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "priority-fusion")) return true;
  IrComputation *comps[1024];
  int n = fusion_fusible_computations(m, comps, 1024);
  int fused = 0;
  for (int k = 0; k < n && !pass_interrupted(cx); k++)
    if (!prio_computation(comps[k], cx, &fused)) return false;
  *changed = fused > 0;
  return true;
}

const Pass pass_priority_fusion = {
    "priority-fusion",
    "fuse producers into all their users in order of the time the cost model says fusing saves",
    run,
};

/* pass_mof_current.c — today's XLA multi_output_fusion (GPU, after priority-fusion), as the
 * priority pipeline runs it. The classic pipeline keeps the 2021 rules (pass_multi_output_fusion.c).
 *
 * Follows XLA's MultiOutputFusion (xla/service/gpu/transforms/multi_output_fusion.cc) and the
 * gpu_fusible.cc predicates it calls:
 *
 *   - producers are visited uses before defs; constants and custom fusions are skipped;
 *   - FuseSiblings: the users of a producer that is not an effective scalar, filtered by
 *     IsSiblingFusionCandidate (a multi-output fusion root: a reduction fusion or contiguous
 *     reduce, a tiled transpose, a loop fusion or an elementwise op), multi-output fusions first,
 *     then fusions, then plain ops; each fusion takes every later sibling that is not connected
 *     to it, has a compatible loop shape (ShapesCompatibleForMultiOutputFusion), does not read a
 *     disjoint slice of the shared operand (ParameterSlicesAreNonOverlapping), is not an in-place
 *     dynamic-update-slice and fits the budget (LegalToFuse);
 *   - then producer-consumer: a producer that may stay an output (IsProducerMultiOutputFusible:
 *     not multi-output, no in-place op, loop-fusible, not physically transposing) with more than
 *     one user goes into the preferred consumer that can take it (a multi-output root with a
 *     compatible shape, no cycle, within budget, not slower by the cost model).
 *
 * Every pair judged is reported: "sibling" and "multi-output" decisions with XLA's reason. */
#include <string.h>

#include "fusion_analysis.h"
#include "gpu_fusible.h"
#include "mof_steps.h"
#include "../passes/passes.h"

static bool effective_scalar(const IrShape *s) {
  if (!ir_shape_is_array(s)) return false;
  for (int k = 0; k < s->rank; k++)
    if (s->dims[k] != 1) return false;
  return true;
}

static bool is_mof(const IrInstr *i) { return i->op == IR_OP_FUSION && fusion_fused_root(i)->op == IR_OP_TUPLE; }

static bool custom_fusion(const IrInstr *i) {
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kCustom") == 0;
}

/* IsSiblingFusionCandidate. */
static bool sibling_candidate(const IrInstr *i, const PassSettings *s) {
  if (i->nusers == 0 || !fusion_mof_root(i, s) || fusion_nestable_variadic_reduction(i)) return false;
  if (is_mof(i))
    for (int u = 0; u < i->nusers; u++)
      if (i->users[u]->op != IR_OP_GET_TUPLE_ELEMENT) return false;
  return true;
}

/* FindUniqueSlice: the one slice through which i reads parent, or NULL. */
static const IrInstr *unique_slice(const IrInstr *parent, const IrInstr *i) {
  if (i->op == IR_OP_SLICE) return i;
  if (i->op != IR_OP_FUSION) return NULL;
  IrComputation *fc = ir_fused_computation(i);
  const IrInstr *found = NULL;
  for (int k = 0; fc && k < i->noperands && k < fc->nparams; k++) {
    if (i->operands[k] != parent) continue;
    if (found) return NULL;
    const IrInstr *pp = fc->params[k];
    if (!pp || pp->nusers != 1) return NULL;
    found = unique_slice(pp, pp->users[0]);
    if (!found) return NULL;
  }
  return found;
}

/* ParameterSlicesAreNonOverlapping: siblings reading disjoint slices of a large operand gain
 * nothing from sharing it. */
static bool slices_overlap(const IrInstr *a, const IrInstr *b, const IrInstr *parent, FusionVerdict *v) {
  if (parent->shape.type == IR_TUPLE || ir_shape_bytes(&parent->shape) < 1024) return true;
  const IrInstr *sa = unique_slice(parent, a), *sb = unique_slice(parent, b);
  if (!sa || !sb) return true;
  int64_t s1[IR_MAX_RANK], l1[IR_MAX_RANK], d1[IR_MAX_RANK], s2[IR_MAX_RANK], l2[IR_MAX_RANK], d2[IR_MAX_RANK];
  int n1 = ir_attr_slice(sa, s1, l1, d1, IR_MAX_RANK), n2 = ir_attr_slice(sb, s2, l2, d2, IR_MAX_RANK);
  for (int d = 0; d < parent->shape.rank && d < n1 && d < n2; d++)
    if (!(s1[d] < l2[d] && s2[d] < l1[d]))
      return fusion_refuse(v, FR_SHAPE_MISMATCH,
                           "%s and %s read disjoint slices of %s (dimension %d): sharing the operand saves nothing, "
                           "the slices are non-overlapping",
                           a->name, b->name, parent->name, d);
  return true;
}

/* FusionFitsInBudget for two kernels that become one. */
static bool fits_budget(const IrInstr *a, const IrInstr *b, const PassContext *cx, FusionVerdict *v) {
  const DeviceProfile *d = cx->device;
  int64_t smem = fusion_shared_memory(a) + fusion_shared_memory(b);
  if (d && d->is_gpu && d->shared_mem_per_block > 0 && smem > d->shared_mem_per_block)
    return fusion_refuse(v, FR_SHARED_MEMORY, "%s and %s together need %lld B of shared memory per block; %s has %d B",
                         a->name, b->name, (long long)smem, d->name, d->shared_mem_per_block);
  int red = fusion_unnested_reductions(a) + fusion_unnested_reductions(b);
  if (red > FUSION_MAX_UNNESTED_REDUCTIONS)
    return fusion_refuse(v, FR_UNNESTED_REDUCTIONS, "%s and %s together hold %d unnested reductions; limit %d", a->name,
                         b->name, red, FUSION_MAX_UNNESTED_REDUCTIONS);
  const PassSettings *s = cx->settings;
  int budget = s && s->operand_budget > 0 && s->operand_budget != 64 ? s->operand_budget : 96;
  int ops = fusion_operands_and_outputs(a, b, true);
  if (ops > budget)
    return fusion_refuse(v, FR_OPERAND_BUDGET, "%s and %s together would have %d operands and outputs; budget %d",
                         a->name, b->name, ops, budget);
  return true;
}

static bool dus_root(const IrInstr *i) {
  return i->op == IR_OP_FUSION && fusion_fused_root(i)->op == IR_OP_DYNAMIC_UPDATE_SLICE;
}

/* CanFuseSiblings. */
static bool can_fuse_siblings(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *parent, const PassContext *cx,
                              FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  bool a_to_b = reach_path(r, a, b, false); /* searched once: along a long chain the search is the cost */
  if (a_to_b || reach_path(r, b, a, false)) {
    const IrInstr *from = a_to_b ? a : b, *to = from == a ? b : a;
    return fusion_refuse(v, FR_CYCLE, "%s and %s are connected (%s reaches %s): fusing them would introduce a cycle",
                         a->name, b->name, from->name, to->name);
  }
  if (!fusion_mof_shapes_compatible(a, b, v)) return false;
  if (!slices_overlap(a, b, parent, v)) return false;
  if (dus_root(a) || dus_root(b))
    return fusion_refuse(v, FR_IN_PLACE, "%s updates a buffer in place: XLA can't fuse multiple DUSs as siblings",
                         dus_root(a) ? a->name : b->name);
  if (!fits_budget(a, b, cx, v)) return false;
  fusion_verdict_ok(v, "%s and %s both read %s: one kernel with both outputs reads it once", a->name, b->name,
                    parent->name);
  return true;
}

/* A sibling decision names each kernel by its name. */
static void kernel_name(const IrInstr *x, char *buf, size_t n) { snprintf(buf, n, "%s", x->name); }

static int fuse_siblings(Reach *r, IrInstr *parent, PassContext *cx, FusionPairSet *refused, bool *oom) {
  if (effective_scalar(&parent->shape)) return 0;
  IrInstr **sib = fx_malloc(sizeof(IrInstr *) * (size_t)(parent->nusers ? parent->nusers : 1));
  if (!sib) {
    *oom = true;
    return 0;
  }
  int n = 0;
  for (int u = 0; u < parent->nusers; u++)
    if (parent->users[u]->parent == parent->parent && sibling_candidate(parent->users[u], cx->settings))
      sib[n++] = parent->users[u];
  int merged = mof_fuse_siblings(r, parent, sib, n, cx, refused, oom, NULL, can_fuse_siblings, kernel_name);
  fx_free(sib);
  return merged;
}

/* ProducerCandidateIsFusible. */
static bool consumer_ok(Reach *r, const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  if (!fusion_mof_root(c, cx->settings))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is not eligible as a multi-output fusion root", c->name);
  if (!fusion_mof_shapes_compatible(c, p, v)) return false;
  for (int k = 0; k < c->noperands; k++) {
    const IrInstr *o = c->operands[k];
    if (o != p && o->parent == p->parent && reach_path(r, p, o, false))
      return fusion_refuse(v, FR_CYCLE, "%s reaches %s, another operand of %s: %s would introduce a cycle when fused",
                           p->name, o->name, c->name, p->name);
  }
  if (!fits_budget(p, c, cx, v)) return false;
  double merged = 0;
  if (fusion_merged_too_large(p, c, &merged))
    return fusion_refuse(v, FR_IR_SIZE, "%s with %s would generate too large IR (%.0f instructions)", p->name, c->name,
                         merged);
  /* EstimateRunTimesForMultiOutputFusion: the producer's kernel and launch go, its output is still
   * written. */
  const DeviceProfile *d = cx->device;
  double unfused = 2 * PERF_LAUNCH_US + perf_exec_us(d, p) + perf_exec_us(d, c);
  double fused = PERF_LAUNCH_US + perf_fused_exec_us(d, p, c) +
                 (double)ir_shape_bytes(&p->shape) / ((d && d->dram_gbps > 0 ? d->dram_gbps : 1000.0) * 1e3);
  fusion_verdict_metric(v, "us_fused", fused);
  fusion_verdict_metric(v, "us_unfused", unfused);
  if (fused > unfused)
    return fusion_refuse(v, FR_SLOWER_IF_FUSED, "%s with %s as a multi-output fusion would take %.2f us instead of %.2f "
                         "us: it will execute slower if fused", p->name, c->name, fused, unfused);
  fusion_verdict_ok(v, "%s fuses into %s and stays an output for its %d other %s", p->name, c->name, p->nusers - 1,
                    p->nusers - 1 == 1 ? "user" : "users");
  return true;
}

/* The consumers p may go into: p may stay an output (IsProducerMultiOutputFusible, no parameter)
 * and has more than one user or a multi-output user. */
static int consumers(const IrInstr *p, const IrComputation *c, const PassSettings *s, IrInstr **out) {
  FusionVerdict pv;
  memset(&pv, 0, sizeof pv);
  if (!fusion_producer_mof_fusible(p, s, &pv) || p->op == IR_OP_PARAMETER) return 0;
  if (p->nusers == 0 || (p->nusers == 1 && !is_mof(p->users[0]))) return 0;
  int n = 0;
  for (int u = 0; u < p->nusers; u++)
    if (p->users[u]->parent == c) out[n++] = p->users[u];
  return n;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  static const MofEra era = {fusion_fusible_computations, custom_fusion, fuse_siblings, consumers, consumer_ok};
  return mof_run(m, cx, changed, &era);
}

const Pass pass_multi_output_fusion_current = {
    "multi_output_fusion",
    "sibling fusion (kernels reading the same operand) and producer-consumer fusion keeping the producer as an "
    "output, by today's XLA rules",
    run,
};

/* pass_multi_output_fusion.c — XLA's multi_output_fusion (GPU, 2021): sibling fusion first, then
 * producer–consumer multi-output fusion. The priority pipeline runs today's rules
 * (pass_mof_current.c).
 *
 * Follows XLA's GpuMultiOutputFusion::DoMultiOutputFusion as of 2021 and the gpu_fusible.cc
 * predicates it calls:
 *
 *   - producers are visited uses before defs; constants are never multi-output fused;
 *   - FuseSiblings: the users of a producer that is not a scalar constant (IsProfitableOperand),
 *     multi-output fusions first, then fusions, then plain ops; each fusion takes every later
 *     sibling that is a multi-output root (IsSiblingFusionCandidate), is not connected to it,
 *     iterates over the same loop (ShapesCompatibleForMultiOutputFusion: a reduction from or to
 *     contiguous dimensions by its input and its dimensions, anything else by its output shape,
 *     layout included) and is legal to fuse (LegalToFuse: fusions of one kind only, no
 *     reduction joining a loop fusion, no dynamic-update-slice root, not too large);
 *   - then producer-consumer: a producer with more than one user (or a multi-output user) goes
 *     into the preferred consumer that can take it (IsProducerConsumerMultiOutputFusible: no
 *     multi-output producer, a loop-fusible producer, no nested loop, compatible shapes, no
 *     layout-changing copy; no cycle, not too large, no overly large code duplication); a
 *     consumer that is no fusion yet is wrapped in one (ChooseFusionKind).
 *
 * Every pair judged is reported: "sibling" and "multi-output" decisions with XLA's reason. */
#include <stdint.h>
#include <string.h>

#include "mof_steps.h"
#include "../passes/passes.h"

static bool is_mof(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  return fc && fc->root && fc->root->op == IR_OP_TUPLE;
}

static bool is_loop_fusion(const IrInstr *i) {
  const char *k = i->op == IR_OP_FUSION ? ir_fusion_kind(i) : NULL;
  return k && strcmp(k, "kLoop") == 0;
}


/* IsFusibleAsMultiOutputFusionRoot (2021): a fusible reduction from or to contiguous dimensions
 * (or an input fusion rooted at one), a loop fusion, or an elementwise op. */
bool fusion_mof_root_2021(const IrInstr *i, const PassSettings *s) {
  if (fusion_op_never_fuses(i->op) || fusion_is_library_call(i, s)) return false;
  return fusion_is_input_fusible_reduction(i) || is_loop_fusion(i) ||
         (i->op != IR_OP_FUSION && ir_op_is_elementwise(i->op));
}

/* IsSiblingFusionCandidate: a multi-output root with users, all of them get-tuple-elements when
 * it is a multi-output fusion. */
static bool sibling_candidate(const IrInstr *i, const PassSettings *s) {
  if (i->nusers == 0 || !fusion_mof_root_2021(i, s)) return false;
  if (is_mof(i))
    for (int u = 0; u < i->nusers; u++)
      if (i->users[u]->op != IR_OP_GET_TUPLE_ELEMENT) return false;
  return true;
}

/* GetRealHeroForMultiOutputFusion (2021): an instruction itself; a fusion's root; of a
 * multi-output fusion the first output that is a contiguous reduction, else the first output. */
static const IrInstr *real_hero(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  if (!fc || !fc->root) return i;
  const IrInstr *r = fc->root;
  if (r->op != IR_OP_TUPLE) return r;
  for (int k = 0; k < r->noperands; k++)
    if (r->operands[k]->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(r->operands[k])) return r->operands[k];
  return r->noperands ? r->operands[0] : r;
}

static bool contiguous_reduce(const IrInstr *x) { return x->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(x); }

/* ShapeUtil::Equal (with element types) or EqualIgnoringElementType: dims and layout. */
static bool shapes_equal(const IrShape *a, const IrShape *b, bool with_type) {
  if ((a->type == IR_TUPLE) != (b->type == IR_TUPLE)) return false;
  if (a->type == IR_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int k = 0; k < a->ntuple; k++)
      if (!shapes_equal(&a->tuple[k], &b->tuple[k], with_type)) return false;
    return true;
  }
  if (with_type && a->type != b->type) return false;
  if (!ir_shape_same_dims(a, b)) return false;
  for (int k = 0; k < a->rank; k++) {
    int ma = a->has_layout && a->minor_to_major ? a->minor_to_major[k] : a->rank - 1 - k;
    int mb = b->has_layout && b->minor_to_major ? b->minor_to_major[k] : b->rank - 1 - k;
    if (ma != mb) return false;
  }
  return true;
}

/* AreFusedReductionOutputsConsistent for two reductions: the same output, input and init shapes
 * (element types and layouts included) and the same reduced dimensions. */
static bool reductions_consistent(const IrInstr *a, const IrInstr *b) {
  if (!shapes_equal(&a->shape, &b->shape, true) || a->noperands != b->noperands) return false;
  for (int k = 0; k < a->noperands; k++)
    if (!shapes_equal(&a->operands[k]->shape, &b->operands[k]->shape, true)) return false;
  const char *da = ir_attr_text(a, "dimensions"), *db = ir_attr_text(b, "dimensions");
  return da && db && strcmp(da, db) == 0;
}

/* The shape a kernel's loop iterates over: a contiguous reduction's input, else the output. */
static const IrShape *loop_shape(const IrInstr *h) { return contiguous_reduce(h) ? &h->operands[0]->shape : &h->shape; }

bool fusion_mof_shapes_compatible_2021(const IrInstr *a, const IrInstr *b, FusionVerdict *v) {
  const IrInstr *ha = real_hero(a), *hb = real_hero(b);
  if (contiguous_reduce(ha) && contiguous_reduce(hb) && !reductions_consistent(ha, hb))
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s and %s are tiled reductions with different shapes or dimensions: one kernel cannot tile "
                         "both",
                         ha->name, hb->name);
  const IrShape *sa = loop_shape(ha), *sb = loop_shape(hb);
  if (shapes_equal(sa, sb, false)) return true;
  char fa[128], fb[128];
  bool layouts = !ir_shape_default_layout(sa) || !ir_shape_default_layout(sb); /* say them where they differ */
  ir_shape_format(sa, layouts, fa, sizeof fa);
  ir_shape_format(sb, layouts, fb, sizeof fb);
  return fusion_refuse(v, FR_SHAPE_MISMATCH,
                       "%s iterates over %s and %s over %s: different loop shapes cannot share one kernel", a->name, fa,
                       b->name, fb);
}

/* IsProducerConsumerMultiOutputFusible (2021). */
bool fusion_mof_producer_consumer_2021(const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  if (is_mof(p))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s is a multi-output fusion: XLA does not fuse one into another kernel",
                         p->name);
  if (!fusion_is_loop_fusible(p, cx->settings) || fusion_op_never_fuses(p->op))
    return fusion_refuse(v, FR_NOT_FUSIBLE, "%s (%s) is not loop-fusible, so it cannot join %s's kernel", p->name,
                         ir_op_name(p->op), c->name);
  if (!fusion_mof_root_2021(c, cx->settings))
    return fusion_refuse(v, FR_NOT_FUSIBLE,
                         "%s cannot be the root of a multi-output fusion (XLA takes reductions, loop fusions and "
                         "elementwise ops)",
                         c->name);
  const IrInstr *pl, *cl;
  if (fusion_creates_nested_loop(p, c, &pl, &cl))
    return fusion_refuse(v, FR_REDUCE_INTO_REDUCE,
                         "both sides read elements several times: %s would run as a loop inside %s's loop, a nested "
                         "loop",
                         pl->name, cl->name);
  if (!fusion_mof_shapes_compatible_2021(p, c, v)) return false;
  if (!fusion_layouts_reduce_friendly(p))
    return fusion_refuse(v, FR_LAYOUT,
                         "%s changes the layout (it %s a copy, which after layout assignment only transposes): XLA "
                         "keeps it out of a multi-output fusion",
                         p->name, p->op == IR_OP_COPY ? "is" : "holds");
  return true;
}

static bool dus_root(const IrInstr *i) {
  IrComputation *fc = ir_fused_computation(i);
  return fc && fc->root && fc->root->op == IR_OP_DYNAMIC_UPDATE_SLICE;
}

/* LegalToFuse (2021): a fusion a and a sibling b. */
static bool legal_to_fuse(const IrInstr *a, const IrInstr *b, const PassContext *cx, FusionVerdict *v) {
  if (b->op == IR_OP_FUSION && strcmp(ir_fusion_kind(a) ? ir_fusion_kind(a) : "", ir_fusion_kind(b) ? ir_fusion_kind(b) : "") != 0)
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s is a %s fusion and %s a %s one: XLA multi-output fuses fusions of one kind only", a->name,
                         ir_fusion_kind(a), b->name, ir_fusion_kind(b));
  if (contiguous_reduce(b) && is_loop_fusion(a))
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s is a reduction and %s a loop fusion: XLA does not put a reduction into a loop fusion (it "
                         "would have to become an input fusion)",
                         b->name, a->name);
  if (dus_root(a) || dus_root(b))
    return fusion_refuse(v, FR_IN_PLACE,
                         "%s updates a buffer in place (a dynamic-update-slice root): XLA does not sibling-fuse it",
                         dus_root(a) ? a->name : b->name);
  return fusion_check_too_large(a, b, cx, FUSION_SIZE_MULTI_OUTPUT, v);
}

/* What a sibling decision calls a kernel: a fusion by its fused root (`why b c` finds the decision
 * that put b and c in one kernel), a multi-output fusion or a plain instruction by its name. */
static void sibling_label(const IrInstr *x, char *buf, size_t n) {
  IrComputation *fc = ir_fused_computation(x);
  snprintf(buf, n, "%s", fc && fc->root && fc->root->op != IR_OP_TUPLE ? fc->root->name : x->name);
}

static bool sibling_ok(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *parent, const PassContext *cx,
                       FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  bool a_to_b = reach_path(r, a, b, false); /* searched once: along a long chain the search is the cost */
  if (a_to_b || reach_path(r, b, a, false)) {
    const IrInstr *from = a_to_b ? a : b, *to = from == a ? b : a;
    bool direct = false;
    for (int k = 0; k < to->noperands; k++) direct = direct || to->operands[k] == from;
    if (direct)
      return fusion_refuse(v, FR_CYCLE,
                           "%s is an operand of %s as well as its sibling (both read %s); one kernel computing both "
                           "side by side would have to read its own output: a cycle",
                           from->name, to->name, parent->name);
    return fusion_refuse(v, FR_CYCLE,
                         "%s reaches %s through other instructions; fusing the two would introduce a cycle when "
                         "fused",
                         from->name, to->name);
  }
  if (!fusion_mof_shapes_compatible_2021(a, b, v)) return false;
  if (!legal_to_fuse(a, b, cx, v)) return false;
  fusion_verdict_ok(v, "%s and %s both read %s: one kernel with both outputs reads it once", a->name, b->name,
                    parent->name);
  return true;
}

/* FuseSiblings: among the users of parent. Returns the number of merges. */
static int fuse_siblings(Reach *r, IrInstr *parent, PassContext *cx, FusionPairSet *refused, bool *oom) {
  /* IsProfitableOperand: reading a scalar constant costs nothing. */
  if (parent->op == IR_OP_CONSTANT && ir_shape_elements(&parent->shape) <= 1) return 0;
  /* every user (a user list holds each user once) */
  IrInstr **sib = fx_malloc(sizeof(IrInstr *) * (size_t)(parent->nusers ? parent->nusers : 1));
  if (!sib) {
    *oom = true;
    return 0;
  }
  int n = 0;
  for (int u = 0; u < parent->nusers; u++)
    if (parent->users[u]->parent == parent->parent) sib[n++] = parent->users[u];
  int merged = mof_fuse_siblings(r, parent, sib, n, cx, refused, oom, sibling_candidate, sibling_ok, sibling_label);
  fx_free(sib);
  return merged;
}

/* A consumer candidate of GetProducerConsumerMultiOutputFusionCandidates. */
static bool producer_consumer_ok(Reach *r, const IrInstr *p, const IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  if (!fusion_mof_producer_consumer_2021(p, c, cx, v)) return false;
  for (int k = 0; k < c->noperands; k++) {
    const IrInstr *o = c->operands[k];
    if (o != p && o->parent == p->parent && reach_path(r, p, o, false))
      return fusion_refuse(v, FR_CYCLE,
                           "%s also reaches %s, another operand of %s; keeping %s as an output of the fused kernel "
                           "would introduce a cycle when fused",
                           p->name, o->name, c->name, p->name);
  }
  if (!fusion_check_too_large(p, c, cx, FUSION_SIZE_MULTI_OUTPUT, v)) return false;
  if (!fusion_check_code_duplication(p, c, cx, v)) return false;
  fusion_verdict_ok(v, "%s fuses into %s and stays an output for its %d other %s", p->name, c->name, p->nusers - 1,
                    p->nusers - 1 == 1 ? "user" : "users");
  return true;
}

/* Users worth a word when they cannot take the producer: kernels, not memory names. */
static bool reportable_consumer(const IrInstr *c, const PassSettings *s) {
  return !fusion_op_never_fuses(c->op) && !fusion_is_library_call(c, s) && c->op != IR_OP_CONSTANT &&
         c->op != IR_OP_BITCAST;
}

/* The consumers p may go into: p has more than one user or a multi-output user, and is
 * loop-fusible; each consumer once. */
static int consumers(const IrInstr *p, const IrComputation *c, const PassSettings *s, IrInstr **out) {
  /* One user that is not a multi-output fusion: fusion-merger already judged the pair. */
  if (p->nusers == 0 || (p->nusers == 1 && !is_mof(p->users[0]))) return 0;
  if (!fusion_is_loop_fusible(p, s) || fusion_op_never_fuses(p->op)) return 0;
  int n = 0;
  for (int u = 0; u < p->nusers; u++) { /* each user once, as a user list holds it */
    IrInstr *cons = p->users[u];
    if (cons->parent == c && reportable_consumer(cons, s)) out[n++] = cons;
  }
  return n;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  static const MofEra era = {fusion_control_computations, NULL, fuse_siblings, consumers, producer_consumer_ok};
  return mof_run(m, cx, changed, &era);
}

const Pass pass_multi_output_fusion = {
    "multi_output_fusion",
    "sibling fusion (kernels reading the same operand) and producer-consumer fusion keeping the producer as an output",
    run,
};

const Pass pass_multi_output_fusion_round2 = {
    "multi_output_fusion",
    "second round of XLA's fixed-point fusion loop: multi_output_fusion again on what the first round left",
    run,
};

/* pass_multi_output_fusion.c — XLA's multi_output_fusion (GPU, 2021): sibling fusion first, then
 * producer–consumer multi-output fusion.
 *
 * Producers are visited uses-before-defs (from the root back). For each, its consumers that can
 * be multi-output roots (loop or input fusions, fusible ops) are tried in pairs as siblings: two
 * kernels reading the same operand become one kernel with two outputs, so the operand is read
 * once. A pair is refused when one reaches the other (a cycle), when their iteration spaces
 * differ (shape_mismatch), when the merged kernel would be too large. Then the producer itself is
 * fused into one of its consumers while staying an output (so its other users still read it):
 * refused on cycles, shapes and size. Constants are never multi-output fused. Siblings and
 * producer–consumer candidates are reported with actions "sibling" and "multi-output". */
#include <stdint.h>
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "../passes/passes.h"
#include "reachability.h"

/* The shape a kernel iterates over: a reduction's input, otherwise the (first) output. */
static const IrShape *loop_shape(const IrInstr *i, const IrInstr **reduce_out) {
  IrInstr *outs[64];
  const IrInstr *r = i;
  if (i->op == IR_OP_FUSION) {
    int n = fusion_outputs(i, outs, 64);
    if (n <= 0) return &i->shape;
    r = outs[0];
    for (int k = 0; k < n && k < 64; k++)
      if (outs[k]->op == IR_OP_REDUCE) {
        r = outs[k];
        break;
      }
  }
  if (reduce_out) *reduce_out = r->op == IR_OP_REDUCE ? r : NULL;
  if (r->op == IR_OP_REDUCE && r->noperands > 0) return &r->operands[0]->shape;
  if (r->shape.type == IR_TUPLE && r->shape.ntuple > 0) return &r->shape.tuple[0];
  return &r->shape;
}

static bool shapes_compatible(const IrInstr *a, const IrInstr *b, FusionVerdict *v) {
  const IrInstr *ra, *rb;
  const IrShape *sa = loop_shape(a, &ra), *sb = loop_shape(b, &rb);
  char fa[128], fb[128];
  ir_shape_format(sa, false, fa, sizeof fa);
  ir_shape_format(sb, false, fb, sizeof fb);
  if (!ir_shape_same_dims(sa, sb))
    return fusion_refuse(v, FR_SHAPE_MISMATCH,
                         "%s iterates over %s and %s over %s: different loop shapes cannot share one kernel",
                         a->name, fa, b->name, fb);
  if (ra && rb) {
    const char *da = ir_attr_text(ra, "dimensions"), *db = ir_attr_text(rb, "dimensions");
    if (da && db && strcmp(da, db) != 0)
      return fusion_refuse(v, FR_SHAPE_MISMATCH,
                           "%s and %s are tiled reductions over different dimensions (%s vs %s) of %s", ra->name,
                           rb->name, da, db, fa);
  }
  return true;
}

/* Whether i can be a root of a multi-output fusion. */
static bool mof_root_ok(const IrInstr *i, const PassContext *cx) {
  if (i->op == IR_OP_FUSION) {
    const char *k = ir_fusion_kind(i);
    return k && (strcmp(k, "kLoop") == 0 || strcmp(k, "kInput") == 0);
  }
  return fusion_is_loop_fusible(i, cx->settings) || fusion_is_input_fusible(i);
}

static bool is_kernel_op(const IrInstr *i) {
  return i->op != IR_OP_CONSTANT && i->op != IR_OP_BITCAST && i->op != IR_OP_IOTA && i->op != IR_OP_PARAMETER;
}

static bool sibling_ok(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *parent, const PassContext *cx,
                       FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  if (reach_path(r, a, b, false) || reach_path(r, b, a, false)) {
    const IrInstr *from = reach_path(r, a, b, false) ? a : b, *to = from == a ? b : a;
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
  if ((a->is_root && a->shape.type == IR_TUPLE) || (b->is_root && b->shape.type == IR_TUPLE))
    return fusion_refuse(v, FR_ROOT, "%s is the root of its computation; not fusing into the output of the root",
                         a->is_root ? a->name : b->name);
  if (!shapes_compatible(a, b, v)) return false;
  if (!fusion_check_too_large(a, b, cx, FUSION_SIZE_MULTI_OUTPUT, v)) return false;
  fusion_verdict_ok(v, "%s and %s both read %s: one kernel with both outputs reads it once", a->name, b->name,
                    parent->name);
  return true;
}

/* What a sibling decision calls a kernel: a fusion by its fused root (`why b c` finds the decision
 * that put b and c in one kernel), a multi-output fusion or a plain instruction by its name. */
static void sibling_label(const IrInstr *x, char *buf, size_t n) {
  IrComputation *fc = ir_fused_computation(x);
  snprintf(buf, n, "%s", fc && fc->root && fc->root->op != IR_OP_TUPLE ? fc->root->name : x->name);
}

/* Sibling fusion among the users of parent. Returns the number of merges. */
static int fuse_siblings(Reach *r, IrInstr *parent, PassContext *cx, FusionPairSet *refused, bool *oom) {
  IrInstr *sib[32];
  int n = 0;
  /* Reading a constant scalar or a broadcast scalar costs nothing: no profit in sharing it. */
  if ((parent->op == IR_OP_CONSTANT && ir_shape_elements(&parent->shape) <= 1) ||
      (parent->op == IR_OP_BROADCAST && parent->noperands == 1 && ir_shape_elements(&parent->operands[0]->shape) <= 1))
    return 0;
  for (int u = 0; u < parent->nusers && n < 32; u++) {
    IrInstr *x = parent->users[u];
    if (x->parent == parent->parent && is_kernel_op(x) && mof_root_ok(x, cx)) sib[n++] = x;
  }
  int merged = 0;
  for (int i = 0; i < n; i++) {
    if (!sib[i]) continue;
    for (int j = i + 1; j < n; j++) {
      if (!sib[j] || !sib[i]) continue;
      FusionVerdict v;
      bool ok = sibling_ok(r, sib[i], sib[j], parent, cx, &v);
      char an[256], bn[256];
      sibling_label(sib[i], an, sizeof an);
      sibling_label(sib[j], bn, sizeof bn);
      if (!ok) {
        if (!fusion_pair_seen(refused, sib[i], sib[j], v.reason, oom)) fusion_verdict_emit(cx, "sibling", an, bn, NULL, &v);
        if (*oom) return merged;
        continue;
      }
      IrInstr *f = fusion_merge_siblings(sib[i], sib[j], NULL);
      if (!f) {
        *oom = true;
        return merged;
      }
      reach_update(r, f);
      fusion_verdict_metric(&v, "outputs", f->shape.type == IR_TUPLE ? f->shape.ntuple : 1);
      fusion_verdict_emit(cx, "sibling", an, bn, f->name, &v);
      sib[i] = f;
      sib[j] = NULL;
      merged++;
    }
  }
  return merged;
}

static bool producer_consumer_ok(Reach *r, IrInstr *p, IrInstr *c, const PassContext *cx, FusionVerdict *v) {
  memset(v, 0, sizeof *v);
  if (!fusion_check_producer(p, cx, v)) return false;
  if (!mof_root_ok(c, cx)) return fusion_check_consumer(c, cx, v) ? fusion_refuse(v, FR_NOT_FUSIBLE, "%s cannot be a multi-output root", c->name) : false;
  if (p->is_root)
    return fusion_refuse(v, FR_ROOT, "%s is the root of %s; not fusing into the output of the root instruction",
                         p->name, p->parent->name);
  if (reach_path(r, p, c, true))
    return fusion_refuse(v, FR_CYCLE,
                         "%s also reaches %s through its other users; keeping %s as an output of the fused kernel "
                         "would introduce a cycle when fused",
                         p->name, c->name, p->name);
  if (!shapes_compatible(p, c, v)) return false;
  if (!fusion_check_too_large(p, c, cx, FUSION_SIZE_MULTI_OUTPUT, v)) return false;
  if (!fusion_check_code_duplication(p, c, cx, v)) return false;
  fusion_verdict_ok(v, "%s fuses into %s and stays an output for its %d other %s", p->name, c->name, p->nusers - 1,
                    p->nusers - 1 == 1 ? "user" : "users");
  return true;
}

static bool mof_computation(IrComputation *c, PassContext *cx, int *count) {
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(order, c->instrs, sizeof(IrInstr *) * (size_t)n);
  bool oom = false;
  FusionPairSet refused = {0};
  Reach reach;
  reach_init(&reach, c);
  for (int k = n - 1; k >= 0 && !oom && !pass_interrupted(cx); k--) {
    IrInstr *p = order[k];
    if (p->dead || p->parent != c || p->op == IR_OP_CONSTANT) continue;
    if (p->nusers < 2) continue;
    *count += fuse_siblings(&reach, p, cx, &refused, &oom);
    if (oom || p->dead || p->parent != c) continue;
    /* Producer-consumer: only producers that still have several users (a single-user producer
     * was fusion's business) and are kernels themselves. */
    if (p->nusers < 2 || !is_kernel_op(p) || p->op == IR_OP_GET_TUPLE_ELEMENT || p->op == IR_OP_TUPLE) continue;
    if (!fusion_is_loop_fusible(p, cx->settings) || fusion_op_never_fuses(p->op) ||
        fusion_is_library_call(p, cx->settings))
      continue;
    IrInstr *best = NULL;
    FusionVerdict bestv;
    IrInstr *users[64];
    int nu = p->nusers < 64 ? p->nusers : 64;
    memcpy(users, p->users, sizeof(IrInstr *) * (size_t)nu);
    for (int u = 0; u < nu; u++) {
      IrInstr *cons = users[u];
      if (cons->parent != c || !is_kernel_op(cons) || fusion_op_never_fuses(cons->op) ||
          fusion_is_library_call(cons, cx->settings))
        continue;
      FusionVerdict v;
      bool ok = producer_consumer_ok(&reach, p, cons, cx, &v);
      /* Prefer a reduction (input) consumer, as XLA does. */
      if (ok && (!best || (fusion_is_input_fusible(cons) && !fusion_is_input_fusible(best)))) {
        if (best) fusion_verdict_emit(cx, "multi-output", p->name, fusion_consumer_label(best, p), NULL, &bestv);
        best = cons;
        bestv = v;
      } else if (ok) {
        /* XLA fuses the producer into one consumer per round; the others are not candidates. */
      } else {
        fusion_verdict_emit(cx, "multi-output", p->name, fusion_consumer_label(cons, p), NULL, &v);
      }
    }
    if (!best) continue;
    char pn[256], cl[256];
    snprintf(pn, sizeof pn, "%s", p->name);
    snprintf(cl, sizeof cl, "%s", fusion_consumer_label(best, p));
    IrInstr *f = fusion_fuse_multi_output(best, p);
    if (!f) {
      oom = true;
      break;
    }
    reach_update(&reach, f);
    fusion_verdict_emit(cx, "multi-output", pn, cl, f->name, &bestv);
    (*count)++;
  }
  fx_free(order);
  fusion_pair_set_free(&refused);
  reach_free(&reach);
  if (oom) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  if (*count) ir_computation_sort(c);
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "multi_output_fusion")) return true;
  IrComputation *comps[1024];
  int n = fusion_control_computations(m, comps, 1024);
  int count = 0;
  for (int k = 0; k < n; k++)
    if (!mof_computation(comps[k], cx, &count)) return false;
  *changed = count > 0;
  return true;
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

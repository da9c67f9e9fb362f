/* mof_steps.c — the steps both eras' multi_output_fusion share; see mof_steps.h. */
#include "mof_steps.h"

#include <stdio.h>
#include <string.h>

#include "fusion_build.h"
#include "../passes/passes.h"

int mof_fuse_siblings(Reach *r, IrInstr *parent, IrInstr **sib, int n, PassContext *cx, FusionPairSet *refused,
                      bool *oom, bool (*candidate)(const IrInstr *, const PassSettings *), MofSiblingCheck ok,
                      MofLabel label) {
  fusion_sort_by_mof_priority(sib, n);
  /* Every pair of candidates gets asked whether a path joins them: one sweep answers them all. */
  IrInstr *asked[REACH_MAX_SIBLINGS];
  int nasked = 0;
  for (int k = 0; k < n && nasked < REACH_MAX_SIBLINGS; k++)
    if (!candidate || candidate(sib[k], cx->settings)) asked[nasked++] = sib[k];
  (void)reach_siblings_begin(r, asked, nasked);
  int merged = 0;
  for (int i = 0; i < n; i++) {
    if (!sib[i] || sib[i]->op != IR_OP_FUSION || (candidate && !candidate(sib[i], cx->settings))) continue;
    for (int j = i + 1; j < n; j++) {
      if (!sib[j] || (candidate && !candidate(sib[j], cx->settings))) continue;
      FusionVerdict v;
      bool fusible = ok(r, sib[i], sib[j], parent, cx, &v);
      char an[256], bn[256];
      label(sib[i], an, sizeof an);
      label(sib[j], bn, sizeof bn);
      if (!fusible) {
        if (!fusion_pair_seen(refused, sib[i], sib[j], v.reason, oom)) fusion_verdict_emit(cx, "sibling", an, bn, NULL, &v);
        if (*oom) {
          reach_siblings_end(r);
          return merged;
        }
        continue;
      }
      const IrInstr *a = sib[i], *b = sib[j];
      IrInstr *f = fusion_merge_siblings(sib[i], sib[j], NULL);
      if (!f) {
        *oom = true;
        reach_siblings_end(r);
        return merged;
      }
      reach_update(r, f);
      reach_siblings_merged(r, a, b, f);
      fusion_verdict_metric(&v, "outputs", f->shape.type == IR_TUPLE ? f->shape.ntuple : 1);
      fusion_verdict_emit(cx, "sibling", an, bn, f->name, &v);
      sib[i] = f;
      sib[j] = NULL;
      merged++;
    }
  }
  reach_siblings_end(r);
  return merged;
}

int mof_fuse_into_preferred(Reach *r, IrInstr *p, IrInstr **cons, int n, PassContext *cx, MofConsumerCheck ok) {
  IrInstr *best = NULL;
  FusionVerdict bestv;
  for (int u = 0; u < n; u++) {
    FusionVerdict v;
    if (!ok(r, p, cons[u], cx, &v)) {
      fusion_verdict_emit(cx, "multi-output", p->name, fusion_consumer_label(cons[u], p), NULL, &v);
      continue;
    }
    /* SelectPreferredFusionCandidate: the first of the highest priority. */
    if (!best || fusion_mof_priority(cons[u]) > fusion_mof_priority(best)) {
      best = cons[u];
      bestv = v;
    }
  }
  if (!best) return 0;
  /* The names before the fusion renames or removes them. */
  char pn[256], cl[256];
  snprintf(pn, sizeof pn, "%s", p->name);
  snprintf(cl, sizeof cl, "%s", fusion_consumer_label(best, p));
  IrInstr *f = fusion_fuse_multi_output(best, p);
  if (!f) return -1;
  reach_update(r, f);
  fusion_verdict_emit(cx, "multi-output", pn, cl, f->name, &bestv);
  return 1;
}

static bool mof_computation(IrComputation *c, PassContext *cx, const MofEra *era, int *count) {
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!order) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  /* MultiOutputFusion::DoMultiOutputFusion walks computation_->MakeInstructionPostOrder() from
   * the end, uses before defs, as it stood before the first fusion: which parent is visited first
   * decides which siblings end up together. */
  if (ir_computation_post_order(c, order) != n) {
    fx_free(order);
    return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  }
  bool oom = false;
  FusionPairSet refused = {0};
  Reach reach;
  reach_init(&reach, c);
  for (int k = n - 1; k >= 0 && !oom && !pass_interrupted(cx); k--) {
    IrInstr *p = order[k];
    if (p->dead || p->parent != c || p->op == IR_OP_CONSTANT || (era->skip && era->skip(p))) continue;
    *count += era->siblings(&reach, p, cx, &refused, &oom);
    if (oom || p->dead || p->parent != c) continue;
    IrInstr *users[64];
    int nu = era->consumers(p, c, cx->settings, users);
    int fused = mof_fuse_into_preferred(&reach, p, users, nu, cx, era->consumer_ok);
    if (fused < 0) {
      oom = true;
      break;
    }
    *count += fused;
  }
  fx_free(order);
  fusion_pair_set_free(&refused);
  reach_free(&reach);
  if (oom) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  if (*count) ir_computation_sort(c);
  return true;
}

bool mof_run(IrModule *m, PassContext *cx, bool *changed, const MofEra *era) {
  *changed = false;
  if (fusion_pass_disabled(cx, "multi_output_fusion")) return true;
  IrComputation *comps[1024];
  int n = era->computations(m, comps, 1024);
  int count = 0;
  for (int k = 0; k < n; k++)
    if (!mof_computation(comps[k], cx, era, &count)) return false;
  *changed = count > 0;
  return true;
}

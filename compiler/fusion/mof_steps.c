/* mof_steps.c — the steps both eras' multi_output_fusion share; see mof_steps.h. */
#include "mof_steps.h"

#include <stdio.h>
#include <string.h>

#include "fusion_build.h"
#include "../passes/passes.h"

/* The refusals of one reason among the pairs past the first MOF_PAIRS_REPORTED of a parent:
 * reported as one decision, the first pair's verdict with the count. */
typedef struct {
  const char *reason;
  int count;
  FusionVerdict first;
  char a[256], b[256];
} MofRefusals;

enum { MOF_REASONS_MAX = 48 };

/* The refusals of `reason` past the first pairs, NULL before the first of them was judged. */
static MofRefusals *refusals_find(MofRefusals *g, int n, const char *reason) {
  for (int k = 0; k < n; k++)
    if (g[k].reason == reason || (g[k].reason && reason && strcmp(g[k].reason, reason) == 0)) return &g[k];
  return NULL;
}

/* The same, made when missing (as the first of them is judged). */
static MofRefusals *refusals_of(MofRefusals *g, int *n, const char *reason) {
  MofRefusals *x = refusals_find(g, *n, reason);
  if (x) return x;
  if (*n == MOF_REASONS_MAX) return &g[*n - 1]; /* more reasons than the vocabulary has: never */
  memset(&g[*n], 0, sizeof g[*n]);
  g[*n].reason = reason;
  return &g[(*n)++];
}

static void report_refusals(PassContext *cx, const IrInstr *parent, MofRefusals *g, int n) {
  for (int k = 0; k < n; k++) {
    FusionVerdict v = g[k].first;
    if (g[k].count > 1) {
      size_t len = strlen(v.detail);
      snprintf(v.detail + len, sizeof v.detail - len,
               "; and so %d more pairs of the readers of %s (past the first %d pairs, reported together)",
               g[k].count - 1, parent->name, MOF_PAIRS_REPORTED);
      fusion_verdict_metric(&v, "pairs", g[k].count);
    }
    fusion_verdict_emit(cx, "sibling", g[k].a, g[k].b, NULL, &v);
  }
}

int mof_fuse_siblings(Reach *r, IrInstr *parent, IrInstr **sib, int n, PassContext *cx, FusionPairSet *refused,
                      bool *oom, bool (*candidate)(const IrInstr *, const PassSettings *), MofSiblingCheck ok,
                      MofLabel label) {
  fusion_sort_by_mof_priority(sib, n);
  /* The candidates, in that order: whether each is one is asked once (a merge changes no other
   * sibling's users or body, and the merged kernel is never asked again: it is the first of every
   * pair it is in from then on). */
  int m = 0;
  for (int k = 0; k < n; k++)
    if (!candidate || candidate(sib[k], cx->settings)) sib[m++] = sib[k];
  n = m;
  MofRefusals *past = fx_malloc(sizeof(MofRefusals) * MOF_REASONS_MAX);
  int words = (n + 63) / 64 + 1;
  uint64_t *conn = fx_malloc(sizeof(uint64_t) * (size_t)words);
  uint64_t *alive = fx_calloc((size_t)words, sizeof(uint64_t)); /* sib[j] not merged away */
  if (!past || !conn || !alive) {
    fx_free(past);
    fx_free(conn);
    fx_free(alive);
    *oom = true;
    return 0;
  }
  for (int k = 0; k < n; k++) alive[k / 64] |= UINT64_C(1) << (k % 64);
  /* Every pair of candidates gets asked whether a path joins them: one sweep answers them all. */
  (void)reach_siblings_begin(r, sib, n);
  int merged = 0, npast = 0;
  long judged = 0;
  MofRefusals *cycles = NULL; /* the cycle refusals past the first pairs, once the first is judged */
  for (int i = 0; i < n && !*oom; i++) {
    if (!sib[i] || sib[i]->op != IR_OP_FUSION) continue;
    bool known = reach_siblings_connections(r, i, conn);
    for (int j = i + 1; j < n; j++) {
      /* Past the pairs reported one by one, once a cycle refusal was judged: a pair a path joins
       * is refused for the cycle (the first check of both eras) and only counted, 64 siblings at
       * once where all still there are joined to sib[i] (along a chain of blocks, nearly all). */
      bool count_cycles = known && judged >= MOF_PAIRS_REPORTED &&
                          (cycles = cycles ? cycles : refusals_find(past, npast, FR_CYCLE)) != NULL;
      if (count_cycles && j % 64 == 0 && (alive[j / 64] & ~conn[j / 64]) == 0) {
        int k = __builtin_popcountll(alive[j / 64]);
        cycles->count += k;
        judged += k;
        j += 63;
        continue;
      }
      if (!sib[j]) continue;
      bool one_by_one = ++judged <= MOF_PAIRS_REPORTED;
      if (count_cycles && ((conn[j / 64] >> (j % 64)) & 1)) {
        cycles->count++;
        continue;
      }
      FusionVerdict v;
      bool fusible = ok(r, sib[i], sib[j], parent, cx, &v);
      char an[256], bn[256];
      if (!fusible && !one_by_one) {
        MofRefusals *g = refusals_of(past, &npast, v.reason);
        if (g->count++ == 0) {
          g->first = v;
          label(sib[i], g->a, sizeof g->a);
          label(sib[j], g->b, sizeof g->b);
        }
        continue;
      }
      label(sib[i], an, sizeof an);
      label(sib[j], bn, sizeof bn);
      if (!fusible) {
        if (!fusion_pair_seen(refused, sib[i], sib[j], v.reason, oom)) fusion_verdict_emit(cx, "sibling", an, bn, NULL, &v);
        if (*oom) break;
        continue;
      }
      const IrInstr *a = sib[i], *b = sib[j];
      IrInstr *f = fusion_merge_siblings(sib[i], sib[j], NULL);
      if (!f) {
        *oom = true;
        break;
      }
      reach_update(r, f);
      reach_siblings_merged(r, a, b, f);
      fusion_verdict_metric(&v, "outputs", f->shape.type == IR_TUPLE ? f->shape.ntuple : 1);
      fusion_verdict_emit(cx, "sibling", an, bn, f->name, &v);
      sib[i] = f;
      sib[j] = NULL;
      alive[j / 64] &= ~(UINT64_C(1) << (j % 64));
      merged++;
      known = reach_siblings_connections(r, i, conn);
    }
  }
  report_refusals(cx, parent, past, npast);
  fx_free(past);
  fx_free(conn);
  fx_free(alive);
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
    IrInstr **users = fx_malloc(sizeof(IrInstr *) * (size_t)(p->nusers ? p->nusers : 1));
    if (!users) {
      oom = true;
      break;
    }
    int nu = era->consumers(p, c, cx->settings, users);
    int fused = mof_fuse_into_preferred(&reach, p, users, nu, cx, era->consumer_ok);
    fx_free(users);
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

/* compare.c — the pipeline run twice, with two settings, and the decisions that differ (see
 * compare.h). */
#include "compare.h"

#include <string.h>

#include "../compiler/ir/ir.h"

typedef struct {
  ExplainKeyedDecision *d;
  int n, cap;
  bool oom;
} KeyedList;

/* The decision sink of a scratch run: keeps the last decision about each key. */
static void collect(void *ctx, const PassDecision *pd) {
  KeyedList *l = ctx;
  if (!pd->producer && !pd->consumer) return;
  char key[400];
  snprintf(key, sizeof key, "%s | %s | %s -> %s", pd->pass ? pd->pass : "", pd->action ? pd->action : "",
           pd->producer ? pd->producer : "-", pd->consumer ? pd->consumer : "-");
  /* The last decision about a key wins (a later evaluation supersedes an earlier one). */
  for (int k = l->n - 1; k >= 0; k--)
    if (strcmp(l->d[k].key, key) == 0) {
      memmove(&l->d[k], &l->d[k + 1], sizeof(ExplainKeyedDecision) * (size_t)(l->n - k - 1));
      l->n--;
      break;
    }
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 128;
    ExplainKeyedDecision *nd = fx_realloc(l->d, sizeof(ExplainKeyedDecision) * (size_t)nc);
    if (!nd) {
      l->oom = true;
      return;
    }
    l->d = nd;
    l->cap = nc;
  }
  ExplainKeyedDecision *d = &l->d[l->n++];
  snprintf(d->key, sizeof d->key, "%s", key);
  snprintf(d->verdict, sizeof d->verdict, "%s", pd->accepted ? "accepted" : "rejected");
  snprintf(d->reason, sizeof d->reason, "%s", pd->reason ? pd->reason : "");
  snprintf(d->detail, sizeof d->detail, "%s", pd->detail ? pd->detail : "");
}

/* Runs the engine's pipeline on stage 0 with the given settings and device. */
static bool run_all(ExplainEngine *e, const PassSettings *ps, const DeviceProfile *dev, KeyedList *out, int *kernels,
                    long long *launches, FxError *err) {
  const Pipeline *pl = explain_engine_pipeline(e);
  IrModule *cur = e->stages[0].module;
  IrModule *owned = NULL;
  DecisionSink sink = {collect, out};
  for (int k = 0; k < pl->npasses; k++) {
    const Pass *p = pl->passes[k];
    if (pass_settings_is_disabled(ps, p->name)) continue;
    FxError perr;
    fx_error_clear(&perr);
    PassContext cx = {&sink, dev, ps, k + 1, p->name, &perr, NULL, false};
    IrModule *next = NULL;
    bool ch = false;
    if (!pass_run_stage(p, cur, &cx, &next, &ch)) {
      if (owned) ir_module_free(owned);
      return fx_error_set(err, NULL, 0, 0, "%s: %s", p->name, perr.msg);
    }
    if (next) {
      if (owned) ir_module_free(owned);
      owned = cur = next;
    }
  }
  KernelPlan *plan = plan_build(cur, dev, err);
  if (owned) ir_module_free(owned);
  if (!plan) return false;
  *kernels = plan->ncompute;
  *launches = (long long)plan->launches;
  plan_free(plan);
  if (out->oom) return fx_error_set(err, NULL, 0, 0, "out of memory");
  return true;
}

static const ExplainKeyedDecision *find(const ExplainKeyedDecision *d, int n, const char *key) {
  for (int k = 0; k < n; k++)
    if (strcmp(d[k].key, key) == 0) return &d[k];
  return NULL;
}

bool explain_compare_settings(ExplainEngine *e, const PassSettings *before, const DeviceProfile *dbefore,
                              const PassSettings *after, const DeviceProfile *dafter, bool all, ExplainComparison *out,
                              FxError *err) {
  memset(out, 0, sizeof *out);
  KeyedList a = {0}, b = {0};
  bool ok = run_all(e, before, dbefore, &a, &out->kernels_before, &out->launches_before, err) &&
            run_all(e, after, dafter, &b, &out->kernels_after, &out->launches_after, err);
  out->before = a.d;
  out->nbefore = a.n;
  out->after = b.d;
  out->nafter = b.n;
  if (!ok) {
    explain_comparison_free(out);
    return false;
  }
  int cap = a.n + b.n;
  out->changes = cap ? fx_calloc((size_t)cap, sizeof *out->changes) : NULL;
  if (cap && !out->changes) {
    explain_comparison_free(out);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  for (int side = 0; side < 2; side++) {
    const KeyedList *x = side == 0 ? &a : &b, *y = side == 0 ? &b : &a;
    for (int k = 0; k < x->n; k++) {
      const ExplainKeyedDecision *d = &x->d[k], *other = find(y->d, y->n, d->key);
      if (side == 1 && other) continue; /* pairs were listed from the first run */
      if (other && strcmp(d->verdict, other->verdict) == 0 && strcmp(d->reason, other->reason) == 0) continue;
      if (!other && !all) {
        /* Made in one run only (the graph differs there): listed with all. */
        out->one_run_only++;
        continue;
      }
      out->changes[out->nchanges++] = (ExplainDecisionChange){
          .key = d->key, .before = side == 0 ? d : other, .after = side == 0 ? other : d};
    }
  }
  return true;
}

void explain_comparison_free(ExplainComparison *c) {
  fx_free(c->before);
  fx_free(c->after);
  fx_free(c->changes);
  memset(c, 0, sizeof *c);
}

bool explain_compare_sides(const ExplainEngine *e, char **w, int n, ExplainCompareSides *out, int *bad, FxError *err) {
  out->before = out->after = e->settings;
  out->dbefore = e->device.name[0] ? e->device : *device_default();
  out->dafter = out->dbefore;
  *bad = -1;
  if (n == 0) {
    if (!e->have_prev)
      return fx_error_set(err, NULL, 0, 0, "no setting has changed yet: `set` one, or name it: compare-decisions dup_limit 3");
    out->before = e->prev_settings;
    out->dbefore = e->prev_device.name[0] ? e->prev_device : *device_default();
    snprintf(out->what, sizeof out->what, "%s", e->last_change);
    return true;
  }
  ExplainSettingChange ch;
  if (!explain_setting_apply(&out->after, &out->dafter, w, &ch, bad, err)) return false;
  out->what[0] = 0;
  for (int k = 0; k < n; k++)
    snprintf(out->what + strlen(out->what), sizeof out->what - strlen(out->what), "%s%s", k ? " " : "", w[k]);
  return true;
}

/* engine_report.c — the engine's stages as pictures: every decision as the plain records viz
 * draws, and the HTML walkthrough of every stage run so far, with its plan figures, the pass's
 * summary and what changed (see viz.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ir/ir.h"
#include "../explain/xla_dump.h"
#include "viz.h"

/* Every decision recorded for stages 1..upto, in `decisions` order, as PassDecision records
 * (strings stay owned by the log). *out is fx_malloc'd; returns the count or -1. */
int viz_engine_decisions(const ExplainEngine *e, int upto, PassDecision **out) {
  *out = NULL;
  if (!e->log) return 0;
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = upto;
  const ExplainRecord **res;
  int n = explain_query(e->log, &f, &res);
  if (n < 0) return -1;
  PassDecision *d = fx_calloc((size_t)n + 1, sizeof *d);
  if (!d) {
    fx_free(res);
    return -1;
  }
  for (int k = 0; k < n; k++) {
    const ExplainRecord *r = res[k];
    d[k] = (PassDecision){.stage = r->stage, .pass = r->pass, .action = r->action, .producer = r->producer,
                          .consumer = r->consumer, .accepted = r->accepted, .reason = r->reason,
                          .detail = r->detail, .suggestion = r->suggestion, .result = r->result,
                          .nmetrics = r->nmetrics};
    memcpy(d[k].metrics, r->metrics, sizeof r->metrics);
  }
  fx_free(res);
  *out = d;
  return n;
}

static char *diff_text(const ExplainEngine *e, int k, FxError *err) {
  ExplainDiff *d = explain_diff(e->stages[k - 1].module, e->stages[k].module, e->log, k - 1, k, err);
  if (!d) return NULL;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    explain_diff_free(d);
    return NULL;
  }
  fprintf(f, "%d added, %d removed, %d rewritten, %d fused (%d \xe2\x86\x92 %d instructions)\n", d->count[DIFF_ADDED],
          d->count[DIFF_REMOVED], d->count[DIFF_REWRITTEN], d->count[DIFF_FUSED], d->instrs_a, d->instrs_b);
  for (int j = 0; j < d->n && j < 300; j++) {
    const ExplainDiffEntry *e = &d->entries[j];
    fprintf(f, "%-9s %s (%s)", explain_diff_kind_name(e->kind), e->name, e->op ? e->op : "?");
    if (e->into) fprintf(f, " %s %s", e->kind == DIFF_FUSED ? "into" : "\xe2\x86\x92", e->into);
    if (e->detail) fprintf(f, ": %s", e->detail);
    fputc('\n', f);
  }
  if (d->n > 300) fprintf(f, "... %d more\n", d->n - 300);
  fclose(f);
  explain_diff_free(d);
  /* open_memstream's buffer comes from malloc: copy it into fx memory. */
  char *out = fx_strdup(text ? text : "");
  free(text);
  return out;
}

/* XLA's steps at stage k beside fxplain's verdicts, when k is the priority-fusion stage of an XLA
 * dump with its decision log: *out (fx_malloc'd) and the count; 0 for any other stage, -1 when
 * out of memory. */
static int xla_steps(ExplainEngine *e, int k, VizXlaStep **out) {
  *out = NULL;
  if (!e->xla || !e->xla->log || !e->log || e->pipeline != xla_dump_pipeline(e->xla) ||
      k != xla_dump_fusion_stage(e->xla))
    return 0;
  const XlaFusionLog *l = e->xla->log;
  int nrec = explain_stage_count(e->log, k), own = 0;
  for (int j = 0; j < nrec; j++) own += strcmp(explain_stage_record(e->log, k, j)->pass, XLA_OWN_PASS) == 0;
  XlaVerdict *vs;
  int n = xla_fusion_log_compare(l, own ? e->log : NULL, k, XLA_OWN_PASS, e->stages[k - 1].module, &vs);
  if (n < 0) return -1;
  VizXlaStep *x = fx_calloc((size_t)n + 1, sizeof *x);
  if (!x) {
    fx_free(vs);
    return -1;
  }
  /* XLA's records in the stage follow its steps one for one, then the producers left unfused. */
  int at = 0;
  for (int j = 0; j < nrec && at < n; j++) {
    const ExplainRecord *r = explain_stage_record(e->log, k, j);
    if (strcmp(r->pass, XLA_OWN_PASS) != 0) x[at++].number = explain_engine_number(e, r);
  }
  static const char *kinds[] = {"fusion", "producer_ineligible", "update_priority"};
  for (int j = 0; j < n; j++) {
    const XlaVerdict *v = &vs[j];
    const XlaStep *s = &l->steps[v->step];
    VizXlaStep *y = &x[j];
    y->step = v->left_unfused ? 0 : v->step + 1;
    y->kind = v->left_unfused ? "left_unfused" : kinds[s->kind];
    y->producer = s->producer;
    y->consumer = s->consumer;
    const IrModule *before = e->stages[k - 1].module;
    const IrInstr *pi = ir_module_find_instr(before, s->producer);
    if (pi) xla_user_name(pi, y->producer_jax, sizeof y->producer_jax);
    char first[256];
    snprintf(first, sizeof first, "%s", s->consumer ? s->consumer : "");
    char *comma = strchr(first, ',');
    if (comma) *comma = 0;
    const IrInstr *ci = first[0] ? ir_module_find_instr(before, first) : NULL;
    if (ci) xla_user_name(ci, y->consumer_jax, sizeof y->consumer_jax);
    /* What the step's picture draws: the names (a fusion made earlier in the pass, by its root). */
    const char *root = xla_fusion_log_root(l, before, v->step, s->producer);
    const IrInstr *ri = root ? ir_module_find_instr(before, root) : NULL;
    y->producer_root = ri ? ri->name : NULL;
    root = first[0] ? xla_fusion_log_root(l, before, v->step, first) : NULL;
    ri = root ? ir_module_find_instr(before, root) : NULL;
    y->consumer_root = ri ? ri->name : NULL;
    y->fusion = s->fusion;
    y->xla_reason = s->reason;
    /* A fusion's times: the producer's last priority update before it. */
    const XlaStep *t = s->kind == XLA_STEP_FUSION ? NULL : s;
    for (int q = v->step - 1; s->kind == XLA_STEP_FUSION && q >= 0 && !t; q--)
      if (l->steps[q].kind == XLA_STEP_PRIORITY && strcmp(l->steps[q].producer, s->producer) == 0) t = &l->steps[q];
    if (t && t->has_times) {
      y->has_times = true;
      y->us_fused = t->us_fused;
      y->us_unfused = t->us_unfused;
    }
    y->compared = v->compared;
    y->disagree = v->differ;
    if (v->own) {
      y->own_verdict = v->own->accepted ? "fuses" : "refuses";
      y->own_reason = v->own->reason;
      y->own_detail = v->own->detail;
      int got = 0;
      for (int m = 0; m < v->own->nmetrics; m++) {
        if (strcmp(v->own->metrics[m].key, "us_fused") == 0) y->own_us_fused = v->own->metrics[m].value, got |= 1;
        if (strcmp(v->own->metrics[m].key, "us_unfused") == 0) y->own_us_unfused = v->own->metrics[m].value, got |= 2;
      }
      y->own_has_times = got == 3;
    }
  }
  fx_free(vs);
  *out = x;
  return n;
}

bool viz_engine_report(FILE *out, VizRenderer *r, ExplainEngine *e, volatile int *interrupted,
                       void (*progress)(void *ctx, int done, int total), void *progress_ctx, int *ndecisions,
                       FxError *err) {
  int n = e->nstages;
  PassDecision *ds = NULL;
  int nds = viz_engine_decisions(e, n - 1, &ds);
  if (nds < 0) return fx_error_set(err, NULL, 0, 0, "out of memory");
  *ndecisions = nds;
  VizStage *st = fx_calloc((size_t)n, sizeof *st);
  char **texts = fx_calloc((size_t)n * 2, sizeof(char *));
  bool ok = st && texts;
  if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  int first = 0;
  for (int k = 0; k < n && ok; k++) {
    if (interrupted && *interrupted) {
      ok = fx_error_set(err, NULL, 0, 0, "interrupted: the report was not written");
      break;
    }
    st[k].module = e->stages[k].module;
    st[k].pass = explain_engine_stage_pass(e, k);
    st[k].changed = e->stages[k].changed;
    const KernelPlan *p = explain_engine_plan(e, k, err);
    if (!p) {
      ok = false;
      break;
    }
    st[k].have_numbers = true;
    st[k].kernels = p->launches;
    st[k].nkernels = p->ncompute;
    st[k].bytes = p->bytes_read + p->bytes_written;
    st[k].est_us = p->est_us;
    while (first < nds && ds[first].stage < k) first++;
    int last = first;
    while (last < nds && ds[last].stage == k) last++;
    st[k].decisions = (VizDecisions){ds + first, last - first};
    st[k].first_number = first + 1; /* ds holds every decision in `decisions` order */
    VizXlaStep *xs = NULL;
    int nxs = xla_steps(e, k, &xs);
    if (nxs < 0) {
      ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      break;
    }
    st[k].xla_steps = xs;
    st[k].nxla_steps = nxs;
    if (k > 0 && e->log) {
      char words[256];
      explain_engine_stage_summary(e, k, words, sizeof words);
      texts[2 * k] = fx_malloc(strlen(words) + strlen(st[k].pass) + 4);
      if (texts[2 * k]) sprintf(texts[2 * k], "%s: %s", st[k].pass, words);
      st[k].summary = texts[2 * k];
      if (st[k].changed) {
        texts[2 * k + 1] = diff_text(e, k, err);
        if (!texts[2 * k + 1]) ok = false;
        st[k].changes = texts[2 * k + 1];
      }
    }
  }
  if (ok) {
    VizDecisions all = {ds, nds};
    char title[300];
    snprintf(title, sizeof title, "%s", e->stages[0].module->name ? e->stages[0].module->name : "module");
    VizReportOptions ro = {.title = title, .pipeline = e->pipeline ? e->pipeline->name : "classic",
                           .device = e->device.name, .interrupted = interrupted, .progress = progress,
                           .progress_ctx = progress_ctx};
    ok = viz_report_write(out, r, st, n, &all, &ro, err);
  }
  for (int k = 0; st && k < n; k++) fx_free((VizXlaStep *)st[k].xla_steps);
  for (int k = 0; texts && k < 2 * n; k++) fx_free(texts[k]);
  fx_free(texts);
  fx_free(st);
  fx_free(ds);
  return ok;
}

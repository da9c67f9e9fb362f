/* engine.c — one session's stages, the pipeline run, the kernel plan per stage and the `why`
 * answers (see engine.h). Everything here returns data; the front ends print it. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ir/ir.h"
#include "../compiler/fusion/fusion.h"
#include "../compiler/fx/fx.h"
#include "../compiler/hlo/hlo.h"
#include "xla_dump.h"

/* ---------- life, input, stages ---------- */

void explain_engine_defaults(ExplainEngine *e) {
  e->device = *device_default();
  pass_settings_default(&e->settings);
  e->pipeline = pipeline_lookup("classic");
}

bool explain_engine_init(ExplainEngine *e) {
  memset(e, 0, sizeof *e);
  /* Room for stage 0 up front, so explain_engine_set_input never has to fail. */
  e->stages_cap = 16;
  e->stages = fx_calloc((size_t)e->stages_cap, sizeof *e->stages);
  e->log = explain_log_new();
  if (!e->stages || !e->log) {
    fx_free(e->stages);
    if (e->log) explain_log_free(e->log);
    memset(e, 0, sizeof *e);
    return false;
  }
  explain_engine_defaults(e);
  return true;
}

/* Frees stage i's plan, and its snapshot unless it is shared with the stage before it. */
static void drop_stage(ExplainEngine *e, int i) {
  if (!e->stages[i].shared) ir_module_free(e->stages[i].module);
  plan_free(e->stages[i].plan);
  e->stages[i] = (ExplainStage){0};
}

void explain_engine_fini(ExplainEngine *e) {
  if (!e->stages) return;
  for (int i = e->nstages - 1; i >= 0; i--) drop_stage(e, i);
  fx_free(e->stages);
  explain_log_free(e->log);
  xla_dump_free(e->xla);
  explain_engine_fx_clear(e);
  memset(e, 0, sizeof *e);
}

bool explain_engine_loaded(const ExplainEngine *e) { return e->nstages > 0 && e->stages[0].module; }

IrModule *explain_engine_module(const ExplainEngine *e, int k) {
  if (k < 0 || k >= e->nstages) return NULL;
  return e->stages[k].module;
}

const char *explain_engine_stage_pass(const ExplainEngine *e, int k) {
  return k == 0 || k >= e->nstages ? "input" : e->stages[k].pass;
}

void explain_engine_truncate(ExplainEngine *e, int keep) {
  if (keep < 1) keep = 1; /* the input stays */
  for (int i = e->nstages - 1; i >= keep; i--) drop_stage(e, i);
  explain_log_truncate(e->log, keep);
  if (e->nstages > keep) e->nstages = keep;
  if (e->cur >= e->nstages) e->cur = e->nstages > 0 ? e->nstages - 1 : 0;
  /* Stage k (k >= 1) is produced by pipeline pass k-1. */
  e->next_pass = e->nstages > 0 ? e->nstages - 1 : 0;
}

void explain_engine_set_input(ExplainEngine *e, IrModule *m) {
  for (int i = e->nstages - 1; i >= 0; i--) drop_stage(e, i);
  explain_log_truncate(e->log, 1);
  e->nstages = 0;
  e->cur = 0;
  e->next_pass = 0;
  memset(&e->ids, 0, sizeof e->ids);
  if (e->xla) {
    /* The `xla` pipeline belongs to the dump: back to the pipeline chosen before it. */
    if (e->pipeline == xla_dump_pipeline(e->xla)) e->pipeline = e->xla->prev_pipeline;
    if (!e->pipeline) e->pipeline = pipeline_lookup("classic");
    xla_dump_free(e->xla);
    e->xla = NULL;
  }
  if (!m) return;
  e->stages[0] = (ExplainStage){.module = m, .pass = "input", .changed = false};
  e->nstages = 1;
}

bool explain_is_hlo(const char *path, const char *text, size_t len) {
  size_t pl = strlen(path);
  if (pl >= 4 && strcmp(path + pl - 4, ".hlo") == 0) return true;
  size_t i = 0;
  for (;;) {
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
    if (i + 1 < len && text[i] == '/' && text[i + 1] == '/') {
      while (i < len && text[i] != '\n') i++;
      continue;
    }
    break;
  }
  return len - i >= 9 && strncmp(text + i, "HloModule", 9) == 0;
}

void explain_fx_module_name(const char *source, char *buf, size_t n) {
  const char *name = source && source[0] && source[0] != '<' ? source : "repl";
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  size_t len = strcspn(base, ".");
  if (len == 0) base = "repl", len = 4;
  size_t o = 0;
  if (base[0] >= '0' && base[0] <= '9' && o + 1 < n) buf[o++] = '_';
  for (size_t k = 0; k < len && o + 1 < n; k++) {
    char c = base[k];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    buf[o++] = ok ? c : '_';
  }
  buf[o] = 0;
}

bool explain_engine_load_file(ExplainEngine *e, const char *path, FxError *err) {
  size_t len = 0;
  char *text = fx_read_file(path, &len, err);
  if (!text) return false;
  IrModule *m = NULL;
  if (explain_is_hlo(path, text, len)) {
    bool ok = explain_engine_load_hlo(e, path, text, len, err);
    fx_free(text);
    return ok;
  } else {
    FxState *st = fx_state_new();
    char name[128];
    explain_fx_module_name(path, name, sizeof name);
    if (!st) fx_error_set(err, path, 0, 0, "out of memory");
    else if (fx_feed(st, text, path, 1, err)) m = fx_build_module(st, name, err);
    if (st) fx_state_free(st);
  }
  fx_free(text);
  if (!m) {
    if (!err->set) fx_error_set(err, path, 0, 0, "could not load the module");
    return false;
  }
  explain_engine_set_input(e, m);
  return true;
}

static bool shape_uncomputed(const IrShape *s, IrType *t) {
  if (s->type == IR_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (shape_uncomputed(&s->tuple[k], t)) return true;
    return false;
  }
  *t = s->type;
  return ir_type_is_uncomputed(s->type);
}

bool explain_module_uncomputed(const IrModule *m, char *why, size_t n) {
  for (int c = -1; m && c < m->ncomps; c++) { /* the entry first: its parameters are the program's */
    const IrComputation *comp = c < 0 ? m->entry : m->comps[c];
    for (int k = 0; comp && k < comp->ninstrs; k++) {
      const IrInstr *i = comp->instrs[k];
      IrType t;
      char g[200];
      if (!i->dead && ir_gather_uncomputed(i, g, sizeof g)) {
        snprintf(why, n, "%s is a gather that XLA takes but fxplain computes no value of: %s", i->name, g);
        return true;
      }
      if (i->dead || !shape_uncomputed(&i->shape, &t)) continue;
      snprintf(why, n, "%s is %s, an element type fxplain reads, prints, plans and fuses but computes no value of "
               "(XLA's 1- and 2-bit integers and 4-bit float)", i->name, ir_type_name(t));
      return true;
    }
  }
  return false;
}

bool explain_engine_load_hlo(ExplainEngine *e, const char *path, const char *text, size_t len, FxError *err) {
  HloProtoIds ids;
  IrModule *m = hlo_parse_with_ids(text, len, path, &ids, err);
  if (!m) {
    if (!err->set) fx_error_set(err, path, 0, 0, "could not load the module");
    return false;
  }
  explain_engine_set_input(e, m);
  e->ids = ids;
  explain_engine_fx_clear(e);
  return true;
}

void explain_engine_set_dump(ExplainEngine *e, IrModule *m0, XlaDump *d) {
  const Pipeline *prev = e->pipeline;
  if (e->xla && prev == xla_dump_pipeline(e->xla)) prev = e->xla->prev_pipeline;
  explain_engine_set_input(e, m0); /* frees the old dump */
  d->prev_pipeline = prev;
  e->xla = d;
  e->pipeline = xla_dump_pipeline(d);
}

bool explain_engine_unfuse(ExplainEngine *e, int *n, int *kernels_before, int *kernels_after, FxError *err) {
  const KernelPlan *before = explain_engine_plan(e, 0, err);
  if (!before) return false;
  IrModule *m = ir_module_clone(e->stages[0].module);
  if (!m) return fx_error_set(err, NULL, 0, 0, "out of memory");
  *n = fusion_unfuse_all(m);
  for (int k = 0; k < m->ncomps; k++) ir_computation_sort(m->comps[k]);
  ir_module_remove_unreachable(m);
  KernelPlan *after = plan_build(m, &e->device, err);
  if (!after) {
    ir_module_free(m);
    return false;
  }
  *kernels_before = before->ncompute;
  *kernels_after = after->ncompute;
  plan_free(after);
  if (*n == 0) ir_module_free(m);
  else explain_engine_set_input(e, m);
  return true;
}

/* ---------- pipeline ---------- */

const Pipeline *explain_engine_pipeline(ExplainEngine *e) {
  if (!e->pipeline) e->pipeline = pipeline_lookup("classic");
  return e->pipeline;
}

const Pipeline *explain_engine_find_pipeline(const ExplainEngine *e, const char *name) {
  const Pipeline *pl = pipeline_lookup(name);
  if (!pl && e->xla && strcmp(name, "xla") == 0) pl = xla_dump_pipeline(e->xla);
  return pl;
}

void explain_engine_set_pipeline(ExplainEngine *e, const Pipeline *pl) {
  if (pl == explain_engine_pipeline(e)) return;
  e->pipeline = pl;
  if (e->nstages > 0) {
    explain_engine_truncate(e, 1);
    e->cur = 0;
  }
}

int explain_engine_last_stage(ExplainEngine *e) { return explain_engine_pipeline(e)->npasses; }

int explain_engine_stage_of_pass(ExplainEngine *e, const char *name, int from) {
  const Pipeline *pl = explain_engine_pipeline(e);
  for (int k = from + 1; k <= pl->npasses; k++)
    if (strcmp(pl->passes[k - 1]->name, name) == 0) return k;
  return -1;
}

/* Room for stage k. */
static bool grow(ExplainEngine *e, int k) {
  if (k < e->stages_cap) return true;
  int ncap = e->stages_cap ? e->stages_cap * 2 : 16;
  ExplainStage *grown = fx_realloc(e->stages, sizeof(ExplainStage) * (size_t)ncap);
  if (!grown) return false;
  memset(grown + e->stages_cap, 0, sizeof(ExplainStage) * (size_t)(ncap - e->stages_cap));
  e->stages = grown;
  e->stages_cap = ncap;
  return true;
}

/* Ctrl-C while the pass making stage k ran: its work (out, when it got that far) and its
 * decisions go; the stages before it stay as they were. */
static bool stopped(ExplainEngine *e, int k, const char *pass, IrModule *out, FxError *err) {
  if (out) ir_module_free(out);
  explain_log_truncate(e->log, k);
  fx_error_clear(err);
  return fx_error_set(err, NULL, 0, 0,
                      "interrupted: %s (stage %d) was stopped before it finished; stages 0 to %d are as they were",
                      pass, k, k - 1);
}

bool explain_engine_run_next(ExplainEngine *e, FxError *err) {
  const Pipeline *pl = explain_engine_pipeline(e);
  int k = e->nstages;
  if (k - 1 >= pl->npasses)
    return fx_error_set(err, NULL, 0, 0, "the %s pipeline is finished: stage %d is its last", pl->name, k - 1);
  const Pass *p = pl->passes[k - 1];
  if (e->interrupted && *e->interrupted) return stopped(e, k, p->name, NULL, err);
  ExplainLog *log = e->log;
  if (!explain_log_begin_stage(log, k, p->name) || !grow(e, k)) return fx_error_set(err, NULL, 0, 0, "out of memory");
  IrModule *prev = e->stages[k - 1].module;
  IrModule *out = NULL;
  bool changed = false;
  DecisionSink sink = explain_log_sink(log);
  if (pass_settings_is_disabled(&e->settings, p->name)) {
    PassDecision d = {.stage = k, .pass = p->name, .action = "skip", .accepted = false, .reason = FR_POLICY,
                      .suggestion = "turn it back on with `set`"};
    pass_emit(&sink, &d, "%s is switched off: the stage is the previous one, unchanged", p->name);
  } else if (e->xla && pl == xla_dump_pipeline(e->xla)) {
    /* XLA's own snapshot, not a pass of ours. */
    FxError xe;
    fx_error_clear(&xe);
    out = xla_dump_next_stage(e->xla, k, prev, &e->device, &e->settings, &sink, &xe);
    if (e->interrupted && *e->interrupted) return stopped(e, k, p->name, out, err);
    if (!out) {
      explain_log_truncate(log, k);
      return fx_error_set(err, NULL, 0, 0, "stage %d: %s", k, xe.msg);
    }
    changed = true;
  } else {
    FxError perr;
    fx_error_clear(&perr);
    PassContext cx = {&sink, &e->device, &e->settings, k, p->name, &perr, e->interrupted, false};
    if (!pass_run_stage(p, prev, &cx, &out, &changed)) {
      if (e->interrupted && *e->interrupted) return stopped(e, k, p->name, NULL, err);
      explain_log_truncate(log, k);
      return fx_error_set(err, NULL, 0, 0, "stage %d: %s", k, perr.msg);
    }
  }
  if (explain_log_failed(log)) {
    if (out) ir_module_free(out);
    explain_log_truncate(log, k);
    return fx_error_set(err, NULL, 0, 0, "out of memory recording the decisions of %s", p->name);
  }
  e->stages[k] = (ExplainStage){.module = out ? out : prev, .pass = p->name, .changed = changed, .shared = out == NULL};
  e->nstages = k + 1;
  e->next_pass = k;
  return true;
}

bool explain_engine_ensure(ExplainEngine *e, int target, FxError *err) {
  while (e->nstages <= target)
    if (!explain_engine_run_next(e, err)) return false;
  return true;
}

/* XLA's priority-fusion stage holds XLA's decisions and fxplain's own on the same input: each
 * side counted apart, "XLA: 2 fused, 4 ineligible, 3 priority updates; fxplain: 2 fused; they
 * agree on every step" (or "1 disagreement"). */
static void xla_stage_summary(const ExplainEngine *e, int k, char *buf, size_t n) {
  const XlaFusionLog *l = e->xla->log;
  int left = 0, total = explain_stage_count(e->log, k), own = 0;
  for (int j = 0; j < total; j++) {
    const ExplainRecord *r = explain_stage_record(e->log, k, j);
    if (strcmp(r->pass, XLA_OWN_PASS) == 0) own++;
    else if (!r->accepted && r->reason && strcmp(r->action, "fuse") == 0 && strcmp(r->reason, "slower_if_fused") == 0)
      left++;
  }
  size_t len = (size_t)snprintf(buf, n, "XLA: %d fused, %d ineligible, %d priority update%s", l->nfusions,
                                l->nineligible, l->npriority, l->npriority == 1 ? "" : "s");
  if (left && len < n) len += (size_t)snprintf(buf + len, n - len, ", %d left unfused", left);
  if (!own) return; /* fxplain's own run failed: nothing to compare */
  char mine[160];
  explain_stage_summary_pass(e->log, k, XLA_OWN_PASS, mine, sizeof mine);
  int nd = xla_disagreements(e->log, k, NULL, 0);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "; fxplain: %s; ", mine);
  if (len >= n) return;
  if (nd) snprintf(buf + len, n - len, "%d disagreement%s", nd, nd == 1 ? "" : "s");
  else snprintf(buf + len, n - len, "they agree on every step");
}

void explain_engine_stage_summary(const ExplainEngine *e, int k, char *buf, size_t n) {
  if (k == 0) {
    snprintf(buf, n, "%d instructions", ir_module_instr_count(e->stages[0].module));
    return;
  }
  const ExplainRecord *r0 = explain_stage_record(e->log, k, 0);
  if (explain_stage_count(e->log, k) == 1 && r0->reason && strcmp(r0->reason, FR_POLICY) == 0)
    snprintf(buf, n, "switched off");
  else if (e->xla && e->xla->log && e->pipeline == xla_dump_pipeline(e->xla) && k == xla_dump_fusion_stage(e->xla))
    xla_stage_summary(e, k, buf, n);
  else
    explain_stage_summary(e->log, k, buf, n);
}

int explain_engine_stage_with(const ExplainEngine *e, const char *name, int upto) {
  for (int k = upto; k >= 0; k--)
    if (ir_module_find_instr(e->stages[k].module, name)) return k;
  return -1;
}

/* ---------- kernel plans and decisions ---------- */

/* Stage k's plan as kept: built without buffers; explain_engine_plan assigns them when first
 * asked (the kernel counts `step` shows do not need them: half of building a plan). */
static KernelPlan *stage_plan(ExplainEngine *e, int k, FxError *err) {
  if (k < 0 || k >= e->nstages) {
    fx_error_set(err, NULL, 0, 0, "no stage %d", k);
    return NULL;
  }
  /* A stage whose pass changed nothing shares the previous stage's module, and so its plan. */
  while (k > 0 && e->stages[k].shared) k--;
  ExplainStage *st = &e->stages[k];
  /* A plan is the module's kernels on one device: another device (set device, a GPU's own
   * figures) builds it again. */
  if (st->plan && memcmp(&st->plan_device, &e->device, sizeof e->device) != 0) {
    plan_free(st->plan);
    st->plan = NULL;
  }
  if (!st->plan) {
    st->plan = plan_build_kernels(st->module, &e->device, err);
    if (st->plan) st->plan_device = e->device;
  }
  return st->plan;
}

const KernelPlan *explain_engine_plan(ExplainEngine *e, int k, FxError *err) {
  KernelPlan *p = stage_plan(e, k, err);
  return p && plan_assign_buffers(p, err) ? p : NULL;
}

const KernelPlan *explain_engine_kernels(ExplainEngine *e, int k, FxError *err) { return stage_plan(e, k, err); }

int explain_engine_number(const ExplainEngine *e, const ExplainRecord *r) { return explain_record_number(e->log, r); }

size_t explain_engine_snapshot_bytes(const ExplainEngine *e, int *distinct, size_t *with_indexes) {
  size_t total = 0, all = 0;
  *distinct = 0;
  for (int k = 0; k < e->nstages; k++) {
    if (e->stages[k].shared || !e->stages[k].module) continue;
    (*distinct)++;
    total += e->stages[k].module->arena.total;
    all += ir_module_bytes(e->stages[k].module);
  }
  if (with_indexes) *with_indexes = all;
  return total;
}

/* ---------- why ---------- */

bool explain_engine_why_one(ExplainEngine *e, const char *name, ExplainWhyOne *out, int *unknown, FxError *err) {
  memset(out, 0, sizeof *out);
  *unknown = 0;
  out->name = name;
  int at = explain_engine_stage_with(e, name, e->cur);
  int later = at < 0 ? explain_engine_stage_with(e, name, e->nstages - 1) : at;
  ExplainFilter f;
  explain_filter_init(&f);
  f.name = name;
  f.max_stage = e->nstages - 1;
  if (at < 0 && later < 0) {
    /* A name no stage holds may still be one a pass made and rewrote again within one stage (a
       level of reduce-window-rewriter's scan): its decisions tell its story. */
    out->n = explain_query(e->log, &f, &out->decisions);
    if (out->n < 0) {
      out->n = 0;
      out->decisions = NULL;
      return fx_error_set(err, NULL, 0, 0, "out of memory");
    }
    if (out->n == 0) {
      *unknown = 1;
      return false;
    }
    out->last_seen = out->first_later = -1;
    return true;
  }
  out->last_seen = at;
  out->first_later = later;
  out->instr = ir_module_find_instr(e->stages[e->cur].module, name);
  if (out->instr) {
    const KernelPlan *p = explain_engine_plan(e, e->cur, err);
    if (!p) return false;
    out->kernel = plan_kernel_of(p, out->instr);
  }
  out->n = explain_query(e->log, &f, &out->decisions);
  if (out->n < 0) {
    out->n = 0;
    out->decisions = NULL;
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  if (!out->instr) {
    /* What the passes that removed it made of it, at this stage (nothing when that cannot be
     * followed). */
    FxError pe;
    fx_error_clear(&pe);
    const KernelPlan *p = explain_engine_plan(e, e->cur, &pe);
    ExplainStageView *v = p ? explain_view_new(e->log, e->cur, e->stages[e->cur].module, p) : NULL;
    out->became = v ? explain_view_follow(v, name) : NULL;
    if (out->became) out->became_kernel = plan_kernel_of(p, out->became);
    explain_view_free(v);
  }
  return true;
}

void explain_why_one_free(ExplainWhyOne *w) {
  fx_free(w->decisions);
  memset(w, 0, sizeof *w);
}

bool explain_engine_why_pair(ExplainEngine *e, const char *a, const char *b, ExplainWhyPair *out, int *unknown,
                             FxError *err) {
  memset(out, 0, sizeof *out);
  *unknown = 0;
  if (explain_engine_stage_with(e, a, e->nstages - 1) < 0) {
    *unknown = 1;
    return false;
  }
  if (explain_engine_stage_with(e, b, e->nstages - 1) < 0) {
    *unknown = 2;
    return false;
  }
  ExplainFilter f;
  explain_filter_init(&f);
  f.name = a;
  f.name2 = b;
  f.max_stage = e->nstages - 1;
  int n = explain_query(e->log, &f, &out->decisions);
  if (n < 0) {
    out->decisions = NULL;
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  out->n = n;
  /* Where the two are split at the current stage: the boundaries between their kernels. */
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) {
    explain_why_pair_free(out);
    return false;
  }
  out->view = explain_view_new(e->log, e->cur, e->stages[e->cur].module, p);
  if (!out->view) {
    explain_why_pair_free(out);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  out->split = fx_calloc(1, sizeof *out->split);
  FxError serr;
  fx_error_clear(&serr);
  out->have_split = out->split && explain_split(out->view, a, b, out->split, &serr);
  if (out->have_split) {
    snprintf(out->relation, sizeof out->relation, "%s", out->split->sentence);
  } else if (n == 0) {
    /* Judge the pair where both still exist: the latest stage before this one that has both. */
    int st = e->cur;
    while (st > 0 && !(ir_module_find_instr(e->stages[st].module, a) && ir_module_find_instr(e->stages[st].module, b)))
      st--;
    const KernelPlan *q = explain_engine_plan(e, st, err);
    if (!q) {
      explain_why_pair_free(out);
      return false;
    }
    explain_pair_relation(e->stages[st].module, q, a, b, out->relation, sizeof out->relation);
  }
  out->apart = out->have_split &&
               (out->split->kind == EXPLAIN_SPLIT_PATH || out->split->kind == EXPLAIN_SPLIT_SIBLINGS);
  /* The pair's final outcome is its last decision (the latest stage, the last the pass made);
   * every earlier one was superseded by a later pass or run. */
  out->final = n > 0 ? out->decisions[n - 1] : NULL;
  return true;
}

void explain_why_pair_free(ExplainWhyPair *w) {
  explain_view_free(w->view);
  fx_free(w->split);
  fx_free(w->decisions);
  memset(w, 0, sizeof *w);
}

const char *explain_split_kind_name(ExplainSplitKind k) {
  switch (k) {
  case EXPLAIN_SPLIT_SAME: return "same";
  case EXPLAIN_SPLIT_NONE: return "same_kernel";
  case EXPLAIN_SPLIT_NO_KERNEL: return "no_kernel";
  case EXPLAIN_SPLIT_ELSEWHERE: return "other_computation";
  case EXPLAIN_SPLIT_PATH: return "path";
  case EXPLAIN_SPLIT_SIBLINGS: return "siblings";
  }
  return "?";
}

/* ---------- stage words ---------- */

static bool parse_count(const char *w, long long *out) {
  if (!w || !*w) return false;
  char *end;
  long long v = strtoll(w, &end, 10);
  if (*end || v < 0) return false;
  *out = v;
  return true;
}

bool explain_engine_stage_word(ExplainEngine *e, const char *w, int *out, char *why, size_t n) {
  long long v;
  const char *pl = explain_engine_pipeline(e)->name;
  int last = explain_engine_last_stage(e);
  if (parse_count(w, &v)) {
    if (v > last) {
      snprintf(why, n, "no stage %lld: the %s pipeline has stages 0 to %d", v, pl, last);
      return false;
    }
    *out = (int)v;
    return true;
  }
  int k = explain_engine_stage_of_pass(e, w, 0);
  if (k < 0) {
    if (pass_lookup(w)) snprintf(why, n, "the %s pipeline does not run %s", pl, w);
    else snprintf(why, n, "expected a stage number or a pass name, got '%s'", w);
    return false;
  }
  *out = k;
  return true;
}

bool explain_engine_back_target(ExplainEngine *e, const char *w, int *target, bool *clamped, char *why, size_t n) {
  long long count = 1;
  if (w && (!parse_count(w, &count) || count == 0)) {
    snprintf(why, n, "expected a count of 1 or more, got '%s'", w);
    return false;
  }
  *clamped = count > e->cur;
  *target = *clamped ? 0 : e->cur - (int)count;
  return true;
}

bool explain_engine_computed_stage(ExplainEngine *e, const char *w, int *out, char *why, size_t n) {
  char *end;
  long v = strtol(w, &end, 10);
  if (*w && !*end) {
    if (v < 0 || v >= e->nstages) {
      snprintf(why, n, "stage %ld has not been computed (stages 0..%d exist: step there first)", v, e->nstages - 1);
      return false;
    }
    *out = (int)v;
    return true;
  }
  for (int k = 1; k < e->nstages; k++)
    if (e->stages[k].pass && strcmp(e->stages[k].pass, w) == 0) {
      *out = k;
      return true;
    }
  snprintf(why, n, "no computed stage is '%s': give a stage number (0..%d) or the name of a pass that ran", w,
           e->nstages - 1);
  return false;
}

bool explain_engine_step_target(ExplainEngine *e, const char *w, int *target, bool *clamped, char *why, size_t n) {
  const char *pl = explain_engine_pipeline(e)->name;
  int last = explain_engine_last_stage(e);
  long long count = 1;
  *clamped = false;
  *target = e->cur + 1;
  if (w && strcmp(w, "all") == 0) {
    *target = last;
  } else if (w && parse_count(w, &count)) {
    if (count == 0) {
      snprintf(why, n, "step 0 does nothing: give a count of 1 or more");
      return false;
    }
    *target = e->cur + (int)(count < last ? count : last);
  } else if (w) {
    *target = explain_engine_stage_of_pass(e, w, e->cur);
    if (*target < 0) {
      if (pass_lookup(w) && explain_engine_stage_of_pass(e, w, 0) > 0)
        snprintf(why, n, "%s does not run after stage %d of the %s pipeline", w, e->cur, pl);
      else if (pass_lookup(w)) snprintf(why, n, "the %s pipeline does not run %s", pl, w);
      else snprintf(why, n, "expected a count, a pass name or 'all', got '%s'", w);
      return false;
    }
  }
  /* A count past the end stops at the last stage (the front end says so). */
  *clamped = *target > last || (w && strcmp(w, "all") != 0 && parse_count(w, &count) && count > last - e->cur);
  if (*target > last) *target = last;
  return true;
}

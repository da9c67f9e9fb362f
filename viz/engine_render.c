/* engine_render.c — the engine's stages drawn for a front end (see viz.h): `render`'s choices (the
 * stage a decision is drawn on, the computation it lives in, the title with the plan's figures,
 * the file name fxplain picks), the scope picture fitted to what dot can lay out, the report
 * written to a file, and the terminal picture with each kernel's plan figures and each value
 * crossing kernels tagged with the decision that kept it in memory. Nothing here prints to the
 * user: format_viz.c does. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ir/ir.h"
#include "../explain/xla_dump.h"
#include "viz.h"

/* ---------- render ---------- */

/* "12 kernel launches, 1.5 MiB moved, 3.20 us estimated" from the stage's kernel plan. */
static void plan_words(const KernelPlan *p, char *buf, size_t n) {
  char b[32];
  double bytes = (double)(p->bytes_read + p->bytes_written);
  fx_format_bytes(b, sizeof b, bytes, FX_BYTES_PLAN);
  double us = p->est_us;
  if (us < 1000) snprintf(buf, n, "%lld kernel launches, %s moved, %.2f us estimated", (long long)p->launches, b, us);
  else if (us < 1e6) snprintf(buf, n, "%lld kernel launches, %s moved, %.2f ms estimated", (long long)p->launches, b, us / 1e3);
  else snprintf(buf, n, "%lld kernel launches, %s moved, %.2f s estimated", (long long)p->launches, b, us / 1e6);
}

/* Output files named by fxplain (no FILE given) go to $FXPLAIN_OUT_DIR when it is set, else to
 * the current directory; the message names them relative to that place. */
static void default_path(char *path, size_t n, const char *name) {
  const char *dir = getenv("FXPLAIN_OUT_DIR");
  if (dir && *dir) snprintf(path, n, "%s/%s", dir, name);
  else snprintf(path, n, "%s", name);
}

/* A file-name-safe copy of s. */
static void safe_name(char *out, size_t n, const char *s) {
  size_t k = 0;
  for (; s && *s && k + 1 < n; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out[k++] = ok ? c : '_';
  }
  out[k] = 0;
}

/* MODULE.stageN[.COMPUTATION][.FOCUS][.collapsed].FORMAT, or MODULE.decisionN[.collapsed].FORMAT. */
static void picture_name(const VizRenderRequest *rq, const IrModule *m, const char *comp, char *shown, size_t n) {
  char base[300], part[200];
  safe_name(base, sizeof base, m->name ? m->name : "module");
  int len = 0;
  if (rq->decision) len = snprintf(shown, n, "%s.decision%d", base, rq->decision);
  else len = snprintf(shown, n, "%s.stage%d", base, rq->stage);
  if (comp && !rq->decision) {
    safe_name(part, sizeof part, comp);
    len += snprintf(shown + len, n - (size_t)len, ".%s", part);
  }
  if (rq->focus && !rq->decision) {
    safe_name(part, sizeof part, rq->focus);
    len += snprintf(shown + len, n - (size_t)len, ".%s", part);
  }
  if (rq->collapse) len += snprintf(shown + len, n - (size_t)len, ".collapsed");
  snprintf(shown + len, n - (size_t)len, ".%s", viz_format_name(rq->format));
}

/* Lays g out (where Ctrl-C can stop it) and writes it to path, or into out->data for "-". */
static bool write_picture(const VizRenderRequest *rq, VizRenderer *r, VizGraph *g, VizRendered *out, FxError *err) {
  char *data;
  size_t len;
  if (!viz_render_interruptible(r, g, rq->format, &data, &len, rq->interrupted, err)) return false;
  if (out->to_stdout) {
    out->data = data;
    out->len = len;
    return true;
  }
  bool ok = true;
  FILE *f = fopen(out->path, "wb");
  if (!f) {
    ok = fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", out->path, strerror(errno));
  } else {
    bool w = fwrite(data, 1, len, f) == len;
    if (fclose(f) != 0 || !w) ok = fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", out->path, strerror(errno));
  }
  fx_free(data);
  return ok;
}

bool viz_engine_render(ExplainEngine *e, const VizRenderRequest *rq, VizRendered *out, VizAt *at, FxError *err) {
  memset(out, 0, sizeof *out);
  *at = VIZ_AT_NONE;
  int stage = rq->stage;
  PassDecision *ds = NULL;
  int nds = viz_engine_decisions(e, rq->decision ? e->nstages - 1 : stage, &ds);
  if (nds < 0) {
    *at = VIZ_AT_COMMAND;
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  VizOptions o;
  viz_options_default(&o);
  o.computation = rq->computation;
  o.focus = rq->focus;
  o.depth = rq->depth;
  o.collapse = rq->collapse;
  o.layout = rq->layout;
  char title[512], drawn_as[1200];
  const IrModule *m = e->stages[stage].module;
  if (rq->decision) {
    if (rq->decision > nds) {
      fx_free(ds);
      *at = VIZ_AT_DECISION;
      return fx_error_set(err, NULL, 0, 0, "there is no decision #%d: %d decision%s recorded so far (see `decisions`)",
                          rq->decision, nds, nds == 1 ? "" : "s");
    }
    o.decision = &ds[rq->decision - 1];
    o.decision_number = rq->decision;
    /* Drawn on the stage the pass looked at: the one before the decision's stage. */
    stage = o.decision->stage > 0 ? o.decision->stage - 1 : 0;
    m = e->stages[stage].module;
    if (e->xla && e->xla->log && o.decision->stage == xla_dump_fusion_stage(e->xla)) {
      /* One of XLA's steps may name a fusion it made earlier in the pass: drawn as its root. */
      PassDecision *d = &ds[rq->decision - 1];
      const char *pr = d->producer ? xla_fusion_log_root(e->xla->log, m, e->xla->log->nsteps, d->producer) : NULL;
      const char *cr = d->consumer ? xla_fusion_log_root(e->xla->log, m, e->xla->log->nsteps, d->consumer) : NULL;
      int dl = 0;
      if (pr && strcmp(pr, d->producer) != 0) dl += snprintf(drawn_as + dl, sizeof drawn_as - (size_t)dl, "%s is drawn as %s, its root; ", d->producer, pr);
      if (cr && strcmp(cr, d->consumer) != 0 && dl < (int)sizeof drawn_as)
        dl += snprintf(drawn_as + dl, sizeof drawn_as - (size_t)dl, "%s is drawn as %s, its root; ", d->consumer, cr);
      if (dl > 0 && dl < (int)sizeof drawn_as) {
        snprintf(drawn_as + dl, sizeof drawn_as - (size_t)dl, "%s", d->detail ? d->detail : "");
        d->detail = drawn_as;
      }
      if (pr) d->producer = pr;
      if (cr) d->consumer = cr;
    }
    if (!rq->computation && o.decision->producer) {
      const IrInstr *p = ir_module_find_instr(m, o.decision->producer);
      if (p && p->parent && !p->parent->is_entry && !p->parent->fusion_instr) o.computation = p->parent->name;
    }
    out->decision_stage = o.decision->stage;
    out->decision_pass = o.decision->pass;
    out->decision_accepted = o.decision->accepted;
  } else {
    o.decisions = (VizDecisions){ds, nds};
    const KernelPlan *plan = explain_engine_plan(e, stage, err);
    if (!plan) {
      fx_free(ds);
      return false;
    }
    char words[160];
    plan_words(plan, words, sizeof words);
    snprintf(title, sizeof title, "%s \xc2\xb7 stage %d (%s) \xc2\xb7 %s%s \xc2\xb7 %s", m->name ? m->name : "module",
             stage, explain_engine_stage_pass(e, stage), rq->computation ? "computation " : "",
             rq->computation ? rq->computation : "entry", words);
    o.title = title;
  }
  out->stage = stage;
  out->computation = o.computation;
  out->entry = m->entry ? m->entry->name : NULL;
  VizGraph *g = viz_graph_build(m, &o, err);
  if (!g) {
    fx_free(ds);
    /* Which option named what is missing. */
    *at = strstr(err->msg, "no computation") ? VIZ_AT_COMPUTATION
          : strstr(err->msg, "no instruction") ? VIZ_AT_FOCUS
                                                : VIZ_AT_DECISION;
    return false;
  }
  VizRenderer *r = rq->format == VIZ_DOT ? NULL : rq->renderer(err);
  if (rq->format != VIZ_DOT && !r) {
    viz_graph_free(g);
    fx_free(ds);
    return false;
  }
  out->to_stdout = rq->file && strcmp(rq->file, "-") == 0;
  if (rq->file) {
    snprintf(out->path, sizeof out->path, "%s", rq->file);
    snprintf(out->shown, sizeof out->shown, "%s", rq->file);
  } else {
    picture_name(rq, m, o.computation, out->shown, sizeof out->shown);
    default_path(out->path, sizeof out->path, out->shown);
  }
  bool ok = write_picture(rq, r, g, out, err);
  if (ok) out->stats = *viz_graph_stats(g);
  else *at = VIZ_AT_FILE;
  viz_graph_free(g);
  fx_free(ds);
  return ok;
}

/* ---------- render --group scope ---------- */

VizGraph *viz_engine_scope_graph(ExplainEngine *e, int depth, VizFormat f, const char *file, VizScopePicture *out,
                                 FxError *err) {
  memset(out, 0, sizeof *out);
  IrModule *m = explain_engine_module(e, e->cur);
  char title[200];
  snprintf(title, sizeof title, "%s, stage %d (%s), by JAX name scope", m->name, e->cur,
           e->cur ? e->stages[e->cur].pass : "input");
  if (file) {
    snprintf(out->path, sizeof out->path, "%s", file);
  } else {
    char name[600];
    snprintf(name, sizeof name, "%s.stage%d.scopes.%s", m->name, e->cur, viz_format_name(f));
    default_path(out->path, sizeof out->path, name);
  }
  VizGraph *g = viz_scope_graph_build(m, depth, title, err);
  if (!g) return NULL;
  /* dot takes minutes on hundreds of scopes: draw fewer levels, and say so (DOT text has all). */
  out->full = viz_graph_stats(g)->nodes;
  out->used = depth;
  FxError scratch; /* a level that cannot be drawn leaves the one drawn before */
  fx_error_clear(&scratch);
  for (int d = 12; f != VIZ_DOT && viz_graph_stats(g)->nodes > 100 && d >= 1; d--) {
    if (depth && d >= depth) continue;
    VizGraph *g2 = viz_scope_graph_build(m, d, title, &scratch);
    if (!g2) break;
    viz_graph_free(g);
    g = g2;
    out->used = d;
  }
  out->depth = depth;
  out->nodes = viz_graph_stats(g)->nodes;
  out->edges = viz_graph_stats(g)->memory_edges;
  return g;
}

/* ---------- report ---------- */

bool viz_engine_report_file(const char *path, VizRenderer *r, ExplainEngine *e, volatile int *interrupted,
                            void (*progress)(void *ctx, int done, int total), void *progress_ctx, VizReportWritten *out,
                            VizAt *at, FxError *err) {
  memset(out, 0, sizeof *out);
  *at = VIZ_AT_NONE;
  char *html = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&html, &len);
  bool ok = mem && viz_engine_report(mem, r, e, interrupted, progress, progress_ctx, &out->decisions, err);
  if (mem) fclose(mem);
  if (ok) {
    FILE *f = fopen(path, "wb");
    bool w = f && fwrite(html, 1, len, f) == len;
    if (!f || fclose(f) != 0 || !w) {
      ok = fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", path, strerror(errno));
      *at = VIZ_AT_FILE;
    }
  }
  out->stages = e->nstages;
  out->bytes = len;
  free(html); /* open_memstream's buffer comes from malloc */
  return ok;
}

/* ---------- show graph ---------- */

typedef struct {
  const ExplainLog *log;
  ExplainStageView *view;
} EdgeTagCtx;

/* "#13 reduce_epilogue": the decision at the boundary between the two kernels. */
static bool edge_tag(void *ctx, const IrInstr *from, const IrInstr *to, char *buf, size_t n, int *decision) {
  EdgeTagCtx *c = ctx;
  *decision = -1;
  const PlanKernel *kf = explain_view_kernel(c->view, from), *kt = explain_view_kernel(c->view, to);
  if (!kf || !kt || kf == kt) return false;
  ExplainBoundary bd;
  explain_boundary(c->view, kf, kt, &bd);
  char lb[160];
  if (!bd.decision) {
    /* No pass judged the pair because the producer is a library kernel fusion never opens: say
     * that (once a fusion pass has run; before, nothing has been judged at all). */
    if (kf->kind != KERNEL_LIBRARY || strncmp(bd.none, "no ", 3) == 0) return false;
    snprintf(buf, n, "(%s output: never fused)", explain_kernel_label(kf, lb, sizeof lb));
    return true;
  }
  const char *reason = bd.decision->reason ? bd.decision->reason : (bd.decision->accepted ? "accepted" : "rejected");
  /* A library call is named as what it is (cuBLAS matmul, cuDNN convolution), not "custom call". */
  const PlanKernel *lib = kf->kind == KERNEL_LIBRARY ? kf : kt->kind == KERNEL_LIBRARY ? kt : NULL;
  int num = explain_record_number(c->log, bd.decision);
  *decision = num;
  if (lib && strcmp(reason, "custom_call") == 0)
    snprintf(buf, n, "#%d %s: %s", num, reason, explain_kernel_label(lib, lb, sizeof lb));
  else snprintf(buf, n, "#%d %s", num, reason);
  return true;
}

bool viz_engine_text_graph(FILE *out, ExplainEngine *e, const char *comp, bool json, VizAt *at, FxError *err) {
  *at = VIZ_AT_NONE;
  const IrModule *m = e->stages[e->cur].module;
  const KernelPlan *p = explain_engine_plan(e, e->cur, err);
  if (!p) return false;
  VizKernelNumbers *kn = fx_calloc((size_t)p->nkernels + 1, sizeof *kn);
  if (!kn) {
    *at = VIZ_AT_COMMAND;
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  for (int k = 0; k < p->nkernels; k++)
    kn[k] = (VizKernelNumbers){p->kernels[k].name, p->kernels[k].bytes_read, p->kernels[k].bytes_written,
                               p->kernels[k].launches, p->kernels[k].est_us};
  /* Each value crossing kernels is tagged with the decision that kept it in memory. */
  ExplainStageView *view = e->log ? explain_view_new(e->log, e->cur, m, p) : NULL;
  EdgeTagCtx tc = {e->log, view};
  VizNumbers nums = {kn, p->nkernels, view ? edge_tag : NULL, &tc};
  bool ok = json ? viz_json_graph(out, m, comp, &nums, err) : viz_text_graph(out, m, comp, &nums, 100, err);
  if (!ok) *at = VIZ_AT_COMPUTATION;
  explain_view_free(view);
  fx_free(kn);
  return ok;
}

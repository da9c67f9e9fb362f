/* report.c — `report FILE.html`: the whole walkthrough of a pipeline as one self-contained page.
 *
 * The page is written in one go from the stages the session holds: a summary table of every stage
 * at the top, then one section per stage with its numbers (instructions, kernels, bytes, estimated
 * time), its picture (Graphviz SVG inlined: the drawn computation plus the bodies of its while
 * loops), what the pass changed, and its decisions in a table that a few lines of inline
 * JavaScript filter by verdict and reason. Arrow keys (or j/k) move between stages. Nothing is
 * fetched: no network, no CDN, no external file. */
#include <string.h>

#include "viz_internal.h"

#define MAX_DECISIONS_LISTED 3000
#define MAX_PICTURES_PER_STAGE 4
#define MAX_NODES_DRAWN 1500

static const char *css =
    "body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#1d1d1d;background:#fafafa}"
    "header{background:#1f3f77;color:#fff;padding:14px 24px}header h1{margin:0 0 4px;font-size:22px}"
    "header p{margin:0;font-size:13px;opacity:.9}"
    "main{padding:8px 24px 80px}"
    "table{border-collapse:collapse;font-size:13px;background:#fff}"
    "th,td{border:1px solid #d6d6d6;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef2f8}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.current td{background:#fff7d6}"
    "section.stage{background:#fff;border:1px solid #d6d6d6;border-radius:6px;margin:18px 0;padding:10px 18px}"
    "section.stage.current{border-color:#1f3f77;box-shadow:0 0 0 2px #1f3f7733}"
    "section.stage h2{margin:6px 0;font-size:19px}section.stage h3{font-size:15px;margin:14px 0 6px}"
    ".unchanged{color:#777}.numbers span{display:inline-block;margin-right:18px;font-size:14px}"
    ".numbers b{font-size:16px}"
    ".picture{overflow:auto;max-height:85vh;border:1px solid #e3e3e3;border-radius:4px;margin:6px 0;background:#fff}"
    ".picture.fit svg{max-width:100%;height:auto}"
    ".picture-title{font-size:13px;color:#444;margin-top:10px}"
    "button.zoom{font-size:12px;margin-left:8px}"
    "pre.changes{background:#f4f4f4;padding:8px;font-size:12px;max-height:300px;overflow:auto}"
    ".v-accepted{color:#2a7a2a;font-weight:bold}.v-rejected{color:#d62728;font-weight:bold}"
    "code{font-size:12px}.filters{font-size:13px;margin:4px 0}.filters select{margin:0 10px 0 4px}"
    ".nav{margin-top:10px;font-size:13px}.nav a{margin-right:16px}"
    "#keys{position:fixed;right:12px;bottom:10px;background:#1f3f77;color:#fff;font-size:12px;"
    "padding:5px 10px;border-radius:4px;opacity:.85}";

static const char *js =
    "(function(){"
    "var secs=Array.prototype.slice.call(document.querySelectorAll('section.stage'));"
    "var rows=document.querySelectorAll('#summary tbody tr');var cur=0;"
    "function mark(i){secs.forEach(function(s,k){s.classList.toggle('current',k===i);});"
    "Array.prototype.forEach.call(rows,function(r,k){r.classList.toggle('current',k===i);});"
    "var c=document.getElementById('keys-stage');if(c)c.textContent=secs[i]?secs[i].dataset.title:'';}"
    "function go(i){if(i<0||i>=secs.length)return;cur=i;secs[i].scrollIntoView({block:'start'});"
    "if(history.replaceState)history.replaceState(null,'','#'+secs[i].id);mark(i);}"
    "document.addEventListener('keydown',function(e){var t=e.target.tagName;"
    "if(t==='SELECT'||t==='INPUT'||t==='TEXTAREA'||e.ctrlKey||e.metaKey||e.altKey)return;"
    "if(e.key==='ArrowRight'||e.key==='ArrowDown'&&e.shiftKey||e.key==='j'||e.key==='n'){go(cur+1);e.preventDefault();}"
    "else if(e.key==='ArrowLeft'||e.key==='ArrowUp'&&e.shiftKey||e.key==='k'||e.key==='p'){go(cur-1);e.preventDefault();}"
    "else if(e.key==='Home'){go(0);e.preventDefault();}"
    "else if(e.key==='End'){go(secs.length-1);e.preventDefault();}});"
    "window.addEventListener('scroll',function(){var best=0;for(var k=0;k<secs.length;k++){"
    "if(secs[k].getBoundingClientRect().top<120)best=k;}if(best!==cur){cur=best;mark(cur);}});"
    "var h=location.hash.replace('#','');secs.forEach(function(s,k){if(s.id===h)cur=k;});mark(cur);"
    /* The browser scrolls to the anchor before the pictures shrink to the page's width, which
     * leaves it past the end of a now shorter page (a blank screen): scroll again once laid out. */
    "if(h&&secs[cur]){var back=function(){secs[cur].scrollIntoView({block:'start'});};"
    "window.addEventListener('load',back);if(window.requestAnimationFrame)requestAnimationFrame(back);}"
    "document.querySelectorAll('.filters').forEach(function(f){"
    "var sec=f.parentNode;var v=f.querySelector('.f-verdict'),r=f.querySelector('.f-reason');"
    "function apply(){var n=0;sec.querySelectorAll('tr.d').forEach(function(tr){"
    "var ok=(v.value==='all'||tr.dataset.verdict===v.value)&&(r.value==='all'||tr.dataset.reason===r.value);"
    "tr.hidden=!ok;if(ok)n++;});f.querySelector('.count').textContent=n+' shown';}"
    "v.addEventListener('change',apply);r.addEventListener('change',apply);apply();});"
    "document.querySelectorAll('button.zoom').forEach(function(b){b.addEventListener('click',function(){"
    "var p=b.parentNode.nextElementSibling;p.classList.toggle('fit');"
    "b.textContent=p.classList.contains('fit')?'actual size':'fit to width';});});"
    "})();";

/* ---------- a page whose pictures are laid out at the end, all at once ---------- */

bool viz_page_picture(VizPage *p, VizGraph *g, int stage) {
  if (p->n == p->cap) {
    int ncap = p->cap ? 2 * p->cap : 64;
    VizBatchItem *items = fx_realloc(p->items, sizeof *items * (size_t)ncap);
    if (items) p->items = items;
    size_t *at = items ? fx_realloc(p->at, sizeof *at * (size_t)ncap) : NULL;
    if (at) p->at = at;
    int *stages = at ? fx_realloc(p->stage, sizeof *stages * (size_t)ncap) : NULL;
    if (stages) p->stage = stages;
    if (!stages) {
      viz_graph_free(g);
      return false;
    }
    p->cap = ncap;
  }
  p->items[p->n] = (VizBatchItem){.graph = g};
  p->at[p->n] = p->text.len;
  p->stage[p->n] = stage;
  p->n++;
  return true;
}

void viz_page_free(VizPage *p) {
  for (int k = 0; k < p->n; k++) {
    viz_graph_free(p->items[k].graph);
    fx_free(p->items[k].data);
  }
  fx_free(p->items);
  fx_free(p->at);
  fx_free(p->stage);
  vbuf_free(&p->text);
  memset(p, 0, sizeof *p);
}

/* The progress of the batch told by stage: the first stage with a picture still to draw. */
typedef struct {
  const VizPage *page;
  int *left; /* pictures left per stage */
  int nstages, shown;
  const VizReportOptions *o;
} StageProgress;

static void stage_progress(void *ctx, int item, int done, int total) {
  (void)done;
  (void)total;
  StageProgress *sp = ctx;
  sp->left[sp->page->stage[item]]--;
  int s = 0;
  while (s < sp->nstages && sp->left[s] == 0) s++;
  if (s < sp->nstages && s != sp->shown) {
    sp->shown = s;
    sp->o->progress(sp->o->progress_ctx, s, sp->nstages);
  }
}

/* Lays out every picture of the page (viz_render_batch) and writes it to out, each SVG without
 * its XML prologue at its place. */
static bool page_write(VizPage *p, FILE *out, VizRenderer *r, int nstages, const VizReportOptions *o, FxError *err) {
  if (p->text.failed) return fx_error_set(err, NULL, 0, 0, "out of memory writing the report");
  StageProgress sp = {p, fx_calloc((size_t)nstages + 1, sizeof(int)), nstages, -1, o};
  if (!sp.left) return fx_error_set(err, NULL, 0, 0, "out of memory writing the report");
  for (int k = 0; k < p->n; k++) sp.left[p->stage[k]]++;
  VizBatchOptions bo = {.workers = o->workers, .interrupted = o->interrupted,
                        .progress = o->progress ? stage_progress : NULL, .progress_ctx = &sp};
  bool ok = viz_render_batch(r, p->items, p->n, VIZ_SVG, &bo, NULL, err);
  fx_free(sp.left);
  if (!ok) {
    if (strcmp(err->msg, "interrupted") == 0) fx_error_set(err, NULL, 0, 0, "interrupted: the report was not written");
    return false;
  }
  size_t from = 0;
  bool wrote = true;
  for (int k = 0; k < p->n && wrote; k++) {
    const char *svg = p->items[k].data;
    const char *start = strstr(svg, "<svg");
    if (!start) start = svg;
    wrote = fwrite(p->text.s + from, 1, p->at[k] - from, out) == p->at[k] - from;
    size_t n = p->items[k].len - (size_t)(start - svg);
    wrote = wrote && fwrite(start, 1, n, out) == n;
    from = p->at[k];
  }
  wrote = wrote && fwrite(p->text.s + from, 1, p->text.len - from, out) == p->text.len - from;
  if (!wrote) return fx_error_set(err, NULL, 0, 0, "could not write the report");
  return true;
}

static void fmt_us(double us, char *out, size_t n) {
  if (us >= 1e6) snprintf(out, n, "%.2f s", us / 1e6);
  else if (us >= 1e3) snprintf(out, n, "%.2f ms", us / 1e3);
  else snprintf(out, n, "%.2f us", us);
}

static void count_decisions(const VizDecisions *d, int *acc, int *rej) {
  *acc = *rej = 0;
  for (int k = 0; k < d->count; k++) {
    if (d->items[k].accepted) (*acc)++;
    else (*rej)++;
  }
}

static int stage_instrs(const VizStage *s) { return s->module ? ir_module_instr_count(s->module) : 0; }

/* Instructions of the entry computation and of everything fused into it. */
static int drawn_instrs(const IrComputation *c) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i)) continue;
    n++;
    const IrComputation *f = ir_fused_computation(i);
    if (f) n += drawn_instrs(f);
  }
  return n;
}

/* The computations a stage's section draws: the entry, then the bodies of its while loops. */
static int pictured_comps(const IrModule *m, const IrComputation **out, int max) {
  int n = 0;
  if (!m->entry) return 0;
  out[n++] = m->entry;
  for (int k = 0; k < m->entry->ninstrs && n < max; k++) {
    const IrInstr *i = m->entry->instrs[k];
    if (!viz_live(i) || i->op != IR_OP_WHILE) continue;
    const IrComputation *b = ir_attr_comp(i, "body");
    if (b) out[n++] = b;
  }
  return n;
}

/* A stage's picture of one computation, inline SVG put in the page once every picture is laid out.
 * False only when out of memory. */
static bool picture(VizPage *page, const VizStage *st, int stage, const IrComputation *c, const VizDecisions *all,
                    int upto, const VizReportOptions *o, FxError *err) {
  VizBuf *b = &page->text;
  VizOptions vo;
  viz_options_default(&vo);
  vo.computation = c->is_entry ? NULL : c->name;
  int limit = o->collapse_above > 0 ? o->collapse_above : 400;
  int n = drawn_instrs(c);
  vo.collapse = n > limit;
  /* Decisions of this stage and the ones before it. */
  int cnt = 0;
  while (cnt < all->count && all->items[cnt].stage <= upto) cnt++;
  vo.decisions = (VizDecisions){all->items, cnt};
  vbuf_printf(b, "<div class=\"picture-title\">%s <code>", c->is_entry ? "computation" : "loop body");
  vbuf_html(b, c->name);
  vbuf_printf(b, "</code>%s <button class=\"zoom\" type=\"button\">actual size</button></div>\n",
              vo.collapse ? " (each fusion drawn as one node)" : "");
  VizGraph *g = viz_graph_build(st->module, &vo, err);
  if (!g) return false;
  if (viz_graph_stats(g)->nodes > MAX_NODES_DRAWN) {
    vbuf_printf(b,
                "<p class=\"picture too-large\" id=\"pic-%d-%s\">%d nodes: too many for this page (megabytes of "
                "SVG each). In the shell, <code>render</code> draws them all (laid out with sfdp), and "
                "<code>render --focus NAME --depth 2</code> a neighbourhood.</p>\n",
                stage, c->is_entry ? "entry" : "body", viz_graph_stats(g)->nodes);
    viz_graph_free(g);
    return true;
  }
  vbuf_printf(b, "<div class=\"picture fit\" data-stage=\"%d\">\n", stage);
  if (!viz_page_picture(page, g, stage)) return fx_error_set(err, NULL, 0, 0, "out of memory writing the report");
  vbuf_puts(b, "</div>\n");
  return true;
}

/* What changed between two snapshots, by instruction name: added, removed, fused. */
static void diff_text(VizBuf *b, const IrModule *prev, const IrModule *cur) {
  int added = 0, removed = 0, fused = 0, lines = 0;
  VizBuf body = {0};
  for (int c = 0; c < cur->ncomps; c++) {
    const IrComputation *comp = cur->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const IrInstr *i = comp->instrs[k];
      if (!viz_live(i)) continue;
      const IrInstr *old = ir_module_find_instr(prev, i->name);
      if (old && viz_live(old)) {
        bool was_fused = old->parent && old->parent->fusion_instr;
        bool now_fused = comp->fusion_instr != NULL;
        if (now_fused && !was_fused) {
          fused++;
          if (lines++ < 200) vbuf_printf(&body, "fused   %s into %s\n", i->name, comp->fusion_instr->name);
        }
        continue;
      }
      if (i->op == IR_OP_PARAMETER && comp->fusion_instr) continue;
      added++;
      if (lines++ < 200) {
        char shape[64];
        viz_fmt_shape(&i->shape, shape, sizeof shape, 40);
        vbuf_printf(&body, "added   %s = %s %s", i->name, ir_op_name(i->op), shape);
        if (ir_instr_is_fusion(i)) vbuf_printf(&body, " (%s)", ir_fusion_kind(i) ? ir_fusion_kind(i) : "fusion");
        vbuf_puts(&body, "\n");
      }
    }
  }
  for (int c = 0; c < prev->ncomps; c++) {
    const IrComputation *comp = prev->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const IrInstr *i = comp->instrs[k];
      if (!viz_live(i)) continue;
      const IrInstr *now = ir_module_find_instr(cur, i->name);
      if (now && viz_live(now)) continue;
      if (i->op == IR_OP_PARAMETER && comp->fusion_instr) continue;
      removed++;
      if (lines++ < 200) vbuf_printf(&body, "removed %s (%s)\n", i->name, ir_op_name(i->op));
    }
  }
  vbuf_printf(b, "%d added, %d removed, %d fused into a kernel\n", added, removed, fused);
  vbuf_html(b, vbuf_str(&body));
  if (lines > 200) vbuf_printf(b, "... %d more\n", lines - 200);
  vbuf_free(&body);
}

static void decisions_table(VizBuf *b, const VizDecisions *d, int first_number) {
  if (first_number < 1) first_number = 1;
  if (d->count == 0) {
    vbuf_puts(b, "<p>No decisions recorded by this pass.</p>\n");
    return;
  }
  /* Reasons present, for the filter. */
  const char *reasons[64];
  int nreasons = 0;
  for (int k = 0; k < d->count; k++) {
    const char *r = d->items[k].reason;
    if (!r) continue;
    bool seen = false;
    for (int j = 0; j < nreasons; j++)
      if (strcmp(reasons[j], r) == 0) seen = true;
    if (!seen && nreasons < 64) reasons[nreasons++] = r;
  }
  vbuf_puts(b, "<div class=\"filters\">verdict<select class=\"f-verdict\"><option value=\"all\">all</option>"
               "<option value=\"accepted\">accepted</option><option value=\"rejected\">rejected</option></select>"
               "reason<select class=\"f-reason\"><option value=\"all\">all</option>");
  for (int j = 0; j < nreasons; j++) {
    vbuf_html_between(b, "<option value=\"", reasons[j], "\">");
    vbuf_html(b, reasons[j]);
    vbuf_puts(b, "</option>");
  }
  vbuf_puts(b, "</select><span class=\"count\"></span></div>\n");
  vbuf_puts(b, "<table class=\"decisions\"><thead><tr><th>#</th><th>pass</th><th>action</th><th>producer</th>"
               "<th>consumer</th><th>verdict</th><th>reason</th><th>detail</th><th>suggestion</th></tr></thead><tbody>\n");
  for (int k = 0; k < d->count && k < MAX_DECISIONS_LISTED; k++) {
    const PassDecision *x = &d->items[k];
    const char *v = x->accepted ? "accepted" : "rejected";
    vbuf_printf(b, "<tr class=\"d\" data-verdict=\"%s\" data-reason=\"", v);
    vbuf_html(b, x->reason ? x->reason : "");
    vbuf_printf(b, "\"><td class=\"num\">%d</td><td>", first_number + k);
    vbuf_html(b, x->pass);
    vbuf_html_between(b, "</td><td>", x->action, "</td><td><code>");
    vbuf_html(b, x->producer);
    vbuf_puts(b, "</code></td><td><code>");
    vbuf_html(b, x->consumer);
    vbuf_printf(b, "</code></td><td class=\"v-%s\">%s</td><td><code>", v, v);
    vbuf_html(b, x->reason);
    vbuf_puts(b, "</code></td><td>");
    vbuf_html(b, x->detail);
    if (x->nmetrics > 0) {
      vbuf_puts(b, " <span class=\"unchanged\">(");
      for (int m = 0; m < x->nmetrics && m < PASS_MAX_METRICS; m++) {
        vbuf_puts(b, m ? ", " : "");
        vbuf_html(b, x->metrics[m].key);
        vbuf_printf(b, "=%g", x->metrics[m].value);
      }
      vbuf_puts(b, ")</span>");
    }
    vbuf_html_between(b, "</td><td>", x->suggestion, "</td></tr>\n");
  }
  vbuf_puts(b, "</tbody></table>\n");
  if (d->count > MAX_DECISIONS_LISTED)
    vbuf_printf(b, "<p>... and %d more (the shell's <code>decisions</code> command lists them all).</p>\n",
                d->count - MAX_DECISIONS_LISTED);
}

static void numbers_cells(VizBuf *b, const VizStage *s) {
  char bytes[32], us[32];
  if (!s->have_numbers) {
    vbuf_puts(b, "<td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">-</td>");
    return;
  }
  viz_fmt_bytes(s->bytes, bytes, sizeof bytes);
  fmt_us(s->est_us, us, sizeof us);
  vbuf_printf(b, "<td class=\"num\">%lld</td><td class=\"num\">%lld</td><td class=\"num\">%s</td><td class=\"num\">%s</td>",
              (long long)s->nkernels, (long long)s->kernels, bytes, us);
}

bool viz_report_write(FILE *out, VizRenderer *r, const VizStage *stages, int nstages, const VizDecisions *all,
                      const VizReportOptions *o, FxError *err) {
  VizPage page = {0};
  VizBuf *b = &page.text;
  const char *title = o->title ? o->title : "fxplain";
  /* XLA's steps' style and script only on a page that shows them. */
  bool xla = false;
  for (int s = 0; s < nstages; s++) xla = xla || stages[s].nxla_steps > 0;
  vbuf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>fxplain \xc2\xb7 ");
  vbuf_html(b, title);
  vbuf_printf(b, "</title>\n<style>%s%s</style>\n</head>\n<body>\n<header><h1>", css, xla ? viz_report_xla_css : "");
  vbuf_html(b, title);
  vbuf_puts(b, "</h1><p>");
  vbuf_printf(b, "%d stage%s", nstages, nstages == 1 ? "" : "s");
  if (o->pipeline) {
    vbuf_html_between(b, " of the <b>", o->pipeline, "</b> pipeline");
  }
  if (o->device) {
    vbuf_html_between(b, " \xc2\xb7 device profile <b>", o->device, "</b>");
  }
  vbuf_puts(b, " \xc2\xb7 \xe2\x86\x90 \xe2\x86\x92 (or j / k) move between stages</p></header>\n<main>\n");

  /* Summary table. */
  vbuf_puts(b, "<h2>Stages</h2>\n<table id=\"summary\"><thead><tr><th>stage</th><th>pass</th><th>changed</th>"
                "<th>instructions</th><th>kernels</th><th>launches</th><th>bytes</th><th>est. time</th><th>decisions</th></tr></thead><tbody>\n");
  for (int s = 0; s < nstages; s++) {
    const VizStage *st = &stages[s];
    int acc, rej;
    count_decisions(&st->decisions, &acc, &rej);
    vbuf_printf(b, "<tr><td class=\"num\"><a href=\"#stage-%d\">%d</a></td><td><a href=\"#stage-%d\">", s, s, s);
    vbuf_html(b, st->pass ? st->pass : "?");
    vbuf_printf(b, "</a></td><td>%s</td><td class=\"num\">%d</td>", s == 0 ? "" : (st->changed ? "yes" : "no"),
                stage_instrs(st));
    numbers_cells(b, st);
    if (st->nxla_steps > 0) {
      /* XLA's decisions and fxplain's own on the same input, counted apart. */
      int fus = 0, inel = 0, dis = 0;
      for (int k = 0; k < st->nxla_steps; k++) {
        fus += strcmp(st->xla_steps[k].kind, "fusion") == 0;
        inel += strcmp(st->xla_steps[k].kind, "producer_ineligible") == 0;
        dis += st->xla_steps[k].disagree;
      }
      vbuf_printf(b, "<td>XLA: %d fused, %d ineligible; fxplain disagrees on %d</td></tr>\n", fus, inel, dis);
    } else {
      vbuf_printf(b, "<td>%d accepted, %d rejected</td></tr>\n", acc, rej);
    }
  }
  vbuf_puts(b, "</tbody></table>\n");

  /* One section per stage. */
  if (o->progress) o->progress(o->progress_ctx, 0, nstages);
  bool ok = true;
  for (int s = 0; s < nstages && ok; s++) {
    const VizStage *st = &stages[s];
    if (o->interrupted && *o->interrupted) {
      ok = fx_error_set(err, NULL, 0, 0, "interrupted: the report was not written");
      break;
    }
    vbuf_printf(b, "<section class=\"stage\" id=\"stage-%d\" data-title=\"stage %d \xc2\xb7 ", s, s);
    vbuf_html(b, st->pass ? st->pass : "?");
    vbuf_printf(b, "\">\n<h2>Stage %d \xc2\xb7 ", s);
    vbuf_html(b, st->pass ? st->pass : "?");
    if (s > 0 && !st->changed) vbuf_puts(b, " <span class=\"unchanged\">(changed nothing)</span>");
    vbuf_puts(b, "</h2>\n");
    if (st->summary) {
      vbuf_html_between(b, "<p>", st->summary, "</p>\n");
    }
    vbuf_printf(b, "<div class=\"numbers\"><span><b>%d</b> instructions</span>", stage_instrs(st));
    if (st->have_numbers) {
      char bytes[32], us[32];
      viz_fmt_bytes(st->bytes, bytes, sizeof bytes);
      fmt_us(st->est_us, us, sizeof us);
      vbuf_printf(b, "<span><b>%lld</b> kernels</span><span><b>%lld</b> kernel launches</span><span><b>%s</b> moved</span>"
                  "<span><b>%s</b> estimated</span>",
                  (long long)st->nkernels, (long long)st->kernels, bytes, us);
    }
    vbuf_puts(b, "</div>\n");
    if (st->module) {
      const IrComputation *comps[MAX_PICTURES_PER_STAGE];
      int nc = pictured_comps(st->module, comps, MAX_PICTURES_PER_STAGE);
      for (int k = 0; k < nc && ok; k++) ok = picture(&page, st, s, comps[k], all, s, o, err);
    }
    vbuf_puts(b, "<h3>What the pass changed</h3>\n<pre class=\"changes\">");
    if (s == 0) {
      vbuf_puts(b, "the module as loaded");
    } else if (st->changes) {
      vbuf_html(b, st->changes);
    } else if (!st->changed) {
      vbuf_puts(b, "nothing");
    } else if (stages[s - 1].module && st->module) {
      diff_text(b, stages[s - 1].module, st->module);
    }
    vbuf_puts(b, "</pre>\n");
    if (ok && st->nxla_steps > 0) ok = viz_report_xla_steps(&page, st, s > 0 ? stages[s - 1].module : NULL, s, o, err);
    if (!ok) break;
    vbuf_puts(b, "<h3>Decisions</h3>\n");
    decisions_table(b, &st->decisions, st->first_number);
    vbuf_puts(b, "<div class=\"nav\">");
    if (s > 0) vbuf_printf(b, "<a href=\"#stage-%d\">\xe2\x86\x90 stage %d</a>", s - 1, s - 1);
    vbuf_puts(b, "<a href=\"#summary\">all stages</a>");
    if (s + 1 < nstages) vbuf_printf(b, "<a href=\"#stage-%d\">stage %d \xe2\x86\x92</a>", s + 1, s + 1);
    vbuf_puts(b, "</div>\n</section>\n");
  }
  vbuf_printf(b, "</main>\n<div id=\"keys\">\xe2\x86\x90 \xe2\x86\x92 <span id=\"keys-stage\"></span></div>\n<script>%s%s</script>\n</body></html>\n", js, xla ? viz_report_xla_js : "");
  /* Every picture laid out at once, then the page written. */
  if (ok) ok = page_write(&page, out, r, nstages, o, err);
  viz_page_free(&page);
  return ok;
}

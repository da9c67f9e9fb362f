/* report_xla.c — the report's view of XLA's own priority-fusion decision log (its
 * FusionProcessDump), for a stage of the `xla` pipeline: every step in XLA's order (each fusion,
 * each producer it found ineligible with XLA's reason, each priority update with its cost model's
 * times), fxplain's verdict on the same pair beside it, and a DISAGREE mark where the two part.
 * What XLA's own fusion explorer shows, with every decision and its numbers, and offline: the
 * page steps through the table (buttons, [ and ], a slider), shows the current step in full,
 * and filters by kind or to the disagreements. Each step has its picture: the producer and the
 * consumer highlighted in their neighbourhood of the module priority-fusion received (a fusion XLA
 * made earlier in the pass drawn as the instruction at its root), and the steps are in the page as
 * JSON too (a <script type="application/json" class="xla-steps-data"> block: every field the table
 * shows, for a notebook or a script). Nothing is fetched. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../explain/json.h"
#include "viz_internal.h"

/* Steps drawn: past this many a page of thousands of steps would hold megabytes of pictures (and
 * take minutes to lay out), so a long log draws its first fusions and refusals only. */
#define MAX_STEP_PICTURES 100
#define STR_(x) #x
#define STR(x) STR_(x)

const char *const viz_report_xla_css =
    ".xla-steps{margin:10px 0}.xla-controls{font-size:13px;margin:6px 0}"
    ".xla-controls button{margin-right:6px}.xla-controls input[type=range]{width:260px;vertical-align:middle}"
    ".xla-current{background:#f4f7fc;border:1px solid #c9d6ea;border-radius:4px;padding:8px 12px;font-size:13px;"
    "min-height:3em}.xla-current b{font-size:14px}"
    ".xla-picture{overflow:auto;max-height:60vh;border:1px solid #e3e3e3;margin-top:6px;background:#fff}"
    ".xla-picture svg{max-width:100%;height:auto}.xla-picture p{margin:6px 10px;font-size:13px;color:#777}"
    ".xla-table-wrap{max-height:420px;overflow:auto;border:1px solid #e3e3e3;margin-top:6px}"
    "tr.xs.on td{background:#fff1b8}tr.xs{cursor:pointer}"
    ".disagree{color:#fff;background:#d62728;border-radius:3px;padding:0 4px;font-weight:bold;font-size:11px}"
    ".agree{color:#2a7a2a;font-size:11px}";

/* Per section: the rows (shown by the filters), the current one, its copy in the card above. */
const char *const viz_report_xla_js =
    "(function(){document.querySelectorAll('.xla-steps').forEach(function(box){"
    "var rows=Array.prototype.slice.call(box.querySelectorAll('tr.xs'));var card=box.querySelector('.xla-current');"
    "var kind=box.querySelector('.xs-kind'),dis=box.querySelector('.xs-dis'),slider=box.querySelector('.xs-slider');"
    "var pos=box.querySelector('.xs-pos');var vis=rows,cur=0;"
    "function show(i){if(!vis.length){card.textContent='no step matches the filter';pos.textContent='0 / 0';return;}"
    "if(i<0)i=0;if(i>=vis.length)i=vis.length-1;cur=i;rows.forEach(function(r){r.classList.remove('on');});"
    "var r=vis[i];r.classList.add('on');card.innerHTML=r.dataset.card;pos.textContent=(i+1)+' / '+vis.length;"
    "var pic=box.querySelector('.xla-picture'),t=r.dataset.pic&&document.getElementById(box.id+'-pic-'+r.dataset.pic);"
    "pic.innerHTML='';if(t)pic.appendChild(t.content.cloneNode(true));else{var p=document.createElement('p');"
    "p.textContent=pic.dataset.none;pic.appendChild(p);}"
    "slider.max=vis.length-1;slider.value=i;var w=box.querySelector('.xla-table-wrap');"
    "if(w)w.scrollTop=r.offsetTop-w.clientHeight/2;}"
    "function filter(){vis=rows.filter(function(r){var ok=(kind.value==='all'||r.dataset.kind===kind.value)&&"
    "(!dis.checked||r.dataset.dis==='1');r.hidden=!ok;return ok;});show(0);}"
    "box.querySelector('.xs-prev').addEventListener('click',function(){show(cur-1);});"
    "box.querySelector('.xs-next').addEventListener('click',function(){show(cur+1);});"
    "slider.addEventListener('input',function(){show(+slider.value);});"
    "kind.addEventListener('change',filter);dis.addEventListener('change',filter);"
    "rows.forEach(function(r){r.addEventListener('click',function(){var i=vis.indexOf(r);if(i>=0)show(i);});});"
    "box.addEventListener('keydown',function(e){if(e.key===']'){show(cur+1);e.preventDefault();e.stopPropagation();}"
    "else if(e.key==='['){show(cur-1);e.preventDefault();e.stopPropagation();}});"
    "document.addEventListener('keydown',function(e){var t=e.target.tagName;if(t==='SELECT'||t==='INPUT')return;"
    "var sec=box.closest('section');if(!sec||!sec.classList.contains('current'))return;"
    "if(e.key===']')show(cur+1);else if(e.key==='[')show(cur-1);});"
    "filter();});})();";

/* The card shown for the current step: the whole decision in sentences (HTML, escaped by the
 * caller into an attribute). */
static void card(VizBuf *c, const VizXlaStep *x) {
  if (x->step) vbuf_printf(c, "<b>XLA step %d</b> ", x->step);
  else vbuf_puts(c, "<b>after the last step</b> ");
  if (x->number) vbuf_printf(c, "(decision #%d) ", x->number);
  vbuf_html_between(c, "&middot; ", x->kind, "<br>XLA: ");
  if (strcmp(x->kind, "fusion") == 0) {
    vbuf_html_between(c, "fused <code>", x->producer, "</code> into <code>");
    vbuf_html(c, x->consumer);
    vbuf_html_between(c, "</code>, making <code>", x->fusion, "</code>");
  } else if (strcmp(x->kind, "producer_ineligible") == 0) {
    vbuf_html_between(c, "<code>", x->producer, "</code> is not fused: &ldquo;");
    vbuf_html(c, x->xla_reason ? x->xla_reason : "?");
    vbuf_puts(c, "&rdquo;");
  } else if (strcmp(x->kind, "update_priority") == 0) {
    vbuf_html_between(c, "its cost model for <code>", x->producer, "</code> into <code>");
    vbuf_html(c, x->consumer);
    vbuf_printf(c, "</code>: %s", x->us_fused < x->us_unfused ? "worth fusing" : "fusing is slower");
  } else {
    vbuf_html_between(c, "left <code>", x->producer, "</code> unfused: its cost model's last word said fusing is slower");
  }
  if (x->has_times) vbuf_printf(c, " (%.4g us fused vs %.4g us unfused)", x->us_fused, x->us_unfused);
  if (x->producer_jax[0] || x->consumer_jax[0]) {
    /* In the words of the user's program. */
    vbuf_puts(c, "<br>JAX: ");
    vbuf_html(c, x->producer_jax[0] ? x->producer_jax : "?");
    if (x->consumer && x->consumer[0]) {
      vbuf_puts(c, " &rarr; ");
      vbuf_html(c, x->consumer_jax[0] ? x->consumer_jax : "?");
    }
  }
  if (!x->compared || strcmp(x->kind, "update_priority") == 0) return;
  vbuf_puts(c, "<br>fxplain: ");
  if (!x->own_verdict) {
    vbuf_puts(c, "makes no decision on this pair");
  } else {
    vbuf_html(c, x->own_verdict);
    vbuf_puts(c, " it");
    if (x->own_reason) {
      vbuf_html_between(c, " [", x->own_reason, "]");
    }
    if (x->own_detail) {
      vbuf_puts(c, ": ");
      vbuf_html(c, x->own_detail);
    }
  }
  vbuf_puts(c, x->disagree ? "<br><span class=\"disagree\">DISAGREE</span>" : "<br><span class=\"agree\">agrees</span>");
}

/* Step x drawn on `before` as one decision: producer and consumer (their roots) highlighted, with
 * their neighbours, XLA's verdict and words in the title. NULL when the step's instructions are
 * not in `before` (the step has no picture). */
static VizGraph *step_picture(const IrModule *before, int stage, const VizXlaStep *x) {
  char detail[700];
  const char *prod = x->producer_root, *cons = x->consumer_root;
  size_t clen = x->consumer ? strcspn(x->consumer, ",") : 0; /* the first of a list of users */
  const IrInstr *pi = prod ? ir_module_find_instr(before, prod) : NULL;
  if (!pi || !pi->parent || (clen && !cons)) return NULL;
  bool fused = strcmp(x->kind, "fusion") == 0 || (strcmp(x->kind, "update_priority") == 0 && x->us_fused < x->us_unfused);
  int dl = snprintf(detail, sizeof detail, "XLA step %d: %s", x->step, x->kind);
  if (x->fusion) dl += snprintf(detail + dl, sizeof detail - (size_t)dl, ", making %s", x->fusion);
  if (x->xla_reason) dl += snprintf(detail + dl, sizeof detail - (size_t)dl, ": %s", x->xla_reason);
  if (strcmp(prod, x->producer) != 0) dl += snprintf(detail + dl, sizeof detail - (size_t)dl, "; %s drawn as %s, its root", x->producer, prod);
  if (cons && (strlen(cons) != clen || strncmp(cons, x->consumer, clen) != 0))
    snprintf(detail + dl, sizeof detail - (size_t)dl, "; %.*s drawn as %s, its root", (int)clen, x->consumer, cons);
  PassDecision d = {.stage = stage, .pass = "priority-fusion (XLA)", .action = x->kind, .producer = prod, .consumer = cons,
                    .accepted = fused, .reason = NULL, .detail = detail};
  VizOptions vo;
  viz_options_default(&vo);
  vo.computation = pi->parent->is_entry ? NULL : pi->parent->name;
  vo.decision = &d;
  vo.decision_number = x->number;
  vo.depth = 1;
  vo.legend = false;
  FxError e;
  fx_error_clear(&e);
  return viz_graph_build(before, &vo, &e); /* NULL: not drawable here (another computation) */
}

/* Every step as JSON in the page, escaped for a <script> element ("</" written "<\/"). */
static void steps_json(VizBuf *b, const VizStage *st, const int *pic) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    b->failed = true;
    return;
  }
  JsonWriter w;
  json_init(&w, f);
  json_array_begin(&w);
  for (int k = 0; k < st->nxla_steps; k++) {
    const VizXlaStep *x = &st->xla_steps[k];
    json_object_begin(&w);
    json_kv_int(&w, "step", x->step);
    if (x->number) json_kv_int(&w, "decision", x->number);
    else json_kv_null(&w, "decision");
    json_kv_str(&w, "kind", x->kind);
    json_kv_str(&w, "producer", x->producer);
    json_kv_str(&w, "consumer", x->consumer);
    json_kv_str(&w, "fusion", x->fusion);
    json_kv_str(&w, "xla_reason", x->xla_reason);
    json_key(&w, "xla_us");
    if (x->has_times) {
      json_object_begin(&w);
      json_kv_double(&w, "fused", x->us_fused);
      json_kv_double(&w, "unfused", x->us_unfused);
      json_object_end(&w);
    } else {
      json_null(&w);
    }
    json_key(&w, "fxplain");
    if (x->compared && strcmp(x->kind, "update_priority") != 0) {
      json_object_begin(&w);
      json_kv_str(&w, "verdict", x->own_verdict);
      json_kv_str(&w, "reason", x->own_reason);
      json_kv_str(&w, "detail", x->own_detail);
      if (x->own_has_times) {
        json_kv_double(&w, "us_fused", x->own_us_fused);
        json_kv_double(&w, "us_unfused", x->own_us_unfused);
      }
      json_object_end(&w);
    } else {
      json_null(&w);
    }
    json_kv_bool(&w, "disagree", x->disagree);
    json_kv_str(&w, "producer_jax", x->producer_jax[0] ? x->producer_jax : NULL);
    json_kv_str(&w, "consumer_jax", x->consumer_jax[0] ? x->consumer_jax : NULL);
    json_kv_bool(&w, "picture", pic[k] >= 0);
    json_object_end(&w);
  }
  json_array_end(&w);
  fclose(f);
  vbuf_puts(b, "<script type=\"application/json\" class=\"xla-steps-data\">");
  for (size_t k = 0; text && k < len; k++) {
    if (text[k] == '<' && k + 1 < len && text[k + 1] == '/') vbuf_puts(b, "<\\");
    else vbuf_putn(b, text + k, 1);
  }
  vbuf_puts(b, "</script>\n");
  free(text);
}

bool viz_report_xla_steps(VizPage *page, const VizStage *st, const IrModule *before, int stage,
                          const VizReportOptions *o, FxError *err) {
  VizBuf *b = &page->text;
  int nd = 0, nfus = 0, nin = 0, npri = 0, nleft = 0;
  for (int k = 0; k < st->nxla_steps; k++) {
    const VizXlaStep *x = &st->xla_steps[k];
    nd += x->disagree;
    nfus += strcmp(x->kind, "fusion") == 0;
    nin += strcmp(x->kind, "producer_ineligible") == 0;
    npri += strcmp(x->kind, "update_priority") == 0;
    nleft += strcmp(x->kind, "left_unfused") == 0;
  }
  /* The pictures: the steps in XLA's order (with a long log, only its fusions and refusals),
   * laid out with the page's other pictures. */
  int *pic = fx_malloc(sizeof *pic * (size_t)(st->nxla_steps + 1));
  VizGraph **graphs = fx_calloc((size_t)st->nxla_steps + 1, sizeof *graphs);
  if (!pic || !graphs) {
    fx_free(pic);
    fx_free(graphs);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  char box_id[32];
  snprintf(box_id, sizeof box_id, "xla-steps-%d", stage);
  int drawn = 0;
  bool ok = true;
  for (int k = 0; k < st->nxla_steps && ok; k++) {
    const VizXlaStep *x = &st->xla_steps[k];
    pic[k] = -1;
    bool wanted = drawn < MAX_STEP_PICTURES && before &&
                  (st->nxla_steps <= MAX_STEP_PICTURES || strcmp(x->kind, "update_priority") != 0);
    if (wanted && o->interrupted && *o->interrupted) ok = fx_error_set(err, NULL, 0, 0, "interrupted: the report was not written");
    if (ok && wanted) graphs[k] = step_picture(before, stage, x);
    if (graphs[k]) pic[k] = k, drawn++;
  }
  if (!ok) {
    for (int k = 0; k < st->nxla_steps; k++) viz_graph_free(graphs[k]);
    fx_free(graphs);
    fx_free(pic);
    return false;
  }
  vbuf_printf(b, "<h3>XLA's decisions, step by step</h3>\n<div class=\"xla-steps\" id=\"%s\">\n", box_id);
  vbuf_printf(b, "<p>XLA's own priority-fusion log: %d fusions, %d ineligible producers, %d priority updates", nfus,
              nin, npri);
  if (nleft) vbuf_printf(b, ", %d producers left unfused", nleft);
  if (st->nxla_steps && st->xla_steps[0].compared)
    vbuf_printf(b, ". Beside each, fxplain's verdict on the same pair: %d disagreement%s.</p>\n", nd, nd == 1 ? "" : "s");
  else vbuf_puts(b, ".</p>\n");
  vbuf_puts(b, "<div class=\"xla-controls\"><button class=\"xs-prev\" type=\"button\">&larr; step</button>"
               "<button class=\"xs-next\" type=\"button\">step &rarr;</button>"
               "<input class=\"xs-slider\" type=\"range\" min=\"0\" max=\"0\" value=\"0\"> <span class=\"xs-pos\"></span>"
               " &nbsp; kind<select class=\"xs-kind\"><option value=\"all\">all</option>"
               "<option value=\"fusion\">fusion</option><option value=\"producer_ineligible\">producer_ineligible</option>"
               "<option value=\"update_priority\">update_priority</option><option value=\"left_unfused\">left_unfused</option>"
               "</select> <label><input class=\"xs-dis\" type=\"checkbox\"> only where fxplain disagrees</label>"
               " &nbsp; <span class=\"unchanged\">[ and ] step</span></div>\n");
  vbuf_printf(b, "<div class=\"xla-current\"></div>\n<div class=\"xla-picture\" data-none=\"no picture for this step: %s\"></div>\n",
              drawn == MAX_STEP_PICTURES ? "the page draws the first " STR(MAX_STEP_PICTURES) " (in the shell, render --decision N "
                                           "draws any decision)"
                                         : "its producer is not an instruction of the module priority-fusion received");
  vbuf_puts(b, "<div class=\"xla-table-wrap\"><table class=\"xla-table\"><thead><tr>"
               "<th>step</th><th>#</th><th>kind</th><th>producer</th><th>consumer</th><th>XLA</th>"
               "<th>XLA us fused / unfused</th><th>fxplain</th><th>fxplain us fused / unfused</th><th></th></tr></thead><tbody>\n");
  VizBuf c = {0};
  for (int k = 0; k < st->nxla_steps; k++) {
    const VizXlaStep *x = &st->xla_steps[k];
    vbuf_reset(&c);
    card(&c, x);
    vbuf_puts(b, "<tr class=\"xs\" data-kind=\"");
    vbuf_html(b, x->kind);
    if (pic[k] >= 0) vbuf_printf(b, "\" data-pic=\"%d", pic[k]);
    vbuf_printf(b, "\" data-dis=\"%d\" data-card=\"", x->disagree ? 1 : 0);
    vbuf_html(b, vbuf_str(&c));
    if (x->step) vbuf_printf(b, "\"><td class=\"num\">%d</td>", x->step);
    else vbuf_puts(b, "\"><td class=\"num\">end</td>");
    if (x->number) vbuf_printf(b, "<td class=\"num\">%d</td><td>", x->number);
    else vbuf_puts(b, "<td></td><td>");
    vbuf_html(b, x->kind);
    vbuf_html_between(b, "</td><td><code>", x->producer, "</code></td><td><code>");
    vbuf_html(b, x->consumer);
    vbuf_puts(b, "</code></td><td>");
    if (strcmp(x->kind, "fusion") == 0) {
      vbuf_html_between(b, "fused &rArr; <code>", x->fusion, "</code>");
    } else if (x->xla_reason) {
      vbuf_html(b, x->xla_reason);
    } else if (strcmp(x->kind, "update_priority") == 0) {
      vbuf_puts(b, x->us_fused < x->us_unfused ? "worth fusing" : "fusing is slower");
    } else {
      vbuf_puts(b, "left unfused");
    }
    vbuf_puts(b, "</td><td class=\"num\">");
    if (x->has_times) vbuf_printf(b, "%.4g / %.4g", x->us_fused, x->us_unfused);
    vbuf_puts(b, "</td><td>");
    if (x->compared && strcmp(x->kind, "update_priority") != 0) {
      vbuf_html(b, x->own_verdict ? x->own_verdict : "no decision");
      if (x->own_reason) {
        vbuf_html_between(b, " <code>", x->own_reason, "</code>");
      }
    }
    vbuf_puts(b, "</td><td class=\"num\">");
    if (x->own_has_times) vbuf_printf(b, "%.4g / %.4g", x->own_us_fused, x->own_us_unfused);
    vbuf_puts(b, "</td><td>");
    if (x->disagree) vbuf_puts(b, "<span class=\"disagree\">DISAGREE</span>");
    vbuf_puts(b, "</td></tr>\n");
  }
  vbuf_free(&c);
  vbuf_puts(b, "</tbody></table></div>\n");
  for (int k = 0; k < st->nxla_steps; k++) {
    if (!graphs[k]) continue;
    vbuf_printf(b, "<template id=\"%s-pic-%d\">", box_id, k);
    if (ok) ok = viz_page_picture(page, graphs[k], stage); /* it frees the graph when it fails */
    else viz_graph_free(graphs[k]);
    vbuf_puts(b, "</template>\n");
  }
  steps_json(b, st, pic);
  vbuf_puts(b, "</div>\n");
  fx_free(graphs);
  fx_free(pic);
  if (!ok) return fx_error_set(err, NULL, 0, 0, "out of memory");
  return true;
}

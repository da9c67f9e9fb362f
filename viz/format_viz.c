/* format_viz.c — what the picture commands did, printed as text or JSON (see viz.h): the file
 * `render` wrote and what the picture holds (or the picture itself, for `render -`), the scope
 * picture's levels and file, and the report's file. The JSON goes through the one writer. */
#include <string.h>

#include "../explain/format.h"
#include "viz.h"

void viz_show_rendered(const ExplainOut *o, ExplainEngine *e, const VizRenderRequest *rq, const VizRendered *r) {
  if (r->to_stdout) {
    fwrite(r->data, 1, r->len, o->out);
    return;
  }
  const VizGraphStats *st = &r->stats;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "file", r->shown);
    json_kv_str(&w, "format", viz_format_name(rq->format));
    json_kv_int(&w, "stage", r->stage);
    json_kv_str(&w, "computation", r->computation ? r->computation : r->entry);
    json_kv_int(&w, "nodes", st->nodes);
    json_kv_int(&w, "clusters", st->clusters);
    json_kv_int(&w, "memory_edges", st->memory_edges);
    json_kv_int(&w, "register_edges", st->register_edges);
    json_kv_int(&w, "refused_edges", st->refused_edges);
    json_kv_int(&w, "refused_hidden", st->refused_hidden);
    json_kv_int(&w, "hidden", st->hidden);
    json_kv_bool(&w, "plain", st->plain);
    json_kv_str(&w, "layout", viz_layout_name(st->layout));
    json_kv_str(&w, "layout_reason", st->layout_reason[0] ? st->layout_reason : NULL);
    json_kv_int(&w, "unconnected", st->unconnected);
    json_object_end(&w);
    fputc('\n', o->out);
    return;
  }
  FILE *out = o->out;
  fprintf(out, "wrote %s: ", r->shown);
  if (rq->decision)
    fprintf(out, "decision #%d (stage %d, %s %s)", rq->decision, r->decision_stage, r->decision_pass,
            r->decision_accepted ? "accepted" : "rejected");
  else
    fprintf(out, "stage %d (%s), %s%s", r->stage, explain_engine_stage_pass(e, r->stage),
            r->computation ? "computation " : "entry ", r->computation ? r->computation : (r->entry ? r->entry : "?"));
  fprintf(out, ": %d node%s", st->nodes, st->nodes == 1 ? "" : "s");
  if (st->clusters) fprintf(out, " in %d fusion%s", st->clusters, st->clusters == 1 ? "" : "s");
  fprintf(out, "; %d value%s in memory, %d in registers", st->memory_edges, st->memory_edges == 1 ? "" : "s",
          st->register_edges);
  if (st->refused_edges && st->refused_hidden)
    fprintf(out, "; %d refused candidates (%d drawn)", st->refused_edges + st->refused_hidden, st->refused_edges);
  else if (st->refused_edges)
    fprintf(out, "; %d refused candidate%s", st->refused_edges, st->refused_edges == 1 ? "" : "s");
  if (st->hidden) fprintf(out, "; %d of %d not drawn", st->hidden, st->total);
  if (st->plain) fprintf(out, " (large: drawn without edge labels)");
  fputc('\n', out);
  if (st->layout_chosen && rq->format != VIZ_DOT) {
    fprintf(out, "  laid out with sfdp, Graphviz's large-graph layout: %s", st->layout_reason);
    if (st->unconnected) fprintf(out, "; %d nodes without edges left out", st->unconnected);
    fputc('\n', out);
  }
}

void viz_show_scope_levels(const ExplainOut *o, const VizScopePicture *sp) {
  if (sp->used == sp->depth || o->json) return;
  fprintf(o->out, "(%d scopes at %s: drawn at --depth %d, %d scopes; --format dot writes them all)\n", sp->full,
          sp->depth ? "that depth" : "full depth", sp->used, sp->nodes);
}

void viz_show_scope_written(const ExplainOut *o, ExplainEngine *e, const VizScopePicture *sp) {
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "wrote", sp->path);
    json_kv_int(&w, "scopes", sp->nodes);
    json_kv_int(&w, "edges", sp->edges);
    json_object_end(&w);
    fputc('\n', o->out);
  } else {
    fprintf(o->out, "wrote %s: stage %d by JAX name scope, %d scopes, %d flows between them\n", sp->path, e->cur,
            sp->nodes, sp->edges);
  }
}

void viz_show_report_written(const ExplainOut *o, ExplainEngine *e, const char *path, const VizReportWritten *rw) {
  const Pipeline *pl = e->pipeline;
  int n = rw->stages, nds = rw->decisions;
  if (o->json) {
    JsonWriter w;
    json_init(&w, o->out);
    json_object_begin(&w);
    json_kv_str(&w, "file", path);
    json_kv_int(&w, "stages", n);
    json_kv_int(&w, "decisions", nds);
    json_kv_int(&w, "bytes", (long long)rw->bytes);
    json_kv_str(&w, "pipeline", pl ? pl->name : NULL);
    json_kv_int(&w, "pipeline_stages", pl ? pl->npasses + 1 : n);
    json_object_end(&w);
    return;
  }
  fprintf(o->out, "wrote %s: %d stage%s, %d decision%s, %zu bytes", path, n, n == 1 ? "" : "s", nds,
          nds == 1 ? "" : "s", rw->bytes);
  if (pl && n - 1 < pl->npasses)
    fprintf(o->out, " (the %s pipeline has %d passes: `step all` first to include them all)", pl->name, pl->npasses);
  fputc('\n', o->out);
}

/* viz_render.c — how fast a stage of a large module is drawn: building the picture (libcgraph)
 * and laying it out and rendering it to SVG (libgvc with dot), for a focused neighbourhood, a
 * collapsed stage, and the whole of each big computation in the plain style.
 *
 *   build/bench/bench_viz_render [FILE.hlo]     (default: the largest corpus module)
 *
 * It draws stage 0 (as loaded) and the last stage of the classic pipeline (fused): focused
 * neighbourhoods of growing depth, and the collapsed picture (one node per kernel) of the entry
 * and of the largest computation. Prints one line per case: nodes drawn, build time, layout +
 * render time, SVG size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "explain.h"
#include "hlo.h"
#include "pass.h"
#include "viz.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run_case(VizRenderer *r, const IrModule *m, const char *what, const VizOptions *o) {
  FxError err = {0};
  double t0 = now();
  VizGraph *g = viz_graph_build(m, o, &err);
  double t1 = now();
  if (!g) {
    printf("%-60s error: %s\n", what, err.msg);
    return;
  }
  char *svg = NULL;
  size_t len = 0;
  bool ok = viz_render(r, g, VIZ_SVG, &svg, &len, &err);
  double t2 = now();
  const VizGraphStats *st = viz_graph_stats(g);
  if (ok)
    printf("%-60s %6d nodes %5d clusters %s  build %7.3f s  layout+svg %7.3f s  %8zu bytes\n", what, st->nodes,
           st->clusters, st->plain ? "plain" : "full ", t1 - t0, t2 - t1, len);
  else
    printf("%-60s render error: %s\n", what, err.msg);
  fx_free(svg);
  viz_graph_free(g);
}

/* Focused views of growing depth around an instruction in the middle of the largest
 * computation, then the collapsed entry and largest computation. */
static void run_views(VizRenderer *r, const IrModule *m, const char *label) {
  const IrComputation *big = m->entry;
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k]->ninstrs > big->ninstrs && !m->comps[k]->fusion_instr) big = m->comps[k];
  /* The kernel nearest the middle of the computation. */
  const IrInstr *mid = big->instrs[big->ninstrs / 2];
  for (int k = big->ninstrs / 2; k < big->ninstrs; k++)
    if (viz_kernel_kind(big->instrs[k]) != VIZ_K_NONE) {
      mid = big->instrs[k];
      break;
    }
  int kernels = 0;
  for (int k = 0; k < big->ninstrs; k++)
    if (viz_kernel_kind(big->instrs[k]) != VIZ_K_NONE) kernels++;
  printf("%s: largest computation %s: %d instructions, %d kernels; focus on %s\n", label, big->name, big->ninstrs,
         kernels, mid->name);
  char what[160];
  for (int depth = 2; depth <= 8; depth *= 2) {
    VizOptions o;
    viz_options_default(&o);
    o.computation = big->is_entry ? NULL : big->name;
    o.focus = mid->name;
    o.depth = depth;
    snprintf(what, sizeof what, "%s --focus %s --depth %d", label, mid->name, depth);
    run_case(r, m, what, &o);
  }
  VizOptions o;
  viz_options_default(&o);
  o.collapse = true;
  snprintf(what, sizeof what, "%s entry --collapse", label);
  run_case(r, m, what, &o);
  o.computation = big->name;
  snprintf(what, sizeof what, "%s --computation %s --collapse", label, big->name);
  run_case(r, m, what, &o);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "tests/data/hlo-corpus/hlo_gemma4_2b_bf16.hlo";
  FxError err = {0};
  double t0 = now();
  IrModule *m = hlo_load_file(path, &err);
  if (!m) {
    fx_error_print(stderr, &err);
    return 1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("%s: %d instructions, %d computations, loaded in %.2f s\n", path, ir_module_instr_count(m), m->ncomps,
         now() - t0);
  VizRenderer *r = viz_renderer_new(&err);
  if (!r) {
    fx_error_print(stderr, &err);
    return 1;
  }
  run_views(r, m, "stage 0");
  /* The classic pipeline, pass after pass, to its last (fused) stage. */
  const Pipeline *pl = pipeline_lookup("classic");
  ExplainLog *log = explain_log_new();
  PassSettings st;
  pass_settings_default(&st);
  IrModule *cur = m, *owned = NULL;
  t0 = now();
  for (int k = 0; k < pl->npasses; k++) {
    const Pass *p = pl->passes[k];
    explain_log_begin_stage(log, k + 1, p->name);
    DecisionSink sink = explain_log_sink(log);
    FxError perr = {0};
    PassContext cx = {&sink, device_default(), &st, k + 1, p->name, &perr};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(p, cur, &cx, &out, &changed)) {
      fx_error_print(stderr, &perr);
      return 1;
    }
    if (out) {
      if (owned) ir_module_free(owned);
      owned = cur = out;
    }
  }
  printf("classic pipeline: %d passes in %.2f s -> %d instructions\n", pl->npasses, now() - t0,
         ir_module_instr_count(cur));
  run_views(r, cur, "fused");
  if (owned) ir_module_free(owned);
  explain_log_free(log);
  viz_renderer_free(r);
  ir_module_free(m);
  return 0;
}

/* viz_render.c — how fast every stage of a large module is drawn: building the picture (libcgraph)
 * and laying it out and rendering it to SVG (libgvc), with the layout engine chosen automatically
 * (dot, or sfdp for large pictures) and, side by side in the same run, with dot alone as fxplain
 * drew before the automatic choice (which refused pictures over 4,000 nodes).
 *
 *   build/bench/bench_viz_render [FILE.hlo] [--pipelines classic,priority] [--dot-cap S]
 *
 * Default FILE: the largest corpus module, hlo_gemma4_2b_bf16.hlo (19,205 instructions). For each
 * pipeline it runs every pass as `step all` does and draws every distinct stage (a pass that
 * changed nothing shares its snapshot) the way `render` does with no options: the entry; then the
 * entry `--collapse` (one node per kernel) and the module's largest other computation. Then the
 * focused neighbourhoods of growing depth, at stage 0 and at the last stage of the first pipeline.
 * One line per picture: nodes drawn, the engine AUTO chose and why, build time, layout + SVG time,
 * SVG size, and dot's time on the same picture (stopped after --dot-cap seconds, default 30;
 * refused over 4,000 nodes, as before). The machine's load is printed first and last: the times
 * are wall-clock seconds and move with it. */
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../explain/explain.h"
#include "../compiler/hlo/hlo.h"
#include "../compiler/passes/passes.h"
#include "../viz/viz.h"
#include "load_line.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static volatile int stop_layout;
static void on_alarm(int sig) {
  (void)sig;
  stop_layout = 1;
}

/* CPU seconds of the children waited for so far (the layout runs in one, as in the shell). */
static double children_cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec + 1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static double last_cpu; /* CPU seconds of the last timed_render's layout */

/* Lays out and renders g, stopped after cap seconds; the wall time, or -1 when stopped, -2 on
 * error. last_cpu gets the layout's CPU time. */
static double timed_render(VizRenderer *r, VizGraph *g, int cap, size_t *len, char *why, size_t n) {
  char *svg = NULL;
  FxError err;
  fx_error_clear(&err);
  stop_layout = 0;
  alarm((unsigned)cap);
  double c0 = children_cpu();
  double t0 = now();
  bool ok = viz_render_interruptible(r, g, VIZ_SVG, &svg, len, &stop_layout, &err);
  double t = now() - t0;
  last_cpu = children_cpu() - c0;
  alarm(0);
  fx_free(svg);
  if (ok) return t;
  snprintf(why, n, "%s", err.msg);
  return stop_layout ? -1 : -2;
}

typedef struct {
  int cases, over5, sfdp, dot_refused, dot_stopped;
  double worst, worst_cpu;
  char worst_what[200];
} Summary;

static Summary summary;

static void run_case(VizRenderer *r, const IrModule *m, const char *what, const VizOptions *o0, int dot_cap) {
  FxError err;
  fx_error_clear(&err);
  VizOptions o = *o0;
  o.layout = VIZ_LAYOUT_AUTO;
  double t0 = now();
  VizGraph *g = viz_graph_build(m, &o, &err);
  double build = now() - t0;
  if (!g) {
    printf("%-58s error: %s\n", what, err.msg);
    return;
  }
  const VizGraphStats *st = viz_graph_stats(g);
  char why[512] = "";
  size_t len = 0;
  double lay = timed_render(r, g, 300, &len, why, sizeof why);
  printf("%-58s %6d nodes %-5s build %6.3f s  layout+svg ", what, st->nodes, viz_layout_name(st->layout), build);
  if (lay >= 0) printf("%7.3f s (cpu %6.3f) %6.1f MiB", lay, last_cpu, (double)len / (1024.0 * 1024.0));
  else printf("%s", lay == -1 ? "stopped after 300 s" : why);
  summary.cases++;
  double total = build + (lay >= 0 ? lay : 300);
  if (total > 5) summary.over5++;
  summary.sfdp += st->layout == VIZ_LAYOUT_SFDP;
  if (total > summary.worst) {
    summary.worst = total;
    summary.worst_cpu = build + last_cpu;
    snprintf(summary.worst_what, sizeof summary.worst_what, "%s (%d nodes, %s)", what, st->nodes,
             viz_layout_name(st->layout));
  }
  int nodes = st->nodes;
  viz_graph_free(g);
  /* The same picture with dot, as before the automatic choice. */
  o.layout = VIZ_LAYOUT_DOT;
  g = viz_graph_build(m, &o, &err);
  if (!g) {
    printf("\n");
    return;
  }
  printf("  | dot: ");
  if (viz_graph_stats(g)->nodes > VIZ_MAX_LAYOUT_NODES) {
    printf("refused (%d nodes)", viz_graph_stats(g)->nodes);
    summary.dot_refused++;
  } else {
    double d = timed_render(r, g, dot_cap, &len, why, sizeof why);
    if (d >= 0) printf("%7.3f s (cpu %6.3f)", d, last_cpu);
    else if (d == -1) printf("stopped after %d s", dot_cap), summary.dot_stopped++;
    else printf("error: %.80s", why);
    if (d > 0 && lay > 0) printf("  (%.1fx)", d / lay);
  }
  (void)nodes;
  printf("\n");
  viz_graph_free(g);
}

/* Every decision recorded up to stage `upto`, as `render` hands them to the picture (refused
 * candidates become dashed red edges). The caller fx_frees the array. */
static VizDecisions decisions_upto(const ExplainLog *log, int upto) {
  VizDecisions v = {0};
  if (!log) return v;
  ExplainFilter f;
  explain_filter_init(&f);
  f.max_stage = upto;
  const ExplainRecord **res;
  int n = explain_query(log, &f, &res);
  if (n <= 0) return v;
  PassDecision *d = fx_calloc((size_t)n, sizeof *d);
  for (int k = 0; d && k < n; k++) {
    const ExplainRecord *r = res[k];
    d[k] = (PassDecision){.stage = r->stage, .pass = r->pass, .action = r->action, .producer = r->producer,
                          .consumer = r->consumer, .accepted = r->accepted, .reason = r->reason,
                          .detail = r->detail, .suggestion = r->suggestion};
  }
  fx_free(res);
  v.items = d;
  v.count = d ? n : 0;
  return v;
}

/* The module's largest computation that is not a fused body (the entry when that is the largest). */
static const IrComputation *largest(const IrModule *m) {
  const IrComputation *big = m->entry;
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k]->ninstrs > big->ninstrs && !m->comps[k]->fusion_instr) big = m->comps[k];
  return big;
}

/* What `render` draws at a stage with no options, with --collapse, and of the largest computation. */
static void stage_views(VizRenderer *r, const IrModule *m, const char *label, VizDecisions ds, int dot_cap) {
  char what[200];
  VizOptions o;
  viz_options_default(&o);
  o.decisions = ds;
  snprintf(what, sizeof what, "%s entry", label);
  run_case(r, m, what, &o, dot_cap);
  o.collapse = true;
  snprintf(what, sizeof what, "%s entry --collapse", label);
  run_case(r, m, what, &o, dot_cap);
  const IrComputation *big = largest(m);
  if (big != m->entry) {
    viz_options_default(&o);
    o.decisions = ds;
    o.computation = big->name;
    snprintf(what, sizeof what, "%s --computation %s", label, big->name);
    run_case(r, m, what, &o, dot_cap);
  }
}

/* Focused views of growing depth around the kernel nearest the middle of the largest computation. */
static void focus_views(VizRenderer *r, const IrModule *m, const char *label, int dot_cap) {
  const IrComputation *big = largest(m);
  const IrInstr *mid = big->instrs[big->ninstrs / 2];
  for (int k = big->ninstrs / 2; k < big->ninstrs; k++)
    if (viz_kernel_kind(big->instrs[k]) != VIZ_K_NONE) {
      mid = big->instrs[k];
      break;
    }
  char what[200];
  for (int depth = 2; depth <= 8; depth *= 2) {
    VizOptions o;
    viz_options_default(&o);
    o.computation = big->is_entry ? NULL : big->name;
    o.focus = mid->name;
    o.depth = depth;
    snprintf(what, sizeof what, "%s --focus %s --depth %d", label, mid->name, depth);
    run_case(r, m, what, &o, dot_cap);
  }
}

int main(int argc, char **argv) {
  const char *path = "tests/data/hlo-corpus/hlo_gemma4_2b_bf16.hlo", *pipelines = "classic,priority";
  int dot_cap = 30;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--pipelines") == 0 && k + 1 < argc) pipelines = argv[++k];
    else if (strcmp(argv[k], "--dot-cap") == 0 && k + 1 < argc) dot_cap = atoi(argv[++k]);
    else if (argv[k][0] != '-') path = argv[k];
    else {
      fprintf(stderr, "usage: bench_viz_render [FILE.hlo] [--pipelines classic,priority] [--dot-cap S]\n");
      return 2;
    }
  }
  signal(SIGALRM, on_alarm);
  setvbuf(stdout, NULL, _IOLBF, 0);
  bench_load_line("at start");
  FxError err;
  fx_error_clear(&err);
  double t0 = now();
  IrModule *m = hlo_load_file(path, &err);
  if (!m) {
    fx_error_print(stderr, &err);
    return 1;
  }
  printf("%s: %d instructions, %d computations, loaded in %.2f s\n", path, ir_module_instr_count(m), m->ncomps,
         now() - t0);
  printf("engine: auto picks dot up to %d nodes and %d nodes + edge segments, else sfdp\n", VIZ_DOT_MAX_NODES,
         VIZ_DOT_MAX_WORK);
  VizRenderer *r = viz_renderer_new(&err);
  if (!r) {
    fx_error_print(stderr, &err);
    return 1;
  }
  stage_views(r, m, "stage 0", (VizDecisions){0}, dot_cap);
  focus_views(r, m, "stage 0", dot_cap);
  bool first = true;
  for (const char *p = pipelines; *p;) {
    const char *e = strchr(p, ',');
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
    p = e ? e + 1 : p + strlen(p);
    const Pipeline *pl = pipeline_lookup(name);
    if (!pl) {
      printf("no pipeline %s\n", name);
      continue;
    }
    printf("\npipeline %s (%d passes)\n", pl->name, pl->npasses);
    ExplainLog *log = explain_log_new();
    PassSettings st;
    pass_settings_default(&st);
    IrModule *cur = m, *owned = NULL;
    for (int k = 0; k < pl->npasses; k++) {
      const Pass *ps = pl->passes[k];
      explain_log_begin_stage(log, k + 1, ps->name);
      DecisionSink sink = explain_log_sink(log);
      FxError perr;
      fx_error_clear(&perr);
      PassContext cx = {&sink, device_default(), &st, k + 1, ps->name, &perr, NULL, false};
      IrModule *out = NULL;
      bool changed = false;
      if (!pass_run_stage(ps, cur, &cx, &out, &changed)) {
        fx_error_print(stderr, &perr);
        return 1;
      }
      if (!out) continue; /* the stage shares the previous snapshot: drawn already */
      if (owned) ir_module_free(owned);
      owned = cur = out;
      char label[96];
      snprintf(label, sizeof label, "%s stage %d (%s)", pl->name, k + 1, ps->name);
      VizDecisions ds = decisions_upto(log, k + 1);
      stage_views(r, cur, label, ds, dot_cap);
      fx_free((void *)ds.items);
    }
    if (first && owned) focus_views(r, owned, "fused", dot_cap);
    first = false;
    if (owned) ir_module_free(owned);
    explain_log_free(log);
  }
  printf("\n%d pictures, %d laid out with sfdp; the slowest with auto: %.2f s (%.2f s cpu), %s; %d over 5 s.\n"
         "dot alone, as before: %d refused (over %d nodes), %d stopped after %d s\n",
         summary.cases, summary.sfdp, summary.worst, summary.worst_cpu, summary.worst_what, summary.over5,
         summary.dot_refused, VIZ_MAX_LAYOUT_NODES, summary.dot_stopped, dot_cap);
  bench_load_line("at end");
  viz_renderer_free(r);
  ir_module_free(m);
  return 0;
}

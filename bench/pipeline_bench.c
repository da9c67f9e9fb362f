/* pipeline_bench.c — how fast the pass pipeline runs, and how much its stage snapshots weigh.
 *
 * Runs a whole pipeline (default classic) stage by stage, exactly as `step all` does (copy the
 * previous stage, run the pass, verify, share the snapshot when nothing changed, record the
 * decisions in an ExplainLog), then builds every stage's kernel plan as `step` and `passes` do.
 * Reports time per pass, time per instruction, decisions, and the bytes each stage's snapshot
 * holds.
 *
 * Times are CPU seconds of this process (the pipeline is single-threaded), so a loaded machine
 * does not inflate them.
 *
 * Inputs: the largest corpus module (hlo_gemma4_2b_bf16.hlo) and synthetic modules of 1k, 10k and
 * 100k instructions, so the growth with size shows.
 *
 * --module FILE (repeatable) adds modules of one's own, e.g. the unrolled-scan CartPole that
 * bench/cartpole_scan_gpu.py makes; --device NAME runs every pass for that device profile.
 *
 *   bench_pipeline [--pipeline NAME] [--device NAME] [--corpus DIR] [--module FILE]...
 *                  [--sizes 1000,10000,100000] [--quiet]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../explain/explain.h"
#include "../compiler/hlo/hlo.h"
#include "synthetic.h"
#include "../compiler/passes/passes.h"
#include "../compiler/plan/plan.h"
#include "../compiler/ir/ir.h"
#include "../compiler/ir/verify.h"

/* CPU time of this (single-threaded) process: the figures stay meaningful on a busy machine. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


/* ---------- running the pipeline as `step all` does ---------- */

typedef struct {
  double pass_s[64], plan_s;
  double snap_s[64]; /* of pass_s: copying the previous stage and verifying the result, timed apart */
  double snap_total_s;
  int decisions[64];
  size_t bytes[64]; /* arena bytes of the stage's own snapshot; 0 when shared */
  int instrs[64];
  bool changed[64];
  double total_s;
  size_t total_bytes;
} Run;

static const DeviceProfile *bench_device;

static bool run_pipeline(const Pipeline *pl, IrModule *input, Run *r, bool quiet) {
  memset(r, 0, sizeof *r);
  ExplainLog *log = explain_log_new();
  PassSettings st;
  pass_settings_default(&st);
  IrModule *stages[65] = {input};
  bool shared[65] = {false};
  int n = 1;
  bool ok = true;
  double t0 = now_s();
  for (int k = 0; k < pl->npasses && k < 64; k++) {
    const Pass *p = pl->passes[k];
    explain_log_begin_stage(log, k + 1, p->name);
    DecisionSink sink = explain_log_sink(log);
    FxError err;
    fx_error_clear(&err);
    PassContext cx = {&sink, bench_device, &st, k + 1, p->name, &err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    double a = now_s();
    if (!pass_run_stage(p, stages[n - 1], &cx, &out, &changed)) {
      fx_error_print(stderr, &err);
      ok = false;
      break;
    }
    r->pass_s[k] = now_s() - a;
    r->decisions[k] = explain_stage_count(log, k + 1);
    r->changed[k] = changed;
    stages[n] = out ? out : stages[n - 1];
    shared[n] = out == NULL;
    r->bytes[k] = out ? out->arena.total : 0;
    r->total_bytes += r->bytes[k];
    r->instrs[k] = ir_module_instr_count(stages[n]);
    n++;
  }
  r->total_s = now_s() - t0;
  /* What the stage snapshots cost inside each pass's time, timed apart (after the run, so the
   * pipeline's own timing is untouched): the copy step makes of the previous stage, and the
   * verifier on a stage that changed. */
  for (int k = 0; k + 1 < n && k < 64; k++) {
    double b = now_s();
    IrModule *copy = ir_module_snapshot(stages[k]);
    double copied = now_s();
    if (copy) ir_module_free(copy);
    double freed = now_s();
    if (r->changed[k]) {
      FxError verr;
      fx_error_clear(&verr);
      (void)ir_verify(stages[k + 1], &verr);
    }
    /* an unchanged stage's copy is freed by step too; a changed one is kept */
    r->snap_s[k] = (copied - b) + (r->changed[k] ? now_s() - freed : freed - copied);
    r->snap_total_s += r->snap_s[k];
  }
  /* `step` and `passes` build every stage's kernel plan, its buffers left for when a command
   * reads them. */
  double a = now_s();
  for (int k = 0; k < n && ok; k++) {
    FxError err;
    fx_error_clear(&err);
    KernelPlan *plan = plan_build_kernels(stages[k], bench_device, &err);
    if (!plan) ok = false;
    plan_free(plan);
  }
  r->plan_s = now_s() - a;
  for (int k = n - 1; k >= 1; k--)
    if (!shared[k]) ir_module_free(stages[k]);
  explain_log_free(log);
  (void)quiet;
  return ok;
}

/* Runs the pipeline on m and prints the figures; *out (may be NULL) gets them. */
static void report(const char *label, const Pipeline *pl, IrModule *m, double load_s, bool quiet, Run *out) {
  Run r;
  int ninstr = ir_module_instr_count(m);
  size_t input_bytes = m->arena.total;
  bool ok = run_pipeline(pl, m, &r, quiet);
  printf("\n== %s: %d instructions, %d computations (built/loaded in %.3f s; input snapshot %.1f MiB, %.0f B per "
         "instruction)\n",
         label, ninstr, m->ncomps, load_s, (double)input_bytes / (1 << 20), (double)input_bytes / ninstr);
  if (!quiet) {
    printf("   %-24s %8s %10s %9s %8s %12s %12s\n", "pass", "changed", "instrs", "decisions", "ms", "copy+verify",
           "snapshot");
    for (int k = 0; k < pl->npasses && k < 64; k++)
      printf("   %-24s %8s %10d %9d %8.1f %9.1f ms %9.1f MiB\n", pl->passes[k]->name, r.changed[k] ? "yes" : "no",
             r.instrs[k], r.decisions[k], r.pass_s[k] * 1e3, r.snap_s[k] * 1e3, (double)r.bytes[k] / (1 << 20));
  }
  printf("   pipeline %s: %.3f s = %.2f us per instruction; kernel plans of all %d stages: %.3f s\n", pl->name,
         r.total_s, r.total_s * 1e6 / ninstr, pl->npasses + 1, r.plan_s);
  printf("   stage snapshots (the copy of each stage and the verifier, timed apart): %.3f s of the %.3f s, %.2f us "
         "per instruction\n",
         r.snap_total_s, r.total_s, r.snap_total_s * 1e6 / ninstr);
  printf("   snapshots: %.1f MiB for %d stages (input included: %.1f MiB), %.0f B per instruction per changed stage%s\n",
         (double)r.total_bytes / (1 << 20), pl->npasses + 1, (double)(r.total_bytes + input_bytes) / (1 << 20),
         (double)r.total_bytes / ninstr / (double)(pl->npasses ? pl->npasses : 1), ok ? "" : "  [FAILED]");
  fflush(stdout);
  if (out) *out = r;
}

int main(int argc, char **argv) {
  const char *pipeline = "classic", *corpus = getenv("FXPLAIN_HLO_CORPUS");
  const char *sizes = "1000,10000,100000";
  bool quiet = false;
  const char *modules[8];
  int nmodules = 0;
  bench_device = device_default();
  if (!corpus || !*corpus) corpus = "tests/data/hlo-corpus";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--pipeline") == 0 && k + 1 < argc) pipeline = argv[++k];
    else if (strcmp(argv[k], "--corpus") == 0 && k + 1 < argc) corpus = argv[++k];
    else if (strcmp(argv[k], "--sizes") == 0 && k + 1 < argc) sizes = argv[++k];
    else if (strcmp(argv[k], "--quiet") == 0) quiet = true;
    else if (strcmp(argv[k], "--module") == 0 && k + 1 < argc && nmodules < 8) modules[nmodules++] = argv[++k];
    else if (strcmp(argv[k], "--device") == 0 && k + 1 < argc) {
      bench_device = device_lookup(argv[++k]);
      if (!bench_device) {
        fprintf(stderr, "no device named %s\n", argv[k]);
        return 2;
      }
    } else {
      fprintf(stderr, "usage: bench_pipeline [--pipeline NAME] [--device NAME] [--corpus DIR] [--module FILE]... "
                      "[--sizes N,N,...] [--quiet]\n");
      return 2;
    }
  }
  const Pipeline *pl = pipeline_lookup(pipeline);
  if (!pl) {
    fprintf(stderr, "no pipeline named %s\n", pipeline);
    return 2;
  }
  printf("pipeline %s (%d passes) on %s\n", pl->name, pl->npasses, bench_device->name);
  char path[1024];
  snprintf(path, sizeof path, "%s/hlo_gemma4_2b_bf16.hlo", corpus);
  FxError err;
  fx_error_clear(&err);
  double a = now_s();
  IrModule *g = hlo_load_file(path, &err);
  if (g) {
    report("hlo_gemma4_2b_bf16.hlo", pl, g, now_s() - a, quiet, NULL);
    ir_module_free(g);
  } else {
    fx_error_print(stderr, &err);
  }
  for (int k = 0; k < nmodules; k++) {
    fx_error_clear(&err);
    a = now_s();
    IrModule *m = hlo_load_file(modules[k], &err);
    if (!m) {
      fx_error_print(stderr, &err);
      continue;
    }
    const char *base = strrchr(modules[k], '/');
    report(base ? base + 1 : modules[k], pl, m, now_s() - a, quiet, NULL);
    ir_module_free(m);
  }
  double per_instr[16], pass_per_instr[16][64];
  int sz[16], nsz = 0;
  for (const char *p = sizes; *p && nsz < 16;) {
    sz[nsz] = atoi(p);
    a = now_s();
    IrModule *m = bench_synthetic_module(sz[nsz]);
    double built = now_s() - a;
    char label[64];
    snprintf(label, sizeof label, "synthetic %d", sz[nsz]);
    Run r;
    report(label, pl, m, built, quiet, &r);
    int n = ir_module_instr_count(m);
    per_instr[nsz] = r.total_s * 1e6 / n;
    for (int k = 0; k < pl->npasses && k < 64; k++) pass_per_instr[nsz][k] = r.pass_s[k] * 1e6 / n;
    ir_module_free(m);
    nsz++;
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  if (nsz == 0) return 0; /* --sizes "": only the modules */
  printf("\ngrowth: us per instruction (synthetic modules)\n   %-24s", "pass");
  for (int k = 0; k < nsz; k++) printf(" %10d", sz[k]);
  printf("\n");
  for (int q = 0; q < pl->npasses && q < 64; q++) {
    printf("   %-24s", pl->passes[q]->name);
    for (int k = 0; k < nsz; k++) printf(" %10.2f", pass_per_instr[k][q]);
    printf("\n");
  }
  printf("   %-24s", "whole pipeline");
  for (int k = 0; k < nsz; k++) printf(" %10.2f", per_instr[k]);
  if (nsz > 1) printf("   (x%.1f per instruction from %d to %d)", per_instr[nsz - 1] / per_instr[0], sz[0], sz[nsz - 1]);
  printf("\n");
  return 0;
}

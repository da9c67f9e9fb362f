/* corpus_kernels.c — both pipelines on every module of the HLO corpus.
 *
 * For each module: load it; when it is an optimized XLA dump (it already holds fusions) count
 * XLA's kernels, then inline the fusions back (`unfuse`); run every pass of `classic` and of
 * `priority` through pass_run_stage, which verifies every new stage; count the kernels of the
 * result. Any load, pass or verifier failure fails the test. With --markdown it prints the table
 * kept in docs/corpus-kernels.md. Usage: corpus_kernels [--markdown] [DIR] (default: $FXPLAIN_HLO_CORPUS,
 * else tests/data/hlo-corpus; a missing folder fails). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/fusion/fusion.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/plan/plan.h"

static void null_emit(void *ctx, const PassDecision *d) {
  long *n = ctx;
  (*n)++;
  (void)d;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
  int kernels;
  long long launches;
  long decisions;
} Result;

static bool count(const IrModule *m, Result *r, FxError *err) {
  KernelPlan *p = plan_build(m, device_default(), err);
  if (!p) return false;
  r->kernels = p->ncompute;
  r->launches = (long long)p->launches;
  plan_free(p);
  return true;
}

static bool run_pipeline(const char *name, const IrModule *in, Result *r, FxError *err) {
  const Pipeline *pl = pipeline_lookup(name);
  PassSettings s;
  pass_settings_default(&s);
  long ndec = 0;
  DecisionSink sink = {null_emit, &ndec};
  IrModule *cur = ir_module_clone(in);
  if (!cur) return fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int k = 0; k < pl->npasses; k++) {
    PassContext cx = {&sink, device_default(), &s, k + 1, pl->passes[k]->name, err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[k], cur, &cx, &out, &changed)) {
      ir_module_free(cur);
      return false;
    }
    if (out) {
      ir_module_free(cur);
      cur = out;
    }
  }
  bool ok = count(cur, r, err);
  r->decisions = ndec;
  ir_module_free(cur);
  return ok;
}

int main(int argc, char **argv) {
  bool md = false;
  const char *dir = getenv("FXPLAIN_HLO_CORPUS");
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--markdown") == 0) md = true;
    else dir = argv[k];
  }
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL: no corpus at %s\n", dir);
    return 1;
  }
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 256) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  int failed = 0;
  if (md)
    printf("| module | instructions | XLA's kernels | unfused kernels | classic kernels | priority kernels | "
           "classic launches | priority launches |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int k = 0; k < n; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_load_file(path, &err);
    if (!m) {
      fprintf(stderr, "%s: load failed: ", names[k]);
      fx_error_print(stderr, &err);
      failed++;
      free(names[k]);
      continue;
    }
    int instrs = ir_module_instr_count(m);
    Result xla = {-1, -1, 0}, base, classic, prio;
    bool ok = true;
    int fusions = 0;
    for (int c = 0; c < m->ncomps; c++)
      for (int j = 0; j < m->comps[c]->ninstrs; j++) fusions += m->comps[c]->instrs[j]->op == IR_OP_FUSION;
    if (fusions) {
      ok = count(m, &xla, &err);
      fusion_unfuse_all(m);
      for (int c = 0; c < m->ncomps; c++) ir_computation_sort(m->comps[c]);
      ir_module_remove_unreachable(m);
    }
    ok = ok && count(m, &base, &err);
    ok = ok && run_pipeline("classic", m, &classic, &err);
    ok = ok && run_pipeline("priority", m, &prio, &err);
    if (!ok) {
      fprintf(stderr, "%s: ", names[k]);
      fx_error_print(stderr, &err);
      failed++;
    } else if (md) {
      char xs[32] = "—";
      if (xla.kernels >= 0) snprintf(xs, sizeof xs, "%d", xla.kernels);
      printf("| %s | %d | %s | %d | %d | %d | %lld | %lld |\n", names[k], instrs, xs, base.kernels, classic.kernels,
             prio.kernels, classic.launches, prio.launches);
    } else {
      printf("%-60s %6d instrs: %5d -> classic %5d, priority %5d kernels\n", names[k], instrs, base.kernels,
             classic.kernels, prio.kernels);
    }
    ir_module_free(m);
    free(names[k]);
  }
  if (!md) printf("%d modules, %d failed\n", n, failed);
  return failed ? 1 : 0;
}

/* pipeline_corpus.c — every real module in the corpus goes through whole pipelines, stage by
 * stage as `step all` does: every stage verifies, and every stage's kernel plan builds, the same
 * whether its buffers are assigned at once or later (as `step` builds it and `kernels --buffers`
 * completes it). Prints one line per module and pipeline: instructions and kernels at the input
 * and at the end, launches.
 *
 * Usage: pipeline_corpus [DIR] [PIPELINE...]   (DIR default: $FXPLAIN_HLO_CORPUS, else
 * tests/data/hlo-corpus from the repository root; pipelines default: classic priority).
 * Fails when the folder is missing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../../explain/explain.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/plan/plan.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Where a plan built without buffers and completed by plan_assign_buffers differs from
 * plan_build's (the REPL's `step` builds the first, `kernels --buffers` completes it); NULL when
 * it does not. */
static const char *lazy_plan_differs(const IrModule *m, const KernelPlan *full) {
  static char why[160];
  FxError err;
  fx_error_clear(&err);
  KernelPlan *k = plan_build_kernels(m, device_default(), &err);
  const char *d = NULL;
  if (!k) d = "it did not build";
  else if (k->buffers_assigned || k->nbuffers || k->nslots || !full->buffers_assigned) d = "buffers before assignment";
  else if (k->nkernels != full->nkernels || k->ncompute != full->ncompute || k->launches != full->launches ||
           k->bytes_read != full->bytes_read || k->bytes_written != full->bytes_written || k->est_us != full->est_us)
    d = "kernels or totals";
  else if (!plan_assign_buffers(k, &err)) d = err.msg;
  else if (!k->buffers_assigned || k->nbuffers != full->nbuffers || k->nslots != full->nslots ||
           k->buffer_bytes != full->buffer_bytes || k->slot_total != full->slot_total)
    d = "buffer totals";
  for (int q = 0; !d && q < k->nbuffers; q++) {
    const PlanBuffer *a = &k->buffers[q], *b = &full->buffers[q];
    if (a->producer != b->producer || a->output != b->output || a->comp != b->comp || a->bytes != b->bytes ||
        a->def != b->def || a->last_use != b->last_use || a->live_out != b->live_out || a->slot != b->slot ||
        a->slot2 != b->slot2 || a->reuses != b->reuses || k->slot_bytes[a->slot] != full->slot_bytes[b->slot]) {
      snprintf(why, sizeof why, "buffer %d (of %%%s)", q, b->producer ? b->producer->name : "?");
      d = why;
    }
  }
  plan_free(k);
  return d;
}

/* Runs pipeline pl on m; returns false after printing the first failure. */
static bool run(const char *name, const Pipeline *pl, IrModule *input) {
  ExplainLog *log = explain_log_new();
  PassSettings st;
  pass_settings_default(&st);
  IrModule *cur = input;
  bool ok = true;
  FxError err;
  fx_error_clear(&err);
  KernelPlan *p0 = plan_build(input, device_default(), &err);
  for (int k = 0; k < pl->npasses && ok; k++) {
    const Pass *p = pl->passes[k];
    explain_log_begin_stage(log, k + 1, p->name);
    DecisionSink sink = explain_log_sink(log);
    PassContext cx = {&sink, device_default(), &st, k + 1, p->name, &err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(p, cur, &cx, &out, &changed)) {
      printf("FAIL %s %s stage %d: ", name, pl->name, k + 1);
      fx_error_print(stdout, &err);
      ok = false;
      break;
    }
    if (out) {
      KernelPlan *kp = plan_build(out, device_default(), &err);
      const char *lazy = kp ? lazy_plan_differs(out, kp) : NULL;
      if (!kp) {
        printf("FAIL %s %s stage %d (%s): kernel plan: %s\n", name, pl->name, k + 1, p->name, err.msg);
        ok = false;
      } else if (lazy) {
        printf("FAIL %s %s stage %d (%s): the plan whose buffers are assigned later differs: %s\n", name, pl->name, k + 1,
               p->name, lazy);
        ok = false;
      }
      plan_free(kp);
      if (cur != input) ir_module_free(cur);
      cur = out;
    }
  }
  if (ok) {
    KernelPlan *p1 = plan_build(cur, device_default(), &err);
    printf("ok   %-56s %-8s %6d -> %6d instructions, %5d -> %5d kernels, %lld -> %lld launches, %d decisions\n",
           name, pl->name, ir_module_instr_count(input), ir_module_instr_count(cur), p0 ? p0->nkernels : -1,
           p1 ? p1->nkernels : -1, p0 ? (long long)p0->launches : -1, p1 ? (long long)p1->launches : -1,
           explain_log_total(log));
    plan_free(p1);
  }
  plan_free(p0);
  if (cur != input) ir_module_free(cur);
  explain_log_free(log);
  return ok;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("FXPLAIN_HLO_CORPUS");
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL: no corpus at %s\n", dir);
    return 1;
  }
  char *names[512];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 512) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  const char *defaults[] = {"classic", "priority"};
  const char *const *pls = argc > 2 ? (const char *const *)argv + 2 : defaults;
  int npl = argc > 2 ? argc - 2 : 2;
  int failed = 0;
  for (int k = 0; k < n; k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_load_file(path, &err);
    if (!m) {
      printf("FAIL %s: does not load: %s\n", names[k], err.msg);
      failed++;
    } else {
      for (int q = 0; q < npl; q++) {
        const Pipeline *pl = pipeline_lookup(pls[q]);
        if (!pl) {
          printf("no pipeline named %s\n", pls[q]);
          return 2;
        }
        if (!run(names[k], pl, m)) failed++;
      }
      ir_module_free(m);
    }
    free(names[k]);
  }
  printf("%d modules, %d failures\n", n, failed);
  return failed ? 1 : 0;
}

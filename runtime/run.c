/* run.c — running a module on a backend `repeat` times, as `run`, `profile`, `compare` and
 * `variants --run` measure a stage: the last run's result and statistics, every run's time and the
 * median; the stage's inputs (.npy files by parameter, the rest seeded random data) and the check
 * against the reference interpreter (see backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/ir/ir.h"
#include "backend.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bool rt_run_repeated(const RtBackend *b, void *be, const IrModule *m, RtTensor **args, const RtOptions *o, int repeat,
                     RtTensor **result, RtRunStats *stats, double *times_ns, double *median_ns, FxError *err) {
  double *sorted = fx_calloc((size_t)(repeat > 0 ? repeat : 1), sizeof *sorted);
  if (!sorted) return fx_error_set(err, NULL, 0, 0, "out of memory");
  bool ok = true;
  for (int r = 0; r < repeat && ok; r++) {
    rt_tensor_unref(*result);
    *result = NULL;
    rt_run_stats_free(stats);
    ok = b->run(be, m, args, m->entry->nparams, o, result, stats, err);
    sorted[r] = stats->total_ns;
    if (times_ns) times_ns[r] = stats->total_ns;
  }
  if (ok) {
    qsort(sorted, (size_t)repeat, sizeof *sorted, cmp_double);
    *median_ns = sorted[repeat / 2];
  }
  fx_free(sorted);
  return ok;
}

/* ---------- a stage's run, as the shell's run, profile, compare and variants --run make it ---------- */

RtTensor **rt_inputs_make(const IrModule *m, const RtNamedFile *files, int nfiles, uint64_t seed, RtUniform *rules,
                          int nrules, volatile int *interrupted, bool progress, FxError *err) {
  int n = m->entry->nparams;
  RtTensor **args = fx_calloc((size_t)(n + 1), sizeof *args);
  if (!args) {
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  for (int q = 0; q < nfiles; q++) {
    int found = -1;
    for (int k = 0; k < n; k++) {
      char num[16];
      snprintf(num, sizeof num, "%d", k);
      if (m->entry->params[k] && (strcmp(m->entry->params[k]->name, files[q].name) == 0 || strcmp(num, files[q].name) == 0))
        found = k;
    }
    if (found < 0) {
      fx_error_set(err, NULL, 0, 0, "--input %s: the entry has no parameter of that name", files[q].name);
      goto fail;
    }
    RtTensor *t = rt_npy_read(files[q].file, err);
    if (!t) goto fail; /* located at the file: what is wrong is in it */
    if (!rt_tensor_matches(t, &m->entry->params[found]->shape)) {
      char have[128], want[128];
      rt_tensor_describe(t, have, sizeof have);
      ir_shape_format(&m->entry->params[found]->shape, false, want, sizeof want);
      fx_error_set(err, files[q].file, 0, 0, "holds %s but parameter %s is %s", have, files[q].name, want);
      rt_tensor_unref(t);
      goto fail;
    }
    rt_tensor_unref(args[found]);
    args[found] = t;
  }
  if (!rt_inputs_fill_interruptible(m, args, seed, rules, nrules, interrupted, progress, err)) goto fail;
  return args;
fail:
  rt_inputs_free(m, args);
  return NULL;
}

bool rt_stage_open(const char *backend, const IrModule *const *prepare, int nprepare, RtStageRun *r, FxError *err) {
  r->backend = rt_backend_pick(backend, err);
  if (!r->backend) return false;
  r->be = r->backend->create(err);
  if (!r->be) return false;
  if (!r->backend->prepare(r->be, prepare, nprepare, err)) return false;
  if (r->backend == &rt_backend_cpu) r->note = cpu_note(r->be);
  return true;
}

bool rt_stage_run(const char *backend, const IrModule *m, RtTensor **args, const RtOptions *o, int repeat,
                  double *times_ns, RtStageRun *r, FxError *err) {
  if (!r->be && !rt_stage_open(backend, &m, 1, r, err)) return false;
  rt_tensor_unref(r->result);
  r->result = NULL;
  rt_run_stats_free(&r->stats);
  return rt_run_repeated(r->backend, r->be, m, args, o, repeat, &r->result, &r->stats, times_ns, &r->median_ns, err);
}

void rt_stage_run_free(RtStageRun *r) {
  rt_tensor_unref(r->result);
  rt_run_stats_free(&r->stats);
  if (r->be) r->backend->destroy(r->be);
  memset(r, 0, sizeof *r);
}

bool rt_check_reference(const IrModule *ref, const IrModule *m, RtTensor **args, const RtOptions *o, RtTensor **want,
                        FxError *err) {
  *want = NULL;
  /* ref when its parameters are the stage's; otherwise the stage itself (a pass changed them) */
  bool same = ref && ref->entry->nparams == m->entry->nparams;
  for (int k = 0; same && k < m->entry->nparams; k++) same = rt_tensor_matches(args[k], &ref->entry->params[k]->shape);
  if (!same) ref = m;
  return rt_interp_run(ref, args, ref->entry->nparams, o, want, NULL, err);
}

void rt_check_against(const RtTensor *got, const RtTensor *want, RtCheck *c) {
  memset(c, 0, sizeof *c);
  RtCompare cmp;
  rt_compare(got, want, &cmp);
  c->agrees = cmp.ok;
  c->worst = cmp.err;
  if (!cmp.ok) {
    if (cmp.tuple_index >= 0) snprintf(c->differs, sizeof c->differs, "out.%d %s", cmp.tuple_index, cmp.what);
    else snprintf(c->differs, sizeof c->differs, "out %s", cmp.what);
  }
}

bool rt_check_with_interp(const IrModule *ref, const IrModule *m, RtTensor **args, const RtTensor *got,
                          const RtOptions *o, RtCheck *c, FxError *err) {
  memset(c, 0, sizeof *c);
  RtTensor *want = NULL;
  if (!rt_check_reference(ref, m, args, o, &want, err)) return false;
  rt_check_against(got, want, c);
  rt_tensor_unref(want);
  return true;
}

/* run.c — running a module on a backend `repeat` times, as `run`, `profile`, `compare` and
 * `variants --run` measure a stage: the last run's result and statistics, every run's time and the
 * median (see backend.h). */
#include <stdlib.h>
#include <string.h>

#include "../compiler/arena.h"
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

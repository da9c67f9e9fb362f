/* corpus.c — every corpus module that fits runs with --check on the CPU: the last stage of each
 * pipeline, run on the native CPU backend, agrees with the reference interpreter on the module
 * as loaded (stage 0), on seeded random inputs; where a pass computed more precisely on purpose
 * (pass_excess_precision), with the interpreter on that pass's stage.
 *
 * "Fits" is decided before running, from the module itself: the bytes of its parameters and
 * largest values must fit the memory budget, and the interpreter's work (elements computed, dot
 * and convolution multiply-adds, loops multiplied by their trip counts where known) must fit the
 * test's time. Modules that do not fit are listed with the reason. A watchdog stops any run that
 * still takes too long (a data-dependent loop), reported the same way.
 *
 *   runtime_corpus [DIR] [MAX_WORK]   (DIR defaults to $FXPLAIN_HLO_CORPUS or tests/data/hlo-corpus)
 *
 * For a longer check by hand (the modules this test leaves out): FXPLAIN_CORPUS_MAX_BYTES (memory
 * budget, default 5e9), FXPLAIN_CORPUS_WATCHDOG (seconds per module, default 120) and
 * FXPLAIN_CORPUS_ONLY (check only files whose name contains it). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/plan/plan.h"
#include "../../runtime/backend.h"

static volatile int interrupted;
static volatile int watchdog_gen;

static int watchdog_seconds = 120;

static void *watchdog(void *p) {
  int gen = *(int *)p;
  for (int s = 0; s < watchdog_seconds; s++) {
    sleep(1);
    if (watchdog_gen != gen) return NULL;
  }
  interrupted = 1;
  return NULL;
}

static double work_of(const IrComputation *c, int depth);

/* A multiply-add of a real dot or convolution costs the interpreter about a sixteenth of an
   element it computes one at a time (interp_contract.c packs the operands once). */
#define MAC_WORK (1.0 / 16)

static double instr_work(const IrInstr *i, int depth) {
  double out = (double)(ir_shape_is_array(&i->shape) ? ir_shape_elements(&i->shape) : 1);
  IrComputation *called[16];
  int nc = ir_called_computations(i, called, 16);
  switch (i->op) {
  case IR_OP_DOT: {
    IrDotDims dd;
    double k = 1;
    if (ir_dot_dims(i, &dd))
      for (int q = 0; q < dd.nlhs_contract; q++) k *= (double)i->operands[0]->shape.dims[dd.lhs_contract[q]];
    return out * k * MAC_WORK;
  }
  case IR_OP_CONVOLUTION: {
    const IrShape *ks = &i->operands[1]->shape;
    return out * (double)ir_shape_elements(ks) / (double)(ks->rank ? ks->dims[ks->rank - 1] : 1) * MAC_WORK;
  }
  case IR_OP_WHILE: {
    int64_t trips = plan_while_trip_count(i);
    double body = 0;
    for (int q = 0; q < nc; q++) body += work_of(called[q], depth + 1);
    return body * (double)(trips > 0 ? trips : 1);
  }
  case IR_OP_REDUCE: case IR_OP_REDUCE_WINDOW: case IR_OP_SORT: case IR_OP_SCATTER:
    /* the reducer runs per input element (sort: n log n comparisons) */
    return (double)ir_shape_elements(&i->operands[0]->shape) * (i->op == IR_OP_SORT ? 20.0 : 2.0) +
           (i->op == IR_OP_REDUCE_WINDOW ? out * 8 : 0);
  default: {
    double w = out;
    for (int q = 0; q < nc; q++) w += work_of(called[q], depth + 1);
    return w;
  }
  }
}

static double work_of(const IrComputation *c, int depth) {
  if (depth > 16) return 0;
  double w = 0;
  for (int k = 0; k < c->ninstrs; k++) w += instr_work(c->instrs[k], depth);
  return w;
}

static double max_value_bytes(const IrModule *m) {
  double mx = 0, params = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      /* arrays only: a tuple holds references to values counted on their own */
      const IrShape *s = &m->comps[c]->instrs[k]->shape;
      double b = ir_shape_is_array(s) ? (double)ir_shape_bytes(s) : 0;
      if (b > mx) mx = b;
    }
  for (int k = 0; k < m->entry->nparams; k++)
    if (m->entry->params[k]) params += (double)ir_shape_bytes(&m->entry->params[k]->shape);
  return params + 4 * mx;
}

static void no_emit(void *ctx, const PassDecision *d) {
  (void)ctx;
  (void)d;
}

/* The pipeline's last stage. *ref gets a copy of the stage after the last pass that dropped a
 * rounding step on purpose (pass_excess_precision: float-normalization-bf16 computes in f32 what
 * the module rounds to bf16, reductions' sums included; simplify-fp-conversions) or reassociated
 * (cx.reassociated: algsimp's sum of equal values as one multiply), or NULL when none did: the last stage must agree with the interpreter on that stage, which is more precise than
 * the module as loaded by design, as XLA's is. */
static IrModule *last_stage(const IrModule *m0, const Pipeline *pl, IrModule **ref, FxError *e) {
  *ref = NULL;
  PassSettings set;
  pass_settings_default(&set);
  DecisionSink sink = {.emit = no_emit};
  IrModule *cur = NULL;
  for (int q = 0; q < pl->npasses; q++) {
    PassContext cx = {.sink = &sink, .device = device_default(), .settings = &set, .stage = q + 1,
                      .pass = pl->passes[q]->name, .err = e};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[q], cur ? cur : m0, &cx, &out, &changed)) {
      if (cur) ir_module_free(cur);
      if (*ref) ir_module_free(*ref);
      *ref = NULL;
      return NULL;
    }
    if (out) {
      if (cur) ir_module_free(cur);
      cur = out;
      if (changed && (pass_excess_precision(pl->passes[q]) || cx.reassociated)) {
        if (*ref) ir_module_free(*ref);
        *ref = ir_module_clone(cur);
      }
    }
  }
  return cur ? cur : ir_module_clone(m0);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("FXPLAIN_HLO_CORPUS");
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  double max_work = argc > 2 ? atof(argv[2]) : 5e10;
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL: no corpus at %s\n", dir);
    return 1;
  }
  char *names[512];
  int n = 0;
  for (struct dirent *de; (de = readdir(d)) && n < 512;) {
    size_t l = strlen(de->d_name);
    if (l > 4 && strcmp(de->d_name + l - 4, ".hlo") == 0) names[n++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  double max_bytes = getenv("FXPLAIN_CORPUS_MAX_BYTES") ? atof(getenv("FXPLAIN_CORPUS_MAX_BYTES")) : 5e9;
  if (getenv("FXPLAIN_CORPUS_WATCHDOG")) watchdog_seconds = atoi(getenv("FXPLAIN_CORPUS_WATCHDOG"));
  const char *only = getenv("FXPLAIN_CORPUS_ONLY");
  rt_set_max_memory(max_bytes > 1.5e9 ? (uint64_t)(max_bytes * 1.4) : 2ULL << 30);
  int checked = 0, skipped = 0, failed = 0;
  for (int f = 0; f < n; f++) {
    if (only && *only && !strstr(names[f], only)) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[f]);
    FxError e = {0};
    IrModule *m0 = hlo_load_file(path, &e);
    if (!m0) {
      printf("FAIL %s: does not load: %s\n", names[f], e.msg);
      failed++;
      continue;
    }
    double work = work_of(m0->entry, 0), bytes = max_value_bytes(m0);
    if (bytes > max_bytes || work > max_work) {
      printf("skip %s: %s (%.2g bytes, %.2g element operations)\n", names[f],
             bytes > max_bytes ? "does not fit in memory" : "too much work for the interpreter in this test", bytes, work);
      skipped++;
      ir_module_free(m0);
      continue;
    }
    int np = m0->entry->nparams;
    RtTensor **args = calloc((size_t)np + 1, sizeof *args);
    bool ok = true;
    for (int k = 0; k < np && ok; k++) {
      args[k] = rt_tensor_for_shape(&m0->entry->params[k]->shape, &e);
      if (!args[k]) ok = false;
      else if (args[k]->type == IR_TUPLE)
        for (int q = 0; q < args[k]->ntuple; q++) rt_tensor_fill_random(args[k]->tuple[q], 5, (uint64_t)(k * 100 + q));
      else rt_tensor_fill_random(args[k], 5, (uint64_t)k);
    }
    int gen = ++watchdog_gen;
    interrupted = 0;
    pthread_t th;
    pthread_create(&th, NULL, watchdog, &gen);
    RtOptions ro = {.seed = 3, .interrupted = &interrupted};
    RtTensor *want = NULL;
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    if (ok && !rt_interp_run(m0, args, np, &ro, &want, NULL, &e)) ok = false;
    char detail[512] = "";
    int nstages = 0;
    for (int p = 0; ok && p < pipeline_count(); p++) {
      const Pipeline *pl = pipeline_at(p);
      IrModule *ref = NULL;
      IrModule *last = last_stage(m0, pl, &ref, &e);
      if (!last) {
        ok = false;
        break;
      }
      RtTensor *want_ref = NULL; /* the interpreter on the excess-precision stage, when there is one */
      if (ref && !rt_interp_run(ref, args, np, &ro, &want_ref, NULL, &e)) ok = false;
      if (ref) ir_module_free(ref);
      void *be = rt_backend_cpu.create(&e);
      CpuOptions o = {.opt = "-O1"};
      if (be) cpu_set_options(be, &o);
      const IrModule *lm = last;
      RtTensor *got = NULL;
      RtRunStats st = {0};
      if (!be || !rt_backend_cpu.prepare(be, &lm, 1, &e) || !rt_backend_cpu.run(be, last, args, np, &ro, &got, &st, &e))
        ok = false;
      if (ok) {
        RtCompare c;
        rt_compare(got, want_ref ? want_ref : want, &c);
        int kernels = 0, interp = 0;
        cpu_prepare_counts(be, NULL, NULL, &kernels, &interp);
        size_t l = strlen(detail);
        snprintf(detail + l, sizeof detail - l, "%s%s: %lld launches, %d of %d kernels generated%s", nstages ? "; " : "",
                 pl->name, (long long)st.counters.launches, kernels - interp, kernels,
                 want_ref ? " (against its excess-precision stage)" : "");
        if (!c.ok) {
          snprintf(e.msg, sizeof e.msg, "pipeline %s: output %d: %.400s", pl->name, c.tuple_index, c.what);
          e.set = true;
          ok = false;
        }
        nstages++;
      }
      rt_run_stats_free(&st);
      rt_tensor_unref(got);
      if (want_ref) rt_tensor_unref(want_ref);
      if (be) rt_backend_cpu.destroy(be);
      ir_module_free(last);
    }
    watchdog_gen++;
    pthread_join(th, NULL);
    double t = (double)clock() / CLOCKS_PER_SEC - t0;
    if (ok) {
      printf("ok   %s (%.1f s): %s\n", names[f], t, detail);
      checked++;
    } else if (interrupted) {
      printf("skip %s: still running after %d s (a data-dependent loop on random inputs)\n", names[f], watchdog_seconds);
      skipped++;
    } else {
      printf("FAIL %s: %s\n", names[f], e.msg);
      failed++;
    }
    fflush(stdout);
    rt_tensor_unref(want);
    for (int k = 0; k < np; k++) rt_tensor_unref(args[k]);
    free(args);
    ir_module_free(m0);
  }
  for (int f = 0; f < n; f++) free(names[f]);
  printf("%d checked, %d skipped, %d failed\n", checked, skipped, failed);
  return failed ? 1 : 0;
}

/* inputs.c — the inputs of a run: seeded random data for every entry parameter, and the input
 * rules of the commands that run a stage (`run`, `profile`, `compare`, `variants --run`):
 * `--uniform PATTERN=LO:HI` draws the floats of the parameters whose name matches a shell pattern
 * from [LO, HI) instead of the default [-1, 1).
 *
 * Where it sits: the run commands make seeded random inputs (runtime/tensor.c,
 * rt_tensor_fill_random), then map each float parameter a rule names onto its range, so a program
 * whose inputs mean something (CartPole's actions are probabilities, its states are small) gets
 * sensible data with the same seed and streams. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

RtUniform *rt_uniform_for(RtUniform *rules, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (fnmatch(rules[k].pattern, name, 0) == 0) return &rules[k];
  return NULL;
}

void rt_uniform_apply(RtTensor *t, const RtUniform *r) {
  if (!t || !r || t->type == IR_TUPLE || !ir_type_is_float(t->type)) return;
  for (int64_t q = 0; q < t->count; q++) {
    double v = rt_get_f(t, q); /* in [-1, 1) */
    double u = r->lo + (v + 1) * 0.5 * (r->hi - r->lo);
    rt_set_f(t, q, u < r->hi ? u : r->lo);
  }
}

bool rt_inputs_fill(const IrModule *m, RtTensor **args, uint64_t seed, RtUniform *rules, int nrules,
                      FxError *err) {
  return rt_inputs_fill_interruptible(m, args, seed, rules, nrules, NULL, false, err);
}

/* Elements filled between two looks at the Ctrl-C flag: a few milliseconds of work. */
#define FILL_PIECE (1 << 18)

/* Fills t (stream) in pieces; false when interrupted. */
static bool fill_pieces(RtTensor *t, uint64_t seed, uint64_t stream, volatile int *interrupted, bool progress,
                        uint64_t *done, uint64_t total) {
  uint64_t esize = t->count > 0 ? (uint64_t)ir_type_bytes(t->type) : 0;
  for (int64_t at = 0; at < t->count; at += FILL_PIECE) {
    if (interrupted && *interrupted) return false;
    int64_t to = at + FILL_PIECE < t->count ? at + FILL_PIECE : t->count;
    rt_tensor_fill_random_range(t, seed, stream, at, to);
    *done += (uint64_t)(to - at) * esize;
    if (progress && total > (64u << 20)) {
      fprintf(stderr, "\rrun: making the inputs: %.0f of %.0f MiB", *done / 1048576.0, total / 1048576.0);
      fflush(stderr);
    }
  }
  return true;
}

bool rt_inputs_fill_interruptible(const IrModule *m, RtTensor **args, uint64_t seed, RtUniform *rules,
                                    int nrules, volatile int *interrupted, bool progress, FxError *err) {
  uint64_t total = 0, done = 0;
  for (int k = 0; k < m->entry->nparams; k++)
    if (!args[k] && m->entry->params[k]) total += (uint64_t)ir_shape_bytes(&m->entry->params[k]->shape);
  bool ok = true;
  for (int k = 0; k < m->entry->nparams && ok; k++) {
    if (args[k]) continue;
    if (interrupted && *interrupted) {
      ok = fx_error_set(err, NULL, 0, 0, "interrupted: stopped making the inputs");
      break;
    }
    const IrInstr *p = m->entry->params[k];
    if (!p) {
      ok = fx_error_set(err, NULL, 0, 0, "the entry's parameter %d is missing", k);
      break;
    }
    args[k] = rt_tensor_for_shape(&p->shape, err);
    if (!args[k]) {
      ok = false;
      break;
    }
    if (args[k]->type == IR_TUPLE) {
      for (int e = 0; e < args[k]->ntuple && ok; e++)
        if (!fill_pieces(args[k]->tuple[e], seed, (uint64_t)k * 1000 + (uint64_t)e, interrupted, progress, &done, total))
          ok = fx_error_set(err, NULL, 0, 0, "interrupted: stopped making the inputs");
      continue;
    }
    if (!fill_pieces(args[k], seed, (uint64_t)k, interrupted, progress, &done, total)) {
      ok = fx_error_set(err, NULL, 0, 0, "interrupted: stopped making the inputs");
      break;
    }
    rt_uniform_apply(args[k], rt_uniform_for(rules, nrules, p->name));
  }
  if (progress && total > (64u << 20)) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  return ok;
}

void rt_inputs_free(const IrModule *m, RtTensor **args) {
  if (!args) return;
  for (int k = 0; k < m->entry->nparams; k++) rt_tensor_unref(args[k]);
  fx_free(args);
}

int rt_uniform_unmatched(RtUniform *rules, int n, const IrModule *const *mods, int nmods) {
  for (int m = 0; m < nmods; m++) {
    const IrComputation *e = mods[m] ? mods[m]->entry : NULL;
    for (int q = 0; e && q < e->nparams; q++) {
      RtUniform *r = e->params[q] ? rt_uniform_for(rules, n, e->params[q]->name) : NULL;
      if (r) r->matched = true;
    }
  }
  for (int k = 0; k < n; k++)
    if (!rules[k].matched) return k;
  return -1;
}

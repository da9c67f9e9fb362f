/* inputs.c — input rules for the commands that run a stage (`run`, `profile`, `compare`,
 * `variants --run`): `--uniform PATTERN=LO:HI` draws the floats of the parameters whose name
 * matches a shell pattern from [LO, HI) instead of the default [-1, 1).
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

#include "../runtime/runtime.h"
#include "args.h"
#include "repl.h"

bool repl_uniform_parse(Session *s, char **argv, int argi, ReplUniform *r, FxError *err) {
  const char *arg = argv[argi];
  const char *msg = "--uniform needs PATTERN=LO:HI, e.g. --uniform 'actions=0:1'";
  const char *eq = strrchr(arg, '=');
  if (!eq || eq == arg) return repl_arg_error(s, err, argi, "%s", msg);
  const char *colon = strchr(eq + 1, ':');
  if (!colon) return repl_arg_error(s, err, argi, "%s", msg);
  char lo_text[64];
  size_t ll = (size_t)(colon - (eq + 1));
  if (ll == 0 || ll >= sizeof lo_text) return repl_arg_error(s, err, argi, "%s", msg);
  memcpy(lo_text, eq + 1, ll);
  lo_text[ll] = 0;
  char *e1, *e2;
  errno = 0;
  double lo = strtod(lo_text, &e1);
  double hi = strtod(colon + 1, &e2);
  if (errno || *e1 || e2 == colon + 1 || *e2 || !isfinite(lo) || !isfinite(hi))
    return repl_arg_error(s, err, argi, "%s", msg);
  if (!(lo < hi)) return repl_arg_error(s, err, argi, "--uniform needs LO < HI (got %g:%g)", lo, hi);
  size_t plen = (size_t)(eq - arg);
  if (plen >= sizeof r->pattern) return repl_arg_error(s, err, argi, "--uniform: the pattern is too long");
  memcpy(r->pattern, arg, plen);
  r->pattern[plen] = 0;
  r->lo = lo;
  r->hi = hi;
  r->argi = argi;
  r->matched = false;
  return true;
}

ReplUniform *repl_uniform_for(ReplUniform *rules, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (fnmatch(rules[k].pattern, name, 0) == 0) return &rules[k];
  return NULL;
}

void repl_uniform_apply(struct RtTensor *t, const ReplUniform *r) {
  if (!t || !r || t->type == IR_TUPLE || !ir_type_is_float(t->type)) return;
  for (int64_t q = 0; q < t->count; q++) {
    double v = rt_get_f(t, q); /* in [-1, 1) */
    double u = r->lo + (v + 1) * 0.5 * (r->hi - r->lo);
    rt_set_f(t, q, u < r->hi ? u : r->lo);
  }
}

bool repl_uniform_check(Session *s, ReplUniform *rules, int n, const IrModule *const *mods, int nmods, const char *scope,
                        FxError *err) {
  for (int m = 0; m < nmods; m++) {
    const IrComputation *e = mods[m] ? mods[m]->entry : NULL;
    for (int q = 0; e && q < e->nparams; q++) {
      ReplUniform *r = e->params[q] ? repl_uniform_for(rules, n, e->params[q]->name) : NULL;
      if (r) r->matched = true;
    }
  }
  for (int k = 0; k < n; k++)
    if (!rules[k].matched)
      return repl_arg_error(s, err, rules[k].argi, "--uniform '%s' names no parameter%s", rules[k].pattern, scope);
  return true;
}

bool repl_inputs_fill(const IrModule *m, struct RtTensor **args, uint64_t seed, ReplUniform *rules, int nrules,
                      FxError *err) {
  return repl_inputs_fill_interruptible(m, args, seed, rules, nrules, NULL, false, err);
}

/* Elements filled between two looks at the Ctrl-C flag: a few milliseconds of work. */
#define FILL_PIECE (1 << 20)

/* Fills t (stream) in pieces; false when interrupted. */
static bool fill_pieces(struct RtTensor *t, uint64_t seed, uint64_t stream, volatile int *interrupted, bool progress,
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

bool repl_inputs_fill_interruptible(const IrModule *m, struct RtTensor **args, uint64_t seed, ReplUniform *rules,
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
    repl_uniform_apply(args[k], repl_uniform_for(rules, nrules, p->name));
  }
  if (progress && total > (64u << 20)) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  return ok;
}

void repl_inputs_free(const IrModule *m, struct RtTensor **args) {
  if (!args) return;
  for (int k = 0; k < m->entry->nparams; k++) rt_tensor_unref(args[k]);
  fx_free(args);
}

/* pass_check.h — what the pass tests share: a decision log and a decision count, running one pass
 * on a module (which must verify after) or as a pipeline stage, parsing HLO and .fx text, the
 * reference interpreter's result before and after a pass, an instruction's printed line, and
 * opcode counts. Included by tests/passes/test_*.c and tests/fusion/test_gemm_fusion.c. */
#ifndef FXPLAIN_PASS_CHECK_H
#define FXPLAIN_PASS_CHECK_H

#include "../check.h"
#include "../../compiler/fx/fx.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../runtime/runtime.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/plan/plan.h"

typedef struct {
  char buf[16384];
  int n;
} Log;

static inline void log_emit(void *ctx, const PassDecision *d) {
  Log *l = ctx;
  size_t len = strlen(l->buf);
  snprintf(l->buf + len, sizeof l->buf - len, "%s %s: %s\n", d->pass, d->action, d->detail);
  l->n++;
}

/* Runs pass p on m in place for device dev (NULL: none); returns whether it changed m. The
 * module must verify after. */
static inline bool run_pass_for(const Pass *p, IrModule *m, Log *log, const DeviceProfile *dev) {
  DecisionSink sink = {log_emit, log};
  PassSettings settings;
  pass_settings_default(&settings);
  FxError err;
  fx_error_clear(&err);
  PassContext cx = {&sink, dev, &settings, 1, p->name, &err, NULL, false};
  bool changed = false;
  bool ok = p->run(m, &cx, &changed);
  if (!ok) fx_error_print(stderr, &err);
  CHECK(ok);
  FxError verr;
  fx_error_clear(&verr);
  bool v = ir_verify(m, &verr);
  if (!v) fx_error_print(stderr, &verr);
  CHECK(v);
  return changed;
}

static inline bool run_pass(const Pass *p, IrModule *m, Log *log) { return run_pass_for(p, m, log, NULL); }

/* A decision count: accepted and rejected, the last decision's detail and the last accepted one's. */
typedef struct {
  int accepted, rejected;
  char last[800], last_accepted[800];
} Seen;

static inline void seen_emit(void *ctx, const PassDecision *d) {
  Seen *s = ctx;
  if (d->accepted) s->accepted++;
  else s->rejected++;
  snprintf(s->last, sizeof s->last, "%s", d->detail ? d->detail : "");
  if (d->accepted) snprintf(s->last_accepted, sizeof s->last_accepted, "%s", s->last);
}

/* Runs pass p as a pipeline stage on m for device dev, decisions to sink; the stage's module (m
 * itself, or its replacement with m freed). The pass must succeed. */
static inline IrModule *run_stage(const Pass *p, IrModule *m, const DeviceProfile *dev, DecisionSink *sink,
                                  PassSettings *settings) {
  FxError err;
  fx_error_clear(&err);
  PassContext cx = {.sink = sink, .device = dev, .settings = settings, .err = &err, .pass = p->name};
  IrModule *out = NULL;
  bool changed = false;
  bool ok = pass_run_stage(p, m, &cx, &out, &changed);
  if (!ok) fprintf(stderr, "%s: %s\n", p->name, err.msg);
  CHECK(ok);
  if (out) {
    ir_module_free(m);
    m = out;
  }
  return m;
}

/* Runs the named passes in order as pipeline stages on m (freed) for device dev, their decisions
 * counted in seen; the last stage's module. */
static inline IrModule *run_named_passes(IrModule *m, const char *dev, const char *const *names, int n, Seen *seen) {
  memset(seen, 0, sizeof *seen);
  DecisionSink sink = {seen_emit, seen};
  PassSettings ps;
  pass_settings_default(&ps);
  for (int k = 0; k < n && m; k++) m = run_stage(pass_lookup(names[k]), m, device_lookup(dev), &sink, &ps);
  return m;
}

/* The first call in c to the known custom-call target `which`; NULL when none. */
static inline IrInstr *find_call(const IrComputation *c, PlanCustomCall which) {
  for (int k = 0; k < c->ninstrs; k++)
    if (plan_custom_call(c->instrs[k]) == which) return c->instrs[k];
  return NULL;
}

static inline IrModule *hlo(const char *text) {
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "t.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  return m;
}

static inline IrModule *fx(const char *text) {
  FxState *st = fx_state_new();
  FxError e;
  fx_error_clear(&e);
  IrModule *m = NULL;
  if (fx_feed(st, text, "t.fx", 1, &e)) m = fx_build_module(st, "t", &e);
  if (!m) fx_error_print(stderr, &e);
  fx_state_free(st);
  return m;
}

/* HLO text that must parse. */
static inline IrModule *hlo_ok(const char *text) {
  IrModule *m = hlo(text);
  CHECK(m != NULL);
  return m;
}

static inline const char *line_of(const IrModule *m, const char *name) {
  static char buf[1024];
  IrInstr *i = ir_module_find_instr(m, name);
  if (!i) return "(none)";
  hlo_format_instr(i, buf, sizeof buf);
  return buf;
}

/* Instructions with opcode op: in computation c (count_op_in), in the whole module (count_op). */
static inline int count_op_in(const IrComputation *c, IrOpcode op) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) n += c->instrs[k]->op == op;
  return n;
}

static inline int count_op(const IrModule *m, IrOpcode op) {
  int n = 0;
  for (int c = 0; c < m->ncomps; c++) n += count_op_in(m->comps[c], op);
  return n;
}

/* Runs m on the interpreter with each argument k filled by fill(argument, seed, k); returns the
 * result, NULL (the error printed) when the run fails. */
static inline RtTensor *interp_filled(const IrModule *m, void (*fill)(RtTensor *, uint64_t, uint64_t), uint64_t seed) {
  FxError e;
  fx_error_clear(&e);
  int np = m->entry->nparams;
  RtTensor *args[16];
  for (int k = 0; k < np && k < 16; k++) {
    args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &e);
    if (args[k]) fill(args[k], seed, (uint64_t)k);
  }
  RtOptions o;
  memset(&o, 0, sizeof o);
  o.seed = 1;
  RtCounters cnt;
  memset(&cnt, 0, sizeof cnt);
  RtTensor *out = NULL;
  if (!rt_interp_run(m, args, np, &o, &out, &cnt, &e)) {
    fx_error_print(stderr, &e);
    out = NULL;
  }
  for (int k = 0; k < np && k < 16; k++) rt_tensor_unref(args[k]);
  return out;
}

/* Runs m on the interpreter with arguments filled from seed (interp: seed 7); returns the
 * result, NULL (the error printed) when the run fails. */
static inline RtTensor *interp_seeded(const IrModule *m, uint64_t seed) { return interp_filled(m, rt_tensor_fill_random, seed); }

static inline RtTensor *interp(const IrModule *m) { return interp_seeded(m, 7); }

/* The interpreter's results of the HLO text and of rewritten (its rewrite) agree, on arguments
 * filled from seed. */
static inline void check_same_values(const char *text, const IrModule *rewritten, uint64_t seed) {
  IrModule *orig = hlo_ok(text);
  if (!orig) return;
  RtTensor *want = interp_seeded(orig, seed), *got = interp_seeded(rewritten, seed);
  CHECK(want && got);
  if (want && got) {
    RtCompare cmp;
    rt_compare(got, want, &cmp);
    if (!cmp.ok) fprintf(stderr, "%s\n", cmp.what);
    CHECK(cmp.ok);
  }
  rt_tensor_unref(want);
  rt_tensor_unref(got);
  ir_module_free(orig);
}

/* Runs pass p (for device dev) and checks the result agrees with the module before it, on the
 * interpreter. */
static inline bool run_pass_same_numbers_for(const Pass *p, IrModule *m, Log *log, const DeviceProfile *dev) {
  RtTensor *before = interp(m);
  bool changed = run_pass_for(p, m, log, dev);
  RtTensor *after = interp(m);
  CHECK(before && after);
  if (before && after) {
    RtCompare c;
    rt_compare(after, before, &c);
    if (!c.ok) fprintf(stderr, "%s changed the numbers: %s\n", p->name, c.what);
    CHECK(c.ok);
  }
  rt_tensor_unref(before);
  rt_tensor_unref(after);
  return changed;
}

static inline bool run_pass_same_numbers(const Pass *p, IrModule *m, Log *log) {
  return run_pass_same_numbers_for(p, m, log, NULL);
}

#endif

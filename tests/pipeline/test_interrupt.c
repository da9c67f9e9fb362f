/* test_interrupt.c — Ctrl-C inside a pass (issue 18): a pass sees PassContext.interrupted between
 * its steps and stops; pass_run_stage drops its half-done work; the engine keeps the stages before
 * it, as they were, with a message naming the pass; and with the flag clear every decision is the
 * same as before. The flag is set by the test (before a run, or by the sink after a pass's first
 * decision), as the shell's SIGINT handler sets it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "../../explain/engine.h"
#include "../../compiler/passes/passes.h"

static volatile int flag;
static char path[64];

/* The softmax of scripts/softmax.fx, statements only (load_file takes no shell commands). */
static void write_softmax(void) {
  snprintf(path, sizeof path, "/tmp/fxplain-interrupt-%d.fx", (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs("param x: f32[1024, 512]\nm = max(x, axis=1)\ne = exp(x - reshape(m, [1024, 1]))\n"
        "s = sum(e, axis=1)\ny = e / reshape(s, [1024, 1])\nout y\n",
        f);
  fclose(f);
}

typedef struct {
  int n;
  bool stop_after_first;
} Count;

static void count_emit(void *ctx, const PassDecision *d) {
  (void)d;
  Count *c = ctx;
  c->n++;
  if (c->stop_after_first) flag = 1;
}

static void summaries(ExplainEngine *e, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int k = 1; k < e->nstages && len < n; k++) {
    char one[256];
    explain_engine_stage_summary(e, k, one, sizeof one);
    len += (size_t)snprintf(buf + len, n - len, "%d %s: %s\n", k, explain_engine_stage_pass(e, k), one);
  }
}

TEST(engine_stops_before_a_pass_and_goes_on_after) {
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_load_file(&e, path, &err));
  e.interrupted = &flag;
  flag = 1;
  CHECK(!explain_engine_run_next(&e, &err));
  CHECK_CONTAINS(err.msg, "interrupted: call-inliner (stage 1) was stopped before it finished; stages 0 to 0 are as they were");
  CHECK(e.nstages == 1);
  flag = 0;
  fx_error_clear(&err);
  int last = explain_engine_last_stage(&e);
  CHECK(explain_engine_ensure(&e, last, &err));
  /* The same decisions as an engine that was never interrupted. */
  ExplainEngine f;
  CHECK(explain_engine_init(&f));
  CHECK(explain_engine_load_file(&f, path, &err));
  CHECK(explain_engine_ensure(&f, last, &err));
  char a[4096], b[4096];
  summaries(&e, a, sizeof a);
  summaries(&f, b, sizeof b);
  CHECK_STR(a, b);
  CHECK(explain_log_total(e.log) == explain_log_total(f.log));
  explain_engine_fini(&e);
  explain_engine_fini(&f);
}

/* Runs pass `name` (of the engine's pipeline) on the stage before it twice: whole, then with
 * Ctrl-C after its first decision. */
static void stops_between_steps(const char *pipeline, const char *name) {
  ExplainEngine e;
  CHECK(explain_engine_init(&e));
  FxError err;
  fx_error_clear(&err);
  CHECK(explain_engine_load_file(&e, path, &err));
  const Pipeline *pl = pipeline_lookup(pipeline);
  CHECK(pl != NULL);
  if (pl) explain_engine_set_pipeline(&e, pl);
  int k = explain_engine_stage_of_pass(&e, name, 0);
  CHECK(k > 0 && explain_engine_ensure(&e, k - 1, &err));
  const IrModule *in = explain_engine_module(&e, k - 1);
  const Pass *p = pl ? pl->passes[k - 1] : NULL;
  CHECK(p != NULL && strcmp(p->name, name) == 0);
  if (!p) {
    explain_engine_fini(&e);
    return;
  }
  /* Uninterrupted: every decision. */
  Count all = {0}, some = {.stop_after_first = true};
  DecisionSink sa = {count_emit, &all}, ss = {count_emit, &some};
  PassSettings st;
  pass_settings_default(&st);
  IrModule *out = NULL;
  bool changed = false;
  flag = 0;
  PassContext cx = {&sa, device_lookup("h100"), &st, k, p->name, &err, &flag, false};
  CHECK(pass_run_stage(p, in, &cx, &out, &changed));
  CHECK(out != NULL && changed);
  if (out) ir_module_free(out);
  CHECK(all.n > 2);
  /* Ctrl-C after its first decision: it stops at the next step, and its work is dropped. */
  out = NULL;
  int before = ir_module_instr_count(in);
  PassContext cy = {&ss, device_lookup("h100"), &st, k, p->name, &err, &flag, false};
  CHECK(!pass_run_stage(p, in, &cy, &out, &changed));
  CHECK(out == NULL);
  CHECK(some.n >= 1 && some.n < all.n);
  char want[128];
  snprintf(want, sizeof want, "interrupted: %s was stopped before it finished", name);
  CHECK_CONTAINS(err.msg, want);
  CHECK(ir_module_instr_count(in) == before); /* the input is untouched */
  flag = 0;
  explain_engine_fini(&e);
}

TEST(a_fusion_pass_stops_between_steps) { stops_between_steps("classic", "instruction-fusion"); }

TEST(priority_fusion_stops_at_the_next_producer) { stops_between_steps("priority", "priority-fusion"); }

int main(void) {
  write_softmax();
  RUN(engine_stops_before_a_pass_and_goes_on_after);
  RUN(a_fusion_pass_stops_between_steps);
  RUN(priority_fusion_stops_at_the_next_producer);
  unlink(path);
  return check_summary();
}

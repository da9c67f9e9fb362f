/* test_alloc_pipeline.c — allocation-failure injection through the passes.
 *
 * A small computation with fusible ops, a reduction, a concatenate with several users, a random
 * number call and a loop is run through every pass of both pipelines with the Nth allocation
 * failing, for every N until the pipeline completes. Each run must end in a clean error (the
 * error record set, naming what failed) or succeed; never crash or leak (the ASan build checks). */
#include "../check.h"
#include "../../compiler/plan/plan.h"
#include "../../compiler/fx/fx.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/ir/ir.h"

static const char *SRC =
    "let n = 8\n"
    "param s0: f32[n, 4]\n"
    "param k0: u32[2]\n"
    "loop 3 carry (s = s0, k = k0) {\n"
    "  r = rand(f32[n, 2], key=k)\n"
    "  k = k + 1\n"
    "  a = s[:, 0] * 2 + r[:, 0]\n"
    "  b = tanh(s[:, 1]) - r[:, 1]\n"
    "  c = stack([a, b, a * b, a + b], axis=1)\n"
    "  s = select(c > 0, c, c * 0.5) + exp(c)\n"
    "}\n"
    "m = sum(s, axis=1)\n"
    "out s, m\n";

static void discard(void *ctx, const PassDecision *d) {
  (void)ctx;
  (void)d;
}

/* Runs every pass of pipeline pl on a clone of m; returns 1 when all ran, 0 on a clean error,
 * -1 on an error without a message. */
static int run_pipeline(const IrModule *m, const Pipeline *pl) {
  PassSettings settings;
  pass_settings_default(&settings);
  DecisionSink sink = {discard, NULL};
  IrModule *cur = ir_module_clone(m);
  if (!cur) return 0;
  int result = 1;
  for (int k = 0; k < pl->npasses; k++) {
    FxError err;
    fx_error_clear(&err);
    PassContext cx = {&sink, device_default(), &settings, k + 1, pl->passes[k]->name, &err, NULL, false};
    IrModule *next = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[k], cur, &cx, &next, &changed)) {
      result = err.set ? 0 : -1;
      if (!err.set) fprintf(stderr, "pass %s failed without an error\n", pl->passes[k]->name);
      break;
    }
    if (next) {
      ir_module_free(cur);
      cur = next;
    }
  }
  ir_module_free(cur);
  return result;
}

TEST(every_allocation_failure_is_a_clean_error) {
  FxState *st = fx_state_new();
  FxError err;
  fx_error_clear(&err);
  CHECK(fx_feed(st, SRC, "alloc.fx", 1, &err));
  IrModule *m = fx_build_module(st, "alloc", &err);
  fx_state_free(st);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(ir_verify(m, &err));
  for (int p = 0; p < pipeline_count(); p++) {
    const Pipeline *pl = pipeline_at(p);
    CHECK(run_pipeline(m, pl) == 1); /* completes without injection */
    int clean = 0;
    long n;
    for (n = 0; n < 200000; n++) {
      fx_alloc_fail_after(n);
      int r = run_pipeline(m, pl);
      fx_alloc_fail_after(-1);
      CHECK(r >= 0);
      if (r < 0) break;
      if (r == 1) break;
      clean++;
    }
    CHECK(n < 200000);
    CHECK(clean > 0);
    printf("%s: %d injected allocation failures, each a clean error\n", pl->name, clean);
  }
  ir_module_free(m);
}

int main(void) {
  RUN(every_allocation_failure_is_a_clean_error);
  return check_summary();
}

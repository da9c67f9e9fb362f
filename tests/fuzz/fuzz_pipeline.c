/* fuzz_pipeline.c — libFuzzer target: HLO in, then every pass of both pipelines.
 *
 * A module that parses and verifies is run through the classic and the priority pipeline one
 * stage at a time, as `step all` does; every stage must verify (pass_run_stage checks it) or
 * fail with an error naming the pass — never crash or leak. */
#include <stdint.h>
#include <stdlib.h>

#include "../../compiler/plan/plan.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/ir/ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void discard(void *ctx, const PassDecision *d) {
  (void)ctx;
  if (!d->pass) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64 * 1024) return 0;
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse((const char *)data, size, "fuzz.hlo", &err);
  if (!m) return 0;
  if (!ir_verify(m, &err)) {
    ir_module_free(m);
    return 0;
  }
  PassSettings settings;
  pass_settings_default(&settings);
  DecisionSink sink = {discard, NULL};
  for (int p = 0; p < pipeline_count(); p++) {
    const Pipeline *pl = pipeline_at(p);
    IrModule *cur = ir_module_clone(m);
    if (!cur) break;
    for (int k = 0; k < pl->npasses; k++) {
      FxError perr;
      fx_error_clear(&perr);
      PassContext cx = {&sink, device_default(), &settings, k + 1, pl->passes[k]->name, &perr, NULL, false};
      IrModule *next = NULL;
      bool changed = false;
      if (!pass_run_stage(pl->passes[k], cur, &cx, &next, &changed)) {
        if (!perr.set) abort();
        break;
      }
      if (next) {
        ir_module_free(cur);
        cur = next;
      }
    }
    ir_module_free(cur);
  }
  ir_module_free(m);
  return 0;
}

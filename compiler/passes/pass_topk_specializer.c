/* pass_topk_specializer.c — XLA:GPU's TopkSpecializer (topk_specializer.cc,
 * SmallBufferOptimization), early in the optimization pipeline: a top-k small enough for XLA's own
 * one-pass kernel becomes a call to it instead of a sort:
 *
 *   topk(x: bf16[1,50000]), k=10, largest=true
 *     ->  custom-call(x), custom_call_target="__gpu$TopK"  : (bf16[1,10], s32[1,10])
 *
 * XLA gets there in three steps: the pre-SPMD TopkDecomposer turns the topk op into a sort and
 * slices, TopkRewriter recognizes a sort+slice whose comparator is "greater than" as a custom call
 * "TopK", and TopkSpecializer makes that "__gpu$TopK" when the data is f32 or bf16, of rank one or
 * two (the last dimension sorted), with k <= 16 and at least 1,024 elements per row. fxplain does
 * the three at once on the topk op. XLA keeps the comparator on the call only so that tests can
 * print it back; fxplain's call has none (the kernel always takes the largest).
 *
 * Every other topk stays a topk: XLA runs it as a sort followed by slices of the first k, and
 * fxplain plans its topk op as one sort kernel already. Fused computations are left alone; only
 * for GPU devices. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define TOPK_MAX_K 16    /* max_k */
#define TOPK_MIN_N 1024  /* min_n */

/* Why XLA's kernel cannot take this topk, or NULL when it can. */
static const char *not_specializable(const IrInstr *t, int64_t *k, int64_t *n) {
  const IrInstr *x = t->operands[0];
  const IrShape *s = &x->shape;
  *k = *n = 0;
  if (t->shape.type != IR_TUPLE || t->shape.ntuple != 2 || !ir_shape_is_array(s)) return "its result is not (values, indices)";
  const char *lg = ir_attr_text(t, "largest");
  if (lg && strcmp(lg, "false") == 0) return "it takes the smallest (largest=false), which TopkRewriter does not match";
  if (s->type != IR_F32 && s->type != IR_BF16) return "XLA's top-k kernel takes f32 and bf16 only";
  if (s->rank < 1 || s->rank > 2) return "XLA's top-k kernel takes [n] or [batch, n] only";
  *n = s->dims[s->rank - 1];
  *k = t->shape.tuple[0].rank == s->rank ? t->shape.tuple[0].dims[s->rank - 1] : 0;
  if (*k > TOPK_MAX_K) return "k is larger than 16, the most XLA's top-k kernel keeps";
  if (*n < TOPK_MIN_N) return "fewer than 1,024 elements per row, too few for XLA's top-k kernel";
  return NULL;
}

static bool specialize(IrInstr *t, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrComputation *c = t->parent;
  IrModule *m = c->module;
  int64_t k, n;
  const char *no = not_specializable(t, &k, &n);
  if (no) {
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = t->name};
    pass_emit(cx->sink, &d, "%s stays a topk (a sort kernel, as XLA's TopkDecomposer makes it): %s", t->name, no);
    return true;
  }
  IrInstr *x = t->operands[0];
  IrInstr *call = ir_instr_new_before(c, t, IR_OP_CUSTOM_CALL, &t->shape, &x, 1, ir_module_series_name(m, "custom-call", false));
  if (!call) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  ir_attr_set_text(call, "custom_call_target", "\"__gpu$TopK\"");
  ir_attr_set_text(call, "api_version", "API_VERSION_TYPED_FFI");
  const char *meta = ir_attr_text(t, "metadata");
  if (meta) ir_attr_set_text(call, "metadata", meta);
  call->loc = t->loc;
  char tname[256];
  snprintf(tname, sizeof tname, "%s", t->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = tname,
                    .consumer = call->name, .result = call->name, .accepted = true};
  pass_metric(&d, "k", (double)k);
  pass_metric(&d, "n", (double)n);
  simp_replace(t, call);
  pass_emit(cx->sink, &d,
            "%s (the largest %lld of %lld per row) becomes %s, a call to XLA's own top-k kernel (__gpu$TopK) "
            "instead of a sort: a library kernel nothing fuses into",
            tname, (long long)k, (long long)n, call->name);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true; /* XLA:GPU's rewrite: nothing for the host */
  return simp_rewrite_each(m, cx, IR_OP_TOPK, specialize, NULL, false, changed);
}

const Pass pass_topk_specializer = {
    "topk-specializer",
    "a topk small enough for XLA's own top-k kernel becomes a call to it, __gpu$TopK (XLA:GPU's TopkSpecializer)",
    run,
};

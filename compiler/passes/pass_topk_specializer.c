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
 * Every other topk becomes what XLA's TopkDecomposer makes of it: a stable sort of the values
 * and their positions, and slices of the first k. Fused computations are left alone; only for
 * GPU devices. */
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

/* TopkDecomposer (topk_rewriter.cc): the topk becomes a stable sort of the input and an iota of
 * its positions along the last dimension, with XLA's "compare-greater-than" (or less-than for
 * the smallest) on the values (a total order for floats, CreateScalarGtComputation), and slices
 * of the first k of each; stable-sort-expander then breaks ties by the iota and sort-iota-fusion
 * makes sort and iota one kernel, as XLA's passes do. False only when out of memory. */
static bool decompose(IrInstr *t, PassContext *cx, const char *why, bool *changed) {
  IrComputation *c = t->parent;
  IrModule *m = c->module;
  IrInstr *x = t->operands[0];
  const IrShape *xs = &x->shape;
  int r = xs->rank;
  const char *lg = ir_attr_text(t, "largest");
  bool largest = !(lg && strcmp(lg, "false") == 0);
  /* the comparator: p.0.lhs, p.0.rhs (values), p.1.lhs, p.1.rhs (positions) */
  IrComputation *cmp = ir_computation_new(m, ir_module_series_name(m, largest ? "compare-greater-than" : "compare-less-than", true));
  if (!cmp) return false;
  cmp->has_signature = true;
  IrShape vs = ir_shape_scalar(xs->type), is = ir_shape_scalar(IR_S32), ps = ir_shape_scalar(IR_PRED);
  IrInstr *p[4];
  const char *pn[4] = {"p.0.lhs", "p.0.rhs", "p.1.lhs", "p.1.rhs"};
  for (int q = 0; q < 4; q++)
    if (!(p[q] = ir_instr_new(cmp, IR_OP_PARAMETER, q < 2 ? &vs : &is, NULL, 0, ir_module_series_name(m, pn[q], false))))
      return false;
  IrInstr *cops[2] = {p[0], p[1]};
  IrInstr *root = ir_instr_new(cmp, IR_OP_COMPARE, &ps, cops, 2, ir_module_series_name(m, "compare", false));
  if (!root || !ir_computation_set_params(cmp, p, 4)) return false;
  ir_attr_set_text(root, "direction", largest ? "GT" : "LT");
  if (ir_type_is_float(xs->type)) ir_attr_set_text(root, "type", "TOTALORDER");
  ir_set_root(cmp, root);
  simp_place_before(m, cmp, c);
  /* the iota of positions, the sort, the slices */
  IrShape ios = simp_shape_retyped(&m->arena, xs, IR_S32);
  IrInstr *iota = simp_add_like(c, t, IR_OP_IOTA, &ios, NULL, 0, "iota", t);
  if (!iota) return false;
  ir_attr_set_int(iota, "iota_dimension", r - 1);
  IrShape parts[2] = {*xs, ios};
  IrShape tup = {.type = IR_TUPLE, .ntuple = 2, .tuple = parts};
  IrInstr *sops[2] = {x, iota};
  IrInstr *sort = simp_add_like(c, t, IR_OP_SORT, &tup, sops, 2, "sort", t);
  if (!sort) return false;
  int64_t sd = r - 1;
  ir_attr_set_dims(sort, "dimensions", &sd, 1);
  ir_attr_set_text(sort, "is_stable", "true");
  ir_attr_set_comp(sort, "to_apply", cmp);
  IrInstr *sl[2];
  for (int q = 0; q < 2; q++) {
    IrInstr *g = simp_add_like(c, t, IR_OP_GET_TUPLE_ELEMENT, &parts[q], &sort, 1, "get-tuple-element", t);
    if (!g) return false;
    ir_attr_set_int(g, "index", q);
    const IrShape *os = &t->shape.tuple[q];
    int64_t st[IR_MAX_RANK] = {0}, lim[IR_MAX_RANK];
    memcpy(lim, os->dims, sizeof(int64_t) * (size_t)r);
    if (!(sl[q] = simp_add_like(c, t, IR_OP_SLICE, os, &g, 1, "slice", t))) return false;
    ir_attr_set_slice(sl[q], st, lim, NULL, r);
  }
  IrInstr *res = simp_add_like(c, t, IR_OP_TUPLE, &t->shape, sl, 2, "tuple", t);
  if (!res) return false;
  char tname[256];
  snprintf(tname, sizeof tname, "%s", t->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = tname, .result = sort->name,
                    .accepted = true};
  simp_replace(t, res);
  pass_emit(cx->sink, &d,
            "%s becomes %s, a stable sort of its input and an iota of positions (%s), and slices of the first %lld "
            "(XLA's TopkDecomposer): %s",
            tname, sort->name, cmp->name, (long long)t->shape.tuple[0].dims[r - 1], why);
  *changed = true;
  return true;
}

static bool specialize(IrInstr *t, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  IrComputation *c = t->parent;
  IrModule *m = c->module;
  int64_t k, n;
  const char *no = not_specializable(t, &k, &n);
  if (no) {
    const IrShape *xs = &t->operands[0]->shape;
    if (t->shape.type == IR_TUPLE && t->shape.ntuple == 2 && ir_shape_is_array(xs) && xs->rank >= 1 &&
        t->shape.tuple[0].rank == xs->rank && t->shape.tuple[1].rank == xs->rank)
      return decompose(t, cx, no, changed) || fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = t->name};
    pass_emit(cx->sink, &d, "%s stays a topk (a sort kernel): %s", t->name, no);
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

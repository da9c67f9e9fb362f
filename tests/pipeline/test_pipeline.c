/* test_pipeline.c — the pass registry, pipelines, settings, and the simplification passes this
 * area owns (dce, cse, tuple-simplifier): the exact rewrites each makes and reports. */
#include <stdlib.h>

#include <dirent.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/passes/passes.h"
#include "../../runtime/runtime.h"

/* A sink that appends "action producer->result: detail" lines to a buffer. */
typedef struct {
  char buf[8192];
  int n;
} Log;

static void log_emit(void *ctx, const PassDecision *d) {
  Log *l = ctx;
  size_t len = strlen(l->buf);
  snprintf(l->buf + len, sizeof l->buf - len, "%s %s %s%s%s: %s\n", d->pass, d->action,
           d->producer ? d->producer : "-", d->result ? " -> " : "", d->result ? d->result : "", d->detail);
  l->n++;
}

static IrModule *new_module(IrComputation **entry) {
  IrModule *m = ir_module_new("t");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  *entry = c;
  return m;
}

static IrShape vec(IrModule *m, int64_t n) { return ir_shape_array(&m->arena, IR_F32, 1, &n); }

static IrInstr *param(IrComputation *c, const IrShape *s, int n, const char *name) {
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, s, NULL, 0, name);
  p->param_number = n;
  IrInstr **grown = arena_alloc(&c->module->arena, sizeof(IrInstr *) * (size_t)(n + 1));
  for (int k = 0; k < c->nparams; k++) grown[k] = c->params[k];
  grown[n] = p;
  c->params = grown;
  if (c->nparams < n + 1) c->nparams = n + 1;
  return p;
}

static IrInstr *op2(IrComputation *c, IrOpcode op, IrInstr *a, IrInstr *b, const char *name) {
  IrInstr *ops[2] = {a, b};
  return ir_instr_new(c, op, &a->shape, ops, 2, name);
}

static IrInstr *op1(IrComputation *c, IrOpcode op, IrInstr *a, const char *name) {
  return ir_instr_new(c, op, &a->shape, &a, 1, name);
}

static bool run_pass(const char *name, IrModule *m, Log *log, bool *changed) {
  FxError err;
  fx_error_clear(&err);
  DecisionSink sink = {log_emit, log};
  PassSettings st;
  pass_settings_default(&st);
  PassContext cx = {&sink, device_default(), &st, 1, name, &err, NULL, false};
  const Pass *p = pass_lookup(name);
  if (!p) return false;
  bool ok = p->run(m, &cx, changed);
  if (!ok) fx_error_print(stderr, &err);
  return ok;
}

static bool live(IrModule *m, const char *name) { return ir_module_find_instr(m, name) != NULL; }

TEST(registry_and_pipelines) {
  CHECK(pass_count() >= 3);
  for (int k = 0; k < pass_count(); k++) CHECK(pass_lookup(pass_at(k)->name) == pass_at(k));
  CHECK(pass_lookup("dce") == &pass_dce);
  CHECK(pass_lookup("cse") == &pass_cse);
  CHECK(pass_lookup("tuple-simplifier") == &pass_tuple_simplifier);
  CHECK(pass_lookup("no-such-pass") == NULL);
  CHECK(pipeline_count() == 2);
  const Pipeline *c = pipeline_lookup("classic"), *p = pipeline_lookup("priority");
  CHECK(c && p && c != p);
  CHECK(pipeline_lookup("fancy") == NULL);
  /* Every pass a pipeline runs is registered (so `step PASS` and `help` know it). */
  for (int i = 0; i < pipeline_count(); i++) {
    const Pipeline *pl = pipeline_at(i);
    CHECK(pl->npasses >= 3);
    for (int k = 0; k < pl->npasses; k++) CHECK(pass_lookup(pl->passes[k]->name) != NULL);
  }
  /* Simplification comes first, in XLA's order: cse before dce before tuple-simplifier. */
  int icse = -1, idce = -1, ituple = -1;
  for (int k = 0; k < c->npasses; k++) {
    if (c->passes[k] == &pass_cse) icse = k;
    if (c->passes[k] == &pass_dce) idce = k;
    if (c->passes[k] == &pass_tuple_simplifier) ituple = k;
  }
  CHECK(icse >= 0 && icse < idce && idce < ituple);
  /* The priority pipeline ends as XLA's fusion pipeline does (FusionPipeline): priority-fusion,
   * cse and dce, multi_output_fusion, cse and dce; the cleanup after fusion has its own names. */
  CHECK(pass_lookup("fusion-cse") == &pass_fusion_cse && pass_lookup("fusion-dce") == &pass_fusion_dce);
  const char *tail[] = {"priority-fusion", "fusion-cse", "fusion-dce", "multi_output_fusion", "fusion-cse", "fusion-dce"};
  CHECK(p->npasses >= 6);
  for (int k = 0; k < 6 && p->npasses >= 6; k++) CHECK_STR(p->passes[p->npasses - 6 + k]->name, tail[k]);
  for (int k = 0; k < c->npasses; k++) CHECK(c->passes[k] != &pass_fusion_cse && c->passes[k] != &pass_fusion_dce);
}

TEST(settings) {
  PassSettings s;
  pass_settings_default(&s);
  CHECK(s.concat_user_limit == 1);
  CHECK(s.max_duplication == 15);
  CHECK(s.operand_budget == 64);
  CHECK(s.unroll == 1);
  CHECK(s.dot_is_library && s.conv_is_library && s.rng_is_library);
  CHECK(!pass_settings_is_disabled(&s, "dce"));
  snprintf(s.disabled_passes, sizeof s.disabled_passes, "cse,dce");
  CHECK(pass_settings_is_disabled(&s, "dce"));
  CHECK(pass_settings_is_disabled(&s, "cse"));
  CHECK(!pass_settings_is_disabled(&s, "cs"));
  CHECK(!pass_settings_is_disabled(&s, "tuple-simplifier"));
  /* Switching off the simplification before fusion leaves the cleanup after fusion on. */
  CHECK(!pass_settings_is_disabled(&s, "fusion-cse") && !pass_settings_is_disabled(&s, "fusion-dce"));
}

TEST(devices) {
  const DeviceProfile *d = device_default();
  CHECK_STR(d->name, "rtx2080ti");
  CHECK(d->sm_count == 68 && d->max_threads_per_block == 1024 && d->shared_mem_per_block == 49152);
  CHECK(d->registers_per_sm == 65536 && d->max_registers_per_thread == 255);
  CHECK_NEAR(d->dram_gbps, 616, 0);
  CHECK_NEAR(d->peak_gflops, 13450, 0);
  CHECK_NEAR(d->launch_us, 5, 0);
  CHECK(device_lookup("H100") == device_lookup("h100"));
  CHECK(device_lookup("h100")->shared_mem_per_block == 49152);
  CHECK(device_lookup("a100")->sm_count == 108);
  CHECK(!device_lookup("host")->is_gpu);
  CHECK(device_lookup("tpu") == NULL);
  CHECK(device_count() == 4);
}

TEST(dce_removes_dead_chain_and_uncalled_computation) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = vec(m, 4);
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *neg = op1(c, IR_OP_NEGATE, x, "negate.1"); /* dead */
  op2(c, IR_OP_ADD, neg, x, "add.2");                 /* dead, makes negate dead */
  IrInstr *mul = op2(c, IR_OP_MULTIPLY, x, x, "multiply.3");
  ir_set_root(c, mul);
  IrComputation *lonely = ir_computation_new(m, "lonely");
  IrShape sc = ir_shape_scalar(IR_F32);
  IrInstr *lp = param(lonely, &sc, 0, "lp");
  ir_set_root(lonely, op1(lonely, IR_OP_NEGATE, lp, "lneg"));
  /* a side-effecting custom call with no users stays */
  IrInstr *cc = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "custom-call.4");
  ir_attr_set_text(cc, "custom_call_has_side_effect", "true");

  Log log = {0};
  bool changed = false;
  CHECK(run_pass("dce", m, &log, &changed));
  CHECK(changed);
  CHECK_STR(log.buf, "dce remove negate.1: removed negate.1 (negate in main): no users and no side effects\n"
                     "dce remove add.2: removed add.2 (add in main): no users and no side effects\n"
                     "dce remove lonely: removed computation lonely (2 instructions): no longer called\n");
  CHECK(!live(m, "negate.1") && !live(m, "add.2"));
  CHECK(live(m, "custom-call.4") && live(m, "multiply.3") && live(m, "x"));
  CHECK(m->ncomps == 1);
  CHECK(c->ninstrs == 3);
  CHECK(x->nusers == 2); /* multiply (once, though used twice) and the custom call */
  /* Running again changes nothing. */
  Log log2 = {0};
  CHECK(run_pass("dce", m, &log2, &changed));
  CHECK(!changed && log2.n == 0);
  ir_module_free(m);
}

/* A dead while loop goes (with its computations) unless its body has a side effect. */
TEST(dce_dead_loops) {
  const char *text =
      "HloModule loops\n"
      "%cond (c: s32[]) -> pred[] {\n"
      "  %c = s32[] parameter(0)\n"
      "  %n = s32[] constant(10)\n"
      "  ROOT %lt = pred[] compare(%c, %n), direction=LT\n"
      "}\n"
      "%pure (p: s32[]) -> s32[] {\n"
      "  %p = s32[] parameter(0)\n"
      "  %one = s32[] constant(1)\n"
      "  ROOT %inc = s32[] add(%p, %one)\n"
      "}\n"
      "%effect (q: s32[]) -> s32[] {\n"
      "  %q = s32[] parameter(0)\n"
      "  %log = s32[] custom-call(%q), custom_call_target=\"print\", custom_call_has_side_effect=true\n"
      "  %one.1 = s32[] constant(1)\n"
      "  ROOT %inc.1 = s32[] add(%q, %one.1)\n"
      "}\n"
      "ENTRY %main (x: s32[]) -> s32[] {\n"
      "  %x = s32[] parameter(0)\n"
      "  %w1 = s32[] while(%x), condition=%cond, body=%pure\n"
      "  %w2 = s32[] while(%x), condition=%cond, body=%effect\n"
      "  ROOT %r = s32[] negate(%x)\n"
      "}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "loops.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {0};
  bool changed = false;
  CHECK(run_pass("dce", m, &log, &changed));
  CHECK(changed);
  CHECK_STR(log.buf, "dce remove w1: removed w1 (while in main): no users and no side effects\n"
                     "dce remove pure: removed computation pure (3 instructions): no longer called\n");
  CHECK(!live(m, "w1") && live(m, "w2") && live(m, "log"));
  CHECK(ir_module_find_computation(m, "effect") && ir_module_find_computation(m, "cond"));
  CHECK(ir_verify(m, &err));
  ir_module_free(m);
}

/* After fusion: fusion-cse merges identical instructions inside a fused computation only (XLA's
 * HloCSE with should_eliminate_computation = IsFusionComputation), fusion-dce removes a fusion
 * nobody reads and its fused computation. */
TEST(cleanup_after_fusion) {
  const char *text =
      "HloModule after_fusion\n"
      "%fused_computation (p0: f32[8]) -> f32[8] {\n"
      "  %p0 = f32[8]{0} parameter(0)\n"
      "  %exp.1 = f32[8]{0} exponential(%p0)\n"
      "  %exp.2 = f32[8]{0} exponential(%p0)\n"
      "  ROOT %add.3 = f32[8]{0} add(%exp.1, %exp.2)\n"
      "}\n"
      "%fused_computation.1 (p1: f32[8]) -> f32[8] {\n"
      "  %p1 = f32[8]{0} parameter(0)\n"
      "  ROOT %neg.4 = f32[8]{0} negate(%p1)\n"
      "}\n"
      "ENTRY %main (x: f32[8]) -> (f32[8], f32[8], f32[8]) {\n"
      "  %x = f32[8]{0} parameter(0)\n"
      "  %fusion = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_computation\n"
      "  %fusion.1 = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused_computation.1\n"
      "  %sine.5 = f32[8]{0} sine(%x)\n"
      "  %sine.6 = f32[8]{0} sine(%x)\n"
      "  ROOT %t = (f32[8]{0}, f32[8]{0}, f32[8]{0}) tuple(%fusion, %sine.5, %sine.6)\n"
      "}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "after_fusion.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  CHECK(m != NULL);
  if (!m) return;
  Log log = {0};
  bool changed = false;
  CHECK(run_pass("fusion-cse", m, &log, &changed));
  CHECK(changed);
  CHECK_STR(log.buf, "fusion-cse rewrite exp.2 -> exp.1: replaced exp.2 by exp.1: the same exponential of the same operands\n");
  CHECK(!live(m, "exp.2") && live(m, "sine.5") && live(m, "sine.6"));
  Log log2 = {0};
  CHECK(run_pass("fusion-dce", m, &log2, &changed));
  CHECK(changed);
  CHECK_STR(log2.buf, "fusion-dce remove fusion.1: removed fusion.1 (fusion in main): no users and no side effects\n"
                      "fusion-dce remove fused_computation.1: removed computation fused_computation.1 (2 instructions): no longer called\n");
  CHECK(live(m, "fusion") && !live(m, "fusion.1"));
  CHECK(ir_verify(m, &err));
  ir_module_free(m);
}

/* A multi-output fusion writes only the outputs somebody reads (XLA's HloDCE,
 * RemoveMultiOutputFusionsUnusedOutputs): three outputs with the middle one unread keep two, the
 * reader of the last reads index 1; two outputs with one read make an array fusion that its reader
 * reads directly; a fusion that is its computation's root keeps all. The result computes the same. */
TEST(dce_prunes_unread_fusion_outputs) {
  const char *text =
      "HloModule prune\n"
      "%f3 (p0: f32[8]) -> (f32[8], f32[8], f32[8]) {\n"
      "  %p0 = f32[8]{0} parameter(0)\n"
      "  %a = f32[8]{0} exponential(%p0)\n"
      "  %b = f32[8]{0} negate(%a)\n"
      "  %c = f32[8]{0} sine(%b)\n"
      "  ROOT %t3 = (f32[8]{0}, f32[8]{0}, f32[8]{0}) tuple(%a, %b, %c)\n"
      "}\n"
      "%f2 (q0: f32[8]) -> (f32[8], f32[8]) {\n"
      "  %q0 = f32[8]{0} parameter(0)\n"
      "  %d = f32[8]{0} cosine(%q0)\n"
      "  %e = f32[8]{0} abs(%d)\n"
      "  ROOT %t2 = (f32[8]{0}, f32[8]{0}) tuple(%d, %e)\n"
      "}\n"
      "ENTRY %main (x: f32[8]) -> (f32[8], f32[8], f32[8]) {\n"
      "  %x = f32[8]{0} parameter(0)\n"
      "  %fa = (f32[8]{0}, f32[8]{0}, f32[8]{0}) fusion(%x), kind=kLoop, calls=%f3\n"
      "  %g0 = f32[8]{0} get-tuple-element(%fa), index=0\n"
      "  %g2 = f32[8]{0} get-tuple-element(%fa), index=2\n"
      "  %fb = (f32[8]{0}, f32[8]{0}) fusion(%x), kind=kLoop, calls=%f2\n"
      "  %h1 = f32[8]{0} get-tuple-element(%fb), index=1\n"
      "  ROOT %t = (f32[8]{0}, f32[8]{0}, f32[8]{0}) tuple(%g0, %g2, %h1)\n"
      "}\n";
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(text, strlen(text), "prune.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  CHECK(m != NULL);
  if (!m) return;
  IrModule *before = ir_module_clone(m);
  Log log = {0};
  bool changed = false;
  CHECK(run_pass("fusion-dce", m, &log, &changed));
  CHECK(changed);
  CHECK_CONTAINS(log.buf, "fusion-dce remove fa: fa wrote 3 outputs and 2 are read: it writes only those now (1 removed)\n");
  CHECK_CONTAINS(log.buf, "fusion-dce remove fb: fb wrote 2 outputs and 1 is read: it writes only that one now (1 removed)\n");
  CHECK(ir_verify(m, &err));
  IrInstr *fa = ir_module_find_instr(m, "fa"), *fb = ir_module_find_instr(m, "fb"), *g2 = ir_module_find_instr(m, "g2");
  CHECK(fa && fa->shape.type == IR_TUPLE && fa->shape.ntuple == 2);
  int64_t idx = -1;
  CHECK(g2 && ir_attr_int(g2, "index", &idx) && idx == 1);
  CHECK(fb && fb->shape.type == IR_F32 && fb->shape.rank == 1);
  CHECK(!live(m, "h1"));
  IrInstr *root = m->entry->root;
  CHECK(root && root->noperands == 3 && root->operands[2] == fb);
  /* the same values before and after */
  FxError e2 = {0};
  int64_t n = 8;
  RtTensor *x = rt_tensor_new(IR_F32, 1, &n, &e2);
  rt_tensor_fill_random(x, 3, 0);
  RtTensor *want = NULL, *got = NULL;
  RtOptions o = {0};
  CHECK(rt_interp_run(before, &x, 1, &o, &want, NULL, &e2));
  CHECK(rt_interp_run(m, &x, 1, &o, &got, NULL, &e2));
  RtCompare cmp;
  if (want && got) {
    rt_compare(got, want, &cmp);
    CHECK(cmp.ok);
  }
  rt_tensor_unref(want);
  rt_tensor_unref(got);
  rt_tensor_unref(x);
  ir_module_free(before);
  ir_module_free(m);
}

static IrComputation *add_comp(IrModule *m, const char *name) {
  IrComputation *r = ir_computation_new(m, name);
  IrShape sc = ir_shape_scalar(IR_F32);
  IrInstr *a = param(r, &sc, 0, NULL);
  IrInstr *b = param(r, &sc, 1, NULL);
  ir_set_root(r, op2(r, IR_OP_ADD, a, b, NULL));
  return r;
}

TEST(cse_merges_identical_keeps_distinct) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = vec(m, 8);
  IrShape sc = ir_shape_scalar(IR_F32);
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *y = param(c, &s, 1, "y");
  IrInstr *m1 = op2(c, IR_OP_MULTIPLY, x, y, "multiply.1");
  ir_attr_set_text(m1, "metadata", "{op_name=\"a\"}");
  IrInstr *m2 = op2(c, IR_OP_MULTIPLY, y, x, "multiply.2"); /* commutative: same value */
  ir_attr_set_text(m2, "metadata", "{op_name=\"b\"}");
  IrInstr *s1 = op2(c, IR_OP_SUBTRACT, x, y, "subtract.3");
  IrInstr *s2 = op2(c, IR_OP_SUBTRACT, y, x, "subtract.4"); /* not commutative: different */
  IrInstr *k1 = ir_constant_scalar(c, IR_F32, 2.5, "constant.5");
  IrInstr *k2 = ir_constant_scalar(c, IR_F32, 2.5, "constant.6");
  IrInstr *k3 = ir_constant_scalar(c, IR_F32, 3.5, "constant.7");
  IrInstr *b1 = ir_instr_new(c, IR_OP_BROADCAST, &s, &k1, 1, "broadcast.8");
  ir_attr_set_text(b1, "dimensions", "{}");
  IrInstr *b2 = ir_instr_new(c, IR_OP_BROADCAST, &s, &k2, 1, "broadcast.9"); /* same after k2 -> k1 */
  ir_attr_set_text(b2, "dimensions", "{}");
  IrInstr *b3 = ir_instr_new(c, IR_OP_BROADCAST, &s, &k3, 1, "broadcast.10");
  ir_attr_set_text(b3, "dimensions", "{}");
  IrInstr *r1 = ir_instr_new(c, IR_OP_RNG, &s, (IrInstr *[]){k1, k3}, 2, "rng.11");
  IrInstr *r2 = ir_instr_new(c, IR_OP_RNG, &s, (IrInstr *[]){k1, k3}, 2, "rng.12"); /* random: never */
  /* two reduces whose to_apply are different but identical computations */
  IrComputation *add1 = add_comp(m, "add_a"), *add2 = add_comp(m, "add_b");
  IrInstr *red1 = ir_instr_new(c, IR_OP_REDUCE, &sc, (IrInstr *[]){x, k3}, 2, "reduce.13");
  ir_attr_set_text(red1, "dimensions", "{0}");
  ir_attr_set_comp(red1, "to_apply", add1);
  IrInstr *red2 = ir_instr_new(c, IR_OP_REDUCE, &sc, (IrInstr *[]){x, k3}, 2, "reduce.14");
  ir_attr_set_text(red2, "dimensions", "{0}");
  ir_attr_set_comp(red2, "to_apply", add2);
  IrInstr *parts[] = {m1, m2, s1, s2, b1, b2, b3, r1, r2, red1, red2};
  IrShape ts = {.type = IR_TUPLE};
  IrInstr *t = ir_instr_new(c, IR_OP_TUPLE, &ts, parts, 11, "tuple.15");
  ir_set_root(c, t);

  Log log = {0};
  bool changed = false;
  CHECK(run_pass("cse", m, &log, &changed));
  CHECK(changed);
  CHECK_STR(log.buf,
            "cse rewrite multiply.2 -> multiply.1: replaced multiply.2 by multiply.1: the same multiply of the "
            "same operands\n"
            "cse rewrite constant.6 -> constant.5: replaced constant.6 by constant.5: the same constant of the "
            "same operands\n"
            "cse rewrite broadcast.9 -> broadcast.8: replaced broadcast.9 by broadcast.8: the same broadcast of "
            "the same operands\n"
            "cse rewrite reduce.14 -> reduce.13: replaced reduce.14 by reduce.13: the same reduce of the same "
            "operands\n");
  CHECK(t->operands[1] == m1 && t->operands[5] == b1 && t->operands[10] == red1);
  CHECK(t->operands[3] == s2 && t->operands[8] == r2);
  CHECK(!live(m, "multiply.2") && !live(m, "constant.6") && !live(m, "broadcast.9") && !live(m, "reduce.14"));
  CHECK(live(m, "rng.12") && live(m, "subtract.4") && live(m, "constant.7"));
  CHECK(c->ninstrs == 17 - 4);
  ir_module_free(m);
}

TEST(cse_respects_side_effects_and_shapes) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = vec(m, 8), s2 = vec(m, 2);
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *c1 = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "cc.1");
  ir_attr_set_text(c1, "custom_call_target", "\"foo\"");
  ir_attr_set_text(c1, "custom_call_has_side_effect", "true");
  IrInstr *c2 = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "cc.2");
  ir_attr_set_text(c2, "custom_call_target", "\"foo\"");
  ir_attr_set_text(c2, "custom_call_has_side_effect", "true");
  IrInstr *p1 = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "pure.3");
  ir_attr_set_text(p1, "custom_call_target", "\"foo\"");
  IrInstr *p2 = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "pure.4");
  ir_attr_set_text(p2, "custom_call_target", "\"foo\"");
  IrInstr *p3 = ir_instr_new(c, IR_OP_CUSTOM_CALL, &s, &x, 1, "pure.5");
  ir_attr_set_text(p3, "custom_call_target", "\"bar\""); /* different target */
  IrInstr *sl1 = ir_instr_new(c, IR_OP_SLICE, &s2, &x, 1, "slice.6");
  ir_attr_set_text(sl1, "slice", "{[0:2]}");
  IrInstr *sl2 = ir_instr_new(c, IR_OP_SLICE, &s2, &x, 1, "slice.7");
  ir_attr_set_text(sl2, "slice", "{[2:4]}"); /* different attribute */
  IrShape ts = {.type = IR_TUPLE};
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){c1, c2, p1, p2, p3, sl1, sl2}, 7, "t"));
  Log log = {0};
  bool changed = false;
  CHECK(run_pass("cse", m, &log, &changed));
  CHECK(changed && log.n == 1);
  CHECK_CONTAINS(log.buf, "replaced pure.4 by pure.3");
  CHECK(live(m, "cc.2") && live(m, "pure.5") && live(m, "slice.7"));
  ir_module_free(m);
}

TEST(tuple_simplifier_rewrites) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = vec(m, 4);
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *a = op1(c, IR_OP_NEGATE, x, "negate.1");
  IrInstr *b = op1(c, IR_OP_EXP, x, "exponential.2");
  IrShape ts;
  IrShape elems[2] = {a->shape, b->shape};
  ts = (IrShape){.type = IR_TUPLE, .ntuple = 2, .tuple = elems};
  IrInstr *t = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){a, b}, 2, "tuple.3");
  IrInstr *g1 = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &s, &t, 1, "get-tuple-element.4");
  ir_attr_set_text(g1, "index", "1");
  IrInstr *use = op2(c, IR_OP_ADD, g1, x, "add.5");
  /* a parameter tuple taken apart and rebuilt in order: the rebuilt tuple is the parameter */
  IrInstr *pt = param(c, &ts, 1, "pt");
  IrInstr *q0 = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &s, &pt, 1, "gte.6");
  ir_attr_set_text(q0, "index", "0");
  IrInstr *q1 = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &s, &pt, 1, "gte.7");
  ir_attr_set_text(q1, "index", "1");
  IrInstr *rebuilt = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){q0, q1}, 2, "tuple.8");
  IrInstr *swapped = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){q1, q0}, 2, "tuple.9"); /* not in order */
  IrShape outer_e[4] = {s, ts, ts};
  IrShape outer = {.type = IR_TUPLE, .ntuple = 3, .tuple = outer_e};
  IrInstr *root = ir_instr_new(c, IR_OP_TUPLE, &outer, (IrInstr *[]){use, rebuilt, swapped}, 3, "tuple.10");
  ir_set_root(c, root);
  Log log = {0};
  bool changed = false;
  CHECK(run_pass("tuple-simplifier", m, &log, &changed));
  CHECK(changed);
  CHECK_STR(log.buf,
            "tuple-simplifier rewrite get-tuple-element.4 -> exponential.2: replaced get-tuple-element.4 "
            "(element 1 of tuple.3) by exponential.2\n"
            "tuple-simplifier rewrite tuple.8 -> pt: replaced tuple.8 (all 2 elements of pt, in order) by pt\n");
  CHECK(use->operands[0] == b);
  CHECK(root->operands[1] == pt && root->operands[2] == swapped);
  CHECK(!live(m, "get-tuple-element.4") && !live(m, "tuple.3") && !live(m, "tuple.8"));
  CHECK(live(m, "negate.1")); /* left for dce */
  CHECK(live(m, "gte.6") && live(m, "gte.7"));
  ir_module_free(m);
}

static void count_emit(void *ctx, const PassDecision *d) {
  (void)d;
  (*(int *)ctx)++;
}

TEST(run_stage_shares_unchanged_and_never_touches_input) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = vec(m, 4);
  IrInstr *x = param(c, &s, 0, "x");
  op1(c, IR_OP_NEGATE, x, "negate.1");
  ir_set_root(c, op1(c, IR_OP_ABS, x, "abs.2"));
  int n = 0;
  DecisionSink sink = {count_emit, &n};
  FxError err;
  fx_error_clear(&err);
  PassSettings st;
  pass_settings_default(&st);
  PassContext cx = {&sink, device_default(), &st, 1, NULL, &err, NULL, false};
  IrModule *out = NULL;
  bool changed = false;
  CHECK(pass_run_stage(&pass_cse, m, &cx, &out, &changed));
  CHECK(!changed && out == NULL && n == 0);
  CHECK(pass_run_stage(&pass_dce, m, &cx, &out, &changed));
  CHECK(changed && out != NULL && n == 1);
  CHECK(ir_module_instr_count(m) == 3);   /* the input is untouched */
  CHECK(ir_module_instr_count(out) == 2); /* the snapshot lost negate.1 */
  CHECK(ir_module_find_instr(out, "abs.2") != NULL);
  ir_module_free(out);
  ir_module_free(m);
}


static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_simplification(const char *name) {
  static const char *const simplification[] = {"algsimp",          "constant-folding",      "cse",         "dce",
                                               "tuple-simplifier", "while-loop-simplifier", "call-inliner"};
  for (size_t q = 0; q < sizeof simplification / sizeof simplification[0]; q++)
    if (strcmp(name, simplification[q]) == 0) return true;
  return false;
}

/* Every corpus module goes through the simplification passes of the classic pipeline: each stage
 * verifies, every change is reported, and no pass but the call inliner makes the module larger.
 * (The whole pipeline, fusion included, runs in tests/pipeline: it is slower.) */
TEST(corpus_through_simplification) {
  const char *dir = getenv("FXPLAIN_HLO_CORPUS");
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  if (!d) {
    fprintf(stderr, "no corpus at %s\n", dir);
    return;
  }
  char *names[128];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 128) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  CHECK(n >= 30);
  const Pipeline *pl = pipeline_lookup("classic");
  PassSettings st;
  pass_settings_default(&st);
  for (int k = 0; k < n; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    FxError err;
    fx_error_clear(&err);
    IrModule *m = hlo_load_file(path, &err);
    if (!m) {
      fx_error_print(stderr, &err);
      CHECK(m != NULL);
      free(names[k]);
      continue;
    }
    int count = ir_module_instr_count(m);
    for (int p = 0; p < pl->npasses; p++) {
      if (!is_simplification(pl->passes[p]->name)) continue;
      int nd = 0;
      DecisionSink sink = {count_emit, &nd};
      PassContext cx = {&sink, device_default(), &st, p + 1, NULL, &err, NULL, false};
      IrModule *out = NULL;
      bool changed = false;
      bool ok = pass_run_stage(pl->passes[p], m, &cx, &out, &changed);
      if (!ok) {
        fprintf(stderr, "%s: ", names[k]);
        fx_error_print(stderr, &err);
      }
      CHECK(ok);
      if (!ok) break;
      CHECK(changed == (out != NULL));
      CHECK(!changed || nd > 0); /* a change is always reported */
      if (out) {
        int after = ir_module_instr_count(out);
        bool may_grow = strcmp(pl->passes[p]->name, "call-inliner") == 0;
        if (!may_grow && after > count)
          fprintf(stderr, "%s: %s grew %d -> %d\n", names[k], pl->passes[p]->name, count, after);
        CHECK(may_grow || after <= count);
        count = after;
        ir_module_free(m);
        m = out;
      }
    }
    ir_module_free(m);
    free(names[k]);
  }
}

int main(void) {
  RUN(registry_and_pipelines);
  RUN(settings);
  RUN(devices);
  RUN(dce_removes_dead_chain_and_uncalled_computation);
  RUN(dce_dead_loops);
  RUN(cleanup_after_fusion);
  RUN(dce_prunes_unread_fusion_outputs);
  RUN(cse_merges_identical_keeps_distinct);
  RUN(cse_respects_side_effects_and_shapes);
  RUN(tuple_simplifier_rewrites);
  RUN(run_stage_shares_unchanged_and_never_touches_input);
  RUN(corpus_through_simplification);
  return check_summary();
}

/* test_plan.c — the kernel plan and its cost: exact kernel counts, kinds, launches and bytes on
 * small modules, trip counts, the time estimate on the device profiles, and the buffer assignment
 * (which buffer crosses a kernel boundary, how long it lives, whose dead memory it reuses). */
#include <string.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/plan/plan.h"

static IrModule *new_module(IrComputation **entry) {
  IrModule *m = ir_module_new("t");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  *entry = c;
  return m;
}

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

static IrShape f32v(IrModule *m, int64_t n) { return ir_shape_array(&m->arena, IR_F32, 1, &n); }

static KernelPlan *plan(IrModule *m) {
  FxError err;
  fx_error_clear(&err);
  KernelPlan *p = plan_build(m, device_default(), &err);
  if (!p) fx_error_print(stderr, &err);
  return p;
}

TEST(unfused_elementwise_and_free_ops) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = f32v(m, 1024);
  int64_t d2[2] = {32, 32};
  IrShape s2 = ir_shape_array(&m->arena, IR_F32, 2, d2);
  IrInstr *x = param(c, &s, 0, "x"), *y = param(c, &s, 1, "y");
  IrInstr *add = op2(c, IR_OP_ADD, x, y, "add.1");
  IrInstr *ex = op1(c, IR_OP_EXP, add, "exponential.2");
  IrInstr *bc = ir_instr_new(c, IR_OP_BITCAST, &s2, &ex, 1, "bitcast.3");
  IrInstr *rs = ir_instr_new(c, IR_OP_RESHAPE, &s, &bc, 1, "reshape.4"); /* row-major: a bitcast */
  IrInstr *k = ir_constant_scalar(c, IR_F32, 1, "constant.5");
  IrShape ts = {.type = IR_TUPLE};
  IrInstr *t = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){rs, add, k}, 3, "tuple.6");
  ir_set_root(c, t);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 2);
  CHECK(p->launches == 2 && p->trip_counts_known);
  CHECK_STR(p->kernels[0].name, "add.1");
  CHECK(p->kernels[0].kind == KERNEL_LOOP);
  CHECK(p->kernels[0].ninputs == 2 && p->kernels[0].bytes_read == 8192 && p->kernels[0].bytes_written == 4096);
  CHECK(p->kernels[0].flops == 1024);
  CHECK_STR(p->kernels[1].name, "exponential.2");
  CHECK(p->kernels[1].bytes_read == 4096 && p->kernels[1].bytes_written == 4096);
  CHECK(p->bytes_read == 12288 && p->bytes_written == 8192);
  /* 12288 bytes at 616 GB/s is 0.0199 us; plus 5 us launch */
  CHECK_NEAR(p->kernels[0].est_us, 12288.0 / 616e3 + 5.0, 1e-9);
  CHECK_NEAR(p->est_us, 12288.0 / 616e3 + 8192.0 / 616e3 + 10.0, 1e-9);
  CHECK(plan_kernel_of(p, ex) == &p->kernels[1]);
  CHECK(plan_kernel_of(p, bc) == NULL && plan_kernel_of(p, t) == NULL);
  plan_free(p);
  ir_module_free(m);
}

TEST(same_operand_twice_is_read_once_and_layouts_matter) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = f32v(m, 256);
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *sq = op2(c, IR_OP_MULTIPLY, x, x, "multiply.1");
  int64_t d[2] = {16, 16};
  IrShape s2 = ir_shape_array(&m->arena, IR_F32, 2, d);
  s2.minor_to_major[0] = 0; /* column-major: this reshape moves data */
  s2.minor_to_major[1] = 1;
  IrInstr *rs = ir_instr_new(c, IR_OP_RESHAPE, &s2, &sq, 1, "reshape.2");
  /* a transpose whose output layout undoes the permutation is a bitcast */
  int64_t d3[2] = {16, 16};
  IrShape s3 = ir_shape_array(&m->arena, IR_F32, 2, d3);
  s3.minor_to_major[0] = 1;
  s3.minor_to_major[1] = 0;
  IrInstr *tr = ir_instr_new(c, IR_OP_TRANSPOSE, &s3, &rs, 1, "transpose.3");
  ir_attr_set_text(tr, "dimensions", "{1,0}");
  s3.minor_to_major[0] = 0;
  s3.minor_to_major[1] = 1;
  ir_set_root(c, tr);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 2);
  CHECK(p->kernels[0].ninputs == 1 && p->kernels[0].bytes_read == 1024);
  CHECK_STR(p->kernels[1].name, "reshape.2");
  plan_free(p);
  ir_module_free(m);
}

TEST(fusion_is_one_kernel_of_its_kind) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = f32v(m, 1000);
  IrShape sc = ir_shape_scalar(IR_F32);
  IrComputation *body = ir_computation_new(m, "fused_computation");
  IrInstr *a = param(body, &s, 0, "param_0"), *b = param(body, &s, 1, "param_1");
  IrInstr *mul = op2(body, IR_OP_MULTIPLY, a, b, "multiply.1");
  IrInstr *tn = op1(body, IR_OP_TANH, mul, "tanh.2");
  ir_set_root(body, tn);
  IrInstr *x = param(c, &s, 0, "x"), *y = param(c, &s, 1, "y");
  IrInstr *f = ir_instr_new(c, IR_OP_FUSION, &s, (IrInstr *[]){x, y}, 2, "fusion.3");
  ir_attr_set_text(f, "kind", "kLoop");
  ir_attr_set_comp(f, "calls", body);
  body->fusion_instr = f;
  /* a reduce fusion: input kind */
  IrComputation *rbody = ir_computation_new(m, "fused_reduce");
  IrInstr *rp = param(rbody, &s, 0, "param_0.1");
  IrInstr *zero = ir_constant_scalar(rbody, IR_F32, 0, "constant.4");
  IrComputation *addc = ir_computation_new(m, "add");
  IrInstr *aa = param(addc, &sc, 0, "aa"), *ab = param(addc, &sc, 1, "ab");
  ir_set_root(addc, op2(addc, IR_OP_ADD, aa, ab, "add.5"));
  IrInstr *red = ir_instr_new(rbody, IR_OP_REDUCE, &sc, (IrInstr *[]){rp, zero}, 2, "reduce.6");
  ir_attr_set_text(red, "dimensions", "{0}");
  ir_attr_set_comp(red, "to_apply", addc);
  ir_set_root(rbody, red);
  IrInstr *rf = ir_instr_new(c, IR_OP_FUSION, &sc, &f, 1, "fusion.7");
  ir_attr_set_text(rf, "kind", "kInput");
  ir_attr_set_comp(rf, "calls", rbody);
  rbody->fusion_instr = rf;
  ir_set_root(c, rf);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 2 && p->launches == 2);
  const PlanKernel *k = &p->kernels[0];
  CHECK(k->kind == KERNEL_LOOP && k->nmembers == 2 && k->ninputs == 2);
  CHECK(k->members[0] == mul && k->members[1] == tn);
  CHECK(k->bytes_read == 8000 && k->bytes_written == 4000);
  CHECK(k->flops == 2000);
  CHECK(plan_kernel_of(p, tn) == k);
  const PlanKernel *r = &p->kernels[1];
  CHECK(r->kind == KERNEL_INPUT && r->nmembers == 2); /* constant + reduce */
  CHECK(r->bytes_read == 4000 && r->bytes_written == 4);
  CHECK(r->flops == 1000);
  CHECK(p->bytes_read == 12000 && p->bytes_written == 4004);
  plan_free(p);
  ir_module_free(m);
}

/* while (i < limit) { i = i + 1; v = negate(v) } starting from i = start */
static IrModule *counted_loop(int64_t start, double limit, const char *dir, IrInstr **w_out) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = f32v(m, 256);
  IrShape i32 = ir_shape_scalar(IR_S32), pred = ir_shape_scalar(IR_PRED);
  IrShape elems[2] = {i32, s};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = elems};
  IrComputation *cond = ir_computation_new(m, "cond");
  IrInstr *cp = param(cond, &ts, 0, "cp");
  IrInstr *ci = ir_instr_new(cond, IR_OP_GET_TUPLE_ELEMENT, &i32, &cp, 1, "gte.c0");
  ir_attr_set_text(ci, "index", "0");
  IrInstr *lim = ir_constant_scalar(cond, IR_S32, limit, "constant.lim");
  IrInstr *cmp = ir_instr_new(cond, IR_OP_COMPARE, &pred, (IrInstr *[]){ci, lim}, 2, "compare.1");
  ir_attr_set_text(cmp, "direction", dir);
  ir_set_root(cond, cmp);
  IrComputation *body = ir_computation_new(m, "body");
  IrInstr *bp = param(body, &ts, 0, "bp");
  IrInstr *bi = ir_instr_new(body, IR_OP_GET_TUPLE_ELEMENT, &i32, &bp, 1, "gte.b0");
  ir_attr_set_text(bi, "index", "0");
  IrInstr *bv = ir_instr_new(body, IR_OP_GET_TUPLE_ELEMENT, &s, &bp, 1, "gte.b1");
  ir_attr_set_text(bv, "index", "1");
  IrInstr *one = ir_constant_scalar(body, IR_S32, 1, "constant.one");
  IrInstr *inc = op2(body, IR_OP_ADD, bi, one, "add.2");
  IrInstr *neg = op1(body, IR_OP_NEGATE, bv, "negate.3");
  ir_set_root(body, ir_instr_new(body, IR_OP_TUPLE, &ts, (IrInstr *[]){inc, neg}, 2, "tuple.4"));
  IrInstr *x = param(c, &s, 0, "x");
  IrInstr *zero = ir_constant_scalar(c, IR_S32, (double)start, "constant.start");
  IrInstr *init = ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){zero, x}, 2, "tuple.5");
  IrInstr *w = ir_instr_new(c, IR_OP_WHILE, &ts, &init, 1, "while.6");
  ir_attr_set_comp(w, "condition", cond);
  ir_attr_set_comp(w, "body", body);
  IrInstr *out = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, &s, &w, 1, "gte.7");
  ir_attr_set_text(out, "index", "1");
  ir_set_root(c, out);
  *w_out = w;
  return m;
}

/* A counted loop's trip count is known at compile time (XLA's WhileLoopTripCountAnnotator finds
 * the same pattern), so XLA:GPU runs it as a for loop (ForThunk; today WhileThunk given the trip
 * count): the body 10 times, the condition never, nothing read back. */
TEST(while_loop_with_a_known_trip_count_runs_as_a_for_loop) {
  IrInstr *w;
  IrModule *m = counted_loop(0, 10, "LT", &w);
  CHECK(plan_while_trip_count(w) == 10);
  int64_t trips = 0;
  CHECK(plan_while_for_loop(w, &trips) && trips == 10);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 4 && p->ncompute == 3 && p->trip_counts_known);
  CHECK_STR(p->kernels[0].name, "compare.1");
  CHECK_STR(p->kernels[1].name, "add.2");
  CHECK_STR(p->kernels[2].name, "negate.3");
  CHECK_STR(p->kernels[3].name, "while.6");
  CHECK(p->kernels[3].kind == KERNEL_CONTROL);
  CHECK(p->kernels[3].for_loop && p->kernels[3].trip_count == 10);
  /* the condition's kernel is listed, never launched; no read-back */
  CHECK(p->kernels[0].launches == 0 && p->kernels[3].launches == 0);
  CHECK(p->kernels[1].launches == 10 && p->kernels[2].launches == 10);
  /* 10 adds + 10 negates */
  CHECK(p->launches == 20);
  /* add reads 4+4 writes 4 and negate 1024/1024 (10 times); the compare moves nothing */
  CHECK(p->bytes_read == 10 * (8 + 1024));
  CHECK(p->bytes_written == 10 * (4 + 1024));
  /* and the time is the body's kernels alone: no read-back priced */
  double kernels_us = 10 * (p->kernels[1].est_us + p->kernels[2].est_us);
  CHECK_NEAR(p->est_us, kernels_us, 1e-9);
  CHECK(plan_kernel_of(p, w) == &p->kernels[3]);
  plan_free(p);
  ir_module_free(m);
}

/* A loop whose trip count is not known at compile time (here: the limit is a parameter) runs its
 * condition every iteration and once more, and reads its result back each time (WhileThunk
 * without a trip count); the plan counts it as one iteration. */
TEST(while_loop_with_an_unknown_trip_count_counts_condition_and_read_back) {
  IrInstr *w;
  IrModule *m = counted_loop(0, 10, "LT", &w);
  /* compare(counter, counter): no limit to read, so no trip count */
  IrComputation *cond = ir_attr_comp(w, "condition");
  IrInstr *cmp = cond->root;
  IrInstr *ci = ir_module_find_instr(m, "gte.c0");
  ir_set_operand(cmp, 1, ci);
  CHECK(plan_while_trip_count(w) == -1);
  int64_t trips = 0;
  CHECK(!plan_while_for_loop(w, &trips) && trips == -1);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 4 && p->ncompute == 3 && !p->trip_counts_known);
  CHECK(p->kernels[3].kind == KERNEL_CONTROL && !p->kernels[3].for_loop && p->kernels[3].trip_count == -1);
  /* counted as one iteration: the condition and its read-back twice (the test that goes on, the
     test that ends the loop), the body once */
  CHECK(p->kernels[0].launches == 2 && p->kernels[3].launches == 2);
  CHECK(p->kernels[1].launches == 1 && p->kernels[2].launches == 1);
  /* the read-back launches nothing: 2 compares + 1 add + 1 negate */
  CHECK(p->launches == 4);
  /* compare reads its one operand, 4 bytes, and writes 1 (twice); add reads 4+4 writes 4 and
     negate 1024/1024 (once); the read-back's byte is not a kernel's */
  CHECK(p->bytes_read == 2 * 4 + (8 + 1024));
  CHECK(p->bytes_written == 2 * 1 + (4 + 1024));
  /* ... but it is priced: est_us covers 2 read-backs */
  double kernels_us = 2 * p->kernels[0].est_us + p->kernels[1].est_us + p->kernels[2].est_us;
  CHECK(p->est_us > kernels_us + p->kernels[3].est_us);
  CHECK_NEAR(p->est_us, kernels_us + 2 * p->kernels[3].est_us, 1e-9);
  plan_free(p);
  ir_module_free(m);
}

TEST(trip_counts) {
  IrInstr *w;
  IrModule *m = counted_loop(3, 10, "LE", &w);
  CHECK(plan_while_trip_count(w) == 8); /* 3..10 */
  ir_module_free(m);
  m = counted_loop(0, 10000, "NE", &w);
  CHECK(plan_while_trip_count(w) == 10000);
  ir_module_free(m);
  m = counted_loop(20, 10, "LT", &w);
  CHECK(plan_while_trip_count(w) == 0);
  ir_module_free(m);
  m = counted_loop(0, 10, "GT", &w); /* counting up while > 10: not a loop we can count */
  CHECK(plan_while_trip_count(w) == -1);
  KernelPlan *p = plan(m);
  CHECK(p && !p->trip_counts_known && p->launches == 2 + 1 + 1); /* counted once: compare twice */
  plan_free(p);
  /* XLA's own annotation wins, and makes the loop a for loop: the condition never runs */
  ir_attr_set_text(w, "backend_config", "{\"known_trip_count\":{\"n\":\"7\"}}");
  CHECK(plan_while_trip_count(w) == 7);
  p = plan(m);
  CHECK(p && p->trip_counts_known && p->launches == 7 + 7);
  plan_free(p);
  ir_attr_set_text(w, "backend_config", "{\"known_trip_count\":{\"n\":\"0\"}}");
  p = plan(m);
  CHECK(p && p->trip_counts_known && p->launches == 0 && p->est_us == 0);
  plan_free(p);
  ir_module_free(m);
}

/* A float counter is not counted (XLA's ComputeWhileLoopTripCount reads integer counters only):
 * 0.0 < 10.0 by 1.0 would be 10, but a trip count must be exact. */
TEST(trip_count_needs_an_integer_counter) {
  IrInstr *w;
  IrModule *m = counted_loop(0, 10, "LT", &w);
  CHECK(plan_while_trip_count(w) == 10);
  IrShape f32 = ir_shape_scalar(IR_F32);
  ir_module_find_instr(m, "constant.start")->shape = f32;
  CHECK(plan_while_trip_count(w) == -1);
  ir_module_free(m);
}

/* Fusion passes fuse a loop's compare and its counter increment: the trip count is still found. */
TEST(trip_count_through_fusions) {
  IrInstr *w;
  IrModule *m = counted_loop(0, 25, "LT", &w);
  IrComputation *cond = ir_attr_comp(w, "condition"), *body = ir_attr_comp(w, "body");
  IrShape i32 = ir_shape_scalar(IR_S32), pred = ir_shape_scalar(IR_PRED);
  /* condition: fusion(gte.c0) calling { p = parameter(0); lim = constant(25); ROOT compare(p, lim) } */
  IrComputation *fc = ir_computation_new(m, "fused_compare");
  IrInstr *fp = param(fc, &i32, 0, "param_0.c");
  IrInstr *flim = ir_constant_scalar(fc, IR_S32, 25, "constant.flim");
  IrInstr *fcmp = ir_instr_new(fc, IR_OP_COMPARE, &pred, (IrInstr *[]){fp, flim}, 2, "compare.f");
  ir_attr_set_text(fcmp, "direction", "LT");
  ir_set_root(fc, fcmp);
  IrInstr *ci = ir_module_find_instr(m, "gte.c0");
  IrInstr *f1 = ir_instr_new(cond, IR_OP_FUSION, &pred, &ci, 1, "fusion.c");
  ir_attr_set_text(f1, "kind", "kLoop");
  ir_attr_set_comp(f1, "calls", fc);
  fc->fusion_instr = f1;
  IrInstr *old = cond->root;
  ir_replace_all_uses(old, f1);
  ir_instr_remove(old);
  /* body: the increment becomes fusion(gte.b0) calling { p = parameter(0); one = constant(1); ROOT add(one, p) } */
  IrComputation *fb = ir_computation_new(m, "fused_increment");
  IrInstr *bp = param(fb, &i32, 0, "param_0.b");
  IrInstr *bone = ir_constant_scalar(fb, IR_S32, 1, "constant.bone");
  ir_set_root(fb, ir_instr_new(fb, IR_OP_ADD, &i32, (IrInstr *[]){bone, bp}, 2, "add.f"));
  IrInstr *bi = ir_module_find_instr(m, "gte.b0");
  IrInstr *f2 = ir_instr_new_before(body, body->root, IR_OP_FUSION, &i32, &bi, 1, "fusion.b");
  ir_attr_set_text(f2, "kind", "kLoop");
  ir_attr_set_comp(f2, "calls", fb);
  fb->fusion_instr = f2;
  IrInstr *inc = ir_module_find_instr(m, "add.2");
  ir_replace_all_uses(inc, f2);
  ir_instr_remove(inc);
  CHECK(plan_while_trip_count(w) == 25);
  KernelPlan *p = plan(m);
  /* a for loop: the fused compare never runs */
  CHECK(p && p->trip_counts_known && p->launches == 25 + 25);
  plan_free(p);
  ir_module_free(m);
}

/* Priority fusion and multi-output fusion can put the counter increment into a multi-output
 * fusion with other work: the body's tuple then reads it through a get-tuple-element. */
TEST(trip_count_through_a_multi_output_fusion) {
  IrInstr *w;
  IrModule *m = counted_loop(3, 40, "LT", &w);
  IrComputation *body = ir_attr_comp(w, "body");
  IrShape i32 = ir_shape_scalar(IR_S32), s = f32v(m, 256);
  IrShape outs[2] = {s, i32};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = outs};
  /* fusion.mo(gte.b1, gte.b0) calling { v = parameter(0); i = parameter(1); two = constant(2);
     ROOT tuple(negate(v), convert(add(i, two))) }: the step is 2 */
  IrComputation *fb = ir_computation_new(m, "fused_step");
  IrInstr *fv = param(fb, &s, 0, "param_0.v");
  IrInstr *fi = param(fb, &i32, 1, "param_1.i");
  IrInstr *two = ir_constant_scalar(fb, IR_S32, 2, "constant.two");
  IrInstr *fadd = ir_instr_new(fb, IR_OP_ADD, &i32, (IrInstr *[]){fi, two}, 2, "add.f");
  IrInstr *fcv = ir_instr_new(fb, IR_OP_CONVERT, &i32, &fadd, 1, "convert.f");
  IrInstr *fneg = ir_instr_new(fb, IR_OP_NEGATE, &s, &fv, 1, "negate.f");
  ir_set_root(fb, ir_instr_new(fb, IR_OP_TUPLE, &ts, (IrInstr *[]){fneg, fcv}, 2, "tuple.f"));
  IrInstr *bv = ir_module_find_instr(m, "gte.b1"), *bi = ir_module_find_instr(m, "gte.b0");
  IrInstr *mo = ir_instr_new_before(body, body->root, IR_OP_FUSION, &ts, (IrInstr *[]){bv, bi}, 2, "fusion.mo");
  ir_attr_set_text(mo, "kind", "kLoop");
  ir_attr_set_comp(mo, "calls", fb);
  fb->fusion_instr = mo;
  IrInstr *g0 = ir_instr_new_before(body, body->root, IR_OP_GET_TUPLE_ELEMENT, &s, &mo, 1, "gte.mo0");
  ir_attr_set_text(g0, "index", "0");
  IrInstr *g1 = ir_instr_new_before(body, body->root, IR_OP_GET_TUPLE_ELEMENT, &i32, &mo, 1, "gte.mo1");
  ir_attr_set_text(g1, "index", "1");
  IrInstr *inc = ir_module_find_instr(m, "add.2"), *neg = ir_module_find_instr(m, "negate.3");
  ir_replace_all_uses(inc, g1);
  ir_replace_all_uses(neg, g0);
  ir_instr_remove(inc);
  ir_instr_remove(neg);
  /* 3, 5, ..., 39: 19 iterations */
  CHECK(plan_while_trip_count(w) == 19);
  KernelPlan *p = plan(m);
  /* compare (never: a known trip count runs as a for loop), the multi-output fusion (19), and the
     control entry, which launches nothing */
  CHECK(p && p->trip_counts_known && p->nkernels == 3 && p->launches == 19);
  CHECK(p->kernels[0].launches == 0 && p->kernels[2].for_loop && p->kernels[2].trip_count == 19);
  plan_free(p);
  /* A counter the fusion does not add a constant to is not a counted loop. */
  ir_set_operand(fadd, 1, fi);
  CHECK(plan_while_trip_count(w) == -1);
  ir_module_free(m);
}

TEST(library_calls_slices_and_in_place_updates) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  int64_t da[2] = {64, 32}, db[2] = {32, 16}, dc[2] = {64, 16};
  IrShape sa = ir_shape_array(&m->arena, IR_F32, 2, da), sb = ir_shape_array(&m->arena, IR_F32, 2, db);
  IrShape sc = ir_shape_array(&m->arena, IR_F32, 2, dc);
  IrInstr *a = param(c, &sa, 0, "a"), *b = param(c, &sb, 1, "b");
  IrInstr *dot = ir_instr_new(c, IR_OP_DOT, &sc, (IrInstr *[]){a, b}, 2, "dot.1");
  ir_attr_set_text(dot, "lhs_contracting_dims", "{1}");
  ir_attr_set_text(dot, "rhs_contracting_dims", "{0}");
  int64_t ds[2] = {1, 16};
  IrShape ss = ir_shape_array(&m->arena, IR_F32, 2, ds);
  IrInstr *sl = ir_instr_new(c, IR_OP_SLICE, &ss, &dot, 1, "slice.2");
  ir_attr_set_text(sl, "slice", "{[0:1], [0:16]}");
  IrInstr *i0 = ir_constant_scalar(c, IR_S32, 3, "constant.3");
  IrInstr *dus = ir_instr_new(c, IR_OP_DYNAMIC_UPDATE_SLICE, &sc, (IrInstr *[]){dot, sl, i0, i0}, 4, "dus.4");
  IrInstr *cc = ir_instr_new(c, IR_OP_CUSTOM_CALL, &sc, &dus, 1, "custom-call.5");
  ir_set_root(c, cc);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 4);
  const PlanKernel *k = &p->kernels[0];
  CHECK(k->kind == KERNEL_LIBRARY && k->flops == 2.0 * 64 * 16 * 32);
  CHECK(k->bytes_read == 64 * 32 * 4 + 32 * 16 * 4 && k->bytes_written == 64 * 16 * 4);
  CHECK(p->kernels[1].kind == KERNEL_LOOP && p->kernels[1].bytes_read == 64 && p->kernels[1].bytes_written == 64);
  /* in place: reads the update and the index once (the same constant twice), writes the update */
  CHECK(p->kernels[2].bytes_read == 64 + 4 && p->kernels[2].bytes_written == 64);
  CHECK(p->kernels[3].kind == KERNEL_LIBRARY && p->kernels[3].bytes_read == 4096);
  /* a dot is compute-bound here? 65536 flops / 13.45 TFLOP/s = 0.0049 us vs 14336 B / 616 GB/s = 0.023 us */
  CHECK_NEAR(k->est_us, (64 * 32 * 4 + 32 * 16 * 4 + 64 * 16 * 4) / 616e3 + 5, 1e-9);
  FxError err;
  fx_error_clear(&err);
  KernelPlan *ph = plan_build(m, device_lookup("h100"), &err);
  CHECK(ph && ph->launches == 4);
  CHECK_NEAR(ph->kernels[0].est_us, (64 * 32 * 4 + 32 * 16 * 4 + 64 * 16 * 4) / 3352.32e3 + 3, 1e-9);
  plan_free(ph);
  plan_free(p);
  ir_module_free(m);
}

TEST(conditional_counts_costliest_branch_and_call_walks_in) {
  IrComputation *c;
  IrModule *m = new_module(&c);
  IrShape s = f32v(m, 100);
  IrComputation *small = ir_computation_new(m, "small");
  IrInstr *sp = param(small, &s, 0, "sp");
  ir_set_root(small, op1(small, IR_OP_NEGATE, sp, "negate.1"));
  IrComputation *big = ir_computation_new(m, "big");
  IrInstr *bp = param(big, &s, 0, "bp");
  IrInstr *e = op1(big, IR_OP_EXP, bp, "exponential.2");
  ir_set_root(big, op1(big, IR_OP_LOG, e, "log.3"));
  IrComputation *callee = ir_computation_new(m, "callee");
  IrInstr *qp = param(callee, &s, 0, "qp");
  ir_set_root(callee, op1(callee, IR_OP_ABS, qp, "abs.4"));
  IrInstr *x = param(c, &s, 0, "x");
  IrShape i32 = ir_shape_scalar(IR_S32);
  IrInstr *idx = param(c, &i32, 1, "idx");
  IrInstr *cond = ir_instr_new(c, IR_OP_CONDITIONAL, &s, (IrInstr *[]){idx, x, x}, 3, "conditional.5");
  IrComputation *br[2] = {small, big};
  ir_attr_set_comps(cond, "branch_computations", br, 2, true);
  IrInstr *call = ir_instr_new(c, IR_OP_CALL, &s, &cond, 1, "call.6");
  ir_attr_set_comp(call, "to_apply", callee);
  ir_set_root(c, call);
  KernelPlan *p = plan(m);
  CHECK(p && p->nkernels == 5);
  CHECK(p->kernels[0].kind == KERNEL_CONTROL && p->kernels[0].bytes_read == 4);
  CHECK_STR(p->kernels[1].name, "negate.1");
  CHECK(p->kernels[1].launches == 0); /* the cheaper branch is not counted */
  CHECK(p->kernels[2].launches == 1 && p->kernels[3].launches == 1);
  CHECK_STR(p->kernels[4].name, "abs.4");
  CHECK(p->launches == 3); /* the branch index's read-back launches nothing */
  plan_free(p);
  ir_module_free(m);
}

TEST(no_entry_is_an_error) {
  IrModule *m = ir_module_new("empty");
  FxError err;
  fx_error_clear(&err);
  CHECK(plan_build(m, device_default(), &err) == NULL);
  CHECK_CONTAINS(err.msg, "no entry computation");
  ir_module_free(m);
}


static IrModule *parse_hlo(const char *text) {
  FxError e = {0};
  IrModule *m = hlo_parse(text, strlen(text), "t.hlo", &e);
  if (!m) fx_error_print(stderr, &e);
  return m;
}

static const PlanBuffer *buf(const KernelPlan *p, const char *name) {
  for (int q = 0; q < p->nbuffers; q++)
    if (strcmp(p->buffers[q].producer->name, name) == 0 && p->buffers[q].output < 0) return &p->buffers[q];
  return NULL;
}

static const char *reused_name(const KernelPlan *p, const PlanBuffer *b) {
  return b && b->reuses >= 0 ? p->buffers[b->reuses].producer->name : "(fresh)";
}

TEST(buffers_reuse_dead_memory_of_same_or_larger_size) {
  IrModule *m = parse_hlo("HloModule t\n"
                          "ENTRY main {\n"
                          "  x = f32[1024] parameter(0)\n"
                          "  a = f32[1024] exponential(x)\n"
                          "  b = f32[1024] negate(a)\n"
                          "  c = f32[1024] add(b, x)\n"
                          "  d = f32[512] slice(c), slice={[0:512]}\n"
                          "  e = f32[2048] concatenate(c, c), dimensions={0}\n"
                          "  f = f32[512] add(d, d)\n"
                          "  ROOT t = (f32[2048], f32[512]) tuple(e, f)\n"
                          "}\n");
  CHECK(m != NULL);
  if (!m) return;
  KernelPlan *p = plan(m);
  CHECK(p && p->nbuffers == 6);
  if (!p) return;
  const PlanBuffer *a = buf(p, "a"), *b = buf(p, "b"), *c = buf(p, "c"), *d = buf(p, "d"), *e = buf(p, "e"),
                   *f = buf(p, "f");
  CHECK(a && b && c && d && e && f);
  if (!(a && b && c && d && e && f)) return;
  /* live ranges in instruction order: a is read last by b, c by e, e and f reach the root */
  CHECK(a->def == 1 && a->last_use == 2 && !a->live_out);
  CHECK(c->def == 3 && c->last_use == 5 && !c->live_out);
  CHECK(e->live_out && f->live_out);
  /* a's last reader (b) has run when c is written: c takes a's memory; d (smaller) takes b's */
  CHECK(a->slot == 0 && a->reuses < 0);
  CHECK(b->slot == 1 && b->reuses < 0);
  CHECK_STR(reused_name(p, c), "a");
  CHECK(c->slot == 0);
  CHECK_STR(reused_name(p, d), "b");
  CHECK(d->slot == 1);
  /* e is live-out and larger than any slot; f is live-out: both fresh */
  CHECK(e->reuses < 0 && e->slot == 2 && f->reuses < 0 && f->slot == 3 && e->slot2 < 0 && f->slot2 < 0);
  CHECK(p->nslots == 4);
  CHECK(p->slot_bytes[0] == 4096 && p->slot_bytes[1] == 4096 && p->slot_bytes[2] == 8192 && p->slot_bytes[3] == 2048);
  CHECK(p->buffer_bytes == 3 * 4096 + 2048 + 8192 + 2048);
  CHECK(p->slot_total == 4096 + 4096 + 8192 + 2048);
  plan_free(p);
  ir_module_free(m);
}

TEST(buffers_live_through_tuples_and_loops) {
  IrModule *m = parse_hlo("HloModule t\n"
                          "cond {\n"
                          "  s = (s32[], f32[256]) parameter(0)\n"
                          "  i = s32[] get-tuple-element(s), index=0\n"
                          "  n = s32[] constant(3)\n"
                          "  ROOT lt = pred[] compare(i, n), direction=LT\n"
                          "}\n"
                          "body {\n"
                          "  s = (s32[], f32[256]) parameter(0)\n"
                          "  i = s32[] get-tuple-element(s), index=0\n"
                          "  v = f32[256] get-tuple-element(s), index=1\n"
                          "  one = s32[] constant(1)\n"
                          "  i2 = s32[] add(i, one)\n"
                          "  h = f32[256] exponential(v)\n"
                          "  h2 = f32[256] negate(h)\n"
                          "  h3 = f32[256] sine(h2)\n"
                          "  ROOT r = (s32[], f32[256]) tuple(i2, h3)\n"
                          "}\n"
                          "ENTRY main {\n"
                          "  x = f32[256] parameter(0)\n"
                          "  a = f32[256] exponential(x)\n"
                          "  t = (f32[256], f32[256]) tuple(a, x)\n"
                          "  g = f32[256] get-tuple-element(t), index=0\n"
                          "  b = f32[256] negate(x)\n"
                          "  c = f32[256] add(g, b)\n"
                          "  d = f32[256] negate(c)\n"
                          "  zero = s32[] constant(0)\n"
                          "  init = (s32[], f32[256]) tuple(zero, d)\n"
                          "  w = (s32[], f32[256]) while(init), condition=cond, body=body\n"
                          "  wv = f32[256] get-tuple-element(w), index=1\n"
                          "  e = f32[256] cosine(x)\n"
                          "  ROOT y = f32[256] add(wv, e)\n"
                          "}\n");
  CHECK(m != NULL);
  if (!m) return;
  KernelPlan *p = plan(m);
  CHECK(p != NULL);
  if (!p) return;
  const PlanBuffer *a = buf(p, "a"), *b = buf(p, "b"), *c = buf(p, "c"), *d = buf(p, "d"), *e = buf(p, "e"),
                   *h = buf(p, "h"), *h2 = buf(p, "h2"), *h3 = buf(p, "h3"), *i2 = buf(p, "i2"), *lt = buf(p, "lt");
  CHECK(a && b && c && d && e && h && h2 && h3 && i2 && lt);
  if (!(a && b && c && d && e && h && h2 && h3 && i2 && lt)) return;
  /* a is read through the tuple and get-tuple-element by c: it lives until c, so b cannot take it */
  CHECK_STR(a->comp->instrs[a->last_use]->name, "c");
  CHECK(b->reuses < 0 && b->slot != a->slot);
  CHECK(c->reuses < 0);
  /* d takes the memory of a (a and b are both dead; the first of equal size wins) */
  CHECK_STR(reused_name(p, d), "a");
  /* d goes into the loop: the loop's result may be d itself, so d lives as long as the loop's result
     (until y), and e cannot take d's memory; e takes b's or c's */
  CHECK_STR(d->comp->instrs[d->last_use]->name, "y");
  CHECK(e->slot != d->slot && e->reuses >= 0);
  CHECK_STR(reused_name(p, e), "b");
  /* in the body: h is dead once h2 ran, so h3 would fit in it, but h3 and i2 are the body's
     results (the next iteration's state): live-out, each with two slots of its own that alternate
     across iterations (an iteration never writes the state it reads) */
  CHECK(!h->live_out && h2->reuses < 0 && h3->live_out && h3->reuses < 0 && i2->live_out);
  CHECK(h3->slot2 >= 0 && h3->slot2 != h3->slot && h3->slot2 != h->slot && h3->slot2 != h2->slot);
  CHECK(plan_buffer_of(p, h3->producer, -1) == h3 && p->slot_bytes[h3->slot2] == 1024);
  CHECK(i2->slot2 >= 0 && p->slot_bytes[i2->slot2] == 4);
  CHECK(h->slot2 < 0 && d->slot2 < 0 && e->slot2 < 0);
  /* the condition's result (read by the loop machinery each iteration) alternates too; the entry's
     result goes to the caller: one fresh slot */
  CHECK(lt->live_out && lt->slot2 >= 0 && p->slot_bytes[lt->slot2] == 1 && strcmp(lt->comp->name, "cond") == 0);
  const PlanBuffer *y = buf(p, "y");
  CHECK(y && y->live_out && y->slot2 < 0);
  plan_free(p);
  ir_module_free(m);
}

int main(void) {
  RUN(unfused_elementwise_and_free_ops);
  RUN(same_operand_twice_is_read_once_and_layouts_matter);
  RUN(fusion_is_one_kernel_of_its_kind);
  RUN(while_loop_with_a_known_trip_count_runs_as_a_for_loop);
  RUN(while_loop_with_an_unknown_trip_count_counts_condition_and_read_back);
  RUN(trip_counts);
  RUN(trip_count_needs_an_integer_counter);
  RUN(trip_count_through_fusions);
  RUN(trip_count_through_a_multi_output_fusion);
  RUN(library_calls_slices_and_in_place_updates);
  RUN(conditional_counts_costliest_branch_and_call_walks_in);
  RUN(no_entry_is_an_error);
  RUN(buffers_reuse_dead_memory_of_same_or_larger_size);
  RUN(buffers_live_through_tuples_and_loops);
  return check_summary();
}

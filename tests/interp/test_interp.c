/* test_interp.c — the reference interpreter on hand-built modules: elementwise semantics per type
 * (f16/bf16 rounding, integer wraparound, division by zero, shifts), data movement, reduce, dot,
 * convolution, sort with a comparator, while loops, rng determinism and the interrupt flag. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/runtime.h"
#include "../check.h"

static IrModule *M;
static IrComputation *C;

static void begin(void) {
  M = ir_module_new("t");
  C = ir_computation_new(M, "main");
  C->is_entry = true;
  M->entry = C;
}

static IrShape shp(IrType t, int rank, int64_t d0, int64_t d1) {
  int64_t d[2] = {d0, d1};
  return ir_shape_array(&M->arena, t, rank, d);
}

static IrInstr *param(IrComputation *c, int n, IrShape s) {
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, NULL);
  p->param_number = n;
  IrInstr **np = arena_alloc(&M->arena, sizeof *np * (size_t)(n + 1));
  for (int k = 0; k < c->nparams; k++) np[k] = c->params[k];
  np[n] = p;
  c->params = np;
  if (c->nparams < n + 1) c->nparams = n + 1;
  return p;
}

static IrInstr *op2(IrComputation *c, IrOpcode op, IrShape s, IrInstr *a, IrInstr *b) {
  IrInstr *ops[2] = {a, b};
  return ir_instr_new(c, op, &s, ops, b ? 2 : 1, NULL);
}

static RtTensor *vec(IrType t, int64_t n, const double *v) {
  FxError e = {0};
  RtTensor *x = rt_tensor_new(t, 1, &n, &e);
  for (int64_t k = 0; k < n; k++) {
    if (ir_type_is_float(t)) rt_set_f(x, k, v[k]);
    else rt_set_i(x, k, (int64_t)v[k]);
  }
  return x;
}

static RtTensor *run1(RtTensor **args, int n, FxError *e) {
  RtTensor *r = NULL;
  RtOptions o = {.seed = 42};
  ir_set_root(C, C->instrs[C->ninstrs - 1]);
  if (!rt_interp_run(M, args, n, &o, &r, NULL, e)) return NULL;
  return r;
}

static void end(RtTensor **ts, int n) {
  for (int k = 0; k < n; k++) rt_tensor_unref(ts[k]);
  ir_module_free(M);
}

TEST(f16_rounding) {
  CHECK(rt_f32_to_f16(1.0f) == 0x3c00);
  CHECK(rt_f32_to_f16(65504.0f) == 0x7bff);
  CHECK(rt_f32_to_f16(65520.0f) == 0x7c00);       /* rounds to inf */
  CHECK(rt_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00); /* tie to even */
  CHECK(rt_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
  CHECK(rt_f32_to_f16(0x1p-24f) == 0x0001);        /* smallest subnormal */
  CHECK(rt_f32_to_f16(0x1p-25f) == 0x0000);        /* tie to even: 0 */
  CHECK(rt_f16_to_f32(0x0001) == 0x1p-24f);
  CHECK(rt_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80); /* tie to even */
  CHECK(rt_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-16f) == 0x3f81);
  CHECK(isnan(rt_bf16_to_f32(rt_f32_to_bf16(NAN))));
}

TEST(add_f16_rounds_each_op) {
  begin();
  IrShape s = shp(IR_F16, 1, 2, 0);
  IrInstr *a = param(C, 0, s), *b = param(C, 1, s);
  op2(C, IR_OP_ADD, s, a, b);
  double av[2] = {1.0, 2048.0}, bv[2] = {0x1p-11, 1.0};
  RtTensor *x = vec(IR_F16, 2, av), *y = vec(IR_F16, 2, bv);
  RtTensor *args[2] = {x, y};
  FxError e = {0};
  RtTensor *r = run1(args, 2, &e);
  CHECK(r != NULL);
  if (r) {
    CHECK(rt_get_f(r, 0) == 1.0);    /* 1 + 2^-11 ties to even: 1 */
    CHECK(rt_get_f(r, 1) == 2048.0); /* 2049 not representable: ties to 2048 */
  }
  RtTensor *all[3] = {x, y, r};
  end(all, 3);
}

TEST(integer_semantics) {
  begin();
  IrShape s = shp(IR_S32, 1, 4, 0);
  IrInstr *a = param(C, 0, s), *b = param(C, 1, s);
  IrInstr *d = op2(C, IR_OP_DIVIDE, s, a, b);
  IrInstr *rm = op2(C, IR_OP_REMAINDER, s, a, b);
  IrInstr *sh = op2(C, IR_OP_SHL, s, a, b);
  IrInstr *sra = op2(C, IR_OP_SHRA, s, a, b);
  IrInstr *ad = op2(C, IR_OP_ADD, s, a, a);
  IrInstr *t[5] = {d, rm, sh, sra, ad};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 5};
  IrShape el[5] = {s, s, s, s, s};
  ts.tuple = el;
  ir_instr_new(C, IR_OP_TUPLE, &ts, t, 5, NULL);
  double av[4] = {7, -2147483648.0, -8, 2147483647}, bv[4] = {0, -1, 40, 2};
  RtTensor *x = vec(IR_S32, 4, av), *y = vec(IR_S32, 4, bv);
  RtTensor *args[2] = {x, y};
  FxError e = {0};
  RtTensor *r = run1(args, 2, &e);
  CHECK(r && r->ntuple == 5);
  if (r && r->ntuple == 5) {
    CHECK(rt_get_i(r->tuple[0], 0) == -1);          /* 7 / 0 = -1 */
    CHECK(rt_get_i(r->tuple[0], 1) == INT32_MIN);   /* MIN / -1 = MIN */
    CHECK(rt_get_i(r->tuple[0], 2) == 0);           /* -8 / 40 */
    CHECK(rt_get_i(r->tuple[1], 0) == 7);           /* 7 % 0 = 7 */
    CHECK(rt_get_i(r->tuple[1], 1) == 0);           /* MIN % -1 = 0 */
    CHECK(rt_get_i(r->tuple[2], 2) == 0);           /* shift by 40 >= 32: 0 */
    CHECK(rt_get_i(r->tuple[3], 2) == -1);          /* -8 >> 40 arithmetic: -1 */
    CHECK(rt_get_i(r->tuple[2], 3) == -4);          /* 0x7fffffff << 2 wraps */
    CHECK(rt_get_i(r->tuple[4], 3) == -2);          /* MAX + MAX wraps */
  }
  RtTensor *all[3] = {x, y, r};
  end(all, 3);
}

TEST(convert_saturates_and_nan_is_zero) {
  begin();
  IrShape s = shp(IR_F32, 1, 4, 0), o = shp(IR_S8, 1, 4, 0);
  IrInstr *a = param(C, 0, s);
  op2(C, IR_OP_CONVERT, o, a, NULL);
  double av[4] = {300.0, -300.0, NAN, -2.7};
  RtTensor *x = vec(IR_F32, 4, av);
  FxError e = {0};
  RtTensor *r = run1(&x, 1, &e);
  CHECK(r != NULL);
  if (r) {
    CHECK(rt_get_i(r, 0) == 127);
    CHECK(rt_get_i(r, 1) == -128);
    CHECK(rt_get_i(r, 2) == 0);
    CHECK(rt_get_i(r, 3) == -2);
  }
  RtTensor *all[2] = {x, r};
  end(all, 2);
}

/* add(p0, p1) scalar computation */
static IrComputation *adder(IrType t) {
  IrComputation *f = ir_computation_new(M, "add_f");
  IrShape s = ir_shape_scalar(t);
  IrInstr *x = param(f, 0, s), *y = param(f, 1, s);
  IrInstr *r = op2(f, IR_OP_ADD, s, x, y);
  ir_set_root(f, r);
  return f;
}

TEST(reduce_rows_and_dot) {
  begin();
  IrComputation *f = adder(IR_F32);
  IrShape s = shp(IR_F32, 2, 2, 3);
  IrInstr *a = param(C, 0, s);
  IrInstr *z = ir_constant_scalar(C, IR_F32, 0.5, NULL);
  IrShape rs = shp(IR_F32, 1, 2, 0);
  IrInstr *red = op2(C, IR_OP_REDUCE, rs, a, z);
  int64_t dims[1] = {1};
  ir_attr_set_dims(red, "dimensions", dims, 1);
  ir_attr_set_comp(red, "to_apply", f);
  IrShape ds = shp(IR_F32, 2, 2, 2);
  IrInstr *dot = op2(C, IR_OP_DOT, ds, a, a);
  ir_attr_set_text(dot, "lhs_contracting_dims", "{1}");
  ir_attr_set_text(dot, "rhs_contracting_dims", "{1}");
  IrInstr *t[2] = {red, dot};
  IrShape el[2] = {rs, ds};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = el};
  ir_instr_new(C, IR_OP_TUPLE, &ts, t, 2, NULL);
  FxError e = {0};
  int64_t d[2] = {2, 3};
  RtTensor *x = rt_tensor_new(IR_F32, 2, d, &e);
  for (int k = 0; k < 6; k++) rt_set_f(x, k, k + 1);
  RtTensor *r = run1(&x, 1, &e);
  CHECK(r != NULL);
  if (r) {
    CHECK(rt_get_f(r->tuple[0], 0) == 6.5);
    CHECK(rt_get_f(r->tuple[0], 1) == 15.5);
    CHECK(rt_get_f(r->tuple[1], 0) == 14);  /* [1,2,3].[1,2,3] */
    CHECK(rt_get_f(r->tuple[1], 1) == 32);  /* [1,2,3].[4,5,6] */
    CHECK(rt_get_f(r->tuple[1], 3) == 77);
  }
  RtTensor *all[2] = {x, r};
  end(all, 2);
}

TEST(pad_negative_and_interior) {
  begin();
  IrShape s = shp(IR_S32, 1, 3, 0);
  IrInstr *a = param(C, 0, s);
  IrInstr *z = ir_constant_scalar(C, IR_S32, 9, NULL);
  /* lo=-1, hi=1, interior=1: [1,2,3] -> [1,9,2,9,3] -> drop first -> [9,2,9,3,9] */
  IrShape o = shp(IR_S32, 1, 5, 0);
  IrInstr *p = op2(C, IR_OP_PAD, o, a, z);
  ir_attr_set_text(p, "padding", "-1_1_1");
  double av[3] = {1, 2, 3};
  RtTensor *x = vec(IR_S32, 3, av);
  FxError e = {0};
  RtTensor *r = run1(&x, 1, &e);
  CHECK(r != NULL);
  if (r) {
    int want[5] = {9, 2, 9, 3, 9};
    for (int k = 0; k < 5; k++) CHECK(rt_get_i(r, k) == want[k]);
  }
  RtTensor *all[2] = {x, r};
  end(all, 2);
}

TEST(dynamic_slice_clamps) {
  begin();
  IrShape s = shp(IR_F32, 1, 5, 0);
  IrInstr *a = param(C, 0, s);
  IrInstr *st = param(C, 1, ir_shape_scalar(IR_S32));
  IrShape o = shp(IR_F32, 1, 2, 0);
  IrInstr *ops[2] = {a, st};
  IrInstr *ds = ir_instr_new(C, IR_OP_DYNAMIC_SLICE, &o, ops, 2, NULL);
  ir_attr_set_text(ds, "dynamic_slice_sizes", "{2}");
  double av[5] = {0, 1, 2, 3, 4};
  RtTensor *x = vec(IR_F32, 5, av);
  FxError e = {0};
  RtTensor *i = rt_tensor_new(IR_S32, 0, NULL, &e);
  rt_set_i(i, 0, 7); /* clamped to 3 */
  RtTensor *args[2] = {x, i};
  RtTensor *r = run1(args, 2, &e);
  CHECK(r != NULL);
  if (r) {
    CHECK(rt_get_f(r, 0) == 3);
    CHECK(rt_get_f(r, 1) == 4);
  }
  RtTensor *all[3] = {x, i, r};
  end(all, 3);
}

TEST(sort_descending_with_comparator) {
  begin();
  IrComputation *cmp = ir_computation_new(M, "gt");
  IrInstr *x = param(cmp, 0, ir_shape_scalar(IR_F32)), *y = param(cmp, 1, ir_shape_scalar(IR_F32));
  IrInstr *g = op2(cmp, IR_OP_COMPARE, ir_shape_scalar(IR_PRED), x, y);
  ir_attr_set_text(g, "direction", "GT");
  ir_set_root(cmp, g);
  IrShape s = shp(IR_F32, 1, 5, 0);
  IrInstr *a = param(C, 0, s);
  IrInstr *so = op2(C, IR_OP_SORT, s, a, NULL);
  int64_t d0 = 0;
  ir_attr_set_dims(so, "dimensions", &d0, 1);
  ir_attr_set_comp(so, "to_apply", cmp);
  double av[5] = {3, -1, 4, 1, 5};
  RtTensor *t = vec(IR_F32, 5, av);
  FxError e = {0};
  RtTensor *r = run1(&t, 1, &e);
  CHECK(r != NULL);
  if (r) {
    double want[5] = {5, 4, 3, 1, -1};
    for (int k = 0; k < 5; k++) CHECK(rt_get_f(r, k) == want[k]);
  }
  RtTensor *all[2] = {t, r};
  end(all, 2);
}

/* top-k keeps the best k in order, stable among ties (the earlier index first), NaN as the
   largest; smallest first with largest=false */
TEST(topk_selects_stably) {
  for (int largest = 0; largest < 2; largest++) {
    begin();
    IrShape s = shp(IR_F32, 2, 2, 6);
    IrShape parts[2] = {shp(IR_F32, 2, 2, 3), shp(IR_S32, 2, 2, 3)};
    IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = parts};
    IrInstr *a = param(C, 0, s);
    IrInstr *tk = op2(C, IR_OP_TOPK, ts, a, NULL);
    ir_attr_set_text(tk, "k", "3");
    ir_attr_set_text(tk, "largest", largest ? "true" : "false");
    double av[12] = {1, 7, 3, 7, NAN, 2, /* row 2 */ 5, 5, 5, -1, 5, 0};
    FxError e = {0};
    int64_t dims[2] = {2, 6};
    RtTensor *t = rt_tensor_new(IR_F32, 2, dims, &e);
    for (int k = 0; k < 12; k++) rt_set_f(t, k, av[k]);
    RtTensor *r = run1(&t, 1, &e);
    CHECK(r != NULL && r->type == IR_TUPLE);
    if (r && r->type == IR_TUPLE) {
      int64_t want_l[6] = {4, 1, 3, 0, 1, 2}, want_s[6] = {0, 5, 2, 3, 5, 0};
      const int64_t *w = largest ? want_l : want_s;
      for (int k = 0; k < 6; k++) {
        CHECK(rt_get_i(r->tuple[1], k) == w[k]);
        double got = rt_get_f(r->tuple[0], k), exp = av[(k / 3) * 6 + w[k]];
        CHECK(got == exp || (got != got && exp != exp));
      }
    }
    RtTensor *all[2] = {t, r};
    end(all, 2);
  }
}

/* while (i < n) i += 1 over a (s32[], f32[]) state, f += 0.5 */
static void build_loop(int64_t n) {
  IrShape si = ir_shape_scalar(IR_S32), sf = ir_shape_scalar(IR_F32);
  IrShape el[2] = {si, sf};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = el};
  IrComputation *cond = ir_computation_new(M, "cond");
  IrInstr *cp = param(cond, 0, ts);
  IrInstr *ci = op2(cond, IR_OP_GET_TUPLE_ELEMENT, si, cp, NULL);
  ir_attr_set_text(ci, "index", "0");
  IrInstr *lim = ir_constant_scalar(cond, IR_S32, (double)n, NULL);
  IrInstr *lt = op2(cond, IR_OP_COMPARE, ir_shape_scalar(IR_PRED), ci, lim);
  ir_attr_set_text(lt, "direction", "LT");
  ir_set_root(cond, lt);
  IrComputation *body = ir_computation_new(M, "body");
  IrInstr *bp = param(body, 0, ts);
  IrInstr *bi = op2(body, IR_OP_GET_TUPLE_ELEMENT, si, bp, NULL);
  ir_attr_set_text(bi, "index", "0");
  IrInstr *bf = op2(body, IR_OP_GET_TUPLE_ELEMENT, sf, bp, NULL);
  ir_attr_set_text(bf, "index", "1");
  IrInstr *one = ir_constant_scalar(body, IR_S32, 1, NULL);
  IrInstr *half = ir_constant_scalar(body, IR_F32, 0.5, NULL);
  IrInstr *ni = op2(body, IR_OP_ADD, si, bi, one), *nf = op2(body, IR_OP_ADD, sf, bf, half);
  IrInstr *tt[2] = {ni, nf};
  ir_set_root(body, ir_instr_new(body, IR_OP_TUPLE, &ts, tt, 2, NULL));
  IrInstr *i0 = ir_constant_scalar(C, IR_S32, 0, NULL), *f0 = ir_constant_scalar(C, IR_F32, 0, NULL);
  IrInstr *t0[2] = {i0, f0};
  IrInstr *init = ir_instr_new(C, IR_OP_TUPLE, &ts, t0, 2, NULL);
  IrInstr *w = op2(C, IR_OP_WHILE, ts, init, NULL);
  ir_attr_set_comp(w, "condition", cond);
  ir_attr_set_comp(w, "body", body);
  ir_set_root(C, w);
}

TEST(while_loop) {
  begin();
  build_loop(10);
  FxError e = {0};
  RtTensor *r = run1(NULL, 0, &e);
  CHECK(r != NULL);
  if (r) {
    CHECK(rt_get_i(r->tuple[0], 0) == 10);
    CHECK(rt_get_f(r->tuple[1], 0) == 5.0);
  }
  end(&r, 1);
}

TEST(interrupt_stops_a_long_loop) {
  begin();
  build_loop(2000000000);
  volatile int flag = 1;
  RtOptions o = {.interrupted = &flag};
  RtTensor *r = NULL;
  FxError e = {0};
  CHECK(!rt_interp_run(M, NULL, 0, &o, &r, NULL, &e));
  CHECK_CONTAINS(e.msg, "interrupted");
  CHECK(r == NULL);
  ir_module_free(M);
}

TEST(rng_is_deterministic_per_seed) {
  begin();
  IrInstr *lo = ir_constant_scalar(C, IR_F32, 0, NULL), *hi = ir_constant_scalar(C, IR_F32, 1, NULL);
  IrShape s = shp(IR_F32, 1, 64, 0);
  IrInstr *g = op2(C, IR_OP_RNG, s, lo, hi);
  ir_attr_set_text(g, "distribution", "rng_uniform");
  FxError e = {0};
  RtTensor *r1 = run1(NULL, 0, &e), *r2 = run1(NULL, 0, &e);
  RtOptions o = {.seed = 7};
  RtTensor *r3 = NULL;
  CHECK(rt_interp_run(M, NULL, 0, &o, &r3, NULL, &e));
  CHECK(r1 && r2 && r3);
  if (r1 && r2 && r3) {
    CHECK(memcmp(r1->data, r2->data, r1->bytes) == 0);
    CHECK(memcmp(r1->data, r3->data, r1->bytes) != 0);
    double mn = 1, mx = 0;
    for (int k = 0; k < 64; k++) {
      mn = fmin(mn, rt_get_f(r1, k));
      mx = fmax(mx, rt_get_f(r1, k));
    }
    CHECK(mn >= 0 && mx < 1 && mx - mn > 0.5);
  }
  RtTensor *all[3] = {r1, r2, r3};
  end(all, 3);
}

TEST(threefry_known_answers) {
  uint32_t o[2];
  rt_threefry2x32(0, 0, 0, 0, o); /* Random123 / JAX known-answer vectors */
  CHECK(o[0] == 0x6b200159u && o[1] == 0x99ba4efeu);
  rt_threefry2x32(0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, o);
  CHECK(o[0] == 0xc4923a9cu && o[1] == 0x483df7a0u);
}

TEST(memory_budget_and_overflow) {
  FxError e = {0};
  rt_set_max_memory(1000);
  int64_t d = 1000;
  RtTensor *t = rt_tensor_new(IR_F32, 1, &d, &e);
  CHECK(t == NULL);
  CHECK_CONTAINS(e.msg, "out of memory budget");
  rt_set_max_memory(0);
  fx_error_clear(&e);
  int64_t big[3] = {1LL << 40, 1LL << 40, 1LL << 40};
  CHECK(rt_tensor_new(IR_F32, 3, big, &e) == NULL);
  CHECK_CONTAINS(e.msg, "overflows");
  CHECK(rt_live_bytes() == 0);
}

TEST(compare_reports_worst_element) {
  FxError e = {0};
  int64_t d[2] = {2, 2};
  RtTensor *a = rt_tensor_new(IR_F32, 2, d, &e), *b = rt_tensor_new(IR_F32, 2, d, &e);
  for (int k = 0; k < 4; k++) {
    rt_set_f(a, k, k);
    rt_set_f(b, k, k);
  }
  RtCompare c;
  rt_compare(a, b, &c);
  CHECK(c.ok);
  rt_set_f(a, 3, 3.5);
  rt_set_f(a, 1, 1.000001);
  rt_compare(a, b, &c);
  CHECK(!c.ok);
  CHECK(c.worst_index == 3);
  CHECK_CONTAINS(c.what, "element [1,1] is 3.5, the reference has 3");
  rt_tensor_unref(a);
  rt_tensor_unref(b);
}

/* Float errors are relative to the element, the output's root-mean-square or 1, whichever is
 * largest: a summation-order difference in a small element of a large output passes, a real
 * difference of the same size relative to the output's scale does not. */
TEST(compare_scales_with_the_output) {
  FxError e = {0};
  int64_t d[1] = {4};
  RtTensor *got = rt_tensor_new(IR_F32, 1, d, &e), *ref = rt_tensor_new(IR_F32, 1, d, &e);
  float v[4] = {40, -50, 0.89f, 60}; /* root-mean-square about 43.6 */
  for (int k = 0; k < 4; k++) {
    rt_set_f(got, k, v[k]);
    rt_set_f(ref, k, v[k]);
  }
  RtCompare c;
  rt_set_f(got, 2, 0.89001f); /* 1e-5 off: 2.3e-7 of the output's scale */
  rt_compare(got, ref, &c);
  CHECK(c.ok && c.err > 1e-7 && c.err < 1e-6);
  rt_set_f(got, 2, 0.9f); /* 0.01 off: 2.3e-4 of the output's scale */
  rt_compare(got, ref, &c);
  CHECK(!c.ok && c.worst_index == 2);
  CHECK_CONTAINS(c.what, "element [2] is 0.899999976, the reference has 0.889999986");
  /* an output of small values keeps the floor of 1 */
  for (int k = 0; k < 4; k++) {
    rt_set_f(got, k, 0.001f * (float)k);
    rt_set_f(ref, k, 0.001f * (float)k);
  }
  rt_set_f(got, 1, 0.00102f);
  rt_compare(got, ref, &c);
  CHECK(!c.ok && c.worst_index == 1);
  rt_tensor_unref(got);
  rt_tensor_unref(ref);
}

/* Random inputs: a large range is filled by the CPUs side by side, each element's value only a
 * function of its index. Filled in one call or in small pieces (one thread each), every type gives
 * the same bytes, and element i is Threefry2x32 of (seed, stream) at counter i. */
TEST(random_inputs_are_the_same_filled_side_by_side) {
  const IrType types[] = {IR_F32, IR_BF16, IR_S32, IR_PRED, IR_C64};
  int64_t n = 300000;
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
    FxError e = {0};
    RtTensor *a = rt_tensor_new(types[k], 1, &n, &e), *b = rt_tensor_new(types[k], 1, &n, &e);
    CHECK(a && b);
    if (!a || !b) {
      rt_tensor_unref(a);
      rt_tensor_unref(b);
      continue;
    }
    rt_tensor_fill_random_range(a, 42, 7, 0, n);
    for (int64_t at = 0; at < n; at += 1000) rt_tensor_fill_random_range(b, 42, 7, at, at + 1000 < n ? at + 1000 : n);
    CHECK(memcmp(a->data, b->data, (size_t)a->bytes) == 0);
    if (types[k] == IR_F32) {
      uint32_t o[2];
      int64_t i = 123457;
      rt_threefry2x32(42, 0 ^ 7u * 0x9E3779B9u, (uint32_t)i, 0, o);
      CHECK(((float *)a->data)[i] == (float)((double)(o[0] >> 8) * 0x1p-23 - 1.0));
    }
    rt_tensor_unref(a);
    rt_tensor_unref(b);
  }
}

int main(void) {
  RUN(f16_rounding);
  RUN(add_f16_rounds_each_op);
  RUN(integer_semantics);
  RUN(convert_saturates_and_nan_is_zero);
  RUN(reduce_rows_and_dot);
  RUN(pad_negative_and_interior);
  RUN(dynamic_slice_clamps);
  RUN(sort_descending_with_comparator);
  RUN(topk_selects_stably);
  RUN(while_loop);
  RUN(interrupt_stops_a_long_loop);
  RUN(rng_is_deterministic_per_seed);
  RUN(threefry_known_answers);
  RUN(random_inputs_are_the_same_filled_side_by_side);
  RUN(memory_budget_and_overflow);
  RUN(compare_reports_worst_element);
  RUN(compare_scales_with_the_output);
  return check_summary();
}

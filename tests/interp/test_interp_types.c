/* test_interp_types.c — the reference interpreter beyond the common cases, on HLO text with values
 * worked out by hand: the shared window and dim_labels accessors, convolution with batch groups,
 * select-and-scatter, variadic reduce-window, the f8 types, s4/u4, complex numbers, cholesky,
 * batch-norm, the asynchronous start/done pairs on one device, the packed dot/convolution against
 * the generic loops, the reuse of values that do not change between calls, and the tiled copies
 * of transpose, reverse, slice, broadcast and dynamic-slice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "../../compiler/hlo/hlo.h"
#include "../../runtime/backend.h"
#include "../../runtime/interp/interp_internal.h"
#include "../check.h"

static IrModule *parse(const char *text) {
  FxError e = {0};
  IrModule *m = hlo_parse(text, strlen(text), "t.hlo", &e);
  if (!m) fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.col, e.msg);
  return m;
}

static RtTensor *arr(IrType t, int rank, const int64_t *dims, const double *v) {
  FxError e = {0};
  RtTensor *x = rt_tensor_new(t, rank, dims, &e);
  for (int64_t k = 0; x && k < x->count; k++) {
    if (ir_type_is_float(t)) rt_set_f(x, k, v[k]);
    else rt_set_i(x, k, (int64_t)v[k]);
  }
  return x;
}

/* Runs m's entry on args (released here); NULL and a message in e on failure. */
static RtTensor *run(IrModule *m, RtTensor **args, int n, FxError *e) {
  RtTensor *r = NULL;
  RtOptions o = {.seed = 1};
  bool ok = m && rt_interp_run(m, args, n, &o, &r, NULL, e);
  if (!ok && m) fprintf(stderr, "run: %s\n", e->msg);
  for (int k = 0; k < n; k++) rt_tensor_unref(args[k]);
  return ok ? r : NULL;
}

static bool values_are(const RtTensor *t, const double *want, int64_t n) {
  if (!t || t->count != n) return false;
  for (int64_t k = 0; k < n; k++)
    if (rt_get_f(t, k) != want[k]) {
      fprintf(stderr, "element %lld is %.9g, expected %.9g\n", (long long)k, rt_get_f(t, k), want[k]);
      return false;
    }
  return true;
}

/* ---------- the shared accessors ---------- */

TEST(window_accessor) {
  IrModule *m = parse("HloModule w\n"
                      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                      "ENTRY e { p = f32[4,6] parameter(0)\n z = f32[] constant(0)\n"
                      " ROOT r = f32[3,2] reduce-window(p, z), window={size=2x3 stride=1x3 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1}, to_apply=add }\n");
  CHECK(m != NULL);
  if (!m) return;
  IrWindow w;
  char why[200];
  const IrInstr *r = m->entry->root;
  CHECK(ir_attr_window(r, 2, &w, why, sizeof why));
  CHECK(w.rank == 2 && w.size[0] == 2 && w.size[1] == 3 && w.stride[0] == 1 && w.stride[1] == 3);
  CHECK(ir_attr_window(r, -1, &w, why, sizeof why) && w.rank == 2); /* rank from size= */
  CHECK(!ir_attr_window(r, 3, &w, why, sizeof why));
  CHECK_STR(why, "window 'size' has 2 entries for 3 dimensions");
  ir_attr_set_text((IrInstr *)r, "window", "{size=2x3 stride=1x0}");
  CHECK(!ir_attr_window(r, 2, &w, why, sizeof why));
  CHECK_STR(why, "window sizes, strides and dilations must be positive in '{size=2x3 stride=1x0}'");
  ir_attr_set_text((IrInstr *)r, "window", "{size=3 pad=1_2 rhs_reversal=1}");
  CHECK(ir_attr_window(r, 1, &w, why, sizeof why) && w.pad_lo[0] == 1 && w.pad_hi[0] == 2 && w.reversal[0]);
  ir_attr_set_text((IrInstr *)r, "window", "{size=3 pad=1x2}");
  CHECK(!ir_attr_window(r, 1, &w, why, sizeof why));
  CHECK_STR(why, "malformed window pad in '{size=3 pad=1x2}'");
  ir_attr_remove((IrInstr *)r, "window");
  CHECK(!ir_attr_window(r, 2, &w, why, sizeof why));
  CHECK_STR(why, "reduce-window needs the attribute 'window'");
  CHECK(ir_attr_window(r, -1, &w, why, sizeof why) && w.rank == 0);
  ir_module_free(m);
}

TEST(conv_dims_accessor) {
  IrModule *m = parse("HloModule c\n"
                      "ENTRY e { a = f32[1,8,8,3] parameter(0)\n k = f32[3,3,3,16] parameter(1)\n"
                      " ROOT c = f32[1,6,6,16] convolution(a, k), window={size=3x3}, dim_labels=b01f_01io->b01f }\n");
  CHECK(m != NULL);
  if (!m) return;
  IrInstr *c = m->entry->root;
  IrConvDims d;
  char why[300];
  CHECK(ir_conv_dims(c, &d, why, sizeof why));
  CHECK(d.rank == 4 && d.nspatial == 2 && d.in_batch == 0 && d.in_feature == 3 && d.in_spatial[0] == 1 && d.in_spatial[1] == 2);
  CHECK(d.k_in == 2 && d.k_out == 3 && d.k_spatial[0] == 0 && d.k_spatial[1] == 1);
  CHECK(d.out_batch == 0 && d.out_feature == 3 && d.out_spatial[1] == 2);
  ir_attr_set_text(c, "dim_labels", "bf01_oi01->bf01");
  CHECK(ir_conv_dims(c, &d, why, sizeof why) && d.in_feature == 1 && d.k_out == 0 && d.k_in == 1 && d.out_spatial[0] == 2);
  ir_attr_set_text(c, "dim_labels", "b0f_01io->b01f");
  CHECK(!ir_conv_dims(c, &d, why, sizeof why));
  CHECK_STR(why, "dim_labels 'b0f_01io->b01f' do not match the ranks of f32[1,8,8,3] and f32[3,3,3,16]");
  ir_attr_set_text(c, "dim_labels", "bb1f_01io->b01f");
  CHECK(!ir_conv_dims(c, &d, why, sizeof why));
  CHECK_STR(why, "malformed dim_labels 'bb1f_01io->b01f'");
  ir_module_free(m);
}

/* ---------- convolution with batch groups ---------- */

TEST(convolution_batch_group_count) {
  /* batch 2 split into 2 groups; output feature f reads batch f: out[0,s,f] = sum_w in[f,s+w]*k[w,0,f] */
  IrModule *m = parse("HloModule c\n"
                      "ENTRY e { a = f32[2,3,1] parameter(0)\n k = f32[2,1,2] parameter(1)\n"
                      " ROOT c = f32[1,2,2] convolution(a, k), window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2 }\n");
  int64_t ad[3] = {2, 3, 1}, kd[3] = {2, 1, 2};
  double av[6] = {1, 2, 3, 4, 5, 6}, kv[4] = {1, 2, 3, 4};
  RtTensor *args[2] = {arr(IR_F32, 3, ad, av), arr(IR_F32, 3, kd, kv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 2, &e);
  /* out[0,0,0] = 1*1+2*3, out[0,0,1] = 4*2+5*4, out[0,1,0] = 2*1+3*3, out[0,1,1] = 5*2+6*4 */
  double want[4] = {7, 28, 11, 34};
  CHECK(values_are(r, want, 4));
  rt_tensor_unref(r);
  ir_module_free(m);
  /* two output features per batch group (kout 4, bgc 2) and batch 4: out batch b, feature f reads
     input batch b + (f / 2) * 2 */
  m = parse("HloModule c\n"
            "ENTRY e { a = f32[4,1,1] parameter(0)\n k = f32[1,1,4] parameter(1)\n"
            " ROOT c = f32[2,1,4] convolution(a, k), window={size=1}, dim_labels=b0f_0io->b0f, batch_group_count=2 }\n");
  int64_t ad2[3] = {4, 1, 1}, kd2[3] = {1, 1, 4};
  double av2[4] = {1, 2, 3, 4}, kv2[4] = {10, 100, 1000, 10000};
  RtTensor *args2[2] = {arr(IR_F32, 3, ad2, av2), arr(IR_F32, 3, kd2, kv2)};
  r = run(m, args2, 2, &e);
  double want2[8] = {10, 100, 3000, 30000, 20, 200, 4000, 40000};
  CHECK(values_are(r, want2, 8));
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* ---------- dot and convolution: fast layout against the generic loops ---------- */

/* The interpreter computes real dots and convolutions through a packed layout; the generic
   element-by-element loops define them. Both must give the same bits: same products, same order,
   one rounding. Each case runs twice on the same seeded inputs and the results are compared byte
   for byte. The shapes cover batch dims, two contracting dims in swapped order, a K larger than
   a packed column chunk, few rows against contiguous columns (streamed instead of packed, across
   a column block), widths that are not a multiple of 4, feature and batch groups, strides,
   padding, both dilations, reversal, other dim_labels, and bf16/f16/f64/s32 operands. */
static const char *contraction_cases[] = {
    "ENTRY e { a = f32[3,5,7] parameter(0)\n b = f32[3,7,6] parameter(1)\n"
    " ROOT d = f32[3,5,6] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1} }\n",
    "ENTRY e { a = bf16[4,9,2] parameter(0)\n b = bf16[2,9,5] parameter(1)\n"
    " ROOT d = bf16[4,5] dot(a, b), lhs_contracting_dims={2,1}, rhs_contracting_dims={0,1} }\n",
    "ENTRY e { a = f64[10] parameter(0)\n b = f64[10] parameter(1)\n"
    " ROOT d = f64[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f16[6,3] parameter(0)\n b = f16[3] parameter(1)\n"
    " ROOT d = f32[6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f64[3,9000] parameter(0)\n b = f64[9000,9] parameter(1)\n"
    " ROOT d = f64[3,9] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f64[12,50] parameter(0)\n b = f64[50,40] parameter(1)\n"
    " ROOT d = f64[12,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f64[2,40] parameter(0)\n b = f64[40,2500] parameter(1)\n"
    " ROOT d = f64[2,2500] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f64[2,1,30] parameter(0)\n b = bf16[2,30,20] parameter(1)\n"
    " ROOT d = f64[2,1,20] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1} }\n",
    "ENTRY e { a = s32[2,3,4] parameter(0)\n b = s32[4,2,5] parameter(1)\n"
    " ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_contracting_dims={0} }\n",
    "ENTRY e { a = f32[2,7,8,6] parameter(0)\n k = f32[3,3,3,8] parameter(1)\n"
    " ROOT c = f32[2,3,15,8] convolution(a, k), window={size=3x3 stride=2x1 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=1x0},"
    " dim_labels=b01f_01io->b01f, feature_group_count=2 }\n",
    "ENTRY e { a = f32[2,4,10] parameter(0)\n k = f32[6,4,3] parameter(1)\n"
    " ROOT c = f32[2,6,8] convolution(a, k), window={size=3}, dim_labels=bf0_oi0->bf0 }\n",
    "ENTRY e { a = bf16[2,4,10] parameter(0)\n k = bf16[6,4,3] parameter(1)\n"
    " ROOT c = bf16[2,6,4] convolution(a, k), window={size=3 stride=2}, dim_labels=bf0_oi0->bf0 }\n",
    "ENTRY e { a = f32[4,5,3] parameter(0)\n k = f32[2,3,6] parameter(1)\n"
    " ROOT c = f32[2,4,6] convolution(a, k), window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2 }\n",
    "ENTRY e { a = f32[1,6,6,5] parameter(0)\n k = f32[3,3,1,5] parameter(1)\n"
    " ROOT c = f32[1,6,6,5] convolution(a, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=5 }\n",
    "ENTRY e { a = f64[1,2,3,4,2] parameter(0)\n k = f64[2,2,2,2,3] parameter(1)\n"
    " ROOT c = f64[1,3,4,5,3] convolution(a, k), window={size=2x2x2 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f }\n",
};

TEST(contractions_fast_layout_equals_generic_loops) {
  for (size_t c = 0; c < sizeof contraction_cases / sizeof *contraction_cases; c++) {
    char text[1024];
    snprintf(text, sizeof text, "HloModule k\n%s", contraction_cases[c]);
    IrModule *m = parse(text);
    CHECK(m != NULL);
    if (!m) continue;
    RtTensor *res[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
      IrComputation *e = m->entry;
      RtTensor *args[2];
      FxError err = {0};
      for (int k = 0; k < 2; k++) {
        const IrShape *s = &e->params[k]->shape;
        args[k] = rt_tensor_new(s->type, s->rank, s->dims, &err);
        rt_tensor_fill_random(args[k], 7, (uint64_t)k);
        /* the random values have 23 significant bits, so f64 sums of their products would be
           exact in any order; thirds use every bit, and an order change shows */
        if (s->type == IR_F64)
          for (int64_t q = 0; q < args[k]->count; q++) rt_set_f(args[k], q, rt_get_f(args[k], q) / 3);
      }
      rt_interp_set_fast_contractions(pass == 0);
      res[pass] = run(m, args, 2, &err);
    }
    rt_interp_set_fast_contractions(true);
    CHECK(res[0] && res[1]);
    if (res[0] && res[1]) {
      bool same = res[0]->bytes == res[1]->bytes && memcmp(res[0]->data, res[1]->data, res[0]->bytes) == 0;
      if (!same) fprintf(stderr, "case %zu: the fast layout and the generic loops differ\n", c);
      CHECK(same);
      /* and the sums are not trivially equal: some element is nonzero */
      bool nonzero = false;
      for (int64_t k = 0; k < res[0]->count; k++) nonzero = nonzero || rt_get_f(res[0], k) != 0;
      CHECK(nonzero);
    }
    rt_tensor_unref(res[0]);
    rt_tensor_unref(res[1]);
    ir_module_free(m);
  }
}

/* ---------- data movement in tiles ---------- */

/* Transpose, reverse, strided slice, broadcast and dynamic-slice copy through 32 x 32 tiles of
   their last two dimensions; shapes around and across the tile size, rank 3, and 1-, 2-, 4- and
   16-byte elements, every element checked against the index formula. */
TEST(data_movement_matches_index_formulas) {
  IrModule *m = parse("HloModule mv\n"
                      "ENTRY e { a = f32[3,37,70] parameter(0)\n c = c128[5,33] parameter(1)\n s = s8[40,50] parameter(2)\n"
                      " b = bf16[33] parameter(3)\n i = s32[] parameter(4)\n"
                      " t = f32[70,3,37] transpose(a), dimensions={2,0,1}\n"
                      " r = c128[5,33] reverse(c), dimensions={0,1}\n"
                      " l = s8[13,10] slice(s), slice={[1:40:3], [2:50:5]}\n"
                      " x = bf16[2,33,35] broadcast(b), dimensions={1}\n"
                      " d = f32[2,30,40] dynamic-slice(a, i, i, i), dynamic_slice_sizes={2,30,40}\n"
                      " ROOT o = (f32[70,3,37], c128[5,33], s8[13,10], bf16[2,33,35], f32[2,30,40]) tuple(t, r, l, x, d) }\n");
  CHECK(m != NULL);
  if (!m) return;
  RtTensor *args[5];
  FxError e = {0};
  for (int k = 0; k < 5; k++) {
    const IrShape *sh = &m->entry->params[k]->shape;
    args[k] = rt_tensor_new(sh->type, sh->rank, sh->dims, &e);
    rt_tensor_fill_random(args[k], 11, (uint64_t)k);
  }
  rt_set_i(args[4], 0, 9); /* starts 1 and 7 (clamped) and 9 */
  RtTensor *keep[5];
  for (int k = 0; k < 5; k++) keep[k] = rt_tensor_ref(args[k]);
  RtTensor *o = run(m, args, 5, &e);
  CHECK(o != NULL);
  if (o) {
    int bad = 0;
    const RtTensor *a = keep[0], *t = o->tuple[0], *d = o->tuple[4];
    for (int64_t x = 0; x < 70; x++)
      for (int64_t y = 0; y < 3; y++)
        for (int64_t z = 0; z < 37; z++) bad += rt_get_f(t, (x * 3 + y) * 37 + z) != rt_get_f(a, (y * 37 + z) * 70 + x);
    for (int64_t y = 0; y < 5; y++)
      for (int64_t z = 0; z < 33; z++) {
        double re1, im1, re2, im2;
        rt_get_c(o->tuple[1], y * 33 + z, &re1, &im1);
        rt_get_c(keep[1], (4 - y) * 33 + (32 - z), &re2, &im2);
        bad += re1 != re2 || im1 != im2;
      }
    for (int64_t y = 0; y < 13; y++)
      for (int64_t z = 0; z < 10; z++) bad += rt_get_i(o->tuple[2], y * 10 + z) != rt_get_i(keep[2], (1 + 3 * y) * 50 + 2 + 5 * z);
    for (int64_t w = 0; w < 2; w++)
      for (int64_t y = 0; y < 33; y++)
        for (int64_t z = 0; z < 35; z++) bad += rt_get_f(o->tuple[3], (w * 33 + y) * 35 + z) != rt_get_f(keep[3], y);
    for (int64_t w = 0; w < 2; w++)
      for (int64_t y = 0; y < 30; y++)
        for (int64_t z = 0; z < 40; z++) bad += rt_get_f(d, (w * 30 + y) * 40 + z) != rt_get_f(a, ((1 + w) * 37 + 7 + y) * 70 + 9 + z);
    CHECK(bad == 0);
  }
  rt_tensor_unref(o);
  for (int k = 0; k < 5; k++) rt_tensor_unref(keep[k]);
  ir_module_free(m);
}

/* A broadcast whose dimensions do not increase also transposes (XLA's verifier accepts it): operand
   dimension k goes to result dimension dimensions[k], so o[a][b][c] = q[c][a]. */
TEST(broadcast_with_decreasing_dimensions_transposes) {
  IrModule *m = parse("HloModule bt\n"
                      "ENTRY e { q = f32[2,4] parameter(0)\n ROOT o = f32[4,3,2] broadcast(q), dimensions={2,0} }\n");
  CHECK(m != NULL);
  if (!m) return;
  int64_t qd[2] = {2, 4};
  double qv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  RtTensor *args[1] = {arr(IR_F32, 2, qd, qv)};
  FxError e = {0};
  RtTensor *o = run(m, args, 1, &e);
  CHECK(o != NULL && o->count == 24);
  int bad = 0;
  for (int64_t a = 0; o && a < 4; a++)
    for (int64_t b = 0; b < 3; b++)
      for (int64_t c = 0; c < 2; c++) bad += rt_get_f(o, (a * 3 + b) * 2 + c) != qv[c * 4 + a];
  CHECK(bad == 0);
  rt_tensor_unref(o);
  ir_module_free(m);
}

/* ---------- values that do not change between calls ---------- */

/* A loop body that calls a computation rebuilding iota(1000) and summing its squares on every
   trip: the interpreter computes the sum once (from the third call on it reuses what the second
   kept) and the result is what 40 full recomputations give. An rng draw with constant operands is
   never reused: each trip draws anew. */
static const char *invariant_hlo =
    "HloModule inv\n"
    "add { a = s32[] parameter(0)\n b = s32[] parameter(1)\n ROOT s = s32[] add(a, b) }\n"
    "sq { p = s32[] parameter(0)\n i = s32[1000] iota(), iota_dimension=0\n m = s32[1000] multiply(i, i)\n"
    " z = s32[] constant(0)\n r = s32[] reduce(m, z), dimensions={0}, to_apply=add\n ROOT o = s32[] add(r, p) }\n"
    "body { t = (s32[], s32[], f32[40]) parameter(0)\n n = s32[] get-tuple-element(t), index=0\n"
    " acc = s32[] get-tuple-element(t), index=1\n d = f32[40] get-tuple-element(t), index=2\n"
    " c = s32[] call(acc), to_apply=sq\n one = s32[] constant(1)\n n1 = s32[] add(n, one)\n"
    " lo = f32[] constant(0)\n hi = f32[] constant(1)\n u = f32[1] rng(lo, hi), distribution=rng_uniform\n"
    " d1 = f32[40] dynamic-update-slice(d, u, n)\n ROOT r = (s32[], s32[], f32[40]) tuple(n1, c, d1) }\n"
    "cond { t = (s32[], s32[], f32[40]) parameter(0)\n n = s32[] get-tuple-element(t), index=0\n"
    " k = s32[] constant(40)\n ROOT lt = pred[] compare(n, k), direction=LT }\n"
    "ENTRY e { z = s32[] constant(0)\n f = f32[] constant(0)\n d = f32[40] broadcast(f), dimensions={}\n t = (s32[], s32[], f32[40]) tuple(z, z, d)\n"
    " ROOT w = (s32[], s32[], f32[40]) while(t), condition=cond, body=body }\n";

TEST(invariant_values_are_computed_once_and_rng_is_not) {
  IrModule *m = parse(invariant_hlo);
  CHECK(m != NULL);
  if (!m) return;
  RtTensor *r = NULL;
  RtCounters cnt;
  memset(&cnt, 0, sizeof cnt);
  RtOptions o = {.seed = 3};
  FxError e = {0};
  CHECK(rt_interp_run(m, NULL, 0, &o, &r, &cnt, &e));
  if (r) {
    /* sum of i*i for i < 1000 is 332833500, times 40 trips, wrapped to 32 bits */
    int32_t want = (int32_t)(uint32_t)(332833500ull * 40u);
    CHECK(rt_get_i(r->tuple[1], 0) == want);
    /* every trip drew its own number */
    const RtTensor *d = r->tuple[2];
    int same = 0;
    for (int64_t k = 1; k < d->count; k++) same += rt_get_f(d, k) == rt_get_f(d, k - 1);
    CHECK(same == 0);
  }
  /* sq's iota, multiply, constant and reduce, not run on calls 3 to 40; the body's constants too */
  CHECK(cnt.reused >= 4 * 38);
  rt_tensor_unref(r);
  /* a backend walking with hooks (here the interpreter backend) runs every kernel every time:
     the same sum, nothing reused */
  void *be = rt_backend_interp.create(&e);
  CHECK(be != NULL);
  if (be) {
    RtTensor *got = NULL;
    RtRunStats st = {0};
    bool ok = rt_backend_interp.prepare(be, (const IrModule **)&m, 1, &e) &&
              rt_backend_interp.run(be, m, NULL, 0, &o, &got, &st, &e);
    CHECK(ok);
    if (ok) {
      CHECK(rt_get_i(got->tuple[1], 0) == (int32_t)(uint32_t)(332833500ull * 40u));
      CHECK(st.counters.reused == 0);
    }
    rt_run_stats_free(&st);
    rt_tensor_unref(got);
    rt_backend_interp.destroy(be);
  }
  ir_module_free(m);
}

/* ---------- select-and-scatter ---------- */

static const char *sas_hlo =
    "HloModule s\n"
    "ge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=GE }\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e { op = f32[4] parameter(0)\n src = f32[%d] parameter(1)\n z = f32[] constant(0)\n"
    " ROOT r = f32[4] select-and-scatter(op, src, z), window={%s}, select=ge, scatter=add }\n";

static RtTensor *sas(const double *opv, const double *srcv, int nsrc, const char *window) {
  char text[1024];
  snprintf(text, sizeof text, sas_hlo, nsrc, window);
  IrModule *m = parse(text);
  int64_t d4 = 4, ds = nsrc;
  RtTensor *args[2] = {arr(IR_F32, 1, &d4, opv), arr(IR_F32, 1, &ds, srcv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 2, &e);
  ir_module_free(m);
  return r;
}

TEST(select_and_scatter) {
  /* max pooling's gradient: each window's largest element receives its source value */
  double opv[4] = {1, 5, 3, 2}, src2[2] = {10, 20};
  RtTensor *r = sas(opv, src2, 2, "size=2 stride=2");
  double want[4] = {0, 10, 20, 0};
  CHECK(values_are(r, want, 4));
  rt_tensor_unref(r);
  /* overlapping windows with padding: windows [-1,0] [0,2] [1,3] [2,4] pick 5, 5, 5, 3 */
  double src4[4] = {1, 2, 3, 4};
  r = sas(opv, src4, 4, "size=3 stride=1 pad=1_1");
  double want2[4] = {0, 6, 4, 0};
  CHECK(values_are(r, want2, 4));
  rt_tensor_unref(r);
  /* ties keep the first element: select(selected, current) = selected >= current stays true */
  double eq[4] = {7, 7, 7, 7};
  r = sas(eq, src2, 2, "size=2 stride=2");
  double want3[4] = {10, 0, 20, 0};
  CHECK(values_are(r, want3, 4));
  rt_tensor_unref(r);
}

/* ---------- variadic reduce-window ---------- */

TEST(variadic_reduce_window_argmax) {
  IrModule *m = parse("HloModule r\n"
                      "argmax { av = f32[] parameter(0)\n ai = s32[] parameter(1)\n bv = f32[] parameter(2)\n bi = s32[] parameter(3)\n"
                      " gt = pred[] compare(bv, av), direction=GT\n v = f32[] select(gt, bv, av)\n i = s32[] select(gt, bi, ai)\n"
                      " ROOT t = (f32[], s32[]) tuple(v, i) }\n"
                      "ENTRY e { x = f32[5] parameter(0)\n ix = s32[5] parameter(1)\n ninf = f32[] constant(-inf)\n m1 = s32[] constant(-1)\n"
                      " ROOT r = (f32[3], s32[3]) reduce-window(x, ix, ninf, m1), window={size=3 stride=1}, to_apply=argmax }\n");
  int64_t d = 5;
  double xv[5] = {1, 5, 3, 2, 4}, iv[5] = {0, 1, 2, 3, 4};
  RtTensor *args[2] = {arr(IR_F32, 1, &d, xv), arr(IR_S32, 1, &d, iv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 2, &e);
  CHECK(r && r->type == IR_TUPLE && r->ntuple == 2);
  if (r && r->ntuple == 2) {
    double wv[3] = {5, 5, 4}, wi[3] = {1, 1, 4};
    CHECK(values_are(r->tuple[0], wv, 3));
    CHECK(values_are(r->tuple[1], wi, 3));
    CHECK(r->tuple[1]->type == IR_S32);
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* ---------- f8 ---------- */

TEST(f8_conversions) {
  /* f8e4m3fn: bias 7, no infinity, 0x7f NaN, largest 448 */
  CHECK(rt_to_f8(IR_F8E4M3FN, 1.0) == 0x38);
  CHECK(rt_to_f8(IR_F8E4M3FN, 448.0) == 0x7e);
  CHECK(rt_to_f8(IR_F8E4M3FN, 464.0) == 0x7e);   /* tie between 448 and 480: even mantissa */
  CHECK(rt_to_f8(IR_F8E4M3FN, 465.0) == 0x7f);   /* rounds to 480 > 448: NaN */
  CHECK(rt_to_f8(IR_F8E4M3FN, INFINITY) == 0x7f);
  CHECK(rt_to_f8(IR_F8E4M3FN, -0.0) == 0x80);
  CHECK(rt_to_f8(IR_F8E4M3FN, 0x1p-9) == 0x01);  /* smallest subnormal */
  CHECK(rt_to_f8(IR_F8E4M3FN, 0x1p-10) == 0x00); /* half of it: tie to even */
  CHECK(rt_to_f8(IR_F8E4M3FN, 1.0625) == 0x38);  /* tie to even */
  CHECK(rt_to_f8(IR_F8E4M3FN, 1.1875) == 0x3a);  /* tie to even: up to 1.25 */
  CHECK(rt_to_f8(IR_F8E4M3FN, -2.5) == 0xc2);
  CHECK(isnan(rt_from_f8(IR_F8E4M3FN, 0x7f)) && isnan(rt_from_f8(IR_F8E4M3FN, 0xff)));
  CHECK(rt_from_f8(IR_F8E4M3FN, 0x7e) == 448.0 && rt_from_f8(IR_F8E4M3FN, 0x01) == 0x1p-9);
  CHECK(rt_from_f8(IR_F8E4M3FN, 0x78) == 256.0); /* e=15 is finite in the fn format */
  /* f8e5m2: bias 15, IEEE infinities, largest 57344 */
  CHECK(rt_to_f8(IR_F8E5M2, 1.0) == 0x3c);
  CHECK(rt_to_f8(IR_F8E5M2, 57344.0) == 0x7b);
  CHECK(rt_to_f8(IR_F8E5M2, 61439.0) == 0x7b);
  CHECK(rt_to_f8(IR_F8E5M2, 61440.0) == 0x7c); /* tie above the largest: rounds to inf */
  CHECK(rt_to_f8(IR_F8E5M2, -INFINITY) == 0xfc);
  CHECK(rt_to_f8(IR_F8E5M2, 0x1p-16) == 0x01);
  CHECK(isnan(rt_from_f8(IR_F8E5M2, rt_to_f8(IR_F8E5M2, NAN))));
  CHECK(rt_from_f8(IR_F8E5M2, 0x7c) == INFINITY && rt_from_f8(IR_F8E5M2, 0x7b) == 57344.0);
  /* fnuz: no infinity, no -0, 0x80 the one NaN */
  CHECK(rt_to_f8(IR_F8E4M3FNUZ, 240.0) == 0x7f && rt_to_f8(IR_F8E4M3FNUZ, 256.0) == 0x80);
  CHECK(rt_to_f8(IR_F8E4M3FNUZ, -0.0) == 0x00 && rt_to_f8(IR_F8E4M3FNUZ, NAN) == 0x80);
  CHECK(rt_to_f8(IR_F8E4M3FNUZ, 1.0) == 0x40 && rt_to_f8(IR_F8E5M2FNUZ, 1.0) == 0x40);
  CHECK(rt_to_f8(IR_F8E4M3B11FNUZ, 1.0) == 0x58 && rt_to_f8(IR_F8E4M3B11FNUZ, 30.0) == 0x7f);
  CHECK(isnan(rt_from_f8(IR_F8E5M2FNUZ, 0x80)) && rt_from_f8(IR_F8E5M2FNUZ, 0x7f) == 57344.0);
  /* IEEE-like f8e4m3 (largest 240, then inf) and f8e3m4 (bias 3, largest 15.5) */
  CHECK(rt_to_f8(IR_F8E4M3, 240.0) == 0x77 && rt_to_f8(IR_F8E4M3, 248.0) == 0x78 && rt_to_f8(IR_F8E4M3, INFINITY) == 0x78);
  CHECK(rt_to_f8(IR_F8E3M4, 1.0) == 0x30 && rt_to_f8(IR_F8E3M4, 15.5) == 0x6f && rt_from_f8(IR_F8E3M4, 0x70) == INFINITY);
  /* every bit pattern that is a number survives a round trip, in every format */
  static const IrType f8s[] = {IR_F8E4M3FN, IR_F8E5M2, IR_F8E4M3FNUZ, IR_F8E5M2FNUZ, IR_F8E4M3B11FNUZ, IR_F8E4M3, IR_F8E3M4};
  int bad = 0;
  for (size_t f = 0; f < sizeof f8s / sizeof f8s[0]; f++)
    for (int b = 0; b < 256; b++) {
      double v = rt_from_f8(f8s[f], (uint8_t)b);
      if (v == v && rt_to_f8(f8s[f], v) != b) bad++;
    }
  CHECK(bad == 0);
}

TEST(f8_arithmetic_and_convert) {
  IrModule *m = parse("HloModule f\n"
                      "ENTRY e { a = f8e4m3fn[3] parameter(0)\n b = f8e4m3fn[3] parameter(1)\n x = f32[2] parameter(2)\n"
                      " s = f8e4m3fn[3] add(a, b)\n m = f8e4m3fn[3] multiply(a, b)\n"
                      " c = f8e5m2[2] convert(x)\n back = f32[2] convert(c)\n c4 = f8e4m3fn[2] convert(x)\n back4 = f32[2] convert(c4)\n"
                      " ROOT t = (f8e4m3fn[3], f8e4m3fn[3], f32[2], f32[2]) tuple(s, m, back, back4) }\n");
  int64_t d3 = 3, d2 = 2;
  double av[3] = {1.0, 448, 3}, bv[3] = {0.0625, 32, 0.5}, xv[2] = {0.3, 60000};
  RtTensor *args[3] = {arr(IR_F8E4M3FN, 1, &d3, av), arr(IR_F8E4M3FN, 1, &d3, bv), arr(IR_F32, 1, &d2, xv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 3, &e);
  CHECK(r && r->ntuple == 4);
  if (r && r->ntuple == 4) {
    /* 1 + 0.0625 ties to 1; 448 + 32 = 480 overflows to NaN; 3 + 0.5 = 3.5 exactly */
    CHECK(rt_get_f(r->tuple[0], 0) == 1.0 && isnan(rt_get_f(r->tuple[0], 1)) && rt_get_f(r->tuple[0], 2) == 3.5);
    /* 448 * 32 overflows to NaN; 3 * 0.5 = 1.5 */
    CHECK(rt_get_f(r->tuple[1], 0) == 0.0625 && isnan(rt_get_f(r->tuple[1], 1)) && rt_get_f(r->tuple[1], 2) == 1.5);
    /* 0.3 in f8e5m2: ulp 2^-4 at 2^-2, 0.3 / 0.0625 = 4.8 -> 5 -> 0.3125; 60000 -> 57344 */
    CHECK(rt_get_f(r->tuple[2], 0) == 0.3125 && rt_get_f(r->tuple[2], 1) == 57344.0);
    /* in f8e4m3fn: ulp 2^-5, 0.3 / 0.03125 = 9.6 -> 10 -> 0.3125; 60000 -> NaN */
    CHECK(rt_get_f(r->tuple[3], 0) == 0.3125 && isnan(rt_get_f(r->tuple[3], 1)));
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* ---------- s4 / u4: 4-bit integers wrap at 4 bits ---------- */

TEST(int4_wraps_at_four_bits) {
  IrModule *m = parse("HloModule i\n"
                      "ENTRY e { a = s4[4] parameter(0)\n b = s4[4] parameter(1)\n x = f32[4] parameter(2)\n u = u4[4] parameter(3)\n"
                      " s = s4[4] add(a, b)\n p = s4[4] multiply(a, a)\n c = s4[4] convert(x)\n n = s4[4] negate(a)\n"
                      " one = u4[4] constant({1, 1, 1, 1})\n us = u4[4] add(u, one)\n z = u4[4] count-leading-zeros(u)\n"
                      " ROOT t = (s4[4], s4[4], s4[4], s4[4], u4[4], u4[4]) tuple(s, p, c, n, us, z) }\n");
  int64_t d = 4;
  double av[4] = {7, 3, -8, -1}, bv[4] = {1, 1, -1, -1}, xv[4] = {100, -100, 2.9, -3.9}, uv[4] = {15, 0, 1, 8};
  RtTensor *args[4] = {arr(IR_S4, 1, &d, av), arr(IR_S4, 1, &d, bv), arr(IR_F32, 1, &d, xv), arr(IR_U4, 1, &d, uv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 4, &e);
  CHECK(r && r->ntuple == 6);
  if (r && r->ntuple == 6) {
    double s[4] = {-8, 4, 7, -2};     /* 7+1 wraps to -8; -8-1 wraps to 7 */
    double p[4] = {1, -7, 0, 1};      /* 49 = 0x31 wraps to 1, 9 to -7, 64 to 0 */
    double c[4] = {7, -8, 2, -3};     /* saturating float -> s4, truncating toward zero */
    double n[4] = {-7, -3, -8, 1};    /* -(-8) wraps to -8 */
    double us[4] = {0, 1, 2, 9};      /* 15+1 wraps to 0 */
    double z[4] = {0, 4, 3, 0};       /* leading zeros within 4 bits */
    CHECK(values_are(r->tuple[0], s, 4));
    CHECK(values_are(r->tuple[1], p, 4));
    CHECK(values_are(r->tuple[2], c, 4));
    CHECK(values_are(r->tuple[3], n, 4));
    CHECK(values_are(r->tuple[4], us, 4));
    CHECK(values_are(r->tuple[5], z, 4));
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* ---------- complex ---------- */

static RtTensor *cvec(IrType t, int64_t n, const double *reim) {
  FxError e = {0};
  RtTensor *x = rt_tensor_new(t, 1, &n, &e);
  for (int64_t k = 0; x && k < n; k++) rt_set_c(x, k, reim[2 * k], reim[2 * k + 1]);
  return x;
}

static bool cvalues_are(const RtTensor *t, const double *reim, int64_t n, double tol) {
  if (!t || t->count != n || !ir_type_is_complex(t->type)) return false;
  for (int64_t k = 0; k < n; k++) {
    double re, im;
    rt_get_c(t, k, &re, &im);
    if (!(fabs(re - reim[2 * k]) <= tol && fabs(im - reim[2 * k + 1]) <= tol)) {
      fprintf(stderr, "element %lld is (%.9g, %.9g), expected (%.9g, %.9g)\n", (long long)k, re, im, reim[2 * k], reim[2 * k + 1]);
      return false;
    }
  }
  return true;
}

TEST(complex_arithmetic) {
  IrModule *m = parse("HloModule c\n"
                      "ENTRY e { a = c64[2] parameter(0)\n b = c64[2] parameter(1)\n"
                      " s = c64[2] add(a, b)\n d = c64[2] subtract(a, b)\n p = c64[2] multiply(a, b)\n q = c64[2] divide(p, b)\n"
                      " ab = f32[2] abs(b)\n re = f32[2] real(a)\n im = f32[2] imag(a)\n cx = c64[2] complex(re, im)\n"
                      " eq = pred[2] compare(cx, a), direction=EQ\n ne = pred[2] compare(a, b), direction=NE\n"
                      " w = c128[2] convert(a)\n"
                      " ROOT t = (c64[2], c64[2], c64[2], c64[2], f32[2], c64[2], pred[2], pred[2], c128[2]) tuple(s, d, p, q, ab, cx, eq, ne, w) }\n");
  double av[4] = {1, 2, 3, -4}, bv[4] = {3, 4, 1, 1};
  RtTensor *args[2] = {cvec(IR_C64, 2, av), cvec(IR_C64, 2, bv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 2, &e);
  CHECK(r && r->ntuple == 9);
  if (r && r->ntuple == 9) {
    double s[4] = {4, 6, 4, -3}, d[4] = {-2, -2, 2, -5};
    double p[4] = {-5, 10, 7, -1}; /* (1+2i)(3+4i) = -5+10i; (3-4i)(1+i) = 7-i */
    CHECK(cvalues_are(r->tuple[0], s, 2, 0));
    CHECK(cvalues_are(r->tuple[1], d, 2, 0));
    CHECK(cvalues_are(r->tuple[2], p, 2, 0));
    CHECK(cvalues_are(r->tuple[3], av, 2, 0)); /* Smith's division is exact here */
    CHECK(rt_get_f(r->tuple[4], 0) == 5.0 && rt_get_f(r->tuple[4], 1) == (double)sqrtf(2.0f));
    CHECK(cvalues_are(r->tuple[5], av, 2, 0));
    CHECK(rt_get_i(r->tuple[6], 0) == 1 && rt_get_i(r->tuple[6], 1) == 1);
    CHECK(rt_get_i(r->tuple[7], 0) == 1 && rt_get_i(r->tuple[7], 1) == 1);
    CHECK(r->tuple[8]->type == IR_C128 && cvalues_are(r->tuple[8], av, 2, 0));
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

TEST(complex_functions_dot_reduce_constant) {
  IrModule *m = parse("HloModule c\n"
                      "add { a = c128[] parameter(0)\n b = c128[] parameter(1)\n ROOT s = c128[] add(a, b) }\n"
                      "ENTRY e { z = c128[3] parameter(0)\n"
                      " ex = c128[3] exponential(z)\n sq = c128[3] sqrt(z)\n lg = c128[3] log(z)\n"
                      " k = c128[3] constant({(1, 2), (3, -4), /*index=2*/(0, 1)})\n"
                      " dt = c128[] dot(k, k), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
                      " zero = c128[] constant((0, 0))\n rd = c128[] reduce(k, zero), dimensions={0}, to_apply=add\n"
                      " ROOT t = (c128[3], c128[3], c128[3], c128[], c128[]) tuple(ex, sq, lg, dt, rd) }\n");
  /* z = i*pi, -4, -1 */
  double zv[6] = {0, M_PI, -4, 0, -1, 0};
  RtTensor *args[1] = {cvec(IR_C128, 3, zv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 1, &e);
  CHECK(r && r->ntuple == 5);
  if (r && r->ntuple == 5) {
    double ex[6] = {-1, 0, exp(-4), 0, exp(-1), 0}; /* e^(i pi) = -1 */
    double sq[6] = {sqrt(M_PI / 2), sqrt(M_PI / 2), 0, 2, 0, 1}; /* sqrt(-4) = 2i, sqrt(-1) = i */
    double lg[6] = {log(M_PI), M_PI / 2, log(4), M_PI, 0, M_PI};  /* log(-1) = i pi */
    CHECK(cvalues_are(r->tuple[0], ex, 3, 1e-15));
    CHECK(cvalues_are(r->tuple[1], sq, 3, 1e-15));
    CHECK(cvalues_are(r->tuple[2], lg, 3, 1e-15));
    /* (1+2i)^2 + (3-4i)^2 + i^2 = (-3+4i) + (-7-24i) + (-1) = -11-20i (dot does not conjugate) */
    double dt[2] = {-11, -20}, rd[2] = {4, -1};
    CHECK(cvalues_are(r->tuple[3], dt, 1, 0));
    CHECK(cvalues_are(r->tuple[4], rd, 1, 0));
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

TEST(complex_errors_are_located) {
  IrModule *m = parse("HloModule c\n"
                      "ENTRY e { a = c64[2] parameter(0)\n"
                      " ROOT c = pred[2] compare(a, a), direction=LT }\n");
  double av[4] = {1, 2, 3, 4};
  RtTensor *args[1] = {cvec(IR_C64, 2, av)};
  FxError e = {0};
  RtTensor *r = m ? NULL : NULL;
  if (m) {
    RtOptions o = {.seed = 1};
    CHECK(!rt_interp_run(m, args, 1, &o, &r, NULL, &e));
    CHECK_CONTAINS(e.msg, "c: compare direction=LT is not defined for c64");
    CHECK(e.line == 3);
    ir_module_free(m);
  }
  rt_tensor_unref(args[0]);
  /* a complex literal needs (re, im) pairs */
  m = parse("HloModule k\nENTRY e {\n ROOT k = c64[2] constant({1, 2}) }\n");
  e = (FxError){0};
  RtTensor *r2 = run(m, NULL, 0, &e);
  CHECK(r2 == NULL);
  CHECK_CONTAINS(e.msg, "k: a complex constant needs one (re, im) pair per element");
  CHECK(e.line == 3);
  ir_module_free(m);
}

TEST(complex_compare_and_npy) {
  double av[4] = {1, 2, 3, -4}, bv[4] = {1, 2, 3, -3};
  RtTensor *a = cvec(IR_C64, 2, av), *b = cvec(IR_C64, 2, bv);
  RtCompare c;
  rt_compare(a, b, &c);
  CHECK(!c.ok && c.worst_index == 1);
  CHECK_STR(c.what, "element [1] is (3, -4), the reference has (3, -3) (relative error 0.236 > 1e-05)");
  char path[64];
  snprintf(path, sizeof path, "/tmp/fxc%d.npy", (int)getpid());
  FxError e = {0};
  CHECK(rt_npy_write(path, a, &e));
  RtTensor *back = rt_npy_read(path, &e);
  CHECK(back && back->type == IR_C64 && cvalues_are(back, av, 2, 0));
  rt_tensor_unref(back);
  /* the header says complex64 as NumPy writes it */
  FILE *f = fopen(path, "rb");
  char head[128] = {0};
  if (f) {
    CHECK(fread(head, 1, sizeof head - 1, f) > 0);
    fclose(f);
  }
  CHECK_CONTAINS(head + 10, "'descr': '<c8'");
  unlink(path);
  int64_t n = 2;
  RtTensor *f8 = rt_tensor_new(IR_F8E5M2, 1, &n, &e);
  CHECK(!rt_npy_write(path, f8, &e));
  CHECK_CONTAINS(e.msg, "f8e5m2 has no NumPy dtype (ml_dtypes' float8_e5m2 is not a .npy descriptor); convert to f32");
  rt_tensor_unref(f8);
  rt_tensor_unref(a);
  rt_tensor_unref(b);
}

/* ---------- asynchronous pairs, one-device collectives, dynamic sizes, host I/O ---------- */

TEST(async_copy_and_collective_pairs) {
  IrModule *m = parse("HloModule a\n"
                      "neg { p = f32[4] parameter(0)\n ROOT n = f32[4] negate(p) }\n"
                      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                      "ENTRY e { x = f32[4] parameter(0)\n"
                      " s = ((f32[4]), f32[4], s32[]) async-start(x), calls=neg\n"
                      " u = ((f32[4]), f32[4], s32[]) async-update(s)\n d = f32[4] async-done(u)\n"
                      " cs = (f32[4], f32[4], u32[]) copy-start(d)\n cd = f32[4] copy-done(cs)\n"
                      " ags = (f32[4], f32[4]) all-gather-start(cd), dimensions={0}\n agd = f32[4] all-gather-done(ags)\n"
                      " ars = f32[4] all-reduce-start(agd), to_apply=add\n ard = f32[4] all-reduce-done(ars)\n"
                      " cps = (f32[4], f32[4], u32[], u32[]) collective-permute-start(ard), source_target_pairs={{0,0}}\n"
                      " cpd = f32[4] collective-permute-done(cps)\n"
                      " two = s32[] constant(2)\n sd = f32[<=4] set-dimension-size(cpd, two), dimensions={0}\n"
                      " ROOT r = (f32[4], f32[<=4]) tuple(cpd, sd) }\n");
  int64_t d = 4;
  double xv[4] = {1, -2, 3.5, 0};
  RtTensor *args[1] = {arr(IR_F32, 1, &d, xv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 1, &e);
  double want[4] = {-1, 2, -3.5, -0.0};
  CHECK(r && r->ntuple == 2 && values_are(r->tuple[0], want, 4) && values_are(r->tuple[1], want, 4));
  rt_tensor_unref(r);
  ir_module_free(m);
  /* infeed needs a host: a located error, not a value */
  m = parse("HloModule f\nENTRY e { t = token[] after-all()\n ROOT i = (f32[2], token[]) infeed(t) }\n");
  r = run(m, NULL, 0, &e);
  CHECK(r == NULL);
  CHECK_CONTAINS(e.msg, "i: infeed exchanges data with the host or another device");
  CHECK(e.line == 3);
  ir_module_free(m);
}

/* ---------- cholesky and batch-norm by hand ---------- */

TEST(cholesky_and_batch_norm_by_hand) {
  /* [[4, 2], [2, 10]] = l l^T with l = [[2, 0], [1, 3]]; the upper factor is l^T; the other
     triangle of the input is ignored (here it holds garbage) */
  IrModule *m = parse("HloModule c\nENTRY e { a = f32[2,2] parameter(0)\n b = f32[2,2] parameter(1)\n"
                      " l = f32[2,2] cholesky(a), lower=true\n u = f32[2,2] cholesky(b), lower=false\n"
                      " ROOT t = (f32[2,2], f32[2,2]) tuple(l, u) }\n");
  int64_t d2[2] = {2, 2};
  double av[4] = {4, 99, 2, 10}, bv[4] = {4, 2, -99, 10};
  RtTensor *args[2] = {arr(IR_F32, 2, d2, av), arr(IR_F32, 2, d2, bv)};
  FxError e = {0};
  RtTensor *r = run(m, args, 2, &e);
  double wl[4] = {2, 0, 1, 3}, wu[4] = {2, 1, 0, 3};
  CHECK(r && r->ntuple == 2 && values_are(r->tuple[0], wl, 4) && values_are(r->tuple[1], wu, 4));
  rt_tensor_unref(r);
  ir_module_free(m);
  /* batch-norm-training over f32[2,2] with features in dimension 1: feature 0 holds {1, 3} (mean 2,
     variance 1), feature 1 holds {2, 2} (mean 2, variance 0); epsilon 0 */
  m = parse("HloModule b\nENTRY e { x = f32[2,2] parameter(0)\n s = f32[2] constant({2, 1})\n o = f32[2] constant({10, 5})\n"
            " ROOT t = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=0, feature_index=1 }\n");
  double xv[4] = {1, 2, 3, 2};
  RtTensor *bargs[1] = {arr(IR_F32, 2, d2, xv)};
  r = run(m, bargs, 1, &e);
  /* (x - mean) / sqrt(var) * scale + offset: feature 0 -> 10 -+ 2; feature 1 -> 0/0 = NaN */
  CHECK(r && r->ntuple == 3);
  if (r && r->ntuple == 3) {
    CHECK(rt_get_f(r->tuple[0], 0) == 8 && rt_get_f(r->tuple[0], 2) == 12);
    CHECK(isnan(rt_get_f(r->tuple[0], 1)));
    double mean[2] = {2, 2}, var[2] = {1, 0};
    CHECK(values_are(r->tuple[1], mean, 2) && values_are(r->tuple[2], var, 2));
  }
  rt_tensor_unref(r);
  ir_module_free(m);
}

/* ---------- the CPU backend falls back to the interpreter for what it does not generate ---------- */

TEST(cpu_backend_runs_new_types_through_the_interpreter) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/fxcpuXXXXXX");
  if (!mkdtemp(dir)) return;
  setenv("FXPLAIN_CACHE_DIR", dir, 1);
  IrModule *m = parse("HloModule c\n"
                      "fused { a = c64[4] parameter(0)\n b = c64[4] parameter(1)\n p = c64[4] multiply(a, b)\n ROOT s = c64[4] add(p, a) }\n"
                      "ge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = pred[] compare(a, b), direction=GE }\n"
                      "addf { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                      "ENTRY e { a = c64[4] parameter(0)\n b = c64[4] parameter(1)\n x = f32[4] parameter(2)\n"
                      " f = c64[4] fusion(a, b), kind=kLoop, calls=fused\n"
                      " h = f8e4m3fn[4] convert(x)\n g = f32[4] convert(h)\n z = f32[] constant(0)\n"
                      " src = f32[2] slice(g), slice={[0:2]}\n"
                      " sas = f32[4] select-and-scatter(g, src, z), window={size=2 stride=2}, select=ge, scatter=addf\n"
                      " ROOT t = (c64[4], f32[4]) tuple(f, sas) }\n");
  FxError e = {0};
  void *be = m ? rt_backend_cpu.create(&e) : NULL;
  CHECK(be != NULL);
  if (be) {
    bool ok = rt_backend_cpu.prepare(be, (const IrModule **)&m, 1, &e);
    CHECK(ok);
    int kernels = 0, interp = 0;
    cpu_prepare_counts(be, NULL, NULL, &kernels, &interp);
    /* the complex fusion, both f8 converts and select-and-scatter run on the interpreter's
       implementation; only the f32 slice is generated */
    CHECK(kernels == 5 && interp == 4);
    RtTensor *args[3];
    for (int k = 0; k < 3; k++) {
      args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &e);
      rt_tensor_fill_random(args[k], 7, (uint64_t)k);
    }
    RtTensor *got = NULL, *want = NULL;
    RtOptions o = {.seed = 7};
    RtRunStats st = {0};
    ok = ok && rt_backend_cpu.run(be, m, args, 3, &o, &got, &st, &e);
    CHECK(ok);
    ok = ok && rt_interp_run(m, args, 3, &o, &want, NULL, &e);
    if (ok) {
      RtCompare c;
      rt_compare(got, want, &c);
      CHECK(c.ok && c.err == 0);
      /* the random complex inputs have nonzero imaginary parts, and they flow through */
      double re, im;
      rt_get_c(want->tuple[0], 0, &re, &im);
      CHECK(im != 0);
    }
    rt_run_stats_free(&st);
    rt_tensor_unref(got);
    rt_tensor_unref(want);
    for (int k = 0; k < 3; k++) rt_tensor_unref(args[k]);
    rt_backend_cpu.destroy(be);
  }
  ir_module_free(m);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

/* ---------- a backend that keeps results in its own memory ---------- */

/* The GPU backend leaves a kernel's result on the device and fills the host tensor only when the
 * walker asks (RtHooks.host_read). This backend does the same in host memory: every result it
 * computes has its data zeroed (the "device" keeps the truth), and host_read puts the truth back.
 * Any place the walker reads values without asking (a while condition's pred, a conditional's
 * selector, a reshape it runs itself, an instruction it runs on the host) reads zeros, and the
 * run no longer matches the plain interpreter's. */
typedef struct {
  RtTensor *stale[256], *truth[256];
  int n, reads;
} LazyMem;

static int lazy_find(LazyMem *l, const RtTensor *t) {
  for (int q = 0; q < l->n; q++)
    if (l->stale[q] == t) return q;
  return -1;
}

static bool lazy_read(void *ctx, RtTensor *t, FxError *err) {
  LazyMem *l = ctx;
  if (t->type == IR_TUPLE) {
    for (int k = 0; k < t->ntuple; k++)
      if (!lazy_read(ctx, t->tuple[k], err)) return false;
    return true;
  }
  int q = lazy_find(l, t);
  if (q < 0) return true;
  memcpy(t->data, l->truth[q]->data, t->bytes);
  rt_tensor_unref(l->stale[q]);
  rt_tensor_unref(l->truth[q]);
  l->stale[q] = l->stale[l->n - 1];
  l->truth[q] = l->truth[--l->n];
  l->reads++;
  return true;
}

static bool lazy_stale(LazyMem *l, RtTensor *t, FxError *err) {
  if (t->type == IR_TUPLE) {
    for (int k = 0; k < t->ntuple; k++)
      if (!lazy_stale(l, t->tuple[k], err)) return false;
    return true;
  }
  if (t->type == IR_TOKEN || l->n == 256) return true;
  RtTensor *c = rt_tensor_clone(t, err);
  if (!c) return false;
  l->stale[l->n] = rt_tensor_ref(t);
  l->truth[l->n++] = c;
  memset(t->data, 0, t->bytes);
  return true;
}

static bool lazy_exec(void *ctx, RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, bool *handled,
                      FxError *err) {
  LazyMem *l = ctx;
  *handled = false;
  /* the kernels: what the walker would hand a device (not control flow or tuples, not the inside
     of a fusion, nothing reading a tuple) */
  if (rt_instr_is_free(i) || i->parent->fusion_instr) return true;
  for (int j = 0; j < i->noperands; j++)
    if (ops[j]->type == IR_TUPLE) return true;
  /* "on the device": the operands' true values, swapped in for the run */
  void *saved[16];
  if (i->noperands > 16) return true;
  for (int j = 0; j < i->noperands; j++) {
    int q = lazy_find(l, ops[j]);
    saved[j] = ops[j]->data;
    if (q >= 0) ops[j]->data = l->truth[q]->data;
  }
  bool ok = rt_exec_instr(x, i, ops, out, err);
  for (int j = 0; j < i->noperands; j++) ops[j]->data = saved[j];
  if (!ok) return false;
  *handled = true;
  return lazy_stale(l, *out, err);
}

static const char *lazy_hlo =
    "HloModule lazy\n"
    "cond { p = (s32[], f32[4]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
    " n = s32[] constant(5)\n ROOT c = pred[] compare(i, n), direction=LT }\n"
    "body { p = (s32[], f32[4]) parameter(0)\n i = s32[] get-tuple-element(p), index=0\n"
    " v = f32[4] get-tuple-element(p), index=1\n one = s32[] constant(1)\n i2 = s32[] add(i, one)\n"
    " h = f32[] constant(1.5)\n b = f32[4] broadcast(h), dimensions={}\n v2 = f32[4] multiply(v, b)\n"
    " ROOT t = (s32[], f32[4]) tuple(i2, v2) }\n"
    "neg { x = f32[4] parameter(0)\n ROOT n = f32[4] negate(x) }\n"
    "ex { x = f32[4] parameter(0)\n ROOT e = f32[4] exponential(x) }\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e { x = f32[4] parameter(0)\n z = s32[] constant(0)\n t0 = (s32[], f32[4]) tuple(z, x)\n"
    " w = (s32[], f32[4]) while(t0), condition=cond, body=body\n v = f32[4] get-tuple-element(w), index=1\n"
    " zero = f32[] constant(0)\n s = f32[] reduce(v, zero), dimensions={0}, to_apply=add\n"
    " p = pred[] compare(s, zero), direction=GT\n"
    " c = f32[4] conditional(p, v, v), true_computation=neg, false_computation=ex\n"
    " r = f32[2,2] reshape(c)\n k = s32[] get-tuple-element(w), index=0\n"
    " ROOT out = (f32[2,2], s32[], f32[]) tuple(r, k, s) }\n";

TEST(walker_reads_a_lazy_backends_values_only_through_host_read) {
  IrModule *m = parse(lazy_hlo);
  CHECK(m != NULL);
  if (!m) return;
  int64_t d4 = 4;
  double xv[4] = {1, -2, 3, 0.5};
  RtTensor *x = arr(IR_F32, 1, &d4, xv);
  FxError e = {0};
  RtTensor *xr = rt_tensor_ref(x);
  RtTensor *want = run(m, &xr, 1, &e); /* (takes the reference) */
  CHECK(want != NULL);
  LazyMem l = {0};
  RtHooks h = {.exec = lazy_exec, .host_read = lazy_read, .ctx = &l};
  RtOptions o = {.seed = 42, .hooks = &h};
  RtTensor *got = NULL;
  bool ok = rt_interp_run(m, &x, 1, &o, &got, NULL, &e);
  if (!ok) fprintf(stderr, "lazy run: %s\n", e.msg);
  CHECK(ok);
  if (ok) ok = lazy_read(&l, got, &e); /* the caller reads the result */
  if (ok && want) {
    /* 5 iterations (the pred read each time), the sum 2.5 * 1.5^5 > 0 (the selector read): negate,
       then the reshape the walker runs itself */
    CHECK(got->ntuple == 3 && rt_get_i(got->tuple[1], 0) == 5);
    CHECK(fabs(rt_get_f(got->tuple[2], 0) - 2.5 * pow(1.5, 5)) < 1e-4);
    CHECK(fabs(rt_get_f(got->tuple[0], 1) - 2 * pow(1.5, 5)) < 1e-4);
    for (int k = 0; k < 3; k++) CHECK(memcmp(got->tuple[k]->data, want->tuple[k]->data, want->tuple[k]->bytes) == 0);
    CHECK(l.reads >= 6 + 2); /* six preds, the selector, the reshape's operand (and the result) */
  }
  while (l.n > 0) {
    rt_tensor_unref(l.stale[--l.n]);
    rt_tensor_unref(l.truth[l.n]);
  }
  rt_tensor_unref(got);
  rt_tensor_unref(want);
  rt_tensor_unref(x);
  ir_module_free(m);
}

int main(void) {
  RUN(window_accessor);
  RUN(conv_dims_accessor);
  RUN(convolution_batch_group_count);
  RUN(contractions_fast_layout_equals_generic_loops);
  RUN(invariant_values_are_computed_once_and_rng_is_not);
  RUN(data_movement_matches_index_formulas);
  RUN(broadcast_with_decreasing_dimensions_transposes);
  RUN(select_and_scatter);
  RUN(variadic_reduce_window_argmax);
  RUN(f8_conversions);
  RUN(f8_arithmetic_and_convert);
  RUN(int4_wraps_at_four_bits);
  RUN(complex_arithmetic);
  RUN(complex_functions_dot_reduce_constant);
  RUN(complex_errors_are_located);
  RUN(complex_compare_and_npy);
  RUN(async_copy_and_collective_pairs);
  RUN(cholesky_and_batch_norm_by_hand);
  RUN(cpu_backend_runs_new_types_through_the_interpreter);
  RUN(walker_reads_a_lazy_backends_values_only_through_host_read);
  return check_summary();
}

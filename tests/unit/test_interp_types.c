/* test_interp_types.c — the reference interpreter beyond the common cases, on HLO text with values
 * worked out by hand: the shared window and dim_labels accessors, convolution with batch groups,
 * select-and-scatter, variadic reduce-window, the f8 types and complex numbers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/hlo.h"
#include "../../runtime/runtime.h"
#include "check.h"

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

int main(void) {
  RUN(window_accessor);
  RUN(conv_dims_accessor);
  RUN(convolution_batch_group_count);
  return check_summary();
}

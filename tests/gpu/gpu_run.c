/* gpu_run.c — the GPU runtime on a real GPU (ctest label "gpu"): launches, a host-driven while
 * loop, the rng kernel against the interpreter's stream, cuBLAS gemms in every supported dot
 * form, and cuDNN convolutions (a filter used as is and one permuted on the device), each checked
 * against a host computation; then every module named on the command line, at its first and last
 * stage, runs on the GPU backend and is compared with the interpreter. Without a GPU it prints why and exits 77, which ctest reports as
 * skipped (SKIP_RETURN_CODE 77), never as passed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../compiler/fx/fx.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/passes/passes.h"
#include "../../runtime/backend.h"
#include "../../runtime/cuda/cuda.h"
#include "../../runtime/interp/rng_stream.h"
#include "../../runtime/runtime.h"
#include "loop_kernels.h"
#include "script_load.h"

static CudaBackend *B;

static CUdeviceptr dev_upload(const void *host, size_t bytes) {
  FxError err;
  fx_error_clear(&err);
  CUdeviceptr p = 0;
  if (!cuda_buffer_alloc(B, bytes, &p, &err) || !cuda_upload(B, p, host, bytes, &err))
    fprintf(stderr, "%s\n", err.msg);
  return p;
}

TEST(launch_elementwise) {
  FxError err;
  fx_error_clear(&err);
  CudaKernel k;
  CHECK(cuda_kernel_load(B, axpb_src, "fx_axpb", &k, &err));
  long long n = 1000003;
  float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
  for (long long i = 0; i < n; i++) in[i] = (float)(i % 1000) * 0.5f;
  CUdeviceptr din = dev_upload(in, sizeof(float) * (size_t)n), dout;
  CHECK(cuda_buffer_alloc(B, sizeof(float) * (size_t)n, &dout, &err));
  void *params[] = {&din, &dout, &n};
  CHECK(cuda_launch(B, &k, n, params, &err));
  CHECK(cuda_download(B, out, dout, sizeof(float) * (size_t)n, &err));
  bool same = true;
  for (long long i = 0; i < n; i++) same = same && out[i] == in[i] * 2.0f + 1.0f;
  CHECK(same);
  CHECK(k.launches == 1 && k.total_ms > 0);
  printf("fx_axpb: %d registers, block %d, %.3f ms for %lld elements\n", k.res.registers, k.block, k.total_ms, n);
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  free(in), free(out);
}

typedef struct {
  CudaKernel *cond, *body;
  CUdeviceptr i, limit, pred, acc;
} LoopCtx;
static bool loop_cond(void *c, FxError *err) {
  LoopCtx *x = c;
  long long n = 1;
  void *params[] = {&x->i, &x->limit, &x->pred, &n};
  return cuda_launch(B, x->cond, 1, params, err);
}
static bool loop_body(void *c, FxError *err) {
  LoopCtx *x = c;
  long long n = 1;
  void *params[] = {&x->i, &x->acc, &n};
  return cuda_launch(B, x->body, 1, params, err);
}

TEST(host_driven_while_loop) {
  FxError err;
  fx_error_clear(&err);
  CudaKernel cond, body;
  CHECK(cuda_kernel_load(B, loop_kernels_src, "fx_cond", &cond, &err));
  CHECK(cuda_kernel_load(B, loop_kernels_src, "fx_body", &body, &err));
  int zero = 0, limit = 100;
  float acc = 0;
  LoopCtx x = {&cond, &body, dev_upload(&zero, 4), dev_upload(&limit, 4), 0, dev_upload(&acc, 4)};
  CHECK(cuda_buffer_alloc(B, 1, &x.pred, &err));
  int64_t trips = 0;
  CHECK(cuda_while(B, loop_cond, loop_body, &x, x.pred, 0, &trips, &err));
  CHECK(trips == 100);
  CHECK(cuda_download(B, &acc, x.acc, 4, &err));
  CHECK(acc == 4950.0f);
  CHECK(cond.launches == 101 && body.launches == 100);
  printf("while loop: 100 trips, %lld launches, %.3f ms in the body kernels\n",
         (long long)(cond.launches + body.launches), body.total_ms);
  if (err.set) fprintf(stderr, "%s\n", err.msg);
}

/* The cuRAND rng kernel draws the interpreter's stream (rng_stream.h): rng(a, b) of instruction
 * id 3, draw 2, for f32 and f64 (uniform and normal) and s32. */
TEST(rng_matches_interpreter_stream) {
  FxError err;
  fx_error_clear(&err);
  long long n = 10007;
  unsigned long long key = rt_rng_key(42, 3), draw = 2;
  double *got = malloc(sizeof(double) * (size_t)n);
  CUdeviceptr d;
  CHECK(cuda_buffer_alloc(B, sizeof(double) * (size_t)n, &d, &err));
  IrType types[] = {IR_F32, IR_F64, IR_S32};
  for (int t = 0; t < 3; t++)
    for (int normal = 0; normal < (types[t] == IR_S32 ? 1 : 2); normal++) {
      IrType ty = types[t];
      CudaKernel k;
      CHECK(cuda_kernel_load(B, cuda_rng_source(ty, normal ? "rng_normal" : "rng_uniform"), "fx_rng", &k, &err));
      double a = normal ? 0.5 : -1.0, b = normal ? 2.0 : 1.0;
      long long ia = -5, ib = 1000;
      void *params[] = {&d, &n, &key, &draw, ty == IR_S32 ? (void *)&ia : (void *)&a, ty == IR_S32 ? (void *)&ib : (void *)&b};
      int per = cuda_rng_per_thread(ty);
      CHECK(cuda_launch(B, &k, (n + per - 1) / per, params, &err));
      CHECK(cuda_download(B, got, d, (size_t)ir_type_bytes(ty) * (size_t)n, &err));
      double worst = 0;
      for (long long g = 0; g * per < n; g++) {
        float f[4];
        double w[2];
        int64_t iv[2];
        if (ty == IR_F32) rt_rng_thread_f32(key, (uint64_t)g, draw, normal, (float)a, (float)b, f);
        else if (ty == IR_F64) rt_rng_thread_f64(key, (uint64_t)g, draw, normal, a, b, w);
        else rt_rng_thread_int(key, (uint64_t)g, draw, ia, ib, iv);
        for (int j = 0; j < per && g * per + j < n; j++) {
          long long e = g * per + j;
          double have = ty == IR_F32 ? ((float *)got)[e] : ty == IR_F64 ? got[e] : ((int32_t *)got)[e];
          double want = ty == IR_F32 ? f[j] : ty == IR_F64 ? w[j] : (double)iv[j];
          worst = fmax(worst, fabs(have - want));
        }
      }
      if (normal) CHECK(worst < 1e-4); /* cuRAND's device Box-Muller uses __sincosf / sincospi */
      else CHECK(worst == 0);           /* uniform and integers: bit for bit */
      printf("rng %s %s: worst difference from the interpreter's stream %g\n", ir_type_name(ty),
             normal ? "normal" : "uniform", worst);
    }
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  free(got);
}

static IrInstr *param(IrComputation *c, int num, IrType t, int rank, const int64_t *dims) {
  IrShape s = ir_shape_array(&c->module->arena, t, rank, dims);
  char name[16];
  snprintf(name, sizeof name, "p%d", num);
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &s, NULL, 0, name);
  p->param_number = num;
  return p;
}

static void gemm_case(int nb, int lr, const int64_t *ld, int rr, const int64_t *rd, int orank, const int64_t *od,
                      const char *lc, const char *rc) {
  IrModule *m = ir_module_new("dot");
  IrComputation *c = ir_computation_new(m, "main");
  IrInstr *ops[2] = {param(c, 0, IR_F32, lr, ld), param(c, 1, IR_F32, rr, rd)};
  IrShape os = ir_shape_array(&m->arena, IR_F32, orank, od);
  IrInstr *dot = ir_instr_new(c, IR_OP_DOT, &os, ops, 2, "dot");
  ir_attr_set_text(dot, "lhs_contracting_dims", lc);
  ir_attr_set_text(dot, "rhs_contracting_dims", rc);
  if (nb) {
    ir_attr_set_text(dot, "lhs_batch_dims", "{0}");
    ir_attr_set_text(dot, "rhs_batch_dims", "{0}");
  }
  FxError err;
  fx_error_clear(&err);
  CudaGemm g;
  CHECK(cuda_gemm_from_instr(dot, &g, &err));
  size_t nl = (size_t)ir_shape_elements(&ops[0]->shape), nr = (size_t)ir_shape_elements(&ops[1]->shape),
         no = (size_t)ir_shape_elements(&os);
  float *L = malloc(4 * nl), *R = malloc(4 * nr), *O = malloc(4 * no), *W = malloc(4 * no);
  for (size_t i = 0; i < nl; i++) L[i] = (float)((i * 7) % 11) * 0.25f - 1;
  for (size_t i = 0; i < nr; i++) R[i] = (float)((i * 5) % 13) * 0.25f - 1.5f;
  cuda_gemm_reference(&g, L, R, W);
  CUdeviceptr dl = dev_upload(L, 4 * nl), dr = dev_upload(R, 4 * nr), dout;
  CHECK(cuda_buffer_alloc(B, 4 * no, &dout, &err));
  CHECK(cuda_blas_gemm(&g, dl, dr, dout, &err));
  CHECK(cuda_download(B, O, dout, 4 * no, &err));
  double worst = 0;
  for (size_t i = 0; i < no; i++) worst = fmax(worst, fabs(O[i] - W[i]));
  CHECK(worst < 1e-3);
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  free(L), free(R), free(O), free(W);
  ir_module_free(m);
}

TEST(cublas_dot_forms) {
  gemm_case(0, 2, (int64_t[]){33, 40}, 2, (int64_t[]){40, 17}, 2, (int64_t[]){33, 17}, "{1}", "{0}");
  gemm_case(0, 2, (int64_t[]){40, 33}, 2, (int64_t[]){40, 17}, 2, (int64_t[]){33, 17}, "{0}", "{0}");
  gemm_case(0, 2, (int64_t[]){33, 40}, 2, (int64_t[]){17, 40}, 2, (int64_t[]){33, 17}, "{1}", "{1}");
  gemm_case(1, 3, (int64_t[]){4, 33, 40}, 3, (int64_t[]){4, 40, 17}, 3, (int64_t[]){4, 33, 17}, "{2}", "{1}");
  gemm_case(0, 2, (int64_t[]){33, 40}, 1, (int64_t[]){40}, 1, (int64_t[]){33}, "{1}", "{0}");
}

/* Direct convolution on the host over the mapping's strides (groups 1). */
static void host_conv(const CudaConv *c, const float *x, const float *w, float *y) {
  int N = c->out_dims[0], K = c->out_dims[1], OH = c->out_dims[2], OW = c->out_dims[3];
  int C = c->in_dims[1], H = c->in_dims[2], W = c->in_dims[3], R = c->filter_dims[2], S = c->filter_dims[3];
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++)
      for (int oy = 0; oy < OH; oy++)
        for (int ox = 0; ox < OW; ox++) {
          double acc = 0;
          for (int ch = 0; ch < C; ch++)
            for (int r = 0; r < R; r++)
              for (int s = 0; s < S; s++) {
                int iy = oy * c->stride[0] - c->pad[0] + r * c->dilation[0];
                int ix = ox * c->stride[1] - c->pad[1] + s * c->dilation[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += (double)x[n * c->in_strides[0] + ch * c->in_strides[1] + iy * c->in_strides[2] +
                                 ix * c->in_strides[3]] *
                       w[k * c->filter_hlo_strides[0] + ch * c->filter_hlo_strides[1] + r * c->filter_hlo_strides[2] +
                         s * c->filter_hlo_strides[3]];
              }
          y[n * c->out_strides[0] + k * c->out_strides[1] + oy * c->out_strides[2] + ox * c->out_strides[3]] = (float)acc;
        }
}

static void conv_case(const char *labels, const int64_t *wdims) {
  IrModule *m = ir_module_new("conv");
  IrComputation *c = ir_computation_new(m, "main");
  IrInstr *ops[2] = {param(c, 0, IR_F32, 4, (int64_t[]){2, 9, 9, 3}), param(c, 1, IR_F32, 4, wdims)};
  IrShape os = ir_shape_array(&m->arena, IR_F32, 4, (int64_t[]){2, 5, 5, 4});
  IrInstr *conv = ir_instr_new(c, IR_OP_CONVOLUTION, &os, ops, 2, "conv");
  ir_attr_set_text(conv, "window", "{size=3x3 stride=2x2 pad=1_1x1_1}");
  ir_attr_set_text(conv, "dim_labels", labels);
  FxError err;
  fx_error_clear(&err);
  CudaConv cv;
  CHECK(cuda_conv_from_instr(conv, &cv, &err));
  float x[2 * 9 * 9 * 3], w[4 * 3 * 3 * 3], y[2 * 5 * 5 * 4], want[2 * 5 * 5 * 4];
  for (size_t i = 0; i < sizeof x / 4; i++) x[i] = (float)((i * 3) % 7) - 3;
  for (size_t i = 0; i < sizeof w / 4; i++) w[i] = (float)((i * 5) % 9) * 0.5f - 2;
  host_conv(&cv, x, w, want);
  CUdeviceptr dx = dev_upload(x, sizeof x), dw = dev_upload(w, sizeof w), dy;
  CHECK(cuda_buffer_alloc(B, sizeof y, &dy, &err));
  if (cv.filter_needs_permute) {
    CudaKernel k;
    CHECK(cuda_kernel_load(B, cuda_permute_source(IR_F32), "fx_permute", &k, &err));
    CudaPermute p;
    cuda_conv_filter_permute(&cv, &p);
    CUdeviceptr dk;
    CHECK(cuda_buffer_alloc(B, sizeof w, &dk, &err));
    long long n = (long long)(sizeof w / 4);
    void *params[] = {&dw, &dk, &n, &p};
    CHECK(cuda_launch(B, &k, n, params, &err));
    dw = dk;
  }
  CHECK(cuda_dnn_conv(&cv, dx, dw, dy, &err));
  CHECK(cuda_download(B, y, dy, sizeof y, &err));
  double worst = 0;
  for (size_t i = 0; i < sizeof y / 4; i++) worst = fmax(worst, fabs(y[i] - want[i]));
  CHECK(worst < 1e-3);
  if (err.set) fprintf(stderr, "%s\n", err.msg);
  ir_module_free(m);
}

TEST(cudnn_convolution) {
  conv_case("b01f_oi01->b01f", (int64_t[]){4, 3, 3, 3}); /* filter as cuDNN takes it (KCRS) */
  conv_case("b01f_01io->b01f", (int64_t[]){3, 3, 3, 4}); /* JAX's HWIO: permuted on the device */
}

/* ---------- whole modules on the GPU backend against the interpreter (`run --check`) ---------- */

static void no_emit(void *ctx, const PassDecision *d) { (void)ctx, (void)d; }

static void check_stage(const char *name, const char *stage, const IrModule *m) {
  FxError err;
  fx_error_clear(&err);
  int n = m->entry->nparams;
  RtTensor *args[64] = {0};
  bool ok = n <= 64;
  for (int k = 0; ok && k < n; k++) {
    args[k] = rt_tensor_for_shape(&m->entry->params[k]->shape, &err);
    ok = args[k] != NULL;
    if (ok && args[k]->type != IR_TUPLE) rt_tensor_fill_random(args[k], 7, (uint64_t)k);
  }
  RtTensor *want = NULL, *got = NULL;
  RtOptions o = {.seed = 11};
  RtCounters c;
  RtRunStats st = {0};
  void *be = NULL;
  if (ok) ok = rt_interp_run(m, args, n, &o, &want, &c, &err);
  if (ok) ok = (be = rt_backend_gpu.create(&err)) != NULL;
  if (ok) ok = rt_backend_gpu.prepare(be, &m, 1, &err);
  if (ok) ok = rt_backend_gpu.run(be, m, args, n, &o, &got, &st, &err);
  if (ok) {
    RtCompare cmp;
    rt_compare(got, want, &cmp);
    if (!cmp.ok) fprintf(stderr, "%s (%s): %s\n", name, stage, cmp.what);
    CHECK(cmp.ok);
    int native = 0;
    for (int q = 0; q < st.nkernels; q++) native += st.kernels[q].native;
    printf("%-40s %-6s %lld launches, %d kernels (%d on the device), %.3f ms\n", name, stage,
           (long long)st.counters.launches, st.nkernels, native, st.total_ns / 1e6);
  } else {
    fprintf(stderr, "%s (%s): %s\n", name, stage, err.msg);
    CHECK(ok);
  }
  rt_run_stats_free(&st);
  if (be) rt_backend_gpu.destroy(be);
  rt_tensor_unref(want);
  rt_tensor_unref(got);
  for (int k = 0; k < n && k < 64; k++) rt_tensor_unref(args[k]);
}

static void check_module(const char *path) {
  FxError err;
  fx_error_clear(&err);
  bool skipped = false;
  IrModule *m = load_any(path, 100, &skipped, &err); /* teaching scripts: 100 steps */
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (skipped) {
    printf("%-40s skipped: a walkthrough that only loads other scripts\n", name);
    return;
  }
  if (!m) {
    fx_error_print(stderr, &err);
    CHECK(m != NULL);
    return;
  }
  check_stage(name, "input", m);
  const Pipeline *pl = pipeline_lookup("classic");
  PassSettings st;
  pass_settings_default(&st);
  DecisionSink sink = {no_emit, NULL};
  for (int p = 0; pl && p < pl->npasses; p++) {
    PassContext cx = {&sink, device_default(), &st, p + 1, NULL, &err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(pl->passes[p], m, &cx, &out, &changed)) break;
    if (out) {
      ir_module_free(m);
      m = out;
    }
  }
  check_stage(name, "fused", m);
  ir_module_free(m);
}

int main(int argc, char **argv) {
  FxError err;
  fx_error_clear(&err);
  B = cuda_backend_open(0, &err);
  if (!B) {
    printf("SKIPPED: no GPU: %s\n", err.msg);
    return 77;
  }
  const CudaDeviceInfo *d = cuda_backend_device(B);
  printf("GPU 0: %s (sm_%d%d), %d SMs\n", d->name, d->cc_major, d->cc_minor, d->sm_count);
  RUN(launch_elementwise);
  RUN(host_driven_while_loop);
  RUN(rng_matches_interpreter_stream);
  RUN(cublas_dot_forms);
  RUN(cudnn_convolution);
  for (int a = 1; a < argc; a++) {
    check_cur_failed = 0;
    check_module(argv[a]);
    if (check_cur_failed) {
      check_failed++;
      fprintf(stderr, "FAIL %s\n", argv[a]);
    } else {
      check_passed++;
    }
  }
  cuda_backend_close(B);
  return check_summary();
}

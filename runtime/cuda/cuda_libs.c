/* cuda_libs.c — dot → cuBLAS, convolution → cuDNN v9, rng → cuRAND's Philox4_32_10.
 *
 * Each HLO instruction is first mapped to the library's terms by host code (cuda_gemm_from_dot,
 * cuda_conv_from_instr), then called on device buffers. cuBLAS and cuDNN are dlopened on first
 * use; their handles live until cuda_libs_shutdown(). rng is a small NVRTC kernel on cuRAND's
 * device API (curand_kernel.h: curand_init, curand_uniform4, curand_normal4, ...) with the
 * Philox4_32_10 generator, whose stream the interpreter reproduces (rng_stream.c), so every backend
 * draws the same numbers. Where this sits: runtime/, called by cuda_exec.c for library kernels. */
#include "cuda_libs.h"
#include "../interp/rng_stream.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- dot → gemm ---------- */

bool cuda_gemm_from_dot(const IrShape *lhs, const IrShape *rhs, const IrShape *out, const IrDotDims *dd,
                        CudaGemm *g, FxError *err) {
  memset(g, 0, sizeof *g);
  if (lhs->type != rhs->type || lhs->type != out->type || (lhs->type != IR_F32 && lhs->type != IR_F64))
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot of %s x %s -> %s: only f32 and f64 dots go to cuBLAS",
                        ir_type_name(lhs->type), ir_type_name(rhs->type), ir_type_name(out->type));
  /* Layouts do not matter here: runtime tensors are dense and row-major in their logical
   * dimensions whatever the IR layout says (runtime.h). */
  int nb = dd->nlhs_batch;
  if (dd->nrhs_batch != nb || dd->nlhs_contract != 1 || dd->nrhs_contract != 1)
    return fx_error_set(err, NULL, 0, 0,
                        "cuBLAS: dot needs one contracting dimension and the same batch dimensions on both sides");
  for (int b = 0; b < nb; b++)
    if (dd->lhs_batch[b] != b || dd->rhs_batch[b] != b || lhs->dims[b] != rhs->dims[b])
      return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot batch dimensions must lead, in order, in both operands");
  if (lhs->rank < nb + 1 || lhs->rank > nb + 2 || rhs->rank < nb + 1 || rhs->rank > nb + 2)
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot operands must have at most one free dimension each");
  int lc = (int)dd->lhs_contract[0], rc = (int)dd->rhs_contract[0];
  if (lc < nb || rc < nb || lc >= lhs->rank || rc >= rhs->rank)
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot contracting dimension out of range");
  int64_t k = lhs->dims[lc];
  if (rhs->dims[rc] != k) return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot contracting sizes differ");
  bool lhs_free = lhs->rank == nb + 2, rhs_free = rhs->rank == nb + 2;
  int64_t m = lhs_free ? lhs->dims[lc == nb ? nb + 1 : nb] : 1;
  int64_t n = rhs_free ? rhs->dims[rc == nb ? nb + 1 : nb] : 1;
  int64_t batch = 1;
  for (int b = 0; b < nb; b++) batch *= lhs->dims[b];
  if (out->rank != nb + lhs_free + rhs_free || ir_shape_elements(out) != batch * m * n)
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot output shape does not match its operands");
  g->type = lhs->type;
  g->batch = batch;
  g->m = m;
  g->n = n;
  g->k = k;
  /* First operand: rhs, wanted as n x k column-major. Row-major [k, n] read column-major is
   * exactly that (no transpose, ld n); row-major [n, k] is its transpose (ld k). */
  bool rhs_contract_first = !rhs_free || rc == nb;
  g->trans_first = !rhs_contract_first;
  g->ld_first = rhs_contract_first ? n : k;
  /* Second operand: lhs, wanted as k x m column-major: row-major [m, k] is that (ld k); row-major
   * [k, m] is its transpose (ld m). */
  bool lhs_contract_last = !lhs_free || lc == nb + 1;
  g->trans_second = !lhs_contract_last;
  g->ld_second = lhs_contract_last ? k : m;
  g->ld_out = n;
  g->stride_first = n * k;
  g->stride_second = m * k;
  g->stride_out = m * n;
  return true;
}

bool cuda_gemm_from_instr(const IrInstr *dot, CudaGemm *g, FxError *err) {
  IrDotDims dd;
  if (dot->op != IR_OP_DOT || dot->noperands != 2 || !ir_dot_dims(dot, &dd))
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: '%s' is not a dot with readable dimension numbers", dot->name);
  return cuda_gemm_from_dot(&dot->operands[0]->shape, &dot->operands[1]->shape, &dot->shape, &dd, g, err);
}

void cuda_gemm_reference(const CudaGemm *g, const float *lhs, const float *rhs, float *out) {
  /* gemm(transa, transb, M = n, N = m, K = k, A = rhs, B = lhs, C = out), column-major. */
  int64_t M = g->n, N = g->m, K = g->k;
  for (int64_t b = 0; b < g->batch; b++) {
    const float *A = rhs + b * g->stride_first, *B = lhs + b * g->stride_second;
    float *C = out + b * g->stride_out;
    for (int64_t j = 0; j < N; j++)
      for (int64_t i = 0; i < M; i++) {
        double acc = 0;
        for (int64_t p = 0; p < K; p++) {
          float a = g->trans_first ? A[p + i * g->ld_first] : A[i + p * g->ld_first];
          float bb = g->trans_second ? B[j + p * g->ld_second] : B[p + j * g->ld_second];
          acc += (double)a * bb;
        }
        C[i + j * g->ld_out] = (float)acc;
      }
  }
}

/* ---------- library loading ---------- */

typedef int (*StatusFn)(void);
static void *open_first(const char *const *names, char *why, size_t n) {
  why[0] = 0;
  for (int i = 0; names[i]; i++) {
    dlerror();
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    if (!why[0]) {
      const char *e = dlerror();
      snprintf(why, n, "%s", e ? e : names[i]);
    }
  }
  return NULL;
}

static bool get_sym(void *h, const char *lib, const char *name, void *slot, FxError *err) {
  void *p = dlsym(h, name);
  if (!p) return fx_error_set(err, NULL, 0, 0, "%s: the library lacks %s", lib, name);
  memcpy(slot, &p, sizeof p);
  return true;
}

/* cuBLAS */
typedef struct {
  void *lib;
  void *handle;
  int (*create)(void **h);
  int (*destroy)(void *h);
  int (*sgemm)(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
               long long sa, const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
               long long sc, int batch);
  int (*dgemm)(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *A, int lda,
               long long sa, const double *B, int ldb, long long sb, const double *beta, double *C, int ldc,
               long long sc, int batch);
  const char *(*status_name)(int s);
  const char *(*status_string)(int s);
} Blas;
static Blas g_blas;

static const char *blas_status_name(int s) {
  if (g_blas.status_name) return g_blas.status_name(s);
  switch (s) {
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
  default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

bool cuda_blas_failed(int status, const char *what, FxError *err) {
  const char *text = g_blas.status_string ? g_blas.status_string(status) : "no further text";
  return fx_error_set(err, NULL, 0, 0, "cuBLAS: %s failed: %s: %s", what, blas_status_name(status), text);
}

#define BLAS_CHECK(err, what, call)                                  \
  do {                                                               \
    int bl_s_ = (call);                                              \
    if (bl_s_ != 0) return cuda_blas_failed(bl_s_, (what), (err));   \
  } while (0)

bool cuda_blas_ready(FxError *err) {
  if (g_blas.handle) return true;
  if (!g_blas.lib) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", NULL};
    char why[512];
    void *h = open_first(names, why, sizeof why);
    if (!h) return fx_error_set(err, NULL, 0, 0, "cuBLAS not found (dot runs on cuBLAS): %s", why);
    Blas b = {0};
    b.lib = h;
    if (!get_sym(h, "cuBLAS", "cublasCreate_v2", &b.create, err) ||
        !get_sym(h, "cuBLAS", "cublasDestroy_v2", &b.destroy, err) ||
        !get_sym(h, "cuBLAS", "cublasSgemmStridedBatched", &b.sgemm, err) ||
        !get_sym(h, "cuBLAS", "cublasDgemmStridedBatched", &b.dgemm, err)) {
      dlclose(h);
      return false;
    }
    void *p = dlsym(h, "cublasGetStatusName");
    if (p) memcpy(&b.status_name, &p, sizeof p);
    p = dlsym(h, "cublasGetStatusString");
    if (p) memcpy(&b.status_string, &p, sizeof p);
    g_blas = b;
  }
  void *handle = NULL;
  BLAS_CHECK(err, "cublasCreate", g_blas.create(&handle));
  g_blas.handle = handle;
  return true;
}

bool cuda_blas_gemm(const CudaGemm *g, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr out, FxError *err) {
  if (!cuda_blas_ready(err)) return false;
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->batch > INT32_MAX)
    return fx_error_set(err, NULL, 0, 0, "cuBLAS: dot of %lldx%lldx%lld is too large for one call",
                        (long long)g->m, (long long)g->n, (long long)g->k);
  int ta = g->trans_first ? 1 : 0, tb = g->trans_second ? 1 : 0; /* CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 */
  void *A = (void *)(uintptr_t)rhs, *B = (void *)(uintptr_t)lhs, *C = (void *)(uintptr_t)out;
  if (g->type == IR_F32) {
    float one = 1, zero = 0;
    BLAS_CHECK(err, "cublasSgemmStridedBatched",
               g_blas.sgemm(g_blas.handle, ta, tb, (int)g->n, (int)g->m, (int)g->k, &one, A, (int)g->ld_first,
                            g->stride_first, B, (int)g->ld_second, g->stride_second, &zero, C, (int)g->ld_out,
                            g->stride_out, (int)g->batch));
  } else {
    double one = 1, zero = 0;
    BLAS_CHECK(err, "cublasDgemmStridedBatched",
               g_blas.dgemm(g_blas.handle, ta, tb, (int)g->n, (int)g->m, (int)g->k, &one, A, (int)g->ld_first,
                            g->stride_first, B, (int)g->ld_second, g->stride_second, &zero, C, (int)g->ld_out,
                            g->stride_out, (int)g->batch));
  }
  return true;
}

/* ---------- convolution → cuDNN ---------- */

/* Element strides of a runtime tensor: dense and row-major in its logical dimensions, whatever
 * the IR layout says (runtime.h). */
static void hlo_strides(const IrShape *s, int64_t *st) {
  int64_t acc = 1;
  for (int d = s->rank - 1; d >= 0; d--) {
    st[d] = acc;
    acc *= s->dims[d];
  }
}

bool cuda_conv_from_instr(const IrInstr *conv, CudaConv *c, FxError *err) {
  memset(c, 0, sizeof *c);
  if (conv->op != IR_OP_CONVOLUTION || conv->noperands != 2)
    return fx_error_set(err, NULL, 0, 0, "cuDNN: '%s' is not a convolution", conv->name);
  const IrShape *x = &conv->operands[0]->shape, *w = &conv->operands[1]->shape, *y = &conv->shape;
  if (x->type != w->type || x->type != y->type || (x->type != IR_F32 && x->type != IR_F64 && x->type != IR_F16))
    return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' of type %s is not supported (f16, f32, f64)",
                        conv->name, ir_type_name(x->type));
  c->type = x->type;
  IrConvDims cd;
  char why[600];
  if (!ir_conv_dims(conv, &cd, why, sizeof why) || x->rank < 3 || y->rank != x->rank)
    return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' has no usable dim_labels", conv->name);
  int ns = cd.nspatial;
  if (ns > CUDA_CONV_MAX_SPATIAL)
    return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' has %d spatial dimensions (at most %d)", conv->name,
                        ns, CUDA_CONV_MAX_SPATIAL);
  c->nspatial = ns;
  int64_t xs[IR_MAX_RANK], ws[IR_MAX_RANK], ys[IR_MAX_RANK];
  hlo_strides(x, xs);
  hlo_strides(w, ws);
  hlo_strides(y, ys);
  /* cuDNN positions: batch / output feature 0, feature / input feature 1, spatial s at 2+s; each
     entry is the HLO dimension that sits there. */
  int at[3][CUDA_CONV_MAX_SPATIAL + 2];
  at[0][0] = cd.in_batch, at[0][1] = cd.in_feature;
  at[1][0] = cd.k_out, at[1][1] = cd.k_in;
  at[2][0] = cd.out_batch, at[2][1] = cd.out_feature;
  for (int s = 0; s < ns; s++) at[0][2 + s] = cd.in_spatial[s], at[1][2 + s] = cd.k_spatial[s], at[2][2 + s] = cd.out_spatial[s];
  for (int pass = 0; pass < 3; pass++) {
    const IrShape *s = pass == 0 ? x : pass == 1 ? w : y;
    const int64_t *st = pass == 0 ? xs : pass == 1 ? ws : ys;
    int *dims = pass == 0 ? c->in_dims : pass == 1 ? c->filter_dims : c->out_dims;
    int *strd = pass == 0 ? c->in_strides : pass == 1 ? c->filter_hlo_strides : c->out_strides;
    for (int pos = 0; pos < ns + 2; pos++) {
      int d = at[pass][pos];
      if (s->dims[d] > INT32_MAX || st[d] > INT32_MAX)
        return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' is too large", conv->name);
      dims[pos] = (int)s->dims[d];
      strd[pos] = (int)st[d];
      if (pass == 1) c->filter_perm[pos] = d;
    }
  }
  int64_t groups = 1, bgroups = 1;
  ir_attr_int(conv, "feature_group_count", &groups);
  ir_attr_int(conv, "batch_group_count", &bgroups);
  if (bgroups != 1) return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' uses batch_group_count", conv->name);
  if (groups < 1 || c->in_dims[1] != c->filter_dims[1] * groups)
    return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s': input features %d != %d groups x %d", conv->name,
                        c->in_dims[1], (int)groups, c->filter_dims[1]);
  c->groups = (int)groups;
  IrWindow win;
  if (!ir_attr_window(conv, ns, &win, why, sizeof why))
    return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s': %s", conv->name, why);
  for (int s = 0; s < ns; s++) {
    if (win.pad_lo[s] != win.pad_hi[s])
      return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' has asymmetric padding %lld_%lld", conv->name,
                          (long long)win.pad_lo[s], (long long)win.pad_hi[s]);
    if (win.pad_lo[s] < 0) return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' has negative padding", conv->name);
    if (win.lhs_dilate[s] != 1)
      return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' dilates its input (a transposed convolution)",
                          conv->name);
    if (win.reversal[s]) return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' reverses its window", conv->name);
    if (win.pad_lo[s] > INT32_MAX || win.stride[s] > INT32_MAX || win.rhs_dilate[s] > INT32_MAX)
      return fx_error_set(err, NULL, 0, 0, "cuDNN: convolution '%s' is too large", conv->name);
    c->pad[s] = (int)win.pad_lo[s];
    c->stride[s] = (int)win.stride[s];
    c->dilation[s] = (int)win.rhs_dilate[s];
  }
  /* Is the filter packed as KCRS or as KRSC? */
  int fd = ns + 2;
  int64_t acc = 1;
  bool kcrs = true, krsc = true;
  for (int j = fd - 1; j >= 0; j--) {
    if (c->filter_hlo_strides[j] != acc) kcrs = false;
    acc *= c->filter_dims[j];
  }
  acc = 1;
  int order_krsc[CUDA_CONV_MAX_SPATIAL + 2];
  order_krsc[0] = 0;
  for (int s = 0; s < ns; s++) order_krsc[1 + s] = 2 + s;
  order_krsc[fd - 1] = 1;
  for (int j = fd - 1; j >= 0; j--) {
    if (c->filter_hlo_strides[order_krsc[j]] != acc) krsc = false;
    acc *= c->filter_dims[order_krsc[j]];
  }
  c->filter_format = kcrs ? 0 : krsc ? 1 : 0;
  c->filter_needs_permute = !kcrs && !krsc;
  return true;
}

void cuda_conv_filter_permute(const CudaConv *c, CudaPermute *p) {
  memset(p, 0, sizeof *p);
  p->rank = c->nspatial + 2;
  for (int j = 0; j < p->rank; j++) {
    p->dims[j] = c->filter_dims[j];
    p->in_strides[j] = c->filter_hlo_strides[j];
  }
}

static const char *c_type(IrType t) {
  switch (t) {
  case IR_F32: return "float";
  case IR_F64: return "double";
  case IR_F16: return "unsigned short";
  default: return NULL;
  }
}

const char *cuda_permute_source(IrType t) {
  static char buf[3][1024];
  const char *ct = c_type(t);
  if (!ct) return NULL;
  int slot = t == IR_F32 ? 0 : t == IR_F64 ? 1 : 2;
  snprintf(buf[slot], sizeof buf[slot],
           "// Permutes a tensor into the packed order of p.dims (a cuDNN filter into KCRS).\n"
           "struct CudaPermute { int rank; long long dims[%d]; long long in_strides[%d]; };\n"
           "extern \"C\" __global__ void fx_permute(const %s *in, %s *out, long long n, CudaPermute p) {\n"
           "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
           "  if (i >= n) return;\n"
           "  long long rem = i, off = 0;\n"
           "  for (int d = p.rank - 1; d >= 0; d--) {\n"
           "    long long c = rem %% p.dims[d];\n"
           "    rem /= p.dims[d];\n"
           "    off += c * p.in_strides[d];\n"
           "  }\n"
           "  out[i] = in[off];\n"
           "}\n",
           CUDA_CONV_MAX_SPATIAL + 2, CUDA_CONV_MAX_SPATIAL + 2, ct, ct);
  return buf[slot];
}

/* cuDNN */
typedef struct {
  void *lib;
  void *handle;
  size_t version;
  int (*create)(void **h);
  int (*destroy)(void *h);
  const char *(*error_string)(int s);
  size_t (*get_version)(void);
  void (*last_error)(char *msg, size_t n); /* cuDNN 9: the detail behind the last status */
  int (*create_tensor)(void **d);
  int (*set_tensor_nd)(void *d, int type, int nb, const int *dims, const int *strides);
  int (*destroy_tensor)(void *d);
  int (*create_filter)(void **d);
  int (*set_filter_nd)(void *d, int type, int format, int nb, const int *dims);
  int (*destroy_filter)(void *d);
  int (*create_conv)(void **d);
  int (*set_conv_nd)(void *d, int n, const int *pad, const int *stride, const int *dil, int mode, int type);
  int (*set_conv_groups)(void *d, int g);
  int (*destroy_conv)(void *d);
  int (*workspace)(void *h, void *x, void *w, void *c, void *y, int algo, size_t *bytes);
  int (*forward)(void *h, const void *alpha, void *xd, const void *x, void *wd, const void *w, void *cd, int algo,
                 void *ws, size_t wsb, const void *beta, void *yd, void *y);
} Dnn;
static Dnn g_dnn;

bool cuda_dnn_failed(int status, const char *what, FxError *err) {
  const char *text = g_dnn.error_string ? g_dnn.error_string(status) : "unknown status";
  char detail[256] = "";
  if (g_dnn.last_error) g_dnn.last_error(detail, sizeof detail);
  detail[sizeof detail - 1] = 0;
  return fx_error_set(err, NULL, 0, 0, "cuDNN: %s failed: %s (status %d)%s%s", what, text, status,
                      detail[0] ? ": " : "", detail);
}

bool cuda_dnn_ready(FxError *err) {
  if (g_dnn.handle) return true;
  if (!g_dnn.lib) {
    static const char *const names[] = {"libcudnn.so.9", "libcudnn.so", NULL};
    char why[512];
    void *h = open_first(names, why, sizeof why);
    if (!h) return fx_error_set(err, NULL, 0, 0, "cuDNN 9 not found (convolution runs on cuDNN): %s", why);
    Dnn d = {0};
    d.lib = h;
    if (!get_sym(h, "cuDNN", "cudnnCreate", &d.create, err) || !get_sym(h, "cuDNN", "cudnnDestroy", &d.destroy, err) ||
        !get_sym(h, "cuDNN", "cudnnGetErrorString", &d.error_string, err) ||
        !get_sym(h, "cuDNN", "cudnnGetVersion", &d.get_version, err) ||
        !get_sym(h, "cuDNN", "cudnnCreateTensorDescriptor", &d.create_tensor, err) ||
        !get_sym(h, "cuDNN", "cudnnSetTensorNdDescriptor", &d.set_tensor_nd, err) ||
        !get_sym(h, "cuDNN", "cudnnDestroyTensorDescriptor", &d.destroy_tensor, err) ||
        !get_sym(h, "cuDNN", "cudnnCreateFilterDescriptor", &d.create_filter, err) ||
        !get_sym(h, "cuDNN", "cudnnSetFilterNdDescriptor", &d.set_filter_nd, err) ||
        !get_sym(h, "cuDNN", "cudnnDestroyFilterDescriptor", &d.destroy_filter, err) ||
        !get_sym(h, "cuDNN", "cudnnCreateConvolutionDescriptor", &d.create_conv, err) ||
        !get_sym(h, "cuDNN", "cudnnSetConvolutionNdDescriptor", &d.set_conv_nd, err) ||
        !get_sym(h, "cuDNN", "cudnnSetConvolutionGroupCount", &d.set_conv_groups, err) ||
        !get_sym(h, "cuDNN", "cudnnDestroyConvolutionDescriptor", &d.destroy_conv, err) ||
        !get_sym(h, "cuDNN", "cudnnGetConvolutionForwardWorkspaceSize", &d.workspace, err) ||
        !get_sym(h, "cuDNN", "cudnnConvolutionForward", &d.forward, err)) {
      dlclose(h);
      return false;
    }
    void *le = dlsym(h, "cudnnGetLastErrorString");
    if (le) memcpy(&d.last_error, &le, sizeof le);
    d.version = d.get_version();
    if (d.version < 90000) {
      dlclose(h);
      return fx_error_set(err, NULL, 0, 0, "cuDNN %zu found; convolution needs cuDNN 9", d.version);
    }
    g_dnn = d;
  }
  void *handle = NULL;
  int s = g_dnn.create(&handle);
  if (s != 0) return cuda_dnn_failed(s, "cudnnCreate", err);
  g_dnn.handle = handle;
  return true;
}

bool cuda_dnn_conv(const CudaConv *c, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, FxError *err) {
  if (!cuda_dnn_ready(err)) return false;
  /* cuDNN wants at least 4 dimensions: a 1-D convolution gets a unit spatial dimension. */
  int ns = c->nspatial < 2 ? 2 : c->nspatial, nd = ns + 2;
  int xd[6], xs[6], yd[6], ys[6], wd[6], pad[3], str[3], dil[3];
  for (int j = 0; j < nd; j++) {
    bool real = j < c->nspatial + 2;
    xd[j] = real ? c->in_dims[j] : 1;
    xs[j] = real ? c->in_strides[j] : 1;
    yd[j] = real ? c->out_dims[j] : 1;
    ys[j] = real ? c->out_strides[j] : 1;
    wd[j] = real ? c->filter_dims[j] : 1;
  }
  for (int s = 0; s < ns; s++) {
    bool real = s < c->nspatial;
    pad[s] = real ? c->pad[s] : 0;
    str[s] = real ? c->stride[s] : 1;
    dil[s] = real ? c->dilation[s] : 1;
  }
  int dtype = c->type == IR_F32 ? 0 : c->type == IR_F64 ? 1 : 2;
  int ctype = c->type == IR_F64 ? 1 : 0; /* half computes in float */
  void *xdesc = NULL, *ydesc = NULL, *wdesc = NULL, *cdesc = NULL;
  CUdeviceptr ws = 0;
  bool ok = false;
  int s;
  const char *what = "cudnnCreateTensorDescriptor";
  if ((s = g_dnn.create_tensor(&xdesc)) || (s = g_dnn.create_tensor(&ydesc))) goto fail;
  what = "cudnnCreateFilterDescriptor";
  if ((s = g_dnn.create_filter(&wdesc))) goto fail;
  what = "cudnnCreateConvolutionDescriptor";
  if ((s = g_dnn.create_conv(&cdesc))) goto fail;
  what = "cudnnSetTensorNdDescriptor";
  if ((s = g_dnn.set_tensor_nd(xdesc, dtype, nd, xd, xs)) || (s = g_dnn.set_tensor_nd(ydesc, dtype, nd, yd, ys))) goto fail;
  what = "cudnnSetFilterNdDescriptor";
  if ((s = g_dnn.set_filter_nd(wdesc, dtype, c->filter_format, nd, wd))) goto fail;
  what = "cudnnSetConvolutionNdDescriptor";
  if ((s = g_dnn.set_conv_nd(cdesc, ns, pad, str, dil, 1 /* CUDNN_CROSS_CORRELATION */, ctype))) goto fail;
  what = "cudnnSetConvolutionGroupCount";
  if ((s = g_dnn.set_conv_groups(cdesc, c->groups))) goto fail;
  size_t wsb = 0;
  what = "cudnnGetConvolutionForwardWorkspaceSize";
  if ((s = g_dnn.workspace(g_dnn.handle, xdesc, wdesc, cdesc, ydesc, 0 /* IMPLICIT_GEMM */, &wsb))) goto fail;
  if (wsb) {
    CUresult r = cuda_api()->cuMemAlloc(&ws, wsb);
    if (r != FX_CUDA_SUCCESS) {
      cuda_check_failed(r, "cuMemAlloc", err);
      goto out;
    }
  }
  double one = 1, zero = 0;
  float onef = 1, zerof = 0;
  const void *alpha = c->type == IR_F64 ? (const void *)&one : (const void *)&onef;
  const void *beta = c->type == IR_F64 ? (const void *)&zero : (const void *)&zerof;
  what = "cudnnConvolutionForward";
  if ((s = g_dnn.forward(g_dnn.handle, alpha, xdesc, (const void *)(uintptr_t)x, wdesc, (const void *)(uintptr_t)w,
                         cdesc, 0, (void *)(uintptr_t)ws, wsb, beta, ydesc, (void *)(uintptr_t)y)))
    goto fail;
  ok = true;
  goto out;
fail:
  cuda_dnn_failed(s, what, err);
out:
  if (ws) cuda_api()->cuMemFree(ws);
  if (cdesc) g_dnn.destroy_conv(cdesc);
  if (wdesc) g_dnn.destroy_filter(wdesc);
  if (ydesc) g_dnn.destroy_tensor(ydesc);
  if (xdesc) g_dnn.destroy_tensor(xdesc);
  return ok;
}

/* ---------- rng ---------- */

static const char *rng_int_type(IrType t) {
  switch (t) {
  case IR_S8: return "signed char";
  case IR_S16: return "short";
  case IR_S32: return "int";
  case IR_S64: return "long long";
  case IR_U8: return "unsigned char";
  case IR_U16: return "unsigned short";
  case IR_U32: return "unsigned";
  case IR_U64: return "unsigned long long";
  default: return NULL;
  }
}

int cuda_rng_per_thread(IrType t) { return rt_rng_per_thread(ir_type_is_float(t), ir_type_bytes(t)); }

const char *cuda_rng_source(IrType t, const char *dist) {
  static char buf[4096];
  if (!dist) return NULL;
  bool normal = strstr(dist, "normal") != NULL;
  if (!normal && !strstr(dist, "uniform")) return NULL;
  bool fl = t == IR_F32 || t == IR_F64;
  const char *ct = t == IR_F32 ? "float" : t == IR_F64 ? "double" : rng_int_type(t);
  if (!ct || (normal && !fl)) return NULL;
  const char *draw, *body, *bound = fl ? "double" : "long long";
  int per = cuda_rng_per_thread(t);
  if (t == IR_F32) {
    draw = normal ? "  float4 q = curand_normal4(&st);\n" : "  float4 q = curand_uniform4(&st);\n";
    body = normal ? "  float v[4] = {q.x, q.y, q.z, q.w}, fa = (float)a, fb = (float)b;\n"
                    "  for (int j = 0; j < 4 && g * 4 + j < n; j++) out[g * 4 + j] = fmaf(fb, v[j], fa);\n"
                  : "  float v[4] = {q.x, q.y, q.z, q.w}, fa = (float)a, fb = (float)b, span = FX_SUBF(fb, fa);\n"
                    "  for (int j = 0; j < 4 && g * 4 + j < n; j++) {\n"
                    "    float r = fmaf(span, v[j], fa);\n"
                    "    out[g * 4 + j] = r < fb ? r : fa; /* [a, b): u = 1 wraps to a */\n"
                    "  }\n";
  } else if (t == IR_F64) {
    draw = normal ? "  double2 q = curand_normal2_double(&st);\n" : "  double2 q = curand_uniform2_double(&st);\n";
    body = normal ? "  double v[2] = {q.x, q.y};\n"
                    "  for (int j = 0; j < 2 && g * 2 + j < n; j++) out[g * 2 + j] = fma(b, v[j], a);\n"
                  : "  double v[2] = {q.x, q.y}, span = FX_SUBD(b, a);\n"
                    "  for (int j = 0; j < 2 && g * 2 + j < n; j++) {\n"
                    "    double r = fma(span, v[j], a);\n"
                    "    out[g * 2 + j] = r < b ? r : a; /* [a, b): u = 1 wraps to a */\n"
                    "  }\n";
  } else {
    draw = "  uint4 q = curand4(&st);\n";
    body = "  unsigned long long w[4] = {q.x, q.y, q.z, q.w};\n"
           "  unsigned long long span = b > a ? (unsigned long long)b - (unsigned long long)a : 0;\n"
           "  for (int j = 0; j < 2 && g * 2 + j < n; j++) {\n"
           "    unsigned long long bits = (w[2 * j] << 32) | w[2 * j + 1];\n"
           "    out[g * 2 + j] = (%s)((unsigned long long)a + (span ? bits %% span : 0));\n"
           "  }\n";
  }
  char bodybuf[1024];
  snprintf(bodybuf, sizeof bodybuf, body, ct);
  snprintf(buf, sizeof buf,
           "// rng (%s, %s): cuRAND's Philox4_32_10 device generator. Thread g draws elements\n"
           "// [%d g, %d g + %d) with curand_init(key, g, 4 * draw); key is the run's seed mixed with the\n"
           "// instruction's id, draw counts its executions. The interpreter computes the same stream.\n"
           "#include <curand_kernel.h>\n"
           "#ifndef FX_SUBF /* explicitly rounded on the device: every float operation is correctly rounded */\n"
           "#ifdef __CUDA_ARCH__\n"
           "#define FX_SUBF(x, y) __fsub_rn(x, y)\n"
           "#define FX_SUBD(x, y) __dsub_rn(x, y)\n"
           "#else\n"
           "#define FX_SUBF(x, y) ((x) - (y))\n"
           "#define FX_SUBD(x, y) ((x) - (y))\n"
           "#endif\n"
           "#endif\n"
           "#ifndef FX_RNG_QUALIFIERS\n"
           "#define FX_RNG_QUALIFIERS static __device__ __forceinline__\n"
           "#endif\n"
           "FX_RNG_QUALIFIERS void fx_rng_thread(%s *out, long long n, long long g, unsigned long long key,\n"
           "                                     unsigned long long draw, %s a, %s b) {\n"
           "  curandStatePhilox4_32_10_t st;\n"
           "  curand_init(key, (unsigned long long)g, 4ull * draw, &st);\n"
           "%s%s"
           "}\n"
           "extern \"C\" __global__ void fx_rng(%s *out, long long n, unsigned long long key, unsigned long long draw,\n"
           "                                    %s a, %s b) {\n"
           "  long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
           "  if (g * %d < n) fx_rng_thread(out, n, g, key, draw, a, b);\n"
           "}\n",
           ir_type_name(t), normal ? "normal" : "uniform", per, per, per, ct, bound, bound, draw, bodybuf, ct, bound,
           bound, per);
  return buf;
}

void cuda_libs_shutdown(void) {
  if (g_blas.handle) g_blas.destroy(g_blas.handle);
  g_blas.handle = NULL;
  if (g_dnn.handle) g_dnn.destroy(g_dnn.handle);
  g_dnn.handle = NULL;
}

/* interp_internal.h — what the interpreter's files share: scalar values, the elementwise
 * semantics (one place that says what add, convert, shift-left... mean for each element type),
 * located errors for window attributes, and the op implementations. Private to
 * runtime/. */
#ifndef FXPLAIN_INTERP_INTERNAL_H
#define FXPLAIN_INTERP_INTERNAL_H

#include <complex.h>
#include <string.h>

#include "../runtime.h"

/* C11's CMPLX and CMPLXF build a complex number from its two parts exactly (infinities and NaNs
 * included, which re + im * I does not). Some C libraries define them only for GCC; these do the
 * same through the layout C11 gives complex numbers (an array of two reals). */
#ifndef CMPLX
static inline double complex fx_cmplx(double re, double im) {
  double parts[2] = {re, im};
  double complex z;
  memcpy(&z, parts, sizeof z);
  return z;
}
#define CMPLX(re, im) fx_cmplx((re), (im))
#endif
#ifndef CMPLXF
static inline float complex fx_cmplxf(float re, float im) {
  float parts[2] = {re, im};
  float complex z;
  memcpy(&z, parts, sizeof z);
  return z;
}
#define CMPLXF(re, im) fx_cmplxf((re), (im))
#endif

/* One element: floats as double (already rounded to their type), integers as int64 (signed types
 * sign-extended, unsigned zero-extended, u64 as its bits), pred as 0/1, complex numbers as the real
 * part in f and the imaginary part in im. */
typedef struct {
  union {
    double f;
    int64_t i;
  };
  double im;
} RtVal;

RtVal rt_val_load(const RtTensor *t, int64_t i);
void rt_val_store(RtTensor *t, int64_t i, RtVal v);
/* Rounds/wraps a value to type t. */
RtVal rt_val_norm(IrType t, RtVal v);

/* Comparison directions. */
typedef enum { RT_EQ, RT_NE, RT_LT, RT_LE, RT_GT, RT_GE } RtDir;
bool rt_parse_dir(const char *s, RtDir *out);

/* Elementwise semantics. `t` is the operand type (for compare/convert: the operand's), `rt` the
 * result's. Returns false for an op these functions do not implement. */
bool rt_ew_unary(IrOpcode op, IrType t, IrType rt, RtVal a, RtVal *out);
bool rt_ew_binary(IrOpcode op, IrType t, RtVal a, RtVal b, RtVal *out);
bool rt_ew_compare(RtDir dir, bool total_order, IrType t, RtVal a, RtVal b);
RtVal rt_ew_reduce_precision(IrType t, RtVal a, int exp_bits, int mant_bits);

/* i's window= for `rank` dimensions (ir_attr_window), with a located error when malformed. */
bool rt_parse_window(const IrInstr *i, int rank, IrWindow *w, FxError *err);

/* Where window position widx of output position out falls in an input dimension of `size` (window
 * dimension d of w: stride, padding, base and window dilation): true with the input index in *src,
 * false when it lands in the padding or between dilated elements. */
static inline bool rt_window_source(const IrWindow *w, int d, int64_t out, int64_t widx, int64_t size, int64_t *src) {
  int64_t p = out * w->stride[d] + widx * w->rhs_dilate[d] - w->pad_lo[d];
  if (p < 0 || p % w->lhs_dilate[d]) return false;
  p /= w->lhs_dilate[d];
  if (p >= size) return false;
  *src = p;
  return true;
}

/* Steps idx to the next index of dims in row-major order; false after the last one (idx is then
 * all zeros again). */
static inline bool rt_next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/* Row-major strides of dims. */
void rt_strides(int rank, const int64_t *dims, int64_t *st);

/* Op implementations (interp_ops.c). Each fills *out with a new tensor. */
bool rt_op_elementwise(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_reduce(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_reduce_window(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_select_and_scatter(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
/* interp_linalg.c */
bool rt_op_fft(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_triangular_solve(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_cholesky(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_batch_norm_inference(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_batch_norm_training(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_batch_norm_grad(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_dot(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_convolution(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
/* __cudnn$convForward / __cudnn$convBiasActivationForward (kernels.def): n operands. */
bool rt_op_cudnn_conv(RtExec *x, const IrInstr *i, RtTensor **ops, int n, RtTensor **out, FxError *err);
/* interp_contract.c: dot and convolution with a real (non-complex) float result and real
 * operands, the same sums as the generic loops, laid out for speed. A dot is seen as
 * [nb][m][k] x [nb][n][k] -> [nb][m][n]: the left operand's element (b, i, c) sits at
 * a_b[b] + a_m[i] + a_c[c], the right one's (b, j, c) at b_b[b] + b_n[j] + b_c[c]. */
typedef struct {
  int64_t nb, m, n, k;
  const int64_t *a_b, *a_m, *a_c, *b_b, *b_n, *b_c;
} RtDotMap;
typedef struct {
  const IrConvDims *dims;
  const IrWindow *window;
  int64_t feature_groups, batch_groups;
} RtConvMap;
bool rt_contract_is_real(const RtTensor *a, const RtTensor *b, const RtTensor *r);
/* Whether real dot/convolution take the fast layout (the default) or the generic loops; the tests
 * use this to check the two give the same bits. */
void rt_interp_set_fast_contractions(bool on);
/* Element offsets of every index over n of a tensor's dimensions (dim[0..n), sized sizes[dim[k]],
 * strides st[dim[k]]) in row-major order; *count gets how many. NULL when out of memory. */
int64_t *rt_index_offsets(int n, const int64_t *dim, const int64_t *sizes, const int64_t *st, int64_t *count);
bool rt_dot_real(RtExec *x, const RtTensor *a, const RtTensor *b, RtTensor *r, const RtDotMap *d, FxError *err);
/* Operands already checked by rt_op_convolution. */
bool rt_conv_real(RtExec *x, const RtTensor *in, const RtTensor *k, RtTensor *r, const RtConvMap *c, FxError *err);
bool rt_op_gather(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_scatter(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_sort(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
/* rng and rng-bit-generator (rng_ops.c). */
bool rt_op_rng(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_rng_bit_generator(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
bool rt_op_map(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);
/* sort-rewriter's CUB radix sort calls (xla.gpu.ext.cub_sort_keys / _pairs) */
bool rt_op_cub_sort(RtExec *x, const IrInstr *i, RtTensor **ops, int n, RtTensor **out, FxError *err);
bool rt_op_topk(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err);

/* Evaluates a scalar computation (reduce's to_apply, a comparator, a combiner) on scalar values
 * of the given types; fills outs (one per root tuple element, or one). Fast path for the common
 * shapes of these computations; falls back to the tensor interpreter. */
bool rt_eval_scalar(RtExec *x, const IrComputation *c, const RtVal *in, const IrType *in_types, int nin,
                    RtVal *outs, int nout, FxError *err);
/* Polls the interrupt flag; fills err when set. */
bool rt_exec_poll(RtExec *x, FxError *err);

#endif

/* interp_linalg.c — the reference interpreter's library ops: fft (FFT, IFFT, RFFT, IRFFT),
 * triangular-solve, cholesky and the three batch-norm ops, with XLA's semantics. Plain loops in
 * double (double complex) precision, rounded once to the result type: these are the oracle, not
 * fast kernels (the fft is a direct DFT). Called from interp.c's walker. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

static bool instr_error(const IrInstr *i, FxError *err, const char *msg) {
  return fx_error_set(err, i->loc.file, i->loc.line, i->loc.col, "%s: %s", i->name, msg);
}

static bool oom(FxError *err) { return fx_error_set(err, NULL, 0, 0, "out of memory"); }

/* An attribute that is true when it says "true" (absent: dflt). */
static bool attr_bool(const IrInstr *i, const char *key, bool dflt) {
  const char *t = ir_attr_text(i, key);
  return t ? strcmp(t, "true") == 0 : dflt;
}

static double complex load_c(const RtTensor *t, int64_t k) {
  double re, im;
  rt_get_c(t, k, &re, &im);
  return CMPLX(re, im);
}

static void store_c(RtTensor *t, int64_t k, double complex v) { rt_set_c(t, k, creal(v), cimag(v)); }

/* ---------- fft ---------- */

/* DFT along `axis` of z (row-major dims), in place: X[k] = sum_n x[n] e^(-+2 pi i k n / L), with
 * 1/L for the inverse. */
static bool dft_axis(double complex *z, int rank, const int64_t *dims, int axis, bool inverse) {
  int64_t L = dims[axis], inner = 1, outer = 1;
  for (int d = axis + 1; d < rank; d++) inner *= dims[d];
  for (int d = 0; d < axis; d++) outer *= dims[d];
  if (L <= 1) return true;
  double complex *line = fx_malloc(sizeof *line * (size_t)L * 2);
  if (!line) return false;
  double complex *tw = line + L;
  double sgn = inverse ? 2.0 : -2.0;
  for (int64_t k = 0; k < L; k++) tw[k] = cexp(CMPLX(0, sgn * M_PI * (double)k / (double)L));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double complex *base = z + o * L * inner + in;
      for (int64_t k = 0; k < L; k++) {
        double complex acc = 0;
        for (int64_t n = 0; n < L; n++) acc += base[n * inner] * tw[(k * n) % L];
        line[k] = inverse ? acc / (double)L : acc;
      }
      for (int64_t k = 0; k < L; k++) base[k * inner] = line[k];
    }
  fx_free(line);
  return true;
}

/* fft(x), fft_type=FFT|IFFT|RFFT|IRFFT, fft_length={...}: over the innermost len(fft_length) dims.
 * RFFT keeps the first n/2+1 coefficients of the last one; IRFFT reads them and returns n reals
 * (numpy.fft's conventions, which XLA follows; IFFT and IRFFT divide by the length). */
bool rt_op_fft(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *a = ops[0];
  const char *ty = ir_attr_text(i, "fft_type");
  int64_t len[3];
  int nl = ir_attr_dims(i, "fft_length", len, 3);
  bool fwd = ty && strcmp(ty, "FFT") == 0, inv = ty && strcmp(ty, "IFFT") == 0;
  bool rfft = ty && strcmp(ty, "RFFT") == 0, irfft = ty && strcmp(ty, "IRFFT") == 0;
  if (!(fwd || inv || rfft || irfft) || nl < 1 || nl > a->rank || !ir_shape_is_array(&i->shape) ||
      i->shape.rank != a->rank)
    return instr_error(i, err, "fft needs fft_type=FFT|IFFT|RFFT|IRFFT and fft_length over 1 to 3 innermost dimensions");
  int first = a->rank - nl;
  for (int k = 0; k < nl; k++) {
    int64_t want_in = irfft && k == nl - 1 ? len[k] / 2 + 1 : len[k];
    int64_t want_out = rfft && k == nl - 1 ? len[k] / 2 + 1 : len[k];
    if (a->dims[first + k] != want_in || i->shape.dims[first + k] != want_out)
      return instr_error(i, err, "fft operand or result dimensions do not match fft_length");
  }
  if ((rfft && ir_type_is_complex(a->type)) || (!rfft && !ir_type_is_complex(a->type)) ||
      (irfft == ir_type_is_complex(i->shape.type)))
    return instr_error(i, err, "fft operand and result types do not match fft_type");
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  double complex *z = fx_malloc(sizeof *z * (size_t)(a->count ? a->count : 1));
  if (!z) {
    rt_tensor_unref(r);
    return oom(err);
  }
  for (int64_t k = 0; k < a->count; k++) z[k] = load_c(a, k);
  bool ok = true;
  int last = irfft ? a->rank - 1 : a->rank; /* IRFFT: the last axis is done below, from half a spectrum */
  for (int d = first; ok && d < last; d++) ok = dft_axis(z, a->rank, a->dims, d, inv || irfft);
  if (!ok) {
    fx_free(z);
    rt_tensor_unref(r);
    return oom(err);
  }
  int64_t M = a->rank ? a->dims[a->rank - 1] : 1, N = r->rank ? r->dims[r->rank - 1] : 1;
  int64_t lines = M ? a->count / M : 0;
  if (irfft) {
    /* x[n] = Re (1/N) sum_k Xfull[k] e^(2 pi i k n / N), Xfull[k] = X[k] (k < M), conj(X[N-k]) beyond */
    for (int64_t l = 0; l < lines; l++)
      for (int64_t n = 0; n < N; n++) {
        double acc = 0;
        for (int64_t k = 0; k < N; k++) {
          double complex c = k < M ? z[l * M + k] : conj(z[l * M + (N - k)]);
          acc += creal(c * cexp(CMPLX(0, 2.0 * M_PI * (double)((k * n) % N) / (double)N)));
        }
        rt_set_f(r, l * N + n, acc / (double)N);
      }
  } else {
    /* FFT/IFFT: same dims; RFFT: the first N (= n/2+1) coefficients of each last-axis line */
    for (int64_t l = 0; l < lines; l++)
      for (int64_t k = 0; k < N; k++) store_c(r, l * N + k, z[l * M + k]);
  }
  fx_free(z);
  *out = r;
  return true;
}

/* ---------- triangular-solve and cholesky ---------- */

/* Batches of m x n matrices in the two innermost dims. */
static bool matrix_dims(const RtTensor *t, int64_t *rows, int64_t *cols, int64_t *batch) {
  if (t->rank < 2) return false;
  *rows = t->dims[t->rank - 2];
  *cols = t->dims[t->rank - 1];
  *batch = *rows && *cols ? t->count / (*rows * *cols) : 0;
  return true;
}

/* Solves T y = c in place for one column (stride cs) of an m x m triangular T. */
static void tri_solve_column(const double complex *T, int64_t m, bool lower, double complex *c, int64_t cs) {
  for (int64_t s = 0; s < m; s++) {
    int64_t r = lower ? s : m - 1 - s;
    double complex acc = c[r * cs];
    if (lower)
      for (int64_t j = 0; j < r; j++) acc -= T[r * m + j] * c[j * cs];
    else
      for (int64_t j = r + 1; j < m; j++) acc -= T[r * m + j] * c[j * cs];
    c[r * cs] = acc / T[r * m + r];
  }
}

/* triangular-solve(a, b), left_side, lower, unit_diagonal, transpose_a=NO_TRANSPOSE|TRANSPOSE|ADJOINT:
 * solves op(a) x = b (left_side) or x op(a) = b, reading only a's lower (or upper) triangle. */
bool rt_op_triangular_solve(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *a = ops[0], *b = ops[1];
  bool left = attr_bool(i, "left_side", false), lower = attr_bool(i, "lower", false);
  bool unit = attr_bool(i, "unit_diagonal", false);
  const char *tr = ir_attr_text(i, "transpose_a");
  bool trans = tr && (strcmp(tr, "TRANSPOSE") == 0 || strcmp(tr, "ADJOINT") == 0), adj = tr && strcmp(tr, "ADJOINT") == 0;
  int64_t m, m2, ab, br, bc, bb;
  if (!matrix_dims(a, &m, &m2, &ab) || !matrix_dims(b, &br, &bc, &bb) || m != m2 || (left ? br : bc) != m ||
      ab != bb || !rt_tensor_matches(b, &i->shape))
    return instr_error(i, err, "triangular-solve needs square a matching b's rows (left_side) or columns, in equal batches");
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  /* T = op(a) restricted to its triangle; solving x T = b is solving T^T x^T = b^T */
  double complex *T = fx_malloc(sizeof *T * (size_t)(m * m + br * bc + 1));
  if (!T) {
    rt_tensor_unref(r);
    return oom(err);
  }
  double complex *Y = T + m * m;
  bool tlower = trans ? !lower : lower; /* op(a)'s triangle */
  for (int64_t q = 0; q < ab; q++) {
    for (int64_t u = 0; u < m; u++)
      for (int64_t v = 0; v < m; v++) {
        int64_t su = trans ? v : u, sv = trans ? u : v; /* element (u, v) of op(a) is a[su, sv] */
        bool in_tri = lower ? sv <= su : sv >= su;
        double complex e = !in_tri ? 0 : (su == sv && unit) ? 1 : load_c(a, q * m * m + su * m + sv);
        if (adj) e = conj(e);
        if (left) T[u * m + v] = e;
        else T[v * m + u] = e; /* T^T */
      }
    for (int64_t k = 0; k < br * bc; k++) Y[k] = load_c(b, q * br * bc + k);
    if (left)
      for (int64_t c = 0; c < bc; c++) tri_solve_column(T, m, tlower, Y + c, bc);
    else
      for (int64_t row = 0; row < br; row++) tri_solve_column(T, m, !tlower, Y + row * bc, 1);
    for (int64_t k = 0; k < br * bc; k++) store_c(r, q * br * bc + k, Y[k]);
  }
  fx_free(T);
  *out = r;
  return true;
}

/* cholesky(a), lower: l with a = l l^H (or u with a = u^H u), from a's lower (upper) triangle; the
 * other triangle of the result is 0, and a matrix that is not positive definite gives NaN. */
bool rt_op_cholesky(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *a = ops[0];
  bool lower = attr_bool(i, "lower", false);
  int64_t n, n2, nb;
  if (!matrix_dims(a, &n, &n2, &nb) || n != n2 || !rt_tensor_matches(a, &i->shape))
    return instr_error(i, err, "cholesky needs square matrices and a result of the operand's shape");
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  double complex *L = fx_calloc((size_t)(n * n + 1), sizeof *L);
  if (!L) {
    rt_tensor_unref(r);
    return oom(err);
  }
  for (int64_t q = 0; q < nb; q++) {
    /* A[u][v] for u >= v from the given triangle (the upper one read transposed and conjugated) */
    memset(L, 0, sizeof *L * (size_t)(n * n));
    for (int64_t j = 0; j < n; j++) {
      double complex d = load_c(a, q * n * n + j * n + j);
      for (int64_t k = 0; k < j; k++) d -= L[j * n + k] * conj(L[j * n + k]);
      double dr = creal(d);
      L[j * n + j] = dr > 0 ? sqrt(dr) : NAN;
      for (int64_t u = j + 1; u < n; u++) {
        double complex s = lower ? load_c(a, q * n * n + u * n + j) : conj(load_c(a, q * n * n + j * n + u));
        for (int64_t k = 0; k < j; k++) s -= L[u * n + k] * conj(L[j * n + k]);
        L[u * n + j] = s / L[j * n + j];
      }
    }
    for (int64_t u = 0; u < n; u++)
      for (int64_t v = 0; v < n; v++) {
        double complex e = lower ? L[u * n + v] : conj(L[v * n + u]); /* u = l^H */
        store_c(r, q * n * n + u * n + v, e);
      }
  }
  fx_free(L);
  *out = r;
  return true;
}

/* ---------- batch normalization ---------- */

typedef struct {
  int64_t feature_index, features, outer, inner; /* x viewed as [outer, features, inner] */
  double eps;
} BnDims;

static bool bn_dims(const IrInstr *i, const RtTensor *xt, BnDims *d, FxError *err) {
  d->feature_index = -1;
  const char *e = ir_attr_text(i, "epsilon");
  d->eps = e ? strtod(e, NULL) : 0;
  d->eps = (float)d->eps;
  if (!ir_attr_int(i, "feature_index", &d->feature_index) || d->feature_index < 0 || d->feature_index >= xt->rank)
    return instr_error(i, err, "batch-norm needs feature_index= within the operand's rank");
  d->features = xt->dims[d->feature_index];
  d->outer = d->inner = 1;
  for (int k = 0; k < d->feature_index; k++) d->outer *= xt->dims[k];
  for (int k = (int)d->feature_index + 1; k < xt->rank; k++) d->inner *= xt->dims[k];
  return true;
}

#define BN_FOR(d, f, k)                                                                   \
  for (int64_t o_ = 0; o_ < (d).outer; o_++)                                              \
    for (int64_t n_ = 0, k = (o_ * (d).features + (f)) * (d).inner; n_ < (d).inner; n_++, k++)

static bool bn_vectors_ok(const IrInstr *i, RtTensor **v, int n, const BnDims *d, FxError *err) {
  for (int k = 0; k < n; k++)
    if (v[k]->rank != 1 || v[k]->dims[0] != d->features)
      return instr_error(i, err, "batch-norm scale, offset, mean and variance need one value per feature");
  return true;
}

/* Per feature: mean and biased variance of x (training), or the given ones. */
static void bn_stats(const RtTensor *xt, const BnDims *d, int64_t f, double *mean, double *var) {
  double s = 0, q = 0, cnt = (double)(d->outer * d->inner);
  BN_FOR(*d, f, k) s += rt_get_f(xt, k);
  *mean = cnt ? s / cnt : 0;
  BN_FOR(*d, f, k) q += (rt_get_f(xt, k) - *mean) * (rt_get_f(xt, k) - *mean);
  *var = cnt ? q / cnt : 0;
}

/* batch-norm-inference(x, scale, offset, mean, variance): (x - mean) / sqrt(variance + epsilon) *
 * scale + offset, per feature. */
bool rt_op_batch_norm_inference(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  BnDims d;
  if (!bn_dims(i, ops[0], &d, err) || !bn_vectors_ok(i, ops + 1, 4, &d, err)) return false;
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  if (!rt_tensor_matches(ops[0], &i->shape)) {
    rt_tensor_unref(r);
    return instr_error(i, err, "batch-norm-inference returns the operand's shape");
  }
  for (int64_t f = 0; f < d.features; f++) {
    double mean = rt_get_f(ops[3], f), inv = 1.0 / sqrt(rt_get_f(ops[4], f) + d.eps);
    double sc = rt_get_f(ops[1], f), off = rt_get_f(ops[2], f);
    BN_FOR(d, f, k) rt_set_f(r, k, (rt_get_f(ops[0], k) - mean) * inv * sc + off);
  }
  *out = r;
  return true;
}

/* batch-norm-training(x, scale, offset): normalizes with the batch's own mean and (biased)
 * variance; returns (output, mean, variance). */
bool rt_op_batch_norm_training(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  BnDims d;
  if (!bn_dims(i, ops[0], &d, err) || !bn_vectors_ok(i, ops + 1, 2, &d, err)) return false;
  const IrShape *s = &i->shape;
  if (s->type != IR_TUPLE || s->ntuple != 3 || !rt_tensor_matches(ops[0], &s->tuple[0]) || !rt_tensor_matches(ops[1], &s->tuple[1]) ||
      !rt_tensor_matches(ops[1], &s->tuple[2]))
    return instr_error(i, err, "batch-norm-training returns (output, mean, variance) shaped like its operand and scale");
  RtTensor *r = rt_tensor_for_shape(s, err);
  if (!r) return false;
  for (int64_t f = 0; f < d.features; f++) {
    double mean, var;
    bn_stats(ops[0], &d, f, &mean, &var);
    double inv = 1.0 / sqrt(var + d.eps), sc = rt_get_f(ops[1], f), off = rt_get_f(ops[2], f);
    BN_FOR(d, f, k) rt_set_f(r->tuple[0], k, (rt_get_f(ops[0], k) - mean) * inv * sc + off);
    rt_set_f(r->tuple[1], f, mean);
    rt_set_f(r->tuple[2], f, var);
  }
  *out = r;
  return true;
}

/* batch-norm-grad(x, scale, mean, variance, grad_output): returns (grad_x, grad_scale, grad_offset)
 * as XLA defines them, with N the elements per feature:
 *   grad_offset = sum(dy), grad_scale = sum(dy (x - mean)) / sqrt(var + eps),
 *   grad_x = scale / sqrt(var + eps) * (dy - sum(dy) / N - (x - mean) sum(dy (x - mean)) / (N (var + eps))) */
bool rt_op_batch_norm_grad(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  BnDims d;
  if (!bn_dims(i, ops[0], &d, err) || !bn_vectors_ok(i, ops + 1, 3, &d, err)) return false;
  const IrShape *s = &i->shape;
  if (s->type != IR_TUPLE || s->ntuple != 3 || !rt_tensor_matches(ops[0], &s->tuple[0]) || !rt_tensor_matches(ops[4], &s->tuple[0]) ||
      !rt_tensor_matches(ops[1], &s->tuple[1]) || !rt_tensor_matches(ops[1], &s->tuple[2]))
    return instr_error(i, err, "batch-norm-grad returns (grad_operand, grad_scale, grad_offset) shaped like its operand and scale");
  RtTensor *r = rt_tensor_for_shape(s, err);
  if (!r) return false;
  const RtTensor *xt = ops[0], *dy = ops[4];
  double cnt = (double)(d.outer * d.inner);
  for (int64_t f = 0; f < d.features; f++) {
    double mean = rt_get_f(ops[2], f), var = rt_get_f(ops[3], f), sc = rt_get_f(ops[1], f);
    double inv = 1.0 / sqrt(var + d.eps), sdy = 0, sdyx = 0;
    BN_FOR(d, f, k) {
      sdy += rt_get_f(dy, k);
      sdyx += rt_get_f(dy, k) * (rt_get_f(xt, k) - mean);
    }
    BN_FOR(d, f, k) {
      double g = sc * inv * (rt_get_f(dy, k) - sdy / cnt - (rt_get_f(xt, k) - mean) * sdyx / (cnt * (var + d.eps)));
      rt_set_f(r->tuple[0], k, g);
    }
    rt_set_f(r->tuple[1], f, sdyx * inv);
    rt_set_f(r->tuple[2], f, sdy);
  }
  *out = r;
  return true;
}

/* interp_contract.c — the reference interpreter's dot and convolution on real numbers, computed
 * the way the generic loops in interp_ops.c define them, only faster: every operand element is
 * read once into a double array laid out so that each output's sum runs over contiguous memory,
 * instead of being located and converted again for every product.
 *
 * The results are the same bits as the generic loops': each output is the sum of the same
 * products (taken in double), added in the same order (the contracting index in row-major order;
 * for convolution, input feature outer and window position inner, skipping positions outside the
 * input), and rounded once when stored. The speed comes only from the layout and from computing
 * four outputs side by side. Complex and integer results take the generic loops. */
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"

static bool oom(FxError *err) { return fx_error_set(err, NULL, 0, 0, "out of memory for the interpreter's dot/convolution scratch"); }

/* Reads t's elements base .. base + n - 1 as doubles (a contiguous run: the loops vectorize). */
static void gather_run(const RtTensor *t, int64_t base, int64_t n, double *out) {
  switch (t->type) {
  case IR_F32: {
    const float *p = (const float *)t->data + base;
    for (int64_t k = 0; k < n; k++) out[k] = p[k];
    break;
  }
  case IR_F64: memcpy(out, (const double *)t->data + base, (size_t)n * sizeof *out); break;
  case IR_BF16: {
    const uint16_t *p = (const uint16_t *)t->data + base;
    for (int64_t k = 0; k < n; k++) out[k] = rt_bf16_to_f32(p[k]);
    break;
  }
  default:
    for (int64_t k = 0; k < n; k++) out[k] = rt_get_f(t, base + k);
  }
}

/* Reads t's elements at base + off[0..n) as doubles. */
static void gather(const RtTensor *t, int64_t base, const int64_t *off, int64_t n, double *out) {
  switch (t->type) {
  case IR_F32: {
    const float *p = (const float *)t->data + base;
    for (int64_t k = 0; k < n; k++) out[k] = p[off[k]];
    break;
  }
  case IR_F64: {
    const double *p = (const double *)t->data + base;
    for (int64_t k = 0; k < n; k++) out[k] = p[off[k]];
    break;
  }
  case IR_BF16: {
    const uint16_t *p = (const uint16_t *)t->data + base;
    for (int64_t k = 0; k < n; k++) out[k] = rt_bf16_to_f32(p[off[k]]);
    break;
  }
  default:
    for (int64_t k = 0; k < n; k++) out[k] = rt_get_f(t, base + off[k]);
  }
}

static bool unit_stride(const int64_t *off, int64_t n) {
  for (int64_t j = 1; j < n; j++)
    if (off[j] != off[0] + j) return false;
  return true;
}

/* gather, or gather_run when the offsets are known to be consecutive (`run`). */
static void gather_offsets(const RtTensor *t, int64_t base, const int64_t *off, int64_t n, bool run, double *out) {
  if (run && n > 0) gather_run(t, base + off[0], n, out);
  else gather(t, base, off, n, out);
}

static bool fast_contractions = true;

void rt_interp_set_fast_contractions(bool on) { fast_contractions = on; }

bool rt_contract_is_real(const RtTensor *a, const RtTensor *b, const RtTensor *r) {
  return fast_contractions && ir_type_is_float(r->type) && !ir_type_is_complex(r->type) && !ir_type_is_complex(a->type) &&
         !ir_type_is_complex(b->type);
}

/* Element offsets of every index over `n` of t's dimensions (dims[k] of size, strides st[dim[k]]),
 * in row-major order of those dimensions. Returns NULL when out of memory. */
int64_t *rt_index_offsets(int n, const int64_t *dim, const int64_t *sizes, const int64_t *st, int64_t *count) {
  int64_t total = 1, ext[IR_MAX_RANK];
  for (int k = 0; k < n; k++) total *= (ext[k] = sizes[dim[k]]);
  int64_t *off = fx_malloc((size_t)(total ? total : 1) * sizeof *off);
  if (!off) return NULL;
  int64_t idx[IR_MAX_RANK] = {0};
  for (int64_t q = 0; q < total; q++) {
    int64_t o = 0;
    for (int k = 0; k < n; k++) o += idx[k] * st[dim[k]];
    off[q] = o;
    rt_next_index(n, ext, idx);
  }
  *count = total;
  return off;
}

/* ---------- dot ---------- */

/* Rows of the left operand packed per chunk (so the scratch stays bounded for huge operands), and
 * columns of the right operand per chunk (so a chunk stays in cache while every row passes it). */
#define DOT_PACK_DOUBLES (4 << 20)
#define DOT_COLUMN_DOUBLES (32 << 10)

static void dot_rows(const double *A, int64_t rows, const double *B, int64_t cols, int64_t K, RtTensor *r,
                     int64_t rbase, int64_t N, int64_t n0) {
  for (int64_t m = 0; m < rows; m++) {
    const double *a = A + m * K;
    int64_t n = 0;
    for (; n + 4 <= cols; n += 4) {
      const double *b0 = B + n * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t c = 0; c < K; c++) {
        double v = a[c];
        s0 += v * b0[c];
        s1 += v * b1[c];
        s2 += v * b2[c];
        s3 += v * b3[c];
      }
      int64_t o = rbase + m * N + n0 + n;
      rt_set_f(r, o, s0);
      rt_set_f(r, o + 1, s1);
      rt_set_f(r, o + 2, s2);
      rt_set_f(r, o + 3, s3);
    }
    for (; n < cols; n++) {
      const double *b0 = B + n * K;
      double s0 = 0;
      for (int64_t c = 0; c < K; c++) s0 += a[c] * b0[c];
      rt_set_f(r, rbase + m * N + n0 + n, s0);
    }
  }
}

/* A few rows against a right operand whose output columns are contiguous (a matrix-vector
 * product, a decoding step): instead of packing the right operand (which would convert every
 * element once per output anyway), stream it row by row along the contracting index and add
 * a[m][c] * b[c][n] into one accumulator per output, c in order. Each output's sum is the same
 * as the packed loop's, term for term. */
#define AXPY_MAX_ROWS 8
#define AXPY_COLUMNS 2048

static bool dot_axpy(RtExec *x, const RtTensor *a, const RtTensor *b, RtTensor *r, const RtDotMap *d, FxError *err) {
  int64_t K = d->k, M = d->m, N = d->n;
  int64_t cols = N < AXPY_COLUMNS ? N : AXPY_COLUMNS;
  bool a_run = unit_stride(d->a_c, K);
  double *A = fx_malloc((size_t)(M * (K ? K : 1)) * sizeof *A), *row = fx_malloc((size_t)cols * sizeof *row);
  double *acc = fx_malloc((size_t)(M * cols) * sizeof *acc);
  bool ok = A && row && acc;
  if (!ok) oom(err);
  for (int64_t bi = 0; bi < d->nb && ok; bi++) {
    for (int64_t m = 0; m < M; m++) gather_offsets(a, d->a_b[bi] + d->a_m[m], d->a_c, K, a_run, A + m * K);
    for (int64_t n0 = 0; n0 < N && ok; n0 += cols) {
      int64_t w = N - n0 < cols ? N - n0 : cols;
      memset(acc, 0, (size_t)(M * cols) * sizeof *acc);
      for (int64_t c = 0; c < K; c++) {
        gather_run(b, d->b_b[bi] + d->b_c[c] + d->b_n[n0], w, row);
        for (int64_t m = 0; m < M; m++) {
          double v = A[m * K + c], *s = acc + m * cols;
          for (int64_t j = 0; j < w; j++) s[j] += v * row[j];
        }
      }
      for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < w; j++) rt_set_f(r, (bi * M + m) * N + n0 + j, acc[m * cols + j]);
      ok = rt_exec_poll(x, err);
    }
  }
  fx_free(A), fx_free(row), fx_free(acc);
  return ok;
}

bool rt_dot_real(RtExec *x, const RtTensor *a, const RtTensor *b, RtTensor *r, const RtDotMap *d, FxError *err) {
  int64_t K = d->k, M = d->m, N = d->n;
  if (r->count == 0) return true;
  if (M <= AXPY_MAX_ROWS && N >= 8 && unit_stride(d->b_n, N)) return dot_axpy(x, a, b, r, d, err);
  bool a_run = unit_stride(d->a_c, K), b_run = unit_stride(d->b_c, K);
  int64_t kk = K ? K : 1;
  int64_t mrows = DOT_PACK_DOUBLES / kk, ncols = DOT_COLUMN_DOUBLES / kk;
  if (mrows < 1) mrows = 1;
  if (mrows > M) mrows = M;
  if (ncols < 4) ncols = 4;
  if (ncols > N) ncols = N;
  double *A = fx_malloc((size_t)(mrows * kk) * sizeof *A), *B = fx_malloc((size_t)(ncols * kk) * sizeof *B);
  double *row = fx_malloc((size_t)ncols * sizeof *row);
  bool ok = A && B && row;
  if (!ok) oom(err);
  for (int64_t bi = 0; bi < d->nb && ok; bi++) {
    for (int64_t m0 = 0; m0 < M && ok; m0 += mrows) {
      int64_t rows = M - m0 < mrows ? M - m0 : mrows;
      for (int64_t m = 0; m < rows; m++) gather_offsets(a, d->a_b[bi] + d->a_m[m0 + m], d->a_c, K, a_run, A + m * K);
      for (int64_t n0 = 0; n0 < N && ok; n0 += ncols) {
        int64_t cols = N - n0 < ncols ? N - n0 : ncols;
        if (unit_stride(d->b_n + n0, cols)) {
          /* the columns are contiguous in the right operand: read it a row (one contracting
             index) at a time and transpose into the packed layout */
          for (int64_t c = 0; c < K; c++) {
            gather_run(b, d->b_b[bi] + d->b_c[c] + d->b_n[n0], cols, row);
            for (int64_t n = 0; n < cols; n++) B[n * K + c] = row[n];
          }
        } else {
          for (int64_t n = 0; n < cols; n++) gather_offsets(b, d->b_b[bi] + d->b_n[n0 + n], d->b_c, K, b_run, B + n * K);
        }
        dot_rows(A, rows, B, cols, K, r, bi * M * N + m0 * N, N, n0);
        ok = rt_exec_poll(x, err);
      }
    }
  }
  fx_free(A), fx_free(B), fx_free(row);
  return ok;
}

/* ---------- convolution ---------- */

bool rt_conv_real(RtExec *x, const RtTensor *in, const RtTensor *k, RtTensor *r, const RtConvMap *c, FxError *err) {
  const IrConvDims *L = c->dims;
  const IrWindow *w = c->window;
  int ns = L->nspatial;
  int64_t ist[IR_MAX_RANK], kst[IR_MAX_RANK], rst[IR_MAX_RANK];
  rt_strides(in->rank, in->dims, ist);
  rt_strides(k->rank, k->dims, kst);
  rt_strides(r->rank, r->dims, rst);
  int64_t nbatch = in->dims[L->in_batch], cin = in->dims[L->in_feature];
  int64_t kin = k->dims[L->k_in], kout = k->dims[L->k_out];
  int64_t isp = 1, kvol = 1, osp = 1, ksz[IR_MAX_RANK], osz[IR_MAX_RANK]; /* window and output spatial sizes */
  for (int s = 0; s < ns; s++) {
    isp *= in->dims[L->in_spatial[s]];
    kvol *= (ksz[s] = k->dims[L->k_spatial[s]]);
    osp *= (osz[s] = r->dims[L->out_spatial[s]]);
  }
  if (r->count == 0) return true;
  /* the input as [batch][feature][spatial...] and the kernel as [out][in][window...], the window
     already reversed where rhs_reversal says so */
  double *In = fx_malloc((size_t)(in->count ? in->count : 1) * sizeof *In);
  double *Kd = fx_malloc((size_t)(k->count ? k->count : 1) * sizeof *Kd);
  int64_t *vin = fx_malloc((size_t)(kvol ? kvol : 1) * sizeof *vin), *vk = fx_malloc((size_t)(kvol ? kvol : 1) * sizeof *vk);
  bool ok = In && Kd && vin && vk;
  if (!ok) {
    fx_free(In), fx_free(Kd), fx_free(vin), fx_free(vk);
    return oom(err);
  }
  {
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t q = 0; q < in->count; q++) {
      int64_t sp = 0;
      for (int s = 0; s < ns; s++) sp = sp * in->dims[L->in_spatial[s]] + idx[L->in_spatial[s]];
      In[(idx[L->in_batch] * cin + idx[L->in_feature]) * isp + sp] = rt_get_f(in, q);
      rt_next_index(in->rank, in->dims, idx);
    }
  }
  {
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t q = 0; q < k->count; q++) {
      int64_t sp = 0;
      for (int s = 0; s < ns; s++) {
        int64_t v = idx[L->k_spatial[s]];
        sp = sp * ksz[s] + (w->reversal[s] ? ksz[s] - 1 - v : v);
      }
      Kd[(idx[L->k_out] * kin + idx[L->k_in]) * kvol + sp] = rt_get_f(k, q);
      rt_next_index(k->rank, k->dims, idx);
    }
  }
  int64_t per_group_out = kout / c->feature_groups, per_batch_group_out = kout / c->batch_groups;
  int64_t batch_group_size = nbatch / c->batch_groups, obatch = r->dims[L->out_batch];
  int64_t opos[IR_MAX_RANK] = {0}; /* output spatial index */
  for (int64_t p = 0; p < osp && ok; p++) {
    /* the window positions that land inside the input, in the generic loop's order */
    int64_t nv = 0, kidx[IR_MAX_RANK] = {0};
    for (int64_t q = 0; q < kvol; q++) {
      int64_t ioff = 0;
      bool inside = true;
      for (int s = 0; s < ns && inside; s++) {
        int64_t pos;
        inside = rt_window_source(w, s, opos[s], kidx[s], in->dims[L->in_spatial[s]], &pos);
        if (inside) ioff = ioff * in->dims[L->in_spatial[s]] + pos;
      }
      if (inside) {
        vin[nv] = ioff;
        vk[nv++] = q;
      }
      rt_next_index(ns, ksz, kidx);
    }
    int64_t obase = 0;
    for (int s = 0; s < ns; s++) obase += opos[s] * rst[L->out_spatial[s]];
    for (int64_t ob = 0; ob < obatch; ob++) {
      for (int64_t of = 0; of < kout;) {
        /* up to four output features that read the same input slice */
        int64_t g = of / per_group_out, bg = of / per_batch_group_out, nf = 1;
        while (nf < 4 && of + nf < kout && (of + nf) / per_group_out == g && (of + nf) / per_batch_group_out == bg) nf++;
        int64_t bb = ob + bg * batch_group_size;
        double s[4] = {0, 0, 0, 0};
        for (int64_t ci = 0; ci < kin; ci++) {
          const double *ip = In + (bb * cin + g * kin + ci) * isp;
          const double *k0 = Kd + (of * kin + ci) * kvol;
          if (nf == 4) {
            const double *k1 = k0 + kin * kvol, *k2 = k1 + kin * kvol, *k3 = k2 + kin * kvol;
            for (int64_t v = 0; v < nv; v++) {
              double iv = ip[vin[v]];
              int64_t kq = vk[v];
              s[0] += iv * k0[kq];
              s[1] += iv * k1[kq];
              s[2] += iv * k2[kq];
              s[3] += iv * k3[kq];
            }
          } else {
            for (int64_t j = 0; j < nf; j++) {
              const double *kj = k0 + j * kin * kvol;
              for (int64_t v = 0; v < nv; v++) s[j] += ip[vin[v]] * kj[vk[v]];
            }
          }
        }
        for (int64_t j = 0; j < nf; j++)
          rt_set_f(r, obase + ob * rst[L->out_batch] + (of + j) * rst[L->out_feature], s[j]);
        of += nf;
      }
    }
    rt_next_index(ns, osz, opos);
    if ((p & 0xff) == 0) ok = rt_exec_poll(x, err);
  }
  fx_free(In), fx_free(Kd), fx_free(vin), fx_free(vk);
  return ok;
}

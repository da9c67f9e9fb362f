/* cpu_blas.c — the CPU backend's dots and convolutions: gemm on BLAS (OpenBLAS), split over the
 * backend's own threads, and convolution as im2col + gemm, or directly for a depthwise one.
 *
 * Each takes its operands and a description (CpuGemm, RtConvMap), not an instruction, so that a
 * custom call that is a gemm or a convolution (cuBLAS's, cuDNN's) can run on the CPU through the
 * same code; cpu_gemm_of_dot and cpu_conv_of describe an HLO dot and convolution.
 *
 * Threads: BLAS's own threads are turned off (openblas_set_num_threads(1), looked up at run time:
 * the BLAS may not be OpenBLAS) and every large gemm is split into blocks of rows (or of columns,
 * or batches) that the backend's pool runs, one single-threaded gemm each: two pools on a shared
 * machine made OpenBLAS's threads spin against the kernels' and against other processes (a 25
 * MFLOP product took 3 to 14 ms at load 10). `set threads` counts for both.
 *
 * Numbers: f32 on sgemm, f64 on dgemm; bf16 and f16 through double copies and dgemm, summed in
 * double and rounded once, as the interpreter does (summed in float, the last bits of a sum differ
 * often enough to flip a bf16 rounding, and a deep bf16 network amplified those flips past
 * --check's tolerance). A depthwise convolution (one input feature per group) is summed directly
 * in double in the interpreter's order, input feature then window position: its results are the
 * interpreter's bit for bit. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#ifdef FXPLAIN_HAVE_BLAS
#include <cblas.h>
#endif

#include "cpu_internal.h"

/* ---------- gemm ---------- */

bool cpu_gemm_of_dot(const IrInstr *i, CpuGemm *g) {
  IrDotDims dd;
  if (!ir_dot_dims(i, &dd) || i->noperands != 2) return false;
  const IrShape *a = &i->operands[0]->shape, *b = &i->operands[1]->shape;
  int nb = dd.nlhs_batch, nc = dd.nlhs_contract;
  if (dd.nrhs_batch != nb || nc < 1 || dd.nrhs_contract != nc || a->rank < nb + 1 || b->rank < nb + 1) return false;
  g->batch = 1;
  for (int k = 0; k < nb; k++) {
    if (dd.lhs_batch[k] != k || dd.rhs_batch[k] != k || a->dims[k] != b->dims[k]) return false;
    g->batch *= a->dims[k];
  }
  /* several contracting dims: consecutive on each side, paired in the same order (in memory
     order they are then one contracting dim of their product; the interpreter sums them in the
     order listed, so a double sum can differ from it in its last bits, far below a bf16, f16 or
     f32 result's precision) */
  int64_t pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  for (int c = 0; c < nc; c++) pa[c] = dd.lhs_contract[c], pb[c] = dd.rhs_contract[c];
  for (int c = 1; c < nc; c++)
    for (int c2 = c; c2 > 0 && pa[c2 - 1] > pa[c2]; c2--) {
      int64_t t = pa[c2];
      pa[c2] = pa[c2 - 1], pa[c2 - 1] = t;
      t = pb[c2];
      pb[c2] = pb[c2 - 1], pb[c2 - 1] = t;
    }
  g->k = 1;
  for (int c = 0; c < nc; c++) {
    if (pa[c] < nb || pb[c] < nb || a->dims[pa[c]] != b->dims[pb[c]]) return false;
    if (c > 0 && (pa[c] != pa[c - 1] + 1 || pb[c] != pb[c - 1] + 1)) return false;
    g->k *= a->dims[pa[c]];
  }
  int ca = (int)pa[0], cae = (int)pa[nc - 1], cb = (int)pb[0], cbe = (int)pb[nc - 1];
  /* each side's free dims before (l1, r1) and after (l2, r2) its contracting dims */
  int64_t l1 = 1, l2 = 1, r1 = 1, r2 = 1;
  for (int d = nb; d < a->rank; d++)
    if (d < ca) l1 *= a->dims[d];
    else if (d > cae) l2 *= a->dims[d];
  for (int d = nb; d < b->rank; d++)
    if (d < cb) r1 *= b->dims[d];
    else if (d > cbe) r2 *= b->dims[d];
  g->trans_a = l2 > 1;
  g->m = l2 > 1 ? l2 : l1;
  g->ga = l1 > 1 && l2 > 1 ? l1 : 1;
  g->trans_b = r2 == 1 && r1 > 1;
  g->n = r2 > 1 ? r2 : r1;
  g->gb = r1 > 1 && r2 > 1 ? r1 : 1;
  return g->m <= INT32_MAX && g->n <= INT32_MAX && g->k <= INT32_MAX && cpu_gemm_types_ok(a->type, b->type, i->shape.type);
}

bool cpu_gemm_types_ok(IrType a, IrType b, IrType r) {
#ifdef FXPLAIN_HAVE_BLAS
  return (r == IR_F32 || r == IR_F64 || r == IR_BF16 || r == IR_F16) && a == r && b == r;
#else
  (void)a;
  (void)b;
  (void)r;
  return false;
#endif
}

void cpu_blas_single_threaded(void) {
  static bool done;
  if (done) return;
  done = true;
  void *f = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  if (f) {
    void (*set)(int);
    memcpy(&set, &f, sizeof f);
    set(1);
  }
}

/* bf16 and f16 elements as floats and back, inline (rt_f32_to_bf16's rounding: nearest even,
 * NaN kept quiet). */
static inline double half_get(const uint16_t *h, int64_t e, bool bf) { return bf ? rt_bf16_to_f32(h[e]) : rt_f16_to_f32(h[e]); }

static inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

enum { GEMM_PARALLEL_MACS = 1 << 20 };

/* A bf16 or f16 gemm. No operand is ever held converted as a whole (a 262144-column embedding
 * would take 2.4 GB in double): each task converts the blocks it multiplies into scratch of its
 * thread and rounds its block of C into the output. A product of at most GEMV_ROWS rows (a
 * decoding step) streams B's rows over A's (HALF_ROWS), one of at most GEMV_ROWS columns whose lhs
 * is stored transposed streams B^T's over A^T's (HALF_COLS): each output's sum over k in order,
 * in double, exactly the interpreter's sum. Larger products (attention's 128 x 128 blocks) run
 * on dgemm over the blocks converted to double: summed in double, as the interpreter sums, and
 * rounded once (in float, as XLA:CPU sums them, Gemma 3's 26 layers amplified the flipped bf16
 * roundings past --check's tolerance). */
enum { GEMV_ROWS = 16 };

/* The streamed product of rows A ([mr][K], doubles) and columns [0, nr) of the bf16/f16 rows of
 * B (row stride ldb) into C ([mr][nr]): four rows of B converted at a time (into Bb, 4 * nr), each
 * output's sum taken over k in order. Where gcc can, it is compiled for AVX-512 and AVX2 as well,
 * chosen when the program starts by what the processor has (fxplain itself is built for any
 * x86-64; the C unit of the kernels is built for the machine). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FX_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FX_CLONES
#endif

/* n contiguous bf16/f16 elements as doubles (exact); inlined into each clone of its callers, so
 * the bf16 widening (a 16-bit shift, rt_bf16_to_f32) vectorizes there. */
static inline void widen_row(const uint16_t *src, int64_t n, bool bf, double *dst) {
  if (bf)
    for (int64_t j = 0; j < n; j++) dst[j] = rt_bf16_to_f32(src[j]);
  else
    for (int64_t j = 0; j < n; j++) dst[j] = rt_f16_to_f32(src[j]);
}

FX_CLONES static void gemv_block(const double *A, int64_t mr, int64_t K, const uint16_t *B, int64_t ldb, int64_t nr, bool bf,
                                 double *Bb, double *C) {
  memset(C, 0, sizeof *C * (size_t)(mr * nr));
  int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    for (int q = 0; q < 4; q++) {
      widen_row(B + (k + q) * ldb, nr, bf, Bb + q * nr);
    }
    const double *b0 = Bb, *b1 = Bb + nr, *b2 = Bb + 2 * nr, *b3 = Bb + 3 * nr;
    for (int64_t m = 0; m < mr; m++) {
      const double a0 = A[m * K + k], a1 = A[m * K + k + 1], a2 = A[m * K + k + 2], a3 = A[m * K + k + 3];
      double *c = C + m * nr;
      for (int64_t j = 0; j < nr; j++) {
        double t = c[j] + a0 * b0[j];
        t = t + a1 * b1[j];
        t = t + a2 * b2[j];
        c[j] = t + a3 * b3[j];
      }
    }
  }
  for (; k < K; k++) {
    widen_row(B + k * ldb, nr, bf, Bb);
    for (int64_t m = 0; m < mr; m++) {
      double av = A[m * K + k], *c = C + m * nr;
      for (int64_t j = 0; j < nr; j++) c[j] += av * Bb[j];
    }
  }
}

/* n bf16/f16 elements `stride` apart as doubles (exact). */
FX_CLONES static void half_to_f64(const uint16_t *src, int64_t stride, int64_t n, bool bf, double *dst) {
  if (stride == 1) widen_row(src, n, bf, dst);
  else
    for (int64_t j = 0; j < n; j++) dst[j] = half_get(src, j * stride, bf);
}

typedef enum { HALF_ROWS, HALF_COLS, HALF_GEMM } HalfMode;

typedef struct {
  const CpuGemm *g;
  HalfMode mode;
  const RtTensor *a, *bt;
  RtTensor *r;
  int64_t a0, b0, r0, ldc;  /* where the product's operands and result start (elements); the result's row stride */
  int64_t mb, nb;          /* block sizes */
  int64_t mblocks, nblocks; /* per batch */
  double **scratch;        /* per thread: mb * k + k * nb + mb * nb doubles */
} HalfGemmTask;

static void half_gemm_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  const HalfGemmTask *t = ctx;
  const CpuGemm *g = t->g;
  int64_t M = g->m, N = g->n, K = g->k;
  bool bf = t->r->type == IR_BF16;
  double *Ab = t->scratch[tid], *Bb = Ab + t->mb * K, *Cb = Bb + (K * t->nb > 4 * t->nb ? K * t->nb : 4 * t->nb);
  for (int64_t u = lo; u < hi; u++) {
    int64_t q = u / (t->mblocks * t->nblocks), rest = u % (t->mblocks * t->nblocks);
    int64_t m0 = (rest / t->nblocks) * t->mb, n0 = (rest % t->nblocks) * t->nb;
    int64_t wide = t->mode == HALF_COLS ? M : N; /* what the column blocks run over */
    int64_t mr = M - m0 < t->mb ? M - m0 : t->mb, nr = wide - n0 < t->nb ? wide - n0 : t->nb;
    const uint16_t *A = (const uint16_t *)t->a->data + t->a0 + q * M * K, *B = (const uint16_t *)t->bt->data + t->b0 + q * K * N;
    uint16_t *R = (uint16_t *)t->r->data + t->r0 + q * M * t->ldc;
    if (t->mode == HALF_COLS) {
      /* few columns: rows of B^T streamed over A^T, a block of columns of A^T ([K][M], the lhs
         stored transposed) at a time; C^T's block stored transposed */
      for (int64_t n = 0; n < N; n++) half_to_f64(B + (g->trans_b ? n * K : n), g->trans_b ? 1 : N, K, bf, Ab + n * K);
      gemv_block(Ab, N, K, A + n0, M, nr, bf, Bb, Cb);
      for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < nr; j++) {
          double v = Cb[n * nr + j];
          R[(n0 + j) * t->ldc + n] = bf ? f32_to_bf16((float)v) : rt_f32_to_f16((float)v);
        }
      continue;
    }
    if (t->mode == HALF_ROWS) {
      for (int64_t m = 0; m < mr; m++)
        half_to_f64(A + (g->trans_a ? m0 + m : (m0 + m) * K), g->trans_a ? M : 1, K, bf, Ab + m * K);
      gemv_block(Ab, mr, K, B + n0, N, nr, bf, Bb, Cb);
      for (int64_t m = 0; m < mr; m++)
        for (int64_t j = 0; j < nr; j++) {
          double v = Cb[m * nr + j];
          R[(m0 + m) * t->ldc + n0 + j] = bf ? f32_to_bf16((float)v) : rt_f32_to_f16((float)v);
        }
      continue;
    }
#ifdef FXPLAIN_HAVE_BLAS
    /* many rows and columns: the blocks in double on dgemm, summed in double as the interpreter
       sums (in float, the last bits of a sum differ often enough to flip a bf16 rounding, and
       Gemma 3's 26 layers amplified those flips past --check's tolerance) */
    for (int64_t m = 0; m < mr; m++)
      half_to_f64(A + (g->trans_a ? m0 + m : (m0 + m) * K), g->trans_a ? M : 1, K, bf, Ab + m * K);
    if (!g->trans_b)
      for (int64_t k = 0; k < K; k++) half_to_f64(B + k * N + n0, 1, nr, bf, Bb + k * nr);
    else
      for (int64_t j = 0; j < nr; j++) half_to_f64(B + (n0 + j) * K, 1, K, bf, Bb + j * K);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, (int)mr, (int)nr, (int)K, 1.0, Ab, (int)K,
                Bb, (int)(g->trans_b ? K : nr), 0.0, Cb, (int)nr);
    for (int64_t m = 0; m < mr; m++)
      for (int64_t j = 0; j < nr; j++) {
        double v = Cb[m * nr + j];
        R[(m0 + m) * t->ldc + n0 + j] = bf ? f32_to_bf16((float)v) : rt_f32_to_f16((float)v);
      }
#endif
  }
}

static bool gemm_half(CpuBackend *b, const CpuGemm *g, const RtTensor *a, int64_t a0, const RtTensor *bt, int64_t b0,
                      RtTensor *r, int64_t r0, int64_t ldc, FxError *err) {
  int64_t K = g->k ? g->k : 1;
  HalfMode mode = g->m <= GEMV_ROWS && !g->trans_b ? HALF_ROWS : g->n <= GEMV_ROWS && g->trans_a ? HALF_COLS : HALF_GEMM;
  /* blocks: B's block about 4 MB, A's about 8 MB, whole vectors of columns. HALF_COLS streams
     B^T's few rows over blocks of A^T's columns: the blocks run over m, and N rows are converted */
  int64_t wide = mode == HALF_COLS ? g->m : g->n, nb = (512 << 10) / K;
  nb = nb > 512 ? 512 : nb < 16 ? 16 : nb - nb % 16;
  if (nb > wide) nb = wide ? wide : 1;
  int64_t mb = mode == HALF_ROWS ? g->m : mode == HALF_COLS ? g->n : (1 << 20) / K;
  if (mode == HALF_GEMM) mb = mb > 2048 ? 2048 : mb < 16 ? 16 : mb;
  if (mode != HALF_COLS && mb > g->m) mb = g->m ? g->m : 1;
  if (mb < 1) mb = 1;
  HalfGemmTask t = {.g = g, .mode = mode, .a = a, .bt = bt, .r = r, .a0 = a0, .b0 = b0, .r0 = r0, .ldc = ldc, .mb = mb, .nb = nb};
  t.mblocks = mode == HALF_COLS ? 1 : (g->m + mb - 1) / mb;
  t.nblocks = (wide + nb - 1) / nb;
  int nt = cpu_threads(b);
  double *sp[CPU_MAX_THREADS];
  t.scratch = sp;
  bool ok = true;
  /* per thread: A's block, B's block (at least four rows of it), C's block */
  int64_t bsize = K * nb > 4 * nb ? K * nb : 4 * nb;
  for (int q = 0; ok && q < nt; q++) ok = (sp[q] = cpu_scratch(b, q, sizeof(double) * (size_t)(mb * K + bsize + mb * nb))) != NULL;
  if (ok) {
    int64_t units = g->batch * t.mblocks * t.nblocks;
    double macs = (double)g->batch * (double)g->m * (double)g->n * (double)g->k;
    if (macs >= GEMM_PARALLEL_MACS) cpu_parallel(b, half_gemm_task, &t, units, 1);
    else half_gemm_task(&t, 0, units, 0);
  }
  return ok || fx_error_set(err, NULL, 0, 0, "out of memory for a gemm's blocks");
}

/* One block of a gemm: batch q, rows [m0, m1), columns [n0, n1). */
typedef struct {
  const CpuGemm *g;
  bool dbl;
  const char *a, *b;
  char *c;
  int64_t ldb, ldc;  /* B's and C's row strides (elements) */
  int64_t blocks;    /* per batch */
  int64_t bsize;     /* rows (or columns, when split_n) per block */
  bool split_n;
} GemmTask;

static void gemm_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  (void)tid;
#ifdef FXPLAIN_HAVE_BLAS
  const GemmTask *t = ctx;
  const CpuGemm *g = t->g;
  int64_t M = g->m, N = g->n, K = g->k, es = t->dbl ? 8 : 4;
  for (int64_t u = lo; u < hi; u++) {
    int64_t q = u / t->blocks, blk = u % t->blocks;
    int64_t m0 = 0, m1 = M, n0 = 0, n1 = N;
    if (t->split_n) {
      n0 = blk * t->bsize;
      n1 = n0 + t->bsize < N ? n0 + t->bsize : N;
    } else {
      m0 = blk * t->bsize;
      m1 = m0 + t->bsize < M ? m0 + t->bsize : M;
    }
    if (m1 <= m0 || n1 <= n0) continue;
    const char *a = t->a + es * (q * M * K + (g->trans_a ? m0 : m0 * K));
    const char *b = t->b + es * (q * K * N + (g->trans_b ? n0 * t->ldb : n0));
    char *c = t->c + es * (q * M * t->ldc + m0 * t->ldc + n0);
    int lda = (int)(g->trans_a ? M : K), ldb = (int)t->ldb;
    CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans, tb = g->trans_b ? CblasTrans : CblasNoTrans;
    if (t->dbl)
      cblas_dgemm(CblasRowMajor, ta, tb, (int)(m1 - m0), (int)(n1 - n0), (int)K, 1.0, (const double *)a, lda,
                  (const double *)b, ldb, 0.0, (double *)c, (int)t->ldc);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, (int)(m1 - m0), (int)(n1 - n0), (int)K, 1.0f, (const float *)a, lda,
                  (const float *)b, ldb, 0.0f, (float *)c, (int)t->ldc);
  }
#else
  (void)ctx;
  (void)lo;
  (void)hi;
#endif
}

/* C = A x B over raw arrays of floats (dbl: doubles), B's rows ldb apart (0: as g says), C's ldc
 * apart, split over the pool when large. Each block's gemm packs its own part of A and B again, so
 * blocks of rows are kept at least GEMM_MIN_ROWS tall, and a product with few rows is split by
 * columns instead (the right operand, a convolution's weights say, is then packed once in all). */
enum { GEMM_MIN_ROWS = 128, GEMM_MIN_COLS = 32 };

static void gemm_raw(CpuBackend *b, const CpuGemm *g, bool dbl, const void *A, const void *B, int64_t ldb, void *C,
                     int64_t ldc) {
  if (!ldb) ldb = g->trans_b ? g->k : g->n;
  GemmTask t = {.g = g, .dbl = dbl, .a = A, .b = B, .c = C, .ldb = ldb, .ldc = ldc, .blocks = 1, .bsize = g->m};
  int nt = cpu_threads(b);
  double macs = (double)g->batch * (double)g->m * (double)g->n * (double)g->k;
  if (nt > 1 && macs >= GEMM_PARALLEL_MACS && g->batch < 2 * nt) {
    /* two blocks per thread and batch: of rows, or of columns when the rows are few */
    int64_t want = (2 * nt + g->batch - 1) / g->batch, len = 0;
    if (g->m >= GEMM_MIN_ROWS * want) len = g->m;
    else if (g->n >= GEMM_MIN_COLS * want) t.split_n = true, len = g->n;
    else if (g->m >= 2 * GEMM_MIN_ROWS) len = g->m, want = g->m / GEMM_MIN_ROWS;
    if (len) {
      t.bsize = (len + want - 1) / want;
      if (t.split_n && t.bsize > 16) t.bsize = (t.bsize + 15) / 16 * 16; /* whole vectors of columns */
      t.blocks = (len + t.bsize - 1) / t.bsize;
    }
  }
  int64_t units = g->batch * t.blocks;
  if (nt > 1 && macs >= GEMM_PARALLEL_MACS) cpu_parallel(b, gemm_task, &t, units, 1);
  else gemm_task(&t, 0, units, 0);
}

bool cpu_gemm(CpuBackend *b, const CpuGemm *g, const RtTensor *a, const RtTensor *bt, RtTensor *r, FxError *err) {
  cpu_blas_single_threaded();
  bool half = r->type == IR_BF16 || r->type == IR_F16;
  int64_t ga = g->ga > 1 ? g->ga : 1, gb = g->gb > 1 ? g->gb : 1;
  if (ga == 1 && gb == 1) {
    if (half) return gemm_half(b, g, a, 0, bt, 0, r, 0, g->n, err);
    gemm_raw(b, g, r->type == IR_F64, a->data, bt->data, 0, r->data, g->n);
    return true;
  }
  /* groups: a product per (lhs leading free index, rhs leading free index), its rows and columns
     at their places in the result: [l1][m][r1][n] */
  CpuGemm one = *g;
  one.batch = 1;
  one.ga = one.gb = 1;
  int64_t M = g->m, N = g->n, K = g->k, es = ir_type_bytes(r->type), ldc = gb * N;
  for (int64_t q = 0; q < g->batch; q++)
    for (int64_t l1 = 0; l1 < ga; l1++)
      for (int64_t r1 = 0; r1 < gb; r1++) {
        int64_t a0 = (q * ga + l1) * M * K, b0 = (q * gb + r1) * K * N, r0 = q * ga * M * ldc + l1 * M * ldc + r1 * N;
        if (half) {
          if (!gemm_half(b, &one, a, a0, bt, b0, r, r0, ldc, err)) return false;
        } else {
          gemm_raw(b, &one, r->type == IR_F64, (const char *)a->data + a0 * es, (const char *)bt->data + b0 * es, 0,
                   (char *)r->data + r0 * es, ldc);
        }
      }
  return true;
}

/* ---------- convolution ---------- */

bool cpu_conv_of(const IrInstr *i, IrConvDims *d, IrWindow *w, RtConvMap *c) {
  char why[400];
  if (i->op != IR_OP_CONVOLUTION || i->noperands != 2 || !ir_conv_dims(i, d, why, sizeof why)) return false;
  if (!ir_attr_window(i, d->nspatial, w, why, sizeof why)) return false;
  int64_t fgc = 1, bgc = 1;
  ir_attr_int(i, "feature_group_count", &fgc);
  ir_attr_int(i, "batch_group_count", &bgc);
  c->dims = d;
  c->window = w;
  c->feature_groups = fgc;
  c->batch_groups = bgc;
  return true;
}

/* Sizes of a convolution, from its operands' shapes. */
typedef struct {
  int ns;
  int64_t nb, cin, kin, kout, groups, opg; /* batch, input features, per group in, out, groups, out per group */
  int64_t isz[IR_MAX_RANK], ksz[IR_MAX_RANK], osz[IR_MAX_RANK];
  int64_t kvol, osp, isp;
  int64_t ist[IR_MAX_RANK], kst[IR_MAX_RANK], rst[IR_MAX_RANK]; /* strides of input, kernel, output */
} ConvSizes;

static void strides(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= dims[d];
  }
}

static bool conv_sizes(const RtConvMap *c, const IrShape *in, const IrShape *k, const IrShape *r, ConvSizes *z) {
  const IrConvDims *L = c->dims;
  if (in->rank != L->rank || k->rank != L->rank || r->rank != L->rank || c->batch_groups != 1 || c->feature_groups < 1)
    return false;
  z->ns = L->nspatial;
  z->nb = in->dims[L->in_batch];
  z->cin = in->dims[L->in_feature];
  z->kin = k->dims[L->k_in];
  z->kout = k->dims[L->k_out];
  z->groups = c->feature_groups;
  if (z->cin != z->kin * z->groups || z->kout % z->groups || r->dims[L->out_batch] != z->nb || r->dims[L->out_feature] != z->kout)
    return false;
  z->opg = z->kout / z->groups;
  z->kvol = z->osp = z->isp = 1;
  for (int s = 0; s < z->ns; s++) {
    z->isp *= (z->isz[s] = in->dims[L->in_spatial[s]]);
    z->kvol *= (z->ksz[s] = k->dims[L->k_spatial[s]]);
    z->osp *= (z->osz[s] = r->dims[L->out_spatial[s]]);
  }
  strides(in->rank, in->dims, z->ist);
  strides(k->rank, k->dims, z->kst);
  strides(r->rank, r->dims, z->rst);
  return true;
}

/* A depthwise convolution, computed directly: one input feature per group and one output
 * feature per group (depth multiplier 1). */
static bool depthwise(const ConvSizes *z, const RtConvMap *c) {
  (void)c;
  return z->kin == 1 && z->opg == 1;
}

/* Its features are contiguous in input and output (b01f): each output position's features are
 * summed side by side; otherwise (bf01) each line of the last spatial dim's outputs is. */
static bool features_inner(const ConvSizes *z, const RtConvMap *c) {
  const IrConvDims *L = c->dims;
  return z->ist[L->in_feature] == 1 && z->rst[L->out_feature] == 1;
}

bool cpu_conv_is_depthwise(const RtConvMap *c, const IrShape *in, const IrShape *k, const IrShape *r) {
  ConvSizes z;
  return cpu_conv_ok(c, in, k, r) && conv_sizes(c, in, k, r, &z) && depthwise(&z, c);
}

bool cpu_conv_ok(const RtConvMap *c, const IrShape *in, const IrShape *k, const IrShape *r) {
  ConvSizes z;
  IrType t = r->type;
  if (in->type != t || k->type != t || !(t == IR_F32 || t == IR_F64 || t == IR_BF16 || t == IR_F16)) return false;
  if (!conv_sizes(c, in, k, r, &z)) return false;
  if (depthwise(&z, c)) return true;
#ifdef FXPLAIN_HAVE_BLAS
  /* a product worth a gemm: enough of a sum per output, and groups that are not tiny (each group
     gathers its own columns) */
  return z.kin * z.kvol >= 8 && (z.groups == 1 || z.kin >= 4) && z.osp * z.nb > 0;
#else
  return false;
#endif
}

/* Where window position widx (per spatial dim) of output position opos lands in the input:
 * its offset from the batch's and feature's, or -1 when in the padding. */
static int64_t window_source(const ConvSizes *z, const RtConvMap *c, const int64_t *opos, const int64_t *widx) {
  const IrConvDims *L = c->dims;
  int64_t off = 0;
  for (int s = 0; s < z->ns; s++) {
    int64_t p;
    if (!rt_window_source(c->window, s, opos[s], widx[s], z->isz[s], &p)) return -1;
    off += p * z->ist[L->in_spatial[s]];
  }
  return off;
}

/* Reads element o of t (any float type) as a double. */
static inline double elem(const RtTensor *t, int64_t o) {
  switch (t->type) {
  case IR_F32: return ((const float *)t->data)[o];
  case IR_F64: return ((const double *)t->data)[o];
  case IR_BF16: return rt_bf16_to_f32(((const uint16_t *)t->data)[o]);
  default: return rt_f16_to_f32(((const uint16_t *)t->data)[o]);
  }
}

static inline void set_elem(RtTensor *t, int64_t o, double v) {
  switch (t->type) {
  case IR_F32: ((float *)t->data)[o] = (float)v; break;
  case IR_F64: ((double *)t->data)[o] = v; break;
  case IR_BF16: ((uint16_t *)t->data)[o] = rt_f32_to_bf16((float)v); break;
  default: ((uint16_t *)t->data)[o] = rt_f32_to_f16((float)v); break;
  }
}

typedef struct {
  const ConvSizes *z;
  const RtConvMap *c;
  const RtTensor *in, *k;
  RtTensor *r;
  double *kd; /* the kernel as doubles, [window position][feature], reversed where the window says */
  double **scratch; /* per thread: the accumulators and a converted line */
} DepthTask;

/* Output positions [lo, hi) (batch-major over the output's spatial positions) of a depthwise
 * convolution: per position, every feature's sum in one pass over the window. */
static void depth_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  const DepthTask *t = ctx;
  const ConvSizes *z = t->z;
  const IrConvDims *L = t->c->dims;
  int64_t C = z->kout;
  double *acc = t->scratch[tid], *x = acc + C;
  for (int64_t u = lo; u < hi; u++) {
    int64_t b = u / z->osp, p = u % z->osp, opos[IR_MAX_RANK], widx[IR_MAX_RANK] = {0}, rest = p;
    for (int s = z->ns - 1; s >= 0; s--) {
      opos[s] = rest % z->osz[s];
      rest /= z->osz[s];
    }
    memset(acc, 0, sizeof *acc * (size_t)C);
    for (int64_t q = 0; q < z->kvol; q++) {
      int64_t src = window_source(z, t->c, opos, widx);
      if (src >= 0) {
        int64_t base = b * z->ist[L->in_batch] + src;
        const double *kq = t->kd + q * C;
        switch (t->in->type) {
        case IR_F32: {
          const float *ip = (const float *)t->in->data + base;
          for (int64_t f = 0; f < C; f++) x[f] = ip[f];
          break;
        }
        case IR_BF16: {
          const uint16_t *ip = (const uint16_t *)t->in->data + base;
          for (int64_t f = 0; f < C; f++) x[f] = rt_bf16_to_f32(ip[f]);
          break;
        }
        default:
          for (int64_t f = 0; f < C; f++) x[f] = elem(t->in, base + f);
        }
        for (int64_t f = 0; f < C; f++) acc[f] += x[f] * kq[f];
      }
      for (int s = z->ns - 1; s >= 0; s--) { /* the next window position, row-major */
        if (++widx[s] < z->ksz[s]) break;
        widx[s] = 0;
      }
    }
    int64_t obase = b * z->rst[L->out_batch];
    for (int s = 0; s < z->ns; s++) obase += opos[s] * z->rst[L->out_spatial[s]];
    for (int64_t f = 0; f < C; f++) set_elem(t->r, obase + f, acc[f]);
  }
}

/* Lines [lo, hi) of a depthwise convolution whose features are not innermost: a line is the
 * outputs along the last spatial dim at one batch, feature and position of the other spatial dims
 * (batch-major, then feature); per window position, its products are added to the whole line.
 * Each output's sum still takes the window positions in row-major order, as the interpreter's. */
static void depth_line_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  const DepthTask *t = ctx;
  const ConvSizes *z = t->z;
  const IrConvDims *L = t->c->dims;
  const IrWindow *w = t->c->window;
  int ns = z->ns, last = ns - 1;
  int64_t C = z->kout, OW = z->osz[last], IW = z->isz[last], lines_per_f = z->osp / OW;
  int64_t ilast = z->ist[L->in_spatial[last]], olast = z->rst[L->out_spatial[last]];
  double *acc = t->scratch[tid], *xrow = acc + OW;
  for (int64_t u = lo; u < hi; u++) {
    int64_t xoff = -1; /* the input line in xrow */
    int64_t b = u / (C * lines_per_f), f = (u / lines_per_f) % C, rest = u % lines_per_f;
    int64_t opos[IR_MAX_RANK] = {0}, widx[IR_MAX_RANK] = {0};
    for (int s = last - 1; s >= 0; s--) {
      opos[s] = rest % z->osz[s];
      rest /= z->osz[s];
    }
    memset(acc, 0, sizeof *acc * (size_t)OW);
    for (int64_t q = 0; q < z->kvol; q++) {
      /* the other spatial dims' source (the last dim's varies along the line) */
      int64_t off = b * z->ist[L->in_batch] + f * z->ist[L->in_feature];
      bool inside = true;
      for (int s = 0; s < last && inside; s++) {
        int64_t p;
        inside = rt_window_source(w, s, opos[s], widx[s], z->isz[s], &p);
        off += p * z->ist[L->in_spatial[s]];
      }
      if (inside) {
        double kq = t->kd[q * C + f];
        int64_t st = w->stride[last], wo = widx[last] * w->rhs_dilate[last] - w->pad_lo[last];
        if (w->lhs_dilate[last] == 1) {
          if (off != xoff) { /* the input line as doubles, once for the window positions that share it */
            if (ilast == 1 && t->in->type == IR_BF16) {
              const uint16_t *ip = (const uint16_t *)t->in->data + off;
              for (int64_t p = 0; p < IW; p++) xrow[p] = rt_bf16_to_f32(ip[p]);
            } else if (ilast == 1 && t->in->type == IR_F32) {
              const float *ip = (const float *)t->in->data + off;
              for (int64_t p = 0; p < IW; p++) xrow[p] = ip[p];
            } else {
              for (int64_t p = 0; p < IW; p++) xrow[p] = elem(t->in, off + p * ilast);
            }
            xoff = off;
          }
          /* the outputs whose source p = ow * st + wo lies in [0, IW) */
          int64_t a = wo >= 0 ? 0 : (-wo + st - 1) / st, e = IW - 1 - wo < 0 ? 0 : (IW - 1 - wo) / st + 1;
          if (e > OW) e = OW;
          if (st == 1)
            for (int64_t ow = a; ow < e; ow++) acc[ow] += xrow[ow + wo] * kq;
          else
            for (int64_t ow = a; ow < e; ow++) acc[ow] += xrow[ow * st + wo] * kq;
        } else {
          for (int64_t ow = 0; ow < OW; ow++) {
            int64_t p;
            if (rt_window_source(w, last, ow, widx[last], IW, &p)) acc[ow] += elem(t->in, off + p * ilast) * kq;
          }
        }
      }
      for (int s = ns - 1; s >= 0; s--) {
        if (++widx[s] < z->ksz[s]) break;
        widx[s] = 0;
      }
    }
    int64_t obase = b * z->rst[L->out_batch] + f * z->rst[L->out_feature];
    for (int s = 0; s < last; s++) obase += opos[s] * z->rst[L->out_spatial[s]];
    for (int64_t ow = 0; ow < OW; ow++) set_elem(t->r, obase + ow * olast, acc[ow]);
  }
}

/* The kernel's elements as doubles, [window position (reversed where the window says)][in feature
 * of the group][out feature] (the gemm's B for kin * kvol rows and kout columns). */
static double *kernel_matrix(const ConvSizes *z, const RtConvMap *c, const RtTensor *k) {
  const IrConvDims *L = c->dims;
  double *kd = fx_malloc(sizeof *kd * (size_t)(k->count ? k->count : 1));
  if (!kd) return NULL;
  int64_t idx[IR_MAX_RANK] = {0};
  for (int64_t e = 0; e < k->count; e++) {
    int64_t q = 0;
    for (int s = 0; s < z->ns; s++) {
      int64_t v = idx[L->k_spatial[s]];
      q = q * z->ksz[s] + (c->window->reversal[s] ? z->ksz[s] - 1 - v : v);
    }
    kd[(q * z->kin + idx[L->k_in]) * z->kout + idx[L->k_out]] = elem(k, e);
    for (int d = k->rank - 1; d >= 0; d--) {
      if (++idx[d] < k->dims[d]) break;
      idx[d] = 0;
    }
  }
  return kd;
}

/* im2col + gemm: for each group, the rows are output positions (batch-major), the columns window
 * position x input feature of the group. The rows are gathered (a chunk of at most 32 MB at a time,
 * blocks of rows in parallel), multiplied by the kernel matrix in one gemm that gemm_raw splits
 * over the threads, and the product stored into the output (the gemm writes the output itself
 * when it is [batch][positions][features] row-major). */
typedef struct {
  const ConvSizes *z;
  const RtConvMap *c;
  const RtTensor *in;
  bool dbl;       /* A in double (f64, bf16, f16) */
  char *A;        /* the chunk's rows, [rows][kvol * kin] */
  int64_t r0;     /* the chunk's first row */
  int64_t g;      /* the group */
} GatherTask;

static void gather_task(void *ctx, int64_t lo, int64_t hi, int tid) {
  (void)tid;
  const GatherTask *t = ctx;
  const ConvSizes *z = t->z;
  const IrConvDims *L = t->c->dims;
  int64_t cols = z->kvol * z->kin, es = t->dbl ? 8 : 4, fst = z->ist[L->in_feature];
  for (int64_t row = t->r0 + lo; row < t->r0 + hi; row++) {
    int64_t b = row / z->osp, rest = row % z->osp, opos[IR_MAX_RANK], widx[IR_MAX_RANK] = {0};
    for (int s = z->ns - 1; s >= 0; s--) {
      opos[s] = rest % z->osz[s];
      rest /= z->osz[s];
    }
    for (int64_t q = 0; q < z->kvol; q++) {
      int64_t src = window_source(z, t->c, opos, widx);
      int64_t base = b * z->ist[L->in_batch] + src + t->g * z->kin * fst;
      char *dst = t->A + ((row - t->r0) * cols + q * z->kin) * es;
      if (src < 0) memset(dst, 0, (size_t)(z->kin * es));
      else if (!t->dbl && fst == 1) memcpy(dst, (const float *)t->in->data + base, (size_t)(z->kin * 4));
      else if (!t->dbl)
        for (int64_t f = 0; f < z->kin; f++) ((float *)dst)[f] = ((const float *)t->in->data)[base + f * fst];
      else
        for (int64_t f = 0; f < z->kin; f++) ((double *)dst)[f] = elem(t->in, base + f * fst);
      for (int s = z->ns - 1; s >= 0; s--) {
        if (++widx[s] < z->ksz[s]) break;
        widx[s] = 0;
      }
    }
  }
}

/* Stores rows [r0, r0 + nr) of group g's product C ([nr][opg]) into the output. */
static void store_rows(const ConvSizes *z, const RtConvMap *c, RtTensor *r, bool dbl, const char *C, int64_t r0, int64_t nr,
                       int64_t g) {
  const IrConvDims *L = c->dims;
  for (int64_t row = r0; row < r0 + nr; row++) {
    int64_t b = row / z->osp, rest = row % z->osp, obase = b * z->rst[L->out_batch];
    for (int s = z->ns - 1; s >= 0; s--) {
      obase += (rest % z->osz[s]) * z->rst[L->out_spatial[s]];
      rest /= z->osz[s];
    }
    for (int64_t o = 0; o < z->opg; o++) {
      double v = dbl ? ((const double *)C)[(row - r0) * z->opg + o] : ((const float *)C)[(row - r0) * z->opg + o];
      set_elem(r, obase + (g * z->opg + o) * z->rst[L->out_feature], v);
    }
  }
}

/* The im2col path: kmat is [kvol * kin][kout] of the gemm's type. */
static bool conv_im2col(CpuBackend *b, const ConvSizes *z, const RtConvMap *c, const RtTensor *in, RtTensor *r, bool dbl,
                        const void *kmat) {
  const IrConvDims *L = c->dims;
  int nt = cpu_threads(b);
  /* the gemm writes the output itself when it is [batch][positions][features] row-major */
  bool direct = (r->type == IR_F32 || r->type == IR_F64) && z->rst[L->out_feature] == 1 && z->rst[L->out_batch] == z->osp * z->kout;
  for (int s = 0; direct && s < z->ns; s++) {
    int64_t want = z->kout;
    for (int s2 = s + 1; s2 < z->ns; s2++) want *= z->osz[s2];
    direct = z->rst[L->out_spatial[s]] == want;
  }
  int64_t rows = z->nb * z->osp, cols = z->kvol * z->kin, es = dbl ? 8 : 4;
  int64_t chunk = (32 << 20) / (cols * es);
  if (chunk < 1) chunk = 1;
  if (chunk > rows) chunk = rows;
  char *A = cpu_scratch(b, CPU_SCRATCH_A, (size_t)(chunk * cols * es)), *C = direct ? NULL : cpu_scratch(b, CPU_SCRATCH_C, (size_t)(chunk * z->opg * es));
  bool ok = A && (direct || C);
  for (int64_t g = 0; ok && g < z->groups; g++)
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
      GatherTask t = {.z = z, .c = c, .in = in, .dbl = dbl, .A = A, .r0 = r0, .g = g};
      int64_t per = nr / (4 * nt) > 16 ? nr / (4 * nt) : 16;
      cpu_parallel(b, gather_task, &t, nr, per);
      CpuGemm gm = {.batch = 1, .m = nr, .n = z->opg, .k = cols};
      const char *B = (const char *)kmat + g * z->opg * es; /* the group's columns, rows kout apart */
      char *out = direct ? (char *)r->data + (r0 * z->kout + g * z->opg) * es : C;
      gemm_raw(b, &gm, dbl, A, B, z->kout, out, direct ? z->kout : z->opg);
      if (!direct) store_rows(z, c, r, dbl, C, r0, nr, g);
    }
  return ok;
}

bool cpu_conv(CpuBackend *b, const RtConvMap *c, const RtTensor *in, const RtTensor *k, RtTensor *r, FxError *err) {
  int64_t di[IR_MAX_RANK], dk[IR_MAX_RANK], dr[IR_MAX_RANK];
  memcpy(di, in->dims, sizeof di);
  memcpy(dk, k->dims, sizeof dk);
  memcpy(dr, r->dims, sizeof dr);
  IrShape si = {.type = in->type, .rank = in->rank, .dims = di}, sk = {.type = k->type, .rank = k->rank, .dims = dk},
          sr = {.type = r->type, .rank = r->rank, .dims = dr};
  ConvSizes z;
  if (!cpu_conv_ok(c, &si, &sk, &sr) || !conv_sizes(c, &si, &sk, &sr, &z))
    return fx_error_set(err, NULL, 0, 0, "this convolution is not one the CPU backend computes");
  if (r->count == 0) return true;
  const IrConvDims *L = c->dims;
  int nt = cpu_threads(b);
  bool dbl = r->type != IR_F32;
  /* the kernel is the gemm's B as it is when it is [window...][in][out] row-major, unreversed, and
     of the gemm's type: no copy */
  bool kcanon = k->type == IR_F32 || k->type == IR_F64;
  for (int s = 0; kcanon && s < z.ns; s++) kcanon = L->k_spatial[s] == s && !c->window->reversal[s];
  kcanon = kcanon && L->k_in == z.ns && L->k_out == z.ns + 1 && !depthwise(&z, c);
  double *kd = kcanon ? NULL : kernel_matrix(&z, c, k);
  if (!kcanon && !kd) return fx_error_set(err, NULL, 0, 0, "out of memory for a convolution's kernel");
  bool ok = true;
  if (depthwise(&z, c)) {
    /* per thread: accumulators and a converted line (features, or the last spatial dim's) */
    bool inner = features_inner(&z, c) || z.ns == 0;
    int64_t per = inner ? 2 * z.kout : z.osz[z.ns - 1] + z.isz[z.ns - 1];
    double *sp[CPU_MAX_THREADS];
    DepthTask t = {.z = &z, .c = c, .in = in, .k = k, .r = r, .kd = kd, .scratch = sp};
    for (int q = 0; ok && q < nt; q++) ok = (sp[q] = cpu_scratch(b, q, sizeof(double) * (size_t)(per ? per : 1))) != NULL;
    if (ok && inner) {
      int64_t units = z.nb * z.osp;
      cpu_parallel(b, depth_task, &t, units, units / (4 * nt) > 16 ? units / (4 * nt) : 16);
    } else if (ok) {
      int64_t units = z.nb * z.kout * (z.osp / z.osz[z.ns - 1]);
      cpu_parallel(b, depth_line_task, &t, units, units / (4 * nt) > 4 ? units / (4 * nt) : 4);
    }
  } else {
    cpu_blas_single_threaded();
    float *kf = NULL;
    if (!dbl && !kcanon) { /* sgemm's B: the kernel matrix in float */
      kf = fx_malloc(sizeof *kf * (size_t)(k->count ? k->count : 1));
      if (!kf) ok = false;
      for (int64_t e = 0; ok && e < k->count; e++) kf[e] = (float)kd[e];
    }
    const void *kmat = kcanon ? (const void *)k->data : dbl ? (const void *)kd : (const void *)kf;
    if (ok) ok = conv_im2col(b, &z, c, in, r, dbl, kmat);
    fx_free(kf);
  }
  fx_free(kd);
  return ok || fx_error_set(err, NULL, 0, 0, "out of memory for a convolution");
}

/* cuda_libs.h — the library kernels of the GPU backend: dot → cuBLAS, convolution → cuDNN (v9),
 * rng → cuRAND's Philox4_32_10 device generator, drawing the interpreter's stream.
 *
 * cuBLAS and cuDNN are loaded at run time (dlopen of libcublas.so / libcudnn.so.9), like the
 * driver, so fxplain starts where they are missing and says so only when a kernel needs them.
 * Every library status becomes an FxError with the library's own text ("cuBLAS: cublasCreate
 * failed: CUBLAS_STATUS_NOT_INITIALIZED: the library was not initialized").
 *
 * The mapping from an HLO instruction to the library call (which matrix is transposed, leading
 * dimensions, batch strides; cuDNN dims, strides, padding) is plain host code, tested without a
 * GPU by executing the call's documented semantics on the host (cuda_gemm_reference). */
#ifndef FXPLAIN_CUDA_LIBS_H
#define FXPLAIN_CUDA_LIBS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../compiler/ir/ir.h"
#include "cuda_driver.h"

/* ---------- dot → cuBLAS gemm ----------
 * A row-major dot out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n] is computed as the
 * column-major gemm out^T = rhs^T · lhs^T, so cuBLAS's first operand is rhs and its second lhs. */
typedef struct {
  IrType type;          /* F32 or F64 */
  int64_t batch;        /* 1 when unbatched */
  int64_t m, n, k;      /* of the row-major product (out is m x n) */
  bool trans_first;     /* cuBLAS transa, applied to rhs */
  bool trans_second;    /* cuBLAS transb, applied to lhs */
  int64_t ld_first, ld_second, ld_out;
  int64_t stride_first, stride_second, stride_out; /* elements between batch items */
} CudaGemm;

/* Maps a dot (its operand shapes, as dense row-major runtime tensors, and its dimension numbers)
 * to one strided batched gemm. Supported: batch dimensions leading (in order) in both operands and the output,
 * one contracting dimension, at most one free dimension per operand. Returns false with err
 * naming what does not fit. */
bool cuda_gemm_from_dot(const IrShape *lhs, const IrShape *rhs, const IrShape *out, const IrDotDims *dd,
                        CudaGemm *g, FxError *err);
bool cuda_gemm_from_instr(const IrInstr *dot, CudaGemm *g, FxError *err);
/* Executes exactly the cuBLAS call cuda_blas_gemm makes (column-major sgemm semantics) on the
 * host, for tests that prove the mapping without a GPU. */
void cuda_gemm_reference(const CudaGemm *g, const float *lhs, const float *rhs, float *out);
/* Runs the gemm with cuBLAS on device buffers (a context must be current). */
bool cuda_blas_gemm(const CudaGemm *g, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr out, FxError *err);

/* ---------- convolution → cuDNN ---------- */
#define CUDA_CONV_MAX_SPATIAL 3
typedef struct {
  IrType type;
  int nspatial;
  int groups;
  /* cuDNN order [N, C, spatial...] with element strides into the HLO buffers. */
  int in_dims[CUDA_CONV_MAX_SPATIAL + 2], in_strides[CUDA_CONV_MAX_SPATIAL + 2];
  int out_dims[CUDA_CONV_MAX_SPATIAL + 2], out_strides[CUDA_CONV_MAX_SPATIAL + 2];
  /* Filter [K, C/groups, spatial...]; cuDNN needs it packed as KCRS (NCHW) or KRSC (NHWC). When
   * the HLO layout is neither, filter_perm gives, for each KCRS position, the HLO dimension, and
   * the backend permutes the filter into a KCRS scratch buffer first. */
  int filter_dims[CUDA_CONV_MAX_SPATIAL + 2];
  int filter_format; /* 0 = NCHW (KCRS), 1 = NHWC (KRSC) */
  bool filter_needs_permute;
  int filter_perm[CUDA_CONV_MAX_SPATIAL + 2];
  int filter_hlo_strides[CUDA_CONV_MAX_SPATIAL + 2]; /* HLO element strides in KCRS order */
  int pad[CUDA_CONV_MAX_SPATIAL], stride[CUDA_CONV_MAX_SPATIAL], dilation[CUDA_CONV_MAX_SPATIAL];
} CudaConv;

/* Reads dim_labels, window and feature_group_count of a convolution. Returns false with err when
 * cuDNN cannot express it (asymmetric padding, lhs dilation, window reversal, batch groups). */
bool cuda_conv_from_instr(const IrInstr *conv, CudaConv *c, FxError *err);
/* Runs it with cuDNN (the filter already in the layout filter_format says). */
bool cuda_dnn_conv(const CudaConv *c, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, FxError *err);
/* The kernel that permutes a filter into KCRS ("fx_permute"): parameters
 * (const T *in, T *out, long long n, CudaPermute p), p passed by value. */
typedef struct {
  int rank;
  long long dims[CUDA_CONV_MAX_SPATIAL + 2];       /* of the output, in order */
  long long in_strides[CUDA_CONV_MAX_SPATIAL + 2]; /* element stride in the input of each */
} CudaPermute;
const char *cuda_permute_source(IrType t);
void cuda_conv_filter_permute(const CudaConv *c, CudaPermute *p);

/* ---------- rng → cuRAND ---------- */
/* CUDA C of the kernel "fx_rng" for an rng of element type t: cuRAND's device API with the
 * Philox4_32_10 generator, laid out as rng_stream.h describes (thread g: curand_init(key, g,
 * 4 * draw), then curand_uniform4 / curand_normal4 for f32, curand_uniform2_double /
 * curand_normal2_double for f64, curand4 for integers), so the GPU draws the interpreter's
 * numbers: uniform values bit for bit, normal ones to within the device's __sincosf/logf.
 * Parameters: (T *out, long long n, unsigned long long key, unsigned long long draw, B a, B b)
 * with B double for floats and long long for integers; launch cuda_rng_threads(t, n) threads.
 * The thread body fx_rng_thread is FX_RNG_QUALIFIERS (default static __device__), so a host
 * test can compile the same text for the CPU. dist is "rng_uniform" or "rng_normal". NULL for
 * element types the kernel does not produce (f16, bf16, pred, complex). */
const char *cuda_rng_source(IrType t, const char *dist);
/* Elements per thread of that kernel (4 for f32, 2 for f64 and integers). */
int cuda_rng_per_thread(IrType t);

/* Loads the library and creates its handle on first use; false with the reason. */
bool cuda_blas_ready(FxError *err);
bool cuda_dnn_ready(FxError *err);
/* Releases the handles (before the context goes). */
void cuda_libs_shutdown(void);

/* Library status → FxError with the library's own name and text. Return false. */
bool cuda_blas_failed(int status, const char *what, FxError *err);
bool cuda_dnn_failed(int status, const char *what, FxError *err);

#endif

/* cuda_kernels.h — a stage's kernels as CUDA C: the emitter's bodies in __global__ wrappers, one
 * translation unit per stage, compiled with NVRTC, with what ptxas reports for every kernel.
 *
 * Every kernel the plan launches is classified: generated (the shared emitter's body wrapped by
 * cuda_emit_wrapper), cuBLAS (dot), cuDNN (convolution), rng (cuRAND's Philox4_32_10 device API), or
 * host (an op the emitter does not generate; the GPU backend runs the interpreter's
 * implementation for it and says so). Used by the GPU backend (cuda_exec.c), by `kernels --source`
 * and `kernels --resources` (cuda_report.c), by the NVRTC tests over every script and corpus
 * module, and by the `registers` fusion rule's hook (cuda_registers_hook). */
#ifndef FXPLAIN_CUDA_KERNELS_H
#define FXPLAIN_CUDA_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../compiler/plan/plan.h"
#include "../../compiler/ir/ir.h"
#include "cuda_nvrtc.h"
#include "../emit.h"

typedef enum {
  CUDA_K_GENERATED, /* emitter body in a __global__ wrapper */
  CUDA_K_CUBLAS,
  CUDA_K_CUDNN,
  CUDA_K_RNG,
  CUDA_K_HOST,      /* not generated: runs on the host's implementation */
} CudaKernelHow;

const char *cuda_kernel_how_name(CudaKernelHow h); /* "generated", "cuBLAS", "cuDNN", "rng", "host" */

typedef struct {
  const IrInstr *instr;
  CudaKernelHow how;
  char sym[32];                          /* fx_<hash of its text>; parts are SYM_p0, SYM_p1, ... */
  int nparts;
  int64_t count[EMIT_MAX_PARTS];         /* threads each part launches (its elements) */
  int ninputs, noutputs;
  int part_outputs[EMIT_MAX_PARTS][EMIT_MAX_BUFFERS];
  int part_noutputs[EMIT_MAX_PARTS];
  CudaResources res[EMIT_MAX_PARTS];     /* after cuda_unit_compile */
  char why[200];                         /* for CUDA_K_HOST: why it is not generated */
} CudaKernelInfo;

typedef struct {
  CudaKernelInfo *k;
  int n, cap;
  EmitBuf source;   /* the translation unit of every generated kernel */
  int ngenerated;   /* distinct generated kernels in the unit */
} CudaUnit;

/* The CUDA wrapper of part p of k: extern "C" __global__ NAME_pP(inputs..., the part's outputs...,
 * long long n), a grid-stride loop over the part's n elements, each thread decoding its linear
 * index into i0..i{rank-1} and running the body. */
bool cuda_emit_wrapper(EmitBuf *b, const EmitKernel *k, int part, FxError *err);

/* Classifies and generates every kernel of the modules' entries and the computations their
 * control flow calls. */
bool cuda_unit_build(CudaUnit *u, const IrModule *const *mods, int nmods, FxError *err);
/* Compiles the unit with NVRTC for arch (NULL: the default) and fills every generated kernel's
 * resources. out receives the cubin (free with cuda_cubin_free); NULL when not needed. */
bool cuda_unit_compile(CudaUnit *u, const char *arch, CudaCubin *out, FxError *err);
void cuda_unit_free(CudaUnit *u);
const CudaKernelInfo *cuda_unit_find(const CudaUnit *u, const IrInstr *i);
/* Registers and spills of the worst part of a generated kernel. */
void cuda_kernel_worst(const CudaKernelInfo *k, int *registers, int *spill_bytes);

/* The `registers` fusion rule's hook (compiler/fusion/fusion_rules.h): generates the candidate fused
 * body's kernel, compiles it for the profile's architecture (ctx: a DeviceProfile *, may be NULL)
 * and returns its registers per thread and spilled bytes. False when it cannot be generated or
 * compiled. */
bool cuda_registers_hook(void *ctx, const IrComputation *fused_body, int *registers, int *spill_bytes);
/* Installs or removes the hook (ctx is kept, not copied). */
void cuda_registers_install(bool on, const DeviceProfile *ctx);

#endif

/* fusion_analysis.h — the questions XLA's GPU fusion passes ask before fusing (fusibility, the
 * emitter and hero of a fusion) and XLA's GpuPerformanceModel estimate of a kernel's time, for
 * priority-fusion and today's multi_output_fusion. */
#ifndef FXPLAIN_FUSION_ANALYSIS_H
#define FXPLAIN_FUSION_ANALYSIS_H

#include "fusion_rules.h"

/* The root of a fusion's body, or the instruction itself. */
const IrInstr *fusion_fused_root(const IrInstr *i);
/* A Triton fusion built by an earlier pass (`__triton`, not a Triton GEMM): IsGenericTritonFusion. */
bool fusion_is_generic_triton(const IrInstr *i);
/* priority_fusion.cc's IsFusible: elementwise, or an op the loop/reduction/scatter/concatenate
 * emitters take; dot and convolution only when the user made them fusible with `set library`. */
bool fusion_xla_fusible(const IrInstr *i, const PassSettings *s);
/* IsIntermediate with one operand: what FindNonTrivialHero walks through. */
bool fusion_intermediate(const IrInstr *x);
/* Whether consumer c with producer p inlined (p may be NULL: c alone) is a reduction fusion. */
bool fusion_reduction_emitter(const IrInstr *c, const IrInstr *p);
/* Whether p reads x directly. */
bool fusion_reads(const IrInstr *p, const IrInstr *x);

/* FindNonTrivialHero of a root, within its computation. */
const IrInstr *fusion_hero(const IrInstr *root);
/* A reduce XLA emits with the reduction emitter (from or to contiguous dimensions). */
bool fusion_contiguous_reduce(const IrInstr *x);
/* A transpose XLA emits with the tiled transpose emitter (GetDescriptionForTiledTransposeEmitter). */
bool fusion_tiled_transpose(const IrInstr *x);

typedef enum {
  FUSION_EMITTER_LOOP,
  FUSION_EMITTER_REDUCTION,
  FUSION_EMITTER_TRANSPOSE,
  FUSION_EMITTER_CONCATENATE,
  FUSION_EMITTER_SCATTER,
  FUSION_EMITTER_CUSTOM,
} FusionEmitter;
/* HloFusionAnalysis::GetEmitterFusionKind for an instruction or fusion. */
FusionEmitter fusion_emitter_kind(const IrInstr *i);

/* ---------- XLA's GpuPerformanceModel ---------- */

#define PERF_LAUNCH_US 1.0 /* kKernelLaunchOverhead */
/* EstimateRunTimeForInstruction: one kernel's time without its launch, in microseconds. */
double perf_exec_us(const DeviceProfile *d, const IrInstr *i);
/* EstimateRunTimeForFusion: consumer c with producer p inlined. */
double perf_fused_exec_us(const DeviceProfile *d, const IrInstr *p, const IrInstr *c);

#endif

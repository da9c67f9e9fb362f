/* gpu_fusible.h — today's gpu_fusible.cc predicates (gpu_fusible.c): what XLA's GPU fusion passes
 * of the priority pipeline ask about layouts, heroes and multi-output fusion. The classic passes
 * ask the 2021 versions in fusion_rules.h. */
#ifndef FXPLAIN_GPU_FUSIBLE_H
#define FXPLAIN_GPU_FUSIBLE_H

#include "fusion_rules.h"

/* IsPhysicallyTransposing: i (or an op of its fused body) is a copy, or a transpose that moves
 * elements in memory (not ShapeUtil::TransposeIsBitcast under the shapes' layouts). */
bool fusion_physically_transposing(const IrInstr *i);
/* TransposesMinorDimension: a copy or transpose (in i or its body) changes which dimension of
 * size > 1 is the most minor in memory. */
bool fusion_transposes_minor_dimension(const IrInstr *i);
/* FusionHeroesAreCompatible: two heroes one multi-output kernel can emit together (reductions of
 * one shape, equivalent tiled transposes, no nested transpose beside an unnested hero, no
 * transpose beside a reduction, a tiled transpose read by its consumer only through ops that move
 * no element). Fills v when not. */
bool fusion_heroes_compatible(const IrInstr *hero1, const IrInstr *hero2, FusionVerdict *v);
/* ShapesCompatibleForMultiOutputFusion: the two kernels' real heroes are compatible and iterate
 * over the same loop (a reduction's or tiled transpose's input, anything else by its output;
 * dimensions and layout, or a bitcast of one another). */
bool fusion_mof_shapes_compatible(const IrInstr *a, const IrInstr *b, FusionVerdict *v);
/* IsFusibleAsMultiOutputFusionRoot: a reduction or tiled-transpose input fusion (or such an op),
 * a loop fusion or an elementwise op; not a custom fusion. */
bool fusion_mof_root(const IrInstr *i, const PassSettings *s);
/* IsNestableVariadicReduction: a variadic reduce the reduction emitter does not take, or a loop
 * fusion rooted at one. */
bool fusion_nestable_variadic_reduction(const IrInstr *i);
/* IsProducerMultiOutputFusible: not a multi-output fusion, no in-place op, loop-fusible as a
 * producer (a bitcast only when it keeps the bit width), not physically transposing. */
bool fusion_producer_mof_fusible(const IrInstr *producer, const PassSettings *s, FusionVerdict *v);
/* IsInputFusible: a fusible reduction, scatter or tiled transpose (or an input fusion of one). */
bool fusion_input_fusible(const IrInstr *i, const PassSettings *s);
/* ChooseFusionKind: "kInput" when the consumer or the producer is input-fusible, else "kLoop". */
const char *fusion_choose_kind(const IrInstr *producer, const IrInstr *consumer, const PassSettings *s);
/* hlo_instruction_utils::KeepsBitwidth: every operand's element type has as many bits as i's. */
bool fusion_keeps_bitwidth(const IrInstr *i);
/* GetFusionRoots: a computation's outputs, through its root tuple and get-tuple-elements of
 * tuples (a get-tuple-element of anything else stands for that op); duplicates kept. Returns the
 * count (at most max). */
int fusion_roots(const IrComputation *c, const IrInstr **out, int max);
/* IsConsumerTheOnlyNonRootUser: every user of i (through get-tuple-elements and bitcasts) is the
 * consumer or its computation's root. */
bool fusion_consumer_only_non_root_user(const IrInstr *i, const IrInstr *consumer);
/* GetFusibleComputations: the computations fusion passes work in, callees first: not fused
 * computations, and not those an op other than a while, a conditional, a fusion or a
 * stream-annotated call (frontend attribute _xla_stream_annotation) calls (reducers, comparators,
 * plain calls). Returns the count (at most max). */
int fusion_fusible_computations(const IrModule *m, IrComputation **out, int max);
/* MayCausePerformanceDropIfUnrolled: the loop emitter does not unroll a fusion holding a sort, a
 * dot, a concatenate of more than 10 operands, a variadic reduce or a reduce-window whose window
 * holds more than 8 elements. */
bool fusion_may_cause_perf_drop_if_unrolled(const IrInstr *i);
/* GetDescriptionForTiledTransposeEmitter's shared memory: the bytes the tiled (or packed)
 * transpose emitter takes for the transpose t, or 0 when it does not take t. Today's rule reads the
 * transpose as written (XLA's TransposeDimensionGrouper has normalized it before fusion): a packed
 * transpose (CanEmitPackedTranspose) 32 x 4 x 32 x vector bytes; the minor dimension changing, with
 * both minor dimensions >= 16 (or >= 8 and 8,192 elements), a 32 x 33 tile; the minor dimension
 * staying, at most 8 bytes wide, a 32 x 33 tile of it. */
int64_t fusion_transpose_shmem(const IrInstr *t);
/* FusionInfoCache::GetSharedMemoryUsage (SharedMemoryUsageNoCache): over a fusion's body, a
 * reduction from or to contiguous dimensions takes 32 elements of each input (a row) or 32 x 129
 * (a column), a tiled transpose its tile. */
int64_t fusion_shared_memory(const IrInstr *i);
/* NumUnnestedReductions: the reductions from or to contiguous dimensions in i's body (XLA caps a
 * multi-output fusion at 8, kMaxUnnestedReductionOutputsPerFusion). */
int fusion_unnested_reductions(const IrInstr *i);
/* ComputeLoopFusionConfig's unroll factor for the loop kernel i (with p fused in, when given)
 * over `elements` on device d: gcd(elements, MaxUnrollFactor) when the kernel has at least as
 * many elements as the GPU has threads and nothing that MayCausePerformanceDropIfUnrolled, else
 * 1; at least the elements of a byte of the narrowest output. cuda_version (12090 for CUDA 12.9,
 * 0 unknown) matters only on Blackwell. */
int fusion_loop_unroll(const DeviceProfile *d, int cuda_version, const IrInstr *i, const IrInstr *p, int64_t elements);

#endif

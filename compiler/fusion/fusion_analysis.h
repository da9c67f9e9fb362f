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
/* A map over every dimension in order: elementwise for XLA (HloMapInstruction::IsElementwiseImpl). */
bool fusion_map_is_elementwise(const IrInstr *i);
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
/* ShapeUtil::GetNormalizedLogicalTransposeShape of the transpose x (what XLA's
 * TransposeDimensionGrouper leaves): unit dimensions dropped, dimensions that stay together
 * merged. Fills the output extents and the permutation; returns their count (0: no transpose). */
int fusion_normalized_transpose(const IrInstr *x, int64_t *dims, int *perm);

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

/* ---------- IR size (GpuHloCostAnalysis) ---------- */

/* IrSize of an instruction or fusion: how many instructions the emitter writes out (an
 * instruction feeding several non-elementwise users is emitted once for each). With param_of,
 * also the IrSize of the fused parameter through which i reads param_of: how often that
 * producer's code would be emitted if fused. Returns false on allocation failure. */
bool fusion_ir_size(const IrInstr *i, double *size, const IrInstr *param_of, double *param_size);
/* ProducerConsumerMergedTooLarge as the XLA fxplain follows (jaxlib 0.10.2) has it: the producer's
 * code once per emission of the consumer's parameter, plus the consumer's, over 10000
 * instructions (kMaxIRSize). Later XLA versions also limit basic-block splits; this one does not
 * (its log prints only "IR sizes: producer, consumer -> merged"). Fills the merged size. */
bool fusion_merged_too_large(const IrInstr *p, const IrInstr *c, double *merged);

/* ---------- XLA's GpuPerformanceModel ---------- */

#define PERF_LAUNCH_US 1.0 /* kKernelLaunchOverhead */
/* ---------- GpuHloCostAnalysis (fusion_cost.c) ---------- */

/* What XLA's cost analysis counts for one instruction: flops, the bytes and share of each operand
 * slot it reads, the bytes it writes; for a fusion also, per body instruction (indexed like
 * body->instrs), how much of it is used, how often it is emitted and which elementwise-use roots
 * it feeds. */
typedef struct {
  const IrInstr *instr;
  double flops, out_bytes;
  int n;
  double *op_bytes, *op_util; /* per operand slot */
  const IrComputation *body;  /* fusions only */
  double *util, *times, *root_util, *root_ir;
  int **roots, *nroots, *caps;
  int *param_index; /* body index of each parameter */
  int root_index;   /* body index of the root, -1 when none */
  int nbody;        /* body->ninstrs when analysed (the length of the per-body arrays) */
  bool reads_nothing; /* no operand slot reads a byte (a tuple's): non-fusions only */
} HloCost;
/* Fills c for i on device d (its op profile; NULL: H100's); false on allocation failure (c is
 * then safe to free). */
bool hlo_cost_analyze(const DeviceProfile *d, const IrInstr *i, HloCost *c);
void hlo_cost_free(HloCost *c);
/* flop_count of one non-fusion instruction. */
double hlo_cost_instr_flops(const DeviceProfile *d, const IrInstr *x);
/* The first operand slot of i that is op, or -1. */
int hlo_cost_operand_index(const IrInstr *i, const IrInstr *op);
/* CommonElementwiseUtilization of two instructions of c's fused body. */
double hlo_cost_common_elementwise(const HloCost *c, const IrInstr *a, const IrInstr *b);

/* EstimateRunTimeData: what the cost model finds for one kernel (times in microseconds). */
typedef struct {
  double flops, bytes_read, bytes_written;
  int64_t blocks;
  double read_us, write_us, compute_us, exec_us;
} PerfEstimate;
void perf_estimate(const DeviceProfile *d, const IrInstr *i, PerfEstimate *e);
/* EstimateRunTimeForInstruction: one kernel's time without its launch, in microseconds. */
double perf_exec_us(const DeviceProfile *d, const IrInstr *i);
/* EstimateRunTimeForFusion: consumer c with producer p inlined. */
double perf_fused_exec_us(const DeviceProfile *d, const IrInstr *p, const IrInstr *c);

/* GpuPerformanceModelCache: while open (calls nest), the cost analysis of every instruction and
 * the estimate of every fusion asked about are kept, by instruction id, until perf_cache_forget
 * or the last close. Whoever opens it must forget each instruction whose body, kind or operands
 * it changes, and each user of an instruction it changes, before asking again; per thread. A
 * user that is no fusion keeps only its cost analysis, which reads nothing of its operands but
 * their shapes: it may stay when an operand is replaced by one of the same shape. */
/* While open (calls nest), the heroes of each producer-consumer pair asked about are kept (the
 * last 32 pairs). Only for a caller that changes no instruction until it closes it. */
void fusion_memo_open(void);
void fusion_memo_close(void);
void perf_cache_open(void);
void perf_cache_close(void);
void perf_cache_forget(const IrInstr *i);
/* Facts about a fusion's body that the checks ask of both sides of every candidate pair: its
 * shared memory and unnested reductions (what XLA's FusionInfoCache keeps per fusion), whether
 * unrolling may slow it (asked by every launch estimate), and its emitter (fusion_emitter_kind).
 * Kept with the fusion's entry in the same cache, forgotten with it, checked under
 * FXPLAIN_PERF_CACHE_CHECK. perf_cache_fact returns the kept value of fusion i, else compute(i),
 * kept while the cache is open. */
typedef enum { PERF_FACT_SHARED_MEMORY, PERF_FACT_UNNESTED_REDUCTIONS, PERF_FACT_PERF_DROP_IF_UNROLLED,
              PERF_FACT_PERF_DROP_IN_BODY, PERF_FACT_EMITTER, PERF_NFACTS } PerfFact;
int64_t perf_cache_fact(const IrInstr *i, PerfFact f, int64_t (*compute)(const IrInstr *));

/* ---------- priority-fusion's judgement, for replaying XLA's decision log ---------- */

typedef struct {
  bool eligible;           /* every non-bitcast user can take the producer (CanFuseWithAllNonBitcastUsers) */
  double us_fused, us_unfused; /* EstimateRunTimesForPriorityFusion over all users */
  int users;
  const char *reason;      /* the first refusing user's reason code, or NULL */
  char detail[480];
} PriorityJudgement;
/* What priority-fusion thinks of producer p right now (pass_priority_fusion.c). Returns false on
 * allocation failure. */
bool priority_fusion_judge(const PassContext *cx, IrInstr *p, PriorityJudgement *out);
/* The priority of a producer with these times: time unfused - time fused in whole quarter
 * nanoseconds, as XLA's absl::Duration keeps it (equal times give exactly equal priorities). */
double priority_fusion_priority(double us_unfused, double us_fused);

/* ---------- Triton tiling (SymbolicTileAnalysis, TritonEmitterConstraints) ---------- */

/* What fusion_triton_tiling found: how many of the root's tilings it tried, the best valid one
 * and its tiled estimate, or else the first tile over the register limit (max_elems elements,
 * padded to powers of 2). */
typedef struct {
  long tilings;
  int rank;
  int64_t valid[IR_MAX_RANK];
  PerfEstimate best;
  const IrInstr *too_big;
  int64_t too_big_elems, max_elems;
  const IrInstr *untileable; /* a reshape whose symbolic tile XLA fails to compute */
  int warps;                 /* the best tiling's num_warps (GetNumWarps) */
} TritonTiling;
/* Whether the Triton fusion made by fusing p into c (c NULL: p alone) has a valid tiling, as
 * TryFindTopKBestTilingsForFusion decides: 1 yes (best: the fastest tiling's estimate), 0 no
 * ("No valid tilings found"), -1 when it holds an op whose tiling fxplain does not model. With
 * `only`, that tiling of the root alone. */
int fusion_triton_tiling(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, const int64_t *only,
                         TritonTiling *out);
/* Whether the fusion can be tiled, as CanFuseTriton asks: the same verdict as fusion_triton_tiling
 * (0 with the same account of why), but it stops at the first valid tiling, so `best` is then
 * that tiling's and not the fastest's. */
int fusion_triton_can_tile(const DeviceProfile *d, const IrInstr *p, const IrInstr *c, TritonTiling *out);
/* The backend config XLA gives a Triton fusion with the best tiling tt (GetTritonGpuBackendConfig:
 * kind __triton and block_level_fusion_config with the root's tile sizes and num_warps), into
 * buf. A Triton fusion made or grown by a pass carries it, and its estimate as one kernel uses
 * that tiling (EstimateRunTimeForTriton). */
void fusion_triton_config_text(const TritonTiling *tt, char *buf, size_t n);

#endif

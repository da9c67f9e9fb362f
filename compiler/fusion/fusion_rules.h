/* fusion_rules.h — the rules every fusion pass asks: may this producer go into this consumer?
 *
 * Sits between the IR and the fusion passes (instruction-fusion, fusion-merger,
 * multi_output_fusion, horizontal-loop-fusion, priority-fusion). Each check answers with a
 * FusionVerdict: accepted, or refused with a reason code from the vocabulary (reasons.def), one
 * sentence with the numbers behind it, a suggestion where the user can change something, and the
 * metrics (users, limit, bytes, ...) the decision log keeps. The passes turn verdicts into
 * PassDecision records with fusion_verdict_emit().
 *
 * The rules follow XLA's GPU fusion rules as of October 2021 (the paper's XLA), with the numbers
 * that matter exposed as settings: the duplication limit for concatenate-like producers, the
 * operand budget, the expensive-op table, and whether dot / convolution / rng are library calls. */
#ifndef FXPLAIN_FUSION_RULES_H
#define FXPLAIN_FUSION_RULES_H

#include "../passes/passes.h"

/* ---------- the reason vocabulary (stable: add, never rename) ---------- */

/* FR_NOT_FUSIBLE, FR_CUSTOM_CALL, ...: the code strings passes report (reasons.def). */
#define REASON(NAME, code, meaning, suggestion, passes) extern const char FR_##NAME[];
#include "reasons.def"
#undef REASON

/* The codes' numbers, in the order of reasons.def; FUSION_REASON_COUNT of them. */
typedef enum {
#define REASON(NAME, code, meaning, suggestion, passes) FUSION_REASON_##NAME,
#include "reasons.def"
#undef REASON
  FUSION_REASON_COUNT
} FusionReasonId;

/* One code of the vocabulary: what it means, what the user could change (NULL: nothing), and the
 * passes that report it (names separated by spaces). */
typedef struct {
  const char *code, *meaning, *suggestion, *passes;
} FusionReason;
extern const FusionReason fusion_reasons[FUSION_REASON_COUNT];
/* Every code, in the order of reasons.def; NULL-terminated. */
extern const char *const fusion_reason_codes[FUSION_REASON_COUNT + 1];

/* ---------- XLA's numbers ---------- */

#define FUSION_MAX_DUPLICATION 15        /* kAllowedCodeDuplication: emitted copies of a producer */
#define FUSION_MAX_UNNESTED_REDUCTIONS 8 /* reductions that are fusion roots */
#define FUSION_MAX_IR_SIZE 10000         /* instructions in one fused body */
#define FUSION_MAX_INPUTS_PER_OUTPUT 10  /* reduce / reduce-window repeated per consumer element */
#define FUSION_REDUCE_MIN_ELEMENTS 16    /* a reduce counts as a loop from this many inputs per output */
#define FUSION_MERGE_BYTES_RATIO 1.10    /* fusion-merger: merged / current bytes transferred */
#define FUSION_MAX_REGISTERS 255         /* per thread, ptxas' ceiling */

/* ---------- verdicts ---------- */

typedef struct {
  bool ok;
  const char *reason;    /* a code above; NULL when ok */
  char detail[480];      /* one sentence with the numbers */
  char suggestion[200];  /* "" when there is none */
  int nmetrics;
  PassMetric metrics[8];
} FusionVerdict;

void fusion_verdict_ok(FusionVerdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fills a refusal; returns false so checks can `return fusion_refuse(...)`. */
bool fusion_refuse(FusionVerdict *v, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void fusion_suggest(FusionVerdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fusion_verdict_metric(FusionVerdict *v, const char *key, double value);

/* Emits one decision for a verdict: pass, action, producer, consumer and result come from the
 * arguments, the verdict gives accepted / reason / detail / suggestion / metrics. */
void fusion_verdict_emit(PassContext *cx, const char *action, const char *producer, const char *consumer,
                         const char *result, const FusionVerdict *v);

/* ---------- the register hook ---------- */

/* Real register figures come from ptxas, which lives in the runtime: the shell installs this hook
 * and the rules call it with the candidate fused body (a fused computation in a scratch copy of
 * the module, freed after the call). It returns false when it could not compile the candidate.
 * With no hook installed the registers rule is not evaluated, and fusion_registers_note() says so
 * for detail output. */
typedef bool (*FusionRegisterFn)(void *ctx, const IrComputation *fused_body, int *registers, int *spill_bytes);
void fusion_set_register_hook(FusionRegisterFn fn, void *ctx);
bool fusion_register_hook_installed(void);
const char *fusion_registers_note(void);

/* ---------- op properties ---------- */

/* True when the op runs as an opaque library kernel on this device with these settings: dot
 * (cuBLAS), convolution (cuDNN), rng (cuRAND) unless switched off, custom-call and the other
 * library ops always. On the host profile dot/convolution are BLAS calls too. */
bool fusion_is_library_call(const IrInstr *i, const PassSettings *s);
/* A short name of the library a call goes to: "cuBLAS", "cuDNN", "cuRAND", "the custom call
 * target cu_threefry2x32", ... */
const char *fusion_library_name(const IrInstr *i, char *buf, size_t n);
/* XLA's GPU expensive-op rule (2021): the opcode table, refined per element type (divide, rsqrt,
 * exp cheap for f32/f16; integer divide/remainder by a constant cheap), then the user's overrides
 * from `set expensive`. A fusion is expensive when its body holds an expensive op. */
bool fusion_is_expensive(const IrInstr *i, const PassSettings *s);
/* The first expensive op inside i (i itself when not a fusion), or NULL. */
const IrInstr *fusion_expensive_member(const IrInstr *i, const PassSettings *s);
/* Ops that never fuse as a producer or consumer (parameter, tuple, while, ...). */
bool fusion_op_never_fuses(IrOpcode op);
/* XLA's IsLoopFusible / IsInputFusible. */
bool fusion_is_loop_fusible(const IrInstr *i, const PassSettings *s);
bool fusion_is_input_fusible(const IrInstr *i);
/* A reduce whose reduced or kept dimensions are contiguous in the layout (a row or column
 * reduction, emitted as an input fusion). */
bool fusion_is_contiguous_reduction(const IrInstr *reduce);
/* XLA's IsInputFusibleReduction (2021): a reduce from or to contiguous dimensions, or an input
 * fusion with one among its roots. */
bool fusion_is_input_fusible_reduction(const IrInstr *i);
/* XLA's LayoutsAreReduceInputFusionFriendly (2021): false when the producer is a copy or a fusion
 * holding one (after layout assignment a copy only ever transposes, and a reduction reading its
 * result would read out of order). */
bool fusion_layouts_reduce_friendly(const IrInstr *producer);
/* XLA's ReusesOperandElements (2021, HloInstruction::OperandElementUse): whether `consumer` counts
 * as reusing the elements of operand `k` (every op that is not elementwise or data movement does,
 * a broadcast whatever its sizes); *times says roughly how often it reads each (1 when the reuse
 * is XLA's classification, not repeated reads). */
bool fusion_reuses_operand(const IrInstr *consumer, int k, double *times);
/* What a fused instruction's operand x is outside the fusion owner (a parameter is owner's
 * operand; anything else is itself). */
const IrInstr *fusion_outer_operand(const IrInstr *owner, const IrInstr *x);
/* The first value of the constant x as an integer; false when x is no constant. */
bool fusion_constant_int(const IrInstr *x, int64_t *v);
/* Searches, inside c's fused computation fc, what p's value reaches: from each parameter that is
 * p, its uses depth first (each instruction once), the first x for which hit(x, that parameter,
 * ctx) holds.
 * NULL when none. */
const IrInstr *fusion_find_in_uses(const IrInstr *c, const IrComputation *fc, const IrInstr *p,
                                   bool (*hit)(const IrInstr *x, const IrInstr *param, const void *ctx),
                                   const void *ctx);
/* ShouldFuseInPlaceOp's index check: whether the slice or dynamic-slice pne in producer p reads
 * buf at exactly the indices the dynamic-update-slice dus in consumer c writes (the same constant
 * starts, or the same start instructions). Refuses in v (FR_IN_PLACE) when not; true for any
 * other op. */
bool fusion_slice_matches_dus(const IrInstr *p, const IrInstr *pne, const IrInstr *buf, const IrInstr *c,
                              const IrInstr *dus, FusionVerdict *v);
/* ShapeUtil::SubshapeCount: an array is one buffer; a tuple is itself plus each element's. */
int fusion_subshape_count(const IrShape *sh);
/* XLA's FusionPriority (multi_output_fusion.cc, both eras): 2 for a multi-output fusion, 1 for
 * another fusion, 0 for a plain op. */
int fusion_mof_priority(const IrInstr *i);
/* Sorts v stably by fusion_mof_priority, highest first (the order sibling candidates are tried). */
void fusion_sort_by_mof_priority(IrInstr **v, int n);
/* Real users: users other than get-tuple-element chains count once each. */
int fusion_user_count(const IrInstr *i);
/* Instructions in the fused body (1 for a plain instruction). */
int fusion_body_size(const IrInstr *i);
/* Estimated emitted copies of `producer` if fused into `consumer` (XLA's fusion node indexing
 * evaluation: every distinct index computation emits the producer again). */
int fusion_emitted_copies(const IrInstr *producer, const IrInstr *consumer);

/* ---------- the checks ---------- */

/* The kind checks on each side (not_fusible, custom_call, reduce_epilogue, root). */
bool fusion_check_producer(const IrInstr *producer, const PassContext *cx, FusionVerdict *v);
bool fusion_check_consumer(const IrInstr *consumer, const PassContext *cx, FusionVerdict *v);
/* Which pass asks, and so which duplication rules apply. */
typedef enum {
  FUSION_MODE_NO_DUPLICATION, /* instruction-fusion: producers with one user only */
  FUSION_MODE_DUPLICATION,    /* instruction-fusion with duplication of cheap producers */
  FUSION_MODE_PRIORITY,       /* priority-fusion: the cost model decides duplication */
} FusionMode;

/* XLA's CreatesNestedLoop (2021): the producer (or its fused body) holds an op that reads elements
 * several times (a reduce emitted as a loop, an overlapping reduce-window), and so does the
 * consumer (a plain one itself, a fusion along the producer's value). *pl and *cl (may be NULL)
 * get the two ops. The two need not be linked: XLA's tests ask it of siblings too. */
bool fusion_creates_nested_loop(const IrInstr *producer, const IrInstr *consumer, const IrInstr **pl,
                                const IrInstr **cl);
/* XLA's IsProducerConsumerFusible (2021): the kinds on each side, no multi-output producer, no
 * nested loop, no layout-changing producer into a reduction, constants only scalar and only into
 * an existing fusion. Asked by instruction-fusion and fusion-merger. */
bool fusion_producer_consumer_fusible(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx,
                                      FusionVerdict *v);
/* Everything instruction-fusion asks before fusing producer into consumer (XLA's ShouldFuse):
 * kinds, root, duplication (by mode), expensive reuse, heavy computation, nested reductions,
 * in-place operands, size limits, code duplication. */
bool fusion_should_fuse(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx, FusionMode mode,
                        FusionVerdict *v);
/* priority-fusion's version: the same rules, except that duplication is left to the cost model
 * (no expensive-duplication or concatenate user limit), constants fuse into any consumer and
 * loop fusions are ordinary producers. */
bool fusion_should_fuse_priority(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx,
                                 FusionVerdict *v);
/* Which pass asks whether a fusion would be too large: instruction-fusion fuses a producer into
 * its consumer (XLA's is_consumer_producer_fusion: a fusion that does not grow the consumer's
 * operands is never too large for them), fusion-merger merges a fusion into a user,
 * multi_output_fusion makes one kernel with both outputs. */
typedef enum { FUSION_SIZE_PRODUCER_CONSUMER, FUSION_SIZE_MERGE, FUSION_SIZE_MULTI_OUTPUT } FusionSizeFor;
/* XLA's FusionWouldBeTooLarge (2021) for the kernel of producer + consumer, plus the registers
 * hook and the IR size: operand_budget (operands plus output buffers, SubshapeCount of both),
 * shared_memory (2021's SharedMemoryUsage against its 40,000 B budget), unnested_reductions,
 * registers, ir_size. */
bool fusion_check_too_large(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx,
                            FusionSizeFor how, FusionVerdict *v);
/* 2021's SharedMemoryUsage: a row reduction 32 elements, a column reduction 2 x 32 x 33 (its
 * tile, twice for x-tiling), of the reduce's element type; a fusion the sum over its body. */
int64_t fusion_shared_memory_2021(const IrInstr *i);
#define FUSION_SHARED_MEMORY_BUDGET_2021 40000 /* kSharedMemoryBudgetInBytes */
/* Code duplication (XLA's CodeDuplicationTooHigh, with the paper's user limit as a setting). */
bool fusion_check_code_duplication(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx,
                                   FusionVerdict *v);
/* Operands plus outputs of the fused kernel of a and b (distinct buffers). */
int fusion_operands_and_outputs(const IrInstr *a, const IrInstr *b, bool multi_output);
/* True when b is reachable from a through a path of length >= 2 (so fusing a and b into one
 * kernel would create a cycle). Both must be in the same computation. */
bool fusion_path_exists(const IrInstr *from, const IrInstr *to, bool skip_direct);

/* ---------- multi_output_fusion's predicates, 2021 (pass_multi_output_fusion.c) ---------- */

/* IsFusibleAsMultiOutputFusionRoot (2021): a fusible contiguous reduction (or an input fusion
 * rooted at one), a loop fusion, or an elementwise op. */
bool fusion_mof_root_2021(const IrInstr *i, const PassSettings *s);
/* ShapesCompatibleForMultiOutputFusion (2021): the two kernels' heroes iterate over the same loop
 * (a contiguous reduction by its input, with consistent reductions; anything else by its output;
 * dimensions and layout, not element type). */
bool fusion_mof_shapes_compatible_2021(const IrInstr *a, const IrInstr *b, FusionVerdict *v);
/* IsProducerConsumerMultiOutputFusible (2021). */
bool fusion_mof_producer_consumer_2021(const IrInstr *producer, const IrInstr *consumer, const PassContext *cx,
                                       FusionVerdict *v);

/* ---------- cost model (priority-fusion, fusion-merger) ---------- */

/* Bytes a kernel made of i reads (its operands) and writes (its result), and its flops. */
int64_t fusion_bytes_read(const IrInstr *i);
int64_t fusion_bytes_written(const IrInstr *i);
double fusion_flops(const IrInstr *i);
/* Time of one kernel launch on the device: max(memory, compute) + launch overhead, in us. */
double fusion_kernel_us(const DeviceProfile *d, int64_t bytes, double flops);

/* ---------- helpers the passes share ---------- */

/* The instruction inside consumer (when a fusion) that reads producer: decisions name it, so
 * `why concatenate.12 select.5` finds them. Otherwise consumer's own name. */
const char *fusion_consumer_label(const IrInstr *consumer, const IrInstr *producer);
/* When `set pass NAME off` switched the pass off: reports one `policy` decision and returns true. */
bool fusion_pass_disabled(PassContext *cx, const char *name);

/* ---------- computations the passes walk ---------- */

/* The computations that hold sequential code: the entry and everything called by while, call,
 * conditional (not reducers, comparators or fused bodies). Returns the count (<= max), callees
 * first. */
int fusion_control_computations(const IrModule *m, IrComputation **out, int max);

/* ---------- pairs already reported ---------- */

/* A set of (a, b, reason) a pass has reported: two siblings sharing several operands are met once
 * per shared operand, and the same refusal is reported once. A merge makes a new instruction, so a
 * pair that changes is judged and reported afresh. Zero-initialise; free with fusion_pair_set_free. */
typedef struct {
  const IrInstr *a, *b;
  const char *reason;
} FusionPair;
typedef struct { /* open addressing, a power-of-two table; a NULL a marks a free slot */
  FusionPair *v;
  size_t n, cap;
} FusionPairSet;
/* True when (a, b, reason) was seen before; otherwise remembers it (sets *oom when it cannot). */
bool fusion_pair_seen(FusionPairSet *r, const IrInstr *a, const IrInstr *b, const char *reason, bool *oom);
void fusion_pair_set_free(FusionPairSet *r);

#endif

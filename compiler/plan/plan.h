/* plan.h — the kernel plan of a stage and its cost: what every stage's numbers come from.
 *
 * Every fusion is one kernel, every unfused compute instruction is one kernel, library calls are
 * opaque kernels, while loops run on the host: the body's kernels per iteration and, only when
 * the trip count is not known at compile time, the condition's kernels and a read-back of its
 * result per iteration (a known trip count runs as XLA:GPU's for loop: no condition at all). Values that cross a kernel boundary live in memory;
 * values inside a fusion do not. Parameters, tuples, get-tuple-element, bitcasts and constants
 * launch nothing. */
#ifndef FXPLAIN_PLAN_H
#define FXPLAIN_PLAN_H

#include <stdint.h>

#include "device.h"
#include "../ir/ir.h"

/* The kinds of kernel (kernels.def): KERNEL_LOOP, KERNEL_INPUT, KERNEL_OUTPUT, KERNEL_LIBRARY,
 * KERNEL_CONTROL. */
typedef enum {
#define KIND(NAME, name, xla) KERNEL_##NAME,
#define LIBRARY(OP, library, what)
#include "kernels.def"
#undef KIND
#undef LIBRARY
  KERNEL_KIND_COUNT
} KernelKind;

const char *plan_kernel_kind_name(KernelKind k); /* "loop", "input", "output", "library", "control" */
/* The kind of kernel a fusion of XLA kind `xla_kind` ("kInput", ...; NULL: kLoop) is. */
KernelKind plan_fusion_kernel_kind(const char *xla_kind);
/* The library that runs op (kernels.def): "cuBLAS", ... and what it does there ("matmul"; NULL
 * when the library's name says it); false for an op no library runs. */
bool plan_op_library(IrOpcode op, const char **library, const char **what);
/* The kernel an instruction of a computation becomes: false when it launches nothing (parameters,
 * constants, tuples, bitcasts and the reshapes and transposes that only relabel memory, the
 * halves of async pairs that wait), else true with *kind its kind (KERNEL_CONTROL for while,
 * call and conditional, which run their computations). */
bool plan_instr_kernel(const IrInstr *i, KernelKind *kind);

/* The custom-call targets XLA:GPU's library rewriters make (kernels.def's CUSTOM_CALL lines):
 * PLAN_CC_NONE for any other instruction. */
typedef enum {
  PLAN_CC_NONE,
#define KIND(NAME, name, xla)
#define LIBRARY(OP, library, what)
#define CUSTOM_CALL(NAME, target, library, what) PLAN_CC_##NAME,
#include "kernels.def"
#undef KIND
#undef LIBRARY
#undef CUSTOM_CALL
  PLAN_CC_COUNT
} PlanCustomCall;
/* Which known target custom-call i calls (PLAN_CC_NONE for another target or another op). */
PlanCustomCall plan_custom_call(const IrInstr *i);
/* The target's spelling ("__cudnn$convForward", without quotes); NULL for PLAN_CC_NONE. */
const char *plan_custom_call_target(PlanCustomCall c);
/* The backend kinds of kCustom fusions (kernels.def's FUSION_BACKEND lines). */
typedef enum {
  PLAN_FB_NONE,
#define KIND(NAME, name, xla)
#define LIBRARY(OP, library, what)
#define FUSION_BACKEND(NAME, kind, library, what) PLAN_FB_##NAME,
#include "kernels.def"
#undef KIND
#undef LIBRARY
#undef FUSION_BACKEND
  PLAN_FB_COUNT
} PlanFusionBackend;
/* The backend kind of fusion i (its backend_config's fusion_backend_config kind); PLAN_FB_NONE
 * for another kind, no kind, or another op. */
PlanFusionBackend plan_fusion_backend(const IrInstr *i);
/* The kind's spelling ("__triton_gemm"); NULL for PLAN_FB_NONE. */
const char *plan_fusion_backend_kind(PlanFusionBackend b);
/* A cuDNN convolution call's backend_config (cudnn_conv_backend_config): the activation applied
 * after the bias ("kNone", "kRelu", ...), the scale of the convolution's result and of the side
 * input (operand 3), and LeakyReLU's slope. cuDNN computes
 *   activation(conv_result_scale * conv(input, filter) + side_input_scale * side_input + bias). */
typedef struct {
  char activation[24];
  double conv_result_scale, side_input_scale, leakyrelu_alpha;
} PlanConvConfig;
/* Reads i's config (absent fields keep the defaults kNone, 1, 0, 0); false when i is not a cuDNN
 * convolution call or its activation is not one fxplain knows. */
bool plan_conv_config(const IrInstr *i, PlanConvConfig *c);
/* The backend_config text for c. */
void plan_conv_config_format(const PlanConvConfig *c, char *buf, size_t n);

/* The library a known custom call or kCustom fusion runs in and what it does there ("cuDNN",
 * "convolution"; "Triton", "GEMM"); false for anything else. */
bool plan_library_call(const IrInstr *i, const char **library, const char **what);

typedef struct {
  const char *name;        /* the instruction that is the kernel (fusion or op) */
  IrInstr *instr;
  IrComputation *comp;     /* the computation it runs in (entry, a loop body, ...) */
  KernelKind kind;
  int nmembers;            /* instructions inside (for a fusion, its fused body's compute ops) */
  IrInstr **members;
  int ninputs;             /* buffers read (operands that cross the boundary) */
  IrInstr **inputs;
  int64_t bytes_read, bytes_written; /* per launch */
  double flops;            /* per launch */
  int64_t launches;        /* per execution of the module (trip counts multiplied out) */
  double est_us;           /* per launch, on the profile: max(memory, compute) + launch */
  /* A while loop's control entry: */
  int64_t trip_count;      /* the loop's trip count per execution of the loop; -1 when unknown
                              (and for every other entry) */
  bool for_loop;           /* the trip count is known: run as a for loop (XLA's ForThunk, or
                              WhileThunk given the trip count): the body trip_count times, the
                              condition never, nothing read back (launches 0) */
} PlanKernel;

/* A buffer that crosses a kernel boundary: one output of a kernel (an array result, or one element
 * of a multi-output kernel's tuple), written by that kernel and read by later kernels, the loop
 * machinery or the caller. Values inside a fusion are not buffers. Liveness runs over the
 * instruction order of the computation the kernel runs in: from the kernel (def) to its last
 * reader (last_use), seen through the ops that pass a buffer on without a kernel (tuple,
 * get-tuple-element, bitcast, while, call, conditional). A buffer that reaches the computation's
 * root is live-out: the caller (or the next loop iteration) gets it, so its memory is never
 * handed on inside the computation. */
typedef struct {
  const IrInstr *producer;   /* the kernel instruction that writes it */
  int output;                /* element of the producer's tuple result; -1 for an array result */
  const IrComputation *comp;
  int64_t bytes;
  int def, last_use;         /* positions in comp's instruction order */
  bool live_out;
  int slot;                  /* the memory it is assigned (index into KernelPlan.slot_bytes) */
  int slot2;                 /* a result of a loop's body (the next iteration's state) or condition:
                                the second slot it alternates with across iterations, so an iteration
                                never writes what it reads; -1 otherwise */
  int reuses;                /* the buffer whose dead memory it takes over; -1 for fresh memory */
} PlanBuffer;

typedef struct {
  Arena arena;
  PlanKernel *kernels;
  int nkernels;                      /* entries: kernels and control entries */
  int ncompute;                      /* kernels: the entries that launch (control entries left out) */
  /* Buffer assignment (XLA's buffer assignment, simplified): per computation, in instruction
   * order, a buffer takes the smallest free slot of the same or a larger size whose previous
   * occupant's last reader has run; otherwise a new slot. Live-out buffers take fresh memory; in
   * a loop's body or condition, two slots that alternate across iterations. */
  PlanBuffer *buffers;
  int nbuffers;
  int64_t *slot_bytes;               /* size of each slot (its first occupant's size) */
  int nslots;
  int64_t buffer_bytes;              /* memory without reuse: every buffer its own (a loop's results
                                        twice: the state read and the state written) */
  int64_t slot_total;                /* memory with reuse: the slots */
  int64_t launches;                  /* total kernel launches per execution (control entries,
                                        which launch nothing, left out) */
  int64_t bytes_read, bytes_written; /* total per execution, by the kernels */
  double est_us;                     /* total per execution, control read-backs included */
  bool trip_counts_known;            /* false when some loop's trip count was guessed (1) */
  bool buffers_assigned;             /* the buffer fields above are filled (plan_assign_buffers) */
} KernelPlan;

/* Builds the plan of m on dev, its buffers assigned. Returns NULL and fills err on failure. */
KernelPlan *plan_build(const IrModule *m, const DeviceProfile *dev, FxError *err);
/* The same plan without buffer assignment (buffers_assigned false, no buffers or slots): its
 * kernels and totals are plan_build's. What a stage's kernel count needs; plan_assign_buffers
 * completes it. m must outlive the plan, as for plan_build. */
KernelPlan *plan_build_kernels(const IrModule *m, const DeviceProfile *dev, FxError *err);
/* Assigns p's buffers if they are not yet (plan_build's result, the same either way). False and
 * err on running out of memory, the plan then still without buffers. */
bool plan_assign_buffers(KernelPlan *p, FxError *err);
void plan_free(KernelPlan *p);
/* Trip count of a while loop when it can be read from the condition or backend_config; -1 if not. */
int64_t plan_while_trip_count(const IrInstr *w);
/* Whether XLA:GPU runs while loop w as a for loop: its trip count is known at compile time
 * (backend_config's known_trip_count, which XLA's WhileLoopTripCountAnnotator writes, or the
 * counted-loop pattern plan_while_trip_count reads), so the body runs *trips times and the
 * condition is never evaluated (IrEmitterUnnested::HandleWhile's ForThunk, 2018-2023; today's
 * WhileThunk given the trip count). The kernel plan and the CPU and GPU backends all ask this one
 * function; the reference interpreter evaluates the condition regardless. *trips (may be NULL)
 * gets the trip count, -1 when false. */
bool plan_while_for_loop(const IrInstr *w, int64_t *trips);
/* The kernel an instruction runs in (the fusion holding it, or its own kernel); NULL when it
 * launches nothing (parameters, tuples, bitcasts, ...). For a while or conditional: its control
 * kernel. */
const PlanKernel *plan_kernel_of(const KernelPlan *p, const IrInstr *i);
/* Floating-point operations of one instruction, once: elementwise ops one per element, reduce one
 * per input element, dot 2*M*N*K, convolution 2 * output elements * kernel elements / output
 * features, reduce-window one per window element. Data movement counts 0. */
double plan_instr_flops(const IrInstr *i);
/* Bytes one launch of the kernel made of i reads (each distinct operand once, as
 * plan_operand_bytes_read counts it) and writes. The plan's kernels and the backends' run counters
 * both use it: measured and planned bytes come from this one place. */
void plan_kernel_bytes(const IrInstr *i, int64_t *read, int64_t *written);
/* The buffer an output of kernel instruction i is (output -1 for an array result), or NULL. */
const PlanBuffer *plan_buffer_of(const KernelPlan *p, const IrInstr *i, int output);
/* Bytes the kernel made of i reads of its operand o (only the sliced part when every use slices it,
 * nothing for the buffer an in-place dynamic-update-slice updates), and bytes it writes. */
int64_t plan_operand_bytes_read(const IrInstr *i, int o);
int64_t plan_bytes_written(const IrInstr *i);
/* Estimated time of one kernel launch on dev, in microseconds: max(memory time, compute time)
 * plus the launch overhead. Every stage's estimate and priority-fusion's cost model use it. */
double plan_time_us(const DeviceProfile *dev, double bytes, double flops);

#include "kernel_report.h" /* the kernel records the runtime reports and explain/ prints */

#endif

/* runtime.h — running a stage: tensors, the reference interpreter, .npy files, run statistics.
 *
 * Where it sits: a stage's IR module (compiler/) comes in; the interpreter (interp.c) executes it op
 * by op and is the oracle every other backend is compared with; the native backends (cpu.c, and
 * the CUDA backend) execute the same module kernel by kernel and share the interpreter's walker for
 * host-side control flow (while, call, conditional, tuples) through RtHooks. repl/cmd_run.c drives
 * all of it for `run`, `profile` and `compare`.
 *
 * Tensors are dense and row-major in their logical dimensions whatever the IR layout says; only
 * `bitcast` looks at layouts (it reinterprets the physical buffer). Element storage uses the
 * element type's own width (f16/bf16 as 16-bit patterns, f8 as 8-bit patterns, c64/c128 as (re, im)
 * pairs). Memory for tensor data is counted against a budget (`set max_memory`); sizes are
 * computed with overflow checks. */
#ifndef FXPLAIN_RUNTIME_H
#define FXPLAIN_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../compiler/ir/ir.h"

/* ---------- tensors ---------- */

typedef struct RtTensor RtTensor;
struct RtTensor {
  IrType type;            /* element type; IR_TUPLE for tuples, IR_TOKEN for tokens */
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t count;          /* elements (1 for scalars) */
  size_t bytes;           /* count * element bytes */
  void *data;             /* NULL for tuples/tokens */
  int ntuple;
  RtTensor **tuple;       /* owned references */
  int refs;               /* reference count; rt_tensor_unref frees at zero */
  RtTensor *owner;        /* a view's owner (a backend's buffer slot): data is owner's; the view holds
                             one reference to it, so the memory lives as long as the view */
};

/* A new array tensor of type t and dims, zero-filled. Returns NULL and fills err when the size
 * overflows, exceeds the memory budget, or allocation fails. The caller owns one reference. */
RtTensor *rt_tensor_new(IrType t, int rank, const int64_t *dims, FxError *err);
/* A tensor shaped like s (arrays, tokens and tuples, recursively). */
RtTensor *rt_tensor_for_shape(const IrShape *s, FxError *err);
/* The same without zero-filling, for outputs a kernel overwrites entirely. */
RtTensor *rt_tensor_new_uninit(IrType t, int rank, const int64_t *dims, FxError *err);
RtTensor *rt_tensor_for_shape_uninit(const IrShape *s, FxError *err);
/* An array tensor viewing the start of owner's data (a backend's buffer slot, at least as large):
 * it takes a reference to owner, so the memory stays valid while the view lives, and owner->refs
 * tells whether any view is alive; the data does not count against the budget again. Returns NULL
 * and fills err when it does not fit. */
RtTensor *rt_tensor_view(IrType t, int rank, const int64_t *dims, RtTensor *owner, FxError *err);
/* A tuple holding the given elements (takes one new reference to each). */
RtTensor *rt_tensor_tuple(RtTensor **elems, int n, FxError *err);
RtTensor *rt_tensor_ref(RtTensor *t);
void rt_tensor_unref(RtTensor *t);
/* Deep copy (arrays and tuples). */
RtTensor *rt_tensor_clone(const RtTensor *t, FxError *err);
/* True when t's type and dims match the array or tuple shape s. */
bool rt_tensor_matches(const RtTensor *t, const IrShape *s);
/* "f32[2048,4]" into buf. */
void rt_tensor_describe(const RtTensor *t, char *buf, size_t n);

/* Element access as double / int64 (every array type; unsigned 64-bit as its bits). */
double rt_get_f(const RtTensor *t, int64_t i);
int64_t rt_get_i(const RtTensor *t, int64_t i);
void rt_set_f(RtTensor *t, int64_t i, double v);  /* rounds to the element type (RNE for floats) */
void rt_set_i(RtTensor *t, int64_t i, int64_t v); /* wraps to the element width */
/* Complex elements (c64 as two floats, c128 as two doubles, real part first); for a real tensor
 * rt_get_c gives the value and 0, rt_set_c stores the real part. rt_get_f of a complex element is
 * its real part. */
void rt_get_c(const RtTensor *t, int64_t i, double *re, double *im);
void rt_set_c(RtTensor *t, int64_t i, double re, double im);

/* The memory budget for live tensor data, in bytes (0 = unlimited), and the bytes now live. */
void rt_set_max_memory(uint64_t bytes);
/* Back to the default budget: three quarters of the machine's memory. */
void rt_default_max_memory(void);
uint64_t rt_max_memory(void);
uint64_t rt_live_bytes(void);

/* f16 and bf16 conversions with round-to-nearest-even (XLA's semantics; NaN stays NaN). */
uint16_t rt_f32_to_f16(float f);
float rt_f16_to_f32(uint16_t h);
uint16_t rt_f32_to_bf16(float f);
/* A bf16 is the top half of an f32 (inline: the interpreter widens operands with it in loops). */
static inline float rt_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* The f8 types (ml_dtypes' float8_e4m3fn, _e5m2, _e4m3fnuz, _e5m2fnuz, _e4m3b11fnuz, _e4m3,
 * _e3m4): round to nearest even; a value beyond the largest finite one becomes inf where the
 * format has one (e5m2, e4m3, e3m4) and NaN otherwise; the fnuz formats have no -0 and one NaN. */
uint8_t rt_to_f8(IrType t, double v);
double rt_from_f8(IrType t, uint8_t bits);

/* Fills an array tensor with seeded random data suited to its type (floats in [-1, 1), integers
 * in [0, 16), pred 0/1). Deterministic for a given (seed, stream). */
void rt_tensor_fill_random(RtTensor *t, uint64_t seed, uint64_t stream);
/* The same numbers for elements [from, to) only (counter-based: any split gives the same tensor),
 * so a caller can fill a large tensor in pieces and stop between them. */
void rt_tensor_fill_random_range(RtTensor *t, uint64_t seed, uint64_t stream, int64_t from, int64_t to);

/* ---------- counter-based random numbers (shared by every backend) ---------- */

/* Threefry-2x32 with 20 rounds (Salmon et al., as in JAX): one 64-bit block from key and counter. */
void rt_threefry2x32(uint32_t key0, uint32_t key1, uint32_t ctr0, uint32_t ctr1, uint32_t out[2]);

/* ---------- execution ---------- */

typedef struct RtExec RtExec;

/* Hooks let a backend take over single instructions while the interpreter walks the module (and
 * drives while/call/conditional from the host). `exec` returns true and sets *handled when it ran
 * i itself (filling *out with a new reference); returns false after filling err. */
typedef struct {
  bool (*exec)(void *ctx, RtExec *x, const IrInstr *i, RtTensor **operands, RtTensor **out,
               bool *handled, FxError *err);
  /* Optional: called before a computation is walked; a backend that runs the whole of c itself
   * (the CPU backend's compiled entry) fills *out and sets *handled. */
  bool (*computation)(void *ctx, RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                      bool *handled, FxError *err);
  /* Optional: called before the walker reads t's values on the host (an operand of an instruction
   * it runs itself, a while condition's pred, a conditional's selector), for a backend that keeps
   * results in its own memory and fills t->data only when asked (the GPU backend). Values that are
   * only passed along (tuple, get-tuple-element, while's state, call arguments) are not read. */
  bool (*host_read)(void *ctx, RtTensor *t, FxError *err);
  void *ctx;
  /* Run a while loop whose trip count is known at compile time (plan_while_for_loop) as XLA:GPU
   * runs it: the body N times, the condition never evaluated and its pred never read back
   * (XLA's ForThunk, today WhileThunk given the trip count). The backends set it, so that they
   * launch what the kernel plan counts; the reference interpreter (no hooks) always evaluates the
   * condition, which is what checks the trip count. */
  bool for_loops;
} RtHooks;

typedef struct {
  uint64_t seed;              /* keys the rng stream */
  volatile int *interrupted;  /* polled; when it becomes nonzero execution stops with an error */
  const RtHooks *hooks;       /* NULL for the plain interpreter */
  bool count_kernels;         /* interpreter: count each kernel-forming instruction as a launch */
  bool kernel_times;          /* every kernel's own time is wanted (`profile`): the GPU backend records
                                 CUDA events around each launch only then */
} RtOptions;

/* Counters of one execution: what ran and what it moved. */
typedef struct {
  int64_t launches;           /* kernels launched */
  int64_t bytes_read, bytes_written;
  int64_t while_iterations;
  int64_t reused;             /* plain interpreter: instructions not run again because their value
                                 does not depend on the computation's parameters (interp.c) */
} RtCounters;

/* Runs the entry computation of m on args (nargs must equal the entry's parameter count).
 * On success *result holds a new reference (a tuple when the root is one). */
bool rt_interp_run(const IrModule *m, RtTensor **args, int nargs, const RtOptions *o,
                   RtTensor **result, RtCounters *counters, FxError *err);

/* Within a run (for hooks and backends): evaluates computation c on args; evaluates one
 * instruction on its operand values with the interpreter's implementation. */
bool rt_exec_computation(RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                         FxError *err);
bool rt_exec_instr(RtExec *x, const IrInstr *i, RtTensor **operands, RtTensor **out, FxError *err);
RtCounters *rt_exec_counters(RtExec *x);
uint64_t rt_exec_seed(const RtExec *x);
/* How many times instruction i's rng stream has been drawn in this run (then increments it). */
uint32_t rt_exec_rng_counter(RtExec *x, const IrInstr *i);

/* True when i launches nothing: parameter, constant, tuple, get-tuple-element, bitcast,
 * opt-barrier, after-all, domain, add-dependency, and control flow (counted through its bodies). */
bool rt_instr_is_free(const IrInstr *i);
/* The computations whose instructions run as kernels, from entry: entry and, depth first, those
 * its while, call and conditional instructions call (not fusions' bodies or reducers). At most
 * max; returns how many were written into out. */
int rt_host_computations(const IrComputation *entry, const IrComputation **out, int max);

/* ---------- comparing results ---------- */

typedef struct {
  bool ok;
  int64_t worst_index;     /* flat index of the worst element (-1 when shapes differ) */
  int tuple_index;         /* which tuple element (-1 for arrays) */
  double got, want, err;   /* the worst element's values and its error */
  double tol;
  char what[512];          /* a sentence when not ok */
} RtCompare;

/* Tolerance: exact for integers and pred, relative 1e-5 for f32/f64/c64/c128, 1e-2 for f16, 2e-2
 * bf16, one ulp of the mantissa for the f8 types (0.0625 e3m4, 0.125 e4m3*, 0.25 e5m2*). A float
 * error is relative to the largest of the reference element's magnitude, the reference output's
 * root-mean-square and 1 (summation order moves an element by the rounding of the terms it sums). */
void rt_compare(const RtTensor *got, const RtTensor *want, RtCompare *out);

/* ---------- .npy files ---------- */

/* Reads a NumPy .npy file (versions 1–3, little-endian, C order; f16/f32/f64, ints, bool,
 * complex64/complex128; bf16 and the f8 types have no NumPy dtype). Returns NULL and fills err
 * with the file's name. */
RtTensor *rt_npy_read(const char *path, FxError *err);
bool rt_npy_write(const char *path, const RtTensor *t, FxError *err);

/* ---------- the inputs of a run (inputs.c) ---------- */

/* An input rule of the commands that run a stage (--uniform PATTERN=LO:HI): the floats of the
 * parameters whose name matches the shell pattern are drawn from [LO, HI) instead of [-1, 1). */
typedef struct RtUniform {
  char pattern[128];
  double lo, hi;
  int argi;     /* the rule's word, for errors */
  bool matched; /* some module has a parameter it applies to */
} RtUniform;
/* The first rule whose pattern matches the parameter name, or NULL. */
RtUniform *rt_uniform_for(RtUniform *rules, int n, const char *name);
/* Maps a float tensor filled by rt_tensor_fill_random ([-1, 1)) onto [r->lo, r->hi). */
void rt_uniform_apply(RtTensor *t, const RtUniform *r);
/* Marks the rules that name a parameter of one of the modules' entries; the index of the first
 * that names none, or -1. */
int rt_uniform_unmatched(RtUniform *rules, int n, const IrModule *const *mods, int nmods);
/* The run commands' inputs: fills every NULL slot of args (one per entry parameter) with seeded
 * random data (floats in [-1, 1), integers in [0, 16), stream = parameter number; tuple elements
 * stream k * 1000 + e), then maps the floats of parameters a rule names onto its range. Slots
 * already set (a --input file) are kept. Returns false with err filled. */
bool rt_inputs_fill(const IrModule *m, RtTensor **args, uint64_t seed, RtUniform *rules, int nrules, FxError *err);
/* The same, stopping ("interrupted") within a fraction of a second of *interrupted becoming
 * non-zero (large inputs are filled in pieces), and with a progress line on stderr when
 * `progress` (a terminal): how many of the inputs' bytes are ready. */
bool rt_inputs_fill_interruptible(const IrModule *m, RtTensor **args, uint64_t seed, RtUniform *rules, int nrules,
                                  volatile int *interrupted, bool progress, FxError *err);
/* Unrefs each argument and frees the array; NULL is fine. */
void rt_inputs_free(const IrModule *m, RtTensor **args);

/* ---------- results as `run` shows them (tensor.c) ---------- */

/* What `run` shows of one array: its type and shape as text; for an array with elements, the
 * smallest, largest and mean value and the first (up to 4) values. Complex: min and max of the
 * magnitudes, mean and first values as (re, im). Integers keep their exact values in first_int
 * (u64 as its bits: first_u64 says to read them unsigned). */
typedef struct {
  char desc[128];
  bool has_values; /* an array with elements (not a token, not empty) */
  bool is_complex, is_float, first_u64;
  double min, max, mean, mean_im;
  int nfirst;
  double first[4], first_im[4];
  int64_t first_int[4];
} RtSummary;
void rt_tensor_summarize(const RtTensor *t, RtSummary *s);
/* Calls fn on each array of a result, named as `run` names them: `name` for an array, name.0,
 * name.1, ... for a tuple's elements (name.1.0 inside those). */
void rt_tensor_each_output(const RtTensor *t, const char *name, void (*fn)(void *ctx, const char *name, const RtTensor *t),
                           void *ctx);
/* One line per array (a tuple's elements as NAME.0, NAME.1, ...), as rt_tensor_summarize has it. */
void rt_tensor_print_summary(FILE *f, const char *name, const RtTensor *t);
/* A result's part by name: "out", "out.1", "out.1.0" (tuple elements); NULL when there is none. */
const RtTensor *rt_tensor_output(const RtTensor *r, const char *name);

#endif

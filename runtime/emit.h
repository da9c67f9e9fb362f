/* emit.h — the one kernel emitter: a kernel's body generated once, wrapped for the CPU (a C loop
 * nest, cpu.c) or the GPU (a CUDA __global__ function, the CUDA backend).
 *
 * A kernel is a fusion instruction (its fused computation becomes one function) or a single
 * unfused op. emit_kernel_init analyses it: its input buffers (the kernel's operands), its output
 * buffers (the array result, or each element of a multi-output fusion's tuple), and its parts: one
 * loop nest per distinct output shape. The body of a part is C-like code (valid C99 and CUDA C++)
 * that computes every output of the part at one multi-index, held in variables i0..i{rank-1}:
 *
 *     inputs   in0, in1, ...   pointers to the element storage type (emit_storage_type)
 *     outputs  out0, out1, ... (global numbering over all parts)
 *     index    int64_t i0, i1, ...  (the part's dims, row-major; rank 0: no index variables)
 *
 * A wrapper declares those names, loops over the part's iteration space and pastes the body in.
 * Values are computed in the compute type (float for f16/bf16/f32, double for f64, the integer's
 * own type) with XLA's semantics, using the helpers of emit_prelude (f16/bf16 conversions with
 * round-to-nearest-even, NaN-propagating max/min, XLA's integer division and shifts).
 *
 * Generated source never contains user text except sanitized names (emit_sanitize). */
#ifndef FXPLAIN_EMIT_H
#define FXPLAIN_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler/ir/ir.h"

/* A growable text buffer; `oom` is set (and further output dropped) when allocation fails. */
typedef struct {
  char *s;
  size_t len, cap;
  bool oom;
} EmitBuf;

void emit_buf_init(EmitBuf *b);
void emit_buf_free(EmitBuf *b);
void emit_printf(EmitBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum { EMIT_TARGET_C, EMIT_TARGET_CUDA } EmitTarget;

#define EMIT_MAX_BUFFERS 128
#define EMIT_MAX_PARTS 16

typedef struct {
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t count;                     /* elements of the iteration space */
  int nsplit;                        /* leading dims flattened into the range callers split (0 for rank 0) */
  int64_t outer;                     /* the product of those dims: what [lo, hi) of the wrapper ranges over */
  int noutputs;
  int outputs[EMIT_MAX_BUFFERS];     /* global output numbers this part writes */
} EmitPart;

typedef struct {
  const IrInstr *instr;              /* the kernel: a fusion or a single op */
  char name[160];                    /* C identifier: "fx_" + sanitized instruction name + id */
  int ninputs;
  IrType in_types[EMIT_MAX_BUFFERS]; /* the kernel's operands, in operand order */
  int noutputs;
  IrType out_types[EMIT_MAX_BUFFERS];
  const IrShape *out_shapes[EMIT_MAX_BUFFERS];
  int out_tuple_index[EMIT_MAX_BUFFERS]; /* which element of a tuple result (-1: the array result) */
  int nparts;
  EmitPart parts[EMIT_MAX_PARTS];
  int64_t sort_len, sort_stride;     /* a sort kernel (emit_sort_kernel_init): its lines; 0 otherwise */
  int sort_src[16];                  /* its operand j: input sort_src[j], or (-1 - d) an iota along d */
  bool scatter;                      /* a scatter kernel (emit_scatter_kernel_init) */
  int inplace_input;                 /* the input an in-place variant updates (emit_inplace), or -1 */
} EmitKernel;

/* Analyses i as a kernel. Returns false when the emitter cannot generate it, with the reason in
 * err (e.g. "gather is not generated; it runs on the interpreter's implementation"); backends then
 * run the kernel through rt_exec_instr. */
bool emit_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err);

/* A sort (unfused, or sort-iota-fusion's fusion of a sort with the iotas it reads, on the CPU) as a
 * kernel: its one part ranges over the lines to sort (every position but the sorted dim's), and
 * emit_c_wrapper makes a stable merge sort of each line with the comparator inlined (an iota
 * operand computed from the position), then moves every operand's elements into place. Lines longer than
 * EMIT_SORT_MAX_LEN (the wrapper keeps two index arrays of a line on the stack) are refused, as
 * are comparators the emitter cannot generate. Returns false with the reason in err. */
#define EMIT_SORT_MAX_LEN 65536
bool emit_sort_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err);

/* A scatter (one operand, no batching dims) as a kernel, unfused or the root of a fusion whose
 * other instructions are generated: one part of rank 0, whose wrapper copies the operand into the
 * output and then applies the updates in order, one by one, as the interpreter does (the
 * combiner inlined; a window not wholly in bounds is skipped). Returns false with the reason. */
bool emit_scatter_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err);

/* An unfused dot of floats as a kernel, element by element (for the CPU's dots that gemm does not
 * take, small ones, at most EMIT_DOT_MAX_MACS multiply-adds: a vector dot in a loop); products summed in double, as the interpreter's. */
#define EMIT_DOT_MAX_MACS (1 << 20)
bool emit_dot_kernel_init(EmitKernel *k, const IrInstr *i, FxError *err);

/* In-place variants. A kernel whose root is a dynamic-update-slice or a scatter of one of the
 * kernel's inputs (read nowhere else in the kernel) can update that input's buffer instead of
 * writing a whole new output: k->inplace_input names it after emit_kernel_init or
 * emit_scatter_kernel_init (-1: none), and emit_inplace writes
 *     void NAME_ip(char *const *bufs)
 * with the same bufs, the output buffer being that input's: it writes the updated elements only
 * (the slice, or the scatter's updates). Callers use it when nothing else reads the input after
 * the kernel, as a loop's state element updated in place. */
bool emit_inplace(EmitBuf *b, const EmitKernel *k, FxError *err);

/* The helpers every body uses (types, conversions, XLA semantics), for the target. Emit once per
 * translation unit, before any kernel. */
void emit_prelude(EmitBuf *b, EmitTarget t);
/* The extra compiler flags a C unit needs when compiled with -DFX_VECMATH=1 (vector math: see
 * emit_vecmath_decls in emit.c), space-separated, into out. */
void emit_vecmath_flags(char *out, size_t n);

/* File-scope definitions a kernel needs (tables of array constants), emitted before its wrapper. */
bool emit_globals(EmitBuf *b, const EmitKernel *k, EmitTarget t, FxError *err);

/* The body of part p (statements; see the top of this file for the names it uses). `indent` is
 * the number of spaces each line starts with. */
bool emit_body(EmitBuf *b, const EmitKernel *k, int part, EmitTarget t, int indent, FxError *err);

/* The C wrapper of part p: a function
 *     void NAME_pP(char *const *bufs, int64_t lo, int64_t hi)
 * with bufs = inputs then outputs, looping over [lo, hi) of the flattened index of the part's
 * first `nsplit` dimensions (the fewest whose product is at least EMIT_SPLIT_MIN: enough chunks for the threads, so that a
 * [1, 4096, 1024] part still splits over threads; a rank-0 part runs once) and the remaining
 * dimensions fully, innermost contiguous so it vectorizes. Callers split [0, outer) across threads. */
#define EMIT_SPLIT_MIN 16
bool emit_c_wrapper(EmitBuf *b, const EmitKernel *k, int part, FxError *err);

/* The C element storage type of t ("float", "uint16_t" for f16/bf16, "uint8_t" for pred, ...) and
 * the compute type ("float" for f16/bf16/f32). NULL when the emitter does not handle t. */
const char *emit_storage_type(IrType t);
const char *emit_compute_type(IrType t);

/* Copies s into out keeping only [A-Za-z0-9_] (other bytes become '_'; a leading digit gets a
 * prefix), at most n-1 characters. Safe to paste into generated C, CUDA and comments. */
void emit_sanitize(const char *s, char *out, size_t n);

#endif

/* simplify.h — helpers shared by the simplification passes (algsimp, constant-folding,
 * while-loop-simplifier, call-inliner): which instructions are pure, removing what a rewrite
 * left unused, reading constant values, editing operand lists, and reporting a rewrite.
 *
 * Where it sits: compiler/, under the passes that run before fusion (paper §III-A). */
#ifndef FXPLAIN_SIMPLIFY_H
#define FXPLAIN_SIMPLIFY_H

#include "pass.h"

/* True when removing i (if unused) cannot change what the module does: no side effects, no
 * parameter. Control flow counts as pure only when its callees are (checked shallowly). */
bool simp_is_pure(const IrInstr *i);

/* Whether running i (or computation c) can do more than compute its value: an instruction that
 * is not pure (simp_is_pure), looking into what loops, calls and conditionals run (XLA's
 * HasSideEffect). Parameters and random-bit generation count as pure here. */
bool simp_has_side_effect(const IrInstr *i);
bool simp_comp_has_side_effect(const IrComputation *c);

/* Removes i when it is unused, pure (a loop, call or conditional: when nothing it runs has a
 * side effect) and not its computation's root, then its operands that became unused,
 * transitively. Returns how many instructions were removed. */
int simp_drop_dead(IrInstr *i);

/* Replaces every use of old by repl (the root too), then drops old and whatever became dead. */
int simp_replace(IrInstr *old, IrInstr *repl);

/* When every element of i's value is known to be the same number, stores it in *v: a constant
 * with decoded values all equal, or a broadcast / reshape / convert-free chain down to one. */
bool simp_splat_value(const IrInstr *i, double *v);

/* Removes operand slot k of i (its user edge too). */
void simp_remove_operand(IrInstr *i, int k);

/* "multiply.4(x, 1)": the instruction and its operands, for decision texts. Constant scalar
 * operands are shown by value. */
const char *simp_describe(const IrInstr *i, char *buf, size_t n);

/* The operation of a reducer that is one binary operation of its two parameters (*swapped when
 * it reads them in the other order); IR_OP_COUNT otherwise. */
IrOpcode simp_reducer_op(const IrComputation *f, bool *swapped);

/* Whether a reshape from `from` to `to` only inserts or deletes dimensions of size 1 (XLA's
 * ReshapeMerelyInsertsOrDeletes1SizedDimensions); then out_dim[k] (when out_dim is not NULL) is the
 * result dimension from's dimension k becomes, -1 for one of size 1. */
bool simp_reshape_only_unit_dims(const IrShape *from, const IrShape *to, int64_t *out_dim);

/* True for computations that are the body of a fusion (passes before fusion leave them alone). */
bool simp_is_fused_computation(const IrComputation *c);

/* A new reducer computation `base`(.N) adding two scalars of type t, placed before `caller` in
 * m's computation order (callees first), as XLA's passes make them (CreateScalarAddComputation,
 * MakeReduceHlo). NULL when out of memory. */
IrComputation *simp_add_computation(IrModule *m, IrComputation *caller, IrType t, const char *base);

/* The instructions of opcode op in m's computations (fusion bodies aside), in order, as an
 * fx_malloc'd array (*n of them; the caller frees it): a pass that rewrites them one by one
 * works from this list, not from computations its rewrites change. NULL when out of memory. */
IrInstr **simp_collect(const IrModule *m, IrOpcode op, int *n);

/* The instructions of opcode op in computation c (dead ones too), in order, as an fx_malloc'd
 * array (*n of them; the caller frees it). NULL with *n 0 when there are none, NULL with *n -1
 * when out of memory. */
IrInstr **simp_comp_collect(const IrComputation *c, IrOpcode op, int *n);

/* Rewrites one instruction; sets *changed when it did. arg is the pass's own. */
typedef bool (*SimpRewrite)(IrInstr *i, PassContext *cx, void *arg, bool *changed);
/* The walk of the passes that rewrite one kind of instruction (dot, convolution, topk) the way
 * XLA's visitors do: in each computation that is not a fusion body, the instructions of opcode
 * op are gathered first (a rewrite inserts and removes instructions), then fn rewrites each in
 * order until it fails or the session is interrupted; with `sort`, a computation fn changed is
 * re-sorted. Computations added by fn are not visited. Returns false (the error set) when fn
 * failed or out of memory. */
bool simp_rewrite_each(IrModule *m, PassContext *cx, IrOpcode op, SimpRewrite fn, void *arg, bool sort,
                       bool *changed);

/* A new instruction `base`(.N) before `before` in c, with like's metadata and location (an
 * instruction a rewrite adds in place of like). NULL when out of memory. */
IrInstr *simp_add_like(IrComputation *c, IrInstr *before, IrOpcode op, const IrShape *s, IrInstr **ops, int n,
                       const char *base, const IrInstr *like);

/* s (an array: dimensions and layout) with element type t, in arena a (XLA's
 * ShapeUtil::ChangeElementType); without its layout if copying it fails. */
IrShape simp_shape_retyped(Arena *a, const IrShape *s, IrType t);

/* A copy of computation src (its instructions and itself named after src's, made unique in the
 * module), placed just before src in m's order. NULL when out of memory. */
IrComputation *simp_clone_computation(IrModule *m, IrComputation *src);

/* Moves computation c, when it comes after `before` in m's order, to just before it: callees
 * print before their callers (a pass that adds a computation calls this with its caller's). */
void simp_place_before(IrModule *m, IrComputation *c, const IrComputation *before);

/* How many instructions call each computation of m, indexed by computation id, as an fx_calloc'd
 * array (the caller frees it). NULL when out of memory. */
int *simp_count_callers(const IrModule *m);

/* Number of instructions anywhere in m that call computation c. */
int simp_callers(const IrModule *m, const IrComputation *c);

/* XLA:GPU's MatrixLayout::For(shape, batch_dims, row_dims, col_dims) (matmul_utils.cc): whether a
 * GEMM reads or writes an array of `rank` dimensions in layout m2m (minor_to_major; NULL for
 * row-major) with those dimension groups: each group's dimensions lie next to each other in memory
 * in their logical order, and the batch group is not the most minor of the three. */
bool simp_matrix_layout(int rank, const int *m2m, const int64_t *batch, int nb, const int64_t *rows, int nr,
                        const int64_t *cols, int nc);

/* The layout (minor_to_major, out->rank entries) that makes a reshape from `in` to `out` a bitcast
 * when `in`'s elements lie in physical order in_major (its dimensions, major first): each run of
 * input dimensions that becomes a run of output dimensions (equal products) must lie in memory
 * together and in order, and the output's run takes its place (XLA's ShapeUtil::AlignLayouts, as
 * the references' XLA runs it: a size-1 dimension joins the run after it, and output dimensions
 * after the last run go innermost). False when no layout does. */
bool simp_reshape_layout(const IrShape *in, const int *in_major, const IrShape *out, int *m2m);
/* Whether minor-to-major orders a and b of s agree once its dimensions of size 1 are left out (where
 * those lie moves no element). */
bool simp_same_layout_but_units(const IrShape *s, const int *a, const int *b);

/* Copies computation c's instructions into the computation of `at`, just before it, with c's
 * parameter p read as args[p] (XLA's CallInliner: call-inliner inlines calls with it,
 * while-loop-simplifier a loop that runs once, conditional-simplifier a branch known to run).
 * The copies keep c's names as their base and c's locations. *copied counts them. Returns the
 * copy of c's root, or NULL when out of memory (what was copied stays, unused). */
IrInstr *simp_inline(IrInstr *at, IrComputation *c, IrInstr *const *args, int nargs, int *copied);
/* The same, and copies[k] (an array of c->ninstrs, or NULL) gets the copy of c->instrs[k] (for a
 * parameter, the argument it reads). */
IrInstr *simp_inline_mapped(IrInstr *at, IrComputation *c, IrInstr *const *args, int nargs, int *copied,
                            IrInstr **copies);
/* Reports, for each instruction of c whose copy (copies[k], from simp_inline_mapped) took another
 * name (a parameter: the argument passed in), a "rename" decision old -> new, so that a question about a name from the user's dump
 * (sort.11) finds what it became once inlined (sort.58): `why` follows it. `how` says why the copy
 * was made ("argsort.2 was inlined into main.5"). */
void simp_report_renames(PassContext *cx, const IrComputation *c, IrInstr *const *copies, const char *how);

#endif

/* fx_lower.h — private to the .fx lowering: values, bindings, frames and the helpers that
 * fx_lower.c (statements, loops, functions, the state API) and fx_ops.c (expressions and
 * builtin operations) share.
 *
 * A value is what an expression evaluates to while lowering: a tensor (an instruction), a
 * compile-time scalar (a literal, a `let`, a `const`: materialized as a constant only where a
 * tensor needs it, so it can be used in shapes and folded), a type (f32[n, 4]), a string, a list,
 * or the several results of a function call. */
#ifndef FXPLAIN_FX_LOWER_H
#define FXPLAIN_FX_LOWER_H

#include "fx_internal.h"

/* Shapes larger than this many elements are refused (they would overflow byte counts later). */
#define FX_MAX_ELEMENTS (INT64_C(1) << 34)

typedef enum { V_NONE, V_TENSOR, V_SCALAR, V_TYPE, V_STRING, V_LIST, V_MULTI } FxVKind;

typedef struct FxValue FxValue;
struct FxValue {
  FxVKind kind;
  FxPos pos;
  IrInstr *t; /* V_TENSOR */
  /* V_SCALAR: st is the element type, or IR_INVALID for a weak literal (is_int tells which). */
  IrType st;
  bool is_int;
  int64_t i;
  double f;
  const char *cname; /* the const's name, for the materialized constant */
  /* V_TYPE */
  IrType ty;
  bool has_dims;
  int rank;
  int64_t dims[IR_MAX_RANK];
  /* V_STRING */
  const char *str;
  /* V_LIST, V_MULTI */
  FxValue *items;
  int nitems;
};

typedef enum { B_LET, B_CONST, B_PARAM, B_VAR, B_CARRY, B_DEF, B_INDEX } FxBindKind;

typedef struct {
  const char *name;
  FxBindKind kind;
  FxPos pos;
  FxValue v;
  const FxStmt *def; /* B_DEF */
} FxBinding;

/* A computation being built: the entry, a loop body, or a function body. */
typedef struct FxFrame FxFrame;
struct FxFrame {
  IrComputation *comp;
  FxFrame *parent;   /* loop bodies: the enclosing frame; entry and functions: NULL */
  IrInstr *param;    /* loop bodies: the carried tuple */
  int nslots;        /* loop bodies: counter + carries (captured values come after) */
  IrInstr **cap_outer; /* captured values, as instructions of the parent frame */
  IrInstr **cap_inner; /* ... and their get-tuple-elements here */
  int ncap, cap_cap;
};

typedef struct {
  const FxStmt *def;
  int nargs;
  IrShape *args;
  IrComputation *comp;
  int nresults;
  bool in_progress;
} FxInstance;

typedef struct {
  IrComputation *comp;
  const char *name;
  IrType type;
  IrInstr *instr;
} FxConstCache;

typedef struct {
  IrModule *m;
  FxError *err;
  FxFrame *frame;
  FxBinding *binds;
  int nbinds, binds_cap;
  int frame_start; /* bindings before this belong to an enclosing loop or the caller */
  int barrier;     /* bindings before this are hidden, except let/const/def (function bodies) */
  bool in_function;
  FxPos pos;       /* the statement being lowered: every new instruction's loc */
  const char *loc_file;
  FxConstCache *consts;
  int nconsts, consts_cap;
  FxInstance *insts;
  int ninsts, insts_cap;
  /* Names for the results of a multi-result call being assigned (p, q = f(x)). */
  const char *const *multi_names;
  int nmulti_names;
  /* Reducer computations, made once per (operation, type). */
  IrComputation *reducers[4][IR_TYPE_COUNT];
} FxLower;

/* ---- fx_lower.c ---- */
bool fx_oom(FxLower *L);
/* Appends an instruction to the current frame's computation with the statement's loc. */
IrInstr *fx_emit(FxLower *L, IrOpcode op, const IrShape *shape, IrInstr *const *ops, int n, const char *name);
/* Element `index` of tuple as a get-tuple-element (fx_emit's naming); NULL when out of memory. */
IrInstr *fx_emit_gte(FxLower *L, const IrShape *shape, IrInstr *tuple, int index, const char *name);
IrShape fx_shape(FxLower *L, IrType t, int rank, const int64_t *dims);
/* Deep-copies a shape into the module; false (out of memory reported) when a copy fell short. */
bool fx_copy_shape(FxLower *L, IrShape *dst, const IrShape *src);
/* The instruction that stands for v in the current frame (capturing it into loop bodies). */
IrInstr *fx_use(FxLower *L, IrInstr *v);
const FxBinding *fx_lookup(FxLower *L, const char *name, FxPos pos);
bool fx_call_def(FxLower *L, const FxStmt *def, FxValue *args, int nargs, FxPos pos, const char *hint, FxValue *out);
const char *fx_unique_comp_name(IrModule *m, const char *base);
/* "f32[2048,4]" (no layout) into buf. */
const char *fx_shape_str(const IrShape *s, char *buf, size_t n);

/* ---- fx_ops.c ---- */
bool fx_eval(FxLower *L, const FxExpr *e, const char *hint, FxValue *out);
/* A compile-time integer (literal or let), for shapes, axes, counts. */
bool fx_eval_int(FxLower *L, const FxExpr *e, const char *what, int64_t *out);
/* Turns a value into a tensor of the current frame; scalars become constants of type t
 * (IR_INVALID: their own type, weak literals s32 / f32). */
IrInstr *fx_tensor(FxLower *L, const FxValue *v, IrType t, const char *name);
/* Broadcasts x numpy-style to (rank, dims); x must be broadcastable. */
IrInstr *fx_broadcast_to(FxLower *L, IrInstr *x, int rank, const int64_t *dims, const char *name);
IrInstr *fx_const(FxLower *L, IrType t, double v, const char *name);
bool fx_check_shape(FxLower *L, FxPos pos, IrType t, int rank, const int64_t *dims);
bool fx_is_builtin(const char *name);

#endif

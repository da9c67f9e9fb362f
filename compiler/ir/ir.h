/* ir.h — fxplain's intermediate representation: the one language every part speaks.
 *
 * HLO-shaped: a module holds computations (one ENTRY; the others are called by reduce
 * to_apply, while condition/body, fusion calls, call, conditional, sort, scatter, map), and a
 * computation holds instructions in a valid topological order.  Every instruction has a name that
 * is unique in its module and stays the same across passes, so `why add.3` means the same thing at
 * every stage.
 *
 * Memory: everything a module owns (names, shapes, operand arrays, attributes, literals) lives in
 * the module's arena and is freed with ir_module_free().  Nothing is freed piecemeal; an
 * instruction removed by a pass simply drops out of its computation's list.
 *
 * Immutable parts: names, attribute keys and texts, shapes (their dims, layouts and tuple
 * element arrays), literals, source locations and the module's header texts are never written
 * after they are made: a pass that changes one makes a new one (ir_shape_copy, arena_strdup,
 * ir_literal_new) and points at it. That is what lets a stage snapshot (ir_module_snapshot) share
 * them with the module it was copied from instead of copying them: only the instructions,
 * computations and their operand, user and attribute arrays, which passes do edit, are copied. A
 * module whose parts are shared keeps its arena alive (an IrLender, reference-counted) until the
 * last module pointing into it is freed, so modules can still be freed in any order. 
 *
 * Attributes: every attribute an instruction carries is kept, in order, as its HLO text
 * (`dimensions={0,1}`, `metadata={...}`), so a loaded module prints back exactly.  Typed
 * accessors (ir_attr_dims, ir_attr_int, ...) parse the text on demand; builders format it.
 * Attributes that name computations (to_apply, calls, condition, body, branch_computations, ...)
 * are kept structurally as pointers so renaming or cloning computations stays consistent. */
#ifndef FXPLAIN_IR_H
#define FXPLAIN_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"
#include "status.h"

/* ---------- opcodes ---------- */

typedef enum {
  IR_CAT_SOURCE,     /* parameter, constant, iota */
  IR_CAT_UNARY,      /* elementwise, one operand */
  IR_CAT_BINARY,     /* elementwise, two operands */
  IR_CAT_TERNARY,    /* select, clamp */
  IR_CAT_DATA,       /* data movement: broadcast, reshape, slice, concatenate, gather, ... */
  IR_CAT_REDUCE,     /* reduce, reduce-window */
  IR_CAT_LIBRARY,    /* dot, convolution, rng, custom-call, sort: opaque library kernels */
  IR_CAT_TUPLE,      /* tuple, get-tuple-element, barriers */
  IR_CAT_CONTROL,    /* while, call, conditional, fusion */
  IR_CAT_COLLECTIVE, /* all-reduce and friends: parsed and kept */
} IrCategory;

typedef enum {
#define OP(id, spelling, arity, cat, expensive, fusible, desc) IR_OP_##id,
#include "opcodes.def"
#undef OP
  IR_OP_COUNT
} IrOpcode;

typedef struct {
  const char *spelling;    /* HLO text spelling, e.g. "dynamic-slice" */
  int arity;               /* -1 when variadic */
  IrCategory category;
  bool expensive;          /* XLA's generic IsExpensive */
  bool fusible;            /* may ever appear inside a fusion body */
  const char *description; /* one line, shown by `help op` */
} IrOpInfo;

const IrOpInfo *ir_op_info(IrOpcode op);
const char *ir_op_name(IrOpcode op);
/* Looks up an HLO spelling; returns false when unknown. */
bool ir_op_lookup(const char *spelling, size_t len, IrOpcode *out);
bool ir_op_is_elementwise(IrOpcode op);

/* ---------- element types and shapes ---------- */

#define IR_TYPES(X)                                                                            \
  X(INVALID, "invalid", 0) X(PRED, "pred", 1) X(S4, "s4", 1) X(S8, "s8", 1) X(S16, "s16", 2)       \
  X(S32, "s32", 4) X(S64, "s64", 8) X(U4, "u4", 1) X(U8, "u8", 1) X(U16, "u16", 2) X(U32, "u32", 4) \
  X(U64, "u64", 8) X(F8E4M3FN, "f8e4m3fn", 1) X(F8E5M2, "f8e5m2", 1)                              \
  X(F8E4M3FNUZ, "f8e4m3fnuz", 1) X(F8E5M2FNUZ, "f8e5m2fnuz", 1) X(F8E4M3B11FNUZ, "f8e4m3b11fnuz", 1) \
  X(F8E4M3, "f8e4m3", 1) X(F8E3M4, "f8e3m4", 1) X(F8E8M0FNU, "f8e8m0fnu", 1) X(F16, "f16", 2)         \
  X(BF16, "bf16", 2) X(F32, "f32", 4) X(F64, "f64", 8) X(C64, "c64", 8) X(C128, "c128", 16)      \
  X(TUPLE, "tuple", 0) X(TOKEN, "token", 0)                                                       \
  X(S1, "s1", 1) X(S2, "s2", 1) X(U1, "u1", 1) X(U2, "u2", 1) X(F4E2M1FN, "f4e2m1fn", 1)

typedef enum {
#define X(id, name, bytes) IR_##id,
  IR_TYPES(X)
#undef X
  IR_TYPE_COUNT
} IrType;

const char *ir_type_name(IrType t);
int ir_type_bytes(IrType t); /* bytes per element; 0 for tuple/token */
int ir_type_bits(IrType t);  /* XLA's BitWidth: s4 is 4 bits, pred 8; 0 for tuple/token */
bool ir_type_lookup(const char *s, size_t len, IrType *out);
bool ir_type_is_float(IrType t);
bool ir_type_is_int(IrType t);      /* signed or unsigned integer (not pred) */
bool ir_type_is_signed(IrType t);
bool ir_type_is_complex(IrType t);
bool ir_type_is_f8(IrType t);       /* the 8-bit floats (ml_dtypes' float8_* types) */
/* XLA's 1- and 2-bit integers and its 4-bit float (s1, u1, s2, u2, f4e2m1fn): fxplain reads, prints,
 * plans and fuses them (one byte an element, as XLA stores them unpacked) but computes no value of
 * them; `run` says so (explain_module_uncomputed). */
bool ir_type_is_uncomputed(IrType t);

#define IR_MAX_RANK 16

typedef struct IrShape IrShape;
struct IrShape {
  IrType type;           /* IR_TUPLE for tuples, IR_TOKEN for tokens */
  int rank;              /* arrays: number of dimensions */
  int64_t *dims;         /* arrays: rank sizes */
  bool *dynamic;         /* arrays: NULL, or rank flags for bounded-dynamic dims ("<=8") */
  /* Layout: has_layout is false when the text gave none. minor_to_major has rank entries.
   * layout_extra keeps whatever followed ':' in the layout (tiles T(8,128), element size,
   * memory space S(1), ...) verbatim, without the ':'; NULL when none. */
  bool has_layout;
  /* XLA's buffer shape, written b(s32[2]): the array held in a buffer that custom-calls pin and
   * update in place (ShapeUtil::MakeBufferShape). Everything else reads it as the array it holds;
   * it prints back as b(...) and two shapes are equal only when both are buffers or neither is.
   * (Beside has_layout, in its padding: a shape stays 64 bytes.) */
  bool buffer;
  int *minor_to_major;
  char *layout_extra;
  /* tuples */
  int ntuple;
  IrShape *tuple;
};

/* Number of elements (1 for scalars; 0 for tuples). Saturates at INT64_MAX on overflow. */
int64_t ir_shape_elements(const IrShape *s);
/* Bytes of the array, or the sum over tuple elements. Saturates at INT64_MAX. */
int64_t ir_shape_bytes(const IrShape *s);
bool ir_shape_equal(const IrShape *a, const IrShape *b);       /* type and dims (and tuples) */
bool ir_shape_same_dims(const IrShape *a, const IrShape *b);   /* dims only */
bool ir_shape_is_array(const IrShape *s);
bool ir_shape_is_scalar(const IrShape *s);
/* Whether the layout is the default, descending one ({rank-1,...,0}), or none was given. */
bool ir_shape_default_layout(const IrShape *s);
/* Deep copy into arena. Returns false when out of memory; dst is then a safe empty shape. */
bool ir_shape_copy(Arena *a, IrShape *dst, const IrShape *src);
/* Builds an array shape with the default (descending) layout. */
IrShape ir_shape_array(Arena *a, IrType t, int rank, const int64_t *dims);
IrShape ir_shape_scalar(IrType t);
/* Prints as HLO text, e.g. "f32[2048,4]{1,0}" or "(f32[], s32[2]{0})". with_layout=false omits
 * layouts. Returns the number of characters written (snprintf-like; buf may be NULL). */
int ir_shape_format(const IrShape *s, bool with_layout, char *buf, size_t n);
void ir_shape_print(FILE *f, const IrShape *s, bool with_layout);

/* ---------- source locations ---------- */

typedef struct {
  const char *file; /* arena-owned; NULL when unknown */
  int line, col;    /* 1-based; 0 when unknown */
} IrLoc;

/* ---------- attributes ---------- */

typedef enum {
  IR_ATTR_TEXT, /* value is HLO text, kept verbatim */
  IR_ATTR_COMP, /* value names computations: see comps */
} IrAttrKind;

typedef struct IrComputation IrComputation;

typedef struct {
  const char *key;      /* e.g. "dimensions" */
  IrAttrKind kind;
  const char *text;     /* IR_ATTR_TEXT: value text, e.g. "{0,1}" */
  int ncomps;           /* IR_ATTR_COMP: one computation (to_apply=%add) or a list ({%a, %b}) */
  IrComputation **comps;
  bool comps_braced;    /* IR_ATTR_COMP: printed as {%a, %b} */
} IrAttr;

/* ---------- literals ---------- */

typedef struct {
  /* HLO text of the literal as loaded or built, e.g. "0.5", "{1, 2}", "{...}", "(1, 2)". */
  const char *text;
  bool elided;       /* "{...}": the values are unknown */
  int64_t count;     /* number of decoded values (elements of the array) */
  double *values;    /* decoded values (float and int types), NULL when elided or tuple */
} IrLiteral;

/* ---------- instructions, computations, modules ---------- */

typedef struct IrInstr IrInstr;
typedef struct IrModule IrModule;

struct IrInstr {
  const char *name; /* unique in the module, without '%' */
  int id;           /* unique in the module, stable across clones */
  IrOpcode op;
  IrShape shape;
  IrInstr **operands;
  int noperands;
  IrInstr **users; /* maintained by the ir_* functions; distinct users, in XLA's order: appended when
                    * added; a removed user's place goes to the last one */
  int nusers, users_cap;
  IrComputation *parent;
  IrAttr *attrs;
  int nattrs, attrs_cap;
  IrLiteral *literal; /* constants */
  int64_t param_number; /* parameter(N) */
  /* The opcode as XLA printed it, when that is not the table's spelling: XLA's async syntax sugar
   * prints async-start/-update/-done wrapping OP as OP-start/-update/-done. NULL otherwise. */
  const char *op_text;
  /* For custom-call: custom_call_target is also kept as attr; for fusion: kind attr. */
  IrLoc loc;
  bool is_root;  /* mirror of parent->root == this */
  bool dead;     /* removed from its computation */
  int pos;       /* where it was last seen in parent->instrs: where ir_computation_index looks
                  * first (a hint only: inserts and removals before it move it a little) */
  void *aux;     /* scratch for a pass; never persists across passes */
  struct IrUserIndex *users_index; /* private to ir.c: where each user sits in `users`, for a value
                                    * with many users (XLA's Users keeps one above 16) */
};

struct IrComputation {
  const char *name;
  int id;
  IrModule *module;
  IrInstr **instrs; /* topological order */
  int ninstrs, instrs_cap;
  IrInstr *root;
  IrInstr **params; /* indexed by parameter number; nparams entries */
  int nparams;
  bool is_entry;
  /* Printing: whether the text had a signature "(a: f32[]) -> f32[]", and an `execution_thread`
   * or other trailing attributes kept verbatim. */
  bool has_signature;
  const char *trailing; /* text after the closing brace of the body, e.g. ", execution_thread=..." */
  IrInstr *fusion_instr; /* for a fused computation: the fusion instruction that calls it */
  bool async_wrapped;    /* made by the parser for XLA's async syntax sugar (OP-start): not printed */
  IrLoc loc;
};

struct IrModule {
  Arena arena;
  const char *name;
  const char *header_attrs; /* text after "HloModule NAME", e.g. ", entry_computation_layout={...}" */
  const char *prologue;     /* comments and blank lines between the header and the first
                               computation, kept verbatim; NULL when none */
  const char *epilogue;     /* FileNames/FunctionNames/FileLocations/StackFrames sections etc. */
  IrComputation **comps;    /* in printing order: callees before callers, entry last (as XLA) */
  int ncomps, comps_cap;
  IrComputation *entry;
  int next_id;
  const char *source_file;  /* where it was loaded from, or "<repl>" */
  struct IrNameIndex *names; /* name -> instruction id, private to ir.c */
  /* Private to ir.c and ir_clone.c: the module's instructions by id, by_cap entries (NULL where an
   * id is a computation's or names no instruction of this module). The name index holds ids, not
   * pointers, so a snapshot copies it as it is. */
  IrInstr **by_id;
  int by_cap;
  struct IrNameIndex *comp_names; /* name -> computation, private to ir.c */
  struct IrNameIndex *series;     /* name series -> next free number, private to ir.c */
  /* Sharing between snapshots (ir_module_snapshot), private to ir.c and ir_clone.c: `lender` is
   * this module's arena once a snapshot points into it (it outlives the module until the last
   * such snapshot is freed); `borrowed` are the arenas of earlier modules whose immutable parts
   * this one points into (each holds one reference). */
  struct IrLender *lender;
  struct IrLender **borrowed;
  int nborrowed;
};

/* Module lifetime. */
IrModule *ir_module_new(const char *name);
void ir_module_free(IrModule *m);
/* Deep copy: same names and ids, fresh arena. Returns NULL on allocation failure. */
IrModule *ir_module_clone(const IrModule *m);
/* A copy for the next stage of a pipeline: same names and ids, its own instructions,
 * computations and arrays (a pass may edit them), sharing m's immutable parts (names, texts,
 * shapes, literals: see the top of this file) instead of copying them. m may be freed before the
 * copy (its arena then lives on until the copy is freed too). A long chain of snapshots of
 * snapshots (more than IR_MAX_BORROWED) gets a deep copy, which starts a new chain. Returns NULL on
 * allocation failure. */
#define IR_MAX_BORROWED 48
IrModule *ir_module_snapshot(const IrModule *m);
/* The memory a module holds on its own: its arena and its name indexes (not what it shares with
 * the modules it was copied from, which they count). */
size_t ir_module_bytes(const IrModule *m);

/* The elementwise ops that are one C math library function (math.def, ir_math.c): the function's
 * name in double or single precision ("cbrt", "cbrtf"; NULL for another op), and op applied to x
 * with it (false for another op). */
const char *ir_math_function(IrOpcode op, bool single);
bool ir_math_eval(IrOpcode op, double x, bool single, double *out);

/* Clone with remap (ir_clone.c), for passes that copy instructions into another computation.
 * ir_remap_operands: x's operands for its copy: an operand in computation `from` at position p
 * (while copying, from's instructions carry p + 1 in aux) becomes map[p]; any other is kept. The
 * array is `small` (IR_REMAP_SMALL slots) when it fits, else fx_malloc'd; NULL when out of memory;
 * give it back with ir_remap_release. ir_instr_copy: a new instruction in dst named `name` with
 * i's opcode, shape, attributes, literal, source location and parameter number, on operands ops;
 * NULL when out of memory. */
#define IR_REMAP_SMALL 64
IrInstr **ir_remap_operands(const IrInstr *x, const IrComputation *from, IrInstr *const *map, IrInstr **small);
void ir_remap_release(IrInstr **ops, IrInstr **small);
IrInstr *ir_instr_copy(IrComputation *dst, const IrInstr *i, IrInstr **ops, const char *name);

/* Gives the module's computations and instructions new ids: computation by computation (in
 * m->comps order), each computation's id, then its instructions in increasing key[old id] (ties
 * and instructions whose has[old id] is false after the keyed ones, in their current order).
 * For a module loaded with XLA's own unique ids (hlo_proto_apply_ids): XLA breaks ties by them
 * (priority-fusion's queue), and new instructions (next_id onwards) come after, as in XLA.
 * Only for a module no snapshot shares yet (right after loading). False when out of memory
 * (the ids are then unchanged). */
bool ir_module_renumber(IrModule *m, const int64_t *key, const bool *has);
IrComputation *ir_computation_new(IrModule *m, const char *name);
IrComputation *ir_module_find_computation(const IrModule *m, const char *name);
/* Adds c (already in m->comps) to the computation-name index; false when out of memory. */
bool ir_module_index_computation(IrModule *m, IrComputation *c);
/* For code that drops c from m->comps itself: c is no longer found by name (the name stays
 * reserved). */
void ir_module_forget_computation(IrModule *m, IrComputation *c);
/* The first free name of the series base, base.1, base.2, ... among instructions (or, with
 * computation=true, computations). Amortized O(1): the module remembers where each series is. */
const char *ir_module_series_name(IrModule *m, const char *base, bool computation);
/* Appends an instruction named `name` (made unique if taken; NULL picks "<opcode>.<id>") to c.
 * Operands are linked (users updated).  Shape is deep-copied. */
IrInstr *ir_instr_new(IrComputation *c, IrOpcode op, const IrShape *shape, IrInstr *const *operands,
                      int noperands, const char *name);
/* Same, inserted just before `before` in c's order (before==NULL appends). */
IrInstr *ir_instr_new_before(IrComputation *c, IrInstr *before, IrOpcode op, const IrShape *shape,
                             IrInstr *const *operands, int noperands, const char *name);
IrInstr *ir_module_find_instr(const IrModule *m, const char *name); /* searches all computations */
IrInstr *ir_computation_find_instr(const IrComputation *c, const char *name);
/* A name not used in the module, derived from base ("add" -> "add.7"). Arena-owned. */
const char *ir_module_unique_name(IrModule *m, const char *base);
/* Gives i a new name (when no live instruction has it). Returns false when the name is taken or
 * memory runs out; i keeps its name then. */
bool ir_instr_rename(IrInstr *i, const char *name);

/* Graph edits. */
void ir_set_operand(IrInstr *i, int idx, IrInstr *new_operand);
void ir_replace_all_uses(IrInstr *old, IrInstr *repl);  /* also moves root */
void ir_set_root(IrComputation *c, IrInstr *root);
/* Makes params[0..n) c's parameters in that order (parameter numbers 0, 1, ...); false when out
 * of memory (c unchanged). */
bool ir_computation_set_params(IrComputation *c, IrInstr *const *params, int n);
/* Removes i from its computation (it must have no users); unlinks from its operands. */
void ir_instr_remove(IrInstr *i);
/* Removes instructions that have no users and are not the root or parameters, transitively. */
int ir_computation_remove_dead(IrComputation *c);
/* i's position in c->instrs, -1 when it is not there. Searches outwards from where the last
 * search in c found one, so walking or editing neighbours costs little. */
int ir_computation_index(const IrComputation *c, const IrInstr *i);
/* Re-sorts c->instrs topologically (stable w.r.t. current order where possible). */
void ir_computation_sort(IrComputation *c);
/* The same order ir_computation_sort gives, in one linear pass, for a computation that is in order
 * but for its last instruction (a new instruction ir_instr_new appended that earlier ones now use). */
void ir_computation_sort_last(IrComputation *c);
/* XLA's HloComputation::MakeInstructionPostOrder: from each instruction without users (c->instrs
 * order), a depth-first walk with an explicit stack that pushes the operands last to first, so the
 * first operand is visited first; an instruction is written when it is popped the second time.
 * Fills out (room for c->ninstrs) and returns the count, or -1 when out of memory. */
int ir_computation_post_order(const IrComputation *c, IrInstr **out);
/* Removes computations no longer called from the entry (transitively). Returns count removed. */
int ir_module_remove_unreachable(IrModule *m);

/* Attributes. */
const IrAttr *ir_attr_get(const IrInstr *i, const char *key);
const char *ir_attr_text(const IrInstr *i, const char *key); /* NULL when absent */
/* A custom call's target without its quotes: the text from after the opening quote, *len
 * characters long. NULL when i has none. */
const char *ir_custom_call_target(const IrInstr *i, size_t *len);
void ir_attr_set_text(IrInstr *i, const char *key, const char *text);
/* Sets key to the integer v in decimal (a get-tuple-element's index=2). */
void ir_attr_set_int(IrInstr *i, const char *key, int64_t v);
void ir_attr_set_comp(IrInstr *i, const char *key, IrComputation *comp);
void ir_attr_set_comps(IrInstr *i, const char *key, IrComputation **comps, int n, bool braced);
void ir_attr_remove(IrInstr *i, const char *key);
/* Parses "{0,1,2}" style lists. Returns count (>=0) or -1 when absent/malformed. */
int ir_attr_dims(const IrInstr *i, const char *key, int64_t *out, int max);
/* The same for a list of at most IR_MAX_RANK entries read where absent means none: 0 then. */
int ir_attr_dims_or_empty(const IrInstr *i, const char *key, int64_t *out);
/* Whether x is one of v[0..n) (a dimension in a dimension list). */
bool ir_dims_contain(const int64_t *v, int n, int64_t x);
/* Sorts a dimension list in place, ascending (a few entries: insertion sort). */
void ir_dims_sort(int64_t *v, int n);
void ir_attr_set_dims(IrInstr *i, const char *key, const int64_t *v, int n);
/* Parses a plain integer attribute (index=3, iota_dimension=0). */
bool ir_attr_int(const IrInstr *i, const char *key, int64_t *out);
/* A gather's dimension numbers (XLA's GatherDimensionNumbers) as its attributes give them (a list
 * that is absent or malformed is empty; index_vector_dim defaults to the indices' rank), with the
 * two lists every gather derives from them: batch, the output dimensions not in offset_dims (they
 * index start_indices), and window, the operand dimensions neither collapsed nor batching (the
 * offset dimensions walk them, in order). No check: shape inference has made them consistent
 * where the module came through it, and each reader checks what it relies on. */
typedef struct {
  int64_t offset[IR_MAX_RANK], collapsed[IR_MAX_RANK], start_map[IR_MAX_RANK], slice_sizes[IR_MAX_RANK];
  int64_t operand_batching[IR_MAX_RANK], indices_batching[IR_MAX_RANK], batch[IR_MAX_RANK], window[IR_MAX_RANK];
  int noffset, ncollapsed, nstart_map, nslice_sizes, noperand_batching, nindices_batching, nbatch, nwindow;
  int64_t index_vector_dim;
} IrGatherDims;
void ir_gather_dims(const IrInstr *gather, IrGatherDims *g);
/* The single computation of an IR_ATTR_COMP attribute (to_apply, calls, body, condition). */
IrComputation *ir_attr_comp(const IrInstr *i, const char *key);

/* Slice attribute: slice={[0:2], [1:5:2]}. Returns rank or -1. */
int ir_attr_slice(const IrInstr *i, int64_t *start, int64_t *limit, int64_t *stride, int max);
/* Sets it: slice={[start:limit], ...}, with :stride where a stride (NULL: none) is not 1. */
void ir_attr_set_slice(IrInstr *i, const int64_t *start, const int64_t *limit, const int64_t *stride, int n);
/* A pad's padding=0_1x2_3_1 (low_high[_interior] per dimension; padding_config= as some writers
 * name it): returns the rank and fills lo, hi and interior, or -1 when absent or malformed. */
int ir_attr_padding(const IrInstr *i, int64_t *lo, int64_t *hi, int64_t *interior, int max);
/* Sets padding= from lo, hi and interior (NULL: none) for n dimensions. */
void ir_attr_set_padding(IrInstr *i, const int64_t *lo, const int64_t *hi, const int64_t *interior, int n);
/* Comparison direction for compare: "EQ","NE","LT","LE","GT","GE"; NULL when absent. */
const char *ir_compare_direction(const IrInstr *i);

/* Dot dimension numbers. */
typedef struct {
  int nlhs_batch, nrhs_batch, nlhs_contract, nrhs_contract;
  int64_t lhs_batch[IR_MAX_RANK], rhs_batch[IR_MAX_RANK];
  int64_t lhs_contract[IR_MAX_RANK], rhs_contract[IR_MAX_RANK];
} IrDotDims;
bool ir_dot_dims(const IrInstr *i, IrDotDims *out);

/* Window attribute of reduce-window, select-and-scatter and convolution:
 * window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}.
 * Fields the text leaves out take their defaults: stride and dilations 1, pad 0, no reversal. */
typedef struct {
  int rank;                 /* window dimensions */
  bool has_size;            /* the text gave size= */
  int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK];
  int64_t pad_lo[IR_MAX_RANK], pad_hi[IR_MAX_RANK];
  int64_t lhs_dilate[IR_MAX_RANK], rhs_dilate[IR_MAX_RANK]; /* base (input) and window dilation */
  bool reversal[IR_MAX_RANK];
} IrWindow;
/* Parses i's window= for `rank` dimensions (rank < 0: as many as its size= lists; no attribute is
 * then a rank-0 window). Returns false for an absent (rank > 0) or malformed window, with a
 * sentence in why[n] (without the instruction's name); sizes may be 0, the rest must be positive. */
bool ir_attr_window(const IrInstr *i, int rank, IrWindow *w, char *why, size_t n);
/* Sets window= from w as XLA prints it: size always, each other field only when one of its
 * entries is not the default. */
void ir_attr_set_window(IrInstr *i, const IrWindow *w);
/* Whether dimension d of w is trivial: size 1, stride 1, no padding, no dilation (XLA's
 * window_util::IsTrivialWindowDimension). */
bool ir_window_dim_trivial(const IrWindow *w, int d);
/* Makes dimension d of w trivial (and not reversed). */
void ir_window_set_trivial(IrWindow *w, int d);
/* Whether i is a gather, with a non-empty result, that XLA's shape rules take but no backend here
 * computes: one that collapses (or batches) a dimension of slice size 0, whose every element would
 * read from an empty slice, or one whose batching dimension is also in start_index_map. Then
 * why[n] says which (without the instruction's name), for `run`'s refusal. */
bool ir_gather_uncomputed(const IrInstr *i, char *why, size_t n);

/* Convolution dimension numbers from dim_labels=b01f_01io->b01f: where batch, feature and each
 * spatial dimension sit in the input (lhs), kernel (rhs) and output. */
typedef struct {
  int rank;                 /* of input, kernel and output (always equal) */
  int nspatial;             /* rank - 2 */
  int in_batch, in_feature, in_spatial[IR_MAX_RANK];
  int k_in, k_out, k_spatial[IR_MAX_RANK];
  int out_batch, out_feature, out_spatial[IR_MAX_RANK];
} IrConvDims;
/* Parses i's dim_labels, checked against the ranks of i's two operands (when it has them).
 * Returns false with a sentence in why[n] when absent, malformed or of the wrong ranks. */
bool ir_conv_dims(const IrInstr *i, IrConvDims *d, char *why, size_t n);

/* Every computation called by i (all IR_ATTR_COMP attributes, in order). */
int ir_called_computations(const IrInstr *i, IrComputation **out, int max);

/* Literals. */
IrLiteral *ir_literal_new(Arena *a, const double *values, int64_t count, IrType t, const IrShape *shape);
/* The literal's values as exact 64-bit integers, read again from its text (the decoded doubles
   hold only 53 bits, so s64/u64 values such as 18446744073709551615 need this). Fills out[0..n) and
   returns how many values the text has, or -1 when the text is not a list of integers. */
int64_t ir_literal_ints(const IrLiteral *l, bool is_unsigned, int64_t *out, int64_t n);
/* Scalar convenience. */
IrInstr *ir_constant_scalar(IrComputation *c, IrType t, double v, const char *name);

/* Rebuilds m's name index from its live instructions, keeping every name that `reserved_from`
 * (may be NULL) ever used reserved, so a name is never reused for another value. With
 * share_names (for ir_module_snapshot, where m keeps reserved_from's memory alive) the reserved
 * names are not copied. */
bool ir_module_reindex(IrModule *m, const IrModule *reserved_from);
bool ir_module_reindex_from(IrModule *m, const IrModule *reserved_from, bool share_names);

/* Misc queries. */
bool ir_instr_is_fusion(const IrInstr *i);
IrComputation *ir_fused_computation(const IrInstr *i); /* calls= of a fusion */
const char *ir_fusion_kind(const IrInstr *i);           /* "kLoop", "kInput", "kOutput", ... */
int ir_module_instr_count(const IrModule *m);           /* all live instructions */

/* Helpers for readers that walk the module in order: post-order over computations reachable
 * from the entry (callees first). Returns count. */
int ir_module_postorder(const IrModule *m, IrComputation **out, int max);

/* The rest of the IR's front door: pointer maps over instructions and the verifier. */
#include "ptrmap.h"
#include "verify.h"

#endif

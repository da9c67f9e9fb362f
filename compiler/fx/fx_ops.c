/* fx_ops.c — lowering .fx expressions: operators with numpy broadcasting, compile-time scalar
 * folding, indexing and slicing, and the builtin functions (elementwise math, select, cast,
 * concat/stack, reductions, matmul, conv2d, rand, reshape/transpose/broadcast, iota).
 *
 * Flow: fx_lower.c calls fx_eval for each statement's expression; the result is a value (see
 * fx_lower.h). Instructions are appended to the frame being built, named by the statement's
 * variable when they produce its value, and XLA-style (multiply.7) otherwise. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "fx_lower.h"

/* ---------- values ---------- */

static void scalar_int(FxValue *v, FxPos pos, int64_t i) {
  memset(v, 0, sizeof *v);
  v->kind = V_SCALAR;
  v->pos = pos;
  v->st = IR_INVALID;
  v->is_int = true;
  v->i = i;
  v->f = (double)i;
}

static void scalar_float(FxValue *v, FxPos pos, double f) {
  memset(v, 0, sizeof *v);
  v->kind = V_SCALAR;
  v->pos = pos;
  v->st = IR_INVALID;
  v->f = f;
}

static void tensor_val(FxValue *v, FxPos pos, IrInstr *t) {
  memset(v, 0, sizeof *v);
  v->kind = V_TENSOR;
  v->pos = pos;
  v->t = t;
}

static const char *vdesc(const FxValue *v, char *buf, size_t n) {
  switch (v->kind) {
  case V_TENSOR: return fx_shape_str(&v->t->shape, buf, n);
  case V_SCALAR:
    if (v->st == IR_INVALID && v->is_int) snprintf(buf, n, "the integer %" PRId64, v->i);
    else if (v->st == IR_INVALID) snprintf(buf, n, "the number %g", v->f);
    else if (v->cname) snprintf(buf, n, "%s[] (const %s)", ir_type_name(v->st), v->cname);
    else snprintf(buf, n, "%s[]", ir_type_name(v->st));
    return buf;
  case V_TYPE: return "a type";
  case V_STRING: return "a string";
  case V_LIST: return "a list";
  case V_MULTI: return "several values";
  case V_NONE: break;
  }
  return "nothing";
}

bool fx_check_shape(FxLower *L, FxPos pos, IrType t, int rank, const int64_t *dims) {
  if (rank > IR_MAX_RANK) return fx_err_at(L->err, pos, "too many dimensions (%d; the limit is %d)", rank, IR_MAX_RANK);
  int64_t n = 1;
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0) return fx_err_at(L->err, pos, "dimension %d is negative (%" PRId64 ")", k, dims[k]);
    if (dims[k] > 0 && n > FX_MAX_ELEMENTS / dims[k]) {
      char buf[256];
      size_t len = (size_t)snprintf(buf, sizeof buf, "%s[", ir_type_name(t));
      for (int j = 0; j < rank && len < sizeof buf - 24; j++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, j ? ",%" PRId64 : "%" PRId64, dims[j]);
      snprintf(buf + len, sizeof buf - len, "]");
      return fx_err_at(L->err, pos, "shape %s is too large (more than %" PRId64 " elements)", buf, FX_MAX_ELEMENTS);
    }
    n *= dims[k];
  }
  return true;
}

IrInstr *fx_const(FxLower *L, IrType t, double v, const char *name) {
  IrShape s = ir_shape_scalar(t);
  IrInstr *c = fx_emit(L, IR_OP_CONSTANT, &s, NULL, 0, name);
  if (!c) return NULL;
  if (!(c->literal = ir_literal_new(&L->m->arena, &v, 1, t, &s))) {
    fx_oom(L);
    return NULL;
  }
  return c;
}

/* Whether v is a value of integer type t (no silent wraparound of literals). */
static bool int_fits(IrType t, double v) {
  int bits = ir_type_bytes(t) * 8;
  if (t == IR_S4 || t == IR_U4) bits = 4;
  if (ir_type_is_signed(t)) {
    double lim = ldexp(1.0, bits - 1);
    return v >= -lim && v < lim;
  }
  return v >= 0 && v < ldexp(1.0, bits);
}

static bool float_type(IrType t) { return ir_type_is_float(t); }
static bool numeric_type(IrType t) { return ir_type_is_float(t) || ir_type_is_int(t); }

/* Default element type of a value (weak literals: s32 / f32). */
static IrType vtype(const FxValue *v) {
  if (v->kind == V_TENSOR) return v->t->shape.type;
  if (v->kind == V_SCALAR) return v->st != IR_INVALID ? v->st : v->is_int ? IR_S32 : IR_F32;
  return IR_INVALID;
}

IrInstr *fx_tensor(FxLower *L, const FxValue *v, IrType t, const char *name) {
  if (v->kind == V_TENSOR) return fx_use(L, v->t);
  if (v->kind != V_SCALAR) {
    char b[64];
    fx_err_at(L->err, v->pos, "expected an array or a number, got %s", vdesc(v, b, sizeof b));
    return NULL;
  }
  if (t == IR_INVALID) t = vtype(v);
  if (ir_type_is_int(t) && !int_fits(t, v->is_int ? (double)v->i : v->f)) {
    char num[48];
    if (v->is_int) snprintf(num, sizeof num, "%" PRId64, v->i);
    else snprintf(num, sizeof num, "%.17g", v->f);
    fx_err_at(L->err, v->pos, "the number %s does not fit in %s", num, ir_type_name(t));
    return NULL;
  }
  if (v->cname && v->st == t) {
    /* One constant per named const per computation. */
    for (int k = 0; k < L->nconsts; k++) {
      FxConstCache *c = &L->consts[k];
      if (c->comp == L->frame->comp && c->type == t && strcmp(c->name, v->cname) == 0) return c->instr;
    }
    IrInstr *c = fx_const(L, t, v->f, v->cname);
    if (!c) return NULL;
    if (arena_grow(&L->m->arena, (void **)&L->consts, &L->consts_cap, L->nconsts + 1, sizeof(FxConstCache))) {
      fx_oom(L);
      return NULL;
    }
    FxConstCache *e = &L->consts[L->nconsts++];
    e->comp = L->frame->comp;
    e->name = v->cname;
    e->type = t;
    e->instr = c;
    return c;
  }
  double val = v->is_int ? (double)v->i : v->f;
  return fx_const(L, t, val, name);
}

/* ---------- broadcasting ---------- */

static bool broadcast_shapes(FxLower *L, FxPos pos, const IrShape *a, const IrShape *b, int *rank, int64_t *dims) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int k = 0; k < r; k++) {
    int ia = a->rank - r + k, ib = b->rank - r + k;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char s1[128], s2[128];
      return fx_err_at(L->err, pos, "shapes %s and %s do not broadcast (dimension %" PRId64 " vs %" PRId64 ")",
                       fx_shape_str(a, s1, sizeof s1), fx_shape_str(b, s2, sizeof s2), da, db);
    }
    dims[k] = da == 1 ? db : da;
  }
  *rank = r;
  return true;
}

IrInstr *fx_broadcast_to(FxLower *L, IrInstr *x, int rank, const int64_t *dims, const char *name) {
  const IrShape *s = &x->shape;
  if (s->rank == rank) {
    bool same = true;
    for (int k = 0; k < rank; k++) same = same && s->dims[k] == dims[k];
    if (same) return x;
  }
  /* Keep the operand's dimensions that map 1:1; drop size-1 dimensions that expand. */
  int64_t keep_dims[IR_MAX_RANK] = {0}, map[IR_MAX_RANK] = {0};
  int nkeep = 0;
  for (int k = 0; k < s->rank; k++) {
    int out = rank - s->rank + k;
    if (s->dims[k] == dims[out]) {
      keep_dims[nkeep] = s->dims[k];
      map[nkeep++] = out;
    }
  }
  if (nkeep != s->rank) {
    IrShape rs = fx_shape(L, s->type, nkeep, keep_dims);
    if (nkeep == 0) rs = ir_shape_scalar(s->type);
    x = fx_emit(L, IR_OP_RESHAPE, &rs, &x, 1, NULL);
    if (!x) return NULL;
  }
  IrShape bs = fx_shape(L, s->type, rank, dims);
  IrInstr *b = fx_emit(L, IR_OP_BROADCAST, &bs, &x, 1, name);
  if (b) ir_attr_set_dims(b, "dimensions", map, nkeep);
  return b;
}

/* ---------- compile-time scalars ---------- */

static bool fold_int(FxLower *L, FxPos pos, int op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
  case T_PLUS:
    if (__builtin_add_overflow(a, b, r)) goto overflow;
    return true;
  case T_MINUS:
    if (__builtin_sub_overflow(a, b, r)) goto overflow;
    return true;
  case T_STAR:
    if (__builtin_mul_overflow(a, b, r)) goto overflow;
    return true;
  case T_SLASH:
  case T_PERCENT:
    if (b == 0) return fx_err_at(L->err, pos, "division by zero");
    if (a == INT64_MIN && b == -1) goto overflow;
    *r = op == T_SLASH ? a / b : a % b;
    return true;
  case T_POW: {
    if (b < 0) return fx_err_at(L->err, pos, "negative integer power %" PRId64 " ** %" PRId64, a, b);
    int64_t acc = 1;
    for (int64_t k = 0; k < b; k++) {
      if (__builtin_mul_overflow(acc, a, &acc)) goto overflow;
      if (acc == 0 || acc == 1) break;
    }
    if (acc == 1 && a == -1 && (b % 2)) acc = -1;
    *r = acc;
    return true;
  }
  case T_AMP: *r = a & b; return true;
  case T_BAR: *r = a | b; return true;
  }
  return fx_err_at(L->err, pos, "internal error: bad integer operator");
overflow:
  return fx_err_at(L->err, pos, "integer overflow: %" PRId64 " %s %" PRId64 " does not fit in 64 bits", a,
                   op == T_PLUS ? "+" : op == T_MINUS ? "-" : op == T_STAR ? "*" : op == T_SLASH ? "/" : "**", b);
}

static bool is_cmp_op(int op) { return op == T_LT || op == T_LE || op == T_GT || op == T_GE || op == T_EQEQ || op == T_NE; }

static const char *op_text(int op) {
  switch (op) {
  case T_PLUS: return "+";
  case T_MINUS: return "-";
  case T_STAR: return "*";
  case T_SLASH: return "/";
  case T_PERCENT: return "%";
  case T_POW: return "**";
  case T_LT: return "<";
  case T_LE: return "<=";
  case T_GT: return ">";
  case T_GE: return ">=";
  case T_EQEQ: return "==";
  case T_NE: return "!=";
  case T_AMP: return "&";
  case T_BAR: return "|";
  }
  return "?";
}

static bool cmp_result(int op, double a, double b) {
  switch (op) {
  case T_LT: return a < b;
  case T_LE: return a <= b;
  case T_GT: return a > b;
  case T_GE: return a >= b;
  case T_EQEQ: return a == b;
  default: return a != b;
  }
}

/* Checks that op applies to element type t. */
static bool op_type_ok(FxLower *L, FxPos pos, int op, IrType t) {
  if (op == T_AMP || op == T_BAR) {
    if (t != IR_PRED && !ir_type_is_int(t))
      return fx_err_at(L->err, pos, "'%s' needs pred or integer values, got %s", op_text(op), ir_type_name(t));
    return true;
  }
  if (is_cmp_op(op)) return true;
  if (t == IR_PRED) return fx_err_at(L->err, pos, "'%s' is not defined on pred values (use & | ~)", op_text(op));
  if (ir_type_is_complex(t)) return fx_err_at(L->err, pos, "complex values are not supported");
  return true;
}

/* The common element type of two operands, or IR_INVALID for two weak literals. */
static bool unify(FxLower *L, FxPos pos, const FxValue *a, const FxValue *b, IrType *out) {
  IrType ta = a->kind == V_TENSOR ? a->t->shape.type : a->st;
  IrType tb = b->kind == V_TENSOR ? b->t->shape.type : b->st;
  if (ta != IR_INVALID && tb != IR_INVALID && ta != tb) {
    char s1[128], s2[128];
    return fx_err_at(L->err, pos, "type mismatch: %s and %s (convert one with cast(x, %s))", vdesc(a, s1, sizeof s1),
                     vdesc(b, s2, sizeof s2), ir_type_name(ta));
  }
  IrType t = ta != IR_INVALID ? ta : tb;
  const FxValue *weak = ta == IR_INVALID ? a : tb == IR_INVALID ? b : NULL;
  if (t != IR_INVALID && weak && weak->kind == V_SCALAR) {
    if (!weak->is_int && !float_type(t))
      return fx_err_at(L->err, weak->pos, "the number %g cannot be used with %s values", weak->f, ir_type_name(t));
    if (weak->is_int && t == IR_PRED)
      return fx_err_at(L->err, weak->pos, "the integer %" PRId64 " cannot be used with pred values (use true or false)", weak->i);
    if (weak->is_int && ir_type_is_int(t) && !ir_type_is_signed(t) && weak->i < 0)
      return fx_err_at(L->err, weak->pos, "the integer %" PRId64 " cannot be used with unsigned %s values", weak->i, ir_type_name(t));
  }
  *out = t;
  return true;
}

static bool fold_binary(FxLower *L, FxPos pos, int op, const FxValue *a, const FxValue *b, FxValue *out) {
  IrType t;
  if (!unify(L, pos, a, b, &t)) return false;
  if (t != IR_INVALID && !op_type_ok(L, pos, op, t)) return false;
  bool ints = a->is_int && b->is_int;
  if (t == IR_INVALID && !ints && (op == T_AMP || op == T_BAR))
    return fx_err_at(L->err, pos, "'%s' needs pred or integer values", op_text(op));
  memset(out, 0, sizeof *out);
  out->kind = V_SCALAR;
  out->pos = pos;
  if (is_cmp_op(op)) {
    out->st = IR_PRED;
    out->is_int = true;
    out->i = ints ? (op == T_LT ? a->i < b->i : op == T_LE ? a->i <= b->i : op == T_GT ? a->i > b->i : op == T_GE ? a->i >= b->i
                     : op == T_EQEQ ? a->i == b->i : a->i != b->i)
                  : cmp_result(op, a->f, b->f);
    out->f = (double)out->i;
    return true;
  }
  out->st = t;
  if (ints) {
    out->is_int = true;
    if (!fold_int(L, pos, op, a->i, b->i, &out->i)) return false;
    out->f = (double)out->i;
    return true;
  }
  double x = a->f, y = b->f;
  switch (op) {
  case T_PLUS: out->f = x + y; break;
  case T_MINUS: out->f = x - y; break;
  case T_STAR: out->f = x * y; break;
  case T_SLASH: out->f = x / y; break;
  case T_PERCENT: out->f = fmod(x, y); break;
  case T_POW: out->f = pow(x, y); break;
  default: return fx_err_at(L->err, pos, "'%s' needs pred or integer values", op_text(op));
  }
  return true;
}

/* ---------- elementwise ---------- */

static const char *cmp_dir(int op) {
  switch (op) {
  case T_LT: return "LT";
  case T_LE: return "LE";
  case T_GT: return "GT";
  case T_GE: return "GE";
  case T_EQEQ: return "EQ";
  default: return "NE";
  }
}

/* Lowers an elementwise op over n values (tensors or scalars) with numpy broadcasting. All
 * operands get element type t (already unified); the result has type rt. */
static IrInstr *elementwise(FxLower *L, FxPos pos, IrOpcode op, FxValue *vals, int n, IrType t, IrType rt, const char *name) {
  int rank = 0;
  int64_t dims[IR_MAX_RANK];
  IrShape acc = ir_shape_scalar(t);
  for (int k = 0; k < n; k++) {
    if (vals[k].kind != V_TENSOR) continue;
    int r = 0;
    int64_t d[IR_MAX_RANK];
    if (!broadcast_shapes(L, pos, &acc, &vals[k].t->shape, &r, d)) return NULL;
    memcpy(dims, d, sizeof(int64_t) * (size_t)r);
    rank = r;
    acc = fx_shape(L, t, rank, dims);
  }
  if (!fx_check_shape(L, pos, rt, rank, dims)) return NULL;
  IrInstr *ops[3];
  for (int k = 0; k < n; k++) {
    IrType want = vals[k].kind == V_SCALAR && vals[k].st == IR_PRED ? IR_PRED : t;
    if (vals[k].kind == V_TENSOR) want = vals[k].t->shape.type;
    IrInstr *x = fx_tensor(L, &vals[k], want, NULL);
    if (!x) return NULL;
    if (!(ops[k] = fx_broadcast_to(L, x, rank, dims, NULL))) return NULL;
  }
  IrShape rs = rank ? fx_shape(L, rt, rank, dims) : ir_shape_scalar(rt);
  return fx_emit(L, op, &rs, ops, n, name);
}

static IrOpcode binop_code(int op) {
  switch (op) {
  case T_PLUS: return IR_OP_ADD;
  case T_MINUS: return IR_OP_SUBTRACT;
  case T_STAR: return IR_OP_MULTIPLY;
  case T_SLASH: return IR_OP_DIVIDE;
  case T_PERCENT: return IR_OP_REMAINDER;
  case T_POW: return IR_OP_POWER;
  case T_AMP: return IR_OP_AND;
  case T_BAR: return IR_OP_OR;
  default: return IR_OP_COMPARE;
  }
}

/* x ** k for an integer k: multiplies by repeated squaring, as JAX's integer_pow lowers
 * (x^5 = x * (x^2)^2: three multiplies), and a divide for negative k. */
static IrInstr *pow_pos(FxLower *L, IrInstr *x, int64_t k, const char *name) {
  if (k == 1) return x;
  IrInstr *ops[2];
  if (k % 2 == 0) {
    IrInstr *h = pow_pos(L, x, k / 2, NULL);
    if (!h) return NULL;
    ops[0] = ops[1] = h;
  } else {
    IrInstr *r = pow_pos(L, x, k - 1, NULL);
    if (!r) return NULL;
    ops[0] = x;
    ops[1] = r;
  }
  return fx_emit(L, IR_OP_MULTIPLY, &x->shape, ops, 2, name);
}

static IrInstr *integer_pow(FxLower *L, IrInstr *x, int64_t k, const char *name) {
  if (k == 0) {
    IrInstr *one = fx_const(L, x->shape.type, 1, NULL);
    return one ? fx_broadcast_to(L, one, x->shape.rank, x->shape.dims, name) : NULL;
  }
  if (k > (1 << 20) || k < -(1 << 20)) {
    fx_err_at(L->err, L->pos, "integer power %" PRId64 " is too large", k);
    return NULL;
  }
  if (k > 0) return pow_pos(L, x, k, name);
  IrInstr *acc = pow_pos(L, x, -k, NULL);
  IrInstr *one = acc ? fx_const(L, x->shape.type, 1, NULL) : NULL;
  IrInstr *b1 = one ? fx_broadcast_to(L, one, x->shape.rank, x->shape.dims, NULL) : NULL;
  if (!b1) return NULL;
  IrInstr *ops[2] = {b1, acc};
  return fx_emit(L, IR_OP_DIVIDE, &x->shape, ops, 2, name);
}

/* a OP b, both operands evaluated. */
static bool combine_binary(FxLower *L, const FxExpr *e, FxValue a, FxValue b, const char *hint, FxValue *out) {
  for (int k = 0; k < 2; k++) {
    FxValue *v = k ? &b : &a;
    if (v->kind == V_MULTI)
      return fx_err_at(L->err, v->pos, "this call returns %d values; assign them first (a, b = ...)", v->nitems);
    if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
      char buf[64];
      return fx_err_at(L->err, v->pos, "'%s' needs arrays or numbers, got %s", op_text(e->op), vdesc(v, buf, sizeof buf));
    }
  }
  if (a.kind == V_SCALAR && b.kind == V_SCALAR) return fold_binary(L, e->pos, e->op, &a, &b, out);
  /* x ** integer: multiplies. */
  if (e->op == T_POW && a.kind == V_TENSOR && b.kind == V_SCALAR && b.is_int && b.st == IR_INVALID) {
    if (!op_type_ok(L, e->pos, e->op, a.t->shape.type)) return false;
    IrInstr *r = integer_pow(L, fx_use(L, a.t), b.i, hint);
    if (!r) return false;
    tensor_val(out, e->pos, r);
    return true;
  }
  IrType t;
  if (!unify(L, e->pos, &a, &b, &t)) return false;
  if (!op_type_ok(L, e->pos, e->op, t)) return false;
  FxValue vals[2] = {a, b};
  IrType rt = is_cmp_op(e->op) ? IR_PRED : t;
  IrInstr *r = elementwise(L, e->pos, binop_code(e->op), vals, 2, t, rt, hint);
  if (!r) return false;
  if (is_cmp_op(e->op)) ir_attr_set_text(r, "direction", cmp_dir(e->op));
  tensor_val(out, e->pos, r);
  return true;
}

/* Binary operators. The parser builds left-associative chains (x + x + ... + x) as a left spine
 * as long as the line, with no nesting limit; walking it recursively overflowed the stack at a
 * few thousand terms. So the spine is walked with a loop: find its leftmost operand, then combine
 * upwards, each node's right operand (bounded by the parser's nesting limit) evaluated in turn.
 * Only the outermost node gets the name hint, as before. */
static bool lower_binary(FxLower *L, const FxExpr *e, const char *hint, FxValue *out) {
  int n = 0;
  for (const FxExpr *x = e; x->kind == E_BINARY; x = x->lhs) n++;
  const FxExpr **spine = fx_malloc(sizeof *spine * (size_t)n);
  if (!spine) return fx_oom(L);
  int k = n;
  for (const FxExpr *x = e; x->kind == E_BINARY; x = x->lhs) spine[--k] = x; /* innermost first */
  FxValue acc, b;
  bool ok = fx_eval(L, spine[0]->lhs, NULL, &acc);
  for (k = 0; ok && k < n; k++) {
    const FxExpr *x = spine[k];
    ok = fx_eval(L, x->rhs, NULL, &b) && combine_binary(L, x, acc, b, k == n - 1 ? hint : NULL, &acc);
  }
  fx_free(spine);
  if (ok) *out = acc;
  return ok;
}

static bool lower_unary(FxLower *L, const FxExpr *e, const char *hint, FxValue *out) {
  FxValue a;
  if (!fx_eval(L, e->lhs, NULL, &a)) return false;
  if (a.kind == V_SCALAR) {
    *out = a;
    out->pos = e->pos;
    out->cname = NULL;
    if (e->op == T_MINUS) {
      if (a.st == IR_PRED) return fx_err_at(L->err, e->pos, "'-' is not defined on pred values (use ~)");
      if (a.is_int) {
        if (a.i == INT64_MIN) return fx_err_at(L->err, e->pos, "integer overflow: -(%" PRId64 ")", a.i);
        out->i = -a.i;
      }
      out->f = -a.f;
      return true;
    }
    if (a.st == IR_PRED) out->i = !a.i;
    else if (a.is_int) out->i = ~a.i;
    else return fx_err_at(L->err, e->pos, "'~' needs pred or integer values, got the number %g", a.f);
    out->f = (double)out->i;
    return true;
  }
  if (a.kind != V_TENSOR) {
    char buf[64];
    return fx_err_at(L->err, e->pos, "'%s' needs an array or a number, got %s", e->op == T_MINUS ? "-" : "~", vdesc(&a, buf, sizeof buf));
  }
  IrType t = a.t->shape.type;
  if (e->op == T_MINUS && t == IR_PRED) return fx_err_at(L->err, e->pos, "'-' is not defined on pred values (use ~)");
  if (e->op == T_TILDE && t != IR_PRED && !ir_type_is_int(t))
    return fx_err_at(L->err, e->pos, "'~' needs pred or integer values, got %s", ir_type_name(t));
  IrInstr *x = fx_use(L, a.t);
  IrInstr *r = x ? fx_emit(L, e->op == T_MINUS ? IR_OP_NEGATE : IR_OP_NOT, &x->shape, &x, 1, hint) : NULL;
  if (!r) return false;
  tensor_val(out, e->pos, r);
  return true;
}

/* ---------- indexing ---------- */

static bool value_index(FxLower *L, const FxValue *v, int64_t *out) {
  if (v->kind == V_SCALAR && v->is_int && v->st != IR_PRED) {
    *out = v->i;
    return true;
  }
  char buf[64];
  return fx_err_at(L->err, v->pos, "an index must be an integer (a literal, a let, or a rank-0 integer array), got %s",
                   vdesc(v, buf, sizeof buf));
}

static bool lower_index(FxLower *L, const FxExpr *e, const char *hint, FxValue *out) {
  FxValue base;
  if (!fx_eval(L, e->lhs, NULL, &base)) return false;
  if (base.kind != V_TENSOR) {
    char buf[64];
    return fx_err_at(L->err, e->pos, "only arrays can be indexed, not %s", vdesc(&base, buf, sizeof buf));
  }
  IrInstr *x = fx_use(L, base.t);
  if (!x) return false;
  const IrShape *s = &x->shape;
  if (s->type == IR_TUPLE) return fx_err_at(L->err, e->pos, "a tuple cannot be indexed");
  if (e->nitems > s->rank) {
    char buf[128];
    return fx_err_at(L->err, e->items[s->rank].pos, "too many indices for %s (rank %d)", fx_shape_str(s, buf, sizeof buf), s->rank);
  }
  int64_t start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK], out_dims[IR_MAX_RANK];
  bool dropped[IR_MAX_RANK] = {0};
  IrInstr *dyn[IR_MAX_RANK] = {0};
  bool trivial = true, any_dyn = false;
  for (int d = 0; d < s->rank; d++) {
    int64_t n = s->dims[d];
    start[d] = 0;
    limit[d] = n;
    stride[d] = 1;
    if (d >= e->nitems) continue;
    const FxIndexItem *it = &e->items[d];
    if (!it->is_slice) {
      FxValue iv;
      if (!fx_eval(L, it->index, NULL, &iv)) return false;
      if (iv.kind == V_TENSOR && iv.t->shape.rank == 0 && ir_type_is_int(iv.t->shape.type)) {
        /* A run-time index (e.g. the loop index): dynamic-slice, clamped into range as XLA does. */
        if (!(dyn[d] = fx_use(L, iv.t))) return false;
        start[d] = 0;
        limit[d] = 1;
        dropped[d] = true;
        trivial = false;
        any_dyn = true;
        continue;
      }
      int64_t i = 0;
      if (!value_index(L, &iv, &i)) return false;
      int64_t j = i < 0 ? i + n : i;
      if (j < 0 || j >= n)
        return fx_err_at(L->err, it->index->pos, "index %" PRId64 " is out of range for dimension %d of size %" PRId64, i, d, n);
      start[d] = j;
      limit[d] = j + 1;
      dropped[d] = true;
      trivial = false;
      continue;
    }
    int64_t st = 1;
    if (it->step && !fx_eval_int(L, it->step, "a slice step", &st)) return false;
    if (st <= 0)
      return fx_err_at(L->err, it->step->pos, st == 0 ? "slice step cannot be zero" : "negative slice steps are not supported (use reverse)");
    int64_t a = 0, b = n;
    if (it->start && !fx_eval_int(L, it->start, "a slice start", &a)) return false;
    if (it->stop && !fx_eval_int(L, it->stop, "a slice stop", &b)) return false;
    if (!it->start) a = 0;
    if (!it->stop) b = n;
    if (a < 0) a += n;
    if (b < 0) b += n;
    a = a < 0 ? 0 : a > n ? n : a;
    b = b < 0 ? 0 : b > n ? n : b;
    if (b < a) b = a;
    start[d] = a;
    limit[d] = b;
    stride[d] = st;
    if (a != 0 || b != n || st != 1) trivial = false;
  }
  int rank = s->rank, nout = 0;
  int64_t sdims[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    sdims[d] = limit[d] > start[d] ? (limit[d] - start[d] + stride[d] - 1) / stride[d] : 0;
    if (!dropped[d]) out_dims[nout++] = sdims[d];
  }
  bool any_dropped = nout != rank;
  IrInstr *r = x;
  if (any_dyn) {
    /* dynamic-slice(x, start indices...) with the static parts as constant starts. */
    IrInstr *ops[1 + IR_MAX_RANK];
    ops[0] = x;
    IrType it = IR_S32;
    for (int d = 0; d < rank; d++)
      if (dyn[d]) it = dyn[d]->shape.type;
    for (int d = 0; d < rank; d++) {
      if (stride[d] != 1) return fx_err_at(L->err, e->items[d].pos, "a strided slice cannot be combined with a run-time index");
      if (dyn[d] && dyn[d]->shape.type != it)
        return fx_err_at(L->err, e->items[d].pos, "run-time indices must have the same type (%s and %s)", ir_type_name(it),
                         ir_type_name(dyn[d]->shape.type));
      if (!(ops[1 + d] = dyn[d] ? dyn[d] : fx_const(L, it, (double)start[d], NULL))) return false;
    }
    IrShape ss = fx_shape(L, s->type, rank, sdims);
    r = fx_emit(L, IR_OP_DYNAMIC_SLICE, &ss, ops, 1 + rank, any_dropped ? NULL : hint);
    if (!r) return false;
    ir_attr_set_dims(r, "dynamic_slice_sizes", sdims, rank);
  } else if (!trivial) {
    IrShape ss = fx_shape(L, s->type, rank, sdims);
    r = fx_emit(L, IR_OP_SLICE, &ss, &x, 1, any_dropped ? NULL : hint);
    if (!r) return false;
    ir_attr_set_slice(r, start, limit, stride, rank);
  }
  if (any_dropped) {
    IrShape rs = nout ? fx_shape(L, s->type, nout, out_dims) : ir_shape_scalar(s->type);
    r = fx_emit(L, IR_OP_RESHAPE, &rs, &r, 1, hint);
    if (!r) return false;
  }
  tensor_val(out, e->pos, r);
  return true;
}

/* ---------- builtins ---------- */

typedef enum { K_FLOAT, K_NUMERIC, K_PRED_INT, K_ANY } ArgKind;

static const struct {
  const char *name;
  IrOpcode op;
  ArgKind kind;
} unary_fns[] = {
    {"sin", IR_OP_SIN, K_FLOAT},        {"cos", IR_OP_COS, K_FLOAT},           {"tan", IR_OP_TAN, K_FLOAT},
    {"exp", IR_OP_EXP, K_FLOAT},        {"log", IR_OP_LOG, K_FLOAT},           {"tanh", IR_OP_TANH, K_FLOAT},
    {"sqrt", IR_OP_SQRT, K_FLOAT},      {"rsqrt", IR_OP_RSQRT, K_FLOAT},       {"abs", IR_OP_ABS, K_NUMERIC},
    {"floor", IR_OP_FLOOR, K_FLOAT},    {"ceil", IR_OP_CEIL, K_FLOAT},         {"sign", IR_OP_SIGN, K_NUMERIC},
    {"negate", IR_OP_NEGATE, K_NUMERIC}, {"logistic", IR_OP_LOGISTIC, K_FLOAT}, {"erf", IR_OP_ERF, K_FLOAT},
    {"expm1", IR_OP_EXPM1, K_FLOAT},    {"log1p", IR_OP_LOG1P, K_FLOAT},       {"cbrt", IR_OP_CBRT, K_FLOAT},
    {"round", IR_OP_ROUND_AFZ, K_FLOAT}, {"is_finite", IR_OP_IS_FINITE, K_FLOAT}, {"copy", IR_OP_COPY, K_ANY},
    {"logical_not", IR_OP_NOT, K_PRED_INT},
};

static const struct {
  const char *name;
  IrOpcode op;
  ArgKind kind;
} binary_fns[] = {
    {"maximum", IR_OP_MAXIMUM, K_NUMERIC}, {"minimum", IR_OP_MINIMUM, K_NUMERIC}, {"atan2", IR_OP_ATAN2, K_FLOAT},
    {"remainder", IR_OP_REMAINDER, K_NUMERIC}, {"pow", IR_OP_POWER, K_NUMERIC},
};

static const char *other_fns[] = {"select", "where", "cast", "concat", "stack", "sum", "max", "min", "mean", "prod",
                                  "matmul", "conv2d", "rand", "reshape", "transpose", "broadcast", "iota", "zeros",
                                  "ones", "full", "clamp"};

bool fx_is_builtin(const char *name) {
  for (size_t k = 0; k < sizeof unary_fns / sizeof *unary_fns; k++)
    if (strcmp(unary_fns[k].name, name) == 0) return true;
  for (size_t k = 0; k < sizeof binary_fns / sizeof *binary_fns; k++)
    if (strcmp(binary_fns[k].name, name) == 0) return true;
  for (size_t k = 0; k < sizeof other_fns / sizeof *other_fns; k++)
    if (strcmp(other_fns[k], name) == 0) return true;
  return false;
}

/* Edit distance, for "did you mean". */
static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 40 || lb > 40) return 99;
  int d[41][41];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
      d[i][j] = c;
    }
  return d[la][lb];
}

/* What the same thing is called in TensorFlow, JAX/NumPy or PyTorch, for "did you mean": those
 * names are too far from ours for the edit distance to find. */
static const struct {
  const char *theirs, *ours;
} foreign_fns[] = {
    {"reduce_sum", "sum"},   {"reduce_max", "max"},     {"reduce_min", "min"},       {"reduce_mean", "mean"},
    {"reduce_prod", "prod"}, {"amax", "max"},           {"amin", "min"},             {"dot", "matmul"},
    {"einsum", "matmul"},    {"mm", "matmul"},          {"bmm", "matmul"},           {"concatenate", "concat"},
    {"cat", "concat"},       {"power", "pow"},          {"astype", "cast"},          {"convert", "cast"},
    {"sigmoid", "logistic"}, {"expit", "logistic"},     {"neg", "negate"},           {"negative", "negate"},
    {"absolute", "abs"},     {"fmod", "remainder"},     {"mod", "remainder"},        {"arctan2", "atan2"},
    {"permute", "transpose"}, {"view", "reshape"},      {"broadcast_to", "broadcast"}, {"arange", "iota"},
    {"zeros_like", "zeros"}, {"ones_like", "ones"},     {"full_like", "full"},       {"clip", "clamp"},
    {"rint", "round"},       {"isfinite", "is_finite"}, {"conv", "conv2d"},          {"conv_general_dilated", "conv2d"},
};

static const char *suggest_fn(const char *name) {
  for (size_t k = 0; k < sizeof foreign_fns / sizeof *foreign_fns; k++)
    if (strcmp(name, foreign_fns[k].theirs) == 0) return foreign_fns[k].ours;
  const char *best = NULL;
  int bd = 3;
  for (size_t k = 0; k < sizeof unary_fns / sizeof *unary_fns; k++) {
    int d = edit_distance(name, unary_fns[k].name);
    if (d < bd) bd = d, best = unary_fns[k].name;
  }
  for (size_t k = 0; k < sizeof binary_fns / sizeof *binary_fns; k++) {
    int d = edit_distance(name, binary_fns[k].name);
    if (d < bd) bd = d, best = binary_fns[k].name;
  }
  for (size_t k = 0; k < sizeof other_fns / sizeof *other_fns; k++) {
    int d = edit_distance(name, other_fns[k]);
    if (d < bd) bd = d, best = other_fns[k];
  }
  return best;
}

static const char *suggest_name(FxLower *L, const char *name) {
  const char *best = NULL;
  /* Suggest only when the name is long enough for a near miss to mean something. */
  int len = (int)strlen(name);
  int bd = len <= 1 ? 0 : len <= 5 ? 2 : 3;
  for (int k = L->nbinds - 1; k >= 0; k--) {
    if (L->binds[k].kind == B_DEF) continue;
    int d = edit_distance(name, L->binds[k].name);
    if (d < bd) bd = d, best = L->binds[k].name;
  }
  return best;
}

static bool check_kind(FxLower *L, FxPos pos, const char *fn, ArgKind k, IrType t) {
  bool ok = k == K_ANY || (k == K_FLOAT && float_type(t)) || (k == K_NUMERIC && numeric_type(t)) ||
            (k == K_PRED_INT && (t == IR_PRED || ir_type_is_int(t)));
  if (ok) return true;
  const char *want = k == K_FLOAT ? "floating-point" : k == K_NUMERIC ? "numeric" : "pred or integer";
  return fx_err_at(L->err, pos, "%s() needs %s values, got %s", fn, want, ir_type_name(t));
}

typedef struct {
  const FxExpr *e;
  FxValue *pos_args;
  int npos;
  FxValue kw[4];
  const char *kwnames[4];
  const FxExpr *kwexpr[4];
  int nkw;
} Args;

static bool want_args(FxLower *L, const Args *a, int lo, int hi) {
  if (a->npos >= lo && a->npos <= hi) return true;
  const char *fn = a->e->name;
  if (lo == hi) return fx_err_at(L->err, a->e->pos, "%s() takes %d argument%s, got %d", fn, lo, lo == 1 ? "" : "s", a->npos);
  return fx_err_at(L->err, a->e->pos, "%s() takes %d to %d arguments, got %d", fn, lo, hi, a->npos);
}

static const FxValue *kwarg(const Args *a, const char *name) {
  for (int k = 0; k < a->nkw; k++)
    if (strcmp(a->kwnames[k], name) == 0) return &a->kw[k];
  return NULL;
}

static bool only_kwargs(FxLower *L, const Args *a, const char *const *allowed, int n) {
  for (int k = 0; k < a->nkw; k++) {
    bool ok = false;
    for (int j = 0; j < n; j++) ok = ok || strcmp(a->kwnames[k], allowed[j]) == 0;
    if (!ok) return fx_err_at(L->err, a->kwexpr[k]->pos, "%s() has no argument named '%s'", a->e->name, a->kwnames[k]);
  }
  return true;
}

static bool value_int(FxLower *L, const FxValue *v, const char *what, int64_t *out) {
  if (v->kind == V_SCALAR && v->is_int && v->st != IR_PRED) {
    *out = v->i;
    return true;
  }
  char buf[64];
  return fx_err_at(L->err, v->pos, "%s must be a compile-time integer, got %s", what, vdesc(v, buf, sizeof buf));
}

static bool norm_axis(FxLower *L, const FxValue *v, int rank, const char *shape_desc, int64_t *axis) {
  int64_t a = 0;
  if (!value_int(L, v, "the axis", &a)) return false;
  int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= rank) {
    if (rank == 0) return fx_err_at(L->err, v->pos, "axis %" PRId64 " is out of range for %s (a scalar has no axes)", a, shape_desc);
    return fx_err_at(L->err, v->pos, "axis %" PRId64 " is out of range for %s (rank %d)", a, shape_desc, rank);
  }
  *axis = n;
  return true;
}

/* A list of compile-time integers: [4, n] */
static int int_list(FxLower *L, const FxValue *v, const char *what, int64_t *out, int max) {
  if (v->kind != V_LIST) {
    char buf[64];
    fx_err_at(L->err, v->pos, "%s must be a list of integers like [4, n], got %s", what, vdesc(v, buf, sizeof buf));
    return -1;
  }
  if (v->nitems > max) {
    fx_err_at(L->err, v->pos, "%s has %d entries; the limit is %d", what, v->nitems, max);
    return -1;
  }
  for (int k = 0; k < v->nitems; k++)
    if (!value_int(L, &v->items[k], what, &out[k])) return -1;
  return v->nitems;
}

static IrInstr *arg_tensor(FxLower *L, const Args *a, int k, const char *what) {
  const FxValue *v = &a->pos_args[k];
  if (v->kind != V_TENSOR) {
    char buf[64];
    fx_err_at(L->err, v->pos, "%s of %s() must be an array, got %s", what, a->e->name, vdesc(v, buf, sizeof buf));
    return NULL;
  }
  return fx_use(L, v->t);
}

static bool unary_fn(FxLower *L, const Args *a, IrOpcode op, ArgKind kind, const char *hint, FxValue *out) {
  if (!want_args(L, a, 1, 1) || !only_kwargs(L, a, NULL, 0)) return false;
  FxValue *v = &a->pos_args[0];
  if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
    char buf[64];
    return fx_err_at(L->err, v->pos, "%s() needs an array or a number, got %s", a->e->name, vdesc(v, buf, sizeof buf));
  }
  IrType t = v->kind == V_TENSOR ? v->t->shape.type : v->st != IR_INVALID ? v->st : (kind == K_FLOAT || !v->is_int) ? IR_F32 : IR_S32;
  if (!check_kind(L, v->pos, a->e->name, kind, t)) return false;
  IrInstr *x = fx_tensor(L, v, t, NULL);
  if (!x) return false;
  IrShape rs = x->shape;
  if (op == IR_OP_IS_FINITE) {
    rs = x->shape.rank ? fx_shape(L, IR_PRED, x->shape.rank, x->shape.dims) : ir_shape_scalar(IR_PRED);
  }
  IrInstr *r = fx_emit(L, op, &rs, &x, 1, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool binary_fn(FxLower *L, const Args *a, IrOpcode op, ArgKind kind, const char *hint, FxValue *out) {
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  FxValue *x = &a->pos_args[0], *y = &a->pos_args[1];
  for (int k = 0; k < 2; k++) {
    FxValue *v = &a->pos_args[k];
    if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
      char buf[64];
      return fx_err_at(L->err, v->pos, "%s() needs arrays or numbers, got %s", a->e->name, vdesc(v, buf, sizeof buf));
    }
  }
  IrType t;
  if (!unify(L, a->e->pos, x, y, &t)) return false;
  if (t == IR_INVALID) t = (x->is_int && y->is_int && kind != K_FLOAT) ? IR_S32 : IR_F32;
  if (!check_kind(L, a->e->pos, a->e->name, kind, t)) return false;
  FxValue vals[2] = {*x, *y};
  IrInstr *r = elementwise(L, a->e->pos, op, vals, 2, t, t, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool select_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 3, 3) || !only_kwargs(L, a, NULL, 0)) return false;
  FxValue *c = &a->pos_args[0], *x = &a->pos_args[1], *y = &a->pos_args[2];
  for (int k = 0; k < 3; k++) {
    FxValue *v = &a->pos_args[k];
    if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
      char buf[64];
      return fx_err_at(L->err, v->pos, "%s() needs arrays or numbers, got %s", a->e->name, vdesc(v, buf, sizeof buf));
    }
  }
  IrType ct = c->kind == V_TENSOR ? c->t->shape.type : c->st;
  if (ct != IR_PRED) {
    char buf[64];
    return fx_err_at(L->err, c->pos, "the condition of %s() must be pred (a comparison), got %s", a->e->name, vdesc(c, buf, sizeof buf));
  }
  IrType t;
  if (!unify(L, a->e->pos, x, y, &t)) return false;
  if (t == IR_INVALID) t = (x->is_int && y->is_int) ? IR_S32 : IR_F32;
  if (c->kind == V_SCALAR && x->kind == V_SCALAR && y->kind == V_SCALAR) {
    *out = c->i ? *x : *y;
    return true;
  }
  FxValue vals[3] = {*c, *x, *y};
  IrInstr *r = elementwise(L, a->e->pos, IR_OP_SELECT, vals, 3, t, t, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool cast_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  FxValue *v = &a->pos_args[0], *tv = &a->pos_args[1];
  if (tv->kind != V_TYPE || tv->has_dims)
    return fx_err_at(L->err, tv->pos, "the second argument of cast() is an element type, like f16");
  if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
    char buf[64];
    return fx_err_at(L->err, v->pos, "cast() needs an array or a number, got %s", vdesc(v, buf, sizeof buf));
  }
  IrInstr *x = fx_tensor(L, v, IR_INVALID, NULL);
  if (!x) return false;
  IrShape rs = x->shape.rank ? fx_shape(L, tv->ty, x->shape.rank, x->shape.dims) : ir_shape_scalar(tv->ty);
  IrInstr *r = fx_emit(L, IR_OP_CONVERT, &rs, &x, 1, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool concat_fn(FxLower *L, const Args *a, bool stack, const char *hint, FxValue *out) {
  static const char *const kws[] = {"axis"};
  if (!want_args(L, a, 1, 1) || !only_kwargs(L, a, kws, 1)) return false;
  const FxValue *lst = &a->pos_args[0];
  if (lst->kind != V_LIST || lst->nitems == 0)
    return fx_err_at(L->err, lst->pos, "%s() takes a non-empty list of arrays: %s([a, b], axis=0)", a->e->name, a->e->name);
  int n = lst->nitems;
  IrInstr **ops = fx_calloc((size_t)n, sizeof(IrInstr *));
  if (!ops) return fx_oom(L);
  bool ok = false;
  for (int k = 0; k < n; k++) {
    if (lst->items[k].kind != V_TENSOR) {
      char buf[64];
      fx_err_at(L->err, lst->items[k].pos, "%s() joins arrays, not %s", a->e->name, vdesc(&lst->items[k], buf, sizeof buf));
      goto done;
    }
    if (!(ops[k] = fx_use(L, lst->items[k].t))) goto done;
  }
  const IrShape *s0 = &ops[0]->shape;
  int rank = s0->rank + (stack ? 1 : 0);
  char desc[128];
  fx_shape_str(s0, desc, sizeof desc);
  int64_t axis = 0;
  const FxValue *ax = kwarg(a, "axis");
  if (ax && !norm_axis(L, ax, rank, desc, &axis)) goto done;
  if (!stack && rank == 0) {
    fx_err_at(L->err, a->e->pos, "concat() needs arrays of rank >= 1 (use stack for scalars)");
    goto done;
  }
  for (int k = 1; k < n; k++) {
    const IrShape *sk = &ops[k]->shape;
    char d2[128];
    if (sk->type != s0->type) {
      fx_err_at(L->err, lst->items[k].pos, "%s() of different element types: %s and %s", a->e->name, desc, fx_shape_str(sk, d2, sizeof d2));
      goto done;
    }
    bool same = sk->rank == s0->rank;
    for (int d = 0; same && d < s0->rank; d++)
      if (sk->dims[d] != s0->dims[d] && (stack || d != axis)) same = false;
    if (!same) {
      fx_err_at(L->err, lst->items[k].pos, stack ? "stack() needs equal shapes: %s and %s" : "concat() shapes %s and %s differ outside axis %d",
                desc, fx_shape_str(sk, d2, sizeof d2), (int)axis);
      goto done;
    }
  }
  if (stack) {
    int64_t dims[IR_MAX_RANK];
    for (int d = 0, j = 0; d < rank; d++) dims[d] = d == axis ? 1 : s0->dims[j++];
    IrShape rs = fx_shape(L, s0->type, rank, dims);
    for (int k = 0; k < n; k++)
      if (!(ops[k] = fx_emit(L, IR_OP_RESHAPE, &rs, &ops[k], 1, NULL))) goto done;
  }
  int64_t dims[IR_MAX_RANK];
  for (int d = 0; d < rank; d++) dims[d] = ops[0]->shape.dims[d];
  dims[axis] = 0;
  for (int k = 0; k < n; k++) dims[axis] += ops[k]->shape.dims[axis];
  if (!fx_check_shape(L, a->e->pos, s0->type, rank, dims)) goto done;
  IrShape rs = fx_shape(L, s0->type, rank, dims);
  IrInstr *r = fx_emit(L, IR_OP_CONCATENATE, &rs, ops, n, hint);
  if (!r) goto done;
  ir_attr_set_dims(r, "dimensions", &axis, 1);
  tensor_val(out, a->e->pos, r);
  ok = true;
done:
  fx_free(ops);
  return ok;
}

enum { R_SUM, R_MAX, R_MIN, R_PROD };

static IrComputation *reducer(FxLower *L, int kind, IrType t) {
  if (L->reducers[kind][t]) return L->reducers[kind][t];
  static const char *base[] = {"add", "max", "min", "mul"};
  static const IrOpcode ops[] = {IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_MULTIPLY};
  char name[64];
  snprintf(name, sizeof name, "%s_%s", base[kind], ir_type_name(t));
  const char *cn = fx_unique_comp_name(L->m, name);
  IrComputation *c = cn ? ir_computation_new(L->m, cn) : NULL;
  if (!c) {
    fx_oom(L);
    return NULL;
  }
  c->has_signature = true;
  FxFrame fr = {0}, *saved = L->frame;
  fr.comp = c;
  L->frame = &fr;
  IrShape s = ir_shape_scalar(t);
  IrInstr *p0 = fx_emit(L, IR_OP_PARAMETER, &s, NULL, 0, "lhs");
  IrInstr *p1 = p0 ? fx_emit(L, IR_OP_PARAMETER, &s, NULL, 0, "rhs") : NULL;
  IrInstr *both[2] = {p0, p1};
  IrInstr *r = p1 ? fx_emit(L, ops[kind], &s, both, 2, NULL) : NULL;
  L->frame = saved;
  if (!r || !ir_computation_set_params(c, both, 2)) {
    fx_oom(L);
    return NULL;
  }
  ir_set_root(c, r);
  L->reducers[kind][t] = c;
  return c;
}

static bool reduce_fn(FxLower *L, const Args *a, const char *fn, const char *hint, FxValue *out) {
  static const char *const kws[] = {"axis", "keepdims"};
  if (!want_args(L, a, 1, 1) || !only_kwargs(L, a, kws, 2)) return false;
  bool keep = false;
  const FxValue *kd = kwarg(a, "keepdims");
  if (kd) {
    if (kd->kind != V_SCALAR || kd->st != IR_PRED)
      return fx_err_at(L->err, kd->pos, "keepdims must be true or false");
    keep = kd->i != 0;
  }
  IrInstr *x = arg_tensor(L, a, 0, "the argument");
  if (!x) return false;
  const IrShape *s = &x->shape;
  char desc[128];
  fx_shape_str(s, desc, sizeof desc);
  IrType t = s->type;
  bool is_mean = strcmp(fn, "mean") == 0;
  int kind = strcmp(fn, "sum") == 0 || is_mean ? R_SUM : strcmp(fn, "max") == 0 ? R_MAX : strcmp(fn, "min") == 0 ? R_MIN : R_PROD;
  if ((kind == R_SUM || kind == R_PROD) && !numeric_type(t))
    return fx_err_at(L->err, a->e->pos, "%s() needs numeric values, got %s", fn, desc);
  if (ir_type_is_complex(t)) return fx_err_at(L->err, a->e->pos, "complex values are not supported");
  bool red[IR_MAX_RANK] = {0};
  const FxValue *ax = kwarg(a, "axis");
  if (!ax) {
    for (int d = 0; d < s->rank; d++) red[d] = true;
  } else if (ax->kind == V_LIST) {
    for (int k = 0; k < ax->nitems; k++) {
      int64_t d;
      if (!norm_axis(L, &ax->items[k], s->rank, desc, &d)) return false;
      if (red[d]) return fx_err_at(L->err, ax->items[k].pos, "axis %d is listed twice", (int)d);
      red[d] = true;
    }
  } else {
    int64_t d;
    if (!norm_axis(L, ax, s->rank, desc, &d)) return false;
    red[d] = true;
  }
  int64_t rdims[IR_MAX_RANK], kdims[IR_MAX_RANK];
  int nr = 0, nk = 0;
  int64_t count = 1;
  for (int d = 0; d < s->rank; d++) {
    if (red[d]) {
      rdims[nr++] = d;
      count *= s->dims[d];
    } else {
      kdims[nk++] = s->dims[d];
    }
  }
  double init;
  if (kind == R_SUM) init = 0;
  else if (kind == R_PROD) init = 1;
  else if (float_type(t)) init = kind == R_MAX ? -INFINITY : INFINITY;
  else if (t == IR_PRED) init = kind == R_MAX ? 0 : 1;
  else {
    int bits = ir_type_bytes(t) * 8;
    bool sg = ir_type_is_signed(t);
    double lo = sg ? -ldexp(1, bits - 1) : 0, hi = sg ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
    init = kind == R_MAX ? lo : hi;
  }
  IrComputation *comp = reducer(L, kind, t);
  IrInstr *iv = comp ? fx_const(L, t, init, NULL) : NULL;
  if (!iv) return false;
  IrShape rs = nk ? fx_shape(L, t, nk, kdims) : ir_shape_scalar(t);
  IrInstr *ops[2] = {x, iv};
  IrInstr *r = fx_emit(L, IR_OP_REDUCE, &rs, ops, 2, is_mean || keep ? NULL : hint);
  if (!r) return false;
  ir_attr_set_dims(r, "dimensions", rdims, nr);
  ir_attr_set_comp(r, "to_apply", comp);
  if (is_mean) {
    IrInstr *c = fx_const(L, t, (double)count, NULL);
    IrInstr *b = c ? fx_broadcast_to(L, c, nk, kdims, NULL) : NULL;
    IrInstr *dv[2] = {r, b};
    r = b ? fx_emit(L, IR_OP_DIVIDE, &rs, dv, 2, keep ? NULL : hint) : NULL;
    if (!r) return false;
  }
  if (keep) {
    /* numpy's keepdims: the reduced dimensions stay, with size 1. */
    int64_t kd2[IR_MAX_RANK];
    for (int d = 0; d < s->rank; d++) kd2[d] = red[d] ? 1 : s->dims[d];
    IrShape ks = fx_shape(L, t, s->rank, kd2);
    if (!(r = fx_emit(L, IR_OP_RESHAPE, &ks, &r, 1, hint))) return false;
  }
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool matmul_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  IrInstr *x = arg_tensor(L, a, 0, "the first argument");
  IrInstr *y = x ? arg_tensor(L, a, 1, "the second argument") : NULL;
  if (!y) return false;
  const IrShape *s = &x->shape, *t = &y->shape;
  char d1[128], d2[128];
  fx_shape_str(s, d1, sizeof d1);
  fx_shape_str(t, d2, sizeof d2);
  if (s->type != t->type) return fx_err_at(L->err, a->e->pos, "matmul() of different element types: %s and %s", d1, d2);
  if (!numeric_type(s->type)) return fx_err_at(L->err, a->e->pos, "matmul() needs numeric values, got %s", d1);
  int64_t lc, rc, odims[3];
  int nout = 0;
  bool batch = false;
  if (s->rank == 3 && t->rank == 3) {
    batch = true;
    if (s->dims[0] != t->dims[0])
      return fx_err_at(L->err, a->e->pos, "matmul() batch dimensions differ: %s and %s", d1, d2);
    lc = 2;
    rc = 1;
    odims[nout++] = s->dims[0];
    odims[nout++] = s->dims[1];
    odims[nout++] = t->dims[2];
  } else if (s->rank >= 1 && s->rank <= 2 && t->rank >= 1 && t->rank <= 2) {
    lc = s->rank - 1;
    rc = 0;
    if (s->rank == 2) odims[nout++] = s->dims[0];
    if (t->rank == 2) odims[nout++] = t->dims[1];
  } else {
    return fx_err_at(L->err, a->e->pos, "matmul() needs rank 1 or 2 operands (or two rank-3 batches), got %s and %s", d1, d2);
  }
  if (s->dims[lc] != t->dims[rc])
    return fx_err_at(L->err, a->e->pos, "matmul() contracting dimensions differ: %s and %s (%" PRId64 " vs %" PRId64 ")", d1, d2,
                     s->dims[lc], t->dims[rc]);
  IrShape rs = nout ? fx_shape(L, s->type, nout, odims) : ir_shape_scalar(s->type);
  IrInstr *ops[2] = {x, y};
  IrInstr *r = fx_emit(L, IR_OP_DOT, &rs, ops, 2, hint);
  if (!r) return false;
  int64_t zero = 0;
  if (batch) ir_attr_set_dims(r, "lhs_batch_dims", &zero, 1);
  ir_attr_set_dims(r, "lhs_contracting_dims", &lc, 1);
  if (batch) ir_attr_set_dims(r, "rhs_batch_dims", &zero, 1);
  ir_attr_set_dims(r, "rhs_contracting_dims", &rc, 1);
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool conv_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  static const char *const kws[] = {"stride", "pad"};
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, kws, 2)) return false;
  IrInstr *x = arg_tensor(L, a, 0, "the input");
  IrInstr *w = x ? arg_tensor(L, a, 1, "the filter") : NULL;
  if (!w) return false;
  const IrShape *s = &x->shape, *f = &w->shape;
  char d1[128], d2[128];
  fx_shape_str(s, d1, sizeof d1);
  fx_shape_str(f, d2, sizeof d2);
  if (s->rank != 4) return fx_err_at(L->err, a->pos_args[0].pos, "conv2d() input must be NHWC (rank 4), got %s", d1);
  if (f->rank != 4) return fx_err_at(L->err, a->pos_args[1].pos, "conv2d() filter must be HWIO (rank 4), got %s", d2);
  if (s->type != f->type) return fx_err_at(L->err, a->e->pos, "conv2d() of different element types: %s and %s", d1, d2);
  if (!float_type(s->type)) return fx_err_at(L->err, a->e->pos, "conv2d() needs floating-point values, got %s", d1);
  if (s->dims[3] != f->dims[2])
    return fx_err_at(L->err, a->e->pos, "conv2d() channels differ: input %s has %" PRId64 ", filter %s expects %" PRId64, d1,
                     s->dims[3], d2, f->dims[2]);
  int64_t stride[2] = {1, 1};
  const FxValue *sv = kwarg(a, "stride");
  if (sv) {
    if (sv->kind == V_LIST) {
      if (sv->nitems != 2) return fx_err_at(L->err, sv->pos, "stride must be one integer or a list of two");
      if (int_list(L, sv, "stride", stride, 2) < 0) return false;
    } else {
      if (!value_int(L, sv, "stride", &stride[0])) return false;
      stride[1] = stride[0];
    }
    if (stride[0] < 1 || stride[1] < 1) return fx_err_at(L->err, sv->pos, "stride must be >= 1");
  }
  bool same = true;
  const FxValue *pv = kwarg(a, "pad");
  if (pv) {
    if (pv->kind != V_STRING || (strcmp(pv->str, "same") != 0 && strcmp(pv->str, "valid") != 0))
      return fx_err_at(L->err, pv->pos, "pad must be \"same\" or \"valid\"");
    same = strcmp(pv->str, "same") == 0;
  }
  int64_t od[4] = {s->dims[0], 0, 0, f->dims[3]}, lo[2], hi[2];
  for (int k = 0; k < 2; k++) {
    int64_t in = s->dims[1 + k], kk = f->dims[k], st = stride[k];
    if (same) {
      od[1 + k] = (in + st - 1) / st;
      int64_t total = (od[1 + k] - 1) * st + kk - in;
      if (total < 0) total = 0;
      lo[k] = total / 2;
      hi[k] = total - lo[k];
    } else {
      if (kk > in) return fx_err_at(L->err, a->e->pos, "conv2d() filter %s is larger than the input %s", d2, d1);
      od[1 + k] = (in - kk) / st + 1;
      lo[k] = hi[k] = 0;
    }
  }
  IrShape rs = fx_shape(L, s->type, 4, od);
  IrInstr *ops[2] = {x, w};
  IrInstr *r = fx_emit(L, IR_OP_CONVOLUTION, &rs, ops, 2, hint);
  if (!r) return false;
  char win[256];
  int len = snprintf(win, sizeof win, "{size=%" PRId64 "x%" PRId64, f->dims[0], f->dims[1]);
  if (stride[0] != 1 || stride[1] != 1) len += snprintf(win + len, sizeof win - (size_t)len, " stride=%" PRId64 "x%" PRId64, stride[0], stride[1]);
  if (lo[0] || hi[0] || lo[1] || hi[1])
    len += snprintf(win + len, sizeof win - (size_t)len, " pad=%" PRId64 "_%" PRId64 "x%" PRId64 "_%" PRId64, lo[0], hi[0], lo[1], hi[1]);
  snprintf(win + len, sizeof win - (size_t)len, "}");
  ir_attr_set_text(r, "window", win);
  ir_attr_set_text(r, "dim_labels", "b01f_01io->b01f");
  tensor_val(out, a->e->pos, r);
  return true;
}

/* The scalar bound of rand(): a compile-time number. */
static bool rand_bound(FxLower *L, const FxValue *v, IrType t, double *out) {
  if (v->kind != V_SCALAR || v->st == IR_PRED || (v->st != IR_INVALID && v->st != t)) {
    char buf[64];
    return fx_err_at(L->err, v->pos, "the bounds of rand() must be %s numbers, got %s", ir_type_name(t), vdesc(v, buf, sizeof buf));
  }
  *out = v->is_int ? (double)v->i : v->f;
  return true;
}

static IrInstr *bconst(FxLower *L, IrType t, double v, int64_t n) {
  IrInstr *c = fx_const(L, t, v, NULL);
  return c ? fx_broadcast_to(L, c, 1, &n, NULL) : NULL;
}

static IrInstr *emit2(FxLower *L, IrOpcode op, const IrShape *s, IrInstr *a, IrInstr *b, const char *name) {
  if (!a || !b) return NULL;
  IrInstr *ops[2] = {a, b};
  return fx_emit(L, op, s, ops, 2, name);
}

static bool rand_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  static const char *const kws[] = {"key"};
  if (!want_args(L, a, 1, 3) || !only_kwargs(L, a, kws, 1)) return false;
  const FxValue *tv = &a->pos_args[0];
  if (tv->kind != V_TYPE)
    return fx_err_at(L->err, tv->pos, "the first argument of rand() is the shape, like f32[n, 4]");
  if (!float_type(tv->ty)) return fx_err_at(L->err, tv->pos, "rand() makes floating-point values, not %s", ir_type_name(tv->ty));
  if (a->npos == 2) return fx_err_at(L->err, a->e->pos, "rand() takes both bounds or neither: rand(f32[n], lo, hi)");
  double lo = 0, hi = 1;
  if (a->npos == 3 && (!rand_bound(L, &a->pos_args[1], tv->ty, &lo) || !rand_bound(L, &a->pos_args[2], tv->ty, &hi))) return false;
  int rank = tv->has_dims ? tv->rank : 0;
  IrShape rs = rank ? fx_shape(L, tv->ty, rank, tv->dims) : ir_shape_scalar(tv->ty);
  const FxValue *key = kwarg(a, "key");
  if (!key) {
    IrInstr *l = fx_const(L, tv->ty, lo, NULL);
    IrInstr *h = l ? fx_const(L, tv->ty, hi, NULL) : NULL;
    IrInstr *r = emit2(L, IR_OP_RNG, &rs, l, h, hint);
    if (!r) return false;
    ir_attr_set_text(r, "distribution", "rng_uniform");
    tensor_val(out, a->e->pos, r);
    return true;
  }
  if (tv->ty != IR_F32) return fx_err_at(L->err, tv->pos, "rand() with a key makes f32 values, not %s", ir_type_name(tv->ty));
  if (key->kind != V_TENSOR || key->t->shape.type != IR_U32 || key->t->shape.rank != 1 || key->t->shape.dims[0] != 2) {
    char buf[64];
    return fx_err_at(L->err, key->pos, "the key of rand() must be a u32[2] array, got %s", vdesc(key, buf, sizeof buf));
  }
  IrInstr *k = fx_use(L, key->t);
  if (!k) return false;
  int64_t n = ir_shape_elements(&rs);
  IrShape u1 = fx_shape(L, IR_U32, 1, (int64_t[]){1});
  IrShape us = ir_shape_scalar(IR_U32);
  IrShape un = fx_shape(L, IR_U32, 1, &n);
  IrShape fn = fx_shape(L, IR_F32, 1, &n);
  IrInstr *kh[2];
  for (int j = 0; j < 2; j++) {
    IrInstr *sl = fx_emit(L, IR_OP_SLICE, &u1, &k, 1, NULL);
    if (!sl) return false;
    ir_attr_set_text(sl, "slice", j ? "{[1:2]}" : "{[0:1]}");
    IrInstr *rsh = fx_emit(L, IR_OP_RESHAPE, &us, &sl, 1, NULL);
    if (!rsh || !(kh[j] = fx_broadcast_to(L, rsh, 1, &n, NULL))) return false;
  }
  IrInstr *ctr = fx_emit(L, IR_OP_IOTA, &un, NULL, 0, NULL);
  if (!ctr) return false;
  ir_attr_set_text(ctr, "iota_dimension", "0");
  IrInstr *hi_ctr = bconst(L, IR_U32, 0, n);
  if (!hi_ctr) return false;
  IrShape pair;
  memset(&pair, 0, sizeof pair);
  pair.type = IR_TUPLE;
  pair.ntuple = 2;
  pair.tuple = arena_alloc(&L->m->arena, sizeof(IrShape) * 2);
  if (!pair.tuple) return fx_oom(L);
  pair.tuple[0] = un;
  pair.tuple[1] = un;
  IrInstr *ops[4] = {kh[0], kh[1], ctr, hi_ctr};
  IrInstr *tf = fx_emit(L, IR_OP_CUSTOM_CALL, &pair, ops, 4, "threefry2x32");
  if (!tf) return false;
  ir_attr_set_text(tf, "custom_call_target", "\"cuda_threefry2x32\"");
  IrInstr *bits = fx_emit(L, IR_OP_GET_TUPLE_ELEMENT, &un, &tf, 1, "random_bits");
  if (!bits) return false;
  ir_attr_set_text(bits, "index", "0");
  /* bits -> [1, 2) by exponent trick, minus 1 -> [0, 1), then scaled to [lo, hi). */
  IrInstr *sh = emit2(L, IR_OP_SHRL, &un, bits, bconst(L, IR_U32, 9, n), NULL);
  IrInstr *orr = emit2(L, IR_OP_OR, &un, sh, bconst(L, IR_U32, 0x3f800000, n), NULL);
  IrInstr *fl = orr ? fx_emit(L, IR_OP_BITCAST_CONVERT, &fn, &orr, 1, NULL) : NULL;
  bool scaled = lo != 0 || hi != 1;
  IrInstr *u01 = emit2(L, IR_OP_SUBTRACT, &fn, fl, bconst(L, IR_F32, 1, n), !scaled && rank == 1 ? hint : NULL);
  IrInstr *r = u01;
  if (scaled) {
    IrInstr *sc = emit2(L, IR_OP_MULTIPLY, &fn, u01, bconst(L, IR_F32, hi - lo, n), NULL);
    IrInstr *of = emit2(L, IR_OP_ADD, &fn, sc, bconst(L, IR_F32, lo, n), NULL);
    r = emit2(L, IR_OP_MAXIMUM, &fn, bconst(L, IR_F32, lo, n), of, rank == 1 ? hint : NULL);
  }
  if (!r) return false;
  if (rank != 1) r = fx_emit(L, IR_OP_RESHAPE, &rs, &r, 1, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool reshape_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  IrInstr *x = arg_tensor(L, a, 0, "the first argument");
  if (!x) return false;
  int64_t dims[IR_MAX_RANK];
  int n = int_list(L, &a->pos_args[1], "the new shape", dims, IR_MAX_RANK);
  if (n < 0) return false;
  int infer = -1;
  int64_t known = 1;
  for (int k = 0; k < n; k++) {
    if (dims[k] == -1) {
      if (infer >= 0) return fx_err_at(L->err, a->pos_args[1].items[k].pos, "only one dimension can be -1");
      infer = k;
    } else if (dims[k] < 0) {
      return fx_err_at(L->err, a->pos_args[1].items[k].pos, "dimension %" PRId64 " is negative", dims[k]);
    } else if (__builtin_mul_overflow(known, dims[k], &known) || known > FX_MAX_ELEMENTS) {
      return fx_err_at(L->err, a->pos_args[1].pos, "the new shape is too large");
    }
  }
  int64_t have = ir_shape_elements(&x->shape);
  char d1[128];
  fx_shape_str(&x->shape, d1, sizeof d1);
  if (infer >= 0) {
    if (known == 0 || have % known != 0)
      return fx_err_at(L->err, a->pos_args[1].pos, "cannot reshape %s (%" PRId64 " elements) with a -1 dimension here", d1, have);
    dims[infer] = have / known;
    known = have;
  }
  if (known != have)
    return fx_err_at(L->err, a->pos_args[1].pos, "cannot reshape %s (%" PRId64 " elements) to %" PRId64 " elements", d1, have, known);
  IrShape rs = n ? fx_shape(L, x->shape.type, n, dims) : ir_shape_scalar(x->shape.type);
  IrInstr *r = fx_emit(L, IR_OP_RESHAPE, &rs, &x, 1, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool transpose_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 1, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  IrInstr *x = arg_tensor(L, a, 0, "the first argument");
  if (!x) return false;
  const IrShape *s = &x->shape;
  int64_t perm[IR_MAX_RANK];
  int n = s->rank;
  if (a->npos == 2) {
    n = int_list(L, &a->pos_args[1], "the permutation", perm, IR_MAX_RANK);
    if (n < 0) return false;
  } else {
    for (int k = 0; k < n; k++) perm[k] = n - 1 - k;
  }
  char d1[128];
  fx_shape_str(s, d1, sizeof d1);
  bool seen[IR_MAX_RANK] = {0};
  bool okp = n == s->rank;
  for (int k = 0; okp && k < n; k++) {
    if (perm[k] < 0 || perm[k] >= s->rank || seen[perm[k]]) okp = false;
    else seen[perm[k]] = true;
  }
  if (!okp)
    return fx_err_at(L->err, a->pos_args[1].pos, "the permutation must list each axis of %s once (0 to %d)", d1, s->rank - 1);
  int64_t dims[IR_MAX_RANK];
  for (int k = 0; k < n; k++) dims[k] = s->dims[perm[k]];
  IrShape rs = n ? fx_shape(L, s->type, n, dims) : ir_shape_scalar(s->type);
  IrInstr *r = fx_emit(L, IR_OP_TRANSPOSE, &rs, &x, 1, hint);
  if (!r) return false;
  ir_attr_set_dims(r, "dimensions", perm, n);
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool broadcast_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 2, 2) || !only_kwargs(L, a, NULL, 0)) return false;
  const FxValue *v = &a->pos_args[0];
  if (v->kind != V_TENSOR && v->kind != V_SCALAR) {
    char buf[64];
    return fx_err_at(L->err, v->pos, "broadcast() needs an array or a number, got %s", vdesc(v, buf, sizeof buf));
  }
  int64_t dims[IR_MAX_RANK];
  int n = int_list(L, &a->pos_args[1], "the shape", dims, IR_MAX_RANK);
  if (n < 0) return false;
  IrInstr *x = fx_tensor(L, v, IR_INVALID, NULL);
  if (!x || !fx_check_shape(L, a->pos_args[1].pos, x->shape.type, n, dims)) return false;
  bool okb = x->shape.rank <= n;
  for (int k = 0; okb && k < x->shape.rank; k++) {
    int64_t have = x->shape.dims[x->shape.rank - 1 - k], want = dims[n - 1 - k];
    okb = have == want || have == 1;
  }
  if (!okb) {
    IrShape target = n ? fx_shape(L, x->shape.type, n, dims) : ir_shape_scalar(x->shape.type);
    char d1[128], d2[128];
    return fx_err_at(L->err, a->e->pos, "cannot broadcast %s to %s", fx_shape_str(&x->shape, d1, sizeof d1), fx_shape_str(&target, d2, sizeof d2));
  }
  IrInstr *b = fx_broadcast_to(L, x, n, dims, hint);
  if (!b) return false;
  tensor_val(out, a->e->pos, b);
  return true;
}

static bool iota_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  static const char *const kws[] = {"axis"};
  if (!want_args(L, a, 1, 1) || !only_kwargs(L, a, kws, 1)) return false;
  const FxValue *tv = &a->pos_args[0];
  if (tv->kind != V_TYPE || !tv->has_dims || tv->rank == 0)
    return fx_err_at(L->err, tv->pos, "iota() takes a shape of rank >= 1, like s32[n]");
  if (!numeric_type(tv->ty)) return fx_err_at(L->err, tv->pos, "iota() needs a numeric type, not %s", ir_type_name(tv->ty));
  int64_t axis = 0;
  IrShape rs = fx_shape(L, tv->ty, tv->rank, tv->dims);
  char d1[128];
  fx_shape_str(&rs, d1, sizeof d1);
  const FxValue *ax = kwarg(a, "axis");
  if (ax && !norm_axis(L, ax, tv->rank, d1, &axis)) return false;
  IrInstr *r = fx_emit(L, IR_OP_IOTA, &rs, NULL, 0, hint);
  if (!r) return false;
  char buf[24];
  snprintf(buf, sizeof buf, "%d", (int)axis);
  ir_attr_set_text(r, "iota_dimension", buf);
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool full_fn(FxLower *L, const Args *a, const char *fn, const char *hint, FxValue *out) {
  bool full = strcmp(fn, "full") == 0;
  if (!want_args(L, a, full ? 2 : 1, full ? 2 : 1) || !only_kwargs(L, a, NULL, 0)) return false;
  const FxValue *tv = &a->pos_args[0];
  if (tv->kind != V_TYPE) return fx_err_at(L->err, tv->pos, "the first argument of %s() is the shape, like f32[n, 4]", fn);
  FxValue v;
  if (full) {
    v = a->pos_args[1];
    if (v.kind != V_SCALAR) return fx_err_at(L->err, v.pos, "the fill value of full() must be a number");
    FxValue probe = {0};
    probe.kind = V_SCALAR;
    probe.st = tv->ty;
    IrType t;
    if (!unify(L, v.pos, &probe, &v, &t)) return false;
  } else {
    scalar_int(&v, a->e->pos, strcmp(fn, "ones") == 0);
    if (tv->ty == IR_PRED) v.st = IR_PRED;
  }
  IrInstr *c = fx_tensor(L, &v, tv->ty, tv->has_dims && tv->rank ? NULL : hint);
  if (!c) return false;
  IrInstr *r = tv->has_dims && tv->rank ? fx_broadcast_to(L, c, tv->rank, tv->dims, hint) : c;
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool clamp_fn(FxLower *L, const Args *a, const char *hint, FxValue *out) {
  if (!want_args(L, a, 3, 3) || !only_kwargs(L, a, NULL, 0)) return false;
  FxValue *lo = &a->pos_args[0], *x = &a->pos_args[1], *hi = &a->pos_args[2];
  for (int k = 0; k < 3; k++)
    if (a->pos_args[k].kind != V_TENSOR && a->pos_args[k].kind != V_SCALAR)
      return fx_err_at(L->err, a->pos_args[k].pos, "clamp() needs arrays or numbers");
  IrType t, t2;
  if (!unify(L, a->e->pos, lo, x, &t) || !unify(L, a->e->pos, x, hi, &t2)) return false;
  if (t == IR_INVALID) t = t2;
  if (t == IR_INVALID) t = IR_F32;
  if (!check_kind(L, a->e->pos, "clamp", K_NUMERIC, t)) return false;
  FxValue vals[3] = {*lo, *x, *hi};
  IrInstr *r = elementwise(L, a->e->pos, IR_OP_CLAMP, vals, 3, t, t, hint);
  if (!r) return false;
  tensor_val(out, a->e->pos, r);
  return true;
}

static bool lower_call(FxLower *L, const FxExpr *e, const char *hint, FxValue *out) {
  const FxBinding *b = fx_lookup(L, e->name, e->pos);
  if (L->err->set) return false;
  if (b && b->kind != B_DEF)
    return fx_err_at(L->err, e->pos, "'%s' is %s, not a function", e->name, b->kind == B_PARAM ? "a param" : "a value");
  if (!b && !fx_is_builtin(e->name)) {
    const char *s = suggest_fn(e->name);
    if (s) return fx_err_at(L->err, e->pos, "unknown function '%s' (did you mean '%s'?)", e->name, s);
    return fx_err_at(L->err, e->pos, "unknown function '%s'", e->name);
  }
  Args a;
  memset(&a, 0, sizeof a);
  a.e = e;
  a.pos_args = fx_calloc((size_t)(e->nargs ? e->nargs : 1), sizeof(FxValue));
  if (!a.pos_args) return fx_oom(L);
  bool ok = false;
  for (int k = 0; k < e->nargs; k++) {
    FxValue v;
    if (!fx_eval(L, e->args[k], NULL, &v)) goto done;
    if (e->argnames[k]) {
      for (int j = 0; j < a.nkw; j++)
        if (strcmp(a.kwnames[j], e->argnames[k]) == 0) {
          fx_err_at(L->err, e->args[k]->pos, "argument '%s' given twice", e->argnames[k]);
          goto done;
        }
      if (a.nkw == 4 || b) {
        fx_err_at(L->err, e->args[k]->pos, "%s() has no argument named '%s'", e->name, e->argnames[k]);
        goto done;
      }
      a.kw[a.nkw] = v;
      a.kwnames[a.nkw] = e->argnames[k];
      a.kwexpr[a.nkw] = e->args[k];
      a.nkw++;
    } else {
      a.pos_args[a.npos++] = v;
    }
  }
  if (b) {
    ok = fx_call_def(L, b->def, a.pos_args, a.npos, e->pos, hint, out);
    goto done;
  }
  const char *fn = e->name;
  for (size_t k = 0; k < sizeof unary_fns / sizeof *unary_fns; k++)
    if (strcmp(unary_fns[k].name, fn) == 0) {
      ok = unary_fn(L, &a, unary_fns[k].op, unary_fns[k].kind, hint, out);
      goto done;
    }
  for (size_t k = 0; k < sizeof binary_fns / sizeof *binary_fns; k++)
    if (strcmp(binary_fns[k].name, fn) == 0) {
      ok = binary_fn(L, &a, binary_fns[k].op, binary_fns[k].kind, hint, out);
      goto done;
    }
  if (!strcmp(fn, "select") || !strcmp(fn, "where")) ok = select_fn(L, &a, hint, out);
  else if (!strcmp(fn, "cast")) ok = cast_fn(L, &a, hint, out);
  else if (!strcmp(fn, "concat")) ok = concat_fn(L, &a, false, hint, out);
  else if (!strcmp(fn, "stack")) ok = concat_fn(L, &a, true, hint, out);
  else if (!strcmp(fn, "sum") || !strcmp(fn, "max") || !strcmp(fn, "min") || !strcmp(fn, "mean") || !strcmp(fn, "prod"))
    ok = reduce_fn(L, &a, fn, hint, out);
  else if (!strcmp(fn, "matmul")) ok = matmul_fn(L, &a, hint, out);
  else if (!strcmp(fn, "conv2d")) ok = conv_fn(L, &a, hint, out);
  else if (!strcmp(fn, "rand")) ok = rand_fn(L, &a, hint, out);
  else if (!strcmp(fn, "reshape")) ok = reshape_fn(L, &a, hint, out);
  else if (!strcmp(fn, "transpose")) ok = transpose_fn(L, &a, hint, out);
  else if (!strcmp(fn, "broadcast")) ok = broadcast_fn(L, &a, hint, out);
  else if (!strcmp(fn, "iota")) ok = iota_fn(L, &a, hint, out);
  else if (!strcmp(fn, "zeros") || !strcmp(fn, "ones") || !strcmp(fn, "full")) ok = full_fn(L, &a, fn, hint, out);
  else if (!strcmp(fn, "clamp")) ok = clamp_fn(L, &a, hint, out);
  else ok = fx_err_at(L->err, e->pos, "internal error: builtin '%s' has no lowering", fn);
done:
  fx_free(a.pos_args);
  return ok;
}

/* ---------- the evaluator ---------- */

bool fx_eval(FxLower *L, const FxExpr *e, const char *hint, FxValue *out) {
  memset(out, 0, sizeof *out);
  out->pos = e->pos;
  switch (e->kind) {
  case E_INT: scalar_int(out, e->pos, e->ival); return true;
  case E_FLOAT: scalar_float(out, e->pos, e->fval); return true;
  case E_BOOL:
    scalar_int(out, e->pos, e->ival);
    out->st = IR_PRED;
    return true;
  case E_STRING:
    out->kind = V_STRING;
    out->str = e->name;
    return true;
  case E_TYPE: {
    out->kind = V_TYPE;
    out->ty = e->type;
    out->has_dims = e->has_dims;
    if (e->nargs > IR_MAX_RANK) return fx_err_at(L->err, e->pos, "too many dimensions (%d; the limit is %d)", e->nargs, IR_MAX_RANK);
    out->rank = e->nargs;
    for (int k = 0; k < e->nargs; k++) {
      if (!fx_eval_int(L, e->args[k], "a dimension", &out->dims[k])) return false;
      if (out->dims[k] < 0) return fx_err_at(L->err, e->args[k]->pos, "dimension %" PRId64 " is negative", out->dims[k]);
    }
    if (ir_type_is_complex(e->type) || e->type == IR_S4 || e->type == IR_U4 || ir_type_is_f8(e->type))
      return fx_err_at(L->err, e->pos, "element type %s is not supported in .fx", ir_type_name(e->type));
    return fx_check_shape(L, e->pos, e->type, out->rank, out->dims);
  }
  case E_LIST: {
    out->kind = V_LIST;
    out->nitems = e->nargs;
    out->items = arena_alloc(&L->m->arena, sizeof(FxValue) * (size_t)(e->nargs ? e->nargs : 1));
    if (!out->items) return fx_oom(L);
    for (int k = 0; k < e->nargs; k++)
      if (!fx_eval(L, e->args[k], NULL, &out->items[k])) return false;
    return true;
  }
  case E_NAME: {
    const FxBinding *b = fx_lookup(L, e->name, e->pos);
    if (L->err->set) return false;
    if (!b) {
      if (strcmp(e->name, "pi") == 0) {
        scalar_float(out, e->pos, 3.14159265358979323846);
        return true;
      }
      if (fx_is_builtin(e->name)) return fx_err_at(L->err, e->pos, "'%s' is a function; call it: %s(...)", e->name, e->name);
      const char *ty = fx_foreign_type(e->name, strlen(e->name));
      if (ty) return fx_err_at(L->err, e->pos, "unknown name '%s': as an element type, XLA (and .fx) spell it '%s'", e->name, ty);
      const char *s = suggest_name(L, e->name);
      if (s) return fx_err_at(L->err, e->pos, "unknown name '%s' (did you mean '%s'?)", e->name, s);
      return fx_err_at(L->err, e->pos, "unknown name '%s'", e->name);
    }
    if (b->kind == B_DEF) return fx_err_at(L->err, e->pos, "'%s' is a function; call it: %s(...)", e->name, e->name);
    *out = b->v;
    out->pos = e->pos;
    return true;
  }
  case E_UNARY: return lower_unary(L, e, hint, out);
  case E_BINARY: return lower_binary(L, e, hint, out);
  case E_CALL: return lower_call(L, e, hint, out);
  case E_INDEX: return lower_index(L, e, hint, out);
  }
  return fx_err_at(L->err, e->pos, "internal error: unknown expression");
}

bool fx_eval_int(FxLower *L, const FxExpr *e, const char *what, int64_t *out) {
  FxValue v;
  if (!fx_eval(L, e, NULL, &v)) return false;
  if (v.kind == V_SCALAR && v.st == IR_INVALID && v.is_int) {
    *out = v.i;
    return true;
  }
  char buf[64];
  return fx_err_at(L->err, e->pos, "%s must be a compile-time integer (a literal or a let), got %s", what, vdesc(&v, buf, sizeof buf));
}

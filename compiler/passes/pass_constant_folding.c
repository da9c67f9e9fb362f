/* pass_constant_folding.c — evaluates instructions whose operands are all constants (XLA's
 * HloConstantFolding), with a small evaluator of its own (the compiler does not depend on the
 * runtime).
 *
 * Folded: elementwise unary and binary operations, compare, select, clamp, convert, reshape,
 * transpose, and broadcast/iota as *inputs* of a folded operation. Like XLA, a broadcast or iota
 * on its own is not folded (that only makes a bigger constant), and nothing with more than 1024
 * elements is. Types: pred, integers up to 32 bits, bf16 (each result rounded to nearest even), f32
 * and f64 (f16, f8 and 64-bit integers are left alone: their rounding is not modelled here).
 * Elided constants ({...}) are unknown.
 *
 * The folded instruction becomes a constant in place, keeping its name and its users; operands
 * left unused are removed. Each fold is reported: "folded add.3(2, 3) to constant 5".
 *
 * In the priority pipeline, today's XLA (HloConstantFolding): an operation is folded when at
 * least one operand is a constant and every operand is a constant, a broadcast of one or an iota
 * (an operation of broadcasts alone waits for algsimp to sink the broadcast); slices and
 * reduces (whose reducer is one binary operation) and concatenates fold too;
 * and data movement (slice, reshape, transpose, reverse) of a constant whose values the text
 * elided ({...}, as XLA's dumps print large constants) is a constant of elided values too: XLA
 * folds the same text (jax.issue.33666 reads scalars out of elided tables inside its loops). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define FOLD_MAX_ELEMENTS 1024

static bool foldable_type(IrType t) {
  switch (t) {
  case IR_PRED: case IR_S8: case IR_S16: case IR_S32: case IR_U8: case IR_U16: case IR_U32: case IR_F32: case IR_F64:
  case IR_BF16:
    return true;
  default:
    return false;
  }
}

/* Rounds v to what type t can hold (integers wrap as two's complement). */
static double to_type(IrType t, double v) {
  switch (t) {
  case IR_PRED: return v != 0;
  case IR_F32: return (double)(float)v;
  case IR_F64: return v;
  case IR_BF16: { /* the f32 value rounded to its top 16 bits, to nearest even (XLA's bf16) */
    float f = (float)v;
    if (isnan(f)) return v;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&f, &b, sizeof f);
    return (double)f;
  }
  default: break;
  }
  if (isnan(v)) return 0;
  int bits = ir_type_bytes(t) * 8;
  double m = ldexp(1, bits);
  double r = trunc(v);
  if (fabs(r) >= 9.0e15) r = fmod(r, m);
  r = fmod(r, m);
  if (r < 0) r += m;
  if (ir_type_is_signed(t) && r >= m / 2) r -= m;
  return r;
}

static int64_t to_int(double v) { return isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v; }

/* Row-major strides. */
static void strides(const IrShape *s, int64_t *st) {
  int64_t k = 1;
  for (int d = s->rank - 1; d >= 0; d--) {
    st[d] = k;
    k *= s->dims[d];
  }
}

/* Evaluates i's value into out (ir_shape_elements(&i->shape) doubles). Returns false when i is
 * not a constant expression the evaluator knows. depth bounds the recursion. */
static bool eval(const IrInstr *i, double *out, int depth, bool current);

static bool eval_operand(const IrInstr *o, double **buf, int depth, bool current) {
  int64_t n = ir_shape_elements(&o->shape);
  if (!ir_shape_is_array(&o->shape) || n > FOLD_MAX_ELEMENTS || !foldable_type(o->shape.type)) return false;
  *buf = fx_malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!*buf) return false;
  if (!eval(o, *buf, depth + 1, current)) {
    fx_free(*buf);
    *buf = NULL;
    return false;
  }
  return true;
}

static double unary(IrOpcode op, IrType in, double x, bool *ok) {
  bool isf = ir_type_is_float(in);
  bool f32 = in == IR_F32;
  float f = (float)x;
  /* Functions are evaluated in the element type (f32 with the f32 library functions), as the
   * reference interpreter and XLA's evaluator do: folding in double would give constants that
   * differ from the unfolded program in the last bit, and loops amplify such differences. */
  double r;
  if (ir_math_eval(op, x, f32, &r)) return r;
  switch (op) {
  case IR_OP_NEGATE: return -x;
  case IR_OP_SIGN: return isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : x;
  case IR_OP_RSQRT: return f32 ? 1.0f / sqrtf(f) : 1 / sqrt(x);
  case IR_OP_LOGISTIC: return f32 ? 1.0f / (1.0f + expf(-f)) : 1 / (1 + exp(-x));
  case IR_OP_IS_FINITE: return isfinite(x);
  case IR_OP_COPY: return x;
  case IR_OP_NOT:
    if (in == IR_PRED) return x == 0;
    if (isf) break;
    return (double)~to_int(x);
  default: break;
  }
  *ok = false;
  return 0;
}

static double binary(IrOpcode op, IrType in, double a, double b, const char *dir, bool *ok) {
  bool isf = ir_type_is_float(in);
  if (!isf && in != IR_PRED && (op == IR_OP_ADD || op == IR_OP_SUBTRACT || op == IR_OP_MULTIPLY)) {
    /* Integers wrap: compute modulo 2^64 exactly (a product of two 32-bit values does not fit in
     * a double's 53 bits); to_type then keeps the type's low bits. */
    uint64_t x = (uint64_t)to_int(a), y = (uint64_t)to_int(b);
    uint64_t r = op == IR_OP_ADD ? x + y : op == IR_OP_SUBTRACT ? x - y : x * y;
    int bits = ir_type_bytes(in) * 8;
    if (bits < 64) r &= (UINT64_C(1) << bits) - 1;
    if (ir_type_is_signed(in) && bits < 64 && (r >> (bits - 1)) & 1) return (double)(int64_t)(r | ~((UINT64_C(1) << bits) - 1));
    return (double)r;
  }
  switch (op) {
  case IR_OP_ADD: return a + b;
  case IR_OP_SUBTRACT: return a - b;
  case IR_OP_MULTIPLY: return a * b;
  case IR_OP_DIVIDE:
    if (isf) return a / b;
    if (b == 0) break; /* XLA defines x/0 per type; leave it to the runtime */
    return trunc(a / b);
  case IR_OP_REMAINDER:
    if (isf) return in == IR_F32 ? fmodf((float)a, (float)b) : fmod(a, b);
    if (b == 0) break;
    return (double)(to_int(a) % to_int(b));
  case IR_OP_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case IR_OP_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case IR_OP_POWER:
    if (!isf) break;
    return in == IR_F32 ? powf((float)a, (float)b) : pow(a, b);
  case IR_OP_ATAN2: return in == IR_F32 ? atan2f((float)a, (float)b) : atan2(a, b);
  case IR_OP_AND: return in == IR_PRED ? (a != 0 && b != 0) : (double)(to_int(a) & to_int(b));
  case IR_OP_OR: return in == IR_PRED ? (a != 0 || b != 0) : (double)(to_int(a) | to_int(b));
  case IR_OP_XOR: return in == IR_PRED ? ((a != 0) != (b != 0)) : (double)(to_int(a) ^ to_int(b));
  case IR_OP_COMPARE:
    if (!dir) break;
    if (!strcmp(dir, "LT")) return a < b;
    if (!strcmp(dir, "LE")) return a <= b;
    if (!strcmp(dir, "GT")) return a > b;
    if (!strcmp(dir, "GE")) return a >= b;
    if (!strcmp(dir, "EQ")) return a == b;
    if (!strcmp(dir, "NE")) return a != b;
    break;
  default: break;
  }
  *ok = false;
  return 0;
}

static bool eval(const IrInstr *i, double *out, int depth, bool current) {
  const IrShape *s = &i->shape;
  int64_t n = ir_shape_elements(s);
  if (depth > 24 || !ir_shape_is_array(s) || n > FOLD_MAX_ELEMENTS || !foldable_type(s->type)) return false;
  for (int k = 0; k < i->noperands; k++)
    if (!i->operands[k]) return false;
  if (i->op == IR_OP_CONSTANT) {
    const IrLiteral *l = i->literal;
    if (!l || l->elided || !l->values || l->count != n) return false;
    /* Literal text like -0.99999994 decodes to the nearest double; the program computes with the
     * nearest value of the element type, so round first (as the interpreter does). */
    for (int64_t k = 0; k < n; k++) out[k] = to_type(s->type, l->values[k]);
    return true;
  }
  if (i->op == IR_OP_IOTA) {
    int64_t d;
    if (!ir_attr_int(i, "iota_dimension", &d) || d < 0 || d >= s->rank) return false;
    int64_t st[IR_MAX_RANK];
    strides(s, st);
    for (int64_t k = 0; k < n; k++) out[k] = to_type(s->type, (double)((k / st[d]) % s->dims[d]));
    return true;
  }
  double *a = NULL, *b = NULL, *c = NULL;
  bool ok = true;
  IrOpcode op = i->op;
  if (current && op == IR_OP_SLICE) {
    /* Today's XLA folds any operation of constants (HloConstantFolding): slices too. */
    const IrInstr *x = i->operands[0];
    int64_t st[IR_MAX_RANK], lim[IR_MAX_RANK], str[IR_MAX_RANK], ost[IR_MAX_RANK], ist[IR_MAX_RANK];
    if (i->noperands != 1 || x->shape.type != s->type || ir_attr_slice(i, st, lim, str, IR_MAX_RANK) != s->rank ||
        x->shape.rank != s->rank || !eval_operand(x, &a, depth, current))
      return false;
    strides(s, ost);
    strides(&x->shape, ist);
    for (int64_t k = 0; k < n; k++) {
      int64_t src = 0;
      for (int d = 0; d < s->rank; d++) src += (st[d] + ((k / ost[d]) % s->dims[d]) * str[d]) * ist[d];
      out[k] = a[src];
    }
    fx_free(a);
    return true;
  }
  if (current && op == IR_OP_CONCATENATE) {
    /* A concatenate of constants (today's XLA folds any operation of constants). */
    int64_t cd;
    int64_t dims1[1];
    if (ir_attr_dims(i, "dimensions", dims1, 1) != 1) return false;
    cd = dims1[0];
    if (cd < 0 || cd >= s->rank || i->noperands < 1) return false;
    int64_t ost[IR_MAX_RANK];
    strides(s, ost);
    int64_t offset = 0;
    for (int o = 0; o < i->noperands && ok; o++) {
      const IrInstr *x = i->operands[o];
      if (x->shape.type != s->type || x->shape.rank != s->rank || !eval_operand(x, &a, depth, current)) return false;
      int64_t ist[IR_MAX_RANK], xn = ir_shape_elements(&x->shape);
      strides(&x->shape, ist);
      for (int64_t q = 0; q < xn; q++) {
        int64_t dst = 0;
        for (int d = 0; d < s->rank; d++) {
          int64_t c = (q / ist[d]) % x->shape.dims[d];
          dst += (d == cd ? c + offset : c) * ost[d];
        }
        out[dst] = a[q];
      }
      offset += x->shape.dims[cd];
      fx_free(a);
      a = NULL;
    }
    return ok && offset == s->dims[cd];
  }
  if (current && op == IR_OP_REDUCE) {
    /* A reduce of constants (HloEvaluator's HandleReduce: each result element starts at the
     * initial value and combines the reduced elements in row-major order), when the reducer is
     * one binary operation of its two parameters. */
    if (i->noperands != 2) return false;
    const IrInstr *x = i->operands[0], *init = i->operands[1];
    bool swapped = false;
    IrOpcode rop = simp_reducer_op(ir_attr_comp(i, "to_apply"), &swapped);
    int64_t rd[IR_MAX_RANK];
    int nr = ir_attr_dims(i, "dimensions", rd, IR_MAX_RANK);
    if (rop == IR_OP_COUNT || x->shape.type != s->type || init->shape.type != s->type || init->shape.rank != 0 || nr < 0 ||
        x->shape.rank != s->rank + nr)
      return false;
    bool reduced[IR_MAX_RANK] = {false};
    for (int d = 0; d < nr; d++) {
      if (rd[d] < 0 || rd[d] >= x->shape.rank || reduced[rd[d]]) return false;
      reduced[rd[d]] = true;
    }
    for (int d = 0, o = 0; d < x->shape.rank; d++)
      if (!reduced[d] && x->shape.dims[d] != s->dims[o++]) return false;
    if (!eval_operand(x, &a, depth, current)) return false;
    if (!eval_operand(init, &b, depth, current)) {
      fx_free(a);
      return false;
    }
    for (int64_t k = 0; k < n; k++) out[k] = b[0];
    int64_t xs[IR_MAX_RANK], os[IR_MAX_RANK], xn = ir_shape_elements(&x->shape);
    strides(&x->shape, xs);
    strides(s, os);
    for (int64_t q = 0; ok && q < xn; q++) {
      int64_t dst = 0;
      for (int d = 0, o = 0; d < x->shape.rank; d++)
        if (!reduced[d]) dst += ((q / xs[d]) % x->shape.dims[d]) * os[o++];
      double acc = out[dst];
      out[dst] = to_type(s->type, swapped ? binary(rop, s->type, a[q], acc, NULL, &ok) : binary(rop, s->type, acc, a[q], NULL, &ok));
    }
    fx_free(a);
    fx_free(b);
    return ok;
  }
  if (op == IR_OP_BROADCAST || op == IR_OP_RESHAPE || op == IR_OP_BITCAST || op == IR_OP_TRANSPOSE) {
    if (i->noperands != 1) return false;
    const IrInstr *x = i->operands[0];
    if (x->shape.type != s->type && op != IR_OP_BITCAST) return false;
    if (op == IR_OP_BITCAST && x->shape.type != s->type) return false;
    if (!eval_operand(x, &a, depth, current)) return false;
    if (op == IR_OP_RESHAPE || op == IR_OP_BITCAST) {
      if (ir_shape_elements(&x->shape) != n) ok = false;
      else memcpy(out, a, sizeof(double) * (size_t)n);
    } else {
      int64_t dims[IR_MAX_RANK], ost[IR_MAX_RANK], ist[IR_MAX_RANK];
      int nd = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
      if (nd < 0) nd = 0;
      strides(s, ost);
      strides(&x->shape, ist);
      /* Output dimension od walks input dimension id: a broadcast's dimensions[j] names the
       * output dimension of input dimension j, a transpose's the input dimension of output j. */
      bool bcast = op == IR_OP_BROADCAST;
      if (nd != (bcast ? x->shape.rank : s->rank)) ok = false;
      for (int64_t k = 0; ok && k < n; k++) {
        int64_t src = 0;
        for (int j = 0; j < nd; j++) {
          if (dims[j] < 0 || dims[j] >= s->rank) {
            ok = false;
            break;
          }
          int64_t od = bcast ? dims[j] : j, id = bcast ? j : dims[j];
          src += ((k / ost[od]) % s->dims[od]) * ist[id];
        }
        if (ok) out[k] = a[src];
      }
    }
    fx_free(a);
    return ok;
  }
  IrCategory cat = ir_op_info(op)->category;
  if (cat == IR_CAT_UNARY) {
    if (i->noperands != 1) return false;
    const IrInstr *x = i->operands[0];
    if (!ir_shape_same_dims(&x->shape, s) || !eval_operand(x, &a, depth, current)) return false;
    IrType in = x->shape.type;
    if (op == IR_OP_CONVERT) {
      for (int64_t k = 0; k < n; k++) {
        double v = a[k];
        if (ir_type_is_float(in) && !ir_type_is_float(s->type) && s->type != IR_PRED) {
          /* Float to integer: XLA saturates and maps NaN to 0. */
          int bits = ir_type_bytes(s->type) * 8;
          double lo = ir_type_is_signed(s->type) ? -ldexp(1, bits - 1) : 0;
          double hi = ir_type_is_signed(s->type) ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
          v = isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : trunc(v);
        }
        out[k] = to_type(s->type, v);
      }
    } else if (op == IR_OP_BITCAST_CONVERT || op == IR_OP_REDUCE_PRECISION || op == IR_OP_POPCNT || op == IR_OP_CLZ ||
               op == IR_OP_REAL || op == IR_OP_IMAG) {
      ok = false;
    } else {
      if (in != s->type && op != IR_OP_IS_FINITE) ok = false;
      for (int64_t k = 0; ok && k < n; k++) out[k] = to_type(s->type, unary(op, in, a[k], &ok));
    }
    fx_free(a);
    return ok;
  }
  if (cat == IR_CAT_BINARY) {
    if (i->noperands != 2 || op == IR_OP_COMPLEX || op == IR_OP_SHL || op == IR_OP_SHRA || op == IR_OP_SHRL) return false;
    const IrInstr *x = i->operands[0], *y = i->operands[1];
    if (!ir_shape_same_dims(&x->shape, s) || !ir_shape_same_dims(&y->shape, s) || x->shape.type != y->shape.type) return false;
    if (op != IR_OP_COMPARE && x->shape.type != s->type) return false;
    if (!eval_operand(x, &a, depth, current)) return false;
    if (!eval_operand(y, &b, depth, current)) {
      fx_free(a);
      return false;
    }
    const char *dir = op == IR_OP_COMPARE ? ir_compare_direction(i) : NULL;
    for (int64_t k = 0; ok && k < n; k++) out[k] = to_type(s->type, binary(op, x->shape.type, a[k], b[k], dir, &ok));
    fx_free(a);
    fx_free(b);
    return ok;
  }
  if (op == IR_OP_SELECT || op == IR_OP_CLAMP) {
    if (i->noperands != 3) return false;
    for (int k = 0; k < 3; k++) {
      const IrShape *os = &i->operands[k]->shape;
      bool scalar_ok = op == IR_OP_CLAMP && k != 1 && os->rank == 0;
      if (!ir_shape_same_dims(os, s) && !scalar_ok) return false;
    }
    if (!eval_operand(i->operands[0], &a, depth, current)) return false;
    if (!eval_operand(i->operands[1], &b, depth, current) || !eval_operand(i->operands[2], &c, depth, current)) {
      fx_free(a);
      fx_free(b);
      return false;
    }
    for (int64_t k = 0; k < n; k++) {
      if (op == IR_OP_SELECT) {
        out[k] = a[k] != 0 ? b[k] : c[k];
      } else {
        double lo = i->operands[0]->shape.rank ? a[k] : a[0], hi = i->operands[2]->shape.rank ? c[k] : c[0];
        double v = b[k] < lo ? lo : b[k];
        out[k] = v > hi ? hi : v;
      }
    }
    fx_free(a);
    fx_free(b);
    fx_free(c);
    return true;
  }
  return false;
}

/* Operations worth folding on their own: not sources, not pure growth (broadcast, iota). */
static bool fold_candidate(const IrInstr *i) {
  if (i->op == IR_OP_CONSTANT || i->op == IR_OP_IOTA || i->op == IR_OP_BROADCAST || i->op == IR_OP_PARAMETER) return false;
  if (i->noperands == 0) return false;
  IrCategory cat = ir_op_info(i->op)->category;
  return cat == IR_CAT_UNARY || cat == IR_CAT_BINARY || cat == IR_CAT_TERNARY || i->op == IR_OP_RESHAPE ||
         i->op == IR_OP_TRANSPOSE || i->op == IR_OP_BITCAST;
}

/* Today's XLA (HloConstantFolding::Run, IsFoldable): any operation but a broadcast, an iota, an
 * FFT, a loop, or one with a side effect, when at least one operand is a constant and every
 * operand is a constant, a broadcast of one, or an iota. */
static bool fold_candidate_current(const IrInstr *i) {
  if (i->noperands == 0 || i->op == IR_OP_BROADCAST || i->op == IR_OP_IOTA || i->op == IR_OP_FFT || i->op == IR_OP_TUPLE ||
      i->op == IR_OP_BITCAST_CONVERT)
    return false;
  IrCategory cat = ir_op_info(i->op)->category;
  if (!(cat == IR_CAT_UNARY || cat == IR_CAT_BINARY || cat == IR_CAT_TERNARY || cat == IR_CAT_DATA ||
        cat == IR_CAT_REDUCE || i->op == IR_OP_DOT))
    return false;
  bool any_constant = false;
  for (int o = 0; o < i->noperands; o++) {
    const IrInstr *x = i->operands[o];
    if (!x) return false;
    any_constant = any_constant || x->op == IR_OP_CONSTANT;
    if (!(x->op == IR_OP_CONSTANT || x->op == IR_OP_IOTA ||
          (x->op == IR_OP_BROADCAST && x->noperands == 1 && x->operands[0] && x->operands[0]->op == IR_OP_CONSTANT)))
      return false;
  }
  return any_constant && ir_shape_is_array(&i->shape);
}

/* Data movement of a constant whose values the text elided ({...}): the result's values are
 * elided too (the same unknown values, moved; the interpreter reads both as zeros). XLA folds
 * these (jax.issue.33666 slices scalars out of elided tables). */
static bool moves_elided(const IrInstr *i) {
  if (i->noperands != 1 || !i->operands[0] || i->operands[0]->op != IR_OP_CONSTANT) return false;
  const IrLiteral *l = i->operands[0]->literal;
  if (!l || !l->elided || i->shape.type != i->operands[0]->shape.type) return false;
  return i->op == IR_OP_SLICE || i->op == IR_OP_RESHAPE || i->op == IR_OP_TRANSPOSE || i->op == IR_OP_REVERSE ||
         i->op == IR_OP_BITCAST;
}

static IrLiteral *elided_literal(Arena *a) {
  IrLiteral *l = arena_alloc(a, sizeof *l);
  if (!l) return NULL;
  memset(l, 0, sizeof *l);
  l->elided = true;
  l->text = "{...}";
  return l;
}

/* What an elided fold was: the data movement (op, its elided source, its shape and its slice or
 * dimensions text), and the constant it became. */
typedef struct {
  IrOpcode op;
  const IrInstr *src;
  const IrShape *shape;
  const char *attr;
  IrInstr *result;
} ElidedFold;

static const char *movement_attr(const IrInstr *i) {
  return ir_attr_text(i, i->op == IR_OP_SLICE ? "slice" : "dimensions");
}

/* The constant an earlier identical data movement of the same elided constant was folded into, so
 * that one value does not become two constants cse could not tell apart (elided values are never
 * equal to cse). */
static IrInstr *same_fold(const ElidedFold *memo, int n, const IrInstr *i) {
  const char *b = movement_attr(i);
  for (int k = 0; k < n; k++) {
    const ElidedFold *f = &memo[k];
    if (f->op != i->op || f->src != i->operands[0] || !ir_shape_equal(f->shape, &i->shape)) continue;
    if ((f->attr == NULL) == (b == NULL) && (!b || strcmp(f->attr, b) == 0)) return f->result;
  }
  return NULL;
}

#define ELIDED_MEMO 4096

static bool run(IrModule *m, PassContext *cx, bool *changed, bool current) {
  int folds = 0;
  double *vals = fx_malloc(sizeof(double) * FOLD_MAX_ELEMENTS);
  ElidedFold *memo = current ? fx_malloc(sizeof(ElidedFold) * ELIDED_MEMO) : NULL;
  if (!vals || (current && !memo)) {
    fx_free(vals);
    fx_free(memo);
    return fx_error_set(cx->err, NULL, 0, 0, "constant-folding: out of memory");
  }
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    int nmemo = 0;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *i = comp->instrs[k];
      if (i->dead) continue;
      int64_t n = ir_shape_elements(&i->shape);
      IrLiteral *lit = NULL;
      if (current) {
        if (!fold_candidate_current(i)) continue;
        if (moves_elided(i)) {
          IrInstr *prior = same_fold(memo, nmemo, i);
          if (prior) {
            char why[300];
            snprintf(why, sizeof why, "replaced %s by %s: the same %s of the elided constant %s", i->name, prior->name,
                     ir_op_name(i->op), i->operands[0]->name);
            PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "fold", .producer = i->name,
                              .result = prior->name, .accepted = true};
            pass_emit(cx->sink, &d, "%s", why);
            int n0 = comp->ninstrs;
            simp_replace(i, prior);
            k -= n0 - comp->ninstrs;
            if (k < -1) k = -1;
            folds++;
            continue;
          }
          lit = elided_literal(&m->arena);
          IrShape *sh = lit ? arena_alloc(&m->arena, sizeof *sh) : NULL;
          if (!sh || !ir_shape_copy(&m->arena, sh, &i->shape)) {
            fx_free(vals);
            fx_free(memo);
            return fx_error_set(cx->err, NULL, 0, 0, "constant-folding: out of memory");
          }
          /* i becomes the constant in place below: remember what it was. */
          if (nmemo < ELIDED_MEMO) memo[nmemo++] = (ElidedFold){i->op, i->operands[0], sh, movement_attr(i), i};
        }
      } else {
        if (!fold_candidate(i)) continue;
        /* Every operand must itself be a constant expression (constant, or broadcast/iota/... of one). */
        bool all_const = true;
        for (int o = 0; o < i->noperands && all_const; o++) {
          const IrInstr *op = i->operands[o];
          all_const = op && (op->op == IR_OP_CONSTANT || op->op == IR_OP_IOTA || op->op == IR_OP_BROADCAST ||
                             op->op == IR_OP_RESHAPE || op->op == IR_OP_TRANSPOSE || op->op == IR_OP_BITCAST);
        }
        if (!all_const) continue;
      }
      if (!lit) {
        if (!ir_shape_is_array(&i->shape) || n > FOLD_MAX_ELEMENTS || !eval(i, vals, 0, current)) continue;
        lit = ir_literal_new(&m->arena, vals, n, i->shape.type, &i->shape);
      }
      if (!lit) {
        fx_free(vals);
        fx_free(memo);
        return fx_error_set(cx->err, NULL, 0, 0, "constant-folding: out of memory");
      }
      char desc[256];
      simp_describe(i, desc, sizeof desc);
      IrInstr *ops[64];
      int nops = i->noperands < 64 ? i->noperands : 64;
      for (int o = 0; o < nops; o++) ops[o] = i->operands[o];
      /* Becomes a constant in place: same name, same users. */
      for (int o = 0; o < i->noperands; o++) ir_set_operand(i, o, NULL);
      i->noperands = 0;
      i->op = IR_OP_CONSTANT;
      i->literal = lit;
      const IrAttr *meta = ir_attr_get(i, "metadata");
      IrAttr keep;
      bool has_meta = meta != NULL;
      if (has_meta) keep = *meta;
      i->nattrs = 0;
      if (has_meta) ir_attr_set_text(i, "metadata", keep.text);
      int removed = 0;
      for (int o = 0; o < nops; o++) {
        bool seen = false;
        for (int j = 0; j < o; j++) seen = seen || ops[j] == ops[o];
        if (!seen) removed += simp_drop_dead(ops[o]);
      }
      k -= removed;
      if (k < -1) k = -1;
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "fold", .producer = i->name, .result = i->name,
                        .accepted = true};
      pass_metric(&d, "elements", (double)n);
      pass_emit(cx->sink, &d, "folded %s to constant %s", desc, strlen(lit->text) <= 60 ? lit->text : "(array)");
      folds++;
    }
  }
  fx_free(vals);
  fx_free(memo);
  *changed = folds > 0;
  return true;
}

static bool run_constant_folding(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, false); }
static bool run_constant_folding_current(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, true); }

const Pass pass_constant_folding = {"constant-folding",
                                    "evaluates operations on constants (results up to 1024 elements)",
                                    run_constant_folding};
const Pass pass_constant_folding_current = {
    "constant-folding",
    "evaluates operations on constants as today's XLA (at least one operand a constant, slices too, data movement "
    "of elided constants; results up to 1024 elements)",
    run_constant_folding_current};

/* algsimp_current.c — the rewrites of today's XLA AlgebraicSimplifier (and its GPU variant) that
 * the priority pipeline's algsimp makes besides the classic ones (pass_algsimp.c). Each follows
 * the XLA handler named beside it:
 *
 *   A - A -> 0 (integers)                        HandleSubtract
 *   A - C -> A + (-C)   (C a constant, or a broadcast of one)
 *   0 * A -> 0;  A * 0 -> 0   (integers: a float NaN times 0 is NaN)   HandleMultiply
 *   (a * c) * broadcast(b) -> a * broadcast(b * c);  (A * C1) * C2 -> A * (C1 * C2)
 *   reduce-precision to the operand's own precision -> the operand   HandleReducePrecision
 *   A < 0 -> false, 0 > A -> false, A >= 0 -> true, 0 <= A -> true  (A known >= 0: abs, A * A,
 *   max with a value >= 0, ...)                   HandleCompare / IsNonNegative
 *   A / 2^k -> A >> k (unsigned), with the sign (signed)      HandleDivide / TryDivideToShift
 *   exp(A) / exp(B) -> exp(A - B);  A / exp(B) -> A * exp(-B)
 *   A / pow(B, C) -> A * pow(B, -C)
 *   A / sqrt(B) -> A * rsqrt(B);  A / rsqrt(B) -> A * sqrt(B)   (the root read only there)
 *   A / C -> A * (1 / C)   (floating point; C a constant, or a broadcast of one)
 *   (A / B) / (C / D) -> (A * D) / (B * C);  (A / B) / C -> A / (B * C);  A / (B / C) -> (A * C) / B
 *   convert(pred X) / broadcast(Y) -> broadcast(1 / Y) * X
 *   (A % B) % B -> A % B;  A % 2^k -> A & (2^k - 1), with the sign (signed)  HandleRemainder
 *   iota % N -> iota when N exceeds the iota's count
 *   C + A -> A + C;  (A + C1) + C2 -> A + (C1 + C2);  (C1 - A) + C2 -> (C1 + C2) - A   HandleAdd
 *   A + (B - A) -> B   (integers)
 *   max(x, lowest) -> x;  min(x, highest) -> x              HandleMaximum, HandleMinimum
 *   reduce over dimensions of size 1 -> reshape              HandleReduce
 *   sum of negate(x) -> negate(sum of x);  reduce(transpose(x)) -> reduce(x) (then a transpose if
 *   the kept dimensions come out reordered);  reduce(reduce(x)), one reducer and init -> one
 *   reduce;  reduce(reshape(x)) changing only reduced dimensions -> reduce(x), only kept ones ->
 *   reshape(reduce(x))
 *   constant of one value -> broadcast(scalar); 0, 1, 2, ... -> iota   HandleConstant
 *   reshape/transpose/reverse/slice/dynamic-slice(broadcast(scalar)) -> broadcast(scalar)
 *   dynamic-update-slice(broadcast(s), u, constant starts) -> pad(u, s)   HandleDynamicUpdateSlice
 *   dynamic-update-slice(x, u) with u the whole of x -> u
 *   slice(pad(x)): padding only -> broadcast(value); x back -> x; inside x -> slice(x)   HandleSlice
 *   slice(broadcast(x)) -> broadcast(x) or broadcast(slice(x))
 *   slice(concatenate(a, b, c, d)) over b and c -> slice(concatenate(b, c))
 *   slice(reshape(x)) of leading rows -> reshape(slice(x))     TryToReorderSliceAndReshape
 *   slice(reverse(x)) -> reverse(slice(x))                     TryToReorderSliceAndReverse
 *   a stride reaching past the limit -> stride 1               RemoveRedundantStride
 *   dynamic-slice of a scalar or of all of x -> x             HandleDynamicSlice
 *   a dimension a dynamic slice takes whole starts at 0
 *   dynamic-slice(broadcast / unit-dimension reshape / transpose of x) -> the same of dynamic-slice(x)
 *   dynamic-slice at constant starts -> slice (starts clamped as the operation clamps them)
 *   broadcast(iota) -> iota                                    HandleBroadcast
 *   broadcast(x with size-1 dimensions) -> broadcast(reshape(x) without them)   HandleBroadcast
 *   reshape(iota) -> iota (or a sum of iotas)                  HandleReshape
 *   reshape(broadcast(x)) leaving x's dimensions whole -> broadcast(x)
 *   dot with size-1 dimensions -> reshape(dot without them)    HandleDot (RemoveDegenerateDimensionFromDot)
 *   dot contracting nothing -> multiply(broadcast(lhs), broadcast(rhs))   HandleDot
 *   op(broadcast(x), broadcast(scalar)...) -> broadcast(op(x, ...)) for an elementwise op
 *                               TryToSinkBroadcastAfterOpWithUniqueNonScalarOperand
 *   conditional(convert(pred p), b0, b1) -> conditional(p, true=b1, false=b0)
 *
 * After layout normalization (XLA's layout-sensitive simplifier, Simp.layout_sensitive) the rules
 * that would make a reshape or transpose are off, as XLA has them.
 *
 * These change what a kernel computes, and so what fusion costs and decides: XLA's kernels read
 * `x * 0.5` where the program wrote `x / 2`, shift where it divided by 2. A rewrite keeps the
 * rewritten instruction's name when it stays (the outer operation of the new form), so `why`
 * still finds it; new instructions take names made from it. New constants are computed here in
 * the element type (f32 and f64, bf16 rounded to nearest even, integers up to 32 bits; other
 * types keep their instruction). Every rewrite is reported: "replaced sub(x, 1) by add(x, -1):
 * subtracting a constant is adding its negation". */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algsimp.h"
#include "passes.h"
#include "simplify.h"

/* ---------- building ---------- */

/* A new instruction just before `at`, named after `base` (made unique). */
static IrInstr *add_before(IrInstr *at, IrOpcode op, const IrShape *shape, IrInstr *const *ops, int n, const char *base) {
  return ir_instr_new_before(at->parent, at, op, shape, ops, n, base);
}

/* A constant of values (count of them) with shape `shape`, before `at`. */
static IrInstr *constant_before(IrInstr *at, const IrShape *shape, const double *values, int64_t count, const char *base) {
  IrInstr *c = add_before(at, IR_OP_CONSTANT, shape, NULL, 0, base);
  if (!c) return NULL;
  c->literal = ir_literal_new(&at->parent->module->arena, values, count, shape->type, shape);
  return c->literal ? c : NULL;
}

/* The scalar v of type t broadcast to `shape` (the scalar itself when shape is a scalar): XLA's
 * MakeScalarLike. */
static IrInstr *scalar_like(IrInstr *at, const IrShape *shape, double v, const char *base) {
  IrShape s = ir_shape_scalar(shape->type);
  IrInstr *c = constant_before(at, &s, &v, 1, base);
  if (!c || ir_shape_is_scalar(shape)) return c;
  IrInstr *b = add_before(at, IR_OP_BROADCAST, shape, &c, 1, base);
  if (b) ir_attr_set_text(b, "dimensions", "{}");
  return b;
}

/* Whether the element type's values are exact in a double and this file can compute in it. */
static bool computable(IrType t) {
  switch (t) {
  case IR_S8: case IR_S16: case IR_S32: case IR_U8: case IR_U16: case IR_U32: case IR_F32: case IR_F64: case IR_BF16:
    return true;
  default:
    return false;
  }
}

/* v rounded to the element type (floats to nearest even, integers wrapped). */
static double round_to(IrType t, double v) {
  if (t == IR_F64) return v;
  if (t == IR_F32) return (double)(float)v;
  if (t == IR_BF16) {
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) != 0x7f800000u) bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
  }
  int bits = ir_type_bytes(t) * 8;
  double m = ldexp(1, bits), r = fmod(trunc(v), m);
  if (r < 0) r += m;
  if (ir_type_is_signed(t) && r >= m / 2) r -= m;
  return r;
}

/* When x is a constant (known values) or a broadcast of one: the constant, and *bcast says which.
 * XLA's m::Constant / m::Broadcast(m::Constant). */
static IrInstr *constant_operand(IrInstr *x, bool *bcast) {
  *bcast = false;
  if (x->op == IR_OP_BROADCAST && x->noperands == 1 && x->operands[0] && x->operands[0]->op == IR_OP_CONSTANT) {
    *bcast = true;
    x = x->operands[0];
  }
  if (x->op != IR_OP_CONSTANT || !x->literal || x->literal->elided || !x->literal->values ||
      x->literal->count != ir_shape_elements(&x->shape) || !computable(x->shape.type))
    return NULL;
  return x;
}

/* A copy of constant c with each value v replaced by f(v), as the same shape (broadcast like b
 * when bcast: the same dimensions), before `at`. */
static IrInstr *mapped_constant(IrInstr *at, IrInstr *b, IrInstr *c, bool bcast, double (*f)(IrType, double),
                                const char *base) {
  const IrLiteral *l = c->literal;
  double *v = fx_malloc(sizeof(double) * (size_t)(l->count ? l->count : 1));
  if (!v) return NULL;
  for (int64_t k = 0; k < l->count; k++) v[k] = round_to(c->shape.type, f(c->shape.type, l->values[k]));
  IrInstr *nc = constant_before(at, &c->shape, v, l->count, base);
  fx_free(v);
  if (!nc || !bcast) return nc;
  IrInstr *nb = add_before(at, IR_OP_BROADCAST, &b->shape, &nc, 1, base);
  if (!nb) return NULL;
  const char *dims = ir_attr_text(b, "dimensions");
  ir_attr_set_text(nb, "dimensions", dims ? dims : "{}");
  return nb;
}

static double negated(IrType t, double v) {
  (void)t;
  return -v;
}

static double inverted(IrType t, double v) {
  if (t == IR_F32 || t == IR_BF16) return (double)(1.0f / (float)v);
  return 1.0 / v;
}

/* Makes i the binary op `op` of a and b in place (same name, shape and users). */
static void become(IrInstr *i, IrOpcode op, IrInstr *a, IrInstr *b) {
  IrInstr *olds[3];
  int n = i->noperands < 3 ? i->noperands : 3;
  for (int k = 0; k < n; k++) olds[k] = i->operands[k];
  if (i->noperands >= 2) {
    ir_set_operand(i, 0, a);
    ir_set_operand(i, 1, b);
  }
  for (int k = 2; k < i->noperands; k++) ir_set_operand(i, k, NULL);
  i->noperands = 2;
  i->op = op;
  for (int k = 0; k < n; k++)
    if (olds[k] && olds[k] != a && olds[k] != b) simp_drop_dead(olds[k]);
}

static void rewritten(Simp *s, IrInstr *i, const char *before, const char *why) {
  char after[256], msg[700];
  simp_describe(i, after, sizeof after);
  snprintf(msg, sizeof msg, "replaced %s by %s: %s", before, after, why);
  algsimp_report(s, "rewrite", i, NULL, i->name, msg);
}

/* The scalar integer value of c when every element of x is that constant (x a constant or a
 * broadcast of one; XLA's ConstantEffectiveScalar). */
static bool int_splat(const IrInstr *x, int64_t *v) {
  double d;
  if (!simp_splat_value(x, &d) || d != trunc(d) || fabs(d) > 9.0e15) return false;
  *v = (int64_t)d;
  return true;
}

static int log2_exact(uint64_t v) {
  if (v == 0 || (v & (v - 1)) != 0) return -1;
  int k = 0;
  while (v > 1) {
    v >>= 1;
    k++;
  }
  return k;
}

/* ---------- subtract ---------- */

static bool subtract(Simp *s, IrInstr *i) {
  IrInstr *a = i->operands[0], *b = i->operands[1];
  char before[256];
  simp_describe(i, before, sizeof before);
  if (a == b && (ir_type_is_int(i->shape.type) || i->shape.type == IR_PRED) && computable(i->shape.type)) {
    IrInstr *z = scalar_like(i, &i->shape, 0, "zero");
    return z && algsimp_forward(s, i, z, "a value minus itself is zero (integers)");
  }
  bool bcast;
  IrInstr *c = constant_operand(b, &bcast);
  if (!c || a->op == IR_OP_CONSTANT || !(ir_type_is_float(c->shape.type) || ir_type_is_int(c->shape.type))) return false;
  IrInstr *neg = mapped_constant(i, b, c, bcast, negated, "negate");
  if (!neg) return false;
  become(i, IR_OP_ADD, a, neg);
  rewritten(s, i, before, "subtracting a constant is adding its negation");
  return true;
}

/* ---------- add ---------- */

/* m::Broadcast(m::ConstantScalar(&c)): a broadcast of a scalar constant; c gets the constant. */
static bool bcast_scalar_constant(IrInstr *x, IrInstr **c) {
  if (x->op != IR_OP_BROADCAST || x->noperands != 1 || !x->operands[0] || x->operands[0]->op != IR_OP_CONSTANT ||
      !ir_shape_is_scalar(&x->operands[0]->shape))
    return false;
  *c = x->operands[0];
  return true;
}

/* XLA's HandleAdd after its identities with zero, in its order:
 *   C + A => A + C   (a constant first, a non-constant second: constants go on the right);
 *   (A + C1) + C2 => A + (C1 + C2);   (C1 - A) + C2 => (C1 + C2) - A
 *     (C1, C2 constants, or broadcasts of scalar constants: the sum is made of the scalars and
 *     broadcast; constant-folding then folds it);
 *   A + (B - A) => B;  (B - A) + A => B   (integers only: exact). */
static bool add(Simp *s, IrInstr *i) {
  IrInstr *a = i->operands[0], *b = i->operands[1];
  char before[256];
  simp_describe(i, before, sizeof before);
  if (a->op == IR_OP_CONSTANT && b->op != IR_OP_CONSTANT) {
    become(i, IR_OP_ADD, b, a);
    rewritten(s, i, before, "constants go on the right of an add (XLA's canonical form, which its reassociations match)");
    return true;
  }
  /* (A + C1) + C2 and (C1 - A) + C2 */
  for (int form = 0; form < 2; form++) {
    IrOpcode inner_op = form == 0 ? IR_OP_ADD : IR_OP_SUBTRACT;
    if (a->op != inner_op || a->noperands != 2) continue;
    IrInstr *x = form == 0 ? a->operands[0] : a->operands[1], *k1 = form == 0 ? a->operands[1] : a->operands[0];
    IrInstr *c1 = NULL, *c2 = NULL;
    bool plain = x->op != IR_OP_CONSTANT && k1->op == IR_OP_CONSTANT && b->op == IR_OP_CONSTANT;
    bool bcast = !plain && x->op != IR_OP_CONSTANT && bcast_scalar_constant(k1, &c1) && bcast_scalar_constant(b, &c2);
    if (!plain && !bcast) continue;
    if (plain) c1 = k1, c2 = b;
    IrInstr *cops[2] = {c1, c2};
    IrInstr *sum = add_before(i, IR_OP_ADD, &c1->shape, cops, 2, "add");
    if (!sum) return false;
    if (ir_shape_is_scalar(&sum->shape) && !ir_shape_is_scalar(&i->shape)) {
      sum = add_before(i, IR_OP_BROADCAST, &i->shape, &sum, 1, "broadcast");
      if (!sum) return false;
      ir_attr_set_text(sum, "dimensions", "{}");
    }
    if (form == 0) become(i, IR_OP_ADD, x, sum);
    else become(i, IR_OP_SUBTRACT, sum, x);
    rewritten(s, i, before,
              form == 0 ? "(A + C1) + C2 is A + (C1 + C2): the constants meet and fold"
                        : "(C1 - A) + C2 is (C1 + C2) - A: the constants meet and fold");
    return true;
  }
  /* A + (B - A) => B */
  if (ir_type_is_int(i->shape.type)) {
    for (int k = 0; k < 2; k++) {
      IrInstr *x = i->operands[k], *d = i->operands[1 - k];
      if (d->op == IR_OP_SUBTRACT && d->noperands == 2 && d->operands[1] == x && ir_shape_equal(&d->operands[0]->shape, &i->shape))
        return algsimp_forward(s, i, d->operands[0], "A + (B - A) is B (integers: exact)");
    }
  }
  return false;
}

/* ---------- multiply ---------- */

static bool is_bcast_of(const IrInstr *x, bool constant) {
  return x->op == IR_OP_BROADCAST && x->noperands == 1 && x->operands[0] &&
         (x->operands[0]->op == IR_OP_CONSTANT) == constant;
}

/* m::MultiplyAnyOrder(m::NonConstant(&a), C) where C is m::Constant (bcast false) or
 * m::Broadcast(m::Constant) (bcast true); *c gets the constant itself. */
static bool mul_by_constant(IrInstr *x, bool bcast, IrInstr **a, IrInstr **c) {
  if (x->op != IR_OP_MULTIPLY || x->noperands != 2) return false;
  for (int k = 0; k < 2; k++) {
    IrInstr *v = x->operands[k], *w = x->operands[1 - k];
    if (v->op == IR_OP_CONSTANT) continue;
    if (!bcast && w->op == IR_OP_CONSTANT) {
      *a = v, *c = w;
      return true;
    }
    if (bcast && is_bcast_of(w, true)) {
      *a = v, *c = w->operands[0];
      return true;
    }
  }
  return false;
}

/* XLA's HandleMultiply, after its identities:
 *   Mul(Mul(a, constant1), Broadcast(b)) => Mul(a, Broadcast(Mul(b, constant1)))   (constant1 a
 *   scalar, or a broadcast of one; b not a constant): the scalars meet before the broadcast, as an
 *   optimizer's learning rate times its scale does;
 *   (A * C1) * C2 => A * (C1 * C2)   (C1, C2 scalar constants broadcast, or constants).
 * The pattern is matched as XLA matches it: the first assignment that fits is kept, and its checks
 * then decide. */
static bool multiply_constants(Simp *s, IrInstr *i) {
  char before[256];
  IrInstr *a = NULL, *c = NULL, *op = NULL;
  for (int form = 0; form < 2 && !op; form++)
    for (int k = 0; k < 2 && !op; k++)
      if (mul_by_constant(i->operands[k], form == 1, &a, &c)) op = i->operands[1 - k];
  if (op && ir_shape_is_scalar(&c->shape) && is_bcast_of(op, false)) {
    simp_describe(i, before, sizeof before);
    IrInstr *b = op->operands[0], *k = c;
    if (!ir_shape_is_scalar(&b->shape)) {
      IrShape bs;
      if (!ir_shape_copy(&i->parent->module->arena, &bs, &b->shape)) return false;
      bs.type = c->shape.type;
      k = add_before(i, IR_OP_BROADCAST, &bs, &c, 1, "broadcast");
      if (!k) return false;
      ir_attr_set_text(k, "dimensions", "{}");
    }
    IrInstr *ops[2] = {b, k};
    IrInstr *nm = add_before(i, IR_OP_MULTIPLY, &b->shape, ops, 2, "multiply");
    IrInstr *nb = nm ? add_before(i, IR_OP_BROADCAST, &i->shape, &nm, 1, "broadcast") : NULL;
    if (!nb) return false;
    const char *dims = ir_attr_text(op, "dimensions");
    ir_attr_set_text(nb, "dimensions", dims ? dims : "{}");
    become(i, IR_OP_MULTIPLY, a, nb);
    rewritten(s, i, before, "the scalar factors meet before the broadcast (Mul(Mul(a, c), Broadcast(b)))");
    return true;
  }
  /* (A * C1) * C2: m::Multiply, operands in this order only */
  IrInstr *in = i->operands[0], *c2 = i->operands[1];
  if (in->op != IR_OP_MULTIPLY || in->noperands != 2) return false;
  IrInstr *x = in->operands[0], *c1 = in->operands[1], *k1 = NULL, *k2 = NULL;
  if (x->op != IR_OP_CONSTANT && c1->op == IR_OP_CONSTANT && c2->op == IR_OP_CONSTANT) {
    k1 = c1, k2 = c2;
  } else if (is_bcast_of(c1, true) && is_bcast_of(c2, true) && ir_shape_is_scalar(&c1->operands[0]->shape) &&
             ir_shape_is_scalar(&c2->operands[0]->shape)) {
    k1 = c1->operands[0], k2 = c2->operands[0];
  }
  if (!k1 || !ir_shape_equal(&k1->shape, &k2->shape)) return false;
  simp_describe(i, before, sizeof before);
  IrInstr *ks[2] = {k1, k2};
  IrInstr *prod = add_before(i, IR_OP_MULTIPLY, &k1->shape, ks, 2, "multiply");
  if (!prod) return false;
  if (ir_shape_is_scalar(&prod->shape) && !ir_shape_is_scalar(&i->shape)) {
    prod = add_before(i, IR_OP_BROADCAST, &i->shape, &prod, 1, "broadcast");
    if (!prod) return false;
    ir_attr_set_text(prod, "dimensions", "{}");
  }
  become(i, IR_OP_MULTIPLY, x, prod);
  rewritten(s, i, before, "the constants are multiplied first ((A * C1) * C2 => A * (C1 * C2))");
  return true;
}

/* 0 * A and A * 0 are the zero operand, for integers only: a float NaN or infinity times zero is
 * NaN (XLA's HandleMultiply, "0*A => 0. Only applies for integral types"); then the constant
 * reassociations. */
static bool multiply(Simp *s, IrInstr *i) {
  double v;
  for (int k = 0; ir_type_is_int(i->shape.type) && k < 2; k++) {
    IrInstr *z = i->operands[k];
    if (simp_splat_value(z, &v) && v == 0 && algsimp_forward(s, i, z, "an integer times zero is zero")) return true;
  }
  /* convert(p) * A (either order), p a pred: select(p, A, 0), the mask applied without a
     multiplication (what jaxlib 0.10.2's algsimp makes of x * mask.astype(x.dtype)) */
  for (int k = 0; k < 2; k++) {
    IrInstr *c = i->operands[k], *a = i->operands[1 - k];
    if (c->op != IR_OP_CONVERT || c->noperands != 1 || c->operands[0]->shape.type != IR_PRED ||
        !ir_shape_same_dims(&c->operands[0]->shape, &i->shape) || !ir_shape_equal(&a->shape, &i->shape))
      continue;
    IrInstr *zero = scalar_like(i, &i->shape, 0, "constant");
    IrInstr *ops[3] = {c->operands[0], a, zero};
    IrInstr *sel = zero ? add_before(i, IR_OP_SELECT, &i->shape, ops, 3, "select") : NULL;
    char msg[300];
    snprintf(msg, sizeof msg,
             "a multiplication by %s, a pred %s converted, is a select of %s where %s holds and 0 elsewhere", c->name,
             c->operands[0]->name, a->name, c->operands[0]->name);
    return sel && algsimp_forward(s, i, sel, msg);
  }
  return multiply_constants(s, i);
}

/* ---------- compare ---------- */

/* XLA's IsPositive, which IsNonNegative falls back on: a power, abs, square root or reciprocal
 * square root of a positive value, a positive value squared. (Its one positive leaf, a cuDNN
 * batch-norm's variance, fxplain never builds.) */
static bool positive(const IrInstr *x, int depth) {
  if (!x || depth > 16 || ir_type_is_complex(x->shape.type)) return false;
  switch (x->op) {
  case IR_OP_POWER: case IR_OP_ABS: case IR_OP_RSQRT: case IR_OP_SQRT:
    return x->noperands >= 1 && positive(x->operands[0], depth + 1);
  case IR_OP_MULTIPLY:
    return x->noperands == 2 && x->operands[0] == x->operands[1] && positive(x->operands[0], depth + 1);
  default:
    return false;
  }
}

/* Whether every element of x is known to be >= 0 (XLA's IsNonNegative, which HandleCompare
 * asks): abs, exp, iota, x * x, a scalar constant that is neither negative, -0 nor NaN (or a
 * broadcast of one), a power of a non-negative value, the maximum of anything with a
 * non-negative value, the minimum of two, a select between two, else IsPositive. An unsigned
 * value too: HandleCompare's unsigned comparisons with 0 (X u< 0 is false). */
static bool non_negative(const IrInstr *x, int depth) {
  if (!x || depth > 16 || ir_type_is_complex(x->shape.type)) return false;
  IrType t = x->shape.type;
  if (t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64) return true;
  double v;
  switch (x->op) {
  case IR_OP_ABS: case IR_OP_EXP: case IR_OP_IOTA:
    return true;
  case IR_OP_MULTIPLY:
    return x->noperands == 2 && x->operands[0] == x->operands[1];
  case IR_OP_CONSTANT:
    return ir_shape_elements(&x->shape) == 1 && simp_splat_value(x, &v) && !signbit(v) && !isnan(v);
  case IR_OP_BROADCAST:
    return x->noperands == 1 && non_negative(x->operands[0], depth + 1);
  case IR_OP_POWER:
    return x->noperands == 2 && non_negative(x->operands[0], depth + 1);
  case IR_OP_MAXIMUM:
    return x->noperands == 2 && (non_negative(x->operands[0], depth + 1) || non_negative(x->operands[1], depth + 1));
  case IR_OP_MINIMUM:
    return x->noperands == 2 && non_negative(x->operands[0], depth + 1) && non_negative(x->operands[1], depth + 1);
  case IR_OP_SELECT:
    return x->noperands == 3 && non_negative(x->operands[1], depth + 1) && non_negative(x->operands[2], depth + 1);
  default:
    return positive(x, depth);
  }
}

/* x < 0 and 0 > x are false, x >= 0 and 0 <= x true, when x is known non-negative (XLA's
 * HandleCompare with IsNonNegative): `index < 0 ? index + n : index` on a clamped index
 * reads the index. */
static bool compare(Simp *s, IrInstr *i) {
  const char *dir = ir_attr_text(i, "direction");
  if (!dir || i->shape.type != IR_PRED) return false;
  double v;
  IrInstr *a = i->operands[0], *b = i->operands[1];
  int result = -1;
  const IrInstr *x = NULL;
  if (simp_splat_value(b, &v) && v == 0 && (strcmp(dir, "LT") == 0 || strcmp(dir, "GE") == 0)) {
    x = a;
    result = strcmp(dir, "GE") == 0;
  } else if (simp_splat_value(a, &v) && v == 0 && (strcmp(dir, "GT") == 0 || strcmp(dir, "LE") == 0)) {
    x = b;
    result = strcmp(dir, "LE") == 0;
  }
  if (result < 0 || !non_negative(x, 0)) return false;
  IrInstr *k = scalar_like(i, &i->shape, result, result ? "true" : "false");
  if (!k) return false;
  char why[300];
  snprintf(why, sizeof why, "%s is never negative, so the comparison with 0 is always %s", x->name,
           result ? "true" : "false");
  return algsimp_forward(s, i, k, why);
}

/* ---------- divide ---------- */

/* A signed integer's division or remainder by a power of two as XLA's TryDivideToShift and
 * HandleRemainder write it: op (a right shift or a mask) on the magnitude of i's first operand,
 * the sign given back: select(a < 0, -(op(|a|, k)), op(|a|, k)). The new instructions are named
 * after `what` ("quotient": quotient, negated_quotient; "remainder": remainder_bits,
 * negated_remainder). */
static bool with_sign(Simp *s, IrInstr *i, IrOpcode op, IrInstr *k, const char *what, const char *why) {
  IrInstr *a = i->operands[0];
  bool quotient = strcmp(what, "quotient") == 0;
  IrShape ps = simp_shape_retyped(&i->parent->module->arena, &a->shape, IR_PRED);
  IrInstr *zero = scalar_like(i, &a->shape, 0, "zero");
  IrInstr *cops[2] = {a, zero};
  IrInstr *is_neg = zero ? add_before(i, IR_OP_COMPARE, &ps, cops, 2, "dividend_is_negative") : NULL;
  if (!is_neg) return false;
  ir_attr_set_text(is_neg, "direction", "LT");
  IrInstr *neg_a = add_before(i, IR_OP_NEGATE, &a->shape, &a, 1, "negated_dividend");
  IrInstr *sops[3] = {is_neg, neg_a, a};
  IrInstr *abs_a = neg_a ? add_before(i, IR_OP_SELECT, &a->shape, sops, 3, "abs_dividend") : NULL;
  IrInstr *qops[2] = {abs_a, k};
  IrInstr *q = abs_a ? add_before(i, op, &i->shape, qops, 2, quotient ? "quotient" : "remainder_bits") : NULL;
  IrInstr *neg_q = q ? add_before(i, IR_OP_NEGATE, &i->shape, &q, 1, quotient ? "negated_quotient" : "negated_remainder") : NULL;
  IrInstr *fops[3] = {is_neg, neg_q, q};
  IrInstr *sel = neg_q ? add_before(i, IR_OP_SELECT, &i->shape, fops, 3, i->name) : NULL;
  return sel && algsimp_forward(s, i, sel, why);
}

/* Integer division by a power of two (XLA's TryDivideToShift). */
static bool divide_to_shift(Simp *s, IrInstr *i, const char *before) {
  IrInstr *a = i->operands[0], *b = i->operands[1];
  IrType t = i->shape.type;
  int64_t bv;
  if (!ir_type_is_int(t) || !computable(t) || !int_splat(b, &bv) || bv <= 0) return false;
  int k = log2_exact((uint64_t)bv);
  if (k < 0) return false;
  IrInstr *amount = scalar_like(i, &a->shape, k, "shift");
  if (!amount) return false;
  if (!ir_type_is_signed(t)) {
    become(i, IR_OP_SHRL, a, amount);
    rewritten(s, i, before, "dividing an unsigned integer by a power of two is a right shift");
    return true;
  }
  /* Signed: shift the magnitude, then give back the sign. */
  return with_sign(s, i, IR_OP_SHRL, amount, "quotient",
                   "dividing a signed integer by a power of two is a shift of its magnitude, with its sign");
}

static bool single_use(const IrInstr *x) { return x->nusers == 1 && !x->is_root; }

static bool divide(Simp *s, IrInstr *i) {
  IrInstr *a = i->operands[0], *b = i->operands[1];
  char before[256];
  simp_describe(i, before, sizeof before);
  if (divide_to_shift(s, i, before)) return true;
  const IrShape *sh = &i->shape;
  /* exp(A) / exp(B) -> exp(A - B) */
  if (a->op == IR_OP_EXP && b->op == IR_OP_EXP && a->noperands == 1 && b->noperands == 1) {
    IrInstr *ops[2] = {a->operands[0], b->operands[0]};
    IrInstr *d = add_before(i, IR_OP_SUBTRACT, sh, ops, 2, "subtract");
    IrInstr *e = d ? add_before(i, IR_OP_EXP, sh, &d, 1, i->name) : NULL;
    return e && algsimp_forward(s, i, e, "exp(A) / exp(B) is exp(A - B)");
  }
  /* A / exp(B) -> A * exp(-B) */
  if (b->op == IR_OP_EXP && b->noperands == 1) {
    IrInstr *x = b->operands[0];
    IrInstr *n = add_before(i, IR_OP_NEGATE, sh, &x, 1, "negate");
    IrInstr *e = n ? add_before(i, IR_OP_EXP, sh, &n, 1, b->name) : NULL;
    if (!e) return false;
    become(i, IR_OP_MULTIPLY, a, e);
    rewritten(s, i, before, "dividing by exp(B) is multiplying by exp(-B)");
    return true;
  }
  /* A / pow(B, C) -> A * pow(B, -C) */
  if (b->op == IR_OP_POWER && b->noperands == 2) {
    IrInstr *base = b->operands[0], *c = b->operands[1];
    IrInstr *n = add_before(i, IR_OP_NEGATE, &c->shape, &c, 1, "negate");
    IrInstr *pops[2] = {base, n};
    IrInstr *p = n ? add_before(i, IR_OP_POWER, &base->shape, pops, 2, b->name) : NULL;
    if (!p) return false;
    become(i, IR_OP_MULTIPLY, a, p);
    rewritten(s, i, before, "dividing by pow(B, C) is multiplying by pow(B, -C)");
    return true;
  }
  /* A / sqrt(B) -> A * rsqrt(B); A / rsqrt(B) -> A * sqrt(B) (the root read only here) */
  if ((b->op == IR_OP_SQRT || b->op == IR_OP_RSQRT) && b->noperands == 1 && single_use(b)) {
    bool sq = b->op == IR_OP_SQRT;
    IrInstr *x = b->operands[0];
    IrInstr *r = add_before(i, sq ? IR_OP_RSQRT : IR_OP_SQRT, sh, &x, 1, sq ? "rsqrt" : "sqrt");
    if (!r) return false;
    become(i, IR_OP_MULTIPLY, a, r);
    rewritten(s, i, before, sq ? "dividing by sqrt(B) is multiplying by rsqrt(B)" : "dividing by rsqrt(B) is multiplying by sqrt(B)");
    return true;
  }
  if (!ir_type_is_float(sh->type)) return false;
  /* A / C -> A * (1 / C) */
  bool bcast;
  IrInstr *c = constant_operand(b, &bcast);
  if (c && a->op != IR_OP_CONSTANT && ir_type_is_float(c->shape.type)) {
    IrInstr *inv = mapped_constant(i, b, c, bcast, inverted, "reciprocal");
    if (!inv) return false;
    become(i, IR_OP_MULTIPLY, a, inv);
    rewritten(s, i, before, "dividing by a constant is multiplying by its reciprocal");
    return true;
  }
  /* (A / B) / (C / D) -> (A * D) / (B * C) */
  if (a->op == IR_OP_DIVIDE && b->op == IR_OP_DIVIDE) {
    IrInstr *ad[2] = {a->operands[0], b->operands[1]}, *bc[2] = {a->operands[1], b->operands[0]};
    IrInstr *x = add_before(i, IR_OP_MULTIPLY, sh, ad, 2, "multiply");
    IrInstr *y = x ? add_before(i, IR_OP_MULTIPLY, sh, bc, 2, "multiply") : NULL;
    if (!y) return false;
    become(i, IR_OP_DIVIDE, x, y);
    rewritten(s, i, before, "(A / B) / (C / D) is (A * D) / (B * C)");
    return true;
  }
  /* (A / B) / C -> A / (B * C) */
  if (a->op == IR_OP_DIVIDE) {
    IrInstr *bc[2] = {a->operands[1], b};
    IrInstr *y = add_before(i, IR_OP_MULTIPLY, sh, bc, 2, "multiply");
    if (!y) return false;
    become(i, IR_OP_DIVIDE, a->operands[0], y);
    rewritten(s, i, before, "(A / B) / C is A / (B * C)");
    return true;
  }
  /* A / (B / C) -> (A * C) / B */
  if (b->op == IR_OP_DIVIDE) {
    IrInstr *ac[2] = {a, b->operands[1]};
    IrInstr *x = add_before(i, IR_OP_MULTIPLY, sh, ac, 2, "multiply");
    if (!x) return false;
    become(i, IR_OP_DIVIDE, x, b->operands[0]);
    rewritten(s, i, before, "A / (B / C) is (A * C) / B");
    return true;
  }
  /* convert(pred X) / broadcast(scalar Y) -> broadcast(1 / Y) * X */
  if (a->op == IR_OP_CONVERT && a->noperands == 1 && a->operands[0]->shape.type == IR_PRED && b->op == IR_OP_BROADCAST &&
      b->noperands == 1 && ir_shape_is_scalar(&b->operands[0]->shape)) {
    IrInstr *y = b->operands[0];
    IrInstr *one = scalar_like(i, &y->shape, 1, "one");
    IrInstr *rops[2] = {one, y};
    IrInstr *r = one ? add_before(i, IR_OP_DIVIDE, &y->shape, rops, 2, "reciprocal") : NULL;
    IrInstr *rb = r ? add_before(i, IR_OP_BROADCAST, sh, &r, 1, "broadcast") : NULL;
    if (!rb) return false;
    ir_attr_set_text(rb, "dimensions", "{}");
    become(i, IR_OP_MULTIPLY, rb, a);
    rewritten(s, i, before, "a 0/1 value divided by Y is the value times 1 / Y");
    return true;
  }
  return false;
}

/* ---------- remainder ---------- */

static bool modulo(Simp *s, IrInstr *i) {
  IrInstr *a = i->operands[0], *b = i->operands[1];
  char before[256];
  simp_describe(i, before, sizeof before);
  if (a->op == IR_OP_REMAINDER && a->noperands == 2 && a->operands[1] == b)
    return algsimp_forward(s, i, a, "(A % B) % B is A % B");
  IrType t = i->shape.type;
  int64_t bv;
  if (ir_type_is_int(t) && computable(t) && int_splat(b, &bv) && bv > 0 && log2_exact((uint64_t)bv) >= 0) {
    IrInstr *mask = scalar_like(i, &a->shape, (double)(bv - 1), "mask");
    if (!mask) return false;
    if (!ir_type_is_signed(t)) {
      become(i, IR_OP_AND, a, mask);
      rewritten(s, i, before, "an unsigned integer modulo a power of two is its low bits");
      return true;
    }
    return with_sign(s, i, IR_OP_AND, mask, "remainder",
                     "a signed integer modulo a power of two is the low bits of its magnitude, with its sign");
  }
  /* iota % N -> iota when N is at least the iota's count */
  int64_t dim;
  if (a->op == IR_OP_IOTA && b->op == IR_OP_BROADCAST && int_splat(b, &bv) && ir_attr_int(a, "iota_dimension", &dim) &&
      dim >= 0 && dim < a->shape.rank && bv >= a->shape.dims[dim])
    return algsimp_forward(s, i, a, "an iota modulo a number at least its count is the iota");
  return false;
}

/* ---------- broadcast ---------- */

static bool is_scalar_broadcast(const IrInstr *x) {
  return x->op == IR_OP_BROADCAST && x->noperands == 1 && x->operands[0] && ir_shape_is_scalar(&x->operands[0]->shape);
}

static bool same_broadcast(const IrInstr *x, const IrInstr *b) {
  if (x == b) return true;
  if (x->op != IR_OP_BROADCAST || x->noperands != 1 || !x->operands[0]) return false;
  const char *dx = ir_attr_text(x, "dimensions"), *db = ir_attr_text(b, "dimensions");
  return dx && db && strcmp(dx, db) == 0 && ir_shape_same_dims(&x->operands[0]->shape, &b->operands[0]->shape);
}

/* Elementwise ops (XLA's IsElementwise: converts, selects and clamps too), but copies and
 * bitcast-converts, whose shapes follow the element width. */
static bool sinkable_user(const IrInstr *u) {
  return ir_shape_is_array(&u->shape) && u->op != IR_OP_COPY && u->op != IR_OP_BITCAST_CONVERT &&
         ir_op_is_elementwise(u->op);
}

/* broadcast(x) feeding an elementwise op whose other operands are scalar broadcasts (or the same
 * broadcast of a like value): the op runs on x's elements, then its result is broadcast. A
 * scalar x too: op(broadcast(a), broadcast(b)) becomes broadcast(op(a, b)), which constant
 * folding then folds when a and b are constants. */
static bool sink_broadcast(Simp *s, IrInstr *b) {
  if (ir_shape_is_scalar(&b->shape)) return false;
  IrInstr *x = b->operands[0];
  bool scalar = ir_shape_is_scalar(&x->shape);
  for (int k = 0; k < b->nusers; k++) {
    IrInstr *u = b->users[k];
    if (u->dead || (u->nusers == 0 && !u->is_root) || !sinkable_user(u)) continue;
    bool ok = u->noperands > 0;
    for (int o = 0; o < u->noperands && ok; o++)
      ok = u->operands[o] && (is_scalar_broadcast(u->operands[o]) || same_broadcast(u->operands[o], b));
    if (!ok) continue;
    Arena *ar = &u->parent->module->arena;
    IrInstr **ops = fx_malloc(sizeof(IrInstr *) * (size_t)u->noperands);
    if (!ops) return false;
    bool built = true;
    for (int o = 0; o < u->noperands && built; o++) {
      IrInstr *uo = u->operands[o];
      if (same_broadcast(uo, b) || (scalar && is_scalar_broadcast(uo))) {
        ops[o] = uo->operands[0];
      } else {
        IrShape sh = simp_shape_retyped(ar, &x->shape, uo->shape.type);
        ops[o] = add_before(u, IR_OP_BROADCAST, &sh, &uo->operands[0], 1, uo->name);
        if (ops[o]) ir_attr_set_text(ops[o], "dimensions", "{}");
        built = ops[o] != NULL;
      }
    }
    IrShape nsh = simp_shape_retyped(ar, &x->shape, u->shape.type);
    /* The op keeps its name and attributes, on x's dimensions; a new broadcast takes its users. */
    IrInstr *nu = built ? ir_instr_copy(u->parent, u, ops, u->name) : NULL;
    fx_free(ops);
    if (!nu) return false;
    ir_shape_copy(ar, &nu->shape, &nsh);
    IrInstr *nb = ir_instr_new_before(u->parent, u, IR_OP_BROADCAST, &u->shape, &nu, 1, b->name);
    if (!nb) return false;
    ir_attr_set_text(nb, "dimensions", ir_attr_text(b, "dimensions") ? ir_attr_text(b, "dimensions") : "{}");
    char msg[600], on[300];
    if (scalar) snprintf(on, sizeof on, "the scalar %s", x->name);
    else snprintf(on, sizeof on, "%s's %" PRId64 " elements", x->name, ir_shape_elements(&x->shape));
    snprintf(msg, sizeof msg,
             "%s of broadcast %s now runs on %s (as %s) and %s broadcasts the result: an elementwise operation "
             "commutes with a broadcast",
             u->name, b->name, on, nu->name, nb->name);
    algsimp_report(s, "rewrite", b, u, nb->name, msg);
    simp_replace(u, nb);
    ir_computation_sort(nb->parent);
    return true;
  }
  return false;
}

/* A scalar broadcast feeding an instruction that only permutes or selects its elements (reshape,
 * transpose, reverse, slice, dynamic-slice) is a broadcast to that instruction's shape
 * (HandleBroadcast). */
static bool scalar_broadcast_through(Simp *s, IrInstr *b) {
  IrInstr *x = b->operands[0];
  if (!ir_shape_is_scalar(&x->shape)) return false;
  for (int k = 0; k < b->nusers; k++) {
    IrInstr *u = b->users[k];
    if (u->dead || u->noperands < 1 || u->operands[0] != b || !ir_shape_is_array(&u->shape)) continue;
    if (!(u->op == IR_OP_RESHAPE || u->op == IR_OP_TRANSPOSE || u->op == IR_OP_REVERSE || u->op == IR_OP_SLICE ||
          u->op == IR_OP_DYNAMIC_SLICE))
      continue;
    IrInstr *nb = add_before(u, IR_OP_BROADCAST, &u->shape, &x, 1, b->name);
    if (!nb) return false;
    ir_attr_set_text(nb, "dimensions", "{}");
    char why[300];
    snprintf(why, sizeof why, "a %s of a broadcast scalar is a broadcast of the scalar", ir_op_name(u->op));
    return algsimp_forward(s, u, nb, why);
  }
  return false;
}

/* In HandleBroadcast's order: the broadcast sinks below its elementwise users first
 * (TryToSinkBroadcastAfterElementwiseOps), then a scalar's goes through permuting users, and only
 * then does a broadcast of an iota become an iota; so op(broadcast(iota), broadcast(c)) becomes
 * broadcast(op(iota, c)), as in XLA's modules. */
static bool broadcast(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  if (sink_broadcast(s, i) || scalar_broadcast_through(s, i)) return true;
  int64_t dims[IR_MAX_RANK], d;
  int n = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
  /* broadcast(iota) -> iota along the dimension the iota's lands on */
  if (x->op == IR_OP_IOTA && ir_attr_int(x, "iota_dimension", &d) && n == x->shape.rank && d >= 0 && d < n) {
    IrInstr *io = add_before(i, IR_OP_IOTA, &i->shape, NULL, 0, x->name);
    if (!io) return false;
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, dims[d]);
    ir_attr_set_text(io, "iota_dimension", buf);
    return algsimp_forward(s, i, io, "a broadcast of an iota is an iota");
  }
  /* HandleBroadcast, last (not layout-sensitive): an operand with dimensions of size 1 is reshaped
     to drop them, and the broadcast maps only the others: broadcast(x[1,1], {0,1}) ->
     broadcast(reshape(x) [], {}). A scalar broadcast then passes through the reshapes and
     transposes that read it, and reshape-mover can move those past the broadcast's users. */
  if (!s->layout_sensitive && n == x->shape.rank && ir_shape_is_array(&x->shape) && x->shape.rank > 0) {
    int64_t kept[IR_MAX_RANK], kdims[IR_MAX_RANK];
    int nk = 0;
    for (int k = 0; k < x->shape.rank; k++)
      if (x->shape.dims[k] != 1) {
        kept[nk] = x->shape.dims[k];
        kdims[nk++] = dims[k];
      }
    if (nk < x->shape.rank) {
      IrShape rs = ir_shape_array(&i->parent->module->arena, x->shape.type, nk, kept);
      IrInstr *r = add_before(i, IR_OP_RESHAPE, &rs, &x, 1, "reshape");
      IrInstr *nb = r ? add_before(i, IR_OP_BROADCAST, &i->shape, &r, 1, i->name) : NULL;
      if (!nb) return false;
      ir_attr_set_dims(nb, "dimensions", kdims, nk);
      return algsimp_forward(s, i, nb, "its operand's dimensions of size 1 are reshaped away: the broadcast maps only "
                             "the others");
    }
  }
  return false;
}

/* ---------- dot ---------- */

/* XLA's RemoveDegenerateDimensionFromDot (HandleDot, GPU: after the rewrites GPU options leave off):
 * size-1 dimensions of either operand are reshaped away, the dimension numbers renumbered, and the
 * result reshaped back when its shape changed: dot(x[1,2048], W[2048,1000]) -> reshape(dot(x'[2048], W)).
 * A vector dot then becomes what dot-strength-reduction takes (XLA runs it in the same round). */
static bool drop_degenerate(const IrShape *s, int64_t *map, int64_t *dims, int *rank) {
  int n = 0, gone = 0;
  for (int k = 0; k < s->rank; k++) {
    if (s->dims[k] == 1) {
      map[k] = -1;
      gone++;
    } else {
      map[k] = n;
      dims[n++] = s->dims[k];
    }
  }
  *rank = n;
  return gone > 0;
}

static int remap(const int64_t *in, int n, const int64_t *map, int64_t *out) {
  int m = 0;
  for (int k = 0; k < n; k++)
    if (map[in[k]] >= 0) out[m++] = map[in[k]];
  return m;
}

static bool dot_degenerate(Simp *s, IrInstr *i) {
  IrDotDims d;
  if (i->noperands != 2 || !ir_dot_dims(i, &d)) return false;
  IrInstr *l = i->operands[0], *r = i->operands[1];
  if (!ir_shape_is_array(&l->shape) || !ir_shape_is_array(&r->shape) || ir_shape_elements(&i->shape) == 0) return false;
  int64_t lmap[IR_MAX_RANK], rmap[IR_MAX_RANK], ld[IR_MAX_RANK], rd[IR_MAX_RANK];
  int lr, rr;
  bool lg = drop_degenerate(&l->shape, lmap, ld, &lr), rg = drop_degenerate(&r->shape, rmap, rd, &rr);
  if (!lg && !rg) return false;
  IrDotDims n;
  memset(&n, 0, sizeof n);
  n.nlhs_batch = remap(d.lhs_batch, d.nlhs_batch, lmap, n.lhs_batch);
  n.nrhs_batch = remap(d.rhs_batch, d.nrhs_batch, rmap, n.rhs_batch);
  n.nlhs_contract = remap(d.lhs_contract, d.nlhs_contract, lmap, n.lhs_contract);
  n.nrhs_contract = remap(d.rhs_contract, d.nrhs_contract, rmap, n.rhs_contract);
  if (n.nlhs_batch != n.nrhs_batch || n.nlhs_contract != n.nrhs_contract) return false;
  Arena *a = &i->parent->module->arena;
  IrInstr *nl = l, *nr = r;
  if (lg) {
    IrShape ls = ir_shape_array(a, l->shape.type, lr, ld);
    if (!(nl = add_before(i, IR_OP_RESHAPE, &ls, &l, 1, "reshape"))) return false;
  }
  if (rg) {
    IrShape rs = ir_shape_array(a, r->shape.type, rr, rd);
    if (!(nr = add_before(i, IR_OP_RESHAPE, &rs, &r, 1, "reshape"))) return false;
  }
  /* MakeDotHlo's shape: batch, then the lhs's free dimensions, then the rhs's */
  int64_t od[IR_MAX_RANK];
  int on = 0;
  for (int k = 0; k < n.nlhs_batch; k++) od[on++] = nl->shape.dims[n.lhs_batch[k]];
  for (int k = 0; k < lr; k++)
    if (!ir_dims_contain(n.lhs_batch, n.nlhs_batch, k) && !ir_dims_contain(n.lhs_contract, n.nlhs_contract, k)) od[on++] = ld[k];
  for (int k = 0; k < rr; k++)
    if (!ir_dims_contain(n.rhs_batch, n.nrhs_batch, k) && !ir_dims_contain(n.rhs_contract, n.nrhs_contract, k)) od[on++] = rd[k];
  IrShape ds = ir_shape_array(a, i->shape.type, on, od);
  IrInstr *ops[2] = {nl, nr};
  IrInstr *nd = add_before(i, IR_OP_DOT, &ds, ops, 2, "dot");
  if (!nd) return false;
  for (int k = 0; k < i->nattrs; k++)
    if (i->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(nd, i->attrs[k].key, i->attrs[k].text);
  ir_attr_set_dims(nd, "lhs_batch_dims", n.lhs_batch, n.nlhs_batch);
  ir_attr_set_dims(nd, "rhs_batch_dims", n.rhs_batch, n.nrhs_batch);
  ir_attr_set_dims(nd, "lhs_contracting_dims", n.lhs_contract, n.nlhs_contract);
  ir_attr_set_dims(nd, "rhs_contracting_dims", n.rhs_contract, n.nrhs_contract);
  if (n.nlhs_batch == 0) {
    ir_attr_remove(nd, "lhs_batch_dims");
    ir_attr_remove(nd, "rhs_batch_dims");
  }
  nd->loc = i->loc;
  IrInstr *res = nd;
  if (!ir_shape_same_dims(&nd->shape, &i->shape) && !(res = add_before(i, IR_OP_RESHAPE, &i->shape, &nd, 1, "reshape")))
    return false;
  return algsimp_forward(s, i, res, "its size-1 dimensions are reshaped away (a dot on the dimensions that count)");
}

/* ---------- reshape ---------- */

/* XLA's CommonFactors (util.cc): the pairs (i, j) where the first i dimensions of a and the first j
 * of b hold the same number of elements, as XLA lists them (ones and zeros included). Returns how
 * many pairs were written to out (at most 2 * (na + nb) + 2). */
static int common_factors(const int64_t *a, int na, const int64_t *b, int nb, int (*out)[2]) {
  int n = 0;
  bool equal = na == nb;
  for (int k = 0; equal && k < na; k++) equal = a[k] == b[k];
  if (equal) {
    for (int k = 0; k <= na; k++) out[n][0] = out[n][1] = k, n++;
    return n;
  }
  int i = 0, j = 0, pi = -1, pj = -1;
  while (i < na && j < nb && a[i] == b[j]) {
    pi = i, pj = j;
    out[n][0] = i++, out[n][1] = j++, n++;
  }
  int64_t ra = 1, rb = 1;
  for (int k = i; k < na; k++) ra *= a[k];
  for (int k = j; k < nb; k++) rb *= b[k];
  if (ra != rb) {
    out[0][0] = out[0][1] = 0, out[1][0] = na, out[1][1] = nb;
    return 2;
  }
  if (ra == 0) {
    out[n][0] = i, out[n][1] = j, n++;
    out[n][0] = na, out[n][1] = nb, n++;
    return n;
  }
  for (int64_t sa = 1, sb = 1;;) {
    if (sa == sb && (i > pi || j > pj)) {
      pi = i, pj = j;
      out[n][0] = i, out[n][1] = j, n++;
      continue;
    }
    bool ia = i < na, ib = j < nb;
    if (!ia && !ib) break;
    bool next_a = sa < sb || (ia && (!ib || (sa == sb && a[i] <= b[j])));
    bool next_b = sb < sa || (ib && (!ia || (sb == sa && b[j] <= a[i])));
    if (next_a) sa *= a[i++];
    if (next_b) sb *= b[j++];
  }
  return n;
}

/* The result dimension each dimension of `from` stays as through a reshape to `to`, -1 for one the
 * reshape splits or merges (XLA's DimensionsUnmodifiedByReshape: common factors one dimension
 * wide on both sides). */
static void unmodified_by_reshape(const IrShape *from, const IrShape *to, int *out_of_in) {
  int f[4 * IR_MAX_RANK + 4][2];
  int nf = common_factors(from->dims, from->rank, to->dims, to->rank, f);
  for (int d = 0; d < from->rank; d++) out_of_in[d] = -1;
  for (int k = 0; k + 1 < nf; k++)
    if (f[k + 1][0] - f[k][0] == 1 && f[k + 1][1] - f[k][1] == 1) out_of_in[f[k][0]] = f[k][1];
}

/* reshape(broadcast(x)) -> broadcast(x) when the reshape leaves every dimension the broadcast
 * maps from x unmodified (HandleReshape, ReshapeLeavesDimensionsUnmodified): what reshape-mover's
 * inverse of a reshape makes of a broadcast operand. */
static bool reshape_of_broadcast(Simp *s, IrInstr *i) {
  IrInstr *b = i->operands[0];
  if (b->op != IR_OP_BROADCAST || b->noperands != 1 || !ir_shape_is_array(&b->shape)) return false;
  int64_t bd[IR_MAX_RANK], nd[IR_MAX_RANK];
  int n = ir_attr_dims_or_empty(b, "dimensions", bd);
  if (n != b->operands[0]->shape.rank) return false;
  int out_of_in[IR_MAX_RANK];
  unmodified_by_reshape(&b->shape, &i->shape, out_of_in);
  for (int k = 0; k < n; k++) {
    if (bd[k] < 0 || bd[k] >= b->shape.rank || out_of_in[bd[k]] < 0) return false;
    nd[k] = out_of_in[bd[k]];
  }
  IrInstr *nb = add_before(i, IR_OP_BROADCAST, &i->shape, &b->operands[0], 1, b->name);
  if (!nb) return false;
  ir_attr_set_dims(nb, "dimensions", nd, n);
  return algsimp_forward(s, i, nb, "the reshape leaves the broadcast operand's dimensions whole: it is a broadcast");
}

/* reshape(iota) -> iota, or the mixed-radix sum of iotas when the iota's dimension splits into
 * several (HandleReshape): s32[2,3,4] reshape(s32[24] iota) is iota(2) + 4 * iota(1) + 12 * iota(0). */
static bool reshape_iota(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int64_t d;
  if (x->op != IR_OP_IOTA || !ir_attr_int(x, "iota_dimension", &d)) return false;
  int f[4 * IR_MAX_RANK + 4][2];
  int nf = common_factors(x->shape.dims, x->shape.rank, i->shape.dims, i->shape.rank, f);
  int at = -1, next = -1;
  for (int k = 0; k < nf && at < 0; k++)
    if (f[k][0] == d && f[k][1] < i->shape.rank && i->shape.dims[f[k][1]] > 1) at = k;
  for (int k = 0; k < nf && next < 0; k++)
    if (f[k][0] == d + 1) next = k;
  if (at < 0 || next < 0 || at + 1 >= nf) return false;
  IrInstr *sum = NULL;
  int64_t multiplier = 1;
  for (int dim = f[at + 1][1] - 1; dim >= f[at][1]; dim--) {
    IrInstr *io = add_before(i, IR_OP_IOTA, &i->shape, NULL, 0, "iota");
    if (!io) return false;
    ir_attr_set_int(io, "iota_dimension", dim);
    if (sum) {
      IrInstr *k = scalar_like(i, &i->shape, (double)multiplier, "constant");
      IrInstr *mops[2] = {io, k};
      IrInstr *mul = k ? add_before(i, IR_OP_MULTIPLY, &i->shape, mops, 2, "multiply") : NULL;
      IrInstr *aops[2] = {sum, mul};
      sum = mul ? add_before(i, IR_OP_ADD, &i->shape, aops, 2, "add") : NULL;
      if (!sum) return false;
    } else {
      sum = io;
    }
    multiplier *= i->shape.dims[dim];
  }
  if (!sum) return false;
  return algsimp_forward(s, i, sum, sum->op == IR_OP_IOTA ? "a reshape of an iota is an iota"
                                                          : "a reshape of an iota is a sum of iotas, one per dimension "
                                                            "its dimension splits into");
}

/* ---------- dynamic-update-slice ---------- */

/* A dynamic-update-slice of an update into a broadcast scalar, at constant starts, is the update
 * padded with the scalar (HandleDynamicUpdateSlice); one whose update is the whole operand is the
 * update. Starts are clamped to [0, dim - size], as the operation clamps them. */
static bool dynamic_update_slice(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0], *u = i->operands[1];
  int r = i->shape.rank;
  if (i->noperands != 2 + r || u->shape.rank != r) return false;
  if (ir_shape_same_dims(&u->shape, &i->shape) && u->shape.type == i->shape.type)
    return algsimp_forward(s, i, u, "the update covers the whole operand");
  if (!is_scalar_broadcast(x)) return false;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    int64_t st;
    if (!int_splat(i->operands[2 + d], &st) || !ir_shape_is_scalar(&i->operands[2 + d]->shape)) return false;
    int64_t max = i->shape.dims[d] - u->shape.dims[d];
    st = st < 0 ? 0 : st > max ? max : st;
    lo[d] = st;
    hi[d] = max - st;
  }
  IrInstr *ops[2] = {u, x->operands[0]};
  IrInstr *p = add_before(i, IR_OP_PAD, &i->shape, ops, 2, "pad");
  if (!p) return false;
  ir_attr_set_padding(p, lo, hi, NULL, r);
  return algsimp_forward(s, i, p, "writing into a broadcast scalar at constant starts is padding the update with the scalar");
}

/* algsimp_forward, and the replacement (an instruction of i's kind made for it) takes i's name, so
 * `why` keeps finding it. */
static bool forward_keep_name(Simp *s, IrInstr *i, IrInstr *x, const char *why) {
  char name[256];
  snprintf(name, sizeof name, "%s", i->name);
  if (!algsimp_forward(s, i, x, why)) return false;
  ir_instr_rename(x, name);
  return true;
}

/* ---------- slice ---------- */

/* An array shape of type t with dimensions dims[0..n), in i's module. */
static IrShape shape_of(const IrInstr *i, IrType t, int n, const int64_t *dims) {
  IrShape sh = ir_shape_array(&i->parent->module->arena, t, n, dims);
  sh.has_layout = false; /* the default layout, as every shape before layout assignment */
  sh.minor_to_major = NULL;
  return sh;
}

/* A new slice of x before `at`, bounds st/lim/str (str NULL: unit strides), named after base. */
static IrInstr *slice_before(IrInstr *at, IrInstr *x, const int64_t *st, const int64_t *lim, const int64_t *str,
                             const char *base) {
  int n = x->shape.rank;
  int64_t dims[IR_MAX_RANK];
  for (int d = 0; d < n; d++) {
    int64_t k = str ? str[d] : 1;
    dims[d] = lim[d] > st[d] ? (lim[d] - st[d] + k - 1) / k : 0;
  }
  IrShape sh = shape_of(at, x->shape.type, n, dims);
  IrInstr *ns = add_before(at, IR_OP_SLICE, &sh, &x, 1, base);
  if (ns) ir_attr_set_slice(ns, st, lim, str, n);
  return ns;
}

/* slice(pad(y, v)) (HandleSlice): a slice that reads only padding is a broadcast of the value, one
 * that takes exactly y back is y, one inside y (no interior padding) is a slice of y. */
static bool slice_of_pad(Simp *s, IrInstr *i, const int64_t *st, const int64_t *lim, const int64_t *str) {
  IrInstr *pad = i->operands[0], *y = pad->operands[0];
  int n = i->shape.rank;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK], nst[IR_MAX_RANK], nlim[IR_MAX_RANK];
  if (pad->noperands != 2 || ir_attr_padding(pad, lo, hi, in, IR_MAX_RANK) != n || y->shape.rank != n) return false;
  bool undoes = true, inside = true, in_padding = false;
  for (int d = 0; d < n; d++) {
    int64_t edge = pad->shape.dims[d] - hi[d];
    if (lim[d] <= lo[d] || st[d] >= edge) {
      in_padding = true;
      break;
    }
    if (st[d] != lo[d] || str[d] - 1 != in[d]) undoes = false;
    if (st[d] < lo[d] || lim[d] > edge || in[d] != 0 || str[d] != 1) inside = false;
    nst[d] = st[d] - lo[d];
    nlim[d] = lim[d] - lo[d];
  }
  if (in_padding) {
    IrInstr *v = pad->operands[1];
    IrInstr *b = add_before(i, IR_OP_BROADCAST, &i->shape, &v, 1, i->name);
    if (!b) return false;
    ir_attr_set_text(b, "dimensions", "{}");
    return algsimp_forward(s, i, b, "the slice reads only the pad's padding: it is the padding value broadcast");
  }
  if (undoes && ir_shape_equal(&y->shape, &i->shape))
    return algsimp_forward(s, i, y, "the slice takes back exactly what was padded");
  if (!inside) return false;
  IrInstr *ns = slice_before(i, y, nst, nlim, str, i->name);
  return ns && forward_keep_name(s, i, ns, "the slice lies inside the padded operand: it slices the operand");
}

/* slice(broadcast(y)) (HandleSlice): a slice that keeps every dimension the broadcast maps from y
 * whole is a broadcast of y; otherwise the slice moves onto y and the broadcast after it. */
static bool slice_of_broadcast(Simp *s, IrInstr *i, const int64_t *st, const int64_t *lim, const int64_t *str) {
  IrInstr *b = i->operands[0], *y = b->operands[0];
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims_or_empty(b, "dimensions", dims);
  if (nd != y->shape.rank) return false;
  bool only_broadcast_dims = true;
  for (int k = 0; k < nd; k++) {
    int64_t d = dims[k];
    if (d < 0 || d >= i->shape.rank) return false;
    if (st[d] != 0 || str[d] != 1 || lim[d] != b->shape.dims[d]) only_broadcast_dims = false;
  }
  IrInstr *src = y;
  if (!only_broadcast_dims) {
    int64_t yst[IR_MAX_RANK], ylim[IR_MAX_RANK], ystr[IR_MAX_RANK];
    for (int k = 0; k < nd; k++) {
      yst[k] = st[dims[k]];
      ylim[k] = lim[dims[k]];
      ystr[k] = str[dims[k]];
    }
    src = slice_before(i, y, yst, ylim, ystr, y->name);
    if (!src) return false;
  }
  IrInstr *nb = add_before(i, IR_OP_BROADCAST, &i->shape, &src, 1, i->name);
  if (!nb) return false;
  ir_attr_set_dims(nb, "dimensions", dims, nd);
  return algsimp_forward(s, i, nb,
                         only_broadcast_dims ? "the slice keeps what the broadcast reads whole: it is a smaller broadcast"
                                             : "the slice moves onto the broadcast's operand, before the broadcast");
}

/* slice(concatenate(a, b, c, ...)) unstrided, spanning some operands but not all (HandleSlice):
 * a slice of the concatenate of just those (one operand: the classic rule already took it). */
static bool slice_of_concatenate(Simp *s, IrInstr *i, const int64_t *st, const int64_t *lim, const int64_t *str) {
  IrInstr *c = i->operands[0];
  int64_t cd;
  int n = i->shape.rank;
  if (!ir_attr_int(c, "dimensions", &cd) && ir_attr_dims(c, "dimensions", &cd, 1) != 1) return false;
  if (cd < 0 || cd >= n) return false;
  for (int d = 0; d < n; d++)
    if (str[d] != 1) return false;
  int first = -1, last = -1;
  int64_t off = 0, first_off = 0;
  for (int k = 0; k < c->noperands; k++) {
    int64_t len = c->operands[k]->shape.dims[cd];
    if (first < 0 && off <= st[cd] && off + len > st[cd]) {
      first = k;
      first_off = off;
    }
    off += len;
    if (last < 0 && off >= lim[cd]) {
      last = k + 1;
      break;
    }
  }
  if (first < 0 || last < 0 || last - first < 2 || last - first >= c->noperands) return false;
  int64_t dims[IR_MAX_RANK];
  for (int d = 0; d < n; d++) dims[d] = c->shape.dims[d];
  dims[cd] = 0;
  for (int k = first; k < last; k++) dims[cd] += c->operands[k]->shape.dims[cd];
  IrShape sh = shape_of(i, c->shape.type, n, dims);
  IrInstr *nc = add_before(i, IR_OP_CONCATENATE, &sh, &c->operands[first], last - first, c->name);
  if (!nc) return false;
  ir_attr_set_dims(nc, "dimensions", &cd, 1);
  int64_t nst[IR_MAX_RANK], nlim[IR_MAX_RANK];
  memcpy(nst, st, sizeof(int64_t) * (size_t)n);
  memcpy(nlim, lim, sizeof(int64_t) * (size_t)n);
  nst[cd] -= first_off;
  nlim[cd] = nst[cd] + i->shape.dims[cd];
  IrInstr *ns = slice_before(i, nc, nst, nlim, NULL, i->name);
  char why[200];
  snprintf(why, sizeof why, "the slice reads only operands %d to %d of %s: it slices their concatenate", first, last - 1,
           c->name);
  return ns && forward_keep_name(s, i, ns, why);
}

/* slice(reshape(y)) that cuts only a leading part of dimension 0 (TryToReorderSliceAndReshape,
 * before layout assignment): the same elements are a leading part of y in row-major order, so
 * the slice moves onto y, sliced from its last dimension up, and the reshape comes after. */
static bool slice_of_reshape(Simp *s, IrInstr *i, const int64_t *st, const int64_t *lim, const int64_t *str) {
  IrInstr *r = i->operands[0], *y = r->operands[0];
  int n = i->shape.rank;
  if (!ir_shape_is_array(&y->shape) || y->shape.rank == 0) return false;
  int nsliced = 0, sliced = -1;
  for (int d = 0; d < n; d++) {
    if (str[d] != 1) return false;
    if (st[d] != 0 || lim[d] != r->shape.dims[d]) {
      nsliced++;
      sliced = d;
    }
  }
  if (nsliced != 1 || sliced != 0 || st[0] != 0) return false;
  int yr = y->shape.rank;
  int64_t yst[IR_MAX_RANK] = {0}, ylim[IR_MAX_RANK];
  int64_t left = ir_shape_elements(&i->shape);
  for (int d = 0; d < yr; d++) ylim[d] = y->shape.dims[d];
  for (int d = yr - 1; d >= 0; d--) {
    if (left >= ylim[d]) {
      if (ylim[d] == 0 || left % ylim[d] != 0) return false;
      left /= ylim[d];
    } else {
      ylim[d] = left;
      left = 1;
    }
  }
  IrInstr *ns = slice_before(i, y, yst, ylim, NULL, i->name);
  IrInstr *nr = ns ? add_before(i, IR_OP_RESHAPE, &i->shape, &ns, 1, r->name) : NULL;
  return nr && algsimp_forward(s, i, nr, "a slice of the leading rows of a reshape is a reshape of a slice of its operand");
}

/* slice(reverse(y)) (TryToReorderSliceAndReverse): the slice moves onto y, its bounds mirrored in
 * the reversed dimensions, and the reverse comes after. */
static bool slice_of_reverse(Simp *s, IrInstr *i, const int64_t *st, const int64_t *lim, const int64_t *str) {
  IrInstr *rv = i->operands[0], *y = rv->operands[0];
  int n = i->shape.rank;
  int64_t rd[IR_MAX_RANK], nst[IR_MAX_RANK], nlim[IR_MAX_RANK];
  int nr = ir_attr_dims_or_empty(rv, "dimensions", rd);
  if (nr < 0 || y->shape.rank != n) return false;
  memcpy(nst, st, sizeof(int64_t) * (size_t)n);
  memcpy(nlim, lim, sizeof(int64_t) * (size_t)n);
  for (int k = 0; k < nr; k++) {
    int64_t d = rd[k];
    if (d < 0 || d >= n || lim[d] <= st[d]) return false;
    int64_t last = st[d] + (lim[d] - st[d] - 1) / str[d] * str[d];
    int64_t size = rv->shape.dims[d];
    nst[d] = size - st[d] - (last + 1 - st[d]);
    nlim[d] = size - st[d];
  }
  IrInstr *ns = slice_before(i, y, nst, nlim, str, i->name);
  IrInstr *nrv = ns ? add_before(i, IR_OP_REVERSE, &i->shape, &ns, 1, rv->name) : NULL;
  if (!nrv) return false;
  ir_attr_set_dims(nrv, "dimensions", rd, nr);
  return algsimp_forward(s, i, nrv, "a slice of a reverse is the reverse of a slice");
}

/* Today's HandleSlice rules the classic pass lacks, in XLA's order; last RemoveRedundantStride:
 * a stride that reaches past the limit from the start takes one element, stride 1. */
static bool slice_current(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int64_t st[IR_MAX_RANK], lim[IR_MAX_RANK], str[IR_MAX_RANK];
  int n = ir_attr_slice(i, st, lim, str, IR_MAX_RANK);
  if (n != i->shape.rank || n != x->shape.rank || !ir_shape_is_array(&x->shape)) return false;
  for (int d = 0; d < n; d++)
    if (str[d] < 1) return false;
  if (x->op == IR_OP_PAD && slice_of_pad(s, i, st, lim, str)) return true;
  if (x->op == IR_OP_BROADCAST && x->noperands == 1 && slice_of_broadcast(s, i, st, lim, str)) return true;
  if (x->op == IR_OP_CONCATENATE && slice_of_concatenate(s, i, st, lim, str)) return true;
  if (x->op == IR_OP_RESHAPE && x->noperands == 1 && !s->layout_sensitive && slice_of_reshape(s, i, st, lim, str))
    return true;
  if (x->op == IR_OP_REVERSE && x->noperands == 1 && slice_of_reverse(s, i, st, lim, str)) return true;
  bool redundant = false;
  for (int d = 0; d < n; d++)
    if (str[d] != 1 && (str[d] >= lim[d] || st[d] + str[d] >= lim[d])) {
      lim[d] = st[d] + 1;
      str[d] = 1;
      redundant = true;
    }
  if (!redundant) return false;
  IrInstr *ns = slice_before(i, x, st, lim, str, i->name);
  return ns && forward_keep_name(s, i, ns, "a stride that reaches past the slice's end takes one element: stride 1");
}

/* ---------- dynamic-slice ---------- */

/* Whether x is a constant scalar integer (its value in *v). */
static bool const_index(const IrInstr *x, int64_t *v) {
  return x->op == IR_OP_CONSTANT && ir_shape_is_scalar(&x->shape) && ir_type_is_int(x->shape.type) && int_splat(x, v);
}

/* A new dynamic slice of ops[0] at starts ops[1..n], sizes[0..n), before `at`, named base. */
static IrInstr *dynamic_slice_before(IrInstr *at, IrInstr **ops, const int64_t *sizes, int n, const char *base) {
  IrShape sh = shape_of(at, ops[0]->shape.type, n, sizes);
  IrInstr *ds = add_before(at, IR_OP_DYNAMIC_SLICE, &sh, ops, 1 + n, base);
  if (ds) ir_attr_set_dims(ds, "dynamic_slice_sizes", sizes, n);
  return ds;
}

/* HandleDynamicSlice's rules, in its order: a scalar or whole-operand dynamic slice is its
 * operand; a dimension taken whole starts at 0; a dynamic slice of a broadcast, of a reshape that
 * only adds or drops dimensions of size 1, or of a transpose moves onto their operand; constant
 * starts make it a slice (clamped as the operation clamps them). One start operand per
 * dimension; the old form with one vector of starts is left alone. */
static bool dynamic_slice(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int r = x->shape.rank;
  if (!ir_shape_is_array(&x->shape) || i->noperands != 1 + r || i->shape.rank != r) return false;
  for (int d = 0; d < r; d++)
    if (!ir_shape_is_scalar(&i->operands[1 + d]->shape)) return false;
  if (ir_shape_equal(&i->shape, &x->shape))
    return algsimp_forward(s, i, x, r == 0 ? "a dynamic slice of a scalar is the scalar"
                                           : "the dynamic slice takes the whole operand");
  bool zeroed = false;
  for (int d = 0; d < r; d++) {
    int64_t v;
    IrInstr *idx = i->operands[1 + d];
    if (x->shape.dims[d] != i->shape.dims[d] || (const_index(idx, &v) && v == 0)) continue;
    IrInstr *z = scalar_like(i, &i->operands[1]->shape, 0, "constant");
    if (!z) return false;
    ir_set_operand(i, 1 + d, z);
    simp_drop_dead(idx);
    zeroed = true;
  }
  if (zeroed) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s takes whole dimensions of %s: their starts are 0", i->name, x->name);
    algsimp_report(s, "rewrite", x, i, i->name, msg);
    return true;
  }
  IrInstr *starts[IR_MAX_RANK];
  for (int d = 0; d < r; d++) starts[d] = i->operands[1 + d];
  if (x->op == IR_OP_BROADCAST && x->noperands == 1) {
    IrInstr *y = x->operands[0];
    int64_t dims[IR_MAX_RANK], sizes[IR_MAX_RANK];
    int nd = ir_attr_dims_or_empty(x, "dimensions", dims);
    if (nd != y->shape.rank) return false;
    IrInstr *ops[1 + IR_MAX_RANK] = {y};
    for (int k = 0; k < nd; k++) {
      if (dims[k] < 0 || dims[k] >= r) return false;
      ops[1 + k] = starts[dims[k]];
      sizes[k] = i->shape.dims[dims[k]];
    }
    IrInstr *src = nd > 0 ? dynamic_slice_before(i, ops, sizes, nd, i->name) : y;
    if (!src) return false;
    IrInstr *nb = add_before(i, IR_OP_BROADCAST, &i->shape, &src, 1, x->name);
    if (!nb) return false;
    ir_attr_set_dims(nb, "dimensions", dims, nd);
    return algsimp_forward(s, i, nb, "a dynamic slice of a broadcast is a broadcast of the dynamic slice of its operand");
  }
  if (x->op == IR_OP_RESHAPE && x->noperands == 1 && !s->layout_sensitive && ir_shape_is_array(&x->operands[0]->shape)) {
    IrInstr *y = x->operands[0];
    int64_t out_dim[IR_MAX_RANK], sizes[IR_MAX_RANK];
    if (!simp_reshape_only_unit_dims(&y->shape, &x->shape, out_dim)) goto not_reshape;
    IrInstr *ops[1 + IR_MAX_RANK] = {y};
    IrInstr *z = NULL;
    for (int k = 0; k < y->shape.rank; k++) {
      if (out_dim[k] >= 0) {
        ops[1 + k] = starts[out_dim[k]];
        sizes[k] = i->shape.dims[out_dim[k]];
        continue;
      }
      if (!z && !(z = scalar_like(i, &starts[0]->shape, 0, "constant"))) return false;
      ops[1 + k] = z;
      sizes[k] = 1;
    }
    IrInstr *nd = dynamic_slice_before(i, ops, sizes, y->shape.rank, i->name);
    if (!nd) return false;
    IrInstr *nr = add_before(i, IR_OP_RESHAPE, &i->shape, &nd, 1, x->name);
    return nr && algsimp_forward(s, i, nr, "a dynamic slice of a reshape that only adds or drops dimensions of size 1 is "
                                           "that reshape of a dynamic slice of its operand");
  }
not_reshape:
  if (x->op == IR_OP_TRANSPOSE && x->noperands == 1 && !s->layout_sensitive) {
    IrInstr *y = x->operands[0];
    int64_t perm[IR_MAX_RANK], sizes[IR_MAX_RANK];
    if (ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK) != r || y->shape.rank != r) return false;
    IrInstr *ops[1 + IR_MAX_RANK] = {y};
    for (int d = 0; d < r; d++) {
      if (perm[d] < 0 || perm[d] >= r) return false;
      ops[1 + perm[d]] = starts[d];
      sizes[perm[d]] = i->shape.dims[d];
    }
    IrInstr *nd = dynamic_slice_before(i, ops, sizes, r, i->name);
    if (!nd) return false;
    IrInstr *nt = add_before(i, IR_OP_TRANSPOSE, &i->shape, &nd, 1, x->name);
    if (!nt) return false;
    ir_attr_set_dims(nt, "dimensions", perm, r);
    return algsimp_forward(s, i, nt, "a dynamic slice of a transpose is the transpose of a dynamic slice of its operand");
  }
  if (x->op == IR_OP_CONSTANT) return false;
  int64_t st[IR_MAX_RANK], lim[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    int64_t v;
    if (!const_index(starts[d], &v) || v < 0) return false;
    int64_t max = x->shape.dims[d] - i->shape.dims[d];
    st[d] = v < max ? v : max;
    lim[d] = st[d] + i->shape.dims[d];
  }
  IrInstr *ns = slice_before(i, x, st, lim, NULL, i->name);
  return ns && algsimp_forward(s, i, ns, "its starts are constants: a dynamic slice at constant starts is a slice");
}

/* ---------- constant ---------- */

/* A constant array of more than one element, all of one value, is a broadcast of a scalar; 0,
 * 1, 2, ... is an iota (HandleConstant). Elided values ({...}) are unknown here: left alone. */
static bool constant(Simp *s, IrInstr *i) {
  const IrLiteral *l = i->literal;
  int64_t n = ir_shape_elements(&i->shape);
  if (!l || i->shape.rank == 0 || n < 2 || i->nusers == 0) return false;
  if (l->elided || !l->values || l->count != n) return false;
  double first = l->values[0];
  bool same = true;
  for (int64_t k = 1; k < n && same; k++) same = l->values[k] == first || (isnan(first) && isnan(l->values[k]));
  if (same) {
    IrShape sc = ir_shape_scalar(i->shape.type);
    IrInstr *c = constant_before(i, &sc, &first, 1, i->name);
    IrInstr *b = c ? add_before(i, IR_OP_BROADCAST, &i->shape, &c, 1, i->name) : NULL;
    if (!b) return false;
    ir_attr_set_text(b, "dimensions", "{}");
    return algsimp_forward(s, i, b, "every element is the same: a broadcast scalar");
  }
  if (i->shape.rank == 1 && n > 1 && (ir_type_is_int(i->shape.type) || ir_type_is_float(i->shape.type))) {
    for (int64_t k = 0; k < n; k++)
      if (l->values[k] != (double)k) return false;
    IrInstr *io = add_before(i, IR_OP_IOTA, &i->shape, NULL, 0, i->name);
    if (!io) return false;
    ir_attr_set_text(io, "iota_dimension", "0");
    return algsimp_forward(s, i, io, "its values are 0, 1, 2, ...: an iota");
  }
  return false;
}

/* ---------- maximum, minimum ---------- */

/* The lowest (want_max false: highest) value of the element type: -inf / +inf for floats. */
static bool extreme(IrType t, bool lowest, double *v) {
  if (ir_type_is_float(t)) {
    *v = lowest ? -INFINITY : INFINITY;
    return true;
  }
  if (!ir_type_is_int(t) || ir_type_bytes(t) > 4) return false;
  int bits = ir_type_bytes(t) * 8;
  if (ir_type_is_signed(t)) *v = lowest ? -ldexp(1, bits - 1) : ldexp(1, bits - 1) - 1;
  else *v = lowest ? 0 : ldexp(1, bits) - 1;
  return true;
}

/* max(x, lowest) -> x; min(x, highest) -> x (HandleMaximum, HandleMinimum; XLA:GPU propagates
 * NaN through min and max, which these keep). */
static bool min_max(Simp *s, IrInstr *i) {
  bool is_max = i->op == IR_OP_MAXIMUM;
  double e, v;
  if (!extreme(i->shape.type, is_max, &e)) return false;
  for (int k = 0; k < 2; k++)
    if (simp_splat_value(i->operands[k], &v) && v == e)
      return algsimp_forward(s, i, i->operands[1 - k],
                             is_max ? "the maximum with the lowest value of the type is the other operand"
                                    : "the minimum with the highest value of the type is the other operand");
  return false;
}

/* ---------- reduce ---------- */

/* A new reduce of x with init, reducer f, over dims[0..nd) (sorted here), before `at`, named base. */
static IrInstr *reduce_before(IrInstr *at, IrInstr *x, IrInstr *init, IrComputation *f, const int64_t *dims, int nd,
                              const char *base) {
  int64_t sd[IR_MAX_RANK], kept[IR_MAX_RANK];
  int nk = 0;
  memcpy(sd, dims, sizeof(int64_t) * (size_t)nd);
  ir_dims_sort(sd, nd);
  for (int d = 0; d < x->shape.rank; d++)
    if (!ir_dims_contain(sd, nd, d)) kept[nk++] = x->shape.dims[d];
  IrShape sh = shape_of(at, at->shape.type, nk, kept);
  IrInstr *ops[2] = {x, init};
  IrInstr *r = add_before(at, IR_OP_REDUCE, &sh, ops, 2, base);
  if (!r) return NULL;
  ir_attr_set_dims(r, "dimensions", sd, nd);
  ir_attr_set_comp(r, "to_apply", f);
  return r;
}

/* XLA's ReductionComputationsEquivalent: the same computation, or two that apply the same
 * commutative operation (add, multiply, and, or) to their parameters. */
static bool same_reducer(const IrComputation *a, const IrComputation *b) {
  if (a == b) return true;
  bool sa, sb;
  IrOpcode oa = simp_reducer_op(a, &sa), ob = simp_reducer_op(b, &sb);
  return oa == ob && (oa == IR_OP_ADD || oa == IR_OP_MULTIPLY || oa == IR_OP_AND || oa == IR_OP_OR) &&
         a->params[0]->shape.type == b->params[0]->shape.type;
}

/* Two constants of one scalar value (HloInstruction::Identical for a reduce's init). */
static bool same_constant(const IrInstr *a, const IrInstr *b) {
  double va, vb;
  if (a == b) return true;
  return a->op == IR_OP_CONSTANT && b->op == IR_OP_CONSTANT && a->shape.type == b->shape.type &&
         ir_shape_is_scalar(&a->shape) && ir_shape_is_scalar(&b->shape) && simp_splat_value(a, &va) &&
         simp_splat_value(b, &vb) && (va == vb || (isnan(va) && isnan(vb)));
}

static bool only_reduces_read(const IrInstr *x) {
  for (int u = 0; u < x->nusers; u++)
    if (x->users[u]->op != IR_OP_REDUCE) return false;
  return true;
}

/* HandleReduce's three rules for a reduce of broadcast x = broadcast(y), in XLA's order:
 *  - a max, min, and or or of a scalar broadcast over all its dimensions is op(y, init);
 *  - a reduce over dimensions all of y's reduces y and broadcasts the smaller result (the
 *    replicated elements are not reduced);
 *  - a sum over dimensions the broadcast added is broadcast(init + y * N), N the number of
 *    elements summed for each result (constant-folding folds what it can).
 * jax.grad of a layer norm's bias sums a broadcast 1.0 over the batch: XLA's module has the
 * constant 64 where the reduce was. */
static bool reduce_of_broadcast(Simp *s, IrInstr *i, IrInstr *x, IrInstr *init, IrComputation *f, IrOpcode op,
                                const int64_t *dims, int nd) {
  IrInstr *y = x->operands[0];
  int64_t bd[IR_MAX_RANK];
  int nb = ir_attr_dims_or_empty(x, "dimensions", bd);
  if (nb != y->shape.rank) return false;
  char msg[400];
  if ((op == IR_OP_MAXIMUM || op == IR_OP_MINIMUM || op == IR_OP_AND || op == IR_OP_OR) && y->shape.rank == 0 &&
      nd == x->shape.rank) {
    IrInstr *ops[2] = {y, init};
    IrInstr *b = add_before(i, op, &i->shape, ops, 2, ir_op_name(op));
    snprintf(msg, sizeof msg,
             "a %s of %s over every dimension of a broadcast scalar is the %s of %s and the initial value",
             ir_op_name(op), x->name, ir_op_name(op), y->name);
    return b && algsimp_forward(s, i, b, msg);
  }
  /* every reduced dimension is one of y's: reduce y, broadcast the result */
  int64_t yd[IR_MAX_RANK];
  bool from_y = true;
  for (int k = 0; k < nd && from_y; k++) {
    from_y = false;
    for (int q = 0; q < nb; q++)
      if (bd[q] == dims[k]) {
        yd[k] = q;
        from_y = true;
      }
  }
  if (from_y) {
    IrInstr *nr = reduce_before(i, y, init, f, yd, nd, i->name);
    if (!nr) return false;
    int64_t nbd[IR_MAX_RANK];
    int n = 0;
    for (int q = 0; q < nb; q++) {
      if (ir_dims_contain(yd, nd, q)) continue;
      int64_t shift = 0;
      for (int k = 0; k < nd; k++) shift += dims[k] < bd[q];
      nbd[n++] = bd[q] - shift;
    }
    IrInstr *b = add_before(i, IR_OP_BROADCAST, &i->shape, &nr, 1, x->name);
    if (!b) return false;
    ir_attr_set_dims(b, "dimensions", nbd, n);
    snprintf(msg, sizeof msg,
             "every dimension it reduces is one of %s's, which %s broadcasts: it reduces %s and broadcasts the "
             "smaller result",
             y->name, x->name, y->name);
    return algsimp_forward(s, i, b, msg);
  }
  /* a sum over dimensions the broadcast added only */
  if (op != IR_OP_ADD || y->shape.type != i->shape.type) return false;
  for (int q = 1; q < nb; q++)
    if (bd[q - 1] >= bd[q]) return false;
  int64_t count = 1, nbd[IR_MAX_RANK];
  int n = 0, common = 0;
  for (int d = 0; d < x->shape.rank; d++) {
    bool added = !ir_dims_contain(bd, nb, d), removed = ir_dims_contain(dims, nd, d);
    if (removed && !added) return false;
    if (removed) {
      count *= x->shape.dims[d];
      common++;
    } else if (!added) {
      nbd[n++] = d - common;
    }
  }
  if (count > 1 && ir_type_is_float(i->shape.type)) s->cx->reassociated = true; /* n additions -> one multiply */
  IrInstr *k = scalar_like(i, &y->shape, (double)count, "constant");
  IrInstr *mops[2] = {y, k};
  IrInstr *mul = k ? add_before(i, IR_OP_MULTIPLY, &y->shape, mops, 2, "multiply") : NULL;
  IrInstr *bi = mul ? add_before(i, IR_OP_BROADCAST, &y->shape, &init, 1, "broadcast") : NULL;
  if (!bi) return false;
  ir_attr_set_dims(bi, "dimensions", NULL, 0);
  IrInstr *aops[2] = {bi, mul};
  IrInstr *sum = add_before(i, IR_OP_ADD, &y->shape, aops, 2, "add");
  IrInstr *b = sum ? add_before(i, IR_OP_BROADCAST, &i->shape, &sum, 1, "broadcast") : NULL;
  if (!b) return false;
  ir_attr_set_dims(b, "dimensions", nbd, n);
  snprintf(msg, sizeof msg, "a sum over dimensions %s added to %s is the initial value plus %s times %" PRId64
           ", broadcast", x->name, y->name, y->name, count);
  return algsimp_forward(s, i, b, msg);
}

/* HandleReduce's rules, in its order: a reduction over dimensions of size 1 reduces nothing (the
 * init value is the reduction's identity, HLO's contract): the operand reshaped; a sum of a
 * negation is the negation of the sum; a reduce of a transpose reduces the transpose's operand
 * (permuted dimensions, a transpose after it when the kept ones come out in another order); a
 * reduce of a reduce with the same reducer and init is one reduce; a reduce of a reshape that
 * changes only reduced dimensions reduces the reshape's operand, one that changes only kept ones
 * reduces first and reshapes after; a reduce of a broadcast, reduce_of_broadcast. */
static bool reduce(Simp *s, IrInstr *i) {
  if (i->noperands != 2 || !ir_shape_is_array(&i->shape)) return false;
  IrInstr *x = i->operands[0], *init = i->operands[1];
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (ir_shape_elements(&i->shape) == ir_shape_elements(&x->shape) && i->shape.type == x->shape.type) {
    IrInstr *r = add_before(i, IR_OP_RESHAPE, &i->shape, &x, 1, "reshape");
    return r && algsimp_forward(s, i, r, "the reduced dimensions have size 1: nothing is reduced, the operand is reshaped");
  }
  int64_t dims[IR_MAX_RANK];
  int nd = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
  if (!f || nd < 0 || !ir_shape_is_array(&x->shape) || nd + i->shape.rank != x->shape.rank) return false;
  bool swapped;
  IrOpcode op = simp_reducer_op(f, &swapped);
  double v;
  char msg[400];
  if (ir_type_is_float(i->shape.type) && x->op == IR_OP_NEGATE && x->noperands == 1 && op == IR_OP_ADD &&
      init->op == IR_OP_CONSTANT && simp_splat_value(init, &v) && v == 0) {
    IrInstr *y = x->operands[0];
    IrInstr *nr = reduce_before(i, y, init, f, dims, nd, i->name);
    IrInstr *ng = nr ? add_before(i, IR_OP_NEGATE, &i->shape, &nr, 1, x->name) : NULL;
    return ng && algsimp_forward(s, i, ng, "the sum of a negation is the negation of the sum");
  }
  if (x->op == IR_OP_TRANSPOSE && x->noperands == 1 && (i->shape.rank < 2 || x->nusers == 1 || only_reduces_read(x))) {
    int64_t perm[IR_MAX_RANK], nrd[IR_MAX_RANK], keep[IR_MAX_RANK];
    int r = x->shape.rank, nk = 0;
    if (ir_attr_dims(x, "dimensions", perm, IR_MAX_RANK) != r) return false;
    for (int k = 0; k < nd; k++) nrd[k] = perm[dims[k]];
    for (int k = 0; k < r; k++)
      if (!ir_dims_contain(nrd, nd, perm[k])) keep[nk++] = perm[k];
    bool sorted = true;
    for (int k = 1; k < nk; k++) sorted = sorted && keep[k - 1] < keep[k];
    IrInstr *nr = reduce_before(i, x->operands[0], init, f, nrd, nd, i->name);
    if (!nr) return false;
    if (sorted) return forward_keep_name(s, i, nr, "a reduce of a transpose reduces the transposed value: the kept dimensions "
                                                 "come out in the same order");
    for (int k = 0; k < nk; k++) {
      int64_t d = keep[k];
      for (int q = 0; q < nd; q++)
        if (d > nrd[q]) keep[k]--;
    }
    IrInstr *t = add_before(i, IR_OP_TRANSPOSE, &i->shape, &nr, 1, x->name);
    if (!t) return false;
    ir_attr_set_dims(t, "dimensions", keep, nk);
    return algsimp_forward(s, i, t, "a reduce of a transpose reduces the transposed value and transposes the smaller "
                                    "result");
  }
  if (x->op == IR_OP_REDUCE && x->noperands == 2 && same_constant(init, x->operands[1]) &&
      same_reducer(f, ir_attr_comp(x, "to_apply"))) {
    int64_t inner[IR_MAX_RANK], outer[IR_MAX_RANK], all[2 * IR_MAX_RANK];
    int ni = ir_attr_dims(x, "dimensions", inner, IR_MAX_RANK);
    if (ni < 0 || !ir_shape_is_array(&x->operands[0]->shape)) return false;
    memcpy(outer, dims, sizeof(int64_t) * (size_t)nd);
    /* XLA's MergeReduces: both lists sorted, the outer one moved past each inner dimension */
    ir_dims_sort(inner, ni);
    ir_dims_sort(outer, nd);
    for (int a = 0; a < ni; a++)
      for (int b = 0; b < nd; b++)
        if (outer[b] >= inner[a]) outer[b]++;
    int na = 0;
    for (int a = 0; a < ni; a++) all[na++] = inner[a];
    for (int b = 0; b < nd; b++) all[na++] = outer[b];
    if (na > IR_MAX_RANK) return false;
    IrInstr *nr = reduce_before(i, x->operands[0], init, f, all, na, i->name);
    if (!nr) return false;
    if (!ir_shape_equal(&nr->shape, &i->shape)) { /* not expected: leave nothing behind */
      simp_drop_dead(nr);
      return false;
    }
    snprintf(msg, sizeof msg, "a reduce of %s (the same reducer and init) is one reduce of its operand", x->name);
    return forward_keep_name(s, i, nr, msg);
  }
  if (x->op == IR_OP_RESHAPE && x->noperands == 1 && ir_shape_is_array(&x->operands[0]->shape)) {
    IrInstr *y = x->operands[0];
    /* DimensionsUnmodifiedByReshape, seen from the reshape's result: the operand dimension each
       result dimension stays, -1 for one the reshape splits or merges */
    int out_of_in[IR_MAX_RANK], in_of_out[IR_MAX_RANK];
    unmodified_by_reshape(&y->shape, &x->shape, out_of_in);
    for (int d = 0; d < x->shape.rank; d++) in_of_out[d] = -1;
    for (int yd = 0; yd < y->shape.rank; yd++)
      if (out_of_in[yd] >= 0) in_of_out[out_of_in[yd]] = yd;
    bool kept_unmodified = true, reduced_unmodified = true;
    for (int d = 0; d < x->shape.rank; d++) {
      bool reduced = ir_dims_contain(dims, nd, d);
      if (!reduced && in_of_out[d] < 0) kept_unmodified = false;
      if (reduced && in_of_out[d] < 0) reduced_unmodified = false;
    }
    if (kept_unmodified) {
      int64_t nrd[IR_MAX_RANK];
      int n = 0;
      for (int yd = 0; yd < y->shape.rank; yd++) {
        bool kept = false;
        for (int d = 0; d < x->shape.rank; d++)
          if (in_of_out[d] == yd && !ir_dims_contain(dims, nd, d)) kept = true;
        if (!kept) nrd[n++] = yd;
      }
      IrInstr *nr = reduce_before(i, y, init, f, nrd, n, i->name);
      if (!nr) return false;
      if (!ir_shape_equal(&nr->shape, &i->shape)) {
        simp_drop_dead(nr);
        return false;
      }
      return forward_keep_name(s, i, nr, "the reshape it reduces changes only reduced dimensions: it reduces the "
                                         "reshape's operand");
    }
    if (reduced_unmodified && x->nusers == 1) {
      int64_t nrd[IR_MAX_RANK];
      for (int k = 0; k < nd; k++) nrd[k] = in_of_out[dims[k]];
      IrInstr *nr = reduce_before(i, y, init, f, nrd, nd, i->name);
      IrInstr *rs = nr ? add_before(i, IR_OP_RESHAPE, &i->shape, &nr, 1, x->name) : NULL;
      return rs && algsimp_forward(s, i, rs, "the reshape it reduces changes only kept dimensions: it reduces first and "
                                             "reshapes the smaller result");
    }
  }
  if (x->op == IR_OP_BROADCAST && x->noperands == 1 && ir_shape_is_array(&x->operands[0]->shape))
    return reduce_of_broadcast(s, i, x, init, f, op, dims, nd);
  return false;
}

/* ---------- reduce-window ---------- */

/* HandleReduceWindow's rules for a reduce-window of one input, in XLA's order:
 *  - a window of one element everywhere (add, min or max) is the operation of the operand and
 *    the initial value, padded where the window was;
 *  - a window that covers whole dimensions, with no stride, dilation or padding, whose result has
 *    size 1 there, is a reduce of those dimensions and a reshape
 *    (enable_window_reduce_to_reduce_replacement);
 *  - a pad (or a convert of a pad) of the initial value becomes the window's own padding, interior
 *    padding its base dilation (not into a window already dilated; through a convert only when
 *    the pad adds at least a tenth to the one dimension the window reduces).
 * jax.grad of an average pool pads the gradient inside and out and sums windows of it: XLA's
 * module has one reduce-window with lhs_dilate and padding, no pad. */
static bool reduce_window_current(Simp *s, IrInstr *i) {
  if (i->noperands != 2 || !ir_shape_is_array(&i->shape)) return false;
  IrInstr *x = i->operands[0], *init = i->operands[1];
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (!f || !ir_shape_is_array(&x->shape) || x->shape.rank != i->shape.rank) return false;
  int r = x->shape.rank;
  IrWindow w;
  char why[200], msg[400];
  if (!ir_attr_window(i, r, &w, why, sizeof why)) return false;
  bool swapped;
  IrOpcode op = simp_reducer_op(f, &swapped);
  bool one = true, strided = false, dilated = false, padded = false;
  for (int d = 0; d < r; d++) {
    one = one && w.size[d] == 1 && w.stride[d] == 1 && w.lhs_dilate[d] == 1 && w.rhs_dilate[d] == 1 && !w.reversal[d];
    strided = strided || w.stride[d] != 1;
    dilated = dilated || w.lhs_dilate[d] != 1 || w.rhs_dilate[d] != 1;
    padded = padded || w.pad_lo[d] || w.pad_hi[d];
  }
  if (one && (op == IR_OP_ADD || op == IR_OP_MINIMUM || op == IR_OP_MAXIMUM)) {
    IrInstr *b = add_before(i, IR_OP_BROADCAST, &x->shape, &init, 1, "broadcast");
    if (!b) return false;
    ir_attr_set_dims(b, "dimensions", NULL, 0);
    IrInstr *ops[2] = {x, b};
    IrInstr *y = add_before(i, op, &x->shape, ops, 2, ir_op_name(op));
    if (y && padded) {
      IrInstr *pops[2] = {y, init};
      y = add_before(i, IR_OP_PAD, &i->shape, pops, 2, "pad");
      if (y) ir_attr_set_padding(y, w.pad_lo, w.pad_hi, NULL, r);
    }
    snprintf(msg, sizeof msg, "a window of one element is the %s of each element and the initial value%s",
             ir_op_name(op), padded ? ", padded where the window was" : "");
    return y && algsimp_forward(s, i, y, msg);
  }
  if (!strided && !dilated && !padded) {
    int64_t rd[IR_MAX_RANK];
    int nr = 0;
    bool whole = true;
    for (int d = 0; d < r && whole; d++) {
      if (w.size[d] == 1) continue;
      if (i->shape.dims[d] == 1) rd[nr++] = d;
      else whole = false;
    }
    if (whole && nr > 0) {
      IrInstr *red = reduce_before(i, x, init, f, rd, nr, "reduce");
      IrInstr *rs = red ? add_before(i, IR_OP_RESHAPE, &i->shape, &red, 1, "reshape") : NULL;
      return rs && algsimp_forward(s, i, rs, "its windows cover whole dimensions: a reduce of them, reshaped");
    }
  }
  IrInstr *pad = NULL, *convert = NULL;
  if (x->op == IR_OP_PAD && x->noperands == 2) {
    pad = x;
  } else if (x->op == IR_OP_CONVERT && x->noperands == 1 && x->operands[0]->op == IR_OP_PAD &&
             x->operands[0]->noperands == 2) {
    convert = x;
    pad = x->operands[0];
  }
  if (!pad) return false;
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK];
  if (ir_attr_padding(pad, lo, hi, in, IR_MAX_RANK) != r) return false;
  if (convert) {
    /* XLA folds through a convert only when the padding is worth it for a scan's one dimension */
    int nt = -1, count = 0;
    for (int d = 0; d < r; d++)
      if (!ir_window_dim_trivial(&w, d)) {
        nt = d;
        count++;
      }
    if (count == 1 && (double)(lo[nt] + hi[nt]) / (double)x->shape.dims[nt] < 0.1) return false;
  }
  bool interior = false, base_dilated = false;
  for (int d = 0; d < r; d++) {
    interior = interior || in[d] != 0;
    base_dilated = base_dilated || w.lhs_dilate[d] != 1;
  }
  if (interior && base_dilated) return false;
  IrInstr *pv = pad->operands[1];
  double a, b;
  if (pv != init && !(pv->op == IR_OP_CONSTANT && init->op == IR_OP_CONSTANT && simp_splat_value(pv, &a) &&
                      simp_splat_value(init, &b) && (a == b || (isnan(a) && isnan(b)))))
    return false;
  /* a pad that puts one element in each window makes a broadcast in XLA (CreateBroadcastSequence);
     fxplain leaves that case alone */
  IrInstr *po = pad->operands[0];
  bool symmetric = true, only_unit = true;
  for (int d = 0; d < r; d++) {
    symmetric = symmetric && lo[d] == hi[d];
    if ((lo[d] || hi[d]) && po->shape.dims[d] != 1) only_unit = false;
  }
  if (!strided && symmetric && !interior && only_unit) return false;
  IrInstr *operand = po;
  if (convert) {
    IrShape cs = simp_shape_retyped(&i->parent->module->arena, &po->shape, convert->shape.type);
    operand = add_before(i, IR_OP_CONVERT, &cs, &po, 1, convert->name);
    if (!operand) return false;
  }
  IrWindow nw = w;
  for (int d = 0; d < r; d++) {
    nw.pad_lo[d] += w.lhs_dilate[d] * lo[d];
    nw.pad_hi[d] += w.lhs_dilate[d] * hi[d];
    if (in[d]) nw.lhs_dilate[d] = 1 + in[d];
  }
  IrInstr *ops[2] = {operand, init};
  IrInstr *y = add_before(i, IR_OP_REDUCE_WINDOW, &i->shape, ops, 2, i->name);
  if (!y) return false;
  ir_attr_set_window(y, &nw);
  ir_attr_set_comp(y, "to_apply", f);
  snprintf(msg, sizeof msg, "the pad %s%s of the initial value becomes the window's padding%s", pad->name,
           convert ? " (through its convert)" : "", interior ? " and base dilation" : "");
  return forward_keep_name(s, i, y, msg);
}

/* ---------- conditional ---------- */

/* conditional(convert(p), b0, b1) with p a pred[] and two branch computations ->
 * conditional(p, true=b1, false=b0): index 1 is p true. XLA's algsimp makes this rewrite on a
 * conditional JAX wrote for lax.cond (seen in jaxlib 0.10.2's pass log); the pred form is the
 * one conditional-simplifier may turn into selects. */
static bool conditional_index(Simp *s, IrInstr *i) {
  const IrAttr *bc = ir_attr_get(i, "branch_computations");
  if (!bc || bc->kind != IR_ATTR_COMP || bc->ncomps != 2 || i->noperands != 3 || !bc->comps[0] || !bc->comps[1]) return false;
  IrInstr *idx = i->operands[0];
  if (!idx || idx->op != IR_OP_CONVERT || idx->noperands != 1 || !idx->operands[0]) return false;
  IrInstr *p = idx->operands[0];
  if (p->shape.type != IR_PRED || !ir_shape_is_scalar(&p->shape)) return false;
  IrComputation *b0 = bc->comps[0], *b1 = bc->comps[1];
  char before[256];
  simp_describe(i, before, sizeof before);
  IrInstr *x0 = i->operands[1], *x1 = i->operands[2];
  ir_set_operand(i, 0, p);
  ir_set_operand(i, 1, x1);
  ir_set_operand(i, 2, x0);
  ir_attr_remove(i, "branch_computations");
  ir_attr_set_comp(i, "true_computation", b1);
  ir_attr_set_comp(i, "false_computation", b0);
  simp_drop_dead(idx);
  char after[256], msg[900];
  simp_describe(i, after, sizeof after);
  snprintf(msg, sizeof msg,
           "replaced %s by %s: indexed by convert(%s) of a pred, it runs %s when %s is true and %s when false "
           "(true_computation=%s, false_computation=%s)",
           before, after, p->name, b1->name, p->name, b0->name, b1->name, b0->name);
  algsimp_report(s, "rewrite", i, NULL, i->name, msg);
  return true;
}

/* ---------- reduce-precision ---------- */

/* The exponent width and the significand width (the mantissa's bits plus the implicit one) of a
 * floating-point type, as XLA's primitive_util gives them; false for other types. */
static bool float_widths(IrType t, int *exponent, int *significand) {
  switch (t) {
  case IR_F64: *exponent = 11, *significand = 53; return true;
  case IR_F32: *exponent = 8, *significand = 24; return true;
  case IR_BF16: *exponent = 8, *significand = 8; return true;
  case IR_F16: *exponent = 5, *significand = 11; return true;
  case IR_F8E4M3FN: case IR_F8E4M3FNUZ: case IR_F8E4M3B11FNUZ: case IR_F8E4M3: *exponent = 4, *significand = 4; return true;
  case IR_F8E5M2: case IR_F8E5M2FNUZ: *exponent = 5, *significand = 3; return true;
  case IR_F8E3M4: *exponent = 3, *significand = 5; return true;
  case IR_F8E8M0FNU: *exponent = 8, *significand = 1; return true;
  case IR_F4E2M1FN: *exponent = 2, *significand = 2; return true;
  default: return false;
  }
}

/* A reduce-precision to exactly its operand's own precision changes nothing (XLA's
 * HandleReducePrecision, with enable_remove_no_op_reduce_precision as XLA:GPU sets it): MaxText's
 * bf16 GEMM outputs carry one each. */
static bool reduce_precision(Simp *s, IrInstr *i) {
  int e, m;
  int64_t eb, mb;
  IrInstr *x = i->operands[0];
  if (!float_widths(x->shape.type, &e, &m) || !ir_attr_int(i, "exponent_bits", &eb) ||
      !ir_attr_int(i, "mantissa_bits", &mb) || eb != e || mb + 1 != m)
    return false;
  return algsimp_forward(s, i, x, "a reduce-precision to its operand's own precision changes nothing");
}

/* A dot with no contracting dimension (an outer product, batched or not) multiplies broadcasts
 * (HandleDot's RewriteAsMultiplyDotWithZeroLhsContractingDim): each side transposed to batch
 * dimensions first (NormalizeDotOperandToBatchMajorAndContractingMinor), converted to the dot's
 * type, and broadcast to the result: lhs onto the batch and its own dimensions, rhs onto the
 * batch and the last ones. A dot with an algorithm set is left alone. */
static bool dot_outer_product(Simp *s, IrInstr *i) {
  IrDotDims d;
  if (i->noperands != 2 || !ir_dot_dims(i, &d) || d.nlhs_contract != 0 || ir_attr_text(i, "algorithm")) return false;
  IrInstr *side[2] = {i->operands[0], i->operands[1]};
  int nb = d.nlhs_batch, rank = i->shape.rank, lrank = side[0]->shape.rank;
  if (!ir_shape_is_array(&side[0]->shape) || !ir_shape_is_array(&side[1]->shape) ||
      lrank + side[1]->shape.rank - nb != rank || d.nrhs_batch != nb)
    return false;
  for (int k = 0; k < 2; k++) {
    IrInstr *x = side[k];
    const int64_t *batch = k ? d.rhs_batch : d.lhs_batch;
    int r = x->shape.rank;
    if (!ir_shape_is_array(&x->shape)) return false;
    int64_t perm[IR_MAX_RANK], dims[IR_MAX_RANK];
    int q = 0;
    for (int t = 0; t < nb; t++) perm[q++] = batch[t];
    for (int t = 0; t < r; t++)
      if (!ir_dims_contain(batch, nb, t)) perm[q++] = t;
    bool identity = true;
    for (int t = 0; t < r; t++) {
      identity = identity && perm[t] == t;
      dims[t] = x->shape.dims[perm[t]];
    }
    if (!identity) {
      IrShape ts = shape_of(i, x->shape.type, r, dims);
      IrInstr *t = add_before(i, IR_OP_TRANSPOSE, &ts, &x, 1, x->name);
      if (!t) return false;
      ir_attr_set_dims(t, "dimensions", perm, r);
      x = t;
    }
    if (x->shape.type != i->shape.type) {
      IrShape cs = shape_of(i, i->shape.type, r, x->shape.dims);
      IrInstr *c = add_before(i, IR_OP_CONVERT, &cs, &x, 1, x->name);
      if (!c) return false;
      x = c;
    }
    if (rank != r) {
      int64_t bd[IR_MAX_RANK];
      int n = 0;
      if (k == 0)
        for (int t = 0; t < r; t++) bd[n++] = t;
      else {
        for (int t = 0; t < nb; t++) bd[n++] = t;
        for (int t = lrank; t < rank; t++) bd[n++] = t;
      }
      if (n != r) return false;
      IrInstr *b = add_before(i, IR_OP_BROADCAST, &i->shape, &x, 1, x->name);
      if (!b) return false;
      ir_attr_set_dims(b, "dimensions", bd, n);
      x = b;
    }
    side[k] = x;
  }
  IrInstr *m = add_before(i, IR_OP_MULTIPLY, &i->shape, side, 2, i->name);
  return m && forward_keep_name(s, i, m, "it contracts no dimension: an outer product is a multiply of broadcasts");
}

/* HandleSelect on predicates: select(p, true, false) is p, select(p, false, true) is not(p). */
static bool select_pred(Simp *s, IrInstr *i) {
  if (i->shape.type != IR_PRED) return false;
  double t, f;
  if (!simp_splat_value(i->operands[1], &t) || !simp_splat_value(i->operands[2], &f) || (t != 0) == (f != 0))
    return false;
  IrInstr *p = i->operands[0];
  if (!ir_shape_equal(&p->shape, &i->shape)) return false;
  if (t != 0) return algsimp_forward(s, i, p, "a select of true where the condition holds and false elsewhere is the condition");
  IrInstr *n = add_before(i, IR_OP_NOT, &i->shape, &p, 1, "not");
  return n && algsimp_forward(s, i, n, "a select of false where the condition holds and true elsewhere is its negation");
}

bool algsimp_current_rewrite(Simp *s, IrInstr *i) {
  if (i->parent && i->op == IR_OP_CONDITIONAL) return conditional_index(s, i);
  if (!i->parent || !ir_shape_is_array(&i->shape)) return false;
  switch (i->op) {
  case IR_OP_SUBTRACT:
    return i->noperands == 2 && subtract(s, i);
  case IR_OP_ADD:
    return i->noperands == 2 && add(s, i);
  case IR_OP_MULTIPLY:
    return i->noperands == 2 && multiply(s, i);
  case IR_OP_COMPARE:
    return i->noperands == 2 && compare(s, i);
  case IR_OP_DIVIDE:
    return i->noperands == 2 && divide(s, i);
  case IR_OP_REMAINDER:
    return i->noperands == 2 && modulo(s, i);
  case IR_OP_BROADCAST:
    return i->noperands == 1 && broadcast(s, i);
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
    return i->noperands == 2 && min_max(s, i);
  case IR_OP_REDUCE:
    return reduce(s, i);
  case IR_OP_REDUCE_WINDOW:
    return reduce_window_current(s, i);
  case IR_OP_CONSTANT:
    return constant(s, i);
  case IR_OP_DYNAMIC_UPDATE_SLICE:
    return dynamic_update_slice(s, i);
  case IR_OP_SLICE:
    return i->noperands == 1 && slice_current(s, i);
  case IR_OP_DYNAMIC_SLICE:
    return i->noperands >= 1 && dynamic_slice(s, i);
  case IR_OP_REDUCE_PRECISION:
    return i->noperands == 1 && reduce_precision(s, i);
  case IR_OP_RESHAPE:
    return i->noperands == 1 && (reshape_of_broadcast(s, i) || (!i->dead && reshape_iota(s, i)));
  case IR_OP_DOT:
    return dot_degenerate(s, i) || (!i->dead && dot_outer_product(s, i));
  case IR_OP_SELECT:
    return i->noperands == 3 && select_pred(s, i);
  default:
    return false;
  }
}

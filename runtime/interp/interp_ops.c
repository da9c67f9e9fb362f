/* interp_ops.c — the reference interpreter's arithmetic: what every elementwise op means for each
 * element type (XLA's semantics: f32 math in f32, f16/bf16 computed in f32 and rounded to nearest
 * even, integer wraparound, XLA's division-by-zero and out-of-range shift results, NaN-propagating
 * max/min, saturating float-to-int conversion), and the compound ops: reduce, reduce-window, dot,
 * convolution, gather, scatter, sort, top-k, map and select-and-scatter (rng: rng_ops.c), for every
 * element type including f8 and complex. Called from interp.c's walker. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_internal.h"
#include "../../compiler/plan/plan.h"

static bool instr_error(const IrInstr *i, FxError *err, const char *msg) {
  return fx_error_set(err, i->loc.file, i->loc.line, i->loc.col, "%s: %s", i->name, msg);
}

/* ---------- values ---------- */

static bool is_f(IrType t) { return ir_type_is_float(t); }
static bool is_c(IrType t) { return ir_type_is_complex(t); }
static bool is_u(IrType t) { return t == IR_U4 || t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64 || t == IR_PRED; }
static int bits_of(IrType t) { return t == IR_PRED ? 1 : t == IR_S4 || t == IR_U4 ? 4 : ir_type_bytes(t) * 8; }

RtVal rt_val_load(const RtTensor *t, int64_t i) {
  RtVal v = {.im = 0};
  if (is_c(t->type)) rt_get_c(t, i, &v.f, &v.im);
  else if (is_f(t->type)) v.f = rt_get_f(t, i);
  else v.i = rt_get_i(t, i);
  return v;
}

void rt_val_store(RtTensor *t, int64_t i, RtVal v) {
  if (is_c(t->type)) rt_set_c(t, i, v.f, v.im);
  else if (is_f(t->type)) rt_set_f(t, i, v.f);
  else rt_set_i(t, i, v.i);
}

static int64_t wrap(IrType t, int64_t v) {
  switch (t) {
  case IR_PRED: return v != 0;
  case IR_S8: return (int8_t)(uint8_t)v;
  case IR_U8: return (uint8_t)v;
  case IR_S4: return (int64_t)(((uint64_t)v & 0xf) ^ 8) - 8; /* 4-bit two's complement */
  case IR_U4: return (uint64_t)v & 0xf;
  case IR_S16: return (int16_t)(uint16_t)v;
  case IR_U16: return (uint16_t)v;
  case IR_S32: return (int32_t)(uint32_t)v;
  case IR_U32: return (uint32_t)v;
  default: return v;
  }
}

static double fround(IrType t, double v) {
  switch (t) {
  case IR_F32: return (float)v;
  case IR_F16: return rt_f16_to_f32(rt_f32_to_f16((float)v));
  case IR_BF16: return rt_bf16_to_f32(rt_f32_to_bf16((float)v));
  /* f8 arithmetic runs in f32 (as XLA upcasts it), then rounds to the 8-bit type */
  case IR_C64: return (float)v;
  default: return ir_type_is_f8(t) ? rt_from_f8(t, rt_to_f8(t, (float)v)) : v;
  }
}

RtVal rt_val_norm(IrType t, RtVal v) {
  if (is_c(t)) {
    v.f = fround(t, v.f);
    v.im = fround(t, v.im);
  } else if (is_f(t)) {
    v.f = fround(t, v.f);
  } else {
    v.i = wrap(t, v.i);
  }
  return v;
}

bool rt_parse_dir(const char *s, RtDir *out) {
  static const char *names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (int k = 0; k < 6; k++)
    if (strcmp(s, names[k]) == 0) {
      *out = (RtDir)k;
      return true;
    }
  return false;
}

/* ---------- elementwise semantics ---------- */

static double f_unary(IrOpcode op, IrType t, double x) {
  bool d = t == IR_F64;
  float f = (float)x;
  double r;
  if (ir_math_eval(op, x, !d, &r)) return r;
  switch (op) {
  case IR_OP_LOGISTIC: return d ? 1.0 / (1.0 + exp(-x)) : 1.0f / (1.0f + expf(-f));
  case IR_OP_NEGATE: return -x;
  case IR_OP_RSQRT: return d ? 1.0 / sqrt(x) : 1.0f / sqrtf(f);
  case IR_OP_SIGN: return x != x ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  case IR_OP_COPY: case IR_OP_REAL: return x;
  case IR_OP_IMAG: return 0;
  default: return NAN;
  }
}

static int64_t sext(IrType t, int64_t v) {
  int b = bits_of(t);
  if (b >= 64) return v;
  uint64_t m = 1ULL << (b - 1);
  uint64_t u = (uint64_t)v & ((1ULL << b) - 1);
  return (int64_t)((u ^ m) - m);
}

/* float -> integer as XLA converts: NaN -> 0, saturate at the type's range, truncate toward 0 */
static int64_t f_to_int(IrType rt, double v) {
  if (v != v) return 0;
  double lo, hi;
  int b = bits_of(rt);
  if (rt == IR_PRED) return v != 0;
  if (is_u(rt)) {
    lo = 0;
    hi = b >= 64 ? 18446744073709551615.0 : (double)((1ULL << b) - 1);
    if (v <= lo) return 0;
    if (v >= hi) return b >= 64 ? (int64_t)UINT64_MAX : (int64_t)((1ULL << b) - 1);
    return b >= 64 ? (int64_t)(uint64_t)v : (int64_t)v;
  }
  lo = -ldexp(1.0, b - 1);
  hi = ldexp(1.0, b - 1);
  if (v <= lo) return b >= 64 ? INT64_MIN : -(int64_t)(1ULL << (b - 1));
  if (v >= hi) return b >= 64 ? INT64_MAX : (int64_t)((1ULL << (b - 1)) - 1);
  return (int64_t)v;
}

/* ---------- complex numbers ---------- */

/* c64 computes in float complex, c128 in double complex (C99's <complex.h>, as XLA's CPU runtime
 * calls the C library's complex functions). */
static RtVal cval(double re, double im) {
  RtVal v = {.f = re, .im = im};
  return v;
}

static bool c_unary(IrOpcode op, IrType t, IrType rt, RtVal a, RtVal *out) {
  bool d = t == IR_C128;
  double complex z = CMPLX(a.f, a.im);
  float complex zf = CMPLXF((float)a.f, (float)a.im);
  double complex r;
  switch (op) {
  case IR_OP_REAL: out->f = a.f; *out = rt_val_norm(rt, *out); return true;
  case IR_OP_IMAG: out->f = a.im; *out = rt_val_norm(rt, *out); return true;
  case IR_OP_ABS: out->f = d ? cabs(z) : cabsf(zf); *out = rt_val_norm(rt, *out); return true;
  case IR_OP_NEGATE: r = -z; break;
  case IR_OP_COPY: r = z; break;
  case IR_OP_EXP: r = d ? cexp(z) : cexpf(zf); break;
  case IR_OP_LOG: r = d ? clog(z) : clogf(zf); break;
  case IR_OP_SQRT: r = d ? csqrt(z) : csqrtf(zf); break;
  case IR_OP_RSQRT: r = d ? 1.0 / csqrt(z) : 1.0f / csqrtf(zf); break;
  case IR_OP_COS: r = d ? ccos(z) : ccosf(zf); break;
  case IR_OP_SIN: r = d ? csin(z) : csinf(zf); break;
  case IR_OP_TAN: r = d ? ctan(z) : ctanf(zf); break;
  case IR_OP_TANH: r = d ? ctanh(z) : ctanhf(zf); break;
  case IR_OP_EXPM1: r = d ? cexp(z) - 1.0 : cexpf(zf) - 1.0f; break;
  case IR_OP_LOG1P: r = d ? clog(1.0 + z) : clogf(1.0f + zf); break;
  case IR_OP_LOGISTIC: r = d ? 1.0 / (1.0 + cexp(-z)) : 1.0f / (1.0f + cexpf(-zf)); break;
  case IR_OP_SIGN: {
    /* z / |z|, and 0 for 0 */
    double m = d ? cabs(z) : cabsf(zf);
    r = m == 0 ? z : CMPLX(a.f / m, a.im / m);
    break;
  }
  case IR_OP_CONVERT:
    if (!is_c(rt)) return false; /* XLA has no complex -> real conversion: use real/imag */
    r = z;
    break;
  default: return false;
  }
  *out = rt_val_norm(rt, cval(creal(r), cimag(r)));
  return true;
}

static double round_f32(double v) { return (float)v; }
static double round_f64(double v) { return v; }

/* XLA's complex division: Smith's algorithm, scaled by the larger part of the divisor. Each step
 * is rounded to the part type (for f32 parts a double operation rounded to float gives exactly the
 * float operation's result). */
static RtVal c_divide(IrType t, RtVal a, RtVal b) {
  double (*R)(double) = t == IR_C64 ? round_f32 : round_f64;
  double ar = R(a.f), ai = R(a.im), br = R(b.f), bi = R(b.im), cr, ci;
  if (br == 0 && bi == 0) {
    cr = R(ar / fabs(br));
    ci = R(ai / fabs(br));
  } else if (fabs(br) < fabs(bi)) {
    double q = R(br / bi), den = R(bi + R(br * q));
    cr = R(R(R(ar * q) + ai) / den);
    ci = R(R(R(ai * q) - ar) / den);
  } else {
    double q = R(bi / br), den = R(br + R(bi * q));
    cr = R(R(ar + R(ai * q)) / den);
    ci = R(R(ai - R(ar * q)) / den);
  }
  return cval(cr, ci);
}

static bool c_binary(IrOpcode op, IrType t, RtVal a, RtVal b, RtVal *out) {
  bool d = t == IR_C128;
  RtVal r;
  switch (op) {
  case IR_OP_ADD: r = cval(a.f + b.f, a.im + b.im); break;
  case IR_OP_SUBTRACT: r = cval(a.f - b.f, a.im - b.im); break;
  case IR_OP_MULTIPLY:
    if (d) r = cval(a.f * b.f - a.im * b.im, a.f * b.im + a.im * b.f);
    else {
      float ar = (float)a.f, ai = (float)a.im, br = (float)b.f, bi = (float)b.im;
      r = cval(ar * br - ai * bi, ar * bi + ai * br);
    }
    break;
  case IR_OP_DIVIDE: r = c_divide(t, a, b); break;
  case IR_OP_POWER: {
    double complex p = d ? cpow(CMPLX(a.f, a.im), CMPLX(b.f, b.im))
                         : cpowf(CMPLXF((float)a.f, (float)a.im), CMPLXF((float)b.f, (float)b.im));
    if (a.f == 0 && a.im == 0) p = b.f == 0 && b.im == 0 ? 1.0 : 0.0; /* XLA: 0^0 = 1, 0^z = 0 */
    r = cval(creal(p), cimag(p));
    break;
  }
  default: return false;
  }
  *out = rt_val_norm(t, r);
  return true;
}

bool rt_ew_unary(IrOpcode op, IrType t, IrType rt, RtVal a, RtVal *out) {
  RtVal r = {.im = 0};
  if (is_c(t)) return c_unary(op, t, rt, a, out);
  if (op == IR_OP_CONVERT && is_c(rt)) {
    /* real -> complex: the value becomes the real part */
    r.f = is_f(t) ? a.f : t == IR_U64 ? (double)(uint64_t)a.i : (double)a.i;
    *out = rt_val_norm(rt, r);
    return true;
  }
  if (op == IR_OP_CONVERT) {
    if (is_f(t) && is_f(rt)) r.f = a.f;
    else if (is_f(t)) r.i = f_to_int(rt, a.f);
    else if (is_f(rt)) r.f = t == IR_U64 ? (double)(uint64_t)a.i : (double)a.i;
    else r.i = rt == IR_PRED ? a.i != 0 : a.i;
    /* int -> f16/bf16 goes through f32 in XLA's CPU emitter; the double -> float step rounds */
    *out = rt_val_norm(rt, r);
    return true;
  }
  if (op == IR_OP_IS_FINITE) {
    out->i = is_f(t) ? isfinite(a.f) != 0 : 1;
    return true;
  }
  if (is_f(t)) {
    if (op == IR_OP_NOT || op == IR_OP_CLZ || op == IR_OP_POPCNT) return false;
    r.f = f_unary(op, t, a.f);
    if (op == IR_OP_ROUND_EVEN || op == IR_OP_ROUND_AFZ || op == IR_OP_FLOOR || op == IR_OP_CEIL || op == IR_OP_ABS ||
        op == IR_OP_NEGATE || op == IR_OP_SIGN || op == IR_OP_COPY || op == IR_OP_REAL || op == IR_OP_IMAG || r.f == r.f ||
        a.f != a.f || 1) {
      *out = rt_val_norm(rt, r);
      return true;
    }
  }
  int b = bits_of(t);
  uint64_t mask = b >= 64 ? UINT64_MAX : (1ULL << b) - 1;
  uint64_t u = (uint64_t)a.i & mask;
  switch (op) {
  case IR_OP_ABS: r.i = a.i < 0 ? (int64_t)(0 - (uint64_t)a.i) : a.i; break;
  case IR_OP_NEGATE: r.i = (int64_t)(0 - (uint64_t)a.i); break;
  case IR_OP_NOT: r.i = t == IR_PRED ? !a.i : (int64_t)~(uint64_t)a.i; break;
  case IR_OP_SIGN: r.i = is_u(t) ? a.i != 0 : (a.i > 0) - (a.i < 0); break;
  case IR_OP_POPCNT: r.i = __builtin_popcountll(u); break;
  case IR_OP_CLZ: r.i = u == 0 ? b : __builtin_clzll(u) - (64 - b); break;
  case IR_OP_COPY: r.i = a.i; break;
  default: return false;
  }
  *out = rt_val_norm(rt, r);
  return true;
}

bool rt_ew_binary(IrOpcode op, IrType t, RtVal a, RtVal b, RtVal *out) {
  RtVal r = {.im = 0};
  if (is_c(t)) return c_binary(op, t, a, b, out);
  if (is_f(t)) {
    double x = a.f, y = b.f;
    bool d = t == IR_F64;
    switch (op) {
    case IR_OP_ADD: r.f = x + y; break;
    case IR_OP_SUBTRACT: r.f = x - y; break;
    case IR_OP_MULTIPLY: r.f = x * y; break;
    case IR_OP_DIVIDE: r.f = x / y; break;
    case IR_OP_MAXIMUM: r.f = (x != x || y != y) ? NAN : (x > y ? x : (x < y ? y : (signbit(x) ? y : x))); break;
    case IR_OP_MINIMUM: r.f = (x != x || y != y) ? NAN : (x < y ? x : (x > y ? y : (signbit(x) ? x : y))); break;
    case IR_OP_POWER: r.f = d ? pow(x, y) : powf((float)x, (float)y); break;
    case IR_OP_REMAINDER: r.f = d ? fmod(x, y) : fmodf((float)x, (float)y); break;
    case IR_OP_ATAN2: r.f = d ? atan2(x, y) : atan2f((float)x, (float)y); break;
    default: return false;
    }
    *out = rt_val_norm(t, r);
    return true;
  }
  int bits = bits_of(t);
  bool un = is_u(t);
  uint64_t ua = (uint64_t)a.i, ub = (uint64_t)b.i;
  switch (op) {
  case IR_OP_ADD: r.i = (int64_t)(ua + ub); break;
  case IR_OP_SUBTRACT: r.i = (int64_t)(ua - ub); break;
  case IR_OP_MULTIPLY: r.i = (int64_t)(ua * ub); break;
  case IR_OP_DIVIDE:
    if (b.i == 0) r.i = un ? -1 : -1; /* XLA: x / 0 is all ones (-1 signed, max unsigned) */
    else if (un) r.i = (int64_t)(ua / ub);
    else if (b.i == -1 && a.i == sext(t, (int64_t)(1ULL << (bits - 1)))) r.i = a.i; /* MIN / -1 = MIN */
    else r.i = a.i / b.i;
    break;
  case IR_OP_REMAINDER:
    if (b.i == 0) r.i = a.i;
    else if (un) r.i = (int64_t)(ua % ub);
    else if (b.i == -1) r.i = 0;
    else r.i = a.i % b.i;
    break;
  case IR_OP_MAXIMUM: r.i = un ? (ua > ub ? a.i : b.i) : (a.i > b.i ? a.i : b.i); break;
  case IR_OP_MINIMUM: r.i = un ? (ua < ub ? a.i : b.i) : (a.i < b.i ? a.i : b.i); break;
  case IR_OP_AND: r.i = a.i & b.i; break;
  case IR_OP_OR: r.i = a.i | b.i; break;
  case IR_OP_XOR: r.i = a.i ^ b.i; break;
  case IR_OP_POWER: {
    /* integer power by squaring; negative exponents give 0 except for base 1 / -1 (XLA) */
    if (!un && b.i < 0) {
      r.i = a.i == 1 ? 1 : a.i == -1 ? ((b.i & 1) ? -1 : 1) : 0;
      break;
    }
    uint64_t base = ua, e = ub, acc = 1;
    while (e) {
      if (e & 1) acc *= base;
      base *= base;
      e >>= 1;
    }
    r.i = (int64_t)acc;
    break;
  }
  case IR_OP_SHL: case IR_OP_SHRL: case IR_OP_SHRA: {
    uint64_t mask = bits >= 64 ? UINT64_MAX : (1ULL << bits) - 1;
    uint64_t amt = ub & mask;
    uint64_t va = ua & mask;
    if (amt >= (uint64_t)bits) {
      /* XLA: out-of-range shift amounts give 0, or the sign fill for arithmetic shifts */
      if (op == IR_OP_SHRA) r.i = sext(t, (int64_t)va) < 0 ? -1 : 0;
      else r.i = 0;
    } else if (op == IR_OP_SHL) r.i = (int64_t)(va << amt);
    else if (op == IR_OP_SHRL) r.i = (int64_t)(va >> amt);
    else {
      int64_t s = sext(t, (int64_t)va);
      r.i = s >> amt;
    }
    break;
  }
  default: return false;
  }
  *out = rt_val_norm(t, r);
  return true;
}

static int64_t total_key(IrType t, double v) {
  /* maps floats to integers in IEEE total order: -NaN < -inf < ... < -0 < +0 < ... < NaN */
  if (t == IR_F64) {
    int64_t k;
    memcpy(&k, &v, 8);
    return k < 0 ? (int64_t)((uint64_t)k ^ 0x7fffffffffffffffULL) : k;
  }
  float f = (float)v;
  int32_t k;
  memcpy(&k, &f, 4);
  return k < 0 ? (int32_t)((uint32_t)k ^ 0x7fffffffu) : k;
}

bool rt_ew_compare(RtDir dir, bool total, IrType t, RtVal a, RtVal b) {
  if (is_c(t)) {
    /* complex numbers compare for (in)equality only: both parts */
    bool eq = a.f == b.f && a.im == b.im;
    return dir == RT_NE ? !eq : eq;
  }
  if (is_f(t) && !total) {
    double x = a.f, y = b.f;
    switch (dir) {
    case RT_EQ: return x == y;
    case RT_NE: return x != y;
    case RT_LT: return x < y;
    case RT_LE: return x <= y;
    case RT_GT: return x > y;
    case RT_GE: return x >= y;
    }
    return false;
  }
  int c;
  if (is_f(t)) {
    int64_t x = total_key(t, a.f), y = total_key(t, b.f);
    c = (x > y) - (x < y);
  } else if (is_u(t)) {
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    c = (x > y) - (x < y);
  } else {
    c = (a.i > b.i) - (a.i < b.i);
  }
  switch (dir) {
  case RT_EQ: return c == 0;
  case RT_NE: return c != 0;
  case RT_LT: return c < 0;
  case RT_LE: return c <= 0;
  case RT_GT: return c > 0;
  case RT_GE: return c >= 0;
  }
  return false;
}

RtVal rt_ew_reduce_precision(IrType t, RtVal a, int ebits, int mbits) {
  /* XLA's algorithm on the f32 bit pattern (f16/bf16 go through f32) */
  if (!is_f(t) || t == IR_F64) return a;
  float f = (float)a.f;
  uint32_t x;
  memcpy(&x, &f, 4);
  if (f != f) return a;
  if (mbits < 23) {
    uint32_t last = 1u << (23 - mbits);
    uint32_t half = (last >> 1) - 1;
    uint32_t bias = half + ((x >> (23 - mbits)) & 1);
    x = (x + bias) & ~(last - 1);
  }
  if (ebits < 8) {
    uint32_t sign = x & 0x80000000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127;
    int32_t emax = (1 << (ebits - 1)) - 1, emin = 1 - emax;
    if (e > emax) x = sign | 0x7f800000u;
    else if (e < emin) x = sign;
  }
  memcpy(&f, &x, 4);
  a.f = fround(t, f);
  return a;
}

/* ---------- elementwise over tensors ---------- */

static RtTensor *out_tensor(const IrInstr *i, FxError *err) {
  if (!ir_shape_is_array(&i->shape)) {
    instr_error(i, err, "expected an array shape");
    return NULL;
  }
  return rt_tensor_new(i->shape.type, i->shape.rank, i->shape.dims, err);
}

bool rt_op_elementwise(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *r = out_tensor(i, err);
  if (!r) return false;
  int n = i->noperands;
  for (int j = 0; j < n; j++)
    if (ops[j]->count != r->count && ops[j]->count != 1 && i->op != IR_OP_BITCAST_CONVERT) {
      rt_tensor_unref(r);
      return instr_error(i, err, "operand shapes differ from the result's");
    }
  IrType t0 = n ? ops[0]->type : r->type;
  IrOpcode op = i->op;
  int64_t cnt = r->count;
  /* f32 fast paths: the common case in the walkthroughs */
  if (r->type == IR_F32 && n == 2 && ops[0]->type == IR_F32 && ops[0]->count == cnt && ops[1]->count == cnt &&
      (op == IR_OP_ADD || op == IR_OP_SUBTRACT || op == IR_OP_MULTIPLY || op == IR_OP_DIVIDE)) {
    const float *a = ops[0]->data, *b = ops[1]->data;
    float *o = r->data;
    for (int64_t k = 0; k < cnt; k++)
      o[k] = op == IR_OP_ADD ? a[k] + b[k] : op == IR_OP_SUBTRACT ? a[k] - b[k] : op == IR_OP_MULTIPLY ? a[k] * b[k] : a[k] / b[k];
    *out = r;
    return true;
  }
  RtDir dir = RT_EQ;
  bool total = false;
  int64_t eb = 0, mb = 0;
  if (op == IR_OP_COMPARE) {
    const char *d = ir_compare_direction(i);
    if (!d || !rt_parse_dir(d, &dir)) {
      rt_tensor_unref(r);
      return instr_error(i, err, "compare needs direction=EQ|NE|LT|LE|GT|GE");
    }
    const char *ty = ir_attr_text(i, "type");
    total = ty && strcmp(ty, "TOTALORDER") == 0;
    if (is_c(t0) && dir != RT_EQ && dir != RT_NE) {
      rt_tensor_unref(r);
      char msg[160];
      snprintf(msg, sizeof msg, "compare direction=%s is not defined for %s (complex numbers compare EQ or NE)", d,
               ir_type_name(t0));
      return instr_error(i, err, msg);
    }
  }
  if (op == IR_OP_REDUCE_PRECISION) {
    ir_attr_int(i, "exponent_bits", &eb);
    ir_attr_int(i, "mantissa_bits", &mb);
  }
  if (op == IR_OP_BITCAST_CONVERT) {
    /* A type under 8 bits is held a byte an element: the bits XLA packs are not laid out so. */
    int fb = ir_type_bits(ops[0]->type), tb = ir_type_bits(i->shape.type);
    if (fb != tb && (fb < 8 || tb < 8)) {
      rt_tensor_unref(r);
      char msg[160];
      snprintf(msg, sizeof msg, "bitcast-convert from %s to %s packs %d-bit values; the interpreter does not compute it",
               ir_type_name(ops[0]->type), ir_type_name(i->shape.type), fb < tb ? fb : tb);
      return instr_error(i, err, msg);
    }
    if (ops[0]->bytes != r->bytes) {
      rt_tensor_unref(r);
      return instr_error(i, err, "bitcast-convert changes the size of the buffer");
    }
    memcpy(r->data, ops[0]->data, r->bytes);
    *out = r;
    return true;
  }
  for (int64_t k = 0; k < cnt; k++) {
    RtVal a = n > 0 ? rt_val_load(ops[0], ops[0]->count == 1 ? 0 : k) : (RtVal){.im = 0};
    RtVal b = n > 1 ? rt_val_load(ops[1], ops[1]->count == 1 ? 0 : k) : (RtVal){.im = 0};
    RtVal res = {.im = 0};
    bool ok = true;
    switch (op) {
    case IR_OP_COMPARE: res.i = rt_ew_compare(dir, total, t0, a, b); break;
    case IR_OP_SELECT: {
      RtVal c = rt_val_load(ops[2], ops[2]->count == 1 ? 0 : k);
      res = a.i ? b : c;
      break;
    }
    case IR_OP_CLAMP: {
      RtVal v = b, hi = rt_val_load(ops[2], ops[2]->count == 1 ? 0 : k), t1 = {.im = 0};
      ok = rt_ew_binary(IR_OP_MAXIMUM, r->type, v, a, &t1) && rt_ew_binary(IR_OP_MINIMUM, r->type, t1, hi, &res);
      break;
    }
    case IR_OP_COMPLEX: /* real and imaginary parts of the result's element type */
      res.f = a.f;
      res.im = b.f;
      ok = is_c(r->type) && is_f(t0);
      break;
    /* bits past any type's own (64) change nothing: clamped before they become an int */
    case IR_OP_REDUCE_PRECISION: res = rt_ew_reduce_precision(r->type, a, (int)(eb < 64 ? eb : 64), (int)(mb < 64 ? mb : 64)); break;
    default:
      if (n == 1) ok = rt_ew_unary(op, t0, r->type, a, &res);
      else if (n == 2) ok = rt_ew_binary(op, t0, a, b, &res);
      else ok = false;
    }
    if (!ok) {
      rt_tensor_unref(r);
      char msg[160];
      snprintf(msg, sizeof msg, "%s is not defined for %s", ir_op_name(op), ir_type_name(t0));
      return instr_error(i, err, msg);
    }
    rt_val_store(r, k, res);
  }
  *out = r;
  return true;
}

/* Hands over n result arrays: as a tuple (releasing the arrays' own references) or, for one
 * array result, the array itself. */
static bool finish_results(RtTensor **res, int n, bool tuple, RtTensor **out, FxError *err) {
  if (!tuple) {
    *out = res[0];
    return true;
  }
  *out = rt_tensor_tuple(res, n, err);
  for (int k = 0; k < n; k++) rt_tensor_unref(res[k]);
  return *out != NULL;
}

/* ---------- reduce ---------- */

/* A reducer that is one binary op on its two parameters: the fast path. */
static bool simple_reducer(const IrComputation *c, IrOpcode *op) {
  if (!c || !c->root || c->nparams != 2 || c->root->noperands != 2) return false;
  const IrInstr *r = c->root;
  if (ir_op_info(r->op)->category != IR_CAT_BINARY || r->op == IR_OP_COMPARE) return false;
  if (r->operands[0]->op != IR_OP_PARAMETER || r->operands[1]->op != IR_OP_PARAMETER) return false;
  if (r->operands[0]->param_number != 0 || r->operands[1]->param_number != 1) return false;
  *op = r->op;
  return true;
}

bool rt_op_reduce(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  int n = i->noperands / 2;
  if (n < 1 || n > 16 || i->noperands != 2 * n) return instr_error(i, err, "reduce needs inputs and as many init values");
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (!f) return instr_error(i, err, "reduce needs to_apply=");
  int64_t rd[IR_MAX_RANK];
  int nr = ir_attr_dims(i, "dimensions", rd, IR_MAX_RANK);
  if (nr < 0) nr = 0;
  RtTensor *in0 = ops[0];
  bool red[IR_MAX_RANK] = {0};
  for (int k = 0; k < nr; k++) {
    if (rd[k] < 0 || rd[k] >= in0->rank) return instr_error(i, err, "reduce dimension is out of range");
    red[rd[k]] = true;
  }
  /* result tensors */
  RtTensor *res[16] = {0};
  const IrShape *rs = &i->shape;
  for (int k = 0; k < n; k++) {
    const IrShape *s = rs->type == IR_TUPLE ? &rs->tuple[k] : rs;
    if (rs->type == IR_TUPLE && k >= rs->ntuple) {
      for (int j = 0; j < k; j++) rt_tensor_unref(res[j]);
      return instr_error(i, err, "reduce result tuple is too short");
    }
    if (!(res[k] = rt_tensor_new(s->type, s->rank, s->dims, err))) {
      for (int j = 0; j < k; j++) rt_tensor_unref(res[j]);
      return false;
    }
  }
  /* kept dims (in order) and reduced dims */
  int64_t kept[IR_MAX_RANK], redd[IR_MAX_RANK], ist[IR_MAX_RANK];
  int nk = 0, nrd = 0;
  for (int d = 0; d < in0->rank; d++) {
    if (red[d]) redd[nrd++] = d;
    else kept[nk++] = d;
  }
  rt_strides(in0->rank, in0->dims, ist);
  int64_t rdims[IR_MAX_RANK];
  for (int k = 0; k < nrd; k++) rdims[k] = in0->dims[redd[k]];
  IrOpcode simple;
  bool fast = n == 1 && simple_reducer(f, &simple);
  IrType types[32];
  for (int k = 0; k < n; k++) {
    types[k] = ops[k]->type;
    types[n + k] = ops[k]->type;
  }
  bool ok = true;
  int64_t oidx[IR_MAX_RANK] = {0};
  int64_t rcount = 1;
  for (int k = 0; k < nrd; k++) rcount *= rdims[k];
  for (int64_t o = 0; o < res[0]->count && ok; o++) {
    int64_t base = 0;
    for (int k = 0; k < nk; k++) base += oidx[k] * ist[kept[k]];
    RtVal acc[16], args[32];
    for (int k = 0; k < n; k++) acc[k] = rt_val_load(ops[n + k], 0);
    int64_t ridx[IR_MAX_RANK] = {0};
    for (int64_t q = 0; q < rcount && ok; q++) {
      int64_t off = base;
      for (int k = 0; k < nrd; k++) off += ridx[k] * ist[redd[k]];
      if (fast) {
        ok = rt_ew_binary(simple, types[0], acc[0], rt_val_load(ops[0], off), &acc[0]);
      } else {
        for (int k = 0; k < n; k++) {
          args[k] = acc[k];
          args[n + k] = rt_val_load(ops[k], off);
        }
        ok = rt_eval_scalar(x, f, args, types, 2 * n, acc, n, err);
      }
      rt_next_index(nrd, rdims, ridx);
    }
    for (int k = 0; k < n; k++) rt_val_store(res[k], o, acc[k]);
    rt_next_index(nk, res[0]->dims, oidx);
    if ((o & 0xffff) == 0 && !rt_exec_poll(x, err)) ok = false;
  }
  if (ok && fast == false && err->set) ok = false;
  if (!ok) {
    if (!err->set) instr_error(i, err, "the reducer is not defined for this element type");
    for (int k = 0; k < n; k++) rt_tensor_unref(res[k]);
    return false;
  }
  return finish_results(res, n, rs->type == IR_TUPLE, out, err);
}

/* ---------- windows ---------- */

bool rt_parse_window(const IrInstr *i, int rank, IrWindow *w, FxError *err) {
  char why[400];
  return ir_attr_window(i, rank, w, why, sizeof why) || instr_error(i, err, why);
}

/* Visits the operand positions of the window placed at output (or source) index oidx, in row-major
 * window order, skipping padding and the holes of base dilation; calls f with the operand's flat
 * offset. Returns false when f does. */
typedef bool (*WindowVisit)(void *ctx, int64_t off);
static bool window_visit(const IrWindow *w, int rank, const int64_t *in_dims, const int64_t *ist, const int64_t *oidx,
                         WindowVisit f, void *ctx) {
  for (int d = 0; d < rank; d++)
    if (w->size[d] == 0) return true;
  int64_t widx[IR_MAX_RANK] = {0};
  for (;;) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < rank && inside; d++) {
      int64_t p;
      inside = rt_window_source(w, d, oidx[d], widx[d], in_dims[d], &p);
      if (inside) off += p * ist[d];
    }
    if (inside && !f(ctx, off)) return false;
    if (!rt_next_index(rank, w->size, widx)) return true;
  }
}

typedef struct {
  RtExec *x;
  const IrComputation *f;
  RtTensor **in;
  int n;
  bool fast;
  IrOpcode simple;
  IrType types[32];
  RtVal acc[16];
  FxError *err;
} RwCtx;

static bool rw_step(void *vc, int64_t off) {
  RwCtx *c = vc;
  if (c->fast) return rt_ew_binary(c->simple, c->types[0], c->acc[0], rt_val_load(c->in[0], off), &c->acc[0]);
  RtVal args[32];
  for (int k = 0; k < c->n; k++) {
    args[k] = c->acc[k];
    args[c->n + k] = rt_val_load(c->in[k], off);
  }
  return rt_eval_scalar(c->x, c->f, args, c->types, 2 * c->n, c->acc, c->n, c->err);
}

/* reduce-window(in_0..in_{n-1}, init_0..init_{n-1}): each output element folds its window with
 * to_apply(acc_0..acc_{n-1}, in_0..in_{n-1}), starting from the init values; n > 1 gives a tuple. */
bool rt_op_reduce_window(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  int n = i->noperands / 2;
  if (n < 1 || n > 16 || i->noperands != 2 * n) return instr_error(i, err, "reduce-window needs 1 to 16 inputs and as many init values");
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (!f) return instr_error(i, err, "reduce-window needs to_apply=");
  RtTensor *in = ops[0];
  for (int k = 1; k < n; k++)
    if (ops[k]->rank != in->rank || memcmp(ops[k]->dims, in->dims, sizeof(int64_t) * (size_t)in->rank))
      return instr_error(i, err, "reduce-window inputs differ in shape");
  const IrShape *rs = &i->shape;
  /* several inputs give a tuple; one gives an array, or a 1-tuple where its reducer returns one */
  bool tupled = rs->type == IR_TUPLE;
  if (tupled ? rs->ntuple != n : n > 1)
    return instr_error(i, err, "reduce-window with several inputs returns a tuple of as many arrays");
  IrWindow w;
  if (!rt_parse_window(i, in->rank, &w, err)) return false;
  RtTensor *res[16] = {0};
  for (int k = 0; k < n; k++) {
    const IrShape *s = tupled ? &rs->tuple[k] : rs;
    if (!(res[k] = rt_tensor_new(s->type, s->rank, s->dims, err)) || res[k]->rank != in->rank) {
      if (res[k]) instr_error(i, err, "reduce-window result rank differs from its input's");
      for (int j = 0; j <= k; j++) rt_tensor_unref(res[j]);
      return false;
    }
  }
  RwCtx c = {.x = x, .f = f, .in = ops, .n = n, .err = err};
  for (int k = 0; k < n; k++) c.types[k] = c.types[n + k] = ops[k]->type;
  c.fast = n == 1 && simple_reducer(f, &c.simple);
  int64_t ist[IR_MAX_RANK], oidx[IR_MAX_RANK] = {0};
  rt_strides(in->rank, in->dims, ist);
  bool ok = true;
  for (int64_t o = 0; o < res[0]->count && ok; o++) {
    for (int k = 0; k < n; k++) c.acc[k] = rt_val_load(ops[n + k], 0);
    ok = window_visit(&w, in->rank, in->dims, ist, oidx, rw_step, &c);
    for (int k = 0; ok && k < n; k++) rt_val_store(res[k], o, c.acc[k]);
    rt_next_index(res[0]->rank, res[0]->dims, oidx);
    if ((o & 0xfff) == 0 && ok && !rt_exec_poll(x, err)) ok = false;
  }
  if (!ok) {
    for (int k = 0; k < n; k++) rt_tensor_unref(res[k]);
    if (!err->set) instr_error(i, err, "the reducer is not defined for this element type");
    return false;
  }
  return finish_results(res, n, tupled, out, err);
}

/* ---------- select-and-scatter ---------- */

typedef struct {
  RtExec *x;
  const IrComputation *select;
  const RtTensor *operand;
  IrType types[2];
  int64_t sel;  /* offset of the selected element; -1 before the first */
  RtVal selv;
  FxError *err;
} SasCtx;

/* XLA: the first element in the window is selected; each later one replaces it when
 * select(selected, current) is false. */
static bool sas_step(void *vc, int64_t off) {
  SasCtx *c = vc;
  RtVal cur = rt_val_load(c->operand, off);
  if (c->sel < 0) {
    c->sel = off;
    c->selv = cur;
  }
  RtVal args[2] = {c->selv, cur}, keep;
  if (!rt_eval_scalar(c->x, c->select, args, c->types, 2, &keep, 1, c->err)) return false;
  if (!keep.i) {
    c->sel = off;
    c->selv = cur;
  }
  return true;
}

/* select-and-scatter(operand, source, init): the result starts as init everywhere; for each source
 * element (row-major) the window it stands for picks one operand element with `select`, and the
 * result there becomes scatter(source value, result value). */
bool rt_op_select_and_scatter(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  RtTensor *a = ops[0], *src = ops[1], *init = ops[2];
  IrComputation *sel = ir_attr_comp(i, "select"), *sc = ir_attr_comp(i, "scatter");
  if (!sel || !sc) return instr_error(i, err, "select-and-scatter needs select= and scatter=");
  if (src->rank != a->rank || src->type != a->type || init->count != 1)
    return instr_error(i, err, "select-and-scatter needs a source of the operand's rank and type and a scalar init value");
  IrWindow w;
  if (!rt_parse_window(i, a->rank, &w, err)) return false;
  RtTensor *r = out_tensor(i, err);
  if (!r) return false;
  if (r->count != a->count) {
    rt_tensor_unref(r);
    return instr_error(i, err, "select-and-scatter result differs from its operand's shape");
  }
  RtVal iv = rt_val_load(init, 0);
  for (int64_t k = 0; k < r->count; k++) rt_val_store(r, k, iv);
  SasCtx c = {.x = x, .select = sel, .operand = a, .types = {a->type, a->type}, .err = err};
  IrType stypes[2] = {a->type, r->type};
  int64_t ast[IR_MAX_RANK], sidx[IR_MAX_RANK] = {0};
  rt_strides(a->rank, a->dims, ast);
  bool ok = true;
  for (int64_t q = 0; q < src->count && ok; q++) {
    c.sel = -1;
    ok = window_visit(&w, a->rank, a->dims, ast, sidx, sas_step, &c);
    if (ok && c.sel >= 0) {
      RtVal args[2] = {rt_val_load(src, q), rt_val_load(r, c.sel)}, nv;
      ok = rt_eval_scalar(x, sc, args, stypes, 2, &nv, 1, err);
      if (ok) rt_val_store(r, c.sel, nv);
    }
    rt_next_index(src->rank, src->dims, sidx);
    if ((q & 0xfff) == 0 && ok && !rt_exec_poll(x, err)) ok = false;
  }
  if (!ok) {
    rt_tensor_unref(r);
    if (!err->set) instr_error(i, err, "select or scatter is not defined for this element type");
    return false;
  }
  *out = r;
  return true;
}

/* ---------- dot ---------- */

/* The multiply-accumulate of dot and convolution: complex and float products summed in double and
 * rounded once when stored, integers with wraparound. */
typedef struct {
  double re, im;
  int64_t i;
} Mac;

static void mac_add(Mac *m, const RtTensor *r, const RtTensor *a, int64_t ia, const RtTensor *b, int64_t ib) {
  if (is_c(r->type)) {
    double xr, xi, yr, yi;
    rt_get_c(a, ia, &xr, &xi);
    rt_get_c(b, ib, &yr, &yi);
    m->re += xr * yr - xi * yi;
    m->im += xr * yi + xi * yr;
  } else if (is_f(r->type)) {
    m->re += rt_get_f(a, ia) * rt_get_f(b, ib);
  } else {
    m->i += (int64_t)((uint64_t)rt_get_i(a, ia) * (uint64_t)rt_get_i(b, ib));
  }
}

static void mac_store(const Mac *m, RtTensor *r, int64_t o) {
  if (is_c(r->type)) rt_set_c(r, o, m->re, m->im);
  else if (is_f(r->type)) rt_set_f(r, o, m->re);
  else rt_set_i(r, o, m->i);
}

/* Stores output element o, steps oidx to the next one and, every 4096 elements, lets an interrupt
 * in: then r is dropped and the result is false. */
static bool mac_next(RtExec *x, const Mac *acc, RtTensor *r, int64_t o, int64_t *oidx, FxError *err) {
  mac_store(acc, r, o);
  rt_next_index(r->rank, r->dims, oidx);
  if ((o & 0xfff) == 0 && !rt_exec_poll(x, err)) {
    rt_tensor_unref(r);
    return false;
  }
  return true;
}

/* The real-valued dot through rt_dot_real: the offsets of each batch, free and contracting index. */
static bool dot_real(RtExec *x, const RtTensor *a, const RtTensor *b, RtTensor *r, const IrDotDims *dd, int naf,
                     const int64_t *afree, int nbf, const int64_t *bfree, const int64_t *ast, const int64_t *bst,
                     FxError *err) {
  RtDotMap d;
  int64_t *off[6];
  off[0] = rt_index_offsets(dd->nlhs_batch, dd->lhs_batch, a->dims, ast, &d.nb);
  off[1] = rt_index_offsets(naf, afree, a->dims, ast, &d.m);
  off[2] = rt_index_offsets(dd->nlhs_contract, dd->lhs_contract, a->dims, ast, &d.k);
  off[3] = rt_index_offsets(dd->nrhs_batch, dd->rhs_batch, b->dims, bst, &d.nb);
  off[4] = rt_index_offsets(nbf, bfree, b->dims, bst, &d.n);
  off[5] = rt_index_offsets(dd->nrhs_contract, dd->rhs_contract, b->dims, bst, &d.k);
  bool ok = true;
  for (int k = 0; k < 6; k++) ok = ok && off[k];
  if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory for the interpreter's dot offsets");
  else {
    d.a_b = off[0], d.a_m = off[1], d.a_c = off[2], d.b_b = off[3], d.b_n = off[4], d.b_c = off[5];
    ok = rt_dot_real(x, a, b, r, &d, err);
  }
  for (int k = 0; k < 6; k++) fx_free(off[k]);
  return ok;
}

bool rt_op_dot(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  RtTensor *a = ops[0], *b = ops[1];
  IrDotDims dd;
  if (!ir_dot_dims(i, &dd)) memset(&dd, 0, sizeof dd);
  if (dd.nlhs_batch != dd.nrhs_batch || dd.nlhs_contract != dd.nrhs_contract)
    return instr_error(i, err, "dot dimension numbers do not pair up");
  bool used_a[IR_MAX_RANK] = {0}, used_b[IR_MAX_RANK] = {0};
  for (int k = 0; k < dd.nlhs_batch; k++) {
    if (dd.lhs_batch[k] >= a->rank || dd.rhs_batch[k] >= b->rank) return instr_error(i, err, "dot batch dimension out of range");
    used_a[dd.lhs_batch[k]] = used_b[dd.rhs_batch[k]] = true;
  }
  int64_t cdims[IR_MAX_RANK];
  for (int k = 0; k < dd.nlhs_contract; k++) {
    if (dd.lhs_contract[k] >= a->rank || dd.rhs_contract[k] >= b->rank) return instr_error(i, err, "dot contracting dimension out of range");
    if (a->dims[dd.lhs_contract[k]] != b->dims[dd.rhs_contract[k]]) return instr_error(i, err, "dot contracting dimensions differ in size");
    used_a[dd.lhs_contract[k]] = used_b[dd.rhs_contract[k]] = true;
    cdims[k] = a->dims[dd.lhs_contract[k]];
  }
  int64_t afree[IR_MAX_RANK], bfree[IR_MAX_RANK];
  int naf = 0, nbf = 0;
  for (int d = 0; d < a->rank; d++)
    if (!used_a[d]) afree[naf++] = d;
  for (int d = 0; d < b->rank; d++)
    if (!used_b[d]) bfree[nbf++] = d;
  RtTensor *r = out_tensor(i, err);
  if (!r) return false;
  if (r->rank != dd.nlhs_batch + naf + nbf) {
    rt_tensor_unref(r);
    return instr_error(i, err, "dot result rank does not match its dimension numbers");
  }
  int64_t ast[IR_MAX_RANK], bst[IR_MAX_RANK], oidx[IR_MAX_RANK] = {0};
  rt_strides(a->rank, a->dims, ast);
  rt_strides(b->rank, b->dims, bst);
  if (rt_contract_is_real(a, b, r)) {
    bool ok = dot_real(x, a, b, r, &dd, naf, afree, nbf, bfree, ast, bst, err);
    if (!ok) rt_tensor_unref(r);
    else *out = r;
    return ok;
  }
  int64_t ccount = 1;
  for (int k = 0; k < dd.nlhs_contract; k++) ccount *= cdims[k];
  for (int64_t o = 0; o < r->count; o++) {
    int64_t ao = 0, bo = 0, q = 0;
    for (int k = 0; k < dd.nlhs_batch; k++, q++) {
      ao += oidx[q] * ast[dd.lhs_batch[k]];
      bo += oidx[q] * bst[dd.rhs_batch[k]];
    }
    for (int k = 0; k < naf; k++, q++) ao += oidx[q] * ast[afree[k]];
    for (int k = 0; k < nbf; k++, q++) bo += oidx[q] * bst[bfree[k]];
    int64_t cidx[IR_MAX_RANK] = {0};
    Mac acc = {0, 0, 0};
    for (int64_t c = 0; c < ccount; c++) {
      int64_t aoff = ao, boff = bo;
      for (int k = 0; k < dd.nlhs_contract; k++) {
        aoff += cidx[k] * ast[dd.lhs_contract[k]];
        boff += cidx[k] * bst[dd.rhs_contract[k]];
      }
      mac_add(&acc, r, a, aoff, b, boff);
      rt_next_index(dd.nlhs_contract, cdims, cidx);
    }
    if (!mac_next(x, &acc, r, o, oidx, err)) return false;
  }
  *out = r;
  return true;
}

/* ---------- convolution ---------- */

bool rt_op_convolution(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  RtTensor *in = ops[0], *k = ops[1];
  IrConvDims L;
  char why[600];
  if (!ir_conv_dims(i, &L, why, sizeof why)) return instr_error(i, err, why);
  if (k->rank != in->rank || in->rank != L.rank) return instr_error(i, err, "convolution operands do not match their dim_labels");
  IrWindow w;
  if (!rt_parse_window(i, L.nspatial, &w, err)) return false;
  int64_t fgc = 1, bgc = 1;
  ir_attr_int(i, "feature_group_count", &fgc);
  ir_attr_int(i, "batch_group_count", &bgc);
  if (fgc < 1 || bgc < 1) return instr_error(i, err, "convolution group counts must be positive");
  /* a cuDNN call (conv-rewriter's custom call) returns (result, scratch): the result is the first */
  const IrShape *rs = i->shape.type == IR_TUPLE && i->shape.ntuple > 0 ? &i->shape.tuple[0] : &i->shape;
  if (!ir_shape_is_array(rs)) return instr_error(i, err, "expected an array shape");
  RtTensor *r = rt_tensor_new(rs->type, rs->rank, rs->dims, err);
  if (!r) return false;
  int64_t ist[IR_MAX_RANK], kst[IR_MAX_RANK], oidx[IR_MAX_RANK] = {0};
  rt_strides(in->rank, in->dims, ist);
  rt_strides(k->rank, k->dims, kst);
  int64_t cin = in->dims[L.in_feature], kin = k->dims[L.k_in], kout = k->dims[L.k_out];
  if (cin != kin * fgc || kout % fgc) {
    rt_tensor_unref(r);
    return instr_error(i, err, "convolution feature counts do not match feature_group_count");
  }
  if (in->dims[L.in_batch] % bgc || kout % bgc || r->dims[L.out_batch] * bgc != in->dims[L.in_batch]) {
    rt_tensor_unref(r);
    return instr_error(i, err, "convolution batch and output features do not match batch_group_count");
  }
  /* XLA: feature groups split the input features and the output features alike; batch groups
     split the input batch into bgc slices, output feature f reading slice f / (kout / bgc) */
  if (rt_contract_is_real(in, k, r)) {
    RtConvMap cm = {.dims = &L, .window = &w, .feature_groups = fgc, .batch_groups = bgc};
    bool ok = rt_conv_real(x, in, k, r, &cm, err);
    if (!ok) rt_tensor_unref(r);
    else *out = r;
    return ok;
  }
  int64_t per_group_out = kout / fgc, batch_group_size = in->dims[L.in_batch] / bgc, per_batch_group_out = kout / bgc;
  int64_t ksz[IR_MAX_RANK];
  int64_t kvol = 1; /* kernel window elements (0: every output is 0) */
  for (int s = 0; s < L.nspatial; s++) kvol *= (ksz[s] = k->dims[L.k_spatial[s]]);
  for (int64_t o = 0; o < r->count; o++) {
    int64_t of = oidx[L.out_feature], g = of / per_group_out;
    int64_t bb = oidx[L.out_batch] + (of / per_batch_group_out) * batch_group_size;
    Mac acc = {0, 0, 0};
    for (int64_t ci = 0; ci < (kvol ? kin : 0); ci++) {
      int64_t kidx[IR_MAX_RANK] = {0};
      for (;;) {
        int64_t ioff = bb * ist[L.in_batch] + (g * kin + ci) * ist[L.in_feature];
        int64_t koff = ci * kst[L.k_in] + of * kst[L.k_out];
        bool inside = true;
        for (int s = 0; s < L.nspatial && inside; s++) {
          int64_t kk = w.reversal[s] ? ksz[s] - 1 - kidx[s] : kidx[s], p;
          inside = rt_window_source(&w, s, oidx[L.out_spatial[s]], kidx[s], in->dims[L.in_spatial[s]], &p);
          if (inside) {
            ioff += p * ist[L.in_spatial[s]];
            koff += kk * kst[L.k_spatial[s]];
          }
        }
        if (inside) mac_add(&acc, r, in, ioff, k, koff);
        if (!rt_next_index(L.nspatial, ksz, kidx)) break;
      }
    }
    if (!mac_next(x, &acc, r, o, oidx, err)) return false;
  }
  *out = r;
  return true;
}

/* cuDNN's forward convolution as XLA calls it (__cudnn$convForward and
 * __cudnn$convBiasActivationForward, made by conv-rewriter and cudnn-fused-convolution-rewriter):
 * activation(conv_result_scale * conv(input, filter) + side_input_scale * side_input + bias), each
 * step rounded to the result's type as the instructions it replaced rounded it, and a tuple of
 * the result and the (empty) scratch buffer. */
bool rt_op_cudnn_conv(RtExec *x, const IrInstr *i, RtTensor **ops, int n, RtTensor **out, FxError *err) {
  PlanConvConfig c;
  if (!plan_conv_config(i, &c)) return instr_error(i, err, "the cuDNN convolution's activation is not one fxplain runs");
  if (n < 2 || n > 4 || i->shape.type != IR_TUPLE || i->shape.ntuple != 2)
    return instr_error(i, err, "a cuDNN convolution takes input, filter, bias and side input and returns (result, scratch)");
  IrConvDims L;
  char why[600];
  if (!ir_conv_dims(i, &L, why, sizeof why)) return instr_error(i, err, why);
  RtTensor *r = NULL;
  if (!rt_op_convolution(x, i, ops, &r, err)) return false;
  IrType t = r->type;
  int64_t st[IR_MAX_RANK], features = r->dims[L.out_feature];
  rt_strides(r->rank, r->dims, st);
  if (n >= 3 && ops[2]->count != features) {
    rt_tensor_unref(r);
    return instr_error(i, err, "the bias of a cuDNN convolution has one value per output feature");
  }
  if (n == 4 && ops[3]->count != r->count) {
    rt_tensor_unref(r);
    return instr_error(i, err, "the side input of a cuDNN convolution has the result's shape");
  }
  bool relu = strcmp(c.activation, "kRelu") == 0, none = strcmp(c.activation, "kNone") == 0;
  if (!relu && !none) {
    rt_tensor_unref(r);
    return instr_error(i, err, "the cuDNN convolution's activation needs cuDNN's runtime fusion, which fxplain does not run");
  }
  for (int64_t e = 0; n > 2 && e < r->count; e++) {
    RtVal v = rt_val_load(r, e);
    if (c.conv_result_scale != 1) v.f = rt_val_norm(t, (RtVal){.f = v.f * c.conv_result_scale}).f;
    if (n == 4 && c.side_input_scale != 0) {
      RtVal s = rt_val_load(ops[3], e);
      v.f = rt_val_norm(t, (RtVal){.f = v.f + rt_val_norm(t, (RtVal){.f = s.f * c.side_input_scale}).f}).f;
    }
    RtVal b = rt_val_load(ops[2], (e / st[L.out_feature]) % features);
    v.f = rt_val_norm(t, (RtVal){.f = v.f + b.f}).f;
    if (relu && v.f < 0) v.f = 0;
    rt_val_store(r, e, v);
  }
  if (n == 2 && relu)
    for (int64_t e = 0; e < r->count; e++) {
      RtVal v = rt_val_load(r, e);
      if (v.f < 0) rt_val_store(r, e, (RtVal){.f = 0});
    }
  RtTensor *scratch = rt_tensor_for_shape(&i->shape.tuple[1], err);
  if (!scratch) {
    rt_tensor_unref(r);
    return false;
  }
  RtTensor *parts[2] = {r, scratch};
  *out = rt_tensor_tuple(parts, 2, err);
  rt_tensor_unref(r);
  rt_tensor_unref(scratch);
  return *out != NULL;
}

/* ---------- gather and scatter ---------- */

static int64_t clamp64_(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

bool rt_op_gather(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *a = ops[0], *ind = ops[1];
  /* batch: the output dims not in offset_dims, in order; they index start_indices with the index
     vector dim removed. window: the operand dims the offset dims walk (not collapsed, not batching) */
  IrGatherDims gd;
  ir_gather_dims(i, &gd);
  const int64_t *offd = gd.offset, *smap = gd.start_map, *ssz = gd.slice_sizes, *obd = gd.operand_batching;
  const int64_t *ibd = gd.indices_batching, *bdims = gd.batch, *wdims = gd.window, ivd = gd.index_vector_dim;
  int noff = gd.noffset, nsm = gd.nstart_map, nob = gd.noperand_batching, nib = gd.nindices_batching;
  if (gd.nslice_sizes != a->rank) return instr_error(i, err, "gather slice_sizes must have one entry per operand dimension");
  char why[200];
  if (ir_gather_uncomputed(i, why, sizeof why)) return instr_error(i, err, why); /* it would read past the operand */
  RtTensor *r = out_tensor(i, err);
  if (!r) return false;
  if (gd.nwindow != noff) {
    rt_tensor_unref(r);
    return instr_error(i, err, "gather offset_dims do not match the slice's kept dimensions");
  }
  int64_t ast[IR_MAX_RANK], ist[IR_MAX_RANK], oidx[IR_MAX_RANK] = {0};
  rt_strides(a->rank, a->dims, ast);
  rt_strides(ind->rank, ind->dims, ist);
  for (int64_t o = 0; o < r->count; o++) {
    /* the start_indices position: batch indices, with the index vector dim inserted */
    int64_t sidx[IR_MAX_RANK] = {0};
    for (int d = 0, b = 0; d < ind->rank; d++) {
      if (d == ivd) continue;
      sidx[d] = oidx[bdims[b++]];
    }
    int64_t start[IR_MAX_RANK] = {0};
    for (int k = 0; k < nsm; k++) {
      int64_t off = 0;
      for (int d = 0; d < ind->rank; d++) off += (d == ivd ? k : sidx[d]) * ist[d];
      int64_t od = smap[k];
      start[od] = clamp64_(rt_get_i(ind, off), 0, a->dims[od] - ssz[od]);
    }
    /* batching dims: operand_batching_dims[k] takes the index of start_indices_batching_dims[k] */
    for (int k = 0; k < nob && k < nib; k++) start[obd[k]] = sidx[ibd[k]];
    int64_t aoff = 0;
    for (int d = 0; d < a->rank; d++) aoff += start[d] * ast[d];
    for (int k = 0; k < noff; k++) aoff += oidx[offd[k]] * ast[wdims[k]];
    size_t eb = (size_t)ir_type_bytes(r->type);
    memcpy((char *)r->data + (size_t)o * eb, (char *)a->data + (size_t)aoff * eb, eb);
    rt_next_index(r->rank, r->dims, oidx);
  }
  *out = r;
  return true;
}

bool rt_op_scatter(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  int n = (i->noperands - 1) / 2;
  if (n < 1 || n > 16 || i->noperands != 2 * n + 1) return instr_error(i, err, "scatter needs N operands, indices and N updates");
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (!f) return instr_error(i, err, "scatter needs to_apply=");
  RtTensor *ind = ops[n];
  int64_t uwd[IR_MAX_RANK], iwd[IR_MAX_RANK], sdod[IR_MAX_RANK], ibd[IR_MAX_RANK], sibd[IR_MAX_RANK];
  int nuw = ir_attr_dims_or_empty(i, "update_window_dims", uwd), niw = ir_attr_dims_or_empty(i, "inserted_window_dims", iwd);
  int nsd = ir_attr_dims_or_empty(i, "scatter_dims_to_operand_dims", sdod);
  int nib = ir_attr_dims_or_empty(i, "input_batching_dims", ibd), nsib = ir_attr_dims_or_empty(i, "scatter_indices_batching_dims", sibd);
  int64_t ivd = ind->rank;
  ir_attr_int(i, "index_vector_dim", &ivd);
  RtTensor *res[16] = {0};
  for (int k = 0; k < n; k++)
    if (!(res[k] = rt_tensor_clone(ops[k], err))) {
      for (int j = 0; j < k; j++) rt_tensor_unref(res[j]);
      return false;
    }
  RtTensor *a = ops[0], *u0 = ops[n + 1];
  int64_t wdims[IR_MAX_RANK]; /* operand dims the update window covers, in order */
  int nwd = 0;
  for (int d = 0; d < a->rank; d++)
    if (!ir_dims_contain(iwd, niw, d) && !ir_dims_contain(ibd, nib, d)) wdims[nwd++] = d;
  int64_t sdims[IR_MAX_RANK]; /* update dims that are scatter (not window) dims */
  int nsc = 0;
  for (int d = 0; d < u0->rank; d++)
    if (!ir_dims_contain(uwd, nuw, d)) sdims[nsc++] = d;
  bool ok = nwd == nuw;
  if (!ok) instr_error(i, err, "scatter update_window_dims do not match the operand's window dimensions");
  int64_t ast[IR_MAX_RANK], ist[IR_MAX_RANK], uidx[IR_MAX_RANK] = {0};
  rt_strides(a->rank, a->dims, ast);
  rt_strides(ind->rank, ind->dims, ist);
  IrType types[32];
  for (int k = 0; k < n; k++) types[k] = types[n + k] = ops[k]->type;
  for (int64_t o = 0; ok && o < u0->count; o++) {
    int64_t sidx[IR_MAX_RANK] = {0};
    for (int d = 0, b = 0; d < ind->rank; d++) {
      if (d == ivd) continue;
      sidx[d] = uidx[sdims[b++]];
    }
    int64_t pos[IR_MAX_RANK] = {0};
    for (int k = 0; k < nsd; k++) {
      int64_t off = 0;
      for (int d = 0; d < ind->rank; d++) off += (d == ivd ? k : sidx[d]) * ist[d];
      pos[sdod[k]] = rt_get_i(ind, off);
    }
    for (int k = 0; k < nib && k < nsib; k++) pos[ibd[k]] = sidx[sibd[k]];
    /* window: the whole window must be in bounds, else the update is skipped (XLA) */
    bool inb = true;
    for (int k = 0; k < nwd; k++) {
      int64_t d = wdims[k];
      int64_t wsz = u0->dims[uwd[k]];
      if (pos[d] < 0 || pos[d] + wsz > a->dims[d]) inb = false;
      pos[d] += uidx[uwd[k]];
    }
    for (int k = 0; k < niw; k++)
      if (pos[iwd[k]] < 0 || pos[iwd[k]] >= a->dims[iwd[k]]) inb = false;
    if (inb) {
      int64_t aoff = 0;
      for (int d = 0; d < a->rank; d++) aoff += pos[d] * ast[d];
      RtVal args[32], outs[16];
      for (int k = 0; k < n; k++) {
        args[k] = rt_val_load(res[k], aoff);
        args[n + k] = rt_val_load(ops[n + 1 + k], o);
      }
      ok = rt_eval_scalar(x, f, args, types, 2 * n, outs, n, err);
      for (int k = 0; ok && k < n; k++) rt_val_store(res[k], aoff, outs[k]);
    }
    rt_next_index(u0->rank, u0->dims, uidx);
  }
  if (!ok) {
    for (int k = 0; k < n; k++) rt_tensor_unref(res[k]);
    return false;
  }
  return finish_results(res, n, i->shape.type == IR_TUPLE, out, err);
}

/* ---------- sort and top-k ---------- */

typedef struct {
  RtExec *x;
  const IrComputation *cmp;
  RtTensor **ops;
  int n;
  IrType types[32];
  FxError *err;
  bool failed;
} SortCtx;

/* comparator(a, b): true when a goes before b */
static bool sort_less(SortCtx *s, int64_t ia, int64_t ib) {
  if (s->failed) return false;
  RtVal args[32], r;
  for (int k = 0; k < s->n; k++) {
    args[2 * k] = rt_val_load(s->ops[k], ia);
    args[2 * k + 1] = rt_val_load(s->ops[k], ib);
  }
  if (!rt_eval_scalar(s->x, s->cmp, args, s->types, 2 * s->n, &r, 1, s->err)) {
    s->failed = true;
    return false;
  }
  return r.i != 0;
}

/* stable merge sort of positions by the comparator */
static void merge_sort(SortCtx *s, int64_t *v, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(s, v, tmp, h);
  merge_sort(s, v + h, tmp, n - h);
  int64_t a = 0, b = h, k = 0;
  while (a < h && b < n) tmp[k++] = sort_less(s, v[b], v[a]) ? v[b++] : v[a++];
  while (a < h) tmp[k++] = v[a++];
  while (b < n) tmp[k++] = v[b++];
  memcpy(v, tmp, sizeof *v * (size_t)n);
}

bool rt_op_sort(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  int n = i->noperands;
  if (n < 1 || n > 16) return instr_error(i, err, "sort takes 1 to 16 operands");
  IrComputation *cmp = ir_attr_comp(i, "to_apply");
  if (!cmp) return instr_error(i, err, "sort needs a comparator to_apply=");
  int64_t dim = 0;
  if (ir_attr_dims(i, "dimensions", &dim, 1) != 1 || dim < 0 || dim >= (ops[0]->rank ? ops[0]->rank : 1))
    return instr_error(i, err, "sort needs dimensions={d} within the operand's rank");
  RtTensor *a = ops[0];
  SortCtx s = {.x = x, .cmp = cmp, .ops = ops, .n = n, .err = err};
  for (int k = 0; k < n; k++) s.types[2 * k] = s.types[2 * k + 1] = ops[k]->type;
  int64_t len = a->rank ? a->dims[dim] : 1, st[IR_MAX_RANK];
  rt_strides(a->rank, a->dims, st);
  int64_t stride = a->rank ? st[dim] : 1;
  RtTensor *res[16] = {0};
  for (int k = 0; k < n; k++)
    if (!(res[k] = rt_tensor_clone(ops[k], err))) {
      for (int j = 0; j < k; j++) rt_tensor_unref(res[j]);
      return false;
    }
  int64_t *v = fx_malloc(sizeof *v * (size_t)(len ? len : 1)), *tmp = fx_malloc(sizeof *v * (size_t)(len ? len : 1));
  bool ok = v && tmp;
  if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  int64_t lines = len ? a->count / len : 0;
  for (int64_t l = 0; ok && l < lines; l++) {
    int64_t base = (l / stride) * stride * len + l % stride;
    for (int64_t k = 0; k < len; k++) v[k] = base + k * stride;
    merge_sort(&s, v, tmp, len);
    if (s.failed) ok = false;
    for (int q = 0; ok && q < n; q++)
      for (int64_t k = 0; k < len; k++) {
        size_t eb = (size_t)ir_type_bytes(res[q]->type);
        memcpy((char *)res[q]->data + (size_t)(base + k * stride) * eb, (char *)ops[q]->data + (size_t)v[k] * eb, eb);
      }
    if ((l & 0xff) == 0 && ok && !rt_exec_poll(x, err)) ok = false;
  }
  fx_free(v);
  fx_free(tmp);
  if (!ok) {
    for (int k = 0; k < n; k++) rt_tensor_unref(res[k]);
    return false;
  }
  return finish_results(res, n, i->shape.type == IR_TUPLE, out, err);
}

/* CUB's radix sort (sort-rewriter's custom calls xla.gpu.ext.cub_sort_keys and _pairs): each row of
 * the keys' last dimension sorted by the keys' bits as CUB orders them (unsigned as they are, signed
 * with the sign bit flipped, floats with the sign bit flipped when positive and every bit when
 * negative: -NaN first, +NaN last, -0 before +0), stable, ascending or (backend_config descending =
 * true) descending; the values move with their keys. The last output is CUB's scratch buffer. */
typedef struct {
  uint64_t key;
  int64_t at;
} RadixItem;

static int radix_item_cmp(const void *pa, const void *pb) {
  const RadixItem *a = pa, *b = pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->at < b->at ? -1 : a->at > b->at;
}

static uint64_t radix_key(const RtTensor *t, int64_t k) {
  int bytes = ir_type_bytes(t->type);
  uint64_t v = 0;
  memcpy(&v, (const char *)t->data + (size_t)k * (size_t)bytes, (size_t)bytes); /* little-endian */
  uint64_t sign = (uint64_t)1 << (bytes * 8 - 1), mask = bytes == 8 ? ~(uint64_t)0 : (sign << 1) - 1;
  if (ir_type_is_float(t->type)) return (v & sign) ? ~v & mask : v | sign;
  if (ir_type_is_signed(t->type)) return v ^ sign;
  return v;
}

bool rt_op_cub_sort(RtExec *x, const IrInstr *i, RtTensor **ops, int n, RtTensor **out, FxError *err) {
  const IrShape *s = &i->shape;
  if (n < 1 || n > 2 || s->type != IR_TUPLE || s->ntuple != n + 1 || ops[0]->rank < 1 ||
      (n == 2 && ops[1]->count != ops[0]->count) || ir_type_bytes(ops[0]->type) < 1 || ir_type_bytes(ops[0]->type) > 8)
    return instr_error(i, err, "a CUB sort takes keys (and values of the same shape) and returns them with a scratch buffer");
  const char *cfg = ir_attr_text(i, "backend_config");
  bool desc = cfg && strstr(cfg, "descending = true") != NULL;
  RtTensor *keys = ops[0];
  int64_t len = keys->dims[keys->rank - 1], rows = len ? keys->count / len : 0;
  RtTensor *res[3] = {0};
  bool ok = true;
  for (int k = 0; k <= n && ok; k++) ok = (res[k] = rt_tensor_for_shape(&s->tuple[k], err)) != NULL;
  RadixItem *items = ok ? fx_malloc(sizeof *items * (size_t)(len ? len : 1)) : NULL;
  if (ok && !items) ok = fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int64_t r = 0; ok && r < rows; r++) {
    for (int64_t k = 0; k < len; k++) {
      uint64_t key = radix_key(keys, r * len + k);
      items[k].key = desc ? ~key : key;
      items[k].at = r * len + k;
    }
    qsort(items, (size_t)len, sizeof *items, radix_item_cmp);
    for (int q = 0; q < n; q++) {
      size_t eb = (size_t)ir_type_bytes(ops[q]->type);
      for (int64_t k = 0; k < len; k++)
        memcpy((char *)res[q]->data + (size_t)(r * len + k) * eb, (const char *)ops[q]->data + (size_t)items[k].at * eb, eb);
    }
    if ((r & 0xff) == 0 && !rt_exec_poll(x, err)) ok = false;
  }
  fx_free(items);
  if (!ok) {
    for (int k = 0; k <= n; k++)
      if (res[k]) rt_tensor_unref(res[k]);
    return false;
  }
  return finish_results(res, n + 1, true, out, err);
}

/* Stable, largest first (NaN counts as largest, as XLA's): c goes before an earlier q only when
 * strictly better. */
static bool topk_before(bool largest, double c, double q) { return largest ? c > q || (c != c && q == q) : c < q; }

bool rt_op_topk(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  (void)x;
  RtTensor *a = ops[0];
  int64_t kk = 0;
  /* XLA's __gpu$TopK call (topk-specializer) has no k=: its values' last dimension is k */
  bool call = i->op == IR_OP_CUSTOM_CALL && i->shape.type == IR_TUPLE && i->shape.ntuple == 2 &&
              i->shape.tuple[0].rank == a->rank && a->rank >= 1;
  if (call) kk = i->shape.tuple[0].dims[a->rank - 1];
  if ((!call && !ir_attr_int(i, "k", &kk)) || a->rank < 1 || kk < 0 || kk > a->dims[a->rank - 1] || i->shape.type != IR_TUPLE ||
      i->shape.ntuple != 2)
    return instr_error(i, err, "topk needs k= no larger than the last dimension and a (values, indices) result");
  const char *lg = ir_attr_text(i, "largest");
  bool largest = !lg || strcmp(lg, "false") != 0;
  RtTensor *vals = rt_tensor_new(i->shape.tuple[0].type, i->shape.tuple[0].rank, i->shape.tuple[0].dims, err);
  RtTensor *idxs = vals ? rt_tensor_new(i->shape.tuple[1].type, i->shape.tuple[1].rank, i->shape.tuple[1].dims, err) : NULL;
  int64_t len = a->dims[a->rank - 1], lines = len ? a->count / len : 0;
  /* a partial selection: the best kk so far, in order, each element compared with the worst of
     them and inserted only when it goes before it: O(len) on most data, O(len * kk) at worst,
     where a sort of the whole line was O(len^2) by insertion */
  int64_t *v = fx_malloc(sizeof *v * (size_t)(kk ? kk : 1));
  double *vv = fx_malloc(sizeof *vv * (size_t)(kk ? kk : 1));
  bool ok = vals && idxs && v && vv;
  if (vals && idxs && !ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int64_t l = 0; ok && l < lines; l++) {
    int64_t have = 0;
    for (int64_t p = 0; p < len && kk > 0; p++) {
      double cv = rt_get_f(a, l * len + p);
      if (have == kk && !topk_before(largest, cv, vv[kk - 1])) continue;
      int64_t q = have < kk ? have++ : kk - 1;
      while (q > 0 && topk_before(largest, cv, vv[q - 1])) {
        v[q] = v[q - 1];
        vv[q] = vv[q - 1];
        q--;
      }
      v[q] = p;
      vv[q] = cv;
    }
    for (int64_t k = 0; k < kk; k++) {
      size_t eb = (size_t)ir_type_bytes(a->type);
      memcpy((char *)vals->data + (size_t)(l * kk + k) * eb, (char *)a->data + (size_t)(l * len + v[k]) * eb, eb);
      rt_set_i(idxs, l * kk + k, v[k]);
    }
  }
  fx_free(vv);
  fx_free(v);
  RtTensor *pair[2] = {vals, idxs};
  if (ok) *out = rt_tensor_tuple(pair, 2, err);
  rt_tensor_unref(vals);
  rt_tensor_unref(idxs);
  return ok && *out;
}

/* ---------- map ---------- */

bool rt_op_map(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  IrComputation *f = ir_attr_comp(i, "to_apply");
  int n = i->noperands;
  if (!f || n > 32) return instr_error(i, err, "map needs to_apply= and at most 32 operands");
  RtTensor *r = out_tensor(i, err);
  if (!r) return false;
  IrType types[32];
  for (int k = 0; k < n; k++) types[k] = ops[k]->type;
  for (int64_t o = 0; o < r->count; o++) {
    RtVal args[32], res;
    for (int k = 0; k < n; k++) args[k] = rt_val_load(ops[k], o);
    if (!rt_eval_scalar(x, f, args, types, n, &res, 1, err)) {
      rt_tensor_unref(r);
      return false;
    }
    rt_val_store(r, o, res);
  }
  *out = r;
  return true;
}

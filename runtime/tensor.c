/* tensor.c — runtime tensors: overflow-safe sizes, the memory budget, element access with XLA's
 * conversion semantics (f16/bf16/f8 round-to-nearest-even, integer wraparound, complex pairs), seeded random fill,
 * the threefry generator every backend shares, result comparison for `run --check`, and the
 * summary `run` prints of a result. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "runtime.h"

static uint64_t max_memory;  /* 0 = unlimited */
static bool max_memory_set;  /* else the default below */
static uint64_t live_bytes;

void rt_set_max_memory(uint64_t bytes) {
  max_memory = bytes;
  max_memory_set = true;
}

void rt_default_max_memory(void) { max_memory_set = false; }

/* The default budget: three quarters of the machine's memory, so that an input that claims
   terabytes (a .npy header, a shape) is refused with an error instead of exhausting the machine. */
uint64_t rt_max_memory(void) {
  if (!max_memory_set) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    max_memory = pages > 0 && size > 0 ? (uint64_t)pages / 4 * 3 * (uint64_t)size : 0;
    max_memory_set = true;
  }
  return max_memory;
}
uint64_t rt_live_bytes(void) { return live_bytes; }

/* ---------- f16 / bf16 ---------- */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t rt_f32_to_f16(float f) {
  uint32_t x = f2u(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (ax < 0x38800000u) {
    /* subnormal or zero in f16: value = ax_float / 2^-24 rounded to nearest even */
    if (ax < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to 0 */
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)e; /* so that result = m >> (shift - 0) ... */
    /* f16 subnormal unit is 2^-24; value = m * 2^(e-150); units = m * 2^(e-126) */
    int s = 126 - (int)e;      /* right shift amount, 14..24 */
    (void)shift;
    uint32_t q = m >> s;
    uint32_t rem = m & ((1u << s) - 1);
    uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = ax + 0xc8000fffu + ((ax >> 13) & 1); /* rebias exponent (-112<<23) and round */
  return (uint16_t)(sign | (r >> 13));
}

float rt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu;
  if (e == 0) {
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
  return u2f(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t rt_f32_to_bf16(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  uint32_t r = x + 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(r >> 16);
}


/* ---------- f8 (the 8-bit floats, as ml_dtypes and XLA define them) ---------- */

/* How a format spends its top exponent and its zeros:
 *   IEEE  all-ones exponent is inf (mantissa 0) or NaN, as in f16 (f8e5m2, f8e4m3, f8e3m4)
 *   FN    no infinity; only the all-ones pattern is NaN (f8e4m3fn)
 *   FNUZ  no infinity, no -0; 0x80 is the one NaN (f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz)
 * A value beyond the largest finite one after rounding becomes inf (IEEE) or NaN. */
typedef enum { F8_IEEE, F8_FN, F8_FNUZ } F8Kind;
typedef struct {
  int ebits, mbits, bias;
  F8Kind kind;
} F8Format;

static F8Format f8_format(IrType t) {
  switch (t) {
  case IR_F8E4M3FN: return (F8Format){4, 3, 7, F8_FN};
  case IR_F8E4M3FNUZ: return (F8Format){4, 3, 8, F8_FNUZ};
  case IR_F8E5M2FNUZ: return (F8Format){5, 2, 16, F8_FNUZ};
  case IR_F8E4M3B11FNUZ: return (F8Format){4, 3, 11, F8_FNUZ};
  case IR_F8E4M3: return (F8Format){4, 3, 7, F8_IEEE};
  case IR_F8E3M4: return (F8Format){3, 4, 3, F8_IEEE};
  default: return (F8Format){5, 2, 15, F8_IEEE}; /* f8e5m2 */
  }
}

static uint8_t f8_nan(F8Format f, uint8_t sign) {
  if (f.kind == F8_FNUZ) return 0x80;
  if (f.kind == F8_FN) return (uint8_t)(sign | 0x7f);
  return (uint8_t)(sign | (((1 << f.ebits) - 1) << f.mbits) | (1 << (f.mbits - 1)));
}

/* f8e8m0fnu (the MX formats' scale): exponent bits only, bias 127, no sign, no zero, 0xff is NaN.
 * Values round to the nearest power of two (in log2); what it cannot hold (<= 0, NaN, inf, beyond
 * 2^127) is NaN, as ml_dtypes converts. */
static uint8_t to_e8m0(double v) {
  if (!(v > 0) || v == INFINITY) return 0xff;
  int e = (int)nearbyint(log2(v));
  if (e < -127) e = -127;
  if (e > 127) return 0xff;
  return (uint8_t)(e + 127);
}

uint8_t rt_to_f8(IrType t, double v) {
  if (t == IR_F8E8M0FNU) return to_e8m0(v);
  F8Format f = f8_format(t);
  uint8_t sign = signbit(v) ? 0x80 : 0;
  if (v != v) return f8_nan(f, sign);
  int emax = (1 << f.ebits) - 1 - f.bias - (f.kind == F8_IEEE); /* exponent of the top finite binade */
  double top = f.kind == F8_FN ? 2.0 - ldexp(2.0, -f.mbits) : 2.0 - ldexp(1.0, -f.mbits);
  double maxf = ldexp(top, emax);
  double a = fabs(v);
  uint8_t over = f.kind == F8_IEEE ? (uint8_t)(sign | (((1 << f.ebits) - 1) << f.mbits)) : f8_nan(f, sign);
  if (a == INFINITY) return over;
  /* round to nearest even at the value's own ulp (subnormal ulp below 2^emin) */
  int emin = 1 - f.bias, ex;
  frexp(a, &ex);
  int e = a == 0 ? emin : ex - 1;
  if (e < emin) e = emin;
  double ulp = ldexp(1.0, e - f.mbits);
  double r = nearbyint(a / ulp) * ulp;
  if (r > maxf) return over;
  if (r == 0) return f.kind == F8_FNUZ ? 0 : sign; /* fnuz has no -0 */
  frexp(r, &ex);
  e = ex - 1;
  if (e < emin) return (uint8_t)(sign | (uint8_t)(r / ldexp(1.0, emin - f.mbits))); /* subnormal */
  uint8_t m = (uint8_t)(r / ldexp(1.0, e - f.mbits) - (double)(1 << f.mbits));
  return (uint8_t)(sign | (uint8_t)((e + f.bias) << f.mbits) | m);
}

double rt_from_f8(IrType t, uint8_t b) {
  if (t == IR_F8E8M0FNU) return b == 0xff ? NAN : ldexp(1.0, (int)b - 127);
  F8Format f = f8_format(t);
  int e = (b >> f.mbits) & ((1 << f.ebits) - 1), m = b & ((1 << f.mbits) - 1);
  int etop = (1 << f.ebits) - 1, mtop = (1 << f.mbits) - 1;
  double s = (b & 0x80) ? -1.0 : 1.0;
  if (f.kind == F8_FNUZ && b == 0x80) return NAN;
  if (f.kind == F8_FN && e == etop && m == mtop) return NAN;
  if (f.kind == F8_IEEE && e == etop) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexp((double)m, 1 - f.bias - f.mbits);
  return s * ldexp(1.0 + ldexp((double)m, -f.mbits), e - f.bias);
}

/* ---------- tensors ---------- */

/* A new tensor; with `header_only` no data is allocated (the caller points it at memory it owns). */
static RtTensor *tensor_new(IrType t, int rank, const int64_t *dims, bool zero, bool header_only, FxError *err) {
  if (rank < 0 || rank > IR_MAX_RANK) {
    fx_error_set(err, NULL, 0, 0, "tensor rank %d is out of range", rank);
    return NULL;
  }
  int eb = ir_type_bytes(t);
  if (t == IR_TUPLE || t == IR_TOKEN) eb = 0;
  else if (eb <= 0) {
    fx_error_set(err, NULL, 0, 0, "element type %s is not supported by the runtime", ir_type_name(t));
    return NULL;
  }
  uint64_t count = 1;
  for (int d = 0; d < rank; d++) {
    if (dims[d] < 0) {
      fx_error_set(err, NULL, 0, 0, "negative dimension %lld", (long long)dims[d]);
      return NULL;
    }
    if (dims[d] != 0 && count > (uint64_t)INT64_MAX / (uint64_t)dims[d]) {
      fx_error_set(err, NULL, 0, 0, "tensor size overflows 64 bits");
      return NULL;
    }
    count *= (uint64_t)dims[d];
  }
  if (eb && count > (uint64_t)(SIZE_MAX / 2) / (uint64_t)eb) {
    fx_error_set(err, NULL, 0, 0, "tensor of %llu elements is too large", (unsigned long long)count);
    return NULL;
  }
  size_t bytes = (size_t)count * (size_t)eb;
  if (!header_only && rt_max_memory() && live_bytes + bytes > max_memory) {
    fx_error_set(err, NULL, 0, 0,
                 "out of memory budget: a %s tensor of %zu bytes would bring live tensors to %llu bytes "
                 "(max_memory is %llu; change it with `set max_memory BYTES`)",
                 ir_type_name(t), bytes, (unsigned long long)(live_bytes + bytes),
                 (unsigned long long)max_memory);
    return NULL;
  }
  RtTensor *x = fx_calloc(1, sizeof *x);
  if (!x) goto oom;
  x->type = t;
  x->rank = rank;
  for (int d = 0; d < rank; d++) x->dims[d] = dims[d];
  x->count = (int64_t)count;
  x->bytes = bytes;
  x->refs = 1;
  if (eb && !header_only) {
    /* 64-byte aligned so generated kernels vectorize; padded so a zero-size tensor is valid. */
    size_t alloc = (bytes + 63) & ~(size_t)63;
    if (alloc == 0) alloc = 64;
    x->data = zero ? fx_calloc(1, alloc) : fx_malloc(alloc);
    if (!x->data) {
      fx_free(x);
      goto oom;
    }
    live_bytes += bytes;
  }
  return x;
oom:
  fx_error_set(err, NULL, 0, 0, "out of memory allocating a %s tensor of %zu bytes", ir_type_name(t), bytes);
  return NULL;
}

RtTensor *rt_tensor_new(IrType t, int rank, const int64_t *dims, FxError *err) {
  return tensor_new(t, rank, dims, true, false, err);
}

RtTensor *rt_tensor_new_uninit(IrType t, int rank, const int64_t *dims, FxError *err) {
  return tensor_new(t, rank, dims, false, false, err);
}

RtTensor *rt_tensor_view(IrType t, int rank, const int64_t *dims, RtTensor *owner, FxError *err) {
  RtTensor *x = tensor_new(t, rank, dims, false, true, err);
  if (!x) return NULL;
  if (!owner || !owner->data || owner->type == IR_TUPLE || x->bytes > owner->bytes) {
    fx_error_set(err, NULL, 0, 0, "a %zu-byte tensor does not fit the memory it was given", x->bytes);
    fx_free(x);
    return NULL;
  }
  x->data = owner->data;
  x->owner = rt_tensor_ref(owner);
  return x;
}

RtTensor *rt_tensor_tuple(RtTensor **elems, int n, FxError *err) {
  RtTensor *x = rt_tensor_new(IR_TUPLE, 0, NULL, err);
  if (!x) return NULL;
  x->tuple = fx_calloc((size_t)(n > 0 ? n : 1), sizeof *x->tuple);
  if (!x->tuple) {
    fx_free(x);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  x->ntuple = n;
  for (int k = 0; k < n; k++) x->tuple[k] = rt_tensor_ref(elems[k]);
  return x;
}

static RtTensor *for_shape(const IrShape *s, bool zero, FxError *err);

RtTensor *rt_tensor_for_shape(const IrShape *s, FxError *err) { return for_shape(s, true, err); }
RtTensor *rt_tensor_for_shape_uninit(const IrShape *s, FxError *err) { return for_shape(s, false, err); }

/* A tuple of n new elements, element k made by elem(src, k, zero, err); NULL (err set) when one
 * of them or the tuple cannot be made. */
static RtTensor *new_tuple(int n, RtTensor *(*elem)(const void *src, int k, bool zero, FxError *err), const void *src,
                           bool zero, FxError *err) {
  RtTensor **el = fx_calloc((size_t)(n > 0 ? n : 1), sizeof *el);
  if (!el) {
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  RtTensor *r = NULL;
  int k = 0;
  for (; k < n; k++)
    if (!(el[k] = elem(src, k, zero, err))) break;
  if (k == n) r = rt_tensor_tuple(el, n, err);
  for (int j = 0; j < k; j++) rt_tensor_unref(el[j]);
  fx_free(el);
  return r;
}

static RtTensor *shape_elem(const void *src, int k, bool zero, FxError *err) {
  return for_shape(&((const IrShape *)src)->tuple[k], zero, err);
}

static RtTensor *clone_elem(const void *src, int k, bool zero, FxError *err) {
  (void)zero;
  return rt_tensor_clone(((const RtTensor *)src)->tuple[k], err);
}

static RtTensor *for_shape(const IrShape *s, bool zero, FxError *err) {
  if (s->type == IR_TUPLE) return new_tuple(s->ntuple, shape_elem, s, zero, err);
  if (s->type == IR_TOKEN) return rt_tensor_new(IR_TOKEN, 0, NULL, err);
  return tensor_new(s->type, s->rank, s->dims, zero, false, err);
}

RtTensor *rt_tensor_ref(RtTensor *t) {
  if (t) t->refs++;
  return t;
}

void rt_tensor_unref(RtTensor *t) {
  if (!t || --t->refs > 0) return;
  for (int k = 0; k < t->ntuple; k++) rt_tensor_unref(t->tuple[k]);
  fx_free(t->tuple);
  if (t->owner) {
    rt_tensor_unref(t->owner);
  } else if (t->data) {
    live_bytes -= t->bytes;
    fx_free(t->data);
  }
  fx_free(t);
}

RtTensor *rt_tensor_clone(const RtTensor *t, FxError *err) {
  if (t->type == IR_TUPLE) return new_tuple(t->ntuple, clone_elem, t, false, err);
  RtTensor *r = rt_tensor_new(t->type, t->rank, t->dims, err);
  if (r && t->bytes) memcpy(r->data, t->data, t->bytes);
  return r;
}

bool rt_tensor_matches(const RtTensor *t, const IrShape *s) {
  if (s->type == IR_TUPLE) {
    if (t->type != IR_TUPLE || t->ntuple != s->ntuple) return false;
    for (int k = 0; k < s->ntuple; k++)
      if (!rt_tensor_matches(t->tuple[k], &s->tuple[k])) return false;
    return true;
  }
  if (t->type != s->type || t->rank != s->rank) return false;
  for (int d = 0; d < s->rank; d++)
    if (t->dims[d] != s->dims[d]) return false;
  return true;
}

void rt_tensor_describe(const RtTensor *t, char *buf, size_t n) {
  if (!n) return;
  if (t->type == IR_TUPLE) {
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int k = 0; k < t->ntuple && len < n; k++) {
      if (k) len += (size_t)snprintf(buf + len, n - len, ", ");
      if (len < n) rt_tensor_describe(t->tuple[k], buf + len, n - len);
      len = strlen(buf);
    }
    if (len < n) snprintf(buf + len, n - len, ")");
    return;
  }
  size_t len = (size_t)snprintf(buf, n, "%s[", ir_type_name(t->type));
  for (int d = 0; d < t->rank && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "," : "", (long long)t->dims[d]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

/* ---------- element access ---------- */

double rt_get_f(const RtTensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->type) {
  case IR_PRED: case IR_U8: case IR_U4: return ((const uint8_t *)p)[i];
  case IR_S8: case IR_S4: return ((const int8_t *)p)[i];
  case IR_S16: return ((const int16_t *)p)[i];
  case IR_U16: return ((const uint16_t *)p)[i];
  case IR_S32: return ((const int32_t *)p)[i];
  case IR_U32: return ((const uint32_t *)p)[i];
  case IR_S64: return (double)((const int64_t *)p)[i];
  case IR_U64: return (double)((const uint64_t *)p)[i];
  case IR_F16: return rt_f16_to_f32(((const uint16_t *)p)[i]);
  case IR_BF16: return rt_bf16_to_f32(((const uint16_t *)p)[i]);
  case IR_F32: return ((const float *)p)[i];
  case IR_F64: return ((const double *)p)[i];
  case IR_F8E4M3FN: case IR_F8E5M2: case IR_F8E4M3FNUZ: case IR_F8E5M2FNUZ: case IR_F8E4M3B11FNUZ: case IR_F8E4M3:
  case IR_F8E3M4: case IR_F8E8M0FNU:
    return rt_from_f8(t->type, ((const uint8_t *)p)[i]);
  case IR_C64: return ((const float *)p)[2 * i];
  case IR_C128: return ((const double *)p)[2 * i];
  default: return 0;
  }
}

void rt_get_c(const RtTensor *t, int64_t i, double *re, double *im) {
  if (t->type == IR_C64) {
    *re = ((const float *)t->data)[2 * i];
    *im = ((const float *)t->data)[2 * i + 1];
  } else if (t->type == IR_C128) {
    *re = ((const double *)t->data)[2 * i];
    *im = ((const double *)t->data)[2 * i + 1];
  } else {
    *re = ir_type_is_float(t->type) ? rt_get_f(t, i) : t->type == IR_U64 ? (double)(uint64_t)rt_get_i(t, i) : (double)rt_get_i(t, i);
    *im = 0;
  }
}

void rt_set_c(RtTensor *t, int64_t i, double re, double im) {
  if (t->type == IR_C64) {
    ((float *)t->data)[2 * i] = (float)re;
    ((float *)t->data)[2 * i + 1] = (float)im;
  } else if (t->type == IR_C128) {
    ((double *)t->data)[2 * i] = re;
    ((double *)t->data)[2 * i + 1] = im;
  } else {
    rt_set_f(t, i, re);
  }
}

int64_t rt_get_i(const RtTensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->type) {
  case IR_PRED: case IR_U8: case IR_U4: return ((const uint8_t *)p)[i];
  case IR_S8: case IR_S4: return ((const int8_t *)p)[i];
  case IR_S16: return ((const int16_t *)p)[i];
  case IR_U16: return ((const uint16_t *)p)[i];
  case IR_S32: return ((const int32_t *)p)[i];
  case IR_U32: return ((const uint32_t *)p)[i];
  case IR_S64: return ((const int64_t *)p)[i];
  case IR_U64: return (int64_t)((const uint64_t *)p)[i];
  default: {
    /* float to int as XLA converts: truncate toward zero, saturate, NaN to 0 */
    double v = rt_get_f(t, i);
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
  }
  }
}

void rt_set_f(RtTensor *t, int64_t i, double v) {
  void *p = t->data;
  switch (t->type) {
  case IR_F16: ((uint16_t *)p)[i] = rt_f32_to_f16((float)v); return;
  case IR_BF16: ((uint16_t *)p)[i] = rt_f32_to_bf16((float)v); return;
  case IR_F32: ((float *)p)[i] = (float)v; return;
  case IR_F64: ((double *)p)[i] = v; return;
  case IR_F8E4M3FN: case IR_F8E5M2: case IR_F8E4M3FNUZ: case IR_F8E5M2FNUZ: case IR_F8E4M3B11FNUZ: case IR_F8E4M3:
  case IR_F8E3M4: case IR_F8E8M0FNU:
    ((uint8_t *)p)[i] = rt_to_f8(t->type, v);
    return;
  case IR_C64: case IR_C128: rt_set_c(t, i, v, 0); return;
  case IR_PRED: ((uint8_t *)p)[i] = v != 0; return;
  default: {
    int64_t x;
    if (v != v) x = 0;
    else if (v >= 9223372036854775807.0) x = INT64_MAX;
    else if (v <= -9223372036854775808.0) x = INT64_MIN;
    else x = (int64_t)v;
    rt_set_i(t, i, x);
  }
  }
}

void rt_set_i(RtTensor *t, int64_t i, int64_t v) {
  void *p = t->data;
  switch (t->type) {
  case IR_PRED: ((uint8_t *)p)[i] = v != 0; return;
  case IR_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
  case IR_S8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; return;
  /* s4/u4 take a byte each here, holding the value wrapped to 4 bits */
  case IR_U4: ((uint8_t *)p)[i] = (uint8_t)(v & 0xf); return;
  case IR_S4: ((int8_t *)p)[i] = (int8_t)((int)(((uint64_t)v & 0xf) ^ 8) - 8); return;
  case IR_S16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; return;
  case IR_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
  case IR_S32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; return;
  case IR_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
  case IR_S64: ((int64_t *)p)[i] = v; return;
  case IR_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
  default:
    if (ir_type_is_float(t->type) || ir_type_is_complex(t->type)) rt_set_f(t, i, (double)v);
    return; /* tuples and tokens hold no elements */
  }
}

/* ---------- threefry and random fill ---------- */

/* rt_threefry2x32 is in rng_stream.c, next to the other random streams. */

void rt_tensor_fill_random(RtTensor *t, uint64_t seed, uint64_t stream) {
  rt_tensor_fill_random_range(t, seed, stream, 0, t->count);
}

/* Element i of t's random stream: Threefry2x32 keyed by seed and stream, counter i. */
static void fill_serial(RtTensor *t, uint64_t seed, uint64_t stream, int64_t from, int64_t to) {
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32) ^ (uint32_t)stream * 0x9E3779B9u;
  uint32_t hi = (uint32_t)(stream >> 32);
  bool cplx = ir_type_is_complex(t->type), flt = ir_type_is_float(t->type);
  for (int64_t i = from; i < to; i++) {
    uint32_t o[2];
    rt_threefry2x32(k0, k1, (uint32_t)i, (uint32_t)((uint64_t)i >> 32) ^ hi, o);
    if (cplx) rt_set_c(t, i, (double)(o[0] >> 8) * 0x1p-23 - 1.0, (double)(o[1] >> 8) * 0x1p-23 - 1.0);
    else if (t->type == IR_F32) ((float *)t->data)[i] = (float)((double)(o[0] >> 8) * 0x1p-23 - 1.0);
    else if (flt) rt_set_f(t, i, (double)(o[0] >> 8) * 0x1p-23 - 1.0);
    else if (t->type == IR_PRED) rt_set_i(t, i, o[0] & 1);
    else rt_set_i(t, i, o[0] & 15);
  }
}

typedef struct {
  RtTensor *t;
  uint64_t seed, stream;
  int64_t from, to;
} FillJob;

static void *fill_job(void *arg) {
  FillJob *j = arg;
  fill_serial(j->t, j->seed, j->stream, j->from, j->to);
  return NULL;
}

/* Each element's value depends only on its index, so a large range is filled by the machine's
 * CPUs side by side (a model's weights are billions of elements: Gemma 4's took two minutes on one
 * core), every element the same as on one. */
enum { FILL_THREADS_MAX = 32, FILL_PARALLEL_MIN = 1 << 15 };

void rt_tensor_fill_random_range(RtTensor *t, uint64_t seed, uint64_t stream, int64_t from, int64_t to) {
  if (!t->data) return;
  if (from < 0) from = 0;
  if (to > t->count) to = t->count;
  if (to <= from) return;
  long nt = sysconf(_SC_NPROCESSORS_ONLN);
  if (nt > FILL_THREADS_MAX) nt = FILL_THREADS_MAX;
  if (nt > (to - from) / FILL_PARALLEL_MIN) nt = (long)((to - from) / FILL_PARALLEL_MIN);
  if (nt < 2) {
    fill_serial(t, seed, stream, from, to);
    return;
  }
  FillJob jobs[FILL_THREADS_MAX];
  pthread_t th[FILL_THREADS_MAX];
  bool started[FILL_THREADS_MAX] = {false};
  int64_t n = to - from;
  for (long k = 0; k < nt; k++)
    jobs[k] = (FillJob){t, seed, stream, from + n * k / nt, from + n * (k + 1) / nt};
  for (long k = 1; k < nt; k++) started[k] = pthread_create(&th[k], NULL, fill_job, &jobs[k]) == 0;
  fill_job(&jobs[0]);
  for (long k = 1; k < nt; k++) {
    if (started[k]) pthread_join(th[k], NULL);
    else fill_job(&jobs[k]); /* a thread that could not start: its part here */
  }
}

/* ---------- comparison ---------- */

static double tol_for(IrType t) {
  switch (t) {
  case IR_F16: return 1e-2;
  case IR_BF16: return 2e-2;
  case IR_F32: case IR_F64: case IR_C64: case IR_C128: return 1e-5;
  case IR_F8E3M4: return 0.0625; /* one ulp of 4 mantissa bits */
  case IR_F8E8M0FNU: return 1.0;  /* powers of two: one step doubles */
  case IR_F8E4M3FN: case IR_F8E4M3FNUZ: case IR_F8E4M3B11FNUZ: case IR_F8E4M3: return 0.125; /* 3 bits */
  case IR_F8E5M2: case IR_F8E5M2FNUZ: return 0.25; /* one ulp of 2 mantissa bits */
  default: return 0;
  }
}

static bool compare_arrays(const RtTensor *g, const RtTensor *w, int tidx, RtCompare *c) {
  char a[128], b[128];
  if (g->type != w->type || g->rank != w->rank || memcmp(g->dims, w->dims, sizeof(int64_t) * (size_t)g->rank)) {
    rt_tensor_describe(g, a, sizeof a);
    rt_tensor_describe(w, b, sizeof b);
    c->ok = false;
    c->tuple_index = tidx;
    c->worst_index = -1;
    snprintf(c->what, sizeof c->what, "shape %s differs from the reference's %s", a, b);
    return false;
  }
  bool isf = ir_type_is_float(g->type), isc = ir_type_is_complex(g->type);
  double tol = tol_for(g->type);
  double worst = 0;
  int64_t wi = -1;
  /* Errors are relative to the larger of the element's magnitude, the output's root-mean-square
   * and 1: summing in another order (a BLAS dot, a tree reduction) moves an element by rounding
   * errors of the terms it sums, which scale with the values of the output, not with one element
   * that cancellation made small. */
  double floor = 1.0;
  if (isf || isc) {
    double ss = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < w->count; i++) {
      double yr, yi = 0;
      if (isc) rt_get_c(w, i, &yr, &yi);
      else yr = rt_get_f(w, i);
      double m2 = yr * yr + yi * yi;
      if (m2 == m2 && m2 < INFINITY) {
        ss += m2;
        n++;
      }
    }
    if (n && sqrt(ss / (double)n) > floor) floor = sqrt(ss / (double)n);
  }
  for (int64_t i = 0; i < g->count; i++) {
    double e;
    if (isc) {
      double xr, xi, yr, yi;
      rt_get_c(g, i, &xr, &xi);
      rt_get_c(w, i, &yr, &yi);
      bool xn = xr != xr || xi != xi, yn = yr != yr || yi != yi;
      if (xn || yn) e = (xn && yn) ? 0 : INFINITY;
      else if (xr == yr && xi == yi) e = 0;
      else e = hypot(xr - yr, xi - yi) / fmax(floor, hypot(yr, yi));
    } else if (isf) {
      double x = rt_get_f(g, i), y = rt_get_f(w, i);
      if (x != x || y != y) e = (x != x && y != y) ? 0 : INFINITY;
      else if (x == y) e = 0;  /* equal infinities too */
      else e = fabs(x - y) / fmax(floor, fabs(y));
    } else {
      e = rt_get_i(g, i) == rt_get_i(w, i) ? 0 : 1;
    }
    if (e > worst || (wi < 0 && e > tol)) {
      worst = e;
      wi = i;
    }
  }
  if (wi >= 0 && worst > tol) {
    c->ok = false;
    c->tuple_index = tidx;
    c->worst_index = wi;
    c->got = isf || isc ? rt_get_f(g, wi) : (double)rt_get_i(g, wi);
    c->want = isf || isc ? rt_get_f(w, wi) : (double)rt_get_i(w, wi);
    c->err = worst;
    c->tol = tol;
    /* the worst element's multi-index */
    char idx[128];
    size_t len = 0;
    int64_t rem = wi;
    int64_t sub[IR_MAX_RANK];
    for (int d = g->rank - 1; d >= 0; d--) {
      sub[d] = g->dims[d] ? rem % g->dims[d] : 0;
      rem = g->dims[d] ? rem / g->dims[d] : 0;
    }
    idx[0] = 0;
    for (int d = 0; d < g->rank && len < sizeof idx; d++)
      len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%lld", d ? "," : "", (long long)sub[d]);
    if (isc) {
      double gr, gi, wr, wim;
      rt_get_c(g, wi, &gr, &gi);
      rt_get_c(w, wi, &wr, &wim);
      snprintf(c->what, sizeof c->what, "element [%s] is (%.9g, %.9g), the reference has (%.9g, %.9g) (relative error %.3g > %.3g)",
               idx, gr, gi, wr, wim, worst, tol);
    } else {
      snprintf(c->what, sizeof c->what, "element [%s] is %.9g, the reference has %.9g (%s error %.3g > %.3g)",
               idx, c->got, c->want, isf ? "relative" : "exact", worst, tol);
    }
    return false;
  }
  if (worst > c->err) c->err = worst;
  return true;
}

void rt_compare(const RtTensor *got, const RtTensor *want, RtCompare *c) {
  memset(c, 0, sizeof *c);
  c->ok = true;
  c->worst_index = -1;
  c->tuple_index = -1;
  if (got->type == IR_TUPLE || want->type == IR_TUPLE) {
    if (got->type != want->type || got->ntuple != want->ntuple) {
      c->ok = false;
      snprintf(c->what, sizeof c->what, "tuple shapes differ");
      return;
    }
    for (int k = 0; k < got->ntuple; k++) {
      if (got->tuple[k]->type == IR_TUPLE) {
        RtCompare sub;
        rt_compare(got->tuple[k], want->tuple[k], &sub);
        if (!sub.ok) {
          *c = sub;
          c->tuple_index = k;
          return;
        }
        continue;
      }
      if (got->tuple[k]->type == IR_TOKEN) continue;
      if (!compare_arrays(got->tuple[k], want->tuple[k], k, c)) return;
    }
    return;
  }
  if (got->type == IR_TOKEN) return;
  compare_arrays(got, want, -1, c);
}

/* ---------- results as `run` shows them ---------- */

void rt_tensor_summarize(const RtTensor *t, RtSummary *s) {
  memset(s, 0, sizeof *s);
  rt_tensor_describe(t, s->desc, sizeof s->desc);
  if (t->type == IR_TUPLE || t->type == IR_TOKEN || t->count == 0) return;
  s->has_values = true;
  s->nfirst = t->count < 4 ? (int)t->count : 4;
  if (ir_type_is_complex(t->type)) {
    s->is_complex = true;
    double mn = INFINITY, mx = -INFINITY, sr = 0, si = 0, re, im;
    for (int64_t k = 0; k < t->count; k++) {
      rt_get_c(t, k, &re, &im);
      double m = hypot(re, im);
      if (m < mn) mn = m;
      if (m > mx) mx = m;
      sr += re;
      si += im;
    }
    s->min = mn;
    s->max = mx;
    s->mean = sr / (double)t->count;
    s->mean_im = si / (double)t->count;
    for (int k = 0; k < s->nfirst; k++) rt_get_c(t, k, &s->first[k], &s->first_im[k]);
    return;
  }
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  bool fl = ir_type_is_float(t->type), u64 = t->type == IR_U64; /* u64: rt_get_i gives its bits */
  for (int64_t k = 0; k < t->count; k++) {
    double v = fl ? rt_get_f(t, k) : u64 ? (double)(uint64_t)rt_get_i(t, k) : (double)rt_get_i(t, k);
    if (v < mn) mn = v;
    if (v > mx) mx = v;
    sum += v;
  }
  s->is_float = fl;
  s->first_u64 = u64;
  s->min = mn;
  s->max = mx;
  s->mean = sum / (double)t->count;
  for (int k = 0; k < s->nfirst; k++) {
    if (fl) {
      s->first[k] = rt_get_f(t, k);
    } else {
      s->first_int[k] = rt_get_i(t, k);
      s->first[k] = u64 ? (double)(uint64_t)s->first_int[k] : (double)s->first_int[k];
    }
  }
}

void rt_tensor_each_output(const RtTensor *t, const char *name, void (*fn)(void *ctx, const char *name, const RtTensor *t),
                           void *ctx) {
  if (t->type != IR_TUPLE) {
    fn(ctx, name, t);
    return;
  }
  for (int k = 0; k < t->ntuple; k++) {
    char sub[64];
    snprintf(sub, sizeof sub, "%s.%d", name, k);
    rt_tensor_each_output(t->tuple[k], sub, fn, ctx);
  }
}

static void print_one(void *ctx, const char *name, const RtTensor *t);

void rt_tensor_print_summary(FILE *f, const char *name, const RtTensor *t) { rt_tensor_each_output(t, name, print_one, f); }

static void print_one(void *ctx, const char *name, const RtTensor *t) {
  FILE *f = ctx;
  RtSummary s;
  rt_tensor_summarize(t, &s);
  if (!s.has_values) {
    fprintf(f, "%s: %s\n", name, s.desc);
    return;
  }
  if (s.is_complex) {
    fprintf(f, "%s: %s  min |z| %.6g  max |z| %.6g  mean (%.6g, %.6g)  first", name, s.desc, s.min, s.max, s.mean, s.mean_im);
    for (int k = 0; k < s.nfirst; k++) fprintf(f, " (%.6g, %.6g)", s.first[k], s.first_im[k]);
  } else {
    fprintf(f, "%s: %s  min %.6g  max %.6g  mean %.6g  first", name, s.desc, s.min, s.max, s.mean);
    for (int k = 0; k < s.nfirst; k++) {
      if (s.is_float) fprintf(f, " %.6g", s.first[k]);
      else if (s.first_u64) fprintf(f, " %llu", (unsigned long long)(uint64_t)s.first_int[k]);
      else fprintf(f, " %lld", (long long)s.first_int[k]);
    }
  }
  fprintf(f, "%s\n", t->count > 4 ? " ..." : "");
}

/* The outputs by name: "out" for an array result, "out.K" for tuple elements. */
const RtTensor *rt_tensor_output(const RtTensor *r, const char *name) {
  if (strcmp(name, "out") == 0) return r;
  if (strncmp(name, "out.", 4) != 0 || r->type != IR_TUPLE) return NULL;
  char *e;
  long k = strtol(name + 4, &e, 10);
  if (k < 0 || k >= r->ntuple) return NULL;
  if (*e == '.') {
    char sub[64];
    snprintf(sub, sizeof sub, "out%s", e);
    return rt_tensor_output(r->tuple[k], sub);
  }
  return *e ? NULL : r->tuple[k];
}

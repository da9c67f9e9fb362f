/* pass_sort_rewriter.c — sort-rewriter: XLA:GPU's SortRewriter (sort_rewriter.cc), which runs before
 * comparison-expander and turns a sort CUB's radix sort can do, and does faster on this GPU, into a
 * call to CUB:
 *
 *   sort(x: f32[64,32768]), dimensions={1}, to_apply=(NaN-last less-than, what jnp.sort writes)
 *     ->  keys = select(x' < 0, not(bits(x')), bits(x') ^ 0x80000000)     x' = x with -0 -> 0, -NaN -> NaN
 *         custom-call(keys, x), custom_call_target="xla.gpu.ext.cub_sort_pairs" : (u32[..], f32[..], u8[1])
 *         get-tuple-element 1
 *
 * Which sorts (XLA's IsCubCompatibleSort and AnalyzeSortOp): one or two operands, sorted along the
 * last dimension; the comparator's root a less-than or greater-than of two adjacent parameters, either
 * directly (the default order: the keys go to CUB as they are) or through JAX's canonicalization of
 * zeros and NaNs (NumPy's order: synthetic unsigned keys that radix-sort as the floats do, the
 * original values carried along; an argsort's key and index are packed into one u32 or u64 value and
 * unpacked after); key and value types CUB has kernels for. Whether it pays (ShouldRewriteCompatibleSort):
 * XLA's measured thresholds per architecture, on the bit width of the first operand, the length of a
 * row and the number of rows (Hopper: IsCubSortFasterOnH100, Ampere: ...OnA100, Blackwell:
 * ...OnBlackwell; any other GPU: more than 16,384 elements in all).
 *
 * The call's last output is CUB's scratch buffer: XLA sizes it after fusion from CUB itself on the
 * device (EstimateCubSortScratchSize, or a table of sizes measured per GPU when compiling without
 * one). fxplain cannot ask CUB without a GPU, so its call keeps the one byte XLA's SortRewriter
 * writes there first; the kernels are the same, the scratch size is not modelled. Every sort gets a
 * decision: rewritten, or why not. GPU devices only; fusion bodies are left alone. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../plan/device.h"
#include "passes.h"
#include "simplify.h"

typedef enum { ORDER_DEFAULT, ORDER_NUMPY } SortOrder;

typedef struct {
  int key_operand; /* 0 or 1 */
  bool descending;
  SortOrder order;
  IrType key_type;   /* the type CUB sorts */
  IrType value_type; /* IR_INVALID for keys only */
} SortAnalysis;

static IrType unsigned_of_bits(int bits) {
  return bits <= 8 ? IR_U8 : bits <= 16 ? IR_U16 : bits <= 32 ? IR_U32 : IR_U64;
}

static bool is_param(const IrInstr *i) { return i && i->op == IR_OP_PARAMETER; }

/* A constant all of whose elements are 0, of an effectively scalar shape (XLA's
 * m::ConstantEffectiveScalar(0)). */
static bool const_scalar_zero(const IrInstr *i) {
  if (!i || i->op != IR_OP_CONSTANT || !i->literal || i->literal->elided || !i->literal->values) return false;
  if (ir_shape_elements(&i->shape) != 1) return false;
  return i->literal->values[0] == 0;
}

/* XLA's MatchConstNan: a constant printed as "nan" (a positive quiet NaN). */
static bool const_nan(const IrInstr *i) {
  if (!i || i->op != IR_OP_CONSTANT || !i->literal || !i->literal->text) return false;
  const char *t = i->literal->text;
  while (*t == ' ' || *t == '{') t++;
  return strncmp(t, "nan", 3) == 0 && (t[3] == 0 || t[3] == '}' || t[3] == ' ');
}

static bool compare_is(const IrInstr *i, const char *dir) {
  const char *d = i && i->op == IR_OP_COMPARE ? ir_compare_direction(i) : NULL;
  return d && strcmp(d, dir) == 0;
}

/* XLA's ParamNumberOfCanonicalizedZerosAndNans: the parameter p of
 *   select(compare(p, p) NE, nan, select(compare(p, 0) EQ, 0, p))
 * (JAX's lowering of a NumPy-order comparison), or -1. As XLA's matcher, the number is that of the
 * last parameter matched. */
static int64_t canonicalized_param(const IrInstr *s) {
  if (!s || s->op != IR_OP_SELECT || s->noperands != 3) return -1;
  const IrInstr *ne = s->operands[0], *inner = s->operands[2];
  if (!compare_is(ne, "NE") || !is_param(ne->operands[0]) || !is_param(ne->operands[1])) return -1;
  if (!const_nan(s->operands[1])) return -1;
  if (!inner || inner->op != IR_OP_SELECT || inner->noperands != 3) return -1;
  const IrInstr *eq = inner->operands[0];
  if (!compare_is(eq, "EQ") || !is_param(eq->operands[0]) || !const_scalar_zero(eq->operands[1])) return -1;
  if (!const_scalar_zero(inner->operands[1]) || !is_param(inner->operands[2])) return -1;
  return inner->operands[2]->param_number;
}

/* XLA's AnalyzeCompareOp. NULL when the comparator is one CUB cannot do, with the reason. */
static const char *analyze_compare(const IrInstr *root, SortAnalysis *a) {
  const char *dir = root && root->op == IR_OP_COMPARE ? ir_compare_direction(root) : NULL;
  if (!dir || strcmp(dir, "EQ") == 0 || strcmp(dir, "NE") == 0)
    return "its comparator is not a less-than or greater-than comparison";
  int64_t i0, i1;
  if (is_param(root->operands[0]) && is_param(root->operands[1])) {
    a->order = ORDER_DEFAULT;
    i0 = root->operands[0]->param_number;
    i1 = root->operands[1]->param_number;
  } else {
    i0 = canonicalized_param(root->operands[0]);
    i1 = canonicalized_param(root->operands[1]);
    if (i0 < 0 || i1 < 0) return "its comparator compares more than two parameters as they are or in NumPy's order";
    a->order = ORDER_NUMPY;
  }
  int64_t first = i0 < i1 ? i0 : i1, last = i0 < i1 ? i1 : i0;
  if (first % 2 != 0 || last != first + 1) return "its comparator does not compare the two values of one operand";
  bool desc = strcmp(dir, "GT") == 0 || strcmp(dir, "GE") == 0;
  a->key_operand = (int)(first / 2);
  a->descending = desc != (first != i0);
  return NULL;
}

/* XLA's AnalyzeSortOp: the types CUB sorts. */
static const char *analyze_sort(const IrInstr *sort, const IrComputation *cmp, SortAnalysis *a) {
  const char *no = analyze_compare(cmp->root, a);
  if (no) return no;
  if (a->key_operand >= sort->noperands) return "its comparator compares an operand the sort does not have";
  IrType kt = sort->operands[a->key_operand]->shape.type;
  IrType vt = sort->noperands == 2 ? sort->operands[1 - a->key_operand]->shape.type : IR_INVALID;
  if (a->order == ORDER_NUMPY) {
    if (kt != IR_BF16 && kt != IR_F16 && kt != IR_F32 && kt != IR_F64)
      return "NumPy's order is only synthesized for bf16, f16, f32 and f64 keys";
    if (sort->noperands == 2) {
      if ((kt != IR_F32 && kt != IR_F16 && kt != IR_BF16) || (vt != IR_S32 && vt != IR_S16))
        return "an argsort in NumPy's order packs f32, f16 or bf16 keys with s32 or s16 values only";
      int total = ir_type_bits(kt) + ir_type_bits(vt);
      kt = unsigned_of_bits(ir_type_bits(kt));
      vt = total <= 32 ? IR_U32 : IR_U64;
      /* IsNumpySortMemoryExpensive: the packed copies must stay under 2 GiB */
      if (ir_shape_elements(&sort->operands[0]->shape) * (int64_t)(ir_type_bytes(kt) + ir_type_bytes(vt)) >= (2LL << 30))
        return "packing its keys and values would take more than 2 GiB";
    } else {
      vt = kt;
      kt = unsigned_of_bits(ir_type_bits(kt));
    }
  }
  a->key_type = kt;
  a->value_type = vt;
  return NULL;
}

/* XLA's AreOperandTypesSupportedByCub: the kernels XLA compiles CUB for. */
static bool cub_has_kernel(const SortAnalysis *a) {
  IrType k = a->key_type;
  if (a->value_type == IR_INVALID)
    return k == IR_BF16 || k == IR_F16 || k == IR_F32 || k == IR_F64 || k == IR_S8 || k == IR_S16 || k == IR_S32 ||
           k == IR_S64 || k == IR_U8 || k == IR_U16 || k == IR_U32 || k == IR_U64;
  int vb = ir_type_bits(a->value_type);
  bool vok = vb == 16 || vb == 32 || vb == 64;
  return vok && (k == IR_U8 || k == IR_U16 || k == IR_S32 || k == IR_U32 || k == IR_U64 || k == IR_F32);
}

/* XLA's measured thresholds (IsCubSortFasterOnH100 / OnA100 / OnBlackwell): whether CUB beats XLA's
 * own sort kernel for `batch` rows of `n` elements of `bits` bits. */
static bool faster_h100(int bits, int64_t batch, int64_t n, int sms) {
  switch (bits) {
  case 8: return batch == 1 || (n > 1300 && (batch > 8 || n < 26000));
  case 16:
    return (batch == 1 && n > (1 << 9)) || (batch > 12 && n > (1 << 16)) || (batch > 14 && n > (1 << 15)) ||
           (batch > 16 && n > (1 << 14)) || (batch > 18 && n > (1 << 13)) || (batch > 33 && n > (1 << 12)) ||
           (batch > 66 && n > (1 << 11));
  case 32:
    return (batch == 1 && n > 22000) || (batch > 26 && n > (1 << 17)) || (batch > 31 && n > (1 << 16)) ||
           (batch > 38 && n > (1 << 15)) || (batch > 44 && n > (1 << 14)) || (batch > 52 && n > (1 << 13)) ||
           (batch > 88 && batch <= sms && n > (1 << 12));
  case 64:
    return (batch == 1 && n > (1 << 17)) || (batch > 55 && n > (1 << 17)) || (batch > 70 && n > (1 << 16)) ||
           (batch > 92 && n > (1 << 15)) || (((batch > 160 && batch <= 2 * sms) || batch > 354) && n > (1 << 14));
  default: return false;
  }
}

static bool faster_a100(int bits, int64_t batch, int64_t n, int sms) {
  switch (bits) {
  case 8: return batch == 1 || (n > 1000 && (batch > 5 || n < 43000));
  case 16:
    return (batch == 1 && n > (1 << 16)) || (batch > 9 && n > (1 << 17)) || (batch > 13 && n > (1 << 16)) ||
           (batch > 13 && n > (1 << 15)) || (batch > 13 && n > (1 << 14)) || (batch > 13 && n > (1 << 13)) ||
           (batch > 27 && n > (1 << 12)) || (batch > 54 && n > (1 << 11));
  case 32:
    return (batch == 1 && n > (2 << 14)) || (batch > 24 && n > (1 << 17)) || (batch > 30 && n > (1 << 16)) ||
           (batch > 36 && n > (1 << 15)) || (batch > 39 && n > (1 << 14)) || (batch > 52 && n > (1 << 13)) ||
           (batch > 144 && n > (1 << 12));
  case 64:
    return (batch == 1 && n > (1 << 16)) || (batch > 46 && n > (1 << 17)) || (batch > 55 && n > (1 << 16)) ||
           (batch > 72 && n > (1 << 15)) || (((batch > 138 && batch <= 2 * sms) || batch > 289) && n > (1 << 14));
  default: return false;
  }
}

static bool faster_blackwell(int bits, int64_t batch, int64_t n, int sms, bool has_values) {
  if (n <= 1024) return false;
  if (bits == 16) return n >= 4096;
  if (bits == 32) {
    if (batch == 1) return n >= 4096;
    if (n >= 131072) return batch > 26;
    if (n >= 65536) return batch > 31;
    if (n >= 32768) return batch > 38;
    if (n >= 16384) return batch > 44;
    if (n >= 8192) return batch > 52;
    if (n >= 4096) return batch > 88 && batch < 128;
    return false;
  }
  if (bits == 64) return !has_values && n >= 16384;
  return faster_h100(bits, batch, n, sms);
}

/* The GPU generation of an "sm_XY" profile: its major version, 0 when unknown. */
static int arch_major(const DeviceProfile *d) {
  int major = 0, minor = 0;
  if (!d || sscanf(d->arch, "sm_%1d%d", &major, &minor) != 2) {
    if (d && sscanf(d->arch, "sm_%d", &major) == 1) major /= 10;
  }
  return major;
}

/* XLA's ShouldRewriteCompatibleSort (SortRewriter's default mode, kAuto). */
static bool pays(const IrInstr *sort, const DeviceProfile *dev, const char **which) {
  const IrShape *s = &sort->operands[0]->shape;
  int64_t n = s->rank ? s->dims[s->rank - 1] : 1, total = ir_shape_elements(s);
  if (n == 0) return false;
  int bits = ir_type_bits(s->type);
  int64_t batch = total / n;
  int major = arch_major(dev);
  if (major == 10) {
    *which = "XLA's thresholds for Blackwell";
    return faster_blackwell(bits, batch, n, dev->sm_count, sort->noperands == 2);
  }
  if (major == 9) {
    *which = "XLA's thresholds for H100";
    return faster_h100(bits, batch, n, dev->sm_count);
  }
  if (major == 8) {
    *which = "XLA's thresholds for A100";
    return faster_a100(bits, batch, n, dev->sm_count);
  }
  *which = "XLA's rule for GPUs it has no thresholds for (more than 16,384 elements)";
  return total > 16384;
}

/* ---------- building the call ---------- */

typedef struct {
  IrInstr *at; /* new instructions go before it (the sort) */
  bool oom;
} Build;

static IrInstr *add(Build *b, IrOpcode op, const IrShape *s, IrInstr **ops, int n, const char *base) {
  if (b->oom) return NULL;
  IrInstr *x = simp_add_like(b->at->parent, b->at, op, s, ops, n, base, b->at);
  if (!x) b->oom = true;
  return x;
}

static IrShape retyped(Build *b, const IrShape *s, IrType t) {
  return ir_shape_array(&b->at->parent->module->arena, t, s->rank, s->dims);
}

/* constant(v) of type t broadcast to shape s (XLA's CreateConstant + CreateBroadcast). */
static IrInstr *splat(Build *b, const IrShape *s, IrType t, double v) {
  IrShape sc = ir_shape_scalar(t);
  IrInstr *c = add(b, IR_OP_CONSTANT, &sc, NULL, 0, "constant");
  if (!c) return NULL;
  if (!(c->literal = ir_literal_new(&b->at->parent->module->arena, &v, 1, t, &sc))) {
    b->oom = true;
    return NULL;
  }
  IrShape bs = retyped(b, s, t);
  IrInstr *r = add(b, IR_OP_BROADCAST, &bs, &c, 1, "broadcast");
  if (r) ir_attr_set_text(r, "dimensions", "{}");
  return r;
}

static IrInstr *compare(Build *b, IrInstr *x, IrInstr *y, const char *dir) {
  IrShape ps = retyped(b, &x->shape, IR_PRED);
  IrInstr *ops[2] = {x, y};
  IrInstr *r = add(b, IR_OP_COMPARE, &ps, ops, 2, "compare");
  if (r) ir_attr_set_text(r, "direction", dir);
  return r;
}

static IrInstr *select3(Build *b, IrInstr *p, IrInstr *t, IrInstr *f) {
  IrInstr *ops[3] = {p, t, f};
  return add(b, IR_OP_SELECT, &t->shape, ops, 3, "select");
}

static IrInstr *unary(Build *b, IrOpcode op, IrInstr *x, IrType t, const char *base) {
  IrShape s = retyped(b, &x->shape, t);
  return add(b, op, &s, &x, 1, base);
}

static IrInstr *binary(Build *b, IrOpcode op, IrInstr *x, IrInstr *y, const char *base) {
  IrInstr *ops[2] = {x, y};
  return add(b, op, &x->shape, ops, 2, base);
}

/* XLA's AddNumpySortKey: unsigned keys (key type kt) that radix-sort as x does in NumPy's order
 * (-0 as 0, every NaN as NaN and last): the sign bit flipped for a positive value, every bit for a
 * negative one. */
static IrInstr *numpy_key(Build *b, IrInstr *x, IrType kt) {
  IrType vt = x->shape.type;
  IrInstr *zero = splat(b, &x->shape, vt, 0);
  IrInstr *is_zero = zero ? compare(b, x, zero, "EQ") : NULL;
  IrInstr *zeros = is_zero ? select3(b, is_zero, zero, x) : NULL;
  IrInstr *nan = zeros ? splat(b, &x->shape, vt, NAN) : NULL;
  IrInstr *is_nan = nan ? compare(b, x, x, "NE") : NULL;
  IrInstr *canon = is_nan ? select3(b, is_nan, nan, zeros) : NULL;
  IrInstr *neg = canon ? compare(b, canon, zero, "LT") : NULL;
  IrInstr *bits = neg ? unary(b, IR_OP_BITCAST_CONVERT, canon, kt, "bitcast-convert") : NULL;
  IrInstr *sign = bits ? splat(b, &x->shape, kt, ldexp(1, ir_type_bits(vt) - 1)) : NULL;
  IrInstr *flip_sign = sign ? binary(b, IR_OP_XOR, sign, bits, "xor") : NULL;
  IrInstr *flip_all = flip_sign ? unary(b, IR_OP_NOT, bits, kt, "not") : NULL;
  return flip_all ? select3(b, neg, flip_all, flip_sign) : NULL;
}

/* XLA's PackNumpySortPairs: the synthetic keys, and (key's bits << value width) | value's bits as
 * the payload. */
static IrInstr *pack_pairs(Build *b, IrInstr *keys, IrInstr *values, const SortAnalysis *a, IrInstr **synth) {
  IrType ku = unsigned_of_bits(ir_type_bits(keys->shape.type));
  *synth = numpy_key(b, keys, ku);
  IrInstr *vu = *synth ? unary(b, IR_OP_BITCAST_CONVERT, values, unsigned_of_bits(ir_type_bits(values->shape.type)), "bitcast-convert") : NULL;
  if (vu && a->descending) vu = unary(b, IR_OP_NOT, vu, vu->shape.type, "not");
  IrInstr *ko = vu ? unary(b, IR_OP_BITCAST_CONVERT, keys, ku, "bitcast-convert") : NULL;
  IrType pt = a->value_type;
  IrInstr *vp = ko ? unary(b, IR_OP_CONVERT, vu, pt, "convert") : NULL;
  IrInstr *kp = vp ? unary(b, IR_OP_CONVERT, ko, pt, "convert") : NULL;
  IrInstr *shift = kp ? splat(b, &keys->shape, pt, ir_type_bits(values->shape.type)) : NULL;
  IrInstr *high = shift ? binary(b, IR_OP_SHL, kp, shift, "shift-left") : NULL;
  return high ? binary(b, IR_OP_OR, high, vp, "or") : NULL;
}

static IrInstr *gte(Build *b, IrInstr *t, int index) {
  IrInstr *g = add(b, IR_OP_GET_TUPLE_ELEMENT, &t->shape.tuple[index], &t, 1, "get-tuple-element");
  if (g) ir_attr_set_int(g, "index", index);
  return g;
}

/* XLA's UnpackNumpySortPairs: the original keys and values back out of the sorted payload. */
static IrInstr *unpack_pairs(Build *b, IrInstr *call, const IrInstr *sort, const SortAnalysis *a) {
  IrInstr *packed = gte(b, call, 1);
  if (!packed) return NULL;
  const IrShape *ks = &sort->operands[a->key_operand]->shape, *vs = &sort->operands[1 - a->key_operand]->shape;
  IrInstr *shift = splat(b, &packed->shape, packed->shape.type, ir_type_bits(vs->type));
  IrInstr *kh = shift ? binary(b, IR_OP_SHRL, packed, shift, "shift-right-logical") : NULL;
  IrInstr *ku = kh ? unary(b, IR_OP_CONVERT, kh, unsigned_of_bits(ir_type_bits(ks->type)), "convert") : NULL;
  IrInstr *keys = ku ? unary(b, IR_OP_BITCAST_CONVERT, ku, ks->type, "bitcast-convert") : NULL;
  IrInstr *vu = keys ? unary(b, IR_OP_CONVERT, packed, unsigned_of_bits(ir_type_bits(vs->type)), "convert") : NULL;
  if (vu && a->descending) vu = unary(b, IR_OP_NOT, vu, vu->shape.type, "not");
  IrInstr *values = vu ? unary(b, IR_OP_BITCAST_CONVERT, vu, vs->type, "bitcast-convert") : NULL;
  if (!values) return NULL;
  IrInstr *parts[2] = {a->key_operand == 0 ? keys : values, a->key_operand == 0 ? values : keys};
  return add(b, IR_OP_TUPLE, &sort->shape, parts, 2, "tuple");
}

static const char *type_list(const SortAnalysis *a, char *buf, size_t n) {
  if (a->value_type == IR_INVALID) snprintf(buf, n, "%s keys", ir_type_name(a->key_type));
  else snprintf(buf, n, "%s keys with %s values", ir_type_name(a->key_type), ir_type_name(a->value_type));
  return buf;
}

static bool keep(PassContext *cx, const IrInstr *sort, const char *why) {
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = sort->name};
  pass_emit(cx->sink, &d, "%s stays XLA's own sort kernel, not CUB's radix sort: %s", sort->name, why);
  return true;
}

static bool rewrite(IrInstr *sort, PassContext *cx, void *arg, bool *changed) {
  const DeviceProfile *dev = arg;
  IrComputation *cmp = ir_attr_comp(sort, "to_apply");
  const IrShape *s0 = sort->noperands ? &sort->operands[0]->shape : NULL;
  if (sort->noperands != 1 && sort->noperands != 2) return keep(cx, sort, "CUB sorts one or two operands only");
  if (!cmp || !cmp->root) return true;
  int64_t dim = -1;
  if (ir_attr_dims(sort, "dimensions", &dim, 1) != 1 || !s0 || s0->rank < 1 || dim != s0->rank - 1)
    return keep(cx, sort, "it sorts along a dimension that is not the minor one");
  int64_t len = s0->dims[s0->rank - 1];
  if (len == 0) return keep(cx, sort, "its rows are empty: there is nothing to sort");
  int64_t rows = ir_shape_elements(s0) / len;
  const char *which = NULL;
  bool faster = pays(sort, dev, &which);
  char why[320];
  if (!faster) {
    snprintf(why, sizeof why, "%lld row%s of %lld %d-bit elements is too small for CUB to be faster (%s)", (long long)rows,
             rows == 1 ? "" : "s", (long long)len, ir_type_bits(s0->type), which ? which : "XLA's thresholds");
    return keep(cx, sort, why);
  }
  SortAnalysis a = {0};
  const char *no = analyze_sort(sort, cmp, &a);
  if (no) return keep(cx, sort, no);
  char types[96];
  if (!cub_has_kernel(&a)) {
    snprintf(why, sizeof why, "CUB has no kernel for %s", type_list(&a, types, sizeof types));
    return keep(cx, sort, why);
  }
  Build b = {.at = sort};
  IrInstr *keys = sort->operands[a.key_operand];
  IrInstr *values = sort->noperands == 2 ? sort->operands[1 - a.key_operand] : NULL;
  bool pairs = values != NULL;
  if (a.order == ORDER_NUMPY && sort->noperands == 1) {
    pairs = true;
    values = keys;
    keys = numpy_key(&b, keys, a.key_type);
  } else if (a.order == ORDER_NUMPY) {
    IrInstr *synth = NULL;
    values = pack_pairs(&b, keys, values, &a, &synth);
    keys = synth;
  }
  if (b.oom) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  Arena *ar = &sort->parent->module->arena;
  IrShape parts[3];
  int np = 0;
  parts[np++] = keys->shape;
  if (pairs) parts[np++] = values->shape;
  int64_t one = 1;
  parts[np++] = ir_shape_array(ar, IR_U8, 1, &one);
  IrShape cs = {.type = IR_TUPLE};
  cs.ntuple = np;
  cs.tuple = arena_alloc(ar, sizeof(IrShape) * (size_t)np);
  if (!cs.tuple) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(cs.tuple, parts, sizeof(IrShape) * (size_t)np);
  IrInstr *ops[2] = {keys, values};
  IrInstr *call = add(&b, IR_OP_CUSTOM_CALL, &cs, ops, pairs ? 2 : 1, "custom-call");
  if (!call) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  int64_t n = s0->rank ? s0->dims[s0->rank - 1] : 1, batch = n ? ir_shape_elements(&keys->shape) / n : 0;
  char cfg[96];
  ir_attr_set_text(call, "custom_call_target", pairs ? "\"xla.gpu.ext.cub_sort_pairs\"" : "\"xla.gpu.ext.cub_sort_keys\"");
  ir_attr_set_text(call, "api_version", "API_VERSION_TYPED_FFI");
  snprintf(cfg, sizeof cfg, "{descending = %s, batch_size = %lld : i64}", a.descending ? "true" : "false", (long long)batch);
  ir_attr_set_text(call, "backend_config", cfg);
  IrInstr *repl;
  if (!pairs) repl = gte(&b, call, 0);
  else if (a.order == ORDER_NUMPY && sort->noperands == 1) repl = gte(&b, call, 1);
  else if (a.order == ORDER_NUMPY) repl = unpack_pairs(&b, call, sort, &a);
  else {
    IrInstr *g0 = gte(&b, call, a.key_operand == 1 ? 1 : 0), *g1 = g0 ? gte(&b, call, a.key_operand == 1 ? 0 : 1) : NULL;
    IrInstr *tp[2] = {g0, g1};
    repl = g1 ? add(&b, IR_OP_TUPLE, &sort->shape, tp, 2, "tuple") : NULL;
  }
  if (!repl || b.oom) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  char sname[256];
  snprintf(sname, sizeof sname, "%s", sort->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = sname, .consumer = call->name,
                    .result = call->name, .accepted = true};
  pass_metric(&d, "rows", (double)batch);
  pass_metric(&d, "row_length", (double)n);
  simp_replace(sort, repl);
  pass_emit(cx->sink, &d,
            "%s becomes %s, CUB's radix sort of %s (%lld row%s of %lld, %s%s): faster than XLA's own sort kernel at "
            "this size by %s; its scratch buffer's size is CUB's, set on the device after fusion",
            sname, call->name, type_list(&a, types, sizeof types), (long long)batch, batch == 1 ? "" : "s", (long long)n,
            a.descending ? "descending" : "ascending",
            a.order == ORDER_NUMPY ? (sort->noperands == 2 ? ", NumPy's order: keys synthesized, key and index packed"
                                                           : ", NumPy's order: keys synthesized")
                                   : "",
            which);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (!cx->device || !cx->device->is_gpu) return true; /* XLA:GPU's rewrite: nothing for the host */
  return simp_rewrite_each(m, cx, IR_OP_SORT, rewrite, (void *)cx->device, false, changed);
}

const Pass pass_sort_rewriter = {
    "sort-rewriter",
    "a sort CUB's radix sort does faster on this GPU becomes a call to CUB, xla.gpu.ext.cub_sort_pairs or _keys "
    "(XLA:GPU's SortRewriter)",
    run,
};

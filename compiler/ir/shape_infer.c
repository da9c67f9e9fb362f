/* shape_infer.c — HLO's shape rules, one instruction at a time.
 *
 * Used by the verifier (every instruction's declared shape must equal the inferred one), by the
 * .fx lowering and by the passes that build instructions.  The rules follow XLA's
 * ShapeInference: elementwise ops need operands of identical dimensions (HLO has no implicit
 * broadcasting), compare gives pred, reduce drops its dimensions, dot keeps batch, then lhs free,
 * then rhs free dimensions, convolution places its dimensions by dim_labels, and so on.  Where
 * the result cannot be derived (custom-call, collectives, the output dimensions of broadcast or
 * reshape), the declared shape is taken after checking what can be checked.
 *
 * Layouts are not inferred: the result carries the declared layout when dims agree. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "verify.h"

static bool ierr(const IrInstr *i, FxError *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool ierr(const IrInstr *i, FxError *err, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *file = i->loc.file ? i->loc.file : (i->parent && i->parent->module ? i->parent->module->source_file : NULL);
  return fx_error_set(err, file, i->loc.line, i->loc.col, "'%%%s': %s", i->name, msg);
}

static const char *shp(const IrShape *s, char *buf, size_t n) {
  ir_shape_format(s, false, buf, n);
  return buf;
}

static const IrShape *opsh(const IrInstr *i, int k) { return &i->operands[k]->shape; }

/* The declared shape, deep-copied. */
static bool declared(const IrInstr *i, IrShape *out, Arena *a) {
  ir_shape_copy(a, out, &i->shape);
  return true;
}

/* An array shape with i's declared layout when the rank matches, else the default layout. */
static bool make_array(const IrInstr *i, IrType t, int rank, const int64_t *dims, IrShape *out, Arena *a) {
  *out = ir_shape_array(a, t, rank, dims);
  if (rank > 0 && (!out->dims || !out->minor_to_major)) return false;
  if (i->shape.type != IR_TUPLE && i->shape.rank == rank) {
    out->has_layout = i->shape.has_layout;
    if (i->shape.minor_to_major && rank > 0) memcpy(out->minor_to_major, i->shape.minor_to_major, sizeof(int) * (size_t)rank);
    out->layout_extra = i->shape.layout_extra ? arena_strdup(a, i->shape.layout_extra) : NULL;
  }
  return true;
}

static bool need_array(const IrInstr *i, int k, FxError *err) {
  if (!ir_shape_is_array(opsh(i, k)))
    return ierr(i, err, "operand %d ('%%%s') of %s must be an array, not a %s", k, i->operands[k]->name, ir_op_name(i->op),
                opsh(i, k)->type == IR_TUPLE ? "tuple" : "token");
  return true;
}

static bool need_operands(const IrInstr *i, int lo, int hi, FxError *err) {
  if (i->noperands < lo || (hi >= 0 && i->noperands > hi)) {
    if (lo == hi) return ierr(i, err, "%s takes %d operand%s, not %d", ir_op_name(i->op), lo, lo == 1 ? "" : "s", i->noperands);
    if (hi < 0) return ierr(i, err, "%s takes at least %d operands, not %d", ir_op_name(i->op), lo, i->noperands);
    return ierr(i, err, "%s takes %d to %d operands, not %d", ir_op_name(i->op), lo, hi, i->noperands);
  }
  for (int k = 0; k < i->noperands; k++)
    if (!i->operands[k]) return ierr(i, err, "operand %d is missing", k);
  return true;
}

/* Reads an integer list attribute; `need` >= 0 demands that many entries. */
static int dims_attr(const IrInstr *i, const char *key, int64_t *v, int max, bool required, FxError *err, bool *ok) {
  *ok = true;
  const char *t = ir_attr_text(i, key);
  if (!t) {
    if (required) *ok = ierr(i, err, "%s needs the attribute '%s'", ir_op_name(i->op), key);
    return 0;
  }
  int n = ir_attr_dims(i, key, v, max);
  if (n < 0) *ok = ierr(i, err, "malformed %s={...}: '%s'", key, t);
  return n;
}

static bool check_dim_index(const IrInstr *i, const char *what, int64_t d, int rank, FxError *err) {
  if (d < 0 || d >= rank) return ierr(i, err, "%s %" PRId64 " is out of range for rank %d", what, d, rank);
  return true;
}

/* Called computation checks: n parameters of the given shapes (compared without layouts). */
static bool check_called(const IrInstr *i, const char *key, const IrComputation *c, int nparams, const IrShape *const *params,
                         FxError *err) {
  char b1[200], b2[200];
  if (!c) return ierr(i, err, "%s needs a computation in '%s'", ir_op_name(i->op), key);
  if (!c->root) return ierr(i, err, "computation '%%%s' has no root", c->name);
  if (c->nparams != nparams)
    return ierr(i, err, "%s=%%%s takes %d parameter%s but %s passes %d", key, c->name, c->nparams, c->nparams == 1 ? "" : "s",
                ir_op_name(i->op), nparams);
  for (int k = 0; k < nparams; k++) {
    if (!c->params[k]) return ierr(i, err, "computation '%%%s' lacks parameter %d", c->name, k);
    if (!ir_shape_equal(&c->params[k]->shape, params[k]))
      return ierr(i, err, "parameter %d of %s=%%%s is %s but %s passes %s", k, key, c->name, shp(&c->params[k]->shape, b1, sizeof b1),
                  ir_op_name(i->op), shp(params[k], b2, sizeof b2));
  }
  return true;
}

/* A reducer (reduce, reduce-window, scatter, all-reduce): 2n scalar parameters of the given
 * types, returning one scalar (n == 1) or a tuple of n scalars. */
/* `tuple1`: a reducer of one value may return it in a 1-tuple (reduce and reduce-window). */
static bool check_reducer(const IrInstr *i, const char *key, const IrType *types, int n, bool tuple1, Arena *a, FxError *err) {
  IrComputation *c = ir_attr_comp(i, key);
  if (!c) return ierr(i, err, "%s needs a computation in '%s'", ir_op_name(i->op), key);
  const IrShape *ps[2 * 16] = {0};
  IrShape sc[16];
  if (n > 16) return true;
  for (int k = 0; k < n; k++) sc[k] = ir_shape_scalar(types[k]);
  for (int k = 0; k < n; k++) ps[k] = ps[n + k] = &sc[k];
  if (!check_called(i, key, c, 2 * n, ps, err)) return false;
  char b1[200];
  const IrShape *r = &c->root->shape;
  bool ok;
  if (n == 1 && !(tuple1 && r->type == IR_TUPLE)) {
    ok = ir_shape_equal(r, &sc[0]);
  } else {
    ok = r->type == IR_TUPLE && r->ntuple == n;
    for (int k = 0; ok && k < n; k++) ok = ir_shape_equal(&r->tuple[k], &sc[k]);
  }
  (void)a;
  if (!ok) return ierr(i, err, "%s=%%%s returns %s, not the reduced element type", key, c->name, shp(r, b1, sizeof b1));
  return true;
}

static bool same_dims_all(const IrInstr *i, int from, int to, FxError *err) {
  char b1[200], b2[200];
  for (int k = from + 1; k < to; k++)
    if (!ir_shape_same_dims(opsh(i, from), opsh(i, k)))
      return ierr(i, err, "operands of %s have different dimensions: %s and %s", ir_op_name(i->op), shp(opsh(i, from), b1, sizeof b1),
                  shp(opsh(i, k), b2, sizeof b2));
  return true;
}

/* ---------- window attribute (parsed by ir_attr_window) ---------- */

static bool parse_window(const IrInstr *i, int rank, IrWindow *w, FxError *err) {
  char why[400];
  return ir_attr_window(i, rank, w, why, sizeof why) || ierr(i, err, "%s", why);
}

/* Attribute values are untrusted: sizes are computed with overflow checks. */
static bool mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static bool add_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* Output size of window dimension k over an input of size `in`; -1 when the arithmetic overflows. */
static int64_t window_out(int64_t in, const IrWindow *w, int k) {
  int64_t dilated_in = 0, padded, dilated_win = 0;
  if (in > 0 && (!mul_ok(in - 1, w->lhs_dilate[k], &dilated_in) || !add_ok(dilated_in, 1, &dilated_in))) return -1;
  if (!add_ok(dilated_in, w->pad_lo[k], &padded) || !add_ok(padded, w->pad_hi[k], &padded)) return -1;
  if (w->size[k] > 0 && (!mul_ok(w->size[k] - 1, w->rhs_dilate[k], &dilated_win) || !add_ok(dilated_win, 1, &dilated_win))) return -1;
  if (padded < dilated_win) return 0;
  return (padded - dilated_win) / w->stride[k] + 1;
}

/* ---------- per-opcode rules ---------- */

static bool infer_elementwise(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  const IrOpInfo *info = ir_op_info(i->op);
  if (!need_operands(i, info->arity, info->arity, err)) return false;
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  const IrShape *s0 = opsh(i, 0);
  IrType t = s0->type;
  if (i->op == IR_OP_SELECT) {
    const IrShape *pr = opsh(i, 0), *x = opsh(i, 1), *y = opsh(i, 2);
    if (pr->type != IR_PRED) return ierr(i, err, "select's predicate must be pred, not %s", ir_type_name(pr->type));
    if (!ir_shape_equal(x, y))
      return ierr(i, err, "select's branches differ: %s and %s", shp(x, b1, sizeof b1), shp(y, b2, sizeof b2));
    if (pr->rank != 0 && !ir_shape_same_dims(pr, x))
      return ierr(i, err, "select's predicate %s does not match its branches %s", shp(pr, b1, sizeof b1), shp(x, b2, sizeof b2));
    return make_array(i, x->type, x->rank, x->dims, out, a);
  }
  if (i->op == IR_OP_CLAMP) {
    const IrShape *lo = opsh(i, 0), *x = opsh(i, 1), *hi = opsh(i, 2);
    for (int k = 0; k < 3; k += 2) {
      const IrShape *b = k ? hi : lo;
      if (b->type != x->type) return ierr(i, err, "clamp bounds are %s but the operand is %s", ir_type_name(b->type), ir_type_name(x->type));
      if (b->rank != 0 && !ir_shape_same_dims(b, x))
        return ierr(i, err, "clamp bound %s does not match the operand %s", shp(b, b1, sizeof b1), shp(x, b2, sizeof b2));
    }
    return make_array(i, x->type, x->rank, x->dims, out, a);
  }
  if (!same_dims_all(i, 0, i->noperands, err)) return false;
  for (int k = 1; k < i->noperands; k++)
    if (opsh(i, k)->type != t && i->op != IR_OP_COMPLEX)
      return ierr(i, err, "operands of %s have different element types: %s and %s", ir_op_name(i->op), ir_type_name(t),
                  ir_type_name(opsh(i, k)->type));
  IrType rt = t;
  switch (i->op) {
  case IR_OP_COMPARE:
  case IR_OP_IS_FINITE:
    rt = IR_PRED;
    break;
  case IR_OP_CONVERT:
  case IR_OP_REDUCE_PRECISION:
    rt = i->op == IR_OP_CONVERT ? i->shape.type : t;
    if (i->op == IR_OP_REDUCE_PRECISION) {
      /* XLA's InferReducePrecisionShape: exponent_bits >= 1, mantissa_bits >= 0 (the interpreter
         and the generated code shift by these) */
      int64_t eb = 0, mb = -1;
      if (!ir_attr_int(i, "exponent_bits", &eb) || !ir_attr_int(i, "mantissa_bits", &mb))
        return ierr(i, err, "reduce-precision needs the attributes 'exponent_bits' and 'mantissa_bits'");
      if (eb < 1) return ierr(i, err, "exponent_bits=%" PRId64 " must be at least 1", eb);
      if (mb < 0) return ierr(i, err, "mantissa_bits=%" PRId64 " must not be negative", mb);
    }
    break;
  case IR_OP_BITCAST_CONVERT: {
    /* XLA's ShapeInference::InferBitcastConvertShape, by bit width (s4 is 4 bits, though stored
     * in a byte): the same width keeps the dimensions; a wider input gains a minor dimension of
     * from/to elements, a narrower one loses its minor dimension, which must be to/from. */
    int from = ir_type_bits(t), to = ir_type_bits(i->shape.type);
    if (from == to) {
      rt = i->shape.type;
      break;
    }
    if (!from || !to || (from > to ? from % to : to % from))
      return ierr(i, err, "bitcast-convert from %s to %s: the bit widths do not divide", shp(s0, b1, sizeof b1), ir_type_name(i->shape.type));
    int64_t d[IR_MAX_RANK];
    int r = s0->rank;
    if (r) memcpy(d, s0->dims, sizeof(int64_t) * (size_t)r); /* a scalar has no dims array */
    if (from > to) {
      if (r >= IR_MAX_RANK) return ierr(i, err, "bitcast-convert to a narrower type needs a dimension more than %d", IR_MAX_RANK);
      d[r++] = from / to;
    } else if (r == 0 || d[r - 1] != to / from) {
      return ierr(i, err, "bitcast-convert from %s to %s: its last dimension must be %d, the ratio of the bit widths", shp(s0, b1, sizeof b1),
                  ir_type_name(i->shape.type), to / from);
    } else {
      r--;
    }
    (void)b2;
    return make_array(i, i->shape.type, r, d, out, a);
  }
  case IR_OP_COMPLEX:
    if (t != opsh(i, 1)->type) return ierr(i, err, "complex needs operands of one type");
    rt = t == IR_F64 ? IR_C128 : IR_C64;
    break;
  case IR_OP_REAL:
  case IR_OP_IMAG:
    rt = t == IR_C128 ? IR_F64 : t == IR_C64 ? IR_F32 : t;
    break;
  case IR_OP_ABS:
    rt = t == IR_C128 ? IR_F64 : t == IR_C64 ? IR_F32 : t;
    break;
  default:
    break;
  }
  if (i->op == IR_OP_COMPARE) {
    const char *d = ir_compare_direction(i);
    if (!d) return ierr(i, err, "compare needs the attribute 'direction'");
    if (strcmp(d, "EQ") && strcmp(d, "NE") && strcmp(d, "LT") && strcmp(d, "LE") && strcmp(d, "GT") && strcmp(d, "GE"))
      return ierr(i, err, "unknown comparison direction '%s' (expected EQ, NE, LT, LE, GT or GE)", d);
  }
  return make_array(i, rt, s0->rank, s0->dims, out, a);
}

/* XLA's ShapeVerifier::HandleBroadcast: operand dimension k goes to result dimension
 * dimensions[k], of the same size. The dimensions need not increase (a broadcast may also
 * transpose); XLA's verifier does not ask it, only its client-side builder does. */
static bool infer_broadcast(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 1, 1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0), *o = &i->shape;
  if (!ir_shape_is_array(o)) return ierr(i, err, "broadcast must produce an array");
  int64_t d[IR_MAX_RANK];
  bool ok;
  /* XLA's parser: `dimensions` may be left out when the operand is a scalar (it is then {}). */
  int n = dims_attr(i, "dimensions", d, IR_MAX_RANK, in->rank > 0, err, &ok);
  if (!ok) return false;
  if (n != in->rank)
    return ierr(i, err, "broadcast of a rank-%d operand needs %d entr%s in dimensions, not %d", in->rank, in->rank,
                in->rank == 1 ? "y" : "ies", n);
  for (int k = 0; k < n; k++) {
    if (!check_dim_index(i, "broadcast dimension", d[k], o->rank, err)) return false;
    if (o->dims[d[k]] != in->dims[k])
      return ierr(i, err, "broadcast maps operand dimension %d (size %" PRId64 ") to result dimension %" PRId64 " (size %" PRId64 "): %s -> %s",
                  k, in->dims[k], d[k], o->dims[d[k]], shp(in, b1, sizeof b1), shp(o, b2, sizeof b2));
  }
  return make_array(i, in->type, o->rank, o->dims, out, a);
}

static bool infer_reshape(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 1, 1, err)) return false;
  const IrShape *in = opsh(i, 0), *o = &i->shape;
  if (i->op == IR_OP_BITCAST) return declared(i, out, a); /* layout-level reinterpretation */
  if (!need_array(i, 0, err)) return false;
  if (!ir_shape_is_array(o)) return ierr(i, err, "reshape must produce an array");
  if (ir_shape_elements(in) != ir_shape_elements(o))
    return ierr(i, err, "reshape changes the number of elements: %s (%" PRId64 ") -> %s (%" PRId64 ")", shp(in, b1, sizeof b1),
                ir_shape_elements(in), shp(o, b2, sizeof b2), ir_shape_elements(o));
  return make_array(i, in->type, o->rank, o->dims, out, a);
}

static bool infer_transpose(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, 1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0);
  int64_t d[IR_MAX_RANK], od[IR_MAX_RANK];
  bool ok, seen[IR_MAX_RANK] = {0};
  int n = dims_attr(i, "dimensions", d, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  if (n != in->rank) return ierr(i, err, "transpose of a rank-%d operand needs %d dimensions, not %d", in->rank, in->rank, n);
  for (int k = 0; k < n; k++) {
    if (!check_dim_index(i, "transpose dimension", d[k], in->rank, err)) return false;
    if (seen[d[k]]) return ierr(i, err, "transpose dimensions are not a permutation");
    seen[d[k]] = true;
    od[k] = in->dims[d[k]];
  }
  return make_array(i, in->type, n, od, out, a);
}

static bool infer_slice(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, 1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0);
  int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sr[IR_MAX_RANK], od[IR_MAX_RANK];
  const char *t = ir_attr_text(i, "slice");
  if (!t) return ierr(i, err, "slice needs the attribute 'slice'");
  int n = ir_attr_slice(i, st, li, sr, IR_MAX_RANK);
  if (n < 0) return ierr(i, err, "malformed slice={...}: '%s'", t);
  if (n != in->rank) return ierr(i, err, "slice of a rank-%d operand needs %d ranges, not %d", in->rank, in->rank, n);
  for (int k = 0; k < n; k++) {
    if (sr[k] <= 0) return ierr(i, err, "slice stride %" PRId64 " in dimension %d must be positive", sr[k], k);
    if (st[k] < 0 || st[k] > li[k] || li[k] > in->dims[k])
      return ierr(i, err, "slice range [%" PRId64 ":%" PRId64 ":%" PRId64 "] is out of bounds for dimension %d of size %" PRId64, st[k], li[k],
                  sr[k], k, in->dims[k]);
    od[k] = li[k] == st[k] ? 0 : (li[k] - st[k] - 1) / sr[k] + 1;
  }
  return make_array(i, in->type, n, od, out, a);
}

static bool scalar_ints(const IrInstr *i, int from, int to, FxError *err) {
  for (int k = from; k < to; k++) {
    const IrShape *s = opsh(i, k);
    if (!ir_shape_is_scalar(s) || !ir_type_is_int(s->type))
      return ierr(i, err, "start index operand %d of %s must be an integer scalar", k, ir_op_name(i->op));
  }
  return true;
}

static bool infer_dynamic_slice(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, -1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0);
  if (i->noperands != 1 + in->rank && !(i->noperands == 2 && opsh(i, 1)->rank == 1))
    return ierr(i, err, "dynamic-slice of a rank-%d operand takes %d start indices, not %d", in->rank, in->rank, i->noperands - 1);
  if (i->noperands == 1 + in->rank && !scalar_ints(i, 1, i->noperands, err)) return false;
  int64_t sz[IR_MAX_RANK];
  bool ok;
  int n = dims_attr(i, "dynamic_slice_sizes", sz, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  if (n != in->rank) return ierr(i, err, "dynamic_slice_sizes has %d entries for a rank-%d operand", n, in->rank);
  for (int k = 0; k < n; k++)
    if (sz[k] < 0 || sz[k] > in->dims[k])
      return ierr(i, err, "dynamic slice size %" PRId64 " exceeds dimension %d of size %" PRId64, sz[k], k, in->dims[k]);
  return make_array(i, in->type, n, sz, out, a);
}

static bool infer_dus(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 2, -1, err) || !need_array(i, 0, err) || !need_array(i, 1, err)) return false;
  const IrShape *in = opsh(i, 0), *up = opsh(i, 1);
  if (up->rank != in->rank || up->type != in->type)
    return ierr(i, err, "dynamic-update-slice update %s does not fit the operand %s", shp(up, b1, sizeof b1), shp(in, b2, sizeof b2));
  if (i->noperands != 2 + in->rank && !(i->noperands == 3 && opsh(i, 2)->rank == 1))
    return ierr(i, err, "dynamic-update-slice of a rank-%d operand takes %d start indices, not %d", in->rank, in->rank, i->noperands - 2);
  if (i->noperands == 2 + in->rank && !scalar_ints(i, 2, i->noperands, err)) return false;
  for (int k = 0; k < in->rank; k++)
    if (up->dims[k] > in->dims[k])
      return ierr(i, err, "dynamic-update-slice update %s is larger than the operand %s", shp(up, b1, sizeof b1), shp(in, b2, sizeof b2));
  return make_array(i, in->type, in->rank, in->dims, out, a);
}

static bool infer_concatenate(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 1, -1, err)) return false;
  int64_t d[IR_MAX_RANK];
  bool ok;
  int n = dims_attr(i, "dimensions", d, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  if (n != 1) return ierr(i, err, "concatenate needs exactly one dimension, not %d", n);
  const IrShape *s0 = opsh(i, 0);
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  if (!check_dim_index(i, "concatenate dimension", d[0], s0->rank, err)) return false;
  int64_t od[IR_MAX_RANK];
  memcpy(od, s0->dims, sizeof(int64_t) * (size_t)s0->rank);
  od[d[0]] = 0;
  for (int k = 0; k < i->noperands; k++) {
    const IrShape *s = opsh(i, k);
    bool fits = s->rank == s0->rank && s->type == s0->type;
    for (int j = 0; fits && j < s->rank; j++)
      if (j != d[0] && s->dims[j] != s0->dims[j]) fits = false;
    if (!fits)
      return ierr(i, err, "concatenate operands %s and %s differ outside dimension %" PRId64, shp(s0, b1, sizeof b1), shp(s, b2, sizeof b2),
                  d[0]);
    if (!add_ok(od[d[0]], s->dims[d[0]], &od[d[0]])) return ierr(i, err, "concatenated dimension %" PRId64 " overflows", d[0]);
  }
  return make_array(i, s0->type, s0->rank, od, out, a);
}

static bool infer_pad(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 2, 2, err) || !need_array(i, 0, err) || !need_array(i, 1, err)) return false;
  const IrShape *in = opsh(i, 0), *pv = opsh(i, 1);
  if (pv->rank != 0 || pv->type != in->type) return ierr(i, err, "pad value must be a scalar of type %s", ir_type_name(in->type));
  const char *t = ir_attr_text(i, "padding");
  if (!t) return ierr(i, err, "pad needs the attribute 'padding'");
  int64_t od[IR_MAX_RANK];
  int n = 0;
  const char *q = t;
  while (*q) {
    int64_t v[3] = {0, 0, 0};
    int m = 0;
    for (;;) {
      char *e;
      long long x = strtoll(q, &e, 10);
      if (e == q || m >= 3) return ierr(i, err, "malformed padding '%s'", t);
      v[m++] = x;
      q = e;
      if (*q == '_') {
        q++;
        continue;
      }
      break;
    }
    if (m < 2 || n >= IR_MAX_RANK) return ierr(i, err, "malformed padding '%s'", t);
    if (n < in->rank) {
      if (v[2] < 0) return ierr(i, err, "interior padding must not be negative in '%s'", t);
      int64_t d = in->dims[n], interior = 0, sum, dilated;
      if ((d > 0 && !mul_ok(d - 1, v[2], &interior)) || !add_ok(d, interior, &dilated) || !add_ok(dilated, v[0], &sum) ||
          !add_ok(sum, v[1], &sum))
        return ierr(i, err, "padding '%s' overflows dimension %d", t, n);
      /* Negative padding crops; cropping more than the (dilated) dimension has would only make
         the index arithmetic overflow (-2^63+1 low and 2^63-1 high gives a valid size) */
      if (v[0] < -dilated || v[1] < -dilated)
        return ierr(i, err, "padding '%s' crops more than the %" PRId64 " elements of dimension %d", t, dilated, n);
      od[n] = sum;
      if (od[n] < 0) return ierr(i, err, "padding '%s' makes dimension %d negative", t, n);
    }
    n++;
    if (*q == 'x') q++;
    else if (*q) return ierr(i, err, "malformed padding '%s'", t);
  }
  if (n != in->rank) return ierr(i, err, "padding has %d entries for a rank-%d operand", n, in->rank);
  return make_array(i, in->type, n, od, out, a);
}

static bool infer_reverse(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, 1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0);
  int64_t d[IR_MAX_RANK];
  bool ok;
  int n = dims_attr(i, "dimensions", d, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  for (int k = 0; k < n; k++)
    if (!check_dim_index(i, "reverse dimension", d[k], in->rank, err)) return false;
  return make_array(i, in->type, in->rank, in->dims, out, a);
}

static bool tuple_of(const IrShape *elems, int n, IrShape *out, Arena *a, const IrShape *decl) {
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = n;
  if (n == 0) return true;
  out->tuple = arena_alloc(a, sizeof(IrShape) * (size_t)n);
  if (!out->tuple) return false;
  for (int k = 0; k < n; k++) {
    ir_shape_copy(a, &out->tuple[k], &elems[k]);
    /* Keep the declared element layouts where the dims agree. */
    if (decl && decl->type == IR_TUPLE && k < decl->ntuple && ir_shape_equal(&decl->tuple[k], &elems[k]))
      ir_shape_copy(a, &out->tuple[k], &decl->tuple[k]);
  }
  return true;
}

static bool infer_reduce(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 2, -1, err)) return false;
  if (i->noperands % 2) return ierr(i, err, "reduce takes inputs and as many init values; %d operands is odd", i->noperands);
  int n = i->noperands / 2;
  if (n > 16) return declared(i, out, a);
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  const IrShape *in0 = opsh(i, 0);
  if (!same_dims_all(i, 0, n, err)) return false;
  IrType types[16];
  for (int k = 0; k < n; k++) {
    const IrShape *init = opsh(i, n + k);
    if (init->rank != 0 || init->type != opsh(i, k)->type)
      return ierr(i, err, "init value %d of reduce is %s; it must be a scalar of type %s", k, shp(init, b1, sizeof b1), ir_type_name(opsh(i, k)->type));
    types[k] = opsh(i, k)->type;
  }
  int64_t d[IR_MAX_RANK];
  bool ok, red[IR_MAX_RANK] = {0};
  int nd = dims_attr(i, "dimensions", d, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  for (int k = 0; k < nd; k++) {
    if (!check_dim_index(i, "reduce dimension", d[k], in0->rank, err)) return false;
    if (red[d[k]]) return ierr(i, err, "reduce dimension %" PRId64 " is listed twice", d[k]);
    red[d[k]] = true;
  }
  if (!check_reducer(i, "to_apply", types, n, true, a, err)) return false;
  int64_t od[IR_MAX_RANK];
  int r = 0;
  for (int k = 0; k < in0->rank; k++)
    if (!red[k]) od[r++] = in0->dims[k];
  /* A reducer that returns a tuple, even of one value, makes the reduce's result a tuple (XLA's
   * ShapeInference::InferReduceShape follows to_apply's result). */
  if (n == 1 && ir_attr_comp(i, "to_apply")->root->shape.type != IR_TUPLE) return make_array(i, types[0], r, od, out, a);
  IrShape el[16];
  for (int k = 0; k < n; k++) el[k] = ir_shape_array(a, types[k], r, od);
  (void)b2;
  return tuple_of(el, n, out, a, &i->shape);
}

static bool infer_reduce_window(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200];
  if (!need_operands(i, 2, -1, err)) return false;
  if (i->noperands % 2) return ierr(i, err, "reduce-window takes inputs and as many init values; %d operands is odd", i->noperands);
  int n = i->noperands / 2;
  if (n > 16) return declared(i, out, a);
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  if (!same_dims_all(i, 0, n, err)) return false;
  const IrShape *in0 = opsh(i, 0);
  IrType types[16];
  for (int k = 0; k < n; k++) {
    const IrShape *init = opsh(i, n + k);
    if (init->rank != 0 || init->type != opsh(i, k)->type)
      return ierr(i, err, "init value %d of reduce-window is %s; it must be a scalar of type %s", k, shp(init, b1, sizeof b1),
                  ir_type_name(opsh(i, k)->type));
    types[k] = opsh(i, k)->type;
  }
  IrWindow w;
  if (!parse_window(i, in0->rank, &w, err)) return false;
  if (!check_reducer(i, "to_apply", types, n, true, a, err)) return false;
  int64_t od[IR_MAX_RANK];
  for (int k = 0; k < in0->rank; k++)
    if ((od[k] = window_out(in0->dims[k], &w, k)) < 0) return ierr(i, err, "window sizes overflow in dimension %d", k);
  /* as for reduce: a reducer's 1-tuple makes the result a tuple (InferReduceWindowShape) */
  if (n == 1 && ir_attr_comp(i, "to_apply")->root->shape.type != IR_TUPLE) return make_array(i, types[0], in0->rank, od, out, a);
  IrShape el[16];
  for (int k = 0; k < n; k++) el[k] = ir_shape_array(a, types[k], in0->rank, od);
  return tuple_of(el, n, out, a, &i->shape);
}

static bool infer_dot(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  if (!need_operands(i, 2, 2, err) || !need_array(i, 0, err) || !need_array(i, 1, err)) return false;
  const IrShape *l = opsh(i, 0), *r = opsh(i, 1);
  IrDotDims d;
  if (!ir_dot_dims(i, &d)) return ierr(i, err, "dot has unequal numbers of batch or contracting dimensions on its two sides");
  bool lu[IR_MAX_RANK] = {0}, ru[IR_MAX_RANK] = {0};
  for (int k = 0; k < d.nlhs_batch; k++) {
    if (!check_dim_index(i, "lhs batch dimension", d.lhs_batch[k], l->rank, err) ||
        !check_dim_index(i, "rhs batch dimension", d.rhs_batch[k], r->rank, err))
      return false;
    if (l->dims[d.lhs_batch[k]] != r->dims[d.rhs_batch[k]])
      return ierr(i, err, "dot batch dimensions differ in size: %s and %s", shp(l, b1, sizeof b1), shp(r, b2, sizeof b2));
    if (lu[d.lhs_batch[k]] || ru[d.rhs_batch[k]]) return ierr(i, err, "dot dimension numbers repeat a dimension");
    lu[d.lhs_batch[k]] = ru[d.rhs_batch[k]] = true;
  }
  for (int k = 0; k < d.nlhs_contract; k++) {
    if (!check_dim_index(i, "lhs contracting dimension", d.lhs_contract[k], l->rank, err) ||
        !check_dim_index(i, "rhs contracting dimension", d.rhs_contract[k], r->rank, err))
      return false;
    if (l->dims[d.lhs_contract[k]] != r->dims[d.rhs_contract[k]])
      return ierr(i, err, "dot contracting dimensions differ in size: %s (dimension %" PRId64 ") and %s (dimension %" PRId64 ")",
                  shp(l, b1, sizeof b1), d.lhs_contract[k], shp(r, b2, sizeof b2), d.rhs_contract[k]);
    if (lu[d.lhs_contract[k]] || ru[d.rhs_contract[k]]) return ierr(i, err, "dot dimension numbers repeat a dimension");
    lu[d.lhs_contract[k]] = ru[d.rhs_contract[k]] = true;
  }
  int64_t od[IR_MAX_RANK * 2];
  int n = 0;
  for (int k = 0; k < d.nlhs_batch; k++) od[n++] = l->dims[d.lhs_batch[k]];
  for (int k = 0; k < l->rank; k++)
    if (!lu[k]) od[n++] = l->dims[k];
  for (int k = 0; k < r->rank; k++)
    if (!ru[k]) od[n++] = r->dims[k];
  if (n > IR_MAX_RANK) return ierr(i, err, "dot result has more than %d dimensions", IR_MAX_RANK);
  /* The result type may differ from the operands' (preferred_element_type): take the declared one. */
  IrType t = ir_shape_is_array(&i->shape) ? i->shape.type : l->type;
  return make_array(i, t, n, od, out, a);
}

static bool infer_convolution(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 2, 2, err) || !need_array(i, 0, err) || !need_array(i, 1, err)) return false;
  const IrShape *l = opsh(i, 0), *r = opsh(i, 1);
  IrConvDims cd;
  char why[600];
  if (!ir_conv_dims(i, &cd, why, sizeof why)) return ierr(i, err, "%s", why);
  int ns = cd.nspatial, ln = cd.rank;
  int lb = cd.in_batch, lf = cd.in_feature, ki = cd.k_in, ko = cd.k_out, ob = cd.out_batch, of = cd.out_feature;
  const int *ls = cd.in_spatial, *ks = cd.k_spatial, *os = cd.out_spatial;
  int64_t fgc = 1, bgc = 1;
  if (ir_attr_text(i, "feature_group_count") && !ir_attr_int(i, "feature_group_count", &fgc)) return ierr(i, err, "malformed feature_group_count");
  if (ir_attr_text(i, "batch_group_count") && !ir_attr_int(i, "batch_group_count", &bgc)) return ierr(i, err, "malformed batch_group_count");
  if (fgc <= 0 || bgc <= 0) return ierr(i, err, "group counts must be positive");
  int64_t kin;
  if (!mul_ok(r->dims[ki], fgc, &kin) || l->dims[lf] != kin)
    return ierr(i, err, "convolution input features (%" PRId64 ") must equal kernel input features (%" PRId64 ") x feature_group_count (%" PRId64 ")",
                l->dims[lf], r->dims[ki], fgc);
  if (l->dims[lb] % bgc) return ierr(i, err, "batch (%" PRId64 ") is not divisible by batch_group_count %" PRId64, l->dims[lb], bgc);
  if (r->dims[ko] % bgc)
    return ierr(i, err, "kernel output features (%" PRId64 ") are not divisible by batch_group_count %" PRId64, r->dims[ko], bgc);
  IrWindow w;
  if (!parse_window(i, ns, &w, err)) return false;
  int64_t od[IR_MAX_RANK];
  od[ob] = l->dims[lb] / bgc;
  od[of] = r->dims[ko];
  for (int k = 0; k < ns; k++) {
    if (w.size[k] != r->dims[ks[k]])
      return ierr(i, err, "window size %" PRId64 " differs from the kernel's spatial dimension %d (%" PRId64 ")", w.size[k], k, r->dims[ks[k]]);
    if ((od[os[k]] = window_out(l->dims[ls[k]], &w, k)) < 0) return ierr(i, err, "window sizes overflow in spatial dimension %d", k);
  }
  IrType t = ir_shape_is_array(&i->shape) ? i->shape.type : l->type;
  return make_array(i, t, ln, od, out, a);
}

/* ---------- gather and scatter ----------
 *
 * Their dimension numbers are indices into four different shapes; the interpreter and the emitter
 * index arrays with them unchecked, so every one is checked here first, by XLA's rules
 * (ShapeInference::InferGatherShape / InferScatterShape and their Validate*DimensionNumbers, with
 * the batching dimensions of newer XLA): each list in range, the ones XLA keeps sorted sorted,
 * none repeated, the lists that partition the operand's dimensions disjoint and complete, and the
 * sizes that must agree equal. The result shape is then computed, not taken as declared. */

/* A dimension-number list: every entry in [0, bound), none repeated, ascending when `sorted`. */
static bool dim_list(const IrInstr *i, const char *key, const int64_t *v, int n, int bound, bool sorted, FxError *err) {
  for (int k = 0; k < n; k++) {
    if (v[k] < 0 || v[k] >= bound)
      return ierr(i, err, "%s entry %" PRId64 " is out of range [0, %d)", key, v[k], bound);
    for (int j = 0; j < k; j++)
      if (v[j] == v[k]) return ierr(i, err, "%s repeats dimension %" PRId64, key, v[k]);
    if (sorted && k > 0 && v[k - 1] > v[k]) return ierr(i, err, "%s must be ascending", key);
  }
  return true;
}

/* A list attribute that may be absent (then empty). */
static bool opt_dims(const IrInstr *i, const char *key, int64_t *v, int *n, FxError *err) {
  bool ok;
  *n = dims_attr(i, key, v, IR_MAX_RANK, false, err, &ok);
  return ok;
}

/* index_vector_dim in [0, rank(indices)] (rank means an implicit trailing 1); fills the indices'
 * dimensions with that 1 added. */
static bool index_vector_dim(const IrInstr *i, const IrShape *ix, int64_t *ivd, int64_t *exp, int *nexp, FxError *err) {
  *ivd = ix->rank;
  if (ir_attr_text(i, "index_vector_dim") && !ir_attr_int(i, "index_vector_dim", ivd))
    return ierr(i, err, "malformed index_vector_dim");
  if (*ivd < 0 || *ivd > ix->rank)
    return ierr(i, err, "index_vector_dim=%" PRId64 " is out of range [0, %d] for indices of rank %d", *ivd, ix->rank, ix->rank);
  if (ix->rank >= IR_MAX_RANK && *ivd == ix->rank) return ierr(i, err, "indices of rank %d have no room for an index vector dimension", ix->rank);
  if (ix->rank) memcpy(exp, ix->dims, sizeof(int64_t) * (size_t)ix->rank); /* scalar indices have no dims array */
  *nexp = ix->rank;
  if (*ivd == ix->rank) exp[(*nexp)++] = 1;
  return true;
}

/* Batching dimensions: operand-side (sorted, in the operand) and indices-side (in the indices, not
 * the index vector dimension), as many of each, of equal sizes. */
static bool batching_dims(const IrInstr *i, const char *okey, const int64_t *ob, int nob, const char *ikey, const int64_t *ib, int nib,
                          const IrShape *operand, const int64_t *exp, int nexp, int64_t ivd, FxError *err) {
  if (!dim_list(i, okey, ob, nob, operand->rank, true, err) || !dim_list(i, ikey, ib, nib, nexp, false, err)) return false;
  if (nob != nib) return ierr(i, err, "%s has %d entries but %s has %d", okey, nob, ikey, nib);
  for (int k = 0; k < nib; k++) {
    if (ib[k] == ivd) return ierr(i, err, "%s must not contain index_vector_dim=%" PRId64, ikey, ivd);
    if (operand->dims[ob[k]] != exp[ib[k]])
      return ierr(i, err, "batching dimension %" PRId64 " of the operand has size %" PRId64 " but dimension %" PRId64 " of the indices has %" PRId64,
                  ob[k], operand->dims[ob[k]], ib[k], exp[ib[k]]);
  }
  return true;
}

static bool infer_gather(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 2, 2, err) || !need_array(i, 0, err) || !need_array(i, 1, err)) return false;
  const IrShape *in = opsh(i, 0), *ix = opsh(i, 1);
  if (!ir_type_is_int(ix->type)) return ierr(i, err, "gather indices must be integers, not %s", ir_type_name(ix->type));
  int64_t ss[IR_MAX_RANK], off[IR_MAX_RANK], coll[IR_MAX_RANK], smap[IR_MAX_RANK], ob[IR_MAX_RANK], ib[IR_MAX_RANK];
  int64_t ivd, exp[IR_MAX_RANK];
  int noff, ncoll, nsm, nob, nib, nexp;
  bool ok;
  int nss = dims_attr(i, "slice_sizes", ss, IR_MAX_RANK, true, err, &ok);
  if (!ok) return false;
  if (nss != in->rank) return ierr(i, err, "slice_sizes has %d entries for a rank-%d operand", nss, in->rank);
  for (int k = 0; k < nss; k++)
    if (ss[k] < 0 || ss[k] > in->dims[k]) return ierr(i, err, "slice size %" PRId64 " exceeds dimension %d of size %" PRId64, ss[k], k, in->dims[k]);
  if (!opt_dims(i, "offset_dims", off, &noff, err) || !opt_dims(i, "collapsed_slice_dims", coll, &ncoll, err) ||
      !opt_dims(i, "start_index_map", smap, &nsm, err) || !opt_dims(i, "operand_batching_dims", ob, &nob, err) ||
      !opt_dims(i, "start_indices_batching_dims", ib, &nib, err))
    return false;
  if (!index_vector_dim(i, ix, &ivd, exp, &nexp, err)) return false;
  int batch = nexp - 1;
  const IrShape *o = &i->shape;
  if (!ir_shape_is_array(o) || o->rank != batch + noff)
    return ierr(i, err, "gather result must have %d dimensions (%d batch + %d offset), not %d", batch + noff, batch, noff, o->rank);
  if (o->type != in->type) return ierr(i, err, "gather result type %s differs from the operand's %s", ir_type_name(o->type), ir_type_name(in->type));
  if (!dim_list(i, "offset_dims", off, noff, batch + noff, true, err) || !dim_list(i, "collapsed_slice_dims", coll, ncoll, in->rank, true, err) ||
      !dim_list(i, "start_index_map", smap, nsm, in->rank, false, err) ||
      !batching_dims(i, "operand_batching_dims", ob, nob, "start_indices_batching_dims", ib, nib, in, exp, nexp, ivd, err))
    return false;
  if (nsm != exp[ivd])
    return ierr(i, err, "start_index_map has %d entries but dimension index_vector_dim=%" PRId64 " of the indices has size %" PRId64, nsm, ivd, exp[ivd]);
  for (int k = 0; k < nob; k++) {
    if (ir_dims_contain(coll, ncoll, ob[k])) return ierr(i, err, "dimension %" PRId64 " is both collapsed and a batching dimension", ob[k]);
  }
  if (noff + ncoll + nob != in->rank)
    return ierr(i, err, "offset_dims (%d), collapsed_slice_dims (%d) and operand_batching_dims (%d) must cover the %d operand dimensions", noff,
                ncoll, nob, in->rank);
  /* 1 or 0, as XLA's ShapeInference::InferGatherShape and its verifier take them (0 even where
     the operand's dimension is not empty; `run` refuses such a gather by name, see
     ir_gather_uncomputed, as the interpreter would read past the operand). XLA's
     rules also let a batching dimension be in start_index_map (StableHLO's do not): taken, and
     refused by `run` the same way. */
  for (int k = 0; k < ncoll; k++)
    if (ss[coll[k]] > 1) return ierr(i, err, "collapsed dimension %" PRId64 " has slice size %" PRId64 "; it must be 1 or 0", coll[k], ss[coll[k]]);
  for (int k = 0; k < nob; k++)
    if (ss[ob[k]] > 1) return ierr(i, err, "batching dimension %" PRId64 " has slice size %" PRId64 "; it must be 1 or 0", ob[k], ss[ob[k]]);
  /* the result: offset dims take the kept slice sizes in order, the others the indices' dims */
  int64_t od[IR_MAX_RANK];
  int seen_off = 0, seen_idx = 0;
  for (int d = 0; d < batch + noff; d++) {
    if (ir_dims_contain(off, noff, d)) {
      while (ir_dims_contain(coll, ncoll, seen_off) || ir_dims_contain(ob, nob, seen_off)) seen_off++;
      od[d] = ss[seen_off++];
    } else {
      if (seen_idx == ivd) seen_idx++;
      od[d] = exp[seen_idx++];
    }
  }
  return make_array(i, in->type, batch + noff, od, out, a);
}

static bool infer_scatter(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 3, -1, err)) return false;
  if ((i->noperands - 1) % 2) return ierr(i, err, "scatter takes N operands, indices and N updates; %d operands do not fit", i->noperands);
  int n = (i->noperands - 1) / 2;
  if (n > 16) return ierr(i, err, "scatter of %d operands is not supported (at most 16)", n);
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  if (!ir_type_is_int(opsh(i, n)->type)) return ierr(i, err, "scatter indices must be integers");
  IrType types[16];
  IrShape el[16];
  for (int k = 0; k < n; k++) {
    types[k] = opsh(i, k)->type;
    el[k] = *opsh(i, k);
    if (opsh(i, n + 1 + k)->type != types[k]) return ierr(i, err, "scatter update %d has type %s, not %s", k, ir_type_name(opsh(i, n + 1 + k)->type), ir_type_name(types[k]));
  }
  if (!same_dims_all(i, 0, n, err)) return false;
  /* dimension numbers, against operand 0, the indices and every update */
  const IrShape *in = opsh(i, 0), *ix = opsh(i, n);
  int64_t uw[IR_MAX_RANK], iw[IR_MAX_RANK], sd[IR_MAX_RANK], ob[IR_MAX_RANK], ib[IR_MAX_RANK], ivd, exp[IR_MAX_RANK];
  int nuw, niw, nsd, nob, nib, nexp;
  if (!opt_dims(i, "update_window_dims", uw, &nuw, err) || !opt_dims(i, "inserted_window_dims", iw, &niw, err) ||
      !opt_dims(i, "scatter_dims_to_operand_dims", sd, &nsd, err) || !opt_dims(i, "input_batching_dims", ob, &nob, err) ||
      !opt_dims(i, "scatter_indices_batching_dims", ib, &nib, err))
    return false;
  if (!index_vector_dim(i, ix, &ivd, exp, &nexp, err)) return false;
  if (!dim_list(i, "inserted_window_dims", iw, niw, in->rank, true, err) ||
      !dim_list(i, "scatter_dims_to_operand_dims", sd, nsd, in->rank, false, err) ||
      !batching_dims(i, "input_batching_dims", ob, nob, "scatter_indices_batching_dims", ib, nib, in, exp, nexp, ivd, err))
    return false;
  if (nsd != exp[ivd])
    return ierr(i, err, "scatter_dims_to_operand_dims has %d entries but dimension index_vector_dim=%" PRId64 " of the indices has size %" PRId64,
                nsd, ivd, exp[ivd]);
  for (int k = 0; k < nob; k++) {
    if (ir_dims_contain(iw, niw, ob[k])) return ierr(i, err, "dimension %" PRId64 " is both an inserted window and a batching dimension", ob[k]);
    if (ir_dims_contain(sd, nsd, ob[k])) return ierr(i, err, "batching dimension %" PRId64 " must not be in scatter_dims_to_operand_dims", ob[k]);
  }
  if (nuw + niw + nob != in->rank)
    return ierr(i, err, "update_window_dims (%d), inserted_window_dims (%d) and input_batching_dims (%d) must cover the %d operand dimensions", nuw,
                niw, nob, in->rank);
  /* the operand dims the window covers, in order (not inserted, not batching) */
  int64_t wmax[IR_MAX_RANK];
  int nw = 0;
  for (int d = 0; d < in->rank; d++)
    if (!ir_dims_contain(iw, niw, d) && !ir_dims_contain(ob, nob, d)) wmax[nw++] = in->dims[d];
  for (int k = 0; k < n; k++) {
    const IrShape *up = opsh(i, n + 1 + k);
    if (up->rank != nexp - 1 + nuw)
      return ierr(i, err, "scatter update %d must have rank %d (%d scatter + %d window dimensions), not %d", k, nexp - 1 + nuw, nexp - 1, nuw, up->rank);
    if (!dim_list(i, "update_window_dims", uw, nuw, up->rank, true, err)) return false;
    for (int w = 0; w < nuw; w++)
      if (up->dims[uw[w]] > wmax[w])
        return ierr(i, err, "scatter update %d: window dimension %" PRId64 " has size %" PRId64 ", more than the operand's %" PRId64, k, uw[w],
                    up->dims[uw[w]], wmax[w]);
    for (int d = 0, seen = 0; d < up->rank; d++) {
      if (ir_dims_contain(uw, nuw, d)) continue;
      if (seen == ivd) seen++;
      if (up->dims[d] != exp[seen])
        return ierr(i, err, "scatter update %d: scatter dimension %d has size %" PRId64 " but the indices' dimension %d has %" PRId64, k, d,
                    up->dims[d], seen, exp[seen]);
      seen++;
    }
  }
  if (!check_reducer(i, "to_apply", types, n, false, a, err)) return false;
  if (n == 1) return make_array(i, types[0], el[0].rank, el[0].dims, out, a);
  return tuple_of(el, n, out, a, &i->shape);
}

static bool infer_tuple_ops(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (i->op == IR_OP_TUPLE) {
    for (int k = 0; k < i->noperands; k++)
      if (!i->operands[k]) return ierr(i, err, "operand %d is missing", k);
    IrShape el[64], *e = el;
    if (i->noperands > 64) {
      e = arena_alloc(a, sizeof(IrShape) * (size_t)i->noperands);
      if (!e) return false;
    }
    for (int k = 0; k < i->noperands; k++) e[k] = *opsh(i, k);
    return tuple_of(e, i->noperands, out, a, &i->shape);
  }
  /* get-tuple-element */
  if (!need_operands(i, 1, 1, err)) return false;
  const IrShape *t = opsh(i, 0);
  if (t->type != IR_TUPLE) return ierr(i, err, "get-tuple-element of '%%%s', which is not a tuple", i->operands[0]->name);
  int64_t idx;
  if (!ir_attr_int(i, "index", &idx)) return ierr(i, err, "get-tuple-element needs the attribute 'index'");
  if (idx < 0 || idx >= t->ntuple) return ierr(i, err, "index %" PRId64 " is out of range for a tuple of %d elements", idx, t->ntuple);
  ir_shape_copy(a, out, &t->tuple[idx]);
  if (ir_shape_equal(out, &i->shape)) ir_shape_copy(a, out, &i->shape);
  return true;
}

static bool infer_control(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  char b1[200], b2[200];
  for (int k = 0; k < i->noperands; k++)
    if (!i->operands[k]) return ierr(i, err, "operand %d is missing", k);
  const IrShape *ps[256];
  int np = i->noperands < 256 ? i->noperands : 256;
  for (int k = 0; k < np; k++) ps[k] = opsh(i, k);
  IrComputation *c;
  switch (i->op) {
  case IR_OP_WHILE: {
    if (!need_operands(i, 1, 1, err)) return false;
    IrComputation *cond = ir_attr_comp(i, "condition"), *body = ir_attr_comp(i, "body");
    if (!check_called(i, "condition", cond, 1, ps, err) || !check_called(i, "body", body, 1, ps, err)) return false;
    IrShape pred = ir_shape_scalar(IR_PRED);
    if (!ir_shape_equal(&cond->root->shape, &pred))
      return ierr(i, err, "while condition %%%s returns %s, not pred[]", cond->name, shp(&cond->root->shape, b1, sizeof b1));
    if (!ir_shape_equal(&body->root->shape, ps[0]))
      return ierr(i, err, "while body %%%s returns %s but the loop state is %s", body->name, shp(&body->root->shape, b1, sizeof b1),
                  shp(ps[0], b2, sizeof b2));
    ir_shape_copy(a, out, ps[0]);
    break;
  }
  case IR_OP_CALL:
  case IR_OP_FUSION:
  case IR_OP_ASYNC_START: {
    const char *key = i->op == IR_OP_CALL ? "to_apply" : "calls";
    c = ir_attr_comp(i, key);
    if (i->noperands > 256) return declared(i, out, a);
    if (!check_called(i, key, c, np, ps, err)) return false;
    if (i->op == IR_OP_ASYNC_START) return declared(i, out, a);
    ir_shape_copy(a, out, &c->root->shape);
    break;
  }
  case IR_OP_CONDITIONAL: {
    if (!need_operands(i, 1, -1, err)) return false;
    if (i->noperands > 256) return declared(i, out, a);
    const IrShape *sel = ps[0];
    const IrAttr *bc = ir_attr_get(i, "branch_computations");
    IrComputation *br[2];
    IrComputation **branches;
    int nb;
    if (bc && bc->kind == IR_ATTR_COMP) {
      if (sel->type != IR_S32 || sel->rank != 0) return ierr(i, err, "conditional with branch_computations needs an s32[] selector, not %s", shp(sel, b1, sizeof b1));
      branches = bc->comps;
      nb = bc->ncomps;
    } else {
      if (sel->type != IR_PRED || sel->rank != 0) return ierr(i, err, "conditional with true/false computations needs a pred[] selector, not %s", shp(sel, b1, sizeof b1));
      br[0] = ir_attr_comp(i, "true_computation");
      br[1] = ir_attr_comp(i, "false_computation");
      branches = br;
      nb = 2;
    }
    if (nb < 1) return ierr(i, err, "conditional has no branches");
    if (i->noperands != nb + 1) return ierr(i, err, "conditional with %d branches takes %d operands, not %d", nb, nb + 1, i->noperands);
    for (int k = 0; k < nb; k++) {
      char key[48];
      snprintf(key, sizeof key, "branch %d", k);
      if (!check_called(i, key, branches[k], 1, &ps[k + 1], err)) return false;
      if (!ir_shape_equal(&branches[k]->root->shape, &branches[0]->root->shape))
        return ierr(i, err, "conditional branches return different shapes: %s and %s", shp(&branches[0]->root->shape, b1, sizeof b1),
                    shp(&branches[k]->root->shape, b2, sizeof b2));
    }
    ir_shape_copy(a, out, &branches[0]->root->shape);
    break;
  }
  case IR_OP_MAP: {
    if (!need_operands(i, 1, -1, err)) return false;
    if (!same_dims_all(i, 0, i->noperands, err)) return false;
    IrShape sc[16];
    const IrShape *sp[16];
    if (np > 16) return declared(i, out, a);
    for (int k = 0; k < np; k++) {
      sc[k] = ir_shape_scalar(ps[k]->type);
      sp[k] = &sc[k];
    }
    c = ir_attr_comp(i, "to_apply");
    if (!check_called(i, "to_apply", c, np, sp, err)) return false;
    return make_array(i, c->root->shape.type, ps[0]->rank, ps[0]->dims, out, a);
  }
  default:
    return declared(i, out, a);
  }
  /* Keep the declared layouts when the dims agree. */
  if (ir_shape_equal(out, &i->shape)) ir_shape_copy(a, out, &i->shape);
  return true;
}

static bool infer_sort(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, -1, err)) return false;
  for (int k = 0; k < i->noperands; k++)
    if (!need_array(i, k, err)) return false;
  if (!same_dims_all(i, 0, i->noperands, err)) return false;
  int64_t dim;
  if (ir_attr_text(i, "dimensions")) {
    int64_t d[IR_MAX_RANK];
    bool ok;
    int n = dims_attr(i, "dimensions", d, IR_MAX_RANK, true, err, &ok);
    if (!ok) return false;
    if (n != 1) return ierr(i, err, "sort needs exactly one dimension, not %d", n);
    dim = d[0];
    if (!check_dim_index(i, "sort dimension", dim, opsh(i, 0)->rank, err)) return false;
  }
  int n = i->noperands;
  if (n > 16) return declared(i, out, a);
  IrShape sc[32];
  const IrShape *sp[32];
  for (int k = 0; k < n; k++) {
    sc[2 * k] = sc[2 * k + 1] = ir_shape_scalar(opsh(i, k)->type);
    sp[2 * k] = &sc[2 * k];
    sp[2 * k + 1] = &sc[2 * k + 1];
  }
  IrComputation *c = ir_attr_comp(i, "to_apply");
  if (!check_called(i, "to_apply", c, 2 * n, sp, err)) return false;
  IrShape pred = ir_shape_scalar(IR_PRED);
  char b1[200];
  if (!ir_shape_equal(&c->root->shape, &pred))
    return ierr(i, err, "sort comparator %%%s returns %s, not pred[]", c->name, shp(&c->root->shape, b1, sizeof b1));
  if (n == 1) return make_array(i, opsh(i, 0)->type, opsh(i, 0)->rank, opsh(i, 0)->dims, out, a);
  IrShape el[16];
  for (int k = 0; k < n; k++) el[k] = *opsh(i, k);
  return tuple_of(el, n, out, a, &i->shape);
}

static bool infer_iota(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 0, 0, err)) return false;
  if (!ir_shape_is_array(&i->shape) || i->shape.rank == 0) return ierr(i, err, "iota must produce an array of rank 1 or more");
  int64_t d;
  if (!ir_attr_int(i, "iota_dimension", &d)) return ierr(i, err, "iota needs the attribute 'iota_dimension'");
  if (!check_dim_index(i, "iota_dimension", d, i->shape.rank, err)) return false;
  return declared(i, out, a);
}

static bool infer_topk(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  if (!need_operands(i, 1, 1, err) || !need_array(i, 0, err)) return false;
  const IrShape *in = opsh(i, 0);
  int64_t k;
  if (!ir_attr_int(i, "k", &k)) return ierr(i, err, "topk needs the attribute 'k'");
  if (in->rank == 0 || k < 0 || k > in->dims[in->rank - 1])
    return ierr(i, err, "topk k=%" PRId64 " does not fit the last dimension of the operand", k);
  int64_t od[IR_MAX_RANK];
  memcpy(od, in->dims, sizeof(int64_t) * (size_t)in->rank);
  od[in->rank - 1] = k;
  IrShape el[2] = {ir_shape_array(a, in->type, in->rank, od), ir_shape_array(a, IR_S32, in->rank, od)};
  return tuple_of(el, 2, out, a, &i->shape);
}

bool ir_infer_shape(const IrInstr *i, IrShape *out, Arena *a, FxError *err) {
  memset(out, 0, sizeof *out);
  for (int k = 0; k < i->noperands; k++)
    if (!i->operands[k]) return ierr(i, err, "operand %d is missing", k);
  const IrOpInfo *info = ir_op_info(i->op);
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
    return declared(i, out, a);
  case IR_OP_IOTA:
    return infer_iota(i, out, a, err);
  case IR_OP_BROADCAST:
    return infer_broadcast(i, out, a, err);
  case IR_OP_RESHAPE:
  case IR_OP_BITCAST:
    return infer_reshape(i, out, a, err);
  case IR_OP_TRANSPOSE:
    return infer_transpose(i, out, a, err);
  case IR_OP_SLICE:
    return infer_slice(i, out, a, err);
  case IR_OP_DYNAMIC_SLICE:
    return infer_dynamic_slice(i, out, a, err);
  case IR_OP_DYNAMIC_UPDATE_SLICE:
    return infer_dus(i, out, a, err);
  case IR_OP_CONCATENATE:
    return infer_concatenate(i, out, a, err);
  case IR_OP_PAD:
    return infer_pad(i, out, a, err);
  case IR_OP_REVERSE:
    return infer_reverse(i, out, a, err);
  case IR_OP_GATHER:
    return infer_gather(i, out, a, err);
  case IR_OP_SCATTER:
    return infer_scatter(i, out, a, err);
  case IR_OP_REDUCE:
    return infer_reduce(i, out, a, err);
  case IR_OP_REDUCE_WINDOW:
    return infer_reduce_window(i, out, a, err);
  case IR_OP_DOT:
    return infer_dot(i, out, a, err);
  case IR_OP_CONVOLUTION:
    return infer_convolution(i, out, a, err);
  case IR_OP_SORT:
    return infer_sort(i, out, a, err);
  case IR_OP_TOPK:
    return infer_topk(i, out, a, err);
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
    return infer_tuple_ops(i, out, a, err);
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL:
  case IR_OP_FUSION:
  case IR_OP_MAP:
  case IR_OP_ASYNC_START:
    return infer_control(i, out, a, err);
  case IR_OP_OPT_BARRIER:
  case IR_OP_DOMAIN:
  case IR_OP_ADD_DEPENDENCY:
    if (!need_operands(i, info->arity, info->arity, err)) return false;
    ir_shape_copy(a, out, &i->shape);
    if (!ir_shape_equal(opsh(i, 0), &i->shape)) ir_shape_copy(a, out, opsh(i, 0));
    return true;
  case IR_OP_AFTER_ALL:
    *out = ir_shape_scalar(IR_TOKEN);
    return true;
  case IR_OP_SELECT_AND_SCATTER:
    if (!need_operands(i, 3, 3, err) || !need_array(i, 0, err)) return false;
    return make_array(i, opsh(i, 0)->type, opsh(i, 0)->rank, opsh(i, 0)->dims, out, a);
  default:
    break;
  }
  if (ir_op_is_elementwise(i->op)) return infer_elementwise(i, out, a, err);
  /* Library calls, collectives, asynchronous and host ops: the declared shape, after arity. */
  if (info->arity >= 0 && !need_operands(i, info->arity, info->arity, err)) return false;
  return declared(i, out, a);
}

bool ir_gather_uncomputed(const IrInstr *i, char *why, size_t n) {
  if (i->op != IR_OP_GATHER || i->noperands < 1 || !i->operands[0] || !ir_shape_is_array(&i->shape) || ir_shape_elements(&i->shape) == 0)
    return false;
  int64_t ss[IR_MAX_RANK], d[IR_MAX_RANK], smap[IR_MAX_RANK];
  int nss = ir_attr_dims(i, "slice_sizes", ss, IR_MAX_RANK), nsm = ir_attr_dims(i, "start_index_map", smap, IR_MAX_RANK);
  static const char *const keys[] = {"collapsed_slice_dims", "operand_batching_dims"};
  for (int k = 0; k < 2; k++) {
    int nd = ir_attr_dims(i, keys[k], d, IR_MAX_RANK);
    for (int j = 0; j < nd; j++) {
      if (d[j] >= 0 && d[j] < nss && ss[d[j]] == 0) {
        snprintf(why, n, "its %s %" PRId64 " has slice size 0: each element would read from an empty slice", keys[k], d[j]);
        return true;
      }
      for (int q = 0; k == 1 && q < nsm; q++)
        if (smap[q] == d[j]) {
          snprintf(why, n, "its batching dimension %" PRId64 " is also in start_index_map, which only XLA's rules allow", d[j]);
          return true;
        }
    }
  }
  return false;
}

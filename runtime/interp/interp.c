/* interp.c — the reference interpreter: executes a module op by op on the CPU. It is the oracle
 * every other backend is checked against, so it favours plain, obviously-right loops.
 *
 * The walker evaluates a computation's instructions in order, keeping each value until its last
 * user has run. Control flow (while, call, conditional, fusion, map) recurses into the called
 * computations; native backends reuse this walker and take over single instructions through
 * RtHooks. This file also holds the data-movement ops (broadcast, transpose, slices, pad,
 * concatenate, bitcast with layouts, ...) and the scalar evaluator for reducers and comparators;
 * the arithmetic lives in interp_ops.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/plan/plan.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/passes/passes.h"
#include "interp_internal.h"

/* ---------- the execution context ---------- */

/* Per computation: each instruction's position and the position of its last use, and the values
 * that do not change from one call to the next.
 *
 * An instruction that depends on no parameter and has no side effect (simp_is_pure: no rng draw,
 * no custom call) computes the same value every time its computation runs. The plain interpreter
 * keeps those values from the second call on (a computation run once, like the entry, keeps
 * nothing) and reuses them: a loop body that rebuilds a large iota and reduces it on every trip
 * computes it once. Only the values a parameter-dependent instruction (or the root) reads are
 * kept; the rest are not recomputed at all. A backend walking with hooks gets no reuse: it runs
 * and counts every kernel as the program says. */
typedef struct {
  int n;
  int *last_use;     /* position of the last user within the computation; n for the root */
  PtrMap pos;        /* instr -> position + 1 */
  int calls;         /* runs so far */
  int reuse;         /* 0: not yet decided, 1: reusing kept values, -1: not worth it or too large */
  bool *invariant;   /* depends on no parameter and is pure */
  bool *keep;        /* invariant, read by a non-invariant instruction or the root */
  RtTensor **kept;   /* the kept values, once reuse is 1 */
} CompInfo;

/* At most this much memory stays held by kept values across a run (or a quarter of the memory
 * budget, when that is smaller); a computation whose kept values exceed it reuses nothing. */
#define KEEP_MAX_BYTES ((uint64_t)1 << 30)

struct RtExec {
  const IrModule *m;
  RtOptions o;
  RtCounters c;
  PtrMap comps;   /* IrComputation* -> CompInfo* */
  PtrMap rng;     /* IrInstr* -> (uintptr_t) draws so far */
  PtrMap scalar;  /* IrComputation* -> ScalarProg* (or a sentinel when not scalar) */
  int depth;
};

RtCounters *rt_exec_counters(RtExec *x) { return &x->c; }
uint64_t rt_exec_seed(const RtExec *x) { return x->o.seed; }

uint32_t rt_exec_rng_counter(RtExec *x, const IrInstr *i) {
  uintptr_t n = (uintptr_t)ptrmap_get(&x->rng, i);
  ptrmap_put(&x->rng, i, (void *)(n + 1));
  return (uint32_t)n;
}

bool rt_exec_poll(RtExec *x, FxError *err) {
  if (x->o.interrupted && *x->o.interrupted)
    return fx_error_set(err, NULL, 0, 0, "interrupted: execution stopped by Ctrl-C");
  return true;
}

static CompInfo *comp_info(RtExec *x, const IrComputation *c, FxError *err) {
  CompInfo *ci = ptrmap_get(&x->comps, c);
  if (ci) return ci;
  ci = fx_calloc(1, sizeof *ci);
  if (!ci) goto oom;
  ci->n = c->ninstrs;
  ci->last_use = fx_calloc((size_t)(c->ninstrs + 1), sizeof(int));
  if (!ci->last_use || !ptrmap_put(&x->comps, c, ci)) {
    fx_free(ci->last_use);
    fx_free(ci);
    goto oom;
  }
  for (int k = 0; k < c->ninstrs; k++) {
    if (!ptrmap_put(&ci->pos, c->instrs[k], (void *)(uintptr_t)(k + 1))) goto oom;
    ci->last_use[k] = c->instrs[k] == c->root ? c->ninstrs : k;
  }
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *in = c->instrs[k];
    for (int j = 0; j < in->noperands; j++) {
      uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, in->operands[j]);
      if (p && ci->last_use[p - 1] < k) ci->last_use[p - 1] = k;
    }
  }
  ci->invariant = fx_calloc((size_t)c->ninstrs + 1, sizeof(bool));
  ci->keep = fx_calloc((size_t)c->ninstrs + 1, sizeof(bool));
  if (!ci->invariant || !ci->keep) goto oom;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *in = c->instrs[k];
    bool inv = simp_is_pure(in);
    for (int j = 0; j < in->noperands && inv; j++) {
      uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, in->operands[j]);
      inv = p && ci->invariant[p - 1];
    }
    ci->invariant[k] = inv;
    if (inv && in == c->root) ci->keep[k] = true;
    for (int j = 0; j < in->noperands && !inv; j++) {
      uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, in->operands[j]);
      if (p && ci->invariant[p - 1]) ci->keep[p - 1] = true;
    }
  }
  return ci;
oom:
  fx_error_set(err, NULL, 0, 0, "out of memory");
  return NULL;
}

static void comp_info_forget_kept(CompInfo *ci) {
  if (!ci->kept) return;
  for (int k = 0; k < ci->n; k++) rt_tensor_unref(ci->kept[k]);
  fx_free(ci->kept);
  ci->kept = NULL;
}

static uint64_t value_bytes(const RtTensor *t) {
  if (!t) return 0;
  uint64_t b = t->data ? t->bytes : 0;
  for (int k = 0; k < t->ntuple; k++) b += value_bytes(t->tuple[k]);
  return b;
}

/* ---------- errors with the instruction's place ---------- */

static bool instr_error(const IrInstr *i, FxError *err, const char *msg) {
  return fx_error_set(err, i->loc.file, i->loc.line, i->loc.col, "%s: %s", i->name, msg);
}

/* ---------- helpers ---------- */

void rt_strides(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= dims[d];
  }
}

static RtTensor *new_like_shape(const IrInstr *i, FxError *err) {
  if (!ir_shape_is_array(&i->shape)) {
    instr_error(i, err, "expected an array shape");
    return NULL;
  }
  return rt_tensor_new(i->shape.type, i->shape.rank, i->shape.dims, err);
}

static void copy_elem(RtTensor *dst, int64_t di, const RtTensor *src, int64_t si) {
  size_t eb = (size_t)ir_type_bytes(dst->type);
  memcpy((char *)dst->data + (size_t)di * eb, (const char *)src->data + (size_t)si * eb, eb);
}

/* ---------- data movement ---------- */

/* r[idx] = a[base + sum over d of idx[d] * sst[d]] for every index of r (strides may be 0, as in a
 * broadcast, or negative, as in a reverse). The last two dimensions go in 32 x 32 tiles, so a
 * transpose reads and writes whole cache lines instead of one element per line. */
#define COPY_TILE 32
static void strided_copy(RtTensor *r, const RtTensor *a, int64_t base, const int64_t *sst) {
  if (r->count == 0) return;
  int rank = r->rank;
  size_t eb = (size_t)ir_type_bytes(r->type);
  char *dst = r->data;
  const char *src = a->data;
  if (rank == 0) {
    memcpy(dst, src + (size_t)base * eb, eb);
    return;
  }
  int64_t rows = rank >= 2 ? r->dims[rank - 2] : 1, cols = r->dims[rank - 1];
  int64_t rs = rank >= 2 ? sst[rank - 2] : 0, cs = sst[rank - 1];
  int64_t outer = r->count / (rows * cols), idx[IR_MAX_RANK] = {0};
  for (int64_t q = 0; q < outer; q++) {
    int64_t sb = base;
    for (int d = 0; d < rank - 2; d++) sb += idx[d] * sst[d];
    int64_t ob = q * rows * cols;
    for (int64_t i0 = 0; i0 < rows; i0 += COPY_TILE)
      for (int64_t j0 = 0; j0 < cols; j0 += COPY_TILE) {
        int64_t i1 = i0 + COPY_TILE < rows ? i0 + COPY_TILE : rows, j1 = j0 + COPY_TILE < cols ? j0 + COPY_TILE : cols;
        for (int64_t i = i0; i < i1; i++) {
          int64_t o = ob + i * cols, sp = sb + i * rs;
#define COPY_ROW(T)                                                                                        \
  for (int64_t j = j0; j < j1; j++) ((T *)dst)[o + j] = ((const T *)src)[sp + j * cs];
          switch (eb) {
          case 1: COPY_ROW(uint8_t) break;
          case 2: COPY_ROW(uint16_t) break;
          case 4: COPY_ROW(uint32_t) break;
          case 8: COPY_ROW(uint64_t) break;
          default:
            for (int64_t j = j0; j < j1; j++) memcpy(dst + (size_t)(o + j) * eb, src + (size_t)(sp + j * cs) * eb, eb);
          }
#undef COPY_ROW
        }
      }
    rt_next_index(rank - 2, r->dims, idx);
  }
}

static bool op_broadcast(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  int64_t map[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", map, IR_MAX_RANK);
  if (n < 0) n = 0;
  if (n != a->rank) return instr_error(i, err, "broadcast dimensions do not match the operand's rank");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  int64_t ast[IR_MAX_RANK];
  rt_strides(a->rank, a->dims, ast);
  for (int k = 0; k < n; k++)
    if (map[k] < 0 || map[k] >= r->rank || r->dims[map[k]] != a->dims[k]) {
      rt_tensor_unref(r);
      return instr_error(i, err, "broadcast dimensions are invalid");
    }
  int64_t sst[IR_MAX_RANK] = {0};
  for (int k = 0; k < n; k++) sst[map[k]] += ast[k];
  strided_copy(r, a, 0, sst);
  *out = r;
  return true;
}

/* out[idx] = a[idx permuted]: output dim d is operand dim perm[d]. */
static RtTensor *transpose_data(const RtTensor *a, const int64_t *perm, const int64_t *odims, FxError *err) {
  RtTensor *r = rt_tensor_new(a->type, a->rank, odims, err);
  if (!r || r->count == 0) return r;
  int64_t ast[IR_MAX_RANK], sst[IR_MAX_RANK];
  rt_strides(a->rank, a->dims, ast);
  for (int d = 0; d < a->rank; d++) sst[d] = ast[perm[d]];
  strided_copy(r, a, 0, sst);
  return r;
}

static bool op_transpose(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  int64_t perm[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK);
  if (n != a->rank) return instr_error(i, err, "transpose dimensions do not match the operand's rank");
  for (int d = 0; d < n; d++)
    if (perm[d] < 0 || perm[d] >= n) return instr_error(i, err, "transpose dimensions are invalid");
  *out = transpose_data(a, perm, i->shape.dims, err);
  return *out != NULL;
}

static bool default_layout(const IrShape *s) {
  if (!s->has_layout) return true;
  for (int k = 0; k < s->rank; k++)
    if (s->minor_to_major[k] != s->rank - 1 - k) return false;
  return true;
}

/* bitcast: reinterpret the physical buffer. Tensors are kept in logical row-major order, so a
 * bitcast between layouts goes logical -> physical (operand's layout) -> logical (result's). */
static bool op_bitcast(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  const IrShape *os = &i->operands[0]->shape, *rs = &i->shape;
  if (ir_shape_elements(rs) * ir_type_bytes(rs->type) != (int64_t)a->bytes)
    return instr_error(i, err, "bitcast changes the size of the buffer");
  RtTensor *phys = NULL;
  if (!default_layout(os) && os->rank == a->rank) {
    int64_t perm[IR_MAX_RANK], pd[IR_MAX_RANK];
    for (int k = 0; k < a->rank; k++) {
      perm[k] = os->minor_to_major[a->rank - 1 - k];
      pd[k] = a->dims[perm[k]];
    }
    phys = transpose_data(a, perm, pd, err);
    if (!phys) return false;
  }
  const RtTensor *src = phys ? phys : a;
  RtTensor *r;
  if (!default_layout(rs)) {
    /* physical dims of the result, major to minor */
    int64_t pd[IR_MAX_RANK], perm[IR_MAX_RANK];
    for (int k = 0; k < rs->rank; k++) pd[k] = rs->dims[rs->minor_to_major[rs->rank - 1 - k]];
    RtTensor *tmp = rt_tensor_new(rs->type, rs->rank, pd, err);
    if (!tmp) {
      rt_tensor_unref(phys);
      return false;
    }
    memcpy(tmp->data, src->data, src->bytes);
    /* logical dim d sits at physical position p where m2m[rank-1-p] == d */
    for (int d = 0; d < rs->rank; d++)
      for (int p = 0; p < rs->rank; p++)
        if (rs->minor_to_major[rs->rank - 1 - p] == d) perm[d] = p;
    r = transpose_data(tmp, perm, rs->dims, err);
    rt_tensor_unref(tmp);
  } else {
    r = new_like_shape(i, err);
    if (r) memcpy(r->data, src->data, src->bytes);
  }
  rt_tensor_unref(phys);
  *out = r;
  return r != NULL;
}

static bool op_reshape(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  if (ir_shape_elements(&i->shape) != a->count) return instr_error(i, err, "reshape changes the element count");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  memcpy(r->data, a->data, a->bytes);
  *out = r;
  return true;
}

static bool op_slice(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK], ast[IR_MAX_RANK];
  int n = ir_attr_slice(i, st, li, sd, IR_MAX_RANK);
  if (n != a->rank) return instr_error(i, err, "slice attribute does not match the operand's rank");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  for (int d = 0; d < n; d++)
    if (st[d] < 0 || sd[d] <= 0 || st[d] + (r->dims[d] ? (r->dims[d] - 1) * sd[d] : 0) >= a->dims[d] + (r->dims[d] == 0)) {
      rt_tensor_unref(r);
      return instr_error(i, err, "slice is out of the operand's bounds");
    }
  rt_strides(a->rank, a->dims, ast);
  int64_t base = 0, sst[IR_MAX_RANK];
  for (int d = 0; d < n; d++) {
    base += st[d] * ast[d];
    sst[d] = sd[d] * ast[d];
  }
  strided_copy(r, a, base, sst);
  *out = r;
  return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool op_dynamic_slice(const IrInstr *i, RtTensor **ops, int nops, RtTensor **out, FxError *err) {
  RtTensor *a = ops[0];
  if (nops != 1 + a->rank) return instr_error(i, err, "dynamic-slice needs one start index per dimension");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  int64_t ast[IR_MAX_RANK], base = 0;
  rt_strides(a->rank, a->dims, ast);
  for (int d = 0; d < a->rank; d++) base += clamp64(rt_get_i(ops[1 + d], 0), 0, a->dims[d] - r->dims[d]) * ast[d];
  strided_copy(r, a, base, ast);
  *out = r;
  return true;
}

static bool op_dynamic_update_slice(const IrInstr *i, RtTensor **ops, int nops, RtTensor **out, FxError *err) {
  RtTensor *a = ops[0], *u = ops[1];
  if (nops != 2 + a->rank || u->rank != a->rank)
    return instr_error(i, err, "dynamic-update-slice needs an update of the same rank and one start index per dimension");
  RtTensor *r = rt_tensor_clone(a, err);
  if (!r) return false;
  int64_t start[IR_MAX_RANK], rst[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
  for (int d = 0; d < a->rank; d++) start[d] = clamp64(rt_get_i(ops[2 + d], 0), 0, a->dims[d] - u->dims[d]);
  rt_strides(a->rank, a->dims, rst);
  if (u->count)
    for (int64_t o = 0;; o++) {
      int64_t s = 0;
      for (int d = 0; d < a->rank; d++) s += (start[d] + idx[d]) * rst[d];
      copy_elem(r, s, u, o);
      if (!rt_next_index(u->rank, u->dims, idx)) break;
    }
  *out = r;
  return true;
}

static bool op_concatenate(const IrInstr *i, RtTensor **ops, int nops, RtTensor **out, FxError *err) {
  int64_t dim;
  if (ir_attr_dims(i, "dimensions", &dim, 1) != 1) return instr_error(i, err, "concatenate needs dimensions={d}");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  /* copy row blocks: outer = product of dims before `dim` */
  int64_t outer = 1;
  for (int d = 0; d < dim; d++) outer *= r->dims[d];
  size_t eb = (size_t)ir_type_bytes(r->type);
  size_t rrow = (size_t)(r->count / (outer ? outer : 1)) * eb;
  size_t off = 0;
  for (int k = 0; k < nops; k++) {
    size_t row = outer ? ops[k]->bytes / (size_t)outer : 0;
    for (int64_t o = 0; o < outer; o++)
      memcpy((char *)r->data + (size_t)o * rrow + off, (char *)ops[k]->data + (size_t)o * row, row);
    off += row;
  }
  *out = r;
  return true;
}

static bool op_pad(const IrInstr *i, RtTensor *a, RtTensor *pv, RtTensor **out, FxError *err) {
  int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK], ast[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
  if (a->rank > 0 && ir_attr_padding(i, lo, hi, in, IR_MAX_RANK) != a->rank) return instr_error(i, err, "pad needs padding_config=LO_HI[_INTERIOR]x...");
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  rt_strides(a->rank, a->dims, ast);
  if (r->count)
    for (int64_t o = 0;; o++) {
      int64_t s = 0;
      bool inside = true;
      for (int d = 0; d < a->rank && inside; d++) {
        int64_t p = idx[d] - lo[d];
        if (p < 0 || p % (in[d] + 1) != 0 || p / (in[d] + 1) >= a->dims[d]) inside = false;
        else s += p / (in[d] + 1) * ast[d];
      }
      if (inside) copy_elem(r, o, a, s);
      else copy_elem(r, o, pv, 0);
      if (!rt_next_index(r->rank, r->dims, idx)) break;
    }
  *out = r;
  return true;
}

static bool op_reverse(const IrInstr *i, RtTensor *a, RtTensor **out, FxError *err) {
  int64_t dims[IR_MAX_RANK], ast[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK);
  bool rev[IR_MAX_RANK] = {0};
  for (int k = 0; k < n; k++)
    if (dims[k] >= 0 && dims[k] < a->rank) rev[dims[k]] = true;
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  rt_strides(a->rank, a->dims, ast);
  int64_t base = 0, sst[IR_MAX_RANK];
  for (int d = 0; d < a->rank; d++) {
    sst[d] = rev[d] ? -ast[d] : ast[d];
    if (rev[d]) base += (a->dims[d] - 1) * ast[d];
  }
  strided_copy(r, a, base, sst);
  *out = r;
  return true;
}

static bool op_iota(const IrInstr *i, RtTensor **out, FxError *err) {
  int64_t dim = 0;
  if (!ir_attr_int(i, "iota_dimension", &dim)) dim = 0;
  RtTensor *r = new_like_shape(i, err);
  if (!r) return false;
  if (r->rank && (dim < 0 || dim >= r->rank)) {
    rt_tensor_unref(r);
    return instr_error(i, err, "iota_dimension is out of range");
  }
  int64_t idx[IR_MAX_RANK] = {0};
  if (r->count)
    for (int64_t o = 0;; o++) {
      int64_t v = r->rank ? idx[dim] : 0;
      if (ir_type_is_float(r->type)) rt_set_f(r, o, (double)v);
      else rt_set_i(r, o, v);
      if (!rt_next_index(r->rank, r->dims, idx)) break;
    }
  *out = r;
  return true;
}

/* Complex literal text: "(re, im)" per element, inside any braces ("{(1, 2), (3, -4)}"). Returns the
 * number of pairs stored, or -1 when the text is malformed or holds more than r's elements. */
static int64_t complex_literal(const char *t, RtTensor *r) {
  int64_t n = 0;
  for (const char *p = t; *p;) {
    if (p[0] == '/' && p[1] == '*') { /* XLA's index comments inside array literals */
      const char *z = strstr(p + 2, "*/");
      if (!z) return -1;
      p = z + 2;
      continue;
    }
    if (*p != '(') {
      if (!strchr("{} ,\n\t\r", *p)) return -1;
      p++;
      continue;
    }
    char *e;
    double re = strtod(p + 1, &e);
    if (e == p + 1) return -1;
    while (*e == ' ') e++;
    if (*e++ != ',') return -1;
    const char *q = e;
    double im = strtod(q, &e);
    if (e == q) return -1;
    while (*e == ' ') e++;
    if (*e != ')' || n >= r->count) return -1;
    rt_set_c(r, n++, re, im);
    p = e + 1;
  }
  return n;
}

static bool op_constant(const IrInstr *i, RtTensor **out, FxError *err) {
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  const IrLiteral *l = i->literal;
  if (ir_type_is_complex(r->type) && l && !l->elided && l->text) {
    int64_t n = complex_literal(l->text, r);
    if (n != r->count && n != 1) {
      rt_tensor_unref(r);
      return instr_error(i, err, "a complex constant needs one (re, im) pair per element");
    }
    if (n == 1)
      for (int64_t k = 1; k < r->count; k++) memcpy((char *)r->data + (size_t)k * (r->bytes / (size_t)r->count), r->data, r->bytes / (size_t)r->count);
    *out = r;
    return true;
  }
  if ((r->type == IR_S64 || r->type == IR_U64) && l && !l->elided && l->values && r->count > 0) {
    /* 64-bit integers exactly, from the literal's text (its doubles hold 53 bits) */
    int64_t *iv = fx_malloc(sizeof(int64_t) * (size_t)r->count);
    if (!iv) {
      rt_tensor_unref(r);
      return instr_error(i, err, "out of memory reading the constant");
    }
    int64_t n = ir_literal_ints(l, r->type == IR_U64, iv, r->count);
    if (n == r->count || n == 1) {
      for (int64_t k = 0; k < r->count; k++) rt_set_i(r, k, iv[n == 1 ? 0 : k]);
      fx_free(iv);
      *out = r;
      return true;
    }
    fx_free(iv);
  }
  if (r->type != IR_TUPLE && l && !l->elided && l->values) {
    /* a literal with one value fills the array (HLO allows a scalar splat only for scalars, but
       hand-built modules use it) */
    for (int64_t k = 0; k < r->count; k++) {
      double v = l->values[l->count == r->count ? k : 0];
      if (ir_type_is_float(r->type)) rt_set_f(r, k, v);
      else rt_set_i(r, k, (int64_t)v);
    }
  }
  *out = r;
  return true;
}

/* ---------- scalar programs: reducers and comparators without tensors ---------- */

typedef struct {
  IrOpcode op;
  IrType type, otype; /* result type, first operand's type */
  int a, b, c;        /* operand step indices */
  RtDir dir;
  bool total;
  int param;          /* parameter number */
  RtVal lit;
  int64_t ebits, mbits;
} ScalarStep;

typedef struct {
  int n;
  ScalarStep *steps;
  int nout;
  int out[64]; /* steps producing the outputs */
} ScalarProg;

static ScalarProg not_scalar; /* sentinel: this computation needs the tensor walker */

static bool scalar_op_ok(IrOpcode op) {
  const IrOpInfo *oi = ir_op_info(op);
  return oi->category == IR_CAT_UNARY || oi->category == IR_CAT_BINARY || oi->category == IR_CAT_TERNARY ||
         op == IR_OP_PARAMETER || op == IR_OP_CONSTANT || op == IR_OP_TUPLE;
}

static ScalarProg *scalar_prog(RtExec *x, const IrComputation *c) {
  ScalarProg *p = ptrmap_get(&x->scalar, c);
  if (p) return p;
  p = &not_scalar;
  bool ok = c->root && c->ninstrs > 0;
  for (int k = 0; ok && k < c->ninstrs; k++) {
    const IrInstr *in = c->instrs[k];
    if (!scalar_op_ok(in->op) || in->op == IR_OP_COMPLEX || in->op == IR_OP_REAL || in->op == IR_OP_IMAG ||
        in->op == IR_OP_BITCAST_CONVERT)
      ok = false;
    else if (in->op == IR_OP_TUPLE) ok = in == c->root && in->noperands <= 64;
    else if (!ir_shape_is_scalar(&in->shape)) ok = false;
    else if (in->op == IR_OP_CONSTANT && (!in->literal || !in->literal->values || in->literal->count < 1)) ok = false;
  }
  ScalarProg *np = NULL;
  if (ok) {
    np = fx_calloc(1, sizeof *np);
    CompInfo *ci = comp_info(x, c, &(FxError){0});
    if (np) np->steps = fx_calloc((size_t)c->ninstrs, sizeof *np->steps);
    if (!np || !np->steps || !ci) {
      if (np) fx_free(np->steps);
      fx_free(np);
      np = NULL;
    } else {
      np->n = c->ninstrs;
      for (int k = 0; k < c->ninstrs; k++) {
        const IrInstr *in = c->instrs[k];
        ScalarStep *s = &np->steps[k];
        s->op = in->op;
        s->type = in->shape.type;
        int opi[3] = {0, 0, 0};
        for (int j = 0; j < in->noperands && j < 3; j++) opi[j] = (int)(uintptr_t)ptrmap_get(&ci->pos, in->operands[j]) - 1;
        s->a = opi[0];
        s->b = opi[1];
        s->c = opi[2];
        s->otype = in->noperands ? in->operands[0]->shape.type : s->type;
        if (in->op == IR_OP_PARAMETER) s->param = (int)in->param_number;
        if (in->op == IR_OP_CONSTANT) {
          double v = in->literal->values[0];
          if (ir_type_is_float(s->type)) s->lit = rt_val_norm(s->type, (RtVal){.f = v});
          else s->lit = rt_val_norm(s->type, (RtVal){.i = (int64_t)v});
        }
        if (in->op == IR_OP_COMPARE) {
          const char *d = ir_compare_direction(in);
          if (!d || !rt_parse_dir(d, &s->dir)) ok = false;
          const char *ty = ir_attr_text(in, "type");
          s->total = ty && strcmp(ty, "TOTALORDER") == 0;
        }
        if (in->op == IR_OP_REDUCE_PRECISION) {
          ir_attr_int(in, "exponent_bits", &s->ebits);
          ir_attr_int(in, "mantissa_bits", &s->mbits);
        }
      }
      if (c->root->op == IR_OP_TUPLE) {
        np->nout = c->root->noperands;
        for (int j = 0; j < np->nout; j++) np->out[j] = (int)(uintptr_t)ptrmap_get(&ci->pos, c->root->operands[j]) - 1;
      } else {
        np->nout = 1;
        np->out[0] = (int)(uintptr_t)ptrmap_get(&ci->pos, c->root) - 1;
      }
      if (!ok) {
        fx_free(np->steps);
        fx_free(np);
        np = NULL;
      }
    }
  }
  if (np) p = np;
  ptrmap_put(&x->scalar, c, p);
  return p;
}

bool rt_eval_scalar(RtExec *x, const IrComputation *c, const RtVal *in, const IrType *in_types, int nin,
                    RtVal *outs, int nout, FxError *err) {
  ScalarProg *p = scalar_prog(x, c);
  if (p != &not_scalar) {
    RtVal stackv[32];
    RtVal *v = p->n <= 32 ? stackv : fx_malloc(sizeof(RtVal) * (size_t)p->n);
    if (!v) return fx_error_set(err, NULL, 0, 0, "out of memory");
    bool ok = true;
    for (int k = 0; k < p->n && ok; k++) {
      const ScalarStep *s = &p->steps[k];
      switch (s->op) {
      case IR_OP_PARAMETER:
        if (s->param >= nin) ok = false;
        else v[k] = in[s->param];
        break;
      case IR_OP_CONSTANT: v[k] = s->lit; break;
      case IR_OP_TUPLE: break;
      case IR_OP_COMPARE: v[k].i = rt_ew_compare(s->dir, s->total, s->otype, v[s->a], v[s->b]); break;
      case IR_OP_SELECT: v[k] = v[s->a].i ? v[s->b] : v[s->c]; break;
      case IR_OP_CLAMP: {
        RtVal t1, t2;
        rt_ew_binary(IR_OP_MAXIMUM, s->type, v[s->b], v[s->a], &t1);
        rt_ew_binary(IR_OP_MINIMUM, s->type, t1, v[s->c], &t2);
        v[k] = t2;
        break;
      }
      case IR_OP_REDUCE_PRECISION:
        v[k] = rt_ew_reduce_precision(s->type, v[s->a], (int)s->ebits, (int)s->mbits);
        break;
      default:
        if (ir_op_info(s->op)->category == IR_CAT_UNARY) ok = rt_ew_unary(s->op, s->otype, s->type, v[s->a], &v[k]);
        else ok = rt_ew_binary(s->op, s->type, v[s->a], v[s->b], &v[k]);
      }
    }
    for (int j = 0; ok && j < nout && j < p->nout; j++) outs[j] = v[p->out[j]];
    if (v != stackv) fx_free(v);
    if (ok) return true;
  }
  /* general path: scalar tensors through the walker */
  RtTensor *args[64];
  if (nin > 64) return fx_error_set(err, NULL, 0, 0, "%s: too many parameters", c->name);
  int made = 0;
  bool ok = true;
  for (; made < nin; made++) {
    args[made] = rt_tensor_new(in_types[made], 0, NULL, err);
    if (!args[made]) {
      ok = false;
      break;
    }
    rt_val_store(args[made], 0, in[made]);
  }
  RtTensor *r = NULL;
  if (ok) ok = rt_exec_computation(x, c, args, nin, &r, err);
  if (ok) {
    if (r->type == IR_TUPLE) {
      for (int j = 0; j < nout && j < r->ntuple; j++) outs[j] = rt_val_load(r->tuple[j], 0);
    } else if (nout >= 1) {
      outs[0] = rt_val_load(r, 0);
    }
  }
  rt_tensor_unref(r);
  for (int k = 0; k < made; k++) rt_tensor_unref(args[k]);
  return ok;
}

/* ---------- control flow ---------- */

static bool call_comp(RtExec *x, const IrInstr *i, const char *key, RtTensor **ops, int nops, RtTensor **out,
                      FxError *err) {
  IrComputation *c = ir_attr_comp(i, key);
  if (!c) return instr_error(i, err, "names no computation to call");
  return rt_exec_computation(x, c, ops, nops, out, err);
}

/* The backend's copy of t's values, on the host (RtHooks.host_read). */
static bool host_read(RtExec *x, RtTensor *t, FxError *err) {
  return !x->o.hooks || !x->o.hooks->host_read || x->o.hooks->host_read(x->o.hooks->ctx, t, err);
}

/* Whether running i on the host reads its operands' values (not only passes the references on). */
static bool reads_operands(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_TUPLE: case IR_OP_GET_TUPLE_ELEMENT: case IR_OP_WHILE: case IR_OP_CALL: case IR_OP_OPT_BARRIER:
  case IR_OP_DOMAIN: case IR_OP_ADD_DEPENDENCY: case IR_OP_AFTER_ALL: case IR_OP_PARTITION_ID:
  case IR_OP_REPLICA_ID: case IR_OP_GET_DIMENSION_SIZE:
    return false;
  case IR_OP_CONDITIONAL: return false; /* the selector is read in op_conditional */
  default: return true;
  }
}

static bool op_while(RtExec *x, const IrInstr *i, RtTensor *init, RtTensor **out, FxError *err) {
  IrComputation *cond = ir_attr_comp(i, "condition"), *body = ir_attr_comp(i, "body");
  if (!cond || !body) return instr_error(i, err, "while needs condition= and body=");
  RtTensor *state = rt_tensor_ref(init);
  /* A backend runs a loop whose trip count is known as XLA:GPU does (ForThunk; WhileThunk given the
     trip count): the body trips times, the condition never. */
  int64_t trips = 0;
  bool for_loop = x->o.hooks && x->o.hooks->for_loops && plan_while_for_loop(i, &trips);
  for (int64_t t = 0;; t++) {
    if (for_loop && t >= trips) {
      *out = state;
      return true;
    }
    if (!rt_exec_poll(x, err)) break;
    if (!for_loop) {
      RtTensor *p = NULL;
      if (!rt_exec_computation(x, cond, &state, 1, &p, err)) break;
      if (!host_read(x, p, err)) {
        rt_tensor_unref(p);
        break;
      }
      bool go = p->type == IR_PRED && p->count == 1 && ((uint8_t *)p->data)[0];
      bool bad = p->type != IR_PRED || p->count != 1;
      rt_tensor_unref(p);
      if (bad) {
        instr_error(i, err, "the loop condition does not return pred[]");
        break;
      }
      if (!go) {
        *out = state;
        return true;
      }
    }
    RtTensor *next = NULL;
    if (!rt_exec_computation(x, body, &state, 1, &next, err)) break;
    rt_tensor_unref(state);
    state = next;
    x->c.while_iterations++;
  }
  rt_tensor_unref(state);
  return false;
}

static bool op_conditional(RtExec *x, const IrInstr *i, RtTensor **ops, int nops, RtTensor **out, FxError *err) {
  IrComputation *branches[64];
  int nb = 0;
  const IrAttr *ba = ir_attr_get(i, "branch_computations");
  if (ba && ba->kind == IR_ATTR_COMP) {
    for (int k = 0; k < ba->ncomps && k < 64; k++) branches[nb++] = ba->comps[k];
  } else {
    IrComputation *t = ir_attr_comp(i, "true_computation"), *f = ir_attr_comp(i, "false_computation");
    if (!t || !f) return instr_error(i, err, "conditional names no branch computations");
    branches[0] = t;
    branches[1] = f;
    nb = 2;
  }
  RtTensor *sel = ops[0];
  if (!host_read(x, sel, err)) return false;
  int64_t b;
  if (sel->type == IR_PRED) b = ((uint8_t *)sel->data)[0] ? 0 : 1;
  else {
    b = rt_get_i(sel, 0);
    if (b < 0 || b >= nb) b = nb - 1; /* XLA: out-of-range index runs the last branch */
  }
  if (nops != nb + 1) return instr_error(i, err, "conditional needs one operand per branch");
  return rt_exec_computation(x, branches[b], &ops[1 + b], 1, out, err);
}

/* ---------- asynchronous starts ---------- */

/* A value for shape s on one device: the operands' tuple, an operand of that shape, the started
 * computation's result, or zeros (the context words). */
static RtTensor *start_element(const IrShape *s, RtTensor **ops, int n, RtTensor *result, bool first, FxError *err) {
  if (s->type == IR_TUPLE && s->ntuple == n) {
    bool all = true;
    for (int k = 0; k < n; k++) all = all && rt_tensor_matches(ops[k], &s->tuple[k]);
    if (all) return rt_tensor_tuple(ops, n, err);
  }
  if (result && !first && rt_tensor_matches(result, s)) return rt_tensor_ref(result);
  for (int k = 0; k < n; k++)
    if (rt_tensor_matches(ops[k], s)) return first ? rt_tensor_clone(ops[k], err) : rt_tensor_ref(ops[k]);
  return rt_tensor_for_shape(s, err);
}

/* copy-start, all-gather-start, collective-permute-start and async-start on one device: the
 * tuple the instruction declares, filled from its operands (a copy for the destination), the
 * started computation's result (async-start) and zero context words. */
static bool start_tuple(const IrInstr *i, RtTensor **ops, int n, RtTensor *result, RtTensor **out, FxError *err) {
  const IrShape *s = &i->shape;
  if (s->type != IR_TUPLE || s->ntuple < 2 || s->ntuple > 16) return instr_error(i, err, "expects a tuple result of 2 to 16 elements");
  RtTensor *el[16] = {0};
  bool ok = true;
  for (int k = 0; ok && k < s->ntuple; k++) ok = (el[k] = start_element(&s->tuple[k], ops, n, result, k == 0 && !result, err)) != NULL;
  if (ok && result && !rt_tensor_matches(el[1], &s->tuple[1])) ok = instr_error(i, err, "the started computation's result does not match element 1");
  if (ok) *out = rt_tensor_tuple(el, s->ntuple, err);
  for (int k = 0; k < s->ntuple; k++) rt_tensor_unref(el[k]);
  return ok && *out;
}

/* ---------- one instruction ---------- */

static void collect_comps(const IrComputation *c, const IrComputation **out, int *n, int max) {
  for (int k = 0; k < *n; k++)
    if (out[k] == c) return;
  if (*n >= max) return;
  out[(*n)++] = c;
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (i->op != IR_OP_WHILE && i->op != IR_OP_CALL && i->op != IR_OP_CONDITIONAL) continue;
    IrComputation *called[64];
    int nc = ir_called_computations(i, called, 64);
    for (int q = 0; q < nc && q < 64; q++) collect_comps(called[q], out, n, max);
  }
}

int rt_host_computations(const IrComputation *entry, const IrComputation **out, int max) {
  int n = 0;
  collect_comps(entry, out, &n, max);
  return n;
}

bool rt_instr_is_free(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER: case IR_OP_CONSTANT: case IR_OP_TUPLE: case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_BITCAST: case IR_OP_OPT_BARRIER: case IR_OP_AFTER_ALL: case IR_OP_DOMAIN:
  case IR_OP_ADD_DEPENDENCY: case IR_OP_WHILE: case IR_OP_CALL: case IR_OP_CONDITIONAL:
  case IR_OP_PARTITION_ID: case IR_OP_REPLICA_ID: case IR_OP_GET_DIMENSION_SIZE:
    return true;
  case IR_OP_RESHAPE: return true; /* row-major reshape is a bitcast */
  case IR_OP_CUSTOM_CALL: {
    const char *t = ir_attr_text(i, "custom_call_target");
    return t && (strstr(t, "Sharding") || strstr(t, "SPMD"));
  }
  default: return false;
  }
}

static bool is_identity_custom_call(const char *t) {
  return strcmp(t, "\"Sharding\"") == 0 || strcmp(t, "\"SPMDFullToShardShape\"") == 0 ||
         strcmp(t, "\"SPMDShardToFullShape\"") == 0 || strcmp(t, "\"MoveToHost\"") == 0 ||
         strcmp(t, "\"MoveToDevice\"") == 0 || strcmp(t, "\"annotate_device_placement\"") == 0;
}

/* custom-call "cuda_threefry2x32" (JAX's GPU lowering of its PRNG): elementwise Threefry-2x32 of
 * (key0, key1, counter0, counter1), all u32 of one shape, giving a tuple of the two output words. */
static bool op_threefry(const IrInstr *i, RtTensor **ops, int n, RtTensor **out, FxError *err) {
  if (n != 4 || i->shape.type != IR_TUPLE || i->shape.ntuple != 2)
    return instr_error(i, err, "threefry2x32 takes (key0, key1, counter0, counter1) and returns two words");
  int64_t cnt = ops[2]->count;
  for (int k = 0; k < 4; k++)
    if (ops[k]->type != IR_U32 || (ops[k]->count != cnt && ops[k]->count != 1))
      return instr_error(i, err, "threefry2x32 operands must be u32 arrays of one shape");
  RtTensor *r = rt_tensor_for_shape(&i->shape, err);
  if (!r) return false;
  if (r->tuple[0]->count != cnt || r->tuple[1]->count != cnt || r->tuple[0]->type != IR_U32 || r->tuple[1]->type != IR_U32) {
    rt_tensor_unref(r);
    return instr_error(i, err, "threefry2x32 results must be u32 arrays of the operands' shape");
  }
  const uint32_t *k0 = ops[0]->data, *k1 = ops[1]->data, *c0 = ops[2]->data, *c1 = ops[3]->data;
  uint32_t *o0 = r->tuple[0]->data, *o1 = r->tuple[1]->data;
  bool s0 = ops[0]->count == 1, s1 = ops[1]->count == 1, s3 = ops[3]->count == 1;
  for (int64_t e = 0; e < cnt; e++) {
    uint32_t o[2];
    rt_threefry2x32(k0[s0 ? 0 : e], k1[s1 ? 0 : e], c0[e], c1[s3 ? 0 : e], o);
    o0[e] = o[0];
    o1[e] = o[1];
  }
  *out = r;
  return true;
}

bool rt_exec_instr(RtExec *x, const IrInstr *i, RtTensor **ops, RtTensor **out, FxError *err) {
  int n = i->noperands;
  *out = NULL;
  switch (i->op) {
  case IR_OP_CONSTANT: return op_constant(i, out, err);
  case IR_OP_IOTA: return op_iota(i, out, err);
  case IR_OP_BROADCAST: return op_broadcast(i, ops[0], out, err);
  case IR_OP_TRANSPOSE: return op_transpose(i, ops[0], out, err);
  case IR_OP_RESHAPE: return op_reshape(i, ops[0], out, err);
  case IR_OP_BITCAST: return op_bitcast(i, ops[0], out, err);
  case IR_OP_SLICE: return op_slice(i, ops[0], out, err);
  case IR_OP_DYNAMIC_SLICE: return op_dynamic_slice(i, ops, n, out, err);
  case IR_OP_DYNAMIC_UPDATE_SLICE: return op_dynamic_update_slice(i, ops, n, out, err);
  case IR_OP_CONCATENATE: return op_concatenate(i, ops, n, out, err);
  case IR_OP_PAD: return op_pad(i, ops[0], ops[1], out, err);
  case IR_OP_REVERSE: return op_reverse(i, ops[0], out, err);
  case IR_OP_GATHER: return rt_op_gather(x, i, ops, out, err);
  case IR_OP_SCATTER: return rt_op_scatter(x, i, ops, out, err);
  case IR_OP_REDUCE: return rt_op_reduce(x, i, ops, out, err);
  case IR_OP_REDUCE_WINDOW: return rt_op_reduce_window(x, i, ops, out, err);
  case IR_OP_SELECT_AND_SCATTER: return rt_op_select_and_scatter(x, i, ops, out, err);
  case IR_OP_FFT: return rt_op_fft(x, i, ops, out, err);
  case IR_OP_TRIANGULAR_SOLVE: return rt_op_triangular_solve(x, i, ops, out, err);
  case IR_OP_CHOLESKY: return rt_op_cholesky(x, i, ops, out, err);
  case IR_OP_BATCH_NORM_INFERENCE: return rt_op_batch_norm_inference(x, i, ops, out, err);
  case IR_OP_BATCH_NORM_TRAINING: return rt_op_batch_norm_training(x, i, ops, out, err);
  case IR_OP_BATCH_NORM_GRAD: return rt_op_batch_norm_grad(x, i, ops, out, err);
  case IR_OP_SET_DIMENSION_SIZE: /* the static view: the padded array itself */
    *out = rt_tensor_ref(ops[0]);
    return true;
  case IR_OP_COPY_START: case IR_OP_ALL_GATHER_START: case IR_OP_COLLECTIVE_PERMUTE_START:
    /* one device: (destination, source[, contexts]) where the destination holds the operand */
    return start_tuple(i, ops, n, NULL, out, err);
  case IR_OP_ASYNC_START: {
    RtTensor *res = NULL;
    if (!call_comp(x, i, "calls", ops, n, &res, err)) return false;
    bool ok = start_tuple(i, ops, n, res, out, err);
    rt_tensor_unref(res);
    return ok;
  }
  case IR_OP_ASYNC_UPDATE: case IR_OP_ALL_REDUCE_DONE:
    *out = rt_tensor_ref(ops[0]);
    return true;
  case IR_OP_ASYNC_DONE: case IR_OP_ALL_GATHER_DONE: case IR_OP_COLLECTIVE_PERMUTE_DONE:
    /* the started operation's result: element 1 of its tuple */
    if (ops[0]->type != IR_TUPLE || ops[0]->ntuple < 2 || !rt_tensor_matches(ops[0]->tuple[1], &i->shape))
      return instr_error(i, err, "expects the (operands, result, ...) tuple of its start");
    *out = rt_tensor_ref(ops[0]->tuple[1]);
    return true;
  case IR_OP_ALL_REDUCE_START:
    if (n == 1 && rt_tensor_matches(ops[0], &i->shape)) {
      *out = rt_tensor_ref(ops[0]);
      return true;
    }
    if (n > 1 && i->shape.type == IR_TUPLE) {
      *out = rt_tensor_tuple(ops, n, err);
      return *out != NULL;
    }
    return instr_error(i, err, "all-reduce-start changes the shape, which needs more than one device");
  case IR_OP_INFEED: case IR_OP_OUTFEED: case IR_OP_SEND: case IR_OP_SEND_DONE: case IR_OP_RECV: case IR_OP_RECV_DONE: {
    char msg[200];
    snprintf(msg, sizeof msg, "%s exchanges data with the host or another device, which a run of one module does not have",
             ir_op_name(i->op));
    return instr_error(i, err, msg);
  }
  case IR_OP_DOT: return rt_op_dot(x, i, ops, out, err);
  case IR_OP_CONVOLUTION: return rt_op_convolution(x, i, ops, out, err);
  case IR_OP_RNG: return rt_op_rng(x, i, ops, out, err);
  case IR_OP_RNG_BIT_GENERATOR: return rt_op_rng_bit_generator(x, i, ops, out, err);
  case IR_OP_RNG_GET_AND_UPDATE_STATE: {
    /* XLA's semantics: each instruction keeps a 128-bit state, starting at 0x7012395; it returns
       the state as u64[2] {low, high} and then adds delta. The state starts afresh each run, so
       runs are reproducible (XLA keeps it across executions of one compiled program). */
    int64_t delta = 0;
    if (!ir_attr_int(i, "delta", &delta) || delta < 0)
      return instr_error(i, err, "rng-get-and-update-state needs a non-negative delta");
    if (i->shape.type != IR_U64 || ir_shape_elements(&i->shape) != 2)
      return instr_error(i, err, "rng-get-and-update-state returns u64[2]");
    unsigned __int128 st = (unsigned __int128)0x7012395u + (unsigned __int128)rt_exec_rng_counter(x, i) * (uint64_t)delta;
    RtTensor *r = new_like_shape(i, err);
    if (!r) return false;
    rt_set_i(r, 0, (int64_t)(uint64_t)st);
    rt_set_i(r, 1, (int64_t)(uint64_t)(st >> 64));
    *out = r;
    return true;
  }
  case IR_OP_SORT: return rt_op_sort(x, i, ops, out, err);
  case IR_OP_TOPK: return rt_op_topk(x, i, ops, out, err);
  case IR_OP_MAP: return rt_op_map(x, i, ops, out, err);
  case IR_OP_TUPLE:
    *out = rt_tensor_tuple(ops, n, err);
    return *out != NULL;
  case IR_OP_GET_TUPLE_ELEMENT: {
    int64_t k;
    if (!ir_attr_int(i, "index", &k) || ops[0]->type != IR_TUPLE || k < 0 || k >= ops[0]->ntuple)
      return instr_error(i, err, "get-tuple-element index is out of range");
    *out = rt_tensor_ref(ops[0]->tuple[k]);
    return true;
  }
  case IR_OP_OPT_BARRIER: case IR_OP_DOMAIN: case IR_OP_ADD_DEPENDENCY: case IR_OP_COPY_DONE:
    *out = rt_tensor_ref(ops[0]);
    if (i->op == IR_OP_COPY_DONE && ops[0]->type == IR_TUPLE && ops[0]->ntuple > 0) {
      rt_tensor_unref(*out);
      *out = rt_tensor_ref(ops[0]->tuple[0]);
    }
    return true;
  case IR_OP_AFTER_ALL:
    *out = rt_tensor_new(IR_TOKEN, 0, NULL, err);
    return *out != NULL;
  case IR_OP_PARTITION_ID: case IR_OP_REPLICA_ID:
    *out = new_like_shape(i, err); /* a single device: 0 */
    return *out != NULL;
  case IR_OP_GET_DIMENSION_SIZE: {
    int64_t d;
    if (!ir_attr_dims(i, "dimensions", &d, 1) || d < 0 || d >= ops[0]->rank)
      return instr_error(i, err, "get-dimension-size needs dimensions={d}");
    if (!(*out = new_like_shape(i, err))) return false;
    rt_set_i(*out, 0, ops[0]->dims[d]);
    return true;
  }
  case IR_OP_ALL_REDUCE: case IR_OP_ALL_GATHER: case IR_OP_REDUCE_SCATTER: case IR_OP_ALL_TO_ALL:
  case IR_OP_COLLECTIVE_BROADCAST: case IR_OP_COLLECTIVE_PERMUTE:
    /* one participant: every collective is the identity on its operand(s) */
    if (n == 1 && rt_tensor_matches(ops[0], &i->shape)) {
      *out = rt_tensor_ref(ops[0]);
      return true;
    }
    if (n > 1 && i->shape.type == IR_TUPLE) {
      *out = rt_tensor_tuple(ops, n, err);
      return *out != NULL;
    }
    return instr_error(i, err, "this collective changes the shape, which needs more than one device");
  case IR_OP_WHILE: return op_while(x, i, ops[0], out, err);
  case IR_OP_CALL: return call_comp(x, i, "to_apply", ops, n, out, err);
  case IR_OP_FUSION: return call_comp(x, i, "calls", ops, n, out, err);
  case IR_OP_CONDITIONAL: return op_conditional(x, i, ops, n, out, err);
  case IR_OP_CUSTOM_CALL: {
    const char *t = ir_attr_text(i, "custom_call_target");
    if (t && is_identity_custom_call(t) && n == 1) {
      *out = rt_tensor_ref(ops[0]);
      return true;
    }
    if (t && (strcmp(t, "\"cuda_threefry2x32\"") == 0 || strcmp(t, "\"cu_threefry2x32\"") == 0 ||
              strcmp(t, "\"threefry2x32\"") == 0))
      return op_threefry(i, ops, n, out, err);
    PlanCustomCall cc = plan_custom_call(i);
    if (cc == PLAN_CC_CUDNN_CONV || cc == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) return rt_op_cudnn_conv(x, i, ops, n, out, err);
    if (cc == PLAN_CC_GPU_TOPK && n == 1) return rt_op_topk(x, i, ops, out, err); /* topk-specializer's call */
    if (cc == PLAN_CC_CUB_SORT_KEYS || cc == PLAN_CC_CUB_SORT_PAIRS) return rt_op_cub_sort(x, i, ops, n, out, err);
    char msg[320];
    snprintf(msg, sizeof msg, "custom-call target %s is not known to the interpreter", t ? t : "(none)");
    return instr_error(i, err, msg);
  }
  case IR_OP_PARAMETER: return instr_error(i, err, "a parameter is bound by the caller");
  default:
    if (ir_op_is_elementwise(i->op) || i->op == IR_OP_COPY) return rt_op_elementwise(x, i, ops, out, err);
    {
      char msg[200];
      snprintf(msg, sizeof msg, "the interpreter does not implement %s", ir_op_name(i->op));
      return instr_error(i, err, msg);
    }
  }
}

/* ---------- the walker ---------- */

/* Bytes per launch come from the kernel plan (plan_kernel_bytes), as in every backend. */
static void count_kernel(RtExec *x, const IrInstr *i) {
  if (rt_instr_is_free(i) || i->parent->fusion_instr) return;
  x->c.launches++;
  int64_t rd, wr;
  plan_kernel_bytes(i, &rd, &wr);
  x->c.bytes_read += rd;
  x->c.bytes_written += wr;
}

bool rt_exec_computation(RtExec *x, const IrComputation *c, RtTensor **args, int nargs, RtTensor **out,
                         FxError *err) {
  *out = NULL;
  if (x->depth > 200) return fx_error_set(err, NULL, 0, 0, "%s: calls nest too deeply", c->name);
  if (x->o.hooks && x->o.hooks->computation) {
    bool handled = false;
    if (!x->o.hooks->computation(x->o.hooks->ctx, x, c, args, nargs, out, &handled, err)) return false;
    if (handled) return true;
  }
  CompInfo *ci = comp_info(x, c, err);
  if (!ci) return false;
  if (!c->root) return fx_error_set(err, NULL, 0, 0, "computation %s has no root", c->name);
  RtTensor *stackv[64];
  RtTensor **vals = c->ninstrs <= 64 ? stackv : fx_calloc((size_t)c->ninstrs, sizeof *vals);
  if (!vals) return fx_error_set(err, NULL, 0, 0, "out of memory");
  memset(vals, 0, sizeof *vals * (size_t)(c->ninstrs <= 64 ? 64 : 0));
  RtTensor *opstack[16];
  bool ok = true;
  /* reuse of invariant values (plain interpreter only): the second call keeps them, later calls
     read them */
  bool keeping = false, reusing = false;
  if (!x->o.hooks && !x->o.count_kernels && ci->reuse >= 0) {
    ci->calls++;
    reusing = ci->reuse == 1;
    if (!reusing && ci->calls == 2) {
      ci->kept = fx_calloc((size_t)c->ninstrs + 1, sizeof *ci->kept);
      keeping = ci->kept != NULL;
      if (!keeping) ci->reuse = -1;
    }
  }
  x->depth++;
  for (int k = 0; k < c->ninstrs && ok; k++) {
    const IrInstr *in = c->instrs[k];
    if (reusing && ci->invariant[k]) {
      if (ci->keep[k]) vals[k] = rt_tensor_ref(ci->kept[k]);
      x->c.reused++;
      continue;
    }
    if (in->op == IR_OP_PARAMETER) {
      if (in->param_number < 0 || in->param_number >= nargs) {
        ok = instr_error(in, err, "parameter number is out of range of the arguments");
        break;
      }
      if (!rt_tensor_matches(args[in->param_number], &in->shape)) {
        char have[128], want[128];
        rt_tensor_describe(args[in->param_number], have, sizeof have);
        ir_shape_format(&in->shape, false, want, sizeof want);
        char msg[400];
        snprintf(msg, sizeof msg, "argument of shape %s does not match the parameter's %s", have, want);
        ok = instr_error(in, err, msg);
        break;
      }
      vals[k] = rt_tensor_ref(args[in->param_number]);
      continue;
    }
    RtTensor **ops = in->noperands <= 16 ? opstack : fx_calloc((size_t)in->noperands, sizeof *ops);
    if (!ops) {
      ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      break;
    }
    for (int j = 0; j < in->noperands; j++) {
      uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, in->operands[j]);
      ops[j] = p ? vals[p - 1] : NULL;
      if (!ops[j]) ok = instr_error(in, err, "an operand is not computed before its use");
    }
    if (ok) {
      bool handled = false;
      if (x->o.hooks) ok = x->o.hooks->exec(x->o.hooks->ctx, x, in, ops, &vals[k], &handled, err);
      for (int j = 0; ok && !handled && j < in->noperands && reads_operands(in); j++) ok = host_read(x, ops[j], err);
      if (ok && !handled) {
        ok = rt_exec_instr(x, in, ops, &vals[k], err);
        if (ok && x->o.count_kernels) count_kernel(x, in);
      }
      if (ok && !vals[k]) ok = instr_error(in, err, "produced no value");
      if (ok && keeping && ci->keep[k]) ci->kept[k] = rt_tensor_ref(vals[k]);
    }
    if (ops != opstack) fx_free(ops);
    if (ok && !rt_exec_poll(x, err)) ok = false;
    /* drop values whose last user was this instruction */
    for (int j = 0; ok && j < in->noperands; j++) {
      uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, in->operands[j]);
      if (p && ci->last_use[p - 1] == k && vals[p - 1]) {
        rt_tensor_unref(vals[p - 1]);
        vals[p - 1] = NULL;
      }
    }
  }
  x->depth--;
  if (keeping) {
    uint64_t held = 0, cap = KEEP_MAX_BYTES;
    if (rt_max_memory() && rt_max_memory() / 4 < cap) cap = rt_max_memory() / 4;
    bool any = false;
    for (int k = 0; k < c->ninstrs; k++) {
      held += value_bytes(ci->kept[k]);
      any = any || ci->kept[k];
    }
    ci->reuse = ok && any && held <= cap ? 1 : -1;
    if (ci->reuse < 0) comp_info_forget_kept(ci);
  }
  if (ok) {
    uintptr_t p = (uintptr_t)ptrmap_get(&ci->pos, c->root);
    *out = p ? rt_tensor_ref(vals[p - 1]) : NULL;
    if (!*out) ok = fx_error_set(err, NULL, 0, 0, "computation %s: the root was not computed", c->name);
  }
  for (int k = 0; k < c->ninstrs; k++) rt_tensor_unref(vals[k]);
  if (vals != stackv) fx_free(vals);
  return ok;
}

bool rt_interp_run(const IrModule *m, RtTensor **args, int nargs, const RtOptions *o, RtTensor **result,
                   RtCounters *counters, FxError *err) {
  *result = NULL;
  if (!m->entry) return fx_error_set(err, NULL, 0, 0, "the module has no entry computation");
  if (nargs != m->entry->nparams)
    return fx_error_set(err, NULL, 0, 0, "the entry computation takes %d parameters, %d given", m->entry->nparams,
                        nargs);
  RtExec x;
  memset(&x, 0, sizeof x);
  x.m = m;
  if (o) x.o = *o;
  bool ok = rt_exec_computation(&x, m->entry, args, nargs, result, err);
  if (counters) *counters = x.c;
  for (size_t k = 0; k < x.comps.cap; k++)
    if (x.comps.keys[k]) {
      CompInfo *ci = x.comps.vals[k];
      comp_info_forget_kept(ci);
      ptrmap_free(&ci->pos);
      fx_free(ci->last_use);
      fx_free(ci->invariant);
      fx_free(ci->keep);
      fx_free(ci);
    }
  for (size_t k = 0; k < x.scalar.cap; k++)
    if (x.scalar.keys[k] && x.scalar.vals[k] != &not_scalar) {
      ScalarProg *p = x.scalar.vals[k];
      fx_free(p->steps);
      fx_free(p);
    }
  ptrmap_free(&x.comps);
  ptrmap_free(&x.scalar);
  ptrmap_free(&x.rng);
  return ok;
}

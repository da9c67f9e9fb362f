/* ir.c — the IR's core: opcode and type tables, shapes, building and editing modules.
 *
 * Sits under everything: the parsers build with these functions, the passes edit with them, and
 * every reader walks the structures declared in ir.h. */
#include <errno.h>
#include "ir.h"
#include "ir_internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------- opcode table ---------- */

static const IrOpInfo op_table[IR_OP_COUNT] = {
#define OP(id, spelling, arity, cat, expensive, fusible, desc) {spelling, arity, cat, expensive, fusible, desc},
#include "opcodes.def"
#undef OP
};

const IrOpInfo *ir_op_info(IrOpcode op) { return &op_table[op < IR_OP_COUNT ? op : 0]; }
const char *ir_op_name(IrOpcode op) { return ir_op_info(op)->spelling; }

bool ir_op_lookup(const char *s, size_t len, IrOpcode *out) {
  for (int i = 0; i < IR_OP_COUNT; i++) {
    if (strlen(op_table[i].spelling) == len && memcmp(op_table[i].spelling, s, len) == 0) {
      *out = (IrOpcode)i;
      return true;
    }
  }
  /* XLA accepts "optimization-barrier" spelled out in some dumps. */
  if (len == 20 && memcmp(s, "optimization-barrier", 20) == 0) {
    *out = IR_OP_OPT_BARRIER;
    return true;
  }
  return false;
}

bool ir_op_is_elementwise(IrOpcode op) {
  IrCategory c = ir_op_info(op)->category;
  return c == IR_CAT_UNARY || c == IR_CAT_BINARY || c == IR_CAT_TERNARY;
}

/* ---------- types ---------- */

static const struct {
  const char *name;
  int bytes;
} type_table[IR_TYPE_COUNT] = {
#define X(id, name, bytes) {name, bytes},
    IR_TYPES(X)
#undef X
};

const char *ir_type_name(IrType t) { return t < IR_TYPE_COUNT ? type_table[t].name : "invalid"; }
int ir_type_bytes(IrType t) { return t < IR_TYPE_COUNT ? type_table[t].bytes : 0; }

int ir_type_bits(IrType t) {
  switch (t) {
  case IR_S1:
  case IR_U1: return 1;
  case IR_S2:
  case IR_U2: return 2;
  case IR_S4:
  case IR_U4:
  case IR_F4E2M1FN: return 4;
  default: return 8 * ir_type_bytes(t);
  }
}

bool ir_type_lookup(const char *s, size_t len, IrType *out) {
  for (int i = 1; i < IR_TYPE_COUNT; i++) {
    if (strlen(type_table[i].name) == len && memcmp(type_table[i].name, s, len) == 0) {
      *out = (IrType)i;
      return true;
    }
  }
  return false;
}

bool ir_type_is_f8(IrType t) {
  return t == IR_F8E4M3FN || t == IR_F8E5M2 || t == IR_F8E4M3FNUZ || t == IR_F8E5M2FNUZ || t == IR_F8E4M3B11FNUZ ||
         t == IR_F8E4M3 || t == IR_F8E3M4 || t == IR_F8E8M0FNU;
}
bool ir_type_is_float(IrType t) {
  return t == IR_F16 || t == IR_BF16 || t == IR_F32 || t == IR_F64 || ir_type_is_f8(t) || t == IR_F4E2M1FN;
}
bool ir_type_is_signed(IrType t) {
  return t == IR_S1 || t == IR_S2 || t == IR_S4 || t == IR_S8 || t == IR_S16 || t == IR_S32 || t == IR_S64;
}
bool ir_type_is_int(IrType t) {
  return ir_type_is_signed(t) || t == IR_U1 || t == IR_U2 || t == IR_U4 || t == IR_U8 || t == IR_U16 || t == IR_U32 ||
         t == IR_U64;
}
bool ir_type_is_uncomputed(IrType t) {
  return t == IR_S1 || t == IR_S2 || t == IR_U1 || t == IR_U2 || t == IR_F4E2M1FN;
}
bool ir_type_is_complex(IrType t) { return t == IR_C64 || t == IR_C128; }

/* ---------- shapes ---------- */

static int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a < 0 || b < 0) return INT64_MAX;
  if (a > INT64_MAX / b) return INT64_MAX;
  return a * b;
}
static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

int64_t ir_shape_elements(const IrShape *s) {
  if (s->type == IR_TUPLE || s->type == IR_TOKEN) return 0;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n = sat_mul(n, s->dims[i]);
  return n;
}

int64_t ir_shape_bytes(const IrShape *s) {
  if (s->type == IR_TUPLE) {
    int64_t b = 0;
    for (int i = 0; i < s->ntuple; i++) b = sat_add(b, ir_shape_bytes(&s->tuple[i]));
    return b;
  }
  return sat_mul(ir_shape_elements(s), ir_type_bytes(s->type));
}

bool ir_shape_same_dims(const IrShape *a, const IrShape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool ir_shape_equal(const IrShape *a, const IrShape *b) {
  if (a->type != b->type || a->buffer != b->buffer) return false;
  if (a->type == IR_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!ir_shape_equal(&a->tuple[i], &b->tuple[i])) return false;
    return true;
  }
  return ir_shape_same_dims(a, b);
}

bool ir_shape_is_array(const IrShape *s) { return s->type != IR_TUPLE && s->type != IR_TOKEN; }
bool ir_shape_is_scalar(const IrShape *s) { return ir_shape_is_array(s) && s->rank == 0; }

bool ir_shape_default_layout(const IrShape *s) {
  if (!s->has_layout || !s->minor_to_major) return true;
  for (int k = 0; k < s->rank; k++)
    if (s->minor_to_major[k] != s->rank - 1 - k) return false;
  return true;
}

bool ir_shape_copy(Arena *a, IrShape *dst, const IrShape *src) {
  IrShape s = *src;
  bool ok = true;
  s.dims = NULL;
  s.dynamic = NULL;
  s.minor_to_major = NULL;
  s.tuple = NULL;
  s.layout_extra = NULL;
  if (src->rank > 0) {
    s.dims = arena_alloc(a, sizeof(int64_t) * (size_t)src->rank);
    if (s.dims) memcpy(s.dims, src->dims, sizeof(int64_t) * (size_t)src->rank);
    else ok = false;
    if (src->dynamic) {
      s.dynamic = arena_alloc(a, sizeof(bool) * (size_t)src->rank);
      if (s.dynamic) memcpy(s.dynamic, src->dynamic, sizeof(bool) * (size_t)src->rank);
    }
    if (src->minor_to_major) {
      s.minor_to_major = arena_alloc(a, sizeof(int) * (size_t)src->rank);
      if (s.minor_to_major) memcpy(s.minor_to_major, src->minor_to_major, sizeof(int) * (size_t)src->rank);
    }
  }
  if (src->layout_extra) {
    s.layout_extra = arena_strdup(a, src->layout_extra);
    if (!s.layout_extra) ok = false;
  }
  if (src->ntuple > 0) {
    s.tuple = arena_alloc(a, sizeof(IrShape) * (size_t)src->ntuple);
    if (s.tuple) {
      for (int i = 0; i < src->ntuple; i++)
        if (!ir_shape_copy(a, &s.tuple[i], &src->tuple[i])) ok = false;
    } else {
      ok = false;
    }
  }
  if (!ok) {
    /* Out of memory: leave a shape that is structurally safe to read (no dangling counts). */
    s.rank = 0;
    s.ntuple = 0;
    s.dims = NULL;
    s.dynamic = NULL;
    s.minor_to_major = NULL;
    s.tuple = NULL;
  }
  *dst = s;
  return ok;
}

IrShape ir_shape_array(Arena *a, IrType t, int rank, const int64_t *dims) {
  IrShape s;
  memset(&s, 0, sizeof s);
  s.type = t;
  s.rank = rank;
  s.has_layout = true;
  if (rank > 0) {
    s.dims = arena_alloc(a, sizeof(int64_t) * (size_t)rank);
    s.minor_to_major = arena_alloc(a, sizeof(int) * (size_t)rank);
    if (s.dims && s.minor_to_major) {
      memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
      for (int i = 0; i < rank; i++) s.minor_to_major[i] = rank - 1 - i;
    }
  }
  return s;
}

IrShape ir_shape_scalar(IrType t) {
  IrShape s;
  memset(&s, 0, sizeof s);
  s.type = t;
  s.has_layout = false;
  return s;
}

typedef struct {
  char *buf;
  size_t n, len;
} Out;

static void outf(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void outf(Out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *dst = o->buf && o->len < o->n ? o->buf + o->len : NULL;
  size_t room = o->buf && o->len < o->n ? o->n - o->len : 0;
  int k = vsnprintf(dst, room, fmt, ap);
  va_end(ap);
  if (k > 0) o->len += (size_t)k;
}

static void shape_fmt(Out *o, const IrShape *s, bool with_layout) {
  if (s->type == IR_TUPLE) {
    outf(o, "(");
    for (int i = 0; i < s->ntuple; i++) {
      if (i) outf(o, ", ");
      shape_fmt(o, &s->tuple[i], with_layout);
    }
    outf(o, ")");
    return;
  }
  if (s->type == IR_TOKEN) {
    outf(o, "token[]");
    return;
  }
  if (s->buffer) outf(o, "b(");
  outf(o, "%s[", ir_type_name(s->type));
  for (int i = 0; i < s->rank; i++) {
    if (i) outf(o, ",");
    if (s->dynamic && s->dynamic[i]) outf(o, "<=");
    outf(o, "%" PRId64, s->dims[i]);
  }
  outf(o, "]");
  if (with_layout && s->has_layout && (s->rank > 0 || s->layout_extra)) {
    outf(o, "{");
    for (int i = 0; i < s->rank; i++) outf(o, i ? ",%d" : "%d", s->minor_to_major ? s->minor_to_major[i] : s->rank - 1 - i);
    if (s->layout_extra) outf(o, ":%s", s->layout_extra);
    outf(o, "}");
  }
  if (s->buffer) outf(o, ")");
}

int ir_shape_format(const IrShape *s, bool with_layout, char *buf, size_t n) {
  Out o = {buf, n, 0};
  if (buf && n) buf[0] = 0;
  shape_fmt(&o, s, with_layout);
  if (buf && n) buf[o.len < n ? o.len : n - 1] = 0;
  return (int)o.len;
}

void ir_shape_print(FILE *f, const IrShape *s, bool with_layout) {
  int n = ir_shape_format(s, with_layout, NULL, 0);
  char small[256];
  char *b = (size_t)n < sizeof small ? small : fx_malloc((size_t)n + 1);
  if (!b) return;
  ir_shape_format(s, with_layout, b, (size_t)n + 1);
  fputs(b, f);
  if (b != small) fx_free(b);
}

/* ---------- name indexes: open addressing, name -> pointer ----------
 * One index maps instruction names to instructions (names stay reserved after removal), one maps
 * computation names to computations, and one remembers, for each name series ("fusion",
 * "fused_computation"), the next free number, so creating thousands of fusions stays linear. */

typedef struct IrNameIndex {
  const char **keys;
  void **vals;
  uint32_t *hashes; /* each key's hash (its low 32 bits: slots are found by the low bits): probes
                     * compare it before the name, and growing never hashes a name again */
  size_t cap, count;
} IrNameIndex;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool ix_put_rekey(IrNameIndex *ix, const char *name, uint32_t h, void *v, bool rekey);

static bool ix_rehash(IrNameIndex *ix, size_t cap) {
  const char **ok = ix->keys;
  void **ov = ix->vals;
  uint32_t *oh = ix->hashes;
  size_t ocap = ix->cap;
  const char **nk = fx_calloc(cap, sizeof *nk);
  void **nv = fx_calloc(cap, sizeof *nv);
  uint32_t *nh = fx_malloc(sizeof *nh * cap);
  if (!nk || !nv || !nh) {
    fx_free(nk);
    fx_free(nv);
    fx_free(nh);
    return false;
  }
  ix->keys = nk;
  ix->vals = nv;
  ix->hashes = nh;
  ix->cap = cap;
  ix->count = 0;
  for (size_t i = 0; i < ocap; i++)
    if (ok[i]) ix_put_rekey(ix, ok[i], oh[i], ov[i], false);
  fx_free(ok);
  fx_free(ov);
  fx_free(oh);
  return true;
}

/* rekey: a name already there takes name's pointer as its key (the instruction index: a slot's key
 * is then the very string its instruction is named by, see ir_module_names_indexed). */
static bool ix_put_rekey(IrNameIndex *ix, const char *name, uint32_t h, void *v, bool rekey) {
  if ((ix->count + 1) * 4 > ix->cap * 3 && !ix_rehash(ix, ix->cap ? ix->cap * 2 : 256)) return false;
  size_t i = h & (ix->cap - 1);
  while (ix->keys[i]) {
    if (ix->hashes[i] == h && strcmp(ix->keys[i], name) == 0) {
      ix->vals[i] = v;
      if (rekey) ix->keys[i] = name;
      return true;
    }
    i = (i + 1) & (ix->cap - 1);
  }
  ix->keys[i] = name;
  ix->vals[i] = v;
  ix->hashes[i] = h;
  ix->count++;
  return true;
}

static bool ix_put_hashed(IrNameIndex *ix, const char *name, uint32_t h, void *v) {
  return ix_put_rekey(ix, name, h, v, false);
}

static bool ix_put(IrNameIndex *ix, const char *name, void *v) {
  return ix_put_hashed(ix, name, (uint32_t)hash_str(name), v);
}

static void *ix_get_hashed(const IrNameIndex *ix, const char *name, uint32_t h, bool *present) {
  if (present) *present = false;
  if (!ix || !ix->cap) return NULL;
  size_t i = h & (ix->cap - 1);
  while (ix->keys[i]) {
    if (ix->hashes[i] == h && strcmp(ix->keys[i], name) == 0) {
      if (present) *present = true;
      return ix->vals[i];
    }
    i = (i + 1) & (ix->cap - 1);
  }
  return NULL;
}

static void *ix_get(const IrNameIndex *ix, const char *name, bool *present) {
  return ix_get_hashed(ix, name, (uint32_t)hash_str(name), present);
}

static void ix_free(IrNameIndex *ix) {
  if (!ix) return;
  fx_free(ix->keys);
  fx_free(ix->vals);
  fx_free(ix->hashes);
  fx_free(ix);
}

/* The instruction index's values are ids plus one (0: a reserved name), looked up in by_id: an
 * id stays valid in every copy of the module, so a snapshot copies the index without a pass
 * over its slots (one that mapped each old instruction to its copy was the larger half of
 * copying a 100,000-instruction stage). */
static IrInstr *by_id_get(const IrModule *m, const void *v) {
  intptr_t id = (intptr_t)v - 1;
  return id >= 0 && id < m->by_cap ? m->by_id[id] : NULL;
}

static bool by_id_set(IrModule *m, IrInstr *i) {
  if (i->id >= m->by_cap) {
    int cap = m->by_cap ? m->by_cap : 256;
    while (cap <= i->id) cap *= 2;
    IrInstr **n = fx_realloc(m->by_id, sizeof *n * (size_t)cap);
    if (!n) return false;
    memset(n + m->by_cap, 0, sizeof *n * (size_t)(cap - m->by_cap));
    m->by_id = n;
    m->by_cap = cap;
  }
  m->by_id[i->id] = i;
  return true;
}

static bool index_put(IrModule *m, const char *name, IrInstr *v) {
  return ix_put_rekey(m->names, name, (uint32_t)hash_str(name), v ? (void *)(intptr_t)(v->id + 1) : NULL, true);
}
static IrInstr *index_get(const IrModule *m, const char *name, bool *present) {
  return by_id_get(m, ix_get(m->names, name, present));
}

bool ir_module_reindex(IrModule *m, const IrModule *reserved_from) {
  return ir_module_reindex_from(m, reserved_from, false);
}

bool ir_module_reindex_from(IrModule *m, const IrModule *reserved_from, bool share_names) {
  IrNameIndex *ix = m->names;
  fx_free(ix->keys);
  fx_free(ix->vals);
  fx_free(ix->hashes);
  ix->keys = NULL;
  ix->vals = NULL;
  ix->hashes = NULL;
  ix->cap = ix->count = 0;
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++)
      if (!index_put(m, m->comps[k]->instrs[j]->name, m->comps[k]->instrs[j])) return false;
  if (reserved_from && reserved_from->names) {
    const IrNameIndex *rx = reserved_from->names;
    for (size_t i = 0; i < rx->cap; i++) {
      if (!rx->keys[i]) continue;
      bool present;
      ix_get_hashed(m->names, rx->keys[i], rx->hashes[i], &present);
      if (present) continue;
      const char *key = share_names ? rx->keys[i] : arena_strdup(&m->arena, rx->keys[i]);
      if (!key || !ix_put_hashed(m->names, key, rx->hashes[i], NULL)) return false;
    }
  }
  return true;
}

bool ir_module_copy_names(IrModule *d, const IrModule *m, bool share_names) {
  const IrNameIndex *rx = m->names;
  IrNameIndex *ix = d->names;
  if (!rx || !rx->cap || ix->cap) return ir_module_reindex_from(d, m, share_names);
  const char **keys = fx_malloc(sizeof *keys * rx->cap);
  void **vals = fx_malloc(sizeof *vals * rx->cap);
  uint32_t *hashes = fx_malloc(sizeof *hashes * rx->cap);
  if (!keys || !vals || !hashes) {
    fx_free(keys);
    fx_free(vals);
    fx_free(hashes);
    return false;
  }
  memcpy(keys, rx->keys, sizeof *keys * rx->cap);
  memcpy(vals, rx->vals, sizeof *vals * rx->cap);
  memcpy(hashes, rx->hashes, sizeof *hashes * rx->cap);
  /* A deep copy keeps no pointer into m: a slot's key becomes the name of the copy it names, or
   * a copy of its own (a reserved name, or an instruction m had removed). */
  bool ok = true;
  for (size_t i = 0; i < rx->cap && ok && !share_names; i++) {
    if (!keys[i]) continue;
    const IrInstr *v = by_id_get(d, vals[i]);
    ok = (keys[i] = v ? v->name : arena_strdup(&d->arena, keys[i])) != NULL;
  }
  ix->keys = keys;
  ix->vals = vals;
  ix->hashes = hashes;
  ix->cap = rx->cap;
  ix->count = rx->count;
  return ok;
}

bool ir_module_names_indexed(const IrModule *m, const char **seen, size_t nseen, const IrInstr **missing) {
  const IrNameIndex *ix = m->names;
  *missing = NULL;
  memset(seen, 0, sizeof *seen * nseen);
  const uint32_t empty = (uint32_t)hash_str("");
  /* seen[id]: the name string the index files instruction id under (the slot arrays are read in
   * order; no instruction and no name is read here) */
  for (size_t s = 0; ix && s < ix->cap; s++) {
    intptr_t id = (intptr_t)ix->vals[s] - 1;
    if (id < 0 || (size_t)id >= nseen) continue;
    if (ix->hashes[s] == empty && !ix->keys[s][0]) return false;
    seen[id] = ix->keys[s];
  }
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) {
      const IrInstr *i = m->comps[k]->instrs[j];
      if (i->id < 0 || (size_t)i->id >= nseen || seen[i->id] != i->name || i->id >= m->by_cap || m->by_id[i->id] != i) {
        *missing = i;
        return false;
      }
      seen[i->id] = NULL; /* taken: an instruction listed twice is not found the second time */
    }
  return true;
}

/* ---------- modules and computations ---------- */

IrModule *ir_module_new(const char *name) {
  IrModule *m = fx_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->names = fx_calloc(1, sizeof(IrNameIndex));
  m->comp_names = fx_calloc(1, sizeof(IrNameIndex));
  m->series = fx_calloc(1, sizeof(IrNameIndex));
  if (!m->names || !m->comp_names || !m->series) {
    ix_free(m->names);
    ix_free(m->comp_names);
    ix_free(m->series);
    fx_free(m);
    return NULL;
  }
  arena_init(&m->arena);
  m->name = arena_strdup(&m->arena, name ? name : "module");
  if (!m->name) {
    ir_module_free(m);
    return NULL;
  }
  return m;
}

/* An arena some snapshot points into, and how many modules (its own included, while it lives)
 * still need it. */
struct IrLender {
  int refs;
  Arena arena; /* the module's arena, moved here when the module is freed */
};

void ir_lender_retain(struct IrLender *l) { l->refs++; }

void ir_lender_release(struct IrLender *l) {
  if (!l || --l->refs > 0) return;
  arena_free(&l->arena);
  fx_free(l);
}

struct IrLender *ir_module_lend(IrModule *m) {
  if (!m->lender) {
    m->lender = fx_calloc(1, sizeof *m->lender);
    if (!m->lender) return NULL;
    m->lender->refs = 1; /* the module's own */
    arena_init(&m->lender->arena);
  }
  m->lender->refs++;
  return m->lender;
}

void ir_module_free(IrModule *m) {
  if (!m) return;
  ix_free(m->names);
  ix_free(m->comp_names);
  ix_free(m->series);
  fx_free(m->by_id);
  for (int k = 0; k < m->nborrowed; k++) ir_lender_release(m->borrowed[k]);
  fx_free(m->borrowed);
  if (m->lender) {
    /* Snapshots still point into this arena: it goes with the last of them. */
    m->lender->arena = m->arena;
    ir_lender_release(m->lender);
  } else {
    arena_free(&m->arena);
  }
  fx_free(m);
}

static size_t ix_bytes(const IrNameIndex *ix) {
  return ix ? sizeof *ix + ix->cap * (sizeof *ix->keys + sizeof *ix->vals + sizeof *ix->hashes) : 0;
}

size_t ir_module_bytes(const IrModule *m) {
  if (!m) return 0;
  return sizeof *m + m->arena.total + ix_bytes(m->names) + ix_bytes(m->comp_names) + ix_bytes(m->series) +
         sizeof *m->by_id * (size_t)m->by_cap +
         sizeof(struct IrLender *) * (size_t)m->nborrowed;
}

IrComputation *ir_computation_new(IrModule *m, const char *name) {
  IrComputation *c = arena_alloc(&m->arena, sizeof *c);
  if (!c) return NULL;
  c->name = arena_strdup(&m->arena, name);
  c->module = m;
  c->id = m->next_id++;
  if (!c->name || arena_grow(&m->arena, (void **)&m->comps, &m->comps_cap, m->ncomps + 1, sizeof(IrComputation *)))
    return NULL;
  if (!ir_module_index_computation(m, c)) return NULL;
  m->comps[m->ncomps++] = c;
  return c;
}

bool ir_module_index_computation(IrModule *m, IrComputation *c) { return ix_put(m->comp_names, c->name, c); }

void ir_module_forget_computation(IrModule *m, IrComputation *c) {
  bool present;
  if (ix_get(m->comp_names, c->name, &present) == c) ix_put(m->comp_names, c->name, NULL);
}

IrComputation *ir_module_find_computation(const IrModule *m, const char *name) {
  /* A computation dropped by ir_module_remove_unreachable keeps its name reserved (value NULL)
   * but is no longer found. */
  return ix_get(m->comp_names, name, NULL);
}

const char *ir_module_series_name(IrModule *m, const char *base, bool computation) {
  bool present;
  intptr_t k = (intptr_t)ix_get(m->series, base, &present);
  for (;; k++) {
    char cand[512];
    if (k == 0) snprintf(cand, sizeof cand, "%.400s", base);
    else snprintf(cand, sizeof cand, "%.400s.%ld", base, (long)k);
    bool taken;
    if (computation) ix_get(m->comp_names, cand, &taken);
    else ix_get(m->names, cand, &taken);
    if (taken) continue;
    const char *key = present ? NULL : arena_strdup(&m->arena, base);
    if (!present && (!key || !ix_put(m->series, key, (void *)(k + 1)))) return NULL;
    if (present) ix_put(m->series, base, (void *)(k + 1)); /* key already stored: only the value changes */
    return arena_strdup(&m->arena, cand);
  }
}

IrInstr *ir_module_find_instr(const IrModule *m, const char *name) {
  IrInstr *i = index_get(m, name, NULL);
  return i && !i->dead ? i : NULL;
}

bool ir_instr_rename(IrInstr *i, const char *name) {
  IrModule *m = i->parent ? i->parent->module : NULL;
  if (!m || !name) return false;
  if (strcmp(name, i->name) == 0) return true;
  bool present;
  IrInstr *other = index_get(m, name, &present);
  if (present && other && other != i && !other->dead) return false;
  char *n = arena_strdup(&m->arena, name);
  if (!n || !index_put(m, n, i)) return false;
  index_put(m, i->name, NULL);
  i->name = n;
  return true;
}

IrInstr *ir_computation_find_instr(const IrComputation *c, const char *name) {
  IrInstr *i = ir_module_find_instr(c->module, name);
  return i && i->parent == c ? i : NULL;
}

const char *ir_module_unique_name(IrModule *m, const char *base) {
  bool present;
  index_get(m, base, &present);
  if (!present) return arena_strdup(&m->arena, base);
  /* Strip a numeric suffix ("add.3" -> "add") before numbering. */
  size_t n = strlen(base);
  const char *dot = strrchr(base, '.');
  if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1)) n = (size_t)(dot - base);
  for (int k = m->next_id;; k++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s.%d", (int)(n > 400 ? 400 : n), base, k);
    index_get(m, buf, &present);
    if (!present) return arena_strdup(&m->arena, buf);
  }
}

/* Where the last two searches found an instruction, per computation (a few remembered): the
 * passes create and remove neighbouring instructions one after another, and a fusion pass works
 * near its producer and at the end of the computation (placeholders, get-tuple-elements) by
 * turns, so searching outwards from both finds the next one near, where a scan from the start
 * made every fusion cost the whole computation. An instruction is listed once, so where the
 * search starts does not change what it finds. */
static _Thread_local struct {
  const IrComputation *c;
  int hint[2];
} index_hints[4];

int ir_computation_index(const IrComputation *c, const IrInstr *i) {
  if (!c || c->ninstrs <= 0 || !i) return -1;
  int n = c->ninstrs;
  /* Where it was last seen, and around it: the inserts and removals since then moved it by as
   * many places at most (the hint is a cache on the instruction, not part of the IR). */
  int h = i->pos < 0 ? 0 : i->pos >= n ? n - 1 : i->pos;
  for (int d = 0; d <= 8; d++) {
    if (h - d >= 0 && c->instrs[h - d] == i) return ((IrInstr *)i)->pos = h - d;
    if (d && h + d < n && c->instrs[h + d] == i) return ((IrInstr *)i)->pos = h + d;
  }
  for (int k = n - 1; k >= 0 && k >= n - 4; k--) /* just appended (a placeholder, a get-tuple-element) */
    if (c->instrs[k] == i) return ((IrInstr *)i)->pos = k;
  int slot = 0;
  while (slot < 3 && index_hints[slot].c != c) slot++;
  if (index_hints[slot].c != c) { /* forget the oldest */
    memmove(&index_hints[1], &index_hints[0], sizeof index_hints[0] * 3);
    slot = 0;
    index_hints[0].c = c;
    index_hints[0].hint[0] = index_hints[0].hint[1] = n - 1;
  }
  int h0 = index_hints[slot].hint[0], h1 = index_hints[slot].hint[1];
  if (h0 >= n || h0 < 0) h0 = n - 1;
  if (h1 >= n || h1 < 0) h1 = n - 1;
  int found = -1;
  for (int d = 0; found < 0 && (h0 - d >= 0 || h0 + d < n || h1 - d >= 0 || h1 + d < n); d++) {
    if (h0 - d >= 0 && c->instrs[h0 - d] == i) found = h0 - d;
    else if (h0 + d < n && c->instrs[h0 + d] == i) found = h0 + d;
    else if (h1 - d >= 0 && c->instrs[h1 - d] == i) found = h1 - d;
    else if (h1 + d < n && c->instrs[h1 + d] == i) found = h1 + d;
  }
  if (found >= 0) {
    index_hints[slot].hint[1] = h0;
    index_hints[slot].hint[0] = found;
    ((IrInstr *)i)->pos = found;
  }
  return found;
}

/* ---------- users ----------
 *
 * A value's users are a list in XLA's order. Adding one checks it is not there yet, removing one
 * finds it: for a value read by thousands of instructions both were scans, and a pass that
 * rewires each reader in turn quadratic. Above USER_INDEX_MIN users an index from user to place
 * is kept beside the list (XLA's HloInstruction::Users keeps a map above 16), in the module's
 * arena. It is valid only for the list it was made for (`users`, `n`): every change here updates
 * it or drops it, and a list changed any other way (or copied into a snapshot) is indexed anew
 * when next asked. */
enum { USER_INDEX_MIN = 16 };

struct IrUserIndex {
  IrInstr **users; /* the list indexed, and its length */
  int n;
  int cap;         /* slots, a power of 2, at least twice n */
  IrInstr **key;
  int *pos;
};

static unsigned user_slot(const struct IrUserIndex *x, const IrInstr *u) {
  return (unsigned)(((uintptr_t)u >> 4) * 2654435761u) & (unsigned)(x->cap - 1);
}

static int uidx_find(const struct IrUserIndex *x, const IrInstr *u) {
  for (unsigned h = user_slot(x, u);; h = (h + 1) & (unsigned)(x->cap - 1)) {
    if (!x->key[h]) return -1;
    if (x->key[h] == u) return x->pos[h];
  }
}

static void uidx_put(struct IrUserIndex *x, IrInstr *u, int pos) {
  unsigned h = user_slot(x, u);
  while (x->key[h] && x->key[h] != u) h = (h + 1) & (unsigned)(x->cap - 1);
  x->key[h] = u;
  x->pos[h] = pos;
}

/* Linear probing's deletion: later entries of the run move back into the gap. */
static void uidx_del(struct IrUserIndex *x, const IrInstr *u) {
  unsigned mask = (unsigned)(x->cap - 1), h = user_slot(x, u);
  while (x->key[h] && x->key[h] != u) h = (h + 1) & mask;
  if (!x->key[h]) return;
  x->key[h] = NULL;
  for (unsigned j = (h + 1) & mask; x->key[j]; j = (j + 1) & mask) {
    unsigned home = user_slot(x, x->key[j]);
    /* the entry at j may fill the gap at h unless its home lies in (h, j] (cyclically) */
    bool stays = h <= j ? (home > h && home <= j) : (home > h || home <= j);
    if (stays) continue;
    x->key[h] = x->key[j];
    x->pos[h] = x->pos[j];
    x->key[j] = NULL;
    h = j;
  }
}

/* op's index when it is there and indexes op's list as it is now, else NULL. */
static struct IrUserIndex *kept_index(const IrInstr *op) {
  struct IrUserIndex *x = op->users_index;
  return x && x->users == op->users && x->n == op->nusers ? x : NULL;
}

/* op's index, made when missing or stale; NULL for a short list or when out of memory (the
 * callers then scan the list). */
static struct IrUserIndex *user_index(IrInstr *op) {
  if (op->nusers < USER_INDEX_MIN || !op->parent || !op->parent->module) return NULL;
  struct IrUserIndex *x = kept_index(op);
  if (x) return x;
  Arena *a = &op->parent->module->arena;
  int cap = 64;
  while (cap < 2 * (op->nusers + 1)) cap *= 2;
  x = arena_alloc(a, sizeof *x);
  IrInstr **key = x ? arena_alloc(a, sizeof(IrInstr *) * (size_t)cap) : NULL;
  int *pos = key ? arena_alloc(a, sizeof(int) * (size_t)cap) : NULL;
  if (!pos) {
    op->users_index = NULL;
    return NULL;
  }
  x->users = op->users;
  x->n = op->nusers;
  x->cap = cap;
  x->key = key;
  x->pos = pos;
  for (int i = 0; i < op->nusers; i++) uidx_put(x, op->users[i], i);
  op->users_index = x;
  return x;
}

/* After appending op->users[op->nusers - 1] (the list may have moved): the index follows, or goes
 * when it would be over half full. */
static void user_appended(IrInstr *op, struct IrUserIndex *x) {
  if (!x) {
    op->users_index = NULL;
    return;
  }
  if (2 * (op->nusers + 1) > x->cap) {
    op->users_index = NULL; /* made again, larger, when next asked */
    return;
  }
  x->users = op->users;
  uidx_put(x, op->users[op->nusers - 1], op->nusers - 1);
  x->n = op->nusers;
}

static int append_user(IrModule *m, IrInstr *op, IrInstr *user) {
  struct IrUserIndex *x = kept_index(op);
  if (arena_grow(&m->arena, (void **)&op->users, &op->users_cap, op->nusers + 1, sizeof(IrInstr *))) return -1;
  op->users[op->nusers++] = user;
  user_appended(op, x);
  return 0;
}

static int add_user(IrModule *m, IrInstr *op, IrInstr *user) {
  struct IrUserIndex *x = user_index(op);
  if (x) {
    if (uidx_find(x, user) >= 0) return 0;
  } else {
    for (int i = 0; i < op->nusers; i++)
      if (op->users[i] == user) return 0;
  }
  return append_user(m, op, user);
}

static void remove_user(IrInstr *op, IrInstr *user) {
  /* Only drop the edge when user no longer references op through any operand slot. The last user
   * takes the removed one's place, as in XLA (HloInstruction::Users::RemoveUser): the passes that
   * walk a value's users in order (multi-output fusion's siblings, fusion's consumers) see them in
   * XLA's order. */
  for (int k = 0; k < user->noperands; k++)
    if (user->operands[k] == op) return;
  struct IrUserIndex *x = user_index(op);
  int i = -1;
  if (x) {
    i = uidx_find(x, user);
  } else {
    op->users_index = NULL;
    for (int k = 0; k < op->nusers && i < 0; k++)
      if (op->users[k] == user) i = k;
  }
  if (i < 0) return;
  IrInstr *last = op->users[op->nusers - 1];
  op->users[i] = last;
  op->nusers--;
  if (x) {
    uidx_del(x, user);
    if (last != user) uidx_put(x, last, i);
    x->n = op->nusers;
  }
}

IrInstr *ir_instr_new_before(IrComputation *c, IrInstr *before, IrOpcode op, const IrShape *shape,
                             IrInstr *const *operands, int noperands, const char *name) {
  IrModule *m = c->module;
  IrInstr *in = arena_alloc(&m->arena, sizeof *in);
  if (!in) return NULL;
  in->id = m->next_id++;
  if (!by_id_set(m, in)) return NULL;
  in->op = op;
  in->parent = c;
  in->param_number = -1;
  if (shape && !ir_shape_copy(&m->arena, &in->shape, shape)) return NULL;
  if (name) {
    in->name = ir_module_unique_name(m, name);
  } else {
    char buf[64];
    snprintf(buf, sizeof buf, "%s.%d", ir_op_name(op), in->id);
    in->name = ir_module_unique_name(m, buf);
  }
  if (!in->name || !index_put(m, in->name, in)) return NULL;
  if (noperands > 0) {
    in->operands = arena_alloc(&m->arena, sizeof(IrInstr *) * (size_t)noperands);
    if (!in->operands) return NULL;
    for (int k = 0; k < noperands; k++) {
      in->operands[k] = operands[k];
      /* in is new, so it is among an operand's users only if an earlier slot named the same
         operand: checking that instead of scanning the users keeps a value with many users
         (x + x + ... + x) linear */
      bool seen = false;
      for (int j = 0; j < k && !seen; j++) seen = operands[j] == operands[k];
      if (operands[k] && !seen && append_user(m, operands[k], in)) return NULL;
    }
  }
  in->noperands = noperands;
  if (arena_grow(&m->arena, (void **)&c->instrs, &c->instrs_cap, c->ninstrs + 1, sizeof(IrInstr *))) return NULL;
  int pos = c->ninstrs;
  if (before) {
    int k = ir_computation_index(c, before);
    if (k >= 0) pos = k;
  }
  memmove(&c->instrs[pos + 1], &c->instrs[pos], sizeof(IrInstr *) * (size_t)(c->ninstrs - pos));
  c->instrs[pos] = in;
  in->pos = pos;
  c->ninstrs++;
  return in;
}

IrInstr *ir_instr_new(IrComputation *c, IrOpcode op, const IrShape *shape, IrInstr *const *operands,
                      int noperands, const char *name) {
  return ir_instr_new_before(c, NULL, op, shape, operands, noperands, name);
}

void ir_set_operand(IrInstr *i, int idx, IrInstr *nop) {
  IrInstr *old = i->operands[idx];
  if (old == nop) return;
  i->operands[idx] = nop;
  if (old) remove_user(old, i);
  if (nop) add_user(i->parent->module, nop, i);
}

bool ir_computation_set_params(IrComputation *c, IrInstr *const *params, int n) {
  IrInstr **v = arena_alloc(&c->module->arena, sizeof(IrInstr *) * (size_t)(n > 0 ? n : 1));
  if (!v) return false;
  for (int k = 0; k < n; k++) {
    params[k]->param_number = k;
    v[k] = params[k];
  }
  c->params = v;
  c->nparams = n;
  return true;
}

void ir_set_root(IrComputation *c, IrInstr *root) {
  if (c->root) c->root->is_root = false;
  c->root = root;
  if (root) root->is_root = true;
}

void ir_replace_all_uses(IrInstr *old, IrInstr *repl) {
  if (old == repl) return;
  /* As XLA's HloInstruction::ReplaceAllUsesWithDifferentShape: old's users join repl's in old's
   * order (one repl already has keeps its place), then old has none; repl itself, when it reads
   * old, keeps reading it and stays its only user. (Taking the first user and swap-removing it
   * would move the last user up and reverse the rest.) */
  bool repl_uses = false;
  for (int i = 0; i < old->nusers; i++) {
    IrInstr *u = old->users[i];
    if (u == repl) {
      repl_uses = true;
      continue;
    }
    for (int k = 0; k < u->noperands; k++)
      if (u->operands[k] == old) {
        u->operands[k] = repl;
        add_user(u->parent->module, repl, u);
      }
  }
  old->nusers = 0;
  old->users_index = NULL;
  if (repl_uses) old->users[old->nusers++] = repl;
  if (old->parent && old->parent->root == old) ir_set_root(old->parent, repl);
}

void ir_instr_remove(IrInstr *i) {
  IrComputation *c = i->parent;
  for (int k = 0; k < i->noperands; k++) {
    IrInstr *op = i->operands[k];
    i->operands[k] = NULL;
    if (op) remove_user(op, i);
  }
  int k = ir_computation_index(c, i);
  if (k >= 0) {
    memmove(&c->instrs[k], &c->instrs[k + 1], sizeof(IrInstr *) * (size_t)(c->ninstrs - k - 1));
    c->ninstrs--;
  }
  i->dead = true;
  if (c->root == i) c->root = NULL;
  /* Keep the name reserved so it is never reused for a different value in a later stage. */
}

int ir_computation_remove_dead(IrComputation *c) {
  int removed = 0;
  bool again = true;
  while (again) {
    again = false;
    for (int k = c->ninstrs - 1; k >= 0; k--) {
      IrInstr *i = c->instrs[k];
      if (i->nusers == 0 && i != c->root && i->op != IR_OP_PARAMETER) {
        /* Side-effecting ops stay. */
        if (i->op == IR_OP_CUSTOM_CALL) {
          const char *se = ir_attr_text(i, "custom_call_has_side_effect");
          if (se && strcmp(se, "true") == 0) continue;
        }
        if (i->op == IR_OP_OUTFEED || i->op == IR_OP_SEND || i->op == IR_OP_SEND_DONE ||
            i->op == IR_OP_AFTER_ALL)
          continue;
        ir_instr_remove(i);
        removed++;
        again = true;
        if (k > c->ninstrs) k = c->ninstrs;
      }
    }
  }
  return removed;
}

static void sort_kahn(IrComputation *c);

void ir_computation_sort_last(IrComputation *c) {
  /* What ir_computation_sort's Kahn order gives when only the last instruction is out of place:
   * the earliest-positioned ready instruction is taken every time, so every instruction that
   * does not depend on the last one comes out first, in its order; then the last one; then its
   * dependents, in their order. One forward pass marks the dependents (an instruction's operands
   * other than the last one are earlier, by the precondition) and a stable partition moves them. */
  int n = c->ninstrs;
  if (n <= 1) return;
  IrInstr *last = c->instrs[n - 1];
  static char dep_mark;
  /* Every dependent comes after the earliest reader of the last instruction (the order is valid
   * but for it), so the marking starts there: found through its few users, near where the caller
   * just inserted them, instead of by looking at every operand of the whole computation. */
  int start = 0;
  if (last->nusers <= 8) {
    start = n - 1;
    for (int u = 0; u < last->nusers && start > 0; u++) {
      const IrInstr *us = last->users[u];
      int pos = us->parent == c ? ir_computation_index(c, us) : -1;
      if (pos >= 0 && pos < start) start = pos;
      if (us->parent == c && pos < 0) start = 0; /* not listed: look everywhere */
    }
  }
  int first = -1;
  for (int k = start; k < n - 1; k++) {
    IrInstr *i = c->instrs[k];
    for (int j = 0; j < i->noperands; j++) {
      const IrInstr *op = i->operands[j];
      if (op && (op == last || op->aux == &dep_mark) && op->parent == c && !op->dead) {
        i->aux = &dep_mark;
        if (first < 0) first = k;
        break;
      }
    }
  }
  if (first < 0) return; /* already in order */
  /* A last instruction that reads one of its dependents closes a cycle: Kahn's order leaves the
   * cycle where it is, for the verifier to report. */
  bool cycle = false;
  for (int j = 0; j < last->noperands && !cycle; j++) cycle = last->operands[j] && last->operands[j]->aux == &dep_mark;
  /* Dependents go to the end, after the last instruction; the others close up, in order. */
  int ndep = 0;
  for (int k = first; k < n - 1; k++)
    if (c->instrs[k]->aux == &dep_mark) ndep++;
  IrInstr **deps = cycle ? NULL : fx_malloc(sizeof(IrInstr *) * (size_t)ndep);
  if (!deps) {
    for (int k = first; k < n - 1; k++) c->instrs[k]->aux = NULL;
    sort_kahn(c);
    return;
  }
  int w = first, d = 0;
  for (int k = first; k < n - 1; k++) {
    IrInstr *i = c->instrs[k];
    if (i->aux == &dep_mark) {
      i->aux = NULL;
      deps[d++] = i;
    } else {
      c->instrs[w++] = i;
    }
  }
  c->instrs[w++] = last;
  memcpy(c->instrs + w, deps, sizeof(IrInstr *) * (size_t)ndep);
  fx_free(deps);
}

/* A binary min-heap of instruction positions: the ready instructions of ir_computation_sort. */
static void heap_push(int *h, int *n, int v) {
  int k = (*n)++;
  while (k > 0 && h[(k - 1) / 2] > v) {
    h[k] = h[(k - 1) / 2];
    k = (k - 1) / 2;
  }
  h[k] = v;
}

static int heap_pop(int *h, int *n) {
  int top = h[0], v = h[--*n], k = 0;
  for (;;) {
    int c = 2 * k + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= v) break;
    h[k] = h[c];
    k = c;
  }
  if (*n > 0) h[k] = v;
  return top;
}

typedef struct {
  IrInstr *i;
  int64_t key;
  int pos;
  bool keyed;
} RenumberItem;

static int renumber_cmp(const void *a, const void *b) {
  const RenumberItem *x = a, *y = b;
  if (x->keyed != y->keyed) return x->keyed ? -1 : 1;
  if (x->keyed && x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->pos - y->pos;
}

bool ir_module_renumber(IrModule *m, const int64_t *key, const bool *has) {
  int most = 0;
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k]->ninstrs > most) most = m->comps[k]->ninstrs;
  RenumberItem *v = fx_malloc(sizeof *v * (size_t)(most + 1));
  if (!v) return false;
  int next = 0;
  for (int k = 0; k < m->ncomps; k++) {
    IrComputation *c = m->comps[k];
    for (int j = 0; j < c->ninstrs; j++) {
      IrInstr *i = c->instrs[j];
      v[j] = (RenumberItem){i, has[i->id] ? key[i->id] : 0, j, has[i->id]};
    }
    qsort(v, (size_t)c->ninstrs, sizeof *v, renumber_cmp);
    c->id = next++;
    for (int j = 0; j < c->ninstrs; j++) v[j].i->id = next++;
  }
  fx_free(v);
  m->next_id = next;
  /* The new ids, by id and in the name index; a removed instruction keeps its name reserved. */
  IrInstr **old = m->by_id;
  int old_cap = m->by_cap;
  m->by_id = NULL;
  m->by_cap = 0;
  bool ok = true;
  for (int k = 0; k < m->ncomps && ok; k++)
    for (int j = 0; j < m->comps[k]->ninstrs && ok; j++) ok = by_id_set(m, m->comps[k]->instrs[j]);
  IrNameIndex *ix = m->names;
  for (size_t s = 0; s < ix->cap && ok; s++) {
    intptr_t id = (intptr_t)ix->vals[s] - 1;
    IrInstr *i = id >= 0 && id < old_cap ? old[id] : NULL;
    ix->vals[s] = i && !i->dead ? (void *)(intptr_t)(i->id + 1) : NULL;
  }
  fx_free(old);
  return ok;
}

void ir_computation_sort(IrComputation *c) {
  /* The order sort_kahn gives (below). */
  int n = c->ninstrs;
  if (n <= 1) return;
  /* Already in order (the common case after a fusion): nothing to do, and no allocation. In
   * order but for the last instruction, which earlier ones read (the next most common: a rewrite
   * appended a new instruction and made one in the middle read it): the same order in one linear
   * pass (ir_computation_sort_last). */
  for (int k = 0; k < n; k++) c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  const IrInstr *last = c->instrs[n - 1];
  bool sorted = true, only_last = true;
  for (int k = 0; k < n && only_last; k++) {
    const IrInstr *i = c->instrs[k];
    for (int j = 0; j < i->noperands && only_last; j++) {
      const IrInstr *op = i->operands[j];
      if (op && op->parent == c && !op->dead && (int)(intptr_t)op->aux - 1 >= k) {
        sorted = false;
        only_last = op == last;
      }
    }
  }
  for (int k = 0; k < n; k++) c->instrs[k]->aux = NULL;
  if (!only_last) sort_kahn(c);
  else if (!sorted) ir_computation_sort_last(c);
}

/* Kahn's algorithm over in-computation operands, always taking the earliest-positioned ready
 * instruction (a heap of positions), so the existing order is kept wherever it is already
 * valid. O((n + edges) log n): the fusion passes sort after every fusion, and the linear scans
 * this replaced made long chains quadratic per sort. */
static void sort_kahn(IrComputation *c) {
  int n = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)n);
  int *pending = fx_calloc((size_t)n, sizeof(int));
  int *heap = fx_malloc(sizeof(int) * (size_t)n);
  int *stamp = fx_malloc(sizeof(int) * (size_t)n);
  bool *done = fx_calloc((size_t)n, sizeof(bool));
  if (!order || !pending || !heap || !stamp || !done) goto out;
  for (int k = 0; k < n; k++) {
    c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
    stamp[k] = -1;
  }
  for (int k = 0; k < n; k++) {
    IrInstr *i = c->instrs[k];
    for (int j = 0; j < i->noperands; j++) {
      IrInstr *op = i->operands[j];
      if (!op || op->parent != c || op->dead) continue;
      int pos = (int)(intptr_t)op->aux - 1;
      if (pos < 0 || pos >= n || stamp[pos] == k) continue; /* an operand named twice counts once */
      stamp[pos] = k;
      pending[k]++;
    }
  }
  int nheap = 0, nout = 0;
  for (int k = 0; k < n; k++)
    if (pending[k] == 0) heap_push(heap, &nheap, k);
  while (nheap > 0) {
    int pick = heap_pop(heap, &nheap);
    done[pick] = true;
    IrInstr *p = c->instrs[pick];
    order[nout++] = p;
    for (int u = 0; u < p->nusers; u++) {
      IrInstr *us = p->users[u];
      if (us->parent != c) continue;
      int pos = (int)(intptr_t)us->aux - 1;
      if (pos >= 0 && pos < n && !done[pos] && --pending[pos] == 0) heap_push(heap, &nheap, pos);
    }
  }
  /* a cycle: the rest stays in place; the verifier reports it */
  for (int k = 0; k < n && nout < n; k++)
    if (!done[k]) order[nout++] = c->instrs[k];
  memcpy(c->instrs, order, sizeof(IrInstr *) * (size_t)n);
out:
  for (int k = 0; k < n; k++) c->instrs[k]->aux = NULL;
  fx_free(done);
  fx_free(order);
  fx_free(pending);
  fx_free(heap);
  fx_free(stamp);
}

int ir_computation_post_order(const IrComputation *c, IrInstr **out) {
  int n = c->ninstrs;
  if (n == 0) return 0;
  /* 0 new, 1 visiting, 2 visited (XLA's VisitState), kept by position; aux holds position + 1. */
  unsigned char *state = fx_calloc((size_t)n, 1);
  /* Each instruction is pushed at most once per operand edge that names it, plus once as a root. */
  size_t cap = (size_t)n;
  for (int k = 0; k < n; k++) cap += (size_t)c->instrs[k]->noperands;
  IrInstr **stack = fx_malloc(sizeof(IrInstr *) * cap);
  if (!state || !stack) {
    fx_free(state);
    fx_free(stack);
    return -1;
  }
  for (int k = 0; k < n; k++) c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  int nout = 0;
  for (int r = 0; r < n; r++) {
    IrInstr *root = c->instrs[r];
    bool used = false;
    for (int u = 0; u < root->nusers && !used; u++) used = root->users[u]->parent == c;
    if (used || state[r] == 2) continue;
    size_t top = 0;
    stack[top++] = root;
    while (top > 0) {
      IrInstr *cur = stack[top - 1];
      int pos = (int)(intptr_t)cur->aux - 1;
      if (state[pos] != 0) {
        top--;
        if (state[pos] == 1) {
          state[pos] = 2;
          out[nout++] = cur;
        }
        continue;
      }
      state[pos] = 1;
      /* XLA pushes the operands in reverse order so the first operand is processed first (this
       * IR has no control predecessors, which XLA pushes after them). */
      for (int j = cur->noperands - 1; j >= 0; j--) {
        IrInstr *op = cur->operands[j];
        if (!op || op->parent != c || op->dead) continue;
        int q = (int)(intptr_t)op->aux - 1;
        if (q >= 0 && q < n && c->instrs[q] == op && state[q] != 2) stack[top++] = op;
      }
    }
  }
  /* Anything no root reaches (a cycle, which the verifier reports) keeps its place at the end. */
  for (int k = 0; k < n; k++)
    if (state[k] != 2) out[nout++] = c->instrs[k];
  for (int k = 0; k < n; k++) c->instrs[k]->aux = NULL;
  fx_free(state);
  fx_free(stack);
  return nout;
}

/* ---------- attributes ---------- */

const IrAttr *ir_attr_get(const IrInstr *i, const char *key) {
  /* The first letters settle most comparisons without a call: the fusion passes ask for "calls"
   * and "kind" of every fusion many times per decision. */
  for (int k = 0; k < i->nattrs; k++)
    if (i->attrs[k].key[0] == key[0] && strcmp(i->attrs[k].key, key) == 0) return &i->attrs[k];
  return NULL;
}

void ir_attr_set_int(IrInstr *i, const char *key, int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  ir_attr_set_text(i, key, buf);
}

const char *ir_custom_call_target(const IrInstr *i, size_t *len) {
  const char *t = ir_attr_text(i, "custom_call_target");
  if (!t) return NULL;
  *len = strlen(t);
  if (*len >= 2 && t[0] == '"' && t[*len - 1] == '"') {
    t++;
    *len -= 2;
  }
  return t;
}

const char *ir_attr_text(const IrInstr *i, const char *key) {
  const IrAttr *a = ir_attr_get(i, key);
  return a && a->kind == IR_ATTR_TEXT ? a->text : NULL;
}

static IrAttr *attr_slot(IrInstr *i, const char *key) {
  for (int k = 0; k < i->nattrs; k++)
    if (strcmp(i->attrs[k].key, key) == 0) return &i->attrs[k];
  Arena *a = &i->parent->module->arena;
  if (arena_grow(a, (void **)&i->attrs, &i->attrs_cap, i->nattrs + 1, sizeof(IrAttr))) return NULL;
  IrAttr *s = &i->attrs[i->nattrs++];
  memset(s, 0, sizeof *s);
  s->key = arena_strdup(a, key);
  return s;
}

void ir_attr_set_text(IrInstr *i, const char *key, const char *text) {
  IrAttr *s = attr_slot(i, key);
  if (!s) return;
  s->kind = IR_ATTR_TEXT;
  s->text = arena_strdup(&i->parent->module->arena, text);
}

void ir_attr_set_comps(IrInstr *i, const char *key, IrComputation **comps, int n, bool braced) {
  IrAttr *s = attr_slot(i, key);
  if (!s) return;
  s->kind = IR_ATTR_COMP;
  s->comps = arena_alloc(&i->parent->module->arena, sizeof(IrComputation *) * (size_t)(n ? n : 1));
  if (!s->comps) return;
  memcpy(s->comps, comps, sizeof(IrComputation *) * (size_t)n);
  s->ncomps = n;
  s->comps_braced = braced;
}

void ir_attr_set_comp(IrInstr *i, const char *key, IrComputation *comp) { ir_attr_set_comps(i, key, &comp, 1, false); }

void ir_attr_remove(IrInstr *i, const char *key) {
  for (int k = 0; k < i->nattrs; k++)
    if (strcmp(i->attrs[k].key, key) == 0) {
      memmove(&i->attrs[k], &i->attrs[k + 1], sizeof(IrAttr) * (size_t)(i->nattrs - k - 1));
      i->nattrs--;
      return;
    }
}

/* Parses a comma-separated integer list, skipping braces and spaces. */
static int parse_int_list(const char *t, int64_t *out, int max) {
  int n = 0;
  const char *p = t;
  while (*p == ' ' || *p == '{') p++;
  while (*p && *p != '}') {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) return -1;
    if (n < max) out[n] = v;
    n++;
    p = end;
    while (*p == ' ') p++;
    if (*p == ',') p++;
    while (*p == ' ') p++;
  }
  return n > max ? -1 : n;
}

int ir_attr_dims(const IrInstr *i, const char *key, int64_t *out, int max) {
  const char *t = ir_attr_text(i, key);
  if (!t) return -1;
  return parse_int_list(t, out, max);
}

int ir_attr_dims_or_empty(const IrInstr *i, const char *key, int64_t *out) {
  int n = ir_attr_dims(i, key, out, IR_MAX_RANK);
  return n < 0 ? 0 : n;
}

bool ir_dims_contain(const int64_t *v, int n, int64_t x) {
  for (int k = 0; k < n; k++)
    if (v[k] == x) return true;
  return false;
}

void ir_dims_sort(int64_t *v, int n) {
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && v[b] < v[b - 1]; b--) {
      int64_t t = v[b];
      v[b] = v[b - 1];
      v[b - 1] = t;
    }
}

void ir_gather_dims(const IrInstr *i, IrGatherDims *g) {
  g->noffset = ir_attr_dims_or_empty(i, "offset_dims", g->offset);
  g->ncollapsed = ir_attr_dims_or_empty(i, "collapsed_slice_dims", g->collapsed);
  g->nstart_map = ir_attr_dims_or_empty(i, "start_index_map", g->start_map);
  g->nslice_sizes = ir_attr_dims_or_empty(i, "slice_sizes", g->slice_sizes);
  g->noperand_batching = ir_attr_dims_or_empty(i, "operand_batching_dims", g->operand_batching);
  g->nindices_batching = ir_attr_dims_or_empty(i, "start_indices_batching_dims", g->indices_batching);
  g->index_vector_dim = i->noperands > 1 ? i->operands[1]->shape.rank : 0;
  ir_attr_int(i, "index_vector_dim", &g->index_vector_dim);
  g->nbatch = g->nwindow = 0;
  for (int d = 0; d < i->shape.rank; d++)
    if (!ir_dims_contain(g->offset, g->noffset, d)) g->batch[g->nbatch++] = d;
  int arank = i->noperands > 0 ? i->operands[0]->shape.rank : 0;
  for (int d = 0; d < arank; d++)
    if (!ir_dims_contain(g->collapsed, g->ncollapsed, d) && !ir_dims_contain(g->operand_batching, g->noperand_batching, d))
      g->window[g->nwindow++] = d;
}

void ir_attr_set_dims(IrInstr *i, const char *key, const int64_t *v, int n) {
  char buf[IR_MAX_RANK * 24 + 4];
  size_t len = 0;
  buf[len++] = '{';
  for (int k = 0; k < n && len < sizeof buf - 24; k++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, k ? ",%" PRId64 : "%" PRId64, v[k]);
  buf[len++] = '}';
  buf[len] = 0;
  ir_attr_set_text(i, key, buf);
}

bool ir_attr_int(const IrInstr *i, const char *key, int64_t *out) {
  const char *t = ir_attr_text(i, key);
  if (!t) return false;
  char *end;
  long long v = strtoll(t, &end, 10);
  if (end == t) return false;
  *out = v;
  return true;
}

IrComputation *ir_attr_comp(const IrInstr *i, const char *key) {
  const IrAttr *a = ir_attr_get(i, key);
  return a && a->kind == IR_ATTR_COMP && a->ncomps > 0 ? a->comps[0] : NULL;
}

void ir_attr_set_slice(IrInstr *i, const int64_t *start, const int64_t *limit, const int64_t *stride, int n) {
  char buf[IR_MAX_RANK * 70 + 4];
  size_t len = 0;
  buf[len++] = '{';
  for (int d = 0; d < n && d < IR_MAX_RANK; d++) {
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s[%" PRId64 ":%" PRId64, d ? ", " : "", start[d], limit[d]);
    if (stride && stride[d] != 1) len += (size_t)snprintf(buf + len, sizeof buf - len, ":%" PRId64, stride[d]);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "]");
  }
  snprintf(buf + len, sizeof buf - len, "}");
  ir_attr_set_text(i, "slice", buf);
}

int ir_attr_slice(const IrInstr *i, int64_t *start, int64_t *limit, int64_t *stride, int max) {
  const char *t = ir_attr_text(i, "slice");
  if (!t) return -1;
  int n = 0;
  for (const char *p = t; *p; p++) {
    if (*p != '[') continue;
    long long a, b, s = 1;
    int got = sscanf(p, "[%lld:%lld:%lld]", &a, &b, &s);
    if (got < 2) return -1;
    if (got == 2) s = 1;
    if (n < max) {
      start[n] = a;
      limit[n] = b;
      stride[n] = s;
    }
    n++;
  }
  return n > max ? -1 : n;
}

int ir_attr_padding(const IrInstr *i, int64_t *lo, int64_t *hi, int64_t *interior, int max) {
  const char *t = ir_attr_text(i, "padding");
  if (!t) t = ir_attr_text(i, "padding_config");
  if (!t || !*t) return -1;
  int n = 0;
  for (;;) {
    long long v[3] = {0, 0, 0};
    int m = 0;
    for (;;) {
      char *e;
      long long x = strtoll(t, &e, 10);
      if (e == t || m >= 3) return -1;
      v[m++] = x;
      t = e;
      if (*t != '_') break;
      t++;
    }
    if (m < 2 || n >= max) return -1;
    lo[n] = v[0];
    hi[n] = v[1];
    interior[n] = v[2];
    n++;
    if (*t == '\0') return n;
    if (*t != 'x') return -1;
    t++;
  }
}

void ir_attr_set_padding(IrInstr *i, const int64_t *lo, const int64_t *hi, const int64_t *interior, int n) {
  char buf[IR_MAX_RANK * 70 + 4];
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 0; d < n && d < IR_MAX_RANK; d++) {
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%" PRId64 "_%" PRId64, d ? "x" : "", lo[d], hi[d]);
    if (interior && interior[d] != 0) len += (size_t)snprintf(buf + len, sizeof buf - len, "_%" PRId64, interior[d]);
  }
  ir_attr_set_text(i, "padding", buf);
}

const char *ir_compare_direction(const IrInstr *i) { return ir_attr_text(i, "direction"); }

bool ir_dot_dims(const IrInstr *i, IrDotDims *d) {
  memset(d, 0, sizeof *d);
  int n;
  if ((n = ir_attr_dims(i, "lhs_batch_dims", d->lhs_batch, IR_MAX_RANK)) > 0) d->nlhs_batch = n;
  if ((n = ir_attr_dims(i, "rhs_batch_dims", d->rhs_batch, IR_MAX_RANK)) > 0) d->nrhs_batch = n;
  if ((n = ir_attr_dims(i, "lhs_contracting_dims", d->lhs_contract, IR_MAX_RANK)) > 0) d->nlhs_contract = n;
  if ((n = ir_attr_dims(i, "rhs_contracting_dims", d->rhs_contract, IR_MAX_RANK)) > 0) d->nrhs_contract = n;
  return d->nlhs_batch == d->nrhs_batch && d->nlhs_contract == d->nrhs_contract;
}

static bool why_set(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool why_set(char *why, size_t n, const char *fmt, ...) {
  if (why && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* "3x3" between p and end into v; returns the count, or -1 when malformed or longer than max. */
static int parse_x_list(const char *p, const char *end, int64_t *v, int max) {
  int n = 0;
  while (p < end) {
    char *e;
    long long x = strtoll(p, &e, 10);
    if (e == p || e > end || n >= max) return -1;
    v[n++] = x;
    p = e;
    if (p < end && *p == 'x') p++;
    else if (p < end) return -1;
  }
  return n;
}

bool ir_attr_window(const IrInstr *i, int rank, IrWindow *w, char *why, size_t nwhy) {
  memset(w, 0, sizeof *w);
  for (int k = 0; k < IR_MAX_RANK; k++) w->size[k] = w->stride[k] = w->lhs_dilate[k] = w->rhs_dilate[k] = 1;
  const char *t = ir_attr_text(i, "window");
  if (rank > IR_MAX_RANK) return why_set(why, nwhy, "a window of %d dimensions is too large", rank);
  if (!t) {
    w->rank = rank < 0 ? 0 : rank;
    if (w->rank == 0) return true;
    return why_set(why, nwhy, "%s needs the attribute 'window'", ir_op_name(i->op));
  }
  for (int pass = rank < 0 ? 0 : 1; pass < 2; pass++) {
    /* pass 0 only learns the rank from size=; pass 1 parses and checks */
    const char *p = t;
    if (*p == '{') p++;
    while (*p && *p != '}') {
      while (*p == ' ') p++;
      const char *eq = strchr(p, '=');
      if (!eq) break;
      const char *v = eq + 1, *ve = v;
      while (*ve && *ve != ' ' && *ve != '}') ve++;
      size_t kl = (size_t)(eq - p);
      int n;
      if (kl == 3 && memcmp(p, "pad", 3) == 0) {
        /* lo_hi per dimension, 'x'-separated */
        n = 0;
        for (const char *q = v; q < ve;) {
          char *e;
          long long lo = strtoll(q, &e, 10);
          if (e == q || *e != '_' || n >= IR_MAX_RANK) return why_set(why, nwhy, "malformed window pad in '%s'", t);
          q = e + 1;
          long long hi = strtoll(q, &e, 10);
          if (e == q) return why_set(why, nwhy, "malformed window pad in '%s'", t);
          w->pad_lo[n] = lo;
          w->pad_hi[n] = hi;
          n++;
          q = e;
          if (q < ve && *q == 'x') q++;
          else if (q < ve) return why_set(why, nwhy, "malformed window pad in '%s'", t);
        }
      } else {
        int64_t tmp[IR_MAX_RANK];
        n = parse_x_list(v, ve, tmp, IR_MAX_RANK);
        if (n < 0) return why_set(why, nwhy, "malformed window in '%s'", t);
        if (kl == 4 && memcmp(p, "size", 4) == 0) {
          if (pass == 0) rank = n;
          memcpy(w->size, tmp, sizeof(int64_t) * (size_t)n);
          w->has_size = true;
        } else if (kl == 6 && memcmp(p, "stride", 6) == 0) memcpy(w->stride, tmp, sizeof(int64_t) * (size_t)n);
        else if (kl == 10 && memcmp(p, "lhs_dilate", 10) == 0) memcpy(w->lhs_dilate, tmp, sizeof(int64_t) * (size_t)n);
        else if (kl == 10 && memcmp(p, "rhs_dilate", 10) == 0) memcpy(w->rhs_dilate, tmp, sizeof(int64_t) * (size_t)n);
        else if (kl == 12 && memcmp(p, "rhs_reversal", 12) == 0)
          for (int k = 0; k < n; k++) w->reversal[k] = tmp[k] != 0;
      }
      if (pass == 1 && n != rank && !(kl == 12 && memcmp(p, "rhs_reversal", 12) == 0))
        return why_set(why, nwhy, "window '%.*s' has %d entr%s for %d dimension%s", (int)kl, p, n, n == 1 ? "y" : "ies", rank,
                       rank == 1 ? "" : "s");
      p = ve;
    }
    if (rank < 0) rank = 0;
  }
  w->rank = rank;
  if (!w->has_size && rank > 0) return why_set(why, nwhy, "window has no size in '%s'", t);
  for (int k = 0; k < rank; k++)
    if (w->size[k] < 0 || w->stride[k] <= 0 || w->lhs_dilate[k] <= 0 || w->rhs_dilate[k] <= 0)
      return why_set(why, nwhy, "window sizes, strides and dilations must be positive in '%s'", t);
  return true;
}

/* Appends " key=v0xv1x..." to buf when some entry of v differs from dflt (always when all). */
static void window_list(char *buf, size_t n, size_t *len, const char *key, const int64_t *v, int r, int64_t dflt,
                        bool all) {
  bool any = all;
  for (int d = 0; d < r; d++) any = any || v[d] != dflt;
  if (!any) return;
  *len += (size_t)snprintf(buf + *len, *len < n ? n - *len : 0, "%s%s=", *len > 1 ? " " : "", key);
  for (int d = 0; d < r; d++) *len += (size_t)snprintf(buf + *len, *len < n ? n - *len : 0, "%s%" PRId64, d ? "x" : "", v[d]);
}

void ir_attr_set_window(IrInstr *i, const IrWindow *w) {
  char buf[1024] = "{";
  size_t len = 1, n = sizeof buf;
  int r = w->rank;
  int64_t rev[IR_MAX_RANK];
  bool padded = false;
  for (int d = 0; d < r; d++) {
    rev[d] = w->reversal[d];
    padded = padded || w->pad_lo[d] || w->pad_hi[d];
  }
  window_list(buf, n, &len, "size", w->size, r, 1, true);
  window_list(buf, n, &len, "stride", w->stride, r, 1, false);
  if (padded) {
    len += (size_t)snprintf(buf + len, len < n ? n - len : 0, " pad=");
    for (int d = 0; d < r; d++)
      len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%" PRId64 "_%" PRId64, d ? "x" : "", w->pad_lo[d],
                              w->pad_hi[d]);
  }
  window_list(buf, n, &len, "lhs_dilate", w->lhs_dilate, r, 1, false);
  window_list(buf, n, &len, "rhs_dilate", w->rhs_dilate, r, 1, false);
  window_list(buf, n, &len, "rhs_reversal", rev, r, 0, false);
  snprintf(buf + len, len < n ? n - len : 0, "}");
  ir_attr_set_text(i, "window", buf);
}

bool ir_window_dim_trivial(const IrWindow *w, int d) {
  return w->size[d] == 1 && w->stride[d] == 1 && w->pad_lo[d] == 0 && w->pad_hi[d] == 0 && w->lhs_dilate[d] == 1 &&
         w->rhs_dilate[d] == 1;
}

void ir_window_set_trivial(IrWindow *w, int d) {
  w->size[d] = w->stride[d] = w->lhs_dilate[d] = w->rhs_dilate[d] = 1;
  w->pad_lo[d] = w->pad_hi[d] = 0;
  w->reversal[d] = false;
}

bool ir_conv_dims(const IrInstr *i, IrConvDims *d, char *why, size_t nwhy) {
  memset(d, 0, sizeof *d);
  const char *dl = ir_attr_text(i, "dim_labels");
  if (!dl) return why_set(why, nwhy, "convolution needs the attribute 'dim_labels'");
  const char *u = strchr(dl, '_'), *ar = strstr(dl, "->");
  if (!u || !ar || ar < u) return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
  int ln = (int)(u - dl), kn = (int)(ar - u - 1), on = (int)strlen(ar + 2);
  bool have_ops = i->noperands == 2 && i->operands[0] && i->operands[1];
  const IrShape *l = have_ops ? &i->operands[0]->shape : NULL, *r = have_ops ? &i->operands[1]->shape : NULL;
  if ((have_ops && (ln != l->rank || kn != r->rank)) || ln != kn || on != ln) {
    if (!have_ops) return why_set(why, nwhy, "dim_labels '%s' give different ranks", dl);
    char b1[200], b2[200];
    ir_shape_format(l, false, b1, sizeof b1);
    ir_shape_format(r, false, b2, sizeof b2);
    return why_set(why, nwhy, "dim_labels '%s' do not match the ranks of %s and %s", dl, b1, b2);
  }
  if (ln < 2 || ln > IR_MAX_RANK) return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
  int ns = ln - 2;
  d->rank = ln;
  d->nspatial = ns;
  d->in_batch = d->in_feature = d->k_in = d->k_out = d->out_batch = d->out_feature = -1;
  for (int k = 0; k < IR_MAX_RANK; k++) d->in_spatial[k] = d->k_spatial[k] = d->out_spatial[k] = -1;
  for (int k = 0; k < ln; k++) {
    char c = dl[k];
    if (c == 'b') d->in_batch = k;
    else if (c == 'f') d->in_feature = k;
    else if (c >= '0' && c <= '9' && c - '0' < ns) d->in_spatial[c - '0'] = k;
    else return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
    c = u[1 + k];
    if (c == 'i') d->k_in = k;
    else if (c == 'o') d->k_out = k;
    else if (c >= '0' && c <= '9' && c - '0' < ns) d->k_spatial[c - '0'] = k;
    else return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
    c = ar[2 + k];
    if (c == 'b') d->out_batch = k;
    else if (c == 'f') d->out_feature = k;
    else if (c >= '0' && c <= '9' && c - '0' < ns) d->out_spatial[c - '0'] = k;
    else return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
  }
  /* every label exactly once: each of the rank positions was assigned, so none repeats */
  bool ok = d->in_batch >= 0 && d->in_feature >= 0 && d->k_in >= 0 && d->k_out >= 0 && d->out_batch >= 0 && d->out_feature >= 0;
  for (int k = 0; ok && k < ns; k++) ok = d->in_spatial[k] >= 0 && d->k_spatial[k] >= 0 && d->out_spatial[k] >= 0;
  if (!ok) return why_set(why, nwhy, "malformed dim_labels '%s'", dl);
  return true;
}

int ir_called_computations(const IrInstr *i, IrComputation **out, int max) {
  int n = 0;
  for (int k = 0; k < i->nattrs; k++) {
    const IrAttr *a = &i->attrs[k];
    if (a->kind != IR_ATTR_COMP) continue;
    for (int j = 0; j < a->ncomps; j++) {
      if (n < max) out[n] = a->comps[j];
      n++;
    }
  }
  return n;
}

/* ---------- literals ---------- */

/* Prints an integer-typed literal value kept as a double, saturating instead of overflowing
 * (values are doubles, so s64/u64 beyond 2^53 are already approximate). */
static int fmt_int_value(char *buf, size_t n, double v, IrType t) {
  if (v != v) v = 0;
  if (!ir_type_is_signed(t) && t != IR_PRED) {
    if (v <= 0) return snprintf(buf, n, "0");
    if (v >= 18446744073709551615.0) return snprintf(buf, n, "18446744073709551615");
    return snprintf(buf, n, "%llu", (unsigned long long)v);
  }
  if (v >= 9223372036854775807.0) return snprintf(buf, n, "9223372036854775807");
  if (v <= -9223372036854775808.0) return snprintf(buf, n, "-9223372036854775808");
  return snprintf(buf, n, "%lld", (long long)v);
}

int64_t ir_literal_ints(const IrLiteral *l, bool is_unsigned, int64_t *out, int64_t n) {
  if (!l || l->elided || !l->text) return -1;
  int64_t k = 0;
  const char *q = l->text;
  while (*q) {
    char ch = *q;
    if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == ',' || ch == '{' || ch == '}') {
      q++;
      continue;
    }
    if (ch == '/' && q[1] == '*') { /* index comments inside array literals */
      const char *z = strstr(q + 2, "*/");
      if (!z) return -1;
      q = z + 2;
      continue;
    }
    char *end = NULL;
    int64_t v;
    errno = 0;
    if (is_unsigned && ch != '-') v = (int64_t)strtoull(q, &end, 10);
    else v = (int64_t)strtoll(q, &end, 10);
    if (end == q || errno == ERANGE || (*end && !strchr(" \n\t\r,}", *end))) return -1;
    if (k < n) out[k] = v;
    k++;
    q = end;
  }
  return k;
}

IrLiteral *ir_literal_new(Arena *a, const double *values, int64_t count, IrType t, const IrShape *shape) {
  IrLiteral *l = arena_alloc(a, sizeof *l);
  if (!l) return NULL;
  l->count = count;
  l->values = arena_alloc(a, sizeof(double) * (size_t)(count > 0 ? count : 1));
  if (!l->values) return NULL;
  if (count > 0) memcpy(l->values, values, sizeof(double) * (size_t)count);
  /* Text in XLA's style: scalars bare, arrays nested by dimension. */
  size_t cap = (size_t)count * 32 + 64 + (shape ? (size_t)shape->rank * 4 : 0);
  char *buf = fx_malloc(cap);
  if (!buf) return NULL;
  size_t len = 0;
  int rank = shape ? shape->rank : 0;
  if (rank == 0) {
    double v = count ? values[0] : 0;
    if (t == IR_PRED) len += (size_t)snprintf(buf + len, cap - len, "%s", v != 0 ? "true" : "false");
    else if (ir_type_is_float(t)) len += (size_t)snprintf(buf + len, cap - len, "%.9g", v);
    else len += (size_t)fmt_int_value(buf + len, cap - len, v, t);
  } else {
    /* Nested braces: open at each dim boundary. */
    int64_t strides[IR_MAX_RANK];
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
      strides[d] = s;
      s *= shape->dims[d];
    }
    for (int d = 0; d < rank; d++) buf[len++] = '{';
    for (int64_t k = 0; k < count; k++) {
      if (k > 0) {
        int closes = 0;
        for (int d = rank - 1; d > 0; d--)
          if (k % strides[d - 1] == 0) closes++;
        for (int c2 = 0; c2 < closes; c2++) buf[len++] = '}';
        buf[len++] = ',';
        buf[len++] = ' ';
        for (int c2 = 0; c2 < closes; c2++) buf[len++] = '{';
      }
      double v = values[k];
      if (t == IR_PRED) len += (size_t)snprintf(buf + len, cap - len, "%s", v != 0 ? "true" : "false");
      else if (ir_type_is_float(t)) len += (size_t)snprintf(buf + len, cap - len, "%.9g", v);
      else len += (size_t)fmt_int_value(buf + len, cap - len, v, t);
    }
    for (int d = 0; d < rank; d++) buf[len++] = '}';
    buf[len] = 0;
  }
  l->text = arena_strndup(a, buf, len);
  fx_free(buf);
  return l->text ? l : NULL;
}

IrInstr *ir_constant_scalar(IrComputation *c, IrType t, double v, const char *name) {
  IrShape s = ir_shape_scalar(t);
  IrInstr *i = ir_instr_new(c, IR_OP_CONSTANT, &s, NULL, 0, name ? name : "constant");
  if (!i) return NULL;
  i->literal = ir_literal_new(&c->module->arena, &v, 1, t, &s);
  return i->literal ? i : NULL;
}

/* ---------- misc queries ---------- */

bool ir_instr_is_fusion(const IrInstr *i) { return i->op == IR_OP_FUSION; }
IrComputation *ir_fused_computation(const IrInstr *i) { return i->op == IR_OP_FUSION ? ir_attr_comp(i, "calls") : NULL; }
const char *ir_fusion_kind(const IrInstr *i) { return ir_attr_text(i, "kind"); }

int ir_module_instr_count(const IrModule *m) {
  int n = 0;
  for (int k = 0; k < m->ncomps; k++) n += m->comps[k]->ninstrs;
  return n;
}

static void postorder_visit(IrComputation *c, IrComputation **out, int max, int *n, char *seen) {
  if (seen[c->id]) return;
  seen[c->id] = 1;
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    for (int a = 0; a < i->nattrs; a++)
      if (i->attrs[a].kind == IR_ATTR_COMP)
        for (int j = 0; j < i->attrs[a].ncomps; j++)
          if (i->attrs[a].comps[j]) postorder_visit(i->attrs[a].comps[j], out, max, n, seen);
  }
  if (*n < max) out[*n] = c;
  (*n)++;
}

int ir_module_postorder(const IrModule *m, IrComputation **out, int max) {
  if (!m->entry) return 0;
  char *seen = fx_calloc((size_t)m->next_id + 1, 1);
  if (!seen) return 0;
  int n = 0;
  postorder_visit(m->entry, out, max, &n, seen);
  fx_free(seen);
  return n;
}

int ir_module_remove_unreachable(IrModule *m) {
  IrComputation **live = fx_malloc(sizeof(IrComputation *) * (size_t)(m->ncomps + 1));
  if (!live) return 0;
  int n = ir_module_postorder(m, live, m->ncomps + 1);
  int removed = 0, w = 0;
  for (int k = 0; k < m->ncomps; k++) {
    bool keep = false;
    for (int j = 0; j < n && j <= m->ncomps; j++)
      if (live[j] == m->comps[k]) keep = true;
    if (keep) {
      m->comps[w++] = m->comps[k];
    } else {
      ix_put(m->comp_names, m->comps[k]->name, NULL);
      removed++;
    }
  }
  m->ncomps = w;
  fx_free(live);
  return removed;
}

/* util.c — small helpers the picture, text and report code share: a growable text buffer, byte
 * and shape formatting, HTML escaping, and the kernel classification the pictures draw. */
#include <stdarg.h>
#include <string.h>

#include "../compiler/plan/plan.h"
#include "viz_internal.h"

static bool vbuf_reserve(VizBuf *b, size_t extra) {
  if (b->failed) return false;
  if (b->len + extra + 1 <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *s = fx_realloc(b->s, cap);
  if (!s) {
    b->failed = true;
    return false;
  }
  b->s = s;
  b->cap = cap;
  return true;
}

void vbuf_putn(VizBuf *b, const char *s, size_t n) {
  if (!vbuf_reserve(b, n)) return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void vbuf_puts(VizBuf *b, const char *s) { vbuf_putn(b, s, strlen(s)); }

void vbuf_printf(VizBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    vbuf_putn(b, small, (size_t)n);
    return;
  }
  if (!vbuf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void vbuf_html(VizBuf *b, const char *s) {
  if (!s) return;
  const char *run = s;
  for (; *s; s++) {
    const char *rep = NULL;
    switch (*s) {
      case '&': rep = "&amp;"; break;
      case '<': rep = "&lt;"; break;
      case '>': rep = "&gt;"; break;
      case '"': rep = "&quot;"; break;
      default: break;
    }
    if (rep) {
      vbuf_putn(b, run, (size_t)(s - run));
      vbuf_puts(b, rep);
      run = s + 1;
    }
  }
  vbuf_putn(b, run, (size_t)(s - run));
}

void vbuf_html_between(VizBuf *b, const char *before, const char *s, const char *after) {
  vbuf_puts(b, before);
  vbuf_html(b, s);
  vbuf_puts(b, after);
}

void vbuf_free(VizBuf *b) {
  fx_free(b->s);
  *b = (VizBuf){0};
}

const char *vbuf_str(const VizBuf *b) { return b->s ? b->s : ""; }

void viz_fmt_bytes(int64_t bytes, char *out, size_t n) { fx_format_bytes(out, n, (double)bytes, FX_BYTES_SHORT); }

void viz_fmt_shape(const IrShape *s, char *out, size_t n, size_t max) {
  if (n == 0) return;
  char tmp[512];
  int len = ir_shape_format(s, false, tmp, sizeof tmp);
  if (len < 0) len = 0;
  if (max + 4 > n) max = n > 4 ? n - 4 : 0;
  if ((size_t)len > max || (size_t)len >= sizeof tmp) {
    /* Cut at a character boundary and mark the cut ("…" is 3 bytes of UTF-8). */
    size_t cut = max > 1 ? max - 1 : 0;
    snprintf(out, n, "%.*s\xe2\x80\xa6", (int)cut, tmp);
  } else {
    snprintf(out, n, "%s", tmp);
  }
}

/* A picture's kinds are the kernel plan's, and one more for "no kernel". */
_Static_assert((int)VIZ_K_LOOP == (int)KERNEL_LOOP && (int)VIZ_K_INPUT == (int)KERNEL_INPUT &&
                   (int)VIZ_K_OUTPUT == (int)KERNEL_OUTPUT && (int)VIZ_K_LIBRARY == (int)KERNEL_LIBRARY &&
                   (int)VIZ_K_CONTROL == (int)KERNEL_CONTROL && (int)VIZ_K_NONE == (int)KERNEL_KIND_COUNT,
               "the pictures' kernel kinds are the plan's (kernels.def)");

const char *viz_kernel_kind_name(VizKernelKind k) {
  return k == VIZ_K_NONE ? "" : plan_kernel_kind_name((KernelKind)k);
}

VizKernelKind viz_kernel_kind(const IrInstr *i) {
  KernelKind k;
  return plan_instr_kernel(i, &k) ? (VizKernelKind)k : VIZ_K_NONE;
}

const char *viz_library_name(const IrInstr *i, char *buf, size_t n) {
  const char *library, *what;
  if (plan_op_library(i->op, &library, &what)) return library;
  if (plan_library_call(i, &library, &what)) return library; /* cuDNN, cuBLAS, Triton (kernels.def) */
  switch (i->op) {
    case IR_OP_CUSTOM_CALL: {
      size_t len;
      const char *t = ir_custom_call_target(i, &len);
      if (!t) return "custom call";
      snprintf(buf, n, "%.*s", (int)len, t);
      return buf;
    }
    case IR_OP_FUSION: return "library fusion";
    default: return "library";
  }
}

/* ---------- graphs whose order does not depend on memory ---------- */

/* cgraph keeps a graph's subgraphs ordered by their ids, and its default id discipline makes a
 * named object's id the address of its name: the clusters of a picture came out (and were laid
 * out) in an order that changed from run to run. This discipline gives every object, named or
 * not, the next odd number of its graph's counter: ids, and with them the order of subgraphs,
 * follow creation. It keeps the names itself (a hash from kind and name to id, and each id's
 * name; the names are the graph's own strings, as with cgraph's default discipline), freed when
 * the graph is closed: cgraph's own fallback map of names is never freed by Graphviz 2.43's
 * agclose. */
typedef struct {
  char *name;
  IDTYPE id;
  int kind;
} IdSlot;

typedef struct {
  IdSlot *slots; /* open addressing; a NULL name is free */
  size_t cap, n;
  char **names; /* names[(id - 1) / 2]: the name given to id, or NULL */
  size_t nnames;
  IDTYPE next;
  Agraph_t *g; /* the root graph: names are its strings (agstrdup), which agwrite asks whether
                  they are HTML, and which agclose frees */
} IdState;

static size_t id_hash(int kind, const char *s) {
  size_t h = 1469598103934665603ull ^ (size_t)kind;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static void *id_open(Agraph_t *g, Agdisc_t *disc) {
  (void)disc;
  IdState *st = fx_calloc(1, sizeof *st);
  if (st) {
    st->next = 1;
    st->g = g;
  }
  return st;
}

static IdSlot *id_find(IdState *st, int kind, const char *str) {
  if (!st->cap) return NULL;
  for (size_t k = id_hash(kind, str) & (st->cap - 1);; k = (k + 1) & (st->cap - 1)) {
    IdSlot *sl = &st->slots[k];
    if (!sl->name) return sl;
    if (sl->kind == kind && strcmp(sl->name, str) == 0) return sl;
  }
}

static bool id_grow(IdState *st) {
  size_t cap = st->cap ? st->cap * 2 : 64;
  IdSlot *slots = fx_calloc(cap, sizeof *slots);
  if (!slots) return false;
  IdState bigger = {.slots = slots, .cap = cap};
  for (size_t k = 0; k < st->cap; k++)
    if (st->slots[k].name) *id_find(&bigger, st->slots[k].kind, st->slots[k].name) = st->slots[k];
  fx_free(st->slots);
  st->slots = slots;
  st->cap = cap;
  return true;
}

static long id_map(void *state, int objtype, char *str, IDTYPE *id, int createflag) {
  IdState *st = state;
  if (!st) return 0;
  int kind = objtype == AGINEDGE ? AGOUTEDGE : objtype;
  IdSlot *sl = str ? id_find(st, kind, str) : NULL;
  if (sl && sl->name) {
    *id = sl->id;
    return 1;
  }
  if (str && !createflag) return 0;
  size_t at = (size_t)(st->next - 1) / 2;
  if (at >= st->nnames) {
    size_t n = st->nnames ? st->nnames * 2 : 64;
    char **names = fx_realloc(st->names, n * sizeof *names);
    if (!names) return 0;
    memset(names + st->nnames, 0, (n - st->nnames) * sizeof *names);
    st->names = names;
    st->nnames = n;
  }
  if (str) {
    if ((st->n + 1) * 2 > st->cap && !id_grow(st)) return 0;
    char *copy = agstrdup(st->g, str);
    if (!copy) return 0;
    sl = id_find(st, kind, str);
    *sl = (IdSlot){.name = copy, .id = st->next, .kind = kind};
    st->n++;
    st->names[at] = copy;
  }
  *id = st->next;
  st->next += 2;
  return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE request) {
  (void)state;
  (void)objtype;
  (void)request;
  return 0; /* no object is asked for by id */
}

static void id_free(void *state, int objtype, IDTYPE id) {
  /* The name stays until the graph is closed: a deleted object's id is not given again. */
  (void)state;
  (void)objtype;
  (void)id;
}

static char *id_print(void *state, int objtype, IDTYPE id) {
  (void)objtype;
  IdState *st = state;
  size_t at = (size_t)(id - 1) / 2;
  return st && id % 2 == 1 && at < st->nnames ? st->names[at] : NULL;
}

static void id_close(void *state) {
  IdState *st = state;
  if (!st) return;
  fx_free(st->slots); /* the names go with the graph's strings */
  fx_free(st->names);
  fx_free(st);
}

static void id_register(void *state, int objtype, void *obj) {
  (void)state;
  (void)objtype;
  (void)obj;
}

static Agiddisc_t creation_order_ids = {id_open, id_map, id_alloc, id_free, id_print, id_close, id_register};

Agraph_t *viz_agopen(const char *name) {
  static Agdisc_t disc;
  disc.mem = &AgMemDisc;
  disc.id = &creation_order_ids;
  disc.io = &AgIoDisc;
  return agopen((char *)name, Agdirected, &disc);
}

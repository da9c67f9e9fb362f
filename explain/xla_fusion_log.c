/* xla_fusion_log.c — XLA's priority-fusion decision log (its FusionProcessDumpProto in text form,
 * `*.priority_fusion_dump.txt`) read in and filed as decision records.
 *
 * The file is protobuf text: top-level `fusion_steps { KIND { field: value ... } }` blocks, one
 * per step, with KIND one of `fusion {fusion_name, producer_name, consumer_name}`,
 * `producer_ineligible {producer_name, reason}` and `update_priority {producer_name,
 * consumer_names..., us_fused, us_unfused}`; then `hlo_module_before_fusion: "..."` (the module
 * as one escaped string) and `gpu_device_info { ... }`. XLA writes fusion steps in the order it
 * made them; the priority updates between two fusions are computed in parallel, so their order
 * among themselves is arbitrary (only the last one per producer matters here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/fusion/fusion.h"
#include "../compiler/hlo/hlo.h"
#include "xla_dump.h"

/* ---------- reading ---------- */

/* The quoted string value at p (just after '"'), unescaped into the arena. */
static const char *unquote(Arena *a, const char *p, const char *end) {
  char *out = arena_alloc(a, (size_t)(end - p) + 1);
  if (!out) return NULL;
  size_t n = 0;
  for (; p < end && *p != '"'; p++) {
    if (*p == '\\' && p + 1 < end) {
      p++;
      switch (*p) {
      case 'n': out[n++] = '\n'; break;
      case 't': out[n++] = '\t'; break;
      case 'r': out[n++] = '\r'; break;
      default:
        if (*p >= '0' && *p <= '7' && p + 2 < end) { /* \ooo */
          out[n++] = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
          p += 2;
        } else {
          out[n++] = *p;
        }
      }
    } else {
      out[n++] = *p;
    }
  }
  out[n] = 0;
  return out;
}

static char *read_all(const char *path, size_t *len, FxError *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fx_error_set(err, NULL, 0, 0, "cannot open '%s'", path);
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = fx_malloc(cap + 1);
  while (buf) {
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (n < cap) break;
    char *nb = fx_realloc(buf, cap * 2 + 1);
    if (!nb) fx_free(buf);
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  if (!buf) {
    fx_error_set(err, NULL, 0, 0, "out of memory reading '%s'", path);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

static bool fail_at(FxError *err, const char *path, int line, const char *fmt, const char *what) {
  char msg[300];
  snprintf(msg, sizeof msg, fmt, what);
  return fx_error_set(err, path, line, 0, "XLA's fusion log is malformed: %s", msg);
}

XlaFusionLog *xla_fusion_log_load(const char *path, FxError *err) {
  size_t len;
  char *text = read_all(path, &len, err);
  if (!text) return NULL;
  XlaFusionLog *l = fx_calloc(1, sizeof *l);
  if (!l) {
    fx_free(text);
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  arena_init(&l->arena);
  l->path = arena_strdup(&l->arena, path);
  bool ok = true, oom = false;
  int depth = 0, lineno = 0, step_line = 0;
  XlaStep cur;
  bool in_step = false;
  char consumers[4096];
  size_t ncons = 0;
  const char *p = text, *end = text + len;
  while (ok && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    lineno++;
    const char *s = p;
    while (s < le && (*s == ' ' || *s == '\t')) s++;
    size_t n = (size_t)(le - s);
    if (n == 0) {
    } else if (s[n - 1] == '{') {
      /* "fusion_steps {", "fusion {", "gpu_device_info {" ... */
      if (depth == 1 && !in_step && strncmp(p, "  ", 2) == 0) {
        in_step = true;
        step_line = lineno;
        memset(&cur, 0, sizeof cur);
        cur.line = lineno;
        ncons = 0;
        consumers[0] = 0;
        if (strncmp(s, "fusion {", 8) == 0) cur.kind = XLA_STEP_FUSION;
        else if (strncmp(s, "producer_ineligible {", 21) == 0) cur.kind = XLA_STEP_INELIGIBLE;
        else if (strncmp(s, "update_priority {", 17) == 0) cur.kind = XLA_STEP_PRIORITY;
        else in_step = false; /* a kind this reader does not know: skipped */
      }
      depth++;
    } else if (*s == '}') {
      depth--;
      if (depth < 0) ok = fail_at(err, path, lineno, "%s", "a '}' closes nothing");
      if (depth == 1 && in_step) {
        in_step = false;
        if (!cur.producer) {
          ok = fail_at(err, path, step_line, "%s", "a step has no producer_name");
          break;
        }
        if (cur.kind == XLA_STEP_FUSION && (!cur.consumer || !cur.fusion)) {
          ok = fail_at(err, path, step_line, "%s", "a fusion step lacks its consumer_name or fusion_name");
          break;
        }
        if (cur.kind == XLA_STEP_PRIORITY) cur.consumer = arena_strdup(&l->arena, consumers);
        if (arena_grow(&l->arena, (void **)&l->steps, &l->cap, l->nsteps + 1, sizeof *l->steps) < 0) {
          oom = true;
          break;
        }
        l->steps[l->nsteps++] = cur;
        if (cur.kind == XLA_STEP_FUSION) l->nfusions++;
        else if (cur.kind == XLA_STEP_INELIGIBLE) l->nineligible++;
        else l->npriority++;
      }
    } else {
      const char *colon = memchr(s, ':', n);
      if (!colon) {
        ok = fail_at(err, path, lineno, "expected 'field: value', got '%.60s'", s);
        break;
      }
      size_t kn = (size_t)(colon - s);
      const char *v = colon + 1;
      while (v < le && *v == ' ') v++;
      const char *str = v < le && *v == '"' ? unquote(&l->arena, v + 1, le) : NULL;
      if (v < le && *v == '"' && !str) {
        oom = true;
        break;
      }
#define KEY(k) (kn == strlen(k) && strncmp(s, k, kn) == 0)
      if (depth == 0 && KEY("hlo_module_before_fusion")) {
        l->module_text = str;
      } else if (in_step) {
        if (KEY("producer_name")) cur.producer = str;
        else if (KEY("consumer_name")) cur.consumer = str;
        else if (KEY("fusion_name")) cur.fusion = str;
        else if (KEY("reason")) cur.reason = str;
        else if (KEY("consumer_names") && str) {
          size_t k = strlen(str);
          if (ncons + k + 2 < sizeof consumers) {
            if (ncons) consumers[ncons++] = ',';
            memcpy(consumers + ncons, str, k + 1);
            ncons += k;
          }
        } else if (KEY("us_fused")) cur.us_fused = strtod(v, NULL), cur.has_times = true;
        else if (KEY("us_unfused")) cur.us_unfused = strtod(v, NULL), cur.has_times = true;
      } else if (depth == 1 && KEY("name") && str && !l->device) {
        l->device = str;
      }
#undef KEY
    }
    p = nl ? nl + 1 : end;
  }
  fx_free(text);
  if (ok && !oom && depth != 0)
    ok = fail_at(err, path, lineno, "%s", "the file ends inside a block (truncated?)");
  if (oom) fx_error_set(err, NULL, 0, 0, "out of memory reading '%s'", path);
  if (!ok || oom) {
    xla_fusion_log_free(l);
    return NULL;
  }
  if (l->nsteps == 0 && !l->module_text) {
    fx_error_set(err, path, 0, 0, "'%s' holds no fusion_steps and no hlo_module_before_fusion: not XLA's fusion log",
                 path);
    xla_fusion_log_free(l);
    return NULL;
  }
  return l;
}

void xla_fusion_log_free(XlaFusionLog *l) {
  if (!l) return;
  arena_free(&l->arena);
  fx_free(l);
}

/* ---------- checking names ---------- */

static bool made_before(const XlaFusionLog *l, int upto, const char *name) {
  for (int k = 0; k < upto; k++)
    if (l->steps[k].kind == XLA_STEP_FUSION && strcmp(l->steps[k].fusion, name) == 0) return true;
  return false;
}

static bool known(const XlaFusionLog *l, int k, const IrModule *m, const char *name) {
  return ir_module_find_instr(m, name) || made_before(l, k, name);
}

const char *xla_fusion_log_root(const XlaFusionLog *l, const IrModule *m, int upto, const char *name) {
  while (name && !ir_module_find_instr(m, name)) {
    int q = upto - 1;
    while (q >= 0 && !(l->steps[q].kind == XLA_STEP_FUSION && strcmp(l->steps[q].fusion, name) == 0)) q--;
    if (q < 0) return NULL;
    name = l->steps[q].consumer; /* a fusion step's consumer is one name */
    upto = q;
  }
  return name;
}

bool xla_fusion_log_check(const XlaFusionLog *l, const IrModule *m, FxError *err) {
  for (int k = 0; k < l->nsteps; k++) {
    const XlaStep *s = &l->steps[k];
    const char *bad = NULL;
    if (!known(l, k, m, s->producer)) bad = s->producer;
    else if (s->kind == XLA_STEP_FUSION && !known(l, k, m, s->consumer)) bad = s->consumer;
    else if (s->kind == XLA_STEP_PRIORITY && s->consumer && *s->consumer) {
      char one[256];
      for (const char *c = s->consumer; *c && !bad;) {
        const char *e = strchr(c, ',');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        snprintf(one, sizeof one, "%.*s", (int)n, c);
        if (!known(l, k, m, one)) bad = s->consumer;
        c += n + (e ? 1 : 0);
      }
    }
    if (bad)
      return fx_error_set(err, l->path, s->line, 0,
                          "XLA's fusion log names '%s', which is not an instruction of module %s (nor a fusion an "
                          "earlier step made): the log belongs to another module",
                          bad, m->name);
  }
  return true;
}

/* ---------- XLA's reasons in fxplain's vocabulary ---------- */

const char *xla_reason_code(const char *t) {
  static const struct {
    const char *needle, *code;
  } map[] = {
      {"both the producer and the consumer contain a reduce", "reduce_into_reduce"},
      {"output of a reduce fusion", "reduce_epilogue"},
      {"inplace", "in_place"},
      {"in-place", "in_place"},
      {"scatter", "in_place"},
      {"DUS and DS", "in_place"},
      {"budget", "operand_budget"},
      {"shared memory", "shared_memory"},
      {"register", "registers"},
      {"cycle", "cycle"},
      {"too large", "ir_size"},
      {"too many", "ir_size"},
      {"unnested", "unnested_reductions"},
      {"expensive", "expensive_duplication"},
      {"duplicat", "code_duplication"},
      {"slower", "slower_if_fused"},
      {"custom", "custom_call"},
      {"root", "root"},
      {"reduce-window", "heavy_computation"},
      {"SymbolicTileAnalysis", "shape_mismatch"},
  };
  if (!t) return "not_fusible";
  for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
    if (strstr(t, map[k].needle)) return map[k].code;
  /* "the producer is not fusible", "only bitcast users", "No users to fuse", "Unsupported opcode". */
  return "not_fusible";
}

/* ---------- XLA's steps beside fxplain's verdicts ---------- */

/* Fusions are named differently by XLA and by fxplain, so pairs are matched by what they hold:
 * each name stands for the original instructions fused into it so far (XLA's `fusion.4` made of
 * triton_softmax.3 and exp.1.0 matches fxplain's fusion of the same two). */
typedef struct {
  const char *name;
  const char **orig;
  int n, cap;
} Members;

typedef struct {
  Members *m;
  int n, cap;
} MemberTable;

static int members_index(const MemberTable *t, const char *name) {
  for (int k = t->n - 1; k >= 0; k--)
    if (strcmp(t->m[k].name, name) == 0) return k;
  return -1;
}

static Members *members_find(MemberTable *t, const char *name) {
  int k = members_index(t, name);
  return k < 0 ? NULL : &t->m[k];
}

static void members_add(Members *m, const char *o) {
  for (int k = 0; k < m->n; k++)
    if (strcmp(m->orig[k], o) == 0) return;
  if (m->n == m->cap) {
    int nc = m->cap ? m->cap * 2 : 4;
    const char **g = fx_realloc(m->orig, sizeof *g * (size_t)nc);
    if (!g) return;
    m->orig = g;
    m->cap = nc;
  }
  /* A copy: callers pass names from buffers they reuse (one consumer of a list at a time). */
  size_t len = strlen(o) + 1;
  char *c = fx_malloc(len);
  if (!c) return;
  memcpy(c, o, len);
  m->orig[m->n++] = c;
}

/* The fusion `result` now holds what a and b held (a name not in the table holds itself). XLA
 * keeps a fusion consumer's name for the result (fusion.5 into triton_softmax.2 makes
 * triton_softmax.2): the consumer then still holds itself. */
static void members_merge(MemberTable *t, const char *result, const char *a, const char *b) {
  if (!result) return;
  const char *src[2] = {a, b};
  int was[2];
  for (int s = 0; s < 2; s++) was[s] = src[s] ? members_index(t, src[s]) : -1;
  int r = members_index(t, result);
  if (r < 0) {
    if (t->n == t->cap) {
      int nc = t->cap ? t->cap * 2 : 16;
      Members *g = fx_realloc(t->m, sizeof *g * (size_t)nc);
      if (!g) return;
      t->m = g;
      t->cap = nc;
    }
    r = t->n++;
    t->m[r] = (Members){.name = result};
  }
  for (int s = 0; s < 2; s++) {
    if (!src[s] || was[s] == r) continue;
    if (was[s] >= 0)
      for (int k = 0; k < t->m[was[s]].n; k++) members_add(&t->m[r], t->m[was[s]].orig[k]);
    else members_add(&t->m[r], src[s]);
  }
}

static void members_free(MemberTable *t) {
  for (int k = 0; k < t->n; k++) {
    for (int j = 0; j < t->m[k].n; j++) fx_free((char *)t->m[k].orig[j]);
    fx_free(t->m[k].orig);
  }
  fx_free(t->m);
}

/* Whether original instruction o is a bitcast of m: XLA and fxplain both copy bitcasts into every
 * user first, so two fusions sharing one are no more the same than two that read one value. */
static bool is_bitcast(const IrModule *m, const char *o) {
  const IrInstr *i = m ? ir_module_find_instr(m, o) : NULL;
  return i && i->op == IR_OP_BITCAST;
}

/* Whether names x (in table tx) and y (in ty) hold a common original instruction (not a bitcast,
 * unless that is all either holds). */
static bool overlap(const IrModule *m, MemberTable *tx, const char *x, MemberTable *ty, const char *y) {
  if (strcmp(x, y) == 0) return true;
  Members *mx = members_find(tx, x), *my = members_find(ty, y);
  const char *one_x[1] = {x}, *one_y[1] = {y};
  const char **ox = mx ? mx->orig : one_x, **oy = my ? my->orig : one_y;
  int nx = mx ? mx->n : 1, ny = my ? my->n : 1;
  for (int a = 0; a < nx; a++)
    for (int b = 0; b < ny; b++)
      if (strcmp(ox[a], oy[b]) == 0 && (nx == 1 || ny == 1 || !is_bitcast(m, ox[a]))) return true;
  return false;
}

/* Whether x and y hold exactly the same original instructions. */
static bool same_members(MemberTable *tx, const char *x, MemberTable *ty, const char *y) {
  Members *mx = members_find(tx, x), *my = members_find(ty, y);
  if (!mx && !my) return strcmp(x, y) == 0;
  int nx = mx ? mx->n : 1, ny = my ? my->n : 1;
  if (nx != ny) return false;
  const char *one_y[1] = {y};
  const char **oy = my ? my->orig : one_y;
  for (int b = 0; b < ny; b++)
    if (!overlap(NULL, tx, x, ty, oy[b])) return false;
  return true;
}

/* The name fxplain's record means, as XLA's log would say it: fxplain names a fusion consumer by
 * the instruction in its body that reads the producer (reduce_sum.1 inside triton_softmax.2);
 * XLA by the fusion. A name fxplain's own run made (in ft) stays as it is. */
static const char *as_xla(const IrModule *m, MemberTable *ft, const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s", name);
  if (!m || members_find(ft, name)) return buf;
  const IrInstr *i = ir_module_find_instr(m, name);
  while (i && i->parent && i->parent->fusion_instr) i = i->parent->fusion_instr;
  if (i) snprintf(buf, n, "%s", i->name);
  return buf;
}

/* fxplain's own record for XLA's pair in `own` (stage `stage`, pass own_pass when given), NULL
 * when it made none. A pair: fxplain's fusion of the very same two, else its first fusion of
 * instructions they hold (perhaps after refusing it first, as XLA refuses a producer with only
 * bitcast users until the bitcasts are fused), else its last refusal. A producer alone (ineligible): fxplain's refusal of the very
 * same instructions, else its acceptance. */
static const ExplainRecord *own_verdict(const ExplainLog *own, int stage, const char *own_pass, const IrModule *m,
                                        MemberTable *xt, MemberTable *ft, const char *producer, const char *consumer) {
  if (!own) return NULL;
  const ExplainRecord *any = NULL, *refused = NULL, *fused = NULL;
  int n = explain_stage_count(own, stage);
  char pbuf[256], cbuf[256];
  for (int k = 0; k < n; k++) {
    const ExplainRecord *r = explain_stage_record(own, stage, k);
    if (!r->producer || (own_pass && strcmp(r->pass, own_pass) != 0)) continue;
    const char *rp = as_xla(m, ft, r->producer, pbuf, sizeof pbuf);
    /* A bitcast goes into its users first and for free, in XLA as in fxplain: fusing it says
     * nothing about the larger producer that holds it. */
    const IrInstr *ri = m && strcmp(rp, producer) != 0 ? ir_module_find_instr(m, rp) : NULL;
    if (ri && ri->op == IR_OP_BITCAST) continue;
    if (!consumer) {
      if (!same_members(xt, producer, ft, rp)) continue;
      if (!r->accepted) return r;
      if (!any) any = r;
      continue;
    }
    if (!overlap(m, xt, producer, ft, rp) || !r->consumer) continue;
    char one[256];
    for (const char *c = r->consumer; *c;) {
      const char *e = strchr(c, ',');
      size_t len = e ? (size_t)(e - c) : strlen(c);
      snprintf(one, sizeof one, "%.*s", (int)len, c);
      const char *rc = as_xla(m, ft, one, cbuf, sizeof cbuf);
      if (overlap(m, xt, consumer, ft, rc)) {
        if (r->accepted && same_members(xt, producer, ft, rp) && same_members(xt, consumer, ft, rc)) return r;
        if (r->accepted && !fused) fused = r;
        else if (!r->accepted) refused = r;
        break;
      }
      c += len + (e ? 1 : 0);
    }
  }
  if (!consumer) return any;
  return fused ? fused : refused;
}

static int last_priority(const XlaFusionLog *l, const char *producer, int upto) {
  int at = -1;
  for (int k = 0; k < upto; k++)
    if (l->steps[k].kind == XLA_STEP_PRIORITY && strcmp(l->steps[k].producer, producer) == 0) at = k;
  return at;
}

/* Whether XLA left priority update k's producer unfused: it was the producer's last update, it
 * said fusing is slower, and no later step fused the producer or fused something into it (then
 * the name stands for a new fusion with priorities of its own). */
static bool left_unfused(const XlaFusionLog *l, int k) {
  const XlaStep *s = &l->steps[k];
  if (s->kind != XLA_STEP_PRIORITY || s->us_fused < s->us_unfused) return false;
  if (last_priority(l, s->producer, l->nsteps) != k) return false;
  for (int j = k + 1; j < l->nsteps; j++) {
    const XlaStep *t = &l->steps[j];
    if (t->kind == XLA_STEP_PRIORITY) continue;
    if (strcmp(t->producer, s->producer) == 0) return false;
    if (t->kind == XLA_STEP_FUSION && strcmp(t->consumer, s->producer) == 0) return false;
  }
  return true;
}

int xla_fusion_log_compare(const XlaFusionLog *l, const ExplainLog *own, int own_stage, const char *own_pass,
                           const IrModule *m, XlaVerdict **out) {
  *out = NULL;
  int nleft = 0;
  for (int k = 0; k < l->nsteps; k++) nleft += left_unfused(l, k);
  XlaVerdict *v = fx_calloc((size_t)(l->nsteps + nleft) + 1, sizeof *v);
  if (!v) return -1;
  /* fxplain's fusions by what they hold (its records in order). */
  MemberTable xt = {0}, ft = {0};
  char pbuf[256], cbuf[256];
  for (int k = 0; own && k < explain_stage_count(own, own_stage); k++) {
    const ExplainRecord *r = explain_stage_record(own, own_stage, k);
    if (!r->accepted || !r->result || !r->producer || (own_pass && strcmp(r->pass, own_pass) != 0)) continue;
    /* A fusion that keeps its consumer's name (fxplain's too) holds that consumer: seeded first,
     * since the consumer's name, once the result's, would stand for the result only. */
    bool fresh = !members_find(&ft, r->result);
    char one[256];
    for (const char *c = r->consumer ? r->consumer : ""; fresh && *c;) {
      const char *e = strchr(c, ',');
      size_t len = e ? (size_t)(e - c) : strlen(c);
      snprintf(one, sizeof one, "%.*s", (int)len, c);
      if (strcmp(as_xla(m, &ft, one, cbuf, sizeof cbuf), r->result) == 0) members_merge(&ft, r->result, r->result, NULL);
      c += len + (e ? 1 : 0);
    }
    members_merge(&ft, r->result, as_xla(m, &ft, r->producer, pbuf, sizeof pbuf), NULL);
    for (const char *c = r->consumer ? r->consumer : ""; *c;) {
      const char *e = strchr(c, ',');
      size_t len = e ? (size_t)(e - c) : strlen(c);
      snprintf(one, sizeof one, "%.*s", (int)len, c);
      members_merge(&ft, r->result, as_xla(m, &ft, one, cbuf, sizeof cbuf), NULL);
      c += len + (e ? 1 : 0);
    }
  }
  for (int k = 0; k < l->nsteps; k++) {
    const XlaStep *s = &l->steps[k];
    XlaVerdict *x = &v[k];
    *x = (XlaVerdict){.step = k, .compared = own != NULL};
    if (s->kind == XLA_STEP_FUSION) {
      x->own = own_verdict(own, own_stage, own_pass, m, &xt, &ft, s->producer, s->consumer);
      members_merge(&xt, s->fusion, s->producer, s->consumer);
      x->differ = own && (!x->own || !x->own->accepted);
    } else if (s->kind == XLA_STEP_INELIGIBLE) {
      /* A producer without users is fused by nobody; matching fxplain's records by what they hold
       * would only find the fusions that made it. */
      bool no_users = s->reason && strcmp(s->reason, "No users to fuse") == 0;
      x->own = no_users ? NULL : own_verdict(own, own_stage, own_pass, m, &xt, &ft, s->producer, NULL);
      x->differ = own && x->own && x->own->accepted;
    }
  }
  /* Producers whose last word was "fusing is slower" and that XLA never fused afterwards. */
  int at = l->nsteps;
  for (int k = 0; k < l->nsteps; k++) {
    if (!left_unfused(l, k)) continue;
    const XlaStep *s = &l->steps[k];
    char first[256];
    snprintf(first, sizeof first, "%s", s->consumer ? s->consumer : "");
    char *comma = strchr(first, ',');
    if (comma) *comma = 0;
    XlaVerdict *x = &v[at++];
    *x = (XlaVerdict){.step = k, .left_unfused = true, .compared = own != NULL};
    x->own = own_verdict(own, own_stage, own_pass, m, &xt, &ft, s->producer, first[0] ? first : NULL);
    x->differ = own && x->own && x->own->accepted;
  }
  members_free(&xt);
  members_free(&ft);
  *out = v;
  return at;
}

/* ---------- filing ---------- */

static void own_sentence(const ExplainRecord *r, char *buf, size_t n) {
  if (!r) {
    snprintf(buf, n, "makes no decision on this pair");
    return;
  }
  snprintf(buf, n, "%s it%s%s%s: %s", r->accepted ? "fuses" : "refuses", r->reason ? " [" : "",
           r->reason ? r->reason : "", r->reason ? "]" : "", r->detail ? r->detail : "");
}

static void add_times(PassDecision *d, const XlaStep *p) {
  if (!p || !p->has_times) return;
  pass_metric(d, "xla_us_fused", p->us_fused);
  pass_metric(d, "xla_us_unfused", p->us_unfused);
}

static void add_own(PassDecision *d, const ExplainRecord *r) {
  if (!r) return;
  for (int k = 0; k < r->nmetrics; k++) {
    if (strcmp(r->metrics[k].key, "us_fused") == 0) pass_metric(d, "fxplain_us_fused", r->metrics[k].value);
    if (strcmp(r->metrics[k].key, "us_unfused") == 0) pass_metric(d, "fxplain_us_unfused", r->metrics[k].value);
  }
}

/* " [file:line -> file:line]" for the pair, from m's metadata; "" when neither is known. */
static void pair_source(const IrModule *m, const char *a, const char *b, char *buf, size_t n) {
  char sa[160] = "", sb[160] = "";
  buf[0] = 0;
  if (!m) return;
  const IrInstr *ia = a ? ir_module_find_instr(m, a) : NULL;
  char first[256] = "";
  if (b) snprintf(first, sizeof first, "%s", b);
  char *comma = strchr(first, ',');
  if (comma) *comma = 0;
  const IrInstr *ib = first[0] ? ir_module_find_instr(m, first) : NULL;
  if (ia) xla_source_short(m, ia, sa, sizeof sa);
  if (ib) xla_source_short(m, ib, sb, sizeof sb);
  if (!sa[0] && !sb[0]) return;
  if (ib) snprintf(buf, n, " [%s -> %s]", sa[0] ? sa : "?", sb[0] ? sb : "?");
  else snprintf(buf, n, " [%s]", sa);
}

void xla_fusion_log_emit(const XlaFusionLog *l, DecisionSink *sink, const char *pass, const ExplainLog *own,
                         int own_stage, const IrModule *m, int *disagree) {
  char src[400];
  int nd = 0;
  char mine[600];
  XlaVerdict *vs;
  int nv = xla_fusion_log_compare(l, own, own_stage, NULL, m, &vs);
  if (nv < 0) {
    /* Out of memory: XLA's decisions alone, fxplain's verdicts left out. */
    own = NULL;
    nv = 0;
  }
  for (int k = 0; k < l->nsteps; k++) {
    const XlaStep *s = &l->steps[k];
    const ExplainRecord *r = nv ? vs[k].own : NULL;
    bool differ = nv && vs[k].differ;
    PassDecision d = {.pass = pass, .action = "fuse", .producer = s->producer};
    if (s->kind == XLA_STEP_FUSION) {
      int lp = last_priority(l, s->producer, k);
      d.consumer = s->consumer;
      d.accepted = true;
      d.result = s->fusion;
      add_times(&d, lp >= 0 ? &l->steps[lp] : NULL);
      add_own(&d, r);
      if (differ) nd++;
      own_sentence(r, mine, sizeof mine);
      pair_source(m, s->producer, s->consumer, src, sizeof src);
      if (lp >= 0 && l->steps[lp].has_times)
        pass_emit(sink, &d, "XLA fused %s into %s, making %s (step %d; its cost model: %.4g us fused vs %.4g us unfused)%s%s%s",
                  s->producer, s->consumer, s->fusion, k + 1, l->steps[lp].us_fused, l->steps[lp].us_unfused,
                  own ? (differ ? "; DISAGREE: fxplain " : "; fxplain agrees, it ") : "", own ? mine : "", src);
      else
        pass_emit(sink, &d, "XLA fused %s into %s, making %s (step %d)%s%s%s", s->producer, s->consumer, s->fusion,
                  k + 1, own ? (differ ? "; DISAGREE: fxplain " : "; fxplain agrees, it ") : "", own ? mine : "", src);
    } else if (s->kind == XLA_STEP_INELIGIBLE) {
      d.accepted = false;
      d.reason = xla_reason_code(s->reason);
      add_own(&d, r);
      if (differ) nd++;
      own_sentence(r, mine, sizeof mine);
      pair_source(m, s->producer, NULL, src, sizeof src);
      pass_emit(sink, &d, "XLA: %s is not fused: \"%s\" (step %d)%s%s%s", s->producer, s->reason ? s->reason : "?",
                k + 1, own ? (differ ? "; DISAGREE: fxplain " : "; fxplain ") : "", own ? mine : "", src);
    } else {
      d.action = "priority";
      d.consumer = s->consumer;
      d.accepted = s->us_fused < s->us_unfused;
      add_times(&d, s);
      pass_emit(sink, &d, "XLA's cost model for %s into its users: %.4g us fused vs %.4g us unfused (%s)", s->producer,
                s->us_fused, s->us_unfused, d.accepted ? "worth fusing" : "fusing is slower");
    }
  }
  for (int j = l->nsteps; j < nv; j++) {
    const XlaStep *s = &l->steps[vs[j].step];
    const ExplainRecord *r = vs[j].own;
    bool differ = vs[j].differ;
    PassDecision d = {.pass = pass, .action = "fuse", .producer = s->producer, .consumer = s->consumer,
                      .accepted = false, .reason = "slower_if_fused"};
    add_times(&d, s);
    add_own(&d, r);
    if (differ) nd++;
    own_sentence(r, mine, sizeof mine);
    pair_source(m, s->producer, s->consumer, src, sizeof src);
    pass_emit(sink, &d, "XLA left %s unfused: its cost model's last word was %.4g us fused vs %.4g us unfused%s%s%s",
              s->producer, s->us_fused, s->us_unfused, own ? (differ ? "; DISAGREE: fxplain " : "; fxplain ") : "",
              own ? mine : "", src);
  }
  fx_free(vs);
  if (disagree) *disagree = nd;
}

/* ---------- replay ---------- */

IrModule *xla_fusion_log_replay(const XlaFusionLog *l, const IrModule *m, FxError *err) {
  IrModule *out = ir_module_clone(m);
  if (!out) {
    fx_error_set(err, NULL, 0, 0, "out of memory");
    return NULL;
  }
  /* XLA's fusion names -> fxplain's fusions (fxplain names its own). */
  const char **names = fx_calloc((size_t)l->nfusions + 1, sizeof *names);
  IrInstr **made = fx_calloc((size_t)l->nfusions + 1, sizeof *made);
  int nmade = 0;
  bool ok = names && made;
  if (!ok) fx_error_set(err, NULL, 0, 0, "out of memory");
  for (int k = 0; ok && k < l->nsteps; k++) {
    const XlaStep *s = &l->steps[k];
    if (s->kind != XLA_STEP_FUSION) continue;
    IrInstr *ip = NULL, *ic = NULL;
    for (int j = nmade - 1; j >= 0; j--) {
      if (!ip && strcmp(names[j], s->producer) == 0) ip = made[j];
      if (!ic && strcmp(names[j], s->consumer) == 0) ic = made[j];
    }
    if (!ip) ip = ir_module_find_instr(out, s->producer);
    if (!ic) ic = ir_module_find_instr(out, s->consumer);
    if (!ip || !ic || ip->dead || ic->dead || ip->parent != ic->parent) {
      ok = fx_error_set(err, l->path, s->line, 0, "cannot replay XLA's step %d (%s into %s): %s", k + 1, s->producer,
                        s->consumer, !ip || !ic ? "an instruction is missing" : "it is gone or elsewhere");
      break;
    }
    IrComputation *c = ic->parent;
    IrInstr *f = fusion_fuse(ic, ip);
    if (!f) {
      ok = fx_error_set(err, NULL, 0, 0, "out of memory");
      break;
    }
    ir_computation_sort(c);
    names[nmade] = s->fusion;
    made[nmade++] = f;
  }
  fx_free(names);
  fx_free(made);
  if (!ok) {
    ir_module_free(out);
    return NULL;
  }
  return out;
}

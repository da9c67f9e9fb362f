/* explain_why.c — where two instructions are split: the kernel boundaries on the paths between
 * them, and the decision that kept each boundary's value in memory.
 *
 * Flow: `why A B` and `show graph` build an ExplainStageView of the current stage (its module, its
 * kernel plan, the log up to it). The view maps every instruction to its kernel, links kernels by
 * the values they read from each other, and resolves the names every record mentions to the
 * kernels they are in now, following a name that a later pass removed to what replaced it
 * ("fusion.1 -> s => fusion.2": fusion.1 is now fusion.2). A question then walks the kernel graph:
 * the boundaries on the paths from one kernel to the other (in either direction), and for each
 * boundary the decision between the two kernels it separates. */
#include <stdlib.h>
#include <string.h>

#include "explain.h"

#define MAX_NAMES 8  /* kernels one record's names resolve to, at most */
#define MAX_FOLLOW 64 /* rewrites followed from one name, at most (a guard against cycles) */

typedef struct {
  const char *key, *val;
} NameSlot;

typedef struct {
  const ExplainRecord *r;
  int prod;              /* kernel of the producer, -1 when none */
  const IrInstr *prod_instr; /* the producer as it is now (followed), or NULL */
  int kernels[MAX_NAMES]; /* kernels of every name it mentions, distinct */
  int nk;
} RecKernels;

struct ExplainStageView {
  Arena arena;
  const ExplainLog *log;
  int max_stage;
  const IrModule *m;
  const KernelPlan *p;
  int *kernel_of_id; /* instruction id -> kernel index, -1 */
  const char **origin; /* instruction id -> the name of what it replaced, NULL */
  int nids;
  NameSlot *succ; /* open addressing: a removed name -> what replaced it */
  size_t succ_cap;
  int *in_start, *in_from; /* kernel k's in-edges: in_from[in_start[k] .. in_start[k+1]) */
  int64_t *in_bytes;
  int *out_start, *out_to; /* and its out-edges */
  RecKernels *recs;
  int nrecs;
  bool any_fusion_pass;
};

/* ---------- names ---------- */

static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static const char *succ_get(const ExplainStageView *v, const char *name) {
  if (!v->succ_cap) return NULL;
  for (size_t h = hash_str(name) & (v->succ_cap - 1);; h = (h + 1) & (v->succ_cap - 1)) {
    if (!v->succ[h].key) return NULL;
    if (strcmp(v->succ[h].key, name) == 0) return v->succ[h].val;
  }
}

/* Sets name -> val (keys and values are strings the log owns, which outlive the view). */
static void succ_put(ExplainStageView *v, const char *name, const char *val) {
  for (size_t h = hash_str(name) & (v->succ_cap - 1);; h = (h + 1) & (v->succ_cap - 1)) {
    if (!v->succ[h].key || strcmp(v->succ[h].key, name) == 0) {
      v->succ[h].key = name;
      v->succ[h].val = val;
      return;
    }
  }
}

/* The names of a list "a,b,c" (or one name), one at a time: copies the next into buf and returns
 * the rest, or NULL at the end. */
static const char *next_name(const char *p, char *buf, size_t n) {
  if (!p) return NULL;
  while (*p == ' ' || *p == ',') p++;
  if (!*p) return NULL;
  size_t len = strcspn(p, ",");
  size_t tl = len;
  while (tl > 0 && p[tl - 1] == ' ') tl--;
  snprintf(buf, n, "%.*s", (int)(tl < n ? tl : n - 1), p);
  return p + len;
}

/* Is name one of the names of list "a,b,c"? */
static bool in_names(const char *list, const char *name) {
  char buf[512];
  for (const char *q = next_name(list, buf, sizeof buf); q; q = next_name(q, buf, sizeof buf))
    if (strcmp(buf, name) == 0) return true;
  return false;
}

const IrInstr *explain_view_follow(const ExplainStageView *v, const char *name) {
  for (int k = 0; name && k < MAX_FOLLOW; k++) {
    const IrInstr *i = ir_module_find_instr(v->m, name);
    if (i) return i;
    name = succ_get(v, name);
  }
  return NULL;
}

/* name, then what it became, and so on: the names it went by (at most MAX_FOLLOW). */
static int chain(const ExplainStageView *v, const char *name, const char **out) {
  int n = 0;
  while (name && n < MAX_FOLLOW) {
    out[n++] = name;
    name = succ_get(v, name);
  }
  return n;
}

static bool in_chain(const char *name, const char *const *chain, int n) {
  for (int k = 0; k < n; k++)
    if (strcmp(chain[k], name) == 0) return true;
  return false;
}

/* A set of names, for replay_join: copies, at most JOIN_MAX. */
#define JOIN_MAX 512
typedef struct {
  char *names[JOIN_MAX];
  int n;
  bool full;
} NameSet;

static bool set_has(const NameSet *st, const char *name) {
  for (int k = 0; k < st->n; k++)
    if (strcmp(st->names[k], name) == 0) return true;
  return false;
}

static void set_add(NameSet *st, const char *name) {
  if (set_has(st, name)) return;
  if (st->n == JOIN_MAX || !(st->names[st->n] = fx_strdup(name))) {
    st->full = true;
    return;
  }
  st->n++;
}

/* A "duplicate" decision put a copy of its producer into the result and left the original where
 * it was (for its other users): the producer's name joins nobody's kernel through it. */
static int rec_first_list(const ExplainRecord *r) { return r->action && strcmp(r->action, "duplicate") == 0 ? 1 : 0; }

/* Does the record (its producer, consumer names or result) name a member of the set? */
static bool rec_touches(const ExplainRecord *r, const NameSet *st) {
  char buf[512];
  const char *lists[3] = {r->producer, r->consumer, r->result};
  for (int l = rec_first_list(r); l < 3; l++)
    for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf))
      if (set_has(st, buf)) return true;
  return false;
}

static void rec_add_all(const ExplainRecord *r, NameSet *st) {
  char buf[512];
  const char *lists[3] = {r->producer, r->consumer, r->result};
  for (int l = rec_first_list(r); l < 3; l++)
    for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf)) set_add(st, buf);
}

/* The set gained the kernel r made (its result): the names earlier decisions of the same stage had
 * already put into that kernel belong to it too (a fusion grows one decision at a time, and a
 * later decision names the kernel by its root: "merge xc -> y" for fusion.2 ending in xc). */
static void add_kernel_members(const ExplainStageView *v, int k, NameSet *st) {
  const ExplainRecord *r = v->recs[k].r;
  for (int j = k - 1; j >= 0 && !st->full; j--) {
    const ExplainRecord *q = v->recs[j].r;
    if (q->stage != r->stage) break;
    if (q->accepted && q->result && strcmp(q->result, r->result) == 0) rec_add_all(q, st);
  }
}

static const ExplainRecord *replay_join(const ExplainStageView *v, const char *a, const char *b) {
  NameSet *sa = fx_calloc(1, sizeof *sa), *sb = fx_calloc(1, sizeof *sb);
  const ExplainRecord *joined = NULL;
  if (sa && sb) {
    set_add(sa, a);
    set_add(sb, b);
    for (int k = 0; k < v->nrecs && !joined && !sa->full && !sb->full; k++) {
      const ExplainRecord *r = v->recs[k].r;
      if (!r->accepted || !r->result) continue;
      bool ta = rec_touches(r, sa), tb = rec_touches(r, sb);
      if (ta && !set_has(sa, r->result)) add_kernel_members(v, k, sa);
      if (tb && !set_has(sb, r->result)) add_kernel_members(v, k, sb);
      if (ta) rec_add_all(r, sa);
      if (tb) rec_add_all(r, sb);
      if (!ta && !tb) continue;
      for (int j = 0; j < sa->n && !joined; j++)
        if (set_has(sb, sa->names[j])) joined = r;
    }
    if (sa->full || sb->full) joined = NULL; /* too many names to trust: the caller guesses */
  }
  for (int k = 0; sa && k < sa->n; k++) fx_free(sa->names[k]);
  for (int k = 0; sb && k < sb->n; k++) fx_free(sb->names[k]);
  fx_free(sa);
  fx_free(sb);
  return joined;
}

/* ---------- kernels ---------- */

/* A name the user gave (a .fx variable: "mx", "scores", "y.12" when "y" was taken counts too only
 * without a number), not one XLA or a pass made up ("reduce.14", "fusion", "broadcast.17.clone"). */
static bool user_name(const char *name) {
  const char *dot = strrchr(name, '.');
  if (dot && dot[1] && strspn(dot + 1, "0123456789") == strlen(dot + 1)) return false;
  if (strstr(name, ".clone")) return false;
  static const char *const made[] = {"fusion", "tuple", "constant", "parameter", "copy", "bitcast"};
  for (size_t k = 0; k < sizeof made / sizeof made[0]; k++)
    if (strncmp(name, made[k], strlen(made[k])) == 0) return false;
  return true;
}

const char *explain_view_origin(const ExplainStageView *v, const IrInstr *i) {
  return i && i->id >= 0 && i->id < v->nids && v->origin ? v->origin[i->id] : NULL;
}

const char *explain_view_kernel_names(const ExplainStageView *v, const PlanKernel *k, char *buf, size_t n) {
  size_t len = 0;
  int shown = 0, more = 0;
  buf[0] = 0;
  for (int j = -1; j < k->nmembers; j++) {
    const IrInstr *i = j < 0 ? k->instr : k->members[j];
    if (!i || (j >= 0 && i == k->instr)) continue;
    /* The kernel's own name is in the header already: only what it replaced adds. */
    const char *name = j >= 0 && user_name(i->name) ? i->name : explain_view_origin(v, i);
    if (!name) continue;
    if (shown == 4) {
      more++;
      continue;
    }
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", shown ? ", " : "", name);
    shown++;
  }
  if (more && len < n) snprintf(buf + len, n - len, ", ...");
  return buf;
}

static int kernel_of(const ExplainStageView *v, const IrInstr *i) {
  for (int guard = 0; i && guard < 16; guard++) {
    if (i->id >= 0 && i->id < v->nids && v->kernel_of_id[i->id] >= 0) return v->kernel_of_id[i->id];
    /* Constants and parameters of a fused body are not members: they are in the fusion's kernel. */
    i = i->parent ? i->parent->fusion_instr : NULL;
  }
  return -1;
}

/* The kernel that wrote the value an operand holds: through the ops that pass a buffer on
 * without a kernel (get-tuple-element, bitcast, and reshapes or transposes that are bitcasts). */
static int source_kernel(const ExplainStageView *v, const IrInstr *i) {
  for (int guard = 0; i && guard < 64; guard++) {
    int k = kernel_of(v, i);
    if (k >= 0) return k;
    if (i->noperands < 1 || (i->op != IR_OP_GET_TUPLE_ELEMENT && i->op != IR_OP_BITCAST && i->op != IR_OP_RESHAPE &&
                             i->op != IR_OP_TRANSPOSE && i->op != IR_OP_COPY))
      return -1;
    i = i->operands[0];
  }
  return -1;
}

static int name_kernel(const ExplainStageView *v, const char *name) {
  const IrInstr *i = explain_view_follow(v, name);
  return i ? kernel_of(v, i) : -1;
}

static bool fusion_action(const char *a) {
  static const char *const acts[] = {"fuse", "duplicate", "merge", "multi-output", "sibling", "horizontal"};
  for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++)
    if (strcmp(a, acts[k]) == 0) return true;
  return false;
}

static bool build_edges(ExplainStageView *v) {
  const KernelPlan *p = v->p;
  int nk = p->nkernels, total = 0;
  for (int k = 0; k < nk; k++) total += p->kernels[k].ninputs;
  v->in_start = arena_alloc(&v->arena, sizeof(int) * (size_t)(nk + 1));
  v->out_start = arena_alloc(&v->arena, sizeof(int) * (size_t)(nk + 2));
  v->in_from = arena_alloc(&v->arena, sizeof(int) * (size_t)(total + 1));
  v->out_to = arena_alloc(&v->arena, sizeof(int) * (size_t)(total + 1));
  v->in_bytes = arena_alloc(&v->arena, sizeof(int64_t) * (size_t)(total + 1));
  if (!v->in_start || !v->out_start || !v->in_from || !v->out_to || !v->in_bytes) return false;
  int ne = 0;
  for (int k = 0; k < nk; k++) {
    const PlanKernel *kn = &p->kernels[k];
    v->in_start[k] = ne;
    for (int q = 0; q < kn->ninputs; q++) {
      int from = source_kernel(v, kn->inputs[q]);
      if (from < 0 || from == k) continue;
      int64_t b = ir_shape_bytes(&kn->inputs[q]->shape);
      int e = v->in_start[k];
      while (e < ne && v->in_from[e] != from) e++;
      if (e < ne) {
        v->in_bytes[e] += b;
        continue;
      }
      v->in_from[ne] = from;
      v->in_bytes[ne++] = b;
      v->out_start[from + 1]++;
    }
  }
  v->in_start[nk] = ne;
  for (int k = 0; k < nk; k++) v->out_start[k + 1] += v->out_start[k];
  int *fill = fx_calloc((size_t)nk + 1, sizeof *fill);
  if (!fill) return false;
  for (int k = 0; k < nk; k++)
    for (int e = v->in_start[k]; e < v->in_start[k + 1]; e++) {
      int f = v->in_from[e];
      v->out_to[v->out_start[f] + fill[f]++] = k;
    }
  fx_free(fill);
  return true;
}

ExplainStageView *explain_view_new(const ExplainLog *log, int max_stage, const IrModule *m, const KernelPlan *plan) {
  ExplainStageView *v = fx_calloc(1, sizeof *v);
  if (!v) return NULL;
  arena_init(&v->arena);
  v->log = log;
  v->max_stage = max_stage;
  v->m = m;
  v->p = plan;
  v->nids = m->next_id + 1;
  v->kernel_of_id = arena_alloc(&v->arena, sizeof(int) * (size_t)v->nids);
  if (!v->kernel_of_id) goto fail;
  for (int k = 0; k < v->nids; k++) v->kernel_of_id[k] = -1;
  for (int k = 0; k < plan->nkernels; k++) {
    const PlanKernel *kn = &plan->kernels[k];
    if (kn->instr && kn->instr->id >= 0 && kn->instr->id < v->nids) v->kernel_of_id[kn->instr->id] = k;
    for (int j = 0; j < kn->nmembers; j++)
      if (kn->members[j]->id >= 0 && kn->members[j]->id < v->nids) v->kernel_of_id[kn->members[j]->id] = k;
  }
  if (!build_edges(v)) goto fail;
  /* Successors: every accepted record with a result replaced the names it mentions by it. */
  int nrec = 0;
  int last = max_stage < explain_log_nstages(log) ? max_stage : explain_log_nstages(log) - 1;
  for (int st = 0; st <= last; st++) nrec += explain_stage_count(log, st);
  v->succ_cap = 64;
  while (v->succ_cap < (size_t)nrec * 4) v->succ_cap *= 2;
  v->succ = arena_alloc(&v->arena, sizeof(NameSlot) * v->succ_cap);
  v->recs = arena_alloc(&v->arena, sizeof(RecKernels) * (size_t)(nrec + 1));
  if (!v->succ || !v->recs) goto fail;
  char buf[512];
  for (int st = 0; st <= last; st++)
    for (int k = 0; k < explain_stage_count(log, st); k++) {
      const ExplainRecord *r = explain_stage_record(log, st, k);
      if (fusion_action(r->action)) v->any_fusion_pass = true;
      if (!r->accepted || !r->result) continue;
      const char *lists[2] = {r->producer, r->consumer};
      for (int l = 0; l < 2; l++)
        for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf)) {
          if (strcmp(buf, r->result) == 0) continue;
          /* The key must outlive the view: the name as the log holds it. */
          const char *key = arena_strdup(&v->arena, buf);
          if (!key) goto fail;
          succ_put(v, key, r->result);
        }
    }
  /* Origins: the first removed name each instruction stands for now. */
  v->origin = arena_alloc(&v->arena, sizeof(char *) * (size_t)v->nids);
  if (!v->origin) goto fail;
  for (int st = 0; st <= last; st++)
    for (int k = 0; k < explain_stage_count(log, st); k++) {
      const ExplainRecord *r = explain_stage_record(log, st, k);
      if (!r->accepted || !r->result) continue;
      const char *lists[2] = {r->producer, r->consumer};
      for (int l = 0; l < 2; l++)
        for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf)) {
          if (!user_name(buf) || ir_module_find_instr(m, buf)) continue;
          const IrInstr *i = explain_view_follow(v, buf);
          if (!i || i->op == IR_OP_FUSION || i->id < 0 || i->id >= v->nids || v->origin[i->id] || user_name(i->name))
            continue;
          v->origin[i->id] = arena_strdup(&v->arena, buf);
        }
    }
  /* Every record's names, resolved to the kernels they are in now. */
  for (int st = 0; st <= last; st++)
    for (int k = 0; k < explain_stage_count(log, st); k++) {
      const ExplainRecord *r = explain_stage_record(log, st, k);
      RecKernels *rk = &v->recs[v->nrecs++];
      rk->r = r;
      rk->prod = -1;
      const char *lists[2] = {r->producer, r->consumer};
      for (int l = 0; l < 2; l++)
        for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf)) {
          int kn = name_kernel(v, buf);
          if (kn < 0) continue;
          if (l == 0 && rk->prod < 0) {
            rk->prod = kn;
            rk->prod_instr = explain_view_follow(v, buf);
          }
          int j = 0;
          while (j < rk->nk && rk->kernels[j] != kn) j++;
          if (j == rk->nk && rk->nk < MAX_NAMES) rk->kernels[rk->nk++] = kn;
        }
    }
  return v;
fail:
  explain_view_free(v);
  return NULL;
}

void explain_view_free(ExplainStageView *v) {
  if (!v) return;
  arena_free(&v->arena);
  fx_free(v);
}

/* ---------- labels ---------- */

const char *explain_kernel_label(const PlanKernel *k, char *buf, size_t n) {
  const IrInstr *i = k->instr;
  const char *library, *what;
  if (k->kind == KERNEL_LIBRARY && i && plan_op_library(i->op, &library, &what)) {
    if (!what) return library;
    snprintf(buf, n, "%s %s", library, what);
    return buf;
  }
  if (k->kind == KERNEL_LIBRARY && i && plan_library_call(i, &library, &what)) {
    /* a cuDNN or cuBLAS custom call, a Triton fusion (kernels.def) */
    snprintf(buf, n, "%s %s", library, what);
    return buf;
  }
  if (k->kind == KERNEL_LIBRARY && i) {
    switch (i->op) {
    case IR_OP_CUSTOM_CALL: {
      size_t len;
      const char *t = ir_custom_call_target(i, &len);
      if (!t) return "custom call";
      /* JAX's random numbers on a GPU: the threefry (or philox) kernel, an RNG library call. */
      bool rng = strstr(t, "threefry") || strstr(t, "philox") || strstr(t, "rng");
      snprintf(buf, n, "%s %.*s", rng ? "RNG kernel, custom call" : "custom call", (int)(len > 120 ? 120 : len), t);
      return buf;
    }
    case IR_OP_FUSION: return "library fusion";
    default: return "library call";
    }
  }
  if (k->kind == KERNEL_CONTROL) return "loop control";
  if (i && i->op == IR_OP_FUSION) snprintf(buf, n, "%s fusion", plan_kernel_kind_name(k->kind));
  else snprintf(buf, n, "unfused %s", i ? ir_op_name(i->op) : "op");
  return buf;
}

const char *explain_loop_control(const PlanKernel *k, char *buf, size_t n) {
  if (k->for_loop)
    snprintf(buf, n,
             "loop %s: known trip count %lld, run as a for loop (XLA:GPU runs the body %lld time%s and never "
             "evaluates the condition)",
             k->name, (long long)k->trip_count, (long long)k->trip_count, k->trip_count == 1 ? "" : "s");
  else
    snprintf(buf, n,
             "loop %s: trip count not known at compile time, counted as 1 (XLA:GPU runs the condition every "
             "iteration and once more, and reads its result back to the host each time)",
             k->name);
  return buf;
}

/* ---------- boundaries ---------- */

static bool rec_has(const RecKernels *rk, int k) {
  for (int j = 0; j < rk->nk; j++)
    if (rk->kernels[j] == k) return true;
  return false;
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool identical(const ExplainRecord *a, const ExplainRecord *b) {
  return a->accepted == b->accepted && strcmp(a->pass, b->pass) == 0 && strcmp(a->action, b->action) == 0 &&
         same_str(a->reason, b->reason);
}

const PlanKernel *explain_view_kernel(const ExplainStageView *v, const IrInstr *i) {
  int k = kernel_of(v, i);
  return k >= 0 ? &v->p->kernels[k] : NULL;
}

bool explain_view_between(const ExplainStageView *v, const ExplainRecord *r, const PlanKernel *a, const PlanKernel *b) {
  int ka = (int)(a - v->p->kernels), kb = (int)(b - v->p->kernels);
  bool has_a = false, has_b = false;
  char buf[512];
  const char *lists[2] = {r->producer, r->consumer};
  for (int l = 0; l < 2; l++)
    for (const char *q = next_name(lists[l], buf, sizeof buf); q; q = next_name(q, buf, sizeof buf)) {
      int k = name_kernel(v, buf);
      has_a = has_a || k == ka;
      has_b = has_b || k == kb;
    }
  return has_a && has_b && ka != kb;
}

/* Is i what kernel k writes to memory: the kernel's instruction, or its fused body's root (or an
 * element of a root tuple)? A decision about that value is the one about the boundary. */
static bool writes_output(const IrInstr *i, const PlanKernel *k) {
  if (!i) return false;
  if (i == k->instr) return true;
  const IrComputation *c = i->parent;
  if (!c || c->fusion_instr != k->instr || !c->root) return false;
  if (c->root == i) return true;
  if (c->root->op == IR_OP_TUPLE)
    for (int j = 0; j < c->root->noperands; j++)
      if (c->root->operands[j] == i) return true;
  return false;
}

bool explain_records_identical(const ExplainRecord *a, const ExplainRecord *b) { return identical(a, b); }

static void boundary_about(const ExplainStageView *v, const PlanKernel *from, const PlanKernel *to,
                           const IrInstr *about, ExplainBoundary *out);

void explain_boundary(const ExplainStageView *v, const PlanKernel *from, const PlanKernel *to, ExplainBoundary *out) {
  boundary_about(v, from, to, NULL, out);
}

/* explain_boundary, preferring a rejected producer->consumer decision whose producer is `about`
 * (the instruction the question named, when its value is what crosses). */
static void boundary_about(const ExplainStageView *v, const PlanKernel *from, const PlanKernel *to,
                           const IrInstr *about, ExplainBoundary *out) {
  memset(out, 0, sizeof *out);
  out->from = from;
  out->to = to;
  int fi = (int)(from - v->p->kernels), ti = (int)(to - v->p->kernels);
  for (int e = v->in_start[ti]; e < v->in_start[ti + 1]; e++)
    if (v->in_from[e] == fi) out->bytes += v->in_bytes[e];
  int best = -1, best_score = -1;
  for (int k = 0; k < v->nrecs; k++) {
    const RecKernels *rk = &v->recs[k];
    if (!rec_has(rk, fi) || !rec_has(rk, ti)) continue;
    out->ndecisions++;
    const ExplainRecord *r = rk->r;
    int score = r->accepted ? 0 : 1;
    if (!r->accepted && rk->prod == fi && strcmp(r->action, "sibling") != 0 && strcmp(r->action, "horizontal") != 0)
      score = writes_output(rk->prod_instr, from) ? (about && rk->prod_instr == about ? 4 : 3) : 2;
    if (score >= best_score) {
      best_score = score;
      best = k;
    }
  }
  if (best >= 0) {
    /* Of identical decisions (a later run re-judging the pair, clones), the first is the one to
     * read: the later ones repeat it. */
    const ExplainRecord *chosen = v->recs[best].r;
    out->decision = out->latest = chosen;
    for (int k = 0; k < v->nrecs; k++) {
      const RecKernels *rk = &v->recs[k];
      if (k != best && rec_has(rk, fi) && rec_has(rk, ti) && identical(rk->r, chosen)) {
        if (out->decision == chosen && k < best) out->decision = rk->r;
        out->same++;
      }
    }
    return;
  }
  char lf[160], lt[160];
  const char *labf = explain_kernel_label(from, lf, sizeof lf), *labt = explain_kernel_label(to, lt, sizeof lt);
  if (!v->any_fusion_pass) {
    if (v->max_stage <= 0)
      snprintf(out->none, sizeof out->none,
               "no pass has run: at stage 0 every compute instruction is its own kernel (step runs the passes)");
    else
      snprintf(out->none, sizeof out->none,
               "no fusion pass has run up to stage %d: every compute instruction is still its own kernel (step "
               "runs the next passes)",
               v->max_stage);
  } else if (from->kind == KERNEL_LIBRARY || to->kind == KERNEL_LIBRARY) {
    const PlanKernel *lib = from->kind == KERNEL_LIBRARY ? from : to;
    snprintf(out->none, sizeof out->none,
             "%s is a %s: a library kernel that fusion never opens, so no pass made the pair a candidate",
             lib->name, lib == from ? labf : labt);
  } else if (from->kind == KERNEL_CONTROL || to->kind == KERNEL_CONTROL) {
    const PlanKernel *c = from->kind == KERNEL_CONTROL ? from : to;
    snprintf(out->none, sizeof out->none,
             "%s is loop control run by the host: values enter and leave a loop through memory, so no pass made "
             "the pair a candidate",
             c->name);
  } else if (from->comp != to->comp) {
    snprintf(out->none, sizeof out->none, "they run in different computations (%s in %s, %s in %s)", from->name,
             from->comp ? from->comp->name : "?", to->name, to->comp ? to->comp->name : "?");
  } else {
    snprintf(out->none, sizeof out->none,
             "no pass up to stage %d recorded a decision about %s (%s) and %s (%s): none of them took the pair as "
             "a candidate",
             v->max_stage, from->name, labf, to->name, labt);
  }
}

/* ---------- splits ---------- */

/* Marks every kernel reachable from k0 along edges (forward: out-edges; backward: in-edges). */
static bool reach(const ExplainStageView *v, int k0, bool forward, char *mark) {
  int nk = v->p->nkernels;
  int *stack = fx_malloc(sizeof(int) * (size_t)(nk + 1));
  if (!stack) return false;
  memset(mark, 0, (size_t)nk);
  int sp = 0;
  stack[sp++] = k0;
  mark[k0] = 1;
  while (sp > 0) {
    int k = stack[--sp];
    int lo = forward ? v->out_start[k] : v->in_start[k], hi = forward ? v->out_start[k + 1] : v->in_start[k + 1];
    for (int e = lo; e < hi; e++) {
      int w = forward ? v->out_to[e] : v->in_from[e];
      if (!mark[w]) {
        mark[w] = 1;
        stack[sp++] = w;
      }
    }
  }
  fx_free(stack);
  return true;
}

/* "m" when the instruction is its own kernel, "e (in fusion.2)" otherwise; a name asked for that
 * a rewrite replaced says what it is now: "mx (now reduce.14, in fusion.3)". */
static void describe(const ExplainStageView *v, const char *asked, const IrInstr *i, const PlanKernel *k, char *buf,
                     size_t n) {
  const char *origin = explain_view_origin(v, i);
  bool own = !k || k->instr == i;
  if (strcmp(asked, i->name) != 0)
    snprintf(buf, n, "%s (now %s%s%s)", asked, i->name, own ? "" : ", in ", own ? "" : k->name);
  else if (origin)
    snprintf(buf, n, "%s (once %s%s%s)", i->name, origin, own ? "" : ", in ", own ? "" : k->name);
  else if (own) snprintf(buf, n, "%s", i->name);
  else snprintf(buf, n, "%s (in %s)", i->name, k->name);
}

/* A copy of i (a clone priority fusion or instruction fusion made) running in kernel k, or NULL. */
static const IrInstr *clone_in(const IrInstr *i, const PlanKernel *k) {
  size_t len = strlen(i->name);
  for (int j = 0; j < k->nmembers; j++) {
    const IrInstr *c = k->members[j];
    if (strncmp(c->name, i->name, len) == 0 && strncmp(c->name + len, ".clone", 6) == 0) return c;
  }
  return NULL;
}

/* The computation an instruction runs in, seen from outside fusions. */
static const IrComputation *outer_comp(const IrInstr *i) {
  const IrComputation *c = i->parent;
  for (int guard = 0; c && c->fusion_instr && guard < 16; guard++) c = c->fusion_instr->parent;
  return c;
}

const char *explain_no_kernel_reason(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER: return "a parameter: its buffer is an input, no kernel writes it";
  case IR_OP_CONSTANT: return "a constant: it lives in memory, no kernel computes it";
  case IR_OP_TUPLE: return "a tuple: a location in memory holding its elements, not a kernel";
  case IR_OP_GET_TUPLE_ELEMENT: return "get-tuple-element: a view of one element of a tuple, not a kernel";
  case IR_OP_BITCAST: return "a bitcast: the same buffer read with another shape";
  case IR_OP_RESHAPE:
  case IR_OP_TRANSPOSE: return "a bitcast here: the layout keeps the elements in place";
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL: return "control flow: its computations' kernels run in its place";
  default: return "it launches no kernel of its own";
  }
}

bool explain_split(const ExplainStageView *v, const char *a, const char *b, ExplainSplit *out, FxError *err) {
  memset(out, 0, sizeof *out);
  const IrInstr *ia = explain_view_follow(v, a), *ib = explain_view_follow(v, b);
  if (!ia || !ib)
    return fx_error_set(err, NULL, 0, 0, "%s is not at stage %d, and nothing it became is", !ia ? a : b, v->max_stage);
  out->a = ia;
  out->b = ib;
  int ka = kernel_of(v, ia), kb = kernel_of(v, ib);
  out->ka = ka >= 0 ? &v->p->kernels[ka] : NULL;
  out->kb = kb >= 0 ? &v->p->kernels[kb] : NULL;
  char da[300], db[300];
  describe(v, a, ia, out->ka, da, sizeof da);
  describe(v, b, ib, out->kb, db, sizeof db);
  if (ia == ib) {
    out->kind = EXPLAIN_SPLIT_SAME;
    snprintf(out->sentence, sizeof out->sentence, "%s and %s are the same instruction at stage %d", a, b,
             v->max_stage);
    return true;
  }
  const IrComputation *ca = outer_comp(ia), *cb = outer_comp(ib);
  if (ca != cb) {
    out->kind = EXPLAIN_SPLIT_ELSEWHERE;
    snprintf(out->sentence, sizeof out->sentence,
             "they are in different computations (%s in %s, %s in %s): fusion only joins instructions of one "
             "computation",
             ia->name, ca->name, ib->name, cb->name);
    return true;
  }
  if (ka < 0 || kb < 0) {
    out->kind = EXPLAIN_SPLIT_NO_KERNEL;
    const IrInstr *i = ka < 0 ? ia : ib;
    snprintf(out->sentence, sizeof out->sentence,
             "%s launches no kernel (%s), so no kernel boundary lies between %s and %s for a pass to decide", i->name,
             explain_no_kernel_reason(i), ia->name, ib->name);
    return true;
  }
  if (ka == kb) {
    out->kind = EXPLAIN_SPLIT_NONE;
    /* The decision that joined them: replay the accepted decisions in order, growing the names
     * each of the two went by (what it was fused with, what that became); the first decision
     * after which the two share a name brought them into one kernel. */
    out->joined = replay_join(v, a, b);
    const char *ca[MAX_FOLLOW], *cb[MAX_FOLLOW];
    int na = chain(v, a, ca), nb = chain(v, b, cb);
    for (int k = v->nrecs - 1; k >= 0 && !out->joined; k--) {
      const ExplainRecord *r = v->recs[k].r;
      if (!r->accepted || !r->result) continue;
      /* Names only one of them went by: a name both went by is already their common kernel. */
      bool ha = false, hb = false;
      for (int j = 0; j < na; j++) ha = ha || (!in_chain(ca[j], cb, nb) && explain_record_names(r, ca[j]));
      for (int j = 0; j < nb; j++) hb = hb || (!in_chain(cb[j], ca, na) && explain_record_names(r, cb[j]));
      if (ha && hb) out->joined = r;
    }
    /* Else the last one that brought either into the kernel (through what lay between them). */
    for (int pass = 0; pass < 2 && !out->joined; pass++)
      for (int k = v->nrecs - 1; k >= 0 && !out->joined; k--) {
        const ExplainRecord *r = v->recs[k].r;
        if (!r->accepted || !r->result || strcmp(r->result, out->ka->name) != 0) continue;
        /* First a record naming a or b themselves, then one naming what they had become. */
        for (int j = 0; j < (pass ? na : 1) && !out->joined; j++)
          if (strcmp(ca[j], out->ka->name) != 0 && (in_names(r->producer, ca[j]) || in_names(r->consumer, ca[j])))
            out->joined = r;
        for (int j = 0; j < (pass ? nb : 1) && !out->joined; j++)
          if (strcmp(cb[j], out->ka->name) != 0 && (in_names(r->producer, cb[j]) || in_names(r->consumer, cb[j])))
            out->joined = r;
      }
    snprintf(out->sentence, sizeof out->sentence, "%s and %s already run in one kernel, %s", ia->name, ib->name,
             out->ka->name);
    return true;
  }
  /* A copy of one already runs with the other: the pass duplicated it into that kernel. */
  const IrInstr *ca_ = clone_in(ia, out->kb), *cb_ = ca_ ? NULL : clone_in(ib, out->ka);
  if (ca_ || cb_) {
    out->kind = EXPLAIN_SPLIT_NONE;
    snprintf(out->sentence, sizeof out->sentence,
             "a copy of %s (%s) runs in %s, the kernel of %s: the fusion pass duplicated it there, so they are "
             "computed together; the original %s runs in %s",
             ca_ ? a : b, ca_ ? ca_->name : cb_->name, ca_ ? out->kb->name : out->ka->name, ca_ ? b : a,
             ca_ ? a : b, ca_ ? out->ka->name : out->kb->name);
    return true;
  }
  if (out->ka->comp != out->kb->comp) {
    out->kind = EXPLAIN_SPLIT_ELSEWHERE;
    snprintf(out->sentence, sizeof out->sentence,
             "%s runs in %s, %s in %s: fusion only joins kernels of one computation", da,
             out->ka->comp ? out->ka->comp->name : "?", db, out->kb->comp ? out->kb->comp->name : "?");
    return true;
  }
  int nk = v->p->nkernels;
  char *fwd = fx_malloc((size_t)nk + 1), *bwd = fx_malloc((size_t)nk + 1);
  bool ok = fwd && bwd && reach(v, ka, true, fwd);
  int src = ka, dst = kb;
  if (ok && !fwd[kb]) {
    ok = reach(v, kb, true, fwd);
    if (ok && fwd[ka]) {
      src = kb;
      dst = ka;
      out->b_first = true;
    } else {
      src = -1;
    }
  }
  if (ok && src >= 0) ok = reach(v, dst, false, bwd);
  if (!ok) {
    fx_free(fwd);
    fx_free(bwd);
    return fx_error_set(err, NULL, 0, 0, "out of memory");
  }
  if (src >= 0) {
    out->kind = EXPLAIN_SPLIT_PATH;
    for (int u = 0; u < nk; u++) {
      if (!fwd[u] || !bwd[u] || u == dst) continue;
      for (int e = v->out_start[u]; e < v->out_start[u + 1]; e++) {
        int w = v->out_to[e];
        if (!bwd[w]) continue;
        /* At the first boundary, the value of the instruction asked about is the one to explain. */
        const IrInstr *about = u == src ? (out->b_first ? ib : ia) : NULL;
        if (out->nboundaries < EXPLAIN_MAX_BOUNDARIES)
          boundary_about(v, &v->p->kernels[u], &v->p->kernels[w], about, &out->boundaries[out->nboundaries++]);
        out->total_boundaries++;
      }
    }
    const char *first = out->b_first ? db : da, *second = out->b_first ? da : db;
    if (out->total_boundaries == 1)
      snprintf(out->sentence, sizeof out->sentence,
               "%s feeds %s across one kernel boundary: %s writes its result to memory and %s reads it back",
               first, second, v->p->kernels[src].name, v->p->kernels[dst].name);
    else
      snprintf(out->sentence, sizeof out->sentence, "%s feeds %s across %d kernel boundaries (the paths from %s to %s)",
               first, second, out->total_boundaries, v->p->kernels[src].name, v->p->kernels[dst].name);
  } else {
    out->kind = EXPLAIN_SPLIT_SIBLINGS;
    ExplainBoundary bd;
    explain_boundary(v, out->ka, out->kb, &bd);
    if (bd.decision) {
      out->boundaries[0] = bd;
      out->nboundaries = out->total_boundaries = 1;
    }
    /* What both read: the same producing kernel, or the same parameter or constant. */
    size_t len = 0;
    int shown = 0;
    for (int q = 0; q < out->ka->ninputs && len < sizeof out->common; q++) {
      const IrInstr *x = out->ka->inputs[q];
      for (int r = 0; r < out->kb->ninputs; r++)
        if (out->kb->inputs[r] == x && shown < 4) {
          len += (size_t)snprintf(out->common + len, sizeof out->common - len, "%s%s", shown++ ? ", " : "", x->name);
          break;
        }
    }
    if (len >= sizeof out->common) out->common[sizeof out->common - 1] = 0;
    snprintf(out->sentence, sizeof out->sentence, "%s and %s are independent: neither kernel reads the other's result%s%s%s",
             da, db, out->common[0] ? "; both read " : "", out->common,
             out->common[0] ? ", and only sibling (multi-output) fusion could join them" : "");
  }
  fx_free(fwd);
  fx_free(bwd);
  return true;
}

/* ---------- grouping ---------- */

/* The names of a list with clone suffixes dropped ("dot.2.clone.89,y" -> "dot.2,y"). */
static void unclone(const char *s, char *buf, size_t n) {
  size_t o = 0;
  if (!s) {
    buf[0] = 0;
    return;
  }
  while (*s && o + 1 < n) {
    if (strncmp(s, ".clone", 6) == 0) {
      s += 6;
      while (*s == '.' && s[1] >= '0' && s[1] <= '9') {
        s++;
        while (*s >= '0' && *s <= '9') s++;
      }
      continue;
    }
    buf[o++] = *s++;
  }
  buf[o] = 0;
}

int explain_group_records(const ExplainRecord *const *recs, int n, int *group) {
  int ngroups = 0;
  char pa[512], ca[512], pb[512], cb[512];
  for (int k = 0; k < n; k++) {
    group[k] = k;
    unclone(recs[k]->producer, pa, sizeof pa);
    unclone(recs[k]->consumer, ca, sizeof ca);
    for (int j = 0; j < k; j++) {
      if (group[j] != j) continue;
      const ExplainRecord *r = recs[j];
      if (!identical(r, recs[k])) continue;
      unclone(r->producer, pb, sizeof pb);
      unclone(r->consumer, cb, sizeof cb);
      if (strcmp(pa, pb) == 0 && strcmp(ca, cb) == 0) {
        group[k] = j;
        break;
      }
    }
    if (group[k] == k) ngroups++;
  }
  return ngroups;
}

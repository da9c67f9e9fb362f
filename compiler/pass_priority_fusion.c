/* pass_priority_fusion.c — XLA's priority-fusion (GPU, since 2024): fuse producers in order of
 * how much time fusing them saves, by the cost model on the device profile.
 *
 * Every producer is fused into all of its users or into none. Its priority is
 *     us_unfused - us_fused
 * where us_unfused is the time of the producer's kernel plus its consumers' kernels, and us_fused
 * the time of the consumers with the producer inlined (they read the producer's inputs instead of
 * its output, and redo its arithmetic). Times come from plan_time_us(), the same estimate every
 * stage's kernel plan uses: max(memory time, compute time) + launch overhead. Producers are taken
 * from a max-heap; after a fusion its neighbours' priorities are recomputed.
 *
 * Unlike XLA, which stops at the first consumer that refuses, every consumer's verdict is
 * computed and reported, each with `us_fused` and `us_unfused`: a consumer the rules refuse gets
 * its own reason; consumers that would take the producer but cannot because another refuses get
 * `code_duplication` (the producer cannot go into all of its users); a fusion the cost model
 * predicts to be slower gets `slower_if_fused`. */
#include <string.h>

#include "fusion_build.h"
#include "fusion_rules.h"
#include "passes.h"
#include "plan.h"

typedef struct {
  double prio;
  int id;
  int version;
  IrInstr *instr;
} HeapItem;

typedef struct {
  HeapItem *h;
  int n, cap;
  int *version; /* per instruction id */
  int nversion;
} Queue;

static bool q_version_ok(Queue *q, int id) {
  if (id < q->nversion) return true;
  int nc = q->nversion ? q->nversion : 256;
  while (nc <= id) nc *= 2;
  int *nv = fx_realloc(q->version, sizeof(int) * (size_t)nc);
  if (!nv) return false;
  memset(nv + q->nversion, 0, sizeof(int) * (size_t)(nc - q->nversion));
  q->version = nv;
  q->nversion = nc;
  return true;
}

static bool q_push(Queue *q, IrInstr *i, double prio) {
  if (!q_version_ok(q, i->id)) return false;
  if (q->n == q->cap) {
    int nc = q->cap ? q->cap * 2 : 256;
    HeapItem *nh = fx_realloc(q->h, sizeof(HeapItem) * (size_t)nc);
    if (!nh) return false;
    q->h = nh;
    q->cap = nc;
  }
  int k = q->n++;
  q->h[k] = (HeapItem){prio, i->id, q->version[i->id], i};
  while (k > 0) {
    int p = (k - 1) / 2;
    if (q->h[p].prio >= q->h[k].prio) break;
    HeapItem t = q->h[p];
    q->h[p] = q->h[k];
    q->h[k] = t;
    k = p;
  }
  return true;
}

static bool q_pop(Queue *q, HeapItem *out) {
  while (q->n > 0) {
    *out = q->h[0];
    q->h[0] = q->h[--q->n];
    int k = 0;
    for (;;) {
      int l = 2 * k + 1, r = l + 1, b = k;
      if (l < q->n && q->h[l].prio > q->h[b].prio) b = l;
      if (r < q->n && q->h[r].prio > q->h[b].prio) b = r;
      if (b == k) break;
      HeapItem t = q->h[b];
      q->h[b] = q->h[k];
      q->h[k] = t;
      k = b;
    }
    if (out->id < q->nversion && out->version == q->version[out->id]) return true;
  }
  return false;
}

/* ---------- the cost model ---------- */

static bool launches(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_BITCAST: return false;
  default: return true;
  }
}

static double kernel_us(const PassContext *cx, const IrInstr *i) {
  if (!launches(i)) return 0;
  return fusion_kernel_us(cx->device, fusion_bytes_read(i) + fusion_bytes_written(i), fusion_flops(i));
}

/* Time of consumer c with producer p inlined. */
static double fused_us(const PassContext *cx, const IrInstr *p, const IrInstr *c) {
  int64_t bytes = fusion_bytes_written(c);
  for (int k = 0; k < c->noperands; k++) {
    const IrInstr *op = c->operands[k];
    bool dup = false;
    for (int j = 0; j < k; j++) dup = dup || c->operands[j] == op;
    if (dup || op == p) continue;
    bytes += plan_operand_bytes_read(c, k); /* as the kernel plan counts it (slices read a part) */
  }
  for (int k = 0; k < p->noperands; k++) {
    const IrInstr *op = p->operands[k];
    bool dup = false;
    for (int j = 0; j < k; j++) dup = dup || p->operands[j] == op;
    for (int j = 0; j < c->noperands; j++) dup = dup || c->operands[j] == op;
    if (!dup) bytes += plan_operand_bytes_read(p, k);
  }
  double times = 1, t;
  for (int k = 0; k < c->noperands; k++)
    if (c->operands[k] == p && fusion_reuses_operand(c, k, &t) && t > times) times = t;
  double flops = fusion_flops(c) + fusion_flops(p) * times;
  return fusion_kernel_us(cx->device, bytes, flops);
}

static bool is_candidate(const IrInstr *p) {
  switch (p->op) {
  case IR_OP_PARAMETER:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_TUPLE:
  case IR_OP_AFTER_ALL: return false;
  default: return p->nusers > 0;
  }
}

typedef struct {
  bool all_ok;
  double us_unfused, us_fused;
  int n;
  FusionVerdict *v; /* one per user */
  IrInstr **users;
} Eval;

static void eval_free(Eval *e) {
  fx_free(e->v);
  fx_free(e->users);
  memset(e, 0, sizeof *e);
}

/* Evaluates producer p against every user. Returns false on allocation failure. */
static bool evaluate(const PassContext *cx, IrInstr *p, Eval *e) {
  memset(e, 0, sizeof *e);
  e->n = p->nusers;
  e->v = fx_calloc((size_t)(e->n ? e->n : 1), sizeof(FusionVerdict));
  e->users = fx_malloc(sizeof(IrInstr *) * (size_t)(e->n ? e->n : 1));
  if (!e->v || !e->users) return false;
  memcpy(e->users, p->users, sizeof(IrInstr *) * (size_t)e->n);
  e->all_ok = e->n > 0;
  e->us_unfused = kernel_us(cx, p);
  for (int u = 0; u < e->n; u++) {
    IrInstr *c = e->users[u];
    e->us_unfused += kernel_us(cx, c);
    bool ok = fusion_should_fuse_priority(p, c, cx, &e->v[u]);
    if (!ok) e->all_ok = false;
    e->us_fused += ok ? fused_us(cx, p, c) : kernel_us(cx, c) + kernel_us(cx, p);
  }
  return true;
}

static void put_times(FusionVerdict *v, const Eval *e) {
  fusion_verdict_metric(v, "us_fused", e->us_fused);
  fusion_verdict_metric(v, "us_unfused", e->us_unfused);
}

/* Reports a refused producer: every consumer's reason. */
static void report_refusal(PassContext *cx, IrInstr *p, Eval *e) {
  const char *first_bad = NULL;
  for (int u = 0; u < e->n; u++)
    if (!e->v[u].ok && !first_bad) first_bad = e->users[u]->name;
  for (int u = 0; u < e->n; u++) {
    FusionVerdict *v = &e->v[u];
    if (v->ok) {
      if (first_bad) {
        fusion_refuse(v, FR_CODE_DUPLICATION,
                      "%s could go into %s, but not into %s, so it must be written out anyway: priority fusion "
                      "fuses a producer into all of its %d users or none",
                      p->name, fusion_consumer_label(e->users[u], p), first_bad, e->n);
      } else {
        fusion_refuse(v, FR_SLOWER_IF_FUSED,
                      "fusing %s into its %d %s would take %.2f us instead of %.2f us on %s: it will execute slower "
                      "if fused",
                      p->name, e->n, e->n == 1 ? "user" : "users", e->us_fused, e->us_unfused, cx->device->name);
      }
    }
    put_times(v, e);
    fusion_verdict_emit(cx, "fuse", p->name, fusion_consumer_label(e->users[u], p), NULL, v);
  }
}

static bool push_eval(PassContext *cx, Queue *q, IrInstr *p) {
  if (!q_version_ok(q, p->id)) return false;
  q->version[p->id]++;
  if (!is_candidate(p)) return true;
  /* The priority is computed from the cost model alone; the rules are checked when popped. */
  double unf = kernel_us(cx, p), fus = 0;
  for (int u = 0; u < p->nusers; u++) {
    unf += kernel_us(cx, p->users[u]);
    fus += fused_us(cx, p, p->users[u]);
  }
  return q_push(q, p, unf - fus);
}

static bool prio_computation(IrComputation *c, PassContext *cx, int *fused) {
  Queue q;
  memset(&q, 0, sizeof q);
  bool ok = true;
  for (int k = 0; k < c->ninstrs && ok; k++) ok = push_eval(cx, &q, c->instrs[k]);
  HeapItem it;
  while (ok && q_pop(&q, &it)) {
    IrInstr *p = it.instr;
    if (p->dead || p->parent != c || !is_candidate(p)) continue;
    Eval e;
    if (!evaluate(cx, p, &e)) {
      eval_free(&e);
      ok = false;
      break;
    }
    bool go = e.all_ok && e.us_fused <= e.us_unfused;
    if (!go) {
      report_refusal(cx, p, &e);
      eval_free(&e);
      continue;
    }
    char pname[256];
    snprintf(pname, sizeof pname, "%s", p->name);
    bool dup = e.n > 1;
    IrInstr *operands[64];
    int nop = p->noperands < 64 ? p->noperands : 64;
    if (nop) memcpy(operands, p->operands, sizeof(IrInstr *) * (size_t)nop);
    for (int u = 0; u < e.n && ok; u++) {
      char label[256];
      snprintf(label, sizeof label, "%s", fusion_consumer_label(e.users[u], p));
      IrInstr *f = fusion_fuse(e.users[u], p);
      if (!f) {
        ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory fusing %s", cx->pass, pname);
        break;
      }
      FusionVerdict *v = &e.v[u];
      fusion_verdict_ok(v, "fusing %s into its %d %s saves %.2f us on %s (%.2f us unfused, %.2f us fused)", pname, e.n,
                        e.n == 1 ? "user" : "users", e.us_unfused - e.us_fused, cx->device->name, e.us_unfused,
                        e.us_fused);
      put_times(v, &e);
      fusion_verdict_emit(cx, dup ? "duplicate" : "fuse", pname, label, f->name, v);
      (*fused)++;
      /* The new kernel's neighbours change priority. */
      if (ok) ok = push_eval(cx, &q, f);
      for (int o = 0; o < f->noperands && ok; o++) ok = push_eval(cx, &q, f->operands[o]);
    }
    for (int o = 0; o < nop && ok; o++)
      if (!operands[o]->dead && operands[o]->parent == c) ok = push_eval(cx, &q, operands[o]);
    eval_free(&e);
  }
  fx_free(q.h);
  fx_free(q.version);
  if (*fused) ir_computation_sort(c);
  if (!ok && !cx->err->set) fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  return ok;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (fusion_pass_disabled(cx, "priority-fusion")) return true;
  IrComputation *comps[1024];
  int n = fusion_control_computations(m, comps, 1024);
  int fused = 0;
  for (int k = 0; k < n; k++)
    if (!prio_computation(comps[k], cx, &fused)) return false;
  *changed = fused > 0;
  return true;
}

const Pass pass_priority_fusion = {
    "priority-fusion",
    "fuse producers into all their users in order of the time the cost model says fusing saves",
    run,
};

/* conformance.c — XLA's own GPU fusion unit tests as a conformance suite (issue 14, item 4).
 *
 * Each file tests/conformance/NAME.txt ports one of XLA's test files: per test, its HLO module, the
 * fxplain pass(es) that stand for the XLA pass the test runs, and the test's assertions written as
 * facts about the result (the format and the facts: README.md in this folder). This driver loads each
 * case with the HLO parser, runs the passes as `step` does (pass_run_stage: every stage verified),
 * checks the facts, and prints per file `passed/total` and each failing case with the first fact
 * that does not hold, plus fxplain's own last refusal about the instructions named in it.
 *
 * Usage: conformance [-v] [--at-least FILE=N ...] FILE.txt...
 * Exits 1 when a file has fewer passing cases than its floor (a ratchet: the floors in
 * tests.cmake are the counts reached), or when a file does not parse; 0 otherwise. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler/fusion/fusion.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/passes/passes.h"
#include "../../runtime/cuda/cuda_report.h"
#include "../../runtime/runtime.h"

/* ---------- the decision log: fxplain's refusals, to say why a fact fails ---------- */

typedef struct {
  char pass[48], producer[160], consumer[160], reason[40], detail[400];
  bool accepted;
} Rec;

typedef struct {
  Rec *r;
  int n, cap;
} Log;

static void put(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static void log_emit(void *ctx, const PassDecision *d) {
  Log *l = ctx;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    Rec *r = realloc(l->r, (size_t)cap * sizeof *r);
    if (!r) return;
    l->r = r;
    l->cap = cap;
  }
  Rec *r = &l->r[l->n++];
  put(r->pass, sizeof r->pass, d->pass);
  put(r->producer, sizeof r->producer, d->producer);
  put(r->consumer, sizeof r->consumer, d->consumer);
  put(r->reason, sizeof r->reason, d->reason);
  put(r->detail, sizeof r->detail, d->detail);
  r->accepted = d->accepted;
}

/* ---------- cases ---------- */

#define MAX_FACTS 48
#define MAX_PASSES 8

typedef struct {
  char name[160];
  int line;
  char passes[MAX_PASSES][48];
  int npasses;
  char device[32];
  char *facts[MAX_FACTS];
  int nfacts;
  char *skip;
  char *hlo;
  size_t hlo_len;
} Case;

static void case_free(Case *c) {
  for (int k = 0; k < c->nfacts; k++) free(c->facts[k]);
  free(c->skip);
  free(c->hlo);
  memset(c, 0, sizeof *c);
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  return s;
}

/* ---------- looking at the result ---------- */

/* Whether c is live: the entry, a computation some live instruction calls (while bodies etc.), or
 * the body of a live fusion. Fused bodies are checked through their fusion instruction. */
static bool comp_is_fused(const IrComputation *c) { return c->fusion_instr != NULL; }

static bool fused_comp_live(const IrComputation *c) {
  while (c->fusion_instr) {
    const IrInstr *f = c->fusion_instr;
    if (f->dead || ir_attr_comp(f, "calls") != c) return false;
    c = f->parent;
  }
  return true;
}

/* The kernel an instruction belongs to: the outermost instruction of an unfused computation. */
static const IrInstr *kernel_of(const IrInstr *i) {
  while (i->parent && i->parent->fusion_instr) i = i->parent->fusion_instr;
  return i;
}

/* Whether instruction name n is an instance of the original name a: a itself, or a clone of it
 * (`a.clone`, `a.clone.3`, `a.clone.clone`). */
static bool instance_of(const char *n, const char *a) {
  size_t la = strlen(a);
  if (strncmp(n, a, la) != 0) return false;
  return n[la] == 0 || strncmp(n + la, ".clone", 6) == 0;
}

#define MAX_INST 64
/* Every live instance of original name a (in unfused computations or live fused bodies). */
static int instances(const IrModule *m, const char *a, const IrInstr **out) {
  int n = 0;
  for (int c = 0; c < m->ncomps; c++) {
    const IrComputation *comp = m->comps[c];
    if (comp_is_fused(comp) && !fused_comp_live(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      const IrInstr *i = comp->instrs[k];
      if (i->dead || !instance_of(i->name, a)) continue;
      if (n < MAX_INST) out[n++] = i;
    }
  }
  return n;
}

static bool is_fusion(const IrInstr *i) { return i->op == IR_OP_FUSION; }

static const char *kind_of(const IrInstr *f) {
  const char *k = ir_attr_text(f, "kind");
  return k ? k : "?";
}

static int outputs_of(const IrInstr *f) {
  const IrComputation *b = ir_attr_comp(f, "calls");
  if (!b || !b->root) return 0;
  return b->root->op == IR_OP_TUPLE ? b->root->noperands : 1;
}

/* Instructions of a fused body other than parameters and the root tuple of a multi-output
 * fusion, counting nested fusions' bodies. */
static int members_of(const IrInstr *f) {
  const IrComputation *b = ir_attr_comp(f, "calls");
  if (!b) return 0;
  int n = 0;
  for (int k = 0; k < b->ninstrs; k++) {
    const IrInstr *i = b->instrs[k];
    if (i->dead || i->op == IR_OP_PARAMETER || (i == b->root && i->op == IR_OP_TUPLE)) continue;
    n += i->op == IR_OP_FUSION ? members_of(i) : 1;
  }
  return n;
}

/* XLA's fused_instruction_count: every instruction of the fused body, parameters included. */
static int fused_count(const IrInstr *f) {
  const IrComputation *b = ir_attr_comp(f, "calls");
  int n = 0;
  for (int k = 0; b && k < b->ninstrs; k++) n += !b->instrs[k]->dead;
  return n;
}

static int count_top(const IrModule *m, const char *op, bool entry_only) {
  int n = 0;
  for (int c = 0; c < m->ncomps; c++) {
    const IrComputation *comp = m->comps[c];
    if (comp_is_fused(comp) || (entry_only && comp != m->entry)) continue;
    for (int k = 0; k < comp->ninstrs; k++)
      if (!comp->instrs[k]->dead && strcmp(ir_op_name(comp->instrs[k]->op), op) == 0) n++;
  }
  return n;
}

/* fxplain's last refusal that names any of the given instructions (producer or consumer), or
 * NULL. */
static const Rec *last_refusal(const Log *l, char **names, int nnames) {
  for (int k = l->n - 1; k >= 0; k--) {
    const Rec *r = &l->r[k];
    if (r->accepted || !r->reason[0]) continue;
    for (int q = 0; q < nnames; q++)
      if (strstr(r->producer, names[q]) || strstr(r->consumer, names[q])) return r;
  }
  return NULL;
}

/* The case's HLO text: a name the parser gave a repeated instruction (`add` of the entry becomes
 * `add.13` when a reducer's root is `add` too) does not appear in it. */
static const char *g_hlo;

static bool name_in_text(const char *name) {
  size_t n = strlen(name);
  for (const char *q = g_hlo ? strstr(g_hlo, name) : NULL; q; q = strstr(q + 1, name)) {
    bool start = q == g_hlo || !(isalnum((unsigned char)q[-1]) || q[-1] == '.' || q[-1] == '_' || q[-1] == '-');
    char e = q[n];
    if (start && !(isalnum((unsigned char)e) || e == '.' || e == '_' || e == '-')) return true;
  }
  return false;
}

/* The instruction a predicate fact asks about, as XLA's test picks it (from the entry's root): the
 * entry's instruction of that name, or the one the parser renamed (NAME.N, not in the text), else
 * the first instance anywhere. NULL when there is none. */
static const IrInstr *subject(const IrModule *m, const char *name) {
  const IrComputation *e = m->entry;
  size_t n = strlen(name);
  for (int k = 0; e && k < e->ninstrs; k++)
    if (!e->instrs[k]->dead && strcmp(e->instrs[k]->name, name) == 0) return e->instrs[k];
  for (int k = 0; e && k < e->ninstrs; k++) {
    const char *x = e->instrs[k]->name;
    if (e->instrs[k]->dead || strncmp(x, name, n) != 0 || x[n] != '.' || !isdigit((unsigned char)x[n + 1])) continue;
    bool digits = true;
    for (const char *q = x + n + 1; *q; q++) digits = digits && isdigit((unsigned char)*q);
    if (digits && !name_in_text(x)) return e->instrs[k];
  }
  const IrInstr *any[MAX_INST];
  return instances(m, name, any) > 0 ? any[0] : NULL;
}

/* A subject written as XLA's test reaches it: `@root` (the entry's root) or `@param:N` (the
 * entry's parameter N), then steps `:N` (operand N) and `:fused` (a fusion's fused root); any
 * other word is a name (subject()). NULL when the path leads nowhere. */
static const IrInstr *resolve(const IrModule *m, const char *spec) {
  if (spec[0] != '@') return subject(m, spec);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec + 1);
  const IrInstr *x = NULL;
  char *save = NULL;
  for (char *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
    if (!x) {
      if (strcmp(t, "root") == 0) {
        x = m->entry ? m->entry->root : NULL;
      } else if (strcmp(t, "param") == 0) {
        char *k = strtok_r(NULL, ":", &save);
        int n = k ? atoi(k) : -1;
        x = m->entry && n >= 0 && n < m->entry->nparams ? m->entry->params[n] : NULL;
      }
      if (!x) return NULL;
    } else if (strcmp(t, "fused") == 0) {
      IrComputation *fc = ir_fused_computation(x);
      x = fc ? fc->root : NULL;
    } else if (isdigit((unsigned char)t[0])) {
      int k = atoi(t);
      x = k < x->noperands ? x->operands[k] : NULL;
    } else {
      return NULL;
    }
    if (!x) return NULL;
  }
  return x;
}

static bool yes(const char *w) { return strcmp(w, "yes") == 0; }

/* The case's module as loaded, before its passes (for same-numbers). */
static const IrModule *g_input;

/* XLA's ErrorSpec{abs, rel}: every element of got is within abs of want, or within rel of it (NaN where want is NaN)
 * relatively (tuples element by element). Fills why at the first that is not. */
static bool within(const RtTensor *got, const RtTensor *want, double abs_tol, double rel_tol, char *why, size_t nw) {
  if (got->type != want->type || got->ntuple != want->ntuple || got->count != want->count) {
    snprintf(why, nw, "the outputs differ in shape");
    return false;
  }
  if (got->type == IR_TUPLE) {
    for (int k = 0; k < got->ntuple; k++)
      if (!within(got->tuple[k], want->tuple[k], abs_tol, rel_tol, why, nw)) return false;
    return true;
  }
  for (int64_t k = 0; got->data && k < got->count; k++) {
    double g = rt_get_f(got, k), w = rt_get_f(want, k), e = fabs(g - w);
    if (g == w || (isnan(g) && isnan(w)) || e <= abs_tol || e <= rel_tol * fabs(w)) continue;
    snprintf(why, nw, "element %lld is %.9g, the unfused module's %.9g", (long long)k, g, w);
    return false;
  }
  return true;
}

/* Runs m on the interpreter with seeded random arguments. */
static RtTensor *run_interp(const IrModule *m, FxError *e) {
  const IrComputation *c = m->entry;
  RtTensor *args[1024];
  int n = c->nparams < 1024 ? c->nparams : 1024;
  for (int k = 0; k < n; k++) {
    args[k] = rt_tensor_for_shape(&c->params[k]->shape, e);
    if (!args[k]) {
      for (int j = 0; j < k; j++) rt_tensor_unref(args[j]);
      return NULL;
    }
    if (args[k]->data) rt_tensor_fill_random(args[k], 42, (uint64_t)k);
  }
  RtOptions o = {.seed = 42};
  RtTensor *out = NULL;
  if (!rt_interp_run(m, args, n, &o, &out, NULL, e)) out = NULL;
  for (int k = 0; k < n; k++) rt_tensor_unref(args[k]);
  return out;
}

/* What a predicate that takes a PassContext needs, with no decision log: default settings and
 * the default device. */
typedef struct {
  PassSettings st;
  FxError e;
  DecisionSink none;
} QuietPass;

static PassContext quiet_pass(QuietPass *q, const char *pass) {
  pass_settings_default(&q->st);
  fx_error_clear(&q->e);
  q->none = (DecisionSink){NULL, NULL};
  return (PassContext){&q->none, device_default(), &q->st, 1, pass, &q->e, NULL, false};
}

/* Checks one fact; on failure writes why into why[] and returns false. */
static bool check_fact(const IrModule *m, bool changed, const Log *log, const char *fact, char *why, size_t nw) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", fact);
  char *w[16];
  int nw_ = 0;
  for (char *t = strtok(buf, " \t"); t && nw_ < 16; t = strtok(NULL, " \t")) w[nw_++] = t;
  if (nw_ == 0) return true;
  const char *f = w[0];
  const IrInstr *ia[MAX_INST], *ib[MAX_INST];
#define NEED(k)                                                                     \
  do {                                                                              \
    if (nw_ < (k)) {                                                                \
      snprintf(why, nw, "malformed fact `%s`", fact);                               \
      return false;                                                                 \
    }                                                                               \
  } while (0)
#define INST(arr, name, n)                                                          \
  int n = instances(m, name, arr);                                                  \
  if (n == 0) {                                                                     \
    snprintf(why, nw, "`%s`: no instruction %s in the result", fact, name);         \
    return false;                                                                   \
  }
#define SUBJ(var, name)                                                             \
  const IrInstr *var = resolve(m, name);                                            \
  if (!var) {                                                                       \
    snprintf(why, nw, "`%s`: no instruction %s in the result", fact, name);         \
    return false;                                                                   \
  }
  if (strcmp(f, "changed") == 0 || strcmp(f, "unchanged") == 0) {
    bool want = f[0] == 'c';
    if (changed == want) return true;
    snprintf(why, nw, "expected the pass to %s the module, it %s", want ? "change" : "leave",
             changed ? "changed it" : "left it unchanged");
    return false;
  }
  if (strcmp(f, "fused") == 0) { /* fused A B ...: one fusion holds an instance of each */
    NEED(3);
    INST(ia, w[1], na);
    for (int x = 0; x < na; x++) {
      const IrInstr *k = kernel_of(ia[x]);
      if (!is_fusion(k)) continue;
      bool all = true;
      for (int q = 2; q < nw_ && all; q++) {
        int nb = instances(m, w[q], ib);
        bool found = false;
        for (int y = 0; y < nb && !found; y++) found = kernel_of(ib[y]) == k;
        all = found;
      }
      if (all) return true;
    }
    const Rec *r = last_refusal(log, w + 1, nw_ - 1);
    snprintf(why, nw, "`%s`: not in one fusion%s%s%s%s%s", fact, r ? "; fxplain: " : "", r ? r->reason : "",
             r ? " (" : "", r ? r->detail : "", r ? ")" : "");
    return false;
  }
  if (strcmp(f, "separate") == 0) { /* separate A B: no kernel holds both */
    NEED(3);
    INST(ia, w[1], na);
    INST(ib, w[2], nb);
    for (int x = 0; x < na; x++)
      for (int y = 0; y < nb; y++)
        if (kernel_of(ia[x]) == kernel_of(ib[y])) {
          snprintf(why, nw, "`%s`: both are in %s", fact, kernel_of(ia[x])->name);
          return false;
        }
    return true;
  }
  if (strcmp(f, "unfused") == 0 || strcmp(f, "in-fusion") == 0) {
    NEED(2);
    INST(ia, w[1], na);
    bool want_fused = f[0] == 'i';
    for (int x = 0; x < na; x++) {
      bool fz = kernel_of(ia[x]) != ia[x];
      if (fz != want_fused) {
        const Rec *r = want_fused ? last_refusal(log, w + 1, 1) : NULL;
        snprintf(why, nw, "`%s`: %s %s%s%s%s%s%s", fact, ia[x]->name, fz ? "is in " : "is not fused",
                 fz ? kernel_of(ia[x])->name : "", r ? "; fxplain: " : "", r ? r->reason : "", r ? " " : "",
                 r ? r->detail : "");
        return false;
      }
    }
    return true;
  }
  if (strcmp(f, "absent") == 0 || strcmp(f, "present") == 0) {
    NEED(2);
    int n = instances(m, w[1], ia);
    if ((n == 0) == (f[0] == 'a')) return true;
    snprintf(why, nw, "`%s`: %d instance(s)", fact, n);
    return false;
  }
  if (strcmp(f, "copies") == 0) {
    NEED(3);
    int n = instances(m, w[1], ia);
    if (n == atoi(w[2])) return true;
    snprintf(why, nw, "`%s`: %d instance(s)", fact, n);
    return false;
  }
  if (strcmp(f, "kind") == 0 || strcmp(f, "outputs") == 0 || strcmp(f, "members") == 0 ||
      strcmp(f, "operands") == 0 || strcmp(f, "instructions") == 0) { /* of the fusion holding A (every instance) */
    NEED(3);
    INST(ia, w[1], na);
    for (int x = 0; x < na; x++) {
      const IrInstr *k = kernel_of(ia[x]);
      if (!is_fusion(k)) {
        snprintf(why, nw, "`%s`: %s is not in a fusion", fact, ia[x]->name);
        return false;
      }
      char got[64];
      if (f[0] == 'k') snprintf(got, sizeof got, "%s", kind_of(k));
      else if (f[0] == 'o' && f[1] == 'u') snprintf(got, sizeof got, "%d", outputs_of(k));
      else if (f[0] == 'o') snprintf(got, sizeof got, "%d", k->noperands);
      else if (f[0] == 'i') snprintf(got, sizeof got, "%d", fused_count(k));
      else snprintf(got, sizeof got, "%d", members_of(k));
      if (strcmp(got, w[2]) != 0) {
        snprintf(why, nw, "`%s`: %s's fusion %s has %s %s", fact, ia[x]->name, k->name, f, got);
        return false;
      }
    }
    return true;
  }
  if (strcmp(f, "mofs") == 0) { /* multi-output fusions in unfused computations */
    NEED(2);
    int n = 0;
    for (int c = 0; c < m->ncomps; c++) {
      const IrComputation *comp = m->comps[c];
      if (comp_is_fused(comp)) continue;
      for (int k = 0; k < comp->ninstrs; k++)
        n += !comp->instrs[k]->dead && is_fusion(comp->instrs[k]) && outputs_of(comp->instrs[k]) > 1 &&
             ir_attr_comp(comp->instrs[k], "calls")->root->op == IR_OP_TUPLE;
    }
    if (n == atoi(w[1])) return true;
    snprintf(why, nw, "`%s`: %d multi-output fusions", fact, n);
    return false;
  }
  if (strcmp(f, "fusions") == 0) { /* fusion instructions in unfused computations */
    NEED(2);
    int n = count_top(m, "fusion", false);
    if (n == atoi(w[1])) return true;
    snprintf(why, nw, "`%s`: %d fusions", fact, n);
    return false;
  }
  if (strcmp(f, "count") == 0) { /* count OP N: top-level OPs in the entry */
    NEED(3);
    int n = count_top(m, w[1], true);
    if (n == atoi(w[2])) return true;
    snprintf(why, nw, "`%s`: %d", fact, n);
    return false;
  }
  if (strcmp(f, "root-op") == 0 || strcmp(f, "root-kind") == 0) {
    NEED(2);
    const IrInstr *r = m->entry ? m->entry->root : NULL;
    if (!r) {
      snprintf(why, nw, "`%s`: no entry root", fact);
      return false;
    }
    const char *got = f[5] == 'o' ? ir_op_name(r->op) : is_fusion(r) ? kind_of(r) : "(not a fusion)";
    if (strcmp(got, w[1]) == 0) return true;
    snprintf(why, nw, "`%s`: the root %s is %s", fact, r->name, got);
    return false;
  }
  if (strcmp(f, "expensive") == 0) { /* expensive A yes|no: fxplain's IsExpensive for A */
    NEED(3);
    SUBJ(A, w[1]);
    PassSettings st;
    pass_settings_default(&st);
    bool want = strcmp(w[2], "yes") == 0, got = fusion_is_expensive(A, &st);
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain counts %s as %s", fact, w[1], got ? "expensive" : "cheap");
    return false;
  }
  if (strcmp(f, "shared-memory") == 0) { /* shared-memory A N: bytes per block of A's kernel */
    NEED(3);
    SUBJ(A, w[1]);
    long long got = (long long)fusion_shared_memory(kernel_of(A));
    if (got == atoll(w[2])) return true;
    snprintf(why, nw, "`%s`: fxplain counts %lld bytes", fact, got);
    return false;
  }
  if (strcmp(f, "input-fusible") == 0) { /* input-fusible A yes|no: fxplain's IsInputFusible */
    NEED(3);
    SUBJ(A, w[1]);
    bool want = strcmp(w[2], "yes") == 0, got = fusion_is_input_fusible(A);
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain says %s", fact, got ? "yes" : "no");
    return false;
  }
  if (strcmp(f, "layout-friendly") == 0) { /* layout-friendly P C yes|no: LayoutsAreReduceInputFusionFriendly (2021) */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    bool want = strcmp(w[3], "yes") == 0, got = fusion_layouts_reduce_friendly(A);
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain says %s", fact, got ? "yes" : "no");
    return false;
  }
  if (strcmp(f, "mof-root-2021") == 0) { /* mof-root-2021 A yes|no: IsFusibleAsMultiOutputFusionRoot (2021) */
    NEED(3);
    SUBJ(A, w[1]);
    PassSettings st;
    pass_settings_default(&st);
    bool want = strcmp(w[2], "yes") == 0, got = fusion_mof_root_2021(A, &st);
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain says %s", fact, got ? "yes" : "no");
    return false;
  }
  if (strcmp(f, "mof-shapes-2021") == 0 || strcmp(f, "mof-producer-consumer-2021") == 0) {
    /* mof-shapes-2021 A B yes|no: ShapesCompatibleForMultiOutputFusion (2021);
     * mof-producer-consumer-2021 P C yes|no: IsProducerConsumerMultiOutputFusible (2021) */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    QuietPass qp;
    PassContext cx = quiet_pass(&qp, "multi_output_fusion");
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    bool got = f[4] == 's' ? fusion_mof_shapes_compatible_2021(A, B, &v)
                           : fusion_mof_producer_consumer_2021(A, B, &cx, &v);
    bool want = strcmp(w[3], "yes") == 0;
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain says %s%s%s", fact, got ? "yes" : "no: ", got ? "" : v.reason ? v.reason : "",
             got ? "" : "");
    return false;
  }
  if (strcmp(f, "nested-loop") == 0) { /* nested-loop P C yes|no: fxplain's CreatesNestedLoop (2021) */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    bool want = strcmp(w[3], "yes") == 0, got = fusion_creates_nested_loop(A, B, NULL, NULL);
    if (want == got) return true;
    snprintf(why, nw, "`%s`: fxplain says %s", fact, got ? "yes" : "no");
    return false;
  }
  if (strcmp(f, "should-fuse") == 0 || strcmp(f, "refusal") == 0 || strcmp(f, "no-refusal") == 0) {
    /* should-fuse P C yes|no: fxplain's IsProducerConsumerFusible (2021) on P into C;
     * refusal P C CODE / no-refusal P C CODE: whether that verdict refuses with CODE. */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    QuietPass qp;
    PassContext cx = quiet_pass(&qp, "instruction-fusion");
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    bool ok = fusion_producer_consumer_fusible(A, B, &cx, &v);
    const char *code = ok ? "" : v.reason ? v.reason : "";
    bool holds = f[0] == 's' ? ok == (strcmp(w[3], "yes") == 0)
                 : f[0] == 'r' ? strcmp(code, w[3]) == 0
                               : strcmp(code, w[3]) != 0;
    if (holds) return true;
    snprintf(why, nw, "`%s`: fxplain %s%s%s", fact, ok ? "fuses" : "refuses: ", code, ok ? "" : v.detail);
    if (!ok) snprintf(why, nw, "`%s`: fxplain refuses, %s (%s)", fact, code, v.detail);
    return false;
  }
  if (strcmp(f, "max-operands-outputs") == 0) { /* operands + outputs (XLA's SubshapeCount) */
    NEED(2);
    const IrComputation *e = m->entry;
    for (int k = 0; e && k < e->ninstrs; k++) {
      const IrInstr *i = e->instrs[k];
      int outs = i->shape.type == IR_TUPLE ? i->shape.ntuple + 1 : 1;
      if (!i->dead && i->noperands + outs > atoi(w[1])) {
        snprintf(why, nw, "`%s`: %s has %d operands and %d outputs", fact, i->name, i->noperands, outs);
        return false;
      }
    }
    return true;
  }
  if (strcmp(f, "max-operands") == 0) { /* every top-level instruction of the entry */
    NEED(2);
    const IrComputation *e = m->entry;
    for (int k = 0; e && k < e->ninstrs; k++)
      if (!e->instrs[k]->dead && e->instrs[k]->noperands > atoi(w[1])) {
        snprintf(why, nw, "`%s`: %s has %d operands", fact, e->instrs[k]->name, e->instrs[k]->noperands);
        return false;
      }
    return true;
  }
  if (strcmp(f, "root-operands-at-most") == 0) {
    NEED(2);
    const IrInstr *r = m->entry ? m->entry->root : NULL;
    if (r && r->noperands <= atoi(w[1])) return true;
    snprintf(why, nw, "`%s`: the root has %d operands", fact, r ? r->noperands : -1);
    return false;
  }
  if (strcmp(f, "op") == 0) { /* op A OPCODE: what the test asserts it picked (ASSERT_EQ opcode) */
    NEED(3);
    SUBJ(A, w[1]);
    if (strcmp(ir_op_name(A->op), w[2]) == 0) return true;
    snprintf(why, nw, "`%s`: %s is a %s", fact, A->name, ir_op_name(A->op));
    return false;
  }
  if (strcmp(f, "kernel-source") == 0) { /* kernel-source A TEXT...: the CUDA fxplain emits for A's kernel holds TEXT */
    NEED(3);
    SUBJ(A, w[1]);
    const char *text = strstr(fact, w[2]); /* the rest of the line, spaces kept */
    KernelReport r;
    FxError e;
    fx_error_clear(&e);
    if (!cuda_report_source(m, 0, kernel_of(A)->name, &r, &e)) {
      snprintf(why, nw, "`%s`: %s", fact, e.msg);
      return false;
    }
    bool found = false;
    for (int k = 0; k < r.nrows && !found; k++) found = r.rows[k].source && strstr(r.rows[k].source, text);
    kernel_report_free(&r);
    if (found) return true;
    snprintf(why, nw, "`%s`: not in the kernel's source (kernels --source %s)", fact, kernel_of(A)->name);
    return false;
  }
  if (strcmp(f, "same-numbers") == 0) { /* same-numbers ABS REL: RunAndCompare(module, ErrorSpec{ABS, REL}) */
    NEED(3);
    FxError e;
    fx_error_clear(&e);
    RtTensor *want = g_input ? run_interp(g_input, &e) : NULL, *got = want ? run_interp(m, &e) : NULL;
    bool ok = want && got && within(got, want, atof(w[1]), atof(w[2]), why, nw);
    if (!want || !got) snprintf(why, nw, "`%s`: the interpreter fails: %s", fact, e.msg);
    if (want) rt_tensor_unref(want);
    if (got) rt_tensor_unref(got);
    return ok;
  }
  if (strcmp(f, "distinct") == 0) { /* distinct A B: two instructions (EXPECT_NE) */
    NEED(3);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    if (A != B) return true;
    snprintf(why, nw, "`%s`: both are %s", fact, A->name);
    return false;
  }
  if (strcmp(f, "loop-unroll") == 0) { /* loop-unroll A DEVICE N: ComputeLoopFusionConfig(analysis of A, A's shape) */
    NEED(4);
    SUBJ(A, w[1]);
    /* XLA's TestGpuDeviceInfo::B200SXMDeviceInfo (148 SMs of 2048 threads, compute capability
     * 10.0) and the test's B200WithCUDA129 (the same, compiled with CUDA 12.9); fxplain's
     * profiles have no Blackwell GPU. */
    static const DeviceProfile b200 = {.name = "b200", .is_gpu = true, .sm_count = 148, .max_threads_per_sm = 2048,
                                       .arch = "sm_100"};
    const DeviceProfile *d = strncmp(w[2], "b200", 4) == 0 ? &b200 : device_lookup(w[2]);
    int cuda = strcmp(w[2], "b200-cuda12.9") == 0 ? 12090 : 0;
    if (!d) {
      snprintf(why, nw, "`%s`: no device %s", fact, w[2]);
      return false;
    }
    int64_t e = ir_shape_is_array(&A->shape) ? ir_shape_elements(&A->shape) : 1;
    int got = fusion_loop_unroll(d, cuda, A, NULL, e);
    if (got == atoi(w[3])) return true;
    snprintf(why, nw, "`%s`: fxplain unrolls %d times", fact, got);
    return false;
  }
  /* Today's gpu_fusible.cc predicates (gpu_fusible.h). */
  if (strcmp(f, "physically-transposing") == 0 || strcmp(f, "transposes-minor") == 0 || strcmp(f, "mof-root") == 0 ||
      strcmp(f, "mof-producer") == 0 || strcmp(f, "may-cause-perf-drop") == 0) { /* FACT A yes|no */
    NEED(3);
    SUBJ(A, w[1]);
    PassSettings st;
    pass_settings_default(&st);
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    bool got = f[0] == 'p'   ? fusion_physically_transposing(A)
               : f[0] == 't' ? fusion_transposes_minor_dimension(A)
               : strcmp(f, "mof-root") == 0 ? fusion_mof_root(A, &st)
               : strcmp(f, "mof-producer") == 0 ? fusion_producer_mof_fusible(A, &st, &v)
                                                : fusion_may_cause_perf_drop_if_unrolled(A);
    if (got == yes(w[2])) return true;
    snprintf(why, nw, "`%s`: fxplain says %s%s%s", fact, got ? "yes" : "no", v.reason ? ": " : "",
             v.reason ? v.reason : "");
    return false;
  }
  if (strcmp(f, "heroes-compatible") == 0 || strcmp(f, "mof-shapes") == 0) { /* FACT A B yes|no */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    bool got = f[0] == 'h' ? fusion_heroes_compatible(A, B, &v) : fusion_mof_shapes_compatible(A, B, &v);
    if (got == yes(w[3])) return true;
    snprintf(why, nw, "`%s`: fxplain says %s%s%s", fact, got ? "yes" : "no", v.reason ? ": " : "",
             v.reason ? v.reason : "");
    return false;
  }
  if (strcmp(f, "choose-kind") == 0) { /* choose-kind P C KIND: ChooseFusionKind */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    PassSettings st;
    pass_settings_default(&st);
    const char *got = fusion_choose_kind(A, B, &st);
    if (strcmp(got, w[3]) == 0) return true;
    snprintf(why, nw, "`%s`: fxplain chooses %s", fact, got);
    return false;
  }
  if (strcmp(f, "only-non-root-user") == 0) { /* only-non-root-user A C yes|no: IsConsumerTheOnlyNonRootUser */
    NEED(4);
    SUBJ(A, w[1]);
    SUBJ(B, w[2]);
    bool got = fusion_consumer_only_non_root_user(A, B);
    if (got == yes(w[3])) return true;
    snprintf(why, nw, "`%s`: fxplain says %s", fact, got ? "yes" : "no");
    return false;
  }
  if (strcmp(f, "fusion-roots") == 0) { /* fusion-roots A R...: GetFusionRoots of what A calls, in order */
    NEED(2);
    SUBJ(A, w[1]);
    IrComputation *called[4];
    if (ir_called_computations(A, called, 4) != 1) {
      snprintf(why, nw, "`%s`: %s does not call one computation", fact, A->name);
      return false;
    }
    const IrInstr *roots[64];
    int n = fusion_roots(called[0], roots, 64);
    bool same = n == nw_ - 2;
    for (int k = 0; same && k < n; k++) {
      const IrInstr *want = resolve(m, w[k + 2]);
      same = want == roots[k];
    }
    if (same) return true;
    int o = snprintf(why, nw, "`%s`: fxplain finds", fact);
    for (int k = 0; k < n && o > 0 && (size_t)o < nw; k++) o += snprintf(why + o, nw - (size_t)o, " %s", roots[k]->name);
    return false;
  }
  if (strcmp(f, "fusible-computations") == 0) { /* fusible-computations C...: GetFusibleComputations, any order */
    IrComputation *comps[256];
    int n = fusion_fusible_computations(m, comps, 256);
    bool same = n == nw_ - 1;
    for (int k = 1; same && k < nw_; k++) {
      bool found = false;
      for (int j = 0; j < n; j++) found = found || strcmp(comps[j]->name, w[k]) == 0;
      same = found;
    }
    if (same) return true;
    int o = snprintf(why, nw, "`%s`: fxplain finds", fact);
    for (int k = 0; k < n && o > 0 && (size_t)o < nw; k++) o += snprintf(why + o, nw - (size_t)o, " %s", comps[k]->name);
    return false;
  }
  snprintf(why, nw, "unknown fact `%s`", fact);
  return false;
#undef NEED
#undef INST
#undef SUBJ
}

static const Pass *find_pass(const char *name) {
  if (strcmp(name, "instruction-fusion") == 0) return &pass_instruction_fusion;
  if (strcmp(name, "instruction-fusion-dup") == 0) return &pass_instruction_fusion_dup;
  if (strcmp(name, "multi-output-fusion") == 0) return &pass_multi_output_fusion;            /* 2021 */
  if (strcmp(name, "multi-output-fusion-today") == 0) return &pass_multi_output_fusion_current; /* today */
  return pass_lookup(name);
}

/* Runs one case; returns 1 passed, 0 failed (why filled), -1 skipped. */
static int run_case(const char *file, const Case *c, bool verbose, char *why, size_t nw) {
  if (c->skip) return -1;
  if (c->nfacts == 0) {
    snprintf(why, nw, "no facts");
    return 0;
  }
  FxError err;
  fx_error_clear(&err);
  /* A module without its `HloModule NAME` line loads as in XLA's parser. */
  const char *text = c->hlo ? c->hlo : "";
  size_t len = c->hlo_len;
  /* XLA's tests parse with HloTestBase's verifier, which allows mixed precision. */
  IrVerifyOptions vopts = {.allow_mixed_precision = true};
  IrModule *m = hlo_parse_with(text, len, file, &vopts, &err);
  g_hlo = c->hlo;
  if (!m) {
    snprintf(why, nw, "the HLO does not load: %s (its line %d)", err.msg, err.line);
    return 0;
  }
  const DeviceProfile *dev = c->device[0] ? device_lookup(c->device) : device_default();
  if (!dev) {
    snprintf(why, nw, "no device profile %s", c->device);
    ir_module_free(m);
    return 0;
  }
  Log log = {0};
  DecisionSink sink = {log_emit, &log};
  PassSettings st;
  pass_settings_default(&st);
  IrModule *cur = m;
  bool changed_any = false;
  int ok = 1;
  for (int k = 0; k < c->npasses && ok; k++) {
    if (strcmp(c->passes[k], "none") == 0) continue; /* a predicate test: facts about the input */
    const Pass *p = find_pass(c->passes[k]);
    if (!p) {
      snprintf(why, nw, "no pass named %s", c->passes[k]);
      ok = 0;
      break;
    }
    PassContext cx = {&sink, dev, &st, k + 1, p->name, &err, NULL, false};
    IrModule *out = NULL;
    bool changed = false;
    if (!pass_run_stage(p, cur, &cx, &out, &changed)) {
      snprintf(why, nw, "%s failed: %s", p->name, err.msg);
      ok = 0;
      break;
    }
    changed_any |= changed;
    if (out) {
      if (cur != m) ir_module_free(cur);
      cur = out;
    }
  }
  if (verbose && ok) {
    printf("---- %s: result\n", c->name);
    hlo_print(stdout, cur, &err);
    for (int k = 0; k < log.n; k++)
      printf("  %s %s %s -> %s %s %s\n", log.r[k].pass, log.r[k].accepted ? "yes" : "no ", log.r[k].producer,
             log.r[k].consumer, log.r[k].reason, log.r[k].detail);
  }
  g_input = m;
  for (int k = 0; k < c->nfacts && ok; k++)
    if (!check_fact(cur, changed_any, &log, c->facts[k], why, nw)) ok = 0;
  g_input = NULL;
  if (cur != m) ir_module_free(cur);
  ir_module_free(m);
  free(log.r);
  return ok;
}

/* Reads FILE and runs every case; returns false when the file does not parse. */
static bool run_file(const char *path, bool verbose, int *passed, int *total, int *skipped) {
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("%s: cannot open\n", path);
    return false;
  }
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char line[4096];
  int lineno = 0;
  Case c = {0};
  bool in_case = false, in_hlo = false, good = true;
  size_t cap = 0;
  *passed = *total = *skipped = 0;
  char fails[64][600];
  int nfails = 0;
  for (;;) {
    bool eof = !fgets(line, sizeof line, f);
    if (!eof) lineno++;
    if (in_hlo && !eof) {
      char tmp[sizeof line];
      memcpy(tmp, line, sizeof line);
      if (strcmp(trim(tmp), "end") == 0) {
        in_hlo = false;
        continue;
      }
      size_t l = strlen(line);
      while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
      if (c.hlo_len + l + 2 > cap) {
        cap = (c.hlo_len + l + 2) * 2;
        c.hlo = realloc(c.hlo, cap);
      }
      memcpy(c.hlo + c.hlo_len, line, l);
      c.hlo_len += l;
      c.hlo[c.hlo_len++] = '\n';
      c.hlo[c.hlo_len] = 0;
      continue;
    }
    char *t = eof ? "" : trim(line);
    bool starts = strncmp(t, "case ", 5) == 0;
    if ((starts || eof) && in_case) {
      char why[1024] = "";
      int r = run_case(base, &c, verbose, why, sizeof why);
      if (r < 0) (*skipped)++;
      else {
        (*total)++;
        if (r) (*passed)++;
        else if (nfails < 64) snprintf(fails[nfails++], sizeof fails[0], "%s (line %d): %.500s", c.name, c.line, why);
      }
      case_free(&c);
      cap = 0;
      in_case = false;
    }
    if (eof) break;
    if (!*t || *t == '#') continue;
    if (starts) {
      in_case = true;
      snprintf(c.name, sizeof c.name, "%s", trim(t + 5));
      c.line = lineno;
    } else if (!in_case) {
      printf("%s:%d: text outside a case\n", path, lineno);
      good = false;
    } else if (strncmp(t, "pass ", 5) == 0) {
      char *save;
      for (char *p = strtok_r(t + 5, " ", &save); p && c.npasses < MAX_PASSES; p = strtok_r(NULL, " ", &save))
        snprintf(c.passes[c.npasses++], sizeof c.passes[0], "%s", p);
    } else if (strncmp(t, "device ", 7) == 0) {
      snprintf(c.device, sizeof c.device, "%s", trim(t + 7));
    } else if (strncmp(t, "expect ", 7) == 0) {
      if (c.nfacts < MAX_FACTS) c.facts[c.nfacts++] = strdup(trim(t + 7));
    } else if (strncmp(t, "skip ", 5) == 0) {
      free(c.skip);
      c.skip = strdup(trim(t + 5));
    } else if (strcmp(t, "hlo") == 0) {
      in_hlo = true;
    } else {
      printf("%s:%d: unknown line: %s\n", path, lineno, t);
      good = false;
    }
  }
  fclose(f);
  printf("%-28s %3d/%-3d passed (%d not ported)\n", base, *passed, *total, *skipped);
  for (int k = 0; k < nfails; k++) printf("  FAIL %s\n", fails[k]);
  return good;
}

int main(int argc, char **argv) {
  bool verbose = false;
  const char *floors[64];
  int nfloors = 0, bad = 0;
  int files_start = 1;
  for (; files_start < argc; files_start++) {
    if (strcmp(argv[files_start], "-v") == 0) verbose = true;
    else if (strcmp(argv[files_start], "--at-least") == 0 && files_start + 1 < argc && nfloors < 64)
      floors[nfloors++] = argv[++files_start];
    else break;
  }
  if (files_start >= argc) {
    fprintf(stderr, "usage: conformance [-v] [--at-least FILE=N ...] FILE.txt...\n");
    return 2;
  }
  int all_p = 0, all_t = 0;
  bool floor_seen[64] = {false};
  for (int k = files_start; k < argc; k++) {
    int p, t, s;
    if (!run_file(argv[k], verbose, &p, &t, &s)) bad++;
    all_p += p;
    all_t += t;
    const char *base = strrchr(argv[k], '/') ? strrchr(argv[k], '/') + 1 : argv[k];
    for (int q = 0; q < nfloors; q++) {
      const char *eq = strchr(floors[q], '=');
      if (!eq || strncmp(floors[q], base, (size_t)(eq - floors[q])) != 0 || base[eq - floors[q]] != 0) continue;
      floor_seen[q] = true;
      if (p < atoi(eq + 1)) {
        printf("REGRESSION %s: %d passed, the floor is %d\n", base, p, atoi(eq + 1));
        bad++;
      }
    }
  }
  for (int q = 0; q < nfloors; q++)
    if (!floor_seen[q]) {
      printf("REGRESSION %s: a floor for a file that was not run\n", floors[q]);
      bad++;
    }
  printf("total %d/%d passed\n", all_p, all_t);
  return bad ? 1 : 0;
}

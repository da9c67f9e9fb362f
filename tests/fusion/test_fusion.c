/* test_fusion.c — the fusion rules and passes: every reason code has a small module that triggers
 * it and a near-miss that fuses; each test asserts the producer/consumer pair, the code and the
 * numbers in the decision. Also the graph edits (fusion_build.c): wrap, fuse, multi-output,
 * siblings, unfuse, and the passes' results on small graphs. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/fusion/fusion.h"
#include "../../compiler/fusion/reachability.h"
#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"
#include "../../compiler/fusion/mof_steps.h"
#include "../../compiler/passes/passes.h"
#include "../../compiler/plan/plan.h"
#include "../../runtime/runtime.h"

/* ---------- a decision sink that keeps copies ---------- */

typedef struct {
  char pass[64], action[32], producer[128], consumer[128], reason[40], detail[600], suggestion[300], result[64];
  bool accepted;
  int nmetrics;
  char mkey[PASS_MAX_METRICS][32];
  double mval[PASS_MAX_METRICS];
} Rec;

typedef struct {
  Rec r[512];
  int n;
  int total; /* every decision, kept or not (the last 512 are not kept past the first 512) */
} Log;

static void copy(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static void log_emit(void *ctx, const PassDecision *d) {
  Log *l = ctx;
  l->total++;
  if (l->n >= 512) l->n = 511; /* full: the newest takes the last place */
  Rec *r = &l->r[l->n++];
  copy(r->pass, sizeof r->pass, d->pass);
  copy(r->action, sizeof r->action, d->action);
  copy(r->producer, sizeof r->producer, d->producer);
  copy(r->consumer, sizeof r->consumer, d->consumer);
  copy(r->reason, sizeof r->reason, d->reason);
  copy(r->detail, sizeof r->detail, d->detail);
  copy(r->suggestion, sizeof r->suggestion, d->suggestion);
  copy(r->result, sizeof r->result, d->result);
  r->accepted = d->accepted;
  r->nmetrics = d->nmetrics;
  for (int k = 0; k < d->nmetrics; k++) {
    copy(r->mkey[k], sizeof r->mkey[k], d->metrics[k].key);
    r->mval[k] = d->metrics[k].value;
  }
}

/* The last decision about the pair (producer, consumer); consumer NULL matches any. */
static const Rec *find(const Log *l, const char *producer, const char *consumer) {
  for (int k = l->n - 1; k >= 0; k--)
    if (strcmp(l->r[k].producer, producer) == 0 && (!consumer || strcmp(l->r[k].consumer, consumer) == 0))
      return &l->r[k];
  return NULL;
}

static double metric(const Rec *r, const char *key) {
  if (!r) return -1;
  for (int k = 0; k < r->nmetrics; k++)
    if (strcmp(r->mkey[k], key) == 0) return r->mval[k];
  return -1;
}

/* ---------- a small module builder ---------- */

typedef struct {
  IrModule *m;
  IrComputation *c;
  int nparams;
  Log log;
  DecisionSink sink;
  PassSettings settings;
  PassContext cx;
  FxError err;
} T;

static T *t_new(void) {
  T *t = calloc(1, sizeof *t);
  t->m = ir_module_new("t");
  t->c = ir_computation_new(t->m, "main");
  t->c->is_entry = true;
  t->m->entry = t->c;
  t->sink.emit = log_emit;
  t->sink.ctx = &t->log;
  pass_settings_default(&t->settings);
  t->cx.sink = &t->sink;
  t->cx.device = device_default();
  t->cx.settings = &t->settings;
  t->cx.err = &t->err;
  t->cx.pass = "test";
  return t;
}

static void t_free(T *t) {
  ir_module_free(t->m);
  free(t);
}

static IrShape shp(T *t, IrType ty, int rank, int64_t d0, int64_t d1, int64_t d2) {
  int64_t d[3] = {d0, d1, d2};
  return ir_shape_array(&t->m->arena, ty, rank, d);
}

static IrInstr *param(T *t, const char *name, IrShape s) {
  IrInstr *p = ir_instr_new(t->c, IR_OP_PARAMETER, &s, NULL, 0, name);
  p->param_number = t->nparams;
  IrInstr **np = arena_alloc(&t->m->arena, sizeof(IrInstr *) * (size_t)(t->nparams + 1));
  if (t->nparams) memcpy(np, t->c->params, sizeof(IrInstr *) * (size_t)t->nparams);
  np[t->nparams++] = p;
  t->c->params = np;
  t->c->nparams = t->nparams;
  return p;
}

static IrInstr *op(T *t, IrOpcode o, const char *name, IrShape s, int n, ...) {
  IrInstr *ops[8];
  va_list ap;
  va_start(ap, n);
  for (int k = 0; k < n; k++) ops[k] = va_arg(ap, IrInstr *);
  va_end(ap);
  return ir_instr_new(t->c, o, &s, ops, n, name);
}

static IrComputation *add_reducer(T *t) {
  IrComputation *r = ir_computation_new(t->m, "add_f32");
  IrShape s = ir_shape_scalar(IR_F32);
  IrInstr *a = ir_instr_new(r, IR_OP_PARAMETER, &s, NULL, 0, "ra");
  IrInstr *b = ir_instr_new(r, IR_OP_PARAMETER, &s, NULL, 0, "rb");
  a->param_number = 0;
  b->param_number = 1;
  r->params = arena_alloc(&t->m->arena, sizeof(IrInstr *) * 2);
  r->params[0] = a;
  r->params[1] = b;
  r->nparams = 2;
  IrInstr *ops[2] = {a, b};
  ir_set_root(r, ir_instr_new(r, IR_OP_ADD, &s, ops, 2, "radd"));
  /* Callees print before callers. */
  IrModule *m = t->m;
  memmove(&m->comps[1], &m->comps[0], sizeof(IrComputation *) * (size_t)(m->ncomps - 1));
  m->comps[0] = r;
  return r;
}

static IrInstr *reduce(T *t, const char *name, IrInstr *in, IrShape out, const char *dims) {
  IrShape sc = ir_shape_scalar(IR_F32);
  IrInstr *init = ir_constant_scalar(t->c, IR_F32, 0, "zero");
  (void)sc;
  IrInstr *r = op(t, IR_OP_REDUCE, name, out, 2, in, init);
  ir_attr_set_text(r, "dimensions", dims);
  IrComputation *red = ir_module_find_computation(t->m, "add_f32");
  if (!red) red = add_reducer(t);
  ir_attr_set_comp(r, "to_apply", red);
  return r;
}

/* Structural checks every pass result must pass: users mirror operands, operands live in the same
 * computation and come earlier, fusions call a body whose parameters match their operands. */
static bool well_formed(const IrModule *m) {
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *c = m->comps[k];
    for (int j = 0; j < c->ninstrs; j++) {
      const IrInstr *i = c->instrs[j];
      if (i->dead || i->parent != c) return false;
      for (int o = 0; o < i->noperands; o++) {
        const IrInstr *x = i->operands[o];
        if (!x || x->dead || x->parent != c) return false;
        bool earlier = false;
        for (int q = 0; q < j; q++) earlier = earlier || c->instrs[q] == x;
        if (!earlier) return false;
        bool back = false;
        for (int u = 0; u < x->nusers; u++) back = back || x->users[u] == i;
        if (!back) return false;
      }
      if (i->op == IR_OP_FUSION) {
        IrComputation *fc = ir_fused_computation(i);
        if (!fc || fc->nparams != i->noperands || !fc->root || fc->fusion_instr != i) return false;
        for (int p = 0; p < fc->nparams; p++)
          if (fc->params[p]->param_number != p || !ir_shape_equal(&fc->params[p]->shape, &i->operands[p]->shape))
            return false;
        if (fc->root->shape.type != IR_TUPLE && !ir_shape_equal(&fc->root->shape, &i->shape)) return false;
      }
    }
    if (!c->root && c->ninstrs) return false;
  }
  return true;
}

static bool run_pass(T *t, const Pass *p) {
  bool changed = false;
  t->cx.pass = p->name;
  bool ok = p->run(t->m, &t->cx, &changed);
  return ok;
}

static int count_op(const IrComputation *c, IrOpcode o) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) n += c->instrs[k]->op == o;
  return n;
}

#define F32V(t, n) shp(t, IR_F32, 1, n, 0, 0)
#define F32M(t, a, b) shp(t, IR_F32, 2, a, b, 0)

/* ---------- the graph edits ---------- */

TEST(wrap_fuse_unfuse) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ADD, "add.2", F32V(t, 8), 2, a, x);
  ir_set_root(t->c, b);
  IrInstr *f = fusion_fuse(b, a);
  CHECK(f != NULL);
  CHECK_STR(f->name, "fusion");
  CHECK_STR(ir_fusion_kind(f), "kLoop");
  CHECK(t->c->root == f);
  CHECK(f->noperands == 1 && f->operands[0] == x);
  IrComputation *fc = ir_fused_computation(f);
  CHECK_STR(fc->name, "fused_computation");
  CHECK(a->parent == fc && b->parent == fc && fc->root == b);
  CHECK(ir_module_find_instr(t->m, "negate.1") == a); /* names survive fusion */
  CHECK(well_formed(t->m));
  CHECK(fusion_unfuse(f));
  CHECK(t->c->root == b && b->parent == t->c && a->parent == t->c);
  CHECK(count_op(t->c, IR_OP_FUSION) == 0);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(duplicate_keeps_original_until_last_user) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, a);
  IrInstr *c = op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, a);
  IrInstr *r = op(t, IR_OP_ADD, "add.4", F32V(t, 8), 2, b, c);
  ir_set_root(t->c, r);
  IrInstr *f1 = fusion_fuse(b, a);
  CHECK(a->parent == t->c && a->nusers == 1 && a->users[0] == c); /* still used by sign.3 */
  CHECK(ir_module_find_instr(t->m, "negate.1.clone") != NULL);
  IrInstr *f2 = fusion_fuse(c, a);
  CHECK(a->parent == ir_fused_computation(f2)); /* the last user takes the original */
  CHECK(f1 != f2 && strcmp(f2->name, "fusion.1") == 0);
  ir_computation_sort(t->c);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(multi_output_and_siblings) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, a);
  IrInstr *c = op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, x);
  IrInstr *r = op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 3, a, b, c);
  ir_set_root(t->c, r);
  IrInstr *f = fusion_fuse_multi_output(b, a);
  CHECK(f && f->shape.type == IR_TUPLE && f->shape.ntuple == 2);
  CHECK(r->operands[0]->op == IR_OP_GET_TUPLE_ELEMENT && r->operands[0]->operands[0] == f);
  IrInstr *g = fusion_merge_siblings(f, c, NULL);
  CHECK(g == f && f->shape.ntuple == 3);
  CHECK(r->operands[2]->op == IR_OP_GET_TUPLE_ELEMENT && r->operands[2]->operands[0] == f);
  CHECK_STR(ir_attr_text(r->operands[2], "index"), "2");
  CHECK(f->noperands == 1); /* x read once */
  ir_computation_sort(t->c);
  CHECK(well_formed(t->m));
  CHECK(fusion_unfuse_all(t->m) == 1);
  CHECK(r->operands[0] == a && r->operands[1] == b && r->operands[2] == c);
  ir_computation_sort(t->c);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* ---------- instruction fusion: accepted ---------- */

TEST(chain_fuses_into_one_kernel) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_EXP, "exponential.2", F32V(t, 8), 1, a);
  IrInstr *c = op(t, IR_OP_MULTIPLY, "multiply.3", F32V(t, 8), 2, b, x);
  ir_set_root(t->c, c);
  CHECK(run_pass(t, &pass_instruction_fusion));
  CHECK(count_op(t->c, IR_OP_FUSION) == 1);
  CHECK(t->c->root->op == IR_OP_FUSION && ir_fused_computation(t->c->root)->ninstrs == 4);
  const Rec *r = find(&t->log, "exponential.2", "multiply.3");
  CHECK(r && r->accepted && strcmp(r->action, "fuse") == 0 && strcmp(r->result, "fusion") == 0);
  r = find(&t->log, "negate.1", "exponential.2");
  CHECK(r && r->accepted);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* ---------- not_fusible / custom_call ---------- */

TEST(not_fusible_tuple_and_near_miss) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, a);
  IrInstr *tu = op(t, IR_OP_TUPLE, "tuple.3", ir_shape_scalar(IR_F32), 1, b);
  ir_set_root(t->c, tu);
  CHECK(run_pass(t, &pass_instruction_fusion));
  const Rec *r = find(&t->log, "abs.2", "tuple.3");
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "not_fusible");
  CHECK_CONTAINS(r ? r->detail : NULL, "tuple.3 is a tuple: a location in memory, not a kernel");
  r = find(&t->log, "negate.1", "abs.2"); /* the near miss */
  CHECK(r && r->accepted);
  t_free(t);
}

TEST(custom_call_rng_and_near_miss) {
  for (int lib = 1; lib >= 0; lib--) {
    T *t = t_new();
    t->settings.rng_is_library = lib;
    IrInstr *lo = ir_constant_scalar(t->c, IR_F32, 0, "lo");
    IrInstr *hi = ir_constant_scalar(t->c, IR_F32, 1, "hi");
    IrInstr *g = op(t, IR_OP_RNG, "rng.1", F32V(t, 8), 2, lo, hi);
    ir_attr_set_text(g, "distribution", "rng_uniform");
    IrInstr *x = param(t, "x", F32V(t, 8));
    IrInstr *a = op(t, IR_OP_ADD, "add.2", F32V(t, 8), 2, g, x);
    ir_set_root(t->c, a);
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *r = find(&t->log, "rng.1", "add.2");
    CHECK(r != NULL);
    if (lib) {
      CHECK(r && !r->accepted);
      CHECK_STR(r ? r->reason : NULL, "custom_call");
      CHECK_CONTAINS(r ? r->detail : NULL, "rng.1 is the cuRAND random-number kernel");
      CHECK_CONTAINS(r ? r->suggestion : NULL, "precompute the random numbers");
    } else {
      CHECK(r && r->accepted);
    }
    t_free(t);
  }
}

TEST(custom_call_target_named) {
  T *t = t_new();
  IrInstr *k = param(t, "key", shp(t, IR_U32, 1, 2, 0, 0));
  IrInstr *cc = op(t, IR_OP_CUSTOM_CALL, "custom-call.1", shp(t, IR_U32, 1, 8, 0, 0), 1, k);
  ir_attr_set_text(cc, "custom_call_target", "\"cu_threefry2x32\"");
  IrInstr *s = op(t, IR_OP_SHRL, "shift-right-logical.2", shp(t, IR_U32, 1, 8, 0, 0), 2, cc, cc);
  ir_set_root(t->c, s);
  CHECK(run_pass(t, &pass_instruction_fusion));
  const Rec *r = find(&t->log, "custom-call.1", "shift-right-logical.2");
  CHECK_STR(r ? r->reason : NULL, "custom_call");
  CHECK_CONTAINS(r ? r->detail : NULL, "a custom call to cu_threefry2x32 (the random-number kernel)");
  t_free(t);
}

/* ---------- expensive_duplication / expensive_reuse ---------- */

static T *two_users(IrOpcode producer_op) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *p = op(t, producer_op, "p.1", F32V(t, 8), 1, x);
  IrInstr *a = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, p);
  IrInstr *b = op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, p);
  /* Two kernels (a tuple fuses nothing), both reading p. */
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 2, a, b));
  return t;
}

TEST(expensive_duplication_and_near_miss) {
  T *t = two_users(IR_OP_LOG);
  CHECK(run_pass(t, &pass_instruction_fusion));
  const Rec *r = find(&t->log, "p.1", "sign.3");
  CHECK_STR(r ? r->reason : NULL, "code_duplication"); /* first run: one user only */
  CHECK(metric(r, "users") == 2);
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  r = find(&t->log, "p.1", NULL);
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "expensive_duplication");
  CHECK_CONTAINS(r ? r->detail : NULL, "p.1 is expensive (log) and has 2 users");
  CHECK_CONTAINS(r ? r->suggestion : NULL, "`set expensive log off`");
  t_free(t);
  /* near miss: a cheap producer is duplicated into both */
  t = two_users(IR_OP_NEGATE);
  CHECK(run_pass(t, &pass_instruction_fusion));
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  r = find(&t->log, "p.1", "sign.3");
  CHECK(r && r->accepted && strcmp(r->action, "duplicate") == 0);
  CHECK(ir_module_find_instr(t->m, "p.1")->parent != t->c);
  CHECK(well_formed(t->m));
  t_free(t);
  /* and the override: log marked cheap duplicates too */
  t = two_users(IR_OP_LOG);
  t->settings.expensive_override[IR_OP_LOG] = -1;
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  r = find(&t->log, "p.1", "sign.3");
  CHECK(r && r->accepted);
  t_free(t);
}

TEST(expensive_reuse_and_near_miss) {
  for (int cheap = 0; cheap < 2; cheap++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 4));
    IrInstr *p = op(t, cheap ? IR_OP_NEGATE : IR_OP_LOG, "p.1", F32V(t, 4), 1, x);
    IrInstr *b = op(t, IR_OP_BROADCAST, "broadcast.2", F32M(t, 4, 16), 1, p);
    ir_attr_set_text(b, "dimensions", "{0}");
    ir_set_root(t->c, op(t, IR_OP_NEGATE, "negate.3", F32M(t, 4, 16), 1, b));
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *r = find(&t->log, "p.1", "broadcast.2");
    CHECK(r != NULL);
    if (!cheap) {
      CHECK(r && !r->accepted);
      CHECK_STR(r ? r->reason : NULL, "expensive_reuse");
      CHECK(metric(r, "reuse") == 16);
      CHECK_CONTAINS(r ? r->detail : NULL, "reads each of its elements 16 times");
    } else {
      CHECK(r && r->accepted);
    }
    t_free(t);
  }
}

/* ---------- code_duplication: the paper's concatenate ---------- */

static T *concat_two_users(int limit) {
  T *t = t_new();
  t->settings.concat_user_limit = limit;
  IrInstr *x = param(t, "x", F32V(t, 4));
  IrInstr *y = param(t, "y", F32V(t, 4));
  IrInstr *c = op(t, IR_OP_CONCATENATE, "concatenate.12", F32V(t, 8), 2, x, y);
  ir_attr_set_text(c, "dimensions", "{0}");
  IrInstr *u1 = op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, c);
  IrInstr *u2 = op(t, IR_OP_COS, "cosine.4", F32V(t, 8), 1, c);
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.5", ir_shape_scalar(IR_F32), 2, u1, u2));
  return t;
}

TEST(code_duplication_concat_and_near_miss) {
  T *t = concat_two_users(1);
  CHECK(run_pass(t, &pass_instruction_fusion));
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  const Rec *r = find(&t->log, "concatenate.12", NULL);
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "code_duplication");
  CHECK_CONTAINS(r ? r->detail : NULL, "concatenate.12 has 2 users; fusing it would duplicate the concatenate into both; limit 1 user");
  CHECK_CONTAINS(r ? r->suggestion : NULL, "`set dup_limit 3`");
  CHECK(metric(r, "users") == 2 && metric(r, "limit") == 1);
  t_free(t);
  t = concat_two_users(3);
  CHECK(run_pass(t, &pass_instruction_fusion));
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  r = find(&t->log, "concatenate.12", "cosine.4");
  CHECK(r && r->accepted && strcmp(r->action, "duplicate") == 0);
  CHECK_CONTAINS(r ? r->detail : NULL, "concatenate.12 is cheap and has 2 users: duplicated into cosine.4");
  r = find(&t->log, "concatenate.12", "sign.3"); /* the last user takes the original */
  CHECK(r && r->accepted && strcmp(r->action, "fuse") == 0);
  CHECK(count_op(t->c, IR_OP_CONCATENATE) == 0);
  CHECK(count_op(t->c, IR_OP_FUSION) == 2); /* the concatenate lives on in both kernels */
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(code_duplication_emitted_copies) {
  /* A producer read through 16 different slices is emitted 16 times: over XLA's 15. */
  for (int n = 15; n <= 16; n++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 64));
    IrInstr *p = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 64), 1, x);
    IrInstr *acc = NULL;
    for (int k = 0; k < n; k++) {
      IrInstr *s = op(t, IR_OP_SLICE, NULL, F32V(t, 4), 1, p);
      char sl[32];
      snprintf(sl, sizeof sl, "{[%d:%d]}", k * 4, k * 4 + 4);
      ir_attr_set_text(s, "slice", sl);
      acc = acc ? op(t, IR_OP_ADD, NULL, F32V(t, 4), 2, acc, s) : s;
    }
    ir_set_root(t->c, acc);
    /* Fuse the slices and adds first (a fusion consumer with n reads of negate.1). */
    IrInstr *f = fusion_wrap(t->c->root, NULL);
    bool again = true;
    while (again) {
      again = false;
      for (int o = 0; o < f->noperands; o++)
        if (f->operands[o]->op != IR_OP_NEGATE && f->operands[o]->op != IR_OP_PARAMETER) {
          fusion_fuse(f, f->operands[o]);
          again = true;
          break;
        }
    }
    ir_computation_sort(t->c);
    CHECK(f->noperands == 1 && f->operands[0] == p);
    CHECK(fusion_emitted_copies(p, f) == n);
    FusionVerdict v;
    bool ok = fusion_should_fuse(p, f, &t->cx, FUSION_MODE_DUPLICATION, &v);
    if (n == 16) {
      CHECK(!ok);
      CHECK_STR(v.reason, "code_duplication");
      CHECK_CONTAINS(v.detail, "would emit it 16 times (once per distinct index computation); limit 15 copies");
    } else {
      CHECK(ok);
    }
    t_free(t);
  }
}

/* ---------- reductions ---------- */

TEST(reduce_epilogue_and_near_miss) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32M(t, 4, 64));
  IrInstr *n = op(t, IR_OP_NEGATE, "negate.1", F32M(t, 4, 64), 1, x);
  IrInstr *r = reduce(t, "reduce.2", n, F32V(t, 4), "{1}");
  ir_set_root(t->c, op(t, IR_OP_SQRT, "sqrt.3", F32V(t, 4), 1, r));
  CHECK(run_pass(t, &pass_instruction_fusion));
  const Rec *d = find(&t->log, "reduce.2", "sqrt.3");
  CHECK(d && !d->accepted);
  CHECK_STR(d ? d->reason : NULL, "reduce_epilogue");
  CHECK_CONTAINS(d ? d->detail : NULL, "reduce.2 is a row reduction");
  d = find(&t->log, "negate.1", "reduce.2"); /* near miss: into the reduction's input */
  CHECK(d && d->accepted);
  IrInstr *f = ir_module_find_instr(t->m, "fusion");
  CHECK(f && strcmp(ir_fusion_kind(f), "kInput") == 0);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(reduce_into_reduce_and_near_miss) {
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    int64_t d4[4] = {4, 16, 4, 16};
    IrShape s4 = ir_shape_array(&t->m->arena, IR_F32, 4, d4);
    IrInstr *x = param(t, "x", s4);
    /* Reducing dims {0,2} of [4,16,4,16] keeps {1,3}: neither side is contiguous, so XLA emits
     * a plain loop over 16 inputs per output. */
    IrInstr *r1 = reduce(t, "reduce.1", x, F32M(t, 16, 16), "{0,2}");
    IrInstr *c;
    if (!near) c = reduce(t, "reduce.2", r1, F32V(t, 16), "{1}");
    else c = op(t, IR_OP_NEGATE, "negate.2", F32M(t, 16, 16), 1, r1);
    ir_set_root(t->c, c);
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *d = find(&t->log, "reduce.1", c->name);
    CHECK(d != NULL);
    if (!near) {
      CHECK(d && !d->accepted);
      CHECK_STR(d ? d->reason : NULL, "reduce_into_reduce");
      CHECK(metric(d, "inputs_per_output") == 16);
    } else {
      CHECK(d && d->accepted);
    }
    t_free(t);
  }
}

TEST(heavy_computation_and_near_miss) {
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32M(t, 64, 64));
    IrInstr *init = ir_constant_scalar(t->c, IR_F32, 0, "zero");
    IrInstr *rw = op(t, IR_OP_REDUCE_WINDOW, "reduce-window.1", F32M(t, 16, 16), 2, x, init);
    ir_attr_set_text(rw, "window", "{size=4x4 stride=4x4}");
    IrInstr *c;
    if (!near) {
      c = op(t, IR_OP_BROADCAST, "broadcast.2", shp(t, IR_F32, 3, 16, 16, 8), 1, rw);
      ir_attr_set_text(c, "dimensions", "{0,1}");
    } else {
      c = op(t, IR_OP_NEGATE, "negate.2", F32M(t, 16, 16), 1, rw);
    }
    ir_set_root(t->c, c);
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *d = find(&t->log, "reduce-window.1", c->name);
    CHECK(d != NULL);
    if (!near) {
      CHECK_STR(d ? d->reason : NULL, "heavy_computation");
      CHECK(metric(d, "inputs_per_output") == 16 && metric(d, "reuse") == 8 && metric(d, "limit") == 10);
    } else {
      CHECK(d && d->accepted);
    }
    t_free(t);
  }
}

/* ---------- operand budget ---------- */

/* XLA's FusionWouldBeTooLarge (2021): the distinct operands of both plus both output buffers; a
 * producer whose fusion adds no operand to its consumer never makes it too large. */
TEST(operand_budget_and_near_miss) {
  for (int round = 0; round < 3; round++) {
    int budget = round == 1 ? 96 : 64;
    bool grows = round < 2; /* round 2: negate.1 reads only p0, which concatenate.2 gives up */
    T *t = t_new();
    t->settings.operand_budget = budget;
    IrInstr *ops[70];
    for (int k = 0; k < 70; k++) {
      char nm[16];
      snprintf(nm, sizeof nm, "p%d", k);
      ops[k] = param(t, nm, F32V(t, 2));
    }
    IrInstr *q = param(t, "q", F32V(t, 2));
    IrInstr *n = grows ? op(t, IR_OP_ADD, "negate.1", F32V(t, 2), 2, ops[0], q)
                       : op(t, IR_OP_NEGATE, "negate.1", F32V(t, 2), 1, ops[0]);
    ops[0] = n;
    IrShape s = F32V(t, 140);
    IrInstr *c = ir_instr_new(t->c, IR_OP_CONCATENATE, &s, ops, 70, "concatenate.2");
    ir_attr_set_text(c, "dimensions", "{0}");
    ir_set_root(t->c, op(t, IR_OP_ABS, "abs.3", F32V(t, 140), 1, c));
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *d = find(&t->log, "negate.1", "concatenate.2");
    CHECK(d != NULL);
    if (round == 0) {
      CHECK(d && !d->accepted);
      CHECK_STR(d ? d->reason : NULL, "operand_budget");
      CHECK(metric(d, "operands") == 73 && metric(d, "budget") == 64);
      CHECK_CONTAINS(d ? d->detail : NULL, "71 operands and 2 output buffers; budget 64");
      CHECK_CONTAINS(d ? d->suggestion : NULL, "`set operand_budget 96`");
    } else {
      CHECK(d && d->accepted);
    }
    t_free(t);
  }
}

/* ---------- ir_size (the rule on two fused bodies) ---------- */

static IrInstr *big_fusion(T *t, IrInstr *in, int body, const char *name) {
  IrInstr *n = op(t, IR_OP_NEGATE, name, F32V(t, 4), 1, in);
  IrInstr *f = fusion_wrap(n, NULL);
  IrComputation *fc = ir_fused_computation(f);
  IrInstr *cur = fc->root;
  IrShape s = F32V(t, 4);
  for (int k = 1; k < body; k++) cur = ir_instr_new(fc, IR_OP_NEGATE, &s, &cur, 1, NULL);
  ir_set_root(fc, cur);
  return f;
}

TEST(ir_size_and_near_miss) {
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 4));
    IrInstr *p = big_fusion(t, x, 5001, "negate.p");
    IrInstr *c = big_fusion(t, p, near ? 4999 : 5000, "negate.c");
    ir_set_root(t->c, c);
    FusionVerdict v;
    memset(&v, 0, sizeof v);
    bool ok = fusion_check_too_large(p, c, &t->cx, FUSION_SIZE_PRODUCER_CONSUMER, &v);
    if (!near) {
      CHECK(!ok);
      CHECK_STR(v.reason, "ir_size");
      CHECK_CONTAINS(v.detail, "a body of 10001 instructions; limit 10000");
    } else {
      CHECK(ok);
    }
    t_free(t);
  }
}

/* ---------- registers (the ptxas hook) ---------- */

static int fake_regs;
static bool fake_hook(void *ctx, const IrComputation *body, int *regs, int *spills) {
  (void)ctx;
  *regs = fake_regs + body->ninstrs - body->ninstrs;
  *spills = 0;
  return true;
}

TEST(registers_and_near_miss) {
  FusionVerdict v;
  CHECK_CONTAINS(fusion_registers_note(), "not checked");
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 8));
    IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
    ir_set_root(t->c, op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, a));
    fake_regs = near ? 64 : 300;
    fusion_set_register_hook(fake_hook, NULL);
    CHECK(run_pass(t, &pass_instruction_fusion));
    fusion_set_register_hook(NULL, NULL);
    const Rec *d = find(&t->log, "negate.1", "abs.2");
    if (!near) {
      CHECK(d && !d->accepted);
      CHECK_STR(d ? d->reason : NULL, "registers");
      CHECK(metric(d, "registers") == 300 && metric(d, "limit") == 255);
      CHECK_CONTAINS(d ? d->detail : NULL, "ptxas needs 300 registers per thread");
    } else {
      CHECK(d && d->accepted && metric(d, "registers") == 64);
    }
    t_free(t);
  }
  (void)v;
}

/* ---------- root / in_place / policy ---------- */

TEST(root_and_near_miss) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, a);
  op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, b); /* reads the root */
  ir_set_root(t->c, b);
  CHECK(run_pass(t, &pass_instruction_fusion));
  const Rec *d = find(&t->log, "abs.2", "sign.3");
  CHECK(d && !d->accepted);
  CHECK_STR(d ? d->reason : NULL, "root");
  d = find(&t->log, "negate.1", "abs.2");
  CHECK(d && d->accepted);
  t_free(t);
}

/* A T whose module is HLO text (its entry is t->c). */
static T *t_parse(const char *text) {
  T *t = t_new();
  ir_module_free(t->m);
  t->m = hlo_parse(text, strlen(text), "t.hlo", &t->err);
  t->c = t->m ? t->m->entry : NULL;
  return t;
}

/* XLA's ShouldFuseInPlaceOp (2021): a producer that reads the buffer a dynamic-update-slice updates
 * in place fuses only when it reads exactly the region written (a slice at the update's indices);
 * an elementwise producer of the buffer itself fuses. */
TEST(in_place_and_near_miss) {
  static const char *hlo =
      "HloModule m\n"
      "ENTRY e {\n"
      "  p = f32[64] parameter(0)\n"
      "  buf = f32[64] negate(p)\n"
      "  i = s32[] constant(%d)\n"
      "  slice.1 = f32[4] slice(buf), slice={[5:9]}\n"
      "  abs.2 = f32[4] abs(slice.1)\n"
      "  ROOT dynamic-update-slice.3 = f32[64] dynamic-update-slice(buf, abs.2, i)\n"
      "}\n";
  for (int same = 0; same < 2; same++) {
    char text[512];
    snprintf(text, sizeof text, hlo, same ? 5 : 3);
    T *t = t_parse(text);
    CHECK(t->m != NULL);
    if (!t->m) {
      t_free(t);
      return;
    }
    CHECK(run_pass(t, &pass_instruction_fusion));
    const Rec *r = find(&t->log, "slice.1", NULL);
    CHECK(r != NULL);
    if (!same) {
      CHECK(r && !r->accepted);
      CHECK_STR(r ? r->reason : NULL, "in_place");
      CHECK_CONTAINS(r ? r->detail : NULL, "DUS and slice index mismatch");
    } else {
      CHECK(r && r->accepted); /* the region the update writes */
    }
    /* the buffer itself is elementwise: it fuses (the run with duplication takes it) */
    CHECK(run_pass(t, &pass_instruction_fusion_dup));
    r = find(&t->log, "buf", NULL);
    CHECK(r && r->accepted);
    t_free(t);
  }
}

TEST(policy_pass_off_and_near_miss) {
  T *t = two_users(IR_OP_NEGATE);
  snprintf(t->settings.disabled_passes, sizeof t->settings.disabled_passes, "instruction-fusion");
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  CHECK(t->log.n == 1);
  CHECK_STR(t->log.r[0].reason, "policy");
  CHECK_CONTAINS(t->log.r[0].suggestion, "`set pass instruction-fusion on`");
  CHECK(count_op(t->c, IR_OP_FUSION) == 0);
  t->settings.disabled_passes[0] = 0;
  CHECK(run_pass(t, &pass_instruction_fusion_dup));
  CHECK(count_op(t->c, IR_OP_FUSION) > 0);
  t_free(t);
}


/* ---------- fusion-merger ---------- */

/* F = fusion(add(x, y)) read by n single-op fusions, all gathered by a tuple. */
static T *merger_fan(int n) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 256));
  IrInstr *y = param(t, "y", F32V(t, 256));
  IrInstr *a = op(t, IR_OP_ADD, "add.1", F32V(t, 256), 2, x, y);
  IrInstr *f = fusion_wrap(a, NULL);
  IrInstr *outs[8];
  for (int k = 0; k < n; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "negate.%d", 10 + k);
    outs[k] = fusion_wrap(op(t, IR_OP_NEGATE, nm, F32V(t, 256), 1, f), NULL);
  }
  IrShape ts = ir_shape_scalar(IR_F32);
  ir_set_root(t->c, ir_instr_new(t->c, IR_OP_TUPLE, &ts, outs, n, "tuple.20"));
  return t;
}

TEST(bytes_increase_and_near_miss) {
  T *t = merger_fan(4);
  CHECK(run_pass(t, &pass_fusion_merger));
  const Rec *r = find(&t->log, "add.1", "negate.10");
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "bytes_increase");
  /* (2 x 1 KiB read) x 4 users / (2 KiB + 1 KiB x 5) = 8/7 */
  CHECK_NEAR(metric(r, "bytes_ratio"), 8.0 / 7.0, 1e-9);
  CHECK_CONTAINS(r ? r->detail : NULL, "merged-to-current-bytes-ratio of 1.14 is not favorable");
  CHECK_CONTAINS(r ? r->detail : NULL, "would move 8.0 KiB instead of 7.0 KiB (limit 1.10)");
  CHECK(count_op(t->c, IR_OP_FUSION) == 5);
  t_free(t);
  t = merger_fan(3); /* 6/6 = 1.0: merged into all three */
  CHECK(run_pass(t, &pass_fusion_merger));
  for (int k = 0; k < 3; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "negate.%d", 10 + k);
    r = find(&t->log, "add.1", nm);
    CHECK(r && r->accepted && strcmp(r->action, "merge") == 0);
    CHECK_NEAR(metric(r, "bytes_ratio"), 1.0, 1e-9);
  }
  CHECK(count_op(t->c, IR_OP_FUSION) == 3);
  CHECK(ir_module_find_instr(t->m, "fusion") == NULL);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(merger_concat_code_duplication_and_near_miss) {
  for (int limit = 1; limit <= 3; limit += 2) {
    T *t = t_new();
    t->settings.concat_user_limit = limit;
    IrInstr *x = param(t, "x", F32V(t, 4));
    IrInstr *y = param(t, "y", F32V(t, 4));
    IrInstr *c = op(t, IR_OP_CONCATENATE, "concatenate.12", F32V(t, 8), 2, x, y);
    ir_attr_set_text(c, "dimensions", "{0}");
    IrInstr *f = fusion_wrap(c, NULL);
    IrInstr *u1 = fusion_wrap(op(t, IR_OP_SIGN, "sign.3", F32V(t, 8), 1, f), NULL);
    IrInstr *u2 = fusion_wrap(op(t, IR_OP_COS, "cosine.4", F32V(t, 8), 1, f), NULL);
    ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.5", ir_shape_scalar(IR_F32), 2, u1, u2));
    CHECK(run_pass(t, &pass_fusion_merger));
    const Rec *r = find(&t->log, "concatenate.12", "sign.3");
    CHECK(r != NULL);
    if (limit == 1) {
      CHECK(r && !r->accepted);
      CHECK_STR(r ? r->reason : NULL, "code_duplication");
      CHECK_CONTAINS(r ? r->detail : NULL,
                     "fusion (a fusion ending in concatenate.12) has 2 users; fusing it would duplicate the concatenate "
                     "into both; limit 1 user; so fusion is merged into none of its 2 users");
      CHECK_CONTAINS(r ? r->suggestion : NULL, "pass the values separately instead of concatenating");
    } else {
      CHECK(r && r->accepted);
      CHECK(count_op(t->c, IR_OP_FUSION) == 2);
      CHECK(well_formed(t->m));
    }
    t_free(t);
  }
}

/* F = fusion(x + y + z + w) is read by A = fusion(-F) and by B = fusion(A * F). With two readers
 * merging F costs 2 x 4 KiB against 4 KiB + 1 KiB x 3: ratio 8/7, refused. A then merges into B,
 * which leaves F with one reader: the pass sweeps again (as XLA's fixed-point fusion loop runs
 * fusion-merger again) and merges F at 4 / (4 + 2) = 0.67. */
TEST(merger_second_sweep_after_readers_merge) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 256));
  IrInstr *y = param(t, "y", F32V(t, 256));
  IrInstr *z = param(t, "z", F32V(t, 256));
  IrInstr *w = param(t, "w", F32V(t, 256));
  IrInstr *a1 = op(t, IR_OP_ADD, "add.1", F32V(t, 256), 2, x, y);
  IrInstr *a2 = op(t, IR_OP_ADD, "add.2", F32V(t, 256), 2, z, w);
  IrInstr *a3 = op(t, IR_OP_ADD, "add.3", F32V(t, 256), 2, a1, a2);
  IrInstr *f = fusion_wrap(a3, NULL);
  f = fusion_fuse(f, a1);
  f = fusion_fuse(f, a2);
  CHECK(f != NULL);
  IrInstr *a = fusion_wrap(op(t, IR_OP_NEGATE, "negate.4", F32V(t, 256), 1, f), NULL);
  IrInstr *b = fusion_wrap(op(t, IR_OP_MULTIPLY, "multiply.5", F32V(t, 256), 2, a, f), NULL);
  IrInstr *ab = op(t, IR_OP_ABS, "abs.6", F32V(t, 256), 1, b);
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.7", ir_shape_scalar(IR_F32), 1, ab));
  ir_computation_sort(t->c);
  CHECK(run_pass(t, &pass_fusion_merger));
  const Rec *r1 = NULL, *r2 = NULL;
  for (int k = 0; k < t->log.n; k++) {
    const Rec *r = &t->log.r[k];
    if (strcmp(r->producer, "add.3") != 0) continue;
    if (!r->accepted && !r1) r1 = r;
    if (r->accepted) r2 = r;
  }
  CHECK(r1 != NULL);
  CHECK_STR(r1 ? r1->reason : NULL, "bytes_increase");
  CHECK_NEAR(metric(r1, "bytes_ratio"), 8.0 / 7.0, 1e-9);
  CHECK_NEAR(metric(r1, "users"), 2, 0);
  CHECK_NEAR(metric(r1, "sweep"), -1, 0); /* the first sweep carries no sweep metric */
  CHECK(r2 != NULL);
  CHECK_STR(r2 ? r2->action : NULL, "merge");
  CHECK_NEAR(metric(r2, "bytes_ratio"), 4.0 / 6.0, 1e-9);
  CHECK_NEAR(metric(r2, "users"), 1, 0);
  CHECK_NEAR(metric(r2, "sweep"), 2, 0);
  CHECK(r1 < r2);
  /* one kernel is left: negate.4, multiply.5 and the four-input add all in it */
  CHECK(count_op(t->c, IR_OP_FUSION) == 1);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* The bytes model reads a parameter used only through slices as the slices' bytes, each distinct
 * slice once (copies of one dynamic-slice read the same row). */
TEST(bytes_read_through_distinct_slices) {
  T *t = t_new();
  IrInstr *p = param(t, "pool", F32M(t, 100, 256));
  IrInstr *i = param(t, "i", ir_shape_scalar(IR_S32));
  IrInstr *k = param(t, "k", ir_shape_scalar(IR_S32));
  IrInstr *d1 = op(t, IR_OP_DYNAMIC_SLICE, "dynamic-slice.1", F32M(t, 1, 256), 3, p, i, k);
  IrInstr *d2 = op(t, IR_OP_DYNAMIC_SLICE, "dynamic-slice.2", F32M(t, 1, 256), 3, p, i, k); /* a copy of .1 */
  IrInstr *d3 = op(t, IR_OP_DYNAMIC_SLICE, "dynamic-slice.3", F32M(t, 1, 256), 3, p, k, i); /* another row */
  ir_attr_set_text(d1, "dynamic_slice_sizes", "{1,256}");
  ir_attr_set_text(d2, "dynamic_slice_sizes", "{1,256}");
  ir_attr_set_text(d3, "dynamic_slice_sizes", "{1,256}");
  IrInstr *s1 = op(t, IR_OP_ADD, "add.4", F32M(t, 1, 256), 2, d1, d2);
  IrInstr *s2 = op(t, IR_OP_ADD, "add.5", F32M(t, 1, 256), 2, s1, d3);
  ir_set_root(t->c, s2);
  IrInstr *f = fusion_wrap(s2, NULL);
  f = fusion_fuse(f, s1);
  f = fusion_fuse(f, d1);
  f = fusion_fuse(f, d2);
  f = fusion_fuse(f, d3);
  CHECK(f != NULL);
  int po = -1;
  for (int o = 0; f && o < f->noperands; o++)
    if (f->operands[o] == p) po = o;
  CHECK(po >= 0);
  /* two distinct rows of 256 f32, not three, and not the whole 100 KiB pool */
  CHECK(plan_operand_bytes_read(f, po) == 2 * 1024);
  CHECK(fusion_bytes_read(f) == 2 * 1024 + 4 + 4);
  t_free(t);
}

/* ---------- multi_output_fusion ---------- */

TEST(sibling_cycle_and_near_miss) {
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 8));
    IrInstr *y = param(t, "y", F32V(t, 8));
    /* the siblings are fusions, as instruction-fusion leaves them (XLA's sibling fusion starts
     * from a fusion) */
    IrInstr *a = fusion_wrap(op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x), NULL);
    IrInstr *s = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, near ? y : a);
    IrInstr *b = fusion_wrap(op(t, IR_OP_ADD, "add.3", F32V(t, 8), 2, s, x), NULL);
    /* (a root without users is no sibling candidate: both go to the output tuple) */
    if (near) ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 2, a, b));
    else ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 1, b)); /* negate.1 -> abs.2 -> add.3, and x feeds both ends */
    CHECK(run_pass(t, &pass_multi_output_fusion));
    const Rec *r = find(&t->log, "negate.1", "add.3");
    if (!r) r = find(&t->log, "add.3", "negate.1");
    CHECK(r && strcmp(r->action, "sibling") == 0);
    if (!near) {
      CHECK(r && !r->accepted);
      CHECK_STR(r ? r->reason : NULL, "cycle");
      CHECK_CONTAINS(r ? r->detail : NULL, "would introduce a cycle when fused");
    } else {
      CHECK(r && r->accepted);
      CHECK(count_op(t->c, IR_OP_FUSION) == 1);
      CHECK(well_formed(t->m));
    }
    t_free(t);
  }
}

TEST(sibling_shape_mismatch_and_near_miss) {
  for (int near = 0; near < 2; near++) {
    T *t = t_new();
    IrInstr *x = param(t, "x", F32V(t, 8));
    IrInstr *a = fusion_wrap(op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x), NULL);
    IrInstr *b;
    if (!near) {
      b = op(t, IR_OP_BROADCAST, "broadcast.2", F32M(t, 8, 4), 1, x);
      ir_attr_set_text(b, "dimensions", "{0}");
    } else {
      b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, x);
    }
    b = fusion_wrap(b, NULL);
    ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 2, a, b));
    CHECK(run_pass(t, &pass_multi_output_fusion));
    const char *bn = near ? "abs.2" : "broadcast.2";
    const Rec *r = find(&t->log, "negate.1", bn);
    if (!r) r = find(&t->log, bn, "negate.1");
    CHECK(r != NULL);
    if (!near) {
      CHECK_STR(r ? r->reason : NULL, "shape_mismatch");
      CHECK_CONTAINS(r ? r->detail : NULL, "iterates over f32[8]");
      CHECK_CONTAINS(r ? r->detail : NULL, "over f32[8,4]: different loop shapes");
    } else {
      CHECK(r && r->accepted);
    }
    t_free(t);
  }
}

/* Two siblings that share two operands are met once per operand; a refusal is reported once. */
TEST(sibling_refusal_reported_once_per_pair) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *y = param(t, "y", F32V(t, 8));
  IrInstr *a = fusion_wrap(op(t, IR_OP_ADD, "add.1", F32V(t, 8), 2, x, y), NULL);
  IrInstr *j = op(t, IR_OP_CONCATENATE, "concatenate.2", F32V(t, 16), 2, x, y);
  ir_attr_set_text(j, "dimensions", "{0}");
  j = fusion_wrap(j, NULL);
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.3", ir_shape_scalar(IR_F32), 2, a, j));
  CHECK(run_pass(t, &pass_multi_output_fusion));
  int seen = 0;
  for (int k = 0; k < t->log.n; k++) {
    const Rec *r = &t->log.r[k];
    if (strcmp(r->action, "sibling") == 0 &&
        ((strcmp(r->producer, "add.1") == 0 && strcmp(r->consumer, "concatenate.2") == 0) ||
         (strcmp(r->producer, "concatenate.2") == 0 && strcmp(r->consumer, "add.1") == 0))) {
      seen++;
      CHECK(!r->accepted);
      CHECK_STR(r->reason, "shape_mismatch");
    }
  }
  CHECK(seen == 1);
  t_free(t);
}

/* n reductions of the same input, siblings. */
static T *sibling_reductions(int n, int64_t rows, int64_t cols, const char *dims, IrShape (*outshape)(T *, int64_t, int64_t)) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32M(t, rows, cols));
  IrInstr *outs[16];
  for (int k = 0; k < n; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "reduce.%d", k + 1);
    /* each in its own input fusion, as instruction-fusion leaves them: XLA's sibling fusion starts
     * from a fusion */
    outs[k] = fusion_wrap(reduce(t, nm, x, outshape(t, rows, cols), dims), NULL);
  }
  IrShape ts = ir_shape_scalar(IR_F32);
  ir_set_root(t->c, ir_instr_new(t->c, IR_OP_TUPLE, &ts, outs, n, "tuple.30"));
  return t;
}
static IrShape col_out(T *t, int64_t r, int64_t c) { (void)r; return F32V(t, c); }
static IrShape row_out(T *t, int64_t r, int64_t c) { (void)c; return F32V(t, r); }

TEST(shared_memory_and_near_miss) {
  /* Column reductions of f32[64,128] need 2 x 32 x 33 x 4 = 8448 B each (XLA 2021's
   * SharedMemoryUsage): four fit in the 40,000 B budget, five (42240 B) do not. */
  T *t = sibling_reductions(5, 64, 128, "{0}", col_out);
  CHECK(run_pass(t, &pass_multi_output_fusion));
  const Rec *r = find(&t->log, "fusion", "reduce.4");
  CHECK(r && r->accepted); /* the near miss */
  r = find(&t->log, "fusion", "reduce.5");
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "shared_memory");
  CHECK(metric(r, "shared_bytes") == 42240 && metric(r, "limit") == 40000);
  CHECK_CONTAINS(r ? r->detail : NULL, "need 42240 B of shared memory per block, over the budget of 40000 B");
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(unnested_reductions_and_near_miss) {
  /* Row reductions need 128 B of shared memory each: the limit that bites is 8 per kernel. */
  T *t = sibling_reductions(9, 4, 64, "{1}", row_out);
  CHECK(run_pass(t, &pass_multi_output_fusion));
  const Rec *r = find(&t->log, "fusion", "reduce.8");
  CHECK(r && r->accepted); /* the eighth joins */
  r = find(&t->log, "fusion", "reduce.9");
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "unnested_reductions");
  CHECK(metric(r, "reductions") == 9 && metric(r, "limit") == 8);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(producer_consumer_multi_output) {
  /* exp(x) feeds a reduction and the output tuple: fused into the reduction, still an output. */
  T *t = t_new();
  IrInstr *x = param(t, "x", F32M(t, 4, 64));
  IrInstr *e = op(t, IR_OP_LOG, "log.1", F32M(t, 4, 64), 1, x);
  IrInstr *r = reduce(t, "reduce.2", e, F32V(t, 4), "{1}");
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.3", ir_shape_scalar(IR_F32), 2, e, r));
  CHECK(run_pass(t, &pass_multi_output_fusion));
  const Rec *d = find(&t->log, "log.1", "reduce.2");
  CHECK(d && d->accepted && strcmp(d->action, "multi-output") == 0);
  CHECK(count_op(t->c, IR_OP_FUSION) == 1);
  IrInstr *tu = t->c->root;
  CHECK(tu->operands[0]->op == IR_OP_GET_TUPLE_ELEMENT && tu->operands[1]->op == IR_OP_GET_TUPLE_ELEMENT);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* ---------- horizontal-loop-fusion ---------- */

TEST(horizontal_small_independent_kernels) {
  T *t = t_new();
  IrInstr *outs[4];
  for (int k = 0; k < 4; k++) {
    char pn[8], nm[32];
    snprintf(pn, sizeof pn, "w%d", k);
    snprintf(nm, sizeof nm, "multiply.%d", k + 1);
    IrInstr *w = param(t, pn, F32V(t, 16 * (k + 1)));
    outs[k] = fusion_wrap(op(t, IR_OP_MULTIPLY, nm, F32V(t, 16 * (k + 1)), 2, w, w), NULL);
  }
  IrShape ts = ir_shape_scalar(IR_F32);
  ir_set_root(t->c, ir_instr_new(t->c, IR_OP_TUPLE, &ts, outs, 4, "tuple.9"));
  CHECK(run_pass(t, &pass_horizontal_fusion));
  CHECK(count_op(t->c, IR_OP_FUSION) == 1);
  const Rec *r = find(&t->log, "fusion.3", "tuple.9");
  CHECK(r && r->accepted && metric(r, "kernels") == 4);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* ---------- priority-fusion ---------- */

/* p = add(x, y) over n elements, read by `users` negates gathered by a tuple. */
static T *prio_fan(int users, int64_t n) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, n));
  IrInstr *y = param(t, "y", F32V(t, n));
  IrInstr *a = op(t, IR_OP_ADD, "add.1", F32V(t, n), 2, x, y);
  IrInstr *outs[8];
  for (int k = 0; k < users; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "negate.%d", 10 + k);
    outs[k] = op(t, IR_OP_NEGATE, nm, F32V(t, n), 1, a);
  }
  IrShape ts = ir_shape_scalar(IR_F32);
  ir_set_root(t->c, ir_instr_new(t->c, IR_OP_TUPLE, &ts, outs, users, "tuple.20"));
  return t;
}

static double quarter_ns(double us) { return round(us * 4000.0) / 4000.0; }

TEST(slower_if_fused_and_near_miss) {
  /* 1M floats on the rtx2080ti profile, XLA's cost model: 1 us per launch; memory at 616 GB/s;
   * compute at 2 x 1.545 GHz flops per ns on each of 64 lanes x 68 SMs (rounded down to a whole
   * number of flops per ns, CalculateEffectiveFlopsPerNs), every elementwise op costing the default
   * 3 flops an element (XLA measured op profiles on an H100 only); each kernel's time
   * memory + compute - 95% of the smaller (CombineComputeAndMemoryAccessTime). Duplicating the add
   * into 4 users moves 48 MiB instead of 44 MiB and saves one launch: slower. Into 3 users it
   * moves 36 MiB either way and saves the launch: faster. */
  T *t = prio_fan(4, 1 << 20);
  CHECK(run_pass(t, &pass_priority_fusion));
  const Rec *r = find(&t->log, "add.1", "negate.10");
  CHECK(r && !r->accepted);
  CHECK_STR(r ? r->reason : NULL, "slower_if_fused");
  double mb = 1024.0 * 1024.0 * 4.0, el = 1024.0 * 1024.0, fl = floor(2 * 1.545 * 64 * 68) * 1000, bw = 616e3;
  /* XLA's times are absl::Durations, whole quarters of a nanosecond: each operand's read, the
   * write, the compute time and the overlap are rounded so. */
  double m1 = quarter_ns(mb / bw), c_add = quarter_ns(3 * el / fl), c_neg = quarter_ns(3 * el / fl),
         c_both = quarter_ns(6 * el / fl);
  double add_us = 3 * m1 + c_add - quarter_ns(0.95 * c_add), neg_us = 2 * m1 + c_neg - quarter_ns(0.95 * c_neg);
  double fused_us = 3 * m1 + c_both - quarter_ns(0.95 * c_both); /* reads x and y, writes; add + negate */
  double unf = 5 * 1.0 + add_us + 4 * neg_us, fus = 4 * 1.0 + 4 * fused_us;
  CHECK_NEAR(metric(r, "us_unfused"), unf, 1e-6);
  CHECK_NEAR(metric(r, "us_fused"), fus, 1e-6);
  char want[160];
  snprintf(want, sizeof want, "would take %.2f us instead of %.2f us on rtx2080ti: it will execute slower if fused", fus,
           unf);
  CHECK_CONTAINS(r ? r->detail : NULL, want);
  CHECK(fus > unf);
  CHECK(find(&t->log, "add.1", "negate.13") != NULL); /* every consumer reported */
  t_free(t);
  t = prio_fan(3, 1 << 20);
  CHECK(run_pass(t, &pass_priority_fusion));
  r = find(&t->log, "add.1", "negate.12");
  CHECK(r && r->accepted && strcmp(r->action, "duplicate") == 0);
  CHECK(metric(r, "us_fused") < metric(r, "us_unfused"));
  CHECK(count_op(t->c, IR_OP_ADD) == 0 && count_op(t->c, IR_OP_FUSION) == 3);
  CHECK(well_formed(t->m));
  t_free(t);
}

/* Two bitcasts of equal (infinite) priority, each feeding a negate, both negates the root tuple's. */
typedef struct {
  IrInstr *x, *y, *b1, *b2, *n1, *n2;
} TieModule;

static void tie_module(T *t, TieModule *m) {
  m->x = param(t, "x", F32V(t, 64));
  m->y = param(t, "y", F32V(t, 64));
  m->b1 = op(t, IR_OP_BITCAST, "bitcast.1", F32V(t, 64), 1, m->x);
  m->b2 = op(t, IR_OP_BITCAST, "bitcast.2", F32V(t, 64), 1, m->y);
  m->n1 = op(t, IR_OP_NEGATE, "negate.3", F32V(t, 64), 1, m->b1);
  m->n2 = op(t, IR_OP_NEGATE, "negate.4", F32V(t, 64), 1, m->b2);
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.5", ir_shape_scalar(IR_F32), 2, m->n1, m->n2));
}

/* Whether producers a and b were both fused, a first. */
static bool fused_before(const Log *l, const char *a, const char *b) {
  int first = -1, second = -1;
  for (int k = 0; k < l->n; k++) {
    const Rec *r = &l->r[k];
    if (!r->accepted) continue;
    if (strcmp(r->producer, a) == 0 && first < 0) first = k;
    if (strcmp(r->producer, b) == 0 && second < 0) second = k;
  }
  return first >= 0 && second >= 0 && first < second;
}

/* Equal priorities go to the larger instruction id first (PriorityFusionQueue's key is (priority,
 * unique_id), taken from the largest end). XLA numbers a module parsed from text in the order the
 * text lists its instructions (HloModule::AddComputationInternal gives each instruction of
 * computation->instructions() the next id), and so does fxplain: of two bitcasts (each of infinite
 * priority) the one listed later is fused first. */
TEST(priority_ties_follow_text_order) {
  T *t = t_new();
  TieModule m;
  tie_module(t, &m);
  CHECK(m.b1->id < m.b2->id);
  CHECK(run_pass(t, &pass_priority_fusion));
  CHECK(fused_before(&t->log, "bitcast.2", "bitcast.1"));
  t_free(t);
}

/* Protobuf's wire format, for writing the proto dump XLA would (--xla_dump_hlo_as_proto): an
 * HloProto whose hlo_module (1) has computations (3), each a name (1) and instructions (2), each
 * a name (1) and an id (35). */
typedef struct {
  unsigned char b[4096];
  size_t n;
} Pb;

static void pb_varint(Pb *p, uint64_t v) {
  do {
    p->b[p->n++] = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    v >>= 7;
  } while (v);
}

static void pb_bytes(Pb *p, int field, const void *data, size_t len) {
  pb_varint(p, (uint64_t)field << 3 | 2);
  pb_varint(p, len);
  memcpy(p->b + p->n, data, len);
  p->n += len;
}

/* A computation named `comp` whose instructions names[k] have the local ids ids[k]. */
static void pb_computation(Pb *out, const char *comp, int64_t comp_uid, const char *const *names, const int *ids, int n) {
  Pb c = {.n = 0};
  pb_bytes(&c, 1, comp, strlen(comp));
  for (int k = 0; k < n; k++) {
    Pb i = {.n = 0};
    pb_bytes(&i, 1, names[k], strlen(names[k]));
    pb_varint(&i, 35 << 3 | 0);
    pb_varint(&i, (uint64_t)(comp_uid << 32 | ids[k]));
    pb_bytes(&c, 2, i.b, i.n);
  }
  Pb m = {.n = 0};
  pb_bytes(&m, 3, c.b, c.n);
  pb_bytes(out, 1, m.b, m.n);
}

static bool write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* A module XLA dumps in mid-pipeline carries the ids of its history, which its text does not
 * print; XLA's proto dump of it does (hlo_proto.c). Given them, the tie goes the other way: here
 * XLA made bitcast.1 after bitcast.2 (a larger local id), so bitcast.1 is fused first. */
TEST(priority_ties_follow_xla_ids) {
  T *t = t_new();
  TieModule m;
  tie_module(t, &m);
  static const char *const names[] = {"x", "y", "bitcast.2", "bitcast.1", "negate.3", "negate.4", "tuple.5"};
  static const int ids[] = {0, 1, 7, 9, 10, 11, 12};
  char dir[] = "/tmp/fxplain_ids_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char pb[300], short_pb[300], junk[300];
  snprintf(pb, sizeof pb, "%s/m.hlo.pb", dir);
  snprintf(short_pb, sizeof short_pb, "%s/short.hlo.pb", dir);
  snprintf(junk, sizeof junk, "%s/junk.hlo.pb", dir);
  Pb whole = {.n = 0}, part = {.n = 0};
  pb_computation(&whole, "main", 3, names, ids, 7);
  pb_computation(&part, "main", 3, names, ids, 6); /* another module: no tuple.5 */
  CHECK(write_file(pb, whole.b, whole.n));
  CHECK(write_file(short_pb, part.b, part.n));
  CHECK(write_file(junk, "\xff\xff\xff", 3));

  /* A proto that does not name exactly the module's instructions is not applied. */
  HloProtoIds info;
  FxError err = {0};
  CHECK(hlo_proto_apply_ids(t->m, short_pb, &info, &err));
  CHECK(!info.applied);
  CHECK(info.matched == 6);
  CHECK_STR(info.first_missing, "tuple.5");
  CHECK(m.b1->id < m.b2->id);
  /* A file that is no HloProto is an error naming it. */
  CHECK(!hlo_proto_apply_ids(t->m, junk, &info, &err));
  CHECK_CONTAINS(err.msg, "not an XLA HloProto");
  CHECK(m.b1->id < m.b2->id);

  fx_error_clear(&err);
  CHECK(hlo_proto_apply_ids(t->m, pb, &info, &err));
  CHECK(info.applied);
  CHECK(info.matched == 7);
  CHECK(m.b1->id > m.b2->id && m.n1->id > m.b1->id && m.x->id < m.y->id);
  CHECK(run_pass(t, &pass_priority_fusion));
  CHECK(fused_before(&t->log, "bitcast.1", "bitcast.2"));
  remove(pb);
  remove(short_pb);
  remove(junk);
  rmdir(dir);
  t_free(t);
}

TEST(priority_reports_every_consumer) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 64));
  IrInstr *a = op(t, IR_OP_EXP, "exponential.1", F32V(t, 64), 1, x);
  IrInstr *b = op(t, IR_OP_NEGATE, "negate.2", F32V(t, 64), 1, a);
  IrInstr *c = op(t, IR_OP_ABS, "abs.3", F32V(t, 64), 1, a);
  ir_set_root(t->c, op(t, IR_OP_TUPLE, "tuple.4", ir_shape_scalar(IR_F32), 3, a, b, c));
  CHECK(run_pass(t, &pass_priority_fusion));
  const Rec *r = find(&t->log, "exponential.1", "tuple.4");
  CHECK_STR(r ? r->reason : NULL, "not_fusible");
  CHECK(metric(r, "us_fused") > 0 && metric(r, "us_unfused") > 0);
  r = find(&t->log, "exponential.1", "negate.2");
  CHECK_STR(r ? r->reason : NULL, "code_duplication");
  CHECK_CONTAINS(r ? r->detail : NULL, "could go into negate.2, but not into tuple.4");
  r = find(&t->log, "exponential.1", "abs.3");
  CHECK_STR(r ? r->reason : NULL, "code_duplication");
  t_free(t);
}

/* ---------- while-loop-unroll ---------- */

/* A counted loop: state (i, v); v = v * 0.5 + 1 each step, `trips` steps. */
static T *counted_loop(int trips) {
  T *t = t_new();
  IrModule *m = t->m;
  IrShape si = ir_shape_scalar(IR_S32), sv = F32V(t, 4);
  IrShape parts[2] = {si, sv};
  IrShape st;
  memset(&st, 0, sizeof st);
  st.type = IR_TUPLE;
  st.ntuple = 2;
  st.tuple = parts;
  /* condition */
  IrComputation *cond = ir_computation_new(m, "cond");
  IrInstr *cp = ir_instr_new(cond, IR_OP_PARAMETER, &st, NULL, 0, "cp");
  cp->param_number = 0;
  cond->params = arena_alloc(&m->arena, sizeof(IrInstr *));
  cond->params[0] = cp;
  cond->nparams = 1;
  IrInstr *ci = ir_instr_new(cond, IR_OP_GET_TUPLE_ELEMENT, &si, &cp, 1, "ci");
  ir_attr_set_text(ci, "index", "0");
  IrInstr *lim = ir_constant_scalar(cond, IR_S32, trips, "limit");
  IrShape sp = ir_shape_scalar(IR_PRED);
  IrInstr *cops[2] = {ci, lim};
  IrInstr *cmp = ir_instr_new(cond, IR_OP_COMPARE, &sp, cops, 2, "compare.1");
  ir_attr_set_text(cmp, "direction", "LT");
  ir_set_root(cond, cmp);
  /* body */
  IrComputation *body = ir_computation_new(m, "body");
  IrInstr *bp = ir_instr_new(body, IR_OP_PARAMETER, &st, NULL, 0, "bp");
  bp->param_number = 0;
  body->params = arena_alloc(&m->arena, sizeof(IrInstr *));
  body->params[0] = bp;
  body->nparams = 1;
  IrInstr *bi = ir_instr_new(body, IR_OP_GET_TUPLE_ELEMENT, &si, &bp, 1, "bi");
  ir_attr_set_text(bi, "index", "0");
  IrInstr *bv = ir_instr_new(body, IR_OP_GET_TUPLE_ELEMENT, &sv, &bp, 1, "bv");
  ir_attr_set_text(bv, "index", "1");
  IrInstr *one = ir_constant_scalar(body, IR_S32, 1, "one");
  IrInstr *aops[2] = {bi, one};
  IrInstr *inc = ir_instr_new(body, IR_OP_ADD, &si, aops, 2, "add.1");
  IrInstr *half = ir_constant_scalar(body, IR_F32, 0.5, "half");
  IrInstr *hb = ir_instr_new(body, IR_OP_BROADCAST, &sv, &half, 1, "broadcast.2");
  ir_attr_set_text(hb, "dimensions", "{}");
  IrInstr *mops[2] = {bv, hb};
  IrInstr *mul = ir_instr_new(body, IR_OP_MULTIPLY, &sv, mops, 2, "multiply.3");
  IrInstr *ones = ir_constant_scalar(body, IR_F32, 1, "onef");
  IrInstr *ob = ir_instr_new(body, IR_OP_BROADCAST, &sv, &ones, 1, "broadcast.4");
  ir_attr_set_text(ob, "dimensions", "{}");
  IrInstr *pops[2] = {mul, ob};
  IrInstr *add = ir_instr_new(body, IR_OP_ADD, &sv, pops, 2, "add.5");
  IrInstr *tops[2] = {inc, add};
  ir_set_root(body, ir_instr_new(body, IR_OP_TUPLE, &st, tops, 2, "tuple.6"));
  /* entry (printed last) */
  memmove(&m->comps[0], &m->comps[1], sizeof(IrComputation *) * (size_t)(m->ncomps - 1));
  m->comps[m->ncomps - 1] = t->c;
  IrInstr *x = param(t, "x", sv);
  IrInstr *zero = ir_constant_scalar(t->c, IR_S32, 0, "zero");
  IrInstr *iops[2] = {zero, x};
  IrInstr *init = ir_instr_new(t->c, IR_OP_TUPLE, &st, iops, 2, "tuple.7");
  IrInstr *w = ir_instr_new(t->c, IR_OP_WHILE, &st, &init, 1, "while.8");
  ir_attr_set_comp(w, "condition", cond);
  ir_attr_set_comp(w, "body", body);
  IrInstr *out = ir_instr_new(t->c, IR_OP_GET_TUPLE_ELEMENT, &sv, &w, 1, "get-tuple-element.9");
  ir_attr_set_text(out, "index", "1");
  ir_set_root(t->c, out);
  return t;
}

static double run_loop(const IrModule *m, int64_t *launches) {
  FxError err;
  fx_error_clear(&err);
  int64_t d[1] = {4};
  RtTensor *x = rt_tensor_new(IR_F32, 1, d, &err);
  for (int k = 0; k < 4; k++) rt_set_f(x, k, k);
  RtTensor *res = NULL;
  RtCounters cnt;
  memset(&cnt, 0, sizeof cnt);
  RtOptions o;
  memset(&o, 0, sizeof o);
  o.count_kernels = true;
  double v = -1;
  if (rt_interp_run(m, &x, 1, &o, &res, &cnt, &err)) v = rt_get_f(res, 3);
  else fx_error_print(stderr, &err);
  rt_tensor_unref(res);
  rt_tensor_unref(x);
  if (launches) *launches = cnt.while_iterations;
  return v;
}

TEST(unroll_with_and_without_remainder) {
  for (int n = 3; n <= 5; n += 2) {
    T *t = counted_loop(10);
    double want = run_loop(t->m, NULL);
    t->settings.unroll = n;
    CHECK(run_pass(t, &pass_while_loop_unroll));
    FxError err;
    fx_error_clear(&err);
    CHECK(ir_verify(t->m, &err));
    if (err.set) fx_error_print(stderr, &err);
    int64_t iters = 0;
    double got = run_loop(t->m, &iters);
    CHECK_NEAR(got, want, 1e-6);
    const Rec *r = find(&t->log, "while.8", NULL);
    CHECK(r && r->accepted && strcmp(r->action, "unroll") == 0);
    IrInstr *main = ir_module_find_instr(t->m, "while.8.unrolled");
    CHECK(main != NULL);
    CHECK(main && plan_while_trip_count(main) == 10 / n);
    if (n == 3) {
      /* 10 = 3 x 3 + 1: three unrolled iterations, then the original loop once */
      CHECK(metric(r, "iterations") == 3 && metric(r, "remainder") == 1);
      CHECK(iters == 4);
      CHECK(plan_while_trip_count(ir_module_find_instr(t->m, "while.8")) == 1);
      CHECK_CONTAINS(r ? r->detail : NULL, "3 iterations of 3 steps, then the original loop for the 1 steps left");
    } else {
      CHECK(metric(r, "iterations") == 2 && metric(r, "remainder") == -1);
      CHECK(iters == 2);
      CHECK(ir_module_find_instr(t->m, "while.8") == NULL);
    }
    IrComputation *nb = ir_attr_comp(main, "body");
    CHECK(nb && count_op(nb, IR_OP_MULTIPLY) == n);
    t_free(t);
  }
  /* A loop whose counter the condition does not test is left alone, with the reason. */
  T *t = counted_loop(10);
  IrComputation *cond = ir_module_find_computation(t->m, "cond");
  ir_set_operand(cond->root, 1, ir_constant_scalar(cond, IR_S32, 1, "c1"));
  ir_set_operand(cond->root, 0, ir_constant_scalar(cond, IR_S32, 0, "c0"));
  t->settings.unroll = 4;
  CHECK(run_pass(t, &pass_while_loop_unroll));
  const Rec *r = find(&t->log, "while.8", NULL);
  CHECK(r && !r->accepted);
  CHECK_CONTAINS(r ? r->detail : NULL, "does not compare a counter with a constant");
  t_free(t);
}

TEST(merger_multi_output_into_its_only_reader) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  IrInstr *a = op(t, IR_OP_NEGATE, "negate.1", F32V(t, 8), 1, x);
  IrInstr *b = op(t, IR_OP_ABS, "abs.2", F32V(t, 8), 1, x);
  IrInstr *c = op(t, IR_OP_ADD, "add.3", F32V(t, 8), 2, a, b);
  ir_set_root(t->c, c);
  IrInstr *f = fusion_merge_siblings(a, b, NULL); /* one kernel, two outputs */
  IrInstr *g = fusion_wrap(c, NULL);
  ir_computation_sort(t->c);
  CHECK(f && g && f->shape.type == IR_TUPLE && g->noperands == 2);
  CHECK(run_pass(t, &pass_fusion_merger));
  const Rec *r = find(&t->log, f->name, g->name);
  CHECK(r && r->accepted);
  CHECK_CONTAINS(r ? r->detail : NULL, "every output of fusion is read by fusion.2 alone: merged into it, so its 2 outputs are no longer written out");
  CHECK(count_op(t->c, IR_OP_FUSION) == 1 && count_op(t->c, IR_OP_GET_TUPLE_ELEMENT) == 0);
  CHECK(g->noperands == 1 && g->operands[0] == x);
  CHECK(well_formed(t->m));
  t_free(t);
}

TEST(vocabulary_complete) {
  int n = 0;
  while (fusion_reason_codes[n]) n++;
  CHECK(n == FUSION_REASON_COUNT);
  CHECK_STR(fusion_reason_codes[0], "not_fusible");
  CHECK_STR(FR_NOT_FUSIBLE, "not_fusible");
  CHECK_STR(FR_POLICY, "policy");
  /* every code: a distinct lower-case word with a meaning and the passes that report it */
  for (int k = 0; k < FUSION_REASON_COUNT; k++) {
    const FusionReason *r = &fusion_reasons[k];
    CHECK(r->code && r->code[0] && strspn(r->code, "abcdefghijklmnopqrstuvwxyz_") == strlen(r->code));
    CHECK(r->meaning && r->meaning[0] && r->passes && r->passes[0]);
    CHECK_STR(fusion_reason_codes[k], r->code);
    for (int j = 0; j < k; j++) CHECK(strcmp(fusion_reasons[j].code, r->code) != 0);
  }
}

/* The entry computation of a new module, and the shape f32[4] the reachability tests build with. */
static IrComputation *new_entry(const char *name, IrShape *v) {
  IrModule *m = ir_module_new(name);
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t d[1] = {4};
  *v = ir_shape_array(&m->arena, IR_F32, 1, d);
  return c;
}

/* The kept searches of reachability.c (a sibling asked about every other sibling, both ways; a
 * producer about every operand of its consumer) answer as the full search does, on a chain of
 * blocks every block of which reads the parameter, side values off the chain, and after an edit
 * that opens a new path (reach_update must end the searches started before it). */
static unsigned lcg(unsigned *s) { return *s = *s * 1103515245u + 12345u; }

TEST(reach_kept_searches_agree_with_full_search) {
  IrShape v;
  IrComputation *c = new_entry("reach", &v);
  IrModule *m = c->module;
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &v, NULL, 0, "p");
  CHECK(ir_computation_set_params(c, &p, 1));
  enum { BLOCKS = 40 };
  IrInstr *cur = p, *side[BLOCKS], *chain[BLOCKS];
  for (int b = 0; b < BLOCKS; b++) {
    IrInstr *a = ir_instr_new(c, IR_OP_ADD, &v, (IrInstr *[]){cur, p}, 2, "add");
    IrInstr *n = ir_instr_new(c, IR_OP_NEGATE, &v, &a, 1, "negate");
    side[b] = ir_instr_new(c, IR_OP_EXP, &v, &p, 1, "exponential");
    IrInstr *t = ir_instr_new(c, IR_OP_TANH, &v, &side[b], 1, "tanh");
    cur = chain[b] = ir_instr_new(c, IR_OP_MULTIPLY, &v, (IrInstr *[]){n, b % 3 ? cur : t}, 2, "multiply");
  }
  ir_set_root(c, cur);
  CHECK(ir_verify(m, &(FxError){0}));
  Reach r;
  reach_init(&r, c);
  int n = c->ninstrs, wrong = 0, asked = 0, yes = 0;
  IrInstr **all = c->instrs;
  /* every pair, in the siblings' order: a fixed end against each other one, both ways */
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      const IrInstr *a = all[(i * 7) % n], *b = all[(j * 13) % n];
      if (a == b) continue;
      bool ab = reach_path(&r, a, b, false), ba = reach_path(&r, b, a, false);
      wrong += ab != fusion_path_exists(a, b, false);
      wrong += ba != fusion_path_exists(b, a, false);
      yes += ab + ba;
      asked += 2;
    }
  /* and pairs at random */
  unsigned seed = 7;
  for (int q = 0; q < 4000; q++) {
    const IrInstr *a = all[lcg(&seed) % (unsigned)n], *b = all[lcg(&seed) % (unsigned)n];
    if (a == b) continue;
    wrong += reach_path(&r, a, b, false) != fusion_path_exists(a, b, false);
    asked++;
  }
  CHECK(wrong == 0);
  CHECK(yes > asked / 8); /* the chain connects many pairs: both answers were asked for */
  /* side[4] feeds nothing on the chain (a block's tanh is read only when its number is a multiple
   * of 3): no way to chain[30], until an edit makes one. */
  const IrInstr *from = side[4], *to = chain[30];
  CHECK(!reach_path(&r, from, to, false));
  CHECK(!fusion_path_exists(from, to, false));
  /* chain[30] now reads a new instruction of side[4]: a path, after reach_update */
  IrInstr *x = ir_instr_new(c, IR_OP_NEGATE, &v, &side[4], 1, "negate");
  ir_computation_sort(c);
  ir_set_operand(chain[30], 0, x);
  reach_update(&r, x);
  CHECK(reach_path(&r, from, to, false));
  CHECK(fusion_path_exists(from, to, false));
  reach_free(&r);
  ir_module_free(m);
}

/* The sweep that answers every pair of one parent's siblings (reach_siblings_begin) agrees with
 * the full search, and so it does after a merge joins two paths: u reaches a, b reaches v, and once
 * a and b are one kernel, u reaches v through it. */
TEST(reach_sibling_sweep_agrees_with_full_search) {
  IrShape v;
  IrComputation *c = new_entry("siblings", &v);
  IrModule *m = c->module;
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &v, NULL, 0, "p");
  CHECK(ir_computation_set_params(c, &p, 1));
  IrInstr *u = ir_instr_new(c, IR_OP_NEGATE, &v, &p, 1, "u");
  IrInstr *a = ir_instr_new(c, IR_OP_ADD, &v, (IrInstr *[]){p, u}, 2, "a");
  IrInstr *b = ir_instr_new(c, IR_OP_TANH, &v, &p, 1, "b");
  IrInstr *lb = ir_instr_new(c, IR_OP_LOG, &v, &b, 1, "log");
  IrInstr *w = ir_instr_new(c, IR_OP_MULTIPLY, &v, (IrInstr *[]){p, lb}, 2, "v");
  /* a chain of blocks reading p, for sets with many paths */
  enum { BLOCKS = 30 };
  IrInstr *cur = w, *blk[BLOCKS];
  for (int k = 0; k < BLOCKS; k++) {
    IrInstr *e = ir_instr_new(c, IR_OP_EXP, &v, &cur, 1, "exponential");
    cur = blk[k] = ir_instr_new(c, IR_OP_ADD, &v, (IrInstr *[]){k % 4 ? e : a, p}, 2, "add");
  }
  IrShape el[2] = {v, v};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2, .tuple = el};
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, (IrInstr *[]){cur, a}, 2, "result"));
  CHECK(ir_verify(m, &(FxError){0}));
  Reach r;
  reach_init(&r, c);
  /* every user of p, in its list's order: the pair checks of a sibling fusion */
  IrInstr *sib[REACH_MAX_SIBLINGS];
  int n = 0;
  for (int k = 0; k < p->nusers && n < REACH_MAX_SIBLINGS; k++) sib[n++] = p->users[k];
  CHECK(n == 4 + BLOCKS);
  CHECK(reach_siblings_begin(&r, sib, n));
  int wrong = 0, yes = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j) continue;
      bool ij = reach_path(&r, sib[i], sib[j], false);
      wrong += ij != fusion_path_exists(sib[i], sib[j], false);
      yes += ij;
    }
  CHECK(wrong == 0);
  CHECK(yes > n); /* the chain joins many of them */
  CHECK(reach_path(&r, u, a, false) && reach_path(&r, b, w, false));
  CHECK(!reach_path(&r, u, w, false) && !reach_path(&r, a, b, false) && !reach_path(&r, b, a, false));
  IrInstr *f = fusion_merge_siblings(a, b, NULL);
  CHECK(f != NULL);
  reach_update(&r, f);
  reach_siblings_merged(&r, a, b, f);
  ir_computation_sort(c);
  CHECK(ir_verify(m, &(FxError){0}));
  CHECK(r.sibs.active);
  CHECK(reach_path(&r, u, w, false));
  CHECK(fusion_path_exists(u, w, false));
  for (int k = 0; k < n; k++)
    if (sib[k] == a) sib[k] = f;
    else if (sib[k] == b) sib[k] = NULL;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j && sib[i] && sib[j]) wrong += reach_path(&r, sib[i], sib[j], false) != fusion_path_exists(sib[i], sib[j], false);
  CHECK(wrong == 0);
  /* any change but a merge the sweep was told of ends its answers: queries search again */
  CHECK(!reach_path(&r, blk[3], blk[4], false));
  IrInstr *x = ir_instr_new(c, IR_OP_NEGATE, &v, &blk[3], 1, "negate");
  ir_set_operand(blk[4], 1, x); /* now blk[3] reaches blk[4]: the sweep's answer is stale */
  ir_computation_sort(c);
  reach_update(&r, x);
  reach_update(&r, blk[4]);
  CHECK(ir_verify(m, &(FxError){0}));
  CHECK(reach_path(&r, blk[3], blk[4], false));
  reach_siblings_merged(&r, blk[3], blk[5], f);
  CHECK(!r.sibs.active);
  reach_siblings_end(&r);
  reach_free(&r);
  ir_module_free(m);
}

/* Multi-output fusion of values read by hundreds of instructions: every reader of the consumer
 * (now a tuple) reads its first output through a get-tuple-element, and every other reader of the
 * producer its new output (the first 256 only, before: the rest read a tuple as an array). */
static IrModule *wide_readers(int n, IrInstr **producer, IrInstr **consumer) {
  IrShape v;
  IrComputation *c = new_entry("wide", &v);
  IrModule *m = c->module;
  IrInstr *x = ir_instr_new(c, IR_OP_PARAMETER, &v, NULL, 0, "x");
  CHECK(ir_computation_set_params(c, &x, 1));
  IrInstr *p = ir_instr_new(c, IR_OP_NEGATE, &v, &x, 1, "p");
  IrInstr *e = ir_instr_new(c, IR_OP_EXP, &v, &p, 1, "e");
  IrInstr **outs = fx_malloc(sizeof(IrInstr *) * (size_t)(2 * n));
  IrShape *el = arena_alloc(&m->arena, sizeof(IrShape) * (size_t)(2 * n));
  for (int k = 0; k < 2 * n; k++) {
    outs[k] = ir_instr_new(c, k < n ? IR_OP_MULTIPLY : IR_OP_ADD, &v, (IrInstr *[]){k < n ? e : p, x}, 2, "u");
    el[k] = v;
  }
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2 * n, .tuple = el};
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, outs, 2 * n, "t"));
  fx_free(outs);
  *producer = p;
  *consumer = e;
  return m;
}

TEST(multi_output_fusion_of_widely_read_values) {
  IrInstr *p, *e;
  IrModule *m = wide_readers(300, &p, &e);
  CHECK(ir_verify(m, &(FxError){0}));
  CHECK(e->nusers == 300 && p->nusers == 301);
  IrInstr *f = fusion_fuse_multi_output(e, p);
  CHECK(f != NULL);
  ir_computation_sort(m->entry);
  FxError err;
  fx_error_clear(&err);
  bool ok = ir_verify(m, &err);
  if (!ok) fx_error_print(stderr, &err);
  CHECK(ok);
  /* f's readers are its two get-tuple-elements, each read by 300 instructions */
  CHECK(f && f->nusers == 2);
  for (int k = 0; f && k < f->nusers; k++) CHECK(f->users[k]->op == IR_OP_GET_TUPLE_ELEMENT && f->users[k]->nusers == 300);
  ir_module_free(m);
}

/* The same with more siblings than one 64-bit word holds, merges at random among those no path
 * joins: after each merge every pair (both ways, and as reach_siblings_connections gives it)
 * agrees with the full search. */
TEST(reach_sibling_sweep_many_siblings_and_merges) {
  IrShape v;
  IrComputation *c = new_entry("many", &v);
  IrModule *m = c->module;
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &v, NULL, 0, "p");
  CHECK(ir_computation_set_params(c, &p, 1));
  enum { N = 150 };
  IrInstr *s[N];
  unsigned seed = 11;
  /* s[k] reads p and, now and then, an instruction made from an earlier sibling */
  for (int k = 0; k < N; k++) {
    IrInstr *other = p;
    if (k > 0 && lcg(&seed) % 3 == 0) {
      IrInstr *e = s[lcg(&seed) % (unsigned)k];
      other = ir_instr_new(c, IR_OP_NEGATE, &v, &e, 1, "negate");
    }
    s[k] = ir_instr_new(c, IR_OP_ADD, &v, (IrInstr *[]){p, other}, 2, "add");
  }
  IrShape el[N];
  for (int k = 0; k < N; k++) el[k] = v;
  IrShape ts = {.type = IR_TUPLE, .ntuple = N, .tuple = el};
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, s, N, "result"));
  CHECK(ir_verify(m, &(FxError){0}));
  Reach r;
  reach_init(&r, c);
  IrInstr *sib[N];
  for (int k = 0; k < N; k++) sib[k] = s[k];
  CHECK(reach_siblings_begin(&r, sib, N));
  CHECK(r.sibs.words == 3);
  uint64_t conn[3];
  int wrong = 0, merges = 0, yes = 0;
  for (int round = 0; round < 40; round++) {
    for (int i = 0; i < N; i++) {
      if (!sib[i]) continue;
      CHECK(reach_siblings_connections(&r, i, conn));
      for (int j = 0; j < N; j++) {
        if (i == j || !sib[j]) continue;
        bool ij = reach_path(&r, sib[i], sib[j], false), ji = fusion_path_exists(sib[j], sib[i], false);
        wrong += ij != fusion_path_exists(sib[i], sib[j], false);
        wrong += (bool)((conn[j / 64] >> (j % 64)) & 1) != (ij || ji);
        yes += ij;
      }
    }
    /* merge two siblings no path joins */
    int a = -1, b = -1;
    for (int tries = 0; tries < 1000 && b < 0; tries++) {
      int x = (int)(lcg(&seed) % N), y = (int)(lcg(&seed) % N);
      if (x != y && sib[x] && sib[y] && !fusion_path_exists(sib[x], sib[y], false) && !fusion_path_exists(sib[y], sib[x], false))
        a = x, b = y;
    }
    if (b < 0) break;
    IrInstr *old_a = sib[a], *old_b = sib[b];
    IrInstr *f = fusion_merge_siblings(sib[a], sib[b], NULL);
    CHECK(f != NULL);
    if (!f) break;
    reach_update(&r, f);
    reach_siblings_merged(&r, old_a, old_b, f);
    CHECK(r.sibs.active);
    sib[a] = f;
    sib[b] = NULL;
    merges++;
  }
  ir_computation_sort(c);
  CHECK(ir_verify(m, &(FxError){0}));
  CHECK(wrong == 0);
  CHECK(merges >= 20);
  CHECK(yes > N);
  reach_free(&r);
  ir_module_free(m);
}

/* A value read by a hundred kernels chained one after another (through custom calls, so no kernel
 * takes the next as a multi-output fusion first): XLA judges all 4,950 pairs (every
 * one refused: a path joins each two); the first MOF_PAIRS_REPORTED are reported one by one, the
 * rest as one decision that names the first of them and counts them all. */
TEST(sibling_pairs_past_the_reported_ones_counted_together) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  enum { N = 100 };
  IrInstr *sib[N], *prev = x;
  for (int k = 0; k < N; k++) {
    char name[32];
    snprintf(name, sizeof name, "add.%d", k + 1);
    sib[k] = fusion_wrap(op(t, IR_OP_ADD, name, F32V(t, 8), 2, x, prev), NULL);
    /* the next reads this one through a custom call, which no fusion takes */
    snprintf(name, sizeof name, "custom-call.%d", k + 1);
    prev = op(t, IR_OP_CUSTOM_CALL, name, F32V(t, 8), 1, sib[k]);
    ir_attr_set_text(prev, "custom_call_target", "\"opaque\"");
  }
  ir_set_root(t->c, ir_instr_new(t->c, IR_OP_TUPLE, &(IrShape){.type = IR_TUPLE}, sib, N, "tuple.0"));
  CHECK(x->nusers == N);
  CHECK(run_pass(t, &pass_multi_output_fusion_current));
  int siblings = 0;
  const Rec *together = NULL;
  for (int k = 0; k < t->log.n; k++)
    if (strcmp(t->log.r[k].action, "sibling") == 0) {
      siblings++;
      CHECK(!t->log.r[k].accepted);
      CHECK_STR(t->log.r[k].reason, "cycle");
      if (strstr(t->log.r[k].detail, "more pairs")) together = &t->log.r[k];
    }
  CHECK(count_op(t->c, IR_OP_FUSION) == N);
  /* the one-by-one decisions, then the one for the rest (the log keeps the last of them all) */
  CHECK(t->log.total >= MOF_PAIRS_REPORTED + 1);
  CHECK(together != NULL);
  if (together) {
    double pairs = 0;
    for (int k = 0; k < together->nmetrics; k++)
      if (strcmp(together->mkey[k], "pairs") == 0) pairs = together->mval[k];
    CHECK(pairs == N * (N - 1) / 2 - MOF_PAIRS_REPORTED);
    CHECK_CONTAINS(together->detail, "more pairs of the readers of x");
  }
  t_free(t);
}

/* fusion_find_in_uses follows every use of a fused parameter, also one with hundreds of users in
 * the body (a 256-entry stack dropped the rest before). */
static bool is_exp(const IrInstr *x, const IrInstr *param, const void *ctx) {
  (void)param;
  (void)ctx;
  return x->op == IR_OP_EXP;
}

TEST(find_in_uses_of_a_widely_used_parameter) {
  T *t = t_new();
  IrInstr *x = param(t, "x", F32V(t, 8));
  enum { N = 300 };
  IrInstr *vals[N];
  for (int k = 0; k < N; k++) vals[k] = op(t, k == N - 1 ? IR_OP_EXP : IR_OP_NEGATE, k == N - 1 ? "exp" : "negate", F32V(t, 8), 1, x);
  IrShape el[N];
  for (int k = 0; k < N; k++) el[k] = F32V(t, 8);
  IrInstr *tup = ir_instr_new(t->c, IR_OP_TUPLE, &(IrShape){.type = IR_TUPLE, .ntuple = N, .tuple = el}, vals, N, "tuple");
  ir_set_root(t->c, tup);
  IrInstr *f = fusion_wrap(tup, NULL);
  CHECK(f != NULL);
  for (int k = 0; f && k < N; k++) f = fusion_fuse(f, vals[k]);
  CHECK(f != NULL);
  if (!f) {
    t_free(t);
    return;
  }
  IrComputation *fc = ir_fused_computation(f);
  CHECK(fc && fc->nparams == 1 && fc->params[0]->nusers == N);
  const IrInstr *hit = fc ? fusion_find_in_uses(f, fc, x, is_exp, NULL) : NULL;
  CHECK(hit && hit->op == IR_OP_EXP);
  t_free(t);
}

int main(void) {
  RUN(wrap_fuse_unfuse);
  RUN(duplicate_keeps_original_until_last_user);
  RUN(multi_output_and_siblings);
  RUN(chain_fuses_into_one_kernel);
  RUN(not_fusible_tuple_and_near_miss);
  RUN(custom_call_rng_and_near_miss);
  RUN(custom_call_target_named);
  RUN(expensive_duplication_and_near_miss);
  RUN(expensive_reuse_and_near_miss);
  RUN(code_duplication_concat_and_near_miss);
  RUN(code_duplication_emitted_copies);
  RUN(reduce_epilogue_and_near_miss);
  RUN(reduce_into_reduce_and_near_miss);
  RUN(heavy_computation_and_near_miss);
  RUN(operand_budget_and_near_miss);
  RUN(ir_size_and_near_miss);
  RUN(registers_and_near_miss);
  RUN(root_and_near_miss);
  RUN(in_place_and_near_miss);
  RUN(policy_pass_off_and_near_miss);
  RUN(bytes_increase_and_near_miss);
  RUN(merger_concat_code_duplication_and_near_miss);
  RUN(merger_second_sweep_after_readers_merge);
  RUN(bytes_read_through_distinct_slices);
  RUN(sibling_cycle_and_near_miss);
  RUN(sibling_shape_mismatch_and_near_miss);
  RUN(sibling_refusal_reported_once_per_pair);
  RUN(shared_memory_and_near_miss);
  RUN(unnested_reductions_and_near_miss);
  RUN(producer_consumer_multi_output);
  RUN(reach_kept_searches_agree_with_full_search);
  RUN(reach_sibling_sweep_agrees_with_full_search);
  RUN(find_in_uses_of_a_widely_used_parameter);
  RUN(sibling_pairs_past_the_reported_ones_counted_together);
  RUN(reach_sibling_sweep_many_siblings_and_merges);
  RUN(multi_output_fusion_of_widely_read_values);
  RUN(horizontal_small_independent_kernels);
  RUN(slower_if_fused_and_near_miss);
  RUN(priority_ties_follow_text_order);
  RUN(priority_ties_follow_xla_ids);
  RUN(priority_reports_every_consumer);
  RUN(unroll_with_and_without_remainder);
  RUN(merger_multi_output_into_its_only_reader);
  RUN(vocabulary_complete);
  return check_summary();
}

/* pass_while_simplifier_current.c — while-loop-simplifier as today's XLA runs it before fusion
 * (WhileLoopSimplifier::RunImpl, in XLA:GPU's simplification pipeline), for the priority pipeline.
 *
 * First what the classic pass does (pass_while_simplifier.c: a loop that runs zero times becomes
 * its initial value; a carried value nothing reads goes), then, for each loop whose body and
 * condition no other instruction calls, the rest of XLA's rewrites, in XLA's order, until none
 * applies:
 *
 *  - repeated elements (TryRemoveRepeatedWhileTupleIndices): elements the loop starts with the
 *    same value and passes through unchanged are one element; the others read it;
 *  - constant elements (TryRemoveConstantParams): an element that starts as a constant and that
 *    the body sets to an equal constant is that constant everywhere, and leaves the loop's state;
 *  - constant propagation (TryPropagateConstant): a scalar element that starts as a constant and
 *    passes through unchanged is read as the constant in the body and the condition;
 *  - a loop that runs once (TryRemoveWhileLoop, trip count 1, nothing it runs has a side effect)
 *    becomes a copy of its body reading the initial value;
 *  - merged induction variables (TryMergeInductionVariables): integer scalars the body steps by a
 *    constant (`x += c`) are read as `x0 + i * c` from one trip counter `i` (counting 0, 1, 2,
 *    ...; added when the loop has none), and stop changing; what reads them then folds (algsimp),
 *    and the element, now constant, goes (the rewrites above). JAX's fori_loop and scan keep
 *    their own counters besides the loop's, so each such loop carries two counters: each is a
 *    kernel per iteration until they are one.
 *
 * Every rewrite is reported with the loop and the elements: "merged the induction variable
 * (element 1, steps by 1) of while.206 into its trip counter (element 0)". */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* ---------- reading a loop ---------- */

typedef struct {
  IrInstr *w;
  IrComputation *body, *cond;
  IrInstr *init; /* the loop's operand: a tuple */
  IrInstr *root; /* the body's root: a tuple */
  int n;         /* elements */
} Loop;

/* The element index when g is get-tuple-element(parameter 0 of c, i); else -1. */
static int64_t param_element(const IrInstr *g, const IrComputation *c) {
  int64_t idx;
  if (!g || g->op != IR_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || !g->operands[0] ||
      g->operands[0]->op != IR_OP_PARAMETER || g->operands[0]->parent != c || !ir_attr_int(g, "index", &idx))
    return -1;
  return idx;
}

/* Whether every user of v is a get-tuple-element (XLA's AllWhileParamConsumersGte). */
static bool only_gte_users(const IrInstr *v) {
  for (int u = 0; u < v->nusers; u++)
    if (v->users[u]->op != IR_OP_GET_TUPLE_ELEMENT) return false;
  return true;
}

/* Fills l when w is a loop this pass may edit: a tuple state built by a tuple, a body whose root
 * is a tuple, body and condition called by w alone, and parameters read only through
 * get-tuple-element. */
static bool read_loop(IrInstr *w, const int *callers, Loop *l) {
  memset(l, 0, sizeof *l);
  if (w->dead || w->op != IR_OP_WHILE || w->noperands != 1 || !w->operands[0] || w->shape.type != IR_TUPLE) return false;
  l->w = w;
  l->body = ir_attr_comp(w, "body");
  l->cond = ir_attr_comp(w, "condition");
  l->init = w->operands[0];
  if (!l->body || !l->cond || l->body == l->cond || !l->body->root || !l->cond->root) return false;
  if (callers[l->body->id] != 1 || callers[l->cond->id] != 1) return false;
  if (l->body->nparams != 1 || l->cond->nparams != 1 || !l->body->params[0] || !l->cond->params[0]) return false;
  l->root = l->body->root;
  l->n = w->shape.ntuple;
  if (l->init->op != IR_OP_TUPLE || l->init->noperands != l->n || l->root->op != IR_OP_TUPLE ||
      l->root->noperands != l->n)
    return false;
  return only_gte_users(l->body->params[0]) && only_gte_users(l->cond->params[0]);
}

/* Whether element i passes through the body unchanged. */
static bool passes_through(const Loop *l, int i) { return param_element(l->root->operands[i], l->body) == i; }

/* ---------- editing a loop's state ---------- */

/* The shape of a tuple without element j (drop >= 0), or with `add` appended (drop < 0). */
static bool tuple_shape(Arena *a, const IrShape *t, int drop, const IrShape *add, IrShape *out) {
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = t->ntuple + (drop >= 0 ? -1 : 1);
  if (out->ntuple == 0) return true;
  out->tuple = arena_alloc(a, sizeof(IrShape) * (size_t)out->ntuple);
  if (!out->tuple) return false;
  int w = 0;
  for (int k = 0; k < t->ntuple; k++)
    if (k != drop && !ir_shape_copy(a, &out->tuple[w++], &t->tuple[k])) return false;
  if (drop < 0 && !ir_shape_copy(a, &out->tuple[w], add)) return false;
  return true;
}

static void set_index(IrInstr *g, int64_t idx) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, idx);
  ir_attr_set_text(g, "index", buf);
}

/* Shifts the get-tuple-element users of v above j down by one. */
static void shift_down(IrInstr *v, int j) {
  for (int u = 0; u < v->nusers; u++) {
    IrInstr *g = v->users[u];
    int64_t idx;
    if (g->op == IR_OP_GET_TUPLE_ELEMENT && ir_attr_int(g, "index", &idx) && idx > j) set_index(g, idx - 1);
  }
}

/* Removes the get-tuple-elements of element j among v's users (none may have users). */
static void drop_reads(IrInstr *v, int j) {
  for (int u = v->nusers - 1; u >= 0; u--) {
    if (u >= v->nusers) continue;
    IrInstr *g = v->users[u];
    int64_t idx;
    if (g->op == IR_OP_GET_TUPLE_ELEMENT && ir_attr_int(g, "index", &idx) && idx == j && g->nusers == 0 &&
        g != g->parent->root)
      ir_instr_remove(g);
  }
}

/* Removes element j from l's loop: nothing may read it any more (the caller moved its reads). The
 * body's root loses operand j, the parameters, the state and the loop lose element j, and reads
 * of later elements move down one. Returns false when out of memory. */
static bool remove_element(IrModule *m, Loop *l, int j) {
  IrShape ns;
  if (!tuple_shape(&m->arena, &l->w->shape, j, NULL, &ns)) return false;
  IrInstr *next = l->root->operands[j];
  simp_remove_operand(l->root, j);
  ir_shape_copy(&m->arena, &l->root->shape, &ns);
  if (next && !next->dead) simp_drop_dead(next);
  IrInstr *views[3] = {l->body->params[0], l->cond->params[0], l->w};
  for (int v = 0; v < 3; v++) {
    drop_reads(views[v], j);
    shift_down(views[v], j);
    ir_shape_copy(&m->arena, &views[v]->shape, &ns);
  }
  /* The initial state: edited in place when only this loop reads it, else a new tuple. */
  IrInstr *init = l->init;
  if (init->nusers == 1 && init != init->parent->root) {
    IrInstr *gone = init->operands[j];
    simp_remove_operand(init, j);
    ir_shape_copy(&m->arena, &init->shape, &ns);
    if (gone) simp_drop_dead(gone);
  } else {
    IrInstr *ops[IR_REMAP_SMALL], **opv = ops;
    if (init->noperands > IR_REMAP_SMALL && !(opv = fx_malloc(sizeof(IrInstr *) * (size_t)init->noperands))) return false;
    int k = 0;
    for (int o = 0; o < init->noperands; o++)
      if (o != j) opv[k++] = init->operands[o];
    IrInstr *t = ir_instr_new_before(l->w->parent, l->w, IR_OP_TUPLE, &ns, opv, k, init->name);
    if (opv != ops) fx_free(opv);
    if (!t) return false;
    ir_set_operand(l->w, 0, t);
    l->init = t;
  }
  l->n--;
  return true;
}

/* A copy of constant c in computation dst, just before `before` (NULL: after the parameters). */
static IrInstr *constant_copy(IrComputation *dst, IrInstr *before, const IrInstr *c) {
  if (!before)
    for (int k = 0; k < dst->ninstrs && !before; k++)
      if (dst->instrs[k]->op != IR_OP_PARAMETER) before = dst->instrs[k];
  IrInstr *x = ir_instr_new_before(dst, before, IR_OP_CONSTANT, &c->shape, NULL, 0, c->name);
  if (!x) return NULL;
  x->literal = c->literal;
  x->loc = c->loc;
  return x;
}

/* Points every read of element j of v (its get-tuple-element users) at x, except the body
 * root's pass-through when keep_root; returns how many reads moved. */
static int forward_reads(IrInstr *v, int j, IrInstr *x, const IrInstr *root, bool keep_root) {
  int moved = 0;
  for (int u = v->nusers - 1; u >= 0; u--) {
    if (u >= v->nusers) continue;
    IrInstr *g = v->users[u];
    int64_t idx;
    if (g->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(g, "index", &idx) || idx != j) continue;
    for (int q = g->nusers - 1; q >= 0; q--) {
      if (q >= g->nusers) continue;
      IrInstr *user = g->users[q];
      for (int o = 0; o < user->noperands; o++)
        if (user->operands[o] == g && !(keep_root && user == root && o == j)) {
          ir_set_operand(user, o, x);
          moved++;
        }
    }
    if (g == g->parent->root) {
      ir_set_root(g->parent, x);
      moved++;
    }
    if (g->nusers == 0 && g != g->parent->root) ir_instr_remove(g);
  }
  return moved;
}

/* ---------- the rewrites ---------- */

static void report(PassContext *cx, const IrInstr *w, const char *action, int element, const char *fmt_detail) {
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = action, .producer = w->name, .accepted = true};
  if (element >= 0) pass_metric(&d, "element", element);
  pass_emit(cx->sink, &d, "%s", fmt_detail);
}

/* TryRemoveRepeatedWhileTupleIndices: pass-through elements with the same initial value. */
static int repeated_elements(IrModule *m, Loop *l, PassContext *cx) {
  for (int i = 0; i < l->n; i++) {
    if (!passes_through(l, i)) continue;
    for (int j = i + 1; j < l->n; j++) {
      if (!passes_through(l, j) || l->init->operands[j] != l->init->operands[i]) continue;
      /* j is i: its reads in the body and the condition read i, after the loop the initial value. */
      IrInstr *gi_body = l->root->operands[i];
      IrInstr *gi_cond = NULL;
      for (int u = 0; u < l->cond->params[0]->nusers && !gi_cond; u++)
        if (param_element(l->cond->params[0]->users[u], l->cond) == i) gi_cond = l->cond->params[0]->users[u];
      if (!gi_cond) {
        IrInstr *p = l->cond->params[0];
        gi_cond = ir_instr_new_before(l->cond, NULL, IR_OP_GET_TUPLE_ELEMENT, &l->w->shape.tuple[i], &p, 1, NULL);
        if (!gi_cond) return -1;
        set_index(gi_cond, i);
        ir_computation_sort(l->cond);
      }
      forward_reads(l->body->params[0], j, gi_body, l->root, true);
      forward_reads(l->cond->params[0], j, gi_cond, NULL, false);
      forward_reads(l->w, j, l->init->operands[j], NULL, false);
      if (gi_cond->nusers == 0 && gi_cond != l->cond->root) ir_instr_remove(gi_cond);
      char msg[512];
      snprintf(msg, sizeof msg,
               "element %d of %s is element %d: both start as %s and the body passes both through unchanged, so "
               "element %d goes and its reads read element %d (after the loop, %s)",
               j, l->w->name, i, l->init->operands[i]->name, j, i, l->init->operands[i]->name);
      if (!remove_element(m, l, j)) return -1;
      report(cx, l->w, "remove", j, msg);
      return 1;
    }
  }
  return 0;
}

/* Whether two constants hold the same value (same type and literal text). */
static bool same_constant(const IrInstr *a, const IrInstr *b) {
  if (a->op != IR_OP_CONSTANT || b->op != IR_OP_CONSTANT || !a->literal || !b->literal) return false;
  if (a == b) return true;
  if (a->literal->elided || b->literal->elided || !ir_shape_equal(&a->shape, &b->shape)) return false;
  return strcmp(a->literal->text ? a->literal->text : "", b->literal->text ? b->literal->text : "") == 0;
}

/* TryRemoveConstantParams: an element that starts as a constant and is set to the same constant. */
static int constant_elements(IrModule *m, Loop *l, PassContext *cx) {
  for (int i = 0; i < l->n; i++) {
    IrInstr *c = l->init->operands[i], *next = l->root->operands[i];
    if (!c || !next || !same_constant(c, next)) continue;
    IrInstr *bc = NULL, *cc = NULL;
    if (!(bc = constant_copy(l->body, NULL, c)) || !(cc = constant_copy(l->cond, NULL, c))) return -1;
    forward_reads(l->body->params[0], i, bc, l->root, false);
    forward_reads(l->cond->params[0], i, cc, NULL, false);
    forward_reads(l->w, i, c, NULL, false);
    if (bc->nusers == 0) ir_instr_remove(bc);
    if (cc->nusers == 0) ir_instr_remove(cc);
    char msg[512];
    snprintf(msg, sizeof msg, "element %d of %s is the constant %s: it starts as it and the body sets it to it again, so it leaves the loop's state",
             i, l->w->name, c->name);
    if (!remove_element(m, l, i)) return -1;
    report(cx, l->w, "remove", i, msg);
    return 1;
  }
  return 0;
}

/* TryPropagateConstant: a scalar element that starts as a constant and never changes. */
static int propagate_constants(Loop *l, PassContext *cx) {
  int done = 0;
  for (int i = 0; i < l->n; i++) {
    IrInstr *c = l->init->operands[i];
    if (!c || c->op != IR_OP_CONSTANT || !passes_through(l, i) || !ir_shape_is_scalar(&l->w->shape.tuple[i])) continue;
    /* Every read in the body and the condition, the pass-through too (then the element is a
     * constant element, which the rewrite above removes). */
    int moved = 0;
    IrInstr *bc = constant_copy(l->body, NULL, c), *cc = constant_copy(l->cond, NULL, c);
    if (!bc || !cc) return -1;
    moved += forward_reads(l->body->params[0], i, bc, l->root, false);
    moved += forward_reads(l->cond->params[0], i, cc, NULL, false);
    if (bc->nusers == 0) ir_instr_remove(bc);
    if (cc->nusers == 0) ir_instr_remove(cc);
    if (!moved) continue;
    char msg[512];
    snprintf(msg, sizeof msg, "element %d of %s starts as the constant %s and never changes: the body and the condition read the constant",
             i, l->w->name, c->name);
    report(cx, l->w, "rewrite", i, msg);
    done++;
  }
  return done;
}

/* TryRemoveWhileLoop, trip count 1: the loop becomes a copy of its body. */
static int run_once(Loop *l, PassContext *cx) {
  if (plan_while_trip_count(l->w) != 1) return 0;
  if (simp_comp_has_side_effect(l->body) || simp_comp_has_side_effect(l->cond) || l->w == l->w->parent->root) return 0;
  int copied = 0;
  IrInstr *w = l->w;
  IrInstr **copies = fx_calloc((size_t)l->body->ninstrs + 1, sizeof *copies);
  IrInstr *result = copies ? simp_inline_mapped(w, l->body, &l->init, 1, &copied, copies) : NULL;
  if (!result) {
    fx_free(copies);
    return -1;
  }
  char msg[512];
  snprintf(msg, sizeof msg, "%s runs once: replaced by a copy of its body %s (%d instructions) reading its initial value %s",
           w->name, l->body->name, copied, l->init->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "inline", .producer = w->name,
                    .consumer = l->body->name, .result = result->name, .accepted = true};
  pass_metric(&d, "trip_count", 1);
  pass_metric(&d, "instructions", copied);
  pass_emit(cx->sink, &d, "%s", msg);
  char how[320];
  snprintf(how, sizeof how, "%s runs once and became a copy of its body", w->name);
  if (simp_callers(w->parent->module, l->body) == 1) simp_report_renames(cx, l->body, copies, how);
  fx_free(copies);
  ir_replace_all_uses(w, result);
  ir_set_operand(w, 0, NULL);
  ir_instr_remove(w);
  return 1;
}

/* The scalar integer constant c when i is one (through nothing else); false otherwise. */
static bool int_scalar(const IrInstr *i, int64_t *c) {
  if (!i || i->op != IR_OP_CONSTANT || !ir_shape_is_scalar(&i->shape) || !ir_type_is_int(i->shape.type) || !i->literal ||
      !i->literal->values || i->literal->count != 1)
    return false;
  *c = (int64_t)i->literal->values[0];
  return (double)*c == i->literal->values[0];
}

/* When element i's next value is add(gte(param, i), constant) (either order), the constant. */
static IrInstr *step_of(const Loop *l, int i) {
  const IrInstr *u = l->root->operands[i];
  if (!u || u->op != IR_OP_ADD || u->noperands != 2 || !ir_shape_is_scalar(&u->shape)) return NULL;
  int64_t c;
  if (param_element(u->operands[0], l->body) == i && int_scalar(u->operands[1], &c)) return u->operands[1];
  if (param_element(u->operands[1], l->body) == i && int_scalar(u->operands[0], &c)) return u->operands[0];
  return NULL;
}

/* Appends a trip counter (starts at 0, adds 1) of type t to l's loop; returns its index. */
static int add_trip_counter(IrModule *m, Loop *l, IrType t) {
  IrShape s = ir_shape_scalar(t), ns;
  if (!tuple_shape(&m->arena, &l->w->shape, -1, &s, &ns)) return -1;
  IrInstr *zero = ir_constant_scalar(l->w->parent, t, 0, "trip_counter.init");
  IrInstr *bp = l->body->params[0];
  IrInstr *g = ir_instr_new_before(l->body, NULL, IR_OP_GET_TUPLE_ELEMENT, &s, &bp, 1, "trip_counter");
  IrInstr *one = ir_constant_scalar(l->body, t, 1, "trip_counter.step");
  if (!zero || !g || !one) return -1;
  set_index(g, l->n);
  IrInstr *ops[2] = {g, one};
  IrInstr *next = ir_instr_new_before(l->body, NULL, IR_OP_ADD, &s, ops, 2, "trip_counter.next");
  if (!next) return -1;
  /* The new root: the old root's operands and the counter's next value. */
  int n = l->root->noperands;
  IrInstr **rops = fx_malloc(sizeof(IrInstr *) * (size_t)(n + 1));
  if (!rops) return -1;
  memcpy(rops, l->root->operands, sizeof(IrInstr *) * (size_t)n);
  rops[n] = next;
  IrInstr *root = ir_instr_new_before(l->body, NULL, IR_OP_TUPLE, &ns, rops, n + 1, l->root->name);
  IrInstr **iops = fx_malloc(sizeof(IrInstr *) * (size_t)(n + 1));
  if (!root || !iops) {
    fx_free(rops);
    fx_free(iops);
    return -1;
  }
  IrInstr *old_root = l->root;
  ir_set_root(l->body, root);
  ir_instr_remove(old_root);
  l->root = root;
  memcpy(iops, l->init->operands, sizeof(IrInstr *) * (size_t)n);
  iops[n] = zero;
  IrInstr *init = ir_instr_new_before(l->w->parent, l->w, IR_OP_TUPLE, &ns, iops, n + 1, l->init->name);
  fx_free(rops);
  fx_free(iops);
  if (!init) return -1;
  IrInstr *old_init = l->init;
  ir_set_operand(l->w, 0, init);
  if (old_init->nusers == 0 && old_init != old_init->parent->root) ir_instr_remove(old_init);
  l->init = init;
  ir_shape_copy(&m->arena, &l->w->shape, &ns);
  ir_shape_copy(&m->arena, &l->body->params[0]->shape, &ns);
  ir_shape_copy(&m->arena, &l->cond->params[0]->shape, &ns);
  ir_computation_sort(l->body);
  ir_computation_sort(l->w->parent);
  l->n++;
  return n;
}

/* get-tuple-element(v, i) + get-tuple-element(v, t) * step, before `before` in v's computation
 * (or, for a parameter, after the parameters): the value of induction variable i in XLA's
 * "old form". */
static IrInstr *old_form(IrComputation *c, IrInstr *before, IrInstr *v, int i, int t, const IrInstr *step, const IrShape *s,
                         const char *base) {
  IrInstr *gi = ir_instr_new_before(c, before, IR_OP_GET_TUPLE_ELEMENT, s, &v, 1, NULL);
  IrInstr *gt = ir_instr_new_before(c, before, IR_OP_GET_TUPLE_ELEMENT, s, &v, 1, NULL);
  IrInstr *k = constant_copy(c, before, step);
  if (!gi || !gt || !k) return NULL;
  set_index(gi, i);
  set_index(gt, t);
  char name[300];
  IrInstr *mo[2] = {gt, k};
  snprintf(name, sizeof name, "%.280s.steps", base);
  IrInstr *mul = ir_instr_new_before(c, before, IR_OP_MULTIPLY, s, mo, 2, name);
  if (!mul) return NULL;
  IrInstr *ao[2] = {gi, mul};
  snprintf(name, sizeof name, "%.280s.value", base);
  return ir_instr_new_before(c, before, IR_OP_ADD, s, ao, 2, name);
}

/* TryMergeInductionVariables for scalars of type t. */
static int merge_induction_variables(IrModule *m, Loop *l, IrType t, PassContext *cx) {
  int counter = -1;
  int vars[256], nvars = 0;
  for (int i = 0; i < l->n && nvars < 256; i++) {
    if (l->w->shape.tuple[i].type != t || !ir_shape_is_scalar(&l->w->shape.tuple[i])) continue;
    IrInstr *step = step_of(l, i);
    if (!step) continue;
    int64_t c, start;
    if (counter < 0 && int_scalar(step, &c) && c == 1 && int_scalar(l->init->operands[i], &start) && start == 0) counter = i;
    else vars[nvars++] = i;
  }
  if (nvars + (counter >= 0) < 2) return 0;
  IrInstr *steps[256];
  for (int v = 0; v < nvars; v++) steps[v] = step_of(l, vars[v]);
  if (counter < 0 && (counter = add_trip_counter(m, l, t)) < 0) return -1;
  IrShape s = ir_shape_scalar(t);
  char msg[600];
  size_t len = 0;
  for (int v = 0; v < nvars; v++) {
    int i = vars[v];
    /* The body's and the condition's reads of i read init + counter * step; the body passes i
     * through; the loop's users read the same after it. */
    IrInstr *old_next = l->root->operands[i];
    IrComputation *comps[2] = {l->body, l->cond};
    for (int q = 0; q < 2; q++) {
      IrInstr *p = comps[q]->params[0];
      bool read = false;
      for (int u = 0; u < p->nusers && !read; u++) {
        const IrInstr *g = p->users[u];
        read = param_element(g, comps[q]) == i && (g->nusers > 0 || g == comps[q]->root);
      }
      if (!read) continue;
      IrInstr *before = NULL;
      for (int k = 0; k < comps[q]->ninstrs && !before; k++)
        if (comps[q]->instrs[k]->op != IR_OP_PARAMETER) before = comps[q]->instrs[k];
      IrInstr *val = old_form(comps[q], before, p, i, counter, steps[v], &s, p->name);
      if (!val) return -1;
      /* Every read of i (the old next value's too) but the new form's own. */
      for (int u = p->nusers - 1; u >= 0; u--) {
        if (u >= p->nusers) continue;
        IrInstr *g = p->users[u];
        if (param_element(g, comps[q]) != i || g == val->operands[0]) continue;
        ir_replace_all_uses(g, val);
        if (g->nusers == 0 && g != comps[q]->root) ir_instr_remove(g);
      }
    }
    /* The body now passes i through. */
    IrInstr *bp = l->body->params[0];
    IrInstr *pass = ir_instr_new_before(l->body, l->root, IR_OP_GET_TUPLE_ELEMENT, &s, &bp, 1, NULL);
    if (!pass) return -1;
    set_index(pass, i);
    ir_set_operand(l->root, i, pass);
    if (old_next->nusers == 0 && !old_next->dead) simp_drop_dead(old_next);
    /* After the loop. */
    bool after = false;
    for (int u = 0; u < l->w->nusers && !after; u++) {
      int64_t idx;
      after = ir_attr_int(l->w->users[u], "index", &idx) && idx == i;
    }
    if (after) {
      IrInstr *next = NULL;
      int pos = ir_computation_index(l->w->parent, l->w);
      if (pos >= 0 && pos + 1 < l->w->parent->ninstrs) next = l->w->parent->instrs[pos + 1];
      char base[300];
      snprintf(base, sizeof base, "%.280s", l->w->name);
      IrInstr *val = old_form(l->w->parent, next, l->w, i, counter, steps[v], &s, base);
      if (!val) return -1;
      for (int u = l->w->nusers - 1; u >= 0; u--) {
        if (u >= l->w->nusers) continue;
        IrInstr *g = l->w->users[u];
        int64_t idx;
        if (g == val->operands[0] || g->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(g, "index", &idx) || idx != i) continue;
        ir_replace_all_uses(g, val);
        if (g->nusers == 0 && g != g->parent->root) ir_instr_remove(g);
      }
    }
    int64_t c = 0;
    int_scalar(steps[v], &c);
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%selement %d (steps by %lld)",
                            v ? ", " : "", i, (long long)c);
  }
  ir_computation_sort(l->body);
  ir_computation_sort(l->cond);
  ir_computation_sort(l->w->parent);
  char full[900];
  snprintf(full, sizeof full,
           "merged the induction variable%s %s of %s into its trip counter (element %d): each is read as its start + "
           "counter x step, and no longer changes",
           nvars == 1 ? "" : "s", msg, l->w->name, counter);
  report(cx, l->w, "rewrite", counter, full);
  return 1;
}

/* ---------- the pass ---------- */


/* One rewrite on one loop, XLA's order. Returns 1 when something changed, 0 when nothing
 * applies, -1 when out of memory. */
static int simplify_loop(IrModule *m, IrInstr *w, const int *callers, PassContext *cx) {
  Loop l;
  if (!read_loop(w, callers, &l)) return 0;
  int r;
  if ((r = repeated_elements(m, &l, cx)) != 0) return r;
  if ((r = constant_elements(m, &l, cx)) != 0) return r;
  if ((r = propagate_constants(&l, cx)) != 0) return r < 0 ? -1 : 1;
  if ((r = run_once(&l, cx)) != 0) return r;
  static const IrType types[] = {IR_S8, IR_U8, IR_S32, IR_U32, IR_S64, IR_U64};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    if ((r = merge_induction_variables(m, &l, types[t], cx)) != 0) return r;
  return 0;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  /* What the classic pass does first: zero-trip loops and dead elements. */
  bool ch = false;
  if (!pass_while_simplifier.run(m, cx, &ch)) return false;
  int edits = 0;
  for (int round = 0; round < 256 && !pass_interrupted(cx); round++) {
    /* The loops as the round starts (rewrites add and remove instructions around them). */
    int nloops = 0;
    IrInstr **loops = simp_collect(m, IR_OP_WHILE, &nloops);
    if (!loops) return fx_error_set(cx->err, NULL, 0, 0, "while-loop-simplifier: out of memory");
    int *callers = simp_count_callers(m);
    if (!callers) {
      fx_free(loops);
      return fx_error_set(cx->err, NULL, 0, 0, "while-loop-simplifier: out of memory");
    }
    int before = edits;
    for (int k = 0; k < nloops; k++) {
      int r = simplify_loop(m, loops[k], callers, cx);
      if (r < 0) {
        fx_free(callers);
        fx_free(loops);
        return fx_error_set(cx->err, NULL, 0, 0, "while-loop-simplifier: out of memory");
      }
      edits += r;
    }
    fx_free(callers);
    fx_free(loops);
    if (edits == before) break;
    /* Each round ends as XLA's pass does: dead code goes (here: the classic rewrites, which
     * remove the elements the rewrites left unread). */
    bool more = false;
    if (!pass_while_simplifier.run(m, cx, &more)) return false;
    ir_module_remove_unreachable(m);
  }
  *changed = ch || edits > 0;
  return true;
}

const Pass pass_while_simplifier_current = {
    "while-loop-simplifier",
    "simplifies while loops as today's XLA: zero- and one-trip loops, dead, repeated and constant carried values, "
    "merged induction variables",
    run};

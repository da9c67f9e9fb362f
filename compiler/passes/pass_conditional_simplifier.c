/* pass_conditional_simplifier.c — conditional-simplifier: removes a conditional when what it
 * runs is known or cheap (XLA's ConditionalSimplifier::TryRemoveConditional, which XLA:GPU runs
 * in its simplification pipeline, after constant folding), for the priority pipeline.
 *
 *  - a conditional with one branch runs it: the conditional becomes a copy of the branch
 *    reading the branch's operand;
 *  - a conditional whose index (or pred) is a constant runs the branch it names (pred true:
 *    the true branch; an index out of range: the last branch, as HLO defines): a copy of it;
 *  - a two-branch conditional on a pred that is not a constant becomes a copy of both branches
 *    and a select of their results (a tuple of selects for a tuple), when neither branch holds
 *    an expensive instruction (anything but elementwise operations, constants, broadcast,
 *    concatenate, dynamic-slice, get-tuple-element, reduce, reshape, pad, parameter, slice,
 *    tuple) and neither branch is empty (only parameters, tuples and get-tuple-elements, with an
 *    array in its result: running it costs nothing, a select would cost a kernel).
 *
 * A conditional that runs anything with a side effect stays. The constant-index case is what
 * makes JAX's error checks (equinox's branched_error_if, lax.cond on a value constant folding
 * computed) disappear before fusion: each branch left would be at least one kernel of its own.
 * Each removal is reported: "conditional.57 always runs region_4.39 (its index is the constant
 * 0): replaced by a copy of it (1 instruction)"; a conditional kept for a reason the select
 * rewrite checks is reported too (rejected), so `why` explains it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define MAX_BRANCHES 64

/* The branch computations of conditional i, in index order (true first for a pred conditional).
 * Returns how many (0 when malformed); *pred tells which form. */
static int branches_of(const IrInstr *i, IrComputation **out, bool *pred) {
  const IrAttr *bc = ir_attr_get(i, "branch_computations");
  *pred = false;
  if (bc && bc->kind == IR_ATTR_COMP) {
    if (bc->ncomps < 1 || bc->ncomps > MAX_BRANCHES) return 0;
    for (int k = 0; k < bc->ncomps; k++)
      if (!(out[k] = bc->comps[k])) return 0;
    return bc->ncomps;
  }
  out[0] = ir_attr_comp(i, "true_computation");
  out[1] = ir_attr_comp(i, "false_computation");
  *pred = true;
  return out[0] && out[1] ? 2 : 0;
}

/* XLA's instruction_is_expensive in TryRemoveConditional. Constants are elementwise in XLA. */
static bool expensive(const IrInstr *x) {
  switch (x->op) {
  case IR_OP_BROADCAST:
  case IR_OP_CONCATENATE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_REDUCE:
  case IR_OP_RESHAPE:
  case IR_OP_PAD:
  case IR_OP_PARAMETER:
  case IR_OP_SLICE:
  case IR_OP_TUPLE:
  case IR_OP_CONSTANT:
    return false;
  default:
    return !ir_op_is_elementwise(x->op);
  }
}

/* The first expensive instruction of c, or NULL. */
static const IrInstr *first_expensive(const IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++)
    if (!c->instrs[k]->dead && expensive(c->instrs[k])) return c->instrs[k];
  return NULL;
}

static bool has_array(const IrShape *s) {
  if (s->type != IR_TUPLE) return true;
  for (int k = 0; k < s->ntuple; k++)
    if (has_array(&s->tuple[k])) return true;
  return false;
}

/* XLA's ComputationIsEmptyWithArrayRoot. */
static bool empty_with_array_root(const IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    IrOpcode op = c->instrs[k]->op;
    if (!c->instrs[k]->dead && op != IR_OP_PARAMETER && op != IR_OP_TUPLE && op != IR_OP_GET_TUPLE_ELEMENT) return false;
  }
  return c->root && has_array(&c->root->shape);
}

static IrInstr *add_before(IrInstr *at, IrOpcode op, const IrShape *shape, IrInstr *const *ops, int n, const char *base) {
  return ir_instr_new_before(at->parent, at, op, shape, ops, n, base);
}

/* select(p, t, f) for values of shape s: a select of arrays (p broadcast to the array's
 * dimensions unless it is a scalar), a tuple of selects of the elements for a tuple. */
static IrInstr *select_of(IrInstr *at, IrInstr *p, IrInstr *t, IrInstr *f, const IrShape *s, int depth) {
  Arena *a = &at->parent->module->arena;
  if (s->type != IR_TUPLE) {
    IrInstr *pp = p;
    if (s->rank > 0) {
      IrShape ps = ir_shape_array(a, IR_PRED, s->rank, s->dims);
      pp = add_before(at, IR_OP_BROADCAST, &ps, &p, 1, "broadcast");
      if (!pp) return NULL;
      ir_attr_set_text(pp, "dimensions", "{}");
    }
    IrInstr *ops[3] = {pp, t, f};
    return add_before(at, IR_OP_SELECT, s, ops, 3, "select");
  }
  if (depth > 16 || s->ntuple > 256) return NULL;
  IrInstr *elems[256];
  for (int k = 0; k < s->ntuple; k++) {
    IrInstr *tk = add_before(at, IR_OP_GET_TUPLE_ELEMENT, &s->tuple[k], &t, 1, "get-tuple-element");
    IrInstr *fk = add_before(at, IR_OP_GET_TUPLE_ELEMENT, &s->tuple[k], &f, 1, "get-tuple-element");
    if (!tk || !fk) return NULL;
    char idx[24];
    snprintf(idx, sizeof idx, "%d", k);
    ir_attr_set_text(tk, "index", idx);
    ir_attr_set_text(fk, "index", idx);
    if (!(elems[k] = select_of(at, p, tk, fk, &s->tuple[k], depth + 1))) return NULL;
  }
  return add_before(at, IR_OP_TUPLE, s, elems, s->ntuple, "tuple");
}

static void report_kept(PassContext *cx, const IrInstr *i, const char *why) {
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "keep", .producer = i->name, .accepted = false};
  pass_emit(cx->sink, &d, "kept %s: %s", i->name, why);
}

/* Copies branch b (k) of conditional i before it, reading its operand; *copies gets the copy of
 * each of b's instructions (for renames_after; the caller frees it). Returns the copy's root, NULL
 * when out of memory. */
static IrInstr *inline_branch(IrInstr *i, IrComputation *b, int k, int *copied, IrInstr ***copies) {
  IrInstr *arg = i->operands[1 + k];
  *copies = fx_calloc((size_t)b->ninstrs + 1, sizeof **copies);
  return *copies ? simp_inline_mapped(i, b, &arg, 1, copied, *copies) : NULL;
}

/* After the decision that copied branch b: the copies that took other names (b used once only). */
static void renames_after(PassContext *cx, IrInstr *i, IrComputation *b, IrInstr **copies) {
  if (copies && simp_callers(i->parent->module, b) == 1) {
    char how[320];
    snprintf(how, sizeof how, "branch %s of %s was copied there", b->name, i->name);
    simp_report_renames(cx, b, copies, how);
  }
  fx_free(copies);
}

static void remove_conditional(IrInstr *i, IrInstr *repl) {
  ir_replace_all_uses(i, repl);
  for (int o = 0; o < i->noperands; o++) ir_set_operand(i, o, NULL);
  ir_instr_remove(i);
}

/* TryRemoveConditional. Returns 1 when i was removed, 0 when it stays, -1 when out of memory. */
static int try_remove(IrInstr *i, PassContext *cx) {
  IrComputation *br[MAX_BRANCHES];
  bool pred;
  int nb = branches_of(i, br, &pred);
  if (nb == 0 || i->noperands != nb + 1) return 0;
  for (int k = 0; k < nb; k++)
    if (br[k] == i->parent || br[k]->nparams != 1 || !br[k]->root) return 0;
  if (simp_has_side_effect(i)) {
    report_kept(cx, i, "a branch has a side effect");
    return 0;
  }
  IrInstr *sel = i->operands[0];
  int chosen = -1;
  char why[200];
  if (nb == 1) {
    chosen = 0;
    snprintf(why, sizeof why, "it has one branch");
  } else if (sel->op == IR_OP_CONSTANT && sel->literal && !sel->literal->elided && sel->literal->values &&
             sel->literal->count == 1) {
    double v = sel->literal->values[0];
    if (pred) {
      chosen = v != 0 ? 0 : 1;
      snprintf(why, sizeof why, "its pred is the constant %s", v != 0 ? "true" : "false");
    } else {
      int64_t idx = (int64_t)v;
      chosen = idx < 0 || idx >= nb ? nb - 1 : (int)idx;
      snprintf(why, sizeof why, "its index is the constant %" PRId64 "%s", idx,
               chosen != idx ? ", out of range: the last branch runs" : "");
    }
  }
  if (chosen >= 0) {
    int copied = 0;
    IrInstr **copies = NULL;
    IrInstr *root = inline_branch(i, br[chosen], chosen, &copied, &copies);
    if (!root) {
      fx_free(copies);
      return -1;
    }
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "inline", .producer = i->name,
                      .consumer = br[chosen]->name, .result = root->name, .accepted = true};
    pass_metric(&d, "branch", chosen);
    pass_metric(&d, "instructions", copied);
    pass_emit(cx->sink, &d, "%s always runs %s (%s): replaced by a copy of it (%d instruction%s)", i->name,
              br[chosen]->name, why, copied, copied == 1 ? "" : "s");
    renames_after(cx, i, br[chosen], copies);
    remove_conditional(i, root);
    return 1;
  }
  /* A pred that is not a constant: both branches and a select, when both are cheap. */
  if (nb != 2 || sel->shape.type != IR_PRED) return 0;
  for (int k = 0; k < 2; k++) {
    const IrInstr *x = first_expensive(br[k]);
    if (x) {
      char msg[300];
      snprintf(msg, sizeof msg, "its pred %s is not a constant and branch %s computes %s (%s), too costly to run always",
               sel->name, br[k]->name, x->name, ir_op_name(x->op));
      report_kept(cx, i, msg);
      return 0;
    }
  }
  for (int k = 0; k < 2; k++)
    if (empty_with_array_root(br[k])) {
      char msg[300];
      snprintf(msg, sizeof msg, "branch %s only passes values through: running it costs less than a select",
               br[k]->name);
      report_kept(cx, i, msg);
      return 0;
    }
  int copied = 0;
  IrInstr **ct = NULL, **cf = NULL;
  IrInstr *t = inline_branch(i, br[0], 0, &copied, &ct);
  IrInstr *f = t ? inline_branch(i, br[1], 1, &copied, &cf) : NULL;
  IrInstr *s = f ? select_of(i, sel, t, f, &i->shape, 0) : NULL;
  if (!s) {
    fx_free(ct);
    fx_free(cf);
    return -1;
  }
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name, .result = s->name,
                    .accepted = true};
  pass_metric(&d, "instructions", copied);
  pass_emit(cx->sink, &d,
            "%s runs two cheap branches (%s, %s) on %s: replaced by both (%d instructions) and a select of their "
            "results (%s)",
            i->name, br[0]->name, br[1]->name, sel->name, copied, s->name);
  renames_after(cx, i, br[0], ct);
  renames_after(cx, i, br[1], cf);
  remove_conditional(i, s);
  return 1;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  /* The conditionals first (XLA gathers them ahead too): removing one adds instructions. */
  int n;
  IrInstr **conds = simp_collect(m, IR_OP_CONDITIONAL, &n);
  if (!conds) return fx_error_set(cx->err, NULL, 0, 0, "conditional-simplifier: out of memory");
  int removed = 0;
  for (int k = 0; k < n && !pass_interrupted(cx); k++) {
    if (conds[k]->dead) continue;
    int r = try_remove(conds[k], cx);
    if (r < 0) {
      fx_free(conds);
      return fx_error_set(cx->err, NULL, 0, 0, "conditional-simplifier: out of memory");
    }
    removed += r;
  }
  fx_free(conds);
  if (removed) ir_module_remove_unreachable(m);
  *changed = removed > 0;
  return true;
}

const Pass pass_conditional_simplifier = {
    "conditional-simplifier",
    "removes conditionals with one branch or a constant index (a copy of the branch that runs), and two-branch "
    "conditionals on a pred whose branches are cheap (both, and a select)",
    run};

/* pass_while_constant_sinking.c — while-loop-constant-sinking: a constant a loop only carries
 * around is read from a copy inside the loop instead (XLA's WhileLoopConstantSinking, which
 * XLA:GPU runs in its simplification pipeline).
 *
 * Element i of a loop's state is invariant when the body passes it through unchanged (the body's
 * root tuple has get-tuple-element(param, i) at position i). When the loop starts it with a
 * constant, every read of that element in the body (except the pass-through itself, so the element
 * stays trivially invariant) and in the condition reads a copy of the constant, named `C.sunk`,
 * instead. What this buys: the body's instructions now see a constant, which the other passes fold
 * and which fusion may duplicate into each kernel that reads it; two loops that differ only in the
 * tables they carry become loops over identical bodies with different constants; and the element
 * itself becomes dead once nothing reads it (while-loop-simplifier removes it). Outer loops are
 * visited before the loops in their bodies, so a constant sinks through nested loops in one run.
 * Only loops whose body and condition no other instruction calls are edited. Each sinking is
 * reported: "sank constant.3 (u32[4]) into the body and condition of while.7: element 6 never
 * changes". Runs in the priority pipeline only (the XLA of 2021 had the pass, but the paper's
 * pipeline here keeps the passes it describes). */
#include <stdint.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* Copies constant c into computation dst as `NAME.sunk` (before dst's first instruction that is
 * not a parameter, so the order stays topological). */
static IrInstr *sink_copy(IrComputation *dst, const IrInstr *c) {
  char name[300];
  snprintf(name, sizeof name, "%.280s.sunk", c->name);
  IrInstr *before = NULL;
  for (int k = 0; k < dst->ninstrs && !before; k++)
    if (dst->instrs[k]->op != IR_OP_PARAMETER) before = dst->instrs[k];
  IrInstr *x = ir_instr_new_before(dst, before, IR_OP_CONSTANT, &c->shape, NULL, 0, name);
  if (!x) return NULL;
  x->literal = c->literal;
  x->loc = c->loc;
  return x;
}

/* Points every user of g except the body root's operand `keep` (-1: none) at x. Returns how
 * many uses moved. */
static int move_uses(IrInstr *g, IrInstr *x, const IrInstr *root, int keep) {
  int moved = 0;
  for (int u = g->nusers - 1; u >= 0; u--) {
    IrInstr *user = g->users[u];
    for (int o = 0; o < user->noperands; o++)
      if (user->operands[o] == g && !(user == root && o == keep)) {
        ir_set_operand(user, o, x);
        moved++;
      }
  }
  return moved;
}

/* How many uses of g there are besides operand `keep` of root. */
static int reads(const IrInstr *g, const IrInstr *root, int keep) {
  int n = 0;
  for (int u = 0; u < g->nusers; u++) {
    const IrInstr *user = g->users[u];
    for (int o = 0; o < user->noperands; o++) n += user->operands[o] == g && !(user == root && o == keep);
  }
  return n;
}

/* The element index of g when it is get-tuple-element(param, i) of computation c; else -1. */
static int64_t param_element(const IrInstr *g, const IrComputation *c) {
  int64_t idx;
  if (g->op != IR_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || !g->operands[0] || g->operands[0]->op != IR_OP_PARAMETER ||
      g->operands[0]->parent != c || !ir_attr_int(g, "index", &idx))
    return -1;
  return idx;
}

/* Sinks the constant elements of loop w. Returns the number sunk, -1 when out of memory. */
static int sink_loop(IrModule *m, IrInstr *w, PassContext *cx) {
  IrComputation *body = ir_attr_comp(w, "body"), *cond = ir_attr_comp(w, "condition");
  IrInstr *init = w->noperands == 1 ? w->operands[0] : NULL;
  if (!body || !cond || body == cond || !init || init->op != IR_OP_TUPLE || !body->root || body->nparams != 1 ||
      cond->nparams != 1 || simp_callers(m, body) != 1 || simp_callers(m, cond) != 1)
    return 0;
  IrInstr *root = body->root;
  int sunk = 0;
  /* The invariant get-tuple-elements of the body: root operand i is gte(param, i). */
  for (int i = 0; root->op == IR_OP_TUPLE && i < root->noperands && i < init->noperands; i++) {
    IrInstr *g = root->operands[i];
    if (!g || param_element(g, body) != i) continue;
    const IrInstr *c = init->operands[i];
    if (!c || c->op != IR_OP_CONSTANT || !c->literal) continue;
    int moved = 0;
    IrInstr *copy = NULL, *ccopy = NULL;
    /* In the body every read of element i but the pass-through; in the condition every read. */
    for (int pass = 0; pass < 2; pass++) {
      IrComputation *in = pass == 0 ? body : cond;
      IrInstr *p = in->params[0];
      for (int u = p ? p->nusers - 1 : -1; u >= 0; u--) {
        if (u >= p->nusers) continue;
        IrInstr *gi = p->users[u];
        if (param_element(gi, in) != i || reads(gi, pass == 0 ? root : NULL, i) == 0) continue;
        IrInstr **slot = pass == 0 ? &copy : &ccopy;
        if (!*slot && !(*slot = sink_copy(in, c))) return -1;
        moved += move_uses(gi, *slot, pass == 0 ? root : NULL, i);
        if (gi->nusers == 0 && gi != in->root) ir_instr_remove(gi);
      }
    }
    if (!moved) continue;
    char shape[128];
    ir_shape_format(&c->shape, false, shape, sizeof shape);
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = c->name,
                      .consumer = w->name, .result = copy ? copy->name : ccopy->name, .accepted = true};
    pass_metric(&d, "element", i);
    pass_metric(&d, "reads", moved);
    pass_emit(cx->sink, &d, "sank %s (%s) into the %s of %s: element %d never changes, so its %d read%s use%s a copy of the constant",
              c->name, shape, copy && ccopy ? "body and condition" : copy ? "body" : "condition", w->name, i, moved,
              moved == 1 ? "" : "s", moved == 1 ? "s" : "");
    sunk++;
  }
  return sunk;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  /* Outer loops first: the module prints callees before callers, so walk it backwards. */
  int total = 0;
  for (int c = m->ncomps - 1; c >= 0; c--) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *w = comp->instrs[k];
      if (w->dead || w->op != IR_OP_WHILE) continue;
      int n = sink_loop(m, w, cx);
      if (n < 0) return fx_error_set(cx->err, NULL, 0, 0, "while-loop-constant-sinking: out of memory");
      total += n;
    }
  }
  *changed = total > 0;
  return true;
}

const Pass pass_while_constant_sinking = {
    "while-loop-constant-sinking",
    "reads of a constant a loop only carries around use a copy of it inside the loop", run};

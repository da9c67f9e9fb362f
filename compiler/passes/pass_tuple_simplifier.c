/* pass_tuple_simplifier.c — removes tuples that are built only to be taken apart.
 *
 * Two rewrites, as XLA's TupleSimplifier does:
 *   get-tuple-element(tuple(a0, ..., an), i)          -> ai
 *   tuple(get-tuple-element(t, 0), ..., gte(t, n-1))  -> t   (all of t's elements, in order)
 * The replaced instruction is removed when nothing uses it any more (and so is a tuple or
 * get-tuple-element it leaves unused). Each rewrite is reported:
 * "tuple-simplifier: replaced get-tuple-element.5 (element 1 of tuple.3) by add.2". */
#include "passes.h"

/* Removes i when unused, then its tuple/get-tuple-element operands that became unused. */
static void drop_if_dead(IrInstr *i) {
  if (i->dead || i->nusers > 0 || i == i->parent->root || i->op == IR_OP_PARAMETER) return;
  IrInstr *ops[64];
  int n = i->noperands < 64 ? i->noperands : 64;
  for (int o = 0; o < n; o++) ops[o] = i->operands[o];
  for (int o = 0; o < i->noperands; o++)
    if (i->operands[o]) ir_set_operand(i, o, NULL);
  i->dead = true;
  for (int o = 0; o < n; o++)
    if (ops[o] && (ops[o]->op == IR_OP_TUPLE || ops[o]->op == IR_OP_GET_TUPLE_ELEMENT)) drop_if_dead(ops[o]);
}

/* t when i is tuple(gte(t,0), ..., gte(t,n-1)) covering all of t's elements; else NULL. */
static IrInstr *whole_tuple_source(const IrInstr *i) {
  if (i->noperands == 0) return NULL;
  IrInstr *t = NULL;
  for (int k = 0; k < i->noperands; k++) {
    const IrInstr *g = i->operands[k];
    int64_t idx;
    if (!g || g->op != IR_OP_GET_TUPLE_ELEMENT || g->noperands != 1 || !ir_attr_int(g, "index", &idx) ||
        idx != k)
      return NULL;
    if (t && g->operands[0] != t) return NULL;
    t = g->operands[0];
  }
  if (!t || t->shape.type != IR_TUPLE || t->shape.ntuple != i->noperands) return NULL;
  if (!ir_shape_equal(&t->shape, &i->shape)) return NULL;
  return t;
}

static bool run_tuple_simplifier(IrModule *m, PassContext *cx, bool *changed) {
  int rewrites = 0;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    bool removed_any = false;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *i = comp->instrs[k];
      if (i->dead) continue;
      IrInstr *repl = NULL;
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name,
                        .accepted = true};
      if (i->op == IR_OP_GET_TUPLE_ELEMENT && i->noperands == 1 && i->operands[0] &&
          i->operands[0]->op == IR_OP_TUPLE) {
        IrInstr *t = i->operands[0];
        int64_t idx;
        if (!ir_attr_int(i, "index", &idx) || idx < 0 || idx >= t->noperands || !t->operands[idx]) continue;
        repl = t->operands[idx];
        d.consumer = NULL;
        d.result = repl->name;
        pass_metric(&d, "index", (double)idx);
        pass_emit(cx->sink, &d, "replaced %s (element %lld of %s) by %s", i->name, (long long)idx, t->name,
                  repl->name);
      } else if (i->op == IR_OP_TUPLE && (repl = whole_tuple_source(i)) != NULL) {
        d.result = repl->name;
        pass_metric(&d, "elements", i->noperands);
        pass_emit(cx->sink, &d, "replaced %s (all %d elements of %s, in order) by %s", i->name, i->noperands,
                  repl->name, repl->name);
      } else {
        continue;
      }
      ir_replace_all_uses(i, repl);
      drop_if_dead(i);
      removed_any = true;
      rewrites++;
    }
    if (removed_any) {
      int w = 0;
      for (int k = 0; k < comp->ninstrs; k++)
        if (!comp->instrs[k]->dead) comp->instrs[w++] = comp->instrs[k];
      comp->ninstrs = w;
    }
  }
  *changed = rewrites > 0;
  return true;
}

const Pass pass_tuple_simplifier = {"tuple-simplifier",
                                    "tuple simplification: get-tuple-element of a tuple, tuples rebuilt from "
                                    "their elements",
                                    run_tuple_simplifier};

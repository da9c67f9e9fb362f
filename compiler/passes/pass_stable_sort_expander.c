/* pass_stable_sort_expander.c — stable-sort-expander: XLA's StableSortExpander
 * (stable_sort_expander.cc), which XLA:GPU runs after sort-rewriter and before its simplification
 * passes. XLA's sort kernel is not stable, so a sort marked is_stable=true gets a tie-breaker: an s32
 * iota along the sorted dimension as one more operand (an existing one is used when the sort already
 * has it), and a comparator that, when the keys compare equal both ways, orders by that iota:
 *
 *   sort(x: f32[8,256]), is_stable=true, to_apply=lt
 *     ->  sort(x, iota(s32[8,256], dim 1)), to_apply=lt'           (get-tuple-element 0 for x)
 *         lt'(a, b, i, j) = select(lt(a, b) == lt(b, a), i < j, lt(a, b))
 *
 * The comparator is copied when it gains parameters or has other callers. A dimension of more than
 * 2^31 - 1 elements is left as it is (XLA reports it unimplemented). Fusion bodies are left alone.
 * Priority pipeline only. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

/* XLA's IotaOperandIndexForStableSort: an s32 iota operand along the sorted dimension, or -1. */
static int iota_operand(const IrInstr *sort, int64_t dim) {
  for (int k = 0; k < sort->noperands; k++) {
    const IrInstr *o = sort->operands[k];
    int64_t d;
    if (o->op == IR_OP_IOTA && o->shape.type == IR_S32 && ir_attr_int(o, "iota_dimension", &d) && d == dim) return k;
  }
  return -1;
}

/* XLA's AddIotaAndExpand: a new sort with an s32 iota as its last operand and a copy of the
 * comparator with two more s32 parameters for it; the old sort's users read its operands' results
 * from the new one. Returns the new sort (its comparator in *cmp), NULL when out of memory. */
static IrInstr *add_iota(IrInstr *sort, int64_t dim, IrComputation **cmp, IrInstr **iota_out) {
  IrComputation *c = sort->parent;
  IrModule *m = c->module;
  Arena *a = &m->arena;
  int n = sort->noperands;
  const IrShape *s0 = &sort->operands[0]->shape;
  IrShape is = ir_shape_array(a, IR_S32, s0->rank, s0->dims);
  IrInstr *iota = simp_add_like(c, sort, IR_OP_IOTA, &is, NULL, 0, "iota", sort);
  if (!iota) return NULL;
  ir_attr_set_int(iota, "iota_dimension", dim);
  *iota_out = iota;
  IrComputation *nc = simp_clone_computation(m, *cmp);
  if (!nc) return NULL;
  IrShape ss = ir_shape_scalar(IR_S32);
  char nm[64];
  snprintf(nm, sizeof nm, "p.%d.lhs", n);
  IrInstr *pl = ir_instr_new(nc, IR_OP_PARAMETER, &ss, NULL, 0, nm);
  snprintf(nm, sizeof nm, "p.%d.rhs", n);
  IrInstr *pr = pl ? ir_instr_new(nc, IR_OP_PARAMETER, &ss, NULL, 0, nm) : NULL;
  IrInstr **params = pr ? fx_malloc(sizeof *params * (size_t)(2 * n + 2)) : NULL;
  if (!params) return NULL;
  bool ok = true;
  for (int k = 0; k < 2 * n; k++) {
    params[k] = k < nc->nparams ? nc->params[k] : NULL;
    if (!params[k]) ok = false;
  }
  params[2 * n] = pl;
  params[2 * n + 1] = pr;
  ok = ok && ir_computation_set_params(nc, params, 2 * n + 2);
  fx_free(params);
  if (!ok) return NULL;
  /* the new sort: the operands and the iota, a tuple of their shapes */
  IrInstr **ops = fx_malloc(sizeof *ops * (size_t)(n + 1));
  IrShape *parts = arena_alloc(a, sizeof *parts * (size_t)(n + 1));
  if (!ops || !parts) {
    fx_free(ops);
    return NULL;
  }
  for (int k = 0; k < n; k++) {
    ops[k] = sort->operands[k];
    parts[k] = n == 1 ? sort->shape : sort->shape.tuple[k];
  }
  ops[n] = iota;
  parts[n] = is;
  IrShape ts = {.type = IR_TUPLE, .ntuple = n + 1, .tuple = parts};
  IrInstr *ns = simp_add_like(c, sort, IR_OP_SORT, &ts, ops, n + 1, "sort", sort);
  fx_free(ops);
  if (!ns) return NULL;
  const char *dims = ir_attr_text(sort, "dimensions");
  if (dims) ir_attr_set_text(ns, "dimensions", dims);
  ir_attr_set_comp(ns, "to_apply", nc);
  /* what the old sort's users read: its operands' results, as one value or a tuple */
  IrInstr **elems = fx_malloc(sizeof *elems * (size_t)n);
  if (!elems) return NULL;
  for (int k = 0; k < n && ok; k++) {
    elems[k] = simp_add_like(c, sort, IR_OP_GET_TUPLE_ELEMENT, &parts[k], &ns, 1, "get-tuple-element", sort);
    if (elems[k]) ir_attr_set_int(elems[k], "index", k);
    else ok = false;
  }
  IrInstr *repl = !ok ? NULL : n == 1 ? elems[0] : simp_add_like(c, sort, IR_OP_TUPLE, &sort->shape, elems, n, "tuple", sort);
  fx_free(elems);
  if (!repl) return NULL;
  simp_replace(sort, repl);
  *cmp = nc;
  return ns;
}

/* The comparator breaks ties by parameters 2*ti and 2*ti+1: a copy of its instructions with each
 * pair of parameters swapped computes cmp(b, a); where cmp(a, b) == cmp(b, a) the iota decides. */
static bool add_tie_breaker(IrComputation *cmp, int ti) {
  IrInstr *old_root = cmp->root;
  int n = cmp->ninstrs;
  if (!old_root || 2 * ti + 1 >= cmp->nparams || !cmp->params[2 * ti] || !cmp->params[2 * ti + 1]) return false;
  IrInstr **orig = fx_malloc(sizeof *orig * (size_t)(n ? n : 1));
  if (!orig) return false;
  memcpy(orig, cmp->instrs, sizeof *orig * (size_t)n);
  for (int k = 0; k < n; k++) orig[k]->aux = NULL;
  for (int p = 0; p < cmp->nparams; p++)
    if (cmp->params[p] && (p ^ 1) < cmp->nparams) cmp->params[p]->aux = cmp->params[p ^ 1];
  bool ok = true;
  IrInstr *cloned_root = NULL;
  for (int k = 0; k < n && ok; k++) {
    IrInstr *x = orig[k];
    if (x->dead || x->noperands == 0) continue;
    IrInstr *small[IR_REMAP_SMALL], **ops = x->noperands <= IR_REMAP_SMALL ? small : fx_malloc(sizeof *ops * (size_t)x->noperands);
    if (!ops) {
      ok = false;
      break;
    }
    for (int q = 0; q < x->noperands; q++) ops[q] = x->operands[q]->aux ? x->operands[q]->aux : x->operands[q];
    IrInstr *y = ir_instr_copy(cmp, x, ops, x->name);
    if (ops != small) fx_free(ops);
    if (!y) ok = false;
    else x->aux = y;
    if (x == old_root) cloned_root = y;
  }
  for (int k = 0; k < n; k++) orig[k]->aux = NULL;
  fx_free(orig);
  if (!ok || !cloned_root) return false;
  IrShape ps = ir_shape_scalar(IR_PRED);
  IrInstr *same_ops[2] = {old_root, cloned_root};
  IrInstr *same = ir_instr_new(cmp, IR_OP_COMPARE, &ps, same_ops, 2, "compare");
  IrInstr *tie_ops[2] = {cmp->params[2 * ti], cmp->params[2 * ti + 1]};
  IrInstr *tie = same ? ir_instr_new(cmp, IR_OP_COMPARE, &ps, tie_ops, 2, "compare") : NULL;
  if (!tie) return false;
  ir_attr_set_text(same, "direction", "EQ");
  ir_attr_set_text(tie, "direction", "LT");
  IrInstr *sel_ops[3] = {same, tie, old_root};
  IrInstr *root = ir_instr_new(cmp, IR_OP_SELECT, &ps, sel_ops, 3, "select");
  if (!root) return false;
  ir_set_root(cmp, root);
  return true;
}

static bool expand(IrInstr *sort, PassContext *cx, void *arg, bool *changed) {
  (void)arg;
  const char *st = ir_attr_text(sort, "is_stable");
  if (!st || strcmp(st, "true") != 0 || sort->noperands < 1) return true;
  IrComputation *cmp = ir_attr_comp(sort, "to_apply");
  int64_t dim = -1;
  const IrShape *s0 = &sort->operands[0]->shape;
  if (!cmp || !cmp->root || ir_attr_dims(sort, "dimensions", &dim, 1) != 1 || dim < 0 || dim >= s0->rank) return true;
  char sname[256];
  snprintf(sname, sizeof sname, "%s", sort->name);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = sname};
  int ti = iota_operand(sort, dim);
  IrInstr *target = sort, *iota = NULL;
  if (ti < 0) {
    if (s0->dims[dim] > INT32_MAX) {
      pass_emit(cx->sink, &d, "%s stays marked stable: its %lld elements along dimension %lld are more than an s32 iota "
                "can number (XLA leaves such a sort unimplemented)", sname, (long long)s0->dims[dim], (long long)dim);
      return true;
    }
    ti = sort->noperands;
    if (!(target = add_iota(sort, dim, &cmp, &iota))) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  } else {
    iota = sort->operands[ti];
    if (simp_callers(sort->parent->module, cmp) > 1) {
      IrComputation *own = simp_clone_computation(sort->parent->module, cmp);
      if (!own) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      ir_attr_set_comp(sort, "to_apply", own);
      cmp = own;
    }
    ir_attr_remove(sort, "is_stable");
  }
  if (!add_tie_breaker(cmp, ti)) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  d.consumer = d.result = target->name;
  d.accepted = true;
  if (target != sort)
    pass_emit(cx->sink, &d,
              "%s becomes %s, sorting %s too: XLA's sort kernel is not stable, so a sort marked is_stable gets an s32 "
              "iota along the sorted dimension and a comparator (%s) that orders equal keys by it",
              sname, target->name, iota->name, cmp->name);
  else
    pass_emit(cx->sink, &d,
              "%s is made stable with its own operand %s: XLA's sort kernel is not stable, so the comparator (%s) orders "
              "equal keys by that iota",
              sname, iota->name, cmp->name);
  *changed = true;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  return simp_rewrite_each(m, cx, IR_OP_SORT, expand, NULL, false, changed);
}

const Pass pass_stable_sort_expander = {
    "stable-sort-expander",
    "a sort marked is_stable gets an iota operand that breaks ties in its comparator (XLA's StableSortExpander)",
    run,
};

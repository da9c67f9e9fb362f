/* pass_call_inliner.c — replaces every `call` by a copy of the computation it calls (XLA's
 * CallInliner), so the fusion passes see one flat graph instead of opaque calls (JAX's
 * closed_call, the .fx language's functions).
 *
 * Computations are visited callees first, so a call inside a callee is inlined before the
 * callee is copied. The copies keep the callee's instruction names as their base (`t` in f
 * becomes `t.41` in the caller: a removed name is never reused) and the callee's locations; the
 * call's users then read the copy of the callee's root. A computation no longer called from
 * anywhere is removed. Each inlining is reported:
 * "inlined call.9 (to_apply=f, 3 instructions) into main"; when the callee has that one call
 * (JAX's jitted functions), so is each copy that took another name than its original
 * ("rename t => t.41"), so that `why t` finds t.41 (a function called four times has four copies
 * of t, none of them the answer). */
#include <string.h>

#include "passes.h"
#include "simplify.h"

IrInstr *simp_inline(IrInstr *call, IrComputation *c, IrInstr *const *args, int nargs, int *copied) {
  return simp_inline_mapped(call, c, args, nargs, copied, NULL);
}

void simp_report_renames(PassContext *cx, const IrComputation *c, IrInstr *const *copies, const char *how) {
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *src = c->instrs[k], *dst = copies[k];
    if (!dst || strcmp(src->name, dst->name) == 0) continue;
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rename", .producer = src->name,
                      .result = dst->name, .accepted = true};
    if (src->op == IR_OP_PARAMETER)
      pass_emit(cx->sink, &d, "parameter %s of %s is %s in %s, the value passed in: %s", src->name, c->name, dst->name,
                dst->parent->name, how);
    else
      pass_emit(cx->sink, &d, "%s (in %s) is %s in %s: %s", src->name, c->name, dst->name, dst->parent->name, how);
  }
}

IrInstr *simp_inline_mapped(IrInstr *call, IrComputation *c, IrInstr *const *args, int nargs, int *copied,
                            IrInstr **copies) {
  IrComputation *caller = call->parent;
  /* Map callee instruction -> caller instruction through aux (restored afterwards). */
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  for (int p = 0; p < c->nparams; p++)
    if (c->params[p] && p < nargs) c->params[p]->aux = args[p];
  IrInstr *root = NULL;
  IrInstr **ops = NULL;
  int ops_cap = 0;
  bool ok = true;
  for (int k = 0; k < c->ninstrs && ok; k++) {
    IrInstr *src = c->instrs[k];
    if (src->op == IR_OP_PARAMETER) continue;
    if (src->noperands > ops_cap) {
      IrInstr **g = fx_realloc(ops, sizeof(IrInstr *) * (size_t)src->noperands);
      if (!g) {
        ok = false;
        break;
      }
      ops = g;
      ops_cap = src->noperands;
    }
    for (int o = 0; o < src->noperands; o++) {
      IrInstr *mapped = src->operands[o] ? src->operands[o]->aux : NULL;
      if (!mapped) ok = false;
      ops[o] = mapped;
    }
    if (!ok) break;
    IrInstr *dst = ir_instr_new_before(caller, call, src->op, &src->shape, ops, src->noperands, src->name);
    if (!dst) {
      ok = false;
      break;
    }
    dst->literal = src->literal;
    dst->loc = src->loc;
    for (int a = 0; a < src->nattrs; a++) {
      const IrAttr *at = &src->attrs[a];
      if (at->kind == IR_ATTR_TEXT) ir_attr_set_text(dst, at->key, at->text);
      else ir_attr_set_comps(dst, at->key, at->comps, at->ncomps, at->comps_braced);
    }
    if (dst->nattrs != src->nattrs) ok = false;
    src->aux = dst;
    (*copied)++;
  }
  if (ok && c->root) root = c->root->aux;
  for (int k = 0; k < c->ninstrs; k++) {
    if (copies) copies[k] = ok ? c->instrs[k]->aux : NULL; /* (a parameter: the argument it reads) */
    c->instrs[k]->aux = NULL;
  }
  fx_free(ops);
  return ok ? root : NULL;
}

static bool run_call_inliner(IrModule *m, PassContext *cx, bool *changed) {
  int inlined = 0;
  /* the instructions that name each computation: only the copy of a computation used once is an
     unambiguous successor of its names */
  int *uses = simp_count_callers(m);
  if (!uses) return fx_error_set(cx->err, NULL, 0, 0, "call-inliner: out of memory");
  IrComputation **order = fx_malloc(sizeof(IrComputation *) * (size_t)(m->ncomps + 1));
  if (!order) {
    fx_free(uses);
    return fx_error_set(cx->err, NULL, 0, 0, "call-inliner: out of memory");
  }
  int n = ir_module_postorder(m, order, m->ncomps + 1);
  if (n > m->ncomps) n = m->ncomps;
  for (int ci = 0; ci < n; ci++) {
    IrComputation *comp = order[ci];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *call = comp->instrs[k];
      if (call->dead || call->op != IR_OP_CALL) continue;
      IrComputation *callee = ir_attr_comp(call, "to_apply");
      if (!callee || callee == comp || callee->nparams != call->noperands || !callee->root) continue;
      if (!ir_shape_equal(&callee->root->shape, &call->shape)) continue;
      int copied = 0;
      int n0 = comp->ninstrs;
      IrInstr **copies = fx_calloc((size_t)callee->ninstrs + 1, sizeof *copies);
      IrInstr *root = copies ? simp_inline_mapped(call, callee, call->operands, call->noperands, &copied, copies) : NULL;
      if (!root) {
        fx_free(copies);
        fx_free(order);
        fx_free(uses);
        return fx_error_set(cx->err, NULL, 0, 0, "call-inliner: could not copy %s into %s (out of memory)", callee->name,
                            comp->name);
      }
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "inline", .producer = callee->name,
                        .consumer = call->name, .result = root->name, .accepted = true};
      pass_metric(&d, "instructions", copied);
      pass_emit(cx->sink, &d, "inlined %s (to_apply=%s, %d instruction%s) into %s", call->name, callee->name, copied,
                copied == 1 ? "" : "s", comp->name);
      if (callee->id >= 0 && callee->id <= m->next_id && uses[callee->id] == 1) {
        char how[320];
        snprintf(how, sizeof how, "%s was inlined there (%s)", callee->name, call->name);
        simp_report_renames(cx, callee, copies, how);
      }
      fx_free(copies);
      ir_replace_all_uses(call, root);
      for (int o = 0; o < call->noperands; o++) ir_set_operand(call, o, NULL);
      ir_instr_remove(call);
      inlined++;
      /* Continue after the copies (they hold no calls: the callee was visited first). */
      k += comp->ninstrs - n0;
    }
  }
  fx_free(order);
  fx_free(uses);
  if (inlined) {
    int before = m->ncomps;
    IrComputation **old = fx_malloc(sizeof(IrComputation *) * (size_t)(before + 1));
    if (!old) return fx_error_set(cx->err, NULL, 0, 0, "call-inliner: out of memory");
    memcpy(old, m->comps, sizeof(IrComputation *) * (size_t)before);
    ir_module_remove_unreachable(m);
    for (int k = 0; k < before; k++) {
      bool kept = false;
      for (int j = 0; j < m->ncomps && !kept; j++) kept = m->comps[j] == old[k];
      if (kept) continue;
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = old[k]->name,
                        .accepted = true};
      pass_emit(cx->sink, &d, "removed computation %s: every call to it was inlined", old[k]->name);
    }
    fx_free(old);
  }
  *changed = inlined > 0;
  return true;
}

const Pass pass_call_inliner = {"call-inliner", "replaces each call by a copy of the computation it calls",
                                run_call_inliner};

/* pass_dce.c — dead code elimination: instructions nobody uses, computations nobody calls.
 *
 * First, as XLA's HloDCE does, a multi-output fusion stops writing the outputs nobody reads
 * (prune_fusion_outputs). Then it runs over every computation (fused bodies too). An instruction is dead when it has no users,
 * is not its computation's root or a parameter, and has no side effect (a side-effecting
 * custom-call, infeed/outfeed, send/recv, or a while/call/conditional whose callee has one).
 * Then computations no longer reachable from the entry are dropped. Every removal is reported:
 * "dce: removed add.7 (no users)".
 *
 * fusion-dce is the same pass where XLA's fusion pipeline runs HloDCE after fusion (FusionPipeline
 * in fusion_pipeline.cc: after priority-fusion and after multi_output_fusion): a fusion nobody
 * reads, made from dead code, is no kernel. It has its own name so that switching off the dce
 * that runs before fusion (`set pass dce off`) leaves this one on. */
#include <string.h>

#include "passes.h"

static bool comp_has_side_effect(const IrComputation *c, int depth);

static bool instr_has_side_effect(const IrInstr *i, int depth) {
  switch (i->op) {
  case IR_OP_OUTFEED:
  case IR_OP_INFEED:
  case IR_OP_SEND:
  case IR_OP_SEND_DONE:
  case IR_OP_RECV:
  case IR_OP_RECV_DONE:
  case IR_OP_AFTER_ALL:
  case IR_OP_RNG_GET_AND_UPDATE_STATE:
  case IR_OP_ALL_REDUCE_START:
  case IR_OP_ALL_REDUCE_DONE:
  case IR_OP_ALL_GATHER_START:
  case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_START:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
    return true;
  case IR_OP_CUSTOM_CALL: {
    const char *se = ir_attr_text(i, "custom_call_has_side_effect");
    return se && strcmp(se, "true") == 0;
  }
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL:
  case IR_OP_ASYNC_START: {
    if (depth > 32) return true; /* absurdly deep call chains: keep rather than guess */
    IrComputation *callees[64];
    int n = ir_called_computations(i, callees, 64);
    if (n > 64) return true;
    for (int k = 0; k < n; k++)
      if (callees[k] && comp_has_side_effect(callees[k], depth + 1)) return true;
    return false;
  }
  default:
    return false;
  }
}

static bool comp_has_side_effect(const IrComputation *c, int depth) {
  for (int k = 0; k < c->ninstrs; k++)
    if (instr_has_side_effect(c->instrs[k], depth)) return true;
  return false;
}

/* Unlinks dead instructions of c (marks them, drops their operand edges) in one reverse sweep, so
 * operands that die as a result are caught too, then compacts the order once. Appends the removed
 * instructions to *out. Returns the count, or -1 when out of memory. */
static int sweep(IrComputation *c, IrInstr ***out, int *nout, int *cap) {
  int removed = 0;
  for (int k = c->ninstrs - 1; k >= 0; k--) {
    IrInstr *i = c->instrs[k];
    if (i->dead || i->nusers > 0 || i == c->root || i->op == IR_OP_PARAMETER) continue;
    if (instr_has_side_effect(i, 0)) continue;
    for (int o = 0; o < i->noperands; o++)
      if (i->operands[o]) ir_set_operand(i, o, NULL);
    i->dead = true;
    if (*nout >= *cap) {
      int ncap = *cap ? *cap * 2 : 64;
      IrInstr **grown = fx_realloc(*out, sizeof(IrInstr *) * (size_t)ncap);
      if (!grown) return -1;
      *out = grown;
      *cap = ncap;
    }
    (*out)[(*nout)++] = i;
    removed++;
  }
  if (removed) {
    int w = 0;
    for (int k = 0; k < c->ninstrs; k++)
      if (!c->instrs[k]->dead) c->instrs[w++] = c->instrs[k];
    c->ninstrs = w;
  }
  return removed;
}

/* A multi-output fusion whose outputs are read only through get-tuple-elements, some of which
 * nobody reads, writes only the ones that are read (XLA's RemoveMultiOutputFusionsUnusedOutputs,
 * which HloDCE runs on every fused computation first): the fused root tuple keeps the read outputs
 * in their order, the readers' indices follow, and one output left makes the fusion an array whose
 * readers read it directly. The outputs' dead instructions then go with the sweep. Not for a
 * kCustom fusion, one that aliases outputs to operands, one with control dependencies or a root.
 * Returns how many fusions changed, or -1 when out of memory. */
static int prune_fusion_outputs(IrModule *m, PassContext *cx) {
  int pruned = 0;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *fc = m->comps[c];
    IrInstr *f = fc->fusion_instr, *root = fc->root;
    if (!f || f->dead || !root || root->op != IR_OP_TUPLE || f->is_root || f->nusers == 0) continue;
    const char *kind = ir_attr_text(f, "kind");
    if ((kind && strcmp(kind, "kCustom") == 0) || ir_attr_text(f, "output_to_operand_aliasing") ||
        ir_attr_text(f, "control-predecessors") || ir_attr_text(root, "sharding"))
      continue;
    if (f->shape.type != IR_TUPLE || f->shape.ntuple != root->noperands) continue;
    int n = root->noperands;
    bool *used = fx_calloc((size_t)n + 1, sizeof *used);
    IrInstr **gtes = fx_malloc(sizeof(IrInstr *) * ((size_t)f->nusers + 1));
    if (!used || !gtes) {
      fx_free(used);
      fx_free(gtes);
      return -1;
    }
    int ng = 0;
    bool all_gte = true;
    for (int u = 0; u < f->nusers && all_gte; u++) {
      IrInstr *g = f->users[u];
      int64_t idx;
      all_gte = g->op == IR_OP_GET_TUPLE_ELEMENT && ir_attr_int(g, "index", &idx) && idx >= 0 && idx < n;
      if (all_gte) {
        used[idx] = true;
        bool seen = false; /* a reader that reads f twice is one reader */
        for (int q = 0; q < ng && !seen; q++) seen = gtes[q] == g;
        if (!seen) gtes[ng++] = g;
      }
    }
    int nused = 0;
    for (int k = 0; all_gte && k < n; k++) {
      if (!used[k] && root->operands[k] && instr_has_side_effect(root->operands[k], 0)) used[k] = true;
      nused += used[k];
    }
    if (!all_gte || nused == n || nused == 0) {
      fx_free(used);
      fx_free(gtes);
      continue;
    }
    int *rank = fx_malloc(sizeof(int) * (size_t)n);
    IrInstr **keep = fx_malloc(sizeof(IrInstr *) * (size_t)nused);
    IrShape ts = {.type = IR_TUPLE, .ntuple = nused};
    ts.tuple = nused > 1 ? arena_alloc(&m->arena, sizeof(IrShape) * (size_t)nused) : NULL;
    bool ok = rank && keep && (nused == 1 || ts.tuple);
    for (int k = 0, r = 0; ok && k < n; k++) {
      rank[k] = used[k] ? r : -1;
      if (!used[k]) continue;
      keep[r] = root->operands[k];
      if (nused > 1) ok = ir_shape_copy(&m->arena, &ts.tuple[r], &f->shape.tuple[k]);
      r++;
    }
    IrShape one;
    if (ok && nused == 1) ok = ir_shape_copy(&m->arena, &one, &keep[0]->shape);
    IrInstr *nroot = ok && nused > 1 ? ir_instr_new(fc, IR_OP_TUPLE, &ts, keep, nused, root->name) : NULL;
    if (ok && nused > 1) ok = nroot != NULL;
    if (ok) {
      char msg[400];
      snprintf(msg, sizeof msg,
               "%s wrote %d outputs and %d %s read: it writes only %s now (%d removed)", f->name, n, nused,
               nused == 1 ? "is" : "are", nused == 1 ? "that one" : "those", n - nused);
      f->shape = nused > 1 ? ts : one;
      if (nused > 1) {
        ir_set_root(fc, nroot);
        for (int q = 0; q < ng; q++) {
          int64_t idx;
          ir_attr_int(gtes[q], "index", &idx);
          ir_attr_set_int(gtes[q], "index", rank[idx]);
        }
      } else {
        ir_set_root(fc, keep[0]);
        for (int q = 0; q < ng; q++) ir_replace_all_uses(gtes[q], f);
      }
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = f->name,
                        .accepted = true};
      pass_emit(cx->sink, &d, "%s", msg);
      pruned++;
    }
    fx_free(used);
    fx_free(gtes);
    fx_free(rank);
    fx_free(keep);
    if (!ok) return -1;
  }
  return pruned;
}

static bool run_dce(IrModule *m, PassContext *cx, bool *changed) {
  IrInstr **removed = NULL;
  int nremoved = 0, cap = 0;
  int pruned = prune_fusion_outputs(m, cx);
  if (pruned < 0) return fx_error_set(cx->err, NULL, 0, 0, "dce: out of memory");
  for (int k = 0; k < m->ncomps; k++) {
    int start = nremoved;
    if (sweep(m->comps[k], &removed, &nremoved, &cap) < 0) {
      fx_free(removed);
      return fx_error_set(cx->err, NULL, 0, 0, "dce: out of memory");
    }
    /* The sweep found them last-first; report them in program order. */
    for (int a = start, b = nremoved - 1; a < b; a++, b--) {
      IrInstr *t = removed[a];
      removed[a] = removed[b];
      removed[b] = t;
    }
  }
  for (int k = 0; k < nremoved; k++) {
    IrInstr *i = removed[k];
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove", .producer = i->name,
                      .accepted = true};
    pass_emit(cx->sink, &d, "removed %s (%s in %s): no users and no side effects", i->name,
              ir_op_name(i->op), i->parent->name);
  }
  fx_free(removed);

  /* Computations no longer reachable from the entry. */
  int ncomps_before = m->ncomps;
  IrComputation **before = fx_malloc(sizeof(IrComputation *) * (size_t)(ncomps_before + 1));
  if (!before) return fx_error_set(cx->err, NULL, 0, 0, "dce: out of memory");
  memcpy(before, m->comps, sizeof(IrComputation *) * (size_t)ncomps_before);
  int ncomps_removed = m->entry ? ir_module_remove_unreachable(m) : 0;
  if (ncomps_removed > 0) {
    for (int k = 0; k < ncomps_before; k++) {
      bool kept = false;
      for (int j = 0; j < m->ncomps && !kept; j++) kept = m->comps[j] == before[k];
      if (kept) continue;
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "remove",
                        .producer = before[k]->name, .accepted = true};
      pass_emit(cx->sink, &d, "removed computation %s (%d instructions): no longer called", before[k]->name,
                before[k]->ninstrs);
    }
  }
  fx_free(before);
  *changed = pruned > 0 || nremoved > 0 || ncomps_removed > 0;
  return true;
}

const Pass pass_dce = {"dce", "dead code elimination: removes unused instructions and computations", run_dce};
const Pass pass_fusion_dce = {"fusion-dce", "XLA's dce after fusion: removes fusions and instructions nobody uses",
                              run_dce};

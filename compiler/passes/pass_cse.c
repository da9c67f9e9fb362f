/* pass_cse.c — common subexpression elimination.
 *
 * Two instructions of one computation that compute the same thing — same opcode, same operands,
 * same attributes (metadata aside), same shape and layout, same literal for constants, and called
 * computations that are structurally identical — become one: the later one's users move to the
 * earlier one and the later one is removed. Operands of commutative ops (add, multiply, maximum,
 * minimum, and, or, xor, compare EQ/NE) match in either order. Never merged: parameters, ops
 * with side effects, random numbers (rng, rng-bit-generator), control flow and collectives.
 * Each merge is reported: "cse: replaced multiply.9 by multiply.4".
 *
 * In the priority pipeline (today's XLA: HloCSE with HloComputation equality as eq_computations)
 * loops, calls and conditionals are merged too when nothing they call has a side effect and what
 * they call is structurally the same computation, of any size: JAX's searchsorted lowered twenty
 * times over the same operands is twenty while loops with twenty copies of one body, and XLA
 * keeps one. As in XLA's HloCSE, an iota is never merged itself (nor is anything else without
 * operands but constants), but two iotas of one shape and dimension count as the same operand
 * of their users. The classic pipeline keeps the paper's behaviour.
 *
 * fusion-cse is the same search limited to fused computations, as XLA's fusion pipeline runs it
 * after priority-fusion and after multi_output_fusion (FusionPipeline in fusion_pipeline.cc:
 * HloCSE, layout-sensitive, with should_eliminate_computation = HloComputation::
 * IsFusionComputation): a producer fused into one kernel once for each of its users there becomes
 * one instruction again; the kernels themselves are left as they are. */
#include <stdint.h>
#include <string.h>

#include "passes.h"

static bool comps_identical(const IrComputation *a, const IrComputation *b, int depth, bool current);

static bool shape_identical(const IrShape *a, const IrShape *b) {
  if (a->type != b->type) return false;
  if (a->type == IR_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int k = 0; k < a->ntuple; k++)
      if (!shape_identical(&a->tuple[k], &b->tuple[k])) return false;
    return true;
  }
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++) {
    if (a->dims[d] != b->dims[d]) return false;
    if ((a->dynamic ? a->dynamic[d] : false) != (b->dynamic ? b->dynamic[d] : false)) return false;
  }
  /* No layout means the default one. */
  for (int d = 0; d < a->rank; d++) {
    int la = a->has_layout ? a->minor_to_major[d] : a->rank - 1 - d;
    int lb = b->has_layout ? b->minor_to_major[d] : b->rank - 1 - d;
    if (la != lb) return false;
  }
  const char *ea = a->has_layout ? a->layout_extra : NULL, *eb = b->has_layout ? b->layout_extra : NULL;
  return strcmp(ea ? ea : "", eb ? eb : "") == 0;
}

static bool is_commutative(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_ADD:
  case IR_OP_MULTIPLY:
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
  case IR_OP_AND:
  case IR_OP_OR:
  case IR_OP_XOR:
    return true;
  case IR_OP_COMPARE: {
    const char *dir = ir_compare_direction(i);
    return dir && (strcmp(dir, "EQ") == 0 || strcmp(dir, "NE") == 0);
  }
  default:
    return false;
  }
}

static bool has_side_effect(const IrInstr *i, int depth);

/* Whether anything c runs, or anything it calls, has a side effect (XLA's
 * HloComputation::HasSideEffect). Deep call chains count as having one. */
static bool comp_has_side_effect(const IrComputation *c, int depth) {
  if (!c || depth > 32) return true;
  for (int k = 0; k < c->ninstrs; k++)
    if (has_side_effect(c->instrs[k], depth)) return true;
  return false;
}

static bool has_side_effect(const IrInstr *i, int depth) {
  switch (i->op) {
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL: {
    IrComputation *callees[64];
    int n = ir_called_computations(i, callees, 64);
    if (n > 64) return true;
    for (int k = 0; k < n; k++)
      if (comp_has_side_effect(callees[k], depth + 1)) return true;
    return false;
  }
  case IR_OP_CUSTOM_CALL: {
    const char *se = ir_attr_text(i, "custom_call_has_side_effect");
    return se && strcmp(se, "true") == 0;
  }
  default:
    break;
  }
  const IrOpInfo *info = ir_op_info(i->op);
  if (info->category == IR_CAT_COLLECTIVE) return true;
  switch (i->op) {
  case IR_OP_RNG:
  case IR_OP_RNG_GET_AND_UPDATE_STATE:
  case IR_OP_AFTER_ALL:
  case IR_OP_INFEED:
  case IR_OP_OUTFEED:
  case IR_OP_SEND:
  case IR_OP_SEND_DONE:
  case IR_OP_RECV:
  case IR_OP_RECV_DONE:
    return true;
  default:
    return false;
  }
}

static bool eligible(const IrInstr *i, bool current) {
  if (current && (i->op == IR_OP_WHILE || i->op == IR_OP_CALL || i->op == IR_OP_CONDITIONAL))
    return !has_side_effect(i, 0);
  if (current && i->op == IR_OP_IOTA) return false;
  switch (i->op) {
  case IR_OP_PARAMETER:
  case IR_OP_RNG:
  case IR_OP_RNG_BIT_GENERATOR:
  case IR_OP_RNG_GET_AND_UPDATE_STATE:
  case IR_OP_AFTER_ALL:
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL:
  case IR_OP_FUSION:
  case IR_OP_OPT_BARRIER:
  case IR_OP_ADD_DEPENDENCY:
  case IR_OP_DOMAIN:
  case IR_OP_PARTITION_ID:
  case IR_OP_REPLICA_ID:
    return false;
  case IR_OP_CUSTOM_CALL: {
    const char *se = ir_attr_text(i, "custom_call_has_side_effect");
    return !(se && strcmp(se, "true") == 0);
  }
  case IR_OP_CONSTANT:
    return i->literal && !i->literal->elided && i->literal->text;
  default:
    break;
  }
  const IrOpInfo *info = ir_op_info(i->op);
  if (info->category == IR_CAT_COLLECTIVE) return false;
  if (info->category == IR_CAT_CONTROL && i->op != IR_OP_MAP) return false;
  return true;
}

/* Attributes other than metadata (which names the source, not the value). */
static bool ignored_attr(const IrAttr *a) { return strcmp(a->key, "metadata") == 0; }

static bool attrs_identical(const IrInstr *a, const IrInstr *b, int depth, bool current) {
  int na = 0, nb = 0;
  for (int k = 0; k < a->nattrs; k++) na += !ignored_attr(&a->attrs[k]);
  for (int k = 0; k < b->nattrs; k++) nb += !ignored_attr(&b->attrs[k]);
  if (na != nb) return false;
  for (int k = 0; k < a->nattrs; k++) {
    const IrAttr *x = &a->attrs[k];
    if (ignored_attr(x)) continue;
    const IrAttr *y = ir_attr_get(b, x->key);
    if (!y || y->kind != x->kind) return false;
    if (x->kind == IR_ATTR_TEXT) {
      if (strcmp(x->text ? x->text : "", y->text ? y->text : "") != 0) return false;
    } else {
      if (x->ncomps != y->ncomps) return false;
      for (int j = 0; j < x->ncomps; j++)
        if (!comps_identical(x->comps[j], y->comps[j], depth + 1, current)) return false;
    }
  }
  return true;
}

static int index_in(const IrComputation *c, const IrInstr *i) {
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k] == i) return k;
  return -1;
}

/* An instruction's position in its computation: through aux (set by number_instrs) in today's
 * mode, by a search otherwise. */
static int position(const IrComputation *c, const IrInstr *i, bool current) {
  if (!current) return index_in(c, i);
  return i && i->parent == c ? (int)(intptr_t)i->aux - 1 : -1;
}

/* Numbers c's instructions in aux (position + 1); the pass clears every aux when it ends. */
static void number_instrs(const IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = (void *)(intptr_t)(k + 1);
}

/* Structural equality of two called computations (reduce's to_apply and the like): same
 * instructions in the same order with the same operand positions. The classic pipeline compares
 * large ones (over 64 instructions) by identity only; today's compares any size, as XLA's
 * HloComputation equality does. */
static bool comps_identical(const IrComputation *a, const IrComputation *b, int depth, bool current) {
  if (a == b) return true;
  if (!a || !b || depth > (current ? 32 : 8) || a->ninstrs != b->ninstrs || (!current && a->ninstrs > 64) ||
      a->nparams != b->nparams)
    return false;
  if (current) {
    number_instrs(a);
    number_instrs(b);
  }
  if (position(a, a->root, current) != position(b, b->root, current)) return false;
  for (int k = 0; k < a->ninstrs; k++) {
    const IrInstr *x = a->instrs[k], *y = b->instrs[k];
    if (x->op != y->op || x->noperands != y->noperands || !shape_identical(&x->shape, &y->shape)) return false;
    if (x->op == IR_OP_PARAMETER && x->param_number != y->param_number) return false;
    if (x->op == IR_OP_CONSTANT &&
        (!x->literal || !y->literal || strcmp(x->literal->text ? x->literal->text : "",
                                              y->literal->text ? y->literal->text : "") != 0))
      return false;
    for (int o = 0; o < x->noperands; o++)
      if (position(a, x->operands[o], current) != position(b, y->operands[o], current)) return false;
    if (!attrs_identical(x, y, depth, current)) return false;
  }
  return true;
}

/* Today's XLA never merges an iota itself (HloCSE skips instructions without operands), but
 * counts two iotas of one shape and dimension as the same operand (its eq_instructions). */
static bool same_iota(const IrInstr *x, const IrInstr *y) {
  int64_t dx, dy;
  return x && y && x->op == IR_OP_IOTA && y->op == IR_OP_IOTA && ir_attr_int(x, "iota_dimension", &dx) &&
         ir_attr_int(y, "iota_dimension", &dy) && dx == dy && shape_identical(&x->shape, &y->shape);
}

static bool same_operand(const IrInstr *x, const IrInstr *y, bool current) {
  return x == y || (current && same_iota(x, y));
}

static bool identical(const IrInstr *a, const IrInstr *b, bool current) {
  if (a->op != b->op || a->noperands != b->noperands || !shape_identical(&a->shape, &b->shape)) return false;
  if (a->noperands == 2 && is_commutative(a)) {
    if (!((same_operand(a->operands[0], b->operands[0], current) && same_operand(a->operands[1], b->operands[1], current)) ||
          (same_operand(a->operands[0], b->operands[1], current) && same_operand(a->operands[1], b->operands[0], current))))
      return false;
  } else {
    for (int k = 0; k < a->noperands; k++)
      if (!same_operand(a->operands[k], b->operands[k], current)) return false;
  }
  if (a->op == IR_OP_CONSTANT && strcmp(a->literal->text, b->literal->text) != 0) return false;
  return attrs_identical(a, b, 0, current);
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

/* What an operand contributes to its user's hash: its identity, or for an iota (today's XLA) its
 * shape and dimension, so users of two equal iotas meet. */
static uint64_t operand_key(const IrInstr *x, bool current) {
  if (!x) return 0;
  if (!current || x->op != IR_OP_IOTA) return (uint64_t)x->id;
  int64_t d = 0;
  ir_attr_int(x, "iota_dimension", &d);
  uint64_t h = mix(0x9e3779b97f4a7c15ull, (uint64_t)x->shape.type);
  for (int k = 0; k < x->shape.rank; k++) h = mix(h, (uint64_t)x->shape.dims[k]);
  return mix(h, (uint64_t)d) | 1ull << 63;
}

static uint64_t hash_instr(const IrInstr *i, bool current) {
  uint64_t h = 1469598103934665603ull;
  h = mix(h, (uint64_t)i->op);
  h = mix(h, (uint64_t)i->shape.type);
  for (int d = 0; d < i->shape.rank; d++) h = mix(h, (uint64_t)i->shape.dims[d]);
  if (i->noperands == 2 && is_commutative(i)) {
    h = mix(h, operand_key(i->operands[0], current) + operand_key(i->operands[1], current));
  } else {
    for (int k = 0; k < i->noperands; k++) h = mix(h, operand_key(i->operands[k], current));
  }
  if (i->op == IR_OP_CONSTANT)
    for (const char *p = i->literal->text; *p; p++) h = mix(h, (unsigned char)*p);
  return h;
}

/* Removes a replaced instruction: it has no users left. */
static void unlink(IrInstr *i) {
  for (int o = 0; o < i->noperands; o++)
    if (i->operands[o]) ir_set_operand(i, o, NULL);
  i->dead = true;
}

/* Two equal iotas read by one instruction: it reads the first twice (HloCSE, today). The pairs
 * start at an operand that is an iota (an instruction with none, as most, costs one look at each
 * operand, not one at every pair: a tuple of 10,000 values was 50 million pairs). */
static int same_iota_operands(IrInstr *i, PassContext *cx) {
  int done = 0;
  for (int a = 0; a < i->noperands; a++) {
    if (!i->operands[a] || i->operands[a]->op != IR_OP_IOTA) continue;
    for (int b = a + 1; b < i->noperands; b++) {
      IrInstr *x = i->operands[a], *y = i->operands[b];
      if (x == y || !same_iota(x, y)) continue;
      PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = y->name,
                        .consumer = i->name, .result = x->name, .accepted = true};
      pass_emit(cx->sink, &d, "%s reads %s where it reads the same iota %s", i->name, x->name, y->name);
      ir_set_operand(i, b, x);
      if (y->nusers == 0 && y != y->parent->root) {
        unlink(y);
      }
      done++;
    }
  }
  return done;
}

static int cse_computation(IrComputation *c, PassContext *cx, bool current, bool *oom) {
  size_t cap = 16;
  while (cap < (size_t)c->ninstrs * 2) cap *= 2;
  IrInstr **table = fx_calloc(cap, sizeof *table);
  if (!table) {
    *oom = true;
    return 0;
  }
  int merged = 0;
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    if (!eligible(i, current)) continue;
    bool operands_ok = true;
    for (int o = 0; o < i->noperands; o++) operands_ok = operands_ok && i->operands[o];
    if (!operands_ok) continue;
    size_t slot = hash_instr(i, current) & (cap - 1);
    IrInstr *found = NULL;
    while (table[slot]) {
      if (identical(table[slot], i, current)) {
        found = table[slot];
        break;
      }
      slot = (slot + 1) & (cap - 1);
    }
    if (!found) {
      table[slot] = i;
      if (current) merged += same_iota_operands(i, cx);
      continue;
    }
    PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name,
                      .result = found->name, .accepted = true};
    pass_metric(&d, "users_moved", i->nusers);
    pass_emit(cx->sink, &d, "replaced %s by %s: the same %s of the same operands", i->name, found->name,
              ir_op_name(i->op));
    ir_replace_all_uses(i, found);
    unlink(i);
    merged++;
  }
  fx_free(table);
  if (merged) {
    int w = 0;
    for (int k = 0; k < c->ninstrs; k++)
      if (!c->instrs[k]->dead) c->instrs[w++] = c->instrs[k];
    c->ninstrs = w;
  }
  return merged;
}

/* current: today's rules (loops and calls of identical computations merged too). fused_only:
 * fusion-cse, the fused computations alone (XLA's fusion pipeline runs HloCSE so, after
 * priority-fusion and after multi_output_fusion); the computations themselves stay. */
static bool run(IrModule *m, PassContext *cx, bool *changed, bool current, bool fused_only) {
  int merged = 0;
  bool oom = false;
  /* Callees first (the module's printing order), so bodies are merged inside before loops that
   * call them are compared. */
  for (int k = 0; k < m->ncomps && !oom; k++)
    if (!fused_only || simp_is_fused_computation(m->comps[k])) merged += cse_computation(m->comps[k], cx, current, &oom);
  if (current)
    for (int k = 0; k < m->ncomps; k++)
      for (int j = 0; j < m->comps[k]->ninstrs; j++) m->comps[k]->instrs[j]->aux = NULL;
  if (merged && current && !fused_only) ir_module_remove_unreachable(m); /* the bodies of merged loops */
  if (oom) return fx_error_set(cx->err, NULL, 0, 0, "cse: out of memory");
  *changed = merged > 0;
  return true;
}

static bool run_cse(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, false, false); }
static bool run_cse_current(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, true, false); }
static bool run_fusion_cse(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, true, true); }

const Pass pass_cse = {"cse", "common subexpression elimination: identical instructions become one", run_cse};
const Pass pass_cse_current = {"cse",
                               "common subexpression elimination: identical instructions become one, loops, calls "
                               "and conditionals of identical computations too",
                               run_cse_current};
const Pass pass_fusion_cse = {"fusion-cse",
                              "XLA's cse after fusion: identical instructions inside one fused computation become one",
                              run_fusion_cse};

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
 * fusion-cse is the same search limited to fused computations, as XLA's fusion pipeline runs it
 * after priority-fusion and after multi_output_fusion (FusionPipeline in fusion_pipeline.cc:
 * HloCSE, layout-sensitive, with should_eliminate_computation = HloComputation::
 * IsFusionComputation): identical instructions inside one kernel become one, the kernels
 * themselves are left as they are. */
#include <string.h>

#include "passes.h"

static bool comps_identical(const IrComputation *a, const IrComputation *b, int depth);

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

static bool eligible(const IrInstr *i) {
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

static bool attrs_identical(const IrInstr *a, const IrInstr *b, int depth) {
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
        if (!comps_identical(x->comps[j], y->comps[j], depth + 1)) return false;
    }
  }
  return true;
}

static int index_in(const IrComputation *c, const IrInstr *i) {
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k] == i) return k;
  return -1;
}

/* Structural equality of two called computations (reduce's to_apply and the like): same
 * instructions in the same order with the same operand positions. Large ones compare by
 * identity only. */
static bool comps_identical(const IrComputation *a, const IrComputation *b, int depth) {
  if (a == b) return true;
  if (!a || !b || depth > 8 || a->ninstrs != b->ninstrs || a->ninstrs > 64 || a->nparams != b->nparams)
    return false;
  if (index_in(a, a->root) != index_in(b, b->root)) return false;
  for (int k = 0; k < a->ninstrs; k++) {
    const IrInstr *x = a->instrs[k], *y = b->instrs[k];
    if (x->op != y->op || x->noperands != y->noperands || !shape_identical(&x->shape, &y->shape)) return false;
    if (x->op == IR_OP_PARAMETER && x->param_number != y->param_number) return false;
    if (x->op == IR_OP_CONSTANT &&
        (!x->literal || !y->literal || strcmp(x->literal->text ? x->literal->text : "",
                                              y->literal->text ? y->literal->text : "") != 0))
      return false;
    for (int o = 0; o < x->noperands; o++)
      if (index_in(a, x->operands[o]) != index_in(b, y->operands[o])) return false;
    if (!attrs_identical(x, y, depth)) return false;
  }
  return true;
}

static bool identical(const IrInstr *a, const IrInstr *b) {
  if (a->op != b->op || a->noperands != b->noperands || !shape_identical(&a->shape, &b->shape)) return false;
  if (a->noperands == 2 && is_commutative(a)) {
    if (!((a->operands[0] == b->operands[0] && a->operands[1] == b->operands[1]) ||
          (a->operands[0] == b->operands[1] && a->operands[1] == b->operands[0])))
      return false;
  } else {
    for (int k = 0; k < a->noperands; k++)
      if (a->operands[k] != b->operands[k]) return false;
  }
  if (a->op == IR_OP_CONSTANT && strcmp(a->literal->text, b->literal->text) != 0) return false;
  return attrs_identical(a, b, 0);
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

static uint64_t hash_instr(const IrInstr *i) {
  uint64_t h = 1469598103934665603ull;
  h = mix(h, (uint64_t)i->op);
  h = mix(h, (uint64_t)i->shape.type);
  for (int d = 0; d < i->shape.rank; d++) h = mix(h, (uint64_t)i->shape.dims[d]);
  if (i->noperands == 2 && is_commutative(i)) {
    h = mix(h, (uint64_t)i->operands[0]->id + (uint64_t)i->operands[1]->id);
  } else {
    for (int k = 0; k < i->noperands; k++) h = mix(h, i->operands[k] ? (uint64_t)i->operands[k]->id : 0);
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

static int cse_computation(IrComputation *c, PassContext *cx, bool *oom) {
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
    if (!eligible(i)) continue;
    bool operands_ok = true;
    for (int o = 0; o < i->noperands; o++) operands_ok = operands_ok && i->operands[o];
    if (!operands_ok) continue;
    size_t slot = hash_instr(i) & (cap - 1);
    IrInstr *found = NULL;
    while (table[slot]) {
      if (identical(table[slot], i)) {
        found = table[slot];
        break;
      }
      slot = (slot + 1) & (cap - 1);
    }
    if (!found) {
      table[slot] = i;
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

static bool cse_module(IrModule *m, PassContext *cx, bool *changed, bool fused_only) {
  int merged = 0;
  bool oom = false;
  for (int k = 0; k < m->ncomps && !oom; k++)
    if (!fused_only || m->comps[k]->fusion_instr) merged += cse_computation(m->comps[k], cx, &oom);
  if (oom) return fx_error_set(cx->err, NULL, 0, 0, "cse: out of memory");
  *changed = merged > 0;
  return true;
}

static bool run_cse(IrModule *m, PassContext *cx, bool *changed) { return cse_module(m, cx, changed, false); }
static bool run_fusion_cse(IrModule *m, PassContext *cx, bool *changed) { return cse_module(m, cx, changed, true); }

const Pass pass_cse = {"cse", "common subexpression elimination: identical instructions become one", run_cse};
const Pass pass_fusion_cse = {"fusion-cse",
                              "XLA's cse after fusion: identical instructions inside one fused computation become one",
                              run_fusion_cse};

/* pass_reshape_mover.c — reshape-mover: reshapes and transposes move below the elementwise
 * operations that read them (XLA's ReshapeMover, in XLA:GPU's simplification pipeline, with
 * reshape_of_1d_broadcast_is_cheap as XLA:GPU sets it).
 *
 * An elementwise operation whose operands are equivalent rearranges (the same reshape of
 * same-shaped values, or the same transpose) or values that trivially take the inverse rearrange
 * (constants, a broadcast of a scalar or of a vector, a broadcast a transpose keeps in order)
 * runs on the values before the rearrange, and its result is rearranged once:
 *
 *   cos(reshape(slice(q)))            ->  reshape(cos(slice(q)))
 *   add(reshape(x), constant)         ->  reshape(add(x, reshape'(constant)))
 *
 * A rearrange moves only when every user of it moves too (XLA's TryReshapeMoveOnCandidates), so
 * no value is rearranged twice. What this buys: the elementwise chain after a squeeze or a
 * transpose lines up with what it reads, so slice-sinker can merge the same operation on slices
 * of one tensor (JAX's `cos(q[i])` for each i) and fusion sees one shape. The inverse rearranges
 * of operands are new instructions that algsimp and constant folding fold. Each move is reported:
 * "cos.35 now runs before the reshape squeeze.171 (on f32[1]) and reshape.7 reshapes its result".
 * Runs in the priority pipeline only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

static bool is_rearrange(const IrInstr *i) {
  return (i->op == IR_OP_RESHAPE || i->op == IR_OP_TRANSPOSE) && i->noperands == 1 && i->operands[0];
}

static bool is_elementwise(const IrInstr *i) {
  return ir_op_is_elementwise(i->op) && i->op != IR_OP_BITCAST_CONVERT && i->noperands > 0 && ir_shape_is_array(&i->shape);
}

static int perm_of(const IrInstr *t, int64_t *p) { return ir_attr_dims(t, "dimensions", p, IR_MAX_RANK); }

static bool identity(const int64_t *p, int n) {
  for (int k = 0; k < n; k++)
    if (p[k] != k) return false;
  return true;
}

static bool sorted(const int64_t *v, int n) {
  for (int k = 1; k < n; k++)
    if (v[k] < v[k - 1]) return false;
  return true;
}

/* AreEquivalentRearranges. */
static bool equivalent(const IrInstr *a, const IrInstr *b) {
  if (a->op != b->op || !ir_shape_same_dims(&a->shape, &b->shape)) return false;
  if (a->op == IR_OP_TRANSPOSE) {
    int64_t p[IR_MAX_RANK], q[IR_MAX_RANK];
    int n = perm_of(a, p);
    return n >= 0 && n == perm_of(b, q) && memcmp(p, q, sizeof(int64_t) * (size_t)n) == 0;
  }
  return ir_shape_same_dims(&a->operands[0]->shape, &b->operands[0]->shape);
}

/* Dimensions of size greater than 1 (XLA's TrueNumDimensions). */
static int true_rank(const IrShape *s) {
  int n = 0;
  for (int d = 0; d < s->rank; d++) n += s->dims[d] > 1;
  return n;
}

/* CanTriviallyRearrange: whether x can take the inverse of rearrange r without a real move. */
static bool trivially(const IrInstr *x, const IrInstr *r) {
  if (r->op == IR_OP_RESHAPE && ir_shape_equal(&r->shape, &r->operands[0]->shape)) return true;
  int64_t p[IR_MAX_RANK];
  int n = r->op == IR_OP_TRANSPOSE ? perm_of(r, p) : 0;
  if (r->op == IR_OP_TRANSPOSE && n >= 0 && identity(p, n)) return true;
  if (x->op == IR_OP_CONSTANT) return true;
  if (x->op == IR_OP_RNG && x->nusers == 1) return true;
  if (x->op == IR_OP_BROADCAST && x->noperands == 1 && x->operands[0]) {
    int64_t bd[IR_MAX_RANK];
    int nb = ir_attr_dims(x, "dimensions", bd, IR_MAX_RANK);
    if (nb < 0) nb = 0;
    if (!sorted(bd, nb)) return false;
    if (r->op == IR_OP_RESHAPE)
      return ir_shape_is_scalar(&x->operands[0]->shape) || true_rank(&x->operands[0]->shape) <= 1;
    if (n < 0) return false;
    /* transpose: the broadcast dimensions keep their order under the inverse permutation. */
    int64_t moved[IR_MAX_RANK];
    for (int k = 0; k < nb; k++) {
      if (bd[k] < 0 || bd[k] >= n) return false;
      moved[k] = p[bd[k]];
    }
    return sorted(moved, nb);
  }
  return false;
}

/* FirstNontrivialRearrange among i's operands. */
static const IrInstr *first_rearrange(const IrInstr *i) {
  for (int o = 0; o < i->noperands; o++) {
    const IrInstr *x = i->operands[o];
    if (x && is_rearrange(x) && !trivially(x->operands[0], x)) return x;
  }
  return NULL;
}

/* IsReshapeMoveCandidate. */
static bool candidate(const IrInstr *i) {
  if (!is_elementwise(i)) return false;
  const IrInstr *r = first_rearrange(i);
  if (!r) return false;
  for (int o = 0; o < i->noperands; o++) {
    const IrInstr *x = i->operands[o];
    if (!x) return false;
    if (is_rearrange(x) ? !equivalent(x, r) : !trivially(x, r)) return false;
  }
  return true;
}

/* ApplyInverseRearrange: x as it was before r (x is one of i's operands). */
static IrInstr *inverse(IrInstr *i, const IrInstr *r, IrInstr *x) {
  Arena *a = &i->parent->module->arena;
  if (r->op == IR_OP_RESHAPE) {
    IrShape ns;
    if (!ir_shape_copy(a, &ns, &r->operands[0]->shape)) return NULL;
    ns.type = x->shape.type;
    if (ir_shape_equal(&x->shape, &ns)) return x;
    if (x->op == IR_OP_RESHAPE && ir_shape_equal(&x->operands[0]->shape, &ns)) return x->operands[0];
    return ir_instr_new_before(i->parent, i, IR_OP_RESHAPE, &ns, &x, 1, x->name);
  }
  int64_t p[IR_MAX_RANK], inv[IR_MAX_RANK];
  int n = perm_of(r, p);
  if (n < 0) return NULL;
  if (identity(p, n)) return x;
  for (int k = 0; k < n; k++) inv[p[k]] = k;
  IrShape ns;
  if (!ir_shape_copy(a, &ns, &r->operands[0]->shape)) return NULL;
  ns.type = x->shape.type;
  /* a broadcast the transpose keeps in order is made again in the operand's order: its dimension
     bd[k] sits at p[bd[k]] before the transpose (ApplyInverseRearrange's kBroadcast case) */
  int64_t bd[IR_MAX_RANK];
  int nb = x->op == IR_OP_BROADCAST && x->noperands == 1 ? ir_attr_dims(x, "dimensions", bd, IR_MAX_RANK) : -1;
  if (nb >= 0 && nb == x->operands[0]->shape.rank) {
    int64_t moved[IR_MAX_RANK];
    bool ok = true;
    for (int k = 0; k < nb; k++) {
      ok = ok && bd[k] >= 0 && bd[k] < n;
      moved[k] = ok ? p[bd[k]] : 0;
    }
    if (ok && sorted(moved, nb)) {
      IrInstr *src = x->operands[0];
      IrInstr *b = ir_instr_new_before(i->parent, i, IR_OP_BROADCAST, &ns, &src, 1, x->name);
      if (b) ir_attr_set_dims(b, "dimensions", moved, nb);
      return b;
    }
  }
  IrInstr *t = ir_instr_new_before(i->parent, i, IR_OP_TRANSPOSE, &ns, &x, 1, x->name);
  if (t) ir_attr_set_dims(t, "dimensions", inv, n);
  return t;
}

/* SinkRearrangeOperands: i runs on the values before its rearrange; a new rearrange of its
 * result takes its users. Returns false when out of memory. */
static bool sink(IrInstr *i, PassContext *cx, int *moved, bool *in_order) {
  const IrInstr *r = first_rearrange(i);
  if (!r) return true;
  IrInstr *ops[IR_REMAP_SMALL];
  int n = i->noperands < IR_REMAP_SMALL ? i->noperands : IR_REMAP_SMALL;
  if (n != i->noperands) return true;
  for (int o = 0; o < n; o++)
    if (!(ops[o] = inverse(i, r, i->operands[o]))) return false;
  Arena *a = &i->parent->module->arena;
  IrShape es;
  if (!ir_shape_copy(a, &es, &r->operands[0]->shape)) return false;
  es.type = i->shape.type;
  IrInstr *e = ir_instr_copy(i->parent, i, ops, i->name);
  if (!e) return false;
  ir_shape_copy(a, &e->shape, &es);
  IrInstr *nr = ir_instr_new_before(i->parent, i, r->op, &i->shape, &e, 1, r->name);
  if (!nr) return false;
  if (r->op == IR_OP_TRANSPOSE) {
    int64_t p[IR_MAX_RANK];
    int np = perm_of(r, p);
    ir_attr_set_dims(nr, "dimensions", p, np);
  }
  char shape[128];
  ir_shape_format(&es, false, shape, sizeof shape);
  PassDecision d = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = r->name, .consumer = i->name,
                    .result = nr->name, .accepted = true};
  pass_emit(cx->sink, &d, "%s now runs before the %s %s (on %s, as %s) and %s %ss its result", i->name, ir_op_name(r->op),
            r->name, shape, e->name, nr->name, ir_op_name(r->op));
  simp_replace(i, nr);
  /* e is the one instruction out of place (ir_instr_copy appended it; nr, before i, reads it).
   * Once the computation has been sorted, sorting it again after a sink is a linear partition. */
  if (*in_order) {
    ir_computation_sort_last(nr->parent);
  } else {
    ir_computation_sort(nr->parent);
    *in_order = true;
  }
  (*moved)++;
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int moved = 0;
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    int n = comp->ninstrs;
    IrInstr **cands = fx_malloc(sizeof(IrInstr *) * (size_t)(n + 1));
    /* Membership by instruction id (sorting the computation uses aux). */
    int ids = m->next_id; /* instructions made while moving get larger ids: never members */
    char *in = fx_calloc((size_t)ids + 1, 1);
    if (!cands || !in) {
      fx_free(cands);
      fx_free(in);
      return fx_error_set(cx->err, NULL, 0, 0, "reshape-mover: out of memory");
    }
    int nc = 0;
    for (int k = 0; k < n; k++)
      if (candidate(comp->instrs[k]) && comp->instrs[k]->id <= ids) {
        cands[nc++] = comp->instrs[k];
        in[comp->instrs[k]->id] = 1;
      }
    /* Drop candidates whose rearrange operands have users outside the set, until none has. */
    bool removed = true;
    while (nc > 0 && removed) {
      removed = false;
      for (int k = 0; k < nc; k++) {
        IrInstr *i = cands[k];
        if (!in[i->id]) continue;
        for (int o = 0; o < i->noperands; o++) {
          IrInstr *x = i->operands[o];
          if (!is_rearrange(x)) continue;
          bool outside = x == x->parent->root;
          for (int u = 0; u < x->nusers && !outside; u++) outside = x->users[u]->id > ids || !in[x->users[u]->id];
          if (!outside) continue;
          for (int u = 0; u < x->nusers; u++)
            if (x->users[u]->id <= ids && in[x->users[u]->id]) {
              in[x->users[u]->id] = 0;
              removed = true;
            }
        }
      }
    }
    bool in_order = false;
    for (int k = 0; k < nc; k++) {
      IrInstr *i = cands[k];
      if (i->id > ids || !in[i->id] || i->dead) continue;
      if (!sink(i, cx, &moved, &in_order)) {
        fx_free(cands);
        fx_free(in);
        return fx_error_set(cx->err, NULL, 0, 0, "reshape-mover: out of memory");
      }
    }
    fx_free(cands);
    fx_free(in);
  }
  *changed = moved > 0;
  return true;
}

const Pass pass_reshape_mover = {"reshape-mover",
                                 "reshapes and transposes move below the elementwise operations that read them", run};

/* pass_algsimp.c — the algebraic simplifier (XLA's AlgebraicSimplifier, the part that matters
 * before fusion): identities and the folding of data-movement chains.
 *
 *   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1          -> x
 *   negate(negate(x))                                   -> x
 *   select(all-true, a, b) -> a; select(all-false, a, b) -> b; select(p, a, a) -> a
 *   convert(x) to x's own type                          -> x
 *   reshape(reshape(x)) -> reshape(x); a reshape to the same dimensions -> x
 *   transpose(transpose(x)) -> one transpose, or x when the permutations cancel
 *   broadcast(broadcast(x)) -> one broadcast; a broadcast that adds nothing -> x
 *   slice(slice(x)) -> one slice; a slice that takes everything -> x
 *   slice(concatenate(a, b, ...)) inside one operand   -> slice of that operand (or the operand)
 *
 * In the priority pipeline (today's XLA) also
 *   a transpose that moves only dimensions of size 1    -> reshape
 * and, after layout normalization (pass_algsimp_post_layout, XLA's layout-sensitive simplifier),
 * the same rules on what normalization left: a slice of a transpose that only changed the layout
 * is by then a slice of its operand, and a slice of a concatenate inside one operand is that
 * operand. The paper's XLA (classic pipeline) did not: the CartPole's `done` check read the
 * concatenated state through its transpose, which made the concatenate a fusion boundary.
 * Both pipelines:
 *   concatenate(x)                                      -> x
 * The priority pipeline's algsimp also makes today's arithmetic and broadcast rewrites
 * (algsimp_current.c: subtraction and division by constants, powers of two, broadcasts sunk
 * below elementwise operations, select(p, true, false) -> p and select(p, false, true) -> not(p),
 * ...).
 *
 * A rewrite that composes two instructions edits the outer one in place (it keeps its name, so
 * `why y` still finds it); one that removes an instruction forwards its users to the survivor.
 * What a rewrite leaves unused is removed at once. Every rewrite is reported:
 * "replaced multiply.4(x, 1) by x". Fused computations are left alone. */
#include <inttypes.h>
#include <string.h>

#include "algsimp.h"
#include "passes.h"
#include "simplify.h"

void algsimp_report(Simp *s, const char *action, const IrInstr *producer, const IrInstr *consumer, const char *result,
                    const char *fmt_detail) {
  PassDecision d = {.pass = s->cx->pass, .stage = s->cx->stage, .action = action, .accepted = true};
  d.producer = producer ? producer->name : NULL;
  d.consumer = consumer ? consumer->name : NULL;
  d.result = result;
  pass_emit(s->cx->sink, &d, "%s", fmt_detail);
  s->rewrites++;
}

bool algsimp_forward(Simp *s, IrInstr *i, IrInstr *x, const char *why) {
  if (!ir_shape_equal(&i->shape, &x->shape)) return false;
  char desc[256], msg[512];
  simp_describe(i, desc, sizeof desc);
  snprintf(msg, sizeof msg, "replaced %s by %s%s%s", desc, x->name, why ? ": " : "", why ? why : "");
  const char *xname = x->name;
  algsimp_report(s, "rewrite", x, i, xname, msg);
  simp_replace(i, x);
  return true;
}

static bool is_splat(const IrInstr *i, double v) {
  double got;
  return simp_splat_value(i, &got) && got == v;
}

static bool identity_perm(const int64_t *p, int n) {
  for (int k = 0; k < n; k++)
    if (p[k] != k) return false;
  return true;
}

static bool try_arith(Simp *s, IrInstr *i) {
  if (i->noperands != 2) return false;
  IrInstr *a = i->operands[0], *b = i->operands[1];
  switch (i->op) {
  case IR_OP_ADD:
    if (is_splat(b, 0) && algsimp_forward(s, i, a, "adding zero")) return true;
    if (is_splat(a, 0) && algsimp_forward(s, i, b, "adding zero")) return true;
    return false;
  case IR_OP_SUBTRACT:
    return is_splat(b, 0) && algsimp_forward(s, i, a, "subtracting zero");
  case IR_OP_MULTIPLY:
    if (is_splat(b, 1) && algsimp_forward(s, i, a, "multiplying by one")) return true;
    if (is_splat(a, 1) && algsimp_forward(s, i, b, "multiplying by one")) return true;
    return false;
  case IR_OP_DIVIDE:
    return is_splat(b, 1) && algsimp_forward(s, i, a, "dividing by one");
  default:
    return false;
  }
}

static bool try_reshape(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  if (ir_shape_equal(&i->shape, &x->shape)) return algsimp_forward(s, i, x, "the reshape keeps the dimensions");
  if (x->op == IR_OP_RESHAPE && x->noperands == 1) {
    char msg[512];
    snprintf(msg, sizeof msg, "reshape of reshape: %s now reshapes %s directly (skipping %s)", i->name, x->operands[0]->name,
             x->name);
    algsimp_report(s, "rewrite", x, i, i->name, msg);
    ir_set_operand(i, 0, x->operands[0]);
    simp_drop_dead(x);
    if (ir_shape_equal(&i->shape, &i->operands[0]->shape)) algsimp_forward(s, i, i->operands[0], "the reshapes cancel");
    return true;
  }
  return false;
}

/* Whether the permutation keeps the order of every dimension larger than 1 (then the transpose
 * moves no data: XLA's TransposeIsBitcast). */
static bool moves_only_unit_dims(const IrInstr *x, const int64_t *p, int n) {
  int64_t last = -1;
  for (int k = 0; k < n; k++) {
    if (p[k] < 0 || p[k] >= x->shape.rank) return false;
    if (x->shape.dims[p[k]] == 1) continue;
    if (p[k] < last) return false;
    last = p[k];
  }
  return true;
}

/* XLA's HandleTranspose, do_transpose_of_dot (GPU dots are canonical): transpose(dot(a, b)) that
 * swaps the dot's two non-batch dimensions is dot(b, a), the contracting dimensions swapped, when
 * the transpose is the dot's only reader and the dot is "somewhat canonical" (the same batch
 * dimensions first on both sides, one non-contracting dimension each). */
static bool transpose_of_dot(Simp *s, IrInstr *i, const int64_t *p, int n) {
  IrInstr *dot = i->operands[0];
  IrDotDims d;
  if (dot->op != IR_OP_DOT || dot->noperands != 2 || dot->nusers != 1 || dot->is_root || !ir_dot_dims(dot, &d)) return false;
  IrInstr *lhs = dot->operands[0], *rhs = dot->operands[1];
  int nb = d.nlhs_batch;
  if (nb != d.nrhs_batch || d.nlhs_contract == 0 || d.nrhs_contract == 0 || n != dot->shape.rank || n < 2) return false;
  bool seen[IR_MAX_RANK] = {false};
  for (int k = 0; k < nb; k++) {
    if (d.lhs_batch[k] != d.rhs_batch[k] || d.lhs_batch[k] < 0 || d.lhs_batch[k] >= nb || seen[d.lhs_batch[k]]) return false;
    seen[d.lhs_batch[k]] = true;
  }
  if (d.nlhs_contract + nb + 1 != lhs->shape.rank || d.nrhs_contract + nb + 1 != rhs->shape.rank) return false;
  for (int k = 0; k < n; k++)
    if (p[k] != (k == n - 2 ? n - 1 : k == n - 1 ? n - 2 : k)) return false;
  IrInstr *ops[2] = {rhs, lhs};
  IrInstr *nd = ir_instr_new_before(i->parent, i, IR_OP_DOT, &i->shape, ops, 2,
                                    ir_module_series_name(i->parent->module, "dot", false));
  if (!nd) return false;
  for (int k = 0; k < dot->nattrs; k++)
    if (dot->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(nd, dot->attrs[k].key, dot->attrs[k].text);
  nd->loc = dot->loc;
  ir_attr_set_dims(nd, "lhs_contracting_dims", d.rhs_contract, d.nrhs_contract);
  ir_attr_set_dims(nd, "rhs_contracting_dims", d.lhs_contract, d.nlhs_contract);
  const char *prec = ir_attr_text(dot, "operand_precision");
  if (prec) {
    /* {A,B} -> {B,A} (SwapOperandsInDotPrecisionConfig) */
    char a[64], b[64], buf[140];
    if (sscanf(prec, "{%63[^,],%63[^}]}", a, b) == 2) {
      snprintf(buf, sizeof buf, "{%s,%s}", b, a);
      ir_attr_set_text(nd, "operand_precision", buf);
    }
  }
  char msg[512];
  snprintf(msg, sizeof msg, "%s swaps the two non-batch dimensions of %s, its only reader: %s computes dot(%s, %s) "
           "with the operands swapped instead", i->name, dot->name, nd->name, rhs->name, lhs->name);
  return algsimp_forward(s, i, nd, msg);
}

static bool try_transpose(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int64_t p[IR_MAX_RANK], q[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", p, IR_MAX_RANK);
  if (n != i->shape.rank) return false;
  if (identity_perm(p, n)) return algsimp_forward(s, i, x, "the permutation is the identity");
  /* today's order (HandleTranspose): transpose of transpose, transpose of dot, then one that only
     moves dimensions of size 1 */
  if (s->current && x->op != IR_OP_TRANSPOSE && i->parent) {
    if (transpose_of_dot(s, i, p, n)) return true;
    if (moves_only_unit_dims(x, p, n)) {
      IrInstr *r = ir_instr_new_before(i->parent, i, IR_OP_RESHAPE, &i->shape, &x, 1, NULL);
      if (!r) return false;
      char msg[512];
      snprintf(msg, sizeof msg, "%s only moves dimensions of size 1: a reshape", i->name);
      return algsimp_forward(s, i, r, msg);
    }
  }
  if (x->op != IR_OP_TRANSPOSE || x->noperands != 1) return false;
  if (ir_attr_dims(x, "dimensions", q, IR_MAX_RANK) != n) return false;
  /* out[k] = x[p[k]] = y[q[p[k]]] */
  int64_t r[IR_MAX_RANK];
  for (int k = 0; k < n; k++) {
    if (p[k] < 0 || p[k] >= n) return false;
    r[k] = q[p[k]];
  }
  char msg[512];
  IrInstr *y = x->operands[0];
  if (identity_perm(r, n)) {
    snprintf(msg, sizeof msg, "transpose of transpose: the permutations of %s and %s cancel", x->name, i->name);
    return algsimp_forward(s, i, y, msg);
  }
  snprintf(msg, sizeof msg, "transpose of transpose: %s now transposes %s directly (skipping %s)", i->name, y->name, x->name);
  algsimp_report(s, "rewrite", x, i, i->name, msg);
  ir_set_operand(i, 0, y);
  ir_attr_set_dims(i, "dimensions", r, n);
  simp_drop_dead(x);
  return true;
}

static bool try_broadcast(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int64_t d[IR_MAX_RANK], e[IR_MAX_RANK];
  int n = ir_attr_dims(i, "dimensions", d, IR_MAX_RANK);
  if (n < 0) n = 0; /* dimensions={} */
  if (n != x->shape.rank) return false;
  if (x->shape.rank == i->shape.rank && identity_perm(d, n) && ir_shape_equal(&i->shape, &x->shape))
    return algsimp_forward(s, i, x, "the broadcast adds nothing");
  if (x->op != IR_OP_BROADCAST || x->noperands != 1) return false;
  IrInstr *y = x->operands[0];
  int m = ir_attr_dims(x, "dimensions", e, IR_MAX_RANK);
  if (m < 0) m = 0;
  if (m != y->shape.rank) return false;
  /* y's dim k sits at x's dim e[k], which sits at i's dim d[e[k]]. */
  int64_t r[IR_MAX_RANK];
  for (int k = 0; k < m; k++) {
    if (e[k] < 0 || e[k] >= n) return false;
    r[k] = d[e[k]];
  }
  char msg[512];
  snprintf(msg, sizeof msg, "broadcast of broadcast: %s now broadcasts %s directly (skipping %s)", i->name, y->name, x->name);
  algsimp_report(s, "rewrite", x, i, i->name, msg);
  ir_set_operand(i, 0, y);
  ir_attr_set_dims(i, "dimensions", r, m);
  simp_drop_dead(x);
  return true;
}

static bool try_slice(Simp *s, IrInstr *i) {
  IrInstr *x = i->operands[0];
  int64_t st[IR_MAX_RANK], lim[IR_MAX_RANK], str[IR_MAX_RANK];
  int n = ir_attr_slice(i, st, lim, str, IR_MAX_RANK);
  if (n != x->shape.rank || n != i->shape.rank) return false;
  if (ir_shape_equal(&i->shape, &x->shape)) {
    bool full = true;
    for (int d = 0; d < n; d++) full = full && st[d] == 0 && (str[d] == 1 || x->shape.dims[d] <= 1);
    if (full) return algsimp_forward(s, i, x, "the slice takes everything");
  }
  char msg[512];
  if (x->op == IR_OP_SLICE && x->noperands == 1) {
    int64_t st2[IR_MAX_RANK], lim2[IR_MAX_RANK], str2[IR_MAX_RANK];
    if (ir_attr_slice(x, st2, lim2, str2, IR_MAX_RANK) != n) return false;
    int64_t nst[IR_MAX_RANK], nlim[IR_MAX_RANK], nstr[IR_MAX_RANK];
    for (int d = 0; d < n; d++) {
      nst[d] = st2[d] + st[d] * str2[d];
      nstr[d] = str[d] * str2[d];
      int64_t cnt = i->shape.dims[d];
      nlim[d] = cnt > 0 ? nst[d] + (cnt - 1) * nstr[d] + 1 : nst[d];
    }
    snprintf(msg, sizeof msg, "slice of slice: %s now slices %s directly (skipping %s)", i->name, x->operands[0]->name, x->name);
    algsimp_report(s, "rewrite", x, i, i->name, msg);
    ir_set_operand(i, 0, x->operands[0]);
    ir_attr_set_slice(i, nst, nlim, nstr, n);
    simp_drop_dead(x);
    return true;
  }
  if (x->op == IR_OP_CONCATENATE && x->noperands >= 1) {
    int64_t cd;
    int64_t dims[1];
    if (ir_attr_dims(x, "dimensions", dims, 1) != 1) return false;
    cd = dims[0];
    if (cd < 0 || cd >= n) return false;
    /* The slice must lie inside one operand along the concatenated dimension. */
    int64_t off = 0;
    int64_t last = i->shape.dims[cd] > 0 ? st[cd] + (i->shape.dims[cd] - 1) * str[cd] : st[cd];
    for (int k = 0; k < x->noperands; k++) {
      IrInstr *o = x->operands[k];
      int64_t len = o->shape.dims[cd];
      if (st[cd] >= off && last < off + len && i->shape.dims[cd] > 0) {
        int64_t nst[IR_MAX_RANK], nlim[IR_MAX_RANK];
        memcpy(nst, st, sizeof(int64_t) * (size_t)n);
        memcpy(nlim, lim, sizeof(int64_t) * (size_t)n);
        nst[cd] -= off;
        nlim[cd] = last - off + 1;
        snprintf(msg, sizeof msg, "slice of concatenate: %s takes only operand %d (%s) of %s", i->name, k, o->name, x->name);
        algsimp_report(s, "rewrite", x, i, i->name, msg);
        ir_set_operand(i, 0, o);
        ir_attr_set_slice(i, nst, nlim, str, n);
        simp_drop_dead(x);
        try_slice(s, i); /* may now take all of o */
        return true;
      }
      off += len;
    }
  }
  return false;
}

/* HandleMap: a map whose computation returns one of its parameters is that operand; one whose
 * computation is a scalar constant is that constant broadcast; one whose computation is a single
 * elementwise operation of its parameters is that operation on the map's operands (the reducer
 * that reduce-window-rewriter's maps apply: add, multiply, maximum). */
static bool try_map(Simp *s, IrInstr *i) {
  IrComputation *f = ir_attr_comp(i, "to_apply");
  if (!f || !f->root || !ir_shape_is_array(&i->shape)) return false;
  IrInstr *r = f->root;
  char msg[512];
  if (r->op == IR_OP_PARAMETER) {
    if (r->param_number < 0 || r->param_number >= i->noperands) return false;
    return algsimp_forward(s, i, i->operands[r->param_number], "the mapped computation returns that operand");
  }
  IrComputation *c = i->parent;
  if (r->op == IR_OP_CONSTANT) {
    if (!ir_shape_is_scalar(&r->shape) || r->shape.type != i->shape.type) return false;
    IrInstr *k = simp_add_like(c, i, IR_OP_CONSTANT, &r->shape, NULL, 0, r->name, i);
    if (!k) return false;
    k->literal = r->literal;
    IrInstr *b = simp_add_like(c, i, IR_OP_BROADCAST, &i->shape, &k, 1, "broadcast", i);
    if (!b) return false;
    ir_attr_set_dims(b, "dimensions", NULL, 0);
    snprintf(msg, sizeof msg, "map %s: its computation %s is the constant %s, broadcast as %s", i->name, f->name,
             r->name, b->name);
    algsimp_report(s, "rewrite", i, i, b->name, msg);
    simp_replace(i, b);
    return true;
  }
  if (r->op == IR_OP_FUSION || !ir_op_is_elementwise(r->op) || r->noperands > 3) return false;
  IrInstr *ops[3];
  for (int k = 0; k < r->noperands; k++) {
    IrInstr *p = r->operands[k];
    if (!p || p->op != IR_OP_PARAMETER || p->param_number < 0 || p->param_number >= i->noperands) return false;
    ops[k] = i->operands[p->param_number];
  }
  IrShape sh = simp_shape_retyped(&c->module->arena, &i->shape, r->shape.type);
  IrInstr *y = simp_add_like(c, i, r->op, &sh, ops, r->noperands, r->name, i);
  if (!y) return false;
  for (int a = 0; a < r->nattrs; a++)
    if (r->attrs[a].kind == IR_ATTR_TEXT) ir_attr_set_text(y, r->attrs[a].key, r->attrs[a].text);
  snprintf(msg, sizeof msg, "map %s inlined: its computation %s is one %s of its parameters", i->name, f->name,
           ir_op_name(r->op));
  algsimp_report(s, "rewrite", i, i, y->name, msg);
  simp_replace(i, y);
  return true;
}

static bool try_classic(Simp *s, IrInstr *i) {
  switch (i->op) {
  case IR_OP_MAP:
    return try_map(s, i);
  case IR_OP_ADD:
  case IR_OP_SUBTRACT:
  case IR_OP_MULTIPLY:
  case IR_OP_DIVIDE:
    return try_arith(s, i);
  case IR_OP_NEGATE:
    if (i->noperands == 1 && i->operands[0]->op == IR_OP_NEGATE && i->operands[0]->noperands == 1)
      return algsimp_forward(s, i, i->operands[0]->operands[0], "negate of negate");
    return false;
  case IR_OP_SELECT: {
    if (i->noperands != 3) return false;
    if (i->operands[1] == i->operands[2]) return algsimp_forward(s, i, i->operands[1], "both branches are the same value");
    double v;
    if (!simp_splat_value(i->operands[0], &v)) return false;
    return algsimp_forward(s, i, v != 0 ? i->operands[1] : i->operands[2], v != 0 ? "the condition is always true" : "the condition is always false");
  }
  case IR_OP_CONVERT:
    if (i->noperands == 1 && i->operands[0]->shape.type == i->shape.type)
      return algsimp_forward(s, i, i->operands[0], "converting to the same type");
    return false;
  case IR_OP_RESHAPE:
    return i->noperands == 1 && try_reshape(s, i);
  case IR_OP_TRANSPOSE:
    return i->noperands == 1 && try_transpose(s, i);
  case IR_OP_BROADCAST:
    return i->noperands == 1 && try_broadcast(s, i);
  case IR_OP_SLICE:
    return i->noperands == 1 && try_slice(s, i);
  case IR_OP_CONCATENATE:
    if (i->noperands == 1) return algsimp_forward(s, i, i->operands[0], "concatenate of one operand");
    return false;
  default:
    return false;
  }
}

/* Whether a layout-sensitive rewrite may look at i: i and its operands are arrays in the default
 * layout, the form layout normalization leaves (a value it left laid out is read through a
 * bitcast, which no rewrite here touches). */
static bool default_layouts(const IrInstr *i) {
  if (!ir_shape_is_array(&i->shape) || !ir_shape_default_layout(&i->shape)) return false;
  for (int k = 0; k < i->noperands; k++)
    if (ir_shape_is_array(&i->operands[k]->shape) && !ir_shape_default_layout(&i->operands[k]->shape)) return false;
  return true;
}

static bool try_one(Simp *s, IrInstr *i) {
  if (i->dead) return false;
  for (int k = 0; k < i->noperands; k++)
    if (!i->operands[k]) return false;
  if (s->layout_sensitive) {
    if (!default_layouts(i)) return false;
    /* XLA's layout-sensitive simplifier changes a reshape or transpose only into a bitcast,
       which layout normalization has already made of them */
    if (i->op == IR_OP_RESHAPE || i->op == IR_OP_TRANSPOSE || i->op == IR_OP_DOT || i->op == IR_OP_REDUCE) return false;
  }
  if (try_classic(s, i)) return true;
  return s->current && !i->dead && algsimp_current_rewrite(s, i);
}

static bool run(IrModule *m, PassContext *cx, bool *changed, bool current, bool layout_sensitive) {
  Simp s = {cx, 0, current, layout_sensitive};
  for (int c = 0; c < m->ncomps; c++) {
    IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    /* Repeat until nothing changes: one rewrite can enable another (reshape chains of three). A
       rewrite adds a few instructions for each one it replaces; a computation that keeps growing
       far past that means a rewrite that undoes another, and the pass stops rather than run out of
       memory. */
    int64_t limit = 16 * (int64_t)comp->ninstrs + 100000;
    for (int round = 0; round < 8; round++) {
      int before = s.rewrites;
      for (int k = 0; k < comp->ninstrs; k++) {
        IrInstr *i = comp->instrs[k];
        int n0 = comp->ninstrs;
        if (n0 > limit)
          return fx_error_set(cx->err, NULL, 0, 0, "%s: computation %s grew to %d instructions without settling: two "
                              "rewrites undo each other (an fxplain bug; please report it with the module)",
                              cx->pass, comp->name, n0);
        try_one(&s, i);
        /* Removals shift the order: step back over what vanished before this position. */
        if (comp->ninstrs < n0) {
          k -= n0 - comp->ninstrs;
          if (k < -1) k = -1;
        }
      }
      if (s.rewrites == before) break;
    }
  }
  *changed = s.rewrites > 0;
  return true;
}

static bool run_algsimp(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, false, false); }
static bool run_algsimp_current(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, true, false); }
static bool run_algsimp_post_layout(IrModule *m, PassContext *cx, bool *changed) { return run(m, cx, changed, true, true); }

const Pass pass_algsimp = {"algsimp",
                           "algebraic simplifier: identities (x*1, x+0, ...) and reshape/transpose/broadcast/slice chains",
                           run_algsimp};
const Pass pass_algsimp_current = {"algsimp",
                                   "algebraic simplifier as today's XLA runs it: identities, data-movement chains, "
                                   "arithmetic with constants, slices and dynamic slices moved onto what they read",
                                   run_algsimp_current};
/* XLA:GPU's layout_normalization pipeline ends with the simplifier, layout-sensitive: what layout
 * normalization made of transposes and reshapes (slices of a concatenate read through a bitcast,
 * now slices of the concatenate itself) simplifies again. */
const Pass pass_algsimp_post_layout = {"algsimp",
                                       "algebraic simplifier after layout normalization (XLA's layout-sensitive "
                                       "simplifier): what the bitcasts opened up, every layout kept",
                                       run_algsimp_post_layout};

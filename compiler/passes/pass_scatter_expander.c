/* pass_scatter_expander.c — scatter-expander: a scatter that writes one window is a
 * dynamic-update-slice (XLA's ScatterExpander in its kEliminateSimpleScatters mode, which XLA:GPU
 * runs in its simplification pipeline: a scatter whose loop would run once).
 *
 * XLA expands such a scatter into a one-trip loop whose body reads the operand's window at the
 * index (dynamic-slice), combines it with the update (the scatter's computation), keeps the old
 * window when the index is out of bounds (a scatter skips such updates, where a
 * dynamic-update-slice would clamp), and writes the result back (dynamic-update-slice); the loop
 * then goes (it runs once) and algsimp and constant folding simplify what is left. This pass
 * writes that end form directly:
 *
 *   start_d  = the index's component for operand dimension d (a slice of the indices), else 0
 *   old      = dynamic-slice(operand, start...)             the window
 *   new      = combine(old, reshape(update))               the computation inlined: the update
 *                                                           itself for `set`, op(old, update)
 *                                                           for a binary op
 *   valid    = reduce-and(0 <= start && start <= dims - window)   over the start as one vector in
 *                                                           operand space (XLA's CheckIndexValidity)
 *   result   = dynamic-update-slice(operand, select(broadcast(valid), new, old), start...)
 *
 * With constant indices, constant folding and algsimp reduce it further (the bounds check to
 * true, the select to `new`, a dynamic-update-slice into a broadcast scalar to a pad), as XLA's
 * do. JAX writes `x.at[i].set(v)` and `x.at[i].add(v)` as such scatters (bench_mass_matrix has
 * 103 of them). Scatters of several operands, with batching dimensions, or whose computation is
 * more than one binary operation are left alone. Each expansion is reported: "scatter.515 writes
 * one window (f32[1,1] at 2 indices): a dynamic-update-slice of scatter.515's operand". Runs in
 * the priority pipeline only. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "simplify.h"

#define MAX_DIMS IR_MAX_RANK

static IrInstr *add_before(IrInstr *at, IrOpcode op, const IrShape *shape, IrInstr *const *ops, int n, const char *base) {
  return ir_instr_new_before(at->parent, at, op, shape, ops, n, base);
}

static IrInstr *scalar_before(IrInstr *at, IrType t, double v, const char *base) {
  IrShape s = ir_shape_scalar(t);
  IrInstr *c = add_before(at, IR_OP_CONSTANT, &s, NULL, 0, base);
  if (!c || !(c->literal = ir_literal_new(&at->parent->module->arena, &v, 1, t, &s))) return NULL;
  return c;
}

/* The combining computation's operation: IR_OP_PARAMETER for `set` (the root is the update,
 * parameter 1), a binary opcode for op(p0, p1) (*swapped when op(p1, p0)), IR_OP_COUNT otherwise. */
static IrOpcode combiner(const IrComputation *c, bool *swapped, const char **direction) {
  *swapped = false;
  *direction = NULL;
  if (!c || c->nparams != 2 || !c->root || !c->params[0] || !c->params[1]) return IR_OP_COUNT;
  const IrInstr *r = c->root;
  if (r == c->params[1]) return IR_OP_PARAMETER;
  if (c->ninstrs != 3 || r->noperands != 2 || ir_op_info(r->op)->category != IR_CAT_BINARY || r->op == IR_OP_COMPARE)
    return IR_OP_COUNT;
  if (r->operands[0] == c->params[0] && r->operands[1] == c->params[1]) return r->op;
  if (r->operands[0] == c->params[1] && r->operands[1] == c->params[0]) {
    *swapped = true;
    return r->op;
  }
  return IR_OP_COUNT;
}

/* A computation and(lhs, rhs) over pred scalars, for the reduce of the bounds check, placed
 * before the computation of `at`. */
static IrComputation *and_computation(IrInstr *at) {
  IrModule *m = at->parent->module;
  const char *name = ir_module_series_name(m, "and.reduce_sub_computation", true);
  IrComputation *c = name ? ir_computation_new(m, name) : NULL;
  if (!c) return NULL;
  IrShape ps = ir_shape_scalar(IR_PRED);
  IrInstr *p0 = ir_instr_new(c, IR_OP_PARAMETER, &ps, NULL, 0, "lhs");
  IrInstr *p1 = p0 ? ir_instr_new(c, IR_OP_PARAMETER, &ps, NULL, 0, "rhs") : NULL;
  IrInstr *both[2] = {p0, p1};
  IrInstr *root = p1 ? ir_instr_new(c, IR_OP_AND, &ps, both, 2, "and") : NULL;
  if (!root || !ir_computation_set_params(c, both, 2)) return NULL;
  c->has_signature = true;
  ir_set_root(c, root);
  simp_place_before(m, c, at->parent);
  return c;
}

/* XLA's CheckIndexValidity: the window's start in operand space (starts[0..r-1], as one vector)
 * is in bounds when 0 <= start and start <= dim - window in every dimension; the vector of checks
 * is reduced with `and` and broadcast to the window's shape. NULL when out of memory. */
static IrInstr *index_validity(IrInstr *at, IrInstr *const *starts, int r, const int64_t *dims, const int64_t *window) {
  Arena *a = &at->parent->module->arena;
  IrType it = starts[0]->shape.type;
  int64_t one = 1, rr = r;
  IrShape s1 = ir_shape_array(a, it, 1, &one), sv = ir_shape_array(a, it, 1, &rr);
  IrShape pv = ir_shape_array(a, IR_PRED, 1, &rr), ps = ir_shape_scalar(IR_PRED);
  IrInstr *pieces[MAX_DIMS];
  for (int d = 0; d < r; d++)
    if (!(pieces[d] = add_before(at, IR_OP_RESHAPE, &s1, &starts[d], 1, "reshape"))) return NULL;
  IrInstr *index = pieces[0];
  if (r > 1) {
    if (!(index = add_before(at, IR_OP_CONCATENATE, &sv, pieces, r, "concatenate"))) return NULL;
    ir_attr_set_text(index, "dimensions", "{0}");
  }
  IrInstr *zero = scalar_before(at, it, 0, "constant");
  IrInstr *zeros = zero ? add_before(at, IR_OP_BROADCAST, &sv, &zero, 1, "broadcast") : NULL;
  if (!zeros) return NULL;
  ir_attr_set_text(zeros, "dimensions", "{}");
  double maxv[MAX_DIMS];
  for (int d = 0; d < r; d++) maxv[d] = (double)(dims[d] - window[d]);
  IrInstr *maxc = add_before(at, IR_OP_CONSTANT, &sv, NULL, 0, "constant");
  if (!maxc || !(maxc->literal = ir_literal_new(a, maxv, r, it, &sv))) return NULL;
  IrInstr *lo[2] = {zeros, index}, *hi[2] = {maxc, index};
  IrInstr *ge0 = add_before(at, IR_OP_COMPARE, &pv, lo, 2, "compare");
  IrInstr *lemax = ge0 ? add_before(at, IR_OP_COMPARE, &pv, hi, 2, "compare") : NULL;
  if (!lemax) return NULL;
  ir_attr_set_text(ge0, "direction", "LE");
  ir_attr_set_text(lemax, "direction", "GE");
  IrInstr *both[2] = {ge0, lemax};
  IrInstr *ok = add_before(at, IR_OP_AND, &pv, both, 2, "and");
  double t = 1;
  IrInstr *init = ok ? add_before(at, IR_OP_CONSTANT, &ps, NULL, 0, "constant") : NULL;
  if (!init || !(init->literal = ir_literal_new(a, &t, 1, IR_PRED, &ps))) return NULL;
  IrComputation *andc = and_computation(at);
  IrInstr *rops[2] = {ok, init};
  IrInstr *red = andc ? add_before(at, IR_OP_REDUCE, &ps, rops, 2, "reduce") : NULL;
  if (!red) return NULL;
  ir_attr_set_text(red, "dimensions", "{0}");
  ir_attr_set_comp(red, "to_apply", andc);
  IrShape wp = ir_shape_array(a, IR_PRED, r, window);
  IrInstr *vb = add_before(at, IR_OP_BROADCAST, &wp, &red, 1, "broadcast");
  if (vb) ir_attr_set_text(vb, "dimensions", "{}");
  return vb;
}

/* Expands scatter i when it writes one window. 1 done, 0 left alone, -1 out of memory. */
static int expand(IrInstr *i, PassContext *cx) {
  if (i->op != IR_OP_SCATTER || i->noperands != 3 || !ir_shape_is_array(&i->shape)) return 0;
  if (ir_attr_text(i, "input_batching_dims") || ir_attr_text(i, "scatter_indices_batching_dims")) return 0;
  IrInstr *operand = i->operands[0], *indices = i->operands[1], *update = i->operands[2];
  int r = operand->shape.rank;
  int64_t uw[MAX_DIMS], iw[MAX_DIMS], sd[MAX_DIMS], ivd = indices->shape.rank;
  int nuw = ir_attr_dims(i, "update_window_dims", uw, MAX_DIMS), niw = ir_attr_dims(i, "inserted_window_dims", iw, MAX_DIMS),
      nsd = ir_attr_dims(i, "scatter_dims_to_operand_dims", sd, MAX_DIMS);
  if (nuw < 0) nuw = 0;
  if (niw < 0) niw = 0;
  if (nsd < 0 || (ir_attr_text(i, "index_vector_dim") && !ir_attr_int(i, "index_vector_dim", &ivd))) return 0;
  /* One window: every indices dimension but the index vector's has size 1. */
  for (int d = 0; d < indices->shape.rank; d++)
    if (d != ivd && indices->shape.dims[d] != 1) return 0;
  int64_t nvec = ivd < indices->shape.rank ? indices->shape.dims[ivd] : 1;
  if (nvec != nsd || nuw + niw != r) return 0;
  bool swapped;
  const char *dir;
  IrComputation *comp = ir_attr_comp(i, "to_apply");
  IrOpcode cop = combiner(comp, &swapped, &dir);
  if (cop == IR_OP_COUNT) return 0;
  /* The window: inserted dimensions have size 1, the others the update's window sizes in order. */
  int64_t window[MAX_DIMS];
  for (int d = 0, w = 0; d < r; d++) {
    if (ir_dims_contain(iw, niw, d)) {
      window[d] = 1;
    } else {
      if (w >= nuw || uw[w] < 0 || uw[w] >= update->shape.rank) return 0;
      window[d] = update->shape.dims[uw[w++]];
    }
    if (window[d] > operand->shape.dims[d]) return 0;
  }
  Arena *a = &i->parent->module->arena;
  IrType it = indices->shape.type;
  IrShape ss = ir_shape_scalar(it);
  IrShape ws = ir_shape_array(a, operand->shape.type, r, window);
  /* Each operand dimension's start: the index component scattered to it, else 0. */
  IrInstr *starts[MAX_DIMS], *zero = scalar_before(i, it, 0, "zero");
  if (!zero) return -1;
  for (int d = 0; d < r; d++) {
    int k = -1;
    for (int q = 0; q < nsd; q++)
      if (sd[q] == d) k = q;
    if (k < 0) {
      starts[d] = zero;
      continue;
    }
    /* Component k: a slice of the indices along the index vector, reshaped to a scalar. */
    IrInstr *comp_k = indices;
    if (indices->shape.rank > 0) {
      int64_t st[MAX_DIMS], lim[MAX_DIMS];
      int64_t dims[MAX_DIMS];
      char buf[MAX_DIMS * 48 + 4];
      size_t len = 0;
      buf[len++] = '{';
      for (int e = 0; e < indices->shape.rank; e++) {
        st[e] = e == ivd ? k : 0;
        lim[e] = e == ivd ? k + 1 : indices->shape.dims[e];
        dims[e] = lim[e] - st[e];
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s[%" PRId64 ":%" PRId64 "]", e ? ", " : "", st[e], lim[e]);
      }
      snprintf(buf + len, sizeof buf - len, "}");
      IrShape sl = ir_shape_array(a, it, indices->shape.rank, dims);
      IrInstr *s = add_before(i, IR_OP_SLICE, &sl, &indices, 1, "slice");
      if (!s) return -1;
      ir_attr_set_text(s, "slice", buf);
      comp_k = add_before(i, IR_OP_RESHAPE, &ss, &s, 1, "reshape");
      if (!comp_k) return -1;
    }
    starts[d] = comp_k;
  }
  IrInstr *valid = r > 0 ? index_validity(i, starts, r, operand->shape.dims, window) : NULL;
  if (r > 0 && !valid) return -1;
  /* old window, new window, and the write. */
  IrInstr *dsops[1 + MAX_DIMS];
  dsops[0] = operand;
  for (int d = 0; d < r; d++) dsops[1 + d] = starts[d];
  IrInstr *old = add_before(i, IR_OP_DYNAMIC_SLICE, &ws, dsops, 1 + r, "dynamic-slice");
  if (!old) return -1;
  ir_attr_set_dims(old, "dynamic_slice_sizes", window, r);
  IrInstr *upd = add_before(i, IR_OP_RESHAPE, &ws, &update, 1, "reshape");
  if (!upd) return -1;
  IrInstr *neww = upd;
  if (cop != IR_OP_PARAMETER) {
    IrInstr *bops[2] = {swapped ? upd : old, swapped ? old : upd};
    if (!(neww = add_before(i, cop, &ws, bops, 2, comp->root->name))) return -1;
  }
  IrInstr *sel = neww;
  if (valid) {
    IrInstr *sops[3] = {valid, neww, old};
    if (!(sel = add_before(i, IR_OP_SELECT, &ws, sops, 3, "select"))) return -1;
  }
  IrInstr *dops[2 + MAX_DIMS];
  dops[0] = operand;
  dops[1] = sel;
  for (int d = 0; d < r; d++) dops[2 + d] = starts[d];
  IrInstr *dus = add_before(i, IR_OP_DYNAMIC_UPDATE_SLICE, &i->shape, dops, 2 + r, "dynamic-update-slice");
  if (!dus) return -1;
  char shape[128], with[160];
  ir_shape_format(&ws, false, shape, sizeof shape);
  if (cop == IR_OP_PARAMETER) snprintf(with, sizeof with, "the update");
  else snprintf(with, sizeof with, swapped ? "%s(update, old window)" : "%s(old window, update)", ir_op_name(cop));
  PassDecision dd = {.pass = cx->pass, .stage = cx->stage, .action = "rewrite", .producer = i->name, .result = dus->name,
                     .accepted = true};
  pass_emit(cx->sink, &dd,
            "%s writes one window (%s at %d ind%s): it is %s, a dynamic-update-slice of %s with %s, the old window kept "
            "where the index is out of bounds",
            i->name, shape, nsd, nsd == 1 ? "ex" : "ices", dus->name, operand->name, with);
  simp_replace(i, dus);
  if (!old->dead && old->nusers == 0) simp_drop_dead(old);
  return 1;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  int n = 0, nscat = 0;
  IrInstr **scatters = simp_collect(m, IR_OP_SCATTER, &nscat);
  if (!scatters) return fx_error_set(cx->err, NULL, 0, 0, "scatter-expander: out of memory");
  for (int k = 0; k < nscat; k++) {
    if (scatters[k]->dead) continue;
    int r = expand(scatters[k], cx);
    if (r < 0) {
      fx_free(scatters);
      return fx_error_set(cx->err, NULL, 0, 0, "scatter-expander: out of memory");
    }
    n += r;
  }
  fx_free(scatters);
  if (n) ir_module_remove_unreachable(m);
  *changed = n > 0;
  return true;
}

const Pass pass_scatter_expander = {"scatter-expander",
                                    "a scatter that writes one window becomes a dynamic-update-slice", run};

/* pass_layout_normalization.c — XLA:GPU's layout_normalization pipeline (LayoutNormalization,
 * ReshapeDecomposer, and the layout-sensitive simplifier that follows them): after
 * layout-assignment, every value is rewritten so that its shape lists its dimensions in physical
 * order, major first, with the default layout, and whatever only reinterprets memory becomes a
 * `bitcast`, which launches no kernel:
 *
 *   copy(x) into another layout         -> transpose(x) into the physical order (it moves data)
 *   a cuDNN call in NHWC                -> the same call on the physical shapes, dim_labels
 *                                          relabelled (bf01 read in NHWC order is b01f)
 *   a broadcast or iota made in a layout -> the same op in the physical order
 *   reshape (row-major in and out)      -> bitcast
 *   transpose that moves only size-1 dimensions -> bitcast
 *   transpose or reshape whose layout keeps the bytes -> bitcast, its layout kept (a GEMM's
 *                                          operand: layout-assignment chose that layout)
 *   broadcast that only adds size-1 dimensions  -> bitcast
 *   copy into the layout it already has -> its operand
 *   bitcast-convert between types of one width -> bitcast
 *   an elementwise op in a layout       -> the same op on its operands' physical values
 *   a slice, dynamic slice or update, concatenate, pad, reverse or reduce-window in a layout
 *                                       -> the same on physical shapes (its per-dimension
 *                                          attributes and index operands reordered)
 *   a value in a layout left as it is (a loop's state, a GEMM's result) -> read in physical order
 *                                          through one bitcast
 *   a transpose between laid-out values -> a transpose of physical orders, or a bitcast when the
 *                                          layouts keep the bytes where they are
 *   a reshape whose layouts keep the bytes -> bitcast
 *   a reduce of a laid-out operand      -> a reduce over the physical positions of its dimensions
 *   any other reader of a laid-out value -> reads it through one bitcast back into its layout
 *                                          (LayoutNormalization's DefaultAction)
 *   bitcast(bitcast(x))                 -> bitcast(x); a bitcast to x's own shape -> x
 *
 * So ResNet's filters (01io, parameters) reach cuDNN through one transpose each into o01i, a
 * bf16 NCHW image through a transpose into NHWC and its result through one back, and JAX's
 * reshapes (`squeeze`, `expand_dims`, the flattening before a matmul) cost nothing. A bitcast
 * keeps the instruction's name (`why squeeze.4` still finds it); a transpose made from a copy is a
 * new instruction. Fused computations are left alone. */
#include <stdio.h>
#include <string.h>

#include "passes.h"
#include "../ir/ptrmap.h"
#include "simplify.h"

typedef struct {
  PassContext *cx;
  IrModule *m;
  int rewrites;
  /* the instructions normalize_laid rewrote: their replacements take their names once they go */
  IrInstr **laid;
  int nlaid, caplaid;
  /* a value in a layout that is not rewritten (a loop's state, a GEMM's result) -> the bitcast
     that reads it in physical order */
  PtrMap views;
} Normalizer;

/* ---------- physical order ---------- */

/* The dimensions of s, major first (minor_to_major reversed; the default order without one). */
static void major_order(const IrShape *s, int *major) {
  for (int k = 0; k < s->rank; k++) major[k] = s->has_layout ? s->minor_to_major[s->rank - 1 - k] : k;
}

static bool is_default(const IrShape *s) { return !ir_shape_is_array(s) || ir_shape_default_layout(s); }

/* s with its dimensions in physical order and the default layout (built in m's arena). */
static IrShape physical(IrModule *m, const IrShape *s) {
  int major[IR_MAX_RANK];
  int64_t dims[IR_MAX_RANK];
  major_order(s, major);
  for (int k = 0; k < s->rank; k++) dims[k] = s->dims[major[k]];
  return ir_shape_array(&m->arena, s->type, s->rank, dims);
}

/* Positions of s's dimensions in its physical order. */
static void positions(const IrShape *s, int *pos) {
  int major[IR_MAX_RANK];
  major_order(s, major);
  for (int k = 0; k < s->rank; k++) pos[major[k]] = k;
}

static bool oom(Normalizer *n) { return fx_error_set(n->cx->err, NULL, 0, 0, "%s: out of memory", n->cx->pass); }

static void report(Normalizer *n, const char *producer, const char *result, const char *fmt_detail) {
  PassDecision d = {.pass = n->cx->pass, .stage = n->cx->stage, .action = "rewrite", .producer = producer,
                    .result = result, .accepted = true};
  pass_emit(n->cx->sink, &d, "%s", fmt_detail);
  n->rewrites++;
}

/* The normalized value standing for x (a layout-carrying value already rewritten: kept in aux),
 * else x itself. */
static IrInstr *norm(IrInstr *x) { return x->aux ? (IrInstr *)x->aux : x; }

/* x in physical order: its rewrite, or for a value in a layout that stays as it is (a loop's
 * state element, a GEMM's result), one bitcast into its physical shape (LayoutNormalization reads
 * such a value through a bitcast); NULL when out of memory. */
static IrInstr *physical_view(Normalizer *n, IrInstr *x) {
  if (x->aux || !ir_shape_is_array(&x->shape) || is_default(&x->shape)) return norm(x);
  IrInstr *v = ptrmap_get(&n->views, x);
  if (v) return v;
  IrShape ps = physical(n->m, &x->shape);
  v = ir_instr_new_before(x->parent, NULL, IR_OP_BITCAST, &ps, &x, 1, ir_module_series_name(n->m, "bitcast", false));
  if (v && !ptrmap_put(&n->views, x, v)) return NULL;
  return v;
}

/* ---------- values in a layout ---------- */

/* copy(x): a transpose from x's physical order into the copy's; nothing when they agree. */
static bool normalize_copy(Normalizer *n, IrInstr *copy) {
  IrInstr *x = copy->operands[0];
  const IrShape *from = &x->shape, *to = &copy->shape;
  if (is_default(from) && is_default(to)) return true; /* step two: a copy into the same layout */
  /* A value that arrives in a layout (an entry parameter) is not rewritten: XLA reads it through a
     bitcast into its physical order, which is not a reshape of its logical values, the only
     bitcast fxplain's runtime knows. Its copy stays a copy: a kernel that changes the layout. */
  if (!is_default(from) && !x->aux && x->op == IR_OP_PARAMETER && x->parent->is_entry) return true;
  int src[IR_MAX_RANK], dst[IR_MAX_RANK];
  int64_t perm[IR_MAX_RANK];
  major_order(from, src);
  major_order(to, dst);
  bool identity = true;
  for (int k = 0; k < to->rank; k++) {
    perm[k] = 0;
    for (int q = 0; q < from->rank; q++)
      if (src[q] == dst[k]) perm[k] = q;
    identity &= perm[k] == k;
  }
  IrInstr *v = physical_view(n, x);
  if (!v) return oom(n);
  char cname[256], msg[600];
  snprintf(cname, sizeof cname, "%s", copy->name);
  if (!identity) {
    IrShape s = physical(n->m, to);
    IrInstr *t = ir_instr_new_before(copy->parent, copy, IR_OP_TRANSPOSE, &s, &v, 1,
                                     ir_module_series_name(n->m, "transpose", false));
    if (!t) return oom(n);
    ir_attr_set_dims(t, "dimensions", perm, to->rank);
    const char *meta = ir_attr_text(copy, "metadata");
    if (meta) ir_attr_set_text(t, "metadata", meta);
    t->loc = copy->loc;
    v = t;
    char ps[160];
    size_t len = 0;
    for (int k = 0; k < to->rank; k++) len += (size_t)snprintf(ps + len, sizeof ps - len, "%s%lld", k ? "," : "", (long long)perm[k]);
    snprintf(msg, sizeof msg, "%s changes the layout of %s: in physical order that is %s, a transpose {%s} that moves "
             "the data (a kernel of its own unless fused)", cname, x->name, t->name, ps);
  } else {
    snprintf(msg, sizeof msg, "%s changes only the layout of %s, not the order of its bytes: nothing is left of it",
             cname, x->name);
  }
  if (is_default(to)) {
    simp_replace(copy, v);
  } else {
    copy->aux = v;
  }
  report(n, cname, v->name, msg);
  return true;
}

/* A broadcast or iota made in a layout: the same op in physical order. */
static bool normalize_source(Normalizer *n, IrInstr *i) {
  int pos[IR_MAX_RANK];
  positions(&i->shape, pos);
  IrShape s = physical(n->m, &i->shape);
  IrInstr *ops[1] = {i->noperands ? physical_view(n, i->operands[0]) : NULL};
  if (i->noperands && !ops[0]) return oom(n);
  IrInstr *x = ir_instr_new_before(i->parent, i, i->op, &s, ops, i->noperands, ir_module_series_name(n->m, ir_op_name(i->op), false));
  if (!x) return oom(n);
  if (i->op == IR_OP_BROADCAST) {
    int64_t d[IR_MAX_RANK], nd[IR_MAX_RANK];
    int cnt = ir_attr_dims(i, "dimensions", d, IR_MAX_RANK), omaj[IR_MAX_RANK];
    if (cnt != i->operands[0]->shape.rank) {
      ir_instr_remove(x);
      return true;
    }
    major_order(&i->operands[0]->shape, omaj); /* the operand is read in its physical order */
    for (int k = 0; k < cnt; k++) {
      nd[k] = pos[d[omaj[k]]];
      if (k && nd[k] <= nd[k - 1]) {
        ir_instr_remove(x); /* operand dimensions out of order: left as it is */
        return true;
      }
    }
    ir_attr_set_dims(x, "dimensions", nd, cnt < 0 ? 0 : cnt);
  } else {
    int64_t dim;
    if (!ir_attr_int(i, "iota_dimension", &dim) || dim < 0 || dim >= i->shape.rank) {
      ir_instr_remove(x);
      return true;
    }
    char t[32];
    snprintf(t, sizeof t, "%d", pos[dim]);
    ir_attr_set_text(x, "iota_dimension", t);
  }
  const char *meta = ir_attr_text(i, "metadata");
  if (meta) ir_attr_set_text(x, "metadata", meta);
  x->loc = i->loc;
  i->aux = x;
  char msg[400];
  snprintf(msg, sizeof msg, "%s is made in physical order as %s", i->name, x->name);
  report(n, i->name, x->name, msg);
  return true;
}

/* ---------- values layout-assignment laid out ---------- */

/* Whether a reshape between laid-out values keeps every element where it is: its layout (none
 * given: row-major) is the one simp_reshape_layout derives from its operand's
 * (ShapeUtil::ReshapeIsBitcast). */
static bool reshape_keeps_bytes(const IrInstr *r) {
  const IrShape *in = &r->operands[0]->shape, *out = &r->shape;
  if (!ir_shape_is_array(in)) return false;
  int major[IR_MAX_RANK], m2m[IR_MAX_RANK];
  major_order(in, major);
  if (!simp_reshape_layout(in, major, out, m2m)) return false;
  int given[IR_MAX_RANK];
  for (int k = 0; k < out->rank; k++) given[k] = out->has_layout ? out->minor_to_major[k] : out->rank - 1 - k;
  return simp_same_layout_but_units(out, m2m, given);
}

static bool laid_out(const IrInstr *x) { return x->aux || (ir_shape_is_array(&x->shape) && !is_default(&x->shape)); }

/* The instruction i becomes on physical shapes (LayoutNormalization's handlers): an elementwise op
 * on its operands' physical values, a transpose that permutes physical orders (or nothing), a
 * reshape of size-1 dimensions or one that keeps the bytes (a bitcast), a reduce over the physical
 * positions of its dimensions. Its replacement is i->aux, or i itself is replaced when the result is
 * row-major. False only when out of memory; an instruction it cannot rewrite is left as it is. */
static bool normalize_laid(Normalizer *n, IrInstr *i) {
  bool any = !is_default(&i->shape);
  for (int k = 0; k < i->noperands; k++) any = any || laid_out(i->operands[k]);
  if (!any || !ir_shape_is_array(&i->shape)) return true;
  IrInstr *ops[IR_MAX_RANK + 2];
  if (i->noperands > IR_MAX_RANK + 2) return true;
  for (int k = 0; k < i->noperands; k++) {
    if (!(ops[k] = physical_view(n, i->operands[k]))) return oom(n);
    if (!ir_shape_is_array(&ops[k]->shape) || !is_default(&ops[k]->shape)) return true;
  }
  IrShape ps = physical(n->m, &i->shape);
  IrInstr *x = NULL;
  char msg[400];
  if (ir_op_is_elementwise(i->op) && i->op != IR_OP_BITCAST_CONVERT) {
    for (int k = 0; k < i->noperands; k++) {
      const IrShape *o = &i->operands[k]->shape;
      if (o->rank != 0 && (o->rank != i->shape.rank || !ir_shape_same_dims(&ops[k]->shape, &ps))) return true;
    }
    x = ir_instr_copy(i->parent, i, ops, ir_module_series_name(n->m, ir_op_name(i->op), false));
    if (!x) return oom(n);
    x->shape = ps;
    snprintf(msg, sizeof msg, "%s computes on its operands' physical order as %s", i->name, x->name);
  } else if (i->op == IR_OP_SLICE || i->op == IR_OP_DYNAMIC_SLICE || i->op == IR_OP_DYNAMIC_UPDATE_SLICE ||
             i->op == IR_OP_CONCATENATE || i->op == IR_OP_PAD || i->op == IR_OP_REVERSE ||
             (i->op == IR_OP_REDUCE_WINDOW && i->noperands == 2)) {
    /* the same data movement on physical shapes: its per-dimension attributes and index operands
       in physical order (every array operand has the result's layout) */
    int r = i->shape.rank, major[IR_MAX_RANK], pos[IR_MAX_RANK];
    int narr = i->op == IR_OP_DYNAMIC_UPDATE_SLICE ? 2 : i->op == IR_OP_CONCATENATE ? i->noperands : 1;
    for (int k = 0; k < narr; k++) {
      const IrShape *o = &i->operands[k]->shape;
      IrShape po = physical(n->m, o);
      if (o->rank != r || !ir_shape_same_dims(&ops[k]->shape, &po)) return true;
      for (int q = 0; q < r && o->has_layout && i->shape.has_layout; q++)
        if (o->minor_to_major[q] != i->shape.minor_to_major[q]) return true;
    }
    major_order(&i->shape, major);
    positions(&i->shape, pos);
    IrInstr *nops[IR_MAX_RANK + 2];
    int nn = i->noperands;
    if (i->op == IR_OP_DYNAMIC_SLICE || i->op == IR_OP_DYNAMIC_UPDATE_SLICE) {
      if (nn != narr + r) return true;
      for (int k = 0; k < narr; k++) nops[k] = ops[k];
      for (int k = 0; k < r; k++) nops[narr + k] = ops[narr + major[k]];
    } else {
      for (int k = 0; k < nn; k++) nops[k] = ops[k];
    }
    x = ir_instr_copy(i->parent, i, nops, ir_module_series_name(n->m, ir_op_name(i->op), false));
    if (!x) return oom(n);
    x->shape = ps;
    if (i->op == IR_OP_SLICE) {
      int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK], nst[IR_MAX_RANK], nli[IR_MAX_RANK], nsd[IR_MAX_RANK];
      if (ir_attr_slice(i, st, li, sd, IR_MAX_RANK) != r) {
        ir_instr_remove(x);
        return true;
      }
      for (int k = 0; k < r; k++) {
        nst[k] = st[major[k]];
        nli[k] = li[major[k]];
        nsd[k] = sd[major[k]];
      }
      ir_attr_set_slice(x, nst, nli, nsd, r);
    } else if (i->op == IR_OP_DYNAMIC_SLICE) {
      int64_t sz[IR_MAX_RANK], nsz[IR_MAX_RANK];
      if (ir_attr_dims(i, "dynamic_slice_sizes", sz, IR_MAX_RANK) != r) {
        ir_instr_remove(x);
        return true;
      }
      for (int k = 0; k < r; k++) nsz[k] = sz[major[k]];
      ir_attr_set_dims(x, "dynamic_slice_sizes", nsz, r);
    } else if (i->op == IR_OP_PAD) {
      int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], in[IR_MAX_RANK], nlo[IR_MAX_RANK], nhi[IR_MAX_RANK], nin[IR_MAX_RANK];
      if (ir_attr_padding(i, lo, hi, in, IR_MAX_RANK) != r) {
        ir_instr_remove(x);
        return true;
      }
      for (int k = 0; k < r; k++) {
        nlo[k] = lo[major[k]];
        nhi[k] = hi[major[k]];
        nin[k] = in[major[k]];
      }
      ir_attr_set_padding(x, nlo, nhi, nin, r);
    } else if (i->op == IR_OP_REVERSE) {
      int64_t d[IR_MAX_RANK], nd[IR_MAX_RANK];
      int cnt = ir_attr_dims(i, "dimensions", d, IR_MAX_RANK);
      if (cnt < 0) {
        ir_instr_remove(x);
        return true;
      }
      for (int k = 0; k < cnt; k++) nd[k] = pos[d[k]];
      ir_dims_sort(nd, cnt);
      ir_attr_set_dims(x, "dimensions", nd, cnt);
    } else if (i->op == IR_OP_REDUCE_WINDOW) {
      IrWindow w, nw;
      char why[200];
      if (!ir_attr_window(i, r, &w, why, sizeof why)) {
        ir_instr_remove(x);
        return true;
      }
      nw = w;
      for (int k = 0; k < r; k++) {
        nw.size[k] = w.size[major[k]];
        nw.stride[k] = w.stride[major[k]];
        nw.pad_lo[k] = w.pad_lo[major[k]];
        nw.pad_hi[k] = w.pad_hi[major[k]];
        nw.lhs_dilate[k] = w.lhs_dilate[major[k]];
        nw.rhs_dilate[k] = w.rhs_dilate[major[k]];
        nw.reversal[k] = w.reversal[major[k]];
      }
      ir_attr_set_window(x, &nw);
    } else if (i->op == IR_OP_CONCATENATE) {
      int64_t d;
      if (ir_attr_dims(i, "dimensions", &d, 1) != 1 || d < 0 || d >= r) {
        ir_instr_remove(x);
        return true;
      }
      int64_t nd = pos[d];
      ir_attr_set_dims(x, "dimensions", &nd, 1);
    }
    snprintf(msg, sizeof msg, "%s moves its operands' physical values as %s", i->name, x->name);
  } else if (i->op == IR_OP_TRANSPOSE) {
    int64_t perm[IR_MAX_RANK], np[IR_MAX_RANK];
    int r = i->shape.rank, pin[IR_MAX_RANK], mout[IR_MAX_RANK];
    if (ir_attr_dims(i, "dimensions", perm, IR_MAX_RANK) != r) return true;
    positions(&i->operands[0]->shape, pin);
    major_order(&i->shape, mout);
    bool identity = true;
    for (int k = 0; k < r; k++) {
      np[k] = pin[perm[mout[k]]];
      identity = identity && np[k] == k;
    }
    if (identity) {
      x = ir_instr_new_before(i->parent, i, IR_OP_BITCAST, &ps, &ops[0], 1, i->name);
      snprintf(msg, sizeof msg, "%s (transpose) becomes a bitcast: its layouts keep the bytes where they are, so it "
               "launches no kernel", i->name);
    } else {
      x = ir_instr_new_before(i->parent, i, IR_OP_TRANSPOSE, &ps, &ops[0], 1, i->name);
      if (x) ir_attr_set_dims(x, "dimensions", np, r);
      snprintf(msg, sizeof msg, "%s transposes physical orders", i->name);
    }
    if (!x) return oom(n);
  } else if (i->op == IR_OP_RESHAPE) {
    if (!reshape_keeps_bytes(i)) return true;
    x = ir_instr_new_before(i->parent, i, IR_OP_BITCAST, &ps, &ops[0], 1, i->name);
    if (!x) return oom(n);
    snprintf(msg, sizeof msg, "%s (reshape) becomes a bitcast: its layouts keep the elements in their order in memory",
             i->name);
  } else if (i->op == IR_OP_REDUCE && i->noperands == 2 && is_default(&i->shape)) {
    const IrShape *in = &i->operands[0]->shape;
    int64_t dims[IR_MAX_RANK], nd[IR_MAX_RANK];
    int cnt = ir_attr_dims(i, "dimensions", dims, IR_MAX_RANK), pin[IR_MAX_RANK], min[IR_MAX_RANK];
    if (cnt < 0) return true;
    positions(in, pin);
    major_order(in, min);
    for (int k = 0; k < cnt; k++) nd[k] = pin[dims[k]];
    for (int a = 1; a < cnt; a++) /* ascending */
      for (int b = a; b > 0 && nd[b] < nd[b - 1]; b--) {
        int64_t t = nd[b];
        nd[b] = nd[b - 1];
        nd[b - 1] = t;
      }
    /* the kept dimensions in physical order must be the result's own order */
    int last = -1;
    for (int k = 0; k < in->rank; k++) {
      int d = min[k];
      if (ir_dims_contain(dims, cnt, d)) continue;
      if (d < last) return true;
      last = d;
    }
    x = ir_instr_copy(i->parent, i, ops, ir_module_series_name(n->m, "reduce", false));
    if (!x) return oom(n);
    ir_attr_set_dims(x, "dimensions", nd, cnt);
    snprintf(msg, sizeof msg, "%s reduces its operand's physical dimensions as %s", i->name, x->name);
  } else {
    return true;
  }
  const char *meta = ir_attr_text(i, "metadata");
  if (meta && !ir_attr_text(x, "metadata")) ir_attr_set_text(x, "metadata", meta);
  x->loc = i->loc;
  char name[256];
  snprintf(name, sizeof name, "%s", i->name);
  if (is_default(&i->shape) && ir_shape_same_dims(&x->shape, &i->shape)) {
    x->shape = i->shape;
    report(n, name, x->name, msg);
    simp_replace(i, x);
    ir_instr_rename(x, name); /* `why` still finds it */
    return true;
  }
  i->aux = x;
  if (n->nlaid == n->caplaid) {
    int cap = n->caplaid ? 2 * n->caplaid : 64;
    IrInstr **l = fx_realloc(n->laid, sizeof *l * (size_t)cap);
    if (!l) return oom(n);
    n->laid = l;
    n->caplaid = cap;
  }
  n->laid[n->nlaid++] = i;
  report(n, name, x->name, msg);
  return true;
}

/* A reader left as it is reads a rewritten value through a bitcast back into its logical shape
 * and layout (LayoutNormalization's DefaultAction). */
static bool reread(Normalizer *n, IrInstr *u, PtrMap *made) {
  for (int k = 0; k < u->noperands; k++) {
    IrInstr *x = u->operands[k];
    if (!x->aux) continue;
    IrInstr *b = ptrmap_get(made, x); /* one bitcast for all readers of x */
    if (!b) {
      IrInstr *v = (IrInstr *)x->aux; /* a bitcast of a bitcast folds in step two (HandleBitcast) */
      b = ir_instr_new_before(u->parent, u, IR_OP_BITCAST, &x->shape, &v, 1,
                              ir_module_series_name(n->m, "bitcast", false));
      if (!b || !ptrmap_put(made, x, b)) return oom(n);
    }
    ir_set_operand(u, k, b);
  }
  return true;
}

/* dim_labels for a cuDNN call whose operands and result are now in physical order. */
static bool relabel(const IrInstr *call, char *out, size_t nout) {
  const char *t = ir_attr_text(call, "dim_labels");
  if (!t) return false;
  char in[3][IR_MAX_RANK + 1];
  const IrShape *shapes[3] = {&call->operands[0]->shape, &call->operands[1]->shape, &call->shape.tuple[0]};
  int len[3] = {0, 0, 0}, part = 0;
  for (const char *p = t; *p; p++) {
    if (*p == '_' && part == 0) part = 1;
    else if (*p == '-' && p[1] == '>') {
      part = 2;
      p++;
    } else if (len[part] < IR_MAX_RANK) {
      in[part][len[part]++] = *p;
    }
  }
  if (part != 2) return false;
  size_t o = 0;
  for (int k = 0; k < 3; k++) {
    if (len[k] != shapes[k]->rank) return false;
    int major[IR_MAX_RANK];
    major_order(shapes[k], major);
    for (int d = 0; d < len[k] && o + 1 < nout; d++) out[o++] = in[k][major[d]];
    const char *sep = k == 0 ? "_" : k == 1 ? "->" : "";
    for (const char *s = sep; *s && o + 1 < nout; s++) out[o++] = *s;
  }
  out[o] = '\0';
  return true;
}

/* A cuDNN convolution in a layout: the call on the physical shapes, and its result's reader. */
static bool normalize_conv(Normalizer *n, IrInstr *call) {
  bool laid = call->shape.type == IR_TUPLE && call->shape.ntuple >= 1 && !is_default(&call->shape.tuple[0]);
  for (int k = 0; k < call->noperands; k++) laid |= call->operands[k]->aux != NULL || !is_default(&call->operands[k]->shape);
  if (!laid || call->shape.type != IR_TUPLE || call->shape.ntuple != 2) return true;
  char labels[128];
  if (!relabel(call, labels, sizeof labels)) return true;
  IrInstr *ops[8];
  int nops = call->noperands < 8 ? call->noperands : 8;
  for (int k = 0; k < nops; k++) ops[k] = norm(call->operands[k]);
  IrShape parts[2] = {physical(n->m, &call->shape.tuple[0]), call->shape.tuple[1]};
  IrShape t = {.type = IR_TUPLE, .ntuple = 2, .tuple = parts};
  IrInstr *x = ir_instr_new_before(call->parent, call, IR_OP_CUSTOM_CALL, &t, ops, nops,
                                   ir_module_series_name(n->m, call->name, false));
  if (!x) return oom(n);
  for (int k = 0; k < call->nattrs; k++)
    if (call->attrs[k].kind == IR_ATTR_TEXT) ir_attr_set_text(x, call->attrs[k].key, call->attrs[k].text);
  ir_attr_set_text(x, "dim_labels", labels);
  x->loc = call->loc;
  call->aux = x;
  for (int u = 0; u < call->nusers; u++) {
    IrInstr *g = call->users[u];
    int64_t index;
    if (g->op != IR_OP_GET_TUPLE_ELEMENT || !ir_attr_int(g, "index", &index) || index < 0 || index > 1) continue;
    IrInstr *ng = ir_instr_new_before(g->parent, g, IR_OP_GET_TUPLE_ELEMENT, &parts[index], &x, 1,
                                      ir_module_series_name(n->m, "get-tuple-element", false));
    if (!ng) return oom(n);
    ir_attr_set_text(ng, "index", index ? "1" : "0");
    const char *meta = ir_attr_text(g, "metadata");
    if (meta) ir_attr_set_text(ng, "metadata", meta);
    g->aux = ng;
  }
  /* a result already row-major is the same value in physical order: its readers read the new one */
  for (int u = call->nusers - 1; u >= 0; u--) {
    IrInstr *g = call->users[u];
    if (g->aux && is_default(&g->shape)) simp_replace(g, (IrInstr *)g->aux);
  }
  char msg[500];
  snprintf(msg, sizeof msg, "%s runs on its operands and result in physical order as %s, dim_labels=%s", call->name,
           x->name, labels);
  report(n, call->name, x->name, msg);
  return true;
}

/* ---------- bitcasts ---------- */

/* The non-size-1 dimensions of s, in order. */
static int nonunit(const IrShape *s, int64_t *out) {
  int n = 0;
  for (int k = 0; k < s->rank; k++)
    if (s->dims[k] != 1) out[n++] = s->dims[k];
  return n;
}

/* Whether a transpose moves only dimensions of size 1 (its others stay in order). */
static bool transpose_is_bitcast(const IrInstr *t) {
  int64_t perm[IR_MAX_RANK];
  if (ir_attr_dims(t, "dimensions", perm, IR_MAX_RANK) != t->shape.rank) return false;
  int64_t last = -1;
  for (int k = 0; k < t->shape.rank; k++) {
    if (t->shape.dims[k] == 1) continue;
    if (perm[k] < last) return false;
    last = perm[k];
  }
  return true;
}

/* Whether a broadcast only adds dimensions of size 1, keeping its operand's in order. */
static bool broadcast_is_bitcast(const IrInstr *b) {
  if (ir_shape_elements(&b->shape) != ir_shape_elements(&b->operands[0]->shape)) return false;
  int64_t d[IR_MAX_RANK];
  int n = ir_attr_dims(b, "dimensions", d, IR_MAX_RANK);
  if (n != b->operands[0]->shape.rank) return false;
  for (int k = 1; k < n; k++)
    if (d[k] <= d[k - 1]) return false;
  int64_t a[IR_MAX_RANK], c[IR_MAX_RANK];
  int na = nonunit(&b->shape, a), nc = nonunit(&b->operands[0]->shape, c);
  if (na != nc) return false;
  for (int k = 0; k < na; k++)
    if (a[k] != c[k]) return false;
  return true;
}

/* XLA's HandleBitcastConvert with rewrite_no_op_bitcast_convert_to_bitcast (XLA:GPU sets it): a
 * bitcast-convert whose result has its operand's dimensions and layout reads the same bytes as
 * another type of the same width. */
static bool same_bytes_other_type(const IrInstr *i) {
  const IrShape *a = &i->shape, *b = &i->operands[0]->shape;
  if (i->op != IR_OP_BITCAST_CONVERT || !ir_shape_is_array(b) || !ir_shape_same_dims(a, b) ||
      ir_type_bits(a->type) != ir_type_bits(b->type) || is_default(a) != is_default(b))
    return false;
  for (int k = 0; !is_default(a) && k < a->rank; k++)
    if (a->minor_to_major[k] != b->minor_to_major[k]) return false;
  return true;
}

static bool to_bitcast(Normalizer *n, IrInstr *i) {
  if (i->noperands != 1 || !ir_shape_is_array(&i->shape)) return true;
  const char *what = NULL;
  bool laid = !is_default(&i->shape); /* the layout layout-assignment chose for a GEMM operand */
  if (same_bytes_other_type(i))
    what = "it reads the same bytes as another type of the same width (the layout-sensitive simplifier's no-op "
           "bitcast-convert)";
  else if (i->shape.type != i->operands[0]->shape.type)
    return true;
  else if (laid || !is_default(&i->operands[0]->shape)) /* normalize_laid rewrote what keeps its bytes */
    return true;
  else if (i->op == IR_OP_RESHAPE)
    what = "a reshape between row-major values only renames dimensions";
  else if (i->op == IR_OP_TRANSPOSE && transpose_is_bitcast(i))
    what = "a transpose that moves only dimensions of size 1 leaves the bytes in place";
  else if (i->op == IR_OP_BROADCAST && broadcast_is_bitcast(i))
    what = "a broadcast that only adds dimensions of size 1 copies nothing";
  else
    return true;
  char from[128], to[128], msg[600];
  ir_shape_format(&i->operands[0]->shape, laid, from, sizeof from);
  ir_shape_format(&i->shape, laid, to, sizeof to);
  snprintf(msg, sizeof msg, "%s (%s %s -> %s) becomes a bitcast: %s, so it launches no kernel", i->name,
           ir_op_name(i->op), from, to, what);
  i->op = IR_OP_BITCAST;
  ir_attr_remove(i, "dimensions");
  report(n, i->name, i->name, msg);
  return true;
}

/* ---------- the pass ---------- */

static bool normalize(Normalizer *n, IrComputation *c) {
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  /* step one: values in a layout (instructions are inserted before the one looked at, and copies
     into the default layout removed: walk a copy of the order) */
  int cnt = c->ninstrs;
  IrInstr **order = fx_malloc(sizeof *order * (size_t)(cnt ? cnt : 1));
  if (!order) return oom(n);
  memcpy(order, c->instrs, sizeof *order * (size_t)cnt);
  bool ok = true;
  for (int k = 0; ok && k < cnt; k++) {
    IrInstr *i = order[k];
    if (i->dead || i->parent != c) continue;
    PlanCustomCall cc = plan_custom_call(i);
    if (i->op == IR_OP_COPY && i->noperands == 1 && ir_shape_is_array(&i->shape)) ok = normalize_copy(n, i);
    else if (cc == PLAN_CC_CUDNN_CONV || cc == PLAN_CC_CUDNN_CONV_BIAS_ACTIVATION) ok = normalize_conv(n, i);
    else if ((i->op == IR_OP_BROADCAST || i->op == IR_OP_IOTA) && !is_default(&i->shape)) ok = normalize_source(n, i);
    else ok = normalize_laid(n, i);
  }
  /* readers left as they are read rewritten values through bitcasts */
  cnt = c->ninstrs;
  PtrMap made;
  memset(&made, 0, sizeof made);
  for (int k = 0; ok && k < cnt; k++) {
    IrInstr *u = c->instrs[k];
    if (!u->dead && !u->aux && u->op != IR_OP_COPY) ok = reread(n, u, &made);
  }
  ptrmap_free(&made);
  fx_free(order);
  if (!ok) return false;
  /* what was replaced goes once nothing reads it */
  for (int k = c->ninstrs - 1; k >= 0; k--) {
    IrInstr *i = c->instrs[k];
    if (i->aux && !i->dead && i->nusers == 0 && i != c->root) simp_drop_dead(i);
  }
  for (int k = 0; k < n->nlaid; k++) {
    IrInstr *i = n->laid[k];
    if (i->dead && i->aux) ir_instr_rename((IrInstr *)i->aux, i->name);
  }
  n->nlaid = 0;
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  /* step two: what only reinterprets memory */
  cnt = c->ninstrs;
  for (int k = 0; k < cnt && k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    if (i->op == IR_OP_COPY && i->noperands == 1 && ir_shape_is_array(&i->shape) && is_default(&i->shape) &&
        is_default(&i->operands[0]->shape) && ir_shape_equal(&i->shape, &i->operands[0]->shape) && !i->is_root) {
      char name[256], msg[400];
      snprintf(name, sizeof name, "%s", i->name);
      IrInstr *x = i->operands[0];
      snprintf(msg, sizeof msg, "%s copies %s into the layout it already has: it is dropped", name, x->name);
      simp_replace(i, x);
      report(n, name, x->name, msg);
      k = -1; /* the order changed: look again (copies are few) */
      cnt = c->ninstrs;
      continue;
    }
    if (!to_bitcast(n, i)) return false;
  }
  /* the layout-sensitive simplifier's HandleBitcast: a bitcast of a bitcast reads the first one's
     operand, and a bitcast to its operand's shape and layout is its operand */
  for (int k = 0; k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    if (i->dead || i->op != IR_OP_BITCAST || i->noperands != 1) continue;
    IrInstr *x = i->operands[0];
    while (x->op == IR_OP_BITCAST && x->noperands == 1) x = x->operands[0];
    if (x != i->operands[0]) ir_set_operand(i, 0, x);
    bool same = ir_shape_equal(&i->shape, &x->shape) && is_default(&i->shape) == is_default(&x->shape);
    for (int q = 0; same && !is_default(&i->shape) && q < i->shape.rank; q++)
      same = i->shape.minor_to_major[q] == x->shape.minor_to_major[q];
    if (same && !i->is_root) simp_replace(i, x);
  }
  for (int k = c->ninstrs - 1; k >= 0; k--) {
    IrInstr *i = c->instrs[k];
    if (!i->dead && i->op == IR_OP_BITCAST && i->nusers == 0 && i != c->root) simp_drop_dead(i);
  }
  ir_computation_sort(c);
  return true;
}

static bool run(IrModule *m, PassContext *cx, bool *changed) {
  *changed = false;
  if (cx->device && !cx->device->is_gpu) return true;
  Normalizer n = {cx, m, 0, NULL, 0, 0, {0}};
  bool ok = true;
  for (int k = 0; ok && k < m->ncomps; k++) {
    if (pass_interrupted(cx)) break;
    IrComputation *c = m->comps[k];
    if (simp_is_fused_computation(c)) continue;
    ok = normalize(&n, c);
  }
  fx_free(n.laid);
  ptrmap_free(&n.views);
  *changed = n.rewrites > 0;
  return ok;
}

const Pass pass_layout_normalization = {
    "layout-normalization",
    "values in a layout are rewritten in physical order (copies become transposes), and reshapes, size-1 transposes "
    "and broadcasts that only reinterpret memory become bitcasts (XLA:GPU's layout_normalization pipeline)",
    run,
};

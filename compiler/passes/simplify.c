/* simplify.c — helpers shared by the simplification passes; see simplify.h. */
#include <stdio.h>
#include <string.h>

#include "simplify.h"

bool simp_is_pure(const IrInstr *i) {
  if (i->op == IR_OP_PARAMETER) return false;
  switch (ir_op_info(i->op)->category) {
  case IR_CAT_SOURCE:
  case IR_CAT_UNARY:
  case IR_CAT_BINARY:
  case IR_CAT_TERNARY:
  case IR_CAT_DATA:
  case IR_CAT_REDUCE:
    return i->op != IR_OP_COPY_START && i->op != IR_OP_COPY_DONE;
  case IR_CAT_TUPLE:
    return i->op == IR_OP_TUPLE || i->op == IR_OP_GET_TUPLE_ELEMENT;
  case IR_CAT_LIBRARY:
    /* dot, convolution, sort, fft... are pure; rng draws and custom calls may not be. */
    return i->op == IR_OP_DOT || i->op == IR_OP_CONVOLUTION || i->op == IR_OP_SORT || i->op == IR_OP_FFT ||
           i->op == IR_OP_TOPK || i->op == IR_OP_CHOLESKY || i->op == IR_OP_TRIANGULAR_SOLVE ||
           plan_custom_call(i) != PLAN_CC_NONE; /* cuDNN and cuBLAS calls (kernels.def) */
  case IR_CAT_CONTROL:
    return i->op == IR_OP_MAP; /* a scalar computation applied elementwise */
  default:
    return false;
  }
}

static bool comp_side_effect(const IrComputation *c, int depth);

static bool instr_side_effect(const IrInstr *i, int depth) {
  if (i->op == IR_OP_WHILE || i->op == IR_OP_CALL || i->op == IR_OP_CONDITIONAL) {
    IrComputation *callees[64];
    int n = ir_called_computations(i, callees, 64);
    if (n > 64 || depth > 32) return true;
    for (int k = 0; k < n; k++)
      if (comp_side_effect(callees[k], depth + 1)) return true;
    return false;
  }
  if (i->op == IR_OP_PARAMETER || i->op == IR_OP_RNG_BIT_GENERATOR) return false;
  return !simp_is_pure(i) && i->op != IR_OP_FUSION;
}

static bool comp_side_effect(const IrComputation *c, int depth) {
  if (!c) return true;
  for (int k = 0; k < c->ninstrs; k++)
    if (instr_side_effect(c->instrs[k], depth)) return true;
  return false;
}

bool simp_has_side_effect(const IrInstr *i) { return instr_side_effect(i, 0); }

bool simp_comp_has_side_effect(const IrComputation *c) { return comp_side_effect(c, 0); }

/* Whether i can go now: dead code that nothing uses. A loop, call or conditional whose
 * computations have no side effect goes too, as XLA's RemoveInstructionAndUnusedOperands removes
 * whatever is dead and not HasSideEffect (a rewrite that stops reading a loop's result removes
 * the loop). */
static bool droppable(const IrInstr *i) {
  if (i->dead || i->nusers != 0 || !i->parent || i == i->parent->root) return false;
  if (i->op == IR_OP_WHILE || i->op == IR_OP_CALL || i->op == IR_OP_CONDITIONAL) return !simp_has_side_effect(i);
  return simp_is_pure(i);
}

/* Removes i if droppable, then its operands that became droppable, and so on: with a worklist,
 * not recursion, since a dead chain can be as long as the module (100,000 dependent adds). */
int simp_drop_dead(IrInstr *i) {
  if (!droppable(i)) return 0;
  IrInstr **work = NULL;
  int nwork = 0, cap = 0, removed = 0;
  IrInstr *cur = i;
  for (;;) {
    if (droppable(cur)) {
      IrInstr *ops[64];
      int n = cur->noperands < 64 ? cur->noperands : 64;
      for (int k = 0; k < n; k++) ops[k] = cur->operands[k];
      ir_instr_remove(cur);
      removed++;
      /* pushed in reverse, so the first operand is looked at first, as before */
      for (int k = n - 1; k >= 0; k--) {
        bool seen = false;
        for (int j = 0; j < k; j++) seen = seen || ops[j] == ops[k];
        if (!ops[k] || seen) continue;
        if (nwork == cap) {
          int nc = cap ? cap * 2 : 64;
          IrInstr **nw = fx_realloc(work, sizeof *nw * (size_t)nc);
          if (!nw) break; /* out of memory: what is left stays, unused, until DCE */
          work = nw;
          cap = nc;
        }
        work[nwork++] = ops[k];
      }
    }
    if (nwork == 0) break;
    cur = work[--nwork];
  }
  fx_free(work);
  return removed;
}

int simp_replace(IrInstr *old, IrInstr *repl) {
  ir_replace_all_uses(old, repl);
  return simp_drop_dead(old);
}

bool simp_splat_value(const IrInstr *i, double *v) {
  for (int depth = 0; depth < 16 && i; depth++) {
    if (i->op == IR_OP_CONSTANT) {
      const IrLiteral *l = i->literal;
      if (!l || l->elided || !l->values || l->count < 1 || !ir_shape_is_array(&i->shape)) return false;
      if (l->count != ir_shape_elements(&i->shape)) return false;
      for (int64_t k = 1; k < l->count; k++)
        if (l->values[k] != l->values[0]) return false;
      *v = l->values[0];
      return true;
    }
    if ((i->op == IR_OP_BROADCAST || i->op == IR_OP_RESHAPE || i->op == IR_OP_BITCAST) && i->noperands == 1 &&
        i->operands[0] && i->operands[0]->shape.type == i->shape.type) {
      i = i->operands[0];
      continue;
    }
    return false;
  }
  return false;
}

void simp_remove_operand(IrInstr *i, int k) {
  if (k < 0 || k >= i->noperands) return;
  ir_set_operand(i, k, NULL);
  memmove(&i->operands[k], &i->operands[k + 1], sizeof(IrInstr *) * (size_t)(i->noperands - k - 1));
  i->noperands--;
}

const char *simp_describe(const IrInstr *i, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "%s(", i->name);
  for (int k = 0; k < i->noperands && len < n; k++) {
    const IrInstr *o = i->operands[k];
    double v;
    /* A constant, or a broadcast of one, reads best as its value: multiply.4(x, 1). */
    if (o && (o->op == IR_OP_CONSTANT || o->op == IR_OP_BROADCAST) && simp_splat_value(o, &v))
      len += (size_t)snprintf(buf + len, n - len, "%s%.9g", k ? ", " : "", v);
    else
      len += (size_t)snprintf(buf + len, n - len, "%s%s", k ? ", " : "", o ? o->name : "?");
  }
  if (len < n) snprintf(buf + len, n - len, ")");
  return buf;
}

bool simp_is_fused_computation(const IrComputation *c) { return c->fusion_instr != NULL; }

int *simp_count_callers(const IrModule *m) {
  int *n = fx_calloc((size_t)m->next_id + 1, sizeof(int));
  if (!n) return NULL;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const IrInstr *i = m->comps[c]->instrs[k];
      for (int a = 0; a < i->nattrs; a++)
        if (i->attrs[a].kind == IR_ATTR_COMP)
          for (int q = 0; q < i->attrs[a].ncomps; q++)
            if (i->attrs[a].comps[q] && i->attrs[a].comps[q]->id <= m->next_id) n[i->attrs[a].comps[q]->id]++;
    }
  return n;
}

int simp_callers(const IrModule *m, const IrComputation *c) {
  int n = 0;
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *cc = m->comps[k];
    for (int j = 0; j < cc->ninstrs; j++) {
      const IrInstr *i = cc->instrs[j];
      for (int a = 0; a < i->nattrs; a++)
        if (i->attrs[a].kind == IR_ATTR_COMP)
          for (int q = 0; q < i->attrs[a].ncomps; q++) n += i->attrs[a].comps[q] == c;
    }
  }
  return n;
}

IrComputation *simp_add_computation(IrModule *m, IrComputation *caller, IrType t, const char *base) {
  IrComputation *r = ir_computation_new(m, ir_module_series_name(m, base, true));
  if (!r) return NULL;
  r->has_signature = true;
  IrShape s = ir_shape_scalar(t);
  IrInstr *p0 = ir_instr_new(r, IR_OP_PARAMETER, &s, NULL, 0, ir_module_series_name(m, "scalar_lhs", false));
  IrInstr *p1 = p0 ? ir_instr_new(r, IR_OP_PARAMETER, &s, NULL, 0, ir_module_series_name(m, "scalar_rhs", false)) : NULL;
  IrInstr *both[2] = {p0, p1};
  IrInstr *sum = p1 ? ir_instr_new(r, IR_OP_ADD, &s, both, 2, ir_module_series_name(m, "add", false)) : NULL;
  if (!sum || !ir_computation_set_params(r, both, 2)) return NULL;
  ir_set_root(r, sum);
  simp_place_before(m, r, caller); /* callees before callers */
  return r;
}

/* ShapeUtil::AlignLayouts, for one operand layout: the runs of dimensions of equal products. */
/* Checks that dims (in logical order, the last most minor) sit next to each other in memory,
 * ending at position *i of the minor-to-major walk; advances *i (GetBatchRowColumnShape's
 * check_physically_sequential). */
static bool physically_sequential(const int64_t *dims, int n, int rank, const int *m2m, int *i) {
  for (int k = n - 1; k >= 0; k--, (*i)++)
    if (*i >= rank || dims[k] != (m2m ? m2m[*i] : rank - 1 - *i)) return false;
  return true;
}

bool simp_matrix_layout(int rank, const int *m2m, const int64_t *batch, int nb, const int64_t *rows, int nr,
                        const int64_t *cols, int nc) {
  int order[3], no = 0, i = 0;
  while (i < rank) {
    int64_t dim = m2m ? m2m[i] : rank - 1 - i;
    if (no >= 3) return false;
    if (nr && dim == rows[nr - 1]) {
      order[no++] = 1;
      if (!physically_sequential(rows, nr, rank, m2m, &i)) return false;
    } else if (nc && dim == cols[nc - 1]) {
      order[no++] = 2;
      if (!physically_sequential(cols, nc, rank, m2m, &i)) return false;
    } else if (nb && dim == batch[nb - 1]) {
      order[no++] = 0;
      if (!physically_sequential(batch, nb, rank, m2m, &i)) return false;
    } else {
      return false;
    }
  }
  if (!nc && no < 3) order[no++] = 2;
  if (!nr && no < 3) order[no++] = 1;
  if (!nb && no < 3) order[no++] = 0;
  if (no != 3) return false;
  /* MatrixLayout::For on the [batch, rows, cols] shape: (B,R,C), (B,C,R), (R,B,C) or (C,B,R) major
     to minor; the batch most minor is not a matrix */
  int code = 64 * order[2] + 8 * order[1] + order[0];
  return code == 012 || code == 021 || code == 0102 || code == 0201;
}

bool simp_reshape_layout(const IrShape *in, const int *in_major, const IrShape *out, int *m2m) {
  /* ShapeUtil::AlignLayouts as the XLA of the references runs it (checked against its layout
     assignment log on Gemma 2: 106 of the 107 reshapes it laid out). Alignment parts are the
     shortest runs of input and output dimensions with equal products above 1, so a size-1
     dimension joins the part after it; the parts are laid out in the order the input's non-unit
     dimensions lie in memory (each part's input dimensions together and in order, else no layout
     makes the reshape a bitcast), a part's output dimensions major to minor; output dimensions
     after the last part (size 1) go innermost. */
  int ir = in->rank, orr = out->rank;
  if (ir > IR_MAX_RANK || orr > IR_MAX_RANK) return false;
  int inl[IR_MAX_RANK], d2a[IR_MAX_RANK], ai[2 * IR_MAX_RANK + 2], aj[2 * IR_MAX_RANK + 2], na = 1;
  for (int k = 0; k < ir; k++) inl[k] = in_major[ir - 1 - k];
  ai[0] = aj[0] = 0;
  int64_t ip = 1, op = 1;
  for (int i = 0, j = 0; i < ir || j < orr;) {
    if (ip == op && ip > 1) {
      ai[na] = i;
      aj[na++] = j;
      ip = op = 1;
    }
    if (ip < op || j == orr) {
      if (i == ir) return false;
      d2a[i] = na - 1;
      ip *= in->dims[i++];
    } else {
      op *= out->dims[j++];
    }
  }
  if (ip != op) return false;
  ai[na] = ir;
  aj[na] = orr;
  int res[IR_MAX_RANK], n = 0;
  bool placed[IR_MAX_RANK] = {false};
  for (int i = 0; i < ir;) {
    int cur = inl[i];
    if (in->dims[cur] == 1) {
      i++;
      continue;
    }
    int part = d2a[cur], count = 0;
    for (int k = ai[part]; k < ai[part + 1]; k++) count += in->dims[k] != 1;
    for (int t = 0; t < count;) {
      if (i == ir) return false;
      if (in->dims[inl[i]] == 1) {
        i++;
        continue;
      }
      if (d2a[inl[i]] != part || inl[i] > cur) return false;
      cur = inl[i++];
      t++;
    }
    for (int k = aj[part + 1] - 1; k >= aj[part]; k--) {
      if (n == orr || placed[k]) return false;
      res[n++] = k;
      placed[k] = true;
    }
  }
  int q = 0;
  for (int k = orr - 1; k >= 0; k--)
    if (!placed[k]) m2m[q++] = k;
  for (int k = 0; k < n; k++) m2m[q++] = res[k];
  return q == orr;
}

bool simp_same_layout_but_units(const IrShape *s, const int *a, const int *b) {
  int i = 0, j = 0;
  for (;;) {
    while (i < s->rank && s->dims[a[i]] == 1) i++;
    while (j < s->rank && s->dims[b[j]] == 1) j++;
    if (i == s->rank || j == s->rank) return i == s->rank && j == s->rank;
    if (a[i++] != b[j++]) return false;
  }
}

void simp_place_before(IrModule *m, IrComputation *c, const IrComputation *before) {
  int from = -1, to = -1;
  for (int k = 0; k < m->ncomps; k++) {
    if (m->comps[k] == c) from = k;
    if (m->comps[k] == before) to = k;
  }
  if (from < 0 || to < 0 || to >= from) return;
  memmove(&m->comps[to + 1], &m->comps[to], sizeof(IrComputation *) * (size_t)(from - to));
  m->comps[to] = c;
}

IrInstr **simp_comp_collect(const IrComputation *c, IrOpcode op, int *n) {
  *n = 0;
  for (int k = 0; k < c->ninstrs; k++) *n += c->instrs[k]->op == op;
  if (!*n) return NULL;
  IrInstr **out = fx_malloc(sizeof *out * (size_t)*n);
  if (!out) {
    *n = -1;
    return NULL;
  }
  *n = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op == op) out[(*n)++] = c->instrs[k];
  return out;
}

bool simp_rewrite_each(IrModule *m, PassContext *cx, IrOpcode op, SimpRewrite fn, void *arg, bool sort,
                       bool *changed) {
  /* The computations as they are now: a rewrite may add computations (a reduce's adder) anywhere in
   * the module's list, which must neither hide one still to visit nor be visited itself. */
  int ncomps = m->ncomps;
  IrComputation **comps = fx_malloc(sizeof *comps * (size_t)(ncomps + 1));
  if (!comps) return fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
  memcpy(comps, m->comps, sizeof *comps * (size_t)ncomps);
  bool ok = true;
  for (int c = 0; ok && c < ncomps; c++) {
    IrComputation *comp = comps[c];
    if (simp_is_fused_computation(comp)) continue;
    int n;
    IrInstr **v = simp_comp_collect(comp, op, &n);
    if (n < 0) {
      ok = fx_error_set(cx->err, NULL, 0, 0, "%s: out of memory", cx->pass);
      break;
    }
    if (!n) continue;
    bool here = false;
    for (int k = 0; ok && k < n && !pass_interrupted(cx); k++) ok = fn(v[k], cx, arg, &here);
    fx_free(v);
    if (ok && here) {
      if (sort) ir_computation_sort(comp);
      *changed = true;
    }
  }
  fx_free(comps);
  return ok;
}

IrInstr *simp_add_like(IrComputation *c, IrInstr *before, IrOpcode op, const IrShape *s, IrInstr **ops, int n,
                       const char *base, const IrInstr *like) {
  IrInstr *x = ir_instr_new_before(c, before, op, s, ops, n, ir_module_series_name(c->module, base, false));
  if (x) {
    const char *meta = ir_attr_text(like, "metadata");
    if (meta) ir_attr_set_text(x, "metadata", meta);
    x->loc = like->loc;
  }
  return x;
}

IrInstr **simp_collect(const IrModule *m, IrOpcode op, int *n) {
  int cap = 16;
  IrInstr **out = fx_malloc(sizeof *out * (size_t)cap);
  *n = 0;
  if (!out) return NULL;
  for (int c = 0; c < m->ncomps; c++) {
    const IrComputation *comp = m->comps[c];
    if (simp_is_fused_computation(comp)) continue;
    for (int k = 0; k < comp->ninstrs; k++) {
      if (comp->instrs[k]->dead || comp->instrs[k]->op != op) continue;
      if (*n == cap) {
        cap *= 2;
        IrInstr **g = fx_realloc(out, sizeof *g * (size_t)cap);
        if (!g) {
          fx_free(out);
          return NULL;
        }
        out = g;
      }
      out[(*n)++] = comp->instrs[k];
    }
  }
  return out;
}

/* A copy of computation src, placed just before it in the module's order. */
IrComputation *simp_clone_computation(IrModule *m, IrComputation *src) {
  const char *name = ir_module_series_name(m, src->name, true);
  IrComputation *dc = name ? ir_computation_new(m, name) : NULL;
  if (!dc) return NULL;
  int n = src->ninstrs;
  IrInstr **map = fx_calloc((size_t)n + 1, sizeof(IrInstr *));
  dc->params = arena_alloc(&m->arena, sizeof(IrInstr *) * (size_t)(src->nparams ? src->nparams : 1));
  dc->nparams = src->nparams;
  bool ok = map && dc->params;
  for (int k = 0; k < n; k++) src->instrs[k]->aux = (void *)(intptr_t)(k + 1);
  for (int k = 0; k < n && ok; k++) {
    IrInstr *x = src->instrs[k];
    IrInstr *ops[IR_REMAP_SMALL], **opv = ir_remap_operands(x, src, map, ops);
    IrInstr *y = opv ? ir_instr_copy(dc, x, opv, x->name) : NULL;
    if (opv) ir_remap_release(opv, ops);
    if (!y) {
      ok = false;
      break;
    }
    if (x->op == IR_OP_PARAMETER && x->param_number >= 0 && x->param_number < dc->nparams) dc->params[x->param_number] = y;
    map[k] = y;
  }
  if (ok && src->root) ir_set_root(dc, map[(int)(intptr_t)src->root->aux - 1]);
  for (int k = 0; k < n; k++) src->instrs[k]->aux = NULL;
  fx_free(map);
  if (!ok) return NULL;
  /* Callees print before their callers: the copy goes where src is. */
  simp_place_before(m, dc, src);
  return dc;
}

IrShape simp_shape_retyped(Arena *a, const IrShape *s, IrType t) {
  IrShape r;
  if (!ir_shape_copy(a, &r, s)) return ir_shape_array(a, t, s->rank, s->dims);
  r.type = t;
  return r;
}

IrOpcode simp_reducer_op(const IrComputation *f, bool *swapped) {
  if (!f || f->nparams != 2 || !f->params[0] || !f->params[1] || !f->root || f->ninstrs != 3) return IR_OP_COUNT;
  const IrInstr *r = f->root;
  if (r->noperands != 2 || ir_op_info(r->op)->category != IR_CAT_BINARY || r->op == IR_OP_COMPARE || r->op == IR_OP_COMPLEX ||
      r->op == IR_OP_SHL || r->op == IR_OP_SHRA || r->op == IR_OP_SHRL)
    return IR_OP_COUNT;
  *swapped = r->operands[0] == f->params[1] && r->operands[1] == f->params[0];
  if (!*swapped && !(r->operands[0] == f->params[0] && r->operands[1] == f->params[1])) return IR_OP_COUNT;
  return r->op;
}

bool simp_reshape_only_unit_dims(const IrShape *from, const IrShape *to, int64_t *out_dim) {
  int o = 0;
  for (int k = 0; k < from->rank; k++) {
    if (out_dim) out_dim[k] = -1;
    if (from->dims[k] == 1) continue;
    while (o < to->rank && to->dims[o] == 1) o++;
    if (o >= to->rank || to->dims[o] != from->dims[k]) return false;
    if (out_dim) out_dim[k] = o;
    o++;
  }
  while (o < to->rank && to->dims[o] == 1) o++;
  return o == to->rank;
}

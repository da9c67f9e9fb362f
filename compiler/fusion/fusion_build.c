/* fusion_build.c — creating fusion instructions and their fused computations, and inlining them
 * back (see fusion_build.h). Every fusion pass edits the graph through these functions, so the
 * shape of a fusion (parameters numbered like its operands, a root or a root tuple, the kind, the
 * names) is the same whichever pass made it. */
#include "fusion_build.h"

#include "fusion_analysis.h"
#include "fusion_rules.h"

#include <stdio.h>
#include <string.h>

/* ---------- small graph helpers ---------- */

static void detach(IrInstr *i) {
  IrComputation *c = i->parent;
  int k = ir_computation_index(c, i);
  if (k < 0) return;
  memmove(&c->instrs[k], &c->instrs[k + 1], sizeof(IrInstr *) * (size_t)(c->ninstrs - k - 1));
  c->ninstrs--;
}

/* Inserts i into c at position pos (-1: append). */
static bool insert_at(IrComputation *c, int pos, IrInstr *i) {
  if (arena_grow(&c->module->arena, (void **)&c->instrs, &c->instrs_cap, c->ninstrs + 1, sizeof(IrInstr *)))
    return false;
  if (pos < 0 || pos > c->ninstrs) pos = c->ninstrs;
  memmove(&c->instrs[pos + 1], &c->instrs[pos], sizeof(IrInstr *) * (size_t)(c->ninstrs - pos));
  c->instrs[pos] = i;
  i->pos = pos;
  c->ninstrs++;
  i->parent = c;
  return true;
}

/* f, just appended to c, takes i's place in c's order and i leaves c's list: what inserting f
 * before i and then detaching i gives, with one search for i and nothing shifted (on a large
 * computation the two shifts and searches were most of wrapping an instruction into a fusion). */
static bool take_place(IrComputation *c, IrInstr *i, IrInstr *f) {
  if (c->ninstrs == 0 || c->instrs[c->ninstrs - 1] != f) return false;
  int k = ir_computation_index(c, i);
  if (k < 0) return false;
  c->instrs[k] = f;
  f->pos = k;
  c->ninstrs--;
  return true;
}

/* Moves an instruction (keeping its name, id, operands and users) into another computation. */
static bool move_to(IrInstr *i, IrComputation *dst, int pos) {
  if (i->parent && i->parent->root == i) ir_set_root(i->parent, NULL);
  detach(i);
  return insert_at(dst, pos, i);
}

static bool append_operand(IrInstr *i, IrInstr *op) {
  Arena *a = &i->parent->module->arena;
  IrInstr **ops = arena_alloc(a, sizeof(IrInstr *) * (size_t)(i->noperands + 1));
  if (!ops) return false;
  if (i->noperands) memcpy(ops, i->operands, sizeof(IrInstr *) * (size_t)i->noperands);
  ops[i->noperands] = NULL;
  i->operands = ops;
  i->noperands++;
  ir_set_operand(i, i->noperands - 1, op);
  return true;
}

static bool add_param(IrComputation *fc, IrInstr *param) {
  int cap = fc->nparams; /* params is exactly sized: grow by hand */
  IrInstr **np = arena_alloc(&fc->module->arena, sizeof(IrInstr *) * (size_t)(cap + 1));
  if (!np) return false;
  if (fc->nparams) memcpy(np, fc->params, sizeof(IrInstr *) * (size_t)fc->nparams);
  np[fc->nparams] = param;
  param->param_number = fc->nparams;
  fc->params = np;
  fc->nparams++;
  return true;
}

static IrInstr *new_param(IrComputation *fc, const IrShape *shape) {
  char name[32];
  snprintf(name, sizeof name, "param_%d", fc->nparams);
  IrInstr *p = ir_instr_new_before(fc, fc->ninstrs ? fc->instrs[0] : NULL, IR_OP_PARAMETER, shape, NULL, 0, name);
  if (!p || !add_param(fc, p)) return NULL;
  /* Keep parameters first and in number order. */
  detach(p);
  if (!insert_at(fc, fc->nparams - 1, p)) return NULL;
  return p;
}

/* The body parameter of fusion f that stands for the outside value `op`, made when missing. */
static IrInstr *param_for(IrInstr *f, IrInstr *op) {
  IrComputation *fc = ir_fused_computation(f);
  for (int k = 0; k < f->noperands && k < fc->nparams; k++)
    if (f->operands[k] == op) return fc->params[k];
  IrInstr *p = new_param(fc, &op->shape);
  if (!p || !append_operand(f, op)) return NULL;
  return p;
}

/* Drops the fusion operands whose parameters have no users left, renumbering the rest. */
static void compact_params(IrInstr *f) {
  IrComputation *fc = ir_fused_computation(f);
  int w = 0;
  int n = f->noperands < fc->nparams ? f->noperands : fc->nparams;
  for (int k = 0; k < n; k++) {
    IrInstr *p = fc->params[k];
    if (p->nusers == 0 && !p->is_root) {
      ir_set_operand(f, k, NULL);
      ir_instr_remove(p);
      continue;
    }
    fc->params[w] = p;
    p->param_number = w;
    f->operands[w] = f->operands[k];
    w++;
  }
  /* The dropped slots were unlinked above; the kept ones moved down keep their user edges. */
  f->noperands = w;
  fc->nparams = w;
}

static const char *kind_for(const IrInstr *root) {
  if (root->op == IR_OP_SCATTER) return "kInput";
  /* A contiguous (row or column) reduction is emitted as an input fusion. */
  if (root->op == IR_OP_REDUCE && fusion_is_contiguous_reduction(root)) return "kInput";
  return "kLoop";
}

/* The first free name of the series base, base.1, base.2, ... */
static const char *series_name(IrModule *m, const char *base, bool computation) {
  return ir_module_series_name(m, base, computation);
}

/* Places computation fc just before computation before in the module's printing order. */
static void order_before(IrModule *m, IrComputation *fc, IrComputation *before) {
  /* From the end: fc was just made (the last), its caller sits after the bodies already placed
   * before it; each is listed once, so the direction does not change what is found. */
  int from = -1, to = -1;
  for (int k = m->ncomps - 1; k >= 0 && (from < 0 || to < 0); k--) {
    if (m->comps[k] == fc) from = k;
    if (m->comps[k] == before) to = k;
  }
  if (from < 0 || to < 0 || from < to) return;
  memmove(&m->comps[to + 1], &m->comps[to], sizeof(IrComputation *) * (size_t)(from - to));
  m->comps[to] = fc;
}

static void drop_computation(IrModule *m, IrComputation *fc) {
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k] == fc) {
      memmove(&m->comps[k], &m->comps[k + 1], sizeof(IrComputation *) * (size_t)(m->ncomps - k - 1));
      m->ncomps--;
      ir_module_forget_computation(m, fc);
      return;
    }
}

/* Clones i into dst with the given operands (attributes, literal and location shared). */
static IrInstr *clone_into(IrComputation *dst, const IrInstr *i, IrInstr **ops) {
  char name[300];
  snprintf(name, sizeof name, "%.280s.clone", i->name);
  return ir_instr_copy(dst, i, ops, name);
}

/* ---------- wrapping ---------- */

IrInstr *fusion_wrap(IrInstr *i, const char *kind) {
  IrComputation *c = i->parent;
  IrModule *m = c->module;
  IrComputation *fc = ir_computation_new(m, series_name(m, "fused_computation", true));
  if (!fc) return NULL;
  order_before(m, fc, c);
  /* Distinct operands, in order: one parameter each. */
  IrInstr **ops = fx_malloc(sizeof(IrInstr *) * (size_t)(i->noperands ? i->noperands : 1));
  if (!ops) return NULL;
  int n = 0;
  for (int k = 0; k < i->noperands; k++) {
    bool dup = false;
    for (int j = 0; j < n; j++)
      if (ops[j] == i->operands[k]) dup = true;
    if (!dup && i->operands[k]) ops[n++] = i->operands[k];
  }
  IrInstr *f = ir_instr_new(c, IR_OP_FUSION, &i->shape, ops, n, series_name(m, "fusion", false)); /* then in i's place */
  if (!f) {
    fx_free(ops);
    return NULL;
  }
  ir_attr_set_text(f, "kind", kind ? kind : kind_for(i));
  ir_attr_set_comp(f, "calls", fc);
  f->loc = i->loc;
  const char *md = ir_attr_text(i, "metadata");
  if (md) ir_attr_set_text(f, "metadata", md);
  fc->fusion_instr = f;
  for (int k = 0; k < n; k++) {
    IrInstr *p = new_param(fc, &ops[k]->shape);
    if (!p) {
      fx_free(ops);
      return NULL;
    }
  }
  ir_replace_all_uses(i, f); /* the root too, when i was c's */
  if (!take_place(c, i, f) || !insert_at(fc, -1, i)) {
    fx_free(ops);
    return NULL;
  }
  for (int k = 0; k < i->noperands; k++)
    for (int j = 0; j < n; j++)
      if (i->operands[k] == ops[j]) ir_set_operand(i, k, fc->params[j]);
  ir_set_root(fc, i);
  fx_free(ops);
  return f;
}

/* ---------- fusing a producer ---------- */

/* Brings producer p's computation into fusion f's body, with its outside operands mapped to body
 * parameters. Returns the body instruction holding p's value (p's root for a fusion). `move` moves
 * p instead of cloning it (p has no other users). */
static IrInstr *bring_in(IrInstr *f, IrInstr *p, bool move) {
  IrComputation *fc = ir_fused_computation(f);
  IrComputation *pc = ir_fused_computation(p);
  if (!pc) {
    IrInstr **ops = fx_malloc(sizeof(IrInstr *) * (size_t)(p->noperands ? p->noperands : 1));
    if (!ops) return NULL;
    for (int k = 0; k < p->noperands; k++) {
      ops[k] = param_for(f, p->operands[k]);
      if (!ops[k]) {
        fx_free(ops);
        return NULL;
      }
    }
    IrInstr *r;
    if (move) {
      if (!move_to(p, fc, fc->nparams)) r = NULL;
      else {
        for (int k = 0; k < p->noperands; k++) ir_set_operand(p, k, ops[k]);
        r = p;
      }
    } else {
      r = clone_into(fc, p, ops);
    }
    fx_free(ops);
    return r;
  }
  /* A fusion producer: inline its body. Body parameters map to f's parameters for p's operands. */
  int n = pc->ninstrs;
  IrInstr **map = fx_calloc((size_t)n + 1, sizeof(IrInstr *));
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!map || !order) {
    fx_free(map);
    fx_free(order);
    return NULL;
  }
  memcpy(order, pc->instrs, sizeof(IrInstr *) * (size_t)n);
  for (int k = 0; k < n; k++) order[k]->aux = (void *)(intptr_t)(k + 1);
  IrInstr *result = NULL, *proot = pc->root; /* moving the root clears pc->root */
  bool ok = true;
  for (int k = 0; k < n && ok; k++) {
    IrInstr *x = order[k];
    if (x->op == IR_OP_PARAMETER) {
      IrInstr *outer = x->param_number >= 0 && x->param_number < p->noperands ? p->operands[x->param_number] : NULL;
      map[k] = outer ? param_for(f, outer) : NULL;
      ok = map[k] != NULL;
      continue;
    }
    IrInstr *ops[IR_REMAP_SMALL], **opv = ir_remap_operands(x, pc, map, ops);
    if (!opv) {
      ok = false;
      break;
    }
    if (move) {
      if (!move_to(x, fc, -1)) ok = false;
      else
        for (int o = 0; o < x->noperands; o++) ir_set_operand(x, o, opv[o]);
      map[k] = x;
    } else {
      map[k] = clone_into(fc, x, opv);
      ok = map[k] != NULL;
    }
    ir_remap_release(opv, ops);
  }
  if (ok && proot) {
    int pos = (int)(intptr_t)proot->aux - 1;
    result = pos >= 0 ? map[pos] : NULL;
  }
  for (int k = 0; k < n; k++) order[k]->aux = NULL;
  if (move) {
    /* The moved body no longer needs its parameters. */
    for (int k = 0; k < n; k++)
      if (order[k]->op == IR_OP_PARAMETER && order[k]->parent == pc && order[k]->nusers == 0) ir_instr_remove(order[k]);
    ir_set_root(pc, NULL);
  }
  fx_free(map);
  fx_free(order);
  return result;
}

static void remove_fusion(IrInstr *f) {
  IrComputation *fc = ir_fused_computation(f);
  IrModule *m = f->parent->module;
  ir_instr_remove(f);
  if (fc) drop_computation(m, fc);
}

IrInstr *fusion_fuse(IrInstr *consumer, IrInstr *producer) {
  IrInstr *f = consumer->op == IR_OP_FUSION ? consumer : fusion_wrap(consumer, NULL);
  if (!f) return NULL;
  /* A Triton fusion stays one: what is fused into or out of it becomes part of the Triton kernel
   * (XLA's priority fusion gives the result the Triton fusion's kind and backend config). */
  if (fusion_is_generic_triton(producer) && !fusion_is_generic_triton(f)) {
    const char *bc = ir_attr_text(producer, "backend_config");
    ir_attr_set_text(f, "kind", "kCustom");
    if (bc) ir_attr_set_text(f, "backend_config", bc);
  }
  IrComputation *fc = ir_fused_computation(f);
  bool others = false;
  for (int u = 0; u < producer->nusers; u++)
    if (producer->users[u] != f) others = true;
  /* The producer will leave its computation: take it out of the operand list first so it has no
   * users when moved. */
  IrInstr *val = NULL;
  IrInstr *pp[64];
  int np = 0;
  for (int k = 0; k < f->noperands && k < fc->nparams && np < 64; k++)
    if (f->operands[k] == producer) pp[np++] = fc->params[k];
  if (!others) {
    for (int k = 0; k < f->noperands; k++)
      if (f->operands[k] == producer) ir_set_operand(f, k, NULL);
  }
  val = bring_in(f, producer, !others);
  if (!val) return NULL;
  for (int k = 0; k < np; k++) ir_replace_all_uses(pp[k], val);
  if (others) {
    for (int k = 0; k < f->noperands; k++)
      if (f->operands[k] == producer) ir_set_operand(f, k, NULL);
  }
  /* Slots set to NULL belong to parameters that are now unused: compact drops them. */
  compact_params(f);
  ir_computation_sort(fc);
  if (producer->op == IR_OP_FUSION && producer->nusers == 0 && !producer->is_root) remove_fusion(producer);
  else if (others && producer->nusers == 0 && !producer->is_root) ir_instr_remove(producer);
  /* A Triton fusion keeps kCustom whatever its root (PriorityFusion::Fuse gives the result of a
   * Triton pair the Triton fusion's kind and backend config). */
  if (fc->root && !fusion_is_generic_triton(f) && strcmp(kind_for(fc->root), "kInput") == 0)
    ir_attr_set_text(f, "kind", "kInput");
  return f;
}

/* ---------- multi-output ---------- */

int fusion_outputs(const IrInstr *f, IrInstr **out, int max) {
  IrComputation *fc = ir_fused_computation(f);
  if (!fc || !fc->root) return 0;
  if (fc->root->op == IR_OP_TUPLE) {
    int n = 0;
    for (int k = 0; k < fc->root->noperands; k++) {
      if (n < max) out[n] = fc->root->operands[k];
      n++;
    }
    return n;
  }
  if (max > 0) out[0] = fc->root;
  return 1;
}

static IrInstr *new_gte(IrComputation *c, IrInstr *tuple_value, int index) {
  const IrShape *es = &tuple_value->shape.tuple[index];
  char nm[32];
  snprintf(nm, sizeof nm, "get-tuple-element");
  IrInstr *g = ir_instr_new(c, IR_OP_GET_TUPLE_ELEMENT, es, &tuple_value, 1, nm);
  if (g) ir_attr_set_int(g, "index", index);
  return g;
}

/* Makes f's body end in a tuple of its outputs plus `extra` (NULL: none), updates f's shape,
 * and makes f's outside users read get-tuple-elements. Returns the tuple index of `extra`. */
static int add_output(IrInstr *f, IrInstr *extra) {
  IrComputation *fc = ir_fused_computation(f);
  IrModule *m = fc->module;
  IrInstr *outs[256];
  int n = fusion_outputs(f, outs, 255);
  bool was_tuple = fc->root->op == IR_OP_TUPLE;
  if (n >= 255) return -1;
  int idx = n;
  if (extra) outs[n++] = extra;
  IrShape ts;
  memset(&ts, 0, sizeof ts);
  ts.type = IR_TUPLE;
  ts.ntuple = n;
  ts.tuple = arena_alloc(&m->arena, sizeof(IrShape) * (size_t)n);
  if (!ts.tuple) return -1;
  for (int k = 0; k < n; k++) ir_shape_copy(&m->arena, &ts.tuple[k], &outs[k]->shape);
  IrInstr *old_root = fc->root;
  IrInstr *t = ir_instr_new(fc, IR_OP_TUPLE, &ts, outs, n, "tuple");
  if (!t) return -1;
  ir_set_root(fc, t);
  if (was_tuple && old_root->nusers == 0) ir_instr_remove(old_root);
  IrShape old_shape = f->shape;
  ir_shape_copy(&m->arena, &f->shape, &ts);
  if (!was_tuple) {
    /* Old users (all of them: a value may have thousands) read element 0. */
    int nu = f->nusers;
    IrInstr **users = nu ? fx_malloc(sizeof(IrInstr *) * (size_t)nu) : NULL;
    if (nu && !users) return -1;
    if (nu) memcpy(users, f->users, sizeof(IrInstr *) * (size_t)nu);
    bool root = f->is_root;
    if (nu > 0 || root) {
      IrInstr *g = new_gte(f->parent, f, 0);
      if (!g) {
        fx_free(users);
        return -1;
      }
      for (int u = 0; u < nu; u++)
        for (int k = 0; k < users[u]->noperands; k++)
          if (users[u]->operands[k] == f) ir_set_operand(users[u], k, g);
      if (root) ir_set_root(f->parent, g);
    }
    fx_free(users);
  }
  (void)old_shape;
  return idx;
}

IrInstr *fusion_fuse_multi_output(IrInstr *consumer, IrInstr *producer) {
  IrInstr *f = consumer->op == IR_OP_FUSION ? consumer : fusion_wrap(consumer, NULL);
  if (!f) return NULL;
  IrComputation *fc = ir_fused_computation(f);
  /* Outside users of the producer other than f (all of them) keep reading it through the
   * fusion's output. */
  IrInstr **others = fx_malloc(sizeof(IrInstr *) * (size_t)(producer->nusers ? producer->nusers : 1));
  if (!others) return NULL;
  int no = 0;
  for (int u = 0; u < producer->nusers; u++)
    if (producer->users[u] != f) others[no++] = producer->users[u];
  bool was_root = producer->is_root;
  IrInstr *pp[64];
  int np = 0;
  for (int k = 0; k < f->noperands && k < fc->nparams && np < 64; k++)
    if (f->operands[k] == producer) pp[np++] = fc->params[k];
  for (int k = 0; k < f->noperands; k++)
    if (f->operands[k] == producer) ir_set_operand(f, k, NULL);
  /* Detach the outside users temporarily so the producer can move. */
  IrInstr *ph = NULL;
  if (no > 0 || was_root) {
    ph = ir_instr_new(producer->parent, IR_OP_GET_TUPLE_ELEMENT, &producer->shape, NULL, 0, "get-tuple-element");
    if (!ph) {
      fx_free(others);
      return NULL;
    }
    for (int u = 0; u < no; u++)
      for (int k = 0; k < others[u]->noperands; k++)
        if (others[u]->operands[k] == producer) ir_set_operand(others[u], k, ph);
    if (was_root) ir_set_root(producer->parent, ph);
  }
  fx_free(others);
  bool producer_fusion = producer->op == IR_OP_FUSION;
  IrInstr *val = bring_in(f, producer, true);
  if (!val) return NULL;
  for (int k = 0; k < np; k++) ir_replace_all_uses(pp[k], val);
  compact_params(f);
  if (producer_fusion) remove_fusion(producer);
  int idx = add_output(f, val);
  if (idx < 0) return NULL;
  if (ph) {
    /* The placeholder becomes the real get-tuple-element of the new output. */
    ph->noperands = 0;
    IrInstr *g = new_gte(f->parent, f, idx);
    if (!g) return NULL;
    ir_replace_all_uses(ph, g);
    ir_instr_remove(ph);
  }
  ir_computation_sort(fc);
  return f;
}

IrInstr *fusion_merge_siblings(IrInstr *a, IrInstr *b, const char *kind) {
  /* A root multi-output fusion would need its root rebuilt: the passes never ask for it. */
  if (b->is_root && b->shape.type == IR_TUPLE) return NULL;
  IrInstr *fa = a->op == IR_OP_FUSION ? a : fusion_wrap(a, NULL);
  if (!fa) return NULL;
  IrInstr *fb = b->op == IR_OP_FUSION ? b : fusion_wrap(b, NULL);
  if (!fb) return NULL;
  IrComputation *fbc = ir_fused_computation(fb);
  IrInstr *bouts[256];
  int nb = fusion_outputs(fb, bouts, 256);
  bool b_tuple = fbc->root->op == IR_OP_TUPLE;
  /* Bring b's body in (moving it), then append its outputs. */
  IrInstr *bval = bring_in(fa, fb, true);
  if (!bval && !b_tuple) return NULL;
  IrInstr *vals[256];
  int nv = 0;
  if (b_tuple) {
    /* bring_in moved the tuple too: its operands are the moved outputs. */
    IrInstr *t = bval;
    for (int k = 0; k < t->noperands && nv < 256; k++) vals[nv++] = t->operands[k];
  } else {
    vals[nv++] = bval;
  }
  (void)nb;
  (void)bouts;
  int first = -1;
  for (int k = 0; k < nv; k++) {
    int idx = add_output(fa, vals[k]);
    if (idx < 0) return NULL;
    if (first < 0) first = idx;
  }
  if (b_tuple && bval->nusers == 0) ir_instr_remove(bval);
  /* b's users now read fa's outputs. */
  IrComputation *parent = fb->parent;
  if (b_tuple) {
    while (fb->nusers > 0) {
      IrInstr *g = fb->users[0];
      int64_t ix = 0;
      ir_attr_int(g, "index", &ix);
      char buf[24];
      snprintf(buf, sizeof buf, "%d", (int)(first + ix));
      ir_attr_set_text(g, "index", buf);
      for (int k = 0; k < g->noperands; k++)
        if (g->operands[k] == fb) ir_set_operand(g, k, fa);
    }
  } else if (fb->nusers > 0 || fb->is_root) {
    IrInstr *g = new_gte(parent, fa, first);
    if (!g) return NULL;
    ir_replace_all_uses(fb, g);
  }
  for (int k = 0; k < fb->noperands; k++) ir_set_operand(fb, k, NULL);
  fb->noperands = 0;
  ir_instr_remove(fb);
  drop_computation(parent->module, fbc);
  if (kind) ir_attr_set_text(fa, "kind", kind);
  else {
    IrInstr *outs[256];
    int n = fusion_outputs(fa, outs, 256);
    for (int k = 0; k < n && k < 256; k++)
      if (strcmp(kind_for(outs[k]), "kInput") == 0) ir_attr_set_text(fa, "kind", "kInput");
  }
  ir_computation_sort(ir_fused_computation(fa));
  return fa;
}

IrInstr *fusion_merge_outputs_into(IrInstr *g, IrInstr *f) { return fusion_merge_outputs(g, f, true); }

IrInstr *fusion_merge_outputs(IrInstr *g, IrInstr *f, bool last) {
  IrComputation *gc = ir_fused_computation(g);
  if (!gc || !ir_fused_computation(f)) return NULL;
  /* g's parameters that stand for f's outputs, and which output each is. */
  IrInstr *params[256];
  int64_t index[256];
  int np = 0;
  for (int k = 0; k < g->noperands && k < gc->nparams && np < 256; k++) {
    IrInstr *op = g->operands[k];
    if (op && op->op == IR_OP_GET_TUPLE_ELEMENT && op->noperands == 1 && op->operands[0] == f) {
      params[np] = gc->params[k];
      index[np] = 0;
      ir_attr_int(op, "index", &index[np]);
      np++;
      ir_set_operand(g, k, NULL);
    }
  }
  /* Get-tuple-elements nobody else reads go now, so the last reader can take f's body. */
  for (int u = f->nusers - 1; u >= 0; u--) {
    IrInstr *gte = f->users[u];
    if (gte->op == IR_OP_GET_TUPLE_ELEMENT && gte->nusers == 0 && !gte->is_root) {
      ir_set_operand(gte, 0, NULL);
      gte->noperands = 0;
      ir_instr_remove(gte);
    }
  }
  bool move = last && f->nusers == 0;
  IrInstr *t = bring_in(g, f, move);
  if (!t || t->op != IR_OP_TUPLE) return NULL;
  for (int k = 0; k < np; k++)
    if (index[k] >= 0 && index[k] < t->noperands) ir_replace_all_uses(params[k], t->operands[index[k]]);
  if (t->nusers == 0 && !t->is_root) ir_instr_remove(t);
  compact_params(g);
  /* The clones' unused parts (outputs g does not read) go. */
  ir_computation_remove_dead(gc);
  if (move) remove_fusion(f);
  ir_computation_sort(gc);
  return g;
}

/* ---------- unfusing ---------- */

bool fusion_unfuse(IrInstr *f) {
  IrComputation *fc = ir_fused_computation(f);
  IrComputation *c = f->parent;
  if (!fc || !fc->root) return false;
  int pos = ir_computation_index(c, f);
  int n = fc->ninstrs;
  IrInstr **order = fx_malloc(sizeof(IrInstr *) * (size_t)(n ? n : 1));
  if (!order) return false;
  memcpy(order, fc->instrs, sizeof(IrInstr *) * (size_t)n);
  IrInstr *root = fc->root;
  /* Parameters are replaced by the fusion's operands; the rest moves out in order. */
  for (int k = 0; k < n; k++) {
    IrInstr *x = order[k];
    if (x->op != IR_OP_PARAMETER) continue;
    IrInstr *outer = x->param_number >= 0 && x->param_number < f->noperands ? f->operands[x->param_number] : NULL;
    if (outer) ir_replace_all_uses(x, outer);
  }
  for (int k = 0; k < n; k++) {
    IrInstr *x = order[k];
    if (x->op == IR_OP_PARAMETER) continue;
    if (!move_to(x, c, pos++)) {
      fx_free(order);
      return false;
    }
  }
  fx_free(order);
  if (root->op == IR_OP_TUPLE) {
    /* Users read get-tuple-elements: point them at the tuple's operands. */
    while (f->nusers > 0) {
      IrInstr *g = f->users[0];
      if (g->op == IR_OP_GET_TUPLE_ELEMENT) {
        int64_t ix = 0;
        ir_attr_int(g, "index", &ix);
        IrInstr *v = ix >= 0 && ix < root->noperands ? root->operands[ix] : NULL;
        if (v) {
          ir_replace_all_uses(g, v);
          ir_set_operand(g, 0, NULL);
          g->noperands = 0;
          ir_instr_remove(g);
          continue;
        }
      }
      for (int k = 0; k < g->noperands; k++)
        if (g->operands[k] == f) ir_set_operand(g, k, root);
    }
    if (f->is_root) ir_set_root(c, root);
    if (root->nusers == 0 && !root->is_root) ir_instr_remove(root);
  } else {
    ir_replace_all_uses(f, root);
  }
  for (int k = 0; k < f->noperands; k++) ir_set_operand(f, k, NULL);
  f->noperands = 0;
  remove_fusion(f);
  /* Parameters of the dropped body. */
  for (int k = 0; k < fc->ninstrs; k++)
    if (fc->instrs[k]->op == IR_OP_PARAMETER) fc->instrs[k]->dead = true;
  return true;
}

int fusion_unfuse_all(IrModule *m) {
  int count = 0;
  bool again = true;
  while (again) {
    again = false;
    for (int k = 0; k < m->ncomps; k++) {
      IrComputation *c = m->comps[k];
      for (int j = 0; j < c->ninstrs; j++) {
        if (c->instrs[j]->op == IR_OP_FUSION && ir_fused_computation(c->instrs[j])) {
          if (!fusion_unfuse(c->instrs[j])) return count;
          count++;
          again = true;
          break;
        }
      }
      if (again) break;
    }
  }
  return count;
}

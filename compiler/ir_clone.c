/* ir_clone.c — deep copy of a module: the stage snapshots the pipeline keeps after each pass; and
 * the one clone-with-remap that passes use to copy instructions into another computation (fusion,
 * loop unrolling).
 *
 * Names and ids are kept by a module copy, so an instruction is the same `add.3` at every stage. */
#include <string.h>

#include "ir.h"

typedef struct {
  IrModule *dst;
  IrInstr **imap;        /* old id -> new instruction */
  IrComputation **cmap;  /* old id -> new computation */
} CloneCtx;

static bool clone_attrs(CloneCtx *cx, const IrInstr *src, IrInstr *dst) {
  Arena *a = &cx->dst->arena;
  if (src->nattrs == 0) return true;
  dst->attrs = arena_alloc(a, sizeof(IrAttr) * (size_t)src->nattrs);
  if (!dst->attrs) return false;
  dst->attrs_cap = dst->nattrs = src->nattrs;
  for (int k = 0; k < src->nattrs; k++) {
    const IrAttr *s = &src->attrs[k];
    IrAttr *d = &dst->attrs[k];
    *d = *s;
    d->key = arena_strdup(a, s->key);
    if (s->kind == IR_ATTR_TEXT) {
      d->text = arena_strdup(a, s->text);
    } else {
      d->comps = arena_alloc(a, sizeof(IrComputation *) * (size_t)(s->ncomps ? s->ncomps : 1));
      if (!d->comps) return false;
      for (int j = 0; j < s->ncomps; j++) d->comps[j] = s->comps[j] ? cx->cmap[s->comps[j]->id] : NULL;
    }
  }
  return true;
}

IrModule *ir_module_clone(const IrModule *m) {
  IrModule *d = ir_module_new(m->name);
  if (!d) return NULL;
  Arena *a = &d->arena;
  d->header_attrs = arena_strdup(a, m->header_attrs);
  d->prologue = arena_strdup(a, m->prologue);
  d->epilogue = arena_strdup(a, m->epilogue);
  d->source_file = arena_strdup(a, m->source_file);
  size_t n = (size_t)m->next_id + 1;
  CloneCtx cx = {d, fx_calloc(n, sizeof(IrInstr *)), fx_calloc(n, sizeof(IrComputation *))};
  if (!cx.imap || !cx.cmap) goto fail;
  /* Pass 1: computations and instruction shells (so attrs and operands can be mapped). */
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *sc = m->comps[k];
    IrComputation *dc = arena_alloc(a, sizeof *dc);
    if (!dc) goto fail;
    *dc = *sc;
    dc->module = d;
    dc->name = arena_strdup(a, sc->name);
    dc->trailing = arena_strdup(a, sc->trailing);
    dc->instrs = arena_alloc(a, sizeof(IrInstr *) * (size_t)(sc->ninstrs ? sc->ninstrs : 1));
    dc->params = arena_alloc(a, sizeof(IrInstr *) * (size_t)(sc->nparams ? sc->nparams : 1));
    if (!dc->instrs || !dc->params) goto fail;
    dc->instrs_cap = sc->ninstrs ? sc->ninstrs : 1;
    if (arena_grow(a, (void **)&d->comps, &d->comps_cap, d->ncomps + 1, sizeof(IrComputation *))) goto fail;
    d->comps[d->ncomps++] = dc;
    if (!ir_module_index_computation(d, dc)) goto fail;
    cx.cmap[sc->id] = dc;
    if (sc == m->entry) d->entry = dc;
    for (int j = 0; j < sc->ninstrs; j++) {
      const IrInstr *si = sc->instrs[j];
      IrInstr *di = arena_alloc(a, sizeof *di);
      if (!di) goto fail;
      *di = *si;
      di->parent = dc;
      di->name = arena_strdup(a, si->name);
      di->aux = NULL;
      if (!ir_shape_copy(a, &di->shape, &si->shape)) goto fail;
      dc->instrs[j] = di;
      cx.imap[si->id] = di;
    }
  }
  /* Pass 2: operands, users, attrs, literals, roots, params. */
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *sc = m->comps[k];
    IrComputation *dc = d->comps[k];
    dc->root = sc->root ? cx.imap[sc->root->id] : NULL;
    dc->fusion_instr = sc->fusion_instr ? cx.imap[sc->fusion_instr->id] : NULL;
    for (int p = 0; p < sc->nparams; p++) dc->params[p] = sc->params[p] ? cx.imap[sc->params[p]->id] : NULL;
    for (int j = 0; j < sc->ninstrs; j++) {
      const IrInstr *si = sc->instrs[j];
      IrInstr *di = dc->instrs[j];
      if (si->noperands) {
        di->operands = arena_alloc(a, sizeof(IrInstr *) * (size_t)si->noperands);
        if (!di->operands) goto fail;
        for (int o = 0; o < si->noperands; o++) di->operands[o] = si->operands[o] ? cx.imap[si->operands[o]->id] : NULL;
      }
      di->users = NULL;
      di->users_cap = 0;
      if (si->nusers) {
        di->users = arena_alloc(a, sizeof(IrInstr *) * (size_t)si->nusers);
        if (!di->users) goto fail;
        di->users_cap = si->nusers;
        int w = 0;
        for (int u = 0; u < si->nusers; u++)
          if (cx.imap[si->users[u]->id]) di->users[w++] = cx.imap[si->users[u]->id];
        di->nusers = w;
      }
      di->attrs = NULL;
      di->attrs_cap = di->nattrs = 0;
      if (!clone_attrs(&cx, si, di)) goto fail;
      if (si->literal) {
        IrLiteral *l = arena_alloc(a, sizeof *l);
        if (!l) goto fail;
        *l = *si->literal;
        l->text = arena_strdup(a, si->literal->text);
        if (si->literal->values) {
          l->values = arena_alloc(a, sizeof(double) * (size_t)(l->count ? l->count : 1));
          if (!l->values) goto fail;
          memcpy(l->values, si->literal->values, sizeof(double) * (size_t)l->count);
        }
        di->literal = l;
      }
      if (di->loc.file) di->loc.file = arena_strdup(a, si->loc.file);
      if (si->op_text && !(di->op_text = arena_strdup(a, si->op_text))) goto fail;
    }
  }
  d->next_id = m->next_id;
  if (!ir_module_reindex(d, m)) goto fail;
  fx_free(cx.imap);
  fx_free(cx.cmap);
  return d;
fail:
  fx_free(cx.imap);
  fx_free(cx.cmap);
  ir_module_free(d);
  return NULL;
}

/* ---------- clone with remap ---------- */

IrInstr **ir_remap_operands(const IrInstr *x, const IrComputation *from, IrInstr *const *map, IrInstr **small) {
  IrInstr **ops = small;
  if (x->noperands > IR_REMAP_SMALL) ops = fx_malloc(sizeof(IrInstr *) * (size_t)x->noperands);
  if (!ops) return NULL;
  for (int o = 0; o < x->noperands; o++) {
    IrInstr *src = x->operands[o];
    int pos = src && src->parent == from ? (int)(intptr_t)src->aux - 1 : -1;
    ops[o] = pos >= 0 ? map[pos] : src;
  }
  return ops;
}

void ir_remap_release(IrInstr **ops, IrInstr **small) {
  if (ops != small) fx_free(ops);
}

IrInstr *ir_instr_copy(IrComputation *dst, const IrInstr *i, IrInstr **ops, const char *name) {
  IrInstr *c = ir_instr_new(dst, i->op, &i->shape, ops, i->noperands, name);
  if (!c) return NULL;
  for (int k = 0; k < i->nattrs; k++) {
    const IrAttr *a = &i->attrs[k];
    if (a->kind == IR_ATTR_TEXT) ir_attr_set_text(c, a->key, a->text);
    else ir_attr_set_comps(c, a->key, a->comps, a->ncomps, a->comps_braced);
  }
  c->literal = i->literal;
  c->loc = i->loc;
  c->param_number = i->param_number;
  return c;
}

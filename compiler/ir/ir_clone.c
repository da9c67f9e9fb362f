/* ir_clone.c — copies of a module: the stage snapshots the pipeline keeps after each pass; and
 * the one clone-with-remap that passes use to copy instructions into another computation (fusion,
 * loop unrolling).
 *
 * Names and ids are kept, so an instruction is the same `add.3` at every stage.
 *
 * ir_module_clone copies everything. ir_module_snapshot (what pass_run_stage uses for every
 * stage) copies only what a pass may edit — instructions, computations, and their operand, user,
 * parameter, instruction and attribute arrays — and points at the source's immutable parts
 * (names, attribute keys and texts, shapes, literals, locations; see ir.h), holding a reference
 * to every arena they live in. Unchanged parts are then stored once however many stages keep
 * them: measured in bench/snapshot_memory.md. */
#include <string.h>

#include "ir.h"
#include "ir_internal.h"

typedef struct {
  IrModule *dst;
  IrInstr **imap;        /* old id -> new instruction */
  IrComputation **cmap;  /* old id -> new computation */
  bool share;            /* point at the source's immutable parts instead of copying them */
} CloneCtx;

/* An immutable string of the source: shared, or copied into the new module's arena. A NULL
 * result for a non-NULL s means out of memory. */
static const char *text(CloneCtx *cx, const char *s) {
  return cx->share || !s ? s : arena_strdup(&cx->dst->arena, s);
}

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
    d->key = text(cx, s->key);
    if (s->kind == IR_ATTR_TEXT) {
      d->text = text(cx, s->text);
    } else {
      d->comps = arena_alloc(a, sizeof(IrComputation *) * (size_t)(s->ncomps ? s->ncomps : 1));
      if (!d->comps) return false;
      for (int j = 0; j < s->ncomps; j++) d->comps[j] = s->comps[j] ? cx->cmap[s->comps[j]->id] : NULL;
    }
  }
  return true;
}

/* The new module keeps alive every arena m's immutable parts live in: m's own and the ones m
 * borrowed. */
static bool borrow_from(IrModule *d, IrModule *m) {
  d->borrowed = fx_calloc((size_t)m->nborrowed + 1, sizeof *d->borrowed);
  if (!d->borrowed) return false;
  for (int k = 0; k < m->nborrowed; k++) {
    d->borrowed[d->nborrowed++] = m->borrowed[k];
    ir_lender_retain(m->borrowed[k]);
  }
  struct IrLender *own = ir_module_lend(m);
  if (!own) return false;
  d->borrowed[d->nborrowed++] = own;
  return true;
}

static IrModule *copy_module(const IrModule *m, bool share) {
  IrModule *d = ir_module_new(m->name);
  if (!d) return NULL;
  Arena *a = &d->arena;
  size_t n = (size_t)m->next_id + 1;
  CloneCtx cx = {d, fx_calloc(n, sizeof(IrInstr *)), fx_calloc(n, sizeof(IrComputation *)), share};
  if (!cx.imap || !cx.cmap) goto fail;
  /* The lending is bookkeeping on m (its arena's reference count), not a change to the module. */
  if (share && !borrow_from(d, (IrModule *)m)) goto fail;
  d->header_attrs = text(&cx, m->header_attrs);
  d->prologue = text(&cx, m->prologue);
  d->epilogue = text(&cx, m->epilogue);
  d->source_file = text(&cx, m->source_file);
  /* Pass 1: computations and instruction shells (so attrs and operands can be mapped). */
  for (int k = 0; k < m->ncomps; k++) {
    const IrComputation *sc = m->comps[k];
    IrComputation *dc = arena_alloc(a, sizeof *dc);
    if (!dc) goto fail;
    *dc = *sc;
    dc->module = d;
    dc->name = text(&cx, sc->name);
    dc->trailing = text(&cx, sc->trailing);
    dc->loc.file = text(&cx, sc->loc.file);
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
      di->users_index = NULL; /* the source's indexes its own users array */
      di->parent = dc;
      di->name = text(&cx, si->name);
      di->aux = NULL;
      if (!share && !ir_shape_copy(a, &di->shape, &si->shape)) goto fail; /* shared: *si's as it is */
      dc->instrs[j] = di;
      di->pos = j;
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
      if (si->literal && share) {
        di->literal = si->literal;
      } else if (si->literal) {
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
      if (di->loc.file) di->loc.file = text(&cx, si->loc.file);
      if (si->op_text && !(di->op_text = text(&cx, si->op_text))) goto fail;
    }
  }
  d->next_id = m->next_id;
  /* The map from id to copy is the new module's table of instructions by id. */
  d->by_id = cx.imap;
  d->by_cap = (int)n;
  cx.imap = NULL;
  if (!ir_module_copy_names(d, m, share)) goto fail;
  fx_free(cx.cmap);
  return d;
fail:
  fx_free(cx.imap);
  fx_free(cx.cmap);
  ir_module_free(d);
  return NULL;
}

IrModule *ir_module_clone(const IrModule *m) { return copy_module(m, false); }

IrModule *ir_module_snapshot(const IrModule *m) {
  /* A chain of snapshots of snapshots holds a reference per generation: past IR_MAX_BORROWED a
   * deep copy starts a new chain. */
  return copy_module(m, m->nborrowed < IR_MAX_BORROWED);
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

/* reachability.c — levels kept through fusion, and the search they bound (see reachability.h).
 *
 * Why levels and not XLA's post-order indices: a sibling fusion joins two instructions that may
 * sit far apart in any one order, and no single index for the fused kernel need then respect both
 * its operands and its users; renumbering would cost the computation. A level only has to exceed
 * the operands' levels, and raising the users that no longer exceed it is local: the fused
 * kernel's neighbourhood, not the computation. */
#include "reachability.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "fusion_rules.h"

static bool work_push(Reach *r, const IrInstr *x) {
  if (r->nwork == r->work_cap) {
    size_t cap = r->work_cap ? r->work_cap * 2 : 256;
    ReachFrame *v = fx_realloc(r->work, sizeof(ReachFrame) * cap);
    if (!v) return false;
    r->work = v;
    r->work_cap = cap;
  }
  r->work[r->nwork].x = x;
  r->work[r->nwork].next = 0;
  r->nwork++;
  return true;
}

static bool reserve(Reach *r) {
  size_t need = (size_t)r->c->module->next_id + 1;
  if (need <= r->cap) return true;
  size_t cap = need + need / 2 + 64;
  int32_t *lv = fx_realloc(r->level, sizeof(int32_t) * cap);
  if (!lv) return false;
  r->level = lv;
  uint32_t *st = fx_realloc(r->stamp, sizeof(uint32_t) * cap);
  if (!st) return false;
  r->stamp = st;
  const IrInstr **sk = fx_realloc(r->stack, sizeof(IrInstr *) * cap);
  if (!sk) return false;
  r->stack = sk;
  for (size_t k = r->cap; k < cap; k++) {
    lv[k] = -1;
    st[k] = 0;
  }
  r->cap = cap;
  return true;
}

static void set_broken(Reach *r) {
  r->broken = true;
  r->nwork = 0;
}

static bool known(const Reach *r, const IrInstr *x) { return (size_t)x->id < r->cap && r->level[x->id] >= 0; }

/* Operands that count: those in the map's computation. */
static bool counts(const Reach *r, const IrInstr *o) { return o && o->parent == r->c && (size_t)o->id < r->cap; }

/* One more than the highest level among y's operands (which all have one); 0 without operands. */
static int32_t above_operands(const Reach *r, const IrInstr *y) {
  int32_t lv = 0;
  for (int k = 0; k < y->noperands; k++) {
    const IrInstr *o = y->operands[k];
    if (counts(r, o) && r->level[o->id] + 1 > lv) lv = r->level[o->id] + 1;
  }
  return lv;
}

/* Gives x, if it has none, and every operand of it without one (recursively, on an explicit
 * stack: chains are long) a level. */
static void compute(Reach *r, const IrInstr *x) {
  if (known(r, x)) return;
  size_t base = r->nwork;
  if (!work_push(r, x)) return set_broken(r);
  while (r->nwork > base) {
    ReachFrame *f = &r->work[r->nwork - 1];
    const IrInstr *y = f->x;
    if (known(r, y)) {
      r->nwork--;
      continue;
    }
    const IrInstr *missing = NULL;
    while (f->next < y->noperands && !missing) {
      const IrInstr *o = y->operands[f->next++];
      if (counts(r, o) && !known(r, o)) missing = o;
    }
    if (missing) {
      if (!work_push(r, missing)) return set_broken(r);
      continue;
    }
    r->level[y->id] = above_operands(r, y);
    r->nwork--;
  }
}

void reach_init(Reach *r, IrComputation *c) {
  memset(r, 0, sizeof *r);
  r->c = c;
  const char *chk = getenv("FXPLAIN_REACH_CHECK");
  r->check = chk && *chk && strcmp(chk, "0") != 0;
  if (!reserve(r)) return set_broken(r);
  for (int k = 0; k < c->ninstrs && !r->broken; k++) compute(r, c->instrs[k]);
}

void reach_free(Reach *r) {
  fx_free(r->level);
  fx_free(r->stamp);
  fx_free(r->stack);
  fx_free(r->work);
  memset(r, 0, sizeof *r);
}

void reach_update(Reach *r, const IrInstr *x) {
  if (r->broken || !x || x->parent != r->c) return;
  if (!reserve(r)) return set_broken(r);
  for (int k = 0; k < x->noperands && !r->broken; k++)
    if (counts(r, x->operands[k])) compute(r, x->operands[k]);
  if (r->broken) return;
  int32_t lv = above_operands(r, x);
  if (r->level[x->id] < lv) r->level[x->id] = lv;
  /* Raise the users that no longer sit above what they read. */
  size_t base = r->nwork;
  if (!work_push(r, x)) return set_broken(r);
  while (r->nwork > base && !r->broken) {
    const IrInstr *y = r->work[--r->nwork].x;
    for (int u = 0; u < y->nusers; u++) {
      const IrInstr *us = y->users[u];
      if (!counts(r, us)) continue;
      if (!known(r, us)) {
        compute(r, us);
        if (r->broken) return;
      } else if (r->level[us->id] <= r->level[y->id]) {
        r->level[us->id] = r->level[y->id] + 1;
      } else {
        continue;
      }
      if (!work_push(r, us)) return set_broken(r);
    }
  }
}

/* The search of fusion_path_exists, skipping what sits at or above `to`'s level. */
static bool bounded_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct) {
  const IrComputation *c = from->parent;
  if (!c || to->parent != c) return false;
  IrModule *m = c->module;
  if (!known(r, to)) compute(r, to);
  if (!known(r, from)) compute(r, from);
  if (r->broken) return fusion_path_exists(from, to, skip_direct);
  int32_t bound = r->level[to->id];
  if (r->level[from->id] >= bound) return false;
  if (++r->gen == 0) {
    memset(r->stamp, 0, sizeof(uint32_t) * r->cap);
    r->gen = 1;
  }
  uint32_t *seen = r->stamp, g = r->gen;
  const IrInstr **stack = r->stack;
  int sp = 0;
  for (int u = 0; u < from->nusers; u++) {
    const IrInstr *us = from->users[u];
    if (skip_direct && us == to) continue;
    if (us == to) return true;
    if (us->parent == c && (size_t)us->id < r->cap && seen[us->id] != g && r->level[us->id] < bound) {
      seen[us->id] = g;
      stack[sp++] = us;
    }
  }
  while (sp > 0) {
    const IrInstr *x = stack[--sp];
    for (int u = 0; u < x->nusers; u++) {
      const IrInstr *us = x->users[u];
      if (us == to) return true;
      if (us->parent == c && us->id <= m->next_id && seen[us->id] != g && r->level[us->id] < bound) {
        seen[us->id] = g;
        stack[sp++] = us;
      }
    }
  }
  return false;
}

bool reach_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct) {
  if (r->broken || from->parent != r->c || !reserve(r)) {
    if (!r->broken && from->parent == r->c) set_broken(r);
    return fusion_path_exists(from, to, skip_direct);
  }
  bool found = bounded_path(r, from, to, skip_direct);
  if (r->check && found != fusion_path_exists(from, to, skip_direct)) {
    fprintf(stderr, "FXPLAIN_REACH_CHECK: %s -> %s%s: kept levels say %s, a full search says %s\n", from->name,
            to->name, skip_direct ? " (not directly)" : "", found ? "a path" : "no path", found ? "none" : "a path");
    abort(); /* FXPLAIN_REACH_CHECK only: a level was not raised after a fusion */
  }
  return found;
}

/* reachability.c — levels kept through fusion, and the search they bound (see reachability.h).
 *
 * Why levels and not XLA's post-order indices: a sibling fusion joins two instructions that may
 * sit far apart in any one order, and no single index for the fused kernel need then respect both
 * its operands and its users; renumbering would cost the computation. A level only has to exceed
 * the operands' levels, and raising the users that no longer exceed it is local: the fused
 * kernel's neighbourhood, not the computation. */
#include "reachability.h"

#include <limits.h>
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

static void session_free(ReachSession *s) {
  fx_free(s->seen);
  fx_free(s->stack);
  fx_free(s->wait);
  memset(s, 0, sizeof *s);
}

static bool session_alloc(ReachSession *s, size_t old_cap, size_t cap) {
  uint32_t *sn = fx_realloc(s->seen, sizeof(uint32_t) * cap);
  if (!sn) return false;
  s->seen = sn;
  for (size_t k = old_cap; k < cap; k++) sn[k] = 0;
  const IrInstr **st = fx_realloc(s->stack, sizeof(IrInstr *) * cap);
  if (!st) return false;
  s->stack = st;
  ReachWaiting *w = fx_realloc(s->wait, sizeof(ReachWaiting) * cap);
  if (!w) return false;
  s->wait = w;
  return true;
}

/* Grows a session's arrays from old_cap to cap entries (reached marks of new ids start clear);
 * a session never used has none: they are made by its first search (most computations a pass
 * visits never ask). */
static bool session_reserve(ReachSession *s, size_t old_cap, size_t cap) {
  if (!s->seen) return true;
  return session_alloc(s, old_cap, cap);
}


/* The sweep's arrays for cap ids; made by the first sweep (most computations never need one). */
static bool sweep_alloc(Reach *r, size_t cap) {
  uint64_t *rb = fx_realloc(r->reached_by, sizeof(uint64_t) * cap);
  if (!rb) return false;
  r->reached_by = rb;
  ReachSweepEntry *sw = fx_realloc(r->sweep, sizeof(ReachSweepEntry) * cap);
  if (!sw) return false;
  r->sweep = sw;
  return true;
}

static bool reserve(Reach *r) {
  size_t need = (size_t)r->c->module->next_id + 1;
  if (need <= r->cap) return true;
  size_t cap = need + need / 2 + 64;
  if (!session_reserve(&r->fwd, r->cap, cap) || !session_reserve(&r->bwd, r->cap, cap)) return false;
  if (r->reached_by && !sweep_alloc(r, cap)) return false;
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
  session_free(&r->fwd);
  session_free(&r->bwd);
  fx_free(r->level);
  fx_free(r->stamp);
  fx_free(r->stack);
  fx_free(r->work);
  fx_free(r->reached_by);
  fx_free(r->sweep);
  memset(r, 0, sizeof *r);
}

void reach_update(Reach *r, const IrInstr *x) {
  r->epoch++; /* the kept searches saw the computation before this change */
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

/* ---------- kept searches ---------- */

/* The heap key of x in a session: its level, an unknown one (-1) counted as the nearest, so a
 * forward search expands it at once and a backward one too (never skipped for its level). */
static int32_t wait_key(const Reach *r, const ReachSession *s, const IrInstr *x) {
  int32_t lv = r->level[x->id];
  if (s->forward) return lv;                 /* -1 sorts first: expanded by every query */
  return lv < 0 ? INT32_MIN : -lv;           /* a max-heap of levels, unknown first */
}

static void wait_push(ReachSession *s, const IrInstr *x, int32_t key) {
  size_t h = s->nwait++;
  s->wait[h].x = x;
  s->wait[h].key = key;
  while (h > 0 && s->wait[(h - 1) / 2].key > s->wait[h].key) {
    ReachWaiting t = s->wait[h];
    s->wait[h] = s->wait[(h - 1) / 2];
    s->wait[(h - 1) / 2] = t;
    h = (h - 1) / 2;
  }
}

static const IrInstr *wait_pop(ReachSession *s) {
  const IrInstr *x = s->wait[0].x;
  s->wait[0] = s->wait[--s->nwait];
  for (size_t h = 0;;) {
    size_t l = 2 * h + 1, rr = l + 1, m = h;
    if (l < s->nwait && s->wait[l].key < s->wait[m].key) m = l;
    if (rr < s->nwait && s->wait[rr].key < s->wait[m].key) m = rr;
    if (m == h) break;
    ReachWaiting t = s->wait[h];
    s->wait[h] = s->wait[m];
    s->wait[m] = t;
    h = m;
  }
  return x;
}

static bool session_start(Reach *r, ReachSession *s, const IrInstr *anchor, bool forward) {
  if (!s->seen && !session_alloc(s, 0, r->cap)) {
    session_free(s);
    return false;
  }
  s->valid = true;
  s->forward = forward;
  s->anchor = anchor;
  s->epoch = r->epoch;
  if (++s->gen == 0) {
    memset(s->seen, 0, sizeof(uint32_t) * r->cap);
    s->gen = 1;
  }
  s->seen[anchor->id] = s->gen;
  s->stack[0] = anchor;
  s->nstack = 1;
  s->nwait = 0;
  return true;
}

/* Whether the session's search reaches `target` (its other end): continues the kept search as far
 * as this query's level allows, and stops at `target`. Forward, an instruction can lie on a path
 * to target only below target's level; backward, only above the start's. Everything reached and
 * not expanded stays on the stack or waits for a later query that allows its level. */
static bool session_query(Reach *r, ReachSession *s, const IrInstr *target) {
  if (s->seen[target->id] == s->gen) return true;
  const IrComputation *c = r->c;
  /* forward: expand keys < bound; backward (keys are negated levels): expand keys < -level */
  int32_t bound = s->forward ? r->level[target->id] : -r->level[target->id];
  while (s->nwait > 0 && s->wait[0].key < bound) s->stack[s->nstack++] = wait_pop(s);
  while (s->nstack > 0) {
    const IrInstr *x = s->stack[--s->nstack];
    if (x != s->anchor && wait_key(r, s, x) >= bound) {
      wait_push(s, x, wait_key(r, s, x));
      continue;
    }
    /* x's neighbours all get reached (a later query may need any of them), then the answer */
    bool found = false;
    int n = s->forward ? x->nusers : x->noperands;
    for (int k = 0; k < n; k++) {
      const IrInstr *y = s->forward ? x->users[k] : x->operands[k];
      if (!y || y->parent != c || (size_t)y->id >= r->cap || s->seen[y->id] == s->gen) continue;
      s->seen[y->id] = s->gen;
      s->stack[s->nstack++] = y;
      found = found || y == target;
    }
    if (found) return true;
  }
  return false;
}

/* The kept search a query continues or starts: the forward one from `from`, the backward one
 * from `to`, whichever shares its end; a new one from the end the last query shared. */
static bool kept_path(Reach *r, const IrInstr *from, const IrInstr *to) {
  const IrComputation *c = from->parent;
  if (!c || to->parent != c) return false;
  if (!known(r, to)) compute(r, to);
  if (!known(r, from)) compute(r, from);
  if (r->broken) return fusion_path_exists(from, to, false);
  if (r->level[from->id] >= r->level[to->id]) return false;
  ReachSession *fw = &r->fwd, *bw = &r->bwd;
  bool fw_ok = fw->valid && fw->epoch == r->epoch && fw->anchor == from;
  bool bw_ok = bw->valid && bw->epoch == r->epoch && bw->anchor == to;
  const IrInstr *last = r->last_from;
  r->last_from = from;
  if (fw_ok) return session_query(r, fw, to);
  if (bw_ok) return session_query(r, bw, from);
  /* reach(a, b) then reach(b, a): `a` is the end the next queries share, here as `to` */
  if (to == last) {
    if (!session_start(r, bw, to, false)) return bounded_path(r, from, to, false);
    return session_query(r, bw, from);
  }
  if (!session_start(r, fw, from, true)) return bounded_path(r, from, to, false);
  return session_query(r, fw, to);
}

/* ---------- all pairs of one parent's siblings ---------- */

static int sibling_index(const ReachSiblings *s, const IrInstr *x) {
  for (int k = 0; k < s->n; k++)
    if (s->node[k] == x) return k;
  return -1;
}

/* Whether the sweep answers from -> to: both among the siblings, nothing changed but their merges. */
static bool sibling_pair(const Reach *r, const IrInstr *from, const IrInstr *to, int *fi, int *ti) {
  const ReachSiblings *s = &r->sibs;
  if (!s->active || s->epoch != r->epoch) return false;
  *fi = sibling_index(s, from);
  *ti = *fi >= 0 ? sibling_index(s, to) : -1;
  return *ti >= 0;
}

static int by_level(const void *a, const void *b) {
  int32_t x = ((const ReachSweepEntry *)a)->level, y = ((const ReachSweepEntry *)b)->level;
  return (x > y) - (x < y);
}

bool reach_siblings_begin(Reach *r, IrInstr *const *sib, int n) {
  ReachSiblings *s = &r->sibs;
  s->active = false;
  if (r->broken || n < 2 || n > REACH_MAX_SIBLINGS || !reserve(r)) return false;
  if (!r->reached_by && !sweep_alloc(r, r->cap)) return false;
  int32_t top = 0;
  for (int k = 0; k < n; k++) {
    if (!counts(r, sib[k])) return false;
    compute(r, sib[k]);
    if (r->broken) return false;
    if (r->level[sib[k]->id] > top) top = r->level[sib[k]->id];
  }
  if (++r->gen == 0) {
    memset(r->stamp, 0, sizeof(uint32_t) * r->cap);
    r->gen = 1;
  }
  uint32_t *seen = r->stamp, g = r->gen;
  const IrInstr **stack = r->stack;
  size_t sp = 0, nsw = 0;
  for (int k = 0; k < n; k++) {
    const IrInstr *x = sib[k];
    if (seen[x->id] == g) return false; /* listed twice */
    seen[x->id] = g;
    r->reached_by[x->id] = 0;
    r->sweep[nsw++] = (ReachSweepEntry){r->level[x->id], k, x};
    stack[sp++] = x;
  }
  /* What the siblings reach below the highest of them: only there can a path between two of them
   * run (levels rise along every path). */
  while (sp > 0) {
    const IrInstr *x = stack[--sp];
    for (int u = 0; u < x->nusers; u++) {
      const IrInstr *y = x->users[u];
      if (!counts(r, y) || seen[y->id] == g) continue;
      if (!known(r, y)) {
        compute(r, y);
        if (r->broken) return false;
      }
      if (r->level[y->id] >= top) continue;
      seen[y->id] = g;
      r->reached_by[y->id] = 0;
      r->sweep[nsw++] = (ReachSweepEntry){r->level[y->id], -1, y};
      stack[sp++] = y;
    }
  }
  /* In level order every operand comes before its users: each passes on who reaches it. */
  qsort(r->sweep, nsw, sizeof *r->sweep, by_level);
  for (size_t k = 0; k < nsw; k++) {
    const ReachSweepEntry *e = &r->sweep[k];
    uint64_t m = r->reached_by[e->x->id] | (e->sibling >= 0 ? UINT64_C(1) << e->sibling : 0);
    for (int u = 0; u < e->x->nusers; u++) {
      const IrInstr *y = e->x->users[u];
      if (counts(r, y) && seen[y->id] == g) r->reached_by[y->id] |= m;
    }
  }
  s->n = n;
  for (int k = 0; k < n; k++) {
    s->node[k] = sib[k];
    s->reaches[k] = 0;
  }
  for (int j = 0; j < n; j++) {
    uint64_t m = r->reached_by[sib[j]->id];
    for (int i = 0; i < n; i++)
      if ((m >> i) & 1) s->reaches[i] |= UINT64_C(1) << j;
  }
  s->epoch = r->epoch;
  s->active = true;
  return true;
}

void reach_siblings_merged(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *f) {
  ReachSiblings *s = &r->sibs;
  int ia = sibling_index(s, a), ib = sibling_index(s, b);
  /* one reach_update since the answers were last right: the merge's own */
  if (!s->active || s->epoch + 1 != r->epoch || ia < 0 || ib < 0 || ia == ib) {
    s->active = false;
    return;
  }
  uint64_t both = (UINT64_C(1) << ia) | (UINT64_C(1) << ib);
  uint64_t from_f = (s->reaches[ia] | s->reaches[ib]) & ~both;
  for (int u = 0; u < s->n; u++) {
    if (u == ia || u == ib) continue;
    if (s->reaches[u] & both) s->reaches[u] |= from_f | (UINT64_C(1) << ia);
    s->reaches[u] &= ~(UINT64_C(1) << ib);
  }
  s->reaches[ia] = from_f;
  s->reaches[ib] = 0;
  s->node[ia] = f;
  s->node[ib] = NULL;
  s->epoch = r->epoch;
}

void reach_siblings_end(Reach *r) { r->sibs.active = false; }

bool reach_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct) {
  if (r->broken || from->parent != r->c || !reserve(r)) {
    if (!r->broken && from->parent == r->c) set_broken(r);
    return fusion_path_exists(from, to, skip_direct);
  }
  int fi, ti;
  bool found = !skip_direct && sibling_pair(r, from, to, &fi, &ti) ? (r->sibs.reaches[fi] >> ti) & 1
               : skip_direct                                       ? bounded_path(r, from, to, skip_direct)
                                                                   : kept_path(r, from, to);
  if (r->check && found != fusion_path_exists(from, to, skip_direct)) {
    fprintf(stderr, "FXPLAIN_REACH_CHECK: %s -> %s%s: kept levels say %s, a full search says %s\n", from->name,
            to->name, skip_direct ? " (not directly)" : "", found ? "a path" : "no path", found ? "none" : "a path");
    abort(); /* FXPLAIN_REACH_CHECK only: a level was not raised after a fusion */
  }
  return found;
}

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


/* The sweep's arrays for cap ids, from old_cap (new places of siblings start unset); made by the
 * first sweep (most computations never need one). */
static bool sweep_alloc(Reach *r, size_t old_cap, size_t cap) {
  int32_t *si = fx_realloc(r->sib_index, sizeof(int32_t) * cap);
  if (!si) return false;
  r->sib_index = si;
  for (size_t k = old_cap; k < cap; k++) si[k] = -1;
  int32_t *sp = fx_realloc(r->sweep_pos, sizeof(int32_t) * cap);
  if (!sp) return false;
  r->sweep_pos = sp;
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
  if (r->sib_index && !sweep_alloc(r, r->cap, cap)) return false;
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
  reach_siblings_end(r);
  fx_free(r->sib_index);
  fx_free(r->sweep_pos);
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

static int sibling_index(const Reach *r, const IrInstr *x) {
  const ReachSiblings *s = &r->sibs;
  if (!r->sib_index || x->id < 0 || (size_t)x->id >= r->cap) return -1;
  int k = r->sib_index[x->id];
  return k >= 0 && k < s->n && s->node[k] == x ? k : -1;
}

static bool bit(const uint64_t *row, int i) { return (row[i / 64] >> (i % 64)) & 1; }

/* Whether the sweep answers from -> to: both among the siblings, nothing changed but their merges. */
static bool sibling_pair(const Reach *r, const IrInstr *from, const IrInstr *to, int *fi, int *ti) {
  const ReachSiblings *s = &r->sibs;
  if (!s->active || s->epoch != r->epoch) return false;
  *fi = sibling_index(r, from);
  *ti = *fi >= 0 ? sibling_index(r, to) : -1;
  return *ti >= 0;
}

bool reach_siblings_connections(const Reach *r, int i, uint64_t *conn) {
  const ReachSiblings *s = &r->sibs;
  if (!s->active || s->epoch != r->epoch || i < 0 || i >= s->n || !s->node[i]) return false;
  int W = s->words;
  const uint64_t *f = &s->from[(size_t)i * W], *t = &s->to[(size_t)i * W];
  for (int w = 0; w < W; w++) conn[w] = f[w] | t[w];
  return true;
}

static int by_level(const void *a, const void *b) {
  int32_t x = ((const ReachSweepEntry *)a)->level, y = ((const ReachSweepEntry *)b)->level;
  return (x > y) - (x < y);
}

void reach_siblings_end(Reach *r) {
  ReachSiblings *s = &r->sibs;
  for (int k = 0; k < s->n && r->sib_index; k++)
    if (s->node[k] && (size_t)s->node[k]->id < r->cap) r->sib_index[s->node[k]->id] = -1;
  fx_free(s->node);
  fx_free(s->from);
  fx_free(s->to);
  memset(s, 0, sizeof *s);
}

bool reach_siblings_begin(Reach *r, IrInstr *const *sib, int n) {
  reach_siblings_end(r);
  ReachSiblings *s = &r->sibs;
  if (r->broken || n < 2 || n > REACH_MAX_SIBLINGS || !reserve(r)) return false;
  if (!r->sib_index && !sweep_alloc(r, 0, r->cap)) return false;
  int words = (n + 63) / 64;
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
      r->sweep[nsw++] = (ReachSweepEntry){r->level[y->id], -1, y};
      stack[sp++] = y;
    }
  }
  /* Which siblings reach each of them: `words` words each (at most 256 MiB, else the searches) */
  if ((double)nsw * words > (double)(32u << 20)) return false;
  uint64_t *reached = fx_calloc(nsw * (size_t)words, sizeof(uint64_t));
  s->node = fx_malloc(sizeof(IrInstr *) * (size_t)n);
  s->from = fx_calloc((size_t)n * (size_t)words, sizeof(uint64_t));
  s->to = fx_calloc((size_t)n * (size_t)words, sizeof(uint64_t));
  if (!reached || !s->node || !s->from || !s->to) {
    fx_free(reached);
    reach_siblings_end(r);
    return false;
  }
  /* In level order every operand comes before its users: each passes on who reaches it. */
  qsort(r->sweep, nsw, sizeof *r->sweep, by_level);
  for (size_t k = 0; k < nsw; k++) r->sweep_pos[r->sweep[k].x->id] = (int32_t)k;
  for (size_t k = 0; k < nsw; k++) {
    const ReachSweepEntry *e = &r->sweep[k];
    uint64_t *m = &reached[k * (size_t)words];
    if (e->sibling >= 0) {
      /* its row is complete: every operand came before it */
      memcpy(&s->from[(size_t)e->sibling * words], m, sizeof(uint64_t) * (size_t)words);
      m[e->sibling / 64] |= UINT64_C(1) << (e->sibling % 64);
    }
    for (int u = 0; u < e->x->nusers; u++) {
      const IrInstr *y = e->x->users[u];
      if (!counts(r, y) || seen[y->id] != g) continue;
      uint64_t *my = &reached[(size_t)r->sweep_pos[y->id] * words];
      for (int w = 0; w < words; w++) my[w] |= m[w];
    }
  }
  /* And backwards, in falling level order, each learns which siblings it reaches through its
   * users. */
  memset(reached, 0, sizeof(uint64_t) * nsw * (size_t)words);
  for (size_t k = nsw; k-- > 0;) {
    const ReachSweepEntry *e = &r->sweep[k];
    uint64_t *m = &reached[k * (size_t)words];
    for (int u = 0; u < e->x->nusers; u++) {
      const IrInstr *y = e->x->users[u];
      if (!counts(r, y) || seen[y->id] != g) continue;
      size_t py = (size_t)r->sweep_pos[y->id];
      const uint64_t *my = &reached[py * words];
      for (int w = 0; w < words; w++) m[w] |= my[w];
      if (r->sweep[py].sibling >= 0) m[r->sweep[py].sibling / 64] |= UINT64_C(1) << (r->sweep[py].sibling % 64);
    }
    if (e->sibling >= 0) memcpy(&s->to[(size_t)e->sibling * words], m, sizeof(uint64_t) * (size_t)words);
  }
  fx_free(reached);
  s->n = n;
  s->words = words;
  for (int k = 0; k < n; k++) {
    s->node[k] = sib[k];
    r->sib_index[sib[k]->id] = k;
  }
  s->epoch = r->epoch;
  s->active = true;
  return true;
}

/* One matrix's rows after siblings ia and ib merge into the kernel that takes ia's place: its row
 * is the union of both (less the two), and every row that held ia or ib gains it and holds ia. On
 * `from` (who reaches each) that says: whoever reached a or b reaches the merged kernel, and so
 * does whatever reached it reach whatever a or b reached; on `to`, the same seen from the other
 * end. */
static void merge_rows(ReachSiblings *s, uint64_t *rows, int ia, int ib) {
  int W = s->words;
  uint64_t *ra = &rows[(size_t)ia * W], *rb = &rows[(size_t)ib * W];
  for (int w = 0; w < W; w++) ra[w] |= rb[w];
  ra[ia / 64] &= ~(UINT64_C(1) << (ia % 64));
  ra[ib / 64] &= ~(UINT64_C(1) << (ib % 64));
  for (int v = 0; v < s->n; v++) {
    if (v == ia || v == ib || !s->node[v]) continue;
    uint64_t *rv = &rows[(size_t)v * W];
    if (bit(rv, ia) || bit(rv, ib)) {
      for (int w = 0; w < W; w++) rv[w] |= ra[w];
      rv[ia / 64] |= UINT64_C(1) << (ia % 64);
      rv[ib / 64] &= ~(UINT64_C(1) << (ib % 64));
    }
  }
  memset(rb, 0, sizeof(uint64_t) * (size_t)W);
}

void reach_siblings_merged(Reach *r, const IrInstr *a, const IrInstr *b, const IrInstr *f) {
  ReachSiblings *s = &r->sibs;
  int ia = s->active ? sibling_index(r, a) : -1, ib = s->active ? sibling_index(r, b) : -1;
  /* one reach_update since the answers were last right: the merge's own */
  if (!s->active || s->epoch + 1 != r->epoch || ia < 0 || ib < 0 || ia == ib || f->id < 0 ||
      (size_t)f->id >= r->cap) {
    reach_siblings_end(r);
    return;
  }
  merge_rows(s, s->from, ia, ib); /* who reaches the merged kernel, and what it reaches */
  merge_rows(s, s->to, ia, ib);   /* the same transposed */
  r->sib_index[a->id] = -1;
  r->sib_index[b->id] = -1;
  s->node[ia] = f;
  s->node[ib] = NULL;
  r->sib_index[f->id] = ia;
  s->epoch = r->epoch;
}

bool reach_path(Reach *r, const IrInstr *from, const IrInstr *to, bool skip_direct) {
  if (r->broken || from->parent != r->c || !reserve(r)) {
    if (!r->broken && from->parent == r->c) set_broken(r);
    return fusion_path_exists(from, to, skip_direct);
  }
  int fi, ti;
  bool found = !skip_direct && sibling_pair(r, from, to, &fi, &ti) ? bit(&r->sibs.from[(size_t)ti * r->sibs.words], fi)
               : skip_direct                                       ? bounded_path(r, from, to, skip_direct)
                                                                   : kept_path(r, from, to);
  if (r->check && found != fusion_path_exists(from, to, skip_direct)) {
    fprintf(stderr, "FXPLAIN_REACH_CHECK: %s -> %s%s: kept levels say %s, a full search says %s\n", from->name,
            to->name, skip_direct ? " (not directly)" : "", found ? "a path" : "no path", found ? "none" : "a path");
    abort(); /* FXPLAIN_REACH_CHECK only: a level was not raised after a fusion */
  }
  return found;
}

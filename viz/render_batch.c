/* render_batch.c — many pictures laid out and rendered at once (the report's stages and steps,
 * and `render`, a batch of one): each layout done once, on every core, and stoppable by Ctrl-C.
 *
 * What a picture costs is Graphviz's layout; rendering a laid-out graph is cheap. Pictures that
 * differ only in their tooltips (the same stage drawn twice, or two stages of an XLA dump whose
 * instructions point at different snapshot files) have the same layout: the layout reads no
 * tooltip. So the batch compares the pictures first: one whose every attribute is the same as an
 * earlier one's is a copy of its bytes; one that differs only in tooltips is rendered from the
 * earlier one's layout with its own tooltips put in for the time it is rendered (the output is what laying it out itself would
 * give, byte for byte: dot and sfdp are deterministic on the same input). What is left is shared
 * among child processes, one per core, the largest layouts first; each sends its pictures back
 * through a pipe as it finishes them, so a Ctrl-C kills them within a tenth of a second
 * (Graphviz's layout itself cannot be stopped). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "viz_internal.h"

/* Attributes Graphviz reads only when it renders: a picture that differs from another in these
 * alone shares its layout. */
static bool render_only(const char *name) { return strcmp(name, "tooltip") == 0; }

/* ---------- what a picture is made of ---------- */

static void key_attrs(VizBuf *b, Agraph_t *root, void *obj, int kind, bool layout_part) {
  Agsym_t *sym = NULL;
  while ((sym = agnxtattr(root, kind, sym))) {
    if (render_only(sym->name) == layout_part) continue;
    vbuf_puts(b, sym->name);
    vbuf_putn(b, "\x01", 1);
    vbuf_puts(b, agxget(obj, sym));
    vbuf_putn(b, "\x02", 1);
  }
}

static void key_subgraphs(VizBuf *b, Agraph_t *root, Agraph_t *g, bool layout_part) {
  for (Agraph_t *s = agfstsubg(g); s; s = agnxtsubg(s)) {
    vbuf_putn(b, "\x03", 1);
    vbuf_puts(b, agnameof(s));
    key_attrs(b, root, s, AGRAPH, layout_part);
    for (Agnode_t *n = agfstnode(s); n; n = agnxtnode(s, n)) {
      vbuf_puts(b, agnameof(n));
      vbuf_putn(b, "\x04", 1);
    }
    key_subgraphs(b, root, s, layout_part);
    vbuf_putn(b, "\x05", 1);
  }
}

/* The picture as text: with layout_part, its structure and every attribute the layout reads;
 * without, the render-only attributes in the same order. */
static void picture_key(VizBuf *b, const VizGraph *vg, bool layout_part) {
  Agraph_t *g = vg->g;
  vbuf_printf(b, "%d\x01", (int)vg->stats.layout);
  vbuf_puts(b, agnameof(g));
  key_attrs(b, g, g, AGRAPH, layout_part);
  key_subgraphs(b, g, g, layout_part);
  for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
    vbuf_putn(b, "\x06", 1);
    vbuf_puts(b, agnameof(n));
    key_attrs(b, g, n, AGNODE, layout_part);
    for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
      vbuf_putn(b, "\x07", 1);
      vbuf_puts(b, agnameof(aghead(e)));
      key_attrs(b, g, e, AGEDGE, layout_part);
    }
  }
}

static uint64_t hash_text(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
  return h;
}

/* The render-only attributes of a laid-out graph: put another picture's in (COPY), or keep the
 * graph's own (SAVE) to put them back afterwards (RESTORE), so that the graph is as it was. */
typedef enum { COPY, SAVE, RESTORE } AttrOp;

typedef struct {
  AttrOp op;
  Agraph_t *to_root, *from_root;
  char **saved; /* SAVE/RESTORE: the values, as cgraph strings (agstrdup) */
  size_t n, cap;
  bool failed;
} AttrWalk;

static void walk_attrs(AttrWalk *w, void *to, void *from, int kind) {
  Agsym_t *sym = NULL;
  while ((sym = agnxtattr(w->to_root, kind, sym))) {
    if (!render_only(sym->name)) continue;
    if (w->op == COPY) {
      Agsym_t *src = agattr(w->from_root, kind, sym->name, NULL);
      if (src) agxset(to, sym, agxget(from, src));
    } else if (w->op == SAVE) {
      if (w->n == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 256;
        char **grown = fx_realloc(w->saved, sizeof *grown * ncap);
        if (!grown) {
          w->failed = true;
          return;
        }
        w->saved = grown;
        w->cap = ncap;
      }
      w->saved[w->n++] = agstrdup(w->to_root, agxget(to, sym));
    } else if (w->n < w->cap) {
      agxset(to, sym, w->saved[w->n]);
      agstrfree(w->to_root, w->saved[w->n++]);
    }
  }
}

static void walk_subgraphs(AttrWalk *w, Agraph_t *to, Agraph_t *from) {
  Agraph_t *t = agfstsubg(to), *f = from ? agfstsubg(from) : NULL;
  for (; t; t = agnxtsubg(t), f = f ? agnxtsubg(f) : NULL) {
    walk_attrs(w, t, f, AGRAPH);
    walk_subgraphs(w, t, f);
  }
}

/* Walks to's render-only attributes (and, for COPY, from's: the same structure, so the same
 * order of subgraphs, nodes and edges). */
static void walk_render_only(AttrWalk *w, Agraph_t *to, Agraph_t *from) {
  w->to_root = to;
  w->from_root = from;
  if (w->op == RESTORE) w->cap = w->n, w->n = 0;
  walk_attrs(w, to, from, AGRAPH);
  walk_subgraphs(w, to, from);
  Agnode_t *tn = agfstnode(to), *fn = from ? agfstnode(from) : NULL;
  for (; tn; tn = agnxtnode(to, tn), fn = fn ? agnxtnode(from, fn) : NULL) {
    walk_attrs(w, tn, fn, AGNODE);
    Agedge_t *te = agfstout(to, tn), *fe = fn ? agfstout(from, fn) : NULL;
    for (; te; te = agnxtout(to, te), fe = fe ? agnxtout(from, fe) : NULL) walk_attrs(w, te, fe, AGEDGE);
  }
}

/* ---------- the plan: groups sharing a layout, shared among the workers ---------- */

typedef struct {
  int first;    /* the item laid out */
  int *members; /* the items rendered from that layout, first included, in order */
  int n;
  double cost;  /* how long its layout takes, roughly (dot's work, or sfdp's nodes) */
  int worker;
} Group;

typedef struct {
  Group *groups;
  int ngroups;
  int *copy_of; /* per item: the earlier identical item, or -1 */
  int *member_of;
} BatchPlan;

static void batch_plan_free(BatchPlan *p) {
  for (int k = 0; p->groups && k < p->ngroups; k++) fx_free(p->groups[k].members);
  fx_free(p->groups);
  fx_free(p->copy_of);
  fx_free(p->member_of);
}

static bool batch_plan_make(VizBatchItem *items, int n, BatchPlan *p) {
  memset(p, 0, sizeof *p);
  VizBuf *lk = fx_calloc((size_t)n + 1, sizeof *lk), *rk = fx_calloc((size_t)n + 1, sizeof *rk);
  uint64_t *lh = fx_calloc((size_t)n + 1, sizeof *lh), *rh = fx_calloc((size_t)n + 1, sizeof *rh);
  p->copy_of = fx_malloc(sizeof(int) * ((size_t)n + 1));
  p->member_of = fx_malloc(sizeof(int) * ((size_t)n + 1));
  p->groups = fx_calloc((size_t)n + 1, sizeof *p->groups);
  bool ok = lk && rk && lh && rh && p->copy_of && p->member_of && p->groups;
  for (int i = 0; ok && i < n; i++) {
    picture_key(&lk[i], items[i].graph, true);
    picture_key(&rk[i], items[i].graph, false);
    if (lk[i].failed || rk[i].failed) {
      ok = false;
      break;
    }
    lh[i] = hash_text(lk[i].s, lk[i].len);
    rh[i] = hash_text(rk[i].s, rk[i].len);
    p->copy_of[i] = p->member_of[i] = -1;
    /* Against the pictures drawn so far (not the copies): the same in every attribute, or in all
     * that the layout reads. */
    for (int j = 0; j < i; j++) {
      if (p->copy_of[j] >= 0 || lh[j] != lh[i] || lk[j].len != lk[i].len || memcmp(lk[j].s, lk[i].s, lk[i].len) != 0)
        continue;
      if (rh[j] == rh[i] && rk[j].len == rk[i].len && memcmp(rk[j].s, rk[i].s, rk[i].len) == 0) {
        p->copy_of[i] = j;
        break;
      }
      if (p->member_of[i] < 0) p->member_of[i] = p->member_of[j];
    }
    if (p->copy_of[i] >= 0) continue;
    if (p->member_of[i] < 0) {
      Group *g = &p->groups[p->ngroups];
      p->member_of[i] = p->ngroups++;
      g->first = i;
      const VizGraphStats *st = &items[i].graph->stats;
      g->cost = st->layout == VIZ_LAYOUT_SFDP ? 4.0 * st->nodes : (double)(st->dot_work > st->nodes ? st->dot_work : st->nodes);
      g->members = fx_malloc(sizeof(int) * ((size_t)n + 1));
      if (!g->members) {
        ok = false;
        break;
      }
    }
    Group *g = &p->groups[p->member_of[i]];
    g->members[g->n++] = i;
  }
  for (int i = 0; lk && i < n; i++) vbuf_free(&lk[i]);
  for (int i = 0; rk && i < n; i++) vbuf_free(&rk[i]);
  fx_free(lk);
  fx_free(rk);
  fx_free(lh);
  fx_free(rh);
  if (!ok) batch_plan_free(p);
  return ok;
}

/* Largest layouts first, each to the worker with the least work so far. */
static void batch_plan_assign(BatchPlan *p, int workers) {
  double *load = fx_calloc((size_t)workers + 1, sizeof *load);
  bool *done = fx_calloc((size_t)p->ngroups + 1, sizeof *done);
  for (int k = 0; k < p->ngroups; k++) {
    int best = -1;
    for (int g = 0; g < p->ngroups; g++)
      if (!(done && done[g]) && (best < 0 || p->groups[g].cost > p->groups[best].cost)) best = g;
    int w = 0;
    for (int j = 1; load && j < workers; j++)
      if (load[j] < load[w]) w = j;
    p->groups[best].worker = w;
    if (load) load[w] += p->groups[best].cost;
    if (done) done[best] = true;
    else p->groups[best].worker = k % workers; /* out of memory: round robin */
  }
  fx_free(load);
  fx_free(done);
}

/* ---------- laying out and rendering ---------- */

/* Where a worker's pictures go: straight into the items (in this process) or down a pipe. */
typedef struct {
  int fd; /* -1: in this process */
  VizBatchItem *items;
  FxError *err;
} Sink;

/* Writes all of buf to fd; false on error. */
static bool write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* A record on the pipe: the item, a status byte (1: the picture, 0: an error message), the
 * length and the bytes. */
enum { RECORD_HEAD = (int)(sizeof(int32_t) + 1 + sizeof(uint64_t)) };

static bool send_picture(Sink *s, int item, bool ok, char *data, size_t len, const FxError *e) {
  if (s->fd < 0) {
    if (!ok) {
      *s->err = *e;
      return false;
    }
    s->items[item].data = data;
    s->items[item].len = len;
    return true;
  }
  unsigned char head[RECORD_HEAD];
  int32_t idx = item;
  uint64_t blen = ok ? len : strlen(e->msg);
  memcpy(head, &idx, sizeof idx);
  head[sizeof idx] = ok ? 1 : 0;
  memcpy(head + sizeof idx + 1, &blen, sizeof blen);
  bool sent = write_all(s->fd, head, sizeof head) && write_all(s->fd, ok ? data : e->msg, (size_t)blen);
  fx_free(data);
  return sent && ok;
}

/* Lays out group g's first picture once and renders every member from it. */
static bool render_group(VizRenderer *r, VizBatchItem *items, const Group *g, VizFormat f, Sink *s) {
  FxError e;
  fx_error_clear(&e);
  VizGraph *laid = items[g->first].graph;
  if (!viz_layout_graph(r, laid, &e)) return send_picture(s, g->first, false, NULL, 0, &e);
  /* In this process the first graph gets its own tooltips back at the end. */
  AttrWalk own = {.op = SAVE};
  if (s->fd < 0 && g->n > 1) walk_render_only(&own, laid->g, NULL);
  bool ok = !own.failed || fx_error_set(&e, NULL, 0, 0, "out of memory rendering the pictures");
  if (!ok) send_picture(s, g->first, false, NULL, 0, &e);
  for (int k = 0; k < g->n && ok; k++) {
    if (g->members[k] != g->first) {
      AttrWalk copy = {.op = COPY};
      walk_render_only(&copy, laid->g, items[g->members[k]].graph->g);
    }
    char *data = NULL;
    size_t len = 0;
    bool drawn = viz_render_laid_out(r, laid, f, &data, &len, &e);
    ok = send_picture(s, g->members[k], drawn, data, len, &e);
  }
  if (own.n > 0) {
    own.op = RESTORE;
    walk_render_only(&own, laid->g, NULL);
  }
  for (size_t k = own.n; k < own.cap && own.saved; k++) agstrfree(laid->g, own.saved[k]);
  fx_free(own.saved);
  viz_free_layout(r, laid);
  return ok;
}

/* One worker's part: its groups, in the plan's order. */
static bool render_part(VizRenderer *r, VizBatchItem *items, const BatchPlan *p, int worker, VizFormat f, Sink *s) {
  for (int k = 0; k < p->ngroups; k++)
    if (p->groups[k].worker == worker && !render_group(r, items, &p->groups[k], f, s)) return false;
  return true;
}

/* A worker seen from the parent: its pipe and the record being read. */
typedef struct {
  pid_t pid;
  int fd;
  unsigned char head[RECORD_HEAD];
  size_t head_have;
  char *body;
  size_t body_len, body_have;
} Worker;

static int cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > VIZ_MAX_WORKERS ? VIZ_MAX_WORKERS : (int)n;
}

/* Reads what worker w has sent; a finished record is stored (*got: its item, else -1). False
 * with err filled on an error record or out of memory; *eof at the end of the pipe. */
static bool read_worker(Worker *w, VizBatchItem *items, int n, int *got, bool *eof, FxError *err) {
  *got = -1;
  *eof = false;
  ssize_t rd;
  if (w->head_have < RECORD_HEAD) {
    rd = read(w->fd, w->head + w->head_have, RECORD_HEAD - w->head_have);
  } else {
    rd = read(w->fd, w->body + w->body_have, w->body_len - w->body_have);
  }
  if (rd < 0 && errno == EINTR) return true;
  if (rd <= 0) {
    *eof = true;
    return true;
  }
  if (w->head_have < RECORD_HEAD) {
    w->head_have += (size_t)rd;
    if (w->head_have < RECORD_HEAD) return true;
    uint64_t blen;
    memcpy(&blen, w->head + sizeof(int32_t) + 1, sizeof blen);
    w->body_len = (size_t)blen;
    w->body_have = 0;
    w->body = fx_malloc(w->body_len + 1);
    if (!w->body) return fx_error_set(err, NULL, 0, 0, "out of memory rendering the pictures");
  } else {
    w->body_have += (size_t)rd;
  }
  if (w->body_have < w->body_len) return true;
  int32_t idx;
  memcpy(&idx, w->head, sizeof idx);
  bool ok = w->head[sizeof idx] == 1;
  w->body[w->body_len] = 0;
  w->head_have = 0;
  char *body = w->body;
  w->body = NULL;
  if (!ok || idx < 0 || idx >= n) {
    bool r = fx_error_set(err, NULL, 0, 0, "%.*s", (int)(w->body_len < 400 ? w->body_len : 400),
                          ok ? "the picture could not be rendered (a bad record)" : body);
    fx_free(body);
    return r;
  }
  items[idx].data = body;
  items[idx].len = w->body_len;
  *got = idx;
  return true;
}

static void stop_workers(Worker *ws, int nw) {
  for (int k = 0; k < nw; k++) {
    if (ws[k].fd >= 0) close(ws[k].fd);
    ws[k].fd = -1;
    if (ws[k].pid > 0) kill(ws[k].pid, SIGKILL);
  }
}

static void reap_workers(Worker *ws, int nw) {
  for (int k = 0; k < nw; k++) {
    if (ws[k].fd >= 0) close(ws[k].fd);
    int st;
    while (ws[k].pid > 0 && waitpid(ws[k].pid, &st, 0) < 0 && errno == EINTR) {
    }
    fx_free(ws[k].body);
  }
}

/* Starts the nw workers; when one cannot be started, none runs (returns 0: the caller renders
 * in this process). */
static int start_workers(VizRenderer *r, VizBatchItem *items, const BatchPlan *p, int nw, VizFormat f, Worker *ws) {
  fflush(NULL);
  for (int k = 0; k < nw; k++) {
    int fds[2];
    if (pipe(fds) != 0) {
      stop_workers(ws, k);
      reap_workers(ws, k);
      return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      stop_workers(ws, k);
      reap_workers(ws, k);
      return 0;
    }
    if (pid == 0) {
      /* The child renders its part and leaves without running the parent's exit handlers. */
      close(fds[0]);
      for (int j = 0; j < k; j++) close(ws[j].fd);
      signal(SIGINT, SIG_IGN);
      FxError e;
      fx_error_clear(&e);
      Sink s = {fds[1], items, &e};
      _exit(render_part(r, items, p, k, f, &s) ? 0 : 1);
    }
    close(fds[1]);
    ws[k] = (Worker){.pid = pid, .fd = fds[0]};
  }
  return nw;
}

bool viz_render_batch(VizRenderer *r, VizBatchItem *items, int n, VizFormat f, const VizBatchOptions *o,
                      VizBatchStats *stats, FxError *err) {
  VizBatchStats st = {0};
  for (int i = 0; i < n; i++) {
    items[i].data = NULL;
    items[i].len = 0;
  }
  volatile int *interrupted = o ? o->interrupted : NULL;
  if (interrupted && *interrupted) return fx_error_set(err, NULL, 0, 0, "interrupted");
  BatchPlan p;
  if (!batch_plan_make(items, n, &p)) return fx_error_set(err, NULL, 0, 0, "out of memory rendering the pictures");
  int want = o && o->workers > 0 ? o->workers : cores();
  int nw = want < p.ngroups ? want : p.ngroups;
  batch_plan_assign(&p, nw > 0 ? nw : 1);
  st.pictures = n;
  st.layouts = p.ngroups;
  for (int i = 0; i < n; i++) st.copies += p.copy_of[i] >= 0;
  bool ok = true;
  int done = 0;
  Worker *ws = NULL;
  int started = 0;
  /* In this process when nothing has to stop it and one worker would do; else children. */
  if (f != VIZ_DOT && nw > 0 && (interrupted || nw > 1)) {
    ws = fx_calloc((size_t)nw, sizeof *ws);
    if (ws) started = start_workers(r, items, &p, nw, f, ws);
  }
  st.workers = started;
  if (started == 0) {
    Sink s = {-1, items, err};
    for (int k = 0; k < p.ngroups && ok; k++) {
      if (interrupted && *interrupted) {
        ok = fx_error_set(err, NULL, 0, 0, "interrupted");
        break;
      }
      if (f == VIZ_DOT) {
        for (int m = 0; m < p.groups[k].n && ok; m++) {
          int i = p.groups[k].members[m];
          ok = viz_render(r, items[i].graph, f, &items[i].data, &items[i].len, err);
          if (ok && o && o->progress) o->progress(o->progress_ctx, i, ++done, n);
        }
        continue;
      }
      ok = render_group(r, items, &p.groups[k], f, &s);
      for (int m = 0; ok && m < p.groups[k].n; m++)
        if (o && o->progress) o->progress(o->progress_ctx, p.groups[k].members[m], ++done, n);
    }
  } else {
    int open = started;
    struct pollfd *pf = fx_calloc((size_t)started, sizeof *pf);
    if (!pf) ok = fx_error_set(err, NULL, 0, 0, "out of memory rendering the pictures");
    while (ok && open > 0) {
      if (interrupted && *interrupted) {
        ok = fx_error_set(err, NULL, 0, 0, "interrupted");
        break;
      }
      int np = 0;
      for (int k = 0; k < started; k++)
        if (ws[k].fd >= 0) pf[np++] = (struct pollfd){ws[k].fd, POLLIN, 0};
      int pr = poll(pf, (nfds_t)np, 100);
      if (pr <= 0) continue; /* a timeout, or a signal: look at `interrupted` again */
      for (int q = 0; q < np && ok; q++) {
        if (!(pf[q].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Worker *w = NULL;
        for (int k = 0; k < started; k++)
          if (ws[k].fd == pf[q].fd) w = &ws[k];
        int got;
        bool eof;
        ok = read_worker(w, items, n, &got, &eof, err);
        if (ok && got >= 0 && o && o->progress) o->progress(o->progress_ctx, got, ++done, n);
        if (ok && eof) {
          close(w->fd);
          w->fd = -1;
          open--;
        }
      }
    }
    fx_free(pf);
    if (!ok) stop_workers(ws, started);
    reap_workers(ws, started);
    /* Every picture of the plan must have come back. */
    for (int i = 0; ok && i < n; i++)
      if (p.copy_of[i] < 0 && !items[i].data)
        ok = fx_error_set(err, NULL, 0, 0, "the picture could not be rendered (its process ended early)");
  }
  fx_free(ws);
  /* The copies. */
  for (int i = 0; ok && i < n; i++) {
    int j = p.copy_of[i];
    if (j < 0) continue;
    items[i].data = fx_malloc(items[j].len + 1);
    if (!items[i].data) {
      ok = fx_error_set(err, NULL, 0, 0, "out of memory rendering the pictures");
      break;
    }
    memcpy(items[i].data, items[j].data, items[j].len + 1);
    items[i].len = items[j].len;
    if (o && o->progress) o->progress(o->progress_ctx, i, ++done, n);
  }
  if (!ok)
    for (int i = 0; i < n; i++) {
      fx_free(items[i].data);
      items[i].data = NULL;
      items[i].len = 0;
    }
  batch_plan_free(&p);
  if (stats) *stats = st;
  return ok;
}

bool viz_render_interruptible(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len,
                              volatile int *interrupted, FxError *err) {
  /* DOT text needs no layout: fast, nothing to stop. */
  if (!interrupted || f == VIZ_DOT) return viz_render(r, g, f, data, len, err);
  VizBatchItem item = {.graph = g};
  VizBatchOptions o = {.workers = 1, .interrupted = interrupted};
  bool ok = viz_render_batch(r, &item, 1, f, &o, NULL, err);
  *data = item.data;
  *len = item.len;
  return ok;
}

/* graph.c — one stage of the IR → a Graphviz graph (libcgraph), ready for render.c to lay out.
 *
 * How a picture is made:
 *  1. Model. Walk the drawn computation. Every live instruction becomes a node, except that a
 *     fusion (unless --collapse) becomes a cluster holding its fused computation's instructions:
 *     the fused parameters are not drawn (an edge from the fusion's operand goes straight to the
 *     members that read it) and the fusion's users read from the fused root. Edges run from operand
 *     to user. An edge whose ends are in the same fused body carries a value that stays in
 *     registers; every other edge carries a value written to memory (it crosses a kernel boundary).
 *  2. Decisions. For each producer/consumer pair the last recorded decision counts; refused ones
 *     whose ends are both drawn (and not now in one kernel) become dashed red edges labelled with
 *     the reason code.
 *  3. View. --focus keeps the nodes within --depth edges of the focus (a fusion's members count as
 *     one step from each other); a kept node notes how many neighbours were left out.
 *  4. Style and layout engine. dot draws a dataflow graph best (layered, top to bottom), but its
 *     time grows with the nodes and, faster than linearly, with the long edges it must route
 *     through every rank between their ends (each crossing is a virtual node it places, and its
 *     network simplex walks them all at every step). An edge label is a node of its own in a rank
 *     of its own, which doubles the ranks every edge crosses. So the work is estimated before
 *     laying out (ranks by longest path, as dot's own are at most), and the picture is drawn:
 *     with its labels as nodes up to VIZ_LABEL_MAX_WORK; with each label beside its edge (xlabel,
 *     placed after the layout) and network simplex given a bounded number of steps up to
 *     VIZ_XLABEL_MAX_WORK; past that, still beside their edges, with straight edges and few
 *     iterations (quick); past 600 nodes in the plain style (no value labels, straight edges,
 *     few iterations). Past VIZ_DOT_MAX_NODES nodes, or VIZ_DOT_MAX_WORK, it is
 *     laid out with sfdp instead, and nodes without any drawn edge (unused parameters) are left
 *     out of it and counted.
 *  5. Emit. Nodes, clusters and edges go to libcgraph with their styles; a legend and a title are
 *     added. */
#include <stdlib.h>
#include <string.h>

#include "../explain/xla_dump.h"
#include "viz_internal.h"

enum { E_MEMORY, E_REGISTER, E_REFUSED, E_DECISION };

#define MAX_FANOUT 24
/* A large (plain) picture draws at most this many refused candidates. */
#define MAX_REFUSED_PLAIN 50

typedef struct {
  const IrInstr *instr;
  int cluster;   /* innermost cluster, -1 at top level */
  int dist;      /* BFS distance from the focus; -1 not reached */
  int hidden_in, hidden_out;
  bool unconnected; /* left out of an sfdp picture: no drawn edge */
  Agnode_t *ag;
} Node;

typedef struct {
  const IrInstr *fusion;
  int parent;
  int members; /* nodes directly or indirectly inside */
  bool keep;
  Agraph_t *ag;
} Cluster;

typedef struct {
  int from, to;
  int kind;
  const IrShape *shape;
  const PassDecision *d;
  int tail_cluster, head_cluster; /* a decision about a whole fusion: the edge ends at its box */
  bool constrained; /* a candidate dot ranks like a value (it follows the data) */
} Edge;

typedef struct {
  const IrModule *m;
  const VizOptions *o;
  int *map;   /* instruction id → node index (or -1) */
  int nmap;
  bool *expanded; /* computation id → drawn as a cluster's body */
  int nexpanded;
  Node *nodes;
  int nnodes, cap_nodes;
  Cluster *clusters;
  int nclusters, cap_clusters;
  Edge *edges;
  int nedges, cap_edges;
  bool oom;
  bool contract; /* big collapsed picture: kernels only, plumbing contracted */
  FxError *err;
} Model;

#define GROW(arr, n, cap)                                                    \
  do {                                                                       \
    if ((n) >= (cap)) {                                                      \
      int nc_ = (cap) ? (cap) * 2 : 64;                                      \
      void *p_ = fx_realloc((arr), sizeof *(arr) * (size_t)nc_);             \
      if (!p_) {                                                             \
        md->oom = true;                                                      \
        return -1;                                                           \
      }                                                                      \
      (arr) = p_;                                                            \
      (cap) = nc_;                                                           \
    }                                                                        \
  } while (0)

static int add_node(Model *md, const IrInstr *i, int cluster) {
  GROW(md->nodes, md->nnodes, md->cap_nodes);
  md->nodes[md->nnodes] = (Node){.instr = i, .cluster = cluster, .dist = -1};
  if (i->id >= 0 && i->id < md->nmap) md->map[i->id] = md->nnodes;
  return md->nnodes++;
}

static int add_cluster(Model *md, const IrInstr *f, int parent) {
  GROW(md->clusters, md->nclusters, md->cap_clusters);
  md->clusters[md->nclusters] = (Cluster){.fusion = f, .parent = parent};
  return md->nclusters++;
}

static int add_edge(Model *md, int from, int to, int kind, const IrShape *shape, const PassDecision *d) {
  GROW(md->edges, md->nedges, md->cap_edges);
  md->edges[md->nedges] = (Edge){from, to, kind, shape, d, -1, -1, false};
  return md->nedges++;
}

static int node_of_id(const Model *md, const IrInstr *i) {
  return (i && i->id >= 0 && i->id < md->nmap) ? md->map[i->id] : -1;
}

static bool comp_expanded(const Model *md, const IrComputation *c) {
  return c && c->id >= 0 && c->id < md->nexpanded && md->expanded[c->id];
}

/* Adds the instructions of c (inside cluster `cluster`, -1 at top level). */
static bool add_comp(Model *md, const IrComputation *c, int cluster, int depth) {
  if (depth > 32) return true; /* nested fusions deeper than this are drawn as single nodes */
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (!viz_live(i)) continue;
    if (cluster >= 0 && i->op == IR_OP_PARAMETER) {
      /* A fused parameter: the fusion's operand is drawn instead. */
      const IrInstr *f = md->clusters[cluster].fusion;
      if (i->param_number >= 0 && i->param_number < f->noperands && i->id < md->nmap)
        md->map[i->id] = node_of_id(md, f->operands[i->param_number]);
      continue;
    }
    const IrComputation *body = ir_instr_is_fusion(i) ? ir_fused_computation(i) : NULL;
    if (body && !md->o->collapse && !comp_expanded(md, body) && body->id < md->nexpanded) {
      int cl = add_cluster(md, i, cluster);
      if (cl < 0) return false;
      md->expanded[body->id] = true;
      if (!add_comp(md, body, cl, depth + 1)) return false;
      if (i->id < md->nmap) md->map[i->id] = node_of_id(md, body->root);
      continue;
    }
    if (md->contract && !i->is_root && viz_kernel_kind(i) == VIZ_K_NONE) continue;
    if (add_node(md, i, cluster) < 0) return false;
  }
  return true;
}

/* In a contracted picture: edges from the kernels behind operand o (through get-tuple-element,
 * bitcast, tuples and other plumbing that launches nothing) to node v. Parameters and constants
 * are not drawn; they count as inputs left out. */
static bool add_contracted_edges(Model *md, int v, const IrInstr *o, int depth) {
  int u = node_of_id(md, o);
  if (u >= 0) {
    if (u == v) return true;
    for (int e = md->nedges - 1; e >= 0 && md->edges[e].to == v; e--)
      if (md->edges[e].from == u) return true;
    return add_edge(md, u, v, E_MEMORY, &o->shape, NULL) >= 0;
  }
  if (o->op == IR_OP_PARAMETER || o->op == IR_OP_CONSTANT || depth > 8) {
    md->nodes[v].hidden_in++;
    return true;
  }
  for (int k = 0; k < o->noperands; k++)
    if (!add_contracted_edges(md, v, o->operands[k], depth + 1)) return false;
  return true;
}

/* Edges from each node's operands. */
static bool add_value_edges(Model *md) {
  int n = md->nnodes;
  for (int v = 0; v < n; v++) {
    const IrInstr *i = md->nodes[v].instr;
    int first = md->nedges;
    if (md->contract) {
      for (int k = 0; k < i->noperands; k++)
        if (!add_contracted_edges(md, v, i->operands[k], 0)) return false;
      continue;
    }
    for (int k = 0; k < i->noperands; k++) {
      const IrInstr *o = i->operands[k];
      int u = node_of_id(md, o);
      if (u < 0 || u == v) continue;
      bool dup = false;
      for (int e = first; e < md->nedges; e++)
        if (md->edges[e].from == u) dup = true;
      if (dup) continue;
      /* Registers: producer and consumer in the same fused body (the producer not one of its
       * parameters, which are read from memory). */
      bool in_regs = o->parent == i->parent && o->op != IR_OP_PARAMETER &&
                     (comp_expanded(md, i->parent) || i->parent->fusion_instr != NULL);
      if (add_edge(md, u, v, in_regs ? E_REGISTER : E_MEMORY, &o->shape, NULL) < 0) return false;
    }
  }
  return true;
}

/* The node an instruction name is drawn as: itself, or (collapsed, or in a computation drawn as a
 * cluster body) its fusion. -1 when not in the picture. */
static int node_of_name(const Model *md, const char *name) {
  const IrInstr *i = ir_module_find_instr(md->m, name);
  for (int guard = 0; i && guard < 64; guard++) {
    int v = node_of_id(md, i);
    if (v >= 0) return v;
    const IrComputation *c = i->parent;
    i = c ? c->fusion_instr : NULL;
  }
  return -1;
}

/* The cluster a fusion is drawn as, or -1 (collapsed, or not a fusion). */
static int cluster_of_name(const Model *md, const char *name) {
  const IrInstr *i = ir_module_find_instr(md->m, name);
  if (!i || !ir_instr_is_fusion(i)) return -1;
  for (int c = 0; c < md->nclusters; c++)
    if (md->clusters[c].fusion == i) return c;
  return -1;
}

static int cmp_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

typedef struct {
  const char *producer;
  char *consumer; /* owned */
  int index;
} Pair;

static int pair_cmp(const void *pa, const void *pb) {
  const Pair *a = pa, *b = pb;
  int c = cmp_str(a->producer, b->producer);
  if (!c) c = cmp_str(a->consumer, b->consumer);
  if (!c) c = (a->index > b->index) - (a->index < b->index);
  return c;
}

static bool same_kernel(const Model *md, int u, int v) {
  int cu = md->nodes[u].cluster, cv = md->nodes[v].cluster;
  if (cu < 0 || cv < 0) return false;
  /* Outermost clusters decide: a nested fusion is part of its parent's kernel. */
  while (md->clusters[cu].parent >= 0) cu = md->clusters[cu].parent;
  while (md->clusters[cv].parent >= 0) cv = md->clusters[cv].parent;
  return cu == cv;
}

/* Refused candidates: the last decision for each producer/consumer pair, when it refused. */
static bool add_refused_edges(Model *md) {
  const VizDecisions *ds = &md->o->decisions;
  if (!ds->items || ds->count <= 0) return true;
  int npairs = 0, cap = 0;
  Pair *pairs = NULL;
  bool ok = true;
  for (int k = 0; k < ds->count && ok; k++) {
    const PassDecision *d = &ds->items[k];
    if (!d->producer || !d->consumer || !*d->producer) continue;
    const char *s = d->consumer;
    while (*s) {
      const char *e = strchr(s, ',');
      size_t len = e ? (size_t)(e - s) : strlen(s);
      while (len && *s == ' ') s++, len--;
      if (len) {
        if (npairs >= cap) {
          int nc = cap ? cap * 2 : 64;
          Pair *p = fx_realloc(pairs, sizeof *p * (size_t)nc);
          if (!p) {
            ok = false;
            break;
          }
          pairs = p;
          cap = nc;
        }
        char *c = fx_malloc(len + 1);
        if (!c) {
          ok = false;
          break;
        }
        memcpy(c, s, len);
        c[len] = 0;
        pairs[npairs++] = (Pair){d->producer, c, k};
      }
      if (!e) break;
      s = e + 1;
    }
  }
  if (ok && npairs > 1) qsort(pairs, (size_t)npairs, sizeof *pairs, pair_cmp);
  int first_refused = md->nedges;
  for (int k = 0; ok && k < npairs; k++) {
    bool last = k + 1 == npairs || cmp_str(pairs[k].producer, pairs[k + 1].producer) != 0 ||
                cmp_str(pairs[k].consumer, pairs[k + 1].consumer) != 0;
    if (!last) continue;
    const PassDecision *d = &ds->items[pairs[k].index];
    if (d->accepted) continue;
    int u = node_of_name(md, pairs[k].producer), v = node_of_name(md, pairs[k].consumer);
    if (u < 0 || v < 0 || u == v || same_kernel(md, u, v)) continue;
    bool dup = false;
    for (int e = first_refused; e < md->nedges; e++)
      if (md->edges[e].from == u && md->edges[e].to == v) dup = true;
    if (dup) continue;
    int e = add_edge(md, u, v, E_REFUSED, NULL, d);
    if (e < 0) {
      ok = false;
    } else {
      md->edges[e].tail_cluster = cluster_of_name(md, pairs[k].producer);
      md->edges[e].head_cluster = cluster_of_name(md, pairs[k].consumer);
    }
  }
  for (int k = 0; k < npairs; k++) fx_free(pairs[k].consumer);
  fx_free(pairs);
  if (!ok) md->oom = true;
  return ok;
}

/* --focus / --decision: breadth-first over value edges (both directions) from the seeds. */
static bool focus(Model *md, const int *seeds, int nseeds, int depth) {
  int n = md->nnodes;
  int *deg = fx_calloc((size_t)n + 1, sizeof(int));
  int *adj = fx_malloc(sizeof(int) * (size_t)(2 * md->nedges + 1));
  int *queue = fx_malloc(sizeof(int) * (size_t)(n + 1));
  if (!deg || !adj || !queue) {
    fx_free(deg), fx_free(adj), fx_free(queue);
    md->oom = true;
    return false;
  }
  for (int e = 0; e < md->nedges; e++) {
    if (md->edges[e].kind == E_REFUSED) continue;
    deg[md->edges[e].from + 1]++;
    deg[md->edges[e].to + 1]++;
  }
  for (int v = 0; v < n; v++) deg[v + 1] += deg[v];
  int *fill = queue; /* reuse as a cursor array before the BFS */
  for (int v = 0; v < n; v++) fill[v] = deg[v];
  for (int e = 0; e < md->nedges; e++) {
    if (md->edges[e].kind == E_REFUSED) continue;
    adj[fill[md->edges[e].from]++] = md->edges[e].to;
    adj[fill[md->edges[e].to]++] = md->edges[e].from;
  }
  int head = 0, tail = 0;
  for (int k = 0; k < nseeds; k++)
    if (md->nodes[seeds[k]].dist < 0) {
      md->nodes[seeds[k]].dist = 0;
      queue[tail++] = seeds[k];
    }
  while (head < tail) {
    int v = queue[head++];
    if (md->nodes[v].dist >= depth) continue;
    /* A value with hundreds of users (a loop counter, a broadcast constant) would flood the
     * neighbourhood: take the first MAX_FANOUT new neighbours of each node; the kept nodes say
     * how many of theirs were left out. */
    int taken = 0;
    for (int a = deg[v]; a < deg[v + 1] && taken < MAX_FANOUT; a++) {
      int w = adj[a];
      if (md->nodes[w].dist < 0) {
        md->nodes[w].dist = md->nodes[v].dist + 1;
        queue[tail++] = w;
        taken++;
      }
    }
  }
  /* Count the neighbours each kept node loses. */
  for (int e = 0; e < md->nedges; e++) {
    const Edge *ed = &md->edges[e];
    if (ed->kind == E_REFUSED) continue;
    bool kf = md->nodes[ed->from].dist >= 0, kt = md->nodes[ed->to].dist >= 0;
    if (kf && !kt) md->nodes[ed->from].hidden_out++;
    if (kt && !kf) md->nodes[ed->to].hidden_in++;
  }
  fx_free(deg);
  fx_free(adj);
  fx_free(queue);
  return true;
}

static bool node_kept(const Model *md, int v) { return md->nodes[v].dist >= 0; }

/* Kept and drawn: an sfdp picture leaves out the nodes that have no drawn edge. */
static bool node_drawn(const Model *md, int v) { return node_kept(md, v) && !md->nodes[v].unconnected; }

/* dot's work for the kept picture, in the three styles: its nodes plus, for every edge it ranks,
 * the ranks the edge crosses (dot puts a virtual node on each). Ranks are longest paths from the
 * sources over the value edges, following the node order (operands before users: computations
 * are in topological order and a fused body is added where its fusion stands); a candidate that
 * follows the data adds no rank of its own. With labels as nodes every rank is doubled: an edge
 * over L ranks crosses 2L - 1. */
typedef struct {
  long long plain;    /* value edges only (the plain style leaves candidates unranked) */
  long long xlabels;  /* value edges and the candidates that follow the data */
  long long labelled; /* the same, with every rank doubled by the labels */
} Work;

static Work layout_work(const Model *md) {
  Work w = {0, 0, 0};
  int *rank = fx_calloc((size_t)md->nnodes + 1, sizeof(int));
  if (!rank) return w;
  long long kept = 0;
  for (int v = 0; v < md->nnodes; v++) kept += node_kept(md, v);
  w = (Work){kept, kept, kept};
  for (int e = 0; e < md->nedges; e++) {
    const Edge *ed = &md->edges[e];
    if (ed->kind == E_REFUSED || ed->kind == E_DECISION || ed->from >= ed->to || !node_kept(md, ed->from) ||
        !node_kept(md, ed->to))
      continue;
    if (rank[ed->to] < rank[ed->from] + 1) rank[ed->to] = rank[ed->from] + 1;
  }
  for (int e = 0; e < md->nedges; e++) {
    const Edge *ed = &md->edges[e];
    bool value = ed->kind == E_MEMORY || ed->kind == E_REGISTER;
    if (!(value || ed->constrained) || ed->from >= ed->to || !node_kept(md, ed->from) || !node_kept(md, ed->to)) continue;
    long long span = rank[ed->to] - rank[ed->from];
    if (span < 1) span = 1;
    if (value) w.plain += span - 1;
    w.xlabels += span - 1;
    w.labelled += 2 * span - 1;
  }
  fx_free(rank);
  return w;
}

/* Picks the style (labels as nodes, labels beside their edges, or plain: st->plain was set by
 * size) and the layout engine (o->layout, or by size and work), and, for sfdp, marks the nodes
 * without edges. */
static bool choose_layout(Model *md, VizGraphStats *st, int kept) {
  const VizOptions *o = md->o;
  Work w = layout_work(md);
  if (!st->plain && w.labelled > VIZ_LABEL_MAX_WORK) {
    /* Past VIZ_XLABEL_MAX_WORK the labels stay (beside their edges) and dot gets the plain
     * style's few iterations: the picture says all it said, only less tidily. */
    st->xlabels = true;
    st->quick = w.xlabels > VIZ_XLABEL_MAX_WORK;
  }
  /* A quick picture's engine is chosen as a plain one's: dot unless the value edges alone are
   * too much for it (sfdp would lose the fusion boxes). */
  st->dot_work = st->plain || st->quick ? w.plain : st->xlabels ? w.xlabels : w.labelled;
  st->layout = o->layout == VIZ_LAYOUT_SFDP ? VIZ_LAYOUT_SFDP : VIZ_LAYOUT_DOT;
  if (o->layout == VIZ_LAYOUT_AUTO) {
    if (kept > VIZ_DOT_MAX_NODES) {
      st->layout = VIZ_LAYOUT_SFDP;
      snprintf(st->layout_reason, sizeof st->layout_reason, "%d nodes (dot: up to %d)", kept, VIZ_DOT_MAX_NODES);
    } else if (st->dot_work > VIZ_DOT_MAX_WORK) {
      st->layout = VIZ_LAYOUT_SFDP;
      snprintf(st->layout_reason, sizeof st->layout_reason,
               "dot would place %d nodes and about %lld edge segments (up to %d in all)", kept,
               st->dot_work - kept, VIZ_DOT_MAX_WORK);
    }
    st->layout_chosen = st->layout == VIZ_LAYOUT_SFDP;
  }
  if (st->layout != VIZ_LAYOUT_SFDP) return true;
  bool *linked = fx_calloc((size_t)md->nnodes + 1, sizeof(bool));
  if (!linked) return false;
  for (int e = 0; e < md->nedges; e++) {
    const Edge *ed = &md->edges[e];
    /* Refused candidates do not count: a large picture draws only a few of them. */
    if (ed->kind == E_REFUSED || !node_kept(md, ed->from) || !node_kept(md, ed->to) || ed->from == ed->to) continue;
    linked[ed->from] = linked[ed->to] = true;
  }
  for (int v = 0; v < md->nnodes; v++) {
    Node *n = &md->nodes[v];
    bool seed = (o->focus || o->decision) && n->dist == 0; /* a focus stays, even alone */
    if (node_kept(md, v) && !linked[v] && !seed && !n->instr->is_root) {
      n->unconnected = true;
      st->unconnected++;
    }
  }
  fx_free(linked);
  return true;
}

/* ---------- emitting the cgraph graph ---------- */

typedef struct {
  const char *shape, *style, *fill, *color;
} NodeStyle;

static NodeStyle node_style(const IrInstr *i) {
  switch (i->op) {
    case IR_OP_PARAMETER: return (NodeStyle){"ellipse", "filled", "#e3f1df", "#4d8a43"};
    case IR_OP_CONSTANT:
    case IR_OP_IOTA: return (NodeStyle){"ellipse", "filled", "#f2f2f2", "#8c8c8c"};
    case IR_OP_TUPLE:
    case IR_OP_GET_TUPLE_ELEMENT:
    case IR_OP_OPT_BARRIER: return (NodeStyle){"cylinder", "filled", "#e6e6e6", "#6b6b6b"};
    default: break;
  }
  if (ir_instr_is_fusion(i)) {
    switch (viz_kernel_kind(i)) {
      case VIZ_K_INPUT: return (NodeStyle){"box", "filled,bold", "#fdf0c8", "#b08a1e"};
      case VIZ_K_OUTPUT: return (NodeStyle){"box", "filled,bold", "#dcf2dc", "#3f8a3f"};
      case VIZ_K_LIBRARY: return (NodeStyle){"box3d", "filled,bold", "#ffd8a8", "#c05800"};
      default: return (NodeStyle){"box", "filled,bold", "#dce9f8", "#3d6fb0"};
    }
  }
  switch (ir_op_info(i->op)->category) {
    case IR_CAT_LIBRARY: return (NodeStyle){"box3d", "filled", "#ffd8a8", "#c05800"};
    case IR_CAT_CONTROL: return (NodeStyle){"doubleoctagon", "filled", "#e5d8f5", "#6a3d9a"};
    case IR_CAT_COLLECTIVE: return (NodeStyle){"hexagon", "filled", "#f6d5d5", "#a23b3b"};
    case IR_CAT_REDUCE: return (NodeStyle){"box", "rounded,filled", "#fff6d6", "#8c7426"};
    default: return (NodeStyle){"box", "rounded,filled", "#ffffff", "#5a5a5a"};
  }
}

static const char *fusion_kind_words(const IrInstr *f) {
  switch (viz_kernel_kind(f)) {
    case VIZ_K_INPUT: return "input fusion (reduction)";
    case VIZ_K_OUTPUT: return "output fusion";
    case VIZ_K_LIBRARY: return "library fusion";
    default: return "loop fusion";
  }
}

static int fused_ops(const IrInstr *f) {
  const IrComputation *c = ir_fused_computation(f);
  int n = 0;
  if (!c) return 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (viz_live(c->instrs[k]) && c->instrs[k]->op != IR_OP_PARAMETER) n++;
  return n;
}

/* The second line of a node: what it is. */
static void node_what(VizBuf *b, const IrInstr *i) {
  char lib[128];
  if (ir_instr_is_fusion(i)) {
    const char *k = ir_fusion_kind(i);
    vbuf_printf(b, "%s%s%s%s \xc2\xb7 %d ops", fusion_kind_words(i), k ? " (" : "", k ? k : "",
                k ? ")" : "", fused_ops(i));
    return;
  }
  switch (i->op) {
    case IR_OP_PARAMETER: vbuf_printf(b, "parameter %lld", (long long)i->param_number); return;
    case IR_OP_CONSTANT:
      if (i->literal && i->literal->text && strlen(i->literal->text) <= 16) {
        vbuf_puts(b, "constant ");
        vbuf_html(b, i->literal->text);
      } else {
        vbuf_puts(b, "constant");
      }
      return;
    case IR_OP_GET_TUPLE_ELEMENT: {
      int64_t idx = 0;
      vbuf_printf(b, "get-tuple-element %lld", ir_attr_int(i, "index", &idx) ? (long long)idx : 0LL);
      return;
    }
    case IR_OP_WHILE: {
      IrComputation *body = ir_attr_comp(i, "body");
      vbuf_puts(b, "while \xe2\x86\xbb body ");
      vbuf_html(b, body ? body->name : "?");
      return;
    }
    default: break;
  }
  if (ir_op_info(i->op)->category == IR_CAT_LIBRARY) {
    vbuf_puts(b, ir_op_name(i->op));
    vbuf_puts(b, " \xe2\x86\x92 ");
    vbuf_html(b, viz_library_name(i, lib, sizeof lib));
    return;
  }
  vbuf_puts(b, ir_op_name(i->op));
  if (i->op == IR_OP_COMPARE && ir_compare_direction(i)) {
    vbuf_puts(b, " ");
    vbuf_html(b, ir_compare_direction(i));
  }
}

static void node_label(VizBuf *b, const Node *n, bool plain) {
  const IrInstr *i = n->instr;
  char shape[96];
  viz_fmt_shape(&i->shape, shape, sizeof shape, plain ? 28 : 44);
  vbuf_html_between(b, "<<B>", i->name, "</B>");
  if (i->is_root && n->cluster < 0) vbuf_puts(b, " <FONT POINT-SIZE=\"8\" COLOR=\"#b03030\">ROOT</FONT>");
  vbuf_puts(b, "<BR/><FONT POINT-SIZE=\"9\">");
  node_what(b, i);
  vbuf_html_between(b, "</FONT><BR/><FONT POINT-SIZE=\"9\" COLOR=\"#444444\">", shape, "</FONT>");
  char loc[200];
  if (!plain && i->parent) {
    xla_source_short(i->parent->module, i, loc, sizeof loc);
    if (loc[0]) {
      vbuf_html_between(b, "<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#2a6a2a\">", loc, "</FONT>");
    }
  }
  if (n->hidden_in || n->hidden_out) {
    vbuf_puts(b, "<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#888888\"><I>");
    if (n->hidden_in) vbuf_printf(b, "+%d input%s", n->hidden_in, n->hidden_in == 1 ? "" : "s");
    if (n->hidden_in && n->hidden_out) vbuf_puts(b, ", ");
    if (n->hidden_out) vbuf_printf(b, "+%d user%s", n->hidden_out, n->hidden_out == 1 ? "" : "s");
    vbuf_puts(b, " not drawn</I></FONT>");
  }
  vbuf_puts(b, ">");
}

static void node_tooltip(VizBuf *b, const IrInstr *i) {
  char shape[160];
  viz_fmt_shape(&i->shape, shape, sizeof shape, 150);
  vbuf_printf(b, "%s = %s %s(", i->name, shape, ir_op_name(i->op));
  for (int k = 0; k < i->noperands && k < 8; k++) vbuf_printf(b, "%s%s", k ? ", " : "", i->operands[k]->name);
  if (i->noperands > 8) vbuf_printf(b, ", \xe2\x80\xa6 %d more", i->noperands - 8);
  vbuf_puts(b, ")");
  if (i->loc.file && i->loc.line > 0) vbuf_printf(b, "  at %s:%d:%d", i->loc.file, i->loc.line, i->loc.col);
  /* Where XLA says it came from in the user's program (metadata). */
  XlaSource src;
  char buf[1536];
  if (i->parent && xla_source_of(i->parent->module, i, &src, buf, sizeof buf)) {
    if (src.file) vbuf_printf(b, "  from %s:%d", src.file, src.line);
    if (src.op_name) vbuf_printf(b, "  (%s)", src.op_name);
  }
}

static void set(void *obj, const char *k, const char *v) { agsafeset(obj, (char *)k, (char *)v, ""); }

static void set_html(Agraph_t *root, void *obj, const char *k, const char *html) {
  /* html is "<...>": strip the outer brackets and mark it as an HTML-like label. */
  size_t n = strlen(html);
  char *inner = fx_malloc(n);
  if (!inner) return;
  memcpy(inner, html + 1, n - 2);
  inner[n - 2] = 0;
  char *h = agstrdup_html(root, inner);
  fx_free(inner);
  agsafeset(obj, (char *)k, h, "");
  agstrfree(root, h);
}

/* The node styles a legend can explain, each with its row. */
enum {
  LG_PLAIN, LG_REDUCE, LG_LOOP_FUSION, LG_INPUT_FUSION, LG_OUTPUT_FUSION, LG_LIBRARY, LG_CONTROL, LG_COLLECTIVE,
  LG_TUPLE, LG_PARAMETER, LG_CONSTANT, LG_COUNT
};

static int legend_kind(const IrInstr *i) {
  switch (i->op) {
    case IR_OP_PARAMETER: return LG_PARAMETER;
    case IR_OP_CONSTANT:
    case IR_OP_IOTA: return LG_CONSTANT;
    case IR_OP_TUPLE:
    case IR_OP_GET_TUPLE_ELEMENT:
    case IR_OP_OPT_BARRIER: return LG_TUPLE;
    default: break;
  }
  if (ir_instr_is_fusion(i)) {
    switch (viz_kernel_kind(i)) {
      case VIZ_K_INPUT: return LG_INPUT_FUSION;
      case VIZ_K_OUTPUT: return LG_OUTPUT_FUSION;
      case VIZ_K_LIBRARY: return LG_LIBRARY;
      default: return LG_LOOP_FUSION;
    }
  }
  switch (ir_op_info(i->op)->category) {
    case IR_CAT_LIBRARY: return LG_LIBRARY;
    case IR_CAT_CONTROL: return LG_CONTROL;
    case IR_CAT_COLLECTIVE: return LG_COLLECTIVE;
    case IR_CAT_REDUCE: return LG_REDUCE;
    default: return LG_PLAIN;
  }
}

/* The legend: a row for every node style and edge kind the picture uses (and only those), in
 * the colours node_style gives them. */
static void emit_legend(Agraph_t *g, const bool used[LG_COUNT], bool registers, bool refused) {
  static const struct {
    const char *fill, *sample, *words;
  } rows[LG_COUNT] = {
      [LG_PLAIN] = {"#ffffff", "add.1", "instruction: name, op, shape"},
      [LG_REDUCE] = {"#fff6d6", "reduce.1", "a reduction"},
      [LG_LOOP_FUSION] = {"#dce9f8", "fusion.1", "loop fusion: one kernel (its members inside)"},
      [LG_INPUT_FUSION] = {"#fdf0c8", "fusion.2", "input fusion: one kernel around a reduction"},
      [LG_OUTPUT_FUSION] = {"#dcf2dc", "fusion.3", "output fusion: one kernel after a library call"},
      [LG_LIBRARY] = {"#ffd8a8", "dot.1", "library call (cuBLAS, cuDNN, cuRAND, custom call)"},
      [LG_CONTROL] = {"#e5d8f5", "while.1", "loop control, run by the host"},
      [LG_COLLECTIVE] = {"#f6d5d5", "all-reduce.1", "collective communication"},
      [LG_TUPLE] = {"#e6e6e6", "tuple.1", "tuple: a place in memory, no kernel"},
      [LG_PARAMETER] = {"#e3f1df", "p", "parameter"},
      [LG_CONSTANT] = {"#f2f2f2", "constant.1", "constant or iota: no kernel of its own"},
  };
  VizBuf b = {0};
  vbuf_puts(&b, "<<TABLE BORDER=\"1\" COLOR=\"#aaaaaa\" CELLBORDER=\"0\" CELLSPACING=\"2\" CELLPADDING=\"3\">"
                "<TR><TD COLSPAN=\"2\"><B>legend</B></TD></TR>");
  for (int k = 0; k < LG_COUNT; k++)
    if (used[k])
      /* The trailing spaces leave room for a browser's font, wider than Graphviz's estimate. */
      vbuf_printf(&b, "<TR><TD BGCOLOR=\"%s\" BORDER=\"1\">%s</TD><TD ALIGN=\"LEFT\">%s    </TD></TR>", rows[k].fill,
                  rows[k].sample, rows[k].words);
  vbuf_puts(&b, "<TR><TD><FONT COLOR=\"#1f3f77\"><B>\xe2\x94\x81\xe2\x94\x81\xe2\x94\x81\xe2\x96\xb6</B></FONT></TD>"
                "<TD ALIGN=\"LEFT\">value written to memory (crosses a kernel boundary)    </TD></TR>");
  if (registers)
    vbuf_puts(&b, "<TR><TD><FONT COLOR=\"#6f97c9\">\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x96\xb7</FONT></TD>"
                  "<TD ALIGN=\"LEFT\">value kept in registers inside a fusion    </TD></TR>");
  if (refused)
    vbuf_puts(&b, "<TR><TD><FONT COLOR=\"#d62728\">\xe2\x95\x8c\xe2\x95\x8c\xe2\x95\x8c\xe2\x96\xb7</FONT></TD>"
                  "<TD ALIGN=\"LEFT\">refused fusion candidate: reason code    </TD></TR>");
  vbuf_puts(&b, "</TABLE>>");
  if (!b.failed) {
    Agnode_t *n = agnode(g, "__legend", 1);
    set(n, "shape", "plaintext");
    set(n, "style", "");
    set(n, "tooltip", "legend");
    set_html(g, n, "label", vbuf_str(&b));
  }
  vbuf_free(&b);
}

/* Is node v inside cluster c (directly or in a cluster nested in it)? */
static bool in_cluster(const Model *md, int v, int c) {
  for (int k = md->nodes[v].cluster, guard = 0; k >= 0 && guard < 64; k = md->clusters[k].parent, guard++)
    if (k == c) return true;
  return false;
}

static void edge_label(VizBuf *b, const Edge *e, bool plain) {
  char shape[96], bytes[32];
  if (e->kind == E_REFUSED || e->kind == E_DECISION) {
    vbuf_puts(b, e->d->reason ? e->d->reason : (e->d->accepted ? "accepted" : "refused"));
    return;
  }
  if (plain) return;
  viz_fmt_shape(e->shape, shape, sizeof shape, 30);
  if (e->kind == E_REGISTER) {
    vbuf_puts(b, shape);
    return;
  }
  viz_fmt_bytes(ir_shape_bytes(e->shape), bytes, sizeof bytes);
  vbuf_printf(b, "%s\n%s", shape, bytes);
}

static void emit_title(Agraph_t *g, const VizOptions *o, const VizGraphStats *st) {
  VizBuf b = {0};
  const PassDecision *d = o->decision;
  if (d) {
    vbuf_puts(&b, "<<FONT POINT-SIZE=\"14\"><B>decision #");
    vbuf_printf(&b, "%d</B> \xc2\xb7 stage %d \xc2\xb7 ", o->decision_number, d->stage);
    vbuf_html(&b, d->pass ? d->pass : "?");
    vbuf_puts(&b, " \xc2\xb7 ");
    vbuf_html(&b, d->action ? d->action : "?");
    vbuf_puts(&b, "</FONT><BR/><FONT POINT-SIZE=\"13\">");
    vbuf_html(&b, d->producer ? d->producer : "?");
    vbuf_puts(&b, " \xe2\x86\x92 ");
    vbuf_html(&b, d->consumer ? d->consumer : "?");
    vbuf_printf(&b, ": <FONT COLOR=\"%s\"><B>%s</B></FONT>", d->accepted ? "#2a7a2a" : "#d62728",
                d->accepted ? "accepted" : "rejected");
    if (d->reason) {
      vbuf_puts(&b, " (");
      vbuf_html(&b, d->reason);
      vbuf_puts(&b, ")");
    }
    vbuf_puts(&b, "</FONT>");
    if (d->detail && *d->detail) {
      vbuf_puts(&b, "<BR/>");
      vbuf_html(&b, d->detail);
    }
    if (d->nmetrics > 0) {
      vbuf_puts(&b, "<BR/><FONT COLOR=\"#444444\">");
      for (int k = 0; k < d->nmetrics; k++) {
        vbuf_printf(&b, "%s", k ? ", " : "");
        vbuf_html(&b, d->metrics[k].key ? d->metrics[k].key : "?");
        vbuf_printf(&b, " = %g", d->metrics[k].value);
      }
      vbuf_puts(&b, "</FONT>");
    }
    if (d->suggestion && *d->suggestion) {
      vbuf_puts(&b, "<BR/><I>suggestion: ");
      vbuf_html(&b, d->suggestion);
      vbuf_puts(&b, "</I>");
    }
    vbuf_puts(&b, ">");
  } else if (o->title) {
    vbuf_puts(&b, "<<FONT POINT-SIZE=\"14\">");
    vbuf_html(&b, o->title);
    vbuf_puts(&b, "</FONT>");
    if (st->layout_chosen) {
      /* The picture says how it was drawn, as the shell does. */
      vbuf_puts(&b, "<BR/><FONT POINT-SIZE=\"11\" COLOR=\"#555555\">laid out with sfdp (Graphviz's large-graph layout): ");
      vbuf_html(&b, st->layout_reason);
      if (st->unconnected) vbuf_printf(&b, "; %d nodes without edges left out", st->unconnected);
      vbuf_puts(&b, "</FONT>");
    }
    vbuf_puts(&b, ">");
  }
  if (b.len && !b.failed) {
    set_html(g, g, "label", vbuf_str(&b));
    set(g, "labelloc", "t");
    set(g, "labeljust", "l");
  }
  vbuf_free(&b);
}

static Agraph_t *cluster_graph(Model *md, Agraph_t *root, int c) {
  Cluster *cl = &md->clusters[c];
  if (cl->ag) return cl->ag;
  Agraph_t *parent = cl->parent >= 0 ? cluster_graph(md, root, cl->parent) : root;
  char name[300];
  snprintf(name, sizeof name, "cluster_%s", cl->fusion->name);
  cl->ag = agsubg(parent, name, 1);
  NodeStyle st = node_style(cl->fusion);
  VizBuf b = {0};
  vbuf_puts(&b, "<<B>");
  vbuf_html(&b, cl->fusion->name);
  vbuf_puts(&b, "</B> \xc2\xb7 ");
  node_what(&b, cl->fusion);
  vbuf_puts(&b, ">");
  set(cl->ag, "style", "rounded,filled");
  set(cl->ag, "fillcolor", st.fill);
  set(cl->ag, "color", st.color);
  set(cl->ag, "penwidth", "1.6");
  set(cl->ag, "labeljust", "l");
  set(cl->ag, "fontsize", "11");
  if (!b.failed) set_html(root, cl->ag, "label", vbuf_str(&b));
  vbuf_free(&b);
  return cl->ag;
}

/* Whether the values flow from node u to node v along drawn value edges (a refused candidate that
 * follows the data: a producer and a consumer that reads it, perhaps through tuples and bitcasts).
 * first/adj: the value edges by tail (CSR). Searches at most 512 nodes. */
static bool flows(const Model *md, const int *first, const int *adj, int u, int v) {
  int queue[512], n = 0;
  queue[n++] = u;
  for (int k = 0; k < n; k++)
    for (int j = first[queue[k]]; j < first[queue[k] + 1]; j++) {
      int w = adj[j];
      if (w == v) return true;
      bool seen = false;
      for (int q = 0; q < n && !seen; q++) seen = queue[q] == w;
      if (!seen && n < (int)(sizeof queue / sizeof queue[0])) queue[n++] = w;
    }
  (void)md;
  return false;
}

/* The value edges (memory and register) by tail: first[v]..first[v+1] index adj. NULL when out of
 * memory (the caller then leaves every candidate unconstrained). */
static int *value_adjacency(const Model *md, int **adj_out) {
  int *first = fx_calloc((size_t)md->nnodes + 2, sizeof *first);
  int *adj = fx_malloc(sizeof *adj * ((size_t)md->nedges + 1));
  if (!first || !adj) {
    fx_free(first);
    fx_free(adj);
    return NULL;
  }
  for (int e = 0; e < md->nedges; e++)
    if (md->edges[e].kind == E_MEMORY || md->edges[e].kind == E_REGISTER) first[md->edges[e].from + 1]++;
  for (int v = 0; v < md->nnodes; v++) first[v + 1] += first[v];
  int *fill = fx_calloc((size_t)md->nnodes + 1, sizeof *fill);
  if (!fill) {
    fx_free(first);
    fx_free(adj);
    return NULL;
  }
  for (int e = 0; e < md->nedges; e++) {
    const Edge *ed = &md->edges[e];
    if (ed->kind == E_MEMORY || ed->kind == E_REGISTER) adj[first[ed->from] + fill[ed->from]++] = ed->to;
  }
  fx_free(fill);
  *adj_out = adj;
  return first;
}

/* Marks the candidates dot ranks like the value beside them: those the data follows (the consumer
 * reads the producer, perhaps through others), so that dot routes them as one, through the gaps
 * between the ranks and around the fusion boxes that hold neither end (unconstrained, a candidate's
 * spline cut through them). Siblings and other pairs the data does not join stay out of the
 * ranking; so does every candidate of a plain picture (emit). False when out of memory. */
static bool mark_constrained(Model *md) {
  int *adj = NULL, *first = value_adjacency(md, &adj);
  if (!first) return false;
  for (int e = 0; e < md->nedges; e++) {
    Edge *ed = &md->edges[e];
    if ((ed->kind == E_REFUSED || ed->kind == E_DECISION) && node_kept(md, ed->from) && node_kept(md, ed->to))
      ed->constrained = flows(md, first, adj, ed->from, ed->to);
  }
  fx_free(first);
  fx_free(adj);
  return true;
}

static bool emit(Model *md, VizGraph *vg, bool plain) {
  const VizOptions *o = md->o;
  Agraph_t *g = viz_agopen(md->m->name ? md->m->name : "stage");
  if (!g) return false;
  vg->g = g;
  agattr(g, AGRAPH, "fontname", "Helvetica,Arial,sans-serif");
  agattr(g, AGRAPH, "rankdir", "TB");
  agattr(g, AGRAPH, "nodesep", "0.25");
  agattr(g, AGRAPH, "ranksep", "0.4");
  agattr(g, AGRAPH, "newrank", "true");
  agattr(g, AGRAPH, "compound", "true");
  agattr(g, AGRAPH, "bgcolor", "white");
  agattr(g, AGRAPH, "label", "");
  agattr(g, AGNODE, "fontname", "Helvetica,Arial,sans-serif");
  agattr(g, AGNODE, "fontsize", "10");
  agattr(g, AGNODE, "shape", "box");
  agattr(g, AGNODE, "style", "rounded,filled");
  agattr(g, AGNODE, "fillcolor", "white");
  agattr(g, AGNODE, "color", "#5a5a5a");
  agattr(g, AGNODE, "penwidth", "1");
  agattr(g, AGNODE, "margin", "0.08,0.03");
  agattr(g, AGNODE, "height", "0.3");
  agattr(g, AGNODE, "tooltip", "");
  agattr(g, AGEDGE, "fontname", "Helvetica,Arial,sans-serif");
  agattr(g, AGEDGE, "fontsize", "8");
  agattr(g, AGEDGE, "arrowsize", "0.6");
  agattr(g, AGEDGE, "color", "#1f3f77");
  agattr(g, AGEDGE, "fontcolor", "#1f3f77");
  agattr(g, AGEDGE, "penwidth", "1.8");
  agattr(g, AGEDGE, "style", "solid");
  agattr(g, AGEDGE, "label", "");
  agattr(g, AGEDGE, "constraint", "true");
  if (plain || vg->stats.quick) {
    /* dot's time goes to crossing minimisation and to network simplex placing nodes across each
     * rank; few iterations of each keep a few thousand nodes to seconds (measured in bench/). */
    set(g, "splines", "line");
    set(g, "nslimit", "0.05");
    set(g, "nslimit1", "0.5");
    set(g, "mclimit", "0.05");
    set(g, "searchsize", "10");
    set(g, "remincross", "false");
  }
  if (vg->stats.xlabels && !vg->stats.quick && vg->stats.layout == VIZ_LAYOUT_DOT) {
    /* Network simplex places the nodes across each rank; it walks every virtual node at every
     * step and may take thousands of steps, so it gets as many as fit in about
     * VIZ_NS_BUDGET node visits (nslimit counts steps per node of the graph): a layout close
     * to its best in a fraction of a second. */
    char lim[32];
    int drawn = 0;
    for (int v = 0; v < md->nnodes; v++) drawn += node_drawn(md, v);
    double steps = (double)VIZ_NS_BUDGET / (double)(vg->stats.dot_work > 1 ? vg->stats.dot_work : 1);
    double per_node = steps / (double)(drawn > 1 ? drawn : 1);
    snprintf(lim, sizeof lim, "%.2f", per_node < 0.05 ? 0.05 : per_node > 10 ? 10 : per_node);
    set(g, "nslimit", lim);
  }
  if (vg->stats.layout == VIZ_LAYOUT_SFDP) {
    /* sfdp: components packed in a grid (its default, polyomino packing, takes seconds for the
     * hundreds of small components of a large stage), the fast quadtree and fewer iterations
     * (a 10,000-node computation in about 2 s instead of 7; measured in bench/), straight edges
     * drawn under the nodes. sfdp draws no cluster boxes: a fusion's members are told by their
     * register edges (thin, light). */
    set(g, "layout", "sfdp"); /* the DOT text says it too: `dot -Tsvg` then uses sfdp */
    set(g, "packmode", "array");
    set(g, "quadtree", "fast");
    set(g, "maxiter", "100");
    set(g, "splines", "line");
    set(g, "outputorder", "edgesfirst");
  }
  emit_title(g, o, &vg->stats);

  VizBuf b = {0};
  for (int v = 0; v < md->nnodes; v++) {
    Node *n = &md->nodes[v];
    if (!node_drawn(md, v)) continue;
    Agnode_t *an = agnode(g, (char *)n->instr->name, 1);
    if (!an) return false;
    n->ag = an;
    if (n->cluster >= 0) agsubnode(cluster_graph(md, g, n->cluster), an, 1);
    NodeStyle st = node_style(n->instr);
    set(an, "shape", st.shape);
    set(an, "style", st.style);
    set(an, "fillcolor", st.fill);
    set(an, "color", st.color);
    vbuf_reset(&b);
    node_label(&b, n, plain);
    if (!b.failed) set_html(g, an, "label", vbuf_str(&b));
    vbuf_reset(&b);
    node_tooltip(&b, n->instr);
    if (!b.failed) set(an, "tooltip", vbuf_str(&b));
    if (o->decision && (strcmp(n->instr->name, o->decision->producer ? o->decision->producer : "") == 0 ||
                        strcmp(n->instr->name, o->decision->consumer ? o->decision->consumer : "") == 0)) {
      set(an, "penwidth", "3");
      set(an, "color", o->decision->accepted ? "#2a7a2a" : "#d62728");
    }
    vg->stats.nodes++;
  }
  for (int c = 0; c < md->nclusters; c++)
    if (md->clusters[c].ag) vg->stats.clusters++;
  for (int e = 0; e < md->nedges; e++) {
    Edge *ed = &md->edges[e];
    if (!node_drawn(md, ed->from) || !node_drawn(md, ed->to)) continue;
    if (ed->kind == E_REFUSED && plain && vg->stats.refused_edges >= MAX_REFUSED_PLAIN) {
      vg->stats.refused_hidden++;
      continue;
    }
    Agedge_t *ae = agedge(g, md->nodes[ed->from].ag, md->nodes[ed->to].ag, NULL, 1);
    if (!ae) {
      b.failed = true;
      break;
    }
    vbuf_reset(&b);
    edge_label(&b, ed, plain);
    /* Beside the edge (xlabel) the label takes no rank of its own: dot places it after the layout. */
    const char *label_attr = vg->stats.xlabels ? "xlabel" : "label";
    if (b.len && !b.failed) set(ae, label_attr, vbuf_str(&b));
    switch (ed->kind) {
      case E_MEMORY: vg->stats.memory_edges++; break;
      case E_REGISTER:
        set(ae, "color", "#6f97c9");
        set(ae, "fontcolor", "#6f97c9");
        set(ae, "penwidth", "0.9");
        set(ae, "arrowhead", "empty");
        vg->stats.register_edges++;
        break;
      case E_REFUSED:
      case E_DECISION: {
        bool acc = ed->d->accepted;
        set(ae, "color", acc ? "#2a7a2a" : "#d62728");
        set(ae, "fontcolor", acc ? "#2a7a2a" : "#d62728");
        set(ae, "style", acc ? "bold" : "dashed");
        set(ae, "penwidth", ed->kind == E_DECISION ? "2.5" : "1.5");
        /* Ranked like the value beside it when the data follows it (mark_constrained); never in a
         * plain picture, whose layout work counts values only. */
        if (plain || !ed->constrained) set(ae, "constraint", "false");
        set(ae, "arrowhead", "empty");
        /* Clip to a fusion's box only when the other end is outside it: an edge clipped to a box
         * holding both of its ends vanishes and leaves its label alone inside the box. */
        bool tail_ok = ed->tail_cluster >= 0 && md->clusters[ed->tail_cluster].ag &&
                       !in_cluster(md, ed->to, ed->tail_cluster);
        bool head_ok = ed->head_cluster >= 0 && md->clusters[ed->head_cluster].ag &&
                       !in_cluster(md, ed->from, ed->head_cluster);
        if (tail_ok) set(ae, "ltail", agnameof(md->clusters[ed->tail_cluster].ag));
        if (head_ok) set(ae, "lhead", agnameof(md->clusters[ed->head_cluster].ag));
        /* dot places a label at the middle of the unclipped edge, which may lie inside the box it
         * was clipped to: put the reason at the end that stays outside instead. */
        if ((tail_ok || head_ok) && b.len && !b.failed) {
          set(ae, label_attr, "");
          set(ae, head_ok ? "taillabel" : "headlabel", vbuf_str(&b));
          set(ae, "labeldistance", "2.5");
        }
        if (ed->kind == E_REFUSED) {
          vbuf_reset(&b);
          vbuf_printf(&b, "refused by %s: %s", ed->d->pass ? ed->d->pass : "?",
                      ed->d->detail ? ed->d->detail : (ed->d->reason ? ed->d->reason : ""));
          if (!b.failed) set(ae, "tooltip", vbuf_str(&b));
          vg->stats.refused_edges++;
        }
        break;
      }
    }
  }
  bool failed = b.failed;
  vbuf_free(&b);
  if (o->legend) {
    bool used[LG_COUNT] = {0};
    for (int v = 0; v < md->nnodes; v++)
      if (node_drawn(md, v)) used[legend_kind(md->nodes[v].instr)] = true;
    for (int c = 0; c < md->nclusters; c++)
      if (md->clusters[c].ag) used[legend_kind(md->clusters[c].fusion)] = true;
    emit_legend(g, used, vg->stats.register_edges > 0, vg->stats.refused_edges > 0 || o->decision);
  }
  return !failed;
}

bool viz_layout_lookup(const char *name, VizLayout *out) {
  static const char *const names[] = {"auto", "dot", "sfdp"};
  for (int k = 0; k < 3; k++)
    if (strcmp(name, names[k]) == 0) {
      *out = (VizLayout)k;
      return true;
    }
  return false;
}

const char *viz_layout_name(VizLayout l) { return l == VIZ_LAYOUT_SFDP ? "sfdp" : l == VIZ_LAYOUT_DOT ? "dot" : "auto"; }

void viz_options_default(VizOptions *o) {
  *o = (VizOptions){0};
  o->depth = 2;
  o->legend = true;
}

static const IrComputation *find_comp(const IrModule *m, const char *name) {
  if (!name) return m->entry;
  return ir_module_find_computation(m, name);
}

VizGraph *viz_graph_build(const IrModule *m, const VizOptions *o, FxError *err) {
  const IrComputation *c = find_comp(m, o->computation);
  if (!c) {
    if (o->computation)
      fx_error_set(err, NULL, 0, 0, "no computation named '%s' in module %s", o->computation,
                   m->name ? m->name : "?");
    else
      fx_error_set(err, NULL, 0, 0, "module %s has no entry computation", m->name ? m->name : "?");
    return NULL;
  }
  Model md = {.m = m, .o = o, .err = err};
  VizGraph *vg = NULL;
  int *many = NULL, nmany = 0; /* declared before the first goto: the cleanup frees it */
  int maxc = 0;
  for (int k = 0; k < m->ncomps; k++)
    if (m->comps[k]->id + 1 > maxc) maxc = m->comps[k]->id + 1;
  md.nmap = m->next_id + 1;
  md.map = fx_malloc(sizeof(int) * (size_t)md.nmap);
  md.nexpanded = maxc;
  md.expanded = fx_calloc((size_t)maxc + 1, sizeof(bool));
  if (!md.map || !md.expanded) goto oom;
  for (int k = 0; k < md.nmap; k++) md.map[k] = -1;
  if (c->id >= 0 && c->id < maxc) md.expanded[c->id] = c->fusion_instr != NULL;
  /* A big computation drawn collapsed keeps only its kernels (and its root): the plumbing
   * between them (tuples, get-tuple-element, bitcasts) is contracted into the edges, and
   * parameters and constants are left out, so that a stage of thousands of instructions lays out
   * in seconds. */
  md.contract = o->collapse && !o->focus && !o->decision && c->ninstrs > (o->plain_above > 0 ? o->plain_above : 600);
  if (!add_comp(&md, c, -1, 0) || !add_value_edges(&md)) goto oom;

  int depth = o->depth > 0 ? o->depth : 2;
  int seeds[2], nseeds = 0;
  if (o->decision) {
    const char *names[2] = {o->decision->producer, o->decision->consumer};
    for (int k = 0; k < 2; k++) {
      if (!names[k]) continue;
      /* A group consumer ("a,b,c"): its first member stands for it. */
      char first[256];
      snprintf(first, sizeof first, "%s", names[k]);
      char *comma = strchr(first, ',');
      if (comma) *comma = 0;
      int v = node_of_name(&md, first);
      if (v < 0) {
        fx_error_set(err, NULL, 0, 0, "decision #%d names '%s', which is not in computation %s of this stage",
                     o->decision_number, first, c->name);
        goto fail;
      }
      seeds[nseeds++] = v;
    }
    if (nseeds == 2 && seeds[0] != seeds[1]) {
      int e = add_edge(&md, seeds[0], seeds[1], E_DECISION, NULL, o->decision);
      if (e < 0) goto oom;
      md.edges[e].tail_cluster = cluster_of_name(&md, names[0]);
      md.edges[e].head_cluster = cluster_of_name(&md, names[1]);
    }
    if (o->depth <= 0) depth = 1;
  } else if (o->focus) {
    const IrInstr *fi = ir_module_find_instr(m, o->focus);
    if (fi && ir_instr_is_fusion(fi) && !o->collapse) {
      /* Focus on a fusion drawn as a cluster: all of its members are seeds. */
      for (int cl = 0; cl < md.nclusters; cl++) {
        if (md.clusters[cl].fusion != fi) continue;
        many = fx_malloc(sizeof(int) * (size_t)(md.nnodes + 1));
        if (!many) goto oom;
        for (int v = 0; v < md.nnodes; v++) {
          int x = md.nodes[v].cluster;
          while (x >= 0 && x != cl) x = md.clusters[x].parent;
          if (x == cl) many[nmany++] = v;
        }
      }
    }
    if (!nmany) {
      int v = node_of_name(&md, o->focus);
      if (v < 0) {
        fx_error_set(err, NULL, 0, 0, "no instruction named '%s' in computation %s", o->focus, c->name);
        goto fail;
      }
      seeds[nseeds++] = v;
    }
  }
  if (!o->decision && !add_refused_edges(&md)) goto oom;
  int total = md.nnodes;
  if (md.contract) {
    total = 0;
    for (int k = 0; k < c->ninstrs; k++) total += viz_live(c->instrs[k]);
  }
  if (nseeds || nmany) {
    if (!focus(&md, nmany ? many : seeds, nmany ? nmany : nseeds, depth)) goto oom;
  } else {
    for (int v = 0; v < md.nnodes; v++) md.nodes[v].dist = 0;
  }
  fx_free(many);
  many = NULL;
  vg = fx_calloc(1, sizeof *vg);
  if (!vg) goto oom;
  int kept = 0;
  for (int v = 0; v < md.nnodes; v++) kept += node_kept(&md, v);
  int plain_above = o->plain_above > 0 ? o->plain_above : 600;
  int value_edges = 0;
  for (int e = 0; e < md.nedges; e++)
    if (md.edges[e].kind != E_REFUSED && node_kept(&md, md.edges[e].from) && node_kept(&md, md.edges[e].to)) value_edges++;
  vg->stats.plain = kept > plain_above || value_edges > 2 * plain_above || md.contract;
  vg->stats.total = total;
  if (!mark_constrained(&md) || !choose_layout(&md, &vg->stats, kept)) goto oom;
  vg->stats.hidden = total - kept + vg->stats.unconnected;
  if (!emit(&md, vg, vg->stats.plain)) goto oom;
  fx_free(md.map);
  fx_free(md.expanded);
  fx_free(md.nodes);
  fx_free(md.clusters);
  fx_free(md.edges);
  return vg;
oom:
  fx_error_set(err, NULL, 0, 0, "out of memory while building the picture");
fail:
  fx_free(many);
  viz_graph_free(vg);
  fx_free(md.map);
  fx_free(md.expanded);
  fx_free(md.nodes);
  fx_free(md.clusters);
  fx_free(md.edges);
  return NULL;
}

void viz_graph_free(VizGraph *g) {
  if (!g) return;
  if (g->g) agclose(g->g);
  fx_free(g);
}

const VizGraphStats *viz_graph_stats(const VizGraph *g) { return &g->stats; }

/* scope.c — a stage drawn by JAX name scope (`render --group scope`): one node per scope
 * (jit(step)/attention), holding the instructions and kernels XLA's metadata puts there, and one
 * edge per pair of scopes a value flows between (how many values, how many bytes). Scopes nest:
 * each scope sits in a box of its parent scope. --depth D keeps the first D levels of the path, so
 * a module of 19,000 instructions is drawn whole as a few dozen boxes and opened level by level,
 * as Model Explorer does.
 *
 * Where an instruction's scope comes from: its metadata op_name without the last part (the op's
 * own name, e.g. dot_general); the entry's top-level instructions are drawn, a fusion counting the
 * instructions of its body. Parameters, constants and other instructions without operands or
 * metadata go to "(inputs)", the rest without metadata to "(no scope)". */
#include <stdio.h>
#include <string.h>

#include "../explain/xla_dump.h"
#include "viz_internal.h"

typedef struct {
  char key[256];
  int instrs, kernels;
  int inputs;          /* values it reads from "(inputs)" (parameters, constants) */
  int64_t input_bytes;
} Scope;

typedef struct {
  int from, to;
  int values;
  int64_t bytes;
} ScopeEdge;

static void scope_key(const IrModule *m, const IrInstr *i, int depth, char *out, size_t n) {
  XlaSource src;
  char buf[1536];
  /* Parameters and constants are the scopes' inputs (JAX names each parameter by its argument,
   * which would make one scope per weight). */
  if (i->op == IR_OP_PARAMETER || i->op == IR_OP_CONSTANT) {
    snprintf(out, n, "(inputs)");
    return;
  }
  if (!xla_source_of(m, i, &src, buf, sizeof buf) || !src.op_name || !src.op_name[0]) {
    snprintf(out, n, "%s", i->noperands == 0 ? "(inputs)" : "(no scope)");
    return;
  }
  snprintf(out, n, "%s", src.op_name);
  char *last = strrchr(out, '/');
  if (last) *last = 0; /* the op's own name */
  if (depth > 0) {
    int level = 0;
    for (char *p = out; *p; p++)
      if (*p == '/' && ++level == depth) {
        *p = 0;
        break;
      }
  }
}

static int body_count(const IrInstr *i) {
  const IrComputation *c = ir_instr_is_fusion(i) ? ir_fused_computation(i) : NULL;
  if (!c) return 1;
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op != IR_OP_PARAMETER) n += body_count(c->instrs[k]);
  return n;
}

static bool is_kernel(const IrInstr *i) {
  switch (i->op) {
  case IR_OP_PARAMETER: case IR_OP_CONSTANT: case IR_OP_GET_TUPLE_ELEMENT: case IR_OP_TUPLE: case IR_OP_BITCAST:
    return false;
  default: return true;
  }
}

static void set(void *obj, const char *k, const char *v) { agsafeset(obj, (char *)k, (char *)v, ""); }

static void set_html(Agraph_t *root, void *obj, const char *k, const char *html) {
  char *h = agstrdup_html(root, (char *)html);
  agsafeset(obj, (char *)k, h, "");
  agstrfree(root, h);
}

/* The box of scope `path` (its parents' boxes around it); the root for "". */
static Agraph_t *scope_box(Agraph_t *root, const char *path, VizBuf *b) {
  if (!path[0]) return root;
  char parent[256];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = 0;
  else parent[0] = 0;
  Agraph_t *up = scope_box(root, parent, b);
  char cname[300];
  snprintf(cname, sizeof cname, "cluster_%s", path);
  Agraph_t *box = agsubg(up, cname, 0);
  if (box) return box;
  box = agsubg(up, cname, 1);
  if (!box) return up;
  vbuf_reset(b);
  vbuf_html_between(b, "<B>", slash ? path + (slash - parent) + 1 : path, "</B>");
  set_html(root, box, "label", vbuf_str(b));
  set(box, "style", "rounded");
  set(box, "color", "#7a8fa8");
  return box;
}

VizGraph *viz_scope_graph_build(const IrModule *m, int depth, const char *title, FxError *err) {
  const IrComputation *c = m->entry;
  if (!c) {
    fx_error_set(err, NULL, 0, 0, "the module has no entry computation");
    return NULL;
  }
  Scope *sc = fx_calloc((size_t)c->ninstrs + 1, sizeof *sc);
  int *of = fx_calloc((size_t)c->ninstrs + 1, sizeof *of);
  ScopeEdge *ed = NULL;
  int nsc = 0, ned = 0, edcap = 0;
  VizGraph *vg = fx_calloc(1, sizeof *vg);
  bool ok = sc && of && vg;
  for (int k = 0; ok && k < c->ninstrs; k++) {
    IrInstr *i = c->instrs[k];
    i->aux = NULL;
    if (i->dead) continue;
    char key[256];
    scope_key(m, i, depth, key, sizeof key);
    int s = 0;
    while (s < nsc && strcmp(sc[s].key, key) != 0) s++;
    if (s == nsc) snprintf(sc[nsc++].key, sizeof sc[0].key, "%s", key);
    sc[s].instrs += body_count(i);
    sc[s].kernels += is_kernel(i);
    of[k] = s;
    i->aux = &of[k];
  }
  for (int k = 0; ok && k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    if (i->dead) continue;
    for (int j = 0; j < i->noperands; j++) {
      const int *from = i->operands[j]->aux;
      if (!from || *from == of[k]) continue;
      /* Inputs feed nearly every scope: counted in the reader's label, not drawn (hundreds of
       * edges from one node make dot take minutes). */
      if (strcmp(sc[*from].key, "(inputs)") == 0) {
        sc[of[k]].inputs++;
        sc[of[k]].input_bytes += ir_shape_bytes(&i->operands[j]->shape);
        continue;
      }
      int e = 0;
      while (e < ned && !(ed[e].from == *from && ed[e].to == of[k])) e++;
      if (e == ned) {
        if (ned == edcap) {
          int nc = edcap ? edcap * 2 : 32;
          ScopeEdge *g = fx_realloc(ed, sizeof *g * (size_t)nc);
          if (!g) {
            ok = false;
            break;
          }
          ed = g;
          edcap = nc;
        }
        ed[ned++] = (ScopeEdge){*from, of[k], 0, 0};
      }
      ed[e].values++;
      ed[e].bytes += ir_shape_bytes(&i->operands[j]->shape);
    }
  }
  for (int k = 0; k < c->ninstrs; k++) c->instrs[k]->aux = NULL;
  Agraph_t *g = ok ? viz_agopen(m->name ? m->name : "stage") : NULL;
  if (g) {
    vg->g = g;
    agattr(g, AGRAPH, "fontname", "Helvetica,Arial,sans-serif");
    agattr(g, AGRAPH, "rankdir", "TB");
    /* Curved edges through many nested boxes trip dot's spline router ("unable to reclaim box
     * space", then a crash while freeing the layout): larger pictures get straight edges. */
    if (nsc > 40) agattr(g, AGRAPH, "splines", "line");
    /* Nested boxes for up to 80 scopes; more (a whole large model at full depth) are drawn as flat
     * nodes with the full path: Graphviz 2.43's dot crashes freeing the layout of hundreds of
     * nested clusters. Use --depth to see the nesting of a large model. */
    bool boxes = nsc <= 80;
    agattr(g, AGRAPH, "label", "");
    agattr(g, AGNODE, "shape", "box");
    agattr(g, AGNODE, "style", "rounded,filled");
    agattr(g, AGNODE, "fillcolor", "#eef4fb");
    agattr(g, AGNODE, "fontname", "Helvetica,Arial,sans-serif");
    agattr(g, AGNODE, "label", "");
    agattr(g, AGNODE, "tooltip", "");
    agattr(g, AGEDGE, "label", "");
    agattr(g, AGEDGE, "fontsize", "9");
    if (title) {
      set(g, "label", (char *)title);
      set(g, "labelloc", "t");
    }
    VizBuf b = {0};
    Agnode_t **nodes = fx_calloc((size_t)nsc + 1, sizeof *nodes);
    ok = nodes != NULL;
    for (int s = 0; ok && s < nsc; s++) {
      /* The box of the parent scope ("jit(f)/layer" sits in "jit(f)"); a scope that has scopes
       * inside it sits in its own box, beside them. */
      size_t kl = strlen(sc[s].key);
      bool has_children = false;
      for (int t = 0; t < nsc && !has_children; t++)
        has_children = t != s && strncmp(sc[t].key, sc[s].key, kl) == 0 && sc[t].key[kl] == '/';
      char path[256];
      snprintf(path, sizeof path, "%s", sc[s].key);
      char *slash = strrchr(path, '/');
      const char *leaf = slash ? sc[s].key + (slash - path) + 1 : sc[s].key;
      if (!boxes) leaf = sc[s].key;
      else if (has_children) leaf = "(its own ops)";
      else if (slash) *slash = 0;
      else path[0] = 0;
      Agraph_t *parent = boxes ? scope_box(g, path, &b) : g;
      nodes[s] = agnode(parent, sc[s].key, 1);
      vbuf_reset(&b);
      vbuf_puts(&b, "<B>");
      vbuf_html(&b, leaf);
      vbuf_printf(&b, "</B><BR/><FONT POINT-SIZE=\"9\">%d instruction%s, %d kernel%s</FONT>", sc[s].instrs,
                  sc[s].instrs == 1 ? "" : "s", sc[s].kernels, sc[s].kernels == 1 ? "" : "s");
      if (sc[s].inputs) {
        char by[32];
        viz_fmt_bytes(sc[s].input_bytes, by, sizeof by);
        vbuf_printf(&b, "<BR/><FONT POINT-SIZE=\"8\" COLOR=\"#666666\">reads %d input%s, %s</FONT>", sc[s].inputs,
                    sc[s].inputs == 1 ? "" : "s", by);
      }
      set_html(g, nodes[s], "label", vbuf_str(&b));
      set(nodes[s], "tooltip", sc[s].key);
    }
    for (int e = 0; ok && e < ned; e++) {
      Agedge_t *ae = agedge(g, nodes[ed[e].from], nodes[ed[e].to], NULL, 1);
      char by[32], lab[80];
      viz_fmt_bytes(ed[e].bytes, by, sizeof by);
      snprintf(lab, sizeof lab, "%d value%s, %s", ed[e].values, ed[e].values == 1 ? "" : "s", by);
      if (ae) set(ae, "label", lab);
      vg->stats.memory_edges++;
    }
    vg->stats.nodes = nsc;
    vg->stats.total = ir_module_instr_count(m);
    if (b.failed) ok = false;
    vbuf_free(&b);
    fx_free(nodes);
  } else {
    ok = false;
  }
  fx_free(sc);
  fx_free(of);
  fx_free(ed);
  if (!ok) {
    viz_graph_free(vg);
    fx_error_set(err, NULL, 0, 0, "out of memory drawing the scopes");
    return NULL;
  }
  return vg;
}

/* test_viz.c — the pictures: what graph.c draws for a stage (nodes, fusion clusters, memory vs
 * register edges, refused candidates, focus and collapse), rendering with libgvc, and the
 * terminal picture. Modules are built with the IR API so the tests do not depend on a parser. */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../../viz/viz.h"

/* main(x: f32[4,8], w: f32[8,16]):
 *   dot.1 = dot(x, w)                 f32[4,16]     library call
 *   fusion.1 = fusion(dot.1, b)       f32[4,16]     kLoop { max(p0, broadcast(0)) + p1 }
 *   exponential.1 = exp(fusion.1)     f32[4,16]     unfused
 *   ROOT tuple.1 = tuple(exponential.1, fusion.1) */
typedef struct {
  IrModule *m;
  IrInstr *x, *w, *b, *dot, *fusion, *exp, *tuple;
  IrInstr *fmax, *fadd, *fbcast;
} Small;

static IrShape arr(IrModule *m, int64_t d0, int64_t d1) {
  int64_t d[2] = {d0, d1};
  return ir_shape_array(&m->arena, IR_F32, 2, d);
}

static Small small(void) {
  Small s = {0};
  IrModule *m = s.m = ir_module_new("small");
  IrComputation *fc = ir_computation_new(m, "fused_computation");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  IrShape x = arr(m, 4, 8), w = arr(m, 8, 16), o = arr(m, 4, 16), sc = ir_shape_scalar(IR_F32);
  s.x = ir_instr_new(c, IR_OP_PARAMETER, &x, NULL, 0, "x");
  s.x->param_number = 0;
  s.w = ir_instr_new(c, IR_OP_PARAMETER, &w, NULL, 0, "w");
  s.w->param_number = 1;
  s.b = ir_instr_new(c, IR_OP_PARAMETER, &o, NULL, 0, "b");
  s.b->param_number = 2;
  IrInstr *dops[2] = {s.x, s.w};
  s.dot = ir_instr_new(c, IR_OP_DOT, &o, dops, 2, "dot.1");
  /* fused body */
  IrInstr *p0 = ir_instr_new(fc, IR_OP_PARAMETER, &o, NULL, 0, "param_0");
  p0->param_number = 0;
  IrInstr *p1 = ir_instr_new(fc, IR_OP_PARAMETER, &o, NULL, 0, "param_1");
  p1->param_number = 1;
  IrInstr *zero = ir_constant_scalar(fc, IR_F32, 0, "constant.1");
  (void)sc;
  s.fbcast = ir_instr_new(fc, IR_OP_BROADCAST, &o, &zero, 1, "broadcast.1");
  IrInstr *mops[2] = {p0, s.fbcast};
  s.fmax = ir_instr_new(fc, IR_OP_MAXIMUM, &o, mops, 2, "maximum.1");
  IrInstr *aops[2] = {s.fmax, p1};
  s.fadd = ir_instr_new(fc, IR_OP_ADD, &o, aops, 2, "add.1");
  ir_set_root(fc, s.fadd);
  fc->params = arena_alloc(&m->arena, 2 * sizeof(IrInstr *));
  fc->params[0] = p0;
  fc->params[1] = p1;
  fc->nparams = 2;
  IrInstr *fops[2] = {s.dot, s.b};
  s.fusion = ir_instr_new(c, IR_OP_FUSION, &o, fops, 2, "fusion.1");
  ir_attr_set_text(s.fusion, "kind", "kLoop");
  ir_attr_set_comp(s.fusion, "calls", fc);
  fc->fusion_instr = s.fusion;
  s.exp = ir_instr_new(c, IR_OP_EXP, &o, &s.fusion, 1, "exponential.1");
  IrInstr *tops[2] = {s.exp, s.fusion};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2};
  IrShape elems[2] = {o, o};
  ts.tuple = elems;
  s.tuple = ir_instr_new(c, IR_OP_TUPLE, &ts, tops, 2, "tuple.1");
  ir_set_root(c, s.tuple);
  return s;
}

/* The same computation before fusion: maximum.1 and add.1 at the top level. */
static IrModule *unfused(void) {
  IrModule *m = ir_module_new("small");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  IrShape x = arr(m, 4, 8), w = arr(m, 8, 16), o = arr(m, 4, 16);
  IrInstr *px = ir_instr_new(c, IR_OP_PARAMETER, &x, NULL, 0, "x");
  px->param_number = 0;
  IrInstr *pw = ir_instr_new(c, IR_OP_PARAMETER, &w, NULL, 0, "w");
  pw->param_number = 1;
  IrInstr *pb = ir_instr_new(c, IR_OP_PARAMETER, &o, NULL, 0, "b");
  pb->param_number = 2;
  IrInstr *dops[2] = {px, pw};
  IrInstr *dot = ir_instr_new(c, IR_OP_DOT, &o, dops, 2, "dot.1");
  IrInstr *zero = ir_constant_scalar(c, IR_F32, 0, "constant.1");
  IrInstr *bc = ir_instr_new(c, IR_OP_BROADCAST, &o, &zero, 1, "broadcast.1");
  IrInstr *mops[2] = {dot, bc};
  IrInstr *mx = ir_instr_new(c, IR_OP_MAXIMUM, &o, mops, 2, "maximum.1");
  IrInstr *aops[2] = {mx, pb};
  IrInstr *add = ir_instr_new(c, IR_OP_ADD, &o, aops, 2, "add.1");
  IrInstr *e = ir_instr_new(c, IR_OP_EXP, &o, &add, 1, "exponential.1");
  IrInstr *tops[2] = {e, add};
  IrShape ts = {.type = IR_TUPLE, .ntuple = 2};
  IrShape elems[2] = {o, o};
  ts.tuple = elems;
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, tops, 2, "tuple.1"));
  return m;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* Renders g as DOT text (no layout) into a malloc'd string. */
static char *dot_text(VizGraph *g) {
  char *data = NULL;
  size_t len = 0;
  FxError err = {0};
  CHECK(viz_render(NULL, g, VIZ_DOT, &data, &len, &err));
  CHECK(data && strlen(data) == len);
  return data;
}

/* The DOT line of the edge a -> b (NULL when absent). Returns a pointer into text. */
static const char *edge_line(const char *text, const char *a, const char *b) {
  /* agwrite quotes names that are not plain identifiers ("dot.1"), and not others (x). */
  char pat[256];
  for (int k = 0; k < 4; k++) {
    const char *qa = (k & 1) ? "\"" : "", *qb = (k & 2) ? "\"" : "";
    snprintf(pat, sizeof pat, "\t%s%s%s -> %s%s%s", qa, a, qa, qb, b, qb);
    for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat))
      if (p[strlen(pat)] == '\t' || p[strlen(pat)] == ';') return p;
  }
  return NULL;
}

/* Whether some a -> b edge (there may be parallel ones) has attr in its attribute list. */
static bool edge_has(const char *text, const char *a, const char *b, const char *attr) {
  for (const char *p = edge_line(text, a, b); p; p = edge_line(p + 1, a, b)) {
    const char *end = strstr(p, "];");
    const char *hit = strstr(p, attr);
    if (hit && (!end || hit < end)) return true;
  }
  return false;
}

TEST(clusters_and_edge_kinds) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  /* x, w, b, dot.1, constant.1, broadcast.1, maximum.1, add.1, exponential.1, tuple.1 */
  CHECK(st->nodes == 10);
  CHECK(st->clusters == 1);
  /* registers: constant→broadcast, broadcast→maximum, maximum→add */
  CHECK(st->register_edges == 3);
  /* memory: x→dot, w→dot, dot→maximum, b→add, add→exp, add→tuple, exp→tuple */
  CHECK(st->memory_edges == 7);
  CHECK(st->refused_edges == 0);
  char *t = dot_text(g);
  CHECK_CONTAINS(t, "subgraph \"cluster_fusion.1\"");
  CHECK_CONTAINS(t, "loop fusion (kLoop) \xc2\xb7 4 ops");
  /* The fused parameter is not drawn: the fusion's operand feeds the member directly. */
  CHECK(strstr(t, "\tparam_0\t") == NULL);
  CHECK(edge_has(t, "dot.1", "maximum.1", "256 B"));
  CHECK(edge_has(t, "maximum.1", "add.1", "#6f97c9"));
  CHECK(!edge_has(t, "dot.1", "maximum.1", "#6f97c9"));
  /* The fusion's users read the fused root. */
  CHECK(edge_line(t, "add.1", "exponential.1") != NULL);
  CHECK_CONTAINS(t, "dot \xe2\x86\x92 cuBLAS");
  CHECK_CONTAINS(t, "box3d");
  CHECK_CONTAINS(t, "__legend");
  free(t);
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(collapse_draws_fusion_as_one_node) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  o.collapse = true;
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->nodes == 7); /* x w b dot.1 fusion.1 exponential.1 tuple.1 */
  CHECK(st->clusters == 0);
  CHECK(st->register_edges == 0);
  char *t = dot_text(g);
  CHECK(edge_has(t, "dot.1", "fusion.1", "256 B"));
  CHECK(edge_line(t, "fusion.1", "exponential.1") != NULL);
  CHECK(strstr(t, "maximum.1") == NULL);
  free(t);
  viz_graph_free(g);
  ir_module_free(s.m);
}

static PassDecision decision(const char *pass, const char *prod, const char *cons, bool acc, const char *reason) {
  PassDecision d = {0};
  d.stage = 1;
  d.pass = pass;
  d.action = "fuse";
  d.producer = prod;
  d.consumer = cons;
  d.accepted = acc;
  d.reason = reason;
  d.detail = "the producer is a library call (cuBLAS)";
  return d;
}

TEST(refused_candidates_last_decision_wins) {
  Small s = small();
  PassDecision ds[4] = {
      decision("instruction-fusion", "dot.1", "fusion.1", false, "custom_call"),
      decision("instruction-fusion", "fusion.1", "exponential.1", false, "expensive_duplication"),
      decision("fusion-merger", "fusion.1", "exponential.1", true, NULL),
      decision("instruction-fusion", "nonexistent", "exponential.1", false, "cycle"),
  };
  VizOptions o;
  viz_options_default(&o);
  o.decisions = (VizDecisions){ds, 4};
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  CHECK(viz_graph_stats(g)->refused_edges == 1);
  char *t = dot_text(g);
  /* dot.1 → fusion.1 is drawn to the fused root (the fusion's stand-in when expanded). */
  CHECK_CONTAINS(t, "custom_call");
  CHECK_CONTAINS(t, "dashed");
  CHECK(strstr(t, "expensive_duplication") == NULL);
  CHECK_CONTAINS(t, "refused fusion candidate");
  free(t);
  viz_graph_free(g);
  /* Collapsed: the refused edge joins the two kernel nodes. */
  o.collapse = true;
  g = viz_graph_build(s.m, &o, &err);
  t = dot_text(g);
  CHECK(edge_has(t, "dot.1", "fusion.1", "custom_call"));
  /* It follows the data (fusion.1 reads dot.1), so it ranks like the value edge beside it and dot
   * routes it between the ranks, around other boxes. */
  CHECK(!edge_has(t, "dot.1", "fusion.1", "constraint=false"));
  free(t);
  viz_graph_free(g);
  /* Two siblings the data does not join stay out of the ranking. */
  PassDecision sib = decision("multi_output_fusion", "x", "w", false, "different_loops");
  o.decisions = (VizDecisions){&sib, 1};
  g = viz_graph_build(s.m, &o, &err);
  t = dot_text(g);
  CHECK(edge_has(t, "x", "w", "different_loops"));
  CHECK(edge_has(t, "x", "w", "constraint=false"));
  free(t);
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(focus_and_depth) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  o.collapse = true;
  o.focus = "x";
  o.depth = 1;
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  CHECK(viz_graph_stats(g)->nodes == 2); /* x, dot.1 */
  CHECK(viz_graph_stats(g)->hidden == 5);
  char *t = dot_text(g);
  /* dot.1 also reads w and feeds fusion.1 */
  CHECK_CONTAINS(t, "+1 input, +1 user not drawn");
  free(t);
  viz_graph_free(g);
  o.depth = 2;
  g = viz_graph_build(s.m, &o, &err);
  CHECK(viz_graph_stats(g)->nodes == 4); /* + w, fusion.1 */
  viz_graph_free(g);
  /* Focus on a fusion drawn as a cluster: its members and their neighbours. */
  o.collapse = false;
  o.focus = "fusion.1";
  o.depth = 1;
  g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  /* members constant.1 broadcast.1 maximum.1 add.1 + dot.1 b exponential.1 tuple.1 */
  CHECK(viz_graph_stats(g)->nodes == 8);
  viz_graph_free(g);
  /* A member's name focuses inside the cluster. */
  o.focus = "broadcast.1";
  g = viz_graph_build(s.m, &o, &err);
  CHECK(viz_graph_stats(g)->nodes == 3); /* constant.1, broadcast.1, maximum.1 */
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(focus_caps_fan_out) {
  IrModule *m = ir_module_new("fan");
  IrComputation *c = ir_computation_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  IrShape sh = arr(m, 2, 2);
  IrInstr *p = ir_instr_new(c, IR_OP_PARAMETER, &sh, NULL, 0, "p");
  p->param_number = 0;
  IrInstr *users[30];
  for (int k = 0; k < 30; k++) users[k] = ir_instr_new(c, IR_OP_NEGATE, &sh, &p, 1, NULL);
  IrShape ts = {.type = IR_TUPLE, .ntuple = 0};
  ir_set_root(c, ir_instr_new(c, IR_OP_TUPLE, &ts, users, 30, "t"));
  VizOptions o;
  viz_options_default(&o);
  o.focus = "p";
  o.depth = 1;
  o.legend = false;
  FxError err = {0};
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(viz_graph_stats(g)->nodes == 25); /* p and its first 24 users */
  char *t = dot_text(g);
  CHECK_CONTAINS(t, "+6 users not drawn");
  free(t);
  viz_graph_free(g);
  ir_module_free(m);
}

TEST(big_collapsed_pictures_keep_kernels_only) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  o.collapse = true;
  o.plain_above = 3; /* main has 7 instructions: "big" for this test */
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  /* dot.1, fusion.1, exponential.1 and the root tuple.1; x, w, b are left out */
  CHECK(viz_graph_stats(g)->nodes == 4);
  CHECK(viz_graph_stats(g)->hidden == 3);
  char *t = dot_text(g);
  CHECK(edge_line(t, "dot.1", "fusion.1") != NULL);
  CHECK(edge_line(t, "fusion.1", "tuple.1") != NULL);
  CHECK_CONTAINS(t, "+2 inputs not drawn"); /* dot.1 reads x and w */
  free(t);
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(errors_name_what_is_missing) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  o.focus = "nope.7";
  FxError err = {0};
  CHECK(viz_graph_build(s.m, &o, &err) == NULL);
  CHECK_STR(err.msg, "no instruction named 'nope.7' in computation main");
  viz_options_default(&o);
  o.computation = "body.9";
  fx_error_clear(&err);
  CHECK(viz_graph_build(s.m, &o, &err) == NULL);
  CHECK_STR(err.msg, "no computation named 'body.9' in module small");
  ir_module_free(s.m);
}

TEST(fused_computation_on_its_own) {
  Small s = small();
  VizOptions o;
  viz_options_default(&o);
  o.computation = "fused_computation";
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->nodes == 6); /* the two parameters are drawn here */
  CHECK(st->register_edges == 3);
  CHECK(st->memory_edges == 2); /* parameters are read from memory */
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(decision_view) {
  Small s = small();
  PassDecision d = decision("instruction-fusion", "dot.1", "fusion.1", false, "custom_call");
  d.metrics[0] = (PassMetric){"users", 1};
  d.nmetrics = 1;
  d.suggestion = "dot stays a cuBLAS call; set dot-library off to fuse it";
  VizOptions o;
  viz_options_default(&o);
  o.collapse = true;
  o.decision = &d;
  o.decision_number = 7;
  FxError err = {0};
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  CHECK(g != NULL);
  char *t = dot_text(g);
  CHECK_CONTAINS(t, "decision #7");
  CHECK_CONTAINS(t, "rejected");
  CHECK_CONTAINS(t, "users = 1");
  CHECK_CONTAINS(t, "suggestion: dot stays a cuBLAS call");
  CHECK(edge_has(t, "dot.1", "fusion.1", "custom_call"));
  /* depth 1 around dot.1 and fusion.1: x w b dot.1 fusion.1 exponential.1 tuple.1 */
  CHECK(viz_graph_stats(g)->nodes == 7);
  free(t);
  viz_graph_free(g);
  ir_module_free(s.m);
}

TEST(render_svg_png_pdf) {
  Small s = small();
  FxError err = {0};
  VizRenderer *r = viz_renderer_new(&err);
  CHECK(r != NULL);
  VizOptions o;
  viz_options_default(&o);
  o.title = "small \xc2\xb7 stage 0";
  VizGraph *g = viz_graph_build(s.m, &o, &err);
  char *data;
  size_t len;
  CHECK(viz_render(r, g, VIZ_SVG, &data, &len, &err));
  CHECK_CONTAINS(data, "<svg");
  CHECK_CONTAINS(data, "cluster_fusion.1");
  CHECK_CONTAINS(data, "stage 0");
  fx_free(data);
  CHECK(viz_render(r, g, VIZ_PNG, &data, &len, &err));
  CHECK(len > 8 && memcmp(data, "\x89PNG", 4) == 0);
  fx_free(data);
  CHECK(viz_render(r, g, VIZ_PDF, &data, &len, &err));
  CHECK(len > 4 && memcmp(data, "%PDF", 4) == 0);
  fx_free(data);
  /* The same graph renders twice (the layout is freed after each render). */
  CHECK(viz_render(r, g, VIZ_SVG, &data, &len, &err));
  fx_free(data);
  CHECK(!viz_render_file(r, g, VIZ_SVG, "/nonexistent-dir/x.svg", &err));
  CHECK_CONTAINS(err.msg, "cannot write /nonexistent-dir/x.svg");
  viz_graph_free(g);
  viz_renderer_free(r);
  ir_module_free(s.m);
}

/* Many pictures at once: what each becomes is what rendering it alone gives, byte for byte,
 * whether it is laid out, drawn from another's layout (only its tooltips differ) or copied (the
 * same picture), in this process or in two children; the plan says which. */
TEST(render_batch_same_bytes) {
  Small a = small(), b = small(), c = small();
  c.exp->loc = (IrLoc){"elsewhere.hlo", 7, 3}; /* only c's tooltip of exponential.1 differs */
  IrModule *u = unfused();
  FxError err = {0};
  VizRenderer *r = viz_renderer_new(&err);
  CHECK(r != NULL);
  VizOptions o;
  viz_options_default(&o);
  const IrModule *mods[5] = {a.m, u, b.m, c.m, u};
  VizBatchItem items[5];
  char *alone[5];
  size_t alone_len[5];
  for (int k = 0; k < 5; k++) {
    VizGraph *g = viz_graph_build(mods[k], &o, &err);
    CHECK(g != NULL);
    CHECK(viz_render(r, g, VIZ_SVG, &alone[k], &alone_len[k], &err));
    items[k] = (VizBatchItem){.graph = g};
  }
  CHECK(strcmp(alone[0], alone[3]) != 0);
  CHECK_CONTAINS(alone[3], "elsewhere.hlo:7:3");
  for (int workers = 1; workers <= 2; workers++) {
    volatile int stop = 0;
    VizBatchOptions bo = {.workers = workers, .interrupted = workers == 2 ? &stop : NULL};
    VizBatchStats st;
    CHECK(viz_render_batch(r, items, 5, VIZ_SVG, &bo, &st, &err));
    CHECK(st.pictures == 5 && st.layouts == 2 && st.copies == 2);
    CHECK(st.workers == (workers == 2 ? 2 : 0));
    for (int k = 0; k < 5; k++) {
      CHECK(items[k].len == alone_len[k]);
      CHECK(items[k].data && memcmp(items[k].data, alone[k], alone_len[k]) == 0);
      fx_free(items[k].data);
    }
  }
  /* Ctrl-C before it starts: nothing is drawn. */
  volatile int stop = 1;
  VizBatchOptions bo = {.workers = 2, .interrupted = &stop};
  CHECK(!viz_render_batch(r, items, 5, VIZ_SVG, &bo, NULL, &err));
  CHECK_STR(err.msg, "interrupted");
  for (int k = 0; k < 5; k++) {
    CHECK(items[k].data == NULL);
    viz_graph_free(items[k].graph);
    fx_free(alone[k]);
  }
  viz_renderer_free(r);
  ir_module_free(a.m);
  ir_module_free(b.m);
  ir_module_free(c.m);
  ir_module_free(u);
}

TEST(formats) {
  VizFormat f;
  CHECK(viz_format_lookup("png", &f) && f == VIZ_PNG);
  CHECK(viz_format_lookup("dot", &f) && f == VIZ_DOT);
  CHECK(!viz_format_lookup("jpg", &f));
  CHECK_STR(viz_format_name(VIZ_PDF), "pdf");
}

/* The whole text picture, captured. */
static char *text_of(const IrModule *m, const char *comp, const VizNumbers *nums, FxError *err) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  bool ok = viz_text_graph(f, m, comp, nums, 80, err);
  fclose(f);
  if (!ok) {
    free(buf);
    return NULL;
  }
  return buf;
}

TEST(text_picture) {
  Small s = small();
  FxError err = {0};
  char *t = text_of(s.m, NULL, NULL, &err);
  CHECK_STR(t,
            "small \xc2\xb7 main: 3 kernels (1 fusion, 1 library call, 0 loop control, 1 unfused)\n"
            "  #1   dot.1                library: cuBLAS              f32[4,16]\n"
            "        reads x (128 B), w (512 B)\n"
            "  #2   fusion.1             loop fusion (kLoop)          f32[4,16]\n"
            "        members (4): constant.1 broadcast.1 maximum.1 add.1\n"
            "        reads #1 dot.1 (256 B), b (256 B)\n"
            "  #3   exponential.1        loop (unfused exponential)   f32[4,16]\n"
            "        reads #2 fusion.1 (256 B)\n"
            "between kernels (written to memory, read back):\n"
            "  #1 dot.1 \xe2\x94\x80\xe2\x94\x80 256 B \xe2\x94\x80\xe2\x96\xb6 #2 fusion.1\n"
            "  #2 fusion.1 \xe2\x94\x80\xe2\x94\x80 256 B \xe2\x94\x80\xe2\x96\xb6 #3 exponential.1\n"
            "  2 values, 512 B in all\n"
            "result: tuple.1 (tuple of #3, #2)\n");
  free(t);
  /* With the plan's numbers. */
  /* With the plan's numbers; its kernels are the kernels (here exponential.1 is left out). */
  VizKernelNumbers kn[2] = {{"fusion.1", 512, 256, 10, 1.5}, {"dot.1", 640, 256, 10, 2.0}};
  VizNumbers nums = {kn, 2, NULL, NULL};
  t = text_of(s.m, NULL, &nums, &err);
  CHECK_CONTAINS(t, "small \xc2\xb7 main: 2 kernels (1 fusion, 1 library call, 0 loop control, 0 unfused)\n");
  CHECK(strstr(t, "exponential.1        loop") == NULL);
  CHECK_CONTAINS(t, "  #2   fusion.1             loop fusion (kLoop)          f32[4,16]\n"
                    "        reads 512 B, writes 256 B, 1.50 us per launch, 10 launches\n");
  free(t);
  /* A fused computation on its own: no kernels inside, its parameters are inputs. */
  t = text_of(s.m, "fused_computation", NULL, &err);
  CHECK_STR(t, "small \xc2\xb7 fused_computation: the body of fusion.1 (loop fusion), 4 instructions in one kernel; "
               "values between them stay in registers\n"
               "  constant.1           constant         f32[]  <-\n"
               "  broadcast.1          broadcast        f32[4,16]  <- constant.1\n"
               "  maximum.1            maximum          f32[4,16]  <- param_0 (from memory: dot.1) broadcast.1\n"
               "  add.1                add              f32[4,16]  <- maximum.1 param_1 (from memory: b)\n");
  free(t);
  CHECK(text_of(s.m, "nope", NULL, &err) == NULL);
  CHECK_STR(err.msg, "no computation named 'nope' in module small");
  ir_module_free(s.m);
}

TEST(report_page) {
  Small s = small();
  IrModule *before = unfused();
  PassDecision ds[3] = {
      decision("instruction-fusion", "dot.1", "maximum.1", false, "custom_call"),
      decision("instruction-fusion", "maximum.1", "add.1", true, NULL),
      decision("instruction-fusion", "add.1", "exponential.1", false, "expensive_duplication"),
  };
  ds[1].detail = "fused <maximum.1> & <add.1>";
  VizStage st[3] = {
      {.module = before, .pass = "input", .have_numbers = true, .kernels = 6, .bytes = 4096, .est_us = 12.5},
      {.module = s.m, .pass = "instruction-fusion", .changed = true, .summary = "instruction-fusion: 3 fused",
       .have_numbers = true, .kernels = 3, .nkernels = 2, .bytes = 2048, .est_us = 7.25, .decisions = {ds, 3},
       .first_number = 5},
      {.module = s.m, .pass = "cse", .changed = false},
  };
  VizDecisions all = {ds, 3};
  VizReportOptions ro = {.title = "small <test>", .pipeline = "classic", .device = "rtx2080ti"};
  FxError err = {0};
  VizRenderer *r = viz_renderer_new(&err);
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  CHECK(viz_report_write(f, r, st, 3, &all, &ro, &err));
  fclose(f);
  CHECK(count_of(buf, "<svg") == 3);
  CHECK(count_of(buf, "<section class=\"stage\"") == 3);
  CHECK_CONTAINS(buf, "id=\"stage-0\"");
  CHECK_CONTAINS(buf, "id=\"stage-2\"");
  CHECK_CONTAINS(buf, "<title>fxplain \xc2\xb7 small &lt;test&gt;</title>");
  /* Summary row of stage 1: instructions, kernels, launches, bytes, time, decisions. */
  CHECK_CONTAINS(buf, "<td>yes</td><td class=\"num\">13</td><td class=\"num\">2</td><td class=\"num\">3</td>"
                      "<td class=\"num\">2.0 KiB</td><td class=\"num\">7.25 us</td><td>1 accepted, 2 rejected</td>");
  /* Decisions are numbered as the shell numbers them: globally, from the stage's first number. */
  CHECK_CONTAINS(buf, "<td class=\"num\">5</td><td>instruction-fusion</td>");
  CHECK_CONTAINS(buf, "<td class=\"num\">7</td><td>instruction-fusion</td>");
  /* What changed, computed from the two snapshots. */
  CHECK_CONTAINS(buf, "1 added, 0 removed, 4 fused into a kernel\n");
  CHECK_CONTAINS(buf, "fused   maximum.1 into fusion.1\n");
  CHECK_CONTAINS(buf, "added   fusion.1 = fusion f32[4,16] (kLoop)\n");
  /* Decisions: filterable rows, escaped text, reason options. */
  CHECK(count_of(buf, "<tr class=\"d\" data-verdict=\"rejected\"") == 2);
  CHECK_CONTAINS(buf, "<option value=\"expensive_duplication\">");
  CHECK_CONTAINS(buf, "fused &lt;maximum.1&gt; &amp; &lt;add.1&gt;");
  /* The refused candidate of stage 1 is drawn in stage 1's and stage 2's pictures. */
  CHECK(count_of(buf, "expensive_duplication</text>") == 2);
  /* Self-contained: nothing fetched. */
  CHECK(strstr(buf, "<link") == NULL);
  CHECK(strstr(buf, "src=") == NULL);
  CHECK(strstr(buf, "https://") == NULL);
  CHECK_CONTAINS(buf, "ArrowRight");
  free(buf);
  viz_renderer_free(r);
  ir_module_free(before);
  ir_module_free(s.m);
}

int main(void) {
  RUN(clusters_and_edge_kinds);
  RUN(collapse_draws_fusion_as_one_node);
  RUN(refused_candidates_last_decision_wins);
  RUN(focus_and_depth);
  RUN(focus_caps_fan_out);
  RUN(big_collapsed_pictures_keep_kernels_only);
  RUN(errors_name_what_is_missing);
  RUN(fused_computation_on_its_own);
  RUN(decision_view);
  RUN(render_svg_png_pdf);
  RUN(render_batch_same_bytes);
  RUN(formats);
  RUN(text_picture);
  RUN(report_page);
  return check_summary();
}

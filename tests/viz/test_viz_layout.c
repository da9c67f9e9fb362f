/* test_viz_layout.c — which Graphviz layout a picture gets: dot for what dot lays out in about a
 * second, sfdp (Graphviz's large-graph layout) past VIZ_DOT_MAX_NODES nodes or when long edges
 * would make dot route too many segments; nodes without edges are left out of an sfdp picture;
 * the choice is stated in the picture's title, in the DOT text and in `render`'s output. Only the
 * behaviour is asserted here: speed is measured in bench/viz_render.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "../../compiler/hlo/hlo.h"
#include "../../repl/session.h"
#include "../../viz/viz.h"

/* HLO text of a module whose entry is a chain of `chain` negations of parameter x, with `unused`
 * parameters nobody reads; with `long_edges`, every link of the chain also reads x (an edge from
 * the top to every rank). */
static char *chain_text(int chain, int unused, bool long_edges) {
  size_t cap = (size_t)(chain + unused) * 96 + 256;
  char *t = malloc(cap);
  size_t n = (size_t)snprintf(t, cap, "HloModule chain\n\nENTRY %%main {\n  %%x = f32[8]{0} parameter(0)\n");
  for (int k = 0; k < unused; k++)
    n += (size_t)snprintf(t + n, cap - n, "  %%u%d = f32[8]{0} parameter(%d)\n", k, k + 1);
  for (int k = 1; k <= chain; k++) {
    char prev[32];
    snprintf(prev, sizeof prev, k == 1 ? "x" : "c%d", k - 1);
    if (long_edges)
      n += (size_t)snprintf(t + n, cap - n, "  %s%%c%d = f32[8]{0} add(%%%s, %%x)\n", k == chain ? "ROOT " : "", k,
                            prev);
    else
      n += (size_t)snprintf(t + n, cap - n, "  %s%%c%d = f32[8]{0} negate(%%%s)\n", k == chain ? "ROOT " : "", k,
                            prev);
  }
  snprintf(t + n, cap - n, "}\n");
  return t;
}

static IrModule *chain_module(int chain, int unused, bool long_edges) {
  char *t = chain_text(chain, unused, long_edges);
  FxError err;
  fx_error_clear(&err);
  IrModule *m = hlo_parse(t, strlen(t), "chain.hlo", &err);
  if (!m) fx_error_print(stderr, &err);
  free(t);
  return m;
}

static char *dot_text(VizGraph *g) {
  char *d = NULL;
  size_t len = 0;
  FxError err;
  fx_error_clear(&err);
  VizRenderer *r = viz_renderer_new(&err);
  CHECK(viz_render(r, g, VIZ_DOT, &d, &len, &err));
  viz_renderer_free(r);
  return d;
}

TEST(small_pictures_stay_with_dot) {
  IrModule *m = chain_module(40, 3, false);
  VizOptions o;
  viz_options_default(&o);
  FxError err;
  fx_error_clear(&err);
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->layout == VIZ_LAYOUT_DOT);
  CHECK(!st->layout_chosen);
  CHECK(st->unconnected == 0); /* dot draws the unused parameters */
  CHECK(st->nodes == 44);
  CHECK_STR(st->layout_reason, "");
  char *d = dot_text(g);
  CHECK(strstr(d, "sfdp") == NULL);
  fx_free(d);
  viz_graph_free(g);
  ir_module_free(m);
}

TEST(many_nodes_choose_sfdp_and_say_so) {
  IrModule *m = chain_module(VIZ_DOT_MAX_NODES + 100, 30, false);
  VizOptions o;
  viz_options_default(&o);
  o.title = "chain";
  FxError err;
  fx_error_clear(&err);
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->layout == VIZ_LAYOUT_SFDP);
  CHECK(st->layout_chosen);
  char want[96];
  snprintf(want, sizeof want, "%d nodes (dot: up to %d)", VIZ_DOT_MAX_NODES + 131, VIZ_DOT_MAX_NODES);
  CHECK_STR(st->layout_reason, want);
  /* The 30 unused parameters have no edge: left out, counted, and among the hidden. */
  CHECK(st->unconnected == 30);
  CHECK(st->nodes == VIZ_DOT_MAX_NODES + 101);
  CHECK(st->hidden == 30);
  char *d = dot_text(g);
  /* (strstr, not CHECK_CONTAINS: the text is 600 KB) */
  CHECK(strstr(d, "layout=sfdp") != NULL);
  CHECK(strstr(d, "packmode=array") != NULL);
  CHECK(strstr(d, "laid out with sfdp (Graphviz's large-graph layout): ") != NULL);
  CHECK(strstr(d, "u7") == NULL);
  fx_free(d);
  /* Nothing is refused: it is laid out (the old limit was 4,000 nodes for dot). */
  char *svg = NULL;
  size_t len = 0;
  VizRenderer *r = viz_renderer_new(&err);
  CHECK(viz_render(r, g, VIZ_SVG, &svg, &len, &err));
  CHECK(svg && strstr(svg, "<svg") != NULL);
  fx_free(svg);
  viz_renderer_free(r);
  viz_graph_free(g);
  ir_module_free(m);
}

TEST(long_edges_choose_sfdp) {
  /* 300 nodes, but every link reads x: dot would place about 300 * 300 / 2 virtual nodes. */
  IrModule *m = chain_module(300, 0, true);
  VizOptions o;
  viz_options_default(&o);
  FxError err;
  fx_error_clear(&err);
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->nodes == 301);
  CHECK(st->layout == VIZ_LAYOUT_SFDP);
  CHECK(st->dot_work > VIZ_DOT_MAX_WORK);
  CHECK(st->dot_work == 301 + 299 * 300 / 2); /* c_k (rank k) reads x (rank 0): k - 1 crossings */
  CHECK_CONTAINS(st->layout_reason, "dot would place 301 nodes and about 44850 edge segments");
  viz_graph_free(g);
  ir_module_free(m);
}

TEST(much_work_keeps_the_labels) {
  /* 161 nodes, every link reading x: past VIZ_XLABEL_MAX_WORK but within dot's reach. The
   * picture keeps every value label (beside its edge) and is laid out with few iterations; it
   * is not the plain style, which drops the labels. */
  IrModule *m = chain_module(160, 0, true);
  VizOptions o;
  viz_options_default(&o);
  FxError err;
  fx_error_clear(&err);
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(g != NULL);
  const VizGraphStats *st = viz_graph_stats(g);
  CHECK(st->dot_work == 161 + 159 * 160 / 2);
  CHECK(st->dot_work > VIZ_XLABEL_MAX_WORK && st->dot_work <= VIZ_DOT_MAX_WORK);
  CHECK(st->layout == VIZ_LAYOUT_DOT);
  CHECK(!st->plain && st->xlabels && st->quick);
  char *d = dot_text(g);
  CHECK(strstr(d, "mclimit=0.05") != NULL);
  CHECK(strstr(d, "splines=line") != NULL);
  /* c1 reads x, each later link x and the one before it: at least 319 labelled value edges */
  int labels = 0;
  for (const char *p = d; (p = strstr(p, "xlabel=")); p++) labels++;
  CHECK(labels >= 319);
  fx_free(d);
  viz_graph_free(g);
  ir_module_free(m);
}

TEST(the_layout_can_be_forced) {
  IrModule *m = chain_module(VIZ_DOT_MAX_NODES + 100, 5, false);
  VizOptions o;
  viz_options_default(&o);
  o.layout = VIZ_LAYOUT_DOT;
  FxError err;
  fx_error_clear(&err);
  VizGraph *g = viz_graph_build(m, &o, &err);
  CHECK(viz_graph_stats(g)->layout == VIZ_LAYOUT_DOT);
  CHECK(!viz_graph_stats(g)->layout_chosen);
  CHECK(viz_graph_stats(g)->unconnected == 0);
  viz_graph_free(g);
  ir_module_free(m);
  m = chain_module(10, 2, false);
  o.layout = VIZ_LAYOUT_SFDP;
  g = viz_graph_build(m, &o, &err);
  CHECK(viz_graph_stats(g)->layout == VIZ_LAYOUT_SFDP);
  CHECK(!viz_graph_stats(g)->layout_chosen);
  CHECK(viz_graph_stats(g)->unconnected == 2);
  viz_graph_free(g);
  ir_module_free(m);
  VizLayout l;
  CHECK(viz_layout_lookup("sfdp", &l) && l == VIZ_LAYOUT_SFDP);
  CHECK(viz_layout_lookup("auto", &l) && l == VIZ_LAYOUT_AUTO);
  CHECK(!viz_layout_lookup("neato", &l));
}

/* Runs one shell command on s, its output in *out (malloc'd). */
static bool shell(Session *s, const char *line, char **out) {
  char copy[512];
  snprintf(copy, sizeof copy, "%s", line);
  char *argv[16];
  int argc = 0;
  for (char *w = strtok(copy, " "); w && argc < 15; w = strtok(NULL, " ")) argv[argc++] = w;
  argv[argc] = NULL;
  size_t len = 0;
  *out = NULL;
  FILE *f = open_memstream(out, &len);
  s->out = s->err = f;
  FxError err;
  fx_error_clear(&err);
  const ReplCommand *c = repl_command_lookup(argv[0]);
  bool ok = c && c->run(s, argc, argv, &err);
  if (!ok && err.set) fprintf(f, "error: %s\n", err.msg);
  fclose(f);
  return ok;
}

TEST(render_states_the_choice) {
  char dir[] = "/tmp/fxplain-viz-layoutXXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  Session *s = session_new(stdout, stderr);
  explain_engine_set_input(&s->eng, chain_module(VIZ_DOT_MAX_NODES + 100, 30, false));
  char cmd[300], *out;
  snprintf(cmd, sizeof cmd, "render %s/big.svg", dir);
  CHECK(shell(s, cmd, &out));
  char want[200];
  snprintf(want, sizeof want,
           "  laid out with sfdp, Graphviz's large-graph layout: %d nodes (dot: up to %d); 30 nodes without "
           "edges left out\n",
           VIZ_DOT_MAX_NODES + 131, VIZ_DOT_MAX_NODES);
  CHECK_CONTAINS(out, want);
  free(out);
  /* --layout dot: no choice to state. */
  snprintf(cmd, sizeof cmd, "render %s/big.dot --layout dot", dir);
  CHECK(shell(s, cmd, &out));
  CHECK(strstr(out, "sfdp") == NULL);
  free(out);
  CHECK(!shell(s, "render x.svg --layout neato", &out));
  CHECK_CONTAINS(out, "unknown layout 'neato' (auto, dot or sfdp)");
  free(out);
  s->json = true;
  snprintf(cmd, sizeof cmd, "render %s/big.svg", dir);
  CHECK(shell(s, cmd, &out));
  CHECK_CONTAINS(out, "\"layout\":\"sfdp\",\"layout_reason\":");
  CHECK_CONTAINS(out, "\"unconnected\":30");
  free(out);
  session_free(s);
  snprintf(cmd, sizeof cmd, "%s/big.svg", dir);
  unlink(cmd);
  snprintf(cmd, sizeof cmd, "%s/big.dot", dir);
  unlink(cmd);
  rmdir(dir);
}

int main(void) {
  RUN(small_pictures_stay_with_dot);
  RUN(many_nodes_choose_sfdp_and_say_so);
  RUN(long_edges_choose_sfdp);
  RUN(much_work_keeps_the_labels);
  RUN(the_layout_can_be_forced);
  RUN(render_states_the_choice);
  return check_summary();
}

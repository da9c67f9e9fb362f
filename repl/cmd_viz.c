/* cmd_viz.c — the shell's picture commands: `render` (a stage, a computation, a neighbourhood,
 * one decision, or the stage by JAX name scope, as svg/png/pdf/dot), `report` (the HTML
 * walkthrough of every stage) and `show graph` (the terminal picture).
 *
 * Each parses its words, asks viz/ to draw the engine's stages (viz/engine_render.c: what to draw,
 * the file name, the plan's figures, the decisions behind each edge) and prints what was done
 * (viz/format_viz.c). One Graphviz context serves the whole session; it is made on first use. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../explain/format.h"
#include "../explain/xla_dump.h"
#include "../viz/viz.h"
#include "args.h"
#include "repl.h"
#include "session.h"

/* Gives an error filled by viz/ (which knows no input place) the place of word argi. */
static void locate(Session *s, FxError *err, int argi) {
  if (err->file[0]) return;
  FxError here;
  fx_error_clear(&here);
  repl_arg_error(s, &here, argi, "%s", err->msg);
  *err = here;
}

static VizRenderer *the_renderer;

static void free_renderer(void) {
  viz_renderer_free(the_renderer);
  the_renderer = NULL;
}

/* The session's Graphviz context, made on first use and kept until exit. */
static VizRenderer *renderer(FxError *err) {
  if (!the_renderer) {
    the_renderer = viz_renderer_new(err);
    if (the_renderer) atexit(free_renderer);
  }
  return the_renderer;
}

/* A computed stage, by number or by the name of the pass that produced it. */
static bool parse_stage(Session *s, const char *w, int argi, int *out, FxError *err) {
  char why[300];
  return explain_engine_computed_stage(&s->eng, w, out, why, sizeof why) || repl_arg_error(s, err, argi, "%s", why);
}

static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  return dot && (!slash || dot > slash) ? dot + 1 : NULL;
}

/* ---------- render ---------- */

static bool render_scope(Session *s, int argc, char **argv, FxError *err);

static bool cmd_render(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  for (int k = 1; k < argc; k++)
    if (strcmp(argv[k], "--group") == 0) return render_scope(s, argc, argv, err);
  const char *file = NULL, *format = NULL, *focus = NULL, *comp = NULL, *stage_w = NULL, *layout_w = NULL;
  long depth = 0, decision = 0;
  bool collapse = false;
  /* Word positions, for errors that point at the word at fault. */
  int file_k = 0, format_k = 0, focus_k = 0, comp_k = 0, stage_k = 0, decision_k = 0, layout_k = 0;
  for (int k = 1; k < argc; k++) {
    const char *o = argv[k];
    if (strcmp(o, "--collapse") == 0) {
      collapse = true;
    } else if (strcmp(o, "--stage") == 0 || strcmp(o, "--format") == 0 || strcmp(o, "--focus") == 0 ||
               strcmp(o, "--depth") == 0 || strcmp(o, "--computation") == 0 || strcmp(o, "--decision") == 0 ||
               strcmp(o, "--layout") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "%s needs a value", o);
      const char *v = argv[++k];
      if (strcmp(o, "--stage") == 0) stage_w = v, stage_k = k;
      else if (strcmp(o, "--layout") == 0) layout_w = v, layout_k = k;
      else if (strcmp(o, "--format") == 0) format = v, format_k = k;
      else if (strcmp(o, "--focus") == 0) focus = v, focus_k = k;
      else if (strcmp(o, "--computation") == 0) comp = v, comp_k = k;
      else {
        char *end;
        long x = strtol(v, &end, 10);
        if (!*v || *end || x < 1 || x > 1000000000)
          return repl_arg_error(s, err, k, "%s expects a positive number, got '%s'", o, v);
        if (strcmp(o, "--depth") == 0) depth = x;
        else decision = x, decision_k = k;
      }
    } else if (o[0] == '-' && o[1] == '-') {
      return repl_arg_error(s, err, k,
                       "unknown option '%s' (usage: render [FILE] [--stage S] [--format svg|png|pdf|dot] [--focus NAME] "
                       "[--depth D] [--collapse] [--computation NAME] [--decision N])", o);
    } else if (!file) {
      file = o;
      file_k = k;
    } else {
      return repl_arg_error(s, err, k, "render takes one FILE, got '%s' and '%s'", file, o);
    }
  }
  VizFormat fmt = VIZ_SVG;
  if (format) {
    if (!viz_format_lookup(format, &fmt))
      return repl_arg_error(s, err, format_k, "unknown format '%s' (svg, png, pdf or dot)", format);
  } else if (file && strcmp(file, "-") != 0) {
    const char *e = ext_of(file);
    if (e && strcmp(e, "gv") == 0) fmt = VIZ_DOT;
    else if (!e || !viz_format_lookup(e, &fmt))
      return repl_arg_error(s, err, file_k,
                            "cannot tell the format of '%s': name it .svg, .png, .pdf or .dot, or give --format", file);
  }
  VizLayout layout = VIZ_LAYOUT_AUTO;
  if (layout_w && !viz_layout_lookup(layout_w, &layout))
    return repl_arg_error(s, err, layout_k, "unknown layout '%s' (auto, dot or sfdp)", layout_w);
  int stage = s->eng.cur;
  if (stage_w && !parse_stage(s, stage_w, stage_k, &stage, err)) return false;

  VizRenderRequest rq = {.stage = stage, .format = fmt, .file = file, .computation = comp, .focus = focus,
                         .depth = (int)depth, .collapse = collapse, .layout = layout, .decision = (int)decision,
                         .renderer = renderer, .interrupted = s->interrupted};
  VizRendered r;
  VizAt at;
  bool ok = viz_engine_render(&s->eng, &rq, &r, &at, err);
  if (ok) {
    ExplainOut o = repl_out(s);
    viz_show_rendered(&o, &s->eng, &rq, &r);
  } else if (at != VIZ_AT_NONE) {
    /* Point at the word that named what is at fault. */
    locate(s, err, at == VIZ_AT_FILE ? file_k : at == VIZ_AT_COMPUTATION ? comp_k : at == VIZ_AT_FOCUS ? focus_k
                                                : at == VIZ_AT_DECISION ? decision_k : 0);
  }
  fx_free(r.data);
  return ok;
}

/* render --group scope [FILE] [--depth D] [--format F]: the current stage by JAX name scope. */
static bool render_scope(Session *s, int argc, char **argv, FxError *err) {
  const char *file = NULL, *format = NULL;
  long long depth = 0;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--group") == 0) {
      if (k + 1 >= argc || strcmp(argv[k + 1], "scope") != 0)
        return repl_arg_error(s, err, k + 1 < argc ? k + 1 : k, "--group takes 'scope' (JAX name scopes)");
      k++;
    } else if (strcmp(argv[k], "--depth") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "--depth needs a value");
      if (!repl_parse_int(s, argv, ++k, 0, 64, &depth, err)) return false;
    } else if (strcmp(argv[k], "--format") == 0) {
      if (k + 1 >= argc) return repl_arg_error(s, err, k, "--format needs a value");
      format = argv[++k];
    } else if (argv[k][0] == '-' && argv[k][1]) {
      return repl_arg_error(s, err, k, "with --group scope, render takes FILE, --depth D and --format F, not '%s'",
                            argv[k]);
    } else if (!file) {
      file = argv[k];
    } else {
      return repl_arg_error(s, err, k, "unexpected argument '%s'", argv[k]);
    }
  }
  VizFormat f = VIZ_SVG;
  const char *ext = file ? strrchr(file, '.') : NULL;
  if (format && !viz_format_lookup(format, &f)) return repl_arg_error(s, err, 0, "unknown format '%s'", format);
  if (!format && ext && !viz_format_lookup(ext + 1, &f)) f = VIZ_SVG;
  ExplainOut o = repl_out(s);
  FxError e;
  fx_error_clear(&e);
  VizScopePicture sp;
  VizGraph *g = viz_engine_scope_graph(&s->eng, (int)depth, f, file, &sp, &e);
  if (!g) return repl_error_at(s, err, 0, &e);
  viz_show_scope_levels(&o, &sp);
  VizRenderer *r = viz_renderer_new(&e);
  bool ok = r && viz_render_file(r, g, f, sp.path, &e);
  viz_renderer_free(r);
  viz_graph_free(g);
  if (!ok) return repl_error_at(s, err, 0, &e);
  viz_show_scope_written(&o, &s->eng, &sp);
  return true;
}

/* ---------- report ---------- */

/* A progress line on a terminal (never in batch or JSON): long work says how far it is. */
static bool progress_line(const Session *s) { return s->interactive && !s->json && isatty(fileno(stderr)); }

static void report_progress(void *ctx, int done, int total) {
  (void)ctx;
  fprintf(stderr, "\rreport: drawing stage %d of %d...", done + 1, total);
  if (done + 1 == total) fputs("\r\033[K", stderr);
  fflush(stderr);
}

static bool cmd_report(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  VizRenderer *r = renderer(err);
  if (!r) return false;
  VizReportWritten rw;
  VizAt at;
  if (!viz_engine_report_file(argv[1], r, &s->eng, s->interrupted, progress_line(s) ? report_progress : NULL, s, &rw,
                              &at, err)) {
    locate(s, err, at == VIZ_AT_FILE ? 1 : 0);
    return false;
  }
  ExplainOut o = repl_out(s);
  viz_show_report_written(&o, &s->eng, argv[1], &rw);
  return true;
}

/* ---------- show graph ---------- */

static bool cmd_show_graph(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  VizAt at;
  if (!viz_engine_text_graph(s->out, &s->eng, argc == 2 ? argv[1] : NULL, s->json, &at, err)) {
    if (at != VIZ_AT_NONE) locate(s, err, at == VIZ_AT_COMPUTATION ? 1 : 0);
    return false;
  }
  if (s->json) return true; /* `kernels` has the sources in JSON */
  /* Where each kernel came from, when XLA's metadata says. */
  ExplainOut o = repl_out(s);
  if (argc == 1)
    explain_show_kernel_sources(&o, explain_engine_module(&s->eng, s->eng.cur),
                                explain_engine_plan(&s->eng, s->eng.cur, err));
  return true;
}

const ReplCommand repl_cmds_viz[] = {
    {"render", "render [FILE] [--stage S] [--format svg|png|pdf|dot] [--focus NAME] [--depth D] [--collapse] "
               "[--computation NAME] [--decision N] [--layout auto|dot|sfdp] [--group scope]",
     "draw a stage with Graphviz (svg, png, pdf or dot)",
     "render [FILE] [options]  draws the current stage: each instruction a node (name, op, shape), each\n"
     "                    fusion a box holding its members and labelled with its kernel and kind,\n"
     "                    library calls (cuBLAS, cuDNN, cuRAND, custom calls) and loop control drawn\n"
     "                    apart. Values written to memory (they cross a kernel boundary) are thick\n"
     "                    dark edges labelled with shape and bytes; values kept in registers inside a\n"
     "                    fusion are thin light ones; refused fusion candidates are dashed red edges\n"
     "                    labelled with their reason code. A legend explains it all.\n"
     "  FILE              where to write; the format follows the extension (.svg .png .pdf .dot).\n"
     "                    Without FILE the name is MODULE.stageN[.COMPUTATION][.FOCUS].FORMAT, written\n"
     "                    to $FXPLAIN_OUT_DIR when set, else the current directory. '-' writes to stdout.\n"
     "  --stage S         a computed stage (number, or the name of the pass that made it)\n"
     "  --format F        svg (default), png, pdf or dot (Graphviz text, no layout)\n"
     "  --computation C   draw computation C (a while body, a fused computation) instead of the entry\n"
     "  --focus NAME      only the instructions within --depth D edges (default 2) of NAME\n"
     "  --collapse        each fusion as one node (for big stages)\n"
     "  --group scope     one node per JAX name scope (XLA's metadata), boxed in its parent scopes, with\n"
     "                    the values and bytes between scopes; --depth D keeps D levels of the path\n"
     "                    (a whole 19,000-instruction module fits; open it level by level)\n"
     "  --layout L        auto (default): dot, which draws the flow top to bottom, while it can lay the\n"
     "                    picture out in about a second; past 1,500 nodes, or when dot would have to\n"
     "                    route long edges through too many ranks, sfdp (Graphviz's large-graph\n"
     "                    layout, seconds for 10,000 nodes; no fusion boxes, nodes without edges left\n"
     "                    out), and the output says so. dot or sfdp force one.\n"
     "  --decision N      draw decision N (numbered as `decisions` lists them, from 1): producer,\n"
     "                    consumer and their neighbourhood, on the stage the pass looked at, with the\n"
     "                    verdict, the reason and its numbers",
     cmd_render},
    {"report", "report FILE.html", "write the HTML walkthrough of every stage",
     "report FILE.html    writes one self-contained page (no network needed): a table of every stage\n"
     "                    computed so far, then one section per stage with its picture, what the pass\n"
     "                    changed, its decisions (filter them by verdict and reason) and its numbers\n"
     "                    (kernels, bytes, estimated time). Left/right arrow keys (or j/k) move between\n"
     "                    stages. Run `step all` first to include every pass.",
     cmd_report},
    {"show-graph", "show graph [COMPUTATION]", NULL,
     "show graph [COMP]   the current stage as text: each kernel with its kind, members and inputs, then\n"
     "                    the values that cross between kernels (written to memory), their sizes, and\n"
     "                    the decision that kept each in memory (#N reason; `why A B` explains it).",
     cmd_show_graph},
    {0},
};

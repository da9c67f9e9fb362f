/* cmd_viz.c — the shell's picture commands: `render` (a stage, a computation, a neighbourhood or
 * one decision, as svg/png/pdf/dot), `report` (the HTML walkthrough of every stage) and
 * `show graph` (the terminal picture).
 *
 * They read the session's stages and its decision log, ask the kernel plan for each stage's
 * numbers, and hand everything to viz/ as plain data (modules, PassDecision records, numbers).
 * One Graphviz context serves the whole session; it is made on first use. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../compiler/plan.h"
#include "../explain/explain.h"
#include "../viz/viz.h"
#include "args.h"
#include "../explain/json.h"
#include "repl.h"
#include "session.h"

/* ---------- helpers ---------- */

static bool viz_error(Session *s, FxError *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool viz_error(Session *s, FxError *err, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return repl_arg_error(s, err, 0, "%s", msg); /* at the command word, with the line and a caret */
}

/* Gives an error filled by viz/ (which knows no input place) the command's place. */
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
  char *end;
  long v = strtol(w, &end, 10);
  if (*w && !*end) {
    if (v < 0 || v >= s->eng.nstages)
      return repl_arg_error(s, err, argi, "stage %ld has not been computed (stages 0..%d exist: step there first)", v,
                            s->eng.nstages - 1);
    *out = (int)v;
    return true;
  }
  for (int k = 1; k < s->eng.nstages; k++)
    if (s->eng.stages[k].pass && strcmp(s->eng.stages[k].pass, w) == 0) {
      *out = k;
      return true;
    }
  return repl_arg_error(s, err, argi,
                        "no computed stage is '%s': give a stage number (0..%d) or the name of a pass that ran", w,
                        s->eng.nstages - 1);
}

/* "12 kernels, 1.5 MiB moved, 3.20 us estimated" from the stage's kernel plan. */
static void plan_words(const KernelPlan *p, char *buf, size_t n) {
  char b[32];
  double bytes = (double)(p->bytes_read + p->bytes_written);
  fx_format_bytes(b, sizeof b, bytes, FX_BYTES_PLAN);
  double us = p->est_us;
  if (us < 1000) snprintf(buf, n, "%lld kernel launches, %s moved, %.2f us estimated", (long long)p->launches, b, us);
  else if (us < 1e6) snprintf(buf, n, "%lld kernel launches, %s moved, %.2f ms estimated", (long long)p->launches, b, us / 1e3);
  else snprintf(buf, n, "%lld kernel launches, %s moved, %.2f s estimated", (long long)p->launches, b, us / 1e6);
}

/* Output files named by fxplain (no FILE given) go to $FXPLAIN_OUT_DIR when it is set, else to
 * the current directory; the message names them relative to that place. */
static void default_path(char *path, size_t n, const char *name) {
  const char *dir = getenv("FXPLAIN_OUT_DIR");
  if (dir && *dir) snprintf(path, n, "%s/%s", dir, name);
  else snprintf(path, n, "%s", name);
}

/* A file-name-safe copy of s. */
static void safe_name(char *out, size_t n, const char *s) {
  size_t k = 0;
  for (; s && *s && k + 1 < n; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out[k++] = ok ? c : '_';
  }
  out[k] = 0;
}

static const char *ext_of(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(path, '.');
  return dot && (!slash || dot > slash) ? dot + 1 : NULL;
}

/* ---------- render ---------- */

static bool cmd_render(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  for (int k = 1; k < argc; k++)
    if (strcmp(argv[k], "--group") == 0) return repl_xla_render_scope(s, argc, argv, err); /* cmd_xla.c */
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

  PassDecision *ds = NULL;
  int nds = viz_engine_decisions(&s->eng, decision ? s->eng.nstages - 1 : stage, &ds);
  if (nds < 0) return viz_error(s, err, "out of memory");
  VizOptions o;
  viz_options_default(&o);
  o.computation = comp;
  o.focus = focus;
  o.depth = (int)depth;
  o.collapse = collapse;
  o.layout = layout;
  char title[512];
  const IrModule *m = s->eng.stages[stage].module;
  if (decision) {
    if (decision > nds) {
      fx_free(ds);
      return repl_arg_error(s, err, decision_k, "there is no decision #%ld: %d decision%s recorded so far (see `decisions`)",
                            decision, nds, nds == 1 ? "" : "s");
    }
    o.decision = &ds[decision - 1];
    o.decision_number = (int)decision;
    /* Drawn on the stage the pass looked at: the one before the decision's stage. */
    stage = o.decision->stage > 0 ? o.decision->stage - 1 : 0;
    m = s->eng.stages[stage].module;
    if (!comp && o.decision->producer) {
      const IrInstr *p = ir_module_find_instr(m, o.decision->producer);
      if (p && p->parent && !p->parent->is_entry && !p->parent->fusion_instr) o.computation = p->parent->name;
    }
  } else {
    o.decisions = (VizDecisions){ds, nds};
    const KernelPlan *plan = explain_engine_plan(&s->eng, stage, err);
    if (!plan) {
      fx_free(ds);
      return false;
    }
    char words[160];
    plan_words(plan, words, sizeof words);
    snprintf(title, sizeof title, "%s \xc2\xb7 stage %d (%s) \xc2\xb7 %s%s \xc2\xb7 %s", m->name ? m->name : "module",
             stage, explain_engine_stage_pass(&s->eng, stage), comp ? "computation " : "", comp ? comp : "entry", words);
    o.title = title;
  }
  FxError gerr;
  fx_error_clear(&gerr);
  VizGraph *g = viz_graph_build(m, &o, &gerr);
  if (!g) {
    fx_free(ds);
    /* Point at the option that named what is missing. */
    int at = strstr(gerr.msg, "no computation") ? comp_k : strstr(gerr.msg, "no instruction") ? focus_k : decision_k;
    if (at > 0) return repl_arg_error(s, err, at, "%s", gerr.msg);
    *err = gerr;
    locate(s, err, 0);
    return false;
  }
  VizRenderer *r = fmt == VIZ_DOT ? NULL : renderer(err);
  if (fmt != VIZ_DOT && !r) {
    viz_graph_free(g);
    fx_free(ds);
    return false;
  }
  char path[1200], shown[600];
  bool to_stdout = file && strcmp(file, "-") == 0;
  if (file) {
    snprintf(path, sizeof path, "%s", file);
    snprintf(shown, sizeof shown, "%s", file);
  } else {
    char base[300], part[200];
    safe_name(base, sizeof base, m->name ? m->name : "module");
    int len = 0;
    if (decision) len = snprintf(shown, sizeof shown, "%s.decision%ld", base, decision);
    else len = snprintf(shown, sizeof shown, "%s.stage%d", base, stage);
    if (o.computation && !decision) {
      safe_name(part, sizeof part, o.computation);
      len += snprintf(shown + len, sizeof shown - (size_t)len, ".%s", part);
    }
    if (focus && !decision) {
      safe_name(part, sizeof part, focus);
      len += snprintf(shown + len, sizeof shown - (size_t)len, ".%s", part);
    }
    if (collapse) len += snprintf(shown + len, sizeof shown - (size_t)len, ".collapsed");
    snprintf(shown + len, sizeof shown - (size_t)len, ".%s", viz_format_name(fmt));
    default_path(path, sizeof path, shown);
  }
  bool ok;
  if (to_stdout) {
    char *data;
    size_t len;
    ok = viz_render_interruptible(r, g, fmt, &data, &len, s->interrupted, err);
    if (ok) {
      fwrite(data, 1, len, s->out);
      fx_free(data);
    }
  } else {
    /* Laid out where Ctrl-C can stop it, then written. */
    char *data;
    size_t len;
    ok = viz_render_interruptible(r, g, fmt, &data, &len, s->interrupted, err);
    if (ok) {
      FILE *f = fopen(path, "wb");
      if (!f) {
        ok = fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", path, strerror(errno));
      } else {
        bool w = fwrite(data, 1, len, f) == len;
        if (fclose(f) != 0 || !w) ok = fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", path, strerror(errno));
      }
      fx_free(data);
    }
  }
  if (!ok) {
    viz_graph_free(g);
    fx_free(ds);
    locate(s, err, file_k);
    return false;
  }
  const VizGraphStats *st = viz_graph_stats(g);
  if (s->json && !to_stdout) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "file", shown);
    json_kv_str(&w, "format", viz_format_name(fmt));
    json_kv_int(&w, "stage", stage);
    json_kv_str(&w, "computation", o.computation ? o.computation : (m->entry ? m->entry->name : NULL));
    json_kv_int(&w, "nodes", st->nodes);
    json_kv_int(&w, "clusters", st->clusters);
    json_kv_int(&w, "memory_edges", st->memory_edges);
    json_kv_int(&w, "register_edges", st->register_edges);
    json_kv_int(&w, "refused_edges", st->refused_edges);
    json_kv_int(&w, "refused_hidden", st->refused_hidden);
    json_kv_int(&w, "hidden", st->hidden);
    json_kv_bool(&w, "plain", st->plain);
    json_kv_str(&w, "layout", viz_layout_name(st->layout));
    json_kv_str(&w, "layout_reason", st->layout_reason[0] ? st->layout_reason : NULL);
    json_kv_int(&w, "unconnected", st->unconnected);
    json_object_end(&w);
    fputc('\n', s->out);
  } else if (!to_stdout) {
    fprintf(s->out, "wrote %s: ", shown);
    if (decision) {
      fprintf(s->out, "decision #%ld (stage %d, %s %s)", decision, o.decision->stage, o.decision->pass,
              o.decision->accepted ? "accepted" : "rejected");
    } else {
      fprintf(s->out, "stage %d (%s), %s%s", stage, explain_engine_stage_pass(&s->eng, stage), o.computation ? "computation " : "entry ",
              o.computation ? o.computation : (m->entry ? m->entry->name : "?"));
    }
    fprintf(s->out, ": %d node%s", st->nodes, st->nodes == 1 ? "" : "s");
    if (st->clusters) fprintf(s->out, " in %d fusion%s", st->clusters, st->clusters == 1 ? "" : "s");
    fprintf(s->out, "; %d value%s in memory, %d in registers", st->memory_edges, st->memory_edges == 1 ? "" : "s",
            st->register_edges);
    if (st->refused_edges && st->refused_hidden)
      fprintf(s->out, "; %d refused candidates (%d drawn)", st->refused_edges + st->refused_hidden, st->refused_edges);
    else if (st->refused_edges)
      fprintf(s->out, "; %d refused candidate%s", st->refused_edges, st->refused_edges == 1 ? "" : "s");
    if (st->hidden) fprintf(s->out, "; %d of %d not drawn", st->hidden, st->total);
    if (st->plain) fprintf(s->out, " (large: drawn without edge labels)");
    fputc('\n', s->out);
    if (st->layout_chosen && fmt != VIZ_DOT) {
      fprintf(s->out, "  laid out with sfdp, Graphviz's large-graph layout: %s", st->layout_reason);
      if (st->unconnected) fprintf(s->out, "; %d nodes without edges left out", st->unconnected);
      fputc('\n', s->out);
    }
  }
  viz_graph_free(g);
  fx_free(ds);
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
  const char *file = argv[1];
  VizRenderer *r = renderer(err);
  if (!r) return false;
  int n = s->eng.nstages, nds = 0;
  char *html = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&html, &len);
  bool ok = mem && viz_engine_report(mem, r, &s->eng, s->interrupted, progress_line(s) ? report_progress : NULL, s,
                                     &nds, err);
  if (mem) fclose(mem);
  if (ok) {
    FILE *f = fopen(file, "wb");
    if (!f) {
      ok = repl_arg_error(s, err, 1, "cannot write %s: %s", file, strerror(errno));
    } else {
      bool w = fwrite(html, 1, len, f) == len;
      if (fclose(f) != 0 || !w) ok = repl_arg_error(s, err, 1, "cannot write %s: %s", file, strerror(errno));
    }
  }
  if (ok) {
    const Pipeline *pl = s->eng.pipeline;
    fprintf(s->out, "wrote %s: %d stage%s, %d decision%s, %zu bytes", file, n, n == 1 ? "" : "s", nds,
            nds == 1 ? "" : "s", len);
    if (pl && n - 1 < pl->npasses)
      fprintf(s->out, " (the %s pipeline has %d passes: `step all` first to include them all)", pl->name, pl->npasses);
    fputc('\n', s->out);
  }
  free(html);
  if (!ok) locate(s, err, 0);
  return ok;
}

/* ---------- show graph ---------- */

typedef struct {
  Session *s;
  ExplainStageView *view;
} EdgeTagCtx;

/* "#13 reduce_epilogue": the decision at the boundary between the two kernels. */
static bool edge_tag(void *ctx, const IrInstr *from, const IrInstr *to, char *buf, size_t n) {
  EdgeTagCtx *c = ctx;
  const PlanKernel *kf = explain_view_kernel(c->view, from), *kt = explain_view_kernel(c->view, to);
  if (!kf || !kt || kf == kt) return false;
  ExplainBoundary bd;
  explain_boundary(c->view, kf, kt, &bd);
  if (!bd.decision) {
    /* No pass judged the pair because the producer is a library kernel fusion never opens: say
     * that (once a fusion pass has run; before, nothing has been judged at all). */
    char lb[160];
    if (kf->kind != KERNEL_LIBRARY || strncmp(bd.none, "no ", 3) == 0) return false;
    snprintf(buf, n, "(%s output: never fused)", explain_kernel_label(kf, lb, sizeof lb));
    return true;
  }
  const char *reason = bd.decision->reason ? bd.decision->reason : (bd.decision->accepted ? "accepted" : "rejected");
  /* A library call is named as what it is (cuBLAS matmul, cuDNN convolution), not "custom call". */
  const PlanKernel *lib = kf->kind == KERNEL_LIBRARY ? kf : kt->kind == KERNEL_LIBRARY ? kt : NULL;
  char lb[160];
  if (lib && strcmp(reason, "custom_call") == 0)
    snprintf(buf, n, "#%d %s: %s", explain_record_number(c->s->eng.log, bd.decision), reason,
             explain_kernel_label(lib, lb, sizeof lb));
  else snprintf(buf, n, "#%d %s", explain_record_number(c->s->eng.log, bd.decision), reason);
  return true;
}

static bool cmd_show_graph(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_need_input(s, err)) return false;
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  const IrModule *m = s->eng.stages[s->eng.cur].module;
  const KernelPlan *p = explain_engine_plan(&s->eng, s->eng.cur, err);
  if (!p) return false;
  VizKernelNumbers *kn = fx_calloc((size_t)p->nkernels + 1, sizeof *kn);
  if (!kn) return viz_error(s, err, "out of memory");
  for (int k = 0; k < p->nkernels; k++)
    kn[k] = (VizKernelNumbers){p->kernels[k].name, p->kernels[k].bytes_read, p->kernels[k].bytes_written,
                               p->kernels[k].launches, p->kernels[k].est_us};
  /* Each value crossing kernels is tagged with the decision that kept it in memory. */
  ExplainStageView *view = s->eng.log ? explain_view_new(s->eng.log, s->eng.cur, m, p) : NULL;
  EdgeTagCtx tc = {s, view};
  VizNumbers nums = {kn, p->nkernels, view ? edge_tag : NULL, &tc};
  FxError terr;
  fx_error_clear(&terr);
  bool ok = viz_text_graph(s->out, m, argc == 2 ? argv[1] : NULL, &nums, 100, &terr);
  explain_view_free(view);
  if (ok && argc == 1) repl_xla_kernel_sources(s, m, p); /* where each kernel came from (cmd_xla.c) */
  fx_free(kn);
  if (!ok) return repl_arg_error(s, err, 1, "%s", terr.msg);
  return ok;
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

/* render.c — lays out a built picture with Graphviz (dot, or sfdp for a large picture: the engine
 * viz_graph_build chose) and renders it (libgvc), in memory or to a file.
 *
 * One GVC_t lives for the whole session (creating it loads Graphviz's plugin configuration, which
 * is slow), as Graphviz's own examples do. DOT text is written straight from the graph with
 * agwrite: it needs no layout, so it is fast and byte-for-byte deterministic. Graphviz reports
 * problems through its error callback; they are collected here and returned as an FxError. */
#include <errno.h>
#include <gvc.h>
#include <stdlib.h>
#include <string.h>

#include "viz_internal.h"

struct VizRenderer {
  GVC_t *gvc;
};

/* One Graphviz context for the whole process, made by the first renderer and kept until exit.
 * Graphviz's pango text-layout plugin (2.43) remembers the last font it measured by a pointer
 * into the context's font table: after gvFreeContext, a layout in a new context would compare
 * against freed memory. Keeping one context avoids that, and is what a session wants anyway. */
static GVC_t *the_gvc;

/* Graphviz, and the font libraries its cairo/pango renderers load, keep some memory for the
 * life of the process (the plugin configuration, fontconfig's caches, a few of dot's own
 * layout records). LeakSanitizer would report them at exit; they are not fxplain's leaks. The
 * sanitizer runtime asks the program for this list; without a sanitizer it is never called.
 * Graphviz is built without frame pointers, so with the sanitizer's fast unwinder a leak inside
 * dot's layout shows only Graphviz's own allocator (libgvc's gmalloc) as its caller: hence the
 * libgvc line. fxplain's memory never goes through that allocator. */
/* The suppression table is expected, not news: don't print it after every run (it would land in
 * the output of every command and script run under the sanitizers). */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "print_suppressions=0"; }

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libfontconfig.so\n"
         "leak:libpango\n"
         "leak:libcairo.so\n"
         "leak:libglib-2.0.so\n"
         "leak:libgobject-2.0.so\n"
         "leak:libgvplugin_\n"
         "leak:libgvc.so\n"
         "leak:gvconfig\n"
         "leak:gvLayoutJobs\n"
         "leak:gvRenderJobs\n";
}

static char gv_errors[512];

static int capture_error(char *msg) {
  /* Keep the first error (later ones are usually consequences); warnings are dropped. */
  if (!gv_errors[0] && msg && strncmp(msg, "Warning", 7) != 0) {
    snprintf(gv_errors, sizeof gv_errors, "%s", msg);
    size_t n = strlen(gv_errors);
    while (n && (gv_errors[n - 1] == '\n' || gv_errors[n - 1] == ' ')) gv_errors[--n] = 0;
  }
  return 0;
}

bool viz_format_lookup(const char *name, VizFormat *out) {
  static const char *names[] = {"svg", "png", "pdf", "dot"};
  for (int k = 0; k < 4; k++)
    if (strcmp(name, names[k]) == 0) {
      *out = (VizFormat)k;
      return true;
    }
  return false;
}

const char *viz_format_name(VizFormat f) {
  switch (f) {
    case VIZ_SVG: return "svg";
    case VIZ_PNG: return "png";
    case VIZ_PDF: return "pdf";
    case VIZ_DOT: return "dot";
  }
  return "svg";
}

VizRenderer *viz_renderer_new(FxError *err) {
  VizRenderer *r = fx_calloc(1, sizeof *r);
  if (!r) {
    fx_error_set(err, NULL, 0, 0, "out of memory starting Graphviz");
    return NULL;
  }
  agseterrf(capture_error);
  if (!the_gvc) the_gvc = gvContext();
  r->gvc = the_gvc;
  if (!r->gvc) {
    fx_free(r);
    fx_error_set(err, NULL, 0, 0, "could not start Graphviz (gvContext failed)");
    return NULL;
  }
  return r;
}

void viz_renderer_free(VizRenderer *r) {
  /* The context itself stays for the process (see the_gvc). */
  fx_free(r);
}

static bool write_dot(VizGraph *g, char **data, size_t *len, FxError *err) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) return fx_error_set(err, NULL, 0, 0, "out of memory writing DOT text");
  int rc = agwrite(g->g, f);
  if (fclose(f) != 0 || rc != 0) {
    free(buf); /* open_memstream's buffer comes from malloc */
    return fx_error_set(err, NULL, 0, 0, "could not write the DOT text");
  }
  *data = fx_malloc(n + 1);
  if (!*data) {
    free(buf);
    return fx_error_set(err, NULL, 0, 0, "out of memory writing DOT text");
  }
  memcpy(*data, buf, n);
  (*data)[n] = 0;
  *len = n;
  free(buf);
  return true;
}

bool viz_layout_graph(VizRenderer *r, VizGraph *g, FxError *err) {
  const char *engine = g->stats.layout == VIZ_LAYOUT_SFDP ? "sfdp" : "dot";
  /* Only a picture forced to dot gets here this large (AUTO takes sfdp past VIZ_DOT_MAX_NODES). */
  if (g->stats.layout != VIZ_LAYOUT_SFDP && g->stats.nodes > VIZ_MAX_LAYOUT_NODES)
    return fx_error_set(err, NULL, 0, 0,
                        "%d nodes are too many for dot to lay out in reasonable time (the limit is %d): leave "
                        "the layout to auto or sfdp, draw a neighbourhood with --focus NAME --depth D, or one node "
                        "per kernel with --collapse at a fused stage; --format dot writes the whole graph",
                        g->stats.nodes, VIZ_MAX_LAYOUT_NODES);
  gv_errors[0] = 0;
  agseterrf(capture_error);
  if (gvLayout(r->gvc, g->g, engine) != 0)
    return fx_error_set(err, NULL, 0, 0, "Graphviz could not lay out the graph%s%s", gv_errors[0] ? ": " : "",
                        gv_errors);
  return true;
}

bool viz_render_laid_out(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len, FxError *err) {
  *data = NULL;
  *len = 0;
  char *out = NULL;
  unsigned int n = 0;
  gv_errors[0] = 0;
  int rc = gvRenderData(r->gvc, g->g, viz_format_name(f), &out, &n);
  bool ok = rc == 0 && out;
  if (ok) {
    *data = fx_malloc((size_t)n + 1);
    if (*data) {
      memcpy(*data, out, n);
      (*data)[n] = 0;
      *len = n;
    } else {
      ok = false;
      fx_error_set(err, NULL, 0, 0, "out of memory rendering the picture");
    }
  } else {
    fx_error_set(err, NULL, 0, 0, "Graphviz could not render %s%s%s", viz_format_name(f), gv_errors[0] ? ": " : "",
                 gv_errors);
  }
  if (out) gvFreeRenderData(out);
  return ok;
}

void viz_free_layout(VizRenderer *r, VizGraph *g) { gvFreeLayout(r->gvc, g->g); }

bool viz_render(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len, FxError *err) {
  *data = NULL;
  *len = 0;
  if (f == VIZ_DOT) return write_dot(g, data, len, err);
  if (!viz_layout_graph(r, g, err)) return false;
  bool ok = viz_render_laid_out(r, g, f, data, len, err);
  viz_free_layout(r, g);
  return ok;
}

bool viz_render_file(VizRenderer *r, VizGraph *g, VizFormat f, const char *path, FxError *err) {
  char *data;
  size_t len;
  if (!viz_render(r, g, f, &data, &len, err)) return false;
  FILE *out = fopen(path, "wb");
  if (!out) {
    fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", path, strerror(errno));
    fx_free(data);
    return false;
  }
  size_t w = fwrite(data, 1, len, out);
  int rc = fclose(out);
  fx_free(data);
  if (w != len || rc != 0) return fx_error_set(err, NULL, 0, 0, "cannot write %s: %s", path, strerror(errno));
  return true;
}

/* viz_internal.h — helpers shared by viz's files (not part of viz's interface): a growable text
 * buffer, byte and shape formatting, HTML escaping, the cgraph graph handle. */
#ifndef FXPLAIN_VIZ_INTERNAL_H
#define FXPLAIN_VIZ_INTERNAL_H

#include <cgraph.h>

#include "viz.h"

/* A growable NUL-terminated string in fx_malloc'd memory. `failed` sticks after an allocation
 * failure; the text is then incomplete and callers report it once. */
typedef struct {
  char *s;
  size_t len, cap;
  bool failed;
} VizBuf;

void vbuf_puts(VizBuf *b, const char *s);
void vbuf_putn(VizBuf *b, const char *s, size_t n);
void vbuf_printf(VizBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s with &, <, >, " escaped (HTML text and attribute values). */
void vbuf_html(VizBuf *b, const char *s);
/* before, then s escaped as vbuf_html does, then after: markup around a user's text. */
void vbuf_html_between(VizBuf *b, const char *before, const char *s, const char *after);
void vbuf_free(VizBuf *b);
/* Empties the buffer, keeping its memory. */
static inline void vbuf_reset(VizBuf *b) {
  b->len = 0;
  if (b->s) b->s[0] = 0;
}
/* Returns the text ("" when empty) — valid until the next append. */
const char *vbuf_str(const VizBuf *b);

/* "12 B", "4.0 KiB", "1.5 MiB", "2.0 GiB" into out. */
void viz_fmt_bytes(int64_t bytes, char *out, size_t n);
/* The shape without layout, shortened to at most max characters (with "…"). */
void viz_fmt_shape(const IrShape *s, char *out, size_t n, size_t max);

struct VizGraph {
  Agraph_t *g;
  VizGraphStats stats;
};

/* render.c: the steps of viz_render, for render_batch.c. viz_layout_graph lays g out with its
 * engine (false with err filled when Graphviz cannot, or dot is forced on too many nodes);
 * viz_render_laid_out renders the laid-out g (any number of times); viz_free_layout frees the
 * layout. */
bool viz_layout_graph(VizRenderer *r, VizGraph *g, FxError *err);
bool viz_render_laid_out(VizRenderer *r, VizGraph *g, VizFormat f, char **data, size_t *len, FxError *err);
void viz_free_layout(VizRenderer *r, VizGraph *g);

/* agopen for a picture (util.c): a directed graph whose subgraphs (the clusters) iterate, are
 * written and are laid out in the order they were made, the same in every run. */
Agraph_t *viz_agopen(const char *name);

/* The instructions of c that are live. */
static inline bool viz_live(const IrInstr *i) { return i && !i->dead; }

/* report.c: a page being written whose pictures are laid out at the end, all at once (see
 * viz_render_batch): the text, and each picture with the place it goes and its stage. */
typedef struct {
  VizBuf text;
  VizBatchItem *items;
  size_t *at;
  int *stage;
  int n, cap;
} VizPage;
/* Puts picture g (the page owns it now) at the end of the text. False when out of memory (g is
 * freed). */
bool viz_page_picture(VizPage *p, VizGraph *g, int stage);
void viz_page_free(VizPage *p);

/* report_xla.c: the report's step-by-step view of XLA's priority-fusion decisions (a stage's
 * xla_steps), each step's picture drawn on `before` (the module priority-fusion received) and the
 * steps as JSON, and its style and script (inlined once per page). False with err filled when out
 * of memory or interrupted. */
bool viz_report_xla_steps(VizPage *page, const VizStage *st, const IrModule *before, int stage,
                          const VizReportOptions *o, FxError *err);
extern const char *const viz_report_xla_css;
extern const char *const viz_report_xla_js;

#endif

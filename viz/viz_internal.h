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

/* The instructions of c that are live. */
static inline bool viz_live(const IrInstr *i) { return i && !i->dead; }

/* report_xla.c: the report's step-by-step view of XLA's priority-fusion decisions (a stage's
 * xla_steps), each step's picture drawn on `before` (the module priority-fusion received) and the
 * steps as JSON, and its style and script (inlined once per page). False with err filled when out
 * of memory or interrupted. */
bool viz_report_xla_steps(VizBuf *b, VizRenderer *r, const VizStage *st, const IrModule *before, int stage,
                          const VizReportOptions *o, FxError *err);
extern const char *const viz_report_xla_css;
extern const char *const viz_report_xla_js;

#endif

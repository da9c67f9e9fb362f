/* status.c — filling and printing located error records. */
#include "status.h"

#include <stdarg.h>
#include <string.h>

void fx_error_clear(FxError *e) { memset(e, 0, sizeof *e); }

bool fx_error_set(FxError *e, const char *file, int line, int col, const char *fmt, ...) {
  if (!e || e->set) return false;
  e->set = true;
  snprintf(e->file, sizeof e->file, "%s", file ? file : "");
  e->line = line;
  e->col = col;
  e->source[0] = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return false;
}

void fx_error_set_source(FxError *e, const char *text, int line) {
  if (!e || !text || line < 1) return;
  const char *p = text;
  for (int l = 1; l < line && *p; p++)
    if (*p == '\n') l++;
  size_t n = strcspn(p, "\n");
  if (n >= sizeof e->source) n = sizeof e->source - 1;
  memcpy(e->source, p, n);
  e->source[n] = 0;
  /* Keep the printed line on one terminal line and free of control bytes. */
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)e->source[i] < 0x20 && e->source[i] != '\t') e->source[i] = '?';
}

void fx_error_print(FILE *f, const FxError *e) {
  if (e->file[0]) {
    fprintf(f, "%s:", e->file);
    if (e->line > 0) fprintf(f, "%d:", e->line);
    if (e->line > 0 && e->col > 0) fprintf(f, "%d:", e->col);
    fputc(' ', f);
  }
  fprintf(f, "error: %s\n", e->msg);
  if (e->source[0] && e->line > 0) {
    fprintf(f, "  %s\n", e->source);
    if (e->col > 0) {
      fputs("  ", f);
      for (int i = 1; i < e->col && e->source[i - 1]; i++) fputc(e->source[i - 1] == '\t' ? '\t' : ' ', f);
      fputs("^\n", f);
    }
  }
}

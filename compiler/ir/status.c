/* status.c — filling and printing located error records, and the helpers every error message
 * needs: a word made printable and a whole file read (with the error when it cannot be). */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "arena.h"
#include <string.h>

void fx_error_clear(FxError *e) { memset(e, 0, sizeof *e); }

bool fx_error_set(FxError *e, const char *file, int line, int col, const char *fmt, ...) {
  if (!e || e->set) return false;
  e->set = true;
  snprintf(e->file, sizeof e->file, "%s", file ? file : "");
  e->line = line;
  e->col = col;
  e->source[0] = 0;
  e->caret = 0;
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
  fx_error_source_window(e, p, strcspn(p, "\n"));
}

void fx_error_source_window(FxError *e, const char *p, size_t n) {
  if (!e || !p) return;
  const size_t cap = sizeof e->source - 1;
  size_t from = 0, len = n;
  bool cut_end = false;
  e->caret = 0;
  if (n > cap) {
    /* An HLO line with its metadata runs to hundreds of columns: keep the column the error names
     * in view, with some of what leads up to it, and say where the line was cut. */
    size_t at = e->col > 0 ? (size_t)e->col - 1 : 0;
    if (at + 40 > cap - 3) from = at > 80 ? at - 80 : 0;
    while (from > 0 && from < n && ((unsigned char)p[from] & 0xC0) == 0x80) from++; /* not inside a UTF-8 character */
    size_t room = cap - (from ? 3 : 0) - 3;
    len = n - from;
    if (len > room) {
      len = room;
      cut_end = true;
      while (len > 0 && ((unsigned char)p[from + len] & 0xC0) == 0x80) len--;
    }
    if (from && e->col > 0) e->caret = (int)(at - from) + 1 + 3;
  }
  size_t o = 0;
  if (from) {
    memcpy(e->source, "...", 3);
    o = 3;
  }
  memcpy(e->source + o, p + from, len);
  o += len;
  if (cut_end) {
    memcpy(e->source + o, "...", 3);
    o += 3;
  }
  e->source[o] = 0;
  /* Keep the printed line on one terminal line and free of control bytes. */
  for (size_t i = 0; i < o; i++)
    if ((unsigned char)e->source[i] < 0x20 && e->source[i] != '\t') e->source[i] = '?';
}

/* Whether byte c of s (at s[k]) is shown as \xNN: C0 controls but tab, DEL, and bytes that are
   not part of valid UTF-8 (a lone 0x9b is CSI to some terminals). */
static int escaped_len(const unsigned char *s, size_t k) {
  unsigned c = s[k];
  if (c == '\t') return 0;
  if (c < 0x20 || c == 0x7f) return 1;
  if (c < 0x80) return 0;
  int ul = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  for (int j = 1; j < ul; j++)
    if ((s[k + (size_t)j] & 0xC0) != 0x80) return 1;
  if (ul == 2 && c == 0xC2 && s[k + 1] < 0xA0) return 1; /* U+0080..U+009F: C1 controls */
  return ul ? -ul : 1; /* negative: a valid sequence of that many bytes */
}

void fx_fputs_printable(FILE *f, const char *text) {
  const unsigned char *s = (const unsigned char *)text;
  for (size_t k = 0; s[k];) {
    int e = escaped_len(s, k);
    if (e == 1) {
      fprintf(f, "\\x%02x", s[k]);
      k++;
    } else if (e < 0) {
      fwrite(s + k, 1, (size_t)-e, f);
      k += (size_t)-e;
    } else {
      fputc(s[k], f);
      k++;
    }
  }
}

/* Every part of an error can hold the user's bytes (a file name, a string from the input, the
   source line), so each is printed with control characters escaped: nothing in an input can send
   a terminal escape sequence. The caret's column counts an escaped byte as its four characters. */
void fx_error_print(FILE *f, const FxError *e) {
  if (e->file[0]) {
    fx_fputs_printable(f, e->file);
    fputc(':', f);
    if (e->line > 0) fprintf(f, "%d:", e->line);
    if (e->line > 0 && e->col > 0) fprintf(f, "%d:", e->col);
    fputc(' ', f);
  }
  fputs("error: ", f);
  fx_fputs_printable(f, e->msg);
  fputc('\n', f);
  if (e->source[0] && e->line > 0) {
    fputs("  ", f);
    fx_fputs_printable(f, e->source);
    fputc('\n', f);
    int col = e->caret > 0 ? e->caret : e->col;
    if (col > 0) {
      fputs("  ", f);
      const unsigned char *s = (const unsigned char *)e->source;
      for (size_t k = 0; k + 1 < (size_t)col && s[k];) {
        int n = escaped_len(s, k);
        if (s[k] == '\t') fputc('\t', f);
        else fputs(n == 1 ? "    " : " ", f); /* a UTF-8 character is one column */
        k += n < 0 ? (size_t)-n : 1;
      }
      fputs("^\n", f);
    }
  }
}

size_t fx_utf8_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || n > avail) return 0;
  for (size_t k = 1; k < n; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0)) return 0; /* overlong, surrogate */
  if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90)) return 0; /* overlong, past U+10FFFF */
  return n;
}

const char *fx_printable(char *buf, size_t n, const char *word) {
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)word;
  if (n == 0) return buf;
  for (size_t i = 0; p[i]; i++) {
    char tmp[8];
    size_t tl;
    unsigned c = p[i];
    size_t ul = fx_utf8_len(p + i, 4); /* valid sequences kept whole (a NUL ends one early) */
    if (ul > 1) {
      memcpy(tmp, p + i, ul);
      tl = ul;
    } else if (c < 0x20 || c == 0x7F || c >= 0x80) {
      tl = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
    } else {
      tmp[0] = (char)c;
      tl = 1;
    }
    if (o + tl + 4 > n) {
      if (o + 4 <= n) memcpy(buf + o, "...", 3), o += 3;
      break;
    }
    memcpy(buf + o, tmp, tl);
    o += tl;
    if (ul > 1) i += ul - 1;
  }
  buf[o < n ? o : n - 1] = 0;
  return buf;
}

char *fx_read_file(const char *path, size_t *len, FxError *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    /* located at the file itself, as compilers do for a file named on the command line */
    char shown[160];
    fx_error_set(err, fx_printable(shown, sizeof shown, path), 0, 0, "cannot open it: %s", strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    char shown[160];
    fx_error_set(err, fx_printable(shown, sizeof shown, path), 0, 0, "cannot open it: it is a directory");
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = fx_malloc(cap);
  while (buf) {
    if (n + 1 >= cap) {
      if (cap >= ((size_t)1 << 30)) {
        fx_free(buf);
        fclose(f);
        fx_error_set(err, NULL, 0, 0, "'%s' is too large (over 1 GiB)", path);
        return NULL;
      }
      char *nb = fx_realloc(buf, cap * 2);
      if (!nb) {
        fx_free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) break;
  }
  bool ioerr = ferror(f);
  fclose(f);
  if (!buf) {
    fx_error_set(err, NULL, 0, 0, "out of memory reading '%s'", path);
    return NULL;
  }
  if (ioerr) {
    fx_free(buf);
    fx_error_set(err, NULL, 0, 0, "cannot read '%s'", path);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

void fx_format_bytes(char *buf, size_t n, double bytes, FxBytesStyle style) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  /* the largest unit, then the decimals of KiB, MiB, GiB, TiB */
  static const struct {
    int top;
    int digits[4];
  } styles[] = {
      [FX_BYTES_SHORT] = {4, {1, 1, 1, 1}},
      [FX_BYTES_PLAN] = {3, {1, 1, 2, 2}},
      [FX_BYTES_RUN] = {3, {1, 2, 2, 2}},
      [FX_BYTES_MIB] = {2, {1, 1, 1, 1}},
  };
  if (bytes < 1024) {
    snprintf(buf, n, "%.0f B", bytes);
    return;
  }
  double v = bytes;
  int u = 0;
  while (v >= 1024.0 && u < styles[style].top) {
    v /= 1024.0; /* exact: a power of two */
    u++;
  }
  snprintf(buf, n, "%.*f %s", styles[style].digits[u - 1], v, unit[u]);
}

void fx_format_time(char *buf, size_t n, double ns, FxTimeStyle style) {
  bool run = style == FX_TIME_RUN;
  if (ns >= 1e9) snprintf(buf, n, run ? "%.3f s" : "%.2f s", ns / 1e9);
  else if (ns >= 1e6) snprintf(buf, n, run ? "%.3f ms" : "%.1f ms", ns / 1e6);
  else snprintf(buf, n, "%.1f us", ns / 1e3);
}

void fx_format_count(char *buf, size_t n, long long v) {
  char raw[32];
  snprintf(raw, sizeof raw, "%lld", v < 0 ? -v : v);
  size_t len = strlen(raw), o = 0;
  if (v < 0 && o + 1 < n) buf[o++] = '-';
  for (size_t k = 0; k < len && o + 1 < n; k++) {
    buf[o++] = raw[k];
    if ((len - k - 1) % 3 == 0 && k + 1 < len && o + 1 < n) buf[o++] = ',';
  }
  buf[o] = 0;
}

int fx_parse_int(const char *s, int base, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, base);
  if (!*s || *end || s[0] == ' ' || s[0] == '\t') return FX_NOT_A_NUMBER;
  if (errno == ERANGE || v < lo || v > hi) return FX_OUT_OF_RANGE;
  *out = v;
  return 0;
}

bool fx_parse_bytes(const char *s, double *out) {
  char *e;
  errno = 0;
  double v = strtod(s, &e), mul = 1;
  if (*e == 'K' || *e == 'k') mul = 1024, e++;
  else if (*e == 'M' || *e == 'm') mul = 1024.0 * 1024, e++;
  else if (*e == 'G' || *e == 'g') mul = 1024.0 * 1024 * 1024, e++;
  if (errno || e == s || *e || v < 0 || v * mul > 1.8e19) return false;
  *out = v * mul;
  return true;
}

/* json.c — the one JSON writer and string escaper: every `--json` output and every JSON file fxplain writes goes through it (see json.h). */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(JsonWriter *w, FILE *f) {
  memset(w, 0, sizeof *w);
  w->f = f;
  w->first[0] = true;
}

/* Called before every value: writes the separating comma and checks a key is present inside an
 * object. Returns false (and marks the writer broken) on misuse. */
static bool before_value(JsonWriter *w) {
  if (w->depth == 0) {
    if (!w->first[0]) {
      /* A second top-level value: keep them on separate lines. */
      if (w->no_newline) fputc('\n', w->f);
    }
    w->first[0] = false;
    return true;
  }
  if (w->is_obj[w->depth]) {
    if (!w->have_key) {
      w->broken = true;
      return false;
    }
    w->have_key = false;
    return true;
  }
  if (!w->first[w->depth]) fputc(',', w->f);
  w->first[w->depth] = false;
  return true;
}

/* Called after a value completes at the outermost level. */
static void after_value(JsonWriter *w) {
  if (w->depth == 0 && !w->no_newline) fputc('\n', w->f);
}

static void open_(JsonWriter *w, bool obj) {
  if (!before_value(w)) return;
  if (w->depth >= JSON_MAX_DEPTH) {
    w->broken = true;
    return;
  }
  fputc(obj ? '{' : '[', w->f);
  w->depth++;
  w->first[w->depth] = true;
  w->is_obj[w->depth] = obj;
}

static void close_(JsonWriter *w, bool obj) {
  if (w->depth == 0 || w->is_obj[w->depth] != obj || w->have_key) {
    w->broken = true;
    return;
  }
  fputc(obj ? '}' : ']', w->f);
  w->depth--;
  after_value(w);
}

void json_object_begin(JsonWriter *w) { open_(w, true); }
void json_object_end(JsonWriter *w) { close_(w, true); }
void json_array_begin(JsonWriter *w) { open_(w, false); }
void json_array_end(JsonWriter *w) { close_(w, false); }

void json_key(JsonWriter *w, const char *key) {
  if (w->depth == 0 || !w->is_obj[w->depth] || w->have_key) {
    w->broken = true;
    return;
  }
  if (!w->first[w->depth]) fputc(',', w->f);
  w->first[w->depth] = false;
  json_write_string(w->f, key ? key : "", key ? strlen(key) : 0);
  fputc(':', w->f);
  w->have_key = true;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it is not valid
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  size_t len;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

void json_write_string(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc((int)c, f);
      i++;
    } else if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default: fprintf(f, "\\u%04x", c); break;
      }
      i++;
    } else if (c < 0x80) {
      fputc((int)c, f);
      i++;
    } else {
      size_t len = utf8_len(p + i, n - i);
      if (len == 0) {
        fputs("\\ufffd", f); /* not UTF-8: one replacement character per bad byte */
        i++;
      } else {
        fwrite(p + i, 1, len, f);
        i += len;
      }
    }
  }
  fputc('"', f);
}

void json_strn(JsonWriter *w, const char *s, size_t n) {
  if (!before_value(w)) return;
  json_write_string(w->f, s, n);
  after_value(w);
}

void json_str(JsonWriter *w, const char *s) {
  if (!s) {
    json_null(w);
    return;
  }
  json_strn(w, s, strlen(s));
}

void json_int(JsonWriter *w, long long v) {
  if (!before_value(w)) return;
  fprintf(w->f, "%lld", v);
  after_value(w);
}

void json_uint(JsonWriter *w, unsigned long long v) {
  if (!before_value(w)) return;
  fprintf(w->f, "%llu", v);
  after_value(w);
}

void json_double(JsonWriter *w, double v) {
  if (!before_value(w)) return;
  if (!isfinite(v)) {
    fputs("null", w->f);
  } else if (v == floor(v) && fabs(v) < 1e15) {
    fprintf(w->f, "%.0f", v == 0 ? 0.0 : v); /* integers print without a fraction; no "-0" */
  } else {
    /* The shortest %g precision that reads back to the same double. */
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
      snprintf(buf, sizeof buf, "%.*g", prec, v);
      if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, w->f);
  }
  after_value(w);
}

void json_bool(JsonWriter *w, bool v) {
  if (!before_value(w)) return;
  fputs(v ? "true" : "false", w->f);
  after_value(w);
}

void json_null(JsonWriter *w) {
  if (!before_value(w)) return;
  fputs("null", w->f);
  after_value(w);
}

void json_raw(JsonWriter *w, const char *json_text) {
  if (!before_value(w)) return;
  fputs(json_text, w->f);
  after_value(w);
}

void json_kv_str(JsonWriter *w, const char *key, const char *v) {
  json_key(w, key);
  json_str(w, v);
}
void json_kv_int(JsonWriter *w, const char *key, long long v) {
  json_key(w, key);
  json_int(w, v);
}
void json_kv_double(JsonWriter *w, const char *key, double v) {
  json_key(w, key);
  json_double(w, v);
}
void json_kv_bool(JsonWriter *w, const char *key, bool v) {
  json_key(w, key);
  json_bool(w, v);
}
void json_kv_null(JsonWriter *w, const char *key) {
  json_key(w, key);
  json_null(w);
}

bool json_done(const JsonWriter *w) { return !w->broken && w->depth == 0 && !w->have_key; }

void json_print_kv_str(FILE *f, const char *key, const char *v) {
  JsonWriter w;
  json_init(&w, f);
  json_object_begin(&w);
  json_kv_str(&w, key, v);
  json_object_end(&w);
}

void json_print_kv_int(FILE *f, const char *key, long long v) {
  JsonWriter w;
  json_init(&w, f);
  json_object_begin(&w);
  json_kv_int(&w, key, v);
  json_object_end(&w);
}

void json_print_kv_bool(FILE *f, const char *key, bool v) {
  JsonWriter w;
  json_init(&w, f);
  json_object_begin(&w);
  json_kv_bool(&w, key, v);
  json_object_end(&w);
}

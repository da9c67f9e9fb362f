/* json.h — a small streaming JSON writer for `--json` output.
 *
 * Every command prints exactly one JSON value per run when the session is in JSON mode. Commands
 * build it with this writer, which handles commas, nesting, string escaping (control characters,
 * quotes, and bytes that are not valid UTF-8, which become U+FFFD) and numbers (NaN and
 * infinities become null, since JSON has no spelling for them). When the outermost value closes
 * the writer ends the line, so each command's output is one newline-terminated line.
 *
 *     JsonWriter w;
 *     json_init(&w, s->out);
 *     json_object_begin(&w);
 *     json_kv_str(&w, "module", m->name);
 *     json_kv_int(&w, "instructions", n);
 *     json_key(&w, "passes");
 *     json_array_begin(&w);
 *     json_str(&w, "dce");
 *     json_array_end(&w);
 *     json_object_end(&w);            // writes {"module":"m","instructions":3,"passes":["dce"]}\n
 *
 * Misuse (a value where a key is needed, nesting deeper than JSON_MAX_DEPTH, unbalanced ends) sets
 * w->broken instead of writing invalid JSON; tests check it stays false. */
#ifndef FXPLAIN_JSON_H
#define FXPLAIN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 64

typedef struct {
  FILE *f;
  int depth;
  bool first[JSON_MAX_DEPTH + 1];  /* no element written yet at this level */
  bool is_obj[JSON_MAX_DEPTH + 1]; /* this level is an object (keys required) */
  bool have_key;                   /* a key was written and waits for its value */
  bool broken;                     /* misuse detected; output so far may be incomplete */
  bool no_newline;                 /* do not end the line when the outermost value closes */
} JsonWriter;

/* Starts a writer on f (stdout, a memstream, ...). It owns nothing. */
void json_init(JsonWriter *w, FILE *f);

void json_object_begin(JsonWriter *w);
void json_object_end(JsonWriter *w);
void json_array_begin(JsonWriter *w);
void json_array_end(JsonWriter *w);
/* The next value's key; only inside an object. */
void json_key(JsonWriter *w, const char *key);

void json_str(JsonWriter *w, const char *s); /* NULL writes null */
void json_strn(JsonWriter *w, const char *s, size_t n);
void json_int(JsonWriter *w, long long v);
void json_uint(JsonWriter *w, unsigned long long v);
void json_double(JsonWriter *w, double v); /* shortest text that reads back the same; NaN/inf: null */
void json_bool(JsonWriter *w, bool v);
void json_null(JsonWriter *w);
/* Writes already-formatted JSON text as one value (the caller vouches for it). */
void json_raw(JsonWriter *w, const char *json_text);

/* key + value in one call. */
void json_kv_str(JsonWriter *w, const char *key, const char *v);
void json_kv_int(JsonWriter *w, const char *key, long long v);
void json_kv_double(JsonWriter *w, const char *key, double v);
void json_kv_bool(JsonWriter *w, const char *key, bool v);
void json_kv_null(JsonWriter *w, const char *key);

/* A whole answer of one member, {"key":value} and its line end, for commands whose JSON form is
 * one value. */
void json_print_kv_str(FILE *f, const char *key, const char *v);
void json_print_kv_int(FILE *f, const char *key, long long v);
void json_print_kv_bool(FILE *f, const char *key, bool v);

/* Writes s as a quoted, escaped JSON string to f (no writer state). */
void json_write_string(FILE *f, const char *s, size_t n);

/* True when every value opened has been closed and nothing went wrong. */
bool json_done(const JsonWriter *w);

#endif

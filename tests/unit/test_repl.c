/* test_repl.c — unit tests for the shell's pieces: the JSON writer, the command-line splitter,
 * and the session's stage bookkeeping. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "../../repl/json.h"
#include "check.h"

/* Runs body with a writer on a memory stream and returns what it wrote (caller frees). */
#define JSON_CAPTURE(out, ok, body)          \
  do {                                       \
    char *buf_ = NULL;                       \
    size_t len_ = 0;                         \
    FILE *f_ = open_memstream(&buf_, &len_); \
    JsonWriter w_;                           \
    json_init(&w_, f_);                      \
    JsonWriter *w = &w_;                     \
    body;                                    \
    ok = json_done(&w_);                     \
    fclose(f_);                              \
    out = buf_;                              \
  } while (0)

TEST(json_object_nesting) {
  char *s;
  bool ok;
  JSON_CAPTURE(s, ok, {
    json_object_begin(w);
    json_kv_str(w, "module", "cartpole");
    json_kv_int(w, "instructions", 42);
    json_key(w, "passes");
    json_array_begin(w);
    json_str(w, "dce");
    json_str(w, "cse");
    json_array_begin(w);
    json_array_end(w);
    json_array_end(w);
    json_kv_bool(w, "changed", false);
    json_kv_null(w, "note");
    json_key(w, "empty");
    json_object_begin(w);
    json_object_end(w);
    json_object_end(w);
  });
  CHECK(ok);
  CHECK_STR(s, "{\"module\":\"cartpole\",\"instructions\":42,\"passes\":[\"dce\",\"cse\",[]],"
               "\"changed\":false,\"note\":null,\"empty\":{}}\n");
  free(s);
}

TEST(json_string_escapes) {
  char *s;
  bool ok;
  JSON_CAPTURE(s, ok, {
    json_str(w, "a\"b\\c\n\t\x01\x7f/é");
  });
  CHECK(ok);
  CHECK_STR(s, "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f/é\"\n");
  free(s);
}

TEST(json_invalid_utf8_replaced) {
  char *s;
  bool ok;
  /* A lone continuation byte, a truncated 3-byte sequence, an overlong '/', a surrogate, 0xFF. */
  JSON_CAPTURE(s, ok, {
    json_str(w, "x\x80y\xE2\x82z\xC0\xAF\xED\xA0\x80\xFF\xF0\x9F\x98\x80");
  });
  CHECK(ok);
  CHECK_STR(s, "\"x\\ufffdy\\ufffd\\ufffdz\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\xF0\x9F\x98\x80\"\n");
  free(s);
}

TEST(json_numbers) {
  char *s;
  bool ok;
  JSON_CAPTURE(s, ok, {
    json_array_begin(w);
    json_double(w, 1.5);
    json_double(w, 0.1);
    json_double(w, 3.0);
    json_double(w, -0.0);
    json_double(w, 1e300);
    json_double(w, 0.0 / 0.0);
    json_double(w, 1.0 / 0.0);
    json_int(w, -9223372036854775807LL - 1);
    json_uint(w, 18446744073709551615ULL);
    json_array_end(w);
  });
  CHECK(ok);
  CHECK_STR(s, "[1.5,0.1,3,0,1e+300,null,null,-9223372036854775808,18446744073709551615]\n");
  free(s);
}

TEST(json_misuse_detected) {
  char *s;
  bool ok;
  JSON_CAPTURE(s, ok, {
    json_object_begin(w);
    json_int(w, 1); /* a value without a key */
    json_object_end(w);
  });
  CHECK(!ok);
  free(s);
  JSON_CAPTURE(s, ok, {
    json_array_begin(w);
    json_object_end(w); /* wrong closer */
  });
  CHECK(!ok);
  free(s);
  JSON_CAPTURE(s, ok, {
    json_object_begin(w);
    json_key(w, "k");
  });
  CHECK(!ok); /* unfinished */
  free(s);
  JSON_CAPTURE(s, ok, {
    for (int i = 0; i < JSON_MAX_DEPTH + 2; i++) json_array_begin(w);
  });
  CHECK(!ok);
  free(s);
}

TEST(json_top_level_values_each_end_a_line) {
  char *s;
  bool ok;
  JSON_CAPTURE(s, ok, {
    json_int(w, 1);
    json_str(w, "two");
    json_object_begin(w);
    json_object_end(w);
  });
  CHECK(ok);
  CHECK_STR(s, "1\n\"two\"\n{}\n");
  free(s);
}

int main(void) {
  RUN(json_object_nesting);
  RUN(json_string_escapes);
  RUN(json_invalid_utf8_replaced);
  RUN(json_numbers);
  RUN(json_misuse_detected);
  RUN(json_top_level_values_each_end_a_line);
  return check_summary();
}

/* test_repl.c — unit tests for the shell's pieces: the JSON writer, the command-line splitter and
 * argument checks, name suggestions, and the session's stage bookkeeping. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "../../compiler/ir/ir.h"
#include "../../repl/args.h"
#include "../../explain/json.h"
#include "../../repl/repl.h"
#include "../../repl/session.h"
#include "../check.h"

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

/* ---------- args ---------- */

TEST(args_split_words_quotes_escapes) {
  ReplArgs a;
  FxError e;
  fx_error_clear(&e);
  CHECK(repl_args_split("  load 'a b'  \"c\\\"d\\n\" e\\ f x''y", 1, &a, &e));
  CHECK(a.argc == 5);
  if (a.argc == 5) {
    CHECK_STR(a.argv[0], "load");
    CHECK_STR(a.argv[1], "a b");
    CHECK_STR(a.argv[2], "c\"d\n");
    CHECK_STR(a.argv[3], "e f");
    CHECK_STR(a.argv[4], "xy");
    CHECK(a.argv[5] == NULL);
    CHECK(a.cols[0] == 3 && a.cols[1] == 8 && a.cols[2] == 15 && a.cols[3] == 24 && a.cols[4] == 29);
  }
  repl_args_free(&a);
  /* Columns are offset by col0 for pieces of a longer line. */
  CHECK(repl_args_split("show hlo", 10, &a, &e));
  CHECK(a.argc == 2 && a.cols[0] == 10 && a.cols[1] == 15 && a.end_col == 18);
  repl_args_free(&a);
  CHECK(repl_args_split("   ", 1, &a, &e));
  CHECK(a.argc == 0 && a.argv && a.argv[0] == NULL);
  repl_args_free(&a);
  CHECK(!e.set);
}

TEST(args_split_unbalanced_quotes) {
  ReplArgs a;
  FxError e;
  fx_error_clear(&e);
  CHECK(!repl_args_split("load 'abc", 1, &a, &e));
  CHECK(e.set && e.col == 6);
  CHECK_CONTAINS(e.msg, "unterminated string");
  fx_error_clear(&e);
  CHECK(!repl_args_split("a 'b' \"c", 5, &a, &e));
  CHECK(e.set && e.col == 11);
}

TEST(split_commands_at_semicolons_outside_quotes) {
  int st[8], ln[8];
  int n = repl_split_commands("echo a; help 'x;y'; show \"a;b\"\\;c;", st, ln, 8);
  CHECK(n == 4);
  CHECK(st[0] == 0 && ln[0] == 6);
  CHECK(st[1] == 7 && ln[1] == 11);
  CHECK(st[2] == 19 && ln[2] == 14);
  CHECK(st[3] == 34 && ln[3] == 0);
  CHECK(repl_split_commands("", st, ln, 8) == 1);
  /* Brackets keep a one-line .fx block together; an unmatched closer does not go negative. */
  n = repl_split_commands("loop 2 carry (s = x) { s = s + 1; s = s * 2 }; out s", st, ln, 8);
  CHECK(n == 2 && ln[0] == 45 && st[1] == 46);
  n = repl_split_commands("echo :) ; echo (a;b)", st, ln, 8);
  CHECK(n == 2 && ln[0] == 8);
  CHECK(repl_split_commands("a\\", st, ln, 8) == 1 && ln[0] == 2);
}

TEST(nearest_names) {
  const char *c[] = {"load", "save", "show", "settings", "step"};
  CHECK_STR(repl_nearest("lod", c, 5), "load");
  CHECK_STR(repl_nearest("setings", c, 5), "settings");
  CHECK_STR(repl_nearest("stpe", c, 5), "step"); /* a swap is one edit */
  CHECK(repl_nearest("frobnicate", c, 5) == NULL);
  CHECK(repl_nearest("x", c, 5) == NULL);
  CHECK_STR(repl_nearest_command("hepl"), "help");
  CHECK(repl_nearest_command("exti") == NULL || strcmp(repl_nearest_command("exti"), "exit") != 0);
}

TEST(printable_words) {
  char buf[32];
  CHECK_STR(fx_printable(buf, sizeof buf, "caf\xc3\xa9"), "caf\xc3\xa9");
  CHECK_STR(fx_printable(buf, sizeof buf, "a\xff" "b\x01"), "a\\xffb\\x01");
  CHECK_STR(fx_printable(buf, 12, "abcdefghijklmnop"), "abcdefgh...");
}

/* The running command's word columns, as the dispatcher sets them. */
static const int cols3[] = {1, 6, 12};

TEST(arg_errors_point_at_words) {
  Session *s = session_new(stdout, stderr);
  CHECK(s != NULL);
  if (!s) return;
  s->input_name = "script.fx";
  s->input_line = 7;
  s->cmd_src = "load a.hlo b.hlo";
  s->arg_cols = cols3;
  s->arg_count = 3;
  s->arg_end_col = 17;
  char *argv[] = {"load", "a.hlo", "b.hlo", NULL};
  FxError e;
  fx_error_clear(&e);
  CHECK(!repl_check_argc(s, 3, argv, 1, 1, &e));
  CHECK_STR(e.file, "script.fx");
  CHECK(e.line == 7 && e.col == 12);
  CHECK_STR(e.msg, "unexpected argument 'b.hlo'; usage: load FILE | DIR [--module NAME|ID]");
  CHECK_STR(e.source, "load a.hlo b.hlo");
  fx_error_clear(&e);
  s->arg_count = 1; /* the line was just "load" */
  CHECK(!repl_check_argc(s, 1, argv, 1, 1, &e));
  CHECK(e.col == 17);
  CHECK_STR(e.msg, "missing argument; usage: load FILE | DIR [--module NAME|ID]");
  s->arg_count = 3;
  long long v = 0;
  char *nums[] = {"x", "12", "99999999999999999999", "0x10", "1e3", "-5", NULL};
  fx_error_clear(&e);
  CHECK(repl_parse_int(s, nums, 1, 0, 100, &v, &e) && v == 12);
  CHECK(repl_parse_int(s, nums, 3, 0, 100, &v, &e) && v == 16);
  CHECK(!repl_parse_int(s, nums, 2, 0, 100, &v, &e));
  CHECK_CONTAINS(e.msg, "out of range");
  CHECK(e.col == 12);
  fx_error_clear(&e);
  CHECK(!repl_parse_int(s, nums, 4, 0, 100, &v, &e));
  CHECK_STR(e.msg, "expected an integer, got '1e3'");
  fx_error_clear(&e);
  CHECK(!repl_parse_int(s, nums, 5, 0, 100, &v, &e));
  CHECK_CONTAINS(e.msg, "out of range");
  double d = 0;
  CHECK(repl_parse_double(s, nums, 4, &d, &e) && d == 1000);
  bool b = false;
  char *bools[] = {"on", "off", "maybe", NULL};
  fx_error_clear(&e);
  CHECK(repl_parse_bool(s, bools, 0, &b, &e) && b);
  CHECK(repl_parse_bool(s, bools, 1, &b, &e) && !b);
  CHECK(!repl_parse_bool(s, bools, 2, &b, &e));
  CHECK_STR(e.msg, "expected on or off, got 'maybe'");
  s->arg_cols = NULL;
  session_free(s);
}

/* ---------- session ---------- */

TEST(session_stages) {
  Session *s = session_new(stdout, stderr);
  CHECK(s != NULL);
  if (!s) return;
  CHECK(explain_engine_module(&s->eng, s->eng.cur) == NULL);
  CHECK(s->eng.pipeline != NULL && strcmp(s->eng.pipeline->name, "classic") == 0);
  CHECK_STR(s->eng.device.name, "rtx2080ti");
  CHECK(s->eng.settings.max_duplication > 0);
  IrModule *m = ir_module_new("m0");
  explain_engine_set_input(&s->eng, m);
  CHECK(explain_engine_module(&s->eng, s->eng.cur) == m && s->eng.nstages == 1 && s->eng.cur == 0);
  CHECK_STR(s->eng.stages[0].pass, "input");
  /* Pretend two passes ran; the second changed nothing and shares the first one's snapshot
   * (dropping it must not free the shared module: ASan would report the double free). */
  s->eng.stages[1] = (ExplainStage){.module = ir_module_clone(m), .pass = "dce", .changed = true};
  s->eng.stages[2] = (ExplainStage){.module = s->eng.stages[1].module, .pass = "cse", .changed = false, .shared = true};
  s->eng.nstages = 3;
  s->eng.cur = 2;
  s->eng.next_pass = 2;
  explain_engine_truncate(&s->eng, 2);
  CHECK(s->eng.nstages == 2 && s->eng.cur == 1 && s->eng.next_pass == 1);
  explain_engine_truncate(&s->eng, 0); /* the input always stays */
  CHECK(s->eng.nstages == 1 && s->eng.cur == 0 && explain_engine_module(&s->eng, s->eng.cur) == m);
  explain_engine_set_input(&s->eng, ir_module_new("m1"));
  CHECK_STR(explain_engine_module(&s->eng, s->eng.cur)->name, "m1");
  session_reset(s);
  CHECK(explain_engine_module(&s->eng, s->eng.cur) == NULL && s->eng.nstages == 0);
  session_free(s);
}

/* ---------- help ---------- */

typedef struct {
  const char *text;
  int missing, hidden_shown, failed_help, undescribed;
  Session *s;
} HelpCheck;

static void check_listed(const ReplCommand *c, void *ctx) {
  HelpCheck *h = ctx;
  char line[512];
  snprintf(line, sizeof line, "\n  %s", c->usage ? c->usage : c->name);
  if (c->summary && !strstr(h->text, line)) {
    fprintf(stderr, "help does not list '%s'\n", c->name);
    h->missing++;
  }
  snprintf(line, sizeof line, "\n  %s ", c->name);
  if (!c->summary && strstr(h->text, line)) h->hidden_shown++;
  /* Every command, view and setting has a usage line and a description of its own (not just the
   * usage repeated): at least a sentence beyond the usage words. */
  size_t ul = c->usage ? strlen(c->usage) : 0;
  if (!c->usage || !c->help || strlen(c->help) < ul + 30) {
    fprintf(stderr, "'%s' has no full description in its help\n", c->name);
    h->undescribed++;
  }
  /* `help NAME` works for every command, hidden ones included. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  h->s->out = f;
  char *argv[] = {"help", (char *)c->name, NULL};
  FxError e;
  fx_error_clear(&e);
  bool ok = repl_command_lookup("help")->run(h->s, 2, argv, &e);
  fclose(f);
  h->s->out = stdout;
  if (!ok || strncmp(buf, "usage: ", 7) != 0) {
    fprintf(stderr, "help %s failed: %s\n", c->name, ok ? buf : e.msg);
    h->failed_help++;
  }
  free(buf);
}

TEST(help_lists_every_visible_command) {
  Session *s = session_new(stdout, stderr);
  if (!s) return;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  s->out = f;
  char *argv[] = {"help", NULL};
  FxError e;
  fx_error_clear(&e);
  CHECK(repl_command_lookup("help")->run(s, 1, argv, &e));
  fclose(f);
  s->out = stdout;
  CHECK_CONTAINS(buf, "\nSession\n");
  CHECK_CONTAINS(buf, "\n  help [CMD]");
  HelpCheck h = {buf, 0, 0, 0, 0, s};
  repl_command_foreach(check_listed, &h);
  CHECK(h.missing == 0);
  CHECK(h.undescribed == 0);
  CHECK(h.hidden_shown == 0);
  CHECK(h.failed_help == 0);
  free(buf);
  session_free(s);
}

int main(void) {
  RUN(json_object_nesting);
  RUN(json_string_escapes);
  RUN(json_invalid_utf8_replaced);
  RUN(json_numbers);
  RUN(json_misuse_detected);
  RUN(json_top_level_values_each_end_a_line);
  RUN(args_split_words_quotes_escapes);
  RUN(args_split_unbalanced_quotes);
  RUN(split_commands_at_semicolons_outside_quotes);
  RUN(nearest_names);
  RUN(printable_words);
  RUN(arg_errors_point_at_words);
  RUN(session_stages);
  RUN(help_lists_every_visible_command);
  return check_summary();
}

/* fuzz_commands.c — libFuzzer target for the shell's command parsing.
 *
 * The input is script text. Every line goes through the splitting and classifying code (`;`
 * pieces, words with quotes and escapes, command lookup, suggestions, printable forms, JSON
 * strings), and then through a real session's runner — the path typed input takes, with its
 * UTF-8 checks, located errors and .fx statements — restricted to commands that only parse and
 * print (help, echo, show, set, reset, quit), so the fuzzer does not write files or run kernels.
 * In the normal build it is linked with tests/fuzz/replay_main.c and replays its seeds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../repl/args.h"
#include "../../explain/json.h"
#include "../../repl/repl.h"
#include "../../repl/session.h"

/* Commands safe to run on arbitrary input: they parse their words and print. */
static bool safe_line(const char *line) {
  static const char *const ok[] = {"help", "echo", "reset", "quit", "exit", "pause", NULL};
  const ReplCommand *c = repl_line_command(line);
  if (!c) return true; /* a .fx statement or an unknown command */
  for (int i = 0; ok[i]; i++)
    if (strcmp(c->name, ok[i]) == 0) return true;
  if (strcmp(c->name, "show") == 0 || strcmp(c->name, "set") == 0) {
    /* Only the core's own views: `show`, `show hlo`, `show settings`, and `set` alone. */
    ReplArgs a;
    FxError e;
    fx_error_clear(&e);
    if (!repl_args_split(line, 1, &a, &e)) return true; /* the split error is the point */
    bool safe = a.argc == 1 || (strcmp(c->name, "show") == 0 &&
                                (strcmp(a.argv[1], "hlo") == 0 || strcmp(a.argv[1], "settings") == 0));
    repl_args_free(&a);
    return safe;
  }
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *null_out;
  if (!null_out) null_out = fopen("/dev/null", "w");
  if (!null_out || size > 1 << 16) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;

  /* The parsing pieces on the whole text (NUL bytes end it, as they end a C string). */
  int n = repl_split_commands(text, NULL, NULL, 0);
  int *st = calloc((size_t)n + 1, sizeof *st), *ln = calloc((size_t)n + 1, sizeof *ln);
  if (st && ln && repl_split_commands(text, st, ln, n) == n) {
    for (int i = 0; i < n; i++) {
      if (st[i] < 0 || ln[i] < 0 || (size_t)(st[i] + ln[i]) > strlen(text)) abort();
      char *piece = strndup(text + st[i], (size_t)ln[i]);
      if (!piece) break;
      ReplArgs a;
      FxError e;
      fx_error_clear(&e);
      if (repl_args_split(piece, st[i] + 1, &a, &e)) {
        for (int w = 0; w < a.argc; w++) {
          char buf[96];
          fx_printable(buf, sizeof buf, a.argv[w]);
          if (strlen(buf) >= sizeof buf) abort();
          if (a.cols[w] < st[i] + 1) abort();
          repl_nearest_command(a.argv[w]);
          json_write_string(null_out, a.argv[w], strlen(a.argv[w]));
        }
        repl_args_free(&a);
      } else if (!e.set || e.col < st[i] + 1) {
        abort(); /* a failed split always says where */
      }
      free(piece);
    }
  }
  free(st);
  free(ln);

  /* A session runs the (safe) lines as typed input. */
  Session *s = session_new(null_out, null_out);
  if (s) {
    Runner r;
    runner_init(&r, s, "<fuzz>", NULL);
    size_t i = 0;
    int lineno = 0;
    while (i < size && !s->quit) {
      const uint8_t *nl = memchr(data + i, '\n', size - i);
      size_t len = nl ? (size_t)(nl - (data + i)) : size - i;
      lineno++;
      char *line = strndup((const char *)data + i, len);
      if (line && strlen(line) == len && safe_line(line)) runner_line(&r, (const char *)data + i, len, lineno);
      else if (line && strlen(line) != len) runner_line(&r, (const char *)data + i, len, lineno); /* NUL: rejected */
      free(line);
      i += len + 1;
    }
    runner_finish(&r);
    session_free(s);
  }
  free(text);
  return 0;
}

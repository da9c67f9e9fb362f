/* script.c — running input line by line: scripts, `-e` text, piped input, and each line typed at
 * the prompt.
 *
 * A line whose first word is a registered command is a command; any other line is a .fx statement
 * (fed to the .fx language, which keeps the definitions in the engine: explain/definitions.c); a line that is
 * neither is an unknown command, answered with the nearest command name. A .fx block that opens a
 * brace continues over the next lines until fx_needs_more says it is closed. Before a command that
 * works on the module, changed .fx definitions are built into a fresh stage 0.
 *
 * Every error is located: the input's name (script path, "<repl>", "<stdin>", "<-e>"), the line,
 * and the column of the word at fault. A failing line leaves the session as it was. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../compiler/ir/ir.h"
#include "../compiler/fx/fx.h"
#include "../compiler/hlo/hlo.h"
#include "args.h"
#include "../explain/format.h"
#include "../explain/json.h"
#include "repl.h"

/* ---------- printing errors ---------- */

void repl_print_error(Session *s, const FxError *e) {
  fflush(s->out);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_key(&w, "error");
    json_object_begin(&w);
    if (e->file[0]) json_kv_str(&w, "file", e->file);
    else json_kv_null(&w, "file");
    json_kv_int(&w, "line", e->line);
    json_kv_int(&w, "col", e->col);
    json_kv_str(&w, "message", e->msg);
    json_object_end(&w);
    json_object_end(&w);
    fflush(s->out);
    return;
  }
  fx_error_print(s->err, e);
  fflush(s->err);
}

/* ---------- telling commands from .fx statements ---------- */

static const char *skip_blanks(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r') p++;
  return p;
}

const ReplCommand *repl_line_command(const char *line) {
  const char *p = skip_blanks(line);
  size_t n = 0;
  while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\r' && p[n] != '\n') n++;
  if (n == 0 || n >= 64) return NULL;
  char word[64];
  memcpy(word, p, n);
  word[n] = 0;
  const ReplCommand *c = repl_command_lookup(word);
  if (!c) return NULL;
  /* `show = x + 1` and `load, b = f(x)` define .fx values named like commands. */
  const char *q = skip_blanks(p + n);
  if ((q[0] == '=' && q[1] != '=') || q[0] == ',') return NULL;
  return c;
}

/* ---------- the .fx definitions ---------- */

bool repl_sync_fx(Session *s, FxError *err) {
  int dropped, was;
  if (!explain_engine_fx_sync(&s->eng, s->input_name, &dropped, &was, err)) return false;
  if (dropped > 0 && !s->json)
    fprintf(s->out, "the .fx definitions changed: the module is rebuilt at stage 0, and the %d computed stage%s "
            "(1 to %d; you were at stage %d) %s dropped; step runs the passes again\n",
            dropped, dropped == 1 ? "" : "s", dropped, was, dropped == 1 ? "was" : "were");
  return true;
}

/* ---------- the pager ---------- */

/* Commands whose output can run to thousands of lines (show graph on Gemma: 2,661). */
static bool pageable(const Session *s, const char *cmd) {
  static const char *const long_output[] = {"show", "decisions", "why", "kernels", "diff", "passes", "help", NULL};
  if (!s->interactive || s->out != stdout || !isatty(STDOUT_FILENO)) return false;
  const char *pager = getenv("PAGER");
  if (pager && (!pager[0] || strcmp(pager, "cat") == 0)) return false;
  for (int k = 0; long_output[k]; k++)
    if (strcmp(cmd, long_output[k]) == 0) return true;
  return false;
}

/* Prints captured output: through $PAGER (else `less -FRX`) when it is taller than the terminal,
 * straight to out otherwise or when the pager cannot start. */
static void page_out(FILE *out, const char *text, size_t len) {
  if (!text || !len) return;
  struct winsize ws;
  int rows = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 ? ws.ws_row : 24;
  size_t lines = 0;
  for (size_t k = 0; k < len; k++) lines += text[k] == '\n';
  if (lines < (size_t)rows) {
    fwrite(text, 1, len, out);
    fflush(out);
    return;
  }
  const char *pager = getenv("PAGER");
  if (!pager || !pager[0]) pager = "less -FRX";
  fflush(out);
  /* Quitting the pager early closes the pipe: that must not end fxplain. */
  void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
  FILE *p = popen(pager, "w");
  if (!p) {
    signal(SIGPIPE, old_pipe);
    fwrite(text, 1, len, out);
    return;
  }
  fwrite(text, 1, len, p);
  pclose(p);
  signal(SIGPIPE, old_pipe);
}

/* ---------- running commands ---------- */

/* Commands that work without a module and so never trigger building the .fx definitions. */
static bool needs_module(const char *name) {
  static const char *const none[] = {"help", "echo", "pause", "quit", "exit", "reset", "load", NULL};
  for (int i = 0; none[i]; i++)
    if (strcmp(name, none[i]) == 0) return false;
  return true;
}

/* Runs the command in `text` (which starts at column col0 of the source line `src`). */
static bool run_command(Session *s, const char *text, const char *src, int line, int col0, FxError *err) {
  ReplArgs a;
  const char *p = skip_blanks(text);
  int pcol = col0 + (int)(p - text);
  /* `echo` takes the rest of the line as it is: narration may contain quotes. */
  if (strncmp(p, "echo", 4) == 0 && (p[4] == 0 || p[4] == ' ' || p[4] == '\t')) {
    const char *rest = skip_blanks(p + 4);
    size_t rl = strlen(rest);
    while (rl > 0 && (rest[rl - 1] == ' ' || rest[rl - 1] == '\t' || rest[rl - 1] == '\r')) rl--;
    a.argc = rl ? 2 : 1;
    a.argv = fx_calloc(3, sizeof *a.argv);
    a.cols = fx_calloc(3, sizeof *a.cols);
    char *buf = fx_malloc(5 + rl + 1);
    if (!a.argv || !a.cols || !buf) {
      fx_free(a.argv);
      fx_free(a.cols);
      fx_free(buf);
      return fx_error_set(err, s->input_name, line, pcol, "out of memory");
    }
    memcpy(buf, "echo", 5);
    memcpy(buf + 5, rest, rl);
    buf[5 + rl] = 0;
    a.argv[0] = buf;
    a.cols[0] = pcol;
    if (rl) {
      a.argv[1] = buf + 5;
      a.cols[1] = col0 + (int)(rest - text);
    }
    a.end_col = col0 + (int)strlen(text);
  } else if (!repl_args_split(text, col0, &a, err)) {
    snprintf(err->file, sizeof err->file, "%s", s->input_name);
    err->line = line;
    fx_error_set_source(err, src, 1);
    return false;
  }
  if (a.argc == 0) {
    repl_args_free(&a);
    return true;
  }
  const ReplCommand *c = repl_command_lookup(a.argv[0]);
  s->cmd_src = src;
  s->arg_cols = a.cols;
  s->arg_count = a.argc;
  s->arg_end_col = a.end_col;
  bool ok = true;
  if (!c) {
    ok = repl_arg_error(s, err, 0, "unknown command '%s'", a.argv[0]);
  } else if (needs_module(c->name) && !repl_sync_fx(s, err)) {
    ok = false;
  }
  if (ok) {
    *s->interrupted = 0;
    FILE *real_out = s->out;
    char *cap = NULL;
    size_t caplen = 0;
    bool paging = !s->json && pageable(s, c->name);
    if (s->json || paging) {
      /* Capture the command's output: in JSON, on success it is its one JSON value (plain text
       * from a command without a JSON form is wrapped), on failure only the error is printed; on
       * a terminal, long output goes through the pager. */
      FILE *m = open_memstream(&cap, &caplen);
      if (m) s->out = m;
    }
    ok = c->run(s, a.argc, a.argv, err);
    if (paging && s->out != real_out) {
      fclose(s->out);
      s->out = real_out;
      page_out(real_out, cap, caplen);
      free(cap);
    } else if (s->out != real_out) {
      fclose(s->out);
      s->out = real_out;
      if (ok) {
        size_t b = 0, e = caplen;
        while (b < e && (cap[b] == ' ' || cap[b] == '\n' || cap[b] == '\t')) b++;
        while (e > b && (cap[e - 1] == ' ' || cap[e - 1] == '\n' || cap[e - 1] == '\t')) e--;
        if (b == e) {
          fputs("{\"ok\":true}\n", real_out);
        } else if (cap[b] == '{' || cap[b] == '[') {
          fwrite(cap + b, 1, e - b, real_out);
          fputc('\n', real_out);
        } else {
          JsonWriter w;
          json_init(&w, real_out);
          json_object_begin(&w);
          json_key(&w, "text");
          json_strn(&w, cap + b, e - b);
          json_object_end(&w);
        }
      }
      free(cap);
    }
    if (!ok && !err->set) {
      if (*s->interrupted) repl_arg_error(s, err, 0, "interrupted");
      else repl_arg_error(s, err, 0, "'%s' failed", c->name);
    }
  }
  if (!ok && !err->file[0]) {
    /* The command said what went wrong but not where: point at the command. */
    snprintf(err->file, sizeof err->file, "%s", s->input_name);
    err->line = line;
    if (err->col <= 0) err->col = a.cols[0];
    fx_error_set_source(err, src, 1);
  }
  s->cmd_src = NULL;
  s->arg_cols = NULL;
  s->arg_count = 0;
  repl_args_free(&a);
  fflush(s->out);
  return ok;
}

/* ---------- the runner ---------- */

void runner_init(Runner *r, Session *s, const char *name, FxError *first_err) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->name = name;
  r->first_err = first_err;
}

bool runner_pending(const Runner *r) { return r->block != NULL; }

void runner_abandon(Runner *r) {
  fx_free(r->block);
  r->block = NULL;
  r->block_len = r->block_cap = 0;
}

/* Reports a failure: prints it, or keeps it for the caller. */
static bool fail(Runner *r, FxError *e) {
  r->failed = true;
  if (r->first_err) {
    if (!r->first_err->set) *r->first_err = *e;
  } else {
    repl_print_error(r->s, e);
  }
  return false;
}

/* Checks that a line is UTF-8 without NUL bytes or control characters (tabs and a final CR are
 * fine); fills e at the first bad byte. */
static bool check_text(Runner *r, const char *line, size_t len, int lineno, FxError *e) {
  const unsigned char *p = (const unsigned char *)line;
  for (size_t i = 0; i < len;) {
    unsigned c = p[i];
    size_t ul = fx_utf8_len(p + i, len - i);
    bool bad = ul == 0 || (c < 0x20 && c != '\t' && c != '\r') || c == 0x7F;
    if (bad) {
      if (c == 0) fx_error_set(e, r->name, lineno, (int)i + 1, "NUL byte in the input");
      else if (c < 0x80) fx_error_set(e, r->name, lineno, (int)i + 1, "control character 0x%02x in the input", c);
      else fx_error_set(e, r->name, lineno, (int)i + 1, "invalid UTF-8 byte 0x%02x in the input", c);
      /* Show the line up to the bad byte only, so the terminal gets nothing undecodable. */
      fx_error_source_window(e, line, i);
      return false;
    }
    i += ul;
  }
  return true;
}

static bool block_append(Runner *r, const char *line, size_t len) {
  size_t need = r->block_len + len + 2;
  if (need > r->block_cap) {
    size_t cap = r->block_cap ? r->block_cap * 2 : 256;
    while (cap < need) cap *= 2;
    char *b = fx_realloc(r->block, cap);
    if (!b) return false;
    r->block = b;
    r->block_cap = cap;
  }
  if (r->block_len) r->block[r->block_len++] = '\n';
  memcpy(r->block + r->block_len, line, len);
  r->block_len += len;
  r->block[r->block_len] = 0;
  return true;
}

/* Runs one unit (a command or a complete .fx statement) of the line `src` at column col0. */
static bool run_unit(Runner *r, const char *unit, const char *src, int lineno, int col0) {
  Session *s = r->s;
  FxError e;
  fx_error_clear(&e);
  s->input_name = r->name;
  s->input_line = lineno;
  const char *p = skip_blanks(unit);
  if (!*p || *p == '#') return true;
  if (repl_line_command(p)) {
    if (!run_command(s, unit, src, lineno, col0, &e)) return fail(r, &e);
    return true;
  }
  if (!fx_is_statement(p)) {
    /* Neither a command nor a statement: most likely a mistyped command. */
    size_t n = strcspn(p, " \t\r");
    char word[64], shown[96];
    bool cut = n >= sizeof word;
    if (cut) n = sizeof word - 4;
    memcpy(word, p, n);
    memcpy(word + n, "...", cut ? 4 : 1);
    if (!cut) word[n] = 0;
    int col = col0 + (int)(p - unit);
    const char *near = repl_nearest_command(word);
    fx_printable(shown, sizeof shown, word);
    if (near)
      fx_error_set(&e, r->name, lineno, col, "unknown command '%s'; did you mean '%s'?", shown, near);
    else
      fx_error_set(&e, r->name, lineno, col, "unknown command '%s'; type 'help' for the list of commands",
                   shown);
    fx_error_set_source(&e, src, 1);
    return fail(r, &e);
  }
  if (!explain_engine_fx_feed(&s->eng, unit, s->input_name, lineno, col0, src, &e)) return fail(r, &e);
  return true;
}

bool runner_line(Runner *r, const char *line, size_t len, int lineno) {
  FxError e;
  fx_error_clear(&e);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
  if (!check_text(r, line, len, lineno, &e)) {
    runner_abandon(r);
    return fail(r, &e);
  }
  /* From here the line has no NUL bytes, so it can be handled as a C string. */
  char *copy = fx_malloc(len + 1);
  if (!copy) {
    fx_error_set(&e, r->name, lineno, 1, "out of memory");
    return fail(r, &e);
  }
  memcpy(copy, line, len);
  copy[len] = 0;
  bool ok = true;
  if (r->block) {
    if (!block_append(r, copy, len)) {
      fx_error_set(&e, r->name, lineno, 1, "out of memory");
      ok = fail(r, &e);
    } else if (!fx_needs_more(r->block)) {
      char *block = r->block;
      r->block = NULL;
      r->block_len = r->block_cap = 0;
      ok = run_unit(r, block, block, r->block_line, 1);
      fx_free(block);
    }
  } else {
    const char *p = skip_blanks(copy);
    if (*p && *p != '#' && !repl_line_command(p) && fx_needs_more(copy)) {
      r->block_line = lineno;
      if (!block_append(r, copy, len)) {
        fx_error_set(&e, r->name, lineno, 1, "out of memory");
        ok = fail(r, &e);
      }
    } else {
      ok = run_unit(r, copy, copy, lineno, 1);
    }
  }
  fx_free(copy);
  return ok;
}

bool runner_pieces(Runner *r, const char *text, int lineno) {
  FxError e;
  fx_error_clear(&e);
  size_t len = strlen(text);
  if (!check_text(r, text, len, lineno, &e)) return fail(r, &e);
  int n = repl_split_commands(text, NULL, NULL, 0);
  int *starts = fx_calloc((size_t)n, sizeof *starts), *lens = fx_calloc((size_t)n, sizeof *lens);
  char *piece = fx_malloc(len + 1);
  if (!starts || !lens || !piece) {
    fx_free(starts);
    fx_free(lens);
    fx_free(piece);
    fx_error_set(&e, r->name, lineno, 1, "out of memory");
    return fail(r, &e);
  }
  repl_split_commands(text, starts, lens, n);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    memcpy(piece, text + starts[i], (size_t)lens[i]);
    piece[lens[i]] = 0;
    bool step = run_unit(r, piece, text, lineno, starts[i] + 1);
    if (!step) {
      ok = false;
      if (r->first_err || !r->s->keep_going) break;
    }
    if (r->s->quit || *r->s->interrupted) break;
  }
  fx_free(starts);
  fx_free(lens);
  fx_free(piece);
  return ok;
}

bool runner_finish(Runner *r) {
  bool ok = true;
  if (r->block) {
    /* The input ended inside a block: let the .fx language say what is missing. */
    char *block = r->block;
    r->block = NULL;
    r->block_len = r->block_cap = 0;
    ok = run_unit(r, block, block, r->block_line, 1);
    fx_free(block);
  }
  if (ok && !r->failed && !r->s->quit) {
    FxError e;
    fx_error_clear(&e);
    if (!repl_sync_fx(r->s, &e)) ok = fail(r, &e);
  }
  return ok && !r->failed;
}

/* The end of an input: an open block is run (after a failure that stops the input, dropped);
 * true when every line succeeded. */
static bool runner_end(Runner *r, bool ok) {
  if (ok || r->s->keep_going) {
    if (!runner_finish(r)) ok = false;
  } else {
    runner_abandon(r);
  }
  return ok && !r->failed;
}

/* ---------- files and streams ---------- */


/* Ctrl-C between the lines of an input: the input stops there, with an error at the line. */
static bool interrupted_at(Runner *r, const char *name, int lineno) {
  FxError e;
  fx_error_clear(&e);
  fx_error_set(&e, name, lineno, 0, "interrupted");
  return fail(r, &e);
}

/* Runs a script's text line by line. */
static bool run_script_text(Session *s, const char *text, size_t len, const char *name, FxError *first_err) {
  Runner r;
  runner_init(&r, s, name, first_err);
  int lineno = 0;
  bool ok = true;
  for (size_t i = 0; i <= len && !s->quit;) {
    if (i == len) break;
    const char *nl = memchr(text + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
    lineno++;
    if (*s->interrupted) {
      ok = interrupted_at(&r, name, lineno);
      break;
    }
    if (!runner_line(&r, text + i, n, lineno)) {
      ok = false;
      if (first_err || !s->keep_going) break;
    }
    i += n + 1;
  }
  return runner_end(&r, ok);
}


bool repl_run_path(Session *s, const char *path, FxError *first_err, bool *is_hlo) {
  FxError e;
  fx_error_clear(&e);
  FxError *err = first_err ? first_err : &e;
  size_t len = 0;
  char *text = fx_read_file(path, &len, err);
  if (!text) {
    if (!first_err) repl_print_error(s, &e);
    return false;
  }
  bool ok;
  bool hlo = explain_is_hlo(path, text, len);
  if (is_hlo) *is_hlo = hlo;
  if (hlo) {
    ok = explain_engine_load_hlo(&s->eng, path, text, len, err);
    fx_free(text);
    ExplainOut o = repl_out(s);
    if (ok) explain_show_loaded(&o, explain_engine_module(&s->eng, s->eng.cur), path, &s->eng.ids);
    else if (!first_err) repl_print_error(s, &e);
    return ok;
  }
  if (s->script_depth >= REPL_MAX_SCRIPT_DEPTH) {
    fx_free(text);
    fx_error_set(err, NULL, 0, 0, "scripts nested too deeply (%d levels) at '%s'", REPL_MAX_SCRIPT_DEPTH, path);
    if (!first_err) repl_print_error(s, &e);
    return false;
  }
  /* A script starts a fresh set of .fx definitions; the old ones come back if it fails before
   * its definitions became the module. */
  ExplainFxSaved saved;
  explain_engine_fx_push(&s->eng, &saved);
  IrModule *old_input = s->eng.nstages > 0 ? s->eng.stages[0].module : NULL;
  const char *old_name = s->input_name;
  int old_line = s->input_line;
  s->script_depth++;
  ok = run_script_text(s, text, len, path, first_err);
  s->script_depth--;
  s->input_name = old_name;
  s->input_line = old_line;
  bool replaced = (s->eng.nstages > 0 ? s->eng.stages[0].module : NULL) != old_input;
  explain_engine_fx_pop(&s->eng, &saved, !ok && !replaced);
  fx_free(text);
  return ok;
}

bool repl_run_stream(Session *s, FILE *f, const char *name) {
  Runner r;
  runner_init(&r, s, name, NULL);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int lineno = 0;
  bool ok = true;
  while (!s->quit && (n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (!runner_line(&r, line, (size_t)n, lineno)) {
      ok = false;
      if (!s->keep_going) break;
    }
    if (*s->interrupted) {
      ok = interrupted_at(&r, name, lineno);
      break;
    }
  }
  free(line);
  return runner_end(&r, ok);
}

bool repl_run_text(Session *s, const char *text, const char *name) {
  Runner r;
  runner_init(&r, s, name, NULL);
  bool ok = true;
  /* Each line of the text is cut into commands at `;`. */
  int lineno = 0;
  for (const char *p = text; !s->quit;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    lineno++;
    char *line = fx_malloc(n + 1);
    if (!line) {
      FxError e;
      fx_error_clear(&e);
      fx_error_set(&e, name, lineno, 1, "out of memory");
      ok = fail(&r, &e);
      break;
    }
    memcpy(line, p, n);
    line[n] = 0;
    bool step = runner_pieces(&r, line, lineno);
    fx_free(line);
    if (!step) {
      ok = false;
      if (!s->keep_going) break;
    }
    if (!nl) break;
    p = nl + 1;
  }
  return runner_end(&r, ok);
}

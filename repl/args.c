/* args.c — command-line splitting and argument checking for the shell's commands (see args.h). */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../compiler/ir/ir.h"

/* ---------- splitting ---------- */

bool repl_args_split(const char *line, int col0, ReplArgs *out, FxError *err) {
  memset(out, 0, sizeof *out);
  size_t n = strlen(line);
  /* At most n/2+1 words; each word's text is no longer than the line. */
  size_t maxw = n / 2 + 2;
  char **argv = fx_calloc(maxw, sizeof *argv);
  int *cols = fx_calloc(maxw, sizeof *cols);
  char *buf = fx_malloc(n + maxw + 1); /* all words, NUL-separated */
  if (!argv || !cols || !buf) {
    fx_free(argv);
    fx_free(cols);
    fx_free(buf);
    return fx_error_set(err, NULL, 0, col0, "out of memory");
  }
  char *w = buf;
  int argc = 0;
  size_t i = 0;
  for (;;) {
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) i++;
    if (i >= n) break;
    argv[argc] = w;
    cols[argc] = col0 + (int)i;
    argc++;
    while (i < n && !(line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) {
      char c = line[i];
      if (c == '\'') {
        size_t q = i++;
        while (i < n && line[i] != '\'') *w++ = line[i++];
        if (i >= n) {
          fx_error_set(err, NULL, 0, col0 + (int)q, "unterminated string: missing closing \"'\"");
          goto fail;
        }
        i++;
      } else if (c == '"') {
        size_t q = i++;
        while (i < n && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < n) {
            char e = line[i + 1];
            if (e == 'n') *w++ = '\n';
            else if (e == 't') *w++ = '\t';
            else if (e == '"' || e == '\\') *w++ = e;
            else {
              *w++ = '\\';
              *w++ = e;
            }
            i += 2;
          } else {
            *w++ = line[i++];
          }
        }
        if (i >= n) {
          fx_error_set(err, NULL, 0, col0 + (int)q, "unterminated string: missing closing '\"'");
          goto fail;
        }
        i++;
      } else if (c == '\\') {
        if (i + 1 < n) {
          *w++ = line[i + 1];
          i += 2;
        } else {
          i++; /* a trailing backslash stands for nothing */
        }
      } else {
        *w++ = c;
        i++;
      }
    }
    *w++ = 0;
  }
  argv[argc] = NULL;
  out->argc = argc;
  out->argv = argv;
  out->cols = cols;
  out->end_col = col0 + (int)n;
  if (argc == 0) fx_free(buf);
  return true;
fail:
  fx_free(argv);
  fx_free(cols);
  fx_free(buf);
  return false;
}

void repl_args_free(ReplArgs *a) {
  if (a->argc > 0) fx_free(a->argv[0]); /* the word buffer starts at argv[0] */
  fx_free(a->argv);
  fx_free(a->cols);
  memset(a, 0, sizeof *a);
}

int repl_split_commands(const char *text, int *starts, int *lens, int max) {
  int count = 0;
  size_t start = 0, i = 0, n = strlen(text);
  char quote = 0;
  int depth = 0;
  for (; i <= n; i++) {
    char c = text[i];
    if (i < n && quote) {
      if (c == '\\' && quote == '"' && i + 1 < n) i++;
      else if (c == quote) quote = 0;
      continue;
    }
    if (i < n && c == '\\') {
      if (i + 1 < n) i++;
      continue;
    }
    if (i < n && (c == '\'' || c == '"')) {
      quote = c;
      continue;
    }
    /* A .fx block written on one line keeps its `;`s: `loop 3 carry (s = x) { s = s + 1; ... }`. */
    if (c == '(' || c == '[' || c == '{') depth++;
    else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
    if (i == n || (c == ';' && depth == 0)) {
      if (count < max) {
        starts[count] = (int)start;
        lens[count] = (int)(i - start);
      }
      count++;
      start = i + 1;
    }
  }
  return count;
}

/* ---------- errors and checks ---------- */

bool repl_arg_error(Session *s, FxError *err, int argi, const char *fmt, ...) {
  if (!err || err->set) return false;
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int col = 0;
  if (s && s->arg_cols && argi >= 0) col = argi < s->arg_count ? s->arg_cols[argi] : s->arg_end_col;
  const char *file = s && s->input_name ? s->input_name : NULL;
  int line = s ? s->input_line : 0;
  fx_error_set(err, file, line, col, "%s", msg);
  if (s && s->cmd_src) fx_error_set_source(err, s->cmd_src, 1);
  return false;
}

bool repl_error_at(Session *s, FxError *err, int argi, const FxError *e) {
  if (e->file[0] && e->line > 0) {
    if (err != e) *err = *e;
    return false;
  }
  FxError copy = *e;
  fx_error_clear(err);
  if (copy.file[0]) return repl_arg_error(s, err, argi, "%s: %s", copy.file, copy.msg);
  return repl_arg_error(s, err, argi, "%s", copy.msg);
}

bool repl_check_argc(Session *s, int argc, char **argv, int min, int max, FxError *err) {
  int nargs = argc - 1;
  if (nargs >= min && (max < 0 || nargs <= max)) return true;
  const ReplCommand *c = repl_command_lookup(argv[0]);
  const char *usage = c && c->usage ? c->usage : argv[0];
  if (nargs < min) return repl_arg_error(s, err, argc, "missing argument; usage: %s", usage);
  char buf[80];
  return repl_arg_error(s, err, max + 1, "unexpected argument '%s'; usage: %s",
                        fx_printable(buf, sizeof buf, argv[max + 1]), usage);
}

bool repl_parse_int(Session *s, char **argv, int argi, long long lo, long long hi, long long *out,
                    FxError *err) {
  const char *w = argv[argi];
  char buf[80];
  int r = fx_parse_int(w, 0, lo, hi, out);
  if (r == FX_NOT_A_NUMBER)
    return repl_arg_error(s, err, argi, "expected an integer, got '%s'", fx_printable(buf, sizeof buf, w));
  if (r == FX_OUT_OF_RANGE)
    return repl_arg_error(s, err, argi, "%s is out of range (%lld to %lld)", fx_printable(buf, sizeof buf, w),
                          lo, hi);
  return true;
}

bool repl_parse_double(Session *s, char **argv, int argi, double *out, FxError *err) {
  const char *w = argv[argi];
  char buf[80];
  errno = 0;
  char *end = NULL;
  double v = strtod(w, &end);
  if (!*w || *end || w[0] == ' ' || w[0] == '\t' || v != v)
    return repl_arg_error(s, err, argi, "expected a number, got '%s'", fx_printable(buf, sizeof buf, w));
  if (errno == ERANGE && (v > 1 || v < -1))
    return repl_arg_error(s, err, argi, "%s is too large", fx_printable(buf, sizeof buf, w));
  if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
    return repl_arg_error(s, err, argi, "%s is not finite", fx_printable(buf, sizeof buf, w));
  *out = v;
  return true;
}

bool repl_parse_bool(Session *s, char **argv, int argi, bool *out, FxError *err) {
  static const char *yes[] = {"on", "true", "yes", "1"}, *no[] = {"off", "false", "no", "0"};
  for (int i = 0; i < 4; i++) {
    if (strcmp(argv[argi], yes[i]) == 0) return *out = true, true;
    if (strcmp(argv[argi], no[i]) == 0) return *out = false, true;
  }
  char buf[80];
  return repl_arg_error(s, err, argi, "expected on or off, got '%s'", fx_printable(buf, sizeof buf, argv[argi]));
}

/* ---------- suggestions ---------- */

/* Optimal string alignment distance (edits: insert, delete, substitute, swap neighbours). */
static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 1000;
  int d[66][66];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

const char *repl_nearest(const char *word, const char *const *cands, int n) {
  const char *best = NULL;
  int bestd = 1000;
  size_t wl = strlen(word);
  for (int i = 0; i < n; i++) {
    int d = edit_distance(word, cands[i]);
    if (d < bestd) bestd = d, best = cands[i];
  }
  /* Close enough: one edit for short words, two for longer ones, never the whole word. */
  int limit = wl <= 4 ? 1 : 2;
  if (!best || bestd > limit || (size_t)bestd >= wl) return NULL;
  return best;
}

typedef struct {
  const char *word;
  const char *best;
  int bestd;
} Nearest;

static void nearest_visit(const ReplCommand *c, void *ctx) {
  Nearest *n = ctx;
  if (!c->summary) return; /* hidden */
  int d = edit_distance(n->word, c->name);
  if (d < n->bestd) n->bestd = d, n->best = c->name;
}

/* Whether a and b differ only in where they put '.', '_' and '-'. */
static bool same_but_separators(const char *a, const char *b) {
  for (;;) {
    while (*a == '.' || *a == '_' || *a == '-') a++;
    while (*b == '.' || *b == '_' || *b == '-') b++;
    if (*a != *b) return false;
    if (!*a) return true;
    a++, b++;
  }
}

const char *repl_nearest_instruction(Session *s, const char *word) {
  if (s->eng.nstages <= 0) return NULL;
  const IrModule *mods[2] = {explain_engine_module(&s->eng, s->eng.cur), explain_engine_module(&s->eng, 0)};
  size_t wl = strlen(word);
  const char *best = NULL;
  int bestd = 1000;
  for (int q = 0; q < 2; q++) {
    const IrModule *m = mods[q];
    if (!m || (q == 1 && m == mods[0])) continue;
    for (int k = 0; k < m->ncomps; k++)
      for (int j = 0; j < m->comps[k]->ninstrs; j++) {
        const char *name = m->comps[k]->instrs[j]->name;
        size_t nl = strlen(name);
        if (nl + 2 < wl || wl + 2 < nl) continue; /* more than two edits apart */
        /* The same name but for its separators (reduce_sum14, reduce_sum.14) comes first. */
        int d = same_but_separators(word, name) ? 0 : edit_distance(word, name);
        if (d < bestd) bestd = d, best = name;
      }
  }
  if (bestd == 0) return best;
  const char *cand[1] = {best};
  return best ? repl_nearest(word, cand, 1) : NULL;
}

const char *repl_nearest_command(const char *word) {
  Nearest n = {word, NULL, 1000};
  repl_command_foreach(nearest_visit, &n);
  const char *cand[1] = {n.best};
  return n.best ? repl_nearest(word, cand, 1) : NULL;
}

ExplainOut repl_out(const Session *s) {
  struct winsize ws;
  int width = s->interactive && !s->json && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0
                  ? ws.ws_col - 1 /* a full last column makes some terminals wrap again */
                  : 0;
  return (ExplainOut){s->out, s->json, width};
}

const IrModule *repl_computed_stage(Session *s, int stage, const char *what, FxError *err) {
  const IrModule *m = repl_need_input(s, err) ? explain_engine_module(&s->eng, stage >= 0 ? stage : s->eng.cur) : NULL;
  char why[400];
  if (m && explain_module_uncomputed(m, why, sizeof why)) return repl_arg_error(s, err, 0, "%s: %s", what, why), NULL;
  return m;
}

bool repl_need_input(Session *s, FxError *err) {
  if (explain_engine_loaded(&s->eng)) return true;
  return repl_arg_error(s, err, 0, "%s", EXPLAIN_NOTHING_LOADED);
}

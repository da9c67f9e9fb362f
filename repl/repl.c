/* repl.c — the interactive shell: GNU Readline with history, tab completion and Ctrl-C.
 *
 * Lines are read with Readline's callback interface, so that a Ctrl-C at the prompt can abandon
 * the line being typed (and an open multi-line block) and give a fresh prompt: the SIGINT handler
 * (main.c) only sets repl_interrupted; the select() loop here sees the interrupted wait and
 * cleans up. While a command runs, Readline is out of the way (the terminal is in its normal
 * mode) and a Ctrl-C sets the same flag, which long-running commands poll.
 *
 * Completion: the first word completes to command names; after `help` to command names; a word
 * starting with '-' to the options the command's usage and help name (`variants --r` -> --run); after
 * `show`/`set` to their views and settings, after commands that take a FILE to paths, and
 * elsewhere to the names of the current module's instructions.
 *
 * History lives in ~/.fxplain_history (or $FXPLAIN_HISTORY; "" or /dev/null turns it off). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "../compiler/ir/ir.h"
#include "../compiler/plan/plan.h"
#include "../compiler/passes/passes.h"
#include "../explain/explain.h"
#include "args.h"
#include "repl.h"

#define HISTORY_MAX 2000

static Session *cur_session;

/* ---------- history ---------- */

static char *history_path(void) {
  const char *env = getenv("FXPLAIN_HISTORY");
  if (env) {
    if (!env[0] || strcmp(env, "/dev/null") == 0) return NULL;
    return strdup(env);
  }
  const char *home = getenv("HOME");
  if (!home || !home[0]) return NULL;
  size_t n = strlen(home) + 32;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/.fxplain_history", home);
  return p;
}

/* ---------- completion ---------- */

typedef struct {
  char **items;
  int n, cap;
} Cands;

static void cands_add(Cands *c, const char *s, const char *prefix) {
  if (strncmp(s, prefix, strlen(prefix)) != 0) return;
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->items[i], s) == 0) return;
  if (c->n == c->cap) {
    int cap = c->cap ? c->cap * 2 : 64;
    char **ni = realloc(c->items, (size_t)cap * sizeof *ni);
    if (!ni) return;
    c->items = ni;
    c->cap = cap;
  }
  char *d = strdup(s);
  if (d) c->items[c->n++] = d;
}

static Cands cands;
static int cands_next;

static void cands_clear(void) {
  for (int i = cands_next; i < cands.n; i++) free(cands.items[i]);
  free(cands.items);
  memset(&cands, 0, sizeof cands);
  cands_next = 0;
}

/* Readline's generator: hands out the prepared candidates (it frees each one). */
static char *gen_cands(const char *text, int state) {
  (void)text;
  (void)state;
  if (cands_next < cands.n) return cands.items[cands_next++];
  return NULL;
}

typedef struct {
  const char *prefix; /* text typed so far */
  const char *hidden_prefix; /* "show-"/"set-": complete the rest of hidden names; NULL: visible commands */
} CmdVisit;

static void visit_cmd(const ReplCommand *c, void *ctx) {
  CmdVisit *v = ctx;
  if (v->hidden_prefix) {
    size_t pl = strlen(v->hidden_prefix);
    if (strncmp(c->name, v->hidden_prefix, pl) == 0 && c->name[pl]) cands_add(&cands, c->name + pl, v->prefix);
  } else if (c->summary) {
    cands_add(&cands, c->name, v->prefix);
  }
}

/* Whether the command's arguments are file names: its usage mentions FILE, PATH or DIR. */
static bool takes_file(const ReplCommand *c) {
  static const char *const names[] = {"load", "save", "render", "report", "source", "export", NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(c->name, names[i]) == 0) return true;
  return c->usage && (strstr(c->usage, "FILE") || strstr(c->usage, "PATH") || strstr(c->usage, "DIR"));
}

/* The values of a usage word: each lowercase alternative of "dot|conv|rng" or "[auto|dot|sfdp]"
 * (a capitalised placeholder is not a value), and for the placeholders that name a vocabulary, its
 * table: CODE (reason codes), PASS, STAGE and a pass NAME (pass names), OP (opcodes), sm_XX
 * (architectures). */
static void usage_values(const char *word, const char *prev, const char *text) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s", word);
  for (char *alt = strtok(buf, "|[]()"); alt; alt = strtok(NULL, "|[]()")) {
    if (strcmp(alt, "CODE") == 0)
      for (int i = 0; i < explain_reason_count(); i++) cands_add(&cands, explain_reason_code(i), text);
    else if (strcmp(alt, "PASS") == 0 || strcmp(alt, "STAGE") == 0 || strcmp(alt, "S") == 0 ||
             (strcmp(alt, "NAME") == 0 && strstr(prev, "pass")))
      for (int i = 0; i < pass_count(); i++) cands_add(&cands, pass_at(i)->name, text);
    else if (strcmp(alt, "OP") == 0)
      for (int i = 0; i < IR_OP_COUNT; i++) cands_add(&cands, ir_op_name((IrOpcode)i), text);
    else if (strcmp(alt, "sm_XX") == 0)
      for (const char *const *w = (const char *const[]){"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", NULL}; *w; w++)
        cands_add(&cands, *w, text);
    else if (alt[0] >= 'a' && alt[0] <= 'z' && strspn(alt, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(alt))
      cands_add(&cands, alt, text);
  }
}

/* Candidates for a word whose values are a fixed list, read from the usage line that documents them
 * (`set vecmath sleef|libm`, `render ... [--layout auto|dot|sfdp]`): the setting's own usage for
 * `set NAME ...`, the word after an option for `--option VALUE`, the command's usage otherwise;
 * `set device` and `pipeline` from their tables. */
static void value_cands(const ReplCommand *c, int nwords, const char *second, const char *last, const char *text) {
  if (strcmp(c->name, "set") == 0 && nwords == 2 && strcmp(second, "device") == 0) {
    for (int i = 0; i < device_count(); i++) cands_add(&cands, device_at(i)->name, text);
    return;
  }
  if (strcmp(c->name, "pipeline") == 0 && nwords == 1) {
    for (int i = 0; i < pipeline_count(); i++) cands_add(&cands, pipeline_at(i)->name, text);
    return;
  }
  char name[96];
  snprintf(name, sizeof name, "set-%.80s", second);
  const ReplCommand *set = strcmp(c->name, "set") == 0 && nwords >= 2 ? repl_command_lookup(name) : NULL;
  const char *usage = set ? set->usage : c->usage;
  char text_u[512], words[32][64], prev[64] = "";
  int n = 0, o = 0;
  for (const char *p = usage ? usage : ""; *p && o + 1 < (int)sizeof text_u; p++) /* `[N | PASS | all]`: one word */
    if (!(*p == ' ' && (p[1] == '|' || (o > 0 && text_u[o - 1] == '|')))) text_u[o++] = *p;
  text_u[o] = 0;
  for (char *w = strtok(text_u, " "); w && n < 32; w = strtok(NULL, " ")) snprintf(words[n++], sizeof words[0], "%s", w);
  for (int k = 0; k + 1 < n; k++) /* `--option VALUE`: the word after the option */
    if (last[0] == '-' && strcmp(words[k] + (words[k][0] == '['), last) == 0) {
      usage_values(words[k + 1], last, text);
      return;
    }
  if (last[0] != '-' && nwords < n && words[nwords][0] != '-' && words[nwords][1] != '-') {
    if (nwords > 0) snprintf(prev, sizeof prev, "%s", words[nwords - 1]);
    usage_values(words[nwords], prev, text);
  }
}

static char **complete(const char *text, int start, int end) {
  (void)end;
  cands_clear();
  rl_attempted_completion_over = 1; /* no file names unless asked for below */
  /* The words before the one being completed. */
  char *head = strndup(rl_line_buffer, (size_t)start);
  if (!head) return NULL;
  ReplArgs a;
  FxError e;
  fx_error_clear(&e);
  int nwords = 0;
  char first[64] = "", second[64] = "", last_word[64] = "";
  if (repl_args_split(head, 1, &a, &e)) {
    nwords = a.argc;
    if (a.argc > 0) snprintf(first, sizeof first, "%s", a.argv[0]);
    if (a.argc > 1) snprintf(second, sizeof second, "%s", a.argv[1]);
    if (a.argc > 0) snprintf(last_word, sizeof last_word, "%s", a.argv[a.argc - 1]);
    repl_args_free(&a);
  }
  free(head);
  const ReplCommand *c = nwords > 0 ? repl_command_lookup(first) : NULL;
  if (nwords == 0) {
    CmdVisit v = {text, NULL};
    repl_command_foreach(visit_cmd, &v);
  } else if (c && strcmp(c->name, "help") == 0 && nwords == 1) {
    CmdVisit v = {text, NULL};
    repl_command_foreach(visit_cmd, &v);
  } else if (c && strcmp(c->name, "show") == 0 && nwords == 1) {
    cands_add(&cands, "hlo", text);
    cands_add(&cands, "settings", text);
    CmdVisit v = {text, "show-"};
    repl_command_foreach(visit_cmd, &v);
  } else if (c && strcmp(c->name, "set") == 0 && nwords == 1) {
    CmdVisit v = {text, "set-"};
    repl_command_foreach(visit_cmd, &v);
  } else if (c && text[0] == '-') {
    /* Options: every --word the command's usage line and help text name. */
    const char *docs[2] = {c->usage, c->help};
    for (int d = 0; d < 2; d++)
      for (const char *p = docs[d]; p && (p = strstr(p, "--")) != NULL;) {
        const char *q = p + 2;
        while ((*q >= 'a' && *q <= 'z') || *q == '-' || *q == '_') q++;
        if (q - p > 2 && q - p < 48) {
          char opt[48];
          snprintf(opt, sizeof opt, "%.*s", (int)(q - p), p);
          cands_add(&cands, opt, text);
        }
        p = q;
      }
    if (cands.n == 0 && takes_file(c)) {
      rl_attempted_completion_over = 0;
      return NULL;
    }
  } else if (c && takes_file(c) && (last_word[0] != '-' || (value_cands(c, nwords, second, last_word, text), !cands.n))) {
    rl_attempted_completion_over = 0; /* Readline's own file-name completion */
    return NULL;
  } else if (text[0] == '/' || text[0] == '.' || text[0] == '~') {
    rl_attempted_completion_over = 0;
    return NULL;
  }
  /* The values a setting or option takes, where they are a fixed list. */
  if (c && cands.n == 0) value_cands(c, nwords, second, last_word, text);
  /* Instruction names of the current module (for every other argument). */
  if (nwords > 0 && cands.n == 0) {
    IrModule *m = cur_session ? explain_engine_module(&cur_session->eng, cur_session->eng.cur) : NULL;
    for (int ci = 0; m && ci < m->ncomps; ci++) {
      IrComputation *comp = m->comps[ci];
      for (int ii = 0; ii < comp->ninstrs; ii++)
        if (!comp->instrs[ii]->dead && comp->instrs[ii]->name) cands_add(&cands, comp->instrs[ii]->name, text);
    }
  }
  if (cands.n == 0) return NULL;
  /* Sorted, so the listing Readline shows is easy to read. */
  for (int i = 1; i < cands.n; i++)
    for (int j = i; j > 0 && strcmp(cands.items[j - 1], cands.items[j]) > 0; j--) {
      char *t = cands.items[j];
      cands.items[j] = cands.items[j - 1];
      cands.items[j - 1] = t;
    }
  cands_next = 0;
  char **m = rl_completion_matches(text, gen_cands);
  cands_clear();
  return m;
}

/* ---------- the loop ---------- */

static char *got_line;
static bool got_any, got_eof;

static void on_line(char *line) {
  got_any = true;
  if (!line) got_eof = true;
  got_line = line;
  /* Readline leaves the terminal while the line is handled: commands run in the normal mode. */
  rl_callback_handler_remove();
}

/* Ctrl-C at the prompt: forget what was typed and start a fresh line. */
static void abandon_input(void) {
  rl_free_line_state();
  rl_callback_sigcleanup();
  rl_cleanup_after_signal();
  rl_callback_handler_remove();
  fputs("^C\n", stdout);
  fflush(stdout);
}

int repl_interactive(Session *s) {
  cur_session = s;
  Runner r;
  runner_init(&r, s, "<repl>", NULL);
  s->input_name = "<repl>";

  rl_readline_name = "fxplain";
  rl_catch_signals = 0; /* our SIGINT handler only sets a flag; the loop below reacts */
  rl_attempted_completion_function = complete;
  rl_completer_word_break_characters = " \t\n\"'(),=[]{}:;";

  char *hist = history_path();
  using_history();
  stifle_history(HISTORY_MAX);
  if (hist) {
    /* Created owner-only before Readline appends to it. */
    int fd = open(hist, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) close(fd);
    read_history(hist);
  }

  if (!s->json) {
    printf("fxplain %s: operator fusion, explained. Type 'help' for the commands, Ctrl-D to leave.\n",
           REPL_VERSION);
    fflush(stdout);
  }
  int lineno = 0;
  while (!s->quit) {
    got_any = got_eof = false;
    got_line = NULL;
    repl_interrupted = 0;
    rl_callback_handler_install(runner_pending(&r) ? "... " : "fx> ", on_line);
    while (!got_any) {
      fd_set fds;
      FD_ZERO(&fds);
      FD_SET(fileno(rl_instream), &fds);
      int n = select(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL);
      if (n < 0) {
        if (errno == EINTR && repl_interrupted) {
          repl_interrupted = 0;
          abandon_input();
          runner_abandon(&r);
          rl_callback_handler_install("fx> ", on_line);
        } else if (errno != EINTR) {
          got_any = got_eof = true;
          rl_callback_handler_remove();
        }
        continue;
      }
      rl_callback_read_char();
    }
    if (got_eof) {
      fputc('\n', stdout);
      break;
    }
    char *line = got_line;
    lineno++;
    if (line[0] && hist) {
      HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
      if (!last || strcmp(last->line, line) != 0) {
        add_history(line);
        append_history(1, hist);
      }
    } else if (line[0]) {
      add_history(line);
    }
    runner_line(&r, line, strlen(line), lineno);
    r.failed = false; /* at the prompt an error is answered and forgotten */
    free(line);
    if (repl_interrupted) {
      /* A Ctrl-C during a command that did not stop early: say so. */
      repl_interrupted = 0;
    }
  }
  runner_abandon(&r);
  if (hist) {
    history_truncate_file(hist, HISTORY_MAX);
    free(hist);
  }
  clear_history();
  cands_clear();
  cur_session = NULL;
  return 0;
}

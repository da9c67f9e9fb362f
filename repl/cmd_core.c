/* cmd_core.c — the core commands of the shell: load, save, show, set, reset, echo, pause, help,
 * quit.
 *
 * `show WHAT` and `set WHAT VALUE` are dispatchers: the views and settings themselves are hidden
 * commands named "show-WHAT" and "set-WHAT" that each command group registers in its own table;
 * `show` (or `show hlo`) is the current stage's HLO text, printed here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../compiler/ir/ir.h"
#include "../compiler/fx/fx.h"
#include "../compiler/hlo/hlo.h"
#include "../runtime/runtime.h"
#include "args.h"
#include "../explain/format.h"
#include "../explain/json.h"
#include "repl.h"

/* ---------- helpers ---------- */

static IrModule *need_module(Session *s, FxError *err) {
  return repl_need_input(s, err) ? explain_engine_module(&s->eng, s->eng.cur) : NULL;
}

/* Names of the hidden commands "PREFIXword", as a sorted list of "word" (plus `extra`, once). */
typedef struct {
  const char *prefix;
  const char *names[128];
  int n;
} SubNames;

static void add_name(SubNames *sn, const char *name) {
  for (int i = 0; i < sn->n; i++)
    if (strcmp(sn->names[i], name) == 0) return;
  if (sn->n < 128) sn->names[sn->n++] = name;
}

static void collect_sub(const ReplCommand *c, void *ctx) {
  SubNames *sn = ctx;
  size_t pl = strlen(sn->prefix);
  if (strncmp(c->name, sn->prefix, pl) == 0 && c->name[pl]) add_name(sn, c->name + pl);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static void sub_names(SubNames *sn, const char *prefix, const char *const *extra) {
  sn->prefix = prefix;
  sn->n = 0;
  for (int i = 0; extra && extra[i]; i++) add_name(sn, extra[i]);
  repl_command_foreach(collect_sub, sn);
  qsort(sn->names, (size_t)sn->n, sizeof sn->names[0], cmp_str);
}

/* Runs the hidden command PREFIX+argv[1] with the words after argv[1] as its arguments. */
static bool dispatch_sub(Session *s, const ReplCommand *sub, int argc, char **argv, FxError *err) {
  char **argv2 = fx_calloc((size_t)argc, sizeof *argv2);
  if (!argv2) return repl_arg_error(s, err, 0, "out of memory");
  argv2[0] = (char *)sub->name;
  for (int i = 2; i < argc; i++) argv2[i - 1] = argv[i];
  const int *cols = s->arg_cols;
  int count = s->arg_count;
  /* Word i of the sub-command is word i+1 of the line, for repl_arg_error. */
  if (cols && count > 1) {
    s->arg_cols = cols + 1;
    s->arg_count = count - 1;
  }
  bool ok = sub->run(s, argc - 1, argv2, err);
  s->arg_cols = cols;
  s->arg_count = count;
  fx_free(argv2);
  return ok;
}

/* ---------- load / save ---------- */

static bool cmd_load(Session *s, int argc, char **argv, FxError *err) {
  bool xla = false;
  bool xla_ok = repl_xla_load(s, argc, argv, err, &xla); /* dump folders, fusion logs (cmd_xla.c) */
  if (xla) return xla_ok;
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  const char *path = argv[1];
  char shown[160];
  fx_printable(shown, sizeof shown, path);
  FILE *f = fopen(path, "rb");
  if (!f) return repl_arg_error(s, err, 1, "cannot open '%s': %s", shown, strerror(errno));
  struct stat st;
  bool dir = fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode);
  fclose(f);
  if (dir) return repl_arg_error(s, err, 1, "cannot open '%s': it is a directory", shown);
  IrModule *before = s->eng.nstages > 0 ? s->eng.stages[0].module : NULL;
  const char *name = s->input_name;
  int line = s->input_line;
  bool is_hlo = false;
  bool ok = repl_run_path(s, path, err, &is_hlo);
  s->input_name = name;
  s->input_line = line;
  if (!ok) return false;
  IrModule *m = s->eng.nstages > 0 ? s->eng.stages[0].module : NULL;
  /* An HLO file reports itself; a script reports the module its definitions built. */
  ExplainOut o = repl_out(s);
  if (!is_hlo && m && m != before) explain_show_loaded(&o, m, path, NULL);
  return true;
}

static bool cmd_save(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 1, 1, err)) return false;
  IrModule *m = need_module(s, err);
  if (!m) return false;
  FxError e = {0};
  if (!explain_engine_save(&s->eng, s->eng.cur, argv[1], &e))
    return repl_error_at(s, err, strcmp(e.msg, "out of memory") == 0 ? 0 : 1, &e);
  ExplainOut o = repl_out(s);
  explain_show_saved(&o, &s->eng, argv[1]);
  return true;
}

/* ---------- show / set ---------- */

static const char *const show_builtin[] = {"hlo", "settings", NULL};

static bool show_settings(Session *s) {
  SubNames sn;
  sub_names(&sn, "set-", NULL);
  ExplainOut o = repl_out(s);
  explain_show_all_settings(&o, &s->eng, (unsigned long long)rt_max_memory(), sn.names, sn.n);
  return true;
}

static bool show_hlo(Session *s, FxError *err) {
  if (!need_module(s, err)) return false;
  ExplainOut o = repl_out(s);
  FxError e = {0};
  if (!explain_show_hlo(&o, &s->eng, &e)) return repl_error_at(s, err, 0, &e);
  return true;
}

/* `show WHAT ...` and `set WHAT ...`: the hidden command PREFIX+WHAT, else a located error that
 * names the nearest WHAT (`unknown` is the sentence before it: "cannot show 'x'"). */
static bool dispatch_word(Session *s, const char *prefix, const char *const *extra, int argc, char **argv,
                          const char *unknown, const char *help, FxError *err) {
  char name[128];
  snprintf(name, sizeof name, "%s%s", prefix, argv[1]);
  const ReplCommand *sub = strlen(argv[1]) < 100 ? repl_command_lookup(name) : NULL;
  if (sub) return dispatch_sub(s, sub, argc, argv, err);
  SubNames sn;
  sub_names(&sn, prefix, extra);
  char shown[96];
  const char *near = repl_nearest(argv[1], sn.names, sn.n);
  fx_printable(shown, sizeof shown, argv[1]);
  if (near) return repl_arg_error(s, err, 1, "%s '%s'; did you mean '%s'?", unknown, shown, near);
  return repl_arg_error(s, err, 1, "%s '%s'; %s", unknown, shown, help);
}

static bool cmd_show(Session *s, int argc, char **argv, FxError *err) {
  bool hlo = argc == 1 || strcmp(argv[1], "hlo") == 0, settings = !hlo && strcmp(argv[1], "settings") == 0;
  if ((hlo || settings) && argc > 2) return repl_check_argc(s, argc, argv, 0, 1, err);
  if (hlo) return show_hlo(s, err);
  if (settings && !repl_command_lookup("show-settings")) return show_settings(s);
  return dispatch_word(s, "show-", show_builtin, argc, argv, "cannot show", "'help show' lists the views", err);
}

static bool cmd_set(Session *s, int argc, char **argv, FxError *err) {
  if (argc == 1) return show_settings(s);
  return dispatch_word(s, "set-", NULL, argc, argv, "unknown setting", "'help set' lists the settings", err);
}

/* ---------- reset / echo / pause / quit ---------- */

static bool cmd_reset(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  session_reset(s);
  if (!s->json) fprintf(s->out, "session reset: nothing loaded, default settings, no variants\n");
  return true;
}

static bool cmd_echo(Session *s, int argc, char **argv, FxError *err) {
  (void)err;
  const char *text = argc > 1 ? argv[1] : "";
  if (s->json) json_print_kv_str(s->out, "echo", text);
  else fprintf(s->out, "%s\n", text);
  return true;
}

static bool cmd_pause(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  if (!s->interactive || !isatty(STDIN_FILENO)) return true;
  fputs("-- press Enter to continue --", s->out);
  fflush(s->out);
  /* read(2), not stdio: readline reads the same descriptor and must not lose typed-ahead keys. */
  for (;;) {
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) {
      if (*s->interrupted) break;
      continue;
    }
    if (n <= 0 || c == '\n') break;
  }
  fputc('\n', s->out);
  return true;
}

static bool cmd_quit(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 0, err)) return false;
  s->quit = true;
  return true;
}

/* ---------- help ---------- */

typedef struct {
  const char *title;
  const ReplCommand *table;
} Group;

static int groups(Group *g) {
  int n = 0;
  g[n++] = (Group){"Session", repl_cmds_core};
  g[n++] = (Group){"Pipeline and stages", repl_cmds_pipeline};
  g[n++] = (Group){"Fusion decisions", repl_cmds_fusion};
  g[n++] = (Group){"Variants of a program (case studies)", repl_cmds_variants};
  g[n++] = (Group){"Running", repl_cmds_run};
  g[n++] = (Group){"Pictures and reports", repl_cmds_viz};
  g[n++] = (Group){"GPU", repl_cmds_gpu};
  g[n++] = (Group){"XLA's own dumps", repl_cmds_xla};
  return n;
}

static bool help_all(Session *s) {
  Group g[9];
  int ng = groups(g);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_key(&w, "groups");
    json_array_begin(&w);
    for (int i = 0; i < ng; i++) {
      bool any = false;
      for (const ReplCommand *c = g[i].table; c->name; c++) any |= c->summary != NULL;
      if (!any) continue;
      json_object_begin(&w);
      json_kv_str(&w, "name", g[i].title);
      json_key(&w, "commands");
      json_array_begin(&w);
      for (const ReplCommand *c = g[i].table; c->name; c++) {
        if (!c->summary) continue;
        json_object_begin(&w);
        json_kv_str(&w, "name", c->name);
        json_kv_str(&w, "usage", c->usage ? c->usage : c->name);
        json_kv_str(&w, "summary", c->summary);
        json_object_end(&w);
      }
      json_array_end(&w);
      json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    return true;
  }
  int width = 0;
  for (int i = 0; i < ng; i++)
    for (const ReplCommand *c = g[i].table; c->name; c++) {
      int l = (int)strlen(c->usage ? c->usage : c->name);
      if (c->summary && l > width) width = l;
    }
  if (width > 30) width = 30;
  FILE *o = s->out;
  fputs("fxplain commands (type 'help CMD' for details):\n", o);
  for (int i = 0; i < ng; i++) {
    bool any = false;
    for (const ReplCommand *c = g[i].table; c->name; c++) any |= c->summary != NULL;
    if (!any) continue;
    fprintf(o, "\n%s\n", g[i].title);
    for (const ReplCommand *c = g[i].table; c->name; c++) {
      if (!c->summary) continue;
      const char *u = c->usage ? c->usage : c->name;
      if ((int)strlen(u) > width) fprintf(o, "  %s\n  %-*s  %s\n", u, width, "", c->summary);
      else fprintf(o, "  %-*s  %s\n", width, u, c->summary);
    }
  }
  fputs("\nAny other line is a .fx statement, e.g. 'param x: f32[4]' or 'y = sin(x) * 2'.\n", o);
  return true;
}

/* A view's or setting's help under its usage line: every line of it, indented, without a first
 * line that only repeats the usage ("show device"), and with the description kept when the
 * first line puts it beside the usage ("show graph [COMP]   the current stage as text: ..."). */
static void print_sub_help(FILE *o, const char *cmd, const char *sub, const char *help) {
  if (!help) return;
  char head[160];
  snprintf(head, sizeof head, "%s %s", cmd, sub);
  const char *p = help;
  bool first = true;
  while (*p) {
    size_t l = strcspn(p, "\n");
    const char *line = p;
    size_t len = l;
    if (first && strncmp(line, head, strlen(head)) == 0) {
      /* Skip the usage words, up to a run of two spaces; what follows is description. */
      const char *gap = NULL;
      for (size_t k = strlen(head); k + 1 < len; k++)
        if (line[k] == ' ' && line[k + 1] == ' ') {
          gap = line + k;
          break;
        }
      if (gap) {
        len -= (size_t)(gap - line);
        line = gap;
      } else {
        len = 0;
      }
    }
    while (len > 0 && (*line == ' ')) line++, len--;
    if (len > 0) fprintf(o, "      %.*s\n", (int)len, line);
    first = false;
    p += l;
    if (*p == '\n') p++;
  }
}

static bool cmd_help(Session *s, int argc, char **argv, FxError *err) {
  if (!repl_check_argc(s, argc, argv, 0, 1, err)) return false;
  if (argc == 1) return help_all(s);
  const ReplCommand *c = repl_command_lookup(argv[1]);
  if (!c) {
    char shown[96];
    fx_printable(shown, sizeof shown, argv[1]);
    const char *near = repl_nearest_command(argv[1]);
    if (near) return repl_arg_error(s, err, 1, "no command '%s'; did you mean '%s'?", shown, near);
    return repl_arg_error(s, err, 1, "no command '%s'; type 'help' for the list of commands", shown);
  }
  SubNames sn;
  bool is_show = strcmp(c->name, "show") == 0, is_set = strcmp(c->name, "set") == 0;
  if (is_show) sub_names(&sn, "show-", show_builtin);
  if (is_set) sub_names(&sn, "set-", NULL);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "name", c->name);
    json_kv_str(&w, "usage", c->usage ? c->usage : c->name);
    json_kv_str(&w, "summary", c->summary);
    json_kv_str(&w, "help", c->help);
    if (is_show || is_set) {
      json_key(&w, is_show ? "views" : "settings");
      json_array_begin(&w);
      for (int i = 0; i < sn.n; i++) json_str(&w, sn.names[i]);
      json_array_end(&w);
    }
    json_object_end(&w);
    return true;
  }
  FILE *o = s->out;
  fprintf(o, "usage: %s\n", c->usage ? c->usage : c->name);
  if (c->summary) fprintf(o, "  %s\n", c->summary);
  if (c->help) {
    const char *h = c->help;
    size_t n = strlen(h);
    fprintf(o, "\n%s%s", h, n && h[n - 1] == '\n' ? "" : "\n");
  }
  if (is_show || is_set) {
    fprintf(o, "\n%s\n", is_show ? "Views:" : "Settings:");
    for (int i = 0; i < sn.n; i++) {
      char name[128];
      snprintf(name, sizeof name, "%s%s", is_show ? "show-" : "set-", sn.names[i]);
      const ReplCommand *sub = repl_command_lookup(name);
      const char *line = NULL;
      if (sub && sub->help) line = sub->help;
      else if (strcmp(sn.names[i], "hlo") == 0) line = "the current stage's module as HLO text (the default)";
      else if (strcmp(sn.names[i], "settings") == 0) line = "every setting and its value";
      if (sub && sub->usage) fprintf(o, "  %s\n", sub->usage);
      else fprintf(o, "  %s %s\n", c->name, sn.names[i]);
      print_sub_help(o, c->name, sn.names[i], line);
    }
  }
  return true;
}

const ReplCommand repl_cmds_core[] = {
    {"load", "load FILE | DIR [--module NAME|ID]", "load an HLO module (.hlo), an XLA dump folder, or run a .fx script",
     "Loads FILE. A file whose text starts with 'HloModule' (or named *.hlo) is XLA HLO text: it\n"
     "becomes the input (stage 0) and earlier stages are dropped. Any other file is a .fx script:\n"
     "its statements start a fresh set of definitions, which become the input; commands in it run\n"
     "in order. If anything in FILE fails, the session keeps what it had. XLA's proto dump of the\n"
     "same module beside it (STEM.hlo.pb, from --xla_dump_hlo_as_proto) gives the module XLA's own\n"
     "instruction ids, by which XLA breaks ties; load says when it took them.\n"
     "A folder is an XLA dump (XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text\n"
     "--xla_dump_hlo_pass_re=.*, best with --xla_dump_hlo_as_proto): its modules are listed (id,\n"
     "name, instructions, passes dumped) and one is loaded (--module NAME|ID; by default the one\n"
     "with the most snapshots). Its per-pass snapshots become the stages of the pipeline `xla`,\n"
     "and its priority_fusion_dump.txt the decisions of the priority-fusion stage, beside\n"
     "fxplain's own verdict on each pair. A *.priority_fusion_dump.txt alone loads the module it\n"
     "holds, with XLA's fusions replayed.",
     cmd_load},
    {"save", "save FILE", "write the current stage as HLO text",
     "Writes the current stage's module to FILE as HLO text, in the form 'load' reads back:\n"
     "loading the saved file and saving it again gives identical text.",
     cmd_save},
    {"show", "show [hlo | WHAT ...]", "show the current stage's HLO, or another view",
     "'show' and 'show hlo' print the current stage's module as HLO text. 'show WHAT' shows\n"
     "another view; 'help show' lists them.",
     cmd_show},
    {"set", "set WHAT VALUE", "change a setting (without arguments: list them)",
     "Changes a setting of the session. Changing a setting that affects the passes drops the\n"
     "stages computed with the old value. 'set' alone (or 'show settings') lists the settings and\n"
     "their values; 'help set' lists what can be set.",
     cmd_set},
    {"reset", "reset", "forget the module, the .fx definitions, the settings and the variants",
     "Returns the session to its state at start-up: nothing loaded, no .fx definitions, the\n"
     "default pipeline, device and settings, and an empty variants table (`load` keeps it).",
     cmd_reset},
    {"echo", "echo TEXT", "print TEXT (narration in scripts)",
     "Prints the rest of the line as it is, quotes included.", cmd_echo},
    {"pause", "pause", "wait for Enter (only on a terminal)",
     "When fxplain reads from and writes to a terminal, waits until Enter is pressed (Ctrl-C\n"
     "goes on too); with input or output redirected it does nothing. Walkthrough scripts use it\n"
     "between steps.",
     cmd_pause},
    {"help", "help [CMD]", "list the commands, or explain one",
     "'help' lists every command by group; 'help CMD' shows its usage and full description.", cmd_help},
    {"quit", "quit", "leave fxplain (also 'exit', or Ctrl-D)",
     "Leaves fxplain. In a script, stops the script and every input after it.", cmd_quit},
    {"exit", "exit", NULL, "Leaves fxplain, like 'quit'; in a script, stops the script and every input after it.", cmd_quit},
    {0},
};

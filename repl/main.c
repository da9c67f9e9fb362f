/* main.c — fxplain's entry point: parses the command line, then runs files and `-e` commands in
 * order (script.c), piped input as a script, or the interactive shell (repl.c).
 *
 * Exit status: 0 on success, 1 when a command or script failed, 2 for usage errors. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repl.h"
#include "session.h"

static const char usage_text[] =
    "usage: fxplain [OPTIONS] [FILE...]\n"
    "\n"
    "Runs .fx scripts and loads HLO modules (FILE...) in order, and commands given with -e; with\n"
    "neither, runs the interactive shell (or, when input is piped in, runs it as a script).\n"
    "\n"
    "  -e 'CMD; CMD'   run commands and .fx statements, separated by ';'\n"
    "  -i              stay in the interactive shell after the files and -e commands\n"
    "  --json          print each command's result as one line of JSON\n"
    "  --keep-going    go on after a command fails (the exit status is still 1)\n"
    "  -h, --help      print this help\n"
    "  -V, --version   print the version\n"
    "  FILE            a .fx script or an HLO text module; '-' reads a script from standard input\n"
    "\n"
    "Exit status: 0 on success, 1 when a command or script failed, 2 for usage errors.\n"
    "In the shell, type 'help' for the commands.\n";

static volatile sig_atomic_t batch_mode = 1;

/* Ctrl-C: the running command (or the line being typed) is abandoned. In batch mode a second
 * Ctrl-C before the first was noticed ends the program, so a command that never polls can still
 * be stopped. */
static void on_sigint(int sig) {
  if (batch_mode && repl_interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  repl_interrupted = 1;
}

static int usage_error(const char *fmt, const char *arg) {
  fputs("fxplain: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nusage: fxplain [OPTIONS] [FILE...]  (try 'fxplain --help')\n", stderr);
  return 2;
}

typedef struct {
  bool is_expr; /* -e text, else a FILE */
  const char *text;
} Action;

int main(int argc, char **argv) {
  Action *actions = calloc((size_t)argc + 1, sizeof *actions);
  if (!actions) {
    fputs("fxplain: out of memory\n", stderr);
    return 1;
  }
  int nact = 0;
  bool json = false, keep_going = false, stay = false, options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (options_done || a[0] != '-' || strcmp(a, "-") == 0) {
      actions[nact++] = (Action){false, a};
    } else if (strcmp(a, "--") == 0) {
      options_done = true;
    } else if (strcmp(a, "-e") == 0 || strcmp(a, "--eval") == 0) {
      if (i + 1 >= argc) {
        free(actions);
        return usage_error("option '%s' needs commands after it", a);
      }
      actions[nact++] = (Action){true, argv[++i]};
    } else if (strncmp(a, "--eval=", 7) == 0) {
      actions[nact++] = (Action){true, a + 7};
    } else if (strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0) {
      stay = true;
    } else if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--keep-going") == 0 || strcmp(a, "-k") == 0) {
      keep_going = true;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      free(actions);
      return 0;
    } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
      printf("fxplain %s\n", REPL_VERSION);
      free(actions);
      return 0;
    } else {
      free(actions);
      return usage_error("unknown option '%s'", a);
    }
  }

  Session *s = session_new(stdout, stderr);
  if (!s) {
    free(actions);
    fputs("fxplain: out of memory\n", stderr);
    return 1;
  }
  s->json = json;
  s->keep_going = keep_going;
  /* A person is watching: `pause` in a walkthrough waits for Enter. */
  s->interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: a blocking read returns so the shell can react */
  sigaction(SIGINT, &sa, NULL);

  bool ok = true;
  bool used_stdin = false;
  for (int i = 0; i < nact && !s->quit; i++) {
    bool step;
    if (actions[i].is_expr) {
      step = repl_run_text(s, actions[i].text, "<-e>");
    } else if (strcmp(actions[i].text, "-") == 0) {
      step = repl_run_stream(s, stdin, "<stdin>");
      used_stdin = true;
    } else {
      step = repl_run_path(s, actions[i].text, NULL, NULL);
    }
    if (!step) {
      ok = false;
      if (!keep_going) break;
    }
    repl_interrupted = 0;
  }

  int status = ok ? 0 : 1;
  if ((nact == 0 || stay) && !s->quit && (ok || stay)) {
    if (isatty(STDIN_FILENO)) {
      batch_mode = 0;
      s->interactive = true;
      repl_interactive(s);
    } else if (!used_stdin) {
      if (!repl_run_stream(s, stdin, "<stdin>")) status = 1;
    }
  }
  fflush(stdout);
  session_free(s);
  free(actions);
  return status;
}

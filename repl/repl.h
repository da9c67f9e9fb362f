/* repl.h — the shell's own interfaces between its parts (not for other folders).
 *
 * main.c parses fxplain's arguments and calls into script.c (running files, -e text and piped
 * input, line by line) and repl.c (the interactive readline loop). Both feed lines to a Runner,
 * which tells commands from .fx statements, gathers multi-line blocks, dispatches commands, and
 * prints results and located errors (text or JSON). */
#ifndef FXPLAIN_REPL_H
#define FXPLAIN_REPL_H

#include <stdbool.h>
#include <stddef.h>

#include "../compiler/plan/plan.h"
#include "../runtime/backend.h"
#include "session.h"

#define REPL_VERSION "0.1.0"
/* Scripts run by `load` may load scripts, up to this depth. */
#define REPL_MAX_SCRIPT_DEPTH 16

/* Set by the SIGINT handler (every session's `interrupted` points here). */
extern volatile int repl_interrupted;

/* Reads lines and runs them: commands and .fx statements, with multi-line .fx blocks gathered
 * while fx_needs_more says a block is open. */
typedef struct {
  Session *s;
  const char *name;   /* "<repl>", "<stdin>", "<-e>", or the script's path */
  char *block;        /* the open .fx block's text, or NULL */
  size_t block_len, block_cap;
  int block_line;     /* line where the open block starts */
  bool failed;        /* some line failed */
  /* NULL: errors are printed as they happen. Otherwise the first error is kept here and the
   * caller stops (scripts run by `load`). */
  FxError *first_err;
} Runner;

void runner_init(Runner *r, Session *s, const char *name, FxError *first_err);
/* Runs one input line (len bytes, no newline) found at line `lineno` of the input. Returns false
 * when it failed (the error is printed, or kept in first_err). */
bool runner_line(Runner *r, const char *line, size_t len, int lineno);
/* Runs the command and .fx pieces of one line of `-e` text, cut at `;` outside quotes. */
bool runner_pieces(Runner *r, const char *text, int lineno);
/* True while a multi-line block is open (the prompt shows "... "). */
bool runner_pending(const Runner *r);
/* Drops an open block (Ctrl-C at a continuation prompt). */
void runner_abandon(Runner *r);
/* End of input: runs an open block (whose error is then "unexpected end"), and builds the module
 * from the .fx definitions when they changed. Frees the runner's memory. */
bool runner_finish(Runner *r);

/* Prints e as text (FILE:LINE:COL: error: ... on s->err) or as a JSON error value on s->out. */
void repl_print_error(Session *s, const FxError *e);
/* Builds the module from the .fx definitions if they changed since the last build, and makes it
 * stage 0. Returns false (err filled) when the build fails; the session keeps its old module. */
bool repl_sync_fx(Session *s, FxError *err);

/* Runs a script file (commands and .fx statements) or loads an HLO module, by content: a file
 * whose first word is HloModule (or named *.hlo) is HLO. A script starts a fresh set of .fx
 * definitions (the old ones return if it fails). With first_err NULL errors are printed and
 * --keep-going is honoured. Returns false when something failed; *is_hlo (may be NULL) tells which. */
bool repl_run_path(Session *s, const char *path, FxError *first_err, bool *is_hlo);
/* Runs a script read from an open stream (stdin), printing errors. */
bool repl_run_stream(Session *s, FILE *f, const char *name);
/* Runs `-e` text. */
bool repl_run_text(Session *s, const char *text, const char *name);

/* The interactive shell on the terminal. Returns the exit status (0, or 1 after failures when
 * the input was not a terminal). */
int repl_interactive(Session *s);

/* Back to a fresh session: nothing loaded, no .fx definitions, default settings, no variants. */
void session_reset(Session *s);
/* --uniform PATTERN=LO:HI (inputs.c; the rules are runtime.h's RtUniform): parses word argi into r,
 * a located error when it is malformed or LO >= HI. */
bool repl_uniform_parse(Session *s, char **argv, int argi, RtUniform *r, FxError *err);
/* Every rule must name a parameter of one of the modules' entries (a typo would silently leave
 * the inputs as they were): a located error at the first that names none ("... names no
 * parameter" + scope, e.g. " of any variant"). */
bool repl_uniform_check(Session *s, RtUniform *rules, int n, const IrModule *const *mods, int nmods,
                        const char *scope, FxError *err);


/* The options of the run commands (cmd_run.c): run, profile, compare and, with `variants`, the
 * subset `variants --run` takes (--backend, --repeat, --seed, --check, --uniform). */
#define REPL_MAX_IO 32
typedef struct {
  const char *backend;
  int stage;         /* -1: current */
  uint64_t seed;
  int repeat;
  bool check;
  RtNamedFile in[REPL_MAX_IO];
  int save_arg[REPL_MAX_IO], trace_arg; /* their places on the command line */
  int nin;
  const char *save_name[REPL_MAX_IO], *save_file[REPL_MAX_IO];
  int nsave;
  const char *trace;
  bool kernel_times;  /* profile: every kernel timed on its device (CUDA events on a GPU) */
  const char *stages; /* run --stages A,B: compare */
  RtUniform uniform[REPL_MAX_IO]; /* --uniform PATTERN=LO:HI (inputs.c) */
  int nuniform;
} RunArgs;
bool repl_run_args(Session *s, int argc, char **argv, bool variants, RunArgs *a, FxError *err);

/* XLA's dumps (cmd_xla.c). `load` hands its words to repl_xla_load first: a dump folder, a
 * --module option or a *.priority_fusion_dump.txt is loaded there (*handled set) and its snapshots
 * become the engine's `xla` pipeline. repl_xla_source_note prints where instructions a and b (b
 * may be NULL) came from. */
bool repl_xla_load(Session *s, int argc, char **argv, FxError *err, bool *handled);
void repl_xla_source_note(Session *s, const char *a, const char *b);

/* Whether `line` starts with the name of a registered command (and is not a .fx assignment). */
const ReplCommand *repl_line_command(const char *line);

#endif

/* session.h — the state of one fxplain session and the command table.
 *
 * The shell (repl/) owns the session: its engine (explain/engine.h: the loaded module, the .fx
 * definitions, the stages, the decision log, the chosen pipeline, device and settings) and what
 * only a shell has (output streams, JSON mode, where commands come from). A command that fails
 * leaves the session as it was. */
#ifndef FXPLAIN_SESSION_H
#define FXPLAIN_SESSION_H

#include <stdbool.h>
#include <stdio.h>

#include "../compiler/plan/plan.h"
#include "../compiler/ir/ir.h"
#include "../compiler/passes/passes.h"
#include "../explain/engine.h"


typedef struct Session {
  /* The engine (explain/engine.h): the stages, the pipeline and its decision log, the device
   * and the settings. The shell parses commands, asks the engine and prints what it returns. */
  ExplainEngine eng;
  /* Output. */
  FILE *out; /* stdout */
  FILE *err; /* stderr */
  bool json;
  bool interactive;
  bool keep_going;
  /* Set by the SIGINT handler; long-running commands poll it and stop with an error. */
  volatile int *interrupted;
  /* Where commands come from, for error locations: "<repl>", "<stdin>", a script path. */
  const char *input_name;
  int input_line;
  /* The shell's bookkeeping (repl/): the running command's source line and the column of each of
   * its words (for repl_arg_error), how deep scripts are nested, and whether `quit` was run. */
  const char *cmd_src;
  const int *arg_cols;
  int arg_count, arg_end_col;
  int script_depth;
  bool quit;
  /* The rows `variant` recorded (explain/variants.h): kept across `load`, emptied by `reset`; NULL
   * until the first row. */
  struct ExplainVariants *variants;
} Session;

/* A command: `name`, its usage line and help text, and the function that runs it. argv[0] is the
 * command name. The function returns false after filling err. `line` is the whole command text
 * (for commands that parse it themselves), `col0` the column where it started. */
typedef bool (*CommandFn)(Session *s, int argc, char **argv, FxError *err);

typedef struct {
  const char *name;
  const char *usage;   /* "step [N | PASS | all]" */
  const char *summary; /* one line for `help` */
  const char *help;    /* the full text for `help CMD`, may be NULL */
  CommandFn run;
} ReplCommand;

/* Each group of commands is a table ending in a {0} entry, defined in its own file
 * (cmd_core.c, cmd_pipeline.c, cmd_fusion.c, cmd_run.c, cmd_variants.c, cmd_viz.c, cmd_gpu.c). */
extern const ReplCommand repl_cmds_core[];
extern const ReplCommand repl_cmds_pipeline[];
extern const ReplCommand repl_cmds_fusion[];
extern const ReplCommand repl_cmds_run[];
extern const ReplCommand repl_cmds_viz[];
extern const ReplCommand repl_cmds_gpu[];
extern const ReplCommand repl_cmds_variants[];
extern const ReplCommand repl_cmds_xla[];

/* Commands named "show-WHAT" (summary NULL, hidden from `help`) implement `show WHAT`, so each
 * group adds its own views (show-stats, show-graph, show-device, show-settings) without touching
 * the core table. Likewise "set-WHAT" implements `set WHAT VALUE`. */
const ReplCommand *repl_command_lookup(const char *name);
/* Calls f for every command, in help order. */
void repl_command_foreach(void (*f)(const ReplCommand *c, void *ctx), void *ctx);

/* A session with the defaults: nothing loaded, device_default(), pass_settings_default(), the
 * "classic" pipeline, text output to out/err. Returns NULL when memory runs out. */
Session *session_new(FILE *out, FILE *err);
/* Frees the session and everything it owns (its engine, .fx state, variants). */
void session_free(Session *s);

#endif

/* commands.c — the command registry: every group's table, in the order `help` lists them. */
#include <string.h>

#include "session.h"

static const ReplCommand *const groups[] = {repl_cmds_core, repl_cmds_pipeline, repl_cmds_fusion, repl_cmds_variants,
                                            repl_cmds_run,  repl_cmds_viz,      repl_cmds_gpu, repl_cmds_xla};

const ReplCommand *repl_command_lookup(const char *name) {
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (const ReplCommand *c = groups[g]; c->name; c++)
      if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

void repl_command_foreach(void (*f)(const ReplCommand *c, void *ctx), void *ctx) {
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (const ReplCommand *c = groups[g]; c->name; c++) f(c, ctx);
}

/* cmd_run.c — the run commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_run[] = {
    {0},
};

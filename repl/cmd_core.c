/* cmd_core.c — the core commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_core[] = {
    {0},
};

/* cmd_fusion.c — the fusion commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_fusion[] = {
    {0},
};

/* cmd_viz.c — the viz commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_viz[] = {
    {0},
};

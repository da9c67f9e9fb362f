/* cmd_gpu.c — the gpu commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_gpu[] = {
    {0},
};

/* cmd_pipeline.c — the pipeline commands of the shell. */
#include "session.h"

const ReplCommand repl_cmds_pipeline[] = {
    {0},
};

/* `devtrace version` (and --version). */
#include "cli/commands.h"
#include "devtrace/devtrace.h"

#include <stdio.h>

int dt__cli_version(int argc, char **argv)
{
    printf("devtrace %s\n", dt_version());
    return 0;
}

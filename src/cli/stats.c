/* `devtrace stats`: the implementation lives in the reader library so that
   tests and fuzzers reach it with their own output streams. */
#include "reader/dt_reader.h"

#include <stdio.h>

int dt_cli_stats(int argc, char **argv)
{
    return dt_stats_main(argc, argv, stdout, stderr);
}

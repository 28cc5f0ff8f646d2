/* `devtrace merge`: the implementation lives in the reader library so that
   tests reach it with their own output streams. */
#include "reader/dt_reader.h"

#include <stdio.h>

int dt_cli_merge(int argc, char **argv)
{
    return dt_merge_main(argc, argv, stdout, stderr);
}

/*
 * Whether this build writes gzip: the gzip stream itself is the output
 * stream's (src/base/out.c).
 */
#ifndef DT_BASE_GZIP_H
#define DT_BASE_GZIP_H

#include "base/common.h"

/* Whether this build writes gzip (zlib was found when it was configured);
   the message for a gzip output it cannot write. */
DT_HIDDEN int dt_gzip_available(void);
#define DT_NO_GZIP_MESSAGE                                                                               \
    "this devtrace was built without zlib and writes no gzip: write .json, or rebuild devtrace with zlib " \
    "(zlib1g-dev or zlib-devel)"

#endif

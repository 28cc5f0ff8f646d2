/*
 * Whether this build writes gzip: the gzip stream itself is the output
 * stream's (src/base/out.c).
 */
#ifndef DT_BASE_GZIP_H
#define DT_BASE_GZIP_H

#include "base/common.h"

/* Whether this build writes gzip (zlib was found when it was configured). */
DT_HIDDEN int dt__gzip_available(void);

#endif

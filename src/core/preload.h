/*
 * Vendor libraries that must be in LD_PRELOAD from the start (src/core/preload.c).
 * Internal, not installed.
 */
#ifndef DT_CORE_PRELOAD_H
#define DT_CORE_PRELOAD_H

#include <stddef.h>

#include "base/common.h"

/* Whether LD_PRELOAD named file (a library's file name) when the process
   started: the environment it started with, which setenv cannot change,
   and what a vendor that must interpose from the start reads. */
DT_HIDDEN int dt__started_with_preload(const char *file);
/* What to do when a vendor records some kinds only with its library
   `preload` in LD_PRELOAD from the start, and it was not there (library:
   the path found, or NULL): the words of every note and error that says so. */
DT_HIDDEN void dt__preload_advice(const char *preload, const char *library, char *out, size_t size);

#endif /* DT_CORE_PRELOAD_H */

/*
 * What every file of libdevtrace starts with: the feature macro and the
 * visibility of internal symbols. Internal functions are hidden from the
 * shared library's exports; the public API (include/devtrace) is not.
 */
#ifndef DT_BASE_COMMON_H
#define DT_BASE_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#define DT_HIDDEN __attribute__((visibility("hidden")))

#endif

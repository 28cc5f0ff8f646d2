/*
 * Errors (the calling thread's last error), diagnostics on DEVTRACE_LOG, and
 * the environment as the library reads it (src/base/log.c).
 */
#ifndef DT_BASE_LOG_H
#define DT_BASE_LOG_H

#include "devtrace/devtrace.h"
#include "base/common.h"

/* Set the calling thread's last error and return status. */
DT_HIDDEN dt_status dt__error(dt_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Diagnostics to stderr, only when DEVTRACE_LOG is on. */
DT_HIDDEN void dt__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
DT_HIDDEN int dt__log_enabled(void);
/* Parse a boolean environment value: 1 true, 0 false, -1 unset/invalid. */
DT_HIDDEN int dt__env_bool(const char *name);
/* secure_getenv, treating "" as unset. */
DT_HIDDEN const char *dt__env(const char *name);

#endif

/* Errors, diagnostics and the environment. */
#include "base/env_names.h"
#include "base/log.h"

#include <stdatomic.h>
#include <stdarg.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char tls_error[1024];

const char *dt_version(void) { return DT_VERSION_STRING; }

dt_status dt__error(dt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    dt__log("error: %s: %s", dt_status_name(status), tls_error);
    return status;
}

const char *dt_last_error(void) { return tls_error; }

const char *dt_status_name(dt_status status)
{
    switch (status) {
    case DT_OK: return "DT_OK";
    case DT_ERR_INVALID_ARGUMENT: return "DT_ERR_INVALID_ARGUMENT";
    case DT_ERR_NO_MEMORY: return "DT_ERR_NO_MEMORY";
    case DT_ERR_UNKNOWN_BACKEND: return "DT_ERR_UNKNOWN_BACKEND";
    case DT_ERR_BACKEND_UNAVAILABLE: return "DT_ERR_BACKEND_UNAVAILABLE";
    case DT_ERR_BUSY: return "DT_ERR_BUSY";
    case DT_ERR_STATE: return "DT_ERR_STATE";
    case DT_ERR_IO: return "DT_ERR_IO";
    case DT_ERR_VENDOR: return "DT_ERR_VENDOR";
    case DT_ERR_EMPTY_STACK: return "DT_ERR_EMPTY_STACK";
    case DT_ERR_FORMAT: return "DT_ERR_FORMAT";
    case DT_ERR_TIMEOUT: return "DT_ERR_TIMEOUT";
    }
    return "DT_ERR_UNKNOWN_STATUS";
}

const char *dt__env(const char *name)
{
    const char *v = secure_getenv(name);
    return (v && *v) ? v : NULL;
}

int dt__env_bool(const char *name)
{
    const char *v = dt__env(name);
    if (!v) return -1;
    static const char *const yes[] = {"1", "true", "on", "yes"};
    static const char *const no[] = {"0", "false", "off", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return 1;
        if (strcasecmp(v, no[i]) == 0) return 0;
    }
    return -1;
}

/* -1: not read yet. Read once; DEVTRACE_LOG does not change mid-run. */
static _Atomic int log_state = -1;

int dt__log_enabled(void)
{
    int st = atomic_load_explicit(&log_state, memory_order_relaxed);
    if (st < 0) {
        st = dt__env_bool(DT_ENV_LOG) == 1;
        atomic_store_explicit(&log_state, st, memory_order_relaxed);
    }
    return st;
}

void dt__log(const char *fmt, ...)
{
    if (!dt__log_enabled()) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "devtrace[%d]: %s\n", (int)getpid(), line);
}

/* Errors, diagnostics, environment, clocks and thread ids. */
#include "dt_internal.h"

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

dt_status dt_error(dt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    dt_log("error: %s: %s", dt_status_name(status), tls_error);
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
    }
    return "DT_ERR_UNKNOWN_STATUS";
}

const char *dt_env(const char *name)
{
    const char *v = secure_getenv(name);
    return (v && *v) ? v : NULL;
}

int dt_started_with_preload(const char *file)
{
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) {
        const char *now = getenv("LD_PRELOAD"); /* no /proc: what is left of it */
        return now && strstr(now, file) != NULL;
    }
    static const char key[] = "LD_PRELOAD=";
    char entry[8192];
    size_t n = 0;
    int found = 0;
    for (int c; !found && (c = fgetc(f)) != EOF;) {
        if (c != '\0') {
            if (n + 1 < sizeof entry) entry[n++] = (char)c;
            continue;
        }
        entry[n] = '\0';
        found = strncmp(entry, key, sizeof key - 1) == 0 && strstr(entry + sizeof key - 1, file) != NULL;
        n = 0;
    }
    fclose(f);
    return found;
}

void dt_preload_advice(const char *preload, const char *library, char *out, size_t size)
{
    snprintf(out, size,
             "%s must be in LD_PRELOAD from the start of the program (`devtrace record` puts it there; or run it "
             "with LD_PRELOAD=%s)",
             preload, library && library[0] ? library : preload);
}

int dt_env_bool(const char *name)
{
    const char *v = dt_env(name);
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

int dt_log_enabled(void)
{
    int st = atomic_load_explicit(&log_state, memory_order_relaxed);
    if (st < 0) {
        st = dt_env_bool("DEVTRACE_LOG") == 1;
        atomic_store_explicit(&log_state, st, memory_order_relaxed);
    }
    return st;
}

void dt_log(const char *fmt, ...)
{
    if (!dt_log_enabled()) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "devtrace[%d]: %s\n", (int)getpid(), line);
}

uint64_t dt_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dt_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static _Thread_local uint32_t tls_tid;

uint32_t dt_thread_id(void)
{
    if (!tls_tid) tls_tid = (uint32_t)syscall(SYS_gettid);
    return tls_tid;
}

void dt_path_dir(char *out, size_t n, const char *path)
{
    snprintf(out, n, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash == out) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(out, n, ".");
}

/* A sanitizer build of devtrace preloads sanitized libraries (the
   injection library, an emulator), whose runtime must come first in the
   process that loads them: the runtimes this process uses, to preload
   before them. Release builds find none. */
void dt_sanitizer_runtimes(char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[4096];
    static const char *const libs[] = {"libasan.so", "libtsan.so", "libubsan.so"};
    for (size_t k = 0; k < 3; k++) {
        rewind(f);
        while (fgets(line, sizeof line, f)) {
            char *path = strchr(line, '/');
            if (!path || !strstr(path, libs[k])) continue;
            path[strcspn(path, "\n")] = 0;
            size_t used = strlen(out);
            snprintf(out + used, n - used, "%s%s", used ? ":" : "", path);
            break;
        }
    }
    fclose(f);
}

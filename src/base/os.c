/* Clocks, thread ids, paths and the sanitizer runtimes. */
#include "base/os.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Clocks, thread ids, paths and the sanitizer runtimes. */
#include "base/os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t dt__monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dt__realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dt__process_start_realtime_ns(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* the program's name, in parentheses, may hold spaces and parentheses:
       the fields are counted from the last ')'; starttime is the 22nd
       field, the 20th after it, in clock ticks since boot */
    char *p = strrchr(buf, ')'), *save = NULL, *tok = NULL;
    if (!p) return 0;
    p++;
    for (int field = 3; field <= 22; field++, p = NULL)
        if (!(tok = strtok_r(p, " ", &save))) return 0;
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long ticks = strtoull(tok, NULL, 10);
    struct timespec boot, real;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 || clock_gettime(CLOCK_REALTIME, &real) != 0) return 0;
    uint64_t since_boot = (uint64_t)boot.tv_sec * 1000000000u + (uint64_t)boot.tv_nsec;
    uint64_t started = ticks * (1000000000u / (uint64_t)hz);
    uint64_t now = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec;
    if (started > since_boot || since_boot - started > now) return 0;
    return now - (since_boot - started);
}

static _Thread_local uint32_t tls_tid;

uint32_t dt__thread_id(void)
{
    if (!tls_tid) tls_tid = (uint32_t)syscall(SYS_gettid);
    return tls_tid;
}

void dt__path_dir(char *out, size_t n, const char *path)
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
void dt__sanitizer_runtimes(char *out, size_t n)
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

/* What the benchmarks that drive an emulated vendor share: the rows (one
   per emulator of the build's vendor list), the emulated runtime's entry
   points found in the row's library, the clocks they read, their memory. */
#ifndef BENCH_EMU_H
#define BENCH_EMU_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devtrace_emu.h"

/* A vendor, its emulator's library, and the variable that points devtrace
   at it. */
typedef struct row {
    const char *backend, *emulator, *override_variable;
} row;

typedef struct bench_emu {
    int (*init)(void);
    int (*launch)(const emu_kernel_desc *);
    int (*synchronize)(int, int);
    void (*stats_get)(emu_stats *);
    void (*stats_reset)(void);
    int (*null_client)(int);
} bench_emu;

/* Loads the row's emulator into *e and points devtrace at it; 0 on
   success, else 1 with why on stderr. */
static inline int bench_load_emulator(const row *r, bench_emu *e)
{
    if (setenv(r->override_variable, r->emulator, 1) != 0) return 1;
    void *h = dlopen(r->emulator, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "%s: cannot load %s: %s\n", r->backend, r->emulator, dlerror());
        return 1;
    }
    *(void **)&e->init = dlsym(h, "emu_init");
    *(void **)&e->launch = dlsym(h, "emu_launch_kernel_desc");
    *(void **)&e->synchronize = dlsym(h, "emu_synchronize");
    *(void **)&e->stats_get = dlsym(h, "emu_stats_get");
    *(void **)&e->stats_reset = dlsym(h, "emu_stats_reset");
    *(void **)&e->null_client = dlsym(h, "emu_null_client");
    if (!e->init || !e->launch || !e->synchronize || !e->stats_get || !e->stats_reset || !e->null_client) {
        fprintf(stderr, "%s: %s lacks the emulated runtime API\n", r->backend, r->emulator);
        return 1;
    }
    e->init();
    return 0;
}

static inline double bench_clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static inline double wall_s(void) { return bench_clock_s(CLOCK_MONOTONIC); }
static inline double cpu_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* The process's resident memory, KiB. */
static inline long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif

/*
 * A training loop of a program linked with libdevtrace, for the end-to-end
 * tests of on-demand capture: it steps every PERIOD ms and launches a
 * kernel per step on an emulated vendor (any personality: the emulator's
 * own entry points), named after its step ("step<n>").
 *
 *   dt_listen_workload --emulator LIB [--listen] [--period-ms P] [--seconds S]
 *                      [--launches K] [--lockstep FILE] [--ready FILE] [--exit STATUS]
 *
 * --listen     dt_control_listen(NULL): the configuration from the
 *              environment (DEVTRACE_BACKEND, DEVTRACE_FLIGHT_RECORDER, ...)
 * --launches K kernels per step (default 1)
 * --seconds S  steps for S seconds (default 2), then exits STATUS (default 0)
 *              through exit(): a capture under way ends with the process
 * --stop-at T dt_control_stop() T seconds into the steps (the steps go on)
 * --ready FILE written with the pid once listening
 * --lockstep FILE
 *              the ranks of a job stepping together, as collectives make
 *              them: no step until FILE holds "FIRST T0_NS" (written by the
 *              test); then step FIRST + k begins at realtime T0_NS + k * P,
 *              as a user range "ProfilerStep#<FIRST + k>" around its
 *              kernels, so that every process numbers and times its steps
 *              alike. Without it, dt_step() numbers them 1, 2, ...
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devtrace/devtrace.h"

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    for (uint64_t now = realtime_ns(); now < t; now = realtime_ns()) {
        uint64_t d = t - now;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *emulator = NULL, *ready = NULL, *lockstep = NULL;
    int listen = 0, status = 0, launches = 1;
    double seconds = 2, period_ms = 20, stop_at = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--listen") == 0) listen = 1;
        else if (v && strcmp(a, "--emulator") == 0) emulator = argv[++i];
        else if (v && strcmp(a, "--period-ms") == 0) period_ms = atof(argv[++i]);
        else if (v && strcmp(a, "--seconds") == 0) seconds = atof(argv[++i]);
        else if (v && strcmp(a, "--launches") == 0) launches = atoi(argv[++i]);
        else if (v && strcmp(a, "--lockstep") == 0) lockstep = argv[++i];
        else if (v && strcmp(a, "--ready") == 0) ready = argv[++i];
        else if (v && strcmp(a, "--stop-at") == 0) stop_at = atof(argv[++i]);
        else if (v && strcmp(a, "--exit") == 0) status = atoi(argv[++i]);
        else {
            fprintf(stderr, "dt_listen_workload: unexpected argument %s\n", a);
            return 2;
        }
    }
    void *h = emulator ? dlopen(emulator, RTLD_NOW | RTLD_LOCAL) : NULL;
    int (*init)(void) = NULL, (*synchronize)(int, int) = NULL;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t) = NULL;
    if (h) {
        *(void **)&init = dlsym(h, "emu_init");
        *(void **)&launch = dlsym(h, "emu_launch_kernel");
        *(void **)&synchronize = dlsym(h, "emu_synchronize");
    }
    if (!init || !launch || !synchronize || init() != 0) {
        fprintf(stderr, "dt_listen_workload: cannot use the emulator %s\n", emulator ? emulator : "(none)");
        return 3;
    }
    if (listen && dt_control_listen(NULL) != DT_OK) {
        fprintf(stderr, "dt_listen_workload: dt_control_listen: %s\n", dt_last_error());
        return 4;
    }
    if (ready) {
        FILE *f = fopen(ready, "w");
        if (!f) return 5;
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    uint64_t period = (uint64_t)(period_ms * 1e6), first = 1, t0 = realtime_ns();
    if (lockstep) {
        FILE *f = NULL;
        while (!(f = fopen(lockstep, "r"))) usleep(5000);
        unsigned long long s = 0, t = 0;
        while (fscanf(f, "%llu %llu", &s, &t) != 2) { /* written whole by a rename */
            fclose(f);
            usleep(5000);
            if (!(f = fopen(lockstep, "r"))) return 6;
        }
        fclose(f);
        first = s;
        t0 = t;
    }
    uint64_t steps = (uint64_t)(seconds * 1e9 / (double)period);
    const int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    for (uint64_t k = 0; k < steps; k++) {
        uint64_t n = first + k;
        char name[64];
        uint64_t range = 0;
        sleep_until(t0 + k * period);
        if (stop_at >= 0 && (double)(k * period) >= stop_at * 1e9 && dt_control_listening()) dt_control_stop();
        if (lockstep) {
            snprintf(name, sizeof name, "ProfilerStep#%" PRIu64, n);
            dt_range_push(name, &range);
        } else {
            dt_step();
        }
        snprintf(name, sizeof name, "step%" PRIu64, n);
        for (int i = 0; i < launches; i++) launch(0, 1, name, grid, block, 200000);
        synchronize(-1, -1);
        if (lockstep) dt_range_pop();
    }
    exit(status);
}

/*
 * A traced program for the tests of `devtrace record`. It records something
 * (a user range, and kernels on an emulated device with --emulator), prints
 * "ready", sleeps once (a signal cuts the sleep short, as it does in real
 * programs, which then go on to exit), records a little more and exits 0,
 * or STATUS with --exit. With --handle it installs its own SIGINT and
 * SIGTERM handler, after devtrace's as a program's main does, and exits 7
 * when one came.
 *
 * usage: dt_workload [--emulator LIB] [--handle] [--exit STATUS] SLEEP_MS
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devtrace/devtrace.h"

static volatile sig_atomic_t g_signalled;

static void on_signal(int sig)
{
    (void)sig;
    g_signalled = 1;
}

static int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t);
static int (*synchronize)(int, int);

static void work(const char *name)
{
    uint64_t id;
    dt_range_push(name, &id);
    if (launch) {
        const int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
        launch(0, 1, "_ZN8workload6kernelEv", grid, block, 20000);
        synchronize(-1, -1);
    }
    dt_range_pop();
}

int main(int argc, char **argv)
{
    const char *emulator = NULL;
    int handle = 0, status = 0, i = 1;
    for (; i < argc - 1; i++) {
        if (strcmp(argv[i], "--emulator") == 0 && i + 1 < argc - 1) emulator = argv[++i];
        else if (strcmp(argv[i], "--exit") == 0 && i + 1 < argc - 1) status = atoi(argv[++i]);
        else if (strcmp(argv[i], "--handle") == 0) handle = 1;
        else break;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: dt_workload [--emulator LIB] [--handle] [--exit STATUS] SLEEP_MS\n");
        return 2;
    }
    long ms = atol(argv[i]);
    if (emulator) {
        void *h = dlopen(emulator, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = NULL;
        if (h) {
            *(void **)&init = dlsym(h, "emu_init");
            *(void **)&launch = dlsym(h, "emu_launch_kernel");
            *(void **)&synchronize = dlsym(h, "emu_synchronize");
        }
        if (!init || !launch || !synchronize || init() != 0) {
            fprintf(stderr, "dt_workload: cannot use the emulator %s\n", emulator);
            return 3;
        }
    }
    if (handle) {
        struct sigaction sa = {0};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    work("before");
    printf("ready\n");
    fflush(stdout);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL); /* once: a signal ends it early */
    work("after");
    return handle && g_signalled ? 7 : status;
}

/*
 * The traced program of bench/flight_memory.py: launches kernels on an
 * emulated vendor until the ring of a flight recorder (the injection
 * library's, DEVTRACE_FLIGHT_RECORDER) has been filled, says so, waits
 * until its standard input closes, and exits 0 (the end of a program that
 * did not fail: the ring is written by nobody).
 *
 *   flight_fill EMULATOR LAUNCHES
 *
 * Prints "filled" once every launch has completed and been delivered.
 * Launches are outside any user range, so that what the process holds is
 * the ring's (a launch inside a range adds a 16-byte External id link the
 * recording keeps whole, docs/on-demand.md).
 */
#define _GNU_SOURCE 1
#include "bench_emu.h"

#include <inttypes.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: flight_fill EMULATOR LAUNCHES\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = NULL, (*synchronize)(int, int) = NULL;
    int (*launch)(int, int, const char *, const int[3], const int[3], uint64_t) = NULL;
    if (h) {
        *(void **)&init = dlsym(h, "emu_init");
        *(void **)&launch = dlsym(h, "emu_launch_kernel");
        *(void **)&synchronize = dlsym(h, "emu_synchronize");
    }
    if (!init || !launch || !synchronize || init() != 0) {
        fprintf(stderr, "flight_fill: cannot use the emulator %s\n", argv[1]);
        return 3;
    }
    uint64_t n = strtoull(argv[2], NULL, 10);
    const int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    for (uint64_t i = 0; i < n; i++) {
        if (launch(0, (int)(i % 4), "flight_fill_kernel", grid, block, 1000) != 0) {
            fprintf(stderr, "flight_fill: launch %" PRIu64 " failed\n", i);
            return 4;
        }
        if (i % 4096 == 4095) synchronize(-1, -1);
    }
    synchronize(-1, -1);
    printf("filled\n");
    fflush(stdout);
    char buf[64];
    while (fread(buf, 1, sizeof buf, stdin) > 0) {}
    return 0;
}

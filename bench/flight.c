/*
 * The flight recorder's costs, on each emulated vendor, beside a normal
 * recording of the same launches in the same run:
 *
 *  (a) steady state: ns per launch (wall and process CPU, median of the
 *      rounds) of a session whose ring (8 MiB of 1 MiB buffers) is full and recycling (every buffer
 *      the vendor asks for evicts the oldest, which is counted), against a
 *      normal recording of the same launches; both including their stop;
 *  (b) memory: the process's RSS growth over M launches into a ring of
 *      SIZE bytes, against SIZE plus two vendor buffers;
 *  (c) a dump of a ring holding E events (not full: nothing evicted)
 *      written to a file, against a normal export of the same events
 *      (stop + dt_session_write) of the same launches.
 *
 *   bench_flight [launches] [rounds] [rss_launches] [dump_events] [backend emulator override-variable]...
 *
 * Defaults: 200,000 launches, 5 rounds, 10,000,000 launches for (b) (on
 * the first row only; 0 skips it), 1,000,000 events for (c). Each row runs
 * in its own process, pinned to one core (the emulator's delivery thread,
 * where the ring's eviction runs, shares it). Prints figures; asserts
 * nothing.
 */
#define _GNU_SOURCE 1
#include "bench_median.h"
#include "bench_emu.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devtrace/devtrace.h"
#include "devtrace_emu.h"

static bench_emu emu;

static const row built_rows[] = {
#include "bench_launch_rows.h"
};

static void launch_all(size_t launches)
{
    static const char *const names[4] = {"relu_kernel", "_Z11gemm_kernelPfS_", "softmax_kernel", "add_kernel"};
    emu_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.grid[0] = 128; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 256; d.block[1] = d.block[2] = 1;
    for (size_t i = 0; i < launches; i++) {
        d.stream = (int)(i & 3);
        d.name = names[i & 3];
        emu.launch(&d);
    }
    emu.synchronize(-1, -1);
}

static dt_session *start(const row *r, uint64_t ring_bytes, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = r->backend;
    c.flight_recorder_bytes = ring_bytes;
    if (buffer_size) c.buffer_size = buffer_size;
    dt_session *s = NULL;
    dt_status st = dt_session_create(&c, &s);
    if (st == DT_OK) st = dt_session_start(s);
    if (st != DT_OK && ring_bytes && strstr(dt_last_error(), "has no flight recorder")) {
        printf("%s: no flight recorder: %s\n", r->backend, dt_last_error());
        fflush(stdout);
        _exit(0);
    }
    if (st != DT_OK) {
        fprintf(stderr, "%s: %s\n", r->backend, dt_last_error());
        exit(1);
    }
    return s;
}

static void stop(const row *r, dt_session *s)
{
    if (dt_session_stop(s) != DT_OK) {
        fprintf(stderr, "%s: stop: %s\n", r->backend, dt_last_error());
        exit(1);
    }
}

typedef struct sample { double wall, cpu; } sample;

/* launches into a session (normal: ring_bytes 0), its stop included. */
static sample run(const row *r, size_t launches, uint64_t ring_bytes, uint64_t *evicted)
{
    dt_session *s = start(r, ring_bytes, (size_t)1 << 20);
    double w0 = wall_s(), c0 = cpu_s();
    launch_all(launches);
    stop(r, s);
    sample t = {wall_s() - w0, cpu_s() - c0};
    *evicted = dt_session_loss(s, DT_LOSS_RING_EVICTED);
    dt_session_destroy(s);
    return t;
}

static void report(const char *backend, const char *what, double *v, int rounds)
{
    double lo, hi, m = bench_median(v, rounds, &lo, &hi);
    printf("%s: %-46s %8.1f ns per launch (median of %d, %.1f..%.1f)\n", backend, what, m, rounds, lo, hi);
}

static int steady_state(const row *r, size_t launches, int rounds)
{
    /* a ring of 8 buffers of 1 MiB (the normal recording's buffers are of
       the same size): full after a few thousand launches, then every buffer
       the vendor asks for evicts one */
    const uint64_t ring = (uint64_t)8 << 20;
    double normal[BENCH_MAX_ROUNDS], flight[BENCH_MAX_ROUNDS], normal_cpu[BENCH_MAX_ROUNDS],
        flight_cpu[BENCH_MAX_ROUNDS];
    uint64_t evicted = 0, none = 0;
    dt_session_destroy(start(r, ring, 0)); /* says so where there is no flight recorder */
    launch_all(launches / 10 + 1);
    run(r, launches, 0, &none);
    for (int k = 0; k < rounds; k++) {
        sample a = run(r, launches, 0, &none), b = run(r, launches, ring, &evicted);
        normal[k] = a.wall / (double)launches * 1e9;
        normal_cpu[k] = a.cpu / (double)launches * 1e9;
        flight[k] = b.wall / (double)launches * 1e9;
        flight_cpu[k] = b.cpu / (double)launches * 1e9;
    }
    report(r->backend, "(a) record, wall", normal, rounds);
    report(r->backend, "(a) flight recorder 8 MiB, wall", flight, rounds);
    report(r->backend, "(a) record, CPU", normal_cpu, rounds);
    report(r->backend, "(a) flight recorder 8 MiB, CPU", flight_cpu, rounds);
    printf("%s: (a) the flight recorder's last run evicted %llu records of %zu launches\n", r->backend,
           (unsigned long long)evicted, launches);
    return 0;
}

static int memory(const row *r, size_t launches)
{
    const uint64_t ring = (uint64_t)64 << 20;
    const size_t buffer = (size_t)1 << 20;
    dt_session *s = start(r, ring, buffer);
    launch_all(200000); /* the ring fills: its buffers are resident */
    long before = rss_kib();
    double w0 = wall_s();
    launch_all(launches);
    long grown = rss_kib() - before;
    double took = wall_s() - w0;
    stop(r, s);
    printf("%s: (b) RSS grew by %ld KiB over %zu launches (%.1f s) into a ring of %llu KiB; bound: ring + 2 "
           "vendor buffers = %llu KiB (RSS at the start of the %zu: %ld KiB, with the full ring); %llu records "
           "evicted\n",
           r->backend, grown, launches, took, (unsigned long long)(ring >> 10),
           (unsigned long long)((ring + 2 * buffer) >> 10), launches, before,
           (unsigned long long)dt_session_loss(s, DT_LOSS_RING_EVICTED));
    dt_session_destroy(s);
    return 0;
}

/* (c): rounds alternating a normal recording's stop + write and a dump of
   the same launches; the median of each, wall and process CPU. */
static int dump(const row *r, size_t events, int rounds)
{
    char path[] = "/tmp/bench_flight_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    /* how many events a launch makes here, from a normal recording */
    dt_session *s = start(r, 0, 0);
    launch_all(10000);
    stop(r, s);
    size_t per = dt_session_event_count(s) / 10000;
    dt_session_destroy(s);
    if (per == 0) per = 1;
    size_t launches = events / per, kept = 0;
    double normal[BENCH_MAX_ROUNDS], dumped[BENCH_MAX_ROUNDS], normal_cpu[BENCH_MAX_ROUNDS],
        dumped_cpu[BENCH_MAX_ROUNDS];
    off_t bytes = 0;
    for (int k = 0; k < rounds; k++) {
        s = start(r, 0, 0);
        launch_all(launches);
        double w0 = wall_s(), c0 = cpu_s();
        stop(r, s);
        kept = dt_session_event_count(s);
        if (dt_session_write(s, path, DT_FORMAT_JSON) != DT_OK) return 1;
        normal[k] = wall_s() - w0;
        normal_cpu[k] = cpu_s() - c0;
        dt_session_destroy(s);
        /* a ring large enough for all of them: nothing is evicted */
        s = start(r, (uint64_t)1 << 30, 0);
        launch_all(launches);
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return 1;
        w0 = wall_s();
        c0 = cpu_s();
        if (dt_session_dump(s, fd, DT_FORMAT_JSON) != DT_OK) {
            fprintf(stderr, "%s: dump: %s\n", r->backend, dt_last_error());
            return 1;
        }
        dumped[k] = wall_s() - w0;
        dumped_cpu[k] = cpu_s() - c0;
        bytes = lseek(fd, 0, SEEK_END);
        stop(r, s);
        dt_session_destroy(s);
    }
    close(fd);
    unlink(path);
    double lo, hi, n = bench_median(normal, rounds, &lo, &hi), d = bench_median(dumped, rounds, &lo, &hi);
    double nc = bench_median(normal_cpu, rounds, &lo, &hi), dc = bench_median(dumped_cpu, rounds, &lo, &hi);
    printf("%s: (c) %zu events (%zu launches, %lld bytes), median of %d: stop + write %.3f s (CPU %.3f s), dump "
           "%.3f s (CPU %.3f s): %.2fx wall, %.2fx CPU\n",
           r->backend, kept, launches, (long long)bytes, rounds, n, nc, d, dc, d / n, dc / nc);
    return 0;
}

static int run_row(const row *r, size_t launches, int rounds, size_t rss_launches, size_t events)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = sched_getcpu();
    CPU_SET(cpu < 0 ? 0 : cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    if (bench_load_emulator(r, &emu) != 0) return 1;
    if (launches && steady_state(r, launches, rounds) != 0) return 1;
    if (rss_launches && memory(r, rss_launches) != 0) return 1;
    if (events && dump(r, events, rounds) != 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    size_t launches = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    size_t rss_launches = argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 10000000;
    size_t events = argc > 4 ? (size_t)strtoull(argv[4], NULL, 10) : 1000000;
    if (rounds <= 0) rounds = 5;
    if (rounds > BENCH_MAX_ROUNDS) rounds = BENCH_MAX_ROUNDS;
    const row *rows = built_rows;
    size_t nrows = sizeof built_rows / sizeof built_rows[0];
    row given[16];
    if (argc > 5) {
        nrows = 0;
        for (int i = 5; i + 2 < argc && nrows < 16; i += 3) given[nrows++] = (row){argv[i], argv[i + 1], argv[i + 2]};
        rows = given;
    }
    int failed = 0;
    for (size_t i = 0; i < nrows; i++) {
        /* backends without a flight recorder say so at start */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            int rc = run_row(&rows[i], launches, rounds, i == 0 ? rss_launches : 0, events);
            fflush(stdout);
            _exit(rc);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "%s: the benchmark failed\n", rows[i].backend);
            failed = 1;
        }
    }
    return failed;
}

/*
 * What listening for `devtrace trigger` costs a program while idle, and how
 * fast a trigger captures, on each emulated vendor, beside a baseline of the
 * same run:
 *
 *  (a) ns per kernel launch with no listener against the same launches with
 *      dt_control_listen() idle; the emulator's own counters of what is armed
 *      (subscribers, activity kinds, callback ids) and of callbacks delivered
 *      and buffers requested while idle are printed: 0 means no vendor work;
 *  (b) ns per user range (dt_range_push + dt_range_pop) with no listener
 *      against the same with the listener idle;
 *  (c) a trigger: a CAPTURE of D ms sent over the socket (as `devtrace
 *      trigger PID --duration` sends it) while a thread launches kernels;
 *      from the send to the window's opening (the vendor armed: the trigger's
 *      latency to the first event it can capture), to the first captured
 *      kernel's start, and to the reply (end to end, the window included).
 *
 *   bench_ondemand [launches] [rounds] [captures] [backend emulator override-variable]...
 *
 * Defaults: 200,000 launches and range calls, 7 rounds, 5 captures of 100
 * ms. Each row runs in its own process. Rounds alternate the two loops.
 * Prints figures; asserts nothing.
 */
#define _GNU_SOURCE 1
#include "bench_median.h"
#include "bench_emu.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devtrace/devtrace.h"
#include "devtrace_emu.h"
#include "protocol/control_client.h"

static bench_emu emu;

static const row built_rows[] = {
#include "bench_launch_rows.h"
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void launch_n(size_t launches)
{
    emu_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.grid[0] = 128; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 256; d.block[1] = d.block[2] = 1;
    d.name = "relu_kernel";
    for (size_t i = 0; i < launches; i++) {
        d.stream = (int)(i & 3);
        emu.launch(&d);
    }
    emu.synchronize(-1, -1);
}

static void ranges_n(size_t calls)
{
    for (size_t i = 0; i < calls; i++) {
        dt_range_push("forward", NULL);
        dt_range_pop();
    }
}

static void listen_or_die(const row *r, int on)
{
    if (!on) {
        dt_control_stop();
        return;
    }
    dt_config c;
    dt_config_init(&c);
    c.backend = r->backend;
    if (dt_control_listen(&c) != DT_OK) {
        fprintf(stderr, "%s: dt_control_listen: %s\n", r->backend, dt_last_error());
        exit(1);
    }
}

/* (a) and (b): the loop's ns per call without and with an idle listener. */
static void idle_costs(const row *r, size_t n, int rounds)
{
    double base_launch[BENCH_MAX_ROUNDS], idle_launch[BENCH_MAX_ROUNDS];
    double base_range[BENCH_MAX_ROUNDS], idle_range[BENCH_MAX_ROUNDS];
    launch_n(n / 10 + 1); /* warm */
    ranges_n(n / 10 + 1);
    emu_stats idle_stats;
    memset(&idle_stats, 0, sizeof idle_stats);
    for (int k = 0; k < rounds; k++) {
        uint64_t t0 = mono_ns();
        launch_n(n);
        uint64_t t1 = mono_ns();
        ranges_n(n);
        uint64_t t2 = mono_ns();
        listen_or_die(r, 1);
        emu.stats_reset();
        uint64_t t3 = mono_ns();
        launch_n(n);
        uint64_t t4 = mono_ns();
        ranges_n(n);
        uint64_t t5 = mono_ns();
        emu.stats_get(&idle_stats);
        listen_or_die(r, 0);
        base_launch[k] = (double)(t1 - t0) / (double)n;
        base_range[k] = (double)(t2 - t1) / (double)n;
        idle_launch[k] = (double)(t4 - t3) / (double)n;
        idle_range[k] = (double)(t5 - t4) / (double)n;
    }
    double lo, hi, m;
    m = bench_median(base_launch, rounds, &lo, &hi);
    printf("%s: (a) launch, no listener (baseline)        %8.1f ns (median of %d, %.1f..%.1f)\n", r->backend, m,
           rounds, lo, hi);
    double m2 = bench_median(idle_launch, rounds, &lo, &hi);
    printf("%s: (a) launch, listener idle                 %8.1f ns (%.1f..%.1f): %+.1f ns\n", r->backend, m2, lo,
           hi, m2 - m);
    printf("%s: (a) while idle the vendor had: %" PRIu64 " subscribers, %" PRIu64 " kinds enabled, %" PRIu64
           " callback ids enabled, %" PRIu64 " callbacks delivered, %" PRIu64 " buffers requested\n",
           r->backend, idle_stats.subscribers, idle_stats.kinds_enabled, idle_stats.callbacks_enabled,
           idle_stats.callbacks_delivered, idle_stats.buffers_requested);
    m = bench_median(base_range, rounds, &lo, &hi);
    printf("%s: (b) range push+pop, no listener (baseline) %7.1f ns (median of %d, %.1f..%.1f)\n", r->backend, m,
           rounds, lo, hi);
    m2 = bench_median(idle_range, rounds, &lo, &hi);
    printf("%s: (b) range push+pop, listener idle          %7.1f ns (%.1f..%.1f): %+.1f ns\n", r->backend, m2, lo,
           hi, m2 - m);
}

static atomic_int g_launching;

static void *launcher(void *arg)
{
    (void)arg;
    emu_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.grid[0] = d.grid[1] = d.grid[2] = 1;
    d.block[0] = d.block[1] = d.block[2] = 1;
    d.name = "tick_kernel";
    d.duration_ns = 1000;
    while (atomic_load(&g_launching)) {
        emu.launch(&d);
        usleep(20);
    }
    emu.synchronize(-1, -1);
    return NULL;
}

/* The first number after key in text, or 0. */
static uint64_t number_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* The earliest kernel start in a JSON trace, in realtime ns (the trace's
   "ts" is microseconds from its baseTimeNanoseconds, written with three
   decimals). */
static uint64_t first_kernel_ns(const char *text)
{
    uint64_t base = number_after(text, "\"baseTimeNanoseconds\": ");
    uint64_t best = UINT64_MAX;
    for (const char *p = strstr(text, "\"cat\":\"kernel\""); p; p = strstr(p + 1, "\"cat\":\"kernel\"")) {
        const char *ts = strstr(p, "\"ts\":");
        if (!ts) break;
        double us = strtod(ts + 5, NULL);
        uint64_t t = base + (uint64_t)(us * 1000.0 + 0.5);
        if (t < best) best = t;
    }
    return best;
}

static void trigger_latency(const row *r, int captures, uint64_t duration_ns)
{
    double arm[BENCH_MAX_ROUNDS], first[BENCH_MAX_ROUNDS], total[BENCH_MAX_ROUNDS];
    listen_or_die(r, 1);
    atomic_store(&g_launching, 1);
    pthread_t t;
    if (pthread_create(&t, NULL, launcher, NULL) != 0) exit(1);
    int done = 0;
    for (int k = 0; k < captures; k++) {
        char path[] = "/tmp/bench_ondemand_XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) exit(1);
        dt_ctl_msg req, reply;
        dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
        req.duration_ns = duration_ns;
        uint64_t r0 = real_ns(), m0 = mono_ns();
        dt_ctl_code rc = dt__ctl_send(getpid(), &req, fd, 60000, &reply);
        uint64_t m1 = mono_ns();
        off_t size = lseek(fd, 0, SEEK_END);
        char *text = size > 0 ? malloc((size_t)size + 1) : NULL;
        if (text && pread(fd, text, (size_t)size, 0) == size) {
            text[size] = 0;
        } else {
            free(text);
            text = NULL;
        }
        close(fd);
        unlink(path);
        if (rc != DT_CTL_SUCCESS || !text) {
            fprintf(stderr, "%s: (c) capture %d: %s: %s\n", r->backend, k, dt__ctl_code_name(rc), reply.text);
            free(text);
            continue;
        }
        uint64_t opened = number_after(text, "\"captureWindow\": {\"startNs\": ");
        uint64_t kernel = first_kernel_ns(text);
        free(text);
        if (!opened || kernel == UINT64_MAX) continue;
        arm[done] = (double)(opened - r0) / 1e6;
        first[done] = (double)(kernel - r0) / 1e6;
        total[done] = (double)(m1 - m0) / 1e6;
        done++;
    }
    atomic_store(&g_launching, 0);
    pthread_join(t, NULL);
    listen_or_die(r, 0);
    if (!done) {
        printf("%s: (c) no capture succeeded\n", r->backend);
        return;
    }
    double lo, hi, m;
    m = bench_median(arm, done, &lo, &hi);
    printf("%s: (c) trigger to window open (armed)        %8.2f ms (median of %d, %.2f..%.2f)\n", r->backend, m, done,
           lo, hi);
    m = bench_median(first, done, &lo, &hi);
    printf("%s: (c) trigger to first captured kernel      %8.2f ms (%.2f..%.2f)\n", r->backend, m, lo, hi);
    m = bench_median(total, done, &lo, &hi);
    printf("%s: (c) trigger end to end, %3.0f ms window     %8.2f ms (%.2f..%.2f): %.2f ms beyond the window\n",
           r->backend, (double)duration_ns / 1e6, m, lo, hi, m - (double)duration_ns / 1e6);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    int captures = argc > 3 ? atoi(argv[3]) : 5;
    if (n == 0 || rounds < 1 || rounds > BENCH_MAX_ROUNDS || captures < 0 || captures > BENCH_MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_ondemand [launches] [rounds 1..%d] [captures 0..%d] "
                        "[backend emulator override-variable]...\n", BENCH_MAX_ROUNDS, BENCH_MAX_ROUNDS);
        return 2;
    }
    const row *rows = built_rows;
    size_t count = sizeof built_rows / sizeof *built_rows;
    row given[16];
    if (argc > 4) {
        count = 0;
        for (int i = 4; i + 2 < argc && count < 16; i += 3) given[count++] = (row){argv[i], argv[i + 1], argv[i + 2]};
        rows = given;
    }
    printf("on-demand listening: %zu launches and range calls per round, %d rounds, %d captures of 100 ms\n", n,
           rounds, captures);
    fflush(stdout);
    int status = 0;
    for (size_t i = 0; i < count; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (bench_load_emulator(&rows[i], &emu) != 0) _exit(1);
            idle_costs(&rows[i], n, rounds);
            if (captures) trigger_latency(&rows[i], captures, 100000000u);
            fflush(stdout);
            _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
    }
    return status;
}

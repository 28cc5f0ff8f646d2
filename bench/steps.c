/*
 * What steps cost a program that records nothing: a user range
 * (dt_range_push + dt_range_pop of a short name) while nothing watches
 * steps, the same while something does (its name is then looked at: not a
 * step), dt_step() with nobody waiting, and the steps check alone (the
 * relaxed load of the watch count that every range push pays) beside the
 * same loop without it, the baseline of the same run. No session runs.
 *
 *   bench_steps [calls] [rounds]
 *
 * Rounds alternate the loops, on one core; the median round is printed with
 * the spread (min..max), in ns per call. Beside the timings, instructions
 * per call, counted by callgrind in a run of this program under it
 * (BENCH_STEPS_COUNT=N): each loop of N and of 2N calls between two dumps;
 * (2N - N) / N is the loop's instructions per call, fixed costs excluded.
 * Linked with the static library (the watch count is internal). Prints
 * figures; asserts nothing.
 */
#define _GNU_SOURCE 1
#include "bench_median.h"
#include "bench_emu.h"
#include "callgrind_split.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/steps.h"
#include "devtrace/devtrace.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

enum { L_EMPTY, L_CHECK, L_RANGE_IDLE, L_RANGE_WATCHED, L_STEP, L_COUNT };
static const char *const loop_name[L_COUNT] = {
    "empty loop (baseline of the check)", "steps check alone (idle)", "range push+pop, steps idle",
    "range push+pop, steps watched", "dt_step(), no waiter"};
static const char *const loop_key[L_COUNT] = {"empty", "check", "range-idle", "range-watched", "step"};

static const char *volatile g_name = "forward";

static void run_loop(int which, size_t calls)
{
    const char *name = g_name;
    switch (which) {
    case L_EMPTY:
        for (size_t i = 0; i < calls; i++) __asm__ volatile("" ::: "memory");
        break;
    case L_CHECK:
        for (size_t i = 0; i < calls; i++) {
            if (dt__core_steps_watched()) dt__core_step_range(name, 0);
            __asm__ volatile("" ::: "memory");
        }
        break;
    case L_RANGE_IDLE:
    case L_RANGE_WATCHED:
        if (which == L_RANGE_WATCHED) dt__core_steps_watch(1);
        for (size_t i = 0; i < calls; i++) {
            dt_range_push(name, NULL);
            dt_range_pop();
        }
        if (which == L_RANGE_WATCHED) dt__core_steps_watch(0);
        break;
    case L_STEP:
        for (size_t i = 0; i < calls; i++) dt_step();
        break;
    }
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Under callgrind: each loop of N and 2N calls between two dumps. */
static void count_loops(size_t calls)
{
    for (int l = 0; l < L_COUNT; l++) run_loop(l, 1000); /* warm-up */
    for (int l = 0; l < L_COUNT; l++)
        for (size_t m = 1; m <= 2; m++) {
#ifdef BENCH_HAVE_CALLGRIND
            char trigger[64];
            snprintf(trigger, sizeof trigger, "%s-%zu", loop_key[l], m);
            CALLGRIND_DUMP_STATS_AT("before");
            run_loop(l, m * calls);
            CALLGRIND_DUMP_STATS_AT(trigger);
#endif
        }
}

#ifdef BENCH_HAVE_CALLGRIND
typedef struct steps_dumps {
    uint64_t ir[L_COUNT][2]; /* loop l's run of (m + 1) * N calls */
    unsigned found;
} steps_dumps;

static void take_dump(void *user, const char *path)
{
    steps_dumps *d = user;
    char trigger[128];
    uint64_t v;
    if (cg_total(path, &v, trigger, sizeof trigger) != 0) return;
    for (int l = 0; l < L_COUNT; l++)
        for (int m = 0; m < 2; m++) {
            char want[96];
            snprintf(want, sizeof want, "Client Request: %s-%d", loop_key[l], m + 1);
            if (strcmp(trigger, want) == 0) {
                d->ir[l][m] = v;
                d->found |= 1u << (l * 2 + m);
            }
        }
}
#endif

/* Instructions per call of each loop; 0 when not counted (why printed). */
static int count_instructions(size_t calls, double per[L_COUNT], char *command, size_t command_size)
{
#ifndef BENCH_HAVE_CALLGRIND
    (void)calls, (void)per, (void)command, (void)command_size;
    printf("instructions not counted: built without valgrind/callgrind.h\n");
    return -1;
#else
    char dir[PATH_MAX], count[32], why[256];
    snprintf(count, sizeof count, "%zu", calls);
    const char *env[] = {"BENCH_STEPS_COUNT", count, NULL};
    if (cg_run_self("bench_steps", NULL, env, dir, sizeof dir, command, command_size, why, sizeof why) != 0) {
        printf("instructions not counted: %s\n", why);
        return -1;
    }
    steps_dumps d;
    memset(&d, 0, sizeof d);
    cg_each_dump(dir, take_dump, &d);
    cg_remove_dir(dir);
    if (d.found != (1u << (L_COUNT * 2)) - 1) {
        printf("instructions not counted: callgrind's dumps are missing\n");
        return -1;
    }
    for (int l = 0; l < L_COUNT; l++) per[l] = ((double)d.ir[l][1] - (double)d.ir[l][0]) / (double)calls;
    return 0;
#endif
}

int main(int argc, char **argv)
{
    const char *counting = getenv("BENCH_STEPS_COUNT");
    if (counting && *counting) {
        count_loops((size_t)strtoull(counting, NULL, 10));
        return 0;
    }
    size_t calls = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 2000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    if (calls == 0) calls = 2000000;
    if (rounds < 1 || rounds > BENCH_MAX_ROUNDS) rounds = 9;

    /* one core, the one this starts on */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);

    double ns[L_COUNT][BENCH_MAX_ROUNDS];
    for (int l = 0; l < L_COUNT; l++) run_loop(l, calls / 10); /* warm-up */
    for (int r = 0; r < rounds; r++)
        for (int l = 0; l < L_COUNT; l++) {
            double t0 = now_ns();
            run_loop(l, calls);
            ns[l][r] = (now_ns() - t0) / (double)calls;
        }

    double ir[L_COUNT];
    char command[PATH_MAX + 128];
    int counted = count_instructions(100000, ir, command, sizeof command) == 0;
    printf("steps: %zu calls x %d rounds, one core, no session; ns per call: median (min..max)%s\n", calls, rounds,
           counted ? "; instructions per call (callgrind)" : "");
    double med[L_COUNT], spread[L_COUNT];
    for (int l = 0; l < L_COUNT; l++) {
        double lo, hi;
        med[l] = bench_median(ns[l], rounds, &lo, &hi);
        spread[l] = (hi - lo) / 2;
        printf("  %-36s %7.2f ns (%.2f..%.2f)", loop_name[l], med[l], lo, hi);
        if (counted) printf("  %6.1f instructions", ir[l]);
        putchar('\n');
    }
    double added = med[L_CHECK] - med[L_EMPTY];
    printf("added per range call while idle: the check, %.2f ns against the empty loop", added);
    if (added < spread[L_CHECK] + spread[L_EMPTY]) printf(" (below noise, +-%.2f ns)", spread[L_CHECK] + spread[L_EMPTY]);
    if (counted) printf(", %.1f instructions", ir[L_CHECK] - ir[L_EMPTY]);
    printf("; of a %.2f ns range push+pop\n", med[L_RANGE_IDLE]);
    printf("watched, a range that is no step costs %+.2f ns", med[L_RANGE_WATCHED] - med[L_RANGE_IDLE]);
    if (counted) printf(", %+.1f instructions", ir[L_RANGE_WATCHED] - ir[L_RANGE_IDLE]);
    printf(" (its name is looked at)\n");
    if (counted) printf("  counted by: %s\n", command);
    return 0;
}

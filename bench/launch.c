/*
 * Cost per traced launch, end to end: kernel launches made through an
 * emulated vendor runtime (devtrace_emu.h) without devtrace, and with a
 * devtrace session recording them (API-enter callback, correlation log,
 * vendor buffers, decode, store, and the work done at stop), on one core.
 * Traced launches run twice: bare (the launch alone, the target's figure),
 * and each inside an External id of its own, as a framework marks each
 * operator (dt_external_push/pop: devtrace's stack, and the vendor's where
 * it has one, pushed and popped around every launch).
 *
 *   bench_launch [launches] [rounds] [backend emulator override-variable]...
 *
 * Without backend triples it runs the rows this program was built with (one
 * per emulated vendor, from bench/CMakeLists.txt). Each row runs in its own
 * process (vendor interfaces are process-wide), pinned to the core it starts
 * on, so that the emulator's delivery thread shares that core: its decoding
 * shows in the time. Rounds alternate untraced and traced runs; the median
 * round is reported with the spread, in wall time and in the process's CPU
 * time (all threads; less disturbed by other load on a shared machine).
 *
 * The emulator itself costs more per traced launch than a vendor library
 * (it writes records through locks and a queue); that cost is the emulator's,
 * measured by the "vendor only" run: the emulator with the vendor interface
 * armed by a client that only hands buffers back. devtrace's own cost is the
 * traced run minus that: a difference of two timings, printed as "below
 * noise (+-X ns)" where it is within X, the half spreads (max - min) of the
 * two timings' rounds added.
 *
 * Beside the timings, a figure that does not depend on the machine's load:
 * the instructions executed per launch, counted by callgrind (valgrind) in a
 * run of this program under it (BENCH_LAUNCH_COUNT=N, printed with the
 * figures). After a warm-up session, it records three pairs of sessions of N
 * and 2N launches, bare and inside External ids, each between two callgrind
 * dumps (all threads: the launching one, the emulator's delivery thread where
 * decoding runs, devtrace's own). Each dump's instructions are split by the
 * object that executed them: libdevtrace.so (devtrace), the emulator's
 * library, and the rest (the program); the C library and the loader count
 * for devtrace or the emulator where those called them (their calls'
 * inclusive cost). Calls from devtrace into the vendor's library (its record
 * iterator, flushes, its External-id stack) count for the vendor. Per launch:
 * (2N session - N session) / N, of the pair whose devtrace figure is the
 * median of the three, which holds every per-launch cost of the
 * session (the API-enter callback, the External-id push and pop, decoding,
 * and the work at stop for each record: clock mapping, External ids) and
 * none of its fixed cost, printed apart as "per session" (the N session less
 * N launches' worth: create, start, stop, destroy). Under callgrind a
 * session runs ~50x longer than natively, so the work that runs on the
 * clock is held to what a native session of 2N launches (a few ms) sees:
 * the emulator keeps its flush period off (DEVTRACE_EMU_FLUSH_PERIOD_FIXED,
 * where the vendor's period would deliver extra buffers every 100 ms), and a
 * drifting device clock drifts 50x faster (DEVTRACE_EMU_CLOCK_DRIFT_SCALE):
 * a clock whose samples one offset explains is mapped by an addition, and
 * callgrind's slow, widely bracketed clock reads would let a clock drifting
 * 17 ppm pass for one in the N session of a pair and not in the 2N one. The
 * session's clock samples (one a second) stay on: without them a session
 * that runs past 4 s under callgrind maps its times by division (the path of
 * clock segments longer than 4 s, which a native session never takes). A
 * sample (or another thread's work on the clock) that lands in one session
 * of a pair moves that pair's figure by a few per cent: the median of three
 * pairs is printed, with the range of the three.
 * BENCH_LAUNCH_INSTRUCTIONS=N sets N (0: not counted). Prints figures;
 * asserts nothing.
 */
#define _GNU_SOURCE 1
#include "bench_median.h"
#include "bench_emu.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callgrind_split.h"
#include "devtrace/devtrace.h"
#include "devtrace_emu.h"

/* The rows: backend name, emulator library, the variable devtrace reads
   the library's path from; generated from the build's vendor list. */
static bench_emu emu;

static const row built_rows[] = {
#include "bench_launch_rows.h"
};

#define KERNEL_NAMES 16
static char kernel_names[KERNEL_NAMES][48];

/* with_ids: an External id pushed around each launch, as a framework marks each operator. */
static void launch_all(size_t launches, int with_ids)
{
    emu_kernel_desc d;
    memset(&d, 0, sizeof d);
    d.grid[0] = 128; d.grid[1] = d.grid[2] = 1;
    d.block[0] = 256; d.block[1] = d.block[2] = 1;
    for (size_t i = 0; i < launches; i++) {
        d.stream = (int)(i & 3);
        d.name = kernel_names[i % KERNEL_NAMES];
        if (with_ids) dt_external_push(i + 1);
        emu.launch(&d);
        if (with_ids) dt_external_pop(NULL);
    }
}

typedef struct sample { double wall, cpu, stop_wall; } sample;

static sample run_untraced(size_t launches)
{
    double w0 = wall_s(), c0 = cpu_s();
    launch_all(launches, 0);
    return (sample){wall_s() - w0, cpu_s() - c0, 0};
}

/* with_ids: the vendor keeps an External id pushed, as for a program that
   pushes one around each launch (where the vendor has such records) */
static sample run_vendor_only(size_t launches, int with_ids)
{
    emu.null_client(with_ids ? 1 : EMU_NULL_CLIENT_NO_IDS);
    double w0 = wall_s(), c0 = cpu_s();
    launch_all(launches, 0);
    emu.null_client(0); /* flushes: delivery included */
    return (sample){wall_s() - w0, cpu_s() - c0, 0};
}

static sample run_traced(const row *r, size_t launches, int with_ids, size_t *stored, uint64_t *lost)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = r->backend;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) != DT_OK || dt_session_start(s) != DT_OK) {
        fprintf(stderr, "%s: %s\n", r->backend, dt_last_error());
        exit(1);
    }
    double w0 = wall_s(), c0 = cpu_s();
    launch_all(launches, with_ids);
    double w1 = wall_s();
    if (dt_session_stop(s) != DT_OK) {
        fprintf(stderr, "%s: stop: %s\n", r->backend, dt_last_error());
        exit(1);
    }
    sample t = {wall_s() - w0, cpu_s() - c0, wall_s() - w1};
    *stored = dt_session_event_count(s);
    *lost = 0;
    for (int k = 0; k < DT_LOSS_COUNT; k++) *lost += dt_session_loss(s, (dt_loss_reason)k);
    dt_session_destroy(s);
    return t;
}

#define MAX_ROUNDS BENCH_MAX_ROUNDS

static void report(const char *backend, const char *what, double *per_launch_ns, int rounds)
{
    double lo, hi, m = bench_median(per_launch_ns, rounds, &lo, &hi);
    printf("%s: %-42s %7.1f ns per launch (median of %d rounds, %.1f..%.1f)\n", backend, what, m, rounds,
           lo, hi);
}

/* Half the spread (max - min) of a timing's rounds: how far apart the same
   run lands from round to round on this machine at this load. */
static double half_spread(const double *per_launch_ns, int rounds)
{
    double lo, hi;
    bench_median(per_launch_ns, rounds, &lo, &hi);
    return (hi - lo) / 2;
}

/* A difference of timings, per round: its median is a figure only where it
   stands out of the noise, the half spreads of the timings it is made of
   added; within it the difference is not measured, and a difference below
   zero beyond it says the runs differ in more than devtrace. */
static void report_difference(const char *backend, const char *what, double *per_launch_ns, int rounds,
                              double noise)
{
    double lo, hi, m = bench_median(per_launch_ns, rounds, &lo, &hi);
    if (fabs(m) <= noise)
        printf("%s: %-42s below noise (\u00b1%.1f ns)\n", backend, what, noise);
    else if (m < 0)
        printf("%s: %-42s %7.1f ns per launch, below zero beyond the noise (\u00b1%.1f ns): the runs differ in "
               "more than devtrace\n",
               backend, what, m, noise);
    else
        printf("%s: %-42s %7.1f ns per launch (median of %d rounds, %.1f..%.1f; noise \u00b1%.1f)\n", backend, what,
               m, rounds, lo, hi, noise);
}

/* Which runs: all, or one (BENCH_LAUNCH_ONLY=untraced, vendor, traced,
   vendor-ids, ids or instructions). */
static int wanted(const char *mode)
{
    const char *only = getenv("BENCH_LAUNCH_ONLY");
    return !only || !*only || strcmp(only, mode) == 0;
}

static void check_counts(const row *r, const char *what, size_t stored, uint64_t lost)
{
    emu_stats st;
    emu.stats_get(&st);
    uint64_t produced = 0;
    for (int i = 0; i < EMU_KIND_COUNT; i++)
        if (i != EMU_KIND_EXTERNAL) produced += st.records[i];
    if (stored != produced || lost != 0)
        printf("%s: %s stored %zu of %llu records, lost %llu\n", r->backend, what, stored,
               (unsigned long long)produced, (unsigned long long)lost);
}

/* Loads the row's emulator and points devtrace at it; 0 on success. */
static int load_emulator(const row *r)
{
    if (bench_load_emulator(r, &emu) != 0) return 1;
    for (int i = 0; i < KERNEL_NAMES; i++)
        snprintf(kernel_names[i], sizeof kernel_names[i], i % 2 ? "_Z12gemm_kernel%dPfS_" : "relu_kernel_%d", i);
    return 0;
}

/* Instructions per launch, counted by callgrind: this program runs itself
   under valgrind --tool=callgrind with BENCH_LAUNCH_COUNT=N set (count_row),
   and splits each dump by object (callgrind_split.h). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

/* The counted sessions: bare, then with External ids, of N and 2N launches. */
static const char *const counted[2][2] = {{"bare-n", "bare-2n"}, {"ids-n", "ids-2n"}};
/* Pairs of counted sessions of each kind: the median pair's figure is
   printed (a clock sample or the store's preparer landing in one session of
   a pair moves its difference). */
#define COUNTED_PAIRS 3

/* Under callgrind: after a warm-up (the first sessions of the process fault
   their memory in and initialize once), four sessions each between two dumps. */
static int count_row(const row *r, size_t launches)
{
    if (load_emulator(r) != 0) return 1;
    size_t stored = 0;
    uint64_t lost = 0;
    run_untraced(1000);
    for (int with_ids = 0; with_ids < 2; with_ids++) {
        emu.stats_reset();
        run_traced(r, 1000, with_ids, &stored, &lost);
        check_counts(r, "warm-up session", stored, lost);
    }
    for (int pair = 0; pair < COUNTED_PAIRS; pair++)
        for (int with_ids = 0; with_ids < 2; with_ids++)
            for (size_t m = 1; m <= 2; m++) {
                char trigger[64];
                snprintf(trigger, sizeof trigger, "%s-%d", counted[with_ids][m - 1], pair);
                emu.stats_reset();
#ifdef BENCH_HAVE_CALLGRIND
                CALLGRIND_DUMP_STATS_AT("before");
#endif
                run_traced(r, m * launches, with_ids, &stored, &lost);
#ifdef BENCH_HAVE_CALLGRIND
                CALLGRIND_DUMP_STATS_AT(trigger);
#endif
                (void)trigger;
                check_counts(r, "counted session", stored, lost);
            }
    return 0;
}

/* ir[pair][with_ids][m]: the parts of the session of (m + 1) * N launches */
typedef struct launch_dumps {
    const char *emulator;
    uint64_t ir[COUNTED_PAIRS][2][2][CG_PARTS];
    unsigned found;
} launch_dumps;

static void take_dump(void *user, const char *path)
{
    launch_dumps *d = user;
    char trigger[64];
    uint64_t parts[CG_PARTS];
    if (cg_split(path, d->emulator, parts, trigger, sizeof trigger) != 0) return;
    for (int k = 0; k < COUNTED_PAIRS; k++)
        for (int i = 0; i < 2; i++)
            for (int m = 0; m < 2; m++) {
                char want[96];
                snprintf(want, sizeof want, "Client Request: %s-%d", counted[i][m], k);
                if (strcmp(trigger, want) == 0) {
                    memcpy(d->ir[k][i][m], parts, sizeof parts);
                    d->found |= 1u << ((k * 2 + i) * 2 + m);
                }
            }
}

/* Runs count_row under callgrind and prints, per launch, the instructions
   devtrace, the emulator and the program executed (the difference between
   the sessions of 2N and N launches, divided by N), and per session the
   fixed rest (N launches' session less N times the per-launch figure). */
static void count_instructions(const row *r, size_t launches)
{
    const char *p = r->backend;
#ifndef BENCH_HAVE_CALLGRIND
    printf("%s: instructions not counted: built without valgrind/callgrind.h\n", p);
    return;
#endif
    char dir[PATH_MAX], count[32], command[2048], why[256];
    snprintf(count, sizeof count, "%zu", launches);
    char *args[] = {"0", "0", (char *)r->backend, (char *)r->emulator, (char *)r->override_variable, NULL};
    const char *env[] = {"BENCH_LAUNCH_COUNT", count, "DEVTRACE_EMU_FLUSH_PERIOD_FIXED", "1",
                         "DEVTRACE_EMU_CLOCK_DRIFT_SCALE", "50", NULL};
    if (cg_run_self("bench_launch", args, env, dir, sizeof dir, command, sizeof command, why, sizeof why) != 0) {
        printf("%s: instructions not counted: %s\n", p, why);
        return;
    }
    launch_dumps dumps = {.emulator = r->emulator};
    cg_each_dump(dir, take_dump, &dumps);
    cg_remove_dir(dir);
    if (dumps.found != (1u << (COUNTED_PAIRS * 4)) - 1) {
        printf("%s: instructions not counted: callgrind's dumps are missing\n", p);
        return;
    }
    static const char *const what[2] = {"bare", "External ids"};
    for (int i = 0; i < 2; i++) {
        /* each pair's figure; the pair whose devtrace figure is the median */
        double per[COUNTED_PAIRS][CG_PARTS], fixed[COUNTED_PAIRS][CG_PARTS], dt[COUNTED_PAIRS];
        for (int k = 0; k < COUNTED_PAIRS; k++) {
            for (int c = 0; c < CG_PARTS; c++) {
                per[k][c] = ((double)dumps.ir[k][i][1][c] - (double)dumps.ir[k][i][0][c]) / (double)launches;
                fixed[k][c] = (double)dumps.ir[k][i][0][c] - per[k][c] * (double)launches;
            }
            dt[k] = per[k][CG_DEVTRACE];
        }
        double lo, hi, median = bench_median(dt, COUNTED_PAIRS, &lo, &hi);
        int k = 0;
        while (k + 1 < COUNTED_PAIRS && dt[k] != median) k++;
        printf("%s: instructions per launch, %-12s devtrace %6.1f (target <= 400; pairs %.1f..%.1f), emulator %6.1f, "
               "program %5.1f; per session devtrace %.0f, emulator %.0f\n",
               p, what[i], per[k][CG_DEVTRACE], lo, hi, per[k][CG_EMULATOR], per[k][CG_PROGRAM],
               fixed[k][CG_DEVTRACE], fixed[k][CG_EMULATOR]);
    }
    printf("%s:   counted by: %s\n", p, command);
}

static int run_row(const row *r, size_t launches, int rounds)
{
    /* one core: the emulator's delivery thread (where decoding runs) and
       devtrace's store preparer share it */
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = sched_getcpu();
    CPU_SET(cpu < 0 ? 0 : cpu, &set);
    sched_setaffinity(0, sizeof set, &set);

    if (load_emulator(r) != 0) return 1;
    int all = wanted("untraced") && wanted("vendor") && wanted("traced") && wanted("vendor-ids") && wanted("ids");
    double n = (double)launches;
    size_t stored = 0;
    uint64_t lost = 0;

    /* The first session of the process faults its store and vendor buffers
       in; later sessions reuse that memory. Warm the emulator up first. */
    run_untraced(launches / 10 + 1);
    sample first = {0, 0, 0};
    if (wanted("traced")) {
        emu.stats_reset();
        first = run_traced(r, launches, 0, &stored, &lost);
        check_counts(r, "first session", stored, lost);
    }

    /* per launch, ns: wall and CPU of each run; vendor_ids and ids: with an
       External id around each launch */
    double untraced[MAX_ROUNDS], vendor[MAX_ROUNDS], traced[MAX_ROUNDS], vendor_ids[MAX_ROUNDS], ids[MAX_ROUNDS];
    double untraced_cpu[MAX_ROUNDS], vendor_cpu[MAX_ROUNDS], traced_cpu[MAX_ROUNDS], vendor_ids_cpu[MAX_ROUNDS],
        ids_cpu[MAX_ROUNDS];
    double added[MAX_ROUNDS], added_cpu[MAX_ROUNDS], own[MAX_ROUNDS], own_cpu[MAX_ROUNDS];
    double own_ids_cpu[MAX_ROUNDS], id_cost_cpu[MAX_ROUNDS];
    double at_stop[MAX_ROUNDS], first_own[1], first_own_cpu[1];
    sample u = {0, 0, 0}, v = {0, 0, 0}, t = {0, 0, 0}, vi = {0, 0, 0}, ti = {0, 0, 0};
    size_t stored_ids = 0;
    for (int k = 0; k < rounds; k++) {
        if (wanted("untraced")) u = run_untraced(launches);
        if (wanted("vendor")) v = run_vendor_only(launches, 0);
        if (wanted("traced")) {
            emu.stats_reset();
            t = run_traced(r, launches, 0, &stored, &lost);
            check_counts(r, "traced run", stored, lost);
        }
        if (wanted("vendor-ids")) vi = run_vendor_only(launches, 1);
        if (wanted("ids")) {
            emu.stats_reset();
            ti = run_traced(r, launches, 1, &stored_ids, &lost);
            check_counts(r, "traced run with External ids", stored_ids, lost);
        }
#define PER_LAUNCH(x) ((x) / n * 1e9)
        untraced[k] = PER_LAUNCH(u.wall);
        vendor[k] = PER_LAUNCH(v.wall);
        traced[k] = PER_LAUNCH(t.wall);
        vendor_ids[k] = PER_LAUNCH(vi.wall);
        ids[k] = PER_LAUNCH(ti.wall);
        untraced_cpu[k] = PER_LAUNCH(u.cpu);
        vendor_cpu[k] = PER_LAUNCH(v.cpu);
        traced_cpu[k] = PER_LAUNCH(t.cpu);
        vendor_ids_cpu[k] = PER_LAUNCH(vi.cpu);
        ids_cpu[k] = PER_LAUNCH(ti.cpu);
        at_stop[k] = PER_LAUNCH(t.stop_wall);
        if (k == 0) {
            first_own[0] = PER_LAUNCH(first.wall - v.wall);
            first_own_cpu[0] = PER_LAUNCH(first.cpu - v.cpu);
        }
#undef PER_LAUNCH
        added[k] = traced[k] - untraced[k];
        added_cpu[k] = traced_cpu[k] - untraced_cpu[k];
        own[k] = traced[k] - vendor[k];
        own_cpu[k] = traced_cpu[k] - vendor_cpu[k];
        own_ids_cpu[k] = ids_cpu[k] - vendor_ids_cpu[k];
        id_cost_cpu[k] = own_ids_cpu[k] - own_cpu[k];
    }
    printf("%s: %zu launches per run, %d rounds, pinned to CPU %d, %zu events stored per traced run\n", r->backend,
           launches, rounds, cpu, stored);
    if (wanted("untraced")) report(r->backend, "untraced launch (wall)", untraced, rounds);
    if (wanted("vendor")) report(r->backend, "vendor only: emulator armed (wall)", vendor, rounds);
    if (wanted("traced")) {
        report(r->backend, "traced launch (wall)", traced, rounds);
        report(r->backend, "  of which in dt_session_stop (wall)", at_stop, rounds);
    }
    if (wanted("vendor-ids")) report(r->backend, "vendor only, External ids (wall)", vendor_ids, rounds);
    if (wanted("ids")) report(r->backend, "traced, External ids (wall)", ids, rounds);
    fflush(stdout); /* the child leaves by _exit */
    if (!all) return 0;
    /* the noise of each timing, wall and CPU */
    double n_untraced = half_spread(untraced, rounds), n_vendor = half_spread(vendor, rounds),
           n_traced = half_spread(traced, rounds);
    double n_untraced_cpu = half_spread(untraced_cpu, rounds), n_vendor_cpu = half_spread(vendor_cpu, rounds),
           n_traced_cpu = half_spread(traced_cpu, rounds), n_vendor_ids_cpu = half_spread(vendor_ids_cpu, rounds),
           n_ids_cpu = half_spread(ids_cpu, rounds);
    const char *p = r->backend;
    report_difference(p, "added by tracing (wall)", added, rounds, n_traced + n_untraced);
    report_difference(p, "added by tracing (CPU)", added_cpu, rounds, n_traced_cpu + n_untraced_cpu);
    report_difference(p, "devtrace's own share (wall; target <= 100)", own, rounds, n_traced + n_vendor);
    report_difference(p, "devtrace's own share (CPU; target <= 100)", own_cpu, rounds, n_traced_cpu + n_vendor_cpu);
    report_difference(p, "  first session, fresh memory (wall)", first_own, 1, n_traced + n_vendor);
    report_difference(p, "  first session, fresh memory (CPU)", first_own_cpu, 1, n_traced_cpu + n_vendor_cpu);
    report_difference(p, "devtrace's own share, External ids (CPU)", own_ids_cpu, rounds,
                      n_ids_cpu + n_vendor_ids_cpu);
    report_difference(p, "  of which the ids' push and pop (CPU)", id_cost_cpu, rounds,
                      n_ids_cpu + n_vendor_ids_cpu + n_traced_cpu + n_vendor_cpu);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    size_t launches = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 0;
    if (launches == 0) launches = 200000;
    if (rounds <= 0) rounds = 7;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    const row *rows = built_rows;
    size_t nrows = sizeof built_rows / sizeof built_rows[0];
    row given[16];
    if (argc > 3) {
        nrows = 0;
        for (int i = 3; i + 2 < argc && nrows < 16; i += 3)
            given[nrows++] = (row){argv[i], argv[i + 1], argv[i + 2]};
        rows = given;
    }
    const char *count = getenv("BENCH_LAUNCH_COUNT");
    if (count && *count) return nrows == 1 ? count_row(&rows[0], (size_t)strtoull(count, NULL, 10)) : 2;
    const char *instructions = getenv("BENCH_LAUNCH_INSTRUCTIONS");
    size_t counted_launches = instructions && *instructions ? (size_t)strtoull(instructions, NULL, 10) : 2000;
    int timed = wanted("untraced") || wanted("vendor") || wanted("traced") || wanted("vendor-ids") || wanted("ids");
    int failed = 0;
    for (size_t i = 0; i < nrows; i++) {
        fflush(stdout);
        if (timed) {
            pid_t pid = fork();
            if (pid == 0) _exit(run_row(&rows[i], launches, rounds));
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "%s: the benchmark failed\n", rows[i].backend);
                failed = 1;
            }
        }
        if (wanted("instructions") && counted_launches > 0) count_instructions(&rows[i], counted_launches);
    }
    return failed;
}

/* The flight recorder's dump triggers: the exact rolling median, the slow
   step after its warm-up and grace period, the stall once per stall, the
   dump signal (coalesced, survived, opt-in, restored), the cooldown and the
   cap with exact skipped counts, the last dump of a failed program, the
   dump files' names and failures, and the options that set them. The
   clock and the dump are the test's; the thread, the signal handler and
   the files are the real ones. */
#include "ondemand/policy.h"
#include "ondemand/triggers.h"
#include "base/log.h"
#include "base/units.h"
#include "core/steps.h"
#include "protocol/record.h"
#include "dt_check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MS UINT64_C(1000000)
#define S UINT64_C(1000000000)

/* ------------------------------------------------------------------ */
/* The test's clock, dump and step source                               */
/* ------------------------------------------------------------------ */
static _Atomic uint64_t fake_now = 1000 * S;
static struct {
    pthread_mutex_t mu;
    int dumps, reports, failures;
    uint64_t at[64];         /* when each dump began, on the fake clock */
    char why[64][512];       /* each report's cause */
    char path[64][4200];     /* each report's file */
    dt_status fail_with;     /* what the dump returns (DT_OK: writes) */
} seen = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0}, {{0}}, {{0}}, DT_OK};
static dt_flight_step_observer observer;
static void *observer_ctx;
static char dir[64];

static uint64_t fake_clock(void *ctx)
{
    (void)ctx;
    return atomic_load(&fake_now);
}

static dt_status fake_dump(void *ctx, dt_session *s, int fd, dt_format format, const char *key, const char *note)
{
    (void)ctx, (void)s, (void)format, (void)key, (void)note;
    pthread_mutex_lock(&seen.mu);
    if (seen.dumps < 64) seen.at[seen.dumps] = atomic_load(&fake_now);
    seen.dumps++;
    dt_status st = seen.fail_with;
    pthread_mutex_unlock(&seen.mu);
    if (st != DT_OK) return dt__error(st, "the test's dump fails");
    static const char text[] = "{\"traceEvents\": []}\n";
    return write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1) ? DT_OK : DT_ERR_IO;
}

static void fake_observe(void *ctx, dt_flight_step_observer fn, void *octx)
{
    (void)ctx;
    observer = fn;
    observer_ctx = octx;
}

static void fake_report(void *ctx, const dt_flight_dump *d)
{
    (void)ctx;
    pthread_mutex_lock(&seen.mu);
    int i = seen.reports++;
    if (i < 64) {
        snprintf(seen.why[i], sizeof seen.why[i], "%s", d->why);
        snprintf(seen.path[i], sizeof seen.path[i], "%s", d->path);
    }
    if (d->status != DT_OK) seen.failures++;
    pthread_mutex_unlock(&seen.mu);
}

static int dumps_made(void)
{
    pthread_mutex_lock(&seen.mu);
    int n = seen.dumps;
    pthread_mutex_unlock(&seen.mu);
    return n;
}

/* Each test's steps are numbered from 1 */
static uint64_t step_number;

static dt_flight_triggers *start(const dt_dump_triggers *cfg, const char *name)
{
    step_number = 0;
    pthread_mutex_lock(&seen.mu);
    seen.dumps = seen.reports = seen.failures = 0;
    seen.fail_with = DT_OK;
    pthread_mutex_unlock(&seen.mu);
    char output[256];
    snprintf(output, sizeof output, "%s/%s", dir, name);
    dt_flight_hooks hooks = {NULL, fake_clock, fake_dump, fake_observe, fake_report};
    dt_flight_triggers *t = NULL;
    dt_status st = dt__ondemand_triggers_start(NULL, output, DT_FORMAT_JSON, cfg, &hooks, &t);
    REQUIRE_EQ(st, DT_OK);
    REQUIRE(observer == dt__ondemand_triggers_step && observer_ctx == t);
    return t;
}

/* The clock moves on by ns and a step begins, the one before it having
   lasted ns (the first: none before it); the thread has seen it when this
   returns. */
static void step(dt_flight_triggers *t, uint64_t ns)
{
    atomic_fetch_add(&fake_now, ns);
    step_number++;
    observer(observer_ctx, step_number, 0, step_number == 1 ? 0 : ns);
    dt__ondemand_triggers_sync(t);
}

static void advance(dt_flight_triggers *t, uint64_t ns)
{
    atomic_fetch_add(&fake_now, ns);
    dt__ondemand_triggers_sync(t);
}

static dt_dump_triggers defaults(void)
{
    dt_dump_triggers cfg;
    dt__ondemand_dump_triggers_init(&cfg);
    return cfg;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------------------ */
/* The median                                                           */
/* ------------------------------------------------------------------ */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_median_is_exact_over_the_last_64_steps(void)
{
    dt_dump_triggers cfg = defaults();
    dt_flight_policy p;
    dt__ondemand_policy_init(&p, &cfg);
    CHECK_EQ(dt__ondemand_policy_median(&p), 0);
    uint64_t all[3000], seed = 12345;
    for (int i = 0; i < 3000; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        /* few distinct values, so that equal durations come and go */
        all[i] = 1 + (i < 1500 ? (seed >> 33) % 17 : (seed >> 20) % 1000000007u);
        dt__ondemand_policy_step(&p, (uint64_t)i + 2, (uint64_t)i * S, all[i]);
        int n = i + 1 < DT_FLIGHT_WINDOW ? i + 1 : DT_FLIGHT_WINDOW;
        uint64_t last[DT_FLIGHT_WINDOW];
        memcpy(last, &all[i + 1 - n], (size_t)n * sizeof *last);
        qsort(last, (size_t)n, sizeof *last, cmp_u64);
        uint64_t want = n % 2 ? last[n / 2] : last[n / 2 - 1] + (last[n / 2] - last[n / 2 - 1]) / 2;
        REQUIRE_EQ(dt__ondemand_policy_median(&p), want);
    }
}

/* ------------------------------------------------------------------ */
/* Slow step                                                            */
/* ------------------------------------------------------------------ */
static void test_one_slow_step_gives_one_dump_after_the_grace_period(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 3;
    dt_flight_triggers *t = start(&cfg, "slow.json");
    for (int i = 0; i < 31; i++) step(t, 100 * MS);
    CHECK_EQ(dt__ondemand_triggers_median(t), 100 * MS);
    step(t, 350 * MS); /* 3.5 x the median: slow */
    uint64_t ended = atomic_load(&fake_now);
    /* the grace period: max(1 s, 2 x 100 ms) after the step ended */
    for (int i = 0; i < 9; i++) step(t, 100 * MS);
    advance(t, 99 * MS);
    CHECK(dumps_made() == 0, "dumped inside the grace period");
    advance(t, 1 * MS);
    REQUIRE_EQ(dumps_made(), 1);
    CHECK_EQ(seen.at[0], ended + 1 * S);
    for (int i = 0; i < 100; i++) step(t, 100 * MS);
    advance(t, 200 * S);
    CHECK(dumps_made() == 1, "one slow step, one dump");
    CHECK(strstr(seen.why[0], "slow step 31: 350.000 ms, 3.5 x the median 100.000 ms") != NULL, "%s", seen.why[0]);
    char want[256];
    snprintf(want, sizeof want, "%s/slow.dump1.json", dir);
    CHECK_STR(seen.path[0], want);
    CHECK(file_exists(want));
    dt_flight_summary sum;
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.written, 1);
    CHECK(sum.skipped_cooldown + sum.skipped_cap + sum.failed == 0);
}

static void test_grace_period_is_twice_a_long_median_or_as_set(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 2;
    cfg.warmup_steps = 3;
    dt_flight_triggers *t = start(&cfg, "grace.json");
    for (int i = 0; i < 5; i++) step(t, 2 * S);
    step(t, 5 * S);
    advance(t, 4 * S - 1);
    CHECK_EQ(dumps_made(), 0);
    advance(t, 1);
    CHECK_EQ(dumps_made(), 1); /* 2 x the median of 2 s */
    dt__ondemand_triggers_stop(t, NULL, NULL);

    cfg.grace_ns = 250 * MS;
    t = start(&cfg, "grace2.json");
    for (int i = 0; i < 5; i++) step(t, 2 * S);
    step(t, 5 * S);
    advance(t, 249 * MS);
    CHECK_EQ(dumps_made(), 0);
    advance(t, 1 * MS);
    CHECK_EQ(dumps_made(), 1);
    dt__ondemand_triggers_stop(t, NULL, NULL);
}

static void test_warmup_steps_are_not_judged(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 3;
    cfg.cooldown_ns = 0;
    dt_flight_triggers *t = start(&cfg, "warmup.json");
    step(t, 0); /* the first boundary: no step before it */
    for (int i = 0; i < 9; i++) step(t, 100 * MS);
    step(t, 10 * S); /* the 10th step timed: still warming up */
    advance(t, 60 * S);
    CHECK(dumps_made() == 0, "a warm-up step made a dump");
    dt__ondemand_triggers_stop(t, NULL, NULL);

    t = start(&cfg, "warmup2.json");
    step(t, 0);
    for (int i = 0; i < 10; i++) step(t, 100 * MS);
    step(t, 10 * S); /* the 11th: judged */
    advance(t, 60 * S);
    CHECK_EQ(dumps_made(), 1);
    dt__ondemand_triggers_stop(t, NULL, NULL);
}

static void test_a_step_at_k_times_the_median_is_not_slow(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 3;
    cfg.warmup_steps = 0;
    dt_flight_triggers *t = start(&cfg, "edge.json");
    for (int i = 0; i < 20; i++) step(t, 100 * MS);
    step(t, 300 * MS);
    advance(t, 60 * S);
    CHECK_EQ(dumps_made(), 0);
    step(t, 100 * MS);
    step(t, 301 * MS);
    advance(t, 60 * S);
    CHECK_EQ(dumps_made(), 1);
    dt__ondemand_triggers_stop(t, NULL, NULL);
}

/* The process's own steps: dt_step() and ProfilerStep# ranges reach the
   triggers (ranges are looked at only while they run), and a slow one
   dumps. Durations and the clock are real here: the normal steps sleep
   20 ms and the slow one 1 s, and every step judged slow gets a dump of its
   own (no cooldown, no grace), so that a loaded machine that makes a
   normal step look slow adds a dump but cannot hide the slow one. */
static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void test_the_process_steps_reach_the_triggers(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 3;
    cfg.warmup_steps = 3;
    cfg.cooldown_ns = 0;
    cfg.grace_ns = 1;
    cfg.max_dumps = 100;
    char output[256];
    snprintf(output, sizeof output, "%s/steps.json", dir);
    dt_flight_hooks hooks = {NULL, NULL, fake_dump, NULL, fake_report};
    dt_flight_triggers *t = NULL;
    pthread_mutex_lock(&seen.mu);
    seen.dumps = seen.reports = 0;
    pthread_mutex_unlock(&seen.mu);
    CHECK(!dt__core_steps_watched());
    REQUIRE_EQ(dt__ondemand_triggers_start(NULL, output, DT_FORMAT_JSON, &cfg, &hooks, &t), DT_OK);
    CHECK(dt__core_steps_watched());
    for (int i = 0; i < 3; i++) {
        dt_step();
        sleep_ms(20);
    }
    for (int i = 1; i <= 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", 100 + i);
        REQUIRE_EQ(dt_range_push(name, NULL), DT_OK);
        sleep_ms(20);
        dt_range_pop();
    }
    uint64_t median = dt__ondemand_triggers_median(t);
    CHECK(median >= 20 * MS, "median %llu ns", (unsigned long long)median);
    REQUIRE_EQ(dt_range_push("ProfilerStep#104", NULL), DT_OK);
    sleep_ms(1000);
    dt_range_pop();
    REQUIRE_EQ(dt_range_push("ProfilerStep#105", NULL), DT_OK);
    dt_range_pop();
    dt__ondemand_triggers_sync(t);
    int found = 0;
    pthread_mutex_lock(&seen.mu);
    for (int i = 0; i < seen.reports && i < 64; i++) found |= strstr(seen.why[i], "slow step 104: ") != NULL;
    pthread_mutex_unlock(&seen.mu);
    CHECK(found, "no dump for step 104 among %d", seen.reports);
    dt__ondemand_triggers_stop(t, NULL, NULL);
    CHECK(!dt__core_steps_watched());
}

/* ------------------------------------------------------------------ */
/* Stall                                                                */
/* ------------------------------------------------------------------ */
static void test_stall_dumps_once_per_stall(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.stall_ns = 5 * S;
    cfg.cooldown_ns = 0;
    dt_flight_triggers *t = start(&cfg, "stall.json");
    advance(t, 100 * S);
    CHECK(dumps_made() == 0, "a stall before the first step");
    step(t, 0);
    step(t, 1 * S);
    advance(t, 5 * S - 1);
    CHECK_EQ(dumps_made(), 0);
    advance(t, 1);
    CHECK_EQ(dumps_made(), 1);
    CHECK(strstr(seen.why[0], "stall: no step for 5.000 s after step") != NULL, "%s", seen.why[0]);
    advance(t, 1000 * S);
    CHECK(dumps_made() == 1, "the same stall dumped again");
    step(t, 1 * S);
    advance(t, 6 * S);
    CHECK_EQ(dumps_made(), 2);
    advance(t, 60 * S);
    CHECK_EQ(dumps_made(), 2);
    dt_flight_summary sum;
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.written, 2);
}

/* ------------------------------------------------------------------ */
/* Signal                                                               */
/* ------------------------------------------------------------------ */
static void *send_signals(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) kill(getpid(), SIGUSR2);
    return NULL;
}

static void test_a_thousand_signals_give_one_dump_per_cooldown(void)
{
    struct sigaction before;
    sigaction(SIGUSR2, NULL, &before);
    dt_dump_triggers cfg = defaults();
    cfg.signal = SIGUSR2;
    cfg.max_dumps = 100;
    dt_flight_triggers *t = start(&cfg, "signal.json");
    pthread_t other;
    REQUIRE_EQ(pthread_create(&other, NULL, send_signals, NULL), 0);
    for (int i = 0; i < 1000; i++) raise(SIGUSR2);
    pthread_join(other, NULL);
    dt__ondemand_triggers_sync(t);
    CHECK_EQ(dumps_made(), 1);
    advance(t, 59 * S);
    for (int i = 0; i < 1000; i++) raise(SIGUSR2);
    dt__ondemand_triggers_sync(t);
    CHECK(dumps_made() == 1, "a dump inside the cooldown");
    advance(t, 1 * S);
    for (int i = 0; i < 1000; i++) raise(SIGUSR2);
    dt__ondemand_triggers_sync(t);
    CHECK_EQ(dumps_made(), 2);
    CHECK(strstr(seen.why[1], "signal SIGUSR2") != NULL, "%s", seen.why[1]);
    dt_flight_summary sum;
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.written, 2);
    CHECK(sum.skipped_cooldown >= 1);
    struct sigaction after;
    sigaction(SIGUSR2, NULL, &after);
    CHECK(after.sa_handler == before.sa_handler, "the previous disposition is not back");
}

static void test_no_handler_unless_a_signal_is_asked_for(void)
{
    static struct sigaction all[NSIG];
    struct sigaction before, during;
    sigaction(SIGUSR1, NULL, &before);
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, NULL, &all[sig]);
    dt_dump_triggers cfg = defaults();
    cfg.stall_ns = 1 * S;
    dt_flight_triggers *t = start(&cfg, "nosignal.json");
    for (int sig = 1; sig < NSIG; sig++) {
        if (sigaction(sig, NULL, &during) != 0) continue;
        CHECK(during.sa_handler == all[sig].sa_handler, "signal %d's disposition changed", sig);
    }
    dt__ondemand_triggers_stop(t, NULL, NULL);
    /* a handler of the program's own comes back */
    signal(SIGUSR1, SIG_IGN);
    cfg.signal = SIGUSR1;
    t = start(&cfg, "ign.json");
    sigaction(SIGUSR1, NULL, &during);
    CHECK(during.sa_handler != SIG_IGN);
    dt__ondemand_triggers_stop(t, NULL, NULL);
    sigaction(SIGUSR1, NULL, &during);
    CHECK(during.sa_handler == SIG_IGN);
    sigaction(SIGUSR1, &before, NULL);
}

/* ------------------------------------------------------------------ */
/* Cooldown, cap, and the end                                           */
/* ------------------------------------------------------------------ */
static void signal_at(dt_flight_triggers *t, uint64_t at)
{
    atomic_store(&fake_now, at);
    raise(SIGUSR2);
    dt__ondemand_triggers_sync(t);
}

static void test_cooldown_and_cap_are_kept_and_skips_counted_exactly(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.signal = SIGUSR2;
    cfg.cooldown_ns = 10 * S;
    cfg.max_dumps = 2;
    uint64_t t0 = atomic_load(&fake_now);
    dt_flight_triggers *t = start(&cfg, "cap.json");
    signal_at(t, t0);          /* dump 1 */
    signal_at(t, t0 + 5 * S);  /* cooldown */
    signal_at(t, t0 + 9 * S);  /* cooldown */
    signal_at(t, t0 + 11 * S); /* dump 2 */
    signal_at(t, t0 + 30 * S); /* cap */
    signal_at(t, t0 + 60 * S); /* cap */
    signal_at(t, t0 + 90 * S); /* cap */
    dt_flight_summary sum;
    dt__ondemand_triggers_counts(t, &sum);
    CHECK_EQ(sum.written, 2);
    CHECK_EQ(sum.skipped_cooldown, 2);
    CHECK_EQ(sum.skipped_cap, 3);
    dt__ondemand_triggers_stop(t, "exited with status 1", &sum); /* past the cap: counted */
    CHECK_EQ(dumps_made(), 2);
    CHECK_EQ(sum.written, 2);
    CHECK_EQ(sum.skipped_cooldown, 2);
    CHECK(sum.skipped_cap == 4);
}

static void test_a_failed_end_dumps_past_the_cooldown(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.signal = SIGUSR2;
    dt_flight_triggers *t = start(&cfg, "end.json");
    signal_at(t, atomic_load(&fake_now));
    CHECK_EQ(dumps_made(), 1);
    atomic_fetch_add(&fake_now, 1 * S);
    dt_flight_summary sum;
    dt__ondemand_triggers_stop(t, "exited with status 3", &sum);
    CHECK_EQ(dumps_made(), 2);
    CHECK_EQ(sum.written, 2);
    CHECK(strstr(seen.why[1], "the program exited with status 3") != NULL, "%s", seen.why[1]);
    char want[256];
    snprintf(want, sizeof want, "%s/end.dump2.json", dir);
    CHECK(file_exists(want));

    t = start(&cfg, "end_ok.json");
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK(dumps_made() == 0, "a program that did not fail dumped at its end");
}

static void test_a_slow_step_in_its_grace_period_is_dumped_at_the_end(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.slow_step_factor = 3;
    dt_flight_triggers *t = start(&cfg, "graceend.json");
    for (int i = 0; i < 20; i++) step(t, 100 * MS);
    step(t, 1 * S);
    dt_flight_summary sum;
    dt__ondemand_triggers_stop(t, "was ended by signal 15 (Terminated)", &sum);
    CHECK_EQ(sum.written, 1);
    CHECK(strstr(seen.why[0], "the program was ended by signal 15") && strstr(seen.why[0], "slow step 20"), "%s",
          seen.why[0]);

    /* a program that ends well inside the grace period still has its slow step dumped */
    t = start(&cfg, "graceend2.json");
    for (int i = 0; i < 20; i++) step(t, 100 * MS);
    step(t, 1 * S);
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.written, 1);
    CHECK(strstr(seen.why[0], "slow step 20") && !strstr(seen.why[0], "the program"), "%s", seen.why[0]);
}

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */
static void test_dump_names_come_from_the_output(void)
{
    static const struct { const char *path, *want; } cases[] = {
        {"trace.json", "trace.dump1.json"},
        {"d/t.json.gz", "d/t.dump1.json.gz"},
        {"t.pftrace", "t.dump1.pftrace"},
        {"t.pftrace.gz", "t.dump1.pftrace.gz"},
        {"trace.1234.json", "trace.1234.dump1.json"},
        {"trace", "trace.dump1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[256];
        dt__record_tag_path(out, sizeof out, cases[i].path, "dump1");
        CHECK_STR(out, cases[i].want);
    }
}

static void test_an_existing_file_is_never_replaced(void)
{
    char taken[256];
    snprintf(taken, sizeof taken, "%s/kept.dump1.json", dir);
    int fd = open(taken, O_WRONLY | O_CREAT | O_EXCL, 0644);
    REQUIRE(fd >= 0);
    REQUIRE_EQ(write(fd, "mine", 4), 4);
    close(fd);
    dt_dump_triggers cfg = defaults();
    cfg.signal = SIGUSR2;
    dt_flight_triggers *t = start(&cfg, "kept.json");
    signal_at(t, atomic_load(&fake_now));
    dt__ondemand_triggers_stop(t, NULL, NULL);
    char want[256];
    snprintf(want, sizeof want, "%s/kept.dump2.json", dir);
    CHECK_STR(seen.path[0], want);
    struct stat st;
    CHECK(stat(taken, &st) == 0 && st.st_size == 4);
}

static void test_failed_dumps_are_counted_and_survived(void)
{
    dt_dump_triggers cfg = defaults();
    cfg.signal = SIGUSR2;
    cfg.cooldown_ns = 0;
    dt_flight_triggers *t = start(&cfg, "no-such-dir/x.json");
    signal_at(t, atomic_load(&fake_now) + 1);
    dt_flight_summary sum;
    dt__ondemand_triggers_counts(t, &sum);
    CHECK_EQ(sum.failed, 1);
    CHECK_EQ(sum.written, 0);
    CHECK_EQ(seen.failures, 1);
    dt__ondemand_triggers_stop(t, NULL, NULL);

    t = start(&cfg, "fails.json");
    pthread_mutex_lock(&seen.mu);
    seen.fail_with = DT_ERR_IO;
    pthread_mutex_unlock(&seen.mu);
    signal_at(t, atomic_load(&fake_now) + 1);
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.failed, 1);
    char partial[256];
    snprintf(partial, sizeof partial, "%s/fails.dump1.json", dir);
    CHECK(!file_exists(partial), "a failed dump's file is left");

    /* a dump that another dump of the session is writing holds is no loss */
    t = start(&cfg, "busy.json");
    pthread_mutex_lock(&seen.mu);
    seen.fail_with = DT_ERR_BUSY;
    pthread_mutex_unlock(&seen.mu);
    signal_at(t, atomic_load(&fake_now) + 1);
    dt__ondemand_triggers_stop(t, NULL, &sum);
    CHECK_EQ(sum.failed, 0);
    CHECK_EQ(sum.written, 0);
    CHECK_EQ(seen.failures, 1); /* told, as not made */
    snprintf(partial, sizeof partial, "%s/busy.dump1.json", dir);
    CHECK(!file_exists(partial), "a dump not made left a file");
}

/* ------------------------------------------------------------------ */
/* The options                                                          */
/* ------------------------------------------------------------------ */
static void test_values_parse_as_users_type_them(void)
{
    uint64_t v;
    CHECK(dt__parse_size("256M", &v) == 0 && v == 256u << 20);
    CHECK(dt__parse_size("1GiB", &v) == 0 && v == 1u << 30);
    CHECK(dt__parse_size("64kb", &v) == 0 && v == 64u << 10);
    CHECK(dt__parse_size("1000", &v) == 0 && v == 1000);
    CHECK(dt__parse_size("-1M", &v) != 0 && dt__parse_size("1X", &v) != 0 && dt__parse_size("", &v) != 0);
    CHECK(dt__parse_size(" 1", &v) != 0 && dt__parse_size("99999999T", &v) != 0);
    CHECK(dt__parse_duration("30", &v) == 0 && v == 30 * S);
    CHECK(dt__parse_duration("1.5", &v) == 0 && v == 1500 * MS);
    CHECK(dt__parse_duration("500ms", &v) == 0 && v == 500 * MS);
    CHECK(dt__parse_duration("2m", &v) == 0 && v == 120 * S);
    CHECK(dt__parse_duration("5 s", &v) != 0 && dt__parse_duration("nan", &v) != 0 && dt__parse_duration("-1", &v) != 0);
    CHECK_EQ(dt__parse_request_signal("USR2"), SIGUSR2);
    CHECK_EQ(dt__parse_request_signal("sigusr1"), SIGUSR1);
    CHECK_EQ(dt__parse_request_signal("RTMIN+2"), SIGRTMIN + 2);
    CHECK_EQ(dt__parse_request_signal("TERM"), -1);
    CHECK_EQ(dt__parse_request_signal("KILL"), -1);
    CHECK_EQ(dt__parse_request_signal("9"), -1);
    CHECK_EQ(dt__parse_request_signal("RTMIN+999"), -1);
}

static void test_options_come_through_the_environment(void)
{
    dt_dump_triggers t;
    char why[256] = "";
    REQUIRE_EQ(dt__ondemand_dump_triggers_from_env(&t, why, sizeof why), 0);
    CHECK(t.slow_step_factor == 0 && t.stall_ns == 0 && t.signal == 0);
    CHECK_EQ(t.warmup_steps, 10);
    CHECK_EQ(t.cooldown_ns, 60 * S);
    CHECK_EQ(t.max_dumps, 5);
    setenv(DT_ENV_DUMP_ON_SLOW_STEP, "2.5", 1);
    setenv(DT_ENV_DUMP_ON_STALL, "90", 1);
    setenv(DT_ENV_DUMP_ON_SIGNAL, "USR2", 1);
    setenv(DT_ENV_DUMP_COOLDOWN, "10s", 1);
    setenv(DT_ENV_DUMP_MAX, "3", 1);
    setenv(DT_ENV_DUMP_WARMUP, "4", 1);
    setenv(DT_ENV_DUMP_GRACE, "500ms", 1);
    REQUIRE_EQ(dt__ondemand_dump_triggers_from_env(&t, why, sizeof why), 0);
    CHECK(t.slow_step_factor == 2.5);
    CHECK_EQ(t.stall_ns, 90 * S);
    CHECK_EQ(t.signal, SIGUSR2);
    CHECK_EQ(t.cooldown_ns, 10 * S);
    CHECK_EQ(t.max_dumps, 3);
    CHECK_EQ(t.warmup_steps, 4);
    CHECK_EQ(t.grace_ns, 500 * MS);
    setenv(DT_ENV_DUMP_ON_SLOW_STEP, "1", 1); /* not above 1 */
    setenv(DT_ENV_DUMP_ON_SIGNAL, "TERM", 1);
    CHECK_EQ(dt__ondemand_dump_triggers_from_env(&t, why, sizeof why), -1);
    CHECK_STR(why, "--dump-on-slow-step (DEVTRACE_DUMP_ON_SLOW_STEP) takes a factor above 1 (3: a step 3 times the "
                   "median), not '1'");
    CHECK(t.slow_step_factor == 0 && t.signal == 0);
    CHECK_EQ(t.stall_ns, 90 * S);
    for (const dt_dump_option *o = dt__ondemand_dump_options; o->option; o++) unsetenv(o->env);
}

static int setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dt-flight-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_median_is_exact_over_the_last_64_steps),
             DT_TEST(test_one_slow_step_gives_one_dump_after_the_grace_period),
             DT_TEST(test_grace_period_is_twice_a_long_median_or_as_set), DT_TEST(test_warmup_steps_are_not_judged),
             DT_TEST(test_a_step_at_k_times_the_median_is_not_slow),
             DT_TEST(test_the_process_steps_reach_the_triggers), DT_TEST(test_stall_dumps_once_per_stall),
             DT_TEST(test_a_thousand_signals_give_one_dump_per_cooldown),
             DT_TEST(test_no_handler_unless_a_signal_is_asked_for),
             DT_TEST(test_cooldown_and_cap_are_kept_and_skips_counted_exactly),
             DT_TEST(test_a_failed_end_dumps_past_the_cooldown),
             DT_TEST(test_a_slow_step_in_its_grace_period_is_dumped_at_the_end),
             DT_TEST(test_dump_names_come_from_the_output), DT_TEST(test_an_existing_file_is_never_replaced),
             DT_TEST(test_failed_dumps_are_counted_and_survived), DT_TEST(test_values_parse_as_users_type_them),
             DT_TEST(test_options_come_through_the_environment))

/* Steps: dt_step's numbering, waiting for a step, waking the waiters, the
   observer's durations and "ProfilerStep#<n>" user ranges. Each case runs
   in a process of its own: the boundaries are process-wide. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "dt_check.h"

#include "dt_internal_core.h"
#include "dt_test_session.h"

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void step_numbers_rise_from_one_and_count(void)
{
    uint64_t n, t;
    dt__core_step_last(&n, &t);
    CHECK_EQ(n, 0);
    CHECK_EQ(t, 0);
    CHECK_EQ(dt_step_count(), 0);
    for (uint64_t i = 1; i <= 5; i++) {
        uint64_t before = dt__realtime_ns();
        REQUIRE_EQ(dt_step(), DT_OK);
        uint64_t after = dt__realtime_ns();
        CHECK_EQ(dt_step_count(), i);
        dt__core_step_last(&n, &t);
        CHECK_EQ(n, i);
        CHECK(t >= before && t <= after, "step %" PRIu64 " at %" PRIu64 ", called in [%" PRIu64 ", %" PRIu64 "]", i,
              t, before, after);
    }
    /* a ProfilerStep# numbering that restarts is taken as it comes, and
       dt_step's own numbering goes on */
    dt__core_step_begin(2, 1000);
    CHECK_EQ(dt_step_count(), 2);
    REQUIRE_EQ(dt_step(), DT_OK);
    CHECK_EQ(dt_step_count(), 6);
}

/* ---- a thread that begins boundaries until told to stop ---- */

typedef struct stepper {
    uint64_t numbers[4];
    uint64_t times[4];
    int count;
    unsigned gap_ms;
    _Atomic int stop;
    pthread_t thread;
} stepper;

static void *stepper_main(void *arg)
{
    stepper *st = arg;
    while (!atomic_load(&st->stop)) {
        sleep_ms(st->gap_ms);
        for (int i = 0; i < st->count; i++) dt__core_step_begin(st->numbers[i], st->times[i]);
    }
    return NULL;
}

static void stepper_start(stepper *st)
{
    atomic_init(&st->stop, 0);
    REQUIRE_EQ(pthread_create(&st->thread, NULL, stepper_main, st), 0);
}

static void stepper_join(stepper *st)
{
    atomic_store(&st->stop, 1);
    pthread_join(st->thread, NULL);
}

static void wait_returns_the_first_step_at_or_past_the_target(void)
{
    /* bursts of 41, 42, 43, 40: whenever the wait begins, the first
       boundary after it numbered at least 42 is a 42, with its time, even
       when the waiter wakes after the burst has ended below the target */
    stepper st = {.numbers = {41, 42, 43, 40}, .times = {5000, 7000, 9000, 3000}, .count = 4, .gap_ms = 2};
    stepper_start(&st);
    uint64_t n = 0, t = 0;
    int rc = dt__core_step_wait(42, dt__monotonic_ns() + 10000000000ull, &n, &t);
    stepper_join(&st);
    REQUIRE_EQ(rc, 0);
    CHECK_EQ(n, 42);
    CHECK_EQ(t, 7000);
}

static void wait_target_zero_takes_the_next_step_whatever_its_number(void)
{
    /* a numbering lower than the latest is a step all the same */
    dt__core_step_begin(100, 1000);
    stepper st = {.numbers = {3}, .times = {2000}, .count = 1, .gap_ms = 2};
    stepper_start(&st);
    uint64_t n = 0, t = 0;
    int rc = dt__core_step_wait(0, dt__monotonic_ns() + 10000000000ull, &n, &t);
    stepper_join(&st);
    REQUIRE_EQ(rc, 0);
    CHECK_EQ(n, 3);
    CHECK_EQ(t, 2000);
}

static void wait_ignores_steps_before_the_call(void)
{
    dt__core_step_begin(500, 1000);
    uint64_t n = 1, t = 1;
    uint64_t t0 = dt__monotonic_ns();
    CHECK_EQ(dt__core_step_wait(0, t0 + 30000000, &n, &t), -1);
    CHECK(dt__monotonic_ns() - t0 >= 30000000);
    CHECK_EQ(dt__core_step_wait(500, t0, &n, &t), -1); /* a deadline already past */
}

static void wait_times_out_while_steps_stay_below_the_target(void)
{
    /* every boundary wakes the waiter; none is far enough */
    stepper st = {.numbers = {7}, .times = {1000}, .count = 1, .gap_ms = 1};
    stepper_start(&st);
    uint64_t n = 0, t = 0;
    uint64_t t0 = dt__monotonic_ns();
    int rc = dt__core_step_wait(8, t0 + 50000000, &n, &t);
    uint64_t waited = dt__monotonic_ns() - t0;
    stepper_join(&st);
    CHECK_EQ(rc, -1);
    CHECK(waited >= 50000000, "returned after %" PRIu64 " ns", waited);
}

typedef struct waiter {
    pthread_t thread;
    int rc;
    _Atomic int done;
    uint64_t waited_ns;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    uint64_t n, t, t0 = dt__monotonic_ns();
    w->rc = dt__core_step_wait(UINT64_MAX, t0 + 60000000000ull, &n, &t);
    w->waited_ns = dt__monotonic_ns() - t0;
    atomic_store(&w->done, 1);
    return NULL;
}

static void wake_makes_every_waiter_return(void)
{
    waiter w[3];
    for (int i = 0; i < 3; i++) {
        w[i].rc = 99;
        atomic_init(&w[i].done, 0);
        REQUIRE_EQ(pthread_create(&w[i].thread, NULL, waiter_main, &w[i]), 0);
    }
    /* a wake reaches the waiters waiting then: repeat it until all were */
    for (int i = 0; i < 3; i++)
        while (!atomic_load(&w[i].done)) {
            dt__core_steps_wake();
            sleep_ms(1);
        }
    for (int i = 0; i < 3; i++) {
        pthread_join(w[i].thread, NULL);
        CHECK_EQ(w[i].rc, -1);
        CHECK(w[i].waited_ns < 30000000000ull);
    }
    /* a wake before a wait does not end it */
    uint64_t n, t, t0 = dt__monotonic_ns();
    CHECK_EQ(dt__core_step_wait(0, t0 + 20000000, &n, &t), -1);
    CHECK(dt__monotonic_ns() - t0 >= 20000000);
}

/* ---- the observer ---- */

typedef struct seen {
    uint64_t number[8], t[8], duration[8];
    int n;
} seen;

static void observe(void *ctx, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns)
{
    seen *s = ctx;
    if (s->n < 8) {
        s->number[s->n] = number;
        s->t[s->n] = t_ns;
        s->duration[s->n] = last_duration_ns;
    }
    s->n++;
}

static void observer_gets_each_step_and_the_last_ones_duration(void)
{
    seen s = {0};
    dt__core_steps_observe(observe, &s);
    const uint64_t t0 = 1700000000000000000ull;
    dt__core_step_begin(1, t0);
    dt__core_step_begin(2, t0 + 1500);
    dt__core_step_begin(3, t0 + 1500 + 123456789);
    dt__core_step_begin(1, t0 + 1500 + 123456789 + 7); /* a numbering that restarts */
    dt__core_step_begin(2, t0);                         /* a clock that went back */
    REQUIRE_EQ(s.n, 5);
    const uint64_t number[] = {1, 2, 3, 1, 2};
    const uint64_t duration[] = {0, 1500, 123456789, 7, 0};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(s.number[i], number[i]);
        CHECK_EQ(s.duration[i], duration[i]);
    }
    CHECK_EQ(s.t[2], t0 + 1500 + 123456789);
    /* dt_step: the duration on the realtime clock the step times come from */
    dt_step();
    uint64_t n, t1, t2;
    dt__core_step_last(&n, &t1);
    dt_step();
    dt__core_step_last(&n, &t2);
    REQUIRE_EQ(s.n, 7);
    CHECK_EQ(s.number[6], 2);
    CHECK_EQ(s.duration[6], t2 - t1);
    /* removed: no more calls */
    dt__core_steps_observe(NULL, NULL);
    dt_step();
    CHECK_EQ(s.n, 7);
    /* replaced: the new one only */
    seen s2 = {0};
    dt__core_steps_observe(observe, &s);
    dt__core_steps_observe(observe, &s2);
    dt_step();
    CHECK_EQ(s.n, 7);
    CHECK_EQ(s2.n, 1);
    CHECK_EQ(s2.number[0], 4);
    dt__core_steps_observe(NULL, NULL);
}

/* ---- ProfilerStep#<n> ---- */

static const struct {
    const char *name;
    int is_step;
    uint64_t number;
} profiler_names[] = {
    {"ProfilerStep#0", 1, 0},
    {"ProfilerStep#1", 1, 1},
    {"ProfilerStep#42", 1, 42},
    {"ProfilerStep#007", 1, 7},
    {"ProfilerStep#18446744073709551615", 1, UINT64_MAX},
    {"ProfilerStep#00000000000000000009", 1, 9}, /* 20 digits */
    {NULL, 0, 0},
    {"", 0, 0},
    {"ProfilerStep#", 0, 0},
    {"ProfilerStep", 0, 0},
    {"ProfilerStep1", 0, 0},
    {"ProfilerStep#12a", 0, 0},
    {"ProfilerStep#1 ", 0, 0},
    {"ProfilerStep#1\n", 0, 0},
    {" ProfilerStep#1", 0, 0},
    {"ProfilerStep# 1", 0, 0},
    {"ProfilerStep#-1", 0, 0},
    {"ProfilerStep#+1", 0, 0},
    {"ProfilerStep#0x10", 0, 0},
    {"profilerstep#1", 0, 0},
    {"ProfilerStep##1", 0, 0},
    {"ProfilerStep#18446744073709551616", 0, 0}, /* 2^64 */
    {"ProfilerStep#99999999999999999999", 0, 0}, /* 20 digits, too large */
    {"ProfilerStep#000000000000000000001", 0, 0}, /* 21 digits */
    {"ProfilerStep#1234567890123456789012345", 0, 0},
};

/* Pushes name as a user range after a marker boundary; whether a step
   began, and which. */
static int pushed_step(const char *name, uint64_t *number, uint64_t *t, uint64_t *before, uint64_t *after)
{
    dt__core_step_begin(123456, 1);
    *before = dt__realtime_ns();
    REQUIRE_EQ(dt_range_push(name, NULL), DT_OK);
    *after = dt__realtime_ns();
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    dt__core_step_last(number, t);
    return !(*number == 123456 && *t == 1);
}

static void profiler_step_ranges_begin_steps_while_watched(void)
{
    dt__core_steps_watch(1);
    for (size_t i = 0; i < sizeof profiler_names / sizeof profiler_names[0]; i++) {
        const char *name = profiler_names[i].name;
        uint64_t n, t, before, after;
        int began = pushed_step(name, &n, &t, &before, &after);
        const char *shown = name ? name : "(null)";
        CHECK(began == profiler_names[i].is_step, "%s: %s", shown, began ? "began a step" : "began no step");
        if (began && profiler_names[i].is_step) {
            CHECK(n == profiler_names[i].number, "%s: step %" PRIu64, shown, n);
            CHECK(t >= before && t <= after, "%s: at %" PRIu64 ", pushed in [%" PRIu64 ", %" PRIu64 "]", shown, t,
                  before, after);
        }
    }
    /* a long name that only starts like one */
    char longname[4096];
    memset(longname, '1', sizeof longname - 1);
    memcpy(longname, "ProfilerStep#", 13);
    longname[sizeof longname - 1] = 0;
    uint64_t n, t, before, after;
    CHECK_EQ(pushed_step(longname, &n, &t, &before, &after), 0);
    dt__core_steps_watch(0);
}

static void profiler_step_ranges_are_not_looked_at_unwatched(void)
{
    uint64_t n, t, before, after;
    CHECK_EQ(pushed_step("ProfilerStep#5", &n, &t, &before, &after), 0);
    dt__core_steps_watch(1);
    dt__core_steps_watch(1);
    dt__core_steps_watch(0);
    CHECK_EQ(pushed_step("ProfilerStep#5", &n, &t, &before, &after), 1); /* one watcher left */
    dt__core_steps_watch(0);
    dt__core_steps_watch(0); /* one too many: the count stays at zero */
    CHECK_EQ(pushed_step("ProfilerStep#5", &n, &t, &before, &after), 0);
    dt__core_steps_watch(1);
    CHECK_EQ(pushed_step("ProfilerStep#6", &n, &t, &before, &after), 1);
    CHECK_EQ(n, 6);
    dt__core_steps_watch(0);
}

static void profiler_step_marks_reported_by_a_vendor_begin_steps(void)
{
    dt_session *s = dt_test_session(0);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    dt__core_steps_watch(1);
    dt__corr_range_add(s, "ProfilerStep#77", 4242, 5000, dt__thread_id());
    uint64_t n, t;
    dt__core_step_last(&n, &t);
    CHECK_EQ(n, 77);
    CHECK_EQ(t, 4242);
    dt__corr_range_add(s, "ProfilerStep#7x", 4343, 5000, dt__thread_id());
    dt__corr_range_add(s, NULL, 4444, 5000, dt__thread_id());
    dt__core_step_last(&n, &t);
    CHECK_EQ(n, 77);
    CHECK_EQ(t, 4242);
    dt__core_steps_watch(0);
    dt__corr_range_add(s, "ProfilerStep#78", 4545, 5000, dt__thread_id());
    dt__core_step_last(&n, &t);
    CHECK_EQ(n, 77);
    dt_session_stop(s);
    dt_session_destroy(s);
}

/* ---- threads ---- */

#define STEP_THREADS 4
#define STEPS_EACH 20000

static _Atomic int g_go;

static void *step_many(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_go)) {
    }
    for (int i = 0; i < STEPS_EACH; i++) dt_step();
    return NULL;
}

static void *range_many(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_go)) {
    }
    char name[40];
    for (int i = 0; i < STEPS_EACH; i++) {
        snprintf(name, sizeof name, "ProfilerStep#%d", 1000000 + i);
        dt_range_push(name, NULL);
        dt_range_pop();
        uint64_t n, t;
        dt__core_step_last(&n, &t); /* a reader among the writers */
    }
    return NULL;
}

static _Atomic uint64_t g_observed;

static void count_observed(void *ctx, uint64_t number, uint64_t t_ns, uint64_t last_duration_ns)
{
    (void)ctx, (void)number, (void)t_ns, (void)last_duration_ns;
    atomic_fetch_add(&g_observed, 1);
}

static void threads_step_while_others_wait(void)
{
    dt__core_steps_watch(1);
    dt__core_steps_observe(count_observed, NULL);
    pthread_t th[STEP_THREADS + 1];
    for (int i = 0; i < STEP_THREADS; i++) REQUIRE_EQ(pthread_create(&th[i], NULL, step_many, NULL), 0);
    REQUIRE_EQ(pthread_create(&th[STEP_THREADS], NULL, range_many, NULL), 0);
    atomic_store(&g_go, 1);
    /* waits that end at a step, while steps are made on five threads */
    uint64_t n, t, last_n = 0;
    for (int i = 0; i < 50; i++) {
        if (dt__core_step_wait(0, dt__monotonic_ns() + 200000000, &n, &t) != 0) break;
        last_n = n;
    }
    for (int i = 0; i <= STEP_THREADS; i++) pthread_join(th[i], NULL);
    CHECK(last_n != 0);
    /* the last dt_step is numbered by the count of calls */
    dt_step();
    CHECK_EQ(dt_step_count(), (uint64_t)STEP_THREADS * STEPS_EACH + 1);
    CHECK_EQ(atomic_load(&g_observed), (uint64_t)(STEP_THREADS + 1) * STEPS_EACH + 1);
    dt__core_steps_observe(NULL, NULL);
    dt__core_steps_watch(0);
}

int main(int argc, char **argv)
{
    static const dt_test tests[] = {
        DT_TEST(step_numbers_rise_from_one_and_count),
        DT_TEST(wait_returns_the_first_step_at_or_past_the_target),
        DT_TEST(wait_target_zero_takes_the_next_step_whatever_its_number),
        DT_TEST(wait_ignores_steps_before_the_call),
        DT_TEST(wait_times_out_while_steps_stay_below_the_target),
        DT_TEST(wake_makes_every_waiter_return),
        DT_TEST(observer_gets_each_step_and_the_last_ones_duration),
        DT_TEST(profiler_step_ranges_begin_steps_while_watched),
        DT_TEST(profiler_step_ranges_are_not_looked_at_unwatched),
        DT_TEST(profiler_step_marks_reported_by_a_vendor_begin_steps),
        DT_TEST(threads_step_while_others_wait),
    };
    return dt_test_main_each_in_own_process(argc, argv, tests, sizeof tests / sizeof tests[0]);
}

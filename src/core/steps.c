/* Steps: the latest step boundaries, their waiters and their observer.

   Boundaries are written one at a time (a spin flag: one atomic exchange,
   contended only when two threads begin steps at once) into a ring of
   SLOTS slots, boundary g (1, 2, ...) into slot g % SLOTS. Each slot is a
   seqlock whose sequence word carries g, so a reader, which takes no lock,
   tells a finished slot from one being rewritten. The latest generation is
   the latest boundary. A waiter scans the generations that began after its
   call, so it gets the first boundary that meets its target even when
   several began before it woke. Waiters block on a condition variable; a
   boundary takes its mutex only when some waiter is counted. */
#include "core/steps.h"

#include "base/os.h"
#include "devtrace/devtrace.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#define SLOTS 16u

typedef struct step_slot {
    _Atomic uint64_t seq; /* 2g: generation g written; 2g+1: being written */
    _Atomic uint64_t number;
    _Atomic uint64_t t_ns;
} step_slot;

typedef struct step_observer {
    dt_core_step_observer fn;
    void *ctx;
} step_observer;

_Atomic int dt__core_steps_watchers;

static step_slot g_slots[SLOTS];
static atomic_flag g_writing = ATOMIC_FLAG_INIT;
static _Atomic uint64_t g_latest; /* the latest boundary's generation; 0: none */
static uint64_t g_dt_steps;       /* dt_step()'s numbering, while g_writing is held */

static _Atomic int g_waiters;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond;
static pthread_once_t g_cond_once = PTHREAD_ONCE_INIT;
static uint64_t g_wake_epoch; /* under g_lock */

static step_observer g_observers[2]; /* the current one and the one before */
static _Atomic(step_observer *) g_observer;
static _Atomic int g_observing; /* boundaries calling an observer now */
static pthread_mutex_t g_observe_lock = PTHREAD_MUTEX_INITIALIZER;

static void cond_init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cond, &a);
    pthread_condattr_destroy(&a);
}

/* A child forked without exec has only the forking thread: a step being
   written, a waiter or an observer call of another thread is not there, so
   what they held is released. */
static void steps_forked_child(void)
{
    atomic_flag_clear_explicit(&g_writing, memory_order_relaxed);
    atomic_store_explicit(&g_waiters, 0, memory_order_relaxed);
    atomic_store_explicit(&g_observing, 0, memory_order_relaxed);
    pthread_mutex_init(&g_lock, NULL);
    pthread_mutex_init(&g_observe_lock, NULL);
    cond_init();
}

__attribute__((constructor)) static void steps_register_fork(void)
{
    pthread_atfork(NULL, NULL, steps_forked_child);
}


void dt__core_steps_watch(int on)
{
    if (on) {
        atomic_fetch_add_explicit(&dt__core_steps_watchers, 1, memory_order_relaxed);
        return;
    }
    int n = atomic_load_explicit(&dt__core_steps_watchers, memory_order_relaxed);
    while (n > 0 && !atomic_compare_exchange_weak_explicit(&dt__core_steps_watchers, &n, n - 1,
                                                           memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* Generation g's boundary, if slot g still holds it whole. */
static int slot_read(uint64_t g, uint64_t *number, uint64_t *t_ns)
{
    step_slot *s = &g_slots[g % SLOTS];
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != 2 * g) return 0;
    *number = atomic_load_explicit(&s->number, memory_order_relaxed);
    *t_ns = atomic_load_explicit(&s->t_ns, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == 2 * g;
}

void dt__core_step_last(uint64_t *number, uint64_t *t_ns)
{
    for (;;) {
        uint64_t g = atomic_load_explicit(&g_latest, memory_order_acquire);
        if (g == 0) {
            *number = *t_ns = 0;
            return;
        }
        /* fails only while the slot is rewritten, SLOTS boundaries later,
           which then publishes a newer latest */
        if (slot_read(g, number, t_ns)) return;
        sched_yield();
    }
}

int dt__core_step_find(uint64_t number, uint64_t since_ns, uint64_t *t_ns)
{
    uint64_t g = atomic_load_explicit(&g_latest, memory_order_acquire);
    for (uint64_t k = 0; k < SLOTS && k < g; k++) {
        uint64_t n, t;
        if (slot_read(g - k, &n, &t) && n == number && t >= since_ns) {
            *t_ns = t;
            return 0;
        }
    }
    return -1;
}

/* Boundary `number` at t_ns, or when counted dt_step's next number now. */
static void begin(uint64_t number, int counted, uint64_t t_ns)
{
    step_observer *obs = atomic_load_explicit(&g_observer, memory_order_relaxed);
    while (atomic_flag_test_and_set_explicit(&g_writing, memory_order_acquire)) sched_yield();
    uint64_t g = atomic_load_explicit(&g_latest, memory_order_relaxed);
    uint64_t prev_t = g ? atomic_load_explicit(&g_slots[g % SLOTS].t_ns, memory_order_relaxed) : 0;
    if (counted) {
        number = ++g_dt_steps;
        t_ns = dt__realtime_ns(); /* under the flag: numbers and times rise together */
    }
    uint64_t duration = g && t_ns > prev_t ? t_ns - prev_t : 0;
    step_slot *s = &g_slots[++g % SLOTS];
    atomic_store_explicit(&s->seq, 2 * g + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->number, number, memory_order_relaxed);
    atomic_store_explicit(&s->t_ns, t_ns, memory_order_relaxed);
    atomic_store_explicit(&s->seq, 2 * g, memory_order_release);
    /* sequentially consistent with the waiter count's read below: a waiter
       counts itself, then reads g_latest */
    atomic_store(&g_latest, g);
    atomic_flag_clear_explicit(&g_writing, memory_order_release);

    if (atomic_load(&g_waiters) > 0) {
        pthread_mutex_lock(&g_lock);
        pthread_cond_broadcast(&g_cond);
        pthread_mutex_unlock(&g_lock);
    }
    if (obs) {
        atomic_fetch_add(&g_observing, 1);
        obs = atomic_load(&g_observer); /* a removal waits for g_observing to drop */
        if (obs) obs->fn(obs->ctx, number, t_ns, duration);
        atomic_fetch_sub(&g_observing, 1);
    }
}

void dt__core_step_begin(uint64_t number, uint64_t t_ns)
{
    begin(number, 0, t_ns);
}

/* The first boundary after generation `from` numbered at least target
   (any number when target is 0) that the slots still hold. */
static int find_boundary(uint64_t from, uint64_t target, uint64_t *number, uint64_t *t_ns)
{
    uint64_t latest = atomic_load(&g_latest);
    uint64_t g = latest - from > SLOTS ? latest - SLOTS + 1 : from + 1;
    for (; g <= latest; g++) {
        uint64_t n, t;
        if (slot_read(g, &n, &t) && n >= target) {
            *number = n;
            *t_ns = t;
            return 1;
        }
    }
    return 0;
}

int dt__core_step_wait(uint64_t target, uint64_t deadline_ns, uint64_t *number, uint64_t *t_ns)
{
    pthread_once(&g_cond_once, cond_init);
    struct timespec until = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                             .tv_nsec = (long)(deadline_ns % 1000000000u)};
    int rc = -1;
    pthread_mutex_lock(&g_lock);
    atomic_fetch_add(&g_waiters, 1);
    uint64_t from = atomic_load(&g_latest);
    uint64_t epoch = g_wake_epoch;
    for (;;) {
        if (find_boundary(from, target, number, t_ns)) {
            rc = 0;
            break;
        }
        if (g_wake_epoch != epoch || dt__monotonic_ns() >= deadline_ns) break;
        int w = pthread_cond_timedwait(&g_cond, &g_lock, &until);
        if (w != 0 && w != ETIMEDOUT && w != EINTR) break;
    }
    atomic_fetch_sub(&g_waiters, 1);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

void dt__core_steps_wake(void)
{
    pthread_once(&g_cond_once, cond_init);
    pthread_mutex_lock(&g_lock);
    g_wake_epoch++;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
}

void dt__core_steps_observe(dt_core_step_observer fn, void *ctx)
{
    pthread_mutex_lock(&g_observe_lock);
    step_observer *next = NULL;
    if (fn) {
        step_observer *cur = atomic_load(&g_observer);
        next = cur == &g_observers[0] ? &g_observers[1] : &g_observers[0];
        next->fn = fn;
        next->ctx = ctx;
    }
    atomic_store(&g_observer, next);
    /* the one replaced may be in a call: its ctx is the caller's until then,
       and its storage is reused by the next registration */
    while (atomic_load(&g_observing) > 0) sched_yield();
    pthread_mutex_unlock(&g_observe_lock);
}

/* "ProfilerStep#" and 1 to 20 digits that fit in 64 bits, nothing after. */
static int profiler_step_number(const char *name, uint64_t *number)
{
    static const char prefix[] = "ProfilerStep#";
    if (!name) return 0;
    for (size_t i = 0; i < sizeof prefix - 1; i++)
        if (name[i] != prefix[i]) return 0;
    const char *p = name + sizeof prefix - 1;
    uint64_t n = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (digits == 20 || n > (UINT64_MAX - d) / 10) return 0;
        n = n * 10 + d;
    }
    if (digits == 0 || *p) return 0;
    *number = n;
    return 1;
}

void dt__core_step_range(const char *name, uint64_t t_ns)
{
    uint64_t number;
    if (profiler_step_number(name, &number)) dt__core_step_begin(number, t_ns ? t_ns : dt__realtime_ns());
}

dt_status dt_step(void)
{
    begin(0, 1, 0);
    return DT_OK;
}

uint64_t dt_step_count(void)
{
    uint64_t number, t_ns;
    dt__core_step_last(&number, &t_ns);
    return number;
}

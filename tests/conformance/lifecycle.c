/* Scenarios of load and lifecycle: threads launching as fast as they can,
   and sessions started and stopped again. */
#define DT_TEST_PART /* conformance.c has main */
#include "conformance.h"

/* 8 threads each making 100,000 launches lose nothing. */
static void *launch_thread(void *p)
{
    launch_arg *a = p;
    char name[32];
    snprintf(name, sizeof name, "worker_%d", a->thread);
    REQUIRE(dt_external_push((uint64_t)a->thread + 1) == DT_OK, "push");
    for (int i = 0; i < a->count; i++)
        REQUIRE(emu.launch_kernel(a->thread % 2, a->thread, name, grid1, block1, 100) == 0, "launch");
    REQUIRE(dt_external_pop(NULL) == DT_OK, "pop");
    return NULL;
}

/* `threads` threads each make `per` launches inside an External id of
   their own, on the default pool: nothing is lost, each kernel carries its
   thread's id. The pool grows to a bound that holds all these records
   (docs/backends: DT_POOL_GROW) even when the thread that decodes them is
   starved, so the outcome does not depend on timing. */
static void launch_threads(int threads, int per)
{
    enum { MAX_THREADS = 64 };
    REQUIRE(threads <= MAX_THREADS, "too many threads");
    dt_session *s = session_new();
    session_start(s);
    emu.stats_reset();
    pthread_t th[MAX_THREADS];
    launch_arg args[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        args[t] = (launch_arg){t, per};
        REQUIRE(pthread_create(&th[t], NULL, launch_thread, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    REQUIRE(emu.synchronize(-1, -1) == 0, "synchronize");
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], (uint64_t)threads * per, "kernels produced");
    check_exact(s, &st, NULL);
    size_t n = dt_session_event_count(s);
    uint64_t per_thread[MAX_THREADS] = {0};
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        if (ev.kind != DT_EVENT_KERNEL) continue;
        int t = -1;
        if (sscanf(ev.name, "worker_%d", &t) != 1 || t < 0 || t >= threads) { wrong++; continue; }
        per_thread[t]++;
        if (!ev.has_external || ev.external_id != (uint64_t)t + 1) wrong++;
    }
    for (int t = 0; t < threads; t++) CHECK_EQ_U64(per_thread[t], per, "kernels of one thread");
    if (attributes(s)) CHECK(wrong == 0, "%zu kernels with a wrong name or External id", wrong);
    else check_no_external(s);
    check_flows(s);
    dt_session_destroy(s);
}

/* 8 threads, 100,000 launches each. */
void scenario_threads(void)
{
    emu_open();
    const char *per_env = getenv("DEVTRACE_CONFORMANCE_LAUNCHES");
    launch_threads(8, per_env ? atoi(per_env) : 100000);
}

/* 64 threads: with per-thread buffers (CUDA 13) each holds one of its own,
   more than the default pool of 32. */
void scenario_threads64(void)
{
    emu_open();
    launch_threads(64, 2000);
}
/* Start, stop and start again: each session holds exactly its own work. */
void scenario_restart(void)
{
    emu_open();
    dt_session *s = session_new();
    for (int round = 0; round < 3; round++) {
        session_start(s);
        emu.stats_reset();
        mixed_workload(round % 2, round, 3 + round);
        session_stop(s);
        emu_stats st;
        emu.stats_get(&st);
        CHECK_EQ_U64(st.records[EMU_KIND_KERNEL], 2 * (3 + round), "kernels produced");
        check_exact(s, &st, NULL);
        check_flows(s);
        char tag[16];
        snprintf(tag, sizeof tag, "round%d", round);
        check_trace(s, tag);
    }
    dt_session_destroy(s);
    /* and a fresh session after the first one was destroyed */
    s = session_new();
    session_start(s);
    emu.stats_reset();
    mixed_workload(0, 5, 2);
    session_stop(s);
    emu_stats st;
    emu.stats_get(&st);
    check_exact(s, &st, NULL);
    dt_session_destroy(s);
}

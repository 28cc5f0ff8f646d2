/*
 * msptiActivityGetNextRecord walks with a cursor of the calling thread and
 * ignores the record it is given: a client that stops early leaves the
 * cursor stale for its next buffer on that thread. The emulator does the
 * same; devtrace walks buffers by the records' sizes, so a stale cursor on
 * the thread that delivers buffers costs it nothing. Buffers under 2 MB
 * draw MSPTI's warning; devtrace's default ones do not.
 */
#include <pthread.h>

#include "backends/mspti_abi.h"
#include "mspti_test.h"

typedef msptiResult (*next_fn)(uint8_t *, size_t, msptiActivity **);

static uint8_t g_buf[512] __attribute__((aligned(8)));
static size_t g_used;

static void put_kernel(uint64_t start)
{
    msptiActivityKernel k = {.kind = MSPTI_ACTIVITY_KIND_KERNEL, .start = start, .end = start + 10, .name = "k"};
    memcpy(g_buf + g_used, &k, sizeof k);
    g_used += sizeof k;
}

static void put_api(uint64_t start)
{
    msptiActivityApi a = {.kind = MSPTI_ACTIVITY_KIND_ACL_API, .start = start, .end = start + 10, .name = "a"};
    memcpy(g_buf + g_used, &a, sizeof a);
    g_used += sizeof a;
}

static void *fresh_thread(void *arg)
{
    next_fn next = (next_fn)sym("msptiActivityGetNextRecord");
    msptiActivity *r = NULL;
    *(int *)arg = next(g_buf, g_used, &r) == MSPTI_SUCCESS && (uint8_t *)r == g_buf;
    return NULL;
}

static void iterator_cursor_is_the_threads(void)
{
    open_emulator(DT_EMULATOR);
    next_fn next = (next_fn)sym("msptiActivityGetNextRecord");
    put_kernel(100);
    put_api(200);
    put_kernel(300);
    /* the record passed in is ignored: the first call starts at 0 */
    msptiActivity *r = (msptiActivity *)(void *)(g_buf + 100);
    REQUIRE_EQ(next(g_buf, g_used, &r), MSPTI_SUCCESS);
    CHECK((uint8_t *)r == g_buf);
    /* stopping here leaves the cursor at 56: the next buffer, on this
       thread, starts there */
    static uint8_t other[256] __attribute__((aligned(8)));
    memcpy(other, g_buf, g_used);
    r = NULL;
    REQUIRE_EQ(next(other, g_used, &r), MSPTI_SUCCESS);
    CHECK((uint8_t *)r == other + sizeof(msptiActivityKernel), "a stale cursor starts at %td",
          (uint8_t *)r - other);
    /* another thread has its own */
    int fresh = 0;
    pthread_t th;
    REQUIRE_EQ(pthread_create(&th, NULL, fresh_thread, &fresh), 0);
    pthread_join(th, NULL);
    CHECK(fresh, "another thread's cursor is not at the start");
    /* the end resets it */
    REQUIRE_EQ(next(other, g_used, &r), MSPTI_SUCCESS); /* the kernel at 104 */
    CHECK_EQ((uint8_t *)r - other, sizeof(msptiActivityKernel) + sizeof(msptiActivityApi));
    CHECK_EQ(next(other, g_used, &r), MSPTI_ERROR_MAX_LIMIT_REACHED);
    REQUIRE_EQ(next(g_buf, g_used, &r), MSPTI_SUCCESS);
    CHECK((uint8_t *)r == g_buf);
    /* a kind it does not know stops it where it is, until the end resets it */
    uint32_t bogus = 0x4d53;
    memcpy(other + sizeof(msptiActivityKernel), &bogus, sizeof bogus);
    CHECK_EQ(next(other, g_used, &r), MSPTI_ERROR_INVALID_KIND);
    CHECK_EQ(next(other, g_used, &r), MSPTI_ERROR_INVALID_KIND);
}

static void late_2024_release_answers_inner(void)
{
    open_emulator(EMULATOR_2024);
    next_fn next = (next_fn)sym("msptiActivityGetNextRecord");
    uint32_t bogus = 0x4d53;
    memcpy(g_buf, &bogus, sizeof bogus);
    msptiActivity *r = NULL;
    CHECK_EQ(next(g_buf, 64, &r), MSPTI_ERROR_INNER);
}

static void stale_cursor_leaves_devtrace_exact(void)
{
    open_emulator(DT_EMULATOR);
    next_fn next = (next_fn)sym("msptiActivityGetNextRecord");
    dt_session *s = start_session();
    EMU(emu_stats_reset)();
    const int g[3] = {1, 1, 1}, b[3] = {64, 1, 1};
    for (int i = 0; i < 300; i++)
        REQUIRE_EQ(EMU(emu_launch_kernel)(0, i % 4, "k", g, b, 100), 0);
    /* a client on this thread stopped early: its cursor points into the
       middle of whatever buffer comes next here */
    put_kernel(100);
    put_kernel(200);
    msptiActivity *r = NULL;
    REQUIRE_EQ(next(g_buf, g_used, &r), MSPTI_SUCCESS);
    /* the final flush completes buffers on this thread */
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK(st.buffers_completed > st.buffers_completed_worker, "no buffer was completed on this thread");
    CHECK_EQ(count_kind(s, DT_EVENT_KERNEL), 300);
    CHECK_EQ(count_kind(s, DT_EVENT_RUNTIME), st.records[EMU_KIND_RUNTIME]);
    CHECK_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
}

static void small_buffers_draw_the_warning(void)
{
    open_emulator(DT_EMULATOR);
    uint64_t (*warnings)(void) = (uint64_t(*)(void))sym("emu_mspti_small_buffer_warnings");
    const int g[3] = {1, 1, 1}, b[3] = {64, 1, 1};
    dt_session *s = start_session();
    for (int i = 0; i < 50; i++) REQUIRE_EQ(EMU(emu_launch_kernel)(0, 0, "k", g, b, 100), 0);
    stop_session(s);
    dt_session_destroy(s);
    CHECK_EQ(warnings(), 0); /* devtrace's buffers are 4 MiB */
    EMU(emu_stats_reset)();
    s = start_session_with(0, 4, 64 << 10);
    for (int i = 0; i < 2000; i++) REQUIRE_EQ(EMU(emu_launch_kernel)(0, 0, "k", g, b, 100), 0);
    stop_session(s);
    emu_stats st;
    EMU(emu_stats_get)(&st);
    CHECK(st.buffers_requested > 1);
    CHECK_EQ(warnings(), st.buffers_requested);
    dt_session_destroy(s);
}

MSPTI_TEST_MAIN(DT_TEST(iterator_cursor_is_the_threads), DT_TEST(late_2024_release_answers_inner),
                DT_TEST(stale_cursor_leaves_devtrace_exact), DT_TEST(small_buffers_draw_the_warning))

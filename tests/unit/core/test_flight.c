/* The flight recorder's size setting and its ring: eviction in completion
   order, counted exactly, the window past the evicted, the reserve. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/ondemand_support.h"
#include "dt_check.h"
#include "dt_internal.h"
#include "dt_test_session.h"

static void sizes_parse(void)
{
    static const struct { const char *text; uint64_t bytes; } good[] = {
        {"1", DT_FLIGHT_RECORDER_DEFAULT_BYTES}, {"on", DT_FLIGHT_RECORDER_DEFAULT_BYTES},
        {"ON", DT_FLIGHT_RECORDER_DEFAULT_BYTES}, {"yes", DT_FLIGHT_RECORDER_DEFAULT_BYTES},
        {"0", 0}, {"off", 0}, {"4096", 4096}, {"2", 2}, {"64K", 64 << 10}, {"64k", 64 << 10},
        {"64KiB", 64 << 10}, {"64KB", 64 << 10}, {"512M", (uint64_t)512 << 20}, {"256MiB", (uint64_t)256 << 20},
        {"2G", (uint64_t)2 << 30}, {"100b", 100},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t b = 7;
        CHECK(dt__flight_parse_size(good[i].text, &b) == 0, "%s refused", good[i].text);
        CHECK(b == good[i].bytes, "%s: %llu", good[i].text, (unsigned long long)b);
    }
    static const char *const bad[] = {"", "M", "-1", "0x10", "12X", "1.5G", "12 M", "64MM", "on1",
                                      "99999999999999999999", "17179869184G", "00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t b = 7;
        CHECK(dt__flight_parse_size(bad[i], &b) != 0, "%s taken as %llu", bad[i], (unsigned long long)b);
    }
}

static void environment_sets_it_or_refuses(void)
{
    dt_config c;
    dt_config_init(&c);
    REQUIRE_EQ(c.flight_recorder_bytes, 0);
    setenv("DEVTRACE_FLIGHT_RECORDER", "64M", 1);
    dt_config_from_env(&c);
    CHECK_EQ(c.flight_recorder_bytes, (uint64_t)64 << 20);
    setenv("DEVTRACE_FLIGHT_RECORDER", "on", 1);
    dt_config_from_env(&c);
    CHECK_EQ(c.flight_recorder_bytes, DT_FLIGHT_RECORDER_DEFAULT_BYTES);
    setenv("DEVTRACE_FLIGHT_RECORDER", "lots", 1);
    dt_config_from_env(&c);
    dt_session *s = NULL;
    CHECK_EQ(dt_session_create(&c, &s), DT_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL, "a session was made");
    CHECK(strstr(dt_last_error(), "DEVTRACE_FLIGHT_RECORDER=lots is no size") != NULL, "%s", dt_last_error());
    unsetenv("DEVTRACE_FLIGHT_RECORDER");
}

static void ring_buffers_have_a_floor(void)
{
    CHECK_EQ(dt__ring_buffers(0, 4096), DT_RING_MIN_BUFFERS);
    CHECK_EQ(dt__ring_buffers(4096, 4096), DT_RING_MIN_BUFFERS);
    CHECK_EQ(dt__ring_buffers(100 * 4096 + 5, 4096), 100);
    CHECK_EQ(dt__ring_buffers(UINT64_MAX, 64), DT_POOL_MAX_BUFFERS - DT_RING_RESERVE);
}

/* A buffer of this test's own shape: a count, then that many records'
   start times (ns, already realtime); each decodes to a kernel [t, t + 10). */
static void fake_decode(void *ctx, dt_session *into, uint8_t *buf, size_t valid)
{
    (void)ctx;
    uint64_t n;
    memcpy(&n, buf, sizeof n);
    REQUIRE(valid >= (n + 1) * 8);
    dt__core_lock(into);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t;
        memcpy(&t, buf + 8 * (i + 1), sizeof t);
        dt_rec *r = dt__add_device_activity(into, DT_EVENT_KERNEL, t, t + 10, i + 1, 0, 0, 0, 0);
        if (r) r->flags |= DT_REC_REALTIME;
    }
    dt__core_unlock(into);
}

static size_t fill(uint8_t *buf, uint64_t n, uint64_t first)
{
    memcpy(buf, &n, sizeof n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t = first + 100 * i;
        memcpy(buf + 8 * (i + 1), &t, sizeof t);
    }
    return (n + 1) * 8;
}

/* 4 ring buffers and 2 in reserve: the 7th buffer asked for recycles the
   oldest completed one, whose 5 records count as ring_evicted and whose
   newest end is the window's start; the reserve serves while the queue is
   moved out; none left is a refusal. */
static void ring_recycles_the_oldest(void)
{
    dt_session *s = dt_test_session(0);
    dt_pool_slot slot = DT_POOL_SLOT_INIT;
    REQUIRE_EQ(dt__pool_slot_configure(&slot, 4 + DT_RING_RESERVE, 256, 0), 0);
    dt_ring *r = dt__ring_create(s, 4, fake_decode, NULL);
    REQUIRE(r != NULL);
    REQUIRE_EQ(dt__pool_slot_attach_ring(&slot, r), 0);
    size_t size = 0;
    uint8_t *b[8];
    for (int i = 0; i < 4; i++) {
        REQUIRE((b[i] = dt__pool_slot_get(&slot, &size)) != NULL);
        dt__ring_push(r, b[i], fill(b[i], 5, 1000 * (uint64_t)(i + 1)));
    }
    /* the pool is empty, the ring full: the first completed is recycled */
    uint8_t *again = dt__pool_slot_get(&slot, &size);
    CHECK(again == b[0], "not the oldest buffer");
    CHECK_EQ(size, 256);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_RING_EVICTED), 5);
    CHECK_EQ(dt__ring_evicted_buffers(r), 1);
    uint64_t vendor = 0, real = 0;
    dt__ring_evicted_until(r, &vendor, &real);
    CHECK_EQ(vendor, 0);
    CHECK_EQ(real, 1000 + 400 + 10);
    /* the queue moved out (a dump): the reserve serves, then nothing */
    dt_ring_batch batch;
    REQUIRE_EQ(dt__ring_take(r, &batch), 0);
    CHECK_EQ(batch.count, 3);
    CHECK(batch.buf[0] == b[1] && batch.buf[2] == b[3], "not in completion order");
    CHECK_EQ(batch.until_real, 1410);
    uint8_t *res1 = dt__pool_slot_get(&slot, &size), *res2 = dt__pool_slot_get(&slot, &size);
    CHECK(res1 && res2, "the reserve did not serve");
    CHECK(dt__pool_slot_get(&slot, &size) == NULL, "a buffer beyond the pool");
    CHECK_EQ(dt__pool_slot_refused(&slot), 1);
    /* decoded into a session of the dump's, then given back */
    dt_session *x = dt_test_session(0);
    dt__ring_decode(r, &batch, x);
    CHECK_EQ(x->sink.store.count, 15);
    CHECK_EQ(dt__store_at(&x->sink.store, 0)->start, 2000);
    dt__ring_give_back(r, &batch, dt__pool_slot_put_to, &slot);
    dt_session_destroy(x);
    dt__pool_slot_put(&slot, again);
    dt__pool_slot_put(&slot, res1);
    dt__pool_slot_put(&slot, res2);
    dt__pool_slot_detach_ring(&slot);
    dt__ring_destroy(r);
    CHECK_EQ(dt__pool_slot_release(&slot), 0);
    dt_session_destroy(s);
    dt__pool_release_spares();
}

/* A dump is a flight recorder's: another session's is refused; on the null
   backend (no buffers) it holds the user ranges since the last dump, and
   the next dump starts where it ended. */
static void dump_needs_a_flight_recorder(void)
{
    dt_session *s = dt_test_session(0);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    CHECK_EQ(dt_session_dump(s, fileno(f), DT_FORMAT_JSON), DT_ERR_STATE);
    CHECK(strstr(dt_last_error(), "flight recorder") != NULL, "%s", dt_last_error());
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);

    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.flight_recorder_bytes = 1 << 20;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    REQUIRE_EQ(dt_range_push("first", NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    dt_session *x = NULL;
    REQUIRE_EQ(dt__core_flight_snapshot(s, &x), DT_OK);
    REQUIRE_EQ(dt_session_event_count(x), 1);
    dt_event ev;
    REQUIRE_EQ(dt_session_event(x, 0, &ev), DT_OK);
    CHECK_STR(ev.name, "first");
    uint64_t end1 = x->window_end_ns;
    dt_session_destroy(x);
    REQUIRE_EQ(dt_range_push("second", NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    CHECK_EQ(dt_session_dump(s, fileno(f), DT_FORMAT_JSON), DT_OK);
    CHECK(ftell(f) > 0, "the dump wrote nothing");
    REQUIRE_EQ(dt__core_flight_snapshot(s, &x), DT_OK);
    CHECK_EQ(dt_session_event_count(x), 0);
    CHECK(x->window_start_ns > end1, "the third dump's window starts before the first's end");
    dt_session_destroy(x);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
    fclose(f);
}

/* A vendor whose flush hangs (a hung device): the dump waits for it no
   longer than DT_FLIGHT_FLUSH_TIMEOUT_MS, writes what it has, says so, and
   holds no lock meanwhile (the program records on). */
static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cond = PTHREAD_COND_INITIALIZER;
static int hang_released, hang_entered;

static dt_status hang_start(const dt_backend *self, dt_session *s)
{
    (void)self;
    (void)s;
    return DT_OK;
}

static dt_status hang_flush(const dt_backend *self, dt_session *s)
{
    (void)self;
    (void)s;
    pthread_mutex_lock(&hang_lock);
    hang_entered++;
    while (!hang_released) pthread_cond_wait(&hang_cond, &hang_lock);
    pthread_mutex_unlock(&hang_lock);
    return DT_OK;
}

static const dt_backend hanging = {
    .name = "hanging", .vendor = "test", .api_category = "privateuse1", .caps = DT_BACKEND_FLIGHT_RECORDER,
    .start = hang_start, .flush = hang_flush,
};

static void dump_survives_a_hung_flush(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.flight_recorder_bytes = 1 << 20;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt__core_begin(s), DT_OK);
    REQUIRE_EQ(dt__core_started(s, dt__core_try_backend(s, &hanging), 0), DT_OK);
    REQUIRE_EQ(dt_range_push("before", NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    dt_session *x = NULL;
    REQUIRE_EQ(dt__core_flight_snapshot(s, &x), DT_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(waited >= DT_FLIGHT_FLUSH_TIMEOUT_MS / 1000.0 - 0.01 && waited < DT_FLIGHT_FLUSH_TIMEOUT_MS / 1000.0 + 5,
          "the dump waited %.3f s for a flush that hangs", waited);
    CHECK_EQ(hang_entered, 1);
    CHECK_EQ(dt_session_event_count(x), 1);
    const char *text = NULL;
    int said = 0;
    for (size_t i = 0; dt_session_note_at(x, i, &(const char *){NULL}, &text); i++)
        said |= strstr(text, "did not complete") != NULL;
    CHECK(said, "the dump does not say that the flush did not complete");
    dt_session_destroy(x);
    /* no lock is held: the program records on while the flush hangs */
    REQUIRE_EQ(dt_range_push("during", NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    pthread_mutex_lock(&hang_lock);
    hang_released = 1;
    pthread_cond_broadcast(&hang_cond);
    pthread_mutex_unlock(&hang_lock);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    CHECK_EQ(dt_session_event_count(s), 1);
    dt_session_destroy(s);
}

/* A ring smaller than its fewest buffers of the configured size takes
   smaller buffers (a quarter of it, whole pages); one under the minimum is
   refused, the limit named. */
static void small_rings_take_small_buffers(void)
{
    dt_config c;
    dt_config_init(&c);
    c.flight_recorder_bytes = 1 << 20;
    REQUIRE_EQ(dt__flight_fit_config(&c), DT_OK);
    CHECK_EQ(c.buffer_size, 256 << 10);
    c.buffer_size = 4 << 20;
    c.flight_recorder_bytes = (1 << 20) + 5000; /* a quarter, down to whole pages */
    REQUIRE_EQ(dt__flight_fit_config(&c), DT_OK);
    CHECK_EQ(c.buffer_size, (size_t)((((1 << 20) + 5000) / 4) & ~4095));
    c.buffer_size = 4096;
    c.flight_recorder_bytes = 4 * 4096; /* fits already */
    REQUIRE_EQ(dt__flight_fit_config(&c), DT_OK);
    CHECK_EQ(c.buffer_size, 4096);
    c.buffer_size = 4 << 20;
    c.flight_recorder_bytes = (uint64_t)256 << 20; /* 64 buffers of 4 MiB */
    REQUIRE_EQ(dt__flight_fit_config(&c), DT_OK);
    CHECK_EQ(c.buffer_size, 4 << 20);
    c.flight_recorder_bytes = DT_FLIGHT_RECORDER_MIN_BYTES - 1;
    CHECK_EQ(dt__flight_fit_config(&c), DT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(dt_last_error(), "holds at least 4 buffers of 4096 bytes (16384 bytes)") != NULL, "%s",
          dt_last_error());
    dt_session *s = NULL;
    dt_config_init(&c);
    c.flight_recorder_bytes = 8192;
    CHECK_EQ(dt_session_create(&c, &s), DT_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL, "a session with a ring of 8 KiB");
    c.flight_recorder_bytes = 1 << 20;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    CHECK_EQ(s->config.buffer_size, 256 << 10);
    dt_session_destroy(s);
}

/* A batch decoded buffer by buffer, each given back at once with its pages
   released (they read zero until written again); decoded into nobody, it
   is only given back. */
static void decoded_buffers_go_back_at_once_their_pages_released(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t size = 4 * (size_t)page;
    dt_session *s = dt_test_session(0);
    dt_pool_slot slot = DT_POOL_SLOT_INIT;
    REQUIRE_EQ(dt__pool_slot_configure(&slot, 4 + DT_RING_RESERVE, size, 0), 0);
    dt_ring *r = dt__ring_create(s, 4, fake_decode, NULL);
    REQUIRE(r != NULL);
    dt__ring_set_buffer_size(r, size);
    REQUIRE_EQ(dt__pool_slot_attach_ring(&slot, r), 0);
    uint8_t *b[4];
    size_t got = 0;
    for (int i = 0; i < 4; i++) {
        REQUIRE((b[i] = dt__pool_slot_get(&slot, &got)) != NULL);
        memset(b[i], 0xab, size);
        dt__ring_push(r, b[i], fill(b[i], 3, 1000 * (uint64_t)(i + 1)));
    }
    dt_ring_batch batch;
    REQUIRE_EQ(dt__ring_take(r, &batch), 0);
    REQUIRE_EQ(batch.count, 4);
    dt_session *x = dt_test_session(0);
    dt__ring_decode_back(r, &batch, x, dt__pool_slot_put_to, &slot);
    CHECK_EQ(x->sink.store.count, 12);
    CHECK(batch.buf == NULL && batch.count == 0, "the batch is not emptied");
    /* every whole page of each buffer was released */
    for (int i = 0; i < 4; i++) {
        uintptr_t first = ((uintptr_t)b[i] + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        CHECK(((uint8_t *)first)[0] == 0 && ((uint8_t *)first)[page - 1] == 0, "buffer %d kept its pages", i);
    }
    /* back in the reserve and the pool: all 6 buffers can be had again */
    uint8_t *again[6];
    for (int i = 0; i < 4; i++) CHECK((again[i] = dt__pool_slot_get(&slot, &got)) != NULL, "buffer %d", i);
    dt_session_destroy(x);
    for (int i = 0; i < 4; i++) dt__pool_slot_put(&slot, again[i]);
    /* the window dropped: nothing decoded */
    for (int i = 0; i < 2; i++) {
        REQUIRE((b[i] = dt__pool_slot_get(&slot, &got)) != NULL);
        dt__ring_push(r, b[i], fill(b[i], 3, 1000));
    }
    REQUIRE_EQ(dt__ring_take(r, &batch), 0);
    dt__ring_decode_back(r, &batch, NULL, dt__pool_slot_put_to, &slot);
    dt__pool_slot_detach_ring(&slot);
    dt__ring_destroy(r);
    CHECK_EQ(dt__pool_slot_release(&slot), 0);
    dt_session_destroy(s);
    dt__pool_release_spares();
}

/* One dump at a time, from its snapshot until its trace is written: a dump
   holds the session (dt__core_flight_hold_running finds the running one);
   meanwhile another is busy; none runs without a session. */
static void one_dump_holds_the_session(void)
{
    dt_session *held = NULL;
    CHECK_EQ(dt__core_flight_hold_running(&held), DT_ERR_STATE);
    CHECK(strstr(dt_last_error(), "no session records in this process") != NULL, "%s", dt_last_error());
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.flight_recorder_bytes = 1 << 20;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    REQUIRE_EQ(dt__core_flight_hold_running(&held), DT_OK);
    CHECK(held == s, "not the running session");
    dt_session *other = NULL;
    CHECK_EQ(dt__core_flight_hold_running(&other), DT_ERR_BUSY);
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    CHECK_EQ(dt_session_dump(s, fileno(f), DT_FORMAT_JSON), DT_ERR_BUSY);
    dt__core_flight_release(held);
    CHECK_EQ(dt__api_dump_noted(s, fileno(f), DT_FORMAT_JSON, "flight_recorder.dump", "asked by a test", NULL, NULL),
             DT_OK);
    /* the note is the dump's alone: the recording does not keep it */
    const char *key = NULL, *text = NULL;
    for (size_t i = 0; dt_session_note_at(s, i, &key, &text); i++)
        CHECK(strcmp(key, "flight_recorder.dump") != 0, "the recording keeps the dump's note");
    fclose(f);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    CHECK_EQ(dt__core_flight_hold_running(&held), DT_ERR_STATE);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(small_rings_take_small_buffers),
             DT_TEST(decoded_buffers_go_back_at_once_their_pages_released),
             DT_TEST(one_dump_holds_the_session),
             DT_TEST(dump_survives_a_hung_flush),
             DT_TEST(dump_needs_a_flight_recorder),
             DT_TEST(sizes_parse),
             DT_TEST(environment_sets_it_or_refuses),
             DT_TEST(ring_buffers_have_a_floor),
             DT_TEST(ring_recycles_the_oldest))

/* Event store, name interning, demangling and loss accounting. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "dt_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dt_internal_core.h"
#include "dt_test_session.h"

static void records_are_64_bytes_and_chunked(void)
{
    dt_store st;
    dt__store_init(&st, 0);
    for (uint64_t i = 0; i < 3 * DT_STORE_CHUNK + 5; i++) {
        dt_rec *r = dt__store_push(&st);
        REQUIRE((r) != NULL);
        r->start = i;
    }
    REQUIRE_EQ(st.count, 3 * DT_STORE_CHUNK + 5);
    REQUIRE_EQ(st.chunk_count, 4);
    REQUIRE_EQ(dt__store_at(&st, DT_STORE_CHUNK + 7)->start, DT_STORE_CHUNK + 7);
    dt__store_free(&st);
}

static int keep_even(dt_rec *r, void *arg)
{
    (void)arg;
    return r->start % 2 == 0;
}

static void filter_keeps_order(void)
{
    dt_store st;
    dt__store_init(&st, 0);
    for (uint64_t i = 0; i < DT_STORE_CHUNK + 10; i++) dt__store_push(&st)->start = i;
    dt__store_filter(&st, keep_even, NULL);
    REQUIRE_EQ(st.count, (DT_STORE_CHUNK + 10) / 2);
    for (size_t i = 0; i < st.count; i++) REQUIRE_EQ(dt__store_at(&st, i)->start, 2 * i);
    REQUIRE_EQ(st.chunk_count, 1);
    dt__store_free(&st);
}

static void interning_deduplicates(void)
{
    dt_intern in;
    REQUIRE_EQ(dt__intern_init(&in), 0);
    uint32_t a = dt__intern_str(&in, "alpha");
    uint32_t b = dt__intern_str(&in, "beta");
    REQUIRE_NE(a, b);
    REQUIRE_EQ(dt__intern_str(&in, "alpha"), a);
    REQUIRE_EQ(dt__intern_str(&in, ""), 0);
    REQUIRE_STR(dt__intern_get(&in, b), "beta");
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(buf, sizeof buf, "name%d", i);
        dt__intern_str(&in, buf);
    }
    REQUIRE_EQ(dt__intern_str(&in, "name19999"), in.count - 1);
    REQUIRE_STR(dt__intern_get(&in, a), "alpha");
    /* a 64 KiB name, and bytes that are not UTF-8, are kept as they are */
    char *big = malloc(65537);
    memset(big, 'x', 65536);
    big[65536] = 0;
    big[100] = (char)0xff;
    uint32_t id = dt__intern_str(&in, big);
    REQUIRE_EQ(dt__intern_len(&in, id), 65536);
    REQUIRE(memcmp(dt__intern_get(&in, id), big, 65537) == 0);
    REQUIRE_EQ(dt__intern_str(&in, big), id);
    uint32_t after = dt__intern_str(&in, "after the big one");
    REQUIRE_STR(dt__intern_get(&in, after), "after the big one");
    free(big);
    dt__intern_free(&in);
}

static void kernel_names_are_demangled_once(void)
{
    dt_intern in;
    dt__intern_init(&in);
    uint32_t id = dt__intern_kernel(&in, "_ZN5torch6native12_GLOBAL__N_18add_implIfEEvPT_i");
    REQUIRE_STR(dt__intern_get(&in, id), "void torch::native::(anonymous namespace)::add_impl<float>(float*, int)");
    REQUIRE_EQ(dt__intern_kernel(&in, "_ZN5torch6native12_GLOBAL__N_18add_implIfEEvPT_i"), id);
    /* plain C names and broken mangled names are kept */
    REQUIRE_STR(dt__intern_get(&in, dt__intern_kernel(&in, "relu_kernel")), "relu_kernel");
    REQUIRE_STR(dt__intern_get(&in, dt__intern_kernel(&in, "_Z!!broken")), "_Z!!broken");
    REQUIRE_STR(dt__intern_get(&in, dt__intern_kernel(&in, NULL)), "");
    dt__intern_free(&in);
}

static void launch_configs_are_interned(void)
{
    dt_launch_table t;
    dt__launch_init(&t);
    dt_launch_config a = {{8, 1, 1}, {256, 1, 1}, 32, 0, 1024};
    dt_launch_config b = a;
    b.grid[0] = 16;
    uint32_t ia = dt__launch_intern(&t, &a), ib = dt__launch_intern(&t, &b);
    REQUIRE_NE(ia, ib);
    REQUIRE_EQ(dt__launch_intern(&t, &a), ia);
    REQUIRE_EQ(t.configs[ib].grid[0], 16);
    dt__launch_free(&t);
}

/* Work that began inside the capture window and was still running when the
   session stopped is unfinished; what began before or after it is outside
   the window. */
static void work_running_at_stop_is_unfinished(void)
{
    dt_session *s = dt_test_session(0);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    uint64_t now = dt__realtime_ns();
    dt__core_lock(s);
    for (int i = 0; i < 4; i++) {
        dt_rec *r = dt__sink_add(s);
        REQUIRE(r != NULL);
        r->kind = DT_EVENT_KERNEL;
        r->flags = DT_REC_REALTIME;
        /* inside; running at stop; began before the window; began after it */
        static const int64_t starts[4] = {0, 0, -1000000000, 3600000000000};
        r->start = (uint64_t)((int64_t)now + starts[i]);
        r->end = i == 1 ? now + 3600000000000u : r->start + 10;
        if (i == 2) r->start = s->window_start_ns - 10;
    }
    dt__core_unlock(s);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE_EQ(dt_session_event_count(s), 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNFINISHED), 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_OUTSIDE_WINDOW), 2);
    REQUIRE_STR(dt_loss_reason_name(DT_LOSS_UNFINISHED), "unfinished");
    dt_session_destroy(s);
}

static void implausible_times_are_counted(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    cfg.max_duration_ns = 1000;
    cfg.max_events = 3;
    dt_session *s;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    REQUIRE(dt__times_ok(s, 10, 20));
    REQUIRE(!(dt__times_ok(s, 0, 20)));
    REQUIRE(!(dt__times_ok(s, 10, 0)));
    REQUIRE(!(dt__times_ok(s, 30, 20)));
    REQUIRE(!(dt__times_ok(s, 10, 2000)));
    REQUIRE(!(dt__times_ok(s, 0, 0)));
    /* a start without an end: handed back still running */
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNFINISHED), 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_ZERO), 2);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_REVERSED), 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_TOO_LONG), 1);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    dt__core_lock(s);
    for (int i = 0; i < 5; i++) {
        dt_rec *r = dt__sink_add(s);
        if (!r) continue;
        r->kind = DT_EVENT_KERNEL;
        r->flags = DT_REC_REALTIME;
        /* one inside the window, one before it, one after it */
        r->start = i == 0 ? s->window_start_ns + 1 : i == 1 ? s->window_start_ns - 5 : UINT64_MAX - 10;
        r->end = r->start + 2;
    }
    dt__core_unlock(s);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_STORE_FULL), 2);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE_EQ(dt_session_event_count(s), 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_OUTSIDE_WINDOW), 2);
    REQUIRE_EQ(dt_session_loss_total(s), 9);
    REQUIRE_STR(dt_loss_reason_name(DT_LOSS_VENDOR_DROPPED), "vendor_dropped");
    dt_session_destroy(s);
}

static void buffer_pool_is_bounded(void)
{
    dt_buffer_pool *p = dt__pool_create(3, 1000, 0);
    REQUIRE((p) != NULL);
    REQUIRE_EQ(dt__pool_buffer_size(p), 1024);
    uint8_t *a = dt__pool_get(p), *b = dt__pool_get(p), *c = dt__pool_get(p);
    REQUIRE((a) != NULL);
    REQUIRE((b) != NULL);
    REQUIRE((c) != NULL);
    REQUIRE_EQ((uintptr_t)a % 8, 0);
    REQUIRE((dt__pool_get(p)) == NULL);
    REQUIRE((dt__pool_get(p)) == NULL);
    REQUIRE_EQ(dt__pool_refused(p), 2);
    uint8_t other[16];
    REQUIRE_EQ(dt__pool_put(p, other), -1);
    REQUIRE_EQ(dt__pool_put(p, b + 8), -1);
    REQUIRE_EQ(dt__pool_put(p, b), 0);
    REQUIRE((const void *)(dt__pool_get(p)) == (const void *)(b));
    REQUIRE_EQ(dt__pool_put(p, a), 0);
    REQUIRE_EQ(dt__pool_put(p, b), 0);
    REQUIRE_EQ(dt__pool_put(p, c), 0);
    REQUIRE_EQ(dt__pool_put(p, c), -1); /* more returns than buffers */
    REQUIRE_EQ(dt__pool_outstanding(p), 0);
    REQUIRE_EQ(dt__pool_destroy(p), 0);
    REQUIRE((dt__pool_create(0, 10, 0)) == NULL);
    REQUIRE((dt__pool_create(3, 0, DT_POOL_LAZY)) == NULL);
    REQUIRE((dt__pool_create(2, SIZE_MAX / 2, 0)) == NULL);
}

static void *get_one(void *pool)
{
    return dt__pool_get(pool);
}

/* A growing pool makes its count, then more on demand up to the larger of
   four times its count and its count plus two per thread that asked. */
static void buffer_pool_grows_to_its_bound(void)
{
    dt_buffer_pool *p = dt__pool_create(2, 64, DT_POOL_GROW);
    REQUIRE(p != NULL);
    uint8_t *got[16];
    for (int i = 0; i < 8; i++) REQUIRE((got[i] = dt__pool_get(p)) != NULL);
    REQUIRE(dt__pool_get(p) == NULL); /* 4 x 2 for one thread */
    REQUIRE_EQ(dt__pool_refused(p), 1);
    /* thread k (one after another) makes k + 1 threads: the bound is
       max(8, 2 + 2 (k + 1)), so the 3rd, 4th and 5th get one */
    int served = 0;
    for (int k = 1; k <= 5; k++) {
        pthread_t t;
        void *b = NULL;
        REQUIRE_EQ(pthread_create(&t, NULL, get_one, p), 0);
        pthread_join(t, &b);
        if (b) got[8 + served++] = b;
    }
    REQUIRE_EQ(served, 3);
    dt_pool_stats shape;
    dt__pool_shape(p, &shape);
    REQUIRE_EQ(shape.made, 11);
    REQUIRE_EQ(shape.threads, 6);
    REQUIRE_EQ(shape.bound, 14);
    for (int i = 0; i < 8 + served; i++) REQUIRE_EQ(dt__pool_put(p, got[i]), 0);
    REQUIRE_EQ(dt__pool_outstanding(p), 0);
    REQUIRE_EQ(dt__pool_destroy(p), 0);
    dt__pool_release_spares();
}

/* A lazy pool makes buffers only when asked, up to its count; a pool
   destroyed while buffers are out keeps them until they are reclaimed. */
static void buffer_pool_is_lazy_and_outlives_the_vendor(void)
{
    dt_buffer_pool *p = dt__pool_create(2, 8, DT_POOL_LAZY);
    REQUIRE((p) != NULL);
    REQUIRE_EQ(dt__pool_buffer_size(p), 64);
    REQUIRE_EQ(dt__pool_outstanding(p), 0);
    uint8_t *a = dt__pool_get(p);
    REQUIRE((a) != NULL);
    REQUIRE_EQ((uintptr_t)a % 64, 0);
    REQUIRE_EQ(dt__pool_outstanding(p), 1);
    REQUIRE_EQ(dt__pool_put(p, a), 0);
    /* the buffer made is reused before another is made */
    REQUIRE((const void *)(dt__pool_get(p)) == (const void *)(a));
    uint8_t *b = dt__pool_get(p);
    REQUIRE((b) != NULL);
    REQUIRE(b != a);
    REQUIRE_EQ(dt__pool_outstanding(p), 2);
    REQUIRE((dt__pool_get(p)) == NULL); /* the limit holds */
    REQUIRE_EQ(dt__pool_refused(p), 1);
    memset(a, 0xa5, 64);
    memset(b, 0x5a, 64);
    REQUIRE_EQ(dt__pool_put(p, b), 0);

    /* a is still with the vendor: destroy keeps it, frees b */
    REQUIRE_EQ(dt__pool_destroy(p), 1);
    a[63] = 1; /* still writable (ASan would object otherwise) */
    REQUIRE_EQ(dt__pool_reclaim(b), -1); /* freed with the pool: not reclaimable */
    uint8_t other[64];
    REQUIRE_EQ(dt__pool_reclaim(other), -1);
    REQUIRE_EQ(dt__pool_reclaim(NULL), -1);
    REQUIRE_EQ(dt__pool_reclaim(a), 0);
    REQUIRE_EQ(dt__pool_reclaim(a), -1); /* once */

    /* an eager pool destroyed with buffers out, reclaimed in any order */
    p = dt__pool_create(3, 100, 0);
    uint8_t *x = dt__pool_get(p), *y = dt__pool_get(p), *z = dt__pool_get(p);
    REQUIRE_EQ(dt__pool_outstanding(p), 3);
    REQUIRE_EQ(dt__pool_put(p, y), 0);
    REQUIRE_EQ(dt__pool_destroy(p), 2);
    REQUIRE_EQ(dt__pool_reclaim(y), -1);
    REQUIRE_EQ(dt__pool_reclaim(z), 0);
    REQUIRE_EQ(dt__pool_reclaim(x), 0);
    REQUIRE_EQ(dt__pool_destroy(NULL), 0);
}

/* The chunks a store frees serve the next store, last in first out (the
   warmest first), up to DT_STORE_SPARE_MAX; a recycled record is zeroed;
   the limit still holds; truncating gives chunks back. */
static void freed_chunks_serve_the_next_store(void)
{
    dt__store_release_spares();
    REQUIRE_EQ(dt__store_spare_count(), 0);
    dt_store a;
    dt__store_init(&a, 0);
    for (size_t i = 0; i < 2 * DT_STORE_CHUNK + 5; i++) memset(dt__store_push(&a), 0xab, sizeof(dt_rec));
    REQUIRE_EQ(a.chunk_count, 3);
    dt_rec *last = a.chunks[2];
    dt__store_free(&a);
    REQUIRE_EQ(dt__store_spare_count(), 3);

    dt_store b;
    dt__store_init(&b, DT_STORE_CHUNK + 1);
    dt_rec *r = dt__store_push(&b);
    REQUIRE((const void *)(r) == (const void *)(last));
    static const dt_rec zero;
    REQUIRE(memcmp(r, &zero, sizeof zero) == 0);
    for (size_t i = 1; i < DT_STORE_CHUNK + 1; i++) REQUIRE((dt__store_push(&b)) != NULL);
    REQUIRE((dt__store_push(&b)) == NULL); /* the limit */
    REQUIRE_EQ(dt__store_spare_count(), 1);
    dt__store_truncate(&b, 10);
    REQUIRE_EQ(b.chunk_count, 1);
    REQUIRE_EQ(dt__store_spare_count(), 2);
    dt__store_free(&b);

    /* only DT_STORE_SPARE_MAX are kept */
    dt_store c;
    dt__store_init(&c, 0);
    for (size_t i = 0; i < (DT_STORE_SPARE_MAX + 4) * (size_t)DT_STORE_CHUNK; i++) dt__store_push(&c)->start = i;
    dt__store_free(&c);
    REQUIRE_EQ(dt__store_spare_count(), DT_STORE_SPARE_MAX);
    dt__store_release_spares();
    REQUIRE_EQ(dt__store_spare_count(), 0);
}

static size_t wait_for_spares(size_t want)
{
    for (int i = 0; i < 2000 && dt__store_spare_count() < want; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return dt__store_spare_count();
}

/* While a session records, once a store grows past its first chunk, the
   preparer keeps DT_STORE_AHEAD chunks ready and refills them as a store
   takes them; it stops with the last session. */
static void preparer_keeps_chunks_ahead(void)
{
    dt__store_release_spares();
    dt__store_prepare(1);
    dt__store_prepare(1); /* a second recording session */
    dt_store st;
    dt__store_init(&st, 0);
    for (size_t i = 0; i < (size_t)DT_STORE_CHUNK; i++) dt__store_push(&st)->start = i;
    struct timespec wait = {0, 20000000};
    nanosleep(&wait, NULL);
    REQUIRE_EQ(dt__store_spare_count(), 0); /* one chunk: nothing prepared */
    for (size_t i = 0; i < (size_t)DT_STORE_CHUNK; i++) dt__store_push(&st)->start = i;
    REQUIRE_EQ(wait_for_spares(DT_STORE_AHEAD), DT_STORE_AHEAD);
    dt__store_prepare(0);
    dt__store_push(&st); /* the third chunk: refilled while one session records */
    REQUIRE_EQ(wait_for_spares(DT_STORE_AHEAD), DT_STORE_AHEAD);
    dt__store_prepare(0);
    for (size_t i = 0; i < (size_t)DT_STORE_CHUNK; i++) dt__store_push(&st)->start = i;
    struct timespec ms = {0, 20000000};
    nanosleep(&ms, NULL);
    REQUIRE_EQ(dt__store_spare_count(), DT_STORE_AHEAD - 1); /* stopped: no refill */
    dt__store_prepare(0); /* unbalanced: harmless */
    dt__store_free(&st);
    dt__store_release_spares();
}

/* A pool destroyed with no buffer out leaves its buffers to the next pool of
   its buffer size, the last returned handed out first; another size gets
   buffers of its own. */
static void pool_buffers_serve_the_next_pool(void)
{
    dt__pool_release_spares();
    dt_buffer_pool *p = dt__pool_create(3, 4096, 0);
    uint8_t *a = dt__pool_get(p), *b = dt__pool_get(p);
    memset(a, 1, 4096);
    memset(b, 2, 4096);
    REQUIRE_EQ(dt__pool_put(p, b), 0);
    REQUIRE_EQ(dt__pool_put(p, a), 0);
    REQUIRE_EQ(dt__pool_destroy(p), 0);

    p = dt__pool_create(3, 4096, DT_POOL_LAZY);
    REQUIRE((const void *)(dt__pool_get(p)) == (const void *)(a));
    REQUIRE((const void *)(dt__pool_get(p)) == (const void *)(b));
    uint8_t *c = dt__pool_get(p);
    REQUIRE((c) != NULL);
    REQUIRE((dt__pool_get(p)) == NULL);
    dt__pool_put(p, a);
    dt__pool_put(p, b);
    dt__pool_put(p, c);
    REQUIRE_EQ(dt__pool_destroy(p), 0);

    p = dt__pool_create(2, 8192, 0);
    uint8_t *d = dt__pool_get(p);
    REQUIRE(d != a && d != b && d != c);
    dt__pool_put(p, d);
    REQUIRE_EQ(dt__pool_destroy(p), 0);
    dt__pool_release_spares();
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(work_running_at_stop_is_unfinished),
             DT_TEST(records_are_64_bytes_and_chunked),
             DT_TEST(filter_keeps_order),
             DT_TEST(interning_deduplicates),
             DT_TEST(kernel_names_are_demangled_once),
             DT_TEST(launch_configs_are_interned),
             DT_TEST(implausible_times_are_counted),
             DT_TEST(buffer_pool_is_bounded),
             DT_TEST(buffer_pool_grows_to_its_bound),
             DT_TEST(buffer_pool_is_lazy_and_outlives_the_vendor),
             DT_TEST(freed_chunks_serve_the_next_store),
             DT_TEST(preparer_keeps_chunks_ahead),
             DT_TEST(pool_buffers_serve_the_next_pool))

/* The external-correlation stack: a real stack per thread; links made at API
   enter go to the innermost entry; user ranges are recorded with parents. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"
#include <string.h>

#include "dt_internal_core.h"

static void stack_is_a_stack(void)
{
    uint64_t id = 99;
    REQUIRE_EQ(dt_external_top(&id), DT_ERR_EMPTY_STACK);
    REQUIRE_EQ(dt_external_push(0), DT_OK); /* 0 is a valid id */
    REQUIRE_EQ(dt_external_push(7), DT_OK);
    REQUIRE_EQ(dt_external_top(&id), DT_OK);
    REQUIRE_EQ(id, 7);
    REQUIRE_EQ(dt_external_pop(&id), DT_OK);
    REQUIRE_EQ(id, 7);
    REQUIRE_EQ(dt_external_top(&id), DT_OK);
    REQUIRE_EQ(id, 0);
    REQUIRE_EQ(dt_external_pop(&id), DT_OK);
    REQUIRE_EQ(dt_external_pop(&id), DT_ERR_EMPTY_STACK);
    REQUIRE((strstr(dt_last_error(), "empty")) != NULL);
    /* deep stacks grow past the inline storage */
    for (uint64_t i = 0; i < 1000; i++) REQUIRE_EQ(dt_external_push(i), DT_OK);
    for (uint64_t i = 1000; i-- > 0;) {
        REQUIRE_EQ(dt_external_pop(&id), DT_OK);
        REQUIRE_EQ(id, i);
    }
}

static void range_pop_refuses_an_external_entry(void)
{
    uint64_t rid = 0;
    REQUIRE_EQ(dt_range_push("outer", &rid), DT_OK);
    REQUIRE(rid >= DT_RANGE_ID_BASE);
    REQUIRE_EQ(dt_external_push(5), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_ERR_STATE);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_ERR_EMPTY_STACK);
}

/* Each thread links correlations while nested; the merged map must give the
   innermost id at each link, also after inner entries were popped. */
#define THREADS 8
#define PER_THREAD 20000

static void *link_worker(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    dt_external_push(t * 1000000 + 1);            /* outer op */
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        uint64_t corr = t * 100000000 + i * 3;
        dt_external_push(t * 1000000 + 2);        /* inner op */
        dt__corr_link_current(corr + 1);
        dt_external_pop(NULL);
        dt__corr_link_current(corr + 2);           /* back in the outer op */
    }
    dt_external_pop(NULL);
    dt__corr_link_current(t * 100000000 + 99999999); /* no entry: no link */
    return NULL;
}

static dt_session *recording_session(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    return s;
}

static void links_across_threads_resolve_to_innermost(void)
{
    dt_session *s = recording_session();
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, link_worker, (void *)(t + 1));
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE_EQ(dt__corr_count(s), (size_t)THREADS * PER_THREAD * 2);
    for (uint64_t t = 1; t <= THREADS; t++) {
        for (uint64_t i = 0; i < PER_THREAD; i += 997) {
            uint64_t corr = t * 100000000 + i * 3, ext = 0;
            REQUIRE(dt__corr_get(s, corr + 1, &ext));
            REQUIRE_EQ(ext, t * 1000000 + 2);
            REQUIRE(dt__corr_get(s, corr + 2, &ext));
            REQUIRE_EQ(ext, t * 1000000 + 1);
        }
        uint64_t ext;
        REQUIRE(!(dt__corr_get(s, t * 100000000 + 99999999, &ext)));
    }
    dt_session_destroy(s);
}

/* Vendors count correlation ids up: such links are resolved through a
   table indexed by id. External id 0 is a link like any other; all ones,
   and ids far outside the others, go through the map; the last link of an
   id wins; an id never linked has none. */
static void dense_links_resolve_like_sparse_ones(void)
{
    dt_session *s = recording_session();
    const uint64_t base = 5000000000ull; /* beyond 32 bits */
    dt__core_lock(s);
    for (uint64_t i = 0; i < 50000; i++)
        if (i % 7) dt__corr_link(s, base + i, i % 11 == 0 ? 0 : 1000 + i);
    dt__corr_link(s, base + 3, 42);                 /* relinked: the last wins */
    dt__corr_link(s, base + 5, UINT64_MAX);         /* not storable + 1 */
    dt__corr_link(s, base + 900000000ull, 77);      /* far outside the others */
    dt__core_unlock(s);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE((s->corr_dense) != NULL);
    uint64_t ext = 1;
    for (uint64_t i = 0; i < 50000; i++) {
        if (i == 3 || i == 5) continue;
        if (i % 7 == 0) {
            REQUIRE(!(dt__corr_get(s, base + i, &ext)));
            continue;
        }
        REQUIRE(dt__corr_get(s, base + i, &ext));
        REQUIRE_EQ(ext, i % 11 == 0 ? 0 : 1000 + i);
    }
    REQUIRE(dt__corr_get(s, base + 3, &ext));
    REQUIRE_EQ(ext, 42);
    REQUIRE(dt__corr_get(s, base + 5, &ext));
    REQUIRE(ext == UINT64_MAX);
    REQUIRE(dt__corr_get(s, base + 900000000ull, &ext));
    REQUIRE_EQ(ext, 77);
    REQUIRE(!(dt__corr_get(s, base - 1, &ext)));
    REQUIRE(!(dt__corr_get(s, 0, &ext)));
    REQUIRE_EQ(dt__corr_count(s), 50000 - (50000 + 6) / 7 + 1);
    dt_session_destroy(s);
}

static void ranges_are_recorded_with_parents(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    uint64_t before = 0, outer = 0, inner = 0;
    REQUIRE_EQ(dt_range_push("before the session", &before), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    REQUIRE_EQ(dt_range_push("outer", &outer), DT_OK);
    REQUIRE_EQ(dt_external_push(42), DT_OK);
    REQUIRE_EQ(dt_range_push("inner \"quoted\"", &inner), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK); /* opened before the session: not recorded */
    REQUIRE_EQ(dt_session_event_count(s), 2);
    dt_event e;
    REQUIRE_EQ(dt_session_event(s, 0, &e), DT_OK);
    REQUIRE_EQ(e.kind, DT_EVENT_RANGE);
    REQUIRE_STR(e.name, "inner \"quoted\"");
    REQUIRE_EQ(e.u.range.range_id, inner);
    REQUIRE(e.has_external);
    REQUIRE_EQ(e.external_id, inner);
    REQUIRE(e.u.range.has_parent);
    REQUIRE_EQ(e.u.range.parent_id, 42);
    REQUIRE_EQ(e.thread, dt__thread_id());
    REQUIRE_EQ(dt_session_event(s, 1, &e), DT_OK);
    REQUIRE_STR(e.name, "outer");
    REQUIRE(e.u.range.has_parent); /* the range opened before the session encloses it */
    REQUIRE_EQ(e.u.range.parent_id, before);
    REQUIRE(e.start_ns >= s->window_start_ns && e.end_ns <= s->window_end_ns);
    REQUIRE_EQ(dt_session_event(s, 2, &e), DT_ERR_INVALID_ARGUMENT);
    dt_session_destroy(s);
}

static void operations_inside_ranges_know_their_range(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    uint64_t outer, inner, range = 0;
    REQUIRE_EQ(dt_external_push(5), DT_OK);        /* outside any range */
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_push("outer", &outer), DT_OK);
    REQUIRE_EQ(dt_external_push(0), DT_OK);        /* 0 is a valid id */
    REQUIRE_EQ(dt_range_push("inner", &inner), DT_OK);
    REQUIRE_EQ(dt_external_push(42), DT_OK);
    REQUIRE_EQ(dt_external_push(43), DT_OK);       /* nested op: same range */
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_external_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE(!(dt__corr_parent_range(s, 5, &range)));
    REQUIRE(dt__corr_parent_range(s, 0, &range));
    REQUIRE_EQ(range, outer);
    REQUIRE(dt__corr_parent_range(s, 42, &range));
    REQUIRE_EQ(range, inner);
    REQUIRE(dt__corr_parent_range(s, 43, &range));
    REQUIRE_EQ(range, inner);
    REQUIRE(!(dt__corr_parent_range(s, inner, &range))); /* ranges have their own parent */
    dt_session_destroy(s);
}

static void second_session_is_busy(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *a, *b;
    REQUIRE_EQ(dt_session_create(&cfg, &a), DT_OK);
    REQUIRE_EQ(dt_session_create(&cfg, &b), DT_OK);
    REQUIRE_EQ(dt_session_start(a), DT_OK);
    REQUIRE_EQ(dt_session_start(b), DT_ERR_BUSY);
    REQUIRE_EQ(dt_session_stop(b), DT_ERR_STATE);
    REQUIRE_EQ(dt_session_stop(a), DT_OK);
    REQUIRE_EQ(dt_session_start(b), DT_OK);
    REQUIRE_EQ(dt_session_stop(b), DT_OK);
    /* start, stop, start again on the same session */
    REQUIRE_EQ(dt_session_start(a), DT_OK);
    REQUIRE_EQ(dt_session_stop(a), DT_OK);
    dt_session_destroy(a);
    dt_session_destroy(b);
    cfg.backend = "no-such-backend";
    dt_session *c = NULL;
    REQUIRE_EQ(dt_session_create(&cfg, &c), DT_ERR_UNKNOWN_BACKEND);
    REQUIRE((c) == NULL);
    REQUIRE((strstr(dt_last_error(), "no-such-backend")) != NULL);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(stack_is_a_stack),
             DT_TEST(range_pop_refuses_an_external_entry),
             DT_TEST(links_across_threads_resolve_to_innermost),
             DT_TEST(dense_links_resolve_like_sparse_ones),
             DT_TEST(ranges_are_recorded_with_parents),
             DT_TEST(operations_inside_ranges_know_their_range),
             DT_TEST(second_session_is_busy))

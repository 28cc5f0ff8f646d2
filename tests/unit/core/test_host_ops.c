/* Named host operations (dt_op_push), the names of the threads that pushed
   them, and reading a stopped session's events in bulk. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dt_internal_core.h"

static dt_session *null_session(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    return s;
}

static dt_session *started_null_session(void)
{
    dt_session *s = null_session();
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    return s;
}

static const dt_event *find_event(const dt_event *ev, size_t n, dt_event_kind kind, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == kind && strcmp(ev[i].name, name) == 0) return &ev[i];
    return NULL;
}

static void ops_are_recorded_with_their_ids_and_parents(void)
{
    dt_session *s = started_null_session();
    uint64_t range = 0, popped = 0;
    REQUIRE_EQ(dt_range_push("step", &range), DT_OK);
    REQUIRE_EQ(dt_op_push("aten::linear", 7), DT_OK);
    REQUIRE_EQ(dt_op_push("aten::mm", 8), DT_OK);       /* nested op */
    uint64_t top = 0;
    REQUIRE_EQ(dt_external_top(&top), DT_OK);
    REQUIRE_EQ(top, 8);
    REQUIRE_EQ(dt_external_pop(&popped), DT_OK);        /* ends the op too */
    REQUIRE_EQ(popped, 8);
    REQUIRE_EQ(dt_op_pop(&popped), DT_OK);
    REQUIRE_EQ(popped, 7);
    REQUIRE_EQ(dt_op_push(NULL, 0), DT_OK);             /* 0 is an id; no name is "" */
    REQUIRE_EQ(dt_op_pop(NULL), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);

    dt_event ev[8];
    size_t n = dt_session_events(s, 0, 8, ev);
    REQUIRE_EQ(n, 4);
    const dt_event *mm = find_event(ev, n, DT_EVENT_OP, "aten::mm");
    const dt_event *linear = find_event(ev, n, DT_EVENT_OP, "aten::linear");
    const dt_event *unnamed = find_event(ev, n, DT_EVENT_OP, "");
    REQUIRE((mm) != NULL);
    REQUIRE((linear) != NULL);
    REQUIRE((unnamed) != NULL);
    REQUIRE(mm->has_external && mm->external_id == 8);
    REQUIRE(mm->u.op.has_parent && mm->u.op.parent_id == 7);
    REQUIRE(linear->has_external && linear->external_id == 7);
    REQUIRE(linear->u.op.has_parent && linear->u.op.parent_id == range);
    REQUIRE(unnamed->has_external && unnamed->external_id == 0);
    REQUIRE_EQ(mm->thread, dt__thread_id());
    REQUIRE(linear->start_ns <= mm->start_ns && mm->end_ns <= linear->end_ns);
    /* device time of an op pushed inside the range counts for the range */
    uint64_t r = 0;
    REQUIRE_EQ(dt_session_external_range(s, 7, &r), 1);
    REQUIRE_EQ(r, range);
    REQUIRE_EQ(dt_session_external_range(s, 8, &r), 1);
    REQUIRE_EQ(r, range);
    REQUIRE_EQ(dt_session_external_range(s, 12345, &r), 0);
    dt_session_destroy(s);
}

static void op_pop_refuses_a_range(void)
{
    REQUIRE_EQ(dt_op_pop(NULL), DT_ERR_EMPTY_STACK);
    REQUIRE_EQ(dt_range_push("r", NULL), DT_OK);
    REQUIRE_EQ(dt_op_pop(NULL), DT_ERR_STATE);
    REQUIRE((strstr(dt_last_error(), "dt_range_pop")) != NULL);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
}

static void ops_outside_a_session_are_not_recorded(void)
{
    dt_session *s = null_session();
    REQUIRE_EQ(dt_op_push("before", 1), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    REQUIRE_EQ(dt_op_pop(NULL), DT_OK);                 /* pushed before the session */
    REQUIRE_EQ(dt_op_push("inside", 2), DT_OK);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE_EQ(dt_op_pop(NULL), DT_OK);                 /* popped after it */
    REQUIRE_EQ(dt_session_event_count(s), 0);
    REQUIRE_EQ(dt_session_events(s, 0, 1, NULL), 0);
    dt_session_destroy(s);
}

struct worker_arg {
    const char *name;
    uint32_t tid;
};

static void *named_worker(void *p)
{
    struct worker_arg *a = p;
    pthread_setname_np(pthread_self(), a->name);
    a->tid = dt__thread_id();
    dt_op_push("worker op", 99);
    dt_op_pop(NULL);
    return NULL;
}

/* A worker that ends before the session stops keeps its name in the trace. */
static void thread_names_outlive_their_threads(void)
{
    dt_session *s = started_null_session();
    struct worker_arg a = {"loader-7", 0};
    pthread_t th;
    REQUIRE_EQ(pthread_create(&th, NULL, named_worker, &a), 0);
    REQUIRE_EQ(pthread_join(th, NULL), 0);
    pthread_setname_np(pthread_self(), "main-renamed");
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE((dt_session_thread_name(s, a.tid)) != NULL);
    REQUIRE_STR(dt_session_thread_name(s, a.tid), "loader-7");
    /* threads alive at stop are named as they are then */
    REQUIRE((dt_session_thread_name(s, dt__thread_id())) != NULL);
    REQUIRE_STR(dt_session_thread_name(s, dt__thread_id()), "main-renamed");
    REQUIRE((dt_session_thread_name(s, 0)) == NULL);
    REQUIRE((dt_session_thread_name(NULL, a.tid)) == NULL);
    dt_session_destroy(s);
}

static void bulk_read_matches_single_reads(void)
{
    dt_session *s = started_null_session();
    for (uint64_t i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "op %llu", (unsigned long long)i);
        dt_op_push(name, i);
        dt_op_pop(NULL);
    }
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    size_t n = dt_session_event_count(s);
    REQUIRE_EQ(n, 100);
    dt_event bulk[100], one;
    REQUIRE_EQ(dt_session_events(s, 90, 100, bulk), 10); /* clipped to what exists */
    REQUIRE_EQ(dt_session_events(s, 100, 5, bulk), 0);
    REQUIRE_EQ(dt_session_events(s, 0, n, bulk), n);
    for (size_t i = 0; i < n; i++) {
        REQUIRE_EQ(dt_session_event(s, i, &one), DT_OK);
        REQUIRE(memcmp(&one, &bulk[i], sizeof one) == 0);
    }
    dt_session_destroy(s);
}

static void device_properties_are_json_objects(void)
{
    dt_session *s = started_null_session();
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    char buf[4096];
    REQUIRE_EQ(dt_session_device_properties(s, buf, sizeof buf), 0); /* none described */
    REQUIRE_STR(buf, "");
    dt_device_props p = {.id = 1, .total_global_mem = 1u << 30, .num_sms = 24, .warp_size = 64};
    snprintf(p.name, sizeof p.name, "Emu \"GCU\"\n");
    dt__core_set_device(s, &p);
    p.id = 3;
    dt__core_set_device(s, &p);
    size_t need = dt_session_device_properties(s, NULL, 0);
    REQUIRE(need > 0);
    REQUIRE_EQ(dt_session_device_properties(s, buf, sizeof buf), need);
    REQUIRE_EQ(strlen(buf), need);
    REQUIRE((strstr(buf, "{\"id\":1,\"name\":\"Emu \\\"GCU\\\"\\n\",\"totalGlobalMem\":1073741824,")) != NULL);
    REQUIRE((strstr(buf, "},{\"id\":3,")) != NULL);
    REQUIRE((strstr(buf, "\"numSms\":24")) != NULL);
    /* a short buffer gets a NUL-terminated prefix and the full length */
    char small[16];
    REQUIRE_EQ(dt_session_device_properties(s, small, sizeof small), need);
    REQUIRE_EQ(strlen(small), sizeof small - 1);
    REQUIRE(memcmp(small, buf, sizeof small - 1) == 0);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(ops_are_recorded_with_their_ids_and_parents),
             DT_TEST(op_pop_refuses_a_range),
             DT_TEST(ops_outside_a_session_are_not_recorded),
             DT_TEST(thread_names_outlive_their_threads),
             DT_TEST(bulk_read_matches_single_reads),
             DT_TEST(device_properties_are_json_objects))

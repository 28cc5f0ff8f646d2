/*
 * The sink: what a backend sees of the session it records into
 * (core/sink.h). What it reads is the session's own (its configuration,
 * its generation, its devices, its ring), and what it writes lands in the
 * session (records, names, losses).
 */
#include <string.h>

#include "dt_check.h"
#include "dt_internal_core.h"
#include "dt_test_session.h"

static void the_sink_reads_the_sessions_configuration(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_KERNEL | DT_CAPTURE_RUNTIME;
    c.max_duration_ns = 1000;
    c.buffer_size = 0; /* the default, filled in */
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    CHECK_EQ(dt__sink_capture(s), DT_CAPTURE_KERNEL | DT_CAPTURE_RUNTIME);
    const dt_config *seen = dt__sink_config(s);
    CHECK_EQ(seen->capture, DT_CAPTURE_KERNEL | DT_CAPTURE_RUNTIME);
    CHECK_EQ(seen->max_duration_ns, 1000);
    dt_config def;
    dt_config_init(&def);
    CHECK_EQ(seen->buffer_size, def.buffer_size);
    /* the per-record check holds a record to the session's limit */
    CHECK(dt__times_ok(s, 100, 1100));
    CHECK(!dt__times_ok(s, 100, 1101));
    CHECK_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_TOO_LONG), 1);
    dt_session_destroy(s);
}

static void records_added_through_the_sink_are_the_sessions(void)
{
    dt_session *s = dt_test_session(0);
    dt__core_lock(s);
    for (uint64_t i = 1; i <= 3; i++) {
        dt_rec *r = dt__sink_add(s);
        REQUIRE(r != NULL);
        r->kind = DT_EVENT_KERNEL;
        r->start = i * 10;
        r->end = i * 10 + 5;
        r->name = dt__sink_intern(s, i == 2 ? "second" : "other");
    }
    uint32_t cut = dt__sink_intern_n(s, "second and more", 6);
    dt__core_unlock(s);
    REQUIRE_EQ(s->sink.store.count, 3);
    for (size_t i = 0; i < 3; i++) CHECK_EQ(dt__store_at(&s->sink.store, i)->start, (i + 1) * 10);
    CHECK_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 1)->name), "second");
    /* the same bytes are the same name */
    CHECK_EQ(cut, dt__store_at(&s->sink.store, 1)->name);
    dt_session_destroy(s);
}

static void a_session_without_a_flight_recorder_has_no_ring(void)
{
    dt_session *s = dt_test_session(0);
    uint8_t buffer[64] = {0};
    CHECK(!dt__sink_has_ring(s));
    /* not queued: the backend decodes it */
    CHECK_EQ(dt__sink_ring_push(s, buffer, sizeof buffer), 0);
    dt_session_destroy(s);
}

static void devices_described_are_known(void)
{
    dt_session *s = dt_test_session(0);
    CHECK(!dt__sink_has_device(s, 3));
    dt_device_props p;
    memset(&p, 0, sizeof p);
    p.id = 3;
    snprintf(p.name, sizeof p.name, "device three");
    dt__core_set_device(s, &p);
    CHECK(dt__sink_has_device(s, 3));
    CHECK(!dt__sink_has_device(s, 2));
    CHECK(!dt__sink_has_device(s, DT_MAX_DEVICES));
    CHECK_STR(dt__core_devices(s)[3].name, "device three");
    dt_session_destroy(s);
}

/* State a backend keeps outside the session (a stack's depth per thread)
   tells one start from the next by the generation. */
static void every_start_has_a_generation_of_its_own(void)
{
    dt_session *s = dt_test_session(0);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    REQUIRE(dt__active_session() == s);
    uint64_t first = dt__sink_generation(s);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    REQUIRE(dt__active_session() == NULL);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    uint64_t second = dt__sink_generation(s);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    CHECK(first != second);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(the_sink_reads_the_sessions_configuration),
             DT_TEST(records_added_through_the_sink_are_the_sessions),
             DT_TEST(a_session_without_a_flight_recorder_has_no_ring), DT_TEST(devices_described_are_known),
             DT_TEST(every_start_has_a_generation_of_its_own))

/*
 * A session over the null backend, for C tests that feed a decoder, the
 * store or the notes by hand. Include after dt_check.h and dt_internal.h (or
 * dt_internal_core.h).
 */
#ifndef DT_TEST_SESSION_H
#define DT_TEST_SESSION_H

/* capture: the DT_CAPTURE_* bits to record, 0 for the default. */
static inline dt_session *dt_test_session(uint32_t capture)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    if (capture) c.capture = capture;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    return s;
}

/* A stopped session with the capture window [start, end), for traces
   written from records added by hand. */
static inline dt_session *dt_test_written_session(uint64_t start, uint64_t end)
{
    dt_session *s = dt_test_session(0);
    s->state = DT_STATE_STOPPED;
    s->window_start_ns = start;
    s->window_end_ns = end;
    s->pid = 4242;
    snprintf(s->process_name, sizeof s->process_name, "prog");
    return s;
}

/* A kernel of 500 ns on device 0's stream, of launch configuration lc. */
static inline dt_rec *dt_test_kernel(dt_session *s, const char *name, uint64_t start, uint32_t stream,
                                     dt_launch_config lc)
{
    dt_rec *r = dt__store_push(&s->sink.store);
    REQUIRE(r != NULL);
    r->kind = DT_EVENT_KERNEL;
    r->start = start;
    r->end = start + 500;
    r->flags = DT_REC_REALTIME;
    r->name = dt__intern_kernel(&s->names, name);
    r->lane = stream;
    r->context = 1;
    r->correlation = start;
    r->u.kernel.config = dt__launch_intern(&s->launches, &lc);
    r->u.kernel.queued_delta = DT_DELTA_UNKNOWN;
    r->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
    return r;
}

/* A collective of 2 us on device 0's stream 9, of process group group
   (NULL: none). */
static inline dt_rec *dt_test_collective(dt_session *s, const char *name, const char *group, uint64_t start)
{
    dt_collective_desc c = {.start = start, .end = start + 2000, .correlation = start, .device = 0, .stream = 9,
                            .name = name, .group = group, .algorithm = "RING", .data_type = "Float",
                            .count = 1024, .bytes = 4096};
    dt_rec *r = dt__add_collective(s, &c);
    REQUIRE(r != NULL);
    r->flags |= DT_REC_REALTIME;
    return r;
}

#endif /* DT_TEST_SESSION_H */

/*
 * A session over the null backend, for C tests that feed a decoder, the
 * store or the notes by hand. Include after dt_check.h and dt_internal.h.
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

#endif /* DT_TEST_SESSION_H */

/* The flight recorder's dump: the core's snapshot of the ring's window,
   written as a normal trace to a descriptor while the session records on.
   One dump of a session at a time, from before its snapshot until its
   trace is written: a second meanwhile is DT_ERR_BUSY (a dump signal's,
   or `devtrace trigger --dump`'s, whichever came second). What a request
   for a dump answers, and when the dump triggers make one, is the
   on-demand layer's (src/ondemand). */
#include "api/ondemand_support.h"
#include "core/flight.h"
#include "core/session.h"

#include "base/log.h"

dt_status dt__api_dump_held(dt_session *s, int fd, dt_format format, const char *key, const char *note,
                           size_t *events, uint64_t loss[DT_LOSS_COUNT])
{
    dt_session *x = NULL;
    dt_status st = dt__core_flight_snapshot_held(s, &x);
    if (st != DT_OK) return st;
    if (key) dt__core_note(x, key, "%s", note);
    st = dt_session_write_fd(x, fd, format);
    if (events) *events = st == DT_OK ? dt_session_event_count(x) : 0;
    if (loss)
        for (int r = 0; r < DT_LOSS_COUNT; r++) loss[r] = dt_session_loss(x, (dt_loss_reason)r);
    dt__log("flight recorder dump: %zu events, %llu lost", dt_session_event_count(x),
           (unsigned long long)dt_session_loss_total(x));
    dt_session_destroy(x);
    return st;
}

static dt_status check_args(int fd, dt_format format)
{
    if (fd < 0) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: descriptor %d is not open", fd);
    if (!dt_format_name(format)) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: unknown format %d", (int)format);
    return DT_OK;
}

dt_status dt_session_dump(dt_session *s, int fd, dt_format format)
{
    return dt__api_dump_noted(s, fd, format, NULL, NULL, NULL, NULL);
}

dt_status dt__api_dump_noted(dt_session *s, int fd, dt_format format, const char *key, const char *note,
                            size_t *events, uint64_t loss[DT_LOSS_COUNT])
{
    if (events) *events = 0;
    dt_status st = check_args(fd, format);
    if (st == DT_OK) st = dt__core_flight_hold(s);
    if (st != DT_OK) return st;
    st = dt__api_dump_held(s, fd, format, key, note, events, loss);
    dt__core_flight_release(s);
    return st;
}

dt_status dt__api_dump_hold_running(int fd, dt_format format, dt_session **s)
{
    *s = NULL;
    dt_status st = check_args(fd, format);
    if (st == DT_OK) st = dt__core_flight_hold_running(s);
    return st;
}

void dt__api_dump_release(dt_session *s)
{
    dt__core_flight_release(s);
}

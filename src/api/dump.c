/* The flight recorder's dump: the core's snapshot of the ring's window,
   written as a normal trace to a descriptor while the session records on.
   One dump of a session at a time, from before its snapshot until its
   trace is written: a second meanwhile is DT_ERR_BUSY (a dump signal's,
   or `devtrace trigger --dump`'s, whichever came second). */
#include "core/flight.h"
#include "core/session.h"
#include "api/ondemand.h"

#include "base/log.h"
#include "protocol/record.h"

#include <stdio.h>

/* s held: the snapshot written to fd, the note in it alone. */
static dt_status dump_held(dt_session *s, int fd, dt_format format, const char *key, const char *note, size_t *events,
                           uint64_t loss[DT_LOSS_COUNT])
{
    dt_session *x = NULL;
    dt_status st = dt_core_flight_snapshot_held(s, &x);
    if (st != DT_OK) return st;
    if (key) dt_core_note(x, key, "%s", note);
    st = dt_session_write_fd(x, fd, format);
    if (events) *events = st == DT_OK ? dt_session_event_count(x) : 0;
    if (loss)
        for (int r = 0; r < DT_LOSS_COUNT; r++) loss[r] = dt_session_loss(x, (dt_loss_reason)r);
    dt_log("flight recorder dump: %zu events, %llu lost", dt_session_event_count(x),
           (unsigned long long)dt_session_loss_total(x));
    dt_session_destroy(x);
    return st;
}

static dt_status check_args(int fd, dt_format format)
{
    if (fd < 0) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: descriptor %d is not open", fd);
    if (!dt_format_name(format)) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: unknown format %d", (int)format);
    return DT_OK;
}

dt_status dt_session_dump(dt_session *s, int fd, dt_format format)
{
    return dt_dump_noted(s, fd, format, NULL, NULL, NULL, NULL);
}

dt_status dt_dump_noted(dt_session *s, int fd, dt_format format, const char *key, const char *note, size_t *events,
                        uint64_t loss[DT_LOSS_COUNT])
{
    if (events) *events = 0;
    dt_status st = check_args(fd, format);
    if (st == DT_OK) st = dt_core_flight_hold(s);
    if (st != DT_OK) return st;
    st = dump_held(s, fd, format, key, note, events, loss);
    dt_core_flight_release(s);
    return st;
}

void dt_dump_running(int fd, dt_format format, const char *note, dt_ctl_result *res)
{
    dt_session *s = NULL;
    dt_status st = check_args(fd, format);
    if (st == DT_OK) st = dt_core_flight_hold_running(&s);
    if (st == DT_ERR_BUSY) {
        res->code = DT_CTL_BUSY;
        snprintf(res->text, sizeof res->text, "another dump of the flight recorder is being written (a dump "
                                              "trigger's, or another devtrace trigger --dump): it holds the window");
        return;
    }
    if (st == DT_ERR_STATE) {
        res->code = DT_CTL_CANNOT_ARM;
        snprintf(res->text, sizeof res->text, "this process has no flight recorder");
        return;
    }
    size_t events = 0;
    uint64_t loss[DT_LOSS_COUNT] = {0};
    if (st == DT_OK) {
        snprintf(res->backend, sizeof res->backend, "%s", dt_session_backend(s));
        st = dump_held(s, fd, format, note ? "flight_recorder.dump" : NULL, note, &events, loss);
        dt_core_flight_release(s);
    }
    if (st != DT_OK) {
        res->code = DT_CTL_CANNOT_ARM;
        snprintf(res->text, sizeof res->text, "the flight recorder could not be written: %s", dt_last_error());
        return;
    }
    res->code = DT_CTL_SUCCESS;
    res->written = 1;
    res->records = events;
    dt_record_loss_summary(res->text, sizeof res->text, loss);
}

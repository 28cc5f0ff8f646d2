/* The flight recorder's dump: the core's snapshot of the ring's window,
   written as a normal trace to a descriptor while the session records on. */
#include "core/flight.h"
#include "core/session.h"

#include "base/log.h"

dt_status dt_session_dump(dt_session *s, int fd, dt_format format)
{
    if (fd < 0) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: descriptor %d is not open", fd);
    if (!dt_format_name(format)) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: unknown format %d", (int)format);
    dt_session *x = NULL;
    dt_status st = dt_core_flight_snapshot(s, &x);
    if (st != DT_OK) return st;
    st = dt_session_write_fd(x, fd, format);
    dt_log("flight recorder dump: %zu events, %llu lost", x->store.count,
           (unsigned long long)dt_session_loss_total(x));
    dt_session_destroy(x);
    return st;
}

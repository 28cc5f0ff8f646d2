/*
 * On demand: what the two listening modes share (src/api/control.c): the
 * capture mode (control_capture.c, devtrace arms a session per request)
 * and the external mode (control_external.c, the program captures through
 * its own profiler). Internal, not installed.
 */
#ifndef DT_API_ONDEMAND_H
#define DT_API_ONDEMAND_H

#include "base/common.h"
#include "devtrace/devtrace.h"
#include "protocol/control.h"

/* Listens with handler (on the listener's worker thread) and ctx; backend
   is what INFO shows ("" when none is named). cancel (may be NULL) is
   called by dt_control_stop before it waits for a running request: it
   makes a capture that waits end now. The rank is the launcher's. */
DT_HIDDEN dt_status dt_ondemand_listen(dt_ctl_handler handler, void *ctx, void (*cancel)(void), const char *backend);

/* The default for a request's timeout_ns (0): how long a steps window
   waits for its steps, and an external capture for the program. */
#define DT_ONDEMAND_DEFAULT_TIMEOUT_NS (60ull * 1000000000ull)

#endif /* DT_API_ONDEMAND_H */

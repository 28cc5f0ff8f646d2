/*
 * On demand: what the listening modes share (src/ondemand/listen.c): the
 * capture mode (capture.c, devtrace arms a session per request), the
 * external mode (external.c, the program captures through its own
 * profiler), and the dump of the flight recorder that runs in the
 * process, which both modes answer (dump.c). The layer's functions are
 * dt_ondemand_*; it reaches the recording through the public API and the
 * facade's api/ondemand_support.h, and the channel through the control
 * protocol's server (protocol/control_server.h). Internal, not installed.
 */
#ifndef DT_ONDEMAND_ONDEMAND_H
#define DT_ONDEMAND_ONDEMAND_H

#include "base/common.h"
#include "devtrace/devtrace.h"
#include "protocol/control_server.h"

/* Listens with handler (on the listener's worker thread) and ctx; named is
   the backend the configuration names ("", NULL or "auto": none). cancel
   (may be NULL) is called by dt_control_stop before it waits for a running
   request: it makes a capture that waits end now. The rank is the
   launcher's. The first listen also makes the process stop listening at
   its exit (atexit), so that a capture under way then is cut short and
   written rather than lost. */
DT_HIDDEN dt_status dt__ondemand_listen(dt_ctl_handler handler, void *ctx, void (*cancel)(void), const char *named);

/* The exit handler once more, from the first capture that armed a vendor:
   a runtime (CUDA's) registers its own teardown with atexit as the program
   initialises it, after the listen's registration in most programs, and
   at exit a capture under way must stop before that teardown, while the
   vendor can still flush (handlers run last registered first). */
DT_HIDDEN void dt__ondemand_exit_after_runtime(void);

/* dt_control_stop, saying why (what a capture cut short says:
   "this process is exiting"); dt_control_stop says "this process stopped
   listening". dt__ondemand_stop_reason: the latest why, for the modes. */
DT_HIDDEN void dt__ondemand_stop(const char *why);
DT_HIDDEN const char *dt__ondemand_stop_reason(void);

/* The backend INFO and a reply name: `named` when it names one, else the
   backend of the latest session this process started, else "auto". */
DT_HIDDEN void dt__ondemand_backend(const char *named, char *out, size_t n);

/* What one request came to, told to the observer after the handler, on the
   listener's worker thread, before the reply goes out. */
typedef struct dt_ondemand_served {
    dt_ctl_type type; /* DT_CTL_CAPTURE or DT_CTL_DUMP */
    int peer_pid;     /* the client (`devtrace trigger`) */
    const dt_ctl_result *result;
} dt_ondemand_served;
typedef void (*dt_ondemand_observer)(void *ctx, const dt_ondemand_served *served);
/* One observer per process (the injection library's, which tells `devtrace
   record`; the flight recorder's triggers, which count the dumps); NULL
   removes it, and on return no call of the one removed runs. */
DT_HIDDEN void dt__ondemand_observe(dt_ondemand_observer fn, void *ctx);

/* A DUMP, in every mode: the flight recorder of the session running in this
   process written to fd in format, its trace noting `note` (what asked for
   it; NULL: nothing); *res: written with its events and losses, or BUSY
   while another dump of it is written, CANNOT_ARM when no session with a
   flight recorder runs or the dump failed (the message says why). */
DT_HIDDEN void dt__ondemand_dump_running(int fd, dt_format format, const char *note, dt_ctl_result *res);

#endif /* DT_ONDEMAND_ONDEMAND_H */

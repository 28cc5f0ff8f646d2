/*
 * The session as the layers above core see it: an opaque handle
 * (dt_session, the public header's), made, started, stopped and read
 * through these calls (src/core/session*.c). It includes the sink
 * (core/sink.h), what a backend sees of it; its fields are core's own
 * (core/session_impl.h). Internal, not installed.
 */
#ifndef DT_CORE_SESSION_H
#define DT_CORE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/contract.h"
#include "core/sink.h"

/* A session is made and started by the API (src/api), which chooses the
   backend: the core never names one. dt__core_new: dt_session_create
   without the backend's name checked (config->backend is kept as the
   request, "auto" or a name). */
DT_HIDDEN dt_status dt__core_new(const dt_config *config, dt_session **out);
/* Starting, in three steps: dt__core_begin makes s the process's running
   session (or fails: not started); dt__core_try_backend starts backend b
   for it, as many times as the caller tries backends (dt__core_backend:
   the last that started); dt__core_started ends the start with st, the
   outcome of the tries: DT_OK runs s (awaiting: on the null backend,
   waiting for dt__core_deferred to attach), anything else undoes the begin
   and returns st. */
DT_HIDDEN dt_status dt__core_begin(dt_session *s);
DT_HIDDEN dt_status dt__core_try_backend(dt_session *s, const dt_backend *b);
DT_HIDDEN dt_status dt__core_started(dt_session *s, dt_status st, int awaiting);
/* The capture window of the running session s is [start_ns, end_ns)
   (realtime), not start to stop: what lies outside counts as
   outside_window (or unfinished) at stop. An on-demand capture's window
   opens at a step boundary after the session started, and closes at one
   before it stops. */
DT_HIDDEN void dt__core_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns);
/* Give s's vendor interface to another client (core/contract.h: release); while
   s waits for its deferred backend, that backend's. */
DT_HIDDEN dt_status dt__core_release_backend(dt_session *s, const char *to);

/* The name of the backend the latest session of this process started with
   (a backend descriptor's, valid for the process's life), NULL before any:
   what `devtrace trigger --list` shows a listener uses. */
DT_HIDDEN const char *dt__core_last_backend(void);

/* What the layers above core read and set of a session (its fields are
   core's: core/session_impl.h). */
/* The backend asked for at creation: "auto" or a name. */
DT_HIDDEN const char *dt__core_backend_request(const dt_session *s);
/* The backend it records with (the last started), or NULL. */
DT_HIDDEN const dt_backend *dt__core_backend(const dt_session *s);
/* The backend a start waits for, which attaches when the vendor's runtime
   calls the injection entry point (dt__select_start_deferring), or NULL;
   set before dt__core_begin. */
DT_HIDDEN const dt_backend *dt__core_deferred(const dt_session *s);
DT_HIDDEN void dt__core_set_deferred(dt_session *s, const dt_backend *b);
/* The path a trace is written to when none is given. */
DT_HIDDEN const char *dt__core_output_path(const dt_session *s);
/* The devices described, DT_MAX_DEVICES of them, by id (valid: described). */
DT_HIDDEN const dt_device_props *dt__core_devices(const dt_session *s);
/* In a child forked without exec: whether its vendor cannot record there,
   so that the child records host ranges and operations only. */
DT_HIDDEN int dt__core_fork_vendor_unusable(const dt_session *s);

/* After the vendor has delivered everything (session lock not held): the
   notes of what was cut or lost, the links merged, the clock fitted, the
   window applied to every record; the session is then stopped. */
DT_HIDDEN void dt__core_finish(dt_session *s);

/* In the child of a fork without exec, from a pthread_atfork child handler
   (plain stores and async-signal-safe calls only): the running session goes
   on as the child's; see session_fork.c. */
DT_HIDDEN void dt__core_forked(dt_session *s);
/* Before and after a fork without exec, in the parent, from pthread_atfork
   handlers: the backend's fork_prepare and fork_parent where its vendor
   cannot record in the child. */
DT_HIDDEN void dt__core_fork_prepare(dt_session *s);
DT_HIDDEN void dt__core_fork_parent(dt_session *s);
/* In such a child once fork has returned there (every atfork handler has
   run, so that the vendor's locks are usable): the backend's fork_child. */
DT_HIDDEN void dt__core_fork_child(dt_session *s);

#endif /* DT_CORE_SESSION_H */

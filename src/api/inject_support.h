/*
 * What the injection library (src/inject) may use of libdevtrace beyond the
 * public API: hidden functions, reachable only from code linked with the
 * library's objects (libdevtrace_inject is). Each stands for a session
 * internal the injection library needs to start a session before the
 * program's main, and to carry it through fork and exit.
 */
#ifndef DT_API_INJECT_SUPPORT_H
#define DT_API_INJECT_SUPPORT_H

#include "base/common.h"
#include "devtrace/devtrace.h"

#include <stddef.h>
#include <stdint.h>

/* Start s, but a backend whose vendor calls an injection entry point when
   the process first uses the device (CUDA's InitializeInjection) waits for
   that call (deferred names it; NULL: none waits). */
DT_HIDDEN dt_status dt__inject_support_start(dt_session *s, const char *deferred);

/* The process is ending: the session's stop makes no vendor call that only
   spares a running program cost (detaching the vendor library). */
DT_HIDDEN void dt__inject_support_exiting(void);

/* Around the program's fork(): prepare and parent in the parent, before and
   after; child in the child once fork has returned there. */
DT_HIDDEN void dt__inject_support_fork_prepare(dt_session *s);
DT_HIDDEN void dt__inject_support_fork_parent(dt_session *s);
DT_HIDDEN void dt__inject_support_fork_child(dt_session *s);
/* From a pthread_atfork child handler (plain stores and async-signal-safe
   calls only): the running session goes on as the child's. */
DT_HIDDEN void dt__inject_support_forked(dt_session *s);
/* 1 when s is a forked child's whose vendor cannot record there: its
   launches are counted as lost (DT_LOSS_FORKED_CHILD), nothing else. */
DT_HIDDEN int dt__inject_support_fork_unrecorded(const dt_session *s);

/* The rank a launcher announced in the environment, as it was set (RANK,
   OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK), into out; "" when none. */
DT_HIDDEN void dt__inject_support_rank(char *out, size_t n);

/* The injection entry points of the vendors (descriptor hooks, asked for by
   capability): */
/* The backend whose vendor's runtime will call this library's entry point
   (its variable names this very library), so that the session waits for
   it rather than loading it at start; NULL for none. */
DT_HIDDEN const char *dt__inject_support_deferred_backend(void);
/* The runtime calls the injection entry point (CUDA's InitializeInjection):
   every backend with DT_BACKEND_INJECTION_ENTRY that DEVTRACE_BACKEND
   allows arms, or attaches to s (the library's session, or NULL); when one
   attached, on_attach is registered with atexit (its trace must be
   written before the runtime's own teardown). Failures are reported
   through report (a note) or logged. */
DT_HIDDEN void dt__inject_support_initialize_injection(dt_session *s, void (*on_attach)(void),
                                                      void (*report)(const char *message));
/* The vendor asks its tools for their configuration (rocprofiler-sdk's
   rocprofiler_configure): the first backend with DT_BACKEND_TOOL_CONFIGURE
   that answers; NULL when none does. */
DT_HIDDEN void *dt__inject_support_tool_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                                 void *client_id);
/* Whether s records through a backend entered by the vendor's injection
   entry point (the one another client of the vendor interface competes
   with). */
DT_HIDDEN int dt__inject_support_holds_injection_backend(const dt_session *s);
/* Give s's vendor interface to another client (`who`), for good; also
   before s attached to it (it then never does). */
DT_HIDDEN void dt__inject_support_release(dt_session *s, const char *who);
/* s's trace written to the open descriptor fd, named name inside (its
   traceName): the file the trace will be renamed to, not the private one
   it is written into. */
DT_HIDDEN dt_status dt__inject_support_write(dt_session *s, int fd, const char *name, dt_format format);
/* Whether s still waits for the vendor's injection entry point to attach
   its backend (dt__inject_support_start). */
DT_HIDDEN int dt__inject_support_awaits_injection(const dt_session *s);
/* Attach s's waiting backend now, before the entry point is called (another
   client of the vendor interface is about to take it). */
DT_HIDDEN dt_status dt__inject_support_attach_early(dt_session *s);
/* A note into s's trace, under key. */
DT_HIDDEN void dt__inject_support_note(dt_session *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

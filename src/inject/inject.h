/* What the injection library's parts share: the session the preloaded
   library started, and the line each part writes for `devtrace record`. */
#ifndef DT_INJECT_H
#define DT_INJECT_H

#include <sys/types.h>

#include "devtrace/devtrace.h"

/* The session started when the program loaded (NULL: not tracing), and
   the process that owns it (a forked child does not). */
extern dt_session *dt__inject_session;
extern pid_t dt__inject_owner;
/* DEVTRACE_ON_DEMAND=1: the process listens for `devtrace trigger` and
   arms nothing until a capture (not even at the vendor's injection entry
   point). */
extern int dt__inject_on_demand;

/* One line to the record log (`devtrace record` prints notes as they
   are); without `record`, failures go to stderr. path and the message may
   be empty. */
__attribute__((format(printf, 4, 5))) void dt__inject_report(const char *state, int with_counts, const char *path,
                                                            const char *fmt, ...);

/* Stop the session and write the trace, once (whoever asks first; the
   others wait): at exit, _exit, exec or a signal, and from an exit handler
   a vendor part registers after its runtime's own (cuda.c). */
void dt__inject_finish(void);

/* The flight recorder (flight.c). Starts the dump triggers when s, made
   from cfg, keeps a flight recorder's ring; output: its trace's path. */
void dt__inject_flight_start(dt_session *s, const dt_config *cfg, const char *output);
/* Whether this process's session is a flight recorder's. */
int dt__inject_flight_on(void);
/* The program's exit status, as exit() or _exit() was given it (the first
   one seen counts). */
void dt__inject_flight_exit_status(int status);
/* The session ends (before it stops): the triggers stop, a program that
   failed (a non-zero exit status, or signal_received > 0) dumps once
   more, and the end is told to `record` (state ended). */
void dt__inject_flight_end(int signal_received);
/* In a child forked without exec (from a pthread_atfork handler): the
   triggers' thread is not there. */
void dt__inject_flight_forked(void);

#endif

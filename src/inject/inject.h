/* What the injection library's parts share: the session the preloaded
   library started, and the line each part writes for `devtrace record`. */
#ifndef DT_INJECT_H
#define DT_INJECT_H

#include <sys/types.h>

#include "devtrace/devtrace.h"

/* The session started when the program loaded (NULL: not tracing), and
   the process that owns it (a forked child does not). */
extern dt_session *dt_inject_session;
extern pid_t dt_inject_owner;
/* DEVTRACE_ON_DEMAND=1: the process listens for `devtrace trigger` and
   arms nothing until a capture (not even at the vendor's injection entry
   point). */
extern int dt_inject_on_demand;

/* One line to the record log (`devtrace record` prints notes as they
   are); without `record`, failures go to stderr. path and the message may
   be empty. */
__attribute__((format(printf, 4, 5))) void dt_inject_report(const char *state, int with_counts, const char *path,
                                                            const char *fmt, ...);

/* Stop the session and write the trace, once (whoever asks first; the
   others wait): at exit, _exit, exec or a signal, and from an exit handler
   a vendor part registers after its runtime's own (cuda.c). */
void dt_inject_finish(void);

#endif

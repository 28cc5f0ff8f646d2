/*
 * The api layer's one way to write a stopped session's trace
 * (src/api/write.c), for the public calls and inject_support.
 */
#ifndef DT_API_WRITE_H
#define DT_API_WRITE_H

#include "base/common.h"
#include "devtrace/devtrace.h"

/* s's trace in format, to path (fd < 0) or to the open descriptor fd, then
   named path inside (its traceName); fn names the call in messages. */
DT_HIDDEN dt_status dt__api_write_trace(dt_session *s, const char *path, int fd, dt_format format, const char *fn);

#endif

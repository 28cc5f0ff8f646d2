/*
 * The control channel's client: what `devtrace trigger` uses to reach the
 * processes that listen (src/protocol/control_client.c). The wire, the
 * directory and the messages are control_wire.h's.
 */
#ifndef DT_PROTOCOL_CONTROL_CLIENT_H
#define DT_PROTOCOL_CONTROL_CLIENT_H

#include "protocol/control_wire.h"

#include <sys/types.h>

/* Connects to a socket path and checks the listener's uid (ours or root);
   *fd is set on DT_CTL_SUCCESS. A refused connection on a path is
   DT_CTL_NO_SUCH_LISTENER. */
DT_HIDDEN dt_ctl_code dt__ctl_connect_path(const char *path, int timeout_ms, int *fd);
/* Sends one request (with out_fd when >= 0) on a connected socket and
   reads the reply within timeout_ms. The reply's code (ERR's, or
   DT_CTL_SUCCESS for OK and INFO) or the client's own failure. */
DT_HIDDEN dt_ctl_code dt__ctl_exchange(int fd, const dt_ctl_msg *request, int out_fd, int timeout_ms,
                                      dt_ctl_msg *reply);
/* Connects to pid's listener in the control directory (a stale socket is
   removed: DT_CTL_NO_SUCH_LISTENER), sends and receives as above. */
DT_HIDDEN dt_ctl_code dt__ctl_send(pid_t pid, const dt_ctl_msg *request, int out_fd, int timeout_ms,
                                  dt_ctl_msg *reply);
/* The listeners of this uid, each answered INFO (stale sockets removed,
   listeners that do not answer in timeout_ms left out); *out is freed
   with dt__free. DT_OK, or an error for the directory. */
DT_HIDDEN dt_status dt__ctl_list(int timeout_ms, dt_ctl_msg **out, size_t *count);

#endif /* DT_PROTOCOL_CONTROL_CLIENT_H */

/*
 * The control channel's server: what a process that listens for `devtrace
 * trigger` runs (src/protocol/control_server.c). The wire, the directory
 * and the messages are control_wire.h's.
 *
 * The listening side is one control thread that blocks in poll() on the
 * socket, a self-pipe and the connections it is reading (each with its own
 * deadline, so that a connection that sends nothing delays no other); the
 * traced program's threads do nothing for it. A
 * CAPTURE or DUMP runs the handler given at listen time on a worker thread;
 * a second one while it runs is answered ERR busy at once (INFO is still
 * answered, with the state). A forked child does not serve the parent's
 * socket (its inherited descriptors are closed, the parent's socket is left
 * in place) and may listen on its own; every descriptor is close-on-exec.
 */
#ifndef DT_PROTOCOL_CONTROL_SERVER_H
#define DT_PROTOCOL_CONTROL_SERVER_H

#include "protocol/control_wire.h"

typedef struct dt_ctl_request {
    dt_ctl_type type; /* DT_CTL_CAPTURE or DT_CTL_DUMP */
    uint64_t duration_ns, steps, step_multiple, timeout_ns;
    char format[16]; /* "" : the listener's choice */
    int peer_pid;     /* the client's process (SO_PEERCRED) */
} dt_ctl_request;

/* What a handler reports: code DT_CTL_SUCCESS (then written, records,
   partial and text as the summary of losses, after why the window was cut
   short when partial) or DT_CTL_BUSY / CANNOT_ARM / TIMEOUT / BAD_REQUEST
   with text as the message; backend: the backend that recorded ("": none
   named). */
typedef struct dt_ctl_result {
    dt_ctl_code code;
    int written, partial;
    uint64_t records;
    char backend[32];
    char text[1024];
} dt_ctl_result;

/* Runs on the worker thread; `fd` is the output the client opened (the
   listener closes it after the handler returns). */
typedef void (*dt_ctl_handler)(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *result);

typedef struct dt_ctl_options {
    int64_t rank, local_rank, world_size; /* -1: unknown */
    const char *backend;                  /* NULL: "" */
    dt_ctl_handler handler;
    void *ctx;
    int read_timeout_ms; /* for one request; 0: 2000 */
    /* The backend INFO names, asked at each INFO (NULL: `backend`);
       called on the control thread, it must not block. */
    void (*describe_backend)(void *ctx, char *out, size_t n);
} dt_ctl_options;

/* Starts listening (one listener per process). DT_ERR_STATE when this
   process already listens, DT_ERR_IO/DT_ERR_STATE for the directory or
   the socket, with a message. */
DT_HIDDEN dt_status dt__ctl_listen(const dt_ctl_options *options);
/* Stops the control thread, waits for a running handler, removes the
   socket. Nothing when not listening. */
DT_HIDDEN void dt__ctl_stop(void);
/* The socket's path while listening, else "". */
DT_HIDDEN const char *dt__ctl_socket_path(void);
/* The handler says where a capture stands (shown by INFO). */
DT_HIDDEN void dt__ctl_set_state(dt_ctl_state state);
/* Connections closed because the peer was another user, since start. */
DT_HIDDEN uint64_t dt__ctl_refused(void);
/* Connections the listener reads at once; past it the one read longest is
   dropped to make room (a client that sends nothing holds no other up). */
#define DT_CTL_MAX_PENDING 64

#endif /* DT_PROTOCOL_CONTROL_SERVER_H */

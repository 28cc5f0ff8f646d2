/*
 * The local control channel between `devtrace trigger` and a process that
 * listens for requests (src/protocol/control.c).
 *
 * Where. One directory per user: $XDG_RUNTIME_DIR/devtrace when
 * XDG_RUNTIME_DIR is an absolute path to a directory of this uid, else
 * /tmp/devtrace-<uid>. It is created with mode 0700 and refused when it
 * exists as anything but a directory of this uid with mode 0700 (checked
 * with O_NOFOLLOW and fstat, so a symbolic link is refused too). A listening
 * process binds an AF_UNIX SOCK_STREAM socket there named <pid>.sock (bound
 * under a temporary name, listening, then renamed, so a name never points to
 * a socket that is not yet listening) and removes it when it stops or exits.
 * A <pid>.sock whose connect is refused or whose pid is not alive is stale:
 * clients remove it and never talk to it. Listeners and clients share a pid
 * namespace (the pid names the process).
 *
 * Who. The listener reads SO_PEERCRED of each connection and serves only the
 * same uid or root; any other peer's connection is closed unanswered and
 * counted (dt_ctl_refused). The client checks the listener's uid the same
 * way before it sends anything.
 *
 * Messages. Each request and reply is one message of at most
 * DT_CTL_MAX_MESSAGE (4096) bytes: an 8-byte header, then a payload.
 *
 *   offset 0  'D' 'T'           magic
 *   offset 2  u8  version       DT_CTL_VERSION (1)
 *   offset 3  u8  type          dt_ctl_type
 *   offset 4  u32 length        payload bytes, little-endian, <= 4088
 *   offset 8  payload           text lines "key=value\n"
 *
 * Keys are [a-z_]+; a value has no newline, except the value of the key
 * "text", which comes last when present and runs to the end of the payload
 * (a message or a summary of losses, possibly over several lines). No NUL
 * byte anywhere. Numbers are unsigned decimals. Unknown keys are ignored, so
 * a later version may add keys without a new version number.
 *
 * Requests (client to listener):
 *   INFO     no keys.
 *   CAPTURE  duration_ns=N | steps=N [step_multiple=M] [timeout_ns=T]
 *            [format=F]; the output file's descriptor travels with the
 *            message (SCM_RIGHTS): the client opens the output, the listener
 *            never opens a path. F is a format's name (json, json.gz,
 *            perfetto, perfetto.gz); without it, json.
 *   DUMP     the flight recorder's window [format=F]; a descriptor as for
 *            CAPTURE.
 * Replies (listener to client):
 *   INFO     pid, program, rank, local_rank, world_size (-1: unknown),
 *            job (from SLURM_JOB_ID, TORCHELASTIC_RUN_ID or
 *            MASTER_ADDR:MASTER_PORT, prefixed by its source), backend,
 *            state (idle | armed | capturing).
 *   OK       written (0 or 1), records, text (what was lost, a summary).
 *   ERR      code (busy | cannot_arm | timeout | bad_request | version),
 *            text (a message).
 * One connection carries one request and its reply. A request that cannot
 * be parsed (garbage, a wrong magic, a length over the bound, a truncated
 * message, a bad value, a missing descriptor) gets ERR bad_request; a
 * header of another version gets ERR version. A request is read with a
 * timeout (a peer that sends nothing or goes away mid-request is dropped).
 *
 * The listening side is one control thread that blocks in poll() on the
 * socket and a self-pipe; the traced program's threads do nothing for it. A
 * CAPTURE or DUMP runs the handler given at listen time on a worker thread;
 * a second one while it runs is answered ERR busy at once (INFO is still
 * answered, with the state). A forked child does not serve the parent's
 * socket (its inherited descriptors are closed, the parent's socket is left
 * in place) and may listen on its own; every descriptor is close-on-exec.
 */
#ifndef DT_PROTOCOL_CONTROL_H
#define DT_PROTOCOL_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/common.h"
#include "devtrace/devtrace.h"

#define DT_CTL_VERSION 1
#define DT_CTL_HEADER 8
#define DT_CTL_MAX_MESSAGE 4096
#define DT_CTL_MAX_PAYLOAD (DT_CTL_MAX_MESSAGE - DT_CTL_HEADER)

typedef enum dt_ctl_type {
    DT_CTL_INFO = 1,
    DT_CTL_CAPTURE = 2,
    DT_CTL_DUMP = 3,
    DT_CTL_OK = 4,
    DT_CTL_ERR = 5,
} dt_ctl_type;

/* The outcome of a request: on the wire (ERR's code) and, for the first
   ones and the last two, found by the client itself. */
typedef enum dt_ctl_code {
    DT_CTL_SUCCESS = 0,
    DT_CTL_NO_SUCH_LISTENER, /* client: no live socket for that pid */
    DT_CTL_BUSY,             /* a capture or dump is in progress */
    DT_CTL_CANNOT_ARM,       /* the vendor cannot be armed now */
    DT_CTL_TIMEOUT,          /* no answer (client) or the capture timed out */
    DT_CTL_BAD_REQUEST,
    DT_CTL_VERSION_MISMATCH,
    DT_CTL_UNTRUSTED,        /* client: the listener runs as another user */
    DT_CTL_IO,               /* client: the connection failed or broke */
} dt_ctl_code;

typedef enum dt_ctl_state { DT_CTL_IDLE = 0, DT_CTL_ARMED, DT_CTL_CAPTURING } dt_ctl_state;

DT_HIDDEN const char *dt_ctl_code_name(dt_ctl_code code);
DT_HIDDEN const char *dt_ctl_state_name(dt_ctl_state state);

/* One message, parsed or to encode. Text fields are NUL-terminated. */
typedef struct dt_ctl_msg {
    dt_ctl_type type;
    /* CAPTURE (format also DUMP): the trace's format as dt_format_by_name
       takes it; "" leaves it to the listener (json) */
    uint64_t duration_ns, steps, step_multiple, timeout_ns;
    char format[16];
    /* INFO reply */
    int64_t pid, rank, local_rank, world_size;
    char program[64], job[128], backend[32];
    dt_ctl_state state;
    /* OK / ERR */
    dt_ctl_code code;
    uint64_t records;
    int written;
    char text[1024];
} dt_ctl_msg;

/* A message with every number unset (-1 for ranks and pid). */
DT_HIDDEN void dt_ctl_msg_init(dt_ctl_msg *msg, dt_ctl_type type);
/* Parses a whole message (header and payload). DT_CTL_SUCCESS, or
   DT_CTL_BAD_REQUEST / DT_CTL_VERSION_MISMATCH with why in `why`. */
DT_HIDDEN dt_ctl_code dt_ctl_parse(const uint8_t *buf, size_t len, dt_ctl_msg *msg, char *why, size_t why_len);
/* Encodes msg into buf (DT_CTL_MAX_MESSAGE bytes); the length, or 0 when
   it does not fit. Newlines in values other than text become spaces. */
DT_HIDDEN size_t dt_ctl_encode(const dt_ctl_msg *msg, uint8_t *buf, size_t cap);

/* The control directory (not created); DT_OK or an error with a message. */
DT_HIDDEN dt_status dt_ctl_dir(char *out, size_t n);
/* Creates the directory (0700) if missing and checks it: a directory, not a
   link, of this uid, mode 0700. DT_ERR_IO / DT_ERR_STATE with a message. */
DT_HIDDEN dt_status dt_ctl_dir_prepare(const char *dir);
/* The job this process belongs to, "" when none is announced. */
DT_HIDDEN void dt_ctl_job_id(char *out, size_t n);

/* Shared by the two sides (control.c). */
#define DT_CTL_DIR_CAP 84   /* the directory's path, with its NUL */
#define DT_CTL_PATH_CAP 104 /* a socket's path, with its NUL */
DT_HIDDEN int dt_ctl_wire_code(dt_ctl_code code); /* one an ERR may carry */
/* CLOCK_MONOTONIC ns, ms from now. */
DT_HIDDEN uint64_t dt_ctl_deadline(int ms);
/* Reads one message (header, then exactly its payload) by the deadline;
   a descriptor passed with it goes to *passed (when passed is given; more
   are closed). DT_CTL_SUCCESS with *len; DT_CTL_IO when the peer closed
   before a byte or the connection broke; DT_CTL_TIMEOUT; DT_CTL_BAD_REQUEST
   or DT_CTL_VERSION_MISMATCH for the header or a cut message (why says). */
DT_HIDDEN dt_ctl_code dt_ctl_read_message(int fd, uint8_t *buf, size_t *len, int *passed, uint64_t deadline_ns,
                                          char *why, size_t why_len);
/* Writes a whole message, pass_fd (when >= 0) with its first byte; 0, or
   -1 when the peer went away or the deadline passed. Never SIGPIPE. */
DT_HIDDEN int dt_ctl_send_message(int fd, const uint8_t *buf, size_t len, int pass_fd, uint64_t deadline_ns);
/* Whether the peer of a connected socket is this uid or root (its uid and
   pid in *uid and *pid). */
DT_HIDDEN int dt_ctl_peer_trusted(int fd, unsigned *uid, int *pid);
/* Removes path if it is a socket of this uid (one nobody serves). */
DT_HIDDEN void dt_ctl_remove_stale(const char *path);

/* ------------------------------------------------------------------ */
/* The listening side (control_listen.c)                                */
/* ------------------------------------------------------------------ */
typedef struct dt_ctl_request {
    dt_ctl_type type; /* DT_CTL_CAPTURE or DT_CTL_DUMP */
    uint64_t duration_ns, steps, step_multiple, timeout_ns;
    char format[16]; /* "" : the listener's choice */
} dt_ctl_request;

/* What a handler reports: code DT_CTL_SUCCESS (then written, records and
   text as the summary of losses) or DT_CTL_BUSY / CANNOT_ARM / TIMEOUT /
   BAD_REQUEST with text as the message. */
typedef struct dt_ctl_result {
    dt_ctl_code code;
    int written;
    uint64_t records;
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
} dt_ctl_options;

/* Starts listening (one listener per process). DT_ERR_STATE when this
   process already listens, DT_ERR_IO/DT_ERR_STATE for the directory or
   the socket, with a message. */
DT_HIDDEN dt_status dt_ctl_listen(const dt_ctl_options *options);
/* Stops the control thread, waits for a running handler, removes the
   socket. Nothing when not listening. */
DT_HIDDEN void dt_ctl_stop(void);
/* The socket's path while listening, else "". */
DT_HIDDEN const char *dt_ctl_socket_path(void);
/* The handler says where a capture stands (shown by INFO). */
DT_HIDDEN void dt_ctl_set_state(dt_ctl_state state);
/* Connections closed because the peer was another user, since start. */
DT_HIDDEN uint64_t dt_ctl_refused(void);

/* ------------------------------------------------------------------ */
/* The client side                                                      */
/* ------------------------------------------------------------------ */
/* Connects to a socket path and checks the listener's uid (ours or root);
   *fd is set on DT_CTL_SUCCESS. A refused connection on a path is
   DT_CTL_NO_SUCH_LISTENER. */
DT_HIDDEN dt_ctl_code dt_ctl_connect_path(const char *path, int timeout_ms, int *fd);
/* Sends one request (with out_fd when >= 0) on a connected socket and
   reads the reply within timeout_ms. The reply's code (ERR's, or
   DT_CTL_SUCCESS for OK and INFO) or the client's own failure. */
DT_HIDDEN dt_ctl_code dt_ctl_exchange(int fd, const dt_ctl_msg *request, int out_fd, int timeout_ms,
                                      dt_ctl_msg *reply);
/* Connects to pid's listener in the control directory (a stale socket is
   removed: DT_CTL_NO_SUCH_LISTENER), sends and receives as above. */
DT_HIDDEN dt_ctl_code dt_ctl_send(pid_t pid, const dt_ctl_msg *request, int out_fd, int timeout_ms,
                                  dt_ctl_msg *reply);
/* The listeners of this uid, each answered INFO (stale sockets removed,
   listeners that do not answer in timeout_ms left out); *out is freed
   with dt_free. DT_OK, or an error for the directory. */
DT_HIDDEN dt_status dt_ctl_list(int timeout_ms, dt_ctl_msg **out, size_t *count);

#endif

/*
 * The local control channel between `devtrace trigger` and a process that
 * listens for requests: what both sides share, the wire (control_wire.c):
 * where the sockets are, whom a side trusts, the messages and their limits,
 * and reading and writing them with a deadline. Each role has its own
 * header: the client (control_client.h, what `devtrace trigger` uses) and
 * the server (control_server.h, what a listening process runs).
 *
 * Where. One directory per user: $XDG_RUNTIME_DIR/devtrace when
 * XDG_RUNTIME_DIR is an absolute path to a directory of this uid, else
 * /run/user/<uid>/devtrace when /run/user/<uid> is a directory of this uid
 * with mode 0700 (the login manager's runtime directory, which no other
 * user can create), else /tmp/devtrace-<uid> (which any local user could
 * create first: then it is refused, and the message says to set
 * XDG_RUNTIME_DIR). It is created with mode 0700 and refused when it
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
 * counted (dt__ctl_refused). The client checks the listener's uid the same
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
 *            perfetto, perfetto.gz); without it, json. duration_ns and
 *            timeout_ns are at most DT_CTL_MAX_WINDOW_NS, steps and
 *            step_multiple at most DT_CTL_MAX_STEPS (a request past them is
 *            refused as bad_request, the limit named).
 *   DUMP     the flight recorder's window [format=F]; a descriptor as for
 *            CAPTURE.
 * Replies (listener to client):
 *   INFO     pid, program, rank, local_rank, world_size (-1: unknown),
 *            job (dt__ctl_job_id), backend (the one in use: named at listen
 *            time, else that of the latest session this process started,
 *            else "auto"), state (idle | armed | capturing).
 *   OK       written (0 or 1), records, [partial=1], [backend=B], text
 *            (what was lost, a summary; with partial=1, why the window was
 *            cut short first). partial=1: the trace holds less than the
 *            window asked for (the steps did not come in time, or the
 *            process stopped listening or ended during the window).
 *   ERR      code (busy | cannot_arm | timeout | bad_request | version),
 *            text (a message).
 * One connection carries one request and its reply. A request that cannot
 * be parsed (garbage, a wrong magic, a length over the bound, a truncated
 * message, a bad value, a missing descriptor) gets ERR bad_request; a
 * header of another version gets ERR version. A request is read with a
 * timeout (a peer that sends nothing or goes away mid-request is dropped).
 *
 */
#ifndef DT_PROTOCOL_CONTROL_WIRE_H
#define DT_PROTOCOL_CONTROL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/common.h"
#include "devtrace/devtrace.h"

#define DT_CTL_VERSION 1
#define DT_CTL_HEADER 8
#define DT_CTL_MAX_MESSAGE 4096
#define DT_CTL_MAX_PAYLOAD (DT_CTL_MAX_MESSAGE - DT_CTL_HEADER)
/* The longest window and timeout a CAPTURE may ask for (10,000,000 s,
   about 115 days: `devtrace trigger`'s own limit), and the most steps and
   the largest step multiple. */
#define DT_CTL_MAX_WINDOW_NS 10000000000000000ull
#define DT_CTL_MAX_STEPS 1000000000ull

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
    DT_CTL_PENDING,          /* no outcome yet: a message not whole (dt__ctl_read_some) */
} dt_ctl_code;

typedef enum dt_ctl_state { DT_CTL_IDLE = 0, DT_CTL_ARMED, DT_CTL_CAPTURING } dt_ctl_state;

DT_HIDDEN const char *dt__ctl_code_name(dt_ctl_code code);
DT_HIDDEN const char *dt__ctl_state_name(dt_ctl_state state);

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
    /* OK / ERR (backend also OK: the backend the capture used) */
    dt_ctl_code code;
    uint64_t records;
    int written, partial;
    char text[1024];
} dt_ctl_msg;

/* A message with every number unset (-1 for ranks and pid). */
DT_HIDDEN void dt__ctl_msg_init(dt_ctl_msg *msg, dt_ctl_type type);
/* Parses a whole message (header and payload). DT_CTL_SUCCESS, or
   DT_CTL_BAD_REQUEST / DT_CTL_VERSION_MISMATCH with why in `why`. */
DT_HIDDEN dt_ctl_code dt__ctl_parse(const uint8_t *buf, size_t len, dt_ctl_msg *msg, char *why, size_t why_len);
/* Encodes msg into buf (DT_CTL_MAX_MESSAGE bytes); the length, or 0 when
   it does not fit. Newlines in values other than text become spaces. */
DT_HIDDEN size_t dt__ctl_encode(const dt_ctl_msg *msg, uint8_t *buf, size_t cap);

/* The control directory (not created); DT_OK or an error with a message. */
DT_HIDDEN dt_status dt__ctl_dir(char *out, size_t n);
/* Creates the directory (0700) if missing and checks it: a directory, not a
   link, of this uid, mode 0700. DT_ERR_IO / DT_ERR_STATE with a message. */
DT_HIDDEN dt_status dt__ctl_dir_prepare(const char *dir);
/* The same checks, with nothing created (a client's: the listeners made
   it). */
DT_HIDDEN dt_status dt__ctl_dir_check(const char *dir);
/* The job this process belongs to, "" when none is announced: from what is
   unique to one job: "slurm:<SLURM_JOB_ID>[.<SLURM_STEP_ID>]"; under
   torchrun "torchelastic:<TORCHELASTIC_RUN_ID>@<MASTER_ADDR>:<MASTER_PORT>"
   ("master:<addr>:<port>" when the run id is "none", as plain torchrun sets
   it, or missing); "torchelastic:<id>" with a run id and no master. */
DT_HIDDEN void dt__ctl_job_id(char *out, size_t n);
/* Whether a job announced as `job` is one that `want` names: the same
   text, the part after its source ("1234" for "slurm:1234"), or a job
   that `want` names in part: a Slurm job for every step of it
   ("slurm:1234" for "slurm:1234.0"), a torchelastic run id for its run
   ("torchelastic:abc" or "abc" for "torchelastic:abc@node1:29500"). */
DT_HIDDEN int dt__ctl_job_matches(const char *job, const char *want);

/* The sizes of the directory's and a socket's paths. */
#define DT_CTL_DIR_CAP 84   /* the directory's path, with its NUL */
#define DT_CTL_PATH_CAP 104 /* a socket's path, with its NUL */
DT_HIDDEN int dt__ctl_wire_code(dt_ctl_code code); /* one an ERR may carry */
/* CLOCK_MONOTONIC ns, ms from now. */
DT_HIDDEN uint64_t dt__ctl_deadline(int ms);
/* Reads one message (header, then exactly its payload) by the deadline;
   a descriptor passed with it goes to *passed (when passed is given; more
   are closed). DT_CTL_SUCCESS with *len; DT_CTL_IO when the peer closed
   before a byte or the connection broke; DT_CTL_TIMEOUT; DT_CTL_BAD_REQUEST
   or DT_CTL_VERSION_MISMATCH for the header or a cut message (why says). */
DT_HIDDEN dt_ctl_code dt__ctl_read_message(int fd, uint8_t *buf, size_t *len, int *passed, uint64_t deadline_ns,
                                          char *why, size_t why_len);
/* A message read a part at a time, as it comes (the listening side reads
   many connections at once): dt__ctl_reader_init, then dt__ctl_read_some
   each time the socket is readable, until it returns another code than
   DT_CTL_PENDING. */
typedef struct dt_ctl_reader {
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    size_t have, need;
    int passed; /* a descriptor passed with the message, or -1 */
} dt_ctl_reader;
DT_HIDDEN void dt__ctl_reader_init(dt_ctl_reader *r);
/* Reads what has come, without waiting: DT_CTL_PENDING when the message
   is not whole yet, DT_CTL_SUCCESS when it is (r->buf, r->have), or what
   dt__ctl_read_message says of the header, a cut message or a broken
   connection. */
DT_HIDDEN dt_ctl_code dt__ctl_read_some(int fd, dt_ctl_reader *r, char *why, size_t why_len);
/* Writes a whole message, pass_fd (when >= 0) with its first byte; 0, or
   -1 when the peer went away or the deadline passed. Never SIGPIPE. */
DT_HIDDEN int dt__ctl_send_message(int fd, const uint8_t *buf, size_t len, int pass_fd, uint64_t deadline_ns);
/* Whether the peer of a connected socket is this uid or root (its uid and
   pid in *uid and *pid). */
DT_HIDDEN int dt__ctl_peer_trusted(int fd, unsigned *uid, int *pid);
/* Removes path if it is a socket of this uid (one nobody serves). */
DT_HIDDEN void dt__ctl_remove_stale(const char *path);

#endif /* DT_PROTOCOL_CONTROL_WIRE_H */

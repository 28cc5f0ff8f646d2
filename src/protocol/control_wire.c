/* The control channel's wire, what its client and server share: the
   message format and its limits, reading and writing messages with a
   deadline, the peer's check and the control directory (control_wire.h
   describes the protocol; the roles are control_client.c and
   control_server.c). */
#include "protocol/control_wire.h"

#include "base/log.h"
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_PASSED_FDS 4

/* ------------------------------------------------------------------ */
/* Names                                                                */
/* ------------------------------------------------------------------ */
static const char *const code_names[] = {
    [DT_CTL_SUCCESS] = "ok",
    [DT_CTL_NO_SUCH_LISTENER] = "no_such_listener",
    [DT_CTL_BUSY] = "busy",
    [DT_CTL_CANNOT_ARM] = "cannot_arm",
    [DT_CTL_TIMEOUT] = "timeout",
    [DT_CTL_BAD_REQUEST] = "bad_request",
    [DT_CTL_VERSION_MISMATCH] = "version",
    [DT_CTL_UNTRUSTED] = "untrusted",
    [DT_CTL_IO] = "io",
};
static const char *const state_names[] = {"idle", "armed", "capturing"};

const char *dt__ctl_code_name(dt_ctl_code code)
{
    return (unsigned)code < sizeof code_names / sizeof *code_names ? code_names[code] : "unknown";
}

const char *dt__ctl_state_name(dt_ctl_state state)
{
    return (unsigned)state < 3 ? state_names[state] : "unknown";
}

/* The codes an ERR reply may carry. */
int dt__ctl_wire_code(dt_ctl_code code)
{
    return code >= DT_CTL_BUSY && code <= DT_CTL_VERSION_MISMATCH;
}

/* ------------------------------------------------------------------ */
/* Messages                                                             */
/* ------------------------------------------------------------------ */
void dt__ctl_msg_init(dt_ctl_msg *msg, dt_ctl_type type)
{
    memset(msg, 0, sizeof *msg);
    msg->type = type;
    msg->pid = msg->rank = msg->local_rank = msg->world_size = -1;
}

static int parse_u64(const char *p, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

static int parse_i64(const char *p, size_t n, int64_t *out)
{
    int neg = n > 0 && p[0] == '-';
    uint64_t v;
    if (!parse_u64(p + neg, n - (size_t)neg, &v) || v > (uint64_t)INT64_MAX) return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* Copies a value, control characters (but for newlines and tabs where
   keep_lines) made '?', cut to the field. */
static void copy_text(char *dst, size_t cap, const char *p, size_t n, int keep_lines)
{
    if (n >= cap) n = cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        int ok = c >= 0x20 && c != 0x7f;
        if (keep_lines && (c == '\n' || c == '\t')) ok = 1;
        dst[i] = ok ? (char)c : '?';
    }
    dst[n] = 0;
}

static int key_is(const char *k, size_t kn, const char *name)
{
    return strlen(name) == kn && memcmp(k, name, kn) == 0;
}

static int find_name(const char *const *names, size_t count, const char *v, size_t n)
{
    for (size_t i = 0; i < count; i++)
        if (names[i] && key_is(v, n, names[i])) return (int)i;
    return -1;
}

/* One key's value into msg; 0 when the value is not valid for the key. */
static int apply_key(dt_ctl_msg *m, const char *k, size_t kn, const char *v, size_t vn)
{
    static const struct { const char *name; size_t off; } u64_keys[] = {
        {"duration_ns", offsetof(dt_ctl_msg, duration_ns)},
        {"steps", offsetof(dt_ctl_msg, steps)},
        {"step_multiple", offsetof(dt_ctl_msg, step_multiple)},
        {"timeout_ns", offsetof(dt_ctl_msg, timeout_ns)},
        {"records", offsetof(dt_ctl_msg, records)},
    };
    static const struct { const char *name; size_t off; } i64_keys[] = {
        {"pid", offsetof(dt_ctl_msg, pid)},
        {"rank", offsetof(dt_ctl_msg, rank)},
        {"local_rank", offsetof(dt_ctl_msg, local_rank)},
        {"world_size", offsetof(dt_ctl_msg, world_size)},
    };
    static const struct { const char *name; size_t off, cap; } str_keys[] = {
        {"program", offsetof(dt_ctl_msg, program), sizeof ((dt_ctl_msg *)0)->program},
        {"job", offsetof(dt_ctl_msg, job), sizeof ((dt_ctl_msg *)0)->job},
        {"backend", offsetof(dt_ctl_msg, backend), sizeof ((dt_ctl_msg *)0)->backend},
        {"format", offsetof(dt_ctl_msg, format), sizeof ((dt_ctl_msg *)0)->format},
    };
    char *base = (char *)m;
    for (size_t i = 0; i < sizeof u64_keys / sizeof *u64_keys; i++)
        if (key_is(k, kn, u64_keys[i].name)) return parse_u64(v, vn, (uint64_t *)(void *)(base + u64_keys[i].off));
    for (size_t i = 0; i < sizeof i64_keys / sizeof *i64_keys; i++)
        if (key_is(k, kn, i64_keys[i].name)) return parse_i64(v, vn, (int64_t *)(void *)(base + i64_keys[i].off));
    for (size_t i = 0; i < sizeof str_keys / sizeof *str_keys; i++)
        if (key_is(k, kn, str_keys[i].name)) {
            copy_text(base + str_keys[i].off, str_keys[i].cap, v, vn, 0);
            return 1;
        }
    if (key_is(k, kn, "written") || key_is(k, kn, "partial")) {
        uint64_t w;
        if (!parse_u64(v, vn, &w) || w > 1) return 0;
        *(key_is(k, kn, "written") ? &m->written : &m->partial) = (int)w;
        return 1;
    }
    if (key_is(k, kn, "state")) {
        int s = find_name(state_names, 3, v, vn);
        if (s < 0) return 0;
        m->state = (dt_ctl_state)s;
        return 1;
    }
    if (key_is(k, kn, "code")) {
        int c = find_name(code_names, sizeof code_names / sizeof *code_names, v, vn);
        if (c < 0 || !dt__ctl_wire_code((dt_ctl_code)c)) return 0;
        m->code = (dt_ctl_code)c;
        return 1;
    }
    return 1; /* unknown keys are ignored */
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The header's verdict: SUCCESS with the payload length, or why not. */
static dt_ctl_code check_header(const uint8_t *h, uint32_t *payload, char *why, size_t wn)
{
    if (h[0] != 'D' || h[1] != 'T') {
        snprintf(why, wn, "not a devtrace control message (magic %02x %02x)", h[0], h[1]);
        return DT_CTL_BAD_REQUEST;
    }
    if (h[2] != DT_CTL_VERSION) {
        snprintf(why, wn, "protocol version %u, this side speaks version %u", h[2], DT_CTL_VERSION);
        return DT_CTL_VERSION_MISMATCH;
    }
    if (h[3] < DT_CTL_INFO || h[3] > DT_CTL_ERR) {
        snprintf(why, wn, "unknown message type %u", h[3]);
        return DT_CTL_BAD_REQUEST;
    }
    *payload = get_le32(h + 4);
    if (*payload > DT_CTL_MAX_PAYLOAD) {
        snprintf(why, wn, "a payload of %u bytes, over the bound of %u", *payload, (unsigned)DT_CTL_MAX_PAYLOAD);
        return DT_CTL_BAD_REQUEST;
    }
    return DT_CTL_SUCCESS;
}

dt_ctl_code dt__ctl_parse(const uint8_t *buf, size_t len, dt_ctl_msg *msg, char *why, size_t wn)
{
    if (len < DT_CTL_HEADER) {
        snprintf(why, wn, "a truncated header (%zu bytes)", len);
        return DT_CTL_BAD_REQUEST;
    }
    uint32_t plen;
    dt_ctl_code rc = check_header(buf, &plen, why, wn);
    if (rc != DT_CTL_SUCCESS) return rc;
    if (len != DT_CTL_HEADER + (size_t)plen) {
        snprintf(why, wn, "%zu payload bytes where the header says %u", len - DT_CTL_HEADER, plen);
        return DT_CTL_BAD_REQUEST;
    }
    dt__ctl_msg_init(msg, (dt_ctl_type)buf[3]);
    const char *p = (const char *)buf + DT_CTL_HEADER, *end = p + plen;
    if (memchr(p, 0, plen)) {
        snprintf(why, wn, "a NUL byte in the payload");
        return DT_CTL_BAD_REQUEST;
    }
    int have_code = 0;
    while (p < end) {
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!eq || (nl && nl < eq)) {
            snprintf(why, wn, "a line without '='");
            return DT_CTL_BAD_REQUEST;
        }
        size_t kn = (size_t)(eq - p);
        for (size_t i = 0; i < kn; i++)
            if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_')) kn = 0;
        if (kn == 0 || kn > 31) {
            snprintf(why, wn, "a key that is not [a-z_]{1,31}");
            return DT_CTL_BAD_REQUEST;
        }
        const char *v = eq + 1;
        if (key_is(p, kn, "text")) {
            copy_text(msg->text, sizeof msg->text, v, (size_t)(end - v), 1);
            break;
        }
        if (!nl) {
            snprintf(why, wn, "a last line without a newline");
            return DT_CTL_BAD_REQUEST;
        }
        have_code |= key_is(p, kn, "code");
        if (!apply_key(msg, p, kn, v, (size_t)(nl - v))) {
            snprintf(why, wn, "a bad value for %.*s", (int)kn, p);
            return DT_CTL_BAD_REQUEST;
        }
        p = nl + 1;
    }
    if (msg->type == DT_CTL_CAPTURE && (msg->duration_ns == 0) == (msg->steps == 0)) {
        snprintf(why, wn, "a capture needs one of duration_ns and steps, above 0");
        return DT_CTL_BAD_REQUEST;
    }
    if (msg->type == DT_CTL_CAPTURE) {
        /* what no window can honour is refused, the limit named */
        static const struct { const char *name; size_t off; uint64_t max; const char *unit; } limits[] = {
            {"duration_ns", offsetof(dt_ctl_msg, duration_ns), DT_CTL_MAX_WINDOW_NS, " ns (10000000 s)"},
            {"timeout_ns", offsetof(dt_ctl_msg, timeout_ns), DT_CTL_MAX_WINDOW_NS, " ns (10000000 s)"},
            {"steps", offsetof(dt_ctl_msg, steps), DT_CTL_MAX_STEPS, ""},
            {"step_multiple", offsetof(dt_ctl_msg, step_multiple), DT_CTL_MAX_STEPS, ""},
        };
        for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
            uint64_t v = *(const uint64_t *)(const void *)((const char *)msg + limits[i].off);
            if (v <= limits[i].max) continue;
            snprintf(why, wn, "%s=%llu is over the limit of %llu%s", limits[i].name, (unsigned long long)v,
                     (unsigned long long)limits[i].max, limits[i].unit);
            return DT_CTL_BAD_REQUEST;
        }
    }
    if (msg->type == DT_CTL_ERR && !have_code) {
        snprintf(why, wn, "an error without a code");
        return DT_CTL_BAD_REQUEST;
    }
    return DT_CTL_SUCCESS;
}

typedef struct writer {
    uint8_t *buf;
    size_t cap, len;
    int full;
} writer;

static void put(writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(writer *w, const char *fmt, ...)
{
    if (w->full) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf((char *)w->buf + w->len, w->cap - w->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= w->cap - w->len) w->full = 1;
    else w->len += (size_t)n;
}

/* A one-line value: control characters made '?'. */
static void put_str(writer *w, const char *key, const char *value, size_t cap)
{
    char clean[1024];
    copy_text(clean, sizeof clean, value, strnlen(value, cap), 0);
    put(w, "%s=%s\n", key, clean);
}

size_t dt__ctl_encode(const dt_ctl_msg *m, uint8_t *buf, size_t cap)
{
    if (cap > DT_CTL_MAX_MESSAGE) cap = DT_CTL_MAX_MESSAGE;
    if (cap <= DT_CTL_HEADER) return 0;
    writer w = {buf, cap, DT_CTL_HEADER, 0};
    switch (m->type) {
    case DT_CTL_INFO:
        if (m->pid >= 0) { /* a reply */
            put(&w, "pid=%lld\nrank=%lld\nlocal_rank=%lld\nworld_size=%lld\n", (long long)m->pid,
                (long long)m->rank, (long long)m->local_rank, (long long)m->world_size);
            put_str(&w, "program", m->program, sizeof m->program);
            put_str(&w, "job", m->job, sizeof m->job);
            put_str(&w, "backend", m->backend, sizeof m->backend);
            put(&w, "state=%s\n", dt__ctl_state_name(m->state));
        }
        break;
    case DT_CTL_CAPTURE:
        if (m->duration_ns) put(&w, "duration_ns=%llu\n", (unsigned long long)m->duration_ns);
        if (m->steps) put(&w, "steps=%llu\n", (unsigned long long)m->steps);
        if (m->step_multiple) put(&w, "step_multiple=%llu\n", (unsigned long long)m->step_multiple);
        if (m->timeout_ns) put(&w, "timeout_ns=%llu\n", (unsigned long long)m->timeout_ns);
        if (m->format[0]) put_str(&w, "format", m->format, sizeof m->format);
        break;
    case DT_CTL_DUMP:
        if (m->format[0]) put_str(&w, "format", m->format, sizeof m->format);
        break;
    case DT_CTL_OK:
        put(&w, "written=%d\nrecords=%llu\n", m->written ? 1 : 0, (unsigned long long)m->records);
        if (m->partial) put(&w, "partial=1\n");
        if (m->backend[0]) put_str(&w, "backend", m->backend, sizeof m->backend);
        break;
    case DT_CTL_ERR: put(&w, "code=%s\n", dt__ctl_code_name(m->code)); break;
    default: return 0;
    }
    if ((m->type == DT_CTL_OK || m->type == DT_CTL_ERR) && m->text[0]) {
        /* the text is last and may be cut to what fits */
        size_t room = w.cap - w.len, n = strnlen(m->text, sizeof m->text);
        if (!w.full && room > 5) {
            if (n > room - 5) n = room - 5;
            memcpy(w.buf + w.len, "text=", 5);
            memcpy(w.buf + w.len + 5, m->text, n);
            for (size_t i = 0; i < n; i++)
                if (w.buf[w.len + 5 + i] == 0) w.buf[w.len + 5 + i] = '?';
            w.len += 5 + n;
        }
    }
    if (w.full) return 0;
    uint32_t plen = (uint32_t)(w.len - DT_CTL_HEADER);
    uint8_t h[DT_CTL_HEADER] = {'D', 'T', DT_CTL_VERSION, (uint8_t)m->type, (uint8_t)plen, (uint8_t)(plen >> 8),
                                (uint8_t)(plen >> 16), (uint8_t)(plen >> 24)};
    memcpy(buf, h, sizeof h);
    return w.len;
}

/* ------------------------------------------------------------------ */
/* Sockets: waiting, reading and writing with a deadline                */
/* ------------------------------------------------------------------ */
uint64_t dt__ctl_deadline(int ms) { return dt__monotonic_ns() + (uint64_t)(ms < 0 ? 0 : ms) * 1000000u; }

/* 1: ready, 0: the deadline passed, -1: poll failed. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = dt__monotonic_ns();
        if (now >= deadline) return 0;
        uint64_t left = (deadline - now + 999999u) / 1000000u;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* recv that collects passed descriptors: the first into *passed (when
   passed is given and still -1), the others closed. */
static ssize_t recv_fds(int fd, uint8_t *buf, size_t n, int *passed)
{
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
    } control;
    struct iovec iov = {buf, n};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.space;
    mh.msg_controllen = sizeof control.space;
    ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) return r;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
            if (passed && *passed < 0) *passed = got;
            else close(got);
        }
    }
    return r;
}

/* One recv of what a message still needs: DT_CTL_PENDING when nothing
   came (*again set: the socket has no more now) or the message is not
   whole yet; DT_CTL_SUCCESS when it is; else why not. */
static dt_ctl_code read_step(int fd, dt_ctl_reader *r, int *again, char *why, size_t wn)
{
    *again = 0;
    ssize_t n = recv_fds(fd, r->buf + r->have, r->need - r->have, &r->passed);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            *again = errno != EINTR;
            return DT_CTL_PENDING;
        }
        snprintf(why, wn, "the connection broke: %s", strerror(errno));
        return DT_CTL_IO;
    }
    if (n == 0) {
        snprintf(why, wn, r->have ? "a truncated message: %zu of %zu bytes" : "the peer closed the connection",
                 r->have, r->need);
        return r->have ? DT_CTL_BAD_REQUEST : DT_CTL_IO;
    }
    r->have += (size_t)n;
    if (r->have == DT_CTL_HEADER && r->need == DT_CTL_HEADER) {
        uint32_t plen;
        dt_ctl_code rc = check_header(r->buf, &plen, why, wn);
        if (rc != DT_CTL_SUCCESS) return rc;
        r->need = DT_CTL_HEADER + plen;
    }
    return r->have < r->need ? DT_CTL_PENDING : DT_CTL_SUCCESS;
}

void dt__ctl_reader_init(dt_ctl_reader *r)
{
    r->have = 0;
    r->need = DT_CTL_HEADER;
    r->passed = -1;
}

dt_ctl_code dt__ctl_read_some(int fd, dt_ctl_reader *r, char *why, size_t wn)
{
    for (;;) {
        int again;
        dt_ctl_code rc = read_step(fd, r, &again, why, wn);
        if (rc != DT_CTL_PENDING || again) return rc;
    }
}

/* Reads one message (header, then exactly its payload). SUCCESS with *len;
   IO when the peer closed before a byte or the connection broke; TIMEOUT;
   BAD_REQUEST / VERSION_MISMATCH for what the header or a cut says. */
dt_ctl_code dt__ctl_read_message(int fd, uint8_t *buf, size_t *len, int *passed, uint64_t deadline, char *why,
                                size_t wn)
{
    dt_ctl_reader reader, *r = &reader;
    dt__ctl_reader_init(r);
    dt_ctl_code rc = DT_CTL_PENDING;
    while (rc == DT_CTL_PENDING) {
        int w = wait_fd(fd, POLLIN, deadline);
        if (w <= 0) {
            snprintf(why, wn, w == 0 ? "no complete message in time (%zu bytes came)" : "poll failed (%zu bytes came)",
                     r->have);
            rc = w == 0 ? DT_CTL_TIMEOUT : DT_CTL_IO;
            break;
        }
        rc = dt__ctl_read_some(fd, r, why, wn);
    }
    if (rc == DT_CTL_SUCCESS) {
        memcpy(buf, r->buf, r->have);
        *len = r->have;
    }
    if (passed && *passed < 0) *passed = r->passed;
    else if (r->passed >= 0) close(r->passed);
    return rc;
}

/* Writes a whole message, the descriptor (when >= 0) with its first byte.
   0, or -1 when the peer went away or the deadline passed. */
int dt__ctl_send_message(int fd, const uint8_t *buf, size_t len, int pass_fd, uint64_t deadline)
{
    size_t done = 0;
    while (done < len) {
        if (wait_fd(fd, POLLOUT, deadline) <= 0) return -1;
        struct iovec iov = {(void *)(buf + done), len - done};
        struct msghdr mh = {0};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(sizeof(int))];
        } control;
        if (pass_fd >= 0 && done == 0) {
            memset(&control, 0, sizeof control);
            mh.msg_control = control.space;
            mh.msg_controllen = sizeof control.space;
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
        }
        ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

int dt__ctl_peer_trusted(int fd, unsigned *uid, int *pid)
{
    struct ucred cred;
    socklen_t n = sizeof cred;
    *uid = (unsigned)-1;
    *pid = -1;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) != 0 || n != sizeof cred) return 0;
    *uid = (unsigned)cred.uid;
    *pid = (int)cred.pid;
    return cred.uid == geteuid() || cred.uid == 0;
}

/* ------------------------------------------------------------------ */
/* The directory                                                        */
/* ------------------------------------------------------------------ */
/* Room for "<dir>/<pid>.sock.tmp" in sun_path. */
#define SUN_PATH_CAP sizeof(((struct sockaddr_un *)0)->sun_path)
#define SOCK_NAME_ROOM (SUN_PATH_CAP - DT_CTL_DIR_CAP)
_Static_assert(DT_CTL_PATH_CAP + 4 <= SUN_PATH_CAP, "a socket's temporary name fits sun_path");

/* A runtime directory of this uid that no other user can have made: an
   absolute path, a directory (not a link) of this uid, writable. With
   private, also mode 0700 (/run/user/<uid>, made by the login manager). */
static int own_dir(const char *path, int private)
{
    struct stat st;
    return path && path[0] == '/' && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           (!private || (st.st_mode & 077) == 0) && access(path, W_OK | X_OK) == 0;
}

dt_status dt__ctl_dir(char *out, size_t n)
{
    const char *xdg = dt__env("XDG_RUNTIME_DIR");
    char run_user[64];
    snprintf(run_user, sizeof run_user, "/run/user/%u", (unsigned)geteuid());
    int n_written;
    const char *base = own_dir(xdg, 0) ? xdg : own_dir(run_user, 1) ? run_user : NULL;
    if (base)
        n_written = snprintf(out, n, "%s/devtrace", base);
    else
        n_written = snprintf(out, n, "/tmp/devtrace-%u", (unsigned)geteuid());
    if (n_written < 0 || (size_t)n_written >= n ||
        (size_t)n_written + SOCK_NAME_ROOM > SUN_PATH_CAP)
        return dt__error(DT_ERR_INVALID_ARGUMENT, "the control directory %s%s is too long for a socket path",
                        base ? base : "/tmp", base ? "/devtrace" : "");
    return DT_OK;
}

/* A directory of another uid where ours should be: refused, and in /tmp
   (where any user may make it first) what to do about it. */
static dt_status not_ours(const char *dir, const struct stat *st)
{
    return dt__error(DT_ERR_STATE, "the control directory %s belongs to uid %u, not to uid %u: refused%s", dir,
                    (unsigned)st->st_uid, (unsigned)geteuid(),
                    strncmp(dir, "/tmp/", 5) == 0 ? " (another user made it first; set XDG_RUNTIME_DIR to a directory "
                                                    "of yours, such as /run/user/<uid>)" : "");
}

/* Checks (and with create, makes) the directory. */
static dt_status check_dir(const char *dir, int create)
{
    int made = 0;
    if (create) {
        if (mkdir(dir, 0700) == 0) made = 1;
        else if (errno != EEXIST)
            return dt__error(DT_ERR_IO, "cannot create the control directory %s: %s", dir, strerror(errno));
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP || err == ENOTDIR)
            return dt__error(DT_ERR_STATE, "the control directory %s is a symbolic link or not a directory: refused",
                            dir);
        /* another user's directory, closed to us */
        if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != geteuid()) return not_ours(dir, &st);
        return dt__error(DT_ERR_IO, "cannot open the control directory %s: %s", dir, strerror(err));
    }
    dt_status rc = DT_OK;
    if (fstat(fd, &st) != 0)
        rc = dt__error(DT_ERR_IO, "cannot stat the control directory %s: %s", dir, strerror(errno));
    else if (st.st_uid != geteuid())
        rc = not_ours(dir, &st);
    else if ((st.st_mode & 07777) != 0700 && !(made && fchmod(fd, 0700) == 0))
        rc = dt__error(DT_ERR_STATE, "the control directory %s has mode %04o, not 0700: refused", dir,
                      (unsigned)(st.st_mode & 07777));
    close(fd);
    return rc;
}

dt_status dt__ctl_dir_prepare(const char *dir) { return check_dir(dir, 1); }

dt_status dt__ctl_dir_check(const char *dir) { return check_dir(dir, 0); }

void dt__ctl_job_id(char *out, size_t n)
{
    const char *job = dt__env("SLURM_JOB_ID"), *step = dt__env("SLURM_STEP_ID");
    const char *run = dt__env("TORCHELASTIC_RUN_ID"), *addr = dt__env("MASTER_ADDR"), *port = dt__env("MASTER_PORT");
    /* plain torchrun sets the run id "none" for every job: no identity */
    if (run && (!run[0] || strcmp(run, "none") == 0)) run = NULL;
    if (!n) return;
    if (job && step) snprintf(out, n, "slurm:%s.%s", job, step);
    else if (job) snprintf(out, n, "slurm:%s", job);
    else if (run && addr && port) snprintf(out, n, "torchelastic:%s@%s:%s", run, addr, port);
    else if (addr && port) snprintf(out, n, "master:%s:%s", addr, port);
    else if (run) snprintf(out, n, "torchelastic:%s", run);
    else out[0] = 0;
}

int dt__ctl_job_matches(const char *job, const char *want)
{
    if (!job[0] || !want[0]) return 0;
    if (strcmp(job, want) == 0) return 1;
    const char *colon = strchr(job, ':');
    if (!colon) return 0;
    const char *id = colon + 1;
    if (strcmp(id, want) == 0) return 1;
    /* a job named in part: a Slurm job for all its steps, a torchelastic
       run for its run id */
    size_t src = (size_t)(colon - job) + 1;
    char sep = strncmp(job, "slurm:", 6) == 0 ? '.' : strncmp(job, "torchelastic:", 13) == 0 ? '@' : 0;
    const char *cut = sep ? strchr(id, sep) : NULL;
    if (!cut) return 0;
    size_t idlen = (size_t)(cut - id);
    if (strlen(want) == idlen && strncmp(want, id, idlen) == 0) return 1;
    return strlen(want) == src + idlen && strncmp(want, job, src + idlen) == 0;
}

/* A socket file of ours that no live process serves is removed. */
void dt__ctl_remove_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid()) {
        dt__log("control: removing the stale socket %s", path);
        unlink(path);
    }
}

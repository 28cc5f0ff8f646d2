/* The control channel's server, its listening side: one control thread
   that polls the socket and a self-pipe, one worker thread at a time for
   the handler (control_server.h; control_wire.h describes the protocol). */
#include "protocol/control_server.h"

#include "base/alloc.h"
#include "base/log.h"
#include "base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_READ_TIMEOUT_MS 2000
#define REPLY_WRITE_TIMEOUT_MS 2000

/* A connection being read: its own deadline, so that one that sends
   nothing holds no other up. */
typedef struct pending {
    _Atomic int fd; /* -1: a free slot */
    uint64_t deadline;
    int peer_pid;
    dt_ctl_reader *reader;
} pending;

typedef struct listener {
    pid_t owner;
    int listen_fd, wake[2];
    pthread_t thread, worker;
    int worker_joinable;        /* the control thread's own */
    _Atomic int worker_running; /* a handler runs */
    _Atomic int worker_conn, worker_out;
    _Atomic int state;
    dt_ctl_options opt;
    dt_ctl_request req;
    pending conns[DT_CTL_MAX_PENDING];
    char path[DT_CTL_PATH_CAP];
    char program[64], job[128], backend[32];
} listener;

static _Atomic(listener *) active_listener;
static listener *inherited_listener; /* in a forked child: the parent's, kept (not freed, not served) */
static _Atomic uint64_t refused_peers;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void close_slot(_Atomic int *slot)
{
    int fd = atomic_exchange(slot, -1);
    if (fd >= 0) close(fd);
}

/* In a forked child: nothing of the parent's listener is served or removed
   (the parent still owns the socket); the child may listen on its own. */
static void atfork_child(void)
{
    listener *l = atomic_exchange(&active_listener, NULL);
    if (!l) return;
    close(l->listen_fd);
    close(l->wake[0]);
    close(l->wake[1]);
    for (int i = 0; i < DT_CTL_MAX_PENDING; i++) close_slot(&l->conns[i].fd);
    close_slot(&l->worker_conn);
    close_slot(&l->worker_out);
    inherited_listener = l; /* its threads do not exist here: it is only kept */
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

__attribute__((destructor)) static void remove_socket_at_exit(void)
{
    listener *l = atomic_load(&active_listener);
    if (l && l->owner == getpid()) unlink(l->path);
}

static void reply_message(int fd, const dt_ctl_msg *m)
{
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    size_t n = dt__ctl_encode(m, buf, sizeof buf);
    if (n && dt__ctl_send_message(fd, buf, n, -1, dt__ctl_deadline(REPLY_WRITE_TIMEOUT_MS)) != 0)
        dt__log("control: the client went away before its reply");
}

static void reply_error(int fd, dt_ctl_code code, const char *text)
{
    dt_ctl_msg m;
    dt__ctl_msg_init(&m, DT_CTL_ERR);
    m.code = code;
    snprintf(m.text, sizeof m.text, "%s", text);
    reply_message(fd, &m);
}

static void *worker_main(void *arg)
{
    listener *l = arg;
    dt_ctl_result res;
    memset(&res, 0, sizeof res);
    int out = atomic_load(&l->worker_out);
    l->opt.handler(l->opt.ctx, &l->req, out, &res);
    close_slot(&l->worker_out);
    dt_ctl_msg m;
    dt__ctl_msg_init(&m, res.code == DT_CTL_SUCCESS ? DT_CTL_OK : DT_CTL_ERR);
    m.code = dt__ctl_wire_code(res.code) ? res.code : DT_CTL_CANNOT_ARM;
    m.written = res.written;
    m.partial = res.written && res.partial;
    m.records = res.records;
    memcpy(m.backend, res.backend, sizeof m.backend);
    m.backend[sizeof m.backend - 1] = 0;
    memcpy(m.text, res.text, sizeof m.text);
    m.text[sizeof m.text - 1] = 0;
    /* idle before the reply goes out: a client that sends its next request
       as soon as it reads this one's reply is not told busy (the control
       thread joins this thread before it starts another) */
    int conn = atomic_exchange(&l->worker_conn, -1);
    atomic_store(&l->state, DT_CTL_IDLE);
    atomic_store(&l->worker_running, 0);
    if (conn >= 0) {
        reply_message(conn, &m);
        close(conn);
    }
    return NULL;
}

static void reap_worker(listener *l, int wait)
{
    if (l->worker_joinable && (wait || !atomic_load(&l->worker_running))) {
        pthread_join(l->worker, NULL);
        l->worker_joinable = 0;
    }
}

/* One request read whole (rc SUCCESS: the reader holds it; else why it
   is not served): answered or handed to the worker. The connection is
   the worker's or closed on return. */
static void serve(listener *l, pending *p, dt_ctl_code rc, char *why, size_t wn)
{
    int c = atomic_exchange(&p->fd, -1);
    dt_ctl_reader *rd = p->reader;
    int passed = rd->passed;
    rd->passed = -1;
    dt_ctl_msg req;
    if (rc == DT_CTL_SUCCESS) rc = dt__ctl_parse(rd->buf, rd->have, &req, why, wn);
    if (rc == DT_CTL_TIMEOUT) rc = DT_CTL_BAD_REQUEST; /* an incomplete request */
    if (rc == DT_CTL_SUCCESS && (req.type == DT_CTL_OK || req.type == DT_CTL_ERR)) {
        snprintf(why, wn, "a reply sent as a request");
        rc = DT_CTL_BAD_REQUEST;
    }
    int needs_fd = rc == DT_CTL_SUCCESS && (req.type == DT_CTL_CAPTURE || req.type == DT_CTL_DUMP);
    if (needs_fd) {
        int mode = passed >= 0 ? fcntl(passed, F_GETFL) : -1;
        if (mode < 0 || ((mode & O_ACCMODE) != O_WRONLY && (mode & O_ACCMODE) != O_RDWR)) {
            snprintf(why, wn, "a %s request needs the output file's descriptor, open for writing",
                     req.type == DT_CTL_CAPTURE ? "capture" : "dump");
            rc = DT_CTL_BAD_REQUEST;
        }
    }
    if (rc != DT_CTL_SUCCESS) {
        if (rc != DT_CTL_IO) reply_error(c, rc, why);
        dt__log("control: request not served (%s): %s", dt__ctl_code_name(rc), why);
    } else if (req.type == DT_CTL_INFO) {
        dt_ctl_msg m;
        dt__ctl_msg_init(&m, DT_CTL_INFO);
        m.pid = l->owner;
        m.rank = l->opt.rank;
        m.local_rank = l->opt.local_rank;
        m.world_size = l->opt.world_size;
        memcpy(m.program, l->program, sizeof m.program);
        memcpy(m.job, l->job, sizeof m.job);
        if (l->opt.describe_backend) l->opt.describe_backend(l->opt.ctx, m.backend, sizeof m.backend);
        else memcpy(m.backend, l->backend, sizeof m.backend);
        m.state = (dt_ctl_state)atomic_load(&l->state);
        reply_message(c, &m);
    } else if (!l->opt.handler) {
        reply_error(c, DT_CTL_CANNOT_ARM, "this process listens but cannot capture");
    } else if (atomic_load(&l->worker_running)) {
        reply_error(c, DT_CTL_BUSY, "a capture or dump is in progress");
    } else {
        reap_worker(l, 1);
        l->req = (dt_ctl_request){req.type, req.duration_ns, req.steps, req.step_multiple, req.timeout_ns, {0},
                                  p->peer_pid};
        memcpy(l->req.format, req.format, sizeof l->req.format);
        atomic_store(&l->state, DT_CTL_ARMED);
        atomic_store(&l->worker_running, 1);
        atomic_store(&l->worker_out, passed);
        atomic_store(&l->worker_conn, c);
        int err = dt__thread_create(&l->worker, worker_main, l);
        if (err == 0) {
            l->worker_joinable = 1;
            return; /* the worker answers and closes both */
        }
        atomic_store(&l->worker_out, -1);
        atomic_store(&l->worker_conn, -1);
        atomic_store(&l->state, DT_CTL_IDLE);
        atomic_store(&l->worker_running, 0);
        reply_error(c, DT_CTL_CANNOT_ARM, "cannot start the capture's thread");
    }
    if (passed >= 0) close(passed);
    close(c);
}

/* A new connection: its peer checked, then read as it comes. Past
   DT_CTL_MAX_PENDING, the connection read longest is dropped for it. */
static void admit(listener *l, int c)
{
    unsigned uid;
    int peer;
    if (!dt__ctl_peer_trusted(c, &uid, &peer)) {
        atomic_fetch_add(&refused_peers, 1);
        dt__log("control: refused a connection from uid %u (pid %d)", uid, peer);
        close(c);
        return;
    }
    pending *slot = NULL, *oldest = NULL;
    for (int i = 0; i < DT_CTL_MAX_PENDING && !slot; i++) {
        pending *p = &l->conns[i];
        if (atomic_load(&p->fd) < 0) slot = p;
        else if (!oldest || p->deadline < oldest->deadline) oldest = p;
    }
    if (!slot) {
        dt__log("control: %d connections sent no whole request; the oldest is dropped", DT_CTL_MAX_PENDING);
        close_slot(&oldest->fd);
        if (oldest->reader->passed >= 0) close(oldest->reader->passed);
        slot = oldest;
    }
    if (!slot->reader && !(slot->reader = dt__malloc(sizeof *slot->reader))) {
        dt__log("control: out of memory for a connection");
        close(c);
        return;
    }
    dt__ctl_reader_init(slot->reader);
    slot->deadline = dt__ctl_deadline(l->opt.read_timeout_ms);
    slot->peer_pid = peer;
    atomic_store(&slot->fd, c);
}

static void *control_main(void *arg)
{
    listener *l = arg;
    struct pollfd p[2 + DT_CTL_MAX_PENDING];
    pending *of[2 + DT_CTL_MAX_PENDING];
    char why[256];
    for (;;) {
        reap_worker(l, 0);
        int n = 2, timeout = -1;
        uint64_t now = dt__monotonic_ns();
        p[0] = (struct pollfd){l->listen_fd, POLLIN, 0};
        p[1] = (struct pollfd){l->wake[0], POLLIN, 0};
        for (int i = 0; i < DT_CTL_MAX_PENDING; i++) {
            pending *c = &l->conns[i];
            int fd = atomic_load(&c->fd);
            if (fd < 0) continue;
            if (c->deadline <= now) { /* sent no whole request in time */
                snprintf(why, sizeof why, "no complete message in time (%zu bytes came)", c->reader->have);
                serve(l, c, DT_CTL_TIMEOUT, why, sizeof why);
                continue;
            }
            uint64_t ms = (c->deadline - now + 999999u) / 1000000u;
            if (timeout < 0 || ms < (uint64_t)timeout) timeout = ms > 60000 ? 60000 : (int)ms;
            of[n] = c;
            p[n++] = (struct pollfd){fd, POLLIN, 0};
        }
        int r = poll(p, (nfds_t)n, timeout);
        if (r < 0) {
            if (errno == EINTR) continue;
            dt__log("control: poll failed: %s", strerror(errno));
            break;
        }
        if (p[1].revents) break;
        for (int i = 2; i < n; i++) {
            if (!p[i].revents) continue;
            dt_ctl_code rc = dt__ctl_read_some(p[i].fd, of[i]->reader, why, sizeof why);
            if (rc != DT_CTL_PENDING) serve(l, of[i], rc, why, sizeof why);
        }
        if (p[0].revents) {
            /* every connection that waits, each read as it comes */
            for (int k = 0; k < DT_CTL_MAX_PENDING; k++) {
                int c = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0) break;
                admit(l, c);
            }
        }
    }
    for (int i = 0; i < DT_CTL_MAX_PENDING; i++) {
        close_slot(&l->conns[i].fd);
        if (l->conns[i].reader && l->conns[i].reader->passed >= 0) close(l->conns[i].reader->passed);
    }
    reap_worker(l, 1);
    return NULL;
}

dt_status dt__ctl_listen(const dt_ctl_options *options)
{
    if (atomic_load(&active_listener))
        return dt__error(DT_ERR_STATE, "this process already listens on %s", dt__ctl_socket_path());
    pthread_once(&atfork_once, register_atfork);
    char dir[DT_CTL_DIR_CAP];
    dt_status rc = dt__ctl_dir(dir, sizeof dir);
    if (rc == DT_OK) rc = dt__ctl_dir_prepare(dir);
    if (rc != DT_OK) return rc;
    listener *l = dt__calloc(1, sizeof *l);
    if (!l) return dt__error(DT_ERR_NO_MEMORY, "out of memory for the control listener");
    l->owner = getpid();
    l->opt = *options;
    if (l->opt.read_timeout_ms <= 0) l->opt.read_timeout_ms = DEFAULT_READ_TIMEOUT_MS;
    l->listen_fd = l->wake[0] = l->wake[1] = -1;
    for (int i = 0; i < DT_CTL_MAX_PENDING; i++) atomic_store(&l->conns[i].fd, -1);
    atomic_store(&l->worker_conn, -1);
    atomic_store(&l->worker_out, -1);
    snprintf(l->program, sizeof l->program, "%s", program_invocation_short_name);
    snprintf(l->backend, sizeof l->backend, "%s", options->backend ? options->backend : "");
    dt__ctl_job_id(l->job, sizeof l->job);
    snprintf(l->path, sizeof l->path, "%s/%ld.sock", dir, (long)l->owner);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s.tmp", l->path);
    dt__ctl_remove_stale(addr.sun_path);
    dt__ctl_remove_stale(l->path); /* our own pid: nothing of ours listens there yet */
    const char *step = "socket";
    l->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l->listen_fd >= 0 && (step = "bind", bind(l->listen_fd, (struct sockaddr *)&addr, sizeof addr) == 0)) {
        if ((step = "listen", listen(l->listen_fd, 16) != 0) ||
            (step = "rename", rename(addr.sun_path, l->path) != 0)) {
            unlink(addr.sun_path);
        } else if ((step = "pipe", pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) == 0)) {
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old); /* the control thread takes no signals */
            atomic_store(&active_listener, l);
            int err = dt__thread_create(&l->thread, control_main, l);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (err == 0) {
                dt__log("control: listening on %s", l->path);
                return DT_OK;
            }
            atomic_store(&active_listener, NULL);
            errno = err;
            step = "thread";
        }
        unlink(l->path);
    }
    int saved = errno;
    if (l->listen_fd >= 0) close(l->listen_fd);
    if (l->wake[0] >= 0) close(l->wake[0]);
    if (l->wake[1] >= 0) close(l->wake[1]);
    rc = dt__error(DT_ERR_IO, "cannot listen on %s (%s): %s", l->path, step, strerror(saved));
    dt__free(l);
    return rc;
}

void dt__ctl_stop(void)
{
    listener *l = atomic_load(&active_listener);
    if (!l) return;
    ssize_t w;
    do w = write(l->wake[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(l->thread, NULL);
    atomic_store(&active_listener, NULL);
    unlink(l->path);
    close(l->listen_fd);
    close(l->wake[0]);
    close(l->wake[1]);
    for (int i = 0; i < DT_CTL_MAX_PENDING; i++) dt__free(l->conns[i].reader);
    dt__free(l);
}

const char *dt__ctl_socket_path(void)
{
    listener *l = atomic_load(&active_listener);
    return l ? l->path : "";
}

void dt__ctl_set_state(dt_ctl_state state)
{
    listener *l = atomic_load(&active_listener);
    if (l) atomic_store(&l->state, state);
}

uint64_t dt__ctl_refused(void) { return atomic_load(&refused_peers); }

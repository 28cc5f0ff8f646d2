/* The control channel's client: connecting to a listener (its uid
   checked), one request and its reply, and the listeners of this uid
   (control_client.h). */
#include "protocol/control_client.h"

#include "base/alloc.h"
#include "base/log.h"
#include "base/os.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Whether a pid is alive, as /proc tells (no signal is sent); alive when
   /proc is not there to ask. */
static int pid_alive(long pid)
{
    char p[32];
    snprintf(p, sizeof p, "/proc/%ld", pid);
    return access(p, F_OK) == 0 || access("/proc/self", F_OK) != 0;
}

dt_ctl_code dt__ctl_connect_path(const char *path, int timeout_ms, int *out)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) return DT_CTL_NO_SUCH_LISTENER;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return DT_CTL_IO;
    uint64_t deadline = dt__ctl_deadline(timeout_ms);
    dt_ctl_code rc = DT_CTL_SUCCESS;
    for (;;) {
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) break;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) { /* the listener's backlog is full */
            if (dt__monotonic_ns() >= deadline) {
                rc = DT_CTL_TIMEOUT;
                break;
            }
            usleep(1000);
            continue;
        }
        rc = errno == ECONNREFUSED || errno == ENOENT ? DT_CTL_NO_SUCH_LISTENER : DT_CTL_IO;
        break;
    }
    unsigned uid;
    int peer;
    if (rc == DT_CTL_SUCCESS && !dt__ctl_peer_trusted(fd, &uid, &peer)) rc = DT_CTL_UNTRUSTED;
    if (rc != DT_CTL_SUCCESS) {
        close(fd);
        return rc;
    }
    *out = fd;
    return DT_CTL_SUCCESS;
}

dt_ctl_code dt__ctl_exchange(int fd, const dt_ctl_msg *request, int out_fd, int timeout_ms, dt_ctl_msg *reply)
{
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    dt__ctl_msg_init(reply, DT_CTL_ERR);
    size_t n = dt__ctl_encode(request, buf, sizeof buf);
    if (!n) {
        snprintf(reply->text, sizeof reply->text, "the request does not encode");
        return reply->code = DT_CTL_BAD_REQUEST;
    }
    uint64_t deadline = dt__ctl_deadline(timeout_ms);
    if (dt__ctl_send_message(fd, buf, n, out_fd, deadline) != 0) {
        snprintf(reply->text, sizeof reply->text, "the listener went away before the request was sent");
        return reply->code = DT_CTL_IO;
    }
    size_t len = 0;
    char why[256] = "";
    dt_ctl_code rc = dt__ctl_read_message(fd, buf, &len, NULL, deadline, why, sizeof why);
    dt_ctl_msg got;
    if (rc == DT_CTL_SUCCESS && (rc = dt__ctl_parse(buf, len, &got, why, sizeof why)) == DT_CTL_SUCCESS) {
        *reply = got;
        if (got.type == DT_CTL_ERR) return got.code;
        if (got.type == DT_CTL_OK || got.type == DT_CTL_INFO) return reply->code = DT_CTL_SUCCESS;
        snprintf(why, sizeof why, "a request sent as a reply");
    }
    dt__ctl_msg_init(reply, DT_CTL_ERR);
    snprintf(reply->text, sizeof reply->text, "%s", why);
    /* a reply the client cannot read is the connection's failure */
    return reply->code = rc == DT_CTL_TIMEOUT ? DT_CTL_TIMEOUT : DT_CTL_IO;
}

/* Connects to one <pid>.sock of the directory; a stale one is removed. */
static dt_ctl_code connect_pid(const char *dir, long pid, int timeout_ms, int *fd)
{
    char path[DT_CTL_PATH_CAP];
    snprintf(path, sizeof path, "%s/%ld.sock", dir, pid);
    if (!pid_alive(pid)) {
        dt__ctl_remove_stale(path);
        return DT_CTL_NO_SUCH_LISTENER;
    }
    dt_ctl_code rc = dt__ctl_connect_path(path, timeout_ms, fd);
    if (rc == DT_CTL_NO_SUCH_LISTENER) dt__ctl_remove_stale(path);
    return rc;
}

dt_ctl_code dt__ctl_send(pid_t pid, const dt_ctl_msg *request, int out_fd, int timeout_ms, dt_ctl_msg *reply)
{
    char dir[DT_CTL_DIR_CAP];
    dt__ctl_msg_init(reply, DT_CTL_ERR);
    int fd = -1;
    dt_ctl_code rc = DT_CTL_NO_SUCH_LISTENER;
    if (pid > 0 && dt__ctl_dir(dir, sizeof dir) == DT_OK && dt__ctl_dir_check(dir) == DT_OK)
        rc = connect_pid(dir, (long)pid, timeout_ms, &fd);
    if (rc != DT_CTL_SUCCESS) {
        snprintf(reply->text, sizeof reply->text,
                 rc == DT_CTL_NO_SUCH_LISTENER ? "no process %ld listens for devtrace requests"
                 : rc == DT_CTL_UNTRUSTED      ? "the listener of process %ld runs as another user: not trusted"
                                               : "cannot connect to the listener of process %ld",
                 (long)pid);
        return reply->code = rc;
    }
    rc = dt__ctl_exchange(fd, request, out_fd, timeout_ms, reply);
    close(fd);
    return rc;
}

static int sock_name_pid(const char *name, long *pid)
{
    size_t n = strlen(name);
    if (n < 6 || n > 15 || strcmp(name + n - 5, ".sock") != 0) return 0;
    long v = 0;
    for (size_t i = 0; i < n - 5; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (name[i] - '0');
    }
    *pid = v;
    return v > 0;
}

dt_status dt__ctl_list(int timeout_ms, dt_ctl_msg **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    char dir[DT_CTL_DIR_CAP];
    dt_status st = dt__ctl_dir(dir, sizeof dir);
    if (st != DT_OK) return st;
    struct stat sb;
    if (lstat(dir, &sb) != 0 && errno == ENOENT) return DT_OK; /* nobody listens yet */
    if ((st = dt__ctl_dir_check(dir)) != DT_OK) return st;
    DIR *d = opendir(dir);
    if (!d) return dt__error(DT_ERR_IO, "cannot read the control directory %s: %s", dir, strerror(errno));
    size_t cap = 0;
    dt_ctl_msg *list = NULL;
    dt_ctl_msg info;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        int fd;
        if (!sock_name_pid(e->d_name, &pid) || connect_pid(dir, pid, timeout_ms, &fd) != DT_CTL_SUCCESS) continue;
        dt_ctl_msg reply;
        dt_ctl_code rc = dt__ctl_exchange(fd, &info, -1, timeout_ms, &reply);
        close(fd);
        if (rc != DT_CTL_SUCCESS || reply.type != DT_CTL_INFO) continue;
        if (*count == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            dt_ctl_msg *grown = dt__realloc(list, ncap * sizeof *list);
            if (!grown) {
                closedir(d);
                dt__free(list);
                return dt__error(DT_ERR_NO_MEMORY, "out of memory listing the listeners");
            }
            list = grown;
            cap = ncap;
        }
        list[(*count)++] = reply;
    }
    closedir(d);
    *out = list;
    return DT_OK;
}

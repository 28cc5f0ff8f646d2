/* The flight recorder's dump: the core's snapshot of the ring's window,
   written as a normal trace to a descriptor while the session records on. */
#include "core/flight.h"
#include "core/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

/* The trace written to a private temporary directory, then copied to fd
   from where it stands. */
static dt_status write_to_fd(dt_session *x, int fd, dt_format format)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/devtrace-dump-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return dt_error(DT_ERR_IO, "dt_session_dump: cannot make a temporary directory: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/trace", dir);
    dt_status st = dt_session_write(x, path, format);
    if (st == DT_OK) {
        int in = open(path, O_RDONLY | O_CLOEXEC);
        if (in < 0) st = dt_error(DT_ERR_IO, "dt_session_dump: cannot read back %s: %s", path, strerror(errno));
        char buf[1 << 16];
        ssize_t n = 0;
        while (in >= 0 && st == DT_OK && (n = read(in, buf, sizeof buf)) != 0) {
            if (n < 0) {
                if (errno == EINTR) continue;
                st = dt_error(DT_ERR_IO, "dt_session_dump: reading %s: %s", path, strerror(errno));
                break;
            }
            for (ssize_t off = 0; off < n;) {
                ssize_t w = write(fd, buf + off, (size_t)(n - off));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) {
                    st = dt_error(DT_ERR_IO, "dt_session_dump: writing to descriptor %d: %s", fd, strerror(errno));
                    break;
                }
                off += w;
            }
        }
        if (in >= 0) close(in);
    }
    unlink(path);
    rmdir(dir);
    return st;
}

dt_status dt_session_dump(dt_session *s, int fd, dt_format format)
{
    if (fd < 0) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: fd %d is no descriptor", fd);
    if (!dt_format_name(format)) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_dump: unknown format %d", (int)format);
    dt_session *x = NULL;
    dt_status st = dt_core_flight_snapshot(s, &x);
    if (st != DT_OK) return st;
    st = write_to_fd(x, fd, format);
    dt_log("flight recorder dump: %zu events, %llu lost", x->store.count,
           (unsigned long long)dt_session_loss_total(x));
    dt_session_destroy(x);
    return st;
}

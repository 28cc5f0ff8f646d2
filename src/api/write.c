/* The public API's writing side: a stopped session's trace written by the
   writer its format chooses (export/writers.h), the format checked against
   the format table (format/formats.h, which also defines dt_format_*). */
#include "api/write.h"
#include "core/recording.h"
#include "core/session.h"
#include "export/device_props.h"
#include "export/writers.h"
#include "format/formats.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

dt_status dt__api_write_trace(dt_session *s, const char *path, int fd, dt_format format, const char *fn)
{
    if (!s) return dt__error(DT_ERR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    dt_recording rec;
    if (dt__recording_of(s, &rec) != 0)
        return dt__error(DT_ERR_STATE, "%s: stop the session before writing its trace", fn);
    const dt_fmt *f = dt__fmt_of((int)format);
    dt_wr_write_fn *write = dt__wr_of_format((int)format);
    if (!f || !write) return dt__error(DT_ERR_INVALID_ARGUMENT, "%s: unknown format %d", fn, (int)format);
    if (!dt__fmt_available(f)) return dt__error(DT_ERR_INVALID_ARGUMENT, "%s: %s", fn, DT_NO_GZIP_MESSAGE);
    return write(&rec, path, fd, f->gzip);
}

dt_status dt_session_write(dt_session *s, const char *path, dt_format format)
{
    if (s && !path) path = dt__core_output_path(s);
    if (s && (!path || !*path)) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_write: path is NULL or empty");
    return dt__api_write_trace(s, path, -1, format, "dt_session_write");
}

dt_status dt_session_write_fd(dt_session *s, int fd, dt_format format)
{
    if (fd < 0) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_write_fd: descriptor %d is not open", fd);
    /* the trace's name: the file the descriptor is open on, as a path
       would name it ("pipe:[N]" for a pipe) */
    char link[64], name[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, name, sizeof name - 1);
    if (n > 0) name[n] = 0;
    else snprintf(name, sizeof name, "(descriptor %d)", fd);
    return dt__api_write_trace(s, name, fd, format, "dt_session_write_fd");
}

size_t dt_session_device_properties(const dt_session *s, char *buf, size_t size)
{
    if (buf && size) buf[0] = 0;
    /* the devices are known from start: listed before stop too */
    return s ? dt__wr_device_props_list(dt__core_devices(s), buf, size) : 0;
}

/* The public API's writing side: a stopped session's trace written by the
   writer its format chooses, and the formats listed, named and matched to
   file names, all through the writer table (export/writers.h). */
#include "api/write.h"
#include "core/recording.h"
#include "core/session.h"
#include "export/device_props.h"
#include "export/writers.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/gzip.h"
#include "base/log.h"

dt_status dt_api_write_trace(dt_session *s, const char *path, int fd, dt_format format, const char *fn)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "%s: session is NULL", fn);
    dt_recording rec;
    if (dt_recording_of(s, &rec) != 0)
        return dt_error(DT_ERR_STATE, "%s: stop the session before writing its trace", fn);
    const dt_writer *w = dt_wr_of_format((int)format);
    if (!w) return dt_error(DT_ERR_INVALID_ARGUMENT, "%s: unknown format %d", fn, (int)format);
    if (!dt_wr_available(w)) return dt_error(DT_ERR_INVALID_ARGUMENT, "%s: %s", fn, DT_NO_GZIP_MESSAGE);
    return w->write(&rec, path, fd, w->gzip);
}

dt_status dt_session_write(dt_session *s, const char *path, dt_format format)
{
    if (s && !path) path = dt_core_output_path(s);
    if (s && (!path || !*path)) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_write: path is NULL or empty");
    return dt_api_write_trace(s, path, -1, format, "dt_session_write");
}

dt_status dt_session_write_fd(dt_session *s, int fd, dt_format format)
{
    if (fd < 0) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_write_fd: descriptor %d is not open", fd);
    /* the trace's name: the file the descriptor is open on, as a path
       would name it ("pipe:[N]" for a pipe) */
    char link[64], name[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, name, sizeof name - 1);
    if (n > 0) name[n] = 0;
    else snprintf(name, sizeof name, "(descriptor %d)", fd);
    return dt_api_write_trace(s, name, fd, format, "dt_session_write_fd");
}

size_t dt_session_device_properties(const dt_session *s, char *buf, size_t size)
{
    if (buf && size) buf[0] = 0;
    /* the devices are known from start: listed before stop too */
    return s ? dt_wr_device_props_list(dt_core_devices(s), buf, size) : 0;
}

dt_format dt_format_of_path(const char *path, dt_format fallback)
{
    const dt_writer *w = path ? dt_wr_of_path(path, NULL) : NULL;
    return w ? w->format : fallback;
}

int dt_format_by_name(const char *name)
{
    const dt_writer *w = dt_wr_by_name(name);
    return w ? (int)w->format : -1;
}

const char *dt_format_name(dt_format format)
{
    const dt_writer *w = dt_wr_of_format((int)format);
    return w ? w->name : NULL;
}

const char *dt_format_suffix(dt_format format)
{
    const dt_writer *w = dt_wr_of_format((int)format);
    return w ? w->suffix : NULL;
}

int dt_format_available(dt_format format)
{
    return dt_wr_available(dt_wr_of_format((int)format));
}

size_t dt_format_suffix_length(const char *path)
{
    size_t n = 0;
    if (path) dt_wr_of_path(path, &n);
    return n;
}

size_t dt_format_path(const char *path, dt_format format, char *buf, size_t size)
{
    const dt_writer *w = dt_wr_of_format((int)format);
    const char *add = "";
    if (w && dt_wr_of_path(path, NULL) != w) {
        /* ".gz" where that makes it the format (after a name of the same
           trace uncompressed, or of no format), else its suffix */
        char gz[4096];
        int n = snprintf(gz, sizeof gz, "%s.gz", path);
        add = w->gzip && n > 0 && (size_t)n < sizeof gz && dt_wr_of_path(gz, NULL) == w ? ".gz" : w->suffix;
    }
    int n = snprintf(buf, size, "%s%s", path, add);
    return n > 0 ? (size_t)n : 0;
}

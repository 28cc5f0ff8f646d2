/* The format table (formats.h) and the public API's dt_format_* over it. */
#include "format/formats.h"

#include <stdio.h>
#include <string.h>

#include "base/gzip.h"

static const dt_fmt formats[] = {
    {"json", "DT_FORMAT_JSON", DT_FORMAT_JSON, DT_FORMAT_JSON, ".json", NULL, 0},
    /* another .gz is JSON too */
    {"json.gz", "DT_FORMAT_JSON_GZ", DT_FORMAT_JSON_GZ, DT_FORMAT_JSON, ".json.gz", ".gz", 1},
    {"perfetto", "DT_FORMAT_PERFETTO", DT_FORMAT_PERFETTO, DT_FORMAT_PERFETTO, ".pftrace", NULL, 0},
    {"perfetto.gz", "DT_FORMAT_PERFETTO_GZ", DT_FORMAT_PERFETTO_GZ, DT_FORMAT_PERFETTO, ".pftrace.gz", NULL, 1},
};
#define FORMATS (sizeof formats / sizeof *formats)

const dt_fmt *dt__fmt_next(size_t *cursor)
{
    return *cursor < FORMATS ? &formats[(*cursor)++] : NULL;
}

const dt_fmt *dt__fmt_of(int format)
{
    for (size_t i = 0; i < FORMATS; i++)
        if ((int)formats[i].format == format)
            return &formats[i];
    return NULL;
}

const dt_fmt *dt__fmt_by_name(const char *name)
{
    for (size_t i = 0; name && i < FORMATS; i++)
        if (strcmp(name, formats[i].name) == 0)
            return &formats[i];
    return NULL;
}

static size_t ends_with(const char *path, size_t n, const char *suffix)
{
    size_t k = suffix ? strlen(suffix) : 0;
    return k > 0 && n > k && memcmp(path + n - k, suffix, k) == 0 ? k : 0;
}

const dt_fmt *dt__fmt_of_path(const char *path, size_t *suffix_len)
{
    const dt_fmt *best = NULL;
    size_t best_len = 0, n = path ? strlen(path) : 0;
    for (size_t i = 0; i < FORMATS; i++) {
        size_t k = ends_with(path, n, formats[i].suffix), a = ends_with(path, n, formats[i].also);
        if (a > k)
            k = a;
        if (k > best_len) {
            best = &formats[i];
            best_len = k;
        }
    }
    if (suffix_len)
        *suffix_len = best_len;
    return best;
}

int dt__fmt_available(const dt_fmt *f)
{
    return f && (!f->gzip || dt__gzip_available());
}

static const char *field_of(const dt_fmt *f, int field)
{
    switch (field) {
    case DT_FMT_CONSTANT: return f->constant;
    case DT_FMT_SUFFIX: return f->suffix;
    case DT_FMT_CHOOSER: return f->also && strlen(f->also) < strlen(f->suffix) ? f->also : f->suffix;
    default: return f->name;
    }
}

const char *dt__fmt_list(char *buf, size_t size, int field, int skip, const char *sep, const char *last)
{
    size_t listed = 0, total = 0, used = 0;
    for (size_t i = 0; i < FORMATS; i++)
        total += (int)formats[i].format != skip;
    if (size)
        buf[0] = 0;
    for (size_t i = 0; i < FORMATS && used < size; i++) {
        if ((int)formats[i].format == skip)
            continue;
        const char *join = listed == 0 ? "" : listed + 1 == total ? last : sep;
        int n = snprintf(buf + used, size - used, "%s%s", join, field_of(&formats[i], field));
        if (n < 0)
            break;
        used += (size_t)n;
        listed++;
    }
    return buf;
}

/* ---- the public API (include/devtrace/devtrace.h) ---- */

dt_format dt_format_of_path(const char *path, dt_format fallback)
{
    const dt_fmt *f = path ? dt__fmt_of_path(path, NULL) : NULL;
    return f ? f->format : fallback;
}

int dt_format_by_name(const char *name)
{
    const dt_fmt *f = dt__fmt_by_name(name);
    return f ? (int)f->format : -1;
}

const char *dt_format_name(dt_format format)
{
    const dt_fmt *f = dt__fmt_of((int)format);
    return f ? f->name : NULL;
}

const char *dt_format_suffix(dt_format format)
{
    const dt_fmt *f = dt__fmt_of((int)format);
    return f ? f->suffix : NULL;
}

int dt_format_available(dt_format format)
{
    return dt__fmt_available(dt__fmt_of((int)format));
}

size_t dt_format_suffix_length(const char *path)
{
    size_t n = 0;
    if (path)
        dt__fmt_of_path(path, &n);
    return n;
}

size_t dt_format_path(const char *path, dt_format format, char *buf, size_t size)
{
    const dt_fmt *f = dt__fmt_of((int)format);
    const char *add = "";
    if (f && dt__fmt_of_path(path, NULL) != f) {
        /* ".gz" where that makes it the format (after a name of the same
           trace uncompressed, or of no format), else its suffix */
        char gz[4096];
        int n = snprintf(gz, sizeof gz, "%s.gz", path);
        add = f->gzip && n > 0 && (size_t)n < sizeof gz && dt__fmt_of_path(gz, NULL) == f ? ".gz" : f->suffix;
    }
    int n = snprintf(buf, size, "%s%s", path, add);
    return n > 0 ? (size_t)n : 0;
}

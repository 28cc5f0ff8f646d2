/*
 * The trace formats, in one table (formats.c): a format's name, its
 * constant in the public header, the file suffixes that choose it, whether
 * it streams through gzip, and the same trace uncompressed. Whatever maps a
 * format's name, number, suffix or compression asks this table: the public
 * API's dt_format_* (defined here), the session's checks, the record
 * protocol's file names, merge's output, the writers (export/writers.h:
 * which function writes a format's encoding), and the command's usage and
 * messages, whose lists of formats dt__fmt_list writes from it. Which
 * formats this build can write is asked here too (dt__fmt_available, over
 * base/gzip.h).
 *
 * Adding a format is a row here (and, for a new encoding, its writer in
 * export/writers.c and its constant in include/devtrace/devtrace.h).
 *
 * Naming: the format layer's internal functions are dt_fmt_<name> (and
 * dt_json_<name>, dt_pf_<name> for the encoders); file-local functions are
 * static with no prefix.
 */
#ifndef DT_FORMAT_FORMATS_H
#define DT_FORMAT_FORMATS_H

#include <stddef.h>

#include "base/common.h"
#include "devtrace/devtrace.h"

typedef struct dt_fmt {
    const char *name;     /* as --format and dt_format_by_name take it */
    const char *constant; /* its dt_format constant ("DT_FORMAT_JSON"), for messages */
    dt_format format;
    dt_format plain;      /* the same trace uncompressed (itself when not gzip) */
    const char *suffix;   /* the suffix it writes, the first that chooses it */
    const char *also;     /* another suffix that chooses it, or NULL */
    int gzip;             /* streams through gzip */
} dt_fmt;

/* The formats in the order they are listed (by number): *cursor starts at
   0; NULL when done. */
DT_HIDDEN const dt_fmt *dt__fmt_next(size_t *cursor);
/* The format of a number, or NULL for a number that is none. */
DT_HIDDEN const dt_fmt *dt__fmt_of(int format);
/* The format a name (json, json.gz, perfetto, perfetto.gz) gives, or NULL. */
DT_HIDDEN const dt_fmt *dt__fmt_by_name(const char *name);
/* The format whose suffix path ends with (the longest that matches:
   .pftrace.gz before .gz), and that suffix's length; NULL (0) when none
   does. A suffix is not the whole name. */
DT_HIDDEN const dt_fmt *dt__fmt_of_path(const char *path, size_t *suffix_len);
/* Whether this build can write f (a gzip format needs zlib), and the
   message for one it cannot. */
DT_HIDDEN int dt__fmt_available(const dt_fmt *f);
#define DT_NO_GZIP_MESSAGE                                                                               \
    "this devtrace was built without zlib and writes no gzip: write .json, or rebuild devtrace with zlib " \
    "(zlib1g-dev or zlib-devel)"

/* What dt__fmt_list lists of each format. */
enum dt_fmt_field {
    DT_FMT_NAME,       /* json, json.gz, ... */
    DT_FMT_CONSTANT,   /* DT_FORMAT_JSON, ... */
    DT_FMT_SUFFIX,     /* the suffix it writes: .json, .json.gz, ... */
    DT_FMT_CHOOSER     /* the shortest suffix that chooses it: .json, .gz, ... */
};
/* The formats as a list for usage and messages, in buf (size bytes, cut
   to fit): each one's field (enum dt_fmt_field), joined by sep, the last
   two by last ("json, json.gz, perfetto or perfetto.gz"); the format skip
   left out (-1: none). Returns buf. */
DT_HIDDEN const char *dt__fmt_list(char *buf, size_t size, int field, int skip, const char *sep, const char *last);

#endif /* DT_FORMAT_FORMATS_H */

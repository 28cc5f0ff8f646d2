/*
 * The trace writers, registered in one table (src/export/writers.c): a
 * format's name, the file suffixes that choose it, whether it streams
 * through gzip, and its write function. Whatever maps a format's name,
 * number, suffix or compression asks this table: the public API
 * (src/api/write.c: dt_session_write, dt_format_*), which the command line,
 * the injection library and the Python package call, and merge's output.
 * Whether this build writes gzip is asked here too (dt_wr_available, over
 * base/gzip.h).
 *
 * Naming: the export layer's internal functions are dt_wr_<name>, declared
 * in its headers (this one, layout.h, leveler.h, ...); file-local functions
 * are static with no prefix.
 *
 * This header is for merge as well (src/reader): it names the recording
 * view only as an incomplete type.
 */
#ifndef DT_EXPORT_WRITERS_H
#define DT_EXPORT_WRITERS_H

#include <stddef.h>

#include "base/common.h"
#include "devtrace/devtrace.h"

typedef struct dt_recording dt_recording;

/* Writes rec's trace to path atomically (a temporary file renamed when
   complete), or, when fd >= 0, to that open descriptor from where it
   stands, leaving it open (path then only names it in messages);
   gzip-compressed while it streams when gzip is set. */
typedef dt_status dt_wr_write_fn(const dt_recording *rec, const char *path, int fd, int gzip);

typedef struct dt_writer {
    const char *name;          /* as --format and dt_format_by_name take it */
    dt_format format;
    dt_format plain;           /* the same trace uncompressed (itself when not gzip) */
    const char *suffix;        /* the suffix it writes, the first that chooses it */
    const char *also;          /* another suffix that chooses it, or NULL */
    int gzip;                  /* streams through gzip */
    dt_wr_write_fn *write;
} dt_writer;

/* The writers in the order they are listed: *cursor starts at 0; NULL
   when done. */
DT_HIDDEN const dt_writer *dt_wr_next(size_t *cursor);
/* The writer of a format number, or NULL for a number that is none. */
DT_HIDDEN const dt_writer *dt_wr_of_format(int format);
/* The writer a name (json, json.gz, perfetto, perfetto.gz) gives, or NULL. */
DT_HIDDEN const dt_writer *dt_wr_by_name(const char *name);
/* The writer whose suffix path ends with (the longest that matches:
   .pftrace.gz before .gz), and that suffix's length; NULL (0) when none
   does. A suffix is not the whole name. */
DT_HIDDEN const dt_writer *dt_wr_of_path(const char *path, size_t *suffix_len);
/* Whether this build can write w (a gzip format needs zlib). */
DT_HIDDEN int dt_wr_available(const dt_writer *w);

/* The writers themselves (chrome.c, perfetto.c). */
DT_HIDDEN dt_status dt_wr_chrome(const dt_recording *rec, const char *path, int fd, int gzip);
DT_HIDDEN dt_status dt_wr_perfetto(const dt_recording *rec, const char *path, int fd, int gzip);

#endif /* DT_EXPORT_WRITERS_H */

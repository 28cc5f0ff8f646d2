/*
 * The trace writers: which function writes each format (src/export/
 * writers.c), by the encoding the format table gives it (format/formats.h:
 * a format and the same trace uncompressed). Everything else about a
 * format (its name, number, suffixes, compression, whether this build can
 * write it) is the format table's; the public API (src/api/write.c:
 * dt_session_write) asks both.
 *
 * Naming: the export layer's internal functions are dt_wr_<name>, declared
 * in its headers (this one, layout.h, leveler.h, ...); file-local functions
 * are static with no prefix.
 */
#ifndef DT_EXPORT_WRITERS_H
#define DT_EXPORT_WRITERS_H

#include "base/common.h"
#include "devtrace/devtrace.h"

typedef struct dt_recording dt_recording;

/* Writes rec's trace to path atomically (a temporary file renamed when
   complete), or, when fd >= 0, to that open descriptor from where it
   stands, leaving it open (path then only names it in messages);
   gzip-compressed while it streams when gzip is set. */
typedef dt_status dt_wr_write_fn(const dt_recording *rec, const char *path, int fd, int gzip);

/* The function that writes a format (number), gzip or not as the format
   table says; NULL for a number that is no format. */
DT_HIDDEN dt_wr_write_fn *dt__wr_of_format(int format);

/* The writers themselves (chrome.c, perfetto.c). */
DT_HIDDEN dt_status dt__wr_chrome(const dt_recording *rec, const char *path, int fd, int gzip);
DT_HIDDEN dt_status dt__wr_perfetto(const dt_recording *rec, const char *path, int fd, int gzip);

#endif /* DT_EXPORT_WRITERS_H */

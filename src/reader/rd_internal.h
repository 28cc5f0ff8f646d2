/*
 * What the reader's parts share (reader.c, pf_read.c): not part of the
 * reader's interface.
 */
#ifndef DT_RD_INTERNAL_H
#define DT_RD_INTERNAL_H

#include "dt_reader.h"

/* Up to cap bytes of the (decompressed) input: the count, 0 at the end,
   -1 with a message in err. */
long dt_rd_src_read(dt_rd_source *s, unsigned char *dst, size_t cap, char *err, size_t errlen);
/* Whether the input was gzip. */
bool dt_rd_src_gzip(const dt_rd_source *s);
/* enum dt_rd_cat of a category; s is NUL-terminated. */
int dt_rd_classify_cat(const char *s, size_t len);
/* Reads a Perfetto protobuf trace devtrace wrote (pf_read.c), feeding the
   visitor the events the JSON of the same session gives: dt_rd_read_opts
   with the same result conventions. */
int dt_rd_pf_read(dt_rd_source *src, const dt_rd_options *opts, dt_rd_summary *summary, char *err,
                  size_t errlen);

#endif

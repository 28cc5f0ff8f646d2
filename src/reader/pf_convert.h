/* Chrome trace JSON as Perfetto packets (src/reader/pf_convert.c), for
   `devtrace merge --format perfetto`. */
#ifndef DT_PF_CONVERT_H
#define DT_PF_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "format/pf_trace.h"

typedef struct dt_rd_pf_stats {
    uint64_t slices;         /* complete events written as slices */
    uint64_t left_out;       /* events Perfetto slices do not carry */
    uint64_t flows_left_out; /* flow ends at no slice's start */
} dt_rd_pf_stats;

/* Appends the document at json_path (plain JSON) to t: its processes and
   rows as descriptors, its complete events as slices, row by row. Counts
   into *stats. 0, or an errno with a message in err. */
int dt__rd_pf_convert(pf_trace *t, const char *json_path, dt_rd_pf_stats *stats, char *err, size_t errlen);

#endif

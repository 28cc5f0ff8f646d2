#ifndef DT_COLUMNS_META_H
#define DT_COLUMNS_META_H

/* The metadata of a reading as JSON (dt_col_read's *meta): the trace's
   summary, what the reading counted, and the error that ended it. */
#include "reader/dt_reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the reading counted, beside the reader's summary. */
typedef struct col_counts {
    uint64_t string_flow_ids; /* flow ids written as strings: no flow_id */
    /* complete events with a negative duration (the reports leave them out),
       and the traceEvents index of the first */
    uint64_t negative_durations, first_negative;
    bool steps_on; /* steps were asked for (DT_COL_STEPS) */
    size_t nsteps;
    uint64_t device_unlaunched;
} col_counts;

/* The JSON text (malloc'd), or NULL when out of memory. error: NULL, or
   why the reading stopped. */
char *dt__col_meta(const dt_rd_summary *m, const col_counts *counts, const char *error);

#endif

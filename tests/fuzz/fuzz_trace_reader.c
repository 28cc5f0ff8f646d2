/*
 * Fuzzes the trace reader and the check and stats engines on arbitrary
 * bytes (plain or gzip JSON): no input may crash, hang or leak.
 */
#include "dt_reader.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_events(void *user, const dt_rd_event *e)
{
    uint64_t *n = user;
    /* Touch every string so that a dangling pointer would be caught. */
    for (const char *s = e->name; *s; s++)
        *n += (unsigned char)*s;
    *n += (uint64_t)e->ph[0] + (uint64_t)e->cat[0] + (uint64_t)e->bp[0] + (uint64_t)e->id[0] +
          (uint64_t)e->arg_name[0] + (uint64_t)e->arg_labels[0];
    if (e->pid.is_str)
        *n += (unsigned char)e->pid.str[0];
    if (e->tid.is_str)
        *n += (unsigned char)e->tid.str[0];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (!sink)
        return 0;

    dt_rd_source *src = dt_rd_open_memory(data, size);
    if (!src)
        return 0;
    dt_rd_summary sum;
    char err[512];
    uint64_t n = 0;
    dt_rd_read(src, count_events, &n, &sum, err, sizeof err);
    dt_rd_summary_free(&sum);
    dt_rd_close(src);

    src = dt_rd_open_memory(data, size);
    if (src) {
        dt_check_source(src, "fuzz", sink, sink);
        dt_rd_close(src);
    }
    src = dt_rd_open_memory(data, size);
    if (src) {
        dt_stats_source(src, "fuzz", NULL, size % 2 == 0, sink, sink);
        dt_rd_close(src);
    }
    return 0;
}

/*
 * What every vendor's decode benchmark measures, in one place: completed
 * vendor buffers decoded and stored through the backend's own decode path,
 * beside a memcpy of the same bytes in the same round.
 *
 * A vendor's part only builds buffers in its layout and names the function
 * that decodes one buffer (its backend's entry point for tests): the
 * harness never looks inside a record, so a decoder rewritten behind that
 * entry point is measured the same way.
 */
#ifndef BENCH_DECODE_HARNESS_H
#define BENCH_DECODE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "dt_internal.h"

typedef struct decode_input {
    const char *vendor;
    uint8_t **buffers;           /* decoded in order, cycled until `records` */
    const size_t *valid;         /* bytes in use of each */
    const size_t *records_in;    /* records in each */
    size_t buffer_count;
    size_t records;              /* how many to decode per run */
    unsigned capture;            /* dt_config.capture of the session */
    /* Decode one completed buffer into s, as the vendor's completion
       callback does (session lock taken inside). */
    void (*decode)(dt_session *s, uint8_t *buffer, size_t valid);
} decode_input;

/* Rounds of: memcpy, a fresh store (pages faulted in by the decoding
   thread), a fresh store with the chunk preparer (faulted in by another
   thread), a mapped store (already grown); the External-id links are merged
   at the end of each run, as at stop. Prints medians and spreads. */
void decode_bench_run(const decode_input *in, int rounds);

double bench_now_s(void);

#endif

/*
 * The engine decoders' fuzz targets, differential: one buffer decoded by
 * the walk compiled for the vendor's layout set (DT_DECODER_WALK) and by the
 * engine's walk over the prepared plans, each into a session of its own;
 * the two must hold the same records, byte for byte, and the same losses
 * (abort otherwise: a crash the fuzzer reports). A user range's id is the
 * process's next (dt__corr_range_id_next), so ranges are compared by their
 * ids' distance from their session's first.
 */
#ifndef DT_FUZZ_BOTH_WALKS_H
#define DT_FUZZ_BOTH_WALKS_H

#include "backends/engine/engine.h"

#include <stdlib.h>
#include <string.h>

/* buf's size bytes as one buffer, then its first `cut` bytes as another (0:
   none); `between` (or NULL) resets the vendor's state between the walks. */
static void fuzz_both_walks(const dt_decoder *d, const dt_config *c, uint8_t *buf, size_t size, size_t cut,
                            void (*between)(void))
{
    dt_decoder plain = *d;
    dt_layout_set plain_set = *d->set;
    plain_set.walk = NULL;
    plain.set = &plain_set;
    dt_session *s[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        if (dt_session_create(c, &s[k]) != DT_OK) break;
        const dt_decoder *by = k ? &plain : d;
        dt__decoder_run(by, s[k], buf, size, NULL);
        if (cut) dt__decoder_run(by, s[k], buf, cut, NULL);
        if (between) between();
    }
    if (s[0] && s[1]) {
        const dt_sink *a = dt__sink_of_const(s[0]), *b = dt__sink_of_const(s[1]);
        if (a->store.count != b->store.count) abort();
        uint64_t first[2] = {0, 0};
        for (size_t i = 0; i < a->store.count; i++) {
            dt_rec x, y; /* every byte, padding too (the store's records start zeroed) */
            memcpy(&x, dt__store_at(&a->store, i), sizeof x);
            memcpy(&y, dt__store_at(&b->store, i), sizeof y);
            if (x.kind == DT_EVENT_RANGE && y.kind == DT_EVENT_RANGE) {
                if (!first[0]) first[0] = x.external_id, first[1] = y.external_id;
                x.external_id -= first[0];
                y.external_id -= first[1];
            }
            if (memcmp(&x, &y, sizeof x) != 0) abort();
        }
        for (int r = 0; r < DT_LOSS_COUNT; r++)
            if (atomic_load(&a->loss[r]) != atomic_load(&b->loss[r])) abort();
    }
    for (int k = 0; k < 2; k++)
        if (s[k]) dt_session_destroy(s[k]);
}

#endif /* DT_FUZZ_BOTH_WALKS_H */

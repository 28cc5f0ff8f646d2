/*
 * Decoding a CUPTI-shaped vendor's activity buffers through its layouts
 * (engine_decode.c), usable without loading the library.
 */
#ifndef DT_BACKENDS_DECODER_H
#define DT_BACKENDS_DECODER_H

#include "backends/vendor.h"

typedef int (*dt_vendor_next_fn)(uint8_t *buffer, size_t valid, void **record);

/* A record layout prepared for decoding: where each field is and which of
   its bytes count, so that reading a field is one load and a mask. */
typedef struct dt_plan {
    const dt_record_layout *layout;
    uint32_t size;                    /* the layout's, here to save a load */
    uint32_t need;                    /* bytes the decoder reads */
    dt_record_decoder decode;         /* the vendor's, or NULL */
    uint8_t cls;
    uint8_t at;                       /* its layout's index in the set */
    /* bytes from the record's start to the buffer's end from which it takes
       the common path (a class of the engine's, read wide); SIZE_MAX: never */
    size_t wide_from;
    uint16_t off[DT_F_COUNT];
    uint64_t mask[DT_F_COUNT];        /* 0: the record has no such field */
} dt_plan;

#define DT_DECODER_MAX_LAYOUTS 32

/* A layout set and its walk, which DT_DECODER_WALK(records) made
   (engine/engine_walk.h). */
#define DT_LAYOUT_SET(min_version, what, sizes_known_up_to, records) \
    {min_version, what, sizes_known_up_to, records, records##_walk}
#define DT_LAUNCH_BITS 1024

/* A vendor's layouts for one library version, prepared for decoding. */
struct dt_decoder {
    const dt_vendor *v;
    const dt_layout_set *set;
    size_t count;                     /* layouts prepared */
    uint8_t index[64];                /* kind -> plan + 1 (kinds < 64) */
    dt_plan plans[DT_DECODER_MAX_LAYOUTS];
    int sizes_known;
    /* names the vendor's name function gave, by callback id (or NULL) */
    const char *const *vendor_names[2];
    /* device descriptions kept across sessions (or NULL) */
    dt_device_props *device_cache;
    pthread_mutex_t *device_lock;
    /* where the vendor's decoders count records (dt_vendor_records.counted),
       under the session's lock; NULL: not counted */
    uint64_t *counted;
    /* launch callback ids below DT_LAUNCH_BITS, as bits ([0] runtime, [1] driver) */
    uint64_t launch_bits[2][DT_LAUNCH_BITS / 64];
    /* where graph launches decoded are counted ([0] runtime, [1] driver),
       for a library that gets their correlation ids wrong
       (dt_vendor_api_ids.graph_ids_from); NULL: not counted */
    uint64_t *graph_counted;
    /* [driver]: bit cbid % 64 set for each graph launch id, so that other
       launches pass without the list's walk */
    uint64_t graph_maybe[2];
};

/* Choose the layouts for api_version (0: the newest). */
DT_HIDDEN void dt__decoder_init(dt_decoder *d, const dt_vendor *v, uint32_t api_version);
DT_HIDDEN const dt_record_layout *dt__decoder_layout(const dt_decoder *d, uint32_t kind);
/* The vendor iterator's contract over the layouts' sizes: *record NULL
   starts at the buffer, otherwise steps past *record; max_limit_reached at
   the end or when the next record does not fit in valid; invalid_kind on a
   kind without a layout; never reads past valid. Returns vendor codes. */
DT_HIDDEN int dt__decoder_next(const dt_decoder *d, uint8_t *buffer, size_t valid, void **record);
/* Decode one completed buffer into s (taking its lock), walking it with
   `next` (the vendor's iterator), or by the layouts' sizes when NULL. */
DT_HIDDEN void dt__decoder_run(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,
                              dt_vendor_next_fn next);
/* Outside a session: keep only the device descriptions. */
DT_HIDDEN void dt__decoder_scan_devices(const dt_decoder *d, uint8_t *buffer, size_t valid,
                                       dt_vendor_next_fn next);
/* The name of a callback id (runtime: driver 0), or NULL. */
DT_HIDDEN const char *dt__decoder_api_name(const dt_decoder *d, int driver, uint32_t cbid);
/* Whether a callback id launches device work (dt_vendor_api_ids): by its
   bit below DT_LAUNCH_BITS, else through the vendor's list. */
DT_HIDDEN int dt__decoder_is_launch_listed(const dt_decoder *d, int driver, uint32_t cbid);
static inline int dt__decoder_is_launch(const dt_decoder *d, int driver, uint32_t cbid)
{
    if (cbid < DT_LAUNCH_BITS) return (int)((d->launch_bits[driver ? 1 : 0][cbid / 64] >> (cbid % 64)) & 1u);
    return dt__decoder_is_launch_listed(d, driver, cbid);
}
/* A launch decoded: counted where it is a graph launch and they are counted. */
DT_HIDDEN void dt__decoder_count_graph_listed(const dt_decoder *d, int driver, uint32_t cbid);
static inline void dt__decoder_count_graph(const dt_decoder *d, int driver, uint32_t cbid)
{
    if (d->graph_counted && (d->graph_maybe[driver ? 1 : 0] >> (cbid & 63) & 1))
        dt__decoder_count_graph_listed(d, driver, cbid);
}

#endif /* DT_BACKENDS_DECODER_H */

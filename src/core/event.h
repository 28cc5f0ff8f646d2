/*
 * Stored events (64-byte records) and the store that holds them
 * (src/core/store.c). Internal, not installed.
 */
#ifndef DT_CORE_EVENT_H
#define DT_CORE_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

/* ------------------------------------------------------------------ */
/* Stored events: 64 bytes each, no allocation per event               */
/* ------------------------------------------------------------------ */
enum {
    DT_REC_HAS_EXTERNAL = 1u << 0, /* external_id is valid */
    DT_REC_REALTIME = 1u << 1,     /* times are already CLOCK_REALTIME ns
                                      (otherwise: vendor clock until stop) */
    DT_REC_HAS_PARENT = 1u << 2,   /* range: u.range.parent is valid */
    DT_REC_ASYNC = 1u << 3,        /* memcpy/memset: asynchronous */
    DT_REC_LAUNCH = 1u << 4,       /* API call: launches device work */
    DT_REC_FREE = 1u << 5          /* memory: a free (else an allocation) */
};

#define DT_DELTA_UNKNOWN UINT32_MAX

typedef struct dt_rec {
    uint64_t start;          /* ns; vendor clock until stop, then realtime */
    uint64_t end;
    uint64_t external_id;    /* valid iff flags & DT_REC_HAS_EXTERNAL */
    uint64_t correlation;    /* vendor correlation id (0: none) */
    uint32_t name;           /* interned name id */
    uint32_t lane;           /* device events: stream; API/range: host tid */
    uint32_t context;        /* device events: context; API/range: host pid */
    uint16_t device;
    uint8_t kind;            /* dt_event_kind */
    uint8_t flags;           /* DT_REC_* */
    union {
        struct {
            uint32_t config;          /* dt_launch_config id */
            uint32_t queued_delta;    /* start - queued, or DT_DELTA_UNKNOWN */
            uint32_t submitted_delta; /* start - submitted, or DT_DELTA_UNKNOWN */
            uint32_t reserved;
        } kernel;
        struct {
            uint64_t bytes;
            uint8_t copy_kind, src_kind, dst_kind, reserved;
            uint16_t src_device, dst_device;
        } memcpy;
        struct {
            uint64_t bytes;
            uint32_t value;
            uint8_t memory_kind, reserved[3];
        } memset;
        struct {
            uint32_t cbid;
            int32_t return_code;
            uint64_t reserved;
        } api;
        struct {
            uint64_t parent;          /* valid iff DT_REC_HAS_PARENT */
            uint64_t reserved;
        } range;
        struct {
            uint32_t info;            /* index in the session's collectives */
            uint32_t reserved[3];
        } collective;
        struct {                      /* context holds the dt_memory_kind */
            uint64_t address;
            uint64_t bytes;
        } memory;
    } u;
} dt_rec;

/* The highest dt_event_kind: arrays indexed by kind have this + 1 entries. */
#define DT_EVENT_KIND_MAX DT_EVENT_MEMORY

/* What each kind is, as sets of kind bits: the writers test them, and
   dt_event_kind_class (DT_EVENT_CLASS_*) gives them to the Kineto plugin
   and the Python package. */
#define DT_KIND_BIT(k) (1u << (k))
#define DT_KINDS_DEVICE                                                                                            \
    (DT_KIND_BIT(DT_EVENT_KERNEL) | DT_KIND_BIT(DT_EVENT_MEMCPY) | DT_KIND_BIT(DT_EVENT_MEMSET) |                  \
     DT_KIND_BIT(DT_EVENT_SYNC) | DT_KIND_BIT(DT_EVENT_OVERHEAD) | DT_KIND_BIT(DT_EVENT_COLLECTIVE) |              \
     DT_KIND_BIT(DT_EVENT_MEMORY))
#define DT_KINDS_HOST                                                                                              \
    (DT_KIND_BIT(DT_EVENT_RUNTIME) | DT_KIND_BIT(DT_EVENT_DRIVER) | DT_KIND_BIT(DT_EVENT_RANGE) |                 \
     DT_KIND_BIT(DT_EVENT_OP))
#define DT_KINDS_LAUNCHED                                                                                          \
    (DT_KIND_BIT(DT_EVENT_KERNEL) | DT_KIND_BIT(DT_EVENT_MEMCPY) | DT_KIND_BIT(DT_EVENT_MEMSET) |                  \
     DT_KIND_BIT(DT_EVENT_COLLECTIVE))
#define DT_KINDS_API (DT_KIND_BIT(DT_EVENT_RUNTIME) | DT_KIND_BIT(DT_EVENT_DRIVER))
_Static_assert(DT_EVENT_KIND_MAX < 32, "a kind is a bit of an unsigned");

/* Whether kind (any number) is one of kinds, a DT_KINDS_* set. */
static inline int dt__rec_kind_in(unsigned kinds, unsigned kind)
{
    return kind <= DT_EVENT_KIND_MAX && (kinds >> kind & 1u);
}

/* A collective's details: more than a record holds, and collectives are
   few, so they live beside the store (dt_session.collectives). Strings are
   interned names. */
typedef struct dt_collective {
    uint64_t count, bytes;
    double bandwidth_gbps;
    uint32_t data_type, group, algorithm;
} dt_collective;

_Static_assert(sizeof(dt_rec) == 64, "dt_rec must stay 64 bytes");

#define DT_STORE_CHUNK_SHIFT 16
#define DT_STORE_CHUNK (1u << DT_STORE_CHUNK_SHIFT)
/* Chunks the process keeps for its next store (64 MiB), and how many the
   preparer keeps faulted in ahead of a recording session's need. */
#define DT_STORE_SPARE_MAX 16
#define DT_STORE_AHEAD 4
/* Records ahead of the one pushed whose line is fetched. */
#define DT_STORE_PREFETCH 6

typedef struct dt_store {
    dt_rec **chunks;
    size_t chunk_count, chunk_cap;
    size_t count;            /* records in use */
    size_t room;             /* records that fit before the slow path */
    uint64_t limit;          /* 0: unlimited */
} dt_store;

DT_HIDDEN void dt__store_init(dt_store *st, uint64_t limit);
/* Its chunks go to the process's spares (up to DT_STORE_SPARE_MAX). */
DT_HIDDEN void dt__store_free(dt_store *st);
DT_HIDDEN dt_rec *dt__store_push_slow(dt_store *st);
static inline dt_rec *dt__store_at(const dt_store *st, size_t i)
{
    return &st->chunks[i >> DT_STORE_CHUNK_SHIFT][i & (DT_STORE_CHUNK - 1)];
}
/* A zeroed record, or NULL when the limit is reached or memory ran out. */
static inline dt_rec *dt__store_push(dt_store *st)
{
    if (st->count < st->room) {
        dt_rec *r = dt__store_at(st, st->count++);
        /* each record is a line of its own: fetched for writing a few
           records ahead, its miss overlaps the decoding of those before
           (past a chunk's end the hint is harmless: a prefetch never
           faults) */
        __builtin_prefetch(r + DT_STORE_PREFETCH, 1, 3);
        *r = (dt_rec){0};
        return r;
    }
    return dt__store_push_slow(st);
}
/* Remove records for which keep() returns 0, preserving order. */
DT_HIDDEN void dt__store_filter(dt_store *st, int (*keep)(dt_rec *, void *), void *arg);
/* Keep the first count records (fewer than now), giving back the chunks
   no longer needed. */
DT_HIDDEN void dt__store_truncate(dt_store *st, size_t count);
/* on 1: a session starts recording, and while any does the preparer thread
   keeps chunks faulted in ahead of need, from the time a store grows past
   its first chunk; 0: it stopped. */
DT_HIDDEN void dt__store_prepare(int on);
/* Unmap the spare chunks (tests, and benchmarks that need fresh memory). */
DT_HIDDEN void dt__store_release_spares(void);
DT_HIDDEN size_t dt__store_spare_count(void);
/* Bytes held by the store (for the benchmark). */
DT_HIDDEN size_t dt__store_bytes(const dt_store *st);

#endif /* DT_CORE_EVENT_H */

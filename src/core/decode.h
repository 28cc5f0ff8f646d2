/*
 * What every backend's decoder needs (src/core/decode.c): name and
 * configuration caches, and records added with the checks every vendor's
 * need. Internal, not installed.
 */
#ifndef DT_CORE_DECODE_H
#define DT_CORE_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/common.h"
#include "base/hash.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/sink.h"

/* Names and launch configurations repeat from record to record. A cache
   lives for one vendor buffer (on the decoder's stack), so it never outlives
   the session whose ids it holds. Kernel names are cached by pointer: vendors
   (CUPTI, TOPSPTI) share one name string among all records of a kernel;
   vendors that copy the name into every record (roctracer) are cached by
   the name's bytes. */
#define DT_DECODE_SLOTS 64
#define DT_DECODE_KERNEL_WAYS 4
#define DT_DECODE_COPIED_SETS 256
typedef struct dt_decode_cache {
    /* four ways per set, each checked inline: hot names that hash alike
       (where the allocator put their strings decides) do not evict each
       other; a miss enters way 0 and moves the others down (the oldest goes) */
    struct { const char *raw[DT_DECODE_KERNEL_WAYS]; uint32_t id[DT_DECODE_KERNEL_WAYS]; } kernel[DT_DECODE_SLOTS];
    struct { dt_launch_config config; uint32_t id; int used; } config[DT_DECODE_SLOTS];
    /* the configuration of the previous kernel: compared before hashing
       (kernels of a loop repeat theirs); its id + 1, 0 when none */
    dt_launch_config last_config;
    uint32_t last_config_id;
    uint32_t copy[6][6][6];   /* name id + 1, by copy kind, source, destination */
    uint32_t fill[6];         /* name id + 1, by memory kind */
    /* names copied into each record, by content: two ways per set; made
       ready on first use (the vendors that share names never pay for it) */
    int copied_ready;
    struct { const char *raw[2]; uint32_t len[2], id[2]; } copied[DT_DECODE_COPIED_SETS];
} dt_decode_cache;

DT_HIDDEN void dt__decode_cache_init(dt_decode_cache *c);
/* A vendor name longer than any real kernel name (CUTLASS's run to tens of
   KiB) is taken as a corrupt pointer or record: it is cut, counted in
   kernel_names_cut and noted. */
#define DT_MAX_KERNEL_NAME ((size_t)1 << 20)

/* The decode helpers below run for every vendor record: their common paths
   are inline (in the backend's decode loop), the rest in decode.c. */
static inline size_t dt__decode_slot(uint64_t key)
{
    return dt__hash_slot(key, 6); /* 64 slots */
}
_Static_assert(DT_DECODE_SLOTS == 64, "dt__decode_slot() yields 6 bits");

DT_HIDDEN uint32_t dt__decode_kernel_name_miss(dt_session *s, dt_decode_cache *c, const char *raw);
/* Interned, demangled kernel name ("<unnamed kernel>" for NULL or ""); a
   name without a NUL in its first DT_MAX_KERNEL_NAME bytes is cut there.
   UINT32_MAX: no memory. */
static inline uint32_t dt__decode_kernel_name(dt_session *s, dt_decode_cache *c, const char *raw)
{
    if (raw) {
        __typeof__(c->kernel[0]) *set = &c->kernel[dt__decode_slot((uintptr_t)raw)];
        for (int w = 0; w < DT_DECODE_KERNEL_WAYS; w++)
            if (set->raw[w] == raw) return set->id[w];
    }
    return dt__decode_kernel_name_miss(s, c, raw);
}

DT_HIDDEN uint32_t dt__decode_kernel_name_copied_miss(dt_session *s, dt_decode_cache *c, const char *raw,
                                                     size_t len, size_t set);
/* Whether n bytes at a and b are the same: word by word inline for names
   of a word or more (the last word overlaps the one before), memcmp below. */
static inline int dt__name_bytes_equal(const char *a, const char *b, size_t n)
{
    if (a == b) return 1;
    if (n < 8) return memcmp(a, b, n) == 0;
    uint64_t x, y;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* dt__decode_kernel_name for a name of len bytes (NUL-terminated there) that
   the vendor copied into this record: records of one kernel each hold their
   own copy, so the cache compares bytes. The buffer must hold the names of
   the cached entries as long as the cache lives (one vendor buffer). */
static inline uint32_t dt__decode_kernel_name_copied(dt_session *s, dt_decode_cache *c, const char *raw, size_t len)
{
    /* every byte counts: kernel names share long heads and tails
       (templates, mangling) and differ anywhere */
    uint64_t key = len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, raw + i, 8);
        key = (key ^ w) * UINT64_C(0x9e3779b97f4a7c15);
        key ^= key >> 29;
    }
    /* the tail: the last 8 bytes in one load (they overlap the last word
       read), or the bytes of a name shorter than a word */
    if (len >= 8) memcpy(&w, raw + len - 8, 8);
    else for (w = 0; i < len; i++) w = w << 8 | (unsigned char)raw[i];
    key = (key ^ w) * UINT64_C(0xc2b2ae3d27d4eb4f);
    size_t set = dt__hash_slot(key, 8);
    if (!c->copied_ready) {
        memset(c->copied, 0, sizeof c->copied);
        c->copied_ready = 1;
    }
    __typeof__(c->copied[0]) *e = &c->copied[set];
    if (e->raw[0] && e->len[0] == len && dt__name_bytes_equal(e->raw[0], raw, len)) return e->id[0];
    return dt__decode_kernel_name_copied_miss(s, c, raw, len, set);
}
_Static_assert(DT_DECODE_COPIED_SETS == 256, "dt__decode_kernel_name_copied() takes 8 bits of the hash");

/* A configuration other than the previous kernel's: through the slots. */
DT_HIDDEN uint32_t dt__decode_launch_config_other(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg);
static inline uint32_t dt__decode_launch_config(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg)
{
    if (c->last_config_id && dt__launch_config_equal(cfg, &c->last_config)) return c->last_config_id - 1;
    return dt__decode_launch_config_other(s, c, cfg);
}
/* "Memcpy HtoD (Pageable -> Device)" and "Memset (Device)", as Kineto names them. */
DT_HIDDEN uint32_t dt__decode_copy_name(dt_session *s, dt_decode_cache *c, uint8_t copy_kind,
                                       uint8_t src_kind, uint8_t dst_kind);
DT_HIDDEN uint32_t dt__decode_fill_name(dt_session *s, dt_decode_cache *c, uint8_t memory_kind);
/* start - earlier as a kernel latency delta; DT_DELTA_UNKNOWN when earlier
   is 0 or all ones (vendors' "unknown"), after start, or too far before. */
static inline uint32_t dt__latency_delta(uint64_t start, uint64_t earlier)
{
    if (earlier == 0 || earlier == UINT64_MAX || earlier > start) return DT_DELTA_UNKNOWN;
    uint64_t d = start - earlier;
    return d >= DT_DELTA_UNKNOWN ? DT_DELTA_UNKNOWN : (uint32_t)d;
}

/* A record with the checks every vendor's needs: plausible timestamps and a
   name (UINT32_MAX: interning ran out of memory). NULL: dropped, counted. */
static inline dt_rec *dt__add_checked(dt_session *s, uint8_t kind, uint64_t start, uint64_t end, uint32_t name)
{
    if (!dt__times_ok(s, start, end)) return NULL;
    if (name == UINT32_MAX) {
        dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
        return NULL;
    }
    dt_rec *r = dt__sink_add(s);
    if (!r) return NULL;
    r->kind = kind;
    r->start = start;
    r->end = end;
    r->name = name;
    return r;
}

/* Append a device activity (kernel, memcpy, memset, sync, overhead) after
   the checks every vendor needs: plausible timestamps, a device id that fits,
   a name. Session lock held. NULL: the record was dropped and counted. */
static inline dt_rec *dt__add_device_activity(dt_session *s, uint8_t kind, uint64_t start, uint64_t end,
                                             uint64_t correlation, uint32_t device, uint32_t stream,
                                             uint32_t context, uint32_t name)
{
    /* device ids are 16-bit in the store; a larger one is a corrupt record */
    if (device > UINT16_MAX) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return NULL;
    }
    dt_rec *r = dt__add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->device = (uint16_t)device;
    r->lane = stream;
    r->context = context;
    return r;
}
/* A memory copy or fill as every vendor describes it, in devtrace's terms
   (the backend translates its enums). Session lock held; NULL: dropped and
   counted (peer device ids must fit 16 bits like the device's). */
typedef struct dt_copy {
    uint64_t start, end, correlation, bytes;
    uint32_t device, stream, context;
    uint32_t src_device, dst_device;   /* peer copies; otherwise the device */
    uint8_t copy_kind, src_kind, dst_kind; /* dt_copy_kind, dt_memory_kind */
    int async;
} dt_copy;
DT_HIDDEN dt_rec *dt__add_copy(dt_session *s, dt_decode_cache *c, const dt_copy *m);

typedef struct dt_fill {
    uint64_t start, end, correlation, bytes;
    uint32_t device, stream, context, value;
    uint8_t memory_kind;                /* dt_memory_kind */
    int async;
} dt_fill;
DT_HIDDEN dt_rec *dt__add_fill(dt_session *s, dt_decode_cache *c, const dt_fill *m);

/* A collective as every vendor describes it (the backend maps its data
   types to torch's names and computes bytes where it can). Strings are the
   vendor's; NULL or "" where it gives none. Session lock held; NULL: dropped
   and counted. */
typedef struct dt_collective_desc {
    uint64_t start, end, correlation;
    uint32_t device, stream;
    const char *name, *group, *algorithm, *data_type;
    uint64_t count, bytes;
    double bandwidth_gbps;
} dt_collective_desc;
DT_HIDDEN dt_rec *dt__add_collective(dt_session *s, const dt_collective_desc *c);
/* A device memory allocation or free as every vendor describes it (the
   backend translates its memory kinds; bytes 0 where it does not say).
   Session lock held; NULL: dropped and counted. */
typedef struct dt_memory_op {
    uint64_t time, correlation, address, bytes;
    uint32_t device, stream;
    uint8_t memory_kind;               /* dt_memory_kind */
    int is_free;
} dt_memory_op;
DT_HIDDEN dt_rec *dt__add_memory(dt_session *s, const dt_memory_op *m);
/* A string the vendor owns, interned, read no further than max bytes (a
   longer one is cut there); "" for NULL. UINT32_MAX: no memory. */
DT_HIDDEN uint32_t dt__intern_vendor_str(dt_session *s, const char *raw, size_t max);

/* Append a runtime or driver API call made by host thread tid of process pid.
   A backend that knows the call launches device work sets DT_REC_LAUNCH on
   the record returned. */
static inline dt_rec *dt__add_api_call(dt_session *s, uint8_t kind, uint64_t start, uint64_t end,
                                      uint64_t correlation, uint32_t pid, uint32_t tid, uint32_t name,
                                      uint32_t cbid, int32_t return_code)
{
    dt_rec *r = dt__add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->lane = tid;
    r->context = pid;
    r->u.api.cbid = cbid;
    r->u.api.return_code = return_code;
    return r;
}

#endif /* DT_CORE_DECODE_H */

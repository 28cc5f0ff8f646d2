/*
 * The roctracer backend's decoder, apart from the library: what the backend,
 * its tests, its fuzz target and the decode benchmark share.
 *
 * roctracer is not CUPTI-shaped: records of one fixed size (64 bytes) in a
 * pool roctracer allocates through its client's allocator, the kernel name
 * of a dispatch copied into the same buffer from its end downwards, an
 * EXT_API record (correlation id -> external id) written right before the API
 * record it tags, and launch configurations only in the HIP API callbacks'
 * arguments. So it has a decoder of its own, over the core's helpers.
 */
#ifndef DT_ROCTRACER_H
#define DT_ROCTRACER_H

#include "backends/backend.h"
#include "backends/roctracer_abi.h"

/* ------------------------------------------------------------------ */
/* Call arguments taken at API entry, by correlation id                */
/* ------------------------------------------------------------------ */
enum { DT_RT_ARGS_LAUNCH = 1, DT_RT_ARGS_FILL = 2 };

/* 32 bytes: one is written, kept and read for every launch and fill. */
typedef struct dt_rt_args {
    uint64_t correlation;          /* 0: an empty slot */
    uint32_t grid[3];              /* launches */
    uint16_t block[3];             /* launches (HIP allows at most 1024 a side) */
    uint8_t what;                  /* DT_RT_ARGS_* */
    uint8_t reserved;
    union {
        uint32_t dynamic_shared;   /* launches, where the arguments give it */
        uint32_t value;            /* fills */
    };
} dt_rt_args;
_Static_assert(sizeof(dt_rt_args) == 32, "dt_rt_args is 32 bytes");

/* By correlation id; an entry is taken once. Not thread-safe: the decoder
   owns it. */
typedef struct dt_rt_args_table {
    dt_rt_args *slots;
    size_t mask, count;
    uint64_t evicted;              /* entries dropped for later ones (the table at its largest) */
} dt_rt_args_table;
/* The table's largest size, in entries (8 MiB) */
#define DT_RT_ARGS_MAX ((size_t)1 << 18)

DT_HIDDEN void dt__rt_args_free(dt_rt_args_table *t);
/* Empty, keeping its slots for the next session (a table grown to hold a
   flight recorder's ring of launches is not made again). */
DT_HIDDEN void dt__rt_args_clear(dt_rt_args_table *t);
/* -1 when the table cannot grow (out of memory). */
DT_HIDDEN int dt__rt_args_put(dt_rt_args_table *t, const dt_rt_args *a);
/* 1 and *out when an entry for correlation exists (and is removed). */
DT_HIDDEN int dt__rt_args_take(dt_rt_args_table *t, uint64_t correlation, dt_rt_args *out);

/* ------------------------------------------------------------------ */
/* The decoder                                                         */
/* ------------------------------------------------------------------ */
typedef struct dt_rt_decoder {
    /* The pool roctracer writes into, as the allocator handed it out:
       [pool, pool + 2 * half), two buffers of half bytes. The kernel names
       of a buffer lie between its last record and the end of its half; a
       name pointer into the pool anywhere else is a corrupt record. NULL:
       unknown (names are then trusted as the vendor's, as other vendors'). */
    const uint8_t *pool;
    size_t half;
    /* HIP API names by operation id (roctracer_op_string), or NULL */
    const char *const *api_names;
    uint32_t api_name_count;
    /* arguments of launches and fills, or NULL */
    dt_rt_args_table *args;
    /* Arguments the callbacks took but could not keep (out of memory), by
       DT_RT_ARGS_*: that many kernels or fills without arguments are
       dropped as store_full, as a kernel whose configuration could not be
       kept is on every vendor. Decremented as they are. */
    uint64_t *args_unkept;
} dt_rt_decoder;

/* Decode one buffer [begin, end) into s (taking its lock). */
DT_HIDDEN void dt__rt_decode(const dt_rt_decoder *d, dt_session *s, const uint8_t *begin, const uint8_t *end);
/* The end of the pool's half that a buffer delivered at `at` lies in (its
   kernel names lie between its last record and there), or NULL when `at`
   is not in the pool or the pool is unknown. */
DT_HIDDEN const uint8_t *dt__rt_half_end(const dt_rt_decoder *d, const uint8_t *at);

/* ROCTX (roctracer_roctx.c): the callback for ACTIVITY_DOMAIN_ROCTX, and
   the start/stop ranges left open, forgotten at a session's start. */
DT_HIDDEN void dt__rt_roctx_callback(uint32_t domain, uint32_t cid, const void *data, void *arg);
DT_HIDDEN void dt__rt_roctx_reset(void);

/* The flight recorder keeps copies of delivered buffers, made before
   roctracer reuses their half: a header of DT_RT_COPY_HEADER bytes (the
   records after it stay aligned), the records, then their kernel names:
   the bytes from the lowest name a dispatch record points to (between the
   records and the half's end) to the half's end. Where the names lie is
   read from roctracer's source, not its headers (MemoryPool::Write copies
   a record's data downwards from the end of the buffer it writes as it
   appends the record, the two meeting when the buffer is full): those
   bytes are then the names and nothing else. Which name is lowest is not
   inferred from that order but found, the records searched as they are
   copied, so that a copy holds every name its records point to whatever
   the order they were written in. */
#define DT_RT_COPY_HEADER ((size_t)64)
/* Copy the buffer delivered as [begin, end) into buf, of room bytes
   (DT_RT_COPY_HEADER + the decoder's half always do): the copy's bytes;
   0 when it is no buffer roctracer can have written (outside the pool, or
   ending before it begins: dt__rt_decode it where it lies), or room is
   short. */
DT_HIDDEN size_t dt__rt_copy(uint8_t *buf, size_t room, const dt_rt_decoder *d, const uint8_t *begin,
                            const uint8_t *end);
/* Decode a copy of valid bytes into s, as dt__rt_decode the buffer. */
DT_HIDDEN void dt__rt_decode_copy(const dt_rt_decoder *d, dt_session *s, const uint8_t *buf, size_t valid);

/* What a HIP_OPS record's command kind is, in devtrace's terms. */
typedef enum dt_rt_command {
    DT_RT_COMMAND_OTHER = 0,
    DT_RT_COMMAND_KERNEL,
    DT_RT_COMMAND_COPY,
    DT_RT_COMMAND_FILL,
    DT_RT_COMMAND_BARRIER,
} dt_rt_command;
DT_HIDDEN dt_rt_command dt__rt_command_of(uint32_t op, uint32_t kind, uint8_t *copy_kind);

/* The HIP runtime's device queries, as bound (NULL: absent). */
typedef struct dt_rt_hip {
    dt_hip_int_fn runtime_get_version, get_device_count;
    dt_hip_name_fn device_get_name;
    dt_hip_total_mem_fn device_total_mem;
    dt_hip_attribute_fn device_get_attribute;
} dt_rt_hip;

/* Describe the process's devices to s through HIP's attribute queries
   (roctracer_devices.c); what cannot be read is absent, and noted. */
DT_HIDDEN void dt__rt_read_devices(dt_session *s, const dt_rt_hip *hip);

#endif /* DT_ROCTRACER_H */

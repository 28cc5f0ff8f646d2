/*
 * The rocprofiler-sdk backend's decoder (rocprofiler_sdk_decode.c) and tool
 * entry point (rocprofiler_sdk.c). The decoder turns the record-header
 * arrays the SDK hands a buffer callback into stored events; it needs no
 * library, so tests, the fuzz target and the benchmark drive it directly.
 */
#ifndef DT_ROCPROFILER_SDK_H
#define DT_ROCPROFILER_SDK_H

#include "backends/backend.h"
#include "backends/rocprofiler_sdk_abi.h"

/* What the code-object service said about a kernel. */
typedef struct dt_rsdk_kernel {
    uint64_t kernel_id;
    char *name;                   /* dt__strdup'ed */
    uint32_t registers;           /* VGPRs per work-item; 0: not reported */
    uint32_t static_lds;          /* group segment the kernel declares */
    uint8_t fill;                 /* a HIP runtime fill kernel (a memset) */
} dt_rsdk_kernel;

typedef struct dt_rsdk_agent {
    uint64_t handle;
    uint16_t device;              /* devtrace's device id */
    uint8_t gpu;
} dt_rsdk_agent;

/* A hipMemset* call (or, in a session that records no HIP API calls, a
   kernel launch), by its correlation id, noted on the program's thread
   until the dispatch it made arrives; a fill's size and value. */
typedef struct dt_rsdk_call {
    uint64_t correlation;         /* 0: empty slot */
    uint64_t bytes;
    uint32_t value;
    uint8_t async;
    uint8_t launch;               /* a kernel launch: awaited, nothing to read */
} dt_rsdk_call;

#define DT_RSDK_MAX_AGENTS 128
#define DT_RSDK_CALL_SLOTS 4096
/* HIP runtime API operations are looked up below this number */
#define DT_RSDK_MAX_OPS 4096

typedef struct dt_rsdk_decoder {
    uint32_t version;             /* RSDK_VERSION of the library; 0 unknown */
    uint32_t pid;
    /* agents, in the SDK's order; GPUs numbered from 0 */
    dt_rsdk_agent agents[DT_RSDK_MAX_AGENTS];
    uint32_t agent_count, gpu_count;
    /* HSA queues -> rows (1..; 0 is copies', which name no queue) */
    uint64_t *queues;
    uint32_t queue_count, queue_cap;
    /* kernels by id: entries, and an open-addressing index (id + 1) */
    pthread_mutex_t kernel_lock;
    dt_rsdk_kernel *kernels;
    uint32_t kernel_count, kernel_cap;
    uint32_t *kernel_index;
    uint32_t kernel_mask;
    /* HIP runtime API names by operation (the SDK's strings) */
    const char **api_names;
    uint32_t api_name_count;
    /* fills (and launches noted by callback) awaiting their dispatch,
       written on the program's threads; awaiting: slots taken */
    pthread_mutex_t call_lock;
    _Atomic uint32_t awaiting;
    dt_rsdk_call calls[DT_RSDK_CALL_SLOTS];
    /* damage noted at stop */
    _Atomic uint64_t unknown_kernels, fills_without_size, fills_unrecorded, unknown_agents;
    /* Launches matched with their dispatches from the records alone (see
       dt__rsdk_decoder_match_launches): the launch operations, and by
       correlation id which of the two records was decoded. Touched only
       where decoding is serialized: no lock. */
    uint64_t launch_ops[DT_RSDK_MAX_OPS / 64];
    uint64_t *launches;           /* correlation << 2 | the sides seen; 0: empty */
    uint32_t launch_mask;
    uint64_t launch_low, launch_high; /* the ids written since the last take_awaiting */
} dt_rsdk_decoder;

DT_HIDDEN void dt__rsdk_decoder_init(dt_rsdk_decoder *d, uint32_t version);
/* Keeps the names and kernels (they outlive sessions); frees the rest. */
DT_HIDDEN void dt__rsdk_decoder_free(dt_rsdk_decoder *d);
/* An agent, in the order the SDK lists them; a GPU's properties go to
   *props (valid set) with what the agent does not say noted in missing. */
DT_HIDDEN void dt__rsdk_decoder_add_agent(dt_rsdk_decoder *d, const rsdk_agent *a, size_t avail,
                                         dt_device_props *props, char *missing, size_t missing_len);
/* A kernel symbol from the code-object service. -1: out of memory. */
DT_HIDDEN int dt__rsdk_decoder_add_kernel(dt_rsdk_decoder *d, const rsdk_kernel_symbol *sym);
/* A hipMemset* call's size and value (thread-safe). */
DT_HIDDEN void dt__rsdk_decoder_note_fill(dt_rsdk_decoder *d, uint64_t correlation, uint64_t bytes,
                                         uint32_t value, int async);
/* A kernel launch call (thread-safe): its dispatch is awaited. For
   sessions whose launches the decoder does not match from the records. */
DT_HIDDEN void dt__rsdk_decoder_note_launch(dt_rsdk_decoder *d, uint64_t correlation);
/* From now on, in sessions that record both HIP API calls and kernels, the
   decoder awaits a dispatch for each HIP runtime API record of one of the
   `n` operations `ops` (the launch operations), matching the two records
   by correlation id in whichever order they are decoded. buffer_bytes: the
   size of the SDK's buffers, which bounds how far the two records of one
   launch can be apart. -1: out of memory (nothing changed). */
DT_HIDDEN int dt__rsdk_decoder_match_launches(dt_rsdk_decoder *d, const int32_t *ops, size_t n, size_t buffer_bytes);
/* Whether a session capturing `capture` (DT_CAPTURE_*) has its launches
   matched by the decoder (else they are noted by dt__rsdk_decoder_note_launch). */
DT_HIDDEN int dt__rsdk_decoder_matches_launches(const dt_rsdk_decoder *d, uint32_t capture);
/* The launches and fills still awaiting their dispatch, forgotten. Not
   while dt__rsdk_decode runs (its callers serialize the two). */
DT_HIDDEN uint64_t dt__rsdk_decoder_take_awaiting(dt_rsdk_decoder *d);
/* Decode one buffer callback's records into s (taking its lock). Calls
   are serialized by the caller (one buffer at a time). */
DT_HIDDEN void dt__rsdk_decode(dt_rsdk_decoder *d, dt_session *s, rsdk_record_header *const *headers, size_t n);

/* The flight recorder keeps copies of delivered records (the SDK owns
   their headers and payloads, and reuses them once its callback returns),
   in chunks, one after another in a buffer: a count and the chunk's bytes,
   the payloads, 8-byte aligned, then per record its header's hash and its
   payload's offset. A chunk of DT_RSDK_COPY_MIN bytes holds any record. */
#define DT_RSDK_COPY_MIN ((size_t)4096 + 64)
/* Copy records headers[*from, n) into a chunk at buf (size bytes), as
   many as fit; *from moves past them. Returns the chunk's bytes (a
   multiple of 8), 0 when none fits. A record without a payload, or whose
   size cannot be a record's, keeps its size alone: the decoder counts it. */
DT_HIDDEN size_t dt__rsdk_copy(uint8_t *buf, size_t size, rsdk_record_header *const *headers, size_t n, size_t *from);
/* Copies packed into buffers from the flight recorder's pool (slot): the
   buffer being filled joins s's ring when full, or when pushed (a flush,
   the stop). Under the caller's lock, which a decode the ring does while
   the pool is asked for a buffer must be able to take again. */
typedef struct dt_rsdk_packer {
    dt_pool_slot *slot;
    uint8_t *buf; /* being filled, or NULL */
    size_t size, used;
} dt_rsdk_packer;
/* The records copied; those no buffer can be had for counted as no_buffer. */
DT_HIDDEN void dt__rsdk_pack(dt_rsdk_packer *p, dt_session *s, rsdk_record_header *const *headers, size_t n);
/* The buffer being filled into s's ring (empty, or s without one: back to
   the pool). */
DT_HIDDEN void dt__rsdk_pack_push(dt_rsdk_packer *p, dt_session *s);
/* Decode the chunks of a buffer of valid bytes into s, as dt__rsdk_decode
   the records. */
DT_HIDDEN void dt__rsdk_decode_copy(dt_rsdk_decoder *d, dt_session *s, uint8_t *buf, size_t valid);
/* Whether a kernel name is one of the HIP runtime's fill kernels. */
DT_HIDDEN int dt__rsdk_is_fill_kernel(const char *name);

#endif /* DT_ROCPROFILER_SDK_H */

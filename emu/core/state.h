/*
 * The emulator core's shared state (emu/core, internal: never included by a
 * personality, which sees only emu_vendor.h).
 *
 * Locking: one state mutex (core_state.lock) guards everything in
 * core_state except the clock (atomics, read on every call) and buffer
 * delivery, which is serialized by its own mutex (deliver_lock) so that
 * FlushAll can wait for a delivery the worker has in flight. Client
 * callbacks for API calls run without any lock held; the buffer request
 * callback runs with the state lock held (a client must not call back into
 * the emulator from it). Functions named *_locked expect the state lock.
 *
 * Names: `emu_*` is the emulated runtime API (devtrace_emu.h), `emu_core_*`
 * what the core offers a personality (emu_vendor.h); `core_*` is shared
 * between the core's own files only, declared in the header of the file
 * that defines it (see emu/README.md).
 */
#ifndef DEVTRACE_EMU_CORE_STATE_H
#define DEVTRACE_EMU_CORE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "emu_vendor.h"

#define EMU_LONG_DURATION_NS (3601ull * 1000000000ull)
#define EMU_TRUNCATED_BYTES 16
#define EMU_EXT_KINDS 8
#define EMU_EXT_DEPTH 32
#define EMU_API_FILTER_IDS 1024

/* What a produced record waits for before it is written. */
enum { PEND_LATE = 1u << 0, PEND_MALFORMED = 1u << 1, PEND_TIMES_FAULTED = 1u << 2 };

typedef struct pending_rec {
    emu_activity a;
    uint64_t ready_at;     /* device time from which it may be written */
    uint64_t release_at;   /* held records: writable once its lane's completions reach it */
    unsigned flags;
    int lane;              /* the buffer lane of the thread that produced it */
} pending_rec;

/* A buffer being filled. One lane for all threads; with per-thread buffers
   (CUDA 13) one per producing thread, lane 0 left unused. */
#define EMU_LANES 256
typedef struct lane {
    uint8_t *buf;
    size_t size, used, records;
    size_t tail;           /* bytes records keep at the buffer's end (tail_size) */
    uint64_t completions;  /* buffers of this lane completed */
} lane;

typedef struct rec_vec {
    pending_rec *v;
    size_t n, cap;
} rec_vec;

typedef struct done_buf {
    uint8_t *buf;
    size_t size, valid;
} done_buf;

typedef struct name_set {
    char **slots;
    size_t mask, count;
    char *region;              /* the copies (names.c); NULL before the first */
    size_t region_used;
    int region_tried;
} name_set;

/* A live allocation of emu_malloc. */
typedef struct live_block {
    uint64_t address, bytes;
    int device, memory;
} live_block;

/* A range started and not yet ended: the stream it was marked on. */
typedef struct open_range {
    uint64_t id;
    int device, stream;
} open_range;

struct core_state {
    pthread_mutex_t lock;
    pthread_mutex_t deliver_lock;
    pthread_cond_t worker_cond;
    pthread_t worker;
    int worker_started, worker_stop;

    _Atomic int64_t clock_offset;
    _Atomic double clock_scale;       /* 1 + drift_ppm * 1e-6 */

    int device_count;
    uint64_t ready[EMU_MAX_DEVICES][EMU_MAX_STREAMS];
    int64_t grid_id[EMU_MAX_DEVICES];

    int enabled[EMU_REC_COUNT];
    emu_request_fn request;
    emu_generic_fn complete;

    lane lanes[EMU_LANES];
    uint64_t completions;

    done_buf *done;
    size_t done_n, done_cap;

    rec_vec pending;   /* produced device records, written once finished */
    rec_vec held;      /* late records waiting for a later buffer */

    int subscribed;
    emu_generic_fn cb;
    void *cb_userdata;
    int domain_on[EMU_DOMAIN_COUNT];

    size_t dropped;
    uint64_t fault_left[EMU_FAULT_COUNT];
    emu_stats stats;

    uint32_t flush_period_ms;
    int flush_period_fixed; /* the client's requests leave flush_period_ms as it is */
    uint64_t last_periodic_rt;
    emu_thread_id_type tid_type;
    name_set names;

    live_block *blocks;
    size_t block_n, block_cap;
    uint64_t next_address;
    open_range *ranges;
    size_t range_n, range_cap;
    /* API records the client asked not to get, by callback id */
    uint8_t api_off[EMU_DOMAIN_COUNT][EMU_API_FILTER_IDS / 8];
    int profiling;         /* a kind was enabled since load or finalize */
    int null_client_keeps_id; /* the null client keeps an external id pushed */
};

/* A thread-local variable shared between the core's files: addressed as a
   static one is (the library's own TLS block), not through the dynamic
   linker's symbol lookup. */
#define CORE_TLS _Thread_local __attribute__((tls_model("local-dynamic")))

/* Defined in lifecycle.c. */
EMU_HIDDEN extern struct core_state core_state;

#endif /* DEVTRACE_EMU_CORE_STATE_H */

/*
 * The interface between the vendor-neutral emulator core (emu/core) and a
 * vendor personality (emu/topspti, emu/cupti, ...).
 *
 * The core owns everything that does not depend on the vendor's ABI: the
 * emulated devices, streams and device clock, which record kinds are
 * enabled, the client's buffers (request, fill back to back 8-byte aligned,
 * complete when full, on flush and periodically from the core's own worker
 * thread), the subscriber and its enabled domains, the dropped-record count,
 * fault injection and the statistics.
 *
 * A personality is one `const struct emu_vendor` named `emu_vendor_impl`
 * (the core references it by that name; one personality per library) plus
 * the vendor's exported entry points, which translate the vendor's types and
 * error codes and call the emu_core_* functions below. The personality knows
 * the record layouts; the core never looks inside a record except through
 * `record_kind`.
 */
#ifndef DEVTRACE_EMU_VENDOR_H
#define DEVTRACE_EMU_VENDOR_H

#include <stddef.h>
#include <stdint.h>

#include "devtrace_emu.h"
#include "emu_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the core asks a personality to write. */
typedef enum emu_rec_kind {
    EMU_REC_KERNEL = 0,
    EMU_REC_MEMCPY,
    EMU_REC_MEMSET,
    EMU_REC_RUNTIME,      /* API record, runtime domain */
    EMU_REC_DRIVER,       /* API record, driver domain */
    EMU_REC_EXTERNAL,     /* external-correlation record (before an API record) */
    EMU_REC_MARKER,       /* one end of a user range, or an instant (MSPTI) */
    EMU_REC_COLLECTIVE,   /* a collective communication on a device (MSPTI) */
    EMU_REC_MEMORY,       /* a device memory allocation or free (MSPTI) */
    EMU_REC_MEMORY_POOL,  /* a memory pool created, destroyed or trimmed (CUPTI) */
    EMU_REC_UNKNOWN,      /* a record of a kind the vendor never defined */
    EMU_REC_COUNT
} emu_rec_kind;

typedef enum emu_domain {
    EMU_DOMAIN_RUNTIME = 0,
    EMU_DOMAIN_DRIVER = 1,
    EMU_DOMAIN_COUNT
} emu_domain;

typedef enum emu_site { EMU_SITE_ENTER = 0, EMU_SITE_EXIT = 1 } emu_site;

typedef enum emu_thread_id_type {
    EMU_TID_PTHREAD = 0,  /* (uint32_t)pthread_self() */
    EMU_TID_SYSTEM = 1    /* Linux tid */
} emu_thread_id_type;

/* The runtime operation an API call performs (for cbid and name lookup). */
typedef enum emu_op {
    EMU_OP_LAUNCH_KERNEL = 0,
    EMU_OP_MEMCPY,
    EMU_OP_MEMCPY_ASYNC,
    EMU_OP_MEMSET,
    EMU_OP_MEMSET_ASYNC,
    EMU_OP_STREAM_SYNCHRONIZE,
    EMU_OP_DEVICE_SYNCHRONIZE,
    EMU_OP_COLLECTIVE,    /* emu_collective: an all-reduce */
    EMU_OP_MALLOC,        /* emu_malloc */
    EMU_OP_FREE,          /* emu_free */
    /* CUDA 13's bookkeeping around each launch (runtime calls, no work) */
    EMU_OP_PUSH_CALL_CONFIGURATION,
    EMU_OP_POP_CALL_CONFIGURATION,
    EMU_OP_GRAPH_LAUNCH,  /* emu_graph_launch */
    EMU_OP_MEM_POOL_CREATE, /* emu_memory_pool */
    EMU_OP_MEM_POOL_DESTROY,
    EMU_OP_MEM_POOL_TRIM,
    EMU_OP_COUNT
} emu_op;

/* A vendor-neutral record. Times are device-clock ns. */
typedef struct emu_activity {
    emu_rec_kind kind;
    uint64_t start, end;
    uint32_t correlation;
    uint32_t device, context, stream;
    /* the vendor's external id for this record, where its records carry
       one themselves (emu_vendor.record_external) */
    int has_external_id;
    uint64_t external_id;
    union {
        struct {
            const char *name;        /* interned by the core: lives until unload */
            int32_t grid[3], block[3];
            uint32_t registers_per_thread;
            int32_t static_shared_memory, dynamic_shared_memory;
            uint64_t queued, submitted, completed; /* completed 0: unknown */
            int64_t grid_id;
        } kernel;
        struct {
            emu_copy_kind copy_kind;
            int src_memory, dst_memory; /* EMU_MEM_* */
            uint64_t bytes;
            int async;
            uint32_t src_device, dst_device;
        } memcpy;
        struct {
            uint64_t bytes;
            uint32_t value;
            int memory;                 /* EMU_MEM_* */
            int async;
        } memset;
        struct {
            uint32_t cbid;
            uint32_t process, thread;
            int32_t return_value;
        } api;
        struct {
            uint32_t external_kind;
            uint64_t external_id;
        } external;
        struct {
            unsigned flags;             /* EMU_MARK_* */
            uint64_t id;                /* pairs a range's start and end */
            const char *name;           /* interned; "" on an end */
            uint32_t process, thread;   /* host records */
        } marker;                       /* device records: device and stream */
        struct {
            const char *name, *group, *algorithm; /* interned */
            int data_type;              /* HCCL's numbering, as MSPTI's */
            uint64_t count;
        } collective;
        struct {
            uint64_t address, bytes;    /* a free's bytes: the block's */
            int memory;                 /* EMU_MEM_* */
            int is_free;
            int pool_op;                /* EMU_REC_MEMORY_POOL: EMU_POOL_* */
            uint32_t process;
        } memory;                       /* device: the memory's; stream: the call's */
    } u;
} emu_activity;

/* What a marker record is: one of START, END, INSTANT, with DEVICE when the
   range was marked on a stream (the host's record then says so too), and
   SOURCE_DEVICE for the device's own record of it. */
enum {
    EMU_MARK_START = 1u << 0,
    EMU_MARK_END = 1u << 1,
    EMU_MARK_INSTANT = 1u << 2,
    EMU_MARK_ON_STREAM = 1u << 3,
    EMU_MARK_SOURCE_DEVICE = 1u << 4
};

enum { EMU_MEM_UNKNOWN = 0, EMU_MEM_PAGEABLE = 1, EMU_MEM_PINNED = 2, EMU_MEM_DEVICE = 3 };

/* What an API call does, with its arguments, for personalities whose
   callback data presents them (roctracer's hip_api_data_t, rocprofiler-sdk's
   argument iterator). */
typedef struct emu_call_args {
    emu_op op;
    const emu_kernel_desc *kernel;   /* launches; NULL otherwise */
    uint64_t bytes;                  /* copies and fills */
    uint32_t value;                  /* fills */
    int copy_kind;                   /* copies: emu_copy_kind */
    int device;
    int stream;                      /* -1: every stream (device synchronization) */
} emu_call_args;

/* One API callback invocation, vendor-neutral. */
typedef struct emu_api_call {
    emu_domain domain;
    uint32_t cbid;
    emu_site site;
    const char *function_name;
    const char *symbol_name;     /* kernel name for launches, else NULL */
    uint32_t correlation;
    uint32_t context_uid;
    uint64_t *correlation_data;  /* the same storage at ENTER and EXIT */
    const void *function_params; /* NULL: the emulator has no parameter structs */
    void *return_value;          /* points to an int32 0 */
    const emu_call_args *args;   /* what the call does (never NULL) */
} emu_api_call;

struct emu_vendor {
    const char *name;                    /* "topspti" */
    /* Bytes a record of this kind occupies, a multiple of 8; 0 if the
       vendor has no such kind (the core then never produces it). */
    size_t (*record_size)(emu_rec_kind kind);
    /* Write `a` at dst in the vendor layout (record_size(a->kind) bytes,
       dst 8-byte aligned, zeroed by the core). */
    void (*write_record)(uint8_t *dst, const emu_activity *a);
    /* The kind of the record at rec, whose first `avail` bytes are valid
       (avail >= 4); EMU_REC_UNKNOWN if the vendor does not know it. */
    emu_rec_kind (*record_kind)(const uint8_t *rec, size_t avail);
    /* Call the client's completion function (as registered, type-erased)
       with the vendor's signature. */
    void (*complete_buffer)(void (*client_fn)(void), uint8_t *buffer, size_t size,
                            size_t valid_size);
    /* Call the subscriber's callback with the vendor's callback data. */
    void (*invoke_callback)(void (*client_fn)(void), void *userdata, const emu_api_call *call);
    /* Callback id of an operation in a domain; 0: the vendor makes no such
       call in that domain (e.g. TOPSPTI has no driver API calls). */
    uint32_t (*cbid)(emu_domain domain, emu_op op, emu_copy_kind copy_kind);
    /* Name of a callback id, or NULL if unknown. */
    const char *(*callback_name)(emu_domain domain, uint32_t cbid);
    emu_thread_id_type default_thread_id_type;
    /* The vendor's clock domain, as a map from CLOCK_REALTIME:
       device = realtime * (1 + clock_drift_ppm * 1e-6) + offset, where the
       offset is clock_offset_ns, or, with clock_counter, whatever makes the
       device clock read clock_offset_ns when the library starts (a counter
       since "boot"). DEVTRACE_EMU_CLOCK_* and emu_set_clock() replace it. */
    int64_t clock_offset_ns;
    double clock_drift_ppm;
    int clock_counter;
    /* An API call made with no external id pushed still produces an
       external-correlation record of this external kind, id 0 (0: none). */
    uint32_t external_kind_when_empty;
    /* Optional: the personality keeps the external-correlation stacks
       itself (deeper, or one per process): the innermost id of an external
       kind for an API call made now on this thread; 0 when none. NULL: the
       core's per-thread stacks (emu_core_push_external). */
    int (*external_top)(uint32_t external_kind, uint64_t *id);
    /* Optional: told the size of every buffer the client hands over. */
    void (*buffer_received)(size_t size);
    /* The vendor's timestamps are CLOCK_REALTIME and cannot be moved:
       emu_set_clock and DEVTRACE_EMU_CLOCK_* are refused. */
    int clock_is_realtime;
    /* The name the vendor looks for in LD_PRELOAD (emu_preload); NULL. */
    const char *preload;
    /* Optional (NULL: none). The members below are for personalities whose
       vendor works otherwise than CUPTI's; the others leave them out. */
    /* The external id a record of this kind carries in itself, asked on the
       thread that produces it (the vendor takes it from that thread's
       stack): 1 and *id when there is one. Such records are counted as
       external-correlation records (emu_stats.records[EMU_KIND_EXTERNAL]). */
    int (*record_external)(emu_rec_kind kind, uint64_t *id);
    /* With clock_counter: the device clock's value when the library starts
       (a clock of the host's, e.g. CLOCK_BOOTTIME); NULL: clock_offset_ns. */
    uint64_t (*clock_origin_ns)(void);
    /* At the start of every emulated API call, on the calling thread, no
       lock held: the vendor's runtime initializes at its first call. */
    void (*runtime_call)(void);
    /* How a completed buffer reaches a client that does nothing with it
       (emu_null_client), for a vendor that delivers otherwise than through
       the core's iterator (e.g. arrays of record headers); NULL: the core
       walks the buffer with its iterator. */
    void (*null_client_buffer)(uint8_t *buf, size_t valid);
    /* Every producing thread fills a buffer of its own (CUDA 13's CUPTI);
       otherwise all share one. */
    int per_thread_buffers;
    /* A forced flush hands back device work still running with its start
       and no end (CUDA 13's CUPTI); otherwise with the times it will have. */
    int unfinished_without_end;
    /* The vendor makes a device record when its work completes, and only
       for a client still recording that kind (roctracer, rocprofiler-sdk):
       disabling a kind abandons the records of its work still running,
       counted in records_unfinished; a flush never hands them back. */
    int records_at_completion;
    /* The variable naming the injection library the emulated driver loads
       and calls InitializeInjection of while it initialises (CUDA's
       CUDA_INJECTION64_PATH); NULL: none. */
    const char *injection_env;
    /* The vendor's runtime registers its teardown with atexit while the
       driver initialises, before it calls the injection library (as a
       statically linked cudart does): once the teardown ran, flushes answer
       an error and deliver nothing, and what the client had not been given
       is lost (counted in stats.records_lost_at_teardown). */
    int runtime_teardown;
    /* A device's context was created: at the first API call on that device
       once the driver is up, on the calling thread, no lock held (the
       vendor's resource callback). NULL: contexts are not told. */
    void (*context_created)(int device);
    /* Bytes a record keeps at the end of its lane's buffer, written there
       by write_tail once the record is (roctracer copies a dispatch's kernel
       name into the buffer from its end downwards). */
    size_t (*tail_size)(const emu_activity *a);
    void (*write_tail)(uint8_t *record, uint8_t *tail, const emu_activity *a);
    /* A vendor library that owns its buffers and delivers them on a thread
       of its own (roctracer's pool) takes each completed buffer (of any
       lane) here, state lock held, instead of the core's delivery queue.
       Its buffer request function may then wait for the consumer to give a
       buffer back (as roctracer's producers do) rather than drop: it calls
       emu_core_buffer_waited() when it did. */
    void (*take_completed)(uint8_t *buffer, size_t size, size_t valid);
    /* Most ids a thread's external-correlation stack holds (0: the CUPTI
       family's 32; SIZE_MAX: unbounded, as roctracer's). */
    size_t external_depth;
    /* Faults the vendor's interface cannot exhibit (1u << emu_fault): armed
       faults of these kinds are refused (emu_fault_arm: EMU_ENOTSUP) or,
       in a fault spec, ignored. */
    unsigned unsupported_faults;
    /* A child forked without exec once the driver has initialised cannot
       use the runtime (CUDA: every runtime and driver call fails with an
       initialization error): its calls return EMU_EUNUSABLE, do no work and
       write no record; the API callbacks still see them enter and leave.
       Otherwise a forked child has a working device of its own. */
    int fork_child_unusable;
    /* The result a synchronising call gives on a thread capturing a graph
       (emu_stream_capture), in the vendor's numbering; 0: the vendor has no
       graphs, and capturing changes nothing. */
    int32_t capture_error;
    /* Optional: records of one core kind whose size differs by what they
       say (PTI's peer-to-peer copies are larger than its other copies).
       activity_size: bytes for a; size_at: bytes of the record at rec, of
       which avail (>= 4) are valid, 0 if its kind is unknown. NULL:
       record_size of the kind. */
    size_t (*activity_size)(const emu_activity *a);
    size_t (*size_at)(const uint8_t *rec, size_t avail);
};

/* Defined by the personality linked into the library. */
EMU_HIDDEN extern const struct emu_vendor emu_vendor_impl;

/* ------------------------------------------------------------------ */
/* Core services for the personality's exported entry points           */
/* ------------------------------------------------------------------ */
typedef enum emu_status {
    EMU_ST_OK = 0,
    EMU_ST_INVALID,        /* bad argument */
    EMU_ST_BUSY,           /* a subscriber is already registered */
    EMU_ST_NOT_SUBSCRIBED, /* the handle is not the current subscriber */
    EMU_ST_END,            /* iterator: no more valid records */
    EMU_ST_UNKNOWN_KIND,   /* iterator: the record's kind is unknown */
    EMU_ST_TRUNCATED       /* iterator: the record runs past the valid size */
} emu_status;

/* Type-erased client functions (the personality casts them back). */
typedef void (*emu_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*emu_generic_fn)(void);

EMU_HIDDEN emu_status emu_core_register_buffers(emu_request_fn request, emu_generic_fn complete);
EMU_HIDDEN emu_status emu_core_enable(emu_rec_kind kind, int enable);
EMU_HIDDEN int emu_core_enabled(emu_rec_kind kind);
/* forced 0: write the records of finished device work, complete the buffer
   being filled and deliver every completed buffer before returning;
   forced 1: the same for every produced record, finished or not. */
EMU_HIDDEN emu_status emu_core_flush_all(int forced);
EMU_HIDDEN emu_status emu_core_flush_period(uint32_t ms);
/* Record API calls of one callback id or not (the vendor's per-call filter;
   enabling the domain's kind again records them all). */
EMU_HIDDEN emu_status emu_core_set_api_recorded(emu_domain domain, uint32_t cbid, int recorded);
/* Detach the client: flush, then forget its kinds, filters, subscriber,
   buffer callbacks and thread-id type (counted in stats.finalized). */
EMU_HIDDEN emu_status emu_core_finalize(void);
/* Whether this thread is in the client's callback for an API call's exit;
   whether device work is still running (the device is not synchronised);
   count a finalize the vendor refused (stats.finalize_refused). */
EMU_HIDDEN int emu_core_in_api_exit(void);
/* Whether `handle` (NULL: anyone but the null client) is subscribed, and
   its callback and userdata. */
EMU_HIDDEN int emu_core_subscriber(void *handle, emu_generic_fn *callback, void **userdata);
EMU_HIDDEN int emu_core_work_running(void);
EMU_HIDDEN void emu_core_finalize_refused(void);
/* A client registered a timestamp callback (emu_stats.timestamp_callbacks). */
EMU_HIDDEN void emu_core_timestamp_callback_registered(void);
/* A client set a device-buffer attribute once a context existed
   (emu_stats.attributes_set_late). */
EMU_HIDDEN void emu_core_attribute_set_late(void);
/* Initialise the emulated driver (once; see injection_env). Every API call
   does so first. */
EMU_HIDDEN void emu_core_driver_init(void);
EMU_HIDDEN int emu_core_driver_initialised(void);
/* Called by a personality's buffer request function (state lock held) each
   time it waited for the consumer to give a buffer back. */
EMU_HIDDEN void emu_core_buffer_waited(void);
/* Records dropped since the previous call (the count restarts at 0). */
EMU_HIDDEN size_t emu_core_take_dropped(void);
EMU_HIDDEN uint64_t emu_core_timestamp(void);
/* A fresh correlation id, from the sequence API calls use (never 0). */
EMU_HIDDEN uint32_t emu_core_next_correlation(void);

/* Iterate: *rec NULL starts at buffer; otherwise advances past *rec.
   On EMU_ST_UNKNOWN_KIND and EMU_ST_TRUNCATED *rec points at the bad record
   (the iteration cannot continue past it). Never reads past valid_size. */
EMU_HIDDEN emu_status emu_core_next_record(uint8_t *buffer, size_t valid_size, uint8_t **rec);

/* Single subscriber. The handle is opaque and non-NULL. */
EMU_HIDDEN emu_status emu_core_subscribe(void **handle, emu_generic_fn callback, void *userdata);
EMU_HIDDEN emu_status emu_core_unsubscribe(void *handle);
EMU_HIDDEN emu_status emu_core_enable_domain(void *handle, emu_domain domain, int enable);

EMU_HIDDEN void emu_core_set_thread_id_type(emu_thread_id_type type);
EMU_HIDDEN emu_thread_id_type emu_core_get_thread_id_type(void);

/* External correlation (vendors that have it): per calling thread. An API
   call made while the stack is not empty produces an EMU_REC_EXTERNAL
   record (innermost id) right before its API record, if that kind is on. */
EMU_HIDDEN emu_status emu_core_push_external(uint32_t external_kind, uint64_t id);
EMU_HIDDEN emu_status emu_core_pop_external(uint32_t external_kind, uint64_t *id);

#ifdef __cplusplus
}
#endif
#endif /* DEVTRACE_EMU_VENDOR_H */

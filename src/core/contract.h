/*
 * The backend contract: what a backend implements (struct dt_backend), and
 * the device facts it reports. The core functions a backend calls are in
 * core/loader.h (loading its library: one rule for every backend),
 * core/pool.h (the buffer pool), core/decode.h (dt__add_device_activity,
 * dt__add_copy, dt__add_fill, dt__add_api_call, the decode caches),
 * core/corr.h (dt__corr_link_current) and core/sink.h: the sink, all a
 * backend sees of the session it records into (records, dt__corr_link, loss
 * counting with dt__loss_add: one reason per fault, the same on every vendor,
 * notes with dt__core_note, which never overwrites; the session itself is
 * opaque outside core).
 *
 * Backends for CUPTI-shaped vendor interfaces do not implement this by hand:
 * they describe their vendor in a `dt_vendor` and the engine
 * (backends/engine.h) implements the contract for them. Internal, not installed.
 */
#ifndef DT_CORE_CONTRACT_H
#define DT_CORE_CONTRACT_H

#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

/* ------------------------------------------------------------------ */
/* Backend contract                                                    */
/* ------------------------------------------------------------------ */
/* Device properties a backend could not read (dt_device_props.absent):
   left out of the trace, never written as 0. */
enum {
    DT_PROP_NAME = 1u << 0,
    DT_PROP_TOTAL_MEM = 1u << 1,
    DT_PROP_COMPUTE_MAJOR = 1u << 2,
    DT_PROP_COMPUTE_MINOR = 1u << 3,
    DT_PROP_THREADS_PER_BLOCK = 1u << 4,
    DT_PROP_THREADS_PER_SM = 1u << 5,
    DT_PROP_REGS_PER_BLOCK = 1u << 6,
    DT_PROP_WARP_SIZE = 1u << 7,
    DT_PROP_SHARED_PER_BLOCK = 1u << 8,
    DT_PROP_SMS = 1u << 9,
    DT_PROP_REGS_PER_SM = 1u << 10,
    DT_PROP_SHARED_PER_BLOCK_OPTIN = 1u << 11,
    DT_PROP_SHARED_PER_SM = 1u << 12,
    DT_PROP_BLOCKS_PER_SM = 1u << 13,
};

typedef struct dt_device_props {
    int valid;
    unsigned absent;          /* DT_PROP_* the backend could not read */
    uint32_t id;
    char name[128];
    uint64_t total_global_mem;
    int compute_major, compute_minor;
    int max_threads_per_block, max_threads_per_sm;
    int max_blocks_per_sm;
    int regs_per_block, regs_per_sm;
    int warp_size;
    uint64_t shared_mem_per_block, shared_mem_per_block_optin, shared_mem_per_sm;
    int num_sms;
} dt_device_props;

#define DT_MAX_DEVICES 64

/* What a backend's vendor does that the rest of devtrace relies on. */
enum {
    /* The vendor owns its activity buffers (sized from buffer_size) and,
       when they are full, makes the program wait rather than drop: too
       small a buffer costs time, not records. */
    DT_BACKEND_LOSSLESS_BUFFERS = 1u << 0,
    /* The vendor cannot record in a child forked without exec once it is
       armed in the parent: CUDA's driver is unusable there (CUPTI does not
       support such a child); roctracer's pool delivers its buffers through
       a thread of its own, which the child does not have, so that a flush
       there, or a third buffer filled, waits forever. The child's session
       asks the vendor for nothing more than fork_child below, counts the
       child's launches as lost (DT_LOSS_FORKED_CHILD) from the API-enter
       callbacks the child still sees, and says so. Without it, the arming
       made in the parent goes on in the child, and the child's session
       keeps what the vendor delivers after the fork. */
    DT_BACKEND_NO_FORK_CHILD = 1u << 1,
    /* The vendor's runtime calls an injection library, named by the
       variable inject_env, before its first device context (CUDA calls
       InitializeInjection in CUDA_INJECTION64_PATH): a session of that
       library waits for the call to attach this backend, and the library
       hands the call to inject_arm. A process that never initialises the
       runtime never loads the vendor library. */
    DT_BACKEND_INJECTION_ENTRY = 1u << 2,
    /* The vendor finds its tools by a function they export
       (rocprofiler-sdk's rocprofiler_configure): the injection library
       exports it and hands the call to tool_configure. */
    DT_BACKEND_TOOL_CONFIGURE = 1u << 3,
    /* PyTorch's profiler (Kineto) records this vendor's device activity
       itself: a second subscriber to the vendor interface would fail or
       take its records, so devtrace.torch leaves the vendor to it
       (dt_backend_flags: DT_BACKEND_FLAG_KINETO_NATIVE). */
    DT_BACKEND_KINETO_NATIVE = 1u << 4,
    /* The backend keeps its completed buffers undecoded in a ring when the
       session asks for a flight recorder (core/flight.h): its start calls
       dt__core_flight_begin, its completion queues buffers with
       dt__ring_push, its stop calls dt__core_flight_end. A session with
       flight_recorder_bytes on a backend without it does not start. */
    DT_BACKEND_FLIGHT_RECORDER = 1u << 5,
};

typedef struct dt_backend dt_backend;

struct dt_backend {
    const char *name;          /* "topspti" */
    const char *vendor;        /* "Enflame GCU (TOPSPTI)" */
    /* Category prefix of API events: "cuda" gives cuda_runtime/cuda_driver;
       "privateuse1" gives privateuse1_runtime/privateuse1_driver. */
    const char *api_category;
    /* The variable that names the vendor library (DEVTRACE_<VENDOR>_LIBRARY),
       or NULL. With "auto", a backend whose library the user named is tried
       first, and its failure is the session's error: what the user asked for
       is never silently replaced by another backend. */
    const char *library_env;
    /* The library's file name when some of the vendor's record kinds need
       it in LD_PRELOAD from the start of the process (MSPTI's memory kinds),
       else NULL: `devtrace record` preloads the library found. */
    const char *preload;
    /* What the vendor records only then, as a note names kinds ("memory
       copies, memsets"); with preload. */
    const char *preload_kinds;
    unsigned caps;             /* DT_BACKEND_* */
    /* The backend's own data, which its methods reach through self (an
       engine vendor's engine, backends/engine.h), or NULL. */
    void *impl;
    /* Every method receives the descriptor it was called through (self),
       as curl's connection filters receive theirs: one implementation
       serves several descriptors (the engine, every CUPTI-shaped vendor),
       and a backend reaches its own data and its other methods without
       naming its descriptor. */
    /* Find and load the vendor library, describe it; arm nothing. */
    dt_status (*probe)(const dt_backend *self, dt_backend_status *status);
    /* Optional: arm what must precede the process's first device context
       (CUPTI's callback registration), cheaply, before any session. */
    dt_status (*prepare)(const dt_backend *self);
    /* Load, arm, subscribe. Report failures with dt__error(). */
    dt_status (*start)(const dt_backend *self, dt_session *s);
    /* Force the vendor to deliver every buffered record now. */
    dt_status (*flush)(const dt_backend *self, dt_session *s);
    /* Disarm, unsubscribe, read the vendor's dropped-record count. */
    dt_status (*stop)(const dt_backend *self, dt_session *s);
    /* The vendor clock (ns). NULL: the backend reports CLOCK_REALTIME. */
    int (*clock)(const dt_backend *self, uint64_t *ns);
    /* Optional: vendor external-correlation push/pop. DT_ERR_BACKEND_UNAVAILABLE:
       the vendor has no such stack (device work is attributed through API
       callbacks alone); any other failure (the vendor's stack is full, or
       refuses) leaves the id to attribute_by_api_enter. */
    dt_status (*push_external)(const dt_backend *self, uint64_t id);
    dt_status (*pop_external)(const dt_backend *self);
    /* Optional: from now on, attribute device work to the innermost id of
       devtrace's stack through the vendor's API-enter callback wherever the
       vendor's own stack does not hold it. DT_OK when that works. */
    dt_status (*attribute_by_api_enter)(const dt_backend *self);
    /* Optional: give the vendor interface to another client in the process
       (`to` names it) for the rest of the process: what devtrace holds is
       flushed into s and let go, and no further vendor call disturbs the
       other client; the session goes on without device activity. */
    dt_status (*release)(const dt_backend *self, dt_session *s, const char *to);
    /* Optional, for a backend with DT_BACKEND_NO_FORK_CHILD, around a fork
       without exec while a session records, called around the program's
       fork() (not from atfork handlers: the vendor's own may hold its
       locks there): fork_prepare and fork_parent run in the parent before
       and after the fork, fork_child in the child (its one thread: no call
       that waits for another). Together they leave the child's copy of the vendor calling
       the API-enter callback on the child's calls, so that its launches are
       counted, and writing no record that nobody would deliver. */
    void (*fork_prepare)(const dt_backend *self);
    void (*fork_parent)(const dt_backend *self);
    void (*fork_child)(const dt_backend *self);
    /* What the vendor's interface does not give (DT_BACKEND_LACKS_*), so
       that the trace leaves it out rather than write a value it does not
       have. 0: nothing. */
    unsigned lacks;
    /* With DT_BACKEND_INJECTION_ENTRY: the variable that names the
       injection library the vendor's runtime calls. */
    const char *inject_env;
    /* With DT_BACKEND_INJECTION_ENTRY: the vendor's runtime calls the
       injection library (s: the library's session in this process, or
       NULL). Attaches the backend to s when s waits for it (*attached 1:
       the trace must then be written from an exit handler registered now,
       before the runtime's own teardown), else arms what must precede the
       first device context for a session to come (*attached 0). */
    dt_status (*inject_arm)(const dt_backend *self, dt_session *s, int *attached);
    /* With DT_BACKEND_TOOL_CONFIGURE: the vendor asks its tools for their
       configuration (the exported function's arguments and result). */
    void *(*tool_configure)(const dt_backend *self, uint32_t version, const char *runtime_version,
                            uint32_t priority, void *client_id);
};

enum {
    /* kernel records carry neither registers per thread nor static shared
       memory (dynamic shared memory only where the launch call gives it):
       the trace writes no register count, shared memory or occupancy */
    DT_BACKEND_LACKS_KERNEL_RESOURCES = 1u << 0,
    /* copies and fills are enabled together: a session that records one has
       the vendor produce both, and devtrace keeps what was asked for */
    DT_BACKEND_LACKS_SEPARATE_COPY_FILL = 1u << 1,
};

#endif /* DT_CORE_CONTRACT_H */

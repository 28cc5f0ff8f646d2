/*
 * The emulated accelerator runtime: the C API that workloads (the scenario
 * runner, tests, benchmarks) call to make an emulated device do work.
 *
 * Every emulator library (libtopspti.so, and the other vendor personalities)
 * exports these `emu_*` symbols next to the vendor's own profiling interface,
 * so a workload that dlopens the emulator drives exactly the device whose
 * records the vendor interface then reports.
 *
 * Each call behaves like one vendor runtime API call made on the calling
 * thread: the subscriber's API callback runs (ENTER, then EXIT) with a fresh
 * correlation id, a runtime API activity record is produced, and the device
 * activity record (kernel, memcpy, memset) carries the same correlation id.
 *
 * Counting. emu_stats() reports what was produced, decided when the call is
 * made: `records[kind]` counts the well-formed records of each kind that the
 * emulator hands to the client; records broken or added by fault injection
 * (timestamps, malformed, unknown_kind, no_buffer) are counted under
 * `faulted[fault]` instead. Faults that lose nothing (late, out_of_order,
 * no_callbacks) are counted in both. A tracer that loses nothing therefore
 * shows exactly records[kind] events of each kind, and exactly faulted[fault]
 * losses of the matching reason.
 *
 * Return values: 0 on success, a negative EMU_E* code otherwise.
 */
#ifndef DEVTRACE_EMU_H
#define DEVTRACE_EMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EMU_API __attribute__((visibility("default")))
#else
#define EMU_API
#endif

enum {
    EMU_OK = 0,
    EMU_EINVAL = -1,     /* bad device, stream, kind, size, clock or fault spec */
    EMU_ENOTSUP = -2,    /* a fault this personality's vendor cannot exhibit */
    EMU_EUNUSABLE = -3,  /* the runtime cannot be used in this process: a child
                            forked without exec after it initialised, on a
                            vendor that forbids it (CUDA's initialization
                            error); the call did nothing */
    EMU_ECAPTURE = -4    /* a synchronisation on a thread capturing a graph
                            (emu_stream_capture), refused as CUDA refuses
                            it; the call did nothing */
};

/* Emulated topology limits. */
#define EMU_MAX_DEVICES 16
#define EMU_MAX_STREAMS 64
#define EMU_DEFAULT_DEVICES 2

/* Direction of a copy (vendor-neutral; each personality maps it). */
typedef enum emu_copy_kind {
    EMU_COPY_HTOD = 1,
    EMU_COPY_DTOH = 2,
    EMU_COPY_DTOD = 3,
    EMU_COPY_HTOH = 4,
    EMU_COPY_PTOP = 5
} emu_copy_kind;

/* Record kinds counted by emu_stats(). */
typedef enum emu_kind {
    EMU_KIND_KERNEL = 0,
    EMU_KIND_MEMCPY = 1,
    EMU_KIND_MEMSET = 2,
    EMU_KIND_RUNTIME = 3,     /* runtime API records */
    EMU_KIND_DRIVER = 4,      /* driver API records (none on TOPSPTI) */
    EMU_KIND_EXTERNAL = 5,    /* external-correlation records */
    EMU_KIND_MARKER = 6,      /* marker records: a range's start and end are two */
    EMU_KIND_COLLECTIVE = 7,  /* collective communication records */
    EMU_KIND_MEMORY = 8,      /* memory allocation and free records */
    EMU_KIND_MEMORY_POOL = 9, /* memory pool records: created, destroyed, trimmed */
    EMU_KIND_COUNT
} emu_kind;

/* Faults. Each is armed with a count and affects exactly that many of the
   records or calls that follow (in production order, across all threads).
   Names are the ones emu_set_faults() and scenario files use. */
typedef enum emu_fault {
    /* the next N device records (kernel/memcpy/memset) get start = end = 0 */
    EMU_FAULT_ZERO_TIMESTAMPS = 0,      /* "zero_timestamps" */
    /* the next N device records get end < start (start and end swapped, +1) */
    EMU_FAULT_REVERSED_TIMESTAMPS,      /* "reversed_timestamps" */
    /* the next N device records last one hour and one second */
    EMU_FAULT_LONG_TIMESTAMPS,          /* "long_timestamps" */
    /* N extra truncated records: a kernel record cut after its first 16
       bytes, always the last record of its buffer (validSize ends inside it);
       the vendor iterator reports it as an error, see the personality docs */
    EMU_FAULT_MALFORMED,                /* "malformed" */
    /* N extra records of a kind the vendor never defined, each the last
       record of its buffer */
    EMU_FAULT_UNKNOWN_KIND,             /* "unknown_kind" */
    /* the next N device records are held back and written only after the
       buffer being filled has been completed (so in a later buffer than
       their API record); nothing is lost */
    EMU_FAULT_LATE,                     /* "late" */
    /* the next N device records are written before their API record, at
       call time; nothing is lost */
    EMU_FAULT_OUT_OF_ORDER,             /* "out_of_order" */
    /* the next N API calls deliver no ENTER/EXIT callbacks (their records
       are still produced, with no external id available to the client) */
    EMU_FAULT_NO_CALLBACKS,             /* "no_callbacks" */
    /* adds N to the vendor's dropped-record count when the next record is
       produced (not when armed, so a client that reads the count as it
       starts still sees them) */
    EMU_FAULT_VENDOR_DROPPED,           /* "vendor_dropped" */
    /* the next N records (any kind) are dropped as if the client had
       returned no buffer; they are added to the dropped-record count */
    EMU_FAULT_NO_BUFFER,                /* "no_buffer" */
    EMU_FAULT_COUNT
} emu_fault;

typedef struct emu_stats {
    /* well-formed records produced, by kind */
    uint64_t records[EMU_KIND_COUNT];
    /* records (or calls, for no_callbacks) affected by each fault */
    uint64_t faulted[EMU_FAULT_COUNT];
    /* records lost because the client's buffer request gave no buffer
       (also in the dropped-record count), in total and by kind (these are
       included in records[kind]) */
    uint64_t dropped_no_buffer;
    uint64_t dropped_no_buffer_kind[EMU_KIND_COUNT];
    /* everything ever added to the vendor's dropped-record count:
       dropped_no_buffer + faulted no_buffer + vendor_dropped */
    uint64_t dropped_reported;
    uint64_t api_calls;              /* emu_* calls that made an API call */
    uint64_t callbacks_delivered;    /* ENTER and EXIT invocations */
    uint64_t buffers_requested;      /* request callbacks that gave a buffer */
    uint64_t buffers_completed;      /* completion callbacks, in total */
    uint64_t buffers_completed_worker; /* of which from the emulator's thread */
    uint64_t records_pending;        /* produced, not yet written to a buffer */
    /* device records a forced flush wrote while their work still ran, or
       (vendors that write records at completion) abandoned when their
       kind was disabled while the work ran; in records[kind]: a tracer
       counts them as unfinished, not as events */
    uint64_t records_unfinished[EMU_KIND_COUNT];
    uint64_t injection_calls;        /* InitializeInjection calls the driver made */
    uint64_t finalized;              /* the client detached the library */
    /* finalize calls refused: made outside an API exit callback while
       device work still ran, which CUPTI's header forbids (the real
       library may crash) */
    uint64_t finalize_refused;
    /* records not yet handed to the client when the runtime tore itself
       down at exit (vendors whose runtime does: CUDA's) */
    uint64_t records_lost_at_teardown;
    /* thread-id type changes while a kind was enabled since load or
       finalize, which CUPTI's header forbids */
    uint64_t thread_id_type_changes_while_profiling;
    /* times a producer waited for the vendor's consumer to give a buffer
       back (vendors whose producers wait rather than drop: roctracer) */
    uint64_t buffer_waits;
    /* What is armed now, read when emu_stats_get is called (emu_stats_reset
       leaves them): the callback subscribers registered (0 or 1), the
       record kinds enabled, and the callback domains enabled for them. All
       0 while no client records: an idle tracer arms nothing. */
    uint64_t subscribers;
    uint64_t kinds_enabled;
    uint64_t callbacks_enabled;
    /* Dropped-record queries made outside a buffer callback that met a
       buffer completion unable to proceed: the caller held a lock the
       client's completion callback takes. CUPTI's query takes the lock
       under which the library calls the buffer callbacks, so the real
       library would deadlock there. With DEVTRACE_EMU_DROPPED_QUERY=
       contended every such query meets a completion in progress on the
       library's thread (an empty buffer handed back). */
    uint64_t lock_order_stalls;
    /* finalize calls made while another thread was inside an
       external-correlation push or pop of the library */
    uint64_t finalize_during_external_call;
    /* finalize calls made on a thread capturing a graph (emu_stream_capture) */
    uint64_t finalize_in_capture;
    /* now (like subscribers): external-correlation calls inside the library */
    uint64_t external_calls_inside;
    /* timestamp callbacks a client registered (CUPTI's
       cuptiActivityRegisterTimestampCallback): from then on every timestamp
       is in the callback's terms */
    uint64_t timestamp_callbacks;
    /* device-buffer attributes a client set once a device context existed:
       CUPTI applies them to the buffers it allocates after, not to those
       of that context's start */
    uint64_t attributes_set_late;
} emu_stats;

/* Reads the environment once (also done implicitly by every call):
   DEVTRACE_EMU_CLOCK_OFFSET_NS (int64, default 0),
   DEVTRACE_EMU_CLOCK_DRIFT_PPM (double, default 0),
   DEVTRACE_EMU_CLOCK_DRIFT_SCALE (double: the drift, the personality's or
   the one above, times this),
   DEVTRACE_EMU_FAULTS (a fault spec, see emu_set_faults),
   DEVTRACE_EMU_DEVICES (1..EMU_MAX_DEVICES, default 2),
   DEVTRACE_EMU_FLUSH_PERIOD_MS (periodic buffer completion, default 0: off),
   DEVTRACE_EMU_FLUSH_PERIOD_FIXED (1: the client's requests for a period
   are accepted and leave it as it is). */
EMU_API int emu_init(void);

/* Personality of this library: its vendor's name in vendors.def. */
EMU_API const char *emu_personality(void);
/* The file name this vendor's library must be preloaded as (LD_PRELOAD,
   from the start of the process) for all of its record kinds, e.g.
   "libmspti.so"; NULL when none. */
EMU_API const char *emu_preload(void);

/* Device clock = CLOCK_REALTIME * (1 + drift_ppm * 1e-6) + offset_ns.
   Set it before any work is queued (stream times are on the device clock).
   EMU_EINVAL from a library whose vendor's timestamps are CLOCK_REALTIME
   itself (MSPTI without msptiGetTimestamp). */
EMU_API int emu_set_clock(int64_t offset_ns, double drift_ppm);
/* The device clock now, in ns (what the vendor timestamp call returns). */
EMU_API uint64_t emu_device_time_ns(void);

/* Arm faults from a spec: comma- or space-separated `name=count` items,
   e.g. "reversed_timestamps=3,vendor_dropped=5". Counts add up. Faults the
   personality's vendor cannot exhibit (roctracer neither drops records nor
   reports drops) are ignored, and stay at 0 in emu_stats. */
EMU_API int emu_set_faults(const char *spec);
/* EMU_ENOTSUP for a fault the personality's vendor cannot exhibit. */
EMU_API int emu_fault_arm(emu_fault fault, uint64_t count);
/* Fault name as used in specs, or NULL for an invalid value. */
EMU_API const char *emu_fault_name(emu_fault fault);
EMU_API const char *emu_kind_name(emu_kind kind);

EMU_API int emu_device_count(void);
EMU_API int emu_set_device_count(int count);

/* Work. device in [0, emu_device_count()), stream in [0, EMU_MAX_STREAMS).
   Work on one stream is serialized; streams run concurrently. */
EMU_API int emu_launch_kernel(int device, int stream, const char *name, const int grid[3],
                              const int block[3], uint64_t duration_ns);

typedef struct emu_kernel_desc {
    int device, stream;
    const char *name;              /* copied; NULL or "" is allowed */
    int grid[3], block[3];
    uint32_t registers_per_thread; /* 0: the emulator's default (32) */
    int32_t static_shared_memory, dynamic_shared_memory;
    uint64_t duration_ns;
} emu_kernel_desc;
EMU_API int emu_launch_kernel_desc(const emu_kernel_desc *desc);

/* copy_kind: emu_copy_kind. async 0: the call returns when the copy ended. */
EMU_API int emu_memcpy(int device, int stream, int copy_kind, uint64_t bytes,
                       uint64_t duration_ns, int async);
EMU_API int emu_memset(int device, int stream, uint64_t bytes, uint32_t value,
                       uint64_t duration_ns, int async);
/* Waits in real time until the stream (stream >= 0) or the whole device
   (stream -1) is idle; device -1: every device. Makes one API call. */
EMU_API int emu_synchronize(int device, int stream);

/* User ranges and instants of the emulated runtime (mstx on Ascend): the
   calling thread starts a range and any thread may end it, by its id (> 0).
   device -1: a host range; otherwise it is also marked on the stream, whose
   device reports its own records of it when the stream gets there. A
   vendor without markers reports nothing (the calls still succeed). */
EMU_API int emu_range_start(const char *name, int device, int stream, uint64_t *id);
EMU_API int emu_range_end(uint64_t id);
EMU_API int emu_mark(const char *name, int device, int stream);

/* A collective (an all-reduce of `count` elements of `data_type`, HCCL's
   numbering: 4 is fp32) on a stream: one API call, and a record of the
   collective the device ran. A vendor without collective records reports
   the call only. */
typedef struct emu_collective_desc {
    int device, stream;
    const char *name;              /* "hcom_allReduce_"; copied */
    const char *group;             /* communicator; copied, NULL: "" */
    const char *algorithm;         /* "RING"; copied, NULL: "" */
    int data_type;
    uint64_t count;
    uint64_t duration_ns;
} emu_collective_desc;
EMU_API int emu_collective(const emu_collective_desc *desc);

/* Device memory (memory EMU_MEM_DEVICE = 3) or page-locked host memory
   (EMU_MEM_PINNED = 2) of a device: one API call and, where the vendor has
   them, a record of the allocation or the free, with the call's
   correlation id. emu_malloc hands out distinct addresses (never 0);
   emu_free takes one of them, once (EMU_EINVAL otherwise). */
EMU_API int emu_malloc(int device, int memory, uint64_t bytes, uint64_t *address);
EMU_API int emu_free(uint64_t address);

/* A stream-ordered memory pool of a device created, destroyed or trimmed
   (op EMU_POOL_*): one API call (cudaMemPoolCreate, cudaMemPoolDestroy,
   cudaMemPoolTrimTo where the vendor has them) and, where the vendor has
   them, a record of it with the call's correlation id. address: the pool's
   (not 0); bytes: its size, or what a trim keeps. */
enum { EMU_POOL_CREATED = 1, EMU_POOL_DESTROYED = 2, EMU_POOL_TRIMMED = 3 };
EMU_API int emu_memory_pool(int device, int op, uint64_t address, uint64_t bytes);

/* A graph of `kernels` kernels (1..64) of duration_ns each, launched on a
   stream with one API call (cudaGraphLaunch where the vendor has one; a
   vendor without graph launches launches nothing): the kernels run one
   after the other and carry the call's correlation id. */
EMU_API int emu_graph_launch(int device, int stream, int kernels, uint64_t duration_ns);

/* The null client (on 1): the vendor interface armed as a tracer arms it
   (every record kind, API callbacks, an external-correlation id on every
   call where the vendor has such records, CUDA 13's call-configuration
   calls filtered as devtrace filters them, buffers handed out, walked with
   the vendor's iterator and taken back) by a client that decodes nothing; off
   (0) flushes and disarms. EMU_NULL_CLIENT_NO_IDS arms it without the
   external-correlation ids (a program that pushes none). What tracing costs
   on the vendor's side, for benchmarks. EMU_EINVAL while another client
   records (subscribed or any kind enabled); a client that only registered
   its buffers gets them back when the null client is off. */
#define EMU_NULL_CLIENT_NO_IDS 2
EMU_API int emu_null_client(int on);

/* The calling thread begins (1) or ends (0) capturing its work into a
   graph, as around cudaStreamBeginCapture and cudaStreamEndCapture (no API
   call is made; work launched meanwhile still runs). While it captures,
   its synchronisations fail with EMU_ECAPTURE, their exit callbacks seeing
   the vendor's error (emu_vendor.capture_error: CUDA's
   cudaErrorStreamCaptureUnsupported, 900), and a finalize on it is counted
   (emu_stats.finalize_in_capture). On a vendor without graphs, nothing. */
EMU_API int emu_stream_capture(int begin);

/* Hold (1) every external-correlation push and pop a client makes inside
   the library, each for at most 10 s, until released (0): a client's call
   in flight, for tests of what may overlap it
   (emu_stats.external_calls_inside counts them). */
EMU_API int emu_hold_external_calls(int hold);

/* Whether the client gets records of the API calls of one callback id
   (driver 1: the driver domain; 0: the runtime's): 0 when it asked not to
   (the vendor's per-call filter, e.g. CUPTI's cuptiActivityEnableDriverApi). */
EMU_API int emu_api_recorded(int driver, uint32_t cbid);

EMU_API void emu_stats_get(emu_stats *out);
/* Zero the counters (not the dropped-record count the vendor reports). */
EMU_API void emu_stats_reset(void);
/* Disarm every fault. */
EMU_API void emu_faults_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* DEVTRACE_EMU_H */

/*
 * devtrace: accelerator activity tracing through each vendor's profiling
 * tools interface, on one clock, written as a Kineto-compatible trace.
 *
 * The whole public C API. Plain C11, opaque handles.
 *
 * Process-wide operations. Vendor profiling interfaces (CUPTI, TOPSPTI, ...)
 * are process-wide: at most ONE session may be started at a time in a
 * process. dt_session_start() on a second session while another is running
 * returns DT_ERR_BUSY. The external-correlation stack and user ranges are
 * per calling thread; they may be used with or without a running session
 * (outside a session they only maintain the stack, which is cheap).
 *
 * Threading. dt_session_* calls on one session must not race each other;
 * dt_external_* and dt_range_* may be called from any thread at any time.
 *
 * Errors. Every call returns a dt_status; dt_last_error() returns a message
 * for the calling thread's last failure that says what to do about it.
 * The library never prints unless DEVTRACE_LOG is on, and never exits.
 */
#ifndef DEVTRACE_DEVTRACE_H
#define DEVTRACE_DEVTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version, written here alone: CMake's project(), the Python package's
   metadata (pyproject.toml) and its devtrace.__version__ (dt_version())
   read these three lines. */
#define DT_VERSION_MAJOR 0
#define DT_VERSION_MINOR 1
#define DT_VERSION_PATCH 0
#define DT_VERSION_STRING DT_VERSION_TEXT_(DT_VERSION_MAJOR, DT_VERSION_MINOR, DT_VERSION_PATCH)
#define DT_VERSION_TEXT_(maj, min, pat) DT_STRINGIFY_(maj) "." DT_STRINGIFY_(min) "." DT_STRINGIFY_(pat)
#define DT_STRINGIFY_(x) #x
/* Compare with DT_VERSION_NUMBER >= DT_MAKE_VERSION(0, 1, 0). */
#define DT_MAKE_VERSION(maj, min, pat) ((maj) * 10000 + (min) * 100 + (pat))
#define DT_VERSION_NUMBER DT_MAKE_VERSION(DT_VERSION_MAJOR, DT_VERSION_MINOR, DT_VERSION_PATCH)

#if defined(__GNUC__)
#define DT_API __attribute__((visibility("default")))
#else
#define DT_API
#endif

/* Library version at run time (may differ from the header's). */
DT_API const char *dt_version(void);

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */
typedef enum dt_status {
    DT_OK = 0,
    DT_ERR_INVALID_ARGUMENT,   /* a NULL handle, a bad value in dt_config */
    DT_ERR_NO_MEMORY,
    DT_ERR_UNKNOWN_BACKEND,    /* the backend name is not in the list */
    DT_ERR_BACKEND_UNAVAILABLE,/* library missing, symbol missing, no driver, ... */
    DT_ERR_BUSY,               /* another session is running in this process,
                                  or another profiler holds the vendor interface */
    DT_ERR_STATE,              /* e.g. stop on a session that is not running */
    DT_ERR_IO,                 /* the trace could not be written */
    DT_ERR_VENDOR,             /* a vendor call failed while recording */
    DT_ERR_EMPTY_STACK,        /* pop on an empty correlation stack */
    DT_ERR_FORMAT,             /* a trace file is corrupt or not a devtrace trace */
    DT_ERR_TIMEOUT             /* a wait ran out (steps that did not come in time) */
} dt_status;

/* Short constant name of a status, e.g. "DT_ERR_BUSY". */
DT_API const char *dt_status_name(dt_status status);
/* Message describing the calling thread's last failed call ("" if none). */
DT_API const char *dt_last_error(void);

/* ------------------------------------------------------------------ */
/* Sessions                                                            */
/* ------------------------------------------------------------------ */
typedef struct dt_session dt_session;

typedef enum dt_format {
    DT_FORMAT_JSON = 0,    /* Chrome trace JSON, Kineto schema */
    DT_FORMAT_JSON_GZ = 1, /* the same, gzip-compressed while it streams */
    DT_FORMAT_PERFETTO = 2, /* Perfetto's protobuf trace (.pftrace): the same
                               rows, events, flows and args, several times
                               smaller and faster to write */
    DT_FORMAT_PERFETTO_GZ = 3 /* the same, gzip-compressed while it streams
                                 (.pftrace.gz) */
} dt_format;

/* What to capture. */
enum {
    DT_CAPTURE_KERNEL = 1u << 0,
    DT_CAPTURE_MEMCPY = 1u << 1,
    DT_CAPTURE_MEMSET = 1u << 2,
    DT_CAPTURE_RUNTIME = 1u << 3,
    DT_CAPTURE_DRIVER = 1u << 4,
    DT_CAPTURE_SYNC = 1u << 5,
    DT_CAPTURE_OVERHEAD = 1u << 6,
    DT_CAPTURE_MEMORY = 1u << 7,   /* device memory allocations and frees */
    DT_CAPTURE_DEFAULT = 0x9f, /* kernel, memcpy, memset, runtime, driver, memory */
    DT_CAPTURE_ALL = 0xff,     /* every kind of record */
    /* Kernels' queued and submitted times (the trace's "queued"), where the
       vendor can give them (CUPTI's latency timestamps): every launch costs
       more, so they are off unless asked, as torch.profiler has them. */
    DT_CAPTURE_KERNEL_QUEUED = 1u << 8
};

typedef struct dt_config {
    /* "auto" (or NULL): the first backend whose vendor library starts;
       otherwise a name listed by dt_backend_count()/dt_backend_name(). */
    const char *backend;
    /* Where dt_session_write(s, NULL, ...) writes. NULL: "devtrace.json". */
    const char *output_path;
    dt_format format;
    uint32_t capture;              /* DT_CAPTURE_* bits */
    /* Records whose duration exceeds this are dropped as implausible and
       counted (DT_LOSS_TIMESTAMP_TOO_LONG). Default: one hour. */
    uint64_t max_duration_ns;
    /* Maximum events kept; further records are counted as DT_LOSS_STORE_FULL.
       0: no limit. */
    uint64_t max_events;
    /* Vendor activity buffers: a pool of count buffers of size bytes,
       allocated up front when the session starts. The CUPTI-shaped backends
       let it grow on demand, up to the larger of 4 x count and count + 2
       per thread that asked for a buffer (CUDA 13 gives every thread that
       uses CUDA a buffer of its own). When all are in use the vendor gets
       no buffer and the loss is counted. */
    size_t buffer_size;            /* default 4 MiB */
    uint32_t buffer_count;         /* default 32 */
    /* Clock calibration is sampled at start and stop and every this many
       milliseconds in between (0 disables the periodic samples). */
    uint32_t calibration_period_ms; /* default 1000 */
    /* The flight recorder: when not 0, the session keeps the vendor's
       completed buffers undecoded in a ring of at most this many bytes; when
       it is full the oldest buffer is recycled and its records counted as
       DT_LOSS_RING_EVICTED. dt_session_dump() writes the ring's window while
       the session goes on recording. 0 (default): off; else at least
       DT_FLIGHT_RECORDER_MIN_BYTES (dt_session_create refuses less). A ring
       smaller than 4 x buffer_size takes smaller buffers (a quarter of it,
       whole pages). */
    uint64_t flight_recorder_bytes;
} dt_config;
/* The smallest flight recorder's ring: 4 buffers of 4 KiB. */
#define DT_FLIGHT_RECORDER_MIN_BYTES 16384u

/* Fill *config with the defaults (also reads nothing from the environment). */
DT_API void dt_config_init(dt_config *config);
/* Apply DEVTRACE_BACKEND and DEVTRACE_OUTPUT (a .pftrace suffix chooses
   DT_FORMAT_PERFETTO, .pftrace.gz DT_FORMAT_PERFETTO_GZ, another .gz
   DT_FORMAT_JSON_GZ), DEVTRACE_KERNEL_QUEUED=1 (adds
   DT_CAPTURE_KERNEL_QUEUED), and DEVTRACE_FLIGHT_RECORDER=SIZE (sets
   flight_recorder_bytes: bytes with an optional K, M or G suffix; 1 or on:
   256 MiB; 0 or off: none; anything else makes dt_session_create fail). */
DT_API void dt_config_from_env(dt_config *config);
/* The format a file name asks for (.json.gz and other .gz, .pftrace,
   .pftrace.gz), or fallback when its suffix names none. */
DT_API dt_format dt_format_of_path(const char *path, dt_format fallback);
/* A format by the name users give it (json, json.gz, perfetto,
   perfetto.gz); -1 for another. */
DT_API int dt_format_by_name(const char *name);
/* The name of a format (as dt_format_by_name takes it), or NULL for a
   number that is no format: the formats are the numbers from 0 up to the
   first NULL. */
DT_API const char *dt_format_name(dt_format format);
/* The file suffix a format writes (".json", ".json.gz", ".pftrace",
   ".pftrace.gz"), or NULL for a number that is no format. */
DT_API const char *dt_format_suffix(dt_format format);
/* 1 when this build writes the format (a gzip format needs zlib), else 0. */
DT_API int dt_format_available(dt_format format);
/* The length of the format suffix that ends path (".json", ".json.gz",
   another ".gz", ".pftrace", ".pftrace.gz"), 0 when none does. */
DT_API size_t dt_format_suffix_length(const char *path);
/* path named for format, snprintf-style into buf: path itself when its
   suffix names format; else path + ".gz" when that does (a gzip format
   after a name of the same trace uncompressed, or of no format); else
   path + the format's suffix. */
DT_API size_t dt_format_path(const char *path, dt_format format, char *buf, size_t size);

DT_API dt_status dt_session_create(const dt_config *config, dt_session **out);
/* Loads the vendor library (only now), arms it, calibrates the clock.
   DT_ERR_BACKEND_UNAVAILABLE with a message naming the library, the
   missing symbol or the missing driver when the backend cannot start.
   Ascend (the "mspti" backend): MSPTI records memory copies, memsets and
   HCCL collectives only when libmspti.so was in LD_PRELOAD when the process
   started; a program that starts a session itself must be run so
   (`devtrace record` does it). Without it the session starts, records the
   rest, and notes in its trace which kinds were not recorded and why. */
DT_API dt_status dt_session_start(dt_session *session);
/* Flushes the vendor, disarms it, calibrates, resolves correlations and
   applies the capture window. Events are readable after this. */
DT_API dt_status dt_session_stop(dt_session *session);
/* Writes the trace atomically (temporary file, then rename). path NULL:
   the config's output_path. */
DT_API dt_status dt_session_write(dt_session *session, const char *path, dt_format format);
/* Writes the trace of a stopped session to an open descriptor (a file, a
   pipe), from where it stands; the descriptor stays open. */
DT_API dt_status dt_session_write_fd(dt_session *session, int fd, dt_format format);
/* Flight recorder (config.flight_recorder_bytes): writes the ring's window
   to fd as a normal trace while the session goes on recording. The window
   starts past the last evicted record, so the trace has no holes. One dump
   of a session at a time: DT_ERR_BUSY while another is being written. */
DT_API dt_status dt_session_dump(dt_session *session, int fd, dt_format format);
DT_API void dt_session_destroy(dt_session *session);

/* Arm a backend ("auto": every backend that needs it) ahead of the first
   session. A session may start at any time: CUPTI also records the
   contexts created before it attached, as torch.profiler's Kineto relies
   on at every profile's start. But attaching to a running program makes
   CUPTI instrument what it has loaded then, which Kineto saw take seconds
   in some models: a program that starts its sessions late takes that cost
   early by calling this in main(). It loads the vendor library and enables
   only cheap device-activity kinds; API tracing is armed only while a
   session runs. What it arms lasts until the next session stops, which
   disarms everything (and detaches CUPTI from CUDA 12.6 on): a program that
   stopped recording pays nothing for it. `devtrace record` arms CUPTI
   itself, when the process initialises CUDA (CUDA's injection entry
   point). Process-wide. */
DT_API dt_status dt_prepare(const char *backend);

/* Name of the backend the session uses ("" before start with "auto"). */
DT_API const char *dt_session_backend(const dt_session *session);

/* ------------------------------------------------------------------ */
/* Correlation: external ids and user ranges (per thread)              */
/* ------------------------------------------------------------------ */
/* Push a host operation id (e.g. a framework op id) on the calling
   thread's stack. Device activity launched while it is the innermost
   entry carries it as "External id". 0 is a valid id. */
DT_API dt_status dt_external_push(uint64_t id);
/* Pop the innermost entry; *id (may be NULL) receives it. */
DT_API dt_status dt_external_pop(uint64_t *id);
/* Innermost id of the calling thread; DT_ERR_EMPTY_STACK if none. */
DT_API dt_status dt_external_top(uint64_t *id);

/* User ranges, like NVTX push/pop: a named host span that device activity
   launched inside it is attributed to. A range is also pushed on the
   external-correlation stack with its own id, which ranges draw from
   DT_RANGE_ID_BASE upward. */
#define DT_RANGE_ID_BASE (UINT64_C(1) << 48)
DT_API dt_status dt_range_push(const char *name, uint64_t *range_id);
DT_API dt_status dt_range_pop(void);

/* A named host operation (a framework op): dt_external_push(id) that is also
   recorded, when a session runs, as a DT_EVENT_OP span (written as a cpu_op
   with its External id), so that a trace resolves the External ids of its
   device activity on its own. The id is the caller's, as for
   dt_external_push. dt_op_pop() and dt_external_pop() both end it. */
DT_API dt_status dt_op_push(const char *name, uint64_t id);
DT_API dt_status dt_op_pop(uint64_t *id);

/* ------------------------------------------------------------------ */
/* Steps                                                               */
/* ------------------------------------------------------------------ */
/* A training step begins (and the one before it ends), on any thread. Steps
   are what an on-demand capture of N steps counts (`devtrace trigger PID
   --steps N`) and what the flight recorder times to find a slow step. A
   user range named "ProfilerStep#<n>" (torch.profiler's) is a step too: step
   n begins when it is pushed. dt_step() numbers its steps 1, 2, ... in the
   order of the calls. While nothing watches steps, a range push costs one
   relaxed atomic load more than it would without steps. */
DT_API dt_status dt_step(void);
/* The number of the latest step that began in this process (0: none yet). */
DT_API uint64_t dt_step_count(void);

/* ------------------------------------------------------------------ */
/* Recorded events                                                     */
/* ------------------------------------------------------------------ */
typedef enum dt_event_kind {
    DT_EVENT_KERNEL = 1,
    DT_EVENT_MEMCPY = 2,
    DT_EVENT_MEMSET = 3,
    DT_EVENT_RUNTIME = 4,
    DT_EVENT_DRIVER = 5,
    DT_EVENT_SYNC = 6,
    DT_EVENT_OVERHEAD = 7,
    DT_EVENT_RANGE = 8,
    DT_EVENT_OP = 9,           /* a host operation pushed with dt_op_push */
    DT_EVENT_COLLECTIVE = 10,  /* a collective communication (all-reduce, ...)
                                  as a device ran it */
    DT_EVENT_MEMORY = 11       /* a device memory allocation or free (an
                                  instant: start_ns is when it happened) */
} dt_event_kind;

typedef enum dt_copy_kind {
    DT_COPY_UNKNOWN = 0, DT_COPY_HTOD, DT_COPY_DTOH, DT_COPY_DTOD,
    DT_COPY_HTOH, DT_COPY_PTOP
} dt_copy_kind;

typedef enum dt_memory_kind {
    DT_MEM_UNKNOWN = 0, DT_MEM_PAGEABLE, DT_MEM_PINNED, DT_MEM_DEVICE,
    DT_MEM_ARRAY, DT_MEM_MANAGED
} dt_memory_kind;

#define DT_TIMESTAMP_UNKNOWN UINT64_MAX

/* A read-only view of one event; times are CLOCK_REALTIME epoch ns. */
typedef struct dt_event {
    dt_event_kind kind;
    uint64_t start_ns, end_ns;
    uint64_t correlation;      /* vendor correlation id; 0 if none */
    int has_external;          /* 0: no External id (not the same as id 0) */
    uint64_t external_id;
    uint32_t device;           /* device events */
    uint32_t stream;           /* device events */
    uint32_t context;
    uint32_t process;          /* API and range events: host pid */
    uint32_t thread;           /* API and range events: host tid */
    const char *name;          /* interned; valid until the session is destroyed */
    union {
        struct {
            int32_t grid[3], block[3];
            uint32_t registers_per_thread;
            uint32_t static_shared_memory, dynamic_shared_memory;
            uint64_t queued_ns, submitted_ns; /* DT_TIMESTAMP_UNKNOWN if not given */
        } kernel;
        struct {
            uint64_t bytes;
            dt_copy_kind copy_kind;
            dt_memory_kind src_kind, dst_kind;
            uint32_t src_device, dst_device; /* peer copies */
        } memcpy;
        struct {
            uint64_t bytes;
            uint32_t value;
            dt_memory_kind memory_kind;
        } memset;
        struct {
            uint32_t cbid;
            int32_t return_code;
            /* 1: the call launches device work (a kernel, cooperative or
               graph launch), by the vendor's callback id, whatever its
               name (CUDA 13's <<<>>> is __cudaLaunchKernel) */
            int launch;
        } api;
        struct {
            uint64_t range_id;     /* also external_id */
            int has_parent;
            uint64_t parent_id;    /* enclosing range or external id */
        } range;
        struct {                   /* the op's id is external_id */
            int has_parent;
            uint64_t parent_id;    /* enclosing range or external id */
        } op;
        struct {                   /* name: the vendor's name of the operation */
            uint64_t count;        /* elements; 0 when the vendor does not say */
            uint64_t bytes;        /* count times the element size; 0 when unknown */
            const char *data_type; /* torch's name ("Float", "BFloat16"), or "" */
            const char *group;     /* communicator (process group), or "" */
            const char *algorithm; /* as the vendor names it ("ring"), or "" */
            double bandwidth_gbps; /* as the vendor measured it; 0 when not given */
        } collective;
        struct {                   /* name: "[memory]" */
            uint64_t address;
            uint64_t bytes;        /* of the block allocated or freed; 0 when
                                      the vendor does not say */
            int is_free;           /* 0: allocation, 1: free */
            dt_memory_kind memory_kind;
        } memory;
    } u;
} dt_event;

/* What a kind of event is (dt_event_kind_class): the one answer devtrace's
   writers, its Kineto plugin and its Python package all go by. */
enum {
    /* on a device: device, stream and context say where, and a trace puts it
       on the device's row of that stream (kernels, copies, fills,
       synchronisations, overhead, collectives, memory allocations and frees) */
    DT_EVENT_CLASS_DEVICE = 1u << 0,
    /* on a host thread: process and thread say which (runtime and driver
       API calls, ranges, operations) */
    DT_EVENT_CLASS_HOST = 1u << 1,
    /* device work a host call launched: its duration is the device time of
       the operation (External id) that launched it (kernels, copies, fills,
       collectives) */
    DT_EVENT_CLASS_LAUNCHED = 1u << 2,
    /* a runtime or driver API call: its correlation id pairs it with the
       device work it launched, the start of a flow (runtime, driver) */
    DT_EVENT_CLASS_API = 1u << 3
};
/* The DT_EVENT_CLASS_* bits of a kind; 0 for a number that is no kind. */
DT_API unsigned dt_event_kind_class(dt_event_kind kind);

/* Number of events kept after dt_session_stop(). */
DT_API size_t dt_session_event_count(const dt_session *session);
/* Copy event number index (0 <= index < count) into *event. */
DT_API dt_status dt_session_event(const dt_session *session, size_t index, dt_event *event);
/* Copy events first .. first+count-1 (as many as exist) into out, an array
   of count dt_event; returns how many were copied (0 before stop). One call
   for a bulk reader such as the Python binding's numpy arrays. */
DT_API size_t dt_session_events(const dt_session *session, size_t first, size_t count, dt_event *out);

/* The user range that encloses external id `id`: the range the operation
   was pushed in (dt_external_push or dt_op_push inside dt_range_push), after
   stop. Returns 1 and sets *range_id when there is one, else 0. A range's
   own enclosing entry is its event's u.range.parent_id. */
DT_API int dt_session_external_range(const dt_session *session, uint64_t id, uint64_t *range_id);

/* Name of host thread tid as the session saw it while the thread lived
   (the kernel's thread name, read when the thread first pushed, linked or
   recorded, and at stop), or NULL when unknown. Valid until the session is
   destroyed. */
DT_API const char *dt_session_thread_name(const dt_session *session, uint32_t tid);

/* The devices the backend described, as the comma-separated JSON objects
   that go into the trace's "deviceProperties" list (Kineto's keys: id, name,
   totalGlobalMem, computeMajor, ...). Writes at most size bytes including
   the NUL, like snprintf, and returns the length of the whole text. */
DT_API size_t dt_session_device_properties(const dt_session *session, char *buf, size_t size);
/* The session's notes, as the trace's "devtrace" key writes them: what it
   could not record, or recorded in part, and why, one text per topic
   ("kinds": the record kinds the vendor would not enable, e.g. MSPTI's
   memory copies and memsets without libmspti.so in LD_PRELOAD). Note index
   (from 0) in *key and *text (either may be NULL), valid until the session
   is destroyed; returns 0 past the last note. Read them after
   dt_session_stop. */
DT_API int dt_session_note_at(const dt_session *session, size_t index, const char **key, const char **text);

/* Loss accounting: every record not kept is counted under one reason. */
typedef enum dt_loss_reason {
    DT_LOSS_TIMESTAMP_ZERO = 0,   /* start or end is zero (incl. "no timing") */
    DT_LOSS_TIMESTAMP_REVERSED,   /* end before start */
    DT_LOSS_TIMESTAMP_TOO_LONG,   /* longer than max_duration_ns */
    DT_LOSS_MALFORMED,            /* a record that does not decode */
    DT_LOSS_UNKNOWN_KIND,         /* a record kind devtrace does not know */
    DT_LOSS_NO_BUFFER,            /* the buffer pool was empty when asked */
    DT_LOSS_VENDOR_DROPPED,       /* the vendor says it dropped records */
    DT_LOSS_OUTSIDE_WINDOW,       /* not inside the capture window */
    DT_LOSS_STORE_FULL,           /* max_events reached, or out of memory */
    DT_LOSS_UNFINISHED,           /* device work (or an API call) still running
                                     when the session stopped: the vendor gave
                                     it without an end, it ends after stop, or
                                     (vendors that write a record at completion)
                                     its launch call never got one */
    DT_LOSS_FORKED_CHILD,         /* a launch made in a child forked without
                                     exec where the vendor cannot record
                                     (counted per launch call; see
                                     docs/trace-format.md) */
    DT_LOSS_RING_EVICTED,         /* the flight recorder's ring was full: the
                                     oldest buffer's records were recycled */
    DT_LOSS_COUNT
} dt_loss_reason;

/* Stable snake_case name, as written in the trace ("timestamp_zero"...). */
DT_API const char *dt_loss_reason_name(dt_loss_reason reason);
DT_API uint64_t dt_session_loss(const dt_session *session, dt_loss_reason reason);
DT_API uint64_t dt_session_loss_total(const dt_session *session);

/* ------------------------------------------------------------------ */
/* Backends                                                            */
/* ------------------------------------------------------------------ */
DT_API size_t dt_backend_count(void);
DT_API const char *dt_backend_name(size_t index);

typedef struct dt_backend_status {
    const char *name;        /* "topspti" */
    const char *vendor;      /* "Enflame GCU (TOPSPTI)" */
    int available;           /* the vendor library was found and loads */
    char library[512];       /* path of the library found, or "" */
    char version[64];        /* vendor-reported version, or "" */
    char reason[1024];       /* why not available, or degraded features */
} dt_backend_status;

/* Look for the backend's vendor library and describe it. Loads the library
   to read its version; arms nothing. What the backend cannot record in this
   process though its library loads is said in reason (with available 1):
   e.g. MSPTI's memory copies and memsets when libmspti.so was not in
   LD_PRELOAD when the process started, in the words of the note a session
   would write. */
DT_API dt_status dt_backend_probe(const char *name, dt_backend_status *status);

/* What a backend's vendor interface is to other tools in the process
   (dt_backend_flags). */
enum {
    /* PyTorch's profiler (Kineto) records this vendor's device activity
       itself (CUPTI, through ProfilerActivity.CUDA): devtrace's Kineto
       plugin (devtrace.torch) leaves it to it. */
    DT_BACKEND_FLAG_KINETO_NATIVE = 1u << 0,
};

/* The backend's DT_BACKEND_FLAG_* in *flags (without loading anything);
   DT_ERR_UNKNOWN_BACKEND for a name not listed. */
DT_API dt_status dt_backend_flags(const char *name, unsigned *flags);

/* The environment variable that names backend index's vendor library
   ("DEVTRACE_TOPSPTI_LIBRARY"), or NULL when it has none (or index is past
   the last backend). With "auto", a backend whose library the variable
   names is tried first, and its failure is the session's error. */
DT_API const char *dt_backend_library_env(size_t index);
/* The file name of backend index's vendor library when the vendor records
   some kinds only if that library was in LD_PRELOAD when the process
   started (Ascend's "libmspti.so"; see dt_session_start), else NULL (also
   when index is past the last backend). `devtrace record` preloads it. */
DT_API const char *dt_backend_preload(size_t index);

/* ------------------------------------------------------------------ */
/* On demand: listening for `devtrace trigger`                         */
/* ------------------------------------------------------------------ */
/* Makes this process listen for capture requests on a local socket that
   only its user (or root) may use (docs/on-demand.md). While idle nothing
   is armed: no vendor subscription, callbacks or activity kinds. A request
   arms the vendor with config (NULL: dt_config_init and
   dt_config_from_env), captures the window asked for (a duration, or N
   steps from a step boundary), writes the trace to the descriptor the
   client passed, and disarms; a window cut short (its steps late, or the
   process stopping to listen or exiting during it) is written as far as it
   came and answered as partial. A capture records without a flight recorder
   whatever config says. A request that comes while another session of this
   process runs is answered busy; `devtrace trigger --dump` writes the
   flight recorder of the session running in the process, if it has one.
   The process stops listening at its exit (a capture under way is cut
   short and written). DT_ERR_STATE when this process already listens;
   DT_ERR_IO for the socket's directory, with why. */
DT_API dt_status dt_control_listen(const dt_config *config);
/* Stops listening and removes the socket (waits for a running capture). */
DT_API void dt_control_stop(void);
/* 1 while this process listens. */
DT_API int dt_control_listening(void);

/* Captures taken by the program itself, through its own profiler (e.g.
   torch.profiler, fed by devtrace's Kineto plugin): listen with
   dt_control_listen_external(), poll dt_control_take() at step boundaries,
   run the capture, write the trace to request.fd, and report with
   dt_control_done(). devtrace arms nothing itself in this mode. */
typedef struct dt_capture_request {
    uint64_t duration_ns;   /* 0: the window is steps */
    uint64_t steps;         /* 0: the window is duration_ns */
    uint64_t step_multiple; /* begin at a step whose number is a multiple of
                               this (0 or 1: the next step) */
    uint64_t timeout_ns;    /* give up waiting for steps after this */
    int fd;                 /* the output the client opened; the program
                               writes the trace there and does not close it */
    char format[16];        /* as dt_format_by_name takes it ("json", ...) */
} dt_capture_request;
DT_API dt_status dt_control_listen_external(void);
/* 1 and *request when a capture waits to be taken (it is then the
   program's until dt_control_done), 0 when none. One relaxed atomic load
   when none. */
DT_API int dt_control_take(dt_capture_request *request);
/* The taken capture ended: status DT_OK with written (0 or 1), the events
   written and a summary of what was lost; or an error status with written
   1: a window cut short (timed out, stopped), whose trace was written as
   far as it came: kept, answered as partial, text saying why and then what
   was lost; or an error status with written 0 and text as its message:
   DT_ERR_BUSY is answered busy, DT_ERR_TIMEOUT timeout,
   DT_ERR_INVALID_ARGUMENT a bad request, any other cannot-arm. The client
   gets the reply. */
DT_API dt_status dt_control_done(dt_status status, int written, uint64_t records, const char *text);

/* ------------------------------------------------------------------ */
/* Bindings                                                            */
/* ------------------------------------------------------------------ */
/* This header as the library was built from it, for a binding in another
   language that declares the types, constants and functions again (the
   Python package's ctypes), to check them when it loads: declaration
   index (from 0) in *scope, *name, *type, *value and *size (any may be
   NULL); returns 0 past the last. Every struct, member, enum, enumerator,
   numeric constant and function of this header is listed:
   - a struct or an enum: scope "", name "dt_event", type "struct" or
     "enum", value 0, size its sizeof;
   - a struct's member: scope the struct, name its path ("kind",
     "u.kernel.grid"), type its C type ("uint64_t", "int32_t[3]",
     "const char *"; "struct" or "union" for one without a name), value its
     offset, size its sizeof;
   - an enumerator or a numeric macro: scope its enum ("dt_event_kind"; ""
     for an enum without a name and for a macro), name "DT_EVENT_KERNEL",
     type "constant", value its value (as uint64_t), size 0;
   - a function: scope "", name "dt_session_events", type its signature
     ("size_t (const dt_session *, size_t, size_t, dt_event *)"), value 0,
     size 0.
   The strings are static. */
DT_API int dt_abi_entry(size_t index, const char **scope, const char **name, const char **type, uint64_t *value,
                        uint64_t *size);

#ifdef __cplusplus
}
#endif
#endif /* DEVTRACE_DEVTRACE_H */

/*
 * A CUPTI-shaped vendor as the engine (engine.h) sees it: one const
 * `dt_vendor` with names, where its library is, symbol names, capabilities
 * as flags, constants (result codes, kinds, domains), record layouts chosen
 * at run time, name tables and its clock. Nothing here names a vendor.
 */
#ifndef DT_BACKENDS_VENDOR_H
#define DT_BACKENDS_VENDOR_H

#include "backends/backend.h"

/* ------------------------------------------------------------------ */
/* Record layouts                                                      */
/* ------------------------------------------------------------------ */
/* What a record is to the engine. */
typedef enum dt_record_class {
    DT_RC_OTHER = 0,   /* a kind the vendor has and the engine does not decode */
    DT_RC_KERNEL,
    DT_RC_MEMCPY,      /* copies; peer copies carry source and destination devices */
    DT_RC_MEMSET,
    DT_RC_RUNTIME,     /* API records, runtime domain */
    DT_RC_DRIVER,      /* API records, driver domain */
    DT_RC_EXTERNAL,    /* external correlation: vendor correlation -> external id */
    DT_RC_SYNC,
    DT_RC_OVERHEAD,
    DT_RC_DEVICE,      /* device description */
    DT_RC_COUNT
} dt_record_class;

/* The fields the engine reads, across all record classes. */
typedef enum dt_field_id {
    DT_F_START, DT_F_END, DT_F_CORRELATION,
    DT_F_DEVICE, DT_F_CONTEXT, DT_F_STREAM,
    /* kernels */
    DT_F_GRID_X, DT_F_GRID_Y, DT_F_GRID_Z, DT_F_BLOCK_X, DT_F_BLOCK_Y, DT_F_BLOCK_Z,
    DT_F_REGISTERS, DT_F_STATIC_SHARED, DT_F_DYNAMIC_SHARED, DT_F_NAME, DT_F_QUEUED, DT_F_SUBMITTED,
    /* copies and fills */
    DT_F_BYTES, DT_F_COPY_KIND, DT_F_SRC_KIND, DT_F_DST_KIND, DT_F_FLAGS,
    DT_F_SRC_DEVICE, DT_F_DST_DEVICE, DT_F_VALUE, DT_F_MEMORY_KIND,
    /* API calls */
    DT_F_CBID, DT_F_PROCESS, DT_F_THREAD, DT_F_RETURN_VALUE,
    /* external correlation */
    DT_F_EXTERNAL_KIND, DT_F_EXTERNAL_ID,
    /* synchronization and overhead */
    DT_F_SYNC_TYPE, DT_F_OVERHEAD_KIND, DT_F_OBJECT_KIND,
    DT_F_OBJECT_ID0, DT_F_OBJECT_ID1, DT_F_OBJECT_ID2, /* the 12-byte object id, as 3 words */
    /* device descriptions */
    DT_F_DEV_ID, DT_F_DEV_NAME, DT_F_DEV_GLOBAL_MEMORY, DT_F_DEV_CC_MAJOR, DT_F_DEV_CC_MINOR,
    DT_F_DEV_THREADS_PER_BLOCK, DT_F_DEV_WARPS_PER_SM, DT_F_DEV_THREADS_PER_WARP, DT_F_DEV_BLOCKS_PER_SM,
    DT_F_DEV_REGS_PER_BLOCK, DT_F_DEV_REGS_PER_SM, DT_F_DEV_SHMEM_PER_BLOCK, DT_F_DEV_SHMEM_PER_SM,
    DT_F_DEV_SMS,
    DT_F_COUNT
} dt_field_id;

/* Where a field sits in a record: an unsigned little-endian integer (or a
   pointer) of size 1, 2, 4 or 8 bytes at off. size 0: the record has no such
   field (it reads as 0). */
typedef struct dt_field {
    uint16_t off;
    uint8_t size;
} dt_field;

#define DT_FIELD(type, member) {offsetof(type, member), sizeof(((type *)0)->member)}

typedef struct dt_decoder dt_decoder;

/* A record the class decoders cannot read as it is (a name string where
   they expect a callback id, ranges paired across records, collectives):
   the vendor's own decoder. Called with the session lock held and at least
   the layout's size readable at rec; cache lives for the buffer. */
typedef void (*dt_record_decoder)(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);

/* One record kind of a vendor. */
typedef struct dt_record_layout {
    uint32_t kind;             /* the vendor's activity kind */
    uint8_t cls;               /* dt_record_class */
    uint32_t size;             /* bytes from one record to the next */
    const char *what;          /* for notes: "marker" */
    dt_field f[DT_F_COUNT];
    dt_record_decoder decode;  /* NULL: the engine's decoder of its class */
} dt_record_layout;

/* The layouts a range of library versions writes. */
typedef struct dt_layout_set {
    uint32_t min_version;      /* lowest vendor API version that writes these */
    const char *what;          /* "CUDA 13 (Kernel10, Memcpy6, Memset4)" */
    /* Up to this version the sizes are the library's own (headers, measured), not
       inferred: bytes after the last record are a record cut short. 0: never. */
    uint32_t sizes_known_up_to;
    const dt_record_layout *records;  /* ends with an entry of size 0 */
    /* their walk (DT_LAYOUT_SET, engine/engine_walk.h); NULL: over the plans */
    void (*walk)(const dt_decoder *, dt_session *, uint8_t *, size_t, int (*)(uint8_t *, size_t, void **));
} dt_layout_set;

/* ------------------------------------------------------------------ */
/* The vendor                                                          */
/* ------------------------------------------------------------------ */
/* The vendor entry points the engine uses. Their names are the vendor's
   prefix followed by the suffix engine.c gives each, unless a vendor says
   otherwise (dt_vendor.symbols). */
typedef enum dt_vendor_symbol {
    DT_SYM_ENABLE, DT_SYM_DISABLE, DT_SYM_REGISTER_CALLBACKS, DT_SYM_FLUSH_ALL, DT_SYM_NEXT_RECORD,
    DT_SYM_TIMESTAMP,
    /* optional */
    DT_SYM_DROPPED, DT_SYM_PUSH_EXTERNAL, DT_SYM_POP_EXTERNAL, DT_SYM_VERSION, DT_SYM_RESULT_STRING,
    DT_SYM_SUBSCRIBE, DT_SYM_UNSUBSCRIBE, DT_SYM_ENABLE_DOMAIN, DT_SYM_ENABLE_ALL_DOMAINS,
    DT_SYM_CALLBACK_NAME, DT_SYM_SET_THREAD_ID_TYPE, DT_SYM_FLUSH_PERIOD,
    /* used only where the descriptor asks for what they do */
    DT_SYM_SUBSCRIBE_NAMED,      /* subscribe with a name (dt_vendor_callbacks.subscribe_named) */
    DT_SYM_ENABLE_AND_DUMP,      /* dt_vendor.dump_kind */
    DT_SYM_ENABLE_RUNTIME_API,   /* dt_vendor_api_ids.quiet_runtime */
    DT_SYM_FINALIZE,             /* dt_vendor_activity.finalize_from */
    DT_SYM_LATENCY_TIMESTAMPS,   /* DT_CAPTURE_KERNEL_QUEUED */
    DT_SYM_ENABLE_CALLBACK,      /* dt_vendor_callbacks.context_created */
    DT_SYM_ENABLE_DRIVER_API,    /* dt_vendor_api_ids.quiet_driver */
    DT_SYM_SET_ATTRIBUTE,        /* dt_vendor.attributes */
    DT_SYM_INIT,                 /* dt_vendor_library.init_on_load */
    DT_SYM_COUNT
} dt_vendor_symbol;
#define DT_SYM_REQUIRED_COUNT DT_SYM_DROPPED

/* A symbol name in dt_vendor.symbols that means "this vendor has none". */
#define DT_SYM_NONE ""

/* Capabilities. */
enum {
    /* the buffer-completion callback takes (context, stream, ...) */
    DT_VCAP_COMPLETE_WITH_CONTEXT = 1u << 0,
    /* the dropped-record query takes (context, stream, &count) */
    DT_VCAP_DROPPED_WITH_CONTEXT = 1u << 1,
    /* describes devices in records (DT_RC_DEVICE), once per device, possibly
       before any session: descriptions are kept for later sessions */
    DT_VCAP_DEVICE_RECORDS = 1u << 2,
    /* cheap kinds are armed before the process's first device context */
    DT_VCAP_EARLY_ARMING = 1u << 3,
    /* the vendor's iterator cannot be trusted (it returns stale records):
       buffers are walked by the layouts' record sizes */
    DT_VCAP_OWN_STRIDES = 1u << 4,
    /* the layouts are devtrace's own declaration, which only devtrace's
       emulator implements: a library without the emulator marker is
       refused, and (SDK build) one with it too */
    DT_VCAP_LAYOUT_DECLARED = 1u << 5,
    DT_VCAP_LAYOUT_FROM_SDK = 1u << 6,
    /* the API callbacks' data carries no usable correlation id: device work
       is never linked through the API-enter callback, and the callback
       domains stay off (subscribing still tells that another profiler
       holds the vendor) */
    DT_VCAP_NO_API_ENTER_LINKS = 1u << 7,
    /* at stop the subscriber goes before the final flush (the vendor drains
       what is in flight only when its subscriber leaves) */
    DT_VCAP_UNSUBSCRIBE_FIRST = 1u << 8,
    /* records are CLOCK_REALTIME ns unless the library's timestamp function
       (then optional) says otherwise */
    DT_VCAP_CLOCK_REALTIME = 1u << 9,
    /* the buffer-request callback takes (buffer, size): no record count */
    DT_VCAP_REQUEST_PLAIN = 1u << 10,
    /* the timestamp function returns the time (uint64_t f(void)) rather
       than a result code with the time through a pointer */
    DT_VCAP_TIMESTAMP_RETURNED = 1u << 11,
};

/* A value's name (synchronization types, overhead kinds, result codes). */
typedef struct dt_value_name {
    uint32_t value;
    const char *name;
} dt_value_name;

/* The vendor's result codes the engine tells apart. */
typedef struct dt_vendor_results {
    int success, invalid_parameter, max_limit_reached, queue_empty, invalid_kind, not_compatible,
        not_initialized, multiple_subscribers, unknown;
    /* what enabling a kind a release does not have returns (0: as any
       other refusal); the kind's alternative is tried then too */
    int kind_not_supported;
    /* names of result codes, for a vendor without a result-string function */
    const dt_value_name *names;
    uint32_t name_count;
} dt_vendor_results;

/* One activity kind to enable. */
typedef struct dt_kind_spec {
    uint32_t kind;
    /* enabled instead when `kind` is refused as not compatible (the PPU
       stack allows one of KERNEL and CONCURRENT_KERNEL) or not supported
       (a kind of later releases); 0: none */
    uint32_t alternative;
    uint32_t capture;          /* DT_CAPTURE_* bit it serves; 0: always */
    uint8_t required;          /* the session does not start without it */
    uint8_t cheap;             /* armed early, before the first session */
    const char *what;          /* "kernels" */
} dt_kind_spec;

typedef struct dt_vendor dt_vendor;

/* Why a vendor call failed, when the vendor can say more than its result
   code: status and message (filled by the vendor's explain_failure). */
typedef struct dt_failure {
    dt_status status;
    char message[600];
} dt_failure;

/* A table and its length, for the descriptor's counted members. */
#define DT_COUNTED(array) array, (uint32_t)(sizeof(array) / sizeof((array)[0]))

/* Where the library is, and how this build may use it. */
typedef struct dt_vendor_library {
    dt_library_spec spec;             /* override_env: taken from the backend */
    const char *symbol_prefix;        /* "cupti" */
    const char *symbols[DT_SYM_COUNT];/* names that do not follow the prefix rule */
    const char *driver_library;       /* checked when probing; NULL: none */
    const char *driver_name;          /* "NVIDIA", in "no NVIDIA driver" */
    /* exported only by devtrace's emulator of this vendor */
    const char *emulator_marker;
    /* DT_VCAP_LAYOUT_*: the SDK headers that would give the real layout
       ("the TopsRider SDK headers (topspti_activity.h)"), and how to rebuild */
    const char *sdk_headers, *sdk_rebuild_hint;
    /* Said in the probe and the trace when the library is not devtrace's
       emulator: layouts and numbers inferred rather than read from the
       vendor's headers. NULL: none. */
    const char *layout_note;
    /* The library must be initialised (<prefix>Init, then required) before
       any other call: called once for each library the engine adopts. */
    int init_on_load;
} dt_vendor_library;

/* Constants of the activity API. */
typedef struct dt_vendor_activity {
    uint32_t flush_forced;            /* FlushAll flag that delivers partial buffers */
    uint32_t flush_period_ms;         /* periodic delivery while recording; 0: not set */
    uint32_t thread_id_system;        /* thread-id type: Linux tids */
    uint32_t external_kind;           /* the external-correlation kind devtrace pushes */
    /* Library version from which <prefix>Finalize after a session's final
       flush is safe: the library then costs the program nothing until the
       next session. 0: never finalized. */
    uint32_t finalize_from;
} dt_vendor_activity;

/* Subscribe through the vendor's named subscribe `fn` (DT_SYM_SUBSCRIBE_NAMED)
   as `name`; when another client holds the vendor, its name goes to holder
   ("" when the vendor does not say). Returns the vendor's result. */
typedef int (*dt_subscribe_named_fn)(void *fn, void **subscriber, void *callback, void *userdata,
                                     const char *name, char *holder, size_t holder_len);

/* The API callbacks and their data. */
typedef struct dt_vendor_callbacks {
    uint32_t domain_runtime, domain_driver;
    uint32_t api_enter;               /* callback site value of an API entry */
    uint16_t site_offset, correlation_offset; /* in the callback data (u32 each) */
    /* where the callback data points to the call's result (a 32-bit value,
       0 for success), valid at an API exit */
    uint16_t result_offset;
    /* Optional: how to call the vendor's named subscribe, which tells other
       tools who holds the vendor and tells devtrace who does when it is
       refused. NULL: plain subscribe only. */
    dt_subscribe_named_fn subscribe_named;
    /* Optional (0: none): the callback domain and id of a device context's
       creation, enabled one by one (DT_SYM_ENABLE_CALLBACK). Calls a
       vendor may refuse while its driver initialises, before any context
       exists (the dump kind, the runtime filter of api_ids.quiet_runtime),
       are made again when a context is created. */
    uint32_t domain_resource, context_created;
} dt_vendor_callbacks;

/* Callback ids with a meaning of their own, in the vendor's numbering. */
typedef struct dt_vendor_api_ids {
    /* Calls that launch device work (kernels, cooperative and graph
       launches): their events are marked as launches (dt_event.u.api.launch),
       whatever the call is named. */
    const uint32_t *launch_runtime;
    uint32_t launch_runtime_count;
    const uint32_t *launch_driver;
    uint32_t launch_driver_count;
    /* Runtime calls devtrace asks the vendor not to record, where the
       library can filter them (DT_SYM_ENABLE_RUNTIME_API): bookkeeping the
       runtime makes around every launch, which doubles the API records and
       launches no work. */
    const uint32_t *quiet_runtime;
    uint32_t quiet_runtime_count;
    /* The same for driver calls (DT_SYM_ENABLE_DRIVER_API), made after the
       driver kind is enabled (which resets such choices). */
    const uint32_t *quiet_driver;
    uint32_t quiet_driver_count;
    /* Graph launches whose correlation ids libraries older than API version
       graph_ids_from give wrong in a session after the process's first
       (0: none): counted in such sessions, and noted. */
    const uint32_t *graph_runtime;
    uint32_t graph_runtime_count;
    const uint32_t *graph_driver;
    uint32_t graph_driver_count;
    uint32_t graph_ids_from;
    /* Calls that synchronise the device or a stream: the exit of one that
       succeeded is where a library finalized only from an API exit
       callback (dt_vendor_activity.finalize_from) is detached. A thread
       capturing a graph cannot synchronise, so the detach never lands in
       a capture. */
    const uint32_t *sync_runtime;
    uint32_t sync_runtime_count;
    const uint32_t *sync_driver;
    uint32_t sync_driver_count;
} dt_vendor_api_ids;

/* API names: the name function's first argument for runtime and driver
   calls (a callback domain, or an activity kind) and how many callback ids
   to ask; static tables by callback id (generated from vendor headers, or
   inferred), used where the name function gives none; the fallback
   ("cudaRuntime": "cudaRuntime#<cbid>"). */
typedef struct dt_vendor_names {
    uint32_t arg_runtime, arg_driver, limit;
    const char *const *runtime;
    uint32_t runtime_count;
    const char *const *driver;
    uint32_t driver_count;
    const char *runtime_fallback, *driver_fallback;
} dt_vendor_names;

/* An activity attribute the engine sets (DT_SYM_SET_ATTRIBUTE) once the
   library is loaded (or detached and armed again), before any kind is
   enabled: an unsigned value of `size` bytes. */
typedef struct dt_vendor_attribute {
    uint32_t id;
    uint32_t size;
    uint64_t value;
    const char *what;                 /* "device buffer size (bytes)" */
} dt_vendor_attribute;

/* The vendor's activity kinds, and the layouts its library versions write. */
typedef struct dt_vendor_records {
    const dt_kind_spec *kinds;
    uint32_t kind_count;
    const dt_layout_set *layout_sets; /* newest first */
    uint32_t layout_set_count;
    /* Records counted rather than stored (at most DT_ENGINE_MAX_COUNTED):
       the vendor's decoders add to dt_decoder.counted[i], and the session
       gets a note `counted_key` at stop, "<counted_what>: 2 created, ..." */
    const char *const *counted;
    uint32_t counted_count;
    const char *counted_key, *counted_what;
} dt_vendor_records;

/* The vendor's enums in devtrace's terms, indexed by the vendor's value. */
typedef struct dt_vendor_enums {
    const uint8_t *copy_kinds;        /* -> dt_copy_kind */
    uint32_t copy_kind_count;
    const uint8_t *memory_kinds;      /* -> dt_memory_kind */
    uint32_t memory_kind_count;
    uint32_t copy_async_flag, fill_async_flag;
    uint32_t peer_copy_kind;          /* copy kind whose records name both devices */
    const dt_value_name *sync_names;  /* synchronization type -> name */
    uint32_t sync_name_count;
    uint32_t sync_no_stream;          /* stream id of a context-wide synchronization */
    const dt_value_name *overhead_names;
    uint32_t overhead_name_count;
    /* object kinds of overhead records whose id is (process, thread) */
    uint32_t object_process, object_thread;
} dt_vendor_enums;

struct dt_vendor {
    /* the backend this describes: name, vendor text, API category and the
       variable naming the library live there */
    const dt_backend *backend;
    dt_vendor_library library;
    unsigned caps;                    /* DT_VCAP_* */
    dt_vendor_results results;
    dt_vendor_activity activity;
    dt_vendor_callbacks callbacks;
    dt_vendor_names names;
    dt_vendor_records records;
    dt_vendor_enums enums;
    dt_vendor_api_ids api_ids;
    /* A kind enabled with <prefix>ActivityEnableAndDump where the library
       has it, which also delivers records of what exists already: the
       devices of a driver initialised before devtrace armed. 0: none. */
    uint32_t dump_kind;
    const char *clock_domain;         /* what the vendor's timestamps count */
    /* Activity attributes set deliberately rather than left to the
       library's defaults, which releases change; the session's note
       `attributes_key` says what each was set to, or the library's answer. */
    const dt_vendor_attribute *attributes;
    uint32_t attribute_count;
    const char *attributes_key;
    /* Optional: the devices as the vendor's driver describes them, asked
       only where the driver is already loaded in the process (never loaded
       for this): the authority on device properties that activity records
       give partly, or not at all for devices described before devtrace
       armed. Fills at most max entries (each valid, with its id) and
       returns how many. */
    uint32_t (*query_devices)(dt_device_props *out, uint32_t max);
    /* Optional: synchronise the device through the vendor's driver API,
       only where the driver is loaded already. A library finalized only
       from an API exit callback (finalize_from) is detached in the exit
       callback of this call, rather than at the program's next call. */
    void (*synchronize)(void);
    /* Optional: a clearer status and message for a failed vendor call
       (result_text: the vendor's name for the result). Returns 1 when it
       filled *out. */
    int (*explain_failure)(const char *call, int result, const char *result_text, const char *library,
                           const char *version, int emulated, dt_failure *out);
};

#endif /* DT_BACKENDS_VENDOR_H */

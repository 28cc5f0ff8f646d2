/*
 * Intel GPUs through PTI-SDK's view API (libpti_view.so), as a descriptor
 * over the engine.
 *
 * PTI's views are CUPTI's activity API under other names: kinds enabled one
 * by one (ptiViewEnable), buffers the client lends and PTI hands back
 * (ptiViewSetCallbacks), records walked with ptiViewGetNextRecord, flushed
 * with ptiFlushAllViews, an external-correlation stack per kind
 * (ptiViewPush/PopExternalCorrelationId) whose ids come back as records, and
 * API names from ptiViewGetApiIdName. What differs:
 *  - the buffer request takes (buffer, size), and ptiViewGetTimestamp
 *    returns the time (CLOCK_REALTIME ns unless a program set its own
 *    clock with ptiViewSetTimestampCallback): engine capabilities;
 *  - there is no subscriber, no dropped-record count, no result-string
 *    function of CUPTI's shape and no version number of CUPTI's shape
 *    (ptiVersion returns a struct): none is asked for;
 *  - device work names its device by UUID and PCI address, not a number,
 *    and its stream is the SYCL queue (_sycl_queue_id): the decoders below
 *    number devices in the order their UUIDs first appear in the process
 *    (the same UUID is the same device in every session) and name each by
 *    its PCI address and UUID.
 * The layouts are pti_abi.h's, read from PTI 0.17.0's public headers.
 */
#include "backends/engine/engine_walk.h"
#include "backends/pti_abi.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifndef DEVTRACE_PTI_EMULATOR_MARKER
#define DEVTRACE_PTI_EMULATOR_MARKER "devtrace_pti_emulator"
#endif

/* The external-correlation kind devtrace pushes (Kineto's XPU plugin
   pushes CUSTOM_0 and CUSTOM_1). */
#define EXTERNAL_KIND DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_3

static void decode_kernel(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
static void decode_copy(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
static void decode_copy_p2p(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
static void decode_fill(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);

/* ------------------------------------------------------------------ */
/* Layouts                                                             */
/* ------------------------------------------------------------------ */
#define API(kind_, cls_)                                                                                  \
    {.kind = kind_, .cls = cls_, .size = sizeof(dt_pti_view_record_api), .f = {                          \
        [DT_F_START] = DT_FIELD(dt_pti_view_record_api, _start_timestamp),                                \
        [DT_F_END] = DT_FIELD(dt_pti_view_record_api, _end_timestamp),                                    \
        [DT_F_CORRELATION] = DT_FIELD(dt_pti_view_record_api, _correlation_id),                           \
        [DT_F_CBID] = DT_FIELD(dt_pti_view_record_api, _api_id),                                          \
        [DT_F_PROCESS] = DT_FIELD(dt_pti_view_record_api, _process_id),                                   \
        [DT_F_THREAD] = DT_FIELD(dt_pti_view_record_api, _thread_id),                                     \
        [DT_F_RETURN_VALUE] = DT_FIELD(dt_pti_view_record_api, _return_code)}}

/* Device work is decoded below (its device is a UUID); the fields say where
   the rest is, for what walks records by their layouts (the decoder's fuzz
   target and benchmark write and replace them). */
#define WORK(T) [DT_F_START] = DT_FIELD(T, _start_timestamp), [DT_F_END] = DT_FIELD(T, _end_timestamp), \
    [DT_F_CORRELATION] = DT_FIELD(T, _correlation_id), [DT_F_STREAM] = DT_FIELD(T, _sycl_queue_id)

static const dt_record_layout records[] = {
    {.kind = DT_PTI_VIEW_DEVICE_GPU_KERNEL, .cls = DT_RC_KERNEL, .size = sizeof(dt_pti_view_record_kernel),
     .decode = decode_kernel, .f = {WORK(dt_pti_view_record_kernel),
        [DT_F_NAME] = DT_FIELD(dt_pti_view_record_kernel, _name),
        [DT_F_QUEUED] = DT_FIELD(dt_pti_view_record_kernel, _append_timestamp),
        [DT_F_SUBMITTED] = DT_FIELD(dt_pti_view_record_kernel, _submit_timestamp)}},
    {.kind = DT_PTI_VIEW_DEVICE_GPU_MEM_COPY, .cls = DT_RC_MEMCPY, .size = sizeof(dt_pti_view_record_memory_copy),
     .decode = decode_copy, .f = {WORK(dt_pti_view_record_memory_copy),
        [DT_F_BYTES] = DT_FIELD(dt_pti_view_record_memory_copy, _bytes),
        [DT_F_COPY_KIND] = DT_FIELD(dt_pti_view_record_memory_copy, _memcpy_type),
        [DT_F_SRC_KIND] = DT_FIELD(dt_pti_view_record_memory_copy, _mem_src),
        [DT_F_DST_KIND] = DT_FIELD(dt_pti_view_record_memory_copy, _mem_dst)}},
    {.kind = DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P, .cls = DT_RC_MEMCPY,
     .size = sizeof(dt_pti_view_record_memory_copy_p2p), .decode = decode_copy_p2p, .f = {
        WORK(dt_pti_view_record_memory_copy_p2p),
        [DT_F_BYTES] = DT_FIELD(dt_pti_view_record_memory_copy_p2p, _bytes)}},
    {.kind = DT_PTI_VIEW_DEVICE_GPU_MEM_FILL, .cls = DT_RC_MEMSET, .size = sizeof(dt_pti_view_record_memory_fill),
     .decode = decode_fill, .f = {WORK(dt_pti_view_record_memory_fill),
        [DT_F_BYTES] = DT_FIELD(dt_pti_view_record_memory_fill, _bytes),
        [DT_F_VALUE] = DT_FIELD(dt_pti_view_record_memory_fill, _value_for_set),
        [DT_F_MEMORY_KIND] = DT_FIELD(dt_pti_view_record_memory_fill, _mem_type)}},
    API(DT_PTI_VIEW_RUNTIME_API, DT_RC_RUNTIME),
    API(DT_PTI_VIEW_DRIVER_API, DT_RC_DRIVER),
    {.kind = DT_PTI_VIEW_EXTERNAL_CORRELATION, .cls = DT_RC_EXTERNAL,
     .size = sizeof(dt_pti_view_record_external_correlation), .f = {
        [DT_F_CORRELATION] = DT_FIELD(dt_pti_view_record_external_correlation, _correlation_id),
        [DT_F_EXTERNAL_ID] = DT_FIELD(dt_pti_view_record_external_correlation, _external_id),
        [DT_F_EXTERNAL_KIND] = DT_FIELD(dt_pti_view_record_external_correlation, _external_kind)}},
    {.kind = DT_PTI_VIEW_COLLECTION_OVERHEAD, .cls = DT_RC_OTHER, .size = sizeof(dt_pti_view_record_overhead),
     .what = "collection overhead"},
    {0},
};

/* The sizes are PTI 0.17.0's headers' (pti_abi.h). */
static DT_DECODER_WALK(records)
static const dt_layout_set layouts[] = {DT_LAYOUT_SET(0, "PTI 0.17.0 (pti_view.h)", UINT32_MAX, records)};

static const dt_kind_spec kinds[] = {
    {DT_PTI_VIEW_DEVICE_GPU_KERNEL, 0, DT_CAPTURE_KERNEL, 1, 0, "kernels"},
    {DT_PTI_VIEW_DEVICE_GPU_MEM_COPY, 0, DT_CAPTURE_MEMCPY, 0, 0, "memory copies"},
    {DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P, 0, DT_CAPTURE_MEMCPY, 0, 0, "peer-to-peer memory copies"},
    {DT_PTI_VIEW_DEVICE_GPU_MEM_FILL, 0, DT_CAPTURE_MEMSET, 0, 0, "memory fills"},
    {DT_PTI_VIEW_RUNTIME_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "SYCL runtime calls"},
    {DT_PTI_VIEW_DRIVER_API, 0, DT_CAPTURE_DRIVER, 0, 0, "Level Zero calls"},
    {DT_PTI_VIEW_EXTERNAL_CORRELATION, 0, 0, 0, 0, "external-correlation records"},
};

/* pti_view_memory_type -> dt_memory_kind. MEMORY is host memory the
   program allocated itself (or memory PTI could not tell), HOST host memory
   the driver allocated (pinned), SHARED unified shared memory. */
static const uint8_t memory_kinds[] = {
    [DT_PTI_VIEW_MEMORY_TYPE_MEMORY] = DT_MEM_PAGEABLE, [DT_PTI_VIEW_MEMORY_TYPE_HOST] = DT_MEM_PINNED,
    [DT_PTI_VIEW_MEMORY_TYPE_DEVICE] = DT_MEM_DEVICE, [DT_PTI_VIEW_MEMORY_TYPE_SHARED] = DT_MEM_MANAGED,
};

static const uint32_t launch_runtime[] = {DT_PTI_urEnqueueKernelLaunch_id};
static const uint32_t launch_driver[] = {DT_PTI_zeCommandListAppendLaunchKernel_id};
static const uint32_t sync_runtime[] = {DT_PTI_urQueueFinish_id};
static const uint32_t sync_driver[] = {DT_PTI_zeCommandQueueSynchronize_id};

static const dt_value_name result_names[] = {
    {DT_PTI_SUCCESS, "PTI_SUCCESS"},
    {DT_PTI_STATUS_END_OF_BUFFER, "PTI_STATUS_END_OF_BUFFER"},
    {DT_PTI_ERROR_NOT_IMPLEMENTED, "PTI_ERROR_NOT_IMPLEMENTED"},
    {DT_PTI_ERROR_BAD_ARGUMENT, "PTI_ERROR_BAD_ARGUMENT"},
    {DT_PTI_ERROR_NO_CALLBACKS_SET, "PTI_ERROR_NO_CALLBACKS_SET"},
    {DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY, "PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY"},
    {DT_PTI_ERROR_BAD_TIMESTAMP, "PTI_ERROR_BAD_TIMESTAMP"},
    {DT_PTI_ERROR_BAD_API_ID, "PTI_ERROR_BAD_API_ID"},
    {DT_PTI_ERROR_NO_GPU_VIEWS_ENABLED, "PTI_ERROR_NO_GPU_VIEWS_ENABLED"},
    {DT_PTI_ERROR_DRIVER, "PTI_ERROR_DRIVER"},
    {DT_PTI_ERROR_TRACING_NOT_INITIALIZED, "PTI_ERROR_TRACING_NOT_INITIALIZED"},
    {DT_PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED, "PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED"},
    {DT_PTI_ERROR_INTERNAL, "PTI_ERROR_INTERNAL"},
};

static const char *const sonames[] = {"libpti_view.so", "libpti_view.so.0", NULL};
static const char *const roots[] = {"PTI_ROOT", "ONEAPI_ROOT", NULL};
static const char *const subdirs[] = {"lib", "pti/latest/lib", NULL};

DT_ENGINE_DEFINE(pti, pti_vendor);

static dt_status pti_start(const dt_backend *self, dt_session *s);
static dt_status pti_flush(const dt_backend *self, dt_session *s);
static dt_status pti_stop(const dt_backend *self, dt_session *s);

const dt_backend dt__backend_pti = {
    .name = "pti",
    .vendor = "Intel GPU (PTI-SDK)",
    .api_category = "xpu",
    .library_env = "DEVTRACE_PTI_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    /* PTI's kernel records carry no launch configuration or resources */
    .lacks = DT_BACKEND_LACKS_KERNEL_RESOURCES,
    .impl = &dt__engine_pti,
    .probe = dt__engine_probe,
    .prepare = dt__engine_prepare,
    .start = pti_start,
    .flush = pti_flush,
    .stop = pti_stop,
    .clock = dt__engine_clock,
    .push_external = dt__engine_push_external,
    .pop_external = dt__engine_pop_external,
    .attribute_by_api_enter = dt__engine_attribute_by_api_enter,
    .release = dt__engine_release,
    .fork_prepare = dt__engine_fork_prepare,
    .fork_parent = dt__engine_fork_parent,
};

/* Explains the refusals a user can act on. */
static int explain(const char *call, int result, const char *result_text, const char *library, const char *version,
                   int emulated, dt_failure *out)
{
    (void)call;
    (void)result_text;
    (void)library;
    (void)version;
    (void)emulated;
    if (result == DT_PTI_ERROR_TRACING_NOT_INITIALIZED) {
        out->status = DT_ERR_BACKEND_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "the installed Level Zero driver traces only with ZE_ENABLE_TRACING_LAYER=1 in the program's "
                 "environment");
        return 1;
    }
    return 0;
}

static const dt_vendor pti_vendor = {
    .backend = &dt__backend_pti,
    .library = {.spec = {.what = "libpti_view", .sonames = sonames, .root_envs = roots,
                         .default_root = "/opt/intel/oneapi", .subdirs = subdirs,
                         .hint = "install Intel PTI-SDK (oneAPI's pti package) and set PTI_ROOT or ONEAPI_ROOT"},
                .symbol_prefix = "pti",
                .symbols = {[DT_SYM_ENABLE] = "ptiViewEnable", [DT_SYM_DISABLE] = "ptiViewDisable",
                            [DT_SYM_REGISTER_CALLBACKS] = "ptiViewSetCallbacks",
                            [DT_SYM_FLUSH_ALL] = "ptiFlushAllViews", [DT_SYM_NEXT_RECORD] = "ptiViewGetNextRecord",
                            [DT_SYM_TIMESTAMP] = "ptiViewGetTimestamp",
                            [DT_SYM_PUSH_EXTERNAL] = "ptiViewPushExternalCorrelationId",
                            [DT_SYM_POP_EXTERNAL] = "ptiViewPopExternalCorrelationId",
                            [DT_SYM_CALLBACK_NAME] = "ptiViewGetApiIdName",
                            [DT_SYM_DROPPED] = DT_SYM_NONE, [DT_SYM_VERSION] = DT_SYM_NONE,
                            [DT_SYM_RESULT_STRING] = DT_SYM_NONE, [DT_SYM_SUBSCRIBE] = DT_SYM_NONE,
                            [DT_SYM_UNSUBSCRIBE] = DT_SYM_NONE, [DT_SYM_ENABLE_DOMAIN] = DT_SYM_NONE,
                            [DT_SYM_ENABLE_ALL_DOMAINS] = DT_SYM_NONE, [DT_SYM_SET_THREAD_ID_TYPE] = DT_SYM_NONE,
                            [DT_SYM_FLUSH_PERIOD] = DT_SYM_NONE, [DT_SYM_SUBSCRIBE_NAMED] = DT_SYM_NONE,
                            [DT_SYM_ENABLE_AND_DUMP] = DT_SYM_NONE, [DT_SYM_ENABLE_RUNTIME_API] = DT_SYM_NONE,
                            [DT_SYM_FINALIZE] = DT_SYM_NONE, [DT_SYM_LATENCY_TIMESTAMPS] = DT_SYM_NONE,
                            [DT_SYM_ENABLE_CALLBACK] = DT_SYM_NONE, [DT_SYM_ENABLE_DRIVER_API] = DT_SYM_NONE,
                            [DT_SYM_SET_ATTRIBUTE] = DT_SYM_NONE},
                .driver_library = "libze_loader.so.1",
                .driver_name = "Level Zero",
                .emulator_marker = DEVTRACE_PTI_EMULATOR_MARKER},
    .caps = DT_VCAP_REQUEST_PLAIN | DT_VCAP_TIMESTAMP_RETURNED | DT_VCAP_CLOCK_REALTIME |
            DT_VCAP_NO_API_ENTER_LINKS,
    /* Numbers that no PTI release has are INT_MIN: never a result. An
       unknown kind in a buffer is PTI_ERROR_BAD_ARGUMENT (view_handler.h). */
    .results = {.success = DT_PTI_SUCCESS, .invalid_parameter = DT_PTI_ERROR_BAD_ARGUMENT,
                .max_limit_reached = DT_PTI_STATUS_END_OF_BUFFER,
                .queue_empty = DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY, .invalid_kind = DT_PTI_ERROR_BAD_ARGUMENT,
                .not_compatible = INT_MIN, .not_initialized = INT_MIN, .multiple_subscribers = INT_MIN,
                .unknown = DT_PTI_ERROR_INTERNAL, .kind_not_supported = DT_PTI_ERROR_NOT_IMPLEMENTED,
                .names = result_names, .name_count = sizeof result_names / sizeof result_names[0]},
    /* ptiFlushAllViews takes no flag: every flush hands back every buffer */
    .activity = {.flush_forced = 0, .external_kind = EXTERNAL_KIND},
    .names = {.arg_runtime = DT_PTI_API_GROUP_SYCL, .arg_driver = DT_PTI_API_GROUP_LEVELZERO, .limit = 512,
              .runtime_fallback = "syclRuntime", .driver_fallback = "zeDriver"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = {.memory_kinds = DT_COUNTED(memory_kinds)},
    .api_ids = {.launch_runtime = DT_COUNTED(launch_runtime), .launch_driver = DT_COUNTED(launch_driver),
                .sync_runtime = DT_COUNTED(sync_runtime), .sync_driver = DT_COUNTED(sync_driver)},
    .clock_domain = "CLOCK_REALTIME ns, PTI's default clock (ptiViewGetTimestamp; a program that set its own "
                    "with ptiViewSetTimestampCallback moves it, and the calibration follows)",
    .explain_failure = explain,
};

/* ------------------------------------------------------------------ */
/* Devices by UUID                                                     */
/* ------------------------------------------------------------------ */
/* The devices as the Level Zero driver lists them (SYCL's, and torch.xpu's,
   order with the Level Zero backend), asked where devtrace calls the vendor
   itself (start, flush, stop: never while decoding, which may run inside
   the vendor's buffer callbacks); and the UUIDs seen in this process, each
   with devtrace's number for it: the driver's index where the driver listed
   it when it was first seen, else the next number after the driver's
   devices and those numbered already, in order of appearance. A number
   once given stays for the process. */
static struct {
    pthread_mutex_t lock;
    uint32_t listed;
    uint8_t listed_uuid[DT_MAX_DEVICES][DT_PTI_MAX_DEVICE_UUID_SIZE];
    char listed_name[DT_MAX_DEVICES][DT_ZE_MAX_DEVICE_NAME];
    uint32_t count;
    uint8_t uuid[DT_MAX_DEVICES][DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint32_t id[DT_MAX_DEVICES];
    char name[DT_MAX_DEVICES][DT_ZE_MAX_DEVICE_NAME];
} devices = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A Level Zero entry point: the PTI library's own (devtrace's emulator
   stands for the driver there), the loaded driver's, or the process's. */
static void *ze_symbol(void *loader, const char *name)
{
    void *p = dt__engine_pti.lib.handle ? dlsym(dt__engine_pti.lib.handle, name) : NULL;
    if (!p && loader) p = dlsym(loader, name);
    return p ? p : dlsym(RTLD_DEFAULT, name);
}

/* Ask the driver, where the program has loaded and initialised it, for its
   devices. Never loads the driver; no devtrace lock held. */
static void ze_list_devices(void)
{
    void *loader = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD);
    dt_zeDriverGet_fn driver_get = (dt_zeDriverGet_fn)ze_symbol(loader, "zeDriverGet");
    dt_zeDeviceGet_fn device_get = (dt_zeDeviceGet_fn)ze_symbol(loader, "zeDeviceGet");
    dt_zeDeviceGetProperties_fn props = (dt_zeDeviceGetProperties_fn)ze_symbol(loader, "zeDeviceGetProperties");
    void *drivers[8];
    uint32_t nd = 8, seen = 0;
    static uint8_t uuid[DT_MAX_DEVICES][DT_PTI_MAX_DEVICE_UUID_SIZE];
    static char name[DT_MAX_DEVICES][DT_ZE_MAX_DEVICE_NAME];
    static pthread_mutex_t listing = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&listing);
    if (driver_get && device_get && props && driver_get(&nd, drivers) == 0) {
        for (uint32_t d = 0; d < nd && d < 8; d++) {
            void *list[DT_MAX_DEVICES];
            uint32_t n = DT_MAX_DEVICES;
            if (device_get(drivers[d], &n, list) != 0) continue;
            for (uint32_t i = 0; i < n && i < DT_MAX_DEVICES && seen < DT_MAX_DEVICES; i++) {
                dt_ze_device_properties p;
                memset(&p, 0, sizeof p);
                p.stype = DT_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
                if (props(list[i], &p) != 0) memset(p.uuid, 0, sizeof p.uuid), p.name[0] = '\0';
                memcpy(uuid[seen], p.uuid, sizeof p.uuid);
                memcpy(name[seen], p.name, DT_ZE_MAX_DEVICE_NAME - 1);
                name[seen][DT_ZE_MAX_DEVICE_NAME - 1] = '\0';
                seen++;
            }
        }
        pthread_mutex_lock(&devices.lock);
        devices.listed = seen;
        memcpy(devices.listed_uuid, uuid, sizeof uuid);
        memcpy(devices.listed_name, name, sizeof name);
        pthread_mutex_unlock(&devices.lock);
    }
    pthread_mutex_unlock(&listing);
    if (loader) dlclose(loader); /* the extra reference only */
}

/* The device number of a UUID (session lock held); the session is told the
   device's name, PCI address and UUID the first time. UINT32_MAX: more
   devices than devtrace numbers. */
static uint32_t device_of(dt_session *s, const uint8_t *uuid, const char *pci)
{
    uint32_t id = UINT32_MAX, slot = UINT32_MAX;
    char model[DT_ZE_MAX_DEVICE_NAME];
    pthread_mutex_lock(&devices.lock);
    for (uint32_t i = 0; i < devices.count; i++)
        if (!memcmp(devices.uuid[i], uuid, DT_PTI_MAX_DEVICE_UUID_SIZE)) {
            slot = i;
            break;
        }
    if (slot == UINT32_MAX && devices.count < DT_MAX_DEVICES) {
        slot = devices.count++;
        memcpy(devices.uuid[slot], uuid, DT_PTI_MAX_DEVICE_UUID_SIZE);
        devices.name[slot][0] = '\0';
        uint32_t next = devices.listed;
        for (uint32_t i = 0; i < slot; i++)
            if (devices.id[i] >= next) next = devices.id[i] + 1;
        devices.id[slot] = next;
        for (uint32_t i = 0; i < devices.listed; i++)
            if (!memcmp(devices.listed_uuid[i], uuid, DT_PTI_MAX_DEVICE_UUID_SIZE)) {
                devices.id[slot] = i;
                memcpy(devices.name[slot], devices.listed_name[i], DT_ZE_MAX_DEVICE_NAME);
                break;
            }
    }
    if (slot != UINT32_MAX) {
        id = devices.id[slot];
        memcpy(model, devices.name[slot], sizeof model);
    }
    pthread_mutex_unlock(&devices.lock);
    if (id != UINT32_MAX && id < DT_MAX_DEVICES && !dt__sink_has_device(s, id)) {
        dt_device_props p;
        memset(&p, 0, sizeof p);
        p.valid = 1;
        p.id = id;
        char hex[2 * DT_PTI_MAX_DEVICE_UUID_SIZE + 1];
        for (int i = 0; i < DT_PTI_MAX_DEVICE_UUID_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
        snprintf(p.name, sizeof p.name, "%.56s%sIntel GPU %.*s (UUID %s)", model, model[0] ? ", " : "",
                 DT_PTI_MAX_PCI_ADDRESS_SIZE, pci, hex);
        p.absent = ~0u & ~(unsigned)DT_PROP_NAME;
        dt__core_set_device(s, &p);
    }
    return id;
}

/* The engine's methods, with the driver's devices listed before any
   record is decoded: at start once the library is loaded (its emulator
   stands for the driver), before a flush and before the final one. */
static dt_status pti_start(const dt_backend *self, dt_session *s)
{
    dt_status st = dt__engine_start(self, s);
    if (st == DT_OK) ze_list_devices();
    return st;
}

static dt_status pti_flush(const dt_backend *self, dt_session *s)
{
    ze_list_devices();
    return dt__engine_flush(self, s);
}

static dt_status pti_stop(const dt_backend *self, dt_session *s)
{
    ze_list_devices();
    return dt__engine_stop(self, s);
}

/* A SYCL queue as a stream; records without one (work submitted through
   Level Zero directly) are on stream 0. */
static uint32_t stream_of(uint64_t sycl_queue)
{
    return sycl_queue == DT_PTI_INVALID_QUEUE_ID ? 0 : (uint32_t)sycl_queue;
}

/* pti_view_memcpy_type is source * 4 + destination: memory (host the
   program allocated, or unknown), host, device, shared. */
static uint8_t copy_kind(uint32_t type)
{
    if (type > DT_PTI_VIEW_MEMCPY_TYPE_S2S) return DT_COPY_UNKNOWN;
    static const uint8_t side[4] = {'H', 'H', 'D', 'S'};
    uint8_t src = side[type / 4], dst = side[type % 4];
    if (src == 'H' && dst == 'D') return DT_COPY_HTOD;
    if (src == 'D' && dst == 'H') return DT_COPY_DTOH;
    if (src == 'D' && dst == 'D') return DT_COPY_DTOD;
    if (src == 'H' && dst == 'H') return DT_COPY_HTOH;
    return DT_COPY_UNKNOWN;
}

static uint8_t memory_kind(uint32_t type)
{
    return type < sizeof memory_kinds ? memory_kinds[type] : DT_MEM_UNKNOWN;
}

/* ------------------------------------------------------------------ */
/* Device work (session lock held; the whole record readable)          */
/* ------------------------------------------------------------------ */
static void decode_kernel(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    if (!(dt__sink_capture(s) & DT_CAPTURE_KERNEL)) return;
    dt_pti_view_record_kernel k;
    memcpy(&k, rec, sizeof k);
    uint32_t device = device_of(s, k._device_uuid, k._pci_address);
    dt_launch_config cfg;
    memset(&cfg, 0, sizeof cfg);
    uint32_t config = dt__decode_launch_config(s, cache, &cfg);
    uint32_t name = dt__decode_kernel_name(s, cache, k._name);
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_KERNEL, k._start_timestamp, k._end_timestamp, k._correlation_id,
                                       device, stream_of(k._sycl_queue_id), 0,
                                       config == UINT32_MAX ? UINT32_MAX : name);
    if (!r) return;
    r->u.kernel.config = config;
    /* appended to a command list, and that list submitted (0: unknown) */
    r->u.kernel.queued_delta = dt__latency_delta(k._start_timestamp, k._append_timestamp);
    r->u.kernel.submitted_delta = dt__latency_delta(k._start_timestamp, k._submit_timestamp);
}

static void decode_copy(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMCPY)) return;
    dt_pti_view_record_memory_copy c;
    memcpy(&c, rec, sizeof c);
    uint32_t device = device_of(s, c._device_uuid, c._pci_address);
    dt_copy copy = {
        .start = c._start_timestamp, .end = c._end_timestamp, .correlation = c._correlation_id, .bytes = c._bytes,
        .device = device, .stream = stream_of(c._sycl_queue_id), .src_device = device, .dst_device = device,
        .copy_kind = copy_kind(c._memcpy_type), .src_kind = memory_kind(c._mem_src),
        .dst_kind = memory_kind(c._mem_dst),
    };
    dt__add_copy(s, cache, &copy);
}

static void decode_copy_p2p(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMCPY)) return;
    dt_pti_view_record_memory_copy_p2p c;
    memcpy(&c, rec, sizeof c);
    uint32_t src = device_of(s, c._src_uuid, c._src_pci_address);
    uint32_t dst = device_of(s, c._dst_uuid, c._dst_pci_address);
    dt_copy copy = {
        .start = c._start_timestamp, .end = c._end_timestamp, .correlation = c._correlation_id, .bytes = c._bytes,
        .device = src, .stream = stream_of(c._sycl_queue_id), .src_device = src, .dst_device = dst,
        .copy_kind = DT_COPY_PTOP, .src_kind = memory_kind(c._mem_src), .dst_kind = memory_kind(c._mem_dst),
    };
    dt__add_copy(s, cache, &copy);
}

static void decode_fill(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMSET)) return;
    dt_pti_view_record_memory_fill f;
    memcpy(&f, rec, sizeof f);
    dt_fill fill = {
        .start = f._start_timestamp, .end = f._end_timestamp, .correlation = f._correlation_id, .bytes = f._bytes,
        .device = device_of(s, f._device_uuid, f._pci_address), .stream = stream_of(f._sycl_queue_id),
        .value = (uint32_t)f._value_for_set, .memory_kind = memory_kind(f._mem_type),
    };
    dt__add_fill(s, cache, &fill);
}

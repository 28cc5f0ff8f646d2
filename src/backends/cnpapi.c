/*
 * Cambricon MLUs through CNPAPI (libcnpapi.so), as a descriptor over the
 * engine: CUPTI's shape (activity types enabled one by one, buffers lent
 * through cnpapiActivityRegisterCallbacks and walked with
 * cnpapiActivityGetNextRecord, cnpapiActivityFlushAll, an external
 * correlation stack, cnpapiSubscribe with callback domains) with records,
 * numbering and entry points of its own (cnpapi_abi.h, which names the
 * public source of each fact and what is inferred):
 *
 *  - cnpapiInit before anything else; cnpapiGetTimestamp returns the time;
 *  - no dropped-record query: drops are not counted;
 *  - API records of every library share one layout, told apart by type:
 *    CNRT calls are the runtime's, CNDRV calls the driver's, and CNCL calls
 *    are collectives (as HCCL's are in MSPTI), decoded here;
 *  - kernel records give the task's dimensions and no launch resources;
 *    copies and fills give no memory kinds.
 *
 * Validated only against devtrace's emulator (emu/cnpapi).
 */
#include "backends/cnpapi_abi.h"
#include "backends/engine/engine_walk.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define TIMED(T) [DT_F_START] = DT_FIELD(T, start), [DT_F_END] = DT_FIELD(T, end), \
    [DT_F_CORRELATION] = DT_FIELD(T, correlation_id)
#define PLACED(T) [DT_F_DEVICE] = DT_FIELD(T, device_id), [DT_F_CONTEXT] = DT_FIELD(T, context_id), \
    [DT_F_STREAM] = DT_FIELD(T, queue_id)
#define API_FIELDS                                                                                         \
    TIMED(cnpapiActivityAPI), [DT_F_CBID] = DT_FIELD(cnpapiActivityAPI, cbid),                            \
        [DT_F_PROCESS] = DT_FIELD(cnpapiActivityAPI, process_id),                                         \
        [DT_F_THREAD] = DT_FIELD(cnpapiActivityAPI, thread_id)

static void decode_cncl(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);

static const dt_record_layout records[] = {
    {.kind = CNPAPI_ACTIVITY_TYPE_KERNEL, .cls = DT_RC_KERNEL, .size = sizeof(cnpapiActivityKernel), .f = {
        TIMED(cnpapiActivityKernel), PLACED(cnpapiActivityKernel),
        [DT_F_GRID_X] = DT_FIELD(cnpapiActivityKernel, dimx),
        [DT_F_GRID_Y] = DT_FIELD(cnpapiActivityKernel, dimy),
        [DT_F_GRID_Z] = DT_FIELD(cnpapiActivityKernel, dimz),
        [DT_F_NAME] = DT_FIELD(cnpapiActivityKernel, name),
        [DT_F_QUEUED] = DT_FIELD(cnpapiActivityKernel, queued),
        [DT_F_SUBMITTED] = DT_FIELD(cnpapiActivityKernel, submitted)}},
    {.kind = CNPAPI_ACTIVITY_TYPE_MEMCPY, .cls = DT_RC_MEMCPY, .size = sizeof(cnpapiActivityMemcpy), .f = {
        TIMED(cnpapiActivityMemcpy), PLACED(cnpapiActivityMemcpy),
        [DT_F_BYTES] = DT_FIELD(cnpapiActivityMemcpy, bytes),
        [DT_F_COPY_KIND] = DT_FIELD(cnpapiActivityMemcpy, copy_type),
        [DT_F_FLAGS] = DT_FIELD(cnpapiActivityMemcpy, flags)}},
    {.kind = CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP, .cls = DT_RC_MEMCPY, .size = sizeof(cnpapiActivityMemcpyPtoP), .f = {
        TIMED(cnpapiActivityMemcpyPtoP), PLACED(cnpapiActivityMemcpyPtoP),
        [DT_F_BYTES] = DT_FIELD(cnpapiActivityMemcpyPtoP, bytes),
        [DT_F_COPY_KIND] = DT_FIELD(cnpapiActivityMemcpyPtoP, copy_type),
        [DT_F_FLAGS] = DT_FIELD(cnpapiActivityMemcpyPtoP, flags),
        [DT_F_SRC_DEVICE] = DT_FIELD(cnpapiActivityMemcpyPtoP, src_device_id),
        [DT_F_DST_DEVICE] = DT_FIELD(cnpapiActivityMemcpyPtoP, dst_device_id)}},
    {.kind = CNPAPI_ACTIVITY_TYPE_MEMSET, .cls = DT_RC_MEMSET, .size = sizeof(cnpapiActivityMemset), .f = {
        TIMED(cnpapiActivityMemset), PLACED(cnpapiActivityMemset),
        [DT_F_BYTES] = DT_FIELD(cnpapiActivityMemset, bytes),
        [DT_F_VALUE] = DT_FIELD(cnpapiActivityMemset, value),
        [DT_F_FLAGS] = DT_FIELD(cnpapiActivityMemset, flags)}},
    {.kind = CNPAPI_ACTIVITY_TYPE_CNRT_API, .cls = DT_RC_RUNTIME, .size = sizeof(cnpapiActivityAPI),
     .f = {API_FIELDS}},
    {.kind = CNPAPI_ACTIVITY_TYPE_CNDRV_API, .cls = DT_RC_DRIVER, .size = sizeof(cnpapiActivityAPI),
     .f = {API_FIELDS}},
    {.kind = CNPAPI_ACTIVITY_TYPE_CNCL_API, .cls = DT_RC_OTHER, .size = sizeof(cnpapiActivityAPI),
     .what = "collective", .f = {API_FIELDS}, .decode = decode_cncl},
    {.kind = CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION, .cls = DT_RC_EXTERNAL,
     .size = sizeof(cnpapiActivityExternalCorrelation), .f = {
        [DT_F_CORRELATION] = DT_FIELD(cnpapiActivityExternalCorrelation, correlation_id),
        [DT_F_EXTERNAL_KIND] = DT_FIELD(cnpapiActivityExternalCorrelation, external_type),
        [DT_F_EXTERNAL_ID] = DT_FIELD(cnpapiActivityExternalCorrelation, external_id)}},
    {0},
};

static DT_DECODER_WALK(records)
static const dt_layout_set layouts[] = {
    DT_LAYOUT_SET(0, "cnpapi_activity_api.h (Cambricon, 2022): Kernel 120, Memcpy 104, MemcpyPtoP 120, Memset 104, API 56",
                  UINT32_MAX, records),
};

static const dt_kind_spec kinds[] = {
    {CNPAPI_ACTIVITY_TYPE_KERNEL, 0, DT_CAPTURE_KERNEL, 0, 0, "kernels"},
    {CNPAPI_ACTIVITY_TYPE_MEMCPY, 0, DT_CAPTURE_MEMCPY, 0, 0, "memory copies"},
    {CNPAPI_ACTIVITY_TYPE_MEMCPY_PTOP, 0, DT_CAPTURE_MEMCPY, 0, 0, "peer-to-peer copies"},
    {CNPAPI_ACTIVITY_TYPE_MEMSET, 0, DT_CAPTURE_MEMSET, 0, 0, "memsets"},
    {CNPAPI_ACTIVITY_TYPE_CNRT_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "CNRT API"},
    {CNPAPI_ACTIVITY_TYPE_CNDRV_API, 0, DT_CAPTURE_DRIVER, 0, 0, "CNDRV API"},
    {CNPAPI_ACTIVITY_TYPE_CNCL_API, 0, DT_CAPTURE_KERNEL, 0, 0, "CNCL collectives"},
    {CNPAPI_ACTIVITY_TYPE_EXTERNAL_CORRELATION, 0, 0, 0, 0, "external correlation"},
};

#define ENUM_TABLE 8
static const uint8_t copy_kinds[ENUM_TABLE] = {
    [CNPAPI_ACTIVITY_MEMCPY_TYPE_HTOD] = DT_COPY_HTOD, [CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOH] = DT_COPY_DTOH,
    [CNPAPI_ACTIVITY_MEMCPY_TYPE_DTOD] = DT_COPY_DTOD, [CNPAPI_ACTIVITY_MEMCPY_TYPE_HTOH] = DT_COPY_HTOH,
    [CNPAPI_ACTIVITY_MEMCPY_TYPE_PTOP] = DT_COPY_PTOP,
};

/* CNRT's and CNDRV's launches, in the emulator's numbering (inferred: no
   public header gives the ids; the names come from the library). */
static const uint32_t launch_runtime[] = {DT_CNPAPI_CNRT_INVOKE_KERNEL};
static const uint32_t launch_driver[] = {DT_CNPAPI_CNDRV_INVOKE_KERNEL};

static const char *const sonames[] = {"libcnpapi.so", NULL};
static const char *const roots[] = {"NEUWARE_HOME", NULL};
static const char *const subdirs[] = {"lib64", "lib", NULL};

/* ------------------------------------------------------------------ */
/* CNCL calls: collectives                                             */
/* ------------------------------------------------------------------ */
/* The library's names of CNCL calls, asked once a start (cnpapiGetCallbackName
   in the CNCL domain); the declaration's where it gives none. */
#define CNCL_NAMES 256
static const char *cncl_names[CNCL_NAMES];

static void learn_cncl_names(const dt_engine *e)
{
    typedef int (*fn_name)(uint32_t domain, uint32_t cbid, const char **name);
    fn_name name_of = DT_ENGINE_SYM(e, fn_name, DT_SYM_CALLBACK_NAME);
    for (uint32_t i = 0; i < CNCL_NAMES; i++) {
        const char *n = NULL;
        if (name_of && name_of(CNPAPI_CB_DOMAIN_CNCL_API, i, &n) == CNPAPI_SUCCESS && n && n[0]) cncl_names[i] = n;
        else cncl_names[i] = i < DT_CNPAPI_CNCL_NAMED ? dt__cnpapi_cncl_names[i] : NULL;
    }
}

/* A CNCL call: a collective over the call's span. CNPAPI's API records name
   no device or queue: the collective is put on device 0, queue 0. */
static void decode_cncl(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_KERNEL)) return;
    cnpapiActivityAPI a;
    memcpy(&a, rec, sizeof a);
    char fallback[32];
    const char *name = a.cbid >= 0 && a.cbid < CNCL_NAMES ? cncl_names[a.cbid] : NULL;
    if (!name) {
        snprintf(fallback, sizeof fallback, "cnclApi#%d", (int)a.cbid);
        name = fallback;
    }
    dt_collective_desc c = {.start = a.start, .end = a.end, .correlation = a.correlation_id, .name = name};
    dt__add_collective(s, &c);
}

static dt_status cnpapi_start(const dt_backend *self, dt_session *s)
{
    dt_status st = dt__engine_start(self, s);
    if (st != DT_OK) return st;
    learn_cncl_names(self->impl);
    dt__core_note(s, "launch_configuration", "kernel records carry the task's dimensions (grid) and no block "
                    "dimensions, registers or shared memory: a BANG C launch has none");
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */
DT_ENGINE_DEFINE(cnpapi, cnpapi_vendor);

const dt_backend dt__backend_cnpapi = {
    .name = "cnpapi",
    .vendor = "Cambricon MLU (CNPAPI)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_CNPAPI_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .lacks = DT_BACKEND_LACKS_KERNEL_RESOURCES,
    .impl = &dt__engine_cnpapi,
    .probe = dt__engine_probe, .prepare = dt__engine_prepare, .start = cnpapi_start,
    .flush = dt__engine_flush, .stop = dt__engine_stop, .clock = dt__engine_clock,
    .push_external = dt__engine_push_external, .pop_external = dt__engine_pop_external,
    .attribute_by_api_enter = dt__engine_attribute_by_api_enter, .release = dt__engine_release,
    .fork_prepare = dt__engine_fork_prepare, .fork_parent = dt__engine_fork_parent,
};

static const dt_vendor cnpapi_vendor = {
    .backend = &dt__backend_cnpapi,
    .library = {.spec = {.what = "libcnpapi", .sonames = sonames, .root_envs = roots,
                         .default_root = "/usr/local/neuware", .subdirs = subdirs,
                         .hint = "install Cambricon's Neuware (CNToolkit) and set NEUWARE_HOME"},
                .symbol_prefix = "cnpapi",
                /* its version function (cnpapiGetLibVersion) takes three
                   ints, and one set of layouts needs no version; CNPAPI has
                   no dropped-record query and no thread-id type, which the
                   probe and the trace say as for any missing entry point */
                .symbols = {[DT_SYM_VERSION] = DT_SYM_NONE},
                .emulator_marker = DEVTRACE_CNPAPI_EMULATOR_MARKER,
                .layout_note = "CNPAPI's record layouts are read from a public copy of Cambricon's "
                               "cnpapi_activity_api.h (2022), its CNCL domain and callback ids inferred: "
                               "check this trace against the workload (docs/backends/cnpapi.md)",
                .init_on_load = 1},
    .caps = DT_VCAP_TIMESTAMP_RETURNED,
    .results = {.success = CNPAPI_SUCCESS, .invalid_parameter = CNPAPI_ERROR_INVALID_ARGUMENT,
                .max_limit_reached = CNPAPI_ERROR_MAX_LIMIT_REACHED, .queue_empty = INT_MIN,
                /* no INVALID_KIND in cnpapiResult: a record of a type the
                   library does not know answers UNKNOWN (inferred) */
                .invalid_kind = CNPAPI_ERROR_UNKNOWN, .not_compatible = CNPAPI_ERROR_UNSUPPORTED_DRIVER_VERSION,
                .not_initialized = CNPAPI_ERROR_NOT_INITIALIZED,
                .multiple_subscribers = CNPAPI_ERROR_ALREADY_IN_USE, .unknown = INT_MIN},
    .activity = {.flush_forced = 0, .external_kind = CNPAPI_EXTERNAL_CORRELATION_TYPE_CUSTOM0},
    .callbacks = {.domain_runtime = CNPAPI_CB_DOMAIN_CNRT_API, .domain_driver = CNPAPI_CB_DOMAIN_CNDRV_API,
                  .api_enter = CNPAPI_API_ENTER, .site_offset = offsetof(cnpapi_CallbackData, callbackSite),
                  .correlation_offset = offsetof(cnpapi_CallbackData, correlationId),
                  .result_offset = offsetof(cnpapi_CallbackData, functionReturnValue)},
    .names = {.arg_runtime = CNPAPI_CB_DOMAIN_CNRT_API, .arg_driver = CNPAPI_CB_DOMAIN_CNDRV_API, .limit = 1024,
              DT_COUNTED(dt__cnpapi_cnrt_names), DT_COUNTED(dt__cnpapi_cndrv_names), "cnrtApi", "cndrvApi"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = {.copy_kinds = DT_COUNTED(copy_kinds), .copy_async_flag = CNPAPI_ACTIVITY_FLAG_MEMCPY_ASYNC,
              .fill_async_flag = CNPAPI_ACTIVITY_FLAG_MEMSET_ASYNC,
              .peer_copy_kind = CNPAPI_ACTIVITY_MEMCPY_TYPE_PTOP},
    .api_ids = {.launch_runtime = DT_COUNTED(launch_runtime), .launch_driver = DT_COUNTED(launch_driver)},
    .clock_domain = "CNPAPI's own clock (cnpapiGetTimestamp), mapped to CLOCK_REALTIME",
};

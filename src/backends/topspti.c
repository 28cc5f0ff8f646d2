/*
 * Enflame GCU through TOPSPTI (libtopspti.so), as a descriptor over the
 * engine.
 *
 * Record layouts come from the TopsRider SDK headers when CMake found them
 * (DT_HAVE_TOPSPTI_SDK), otherwise from devtrace's own declaration
 * (topspti_abi.h), which only devtrace's emulator implements: each build
 * refuses the library whose layout it does not know, because decoding
 * records through a guessed layout yields garbage rather than an error.
 *
 * TOPSPTI has no external-correlation API: device work is linked to
 * devtrace's stack through the API-enter callback alone. Its buffer
 * completion and dropped-record query take no context or stream.
 */
#include "backends/engine/engine_walk.h"

#include <limits.h>

#ifdef DT_HAVE_TOPSPTI_SDK
#include <topspti_activity.h>
#include <topspti_callbacks.h>
#ifndef DEVTRACE_TOPSPTI_EMULATOR_MARKER
#define DEVTRACE_TOPSPTI_EMULATOR_MARKER "devtrace_topspti_emulator"
#endif
#define LAYOUT_CAPS DT_VCAP_LAYOUT_FROM_SDK
#define LAYOUT_SOURCE "the TopsRider SDK headers"
#define KERNEL_SIZE sizeof(Topspti_ActivityKernel)
#define MEMCPY_SIZE sizeof(Topspti_ActivityMemcpy)
#define MEMSET_SIZE sizeof(Topspti_ActivityMemset)
#else
#include "backends/topspti_abi.h"
/* devtrace's declaration has every launch detail; an SDK build learns which
   fields exist from CMake (cmake/Topspti.cmake). */
#define DT_TOPSPTI_HAS_KERNEL_REGISTERS 1
#define DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY 1
#define DT_TOPSPTI_HAS_KERNEL_QUEUED 1
#define DT_TOPSPTI_HAS_KERNEL_SUBMITTED 1
#define DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES 1
#define LAYOUT_CAPS DT_VCAP_LAYOUT_DECLARED
#define LAYOUT_SOURCE "devtrace's declaration (topspti_abi.h)"
#define KERNEL_SIZE TOPSPTI_ACTIVITY_KERNEL_SIZE
#define MEMCPY_SIZE TOPSPTI_ACTIVITY_MEMCPY_SIZE
#define MEMSET_SIZE TOPSPTI_ACTIVITY_MEMSET_SIZE
#endif

/* A field the SDK's record may lack (has: 1 or 0): absent reads as 0. */
#define FIELD_IF_1(T, member) DT_FIELD(T, member)
#define FIELD_IF_0(T, member) {0, 0}
#define MAYBE_(has, T, member) FIELD_IF_##has(T, member)
#define MAYBE(has, T, member) MAYBE_(has, T, member)
#define TIMED(T) [DT_F_START] = DT_FIELD(T, start), [DT_F_END] = DT_FIELD(T, end), \
    [DT_F_CORRELATION] = DT_FIELD(T, correlationId)
#define PLACED(T) [DT_F_DEVICE] = DT_FIELD(T, deviceId), [DT_F_CONTEXT] = DT_FIELD(T, contextId), \
    [DT_F_STREAM] = DT_FIELD(T, streamId)
#define API(kind_, cls_)                                                                           \
    {.kind = kind_, .cls = cls_, .size = sizeof(Topspti_ActivityAPI), .f = {                       \
        TIMED(Topspti_ActivityAPI), [DT_F_CBID] = DT_FIELD(Topspti_ActivityAPI, cbid),             \
        [DT_F_PROCESS] = DT_FIELD(Topspti_ActivityAPI, processId),                                 \
        [DT_F_THREAD] = DT_FIELD(Topspti_ActivityAPI, threadId),                                   \
        [DT_F_RETURN_VALUE] = DT_FIELD(Topspti_ActivityAPI, returnValue)}}

static const dt_record_layout records[] = {
    {.kind = TOPSPTI_ACTIVITY_KIND_KERNEL, .cls = DT_RC_KERNEL, .size = KERNEL_SIZE, .f = {
        TIMED(Topspti_ActivityKernel), PLACED(Topspti_ActivityKernel),
        [DT_F_GRID_X] = DT_FIELD(Topspti_ActivityKernel, gridX),
        [DT_F_GRID_Y] = DT_FIELD(Topspti_ActivityKernel, gridY),
        [DT_F_GRID_Z] = DT_FIELD(Topspti_ActivityKernel, gridZ),
        [DT_F_BLOCK_X] = DT_FIELD(Topspti_ActivityKernel, blockX),
        [DT_F_BLOCK_Y] = DT_FIELD(Topspti_ActivityKernel, blockY),
        [DT_F_BLOCK_Z] = DT_FIELD(Topspti_ActivityKernel, blockZ),
        [DT_F_REGISTERS] = MAYBE(DT_TOPSPTI_HAS_KERNEL_REGISTERS, Topspti_ActivityKernel, registersPerThread),
        [DT_F_STATIC_SHARED] = MAYBE(DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY, Topspti_ActivityKernel, staticSharedMemory),
        [DT_F_DYNAMIC_SHARED] = MAYBE(DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY, Topspti_ActivityKernel, dynamicSharedMemory),
        [DT_F_NAME] = DT_FIELD(Topspti_ActivityKernel, name),
        [DT_F_QUEUED] = MAYBE(DT_TOPSPTI_HAS_KERNEL_QUEUED, Topspti_ActivityKernel, queued),
        [DT_F_SUBMITTED] = MAYBE(DT_TOPSPTI_HAS_KERNEL_SUBMITTED, Topspti_ActivityKernel, submitted)}},
    {.kind = TOPSPTI_ACTIVITY_KIND_MEMCPY, .cls = DT_RC_MEMCPY, .size = MEMCPY_SIZE, .f = {
        TIMED(Topspti_ActivityMemcpy), PLACED(Topspti_ActivityMemcpy),
        [DT_F_BYTES] = DT_FIELD(Topspti_ActivityMemcpy, bytes),
        [DT_F_COPY_KIND] = DT_FIELD(Topspti_ActivityMemcpy, copyKind),
        [DT_F_SRC_KIND] = DT_FIELD(Topspti_ActivityMemcpy, srcKind),
        [DT_F_DST_KIND] = DT_FIELD(Topspti_ActivityMemcpy, dstKind),
        [DT_F_FLAGS] = DT_FIELD(Topspti_ActivityMemcpy, flags),
        [DT_F_SRC_DEVICE] = MAYBE(DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES, Topspti_ActivityMemcpy, srcDeviceId),
        [DT_F_DST_DEVICE] = MAYBE(DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES, Topspti_ActivityMemcpy, dstDeviceId)}},
    {.kind = TOPSPTI_ACTIVITY_KIND_MEMSET, .cls = DT_RC_MEMSET, .size = MEMSET_SIZE, .f = {
        TIMED(Topspti_ActivityMemset), PLACED(Topspti_ActivityMemset),
        [DT_F_BYTES] = DT_FIELD(Topspti_ActivityMemset, bytes),
        [DT_F_VALUE] = DT_FIELD(Topspti_ActivityMemset, value),
        [DT_F_FLAGS] = DT_FIELD(Topspti_ActivityMemset, flags),
        [DT_F_MEMORY_KIND] = DT_FIELD(Topspti_ActivityMemset, memoryKind)}},
    API(TOPSPTI_ACTIVITY_KIND_RUNTIME, DT_RC_RUNTIME),
    API(TOPSPTI_ACTIVITY_KIND_DRIVER, DT_RC_DRIVER),
    {0},
};

static DT_DECODER_WALK(records)
static const dt_layout_set layouts[] = {DT_LAYOUT_SET(0, LAYOUT_SOURCE, UINT32_MAX, records)};

static const dt_kind_spec kinds[] = {
    {TOPSPTI_ACTIVITY_KIND_KERNEL, 0, DT_CAPTURE_KERNEL, 0, 0, "kernels"},
    {TOPSPTI_ACTIVITY_KIND_MEMCPY, 0, DT_CAPTURE_MEMCPY, 0, 0, "memory copies"},
    {TOPSPTI_ACTIVITY_KIND_MEMSET, 0, DT_CAPTURE_MEMSET, 0, 0, "memsets"},
    {TOPSPTI_ACTIVITY_KIND_RUNTIME, 0, DT_CAPTURE_RUNTIME, 0, 0, "runtime API"},
    {TOPSPTI_ACTIVITY_KIND_DRIVER, 0, DT_CAPTURE_DRIVER, 0, 0, "driver API"},
};

#define ENUM_TABLE 32
static const uint8_t copy_kinds[ENUM_TABLE] = {
    [TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOD] = DT_COPY_HTOD, [TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOH] = DT_COPY_DTOH,
    [TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOD] = DT_COPY_DTOD, [TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOH] = DT_COPY_HTOH,
    [TOPSPTI_ACTIVITY_MEMCPY_KIND_PTOP] = DT_COPY_PTOP,
};
static const uint8_t memory_kinds[ENUM_TABLE] = {
    [TOPSPTI_ACTIVITY_MEMORY_KIND_PAGEABLE] = DT_MEM_PAGEABLE,
    [TOPSPTI_ACTIVITY_MEMORY_KIND_PINNED] = DT_MEM_PINNED,
    [TOPSPTI_ACTIVITY_MEMORY_KIND_DEVICE] = DT_MEM_DEVICE,
};

static const char *const sonames[] = {"libtopspti.so", NULL};
static const char *const roots[] = {"TOPS_HOME", NULL};
static const char *const subdirs[] = {"extras/TOPSPTI/lib64", NULL};
static const char *const paths[] = {"/opt/tops/lib/libtopspti_prof.so", NULL};

DT_ENGINE_DEFINE(topspti, topspti_vendor);

const dt_backend dt__backend_topspti = {
    .name = "topspti",
    .vendor = "Enflame GCU (TOPSPTI)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_TOPSPTI_LIBRARY",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .impl = &dt__engine_topspti,
    DT_ENGINE_METHODS,
};

static const dt_vendor topspti_vendor = {
    .backend = &dt__backend_topspti,
    .library = {.spec = {.what = "libtopspti", .sonames = sonames, .root_envs = roots, .default_root = "/opt/tops",
                         .subdirs = subdirs, .paths = paths, .hint = "install the TopsRider SDK and set TOPS_HOME"},
                .symbol_prefix = "topspti",
                /* TOPSPTI has no external-correlation stack */
                .symbols = {[DT_SYM_PUSH_EXTERNAL] = DT_SYM_NONE, [DT_SYM_POP_EXTERNAL] = DT_SYM_NONE,
                            [DT_SYM_RESULT_STRING] = DT_SYM_NONE},
                .emulator_marker = DEVTRACE_TOPSPTI_EMULATOR_MARKER,
                .sdk_headers = "the TopsRider SDK headers (topspti_activity.h)",
                .sdk_rebuild_hint = "rebuild devtrace with TOPS_HOME set to the SDK root (e.g. cmake "
                                    "-DTOPS_HOME=/opt/tops)"},
    .caps = LAYOUT_CAPS,
    /* Numbers that no TOPSPTI release has are INT_MIN: never a result. */
    .results = {.success = TOPSPTI_SUCCESS, .invalid_parameter = TOPSPTI_ERROR_INVALID_PARAMETER,
                .max_limit_reached = TOPSPTI_ERROR_MAX_LIMIT_REACHED, .queue_empty = TOPSPTI_ERROR_QUEUE_EMPTY,
                .invalid_kind = TOPSPTI_ERROR_INVALID_KIND, .not_compatible = INT_MIN, .not_initialized = INT_MIN,
                .multiple_subscribers = TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, .unknown = INT_MIN},
    .activity = {.flush_forced = TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED, .flush_period_ms = 100,
                 .thread_id_system = TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM},
    .callbacks = {.domain_runtime = TOPSPTI_CB_DOMAIN_RUNTIME_API, .domain_driver = TOPSPTI_CB_DOMAIN_DRIVER_API,
                  .api_enter = TOPSPTI_API_ENTER, .site_offset = offsetof(Topspti_CallbackData, callbackSite),
                  .correlation_offset = offsetof(Topspti_CallbackData, correlationId)},
    .names = {.arg_runtime = TOPSPTI_CB_DOMAIN_RUNTIME_API, .arg_driver = TOPSPTI_CB_DOMAIN_DRIVER_API,
              .limit = 1024, .runtime_fallback = "topsRuntime", .driver_fallback = "topsDriver"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = {.copy_kinds = DT_COUNTED(copy_kinds), .memory_kinds = DT_COUNTED(memory_kinds),
              .copy_async_flag = TOPSPTI_ACTIVITY_FLAG_MEMCPY_ASYNC,
              .fill_async_flag = TOPSPTI_ACTIVITY_FLAG_MEMSET_ASYNC,
              .peer_copy_kind = TOPSPTI_ACTIVITY_MEMCPY_KIND_PTOP},
    .clock_domain = "the device's own clock (topsptiGetTimestamp), mapped to CLOCK_REALTIME",
};

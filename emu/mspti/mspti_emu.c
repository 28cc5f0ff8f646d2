/*
 * MSPTI personality of the emulator: libmspti.so with the entry points,
 * record layouts (compiled from src/backends/mspti_abi.h, devtrace's
 * declaration of the public headers) and behaviour of Ascend's MSPTI as its
 * public source (github.com/Ascend/mspti) implements them:
 *
 *  - msptiActivityGetNextRecord ignores the record it is given and walks
 *    with a cursor of the calling thread, which it resets only when it
 *    reaches the end: a client that stops early leaves it stale for its
 *    next buffer on that thread. It does not check that the record it
 *    returns fits in the valid bytes.
 *  - HCCL, MEMORY, MEMSET and MEMCPY (and enabling callback domains) need
 *    "libmspti.so" in LD_PRELOAD, or fail with MSPTI_ERROR_WITHOUT_LD_PRELOAD.
 *    MSPTI reads LD_PRELOAD once; the emulator reads it from the
 *    environment the process started with, since that is what lets the real
 *    library interpose CANN's runtime.
 *  - One subscriber at a time (MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
 *    FlushAll delivers on the caller's thread; FlushPeriod(ms); a buffer of
 *    less than 2 MB draws the library's warning (counted:
 *    emu_mspti_small_buffer_warnings).
 *  - Correlation ids are 64-bit; the emulator's exceed 2^32, so that no
 *    32-bit copy of one goes unnoticed. The callbacks' data carries only the
 *    site and the function's name: its correlation id is whatever the
 *    caller's stack held (here, a stack address).
 *  - Popping an external id into a NULL pointer fails without popping.
 *    External-correlation stacks are per thread, as the header documents;
 *    DEVTRACE_EMU_MSPTI_SHARED_STACK=1 gives the one process-wide stack per
 *    kind of the published implementation instead.
 *  - Every emulated API call is an AscendCL-level API record (ACL_API), and
 *    a collective is a communication record (or, with only HCCL enabled, an
 *    HCCL record).
 *
 * Variant EMU_MSPTI_2024 (emu_mspti_2024): MSPTI as released in late 2024,
 * before external correlation and the memory kinds: kinds MARKER, KERNEL,
 * API and HCCL; no msptiActivityFlushPeriod, external-correlation stack,
 * msptiGetTimestamp (records are CLOCK_REALTIME), msptiGetVersion or
 * dropped-record count; an unknown kind stops the iterator with
 * MSPTI_ERROR_INNER. Its API records are of kind API.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mspti_abi.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef EMU_MSPTI_2024
#define LATER 0
#define API_KIND MSPTI_ACTIVITY_KIND_API
#define ITERATOR_UNKNOWN_KIND MSPTI_ERROR_INNER
#else
#define LATER 1
#define API_KIND MSPTI_ACTIVITY_KIND_ACL_API
#define ITERATOR_UNKNOWN_KIND MSPTI_ERROR_INVALID_KIND
#endif

/* Every correlation id is above 2^32. */
#define CORRELATION_BASE (UINT64_C(1) << 32)
#define MIN_BUFFER (2u << 20)
/* A kind no MSPTI release has (the unknown_kind fault). */
#define UNKNOWN_KIND 0x4d53 /* "MS" */
#define UNKNOWN_SIZE 24

/* The marker lives in its own section so that AddressSanitizer leaves it
   alone: variants loaded into one process all define it. */
EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_mspti_emulator[] =
    "devtrace MSPTI emulator, ABI of mspti_abi.h";

EXPORT uint64_t emu_mspti_small_buffer_warnings(void);

/* ------------------------------------------------------------------ */
/* Kinds                                                               */
/* ------------------------------------------------------------------ */
static _Atomic int g_enabled[MSPTI_ACTIVITY_KIND_COUNT];
static _Atomic uint64_t g_small_buffers;

/* The kinds this release has. */
static int supported(int kind)
{
    switch (kind) {
    case MSPTI_ACTIVITY_KIND_MARKER:
    case MSPTI_ACTIVITY_KIND_KERNEL:
    case MSPTI_ACTIVITY_KIND_API:
    case MSPTI_ACTIVITY_KIND_HCCL:
        return 1;
    case MSPTI_ACTIVITY_KIND_MEMORY:
    case MSPTI_ACTIVITY_KIND_MEMSET:
    case MSPTI_ACTIVITY_KIND_MEMCPY:
    case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
    case MSPTI_ACTIVITY_KIND_COMMUNICATION:
    case MSPTI_ACTIVITY_KIND_ACL_API:
    case MSPTI_ACTIVITY_KIND_NODE_API:
    case MSPTI_ACTIVITY_KIND_RUNTIME_API:
    case MSPTI_ACTIVITY_KIND_OVERHEAD:
        return LATER;
    default:
        return 0;
    }
}

/* Bytes of a record of a kind, as GetNextRecord steps: 0 for a kind it
   does not know. */
static size_t kind_size(uint32_t kind)
{
    if (!supported((int)kind)) return 0;
    switch (kind) {
    case MSPTI_ACTIVITY_KIND_MARKER: return sizeof(msptiActivityMarker);
    case MSPTI_ACTIVITY_KIND_KERNEL: return sizeof(msptiActivityKernel);
    case MSPTI_ACTIVITY_KIND_HCCL: return sizeof(msptiActivityHccl);
    case MSPTI_ACTIVITY_KIND_MEMORY: return sizeof(msptiActivityMemory);
    case MSPTI_ACTIVITY_KIND_MEMSET: return sizeof(msptiActivityMemset);
    case MSPTI_ACTIVITY_KIND_MEMCPY: return sizeof(msptiActivityMemcpy);
    case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(msptiActivityExternalCorrelation);
    case MSPTI_ACTIVITY_KIND_COMMUNICATION: return sizeof(msptiActivityCommunication);
    case MSPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(msptiActivityOverhead);
    default: return sizeof(msptiActivityApi); /* the four API kinds */
    }
}

/* A collective is a communication record when that kind is on, else an
   HCCL record. */
static uint32_t collective_kind(void)
{
    return atomic_load(&g_enabled[MSPTI_ACTIVITY_KIND_COMMUNICATION]) ? MSPTI_ACTIVITY_KIND_COMMUNICATION
                                                                       : MSPTI_ACTIVITY_KIND_HCCL;
}

/* Whether LD_PRELOAD named libmspti.so when the process started: read from
   the environment the process started with, which setenv cannot change. */
static int g_preloaded;

static void read_start_environment(void)
{
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) return;
    char entry[8192];
    size_t n = 0;
    for (int c; (c = fgetc(f)) != EOF;) {
        if (c != '\0') {
            if (n + 1 < sizeof entry) entry[n++] = (char)c;
            continue;
        }
        entry[n] = '\0';
        if (strncmp(entry, "LD_PRELOAD=", 11) == 0 && strstr(entry + 11, "libmspti.so")) g_preloaded = 1;
        n = 0;
    }
    fclose(f);
}

static int preloaded(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_start_environment);
    return g_preloaded;
}

/* The kinds whose records come from interposing CANN's runtime. */
static int needs_preload(int kind)
{
    return kind == MSPTI_ACTIVITY_KIND_HCCL || kind == MSPTI_ACTIVITY_KIND_MEMORY ||
           kind == MSPTI_ACTIVITY_KIND_MEMSET || kind == MSPTI_ACTIVITY_KIND_MEMCPY;
}

/* The core's kind of an MSPTI kind; EMU_REC_COUNT: none (the emulated
   runtime makes no such records). */
static emu_rec_kind core_kind(int kind)
{
    switch (kind) {
    case MSPTI_ACTIVITY_KIND_KERNEL: return EMU_REC_KERNEL;
    case MSPTI_ACTIVITY_KIND_MEMCPY: return EMU_REC_MEMCPY;
    case MSPTI_ACTIVITY_KIND_MEMSET: return EMU_REC_MEMSET;
    case MSPTI_ACTIVITY_KIND_MEMORY: return EMU_REC_MEMORY;
    case API_KIND: return EMU_REC_RUNTIME;
    case MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return EMU_REC_EXTERNAL;
    case MSPTI_ACTIVITY_KIND_MARKER: return EMU_REC_MARKER;
    case MSPTI_ACTIVITY_KIND_HCCL:
    case MSPTI_ACTIVITY_KIND_COMMUNICATION: return EMU_REC_COLLECTIVE;
    default: return EMU_REC_COUNT;
    }
}

static msptiResult set_kind(int kind, int on)
{
    if (!supported(kind)) return MSPTI_ERROR_INVALID_PARAMETER;
    if (on && needs_preload(kind) && !preloaded()) return MSPTI_ERROR_WITHOUT_LD_PRELOAD;
    atomic_store(&g_enabled[kind], on);
    emu_rec_kind k = core_kind(kind);
    if (k == EMU_REC_COLLECTIVE)
        on = atomic_load(&g_enabled[MSPTI_ACTIVITY_KIND_HCCL]) || atomic_load(&g_enabled[MSPTI_ACTIVITY_KIND_COMMUNICATION]);
    if (k != EMU_REC_COUNT) emu_core_enable(k, on);
    return MSPTI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Calls and their names                                               */
/* ------------------------------------------------------------------ */
/* Calls with no callback id (the callback tables do not have them): API
   records only. */
enum { CALL_SYNCHRONIZE_DEVICE = 100, CALL_HCCL_ALLREDUCE = 101 };

static const char *msp_callback_name(emu_domain domain, uint32_t cbid)
{
    if (domain != EMU_DOMAIN_RUNTIME) return NULL;
    switch (cbid) {
    case MSPTI_CBID_RUNTIME_STREAM_SYNCHRONIZED: return "aclrtSynchronizeStream";
    case MSPTI_CBID_RUNTIME_LAUNCH: return "aclrtLaunchKernel";
    case MSPTI_CBID_RUNTIME_MEMCPY: return "aclrtMemcpy";
    case MSPTI_CBID_RUNTIME_MEMCPY_ASYNC: return "aclrtMemcpyAsync";
    case MSPTI_CBID_RUNTIME_MEM_SET: return "aclrtMemset";
    case MSPTI_CBID_RUNTIME_MEM_SET_ASYNC: return "aclrtMemsetAsync";
    case MSPTI_CBID_RUNTIME_MALLOC: return "aclrtMalloc";
    case MSPTI_CBID_RUNTIME_FREE: return "aclrtFree";
    case CALL_SYNCHRONIZE_DEVICE: return "aclrtSynchronizeDevice";
    case CALL_HCCL_ALLREDUCE: return "HcclAllReduce";
    default: return NULL;
    }
}

static uint32_t msp_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    (void)ck;
    if (domain != EMU_DOMAIN_RUNTIME) return 0;
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return MSPTI_CBID_RUNTIME_LAUNCH;
    case EMU_OP_MEMCPY: return MSPTI_CBID_RUNTIME_MEMCPY;
    case EMU_OP_MEMCPY_ASYNC: return MSPTI_CBID_RUNTIME_MEMCPY_ASYNC;
    case EMU_OP_MEMSET: return MSPTI_CBID_RUNTIME_MEM_SET;
    case EMU_OP_MEMSET_ASYNC: return MSPTI_CBID_RUNTIME_MEM_SET_ASYNC;
    case EMU_OP_STREAM_SYNCHRONIZE: return MSPTI_CBID_RUNTIME_STREAM_SYNCHRONIZED;
    case EMU_OP_DEVICE_SYNCHRONIZE: return CALL_SYNCHRONIZE_DEVICE;
    case EMU_OP_COLLECTIVE: return CALL_HCCL_ALLREDUCE;
    case EMU_OP_MALLOC: return MSPTI_CBID_RUNTIME_MALLOC;
    case EMU_OP_FREE: return MSPTI_CBID_RUNTIME_FREE;
    default: return 0;
    }
}

static void msp_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    if (call->cbid >= MSPTI_CBID_RUNTIME_SIZE || !client_fn) return;
    msptiCallbackData data;
    memset(&data, 0, sizeof data);
    data.callbackSite = call->site == EMU_SITE_ENTER ? MSPTI_API_ENTER : MSPTI_API_EXIT;
    data.functionName = call->function_name;
    /* the library never sets it: a stack address, as an unset field holds */
    data.correlationId = (uint64_t)(uintptr_t)&data;
    ((msptiCallbackFunc)(void *)client_fn)(userdata, MSPTI_CB_DOMAIN_RUNTIME, call->cbid, &data);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
static size_t msp_record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL: return sizeof(msptiActivityKernel);
    case EMU_REC_MEMCPY: return LATER ? sizeof(msptiActivityMemcpy) : 0;
    case EMU_REC_MEMSET: return LATER ? sizeof(msptiActivityMemset) : 0;
    case EMU_REC_MEMORY: return LATER ? sizeof(msptiActivityMemory) : 0;
    case EMU_REC_RUNTIME: return sizeof(msptiActivityApi);
    case EMU_REC_EXTERNAL: return LATER ? sizeof(msptiActivityExternalCorrelation) : 0;
    case EMU_REC_MARKER: return sizeof(msptiActivityMarker);
    case EMU_REC_COLLECTIVE: return kind_size(collective_kind());
    case EMU_REC_UNKNOWN: return UNKNOWN_SIZE;
    default: return 0;
    }
}

static emu_rec_kind msp_record_kind(const uint8_t *rec, size_t avail)
{
    uint32_t kind;
    if (avail < sizeof kind) return EMU_REC_UNKNOWN;
    memcpy(&kind, rec, sizeof kind);
    if (kind == MSPTI_ACTIVITY_KIND_HCCL || kind == MSPTI_ACTIVITY_KIND_COMMUNICATION)
        return kind == collective_kind() ? EMU_REC_COLLECTIVE : EMU_REC_UNKNOWN;
    if (!kind_size(kind)) return EMU_REC_UNKNOWN;
    emu_rec_kind k = core_kind((int)kind);
    return k == EMU_REC_COUNT ? EMU_REC_UNKNOWN : k;
}

static uint32_t copy_kind(emu_copy_kind k)
{
    switch (k) {
    case EMU_COPY_HTOD: return MSPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case EMU_COPY_DTOH: return MSPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case EMU_COPY_DTOD: return MSPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case EMU_COPY_HTOH: return MSPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    default: return MSPTI_ACTIVITY_MEMCPY_KIND_DEFAULT; /* no peer kind: by address */
    }
}

/* Element sizes of HCCL's data types, for an HCCL record's bandwidth. */
static unsigned element_size(int t)
{
    static const uint8_t sizes[] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16, 0, 1, 1, 1, 1};
    return t >= 0 && (size_t)t < sizeof sizes ? sizes[t] : 0;
}

static msptiActivityFlag marker_flag(unsigned f)
{
    int dev = (f & EMU_MARK_ON_STREAM) != 0;
    if (f & EMU_MARK_START) return dev ? MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE : MSPTI_ACTIVITY_FLAG_MARKER_START;
    if (f & EMU_MARK_END) return dev ? MSPTI_ACTIVITY_FLAG_MARKER_END_WITH_DEVICE : MSPTI_ACTIVITY_FLAG_MARKER_END;
    return dev ? MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS_WITH_DEVICE : MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
}

static void msp_write_record(uint8_t *dst, const emu_activity *a)
{
    uint64_t corr = CORRELATION_BASE + a->correlation;
    switch (a->kind) {
    case EMU_REC_KERNEL: {
        msptiActivityKernel k = {.kind = MSPTI_ACTIVITY_KIND_KERNEL, .start = a->start, .end = a->end,
                                 .ds = {a->device, a->stream}, .correlationId = corr, .type = "KERNEL_AICORE",
                                 .name = a->u.kernel.name};
        memcpy(dst, &k, sizeof k);
        return;
    }
    case EMU_REC_MEMCPY: {
        msptiActivityMemcpy m = {.kind = MSPTI_ACTIVITY_KIND_MEMCPY,
                                 .copyKind = (msptiActivityMemcpyKind)copy_kind(a->u.memcpy.copy_kind),
                                 .bytes = a->u.memcpy.bytes, .start = a->start, .end = a->end,
                                 .deviceId = a->device, .streamId = a->stream, .correlationId = corr,
                                 .isAsync = (uint8_t)(a->u.memcpy.async != 0)};
        memcpy(dst, &m, sizeof m);
        return;
    }
    case EMU_REC_MEMSET: {
        msptiActivityMemset m = {.kind = MSPTI_ACTIVITY_KIND_MEMSET, .value = a->u.memset.value,
                                 .bytes = a->u.memset.bytes, .start = a->start, .end = a->end,
                                 .deviceId = a->device, .streamId = a->stream, .correlationId = corr,
                                 .isAsync = (uint8_t)(a->u.memset.async != 0)};
        memcpy(dst, &m, sizeof m);
        return;
    }
    case EMU_REC_MEMORY: {
        /* a call on no stream; a free names the block's size (inferred:
           the header does not say what a release's bytes hold) */
        msptiActivityMemory m = {
            .kind = MSPTI_ACTIVITY_KIND_MEMORY,
            .memoryOperationType = a->u.memory.is_free ? MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
                                                       : MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
            .memoryKind = a->u.memory.memory == EMU_MEM_PINNED ? MSPTI_ACTIVITY_MEMORY_HOST : MSPTI_ACTIVITY_MEMORY_DEVICE,
            .correlationId = corr, .start = a->start, .end = a->end, .address = a->u.memory.address,
            .bytes = a->u.memory.bytes, .processId = a->u.memory.process, .deviceId = a->device,
            .streamId = MSPTI_INVALID_STREAM_ID};
        memcpy(dst, &m, sizeof m);
        return;
    }
    case EMU_REC_RUNTIME: {
        msptiActivityApi m = {.kind = API_KIND, .start = a->start, .end = a->end,
                              .pt = {a->u.api.process, a->u.api.thread}, .correlationId = corr,
                              .name = msp_callback_name(EMU_DOMAIN_RUNTIME, a->u.api.cbid)};
        memcpy(dst, &m, sizeof m);
        return;
    }
    case EMU_REC_EXTERNAL: {
        msptiActivityExternalCorrelation x = {.kind = MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                              .externalKind = (msptiExternalCorrelationKind)a->u.external.external_kind,
                                              .externalId = a->u.external.external_id, .correlationId = corr};
        memcpy(dst, &x, sizeof x);
        return;
    }
    case EMU_REC_MARKER: {
        unsigned f = a->u.marker.flags;
        msptiActivityMarker m = {.kind = MSPTI_ACTIVITY_KIND_MARKER, .flag = marker_flag(f),
                                 .timestamp = a->start, .id = a->u.marker.id, .name = a->u.marker.name};
        if (f & EMU_MARK_SOURCE_DEVICE) {
            m.sourceKind = MSPTI_ACTIVITY_SOURCE_KIND_DEVICE;
            m.objectId.ds.deviceId = a->device;
            m.objectId.ds.streamId = a->stream;
        } else {
            m.sourceKind = MSPTI_ACTIVITY_SOURCE_KIND_HOST;
            m.objectId.pt.processId = a->u.marker.process;
            m.objectId.pt.threadId = a->u.marker.thread;
        }
        memcpy(dst, &m, sizeof m);
        return;
    }
    case EMU_REC_COLLECTIVE:
        if (collective_kind() == MSPTI_ACTIVITY_KIND_COMMUNICATION) {
            msptiActivityCommunication m = {
                .kind = MSPTI_ACTIVITY_KIND_COMMUNICATION,
                .dataType = (msptiCommunicationDataType)a->u.collective.data_type, .count = a->u.collective.count,
                .ds = {a->device, a->stream}, .start = a->start, .end = a->end,
                .algType = a->u.collective.algorithm, .name = a->u.collective.name,
                .commName = a->u.collective.group, .correlationId = corr};
            memcpy(dst, &m, sizeof m);
        } else {
            uint64_t dur = a->end > a->start ? a->end - a->start : 0;
            double bytes = (double)a->u.collective.count * element_size(a->u.collective.data_type);
            msptiActivityHccl h = {.kind = MSPTI_ACTIVITY_KIND_HCCL, .start = a->start, .end = a->end,
                                   .ds = {a->device, a->stream}, .bandWidth = dur ? bytes / (double)dur : 0.0,
                                   .name = a->u.collective.name, .commName = a->u.collective.group};
            memcpy(dst, &h, sizeof h);
        }
        return;
    case EMU_REC_UNKNOWN: {
        uint32_t k = UNKNOWN_KIND;
        memcpy(dst, &k, sizeof k);
        memcpy(dst + 8, &corr, sizeof corr);
        return;
    }
    default:
        return;
    }
}

static void msp_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid_size)
{
    ((msptiBuffersCallbackCompleteFunc)(void *)client_fn)(buffer, size, valid_size);
}

static void msp_buffer_received(size_t size)
{
    /* ActivityBuffer::Init: "Please malloc the Activity Buffer more than 2MB" */
    if (size < MIN_BUFFER) atomic_fetch_add(&g_small_buffers, 1);
}

EXPORT uint64_t emu_mspti_small_buffer_warnings(void)
{
    return atomic_load(&g_small_buffers);
}

/* ------------------------------------------------------------------ */
/* External correlation                                                */
/* ------------------------------------------------------------------ */
#define EXT_KINDS MSPTI_EXTERNAL_CORRELATION_KIND_SIZE

typedef struct ext_stacks {
    uint64_t *ids[EXT_KINDS];
    size_t n[EXT_KINDS], cap[EXT_KINDS];
} ext_stacks;

static pthread_key_t g_ext_key;
static pthread_once_t g_ext_once = PTHREAD_ONCE_INIT;
static int g_shared_stack;
static ext_stacks g_shared;
static pthread_mutex_t g_shared_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_stacks(void *p)
{
    ext_stacks *s = p;
    for (int k = 0; k < EXT_KINDS; k++) free(s->ids[k]);
    free(s);
}

static void ext_init(void)
{
    pthread_key_create(&g_ext_key, free_stacks);
    const char *v = getenv("DEVTRACE_EMU_MSPTI_SHARED_STACK");
    g_shared_stack = v && strcmp(v, "1") == 0;
}

/* This thread's stacks, or the process's (shared lock held then). */
static ext_stacks *stacks_lock(void)
{
    pthread_once(&g_ext_once, ext_init);
    if (g_shared_stack) {
        pthread_mutex_lock(&g_shared_lock);
        return &g_shared;
    }
    ext_stacks *s = pthread_getspecific(g_ext_key);
    if (!s && (s = calloc(1, sizeof *s)) != NULL) pthread_setspecific(g_ext_key, s);
    return s;
}

static void stacks_unlock(void)
{
    if (g_shared_stack) pthread_mutex_unlock(&g_shared_lock);
}

static int msp_external_top(uint32_t kind, uint64_t *id)
{
    if (kind >= EXT_KINDS) return 0;
    ext_stacks *s = stacks_lock();
    int have = s && s->n[kind] > 0;
    if (have) *id = s->ids[kind][s->n[kind] - 1];
    stacks_unlock();
    return have;
}

const struct emu_vendor emu_vendor_impl = {
    .name = "mspti",
    .record_size = msp_record_size,
    .write_record = msp_write_record,
    .record_kind = msp_record_kind,
    .complete_buffer = msp_complete_buffer,
    .invoke_callback = msp_invoke_callback,
    .cbid = msp_cbid,
    .callback_name = msp_callback_name,
    .default_thread_id_type = EMU_TID_SYSTEM,
    .external_top = msp_external_top,
    .buffer_received = msp_buffer_received,
    /* without msptiGetTimestamp the records' clock is CLOCK_REALTIME */
    .clock_is_realtime = !LATER,
    .preload = "libmspti.so",
};

/* ------------------------------------------------------------------ */
/* Exported MSPTI entry points                                         */
/* ------------------------------------------------------------------ */
static msptiResult result_of(emu_status st)
{
    switch (st) {
    case EMU_ST_OK: return MSPTI_SUCCESS;
    case EMU_ST_BUSY: return MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    case EMU_ST_END: return MSPTI_ERROR_MAX_LIMIT_REACHED;
    default: return MSPTI_ERROR_INVALID_PARAMETER;
    }
}

EXPORT msptiResult msptiActivityRegisterCallbacks(msptiBuffersCallbackRequestFunc funcBufferRequested,
                                                  msptiBuffersCallbackCompleteFunc funcBufferCompleted)
{
    return result_of(emu_core_register_buffers((emu_request_fn)funcBufferRequested,
                                               (emu_generic_fn)(void *)funcBufferCompleted));
}

EXPORT msptiResult msptiActivityEnable(msptiActivityKind kind)
{
    return set_kind((int)kind, 1);
}

EXPORT msptiResult msptiActivityDisable(msptiActivityKind kind)
{
    return set_kind((int)kind, 0);
}

EXPORT msptiResult msptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, msptiActivity **record)
{
    /* the record given is ignored: the cursor is this thread's */
    static _Thread_local size_t pos;
    if (!buffer || !record) return MSPTI_ERROR_INVALID_PARAMETER;
    if (pos >= validBufferSizeBytes) {
        pos = 0;
        return MSPTI_ERROR_MAX_LIMIT_REACHED;
    }
    uint32_t kind;
    memcpy(&kind, buffer + pos, sizeof kind);
    size_t size = kind_size(kind);
    if (!size) return ITERATOR_UNKNOWN_KIND; /* the cursor stays where it is */
    *record = (msptiActivity *)(void *)(buffer + pos);
    pos += size;
    return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityFlushAll(uint32_t flag)
{
    (void)flag; /* reserved */
    return result_of(emu_core_flush_all(1));
}

EXPORT msptiResult msptiSubscribe(msptiSubscriberHandle *subscriber, msptiCallbackFunc callback, void *userdata)
{
    if (!subscriber) return MSPTI_ERROR_INVALID_PARAMETER;
    void *h = NULL;
    emu_status st = emu_core_subscribe(&h, (emu_generic_fn)(void *)callback, userdata);
    if (st == EMU_ST_OK) *subscriber = (msptiSubscriberHandle)h;
    return result_of(st);
}

EXPORT msptiResult msptiUnsubscribe(msptiSubscriberHandle subscriber)
{
    if (!subscriber) return MSPTI_ERROR_INVALID_PARAMETER;
    emu_status st = emu_core_unsubscribe((void *)subscriber);
    return result_of(st);
}

static int domain_of(msptiCallbackDomain domain, emu_domain *out)
{
    if (domain == MSPTI_CB_DOMAIN_RUNTIME) *out = EMU_DOMAIN_RUNTIME;
    else if (domain == MSPTI_CB_DOMAIN_HCCL) *out = EMU_DOMAIN_DRIVER;
    else return 0;
    return 1;
}

EXPORT msptiResult msptiEnableDomain(uint32_t enable, msptiSubscriberHandle subscriber, msptiCallbackDomain domain)
{
    if (!preloaded()) return MSPTI_ERROR_WITHOUT_LD_PRELOAD;
    emu_domain d;
    if (!domain_of(domain, &d)) return MSPTI_ERROR_INVALID_PARAMETER;
    return result_of(emu_core_enable_domain((void *)subscriber, d, enable != 0));
}

/* Per callback id: the emulator's callbacks are per domain, so one id
   turns its whole domain on or off. */
EXPORT msptiResult msptiEnableCallback(uint32_t enable, msptiSubscriberHandle subscriber, msptiCallbackDomain domain,
                                       msptiCallbackId cbid)
{
    if (cbid >= 64) return MSPTI_ERROR_INVALID_PARAMETER;
    return msptiEnableDomain(enable, subscriber, domain);
}

#if LATER
EXPORT msptiResult msptiActivityFlushPeriod(uint32_t time)
{
    return result_of(emu_core_flush_period(time));
}

EXPORT msptiResult msptiActivityPushExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t id)
{
    if ((unsigned)kind >= EXT_KINDS) return MSPTI_ERROR_INVALID_PARAMETER;
    ext_stacks *s = stacks_lock();
    msptiResult r = MSPTI_ERROR_INNER;
    if (s && emu_core_grow_for_one((void **)&s->ids[kind], &s->cap[kind], s->n[kind], sizeof *s->ids[kind], 64) == 0) {
        s->ids[kind][s->n[kind]++] = id;
        r = MSPTI_SUCCESS;
    }
    stacks_unlock();
    return r;
}

EXPORT msptiResult msptiActivityPopExternalCorrelationId(msptiExternalCorrelationKind kind, uint64_t *lastId)
{
    /* checked before anything is popped: a NULL pointer leaves the id on */
    if (!lastId || (unsigned)kind >= EXT_KINDS) return MSPTI_ERROR_INVALID_PARAMETER;
    ext_stacks *s = stacks_lock();
    msptiResult r = MSPTI_ERROR_QUEUE_EMPTY;
    if (s && s->n[kind] > 0) {
        *lastId = s->ids[kind][--s->n[kind]];
        r = MSPTI_SUCCESS;
    }
    stacks_unlock();
    return r;
}

EXPORT bool msptiActivityIsEnabled(msptiActivityKind kind)
{
    return (unsigned)kind < MSPTI_ACTIVITY_KIND_COUNT && atomic_load(&g_enabled[kind]);
}

EXPORT msptiResult msptiActivityEnableMarkerDomain(const char *name)
{
    return name ? MSPTI_SUCCESS : MSPTI_ERROR_INVALID_PARAMETER;
}

EXPORT msptiResult msptiActivityDisableMarkerDomain(const char *name)
{
    return name ? MSPTI_SUCCESS : MSPTI_ERROR_INVALID_PARAMETER;
}

/* The development version's. */
EXPORT msptiResult msptiGetVersion(uint32_t *version)
{
    if (!version) return MSPTI_ERROR_INVALID_PARAMETER;
    *version = 260200; /* 26.2.0, as xxyyzz */
    return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp) return MSPTI_ERROR_INVALID_PARAMETER;
    *timestamp = emu_core_timestamp();
    return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityGetNumDroppedRecords(void *context, uint32_t streamId, size_t *dropped)
{
    (void)context;
    (void)streamId;
    if (!dropped) return MSPTI_ERROR_INVALID_PARAMETER;
    *dropped = emu_core_take_dropped();
    return MSPTI_SUCCESS;
}

EXPORT msptiResult msptiActivityGetStructSize(msptiActivityKind kind, uint32_t version, size_t *size)
{
    (void)version; /* every layout is as old as its kind */
    if (!size) return MSPTI_ERROR_INVALID_PARAMETER;
    size_t n = (unsigned)kind < MSPTI_ACTIVITY_KIND_COUNT ? kind_size(kind) : 0;
    if (!n) return MSPTI_ERROR_INVALID_KIND;
    *size = n;
    return MSPTI_SUCCESS;
}
#endif /* LATER */

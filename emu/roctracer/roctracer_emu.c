/*
 * roctracer personality of the emulator: libroctracer64.so (and, as DTK has
 * it, libgalaxyhip.so.5) with the entry points and records of
 * src/backends/roctracer_abi.h, the public roctracer 4.1 interface:
 *  - one pool of two buffers allocated through the client's allocator,
 *    filled in turn and handed to the client's buffer callback from a
 *    consumer thread of the pool's own; a producer that finds the next
 *    buffer still with the consumer waits (roctracer never drops);
 *  - records of 64 bytes; a dispatch's kernel name copied into the buffer
 *    from its end downwards;
 *  - HIP_API activity with an EXT_API record (correlation id -> the
 *    innermost external id of the calling thread) right before the API
 *    record it tags; an unbounded external-correlation stack per thread;
 *  - HIP API callbacks per operation with hip_api_data_t as HIP 5.2.3 lays
 *    it out (HIP 5.2.3's operation ids and names), ROCTX callbacks through
 *    roctx entry points exported here (libroctx64's on ROCm);
 *  - HIP's device queries (hipGetDeviceCount, hipDeviceGetAttribute with
 *    HIP >= 5.0's numbering, hipDeviceGetName, hipDeviceTotalMem,
 *    hipRuntimeGetVersion), as DTK's libgalaxyhip has them beside roctracer.
 *
 * Build variants (same source):
 *   EMU_RT_BARE  only the entry points every roctracer client needs (no
 *                callbacks, names, external correlation or HIP queries).
 *
 * Environment: DEVTRACE_EMU_HIP_VERSION overrides what hipRuntimeGetVersion
 * reports; DEVTRACE_EMU_HIP_ATTR_FAIL lists attribute numbers (comma-
 * separated) that hipDeviceGetAttribute refuses, besides those HIP refuses
 * on AMD devices (the CUDA-only ones).
 *
 * Not emulated: roctracer_stop pausing records (a no-op here), HSA and KFD
 * domains (enabling them succeeds and produces nothing), more than one pool.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/roctracer_abi.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

/* The public header declares these; devtrace's declaration has their types
   only. */
EXPORT roctracer_status_t roctracer_open_pool_expl(const roctracer_properties_t *, roctracer_pool_t **);
EXPORT roctracer_status_t roctracer_open_pool(const roctracer_properties_t *);
EXPORT roctracer_status_t roctracer_flush_activity_expl(roctracer_pool_t *);
EXPORT roctracer_status_t roctracer_flush_activity(void);
EXPORT roctracer_status_t roctracer_close_pool_expl(roctracer_pool_t *);
EXPORT roctracer_status_t roctracer_close_pool(void);
EXPORT roctracer_pool_t *roctracer_default_pool(void);
EXPORT roctracer_status_t roctracer_enable_domain_activity_expl(roctracer_domain_t, roctracer_pool_t *);
EXPORT roctracer_status_t roctracer_enable_domain_activity(roctracer_domain_t);
EXPORT roctracer_status_t roctracer_disable_domain_activity(roctracer_domain_t);
EXPORT roctracer_status_t roctracer_get_timestamp(roctracer_timestamp_t *);
#ifndef EMU_RT_BARE
EXPORT roctracer_status_t roctracer_enable_domain_callback(activity_domain_t, activity_rtapi_callback_t, void *);
EXPORT roctracer_status_t roctracer_enable_op_callback(activity_domain_t, uint32_t, activity_rtapi_callback_t, void *);
EXPORT roctracer_status_t roctracer_disable_domain_callback(activity_domain_t);
EXPORT roctracer_status_t roctracer_disable_op_callback(activity_domain_t, uint32_t);
EXPORT const char *roctracer_op_string(uint32_t, uint32_t, uint32_t);
EXPORT roctracer_status_t roctracer_op_code(uint32_t, const char *, uint32_t *, uint32_t *);
EXPORT uint32_t roctracer_version_major(void);
EXPORT uint32_t roctracer_version_minor(void);
EXPORT const char *roctracer_error_string(void);
EXPORT roctracer_status_t roctracer_activity_push_external_correlation_id(activity_correlation_id_t);
EXPORT roctracer_status_t roctracer_activity_pop_external_correlation_id(activity_correlation_id_t *);
EXPORT void roctracer_start(void);
EXPORT void roctracer_stop(void);
EXPORT void roctxMarkA(const char *);
EXPORT int roctxRangePushA(const char *);
EXPORT int roctxRangePop(void);
EXPORT uint64_t roctxRangeStartA(const char *);
EXPORT void roctxRangeStop(uint64_t);
EXPORT int hipGetDeviceCount(int *);
EXPORT int hipDeviceGetAttribute(int *, int, int);
EXPORT int hipDeviceGetName(char *, int, int);
EXPORT int hipDeviceTotalMem(size_t *, int);
EXPORT int hipRuntimeGetVersion(int *);
#endif

/* The marker lives in its own section so that AddressSanitizer leaves it
   alone when variants are loaded into one process. */
EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_roctracer_emulator[] =
    "devtrace roctracer emulator, ABI of roctracer_abi.h";

/* ------------------------------------------------------------------ */
/* HIP 5.2.3's API ids and names (hip/amd_detail/hip_prof_str.h)       */
/* ------------------------------------------------------------------ */
enum {
    HIP_ID_hipDeviceSynchronize = 48,
    HIP_ID_hipExtLaunchKernel = 62,
    HIP_ID_hipExtModuleLaunchKernel = 65,
    HIP_ID_hipHccModuleLaunchKernel = 88,
    HIP_ID_hipLaunchCooperativeKernel = 105,
    HIP_ID_hipLaunchKernel = 107,
    HIP_ID_hipMemcpy = 125,
    HIP_ID_hipMemcpyAsync = 134,
    HIP_ID_hipMemset = 154,
    HIP_ID_hipMemsetAsync = 159,
    HIP_ID_hipMemsetD16 = 160,
    HIP_ID_hipMemsetD16Async = 161,
    HIP_ID_hipMemsetD32 = 162,
    HIP_ID_hipMemsetD32Async = 163,
    HIP_ID_hipMemsetD8 = 164,
    HIP_ID_hipMemsetD8Async = 165,
    HIP_ID_hipModuleLaunchKernel = 169,
    HIP_ID_hipStreamSynchronize = 199,
    HIP_ID_LAST = 333,
};
#define HIP_OPS_COUNT (HIP_ID_LAST + 1)

static const char *const hip_names[HIP_OPS_COUNT] = {
    [HIP_ID_hipDeviceSynchronize] = "hipDeviceSynchronize",
    [HIP_ID_hipExtLaunchKernel] = "hipExtLaunchKernel",
    [HIP_ID_hipExtModuleLaunchKernel] = "hipExtModuleLaunchKernel",
    [HIP_ID_hipHccModuleLaunchKernel] = "hipHccModuleLaunchKernel",
    [HIP_ID_hipLaunchCooperativeKernel] = "hipLaunchCooperativeKernel",
    [HIP_ID_hipLaunchKernel] = "hipLaunchKernel",
    [HIP_ID_hipMemcpy] = "hipMemcpy",
    [HIP_ID_hipMemcpyAsync] = "hipMemcpyAsync",
    [HIP_ID_hipMemset] = "hipMemset",
    [HIP_ID_hipMemsetAsync] = "hipMemsetAsync",
    [HIP_ID_hipMemsetD16] = "hipMemsetD16",
    [HIP_ID_hipMemsetD16Async] = "hipMemsetD16Async",
    [HIP_ID_hipMemsetD32] = "hipMemsetD32",
    [HIP_ID_hipMemsetD32Async] = "hipMemsetD32Async",
    [HIP_ID_hipMemsetD8] = "hipMemsetD8",
    [HIP_ID_hipMemsetD8Async] = "hipMemsetD8Async",
    [HIP_ID_hipModuleLaunchKernel] = "hipModuleLaunchKernel",
    [HIP_ID_hipStreamSynchronize] = "hipStreamSynchronize",
};

static const char *hip_name(uint32_t id)
{
    return id < HIP_OPS_COUNT ? hip_names[id] : NULL;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
/* A domain roctracer never defined: the unknown_kind fault's records. */
#define EMU_RT_NO_SUCH_DOMAIN 64

static size_t rt_record_size(emu_rec_kind kind)
{
    return kind == EMU_REC_DRIVER ? 0 : DT_RT_RECORD_SIZE; /* HIP has no driver API domain here */
}

static uint32_t copy_command(emu_copy_kind k)
{
    switch (k) {
    case EMU_COPY_HTOD: return DT_RT_CMD_WRITE;
    case EMU_COPY_DTOH: return DT_RT_CMD_READ;
    case EMU_COPY_HTOH: return DT_RT_CMD_SVM_MEMCPY; /* ROCclr's kind for host copies is not public */
    default: return DT_RT_CMD_COPY;                  /* device to device, peer */
    }
}

static void rt_write_record(uint8_t *dst, const emu_activity *a)
{
    activity_record_t r;
    memset(&r, 0, sizeof r);
    r.correlation_id = a->correlation;
    r.begin_ns = a->start;
    r.end_ns = a->end;
    switch (a->kind) {
    case EMU_REC_KERNEL:
        r.domain = ACTIVITY_DOMAIN_HIP_OPS;
        r.op = DT_RT_HIP_OP_DISPATCH;
        r.kind = DT_RT_CMD_KERNEL;
        r.device_id = (int)a->device;
        r.queue_id = a->stream;
        break;
    case EMU_REC_MEMCPY:
        r.domain = ACTIVITY_DOMAIN_HIP_OPS;
        r.op = DT_RT_HIP_OP_COPY;
        r.kind = copy_command(a->u.memcpy.copy_kind);
        r.device_id = (int)a->device;
        r.queue_id = a->stream;
        r.bytes = a->u.memcpy.bytes;
        break;
    case EMU_REC_MEMSET:
        r.domain = ACTIVITY_DOMAIN_HIP_OPS;
        r.op = DT_RT_HIP_OP_COPY;
        r.kind = DT_RT_CMD_FILL;
        r.device_id = (int)a->device;
        r.queue_id = a->stream;
        r.bytes = a->u.memset.bytes;
        break;
    case EMU_REC_RUNTIME:
        r.domain = ACTIVITY_DOMAIN_HIP_API;
        r.op = a->u.api.cbid;
        r.process_id = a->u.api.process;
        r.thread_id = a->u.api.thread;
        break;
    case EMU_REC_EXTERNAL:
        r.domain = ACTIVITY_DOMAIN_EXT_API;
        r.op = ACTIVITY_EXT_OP_EXTERN_ID;
        r.begin_ns = r.end_ns = 0;
        r.external_id = a->u.external.external_id;
        break;
    default:
        r.domain = EMU_RT_NO_SUCH_DOMAIN;
        break;
    }
    memcpy(dst, &r, sizeof r);
}

/* roctracer copies a dispatch's kernel name into the buffer (HIP runtimes
   that give none leave it NULL). */
static size_t rt_tail_size(const emu_activity *a)
{
    return a->kind == EMU_REC_KERNEL && a->u.kernel.name ? strlen(a->u.kernel.name) + 1 : 0;
}

static void rt_write_tail(uint8_t *record, uint8_t *tail, const emu_activity *a)
{
    memcpy(tail, a->u.kernel.name, strlen(a->u.kernel.name) + 1);
    const char *name = (const char *)tail;
    memcpy(record + offsetof(activity_record_t, kernel_name), &name, sizeof name);
}

static emu_rec_kind rt_record_kind(const uint8_t *rec, size_t avail)
{
    if (avail < 12) return EMU_REC_UNKNOWN;
    uint32_t domain, kind, op;
    memcpy(&domain, rec, 4);
    memcpy(&kind, rec + 4, 4);
    memcpy(&op, rec + 8, 4);
    switch (domain) {
    case ACTIVITY_DOMAIN_HIP_OPS:
        if (op == DT_RT_HIP_OP_DISPATCH) return EMU_REC_KERNEL;
        if (op == DT_RT_HIP_OP_COPY) return kind == DT_RT_CMD_FILL ? EMU_REC_MEMSET : EMU_REC_MEMCPY;
        return EMU_REC_UNKNOWN;
    case ACTIVITY_DOMAIN_HIP_API: return EMU_REC_RUNTIME;
    case ACTIVITY_DOMAIN_EXT_API: return EMU_REC_EXTERNAL;
    default: return EMU_REC_UNKNOWN;
    }
}

static uint32_t rt_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    (void)ck;
    if (domain != EMU_DOMAIN_RUNTIME) return 0;
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return HIP_ID_hipLaunchKernel;
    case EMU_OP_MEMCPY: return HIP_ID_hipMemcpy;
    case EMU_OP_MEMCPY_ASYNC: return HIP_ID_hipMemcpyAsync;
    case EMU_OP_MEMSET: return HIP_ID_hipMemset;
    case EMU_OP_MEMSET_ASYNC: return HIP_ID_hipMemsetAsync;
    case EMU_OP_STREAM_SYNCHRONIZE: return HIP_ID_hipStreamSynchronize;
    case EMU_OP_DEVICE_SYNCHRONIZE: return HIP_ID_hipDeviceSynchronize;
    default: return 0;
    }
}

static const char *rt_callback_name(emu_domain domain, uint32_t cbid)
{
    return domain == EMU_DOMAIN_RUNTIME ? hip_name(cbid) : NULL;
}

/* ------------------------------------------------------------------ */
/* The pool                                                            */
/* ------------------------------------------------------------------ */
enum { HALF_FREE, HALF_FILLING, HALF_QUEUED };

/* Taken inside the core's lock (the core asks for buffers with it held). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static struct {
    int open, stop, consuming;
    roctracer_properties_t props;
    char *mem;
    size_t half;
    int state[2];
    size_t valid[2];
    int next;           /* the half handed out next */
    int queue[2], queued;
    pthread_t consumer;
} g_pool;

static _Thread_local char t_error[160];

static roctracer_status_t fail(roctracer_status_t st, const char *what)
{
    snprintf(t_error, sizeof t_error, "%s", what);
    return st;
}

/* The core's buffer request (state lock held): the next half, once the
   consumer has given it back. */
static void pool_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *max_records = 0;
    *buffer = NULL;
    *size = 0;
    pthread_mutex_lock(&g_lock);
    int h = g_pool.next, waited = 0;
    while (g_pool.open && !g_pool.stop && g_pool.state[h] != HALF_FREE) {
        waited = 1;
        pthread_cond_wait(&g_cond, &g_lock);
    }
    if (waited) emu_core_buffer_waited();
    if (g_pool.open && !g_pool.stop) {
        g_pool.state[h] = HALF_FILLING;
        g_pool.next = 1 - h;
        *buffer = (uint8_t *)g_pool.mem + (size_t)h * g_pool.half;
        *size = g_pool.half;
    }
    pthread_mutex_unlock(&g_lock);
}

static void queue_half(uint8_t *buffer, size_t valid)
{
    pthread_mutex_lock(&g_lock);
    if (g_pool.open && buffer >= (uint8_t *)g_pool.mem && buffer < (uint8_t *)g_pool.mem + 2 * g_pool.half) {
        int h = (int)((buffer - (uint8_t *)g_pool.mem) / g_pool.half);
        g_pool.state[h] = HALF_QUEUED;
        g_pool.valid[h] = valid;
        g_pool.queue[g_pool.queued++] = h;
        pthread_cond_broadcast(&g_cond);
    }
    pthread_mutex_unlock(&g_lock);
}

static void rt_take_completed(uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    queue_half(buffer, valid);
}

/* A half the core handed back unused goes the same way. */
static void rt_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid)
{
    (void)client_fn;
    (void)size;
    queue_half(buffer, valid);
}

static void *consumer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_lock);
    for (;;) {
        while (!g_pool.stop && g_pool.queued == 0) pthread_cond_wait(&g_cond, &g_lock);
        if (g_pool.queued == 0) break;
        int h = g_pool.queue[0];
        g_pool.queue[0] = g_pool.queue[1];
        g_pool.queued--;
        g_pool.consuming = 1;
        roctracer_buffer_callback_t fn = g_pool.props.buffer_callback_fun;
        void *fn_arg = g_pool.props.buffer_callback_arg;
        const char *begin = g_pool.mem + (size_t)h * g_pool.half;
        size_t valid = g_pool.valid[h];
        pthread_mutex_unlock(&g_lock);
        fn(begin, begin + valid, fn_arg);
        pthread_mutex_lock(&g_lock);
        g_pool.state[h] = HALF_FREE;
        g_pool.consuming = 0;
        pthread_cond_broadcast(&g_cond);
    }
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static void pool_marker_complete(void) {}

static void allocate(char **ptr, size_t size)
{
    if (g_pool.props.alloc_fun) {
        g_pool.props.alloc_fun(ptr, size, g_pool.props.alloc_arg);
    } else if (size) {
        *ptr = malloc(size);
    } else {
        free(*ptr);
        *ptr = NULL;
    }
}

EXPORT roctracer_status_t roctracer_open_pool_expl(const roctracer_properties_t *properties, roctracer_pool_t **pool)
{
    emu_init();
    if (!properties || !properties->buffer_callback_fun || properties->buffer_size < 2 * DT_RT_RECORD_SIZE)
        return fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid pool properties");
    pthread_mutex_lock(&g_lock);
    if (g_pool.open) {
        pthread_mutex_unlock(&g_lock);
        return fail(pool ? ROCTRACER_STATUS_ERROR : ROCTRACER_STATUS_ERROR_DEFAULT_POOL_ALREADY_DEFINED,
                    "the emulator has one pool at a time");
    }
    memset(&g_pool, 0, sizeof g_pool);
    g_pool.props = *properties;
    g_pool.half = properties->buffer_size;
    char *mem = NULL;
    allocate(&mem, 2 * g_pool.half);
    if (!mem) {
        pthread_mutex_unlock(&g_lock);
        return fail(ROCTRACER_STATUS_ERROR_MEMORY_ALLOCATION, "the pool allocator gave no memory");
    }
    g_pool.mem = mem;
    g_pool.open = 1;
    if (pthread_create(&g_pool.consumer, NULL, consumer_main, NULL) != 0) {
        allocate(&g_pool.mem, 0);
        g_pool.open = 0;
        pthread_mutex_unlock(&g_lock);
        return fail(ROCTRACER_STATUS_ERROR, "cannot start the consumer thread");
    }
    pthread_mutex_unlock(&g_lock);
    emu_core_register_buffers(pool_request, pool_marker_complete);
    if (pool) *pool = &g_pool;
    return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_open_pool(const roctracer_properties_t *properties)
{
    return roctracer_open_pool_expl(properties, NULL);
}

static int is_pool(roctracer_pool_t *pool)
{
    pthread_mutex_lock(&g_lock);
    int ok = g_pool.open && (pool == NULL || pool == &g_pool);
    pthread_mutex_unlock(&g_lock);
    return ok;
}

EXPORT roctracer_status_t roctracer_flush_activity_expl(roctracer_pool_t *pool)
{
    emu_init();
    if (!is_pool(pool)) return ROCTRACER_STATUS_SUCCESS; /* roctracer: nothing to flush */
    /* what has been written: records of work still running are written
       when it ends, as the HIP runtime reports them */
    emu_core_flush_all(0);
    pthread_mutex_lock(&g_lock);
    while (g_pool.queued || g_pool.consuming) pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
    return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_flush_activity(void)
{
    return roctracer_flush_activity_expl(NULL);
}

EXPORT roctracer_status_t roctracer_close_pool_expl(roctracer_pool_t *pool)
{
    emu_init();
    if (!is_pool(pool)) return ROCTRACER_STATUS_SUCCESS;
    roctracer_flush_activity_expl(pool);
    pthread_mutex_lock(&g_lock);
    g_pool.stop = 1;
    pthread_cond_broadcast(&g_cond);
    pthread_mutex_unlock(&g_lock);
    pthread_join(g_pool.consumer, NULL);
    pthread_mutex_lock(&g_lock);
    allocate(&g_pool.mem, 0);
    g_pool.open = 0;
    pthread_mutex_unlock(&g_lock);
    return ROCTRACER_STATUS_SUCCESS;
}

EXPORT roctracer_status_t roctracer_close_pool(void)
{
    return roctracer_close_pool_expl(NULL);
}

EXPORT roctracer_pool_t *roctracer_default_pool(void)
{
    return is_pool(NULL) ? &g_pool : NULL;
}

/* ------------------------------------------------------------------ */
/* Activity                                                            */
/* ------------------------------------------------------------------ */
static roctracer_status_t set_activity(roctracer_domain_t domain, int on)
{
    switch (domain) {
    case ACTIVITY_DOMAIN_HIP_OPS:
        emu_core_enable(EMU_REC_KERNEL, on);
        emu_core_enable(EMU_REC_MEMCPY, on);
        emu_core_enable(EMU_REC_MEMSET, on);
        return ROCTRACER_STATUS_SUCCESS;
    case ACTIVITY_DOMAIN_HIP_API:
        /* EXT_API records come with HIP API activity */
        emu_core_enable(EMU_REC_RUNTIME, on);
        emu_core_enable(EMU_REC_EXTERNAL, on);
        return ROCTRACER_STATUS_SUCCESS;
    case ACTIVITY_DOMAIN_HSA_API:
    case ACTIVITY_DOMAIN_HSA_OPS:
    case ACTIVITY_DOMAIN_KFD_API:
    case ACTIVITY_DOMAIN_EXT_API:
    case ACTIVITY_DOMAIN_ROCTX:
    case ACTIVITY_DOMAIN_HSA_EVT:
        return ROCTRACER_STATUS_SUCCESS;
    default:
        return fail(ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID, "invalid domain ID");
    }
}

EXPORT roctracer_status_t roctracer_enable_domain_activity_expl(roctracer_domain_t domain, roctracer_pool_t *pool)
{
    emu_init();
    if (!is_pool(pool)) return fail(ROCTRACER_STATUS_ERROR_DEFAULT_POOL_UNDEFINED, "no default pool");
    return set_activity(domain, 1);
}

EXPORT roctracer_status_t roctracer_enable_domain_activity(roctracer_domain_t domain)
{
    return roctracer_enable_domain_activity_expl(domain, NULL);
}

EXPORT roctracer_status_t roctracer_disable_domain_activity(roctracer_domain_t domain)
{
    emu_init();
    return set_activity(domain, 0);
}

EXPORT roctracer_status_t roctracer_get_timestamp(roctracer_timestamp_t *timestamp)
{
    if (!timestamp) return fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "timestamp is NULL");
    *timestamp = emu_core_timestamp();
    return ROCTRACER_STATUS_SUCCESS;
}

#ifndef EMU_RT_BARE
/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */
/* Read on every API call without the lock: the argument is stored before
   the function that publishes it. */
/* Taken outside the core's lock: registering a callback subscribes in the
   core. */
static pthread_mutex_t g_cb_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct registered { _Atomic(activity_rtapi_callback_t) fn; void *_Atomic arg; } registered;
typedef struct callback_now { activity_rtapi_callback_t fn; void *arg; } callback_now;

static void set_registered(registered *r, activity_rtapi_callback_t fn, void *arg)
{
    atomic_store_explicit(&r->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&r->fn, fn, memory_order_release);
}

static callback_now get_registered(registered *r)
{
    callback_now c;
    c.fn = atomic_load_explicit(&r->fn, memory_order_acquire);
    c.arg = atomic_load_explicit(&r->arg, memory_order_relaxed);
    return c;
}
static registered g_hip_cb[HIP_OPS_COUNT];
static int g_hip_cb_count;
static void *g_subscriber;
static registered g_roctx_cb[DT_RT_ROCTX_RANGE_STOP + 1];

static void hip_dispatch_marker(void) {}

/* g_cb_lock held. The core delivers API callbacks to one subscriber: this
   personality, which hands each to the operation's callback. */
static roctracer_status_t set_hip_callback(uint32_t op, activity_rtapi_callback_t fn, void *arg)
{
    int had = get_registered(&g_hip_cb[op]).fn != NULL;
    if (fn && !g_hip_cb_count) {
        if (emu_core_subscribe(&g_subscriber, hip_dispatch_marker, NULL) != EMU_ST_OK)
            return fail(ROCTRACER_STATUS_ERROR, "the HIP API callbacks are held by another client");
        emu_core_enable_domain(g_subscriber, EMU_DOMAIN_RUNTIME, 1);
    }
    set_registered(&g_hip_cb[op], fn, arg);
    g_hip_cb_count += (fn != NULL) - had;
    if (!fn && had && !g_hip_cb_count) {
        emu_core_unsubscribe(g_subscriber);
        g_subscriber = NULL;
    }
    return ROCTRACER_STATUS_SUCCESS;
}

static roctracer_status_t set_callbacks(roctracer_domain_t domain, int all, uint32_t op, activity_rtapi_callback_t fn,
                                        void *arg)
{
    emu_init();
    roctracer_status_t st = ROCTRACER_STATUS_SUCCESS;
    pthread_mutex_lock(&g_cb_lock);
    switch (domain) {
    case ACTIVITY_DOMAIN_HIP_API:
        if (!all && op >= HIP_OPS_COUNT) {
            st = fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid argument");
            break;
        }
        for (uint32_t o = all ? 0 : op; o < (all ? HIP_OPS_COUNT : op + 1) && st == ROCTRACER_STATUS_SUCCESS; o++)
            st = set_hip_callback(o, fn, arg);
        break;
    case ACTIVITY_DOMAIN_ROCTX:
        if (!all && op > DT_RT_ROCTX_RANGE_STOP) {
            st = fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid argument");
            break;
        }
        for (uint32_t o = all ? 0 : op; o <= (all ? (uint32_t)DT_RT_ROCTX_RANGE_STOP : op); o++)
            set_registered(&g_roctx_cb[o], fn, arg);
        break;
    case ACTIVITY_DOMAIN_HSA_API:
    case ACTIVITY_DOMAIN_HSA_OPS:
    case ACTIVITY_DOMAIN_HIP_OPS:
    case ACTIVITY_DOMAIN_KFD_API:
    case ACTIVITY_DOMAIN_EXT_API:
    case ACTIVITY_DOMAIN_HSA_EVT:
        break;
    default:
        st = fail(ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID, "invalid domain ID");
        break;
    }
    pthread_mutex_unlock(&g_cb_lock);
    return st;
}

EXPORT roctracer_status_t roctracer_enable_domain_callback(activity_domain_t domain, activity_rtapi_callback_t callback,
                                                           void *arg)
{
    if (!callback) return fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid argument");
    return set_callbacks(domain, 1, 0, callback, arg);
}

EXPORT roctracer_status_t roctracer_enable_op_callback(activity_domain_t domain, uint32_t op,
                                                       activity_rtapi_callback_t callback, void *arg)
{
    if (!callback) return fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid argument");
    return set_callbacks(domain, 0, op, callback, arg);
}

EXPORT roctracer_status_t roctracer_disable_domain_callback(activity_domain_t domain)
{
    return set_callbacks(domain, 1, 0, NULL, NULL);
}

EXPORT roctracer_status_t roctracer_disable_op_callback(activity_domain_t domain, uint32_t op)
{
    return set_callbacks(domain, 0, op, NULL, NULL);
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof v); }

/* hip_api_data_t as HIP 5.2.3 lays out the arguments of the calls the
   emulator makes. */
static void rt_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    (void)client_fn;
    (void)userdata;
    if (call->domain != EMU_DOMAIN_RUNTIME || call->cbid >= HIP_OPS_COUNT) return;
    callback_now cb = get_registered(&g_hip_cb[call->cbid]);
    if (!cb.fn) return;
    /* the header and the arguments the emulator's calls have */
    _Alignas(8) uint8_t data[DT_RT_HIP_ARGS_OFFSET + 64];
    memset(data, 0, sizeof data);
    put_u64(data + DT_RT_HIP_CORRELATION_OFFSET, call->correlation);
    put_u32(data + DT_RT_HIP_PHASE_OFFSET, call->site == EMU_SITE_ENTER ? ACTIVITY_API_PHASE_ENTER
                                                                         : ACTIVITY_API_PHASE_EXIT);
    uint8_t *args = data + DT_RT_HIP_ARGS_OFFSET;
    const emu_call_args *a = call->args;
    if (a && call->cbid == HIP_ID_hipLaunchKernel && a->kernel) {
        /* function_address, dim3 numBlocks, dim3 dimBlocks, void **args,
           void *args__val, size_t sharedMemBytes, hipStream_t stream */
        put_u64(args, (uint64_t)(uintptr_t)call->symbol_name);
        for (int i = 0; i < 3; i++) {
            put_u32(args + DT_RT_HIP_LAUNCH_GRID + 4 * i, (uint32_t)a->kernel->grid[i]);
            put_u32(args + DT_RT_HIP_LAUNCH_BLOCK + 4 * i, (uint32_t)a->kernel->block[i]);
        }
        put_u64(args + 48, (uint64_t)(uint32_t)a->kernel->dynamic_shared_memory);
        put_u64(args + 56, (uint64_t)a->stream);
    } else if (a && (call->cbid == HIP_ID_hipMemset || call->cbid == HIP_ID_hipMemsetAsync)) {
        /* void *dst, int value, size_t sizeBytes[, hipStream_t stream] */
        put_u32(args + DT_RT_HIP_MEMSET_VALUE, a->value);
        put_u64(args + 16, a->bytes);
        put_u64(args + 24, (uint64_t)a->stream);
    } else if (a && (call->cbid == HIP_ID_hipMemcpy || call->cbid == HIP_ID_hipMemcpyAsync)) {
        /* void *dst, const void *src, size_t sizeBytes, hipMemcpyKind kind[, stream] */
        static const uint32_t kinds[] = {[EMU_COPY_HTOD] = 1, [EMU_COPY_DTOH] = 2, [EMU_COPY_DTOD] = 3,
                                         [EMU_COPY_HTOH] = 0, [EMU_COPY_PTOP] = 3};
        put_u64(args + 16, a->bytes);
        put_u32(args + 24, (unsigned)a->copy_kind <= EMU_COPY_PTOP ? kinds[a->copy_kind] : 4);
        put_u64(args + 32, (uint64_t)a->stream);
    }
    cb.fn(ACTIVITY_DOMAIN_HIP_API, call->cbid, data, cb.arg);
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */
static const char *command_name(uint32_t kind)
{
    switch (kind) {
    case DT_RT_CMD_KERNEL: return "KernelExecution";
    case DT_RT_CMD_WRITE: return "CopyHostToDevice";
    case DT_RT_CMD_READ: return "CopyDeviceToHost";
    case DT_RT_CMD_COPY: return "CopyDeviceToDevice";
    case DT_RT_CMD_FILL: return "FillBuffer";
    case DT_RT_CMD_SVM_MEMCPY: return "SvmMemcpy";
    default: return "Unknown command kind";
    }
}

EXPORT const char *roctracer_op_string(uint32_t domain, uint32_t op, uint32_t kind)
{
    switch (domain) {
    case ACTIVITY_DOMAIN_HIP_API: return hip_name(op);
    case ACTIVITY_DOMAIN_HIP_OPS: return command_name(kind);
    case ACTIVITY_DOMAIN_EXT_API: return "EXT_API";
    default: fail(ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID, "invalid domain ID"); return NULL;
    }
}

EXPORT roctracer_status_t roctracer_op_code(uint32_t domain, const char *str, uint32_t *op, uint32_t *kind)
{
    if (domain != ACTIVITY_DOMAIN_HIP_API) return fail(ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID, "limited domain ID");
    for (uint32_t id = 0; str && op && id < HIP_OPS_COUNT; id++)
        if (hip_names[id] && strcmp(hip_names[id], str) == 0) {
            *op = id;
            if (kind) *kind = 0;
            return ROCTRACER_STATUS_SUCCESS;
        }
    return fail(ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT, "invalid API name");
}

EXPORT uint32_t roctracer_version_major(void) { return 4; }
EXPORT uint32_t roctracer_version_minor(void) { return 1; }
EXPORT const char *roctracer_error_string(void) { return t_error; }

/* ------------------------------------------------------------------ */
/* External correlation (roctracer_ext.h)                              */
/* ------------------------------------------------------------------ */
EXPORT roctracer_status_t roctracer_activity_push_external_correlation_id(activity_correlation_id_t id)
{
    emu_init();
    return emu_core_push_external(0, id) == EMU_ST_OK ? ROCTRACER_STATUS_SUCCESS
                                                      : fail(ROCTRACER_STATUS_ERROR, "out of memory");
}

EXPORT roctracer_status_t roctracer_activity_pop_external_correlation_id(activity_correlation_id_t *last_id)
{
    emu_init();
    uint64_t id = 0;
    if (emu_core_pop_external(0, &id) != EMU_ST_OK) {
        if (last_id) *last_id = 0;
        return fail(ROCTRACER_STATUS_ERROR_MISMATCHED_EXTERNAL_CORRELATION_ID, "unbalanced external correlation id pop");
    }
    if (last_id) *last_id = id;
    return ROCTRACER_STATUS_SUCCESS;
}

EXPORT void roctracer_start(void) {}
EXPORT void roctracer_stop(void) {}

/* ------------------------------------------------------------------ */
/* ROCTX (libroctx64 on ROCm)                                          */
/* ------------------------------------------------------------------ */
static _Thread_local int t_roctx_level;
static _Atomic uint64_t g_roctx_next_id = 1;

static void roctx_call(uint32_t op, const char *message, uint64_t id)
{
    callback_now cb = get_registered(&g_roctx_cb[op]);
    if (!cb.fn) return;
    _Alignas(8) uint8_t data[16];
    memcpy(data + DT_RT_ROCTX_MESSAGE_OFFSET, &message, sizeof message);
    memcpy(data + DT_RT_ROCTX_ID_OFFSET, &id, sizeof id);
    cb.fn(ACTIVITY_DOMAIN_ROCTX, op, data, cb.arg);
}

EXPORT void roctxMarkA(const char *message) { roctx_call(DT_RT_ROCTX_MARK, message, 0); }

EXPORT int roctxRangePushA(const char *message)
{
    roctx_call(DT_RT_ROCTX_RANGE_PUSH, message, 0);
    return t_roctx_level++;
}

EXPORT int roctxRangePop(void)
{
    roctx_call(DT_RT_ROCTX_RANGE_POP, NULL, 0);
    return t_roctx_level > 0 ? --t_roctx_level : -1;
}

EXPORT uint64_t roctxRangeStartA(const char *message)
{
    uint64_t id = atomic_fetch_add(&g_roctx_next_id, 1);
    roctx_call(DT_RT_ROCTX_RANGE_START, message, id);
    return id;
}

EXPORT void roctxRangeStop(uint64_t id) { roctx_call(DT_RT_ROCTX_RANGE_STOP, NULL, id); }

/* ------------------------------------------------------------------ */
/* HIP device queries                                                  */
/* ------------------------------------------------------------------ */
enum { HIP_SUCCESS = 0, HIP_ERROR_INVALID_VALUE = 1, HIP_ERROR_INVALID_DEVICE = 101 };

/* An emulated DCU: 64 compute units of 64-wide wavefronts. */
static int attribute_value(int attr, int device, int *value)
{
    switch (attr) {
    case DT_HIP_ATTR_COMPUTE_MAJOR: *value = 9; return 1;
    case DT_HIP_ATTR_COMPUTE_MINOR: *value = 0; return 1;
    case DT_HIP_ATTR_MAX_THREADS_PER_BLOCK: *value = 1024; return 1;
    case DT_HIP_ATTR_MAX_THREADS_PER_SM: *value = 2560; return 1;
    case DT_HIP_ATTR_SM_COUNT: *value = 64 - 4 * device; return 1;
    case DT_HIP_ATTR_REGS_PER_BLOCK: *value = 65536; return 1;
    case DT_HIP_ATTR_REGS_PER_SM: *value = 65536; return 1;
    case DT_HIP_ATTR_SHARED_PER_BLOCK: *value = 65536; return 1;
    case DT_HIP_ATTR_WARP_SIZE: *value = 64; return 1;
    case DT_HIP_ATTR_AMD_SHARED_PER_SM: *value = 65536; return 1;
    default: return 0; /* CUDA-only attributes (blocks per SM, opt-in shared memory) among them */
    }
}

static int attribute_refused(int attr)
{
    const char *v = getenv("DEVTRACE_EMU_HIP_ATTR_FAIL");
    while (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v) break;
        if (n == attr) return 1;
        v = *end == ',' ? end + 1 : end;
    }
    return 0;
}

EXPORT int hipGetDeviceCount(int *count)
{
    if (!count) return HIP_ERROR_INVALID_VALUE;
    *count = emu_device_count();
    return HIP_SUCCESS;
}

EXPORT int hipDeviceGetAttribute(int *value, int attr, int device)
{
    if (!value) return HIP_ERROR_INVALID_VALUE;
    if (device < 0 || device >= emu_device_count()) return HIP_ERROR_INVALID_DEVICE;
    if (attribute_refused(attr) || !attribute_value(attr, device, value)) return HIP_ERROR_INVALID_VALUE;
    return HIP_SUCCESS;
}

EXPORT int hipDeviceGetName(char *name, int len, int device)
{
    if (!name || len <= 0) return HIP_ERROR_INVALID_VALUE;
    if (device < 0 || device >= emu_device_count()) return HIP_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "devtrace emulated DCU %d", device);
    return HIP_SUCCESS;
}

EXPORT int hipDeviceTotalMem(size_t *bytes, int device)
{
    if (!bytes) return HIP_ERROR_INVALID_VALUE;
    if (device < 0 || device >= emu_device_count()) return HIP_ERROR_INVALID_DEVICE;
    *bytes = (size_t)64 << 30;
    return HIP_SUCCESS;
}

EXPORT int hipRuntimeGetVersion(int *version)
{
    if (!version) return HIP_ERROR_INVALID_VALUE;
    const char *v = getenv("DEVTRACE_EMU_HIP_VERSION");
    *version = v && *v ? atoi(v) : 5 * 10000000 + 2 * 100000 + 21153; /* HIP 5.2.21153 */
    return HIP_SUCCESS;
}
#else
static void rt_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    (void)client_fn;
    (void)userdata;
    (void)call;
}
#endif /* EMU_RT_BARE */

const struct emu_vendor emu_vendor_impl = {
    .name = "roctracer",
    .record_size = rt_record_size,
    .write_record = rt_write_record,
    .record_kind = rt_record_kind,
    .complete_buffer = rt_complete_buffer,
    .invoke_callback = rt_invoke_callback,
    .cbid = rt_cbid,
    .callback_name = rt_callback_name,
    .default_thread_id_type = EMU_TID_SYSTEM,
    /* a boot-relative clock, two hours after boot when the library starts */
    .clock_offset_ns = INT64_C(7200) * 1000000000,
    .clock_counter = 1,
    .tail_size = rt_tail_size,
    .write_tail = rt_write_tail,
    .take_completed = rt_take_completed,
    .external_depth = SIZE_MAX,
    /* HIP_OPS records are written as the work completes (inferred) */
    .records_at_completion = 1,
    /* roctracer's producers wait for a buffer rather than drop, and it
       reports no drops */
    .unsupported_faults = (1u << EMU_FAULT_VENDOR_DROPPED) | (1u << EMU_FAULT_NO_BUFFER),
};

/*
 * Enflame GCU backend through TOPSPTI (libtopspti.so).
 *
 * The vendor interface is process-wide, so the loaded library, the buffer
 * pool and the subscriber live in static variables; the buffer-completion
 * callback finds the session through dt_active_session().
 *
 * Record layouts come from the TopsRider SDK headers when CMake found them
 * (DT_HAVE_TOPSPTI_SDK), otherwise from devtrace's own declaration
 * (topspti_abi.h), which only the devtrace emulator implements: each build
 * refuses the library whose layout it does not know, because decoding
 * records through a guessed layout yields garbage rather than an error.
 */
#include "dt_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DT_HAVE_TOPSPTI_SDK
#include <topspti_activity.h>
#include <topspti_callbacks.h>
/* The SDK declares the entry points; their pointer types follow. */
#define DT_TOPS_FN(name) __typeof__(&name)
#ifndef DEVTRACE_TOPSPTI_EMULATOR_MARKER
#define DEVTRACE_TOPSPTI_EMULATOR_MARKER "devtrace_topspti_emulator"
#endif
#else
#include "backends/topspti_abi.h"
#define DT_TOPS_FN(name) name##_fn
/* devtrace's declaration has every launch detail; an SDK build learns which
   fields exist from CMake (cmake/Topspti.cmake). */
#define DT_TOPSPTI_HAS_KERNEL_REGISTERS 1
#define DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY 1
#define DT_TOPSPTI_HAS_KERNEL_QUEUED 1
#define DT_TOPSPTI_HAS_KERNEL_SUBMITTED 1
#define DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES 1
#endif

typedef DT_TOPS_FN(topsptiActivityGetNextRecord) dt_topspti_next_fn;

/* Entry points for the decoder fuzz target and the decode benchmark. */
DT_HIDDEN void dt_topspti_decode_for_test(dt_session *s, uint8_t *buffer, size_t valid,
                                          dt_topspti_next_fn next);
DT_HIDDEN void dt_topspti_api_callback(void *userdata, Topspti_CallbackDomain domain,
                                       Topspti_CallbackId cbid, const void *cbdata);
DT_HIDDEN int dt_topspti_sdk_layout(void);

/* ------------------------------------------------------------------ */
/* The library                                                         */
/* ------------------------------------------------------------------ */
typedef struct topspti_fns {
    DT_TOPS_FN(topsptiActivityRegisterCallbacks) RegisterCallbacks;
    DT_TOPS_FN(topsptiActivityEnable) Enable;
    DT_TOPS_FN(topsptiActivityDisable) Disable;
    DT_TOPS_FN(topsptiActivityFlushAll) FlushAll;
    DT_TOPS_FN(topsptiActivityGetNextRecord) GetNextRecord;
    DT_TOPS_FN(topsptiGetTimestamp) GetTimestamp;
    DT_TOPS_FN(topsptiSubscribe) Subscribe;
    DT_TOPS_FN(topsptiUnsubscribe) Unsubscribe;
    DT_TOPS_FN(topsptiEnableDomain) EnableDomain;
    DT_TOPS_FN(topsptiEnableAllDomains) EnableAllDomains;
    DT_TOPS_FN(topsptiGetCallbackName) GetCallbackName;
    DT_TOPS_FN(topsptiGetVersion) GetVersion;
    DT_TOPS_FN(topsptiActivityGetNumDroppedRecords) GetNumDroppedRecords;
    DT_TOPS_FN(topsptiSetThreadIdType) SetThreadIdType;
    DT_TOPS_FN(topsptiGetThreadIdType) GetThreadIdType;
    DT_TOPS_FN(topsptiActivityFlushPeriod) FlushPeriod;
} topspti_fns;

/* Optional entry points and what their absence costs the user. The order
   matches the optional members of topspti_fns. */
static const struct {
    const char *symbol;
    const char *degraded;
} optional_symbols[] = {
    {"topsptiSubscribe", "no API callbacks: device activity carries no External id"},
    {"topsptiUnsubscribe", "API callbacks cannot be turned off: External ids are not captured"},
    {"topsptiEnableDomain", "callback domains enabled with topsptiEnableAllDomains instead"},
    {"topsptiEnableAllDomains", "fallback for per-domain callback enabling unavailable"},
    {"topsptiGetCallbackName", "runtime/driver API names are generic (topsRuntime#<cbid>)"},
    {"topsptiGetVersion", "library version unknown"},
    {"topsptiActivityGetNumDroppedRecords", "records dropped inside TOPSPTI cannot be counted"},
    {"topsptiSetThreadIdType", "API rows use TOPSPTI's default thread ids, which may not match host threads"},
    {"topsptiGetThreadIdType", "the previous thread-id type cannot be restored exactly (reset to default)"},
    {"topsptiActivityFlushPeriod", "no periodic flush: buffers return only when full or at stop"},
};
enum { OPTIONAL_COUNT = sizeof optional_symbols / sizeof optional_symbols[0] };

static void *g_handle;
static topspti_fns g_fns;
static char g_library[512];
static char g_version[64];

static int fn_missing(const topspti_fns *f, int i)
{
    const void *p[OPTIONAL_COUNT] = {
        (const void *)f->Subscribe, (const void *)f->Unsubscribe,
        (const void *)f->EnableDomain, (const void *)f->EnableAllDomains,
        (const void *)f->GetCallbackName, (const void *)f->GetVersion,
        (const void *)f->GetNumDroppedRecords, (const void *)f->SetThreadIdType,
        (const void *)f->GetThreadIdType, (const void *)f->FlushPeriod,
    };
    return p[i] == NULL;
}

/* Whether a missing optional symbol actually degrades something, given the
   others (EnableAllDomains only matters when EnableDomain is missing too). */
static int fn_degrades(const topspti_fns *f, int i)
{
    if (!fn_missing(f, i)) return 0;
    const char *sym = optional_symbols[i].symbol;
    if (strcmp(sym, "topsptiEnableAllDomains") == 0) return f->EnableDomain == NULL && f->Subscribe;
    if (strcmp(sym, "topsptiEnableDomain") == 0) return f->Subscribe != NULL;
    if (strcmp(sym, "topsptiGetThreadIdType") == 0) return f->SetThreadIdType != NULL;
    return 1;
}

#define RESOLVE(h, f, member, sym) ((f)->member = (__typeof__((f)->member))dlsym((h), (sym)))

/* Resolve the entry points of handle h into *f. Returns 0, or a status
   with the error set when a required symbol or the right layout is missing. */
static dt_status resolve(void *h, const char *path, topspti_fns *f)
{
    memset(f, 0, sizeof *f);
    static const char *const required[] = {
        "topsptiActivityRegisterCallbacks", "topsptiActivityEnable", "topsptiActivityDisable",
        "topsptiActivityFlushAll", "topsptiActivityGetNextRecord", "topsptiGetTimestamp",
    };
    RESOLVE(h, f, RegisterCallbacks, required[0]);
    RESOLVE(h, f, Enable, required[1]);
    RESOLVE(h, f, Disable, required[2]);
    RESOLVE(h, f, FlushAll, required[3]);
    RESOLVE(h, f, GetNextRecord, required[4]);
    RESOLVE(h, f, GetTimestamp, required[5]);
    const void *got[6] = {(const void *)f->RegisterCallbacks, (const void *)f->Enable,
                          (const void *)f->Disable, (const void *)f->FlushAll,
                          (const void *)f->GetNextRecord, (const void *)f->GetTimestamp};
    for (int i = 0; i < 6; i++) {
        if (!got[i])
            return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                            "%s does not export %s, which devtrace needs to record GCU activity; "
                            "it is not a usable TOPSPTI library (set DEVTRACE_TOPSPTI_LIBRARY "
                            "to the libtopspti.so of a TopsRider SDK)",
                            path, required[i]);
    }
    RESOLVE(h, f, Subscribe, "topsptiSubscribe");
    RESOLVE(h, f, Unsubscribe, "topsptiUnsubscribe");
    RESOLVE(h, f, EnableDomain, "topsptiEnableDomain");
    RESOLVE(h, f, EnableAllDomains, "topsptiEnableAllDomains");
    RESOLVE(h, f, GetCallbackName, "topsptiGetCallbackName");
    RESOLVE(h, f, GetVersion, "topsptiGetVersion");
    RESOLVE(h, f, GetNumDroppedRecords, "topsptiActivityGetNumDroppedRecords");
    RESOLVE(h, f, SetThreadIdType, "topsptiSetThreadIdType");
    RESOLVE(h, f, GetThreadIdType, "topsptiGetThreadIdType");
    RESOLVE(h, f, FlushPeriod, "topsptiActivityFlushPeriod");
    /* Subscribing without a way to unsubscribe would leave callbacks armed
       after the session: treat the pair as one feature. */
    if (!f->Unsubscribe) f->Subscribe = NULL;

    int emulator = dlsym(h, DEVTRACE_TOPSPTI_EMULATOR_MARKER) != NULL;
#ifdef DT_HAVE_TOPSPTI_SDK
    if (emulator)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s is devtrace's TOPSPTI emulator, whose record layout is devtrace's "
                        "own declaration; this devtrace was built with the TopsRider SDK "
                        "headers and decodes only a real libtopspti",
                        path);
#else
    if (!emulator)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s is a real libtopspti, but this devtrace was built without the "
                        "TopsRider SDK headers (topspti_activity.h) and cannot know its record "
                        "layout; rebuild devtrace with TOPS_HOME set to the SDK root "
                        "(e.g. cmake -DTOPS_HOME=/opt/tops)",
                        path);
#endif
    return DT_OK;
}

/* Find and load libtopspti; fill *f and path. Never unloads: a vendor
   profiling library may keep threads or callbacks alive after use. */
static dt_status load(topspti_fns *f, void **handle, char *path, size_t path_len)
{
    char tops_home_lib[600];
    const char *cands[5];
    size_t n = 0;
    const char *override = dt_env("DEVTRACE_TOPSPTI_LIBRARY");
    if (override) cands[n++] = override;
    cands[n++] = "libtopspti.so";
    const char *tops_home = dt_env("TOPS_HOME");
    if (tops_home) {
        snprintf(tops_home_lib, sizeof tops_home_lib, "%s/extras/TOPSPTI/lib64/libtopspti.so",
                 tops_home);
        cands[n++] = tops_home_lib;
    }
    cands[n++] = "/opt/tops/extras/TOPSPTI/lib64/libtopspti.so";
    cands[n++] = "/opt/tops/lib/libtopspti_prof.so";

    char tried[2048] = "";
    void *h = dt_dlopen_first(cands, n, path, path_len, tried, sizeof tried);
    if (!h)
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE,
                        "libtopspti not found (tried: %s); install the TopsRider SDK and set "
                        "TOPS_HOME, or set DEVTRACE_TOPSPTI_LIBRARY to the path of libtopspti.so",
                        tried);
    dt_status st = resolve(h, path, f);
    if (st != DT_OK) return st;
    *handle = h;
    return DT_OK;
}

static void read_version(const topspti_fns *f, char *out, size_t len)
{
    out[0] = '\0';
    uint32_t v = 0;
    if (f->GetVersion && f->GetVersion(&v) == TOPSPTI_SUCCESS) snprintf(out, len, "%" PRIu32, v);
}

/* ------------------------------------------------------------------ */
/* Buffer pool: the core's, allocated when the session starts, never in  */
/* the traced program's hot path                                        */
/* ------------------------------------------------------------------ */
/* g_pool_lock guards the pointer against the vendor's threads, which may
   ask for or return a buffer while a session starts or stops. */
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_buffer_pool *g_pool;
static _Atomic uint64_t g_orphaned;     /* records completed with no session */

static dt_status pool_create(size_t buffer_size, uint32_t count)
{
    buffer_size &= ~(size_t)7;
    if (buffer_size < 1024 || count == 0)
        return dt_error(DT_ERR_INVALID_ARGUMENT,
                        "TOPSPTI needs at least one activity buffer of at least 1024 bytes "
                        "(buffer_count %" PRIu32 ", buffer_size %zu)",
                        count, buffer_size);
    if (buffer_size > SIZE_MAX / count)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "buffer_count x buffer_size overflows");
    dt_buffer_pool *p = dt_pool_create(count, buffer_size, 0);
    if (!p)
        return dt_error(DT_ERR_NO_MEMORY, "cannot allocate %" PRIu32 " TOPSPTI buffers of %zu bytes",
                        count, buffer_size);
    pthread_mutex_lock(&g_pool_lock);
    dt_buffer_pool *old = g_pool;
    g_pool = p;
    pthread_mutex_unlock(&g_pool_lock);
    dt_pool_destroy(old); /* none: every start is paired with a destroy */
    atomic_store(&g_orphaned, 0);
    return DT_OK;
}

/* Returns the number of buffers still held by the vendor, whose memory the
   core pool keeps: the vendor may still write into a buffer it holds. */
static uint32_t pool_destroy(void)
{
    pthread_mutex_lock(&g_pool_lock);
    dt_buffer_pool *p = g_pool;
    g_pool = NULL;
    pthread_mutex_unlock(&g_pool_lock);
    return dt_pool_destroy(p);
}

static uint64_t pool_refused(void)
{
    pthread_mutex_lock(&g_pool_lock);
    uint64_t refused = dt_pool_refused(g_pool);
    pthread_mutex_unlock(&g_pool_lock);
    return refused;
}

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    pthread_mutex_lock(&g_pool_lock);
    uint8_t *b = dt_pool_get(g_pool);
    size_t sz = b ? dt_pool_buffer_size(g_pool) : 0;
    pthread_mutex_unlock(&g_pool_lock);
    *buffer = b;
    *size = sz;
    *max_records = 0;
}

/* A buffer of a pool destroyed while the vendor held it is ignored: its
   memory stays with the abandoned pool. */
static void buffer_release(uint8_t *buffer)
{
    pthread_mutex_lock(&g_pool_lock);
    dt_pool_put(g_pool, buffer);
    pthread_mutex_unlock(&g_pool_lock);
}

/* ------------------------------------------------------------------ */
/* API names: resolved from the vendor when the session starts, never   */
/* inside its buffer callback                                           */
/* ------------------------------------------------------------------ */
#define CBID_TABLE 1024
enum { DOMAIN_RUNTIME = 0, DOMAIN_DRIVER = 1 };

static const char *g_vendor_names[2][CBID_TABLE];  /* vendor's own strings */
static uint32_t g_name_ids[2][CBID_TABLE];         /* interned in g_names_session */
static const dt_session *g_names_session;
static uint64_t g_names_generation;

static void resolve_vendor_names(const topspti_fns *f)
{
    memset(g_vendor_names, 0, sizeof g_vendor_names);
    if (!f->GetCallbackName) return;
    for (uint32_t cbid = 1; cbid < CBID_TABLE; cbid++) {
        const char *name = NULL;
        if (f->GetCallbackName(TOPSPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) == TOPSPTI_SUCCESS &&
            name && name[0])
            g_vendor_names[DOMAIN_RUNTIME][cbid] = name;
        name = NULL;
        if (f->GetCallbackName(TOPSPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == TOPSPTI_SUCCESS &&
            name && name[0])
            g_vendor_names[DOMAIN_DRIVER][cbid] = name;
    }
}

/* Interned name of an API record (session lock held). */
static uint32_t api_name(dt_session *s, int domain, uint32_t cbid)
{
    if (g_names_session != s || g_names_generation != s->generation) {
        memset(g_name_ids, 0, sizeof g_name_ids);
        g_names_session = s;
        g_names_generation = s->generation;
    }
    if (cbid < CBID_TABLE && g_name_ids[domain][cbid]) return g_name_ids[domain][cbid];
    uint32_t id;
    const char *vendor = cbid < CBID_TABLE ? g_vendor_names[domain][cbid] : NULL;
    if (vendor) {
        id = dt_intern_str(&s->names, vendor);
    } else {
        char fallback[48];
        int n = snprintf(fallback, sizeof fallback, "%s#%" PRIu32,
                         domain == DOMAIN_RUNTIME ? "topsRuntime" : "topsDriver", cbid);
        id = dt_intern_n(&s->names, fallback, (size_t)n);
    }
    if (id != UINT32_MAX && cbid < CBID_TABLE) g_name_ids[domain][cbid] = id;
    return id;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */
static uint8_t copy_kind(uint32_t k)
{
    switch (k) {
    case TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOD: return DT_COPY_HTOD;
    case TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOH: return DT_COPY_DTOH;
    case TOPSPTI_ACTIVITY_MEMCPY_KIND_DTOD: return DT_COPY_DTOD;
    case TOPSPTI_ACTIVITY_MEMCPY_KIND_HTOH: return DT_COPY_HTOH;
    case TOPSPTI_ACTIVITY_MEMCPY_KIND_PTOP: return DT_COPY_PTOP;
    default: return DT_COPY_UNKNOWN;
    }
}

static uint8_t memory_kind(uint32_t k)
{
    switch (k) {
    case TOPSPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return DT_MEM_PAGEABLE;
    case TOPSPTI_ACTIVITY_MEMORY_KIND_PINNED: return DT_MEM_PINNED;
    case TOPSPTI_ACTIVITY_MEMORY_KIND_DEVICE: return DT_MEM_DEVICE;
    default: return DT_MEM_UNKNOWN;
    }
}

static void decode_kernel(dt_session *s, dt_decode_cache *c, const Topspti_ActivityKernel *k)
{
    dt_launch_config cfg;
    memset(&cfg, 0, sizeof cfg); /* compared bytewise by the cache */
    cfg.grid[0] = k->gridX; cfg.grid[1] = k->gridY; cfg.grid[2] = k->gridZ;
    cfg.block[0] = k->blockX; cfg.block[1] = k->blockY; cfg.block[2] = k->blockZ;
#if DT_TOPSPTI_HAS_KERNEL_REGISTERS
    cfg.registers_per_thread = k->registersPerThread;
#endif
#if DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY
    cfg.static_shared_memory = k->staticSharedMemory > 0 ? (uint32_t)k->staticSharedMemory : 0;
    cfg.dynamic_shared_memory = k->dynamicSharedMemory > 0 ? (uint32_t)k->dynamicSharedMemory : 0;
#endif
    uint32_t config = dt_decode_launch_config(s, c, &cfg);
    uint32_t name = dt_decode_kernel_name(s, c, k->name);
    /* a kernel whose configuration could not be kept is dropped (store_full) */
    dt_rec *r = dt_add_device_activity(s, DT_EVENT_KERNEL, k->start, k->end, k->correlationId, k->deviceId,
                                       k->streamId, k->contextId, config == UINT32_MAX ? UINT32_MAX : name);
    if (!r) return;
    r->u.kernel.config = config;
    r->u.kernel.queued_delta = DT_DELTA_UNKNOWN;
    r->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
#if DT_TOPSPTI_HAS_KERNEL_QUEUED
    r->u.kernel.queued_delta = dt_latency_delta(k->start, k->queued);
#endif
#if DT_TOPSPTI_HAS_KERNEL_SUBMITTED
    r->u.kernel.submitted_delta = dt_latency_delta(k->start, k->submitted);
#endif
}

static void decode_memcpy(dt_session *s, dt_decode_cache *c, const Topspti_ActivityMemcpy *m)
{
    dt_copy copy = {
        .start = m->start, .end = m->end, .correlation = m->correlationId, .bytes = m->bytes,
        .device = m->deviceId, .stream = m->streamId, .context = m->contextId,
        .src_device = m->deviceId, .dst_device = m->deviceId,
        .copy_kind = copy_kind(m->copyKind), .src_kind = memory_kind(m->srcKind),
        .dst_kind = memory_kind(m->dstKind), .async = (m->flags & TOPSPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0,
    };
#if DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES
    if (m->copyKind == TOPSPTI_ACTIVITY_MEMCPY_KIND_PTOP) {
        copy.src_device = m->srcDeviceId;
        copy.dst_device = m->dstDeviceId;
    }
#endif
    dt_add_copy(s, c, &copy);
}

static void decode_memset(dt_session *s, dt_decode_cache *c, const Topspti_ActivityMemset *m)
{
    dt_fill fill = {
        .start = m->start, .end = m->end, .correlation = m->correlationId, .bytes = m->bytes,
        .device = m->deviceId, .stream = m->streamId, .context = m->contextId, .value = m->value,
        .memory_kind = memory_kind(m->memoryKind),
        .async = (m->flags & TOPSPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0,
    };
    dt_add_fill(s, c, &fill);
}

static void decode_api(dt_session *s, const Topspti_ActivityAPI *a, int domain)
{
    dt_add_api_call(s, domain == DOMAIN_RUNTIME ? DT_EVENT_RUNTIME : DT_EVENT_DRIVER, a->start, a->end,
                    a->correlationId, a->processId, a->threadId, api_name(s, domain, a->cbid), a->cbid,
                    (int32_t)a->returnValue);
}

/* Decode one completed buffer: one lock for the whole buffer. */
static void decode_buffer(dt_session *s, uint8_t *buffer, size_t valid, dt_topspti_next_fn next)
{
    if (!buffer || valid == 0) return;
    Topspti_Activity *rec = NULL;
    dt_decode_cache cache;
    dt_decode_cache_init(&cache);
    dt_session_lock(s);
    for (;;) {
        TopsptiResult r = next(buffer, valid, &rec);
        if (r == TOPSPTI_ERROR_MAX_LIMIT_REACHED || r == TOPSPTI_ERROR_QUEUE_EMPTY) break;
        if (r == TOPSPTI_ERROR_INVALID_KIND) {
            /* The iterator cannot size a record of a kind it does not know,
               so nothing after it in this buffer can be walked either. */
            dt_loss_add(s, DT_LOSS_UNKNOWN_KIND, 1);
            break;
        }
        if (r != TOPSPTI_SUCCESS || !rec) {
            /* The rest of the buffer cannot be walked; at least this record
               is lost, and how many followed it is unknowable. */
            dt_loss_add(s, DT_LOSS_MALFORMED, 1);
            break;
        }
        switch (rec->kind) {
        case TOPSPTI_ACTIVITY_KIND_KERNEL:
            decode_kernel(s, &cache, (const Topspti_ActivityKernel *)(const void *)rec);
            break;
        case TOPSPTI_ACTIVITY_KIND_MEMCPY:
            decode_memcpy(s, &cache, (const Topspti_ActivityMemcpy *)(const void *)rec);
            break;
        case TOPSPTI_ACTIVITY_KIND_MEMSET:
            decode_memset(s, &cache, (const Topspti_ActivityMemset *)(const void *)rec);
            break;
        case TOPSPTI_ACTIVITY_KIND_RUNTIME:
            decode_api(s, (const Topspti_ActivityAPI *)(const void *)rec, DOMAIN_RUNTIME);
            break;
        case TOPSPTI_ACTIVITY_KIND_DRIVER:
            decode_api(s, (const Topspti_ActivityAPI *)(const void *)rec, DOMAIN_DRIVER);
            break;
        default:
            dt_loss_add(s, DT_LOSS_UNKNOWN_KIND, 1);
            break;
        }
    }
    dt_session_unlock(s);
}

void dt_topspti_decode_for_test(dt_session *s, uint8_t *buffer, size_t valid, dt_topspti_next_fn next)
{
    /* A session that was never started has no generation of its own: a
       new one may sit at a destroyed one's address. */
    if (s->state != DT_STATE_RUNNING) g_names_session = NULL;
    decode_buffer(s, buffer, valid, next);
}

int dt_topspti_sdk_layout(void)
{
#ifdef DT_HAVE_TOPSPTI_SDK
    return 1;
#else
    return 0;
#endif
}

static _Atomic(dt_session *) g_session;

static void buffer_completed(uint8_t *buffer, size_t size, size_t valid)
{
    dt_session *s = dt_active_session();
    if (!s) s = atomic_load_explicit(&g_session, memory_order_acquire);
    if (s && buffer && g_fns.GetNextRecord) {
        decode_buffer(s, buffer, valid, g_fns.GetNextRecord);
    } else if (buffer && valid) {
        atomic_fetch_add_explicit(&g_orphaned, 1, memory_order_relaxed);
    }
    if (buffer) buffer_release(buffer);
}

/* ------------------------------------------------------------------ */
/* API callbacks: the cheap path that links a launch to the host         */
/* operation or range enclosing it                                      */
/* ------------------------------------------------------------------ */
void dt_topspti_api_callback(void *userdata, Topspti_CallbackDomain domain, Topspti_CallbackId cbid,
                             const void *cbdata)
{
    /* Other domains pass other callback-data types. */
    if (domain != TOPSPTI_CB_DOMAIN_RUNTIME_API && domain != TOPSPTI_CB_DOMAIN_DRIVER_API) return;
    const Topspti_CallbackData *d = cbdata;
    if (d && d->callbackSite == TOPSPTI_API_ENTER) dt_corr_link_current(d->correlationId);
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */
static const struct {
    uint32_t capture;
    Topspti_ActivityKind kind;
    const char *name;
} activity_kinds[] = {
    {DT_CAPTURE_KERNEL, TOPSPTI_ACTIVITY_KIND_KERNEL, "kernel"},
    {DT_CAPTURE_MEMCPY, TOPSPTI_ACTIVITY_KIND_MEMCPY, "memcpy"},
    {DT_CAPTURE_MEMSET, TOPSPTI_ACTIVITY_KIND_MEMSET, "memset"},
    {DT_CAPTURE_RUNTIME, TOPSPTI_ACTIVITY_KIND_RUNTIME, "runtime"},
    {DT_CAPTURE_DRIVER, TOPSPTI_ACTIVITY_KIND_DRIVER, "driver"},
};
enum { KIND_COUNT = sizeof activity_kinds / sizeof activity_kinds[0] };

static struct {
    int enabled[KIND_COUNT];
    Topspti_SubscriberHandle subscriber;
    int subscribed;
    int thread_type_set;
    Topspti_ActivityThreadIdType previous_thread_type;
    int flush_period_set;
    size_t dropped_at_start;
} g_arm;

static dt_status topspti_probe(dt_backend_status *st)
{
    topspti_fns f;
    void *h = NULL;
    char path[512] = "";
    st->available = 0;
    st->library[0] = st->version[0] = st->reason[0] = '\0';
    dt_status rc = load(&f, &h, path, sizeof path);
    snprintf(st->library, sizeof st->library, "%s", path);
    if (rc != DT_OK) {
        snprintf(st->reason, sizeof st->reason, "%s", dt_last_error());
        return DT_OK;
    }
    st->available = 1;
    read_version(&f, st->version, sizeof st->version);
    size_t used = 0;
    for (int i = 0; i < OPTIONAL_COUNT; i++) {
        if (!fn_degrades(&f, i)) continue;
        int n = snprintf(st->reason + used, sizeof st->reason - used, "%smissing %s: %s",
                         used ? "; " : "", optional_symbols[i].symbol, optional_symbols[i].degraded);
        if (n < 0 || (size_t)n >= sizeof st->reason - used) break;
        used += (size_t)n;
    }
    if (h == g_handle) dlclose(h); /* drop the extra reference only */
    return DT_OK;
}

static void disarm(void)
{
    for (int i = 0; i < KIND_COUNT; i++) {
        if (g_arm.enabled[i]) g_fns.Disable(activity_kinds[i].kind);
        g_arm.enabled[i] = 0;
    }
    if (g_arm.flush_period_set && g_fns.FlushPeriod) g_fns.FlushPeriod(0);
    g_arm.flush_period_set = 0;
    if (g_arm.subscribed) {
        if (g_fns.EnableDomain) {
            g_fns.EnableDomain(0, g_arm.subscriber, TOPSPTI_CB_DOMAIN_RUNTIME_API);
            g_fns.EnableDomain(0, g_arm.subscriber, TOPSPTI_CB_DOMAIN_DRIVER_API);
        }
        g_fns.Unsubscribe(g_arm.subscriber);
    }
    g_arm.subscribed = 0;
    if (g_arm.thread_type_set) g_fns.SetThreadIdType(g_arm.previous_thread_type);
    g_arm.thread_type_set = 0;
}

static void note_degraded(dt_session *s)
{
    for (int i = 0; i < OPTIONAL_COUNT; i++) {
        if (fn_degrades(&g_fns, i))
            dt_session_note(s, optional_symbols[i].symbol, "missing: %s", optional_symbols[i].degraded);
    }
}

static dt_status topspti_start(dt_session *s)
{
    topspti_fns f;
    void *h = NULL;
    char path[512] = "";
    dt_status rc = load(&f, &h, path, sizeof path);
    if (rc != DT_OK) return rc;
    if (h == g_handle) {
        dlclose(h); /* drop the extra reference only */
    } else {
        /* A different library than last time (tests switch variants): the
           previous one stays loaded, it is simply no longer used. */
        g_handle = h;
        g_fns = f;
    }
    snprintf(g_library, sizeof g_library, "%s", path);
    read_version(&g_fns, g_version, sizeof g_version);

    rc = pool_create(s->config.buffer_size, s->config.buffer_count);
    if (rc != DT_OK) return rc;
    memset(&g_arm, 0, sizeof g_arm);
    resolve_vendor_names(&g_fns);
    g_names_session = NULL;

    /* The thread-id type must be set before activities are enabled. */
    if (g_fns.SetThreadIdType) {
        Topspti_ActivityThreadIdType previous = TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
        if (g_fns.GetThreadIdType) g_fns.GetThreadIdType(&previous);
        TopsptiResult r = g_fns.SetThreadIdType(TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
        if (r == TOPSPTI_SUCCESS) {
            g_arm.thread_type_set = 1;
            g_arm.previous_thread_type = previous;
        } else {
            dt_session_note(s, "topsptiSetThreadIdType",
                            "returned %d: API rows use TOPSPTI's default thread ids", (int)r);
        }
    }

    /* Subscribe before anything is enabled, so that a profiler already
       holding TOPSPTI leaves nothing of ours armed. */
    if (g_fns.Subscribe) {
        TopsptiResult r = g_fns.Subscribe(&g_arm.subscriber, dt_topspti_api_callback, NULL);
        if (r == TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
            disarm();
            pool_destroy();
            return dt_error(DT_ERR_BUSY,
                            "another profiler holds TOPSPTI in this process (topsptiSubscribe: "
                            "multiple subscribers not supported); stop it before recording");
        }
        if (r == TOPSPTI_SUCCESS) {
            g_arm.subscribed = 1;
            int domains_ok = 0;
            if (g_fns.EnableDomain) {
                domains_ok = g_fns.EnableDomain(1, g_arm.subscriber, TOPSPTI_CB_DOMAIN_RUNTIME_API) ==
                             TOPSPTI_SUCCESS;
                /* Releases without driver callbacks are common: not fatal. */
                if (g_fns.EnableDomain(1, g_arm.subscriber, TOPSPTI_CB_DOMAIN_DRIVER_API) ==
                    TOPSPTI_SUCCESS)
                    domains_ok = 1;
            }
            if (!domains_ok && g_fns.EnableAllDomains)
                domains_ok = g_fns.EnableAllDomains(1, g_arm.subscriber) == TOPSPTI_SUCCESS;
            if (!domains_ok)
                dt_session_note(s, "callbacks",
                                "no callback domain could be enabled: device activity carries no External id");
        } else {
            dt_session_note(s, "topsptiSubscribe",
                            "returned %d: device activity carries no External id", (int)r);
        }
    }

    TopsptiResult r = g_fns.RegisterCallbacks(buffer_requested, buffer_completed);
    if (r != TOPSPTI_SUCCESS) {
        disarm();
        pool_destroy();
        if (r == TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            return dt_error(DT_ERR_BUSY,
                            "another profiler holds TOPSPTI in this process "
                            "(topsptiActivityRegisterCallbacks: multiple subscribers not supported)");
        return dt_error(DT_ERR_VENDOR, "topsptiActivityRegisterCallbacks failed (%d) in %s", (int)r,
                        g_library);
    }
    if (g_fns.GetNumDroppedRecords) g_fns.GetNumDroppedRecords(&g_arm.dropped_at_start);

    atomic_store_explicit(&g_session, s, memory_order_release);
    int enabled = 0;
    for (int i = 0; i < KIND_COUNT; i++) {
        if (!(s->config.capture & activity_kinds[i].capture)) continue;
        r = g_fns.Enable(activity_kinds[i].kind);
        if (r == TOPSPTI_SUCCESS) {
            g_arm.enabled[i] = 1;
            enabled++;
        } else {
            dt_session_note(s, activity_kinds[i].name, "topsptiActivityEnable returned %d: no %s records",
                            (int)r, activity_kinds[i].name);
        }
    }
    if (enabled == 0 && (s->config.capture & DT_CAPTURE_DEFAULT)) {
        disarm();
        atomic_store(&g_session, NULL);
        pool_destroy();
        return dt_error(DT_ERR_VENDOR, "topsptiActivityEnable failed for every activity kind in %s",
                        g_library);
    }
    if (g_fns.FlushPeriod && g_fns.FlushPeriod(100) == TOPSPTI_SUCCESS) g_arm.flush_period_set = 1;
    /* Only now: with "auto", a backend that failed to start leaves no trace
       in the session that another backend then records. */
    dt_session_set_library(s, g_library, g_version);
    note_degraded(s);
    return DT_OK;
}

static dt_status topspti_flush(dt_session *s)
{
    if (!g_fns.FlushAll) return DT_OK;
    TopsptiResult r = g_fns.FlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != TOPSPTI_SUCCESS)
        return dt_error(DT_ERR_VENDOR, "topsptiActivityFlushAll failed (%d)", (int)r);
    return DT_OK;
}

static dt_status topspti_stop(dt_session *s)
{
    dt_status rc = topspti_flush(s);
    disarm();
    /* Records completed after the disable (if any) still arrive here. */
    if (g_fns.FlushAll) g_fns.FlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);

    uint64_t refused = pool_refused();
    if (g_fns.GetNumDroppedRecords) {
        size_t dropped = 0;
        if (g_fns.GetNumDroppedRecords(&dropped) == TOPSPTI_SUCCESS) {
            /* The count restarts at every read (the read at start discarded
               drops from before this session), so all of it is ours. */
            uint64_t lost = dropped;
            /* The vendor drops records when it gets no buffer; when the pool
               refused buffers the drops are charged to that cause. */
            if (lost) dt_loss_add(s, refused ? DT_LOSS_NO_BUFFER : DT_LOSS_VENDOR_DROPPED, lost);
        }
    }
    if (refused)
        dt_session_note(s, "buffer_pool",
                        "%" PRIu64 " buffer requests refused (pool of %" PRIu32 " x %zu bytes exhausted); "
                        "raise buffer_count or buffer_size",
                        refused, s->config.buffer_count, s->config.buffer_size);
    uint64_t orphaned = atomic_load(&g_orphaned);
    if (orphaned)
        dt_session_note(s, "orphaned_buffers", "%" PRIu64 " buffers completed with no session", orphaned);
    atomic_store_explicit(&g_session, NULL, memory_order_release);
    uint32_t held = pool_destroy();
    if (held)
        dt_session_note(s, "buffer_pool_held",
                        "TOPSPTI still held %" PRIu32 " buffers after the final flush; their memory is kept",
                        held);
    return rc;
}

static int topspti_clock(uint64_t *ns)
{
    if (!g_fns.GetTimestamp) return -1;
    return g_fns.GetTimestamp(ns) == TOPSPTI_SUCCESS ? 0 : -1;
}

const dt_backend dt_backend_topspti = {
    .name = "topspti",
    .vendor = "Enflame GCU (TOPSPTI)",
    .api_category = "privateuse1",
    .probe = topspti_probe,
    .start = topspti_start,
    .flush = topspti_flush,
    .stop = topspti_stop,
    .clock = topspti_clock,
    .push_external = NULL,
    .pop_external = NULL,
};

/*
 * The CUPTI-family entry points over the emulator core: kind switches,
 * CUPTI's iterator semantics (MAX_LIMIT_REACHED at the end of the valid data
 * and on a record cut short, INVALID_KIND on a kind the family never
 * defined), per-thread external-correlation stacks, the subscriber, device
 * descriptions and the failure modes; each personality's quirks by data.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cf_personality.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int kernel_on, concurrent_on, memcpy2_on, device_on, latency;
    int devices_delivered;
    int contexts;                 /* device contexts created */
    int resource_on;              /* the subscriber's context-creation callback */
    emu_request_fn request;
    void (*complete)(void *, uint32_t, uint8_t *, size_t, size_t);
    char subscriber_name[64];     /* "CUPTI for <name>", or "" */
} g_state;

enum { FAIL_NONE, FAIL_NO_DRIVER, FAIL_BUSY, FAIL_OLD_DRIVER };

static int fail_mode(void)
{
    const char *v = getenv("DEVTRACE_EMU_FAIL");
    if (!v || !*v) return FAIL_NONE;
    if (strcmp(v, "no_driver") == 0) return FAIL_NO_DRIVER;
    if (strcmp(v, "busy") == 0) return FAIL_BUSY;
    if (strcmp(v, "old_driver") == 0) return FAIL_OLD_DRIVER;
    return FAIL_NONE;
}

/* The failure an arming call reports in the current mode. */
static int arming_failure(void)
{
    switch (fail_mode()) {
    case FAIL_NO_DRIVER: return DT_CF_ERROR_UNKNOWN;
    case FAIL_OLD_DRIVER: return DT_CF_ERROR_NOT_COMPATIBLE;
    default: return DT_CF_SUCCESS;
    }
}

/* DEVTRACE_EMU_INIT_ON_ARM=1: an arming call initialises the driver (and so
   calls the injection library) when nothing has yet. */
static void arming_call(void)
{
    const char *v = getenv("DEVTRACE_EMU_INIT_ON_ARM");
    if (v && strcmp(v, "1") == 0) emu_core_driver_init();
}

/* DEVTRACE_EMU_BEFORE_CONTEXT=refused: EnableAndDump and the runtime
   filter answer NOT_INITIALIZED until a device context exists (while the
   driver initialises, as InitializeInjection runs). */
static int refused_before_context(void)
{
    const char *v = getenv("DEVTRACE_EMU_BEFORE_CONTEXT");
    if (!v || strcmp(v, "refused") != 0) return 0;
    pthread_mutex_lock(&g_lock);
    int none = g_state.contexts == 0;
    pthread_mutex_unlock(&g_lock);
    return none;
}

static int incomplete_refused(void)
{
    const char *v = getenv("DEVTRACE_EMU_INCOMPLETE");
    return v && strcmp(v, "refused") == 0;
}

static emu_cf_options current_options(void)
{
    const emu_cf_personality *p = emu_cf_impl;
    emu_cf_options o;
    pthread_mutex_lock(&g_lock);
    o.kernel_kind = g_state.concurrent_on || !g_state.kernel_on ? DT_CF_KIND_CONCURRENT_KERNEL : DT_CF_KIND_KERNEL;
    o.peer_as_memcpy2 = (p->quirks & EMU_CF_PEER_RECORDS) && g_state.memcpy2_on;
    o.copies_name_devices = 0;
    o.latency_timestamps = g_state.latency;
    pthread_mutex_unlock(&g_lock);
    o.kernel_size = p->kernel_size;
    o.memcpy_size = p->memcpy_size;
    o.memset_size = p->memset_size;
    return o;
}

/* ------------------------------------------------------------------ */
/* The core's hooks                                                    */
/* ------------------------------------------------------------------ */
size_t emu_cf_vendor_record_size(emu_rec_kind kind)
{
    /* The core sizes buffers before writing: the larger of the two copy
       records a personality with MEMCPY2 may write. */
    emu_cf_options o = current_options();
    o.peer_as_memcpy2 = (emu_cf_impl->quirks & EMU_CF_PEER_RECORDS) != 0;
    return emu_cf_record_size(kind, &o);
}

/* ------------------------------------------------------------------ */
/* A client's timestamp callback (cuptiActivityRegisterTimestampCallback) */
/* ------------------------------------------------------------------ */
/* CUPTI then gives every timestamp in the callback's terms: those taken on
   the CPU from the callback, the device's converted to them (its header).
   The emulator converts its device times by the line through two readings
   of the callback made as it is registered; times before the registration
   (records made before it) keep the device clock, as the header says of
   records generated before a change. */
static struct {
    uint64_t (*fn)(void);
    long double scale, offset;       /* callback = scale * device + offset */
    uint64_t since;                  /* device time of the registration */
} g_timestamps;

int emu_cf_register_timestamp_callback(uint64_t (*fn)(void))
{
    if (!fn) return DT_CF_ERROR_INVALID_PARAMETER;
    uint64_t d1 = emu_core_timestamp(), c1 = fn();
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    uint64_t d2 = emu_core_timestamp(), c2 = fn();
    if (d2 <= d1) return DT_CF_ERROR_UNKNOWN;
    long double scale = ((long double)c2 - (long double)c1) / ((long double)d2 - (long double)d1);
    pthread_mutex_lock(&g_lock);
    g_timestamps.fn = fn;
    g_timestamps.scale = scale;
    g_timestamps.offset = (long double)c1 - scale * (long double)d1;
    g_timestamps.since = d1;
    pthread_mutex_unlock(&g_lock);
    emu_core_timestamp_callback_registered();
    return DT_CF_SUCCESS;
}

/* A device time in the callback's terms. */
static uint64_t client_time(uint64_t device, long double scale, long double offset)
{
    if (!device) return 0;
    long double v = scale * (long double)device + offset;
    return v < 1.0L ? 1 : (uint64_t)v;
}

void emu_cf_vendor_write_record(uint8_t *dst, const emu_activity *a)
{
    emu_cf_options o = current_options();
    pthread_mutex_lock(&g_lock);
    int converted = g_timestamps.fn != NULL;
    long double scale = g_timestamps.scale, offset = g_timestamps.offset;
    uint64_t since = g_timestamps.since;
    pthread_mutex_unlock(&g_lock);
    /* a record is made before the registration or after it: by its start */
    if (!converted || a->start < since) {
        emu_cf_write_record(dst, a, &o);
        return;
    }
    emu_activity b = *a;
    b.start = client_time(a->start, scale, offset);
    b.end = client_time(a->end, scale, offset);
    if (a->kind == EMU_REC_KERNEL) {
        b.u.kernel.queued = client_time(a->u.kernel.queued, scale, offset);
        b.u.kernel.submitted = client_time(a->u.kernel.submitted, scale, offset);
        b.u.kernel.completed = client_time(a->u.kernel.completed, scale, offset);
    }
    emu_cf_write_record(dst, &b, &o);
}

static _Thread_local int t_in_completion;

int emu_cf_in_completion(void) { return t_in_completion; }

void emu_cf_vendor_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid_size)
{
    /* Per-thread buffers (CUDA 13): no context, stream 0. */
    t_in_completion = 1;
    ((void (*)(void *, uint32_t, uint8_t *, size_t, size_t))client_fn)(NULL, 0, buffer, size, valid_size);
    t_in_completion = 0;
}

uint32_t emu_cf_cbid(emu_domain domain, emu_op op, emu_copy_kind copy_kind)
{
    const emu_cf_personality *p = emu_cf_impl;
    if ((unsigned)op >= EMU_OP_COUNT) return 0;
    if (domain == EMU_DOMAIN_RUNTIME) return p->runtime_cbid[op];
    int async = op == EMU_OP_MEMCPY_ASYNC;
    if ((op == EMU_OP_MEMCPY || async) && (unsigned)copy_kind <= EMU_COPY_PTOP &&
        p->driver_copy_cbid[async][copy_kind])
        return p->driver_copy_cbid[async][copy_kind];
    return p->driver_cbid[op];
}

const char *emu_cf_name(emu_domain domain, uint32_t cbid)
{
    const emu_cf_personality *p = emu_cf_impl;
    if (domain == EMU_DOMAIN_DRIVER) return cbid < p->driver_name_count ? p->driver_names[cbid] : NULL;
    return cbid < p->runtime_name_count ? p->runtime_names[cbid] : NULL;
}

/* ------------------------------------------------------------------ */
/* Device records                                                      */
/* ------------------------------------------------------------------ */
static char g_device_names[EMU_MAX_DEVICES][48];

/* CUPTI describes each device once, when the driver initialises, to a
   client armed by then; EnableAndDump (dump) describes them again. The
   emulator's devices exist from the start: a client that armed before the
   driver initialised gets them as soon as both the kind is on and it has
   buffers; one that arms later gets them only by dumping. */
static void deliver_devices(int dump)
{
    if (!(emu_cf_impl->quirks & EMU_CF_DEVICE_RECORDS)) return;
    pthread_mutex_lock(&g_lock);
    if (!dump && !g_state.devices_delivered && emu_core_driver_initialised()) g_state.devices_delivered = 1; /* to nobody */
    int go = g_state.device_on && g_state.request && g_state.complete && (!g_state.devices_delivered || dump);
    emu_request_fn request = g_state.request;
    void (*complete)(void *, uint32_t, uint8_t *, size_t, size_t) = g_state.complete;
    if (go) g_state.devices_delivered = 1;
    pthread_mutex_unlock(&g_lock);
    if (!go) return;
    int n = emu_device_count();
    size_t need = (size_t)n * sizeof(dt_cf_device);
    uint8_t *buf = NULL;
    size_t size = 0, max_records = 0;
    request(&buf, &size, &max_records);
    if (!buf) return;
    if (size < need || ((uintptr_t)buf & 7u)) {
        complete(NULL, 0, buf, size, 0);
        return;
    }
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        snprintf(g_device_names[i], sizeof g_device_names[i], "devtrace emulated %s device %d",
                 emu_personality(), i);
        emu_cf_write_device(buf + used, (uint32_t)i, g_device_names[i]);
        used += sizeof(dt_cf_device);
    }
    complete(NULL, 0, buf, size, used);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */
int emu_cf_register_callbacks(emu_request_fn request, emu_generic_fn complete)
{
    if (!request || !complete) return DT_CF_ERROR_INVALID_PARAMETER;
    arming_call();
    if (emu_core_register_buffers(request, complete) != EMU_ST_OK) return DT_CF_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    g_state.request = request;
    g_state.complete = (void (*)(void *, uint32_t, uint8_t *, size_t, size_t))complete;
    pthread_mutex_unlock(&g_lock);
    deliver_devices(0);
    return DT_CF_SUCCESS;
}

static int set_kernel_kind(uint32_t kind, int on)
{
    pthread_mutex_lock(&g_lock);
    int *mine = kind == DT_CF_KIND_KERNEL ? &g_state.kernel_on : &g_state.concurrent_on;
    int other = kind == DT_CF_KIND_KERNEL ? g_state.concurrent_on : g_state.kernel_on;
    if (on && other && (emu_cf_impl->quirks & EMU_CF_SINGLE_KERNEL_KIND)) {
        pthread_mutex_unlock(&g_lock);
        return DT_CF_ERROR_NOT_COMPATIBLE;
    }
    *mine = on;
    int any = g_state.kernel_on || g_state.concurrent_on;
    pthread_mutex_unlock(&g_lock);
    emu_core_enable(EMU_REC_KERNEL, any);
    return DT_CF_SUCCESS;
}

static int set_kind(uint32_t kind, int on, int dump);

int emu_cf_set_kind(uint32_t kind, int on) { return set_kind(kind, on, 0); }

int emu_cf_enable_and_dump(uint32_t kind)
{
    if (refused_before_context()) return DT_CF_ERROR_NOT_INITIALIZED;
    return set_kind(kind, 1, 1);
}

static int enable_api(emu_domain domain, uint32_t cbid, uint8_t enable)
{
    if (fail_mode() == FAIL_NO_DRIVER) return DT_CF_ERROR_UNKNOWN;
    if (refused_before_context()) return DT_CF_ERROR_NOT_INITIALIZED;
    return emu_core_set_api_recorded(domain, cbid, enable != 0) == EMU_ST_OK ? DT_CF_SUCCESS
                                                                            : DT_CF_ERROR_INVALID_PARAMETER;
}

int emu_cf_enable_runtime_api(uint32_t cbid, uint8_t enable)
{
    return enable_api(EMU_DOMAIN_RUNTIME, cbid, enable);
}

int emu_cf_enable_driver_api(uint32_t cbid, uint8_t enable)
{
    return enable_api(EMU_DOMAIN_DRIVER, cbid, enable);
}

/* Activity attributes (CUpti_ActivityAttribute, 0 to 10 in CUDA 13.0):
   kept, with CUPTI's defaults for the device buffers (its header); the
   device-buffer ones count as set late once a context exists, since CUPTI
   applies them to the buffers it allocates after. */
#define EMU_CF_ATTRIBUTES 11
static uint64_t g_attribute[EMU_CF_ATTRIBUTES] = {
    [DT_CF_ATTR_DEVICE_BUFFER_SIZE] = 3200000, [1] = 8388608 /* CDP */, [DT_CF_ATTR_DEVICE_BUFFER_POOL_LIMIT] = 250,
    [DT_CF_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] = 3, [9] = 1 /* per-thread buffers */, [10] = 16777216,
};

int emu_cf_set_attribute(uint32_t attribute, size_t *size, void *value)
{
    if (!size || !value || attribute >= EMU_CF_ATTRIBUTES || *size == 0 || *size > 8)
        return DT_CF_ERROR_INVALID_PARAMETER;
    uint64_t v = 0;
    memcpy(&v, value, *size); /* little-endian */
    pthread_mutex_lock(&g_lock);
    g_attribute[attribute] = v;
    int late = g_state.contexts > 0 && (attribute == DT_CF_ATTR_DEVICE_BUFFER_SIZE ||
                                        attribute == DT_CF_ATTR_DEVICE_BUFFER_POOL_LIMIT ||
                                        attribute == DT_CF_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE);
    pthread_mutex_unlock(&g_lock);
    if (late) emu_core_attribute_set_late();
    return DT_CF_SUCCESS;
}

int emu_cf_get_attribute(uint32_t attribute, size_t *size, void *value)
{
    if (!size || !value || attribute >= EMU_CF_ATTRIBUTES || *size == 0) return DT_CF_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    uint64_t v = g_attribute[attribute];
    pthread_mutex_unlock(&g_lock);
    size_t n = *size < 8 ? *size : 8;
    memcpy(value, &v, n);
    *size = n;
    return DT_CF_SUCCESS;
}

int emu_cf_finalize(void)
{
    /* CUPTI's header: from an API exit callback, or with the device
       synchronised and the buffers flushed */
    if (!emu_core_in_api_exit() && emu_core_work_running()) {
        emu_core_finalize_refused();
        return DT_CF_ERROR_INVALID_OPERATION;
    }
    emu_core_finalize();
    pthread_mutex_lock(&g_lock);
    g_state.kernel_on = g_state.concurrent_on = g_state.memcpy2_on = g_state.device_on = g_state.latency = g_state.resource_on = 0;
    g_state.request = NULL;
    g_state.complete = NULL;
    g_state.subscriber_name[0] = '\0';
    pthread_mutex_unlock(&g_lock);
    return DT_CF_SUCCESS;
}

static int set_kind(uint32_t kind, int on, int dump)
{
    if (on) {
        arming_call();
        int f = arming_failure();
        if (f != DT_CF_SUCCESS) return f;
    }
    emu_rec_kind ek;
    switch (kind) {
    case DT_CF_KIND_KERNEL:
    case DT_CF_KIND_CONCURRENT_KERNEL: return set_kernel_kind(kind, on);
    case DT_CF_KIND_MEMCPY: ek = EMU_REC_MEMCPY; break;
    case DT_CF_KIND_MEMSET: ek = EMU_REC_MEMSET; break;
    case DT_CF_KIND_RUNTIME: ek = EMU_REC_RUNTIME; break;
    case DT_CF_KIND_DRIVER: ek = EMU_REC_DRIVER; break;
    case DT_CF_KIND_EXTERNAL_CORRELATION: ek = EMU_REC_EXTERNAL; break;
    case DT_CF_KIND_MEMORY2: ek = EMU_REC_MEMORY; break;
    case DT_CF_KIND_MEMORY_POOL: ek = EMU_REC_MEMORY_POOL; break;
    case DT_CF_KIND_MEMCPY2:
        pthread_mutex_lock(&g_lock);
        g_state.memcpy2_on = on;
        pthread_mutex_unlock(&g_lock);
        return DT_CF_SUCCESS;
    case DT_CF_KIND_DEVICE:
        pthread_mutex_lock(&g_lock);
        g_state.device_on = on;
        pthread_mutex_unlock(&g_lock);
        if (on) deliver_devices(dump);
        return DT_CF_SUCCESS;
    case 6: /* EVENT, METRIC, EVENT_INSTANCE, METRIC_INSTANCE: legacy profiling */
    case 7:
    case 21:
    case 23:
        return DT_CF_ERROR_LEGACY_PROFILER_NOT_SUPPORTED;
    default:
        /* Kinds the family has but the emulated device never produces. */
        if (kind == 0 || kind >= DT_CF_KIND_COUNT) return DT_CF_ERROR_INVALID_KIND;
        return DT_CF_SUCCESS;
    }
    return emu_core_enable(ek, on) == EMU_ST_OK ? DT_CF_SUCCESS : DT_CF_ERROR_INVALID_KIND;
}

int emu_cf_latency_timestamps(uint8_t enable)
{
    pthread_mutex_lock(&g_lock);
    g_state.latency = enable != 0;
    pthread_mutex_unlock(&g_lock);
    return DT_CF_SUCCESS;
}

int emu_cf_flush_all(uint32_t flag)
{
    if (fail_mode() == FAIL_NO_DRIVER) return DT_CF_ERROR_UNKNOWN;
    /* after the runtime's teardown at exit: no driver left to flush */
    if (emu_core_flush_all((flag & DT_CF_FLAG_FLUSH_FORCED) != 0) != EMU_ST_OK) return DT_CF_ERROR_NOT_INITIALIZED;
    return DT_CF_SUCCESS;
}

int emu_cf_flush_period(uint32_t ms)
{
    emu_core_flush_period(ms);
    return DT_CF_SUCCESS;
}

int emu_cf_dropped(size_t *dropped)
{
    if (!dropped) return DT_CF_ERROR_INVALID_PARAMETER;
    *dropped = emu_core_take_dropped();
    return DT_CF_SUCCESS;
}

static uint32_t kind_at(const uint8_t *p)
{
    uint32_t k;
    memcpy(&k, p, sizeof k);
    return k;
}

/* CUPTI's iterator: the stride comes from the record's kind, and a record
   that does not fit in the valid size ends the buffer (MAX_LIMIT_REACHED),
   exactly as the real library answers. */
int emu_cf_next_record(uint8_t *buffer, size_t valid, void **record)
{
    if (!buffer || !record) return DT_CF_ERROR_INVALID_PARAMETER;
    emu_cf_options o = current_options();
    o.peer_as_memcpy2 = (emu_cf_impl->quirks & EMU_CF_PEER_RECORDS) != 0;
    size_t off = 0;
    if (*record) {
        uint8_t *cur = *record;
        if (cur < buffer || cur >= buffer + valid) return DT_CF_ERROR_INVALID_PARAMETER;
        uint32_t kind = kind_at(cur);
        /* MCPTI 3.8's stale iterator: the record after an external
           correlation is the same record again. */
        if (kind == DT_CF_KIND_EXTERNAL_CORRELATION && (emu_cf_impl->quirks & EMU_CF_STALE_AFTER_EXTERNAL))
            return DT_CF_SUCCESS;
        size_t sz = emu_cf_stride(kind, &o);
        if (sz == 0) return DT_CF_ERROR_INVALID_KIND;
        off = (size_t)(cur - buffer) + sz;
    }
    if (valid < sizeof(uint32_t) || off > valid - sizeof(uint32_t)) return DT_CF_ERROR_MAX_LIMIT_REACHED;
    uint32_t next_kind = kind_at(buffer + off);
    size_t sz = emu_cf_stride(next_kind, &o);
    if (sz == 0) return DT_CF_ERROR_INVALID_KIND;
    if (sz > valid - off) return DT_CF_ERROR_MAX_LIMIT_REACHED;
    if ((next_kind == DT_CF_KIND_KERNEL || next_kind == DT_CF_KIND_CONCURRENT_KERNEL) && incomplete_refused()) {
        uint64_t start, end;
        memcpy(&start, buffer + off + offsetof(dt_cf_kernel, start), sizeof start);
        memcpy(&end, buffer + off + offsetof(dt_cf_kernel, end), sizeof end);
        if (start && !end) return DT_CF_ERROR_INVALID_KIND; /* "incomplete or invalid" */
    }
    *record = buffer + off;
    return DT_CF_SUCCESS;
}

int emu_cf_push_external(uint32_t kind, uint64_t id)
{
    /* Not an arming call: the failure modes (and their getenv, which would
       cost more than the push itself) do not apply to the per-thread stack. */
    if (kind == DT_CF_EXTERNAL_INVALID) return DT_CF_ERROR_INVALID_PARAMETER;
    return emu_core_push_external(kind, id) == EMU_ST_OK ? DT_CF_SUCCESS : DT_CF_ERROR_INVALID_PARAMETER;
}

int emu_cf_pop_external(uint32_t kind, uint64_t *id)
{
    /* Stricter than needed on purpose: a client passing NULL here is a bug
       some CUPTI versions crash on. */
    if (!id || kind == DT_CF_EXTERNAL_INVALID) return DT_CF_ERROR_INVALID_PARAMETER;
    return emu_core_pop_external(kind, id) == EMU_ST_OK ? DT_CF_SUCCESS : DT_CF_ERROR_QUEUE_EMPTY;
}

/* name: the subscriber's (NULL: none given); holder, holder_len: where the
   holder's name goes when refused. */
static int subscribe(void **subscriber, emu_generic_fn callback, void *userdata, const char *name, char *holder,
                     size_t holder_len)
{
    if (!subscriber) return DT_CF_ERROR_INVALID_PARAMETER;
    arming_call();
    if (holder && holder_len) holder[0] = '\0';
    if (fail_mode() == FAIL_BUSY) {
        if (holder && holder_len) snprintf(holder, holder_len, "%s for emulated profiler", emu_cf_impl->result_prefix);
        return DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    int f = arming_failure();
    if (f != DT_CF_SUCCESS) return f;
    /* g_lock is taken under the core's lock (record writing): never the
       other way round */
    emu_status st = emu_core_subscribe(subscriber, callback, userdata);
    pthread_mutex_lock(&g_lock);
    if (st == EMU_ST_OK) {
        if (name) snprintf(g_state.subscriber_name, sizeof g_state.subscriber_name, "%s for %.53s", emu_cf_impl->result_prefix, name);
        else g_state.subscriber_name[0] = '\0';
    } else if (st == EMU_ST_BUSY && holder && holder_len) {
        snprintf(holder, holder_len, "%s", g_state.subscriber_name);
    }
    pthread_mutex_unlock(&g_lock);
    if (st == EMU_ST_BUSY) return DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    return st == EMU_ST_OK ? DT_CF_SUCCESS : DT_CF_ERROR_INVALID_PARAMETER;
}

int emu_cf_subscribe(void **subscriber, emu_generic_fn callback, void *userdata)
{
    return subscribe(subscriber, callback, userdata, NULL, NULL, 0);
}

int emu_cf_subscribe_named(void **subscriber, emu_generic_fn callback, void *userdata, dt_cf_subscriber_params *params)
{
    if (params && params->structSize < sizeof *params) return DT_CF_ERROR_INVALID_PARAMETER;
    return subscribe(subscriber, callback, userdata, params ? params->subscriberName : NULL,
                     params ? params->oldSubscriberName : NULL, params ? params->oldSubscriberSize : 0);
}

int emu_cf_unsubscribe(void *subscriber)
{
    int r = emu_core_unsubscribe(subscriber) == EMU_ST_OK ? DT_CF_SUCCESS : DT_CF_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    if (r == DT_CF_SUCCESS) {
        g_state.subscriber_name[0] = '\0';
        g_state.resource_on = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

static int domain_map(uint32_t domain, emu_domain *out)
{
    if (domain == DT_CF_DOMAIN_RUNTIME_API) { *out = EMU_DOMAIN_RUNTIME; return 1; }
    if (domain == DT_CF_DOMAIN_DRIVER_API) { *out = EMU_DOMAIN_DRIVER; return 1; }
    return 0;
}

/* The resource domain: the context-creation callback (the emulator's
   only resource callback). */
static int enable_resource(uint32_t enable, void *subscriber)
{
    if (!emu_core_subscriber(subscriber, NULL, NULL)) return DT_CF_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    g_state.resource_on = enable != 0;
    pthread_mutex_unlock(&g_lock);
    return DT_CF_SUCCESS;
}

void emu_cf_context_created(int device)
{
    pthread_mutex_lock(&g_lock);
    g_state.contexts++;
    int on = g_state.resource_on;
    pthread_mutex_unlock(&g_lock);
    emu_generic_fn callback;
    void *userdata;
    if (!on || !emu_core_subscriber(NULL, &callback, &userdata)) return;
    dt_cf_resource_data data = {.context = (void *)(uintptr_t)(device + 1)};
    ((void (*)(void *, uint32_t, uint32_t, const void *))callback)(userdata, DT_CF_DOMAIN_RESOURCE,
                                                                  DT_CF_CBID_RESOURCE_CONTEXT_CREATED, &data);
}

int emu_cf_enable_domain(uint32_t enable, void *subscriber, uint32_t domain)
{
    emu_domain d;
    if (domain == DT_CF_DOMAIN_RESOURCE) return enable_resource(enable, subscriber);
    if (!domain_map(domain, &d)) return DT_CF_SUCCESS; /* no such callbacks are ever made */
    return emu_core_enable_domain(subscriber, d, enable != 0) == EMU_ST_OK ? DT_CF_SUCCESS
                                                                            : DT_CF_ERROR_INVALID_PARAMETER;
}

int emu_cf_enable_all_domains(uint32_t enable, void *subscriber)
{
    int r = emu_cf_enable_domain(enable, subscriber, DT_CF_DOMAIN_RUNTIME_API);
    return r != DT_CF_SUCCESS ? r : emu_cf_enable_domain(enable, subscriber, DT_CF_DOMAIN_DRIVER_API);
}

int emu_cf_callback_name(uint32_t domain, uint32_t cbid, const char **name)
{
    emu_domain d;
    if (!name || !domain_map(domain, &d)) return DT_CF_ERROR_INVALID_PARAMETER;
    const char *n = emu_vendor_impl.callback_name(d, cbid);
    if (!n) return DT_CF_ERROR_INVALID_PARAMETER;
    *name = n;
    return DT_CF_SUCCESS;
}

int emu_cf_set_thread_id_type(uint32_t type)
{
    if (type == DT_CF_THREAD_ID_DEFAULT) emu_core_set_thread_id_type(EMU_TID_PTHREAD);
    else if (type == DT_CF_THREAD_ID_SYSTEM) emu_core_set_thread_id_type(EMU_TID_SYSTEM);
    else return DT_CF_ERROR_INVALID_PARAMETER;
    return DT_CF_SUCCESS;
}

int emu_cf_get_thread_id_type(uint32_t *type)
{
    if (!type) return DT_CF_ERROR_INVALID_PARAMETER;
    *type = emu_core_get_thread_id_type() == EMU_TID_SYSTEM ? DT_CF_THREAD_ID_SYSTEM : DT_CF_THREAD_ID_DEFAULT;
    return DT_CF_SUCCESS;
}

int emu_cf_version(uint32_t *version)
{
    if (!version) return DT_CF_ERROR_INVALID_PARAMETER;
    *version = emu_cf_impl->version;
    return DT_CF_SUCCESS;
}

int emu_cf_result_string(int result, const char **text)
{
    static const struct { int code; const char *suffix; } names[] = {
        {DT_CF_SUCCESS, "SUCCESS"},
        {DT_CF_ERROR_INVALID_PARAMETER, "ERROR_INVALID_PARAMETER"},
        {DT_CF_ERROR_INVALID_OPERATION, "ERROR_INVALID_OPERATION"},
        {DT_CF_ERROR_MAX_LIMIT_REACHED, "ERROR_MAX_LIMIT_REACHED"},
        {DT_CF_ERROR_NOT_COMPATIBLE, "ERROR_NOT_COMPATIBLE"},
        {DT_CF_ERROR_NOT_INITIALIZED, "ERROR_NOT_INITIALIZED"},
        {DT_CF_ERROR_QUEUE_EMPTY, "ERROR_QUEUE_EMPTY"},
        {DT_CF_ERROR_INVALID_KIND, "ERROR_INVALID_KIND"},
        {DT_CF_ERROR_NOT_SUPPORTED, "ERROR_NOT_SUPPORTED"},
        {DT_CF_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, "ERROR_LEGACY_PROFILER_NOT_SUPPORTED"},
        {DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
        {DT_CF_ERROR_UNKNOWN, "ERROR_UNKNOWN"},
    };
    enum { COUNT = sizeof names / sizeof names[0] };
    static char full[COUNT][64];
    if (!text) return DT_CF_ERROR_INVALID_PARAMETER;
    for (int i = 0; i < COUNT; i++) {
        if (names[i].code != result) continue;
        pthread_mutex_lock(&g_lock);
        if (!full[i][0]) snprintf(full[i], sizeof full[i], "%s_%s", emu_cf_impl->result_prefix, names[i].suffix);
        pthread_mutex_unlock(&g_lock);
        *text = full[i];
        return DT_CF_SUCCESS;
    }
    return DT_CF_ERROR_INVALID_PARAMETER;
}

int emu_cf_timestamp(uint64_t *timestamp)
{
    if (!timestamp) return DT_CF_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_lock);
    uint64_t (*fn)(void) = g_timestamps.fn;
    pthread_mutex_unlock(&g_lock);
    *timestamp = fn ? fn() : emu_core_timestamp();
    return DT_CF_SUCCESS;
}

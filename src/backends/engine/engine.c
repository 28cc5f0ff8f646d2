/*
 * The engine for CUPTI-shaped vendor interfaces: arming (early and per
 * session), the buffer pool, buffer completion, dropped records, API
 * callbacks and external correlation; its library is engine_library.c's.
 * What differs between vendors is data in their dt_vendor.
 *
 * Vendor state is process-wide, and so is an engine's: one library, one
 * pool, one recording session at a time.
 *
 * Locking. e->lock (recursive) serialises loading, arming and disarming. It
 * is recursive because a vendor call made while starting can initialise
 * the vendor's runtime, which may call back into devtrace on the same
 * thread (CUDA calls InitializeInjection, which prepares this engine).
 * e->decode_lock pairs the session pointer with completion callbacks, which
 * the vendor may run on any thread, including inside a flush called here.
 *
 * No vendor call is made while a devtrace lock that a vendor callback
 * takes is held: flushes, the dropped-record query (CUPTI's takes its
 * internal lock, under which it calls the buffer callbacks; Kineto
 * deadlocked calling it under its own lock) and clock reads are made
 * without e->decode_lock or the session's lock. Vendor callbacks take
 * e->lock only with trylock, so vendor calls made while arming under it
 * cannot deadlock with them. The record iterator, which reads the client's
 * own buffer, is the exception: it runs while the decoder holds the
 * session's lock.
 */
#include "backends/engine/engine.h"
#include "base/hash.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The vendor entry points, as the engine calls them. Vendor enums are int
   sized, and vendor handles are pointers. */
typedef int (*fn_kind)(uint32_t kind);
typedef int (*fn_register)(void (*request)(void), void (*complete)(void));
typedef int (*fn_u32)(uint32_t value);
typedef int (*fn_u64p)(uint64_t *value);
typedef int (*fn_dropped_ctx)(void *context, uint32_t stream, size_t *dropped);
typedef int (*fn_dropped)(size_t *dropped);
typedef int (*fn_push)(uint32_t kind, uint64_t id);
typedef int (*fn_pop)(uint32_t kind, uint64_t *id);
typedef void (*fn_api_callback)(void *userdata, uint32_t domain, uint32_t cbid, const void *data);
typedef int (*fn_subscribe)(void **subscriber, fn_api_callback callback, void *userdata);
typedef int (*fn_unsubscribe)(void *subscriber);
typedef int (*fn_enable_domain)(uint32_t enable, void *subscriber, uint32_t domain);
typedef int (*fn_enable_all)(uint32_t enable, void *subscriber);
typedef int (*fn_name)(uint32_t domain_or_kind, uint32_t cbid, const char **name);
typedef int (*fn_u32_u8)(uint32_t value, uint8_t flag);
typedef int (*fn_u8)(uint8_t value);
typedef int (*fn_enable_callback)(uint32_t enable, void *subscriber, uint32_t domain, uint32_t cbid);
typedef int (*fn_attribute)(uint32_t attribute, size_t *size, void *value);

#define SYM DT_ENGINE_SYM

/* ------------------------------------------------------------------ */
/* Arming                                                              */
/* ------------------------------------------------------------------ */
static int any_armed(const dt_engine *e)
{
    for (size_t i = 0; i < e->v->records.kind_count; i++)
        if (e->armed[i]) return 1;
    return 0;
}

/* Enable kinds[i], or its alternative where the vendor refuses the two
   together. Returns the vendor's result. */
static int arm_kind(dt_engine *e, size_t i)
{
    const dt_kind_spec *k = &e->v->records.kinds[i];
    fn_kind enable = SYM(e, fn_kind, DT_SYM_ENABLE);
    if (k->kind == e->v->dump_kind && e->sym[DT_SYM_ENABLE_AND_DUMP]) enable = SYM(e, fn_kind, DT_SYM_ENABLE_AND_DUMP);
    int r = enable(k->kind);
    uint32_t armed = k->kind;
    const dt_vendor_results *res = &e->v->results;
    if (r != res->success && k->alternative &&
        (r == res->not_compatible || (res->kind_not_supported && r == res->kind_not_supported))) {
        r = enable(k->alternative);
        armed = k->alternative;
    }
    if (r == e->v->results.success) {
        e->armed[i] = 1;
        e->armed_kind[i] = armed;
    }
    return r;
}

static void disarm(dt_engine *e, int keep_cheap)
{
    fn_kind disable = SYM(e, fn_kind, DT_SYM_DISABLE);
    for (size_t i = 0; i < e->v->records.kind_count; i++) {
        if (!e->armed[i] || (keep_cheap && e->v->records.kinds[i].cheap)) continue;
        disable(e->armed_kind[i]);
        e->armed[i] = 0;
    }
}

/* The thread-id type, set before the first kind is enabled after the
   library was loaded (or finalized) and never changed again: vendors apply
   it to records as kinds are enabled, and CUPTI's header forbids changing it
   while it profiles. System thread ids put API rows on the rows of the host
   threads that made the calls. */
static void set_thread_ids(dt_engine *e, dt_session *s)
{
    fn_u32 set = SYM(e, fn_u32, DT_SYM_SET_THREAD_ID_TYPE);
    if (e->thread_type_set || !set || any_armed(e)) return;
    int r = set(e->v->activity.thread_id_system);
    if (r == e->v->results.success) e->thread_type_set = 1;
    else if (s)
        dt__core_note(s, "thread_ids", "%s(SYSTEM) returned %s (%d): API rows carry the vendor's default thread "
                        "ids, not host thread ids", e->specs[DT_SYM_SET_THREAD_ID_TYPE].name, dt__engine_result_text(e, r), r);
}

/* The library's activity attributes the vendor's descriptor sets, once it
   is loaded or detached and armed again, before any kind is enabled (CUPTI
   applies its device-buffer attributes to the buffers it allocates after:
   under devtrace record they are set inside InitializeInjection, before
   the first context). The answers are kept for the sessions' notes. */
static void set_attributes(dt_engine *e)
{
    const dt_vendor *v = e->v;
    fn_attribute set = SYM(e, fn_attribute, DT_SYM_SET_ATTRIBUTE);
    if (e->attributes_set || !set || !v->attribute_count) return;
    for (uint32_t i = 0; i < v->attribute_count && i < DT_ENGINE_MAX_ATTRIBUTES; i++) {
        const dt_vendor_attribute *a = &v->attributes[i];
        uint8_t value[8];
        size_t size = a->size;
        memcpy(value, &a->value, sizeof value); /* little-endian: the low bytes */
        e->attribute_result[i] = set(a->id, &size, value);
    }
    e->attributes_set = 1;
}

static int register_buffers(dt_engine *e)
{
    void (*complete)(void) = e->v->caps & DT_VCAP_COMPLETE_WITH_CONTEXT ? (void (*)(void))e->complete_context
                                                                       : (void (*)(void))e->complete_plain;
    void (*request)(void) = e->v->caps & DT_VCAP_REQUEST_PLAIN ? (void (*)(void))e->request_plain
                                                               : (void (*)(void))e->request;
    return SYM(e, fn_register, DT_SYM_REGISTER_CALLBACKS)(request, complete);
}

static dt_status released_error(const dt_engine *e)
{
    return dt__error(DT_ERR_BUSY, "%s was given to %s in this process (DEVTRACE_CUPTI_HANDOVER): devtrace no "
                    "longer records its device activity here", e->v->backend->vendor, e->released_to);
}

/* The engine lock for a prepare, which the vendor's runtime may call (CUDA's
   InitializeInjection) while it initialises: on this thread from inside a
   start (the lock is recursive), or on another thread while a start holds
   the lock and waits for that very initialisation. 1 when taken; 0 when a
   start in progress on another thread will arm instead. */
static int lock_for_prepare(dt_engine *e)
{
    if (pthread_mutex_trylock(&e->lock) == 0) return 1;
    if (atomic_load(&e->starting)) return 0;
    pthread_mutex_lock(&e->lock);
    return 1;
}

static void cancel_finalize(dt_engine *e);

dt_status dt__engine_prepare(const dt_backend *self)
{
    dt_engine *e = self->impl;
    const dt_vendor *v = e->v;
    if (!(v->caps & DT_VCAP_EARLY_ARMING)) return DT_OK; /* nothing must precede its first context */
    if (!lock_for_prepare(e)) return DT_OK;
    /* Re-entered from a start in progress on this thread: that start arms. */
    if (e->early || atomic_load(&e->starting)) {
        pthread_mutex_unlock(&e->lock);
        return DT_OK;
    }
    if (atomic_load(&e->released)) {
        dt_status st = released_error(e);
        pthread_mutex_unlock(&e->lock);
        return st;
    }
    cancel_finalize(e);
    dt_status st = dt__engine_load(e);
    if (st != DT_OK) {
        pthread_mutex_unlock(&e->lock);
        return st;
    }
    /* A session started earlier (devtrace record starts one from its
       constructor, before the driver initialises) already sized the pool. */
    dt_config defaults;
    dt_config_init(&defaults);
    if (!dt__pool_slot_exists(&e->pool) &&
        dt__pool_slot_configure(&e->pool, defaults.buffer_count, defaults.buffer_size, DT_POOL_LAZY | DT_POOL_GROW) != 0) {
        pthread_mutex_unlock(&e->lock);
        return dt__error(DT_ERR_NO_MEMORY, "%s: out of memory for the activity buffer pool", v->backend->name);
    }
    atomic_store(&e->starting, 1);
    set_thread_ids(e, NULL);
    if (!any_armed(e)) set_attributes(e);
    uint8_t armed_now[DT_ENGINE_MAX_KINDS] = {0};
    int r = register_buffers(e);
    const char *call = e->specs[DT_SYM_REGISTER_CALLBACKS].name;
    for (size_t i = 0; r == v->results.success && i < v->records.kind_count; i++) {
        if (!v->records.kinds[i].cheap || e->armed[i]) continue;
        int k = arm_kind(e, i);
        if (k == v->results.success) armed_now[i] = 1;
        else if (v->records.kinds[i].required) { r = k; call = e->specs[DT_SYM_ENABLE].name; }
    }
    if (r != v->results.success) {
        char what[160];
        snprintf(what, sizeof what, "%s early arming (%s)", v->backend->name, call);
        st = dt__engine_failure(e, what, r);
        /* only what this call armed: a running session keeps its kinds */
        fn_kind disable = SYM(e, fn_kind, DT_SYM_DISABLE);
        for (size_t i = 0; i < v->records.kind_count; i++)
            if (armed_now[i]) { disable(e->armed_kind[i]); e->armed[i] = 0; }
    } else {
        e->early = 1;
        dt__log("%s: device kinds armed before the first device context", v->backend->name);
    }
    atomic_store(&e->starting, 0);
    pthread_mutex_unlock(&e->lock);
    return st;
}

/* The name function is asked once per session, before any buffer can
   complete: some vendors' name functions cannot be called from inside the
   buffer callback. -1 when out of memory. */
static int resolve_names(dt_engine *e)
{
    const dt_vendor *v = e->v;
    fn_name name = SYM(e, fn_name, DT_SYM_CALLBACK_NAME);
    for (int d = 0; d < 2; d++) {
        e->decoder.vendor_names[d] = NULL;
        dt__free(e->names[d]);
        e->names[d] = NULL;
        if (!name || !v->names.limit) continue;
        const char **table = dt__calloc(v->names.limit, sizeof *table);
        if (!table) return -1;
        uint32_t arg = d ? v->names.arg_driver : v->names.arg_runtime;
        for (uint32_t cbid = 1; cbid < v->names.limit; cbid++) {
            const char *n = NULL;
            if (name(arg, cbid, &n) == v->results.success && n && n[0]) table[cbid] = n;
        }
        e->names[d] = table;
        e->decoder.vendor_names[d] = table;
    }
    return 0;
}

/* Kernels' queued and submitted times, where the session asks for them:
   set before any kind is enabled and not changed while the session
   records (CUPTI's header), turned off again when it stops. */
static void latency_timestamps(dt_engine *e, dt_session *s)
{
    if (!(dt__sink_capture(s) & DT_CAPTURE_KERNEL_QUEUED)) return;
    fn_u8 set = SYM(e, fn_u8, DT_SYM_LATENCY_TIMESTAMPS);
    int r = set ? set(1) : e->v->results.success;
    if (set && r == e->v->results.success) e->latency_on = 1;
    else if (!set)
        dt__core_note(s, "queued", "the %s library has no %s: kernels' queued and submitted times are unknown",
                        e->v->backend->name, e->specs[DT_SYM_LATENCY_TIMESTAMPS].name);
    else
        dt__core_note(s, "queued", "%s(1) returned %s (%d): kernels' queued and submitted times are unknown",
                        e->specs[DT_SYM_LATENCY_TIMESTAMPS].name, dt__engine_result_text(e, r), r);
}

/* Turn on the API callbacks that link device work to devtrace's stack.
   e->lock held. */
static int enable_domains(dt_engine *e)
{
    if (e->domains_on) return 1;
    if (!e->subscribed) return 0;
    const dt_vendor *v = e->v;
    int ok = 0;
    fn_enable_domain one = SYM(e, fn_enable_domain, DT_SYM_ENABLE_DOMAIN);
    if (one) {
        ok = one(1, e->subscriber, v->callbacks.domain_runtime) == v->results.success;
        /* releases without driver callbacks are common: either will do */
        if (one(1, e->subscriber, v->callbacks.domain_driver) == v->results.success) ok = 1;
    }
    fn_enable_all all = SYM(e, fn_enable_all, DT_SYM_ENABLE_ALL_DOMAINS);
    if (!ok && all) ok = all(1, e->subscriber) == v->results.success;
    atomic_store(&e->domains_on, ok);
    return ok;
}

/* Subscribe, by name where the vendor lets devtrace give one. e->lock held. */
static dt_status subscribe(dt_engine *e)
{
    const dt_vendor *v = e->v;
    char holder[128] = "";
    const char *call = e->specs[DT_SYM_SUBSCRIBE].name;
    int r;
    if (v->callbacks.subscribe_named && e->sym[DT_SYM_SUBSCRIBE_NAMED]) {
        call = e->specs[DT_SYM_SUBSCRIBE_NAMED].name;
        r = v->callbacks.subscribe_named(e->sym[DT_SYM_SUBSCRIBE_NAMED], &e->subscriber,
                                         (void *)dt__engine_api_callback, e, "devtrace", holder, sizeof holder);
        /* a release that takes another size of parameters: unnamed, then */
        if (r == v->results.invalid_parameter) {
            call = e->specs[DT_SYM_SUBSCRIBE].name;
            r = SYM(e, fn_subscribe, DT_SYM_SUBSCRIBE)(&e->subscriber, dt__engine_api_callback, e);
        }
    } else {
        r = SYM(e, fn_subscribe, DT_SYM_SUBSCRIBE)(&e->subscriber, dt__engine_api_callback, e);
    }
    if (r == v->results.success) {
        e->subscribed = 1;
        return DT_OK;
    }
    holder[sizeof holder - 1] = '\0';
    if (r == v->results.multiple_subscribers && holder[0])
        return dt__error(DT_ERR_BUSY,
                        "%s: %s holds %s in this process, which allows one subscriber; stop it or disable its "
                        "device tracing",
                        call, holder, v->backend->vendor);
    return dt__engine_failure(e, call, r);
}

static void unsubscribe(dt_engine *e)
{
    if (!e->subscribed) return;
    fn_enable_domain one = SYM(e, fn_enable_domain, DT_SYM_ENABLE_DOMAIN);
    if (e->domains_on && one) {
        one(0, e->subscriber, e->v->callbacks.domain_runtime);
        one(0, e->subscriber, e->v->callbacks.domain_driver);
    }
    SYM(e, fn_unsubscribe, DT_SYM_UNSUBSCRIBE)(e->subscriber);
    e->subscribed = 0;
    atomic_store(&e->domains_on, 0);
}

/* ------------------------------------------------------------------ */
/* Calls made again when a context is created                          */
/* ------------------------------------------------------------------ */
/* The calls a vendor may refuse before its first device context exists:
   under devtrace record a session starts while the driver initialises. */
enum { DT_RETRY_DUMP = 1u << 0, DT_RETRY_QUIET = 1u << 1 };

/* A call of `bit` returned r at start: where the vendor tells of context
   creation, it is made again then. Returns 1 when it will be. e->lock held. */
static int retry_at_context(dt_engine *e, unsigned bit, int r)
{
    const dt_vendor *v = e->v;
    if (!v->callbacks.context_created || !e->subscribed || !e->sym[DT_SYM_ENABLE_CALLBACK]) return 0;
    if (!e->context_callback_on) {
        fn_enable_callback on = SYM(e, fn_enable_callback, DT_SYM_ENABLE_CALLBACK);
        if (on(1, e->subscriber, v->callbacks.domain_resource, v->callbacks.context_created) != v->results.success)
            return 0;
        e->context_callback_on = 1;
    }
    e->retry_first[bit == DT_RETRY_QUIET] = r;
    e->retry_refused |= bit;
    atomic_fetch_or(&e->retry_pending, bit);
    return 1;
}

static void quiet_calls(dt_engine *e, dt_session *s);

/* A context was created: the calls refused at start are made again. A
   start or stop holding the engine on another thread leaves them to the
   next context. */
static void context_created(dt_engine *e)
{
    if (pthread_mutex_trylock(&e->lock) != 0) return;
    unsigned bits = atomic_exchange(&e->retry_pending, 0);
    const dt_vendor *v = e->v;
    if (bits & DT_RETRY_DUMP) {
        for (size_t i = 0; i < v->records.kind_count; i++)
            if (v->records.kinds[i].kind == v->dump_kind && !e->armed[i]) e->retry_again[0] = arm_kind(e, i);
    }
    if (bits & DT_RETRY_QUIET) {
        e->retry_again[1] = v->results.success;
        quiet_calls(e, NULL);
    }
    e->retry_made |= bits;
    if (bits) dt__log("%s: calls refused at start made again as a context was created", v->backend->name);
    pthread_mutex_unlock(&e->lock);
}

/* At stop: say what became of the calls refused at start, and stop
   listening for contexts. e->lock held. */
static void end_context_retry(dt_engine *e, dt_session *s)
{
    atomic_store(&e->retry_pending, 0);
    static const struct { dt_vendor_symbol sym; const char *what, *lost; } calls[2] = {
        {DT_SYM_ENABLE_AND_DUMP, "the device descriptions", "devices are described by the driver at stop only"},
        {DT_SYM_ENABLE_RUNTIME_API, "the runtime filter",
         "call-configuration calls are recorded"},
    };
    for (unsigned c = 0; s && c < 2; c++) {
        if (!(e->retry_refused & (1u << c))) continue;
        int first = e->retry_first[c], again = e->retry_again[c];
        const char *name = e->specs[calls[c].sym].name;
        if (!(e->retry_made & (1u << c)))
            dt__core_note(s, "context_retry", "%s (%s) returned %s (%d) as the session started; no device context "
                            "was created while it recorded: %s", name, calls[c].what, dt__engine_result_text(e, first), first,
                            calls[c].lost);
        else if (again == e->v->results.success)
            dt__core_note(s, "context_retry", "%s (%s) returned %s (%d) as the session started; made again when a "
                            "device context was created: accepted", name, calls[c].what, dt__engine_result_text(e, first), first);
        else
            dt__core_note(s, "context_retry", "%s (%s) returned %s (%d) as the session started and %s (%d) when "
                            "a device context was created: %s", name, calls[c].what, dt__engine_result_text(e, first), first,
                            dt__engine_result_text(e, again), again, calls[c].lost);
    }
    e->retry_refused = e->retry_made = 0;
    if (e->context_callback_on && e->subscribed)
        SYM(e, fn_enable_callback, DT_SYM_ENABLE_CALLBACK)(0, e->subscriber, e->v->callbacks.domain_resource,
                                                          e->v->callbacks.context_created);
    e->context_callback_on = 0;
}

/* Ask the vendor not to record the runtime and driver calls that launch
   no device work and that every launch or query makes (bookkeeping: they
   double the API records). After the kinds are enabled: enabling the
   runtime or driver kind resets such choices. */
static void quiet_calls(dt_engine *e, dt_session *s)
{
    const dt_vendor_api_ids *ids = &e->v->api_ids;
    const struct {
        dt_vendor_symbol sym;
        const uint32_t *ids;
        uint32_t count, capture;
    } filters[2] = {
        {DT_SYM_ENABLE_RUNTIME_API, ids->quiet_runtime, ids->quiet_runtime_count, DT_CAPTURE_RUNTIME},
        {DT_SYM_ENABLE_DRIVER_API, ids->quiet_driver, ids->quiet_driver_count, DT_CAPTURE_DRIVER},
    };
    for (int f = 0; f < 2; f++) {
        fn_u32_u8 filter = SYM(e, fn_u32_u8, filters[f].sym);
        /* s NULL: made again at a context's creation, answers kept for stop */
        if (!filters[f].count || !filter || (s && !(dt__sink_capture(s) & filters[f].capture))) continue;
        for (uint32_t i = 0; i < filters[f].count; i++) {
            int r = filter(filters[f].ids[i], 0);
            if (r == e->v->results.success) continue;
            if (!s) {
                e->retry_again[1] = r;
                return;
            }
            if (retry_at_context(e, DT_RETRY_QUIET, r)) return;
            dt__core_note(s, "quiet_runtime_calls", "%s(%" PRIu32 ", 0) returned %s (%d): those calls are "
                                "recorded (they launch no device work)", e->specs[filters[f].sym].name,
                                filters[f].ids[i], dt__engine_result_text(e, r), r);
            break;
        }
    }
}

/* Device descriptions from the vendor's driver, where it is loaded: they
   replace what records said (the driver knows every field). */
static void describe_devices(dt_engine *e, dt_session *s)
{
    if (!e->v->query_devices) return;
    dt_device_props *found = dt__calloc(DT_MAX_DEVICES, sizeof *found);
    if (!found) return;
    uint32_t n = e->v->query_devices(found, DT_MAX_DEVICES);
    pthread_mutex_lock(&e->devices_lock);
    for (uint32_t i = 0; i < n && i < DT_MAX_DEVICES; i++) {
        if (!found[i].valid || found[i].id >= DT_MAX_DEVICES) continue;
        e->devices[found[i].id] = found[i];
        dt__core_set_device(s, &found[i]);
    }
    pthread_mutex_unlock(&e->devices_lock);
    dt__free(found);
}

static void attach(dt_engine *e, dt_session *s)
{
    pthread_mutex_lock(&e->decode_lock);
    e->session = s;
    if (s) e->attached++;
    pthread_mutex_unlock(&e->decode_lock);
}

dt_status dt__engine_start(const dt_backend *self, dt_session *s)
{
    dt_engine *e = self->impl;
    const dt_vendor *v = e->v;
    const dt_vendor_results *res = &v->results;
    pthread_mutex_lock(&e->lock);
    if (atomic_load(&e->released)) {
        dt_status st = released_error(e);
        pthread_mutex_unlock(&e->lock);
        return st;
    }
    atomic_store(&e->starting, 1);
    cancel_finalize(e);
    dt_status st = dt__engine_load(e);
    if (st != DT_OK) goto out;
    const dt_config *cfg = dt__sink_config(s);
    if (cfg->buffer_count == 0 || cfg->buffer_size < 1024) {
        st = dt__error(DT_ERR_INVALID_ARGUMENT,
                      "%s needs at least one activity buffer of at least 1024 bytes (buffer_count %" PRIu32
                      ", buffer_size %zu)",
                      v->backend->name, cfg->buffer_count, cfg->buffer_size);
        goto out;
    }
    /* the flight recorder's pool is its ring, bounded: it never grows */
    uint32_t buffers = cfg->flight_recorder_bytes ? dt__flight_pool_buffers(s) : cfg->buffer_count;
    if (dt__pool_slot_configure(&e->pool, buffers, cfg->buffer_size,
                               cfg->flight_recorder_bytes ? 0 : DT_POOL_GROW) != 0) {
        st = dt__error(DT_ERR_NO_MEMORY, "%s: cannot preallocate %" PRIu32 " activity buffers of %zu bytes",
                      v->backend->name, buffers, cfg->buffer_size);
        goto out;
    }
    st = dt__core_flight_begin(s, &e->pool, dt__engine_ring_decode, e);
    if (st != DT_OK) {
        if (!e->early) dt__pool_slot_release(&e->pool);
        goto out;
    }
    atomic_store(&e->orphaned, 0);
    e->retry_refused = e->retry_made = 0;
    if (resolve_names(e) != 0) {
        st = dt__error(DT_ERR_NO_MEMORY, "%s: out of memory for the table of API names", v->backend->name);
        dt__core_flight_free(s);
        if (!e->early) dt__pool_slot_release(&e->pool);
        goto out;
    }
    set_thread_ids(e, s);
    if (!any_armed(e)) set_attributes(e);
    latency_timestamps(e, s);
    int r;
    /* Subscribed before anything is enabled: the one call that tells that
       another profiler holds the vendor, and the API callbacks that link
       device work to devtrace's stack where the vendor's own cannot. */
    if (e->sym[DT_SYM_SUBSCRIBE]) {
        st = subscribe(e);
        if (st != DT_OK) goto fail;
        if (dt__engine_has_push((void *const *)e->sym))
            ;
        else if (v->caps & DT_VCAP_NO_API_ENTER_LINKS)
            dt__core_note(s, "external_ids", "the %s library has no external-correlation stack, and its API "
                            "callbacks carry no correlation id: device activity carries no External id",
                            v->backend->name);
        else if (!enable_domains(e))
            dt__core_note(s, "callbacks", "no API callback domain could be enabled: device activity carries no "
                            "External id");
    }
    /* Registered at every start: another client (Kineto) may have replaced
       the callbacks since. */
    r = register_buffers(e);
    if (r != res->success) {
        st = dt__engine_failure(e, e->specs[DT_SYM_REGISTER_CALLBACKS].name, r);
        goto fail;
    }
    fn_u32 flush_all = SYM(e, fn_u32, DT_SYM_FLUSH_ALL);
    /* Records of early-armed kinds made before this session are delivered
       now, while no session takes them. */
    if (e->early) flush_all(v->activity.flush_forced);
    /* Drops from before this session are not its losses (reading restarts
       the count). */
    if (e->sym[DT_SYM_DROPPED]) {
        size_t discard = 0;
        if (v->caps & DT_VCAP_DROPPED_WITH_CONTEXT) SYM(e, fn_dropped_ctx, DT_SYM_DROPPED)(NULL, 0, &discard);
        else SYM(e, fn_dropped, DT_SYM_DROPPED)(&discard);
    }
    pthread_mutex_lock(&e->devices_lock);
    for (uint32_t i = 0; i < DT_MAX_DEVICES; i++)
        if (e->devices[i].valid) dt__core_set_device(s, &e->devices[i]);
    pthread_mutex_unlock(&e->devices_lock);
    memset(e->counted, 0, sizeof e->counted);
    memset(e->graph_launches, 0, sizeof e->graph_launches);
    /* From here every completed buffer belongs to this session, before any
       kind is enabled, so that no record can fall between the two; and the
       program's external ids go to the vendor's stacks. */
    attach(e, s);
    dt__engine_external_gate(e, 1);
    int enabled = 0;
    int refused[DT_ENGINE_MAX_KINDS];
    uint8_t was_refused[DT_ENGINE_MAX_KINDS] = {0};
    for (size_t i = 0; i < v->records.kind_count; i++) {
        const dt_kind_spec *k = &v->records.kinds[i];
        if (e->armed[i]) { enabled++; continue; }
        if (k->capture && !(dt__sink_capture(s) & k->capture)) continue;
        r = arm_kind(e, i);
        if (r == res->success) { enabled++; continue; }
        if (k->kind == v->dump_kind && retry_at_context(e, DT_RETRY_DUMP, r)) continue;
        if (k->required) {
            char call[160];
            snprintf(call, sizeof call, "%s(%s)", e->specs[DT_SYM_ENABLE].name, k->what);
            st = dt__engine_failure(e, call, r);
            goto fail;
        }
        refused[i] = r;
        was_refused[i] = 1;
    }
    dt__engine_note_refused_kinds(e, s, refused, was_refused);
    if (enabled == 0) {
        st = dt__error(DT_ERR_VENDOR, "%s could enable no activity kind in %s", e->specs[DT_SYM_ENABLE].name,
                      e->lib.path);
        goto fail;
    }
    quiet_calls(e, s);
    if (v->activity.flush_period_ms && e->sym[DT_SYM_FLUSH_PERIOD] &&
        SYM(e, fn_u32, DT_SYM_FLUSH_PERIOD)(v->activity.flush_period_ms) == res->success)
        e->flush_period_set = 1;
    /* Only now: with "auto", a backend that failed to start leaves nothing
       in the session that another backend then records. */
    if (v->library.layout_note && !e->emulated) dt__core_note(s, "layouts", "%s", v->library.layout_note);
    if (v->clock_domain) dt__core_note(s, "vendor_clock", "%s", v->clock_domain);
    dt__engine_note_attributes(e, s);
    dt__symbols_note_missing(s, e->specs, DT_SYM_COUNT, e->sym);
    dt__engine_note_interface(e, s);
    dt__core_set_library(s, e->lib.path, e->version);
    dt__engine_note_other_copies(e, s);
    e->sessions++;
    st = DT_OK;
    goto out;

fail:
    dt__engine_external_gate(e, 0);
    end_context_retry(e, NULL);
    disarm(e, e->early);
    if (e->latency_on) SYM(e, fn_u8, DT_SYM_LATENCY_TIMESTAMPS)(0);
    e->latency_on = 0;
    if (e->session == s) {
        attach(e, NULL);
        /* what the kinds armed for a moment recorded is not the session's */
        SYM(e, fn_u32, DT_SYM_FLUSH_ALL)(v->activity.flush_forced);
    }
    unsubscribe(e);
    dt__core_flight_free(s);
    if (!e->early) dt__pool_slot_release(&e->pool);
out:
    atomic_store(&e->starting, 0);
    pthread_mutex_unlock(&e->lock);
    return st;
}

dt_status dt__engine_flush(const dt_backend *self, dt_session *s)
{
    dt_engine *e = self->impl;
    if (!e->loaded || atomic_load(&e->released)) return DT_OK;
    /* a flight recorder's dump describes the devices as the stop does */
    if (s && dt__sink_has_ring(s)) describe_devices(e, s);
    /* Forced: a plain flush leaves partly filled buffers with the vendor.
       The completion callback may run on this thread: no lock is held. */
    int r = SYM(e, fn_u32, DT_SYM_FLUSH_ALL)(e->v->activity.flush_forced);
    return r == e->v->results.success ? DT_OK : dt__engine_failure(e, e->specs[DT_SYM_FLUSH_ALL].name, r);
}

/* Take everything back from the vendor for session s: disarm every kind
   (the cheap ones too: a program that stopped recording should not go on
   paying for them), deliver what the vendor still holds, count its drops,
   let the subscriber go. e->lock held; the flush is made without it (the
   completion callback may run on this thread and takes decode_lock).
   Returns the flush's result. */
static int take_back(dt_engine *e, dt_session *s, int keep_subscriber)
{
    end_context_retry(e, s);
    disarm(e, 0);
    if (e->latency_on) SYM(e, fn_u8, DT_SYM_LATENCY_TIMESTAMPS)(0);
    e->latency_on = 0;
    e->early = 0;
    if (e->v->caps & DT_VCAP_UNSUBSCRIBE_FIRST) unsubscribe(e);
    pthread_mutex_unlock(&e->lock);
    int r = SYM(e, fn_u32, DT_SYM_FLUSH_ALL)(e->v->activity.flush_forced);
    size_t dropped = dt__engine_read_drops(e, NULL, 0);
    pthread_mutex_lock(&e->lock);
    dt__engine_charge_drops(e, s, dropped);
    if (e->flush_period_set) SYM(e, fn_u32, DT_SYM_FLUSH_PERIOD)(0);
    e->flush_period_set = 0;
    if (!keep_subscriber) unsubscribe(e);
    return r;
}

/* Whether the library is to be detached after this session: where the
   library allows it, and unless the process is ending anyway. */
static int finalize_wanted(const dt_engine *e)
{
    const dt_vendor *v = e->v;
    return v->activity.finalize_from && e->api_version >= v->activity.finalize_from && e->sym[DT_SYM_FINALIZE] &&
           !atomic_load(&dt__g_exiting);
}

/* Detach the library now: it then costs the program nothing until the next
   session, which arms it anew. Only from an API exit callback (see
   arrange_finalize). e->lock held. */
static void finalize_now(dt_engine *e)
{
    const dt_vendor *v = e->v;
    if (SYM(e, int (*)(void), DT_SYM_FINALIZE)() != v->results.success) return;
    /* the subscriber, its domains, the thread-id type and the attributes
       went with it */
    e->subscribed = 0;
    atomic_store(&e->domains_on, 0);
    e->thread_type_set = 0;
    e->attributes_set = 0;
    dt__log("%s: %s after the session, from an API exit callback", v->backend->name, e->specs[DT_SYM_FINALIZE].name);
}

/* devtrace's own synchronisation of the device, on this thread (see
   arrange_finalize) */
static _Thread_local int t_own_sync;

/* CUPTI's header allows its finalize only from the exit callback of a
   runtime or driver API call, or once the device is synchronised, which
   devtrace cannot know (a finalize with work in flight crashed Kineto):
   the subscriber stays with its API domains on, and the exit callback of a
   later call detaches the library (finalize_at_exit says which): devtrace's
   own synchronisation of the device where the vendor's driver is loaded,
   otherwise the program's next synchronisation (until then another client
   cannot subscribe). e->lock held, after take_back kept the subscriber and
   dt__engine_stop closed the external-correlation gate. */
static void arrange_finalize(dt_engine *e)
{
    if (!e->subscribed) return;
    if (!finalize_wanted(e) || !enable_domains(e)) {
        unsubscribe(e);
        return;
    }
    atomic_store(&e->finalize_pending, 1);
    /* its exit callback runs on this thread, which holds the lock */
    if (e->v->synchronize && !e->emulated) {
        t_own_sync = 1;
        e->v->synchronize();
        t_own_sync = 0;
    }
}

/* A session or an early arming comes before the exit callback did: the
   library stays attached, the waiting subscriber goes. e->lock held. */
static void cancel_finalize(dt_engine *e)
{
    if (atomic_exchange(&e->finalize_pending, 0)) unsubscribe(e);
}


/* Whether this API exit may detach the library: devtrace's own
   synchronisation, or a synchronising call of the program's that succeeded
   (the vendor's list: a thread capturing a graph cannot synchronise, so the
   finalize never lands inside a capture, nor on a call that failed), and
   no external-correlation call of another thread still inside the library
   (the gate is closed: none can start). */
static int finalize_point(dt_engine *e, uint32_t domain, uint32_t cbid, const uint8_t *d)
{
    const dt_vendor *v = e->v;
    if (!t_own_sync) {
        int driver = domain == v->callbacks.domain_driver;
        const dt_vendor_api_ids *ids = &v->api_ids;
        if (!(driver ? dt__engine_listed(ids->sync_driver, ids->sync_driver_count, cbid)
                     : dt__engine_listed(ids->sync_runtime, ids->sync_runtime_count, cbid)))
            return 0;
        void *result = NULL;
        int32_t r = -1;
        memcpy(&result, d + v->callbacks.result_offset, sizeof result);
        if (result) memcpy(&r, result, sizeof r);
        if (r != 0) return 0;
    }
    return dt__engine_external_in_flight(e) == 0;
}

/* On an API exit callback while a finalize waits. A start or stop holding
   the lock on another thread leaves it to a later exit. */
static void finalize_at_exit(dt_engine *e, uint32_t domain, uint32_t cbid, const uint8_t *d)
{
    if (!finalize_point(e, domain, cbid, d) || pthread_mutex_trylock(&e->lock) != 0) return;
    if (atomic_exchange(&e->finalize_pending, 0)) {
        if (atomic_load(&dt__g_exiting)) unsubscribe(e);
        else finalize_now(e);
    }
    pthread_mutex_unlock(&e->lock);
}

dt_status dt__engine_stop(const dt_backend *self, dt_session *s)
{
    dt_engine *e = self->impl;
    const dt_vendor *v = e->v;
    pthread_mutex_lock(&e->lock);
    /* From here no external-correlation call of another thread reaches the
       vendor; those in flight are waited for before it is detached. */
    dt__engine_external_gate(e, 0);
    int released = atomic_load(&e->released);
    /* Records made before the kinds were disarmed are still in the vendor's
       buffers: they are delivered to this session. */
    int r = released ? v->results.success : take_back(e, s, finalize_wanted(e));
    /* the flight recorder's ring, now that the vendor has delivered all */
    dt__core_flight_end(s);
    if (!released) describe_devices(e, s);
    dt__engine_note_other_copies(e, s); /* also those loaded while it recorded */
    dt__engine_note_graph_launches(e, s);
    dt__engine_note_counted(e, s);
    pthread_mutex_lock(&e->decode_lock);
    e->session = NULL;
    pthread_mutex_unlock(&e->decode_lock);
    uint64_t refused = dt__pool_slot_refused(&e->pool);
    if (refused) {
        dt_pool_stats shape;
        dt__pool_slot_shape(&e->pool, &shape);
        dt__core_note(s, "buffer_pool",
                        "%" PRIu64 " buffer requests found the pool of %" PRIu32 " buffers of %zu bytes empty "
                        "(grown to %" PRIu32 " for %" PRIu32 " threads); the vendor dropped what it could not "
                        "store (counted as no_buffer): raise buffer_count or buffer_size",
                        refused, dt__sink_config(s)->buffer_count, dt__sink_config(s)->buffer_size, shape.made,
                        shape.threads);
    }
    uint64_t orphaned = atomic_load(&e->orphaned);
    if (orphaned)
        dt__core_note(s, "orphaned_buffers", "%" PRIu64 " buffers completed while no session took them",
                        orphaned);
    if (!released) arrange_finalize(e);
    uint32_t held = dt__pool_slot_release(&e->pool);
    if (held)
        dt__core_note(s, "buffer_pool_held",
                        "the vendor still held %" PRIu32 " buffers after the final flush; their memory is kept", held);
    pthread_mutex_unlock(&e->lock);
    return r == v->results.success ? DT_OK : dt__engine_failure(e, e->specs[DT_SYM_FLUSH_ALL].name, r);
}

dt_status dt__engine_release(const dt_backend *self, dt_session *s, const char *to)
{
    dt_engine *e = self->impl;
    pthread_mutex_lock(&e->lock);
    if (atomic_load(&e->released)) {
        pthread_mutex_unlock(&e->lock);
        return DT_OK;
    }
    if (!e->loaded || e->session != s) {
        /* given before devtrace attached (it never will) */
        snprintf(e->released_to, sizeof e->released_to, "%s", to && to[0] ? to : "another profiler");
        atomic_store(&e->released, 1);
        pthread_mutex_unlock(&e->lock);
        dt__core_note(s, "handover", "%s was given to %s before devtrace attached to it: %s's own trace holds "
                        "the device activity, this one none", e->v->backend->vendor, e->released_to,
                        e->released_to);
        return DT_OK;
    }
    dt__engine_external_gate(e, 0);
    int r = take_back(e, s, 0);
    snprintf(e->released_to, sizeof e->released_to, "%s", to && to[0] ? to : "another profiler");
    atomic_store(&e->released, 1);
    pthread_mutex_unlock(&e->lock);
    dt__core_note(s, "handover", "%s was given to %s at %" PRIu64 " ns (CLOCK_REALTIME): this trace holds the "
                    "device activity up to then, %s's own trace what came after",
                    e->v->backend->vendor, e->released_to, dt__realtime_ns(), e->released_to);
    if (r != e->v->results.success) dt__core_note(s, "handover_flush", "%s returned %s (%d) when letting go",
                                                    e->specs[DT_SYM_FLUSH_ALL].name, dt__engine_result_text(e, r), r);
    return DT_OK;
}

int dt__engine_clock(const dt_backend *self, uint64_t *ns)
{
    const dt_engine *e = self->impl;
    fn_u64p get = SYM(e, fn_u64p, DT_SYM_TIMESTAMP);
    if (get && (e->v->caps & DT_VCAP_TIMESTAMP_RETURNED)) {
        *ns = ((uint64_t (*)(void))(void *)get)();
        return 0;
    }
    if (!get && (e->v->caps & DT_VCAP_CLOCK_REALTIME)) {
        *ns = dt__realtime_ns();
        return 0;
    }
    return get && get(ns) == e->v->results.success ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* External correlation, when the vendor's stack refuses (the stack's   */
/* calls are engine_external.c's)                                       */
/* ------------------------------------------------------------------ */
dt_status dt__engine_attribute_by_api_enter(const dt_backend *self)
{
    dt_engine *e = self->impl;
    if (e->v->caps & DT_VCAP_NO_API_ENTER_LINKS) return DT_ERR_BACKEND_UNAVAILABLE;
    if (atomic_load_explicit(&e->domains_on, memory_order_relaxed)) return DT_OK;
    pthread_mutex_lock(&e->lock);
    int ok = enable_domains(e);
    pthread_mutex_unlock(&e->lock);
    if (ok) dt__log("%s: the vendor's external-correlation stack refused an id; attributing through API callbacks",
                   e->v->backend->name);
    return ok ? DT_OK : DT_ERR_BACKEND_UNAVAILABLE;
}

/* The callbacks of a vendor that cannot record in this forked child need
   not be on in the parent: the fork turns them on for the child alone. */
void dt__engine_fork_prepare(const dt_backend *self)
{
    dt_engine *e = self->impl;
    pthread_mutex_lock(&e->lock);
    if (!atomic_load(&e->released) && !e->domains_on && !(e->v->caps & DT_VCAP_NO_API_ENTER_LINKS))
        e->fork_domains = enable_domains(e);
    pthread_mutex_unlock(&e->lock);
}

void dt__engine_fork_parent(const dt_backend *self)
{
    dt_engine *e = self->impl;
    pthread_mutex_lock(&e->lock);
    fn_enable_domain one = SYM(e, fn_enable_domain, DT_SYM_ENABLE_DOMAIN);
    fn_enable_all all = SYM(e, fn_enable_all, DT_SYM_ENABLE_ALL_DOMAINS);
    if (e->fork_domains && (one || all)) {
        if (one) {
            one(0, e->subscriber, e->v->callbacks.domain_runtime);
            one(0, e->subscriber, e->v->callbacks.domain_driver);
        } else {
            all(0, e->subscriber);
        }
        atomic_store(&e->domains_on, 0);
    }
    e->fork_domains = 0;
    pthread_mutex_unlock(&e->lock);
}

/* In a forked child whose vendor cannot record: each call that launches
   device work, counted once as lost (the outermost call: a runtime launch
   wraps its driver's). */
static _Thread_local uint32_t t_forked_depth;

static void forked_call(const dt_engine *e, uint32_t domain, uint32_t cbid, uint32_t site)
{
    if (site != e->v->callbacks.api_enter) {
        if (t_forked_depth) t_forked_depth--;
        return;
    }
    if (t_forked_depth++ == 0 && dt__decoder_is_launch(&e->decoder, domain == e->v->callbacks.domain_driver, cbid))
        dt__core_fork_launch_lost();
}

void dt__engine_api_callback(void *userdata, uint32_t domain, uint32_t cbid, const void *cbdata)
{
    dt_engine *e = userdata;
    const dt_vendor *v = e->v;
    if (v->callbacks.context_created && domain == v->callbacks.domain_resource) {
        if (cbid == v->callbacks.context_created && atomic_load_explicit(&e->retry_pending, memory_order_relaxed))
            context_created(e);
        return;
    }
    /* Other domains pass other callback-data types. */
    if ((domain != v->callbacks.domain_runtime && domain != v->callbacks.domain_driver) || !cbdata) return;
    const uint8_t *d = cbdata;
    uint32_t site, correlation;
    memcpy(&site, d + v->callbacks.site_offset, sizeof site);
    if (__builtin_expect(dt__g_fork_unusable, 0)) {
        forked_call(e, domain, cbid, site);
        return;
    }
    if (site != v->callbacks.api_enter) {
        if (atomic_load_explicit(&e->finalize_pending, memory_order_relaxed)) finalize_at_exit(e, domain, cbid, d);
        return;
    }
    memcpy(&correlation, d + v->callbacks.correlation_offset, sizeof correlation);
    dt__corr_link_current(correlation);
}

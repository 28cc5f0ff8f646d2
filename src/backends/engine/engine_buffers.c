/*
 * The engine's activity buffers: handed to the vendor from the pool,
 * taken back completed (decoded into the session attached, or queued for
 * the flight recorder's ring), and the vendor's dropped-record count
 * charged to the session. The vendor calls both callbacks on any thread,
 * including inside a flush the engine makes; no vendor call is made here
 * while decode_lock is held (see engine.c).
 */
#include "backends/engine/engine.h"

typedef int (*fn_dropped_ctx)(void *context, uint32_t stream, size_t *dropped);
typedef int (*fn_dropped)(size_t *dropped);

#define SYM DT_ENGINE_SYM

/* The vendor's dropped-record count (which restarts at every read). A
   vendor call: made with no devtrace lock held that a vendor callback takes
   (CUPTI's query takes the library's internal lock, under which it also
   calls the buffer callbacks: Kineto deadlocked holding its own lock here). */
size_t dt__engine_read_drops(dt_engine *e, void *context, uint32_t stream)
{
    if (!e->sym[DT_SYM_DROPPED] || atomic_load(&e->released)) return 0;
    size_t n = 0;
    int r = e->v->caps & DT_VCAP_DROPPED_WITH_CONTEXT
                ? SYM(e, fn_dropped_ctx, DT_SYM_DROPPED)(context, stream, &n)
                : SYM(e, fn_dropped, DT_SYM_DROPPED)(&n);
    return r == e->v->results.success ? n : 0;
}

/* Charge n dropped records to s. Records a vendor drops for want of a
   buffer follow a request the pool refused, so the pool is asked after the
   vendor: once the pool has refused a request in this session, drops are
   charged to no_buffer, otherwise to vendor_dropped. */
void dt__engine_charge_drops(dt_engine *e, dt_session *s, size_t n)
{
    if (n) dt__loss_add(s, dt__pool_slot_refused(&e->pool) ? DT_LOSS_NO_BUFFER : DT_LOSS_VENDOR_DROPPED, n);
}

/* The same for the session attached as `generation`, unless another has
   been attached (or none is) since. */
static void charge_drops_to(dt_engine *e, uint64_t generation, size_t n)
{
    if (!n) return;
    pthread_mutex_lock(&e->decode_lock);
    if (e->session && e->attached == generation) dt__engine_charge_drops(e, e->session, n);
    pthread_mutex_unlock(&e->decode_lock);
}

void dt__engine_request(dt_engine *e, uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = dt__pool_slot_get(&e->pool, size);
    if (max_records) *max_records = 0;
}

static dt_vendor_next_fn next_record(const dt_engine *e)
{
    return e->v->caps & DT_VCAP_OWN_STRIDES ? NULL : (dt_vendor_next_fn)e->sym[DT_SYM_NEXT_RECORD];
}

/* A buffer the flight recorder's ring queued, decoded into `into`. */
void dt__engine_ring_decode(void *ctx, dt_session *into, uint8_t *buf, size_t valid)
{
    dt_engine *e = ctx;
    dt__decoder_run(&e->decoder, into, buf, valid, next_record(e));
}

void dt__engine_complete(dt_engine *e, void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    dt_vendor_next_fn next = next_record(e);
    pthread_mutex_lock(&e->decode_lock);
    dt_session *s = e->session;
    uint64_t generation = e->attached;
    /* the flight recorder: queued undecoded, lent back when the pool runs dry */
    if (s && buffer && valid && valid <= size && dt__sink_ring_push(s, buffer, valid)) {
        pthread_mutex_unlock(&e->decode_lock);
        charge_drops_to(e, generation, dt__engine_read_drops(e, context, stream));
        return;
    }
    if (buffer && valid && valid <= size) {
        if (s) dt__decoder_run(&e->decoder, s, buffer, valid, next);
        else if (e->v->caps & DT_VCAP_DEVICE_RECORDS) dt__decoder_scan_devices(&e->decoder, buffer, valid, next);
        else atomic_fetch_add_explicit(&e->orphaned, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&e->decode_lock);
    dt__pool_slot_put(&e->pool, buffer);
    if (s) charge_drops_to(e, generation, dt__engine_read_drops(e, context, stream));
}

/*
 * The client's buffers and their delivery: lanes filled back to back,
 * produced device records held until their work finishes (or, late, until
 * a later buffer), completed buffers queued and delivered outside the state
 * lock, the worker thread, flushes and the record iterator.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buffers.h"
#include "clock.h"
#include "lifecycle.h"
#include "null_client.h"
#include "records.h"

CORE_TLS int core_thread_lane; /* 0: none yet */
_Atomic int core_next_lane;

int core_vec_push(rec_vec *v, const pending_rec *r)
{
    if (emu_core_grow_for_one((void **)&v->v, &v->cap, v->n, sizeof *v->v, 256) != 0)
        return -1;
    v->v[v->n++] = *r;
    return 0;
}

static void signal_worker_locked(void)
{
    if (!core_state.worker_started && core_state.request && !core_state.worker_stop)
        core_start_worker_locked(); /* a forked child starts its own */
    if (core_state.worker_started)
        pthread_cond_signal(&core_state.worker_cond);
}

static int push_done_locked(uint8_t *buf, size_t size, size_t valid)
{
    if (emu_core_grow_for_one((void **)&core_state.done, &core_state.done_cap, core_state.done_n,
                          sizeof *core_state.done, 16) != 0)
        return -1;
    core_state.done[core_state.done_n++] = (done_buf){ buf, size, valid };
    return 0;
}

static void complete_lane_locked(int ln)
{
    lane *L = &core_state.lanes[ln];
    if (!L->buf)
        return;
    if (emu_vendor_impl.take_completed && core_state.complete != core_null_client_complete) {
        emu_vendor_impl.take_completed(L->buf, L->size, L->used);
        core_state.stats.buffers_completed++;
    } else if (push_done_locked(L->buf, L->size, L->used) != 0) {
        /* Cannot queue: the buffer's records are lost, and counted. */
        core_state.dropped += L->records;
        core_state.stats.dropped_no_buffer += L->records;
        core_state.stats.dropped_reported += L->records;
    }
    L->buf = NULL;
    L->size = L->used = L->records = L->tail = 0;
    L->completions++;
    core_state.completions++;
    signal_worker_locked();
}

/* Every lane with records in it (flushes, the periodic completion). */
static void complete_all_locked(void)
{
    for (int ln = 0; ln < EMU_LANES; ln++)
        if (core_state.lanes[ln].buf && core_state.lanes[ln].used > 0)
            complete_lane_locked(ln);
}

static void count_no_buffer_locked(const emu_activity *a, unsigned flags)
{
    core_state.dropped++;
    core_state.stats.dropped_no_buffer++;
    core_state.stats.dropped_reported++;
    /* records added by a fault are counted as faulted, not by kind */
    if (a->kind != EMU_REC_UNKNOWN && !(flags & PEND_MALFORMED))
        core_state.stats.dropped_no_buffer_kind[core_stat_kind(a->kind)]++;
}

/* Make room for `need` bytes in a lane; 0 on success, -1 if the client gave
   no buffer. */
static int reserve_locked(int ln, size_t need)
{
    lane *L = &core_state.lanes[ln];
    if (L->buf && L->used + L->tail + need > L->size)
        complete_lane_locked(ln);
    if (L->buf)
        return 0;
    if (!core_state.request || !core_state.complete)
        return -1;
    uint8_t *b = NULL;
    size_t size = 0, max_records = 0;
    core_state.request(&b, &size, &max_records);
    if (!b)
        return -1;
    if (((uintptr_t)b & 7u) != 0 || size < need) {
        /* Unusable: hand it back empty so the client can reuse it. */
        (void)push_done_locked(b, size, 0);
        core_state.completions++;
        signal_worker_locked();
        return -1;
    }
    core_state.stats.buffers_requested++;
    if (emu_vendor_impl.buffer_received)
        emu_vendor_impl.buffer_received(size);
    L->buf = b;
    L->size = size;
    L->used = 0;
    L->records = 0;
    L->tail = 0;
    return 0;
}

/* Write one record into a lane's buffer, or count it as dropped. */
void core_write_record_locked(const emu_activity *a, unsigned flags, int ln)
{
    size_t size = emu_vendor_impl.activity_size ? emu_vendor_impl.activity_size(a)
                                                : emu_vendor_impl.record_size(a->kind);
    if (size == 0)
        return;
    size_t tail = emu_vendor_impl.tail_size ? emu_vendor_impl.tail_size(a) : 0;
    if (reserve_locked(ln, size + tail) != 0) {
        count_no_buffer_locked(a, flags);
        return;
    }
    lane *L = &core_state.lanes[ln];
    uint8_t *dst = L->buf + L->used;
    memset(dst, 0, size);
    emu_vendor_impl.write_record(dst, a);
    if (tail) {
        L->tail += tail;
        emu_vendor_impl.write_tail(dst, L->buf + L->size - L->tail, a);
    }
    L->records++;
    if (flags & PEND_MALFORMED) {
        /* Keep the record's bytes but end the valid data inside it. */
        L->used += EMU_TRUNCATED_BYTES;
        complete_lane_locked(ln);
    } else if (a->kind == EMU_REC_UNKNOWN) {
        /* A client cannot step over a kind it does not know, so nothing
           may follow it in this buffer. */
        L->used += size;
        complete_lane_locked(ln);
    } else {
        L->used += size;
    }
}

/* Write produced records that may be written now: finished device work
   (all of it when forced) and late records whose buffer has completed. */
void core_write_ready_locked(int forced, uint64_t now)
{
    for (;;) {
        size_t w = 0;
        int wrote = 0;
        for (size_t i = 0; i < core_state.pending.n; i++) {
            pending_rec *p = &core_state.pending.v[i];
            if (!forced && p->ready_at > now) {
                core_state.pending.v[w++] = *p;
                continue;
            }
            if (p->flags & PEND_LATE) {
                pending_rec h = *p;
                h.flags &= ~(unsigned)PEND_LATE;
                /* "later" than the buffer being filled; with none being
                   filled, any buffer is later */
                const lane *L = &core_state.lanes[p->lane];
                h.release_at = L->completions + (L->buf && L->used ? 1 : 0);
                if (core_vec_push(&core_state.held, &h) == 0)
                    continue;
                /* no memory to hold it: write it now rather than lose it */
            }
            if (forced && p->ready_at > now && !(p->flags & PEND_TIMES_FAULTED)) {
                /* Still running: handed back as it stands. CUDA 13's CUPTI
                   gives such a kernel a start and no end. */
                core_state.stats.records_unfinished[core_stat_kind(p->a.kind)]++;
                if (emu_vendor_impl.unfinished_without_end)
                    p->a.end = 0;
            }
            core_write_record_locked(&p->a, p->flags, p->lane);
            wrote = 1;
        }
        core_state.pending.n = w;
        w = 0;
        for (size_t i = 0; i < core_state.held.n; i++) {
            pending_rec *p = &core_state.held.v[i];
            if (core_state.lanes[p->lane].completions < p->release_at) {
                core_state.held.v[w++] = *p;
                continue;
            }
            core_write_record_locked(&p->a, p->flags, p->lane);
            wrote = 1;
        }
        core_state.held.n = w;
        if (!wrote)
            return;
    }
}

/* The thread delivering buffers (deliver_lock held by it). */
static CORE_TLS int t_delivering;

/* Deliver completed buffers, serialized, outside the state lock;
   deliver_lock held. */
static void deliver_done_held(int from_worker)
{
    int outer = t_delivering;
    t_delivering = 1;
    for (;;) {
        pthread_mutex_lock(&core_state.lock);
        if (core_state.done_n == 0) {
            pthread_mutex_unlock(&core_state.lock);
            break;
        }
        done_buf d = core_state.done[0];
        memmove(core_state.done, core_state.done + 1, (core_state.done_n - 1) * sizeof(*core_state.done));
        core_state.done_n--;
        emu_generic_fn fn = core_state.complete;
        core_state.stats.buffers_completed++;
        if (from_worker)
            core_state.stats.buffers_completed_worker++;
        pthread_mutex_unlock(&core_state.lock);
        if (fn == core_null_client_complete)
            core_null_client_complete_buffer(d.buf, d.valid);
        else if (fn)
            emu_vendor_impl.complete_buffer(fn, d.buf, d.size, d.valid);
    }
    t_delivering = outer;
}

static void deliver_done(int from_worker)
{
    pthread_mutex_lock(&core_state.deliver_lock);
    deliver_done_held(from_worker);
    pthread_mutex_unlock(&core_state.deliver_lock);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&core_state.lock);
    while (!core_state.worker_stop) {
        int busy = core_state.pending.n > 0 || core_state.held.n > 0 || core_state.done_n > 0;
        uint64_t wait_ns = busy ? 1000000ull : 0;
        if (core_state.flush_period_ms) {
            uint64_t p = (uint64_t)core_state.flush_period_ms * 1000000ull;
            if (!wait_ns || p < wait_ns)
                wait_ns = p;
        }
        if (core_state.done_n == 0) {
            if (wait_ns) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + wait_ns;
                ts.tv_sec = (time_t)(t / 1000000000ull);
                ts.tv_nsec = (long)(t % 1000000000ull);
                pthread_cond_timedwait(&core_state.worker_cond, &core_state.lock, &ts);
            } else {
                pthread_cond_wait(&core_state.worker_cond, &core_state.lock);
            }
        }
        if (core_state.worker_stop)
            break;
        uint64_t rt = core_realtime_ns();
        core_write_ready_locked(0, core_device_from_realtime(rt));
        if (core_state.flush_period_ms &&
            rt - core_state.last_periodic_rt >= (uint64_t)core_state.flush_period_ms * 1000000ull) {
            core_state.last_periodic_rt = rt;
            complete_all_locked();
        }
        core_update_pending_stat_locked();
        if (core_state.done_n > 0) {
            pthread_mutex_unlock(&core_state.lock);
            deliver_done(1);
            pthread_mutex_lock(&core_state.lock);
        }
    }
    pthread_mutex_unlock(&core_state.lock);
    return NULL;
}

void core_start_worker_locked(void)
{
    if (core_state.worker_started)
        return;
    core_state.worker_stop = 0;
    core_state.last_periodic_rt = core_realtime_ns();
    if (pthread_create(&core_state.worker, NULL, worker_main, NULL) == 0)
        core_state.worker_started = 1;
}

__attribute__((destructor)) static void emu_core_fini(void)
{
    pthread_mutex_lock(&core_state.lock);
    int started = core_state.worker_started;
    core_state.worker_stop = 1;
    pthread_cond_broadcast(&core_state.worker_cond);
    pthread_mutex_unlock(&core_state.lock);
    if (started) {
        pthread_join(core_state.worker, NULL);
        pthread_mutex_lock(&core_state.lock);
        core_state.worker_started = 0;
        pthread_mutex_unlock(&core_state.lock);
    }
}

emu_status emu_core_register_buffers(emu_request_fn request, emu_generic_fn complete)
{
    emu_init();
    if (!request || !complete)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&core_state.lock);
    core_state.request = request;
    core_state.complete = complete;
    core_start_worker_locked();
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

emu_status emu_core_flush_all(int forced)
{
    emu_init();
    if (atomic_load(&core_torn_down))
        return EMU_ST_INVALID;
    /* What the flush completes is delivered on the caller's thread, as
       vendors call the completion callback from their FlushAll: the worker
       waits for the delivery lock meanwhile. */
    pthread_mutex_lock(&core_state.deliver_lock);
    pthread_mutex_lock(&core_state.lock);
    uint64_t now = core_device_now();
    core_write_ready_locked(forced, now);
    complete_all_locked();
    /* late records are writable now that the buffers above have completed */
    if (core_state.held.n) {
        core_write_ready_locked(forced, now);
        complete_all_locked();
    }
    core_update_pending_stat_locked();
    pthread_mutex_unlock(&core_state.lock);
    deliver_done_held(0);
    pthread_mutex_unlock(&core_state.deliver_lock);
    return EMU_ST_OK;
}

void emu_core_buffer_waited(void)
{
    core_state.stats.buffer_waits++;
}

emu_status emu_core_flush_period(uint32_t ms)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    if (!core_state.flush_period_fixed)
        core_state.flush_period_ms = ms;
    core_state.last_periodic_rt = core_realtime_ns();
    signal_worker_locked();
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

static int contended_queries(void)
{
    const char *v = getenv("DEVTRACE_EMU_DROPPED_QUERY");
    return v && strcmp(v, "contended") == 0;
}

/* DEVTRACE_EMU_DROPPED_QUERY=contended: a buffer completion in progress on
   the worker as the query comes (an empty buffer of the client's handed
   back), waited for until it is inside the client's callback or done. */
static void complete_one_on_worker(void)
{
    pthread_mutex_lock(&core_state.lock);
    uint8_t *b = NULL;
    size_t size = 0, max_records = 0;
    int ok = core_state.request && core_state.complete && core_state.worker_started;
    if (ok)
        core_state.request(&b, &size, &max_records);
    if (ok && b && push_done_locked(b, size, 0) == 0) {
        core_state.completions++;
        signal_worker_locked();
    } else {
        ok = 0;
    }
    pthread_mutex_unlock(&core_state.lock);
    for (int i = 0; ok && i < 2000; i++) {
        pthread_mutex_lock(&core_state.lock);
        int queued = core_state.done_n > 0;
        pthread_mutex_unlock(&core_state.lock);
        if (!queued)
            break; /* taken by the worker: inside the callback, or done */
        struct timespec us = {0, 100000};
        nanosleep(&us, NULL);
    }
}

/* The dropped-record count, read as CUPTI reads it: under the lock the
   library holds while it calls the buffer callbacks (the delivering thread
   holds it already). A caller holding a lock that the completion callback
   in progress waits for would deadlock the real library: after 1 s the
   query goes on without the lock, and the stall is counted. */
size_t emu_core_take_dropped(void)
{
    emu_init();
    int locked = 0;
    if (!t_delivering) {
        if (contended_queries())
            complete_one_on_worker();
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 1;
        locked = pthread_mutex_timedlock(&core_state.deliver_lock, &deadline) == 0;
    }
    pthread_mutex_lock(&core_state.lock);
    if (!t_delivering && !locked)
        core_state.stats.lock_order_stalls++;
    size_t n = core_state.dropped;
    core_state.dropped = 0;
    pthread_mutex_unlock(&core_state.lock);
    if (locked)
        pthread_mutex_unlock(&core_state.deliver_lock);
    return n;
}

/* The size of the record at rec, of which avail bytes are valid. Stepping
   past a record and accepting the next one ask the same question: whether
   its kind is known and it fits. */
static emu_status measure_record(const uint8_t *rec, size_t avail, size_t *size)
{
    if (avail < 4)
        return EMU_ST_TRUNCATED;
    emu_rec_kind k = emu_vendor_impl.record_kind(rec, avail);
    size_t sz = k == EMU_REC_UNKNOWN ? 0
                : emu_vendor_impl.size_at ? emu_vendor_impl.size_at(rec, avail)
                                          : emu_vendor_impl.record_size(k);
    if (sz == 0)
        return EMU_ST_UNKNOWN_KIND;
    if (sz > avail)
        return EMU_ST_TRUNCATED;
    *size = sz;
    return EMU_ST_OK;
}

emu_status emu_core_next_record(uint8_t *buffer, size_t valid_size, uint8_t **rec)
{
    if (!buffer || !rec)
        return EMU_ST_INVALID;
    size_t off, sz;
    if (*rec == NULL) {
        off = 0;
    } else {
        if (*rec < buffer || *rec >= buffer + valid_size)
            return EMU_ST_INVALID;
        size_t cur = (size_t)(*rec - buffer);
        emu_status st = measure_record(*rec, valid_size - cur, &sz);
        if (st != EMU_ST_OK)
            return st;
        off = cur + sz;
    }
    if (off >= valid_size)
        return EMU_ST_END;
    *rec = buffer + off;
    return measure_record(*rec, valid_size - off, &sz);
}

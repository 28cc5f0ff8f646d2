/*
 * The vendor-neutral emulator core: an emulated device (clock, devices,
 * streams), the client's activity buffers, the subscriber, fault injection,
 * statistics, and the emu_* runtime API that workloads call.
 *
 * Locking: one state mutex guards everything below except the clock (atomics,
 * read on every call) and buffer delivery, which is serialized by its own
 * mutex so that FlushAll can wait for a delivery the worker has in flight.
 * Client callbacks for API calls run without any lock held; the buffer
 * request callback runs with the state lock held (a client must not call
 * back into the emulator from it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu_vendor.h"

#define EMU_LONG_DURATION_NS (3601ull * 1000000000ull)
#define EMU_TRUNCATED_BYTES 16
#define EMU_EXT_KINDS 8
#define EMU_EXT_DEPTH 32
#define EMU_API_FILTER_IDS 1024

enum { PEND_LATE = 1u << 0, PEND_MALFORMED = 1u << 1, PEND_TIMES_FAULTED = 1u << 2 };

typedef struct pending_rec {
    emu_activity a;
    uint64_t ready_at;     /* device time from which it may be written */
    uint64_t release_at;   /* held records: writable once its lane's completions reach it */
    unsigned flags;
    int lane;              /* the buffer lane of the thread that produced it */
} pending_rec;

/* A buffer being filled. One lane for all threads; with per-thread buffers
   (CUDA 13) one per producing thread, lane 0 left unused. */
#define EMU_LANES 256
typedef struct lane {
    uint8_t *buf;
    size_t size, used, records;
    size_t tail;           /* bytes records keep at the buffer's end (tail_size) */
    uint64_t completions;  /* buffers of this lane completed */
} lane;

typedef struct rec_vec {
    pending_rec *v;
    size_t n, cap;
} rec_vec;

typedef struct done_buf {
    uint8_t *buf;
    size_t size, valid;
} done_buf;

typedef struct name_set {
    char **slots;
    size_t mask, count;
} name_set;

static struct emu_state {
    pthread_mutex_t lock;
    pthread_mutex_t deliver_lock;
    pthread_cond_t worker_cond;
    pthread_t worker;
    int worker_started, worker_stop;

    _Atomic int64_t clock_offset;
    _Atomic double clock_scale;       /* 1 + drift_ppm * 1e-6 */

    int device_count;
    uint64_t ready[EMU_MAX_DEVICES][EMU_MAX_STREAMS];
    int64_t grid_id[EMU_MAX_DEVICES];

    int enabled[EMU_REC_COUNT];
    emu_request_fn request;
    emu_generic_fn complete;

    lane lanes[EMU_LANES];
    uint64_t completions;

    done_buf *done;
    size_t done_n, done_cap;

    rec_vec pending;   /* produced device records, written once finished */
    rec_vec held;      /* late records waiting for a later buffer */

    int subscribed;
    emu_generic_fn cb;
    void *cb_userdata;
    int domain_on[EMU_DOMAIN_COUNT];

    size_t dropped;
    uint64_t fault_left[EMU_FAULT_COUNT];
    emu_stats stats;

    uint32_t flush_period_ms;
    int flush_period_fixed; /* the client's requests leave flush_period_ms as it is */
    uint64_t last_periodic_rt;
    emu_thread_id_type tid_type;
    name_set names;

    /* live allocations of emu_malloc */
    struct live_block { uint64_t address, bytes; int device, memory; } *blocks;
    size_t block_n, block_cap;
    uint64_t next_address;
    /* ranges started and not yet ended: the stream each was marked on */
    struct open_range { uint64_t id; int device, stream; } *ranges;
    size_t range_n, range_cap;
    /* API records the client asked not to get, by callback id */
    uint8_t api_off[EMU_DOMAIN_COUNT][EMU_API_FILTER_IDS / 8];
    int profiling;         /* a kind was enabled since load or finalize */
} G = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .deliver_lock = PTHREAD_MUTEX_INITIALIZER,
    .worker_cond = PTHREAD_COND_INITIALIZER,
    .clock_scale = 1.0,
    .device_count = EMU_DEFAULT_DEVICES,
};

static _Atomic uint32_t g_next_correlation = 1;
static _Atomic uint64_t g_next_mark = 1;
static _Atomic int g_next_lane;
static _Thread_local int t_lane;       /* 0: none yet */

/* The emulated driver: initialised once, by the first API call (or, with
   DEVTRACE_EMU_INIT_ON_ARM=1, the first arming call), on that thread; it
   loads the injection library named by the vendor's variable and calls
   its InitializeInjection, as CUDA does, while initialising. */
enum { DRIVER_DOWN, DRIVER_INITIALISING, DRIVER_UP };
static _Atomic int g_driver_state;
static pthread_mutex_t g_driver_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_driver_cond = PTHREAD_COND_INITIALIZER;
static _Thread_local int t_initialising_driver;
/* the client's callback runs for an API call's exit on this thread */
static _Thread_local int t_in_api_exit;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* The subscriber handle is the address of this byte. */
static char g_subscriber_token;

static _Thread_local struct {
    uint64_t ids[EMU_EXT_KINDS][EMU_EXT_DEPTH];
    size_t depth[EMU_EXT_KINDS];
    /* beyond EMU_EXT_DEPTH, for personalities with deeper stacks */
    uint64_t *more[EMU_EXT_KINDS];
    size_t more_cap[EMU_EXT_KINDS];
} t_ext;

/* A vendor library asks the kernel for ids once, not once per record. */
static _Thread_local uint32_t t_system_tid;
static _Atomic uint32_t g_pid;
/* A child forked without exec after the driver initialised, of a vendor
   whose runtime cannot be used there (emu_vendor.fork_child_unusable). */
static int g_forked_unusable;

static const char *const fault_names[EMU_FAULT_COUNT] = {
    "zero_timestamps", "reversed_timestamps", "long_timestamps", "malformed",
    "unknown_kind",    "late",                "out_of_order",    "no_callbacks",
    "vendor_dropped",  "no_buffer",
};

static const char *const kind_names[EMU_KIND_COUNT] = {
    "kernel", "memcpy", "memset", "runtime", "driver", "external", "marker", "collective", "memory",
    "memory_pool",
};

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */
static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t device_from_realtime(uint64_t rt)
{
    double scale = atomic_load_explicit(&G.clock_scale, memory_order_relaxed);
    int64_t off = atomic_load_explicit(&G.clock_offset, memory_order_relaxed);
    /* without drift, integer arithmetic gives the same result, faster */
    if (scale == 1.0 && off > -(int64_t)(rt >> 1) && off < (int64_t)(rt >> 1))
        return off >= 0 ? rt + (uint64_t)off : rt - (uint64_t)(-off);
    /* long double keeps sub-ns precision on epoch-sized values */
    long double dev = (long double)rt * (long double)scale + (long double)off;
    if (dev < 1.0L)
        return 1;
    if (dev >= 18446744073709551615.0L)
        return UINT64_MAX - 1;
    return (uint64_t)dev;
}

static uint64_t device_now(void)
{
    return device_from_realtime(realtime_ns());
}

/* Sleep until the device clock reaches target. */
static void wait_device_time(uint64_t target)
{
    for (;;) {
        uint64_t now = device_now();
        if (now >= target)
            return;
        double scale = atomic_load_explicit(&G.clock_scale, memory_order_relaxed);
        double rt_left = (double)(target - now) / (scale > 0 ? scale : 1.0);
        uint64_t ns = rt_left < 1000.0 ? 1000 : (uint64_t)rt_left;
        if (ns > 100000000ull)
            ns = 100000000ull;
        struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

/* ------------------------------------------------------------------ */
/* Small containers                                                    */
/* ------------------------------------------------------------------ */
/* Room for one more of n elements in *items (capacity *cap, doubled from
   `first`); -1 when out of memory. */
static int grow_for_one(void **items, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void *p = realloc(*items, c * elem);
    if (!p)
        return -1;
    *items = p;
    *cap = c;
    return 0;
}

static int vec_push(rec_vec *v, const pending_rec *r)
{
    if (grow_for_one((void **)&v->v, &v->cap, v->n, sizeof *v->v, 256) != 0)
        return -1;
    v->v[v->n++] = *r;
    return 0;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Kernel names must outlive the call: the record points at them until the
   client has read the buffer, so they are kept for the library's lifetime. */
static const char *intern_name(const char *s)
{
    if (!s)
        s = "";
    name_set *ns = &G.names;
    if (!ns->slots || (ns->count + 1) * 2 > ns->mask + 1) {
        size_t cap = ns->slots ? (ns->mask + 1) * 2 : 64;
        char **slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return NULL;
        for (size_t i = 0; ns->slots && i <= ns->mask; i++) {
            if (!ns->slots[i])
                continue;
            size_t j = hash_str(ns->slots[i]) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = ns->slots[i];
        }
        free(ns->slots);
        ns->slots = slots;
        ns->mask = cap - 1;
    }
    size_t j = hash_str(s) & ns->mask;
    while (ns->slots[j]) {
        if (strcmp(ns->slots[j], s) == 0)
            return ns->slots[j];
        j = (j + 1) & ns->mask;
    }
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    ns->slots[j] = copy;
    ns->count++;
    return copy;
}

/* ------------------------------------------------------------------ */
/* Initialization                                                      */
/* ------------------------------------------------------------------ */
static int parse_faults_locked(const char *spec);
static void set_subscriber_locked(int subscribed, emu_generic_fn callback, void *userdata);

/* fork(): the child must not inherit a lock held by another thread, nor
   believe it has a worker thread (joining it at exit would never return). */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&G.deliver_lock);
    pthread_mutex_lock(&G.lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&G.lock);
    pthread_mutex_unlock(&G.deliver_lock);
}

static void atfork_child(void)
{
    t_system_tid = 0; /* the forking thread is a new thread in the child */
    atomic_store(&g_pid, 0);
    if (emu_vendor_impl.fork_child_unusable && atomic_load(&g_driver_state) == DRIVER_UP)
        g_forked_unusable = 1;
    G.worker_started = 0;
    G.worker_stop = 0;
    pthread_mutex_unlock(&G.lock);
    pthread_mutex_unlock(&G.deliver_lock);
    /* The parent's worker was waiting on the condition variable when the
       process forked; the child's copy still counts that waiter, and a
       broadcast would wait for it forever. Start the child with a new one. */
    pthread_cond_init(&G.worker_cond, NULL);
}

static void init_once(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    double drift = emu_vendor_impl.clock_drift_ppm;
    int64_t off = emu_vendor_impl.clock_offset_ns;
    if (emu_vendor_impl.clock_counter) {
        if (emu_vendor_impl.clock_origin_ns)
            off = (int64_t)emu_vendor_impl.clock_origin_ns();
        off -= (int64_t)((long double)realtime_ns() * (1.0L + (long double)drift * 1e-6L));
    }
    const char *v = emu_vendor_impl.clock_is_realtime ? NULL : getenv("DEVTRACE_EMU_CLOCK_OFFSET_NS");
    if (v && *v)
        off = strtoll(v, NULL, 10);
    v = emu_vendor_impl.clock_is_realtime ? NULL : getenv("DEVTRACE_EMU_CLOCK_DRIFT_PPM");
    if (v && *v)
        drift = strtod(v, NULL);
    if (!isfinite(drift) || drift <= -1e6)
        drift = 0.0;
    atomic_store(&G.clock_offset, off);
    atomic_store(&G.clock_scale, 1.0 + drift * 1e-6);
    pthread_mutex_lock(&G.lock);
    v = getenv("DEVTRACE_EMU_DEVICES");
    if (v && *v) {
        long n = strtol(v, NULL, 10);
        if (n >= 1 && n <= EMU_MAX_DEVICES)
            G.device_count = (int)n;
    }
    v = getenv("DEVTRACE_EMU_FLUSH_PERIOD_MS");
    if (v && *v) {
        long n = strtol(v, NULL, 10);
        if (n > 0 && n < 3600000)
            G.flush_period_ms = (uint32_t)n;
    }
    v = getenv("DEVTRACE_EMU_FLUSH_PERIOD_FIXED");
    G.flush_period_fixed = v && strcmp(v, "1") == 0;
    G.tid_type = emu_vendor_impl.default_thread_id_type;
    v = getenv("DEVTRACE_EMU_FAULTS");
    if (v && *v)
        (void)parse_faults_locked(v);
    pthread_mutex_unlock(&G.lock);
}

EMU_API int emu_init(void)
{
    pthread_once(&g_once, init_once);
    return EMU_OK;
}

EMU_API const char *emu_personality(void)
{
    return emu_vendor_impl.name;
}

EMU_API const char *emu_preload(void)
{
    return emu_vendor_impl.preload;
}

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */
static void start_worker_locked(void);
static void null_client_complete(void);

static void signal_worker_locked(void)
{
    if (!G.worker_started && G.request && !G.worker_stop)
        start_worker_locked(); /* a forked child starts its own */
    if (G.worker_started)
        pthread_cond_signal(&G.worker_cond);
}

static int push_done_locked(uint8_t *buf, size_t size, size_t valid)
{
    if (G.done_n == G.done_cap) {
        size_t cap = G.done_cap ? G.done_cap * 2 : 16;
        done_buf *nd = realloc(G.done, cap * sizeof(*nd));
        if (!nd)
            return -1;
        G.done = nd;
        G.done_cap = cap;
    }
    G.done[G.done_n++] = (done_buf){ buf, size, valid };
    return 0;
}

/* The lane of the calling thread. */
static int my_lane(void)
{
    if (!emu_vendor_impl.per_thread_buffers)
        return 0;
    if (!t_lane)
        t_lane = 1 + atomic_fetch_add_explicit(&g_next_lane, 1, memory_order_relaxed) % (EMU_LANES - 1);
    return t_lane;
}

static void complete_lane_locked(int ln)
{
    lane *L = &G.lanes[ln];
    if (!L->buf)
        return;
    if (emu_vendor_impl.take_completed && G.complete != null_client_complete) {
        emu_vendor_impl.take_completed(L->buf, L->size, L->used);
        G.stats.buffers_completed++;
    } else if (push_done_locked(L->buf, L->size, L->used) != 0) {
        /* Cannot queue: the buffer's records are lost, and counted. */
        G.dropped += L->records;
        G.stats.dropped_no_buffer += L->records;
        G.stats.dropped_reported += L->records;
    }
    L->buf = NULL;
    L->size = L->used = L->records = L->tail = 0;
    L->completions++;
    G.completions++;
    signal_worker_locked();
}

/* Every lane with records in it (flushes, the periodic completion). */
static void complete_all_locked(void)
{
    for (int ln = 0; ln < EMU_LANES; ln++)
        if (G.lanes[ln].buf && G.lanes[ln].used > 0)
            complete_lane_locked(ln);
}

static emu_kind stat_kind(emu_rec_kind k);

static void count_no_buffer_locked(const emu_activity *a, unsigned flags)
{
    G.dropped++;
    G.stats.dropped_no_buffer++;
    G.stats.dropped_reported++;
    /* records added by a fault are counted as faulted, not by kind */
    if (a->kind != EMU_REC_UNKNOWN && !(flags & PEND_MALFORMED))
        G.stats.dropped_no_buffer_kind[stat_kind(a->kind)]++;
}

/* Make room for `need` bytes in a lane; 0 on success, -1 if the client gave
   no buffer. */
static int reserve_locked(int ln, size_t need)
{
    lane *L = &G.lanes[ln];
    if (L->buf && L->used + L->tail + need > L->size)
        complete_lane_locked(ln);
    if (L->buf)
        return 0;
    if (!G.request || !G.complete)
        return -1;
    uint8_t *b = NULL;
    size_t size = 0, max_records = 0;
    G.request(&b, &size, &max_records);
    if (!b)
        return -1;
    if (((uintptr_t)b & 7u) != 0 || size < need) {
        /* Unusable: hand it back empty so the client can reuse it. */
        (void)push_done_locked(b, size, 0);
        G.completions++;
        signal_worker_locked();
        return -1;
    }
    G.stats.buffers_requested++;
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
static void write_record_locked(const emu_activity *a, unsigned flags, int ln)
{
    size_t size = emu_vendor_impl.record_size(a->kind);
    if (size == 0)
        return;
    size_t tail = emu_vendor_impl.tail_size ? emu_vendor_impl.tail_size(a) : 0;
    if (reserve_locked(ln, size + tail) != 0) {
        count_no_buffer_locked(a, flags);
        return;
    }
    lane *L = &G.lanes[ln];
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
static void write_ready_locked(int forced, uint64_t now)
{
    for (;;) {
        size_t w = 0;
        int wrote = 0;
        for (size_t i = 0; i < G.pending.n; i++) {
            pending_rec *p = &G.pending.v[i];
            if (!forced && p->ready_at > now) {
                G.pending.v[w++] = *p;
                continue;
            }
            if (p->flags & PEND_LATE) {
                pending_rec h = *p;
                h.flags &= ~(unsigned)PEND_LATE;
                /* "later" than the buffer being filled; with none being
                   filled, any buffer is later */
                const lane *L = &G.lanes[p->lane];
                h.release_at = L->completions + (L->buf && L->used ? 1 : 0);
                if (vec_push(&G.held, &h) == 0)
                    continue;
                /* no memory to hold it: write it now rather than lose it */
            }
            if (forced && p->ready_at > now && !(p->flags & PEND_TIMES_FAULTED)) {
                /* Still running: handed back as it stands. CUDA 13's CUPTI
                   gives such a kernel a start and no end. */
                G.stats.records_unfinished[stat_kind(p->a.kind)]++;
                if (emu_vendor_impl.unfinished_without_end)
                    p->a.end = 0;
            }
            write_record_locked(&p->a, p->flags, p->lane);
            wrote = 1;
        }
        G.pending.n = w;
        w = 0;
        for (size_t i = 0; i < G.held.n; i++) {
            pending_rec *p = &G.held.v[i];
            if (G.lanes[p->lane].completions < p->release_at) {
                G.held.v[w++] = *p;
                continue;
            }
            write_record_locked(&p->a, p->flags, p->lane);
            wrote = 1;
        }
        G.held.n = w;
        if (!wrote)
            return;
    }
}

static void update_pending_stat_locked(void)
{
    G.stats.records_pending = G.pending.n + G.held.n;
}

static void null_client_complete(void);
static void null_client_complete_buffer(uint8_t *buf, size_t valid);

/* Deliver completed buffers, serialized, outside the state lock;
   deliver_lock held. */
static void deliver_done_held(int from_worker)
{
    for (;;) {
        pthread_mutex_lock(&G.lock);
        if (G.done_n == 0) {
            pthread_mutex_unlock(&G.lock);
            break;
        }
        done_buf d = G.done[0];
        memmove(G.done, G.done + 1, (G.done_n - 1) * sizeof(*G.done));
        G.done_n--;
        emu_generic_fn fn = G.complete;
        G.stats.buffers_completed++;
        if (from_worker)
            G.stats.buffers_completed_worker++;
        pthread_mutex_unlock(&G.lock);
        if (fn == null_client_complete)
            null_client_complete_buffer(d.buf, d.valid);
        else if (fn)
            emu_vendor_impl.complete_buffer(fn, d.buf, d.size, d.valid);
    }
}

static void deliver_done(int from_worker)
{
    pthread_mutex_lock(&G.deliver_lock);
    deliver_done_held(from_worker);
    pthread_mutex_unlock(&G.deliver_lock);
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G.lock);
    while (!G.worker_stop) {
        int busy = G.pending.n > 0 || G.held.n > 0 || G.done_n > 0;
        uint64_t wait_ns = busy ? 1000000ull : 0;
        if (G.flush_period_ms) {
            uint64_t p = (uint64_t)G.flush_period_ms * 1000000ull;
            if (!wait_ns || p < wait_ns)
                wait_ns = p;
        }
        if (G.done_n == 0) {
            if (wait_ns) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + wait_ns;
                ts.tv_sec = (time_t)(t / 1000000000ull);
                ts.tv_nsec = (long)(t % 1000000000ull);
                pthread_cond_timedwait(&G.worker_cond, &G.lock, &ts);
            } else {
                pthread_cond_wait(&G.worker_cond, &G.lock);
            }
        }
        if (G.worker_stop)
            break;
        uint64_t rt = realtime_ns();
        write_ready_locked(0, device_from_realtime(rt));
        if (G.flush_period_ms && rt - G.last_periodic_rt >= (uint64_t)G.flush_period_ms * 1000000ull) {
            G.last_periodic_rt = rt;
            complete_all_locked();
        }
        update_pending_stat_locked();
        if (G.done_n > 0) {
            pthread_mutex_unlock(&G.lock);
            deliver_done(1);
            pthread_mutex_lock(&G.lock);
        }
    }
    pthread_mutex_unlock(&G.lock);
    return NULL;
}

static void start_worker_locked(void)
{
    if (G.worker_started)
        return;
    G.worker_stop = 0;
    G.last_periodic_rt = realtime_ns();
    if (pthread_create(&G.worker, NULL, worker_main, NULL) == 0)
        G.worker_started = 1;
}

__attribute__((destructor)) static void emu_core_fini(void)
{
    pthread_mutex_lock(&G.lock);
    int started = G.worker_started;
    G.worker_stop = 1;
    pthread_cond_broadcast(&G.worker_cond);
    pthread_mutex_unlock(&G.lock);
    if (started) {
        pthread_join(G.worker, NULL);
        pthread_mutex_lock(&G.lock);
        G.worker_started = 0;
        pthread_mutex_unlock(&G.lock);
    }
}

/* ------------------------------------------------------------------ */
/* Core services                                                       */
/* ------------------------------------------------------------------ */
emu_status emu_core_register_buffers(emu_request_fn request, emu_generic_fn complete)
{
    emu_init();
    if (!request || !complete)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&G.lock);
    G.request = request;
    G.complete = complete;
    start_worker_locked();
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

/* A vendor that makes a device record when the work completes, for a
   client still recording it: work of this kind still running when the
   client stops recording it is never delivered (counted unfinished). Faulted
   records keep their course: the fault is what they show. */
static void abandon_running_locked(emu_rec_kind kind)
{
    uint64_t now = device_now();
    size_t w = 0;
    for (size_t i = 0; i < G.pending.n; i++) {
        pending_rec *p = &G.pending.v[i];
        if (p->a.kind == kind && p->ready_at > now && !(p->flags & PEND_TIMES_FAULTED)) {
            G.stats.records_unfinished[stat_kind(kind)]++;
            continue;
        }
        G.pending.v[w++] = *p;
    }
    G.pending.n = w;
    update_pending_stat_locked();
}

emu_status emu_core_enable(emu_rec_kind kind, int enable)
{
    emu_init();
    if ((unsigned)kind >= EMU_REC_UNKNOWN || emu_vendor_impl.record_size(kind) == 0)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&G.lock);
    if (!enable && G.enabled[kind] && emu_vendor_impl.records_at_completion)
        abandon_running_locked(kind);
    G.enabled[kind] = enable != 0;
    if (enable) {
        G.profiling = 1;
        /* as CUPTI: enabling the kind undoes earlier per-call choices */
        if (kind == EMU_REC_RUNTIME || kind == EMU_REC_DRIVER)
            memset(G.api_off[kind == EMU_REC_RUNTIME ? EMU_DOMAIN_RUNTIME : EMU_DOMAIN_DRIVER], 0,
                   sizeof G.api_off[0]);
    }
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

emu_status emu_core_set_api_recorded(emu_domain domain, uint32_t cbid, int recorded)
{
    emu_init();
    if ((unsigned)domain >= EMU_DOMAIN_COUNT || cbid >= EMU_API_FILTER_IDS)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&G.lock);
    if (recorded)
        G.api_off[domain][cbid / 8] &= (uint8_t)~(1u << (cbid % 8));
    else
        G.api_off[domain][cbid / 8] |= (uint8_t)(1u << (cbid % 8));
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

emu_status emu_core_finalize(void)
{
    emu_init();
    /* what the client still holds is delivered first, as CUPTI asks of a
       client before it detaches */
    emu_core_flush_all(1);
    pthread_mutex_lock(&G.lock);
    memset(G.enabled, 0, sizeof G.enabled);
    memset(G.api_off, 0, sizeof G.api_off);
    set_subscriber_locked(0, NULL, NULL);
    G.request = NULL;
    G.complete = NULL;
    G.profiling = 0;
    G.tid_type = emu_vendor_impl.default_thread_id_type;
    G.stats.finalized++;
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

/* The vendor runtime's teardown at exit (emu_vendor.runtime_teardown). */
static _Atomic int g_torn_down;

static void runtime_teardown(void)
{
    pthread_mutex_lock(&G.lock);
    uint64_t lost = G.pending.n + G.held.n;
    for (int ln = 0; ln < EMU_LANES; ln++) lost += G.lanes[ln].records;
    G.stats.records_lost_at_teardown += lost;
    atomic_store(&g_torn_down, 1);
    pthread_mutex_unlock(&G.lock);
}

int emu_core_driver_initialised(void)
{
    return atomic_load(&g_driver_state) == DRIVER_UP;
}

void emu_core_driver_init(void)
{
    if (atomic_load_explicit(&g_driver_state, memory_order_acquire) == DRIVER_UP || t_initialising_driver)
        return;
    pthread_mutex_lock(&g_driver_lock);
    while (atomic_load(&g_driver_state) == DRIVER_INITIALISING)
        pthread_cond_wait(&g_driver_cond, &g_driver_lock);
    if (atomic_load(&g_driver_state) == DRIVER_UP) {
        pthread_mutex_unlock(&g_driver_lock);
        return;
    }
    atomic_store(&g_driver_state, DRIVER_INITIALISING);
    pthread_mutex_unlock(&g_driver_lock);
    /* This thread initialises; a call it makes meanwhile (the injection
       library arming the vendor interface) does not wait for itself. */
    t_initialising_driver = 1;
    if (emu_vendor_impl.runtime_teardown)
        atexit(runtime_teardown);
    const char *path = emu_vendor_impl.injection_env ? getenv(emu_vendor_impl.injection_env) : NULL;
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init) {
            pthread_mutex_lock(&G.lock);
            G.stats.injection_calls++;
            pthread_mutex_unlock(&G.lock);
            init();
        }
    }
    t_initialising_driver = 0;
    pthread_mutex_lock(&g_driver_lock);
    atomic_store(&g_driver_state, DRIVER_UP);
    pthread_cond_broadcast(&g_driver_cond);
    pthread_mutex_unlock(&g_driver_lock);
}

int emu_core_enabled(emu_rec_kind kind)
{
    if ((unsigned)kind >= EMU_REC_COUNT)
        return 0;
    pthread_mutex_lock(&G.lock);
    int on = G.enabled[kind];
    pthread_mutex_unlock(&G.lock);
    return on;
}

emu_status emu_core_flush_all(int forced)
{
    emu_init();
    if (atomic_load(&g_torn_down))
        return EMU_ST_INVALID;
    /* What the flush completes is delivered on the caller's thread, as
       vendors call the completion callback from their FlushAll: the worker
       waits for the delivery lock meanwhile. */
    pthread_mutex_lock(&G.deliver_lock);
    pthread_mutex_lock(&G.lock);
    uint64_t now = device_now();
    write_ready_locked(forced, now);
    complete_all_locked();
    /* late records are writable now that the buffers above have completed */
    if (G.held.n) {
        write_ready_locked(forced, now);
        complete_all_locked();
    }
    update_pending_stat_locked();
    pthread_mutex_unlock(&G.lock);
    deliver_done_held(0);
    pthread_mutex_unlock(&G.deliver_lock);
    return EMU_ST_OK;
}

void emu_core_buffer_waited(void)
{
    G.stats.buffer_waits++;
}

emu_status emu_core_flush_period(uint32_t ms)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    if (!G.flush_period_fixed)
        G.flush_period_ms = ms;
    G.last_periodic_rt = realtime_ns();
    signal_worker_locked();
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

size_t emu_core_take_dropped(void)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    size_t n = G.dropped;
    G.dropped = 0;
    pthread_mutex_unlock(&G.lock);
    return n;
}

uint64_t emu_core_timestamp(void)
{
    emu_init();
    return device_now();
}

/* The size of the record at rec, of which avail bytes are valid. Stepping
   past a record and accepting the next one ask the same question: whether
   its kind is known and it fits. */
static emu_status measure_record(const uint8_t *rec, size_t avail, size_t *size)
{
    if (avail < 4)
        return EMU_ST_TRUNCATED;
    emu_rec_kind k = emu_vendor_impl.record_kind(rec, avail);
    size_t sz = k == EMU_REC_UNKNOWN ? 0 : emu_vendor_impl.record_size(k);
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

/* A new subscriber and a departed one both start with every domain off:
   a client enables what it wants after subscribing. */
static void set_subscriber_locked(int subscribed, emu_generic_fn callback, void *userdata)
{
    G.subscribed = subscribed;
    G.cb = callback;
    G.cb_userdata = userdata;
    for (int d = 0; d < EMU_DOMAIN_COUNT; d++)
        G.domain_on[d] = 0;
}

emu_status emu_core_subscribe(void **handle, emu_generic_fn callback, void *userdata)
{
    emu_init();
    if (!handle)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&G.lock);
    if (G.subscribed) {
        pthread_mutex_unlock(&G.lock);
        return EMU_ST_BUSY;
    }
    set_subscriber_locked(1, callback, userdata);
    pthread_mutex_unlock(&G.lock);
    *handle = &g_subscriber_token;
    return EMU_ST_OK;
}

emu_status emu_core_unsubscribe(void *handle)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    if (!G.subscribed || handle != &g_subscriber_token) {
        pthread_mutex_unlock(&G.lock);
        return EMU_ST_NOT_SUBSCRIBED;
    }
    set_subscriber_locked(0, NULL, NULL);
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

static void null_client_callback(void);

int emu_core_subscriber(void *handle, emu_generic_fn *callback, void **userdata)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    int ok = G.subscribed && (!handle || handle == &g_subscriber_token) && G.cb != null_client_callback;
    if (ok && callback) *callback = G.cb;
    if (ok && userdata) *userdata = G.cb_userdata;
    pthread_mutex_unlock(&G.lock);
    return ok;
}

emu_status emu_core_enable_domain(void *handle, emu_domain domain, int enable)
{
    emu_init();
    if ((unsigned)domain >= EMU_DOMAIN_COUNT)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&G.lock);
    if (!G.subscribed || handle != &g_subscriber_token) {
        pthread_mutex_unlock(&G.lock);
        return EMU_ST_NOT_SUBSCRIBED;
    }
    G.domain_on[domain] = enable != 0;
    pthread_mutex_unlock(&G.lock);
    return EMU_ST_OK;
}

void emu_core_set_thread_id_type(emu_thread_id_type type)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    /* CUPTI's header: not to be changed while profiling */
    if (G.profiling && type != G.tid_type)
        G.stats.thread_id_type_changes_while_profiling++;
    G.tid_type = type;
    pthread_mutex_unlock(&G.lock);
}

emu_thread_id_type emu_core_get_thread_id_type(void)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    emu_thread_id_type t = G.tid_type;
    pthread_mutex_unlock(&G.lock);
    return t;
}

/* Entry i of a thread's stack of one kind. */
static uint64_t *ext_entry(__typeof__(t_ext) *t, uint32_t kind, size_t i)
{
    return i < EMU_EXT_DEPTH ? &t->ids[kind][i] : &t->more[kind][i - EMU_EXT_DEPTH];
}

emu_status emu_core_push_external(uint32_t external_kind, uint64_t id)
{
    __typeof__(t_ext) *t = &t_ext;
    size_t max = emu_vendor_impl.external_depth ? emu_vendor_impl.external_depth : EMU_EXT_DEPTH;
    if (external_kind >= EMU_EXT_KINDS || t->depth[external_kind] >= max)
        return EMU_ST_INVALID;
    size_t d = t->depth[external_kind];
    if (d >= EMU_EXT_DEPTH && d - EMU_EXT_DEPTH >= t->more_cap[external_kind]) {
        size_t cap = t->more_cap[external_kind] ? t->more_cap[external_kind] * 2 : 256;
        uint64_t *more = realloc(t->more[external_kind], cap * sizeof(*more));
        if (!more)
            return EMU_ST_INVALID;
        t->more[external_kind] = more;
        t->more_cap[external_kind] = cap;
    }
    *ext_entry(t, external_kind, d) = id;
    t->depth[external_kind] = d + 1;
    return EMU_ST_OK;
}

emu_status emu_core_pop_external(uint32_t external_kind, uint64_t *id)
{
    __typeof__(t_ext) *t = &t_ext;
    if (external_kind >= EMU_EXT_KINDS || t->depth[external_kind] == 0)
        return EMU_ST_INVALID;
    uint64_t v = *ext_entry(t, external_kind, --t->depth[external_kind]);
    if (t->depth[external_kind] == 0 && t->more[external_kind]) {
        free(t->more[external_kind]);
        t->more[external_kind] = NULL;
        t->more_cap[external_kind] = 0;
    }
    if (id)
        *id = v;
    return EMU_ST_OK;
}

/* ------------------------------------------------------------------ */
/* Faults                                                              */
/* ------------------------------------------------------------------ */
static int take_fault_locked(emu_fault f)
{
    if (G.fault_left[f] == 0)
        return 0;
    G.fault_left[f]--;
    G.stats.faulted[f]++;
    return 1;
}

static int arm_locked(emu_fault f, uint64_t count)
{
    if ((unsigned)f >= EMU_FAULT_COUNT)
        return EMU_EINVAL;
    if (emu_vendor_impl.unsupported_faults & (1u << f))
        return EMU_ENOTSUP;
    G.fault_left[f] += count;
    return EMU_OK;
}

static int parse_faults_locked(const char *spec)
{
    const char *p = spec;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return EMU_OK;
        const char *name = p;
        while (*p && *p != '=' && *p != ',' && *p != ' ')
            p++;
        size_t len = (size_t)(p - name);
        if (*p != '=')
            return EMU_EINVAL;
        p++;
        char *end = NULL;
        errno = 0;
        unsigned long long count = strtoull(p, &end, 10);
        if (end == p || errno != 0 || *p == '-')
            return EMU_EINVAL;
        p = end;
        int f = -1;
        for (int i = 0; i < EMU_FAULT_COUNT; i++)
            if (strlen(fault_names[i]) == len && strncmp(fault_names[i], name, len) == 0)
                f = i;
        if (f < 0)
            return EMU_EINVAL;
        (void)arm_locked((emu_fault)f, count); /* a fault the vendor cannot exhibit is ignored */
    }
}

EMU_API int emu_set_faults(const char *spec)
{
    emu_init();
    if (!spec)
        return EMU_EINVAL;
    /* a spec with an error arms nothing, not even its valid items */
    pthread_mutex_lock(&G.lock);
    uint64_t saved_left[EMU_FAULT_COUNT];
    memcpy(saved_left, G.fault_left, sizeof(saved_left));
    int rc = parse_faults_locked(spec);
    if (rc != EMU_OK)
        memcpy(G.fault_left, saved_left, sizeof(saved_left));
    pthread_mutex_unlock(&G.lock);
    return rc;
}

EMU_API int emu_fault_arm(emu_fault fault, uint64_t count)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    int rc = arm_locked(fault, count);
    pthread_mutex_unlock(&G.lock);
    return rc;
}

EMU_API const char *emu_fault_name(emu_fault fault)
{
    return (unsigned)fault < EMU_FAULT_COUNT ? fault_names[fault] : NULL;
}

EMU_API const char *emu_kind_name(emu_kind kind)
{
    return (unsigned)kind < EMU_KIND_COUNT ? kind_names[kind] : NULL;
}

EMU_API void emu_faults_clear(void)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    memset(G.fault_left, 0, sizeof(G.fault_left));
    pthread_mutex_unlock(&G.lock);
}

/* ------------------------------------------------------------------ */
/* Runtime API                                                         */
/* ------------------------------------------------------------------ */
EMU_API int emu_set_clock(int64_t offset_ns, double drift_ppm)
{
    emu_init();
    if (!isfinite(drift_ppm) || drift_ppm <= -1e6 || drift_ppm >= 1e6 || emu_vendor_impl.clock_is_realtime)
        return EMU_EINVAL;
    atomic_store(&G.clock_offset, offset_ns);
    atomic_store(&G.clock_scale, 1.0 + drift_ppm * 1e-6);
    return EMU_OK;
}

EMU_API uint64_t emu_device_time_ns(void)
{
    emu_init();
    return device_now();
}

EMU_API int emu_device_count(void)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    int n = G.device_count;
    pthread_mutex_unlock(&G.lock);
    return n;
}

EMU_API int emu_set_device_count(int count)
{
    emu_init();
    if (count < 1 || count > EMU_MAX_DEVICES)
        return EMU_EINVAL;
    pthread_mutex_lock(&G.lock);
    G.device_count = count;
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

EMU_API void emu_stats_get(emu_stats *out)
{
    emu_init();
    if (!out)
        return;
    pthread_mutex_lock(&G.lock);
    update_pending_stat_locked();
    *out = G.stats;
    pthread_mutex_unlock(&G.lock);
}

EMU_API void emu_stats_reset(void)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    memset(&G.stats, 0, sizeof(G.stats));
    pthread_mutex_unlock(&G.lock);
}

static uint32_t thread_id_locked(void)
{
    if (G.tid_type == EMU_TID_SYSTEM) {
        if (!t_system_tid)
            t_system_tid = (uint32_t)syscall(SYS_gettid);
        return t_system_tid;
    }
    return (uint32_t)(uintptr_t)pthread_self();
}

static uint32_t next_correlation(void)
{
    uint32_t c;
    do
        c = atomic_fetch_add_explicit(&g_next_correlation, 1, memory_order_relaxed);
    while (c == 0);
    return c;
}

uint32_t emu_core_next_correlation(void)
{
    return next_correlation();
}

static int device_ok(int device)
{
    pthread_mutex_lock(&G.lock);
    int ok = device >= 0 && device < G.device_count;
    pthread_mutex_unlock(&G.lock);
    return ok;
}

/* The extra records a malformed or unknown-kind fault inserts, written
   ahead of the record being produced. */
static void inject_bad_records_locked(uint32_t correlation)
{
    if (G.fault_left[EMU_FAULT_MALFORMED] &&
        emu_vendor_impl.record_size(EMU_REC_KERNEL) > EMU_TRUNCATED_BYTES) {
        take_fault_locked(EMU_FAULT_MALFORMED);
        emu_activity bad = { .kind = EMU_REC_KERNEL, .correlation = correlation };
        bad.u.kernel.name = intern_name("malformed");
        write_record_locked(&bad, PEND_MALFORMED, my_lane());
    }
    if (G.fault_left[EMU_FAULT_UNKNOWN_KIND] && emu_vendor_impl.record_size(EMU_REC_UNKNOWN)) {
        take_fault_locked(EMU_FAULT_UNKNOWN_KIND);
        emu_activity bad = { .kind = EMU_REC_UNKNOWN, .correlation = correlation };
        write_record_locked(&bad, 0, my_lane());
    }
}

/* Reported drops are added when the next record is produced rather than
   when armed: a client that reads the count when it starts (to discard
   older drops) must still see them. */
static void apply_vendor_dropped_locked(void)
{
    uint64_t n = G.fault_left[EMU_FAULT_VENDOR_DROPPED];
    if (!n)
        return;
    G.fault_left[EMU_FAULT_VENDOR_DROPPED] = 0;
    G.dropped += (size_t)n;
    G.stats.faulted[EMU_FAULT_VENDOR_DROPPED] += n;
    G.stats.dropped_reported += n;
}

static emu_kind stat_kind(emu_rec_kind k)
{
    switch (k) {
    case EMU_REC_KERNEL: return EMU_KIND_KERNEL;
    case EMU_REC_MEMCPY: return EMU_KIND_MEMCPY;
    case EMU_REC_MEMSET: return EMU_KIND_MEMSET;
    case EMU_REC_RUNTIME: return EMU_KIND_RUNTIME;
    case EMU_REC_DRIVER: return EMU_KIND_DRIVER;
    case EMU_REC_MARKER: return EMU_KIND_MARKER;
    case EMU_REC_COLLECTIVE: return EMU_KIND_COLLECTIVE;
    case EMU_REC_MEMORY: return EMU_KIND_MEMORY;
    case EMU_REC_MEMORY_POOL: return EMU_KIND_MEMORY_POOL;
    default: return EMU_KIND_EXTERNAL;
    }
}

/* The gate API and device records share, so that the record-wide faults
   (vendor_dropped, malformed and unknown records, no_buffer) act on both
   kinds alike: 0 when the kind is off or no_buffer takes the record, which
   then counts as a drop the vendor reports. */
static int admit_locked(const emu_activity *a)
{
    if (!G.enabled[a->kind])
        return 0;
    apply_vendor_dropped_locked();
    inject_bad_records_locked(a->correlation);
    if (take_fault_locked(EMU_FAULT_NO_BUFFER)) {
        G.dropped++;
        G.stats.dropped_reported++;
        return 0;
    }
    return 1;
}

/* A vendor whose records carry its external id: taken from the producing
   thread's stack now. */
static void attach_external_locked(emu_activity *a)
{
    if (emu_vendor_impl.record_external && emu_vendor_impl.record_external(a->kind, &a->external_id)) {
        a->has_external_id = 1;
        G.stats.records[EMU_KIND_EXTERNAL]++;
    }
}

/* Produce an API or external record: written at once. */
static void produce_now_locked(const emu_activity *in)
{
    if (!admit_locked(in))
        return;
    emu_activity a = *in;
    attach_external_locked(&a);
    G.stats.records[stat_kind(a.kind)]++;
    write_record_locked(&a, 0, my_lane());
}

/* Produce a device record: applies timestamp faults, then queues it until
   the device work has finished (or writes it at once when out of order). */
static void produce_device_locked(emu_activity *a)
{
    if (!admit_locked(a))
        return;
    attach_external_locked(a);
    uint64_t ready_at = a->end;
    unsigned flags = PEND_TIMES_FAULTED;
    if (take_fault_locked(EMU_FAULT_ZERO_TIMESTAMPS)) {
        a->start = a->end = 0;
    } else if (take_fault_locked(EMU_FAULT_REVERSED_TIMESTAMPS)) {
        uint64_t s = a->start;
        a->start = a->end + 1;
        a->end = s;
    } else if (take_fault_locked(EMU_FAULT_LONG_TIMESTAMPS)) {
        a->end = a->start + EMU_LONG_DURATION_NS;
    } else {
        G.stats.records[stat_kind(a->kind)]++;
        flags = 0;
    }
    pending_rec p = { .a = *a, .ready_at = ready_at, .lane = my_lane(), .flags = flags };
    if (take_fault_locked(EMU_FAULT_OUT_OF_ORDER)) {
        write_record_locked(a, 0, p.lane);
        return;
    }
    if (take_fault_locked(EMU_FAULT_LATE))
        p.flags |= PEND_LATE;
    if (vec_push(&G.pending, &p) != 0)
        write_record_locked(a, 0, p.lane); /* no memory to defer it: write it now */
}

typedef struct api_frame {
    uint32_t correlation;
    uint64_t start;
    uint64_t cdata;
    int32_t retval;
    int callbacks;        /* deliver callbacks for this call */
    emu_generic_fn cb;
    void *userdata;
} api_frame;

static void null_client_callback(void);
static void null_client_request(uint8_t **buffer, size_t *size, size_t *max_records);
/* The null client keeps an external-correlation id pushed (state lock). */
static int g_null_client_keeps_id;

static void invoke(api_frame *f, emu_domain domain, uint32_t cbid, emu_site site,
                   const char *symbol, uint32_t context_uid, const emu_call_args *args)
{
    if (!f->callbacks || !f->cb)
        return;
    pthread_mutex_lock(&G.lock);
    int on = G.subscribed && G.domain_on[domain] && G.cb == f->cb;
    if (on)
        G.stats.callbacks_delivered++;
    pthread_mutex_unlock(&G.lock);
    if (!on || f->cb == null_client_callback)
        return;
    emu_api_call call = {
        .domain = domain,
        .cbid = cbid,
        .site = site,
        .function_name = emu_vendor_impl.callback_name(domain, cbid),
        .symbol_name = symbol,
        .correlation = f->correlation,
        .context_uid = context_uid,
        .correlation_data = &f->cdata,
        .function_params = NULL,
        .return_value = &f->retval,
        .args = args,
    };
    t_in_api_exit = site == EMU_SITE_EXIT;
    emu_vendor_impl.invoke_callback(f->cb, f->userdata, &call);
    t_in_api_exit = 0;
}

/* The device's context, created at its first API call after the driver
   initialised (a call on no device in particular: device 0's), as the CUDA
   runtime creates its primary context. */
static _Atomic uint32_t g_contexts; /* bit per device */

static void create_context(int device)
{
    if (!emu_vendor_impl.context_created)
        return;
    uint32_t bit = 1u << (device >= 0 && device < EMU_MAX_DEVICES ? device : 0);
    if ((atomic_load_explicit(&g_contexts, memory_order_relaxed) & bit) || (atomic_fetch_or(&g_contexts, bit) & bit))
        return;
    emu_vendor_impl.context_created(device >= 0 ? device : 0);
}

int emu_core_in_api_exit(void)
{
    return t_in_api_exit;
}

int emu_core_work_running(void)
{
    emu_init();
    int running = 0;
    pthread_mutex_lock(&G.lock);
    uint64_t now = device_now();
    for (int d = 0; d < G.device_count && !running; d++)
        for (int st = 0; st < EMU_MAX_STREAMS && !running; st++)
            running = G.ready[d][st] > now;
    pthread_mutex_unlock(&G.lock);
    return running;
}

void emu_core_finalize_refused(void)
{
    pthread_mutex_lock(&G.lock);
    G.stats.finalize_refused++;
    pthread_mutex_unlock(&G.lock);
}

static void api_begin(api_frame *f)
{
    memset(f, 0, sizeof(*f));
    f->correlation = next_correlation();
    pthread_mutex_lock(&G.lock);
    G.stats.api_calls++;
    f->callbacks = !take_fault_locked(EMU_FAULT_NO_CALLBACKS);
    f->cb = G.subscribed ? G.cb : NULL;
    f->userdata = G.cb_userdata;
    pthread_mutex_unlock(&G.lock);
    f->start = device_now();
}

static int api_filtered_locked(emu_domain domain, uint32_t cbid)
{
    return cbid < EMU_API_FILTER_IDS && (G.api_off[domain][cbid / 8] >> (cbid % 8)) & 1u;
}

static void api_record_locked(const api_frame *f, emu_domain domain, uint32_t cbid, uint64_t end)
{
    emu_rec_kind kind = domain == EMU_DOMAIN_RUNTIME ? EMU_REC_RUNTIME : EMU_REC_DRIVER;
    /* filtered before it reaches a buffer: neither produced nor counted */
    if (api_filtered_locked(domain, cbid))
        return;
    if (G.enabled[EMU_REC_EXTERNAL]) {
        /* once: each use of a thread-local costs a lookup in a library */
        __typeof__(t_ext) *stacks = &t_ext;
        int any = 0;
        for (uint32_t k = 0; emu_vendor_impl.external_top && k < EMU_EXT_KINDS; k++) {
            uint64_t id;
            if (!emu_vendor_impl.external_top(k, &id))
                continue;
            any = 1;
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = k;
            ext.u.external.external_id = id;
            produce_now_locked(&ext);
        }
        for (uint32_t k = 0; !emu_vendor_impl.external_top && k < EMU_EXT_KINDS; k++) {
            /* the null client stands for a tracer that keeps an id pushed */
            int null_client = k == 0 && G.request == null_client_request && g_null_client_keeps_id;
            if (stacks->depth[k] == 0 && !null_client)
                continue;
            any = 1;
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = k;
            ext.u.external.external_id = stacks->depth[k] ? *ext_entry(stacks, k, stacks->depth[k] - 1) : 1;
            produce_now_locked(&ext);
        }
        if (!any && emu_vendor_impl.external_kind_when_empty) {
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = emu_vendor_impl.external_kind_when_empty;
            produce_now_locked(&ext);
        }
    }
    emu_activity a = { .kind = kind, .start = f->start, .end = end, .correlation = f->correlation };
    a.u.api.cbid = cbid;
    uint32_t pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
    if (!pid) {
        pid = (uint32_t)getpid();
        atomic_store_explicit(&g_pid, pid, memory_order_relaxed);
    }
    a.u.api.process = pid;
    a.u.api.thread = thread_id_locked();
    a.u.api.return_value = 0;
    produce_now_locked(&a);
}

/* One emulated API call: the runtime call (if the vendor has one for this
   operation) wrapping the driver call (likewise); `work` queues the device
   activity between ENTER and EXIT and returns the device time the call must
   wait for before returning (0: none). */
typedef uint64_t (*work_fn)(void *arg, uint32_t correlation, uint64_t api_start);

/* A call in a child whose runtime cannot be used (g_forked_unusable): the
   vendor's API callbacks still see it enter and leave, with the error it
   returns; it does no work and writes no record. */
static int failed_call(emu_domain domain, uint32_t cbid, const char *symbol, uint32_t context_uid,
                       const emu_call_args *args)
{
    if (!cbid)
        return EMU_EUNUSABLE;
    api_frame f;
    api_begin(&f);
    f.retval = EMU_EUNUSABLE;
    invoke(&f, domain, cbid, EMU_SITE_ENTER, symbol, context_uid, args);
    invoke(&f, domain, cbid, EMU_SITE_EXIT, symbol, context_uid, args);
    return EMU_EUNUSABLE;
}

static int api_call(const emu_call_args *args, const char *symbol, work_fn work, void *arg)
{
    emu_op op = args->op;
    emu_copy_kind ck = (emu_copy_kind)args->copy_kind;
    /* the emulator's contexts: one per device, uid device + 1 */
    uint32_t context_uid = (uint32_t)args->device + 1;
    emu_core_driver_init();
    create_context(args->device);
    if (emu_vendor_impl.runtime_call)
        emu_vendor_impl.runtime_call();
    uint32_t rt_cbid = emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, op, ck);
    uint32_t drv_cbid = emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, op, ck);
    if (!rt_cbid && !drv_cbid && !work)
        return EMU_OK; /* a call this vendor does not make */
    if (g_forked_unusable) /* the runtime fails before it reaches the driver */
        return rt_cbid ? failed_call(EMU_DOMAIN_RUNTIME, rt_cbid, symbol, context_uid, args)
                       : failed_call(EMU_DOMAIN_DRIVER, drv_cbid, symbol, context_uid, args);
    api_frame rt, drv;
    uint32_t device_corr = 0;
    uint64_t api_start = 0;
    if (rt_cbid) {
        api_begin(&rt);
        invoke(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, EMU_SITE_ENTER, symbol, context_uid, args);
        device_corr = rt.correlation;
        api_start = rt.start;
    }
    if (drv_cbid) {
        api_begin(&drv);
        invoke(&drv, EMU_DOMAIN_DRIVER, drv_cbid, EMU_SITE_ENTER, symbol, context_uid, args);
        if (!device_corr) {
            device_corr = drv.correlation;
            api_start = drv.start;
        }
    }
    if (!device_corr) {
        device_corr = next_correlation();
        api_start = device_now();
    }
    uint64_t wait_until = work ? work(arg, device_corr, api_start) : 0;
    if (wait_until)
        wait_device_time(wait_until);
    if (drv_cbid) {
        invoke(&drv, EMU_DOMAIN_DRIVER, drv_cbid, EMU_SITE_EXIT, symbol, context_uid, args);
        uint64_t end = device_now();
        pthread_mutex_lock(&G.lock);
        api_record_locked(&drv, EMU_DOMAIN_DRIVER, drv_cbid, end);
        update_pending_stat_locked();
        pthread_mutex_unlock(&G.lock);
    }
    if (rt_cbid) {
        invoke(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, EMU_SITE_EXIT, symbol, context_uid, args);
        uint64_t end = device_now();
        pthread_mutex_lock(&G.lock);
        api_record_locked(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, end);
        update_pending_stat_locked();
        pthread_mutex_unlock(&G.lock);
    }
    /* Device work that has already finished is written now, on this
       thread, as a vendor library does when the call returns; waking the
       worker for each call would cost a context switch per launch. */
    pthread_mutex_lock(&G.lock);
    if (G.pending.n && G.pending.v[0].ready_at <= device_now()) {
        write_ready_locked(0, device_now());
        update_pending_stat_locked();
    }
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

/* Place work on a stream: start when both the call and the stream allow. */
static void schedule_locked(int device, int stream, uint64_t duration, uint64_t *start, uint64_t *end)
{
    uint64_t now = device_now();
    uint64_t *ready = &G.ready[device][stream];
    uint64_t s = now > *ready ? now : *ready;
    *start = s;
    *end = s + duration;
    *ready = *end;
}

typedef struct kernel_work {
    const emu_kernel_desc *d;
} kernel_work;

static uint64_t kernel_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const emu_kernel_desc *d = ((kernel_work *)arg)->d;
    pthread_mutex_lock(&G.lock);
    emu_activity a = { .kind = EMU_REC_KERNEL, .correlation = corr };
    a.device = (uint32_t)d->device;
    a.context = (uint32_t)d->device + 1;
    a.stream = (uint32_t)d->stream;
    schedule_locked(d->device, d->stream, d->duration_ns, &a.start, &a.end);
    a.u.kernel.name = intern_name(d->name);
    if (!a.u.kernel.name)
        a.u.kernel.name = "";
    for (int i = 0; i < 3; i++) {
        a.u.kernel.grid[i] = d->grid[i];
        a.u.kernel.block[i] = d->block[i];
    }
    a.u.kernel.registers_per_thread = d->registers_per_thread ? d->registers_per_thread : 32;
    a.u.kernel.static_shared_memory = d->static_shared_memory;
    a.u.kernel.dynamic_shared_memory = d->dynamic_shared_memory;
    a.u.kernel.queued = api_start;
    uint64_t sub = device_now();
    a.u.kernel.submitted = sub < a.start ? sub : a.start;
    a.u.kernel.completed = 0;
    a.u.kernel.grid_id = ++G.grid_id[d->device];
    produce_device_locked(&a);
    pthread_mutex_unlock(&G.lock);
    return 0;
}

EMU_API int emu_launch_kernel_desc(const emu_kernel_desc *desc)
{
    emu_init();
    if (!desc || !device_ok(desc->device) || desc->stream < 0 || desc->stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    kernel_work w = { desc };
    /* CUDA 13: the call site pushes the launch configuration, the launch
       stub pops it, then launches (vendors without these make no call) */
    emu_call_args push = { .op = EMU_OP_PUSH_CALL_CONFIGURATION, .device = desc->device, .stream = desc->stream };
    emu_call_args pop = push;
    pop.op = EMU_OP_POP_CALL_CONFIGURATION;
    (void)api_call(&push, NULL, NULL, NULL); /* a failure is the launch's too */
    (void)api_call(&pop, NULL, NULL, NULL);
    emu_call_args args = { .op = EMU_OP_LAUNCH_KERNEL, .kernel = desc, .device = desc->device, .stream = desc->stream };
    return api_call(&args, desc->name ? desc->name : "", kernel_work_fn, &w);
}

EMU_API int emu_launch_kernel(int device, int stream, const char *name, const int grid[3],
                              const int block[3], uint64_t duration_ns)
{
    emu_kernel_desc d = { .device = device, .stream = stream, .name = name,
                          .duration_ns = duration_ns };
    for (int i = 0; i < 3; i++) {
        d.grid[i] = grid ? grid[i] : 1;
        d.block[i] = block ? block[i] : 1;
    }
    return emu_launch_kernel_desc(&d);
}

typedef struct copy_work {
    int device, stream, copy_kind, async;
    uint64_t bytes, duration;
    uint32_t value;
    int is_memset;
} copy_work;

static uint64_t copy_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    copy_work *w = arg;
    (void)api_start;
    pthread_mutex_lock(&G.lock);
    emu_activity a = { .kind = w->is_memset ? EMU_REC_MEMSET : EMU_REC_MEMCPY, .correlation = corr };
    a.device = (uint32_t)w->device;
    a.context = (uint32_t)w->device + 1;
    a.stream = (uint32_t)w->stream;
    schedule_locked(w->device, w->stream, w->duration, &a.start, &a.end);
    if (w->is_memset) {
        a.u.memset.bytes = w->bytes;
        a.u.memset.value = w->value;
        a.u.memset.memory = EMU_MEM_DEVICE;
        a.u.memset.async = w->async;
    } else {
        a.u.memcpy.copy_kind = (emu_copy_kind)w->copy_kind;
        a.u.memcpy.bytes = w->bytes;
        a.u.memcpy.async = w->async;
        int host_mem = w->async ? EMU_MEM_PINNED : EMU_MEM_PAGEABLE;
        switch (w->copy_kind) {
        case EMU_COPY_HTOD: a.u.memcpy.src_memory = host_mem; a.u.memcpy.dst_memory = EMU_MEM_DEVICE; break;
        case EMU_COPY_DTOH: a.u.memcpy.src_memory = EMU_MEM_DEVICE; a.u.memcpy.dst_memory = host_mem; break;
        case EMU_COPY_HTOH: a.u.memcpy.src_memory = host_mem; a.u.memcpy.dst_memory = host_mem; break;
        default: a.u.memcpy.src_memory = EMU_MEM_DEVICE; a.u.memcpy.dst_memory = EMU_MEM_DEVICE; break;
        }
        a.u.memcpy.src_device = (uint32_t)w->device;
        a.u.memcpy.dst_device = (uint32_t)w->device;
    }
    uint64_t end = a.end;
    produce_device_locked(&a);
    pthread_mutex_unlock(&G.lock);
    return w->async ? 0 : end;
}

EMU_API int emu_memcpy(int device, int stream, int copy_kind, uint64_t bytes,
                       uint64_t duration_ns, int async)
{
    emu_init();
    if (!device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS ||
        copy_kind < EMU_COPY_HTOD || copy_kind > EMU_COPY_PTOP)
        return EMU_EINVAL;
    copy_work w = { device, stream, copy_kind, async != 0, bytes, duration_ns, 0, 0 };
    emu_call_args args = { .op = async ? EMU_OP_MEMCPY_ASYNC : EMU_OP_MEMCPY, .bytes = bytes,
                           .copy_kind = copy_kind, .device = device, .stream = stream };
    return api_call(&args, NULL, copy_work_fn, &w);
}

EMU_API int emu_memset(int device, int stream, uint64_t bytes, uint32_t value,
                       uint64_t duration_ns, int async)
{
    emu_init();
    if (!device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    copy_work w = { device, stream, 0, async != 0, bytes, duration_ns, value, 1 };
    emu_call_args args = { .op = async ? EMU_OP_MEMSET_ASYNC : EMU_OP_MEMSET, .bytes = bytes, .value = value,
                           .device = device, .stream = stream };
    return api_call(&args, NULL, copy_work_fn, &w);
}

typedef struct sync_work {
    int device, stream;
} sync_work;

static uint64_t sync_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    sync_work *w = arg;
    (void)corr;
    (void)api_start;
    uint64_t target = 0;
    pthread_mutex_lock(&G.lock);
    if (w->stream >= 0) {
        target = G.ready[w->device][w->stream];
    } else {
        for (int s = 0; s < EMU_MAX_STREAMS; s++)
            if (G.ready[w->device][s] > target)
                target = G.ready[w->device][s];
    }
    pthread_mutex_unlock(&G.lock);
    return target;
}

EMU_API int emu_synchronize(int device, int stream)
{
    emu_init();
    if (stream < -1 || stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    if (device == -1) {
        int n = emu_device_count();
        for (int d = 0; d < n; d++) {
            sync_work w = { d, stream };
            emu_call_args args = { .op = stream >= 0 ? EMU_OP_STREAM_SYNCHRONIZE : EMU_OP_DEVICE_SYNCHRONIZE,
                                   .device = d, .stream = stream };
            int rc = api_call(&args, NULL, sync_work_fn, &w);
            if (rc != EMU_OK)
                return rc;
        }
        return EMU_OK;
    }
    if (!device_ok(device))
        return EMU_EINVAL;
    sync_work w = { device, stream };
    emu_call_args args = { .op = stream >= 0 ? EMU_OP_STREAM_SYNCHRONIZE : EMU_OP_DEVICE_SYNCHRONIZE,
                           .device = device, .stream = stream };
    return api_call(&args, NULL, sync_work_fn, &w);
}

/* ------------------------------------------------------------------ */
/* Markers and collectives                                             */
/* ------------------------------------------------------------------ */
static uint32_t system_tid(void)
{
    if (!t_system_tid)
        t_system_tid = (uint32_t)syscall(SYS_gettid);
    return t_system_tid;
}

static uint32_t process_id(void)
{
    uint32_t pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
    if (!pid) {
        pid = (uint32_t)getpid();
        atomic_store_explicit(&g_pid, pid, memory_order_relaxed);
    }
    return pid;
}

/* The host's record of a marker, now, on this thread; and, for a marker on
   a stream, the device's, once the stream reaches it. */
static void produce_marker_locked(unsigned flags, uint64_t id, const char *name, int device, int stream)
{
    emu_activity a = { .kind = EMU_REC_MARKER };
    a.start = a.end = device_now();
    a.u.marker.flags = flags | (device >= 0 ? EMU_MARK_ON_STREAM : 0);
    a.u.marker.id = id;
    a.u.marker.name = name;
    a.u.marker.process = process_id();
    a.u.marker.thread = system_tid();
    produce_now_locked(&a);
    if (device < 0 || !admit_locked(&a))
        return;
    emu_activity d = a;
    d.u.marker.flags |= EMU_MARK_SOURCE_DEVICE;
    d.u.marker.name = "";
    d.device = (uint32_t)device;
    d.stream = (uint32_t)stream;
    schedule_locked(device, stream, 0, &d.start, &d.end);
    G.stats.records[EMU_KIND_MARKER]++;
    pending_rec p = { .a = d, .ready_at = d.end, .lane = my_lane() };
    if (vec_push(&G.pending, &p) != 0)
        write_record_locked(&d, 0, p.lane);
}

static int marker_place_ok(int device, int stream)
{
    return device == -1 || (device_ok(device) && stream >= 0 && stream < EMU_MAX_STREAMS);
}

EMU_API int emu_range_start(const char *name, int device, int stream, uint64_t *id)
{
    emu_init();
    if (!id || !marker_place_ok(device, stream))
        return EMU_EINVAL;
    pthread_mutex_lock(&G.lock);
    if (grow_for_one((void **)&G.ranges, &G.range_cap, G.range_n, sizeof *G.ranges, 16) != 0) {
        pthread_mutex_unlock(&G.lock);
        return EMU_EINVAL;
    }
    *id = atomic_fetch_add(&g_next_mark, 1);
    G.ranges[G.range_n++] = (struct open_range){ *id, device, stream };
    const char *n = intern_name(name);
    produce_marker_locked(EMU_MARK_START, *id, n ? n : "", device, stream);
    update_pending_stat_locked();
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

EMU_API int emu_range_end(uint64_t id)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    size_t i = 0;
    while (i < G.range_n && G.ranges[i].id != id)
        i++;
    if (i == G.range_n) {
        pthread_mutex_unlock(&G.lock);
        return EMU_EINVAL; /* never started, or ended already */
    }
    struct open_range r = G.ranges[i];
    G.ranges[i] = G.ranges[--G.range_n];
    produce_marker_locked(EMU_MARK_END, id, "", r.device, r.stream);
    update_pending_stat_locked();
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

EMU_API int emu_mark(const char *name, int device, int stream)
{
    emu_init();
    if (!marker_place_ok(device, stream))
        return EMU_EINVAL;
    pthread_mutex_lock(&G.lock);
    const char *n = intern_name(name);
    produce_marker_locked(EMU_MARK_INSTANT, atomic_fetch_add(&g_next_mark, 1), n ? n : "", device, stream);
    update_pending_stat_locked();
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

static uint64_t collective_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const emu_collective_desc *c = arg;
    (void)api_start;
    pthread_mutex_lock(&G.lock);
    emu_activity a = { .kind = EMU_REC_COLLECTIVE, .correlation = corr };
    a.device = (uint32_t)c->device;
    a.context = (uint32_t)c->device + 1;
    a.stream = (uint32_t)c->stream;
    schedule_locked(c->device, c->stream, c->duration_ns, &a.start, &a.end);
    const char *name = intern_name(c->name), *group = intern_name(c->group), *alg = intern_name(c->algorithm);
    a.u.collective.name = name ? name : "";
    a.u.collective.group = group ? group : "";
    a.u.collective.algorithm = alg ? alg : "";
    a.u.collective.data_type = c->data_type;
    a.u.collective.count = c->count;
    produce_device_locked(&a);
    pthread_mutex_unlock(&G.lock);
    return 0;
}

typedef struct memory_work {
    struct live_block block;
    int is_free;
} memory_work;

/* The record of an allocation or free: the host-side record of the call,
   written at once. */
static uint64_t memory_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const memory_work *w = arg;
    pthread_mutex_lock(&G.lock);
    emu_activity a = { .kind = EMU_REC_MEMORY, .correlation = corr, .start = api_start, .end = device_now() };
    a.device = (uint32_t)w->block.device;
    a.context = (uint32_t)w->block.device + 1;
    a.u.memory.address = w->block.address;
    a.u.memory.bytes = w->block.bytes;
    a.u.memory.memory = w->block.memory;
    a.u.memory.is_free = w->is_free;
    a.u.memory.process = process_id();
    produce_now_locked(&a);
    pthread_mutex_unlock(&G.lock);
    return 0;
}

EMU_API int emu_malloc(int device, int memory, uint64_t bytes, uint64_t *address)
{
    emu_init();
    if (!address || !device_ok(device) || (memory != EMU_MEM_DEVICE && memory != EMU_MEM_PINNED) || bytes == 0 ||
        bytes > (UINT64_C(1) << 40))
        return EMU_EINVAL;
    pthread_mutex_lock(&G.lock);
    if (grow_for_one((void **)&G.blocks, &G.block_cap, G.block_n, sizeof *G.blocks, 16) != 0) {
        pthread_mutex_unlock(&G.lock);
        return EMU_EINVAL;
    }
    /* 2 MB-aligned, as the device allocator hands out large blocks */
    if (!G.next_address) G.next_address = UINT64_C(0x124000000000);
    memory_work w = { { G.next_address, bytes, device, memory }, 0 };
    G.next_address += (bytes + (UINT64_C(1) << 21) - 1) & ~((UINT64_C(1) << 21) - 1);
    G.blocks[G.block_n++] = w.block;
    pthread_mutex_unlock(&G.lock);
    *address = w.block.address;
    emu_call_args args = { .op = EMU_OP_MALLOC, .bytes = bytes, .device = device };
    return api_call(&args, NULL, memory_work_fn, &w);
}

EMU_API int emu_free(uint64_t address)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    size_t i = 0;
    while (i < G.block_n && G.blocks[i].address != address)
        i++;
    if (i == G.block_n) {
        pthread_mutex_unlock(&G.lock);
        return EMU_EINVAL;
    }
    memory_work w = { G.blocks[i], 1 };
    G.blocks[i] = G.blocks[--G.block_n];
    pthread_mutex_unlock(&G.lock);
    emu_call_args args = { .op = EMU_OP_FREE, .bytes = w.block.bytes, .device = w.block.device };
    return api_call(&args, NULL, memory_work_fn, &w);
}

typedef struct pool_work {
    int device, op;
    uint64_t address, bytes;
} pool_work;

/* A pool's record: the host-side record of the call, written at once. */
static uint64_t pool_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const pool_work *w = arg;
    pthread_mutex_lock(&G.lock);
    emu_activity a = { .kind = EMU_REC_MEMORY_POOL, .correlation = corr, .start = api_start, .end = device_now() };
    a.device = (uint32_t)w->device;
    a.context = (uint32_t)w->device + 1;
    a.u.memory.address = w->address;
    a.u.memory.bytes = w->bytes;
    a.u.memory.memory = EMU_MEM_DEVICE;
    a.u.memory.pool_op = w->op;
    a.u.memory.process = process_id();
    produce_now_locked(&a);
    pthread_mutex_unlock(&G.lock);
    return 0;
}

EMU_API int emu_memory_pool(int device, int op, uint64_t address, uint64_t bytes)
{
    emu_init();
    static const emu_op ops[] = {[EMU_POOL_CREATED] = EMU_OP_MEM_POOL_CREATE,
                                 [EMU_POOL_DESTROYED] = EMU_OP_MEM_POOL_DESTROY,
                                 [EMU_POOL_TRIMMED] = EMU_OP_MEM_POOL_TRIM};
    if (!device_ok(device) || op < EMU_POOL_CREATED || op > EMU_POOL_TRIMMED || !address)
        return EMU_EINVAL;
    pool_work w = { device, op, address, bytes };
    emu_call_args args = { .op = ops[op], .bytes = bytes, .device = device };
    /* a vendor with no such call makes no record either */
    if (emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, ops[op], 0) || emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, ops[op], 0))
        api_call(&args, NULL, pool_work_fn, &w);
    return EMU_OK;
}

typedef struct graph_work {
    const emu_kernel_desc *d;
    int kernels;
} graph_work;

static uint64_t graph_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    graph_work *g = arg;
    kernel_work one = { g->d };
    for (int i = 0; i < g->kernels; i++)
        kernel_work_fn(&one, corr, api_start);
    return 0;
}

EMU_API int emu_graph_launch(int device, int stream, int kernels, uint64_t duration_ns)
{
    emu_init();
    if (!device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS || kernels < 1 || kernels > 64)
        return EMU_EINVAL;
    emu_kernel_desc d = { .device = device, .stream = stream, .name = "graph_kernel", .grid = {1, 1, 1},
                          .block = {1, 1, 1}, .duration_ns = duration_ns };
    graph_work w = { &d, kernels };
    emu_call_args args = { .op = EMU_OP_GRAPH_LAUNCH, .device = device, .stream = stream };
    /* a vendor with no such call launches nothing */
    if (emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, EMU_OP_GRAPH_LAUNCH, 0) ||
        emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, EMU_OP_GRAPH_LAUNCH, 0))
        api_call(&args, NULL, graph_work_fn, &w);
    return EMU_OK;
}

EMU_API int emu_collective(const emu_collective_desc *desc)
{
    emu_init();
    if (!desc || !device_ok(desc->device) || desc->stream < 0 || desc->stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    emu_call_args args = { .op = EMU_OP_COLLECTIVE, .device = desc->device, .stream = desc->stream };
    return api_call(&args, NULL, collective_work_fn, (void *)desc);
}

/* ------------------------------------------------------------------ */
/* The null client                                                     */
/* ------------------------------------------------------------------ */
/* Arms what a tracer arms (every record kind, both callback domains, a
   client's buffers), walks each completed buffer with the vendor's iterator
   and decodes nothing: what the vendor side of tracing costs, measured apart
   from the tracer's own work. Its callback and completion functions are
   markers the core recognises, so no vendor signature is needed. */
#define NULL_CLIENT_BUFFERS 8
#define NULL_CLIENT_BUFFER_SIZE (4u << 20)

static struct {
    uint8_t *bufs[NULL_CLIENT_BUFFERS];
    uint8_t *free[NULL_CLIENT_BUFFERS];
    int free_n;
    emu_request_fn saved_request; /* a client registered before, restored after */
    emu_generic_fn saved_complete;
} N;

static void null_client_callback(void) {}
static void null_client_complete(void) {}

static void null_client_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* state lock held */
    *buffer = N.free_n ? N.free[--N.free_n] : NULL;
    *size = *buffer ? NULL_CLIENT_BUFFER_SIZE : 0;
    *max_records = 0;
}

static void null_client_complete_buffer(uint8_t *buf, size_t valid)
{
    /* a client walks every record with the vendor's iterator: that is the
       vendor's cost too */
    if (buf && emu_vendor_impl.null_client_buffer) {
        emu_vendor_impl.null_client_buffer(buf, valid);
    } else {
        uint8_t *rec = NULL;
        size_t records = 0;
        while (buf && emu_core_next_record(buf, valid, &rec) == EMU_ST_OK) records++;
        __asm__ __volatile__("" ::"r"(records));
    }
    pthread_mutex_lock(&G.lock);
    if (buf && N.free_n < NULL_CLIENT_BUFFERS)
        N.free[N.free_n++] = buf;
    pthread_mutex_unlock(&G.lock);
}

static void null_client_arm_locked(int on)
{
    for (int k = 0; k < EMU_REC_UNKNOWN; k++)
        if (emu_vendor_impl.record_size((emu_rec_kind)k))
            G.enabled[k] = on;
    set_subscriber_locked(on, on ? null_client_callback : NULL, NULL);
    for (int d = 0; d < EMU_DOMAIN_COUNT; d++)
        G.domain_on[d] = on;
    /* as a tracer filters them: the call-configuration calls around every
       CUDA 13 launch, which launch nothing */
    static const emu_op bookkeeping[] = {EMU_OP_PUSH_CALL_CONFIGURATION, EMU_OP_POP_CALL_CONFIGURATION};
    memset(G.api_off, 0, sizeof G.api_off);
    for (size_t i = 0; on && i < sizeof bookkeeping / sizeof *bookkeeping; i++) {
        uint32_t cbid = emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, bookkeeping[i], 0);
        if (cbid && cbid < EMU_API_FILTER_IDS)
            G.api_off[EMU_DOMAIN_RUNTIME][cbid / 8] |= (uint8_t)(1u << (cbid % 8));
    }
}

EMU_API int emu_null_client(int on)
{
    emu_init();
    pthread_mutex_lock(&G.lock);
    int armed = G.request == null_client_request;
    if (on && !armed) {
        /* A client that registered buffers but records nothing (a tracer
           that stopped; vendors keep the registration) is set aside. */
        int recording = G.subscribed;
        for (int k = 0; k < EMU_REC_COUNT; k++)
            recording |= G.enabled[k];
        if (recording) {
            pthread_mutex_unlock(&G.lock);
            return EMU_EINVAL;
        }
        for (int i = 0; i < NULL_CLIENT_BUFFERS; i++) {
            if (!N.bufs[i] && !(N.bufs[i] = aligned_alloc(64, NULL_CLIENT_BUFFER_SIZE))) {
                pthread_mutex_unlock(&G.lock);
                return EMU_EINVAL;
            }
            N.free[i] = N.bufs[NULL_CLIENT_BUFFERS - 1 - i];
        }
        N.free_n = NULL_CLIENT_BUFFERS;
        N.saved_request = G.request;
        N.saved_complete = G.complete;
        G.request = null_client_request;
        G.complete = null_client_complete;
        g_null_client_keeps_id = on != EMU_NULL_CLIENT_NO_IDS;
        null_client_arm_locked(1);
        start_worker_locked();
    } else if (!on && armed) {
        null_client_arm_locked(0);
        pthread_mutex_unlock(&G.lock);
        emu_core_flush_all(1);
        pthread_mutex_lock(&G.lock);
        G.request = N.saved_request;
        G.complete = N.saved_complete;
    }
    pthread_mutex_unlock(&G.lock);
    return EMU_OK;
}

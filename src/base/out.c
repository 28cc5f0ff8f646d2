#include "base/out.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#if DT_HAVE_ZLIB
#include <zlib.h>
#endif

/* Buffers per producer: one being filled, one being written, spares so
   that neither side waits for the other on every hand-over, and room for a
   second producer's unit to be formatted while the first one's drains. */
#define DRAIN_BUFFERS 4
/* gzip's lanes: one z_stream compresses for all of them, on the drain
   thread, and bounds the output long before a third would help */
#define PRODUCERS 2

/* A producer's full buffers in order, and its empty ones. */
typedef struct drain_ring {
    char *buf[DRAIN_BUFFERS];
    size_t len[DRAIN_BUFFERS];
    uint32_t segment[DRAIN_BUFFERS];
    uint8_t last[DRAIN_BUFFERS];        /* the segment's last buffer */
    int head, count;
    char *spare[DRAIN_BUFFERS];
    int spare_count;
} drain_ring;

struct dt_out_drain {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t filled, emptied;
    char *bufs[PRODUCERS * DRAIN_BUFFERS]; /* all of them, o->buf among them */
    int nbufs;
    drain_ring ring[PRODUCERS];
    uint32_t segment;                   /* the segment being written */
    int done;                           /* no more buffers will come */
    int err;                            /* the drain's first errno */
};

/* Plain output formatted on several lanes: no drain thread. The lane that
   formatted a unit writes it, once every earlier unit is written: the turn
   passes from unit to unit. Its bytes are still in that core's cache, and
   the cores run the lanes only, not a third thread besides them. A unit
   bigger than a lane's buffer waits for its turn at the first full buffer
   and keeps it to its end. */
typedef struct dt_out_turn {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    size_t next;                        /* the unit whose bytes go next */
    int err;                            /* the first error of any lane */
} dt_out_turn;

const char dt__digit_pairs[200] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

int dt__gzip_available(void)
{
    return DT_HAVE_ZLIB;
}

#if DT_HAVE_ZLIB
/* zlib's own allocations go through the library's, like every other. */
static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return dt__calloc(items, size);
}

static void zlib_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    dt__free(p);
}
#endif

/* The writing side takes its error variable apart: once the drain thread
   runs, the filling thread must not read what that thread writes. */
static void write_all(const dt_out *o, const void *p, size_t n, int *err)
{
    const char *c = p;
    while (n > 0 && *err == 0) {
        ssize_t w = write(o->fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            *err = errno;
            return;
        }
        if (w == 0) {
            *err = EIO;
            return;
        }
        c += w;
        n -= (size_t)w;
    }
}

#if DT_HAVE_ZLIB
static void deflate_some(const dt_out *o, const void *p, size_t n, int flush, int *err)
{
    z_stream *zs = o->zs;
    zs->next_in = (Bytef *)(uintptr_t)p;
    zs->avail_in = (uInt)n;
    for (;;) {
        zs->next_out = o->zbuf;
        zs->avail_out = (uInt)o->zcap;
        int rc = deflate(zs, flush);
        if (rc == Z_STREAM_ERROR) {
            *err = EIO;
            return;
        }
        size_t have = o->zcap - zs->avail_out;
        if (have)
            write_all(o, o->zbuf, have, err);
        if (*err)
            return;
        if (flush == Z_FINISH) {
            if (rc == Z_STREAM_END)
                return;
        } else if (zs->avail_in == 0 && zs->avail_out != 0) {
            return;
        }
    }
}
#else
enum { Z_NO_FLUSH, Z_FINISH };
static void deflate_some(const dt_out *o, const void *p, size_t n, int flush, int *err)
{
    (void)o, (void)p, (void)n, (void)flush;
    *err = ENOTSUP; /* dt__out_init refused gzip */
}
#endif

int dt__out_init(dt_out *o, int fd, int gzip, int level, size_t buffer_size)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->gzip = gzip;
    o->cap = buffer_size;
    o->buf = dt__malloc(buffer_size);
    if (!o->buf)
        return -1;
    if (gzip) {
#if !DT_HAVE_ZLIB
        dt__out_free(o);
        return -1;
#else
        z_stream *zs = dt__calloc(1, sizeof *zs);
        o->zcap = buffer_size / 2;
        o->zbuf = dt__malloc(o->zcap);
        if (!zs || !o->zbuf) {
            dt__free(zs);
            dt__out_free(o);
            return -1;
        }
        zs->zalloc = zlib_alloc;
        zs->zfree = zlib_free;
        /* windowBits 15 + 16: a gzip wrapper, which gzip and browsers read. */
        if (deflateInit2(zs, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            dt__free(zs);
            dt__out_free(o);
            return -1;
        }
        o->zs = zs;
#endif
    }
    return 0;
}

/* Write (or compress and write) one full buffer. On the drain thread once
   it runs: only it touches the file and the z_stream then. */
static void drain_buffer(const dt_out *o, const char *p, size_t n, int *err)
{
    if (n == 0)
        return;
    if (o->gzip)
        deflate_some(o, p, n, Z_NO_FLUSH, err);
    else
        write_all(o, p, n, err);
}

/* The ring whose next buffer is to be written: the one holding the
   segment being written, or after an error any (its bytes are dropped). */
static drain_ring *drain_next(dt_out_drain *d)
{
    for (int p = 0; p < PRODUCERS; p++) {
        drain_ring *r = &d->ring[p];
        if (r->count > 0 && (d->err || r->segment[r->head] == d->segment))
            return r;
    }
    return NULL;
}

static void *drain_main(void *arg)
{
    dt_out *o = arg;
    dt_out_drain *d = o->drain;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        drain_ring *r = drain_next(d);
        if (!r) {
            int pending = 0;
            for (int p = 0; p < PRODUCERS; p++)
                pending += d->ring[p].count;
            if (d->done && pending == 0)
                break;
            if (d->done) {
                /* a segment that never came: the output is incomplete */
                d->err = EIO;
                continue;
            }
            pthread_cond_wait(&d->filled, &d->lock);
            continue;
        }
        char *buf = r->buf[r->head];
        size_t n = r->len[r->head];
        int last = r->last[r->head];
        int err = d->err;
        pthread_mutex_unlock(&d->lock);
        if (!err)
            drain_buffer(o, buf, n, &err);
        pthread_mutex_lock(&d->lock);
        if (err && !d->err)
            d->err = err;
        if (last)
            d->segment++;
        r->head = (r->head + 1) % DRAIN_BUFFERS;
        r->count--;
        r->spare[r->spare_count++] = buf;
        pthread_cond_broadcast(&d->emptied);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* Its synchronisation and every buffer (o->buf among them once started). */
static void drain_free(dt_out_drain *d)
{
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->filled);
    pthread_cond_destroy(&d->emptied);
    for (int i = 0; i < d->nbufs; i++)
        dt__free(d->bufs[i]);
    dt__free(d);
}

/* Spare buffers of cap bytes for producer p, up to `spares`; 0, or -1
   when memory cannot be had (those made stay the drain's). */
static int drain_add_buffers(dt_out_drain *d, int p, size_t cap, int spares)
{
    drain_ring *r = &d->ring[p];
    while (r->spare_count < spares && d->nbufs < PRODUCERS * DRAIN_BUFFERS) {
        char *b = dt__malloc(cap);
        if (!b)
            return -1;
        d->bufs[d->nbufs++] = b;
        r->spare[r->spare_count++] = b;
    }
    return r->spare_count < spares ? -1 : 0;
}

/* Start the drain thread with buffers besides o->buf; 0, or -1 (and
   nothing started) when memory or a thread cannot be had. */
static int drain_start(dt_out *o)
{
    dt_out_drain *d = dt__calloc(1, sizeof *d);
    if (!d)
        return -1;
    d->bufs[d->nbufs++] = o->buf;
    if (drain_add_buffers(d, 0, o->cap, DRAIN_BUFFERS - 1) != 0) {
        for (int k = 1; k < d->nbufs; k++)
            dt__free(d->bufs[k]);
        dt__free(d);
        return -1;
    }
    d->segment = o->segment;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->filled, NULL);
    pthread_cond_init(&d->emptied, NULL);
    o->drain = d;
    /* the thread reads o->fd, o->zs...: set before it starts */
    if (dt__thread_create(&d->thread, drain_main, o) != 0) {
        o->drain = NULL;
        d->nbufs = 1;
        d->bufs[0] = NULL; /* still o->buf */
        for (int k = 0; k < d->ring[0].spare_count; k++)
            dt__free(d->ring[0].spare[k]);
        drain_free(d);
        return -1;
    }
    return 0;
}

/* Wait for the drain to write everything handed over and stop it. The
   writer's error becomes the output's. */
static void drain_stop(dt_out *o)
{
    dt_out_drain *d = o->drain;
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    d->done = 1;
    pthread_cond_signal(&d->filled);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    if (d->err && !o->err)
        o->err = d->err;
}

/* Hand o's buffer to the drain (last: as the end of its segment) and take
   an empty one. */
static void drain_hand_over(dt_out *o, int last)
{
    dt_out_drain *d = o->drain;
    drain_ring *r = &d->ring[o->producer];
    pthread_mutex_lock(&d->lock);
    int at = (r->head + r->count) % DRAIN_BUFFERS;
    r->buf[at] = o->buf;
    r->len[at] = o->len;
    r->segment[at] = o->segment;
    r->last[at] = (uint8_t)last;
    r->count++;
    pthread_cond_signal(&d->filled);
    while (r->spare_count == 0)
        pthread_cond_wait(&d->emptied, &d->lock);
    o->buf = r->spare[--r->spare_count];
    if (d->err && !o->err)
        o->err = d->err; /* stop formatting what cannot be written */
    pthread_mutex_unlock(&d->lock);
    o->len = 0;
}

/* Wait for o's unit's turn; 0, or the error that ended the output. */
static int turn_take(dt_out *o)
{
    dt_out_turn *t = o->turn;
    if (o->holding)
        return 0;
    pthread_mutex_lock(&t->lock);
    while (t->next != o->unit && !t->err)
        pthread_cond_wait(&t->moved, &t->lock);
    int err = t->err;
    pthread_mutex_unlock(&t->lock);
    o->holding = err == 0;
    return err;
}

/* The first error of any thread, kept under its lock with the waiters
   woken (the drain's or the turn's), and o's own. */
static void share_error(dt_out *o, pthread_mutex_t *lock, pthread_cond_t *wake, int *first, int err)
{
    pthread_mutex_lock(lock);
    if (!*first)
        *first = err;
    pthread_cond_broadcast(wake);
    pthread_mutex_unlock(lock);
    if (!o->err)
        o->err = err;
}

static void turn_fail(dt_out *o, int err)
{
    share_error(o, &o->turn->lock, &o->turn->moved, &o->turn->err, err);
}

/* Write what o holds in its unit's turn. */
static void turn_write(dt_out *o)
{
    int err = o->err ? o->err : turn_take(o);
    if (!err)
        write_all(o, o->buf, o->len, &err);
    if (err)
        turn_fail(o, err);
    o->len = 0;
}

/* The end of o's unit: its last bytes written, the turn passed on. */
static void turn_pass(dt_out *o)
{
    o->bytes += o->len;
    turn_write(o);
    if (o->err) {
        o->holding = 0;
        return; /* the turn stays where it is: every lane stops */
    }
    dt_out_turn *t = o->turn;
    pthread_mutex_lock(&t->lock);
    t->next = o->unit + 1;
    pthread_cond_broadcast(&t->moved);
    pthread_mutex_unlock(&t->lock);
    o->holding = 0;
}

void dt__out_flush(dt_out *o)
{
    if (o->len == 0)
        return;
    o->bytes += o->len;
    if (o->err != 0) {
        o->len = 0;
        return;
    }
    if (o->turn) {
        turn_write(o);
        return;
    }
    if (!o->drain && drain_start(o) != 0) {
        drain_buffer(o, o->buf, o->len, &o->err);
        o->len = 0;
        return;
    }
    drain_hand_over(o, 0);
}

/* Ends o's segment: what it holds goes to the drain as the segment's last
   buffer, and o goes on with segment `next`. */
static void end_segment(dt_out *o, uint32_t next)
{
    o->bytes += o->len;
    drain_hand_over(o, 1);
    o->segment = next;
}

/* An error of a formatting lane: the drain stops writing, and every lane
   sees it at its next hand-over. */
static void fail_output(dt_out *o, int err)
{
    share_error(o, &o->drain->lock, &o->drain->filled, &o->drain->err, err);
}

typedef struct lane_run {
    dt_out out;
    size_t units;
    int lane, lanes;
    uint32_t first_segment;    /* unit 0's */
    int (*format)(void *arg, dt_out *out, size_t unit, int lane);
    void *arg;
} lane_run;

/* The units of one lane, each its own segment. */
static void run_lane(lane_run *lr)
{
    for (size_t u = (size_t)lr->lane; u < lr->units; u += (size_t)lr->lanes) {
        lr->out.segment = lr->first_segment + (uint32_t)u;
        int err = lr->out.err ? 0 : lr->format(lr->arg, &lr->out, u, lr->lane);
        if (err)
            fail_output(&lr->out, err);
        end_segment(&lr->out, lr->out.segment);
    }
}

/* The units of one lane, each written by the lane in its turn. */
static void run_lane_in_turn(lane_run *lr)
{
    for (size_t u = (size_t)lr->lane; u < lr->units; u += (size_t)lr->lanes) {
        lr->out.unit = u;
        int err = lr->out.err ? 0 : lr->format(lr->arg, &lr->out, u, lr->lane);
        if (err)
            turn_fail(&lr->out, err);
        turn_pass(&lr->out);
    }
}

static void *lane_main(void *arg)
{
    lane_run *lr = arg;
    if (lr->out.turn)
        run_lane_in_turn(lr);
    else
        run_lane(lr);
    return NULL;
}

/* Wait until the drain has written everything handed to it: o's buffer
   among it. */
static void drain_sync(dt_out *o)
{
    dt_out_drain *d = o->drain;
    dt__out_flush(o);
    pthread_mutex_lock(&d->lock);
    for (;;) {
        int pending = 0;
        for (int p = 0; p < PRODUCERS; p++)
            pending += d->ring[p].count;
        if (pending == 0)
            break;
        pthread_cond_wait(&d->emptied, &d->lock);
    }
    if (d->err && !o->err)
        o->err = d->err;
    pthread_mutex_unlock(&d->lock);
}

/* dt__out_units for plain output on `lanes` lanes, each writing its own
   units in their turn. -1 when no second lane could be had (nothing
   formatted then), else 0 or the first error. */
static int units_in_turn(dt_out *o, size_t units, int lanes,
                         int (*format)(void *arg, dt_out *out, size_t unit, int lane), void *arg)
{
    /* what o holds goes first, and nothing may be left with the drain */
    if (o->drain) {
        drain_sync(o);
    } else if (o->len && !o->err) {
        o->bytes += o->len;
        write_all(o, o->buf, o->len, &o->err);
        o->len = 0;
    }
    if (o->err)
        return o->err;
    lane_run run[DT_OUT_MAX_LANES];
    pthread_t helper[DT_OUT_MAX_LANES];
    memset(run, 0, sizeof run);
    dt_out_turn turn = {.next = 0};
    /* a buffer for each lane besides the caller's: fewer lanes where
       memory runs short, none when there is none */
    int made = 1;
    for (; made < lanes; made++) {
        run[made].out.fd = o->fd;
        run[made].out.cap = o->cap;
        run[made].out.buf = dt__malloc(o->cap);
        if (!run[made].out.buf)
            break;
    }
    if (made < 2)
        return -1;
    pthread_mutex_init(&turn.lock, NULL);
    pthread_cond_init(&turn.moved, NULL);
    run[0].out = *o;
    for (int k = 0; k < made; k++) {
        run[k].out.turn = &turn;
        run[k].units = units;
        run[k].lane = k;
        run[k].lanes = made;
        run[k].format = format;
        run[k].arg = arg;
    }
    /* every lane must run: a unit's turn waits for the units before it */
    int started = 1;
    while (started < made && dt__thread_create(&helper[started], lane_main, &run[started]) == 0)
        started++;
    int rc = -1;
    if (started == made) {
        run_lane_in_turn(&run[0]);
        rc = 0;
    } else {
        /* the lanes started wait for unit 0's turn, which never comes:
           stop them (nothing has been written) and let one thread do it */
        turn_fail(&run[0].out, EAGAIN);
    }
    for (int k = 1; k < started; k++)
        pthread_join(helper[k], NULL);
    if (rc == 0) {
        o->len = 0;
        o->bytes = 0;
        for (int k = 0; k < made; k++)
            o->bytes += run[k].out.bytes;
        o->err = turn.err;
        rc = o->err;
    }
    pthread_cond_destroy(&turn.moved);
    pthread_mutex_destroy(&turn.lock);
    for (int k = 1; k < made; k++)
        dt__free(run[k].out.buf);
    return rc;
}

int dt__out_lane_limit;

int dt__out_lanes(void)
{
    if (dt__out_lane_limit > 0)
        return dt__out_lane_limit < DT_OUT_MAX_LANES ? dt__out_lane_limit : DT_OUT_MAX_LANES;
    long n = 0;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n < DT_OUT_MAX_LANES ? (int)n : DT_OUT_MAX_LANES;
}

int dt__out_units(dt_out *o, size_t units, int lanes, int (*format)(void *arg, dt_out *out, size_t unit, int lane),
                 void *arg)
{
    if (units < 2 || o->err || lanes < 1)
        lanes = 1;
    if ((size_t)lanes > units)
        lanes = (int)units;
    if (lanes > DT_OUT_MAX_LANES)
        lanes = DT_OUT_MAX_LANES;
    if (lanes >= 2 && !o->gzip) {
        int rc = units_in_turn(o, units, lanes, format, arg);
        if (rc >= 0)
            return rc;
        lanes = 1;
    }
    if (lanes > PRODUCERS)
        lanes = PRODUCERS;
    if (lanes >= 2 && !o->drain && drain_start(o) != 0)
        lanes = 1;
    dt_out_drain *d = o->drain;
    lane_run run[2];
    memset(run, 0, sizeof run);
    uint32_t first = o->segment + 1;
    pthread_t helper;
    if (lanes >= 2) {
        dt_out *lo = &run[1].out;
        lo->fd = o->fd;
        lo->gzip = o->gzip;
        lo->cap = o->cap;
        lo->drain = d;
        lo->producer = 1;
        pthread_mutex_lock(&d->lock);
        if (drain_add_buffers(d, 1, o->cap, DRAIN_BUFFERS) == 0)
            lo->buf = d->ring[1].spare[--d->ring[1].spare_count];
        pthread_mutex_unlock(&d->lock);
        lanes = lo->buf ? 2 : 1;
    }
    for (int k = 0; k < 2; k++) {
        run[k].units = units;
        run[k].lane = k;
        run[k].lanes = lanes;
        run[k].first_segment = first;
        run[k].format = format;
        run[k].arg = arg;
    }
    if (lanes >= 2) {
        /* what o holds closes the segment before the units */
        end_segment(o, first);
        if (dt__thread_create(&helper, lane_main, &run[1]) != 0) {
            lanes = 1;
            run[0].lanes = 1;
        }
    }
    if (lanes < 2) {
        /* in order on the caller's thread, in o's segment */
        for (size_t u = 0; u < units && !o->err; u++) {
            int err = format(arg, o, u, 0);
            if (err && !o->err)
                o->err = err;
        }
        return o->err;
    }
    /* lane 0 formats into a copy of o, whose fields the drain thread
       reads (fd, z_stream): only what formatting changes comes back */
    run[0].out = *o;
    run_lane(&run[0]);
    pthread_join(helper, NULL);
    o->buf = run[0].out.buf;
    o->len = run[0].out.len;
    o->bytes = run[0].out.bytes;
    o->err = run[0].out.err;
    /* the lane's buffer goes back for a later call */
    pthread_mutex_lock(&d->lock);
    d->ring[1].spare[d->ring[1].spare_count++] = run[1].out.buf;
    pthread_mutex_unlock(&d->lock);
    o->segment = first + (uint32_t)units;
    o->bytes += run[1].out.bytes;
    if (run[1].out.err && !o->err)
        o->err = run[1].out.err;
    return o->err;
}

void dt__out_write(dt_out *o, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        if (o->len == o->cap)
            dt__out_flush(o);
        size_t room = o->cap - o->len;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->len, c, k);
        o->len += k;
        c += k;
        n -= k;
    }
}

int dt__out_finish(dt_out *o)
{
    if (o->drain) {
        dt__out_flush(o);
        drain_stop(o);
    } else if (o->len && o->err == 0) {
        /* all of it fit in one buffer: no thread for that */
        o->bytes += o->len;
        drain_buffer(o, o->buf, o->len, &o->err);
        o->len = 0;
    }
    if (o->gzip && o->err == 0)
        deflate_some(o, "", 0, Z_FINISH, &o->err);
    return o->err;
}

void dt__out_free(dt_out *o)
{
    if (o->drain) {
        dt_out_drain *d = o->drain;
        if (!d->done)
            drain_stop(o); /* finish was not called: still join the thread */
        drain_free(d); /* o->buf is one of its buffers */
        o->drain = NULL;
        o->buf = NULL;
    }
#if DT_HAVE_ZLIB
    if (o->zs) {
        deflateEnd(o->zs);
        dt__free(o->zs);
    }
#endif
    dt__free(o->zbuf);
    dt__free(o->buf);
    o->zs = NULL;
    o->zbuf = NULL;
    o->buf = NULL;
}

char *dt__put_fixed(char *p, uint64_t scaled, unsigned decimals)
{
    uint64_t div = 1;
    for (unsigned i = 0; i < decimals; i++)
        div *= 10;
    uint64_t ip = scaled / div, frac = scaled % div;
    p = dt__put_u64(p, ip);
    if (frac == 0)
        return p;
    *p++ = '.';
    char digits[20];
    for (unsigned i = decimals; i > 0; i--) {
        digits[i - 1] = (char)('0' + frac % 10);
        frac /= 10;
    }
    unsigned n = decimals;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    memcpy(p, digits, n);
    return p + n;
}

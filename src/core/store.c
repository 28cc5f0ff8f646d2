/* The event store: fixed-size records in 4 MiB chunks, never moved.

   The first touch of a fresh page is the main cost of storing a record (on
   the development machine a 4 KiB page costs 1.3 to 3 us to fault in: about
   as much as decoding its 64 records). Two things keep that cost off the
   thread that decodes vendor buffers:
   - chunks a store frees are kept, up to DT_STORE_SPARE_MAX, for the next
     store of the process (a session that starts again, the next session);
   - while a session records and its store grows, a preparer thread keeps
     DT_STORE_AHEAD chunks faulted in ahead of need (it costs that thread's
     CPU time instead: the same work, on another core when there is one).
   (Transparent huge pages were measured slower here: with defrag=madvise the
   first touch compacts memory.) */
#include "base/alloc.h"
#include "base/log.h"
#include "core/event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHUNK_BYTES ((size_t)DT_STORE_CHUNK * sizeof(dt_rec))

/* Spare chunks of the process: faulted in (kept from a store, or prepared),
   handed out last in, first out. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;       /* the preparer: a chunk was taken, or stop */
    dt_rec *chunks[DT_STORE_SPARE_MAX];
    size_t count;
    int preparers;             /* sessions recording: the preparer runs while > 0 */
    int growing;               /* a store has grown past its first chunk since */
    int running, stopping;
    pthread_t thread;
} g_spare = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static dt_rec *chunk_map(int populate)
{
    if (dt__alloc_injected_failure()) return NULL;
    void *m = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

/* A spare chunk, else a new one. A store that has filled a chunk is likely
   to fill the next: that one is faulted in by one call (MAP_POPULATE, about
   a fifth cheaper than page by page here), the first is not (a short
   session would pay for 4 MiB it never uses). */
static dt_rec *chunk_take(int growing)
{
    dt_rec *c = NULL;
    pthread_mutex_lock(&g_spare.lock);
    if (g_spare.count) c = g_spare.chunks[--g_spare.count];
    g_spare.growing |= growing && g_spare.preparers > 0;
    if (g_spare.running && g_spare.growing) pthread_cond_signal(&g_spare.wake);
    pthread_mutex_unlock(&g_spare.lock);
    return c ? c : chunk_map(growing);
}

static void chunk_give_back(dt_rec *c)
{
    if (!c) return;
    pthread_mutex_lock(&g_spare.lock);
    int kept = g_spare.count < DT_STORE_SPARE_MAX;
    if (kept) g_spare.chunks[g_spare.count++] = c;
    pthread_mutex_unlock(&g_spare.lock);
    if (!kept) munmap(c, CHUNK_BYTES);
}

/* Keep DT_STORE_AHEAD spare chunks while sessions record, once a store has
   grown past its first chunk (a short session never pays for 16 MiB it
   would not use). mmap with MAP_POPULATE faults a chunk in one call, cheaper
   than page by page. */
static void *preparer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_spare.lock);
    while (!g_spare.stopping) {
        if (!g_spare.growing || g_spare.count >= DT_STORE_AHEAD) {
            pthread_cond_wait(&g_spare.wake, &g_spare.lock);
            continue;
        }
        pthread_mutex_unlock(&g_spare.lock);
        dt_rec *c = chunk_map(1);
        pthread_mutex_lock(&g_spare.lock);
        if (!c) break; /* no memory: the store maps its own, and reports */
        if (g_spare.count < DT_STORE_SPARE_MAX) {
            g_spare.chunks[g_spare.count++] = c;
        } else {
            pthread_mutex_unlock(&g_spare.lock);
            munmap(c, CHUNK_BYTES);
            pthread_mutex_lock(&g_spare.lock);
        }
    }
    pthread_mutex_unlock(&g_spare.lock);
    return NULL;
}

/* fork(): the child has no preparer thread, and must not inherit the lock
   held by it or by a thread that was taking a chunk. No lock is held across
   the fork (a vendor's thread may be inside its own lock, decoding into a
   store, while the fork's handlers take theirs): the child makes the lock
   afresh and forgets the spare chunks, which a thread it does not have may
   have been moving (they stay mapped, unused). */
static void spare_atfork_child(void)
{
    pthread_mutex_init(&g_spare.lock, NULL);
    g_spare.count = 0;
    g_spare.running = 0;
    g_spare.stopping = 0;
    g_spare.preparers = 0;
    g_spare.growing = 0;
    pthread_cond_init(&g_spare.wake, NULL);
}

static pthread_once_t g_spare_once = PTHREAD_ONCE_INIT;
static void spare_init(void)
{
    pthread_atfork(NULL, NULL, spare_atfork_child);
}

void dt__store_prepare(int on)
{
    pthread_once(&g_spare_once, spare_init);
    pthread_mutex_lock(&g_spare.lock);
    g_spare.preparers += on ? 1 : -1;
    if (g_spare.preparers < 0) g_spare.preparers = 0;
    int start = g_spare.preparers > 0 && !g_spare.running;
    int stop = g_spare.preparers == 0 && g_spare.running;
    if (start) {
        g_spare.stopping = 0;
        g_spare.growing = 0;
        g_spare.running = pthread_create(&g_spare.thread, NULL, preparer_main, NULL) == 0;
    }
    pthread_t t = g_spare.thread;
    if (stop) {
        g_spare.stopping = 1;
        g_spare.running = 0;
        g_spare.growing = 0;
        pthread_cond_signal(&g_spare.wake);
    }
    pthread_mutex_unlock(&g_spare.lock);
    if (stop) pthread_join(t, NULL);
}

void dt__store_release_spares(void)
{
    pthread_mutex_lock(&g_spare.lock);
    size_t n = g_spare.count;
    dt_rec *chunks[DT_STORE_SPARE_MAX];
    memcpy(chunks, g_spare.chunks, n * sizeof *chunks);
    g_spare.count = 0;
    pthread_mutex_unlock(&g_spare.lock);
    for (size_t i = 0; i < n; i++) munmap(chunks[i], CHUNK_BYTES);
}

size_t dt__store_spare_count(void)
{
    pthread_mutex_lock(&g_spare.lock);
    size_t n = g_spare.count;
    pthread_mutex_unlock(&g_spare.lock);
    return n;
}

/* Records that fit before dt__store_push must take its slow path. */
static size_t store_room(const dt_store *st)
{
    size_t room = st->chunk_count * DT_STORE_CHUNK;
    return st->limit && st->limit < room ? (size_t)st->limit : room;
}

void dt__store_init(dt_store *st, uint64_t limit)
{
    memset(st, 0, sizeof *st);
    st->limit = limit;
}

void dt__store_free(dt_store *st)
{
    /* the last chunks written are the likeliest to be in the cache: they go
       back last, to be handed out first */
    for (size_t i = 0; i < st->chunk_count; i++) chunk_give_back(st->chunks[i]);
    dt__free(st->chunks);
    memset(st, 0, sizeof *st);
}

dt_rec *dt__store_push_slow(dt_store *st)
{
    if (st->limit && st->count >= st->limit) return NULL;
    size_t chunk = st->count >> DT_STORE_CHUNK_SHIFT;
    if (chunk == st->chunk_count) {
        if (st->chunk_count == st->chunk_cap) {
            size_t cap = st->chunk_cap ? st->chunk_cap * 2 : 16;
            dt_rec **c = dt__realloc(st->chunks, cap * sizeof *c);
            if (!c) return NULL;
            st->chunks = c;
            st->chunk_cap = cap;
        }
        dt_rec *mem = chunk_take(st->chunk_count > 0);
        if (!mem) return NULL;
        st->chunks[st->chunk_count++] = mem;
        st->room = store_room(st);
    }
    dt_rec *r = dt__store_at(st, st->count++);
    *r = (dt_rec){0};
    return r;
}

void dt__store_filter(dt_store *st, int (*keep)(dt_rec *, void *), void *arg)
{
    size_t out = 0;
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt__store_at(st, i);
        if (!keep(r, arg)) continue;
        if (out != i) *dt__store_at(st, out) = *r;
        out++;
    }
    dt__store_truncate(st, out);
}

void dt__store_truncate(dt_store *st, size_t count)
{
    if (count >= st->count) return;
    st->count = count;
    size_t need = (count + DT_STORE_CHUNK - 1) >> DT_STORE_CHUNK_SHIFT;
    while (st->chunk_count > need) chunk_give_back(st->chunks[--st->chunk_count]);
    st->room = store_room(st);
}

size_t dt__store_bytes(const dt_store *st)
{
    /* whole chunks: a prepared or recycled one is resident in full */
    return st->chunk_count * CHUNK_BYTES + st->chunk_cap * sizeof(dt_rec *);
}

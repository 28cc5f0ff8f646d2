/* Every allocation libdevtrace makes goes through here, so that tests can
   make the n-th one fail (SQLite's countdown) and prove that each failure
   ends in DT_ERR_NO_MEMORY or a counted loss, never a crash or a leak. */
#include "base/alloc.h"

#include <stdatomic.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Allocations until the one that fails: 0 disarmed; 1 the next fails. */
static _Atomic long g_countdown;
static _Atomic int g_persistent;
static _Atomic unsigned long g_made;
static _Atomic unsigned long g_failed;

void dt__alloc_fail_after(long n, int persistent)
{
    atomic_store(&g_persistent, persistent);
    atomic_store(&g_countdown, n > 0 ? n : 0);
}

unsigned long dt__alloc_count(void) { return atomic_load(&g_made); }

unsigned long dt__alloc_failures(void) { return atomic_load(&g_failed); }

int dt__alloc_injected_failure(void)
{
    atomic_fetch_add_explicit(&g_made, 1, memory_order_relaxed);
    long c = atomic_load_explicit(&g_countdown, memory_order_relaxed);
    if (c <= 0) return 0;
    if (c == 1) {
        /* one thread takes a one-shot failure */
        if (!atomic_load(&g_persistent) && !atomic_compare_exchange_strong(&g_countdown, &c, 0)) return 0;
        atomic_fetch_add(&g_failed, 1);
        return 1;
    }
    /* another thread may have moved it; losing a race only shifts which
       allocation fails */
    atomic_compare_exchange_strong(&g_countdown, &c, c - 1);
    return 0;
}

void *dt__malloc(size_t n) { return dt__alloc_injected_failure() ? NULL : malloc(n); }

void *dt__calloc(size_t count, size_t size) { return dt__alloc_injected_failure() ? NULL : calloc(count, size); }

void *dt__realloc(void *p, size_t n) { return dt__alloc_injected_failure() ? NULL : realloc(p, n); }

void *dt__aligned_alloc(size_t alignment, size_t n)
{
    if (dt__alloc_injected_failure()) return NULL;
    /* aligned_alloc wants a multiple of the alignment */
    size_t rounded = (n + alignment - 1) / alignment * alignment;
    return aligned_alloc(alignment, rounded ? rounded : alignment);
}

/* A thread's stack is memory too: the countdown fails thread creation as
   it fails an allocation, so that the paths that do without a thread are
   proved the same way. */
int dt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    return dt__alloc_injected_failure() ? EAGAIN : pthread_create(t, NULL, fn, arg);
}

char *dt__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = dt__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void dt__free(void *p) { free(p); }

/*
 * Allocation with the failure countdown (src/base/alloc.c).
 */
#ifndef DT_BASE_ALLOC_H
#define DT_BASE_ALLOC_H

#include <pthread.h>
#include <stddef.h>
#include "base/common.h"

/* Allocation: every allocation of libdevtrace goes through these
   (src/base/alloc.c), so that tests can make the n-th one fail. */
DT_HIDDEN void *dt__malloc(size_t n);
DT_HIDDEN void *dt__calloc(size_t count, size_t size);
DT_HIDDEN void *dt__realloc(void *p, size_t n);
DT_HIDDEN void *dt__aligned_alloc(size_t alignment, size_t n);
DT_HIDDEN char *dt__strdup(const char *s);
DT_HIDDEN void dt__free(void *p);
/* Test hook: the n-th allocation from now fails (n > 0), and with
   persistent every one after it too; n = 0 disarms. */
DT_HIDDEN void dt__alloc_fail_after(long n, int persistent);
/* Allocations attempted since the process started. */
DT_HIDDEN unsigned long dt__alloc_count(void);
/* Allocations the hook has made fail since the process started. */
DT_HIDDEN unsigned long dt__alloc_failures(void);
/* Counts one allocation made outside the wrappers (mmap) and says whether
   the hook makes it fail. */
DT_HIDDEN int dt__alloc_injected_failure(void);
/* pthread_create, failed by the same countdown (0 or an errno). */
DT_HIDDEN int dt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif

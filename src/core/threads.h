/*
 * Host thread names (src/core/threads.c). Internal, not installed.
 */
#ifndef DT_CORE_THREADS_H
#define DT_CORE_THREADS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

typedef struct dt_thread_name {
    uint32_t tid;
    char name[20];           /* the kernel's name: at most 15 bytes */
} dt_thread_name;

typedef struct dt_thread_names {
    pthread_mutex_t lock;
    dt_thread_name *v;
    size_t count, cap;
} dt_thread_names;

DT_HIDDEN void dt__thread_names_init(dt_thread_names *t);
DT_HIDDEN void dt__thread_names_clear(dt_thread_names *t);
DT_HIDDEN void dt__thread_names_free(dt_thread_names *t);
/* Remember the calling thread's name, once per session: cheap after the
   first call (a thread-local compare). */
DT_HIDDEN void dt__thread_note(dt_session *s);
/* Read the names of every thread still alive (at stop). */
DT_HIDDEN void dt__thread_names_sweep(dt_session *s);

#endif /* DT_CORE_THREADS_H */

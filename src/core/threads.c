/* Names of the host threads a session saw, read while the threads live: a
   trace written at exit, after worker threads ended, would otherwise only
   know their ids. */
#include "base/alloc.h"
#include "base/os.h"
#include "core/session_impl.h"
#include "core/threads.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The session generation this thread last gave its name to. */
static _Thread_local uint64_t tls_named_generation;

static dt_thread_name *find(const dt_thread_names *t, uint32_t tid)
{
    for (size_t i = 0; i < t->count; i++)
        if (t->v[i].tid == tid) return &t->v[i];
    return NULL;
}

/* Add or replace; returns 0, or -1 when memory ran out (the name is then
   simply unknown). Lock held. */
static int put(dt_thread_names *t, uint32_t tid, const char *name)
{
    dt_thread_name *e = find(t, tid);
    if (!e) {
        if (t->count == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 16;
            dt_thread_name *v = dt__realloc(t->v, cap * sizeof *v);
            if (!v) return -1;
            t->v = v;
            t->cap = cap;
        }
        e = &t->v[t->count++];
        e->tid = tid;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    return 0;
}

void dt__thread_names_init(dt_thread_names *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
}

void dt__thread_names_clear(dt_thread_names *t)
{
    pthread_mutex_lock(&t->lock);
    dt__free(t->v);
    t->v = NULL;
    t->count = t->cap = 0;
    pthread_mutex_unlock(&t->lock);
}

void dt__thread_names_free(dt_thread_names *t)
{
    dt__thread_names_clear(t);
    pthread_mutex_destroy(&t->lock);
}

void dt__thread_note(dt_session *s)
{
    if (tls_named_generation == s->sink.generation) return;
    tls_named_generation = s->sink.generation;
    char name[17] = "";
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0 || !name[0]) return;
    pthread_mutex_lock(&s->threads.lock);
    put(&s->threads, dt__thread_id(), name);
    pthread_mutex_unlock(&s->threads.lock);
}

void dt__thread_names_sweep(dt_session *s)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return;
    struct dirent *de;
    pthread_mutex_lock(&s->threads.lock);
    while ((de = readdir(d)) != NULL) {
        char *end;
        unsigned long tid = strtoul(de->d_name, &end, 10);
        /* a live thread's current name wins over the one it had earlier */
        if (*end || end == de->d_name || tid > UINT32_MAX) continue;
        char path[64], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%lu/comm", tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t n = read(fd, comm, sizeof comm - 1);
        close(fd);
        comm[n > 0 ? n : 0] = 0;
        comm[strcspn(comm, "\n")] = 0;
        if (comm[0]) put(&s->threads, (uint32_t)tid, comm);
    }
    pthread_mutex_unlock(&s->threads.lock);
    closedir(d);
}

const char *dt_session_thread_name(const dt_session *s, uint32_t tid)
{
    if (!s) return NULL;
    dt_thread_names *t = (dt_thread_names *)&s->threads;
    pthread_mutex_lock(&t->lock);
    const dt_thread_name *e = find(t, tid);
    pthread_mutex_unlock(&t->lock);
    return e ? e->name : NULL;
}

/* A session across a fork without exec: the child's session goes on from
   the fork, and the backend's hooks around the program's fork(). */
#include "core/contract.h"
#include "core/session_impl.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

int dt__g_fork_unusable;

/* A process that forks without exec has one thread in the child, and a
   copy of everything else: this session (its store holding what the parent
   recorded), the vendor's arming, and the vendor's buffers holding records
   of the parent's work still to be delivered. The session goes on as the
   child's, from the fork on: at stop it leaves out what is the parent's
   (drop_parent_records), and the trace is the child's own. Heavy work
   waits for stop; here, in an atfork child handler, only stores and
   async-signal-safe calls. Locks are made afresh: their holders may be
   threads the child does not have (the calibrator, a vendor's thread in a
   callback). The calibrator itself is not in the child: the clock is fitted
   on the parent's samples and the child's at stop. */
void dt__core_forked(dt_session *s)
{
    if (!s || s->state != DT_STATE_RUNNING) return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->fork_parent = s->pid;
    s->pid = (uint32_t)getpid();
    s->fork_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    s->fork_store_count = s->sink.store.count;
    s->window_start_ns = s->fork_ns;
    s->fork_vendor_unusable = s->backend && (s->backend->caps & DT_BACKEND_NO_FORK_CHILD);
    s->calibrator_running = 0;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->calib_lock, NULL);
    pthread_cond_init(&s->calib_cond, NULL);
    pthread_mutex_init(&s->threads.lock, NULL);
    for (int i = 0; i < DT_LOSS_COUNT; i++) atomic_store(&s->sink.loss[i], 0);
    if (s->fork_vendor_unusable) dt__g_fork_unusable = 1;
}

int dt__core_fork_vendor_unusable(const dt_session *s)
{
    return s->fork_vendor_unusable;
}

void dt__core_fork_child(dt_session *s)
{
    /* a grandchild: what its parent did holds */
    if (!s || !s->fork_vendor_unusable || s->fork_vendor_quiet) return;
    s->fork_vendor_quiet = 1;
    if (s->backend->fork_child) s->backend->fork_child(s->backend);
}

static int fork_hooks(const dt_session *s)
{
    return s && s->state == DT_STATE_RUNNING && !s->fork_vendor_unusable && s->backend &&
           (s->backend->caps & DT_BACKEND_NO_FORK_CHILD);
}

void dt__core_fork_prepare(dt_session *s)
{
    if (fork_hooks(s) && s->backend->fork_prepare) s->backend->fork_prepare(s->backend);
}

void dt__core_fork_parent(dt_session *s)
{
    if (fork_hooks(s) && s->backend->fork_parent) s->backend->fork_parent(s->backend);
}

void dt__core_fork_launch_lost(void)
{
    dt_session *s = dt__active_session();
    if (s) dt__loss_add(s, DT_LOSS_FORKED_CHILD, 1);
}

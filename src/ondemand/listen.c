/* On demand: listening, for both modes (capture and external), stopping,
   the backend a listener names, and the observer of what was served. The
   channel itself is the control protocol's server,
   src/protocol/control_server.c. */
#include "ondemand/ondemand.h"

#include "api/ondemand_support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mode_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*mode_cancel)(void);
static char mode_backend[32]; /* the backend the listening mode names ("": none) */
static dt_ctl_handler mode_handler;
static char stop_reason[128] = "this process stopped listening";

/* The observer: called under observer_lock, so that removing it waits for
   a call under way. */
static pthread_mutex_t observer_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_ondemand_observer observer;
static void *observer_ctx;

void dt__ondemand_observe(dt_ondemand_observer fn, void *ctx)
{
    pthread_mutex_lock(&observer_lock);
    observer = fn;
    observer_ctx = ctx;
    pthread_mutex_unlock(&observer_lock);
}

void dt__ondemand_backend(const char *named, char *out, size_t n)
{
    const char *last = dt__api_last_backend();
    if (named && named[0] && strcmp(named, "auto") != 0) snprintf(out, n, "%s", named);
    else snprintf(out, n, "%s", last ? last : "auto");
}

static void describe_backend(void *ctx, char *out, size_t n)
{
    (void)ctx;
    dt__ondemand_backend(mode_backend, out, n);
}

/* The mode's handler, then the observer; the reply names the backend. */
static void serve(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *res)
{
    mode_handler(ctx, req, fd, res);
    if (!res->backend[0]) dt__ondemand_backend(mode_backend, res->backend, sizeof res->backend);
    pthread_mutex_lock(&observer_lock);
    if (observer) {
        dt_ondemand_served served = {req->type, req->peer_pid, res};
        observer(observer_ctx, &served);
    }
    pthread_mutex_unlock(&observer_lock);
}

/* A process that ends while it listens cuts a capture under way short and
   writes it (the worker replies before the process is gone). */
static void stop_at_exit(void) { dt__ondemand_stop("this process is exiting"); }

static void register_again(void) { atexit(stop_at_exit); }

void dt__ondemand_exit_after_runtime(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_again);
}

dt_status dt__ondemand_listen(dt_ctl_handler handler, void *ctx, void (*cancel)(void), const char *named)
{
    static int exit_registered;
    int64_t rank, local_rank, world_size;
    dt__api_launcher_rank(&rank, &local_rank, &world_size);
    pthread_mutex_lock(&mode_lock);
    snprintf(mode_backend, sizeof mode_backend, "%s", named && strcmp(named, "auto") != 0 ? named : "");
    mode_handler = handler;
    dt_ctl_options opt = {
        .rank = rank,
        .local_rank = local_rank,
        .world_size = world_size,
        .backend = mode_backend,
        .handler = serve,
        .ctx = ctx,
        .describe_backend = describe_backend,
    };
    dt_status st = dt__ctl_listen(&opt);
    if (st == DT_OK) {
        mode_cancel = cancel;
        if (!exit_registered) exit_registered = atexit(stop_at_exit) == 0;
    }
    pthread_mutex_unlock(&mode_lock);
    return st;
}

void dt__ondemand_stop(const char *why)
{
    pthread_mutex_lock(&mode_lock);
    if (dt_control_listening()) {
        snprintf(stop_reason, sizeof stop_reason, "%s", why);
        if (mode_cancel) mode_cancel();
    }
    dt__ctl_stop();
    mode_cancel = NULL;
    pthread_mutex_unlock(&mode_lock);
}

/* read by the worker after the cancel it waits on: set before it */
const char *dt__ondemand_stop_reason(void) { return stop_reason; }

void dt_control_stop(void) { dt__ondemand_stop("this process stopped listening"); }

int dt_control_listening(void) { return dt__ctl_socket_path()[0] != 0; }

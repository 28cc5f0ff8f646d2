/* On demand: listening, for both modes (capture and external), and
   stopping. The channel itself is src/protocol/control_listen.c. */
#include "api/ondemand.h"

#include "core/jobinfo.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t mode_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*mode_cancel)(void);

dt_status dt_ondemand_listen(dt_ctl_handler handler, void *ctx, void (*cancel)(void), const char *backend)
{
    dt_rank_info rank;
    dt_rank_from_env(&rank);
    dt_ctl_options opt = {
        .rank = rank.rank,
        .local_rank = rank.local_rank,
        .world_size = rank.world_size,
        .backend = backend ? backend : "",
        .handler = handler,
        .ctx = ctx,
    };
    pthread_mutex_lock(&mode_lock);
    dt_status st = dt_ctl_listen(&opt);
    if (st == DT_OK) mode_cancel = cancel;
    pthread_mutex_unlock(&mode_lock);
    return st;
}

void dt_control_stop(void)
{
    pthread_mutex_lock(&mode_lock);
    if (dt_control_listening() && mode_cancel) mode_cancel();
    dt_ctl_stop();
    mode_cancel = NULL;
    pthread_mutex_unlock(&mode_lock);
}

int dt_control_listening(void) { return dt_ctl_socket_path()[0] != 0; }

/* A process that listens on the control channel (src/protocol/control_server.h)
   like a traced one, and answers CAPTURE and DUMP as --mode says, for the
   tests of `devtrace trigger` (tests/integration/test_trigger.py):
     ok          writes a canned trace into the descriptor, replies written=1
     nowrite     replies OK with written=0
     busy, cannot_arm, timeout   replies that ERR
     hang        never replies (until it is stopped)
     crash       writes half a trace, then the process dies (the peer goes away)
   --log FILE appends one line per request: its type and keys. The rank comes
   from RANK (and the others core/jobinfo.c reads), the job from
   SLURM_JOB_ID and the others. Prints "listening" once its socket is in
   place; SIGTERM or SIGINT stops it. */
#include "core/jobinfo.h"
#include "protocol/control_server.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *g_mode = "ok", *g_log;
static atomic_int g_stopping;

static void log_request(const dt_ctl_request *req)
{
    if (!g_log) return;
    FILE *f = fopen(g_log, "a");
    if (!f) return;
    fprintf(f, "type=%s duration_ns=%llu steps=%llu step_multiple=%llu timeout_ns=%llu format=%s\n",
            req->type == DT_CTL_DUMP ? "dump" : "capture", (unsigned long long)req->duration_ns,
            (unsigned long long)req->steps, (unsigned long long)req->step_multiple,
            (unsigned long long)req->timeout_ns, req->format);
    fclose(f);
}

static int write_all(int fd, const char *text)
{
    size_t n = strlen(text);
    return write(fd, text, n) == (ssize_t)n ? 0 : -1;
}

static void handler(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *res)
{
    (void)ctx;
    log_request(req);
    char trace[256];
    snprintf(trace, sizeof trace, "{\"traceEvents\": [], \"fake\": {\"pid\": %d, \"request\": \"%s\"}}\n",
             (int)getpid(), req->type == DT_CTL_DUMP ? "dump" : "capture");
    if (strcmp(g_mode, "ok") == 0) {
        dt__ctl_set_state(DT_CTL_CAPTURING);
        res->code = write_all(fd, trace) == 0 ? DT_CTL_SUCCESS : DT_CTL_CANNOT_ARM;
        res->written = res->code == DT_CTL_SUCCESS;
        res->records = 42;
        snprintf(res->text, sizeof res->text, "LOST 3 records (dropped 3)");
    } else if (strcmp(g_mode, "nowrite") == 0) {
        res->code = DT_CTL_SUCCESS;
        snprintf(res->text, sizeof res->text, "the fake writes nothing");
    } else if (strcmp(g_mode, "busy") == 0 || strcmp(g_mode, "cannot_arm") == 0 ||
               strcmp(g_mode, "timeout") == 0) {
        res->code = strcmp(g_mode, "busy") == 0 ? DT_CTL_BUSY
                    : strcmp(g_mode, "cannot_arm") == 0 ? DT_CTL_CANNOT_ARM : DT_CTL_TIMEOUT;
        snprintf(res->text, sizeof res->text, "the fake says %s", g_mode);
    } else if (strcmp(g_mode, "hang") == 0) {
        while (!atomic_load(&g_stopping)) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        res->code = DT_CTL_TIMEOUT;
    } else if (strcmp(g_mode, "crash") == 0) {
        (void)write_all(fd, "{\"traceEvents\": [");
        _exit(70);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mode") == 0) g_mode = argv[i + 1];
        else if (strcmp(argv[i], "--log") == 0) g_log = argv[i + 1];
        else {
            fprintf(stderr, "usage: fake_listener [--mode MODE] [--log FILE]\n");
            return 2;
        }
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* the control thread inherits the mask */
    dt_rank_info rank;
    dt__rank_from_env(&rank);
    dt_ctl_options opt = {.rank = rank.known ? rank.rank : -1, .local_rank = rank.local_rank, .world_size = rank.world_size,
                          .backend = "fake", .handler = handler};
    if (dt__ctl_listen(&opt) != DT_OK) {
        fprintf(stderr, "fake_listener: %s\n", dt_last_error());
        return 1;
    }
    printf("listening %s\n", dt__ctl_socket_path());
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    atomic_store(&g_stopping, 1);
    dt__ctl_stop();
    return 0;
}

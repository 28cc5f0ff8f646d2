/* Where a trace comes from, for readers that bring several together: the
   rank of a distributed job as its launcher announces it, and how far the
   host's CLOCK_REALTIME may be from true time (what bounds the offset between
   the clocks of two hosts). */
#include "base/log.h"
#include "core/jobinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

/* One launcher's variables. A launcher that sets its own set is named by it;
   torchrun also sets TORCHELASTIC_RUN_ID, which tells it apart from a user
   or another tool exporting RANK by hand. Order: RANK first, because torchrun
   inside a Slurm allocation or under mpirun sets it for each worker while the
   outer launcher's variables describe the worker's parent task. */
static const struct launcher_vars {
    const char *rank, *local_rank, *world_size, *launcher, *marker, *marked_launcher;
} launchers[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "env", "TORCHELASTIC_RUN_ID", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun (Open MPI)", NULL, NULL},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "srun (Slurm)", NULL, NULL},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "mpiexec (PMI)", NULL, NULL},
};

static int parse_count(const char *text, int64_t *out)
{
    if (!text) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < 0) return 0;
    *out = v;
    return 1;
}

void dt__rank_from_env(dt_rank_info *info)
{
    memset(info, 0, sizeof *info);
    info->local_rank = info->world_size = -1;
    for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++) {
        const struct launcher_vars *l = &launchers[i];
        const char *rank = dt__env(l->rank);
        if (!rank) continue;
        snprintf(info->rank_text, sizeof info->rank_text, "%s", rank);
        if (!parse_count(rank, &info->rank)) return; /* present but not a number: only tags names */
        info->known = 1;
        parse_count(dt__env(l->local_rank), &info->local_rank);
        parse_count(dt__env(l->world_size), &info->world_size);
        const char *name = l->marker && dt__env(l->marker) ? l->marked_launcher : l->launcher;
        snprintf(info->launcher, sizeof info->launcher, "%s", name);
        return;
    }
}

void dt__host_clock_read(dt_host_clock *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (fgets(c->clocksource, sizeof c->clocksource, f))
            c->clocksource[strcspn(c->clocksource, "\n")] = 0;
        fclose(f);
    }
    /* adjtimex with modes 0 only reads; maxerror is the kernel's bound on
       its distance from true time, kept by the NTP/PTP daemon. */
    struct timex tx;
    memset(&tx, 0, sizeof tx);
    int state = adjtimex(&tx);
    if (state < 0) return;
    c->known = 1;
    c->synchronized = state != TIME_ERROR && !(tx.status & STA_UNSYNC);
    c->max_error_us = tx.maxerror;
    c->est_error_us = tx.esterror;
}

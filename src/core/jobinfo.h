/*
 * Job and host facts for merging traces (src/core/jobinfo.c).
 * Internal, not installed.
 */
#ifndef DT_CORE_JOBINFO_H
#define DT_CORE_JOBINFO_H

#include <stdint.h>

#include "base/common.h"

typedef struct dt_rank_info {
    int known;                /* a launcher announced a numeric rank */
    int64_t rank, local_rank, world_size; /* -1 where not announced */
    char launcher[32];        /* "torchrun", "mpirun (Open MPI)", "srun (Slurm)", ... */
    char rank_text[32];       /* the rank variable as set ("" when none) */
} dt_rank_info;

/* From RANK/LOCAL_RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_PROCID/LOCALID/
   NTASKS or PMI_RANK/PMI_SIZE, the first set found. */
DT_HIDDEN void dt__rank_from_env(dt_rank_info *info);

typedef struct dt_host_clock {
    int known;                /* adjtimex answered */
    int synchronized;         /* an NTP/PTP daemon disciplines CLOCK_REALTIME */
    int64_t max_error_us;     /* the kernel's bound on |CLOCK_REALTIME - UTC| */
    int64_t est_error_us;
    char clocksource[32];     /* the kernel clocksource ("tsc", "kvm-clock") */
} dt_host_clock;

DT_HIDDEN void dt__host_clock_read(dt_host_clock *c);

#endif /* DT_CORE_JOBINFO_H */

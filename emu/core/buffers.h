/*
 * The client's buffers and their delivery (emu/core, internal): lanes being
 * filled, produced records waiting until their device work finishes,
 * completed buffers queued for delivery, and the worker thread that writes
 * finished work, completes buffers periodically and delivers them.
 */
#ifndef DEVTRACE_EMU_CORE_BUFFERS_H
#define DEVTRACE_EMU_CORE_BUFFERS_H

#include "state.h"

/* The calling thread's lane (0 until it first produces). */
EMU_HIDDEN extern CORE_TLS int core_thread_lane;
EMU_HIDDEN extern _Atomic int core_next_lane;

/* The lane of the calling thread. */
static inline int core_my_lane(void)
{
    if (!emu_vendor_impl.per_thread_buffers)
        return 0;
    if (!core_thread_lane)
        core_thread_lane =
            1 + atomic_fetch_add_explicit(&core_next_lane, 1, memory_order_relaxed) % (EMU_LANES - 1);
    return core_thread_lane;
}

static inline void core_update_pending_stat_locked(void)
{
    core_state.stats.records_pending = core_state.pending.n + core_state.held.n;
}

/* Append r to v; -1 when out of memory. */
EMU_HIDDEN int core_vec_push(rec_vec *v, const pending_rec *r);
/* Write one record into a lane's buffer, or count it as dropped. */
EMU_HIDDEN void core_write_record_locked(const emu_activity *a, unsigned flags, int ln);
/* Write produced records that may be written now: finished device work
   (all of it when forced) and late records whose buffer has completed. */
EMU_HIDDEN void core_write_ready_locked(int forced, uint64_t now);
/* Start the worker thread (once a client registered buffers). */
EMU_HIDDEN void core_start_worker_locked(void);

#endif /* DEVTRACE_EMU_CORE_BUFFERS_H */

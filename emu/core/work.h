/*
 * The emulated devices and the work they do (emu/core, internal): the
 * device count, and each stream's time until which it is busy.
 */
#ifndef DEVTRACE_EMU_CORE_WORK_H
#define DEVTRACE_EMU_CORE_WORK_H

#include "clock.h"
#include "state.h"

static inline int core_device_ok(int device)
{
    pthread_mutex_lock(&core_state.lock);
    int ok = device >= 0 && device < core_state.device_count;
    pthread_mutex_unlock(&core_state.lock);
    return ok;
}

/* Place work on a stream: start when both the call and the stream allow. */
static inline void core_schedule_locked(int device, int stream, uint64_t duration, uint64_t *start,
                                        uint64_t *end)
{
    uint64_t now = core_device_now();
    uint64_t *ready = &core_state.ready[device][stream];
    uint64_t s = now > *ready ? now : *ready;
    *start = s;
    *end = s + duration;
    *ready = *end;
}

#endif /* DEVTRACE_EMU_CORE_WORK_H */

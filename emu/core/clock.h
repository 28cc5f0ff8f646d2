/*
 * The emulated device clock (emu/core, internal): CLOCK_REALTIME mapped by
 * the personality's offset and drift, replaced by DEVTRACE_EMU_CLOCK_* or
 * emu_set_clock(). Read on every API call: reading the realtime clock is
 * inline.
 */
#ifndef DEVTRACE_EMU_CORE_CLOCK_H
#define DEVTRACE_EMU_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "state.h"

static inline uint64_t core_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The device time of a CLOCK_REALTIME time. */
EMU_HIDDEN uint64_t core_device_from_realtime(uint64_t rt);

static inline uint64_t core_device_now(void)
{
    return core_device_from_realtime(core_realtime_ns());
}

/* Sleep until the device clock reaches target. */
EMU_HIDDEN void core_wait_device_time(uint64_t target);
/* The clock's map at load: the personality's, or DEVTRACE_EMU_CLOCK_*. */
EMU_HIDDEN void core_clock_init(void);

#endif /* DEVTRACE_EMU_CORE_CLOCK_H */

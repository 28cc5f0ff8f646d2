/*
 * The emulated device clock (emu/core, internal): CLOCK_REALTIME mapped by
 * the personality's offset and drift, replaced by DEVTRACE_EMU_CLOCK_* or
 * emu_set_clock(). Read on every API call, so the readers are inline.
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

static inline uint64_t core_device_from_realtime(uint64_t rt)
{
    double scale = atomic_load_explicit(&core_state.clock_scale, memory_order_relaxed);
    int64_t off = atomic_load_explicit(&core_state.clock_offset, memory_order_relaxed);
    /* without drift, integer arithmetic gives the same result, faster */
    if (scale == 1.0 && off > -(int64_t)(rt >> 1) && off < (int64_t)(rt >> 1))
        return off >= 0 ? rt + (uint64_t)off : rt - (uint64_t)(-off);
    /* long double keeps sub-ns precision on epoch-sized values */
    long double dev = (long double)rt * (long double)scale + (long double)off;
    if (dev < 1.0L)
        return 1;
    if (dev >= 18446744073709551615.0L)
        return UINT64_MAX - 1;
    return (uint64_t)dev;
}

static inline uint64_t core_device_now(void)
{
    return core_device_from_realtime(core_realtime_ns());
}

/* Sleep until the device clock reaches target. */
EMU_HIDDEN void core_wait_device_time(uint64_t target);
/* The clock's map at load: the personality's, or DEVTRACE_EMU_CLOCK_*. */
EMU_HIDDEN void core_clock_init(void);

#endif /* DEVTRACE_EMU_CORE_CLOCK_H */

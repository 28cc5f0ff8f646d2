/*
 * The emulated device clock: its map from CLOCK_REALTIME at load and when
 * a workload moves it, and waiting for a device time.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "clock.h"

uint64_t core_device_from_realtime(uint64_t rt)
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

void core_wait_device_time(uint64_t target)
{
    for (;;) {
        uint64_t now = core_device_now();
        if (now >= target)
            return;
        double scale = atomic_load_explicit(&core_state.clock_scale, memory_order_relaxed);
        double rt_left = (double)(target - now) / (scale > 0 ? scale : 1.0);
        uint64_t ns = rt_left < 1000.0 ? 1000 : (uint64_t)rt_left;
        if (ns > 100000000ull)
            ns = 100000000ull;
        struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

void core_clock_init(void)
{
    double drift = emu_vendor_impl.clock_drift_ppm;
    int64_t off = emu_vendor_impl.clock_offset_ns;
    if (emu_vendor_impl.clock_counter) {
        if (emu_vendor_impl.clock_origin_ns)
            off = (int64_t)emu_vendor_impl.clock_origin_ns();
        off -= (int64_t)((long double)core_realtime_ns() * (1.0L + (long double)drift * 1e-6L));
    }
    const char *v = emu_vendor_impl.clock_is_realtime ? NULL : getenv("DEVTRACE_EMU_CLOCK_OFFSET_NS");
    if (v && *v)
        off = strtoll(v, NULL, 10);
    v = emu_vendor_impl.clock_is_realtime ? NULL : getenv("DEVTRACE_EMU_CLOCK_DRIFT_PPM");
    if (v && *v)
        drift = strtod(v, NULL);
    /* the personality's drift (or the one asked for) times this factor:
       bench_launch's count under callgrind, where a session runs ~50x longer
       than natively, sees the drift a native session of its length sees */
    v = emu_vendor_impl.clock_is_realtime ? NULL : getenv("DEVTRACE_EMU_CLOCK_DRIFT_SCALE");
    if (v && *v)
        drift *= strtod(v, NULL);
    if (!isfinite(drift) || drift <= -1e6)
        drift = 0.0;
    atomic_store(&core_state.clock_offset, off);
    atomic_store(&core_state.clock_scale, 1.0 + drift * 1e-6);
}

EMU_API int emu_set_clock(int64_t offset_ns, double drift_ppm)
{
    emu_init();
    if (!isfinite(drift_ppm) || drift_ppm <= -1e6 || drift_ppm >= 1e6 || emu_vendor_impl.clock_is_realtime)
        return EMU_EINVAL;
    atomic_store(&core_state.clock_offset, offset_ns);
    atomic_store(&core_state.clock_scale, 1.0 + drift_ppm * 1e-6);
    return EMU_OK;
}

EMU_API uint64_t emu_device_time_ns(void)
{
    emu_init();
    return core_device_now();
}

uint64_t emu_core_timestamp(void)
{
    emu_init();
    return core_device_now();
}

/*
 * Markers: user ranges (a start and an end, paired by their id)
 * and instants, each a host record now and, when marked on a stream, a
 * device record once the stream reaches it.
 */
#include <pthread.h>

#include "api.h"
#include "buffers.h"
#include "names.h"
#include "records.h"
#include "work.h"

static _Atomic uint64_t g_next_mark = 1;

/* The host's record of a marker, now, on this thread; and, for a marker on
   a stream, the device's, once the stream reaches it. */
static void produce_marker_locked(unsigned flags, uint64_t id, const char *name, int device, int stream)
{
    emu_activity a = { .kind = EMU_REC_MARKER };
    a.start = a.end = core_device_now();
    a.u.marker.flags = flags | (device >= 0 ? EMU_MARK_ON_STREAM : 0);
    a.u.marker.id = id;
    a.u.marker.name = name;
    a.u.marker.process = core_process_id();
    a.u.marker.thread = emu_core_system_tid();
    core_produce_now_locked(&a);
    if (device < 0 || !core_admit_locked(&a))
        return;
    emu_activity d = a;
    d.u.marker.flags |= EMU_MARK_SOURCE_DEVICE;
    d.u.marker.name = "";
    d.device = (uint32_t)device;
    d.stream = (uint32_t)stream;
    core_schedule_locked(device, stream, 0, &d.start, &d.end);
    core_state.stats.records[EMU_KIND_MARKER]++;
    pending_rec p = { .a = d, .ready_at = d.end, .lane = core_my_lane() };
    if (core_vec_push(&core_state.pending, &p) != 0)
        core_write_record_locked(&d, 0, p.lane);
}

static int marker_place_ok(int device, int stream)
{
    return device == -1 || (core_device_ok(device) && stream >= 0 && stream < EMU_MAX_STREAMS);
}

EMU_API int emu_range_start(const char *name, int device, int stream, uint64_t *id)
{
    emu_init();
    if (!id || !marker_place_ok(device, stream))
        return EMU_EINVAL;
    pthread_mutex_lock(&core_state.lock);
    if (emu_core_grow_for_one((void **)&core_state.ranges, &core_state.range_cap, core_state.range_n,
                          sizeof *core_state.ranges, 16) != 0) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_EINVAL;
    }
    *id = atomic_fetch_add(&g_next_mark, 1);
    core_state.ranges[core_state.range_n++] = (struct open_range){ *id, device, stream };
    const char *n = core_intern_name(name);
    produce_marker_locked(EMU_MARK_START, *id, n ? n : "", device, stream);
    core_update_pending_stat_locked();
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

EMU_API int emu_range_end(uint64_t id)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    size_t i = 0;
    while (i < core_state.range_n && core_state.ranges[i].id != id)
        i++;
    if (i == core_state.range_n) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_EINVAL; /* never started, or ended already */
    }
    struct open_range r = core_state.ranges[i];
    core_state.ranges[i] = core_state.ranges[--core_state.range_n];
    produce_marker_locked(EMU_MARK_END, id, "", r.device, r.stream);
    core_update_pending_stat_locked();
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

EMU_API int emu_mark(const char *name, int device, int stream)
{
    emu_init();
    if (!marker_place_ok(device, stream))
        return EMU_EINVAL;
    pthread_mutex_lock(&core_state.lock);
    const char *n = core_intern_name(name);
    produce_marker_locked(EMU_MARK_INSTANT, atomic_fetch_add(&g_next_mark, 1), n ? n : "", device, stream);
    core_update_pending_stat_locked();
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

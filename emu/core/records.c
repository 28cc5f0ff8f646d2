/*
 * Producing records: what the client records (kinds, per-call filters),
 * the gate every record passes, the faults that act on records as they are
 * produced, and the statistics.
 */
#include <pthread.h>
#include <string.h>

#include "buffers.h"
#include "clock.h"
#include "faults.h"
#include "names.h"
#include "records.h"
#include "subscriber.h"

static const char *const kind_names[EMU_KIND_COUNT] = {
    "kernel", "memcpy", "memset", "runtime", "driver", "external", "marker", "collective", "memory",
    "memory_pool",
};

/* A vendor that makes a device record when the work completes, for a
   client still recording it: work of this kind still running when the
   client stops recording it is never delivered (counted unfinished). Faulted
   records keep their course: the fault is what they show. */
static void abandon_running_locked(emu_rec_kind kind)
{
    uint64_t now = core_device_now();
    size_t w = 0;
    for (size_t i = 0; i < core_state.pending.n; i++) {
        pending_rec *p = &core_state.pending.v[i];
        if (p->a.kind == kind && p->ready_at > now && !(p->flags & PEND_TIMES_FAULTED)) {
            core_state.stats.records_unfinished[core_stat_kind(kind)]++;
            continue;
        }
        core_state.pending.v[w++] = *p;
    }
    core_state.pending.n = w;
    core_update_pending_stat_locked();
}

emu_status emu_core_enable(emu_rec_kind kind, int enable)
{
    emu_init();
    if ((unsigned)kind >= EMU_REC_UNKNOWN || emu_vendor_impl.record_size(kind) == 0)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&core_state.lock);
    if (!enable && core_state.enabled[kind] && emu_vendor_impl.records_at_completion)
        abandon_running_locked(kind);
    core_state.enabled[kind] = enable != 0;
    if (enable) {
        core_state.profiling = 1;
        /* as CUPTI: enabling the kind undoes earlier per-call choices */
        if (kind == EMU_REC_RUNTIME || kind == EMU_REC_DRIVER)
            memset(core_state.api_off[kind == EMU_REC_RUNTIME ? EMU_DOMAIN_RUNTIME : EMU_DOMAIN_DRIVER], 0,
                   sizeof core_state.api_off[0]);
    }
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

emu_status emu_core_set_api_recorded(emu_domain domain, uint32_t cbid, int recorded)
{
    emu_init();
    if ((unsigned)domain >= EMU_DOMAIN_COUNT || cbid >= EMU_API_FILTER_IDS)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&core_state.lock);
    if (recorded)
        core_state.api_off[domain][cbid / 8] &= (uint8_t)~(1u << (cbid % 8));
    else
        core_state.api_off[domain][cbid / 8] |= (uint8_t)(1u << (cbid % 8));
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

EMU_API int emu_api_recorded(int driver, uint32_t cbid)
{
    emu_init();
    if (cbid >= EMU_API_FILTER_IDS)
        return 1;
    emu_domain d = driver ? EMU_DOMAIN_DRIVER : EMU_DOMAIN_RUNTIME;
    pthread_mutex_lock(&core_state.lock);
    int off = (core_state.api_off[d][cbid / 8] >> (cbid % 8)) & 1u;
    pthread_mutex_unlock(&core_state.lock);
    return !off;
}

int emu_core_enabled(emu_rec_kind kind)
{
    if ((unsigned)kind >= EMU_REC_COUNT)
        return 0;
    pthread_mutex_lock(&core_state.lock);
    int on = core_state.enabled[kind];
    pthread_mutex_unlock(&core_state.lock);
    return on;
}

EMU_API void emu_stats_get(emu_stats *out)
{
    emu_init();
    if (!out)
        return;
    pthread_mutex_lock(&core_state.lock);
    core_update_pending_stat_locked();
    *out = core_state.stats;
    out->subscribers = core_state.subscribed ? 1 : 0;
    out->kinds_enabled = out->callbacks_enabled = 0;
    for (int k = 0; k < EMU_REC_COUNT; k++)
        out->kinds_enabled += core_state.enabled[k] != 0;
    for (int d = 0; core_state.subscribed && d < EMU_DOMAIN_COUNT; d++)
        out->callbacks_enabled += core_state.domain_on[d] != 0;
    out->external_calls_inside = (uint64_t)core_external_calls_inside();
    pthread_mutex_unlock(&core_state.lock);
}

EMU_API void emu_stats_reset(void)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    memset(&core_state.stats, 0, sizeof(core_state.stats));
    pthread_mutex_unlock(&core_state.lock);
}

/* The extra records a malformed or unknown-kind fault inserts, written
   ahead of the record being produced. */
static void inject_bad_records_locked(uint32_t correlation)
{
    if (core_state.fault_left[EMU_FAULT_MALFORMED] &&
        emu_vendor_impl.record_size(EMU_REC_KERNEL) > EMU_TRUNCATED_BYTES) {
        core_take_fault_locked(EMU_FAULT_MALFORMED);
        emu_activity bad = { .kind = EMU_REC_KERNEL, .correlation = correlation };
        bad.u.kernel.name = core_intern_name("malformed");
        core_write_record_locked(&bad, PEND_MALFORMED, core_my_lane());
    }
    if (core_state.fault_left[EMU_FAULT_UNKNOWN_KIND] && emu_vendor_impl.record_size(EMU_REC_UNKNOWN)) {
        core_take_fault_locked(EMU_FAULT_UNKNOWN_KIND);
        emu_activity bad = { .kind = EMU_REC_UNKNOWN, .correlation = correlation };
        core_write_record_locked(&bad, 0, core_my_lane());
    }
}

/* Reported drops are added when the next record is produced rather than
   when armed: a client that reads the count when it starts (to discard
   older drops) must still see them. */
static void apply_vendor_dropped_locked(void)
{
    uint64_t n = core_state.fault_left[EMU_FAULT_VENDOR_DROPPED];
    if (!n)
        return;
    core_state.fault_left[EMU_FAULT_VENDOR_DROPPED] = 0;
    core_state.dropped += (size_t)n;
    core_state.stats.faulted[EMU_FAULT_VENDOR_DROPPED] += n;
    core_state.stats.dropped_reported += n;
}
/* The gate API and device records share, so that the record-wide faults
   (vendor_dropped, malformed and unknown records, no_buffer) act on both
   kinds alike: 0 when the kind is off or no_buffer takes the record, which
   then counts as a drop the vendor reports. */
int core_admit_locked(const emu_activity *a)
{
    if (!core_state.enabled[a->kind])
        return 0;
    apply_vendor_dropped_locked();
    inject_bad_records_locked(a->correlation);
    if (core_take_fault_locked(EMU_FAULT_NO_BUFFER)) {
        core_state.dropped++;
        core_state.stats.dropped_reported++;
        return 0;
    }
    return 1;
}

/* A vendor whose records carry its external id: taken from the producing
   thread's stack now. */
static void attach_external_locked(emu_activity *a)
{
    if (emu_vendor_impl.record_external && emu_vendor_impl.record_external(a->kind, &a->external_id)) {
        a->has_external_id = 1;
        core_state.stats.records[EMU_KIND_EXTERNAL]++;
    }
}

/* An admitted API or external record: written at once. */
void core_write_now_locked(const emu_activity *in)
{
    emu_activity a = *in;
    attach_external_locked(&a);
    core_state.stats.records[core_stat_kind(a.kind)]++;
    core_write_record_locked(&a, 0, core_my_lane());
}

/* Produce a device record: applies timestamp faults, then queues it until
   the device work has finished (or writes it at once when out of order). */
void core_produce_device_locked(emu_activity *a)
{
    if (!core_admit_locked(a))
        return;
    attach_external_locked(a);
    uint64_t ready_at = a->end;
    unsigned flags = PEND_TIMES_FAULTED;
    if (core_take_fault_locked(EMU_FAULT_ZERO_TIMESTAMPS)) {
        a->start = a->end = 0;
    } else if (core_take_fault_locked(EMU_FAULT_REVERSED_TIMESTAMPS)) {
        uint64_t s = a->start;
        a->start = a->end + 1;
        a->end = s;
    } else if (core_take_fault_locked(EMU_FAULT_LONG_TIMESTAMPS)) {
        a->end = a->start + EMU_LONG_DURATION_NS;
    } else {
        core_state.stats.records[core_stat_kind(a->kind)]++;
        flags = 0;
    }
    pending_rec p = { .a = *a, .ready_at = ready_at, .lane = core_my_lane(), .flags = flags };
    if (core_take_fault_locked(EMU_FAULT_OUT_OF_ORDER)) {
        core_write_record_locked(a, 0, p.lane);
        return;
    }
    if (core_take_fault_locked(EMU_FAULT_LATE))
        p.flags |= PEND_LATE;
    if (core_vec_push(&core_state.pending, &p) != 0)
        core_write_record_locked(a, 0, p.lane); /* no memory to defer it: write it now */
}

EMU_API const char *emu_kind_name(emu_kind kind)
{
    return (unsigned)kind < EMU_KIND_COUNT ? kind_names[kind] : NULL;
}

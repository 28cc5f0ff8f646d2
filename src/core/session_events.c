/* What a stopped session gives the public API: its events, losses and
   notes. */
#include "base/log.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/session_impl.h"

#include <string.h>

int dt_session_note_at(const dt_session *s, size_t index, const char **key, const char **text)
{
    if (!s) return 0;
    pthread_mutex_t *l = (pthread_mutex_t *)&s->calib_lock; /* a note is added under it */
    pthread_mutex_lock(l);
    int have = index < (size_t)s->note_count;
    pthread_mutex_unlock(l);
    if (!have) return 0;
    if (key) *key = s->notes[index].key;
    if (text) *text = s->notes[index].text;
    return 1;
}

size_t dt_session_event_count(const dt_session *s)
{
    return s && s->state == DT_STATE_STOPPED ? s->sink.store.count : 0;
}

void dt__rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = (dt_event_kind)r->kind;
    ev->start_ns = r->start;
    ev->end_ns = r->end;
    ev->correlation = r->correlation;
    ev->has_external = (r->flags & DT_REC_HAS_EXTERNAL) != 0;
    ev->external_id = r->external_id;
    ev->name = dt__intern_get(&s->names, r->name);
    int host = r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || r->kind == DT_EVENT_RANGE ||
               r->kind == DT_EVENT_OP;
    if (host) {
        ev->thread = r->lane;
        ev->process = r->context;
    } else {
        ev->device = r->device;
        ev->stream = r->lane;
        ev->context = r->context;
    }
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        const dt_launch_config *c = r->u.kernel.config < s->launches.count
                                        ? &s->launches.configs[r->u.kernel.config] : NULL;
        if (c) {
            memcpy(ev->u.kernel.grid, c->grid, sizeof c->grid);
            memcpy(ev->u.kernel.block, c->block, sizeof c->block);
            ev->u.kernel.registers_per_thread = c->registers_per_thread;
            ev->u.kernel.static_shared_memory = c->static_shared_memory;
            ev->u.kernel.dynamic_shared_memory = c->dynamic_shared_memory;
        }
        ev->u.kernel.queued_ns = r->u.kernel.queued_delta == DT_DELTA_UNKNOWN
                                     ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.queued_delta;
        ev->u.kernel.submitted_ns = r->u.kernel.submitted_delta == DT_DELTA_UNKNOWN
                                        ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.submitted_delta;
        break;
    }
    case DT_EVENT_MEMCPY:
        ev->u.memcpy.bytes = r->u.memcpy.bytes;
        ev->u.memcpy.copy_kind = (dt_copy_kind)r->u.memcpy.copy_kind;
        ev->u.memcpy.src_kind = (dt_memory_kind)r->u.memcpy.src_kind;
        ev->u.memcpy.dst_kind = (dt_memory_kind)r->u.memcpy.dst_kind;
        ev->u.memcpy.src_device = r->u.memcpy.src_device;
        ev->u.memcpy.dst_device = r->u.memcpy.dst_device;
        break;
    case DT_EVENT_MEMSET:
        ev->u.memset.bytes = r->u.memset.bytes;
        ev->u.memset.value = r->u.memset.value;
        ev->u.memset.memory_kind = (dt_memory_kind)r->u.memset.memory_kind;
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        ev->u.api.cbid = r->u.api.cbid;
        ev->u.api.return_code = r->u.api.return_code;
        ev->u.api.launch = (r->flags & DT_REC_LAUNCH) != 0;
        break;
    case DT_EVENT_RANGE:
        ev->u.range.range_id = r->external_id;
        ev->u.range.has_parent = (r->flags & DT_REC_HAS_PARENT) != 0;
        ev->u.range.parent_id = r->u.range.parent;
        break;
    case DT_EVENT_OP:
        ev->u.op.has_parent = (r->flags & DT_REC_HAS_PARENT) != 0;
        ev->u.op.parent_id = r->u.range.parent;
        break;
    case DT_EVENT_MEMORY:
        ev->u.memory.address = r->u.memory.address;
        ev->u.memory.bytes = r->u.memory.bytes;
        ev->u.memory.is_free = (r->flags & DT_REC_FREE) != 0;
        ev->u.memory.memory_kind = (dt_memory_kind)r->context;
        break;
    case DT_EVENT_COLLECTIVE:
        if (r->u.collective.info < s->collective_count) {
            const dt_collective *c = &s->collectives[r->u.collective.info];
            ev->u.collective.count = c->count;
            ev->u.collective.bytes = c->bytes;
            ev->u.collective.bandwidth_gbps = c->bandwidth_gbps;
            ev->u.collective.data_type = dt__intern_get(&s->names, c->data_type);
            ev->u.collective.group = dt__intern_get(&s->names, c->group);
            ev->u.collective.algorithm = dt__intern_get(&s->names, c->algorithm);
        } else {
            ev->u.collective.data_type = ev->u.collective.group = ev->u.collective.algorithm = "";
        }
        break;
    default:
        break;
    }
}

dt_status dt_session_event(const dt_session *s, size_t index, dt_event *ev)
{
    if (!s || !ev) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: NULL argument");
    if (s->state != DT_STATE_STOPPED) return dt__error(DT_ERR_STATE, "dt_session_event: stop the session first");
    if (index >= s->sink.store.count)
        return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: index %zu out of range (%zu events)", index,
                        s->sink.store.count);
    dt__rec_to_event(s, dt__store_at(&s->sink.store, index), ev);
    return DT_OK;
}

size_t dt_session_events(const dt_session *s, size_t first, size_t count, dt_event *out)
{
    if (!s || !out || s->state != DT_STATE_STOPPED || first >= s->sink.store.count) return 0;
    size_t n = s->sink.store.count - first < count ? s->sink.store.count - first : count;
    for (size_t i = 0; i < n; i++) dt__rec_to_event(s, dt__store_at(&s->sink.store, first + i), &out[i]);
    return n;
}

uint64_t dt_session_loss(const dt_session *s, dt_loss_reason reason)
{
    if (!s || (unsigned)reason >= DT_LOSS_COUNT) return 0;
    return atomic_load(&((dt_session *)s)->sink.loss[reason]);
}

uint64_t dt_session_loss_total(const dt_session *s)
{
    uint64_t t = 0;
    for (int i = 0; i < DT_LOSS_COUNT; i++) t += dt_session_loss(s, (dt_loss_reason)i);
    return t;
}

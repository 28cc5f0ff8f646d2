/* The recording view of a stopped session (recording.h). */
#include "core/recording.h"
#include "core/session_impl.h"

#include <stdatomic.h>

#include <string.h>

static dt_recording_note note_of(const char *key, size_t key_size, const char *text, size_t text_size)
{
    dt_recording_note n = {key, text, strnlen(key, key_size), strnlen(text, text_size)};
    return n;
}

int dt__recording_of(const dt_session *s, dt_recording *out)
{
    if (!s || s->state != DT_STATE_STOPPED)
        return -1;
    memset(out, 0, sizeof *out);
    out->store = &s->sink.store;
    out->names = &s->names;
    out->launches = &s->launches;
    out->collectives = s->collectives;
    out->collective_count = s->collective_count;
    out->clock = &s->clock;
    out->window_start_ns = s->window_start_ns;
    out->window_end_ns = s->window_end_ns;
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        out->loss[r] = atomic_load_explicit((_Atomic uint64_t *)&s->sink.loss[r], memory_order_relaxed);
    out->devices = s->devices;
    const dt_backend *be = s->backend;
    out->backend_name = be ? be->name : NULL;
    out->vendor = be ? be->vendor : NULL;
    out->api_category = be ? be->api_category : NULL;
    out->kernel_resources = !(be && (be->lacks & DT_BACKEND_LACKS_KERNEL_RESOURCES));
    out->library = s->backend_library;
    out->library_len = strnlen(s->backend_library, sizeof s->backend_library);
    out->library_version = s->backend_version;
    out->library_version_len = strnlen(s->backend_version, sizeof s->backend_version);
    out->note_count = s->note_count < DT_MAX_NOTES ? s->note_count : DT_MAX_NOTES;
    for (int k = 0; k < out->note_count; k++)
        out->notes[k] = note_of(s->notes[k].key, sizeof s->notes[k].key, s->notes[k].text, sizeof s->notes[k].text);
    out->pid = s->pid;
    out->process_name = s->process_name;
    out->host_name = s->host_name;
    out->host_name_len = strnlen(s->host_name, sizeof s->host_name);
    out->rank = &s->rank;
    out->host_clock = &s->host_clock;
    out->session = s;
    return 0;
}

const char *dt__recording_thread_name(const dt_recording *r, uint32_t tid)
{
    return dt_session_thread_name(r->session, tid);
}

int dt__recording_external_range(const dt_recording *r, uint64_t id, uint64_t *range)
{
    return dt__corr_parent_range(r->session, id, range);
}

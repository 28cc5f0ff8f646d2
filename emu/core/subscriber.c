/*
 * The client's registration: the single subscriber and its domains, the
 * thread-id type, the per-thread external-correlation stacks, and
 * detaching (finalize).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "null_client.h"
#include "subscriber.h"

/* The subscriber handle is the address of this byte. */
static char g_subscriber_token;

CORE_TLS core_ext_stacks core_thread_ext;
CORE_TLS int core_capturing;

/* External-correlation calls inside the library now, and whether they are
   held there (emu_hold_external_calls). */
static _Atomic int g_external_inside;
static _Atomic int g_hold_external;

EMU_API int emu_hold_external_calls(int hold)
{
    emu_init();
    atomic_store(&g_hold_external, hold != 0);
    return EMU_OK;
}

int core_external_calls_inside(void)
{
    return atomic_load(&g_external_inside);
}

static void external_call_enter(void)
{
    atomic_fetch_add(&g_external_inside, 1);
    for (int waited_ms = 0; atomic_load(&g_hold_external) && waited_ms < 10000; waited_ms++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

static void external_call_leave(void)
{
    atomic_fetch_sub(&g_external_inside, 1);
}

EMU_API int emu_stream_capture(int begin)
{
    emu_init();
    core_capturing = begin != 0 && emu_vendor_impl.capture_error != 0;
    return EMU_OK;
}

/* A new subscriber and a departed one both start with every domain off:
   a client enables what it wants after subscribing. */
void core_set_subscriber_locked(int subscribed, emu_generic_fn callback, void *userdata)
{
    core_state.subscribed = subscribed;
    core_state.cb = callback;
    core_state.cb_userdata = userdata;
    for (int d = 0; d < EMU_DOMAIN_COUNT; d++)
        core_state.domain_on[d] = 0;
}

emu_status emu_core_subscribe(void **handle, emu_generic_fn callback, void *userdata)
{
    emu_init();
    if (!handle)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&core_state.lock);
    if (core_state.subscribed) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_ST_BUSY;
    }
    core_set_subscriber_locked(1, callback, userdata);
    pthread_mutex_unlock(&core_state.lock);
    *handle = &g_subscriber_token;
    return EMU_ST_OK;
}

emu_status emu_core_unsubscribe(void *handle)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    if (!core_state.subscribed || handle != &g_subscriber_token) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_ST_NOT_SUBSCRIBED;
    }
    core_set_subscriber_locked(0, NULL, NULL);
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

int emu_core_subscriber(void *handle, emu_generic_fn *callback, void **userdata)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    int ok = core_state.subscribed && (!handle || handle == &g_subscriber_token) &&
             core_state.cb != core_null_client_callback;
    if (ok && callback) *callback = core_state.cb;
    if (ok && userdata) *userdata = core_state.cb_userdata;
    pthread_mutex_unlock(&core_state.lock);
    return ok;
}

emu_status emu_core_enable_domain(void *handle, emu_domain domain, int enable)
{
    emu_init();
    if ((unsigned)domain >= EMU_DOMAIN_COUNT)
        return EMU_ST_INVALID;
    pthread_mutex_lock(&core_state.lock);
    if (!core_state.subscribed || handle != &g_subscriber_token) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_ST_NOT_SUBSCRIBED;
    }
    core_state.domain_on[domain] = enable != 0;
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

void emu_core_set_thread_id_type(emu_thread_id_type type)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    /* CUPTI's header: not to be changed while profiling */
    if (core_state.profiling && type != core_state.tid_type)
        core_state.stats.thread_id_type_changes_while_profiling++;
    core_state.tid_type = type;
    pthread_mutex_unlock(&core_state.lock);
}

emu_thread_id_type emu_core_get_thread_id_type(void)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    emu_thread_id_type t = core_state.tid_type;
    pthread_mutex_unlock(&core_state.lock);
    return t;
}

static emu_status push_external(uint32_t external_kind, uint64_t id)
{
    core_ext_stacks *t = &core_thread_ext;
    size_t max = emu_vendor_impl.external_depth ? emu_vendor_impl.external_depth : EMU_EXT_DEPTH;
    if (external_kind >= EMU_EXT_KINDS || t->depth[external_kind] >= max)
        return EMU_ST_INVALID;
    size_t d = t->depth[external_kind];
    if (d >= EMU_EXT_DEPTH && emu_core_grow_for_one((void **)&t->more[external_kind], &t->more_cap[external_kind],
                                                    d - EMU_EXT_DEPTH, sizeof *t->more[external_kind], 256) != 0)
        return EMU_ST_INVALID;
    *core_ext_entry(t, external_kind, d) = id;
    t->depth[external_kind] = d + 1;
    return EMU_ST_OK;
}

emu_status emu_core_push_external(uint32_t external_kind, uint64_t id)
{
    external_call_enter();
    emu_status st = push_external(external_kind, id);
    external_call_leave();
    return st;
}

static emu_status pop_external(uint32_t external_kind, uint64_t *id)
{
    core_ext_stacks *t = &core_thread_ext;
    if (external_kind >= EMU_EXT_KINDS || t->depth[external_kind] == 0)
        return EMU_ST_INVALID;
    uint64_t v = *core_ext_entry(t, external_kind, --t->depth[external_kind]);
    if (t->depth[external_kind] == 0 && t->more[external_kind]) {
        free(t->more[external_kind]);
        t->more[external_kind] = NULL;
        t->more_cap[external_kind] = 0;
    }
    if (id)
        *id = v;
    return EMU_ST_OK;
}

emu_status emu_core_pop_external(uint32_t external_kind, uint64_t *id)
{
    external_call_enter();
    emu_status st = pop_external(external_kind, id);
    external_call_leave();
    return st;
}

/* Detach the client. */
emu_status emu_core_finalize(void)
{
    emu_init();
    /* what the client still holds is delivered first, as CUPTI asks of a
       client before it detaches */
    emu_core_flush_all(1);
    pthread_mutex_lock(&core_state.lock);
    /* what CUPTI leaves to its client: no external-correlation call of
       another thread inside the library, no finalize inside a capture */
    if (atomic_load(&g_external_inside) > 0)
        core_state.stats.finalize_during_external_call++;
    if (core_capturing)
        core_state.stats.finalize_in_capture++;
    memset(core_state.enabled, 0, sizeof core_state.enabled);
    memset(core_state.api_off, 0, sizeof core_state.api_off);
    core_set_subscriber_locked(0, NULL, NULL);
    core_state.request = NULL;
    core_state.complete = NULL;
    core_state.profiling = 0;
    core_state.tid_type = emu_vendor_impl.default_thread_id_type;
    core_state.stats.finalized++;
    pthread_mutex_unlock(&core_state.lock);
    return EMU_ST_OK;
}

void emu_core_finalize_refused(void)
{
    pthread_mutex_lock(&core_state.lock);
    core_state.stats.finalize_refused++;
    pthread_mutex_unlock(&core_state.lock);
}

void emu_core_timestamp_callback_registered(void)
{
    pthread_mutex_lock(&core_state.lock);
    core_state.stats.timestamp_callbacks++;
    pthread_mutex_unlock(&core_state.lock);
}

void emu_core_attribute_set_late(void)
{
    pthread_mutex_lock(&core_state.lock);
    core_state.stats.attributes_set_late++;
    pthread_mutex_unlock(&core_state.lock);
}

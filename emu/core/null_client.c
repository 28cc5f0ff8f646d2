/*
 * The null client (emu_null_client): arms what a tracer arms (every record
 * kind, both callback domains, a client's buffers), walks each completed
 * buffer with the vendor's iterator and decodes nothing: what the vendor
 * side of tracing costs, measured apart from the tracer's own work. Its
 * callback and completion functions are markers the core recognises, so no
 * vendor signature is needed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "null_client.h"
#include "subscriber.h"

/* Its buffers, handed out and taken back. */
#define NULL_CLIENT_BUFFERS 8
#define NULL_CLIENT_BUFFER_SIZE (4u << 20)

static struct {
    uint8_t *bufs[NULL_CLIENT_BUFFERS];
    uint8_t *free[NULL_CLIENT_BUFFERS];
    int free_n;
    emu_request_fn saved_request; /* a client registered before, restored after */
    emu_generic_fn saved_complete;
} null_pool;

void core_null_client_callback(void) {}
void core_null_client_complete(void) {}

void core_null_client_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* state lock held */
    *buffer = null_pool.free_n ? null_pool.free[--null_pool.free_n] : NULL;
    *size = *buffer ? NULL_CLIENT_BUFFER_SIZE : 0;
    *max_records = 0;
}

void core_null_client_complete_buffer(uint8_t *buf, size_t valid)
{
    /* a client walks every record with the vendor's iterator: that is the
       vendor's cost too */
    if (buf && emu_vendor_impl.null_client_buffer) {
        emu_vendor_impl.null_client_buffer(buf, valid);
    } else {
        uint8_t *rec = NULL;
        size_t records = 0;
        while (buf && emu_core_next_record(buf, valid, &rec) == EMU_ST_OK) records++;
        __asm__ __volatile__("" ::"r"(records));
    }
    pthread_mutex_lock(&core_state.lock);
    if (buf && null_pool.free_n < NULL_CLIENT_BUFFERS)
        null_pool.free[null_pool.free_n++] = buf;
    pthread_mutex_unlock(&core_state.lock);
}

static void null_client_arm_locked(int on)
{
    for (int k = 0; k < EMU_REC_UNKNOWN; k++)
        if (emu_vendor_impl.record_size((emu_rec_kind)k))
            core_state.enabled[k] = on;
    core_set_subscriber_locked(on, on ? core_null_client_callback : NULL, NULL);
    for (int d = 0; d < EMU_DOMAIN_COUNT; d++)
        core_state.domain_on[d] = on;
    /* as a tracer filters them: the call-configuration calls around every
       CUDA 13 launch, which launch nothing */
    static const emu_op bookkeeping[] = {EMU_OP_PUSH_CALL_CONFIGURATION, EMU_OP_POP_CALL_CONFIGURATION};
    memset(core_state.api_off, 0, sizeof core_state.api_off);
    for (size_t i = 0; on && i < sizeof bookkeeping / sizeof *bookkeeping; i++) {
        uint32_t cbid = emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, bookkeeping[i], 0);
        if (cbid && cbid < EMU_API_FILTER_IDS)
            core_state.api_off[EMU_DOMAIN_RUNTIME][cbid / 8] |= (uint8_t)(1u << (cbid % 8));
    }
}

EMU_API int emu_null_client(int on)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    int armed = core_state.request == core_null_client_request;
    if (on && !armed) {
        /* A client that registered buffers but records nothing (a tracer
           that stopped; vendors keep the registration) is set aside. */
        int recording = core_state.subscribed;
        for (int k = 0; k < EMU_REC_COUNT; k++)
            recording |= core_state.enabled[k];
        if (recording) {
            pthread_mutex_unlock(&core_state.lock);
            return EMU_EINVAL;
        }
        for (int i = 0; i < NULL_CLIENT_BUFFERS; i++) {
            if (!null_pool.bufs[i] && !(null_pool.bufs[i] = aligned_alloc(64, NULL_CLIENT_BUFFER_SIZE))) {
                pthread_mutex_unlock(&core_state.lock);
                return EMU_EINVAL;
            }
            null_pool.free[i] = null_pool.bufs[NULL_CLIENT_BUFFERS - 1 - i];
        }
        null_pool.free_n = NULL_CLIENT_BUFFERS;
        null_pool.saved_request = core_state.request;
        null_pool.saved_complete = core_state.complete;
        core_state.request = core_null_client_request;
        core_state.complete = core_null_client_complete;
        core_state.null_client_keeps_id = on != EMU_NULL_CLIENT_NO_IDS;
        null_client_arm_locked(1);
        core_start_worker_locked();
    } else if (!on && armed) {
        null_client_arm_locked(0);
        pthread_mutex_unlock(&core_state.lock);
        emu_core_flush_all(1);
        pthread_mutex_lock(&core_state.lock);
        core_state.request = null_pool.saved_request;
        core_state.complete = null_pool.saved_complete;
    }
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

/*
 * rocprofiler-sdk contexts, buffers and services: made only while a tool
 * initializes; what the core produces and whether it calls back follows the
 * active contexts' services.
 */
#include <string.h>

#include "sdk.h"

/* The buffer-tracing kind a core record becomes. */
static uint32_t buffer_kind_of(emu_rec_kind k)
{
    switch (k) {
    case EMU_REC_KERNEL:
    case EMU_REC_MEMSET: return RSDK_BUFFER_KERNEL_DISPATCH;
    case EMU_REC_MEMCPY: return RSDK_BUFFER_MEMORY_COPY;
    case EMU_REC_RUNTIME: return RSDK_BUFFER_HIP_RUNTIME_API;
    default: return 0;
    }
}

static void core_callback(void) {}

void sdk_apply_services(void)
{
    static const emu_rec_kind kinds[] = {EMU_REC_KERNEL, EMU_REC_MEMSET, EMU_REC_MEMCPY, EMU_REC_RUNTIME};
    int api_callbacks = 0;
    size_t smallest = 0;
    int lossless = 1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        uint64_t owner = 0;
        for (int c = 0; c < MAX_CONTEXTS && !owner; c++)
            if (sdk_state.contexts[c].valid && sdk_state.contexts[c].active &&
                sdk_state.contexts[c].buffered[buffer_kind_of(kinds[k])].on)
                owner = (uint64_t)c + 1;
        atomic_store(&sdk_state.kind_context[kinds[k]], owner);
        emu_core_enable(kinds[k], owner && sdk_state.tables_seen);
    }
    for (int c = 0; c < MAX_CONTEXTS; c++)
        if (sdk_state.contexts[c].valid && sdk_state.contexts[c].active &&
            sdk_state.contexts[c].called[RSDK_CALLBACK_HIP_RUNTIME_API].on)
            api_callbacks = 1;
    for (int b = 0; b < MAX_BUFFERS; b++) {
        if (!sdk_state.buffers[b].valid) continue;
        if (!smallest || sdk_state.buffers[b].size < smallest) smallest = sdk_state.buffers[b].size;
        lossless &= sdk_state.buffers[b].policy == RSDK_BUFFER_POLICY_LOSSLESS;
    }
    atomic_store(&sdk_state.staging_size, (uint32_t)(smallest ? smallest : 1u << 20));
    atomic_store(&sdk_state.lossless, lossless);
    sdk_update_targets();
    if (api_callbacks && sdk_state.tables_seen && !sdk_state.subscriber) {
        if (emu_core_subscribe(&sdk_state.subscriber, core_callback, NULL) == EMU_ST_OK)
            emu_core_enable_domain(sdk_state.subscriber, EMU_DOMAIN_RUNTIME, 1);
        else
            sdk_state.subscriber = NULL;
    } else if ((!api_callbacks || !sdk_state.tables_seen) && sdk_state.subscriber) {
        emu_core_unsubscribe(sdk_state.subscriber);
        sdk_state.subscriber = NULL;
    }
}

/* Contexts, buffers and services: only while a tool initializes. */
static int configuring(void)
{
    return sdk_state.init_status == -1 || sdk_state.late_configuring;
}

RSDK_API int rocprofiler_create_context(rsdk_context_id *ctx)
{
    if (!ctx) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sdk_state.lock);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (ctx->handle != 0) st = RSDK_STATUS_ERROR_INVALID_ARGUMENT; /* CONTEXT_ID_NOT_ZERO */
    int c = 0;
    while (st == RSDK_STATUS_SUCCESS && c < MAX_CONTEXTS && sdk_state.contexts[c].valid) c++;
    if (st == RSDK_STATUS_SUCCESS && c == MAX_CONTEXTS) st = RSDK_STATUS_ERROR;
    if (st == RSDK_STATUS_SUCCESS) {
        memset(&sdk_state.contexts[c], 0, sizeof sdk_state.contexts[c]);
        sdk_state.contexts[c].valid = 1;
        sdk_state.contexts[c].owner = sdk_state.current_client;
        ctx->handle = (uint64_t)c + 1;
    }
    pthread_mutex_unlock(&sdk_state.lock);
    return st;
}

static int set_context_active(rsdk_context_id ctx, int on)
{
    pthread_mutex_lock(&sdk_state.lock);
    sdk_context *c = sdk_find_context(ctx.handle);
    if (!c || sdk_state.fini_status) {
        pthread_mutex_unlock(&sdk_state.lock);
        return !c ? RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND : RSDK_STATUS_ERROR_FINALIZED;
    }
    int was = c->active;
    c->active = on;
    sdk_apply_services();
    int replay = on && !was && c->called[RSDK_CALLBACK_CODE_OBJECT].on;
    pthread_mutex_unlock(&sdk_state.lock);
    if (replay) {
        /* a code-object service starting hears of the symbols loaded before */
        sdk_replay_symbols(ctx.handle);
    }
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_start_context(rsdk_context_id ctx)
{
    return set_context_active(ctx, 1);
}

RSDK_API int rocprofiler_stop_context(rsdk_context_id ctx)
{
    return set_context_active(ctx, 0);
}

RSDK_API int rocprofiler_context_is_active(rsdk_context_id ctx, int *status)
{
    pthread_mutex_lock(&sdk_state.lock);
    sdk_context *c = sdk_find_context(ctx.handle);
    if (c && status) *status = c->active;
    pthread_mutex_unlock(&sdk_state.lock);
    return c && status ? RSDK_STATUS_SUCCESS : RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
}

RSDK_API int rocprofiler_create_buffer(rsdk_context_id ctx, size_t size, size_t watermark, uint32_t policy,
                                       rsdk_buffer_tracing_cb callback, void *data, rsdk_buffer_id *out)
{
    if (!callback || !out || size < sizeof(rsdk_kernel_dispatch_record) || size > UINT32_MAX ||
        (policy != RSDK_BUFFER_POLICY_DISCARD && policy != RSDK_BUFFER_POLICY_LOSSLESS))
        return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sdk_state.lock);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!sdk_find_context(ctx.handle)) st = RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    int b = 0;
    while (st == RSDK_STATUS_SUCCESS && b < MAX_BUFFERS && sdk_state.buffers[b].valid) b++;
    if (st == RSDK_STATUS_SUCCESS && b == MAX_BUFFERS) st = RSDK_STATUS_ERROR;
    if (st == RSDK_STATUS_SUCCESS) {
        /* the SDK hands a buffer over once it holds the watermark's worth */
        size_t deliver = watermark && watermark < size ? watermark : size;
        if (deliver < sizeof(rsdk_kernel_dispatch_record)) deliver = sizeof(rsdk_kernel_dispatch_record);
        sdk_state.buffers[b] = (sdk_buffer){1, ctx.handle, (deliver + 7) & ~(size_t)7, policy, callback, data, 0};
        out->handle = (uint64_t)b + 1;
        /* the core stages records in buffers the tool's size */
        emu_core_register_buffers(sdk_staging_request, sdk_staging_complete);
        sdk_apply_services();
    }
    pthread_mutex_unlock(&sdk_state.lock);
    return st;
}

RSDK_API int rocprofiler_flush_buffer(rsdk_buffer_id id)
{
    pthread_mutex_lock(&sdk_state.lock);
    int ok = sdk_find_buffer(id.handle) != NULL, fin = sdk_state.fini_status > 0;
    pthread_mutex_unlock(&sdk_state.lock);
    if (!ok) return RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
    if (fin) return RSDK_STATUS_ERROR_FINALIZED;
    emu_core_flush_all(0);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_destroy_buffer(rsdk_buffer_id id)
{
    pthread_mutex_lock(&sdk_state.lock);
    sdk_buffer *b = sdk_find_buffer(id.handle);
    if (b) b->valid = 0;
    pthread_mutex_unlock(&sdk_state.lock);
    return b ? RSDK_STATUS_SUCCESS : RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
}

static int configure_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops, size_t n, int buffered,
                             rsdk_callback_tracing_cb callback, void *data, uint64_t buffer_handle)
{
    if (kind >= KIND_SLOTS || n > MAX_OPS || (n && !ops)) return RSDK_STATUS_ERROR_KIND_NOT_FOUND;
    pthread_mutex_lock(&sdk_state.lock);
    sdk_context *c = sdk_find_context(ctx.handle);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!c) st = RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    else if (buffered && !sdk_find_buffer(buffer_handle)) st = RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
    else if ((buffered ? c->buffered : c->called)[kind].on) st = RSDK_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    if (st == RSDK_STATUS_SUCCESS) {
        service *s = &(buffered ? c->buffered : c->called)[kind];
        *s = (service){1, callback, data, buffer_handle, {0}, n};
        if (n) memcpy(s->ops, ops, n * sizeof *ops);
    }
    pthread_mutex_unlock(&sdk_state.lock);
    return st;
}

RSDK_API int rocprofiler_configure_buffer_tracing_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops,
                                                          size_t n, rsdk_buffer_id id)
{
    if (kind != RSDK_BUFFER_KERNEL_DISPATCH && kind != RSDK_BUFFER_MEMORY_COPY && kind != RSDK_BUFFER_HIP_RUNTIME_API)
        return RSDK_STATUS_ERROR_NOT_IMPLEMENTED; /* kinds the emulated device never produces */
    return configure_service(ctx, kind, ops, n, 1, NULL, NULL, id.handle);
}

RSDK_API int rocprofiler_configure_callback_tracing_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops,
                                                            size_t n, rsdk_callback_tracing_cb callback, void *data)
{
    if (!callback) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    if (kind != RSDK_CALLBACK_CODE_OBJECT && kind != RSDK_CALLBACK_MARKER_CORE_API &&
        kind != RSDK_CALLBACK_HIP_RUNTIME_API)
        return RSDK_STATUS_ERROR_NOT_IMPLEMENTED;
    return configure_service(ctx, kind, ops, n, 0, callback, data, 0);
}

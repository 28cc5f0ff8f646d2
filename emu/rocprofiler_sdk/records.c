/*
 * rocprofiler-sdk records: self-sizing structs in the emulated sdk_version's
 * layout (kernel dispatches, memory copies, HIP API calls; memsets are fill
 * kernel dispatches), with the external id of the context that records
 * their kind.
 */
#include <string.h>

#include "sdk.h"

size_t sdk_record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL:
    case EMU_REC_MEMSET: return sizeof(rsdk_kernel_dispatch_record);
    case EMU_REC_MEMCPY:
        return sdk_version() >= RSDK_VERSION(0, 6, 0) ? sizeof(rsdk_memory_copy_record) : RSDK_MEMORY_COPY_RECORD_MIN_SIZE;
    case EMU_REC_RUNTIME: return sdk_ancestor_layout() ? sizeof(rsdk_api_record_ancestor) : sizeof(rsdk_api_record);
    case EMU_REC_UNKNOWN: return UNKNOWN_RECORD_SIZE;
    default: return 0; /* no driver API, and external ids ride in the records */
    }
}

static uint64_t queue_of(uint32_t device, uint32_t stream)
{
    return 0x7f1000000000ull + ((uint64_t)device << 16) + ((uint64_t)stream << 8);
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
    return (uint32_t)(b ? (a + b - 1) / b : a);
}

static void write_dispatch(uint8_t *dst, const emu_activity *a)
{
    static _Atomic uint64_t dispatch_ids;
    rsdk_kernel_dispatch_record r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.kind = RSDK_BUFFER_KERNEL_DISPATCH;
    r.operation = RSDK_KERNEL_DISPATCH_COMPLETE;
    r.correlation_id.internal = a->correlation;
    r.correlation_id.external.value = a->has_external_id ? a->external_id : 0;
    r.start_timestamp = a->start;
    r.end_timestamp = a->end;
    rsdk_kernel_dispatch_info *i = &r.dispatch_info;
    i->size = offsetof(rsdk_kernel_dispatch_info, reserved_padding);
    i->agent_id.handle = GPU_AGENT(a->device);
    i->queue_id = queue_of(a->device, a->stream);
    i->dispatch_id = atomic_fetch_add(&dispatch_ids, 1) + 1;
    if (a->kind == EMU_REC_MEMSET) {
        i->kernel_id = sdk_kernel_id(FILL_KERNEL, 0, 16);
        i->workgroup_size = (rsdk_dim3){256, 1, 1};
        /* the fill kernel writes 16 bytes per work-item */
        i->grid_size = (rsdk_dim3){256 * div_up(div_up(a->u.memset.bytes, 16), 256), 1, 1};
    } else {
        int32_t s = a->u.kernel.static_shared_memory, d = a->u.kernel.dynamic_shared_memory;
        uint32_t declared = s > 0 ? (uint32_t)s : 0;
        i->kernel_id = sdk_kernel_id(a->u.kernel.name, declared, a->u.kernel.registers_per_thread);
        i->group_segment_size = declared + (d > 0 ? (uint32_t)d : 0);
        /* an AQL grid counts work-items */
        const int32_t *g = a->u.kernel.grid, *b = a->u.kernel.block;
        i->workgroup_size = (rsdk_dim3){(uint32_t)b[0], (uint32_t)b[1], (uint32_t)b[2]};
        i->grid_size = (rsdk_dim3){(uint32_t)g[0] * (uint32_t)b[0], (uint32_t)g[1] * (uint32_t)b[1],
                                   (uint32_t)g[2] * (uint32_t)b[2]};
    }
    memcpy(dst, &r, sizeof r);
}

static void write_copy(uint8_t *dst, const emu_activity *a)
{
    rsdk_memory_copy_record r;
    memset(&r, 0, sizeof r);
    r.size = sdk_record_size(EMU_REC_MEMCPY);
    r.kind = RSDK_BUFFER_MEMORY_COPY;
    uint64_t src = GPU_AGENT(a->u.memcpy.src_device), to = GPU_AGENT(a->u.memcpy.dst_device);
    switch (a->u.memcpy.copy_kind) {
    case EMU_COPY_HTOD: r.operation = RSDK_MEMORY_COPY_HOST_TO_DEVICE; src = CPU_AGENT; break;
    case EMU_COPY_DTOH: r.operation = RSDK_MEMORY_COPY_DEVICE_TO_HOST; to = CPU_AGENT; break;
    case EMU_COPY_HTOH: r.operation = RSDK_MEMORY_COPY_HOST_TO_HOST; src = to = CPU_AGENT; break;
    default: r.operation = RSDK_MEMORY_COPY_DEVICE_TO_DEVICE; break;
    }
    r.correlation_id.internal = a->correlation;
    r.correlation_id.external.value = a->has_external_id ? a->external_id : 0;
    r.start_timestamp = a->start;
    r.end_timestamp = a->end;
    r.src_agent_id.handle = src;
    r.dst_agent_id.handle = to;
    r.bytes = a->u.memcpy.bytes;
    r.dst_address = 0x7f0000300000ull;
    r.src_address = 0x7f0000400000ull;
    memcpy(dst, &r, r.size);
}

static void write_api(uint8_t *dst, const emu_activity *a)
{
    rsdk_user_data external = {.value = a->has_external_id ? a->external_id : 0};
    if (sdk_ancestor_layout()) {
        rsdk_api_record_ancestor r = {sizeof r, RSDK_BUFFER_HIP_RUNTIME_API, (int32_t)a->u.api.cbid,
                                      {a->correlation, external, 0}, a->start, a->end, a->u.api.thread};
        memcpy(dst, &r, sizeof r);
    } else {
        rsdk_api_record r = {sizeof r, RSDK_BUFFER_HIP_RUNTIME_API, (int32_t)a->u.api.cbid,
                             {a->correlation, external}, a->start, a->end, a->u.api.thread};
        memcpy(dst, &r, sizeof r);
    }
}

void sdk_write_record(uint8_t *dst, const emu_activity *a)
{
    switch (a->kind) {
    case EMU_REC_KERNEL:
    case EMU_REC_MEMSET: write_dispatch(dst, a); break;
    case EMU_REC_MEMCPY: write_copy(dst, a); break;
    case EMU_REC_RUNTIME: write_api(dst, a); break;
    case EMU_REC_UNKNOWN: {
        /* a kind the SDK has and a tracer may not decode */
        uint64_t size = UNKNOWN_RECORD_SIZE;
        uint32_t kind = RSDK_BUFFER_PAGE_MIGRATION;
        memcpy(dst, &size, sizeof size);
        memcpy(dst + 8, &kind, sizeof kind);
        break;
    }
    default: break;
    }
}

int sdk_record_external(emu_rec_kind kind, uint64_t *id)
{
    uint64_t context = atomic_load_explicit(&sdk_state.kind_context[kind], memory_order_relaxed);
    uint64_t top = context ? sdk_top_external(context) : 0;
    if (!top) return 0;
    *id = top;
    return 1;
}

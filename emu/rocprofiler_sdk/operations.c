/*
 * rocprofiler-sdk operations: the HIP runtime API's numbering (the
 * emulator's own: tools find operations by name), ROCTX's, code objects' and
 * memory copies', the name queries and the core's map to them.
 */
#include <string.h>

#include "sdk.h"

static const char *const hip_names[OP_HIP_COUNT] = {
    "hipApiName", "hipDeviceSynchronize", "hipLaunchKernel", "hipMemcpy", "hipMemcpyAsync", "hipMemset",
    "hipMemsetAsync", "hipStreamSynchronize",
};
static const char *const roctx_names[OP_ROCTX_COUNT] = {"roctxMarkA", "roctxRangePushA", "roctxRangePop",
                                                        "roctxRangeStartA", "roctxRangeStop"};
static const char *const code_object_names[] = {"CODE_OBJECT_NONE", "CODE_OBJECT_LOAD",
                                                "CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER"};
static const char *const copy_names[RSDK_MEMORY_COPY_LAST] = {"MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST",
                                                              "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST",
                                                              "MEMORY_COPY_DEVICE_TO_DEVICE"};

static int operation_name(uint32_t kind, uint32_t op, const char **name, uint64_t *len)
{
    const char *const *table = NULL;
    size_t count = 0;
    switch (kind) {
    case RSDK_BUFFER_HIP_RUNTIME_API: table = hip_names; count = OP_HIP_COUNT; break;
    case RSDK_BUFFER_MARKER_CORE_API: table = roctx_names; count = OP_ROCTX_COUNT; break;
    case RSDK_BUFFER_MEMORY_COPY: table = copy_names; count = RSDK_MEMORY_COPY_LAST; break;
    default: return RSDK_STATUS_ERROR_KIND_NOT_FOUND;
    }
    if (op >= count) return RSDK_STATUS_ERROR_OPERATION_NOT_FOUND;
    if (name) *name = table[op];
    if (len) *len = strlen(table[op]);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_query_buffer_tracing_kind_operation_name(uint32_t kind, uint32_t op, const char **name,
                                                                  uint64_t *len)
{
    return operation_name(kind, op, name, len);
}

RSDK_API int rocprofiler_query_callback_tracing_kind_operation_name(uint32_t kind, uint32_t op, const char **name,
                                                                    uint64_t *len)
{
    /* the callback kinds number HIP and markers as the buffer kinds do */
    if (kind == RSDK_CALLBACK_CODE_OBJECT) {
        if (op >= sizeof code_object_names / sizeof code_object_names[0]) return RSDK_STATUS_ERROR_OPERATION_NOT_FOUND;
        if (name) *name = code_object_names[op];
        if (len) *len = strlen(code_object_names[op]);
        return RSDK_STATUS_SUCCESS;
    }
    return operation_name(kind, op, name, len);
}

uint32_t sdk_cbid(emu_domain domain, emu_op op, emu_copy_kind copy_kind)
{
    (void)copy_kind;
    if (domain != EMU_DOMAIN_RUNTIME) return 0; /* HIP has no driver API apart */
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL: return OP_LAUNCH_KERNEL;
    case EMU_OP_MEMCPY: return OP_MEMCPY;
    case EMU_OP_MEMCPY_ASYNC: return OP_MEMCPY_ASYNC;
    case EMU_OP_MEMSET: return OP_MEMSET;
    case EMU_OP_MEMSET_ASYNC: return OP_MEMSET_ASYNC;
    case EMU_OP_STREAM_SYNCHRONIZE: return OP_STREAM_SYNCHRONIZE;
    case EMU_OP_DEVICE_SYNCHRONIZE: return OP_DEVICE_SYNCHRONIZE;
    default: return 0;
    }
}

const char *sdk_callback_name(emu_domain domain, uint32_t id)
{
    return domain == EMU_DOMAIN_RUNTIME && id < OP_HIP_COUNT ? hip_names[id] : NULL;
}

/*
 * With ROCm's headers found (cmake/RocprofilerSdk.cmake), devtrace's
 * declaration of the rocprofiler-sdk ABI (rocprofiler_sdk_abi.h) is checked
 * against them, field by field, at build time. Without them this file
 * compiles to nothing.
 */
#ifdef DT_HAVE_ROCPROFILER_SDK
#include <stddef.h>

/* the SDK's own samples include HIP's API header first */
#if defined(__has_include)
#if __has_include(<hip/hip_runtime_api.h>)
#include <hip/hip_runtime_api.h>
#endif
#endif
#include <rocprofiler-sdk/agent.h>
#include <rocprofiler-sdk/buffer_tracing.h>
#include <rocprofiler-sdk/fwd.h>

#include "backends/rocprofiler_sdk_abi.h"

#define SAME_OFFSET(ours, theirs, field)                                                                   \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field), #theirs "." #field " moved")

_Static_assert(sizeof(rocprofiler_record_header_t) == sizeof(rsdk_record_header), "record header");
_Static_assert(offsetof(rocprofiler_record_header_t, payload) == offsetof(rsdk_record_header, payload),
               "record header payload");
_Static_assert(sizeof(rocprofiler_kernel_dispatch_info_t) == sizeof(rsdk_kernel_dispatch_info), "dispatch info");
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, agent_id);
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, queue_id);
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, kernel_id);
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, group_segment_size);
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, workgroup_size);
SAME_OFFSET(rsdk_kernel_dispatch_info, rocprofiler_kernel_dispatch_info_t, grid_size);
SAME_OFFSET(rsdk_kernel_dispatch_record, rocprofiler_buffer_tracing_kernel_dispatch_record_t, correlation_id);
SAME_OFFSET(rsdk_kernel_dispatch_record, rocprofiler_buffer_tracing_kernel_dispatch_record_t, thread_id);
SAME_OFFSET(rsdk_kernel_dispatch_record, rocprofiler_buffer_tracing_kernel_dispatch_record_t, start_timestamp);
SAME_OFFSET(rsdk_kernel_dispatch_record, rocprofiler_buffer_tracing_kernel_dispatch_record_t, end_timestamp);
SAME_OFFSET(rsdk_kernel_dispatch_record, rocprofiler_buffer_tracing_kernel_dispatch_record_t, dispatch_info);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, correlation_id);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, start_timestamp);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, end_timestamp);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, dst_agent_id);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, src_agent_id);
SAME_OFFSET(rsdk_memory_copy_record, rocprofiler_buffer_tracing_memory_copy_record_t, bytes);
/* API records: whichever correlation id these headers declare */
_Static_assert(sizeof(rocprofiler_correlation_id_t) == sizeof(rsdk_correlation_id) ||
                   sizeof(rocprofiler_correlation_id_t) == sizeof(rsdk_correlation_id_ancestor),
               "rocprofiler_correlation_id_t is neither layout devtrace knows");
_Static_assert(offsetof(rocprofiler_buffer_tracing_hip_api_record_t, start_timestamp) ==
                   (sizeof(rocprofiler_correlation_id_t) == sizeof(rsdk_correlation_id)
                        ? offsetof(rsdk_api_record, start_timestamp)
                        : offsetof(rsdk_api_record_ancestor, start_timestamp)),
               "HIP API record start");
_Static_assert(offsetof(rocprofiler_buffer_tracing_hip_api_record_t, thread_id) ==
                   (sizeof(rocprofiler_correlation_id_t) == sizeof(rsdk_correlation_id)
                        ? offsetof(rsdk_api_record, thread_id)
                        : offsetof(rsdk_api_record_ancestor, thread_id)),
               "HIP API record thread");
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, type);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, lds_size_in_kb);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, wave_front_size);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, cu_count);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, gfx_target_version);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, max_waves_per_cu);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, workgroup_max_size);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, local_mem_size);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, name);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, product_name);
SAME_OFFSET(rsdk_agent, rocprofiler_agent_v0_t, logical_node_id);
_Static_assert(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH == RSDK_BUFFER_KERNEL_DISPATCH, "kind");
_Static_assert(ROCPROFILER_BUFFER_TRACING_MEMORY_COPY == RSDK_BUFFER_MEMORY_COPY, "kind");
_Static_assert(ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API == RSDK_BUFFER_HIP_RUNTIME_API, "kind");
_Static_assert(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT == RSDK_CALLBACK_CODE_OBJECT, "kind");
_Static_assert(ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API == RSDK_CALLBACK_MARKER_CORE_API, "kind");
_Static_assert(ROCPROFILER_BUFFER_POLICY_LOSSLESS == RSDK_BUFFER_POLICY_LOSSLESS, "policy");
#else
typedef int dt_rocprofiler_sdk_abi_unchecked; /* ISO C: no empty translation unit */
#endif

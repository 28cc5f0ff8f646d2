/* libdevtrace_inject as a rocprofiler-sdk tool: its exported
   rocprofiler_configure is how ROCm finds a preloaded tool. */
#include "dt_internal.h"
#include "backends/rocprofiler_sdk.h"

/* rocprofiler-sdk's tool entry point: ROCm calls every visible
   rocprofiler_configure when its runtimes initialize. The session started
   above has usually registered devtrace already (and this declines). */
__attribute__((visibility("default"))) rsdk_tool_configure_result *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, rsdk_client_id *client_id);
rsdk_tool_configure_result *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                                  rsdk_client_id *client_id)
{
    return dt_rocprofiler_sdk_configure(version, runtime_version, priority, client_id);
}

/*
 * rocprofiler-sdk agents: a host and the emulated devices, as MI300X-like
 * GPUs; and the HSA runtime's view of whether it initialized.
 */
#include <string.h>

#include "sdk.h"

static rsdk_agent g_agents[1 + EMU_MAX_DEVICES];
static const void *g_agent_ptrs[1 + EMU_MAX_DEVICES];

static size_t build_agents(void)
{
    int n = emu_device_count();
    memset(g_agents, 0, sizeof g_agents);
    rsdk_agent *cpu = &g_agents[0];
    cpu->size = sizeof *cpu;
    cpu->id.handle = CPU_AGENT;
    cpu->type = RSDK_AGENT_TYPE_CPU;
    cpu->cpu_cores_count = 16;
    cpu->name = cpu->product_name = "devtrace emulated host";
    cpu->vendor_name = "AMD";
    cpu->model_name = "";
    for (int d = 0; d < n; d++) {
        rsdk_agent *a = &g_agents[1 + d];
        a->size = sizeof *a;
        a->id.handle = GPU_AGENT(d);
        a->type = RSDK_AGENT_TYPE_GPU;
        a->simd_count = 1216;
        a->max_waves_per_simd = 8;
        a->lds_size_in_kb = 64;
        a->wave_front_size = 64;
        a->num_xcc = 8;
        a->cu_count = 304;
        a->simd_per_cu = 4;
        a->gfx_target_version = 90402; /* gfx942 */
        a->max_waves_per_cu = 32;
        a->workgroup_max_size = 1024;
        a->local_mem_size = UINT64_C(192) << 30;
        a->workgroup_max_dim = (rsdk_dim3){1024, 1024, 1024};
        a->grid_max_dim = (rsdk_dim3){UINT32_MAX, UINT32_MAX, UINT32_MAX};
        a->name = "gfx942";
        a->vendor_name = "AMD";
        a->product_name = "AMD Instinct MI300X (devtrace emulator)";
        a->model_name = "aqua_vanjaram";
        a->node_id = (uint32_t)d + 1;
        a->logical_node_id = d + 1;
    }
    for (int i = 0; i <= n; i++) g_agent_ptrs[i] = &g_agents[i];
    return (size_t)n + 1;
}

RSDK_API int rocprofiler_query_available_agents(uint32_t agent_version, rsdk_query_agents_cb callback,
                                                size_t agent_size, void *data)
{
    emu_init();
    if (!callback || agent_version != RSDK_AGENT_INFO_VERSION_0) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    if (agent_size > sizeof(rsdk_agent)) return RSDK_STATUS_ERROR_INCOMPATIBLE_ABI;
    size_t n = build_agents();
    return callback(agent_version, g_agent_ptrs, n, data);
}

/* hsa_system_get_info of the HSA runtime the SDK links against: whether
   the emulated runtime has initialized. */
RSDK_API int hsa_system_get_info(int attribute, void *value)
{
    pthread_mutex_lock(&sdk_state.lock);
    int up = sdk_state.runtime_initialized;
    pthread_mutex_unlock(&sdk_state.lock);
    if (!up) return RSDK_HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (attribute == RSDK_HSA_SYSTEM_INFO_VERSION_MAJOR && value) *(uint16_t *)value = 1;
    return RSDK_HSA_STATUS_SUCCESS;
}

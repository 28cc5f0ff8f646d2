/*
 * devtrace's declaration of the part of AMD's rocprofiler-sdk ABI it uses
 * (ROCm/rocprofiler-sdk, MIT; source/include/rocprofiler-sdk/ headers), for
 * builds without a ROCm installation and for devtrace's emulator, which
 * implements exactly this.
 *
 * Read from the public headers of rocprofiler-sdk 0.4.0 (ROCm 6.2), 0.5.0
 * (ROCm 6.3), 0.6.0 (ROCm 6.4) and 1.0.0 (ROCm 7.0), and of its later home
 * ROCm/rocm-systems (projects/rocprofiler-sdk). What differs between them
 * and matters here:
 *  - rocprofiler_correlation_id_t gained a third word (`ancestor`) after
 *    1.0.0, which moves every field after it in API records and in the
 *    callback record; asynchronous records (kernel dispatch, memory copy)
 *    keep the two-word rocprofiler_async_correlation_id_t. Which release
 *    made the change is not said in the changelogs: RSDK_ANCESTOR_VERSION
 *    is inferred, and the decoder tells the two apart by the records'
 *    own sizes (API records) and by where the expected kind sits (callback
 *    records), not by the version alone.
 *  - the memory-copy record gained dst_address/src_address (80 -> 96
 *    bytes), and the kernel-symbol data sgpr/vgpr counts (56 -> 88 bytes):
 *    both self-sized, read only where `size` covers them.
 *  - rocprofiler_agent_v0_t grew fields after logical_node_id (uuid,
 *    runtime visibility, logical_node_type_id); the fields declared here
 *    precede them in every release.
 * Enumerator values are the headers'; kinds and operations were only ever
 * appended to.
 *
 * With ROCm installed (ROCM_PATH, default /opt/rocm) the build checks this
 * declaration against the real headers (rocprofiler_sdk_abi_check.c).
 *
 * x86-64 LP64, natural alignment. Every record starts with a uint64_t size.
 */
#ifndef DT_ROCPROFILER_SDK_ABI_H
#define DT_ROCPROFILER_SDK_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ROCPROFILER_VERSION as rocprofiler_configure receives it */
#define RSDK_VERSION(major, minor, patch) ((major) * 10000u + (minor) * 100u + (patch))
/* Inferred: the first release whose correlation id has `ancestor` (see above). */
#define RSDK_ANCESTOR_VERSION RSDK_VERSION(1, 1, 0)
/* rocprofiler_force_configure traces runtimes initialized before the SDK
   loaded (CHANGELOG: "Late-start profiling support", 1.3.0). */
#define RSDK_LATE_START_VERSION RSDK_VERSION(1, 3, 0)

/* rocprofiler_status_t (fwd.h) */
enum {
    RSDK_STATUS_SUCCESS = 0,
    RSDK_STATUS_ERROR = 1,
    RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND = 2,
    RSDK_STATUS_ERROR_BUFFER_NOT_FOUND = 3,
    RSDK_STATUS_ERROR_KIND_NOT_FOUND = 4,
    RSDK_STATUS_ERROR_OPERATION_NOT_FOUND = 5,
    RSDK_STATUS_ERROR_THREAD_NOT_FOUND = 6,
    RSDK_STATUS_ERROR_AGENT_NOT_FOUND = 7,
    RSDK_STATUS_ERROR_CONTEXT_INVALID = 10,
    RSDK_STATUS_ERROR_BUFFER_BUSY = 14,
    RSDK_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED = 15,
    RSDK_STATUS_ERROR_CONFIGURATION_LOCKED = 16,
    RSDK_STATUS_ERROR_NOT_IMPLEMENTED = 17,
    RSDK_STATUS_ERROR_INCOMPATIBLE_ABI = 18,
    RSDK_STATUS_ERROR_INVALID_ARGUMENT = 19,
    RSDK_STATUS_ERROR_FINALIZED = 21,
};

/* rocprofiler_buffer_category_t */
enum { RSDK_BUFFER_CATEGORY_NONE = 0, RSDK_BUFFER_CATEGORY_TRACING = 1, RSDK_BUFFER_CATEGORY_PC_SAMPLING = 2 };

/* rocprofiler_agent_type_t */
enum { RSDK_AGENT_TYPE_NONE = 0, RSDK_AGENT_TYPE_CPU = 1, RSDK_AGENT_TYPE_GPU = 2 };

/* rocprofiler_callback_phase_t */
enum { RSDK_PHASE_NONE = 0, RSDK_PHASE_ENTER = 1, RSDK_PHASE_LOAD = 1, RSDK_PHASE_EXIT = 2, RSDK_PHASE_UNLOAD = 2 };

/* rocprofiler_callback_tracing_kind_t */
enum {
    RSDK_CALLBACK_HIP_RUNTIME_API = 5,
    RSDK_CALLBACK_MARKER_CORE_API = 7,
    RSDK_CALLBACK_CODE_OBJECT = 10,
};

/* rocprofiler_buffer_tracing_kind_t */
enum {
    RSDK_BUFFER_HIP_RUNTIME_API = 5,
    RSDK_BUFFER_MARKER_CORE_API = 7,
    RSDK_BUFFER_MEMORY_COPY = 10,
    RSDK_BUFFER_KERNEL_DISPATCH = 11,
    RSDK_BUFFER_PAGE_MIGRATION = 12,
};

/* rocprofiler_code_object_operation_t */
enum { RSDK_CODE_OBJECT_LOAD = 1, RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER = 2 };

/* rocprofiler_memory_copy_operation_t */
enum {
    RSDK_MEMORY_COPY_NONE = 0,
    RSDK_MEMORY_COPY_HOST_TO_HOST = 1,
    RSDK_MEMORY_COPY_HOST_TO_DEVICE = 2,
    RSDK_MEMORY_COPY_DEVICE_TO_HOST = 3,
    RSDK_MEMORY_COPY_DEVICE_TO_DEVICE = 4,
    RSDK_MEMORY_COPY_LAST = 5,
};

/* rocprofiler_kernel_dispatch_operation_t */
enum { RSDK_KERNEL_DISPATCH_ENQUEUE = 1, RSDK_KERNEL_DISPATCH_COMPLETE = 2 };

/* rocprofiler_buffer_policy_t */
enum { RSDK_BUFFER_POLICY_DISCARD = 1, RSDK_BUFFER_POLICY_LOSSLESS = 2 };

/* rocprofiler_agent_version_t */
enum { RSDK_AGENT_INFO_VERSION_0 = 1 };

/* ------------------------------------------------------------------ */
/* Handles and small types                                             */
/* ------------------------------------------------------------------ */
typedef struct rsdk_context_id { uint64_t handle; } rsdk_context_id;
typedef struct rsdk_buffer_id { uint64_t handle; } rsdk_buffer_id;
typedef struct rsdk_agent_id { uint64_t handle; } rsdk_agent_id;
typedef union rsdk_user_data { uint64_t value; void *ptr; } rsdk_user_data;
typedef struct rsdk_dim3 { uint32_t x, y, z; } rsdk_dim3;

/* rocprofiler_correlation_id_t before `ancestor`, and
   rocprofiler_async_correlation_id_t after */
typedef struct rsdk_correlation_id {
    uint64_t internal;
    rsdk_user_data external;
} rsdk_correlation_id;

/* rocprofiler_correlation_id_t with `ancestor` */
typedef struct rsdk_correlation_id_ancestor {
    uint64_t internal;
    rsdk_user_data external;
    uint64_t ancestor;
} rsdk_correlation_id_ancestor;

/* rocprofiler_record_header_t: category and kind, or both as one hash */
typedef struct rsdk_record_header {
    union {
        struct { uint32_t category, kind; };
        uint64_t hash;
    };
    void *payload;
} rsdk_record_header;

/* ------------------------------------------------------------------ */
/* Buffer records                                                      */
/* ------------------------------------------------------------------ */
/* rocprofiler_buffer_tracing_{hip,marker,hsa}_api_record_t, two-word
   correlation (0.4.0 .. 1.0.0) */
typedef struct rsdk_api_record {
    uint64_t size;
    uint32_t kind;
    int32_t operation;
    rsdk_correlation_id correlation_id;
    uint64_t start_timestamp, end_timestamp;
    uint64_t thread_id;
} rsdk_api_record;

/* the same with `ancestor` */
typedef struct rsdk_api_record_ancestor {
    uint64_t size;
    uint32_t kind;
    int32_t operation;
    rsdk_correlation_id_ancestor correlation_id;
    uint64_t start_timestamp, end_timestamp;
    uint64_t thread_id;
} rsdk_api_record_ancestor;

/* rocprofiler_buffer_tracing_memory_copy_record_t (the addresses: 0.6.0
   on; records without them are 80 bytes) */
typedef struct rsdk_memory_copy_record {
    uint64_t size;
    uint32_t kind;
    uint32_t operation;
    rsdk_correlation_id correlation_id;
    uint64_t thread_id;
    uint64_t start_timestamp, end_timestamp;
    rsdk_agent_id dst_agent_id, src_agent_id;
    uint64_t bytes;
    uint64_t dst_address, src_address;
} rsdk_memory_copy_record;
#define RSDK_MEMORY_COPY_RECORD_MIN_SIZE offsetof(rsdk_memory_copy_record, dst_address)

/* rocprofiler_kernel_dispatch_info_t (128 bytes by the SDK's own
   static_assert; grid_size counts work-items, as an AQL packet does) */
typedef struct rsdk_kernel_dispatch_info {
    uint64_t size;
    rsdk_agent_id agent_id;
    uint64_t queue_id;
    uint64_t kernel_id;
    uint64_t dispatch_id;
    uint32_t private_segment_size;
    uint32_t group_segment_size;
    rsdk_dim3 workgroup_size;
    rsdk_dim3 grid_size;
    uint8_t reserved_padding[56];
} rsdk_kernel_dispatch_info;

/* rocprofiler_buffer_tracing_kernel_dispatch_record_t */
typedef struct rsdk_kernel_dispatch_record {
    uint64_t size;
    uint32_t kind;
    uint32_t operation;
    rsdk_correlation_id correlation_id;
    uint64_t thread_id;
    uint64_t start_timestamp, end_timestamp;
    rsdk_kernel_dispatch_info dispatch_info;
} rsdk_kernel_dispatch_record;
/* bytes a dispatch record needs for the fields devtrace reads */
#define RSDK_KERNEL_DISPATCH_RECORD_MIN_SIZE \
    (offsetof(rsdk_kernel_dispatch_record, dispatch_info) + offsetof(rsdk_kernel_dispatch_info, reserved_padding))

/* ------------------------------------------------------------------ */
/* Callback tracing                                                    */
/* ------------------------------------------------------------------ */
/* rocprofiler_callback_tracing_record_t, passed by value (56 bytes, or 64
   with `ancestor`): both are passed in memory, so a callback declared with
   the larger one reads the smaller one's fields where they are. */
typedef struct rsdk_callback_record {
    rsdk_context_id context_id;
    uint64_t thread_id;
    rsdk_correlation_id correlation_id;
    uint32_t kind;
    int32_t operation;
    uint32_t phase;
    void *payload;
} rsdk_callback_record;

typedef struct rsdk_callback_record_ancestor {
    rsdk_context_id context_id;
    uint64_t thread_id;
    rsdk_correlation_id_ancestor correlation_id;
    uint32_t kind;
    int32_t operation;
    uint32_t phase;
    void *payload;
} rsdk_callback_record_ancestor;

/* The callback's parameter: room for either record. */
typedef struct rsdk_callback_arg { uint64_t words[8]; } rsdk_callback_arg;

/* rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t
   (56 bytes in 0.4.0; the register counts were appended later) */
typedef struct rsdk_kernel_symbol {
    uint64_t size;
    uint64_t kernel_id;
    uint64_t code_object_id;
    const char *kernel_name;
    uint64_t kernel_object;
    uint32_t kernarg_segment_size;
    uint32_t kernarg_segment_alignment;
    uint32_t group_segment_size;
    uint32_t private_segment_size;
    uint32_t sgpr_count;
    uint32_t arch_vgpr_count;
    uint32_t accum_vgpr_count;
    int64_t kernel_code_entry_byte_offset;
    uint64_t kernel_address;
} rsdk_kernel_symbol;

/* rocprofiler_callback_tracing_marker_api_data_t: size, then the args
   union, whose roctxRangePushA/roctxMarkA member is { const char *message } */
typedef struct rsdk_marker_api_data {
    uint64_t size;
    const char *message;
} rsdk_marker_api_data;

typedef void (*rsdk_callback_tracing_cb)(rsdk_callback_arg record, rsdk_user_data *user_data, void *data);
typedef void (*rsdk_buffer_tracing_cb)(rsdk_context_id context, rsdk_buffer_id buffer,
                                       rsdk_record_header **headers, size_t num_headers, void *data,
                                       uint64_t drop_count);
typedef int (*rsdk_operation_args_cb)(uint32_t kind, uint32_t operation, uint32_t arg_number,
                                      const void *const arg_value_addr, int32_t arg_indirection_count,
                                      const char *arg_type, const char *arg_name, const char *arg_value_str,
                                      int32_t arg_dereference_count, void *data);

/* ------------------------------------------------------------------ */
/* Agents                                                              */
/* ------------------------------------------------------------------ */
/* rocprofiler_agent_v0_t up to logical_node_id (HSA_ENGINE_VERSION,
   HSA_ENGINE_ID and HSA_CAPABILITY are 32-bit unions; later releases append
   fields after logical_node_id) */
typedef struct rsdk_agent {
    uint64_t size;
    rsdk_agent_id id;
    uint32_t type;
    uint32_t cpu_cores_count, simd_count, mem_banks_count, caches_count, io_links_count;
    uint32_t cpu_core_id_base, simd_id_base, max_waves_per_simd, lds_size_in_kb, gds_size_in_kb, num_gws;
    uint32_t wave_front_size, num_xcc, cu_count, array_count, num_shader_banks, simd_arrays_per_engine;
    uint32_t cu_per_simd_array, simd_per_cu, max_slots_scratch_cu, gfx_target_version;
    uint16_t vendor_id, device_id;
    uint32_t location_id, domain, drm_render_minor, num_sdma_engines, num_sdma_xgmi_engines;
    uint32_t num_sdma_queues_per_engine, num_cp_queues, max_engine_clk_ccompute, max_engine_clk_fcompute;
    uint32_t sdma_fw_version, fw_version, capability;
    uint32_t cu_per_engine, max_waves_per_cu, family_id, workgroup_max_size, grid_max_size;
    uint64_t local_mem_size, hive_id, gpu_id;
    rsdk_dim3 workgroup_max_dim, grid_max_dim;
    const void *mem_banks, *caches, *io_links;
    const char *name, *vendor_name, *product_name, *model_name;
    uint64_t num_pc_sampling_configs;
    const void *pc_sampling_configs;
    uint32_t node_id;
    int32_t logical_node_id;
} rsdk_agent;

typedef int (*rsdk_query_agents_cb)(uint32_t version, const void **agents, size_t num_agents, void *data);

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */
typedef struct rsdk_client_id {
    const char *name;
    uint32_t handle;
} rsdk_client_id;

typedef void (*rsdk_client_finalize)(rsdk_client_id id);
typedef int (*rsdk_tool_initialize)(rsdk_client_finalize finalize, void *tool_data);
typedef void (*rsdk_tool_finalize)(void *tool_data);

typedef struct rsdk_tool_configure_result {
    size_t size;
    rsdk_tool_initialize initialize;
    rsdk_tool_finalize finalize;
    void *tool_data;
} rsdk_tool_configure_result;

/* rocprofiler_configure, as a tool exports it */
typedef rsdk_tool_configure_result *(*rsdk_configure_fn)(uint32_t version, const char *runtime_version,
                                                         uint32_t priority, rsdk_client_id *client_id);

/* ------------------------------------------------------------------ */
/* Entry points devtrace calls (rocprofiler_<name>)                    */
/* ------------------------------------------------------------------ */
typedef int (*rsdk_get_version_fn)(uint32_t *major, uint32_t *minor, uint32_t *patch);
typedef int (*rsdk_get_timestamp_fn)(uint64_t *ns);
typedef int (*rsdk_is_initialized_fn)(int *status);
typedef int (*rsdk_force_configure_fn)(rsdk_configure_fn configure);
typedef int (*rsdk_create_context_fn)(rsdk_context_id *context);
typedef int (*rsdk_context_fn)(rsdk_context_id context);
typedef int (*rsdk_create_buffer_fn)(rsdk_context_id context, size_t size, size_t watermark, uint32_t policy,
                                     rsdk_buffer_tracing_cb callback, void *data, rsdk_buffer_id *buffer);
typedef int (*rsdk_flush_buffer_fn)(rsdk_buffer_id buffer);
typedef int (*rsdk_configure_buffer_tracing_fn)(rsdk_context_id context, uint32_t kind, const int32_t *operations,
                                                size_t count, rsdk_buffer_id buffer);
typedef int (*rsdk_configure_callback_tracing_fn)(rsdk_context_id context, uint32_t kind,
                                                  const int32_t *operations, size_t count,
                                                  rsdk_callback_tracing_cb callback, void *data);
typedef int (*rsdk_query_operation_name_fn)(uint32_t kind, uint32_t operation, const char **name, uint64_t *len);
typedef int (*rsdk_iterate_args_fn)(rsdk_callback_arg record, rsdk_operation_args_cb callback,
                                    int32_t max_dereference_count, void *data);
typedef int (*rsdk_push_external_fn)(rsdk_context_id context, uint64_t thread_id, rsdk_user_data id);
typedef int (*rsdk_pop_external_fn)(rsdk_context_id context, uint64_t thread_id, rsdk_user_data *id);
typedef int (*rsdk_query_agents_fn)(uint32_t version, rsdk_query_agents_cb callback, size_t agent_size, void *data);
typedef const char *(*rsdk_status_string_fn)(int status);

/* hsa_system_get_info from the HSA runtime the SDK links against (hsa.h):
   HSA_SYSTEM_INFO_VERSION_MAJOR is 0, HSA_STATUS_ERROR_NOT_INITIALIZED
   0x100B. Asking it tells whether the runtime was initialized, without
   initializing it. */
typedef int (*rsdk_hsa_system_get_info_fn)(int attribute, void *value);
#define RSDK_HSA_SYSTEM_INFO_VERSION_MAJOR 0
#define RSDK_HSA_STATUS_SUCCESS 0
#define RSDK_HSA_STATUS_ERROR_NOT_INITIALIZED 0x100B

/* ------------------------------------------------------------------ */
/* The layout, checked                                                 */
/* ------------------------------------------------------------------ */
_Static_assert(sizeof(rsdk_record_header) == 16, "rocprofiler_record_header_t");
_Static_assert(sizeof(rsdk_api_record) == 56, "API record, two-word correlation");
_Static_assert(sizeof(rsdk_api_record_ancestor) == 64, "API record with ancestor");
_Static_assert(offsetof(rsdk_api_record, start_timestamp) == 32, "API record start");
_Static_assert(offsetof(rsdk_api_record_ancestor, start_timestamp) == 40, "API record start, ancestor");
_Static_assert(sizeof(rsdk_memory_copy_record) == 96, "memory copy record");
_Static_assert(RSDK_MEMORY_COPY_RECORD_MIN_SIZE == 80, "memory copy record before the addresses");
_Static_assert(sizeof(rsdk_kernel_dispatch_info) == 128, "kernel dispatch info");
_Static_assert(sizeof(rsdk_kernel_dispatch_record) == 184, "kernel dispatch record");
_Static_assert(offsetof(rsdk_kernel_dispatch_record, dispatch_info) == 56, "dispatch info");
_Static_assert(sizeof(rsdk_callback_record) == 56, "callback record");
_Static_assert(sizeof(rsdk_callback_record_ancestor) == 64, "callback record with ancestor");
_Static_assert(sizeof(rsdk_callback_arg) == 64, "room for either callback record");
_Static_assert(offsetof(rsdk_kernel_symbol, arch_vgpr_count) == 60, "kernel symbol VGPRs");
_Static_assert(sizeof(rsdk_kernel_symbol) == 88, "kernel symbol");
_Static_assert(offsetof(rsdk_agent, local_mem_size) == 176, "agent local memory");
_Static_assert(offsetof(rsdk_agent, name) == 248, "agent name");
_Static_assert(sizeof(rsdk_agent) == 304, "agent up to logical_node_id");

#endif /* DT_ROCPROFILER_SDK_ABI_H */

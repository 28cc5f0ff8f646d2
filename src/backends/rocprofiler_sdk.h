/*
 * The rocprofiler-sdk backend's decoder (rocprofiler_sdk_decode.c) and tool
 * entry point (rocprofiler_sdk.c). The decoder turns the record-header
 * arrays the SDK hands a buffer callback into stored events; it needs no
 * library, so tests, the fuzz target and the benchmark drive it directly.
 */
#ifndef DT_ROCPROFILER_SDK_H
#define DT_ROCPROFILER_SDK_H

#include "backends/backend.h"
#include "backends/rocprofiler_sdk_abi.h"

/* What the code-object service said about a kernel. */
typedef struct dt_rsdk_kernel {
    uint64_t kernel_id;
    char *name;                   /* dt_strdup'ed */
    uint32_t registers;           /* VGPRs per work-item; 0: not reported */
    uint32_t static_lds;          /* group segment the kernel declares */
    uint8_t fill;                 /* a HIP runtime fill kernel (a memset) */
} dt_rsdk_kernel;

typedef struct dt_rsdk_agent {
    uint64_t handle;
    uint16_t device;              /* devtrace's device id */
    uint8_t gpu;
} dt_rsdk_agent;

/* A hipMemset* call's size and value, by its correlation id, until the
   dispatch of the fill kernel it launched arrives. */
typedef struct dt_rsdk_fill {
    uint64_t correlation;         /* 0: empty slot */
    uint64_t bytes;
    uint32_t value;
    uint8_t async;
} dt_rsdk_fill;

#define DT_RSDK_MAX_AGENTS 128
#define DT_RSDK_FILL_SLOTS 4096

typedef struct dt_rsdk_decoder {
    uint32_t version;             /* RSDK_VERSION of the library; 0 unknown */
    uint32_t pid;
    /* agents, in the SDK's order; GPUs numbered from 0 */
    dt_rsdk_agent agents[DT_RSDK_MAX_AGENTS];
    uint32_t agent_count, gpu_count;
    /* HSA queues -> rows (1..; 0 is copies', which name no queue) */
    uint64_t *queues;
    uint32_t queue_count, queue_cap;
    /* kernels by id: entries, and an open-addressing index (id + 1) */
    pthread_mutex_t kernel_lock;
    dt_rsdk_kernel *kernels;
    uint32_t kernel_count, kernel_cap;
    uint32_t *kernel_index;
    uint32_t kernel_mask;
    /* HIP runtime API names by operation (the SDK's strings) */
    const char **api_names;
    uint32_t api_name_count;
    /* fill sizes, written on the program's threads */
    pthread_mutex_t fill_lock;
    _Atomic uint32_t fill_count;
    dt_rsdk_fill fills[DT_RSDK_FILL_SLOTS];
    /* damage noted at stop */
    _Atomic uint64_t unknown_kernels, fills_without_size, fills_unrecorded, unknown_agents;
} dt_rsdk_decoder;

DT_HIDDEN void dt_rsdk_decoder_init(dt_rsdk_decoder *d, uint32_t version);
/* Keeps the names and kernels (they outlive sessions); frees the rest. */
DT_HIDDEN void dt_rsdk_decoder_free(dt_rsdk_decoder *d);
/* An agent, in the order the SDK lists them; a GPU's properties go to
   *props (valid set) with what the agent does not say noted in missing. */
DT_HIDDEN void dt_rsdk_decoder_add_agent(dt_rsdk_decoder *d, const rsdk_agent *a, size_t avail,
                                         dt_device_props *props, char *missing, size_t missing_len);
/* A kernel symbol from the code-object service. -1: out of memory. */
DT_HIDDEN int dt_rsdk_decoder_add_kernel(dt_rsdk_decoder *d, const rsdk_kernel_symbol *sym);
/* A hipMemset* call's size and value (thread-safe). */
DT_HIDDEN void dt_rsdk_decoder_note_fill(dt_rsdk_decoder *d, uint64_t correlation, uint64_t bytes,
                                         uint32_t value, int async);
/* Decode one buffer callback's records into s (taking its lock). */
DT_HIDDEN void dt_rsdk_decode(dt_rsdk_decoder *d, dt_session *s, rsdk_record_header *const *headers, size_t n);
/* Whether a kernel name is one of the HIP runtime's fill kernels. */
DT_HIDDEN int dt_rsdk_is_fill_kernel(const char *name);

/* The tool's rocprofiler_configure (libdevtrace_inject exports it under
   that name): registers devtrace with rocprofiler-sdk when a recording
   wants it, else declines (NULL). */
DT_HIDDEN rsdk_tool_configure_result *dt_rocprofiler_sdk_configure(uint32_t version, const char *runtime_version,
                                                                   uint32_t priority, rsdk_client_id *client_id);

#endif /* DT_ROCPROFILER_SDK_H */

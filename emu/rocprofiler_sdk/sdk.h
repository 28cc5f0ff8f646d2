/*
 * The rocprofiler-sdk personality's internals (emu/rocprofiler_sdk): the
 * SDK's entry points, its state, and what its files share. Names shared
 * between these files are `sdk_*` (the ABI's own types are devtrace's
 * `rsdk_*`, from src/backends/rocprofiler_sdk_abi.h).
 *
 * Files: rocprofiler_sdk_emu.c (the personality, the version, status
 * strings), registration.c (finding and running tools), contexts.c
 * (contexts, buffers, services and what the core produces), callbacks.c
 * (callback tracing, external ids, ROCTX), symbols.c (kernel symbols),
 * records.c (the record layouts), delivery.c (staging buffers, header
 * arrays), operations.c (operation names and numbers), agents.c.
 *
 * Locks: sdk_state.lock (recursive) guards registration and configuration
 * and is held while the core's lock is taken; the callback targets' and
 * the kernel symbols' locks are leaves (taken with the core's lock held).
 */
#ifndef DEVTRACE_EMU_ROCPROFILER_SDK_H
#define DEVTRACE_EMU_ROCPROFILER_SDK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backends/rocprofiler_sdk_abi.h"
#include "emu_vendor.h"

#define RSDK_API __attribute__((visibility("default")))

/* The SDK's entry points (the rocprofiler-sdk headers), with devtrace's types. */
RSDK_API int rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch);
RSDK_API int rocprofiler_get_timestamp(uint64_t *ns);
RSDK_API int rocprofiler_is_initialized(int *status);
RSDK_API int rocprofiler_is_finalized(int *status);
RSDK_API int rocprofiler_force_configure(rsdk_configure_fn configure);
RSDK_API int rocprofiler_create_context(rsdk_context_id *ctx);
RSDK_API int rocprofiler_start_context(rsdk_context_id ctx);
RSDK_API int rocprofiler_stop_context(rsdk_context_id ctx);
RSDK_API int rocprofiler_context_is_active(rsdk_context_id ctx, int *status);
RSDK_API int rocprofiler_create_buffer(rsdk_context_id ctx, size_t size, size_t watermark, uint32_t policy,
                                       rsdk_buffer_tracing_cb callback, void *data, rsdk_buffer_id *out);
RSDK_API int rocprofiler_flush_buffer(rsdk_buffer_id id);
RSDK_API int rocprofiler_destroy_buffer(rsdk_buffer_id id);
RSDK_API int rocprofiler_configure_buffer_tracing_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops,
                                                          size_t n, rsdk_buffer_id id);
RSDK_API int rocprofiler_configure_callback_tracing_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops,
                                                            size_t n, rsdk_callback_tracing_cb callback, void *data);
RSDK_API int rocprofiler_query_buffer_tracing_kind_operation_name(uint32_t kind, uint32_t op, const char **name,
                                                                  uint64_t *len);
RSDK_API int rocprofiler_query_callback_tracing_kind_operation_name(uint32_t kind, uint32_t op, const char **name,
                                                                    uint64_t *len);
RSDK_API int rocprofiler_iterate_callback_tracing_kind_operation_args(rsdk_callback_arg record,
                                                                      rsdk_operation_args_cb callback,
                                                                      int32_t max_dereference_count, void *data);
RSDK_API int rocprofiler_push_external_correlation_id(rsdk_context_id ctx, uint64_t tid, rsdk_user_data id);
RSDK_API int rocprofiler_pop_external_correlation_id(rsdk_context_id ctx, uint64_t tid, rsdk_user_data *id);
RSDK_API int rocprofiler_query_available_agents(uint32_t agent_version, rsdk_query_agents_cb callback,
                                                size_t agent_size, void *data);
RSDK_API const char *rocprofiler_get_status_string(int status);
/* the HSA runtime's, and librocprofiler-sdk-roctx's */
RSDK_API int hsa_system_get_info(int attribute, void *value);
RSDK_API int roctxRangePushA(const char *message);
RSDK_API int roctxRangePop(void);
RSDK_API void roctxMarkA(const char *message);

/* ------------------------------------------------------------------ */
/* Operations (operations.c)                                           */
/* ------------------------------------------------------------------ */
/* HIP runtime API operations: the emulator's own numbering (tools find
   operations by name); 0 is never called, as in the real enumeration. */
enum {
    OP_HIP_API_NAME = 0, OP_DEVICE_SYNCHRONIZE, OP_LAUNCH_KERNEL, OP_MEMCPY, OP_MEMCPY_ASYNC, OP_MEMSET,
    OP_MEMSET_ASYNC, OP_STREAM_SYNCHRONIZE, OP_HIP_COUNT
};
/* rocprofiler_marker_core_api_id_t */
enum { OP_ROCTX_MARK = 0, OP_ROCTX_PUSH, OP_ROCTX_POP, OP_ROCTX_START, OP_ROCTX_STOP, OP_ROCTX_COUNT };

#define FILL_KERNEL "__amd_rocclr_fillBufferAligned"

/* emu_vendor's cbid and callback_name: HIP's runtime operations. */
EMU_HIDDEN uint32_t sdk_cbid(emu_domain domain, emu_op op, emu_copy_kind copy_kind);
EMU_HIDDEN const char *sdk_callback_name(emu_domain domain, uint32_t id);

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */
#define MAX_CLIENTS 16
#define MAX_CONTEXTS 64
#define MAX_BUFFERS 32
#define MAX_OPS 64
#define KIND_SLOTS 16

typedef struct service {
    int on;
    rsdk_callback_tracing_cb callback;  /* callback services */
    void *data;
    uint64_t buffer;                    /* buffer services: handle */
    int32_t ops[MAX_OPS];
    size_t op_count;                    /* 0: every operation */
} service;

typedef struct sdk_context {
    int valid, active;
    int owner;                          /* the client whose initialize made it */
    service buffered[KIND_SLOTS], called[KIND_SLOTS];
} sdk_context;

typedef struct sdk_buffer {
    int valid;
    uint64_t context;
    size_t size;                        /* delivered when this full (the watermark) */
    uint32_t policy;
    rsdk_buffer_tracing_cb callback;
    void *data;
    uint64_t drops;                     /* total so far, as the SDK reports it */
} sdk_buffer;

typedef struct client {
    rsdk_configure_fn configure;
    rsdk_tool_configure_result result;
    rsdk_client_id id;
    int configured, finalized;
} client;

struct sdk_state {
    /* registration and configuration; recursive: a tool's initialize calls
       back into the SDK on the same thread */
    pthread_mutex_t lock;
    int init_status, fini_status;
    rsdk_configure_fn forced;
    client clients[MAX_CLIENTS];
    int client_count;
    int runtime_initialized;  /* what hsa_system_get_info answers */
    int tables_seen;          /* the SDK intercepts the runtime: records are made */
    uint32_t version;
    char version_text[32];
    sdk_context contexts[MAX_CONTEXTS];
    sdk_buffer buffers[MAX_BUFFERS];
    /* the contexts whose external ids records of a kind carry, for the core
       (read on producing threads without the lock) */
    _Atomic uint64_t kind_context[EMU_REC_COUNT];
    _Atomic uint32_t staging_size;
    _Atomic int lossless;
    int current_client;       /* whose initialize runs */
    int late_configuring;     /* a tool configures after the SDK initialized */
    void *subscriber;         /* the core's, while HIP API callbacks are wanted */
};
EMU_HIDDEN extern struct sdk_state sdk_state;

/* The emulated version (DEVTRACE_EMU_ROCPROFILER_SDK_VERSION), read once. */
EMU_HIDDEN extern pthread_once_t sdk_version_once;
EMU_HIDDEN void sdk_read_version(void);

static inline uint32_t sdk_version(void)
{
    pthread_once(&sdk_version_once, sdk_read_version);
    return sdk_state.version;
}

/* Correlation ids carry `ancestor` (from RSDK_ANCESTOR_VERSION). */
static inline int sdk_ancestor_layout(void)
{
    return sdk_version() >= RSDK_ANCESTOR_VERSION;
}

/* A thread-local variable shared between these files: addressed as a
   static one is (the library's own TLS block). */
#define SDK_TLS _Thread_local __attribute__((tls_model("local-dynamic")))

/* The calling thread's id (the core's, asked of the kernel once). */
static inline uint64_t sdk_tid(void)
{
    return emu_core_system_tid();
}

/* ------------------------------------------------------------------ */
/* Contexts and services (contexts.c)                                  */
/* ------------------------------------------------------------------ */
static inline sdk_context *sdk_find_context(uint64_t handle)
{
    return handle >= 1 && handle <= MAX_CONTEXTS && sdk_state.contexts[handle - 1].valid
               ? &sdk_state.contexts[handle - 1]
               : NULL;
}

static inline sdk_buffer *sdk_find_buffer(uint64_t handle)
{
    return handle >= 1 && handle <= MAX_BUFFERS && sdk_state.buffers[handle - 1].valid
               ? &sdk_state.buffers[handle - 1]
               : NULL;
}

/* sdk_state.lock held. What the core produces and whether it calls back
   follows the active contexts' services, once the SDK intercepts the
   runtime. */
EMU_HIDDEN void sdk_apply_services(void);

/* ------------------------------------------------------------------ */
/* Callback tracing and external ids (callbacks.c)                     */
/* ------------------------------------------------------------------ */
/* The external id on top of this thread's stack for a context. */
typedef struct ext_stack {
    uint64_t context;
    uint64_t *ids;
    size_t depth, cap;
} ext_stack;
EMU_HIDDEN extern SDK_TLS ext_stack sdk_thread_ext[MAX_CONTEXTS];

static inline ext_stack *sdk_stack_of(uint64_t context)
{
    return context >= 1 && context <= MAX_CONTEXTS ? &sdk_thread_ext[context - 1] : NULL;
}

static inline uint64_t sdk_top_external(uint64_t context)
{
    ext_stack *s = sdk_stack_of(context);
    return s && s->depth ? s->ids[s->depth - 1] : 0;
}

/* An active callback service, copied out of sdk_state so that callbacks
   are found without sdk_state.lock: they are looked up with the core's
   lock held (kernel symbols are announced while records are written), and
   sdk_state.lock is held while the core's is taken. */
typedef struct call_target {
    uint32_t kind;
    rsdk_callback_tracing_cb callback;
    void *data;
    uint64_t context;
    int32_t ops[MAX_OPS];
    size_t op_count;
} call_target;

/* The callback targets, copied out of the active contexts' services
   (sdk_state.lock held). */
EMU_HIDDEN void sdk_update_targets(void);
/* A callback record by value, in the layout of the emulated version. */
EMU_HIDDEN rsdk_callback_arg sdk_callback_record(uint64_t context, uint64_t correlation, uint32_t kind, int32_t op,
                                                 uint32_t phase, const void *payload);
/* Call every active callback of a kind for one operation and phase. */
EMU_HIDDEN void sdk_call_each(uint32_t kind, int32_t op, uint64_t correlation, uint32_t phase,
                              const void *payload);
/* Every active callback of a kind for an operation, copied out into
   out[MAX_CONTEXTS]; they then run without any lock. */
EMU_HIDDEN size_t sdk_callback_targets(uint32_t kind, int32_t op, call_target *out);
/* emu_vendor.invoke_callback. */
EMU_HIDDEN void sdk_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call);

/* ------------------------------------------------------------------ */
/* Kernel symbols (symbols.c)                                          */
/* ------------------------------------------------------------------ */
/* The kernel id of a name, registering the symbol (and telling the
   code-object services) the first time; 0 when out of memory. */
EMU_HIDDEN uint64_t sdk_kernel_id(const char *name, uint32_t static_lds, uint32_t registers);
/* Tell one context's code-object service of every symbol loaded so far. */
EMU_HIDDEN void sdk_replay_symbols(uint64_t context);

/* ------------------------------------------------------------------ */
/* Records (records.c) and their delivery (delivery.c)                 */
/* ------------------------------------------------------------------ */
#define CPU_AGENT 0x1000u
#define GPU_AGENT(d) (0x2000u + (uint64_t)(d))
#define UNKNOWN_RECORD_SIZE 64
#define TRUNCATED_SIZE 16 /* the core's malformed fault keeps 16 bytes */

/* emu_vendor's record_size, write_record, record_kind, record_external. */
EMU_HIDDEN size_t sdk_record_size(emu_rec_kind kind);
EMU_HIDDEN void sdk_write_record(uint8_t *dst, const emu_activity *a);
EMU_HIDDEN int sdk_record_external(emu_rec_kind kind, uint64_t *id);

/* The kind of the record at rec (emu_vendor.record_kind): read as each
   delivery is split, so inline. */
static inline emu_rec_kind sdk_record_kind(const uint8_t *rec, size_t avail)
{
    uint32_t kind = 0;
    if (avail >= 12) memcpy(&kind, rec + 8, sizeof kind);
    switch (kind) {
    case RSDK_BUFFER_KERNEL_DISPATCH: return EMU_REC_KERNEL;
    case RSDK_BUFFER_MEMORY_COPY: return EMU_REC_MEMCPY;
    case RSDK_BUFFER_HIP_RUNTIME_API: return EMU_REC_RUNTIME;
    case RSDK_BUFFER_PAGE_MIGRATION: return EMU_REC_UNKNOWN;
    default: return EMU_REC_UNKNOWN;
    }
}

/* The core's buffer callbacks (staging buffers the size the tools asked
   for), and emu_vendor's complete_buffer and null_client_buffer. */
EMU_HIDDEN void sdk_staging_request(uint8_t **out, size_t *size, size_t *max_records);
EMU_HIDDEN void sdk_staging_complete(void);
EMU_HIDDEN void sdk_complete_buffer(void (*client_fn)(void), uint8_t *buf, size_t size, size_t valid);
EMU_HIDDEN void sdk_null_client_buffer(uint8_t *buf, size_t valid);

/* ------------------------------------------------------------------ */
/* Registration (registration.c)                                       */
/* ------------------------------------------------------------------ */
/* emu_vendor.runtime_call: the runtime's first call initializes the SDK
   if a tool is present. */
EMU_HIDDEN void sdk_runtime_call(void);

#endif /* DEVTRACE_EMU_ROCPROFILER_SDK_H */

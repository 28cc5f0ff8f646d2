/*
 * rocprofiler-sdk personality: ${build}/emu/librocprofiler_sdk.so, with the
 * ABI of src/backends/rocprofiler_sdk_abi.h (devtrace's declaration of
 * AMD's rocprofiler-sdk), over the vendor-neutral core.
 *
 * What it reproduces of rocprofiler-sdk:
 *  - registration: tools are found when the emulated runtime initializes
 *    (its first API call: emu_* or roctx*) or when a tool forces it, from
 *    the forced configure function, a visible `rocprofiler_configure`, every
 *    loaded library that exports one and ROCP_TOOL_LIBRARIES (dlopened);
 *    each tool's configure, then each initialize, is called; contexts,
 *    buffers and services can be made only then. A runtime that initialized
 *    while no tool was present is not seen by the SDK: before 1.3.0 a later
 *    forced configure records nothing of it (as real ones did), from 1.3.0 it
 *    does (late start); from 1.3.2 a tool may force its configure after the
 *    SDK initialized ("anytime initialization").
 *  - contexts started and stopped, buffer and callback tracing services,
 *    external-correlation stacks per context and thread, copied into every
 *    record, the operation-name queries and the argument iterator.
 *  - buffers: records are self-sizing structs; a buffer callback gets an
 *    array of headers and the buffer's total drop count so far. One staging
 *    stream of the core feeds every buffer: each delivery is split by the
 *    buffers whose services want its kinds. Under the lossless policy the
 *    SDK makes the producing thread wait for the tool; this emulator lends
 *    another buffer instead, so the tool still sees every record, in
 *    buffers of the size it asked for.
 *  - kernel dispatches carry a kernel id; names come from kernel-symbol
 *    registrations (code-object callbacks, replayed when such a sdk_context
 *    starts). Memsets are the HIP runtime's fill kernel (a dispatch of
 *    "__amd_rocclr_fillBufferAligned"), as on ROCm; the hipMemset* call's
 *    arguments come through the argument iterator.
 *  - timestamps: CLOCK_BOOTTIME ns.
 *  - faults: a malformed record is a dispatch whose size field says 16
 *    bytes; an unknown kind is a page-migration record.
 * The version (default 1.3.0, ROCm 7.x) is DEVTRACE_EMU_ROCPROFILER_SDK_VERSION
 * ("major.minor.patch"): from RSDK_ANCESTOR_VERSION on, correlation ids
 * carry `ancestor` in API and callback records; before 0.6.0 memory-copy
 * records end before the addresses; before 1.3.0 a late start records
 * nothing.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* The emulator marker devtrace looks for. */
RSDK_API const int devtrace_emulator_rocprofiler_sdk = 1;

/* ------------------------------------------------------------------ */
/* Operations and their names                                          */
/* ------------------------------------------------------------------ */
/* HIP runtime API operations: the emulator's own numbering (tools find
   operations by name); 0 is never called, as in the real enumeration. */
enum {
    OP_HIP_API_NAME = 0, OP_DEVICE_SYNCHRONIZE, OP_LAUNCH_KERNEL, OP_MEMCPY, OP_MEMCPY_ASYNC, OP_MEMSET,
    OP_MEMSET_ASYNC, OP_STREAM_SYNCHRONIZE, OP_HIP_COUNT
};
static const char *const hip_names[OP_HIP_COUNT] = {
    "hipApiName", "hipDeviceSynchronize", "hipLaunchKernel", "hipMemcpy", "hipMemcpyAsync", "hipMemset",
    "hipMemsetAsync", "hipStreamSynchronize",
};
/* rocprofiler_marker_core_api_id_t */
enum { OP_ROCTX_MARK = 0, OP_ROCTX_PUSH, OP_ROCTX_POP, OP_ROCTX_START, OP_ROCTX_STOP, OP_ROCTX_COUNT };
static const char *const roctx_names[OP_ROCTX_COUNT] = {"roctxMarkA", "roctxRangePushA", "roctxRangePop",
                                                        "roctxRangeStartA", "roctxRangeStop"};
static const char *const code_object_names[] = {"CODE_OBJECT_NONE", "CODE_OBJECT_LOAD",
                                                "CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER"};
static const char *const copy_names[RSDK_MEMORY_COPY_LAST] = {"MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST",
                                                              "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST",
                                                              "MEMORY_COPY_DEVICE_TO_DEVICE"};

#define FILL_KERNEL "__amd_rocclr_fillBufferAligned"

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

static struct {
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
} P = {
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
};

/* The active callback services, copied out of P so that callbacks are
   found without P.lock: they are looked up with the core's lock held
   (kernel symbols are announced while records are written), and P.lock is
   held while the core's is taken. A leaf lock. */
typedef struct call_target {
    uint32_t kind;
    rsdk_callback_tracing_cb callback;
    void *data;
    uint64_t context;
    int32_t ops[MAX_OPS];
    size_t op_count;
} call_target;

static struct {
    pthread_mutex_t lock;
    call_target t[MAX_CONTEXTS * 3];
    size_t n;
    /* HIP operations (< 64) some target wants: most calls are asked for by
       none, and are answered without the lock */
    _Atomic uint64_t hip_ops;
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Kernel symbols, by name: kept for the library's life. A leaf lock: it is
   taken with the core's lock held (records are written under it). */
#define KERNEL_CACHE 64
static struct {
    pthread_mutex_t lock;
    char **names;
    size_t count, cap;
    uint32_t *static_lds, *registers;
    struct { const char *name; uint64_t id; } cache[KERNEL_CACHE];
} K = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Staging buffers handed to the core. */
static struct {
    pthread_mutex_t lock;
    uint8_t **free;
    size_t *sizes;
    size_t free_count, free_cap, outstanding;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;
static _Thread_local uint64_t t_tid;

static uint64_t my_tid(void)
{
    if (!t_tid) t_tid = (uint64_t)syscall(SYS_gettid);
    return t_tid;
}

static void read_version(void)
{
    unsigned major = 1, minor = 3, patch = 0;
    const char *v = getenv("DEVTRACE_EMU_ROCPROFILER_SDK_VERSION");
    if (v && *v) {
        unsigned a = 0, b = 0, c = 0;
        if (sscanf(v, "%u.%u.%u", &a, &b, &c) >= 2) {
            major = a;
            minor = b;
            patch = c;
        }
    }
    P.version = RSDK_VERSION(major, minor, patch);
    snprintf(P.version_text, sizeof P.version_text, "%u.%u.%u", major, minor, patch);
}

static uint32_t version(void)
{
    pthread_once(&g_version_once, read_version);
    return P.version;
}

static int ancestor_layout(void)
{
    return version() >= RSDK_ANCESTOR_VERSION;
}

/* ------------------------------------------------------------------ */
/* Agents                                                              */
/* ------------------------------------------------------------------ */
#define CPU_AGENT 0x1000u
#define GPU_AGENT(d) (0x2000u + (uint64_t)(d))

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

/* ------------------------------------------------------------------ */
/* Contexts, services and what the core produces                       */
/* ------------------------------------------------------------------ */
static sdk_context *find_context(uint64_t handle)
{
    return handle >= 1 && handle <= MAX_CONTEXTS && P.contexts[handle - 1].valid ? &P.contexts[handle - 1] : NULL;
}

static sdk_buffer *find_buffer(uint64_t handle)
{
    return handle >= 1 && handle <= MAX_BUFFERS && P.buffers[handle - 1].valid ? &P.buffers[handle - 1] : NULL;
}

static int wants_op(const int32_t *ops, size_t n, int32_t op)
{
    if (!n) return 1;
    for (size_t i = 0; i < n; i++)
        if (ops[i] == op) return 1;
    return 0;
}

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

/* P.lock held. What the core produces and whether it calls back follows
   the active contexts' services, once the SDK intercepts the runtime. */
static void apply_services(void)
{
    static const emu_rec_kind kinds[] = {EMU_REC_KERNEL, EMU_REC_MEMSET, EMU_REC_MEMCPY, EMU_REC_RUNTIME};
    int api_callbacks = 0;
    size_t smallest = 0;
    int lossless = 1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        uint64_t owner = 0;
        for (int c = 0; c < MAX_CONTEXTS && !owner; c++)
            if (P.contexts[c].valid && P.contexts[c].active && P.contexts[c].buffered[buffer_kind_of(kinds[k])].on)
                owner = (uint64_t)c + 1;
        atomic_store(&P.kind_context[kinds[k]], owner);
        emu_core_enable(kinds[k], owner && P.tables_seen);
    }
    for (int c = 0; c < MAX_CONTEXTS; c++)
        if (P.contexts[c].valid && P.contexts[c].active && P.contexts[c].called[RSDK_CALLBACK_HIP_RUNTIME_API].on)
            api_callbacks = 1;
    for (int b = 0; b < MAX_BUFFERS; b++) {
        if (!P.buffers[b].valid) continue;
        if (!smallest || P.buffers[b].size < smallest) smallest = P.buffers[b].size;
        lossless &= P.buffers[b].policy == RSDK_BUFFER_POLICY_LOSSLESS;
    }
    atomic_store(&P.staging_size, (uint32_t)(smallest ? smallest : 1u << 20));
    atomic_store(&P.lossless, lossless);
    pthread_mutex_lock(&T.lock);
    T.n = 0;
    uint64_t hip_ops = 0;
    static const uint32_t called_kinds[] = {RSDK_CALLBACK_CODE_OBJECT, RSDK_CALLBACK_MARKER_CORE_API,
                                            RSDK_CALLBACK_HIP_RUNTIME_API};
    for (int c = 0; c < MAX_CONTEXTS; c++) {
        const sdk_context *ctx = &P.contexts[c];
        if (!ctx->valid || !ctx->active) continue;
        for (size_t k = 0; k < sizeof called_kinds / sizeof called_kinds[0]; k++) {
            const service *sv = &ctx->called[called_kinds[k]];
            if (!sv->on) continue;
            call_target *t = &T.t[T.n++];
            t->kind = called_kinds[k];
            t->callback = sv->callback;
            t->data = sv->data;
            t->context = (uint64_t)c + 1;
            t->op_count = sv->op_count;
            memcpy(t->ops, sv->ops, sizeof t->ops);
            if (t->kind == RSDK_CALLBACK_HIP_RUNTIME_API) {
                if (!sv->op_count) hip_ops = UINT64_MAX;
                for (size_t i = 0; i < sv->op_count; i++)
                    if (sv->ops[i] >= 0 && sv->ops[i] < 64) hip_ops |= UINT64_C(1) << sv->ops[i];
            }
        }
    }
    atomic_store(&T.hip_ops, hip_ops);
    pthread_mutex_unlock(&T.lock);
    if (api_callbacks && P.tables_seen && !P.subscriber) {
        if (emu_core_subscribe(&P.subscriber, core_callback, NULL) == EMU_ST_OK)
            emu_core_enable_domain(P.subscriber, EMU_DOMAIN_RUNTIME, 1);
        else
            P.subscriber = NULL;
    } else if ((!api_callbacks || !P.tables_seen) && P.subscriber) {
        emu_core_unsubscribe(P.subscriber);
        P.subscriber = NULL;
    }
}

/* ------------------------------------------------------------------ */
/* Callback tracing                                                    */
/* ------------------------------------------------------------------ */
/* The external id on top of this thread's stack for a context. */
typedef struct ext_stack {
    uint64_t context;
    uint64_t *ids;
    size_t depth, cap;
} ext_stack;
static _Thread_local ext_stack t_ext[MAX_CONTEXTS];

/* A thread's stacks are freed when it exits. */
static pthread_key_t g_ext_key;
static pthread_once_t g_ext_once = PTHREAD_ONCE_INIT;

static void free_stacks(void *stacks)
{
    ext_stack *s = stacks;
    for (size_t i = 0; i < MAX_CONTEXTS; i++) {
        free(s[i].ids);
        s[i] = (ext_stack){0};
    }
}

static void make_ext_key(void) { pthread_key_create(&g_ext_key, free_stacks); }

static ext_stack *stack_of(uint64_t context)
{
    return context >= 1 && context <= MAX_CONTEXTS ? &t_ext[context - 1] : NULL;
}

static uint64_t top_external(uint64_t context)
{
    ext_stack *s = stack_of(context);
    return s && s->depth ? s->ids[s->depth - 1] : 0;
}

/* The active callbacks of a kind for an operation, copied out so that
   they run without any lock. */
static size_t callback_targets(uint32_t kind, int32_t op, call_target *out, size_t max)
{
    if (kind == RSDK_CALLBACK_HIP_RUNTIME_API && op >= 0 && op < 64 &&
        !(atomic_load_explicit(&T.hip_ops, memory_order_relaxed) & (UINT64_C(1) << op)))
        return 0;
    size_t n = 0;
    pthread_mutex_lock(&T.lock);
    for (size_t i = 0; i < T.n && n < max; i++)
        if (T.t[i].kind == kind && wants_op(T.t[i].ops, T.t[i].op_count, op)) out[n++] = T.t[i];
    pthread_mutex_unlock(&T.lock);
    return n;
}

/* A callback record by value, in the layout of the emulated version. */
static rsdk_callback_arg callback_record(uint64_t context, uint64_t correlation, uint32_t kind, int32_t op,
                                         uint32_t phase, const void *payload)
{
    rsdk_callback_arg arg;
    memset(&arg, 0, sizeof arg);
    rsdk_user_data external = {.value = top_external(context)};
    if (ancestor_layout()) {
        rsdk_callback_record_ancestor r = {{context}, my_tid(), {correlation, external, 0}, kind, op, phase,
                                           (void *)payload};
        memcpy(&arg, &r, sizeof r);
    } else {
        rsdk_callback_record r = {{context}, my_tid(), {correlation, external}, kind, op, phase, (void *)payload};
        memcpy(&arg, &r, sizeof r);
    }
    return arg;
}

static void call_each(uint32_t kind, int32_t op, uint64_t correlation, uint32_t phase, const void *payload)
{
    call_target t[MAX_CONTEXTS];
    size_t n = callback_targets(kind, op, t, MAX_CONTEXTS);
    for (size_t i = 0; i < n; i++) {
        rsdk_user_data user = {0};
        t[i].callback(callback_record(t[i].context, correlation, kind, op, phase, payload), &user, t[i].data);
    }
}

/* The payload of a HIP API callback: rocprofiler_callback_tracing_hip_api_data_t
   would hold the arguments' union; the emulator keeps them in its own form
   (only its argument iterator reads them). */
typedef struct hip_args {
    uint64_t size;
    uint32_t op;
    const void *dst;
    int value;
    size_t size_bytes;
    const void *stream;
} hip_args;

static void invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    (void)client_fn;
    (void)userdata;
    hip_args args = {sizeof args, call->cbid, (const void *)(uintptr_t)0x7f0000100000ull, (int)call->value,
                     (size_t)call->bytes, NULL};
    call_each(RSDK_CALLBACK_HIP_RUNTIME_API, (int32_t)call->cbid, call->correlation,
              call->site == EMU_SITE_ENTER ? RSDK_PHASE_ENTER : RSDK_PHASE_EXIT, &args);
}

/* ------------------------------------------------------------------ */
/* Kernel symbols                                                      */
/* ------------------------------------------------------------------ */
static void announce_symbol(size_t index, uint64_t only_context)
{
    rsdk_kernel_symbol sym = {
        .size = sizeof sym, .kernel_id = index + 1, .code_object_id = 1, .kernel_name = K.names[index],
        .kernel_object = 0x7f0000200000ull + index * 64, .kernarg_segment_size = 64, .kernarg_segment_alignment = 16,
        .group_segment_size = K.static_lds[index], .arch_vgpr_count = K.registers[index]};
    call_target t[MAX_CONTEXTS];
    size_t n = callback_targets(RSDK_CALLBACK_CODE_OBJECT, RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, t,
                                MAX_CONTEXTS);
    for (size_t i = 0; i < n; i++) {
        if (only_context && t[i].context != only_context) continue;
        rsdk_user_data user = {0};
        t[i].callback(callback_record(t[i].context, 0, RSDK_CALLBACK_CODE_OBJECT,
                                      RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, RSDK_PHASE_LOAD, &sym),
                      &user, t[i].data);
    }
}

/* HSA's executable symbol of a kernel (code objects v3 on) is its
   descriptor, <name>.kd: rocprofiler-sdk passes that name on */
#define SYMBOL_SUFFIX ".kd"

/* The kernel id of a name, registering the symbol (and telling the
   code-object services) the first time: as a code object loads before its
   kernels first run. */
static uint64_t kernel_id(const char *name, uint32_t static_lds, uint32_t registers)
{
    if (!name) name = "";
    pthread_mutex_lock(&K.lock);
    /* the core interns names: the same kernel comes with the same pointer */
    size_t slot = ((uintptr_t)name >> 4) & (KERNEL_CACHE - 1);
    if (K.cache[slot].name == name) {
        uint64_t id = K.cache[slot].id;
        pthread_mutex_unlock(&K.lock);
        return id;
    }
    size_t len = strlen(name);
    for (size_t i = K.count; i-- > 0;)
        if (strncmp(K.names[i], name, len) == 0 && strcmp(K.names[i] + len, SYMBOL_SUFFIX) == 0) {
            K.cache[slot].name = name;
            K.cache[slot].id = i + 1;
            pthread_mutex_unlock(&K.lock);
            return i + 1;
        }
    if (K.count == K.cap) {
        size_t cap = K.cap ? K.cap * 2 : 64;
        char **n = realloc(K.names, cap * sizeof *n);
        uint32_t *l = n ? realloc(K.static_lds, cap * sizeof *l) : NULL;
        uint32_t *r = l ? realloc(K.registers, cap * sizeof *r) : NULL;
        if (n) K.names = n;
        if (l) K.static_lds = l;
        if (!r) {
            pthread_mutex_unlock(&K.lock);
            return 0;
        }
        K.registers = r;
        K.cap = cap;
    }
    /* named as HSA names the kernel's descriptor symbol */
    char *copy = malloc(len + sizeof SYMBOL_SUFFIX);
    if (!copy) {
        pthread_mutex_unlock(&K.lock);
        return 0;
    }
    memcpy(copy, name, len);
    memcpy(copy + len, SYMBOL_SUFFIX, sizeof SYMBOL_SUFFIX);
    size_t i = K.count++;
    K.names[i] = copy;
    K.static_lds[i] = static_lds;
    K.registers[i] = registers;
    announce_symbol(i, 0);
    pthread_mutex_unlock(&K.lock);
    return i + 1;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
#define UNKNOWN_RECORD_SIZE 64
#define TRUNCATED_SIZE 16 /* the core's malformed fault keeps 16 bytes */

static size_t record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL:
    case EMU_REC_MEMSET: return sizeof(rsdk_kernel_dispatch_record);
    case EMU_REC_MEMCPY:
        return version() >= RSDK_VERSION(0, 6, 0) ? sizeof(rsdk_memory_copy_record) : RSDK_MEMORY_COPY_RECORD_MIN_SIZE;
    case EMU_REC_RUNTIME: return ancestor_layout() ? sizeof(rsdk_api_record_ancestor) : sizeof(rsdk_api_record);
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
        i->kernel_id = kernel_id(FILL_KERNEL, 0, 16);
        i->workgroup_size = (rsdk_dim3){256, 1, 1};
        /* the fill kernel writes 16 bytes per work-item */
        i->grid_size = (rsdk_dim3){256 * div_up(div_up(a->u.memset.bytes, 16), 256), 1, 1};
    } else {
        int32_t s = a->u.kernel.static_shared_memory, d = a->u.kernel.dynamic_shared_memory;
        uint32_t declared = s > 0 ? (uint32_t)s : 0;
        i->kernel_id = kernel_id(a->u.kernel.name, declared, a->u.kernel.registers_per_thread);
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
    r.size = record_size(EMU_REC_MEMCPY);
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
    if (ancestor_layout()) {
        rsdk_api_record_ancestor r = {sizeof r, RSDK_BUFFER_HIP_RUNTIME_API, (int32_t)a->u.api.cbid,
                                      {a->correlation, external, 0}, a->start, a->end, a->u.api.thread};
        memcpy(dst, &r, sizeof r);
    } else {
        rsdk_api_record r = {sizeof r, RSDK_BUFFER_HIP_RUNTIME_API, (int32_t)a->u.api.cbid,
                             {a->correlation, external}, a->start, a->end, a->u.api.thread};
        memcpy(dst, &r, sizeof r);
    }
}

static void write_record(uint8_t *dst, const emu_activity *a)
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

static emu_rec_kind record_kind(const uint8_t *rec, size_t avail)
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

static int record_external(emu_rec_kind kind, uint64_t *id)
{
    uint64_t context = atomic_load_explicit(&P.kind_context[kind], memory_order_relaxed);
    uint64_t top = context ? top_external(context) : 0;
    if (!top) return 0;
    *id = top;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Buffers: staging for the core, delivery as header arrays            */
/* ------------------------------------------------------------------ */
/* The core's buffer request (its lock held). Lossless: never refused. */
static void staging_request(uint8_t **out, size_t *size, size_t *max_records)
{
    size_t want = atomic_load(&P.staging_size);
    *max_records = 0;
    *out = NULL;
    *size = 0;
    pthread_mutex_lock(&S.lock);
    if (!atomic_load(&P.lossless) && S.outstanding >= 2) {
        pthread_mutex_unlock(&S.lock); /* discard: both halves are full */
        return;
    }
    for (size_t i = 0; i < S.free_count; i++) {
        if (S.sizes[i] != want) continue;
        *out = S.free[i];
        S.free[i] = S.free[--S.free_count];
        S.sizes[i] = S.sizes[S.free_count];
        break;
    }
    if (!*out) *out = aligned_alloc(64, (want + 63) & ~(size_t)63);
    if (*out) {
        *size = want;
        S.outstanding++;
    }
    pthread_mutex_unlock(&S.lock);
}

static void staging_release(uint8_t *buf, size_t size)
{
    pthread_mutex_lock(&S.lock);
    S.outstanding--;
    if (S.free_count == S.free_cap) {
        size_t cap = S.free_cap ? S.free_cap * 2 : 16;
        uint8_t **f = realloc(S.free, cap * sizeof *f);
        size_t *s = f ? realloc(S.sizes, cap * sizeof *s) : NULL;
        if (f) S.free = f;
        if (s) {
            S.sizes = s;
            S.free_cap = cap;
        }
    }
    if (S.free_count < S.free_cap) {
        S.free[S.free_count] = buf;
        S.sizes[S.free_count++] = size;
    } else {
        free(buf);
    }
    pthread_mutex_unlock(&S.lock);
}

static void staging_complete(void) {}

typedef struct delivery {
    rsdk_buffer_tracing_cb callback;
    void *data;
    uint64_t context, buffer, drops;
    int active;
    rsdk_record_header **headers;
    size_t n;
} delivery;

/* P.lock held. The buffers a record of this kind goes to (a mask of
   d[]): those whose context has the service (the active ones, or, when the
   context stopped since the record was made, any); a kind no service asked
   for goes to the first buffer, as records of other kinds would reach a
   tool. */
static uint32_t route(const delivery *d, size_t nd, uint32_t kind)
{
    int known = kind < KIND_SLOTS;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t mask = 0;
        for (size_t i = 0; i < nd; i++) {
            const sdk_context *c = find_context(d[i].context);
            if (!c || !known || (pass == 0 && !d[i].active) || !c->buffered[kind].on ||
                c->buffered[kind].buffer != d[i].buffer)
                continue;
            mask |= 1u << i;
        }
        if (mask) return mask;
    }
    for (size_t i = 0; i < nd; i++)
        if (d[i].active || i == nd - 1) return 1u << i;
    return 0;
}

static void complete_buffer(void (*client_fn)(void), uint8_t *buf, size_t size, size_t valid)
{
    (void)client_fn;
    size_t max_records = valid / TRUNCATED_SIZE + 1;
    rsdk_record_header *headers = malloc(max_records * sizeof *headers);
    delivery d[MAX_BUFFERS];
    size_t nd = 0;
    pthread_mutex_lock(&P.lock);
    for (int b = 0; b < MAX_BUFFERS && headers; b++) {
        const sdk_buffer *bf = &P.buffers[b];
        const sdk_context *c = bf->valid ? find_context(bf->context) : NULL;
        if (!c) continue;
        rsdk_record_header **list = malloc(max_records * sizeof *list);
        if (!list) continue;
        d[nd++] = (delivery){bf->callback, bf->data, bf->context, (uint64_t)b + 1, 0, c->active, list, 0};
    }
    /* where each kind goes, found at its first record */
    uint32_t routes[KIND_SLOTS + 1];
    uint32_t routed = 0;
    size_t off = 0, count = 0;
    while (nd && off + TRUNCATED_SIZE <= valid) {
        uint8_t *rec = buf + off;
        size_t avail = valid - off;
        size_t sz = record_size(record_kind(rec, avail));
        uint32_t kind;
        memcpy(&kind, rec + 8, sizeof kind);
        if (sz > avail) {
            /* the core cut this record short: the SDK's equivalent is a
               record whose size cannot hold what its kind holds */
            uint64_t impossible = avail;
            memcpy(rec, &impossible, sizeof impossible);
            sz = avail;
        }
        rsdk_record_header *h = &headers[count++];
        h->category = RSDK_BUFFER_CATEGORY_TRACING;
        h->kind = kind;
        h->payload = rec;
        uint32_t slot = kind < KIND_SLOTS && kind != RSDK_BUFFER_PAGE_MIGRATION ? kind : KIND_SLOTS;
        if (!(routed & (1u << slot))) {
            routes[slot] = route(d, nd, slot);
            routed |= 1u << slot;
        }
        for (uint32_t m = routes[slot]; m; m &= m - 1) {
            delivery *to = &d[__builtin_ctz(m)];
            to->headers[to->n++] = h;
        }
        off += sz;
    }
    /* drops since the last delivery go with the first buffer delivered to;
       each buffer reports its own total */
    size_t dropped = emu_core_take_dropped();
    for (size_t i = 0; i < nd; i++) {
        sdk_buffer *b = find_buffer(d[i].buffer);
        if (dropped && (d[i].n || i == nd - 1)) {
            b->drops += dropped;
            dropped = 0;
        }
        d[i].drops = b->drops;
    }
    pthread_mutex_unlock(&P.lock);
    for (size_t i = 0; i < nd; i++) {
        /* the SDK calls back only with records; here also with news of drops */
        if ((d[i].n || d[i].drops) && d[i].callback)
            d[i].callback((rsdk_context_id){d[i].context}, (rsdk_buffer_id){d[i].buffer}, d[i].headers, d[i].n,
                          d[i].data, d[i].drops);
        free(d[i].headers);
    }
    free(headers);
    staging_release(buf, size);
}

/* The SDK's side of a delivery to a client that does nothing: the header
   array is made and handed over. */
static void null_callback(rsdk_record_header **headers, size_t n) { __asm__ __volatile__("" ::"r"(headers), "r"(n)); }

static void null_client_buffer(uint8_t *buf, size_t valid)
{
    size_t max_records = valid / TRUNCATED_SIZE + 1, n = 0;
    rsdk_record_header *headers = malloc(max_records * sizeof *headers);
    rsdk_record_header **list = malloc(max_records * sizeof *list);
    for (size_t off = 0; headers && list && off + TRUNCATED_SIZE <= valid;) {
        uint8_t *rec = buf + off;
        size_t sz = record_size(record_kind(rec, valid - off));
        headers[n] = (rsdk_record_header){.payload = rec};
        memcpy(&headers[n].kind, rec + 8, sizeof headers[n].kind);
        headers[n].category = RSDK_BUFFER_CATEGORY_TRACING;
        list[n] = &headers[n];
        n++;
        off += sz < valid - off ? sz : valid - off;
    }
    null_callback(list, n);
    free(list);
    free(headers);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */
static void client_finalize(rsdk_client_id id)
{
    pthread_mutex_lock(&P.lock);
    client *c = id.handle < (uint32_t)P.client_count ? &P.clients[id.handle] : NULL;
    int run = c && c->configured && !c->finalized;
    if (run) c->finalized = 1;
    pthread_mutex_unlock(&P.lock);
    if (run && c->result.finalize) c->result.finalize(c->result.tool_data);
}

static void sdk_finalize(void)
{
    pthread_mutex_lock(&P.lock);
    if (P.fini_status) {
        pthread_mutex_unlock(&P.lock);
        return;
    }
    P.fini_status = -1;
    pthread_mutex_unlock(&P.lock);
    /* every buffer is flushed before the tools hear of it */
    emu_core_flush_all(0);
    for (int i = 0; i < P.client_count; i++) client_finalize(P.clients[i].id);
    pthread_mutex_lock(&P.lock);
    for (int c = 0; c < MAX_CONTEXTS; c++) P.contexts[c].active = 0;
    apply_services();
    P.fini_status = 1;
    pthread_mutex_unlock(&P.lock);
}

/* P.lock held. */
static int add_client(rsdk_configure_fn fn)
{
    if (!fn || P.client_count == MAX_CLIENTS) return -1;
    for (int i = 0; i < P.client_count; i++)
        if (P.clients[i].configure == fn) return -1;
    client *c = &P.clients[P.client_count];
    memset(c, 0, sizeof *c);
    c->configure = fn;
    c->id.handle = (uint32_t)P.client_count;
    return P.client_count++;
}

typedef struct scan {
    const char *self;
    rsdk_configure_fn found[MAX_CLIENTS];
    int n;
} scan;

static int scan_library(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    scan *s = data;
    if (!info->dlpi_name || !info->dlpi_name[0] || s->n == MAX_CLIENTS) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *sym = dlsym(h, "rocprofiler_configure");
    if (sym) *(void **)&s->found[s->n++] = sym;
    dlclose(h);
    return 0;
}

/* Configure, then initialize, every client from `first` on: without the
   lock (tools call back in, and may start recording in their library's
   constructor). */
static void run_clients(int first, int late)
{
    pthread_mutex_lock(&P.lock);
    int last = P.client_count;
    P.late_configuring = late;
    pthread_mutex_unlock(&P.lock);
    for (int i = first; i < last; i++) {
        client *c = &P.clients[i];
        rsdk_tool_configure_result *r = c->configure(version(), P.version_text, (uint32_t)i, &c->id);
        if (r) {
            c->result = *r;
            c->configured = 1;
        }
    }
    for (int i = first; i < last; i++) {
        client *c = &P.clients[i];
        if (!c->configured || !c->result.initialize) continue;
        pthread_mutex_lock(&P.lock);
        P.current_client = i;
        pthread_mutex_unlock(&P.lock);
        if (c->result.initialize(client_finalize, c->result.tool_data) == 0) continue;
        /* a tool whose initialize fails loses its contexts */
        pthread_mutex_lock(&P.lock);
        for (int k = 0; k < MAX_CONTEXTS; k++)
            if (P.contexts[k].valid && P.contexts[k].owner == i) P.contexts[k].valid = P.contexts[k].active = 0;
        c->configured = 0;
        apply_services();
        pthread_mutex_unlock(&P.lock);
    }
    pthread_mutex_lock(&P.lock);
    P.late_configuring = 0;
    pthread_mutex_unlock(&P.lock);
}

/* Find the tools and run them; init_status goes 0 -> -1 -> 1. */
static void sdk_initialize(void)
{
    pthread_mutex_lock(&P.lock);
    if (P.init_status != 0) {
        pthread_mutex_unlock(&P.lock);
        return;
    }
    P.init_status = -1;
    atexit(sdk_finalize);
    if (P.forced) add_client(P.forced);
    void *visible = dlsym(RTLD_DEFAULT, "rocprofiler_configure");
    if (visible) add_client((rsdk_configure_fn)visible);
    scan s = {0};
    dl_iterate_phdr(scan_library, &s);
    for (int i = 0; i < s.n; i++) add_client(s.found[i]);
    pthread_mutex_unlock(&P.lock);
    /* ROCP_TOOL_LIBRARIES: loaded now (their constructors run inside) */
    const char *libs = getenv("ROCP_TOOL_LIBRARIES");
    if (libs && *libs) {
        char *copy = strdup(libs), *save = NULL;
        for (char *lib = copy ? strtok_r(copy, ":", &save) : NULL; lib; lib = strtok_r(NULL, ":", &save)) {
            void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
            void *sym = h ? dlsym(h, "rocprofiler_configure") : NULL;
            pthread_mutex_lock(&P.lock);
            if (sym) add_client((rsdk_configure_fn)sym);
            pthread_mutex_unlock(&P.lock);
        }
        free(copy);
    }
    run_clients(0, 0);
    pthread_mutex_lock(&P.lock);
    P.init_status = 1;
    pthread_mutex_unlock(&P.lock);
}

/* Whether a tool is present, as rocprofiler-register asks before loading
   the SDK when a runtime registers. */
static int tool_present(void)
{
    if (P.forced || dlsym(RTLD_DEFAULT, "rocprofiler_configure")) return 1;
    const char *libs = getenv("ROCP_TOOL_LIBRARIES");
    if (libs && *libs) return 1;
    scan s = {0};
    dl_iterate_phdr(scan_library, &s);
    return s.n > 0;
}

static pthread_once_t g_runtime_once = PTHREAD_ONCE_INIT;

/* The runtime's first call: it registers its API tables with the SDK,
   which initializes if a tool is present; with none, the SDK never sees
   this runtime. */
static void runtime_initialize(void)
{
    pthread_mutex_lock(&P.lock);
    P.runtime_initialized = 1;
    int status = P.init_status;
    int present = status != 0 || tool_present();
    pthread_mutex_unlock(&P.lock);
    kernel_id(FILL_KERNEL, 0, 16); /* the runtime's own code object */
    if (status == 0 && present) sdk_initialize();
    pthread_mutex_lock(&P.lock);
    P.tables_seen = present;
    apply_services();
    pthread_mutex_unlock(&P.lock);
}

static void runtime_call(void)
{
    pthread_once(&g_runtime_once, runtime_initialize);
}

/* ------------------------------------------------------------------ */
/* The SDK's entry points                                              */
/* ------------------------------------------------------------------ */
RSDK_API int rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
    uint32_t v = version();
    if (major) *major = v / 10000;
    if (minor) *minor = v / 100 % 100;
    if (patch) *patch = v % 100;
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_get_timestamp(uint64_t *ns)
{
    if (!ns) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    *ns = emu_core_timestamp();
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_is_initialized(int *status)
{
    if (!status) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&P.lock);
    *status = P.init_status;
    pthread_mutex_unlock(&P.lock);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_is_finalized(int *status)
{
    if (!status) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&P.lock);
    *status = P.fini_status;
    pthread_mutex_unlock(&P.lock);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_force_configure(rsdk_configure_fn configure)
{
    emu_init();
    if (!configure) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&P.lock);
    if (P.init_status != 0 || P.forced) {
        /* anytime initialization (1.3.2): a tool after the others */
        int late = P.init_status == 1 && version() >= RSDK_VERSION(1, 3, 2);
        int index = late ? add_client(configure) : -1;
        int seen = P.runtime_initialized;
        pthread_mutex_unlock(&P.lock);
        if (index < 0) return RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
        run_clients(index, 1);
        pthread_mutex_lock(&P.lock);
        P.tables_seen |= seen;
        apply_services();
        pthread_mutex_unlock(&P.lock);
        return RSDK_STATUS_SUCCESS;
    }
    P.forced = configure;
    pthread_mutex_unlock(&P.lock);
    sdk_initialize();
    pthread_mutex_lock(&P.lock);
    /* a runtime initialized before the SDK loaded: its tables reach the SDK
       only from the release that repropagates them (late start) */
    if (P.runtime_initialized && version() >= RSDK_LATE_START_VERSION) P.tables_seen = 1;
    else if (!P.runtime_initialized) P.tables_seen = 1; /* it will register with the SDK */
    apply_services();
    pthread_mutex_unlock(&P.lock);
    return RSDK_STATUS_SUCCESS;
}

/* Contexts, buffers and services: only while a tool initializes. */
static int configuring(void)
{
    return P.init_status == -1 || P.late_configuring;
}

RSDK_API int rocprofiler_create_context(rsdk_context_id *ctx)
{
    if (!ctx) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&P.lock);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (ctx->handle != 0) st = RSDK_STATUS_ERROR_INVALID_ARGUMENT; /* CONTEXT_ID_NOT_ZERO */
    int c = 0;
    while (st == RSDK_STATUS_SUCCESS && c < MAX_CONTEXTS && P.contexts[c].valid) c++;
    if (st == RSDK_STATUS_SUCCESS && c == MAX_CONTEXTS) st = RSDK_STATUS_ERROR;
    if (st == RSDK_STATUS_SUCCESS) {
        memset(&P.contexts[c], 0, sizeof P.contexts[c]);
        P.contexts[c].valid = 1;
        P.contexts[c].owner = P.current_client;
        ctx->handle = (uint64_t)c + 1;
    }
    pthread_mutex_unlock(&P.lock);
    return st;
}

static int set_context_active(rsdk_context_id ctx, int on)
{
    pthread_mutex_lock(&P.lock);
    sdk_context *c = find_context(ctx.handle);
    if (!c || P.fini_status) {
        pthread_mutex_unlock(&P.lock);
        return !c ? RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND : RSDK_STATUS_ERROR_FINALIZED;
    }
    int was = c->active;
    c->active = on;
    apply_services();
    int replay = on && !was && c->called[RSDK_CALLBACK_CODE_OBJECT].on;
    pthread_mutex_unlock(&P.lock);
    if (replay) {
        /* a code-object service starting hears of the symbols loaded before */
        pthread_mutex_lock(&K.lock);
        for (size_t i = 0; i < K.count; i++) announce_symbol(i, ctx.handle);
        pthread_mutex_unlock(&K.lock);
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
    pthread_mutex_lock(&P.lock);
    sdk_context *c = find_context(ctx.handle);
    if (c && status) *status = c->active;
    pthread_mutex_unlock(&P.lock);
    return c && status ? RSDK_STATUS_SUCCESS : RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
}

RSDK_API int rocprofiler_create_buffer(rsdk_context_id ctx, size_t size, size_t watermark, uint32_t policy,
                                       rsdk_buffer_tracing_cb callback, void *data, rsdk_buffer_id *out)
{
    if (!callback || !out || size < sizeof(rsdk_kernel_dispatch_record) || size > UINT32_MAX ||
        (policy != RSDK_BUFFER_POLICY_DISCARD && policy != RSDK_BUFFER_POLICY_LOSSLESS))
        return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&P.lock);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!find_context(ctx.handle)) st = RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    int b = 0;
    while (st == RSDK_STATUS_SUCCESS && b < MAX_BUFFERS && P.buffers[b].valid) b++;
    if (st == RSDK_STATUS_SUCCESS && b == MAX_BUFFERS) st = RSDK_STATUS_ERROR;
    if (st == RSDK_STATUS_SUCCESS) {
        /* the SDK hands a buffer over once it holds the watermark's worth */
        size_t deliver = watermark && watermark < size ? watermark : size;
        if (deliver < sizeof(rsdk_kernel_dispatch_record)) deliver = sizeof(rsdk_kernel_dispatch_record);
        P.buffers[b] = (sdk_buffer){1, ctx.handle, (deliver + 7) & ~(size_t)7, policy, callback, data, 0};
        out->handle = (uint64_t)b + 1;
        /* the core stages records in buffers the tool's size */
        emu_core_register_buffers(staging_request, staging_complete);
        apply_services();
    }
    pthread_mutex_unlock(&P.lock);
    return st;
}

RSDK_API int rocprofiler_flush_buffer(rsdk_buffer_id id)
{
    pthread_mutex_lock(&P.lock);
    int ok = find_buffer(id.handle) != NULL, fin = P.fini_status > 0;
    pthread_mutex_unlock(&P.lock);
    if (!ok) return RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
    if (fin) return RSDK_STATUS_ERROR_FINALIZED;
    emu_core_flush_all(0);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_destroy_buffer(rsdk_buffer_id id)
{
    pthread_mutex_lock(&P.lock);
    sdk_buffer *b = find_buffer(id.handle);
    if (b) b->valid = 0;
    pthread_mutex_unlock(&P.lock);
    return b ? RSDK_STATUS_SUCCESS : RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
}

static int configure_service(rsdk_context_id ctx, uint32_t kind, const int32_t *ops, size_t n, int buffered,
                             rsdk_callback_tracing_cb callback, void *data, uint64_t buffer_handle)
{
    if (kind >= KIND_SLOTS || n > MAX_OPS || (n && !ops)) return RSDK_STATUS_ERROR_KIND_NOT_FOUND;
    pthread_mutex_lock(&P.lock);
    sdk_context *c = find_context(ctx.handle);
    int st = RSDK_STATUS_SUCCESS;
    if (!configuring()) st = RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!c) st = RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    else if (buffered && !find_buffer(buffer_handle)) st = RSDK_STATUS_ERROR_BUFFER_NOT_FOUND;
    else if ((buffered ? c->buffered : c->called)[kind].on) st = RSDK_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    if (st == RSDK_STATUS_SUCCESS) {
        service *s = &(buffered ? c->buffered : c->called)[kind];
        *s = (service){1, callback, data, buffer_handle, {0}, n};
        if (n) memcpy(s->ops, ops, n * sizeof *ops);
    }
    pthread_mutex_unlock(&P.lock);
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

RSDK_API int rocprofiler_iterate_callback_tracing_kind_operation_args(rsdk_callback_arg record,
                                                                      rsdk_operation_args_cb callback,
                                                                      int32_t max_dereference_count, void *data)
{
    (void)max_dereference_count;
    uint32_t kind;
    int32_t op;
    const void *payload;
    if (ancestor_layout()) {
        rsdk_callback_record_ancestor r;
        memcpy(&r, &record, sizeof r);
        kind = r.kind, op = r.operation, payload = r.payload;
    } else {
        rsdk_callback_record r;
        memcpy(&r, &record, sizeof r);
        kind = r.kind, op = r.operation, payload = r.payload;
    }
    if (!callback || kind != RSDK_CALLBACK_HIP_RUNTIME_API || !payload) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    const hip_args *a = payload;
    if (op == OP_MEMSET || op == OP_MEMSET_ASYNC) {
        callback(kind, (uint32_t)op, 0, &a->dst, 1, "void*", "dst", "0x7f0000100000", 0, data);
        callback(kind, (uint32_t)op, 1, &a->value, 0, "int", "value", "", 0, data);
        callback(kind, (uint32_t)op, 2, &a->size_bytes, 0, "unsigned long", "sizeBytes", "", 0, data);
        if (op == OP_MEMSET_ASYNC) callback(kind, (uint32_t)op, 3, &a->stream, 1, "hipStream_t", "stream", "0", 0, data);
    }
    return RSDK_STATUS_SUCCESS;
}

/* The external-correlation stacks, per context and thread (this emulator
   accepts only the calling thread's id). */
RSDK_API int rocprofiler_push_external_correlation_id(rsdk_context_id ctx, uint64_t tid, rsdk_user_data id)
{
    ext_stack *s = stack_of(ctx.handle);
    if (!s) return RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (tid != my_tid()) return RSDK_STATUS_ERROR_THREAD_NOT_FOUND;
    if (s->depth == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        uint64_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (!ids) return RSDK_STATUS_ERROR;
        if (!s->cap) {
            pthread_once(&g_ext_once, make_ext_key);
            pthread_setspecific(g_ext_key, t_ext);
        }
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->depth++] = id.value;
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_pop_external_correlation_id(rsdk_context_id ctx, uint64_t tid, rsdk_user_data *id)
{
    ext_stack *s = stack_of(ctx.handle);
    if (!s) return RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (tid != my_tid()) return RSDK_STATUS_ERROR_THREAD_NOT_FOUND;
    if (!s->depth) return RSDK_STATUS_ERROR;
    s->depth--;
    if (id) id->value = s->ids[s->depth];
    return RSDK_STATUS_SUCCESS;
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

RSDK_API const char *rocprofiler_get_status_string(int status)
{
    switch (status) {
    case RSDK_STATUS_SUCCESS: return "ROCPROFILER_STATUS_SUCCESS";
    case RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND";
    case RSDK_STATUS_ERROR_BUFFER_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND";
    case RSDK_STATUS_ERROR_KIND_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND";
    case RSDK_STATUS_ERROR_OPERATION_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND";
    case RSDK_STATUS_ERROR_THREAD_NOT_FOUND: return "ROCPROFILER_STATUS_ERROR_THREAD_NOT_FOUND";
    case RSDK_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED: return "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED";
    case RSDK_STATUS_ERROR_CONFIGURATION_LOCKED: return "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED";
    case RSDK_STATUS_ERROR_NOT_IMPLEMENTED: return "ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED";
    case RSDK_STATUS_ERROR_INCOMPATIBLE_ABI: return "ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI";
    case RSDK_STATUS_ERROR_INVALID_ARGUMENT: return "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT";
    case RSDK_STATUS_ERROR_FINALIZED: return "ROCPROFILER_STATUS_ERROR_FINALIZED";
    default: return "ROCPROFILER_STATUS_ERROR";
    }
}

/* hsa_system_get_info of the HSA runtime the SDK links against: whether
   the emulated runtime has initialized. */
RSDK_API int hsa_system_get_info(int attribute, void *value)
{
    pthread_mutex_lock(&P.lock);
    int up = P.runtime_initialized;
    pthread_mutex_unlock(&P.lock);
    if (!up) return RSDK_HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (attribute == RSDK_HSA_SYSTEM_INFO_VERSION_MAJOR && value) *(uint16_t *)value = 1;
    return RSDK_HSA_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* ROCTX (librocprofiler-sdk-roctx's entry points)                     */
/* ------------------------------------------------------------------ */
static _Thread_local int t_roctx_depth;

static void roctx_call(int32_t op, const char *message)
{
    runtime_call();
    rsdk_marker_api_data data = {sizeof data, message};
    uint64_t corr = emu_core_next_correlation();
    call_each(RSDK_CALLBACK_MARKER_CORE_API, op, corr, RSDK_PHASE_ENTER, &data);
    call_each(RSDK_CALLBACK_MARKER_CORE_API, op, corr, RSDK_PHASE_EXIT, &data);
}

RSDK_API int roctxRangePushA(const char *message)
{
    roctx_call(OP_ROCTX_PUSH, message);
    return t_roctx_depth++;
}

RSDK_API int roctxRangePop(void)
{
    roctx_call(OP_ROCTX_POP, NULL);
    return t_roctx_depth > 0 ? --t_roctx_depth : -1;
}

RSDK_API void roctxMarkA(const char *message)
{
    roctx_call(OP_ROCTX_MARK, message);
}

/* ------------------------------------------------------------------ */
/* The personality                                                     */
/* ------------------------------------------------------------------ */
static uint32_t cbid(emu_domain domain, emu_op op, emu_copy_kind copy_kind)
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

static const char *callback_name(emu_domain domain, uint32_t id)
{
    return domain == EMU_DOMAIN_RUNTIME && id < OP_HIP_COUNT ? hip_names[id] : NULL;
}

static uint64_t boot_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct emu_vendor emu_vendor_impl = {
    .name = "rocprofiler_sdk",
    .record_size = record_size,
    .write_record = write_record,
    .record_kind = record_kind,
    .complete_buffer = complete_buffer,
    .null_client_buffer = null_client_buffer,
    .invoke_callback = invoke_callback,
    .cbid = cbid,
    .callback_name = callback_name,
    .default_thread_id_type = EMU_TID_SYSTEM,
    .clock_counter = 1,
    .record_external = record_external,
    .clock_origin_ns = boot_clock_ns,
    .runtime_call = runtime_call,
};

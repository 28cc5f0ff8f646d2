/*
 * The rocprofiler-sdk backend (AMD ROCm 6.2 and later): devtrace as a
 * rocprofiler-sdk tool.
 *
 * rocprofiler-sdk accepts tools only while it initializes: at the first
 * HIP/HSA call of the process (a tool found through its exported
 * `rocprofiler_configure`, ROCP_TOOL_LIBRARIES or LD_PRELOAD), or when a
 * tool calls rocprofiler_force_configure before that. Contexts, buffers and
 * services can be made only inside the tool's initialize; afterwards they
 * can only be started and stopped. So devtrace registers once per process
 * (forced when a session or dt_prepare asks first, or found through
 * libdevtrace_inject's exported `rocprofiler_configure`), configures every
 * service it may need in contexts of their own, and a session starts the
 * contexts of what it captures. A session that starts after the SDK
 * initialized without devtrace fails and says why: it would record nothing.
 *
 * Contexts: code objects (kernel names; always on once registered), ROCTX
 * ranges (mirrored onto devtrace's range stack; always on), kernel
 * dispatches, memory copies and HIP API calls (one buffer each), hipMemset*
 * arguments (their fill kernels become memsets with a size), kernel
 * launches (entries awaited for their dispatch, only in sessions that do
 * not record HIP API calls: otherwise the decoder awaits them from the API
 * records) and HIP API entries (attribution by API enter, started only when
 * needed).
 *
 * Locking. rsdk_state.lock (recursive) serialises loading, registration, starting
 * and stopping; it is recursive because rocprofiler_force_configure calls
 * devtrace's configure and initialize on the same thread. rsdk_state.decode_lock
 * pairs the session pointer with buffer callbacks, which the SDK runs on
 * its own threads, also inside a flush made here: flushes are made without
 * it. It also serializes all decoding, and with it the decoder's table of
 * launches.
 */
#include "backends/rocprofiler_sdk.h"
#include "base/env_names.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The library                                                         */
/* ------------------------------------------------------------------ */
enum {
    S_GET_VERSION, S_GET_TIMESTAMP, S_IS_INITIALIZED, S_FORCE_CONFIGURE, S_CREATE_CONTEXT, S_START_CONTEXT,
    S_STOP_CONTEXT, S_CREATE_BUFFER, S_FLUSH_BUFFER, S_CONFIGURE_BUFFER_TRACING, S_CONFIGURE_CALLBACK_TRACING,
    /* optional */
    S_PUSH_EXTERNAL, S_POP_EXTERNAL, S_QUERY_BUFFER_OPERATION_NAME, S_QUERY_CALLBACK_OPERATION_NAME,
    S_ITERATE_ARGS, S_QUERY_AGENTS, S_STATUS_STRING, S_COUNT
};

static dt_symbol_spec g_symbols[S_COUNT] = {
    [S_GET_VERSION] = {"rocprofiler_get_version", 1, NULL},
    [S_GET_TIMESTAMP] = {"rocprofiler_get_timestamp", 1, NULL},
    [S_IS_INITIALIZED] = {"rocprofiler_is_initialized", 1, NULL},
    [S_FORCE_CONFIGURE] = {"rocprofiler_force_configure", 1, NULL},
    [S_CREATE_CONTEXT] = {"rocprofiler_create_context", 1, NULL},
    [S_START_CONTEXT] = {"rocprofiler_start_context", 1, NULL},
    [S_STOP_CONTEXT] = {"rocprofiler_stop_context", 1, NULL},
    [S_CREATE_BUFFER] = {"rocprofiler_create_buffer", 1, NULL},
    [S_FLUSH_BUFFER] = {"rocprofiler_flush_buffer", 1, NULL},
    [S_CONFIGURE_BUFFER_TRACING] = {"rocprofiler_configure_buffer_tracing_service", 1, NULL},
    [S_CONFIGURE_CALLBACK_TRACING] = {"rocprofiler_configure_callback_tracing_service", 1, NULL},
    [S_PUSH_EXTERNAL] = {"rocprofiler_push_external_correlation_id", 0,
                         "no external-correlation stack: External ids come from HIP API entry callbacks"},
    [S_POP_EXTERNAL] = {"rocprofiler_pop_external_correlation_id", 0,
                        "no external-correlation stack: External ids come from HIP API entry callbacks"},
    [S_QUERY_BUFFER_OPERATION_NAME] = {"rocprofiler_query_buffer_tracing_kind_operation_name", 0,
                                       "HIP API calls are named HIP#<operation>"},
    [S_QUERY_CALLBACK_OPERATION_NAME] = {"rocprofiler_query_callback_tracing_kind_operation_name", 0,
                                         "ROCTX ranges are not recorded, and memsets have no size"},
    [S_ITERATE_ARGS] = {"rocprofiler_iterate_callback_tracing_kind_operation_args", 0,
                        "memsets are recorded without their size and value"},
    [S_QUERY_AGENTS] = {"rocprofiler_query_available_agents", 0, "no device properties"},
    [S_STATUS_STRING] = {"rocprofiler_get_status_string", 0, "rocprofiler-sdk errors are reported by number only"},
};

static const char *const g_sonames[] = {"librocprofiler-sdk.so.1", "librocprofiler-sdk.so.0", "librocprofiler-sdk.so",
                                        NULL};
static const char *const g_roots[] = {"ROCM_PATH", NULL};
static const char *const g_subdirs[] = {"lib", "lib64", NULL};
static const dt_library_spec g_spec = {
    .what = "librocprofiler-sdk",
    .override_env = "DEVTRACE_ROCPROFILER_SDK_LIBRARY",
    .sonames = g_sonames,
    .loaded_symbol = "rocprofiler_create_context",
    .root_envs = g_roots,
    .default_root = "/opt/rocm",
    .subdirs = g_subdirs,
    .hint = "install ROCm 6.2 or later (its rocprofiler-sdk package) or set ROCM_PATH",
};

/* The contexts, by what they serve. */
enum { C_NAMES, C_MARKERS, C_KERNEL, C_COPY, C_API, C_FILL, C_LAUNCH, C_ENTER, C_COUNT };
/* the ones with a buffer, in this order */
enum { B_KERNEL, B_COPY, B_API, B_COUNT };
static const int g_buffer_context[B_COUNT] = {C_KERNEL, C_COPY, C_API};
static const uint32_t g_buffer_kind[B_COUNT] = {RSDK_BUFFER_KERNEL_DISPATCH, RSDK_BUFFER_MEMORY_COPY,
                                                RSDK_BUFFER_HIP_RUNTIME_API};

/* A hipMemset* operation: how to read its size. */
typedef struct fill_op {
    int32_t op;
    uint8_t element;   /* bytes per counted element (D8/D16/D32) */
    uint8_t async;
} fill_op;
#define MAX_FILL_OPS 32
#define MAX_LAUNCH_OPS 32

#define SYM(T, i) ((T)rsdk_state.sym[i])

/* devtrace as the SDK's tool: the library, the registration, the contexts
   and buffers, the session they deliver to. */
static struct {
    pthread_mutex_t lock;
    pthread_mutex_t decode_lock;
    dt_library lib;
    void *sym[S_COUNT];
    rsdk_hsa_system_get_info_fn hsa_system_get_info;
    int loaded, emulated;
    uint32_t version;
    char version_text[32];
    /* registration */
    int wanted;             /* a session or dt_prepare asked for devtrace as a tool */
    int configuring;        /* configure accepted, initialize not yet called */
    int configured;         /* initialize ran: the contexts exist */
    int finalized;          /* the SDK finalized (the process is exiting) */
    char config_error[600];
    dt_config config;       /* buffer settings the buffers were made with */
    size_t buffer_bytes;
    /* contexts and buffers */
    rsdk_context_id ctx[C_COUNT];
    uint8_t have[C_COUNT];  /* configured */
    uint8_t on[C_COUNT];    /* started */
    rsdk_buffer_id buffer[B_COUNT];
    uint64_t drops_seen[B_COUNT];
    /* the session */
    dt_session *session;    /* under decode_lock */
    dt_session *pending;    /* started while the SDK initialized */
    _Atomic uint64_t orphaned;
    uint64_t damage_at_start[4];
    /* operations found by name */
    int32_t op_range_push, op_range_pop;
    fill_op fill_ops[MAX_FILL_OPS];
    uint32_t fill_op_count;
    int32_t launch_ops[MAX_LAUNCH_OPS];
    uint32_t launch_op_count;
    _Atomic uint64_t callback_layout_mismatch;
    dt_device_props devices[DT_MAX_DEVICES];
    char devices_missing[256];
    dt_rsdk_decoder decoder;
    int decoder_ready;
    dt_pool_slot flight;    /* the flight recorder's copies (its ring's) */
    dt_rsdk_packer packer;  /* under decode_lock */
} rsdk_state = {
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .decode_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .op_range_push = -1,
    .op_range_pop = -1,
    .flight = DT_POOL_SLOT_INIT,
    .packer = {.slot = &rsdk_state.flight},
};

static const char *status_text(int status)
{
    rsdk_status_string_fn text = SYM(rsdk_status_string_fn, S_STATUS_STRING);
    const char *s = text ? text(status) : NULL;
    return s ? s : "error";
}

static dt_status vendor_error(const char *call, int status)
{
    return dt__error(DT_ERR_VENDOR, "%s failed: %s (%d) in %s", call, status_text(status), status, rsdk_state.lib.path);
}

/* rsdk_state.lock held. Find, load and bind the library, once. */
static dt_status load(void)
{
    if (rsdk_state.loaded) return DT_OK;
    dt_library lib;
    void *sym[S_COUNT];
    dt_status st = dt__library_open(&g_spec, &lib);
    if (st != DT_OK) return st;
    st = dt__library_bind(&lib, &g_spec, g_symbols, S_COUNT, sym);
    if (st != DT_OK) return st;
    rsdk_state.lib = lib;
    memcpy(rsdk_state.sym, sym, sizeof sym);
    /* push without pop (or the reverse) is no stack */
    if (!rsdk_state.sym[S_PUSH_EXTERNAL] || !rsdk_state.sym[S_POP_EXTERNAL]) rsdk_state.sym[S_PUSH_EXTERNAL] = rsdk_state.sym[S_POP_EXTERNAL] = NULL;
    /* the HSA runtime the SDK links against, to ask whether it was
       initialized before devtrace registered (never to initialize it) */
    *(void **)&rsdk_state.hsa_system_get_info = dlsym(lib.handle, "hsa_system_get_info");
    rsdk_state.emulated = dlsym(lib.handle, "devtrace_emulator_rocprofiler_sdk") != NULL;
    uint32_t major = 0, minor = 0, patch = 0;
    if (SYM(rsdk_get_version_fn, S_GET_VERSION)(&major, &minor, &patch) == RSDK_STATUS_SUCCESS) {
        rsdk_state.version = RSDK_VERSION(major, minor, patch);
        snprintf(rsdk_state.version_text, sizeof rsdk_state.version_text, "%u.%u.%u", major, minor, patch);
    }
    rsdk_state.loaded = 1;
    dt__log("rocprofiler_sdk: using %s (version %s)%s", rsdk_state.lib.path, rsdk_state.version_text[0] ? rsdk_state.version_text : "unknown",
           rsdk_state.emulated ? ", devtrace's emulator" : "");
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* Callback records                                                    */
/* ------------------------------------------------------------------ */
typedef struct cb_fields {
    uint64_t internal;
    int32_t operation;
    uint32_t phase;
    const void *payload;
} cb_fields;

/* A callback record of either layout: the one that has the kind the
   callback was configured for where that layout puts it. */
static int read_callback(const rsdk_callback_arg *arg, uint32_t kind, cb_fields *out)
{
    rsdk_callback_record r;
    memcpy(&r, arg, sizeof r);
    if (r.kind == kind) {
        *out = (cb_fields){r.correlation_id.internal, r.operation, r.phase, r.payload};
        return 1;
    }
    rsdk_callback_record_ancestor a;
    memcpy(&a, arg, sizeof a);
    if (a.kind == kind) {
        *out = (cb_fields){a.correlation_id.internal, a.operation, a.phase, a.payload};
        return 1;
    }
    atomic_fetch_add_explicit(&rsdk_state.callback_layout_mismatch, 1, memory_order_relaxed);
    return 0;
}

static void code_object_callback(rsdk_callback_arg arg, rsdk_user_data *user_data, void *data)
{
    (void)user_data;
    (void)data;
    cb_fields f;
    if (!read_callback(&arg, RSDK_CALLBACK_CODE_OBJECT, &f)) return;
    if (f.operation == RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER && f.phase == RSDK_PHASE_LOAD && f.payload &&
        dt__rsdk_decoder_add_kernel(&rsdk_state.decoder, f.payload) != 0)
        dt__log("rocprofiler_sdk: out of memory keeping a kernel name");
}

/* ROCTX ranges on devtrace's stack: only pops of ranges this mirrored. */
static _Thread_local uint32_t tls_roctx_depth;

static void marker_callback(rsdk_callback_arg arg, rsdk_user_data *user_data, void *data)
{
    (void)user_data;
    (void)data;
    cb_fields f;
    if (!read_callback(&arg, RSDK_CALLBACK_MARKER_CORE_API, &f)) return;
    if (f.operation == rsdk_state.op_range_push && f.phase == RSDK_PHASE_ENTER) {
        const rsdk_marker_api_data *m = f.payload;
        const char *message = m && m->size >= sizeof *m ? m->message : NULL;
        if (dt_range_push(message ? message : "", NULL) == DT_OK) tls_roctx_depth++;
    } else if (f.operation == rsdk_state.op_range_pop && f.phase == RSDK_PHASE_EXIT && tls_roctx_depth) {
        if (dt_range_pop() == DT_OK) tls_roctx_depth--;
    }
}

static void enter_callback(rsdk_callback_arg arg, rsdk_user_data *user_data, void *data)
{
    (void)user_data;
    (void)data;
    cb_fields f;
    if (read_callback(&arg, RSDK_CALLBACK_HIP_RUNTIME_API, &f) && f.phase == RSDK_PHASE_ENTER)
        dt__corr_link_current(f.internal);
}

typedef struct fill_args {
    const fill_op *op;
    uint64_t size_bytes, count, width, height;
    uint32_t value;
} fill_args;

static int fill_arg(uint32_t kind, uint32_t operation, uint32_t arg_number, const void *const value_addr,
                    int32_t indirection, const char *type, const char *name, const char *value_str,
                    int32_t dereferenced, void *data)
{
    (void)kind, (void)operation, (void)arg_number, (void)indirection, (void)type, (void)value_str,
        (void)dereferenced;
    fill_args *a = data;
    if (!name || !value_addr) return 0;
    uint64_t v = 0;
    if (strcmp(name, "value") == 0) {
        /* int, or the element type of the D8/D16 forms */
        size_t n = a->op->element == 1 || a->op->element == 2 ? a->op->element : 4;
        memcpy(&v, value_addr, n);
        a->value = (uint32_t)v;
        return 0;
    }
    memcpy(&v, value_addr, sizeof v); /* size_t */
    if (strcmp(name, "sizeBytes") == 0) a->size_bytes = v;
    else if (strcmp(name, "count") == 0) a->count = v;
    else if (strcmp(name, "width") == 0) a->width = v;
    else if (strcmp(name, "height") == 0) a->height = v;
    return 0;
}

static void fill_callback(rsdk_callback_arg arg, rsdk_user_data *user_data, void *data)
{
    (void)user_data;
    (void)data;
    cb_fields f;
    if (!read_callback(&arg, RSDK_CALLBACK_HIP_RUNTIME_API, &f) || f.phase != RSDK_PHASE_ENTER) return;
    const fill_op *op = NULL;
    for (uint32_t i = 0; i < rsdk_state.fill_op_count && !op; i++)
        if (rsdk_state.fill_ops[i].op == f.operation) op = &rsdk_state.fill_ops[i];
    if (!op) return;
    fill_args a = {.op = op};
    SYM(rsdk_iterate_args_fn, S_ITERATE_ARGS)(arg, fill_arg, 1, &a);
    uint64_t bytes = a.size_bytes ? a.size_bytes : a.count ? a.count * op->element : a.width * a.height;
    dt__rsdk_decoder_note_fill(&rsdk_state.decoder, f.internal, bytes, a.value, op->async);
}

/* In a session that records no HIP API calls, a launch's dispatch is
   awaited from its call's entry on (with API calls recorded, the decoder
   awaits it from the call's record): the SDK writes the dispatch's record
   only when the kernel completes. */
static void launch_callback(rsdk_callback_arg arg, rsdk_user_data *user_data, void *data)
{
    (void)user_data;
    (void)data;
    cb_fields f;
    if (read_callback(&arg, RSDK_CALLBACK_HIP_RUNTIME_API, &f) && f.phase == RSDK_PHASE_ENTER)
        dt__rsdk_decoder_note_launch(&rsdk_state.decoder, f.internal);
}

/* The flight recorder's ring holds copies of the SDK's records
   (dt__rsdk_pack). A buffer the ring recycles for the delivering thread is
   decoded there, decode_lock held already (it is recursive). */
static void ring_decode(void *ctx, dt_session *into, uint8_t *buf, size_t valid)
{
    (void)ctx;
    pthread_mutex_lock(&rsdk_state.decode_lock);
    dt__rsdk_decode_copy(&rsdk_state.decoder, into, buf, valid);
    pthread_mutex_unlock(&rsdk_state.decode_lock);
}

static void buffer_callback(rsdk_context_id context, rsdk_buffer_id buffer, rsdk_record_header **headers,
                            size_t n, void *data, uint64_t drop_count)
{
    (void)context;
    (void)buffer;
    size_t which = (size_t)(uintptr_t)data - 1;
    pthread_mutex_lock(&rsdk_state.decode_lock);
    dt_session *s = rsdk_state.session;
    if (s && n && dt__sink_has_ring(s)) dt__rsdk_pack(&rsdk_state.packer, s, headers, n);
    else if (s) dt__rsdk_decode(&rsdk_state.decoder, s, headers, n);
    else if (n) atomic_fetch_add_explicit(&rsdk_state.orphaned, 1, memory_order_relaxed);
    /* the count the SDK delivers is the buffer's total so far: what grew
       since the last callback was dropped since */
    if (which < B_COUNT) {
        uint64_t seen = rsdk_state.drops_seen[which];
        if (s && drop_count > seen) dt__loss_add(s, DT_LOSS_VENDOR_DROPPED, drop_count - seen);
        rsdk_state.drops_seen[which] = drop_count;
    }
    pthread_mutex_unlock(&rsdk_state.decode_lock);
}

/* ------------------------------------------------------------------ */
/* Initialize: what rocprofiler-sdk lets a tool do only now            */
/* ------------------------------------------------------------------ */
static int describe_agents(uint32_t version, const void **agents, size_t n, void *data)
{
    (void)data;
    if (version != RSDK_AGENT_INFO_VERSION_0) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        dt_device_props p;
        const rsdk_agent *a = agents[i];
        dt__rsdk_decoder_add_agent(&rsdk_state.decoder, a, a ? (size_t)a->size : 0, &p, rsdk_state.devices_missing,
                                  sizeof rsdk_state.devices_missing);
        if (p.valid && p.id < DT_MAX_DEVICES) rsdk_state.devices[p.id] = p;
    }
    return RSDK_STATUS_SUCCESS;
}

/* HIP runtime API names by operation, and the operations devtrace treats
   apart, found by name so that no release's numbering is assumed. */
static int find_operations(void)
{
    rsdk_query_operation_name_fn buffered = SYM(rsdk_query_operation_name_fn, S_QUERY_BUFFER_OPERATION_NAME);
    rsdk_query_operation_name_fn called = SYM(rsdk_query_operation_name_fn, S_QUERY_CALLBACK_OPERATION_NAME);
    rsdk_query_operation_name_fn any = buffered ? buffered : called;
    enum { MAX_OPS = DT_RSDK_MAX_OPS };
    if (any) {
        const char **names = dt__calloc(MAX_OPS, sizeof *names);
        if (!names) return -1;
        uint32_t count = 0;
        for (uint32_t op = 0; op < MAX_OPS; op++) {
            const char *name = NULL;
            if (any(RSDK_BUFFER_HIP_RUNTIME_API, op, &name, NULL) != RSDK_STATUS_SUCCESS) break;
            names[op] = name;
            count = op + 1;
            /* hipLaunchKernel, hipModuleLaunchKernel, hipExtLaunchKernel,
               hipLaunchCooperativeKernel... */
            if (name && strncmp(name, "hip", 3) == 0 && strstr(name, "Launch") && strstr(name, "Kernel") &&
                rsdk_state.launch_op_count < MAX_LAUNCH_OPS)
                rsdk_state.launch_ops[rsdk_state.launch_op_count++] = (int32_t)op;
            if (name && strncmp(name, "hipMemset", 9) == 0 && rsdk_state.fill_op_count < MAX_FILL_OPS) {
                fill_op *f = &rsdk_state.fill_ops[rsdk_state.fill_op_count++];
                f->op = (int32_t)op;
                f->async = strstr(name, "Async") != NULL;
                f->element = strstr(name, "D16") ? 2 : strstr(name, "D32") ? 4 : 1;
            }
        }
        if (buffered) {
            rsdk_state.decoder.api_names = names;
            rsdk_state.decoder.api_name_count = count;
        } else {
            dt__free(names);
        }
    }
    for (uint32_t op = 0; called && op < 256; op++) {
        const char *name = NULL;
        if (called(RSDK_CALLBACK_MARKER_CORE_API, op, &name, NULL) != RSDK_STATUS_SUCCESS) break;
        if (name && strcmp(name, "roctxRangePushA") == 0) rsdk_state.op_range_push = (int32_t)op;
        if (name && strcmp(name, "roctxRangePop") == 0) rsdk_state.op_range_pop = (int32_t)op;
    }
    return 0;
}

/* Each SDK buffer is one of devtrace's buffers in size (the SDK keeps two
   of each under the lossless policy, and delivers one when half full);
   buffer_count has no counterpart. */
static size_t buffer_bytes(const dt_config *c)
{
    return c->buffer_size < 1024 ? 1024 : c->buffer_size;
}

/* Creates a context; returns the SDK's status. */
static int make_context(int c)
{
    rsdk_state.ctx[c].handle = 0; /* the SDK refuses a non-zero id */
    return SYM(rsdk_create_context_fn, S_CREATE_CONTEXT)(&rsdk_state.ctx[c]);
}

static int callback_service(int c, uint32_t kind, const int32_t *ops, size_t n, rsdk_callback_tracing_cb cb)
{
    int r = make_context(c);
    if (r == RSDK_STATUS_SUCCESS)
        r = SYM(rsdk_configure_callback_tracing_fn, S_CONFIGURE_CALLBACK_TRACING)(rsdk_state.ctx[c], kind, ops, n, cb, NULL);
    rsdk_state.have[c] = r == RSDK_STATUS_SUCCESS;
    return r;
}

static int configure_services(void)
{
    int r;
    static const int32_t symbol_ops[] = {RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER};
    if ((r = callback_service(C_NAMES, RSDK_CALLBACK_CODE_OBJECT, symbol_ops, 1, code_object_callback)) != 0) {
        snprintf(rsdk_state.config_error, sizeof rsdk_state.config_error, "%s: %s (%d)", g_symbols[S_CONFIGURE_CALLBACK_TRACING].name,
                 status_text(r), r);
        return -1;
    }
    rsdk_state.buffer_bytes = buffer_bytes(&rsdk_state.config);
    for (int b = 0; b < B_COUNT; b++) {
        int c = g_buffer_context[b];
        r = make_context(c);
        if (r == RSDK_STATUS_SUCCESS)
            r = SYM(rsdk_create_buffer_fn, S_CREATE_BUFFER)(rsdk_state.ctx[c], rsdk_state.buffer_bytes, rsdk_state.buffer_bytes / 2,
                                                            RSDK_BUFFER_POLICY_LOSSLESS, buffer_callback,
                                                            (void *)(uintptr_t)(b + 1), &rsdk_state.buffer[b]);
        if (r == RSDK_STATUS_SUCCESS)
            r = SYM(rsdk_configure_buffer_tracing_fn, S_CONFIGURE_BUFFER_TRACING)(rsdk_state.ctx[c], g_buffer_kind[b], NULL,
                                                                                    0, rsdk_state.buffer[b]);
        if (r != RSDK_STATUS_SUCCESS) {
            snprintf(rsdk_state.config_error, sizeof rsdk_state.config_error,
                     "configuring buffer tracing of kind %u in %s failed: %s (%d)", (unsigned)g_buffer_kind[b],
                     rsdk_state.lib.path, status_text(r), r);
            return -1;
        }
        rsdk_state.have[c] = 1;
    }
    /* what follows only adds to the trace: a refusal is noted, not fatal */
    if (rsdk_state.op_range_push >= 0 && rsdk_state.op_range_pop >= 0) {
        const int32_t ops[] = {rsdk_state.op_range_push, rsdk_state.op_range_pop};
        callback_service(C_MARKERS, RSDK_CALLBACK_MARKER_CORE_API, ops, 2, marker_callback);
    }
    if (rsdk_state.fill_op_count && rsdk_state.sym[S_ITERATE_ARGS]) {
        int32_t ops[MAX_FILL_OPS];
        for (uint32_t i = 0; i < rsdk_state.fill_op_count; i++) ops[i] = rsdk_state.fill_ops[i].op;
        callback_service(C_FILL, RSDK_CALLBACK_HIP_RUNTIME_API, ops, rsdk_state.fill_op_count, fill_callback);
    }
    if (rsdk_state.launch_op_count)
        callback_service(C_LAUNCH, RSDK_CALLBACK_HIP_RUNTIME_API, rsdk_state.launch_ops, rsdk_state.launch_op_count, launch_callback);
    callback_service(C_ENTER, RSDK_CALLBACK_HIP_RUNTIME_API, NULL, 0, enter_callback);
    return 0;
}

static int start_context(int c)
{
    if (!rsdk_state.have[c] || rsdk_state.on[c]) return RSDK_STATUS_SUCCESS;
    int r = SYM(rsdk_context_fn, S_START_CONTEXT)(rsdk_state.ctx[c]);
    if (r == RSDK_STATUS_SUCCESS) rsdk_state.on[c] = 1;
    return r;
}

static void stop_context(int c)
{
    if (!rsdk_state.on[c]) return;
    SYM(rsdk_context_fn, S_STOP_CONTEXT)(rsdk_state.ctx[c]);
    rsdk_state.on[c] = 0;
}

static dt_status start_session_contexts(dt_session *s);
static void attach(dt_session *s);
static void session_devices(dt_session *s);

static int tool_initialize(rsdk_client_finalize finalize, void *tool_data)
{
    (void)finalize;
    (void)tool_data;
    pthread_mutex_lock(&rsdk_state.lock);
    rsdk_state.configuring = 0;
    int rc = -1;
    /* registered through libdevtrace_inject's rocprofiler_configure before
       devtrace looked for the library: it is the one calling */
    if (load() != DT_OK) {
        snprintf(rsdk_state.config_error, sizeof rsdk_state.config_error, "%s", dt_last_error());
        goto out;
    }
    if (!rsdk_state.decoder_ready) {
        dt__rsdk_decoder_init(&rsdk_state.decoder, rsdk_state.version);
        rsdk_state.decoder_ready = 1;
    }
    rsdk_query_agents_fn agents = SYM(rsdk_query_agents_fn, S_QUERY_AGENTS);
    if (agents) {
        int r = agents(RSDK_AGENT_INFO_VERSION_0, describe_agents, sizeof(rsdk_agent), NULL);
        if (r != RSDK_STATUS_SUCCESS) dt__log("rocprofiler_sdk: querying agents failed: %s (%d)", status_text(r), r);
    }
    if (find_operations() != 0) {
        snprintf(rsdk_state.config_error, sizeof rsdk_state.config_error, "rocprofiler_sdk: out of memory for the HIP API names");
        goto out;
    }
    if (configure_services() != 0) goto out;
    /* where API calls are recorded, their records say which calls launched
       kernels: no callback on the program's threads is needed for that */
    if (rsdk_state.launch_op_count &&
        dt__rsdk_decoder_match_launches(&rsdk_state.decoder, rsdk_state.launch_ops, rsdk_state.launch_op_count, rsdk_state.buffer_bytes) != 0)
        dt__log("rocprofiler_sdk: out of memory for the table of launches: launches are awaited from a callback");
    /* kernel names and ROCTX ranges are followed for the process's life:
       a name registered between sessions, or a range open across a start,
       is needed later */
    int r = start_context(C_NAMES);
    if (r == RSDK_STATUS_SUCCESS) r = start_context(C_MARKERS);
    if (r != RSDK_STATUS_SUCCESS) {
        snprintf(rsdk_state.config_error, sizeof rsdk_state.config_error, "%s failed: %s (%d)", g_symbols[S_START_CONTEXT].name,
                 status_text(r), r);
        goto out;
    }
    rsdk_state.configured = 1;
    rc = 0;
    /* a session that started while the SDK initialized begins now */
    if (rsdk_state.pending) {
        dt_session *s = rsdk_state.pending;
        rsdk_state.pending = NULL;
        if (start_session_contexts(s) == DT_OK) {
            session_devices(s);
            attach(s);
        } else {
            dt__core_note(s, "rocprofiler_sdk", "%s", dt_last_error());
        }
    }
out:
    if (rc != 0) dt__log("rocprofiler_sdk: initialize failed: %s", rsdk_state.config_error);
    pthread_mutex_unlock(&rsdk_state.lock);
    return rc;
}

static void tool_finalize(void *tool_data)
{
    (void)tool_data;
    /* the SDK flushed the buffers before this: nothing more will come */
    pthread_mutex_lock(&rsdk_state.lock);
    rsdk_state.finalized = 1;
    memset(rsdk_state.on, 0, sizeof rsdk_state.on);
    pthread_mutex_unlock(&rsdk_state.lock);
}

static rsdk_tool_configure_result g_configure_result = {sizeof(rsdk_tool_configure_result), tool_initialize,
                                                        tool_finalize, NULL};

/* Whether a recording without a session yet should register devtrace:
   unless the backend asked for is another one. */
static int recording_wants_tool(void)
{
    const char *b = dt__env(DT_ENV_BACKEND);
    return dt__env_bool(DT_ENV_DISABLE) != 1 && (!b || strcmp(b, "auto") == 0 || strcmp(b, "rocprofiler_sdk") == 0);
}

/* The tool's rocprofiler_configure, exported by libdevtrace_inject under
   that name (tool_configure) and given to rocprofiler_force_configure:
   registers devtrace with rocprofiler-sdk when a recording wants it, else
   declines (NULL). */
static rsdk_tool_configure_result *configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                             rsdk_client_id *client_id)
{
    (void)runtime_version;
    (void)priority;
    pthread_mutex_lock(&rsdk_state.lock);
    /* a second route to the same registration (forced, then found again
       through the exported symbol) is declined */
    int take = !rsdk_state.configured && !rsdk_state.configuring && (rsdk_state.wanted || recording_wants_tool());
    if (take) {
        rsdk_state.configuring = 1;
        if (!rsdk_state.wanted) dt_config_init(&rsdk_state.config); /* no session yet: the defaults */
        if (client_id) client_id->name = "devtrace";
        dt__log("rocprofiler_sdk: registering as a tool of rocprofiler-sdk %u", version);
    }
    pthread_mutex_unlock(&rsdk_state.lock);
    return take ? &g_configure_result : NULL;
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */
static const char *const g_late_advice =
    "record with `devtrace record -- PROGRAM`, or call dt_prepare(\"rocprofiler_sdk\") before the program's "
    "first HIP call";

/* Whether the HSA runtime was initialized (never initializes it): 1 yes,
   0 no, -1 cannot tell. */
static int hsa_initialized(void)
{
    if (!rsdk_state.hsa_system_get_info) return -1;
    uint16_t major = 0;
    int r = rsdk_state.hsa_system_get_info(RSDK_HSA_SYSTEM_INFO_VERSION_MAJOR, &major);
    return r == RSDK_HSA_STATUS_SUCCESS ? 1 : r == RSDK_HSA_STATUS_ERROR_NOT_INITIALIZED ? 0 : -1;
}

/* rsdk_state.lock held. Make devtrace a tool of the SDK, now if it allows (forced
   configuration), or, while it initializes, as soon as it calls devtrace's
   configure. A late registration, which would record nothing, is an
   error that says why. */
static dt_status register_tool(const dt_config *config)
{
    if (rsdk_state.configured) return DT_OK;
    rsdk_state.wanted = 1;
    if (config) rsdk_state.config = *config;
    else dt_config_init(&rsdk_state.config);
    int status = 0;
    SYM(rsdk_is_initialized_fn, S_IS_INITIALIZED)(&status);
    if (status < 0) return DT_OK; /* initializing: devtrace's configure comes next */
    if (status == 0 && rsdk_state.version < RSDK_LATE_START_VERSION && hsa_initialized() == 1)
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                        "the HSA runtime was initialized before devtrace registered as a rocprofiler-sdk tool, and "
                        "rocprofiler-sdk %s (before 1.3.0) cannot trace runtimes initialized before its tools: a "
                        "session would record no GPU activity (Kineto's zero-GPU-records race); %s",
                        rsdk_state.version_text[0] ? rsdk_state.version_text : "(version unknown)", g_late_advice);
    int r = SYM(rsdk_force_configure_fn, S_FORCE_CONFIGURE)(configure);
    if (rsdk_state.configured) return DT_OK;
    if (status > 0)
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                        "rocprofiler-sdk %s in this process was initialized before devtrace registered as its tool "
                        "(rocprofiler_force_configure: %s) and accepts no tool after that: a session would record no "
                        "GPU activity; %s",
                        rsdk_state.version_text[0] ? rsdk_state.version_text : "(version unknown)", status_text(r), g_late_advice);
    if (r != RSDK_STATUS_SUCCESS) return vendor_error(g_symbols[S_FORCE_CONFIGURE].name, r);
    return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "rocprofiler-sdk did not initialize devtrace as its tool: %s",
                    rsdk_state.config_error[0] ? rsdk_state.config_error : "its initialize was never called");
}

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */
static void attach(dt_session *s)
{
    pthread_mutex_lock(&rsdk_state.decode_lock);
    rsdk_state.session = s;
    pthread_mutex_unlock(&rsdk_state.decode_lock);
}

static void damage(uint64_t out[4])
{
    out[0] = atomic_load(&rsdk_state.decoder.unknown_kernels);
    out[1] = atomic_load(&rsdk_state.decoder.fills_without_size);
    out[2] = atomic_load(&rsdk_state.decoder.fills_unrecorded);
    out[3] = atomic_load(&rsdk_state.decoder.unknown_agents);
}

/* rsdk_state.lock held. */
static dt_status start_session_contexts(dt_session *s)
{
    uint32_t cap = dt__sink_capture(s);
    int want[C_COUNT] = {0};
    want[C_KERNEL] = (cap & (DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET)) != 0;
    want[C_COPY] = (cap & DT_CAPTURE_MEMCPY) != 0;
    want[C_API] = (cap & DT_CAPTURE_RUNTIME) != 0;
    want[C_FILL] = (cap & DT_CAPTURE_MEMSET) != 0;
    want[C_LAUNCH] = (cap & DT_CAPTURE_KERNEL) && !dt__rsdk_decoder_matches_launches(&rsdk_state.decoder, cap);
    /* without the SDK's external-correlation stack, device work is
       attributed when its API call enters */
    want[C_ENTER] = !rsdk_state.sym[S_PUSH_EXTERNAL];
    for (int c = C_KERNEL; c < C_COUNT; c++) {
        if (!want[c]) continue;
        int r = start_context(c);
        if (r == RSDK_STATUS_SUCCESS) continue;
        dt_status st = vendor_error(g_symbols[S_START_CONTEXT].name, r);
        for (int k = C_KERNEL; k < C_COUNT; k++) stop_context(k);
        return st;
    }
    if (!rsdk_state.have[C_MARKERS]) dt__core_note(s, "roctx", "ROCTX ranges are not recorded (no marker tracing service)");
    if (want[C_FILL] && !rsdk_state.on[C_FILL])
        dt__core_note(s, "memset", "memsets are recorded without their size and value (no hipMemset* argument "
                                     "tracing)");
    return DT_OK;
}

static dt_status rsdk_probe(const dt_backend *self, dt_backend_status *st)
{
    st->available = 0;
    pthread_mutex_lock(&rsdk_state.lock);
    dt_status rc = load();
    if (rc != DT_OK) {
        snprintf(st->reason, sizeof st->reason, "%s", dt_last_error());
        pthread_mutex_unlock(&rsdk_state.lock);
        return DT_OK;
    }
    st->available = 1;
    snprintf(st->library, sizeof st->library, "%s", rsdk_state.lib.path);
    snprintf(st->version, sizeof st->version, "%s", rsdk_state.version_text);
    int status = 0;
    SYM(rsdk_is_initialized_fn, S_IS_INITIALIZED)(&status);
    if (status > 0 && !rsdk_state.configured)
        snprintf(st->reason, sizeof st->reason,
                 "rocprofiler-sdk was initialized in this process without devtrace: a session started now fails; ");
    dt__symbols_describe_missing(g_symbols, S_COUNT, rsdk_state.sym, st->reason, sizeof st->reason);
    pthread_mutex_unlock(&rsdk_state.lock);
    return DT_OK;
}

static dt_status rsdk_prepare(const dt_backend *self)
{
    pthread_mutex_lock(&rsdk_state.lock);
    dt_status st = load();
    if (st == DT_OK && rsdk_state.finalized) st = dt__error(DT_ERR_STATE, "rocprofiler-sdk has finalized (the process is exiting)");
    if (st == DT_OK) st = register_tool(rsdk_state.wanted ? &rsdk_state.config : NULL);
    pthread_mutex_unlock(&rsdk_state.lock);
    return st;
}

/* The devices the SDK's agents describe (known once devtrace initialized). */
static void session_devices(dt_session *s)
{
    for (uint32_t i = 0; i < DT_MAX_DEVICES; i++)
        if (rsdk_state.devices[i].valid) dt__core_set_device(s, &rsdk_state.devices[i]);
    if (rsdk_state.devices_missing[0])
        dt__core_note(s, "device_properties", "rocprofiler-sdk's agents do not give %s: absent (0)",
                        rsdk_state.devices_missing);
    if (!rsdk_state.sym[S_QUERY_AGENTS] || !rsdk_state.decoder.gpu_count)
        dt__core_note(s, "device_properties", "no GPU agent was described: no device properties");
}

static void session_facts(dt_session *s)
{
    dt__core_note(s, "vendor_clock", "CLOCK_BOOTTIME ns (rocprofiler_get_timestamp)");
    dt__core_note(s, "rows", "kernels and memsets are on rows of their HSA queue (1, 2, ... in order of first "
                               "use); copies, which name no queue, on row 0");
    if (rsdk_state.configured && buffer_bytes(dt__sink_config(s)) != rsdk_state.buffer_bytes)
        dt__core_note(s, "buffers",
                        "rocprofiler-sdk's buffers are made once per process: %d of %zu bytes (each kept twice), "
                        "from the settings when devtrace registered, not this session's",
                        B_COUNT, rsdk_state.buffer_bytes);
    dt__symbols_note_missing(s, g_symbols, S_COUNT, rsdk_state.sym);
    dt__core_set_library(s, rsdk_state.lib.path, rsdk_state.version_text);
}

static dt_status rsdk_start(const dt_backend *self, dt_session *s)
{
    pthread_mutex_lock(&rsdk_state.lock);
    dt_status st = load();
    if (st != DT_OK) goto out;
    if (rsdk_state.finalized) {
        st = dt__error(DT_ERR_STATE, "rocprofiler-sdk has finalized (the process is exiting): no session can start");
        goto out;
    }
    const dt_config *cfg = dt__sink_config(s);
    if (cfg->buffer_count == 0 || cfg->buffer_size < 1024) {
        st = dt__error(DT_ERR_INVALID_ARGUMENT,
                      "rocprofiler_sdk needs buffers of at least 1024 bytes (buffer_count %" PRIu32 ", buffer_size %zu)",
                      cfg->buffer_count, cfg->buffer_size);
        goto out;
    }
    st = register_tool(cfg);
    if (st != DT_OK) goto out;
    if (cfg->flight_recorder_bytes) {
        size_t size = cfg->buffer_size > DT_RSDK_COPY_MIN ? cfg->buffer_size : DT_RSDK_COPY_MIN;
        st = dt__pool_slot_configure(&rsdk_state.flight, dt__flight_pool_buffers(s), size, 0) != 0
                 ? dt__error(DT_ERR_NO_MEMORY, "rocprofiler_sdk: out of memory for the flight recorder's buffers")
                 : dt__core_flight_begin(s, &rsdk_state.flight, ring_decode, NULL);
        if (st != DT_OK) goto flight_failed;
    }
    damage(rsdk_state.damage_at_start);
    atomic_store(&rsdk_state.orphaned, 0);
    if (!rsdk_state.configured) {
        /* the SDK is initializing (this library was loaded by it, through
           ROCP_TOOL_LIBRARIES): recording begins when it calls devtrace's
           initialize, which stop says if it never does */
        rsdk_state.pending = s;
        st = DT_OK;
        goto facts;
    }
    st = start_session_contexts(s);
    if (st != DT_OK) goto flight_failed;
    session_devices(s);
    attach(s);
facts:
    session_facts(s);
    goto out;
flight_failed:
    dt__core_flight_free(s);
    dt__pool_slot_release(&rsdk_state.flight);
out:
    pthread_mutex_unlock(&rsdk_state.lock);
    return st;
}

static void flush_buffers(void)
{
    for (int b = 0; b < B_COUNT; b++)
        if (rsdk_state.have[g_buffer_context[b]] && !rsdk_state.finalized) SYM(rsdk_flush_buffer_fn, S_FLUSH_BUFFER)(rsdk_state.buffer[b]);
}

static dt_status rsdk_flush(const dt_backend *self, dt_session *s)
{
    /* rocprofiler_flush_buffer waits for the callback, which may run on
       this thread or another: no lock is held */
    if (rsdk_state.configured) flush_buffers();
    pthread_mutex_lock(&rsdk_state.decode_lock);
    dt__rsdk_pack_push(&rsdk_state.packer, s);
    pthread_mutex_unlock(&rsdk_state.decode_lock);
    return DT_OK;
}

static dt_status rsdk_stop(const dt_backend *self, dt_session *s)
{
    pthread_mutex_lock(&rsdk_state.lock);
    if (rsdk_state.pending == s) {
        rsdk_state.pending = NULL;
        dt__core_note(s, "rocprofiler_sdk",
                        "rocprofiler-sdk was initializing when the session started and never called devtrace's "
                        "initialize: no GPU activity was recorded");
    }
    for (int c = C_KERNEL; c < C_COUNT; c++) stop_context(c);
    pthread_mutex_unlock(&rsdk_state.lock);
    /* what the stopped contexts recorded before they stopped */
    if (rsdk_state.configured) flush_buffers();
    /* the flight recorder's ring, now that the SDK has delivered all */
    pthread_mutex_lock(&rsdk_state.decode_lock);
    dt__rsdk_pack_push(&rsdk_state.packer, s);
    rsdk_state.session = NULL;
    pthread_mutex_unlock(&rsdk_state.decode_lock);
    dt__core_flight_end(s);
    dt__pool_slot_release(&rsdk_state.flight);
    /* The SDK writes a dispatch's record when the kernel completes, into
       lossless buffers: a launch or fill still awaiting its dispatch had
       work running at stop (inferred, as are the exceptions: a call HIP
       refused, or a fill of nothing, which dispatched nothing). A launch
       still inside HIP at stop has no API record yet: it is awaited only
       where a callback noted it (sessions without API calls). */
    pthread_mutex_lock(&rsdk_state.decode_lock);
    uint64_t running = rsdk_state.decoder_ready ? dt__rsdk_decoder_take_awaiting(&rsdk_state.decoder) : 0;
    pthread_mutex_unlock(&rsdk_state.decode_lock);
    uint64_t dropped = dt_session_loss(s, DT_LOSS_VENDOR_DROPPED);
    if (running && dropped)
        /* which records the SDK dropped it does not say: the missing ones
           may be among them, already counted */
        dt__core_note(s, "unfinished", "%" PRIu64 " launches or fills had no dispatch record at stop: their work "
                        "was still running, or their records are among the %" PRIu64 " rocprofiler-sdk dropped; "
                        "not counted as unfinished", running, dropped);
    else if (running)
        dt__loss_add(s, DT_LOSS_UNFINISHED, running);
    pthread_mutex_lock(&rsdk_state.lock);
    attach(NULL);
    uint64_t now[4];
    damage(now);
    uint64_t d[4];
    for (int i = 0; i < 4; i++) d[i] = now[i] - rsdk_state.damage_at_start[i];
    if (d[0])
        dt__core_note(s, "kernel_symbols",
                        "%" PRIu64 " dispatches of kernels whose symbols rocprofiler-sdk never reported are named "
                        "<unnamed kernel>", d[0]);
    if (d[1] || d[2])
        dt__core_note(s, "memset", "%" PRIu64 " memsets are recorded without their size and value (their "
                        "hipMemset* arguments were not seen, or %" PRIu64 " were replaced before their dispatch)",
                        d[1], d[2]);
    if (d[3])
        dt__core_note(s, "agents", "%" PRIu64 " records named agents rocprofiler-sdk did not list: numbered after "
                        "the listed GPUs", d[3]);
    uint64_t mismatched = atomic_exchange(&rsdk_state.callback_layout_mismatch, 0);
    if (mismatched)
        dt__core_note(s, "callbacks", "%" PRIu64 " callback records of rocprofiler-sdk %s had no layout devtrace "
                        "knows and were ignored", mismatched, rsdk_state.version_text);
    uint64_t orphaned = atomic_load(&rsdk_state.orphaned);
    if (orphaned)
        dt__core_note(s, "orphaned_buffers", "%" PRIu64 " buffers completed while no session took them", orphaned);
    pthread_mutex_unlock(&rsdk_state.lock);
    return DT_OK;
}

static int rsdk_clock(const dt_backend *self, uint64_t *ns)
{
    rsdk_get_timestamp_fn get = SYM(rsdk_get_timestamp_fn, S_GET_TIMESTAMP);
    return get && get(ns) == RSDK_STATUS_SUCCESS ? 0 : -1;
}

/* The contexts an External id is pushed to: every one that records. The
   API context too when device records carry the id: an API call that
   launches nothing (hipStreamSynchronize) shares no device record's
   correlation id, and has its op's id only from its own record. Fixed
   while a session runs. */
static int pushed_to(int c)
{
    return rsdk_state.on[c];
}

/* On the program's threads: no error text is formatted here. The id goes
   to the SDK as id + 1 (the SDK reports 0 where nothing was pushed, and 0
   is a valid id to devtrace). */
static dt_status rsdk_push_external(const dt_backend *self, uint64_t id)
{
    rsdk_push_external_fn push = SYM(rsdk_push_external_fn, S_PUSH_EXTERNAL);
    rsdk_pop_external_fn pop = SYM(rsdk_pop_external_fn, S_POP_EXTERNAL);
    if (!push) return DT_ERR_BACKEND_UNAVAILABLE;
    if (id == UINT64_MAX) return DT_ERR_VENDOR;
    uint64_t tid = dt__thread_id();
    for (int c = C_KERNEL; c <= C_API; c++) {
        if (!pushed_to(c)) continue;
        if (push(rsdk_state.ctx[c], tid, (rsdk_user_data){.value = id + 1}) != RSDK_STATUS_SUCCESS) {
            rsdk_user_data undo;
            while (--c >= C_KERNEL)
                if (pushed_to(c)) pop(rsdk_state.ctx[c], tid, &undo);
            return DT_ERR_VENDOR;
        }
    }
    return DT_OK;
}

static dt_status rsdk_pop_external(const dt_backend *self)
{
    rsdk_pop_external_fn pop = SYM(rsdk_pop_external_fn, S_POP_EXTERNAL);
    if (!pop) return DT_ERR_BACKEND_UNAVAILABLE;
    uint64_t tid = dt__thread_id();
    dt_status st = DT_OK;
    for (int c = C_KERNEL; c <= C_API; c++) {
        rsdk_user_data last;
        if (pushed_to(c) && pop(rsdk_state.ctx[c], tid, &last) != RSDK_STATUS_SUCCESS) st = DT_ERR_VENDOR;
    }
    return st;
}

static dt_status rsdk_attribute_by_api_enter(const dt_backend *self)
{
    pthread_mutex_lock(&rsdk_state.lock);
    int r = rsdk_state.finalized ? RSDK_STATUS_ERROR_FINALIZED : start_context(C_ENTER);
    pthread_mutex_unlock(&rsdk_state.lock);
    return r == RSDK_STATUS_SUCCESS && rsdk_state.on[C_ENTER] ? DT_OK : DT_ERR_BACKEND_UNAVAILABLE;
}

/* ROCm calls every visible rocprofiler_configure as its runtimes
   initialize: the one libdevtrace_inject exports comes here. The session
   started in that library has usually registered devtrace already (and
   this declines). */
static void *tool_configure(const dt_backend *self, uint32_t version, const char *runtime_version, uint32_t priority,
                            void *client_id)
{
    return configure(version, runtime_version, priority, client_id);
}

const dt_backend dt__backend_rocprofiler_sdk = {
    .name = "rocprofiler_sdk",
    .vendor = "AMD ROCm (rocprofiler-sdk)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_ROCPROFILER_SDK_LIBRARY",
    .caps = DT_BACKEND_LOSSLESS_BUFFERS | DT_BACKEND_TOOL_CONFIGURE | DT_BACKEND_FLIGHT_RECORDER,
    .probe = rsdk_probe,
    .prepare = rsdk_prepare,
    .start = rsdk_start,
    .flush = rsdk_flush,
    .stop = rsdk_stop,
    .clock = rsdk_clock,
    .push_external = rsdk_push_external,
    .pop_external = rsdk_pop_external,
    .attribute_by_api_enter = rsdk_attribute_by_api_enter,
    .tool_configure = tool_configure,
};

/*
 * rocprofiler-sdk callback tracing: the callback targets, callback records
 * in the emulated sdk_version's layout, HIP API callbacks and their argument
 * iterator, the external-correlation stacks (per context and thread), and
 * ROCTX's entry points.
 */
#include <stdlib.h>
#include <string.h>

#include "sdk.h"

static struct {
    pthread_mutex_t lock;
    call_target t[MAX_CONTEXTS * 3];
    size_t n;
    /* HIP operations (< 64) some target wants: most calls are asked for by
       none, and are answered without the lock */
    _Atomic uint64_t hip_ops;
} targets = {.lock = PTHREAD_MUTEX_INITIALIZER};

SDK_TLS ext_stack sdk_thread_ext[MAX_CONTEXTS];

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

static int wants_op(const int32_t *ops, size_t n, int32_t op)
{
    if (!n) return 1;
    for (size_t i = 0; i < n; i++)
        if (ops[i] == op) return 1;
    return 0;
}

/* The active callbacks of a kind for an operation, copied out so that
   they run without any lock. */
size_t sdk_callback_targets(uint32_t kind, int32_t op, call_target *out)
{
    if (kind == RSDK_CALLBACK_HIP_RUNTIME_API && op >= 0 && op < 64 &&
        !(atomic_load_explicit(&targets.hip_ops, memory_order_relaxed) & (UINT64_C(1) << op)))
        return 0;
    size_t n = 0;
    pthread_mutex_lock(&targets.lock);
    for (size_t i = 0; i < targets.n && n < MAX_CONTEXTS; i++)
        if (targets.t[i].kind == kind && wants_op(targets.t[i].ops, targets.t[i].op_count, op))
            out[n++] = targets.t[i];
    pthread_mutex_unlock(&targets.lock);
    return n;
}

/* A callback record by value, in the layout of the emulated sdk_version. */
rsdk_callback_arg sdk_callback_record(uint64_t context, uint64_t correlation, uint32_t kind, int32_t op,
                                         uint32_t phase, const void *payload)
{
    rsdk_callback_arg arg;
    memset(&arg, 0, sizeof arg);
    rsdk_user_data external = {.value = sdk_top_external(context)};
    if (sdk_ancestor_layout()) {
        rsdk_callback_record_ancestor r = {{context}, sdk_tid(), {correlation, external, 0}, kind, op, phase,
                                           (void *)payload};
        memcpy(&arg, &r, sizeof r);
    } else {
        rsdk_callback_record r = {{context}, sdk_tid(), {correlation, external}, kind, op, phase, (void *)payload};
        memcpy(&arg, &r, sizeof r);
    }
    return arg;
}

void sdk_call_each(uint32_t kind, int32_t op, uint64_t correlation, uint32_t phase, const void *payload)
{
    call_target t[MAX_CONTEXTS];
    size_t n = sdk_callback_targets(kind, op, t);
    for (size_t i = 0; i < n; i++) {
        rsdk_user_data user = {0};
        t[i].callback(sdk_callback_record(t[i].context, correlation, kind, op, phase, payload), &user, t[i].data);
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

void sdk_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    (void)client_fn;
    (void)userdata;
    hip_args args = {sizeof args, call->cbid, (const void *)(uintptr_t)0x7f0000100000ull, (int)call->args->value,
                     (size_t)call->args->bytes, NULL};
    sdk_call_each(RSDK_CALLBACK_HIP_RUNTIME_API, (int32_t)call->cbid, call->correlation,
              call->site == EMU_SITE_ENTER ? RSDK_PHASE_ENTER : RSDK_PHASE_EXIT, &args);
}

RSDK_API int rocprofiler_iterate_callback_tracing_kind_operation_args(rsdk_callback_arg record,
                                                                      rsdk_operation_args_cb callback,
                                                                      int32_t max_dereference_count, void *data)
{
    (void)max_dereference_count;
    uint32_t kind;
    int32_t op;
    const void *payload;
    if (sdk_ancestor_layout()) {
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
    ext_stack *s = sdk_stack_of(ctx.handle);
    if (!s) return RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (tid != sdk_tid()) return RSDK_STATUS_ERROR_THREAD_NOT_FOUND;
    int first = !s->cap;
    if (emu_core_grow_for_one((void **)&s->ids, &s->cap, s->depth, sizeof *s->ids, 16) != 0)
        return RSDK_STATUS_ERROR;
    if (first) {
        pthread_once(&g_ext_once, make_ext_key);
        pthread_setspecific(g_ext_key, sdk_thread_ext);
    }
    s->ids[s->depth++] = id.value;
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_pop_external_correlation_id(rsdk_context_id ctx, uint64_t tid, rsdk_user_data *id)
{
    ext_stack *s = sdk_stack_of(ctx.handle);
    if (!s) return RSDK_STATUS_ERROR_CONTEXT_NOT_FOUND;
    if (tid != sdk_tid()) return RSDK_STATUS_ERROR_THREAD_NOT_FOUND;
    if (!s->depth) return RSDK_STATUS_ERROR;
    s->depth--;
    if (id) id->value = s->ids[s->depth];
    return RSDK_STATUS_SUCCESS;
}

static _Thread_local int t_roctx_depth;

static void roctx_call(int32_t op, const char *message)
{
    sdk_runtime_call();
    rsdk_marker_api_data data = {sizeof data, message};
    uint64_t corr = emu_core_next_correlation();
    sdk_call_each(RSDK_CALLBACK_MARKER_CORE_API, op, corr, RSDK_PHASE_ENTER, &data);
    sdk_call_each(RSDK_CALLBACK_MARKER_CORE_API, op, corr, RSDK_PHASE_EXIT, &data);
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

void sdk_update_targets(void)
{
    pthread_mutex_lock(&targets.lock);
    targets.n = 0;
    uint64_t hip_ops = 0;
    static const uint32_t called_kinds[] = {RSDK_CALLBACK_CODE_OBJECT, RSDK_CALLBACK_MARKER_CORE_API,
                                            RSDK_CALLBACK_HIP_RUNTIME_API};
    for (int c = 0; c < MAX_CONTEXTS; c++) {
        const sdk_context *ctx = &sdk_state.contexts[c];
        if (!ctx->valid || !ctx->active) continue;
        for (size_t k = 0; k < sizeof called_kinds / sizeof called_kinds[0]; k++) {
            const service *sv = &ctx->called[called_kinds[k]];
            if (!sv->on) continue;
            call_target *t = &targets.t[targets.n++];
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
    atomic_store(&targets.hip_ops, hip_ops);
    pthread_mutex_unlock(&targets.lock);
}

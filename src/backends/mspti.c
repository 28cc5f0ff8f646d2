/*
 * Huawei Ascend through MSPTI (libmspti.so, CANN's profiling tools
 * interface).
 *
 * MSPTI is CUPTI-shaped where the engine needs it to be (kinds enabled one
 * by one, buffers lent and handed back, a subscriber, an external-
 * correlation stack), so the engine runs it from the descriptor below. What
 * differs is decoded here:
 *  - API records carry their name as a string, not a callback id;
 *  - markers come as a start and an end record paired by id, possibly from
 *    two threads and in two buffers: they become user ranges;
 *  - HCCL and communication records are collectives;
 *  - the external-correlation stack of the published implementation is one
 *    for the whole process (its header documents one per thread); which one
 *    a library has is asked at the first start, and a process-wide one is
 *    given the ids of one thread at a time (see "Process-wide stack").
 * Correlation ids are 64-bit. The callbacks' data carries no usable
 * correlation id (the library leaves it unset), so device work is never
 * linked through the API-enter callback. Records are walked by their sizes,
 * not with msptiActivityGetNextRecord, whose cursor is thread-local and goes
 * stale when a walk stops early; the sizes are the public headers' and have
 * not changed since each record was introduced.
 *
 * Records are packed with misaligned 64-bit fields: the decoders below copy
 * a record into its (packed) struct before reading it.
 */
#include "base/hash.h"
#include "backends/engine/engine_walk.h"
#include "backends/mspti_headers.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifndef DEVTRACE_MSPTI_EMULATOR_MARKER
#define DEVTRACE_MSPTI_EMULATOR_MARKER "devtrace_mspti_emulator"
#endif

/* The external-correlation kind devtrace pushes. */
#define EXTERNAL_KIND MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

static void decode_api(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
static void decode_external(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
static void decode_marker(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
#if DT_MSPTI_HAS_HCCL
static void decode_hccl(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
#endif
#if DT_MSPTI_HAS_COMMUNICATION
static void decode_communication(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
#if DT_MSPTI_HAS_MEMORY_KINDS
static void decode_memory(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec);
#endif
#endif

/* ------------------------------------------------------------------ */
/* Layouts                                                             */
/* ------------------------------------------------------------------ */
#define TIMED(T) [DT_F_START] = DT_FIELD(T, start), [DT_F_END] = DT_FIELD(T, end), \
    [DT_F_CORRELATION] = DT_FIELD(T, correlationId)
#define API(kind_)                                                                                     \
    {.kind = kind_, .cls = DT_RC_RUNTIME, .size = sizeof(msptiActivityApi), .what = "API",             \
     .decode = decode_api, .f = {TIMED(msptiActivityApi),                                              \
        [DT_F_PROCESS] = DT_FIELD(msptiActivityApi, pt.processId),                                     \
        [DT_F_THREAD] = DT_FIELD(msptiActivityApi, pt.threadId),                                       \
        [DT_F_NAME] = DT_FIELD(msptiActivityApi, name)}}

static const dt_record_layout records[] = {
    {.kind = MSPTI_ACTIVITY_KIND_KERNEL, .cls = DT_RC_KERNEL, .size = sizeof(msptiActivityKernel), .f = {
        TIMED(msptiActivityKernel), [DT_F_DEVICE] = DT_FIELD(msptiActivityKernel, ds.deviceId),
        [DT_F_STREAM] = DT_FIELD(msptiActivityKernel, ds.streamId),
        [DT_F_NAME] = DT_FIELD(msptiActivityKernel, name)}},
    API(MSPTI_ACTIVITY_KIND_API),
    API(MSPTI_ACTIVITY_KIND_ACL_API),
    API(MSPTI_ACTIVITY_KIND_NODE_API),
    API(MSPTI_ACTIVITY_KIND_RUNTIME_API),
    {.kind = MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, .cls = DT_RC_EXTERNAL,
     .size = sizeof(msptiActivityExternalCorrelation), .decode = decode_external, .f = {
        [DT_F_EXTERNAL_KIND] = DT_FIELD(msptiActivityExternalCorrelation, externalKind),
        [DT_F_EXTERNAL_ID] = DT_FIELD(msptiActivityExternalCorrelation, externalId),
        [DT_F_CORRELATION] = DT_FIELD(msptiActivityExternalCorrelation, correlationId)}},
    {.kind = MSPTI_ACTIVITY_KIND_MARKER, .cls = DT_RC_OTHER, .size = sizeof(msptiActivityMarker), .what = "marker",
     .decode = decode_marker},
#if DT_MSPTI_HAS_MEMORY_KINDS
    {.kind = MSPTI_ACTIVITY_KIND_MEMCPY, .cls = DT_RC_MEMCPY, .size = sizeof(msptiActivityMemcpy), .f = {
        TIMED(msptiActivityMemcpy), [DT_F_DEVICE] = DT_FIELD(msptiActivityMemcpy, deviceId),
        [DT_F_STREAM] = DT_FIELD(msptiActivityMemcpy, streamId),
        [DT_F_BYTES] = DT_FIELD(msptiActivityMemcpy, bytes),
        [DT_F_COPY_KIND] = DT_FIELD(msptiActivityMemcpy, copyKind),
        [DT_F_FLAGS] = DT_FIELD(msptiActivityMemcpy, isAsync)}},
    {.kind = MSPTI_ACTIVITY_KIND_MEMSET, .cls = DT_RC_MEMSET, .size = sizeof(msptiActivityMemset), .f = {
        TIMED(msptiActivityMemset), [DT_F_DEVICE] = DT_FIELD(msptiActivityMemset, deviceId),
        [DT_F_STREAM] = DT_FIELD(msptiActivityMemset, streamId),
        [DT_F_BYTES] = DT_FIELD(msptiActivityMemset, bytes),
        [DT_F_VALUE] = DT_FIELD(msptiActivityMemset, value),
        [DT_F_FLAGS] = DT_FIELD(msptiActivityMemset, isAsync)}},
    {.kind = MSPTI_ACTIVITY_KIND_MEMORY, .cls = DT_RC_OTHER, .size = sizeof(msptiActivityMemory),
     .what = "memory allocation", .decode = decode_memory},
#endif
#if DT_MSPTI_HAS_HCCL
    {.kind = MSPTI_ACTIVITY_KIND_HCCL, .cls = DT_RC_OTHER, .size = sizeof(msptiActivityHccl), .what = "HCCL",
     .decode = decode_hccl},
#endif
#if DT_MSPTI_HAS_COMMUNICATION
    {.kind = MSPTI_ACTIVITY_KIND_COMMUNICATION, .cls = DT_RC_OTHER, .size = sizeof(msptiActivityCommunication),
     .what = "communication", .decode = decode_communication},
#endif
#if DT_MSPTI_HAS_OVERHEAD
    {.kind = MSPTI_ACTIVITY_KIND_OVERHEAD, .cls = DT_RC_OTHER, .size = sizeof(msptiActivityOverhead),
     .what = "overhead"},
#endif
    {0},
};

/* Every layout is as old as its kind, whatever the release. */
static DT_DECODER_WALK(records)
static const dt_layout_set layouts[] = {DT_LAYOUT_SET(0, DT_MSPTI_DECLARATION, UINT32_MAX, records)};

static const dt_kind_spec kinds[] = {
    {MSPTI_ACTIVITY_KIND_KERNEL, 0, DT_CAPTURE_KERNEL, 1, 0, "kernels"},
    /* Releases before 2026 report every API call as API; later ones by
       level, one kind each: each call comes once. */
    {MSPTI_ACTIVITY_KIND_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "API calls"},
    {MSPTI_ACTIVITY_KIND_ACL_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "AscendCL API calls"},
    {MSPTI_ACTIVITY_KIND_NODE_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "node API calls"},
    {MSPTI_ACTIVITY_KIND_RUNTIME_API, 0, DT_CAPTURE_RUNTIME, 0, 0, "runtime API calls"},
#if DT_MSPTI_HAS_MEMORY_KINDS
    {MSPTI_ACTIVITY_KIND_MEMCPY, 0, DT_CAPTURE_MEMCPY, 0, 0, "memory copies"},
    {MSPTI_ACTIVITY_KIND_MEMSET, 0, DT_CAPTURE_MEMSET, 0, 0, "memsets"},
    {MSPTI_ACTIVITY_KIND_MEMORY, 0, DT_CAPTURE_MEMORY, 0, 0, "memory allocations"},
#endif
    {MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, 0, 0, 0, 0, "external-correlation records"},
    {MSPTI_ACTIVITY_KIND_MARKER, 0, 0, 0, 0, "markers (user ranges)"},
    /* Collectives run on the device as kernels do. Communication records
       (2025) say more than HCCL's and replace them: one or the other. */
#if DT_MSPTI_HAS_COMMUNICATION
    {MSPTI_ACTIVITY_KIND_COMMUNICATION, DT_MSPTI_HAS_HCCL ? MSPTI_ACTIVITY_KIND_HCCL : 0, DT_CAPTURE_KERNEL, 0, 0,
     "collectives"},
#elif DT_MSPTI_HAS_HCCL
    {MSPTI_ACTIVITY_KIND_HCCL, 0, DT_CAPTURE_KERNEL, 0, 0, "collectives"},
#endif
};

#define ENUM_TABLE 8
static const uint8_t copy_kinds[ENUM_TABLE] = {
    [MSPTI_ACTIVITY_MEMCPY_KIND_HTOH] = DT_COPY_HTOH, [MSPTI_ACTIVITY_MEMCPY_KIND_HTOD] = DT_COPY_HTOD,
    [MSPTI_ACTIVITY_MEMCPY_KIND_DTOH] = DT_COPY_DTOH, [MSPTI_ACTIVITY_MEMCPY_KIND_DTOD] = DT_COPY_DTOD,
};

static const dt_value_name result_names[] = {
    {MSPTI_SUCCESS, "MSPTI_SUCCESS"},
    {MSPTI_ERROR_INVALID_PARAMETER, "MSPTI_ERROR_INVALID_PARAMETER"},
    {MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
    {MSPTI_ERROR_MAX_LIMIT_REACHED, "MSPTI_ERROR_MAX_LIMIT_REACHED"},
    {MSPTI_ERROR_DEVICE_OFFLINE, "MSPTI_ERROR_DEVICE_OFFLINE"},
    {MSPTI_ERROR_QUEUE_EMPTY, "MSPTI_ERROR_QUEUE_EMPTY"},
    {MSPTI_ERROR_WITHOUT_LD_PRELOAD, "MSPTI_ERROR_WITHOUT_LD_PRELOAD"},
    {7, "MSPTI_ERROR_NOT_INITIALIZED"},
    {8, "MSPTI_ERROR_INVALID_KIND"},
    {9, "MSPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT"},
    {MSPTI_ERROR_INNER, "MSPTI_ERROR_INNER"},
};

static const char *const sonames[] = {"libmspti.so", NULL};
static const char *const roots[] = {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", NULL};
static const char *const subdirs[] = {"lib64", "tools/mspti/lib64", NULL};

DT_ENGINE_DEFINE(mspti, mspti_vendor);

/* The engine's methods, with start, stop and the external-correlation
   stack of MSPTI's own (below). */
static dt_status mspti_start(const dt_backend *self, dt_session *s);
static dt_status mspti_stop(const dt_backend *self, dt_session *s);
static dt_status mspti_push(const dt_backend *self, uint64_t id);
static dt_status mspti_pop(const dt_backend *self);

const dt_backend dt__backend_mspti = {
    .name = "mspti",
    .vendor = "Huawei Ascend (MSPTI)",
    .api_category = "privateuse1",
    .library_env = "DEVTRACE_MSPTI_LIBRARY",
    .preload = "libmspti.so",
    .preload_kinds = "memory copies, memsets, memory allocations (and collectives where the release has only HCCL "
                     "records)",
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .impl = &dt__engine_mspti,
    .probe = dt__engine_probe,
    .start = mspti_start,
    .flush = dt__engine_flush,
    .stop = mspti_stop,
    .clock = dt__engine_clock,
    .push_external = mspti_push,
    .pop_external = mspti_pop,
};

/* Explains the refusals a user can act on. */
static int explain(const char *call, int result, const char *result_text, const char *library, const char *version,
                   int emulated, dt_failure *out)
{
    (void)result_text;
    (void)version;
    (void)emulated;
    (void)call;
    if (result == MSPTI_ERROR_WITHOUT_LD_PRELOAD) {
        out->status = DT_ERR_BACKEND_UNAVAILABLE;
        dt__preload_advice(dt__backend_mspti.preload, library, out->message, sizeof out->message);
        return 1;
    }
    if (result == MSPTI_ERROR_INVALID_PARAMETER) {
        out->status = DT_ERR_VENDOR;
        snprintf(out->message, sizeof out->message, "not in this MSPTI release");
        return 1;
    }
    return 0;
}

static const dt_vendor mspti_vendor = {
    .backend = &dt__backend_mspti,
    .library = {.spec = {.what = "libmspti", .sonames = sonames, .root_envs = roots,
                         .default_root = "/usr/local/Ascend/ascend-toolkit/latest", .subdirs = subdirs,
                         .hint = "install CANN (the Ascend toolkit) and set ASCEND_HOME_PATH"},
                .symbol_prefix = "mspti",
                .symbols = {[DT_SYM_RESULT_STRING] = DT_SYM_NONE, [DT_SYM_CALLBACK_NAME] = DT_SYM_NONE,
                            [DT_SYM_SET_THREAD_ID_TYPE] = DT_SYM_NONE,
                            /* the callback domains stay off (no usable correlation in their data) */
                            [DT_SYM_ENABLE_ALL_DOMAINS] = DT_SYM_NONE},
                .emulator_marker = DEVTRACE_MSPTI_EMULATOR_MARKER},
    .caps = DT_VCAP_DROPPED_WITH_CONTEXT | DT_VCAP_OWN_STRIDES | DT_VCAP_NO_API_ENTER_LINKS |
            DT_VCAP_UNSUBSCRIBE_FIRST | DT_VCAP_CLOCK_REALTIME,
    .results = {.success = MSPTI_SUCCESS, .invalid_parameter = MSPTI_ERROR_INVALID_PARAMETER,
                .max_limit_reached = MSPTI_ERROR_MAX_LIMIT_REACHED, .queue_empty = MSPTI_ERROR_QUEUE_EMPTY,
                .invalid_kind = 8, .not_compatible = INT_MIN, .not_initialized = 7,
                .multiple_subscribers = MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, .unknown = INT_MIN,
                .kind_not_supported = MSPTI_ERROR_INVALID_PARAMETER, .names = result_names,
                .name_count = sizeof result_names / sizeof result_names[0]},
    /* FlushAll's flag is reserved: 1 as every client passes it */
    .activity = {.flush_forced = 1, .flush_period_ms = 100, .external_kind = EXTERNAL_KIND},
    .callbacks = {.domain_runtime = MSPTI_CB_DOMAIN_RUNTIME, .domain_driver = MSPTI_CB_DOMAIN_HCCL,
                  .api_enter = MSPTI_API_ENTER, .site_offset = offsetof(msptiCallbackData, callbackSite),
                  .correlation_offset = offsetof(msptiCallbackData, correlationId)},
    .names = {.runtime_fallback = "AscendApi", .driver_fallback = "AscendApi"},
    .records = {DT_COUNTED(kinds), DT_COUNTED(layouts), NULL, 0, NULL, NULL},
    .enums = {.copy_kinds = DT_COUNTED(copy_kinds), .copy_async_flag = 1, .fill_async_flag = 1},
    .clock_domain = "CLOCK_REALTIME ns, MSPTI's default clock (where the library has msptiGetTimestamp, "
                    "calibrated against it)",
    .explain_failure = explain,
};

/* ------------------------------------------------------------------ */
/* Per-session decoding state (session lock held in the decoders)      */
/* ------------------------------------------------------------------ */
/* Half of a marker range, waiting for the other. */
typedef struct marker_half {
    uint64_t id;                  /* 0: free slot */
    uint64_t timestamp;
    uint32_t process, thread, name;
    uint8_t is_start;
} marker_half;

/* Process-wide stack (see below): the token of an external-correlation
   record, waiting for its API record. */
typedef struct token_slot {
    uint64_t correlation, token;
} token_slot;
#define TOKEN_SLOTS 4096

/* What decoding keeps between buffers: marker halves waiting for their
   other half, tokens waiting for their API record. */
static struct {
    marker_half *halves;          /* open addressing by id */
    /* the names of starts waiting for their end, interned here: the end
       may be decoded into another recording than the start (a flight
       recorder's ring decodes evicted buffers apart from the rest) */
    dt_intern names;
    int names_ready;
    size_t mask, count;
    uint64_t device_halves;       /* device-side marker records: not kept */
    token_slot tokens[TOKEN_SLOTS];
    uint64_t withheld;            /* API calls the library tagged with another thread's id */
} decode_state;

static marker_half *half_slot(uint64_t id)
{
    for (size_t i = (size_t)dt__mix64(id) & decode_state.mask;; i = (i + 1) & decode_state.mask)
        if (decode_state.halves[i].id == id || decode_state.halves[i].id == 0) return &decode_state.halves[i];
}

/* Halves that may wait at once: a program with more ranges open than this
   is not marking ranges. */
#define HALVES_MAX (1u << 20)

/* Room for one more waiting half; 0 when out of memory or at the limit. */
static int halves_reserve(void)
{
    if (decode_state.count >= HALVES_MAX) return 0;
    if (decode_state.halves && (decode_state.count + 1) * 2 <= decode_state.mask + 1) return 1;
    size_t cap = decode_state.halves ? (decode_state.mask + 1) * 2 : 256;
    marker_half *old = decode_state.halves, *grown = dt__calloc(cap, sizeof *grown);
    if (!grown) return 0;
    size_t old_cap = old ? decode_state.mask + 1 : 0;
    decode_state.halves = grown;
    decode_state.mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].id) *half_slot(old[i].id) = old[i];
    dt__free(old);
    return 1;
}

/* Remove a slot, keeping the probe chains of the others whole. */
static void half_remove(marker_half *h)
{
    size_t i = (size_t)(h - decode_state.halves);
    decode_state.halves[i].id = 0;
    decode_state.count--;
    for (size_t j = (i + 1) & decode_state.mask; decode_state.halves[j].id; j = (j + 1) & decode_state.mask) {
        marker_half moved = decode_state.halves[j];
        decode_state.halves[j].id = 0;
        *half_slot(moved.id) = moved;
    }
}

static void decoding_reset(void)
{
    if (decode_state.names_ready) dt__intern_free(&decode_state.names);
    dt__free(decode_state.halves);
    memset(&decode_state, 0, sizeof decode_state);
}

/* For code that decodes without starting a session (fuzzing, tests):
   forget what earlier buffers left waiting. */
DT_HIDDEN void dt__mspti_decoding_reset(void);
void dt__mspti_decoding_reset(void) { decoding_reset(); }

/* ------------------------------------------------------------------ */
/* Process-wide stack                                                  */
/* ------------------------------------------------------------------ */
/* MSPTI's header says an external id is pushed "for the calling thread";
   the published implementation keeps one stack per external kind for the
   whole process, and tags each API call with its top, whichever thread
   pushed it. Given two threads' ids at once, it would tag one thread's work
   with the other's. Which kind of stack a library has is asked once (a
   second thread pops what the first pushed). With a process-wide one, one
   thread at a time (the owner, from its first push until its stack is
   empty) has its ids given to the library, each as a token that names the
   thread; an API record is linked only when the token's thread made the
   call. Other threads' work meanwhile carries no External id, never a
   wrong one. */
enum { STACK_UNKNOWN, STACK_PER_THREAD, STACK_SHARED };

typedef int (*fn_push)(uint32_t kind, uint64_t id);
typedef int (*fn_pop)(uint32_t kind, uint64_t *id);

#define RING 65536
static struct {
    void *library;                /* the library the answer is for */
    _Atomic int scope;            /* STACK_* */
    _Atomic uint32_t owner;       /* tid, 0: none */
    _Atomic uint64_t next_token;
    struct {
        _Atomic uint64_t token;
        _Atomic uint64_t id;
        _Atomic uint64_t session;     /* the pushing session's generation */
        _Atomic uint32_t thread;
    } ring[RING];
    _Atomic uint64_t refused;     /* pushes not given to the library: another thread owns it */
} shared_stack;                   /* all zero: in .bss, untouched unless used */

/* The ids this thread gave a process-wide stack in this session (an earlier
   session's are no longer popped through devtrace: they are left behind). */
static _Thread_local struct {
    uint32_t depth;
    uint64_t session;
} t_given;

typedef struct probe_arg {
    fn_pop pop;
    uint64_t token;
    int result;
    uint64_t popped;
} probe_arg;

static void *probe_thread(void *p)
{
    probe_arg *a = p;
    a->result = a->pop(EXTERNAL_KIND, &a->popped);
    return NULL;
}

static int probe_scope(dt_engine *e)
{
    fn_push push = (fn_push)e->sym[DT_SYM_PUSH_EXTERNAL];
    fn_pop pop = (fn_pop)e->sym[DT_SYM_POP_EXTERNAL];
    if (!push || !pop) return STACK_PER_THREAD; /* nothing to give it */
    probe_arg a = {.pop = pop, .token = UINT64_C(0xd7e7ace5c0de0001), .result = -1};
    if (push(EXTERNAL_KIND, a.token) != MSPTI_SUCCESS) return STACK_PER_THREAD;
    pthread_t th;
    if (pthread_create(&th, NULL, probe_thread, &a) != 0) {
        uint64_t last;
        pop(EXTERNAL_KIND, &last);
        return STACK_SHARED; /* cannot tell: the safe answer */
    }
    pthread_join(th, NULL);
    if (a.result == MSPTI_SUCCESS) {
        /* it took another client's entry from the top: give it back */
        if (a.popped != a.token) {
            uint64_t ours;
            pop(EXTERNAL_KIND, &ours);
            push(EXTERNAL_KIND, a.popped);
        }
        return STACK_SHARED;
    }
    uint64_t last;
    pop(EXTERNAL_KIND, &last);
    return STACK_PER_THREAD;
}

static dt_status mspti_push(const dt_backend *self, uint64_t id)
{
    dt_engine *e = self->impl;
    int scope = atomic_load_explicit(&shared_stack.scope, memory_order_acquire);
    if (scope == STACK_PER_THREAD) return dt__engine_push_external(self, id);
    fn_push push = (fn_push)e->sym[DT_SYM_PUSH_EXTERNAL];
    dt_session *s = dt__active_session();
    if (scope != STACK_SHARED || !push || !s) return DT_ERR_BACKEND_UNAVAILABLE;
    uint64_t generation = dt__sink_generation(s);
    if (t_given.session != generation) t_given.depth = 0, t_given.session = generation;
    uint32_t me = dt__thread_id(), none = 0;
    if (t_given.depth == 0 && !atomic_compare_exchange_strong(&shared_stack.owner, &none, me) && none != me) {
        atomic_fetch_add_explicit(&shared_stack.refused, 1, memory_order_relaxed);
        return DT_ERR_BACKEND_UNAVAILABLE; /* no stack for this thread: its work carries no id */
    }
    uint64_t token = atomic_fetch_add_explicit(&shared_stack.next_token, 1, memory_order_relaxed) + 1; /* 0: empty */
    __typeof__(shared_stack.ring[0]) *slot = &shared_stack.ring[token % RING];
    /* a seqlock without fences (which TSan cannot follow): a reader that
       acquires any new field also sees the slot's token cleared */
    atomic_store_explicit(&slot->token, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->id, id, memory_order_release);
    atomic_store_explicit(&slot->session, generation, memory_order_release);
    atomic_store_explicit(&slot->thread, me, memory_order_release);
    atomic_store_explicit(&slot->token, token, memory_order_release);
    if (push(EXTERNAL_KIND, token) != MSPTI_SUCCESS) {
        if (t_given.depth == 0) atomic_store(&shared_stack.owner, 0);
        return DT_ERR_VENDOR;
    }
    t_given.depth++;
    return DT_OK;
}

static dt_status mspti_pop(const dt_backend *self)
{
    dt_engine *e = self->impl;
    if (atomic_load_explicit(&shared_stack.scope, memory_order_acquire) != STACK_SHARED) return dt__engine_pop_external(self);
    fn_pop pop = (fn_pop)e->sym[DT_SYM_POP_EXTERNAL];
    if (!pop || t_given.depth == 0) return DT_ERR_VENDOR;
    uint64_t last = 0;
    int r = pop(EXTERNAL_KIND, &last);
    if (--t_given.depth == 0) atomic_store(&shared_stack.owner, 0);
    return r == MSPTI_SUCCESS ? DT_OK : DT_ERR_VENDOR;
}

/* The id, session and thread of a token still in the ring; 0 when
   overwritten. */
static int token_lookup(uint64_t token, uint64_t *id, uint64_t *session, uint32_t *thread)
{
    __typeof__(shared_stack.ring[0]) *slot = &shared_stack.ring[token % RING];
    if (atomic_load_explicit(&slot->token, memory_order_acquire) != token) return 0;
    *id = atomic_load_explicit(&slot->id, memory_order_acquire);
    *session = atomic_load_explicit(&slot->session, memory_order_acquire);
    *thread = atomic_load_explicit(&slot->thread, memory_order_acquire);
    return atomic_load_explicit(&slot->token, memory_order_relaxed) == token;
}

/* ------------------------------------------------------------------ */
/* Decoders                                                            */
/* ------------------------------------------------------------------ */
static void decode_external(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    msptiActivityExternalCorrelation x;
    memcpy(&x, rec, sizeof x);
    /* other kinds belong to other clients in the process */
    if ((uint32_t)x.externalKind != EXTERNAL_KIND || x.correlationId == 0) return;
    if (atomic_load_explicit(&shared_stack.scope, memory_order_relaxed) != STACK_SHARED) {
        dt__corr_link(s, x.correlationId, x.externalId);
        return;
    }
    /* the record comes before its API record, which says which thread
       made the call */
    token_slot *t = &decode_state.tokens[dt__mix64(x.correlationId) % TOKEN_SLOTS];
    if (t->correlation && t->correlation != x.correlationId) decode_state.withheld++; /* its API record never came */
    *t = (token_slot){x.correlationId, x.externalId};
}

static void decode_api(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    msptiActivityApi a;
    memcpy(&a, rec, sizeof a);
    if (a.correlationId && atomic_load_explicit(&shared_stack.scope, memory_order_relaxed) == STACK_SHARED) {
        token_slot *t = &decode_state.tokens[dt__mix64(a.correlationId) % TOKEN_SLOTS];
        if (t->correlation == a.correlationId) {
            uint64_t id, session;
            uint32_t thread;
            /* the calling thread's token, of this session (an earlier one's
               can be left on the library's stack) */
            if (token_lookup(t->token, &id, &session, &thread) && thread == a.pt.threadId &&
                session == dt__sink_generation(s))
                dt__corr_link(s, a.correlationId, id);
            else
                decode_state.withheld++;
            t->correlation = 0;
        }
    }
    if (!(dt__sink_capture(s) & DT_CAPTURE_RUNTIME)) return;
    uint32_t name;
    if (a.name && a.name[0]) {
        /* the library keeps one string per API: cached by its address, as
           kernel names are (API names are never mangled) */
        name = dt__decode_kernel_name(s, cache, a.name);
    } else {
        char fallback[64];
        int n = snprintf(fallback, sizeof fallback, "%s#%u", d->v->names.runtime_fallback, (unsigned)a.kind);
        name = dt__sink_intern_n(s, fallback, (size_t)n);
    }
    dt__add_api_call(s, DT_EVENT_RUNTIME, a.start, a.end, a.correlationId, a.pt.processId, a.pt.threadId, name, 0, 0);
}

static void add_range(dt_session *s, const marker_half *start, uint64_t end)
{
    dt_rec *r = dt__add_checked(s, DT_EVENT_RANGE, start->timestamp, end, start->name);
    if (!r) return;
    r->flags = DT_REC_HAS_EXTERNAL; /* times: the vendor clock, mapped at stop */
    r->external_id = dt__corr_range_id_next();
    r->lane = start->thread;
    r->context = start->process;
}

#define MARKER_START (MSPTI_ACTIVITY_FLAG_MARKER_START | MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE)
#define MARKER_END (MSPTI_ACTIVITY_FLAG_MARKER_END | MSPTI_ACTIVITY_FLAG_MARKER_END_WITH_DEVICE)
#define MARKER_INSTANT \
    (MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS | MSPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS_WITH_DEVICE)

/* A range's start and end records share its id; either may come first
   (threads fill buffers in any order) and from another thread than the
   other: the range is the starting thread's. */
static void decode_marker(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    msptiActivityMarker m;
    memcpy(&m, rec, sizeof m);
    if (m.sourceKind != MSPTI_ACTIVITY_SOURCE_KIND_HOST) {
        /* the device's timestamps of a range whose host records come too */
        decode_state.device_halves++;
        return;
    }
    marker_half h = {.id = m.id, .timestamp = m.timestamp, .process = m.objectId.pt.processId,
                     .thread = m.objectId.pt.threadId, .is_start = (m.flag & MARKER_START) != 0};
    if (m.flag & MARKER_START) {
        /* interned apart until the range is whole (see decode_state) */
        if (!decode_state.names_ready) decode_state.names_ready = dt__intern_init(&decode_state.names) == 0;
        h.name = !decode_state.names_ready ? UINT32_MAX
                 : m.name ? dt__intern_n(&decode_state.names, m.name, strnlen(m.name, DT_MAX_KERNEL_NAME))
                          : 0;
        if (h.name == UINT32_MAX) {
            dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
            return;
        }
    } else if (m.flag & MARKER_INSTANT) {
        h.name = dt__intern_vendor_str(s, m.name, DT_MAX_KERNEL_NAME);
        if (h.name == UINT32_MAX) {
            dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
            return;
        }
    }
    if (m.flag & MARKER_INSTANT) {
        add_range(s, &h, m.timestamp);
        return;
    }
    if (!(m.flag & (MARKER_START | MARKER_END)) || m.id == 0) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    marker_half *other = decode_state.halves ? half_slot(m.id) : NULL;
    if (other && other->id == m.id) {
        if (other->is_start == h.is_start) {
            /* two starts (or ends) of one id: the later one is not a range */
            dt__loss_add(s, DT_LOSS_MALFORMED, 1);
            return;
        }
        marker_half first = other->is_start ? *other : h;
        uint64_t end = other->is_start ? h.timestamp : other->timestamp;
        half_remove(other);
        first.name = dt__sink_intern(s, dt__intern_get(&decode_state.names, first.name));
        if (first.name == UINT32_MAX) {
            dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
            return;
        }
        add_range(s, &first, end);
        return;
    }
    if (!halves_reserve()) {
        dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
        return;
    }
    *half_slot(m.id) = h;
    decode_state.count++;
}

/* HCCL's data types: torch's names (Kineto's "dtype" of NCCL kernels) and
   sizes in bytes. */
static const struct { const char *name; uint8_t size; } data_types[] = {
    [MSPTI_ACTIVITY_COMMUNICATION_INT8] = {"Char", 1},
    [MSPTI_ACTIVITY_COMMUNICATION_INT16] = {"Short", 2},
    [MSPTI_ACTIVITY_COMMUNICATION_INT32] = {"Int", 4},
    [MSPTI_ACTIVITY_COMMUNICATION_FP16] = {"Half", 2},
    [MSPTI_ACTIVITY_COMMUNICATION_FP32] = {"Float", 4},
    [MSPTI_ACTIVITY_COMMUNICATION_INT64] = {"Long", 8},
    [MSPTI_ACTIVITY_COMMUNICATION_UINT64] = {"UInt64", 8},
    [MSPTI_ACTIVITY_COMMUNICATION_UINT8] = {"Byte", 1},
    [MSPTI_ACTIVITY_COMMUNICATION_UINT16] = {"UInt16", 2},
    [MSPTI_ACTIVITY_COMMUNICATION_UINT32] = {"UInt32", 4},
    [MSPTI_ACTIVITY_COMMUNICATION_FP64] = {"Double", 8},
    [MSPTI_ACTIVITY_COMMUNICATION_BFP16] = {"BFloat16", 2},
    [MSPTI_ACTIVITY_COMMUNICATION_INT128] = {"Int128", 16},
    [MSPTI_ACTIVITY_COMMUNICATION_HIF8] = {"HiFloat8", 1},
    [MSPTI_ACTIVITY_COMMUNICATION_FP8E4M3] = {"Float8_e4m3fn", 1},
    [MSPTI_ACTIVITY_COMMUNICATION_FP8E5M2] = {"Float8_e5m2", 1},
    [MSPTI_ACTIVITY_COMMUNICATION_FP8E8M0] = {"Float8_e8m0fnu", 1},
};

#if DT_MSPTI_HAS_HCCL
static void decode_hccl(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_KERNEL)) return;
    msptiActivityHccl h;
    memcpy(&h, rec, sizeof h);
    /* no correlation id: the call that launched it is not known */
    dt_collective_desc c = {.start = h.start, .end = h.end, .device = h.ds.deviceId, .stream = h.ds.streamId,
                            .name = h.name, .group = h.commName,
                            .bandwidth_gbps = h.bandWidth == h.bandWidth ? h.bandWidth : 0};
    dt__add_collective(s, &c);
}
#endif

#if DT_MSPTI_HAS_COMMUNICATION
static void decode_communication(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_KERNEL)) return;
    msptiActivityCommunication m;
    memcpy(&m, rec, sizeof m);
    uint32_t t = (uint32_t)m.dataType;
    int known = t < sizeof data_types / sizeof data_types[0] && data_types[t].name;
    dt_collective_desc c = {.start = m.start, .end = m.end, .correlation = m.correlationId,
                            .device = m.ds.deviceId, .stream = m.ds.streamId, .name = m.name, .group = m.commName,
                            .algorithm = m.algType, .data_type = known ? data_types[t].name : NULL,
                            .count = m.count};
    if (known && m.count <= UINT64_MAX / data_types[t].size) c.bytes = m.count * data_types[t].size;
    dt__add_collective(s, &c);
}
#endif

#if DT_MSPTI_HAS_MEMORY_KINDS
/* An allocation or free (aclrtMalloc, aclrtFree, aclrtMallocHost, ...), at
   the start of its call. MSPTI's HOST memory is what aclrtMallocHost
   returns, page-locked (as devtrace infers from AscendCL's documentation:
   the header says only "host"). A call on no stream is put on the device's
   stream 0 row. */
static void decode_memory(const dt_decoder *d, dt_session *s, dt_decode_cache *cache, const uint8_t *rec)
{
    (void)d;
    (void)cache;
    if (!(dt__sink_capture(s) & DT_CAPTURE_MEMORY)) return;
    msptiActivityMemory m;
    memcpy(&m, rec, sizeof m);
    if (m.memoryOperationType != MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
        m.memoryOperationType != MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return;
    }
    static const uint8_t memory_kinds[] = {[MSPTI_ACTIVITY_MEMORY_UNKNOWN] = DT_MEM_UNKNOWN,
                                           [MSPTI_ACTIVITY_MEMORY_DEVICE] = DT_MEM_DEVICE,
                                           [MSPTI_ACTIVITY_MEMORY_HOST] = DT_MEM_PINNED,
                                           [MSPTI_ACTIVITY_MEMORY_MANAGED] = DT_MEM_MANAGED};
    uint32_t k = (uint32_t)m.memoryKind;
    dt_memory_op op = {.time = m.start, .correlation = m.correlationId, .address = m.address, .bytes = m.bytes,
                       .device = m.deviceId, .stream = m.streamId == MSPTI_INVALID_STREAM_ID ? 0 : m.streamId,
                       .memory_kind = k < sizeof memory_kinds ? memory_kinds[k] : DT_MEM_UNKNOWN,
                       .is_free = m.memoryOperationType == MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE};
    dt__add_memory(s, &op);
}
#endif

/* ------------------------------------------------------------------ */
/* The backend                                                         */
/* ------------------------------------------------------------------ */
static dt_status mspti_start(const dt_backend *self, dt_session *s)
{
    dt_engine *e = self->impl;
    dt__core_lock(s);
    decoding_reset();
    dt__core_unlock(s);
    atomic_store(&shared_stack.refused, 0);
    dt_status st = dt__engine_start(self, s);
    if (st != DT_OK) return st;
    if (shared_stack.library != e->lib.handle || atomic_load(&shared_stack.scope) == STACK_UNKNOWN) {
        atomic_store(&shared_stack.scope, STACK_UNKNOWN);
        atomic_store(&shared_stack.scope, probe_scope(e));
        shared_stack.library = e->lib.handle;
    }
    if (atomic_load(&shared_stack.scope) == STACK_SHARED) {
        atomic_store(&shared_stack.owner, 0); /* an earlier session's holder is gone */
        dt__core_note(s, "external_stack",
                        "%s keeps one external-correlation stack for the whole process (its header documents one "
                        "per thread): the ids of one thread at a time are given to it, and device work launched "
                        "on other threads meanwhile carries no External id%s",
                        e->lib.path, dt__sink_capture(s) & DT_CAPTURE_RUNTIME ? "" :
                        "; without API records (capture them) no External id can be checked, so none is kept");
    }
    return DT_OK;
}

static dt_status mspti_stop(const dt_backend *self, dt_session *s)
{
    dt_status st = dt__engine_stop(self, s);
    /* every buffer has come back: what still waits for its other half
       began or ended outside the session */
    dt__core_lock(s);
    uint64_t open = decode_state.count, device = decode_state.device_halves, withheld = decode_state.withheld;
    decoding_reset();
    dt__core_unlock(s);
    if (open) {
        dt__loss_add(s, DT_LOSS_OUTSIDE_WINDOW, open);
        dt__core_note(s, "markers", "%" PRIu64 " marker ranges began or ended outside the session: only one of "
                        "their two records came (counted as outside_window)", open);
    }
    if (device)
        dt__core_note(s, "device_markers", "%" PRIu64 " device-side marker records (the device's timestamps of "
                        "ranges marked on a stream) are not kept; their ranges are, from the host records", device);
    uint64_t refused = atomic_load(&shared_stack.refused);
    if (refused || withheld)
        dt__core_note(s, "external_ids", "the library's external-correlation stack is the whole process's: %" PRIu64
                        " External ids pushed while another thread held it were not given to it, and %" PRIu64
                        " API calls it tagged with another thread's id were left without one", refused, withheld);
    return st;
}

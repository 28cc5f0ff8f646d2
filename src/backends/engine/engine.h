/*
 * The engine for CUPTI-shaped vendor interfaces (CUPTI, MCPTI, the PPU
 * stack's libcupti, MUPTI, TOPSPTI): activity kinds enabled one by one,
 * activity buffers requested from and returned to the client, records
 * walked with the vendor's iterator, a subscriber with API callbacks, and
 * (for most) an external-correlation stack.
 *
 * A vendor is one const `dt_vendor`: names, where its library is, symbol
 * names, capabilities as flags, constants (result codes, kinds, domains),
 * record layouts chosen at run time, name tables and its clock. The engine
 * implements the backend contract (core/contract.h) from it: a vendor's
 * `dt_backend` names the engine's methods (DT_ENGINE_METHODS) and its
 * engine (impl), which DT_ENGINE_DEFINE() makes with the three buffer
 * callbacks a vendor calls without user data. Nothing here names a vendor.
 *
 * The vendor's descriptor is in vendor.h, its decoder in decoder.h.
 */
#ifndef DT_ENGINE_H
#define DT_ENGINE_H

#include "backends/decoder.h"

/* ------------------------------------------------------------------ */
/* The engine: one per vendor, process-wide (engine.c)                 */
/* ------------------------------------------------------------------ */
#define DT_ENGINE_MAX_KINDS 24
#define DT_ENGINE_MAX_COUNTED 8
#define DT_ENGINE_STRIPE_BITS 4
#define DT_ENGINE_STRIPES (1 << DT_ENGINE_STRIPE_BITS)
#define DT_ENGINE_MAX_ATTRIBUTES 8

/* A counter of its own cache line. */
typedef struct dt_engine_stripe {
    _Alignas(64) _Atomic uint32_t n;
} dt_engine_stripe;

typedef struct dt_engine {
    const dt_vendor *v;
    /* this vendor's buffer callbacks (DT_ENGINE_DEFINE): the vendor's
       shape decides which completion callback is registered */
    void (*request)(uint8_t **buffer, size_t *size, size_t *max_records);
    void (*request_plain)(uint8_t **buffer, size_t *size);
    void (*complete_plain)(uint8_t *buffer, size_t size, size_t valid);
    void (*complete_context)(void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid);
    pthread_mutex_t lock;             /* load, arm, disarm; recursive (see engine.c) */
    pthread_mutex_t decode_lock;      /* `session` against completion callbacks */
    pthread_mutex_t devices_lock;
    dt_pool_slot pool;
    /* the library */
    dt_library lib;
    void *sym[DT_SYM_COUNT];
    dt_symbol_spec specs[DT_SYM_COUNT];
    char symbol_names[DT_SYM_COUNT][80];
    char version[64];
    int loaded, emulated;
    uint32_t api_version;
    dt_decoder decoder;
    const char **names[2];            /* from the name function, dt__malloc'ed */
    /* arming; `starting` is read without the lock by a prepare that must not
       wait for a start in progress on another thread */
    _Atomic int starting;
    int early;                        /* cheap kinds armed outside a session */
    uint32_t armed_kind[DT_ENGINE_MAX_KINDS]; /* the kind enabled for kinds[i]; valid if armed[i] */
    uint8_t armed[DT_ENGINE_MAX_KINDS];
    void *subscriber;
    int subscribed;
    _Atomic int domains_on;           /* API callbacks on: read on the program's threads */
    int fork_domains;                 /* turned on by dt__engine_fork_prepare, for the child */
    int thread_type_set;              /* since the library was loaded or finalized */
    int attributes_set;               /* likewise; with the library's answers */
    int attribute_result[DT_ENGINE_MAX_ATTRIBUTES];
    /* given to another client of the vendor (dt__engine_release): devtrace
       makes no vendor call that would disturb it, for good */
    _Atomic int released;
    char released_to[128];
    int flush_period_set;
    /* the library is detached at a later API exit callback */
    _Atomic int finalize_pending;
    /* external-correlation calls reach the vendor while open (a session
       runs); those inside the vendor now, counted by thread stripe */
    _Atomic int ext_open;
    dt_engine_stripe ext_inflight[DT_ENGINE_STRIPES];
    int latency_on;                   /* kernels' queued times asked of the vendor */
    /* calls the vendor refused at start, made again at the next context
       creation (dt_vendor_callbacks.context_created): DT_RETRY_* bits
       still to make, read on the program's threads; those refused in this
       session; the vendor's answers at start and when made again */
    _Atomic unsigned retry_pending;
    unsigned retry_refused, retry_made;
    int retry_first[2], retry_again[2];
    int context_callback_on;
    uint32_t sessions;                /* sessions started in this process */
    uint64_t counted[DT_ENGINE_MAX_COUNTED]; /* this session's (dt_vendor_records.counted) */
    uint64_t graph_launches[2];       /* this session's, where counted (dt_decoder.graph_counted) */
    dt_session *session;              /* under decode_lock */
    uint64_t attached;                /* sessions attached so far, under decode_lock */
    _Atomic uint64_t orphaned;        /* buffers completed with no session */
    dt_device_props devices[DT_MAX_DEVICES];
} dt_engine;

/* A vendor entry point of e's (or of a library as loaded), as type T. */
#define DT_ENGINE_SYM(holder, T, id) ((T)(holder)->sym[id])

/* Whether the library has both halves of the external-correlation stack. */
static inline int dt__engine_has_push(void *const *sym)
{
    return sym[DT_SYM_PUSH_EXTERNAL] && sym[DT_SYM_POP_EXTERNAL];
}

/* e->lock held. Load the library for a session or early arming; keep the
   one already in use while anything is armed with it (engine_library.c). */
DT_HIDDEN dt_status dt__engine_load(dt_engine *e);
/* Whether cbid is one of ids[n]. */
static inline int dt__engine_listed(const uint32_t *ids, uint32_t n, uint32_t cbid)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == cbid) return 1;
    return 0;
}

/* The session's notes of its vendor (engine_notes.c): the kinds the vendor
   refused, by its answer (refused[i] set for kinds[i], cleared as said);
   the attributes as set; graph launches a release gives wrong correlation
   ids in a later session; the records counted rather than stored. */
DT_HIDDEN void dt__engine_note_refused_kinds(const dt_engine *e, dt_session *s, const int *result, uint8_t *refused);
DT_HIDDEN void dt__engine_note_attributes(const dt_engine *e, dt_session *s);
DT_HIDDEN void dt__engine_note_graph_launches(const dt_engine *e, dt_session *s);
DT_HIDDEN void dt__engine_note_counted(const dt_engine *e, dt_session *s);
/* What the vendor's interface never gives, whatever the release: a
   dropped-record count (dt_vendor.symbols names none), kernels' launch
   configuration (the kernel layout has no grid). */
DT_HIDDEN void dt__engine_note_interface(const dt_engine *e, dt_session *s);
/* A note into s for every other copy of the vendor's library mapped in
   the process beside the one in use (engine_library.c). */
DT_HIDDEN void dt__engine_note_other_copies(const dt_engine *e, dt_session *s);
/* The vendor's name for result r. */
DT_HIDDEN const char *dt__engine_result_text(const dt_engine *e, int r);
/* A failed vendor call as a status whose message says what to do. */
DT_HIDDEN dt_status dt__engine_failure(const dt_engine *e, const char *call, int r);

/* The backend's methods, the same for every vendor of the engine: self is
   the vendor's dt_backend, self->impl its dt_engine (DT_ENGINE_DEFINE). */
DT_HIDDEN dt_status dt__engine_probe(const dt_backend *self, dt_backend_status *st);
DT_HIDDEN dt_status dt__engine_prepare(const dt_backend *self);
DT_HIDDEN dt_status dt__engine_start(const dt_backend *self, dt_session *s);
DT_HIDDEN dt_status dt__engine_flush(const dt_backend *self, dt_session *s);
DT_HIDDEN dt_status dt__engine_stop(const dt_backend *self, dt_session *s);
DT_HIDDEN int dt__engine_clock(const dt_backend *self, uint64_t *ns);
DT_HIDDEN dt_status dt__engine_push_external(const dt_backend *self, uint64_t id);
DT_HIDDEN dt_status dt__engine_pop_external(const dt_backend *self);
DT_HIDDEN dt_status dt__engine_attribute_by_api_enter(const dt_backend *self);
DT_HIDDEN dt_status dt__engine_release(const dt_backend *self, dt_session *s, const char *to);
/* Around a fork without exec (dt_backend.fork_prepare, fork_parent): the
   API callbacks on in the child's copy, off again in the parent where only
   the fork turned them on. */
DT_HIDDEN void dt__engine_fork_prepare(const dt_backend *self);
DT_HIDDEN void dt__engine_fork_parent(const dt_backend *self);
/* Those methods, as the designated initializers of a dt_backend whose
   methods are the engine's (a backend that needs more, as MSPTI does, names
   its own and calls these from them). */
#define DT_ENGINE_METHODS                                                                                   \
    .probe = dt__engine_probe, .prepare = dt__engine_prepare, .start = dt__engine_start,                      \
    .flush = dt__engine_flush, .stop = dt__engine_stop, .clock = dt__engine_clock,                            \
    .push_external = dt__engine_push_external, .pop_external = dt__engine_pop_external,                      \
    .attribute_by_api_enter = dt__engine_attribute_by_api_enter, .release = dt__engine_release,              \
    .fork_prepare = dt__engine_fork_prepare, .fork_parent = dt__engine_fork_parent
/* The buffer callbacks, and what they share with arming and disarming
   (engine_buffers.c). */
DT_HIDDEN void dt__engine_request(dt_engine *e, uint8_t **buffer, size_t *size, size_t *max_records);
DT_HIDDEN void dt__engine_complete(dt_engine *e, void *context, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid);
/* The vendor's dropped-record count (which restarts at every read); made
   with no lock held that a vendor callback takes. */
DT_HIDDEN size_t dt__engine_read_drops(dt_engine *e, void *context, uint32_t stream);
/* Charge n dropped records to s, by the pool's state (no_buffer once it
   refused a request, otherwise vendor_dropped). */
DT_HIDDEN void dt__engine_charge_drops(dt_engine *e, dt_session *s, size_t n);
/* A buffer the flight recorder's ring queued, decoded into `into`
   (ctx: the engine). */
DT_HIDDEN void dt__engine_ring_decode(void *ctx, dt_session *into, uint8_t *buf, size_t valid);
/* The external-correlation calls' gate (engine_external.c): open while a
   session runs; the calls inside the vendor now. */
DT_HIDDEN void dt__engine_external_gate(dt_engine *e, int open);
DT_HIDDEN uint32_t dt__engine_external_in_flight(dt_engine *e);
/* The subscriber's callback (userdata: the engine): on an API entry, links
   its correlation id to devtrace's innermost external id; on an API exit,
   detaches a library waiting to be finalized; on a context's creation,
   makes again the calls refused at start (dt_vendor_callbacks). */
DT_HIDDEN void dt__engine_api_callback(void *userdata, uint32_t domain, uint32_t cbid, const void *cbdata);

/* The engine of a vendor: defines `dt_engine_<ident>` driven by
   `descriptor`, a `static const dt_vendor` defined after this line, with
   the buffer callbacks of its shape (the vendor calls them without user
   data: each names its engine). The vendor's `const dt_backend
   dt_backend_<ident>` follows, with .impl = &dt_engine_<ident> and
   DT_ENGINE_METHODS (or methods of its own around the engine's). */
#define DT_ENGINE_DEFINE(ident, descriptor)                                                               \
    static const dt_vendor descriptor;                                                                    \
    DT_HIDDEN dt_engine dt__engine_##ident;                                                                \
    static void ident##_request(uint8_t **b, size_t *n, size_t *m) { dt__engine_request(&dt__engine_##ident, b, n, m); } \
    static void ident##_request_plain(uint8_t **b, size_t *n) { dt__engine_request(&dt__engine_##ident, b, n, NULL); } \
    static void ident##_complete_plain(uint8_t *b, size_t n, size_t valid)                                \
    {                                                                                                     \
        dt__engine_complete(&dt__engine_##ident, NULL, 0, b, n, valid);                                     \
    }                                                                                                     \
    static void ident##_complete_context(void *c, uint32_t stream, uint8_t *b, size_t n, size_t valid)    \
    {                                                                                                     \
        dt__engine_complete(&dt__engine_##ident, c, stream, b, n, valid);                                   \
    }                                                                                                     \
    dt_engine dt__engine_##ident = {                                                                       \
        .v = &(descriptor), .request = ident##_request, .request_plain = ident##_request_plain,         \
        .complete_plain = ident##_complete_plain,         \
        .complete_context = ident##_complete_context, .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,     \
        .decode_lock = PTHREAD_MUTEX_INITIALIZER, .devices_lock = PTHREAD_MUTEX_INITIALIZER,             \
        .pool = DT_POOL_SLOT_INIT,                                                                        \
    }

#endif /* DT_ENGINE_H */

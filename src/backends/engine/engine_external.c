/*
 * The engine's calls of the vendor's external-correlation stack, made on
 * the traced program's threads (so no error text is formatted here), and
 * the gate that orders them against the session's stop: none reaches the
 * vendor once the gate is closed, and the vendor is detached only when
 * none is in flight (engine.c's finalize).
 */
#include "backends/engine/engine.h"
#include "base/hash.h"

typedef int (*fn_push)(uint32_t kind, uint64_t id);
typedef int (*fn_pop)(uint32_t kind, uint64_t *id);

#define SYM DT_ENGINE_SYM

void dt__engine_external_gate(dt_engine *e, int open)
{
    atomic_store(&e->ext_open, open);
}

/* The stripe of the calling thread's external-correlation calls in flight:
   its stack's page, hashed with one multiply (threads' stacks lie apart),
   so that launching threads do not share one counter's cache line. The
   full mixer cost 10 instructions more per call, twice per External id. */
static _Atomic uint32_t *ext_stripe(dt_engine *e)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    return &e->ext_inflight[dt__hash_slot((uint64_t)here >> 12, DT_ENGINE_STRIPE_BITS)].n;
}

/* External-correlation calls reach the vendor only while the gate is open
   (a session runs on the engine), and each counts itself in flight from
   before it looks at the gate until it has left the vendor: once the gate
   is closed and nothing is in flight, no such call can reach the library
   (arrange_finalize waits for that). Sequentially consistent: the gate's
   closing and the count's read on one side, the count's rise and the
   gate's read on the other. */
static int ext_enter(dt_engine *e, _Atomic uint32_t *stripe)
{
    atomic_fetch_add(stripe, 1);
    if (atomic_load(&e->ext_open)) return 1;
    atomic_fetch_sub_explicit(stripe, 1, memory_order_release);
    return 0;
}

uint32_t dt__engine_external_in_flight(dt_engine *e)
{
    uint32_t n = 0;
    for (int i = 0; i < DT_ENGINE_STRIPES; i++) n += atomic_load(&e->ext_inflight[i].n);
    return n;
}

/* The vendor's push and pop. A vendor without a stack (TOPSPTI) is asked
   on every External id: its answer leaves before anything is counted in
   flight. */
dt_status dt__engine_push_external(const dt_backend *self, uint64_t id)
{
    dt_engine *e = self->impl;
    fn_push push = SYM(e, fn_push, DT_SYM_PUSH_EXTERNAL);
    if (!push) return DT_ERR_BACKEND_UNAVAILABLE;
    _Atomic uint32_t *stripe = ext_stripe(e);
    if (!ext_enter(e, stripe)) return DT_ERR_BACKEND_UNAVAILABLE;
    int r = push(e->v->activity.external_kind, id);
    atomic_fetch_sub_explicit(stripe, 1, memory_order_release);
    return r == e->v->results.success ? DT_OK : DT_ERR_VENDOR;
}

dt_status dt__engine_pop_external(const dt_backend *self)
{
    dt_engine *e = self->impl;
    fn_pop pop = SYM(e, fn_pop, DT_SYM_POP_EXTERNAL);
    if (!pop) return DT_ERR_BACKEND_UNAVAILABLE;
    _Atomic uint32_t *stripe = ext_stripe(e);
    if (!ext_enter(e, stripe)) return DT_ERR_BACKEND_UNAVAILABLE;
    uint64_t last = 0; /* the vendor writes the popped id: a real pointer */
    int r = pop(e->v->activity.external_kind, &last);
    atomic_fetch_sub_explicit(stripe, 1, memory_order_release);
    return r == e->v->results.success ? DT_OK : DT_ERR_VENDOR;
}

/*
 * The client's registration (emu/core, internal): the single subscriber
 * and its domains, the thread-id type, the per-thread external-correlation
 * stacks, and detaching.
 */
#ifndef DEVTRACE_EMU_CORE_SUBSCRIBER_H
#define DEVTRACE_EMU_CORE_SUBSCRIBER_H

#include "state.h"

/* A thread's external-correlation stacks, one per external kind. */
typedef struct core_ext_stacks {
    uint64_t ids[EMU_EXT_KINDS][EMU_EXT_DEPTH];
    size_t depth[EMU_EXT_KINDS];
    /* beyond EMU_EXT_DEPTH, for personalities with deeper stacks */
    uint64_t *more[EMU_EXT_KINDS];
    size_t more_cap[EMU_EXT_KINDS];
} core_ext_stacks;

EMU_HIDDEN extern CORE_TLS core_ext_stacks core_thread_ext;
/* The calling thread captures a graph (emu_stream_capture). */
EMU_HIDDEN extern CORE_TLS int core_capturing;
/* External-correlation calls inside the library now. */
EMU_HIDDEN int core_external_calls_inside(void);

/* Entry i of a thread's stack of one kind. */
static inline uint64_t *core_ext_entry(core_ext_stacks *t, uint32_t kind, size_t i)
{
    return i < EMU_EXT_DEPTH ? &t->ids[kind][i] : &t->more[kind][i - EMU_EXT_DEPTH];
}

/* A new subscriber and a departed one both start with every domain off. */
EMU_HIDDEN void core_set_subscriber_locked(int subscribed, emu_generic_fn callback, void *userdata);

#endif /* DEVTRACE_EMU_CORE_SUBSCRIBER_H */

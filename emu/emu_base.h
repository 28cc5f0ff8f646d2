/*
 * Building blocks every emulator file may use (the core's and the
 * personalities'), written once: growable arrays and the calling thread's
 * id. They know nothing of any vendor.
 */
#ifndef DEVTRACE_EMU_BASE_H
#define DEVTRACE_EMU_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Shared between the files of one emulator library, never exported. */
#define EMU_HIDDEN __attribute__((visibility("hidden")))

/* Room for one more of n elements in *items (capacity *cap, doubled from
   `first`); -1 when out of memory. */
static inline int emu_core_grow_for_one(void **items, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void *p = realloc(*items, c * elem);
    if (!p)
        return -1;
    *items = p;
    *cap = c;
    return 0;
}

/* The calling thread's Linux tid, asked of the kernel once per thread (a
   forked child asks again): records carry it on every call, so it is read
   inline. Defined in core/api.c. */
EMU_HIDDEN extern _Thread_local __attribute__((tls_model("local-dynamic"))) uint32_t emu_core_thread_tid;

static inline uint32_t emu_core_system_tid(void)
{
    if (!emu_core_thread_tid)
        emu_core_thread_tid = (uint32_t)syscall(SYS_gettid);
    return emu_core_thread_tid;
}

#endif /* DEVTRACE_EMU_BASE_H */

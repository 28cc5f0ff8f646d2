/*
 * The library's life (emu/core, internal): loading (emu_init and the
 * environment it reads), fork, the emulated driver's initialisation and
 * the vendor runtime's teardown at exit.
 */
#ifndef DEVTRACE_EMU_CORE_LIFECYCLE_H
#define DEVTRACE_EMU_CORE_LIFECYCLE_H

#include "state.h"

/* A child forked without exec after the driver initialised, of a vendor
   whose runtime cannot be used there (emu_vendor.fork_child_unusable). */
EMU_HIDDEN extern int core_forked_unusable;
/* The vendor runtime's teardown ran (emu_vendor.runtime_teardown): flushes
   answer an error and deliver nothing. */
EMU_HIDDEN extern _Atomic int core_torn_down;

/* The emulated driver's state; the thread that initialises it. */
enum { CORE_DRIVER_DOWN, CORE_DRIVER_INITIALISING, CORE_DRIVER_UP };
EMU_HIDDEN extern _Atomic int core_driver_state;
EMU_HIDDEN extern CORE_TLS int core_initialising_driver;

/* emu_core_driver_init, its every-call check inline (each API call makes
   it first). */
static inline void core_driver_init(void)
{
    if (atomic_load_explicit(&core_driver_state, memory_order_acquire) == CORE_DRIVER_UP ||
        core_initialising_driver)
        return;
    emu_core_driver_init();
}

#endif /* DEVTRACE_EMU_CORE_LIFECYCLE_H */

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

#endif /* DEVTRACE_EMU_CORE_LIFECYCLE_H */

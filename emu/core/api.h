/*
 * One emulated API call (emu/core, internal): the runtime call wrapping the
 * driver call, the subscriber's callbacks at ENTER and EXIT, the API and
 * external-correlation records, and the work done in between; and the ids
 * records carry (correlation, process, thread).
 */
#ifndef DEVTRACE_EMU_CORE_API_H
#define DEVTRACE_EMU_CORE_API_H

#include "state.h"

/* The device activity of a call: queued between ENTER and EXIT; returns the
   device time the call must wait for before returning (0: none). */
typedef uint64_t (*core_work_fn)(void *arg, uint32_t correlation, uint64_t api_start);

/* Make the call `args` describes (symbol: the kernel name of a launch, or
   NULL); work may be NULL. EMU_OK, or EMU_EUNUSABLE in a forked child
   whose runtime cannot be used. */
EMU_HIDDEN int core_api_call(const emu_call_args *args, const char *symbol, core_work_fn work, void *arg);

/* The process id records carry, asked of the kernel once per process (the
   thread's: emu_core_system_tid). */
EMU_HIDDEN uint32_t core_process_id(void);
/* In a forked child: the ids are asked again. */
EMU_HIDDEN void core_ids_forked(void);

#endif /* DEVTRACE_EMU_CORE_API_H */

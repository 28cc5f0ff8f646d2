/*
 * Fault injection (emu/core, internal): faults armed by count, from
 * DEVTRACE_EMU_FAULTS, emu_set_faults() or emu_fault_arm(), each taken by
 * the record or call it breaks (see records.c and api.c).
 */
#ifndef DEVTRACE_EMU_CORE_FAULTS_H
#define DEVTRACE_EMU_CORE_FAULTS_H

#include "state.h"

/* Take one armed fault of kind f: 1 (and counted) if one was armed. */
static inline int core_take_fault_locked(emu_fault f)
{
    if (core_state.fault_left[f] == 0)
        return 0;
    core_state.fault_left[f]--;
    core_state.stats.faulted[f]++;
    return 1;
}

/* Arm the faults of a spec ("name=count,..."); EMU_EINVAL at the first
   error, having armed the items before it. */
EMU_HIDDEN int core_parse_faults_locked(const char *spec);

#endif /* DEVTRACE_EMU_CORE_FAULTS_H */

/*
 * Producing records (emu/core, internal): the gate every record passes
 * (its kind enabled, the record-wide faults), API and external records
 * written at once, device records queued until their work finishes, and
 * the counts by kind.
 */
#ifndef DEVTRACE_EMU_CORE_RECORDS_H
#define DEVTRACE_EMU_CORE_RECORDS_H

#include "state.h"

/* The statistics kind of a record kind. */
static inline emu_kind core_stat_kind(emu_rec_kind k)
{
    switch (k) {
    case EMU_REC_KERNEL: return EMU_KIND_KERNEL;
    case EMU_REC_MEMCPY: return EMU_KIND_MEMCPY;
    case EMU_REC_MEMSET: return EMU_KIND_MEMSET;
    case EMU_REC_RUNTIME: return EMU_KIND_RUNTIME;
    case EMU_REC_DRIVER: return EMU_KIND_DRIVER;
    case EMU_REC_MARKER: return EMU_KIND_MARKER;
    case EMU_REC_COLLECTIVE: return EMU_KIND_COLLECTIVE;
    case EMU_REC_MEMORY: return EMU_KIND_MEMORY;
    case EMU_REC_MEMORY_POOL: return EMU_KIND_MEMORY_POOL;
    default: return EMU_KIND_EXTERNAL;
    }
}

/* The gate API and device records share: 0 when the kind is off or the
   no_buffer fault takes the record. */
EMU_HIDDEN int core_admit_locked(const emu_activity *a);
/* An API or external record the gate admitted: written at once. */
EMU_HIDDEN void core_write_now_locked(const emu_activity *in);
/* Produce an API or external record: written at once. */
static inline void core_produce_now_locked(const emu_activity *in)
{
    if (core_admit_locked(in))
        core_write_now_locked(in);
}
/* Produce a device record: applies timestamp faults, then queues it until
   the device work has finished (or writes it at once when out of order). */
EMU_HIDDEN void core_produce_device_locked(emu_activity *a);

#endif /* DEVTRACE_EMU_CORE_RECORDS_H */

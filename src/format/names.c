/* devtrace's names for its event kinds and loss reasons (names.h). */
#include "format/names.h"

static const char *const loss_names[DT_LOSS_COUNT] = {
    "timestamp_zero", "timestamp_reversed", "timestamp_too_long", "malformed",
    "unknown_kind", "no_buffer", "vendor_dropped", "outside_window", "store_full", "unfinished",
    "forked_child", "ring_evicted",
};

const char *dt_loss_reason_name(dt_loss_reason reason)
{
    return (unsigned)reason < DT_LOSS_COUNT ? loss_names[reason] : "unknown";
}

static const char *const kind_names[] = {
    [DT_EVENT_KERNEL] = "kernel", [DT_EVENT_MEMCPY] = "memcpy", [DT_EVENT_MEMSET] = "memset",
    [DT_EVENT_RUNTIME] = "runtime", [DT_EVENT_DRIVER] = "driver", [DT_EVENT_SYNC] = "sync",
    [DT_EVENT_OVERHEAD] = "overhead", [DT_EVENT_RANGE] = "range", [DT_EVENT_OP] = "op",
    [DT_EVENT_COLLECTIVE] = "collective", [DT_EVENT_MEMORY] = "memory",
};

const char *dt__fmt_event_kind_name(int kind)
{
    return kind >= 0 && (unsigned)kind < sizeof kind_names / sizeof *kind_names ? kind_names[kind] : NULL;
}

/*
 * Names the trace writes for devtrace's own vocabulary: the event kinds
 * (devtrace.counts' keys) here, the loss reasons through the public
 * dt_loss_reason_name (devtrace.loss' keys, the record protocol's and the
 * reader's), both defined in names.c.
 */
#ifndef DT_FORMAT_NAMES_H
#define DT_FORMAT_NAMES_H

#include "base/common.h"
#include "devtrace/devtrace.h"

/* The key of an event kind (dt_event_kind) in devtrace.counts ("kernel",
   "memcpy", ...), or NULL for a number that is no kind. */
DT_HIDDEN const char *dt__fmt_event_kind_name(int kind);

#endif /* DT_FORMAT_NAMES_H */

/*
 * The writers the session is written with (src/export). Internal, not installed.
 */
#ifndef DT_EXPORT_EXPORT_H
#define DT_EXPORT_EXPORT_H

#include <stddef.h>

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/contract.h"

/* ------------------------------------------------------------------ */
/* Export (src/export)                                                 */
/* ------------------------------------------------------------------ */
/* Write a stopped session as Chrome trace JSON (Kineto schema), streaming,
   to a temporary file renamed to path when complete. */
DT_HIDDEN dt_status dt_export_chrome(const dt_session *s, const char *path, dt_format format);
/* The same session as a Perfetto protobuf trace (src/export/perfetto.c),
   DT_FORMAT_PERFETTO or DT_FORMAT_PERFETTO_GZ. */
DT_HIDDEN dt_status dt_export_perfetto(const dt_session *s, const char *path, dt_format format);
/* The file suffix of a format (".json", ".json.gz", ".pftrace", ...). */
DT_HIDDEN const char *dt_format_suffix(dt_format format);
/* One device's entry of Kineto's "deviceProperties" list, as a JSON object,
   snprintf-style (src/export/device_props.c). */
DT_HIDDEN size_t dt_device_props_json(const dt_device_props *p, char *buf, size_t size);

#endif /* DT_EXPORT_EXPORT_H */

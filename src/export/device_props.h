/* Kineto's "deviceProperties" entries (src/export/device_props.c). */
#ifndef DT_EXPORT_DEVICE_PROPS_H
#define DT_EXPORT_DEVICE_PROPS_H

#include <stddef.h>

#include "core/recording.h"

/* One device's entry, as a JSON object, snprintf-style. */
DT_HIDDEN size_t dt__wr_device_props_json(const dt_device_props *p, char *buf, size_t size);
/* The entries of the valid devices among devices[0..DT_MAX_DEVICES),
   comma-separated, snprintf-style (dt_session_device_properties). */
DT_HIDDEN size_t dt__wr_device_props_list(const dt_device_props *devices, char *buf, size_t size);

#endif /* DT_EXPORT_DEVICE_PROPS_H */

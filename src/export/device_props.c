/* Kineto's "deviceProperties" entries: one JSON object per device the
   backend described, with the keys Kineto writes for CUDA devices. Written
   into the trace and handed to a Kineto plugin, so both say the same. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "export/device_props.h"

#include "format/json.h"

/* Appends to buf like snprintf at offset len; returns the new length. */
__attribute__((format(printf, 4, 5))) static size_t put(char *buf, size_t size, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf && len < size ? buf + len : NULL, buf && len < size ? size - len : 0, fmt, ap);
    va_end(ap);
    return n < 0 ? len : len + (size_t)n;
}

size_t dt__wr_device_props_json(const dt_device_props *p, char *buf, size_t size)
{
    char name[sizeof p->name * 6 + 2];
    char *end = dt__json_escape(name, p->name, strnlen(p->name, sizeof p->name));
    *end = 0;
    /* what the backend could not read is left out, not written as 0 */
    const struct { unsigned bit; const char *key; int64_t value; } fields[] = {
        {DT_PROP_TOTAL_MEM, "totalGlobalMem", (int64_t)p->total_global_mem},
        {DT_PROP_COMPUTE_MAJOR, "computeMajor", (int64_t)p->compute_major},
        {DT_PROP_COMPUTE_MINOR, "computeMinor", (int64_t)p->compute_minor},
        {DT_PROP_THREADS_PER_BLOCK, "maxThreadsPerBlock", (int64_t)p->max_threads_per_block},
        {DT_PROP_THREADS_PER_SM, "maxThreadsPerMultiprocessor", (int64_t)p->max_threads_per_sm},
        {DT_PROP_REGS_PER_BLOCK, "regsPerBlock", (int64_t)p->regs_per_block},
        {DT_PROP_WARP_SIZE, "warpSize", (int64_t)p->warp_size},
        {DT_PROP_SHARED_PER_BLOCK, "sharedMemPerBlock", (int64_t)p->shared_mem_per_block},
        {DT_PROP_SMS, "numSms", (int64_t)p->num_sms},
        {DT_PROP_REGS_PER_SM, "regsPerMultiprocessor", (int64_t)p->regs_per_sm},
        {DT_PROP_SHARED_PER_BLOCK_OPTIN, "sharedMemPerBlockOptin", (int64_t)p->shared_mem_per_block_optin},
        {DT_PROP_SHARED_PER_SM, "sharedMemPerMultiprocessor", (int64_t)p->shared_mem_per_sm},
    };
    size_t len = put(buf, size, 0, "{\"id\":%" PRIu32, p->id);
    if (!(p->absent & DT_PROP_NAME)) len = put(buf, size, len, ",\"name\":%s", name);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!(p->absent & fields[i].bit)) len = put(buf, size, len, ",\"%s\":%" PRId64, fields[i].key, fields[i].value);
    return put(buf, size, len, "}");
}

size_t dt__wr_device_props_list(const dt_device_props *devices, char *buf, size_t size)
{
    size_t len = 0;
    if (buf && size) buf[0] = 0;
    for (int d = 0; d < DT_MAX_DEVICES; d++) {
        const dt_device_props *p = &devices[d];
        if (!p->valid) continue;
        if (len) {
            if (buf && len + 1 < size) {
                buf[len] = ',';
                buf[len + 1] = 0;
            }
            len++;
        }
        size_t room = buf && len < size ? size - len : 0;
        len += dt__wr_device_props_json(p, room ? buf + len : NULL, room);
    }
    return len;
}

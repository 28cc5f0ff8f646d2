/* Kineto's "deviceProperties" entries: one JSON object per device the
   backend described, with the keys Kineto writes for CUDA devices. Written
   into the trace and handed to a Kineto plugin, so both say the same. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json_out.h"

size_t dt_device_props_json(const dt_device_props *p, char *buf, size_t size)
{
    char name[sizeof p->name * 6 + 2];
    char *end = dt_json_escape(name, p->name, strnlen(p->name, sizeof p->name));
    *end = 0;
    int n = snprintf(buf, size,
                     "{\"id\":%" PRIu32 ",\"name\":%s,\"totalGlobalMem\":%" PRIu64 ",\"computeMajor\":%d,"
                     "\"computeMinor\":%d,\"maxThreadsPerBlock\":%d,\"maxThreadsPerMultiprocessor\":%d,"
                     "\"regsPerBlock\":%d,\"warpSize\":%d,\"sharedMemPerBlock\":%" PRIu64 ",\"numSms\":%d,"
                     "\"regsPerMultiprocessor\":%d,\"sharedMemPerBlockOptin\":%" PRIu64
                     ",\"sharedMemPerMultiprocessor\":%" PRIu64 "}",
                     p->id, name, p->total_global_mem, p->compute_major, p->compute_minor,
                     p->max_threads_per_block, p->max_threads_per_sm, p->regs_per_block, p->warp_size,
                     p->shared_mem_per_block, p->num_sms, p->regs_per_sm, p->shared_mem_per_block_optin,
                     p->shared_mem_per_sm);
    return n < 0 ? 0 : (size_t)n;
}

size_t dt_session_device_properties(const dt_session *s, char *buf, size_t size)
{
    size_t len = 0;
    if (buf && size) buf[0] = 0;
    if (!s) return 0;
    for (int d = 0; d < DT_MAX_DEVICES; d++) {
        const dt_device_props *p = &s->devices[d];
        if (!p->valid) continue;
        if (len) {
            if (buf && len + 1 < size) {
                buf[len] = ',';
                buf[len + 1] = 0;
            }
            len++;
        }
        size_t room = buf && len < size ? size - len : 0;
        len += dt_device_props_json(p, room ? buf + len : NULL, room);
    }
    return len;
}

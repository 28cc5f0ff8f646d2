/*
 * roctracer's ROCTX callbacks, as devtrace's user ranges
 * (src/backends/roctracer.c enables them).
 */
#include "backends/roctracer.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ROCTX ranges: pushed ranges are devtrace's own user ranges on the calling
   thread (device work inside them is attributed to them); start/stop
   ranges, which may end on another thread, and marks are recorded as they
   end. Only pops of ranges pushed during the session pop devtrace's stack. */
#define ROCTX_DEPTH 256
static _Thread_local struct { uint64_t ids[ROCTX_DEPTH]; uint32_t depth; uint64_t generation; } t_roctx;

static pthread_mutex_t g_roctx_lock = PTHREAD_MUTEX_INITIALIZER;
#define ROCTX_OPEN 64
static struct { uint64_t id, start; char name[120]; uint32_t tid; int used; } g_roctx_open[ROCTX_OPEN];

static void roctx_push(dt_session *s, const char *message)
{
    __typeof__(t_roctx) *t = &t_roctx;
    if (t->generation != dt__sink_generation(s)) {
        t->depth = 0;
        t->generation = dt__sink_generation(s);
    }
    uint64_t id;
    if (dt_range_push(message ? message : "", &id) != DT_OK) {
        dt__core_note(s, "roctx", "a roctxRangePushA range could not be recorded: %s", dt_last_error());
        return;
    }
    if (t->depth < ROCTX_DEPTH) t->ids[t->depth] = id;
    t->depth++;
}

static void roctx_pop(dt_session *s)
{
    __typeof__(t_roctx) *t = &t_roctx;
    if (t->generation != dt__sink_generation(s) || t->depth == 0) return; /* pushed before the session */
    t->depth--;
    uint64_t top;
    if (t->depth >= ROCTX_DEPTH || dt_external_top(&top) != DT_OK || top != t->ids[t->depth]) {
        dt__core_note(s, "roctx", "roctxRangePop did not match the innermost range of its thread (ranges and "
                        "host operations interleaved): the range was not recorded");
        return;
    }
    dt_range_pop();
}

static void roctx_start(dt_session *s, uint64_t id, const char *message)
{
    pthread_mutex_lock(&g_roctx_lock);
    int slot = -1;
    for (int i = 0; i < ROCTX_OPEN && slot < 0; i++)
        if (!g_roctx_open[i].used) slot = i;
    if (slot >= 0) {
        g_roctx_open[slot].used = 1;
        g_roctx_open[slot].id = id;
        g_roctx_open[slot].start = dt__realtime_ns();
        g_roctx_open[slot].tid = dt__thread_id();
        snprintf(g_roctx_open[slot].name, sizeof g_roctx_open[slot].name, "%s", message ? message : "");
    }
    pthread_mutex_unlock(&g_roctx_lock);
    if (slot < 0)
        dt__core_note(s, "roctx", "more than %d roctxRangeStartA ranges open at once: the others are not "
                        "recorded", ROCTX_OPEN);
}

static void roctx_stop(dt_session *s, uint64_t id)
{
    char name[120];
    uint64_t start = 0;
    uint32_t tid = 0;
    pthread_mutex_lock(&g_roctx_lock);
    for (int i = 0; i < ROCTX_OPEN; i++)
        if (g_roctx_open[i].used && g_roctx_open[i].id == id) {
            g_roctx_open[i].used = 0;
            start = g_roctx_open[i].start;
            tid = g_roctx_open[i].tid;
            memcpy(name, g_roctx_open[i].name, sizeof name);
        }
    pthread_mutex_unlock(&g_roctx_lock);
    if (start) dt__corr_range_add(s, name, start, dt__realtime_ns(), tid);
}

void dt__rt_roctx_callback(uint32_t domain, uint32_t cid, const void *data, void *arg)
{
    (void)arg;
    dt_session *s = dt__active_session();
    if (domain != ACTIVITY_DOMAIN_ROCTX || !data || !s) return;
    const char *message;
    uint64_t id;
    memcpy(&message, (const uint8_t *)data + DT_RT_ROCTX_MESSAGE_OFFSET, sizeof message);
    memcpy(&id, (const uint8_t *)data + DT_RT_ROCTX_ID_OFFSET, sizeof id);
    dt__thread_note(s);
    switch (cid) {
    case DT_RT_ROCTX_RANGE_PUSH: roctx_push(s, message); break;
    case DT_RT_ROCTX_RANGE_POP: roctx_pop(s); break;
    case DT_RT_ROCTX_RANGE_START: roctx_start(s, id, message); break;
    case DT_RT_ROCTX_RANGE_STOP: roctx_stop(s, id); break;
    case DT_RT_ROCTX_MARK: {
        uint64_t now = dt__realtime_ns();
        dt__corr_range_add(s, message, now, now, dt__thread_id());
        break;
    }
    default: break;
    }
}

void dt__rt_roctx_reset(void)
{
    pthread_mutex_lock(&g_roctx_lock);
    memset(g_roctx_open, 0, sizeof g_roctx_open);
    pthread_mutex_unlock(&g_roctx_lock);
}

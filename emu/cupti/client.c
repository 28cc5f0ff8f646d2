/*
 * The CUPTI emulator's client: a CUPTI client of its own, as
 * torch.profiler's Kineto is one, for the tests of devtrace beside it. A
 * library that links libcupti.so.13 (the emulator, by its soname) and that
 * a program loads with RTLD_LOCAL, as Python loads torch; its CUPTI calls
 * are resolved as libtorch_cuda.so's are, so a preloaded library stands
 * between them and CUPTI as it would between Kineto and CUPTI.
 *
 * It records as Kineto records, in one of two modes:
 *   EMU_CUPTI_CLIENT_SUBSCRIBING   torch 2.11's Kineto: it subscribes when
 *       it starts (cuptiSubscribe_v2, as "Kineto-like client"), and when
 *       refused records no device activity at all (Kineto falls back to CPU
 *       only); otherwise as below;
 *   EMU_CUPTI_CLIENT_NO_SUBSCRIBE  Kineto since kineto#1250: it never
 *       subscribes. Starting, it registers a timestamp callback of its own
 *       (a counter of 2 ticks per ns since boot, as Kineto's TSC callback
 *       counts CPU cycles), its buffer callbacks, and enables concurrent
 *       kernels and memory copies; stopping, it flushes and disables them.
 * Every call's result is kept (emu_cupti_client_results).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backends/cupti_family_abi.h"

enum { EMU_CUPTI_CLIENT_SUBSCRIBING = 1, EMU_CUPTI_CLIENT_NO_SUBSCRIBE = 2 };

int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, dt_cf_subscriber_params *params);
int cuptiUnsubscribe(void *subscriber);
int cuptiActivityRegisterCallbacks(void (*request)(uint8_t **, size_t *, size_t *),
                                   void (*complete)(void *, uint32_t, uint8_t *, size_t, size_t));
int cuptiActivityRegisterTimestampCallback(uint64_t (*fn)(void));
int cuptiActivityEnable(uint32_t kind);
int cuptiActivityDisable(uint32_t kind);
int cuptiActivityFlushAll(uint32_t flag);
int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record);

#define EMU_CLIENT_EXPORT __attribute__((visibility("default")))
EMU_CLIENT_EXPORT int emu_cupti_client_start(int mode, char *holder, size_t holder_len);
EMU_CLIENT_EXPORT int emu_cupti_client_stop(void);
EMU_CLIENT_EXPORT const char *emu_cupti_client_results(void);

static _Alignas(8) uint8_t g_buffers[4][1 << 16];
static int g_next_buffer;
static int g_kernels;
static void *g_subscriber;
static int g_started;
static struct {
    int subscribe, timestamp, register_callbacks, enable, disable, flush;
} g_result = {-1, -1, -1, -1, -1, -1};
static char g_summary[256];

static const uint32_t g_kinds[] = {DT_CF_KIND_CONCURRENT_KERNEL, DT_CF_KIND_MEMCPY};

static void callback(void *userdata, uint32_t domain, uint32_t cbid, const void *data) {}

static void request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = g_buffers[g_next_buffer++ % 4];
    *size = sizeof g_buffers[0];
    *max_records = 0;
}

static void complete(void *context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    void *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == DT_CF_SUCCESS) {
        uint32_t kind;
        memcpy(&kind, rec, sizeof kind);
        g_kernels += kind == DT_CF_KIND_CONCURRENT_KERNEL;
    }
}

/* Kineto's TSC callback counts CPU cycles, not nanoseconds: here 2 ticks a
   nanosecond of CLOCK_MONOTONIC_RAW. */
static uint64_t ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) * 2u;
}

/* The first result that is not success of this start's calls, or 0. */
int emu_cupti_client_start(int mode, char *holder, size_t holder_len)
{
    if (mode == EMU_CUPTI_CLIENT_SUBSCRIBING) {
        dt_cf_subscriber_params p = {sizeof p, "Kineto-like client", holder, holder_len};
        g_result.subscribe = cuptiSubscribe_v2(&g_subscriber, (void *)callback, NULL, &p);
        if (g_result.subscribe != DT_CF_SUCCESS) {
            g_subscriber = NULL;
            return g_result.subscribe; /* Kineto records CPU activity only */
        }
    }
    g_started = 1;
    g_result.timestamp = cuptiActivityRegisterTimestampCallback(ticks);
    g_result.register_callbacks = cuptiActivityRegisterCallbacks(request, complete);
    g_result.enable = DT_CF_SUCCESS;
    for (size_t i = 0; i < sizeof g_kinds / sizeof *g_kinds; i++) {
        int r = cuptiActivityEnable(g_kinds[i]);
        if (r != DT_CF_SUCCESS) g_result.enable = r;
    }
    if (g_result.timestamp != DT_CF_SUCCESS) return g_result.timestamp;
    if (g_result.register_callbacks != DT_CF_SUCCESS) return g_result.register_callbacks;
    return g_result.enable;
}

/* The kernels the client got. */
int emu_cupti_client_stop(void)
{
    if (!g_started) return 0;
    g_result.flush = cuptiActivityFlushAll(DT_CF_FLAG_FLUSH_FORCED);
    g_result.disable = DT_CF_SUCCESS;
    for (size_t i = 0; i < sizeof g_kinds / sizeof *g_kinds; i++) {
        int r = cuptiActivityDisable(g_kinds[i]);
        if (r != DT_CF_SUCCESS) g_result.disable = r;
    }
    if (g_subscriber) cuptiUnsubscribe(g_subscriber);
    g_started = 0;
    return g_kernels;
}

/* "subscribe=... timestamp=... register=... enable=... disable=...
   kernels=N": each call's result (-1: not made). */
const char *emu_cupti_client_results(void)
{
    snprintf(g_summary, sizeof g_summary, "subscribe=%d timestamp=%d register=%d enable=%d disable=%d kernels=%d",
             g_result.subscribe, g_result.timestamp, g_result.register_callbacks, g_result.enable, g_result.disable,
             g_kernels);
    return g_summary;
}

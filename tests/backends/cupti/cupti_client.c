/*
 * A CUPTI client of its own, as torch.profiler's Kineto is one: a library
 * that links libcupti (here the emulator, by its soname) and that the
 * program loads with RTLD_LOCAL, as Python loads torch. It subscribes with
 * cuptiSubscribe_v2, and when it may, registers its buffers, enables
 * kernels and counts those it gets. For tests/backends/cupti/test_cupti_handover.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cupti_family_abi.h"

int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, dt_cf_subscriber_params *params);
int cuptiUnsubscribe(void *subscriber);
int cuptiActivityRegisterCallbacks(void (*request)(uint8_t **, size_t *, size_t *),
                                   void (*complete)(void *, uint32_t, uint8_t *, size_t, size_t));
int cuptiActivityEnable(uint32_t kind);
int cuptiActivityDisable(uint32_t kind);
int cuptiActivityFlushAll(uint32_t flag);
int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record);

__attribute__((visibility("default"))) int dt_test_client_start(char *holder, size_t holder_len);
__attribute__((visibility("default"))) int dt_test_client_stop(void);

static _Alignas(8) uint8_t g_buffers[4][1 << 16];
static int g_next_buffer;
static int g_kernels;
static void *g_subscriber;

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

/* The subscribe's result; holder: who holds CUPTI when refused. */
int dt_test_client_start(char *holder, size_t holder_len)
{
    dt_cf_subscriber_params p = {sizeof p, "test client", holder, holder_len};
    int r = cuptiSubscribe_v2(&g_subscriber, (void *)callback, NULL, &p);
    if (r != DT_CF_SUCCESS) return r;
    cuptiActivityRegisterCallbacks(request, complete);
    cuptiActivityEnable(DT_CF_KIND_CONCURRENT_KERNEL);
    return r;
}

/* The kernels the client got. */
int dt_test_client_stop(void)
{
    if (!g_subscriber) return 0;
    cuptiActivityFlushAll(DT_CF_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(DT_CF_KIND_CONCURRENT_KERNEL);
    cuptiUnsubscribe(g_subscriber);
    return g_kernels;
}

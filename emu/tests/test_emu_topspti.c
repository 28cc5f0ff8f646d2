/*
 * The TOPSPTI emulator against a minimal client written here: exact record
 * counts, correlation, stream ordering, asynchronous delivery, the
 * single-subscriber rule, every fault, and the library variants.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/topspti_abi.h"
#include "devtrace_emu.h"

/* Prototypes of the entry points (the ABI header declares only types). */
TopsptiResult topsptiActivityRegisterCallbacks(Topspti_BuffersCallbackRequestFunc,
                                               Topspti_BuffersCallbackCompleteFunc);
TopsptiResult topsptiActivityEnable(Topspti_ActivityKind);
TopsptiResult topsptiActivityDisable(Topspti_ActivityKind);
TopsptiResult topsptiActivityFlushAll(uint32_t);
TopsptiResult topsptiActivityGetNextRecord(uint8_t *, size_t, Topspti_Activity **);
TopsptiResult topsptiGetTimestamp(uint64_t *);
TopsptiResult topsptiSubscribe(Topspti_SubscriberHandle *, Topspti_CallbackFunc, void *);
TopsptiResult topsptiUnsubscribe(Topspti_SubscriberHandle);
TopsptiResult topsptiEnableDomain(uint32_t, Topspti_SubscriberHandle, Topspti_CallbackDomain);
TopsptiResult topsptiEnableAllDomains(uint32_t, Topspti_SubscriberHandle);
TopsptiResult topsptiGetCallbackName(Topspti_CallbackDomain, uint32_t, const char **);
TopsptiResult topsptiGetVersion(uint32_t *);
TopsptiResult topsptiActivityGetNumDroppedRecords(size_t *);
TopsptiResult topsptiSetThreadIdType(Topspti_ActivityThreadIdType);
TopsptiResult topsptiGetThreadIdType(Topspti_ActivityThreadIdType *);
TopsptiResult topsptiActivityFlushPeriod(uint32_t);

#include "dt_check.h"

/* ------------------------------------------------------------------ */
/* A small client                                                      */
/* ------------------------------------------------------------------ */
#define MAX_KEPT 4096

typedef struct kept {
    uint32_t kind;
    uint64_t start, end;
    uint32_t correlation, stream, device, thread, cbid;
    unsigned buffer_seq, index; /* which delivered buffer, position overall */
} kept;

static struct client {
    pthread_mutex_t lock;
    size_t buffer_size;
    int refuse_requests;          /* next N requests get no buffer */
    unsigned requests, buffers;
    unsigned counts[TOPSPTI_ACTIVITY_KIND_COUNT];
    unsigned unknown_kind, malformed;
    kept recs[MAX_KEPT];
    unsigned nrec;
    pthread_t delivery_thread[64];
    unsigned ndelivery;
    unsigned enter, exit_, mismatched_exit;
    uint32_t enter_corr[MAX_KEPT];
    unsigned nenter;
} g_client = { .lock = PTHREAD_MUTEX_INITIALIZER, .buffer_size = 1 << 16 };

static void on_request(uint8_t **buffer, size_t *size, size_t *max)
{
    pthread_mutex_lock(&g_client.lock);
    g_client.requests++;
    int refuse = g_client.refuse_requests > 0;
    if (refuse)
        g_client.refuse_requests--;
    size_t sz = g_client.buffer_size;
    pthread_mutex_unlock(&g_client.lock);
    *max = 0;
    if (refuse) {
        *buffer = NULL;
        *size = 0;
        return;
    }
    *buffer = aligned_alloc(8, sz);
    *size = sz;
}

static void on_complete(uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    pthread_mutex_lock(&g_client.lock);
    unsigned seq = g_client.buffers++;
    if (g_client.ndelivery < 64)
        g_client.delivery_thread[g_client.ndelivery++] = pthread_self();
    Topspti_Activity *r = NULL;
    TopsptiResult st;
    while ((st = topsptiActivityGetNextRecord(buffer, valid, &r)) == TOPSPTI_SUCCESS) {
        uint32_t kind = (uint32_t)r->kind;
        if (kind < TOPSPTI_ACTIVITY_KIND_COUNT)
            g_client.counts[kind]++;
        if (g_client.nrec >= MAX_KEPT)
            continue;
        kept *k = &g_client.recs[g_client.nrec];
        memset(k, 0, sizeof(*k));
        k->kind = kind;
        k->buffer_seq = seq;
        k->index = g_client.nrec;
        switch (r->kind) {
        case TOPSPTI_ACTIVITY_KIND_KERNEL: {
            const Topspti_ActivityKernel *x = (const void *)r;
            k->start = x->start; k->end = x->end; k->correlation = x->correlationId;
            k->stream = x->streamId; k->device = x->deviceId;
            break;
        }
        case TOPSPTI_ACTIVITY_KIND_MEMCPY: {
            const Topspti_ActivityMemcpy *x = (const void *)r;
            k->start = x->start; k->end = x->end; k->correlation = x->correlationId;
            k->stream = x->streamId; k->device = x->deviceId;
            break;
        }
        case TOPSPTI_ACTIVITY_KIND_MEMSET: {
            const Topspti_ActivityMemset *x = (const void *)r;
            k->start = x->start; k->end = x->end; k->correlation = x->correlationId;
            k->stream = x->streamId; k->device = x->deviceId;
            break;
        }
        default: {
            const Topspti_ActivityAPI *x = (const void *)r;
            k->start = x->start; k->end = x->end; k->correlation = x->correlationId;
            k->thread = x->threadId; k->cbid = x->cbid;
            break;
        }
        }
        g_client.nrec++;
    }
    if (st == TOPSPTI_ERROR_INVALID_KIND)
        g_client.unknown_kind++;
    else if (st != TOPSPTI_ERROR_MAX_LIMIT_REACHED)
        g_client.malformed++;
    pthread_mutex_unlock(&g_client.lock);
    free(buffer);
}

static void on_callback(void *userdata, Topspti_CallbackDomain domain, Topspti_CallbackId cbid,
                        const void *data)
{
    (void)userdata;
    (void)domain;
    (void)cbid;
    const Topspti_CallbackData *d = data;
    pthread_mutex_lock(&g_client.lock);
    if (d->callbackSite == TOPSPTI_API_ENTER) {
        g_client.enter++;
        *d->correlationData = d->correlationId;
        if (g_client.nenter < MAX_KEPT)
            g_client.enter_corr[g_client.nenter++] = d->correlationId;
    } else {
        g_client.exit_++;
        if (*d->correlationData != d->correlationId)
            g_client.mismatched_exit++;
    }
    pthread_mutex_unlock(&g_client.lock);
}

static Topspti_SubscriberHandle g_sub;

static void client_reset(void)
{
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    size_t dropped;
    topsptiActivityGetNumDroppedRecords(&dropped);
    emu_faults_clear();
    emu_stats_reset();
    pthread_mutex_lock(&g_client.lock);
    size_t bs = g_client.buffer_size;
    memset((char *)&g_client + sizeof(g_client.lock), 0, sizeof(g_client) - sizeof(g_client.lock));
    g_client.buffer_size = bs;
    pthread_mutex_unlock(&g_client.lock);
}

static const int G8[3] = { 8, 1, 1 }, B256[3] = { 256, 1, 1 };

static const kept *find_api(uint32_t corr)
{
    for (unsigned i = 0; i < g_client.nrec; i++)
        if (g_client.recs[i].kind == TOPSPTI_ACTIVITY_KIND_RUNTIME && g_client.recs[i].correlation == corr)
            return &g_client.recs[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */
static void test_counts_and_correlation(void)
{
    client_reset();
    for (int i = 0; i < 10; i++)
        CHECK_EQ(emu_launch_kernel(0, i % 2, "_ZN5torch3addEv", G8, B256, 20000), 0);
    CHECK_EQ(emu_memcpy(0, 0, EMU_COPY_HTOD, 1 << 20, 30000, 0), 0);
    CHECK_EQ(emu_memcpy(0, 1, EMU_COPY_DTOH, 4096, 10000, 1), 0);
    CHECK_EQ(emu_memcpy(1, 0, EMU_COPY_DTOD, 4096, 10000, 1), 0);
    CHECK_EQ(emu_memset(0, 0, 256, 0, 5000, 0), 0);
    CHECK_EQ(emu_memset(0, 1, 256, 7, 5000, 1), 0);
    CHECK_EQ(emu_synchronize(0, -1), 0);
    CHECK_EQ(topsptiActivityFlushAll(0), TOPSPTI_SUCCESS);

    emu_stats st;
    emu_stats_get(&st);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 10);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_MEMCPY], 3);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_MEMSET], 2);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 16);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_DRIVER], 0);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 10);
    CHECK_EQ(st.records[EMU_KIND_MEMCPY], 3);
    CHECK_EQ(st.records[EMU_KIND_MEMSET], 2);
    CHECK_EQ(st.records[EMU_KIND_RUNTIME], 16);
    CHECK_EQ(st.records[EMU_KIND_DRIVER], 0);
    CHECK_EQ(st.api_calls, 16);
    CHECK_EQ(st.records_pending, 0);
    CHECK_EQ(g_client.enter, 16);
    CHECK_EQ(g_client.exit_, 16);
    CHECK_EQ(g_client.mismatched_exit, 0);
    CHECK_EQ(g_client.malformed + g_client.unknown_kind, 0);

    /* every device record pairs with exactly one API record that starts
       no later than it; work on one stream never overlaps */
    uint64_t last_end[2][2] = { { 0, 0 }, { 0, 0 } };
    unsigned device_records = 0;
    for (unsigned i = 0; i < g_client.nrec; i++) {
        const kept *k = &g_client.recs[i];
        if (k->kind == TOPSPTI_ACTIVITY_KIND_RUNTIME)
            continue;
        device_records++;
        const kept *api = find_api(k->correlation);
        CHECK(api != NULL);
        if (api)
            CHECK(api->start <= k->start);
        CHECK(k->start > 0 && k->end >= k->start);
        CHECK(k->device < 2 && k->stream < 2);
    }
    CHECK_EQ(device_records, 15);
    /* records arrive in completion order per stream: check serialization */
    for (unsigned i = 0; i < g_client.nrec; i++) {
        const kept *k = &g_client.recs[i];
        if (k->kind == TOPSPTI_ACTIVITY_KIND_RUNTIME)
            continue;
        CHECK(k->start >= last_end[k->device][k->stream]);
        last_end[k->device][k->stream] = k->end;
    }
    /* a synchronous copy's API call lasts until the copy has ended */
    for (unsigned i = 0; i < g_client.nrec; i++) {
        const kept *k = &g_client.recs[i];
        if (k->kind == TOPSPTI_ACTIVITY_KIND_RUNTIME && k->cbid == TOPSPTI_RUNTIME_TRACE_CBID_topsMemcpyHtoD) {
            for (unsigned j = 0; j < g_client.nrec; j++)
                if (g_client.recs[j].kind == TOPSPTI_ACTIVITY_KIND_MEMCPY && g_client.recs[j].correlation == k->correlation)
                    CHECK(k->end >= g_client.recs[j].end);
        }
    }
    /* the callback's correlation ids are the records' */
    for (unsigned i = 0; i < g_client.nenter; i++)
        CHECK(find_api(g_client.enter_corr[i]) != NULL);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_single_subscriber(void)
{
    Topspti_SubscriberHandle second = NULL;
    CHECK_EQ(topsptiSubscribe(&second, on_callback, NULL), TOPSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    CHECK(second == NULL);
    CHECK(topsptiUnsubscribe((Topspti_SubscriberHandle)(void *)&second) != TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiUnsubscribe(g_sub), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiSubscribe(&second, on_callback, NULL), TOPSPTI_SUCCESS);
    g_sub = second;
    CHECK_EQ(topsptiEnableDomain(1, g_sub, TOPSPTI_CB_DOMAIN_RUNTIME_API), TOPSPTI_SUCCESS);
}

static void test_async_delivery(void)
{
    client_reset();
    pthread_mutex_lock(&g_client.lock);
    g_client.buffer_size = 4 * sizeof(Topspti_ActivityAPI);
    pthread_mutex_unlock(&g_client.lock);
    for (int i = 0; i < 40; i++)
        emu_memset(0, 2, 64, 0, 0, 1);
    /* full buffers are delivered by the emulator's thread without a flush;
       wait for it (bounded) rather than assume a time */
    for (int i = 0; i < 2000; i++) {
        emu_stats st;
        emu_stats_get(&st);
        if (st.buffers_completed_worker > 0)
            break;
        usleep(1000);
    }
    emu_stats st;
    emu_stats_get(&st);
    CHECK(st.buffers_completed_worker > 0);
    pthread_mutex_lock(&g_client.lock);
    CHECK(g_client.ndelivery > 0);
    if (g_client.ndelivery > 0)
        CHECK(!pthread_equal(g_client.delivery_thread[0], pthread_self()));
    pthread_mutex_unlock(&g_client.lock);
    CHECK_EQ(topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED), TOPSPTI_SUCCESS);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_MEMSET], 40);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 40);
    g_client.buffer_size = 1 << 16;
    pthread_mutex_unlock(&g_client.lock);
}

static void test_flush_period(void)
{
    client_reset();
    emu_stats st;
    emu_stats_get(&st);
    uint64_t before = st.buffers_completed_worker;
    CHECK_EQ(topsptiActivityFlushPeriod(2), TOPSPTI_SUCCESS);
    emu_memset(0, 2, 64, 0, 0, 1);
    /* one small record fills no buffer: only the period completes it */
    for (int i = 0; i < 2000; i++) {
        emu_stats_get(&st);
        if (st.buffers_completed_worker > before)
            break;
        usleep(1000);
    }
    CHECK(st.buffers_completed_worker > before);
    CHECK_EQ(topsptiActivityFlushPeriod(0), TOPSPTI_SUCCESS);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_MEMSET], 1);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 1);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_domains(void)
{
    client_reset();
    CHECK_EQ(topsptiEnableDomain(0, g_sub, TOPSPTI_CB_DOMAIN_RUNTIME_API), TOPSPTI_SUCCESS);
    emu_synchronize(0, 0);
    CHECK_EQ(topsptiEnableDomain(1, g_sub, TOPSPTI_CB_DOMAIN_RUNTIME_API), TOPSPTI_SUCCESS);
    emu_synchronize(0, 0);
    CHECK_EQ(topsptiEnableDomain(1, g_sub, (Topspti_CallbackDomain)9), TOPSPTI_ERROR_INVALID_PARAMETER);
    CHECK(topsptiEnableDomain(1, NULL, TOPSPTI_CB_DOMAIN_RUNTIME_API) != TOPSPTI_SUCCESS);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.enter, 1);
    CHECK_EQ(g_client.exit_, 1);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 2);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_timestamp_faults(void)
{
    client_reset();
    CHECK_EQ(emu_set_faults("zero_timestamps=2, reversed_timestamps=3,long_timestamps=1"), 0);
    CHECK_EQ(emu_set_faults("bogus=1"), EMU_EINVAL);
    CHECK_EQ(emu_set_faults("late=x"), EMU_EINVAL);
    for (int i = 0; i < 10; i++)
        emu_launch_kernel(0, 3, "k", G8, B256, 1000);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    emu_stats st;
    emu_stats_get(&st);
    unsigned zero = 0, reversed = 0, lng = 0, good = 0;
    pthread_mutex_lock(&g_client.lock);
    for (unsigned i = 0; i < g_client.nrec; i++) {
        const kept *k = &g_client.recs[i];
        if (k->kind != TOPSPTI_ACTIVITY_KIND_KERNEL)
            continue;
        if (k->start == 0 || k->end == 0)
            zero++;
        else if (k->end < k->start)
            reversed++;
        else if (k->end - k->start > 3600ull * 1000000000ull)
            lng++;
        else
            good++;
    }
    pthread_mutex_unlock(&g_client.lock);
    CHECK_EQ(zero, 2);
    CHECK_EQ(reversed, 3);
    CHECK_EQ(lng, 1);
    CHECK_EQ(good, 4);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 4);
    CHECK_EQ(st.faulted[EMU_FAULT_ZERO_TIMESTAMPS], 2);
    CHECK_EQ(st.faulted[EMU_FAULT_REVERSED_TIMESTAMPS], 3);
    CHECK_EQ(st.faulted[EMU_FAULT_LONG_TIMESTAMPS], 1);
}

static void test_bad_records(void)
{
    client_reset();
    CHECK_EQ(emu_fault_arm(EMU_FAULT_MALFORMED, 2), 0);
    CHECK_EQ(emu_fault_arm(EMU_FAULT_UNKNOWN_KIND, 3), 0);
    for (int i = 0; i < 6; i++)
        emu_launch_kernel(1, 0, "k", G8, B256, 1000);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    emu_stats st;
    emu_stats_get(&st);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.malformed, 2);
    CHECK_EQ(g_client.unknown_kind, 3);
    /* nothing else is lost: the bad records end their buffers */
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 6);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 6);
    pthread_mutex_unlock(&g_client.lock);
    CHECK_EQ(st.faulted[EMU_FAULT_MALFORMED], 2);
    CHECK_EQ(st.faulted[EMU_FAULT_UNKNOWN_KIND], 3);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 6);
}

static void test_late_and_out_of_order(void)
{
    client_reset();
    emu_fault_arm(EMU_FAULT_LATE, 2);
    emu_launch_kernel(0, 4, "late", G8, B256, 1000);
    emu_launch_kernel(0, 4, "late", G8, B256, 1000);
    emu_synchronize(0, 4);
    /* a non-forced flush delivers the late records too, in a later buffer */
    topsptiActivityFlushAll(0);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 2);
    for (unsigned i = 0; i < g_client.nrec; i++) {
        const kept *k = &g_client.recs[i];
        if (k->kind != TOPSPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const kept *api = find_api(k->correlation);
        CHECK(api != NULL);
        if (api)
            CHECK(k->buffer_seq > api->buffer_seq);
    }
    pthread_mutex_unlock(&g_client.lock);

    /* with nothing else in any buffer, a late record still arrives */
    client_reset();
    topsptiActivityDisable(TOPSPTI_ACTIVITY_KIND_RUNTIME);
    emu_fault_arm(EMU_FAULT_LATE, 1);
    emu_launch_kernel(0, 4, "late_alone", G8, B256, 1000);
    emu_synchronize(0, 4);
    topsptiActivityFlushAll(0);
    topsptiActivityEnable(TOPSPTI_ACTIVITY_KIND_RUNTIME);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 1);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 0);
    pthread_mutex_unlock(&g_client.lock);

    client_reset();
    emu_fault_arm(EMU_FAULT_OUT_OF_ORDER, 1);
    emu_launch_kernel(0, 4, "ooo", G8, B256, 1000000000ull);
    topsptiActivityFlushAll(0);
    pthread_mutex_lock(&g_client.lock);
    /* delivered before its work has finished, and before its API record */
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 1);
    CHECK(g_client.nrec == 2 && g_client.recs[0].kind == TOPSPTI_ACTIVITY_KIND_KERNEL);
    pthread_mutex_unlock(&g_client.lock);
    emu_stats st;
    emu_stats_get(&st);
    CHECK_EQ(st.faulted[EMU_FAULT_OUT_OF_ORDER], 1);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 1);
}

static void test_unfinished_work_waits_for_forced_flush(void)
{
    client_reset();
    /* a kernel that runs for 10 s of device time: a plain flush holds it,
       a forced flush delivers it */
    emu_launch_kernel(1, 5, "long", G8, B256, 10ull * 1000000000ull);
    topsptiActivityFlushAll(0);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 0);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 1);
    pthread_mutex_unlock(&g_client.lock);
    emu_stats st;
    emu_stats_get(&st);
    CHECK_EQ(st.records_pending, 1);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 1);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_no_callbacks(void)
{
    client_reset();
    emu_fault_arm(EMU_FAULT_NO_CALLBACKS, 2);
    for (int i = 0; i < 5; i++)
        emu_launch_kernel(0, 6, "cb", G8, B256, 100);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    emu_stats st;
    emu_stats_get(&st);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.enter, 3);
    CHECK_EQ(g_client.exit_, 3);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 5);
    pthread_mutex_unlock(&g_client.lock);
    CHECK_EQ(st.faulted[EMU_FAULT_NO_CALLBACKS], 2);
    CHECK_EQ(st.callbacks_delivered, 6);
}

static void test_dropped_records(void)
{
    client_reset();
    size_t dropped = 99;
    CHECK_EQ(topsptiActivityGetNumDroppedRecords(&dropped), TOPSPTI_SUCCESS);
    CHECK_EQ(dropped, 0);
    emu_set_faults("vendor_dropped=5 no_buffer=4");
    for (int i = 0; i < 5; i++)
        emu_launch_kernel(0, 7, "d", G8, B256, 100);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CHECK_EQ(topsptiActivityGetNumDroppedRecords(&dropped), TOPSPTI_SUCCESS);
    CHECK_EQ(dropped, 9);
    CHECK_EQ(topsptiActivityGetNumDroppedRecords(&dropped), TOPSPTI_SUCCESS);
    CHECK_EQ(dropped, 0);
    emu_stats st;
    emu_stats_get(&st);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL] + g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 6);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], st.records[EMU_KIND_KERNEL]);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], st.records[EMU_KIND_RUNTIME]);
    pthread_mutex_unlock(&g_client.lock);
    CHECK_EQ(st.faulted[EMU_FAULT_NO_BUFFER], 4);
    CHECK_EQ(st.faulted[EMU_FAULT_VENDOR_DROPPED], 5);
    CHECK_EQ(st.dropped_reported, 9);

    /* the client itself gives no buffer: those records are dropped, counted */
    client_reset();
    pthread_mutex_lock(&g_client.lock);
    g_client.refuse_requests = 3;
    pthread_mutex_unlock(&g_client.lock);
    for (int i = 0; i < 4; i++)
        emu_launch_kernel(0, 7, "d", G8, B256, 100);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CHECK_EQ(topsptiActivityGetNumDroppedRecords(&dropped), TOPSPTI_SUCCESS);
    CHECK_EQ(dropped, 3);
    emu_stats_get(&st);
    CHECK_EQ(st.dropped_no_buffer, 3);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL] + g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME] + 3, 8);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_iterator_bounds(void)
{
    /* a buffer holding exactly one API record plus 8 bytes of a second */
    size_t n = sizeof(Topspti_ActivityAPI) + 8;
    uint8_t *buf = malloc(n);
    Topspti_ActivityAPI a;
    memset(&a, 0, sizeof(a));
    a.kind = TOPSPTI_ACTIVITY_KIND_RUNTIME;
    memcpy(buf, &a, sizeof(a));
    memcpy(buf + sizeof(a), &a, 8);
    Topspti_Activity *r = NULL;
    CHECK_EQ(topsptiActivityGetNextRecord(buf, 0, &r), TOPSPTI_ERROR_MAX_LIMIT_REACHED);
    r = NULL;
    CHECK_EQ(topsptiActivityGetNextRecord(buf, sizeof(a), &r), TOPSPTI_SUCCESS);
    CHECK(r == (Topspti_Activity *)(void *)buf);
    CHECK_EQ(topsptiActivityGetNextRecord(buf, sizeof(a), &r), TOPSPTI_ERROR_MAX_LIMIT_REACHED);
    r = NULL;
    CHECK_EQ(topsptiActivityGetNextRecord(buf, n, &r), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiActivityGetNextRecord(buf, n, &r), TOPSPTI_ERROR_INVALID_PARAMETER);
    /* 3 trailing bytes: not even a kind */
    r = NULL;
    CHECK_EQ(topsptiActivityGetNextRecord(buf, sizeof(a) + 3, &r), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiActivityGetNextRecord(buf, sizeof(a) + 3, &r), TOPSPTI_ERROR_INVALID_PARAMETER);
    /* kind 0 is not a record kind */
    uint32_t zero[4] = { 0, 0, 0, 0 };
    memcpy(buf, zero, sizeof(zero));
    r = NULL;
    CHECK_EQ(topsptiActivityGetNextRecord(buf, n, &r), TOPSPTI_ERROR_INVALID_KIND);
    CHECK_EQ(topsptiActivityGetNextRecord(NULL, n, &r), TOPSPTI_ERROR_INVALID_PARAMETER);
    free(buf);
}

static void test_clock(void)
{
    struct timespec ts;
    CHECK_EQ(emu_set_clock(1000000000, 100.0), 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    long double before = (long double)ts.tv_sec * 1e9L + ts.tv_nsec;
    uint64_t dev = 0;
    CHECK_EQ(topsptiGetTimestamp(&dev), TOPSPTI_SUCCESS);
    clock_gettime(CLOCK_REALTIME, &ts);
    long double after = (long double)ts.tv_sec * 1e9L + ts.tv_nsec;
    long double lo = before * (1.0L + 100e-6L) + 1e9L, hi = after * (1.0L + 100e-6L) + 1e9L;
    CHECK((long double)dev >= lo - 1 && (long double)dev <= hi + 1);
    CHECK_EQ(emu_set_clock(0, 0.0), 0);
    CHECK_EQ(emu_set_clock(0, -2e6), EMU_EINVAL);
}

static void test_thread_id_type(void)
{
    client_reset();
    Topspti_ActivityThreadIdType t = 99;
    CHECK_EQ(topsptiGetThreadIdType(&t), TOPSPTI_SUCCESS);
    CHECK_EQ(t, TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
    emu_synchronize(0, 0);
    CHECK_EQ(topsptiSetThreadIdType(TOPSPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), TOPSPTI_SUCCESS);
    emu_synchronize(0, 0);
    CHECK_EQ(topsptiSetThreadIdType((Topspti_ActivityThreadIdType)7), TOPSPTI_ERROR_INVALID_PARAMETER);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.nrec, 2);
    CHECK_EQ(g_client.recs[0].thread, (uint32_t)(uintptr_t)pthread_self());
    CHECK_EQ(g_client.recs[1].thread, (uint32_t)syscall(SYS_gettid));
    CHECK_EQ(g_client.recs[0].cbid, TOPSPTI_RUNTIME_TRACE_CBID_topsStreamSynchronize);
    pthread_mutex_unlock(&g_client.lock);
    topsptiSetThreadIdType(TOPSPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
}

static void test_disabled_kind(void)
{
    client_reset();
    CHECK_EQ(topsptiActivityDisable(TOPSPTI_ACTIVITY_KIND_KERNEL), TOPSPTI_SUCCESS);
    emu_launch_kernel(0, 0, "off", G8, B256, 100);
    CHECK_EQ(topsptiActivityEnable(TOPSPTI_ACTIVITY_KIND_KERNEL), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiActivityEnable((Topspti_ActivityKind)77), TOPSPTI_ERROR_INVALID_KIND);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    emu_stats st;
    emu_stats_get(&st);
    CHECK_EQ(st.records[EMU_KIND_KERNEL], 0);
    CHECK_EQ(st.records[EMU_KIND_RUNTIME], 1);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 0);
    pthread_mutex_unlock(&g_client.lock);
}

static void test_bad_arguments(void)
{
    CHECK_EQ(emu_launch_kernel(EMU_MAX_DEVICES, 0, "x", G8, B256, 1), EMU_EINVAL);
    CHECK_EQ(emu_launch_kernel(0, EMU_MAX_STREAMS, "x", G8, B256, 1), EMU_EINVAL);
    CHECK_EQ(emu_memcpy(0, 0, 99, 1, 1, 0), EMU_EINVAL);
    CHECK_EQ(emu_synchronize(0, -2), EMU_EINVAL);
    CHECK_EQ(emu_set_device_count(0), EMU_EINVAL);
    CHECK(emu_fault_name(EMU_FAULT_COUNT) == NULL);
    CHECK(strcmp(emu_fault_name(EMU_FAULT_LATE), "late") == 0);
    CHECK(strcmp(emu_personality(), "topspti") == 0);
    uint32_t v = 0;
    CHECK_EQ(topsptiGetVersion(&v), TOPSPTI_SUCCESS);
    CHECK_EQ(v, 4);
    const char *name = NULL;
    CHECK_EQ(topsptiGetCallbackName(TOPSPTI_CB_DOMAIN_RUNTIME_API, TOPSPTI_RUNTIME_TRACE_CBID_topsLaunchKernel,
                                    &name), TOPSPTI_SUCCESS);
    CHECK(name && strcmp(name, "topsLaunchKernel") == 0);
    CHECK(topsptiGetCallbackName(TOPSPTI_CB_DOMAIN_RUNTIME_API, 5000, &name) != TOPSPTI_SUCCESS);
}

static void *thread_body(void *arg)
{
    int stream = (int)(intptr_t)arg;
    for (int i = 0; i < 200; i++)
        emu_launch_kernel(stream % 2, stream, "t", G8, B256, 10);
    return NULL;
}

static void test_threads(void)
{
    client_reset();
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)(10 + i));
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&g_client.lock);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL], 800);
    CHECK_EQ(g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME], 800);
    CHECK_EQ(g_client.enter, 800);
    pthread_mutex_unlock(&g_client.lock);
}

/* A forked child gets a working emulator of its own and exits normally
   (it must not wait at exit for the parent's worker thread). */
#if defined(__SANITIZE_THREAD__)
#define EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMU_TSAN 1
#endif
#endif

static void test_fork(void)
{
#ifdef EMU_TSAN
    /* ThreadSanitizer cannot start threads in a child of a threaded process */
    return;
#endif
    client_reset();
    pid_t pid = fork();
    if (pid == 0) {
        emu_launch_kernel(0, 8, "child", G8, B256, 10);
        for (int i = 0; i < 10; i++)
            emu_memset(0, 9, 64, 0, 0, 1);
        topsptiActivityFlushAll(TOPSPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        pthread_mutex_lock(&g_client.lock);
        int ok = g_client.counts[TOPSPTI_ACTIVITY_KIND_KERNEL] == 1 &&
                 g_client.counts[TOPSPTI_ACTIVITY_KIND_MEMSET] == 10 &&
                 g_client.counts[TOPSPTI_ACTIVITY_KIND_RUNTIME] == 11;
        pthread_mutex_unlock(&g_client.lock);
        exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    int status = -1;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_variants(void)
{
    static const char *const required[] = {
        "topsptiActivityRegisterCallbacks", "topsptiActivityEnable", "topsptiActivityDisable",
        "topsptiActivityFlushAll", "topsptiActivityGetNextRecord", "topsptiGetTimestamp",
    };
    void *h = dlopen(EMU_DIR "/libtopspti_minimal.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h) {
        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
            CHECK(dlsym(h, required[i]) != NULL);
        CHECK(dlsym(h, DEVTRACE_TOPSPTI_EMULATOR_MARKER) != NULL);
        CHECK(dlsym(h, "emu_launch_kernel") != NULL);
        CHECK(dlsym(h, "topsptiSubscribe") == NULL);
        CHECK(dlsym(h, "topsptiActivityGetNumDroppedRecords") == NULL);
        CHECK(dlsym(h, "topsptiGetVersion") == NULL);
        dlclose(h);
    }
    h = dlopen(EMU_DIR "/libtopspti_nomarker.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h) {
        CHECK(dlsym(h, DEVTRACE_TOPSPTI_EMULATOR_MARKER) == NULL);
        CHECK(dlsym(h, "topsptiSubscribe") != NULL);
        dlclose(h);
    }
    CHECK(dlopen(EMU_DIR "/libtopspti_does_not_exist.so", RTLD_NOW | RTLD_LOCAL) == NULL);
}

static int setup(void)
{
    CHECK_EQ(emu_init(), 0);
    CHECK_EQ(topsptiActivityRegisterCallbacks(on_request, on_complete), TOPSPTI_SUCCESS);
    static const Topspti_ActivityKind kinds[] = {
        TOPSPTI_ACTIVITY_KIND_KERNEL, TOPSPTI_ACTIVITY_KIND_MEMCPY, TOPSPTI_ACTIVITY_KIND_MEMSET,
        TOPSPTI_ACTIVITY_KIND_RUNTIME, TOPSPTI_ACTIVITY_KIND_DRIVER,
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        CHECK_EQ(topsptiActivityEnable(kinds[i]), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiSubscribe(&g_sub, on_callback, NULL), TOPSPTI_SUCCESS);
    CHECK_EQ(topsptiEnableAllDomains(1, g_sub), TOPSPTI_SUCCESS);
    return dt_check_failures;
}

static int teardown(void)
{
    client_reset();
    CHECK_EQ(topsptiUnsubscribe(g_sub), TOPSPTI_SUCCESS);
    return 0;
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_counts_and_correlation), DT_TEST(test_single_subscriber),
             DT_TEST(test_async_delivery), DT_TEST(test_flush_period), DT_TEST(test_domains),
             DT_TEST(test_timestamp_faults), DT_TEST(test_bad_records), DT_TEST(test_late_and_out_of_order),
             DT_TEST(test_unfinished_work_waits_for_forced_flush), DT_TEST(test_no_callbacks),
             DT_TEST(test_dropped_records), DT_TEST(test_iterator_bounds), DT_TEST(test_clock),
             DT_TEST(test_thread_id_type), DT_TEST(test_disabled_kind), DT_TEST(test_bad_arguments),
             DT_TEST(test_threads), DT_TEST(test_fork), DT_TEST(test_variants))

/*
 * MSPTI's own decoders, fed buffers written by hand through the public
 * layouts (no library): API names from strings, markers paired whatever
 * the order of their halves, malformed halves counted, collectives with
 * their sizes, memory allocations and frees, a record cut short and a kind
 * devtrace does not know.
 */
#include "backends/engine/engine.h"
#include "backends/mspti_abi.h"
#include "dt_check.h"
#include "dt_internal.h"

extern dt_engine dt__engine_mspti;

static uint8_t g_buf[4096] __attribute__((aligned(8)));
static size_t g_used;

#define PUT(rec)                                                                                       \
    do {                                                                                               \
        memcpy(g_buf + g_used, &(rec), sizeof(rec));                                                   \
        g_used += sizeof(rec);                                                                         \
    } while (0)

static dt_session *g_s;
static dt_decoder g_d;

static void begin(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    REQUIRE_EQ(dt_session_create(&c, &g_s), DT_OK);
    dt__decoder_init(&g_d, dt__engine_mspti.v, 0);
    g_used = 0;
}

static void run(void)
{
    dt__decoder_run(&g_d, g_s, g_buf, g_used, NULL);
    g_used = 0;
}

static size_t events(dt_event_kind kind, dt_event *first)
{
    size_t n = 0;
    for (size_t i = 0; i < g_s->sink.store.count; i++) {
        dt_event ev;
        dt__rec_to_event(g_s, dt__store_at(&g_s->sink.store, i), &ev);
        if (ev.kind != kind) continue;
        if (n++ == 0 && first) *first = ev;
    }
    return n;
}

static void api_names_are_strings(void)
{
    begin();
    msptiActivityApi a = {.kind = MSPTI_ACTIVITY_KIND_ACL_API, .start = 100, .end = 200, .pt = {7, 8},
                          .correlationId = UINT64_C(0x100000005), .name = "aclrtLaunchKernel"};
    PUT(a);
    a.kind = MSPTI_ACTIVITY_KIND_NODE_API;
    a.name = NULL; /* the library gave none */
    PUT(a);
    run();
    CHECK_EQ(g_s->sink.store.count, 2);
    dt_event ev;
    dt__rec_to_event(g_s, dt__store_at(&g_s->sink.store, 0), &ev);
    CHECK_EQ(ev.kind, DT_EVENT_RUNTIME);
    CHECK_STR(ev.name, "aclrtLaunchKernel");
    CHECK_EQ(ev.correlation, UINT64_C(0x100000005));
    CHECK_EQ(ev.process, 7);
    CHECK_EQ(ev.thread, 8);
    dt__rec_to_event(g_s, dt__store_at(&g_s->sink.store, 1), &ev);
    CHECK_STR(ev.name, "AscendApi#11");
    dt_session_destroy(g_s);
}

static msptiActivityMarker marker(uint32_t flag, uint64_t id, uint64_t t, uint32_t tid, const char *name)
{
    msptiActivityMarker m = {.kind = MSPTI_ACTIVITY_KIND_MARKER, .flag = (msptiActivityFlag)flag,
                             .sourceKind = MSPTI_ACTIVITY_SOURCE_KIND_HOST, .timestamp = t, .id = id,
                             .name = name};
    m.objectId.pt.processId = 1;
    m.objectId.pt.threadId = tid;
    return m;
}

static void marker_halves_pair_in_any_order(void)
{
    begin();
    /* the end first, in an earlier buffer, from another thread */
    msptiActivityMarker m = marker(MSPTI_ACTIVITY_FLAG_MARKER_END, 9, 5000, 22, "");
    PUT(m);
    run();
    CHECK_EQ(events(DT_EVENT_RANGE, NULL), 0);
    m = marker(MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE, 9, 1000, 11, "step");
    PUT(m);
    /* a device's record of it is not a range */
    m.sourceKind = MSPTI_ACTIVITY_SOURCE_KIND_DEVICE;
    PUT(m);
    run();
    dt_event ev;
    REQUIRE_EQ(events(DT_EVENT_RANGE, &ev), 1);
    CHECK_STR(ev.name, "step");
    CHECK_EQ(ev.start_ns, 1000);
    CHECK_EQ(ev.end_ns, 5000);
    CHECK_EQ(ev.thread, 11);
    /* two starts of one id: the second is no range */
    m = marker(MSPTI_ACTIVITY_FLAG_MARKER_START, 12, 100, 11, "a");
    PUT(m);
    PUT(m);
    /* a marker that is neither start, end nor instant */
    m = marker(0, 13, 100, 11, "odd");
    PUT(m);
    /* an end before its start in time: reversed */
    m = marker(MSPTI_ACTIVITY_FLAG_MARKER_START, 14, 900, 11, "back");
    PUT(m);
    m = marker(MSPTI_ACTIVITY_FLAG_MARKER_END, 14, 800, 11, "");
    PUT(m);
    run();
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_MALFORMED), 2);
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_TIMESTAMP_REVERSED), 1);
    CHECK_EQ(events(DT_EVENT_RANGE, NULL), 1);
    dt_session_destroy(g_s);
}

static void collectives_and_their_sizes(void)
{
    begin();
    msptiActivityCommunication c = {.kind = MSPTI_ACTIVITY_KIND_COMMUNICATION,
                                    .dataType = MSPTI_ACTIVITY_COMMUNICATION_BFP16, .count = 1000, .ds = {3, 4},
                                    .start = 10, .end = 510, .algType = "HD", .name = "hcom_allReduce_",
                                    .commName = "group", .correlationId = 77};
    PUT(c);
    c.dataType = (msptiCommunicationDataType)13; /* no such type */
    PUT(c);
    msptiActivityHccl h = {.kind = MSPTI_ACTIVITY_KIND_HCCL, .start = 10, .end = 20, .ds = {1, 2},
                           .bandWidth = 12.5, .name = NULL, .commName = NULL};
    PUT(h);
    run();
    REQUIRE_EQ(events(DT_EVENT_COLLECTIVE, NULL), 3);
    dt_event ev[3];
    for (size_t i = 0; i < 3; i++) dt__rec_to_event(g_s, dt__store_at(&g_s->sink.store, i), &ev[i]);
    CHECK_STR(ev[0].u.collective.data_type, "BFloat16");
    CHECK_EQ(ev[0].u.collective.bytes, 2000);
    CHECK_EQ(ev[0].u.collective.count, 1000);
    CHECK_STR(ev[0].u.collective.algorithm, "HD");
    CHECK_EQ(ev[0].device, 3);
    CHECK_EQ(ev[0].stream, 4);
    CHECK_EQ(ev[0].correlation, 77);
    CHECK_STR(ev[1].u.collective.data_type, "");
    CHECK_EQ(ev[1].u.collective.bytes, 0);
    CHECK_EQ(ev[1].u.collective.count, 1000);
    CHECK_STR(ev[2].name, "<unnamed collective>");
    CHECK_STR(ev[2].u.collective.group, "");
    CHECK(ev[2].u.collective.bandwidth_gbps == 12.5);
    CHECK_EQ(dt_session_loss_total(g_s), 0);
    dt_session_destroy(g_s);
}

static void memory_allocations_and_frees(void)
{
    begin();
    msptiActivityMemory m = {.kind = MSPTI_ACTIVITY_KIND_MEMORY,
                             .memoryOperationType = MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                             .memoryKind = MSPTI_ACTIVITY_MEMORY_DEVICE, .correlationId = UINT64_C(0x100000009),
                             .start = 100, .end = 150, .address = 0x12400000, .bytes = 4096, .processId = 7,
                             .deviceId = 2, .streamId = MSPTI_INVALID_STREAM_ID};
    PUT(m);
    /* a free the library gives no size of, on a stream */
    m.memoryOperationType = MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.bytes = 0;
    m.streamId = 5;
    m.start = 300;
    PUT(m);
    m.memoryOperationType = MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = MSPTI_ACTIVITY_MEMORY_HOST;
    m.bytes = 64;
    PUT(m);
    m.memoryKind = (msptiActivityMemoryKind)9; /* no such kind */
    PUT(m);
    m.memoryOperationType = (msptiActivityMemoryOperationType)2; /* neither: malformed */
    PUT(m);
    run();
    REQUIRE_EQ(events(DT_EVENT_MEMORY, NULL), 4);
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_MALFORMED), 1);
    dt_event ev[4];
    for (size_t i = 0; i < 4; i++) dt__rec_to_event(g_s, dt__store_at(&g_s->sink.store, i), &ev[i]);
    CHECK_STR(ev[0].name, "[memory]");
    CHECK_EQ(ev[0].start_ns, 100);
    CHECK_EQ(ev[0].end_ns, 100);
    CHECK_EQ(ev[0].device, 2);
    CHECK_EQ(ev[0].stream, 0); /* no stream */
    CHECK_EQ(ev[0].correlation, UINT64_C(0x100000009));
    CHECK_EQ(ev[0].u.memory.address, 0x12400000);
    CHECK_EQ(ev[0].u.memory.bytes, 4096);
    CHECK_EQ(ev[0].u.memory.is_free, 0);
    CHECK_EQ(ev[0].u.memory.memory_kind, DT_MEM_DEVICE);
    CHECK_EQ(ev[1].u.memory.is_free, 1);
    CHECK_EQ(ev[1].u.memory.bytes, 0);
    CHECK_EQ(ev[1].stream, 5);
    CHECK_EQ(ev[1].start_ns, 300);
    CHECK_EQ(ev[2].u.memory.memory_kind, DT_MEM_PINNED);
    CHECK_EQ(ev[3].u.memory.memory_kind, DT_MEM_UNKNOWN);
    dt_session_destroy(g_s);

    /* without the memory capture bit nothing is kept */
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_KERNEL;
    REQUIRE_EQ(dt_session_create(&c, &g_s), DT_OK);
    m.memoryOperationType = MSPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    PUT(m);
    run();
    CHECK_EQ(g_s->sink.store.count, 0);
    dt_session_destroy(g_s);
}

static void records_cut_short_and_unknown_kinds(void)
{
    begin();
    msptiActivityKernel k = {.kind = MSPTI_ACTIVITY_KIND_KERNEL, .start = 1, .end = 2, .name = "k"};
    PUT(k);
    /* an overhead record: a kind devtrace does not decode, stepped over */
    msptiActivityOverhead o = {.kind = MSPTI_ACTIVITY_KIND_OVERHEAD, .start = 1, .end = 2};
    PUT(o);
    PUT(k);
    /* the last record cut after 16 bytes */
    PUT(k);
    g_used -= sizeof k - 16;
    run();
    CHECK_EQ(events(DT_EVENT_KERNEL, NULL), 2);
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_UNKNOWN_KIND), 1);
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_MALFORMED), 1);
    /* a kind no release has: the rest of the buffer cannot be walked */
    uint32_t bogus = 0x4d53;
    PUT(k);
    memcpy(g_buf + g_used, &bogus, sizeof bogus);
    g_used += 24;
    PUT(k);
    run();
    CHECK_EQ(events(DT_EVENT_KERNEL, NULL), 3);
    CHECK_EQ(dt_session_loss(g_s, DT_LOSS_UNKNOWN_KIND), 2);
    dt_session_destroy(g_s);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(api_names_are_strings), DT_TEST(marker_halves_pair_in_any_order),
             DT_TEST(collectives_and_their_sizes), DT_TEST(memory_allocations_and_frees),
             DT_TEST(records_cut_short_and_unknown_kinds))

/*
 * MSPTI's record layouts, as its public headers define them (Ascend/mspti,
 * csrc/include/mspti_activity.h, compiled for x86-64 and aarch64 alike):
 * sizes and the offset of every field the backend reads. Compiled against
 * whichever declaration the build decodes with (CANN's mspti.h when found,
 * devtrace's mspti_abi.h otherwise), so that a release whose layout moved
 * fails here rather than decoding garbage.
 */
#include <stddef.h>

#include "backends/mspti_headers.h"
#include "dt_check.h"

#define OFF(T, m) offsetof(T, m)

static void sizes(void)
{
    CHECK_EQ(sizeof(msptiActivity), 8);
    CHECK_EQ(sizeof(msptiObjectId), 8);
    CHECK_EQ(sizeof(msptiActivityMarker), 56);
    CHECK_EQ(sizeof(msptiActivityKernel), 56);
    CHECK_EQ(sizeof(msptiActivityApi), 48);
    CHECK_EQ(sizeof(msptiActivityExternalCorrelation), 24);
#if DT_MSPTI_HAS_HCCL
    CHECK_EQ(sizeof(msptiActivityHccl), 56);
#endif
#if DT_MSPTI_HAS_MEMORY_KINDS
    CHECK_EQ(sizeof(msptiActivityMemory), 64);
    CHECK_EQ(sizeof(msptiActivityMemset), 56);
    CHECK_EQ(sizeof(msptiActivityMemcpy), 56);
#endif
#if DT_MSPTI_HAS_COMMUNICATION
    CHECK_EQ(sizeof(msptiActivityCommunication), 72);
#endif
#if DT_MSPTI_HAS_OVERHEAD
    CHECK_EQ(sizeof(msptiActivityOverhead), 56);
#endif
    CHECK_EQ(sizeof(msptiCallbackData), 72);
    /* 8-byte alignment as a whole: records sit back to back in buffers */
    CHECK_EQ(_Alignof(msptiActivityKernel), 8);
    CHECK_EQ(_Alignof(msptiActivityApi), 8);
}

static void marker(void)
{
    CHECK_EQ(OFF(msptiActivityMarker, flag), 4);
    CHECK_EQ(OFF(msptiActivityMarker, sourceKind), 8);
    CHECK_EQ(OFF(msptiActivityMarker, timestamp), 12);
    CHECK_EQ(OFF(msptiActivityMarker, id), 20);
    CHECK_EQ(OFF(msptiActivityMarker, objectId), 28);
    CHECK_EQ(OFF(msptiActivityMarker, objectId.pt.threadId), 32);
    CHECK_EQ(OFF(msptiActivityMarker, objectId.ds.streamId), 32);
    CHECK_EQ(OFF(msptiActivityMarker, name), 36);
    CHECK_EQ(OFF(msptiActivityMarker, domain), 44);
}

static void kernel_and_api(void)
{
    /* misaligned 64-bit fields: start at 4 */
    CHECK_EQ(OFF(msptiActivityKernel, start), 4);
    CHECK_EQ(OFF(msptiActivityKernel, end), 12);
    CHECK_EQ(OFF(msptiActivityKernel, ds.deviceId), 20);
    CHECK_EQ(OFF(msptiActivityKernel, ds.streamId), 24);
    CHECK_EQ(OFF(msptiActivityKernel, correlationId), 28);
    CHECK_EQ(OFF(msptiActivityKernel, type), 36);
    CHECK_EQ(OFF(msptiActivityKernel, name), 44);
    CHECK_EQ(OFF(msptiActivityApi, start), 4);
    CHECK_EQ(OFF(msptiActivityApi, end), 12);
    CHECK_EQ(OFF(msptiActivityApi, pt.processId), 20);
    CHECK_EQ(OFF(msptiActivityApi, pt.threadId), 24);
    CHECK_EQ(OFF(msptiActivityApi, correlationId), 28);
    CHECK_EQ(OFF(msptiActivityApi, name), 36);
    CHECK_EQ(sizeof(((msptiActivityApi *)0)->correlationId), 8);
}

static void external_correlation(void)
{
    CHECK_EQ(OFF(msptiActivityExternalCorrelation, externalKind), 4);
    CHECK_EQ(OFF(msptiActivityExternalCorrelation, externalId), 8);
    CHECK_EQ(OFF(msptiActivityExternalCorrelation, correlationId), 16);
    CHECK_EQ(MSPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 2);
}

static void memory_kinds(void)
{
#if DT_MSPTI_HAS_MEMORY_KINDS
    CHECK_EQ(OFF(msptiActivityMemory, memoryOperationType), 4);
    CHECK_EQ(OFF(msptiActivityMemory, memoryKind), 8);
    CHECK_EQ(OFF(msptiActivityMemory, correlationId), 12);
    CHECK_EQ(OFF(msptiActivityMemory, start), 20);
    CHECK_EQ(OFF(msptiActivityMemory, end), 28);
    CHECK_EQ(OFF(msptiActivityMemory, address), 36);
    CHECK_EQ(OFF(msptiActivityMemory, bytes), 44);
    CHECK_EQ(OFF(msptiActivityMemory, processId), 52);
    CHECK_EQ(OFF(msptiActivityMemory, deviceId), 56);
    CHECK_EQ(OFF(msptiActivityMemory, streamId), 60);
    CHECK_EQ(OFF(msptiActivityMemset, value), 4);
    CHECK_EQ(OFF(msptiActivityMemset, bytes), 8);
    CHECK_EQ(OFF(msptiActivityMemset, start), 16);
    CHECK_EQ(OFF(msptiActivityMemset, end), 24);
    CHECK_EQ(OFF(msptiActivityMemset, deviceId), 32);
    CHECK_EQ(OFF(msptiActivityMemset, streamId), 36);
    CHECK_EQ(OFF(msptiActivityMemset, correlationId), 40);
    CHECK_EQ(OFF(msptiActivityMemset, isAsync), 48);
    CHECK_EQ(OFF(msptiActivityMemcpy, copyKind), 4);
    CHECK_EQ(OFF(msptiActivityMemcpy, bytes), 8);
    CHECK_EQ(OFF(msptiActivityMemcpy, start), 16);
    CHECK_EQ(OFF(msptiActivityMemcpy, end), 24);
    CHECK_EQ(OFF(msptiActivityMemcpy, deviceId), 32);
    CHECK_EQ(OFF(msptiActivityMemcpy, streamId), 36);
    CHECK_EQ(OFF(msptiActivityMemcpy, correlationId), 40);
    CHECK_EQ(OFF(msptiActivityMemcpy, isAsync), 48);
    /* numbered unlike CUPTI */
    CHECK_EQ(MSPTI_ACTIVITY_MEMCPY_KIND_HTOD, 2);
    CHECK_EQ(MSPTI_ACTIVITY_MEMCPY_KIND_DTOD, 4);
#else
    SKIP("these CANN headers predate the memory kinds");
#endif
}

static void collectives(void)
{
#if DT_MSPTI_HAS_HCCL
    CHECK_EQ(OFF(msptiActivityHccl, start), 4);
    CHECK_EQ(OFF(msptiActivityHccl, end), 12);
    CHECK_EQ(OFF(msptiActivityHccl, ds.deviceId), 20);
    CHECK_EQ(OFF(msptiActivityHccl, ds.streamId), 24);
    CHECK_EQ(OFF(msptiActivityHccl, bandWidth), 28);
    CHECK_EQ(OFF(msptiActivityHccl, name), 36);
    CHECK_EQ(OFF(msptiActivityHccl, commName), 44);
#endif
#if DT_MSPTI_HAS_COMMUNICATION
    CHECK_EQ(OFF(msptiActivityCommunication, dataType), 4);
    CHECK_EQ(OFF(msptiActivityCommunication, count), 8);
    CHECK_EQ(OFF(msptiActivityCommunication, ds.deviceId), 16);
    CHECK_EQ(OFF(msptiActivityCommunication, ds.streamId), 20);
    CHECK_EQ(OFF(msptiActivityCommunication, start), 24);
    CHECK_EQ(OFF(msptiActivityCommunication, end), 32);
    CHECK_EQ(OFF(msptiActivityCommunication, algType), 40);
    CHECK_EQ(OFF(msptiActivityCommunication, name), 48);
    CHECK_EQ(OFF(msptiActivityCommunication, commName), 56);
    CHECK_EQ(OFF(msptiActivityCommunication, correlationId), 64);
    CHECK_EQ(MSPTI_ACTIVITY_COMMUNICATION_BFP16, 11);
    CHECK_EQ(MSPTI_ACTIVITY_COMMUNICATION_FP8E8M0, 17);
#endif
}

static void overhead(void)
{
#if DT_MSPTI_HAS_OVERHEAD
    CHECK_EQ(OFF(msptiActivityOverhead, overheadKind), 4);
    CHECK_EQ(OFF(msptiActivityOverhead, objectId), 8);
    CHECK_EQ(OFF(msptiActivityOverhead, start), 16);
    CHECK_EQ(OFF(msptiActivityOverhead, end), 24);
    CHECK_EQ(OFF(msptiActivityOverhead, correlationId), 32);
    CHECK_EQ(OFF(msptiActivityOverhead, overheadData), 40);
    CHECK_EQ(OFF(msptiActivityOverhead, objectKind), 48);
#else
    SKIP("these CANN headers predate the overhead kind");
#endif
}

static void callback_data(void)
{
    /* natural alignment, not packed */
    CHECK_EQ(OFF(msptiCallbackData, callbackSite), 0);
    CHECK_EQ(OFF(msptiCallbackData, functionName), 8);
    CHECK_EQ(OFF(msptiCallbackData, functionParams), 16);
    CHECK_EQ(OFF(msptiCallbackData, functionReturnValue), 24);
    CHECK_EQ(OFF(msptiCallbackData, symbolName), 32);
    CHECK_EQ(OFF(msptiCallbackData, correlationId), 40);
    CHECK_EQ(OFF(msptiCallbackData, correlationData), 64);
}

static void numbering(void)
{
    CHECK_EQ(MSPTI_ACTIVITY_KIND_MARKER, 1);
    CHECK_EQ(MSPTI_ACTIVITY_KIND_HCCL, 4);
    CHECK_EQ(MSPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, 8);
    CHECK_EQ(MSPTI_ACTIVITY_KIND_RUNTIME_API, 12);
    CHECK_EQ(MSPTI_ERROR_MAX_LIMIT_REACHED, 3);
    CHECK_EQ(MSPTI_ERROR_WITHOUT_LD_PRELOAD, 6);
    CHECK_EQ(MSPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 2);
    CHECK_EQ(MSPTI_ACTIVITY_FLAG_MARKER_START_WITH_DEVICE, 16);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(sizes), DT_TEST(marker), DT_TEST(kernel_and_api), DT_TEST(external_correlation),
             DT_TEST(memory_kinds), DT_TEST(collectives), DT_TEST(overhead), DT_TEST(callback_data),
             DT_TEST(numbering))

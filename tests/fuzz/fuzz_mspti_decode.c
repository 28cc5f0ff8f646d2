/*
 * Fuzz MSPTI's decoders (the engine's walk with MSPTI's layouts and its own
 * decoders of API records, external correlation, markers and collectives):
 * arbitrary bytes as a completed activity buffer, walked by the records'
 * sizes as the backend walks them. Vendors hand out names as pointers;
 * bytes from the fuzzer cannot be valid ones, so every string field of the
 * record kinds MSPTI has is replaced with one of a set of awkward but valid
 * strings chosen by the pointer's low byte. The first byte picks the
 * session's limits; the buffer is decoded twice (a second, shorter pass
 * cuts a record), so markers pair across buffers.
 */
#include "backends/engine/engine.h"
#include "backends/mspti_headers.h"
#include "fuzz_both_walks.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern dt_engine dt__engine_mspti;
DT_HIDDEN void dt__mspti_decoding_reset(void);

static char long_name[9000];
static const char *const names[] = {
    NULL, "", "aclrtLaunchKernel", "_Z5saxpyifPKfPf", "_Z", "hcom_allReduce_", "hccl_world_group",
    "\xff\xfe\xc3\x28 invalid utf-8 \xe2\x82", "name with \"quotes\" and \\ and \n newline", long_name,
};
enum { NAME_COUNT = sizeof names / sizeof names[0] };

static void replace(uint8_t *rec, size_t off)
{
    uintptr_t sel;
    memcpy(&sel, rec + off, sizeof sel);
    const char *name = names[(sel & 0xff) % NAME_COUNT];
    memcpy(rec + off, &name, sizeof name);
}

#define STRING(T, member) replace(rec, offsetof(T, member))

static void make_strings_valid(uint8_t *rec, uint32_t kind)
{
    switch (kind) {
    case MSPTI_ACTIVITY_KIND_KERNEL: STRING(msptiActivityKernel, type); STRING(msptiActivityKernel, name); break;
    case MSPTI_ACTIVITY_KIND_MARKER: STRING(msptiActivityMarker, name); STRING(msptiActivityMarker, domain); break;
#if DT_MSPTI_HAS_HCCL
    case MSPTI_ACTIVITY_KIND_HCCL: STRING(msptiActivityHccl, name); STRING(msptiActivityHccl, commName); break;
#endif
#if DT_MSPTI_HAS_COMMUNICATION
    case MSPTI_ACTIVITY_KIND_COMMUNICATION:
        STRING(msptiActivityCommunication, algType);
        STRING(msptiActivityCommunication, name);
        STRING(msptiActivityCommunication, commName);
        break;
#endif
    case MSPTI_ACTIVITY_KIND_API:
    case MSPTI_ACTIVITY_KIND_ACL_API:
    case MSPTI_ACTIVITY_KIND_NODE_API:
    case MSPTI_ACTIVITY_KIND_RUNTIME_API: STRING(msptiActivityApi, name); break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    if (!long_name[0]) memset(long_name, 'n', sizeof long_name - 1);
    dt_decoder d;
    dt__decoder_init(&d, dt__engine_mspti.v, 0);
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_ALL;
    if (size > 0) {
        if (data[0] & 1) c.max_events = 3;
        if (data[0] & 2) c.max_duration_ns = 1000;
        if (data[0] & 4) c.capture = DT_CAPTURE_RUNTIME;
        data++;
        size--;
    }
    uint8_t *buf = aligned_alloc(8, size ? (size + 7) & ~(size_t)7 : 8);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    void *rec = NULL;
    while (dt__decoder_next(&d, buf, size, &rec) == d.v->results.success) {
        uint32_t kind;
        memcpy(&kind, rec, sizeof kind);
        make_strings_valid(rec, kind);
    }
    /* both walks, which must agree (fuzz_both_walks.h); the vendor's
       pairing of records reset after each */
    fuzz_both_walks(&d, &c, buf, size, size > 8 ? size - (size_t)(data[size - 1] % 8) - 1 : 0,
                    dt__mspti_decoding_reset);
    free(buf);
    return 0;
}

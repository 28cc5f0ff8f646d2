/*
 * Fuzz the TOPSPTI record decoder: arbitrary bytes as a completed activity
 * buffer, walked by an iterator equivalent to the emulator's
 * topsptiActivityGetNextRecord (records back to back, sized by kind, never
 * read past validSize) and decoded by the backend's own decode path.
 *
 * The vendor hands out kernel names as pointers; bytes from the fuzzer
 * cannot be valid pointers, so the iterator replaces each kernel record's
 * name with one of a set of awkward but valid strings chosen by the pointer's
 * low byte (NULL, empty, mangled, bogus mangling, invalid UTF-8, very long).
 *
 * Built against devtrace's declaration (topspti_abi.h) only: with the SDK
 * layout, the name field sits elsewhere and the target does nothing.
 */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

#include "backends/topspti_abi.h"

DT_HIDDEN void dt_topspti_decode_for_test(dt_session *s, uint8_t *buffer, size_t valid,
                                          topsptiActivityGetNextRecord_fn next);
DT_HIDDEN int dt_topspti_sdk_layout(void);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char long_name[5000];
static const char *const names[] = {
    NULL,
    "",
    "plain_kernel",
    "_Z5saxpyifPfS_",
    "_Z",
    "_ZN",
    "_Z999999999999999999x",
    "\xff\xfe\xc3\x28 invalid utf-8 \xe2\x82",
    "name with \"quotes\" and \\ and \n newline",
    long_name,
};
enum { NAME_COUNT = sizeof names / sizeof names[0] };

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case TOPSPTI_ACTIVITY_KIND_KERNEL: return sizeof(Topspti_ActivityKernel);
    case TOPSPTI_ACTIVITY_KIND_MEMCPY: return sizeof(Topspti_ActivityMemcpy);
    case TOPSPTI_ACTIVITY_KIND_MEMSET: return sizeof(Topspti_ActivityMemset);
    case TOPSPTI_ACTIVITY_KIND_RUNTIME:
    case TOPSPTI_ACTIVITY_KIND_DRIVER: return sizeof(Topspti_ActivityAPI);
    default: return 0;
    }
}

/* Checks the record at p (avail valid bytes from it); makes it safe to
   decode. */
static TopsptiResult check_record(uint8_t *p, size_t avail)
{
    if (avail < 4) return TOPSPTI_ERROR_INVALID_PARAMETER;
    uint32_t kind;
    memcpy(&kind, p, sizeof kind);
    size_t sz = record_size(kind);
    if (sz == 0) return TOPSPTI_ERROR_INVALID_KIND;
    if (sz > avail) return TOPSPTI_ERROR_INVALID_PARAMETER;
    if (kind == TOPSPTI_ACTIVITY_KIND_KERNEL) {
        Topspti_ActivityKernel *k = (Topspti_ActivityKernel *)(void *)p;
        uintptr_t sel;
        memcpy(&sel, (uint8_t *)p + offsetof(Topspti_ActivityKernel, name), sizeof sel);
        const char *name = names[(sel & 0xff) % NAME_COUNT];
        memcpy((uint8_t *)k + offsetof(Topspti_ActivityKernel, name), &name, sizeof name);
    }
    return TOPSPTI_SUCCESS;
}

/* The emulator's iteration, over devtrace's declaration. */
static TopsptiResult next_record(uint8_t *buffer, size_t valid, Topspti_Activity **record)
{
    if (!buffer || !record) return TOPSPTI_ERROR_INVALID_PARAMETER;
    size_t off;
    uint8_t *cur = (uint8_t *)*record;
    if (!cur) {
        off = 0;
    } else {
        if (cur < buffer || cur >= buffer + valid) return TOPSPTI_ERROR_INVALID_PARAMETER;
        size_t at = (size_t)(cur - buffer);
        uint32_t kind;
        if (valid - at < 4) return TOPSPTI_ERROR_INVALID_PARAMETER;
        memcpy(&kind, cur, sizeof kind);
        size_t sz = record_size(kind);
        if (sz == 0) return TOPSPTI_ERROR_INVALID_KIND;
        if (sz > valid - at) return TOPSPTI_ERROR_INVALID_PARAMETER;
        off = at + sz;
    }
    if (off >= valid) return TOPSPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (Topspti_Activity *)(void *)(buffer + off);
    return check_record(buffer + off, valid - off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dt_topspti_sdk_layout()) return 0;
    if (!long_name[0]) {
        memset(long_name, 'k', sizeof long_name - 1);
        memcpy(long_name, "_ZN", 3);
    }
    /* The first byte picks the session's limits, so the store-full and
       implausible-duration paths are reached too. */
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    if (size > 0) {
        if (data[0] & 1) c.max_events = 3;
        if (data[0] & 2) c.max_duration_ns = 1000;
        data++;
        size--;
    }
    /* 8-byte aligned, like the vendor's buffers; records are 8-byte sized. */
    uint8_t *buf = aligned_alloc(8, size ? (size + 7) & ~(size_t)7 : 8);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) == DT_OK) {
        dt_topspti_decode_for_test(s, buf, size, next_record);
        /* every record either kept or counted */
        (void)dt_session_loss_total(s);
        dt_session_destroy(s);
    }
    free(buf);
    return 0;
}

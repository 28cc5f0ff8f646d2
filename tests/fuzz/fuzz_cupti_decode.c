/*
 * Fuzz the CUPTI record decoder: arbitrary bytes as a completed activity
 * buffer, walked by the backend's bounds-checked iterator (CUPTI's stride
 * logic over the toolkit's record sizes, never past validSize) and decoded
 * by the backend's own decode path.
 *
 * CUPTI hands out kernel and device names as pointers; fuzzer bytes cannot
 * be valid pointers, so the iterator replaces each name with one of a set of
 * awkward but valid strings chosen by the pointer's low byte (NULL, empty,
 * mangled, bogus mangling, invalid UTF-8, very long). Every other field is
 * the fuzzer's.
 */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

#include "backends/cupti_backend.h"

static char long_name[9000];
static const char *const names[] = {
    NULL,
    "",
    "plain_kernel",
    "_Z5saxpyifPKfPf",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
    "_Z",
    "_ZN",
    "_Z999999999999999999x",
    "\xff\xfe\xc3\x28 invalid utf-8 \xe2\x82",
    "name with \"quotes\" and \\ and \n newline",
    long_name,
};
enum { NAME_COUNT = sizeof names / sizeof names[0] };

static void replace_pointer(uint8_t *field)
{
    uintptr_t sel;
    memcpy(&sel, field, sizeof sel);
    const char *name = names[(sel & 0xff) % NAME_COUNT];
    memcpy(field, &name, sizeof name);
}

/* The backend's iterator, making each record it returns safe to decode. */
static CUptiResult next_record(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    CUptiResult r = dt_cupti_next_record(buffer, valid, record);
    if (r != CUPTI_SUCCESS) return r;
    uint8_t *p = (uint8_t *)*record;
    switch ((*record)->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        replace_pointer(p + offsetof(CUpti_ActivityKernel10, name));
        break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
        replace_pointer(p + offsetof(CUpti_ActivityDevice5, name));
        break;
    default:
        break;
    }
    return CUPTI_SUCCESS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    if (!long_name[0]) {
        memset(long_name, 'k', sizeof long_name - 1);
        memcpy(long_name, "_Z", 2);
    }
    /* CUPTI buffers are 8-byte aligned; the copy also lets the iterator
       rewrite name pointers. */
    uint8_t *buf = aligned_alloc(8, (size + 8) & ~(size_t)7);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);

    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_ALL;
    /* the first byte picks small limits too, to reach the store-full path */
    c.max_events = size && (data[0] & 1) ? 3 : 0;
    c.max_duration_ns = size && (data[0] & 2) ? 1000 : 0;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) == DT_OK) {
        dt_cupti_decode_buffer(s, buf, size, next_record);
        /* the last bytes as a second, shorter buffer: a cut inside a record */
        if (size > 8) dt_cupti_decode_buffer(s, buf, size - (size_t)(data[size - 1] % 8) - 1, next_record);
        dt_session_destroy(s);
    }
    free(buf);
    return 0;
}

#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)data;
    (void)size;
    return 0;
}
#endif

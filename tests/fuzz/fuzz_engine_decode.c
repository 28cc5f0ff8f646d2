/*
 * Fuzz the engine's decoder with one vendor's layouts (DT_FUZZ_VENDOR, the
 * vendor's name in vendors.def; one target per vendor): arbitrary bytes as
 * a completed activity buffer, walked by the vendor's record sizes (the
 * iterator's contract: never past validSize) and decoded by the engine.
 *
 * Vendors hand out kernel and device names as pointers; bytes from the
 * fuzzer cannot be valid pointers, so each name field the layouts declare
 * is replaced with one of a set of awkward but valid strings chosen by the
 * pointer's low byte (NULL, empty, mangled, bogus mangling, invalid UTF-8,
 * very long). Every other field is the fuzzer's. The first byte picks the
 * session's limits, so the store-full and implausible-duration paths are
 * reached too.
 * The bytes are decoded by both walks, which must agree (fuzz_both_walks.h).
 */
#include "backends/engine/engine.h"
#include "fuzz_both_walks.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENGINE_OF(v) ENGINE_OF_(v)
#define ENGINE_OF_(v) dt__engine_##v
/* weak: a vendor built without what its backend needs (CUPTI without the
   toolkit's headers) has no engine, and the target then does nothing */
extern dt_engine ENGINE_OF(DT_FUZZ_VENDOR) __attribute__((weak));

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

static void replace_pointer(uint8_t *rec, dt_field f)
{
    if (f.size != sizeof(const char *)) return;
    uintptr_t sel;
    memcpy(&sel, rec + f.off, sizeof sel);
    const char *name = names[(sel & 0xff) % NAME_COUNT];
    memcpy(rec + f.off, &name, sizeof name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20) || !&ENGINE_OF(DT_FUZZ_VENDOR)) return 0;
    if (!long_name[0]) {
        memset(long_name, 'k', sizeof long_name - 1);
        memcpy(long_name, "_Z", 2);
    }
    dt_decoder d;
    dt__decoder_init(&d, ENGINE_OF(DT_FUZZ_VENDOR).v, 0);
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = DT_CAPTURE_ALL;
    if (size > 0) {
        if (data[0] & 1) c.max_events = 3;
        if (data[0] & 2) c.max_duration_ns = 1000;
        data++;
        size--;
    }
    /* Vendor buffers are 8-byte aligned; the copy also lets names be set. */
    uint8_t *buf = aligned_alloc(8, size ? (size + 7) & ~(size_t)7 : 8);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    void *rec = NULL;
    while (dt__decoder_next(&d, buf, size, &rec) == d.v->results.success) {
        const dt_record_layout *l = dt__decoder_layout(&d, *(const uint32_t *)rec);
        if (!l) break;
        replace_pointer(rec, l->f[DT_F_NAME]);
        replace_pointer(rec, l->f[DT_F_DEV_NAME]);
    }
    /* the last bytes as a second, shorter buffer: a cut inside a record */
    fuzz_both_walks(&d, &c, buf, size, size > 8 ? size - (size_t)(data[size - 1] % 8) - 1 : 0, NULL);
    free(buf);
    return 0;
}

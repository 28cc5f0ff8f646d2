/*
 * Fuzz roctracer's decoder: arbitrary bytes as one buffer of roctracer's
 * pool (two halves, records from a half's start, names towards its end),
 * decoded with launch and fill arguments waiting in the decoder's table.
 *
 * A dispatch's name pointer is where the fuzzer can reach what a real pool
 * holds: the low byte of the pointer the fuzzer wrote chooses a place in
 * this buffer's names, in its records, in the other half, NULL, or one of a
 * set of awkward strings outside the pool (a vendor-owned name, which the
 * decoder cannot bound and must read as given). The first byte picks the
 * session's limits and what the decoder knows.
 */
#include "backends/roctracer.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char long_name[9000];
static const char *const outside[] = {
    "",
    "plain_kernel",
    "_Z5saxpyifPKfPf",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
    "_Z999999999999999999x",
    "\xff\xfe\xc3\x28 invalid utf-8 \xe2\x82",
    long_name,
};
enum { OUTSIDE = sizeof outside / sizeof outside[0] };

static const char *const api_names[4] = {"hipLaunchKernel", NULL, "", "hipMemset"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > (1u << 20)) return 0;
    if (!long_name[0]) {
        memset(long_name, 'k', sizeof long_name - 1);
        memcpy(long_name, "_Z", 2);
    }
    uint8_t flags = data[0], cut = data[1];
    data += 2;
    size -= 2;
    /* the half the input fills, up to its end when its size is a multiple
       of a record (then names can run to the half's end unterminated) */
    size_t half = size ? (size + 63) & ~(size_t)63 : 64;
    int bounded = !(flags & 32); /* the decoder knows the pool */
    uint8_t *pool = aligned_alloc(64, 2 * half);
    if (!pool) return 0;
    memset(pool, 0, 2 * half);
    int which = flags & 1;
    uint8_t *begin = pool + (size_t)which * half;
    memcpy(begin, data, size);
    /* the records the buffer says it has: all of them, or fewer */
    size_t valid = size - ((cut & 63) < 16 ? (cut & 63) % (size + 1) : 0);
    /* decoded from the flight recorder's copy, made as roctracer reuses the half */
    int copy = bounded && (cut & 64);
    uint8_t *names = begin + valid, *half_end = begin + half;

    for (size_t off = 0; off + DT_RT_RECORD_SIZE <= valid; off += DT_RT_RECORD_SIZE) {
        activity_record_t r;
        memcpy(&r, begin + off, sizeof r);
        if (r.domain != ACTIVITY_DOMAIN_HIP_OPS || r.op != DT_RT_HIP_OP_DISPATCH) continue;
        uintptr_t raw = (uintptr_t)r.kernel_name;
        size_t pick = raw & 0xff, at = raw >> 8;
        const char *name;
        /* without the pool's bounds, a name is read as the vendor's own:
           only valid strings then */
        switch (bounded ? pick % 6 : 3 + pick % 3) {
        case 0: name = names < half_end ? (const char *)names + at % (size_t)(half_end - names) : NULL; break;
        case 1: name = (const char *)begin + at % (valid ? valid : 1); break; /* in the records */
        case 2: name = (const char *)pool + (size_t)(1 - which) * half + at % half; break;
        case 3: name = NULL; break;
        default: name = outside[at % OUTSIDE]; break;
        }
        r.kernel_name = name;
        memcpy(begin + off, &r, sizeof r);
    }

    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = flags & 2 ? DT_CAPTURE_ALL : DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET;
    if (flags & 4) c.max_events = 3;
    if (flags & 8) c.max_duration_ns = 1000;
    dt_rt_args_table args = {0};
    uint64_t unkept[3] = {0, (uint64_t)(flags >> 6), (uint64_t)(flags >> 7)};
    /* arguments for the correlation ids the records name */
    for (size_t off = 0; off + DT_RT_RECORD_SIZE <= valid && (flags & 16); off += DT_RT_RECORD_SIZE) {
        activity_record_t r;
        memcpy(&r, begin + off, sizeof r);
        dt_rt_args a = {.correlation = r.correlation_id, .grid = {r.op, r.kind, 1}, .block = {64, 1, 1},
                        .value = r.kind, .what = (uint8_t)(r.kind & 1 ? DT_RT_ARGS_LAUNCH : DT_RT_ARGS_FILL)};
        if (dt__rt_args_put(&args, &a) != 0) break;
    }
    dt_rt_decoder d = {.pool = bounded ? pool : NULL, .half = half, .api_names = api_names,
                       .api_name_count = 4, .args = &args, .args_unkept = unkept};
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) == DT_OK) {
        uint8_t *kept = copy ? malloc(DT_RT_COPY_HEADER + half) : NULL;
        size_t bytes = kept ? dt__rt_copy(kept, DT_RT_COPY_HEADER + half, &d, begin, begin + valid) : 0;
        if (bytes) {
            memset(begin, 0xa5, half);
            dt__rt_decode_copy(&d, s, kept, bytes);
        } else {
            dt__rt_decode(&d, s, begin, begin + valid);
        }
        free(kept);
        dt_session_destroy(s);
    }
    dt__rt_args_free(&args);
    free(pool);
    return 0;
}

/*
 * The record versions the other CUPTI-family vendors are taken to write
 * (MCPTI: Kernel8, Memcpy5, Memset4; the PPU stack: Kernel9, Memcpy5,
 * Memset4; MUPTI: Kernel6, Memcpy4, Memset3, Synchronization) are CUPTI's
 * same-numbered versions: each family layout devtrace decodes them with
 * has, field by field, the offset and size of CUDA's own struct of that
 * version, and the size of that struct.
 */
#include <stddef.h>
#include <string.h>

#include "dt_check.h"
#include "dt_internal.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

#include "backends/cupti_family.h"
#include "backends/engine/engine.h"

static const dt_record_layout *layout(const dt_record_layout *set, uint32_t kind)
{
    for (size_t i = 0; set[i].size; i++)
        if (set[i].kind == kind) return &set[i];
    FAIL("no layout of kind %u", (unsigned)kind);
    return NULL;
}

#define SAME(l, T, field, member)                                                                  \
    do {                                                                                           \
        CHECK_EQ((l)->f[field].off, offsetof(T, member));                                          \
        CHECK_EQ((l)->f[field].size, sizeof(((T *)0)->member));                                    \
    } while (0)

#define KERNEL_FIELDS(l, T)                                                                        \
    do {                                                                                           \
        CHECK_EQ((l)->size, sizeof(T));                                                            \
        SAME(l, T, DT_F_START, start); SAME(l, T, DT_F_END, end);                                  \
        SAME(l, T, DT_F_CORRELATION, correlationId); SAME(l, T, DT_F_DEVICE, deviceId);            \
        SAME(l, T, DT_F_CONTEXT, contextId); SAME(l, T, DT_F_STREAM, streamId);                    \
        SAME(l, T, DT_F_GRID_X, gridX); SAME(l, T, DT_F_GRID_Z, gridZ);                            \
        SAME(l, T, DT_F_BLOCK_X, blockX); SAME(l, T, DT_F_BLOCK_Z, blockZ);                        \
        SAME(l, T, DT_F_REGISTERS, registersPerThread);                                            \
        SAME(l, T, DT_F_STATIC_SHARED, staticSharedMemory);                                        \
        SAME(l, T, DT_F_DYNAMIC_SHARED, dynamicSharedMemory); SAME(l, T, DT_F_NAME, name);         \
        SAME(l, T, DT_F_QUEUED, queued); SAME(l, T, DT_F_SUBMITTED, submitted);                    \
    } while (0)

#define COPY_FIELDS(l, T)                                                                          \
    do {                                                                                           \
        CHECK_EQ((l)->size, sizeof(T));                                                            \
        SAME(l, T, DT_F_START, start); SAME(l, T, DT_F_END, end);                                  \
        SAME(l, T, DT_F_CORRELATION, correlationId); SAME(l, T, DT_F_DEVICE, deviceId);            \
        SAME(l, T, DT_F_CONTEXT, contextId); SAME(l, T, DT_F_STREAM, streamId);                    \
        SAME(l, T, DT_F_BYTES, bytes); SAME(l, T, DT_F_COPY_KIND, copyKind);                       \
        SAME(l, T, DT_F_SRC_KIND, srcKind); SAME(l, T, DT_F_DST_KIND, dstKind);                    \
        SAME(l, T, DT_F_FLAGS, flags);                                                             \
    } while (0)

#define FILL_FIELDS(l, T)                                                                          \
    do {                                                                                           \
        CHECK_EQ((l)->size, sizeof(T));                                                            \
        SAME(l, T, DT_F_START, start); SAME(l, T, DT_F_END, end);                                  \
        SAME(l, T, DT_F_CORRELATION, correlationId); SAME(l, T, DT_F_DEVICE, deviceId);            \
        SAME(l, T, DT_F_CONTEXT, contextId); SAME(l, T, DT_F_STREAM, streamId);                    \
        SAME(l, T, DT_F_BYTES, bytes); SAME(l, T, DT_F_VALUE, value);                              \
        SAME(l, T, DT_F_FLAGS, flags); SAME(l, T, DT_F_MEMORY_KIND, memoryKind);                   \
    } while (0)

static void mcpti_versions(void)
{
    const dt_record_layout *set = dt__cf_layouts_cuda11;
    KERNEL_FIELDS(layout(set, DT_CF_KIND_CONCURRENT_KERNEL), CUpti_ActivityKernel8);
    COPY_FIELDS(layout(set, DT_CF_KIND_MEMCPY), CUpti_ActivityMemcpy5);
    FILL_FIELDS(layout(set, DT_CF_KIND_MEMSET), CUpti_ActivityMemset4);
}

static void ppu_versions(void)
{
    const dt_record_layout *set = dt__cf_layouts_cuda12;
    KERNEL_FIELDS(layout(set, DT_CF_KIND_CONCURRENT_KERNEL), CUpti_ActivityKernel9);
    COPY_FIELDS(layout(set, DT_CF_KIND_MEMCPY), CUpti_ActivityMemcpy5);
    FILL_FIELDS(layout(set, DT_CF_KIND_MEMSET), CUpti_ActivityMemset4);
}

static void mupti_versions(void)
{
    const dt_record_layout *set = dt__cf_layouts_kernel6;
    KERNEL_FIELDS(layout(set, DT_CF_KIND_CONCURRENT_KERNEL), CUpti_ActivityKernel6);
    COPY_FIELDS(layout(set, DT_CF_KIND_MEMCPY), CUpti_ActivityMemcpy4);
    FILL_FIELDS(layout(set, DT_CF_KIND_MEMSET), CUpti_ActivityMemset3);
    const dt_record_layout *y = layout(set, DT_CF_KIND_SYNCHRONIZATION);
    CHECK_EQ(y->size, sizeof(CUpti_ActivitySynchronization));
    SAME(y, CUpti_ActivitySynchronization, DT_F_START, start);
    SAME(y, CUpti_ActivitySynchronization, DT_F_STREAM, streamId);
    SAME(y, CUpti_ActivitySynchronization, DT_F_CORRELATION, correlationId);
}

extern dt_engine dt__engine_cupti;

/* CUPTI's own versions, chosen by the loaded library's API version: CUDA
   12's Kernel9, CUDA 13.0's Kernel10 (sizes known), 13.1's Kernel11 read
   at Kernel10's offsets with the stride left to the iterator; MEMORY2 is
   decoded as Memory4 in both CUDA 13 sets. */
static void cupti_versions(void)
{
    static const struct { uint32_t api; const char *what; int sizes_known; size_t kernel; } cases[] = {
        {26, "CUDA 12", 0, sizeof(CUpti_ActivityKernel9)},
        {130000, "CUDA 13 (Kernel10", 1, sizeof(CUpti_ActivityKernel10)},
        {130001, "CUDA 13 (Kernel10", 1, sizeof(CUpti_ActivityKernel10)},
        {DT_CF_API_KERNEL11, "CUDA 13.1 (Kernel11", 0, sizeof(CUpti_ActivityKernel10)},
        {130200, "CUDA 13.1 (Kernel11", 0, sizeof(CUpti_ActivityKernel10)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dt_decoder d;
        dt__decoder_init(&d, dt__engine_cupti.v, cases[i].api);
        CHECK(strncmp(d.set->what, cases[i].what, strlen(cases[i].what)) == 0, "%u: %s", (unsigned)cases[i].api,
              d.set->what);
        CHECK_EQ(d.sizes_known, cases[i].sizes_known);
        const dt_record_layout *k = dt__decoder_layout(&d, DT_CF_KIND_CONCURRENT_KERNEL);
        REQUIRE(k != NULL);
        CHECK_EQ(k->size, cases[i].kernel);
        if (cases[i].api < 130000) continue;
        const dt_record_layout *m = dt__decoder_layout(&d, DT_CF_KIND_MEMORY2);
        REQUIRE(m != NULL);
        CHECK_EQ(m->size, sizeof(CUpti_ActivityMemory4));
        CHECK(m->decode != NULL, "MEMORY2 walked over, not decoded");
    }
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(mcpti_versions), DT_TEST(ppu_versions), DT_TEST(mupti_versions),
             DT_TEST(cupti_versions))

#else
#include "cupti_test_util.h"
#endif

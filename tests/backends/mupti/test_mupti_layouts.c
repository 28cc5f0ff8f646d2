/*
 * MUPTI's records are CUPTI's same-numbered versions (Kernel6 168 bytes,
 * Memcpy4 80, Memset3 80): the backend walks and decodes them through
 * MUPTI's layouts, and the emulator writes and iterates exactly those. Read
 * with CUDA 13's sizes the same buffer would be garbage: the versions
 * matter.
 */
#include <dlfcn.h>
#include <string.h>

#include "backends/cupti_family.h"
#include "backends/mupti_abi.h"
#include "cf_records.h"
#include "dt_check.h"
#include "dt_internal.h"
#include "dt_test_session.h"

extern dt_engine dt__engine_mupti;

static uint8_t g_buf[4096] __attribute__((aligned(8)));
static size_t g_used;

static int setup(void)
{
    emu_cf_options o = emu_cf_cuda13();
    o.kernel_size = DT_CF_KERNEL6_SIZE;
    o.memcpy_size = DT_CF_MEMCPY4_SIZE;
    o.memset_size = DT_CF_MEMSET3_SIZE;
    o.peer_as_memcpy2 = 0;
    emu_activity recs[5] = {
        {.kind = EMU_REC_RUNTIME, .start = 1000, .end = 2000, .correlation = 1},
        {.kind = EMU_REC_KERNEL, .start = 1500, .end = 1900, .correlation = 1, .device = 1, .stream = 3},
        {.kind = EMU_REC_MEMCPY, .start = 2000, .end = 2100, .correlation = 2},
        {.kind = EMU_REC_MEMSET, .start = 2200, .end = 2300, .correlation = 3},
        {.kind = EMU_REC_DRIVER, .start = 1100, .end = 1800, .correlation = 4},
    };
    recs[0].u.api.cbid = DT_CF_RT_LAUNCH_KERNEL;
    recs[4].u.api.cbid = DT_CF_DRV_LAUNCH_KERNEL;
    recs[1].u.kernel.name = "_Z4axpyv";
    recs[1].u.kernel.grid[0] = 9;
    recs[2].u.memcpy.copy_kind = EMU_COPY_DTOH;
    recs[2].u.memcpy.bytes = 4096;
    recs[3].u.memset.bytes = 256;
    for (int i = 0; i < 5; i++) {
        emu_cf_write_record(g_buf + g_used, &recs[i], &o);
        g_used += emu_cf_record_size(recs[i].kind, &o);
    }
    return 0;
}

static void record_versions_are_cuptis_of_the_same_number(void)
{
    dt_decoder d;
    dt__decoder_init(&d, dt__engine_mupti.v, 0);
    CHECK_EQ(dt__decoder_layout(&d, DT_CF_KIND_CONCURRENT_KERNEL)->size, 168);
    CHECK_EQ(dt__decoder_layout(&d, DT_CF_KIND_MEMCPY)->size, 80);
    CHECK_EQ(dt__decoder_layout(&d, DT_CF_KIND_MEMSET)->size, 80);
    CHECK_EQ(dt__decoder_layout(&d, DT_CF_KIND_RUNTIME)->size, 40);
    CHECK_EQ(dt__decoder_layout(&d, DT_CF_KIND_SYNCHRONIZATION)->size, 40);
    dt_session *s = dt_test_session(0);
    dt__decoder_run(&d, s, g_buf, g_used, NULL);
    CHECK_EQ(s->sink.store.count, 5);
    CHECK_EQ(dt_session_loss_total(s), 0);
    const dt_rec *k = dt__store_at(&s->sink.store, 1);
    CHECK_STR(dt__intern_get(&s->names, k->name), "axpy()");
    CHECK_EQ(k->device, 1);
    CHECK_EQ(k->lane, 3);
    CHECK_EQ(s->launches.configs[k->u.kernel.config].grid[0], 9);
    CHECK_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 0)->name), "musaLaunchKernel");
    CHECK_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 4)->name), "muLaunchKernel");
    CHECK_EQ(dt__store_at(&s->sink.store, 2)->u.memcpy.bytes, 4096);
    dt_session_destroy(s);
}

/* the emulator's iterator agrees with the backend's sizes */
static void emulator_iterates_the_same_versions(void)
{
    if (!DT_EMULATOR[0]) SKIP("the MUPTI emulator was not built");
    void *emu = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(emu != NULL, "%s", dlerror());
    int (*next)(uint8_t *, size_t, void **);
    *(void **)&next = dlsym(emu, "muptiActivityGetNextRecord");
    REQUIRE(next != NULL);
    dt_decoder d;
    dt__decoder_init(&d, dt__engine_mupti.v, 0);
    void *a = NULL, *b = NULL;
    for (int i = 0; i < 5; i++) {
        REQUIRE_EQ(next(g_buf, g_used, &a), DT_CF_SUCCESS);
        REQUIRE_EQ(dt__decoder_next(&d, g_buf, g_used, &b), DT_CF_SUCCESS);
        REQUIRE(a == b, "record %d", i);
    }
    CHECK_EQ(next(g_buf, g_used, &a), DT_CF_ERROR_MAX_LIMIT_REACHED);
}

/* CUDA 13's sizes misread the same bytes: the record versions matter */
static void cuda13_sizes_misread_the_buffer(void)
{
    const dt_vendor *mupti = dt__engine_mupti.v;
    dt_vendor cuda13_sized = *mupti;
    static const dt_layout_set cuda13 = DT_LAYOUT_SET(0, "CUDA 13", UINT32_MAX, dt__cf_layouts_cuda13);
    cuda13_sized.records.layout_sets = &cuda13;
    cuda13_sized.records.layout_set_count = 1;
    dt_decoder d;
    dt__decoder_init(&d, &cuda13_sized, 0);
    dt_session *s = dt_test_session(0);
    dt__decoder_run(&d, s, g_buf, g_used, NULL);
    CHECK(s->sink.store.count < 5 || dt_session_loss_total(s) > 0, "%zu events, %llu lost", s->sink.store.count,
          (unsigned long long)dt_session_loss_total(s));
    dt_session_destroy(s);
}

DT_TEST_MAIN(setup, NULL, DT_TEST(record_versions_are_cuptis_of_the_same_number),
             DT_TEST(emulator_iterates_the_same_versions), DT_TEST(cuda13_sizes_misread_the_buffer))

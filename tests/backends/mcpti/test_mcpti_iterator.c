/*
 * MCPTI's iterator returns a stale record after an external-correlation
 * record (MACA 3.8, as the emulator reproduces it): walking with it would
 * decode one record twice and stop, losing the rest of the buffer. The
 * engine walks MCPTI buffers by the record sizes instead and keeps every
 * record; and MetaX's name function names the API records.
 */
#include <dlfcn.h>
#include <string.h>

#include "backends/engine/engine.h"
#include "backends/mcpti_abi.h"
#include "cf_records.h"
#include "dt_check.h"
#include "dt_internal.h"
#include "dt_test_session.h"

extern dt_engine dt__engine_mcpti;

typedef int (*next_fn)(uint8_t *, size_t, void **);

static void *g_emu;
static next_fn g_next;
static uint8_t g_buf[4096] __attribute__((aligned(8)));
static size_t g_used, g_offsets[8];
static int g_count;

static int setup(void)
{
    if (!DT_EMULATOR[0]) return 0;
    g_emu = dlopen(DT_EMULATOR, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_emu != NULL, "%s", dlerror());
    *(void **)&g_next = dlsym(g_emu, "mcptiActivityGetNextRecord");
    REQUIRE(g_next != NULL);
    /* an API record, its external correlation, the kernel, another API call */
    emu_cf_options o = emu_cf_cuda13();
    o.kernel_size = DT_CF_KERNEL8_SIZE;
    o.memcpy_size = DT_CF_MEMCPY5_SIZE;
    o.peer_as_memcpy2 = 0;
    emu_activity recs[4] = {
        {.kind = EMU_REC_RUNTIME, .start = 1000, .end = 2000, .correlation = 7},
        {.kind = EMU_REC_EXTERNAL, .correlation = 7},
        {.kind = EMU_REC_KERNEL, .start = 1500, .end = 1900, .correlation = 7},
        {.kind = EMU_REC_RUNTIME, .start = 3000, .end = 4000, .correlation = 8},
    };
    recs[0].u.api.cbid = recs[3].u.api.cbid = MCPTI_RUNTIME_CBID_mcLaunchKernel;
    recs[1].u.external.external_kind = DT_CF_EXTERNAL_CUSTOM0;
    recs[1].u.external.external_id = 42;
    recs[2].u.kernel.name = "k";
    for (int i = 0; i < 4; i++) {
        g_offsets[g_count++] = g_used;
        emu_cf_write_record(g_buf + g_used, &recs[i], &o);
        g_used += emu_cf_record_size(recs[i].kind, &o);
    }
    return 0;
}

#define REQUIRE_EMULATOR() \
    do {                   \
        if (!g_emu) SKIP("the MCPTI emulator was not built"); \
    } while (0)

static void iterator_is_stale_after_external_correlation(void)
{
    REQUIRE_EMULATOR();
    void *rec = NULL;
    REQUIRE_EQ(g_next(g_buf, g_used, &rec), DT_CF_SUCCESS);
    REQUIRE((uint8_t *)rec == g_buf + g_offsets[0]);
    REQUIRE_EQ(g_next(g_buf, g_used, &rec), DT_CF_SUCCESS);
    REQUIRE((uint8_t *)rec == g_buf + g_offsets[1]);
    /* the step past the external-correlation record does not move */
    REQUIRE_EQ(g_next(g_buf, g_used, &rec), DT_CF_SUCCESS);
    REQUIRE((uint8_t *)rec == g_buf + g_offsets[1]);
}

static void engine_walks_by_record_sizes(void)
{
    REQUIRE_EMULATOR();
    dt_decoder d;
    dt__decoder_init(&d, dt__engine_mcpti.v, MCPTI_API_VERSION_MACA_3_5);
    REQUIRE(dt__engine_mcpti.v->caps & DT_VCAP_OWN_STRIDES);
    /* with the vendor's iterator: the repeated record ends the walk */
    dt_session *s = dt_test_session(0);
    dt__decoder_run(&d, s, g_buf, g_used, (dt_vendor_next_fn)g_next);
    CHECK_EQ(s->sink.store.count, 1);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 1);
    dt_session_destroy(s);
    /* by the sizes, as the backend does: both API calls and the kernel */
    s = dt_test_session(0);
    dt__decoder_run(&d, s, g_buf, g_used, NULL);
    CHECK_EQ(s->sink.store.count, 3);
    CHECK_EQ(dt_session_loss_total(s), 0);
    CHECK_EQ(s->sink.corr_log_count, 1);
    CHECK_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 0)->name), "mcLaunchKernel");
    dt_session_destroy(s);
}

static void name_function_takes_the_activity_kind(void)
{
    REQUIRE_EMULATOR();
    int (*name)(uint32_t, uint32_t, const char **);
    *(void **)&name = dlsym(g_emu, "mcptiActivityGetApiName");
    REQUIRE(name != NULL);
    const char *n = NULL;
    REQUIRE_EQ(name(DT_CF_KIND_RUNTIME, MCPTI_RUNTIME_CBID_mcMemcpyAsync, &n), DT_CF_SUCCESS);
    REQUIRE_STR(n, "mcMemcpyAsync");
    REQUIRE_NE(name(DT_CF_KIND_KERNEL, MCPTI_RUNTIME_CBID_mcMemcpyAsync, &n), DT_CF_SUCCESS);
}

DT_TEST_MAIN(setup, NULL, DT_TEST(iterator_is_stale_after_external_correlation),
             DT_TEST(engine_walks_by_record_sizes), DT_TEST(name_function_takes_the_activity_kind))

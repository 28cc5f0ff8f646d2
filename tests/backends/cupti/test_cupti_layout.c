/*
 * Layout fidelity of the CUPTI emulator's records, with NVIDIA's own
 * libcupti as the oracle: buffers written by the emulator's record writer
 * are walked with the real cuptiActivityGetNextRecord (which works without a
 * GPU or driver), and every record must come back at the offset, with the
 * kind and the key fields the writer put there. The backend's own iterator
 * and the emulator's exported one must walk the same buffers identically.
 * Skipped only when the real libcupti is not installed.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"
#include "dt_test_session.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

#include "backends/cupti_family.h"
#include "cupti_engine.h"

typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);

static void *g_real;
static dt_decoder D;
static next_fn g_real_next;
static char g_real_path[600];

static int open_real(void)
{
    D = cupti_decoder();
    const char *home = getenv("CUDA_HOME");
    const char *cands[4];
    char p1[512], p2[512];
    size_t n = 0;
    if (home && *home) {
        snprintf(p1, sizeof p1, "%s/lib64/libcupti.so.13", home);
        snprintf(p2, sizeof p2, "%s/extras/CUPTI/lib64/libcupti.so.13", home);
        cands[n++] = p1;
        cands[n++] = p2;
    }
    cands[n++] = "/usr/local/cuda/lib64/libcupti.so.13";
    cands[n++] = "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13";
    for (size_t i = 0; i < n && !g_real; i++) {
        g_real = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
        if (g_real) snprintf(g_real_path, sizeof g_real_path, "%s", cands[i]);
    }
    if (g_real) g_real_next = (next_fn)dlsym(g_real, "cuptiActivityGetNextRecord");
    return 0;
}

#define REQUIRE_REAL()                                                          \
    do {                                                                        \
        if (!g_real_next) {                                                     \
            SKIP("the real libcupti.so.13 is not installed");                         \
        }                                                                       \
    } while (0)

#define T0 UINT64_C(1790000000000000000)
#define MAX_RECS 16

typedef struct layout {
    _Alignas(8) uint8_t bytes[4096];
    size_t used;
    size_t offsets[MAX_RECS];
    uint32_t kinds[MAX_RECS];
    int count;
} layout;

static void note(layout *l, uint32_t kind, size_t size)
{
    l->offsets[l->count] = l->used;
    l->kinds[l->count] = kind;
    l->count++;
    l->used += size;
}

static void add(layout *l, const emu_activity *a, const emu_cf_options *o, uint32_t cupti_kind)
{
    size_t size = emu_cf_record_size(a->kind, o);
    memset(l->bytes + l->used, 0, size);
    emu_cf_write_record(l->bytes + l->used, a, o);
    note(l, cupti_kind, size);
}

/* Every record kind the emulator writes, in one buffer. */
static void build(layout *l)
{
    memset(l, 0, sizeof *l);
    emu_cf_options o = cupti_options(1);
    emu_activity a;

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_RUNTIME; a.start = T0 + 10; a.end = T0 + 90; a.correlation = 101;
    a.u.api.cbid = 211; a.u.api.process = 1234; a.u.api.thread = 5678; a.u.api.return_value = 0;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_RUNTIME);

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_EXTERNAL; a.correlation = 101;
    a.u.external.external_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    a.u.external.external_id = UINT64_C(0x1000000000042);
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_KERNEL; a.start = T0 + 100; a.end = T0 + 900; a.correlation = 101;
    a.device = 1; a.context = 2; a.stream = 14;
    a.u.kernel.name = "_Z4axpyIfEvT_PKS0_PS0_i";
    a.u.kernel.grid[0] = 80; a.u.kernel.grid[1] = 3; a.u.kernel.grid[2] = 2;
    a.u.kernel.block[0] = 128; a.u.kernel.block[1] = 2; a.u.kernel.block[2] = 1;
    a.u.kernel.registers_per_thread = 72;
    a.u.kernel.static_shared_memory = 4096; a.u.kernel.dynamic_shared_memory = 8192;
    a.u.kernel.queued = T0 + 50; a.u.kernel.submitted = T0 + 60;
    a.u.kernel.grid_id = 77;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_DRIVER; a.start = T0 + 20; a.end = T0 + 80; a.correlation = 102;
    a.u.api.cbid = 307; a.u.api.process = 1234; a.u.api.thread = 5678;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_DRIVER);

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_MEMCPY; a.start = T0 + 1000; a.end = T0 + 3000; a.correlation = 103;
    a.device = 0; a.context = 2; a.stream = 15;
    a.u.memcpy.copy_kind = EMU_COPY_HTOD; a.u.memcpy.src_memory = EMU_MEM_PINNED;
    a.u.memcpy.dst_memory = EMU_MEM_DEVICE; a.u.memcpy.bytes = UINT64_C(1) << 33; a.u.memcpy.async = 1;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_MEMCPY);

    a.correlation = 104;
    a.u.memcpy.copy_kind = EMU_COPY_PTOP; a.u.memcpy.src_device = 0; a.u.memcpy.dst_device = 1;
    a.u.memcpy.src_memory = a.u.memcpy.dst_memory = EMU_MEM_DEVICE;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_MEMCPY2);

    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_MEMSET; a.start = T0 + 4000; a.end = T0 + 4100; a.correlation = 105;
    a.device = 1; a.context = 2; a.stream = 16;
    a.u.memset.bytes = 65536; a.u.memset.value = 0x5a; a.u.memset.memory = EMU_MEM_DEVICE;
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_MEMSET);

    size_t dsize = sizeof(dt_cf_device);
    memset(l->bytes + l->used, 0, dsize);
    emu_cf_write_device(l->bytes + l->used, 1, "devtrace emulated GPU 1");
    note(l, CUPTI_ACTIVITY_KIND_DEVICE, dsize);

    emu_cf_options legacy = cupti_options(0);
    legacy.kernel_kind = CUPTI_ACTIVITY_KIND_KERNEL;
    legacy.peer_as_memcpy2 = 0;
    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_KERNEL; a.start = T0 + 5000; a.end = T0 + 5001; a.correlation = 106;
    a.u.kernel.name = "serial";
    add(l, &a, &legacy, CUPTI_ACTIVITY_KIND_KERNEL);
}

/* Walk with an iterator; returns the number of records and the final
   status. */
static int walk(next_fn next, uint8_t *buf, size_t valid, size_t *offsets, CUptiResult *last)
{
    CUpti_Activity *rec = NULL;
    int n = 0;
    for (;;) {
        CUptiResult r = next(buf, valid, &rec);
        if (r != CUPTI_SUCCESS) { *last = r; return n; }
        REQUIRE(n < MAX_RECS);
        offsets[n++] = (size_t)((uint8_t *)rec - buf);
    }
}

static void test_real_iterator_offsets_and_kinds(void)
{
    REQUIRE_REAL();
    layout *l = calloc(1, sizeof *l);
    build(l);
    size_t offs[MAX_RECS];
    CUptiResult last;
    int n = walk(g_real_next, l->bytes, l->used, offs, &last);
    REQUIRE_EQ(last, CUPTI_ERROR_MAX_LIMIT_REACHED);
    REQUIRE_EQ(n, l->count);
    for (int i = 0; i < n; i++) {
        REQUIRE_EQ(offs[i], l->offsets[i]);
        uint32_t kind;
        memcpy(&kind, l->bytes + offs[i], sizeof kind);
        REQUIRE_EQ(kind, l->kinds[i]);
    }
    free(l);
}

static void test_real_iterator_key_fields(void)
{
    REQUIRE_REAL();
    layout *l = calloc(1, sizeof *l);
    build(l);
    CUpti_Activity *rec = NULL;
    uint8_t *b = l->bytes;
    size_t v = l->used;

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityAPI *api = (const CUpti_ActivityAPI *)rec;
    REQUIRE_EQ(api->cbid, 211);
    REQUIRE(api->start == T0 + 10 && api->end == T0 + 90);
    REQUIRE_EQ(api->processId, 1234);
    REQUIRE_EQ(api->threadId, 5678);
    REQUIRE_EQ(api->correlationId, 101);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
    REQUIRE_EQ(e->externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
    REQUIRE(e->externalId == UINT64_C(0x1000000000042));
    REQUIRE_EQ(e->correlationId, 101);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    REQUIRE(k->start == T0 + 100 && k->end == T0 + 900);
    REQUIRE_EQ(k->deviceId, 1);
    REQUIRE_EQ(k->contextId, 2);
    REQUIRE_EQ(k->streamId, 14);
    REQUIRE_EQ(k->gridX, 80);
    REQUIRE_EQ(k->gridY, 3);
    REQUIRE_EQ(k->gridZ, 2);
    REQUIRE_EQ(k->blockX, 128);
    REQUIRE_EQ(k->blockY, 2);
    REQUIRE_EQ(k->registersPerThread, 72);
    REQUIRE_EQ(k->staticSharedMemory, 4096);
    REQUIRE_EQ(k->dynamicSharedMemory, 8192);
    REQUIRE_EQ(k->correlationId, 101);
    REQUIRE_EQ(k->gridId, 77);
    REQUIRE_STR(k->name, "_Z4axpyIfEvT_PKS0_PS0_i");
    REQUIRE(k->queued == T0 + 50 && k->submitted == T0 + 60);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    api = (const CUpti_ActivityAPI *)rec;
    REQUIRE_EQ(api->kind, CUPTI_ACTIVITY_KIND_DRIVER);
    REQUIRE_EQ(api->cbid, 307);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
    REQUIRE_EQ(m->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    REQUIRE_EQ(m->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    REQUIRE_EQ(m->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    REQUIRE_EQ(m->flags, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
    REQUIRE(m->bytes == UINT64_C(1) << 33);
    REQUIRE_EQ(m->streamId, 15);
    REQUIRE_EQ(m->correlationId, 103);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityMemcpyPtoP4 *p = (const CUpti_ActivityMemcpyPtoP4 *)rec;
    REQUIRE_EQ(p->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
    REQUIRE_EQ(p->srcDeviceId, 0);
    REQUIRE_EQ(p->dstDeviceId, 1);
    REQUIRE_EQ(p->correlationId, 104);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityMemset4 *z = (const CUpti_ActivityMemset4 *)rec;
    REQUIRE_EQ(z->value, 0x5a);
    REQUIRE_EQ(z->bytes, 65536);
    REQUIRE_EQ(z->memoryKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    REQUIRE_EQ(z->streamId, 16);
    REQUIRE_EQ(z->correlationId, 105);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)rec;
    REQUIRE_EQ(d->id, 1);
    REQUIRE_EQ(d->numMultiprocessors, EMU_CF_DEV_SMS);
    REQUIRE_EQ(d->computeCapabilityMajor, EMU_CF_DEV_CC_MAJOR);
    REQUIRE_STR(d->name, "devtrace emulated GPU 1");

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_SUCCESS);
    k = (const CUpti_ActivityKernel10 *)rec;
    REQUIRE_EQ(k->kind, CUPTI_ACTIVITY_KIND_KERNEL);
    REQUIRE_STR(k->name, "serial");
    /* latency timestamps off: CUPTI's "unknown" */
    REQUIRE(k->queued == CUPTI_TIMESTAMP_UNKNOWN && k->submitted == CUPTI_TIMESTAMP_UNKNOWN);

    REQUIRE_EQ(g_real_next(b, v, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    free(l);
}

/* The backend's iterator and the emulator's exported one answer exactly as
   the real library does, on whole, cut and corrupt buffers. */
static void compare_iterators(next_fn other, const char *what)
{
    layout *l = calloc(1, sizeof *l);
    build(l);
    size_t cuts[] = {l->used, l->used - 1, l->used - 100, l->offsets[3] + 3, 40, 39, 4, 3, 0};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        size_t ra[MAX_RECS], rb[MAX_RECS];
        CUptiResult la = CUPTI_SUCCESS, lb = CUPTI_SUCCESS;
        int na = walk(g_real_next, l->bytes, cuts[c], ra, &la);
        int nb = walk(other, l->bytes, cuts[c], rb, &lb);
        if (na != nb || la != lb) printf("%s differs at valid size %zu\n", what, cuts[c]);
        REQUIRE_EQ(na, nb);
        REQUIRE_EQ(la, lb);
        for (int i = 0; i < na; i++) REQUIRE_EQ(ra[i], rb[i]);
    }
    /* a kind CUPTI never defined, at the start and in the middle */
    uint32_t kinds[] = {EMU_CF_UNKNOWN_KIND, 0};
    for (size_t i = 0; i < 2; i++) {
        for (size_t at = 0; at < 2; at++) {
            build(l);
            memcpy(l->bytes + l->offsets[at * 4], &kinds[i], sizeof kinds[i]);
            size_t ra[MAX_RECS], rb[MAX_RECS];
            CUptiResult la, lb;
            int na = walk(g_real_next, l->bytes, l->used, ra, &la);
            int nb = walk(other, l->bytes, l->used, rb, &lb);
            REQUIRE_EQ(la, CUPTI_ERROR_INVALID_KIND);
            REQUIRE_EQ(lb, CUPTI_ERROR_INVALID_KIND);
            REQUIRE_EQ(na, nb);
        }
    }
    free(l);
}

/* The engine's walk by CUDA 13's record sizes, as a CUPTI iterator. */
static CUptiResult engine_next(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    return (CUptiResult)dt__decoder_next(&D, buffer, valid, (void **)record);
}

static void test_backend_iterator_matches_real(void)
{
    REQUIRE_REAL();
    compare_iterators(engine_next, "the engine's walk");
}

static void test_emulator_iterator_matches_real(void)
{
    REQUIRE_REAL();
    char path[1024];
    snprintf(path, sizeof path, "%s/emu/libcupti.so.13", DT_BINARY_DIR);
    void *emu = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!emu) {
        SKIP("the emulator %s was not built", path);
    }
    next_fn emu_next = (next_fn)dlsym(emu, "cuptiActivityGetNextRecord");
    REQUIRE(emu_next != NULL);
    REQUIRE(dlsym(emu, "devtrace_emulator_cupti") != NULL);
    compare_iterators(emu_next, "emulator cuptiActivityGetNextRecord");
    dlclose(emu);
}

/* The decoder, driven by the real iterator, keeps every record. */
static void test_decode_with_real_iterator(void)
{
    REQUIRE_REAL();
    layout *l = calloc(1, sizeof *l);
    build(l);
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    dt__decoder_run(&D, s, l->bytes, l->used, (dt_vendor_next_fn)g_real_next);
    /* runtime, kernel, driver, memcpy, memcpy2, memset, kernel */
    REQUIRE_EQ(s->sink.store.count, 7);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    /* the External id link is logged; it reaches the correlation map at stop */
    uint64_t ext = 0;
    for (size_t i = 0; i < s->sink.corr_log_count; i++)
        if (s->sink.corr_log[2 * i] == 101) ext = s->sink.corr_log[2 * i + 1];
    REQUIRE(ext == UINT64_C(0x1000000000042));
    REQUIRE(s->devices[1].valid);
    REQUIRE_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 1)->name), "void axpy<float>(float, float const*, float*, int)");
    dt_session_destroy(s);
    free(l);
}

/* The offsets the decoder relies on, as measured from the CUDA 13 headers
   (research: vendor_abis.md 1.5). A toolkit that moved them would break
   decoding of older libcupti records. */
static void test_header_offsets(void)
{
    REQUIRE_EQ(sizeof(CUpti_ActivityKernel10), 216);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, registersPerThread), 6);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, start), 16);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, deviceId), 40);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, gridX), 52);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, correlationId), 92);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, name), 104);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, queued), 120);
    REQUIRE_EQ(offsetof(CUpti_ActivityKernel10, submitted), 128);
    REQUIRE_EQ(sizeof(CUpti_ActivityMemcpy6), 96);
    REQUIRE_EQ(offsetof(CUpti_ActivityMemcpy6, bytes), 8);
    REQUIRE_EQ(offsetof(CUpti_ActivityMemcpy6, correlationId), 44);
    REQUIRE_EQ(sizeof(CUpti_ActivityMemcpyPtoP4), 96);
    REQUIRE_EQ(sizeof(CUpti_ActivityMemset4), 88);
    REQUIRE_EQ(offsetof(CUpti_ActivityMemset4, memoryKind), 50);
    REQUIRE_EQ(sizeof(CUpti_ActivityAPI), 40);
    REQUIRE_EQ(offsetof(CUpti_ActivityAPI, threadId), 28);
    REQUIRE_EQ(sizeof(CUpti_ActivityExternalCorrelation), 24);
    REQUIRE_EQ(offsetof(CUpti_ActivityExternalCorrelation, externalId), 8);
    REQUIRE_EQ(offsetof(CUpti_ActivityExternalCorrelation, correlationId), 16);
    REQUIRE_EQ(sizeof(CUpti_ActivityDevice5), 184);
    REQUIRE_EQ(sizeof(CUpti_ActivityOverhead3), 56);
    REQUIRE_EQ(sizeof(CUpti_ActivitySynchronization2), 56);
}

/* A kernel a forced flush handed back still running has a start and no
   end: NVIDIA's iterator returns it like any record (it does not refuse
   it), and the decoder counts it as unfinished and keeps what follows. */
static void test_unfinished_with_real_iterator(void)
{
    REQUIRE_REAL();
    layout *l = calloc(1, sizeof *l);
    emu_cf_options o = cupti_options(0);
    emu_activity a;
    memset(&a, 0, sizeof a);
    a.kind = EMU_REC_KERNEL; a.start = T0 + 100; a.end = 0; a.correlation = 7;
    a.u.kernel.name = "running";
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    a.end = T0 + 200;
    a.correlation = 8;
    a.u.kernel.name = "done";
    add(l, &a, &o, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUpti_Activity *rec = NULL;
    REQUIRE_EQ(g_real_next(l->bytes, l->used, &rec), CUPTI_SUCCESS);
    REQUIRE_EQ(g_real_next(l->bytes, l->used, &rec), CUPTI_SUCCESS);
    REQUIRE_EQ(g_real_next(l->bytes, l->used, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    dt__decoder_run(&D, s, l->bytes, l->used, (dt_vendor_next_fn)g_real_next);
    REQUIRE_EQ(s->sink.store.count, 1);
    REQUIRE_STR(dt__intern_get(&s->names, dt__store_at(&s->sink.store, 0)->name), "done");
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNFINISHED), 1);
    REQUIRE_EQ(dt_session_loss_total(s), 1);
    dt_session_destroy(s);
    free(l);
}

/* The named subscribe's parameters are the size NVIDIA's library expects:
   it refuses a wrong size (INVALID_PARAMETER) before it looks for a driver,
   and takes devtrace's (without a driver it then answers UNKNOWN and
   clears the holder's name). */
static void test_named_subscribe_with_real_library(void)
{
    REQUIRE_REAL();
    void *fn = dlsym(g_real, "cuptiSubscribe_v2");
    REQUIRE(fn != NULL);
    int (*raw)(void **, void *, void *, dt_cf_subscriber_params *) =
        (int (*)(void **, void *, void *, dt_cf_subscriber_params *))fn;
    void *subscriber = NULL;
    dt_cf_subscriber_params wrong = {0, "devtrace", NULL, 0};
    REQUIRE_EQ(raw(&subscriber, NULL, NULL, &wrong), CUPTI_ERROR_INVALID_PARAMETER);
    char holder[64] = "not written";
    int r = dt__cf_subscribe_named(fn, &subscriber, NULL, NULL, "devtrace", holder, sizeof holder);
    printf("cuptiSubscribe_v2 with devtrace's parameters: %d, holder \"%s\"\n", r, holder);
    REQUIRE(r != CUPTI_ERROR_INVALID_PARAMETER);
    if (r == CUPTI_SUCCESS) {
        int (*unsubscribe)(void *) = (int (*)(void *))dlsym(g_real, "cuptiUnsubscribe");
        REQUIRE(unsubscribe != NULL);
        unsubscribe(subscriber);
    }
}

DT_TEST_MAIN(open_real, NULL,
             DT_TEST(test_header_offsets),
             DT_TEST(test_real_iterator_offsets_and_kinds),
             DT_TEST(test_real_iterator_key_fields),
             DT_TEST(test_backend_iterator_matches_real),
             DT_TEST(test_emulator_iterator_matches_real),
             DT_TEST(test_decode_with_real_iterator),
             DT_TEST(test_unfinished_with_real_iterator),
             DT_TEST(test_named_subscribe_with_real_library))

#else
#include "cupti_test_util.h"
#endif

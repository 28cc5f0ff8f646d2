/*
 * The CUPTI decoder on buffers written in CUPTI's layouts by the emulator's
 * record writer: every kind's fields, names, launch configurations, External
 * id links, device properties, and each loss reason counted exactly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"

#include "dt_internal.h"
#include "dt_test_session.h"

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>
#include <cupti_driver_cbid.h>

#include "cupti_engine.h"

#define T0 UINT64_C(1790000000000000000)

typedef struct buf {
    _Alignas(8) uint8_t bytes[1 << 16];
    size_t used;
} buf;

static emu_cf_options opts(void) { return cupti_options(0); }

static dt_decoder D;

static int setup(void)
{
    D = cupti_decoder();
    return 0;
}

static void put(buf *b, const emu_activity *a, const emu_cf_options *o)
{
    size_t n = emu_cf_record_size(a->kind, o);
    REQUIRE(b->used + n <= sizeof b->bytes);
    memset(b->bytes + b->used, 0, n);
    emu_cf_write_record(b->bytes + b->used, a, o);
    b->used += n;
}

static void put_kernel(buf *b, uint32_t corr, uint64_t start, uint64_t end, const char *name)
{
    emu_activity a = {.kind = EMU_REC_KERNEL, .start = start, .end = end, .correlation = corr,
                      .device = 1, .context = 7, .stream = 13};
    a.u.kernel.name = name;
    a.u.kernel.grid[0] = 64; a.u.kernel.grid[1] = 2; a.u.kernel.grid[2] = 1;
    a.u.kernel.block[0] = 256; a.u.kernel.block[1] = 1; a.u.kernel.block[2] = 1;
    a.u.kernel.registers_per_thread = 40;
    a.u.kernel.static_shared_memory = 1024;
    a.u.kernel.dynamic_shared_memory = 2048;
    a.u.kernel.queued = start - 500;
    a.u.kernel.submitted = start - 200;
    emu_cf_options o = opts();
    put(b, &a, &o);
}

static void put_api(buf *b, emu_rec_kind kind, uint32_t cbid, uint32_t corr, uint64_t start, uint64_t end)
{
    emu_activity a = {.kind = kind, .start = start, .end = end, .correlation = corr};
    a.u.api.cbid = cbid;
    a.u.api.process = 4242;
    a.u.api.thread = 777;
    a.u.api.return_value = 3;
    emu_cf_options o = opts();
    put(b, &a, &o);
}

static void put_external(buf *b, uint32_t kind, uint64_t id, uint32_t corr)
{
    emu_activity a = {.kind = EMU_REC_EXTERNAL, .correlation = corr};
    a.u.external.external_kind = kind;
    a.u.external.external_id = id;
    emu_cf_options o = opts();
    put(b, &a, &o);
}

/* Walked as CUPTI's iterator would, by the CUDA 13 record sizes. */
static void decode(dt_session *s, buf *b) { dt__decoder_run(&D, s, b->bytes, b->used, NULL); }

static size_t record_size(uint32_t kind)
{
    const dt_record_layout *l = dt__decoder_layout(&D, kind);
    return l ? l->size : 0;
}

static const char *name_of(dt_session *s, const dt_rec *r) { return dt__intern_get(&s->names, r->name); }

/* Links decoded from External-correlation records are logged by dt__corr_link
   and reach the correlation map only at stop: look them up in the log (the
   last link of a correlation wins, as in the map). */
static int logged_link(const dt_session *s, uint64_t correlation, uint64_t *external)
{
    int found = 0;
    for (size_t i = 0; i < s->sink.corr_log_count; i++)
        if (s->sink.corr_log[2 * i] == correlation) {
            *external = s->sink.corr_log[2 * i + 1];
            found = 1;
        }
    return found;
}

/* What dt_session_stop does with the links (session_finish.c). */
DT_HIDDEN void dt__corr_merge_chunks(dt_session *s, int keep);
static void merge_links(dt_session *s)
{
    dt__core_lock(s);
    dt__corr_merge_chunks(s, 1);
    dt__core_unlock(s);
}

static void test_kernel_fields(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    put_kernel(b, 21, T0 + 1000, T0 + 5000, "_Z6vecAddPfS_S_i");
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 1);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    REQUIRE_EQ(r->kind, DT_EVENT_KERNEL);
    REQUIRE(r->start == T0 + 1000 && r->end == T0 + 5000);
    REQUIRE_EQ(r->correlation, 21);
    REQUIRE_EQ(r->device, 1);
    REQUIRE_EQ(r->context, 7);
    REQUIRE_EQ(r->lane, 13);
    REQUIRE_EQ(r->flags & DT_REC_REALTIME, 0);
    REQUIRE_STR(name_of(s, r), "vecAdd(float*, float*, float*, int)");
    const dt_launch_config *cfg = &s->launches.configs[r->u.kernel.config];
    REQUIRE_EQ(cfg->grid[0], 64);
    REQUIRE_EQ(cfg->grid[1], 2);
    REQUIRE_EQ(cfg->block[0], 256);
    REQUIRE_EQ(cfg->registers_per_thread, 40);
    REQUIRE_EQ(cfg->static_shared_memory, 1024);
    REQUIRE_EQ(cfg->dynamic_shared_memory, 2048);
    /* latency timestamps were not enabled: CUPTI leaves them unknown */
    REQUIRE_EQ(r->u.kernel.queued_delta, DT_DELTA_UNKNOWN);
    REQUIRE_EQ(r->u.kernel.submitted_delta, DT_DELTA_UNKNOWN);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

static void test_kernel_latency(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    emu_activity a = {.kind = EMU_REC_KERNEL, .start = T0 + 1000, .end = T0 + 2000, .correlation = 1};
    a.u.kernel.name = "plain_c_kernel";
    a.u.kernel.queued = T0 + 400;      /* 600 ns before start */
    a.u.kernel.submitted = T0 + 3000;  /* after start: implausible, unknown */
    emu_cf_options o = opts();
    o.latency_timestamps = 1;
    put(b, &a, &o);
    a.u.kernel.name = NULL;
    a.u.kernel.queued = UINT64_MAX;    /* the pre-CUDA 13 "unknown" */
    a.u.kernel.submitted = T0 + 1000;  /* same as start: 0 */
    put(b, &a, &o);
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 2);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    REQUIRE_STR(name_of(s, r), "plain_c_kernel");
    REQUIRE_EQ(r->u.kernel.queued_delta, 600);
    REQUIRE_EQ(r->u.kernel.submitted_delta, DT_DELTA_UNKNOWN);
    r = dt__store_at(&s->sink.store, 1);
    REQUIRE_STR(name_of(s, r), "<unnamed kernel>");
    REQUIRE_EQ(r->u.kernel.queued_delta, DT_DELTA_UNKNOWN);
    REQUIRE_EQ(r->u.kernel.submitted_delta, 0);
    free(b);
    dt_session_destroy(s);
}

static void test_copies_and_memsets(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    emu_cf_options o = opts();
    emu_activity m = {.kind = EMU_REC_MEMCPY, .start = T0 + 10, .end = T0 + 110, .correlation = 5,
                      .device = 0, .context = 1, .stream = 7};
    m.u.memcpy.copy_kind = EMU_COPY_HTOD;
    m.u.memcpy.src_memory = EMU_MEM_PAGEABLE;
    m.u.memcpy.dst_memory = EMU_MEM_DEVICE;
    m.u.memcpy.bytes = 1 << 20;
    put(b, &m, &o);
    m.u.memcpy.copy_kind = EMU_COPY_DTOH;
    m.u.memcpy.src_memory = EMU_MEM_DEVICE;
    m.u.memcpy.dst_memory = EMU_MEM_PINNED;
    m.u.memcpy.async = 1;
    m.correlation = 6;
    put(b, &m, &o);
    m.u.memcpy.copy_kind = EMU_COPY_PTOP;   /* MEMCPY2 record */
    m.u.memcpy.src_memory = m.u.memcpy.dst_memory = EMU_MEM_DEVICE;
    m.u.memcpy.src_device = 2;
    m.u.memcpy.dst_device = 3;
    m.correlation = 7;
    put(b, &m, &o);
    emu_activity z = {.kind = EMU_REC_MEMSET, .start = T0 + 200, .end = T0 + 260, .correlation = 8,
                      .device = 0, .context = 1, .stream = 9};
    z.u.memset.bytes = 4096;
    z.u.memset.value = 0xab;
    z.u.memset.memory = EMU_MEM_DEVICE;
    z.u.memset.async = 1;
    put(b, &z, &o);
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 4);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    REQUIRE_EQ(r->kind, DT_EVENT_MEMCPY);
    REQUIRE_STR(name_of(s, r), "Memcpy HtoD (Pageable -> Device)");
    REQUIRE_EQ(r->u.memcpy.bytes, 1 << 20);
    REQUIRE_EQ(r->u.memcpy.copy_kind, DT_COPY_HTOD);
    REQUIRE_EQ(r->flags & DT_REC_ASYNC, 0);
    REQUIRE_EQ(r->lane, 7);
    r = dt__store_at(&s->sink.store, 1);
    REQUIRE_STR(name_of(s, r), "Memcpy DtoH (Device -> Pinned)");
    REQUIRE_EQ(r->u.memcpy.src_kind, DT_MEM_DEVICE);
    REQUIRE_EQ(r->u.memcpy.dst_kind, DT_MEM_PINNED);
    REQUIRE_EQ(r->flags & DT_REC_ASYNC, DT_REC_ASYNC);
    r = dt__store_at(&s->sink.store, 2);
    REQUIRE_STR(name_of(s, r), "Memcpy PtoP (Device -> Device)");
    REQUIRE_EQ(r->u.memcpy.copy_kind, DT_COPY_PTOP);
    REQUIRE_EQ(r->u.memcpy.src_device, 2);
    REQUIRE_EQ(r->u.memcpy.dst_device, 3);
    r = dt__store_at(&s->sink.store, 3);
    REQUIRE_EQ(r->kind, DT_EVENT_MEMSET);
    REQUIRE_STR(name_of(s, r), "Memset (Device)");
    REQUIRE_EQ(r->u.memset.bytes, 4096);
    REQUIRE_EQ(r->u.memset.value, 0xab);
    REQUIRE_EQ(r->u.memset.memory_kind, DT_MEM_DEVICE);
    REQUIRE_EQ(r->lane, 9);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

static void test_api_names(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    put_api(b, EMU_REC_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 30, T0 + 1, T0 + 9);
    put_api(b, EMU_REC_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 31, T0 + 2, T0 + 8);
    put_api(b, EMU_REC_RUNTIME, 9999, 32, T0 + 3, T0 + 4);
    put_api(b, EMU_REC_DRIVER, 65000, 33, T0 + 3, T0 + 4);
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 4);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    REQUIRE_EQ(r->kind, DT_EVENT_RUNTIME);
    REQUIRE_STR(name_of(s, r), "cudaLaunchKernel");
    REQUIRE_EQ(r->u.api.cbid, 211);
    REQUIRE_EQ(r->u.api.return_code, 3);
    REQUIRE_EQ(r->lane, 777);
    REQUIRE_EQ(r->context, 4242);
    REQUIRE_EQ(r->correlation, 30);
    r = dt__store_at(&s->sink.store, 1);
    REQUIRE_EQ(r->kind, DT_EVENT_DRIVER);
    REQUIRE_STR(name_of(s, r), "cuLaunchKernel");
    REQUIRE_STR(name_of(s, dt__store_at(&s->sink.store, 2)), "cudaRuntime#9999");
    REQUIRE_STR(name_of(s, dt__store_at(&s->sink.store, 3)), "cudaDriver#65000");
    free(b);
    dt_session_destroy(s);
}

static void test_external_links(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 0, 40);   /* id 0 is an id */
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, UINT64_C(1) << 48, 41);
    /* Kineto's: CUSTOM0 for ops, CUSTOM1 for user scopes */
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 98, 42);
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 99, 43);
    decode(s, b);
    uint64_t v = 12345;
    REQUIRE(logged_link(s, 40, &v));
    REQUIRE_EQ(v, 0);
    REQUIRE(logged_link(s, 41, &v));
    REQUIRE(v == (UINT64_C(1) << 48));
    REQUIRE(!(logged_link(s, 42, &v)));
    REQUIRE(!(logged_link(s, 43, &v)));
    REQUIRE_EQ(s->sink.store.count, 0);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

/* While recording, links are logged and reach the map at stop. */
static void test_deferred_links(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 77, 50);
    put_kernel(b, 50, T0 + 1, T0 + 2, "k");
    decode(s, b);
    b->used = 0;
    put_external(b, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 78, 51);
    decode(s, b);
    uint64_t v = 0;
    REQUIRE(!(dt__corr_get(s, 50, &v)));
    REQUIRE_EQ(s->sink.corr_log_count, 2);
    merge_links(s);
    REQUIRE(dt__corr_get(s, 50, &v));
    REQUIRE_EQ(v, 77);
    REQUIRE(dt__corr_get(s, 51, &v));
    REQUIRE_EQ(v, 78);
    REQUIRE_EQ(s->sink.store.count, 1);
    /* the log was emptied: a later merge adds nothing */
    REQUIRE_EQ(s->sink.corr_log_count, 0);
    merge_links(s);
    REQUIRE_EQ(dt__corr_count(s), 2);
    free(b);
    dt_session_destroy(s);
}

static void test_device_properties(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    emu_cf_write_device(b->bytes, 3, "Emulated H100");
    b->used = sizeof(dt_cf_device);
    decode(s, b);
    const dt_device_props *p = &s->devices[3];
    REQUIRE(p->valid);
    REQUIRE_EQ(p->id, 3);
    REQUIRE_STR(p->name, "Emulated H100");
    REQUIRE_EQ(p->num_sms, EMU_CF_DEV_SMS);
    REQUIRE_EQ(p->compute_major, 9);
    REQUIRE_EQ(p->compute_minor, 0);
    REQUIRE(p->total_global_mem == EMU_CF_DEV_GLOBAL_MEM);
    REQUIRE_EQ(p->max_threads_per_block, 1024);
    REQUIRE_EQ(p->max_threads_per_sm, 2048);
    REQUIRE_EQ(p->max_blocks_per_sm, 32);
    REQUIRE_EQ(p->regs_per_sm, 65536);
    REQUIRE_EQ(p->regs_per_block, 65536);
    REQUIRE_EQ(p->warp_size, 32);
    REQUIRE_EQ(p->shared_mem_per_sm, EMU_CF_DEV_SHMEM_PER_SM);
    REQUIRE_EQ(p->shared_mem_per_block, EMU_CF_DEV_SHMEM_PER_BLOCK);
    REQUIRE_EQ(s->sink.store.count, 0);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

static void test_sync_and_overhead(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    y.start = T0 + 10;
    y.end = T0 + 20;
    y.correlationId = 61;
    y.contextId = 3;
    y.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    memcpy(b->bytes, &y, sizeof y);
    b->used = sizeof y;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    y.streamId = 9;
    memcpy(b->bytes + b->used, &y, sizeof y);
    b->used += sizeof y;
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = 4242;
    o.objectId.pt.threadId = 777;
    o.start = T0 + 30;
    o.end = T0 + 40;
    memcpy(b->bytes + b->used, &o, sizeof o);
    b->used += sizeof o;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_STREAM;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
    o.objectId.dcs.deviceId = 2;
    o.objectId.dcs.contextId = 5;
    o.objectId.dcs.streamId = 11;
    memcpy(b->bytes + b->used, &o, sizeof o);
    b->used += sizeof o;
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 4);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    REQUIRE_EQ(r->kind, DT_EVENT_SYNC);
    REQUIRE_STR(name_of(s, r), "Context Synchronize");
    REQUIRE_EQ(r->lane, 0);
    REQUIRE_EQ(r->context, 3);
    REQUIRE_EQ(r->correlation, 61);
    r = dt__store_at(&s->sink.store, 1);
    REQUIRE_STR(name_of(s, r), "Stream Synchronize");
    REQUIRE_EQ(r->lane, 9);
    r = dt__store_at(&s->sink.store, 2);
    REQUIRE_EQ(r->kind, DT_EVENT_OVERHEAD);
    REQUIRE_STR(name_of(s, r), "CUPTI buffer flush");
    REQUIRE_EQ(r->lane, 777);
    REQUIRE_EQ(r->context, 4242);
    r = dt__store_at(&s->sink.store, 3);
    REQUIRE_STR(name_of(s, r), "Driver compiler");
    REQUIRE_EQ(r->device, 2);
    REQUIRE_EQ(r->context, 5);
    REQUIRE_EQ(r->lane, 11);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    dt_session_destroy(s);
    /* not captured: skipped, not lost */
    s = dt_test_session(DT_CAPTURE_DEFAULT);
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 0);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

static void test_timestamp_losses(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    put_kernel(b, 1, 0, 0, "k");                       /* CUPTI's "no timing" */
    put_kernel(b, 2, 0, 0, "k");
    put_kernel(b, 3, T0 + 100, T0 + 50, "k");          /* reversed */
    put_kernel(b, 4, T0, T0 + UINT64_C(3601) * 1000000000u, "k"); /* over an hour */
    put_api(b, EMU_REC_RUNTIME, 211, 5, T0 + 9, T0 + 1); /* reversed API */
    put_kernel(b, 6, T0 + 1, T0 + 2, "k");             /* kept */
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_ZERO), 2);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_REVERSED), 2);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_TIMESTAMP_TOO_LONG), 1);
    REQUIRE_EQ(dt_session_loss_total(s), 5);
    free(b);
    dt_session_destroy(s);
}

static void test_truncated_and_unknown(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_ALL);
    buf *b = calloc(1, sizeof *b);
    /* a buffer ending inside a kernel record: CUPTI's iterator stops there */
    put_kernel(b, 1, T0 + 1, T0 + 2, "k");
    put_kernel(b, 2, T0 + 1, T0 + 2, "k");
    dt__decoder_run(&D, s, b->bytes, b->used - 200, NULL);
    REQUIRE_EQ(s->sink.store.count, 1);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 1);
    /* a record of a kind CUPTI never defined ends the buffer */
    b->used = 0;
    put_kernel(b, 3, T0 + 1, T0 + 2, "k");
    emu_activity u = {.kind = EMU_REC_UNKNOWN, .correlation = 4};
    emu_cf_options o = opts();
    put(b, &u, &o);
    put_kernel(b, 5, T0 + 1, T0 + 2, "k");
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 2);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNKNOWN_KIND), 1);
    /* fewer bytes than a kind field */
    dt__decoder_run(&D, s, b->bytes, 3, NULL);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 2);
    /* a CUPTI kind devtrace does not decode (another client enabled it) */
    b->used = 0;
    memset(b->bytes, 0, sizeof(CUpti_ActivityMarker2));
    uint32_t marker = CUPTI_ACTIVITY_KIND_MARKER;
    memcpy(b->bytes, &marker, sizeof marker);
    b->used = sizeof(CUpti_ActivityMarker2);
    put_kernel(b, 6, T0 + 1, T0 + 2, "k");
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 3);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_UNKNOWN_KIND), 2);
    REQUIRE_EQ(dt_session_loss_total(s), 4);
    free(b);
    dt_session_destroy(s);
}

static void test_capture_filter(void)
{
    dt_session *s = dt_test_session(DT_CAPTURE_KERNEL);
    buf *b = calloc(1, sizeof *b);
    put_api(b, EMU_REC_RUNTIME, 211, 1, T0 + 1, T0 + 9);
    put_kernel(b, 1, T0 + 3, T0 + 5, "k");
    put_api(b, EMU_REC_DRIVER, 307, 2, T0 + 1, T0 + 9);
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 1);
    REQUIRE_EQ(dt__store_at(&s->sink.store, 0)->kind, DT_EVENT_KERNEL);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    free(b);
    dt_session_destroy(s);
}

static void test_store_full(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.max_events = 2;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    buf *b = calloc(1, sizeof *b);
    for (uint32_t i = 0; i < 5; i++) put_kernel(b, i + 1, T0 + i, T0 + i + 1, "k");
    decode(s, b);
    REQUIRE_EQ(s->sink.store.count, 2);
    REQUIRE_EQ(dt_session_loss(s, DT_LOSS_STORE_FULL), 3);
    free(b);
    dt_session_destroy(s);
}

/* The own iterator agrees with CUPTI's contract on every boundary. */
static void test_iterator_bounds(void)
{
    buf *b = calloc(1, sizeof *b);
    put_api(b, EMU_REC_RUNTIME, 211, 1, T0 + 1, T0 + 9);
    put_kernel(b, 1, T0 + 3, T0 + 5, "k");
    CUpti_Activity *rec = NULL;
    REQUIRE_EQ(dt__decoder_next(&D, NULL, 8, (void **)&rec), CUPTI_ERROR_INVALID_PARAMETER);
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, 0, (void **)&rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, 39, (void **)&rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, b->used, (void **)&rec), CUPTI_SUCCESS);
    REQUIRE((uint8_t *)rec == b->bytes);
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, b->used, (void **)&rec), CUPTI_SUCCESS);
    REQUIRE((uint8_t *)rec == b->bytes + sizeof(CUpti_ActivityAPI));
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, b->used, (void **)&rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    uint32_t bad = 0;
    memcpy(b->bytes, &bad, sizeof bad);
    rec = NULL;
    REQUIRE_EQ(dt__decoder_next(&D, b->bytes, b->used, (void **)&rec), CUPTI_ERROR_INVALID_KIND);
    REQUIRE_EQ(record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 216);
    REQUIRE_EQ(record_size(CUPTI_ACTIVITY_KIND_MEMCPY), 96);
    REQUIRE_EQ(record_size(CUPTI_ACTIVITY_KIND_MEMSET), 88);
    REQUIRE_EQ(record_size(CUPTI_ACTIVITY_KIND_RUNTIME), 40);
    REQUIRE_EQ(record_size(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), 24);
    REQUIRE_EQ(record_size(1000), 0);
    free(b);
}

DT_TEST_MAIN(setup, NULL,
             DT_TEST(test_kernel_fields),
             DT_TEST(test_kernel_latency),
             DT_TEST(test_copies_and_memsets),
             DT_TEST(test_api_names),
             DT_TEST(test_external_links),
             DT_TEST(test_deferred_links),
             DT_TEST(test_device_properties),
             DT_TEST(test_sync_and_overhead),
             DT_TEST(test_timestamp_losses),
             DT_TEST(test_truncated_and_unknown),
             DT_TEST(test_capture_filter),
             DT_TEST(test_store_full),
             DT_TEST(test_iterator_bounds))

#else
#include "cupti_test_util.h"
#endif

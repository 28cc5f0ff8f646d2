/*
 * Decode benchmark: how fast vendor activity buffers become stored events,
 * one row per vendor of vendors.def (on the engine, or from the vendor's
 * own bench/decode_<name>.c), and what the API-enter callback adds to each
 * API call.
 *
 *   bench_decode [records] [rounds] [vendor...]   (default 10,000,000 and 5;
 *                                                  all vendors)
 *   DEVTRACE_BENCH_MIX=api|launch                 (default: both)
 *
 * Buffers are written through each vendor's own layout table (the records
 * its library writes, back to back) in two mixes:
 *   api     per 10 records: 4 runtime API calls, 4 kernels (64 names, half
 *           of them mangled), 1 memcpy, 1 memset;
 *   launch  where the vendor reports external correlation, the mix of a
 *           launch-bound program: per launch an external-correlation record,
 *           a runtime and a driver API record (where the vendor has driver
 *           records) and a kernel, with a memcpy and a memset every eighth
 *           launch.
 * They are decoded and stored by the engine's decoder walking the buffers
 * by the layouts' sizes (the vendor iterator's contract), measured by the
 * shared harness (decode_harness.h): a fresh store, a fresh store with the
 * chunk preparer, a mapped store, each beside a memcpy of the same bytes in
 * the same round. Prints figures only.
 */
#include "backends/engine/engine.h"
#include "decode_harness.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every vendor of vendors.def whose backend is the engine (weak: a vendor
   built without what its backend needs has none), and the rows of vendors
   with a decoder of their own: bench_decode_<name>(records, rounds) in
   bench/decode_<name>.c, measured by the same harness. */
#define DT_VENDOR(name, ...)                                                   \
    extern dt_engine dt__engine_##name __attribute__((weak));                  \
    void bench_decode_##name(size_t records, int rounds) __attribute__((weak));
#include "backends/vendors.def"
#undef DT_VENDOR
static const struct {
    const char *name;
    dt_engine *engine;
    void (*own)(size_t records, int rounds);
} vendors[] = {
#define DT_VENDOR(name, ...) {#name, &dt__engine_##name, bench_decode_##name},
#include "backends/vendors.def"
#undef DT_VENDOR
};

#define BUFFER_SIZE (4u << 20)
#define KERNEL_NAMES 64

#define now_s bench_now_s

static char kernel_names[KERNEL_NAMES][64];

/* ------------------------------------------------------------------ */
/* Records through a layout                                            */
/* ------------------------------------------------------------------ */
typedef struct writer {
    const dt_decoder *d;
    uint8_t **bufs;
    size_t *valid, *recs;        /* per buffer: bytes and records in it */
    size_t n, cap;
    size_t used, records, bytes, in_buffer;
} writer;

static void put(uint8_t *rec, dt_field f, uint64_t v)
{
    if (f.size) memcpy(rec + f.off, &v, f.size); /* little-endian */
}

/* A zeroed record of `kind` at the end of the current buffer, or NULL when
   the vendor has no such kind. */
static uint8_t *record(writer *w, uint32_t kind, const dt_record_layout **layout)
{
    const dt_record_layout *l = dt__decoder_layout(w->d, kind);
    if (!l) return NULL;
    if (!w->n || w->used + l->size > BUFFER_SIZE) {
        if (w->n) { w->valid[w->n - 1] = w->used; w->recs[w->n - 1] = w->in_buffer; w->bytes += w->used; }
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 16;
            w->bufs = realloc(w->bufs, w->cap * sizeof *w->bufs);
            w->valid = realloc(w->valid, w->cap * sizeof *w->valid);
            w->recs = realloc(w->recs, w->cap * sizeof *w->recs);
        }
        uint8_t *b = aligned_alloc(64, BUFFER_SIZE);
        if (!w->bufs || !w->valid || !w->recs || !b) { fprintf(stderr, "out of memory\n"); exit(1); }
        w->bufs[w->n++] = b;
        w->used = 0;
        w->in_buffer = 0;
    }
    uint8_t *r = w->bufs[w->n - 1] + w->used;
    memset(r, 0, l->size);
    memcpy(r, &kind, sizeof kind);
    w->used += l->size;
    w->records++;
    w->in_buffer++;
    *layout = l;
    return r;
}

static uint32_t kind_of(const dt_decoder *d, dt_record_class cls, uint32_t prefer)
{
    const dt_record_layout *l = dt__decoder_layout(d, prefer);
    if (l && l->cls == cls) return prefer;
    for (size_t i = 0; i < d->count; i++)
        if (d->set->records[i].cls == cls) return d->set->records[i].kind;
    return UINT32_MAX;
}

typedef struct kinds { uint32_t kernel, memcpy, memset, runtime, driver, external; } kinds;

/* API names, for vendors whose API records carry one (MSPTI) */
static const char *const api_names[] = {"aclrtLaunchKernel", "aclrtMemcpyAsync", "aclrtMemsetAsync",
                                        "aclrtSynchronizeStream"};

static void api(writer *w, uint32_t kind, uint32_t cbid, uint64_t t, uint32_t corr, uint32_t thread)
{
    const dt_record_layout *l;
    uint8_t *r = record(w, kind, &l);
    if (!r) return;
    put(r, l->f[DT_F_CBID], cbid);
    put(r, l->f[DT_F_NAME], (uintptr_t)api_names[corr % 4]);
    put(r, l->f[DT_F_START], t);
    put(r, l->f[DT_F_END], t + 800);
    put(r, l->f[DT_F_PROCESS], 4242);
    put(r, l->f[DT_F_THREAD], thread);
    put(r, l->f[DT_F_CORRELATION], corr);
}

static void kernel(writer *w, uint32_t kind, uint64_t t, uint32_t corr, size_t i)
{
    const dt_record_layout *l;
    uint8_t *r = record(w, kind, &l);
    if (!r) return;
    put(r, l->f[DT_F_START], t);
    put(r, l->f[DT_F_END], t + 1200);
    put(r, l->f[DT_F_QUEUED], t - 300);
    put(r, l->f[DT_F_SUBMITTED], t - 100);
    put(r, l->f[DT_F_DEVICE], i % 2);
    put(r, l->f[DT_F_STREAM], i % 8);
    put(r, l->f[DT_F_CONTEXT], 1);
    put(r, l->f[DT_F_GRID_X], 1 + i % 16);
    put(r, l->f[DT_F_GRID_Y], 1);
    put(r, l->f[DT_F_GRID_Z], 1);
    put(r, l->f[DT_F_BLOCK_X], 256);
    put(r, l->f[DT_F_BLOCK_Y], 1);
    put(r, l->f[DT_F_BLOCK_Z], 1);
    put(r, l->f[DT_F_REGISTERS], 32);
    put(r, l->f[DT_F_CORRELATION], corr);
    put(r, l->f[DT_F_NAME], (uintptr_t)kernel_names[i % KERNEL_NAMES]);
}

static void copy_and_fill(writer *w, const kinds *k, uint64_t t, uint32_t corr, int copy, int fill)
{
    const dt_record_layout *l;
    uint8_t *r;
    if (copy && (r = record(w, k->memcpy, &l))) {
        put(r, l->f[DT_F_COPY_KIND], 1); /* HtoD in every vendor's numbering here */
        put(r, l->f[DT_F_SRC_KIND], 2);
        put(r, l->f[DT_F_DST_KIND], 3);
        put(r, l->f[DT_F_FLAGS], 1);
        put(r, l->f[DT_F_BYTES], 1 << 20);
        put(r, l->f[DT_F_START], t);
        put(r, l->f[DT_F_END], t + 900);
        put(r, l->f[DT_F_STREAM], 1);
        put(r, l->f[DT_F_CORRELATION], corr);
    }
    if (fill && (r = record(w, k->memset, &l))) {
        put(r, l->f[DT_F_BYTES], 1 << 16);
        put(r, l->f[DT_F_START], t + 1000);
        put(r, l->f[DT_F_END], t + 1400);
        put(r, l->f[DT_F_STREAM], 2);
        put(r, l->f[DT_F_MEMORY_KIND], 3);
        put(r, l->f[DT_F_CORRELATION], corr);
    }
}

static void build(writer *w, const kinds *k, int launch_mix, size_t target)
{
    uint64_t t = UINT64_C(1790000000000000000);
    uint32_t corr = 0;
    for (size_t i = 0; w->records < target; i++) {
        t += 5000;
        if (launch_mix) {
            uint32_t c = ++corr;
            const dt_record_layout *l;
            uint8_t *r = record(w, k->external, &l);
            put(r, l->f[DT_F_EXTERNAL_KIND], w->d->v->activity.external_kind);
            put(r, l->f[DT_F_EXTERNAL_ID], c / 4);
            put(r, l->f[DT_F_CORRELATION], c);
            api(w, k->runtime, 211, t, c, 101 + c % 4);
            api(w, k->driver, 307, t + 100, c, 101 + c % 4);
            kernel(w, k->kernel, t + 4000, c, i);
            copy_and_fill(w, k, t + 4800, c, c % 8 == 0, c % 8 == 0);
        } else {
            unsigned pick = (unsigned)(i % 10);
            if (pick < 4) api(w, k->runtime, 24, t, corr + 1, 4243 + (uint32_t)(i % 4));
            else if (pick < 8) kernel(w, k->kernel, t, ++corr, i);
            else copy_and_fill(w, k, t, ++corr, pick == 8, pick == 9);
        }
    }
    if (w->n) { w->valid[w->n - 1] = w->used; w->recs[w->n - 1] = w->in_buffer; w->bytes += w->used; }
}

/* ------------------------------------------------------------------ */
/* One row                                                             */
/* ------------------------------------------------------------------ */
/* The decoder the harness runs (one row at a time). */
static const dt_decoder *g_decoder;

static void decode_buffer(dt_session *s, uint8_t *buffer, size_t valid)
{
    dt__decoder_run(g_decoder, s, buffer, valid, NULL);
}

static void bench_mix(const char *vendor, const dt_decoder *d, const kinds *k, int launch_mix, size_t target,
                      int rounds)
{
    writer w = {.d = d};
    build(&w, k, launch_mix, target);
    char label[96];
    snprintf(label, sizeof label, "%s (%s mix)", vendor, launch_mix ? "launch" : "api");
    g_decoder = d;
    decode_input in = {
        .vendor = label, .buffers = w.bufs, .valid = w.valid, .records_in = w.recs, .buffer_count = w.n,
        .records = w.records, .capture = DT_CAPTURE_ALL, .decode = decode_buffer,
    };
    decode_bench_run(&in, rounds);
    for (size_t i = 0; i < w.n; i++) free(w.bufs[i]);
    free(w.bufs);
    free(w.valid);
    free(w.recs);
}

static void empty_callback(void *userdata, uint32_t domain, uint32_t cbid, const void *cbdata)
{
    __asm__ __volatile__("" ::"r"(cbdata), "r"(userdata), "r"(domain), "r"(cbid) : "memory");
}

/* The API-enter callback, called as the vendor calls it, inside a running
   session with a host operation on the stack that the vendor's own stack
   does not hold (so every call links). */
static void bench_api_enter(const char *vendor, dt_engine *e)
{
    const dt_vendor *v = e->v;
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.calibration_period_ms = 0;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) != DT_OK || dt_session_start(s) != DT_OK) {
        fprintf(stderr, "%s\n", dt_last_error());
        return;
    }
    dt_external_push(77);
    const size_t calls = 10000000;
    _Alignas(8) uint8_t data[256];
    memset(data, 0, sizeof data);
    memcpy(data + v->callbacks.site_offset, &v->callbacks.api_enter, sizeof v->callbacks.api_enter);
    void (*volatile fn)(void *, uint32_t, uint32_t, const void *) = empty_callback;
    double t0 = now_s();
    for (size_t i = 0; i < calls; i++) {
        uint32_t corr = (uint32_t)i + 1;
        memcpy(data + v->callbacks.correlation_offset, &corr, sizeof corr);
        fn(e, v->callbacks.domain_runtime, 24, data);
    }
    double t_empty = now_s() - t0;
    fn = dt__engine_api_callback;
    t0 = now_s();
    for (size_t i = 0; i < calls; i++) {
        uint32_t corr = (uint32_t)i + 1;
        memcpy(data + v->callbacks.correlation_offset, &corr, sizeof corr);
        fn(e, v->callbacks.domain_runtime, 24, data);
    }
    double t_enter = now_s() - t0;
    dt_external_pop(NULL);
    dt_session_stop(s);
    printf("%s: API-enter callback %.1f ns/call, empty callback %.1f ns/call: %.1f ns added per API call\n", vendor,
           t_enter / (double)calls * 1e9, t_empty / (double)calls * 1e9, (t_enter - t_empty) / (double)calls * 1e9);
    dt_session_destroy(s);
}

int main(int argc, char **argv)
{
    size_t records = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 0;
    if (records == 0) records = 10000000u;
    int rounds = argc > 2 ? atoi(argv[2]) : 0;
    if (rounds <= 0) rounds = 5;
    for (int i = 0; i < KERNEL_NAMES; i++) {
        if (i % 2)
            snprintf(kernel_names[i], sizeof kernel_names[i], "_Z%zugemm_kernel_%dPfS_S_i",
                     strlen("gemm_kernel_") + (i < 10 ? 1 : 2), i);
        else
            snprintf(kernel_names[i], sizeof kernel_names[i], "elementwise_kernel_%d", i);
    }
    for (size_t i = 0; i < sizeof vendors / sizeof vendors[0]; i++) {
        int wanted = argc <= 3;
        for (int a = 3; a < argc; a++) wanted |= strcmp(argv[a], vendors[i].name) == 0;
        if (!wanted) continue;
        if (!vendors[i].engine) {
            if (vendors[i].own) vendors[i].own(records, rounds);
            continue;
        }
        dt_decoder d;
        dt__decoder_init(&d, vendors[i].engine->v, 0);
        kinds k = {
            .kernel = kind_of(&d, DT_RC_KERNEL, 10), .memcpy = kind_of(&d, DT_RC_MEMCPY, 1),
            .memset = kind_of(&d, DT_RC_MEMSET, 2), .runtime = kind_of(&d, DT_RC_RUNTIME, 5),
            .driver = kind_of(&d, DT_RC_DRIVER, 4), .external = kind_of(&d, DT_RC_EXTERNAL, 39),
        };
        printf("%s: layouts: %s\n", vendors[i].name, d.set->what);
        const char *mix = getenv("DEVTRACE_BENCH_MIX");
        if (!mix || strcmp(mix, "api") == 0) bench_mix(vendors[i].name, &d, &k, 0, records, rounds);
        /* (a vendor without driver API records launches with runtime ones alone) */
        if ((!mix || strcmp(mix, "launch") == 0) && k.external != UINT32_MAX)
            bench_mix(vendors[i].name, &d, &k, 1, records, rounds);
        if (!(vendors[i].engine->v->caps & DT_VCAP_NO_API_ENTER_LINKS))
            bench_api_enter(vendors[i].name, vendors[i].engine);
    }
    return 0;
}

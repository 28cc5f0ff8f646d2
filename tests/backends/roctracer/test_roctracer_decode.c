/*
 * roctracer's decoder on buffers laid out as roctracer lays them out: a
 * pool of two halves, 64-byte records from a half's start, kernel names
 * copied from its end downwards, EXT_API records before the record they
 * tag. No library: the buffers are built here.
 */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

#include "backends/roctracer.h"
#include "dt_check.h"
#include "dt_test_session.h"

#define HALF 4096
#define T0 UINT64_C(5000000000000)

/* A pool as roctracer's allocator hands it out, and a writer filling one
   of its halves as roctracer does. */
typedef struct pool {
    _Alignas(64) uint8_t mem[2 * HALF];
    size_t used[2], tail[2];
} pool;

static activity_record_t *record(pool *p, int half)
{
    REQUIRE(p->used[half] + DT_RT_RECORD_SIZE + p->tail[half] <= HALF, "the test's half is full");
    activity_record_t *r = (activity_record_t *)(p->mem + half * HALF + p->used[half]);
    memset(r, 0, sizeof *r);
    p->used[half] += DT_RT_RECORD_SIZE;
    return r;
}

static const char *name_copy(pool *p, int half, const char *name)
{
    size_t n = strlen(name) + 1;
    p->tail[half] += n;
    char *at = (char *)p->mem + (size_t)(half + 1) * HALF - p->tail[half];
    memcpy(at, name, n);
    return at;
}

static activity_record_t *kernel(pool *p, int half, uint64_t corr, const char *name)
{
    activity_record_t *r = record(p, half);
    r->domain = ACTIVITY_DOMAIN_HIP_OPS;
    r->op = DT_RT_HIP_OP_DISPATCH;
    r->kind = DT_RT_CMD_KERNEL;
    r->correlation_id = corr;
    r->begin_ns = T0 + corr * 1000;
    r->end_ns = r->begin_ns + 500;
    r->device_id = 1;
    r->queue_id = 3;
    r->kernel_name = name ? name_copy(p, half, name) : NULL;
    return r;
}

static activity_record_t *ops(pool *p, int half, uint32_t op, uint32_t kind, uint64_t corr, size_t bytes)
{
    activity_record_t *r = record(p, half);
    r->domain = ACTIVITY_DOMAIN_HIP_OPS;
    r->op = op;
    r->kind = kind;
    r->correlation_id = corr;
    r->begin_ns = T0 + corr * 1000;
    r->end_ns = r->begin_ns + 300;
    r->bytes = bytes;
    return r;
}

static activity_record_t *api(pool *p, int half, uint32_t op, uint64_t corr)
{
    activity_record_t *r = record(p, half);
    r->domain = ACTIVITY_DOMAIN_HIP_API;
    r->op = op;
    r->correlation_id = corr;
    r->begin_ns = T0 + corr * 1000 - 100;
    r->end_ns = T0 + corr * 1000 - 10;
    r->process_id = 4242;
    r->thread_id = 4243;
    return r;
}

static void external(pool *p, int half, uint64_t corr, uint64_t id)
{
    activity_record_t *r = record(p, half);
    r->domain = ACTIVITY_DOMAIN_EXT_API;
    r->op = ACTIVITY_EXT_OP_EXTERN_ID;
    r->correlation_id = corr;
    r->external_id = id;
}

static dt_rt_decoder decoder_of(pool *p)
{
    dt_rt_decoder d;
    memset(&d, 0, sizeof d);
    d.pool = p->mem;
    d.half = HALF;
    return d;
}

static void decode_half(const dt_rt_decoder *d, dt_session *s, pool *p, int half)
{
    const uint8_t *begin = p->mem + half * HALF;
    dt__rt_decode(d, s, begin, begin + p->used[half]);
}

static const char *name_of(const dt_session *s, const dt_rec *r) { return dt__intern_get(&s->names, r->name); }

DT_HIDDEN void dt__corr_merge_chunks(dt_session *s, int keep);
static void merge_links(dt_session *s)
{
    dt__core_lock(s);
    dt__corr_merge_chunks(s, 1);
    dt__core_unlock(s);
}

static int has_note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return 1;
    return 0;
}

/* A session, an empty pool and a decoder that knows it. */
typedef struct fixture {
    dt_session *s;
    pool *p;
    dt_rt_decoder d;
} fixture;

static fixture open_fixture(uint32_t capture)
{
    fixture f;
    f.s = dt_test_session(capture);
    f.p = calloc(1, sizeof *f.p);
    REQUIRE(f.p != NULL, "calloc");
    f.d = decoder_of(f.p);
    return f;
}

static void close_fixture(fixture *f)
{
    free(f->p);
    dt_session_destroy(f->s);
}

/* ------------------------------------------------------------------ */
static void names_from_the_end(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    kernel(p, 1, 1, "_Z6vecAddPfS_S_i");
    kernel(p, 1, 2, "gemm_kernel_1");
    kernel(p, 1, 3, "_Z6vecAddPfS_S_i"); /* the same name, its own copy */
    kernel(p, 1, 4, "gemm_kernel_2");    /* the same length and head as another */
    kernel(p, 1, 5, NULL);               /* older HIP runtimes give no name */
    decode_half(&d, s, p, 1);
    REQUIRE_EQ(s->sink.store.count, 5);
    REQUIRE_EQ(dt_session_loss_total(s), 0);
    const char *want[] = {"vecAdd(float*, float*, float*, int)", "gemm_kernel_1",
                          "vecAdd(float*, float*, float*, int)", "gemm_kernel_2", "<unnamed kernel>"};
    for (size_t i = 0; i < 5; i++) {
        dt_rec *r = dt__store_at(&s->sink.store, i);
        CHECK_EQ(r->kind, DT_EVENT_KERNEL);
        CHECK_STR(name_of(s, r), want[i]);
        CHECK_EQ(r->device, 1);
        CHECK_EQ(r->lane, 3);
        CHECK_EQ(r->correlation, i + 1);
        /* no launch arguments: no configuration, rather than zeros */
        CHECK(r->u.kernel.config >= s->launches.count, "kernel %zu has a launch configuration", i);
    }
    CHECK_EQ(dt__store_at(&s->sink.store, 0)->name, dt__store_at(&s->sink.store, 2)->name);
    close_fixture(&f);
}

/* A name pointer into the pool anywhere but this buffer's names is a
   corrupt record; one outside the pool is the vendor's own string. */
static void name_pointers_checked(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    activity_record_t *r = kernel(p, 0, 1, NULL);
    r->kernel_name = (const char *)p->mem + 8;            /* inside the records */
    r = kernel(p, 0, 2, NULL);
    r->kernel_name = (const char *)p->mem + HALF + 100;   /* the other half */
    /* no NUL before the half ends */
    memset(p->mem + HALF - 4, 'x', 4);
    p->tail[0] = 4;
    r = kernel(p, 0, 3, NULL);
    r->kernel_name = (const char *)p->mem + HALF - 4;
    static const char vendor_name[] = "_Z4stepv";
    r = kernel(p, 0, 4, NULL);
    r->kernel_name = vendor_name;                           /* not in the pool */
    kernel(p, 0, 5, "fine");
    decode_half(&d, s, p, 0);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 3);
    REQUIRE_EQ(s->sink.store.count, 2);
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 0)), "step()");
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 1)), "fine");
    close_fixture(&f);
}

/* The EXT_API record precedes the API record it tags. */
static void external_ids(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    external(p, 0, 5, 42);
    api(p, 0, 107, 5);
    kernel(p, 0, 5, "k");
    /* a release that leaves the correlation id 0 tags by position */
    external(p, 0, 0, 77);
    api(p, 0, 107, 9);
    kernel(p, 0, 9, "k");
    api(p, 0, 107, 10);
    kernel(p, 0, 10, "k");
    external(p, 0, 0, 88); /* ends the buffer: what it tagged is elsewhere */
    decode_half(&d, s, p, 0);
    merge_links(s);
    uint64_t ext = 0;
    CHECK(dt__corr_get(s, 5, &ext) && ext == 42, "correlation 5: External id %" PRIu64, ext);
    CHECK(dt__corr_get(s, 9, &ext) && ext == 77, "correlation 9: External id %" PRIu64, ext);
    CHECK(!dt__corr_get(s, 10, &ext), "correlation 10 has an External id");
    CHECK(has_note(s, "external_ids"), "the lost tag is not noted");
    CHECK_EQ(s->sink.store.count, 6);
    CHECK_EQ(dt_session_loss_total(s), 0);
    close_fixture(&f);
}

/* A fixed stride: an unknown record is stepped over, a cut one is the last. */
static void unknown_and_cut(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    kernel(p, 0, 1, "a");
    activity_record_t *r = record(p, 0);
    r->domain = ACTIVITY_DOMAIN_HSA_EVT;
    ops(p, 0, 7, DT_RT_CMD_KERNEL, 2, 0); /* an operation HIP_OPS does not have */
    kernel(p, 0, 3, "b");
    const uint8_t *begin = p->mem;
    dt__rt_decode(&d, s, begin, begin + p->used[0] + 16);
    CHECK_EQ(s->sink.store.count, 2);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_UNKNOWN_KIND), 2);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 1);
    CHECK(has_note(s, "unknown_kind"), "unknown records are not named in the notes");
    /* a buffer reaching past its half is cut at the half's end */
    dt_session *s2 = dt_test_session(DT_CAPTURE_ALL);
    dt__rt_decode(&d, s2, begin + HALF - 2 * DT_RT_RECORD_SIZE, begin + HALF + DT_RT_RECORD_SIZE);
    CHECK_EQ(dt_session_loss(s2, DT_LOSS_MALFORMED), 1);
    /* and one that ends before it begins is no buffer at all */
    dt__rt_decode(&d, s2, begin + 128, begin + 64);
    CHECK_EQ(dt_session_loss(s2, DT_LOSS_MALFORMED), 2);
    CHECK_EQ(s2->sink.store.count, 0);
    close_fixture(&f);
    dt_session_destroy(s2);
}

/* ROCclr's command kinds: copies by direction (2D ones too), fills,
   barriers and markers. */
static void command_kinds(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    static const struct { uint32_t op, kind; uint8_t event, copy; } cases[] = {
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_WRITE, DT_EVENT_MEMCPY, DT_COPY_HTOD},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_READ, DT_EVENT_MEMCPY, DT_COPY_DTOH},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_COPY, DT_EVENT_MEMCPY, DT_COPY_DTOD},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_WRITE_RECT, DT_EVENT_MEMCPY, DT_COPY_HTOD},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_READ_RECT, DT_EVENT_MEMCPY, DT_COPY_DTOH},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_COPY_RECT, DT_EVENT_MEMCPY, DT_COPY_DTOD},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_SVM_MEMCPY, DT_EVENT_MEMCPY, DT_COPY_UNKNOWN},
        {DT_RT_HIP_OP_COPY, DT_RT_CMD_FILL, DT_EVENT_MEMSET, 0},
        {DT_RT_HIP_OP_BARRIER, DT_RT_CMD_BARRIER, DT_EVENT_SYNC, 0},
        {DT_RT_HIP_OP_BARRIER, DT_RT_CMD_MARKER, DT_EVENT_SYNC, 0},
        {DT_RT_HIP_OP_DISPATCH, DT_RT_CMD_TASK, DT_EVENT_KERNEL, 0},
    };
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++)
        /* (a dispatch's last field is its name: none here) */
        ops(p, 0, cases[i].op, cases[i].kind, i + 1, cases[i].op == DT_RT_HIP_OP_DISPATCH ? 0 : 4096 * (i + 1));
    decode_half(&d, s, p, 0);
    REQUIRE_EQ(s->sink.store.count, n);
    CHECK_EQ(dt_session_loss_total(s), 0);
    for (size_t i = 0; i < n; i++) {
        dt_rec *r = dt__store_at(&s->sink.store, i);
        CHECK_EQ(r->kind, cases[i].event);
        if (r->kind == DT_EVENT_MEMCPY) {
            CHECK_EQ(r->u.memcpy.copy_kind, cases[i].copy);
            CHECK_EQ(r->u.memcpy.bytes, 4096 * (i + 1));
        }
        if (r->kind == DT_EVENT_MEMSET) CHECK_EQ(r->u.memset.bytes, 4096 * (i + 1));
    }
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 0)), "Memcpy HtoD (Unknown -> Device)");
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 8)), "Barrier");
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 9)), "Marker");
    close_fixture(&f);
}

/* Only what the session captures is kept; nothing else counts as lost. */
static void capture_filters(void)
{
    fixture f = open_fixture(DT_CAPTURE_KERNEL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    api(p, 0, 107, 1);
    kernel(p, 0, 1, "k");
    ops(p, 0, DT_RT_HIP_OP_COPY, DT_RT_CMD_WRITE, 2, 10);
    ops(p, 0, DT_RT_HIP_OP_COPY, DT_RT_CMD_FILL, 3, 10);
    ops(p, 0, DT_RT_HIP_OP_BARRIER, DT_RT_CMD_BARRIER, 4, 0);
    decode_half(&d, s, p, 0);
    REQUIRE_EQ(s->sink.store.count, 1);
    CHECK_EQ(dt__store_at(&s->sink.store, 0)->kind, DT_EVENT_KERNEL);
    CHECK_EQ(dt_session_loss_total(s), 0);
    close_fixture(&f);
}

/* Launch configurations and fill values come from the API callbacks'
   arguments, by correlation id; arguments lost for want of memory drop
   their record (store_full), as a kernel whose configuration could not be
   kept is dropped on every vendor. */
static void call_arguments(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_args_table args = {0};
    uint64_t unkept[3] = {0, 1, 0};
    dt_rt_args a = {.correlation = 3, .grid = {8, 4, 1}, .block = {64, 1, 1}, .dynamic_shared = 512,
                    .what = DT_RT_ARGS_LAUNCH};
    REQUIRE_EQ(dt__rt_args_put(&args, &a), 0);
    dt_rt_args fill = {.correlation = 4, .value = 0xab, .what = DT_RT_ARGS_FILL};
    REQUIRE_EQ(dt__rt_args_put(&args, &fill), 0);
    dt_rt_decoder d = f.d;
    d.args = &args;
    d.args_unkept = unkept;
    kernel(p, 0, 3, "configured");
    ops(p, 0, DT_RT_HIP_OP_COPY, DT_RT_CMD_FILL, 4, 64);
    kernel(p, 0, 5, "lost_arguments");   /* takes the one unkept launch */
    kernel(p, 0, 6, "no_callback");      /* no arguments, none lost */
    decode_half(&d, s, p, 0);
    REQUIRE_EQ(s->sink.store.count, 3);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_STORE_FULL), 1);
    CHECK_EQ(unkept[DT_RT_ARGS_LAUNCH], 0);
    dt_rec *k = dt__store_at(&s->sink.store, 0);
    REQUIRE(k->u.kernel.config < s->launches.count, "no configuration");
    const dt_launch_config *cfg = &s->launches.configs[k->u.kernel.config];
    CHECK(cfg->grid[0] == 8 && cfg->grid[1] == 4 && cfg->grid[2] == 1, "grid");
    CHECK(cfg->block[0] == 64 && cfg->block[1] == 1 && cfg->block[2] == 1, "block");
    CHECK_EQ(cfg->dynamic_shared_memory, 512);
    CHECK_EQ(cfg->registers_per_thread, 0);
    CHECK_EQ(dt__store_at(&s->sink.store, 1)->u.memset.value, 0xab);
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 2)), "no_callback");
    CHECK(dt__store_at(&s->sink.store, 2)->u.kernel.config >= s->launches.count, "a configuration from nowhere");
    CHECK_EQ(args.count, 0);
    dt__rt_args_free(&args);
    close_fixture(&f);
}

/* The table by correlation id: entries taken once, deletion keeps the
   others reachable, growth keeps them all. */
static void argument_table(void)
{
    dt_rt_args_table t = {0};
    for (uint64_t c = 1; c <= 5000; c++) {
        dt_rt_args a = {.correlation = c, .value = (uint32_t)c, .what = DT_RT_ARGS_FILL};
        REQUIRE_EQ(dt__rt_args_put(&t, &a), 0);
    }
    REQUIRE_EQ(t.count, 5000);
    dt_rt_args out;
    for (uint64_t c = 1; c <= 5000; c += 2) REQUIRE(dt__rt_args_take(&t, c, &out) && out.value == c, "take %" PRIu64, c);
    for (uint64_t c = 1; c <= 5000; c += 2) CHECK(!dt__rt_args_take(&t, c, &out), "%" PRIu64 " taken twice", c);
    for (uint64_t c = 2; c <= 5000; c += 2) CHECK(dt__rt_args_take(&t, c, &out) && out.value == c, "take %" PRIu64, c);
    CHECK_EQ(t.count, 0);
    CHECK(!dt__rt_args_take(&t, 0, &out), "correlation 0");
    /* ids further apart than the table's largest size: the older goes */
    dt_rt_args old = {.correlation = 10, .value = 1, .what = DT_RT_ARGS_FILL};
    dt_rt_args young = {.correlation = 10 + DT_RT_ARGS_MAX, .value = 2, .what = DT_RT_ARGS_FILL};
    REQUIRE_EQ(dt__rt_args_put(&t, &old), 0);
    REQUIRE_EQ(dt__rt_args_put(&t, &young), 0);
    CHECK_EQ(t.evicted, 1);
    CHECK(!dt__rt_args_take(&t, 10, &out), "the older entry is still there");
    CHECK(dt__rt_args_take(&t, 10 + DT_RT_ARGS_MAX, &out) && out.value == 2, "the younger entry is gone");
    /* emptied for the next session: its slots kept, nothing left in them */
    const dt_rt_args *slots = t.slots;
    size_t mask = t.mask;
    REQUIRE_EQ(dt__rt_args_put(&t, &old), 0);
    dt__rt_args_clear(&t);
    CHECK_EQ(t.count, 0);
    CHECK_EQ(t.evicted, 0);
    CHECK(t.slots == slots && t.mask == mask, "the slots are kept");
    CHECK(!dt__rt_args_take(&t, 10, &out), "an entry outlived the clear");
    REQUIRE_EQ(dt__rt_args_put(&t, &young), 0);
    CHECK(dt__rt_args_take(&t, 10 + DT_RT_ARGS_MAX, &out) && out.value == 2, "put after the clear");
    dt__rt_args_free(&t);
}

/* API names come from roctracer_op_string, else a generic name. */
static void api_names(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    static const char *const names[200] = {[107] = "hipLaunchKernel"};
    dt_rt_decoder d = f.d;
    d.api_names = names;
    d.api_name_count = 200;
    api(p, 0, 107, 1);
    api(p, 0, 150, 2);
    api(p, 0, 400, 3);
    decode_half(&d, s, p, 0);
    REQUIRE_EQ(s->sink.store.count, 3);
    dt_rec *r = dt__store_at(&s->sink.store, 0);
    CHECK_EQ(r->kind, DT_EVENT_RUNTIME);
    CHECK_STR(name_of(s, r), "hipLaunchKernel");
    CHECK_EQ(r->u.api.cbid, 107);
    CHECK_EQ(r->context, 4242);
    CHECK_EQ(r->lane, 4243);
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 1)), "HIP_API#150");
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 2)), "HIP_API#400");
    close_fixture(&f);
}

/* The flight recorder's copy of a delivered buffer, decoded after
   roctracer reused its half: the names are the copy's, a name pointer
   elsewhere in the pool is still a corrupt record, and a copy that claims
   more records than it holds reads none past its end. */
static void copies_keep_names(void)
{
    fixture f = open_fixture(DT_CAPTURE_ALL);
    dt_session *s = f.s;
    pool *p = f.p;
    dt_rt_decoder d = f.d;
    kernel(p, 1, 1, "before_reuse_a");
    kernel(p, 1, 2, "before_reuse_b");
    activity_record_t *r = kernel(p, 1, 3, NULL);
    r->kernel_name = (const char *)p->mem + 8; /* inside the other half's records */
    const uint8_t *begin = p->mem + HALF;
    size_t room = DT_RT_COPY_HEADER + HALF;
    uint8_t *copy = malloc(room);
    REQUIRE(copy != NULL, "malloc");
    size_t size = dt__rt_copy(copy, room, &d, begin, begin + p->used[1]);
    /* the records and their names, not the rest of the half between them */
    REQUIRE_EQ(size, DT_RT_COPY_HEADER + p->used[1] + p->tail[1]);
    /* roctracer writes the half again */
    memset(p->mem + HALF, 0, HALF);
    p->used[1] = p->tail[1] = 0;
    kernel(p, 1, 7, "after_reuse_xx");
    dt__rt_decode_copy(&d, s, copy, size);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 1);
    REQUIRE_EQ(s->sink.store.count, 2);
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 0)), "before_reuse_a");
    CHECK_STR(name_of(s, dt__store_at(&s->sink.store, 1)), "before_reuse_b");
    /* a header claiming more bytes than the copy holds: read to its end
       and no further (the sanitizer builds check the reads); no room is
       left for names: the three records' are corrupt, and the names read
       as records one cut short */
    size_t claim = 2 * HALF;
    memcpy(copy + sizeof(const uint8_t *), &claim, sizeof claim);
    dt__rt_decode_copy(&d, s, copy, size);
    CHECK_EQ(s->sink.store.count, 2);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED), 5);
    /* records without names: the copy holds the records alone; a
       dispatch whose name pointer is not in the names area copies none */
    memset(p->mem + HALF, 0, HALF);
    p->used[1] = p->tail[1] = 0;
    ops(p, 1, DT_RT_HIP_OP_COPY, DT_RT_CMD_WRITE, 8, 4096);
    r = kernel(p, 1, 9, NULL);
    r->kernel_name = (const char *)p->mem + HALF + 8;
    CHECK_EQ(dt__rt_copy(copy, room, &d, begin, begin + p->used[1]), DT_RT_COPY_HEADER + p->used[1]);
    /* too little room: nothing copied */
    CHECK_EQ(dt__rt_copy(copy, DT_RT_COPY_HEADER + p->used[1] - 1, &d, begin, begin + p->used[1]), 0);
    /* a buffer that runs past its half: its copy holds the half's records
       and decodes as the buffer does */
    size_t before = s->sink.store.count;
    uint64_t malformed = dt_session_loss(s, DT_LOSS_MALFORMED), unknown = dt_session_loss(s, DT_LOSS_UNKNOWN_KIND);
    dt__rt_decode(&d, s, begin, begin + HALF + DT_RT_RECORD_SIZE);
    size_t direct = s->sink.store.count - before;
    uint64_t direct_malformed = dt_session_loss(s, DT_LOSS_MALFORMED) - malformed;
    uint64_t direct_unknown = dt_session_loss(s, DT_LOSS_UNKNOWN_KIND) - unknown;
    CHECK_EQ(direct_malformed, 2); /* the name pointer into the records, the cut */
    size = dt__rt_copy(copy, room, &d, begin, begin + HALF + DT_RT_RECORD_SIZE);
    REQUIRE_EQ(size, DT_RT_COPY_HEADER + HALF);
    before = s->sink.store.count;
    malformed = dt_session_loss(s, DT_LOSS_MALFORMED);
    unknown = dt_session_loss(s, DT_LOSS_UNKNOWN_KIND);
    dt__rt_decode_copy(&d, s, copy, size);
    CHECK_EQ(s->sink.store.count - before, direct);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_MALFORMED) - malformed, direct_malformed);
    CHECK_EQ(dt_session_loss(s, DT_LOSS_UNKNOWN_KIND) - unknown, direct_unknown);
    /* not in the pool: nothing to copy */
    static const uint8_t elsewhere[DT_RT_RECORD_SIZE];
    CHECK_EQ(dt__rt_copy(copy, room, &d, elsewhere, elsewhere + sizeof elsewhere), 0);
    free(copy);
    close_fixture(&f);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(names_from_the_end), DT_TEST(name_pointers_checked), DT_TEST(external_ids),
             DT_TEST(unknown_and_cut), DT_TEST(command_kinds), DT_TEST(capture_filters), DT_TEST(call_arguments),
             DT_TEST(argument_table), DT_TEST(api_names), DT_TEST(copies_keep_names))

/* Perfetto traces: the args the JSON reader leaves in the text, typed, and
   malformed args left out. */
#define DT_TEST_PART /* json.c has main */
#include "reader_test.h"

/* ---- Perfetto args the JSON reader leaves in the text ---- */

/* What a Perfetto trace's kernels carry of grid, block, collective and
   process group, in the order they end. */
typedef struct pf_args {
    size_t n;
    struct {
        uint32_t has;
        int32_t grid[3], block[3];
        char collective[64], group[64];
        size_t collective_len, group_len;
        bool raw;
    } ev[16];
    size_t others_with_args; /* events that are not kernels yet carry some */
    size_t long_strings_ok;  /* strings past 64 bytes, all 'c' */
} pf_args;

static void pf_copy_string(pf_args *a, char *dst, const char *s, size_t n)
{
    memcpy(dst, s, n < 63 ? n : 63);
    dst[n < 63 ? n : 63] = '\0';
    bool same = n >= 64;
    for (size_t i = 0; same && i < n; i++)
        same = s[i] == 'c';
    a->long_strings_ok += same;
}

static int pf_args_visit(void *user, const dt_rd_event *e)
{
    pf_args *a = user;
    const uint32_t bits = DT_RD_HAS_GRID | DT_RD_HAS_BLOCK | DT_RD_HAS_COLLECTIVE_NAME | DT_RD_HAS_GROUP;
    if (e->cat_kind != DT_RD_CAT_KERNEL) {
        a->others_with_args += (e->has & bits) != 0;
        return 0;
    }
    REQUIRE(a->n < 16);
    __typeof__(a->ev[0]) *v = &a->ev[a->n++];
    v->has = e->has & (bits | DT_RD_HAS_COLLECTIVE);
    v->raw = e->raw != NULL;
    if (e->has & DT_RD_HAS_GRID)
        memcpy(v->grid, e->grid, sizeof v->grid);
    if (e->has & DT_RD_HAS_BLOCK)
        memcpy(v->block, e->block, sizeof v->block);
    if (e->has & DT_RD_HAS_COLLECTIVE_NAME) {
        v->collective_len = e->collective_len;
        pf_copy_string(a, v->collective, e->collective, e->collective_len);
    }
    if (e->has & DT_RD_HAS_GROUP) {
        v->group_len = e->group_len;
        pf_copy_string(a, v->group, e->group, e->group_len);
    }
    return 0;
}

static int pf_args_read(const void *data, size_t len, unsigned flags, pf_args *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    dt_rd_source *src = dt__rd_open_memory(data, len);
    REQUIRE(src != NULL);
    dt_rd_summary s;
    dt_rd_options o = {.visit = pf_args_visit, .user = a, .flags = flags};
    int rc = dt__rd_read_opts(src, &o, &s, err, errlen);
    dt__rd_summary_free(&s);
    dt__rd_close(src);
    return rc;
}

static unsigned char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    REQUIRE(buf != NULL);
    REQUIRE_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A session devtrace writes as JSON and as Perfetto: the Perfetto reader
   gives, typed, the grid, block, collective and process group that the
   JSON holds in its text. */
void perfetto_args_are_the_json_text_typed(void)
{
    const uint64_t t0 = UINT64_C(1764000000000000000);
    dt_session *s = dt_test_written_session(t0, t0 + 1000000);
    dt_test_kernel(s, "gemm", t0 + 1000, 7, (dt_launch_config){{4, 2, 1}, {128, 1, 1}, 32, 1024, 0});
    dt_test_kernel(s, "wide", t0 + 2000, 7, (dt_launch_config){{2147483647, 65535, 3}, {1024, 1, 64}, 32, 0, 0});
    dt_test_collective(s, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "default_pg", t0 + 3000);
    dt_test_collective(s, "ncclDevKernel_Broadcast_RING_LL", NULL, t0 + 6000);
    char dir[] = "/tmp/dt_test_reader_XXXXXX", json[64], pf[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(json, sizeof json, "%s/t.json", dir);
    snprintf(pf, sizeof pf, "%s/t.pftrace", dir);
    REQUIRE_EQ(dt_session_write(s, json, DT_FORMAT_JSON), DT_OK);
    REQUIRE_EQ(dt_session_write(s, pf, DT_FORMAT_PERFETTO), DT_OK);
    dt_session_destroy(s);

    size_t len;
    unsigned char *buf = read_whole(pf, &len);
    pf_args a;
    char err[512];
    /* text where the input is JSON: a Perfetto trace is read all the same */
    REQUIRE_EQ(pf_args_read(buf, len, DT_RD_RAW_IF_JSON, &a, err, sizeof err), 0);
    REQUIRE_EQ(a.n, 4);
    REQUIRE_EQ(a.others_with_args, 0);
    CHECK_EQ(a.ev[0].has, DT_RD_HAS_GRID | DT_RD_HAS_BLOCK);
    CHECK(!a.ev[0].raw);
    CHECK(memcmp(a.ev[0].grid, ((int32_t[]){4, 2, 1}), 12) == 0);
    CHECK(memcmp(a.ev[0].block, ((int32_t[]){128, 1, 1}), 12) == 0);
    CHECK_EQ(a.ev[1].has, DT_RD_HAS_GRID | DT_RD_HAS_BLOCK);
    CHECK(memcmp(a.ev[1].grid, ((int32_t[]){2147483647, 65535, 3}), 12) == 0);
    CHECK(memcmp(a.ev[1].block, ((int32_t[]){1024, 1, 64}), 12) == 0);
    CHECK_EQ(a.ev[2].has, DT_RD_HAS_COLLECTIVE | DT_RD_HAS_COLLECTIVE_NAME | DT_RD_HAS_GROUP);
    CHECK_STR(a.ev[2].collective, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    CHECK_EQ(a.ev[2].collective_len, strlen("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    CHECK_STR(a.ev[2].group, "default_pg");
    CHECK_EQ(a.ev[2].group_len, strlen("default_pg"));
    /* no communicator: none in either format */
    CHECK_EQ(a.ev[3].has, DT_RD_HAS_COLLECTIVE | DT_RD_HAS_COLLECTIVE_NAME);
    CHECK_STR(a.ev[3].collective, "ncclDevKernel_Broadcast_RING_LL");
    /* the same without flags; merge's text-only reading still refuses it */
    pf_args b;
    REQUIRE_EQ(pf_args_read(buf, len, 0, &b, err, sizeof err), 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    REQUIRE_EQ(pf_args_read(buf, len, DT_RD_RAW, &b, err, sizeof err), -1);
    CHECK(strstr(err, "only JSON traces are taken here") != NULL);
    free(buf);
    /* the JSON's text holds the same values; its events come with text and
       without the typed args */
    buf = read_whole(json, &len);
    REQUIRE_EQ(pf_args_read(buf, len, DT_RD_RAW_IF_JSON, &b, err, sizeof err), 0);
    REQUIRE_EQ(b.n, 4);
    for (size_t i = 0; i < 4; i++) {
        CHECK(b.ev[i].raw);
        CHECK_EQ(b.ev[i].has, i < 2 ? 0u : (uint32_t)DT_RD_HAS_COLLECTIVE);
    }
    const char *text = (const char *)buf;
    buf[len] = '\0';
    CHECK(strstr(text, "\"grid\":[4,2,1],\"block\":[128,1,1]") != NULL);
    CHECK(strstr(text, "\"grid\":[2147483647,65535,3],\"block\":[1024,1,64]") != NULL);
    CHECK(strstr(text, "\"Collective name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\"") != NULL);
    CHECK(strstr(text, "\"Process Group Name\":\"default_pg\"") != NULL);
    CHECK(strstr(text, "\"Collective name\":\"ncclDevKernel_Broadcast_RING_LL\"") != NULL);
    const char *group = strstr(text, "\"Process Group Name\":");
    CHECK(group && !strstr(group + 1, "\"Process Group Name\":")); /* the broadcast's has none */
    free(buf);
    unlink(json);
    unlink(pf);
    rmdir(dir);
}

/* Protocol buffers by hand, for Perfetto traces no writer would make. */
typedef struct pb {
    unsigned char *p;
    size_t n, cap;
} pb;

static void pb_put(pb *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        REQUIRE(b->p != NULL);
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    unsigned char c[10];
    size_t n = 0;
    do {
        c[n++] = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_put(b, c, n);
}

static void pb_uint(pb *b, unsigned field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void pb_bytes(pb *b, unsigned field, const void *d, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    pb_put(b, d, n);
}

static void pb_str(pb *b, unsigned field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

/* inner as a length-delimited field of b; inner is emptied */
static void pb_sub(pb *b, unsigned field, pb *inner)
{
    pb_bytes(b, field, inner->p, inner->n);
    free(inner->p);
    memset(inner, 0, sizeof *inner);
}

/* An interned string {iid, text} into InternedData's table field. */
static void pb_interned(pb *b, unsigned field, uint64_t iid, const char *text)
{
    pb e = {0};
    pb_uint(&e, 1, iid);
    pb_str(&e, 2, text);
    pb_sub(b, field, &e);
}

/* A packet of sequence 1 at ts with a TrackEvent on track 1: a slice's
   begin (name and category iids, its debug annotations, which are emptied)
   or end (name 0). */
static void pb_slice(pb *trace, uint64_t ts, uint64_t name, uint64_t cat, pb *annotations, pb *interned)
{
    pb te = {0}, pkt = {0};
    pb_uint(&te, 9, name ? 1 : 2);
    if (name) {
        pb_uint(&te, 10, name);
        pb_uint(&te, 3, cat);
    }
    pb_uint(&te, 11, 1);
    if (annotations) {
        pb_put(&te, annotations->p, annotations->n);
        free(annotations->p);
        memset(annotations, 0, sizeof *annotations);
    }
    pb_uint(&pkt, 8, ts);
    pb_uint(&pkt, 10, 1);
    if (interned) {
        pb_uint(&pkt, 13, 1); /* incremental state cleared */
        pb_sub(&pkt, 12, interned);
    }
    pb_sub(&pkt, 11, &te);
    pb_sub(trace, 1, &pkt);
}

enum { PB_GRID = 1, PB_BLOCK, PB_COLLECTIVE, PB_GROUP, PB_OTHER };

/* A debug annotation of arg name iid whose value is the raw fields v. */
static void pb_annotation(pb *anns, uint64_t name, const pb *v)
{
    pb a = {0};
    pb_uint(&a, 1, name);
    pb_put(&a, v->p, v->n);
    pb_sub(anns, 4, &a);
}

/* An array of n elements, each an int_value (4) unless kinds says
   otherwise at that index: 's' a string, 'd' a double, 'u' a uint_value,
   'x' a truncated varint. */
static void pb_array(pb *anns, uint64_t name, const int64_t *v, size_t n, const char *kinds)
{
    pb arr = {0};
    for (size_t i = 0; i < n; i++) {
        pb e = {0};
        char k = kinds && kinds[i] ? kinds[i] : 'i';
        if (k == 's')
            pb_str(&e, 6, "7");
        else if (k == 'd') {
            double d = 7.0;
            pb_varint(&e, 5u << 3 | 1);
            pb_put(&e, &d, 8);
        } else if (k == 'x') {
            pb_varint(&e, 4u << 3);
            pb_put(&e, "\x80", 1);
        } else {
            pb_uint(&e, k == 'u' ? 3 : 4, (uint64_t)v[i]);
        }
        pb_sub(&arr, 12, &e);
    }
    pb_annotation(anns, name, &arr);
    free(arr.p);
}

/* A devtrace-shaped Perfetto trace: a thread's track, the capture slice, and
   in it a kernel slice per entry of kernels (their annotations). */
static pb pb_trace(pb *kernels, size_t n)
{
    pb trace = {0}, desc = {0}, thr = {0}, pkt = {0}, in = {0};
    pb_uint(&thr, 1, 10);
    pb_uint(&thr, 2, 11);
    pb_uint(&desc, 1, 1);
    pb_sub(&desc, 4, &thr);
    pb_sub(&pkt, 60, &desc);
    pb_sub(&trace, 1, &pkt);
    pb_interned(&in, 1, 1, "Trace");
    pb_interned(&in, 1, 2, "kernel");
    pb_interned(&in, 2, 1, "devtrace capture");
    pb_interned(&in, 2, 2, "k");
    pb_interned(&in, 3, PB_GRID, "grid");
    pb_interned(&in, 3, PB_BLOCK, "block");
    pb_interned(&in, 3, PB_COLLECTIVE, "Collective name");
    pb_interned(&in, 3, PB_GROUP, "Process Group Name");
    pb_interned(&in, 3, PB_OTHER, "stream");
    pb_interned(&in, 29, 1, "interned_group");
    uint64_t ts = 1000;
    pb_slice(&trace, ts, 1, 1, NULL, &in);
    for (size_t i = 0; i < n; i++) {
        pb_slice(&trace, ts += 10, 2, 2, &kernels[i], NULL);
        pb_slice(&trace, ts += 10, 0, 0, NULL, NULL);
    }
    pb_slice(&trace, ts + 10, 0, 0, NULL, NULL);
    return trace;
}

/* Hostile annotations: an array of the wrong length or with elements that
   are not int32, a value of the wrong type or wire type, an unknown
   interned string, a string of 8 MiB, a NUL inside one. Each is left out
   (or taken whole), never read past; a malformed one fails the read. */
void malformed_perfetto_args_are_left_out(void)
{
    pb k[10] = {{0}};
    pb v = {0};
    /* 0: the shape devtrace writes, a negative value among them */
    pb_array(&k[0], PB_GRID, (int64_t[]){1, 2, 3}, 3, NULL);
    pb_array(&k[0], PB_BLOCK, (int64_t[]){-7, 5, INT32_MAX}, 3, NULL);
    /* 1: two elements, and four */
    pb_array(&k[1], PB_GRID, (int64_t[]){1, 2}, 2, NULL);
    pb_array(&k[1], PB_BLOCK, (int64_t[]){1, 2, 3, 4}, 4, NULL);
    /* 2: a string element, a double element */
    pb_array(&k[2], PB_GRID, (int64_t[]){1, 0, 3}, 3, "is");
    pb_array(&k[2], PB_BLOCK, (int64_t[]){1, 2, 0}, 3, "iid");
    /* 3: past int32, and uint_values (taken) */
    pb_array(&k[3], PB_GRID, (int64_t[]){1, INT64_C(1) << 40, 3}, 3, NULL);
    pb_array(&k[3], PB_BLOCK, (int64_t[]){5, 6, 7}, 3, "uuu");
    /* 4: an int for the grid; the block's array as a varint; an array
       under a name the reader does not take */
    pb_uint(&v, 4, 9);
    pb_annotation(&k[4], PB_GRID, &v);
    v.n = 0;
    pb_uint(&v, 12, 9);
    pb_annotation(&k[4], PB_BLOCK, &v);
    v.n = 0;
    pb_array(&k[4], PB_OTHER, (int64_t[]){1, 2, 3}, 3, NULL);
    /* 5: a string as written, and an interned one */
    pb_str(&v, 6, "ncclAllReduce");
    pb_annotation(&k[5], PB_COLLECTIVE, &v);
    v.n = 0;
    pb_uint(&v, 17, 1);
    pb_annotation(&k[5], PB_GROUP, &v);
    v.n = 0;
    /* 6: an interned string that is not there; an int for the group */
    pb_uint(&v, 17, 99);
    pb_annotation(&k[6], PB_COLLECTIVE, &v);
    v.n = 0;
    pb_uint(&v, 4, 3);
    pb_annotation(&k[6], PB_GROUP, &v);
    v.n = 0;
    /* 7: 8 MiB of name; a string as a varint, an iid as bytes */
    size_t big = (size_t)8 << 20;
    char *c = malloc(big);
    REQUIRE(c != NULL);
    memset(c, 'c', big);
    pb_bytes(&v, 6, c, big);
    free(c);
    pb_annotation(&k[7], PB_COLLECTIVE, &v);
    v.n = 0;
    pb_uint(&v, 6, 5);
    pb_bytes(&v, 17, "\x01", 1);
    pb_annotation(&k[7], PB_GROUP, &v);
    v.n = 0;
    /* 8: a NUL inside a string */
    pb_bytes(&v, 6, "a\0b", 3);
    pb_annotation(&k[8], PB_GROUP, &v);
    v.n = 0;
    /* 9: none */
    pb trace = pb_trace(k, 10);
    pf_args a;
    char err[512];
    REQUIRE_EQ(pf_args_read(trace.p, trace.n, 0, &a, err, sizeof err), 0);
    REQUIRE_EQ(a.n, 10);
    CHECK_EQ(a.ev[0].has, DT_RD_HAS_GRID | DT_RD_HAS_BLOCK);
    CHECK(memcmp(a.ev[0].grid, ((int32_t[]){1, 2, 3}), 12) == 0);
    CHECK(memcmp(a.ev[0].block, ((int32_t[]){-7, 5, INT32_MAX}), 12) == 0);
    CHECK_EQ(a.ev[1].has, 0);
    CHECK_EQ(a.ev[2].has, 0);
    CHECK_EQ(a.ev[3].has, DT_RD_HAS_BLOCK);
    CHECK(memcmp(a.ev[3].block, ((int32_t[]){5, 6, 7}), 12) == 0);
    CHECK_EQ(a.ev[4].has, 0);
    CHECK_EQ(a.ev[5].has, DT_RD_HAS_COLLECTIVE | DT_RD_HAS_COLLECTIVE_NAME | DT_RD_HAS_GROUP);
    CHECK_STR(a.ev[5].collective, "ncclAllReduce");
    CHECK_STR(a.ev[5].group, "interned_group");
    CHECK_EQ(a.ev[6].has, DT_RD_HAS_COLLECTIVE); /* a collective, of no name the reader could read */
    CHECK_EQ(a.ev[7].has, DT_RD_HAS_COLLECTIVE | DT_RD_HAS_COLLECTIVE_NAME);
    CHECK_EQ(a.ev[7].collective_len, big);
    CHECK_EQ(a.long_strings_ok, 1);
    CHECK_EQ(a.ev[8].has, DT_RD_HAS_GROUP);
    CHECK_EQ(a.ev[8].group_len, 3);
    CHECK(memcmp(a.ev[8].group, "a\0b", 3) == 0);
    CHECK_EQ(a.ev[9].has, 0);
    CHECK_EQ(a.others_with_args, 0);
    free(trace.p);

    /* an array element cut inside its varint, and a string longer than its
       annotation: the trace is malformed there, and said so */
    pb bad[1] = {{0}};
    pb_array(&bad[0], PB_GRID, (int64_t[]){1, 2, 3}, 3, "iix");
    trace = pb_trace(bad, 1);
    REQUIRE_EQ(pf_args_read(trace.p, trace.n, 0, &a, err, sizeof err), -1);
    CHECK(strstr(err, "Perfetto trace: a malformed debug annotation") != NULL, "%s", err);
    free(trace.p);
    pb_varint(&v, 6u << 3 | 2);
    pb_varint(&v, 1000);
    pb_put(&v, "short", 5);
    pb_annotation(&bad[0], PB_COLLECTIVE, &v);
    free(v.p);
    trace = pb_trace(bad, 1);
    REQUIRE_EQ(pf_args_read(trace.p, trace.n, 0, &a, err, sizeof err), -1);
    CHECK(strstr(err, "Perfetto trace: a malformed debug annotation") != NULL, "%s", err);
    free(trace.p);
}

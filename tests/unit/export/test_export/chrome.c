/* What the Chrome trace says of each kind of record, exactly, and how a write
   fails. */
#define DT_TEST_PART /* main.c has main */
#include "export_test.h"

/* ---------------------------------------------------------------- */
/* Tests                                                             */
/* ---------------------------------------------------------------- */
void test_export_top_level(void)
{
    dt_session *s = new_session();
    kernel(s, "k", T0 + 100, T0 + 200, 0, 7, 0);
    /* launches: the API calls flagged as launching device work, not others */
    api(s, "cudaLaunchKernel", T0 + 10, T0 + 20, 1, 0)->flags |= DT_REC_LAUNCH;
    api(s, "cudaLaunchKernel", T0 + 30, T0 + 40, 2, 0)->flags |= DT_REC_LAUNCH;
    api(s, "cudaMalloc", T0 + 50, T0 + 60, 1, 0);
    trace t;
    export_and_parse(s, "top.json", &t);
    REQUIRE_EQ(get_int(t.root, "baseTimeNanoseconds"), (long long)BASE);
    yajl_val dev = get(t.root, "devtrace");
    REQUIRE_STR(get_str(dev, "version"), DT_VERSION_STRING);
    REQUIRE_STR(get_str(dev, "backend"), "none");
    const char *ws[] = {"captureWindow", "startNs", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(dev, ws, yajl_t_number)), (long long)T0);
    const char *kc[] = {"counts", "kernel", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(dev, kc, yajl_t_number)), 1);
    const char *rc[] = {"counts", "runtime", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(dev, rc, yajl_t_number)), 3);
    const char *lc[] = {"counts", "launches", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(dev, lc, yajl_t_number)), 2);
    char path[512];
    path_in_dir(path, sizeof path, "top.json");
    REQUIRE_STR(get_str(t.root, "traceName"), path);
    /* the Trace event spans the window exactly */
    char *line = event_line(&t, "\"cat\":\"Trace\"", 0);
    REQUIRE(line != NULL);
    REQUIRE(strstr(line, "\"ts\":1.000,\"dur\":10000000.000") != NULL);
    free(line);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_exact_times(void)
{
    dt_session *s = new_session();
    kernel(s, "k_exact", BASE + 1234567, BASE + 1234567 + 42125, 0, 7, 0);
    kernel(s, "k_small", BASE + 1005, BASE + 1005, 0, 8, 0);
    kernel(s, "k_round", BASE + 2000000, BASE + 3000000, 0, 9, 0);
    trace t;
    export_and_parse(s, "times.json", &t);
    char *l = event_line(&t, "\"name\":\"k_exact\"", 0);
    REQUIRE(l != NULL);
    REQUIRE(strstr(l, "\"ts\":1234.567,\"dur\":42.125,") != NULL);
    free(l);
    l = event_line(&t, "\"name\":\"k_small\"", 0);
    REQUIRE(strstr(l, "\"ts\":1.005,\"dur\":0.000,") != NULL);
    free(l);
    l = event_line(&t, "\"name\":\"k_round\"", 0);
    REQUIRE(strstr(l, "\"ts\":2000.000,\"dur\":1000.000,") != NULL);
    free(l);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_flows(void)
{
    dt_session *s = new_session();
    api(s, "cudaLaunchKernel", T0 + 1000, T0 + 3000, 100, 7);
    kernel(s, "k_second", T0 + 9000, T0 + 9500, 0, 3, 7);   /* later, same correlation */
    kernel(s, "k_first", T0 + 5000, T0 + 6000, 0, 3, 7);
    api(s, "cudaMalloc", T0 + 4000, T0 + 4100, 100, 8);      /* no device event */
    kernel(s, "k_orphan", T0 + 7000, T0 + 8000, 0, 3, 9);   /* no API event */
    trace t;
    export_and_parse(s, "flows.json", &t);
    REQUIRE_EQ(count_text(&t, "\"ph\":\"s\""), 1);
    REQUIRE_EQ(count_text(&t, "\"ph\":\"f\""), 1);
    char *l = event_line(&t, "\"ph\":\"s\"", 0);
    REQUIRE_STR(l, "{\"ph\":\"s\",\"id\":7,\"pid\":4242,\"tid\":100,\"ts\":2.000,"
                           "\"cat\":\"ac2g\",\"name\":\"ac2g\"},");
    free(l);
    l = event_line(&t, "\"ph\":\"f\"", 0);
    REQUIRE_STR(l, "{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":3,\"ts\":6.000,"
                           "\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},");
    free(l);
    /* the flow follows the first kernel's own line */
    l = event_line(&t, "\"name\":\"k_first\"", 0);
    REQUIRE(strstr(l, "\"correlation\":7,") != NULL);
    free(l);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_external_id(void)
{
    dt_session *s = new_session();
    external(kernel(s, "k_ext0", T0 + 100, T0 + 200, 0, 1, 0), 0);
    kernel(s, "k_noext", T0 + 300, T0 + 400, 0, 1, 0);
    external(api(s, "cudaLaunchKernel", T0 + 50, T0 + 90, 5, 0), 12);
    trace t;
    export_and_parse(s, "ext.json", &t);
    yajl_val ev[2];
    REQUIRE_EQ(find_events(&t, "kernel", "k_ext0", ev, 2), 1);
    yajl_val e = get(get(ev[0], "args"), "External id");
    REQUIRE(e != NULL);
    REQUIRE_EQ(YAJL_GET_INTEGER(e), 0);
    REQUIRE_EQ(find_events(&t, "kernel", "k_noext", ev, 2), 1);
    REQUIRE(get(get(ev[0], "args"), "External id") == NULL);
    REQUIRE_EQ(find_events(&t, "privateuse1_runtime", "cudaLaunchKernel", ev, 2), 1);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "External id"), 12);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "cbid"), 211);
    /* attribution: id 0 has the kernel's 100 ns; the API's id is not device time */
    const char *a0[] = {"devtrace", "attribution", "0", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(t.root, a0, yajl_t_number)), 100);
    const char *a12[] = {"devtrace", "attribution", "12", NULL};
    REQUIRE(yajl_tree_get(t.root, a12, yajl_t_any) == NULL);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_hostile_names(void)
{
    dt_session *s = new_session();
    static const char quoted[] = "say \"hi\" \\ back\\slash";
    static const char control[] = "tab\there\nnew\x01\x1f\x7f end";
    static const char bad_utf8[] = "bad \xff\xfe \xc3( \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 ok \xc3\xa9";
    static const char expect_bad[] = "bad \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd "
                                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ok \xc3\xa9";
    size_t big_len = 64 * 1024;
    char *big = malloc(big_len + 1);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    big[big_len] = 0;
    /* an embedded NUL, and a 64 KiB name of control characters (6x when escaped) */
    static const char with_nul[] = {'a', 0, 'b'};
    char *ctl = malloc(big_len);
    memset(ctl, 0x02, big_len);

    api(s, quoted, T0 + 10, T0 + 20, 1, 0);
    api(s, control, T0 + 30, T0 + 40, 1, 0);
    api(s, bad_utf8, T0 + 50, T0 + 60, 1, 0);
    api(s, big, T0 + 70, T0 + 80, 1, 0);
    dt_rec *r = api(s, "x", T0 + 90, T0 + 95, 1, 0);
    r->name = dt__intern_n(&s->names, with_nul, sizeof with_nul);
    r = api(s, "x", T0 + 100, T0 + 105, 1, 0);
    r->name = dt__intern_n(&s->names, ctl, big_len);
    range(s, quoted, T0 + 200, T0 + 300, 1, DT_RANGE_ID_BASE, 0, 0);

    trace t;
    export_and_parse(s, "names.json", &t);
    yajl_val ev[2];
    REQUIRE_EQ(find_events(&t, NULL, quoted, ev, 2), 2);
    REQUIRE_EQ(find_events(&t, NULL, control, ev, 2), 1);
    REQUIRE_EQ(find_events(&t, NULL, expect_bad, ev, 2), 1);
    REQUIRE_EQ(find_events(&t, NULL, big, ev, 2), 1);
    REQUIRE(strstr(t.text, "\"name\":\"a\\u0000b\"") != NULL);
    /* yajl turns \u0000 into a NUL: compare the 64 KiB control-character name */
    size_t found = 0;
    for (size_t i = 0; i < t.events->u.array.len; i++) {
        const char *nm = get_str(t.events->u.array.values[i], "name");
        if (nm && strlen(nm) == big_len && (unsigned char)nm[0] == 0x02 && nm[big_len - 1] == 0x02)
            found++;
    }
    REQUIRE_EQ(found, 1);
    REQUIRE(strstr(t.text, "\"tab\\there\\nnew\\u0001\\u001f\x7f end\"") != NULL);
    free_trace(&t);
    free(big);
    free(ctl);
    dt_session_destroy(s);
}

void test_export_overlaps_move_to_overflow_rows(void)
{
    dt_session *s = new_session();
    kernel(s, "A", T0 + 0, T0 + 100, 0, 3, 0);
    kernel(s, "B", T0 + 50, T0 + 150, 0, 3, 0);  /* partial overlap with A */
    kernel(s, "C", T0 + 10, T0 + 20, 0, 3, 0);   /* nested in A */
    kernel(s, "D", T0 + 100, T0 + 200, 0, 3, 0); /* touches A's end: fine on A's row */
    kernel(s, "E", T0 + 60, T0 + 160, 0, 3, 0);  /* overlaps A and B partially */
    kernel(s, "F", T0 + 0, T0 + 100, 0, 3, 0);   /* equal to A: nests */
    kernel(s, "Z", T0 + 40, T0 + 40, 0, 3, 0);   /* zero duration inside A */
    /* host: a range around calls, and two calls that overlap partially */
    range(s, "step", T0 + 1000, T0 + 2000, 77, DT_RANGE_ID_BASE + 1, 0, 0);
    api(s, "call1", T0 + 1100, T0 + 1300, 77, 0);
    api(s, "call2", T0 + 1200, T0 + 1400, 77, 0);
    trace t;
    export_and_parse(s, "overlap.json", &t);
    yajl_val ev[2];
    static const struct { const char *name; long long tid; } want[] = {
        {"A", 3}, {"B", 1000003}, {"C", 3}, {"D", 3}, {"E", 3000003}, {"F", 3}, {"Z", 3},
        {"step", 77}, {"call1", 77}, {"call2", 77 | (1 << 22)},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        REQUIRE_EQ(find_events(&t, NULL, want[k].name, ev, 2), 1);
        if (get_int(ev[0], "tid") != want[k].tid)
            FAIL("%s on tid %lld, expected %lld", want[k].name, get_int(ev[0], "tid"), want[k].tid);
    }
    REQUIRE(strstr(t.text, "\"tid\":1000003,\"ts\":1.000,\"args\":{\"name\":\"stream 3 (overlap 1)\"}") != NULL);
    REQUIRE(strstr(t.text, "\"args\":{\"name\":\"stream 3 (overlap 2)\"}") != NULL);
    REQUIRE(strstr(t.text, "\"args\":{\"name\":\"thread 77 (overlap 1)\"}") != NULL);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_many_overlaps_stay_valid(void)
{
    /* a staircase of partial overlaps, far more levels than nest in place */
    dt_session *s = new_session();
    for (int i = 0; i < 3000; i++)
        kernel(s, "stair", T0 + (uint64_t)i * 10, T0 + (uint64_t)i * 10 + 1000, 1, 5, 0);
    for (int i = 0; i < 500; i++)
        api(s, "stair_api", T0 + (uint64_t)i * 10, T0 + (uint64_t)i * 10 + 300, 9, 0);
    trace t;
    export_and_parse(s, "stairs.json", &t);
    REQUIRE_EQ(find_events(&t, "kernel", "stair", NULL, 0), 3000);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_gzip_matches_plain(void)
{
    dt_session *s = new_session();
    for (int i = 0; i < 20000; i++) {
        api(s, "cudaLaunchKernel", T0 + (uint64_t)i * 1000, T0 + (uint64_t)i * 1000 + 300, 11, (uint64_t)i + 1);
        kernel(s, i % 2 ? "_Z3fooi" : "bar", T0 + (uint64_t)i * 1000 + 500, T0 + (uint64_t)i * 1000 + 900,
               0, 7, (uint64_t)i + 1);
    }
    char path[512];
    path_in_dir(path, sizeof path, "same.json");
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON), DT_OK);
    size_t plain_len, gz_len;
    char *plain = read_file(path, &plain_len);
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON_GZ), DT_OK);
    size_t raw_len;
    char *raw = read_file(path, &raw_len);
    REQUIRE(raw_len > 2 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b);
    REQUIRE(raw_len < plain_len / 4);
    free(raw);
    char *gz = read_gzip(path, &gz_len);
    REQUIRE_EQ(gz_len, plain_len);
    REQUIRE(memcmp(gz, plain, plain_len) == 0);
    trace t;
    parse_trace(&t, gz, gz_len);
    check_invariants(&t);
    /* demangled once at intern time */
    REQUIRE_EQ(find_events(&t, "kernel", "foo(int)", NULL, 0), 10000);
    REQUIRE_EQ(count_text(&t, "\"bp\":\"e\""), 20000);
    free_trace(&t);
    free(plain);
    dt_session_destroy(s);
}

void test_export_unwritable_path(void)
{
    dt_session *s = new_session();
    kernel(s, "k", T0 + 1, T0 + 2, 0, 0, 0);
    char path[512], tmp[600];
    path_in_dir(path, sizeof path, "no/such/dir/trace.json");
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON), DT_ERR_IO);
    REQUIRE(strstr(dt_last_error(), "cannot write trace") != NULL);
    REQUIRE(strstr(dt_last_error(), path) != NULL);
    REQUIRE_EQ(access(path, F_OK), -1);
    /* the rename fails onto a directory: the temporary file must go */
    path_in_dir(path, sizeof path, "a_directory");
    REQUIRE_EQ(mkdir(path, 0755), 0);
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON_GZ), DT_ERR_IO);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    REQUIRE_EQ(access(tmp, F_OK), -1);
    struct stat st;
    REQUIRE_EQ(stat(path, &st), 0);
    REQUIRE(S_ISDIR(st.st_mode));
    /* a session that is still running is refused */
    s->state = DT_STATE_RUNNING;
    path_in_dir(path, sizeof path, "running.json");
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON), DT_ERR_STATE);
    REQUIRE_EQ(access(path, F_OK), -1);
    s->state = DT_STATE_STOPPED;
    REQUIRE_EQ(dt_session_write(s, path, (dt_format)7), DT_ERR_INVALID_ARGUMENT);
    dt_session_destroy(s);
}

void test_export_write_failure_keeps_old_file(void)
{
    dt_session *s = new_session();
    for (int i = 0; i < 20000; i++)
        kernel(s, i % 2 ? "even" : "odd", T0 + (uint64_t)i * 100, T0 + (uint64_t)i * 100 + 50, 0, 1, 0);
    char path[512], tmp[600];
    path_in_dir(path, sizeof path, "full.json");
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    /* the whole trace's size, to fail in its header, in its events (each
       formatting thread writes its own units then) and in its last bytes */
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON), DT_OK);
    size_t whole;
    free(read_file(path, &whole));
    REQUIRE(whole > (size_t)3 << 20);
    const rlim_t limits[] = {4096, (rlim_t)1 << 20, (rlim_t)whole - 1};

    for (int lanes = 1; lanes <= DT_OUT_MAX_LANES; lanes++) {
        for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
            FILE *f = fopen(path, "w");
            REQUIRE(f != NULL);
            fputs("old", f);
            fclose(f);
            /* a file size limit makes write() fail part way, as a full disk would */
            struct rlimit old, lim;
            REQUIRE_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
            void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
            lim = old;
            lim.rlim_cur = limits[k];
            REQUIRE_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
            dt__out_lane_limit = lanes;
            dt_status js = dt_session_write(s, path, DT_FORMAT_JSON);
            char js_err[512];
            snprintf(js_err, sizeof js_err, "%s", dt_last_error());
            dt_status gz = k == 0 ? dt_session_write(s, path, DT_FORMAT_JSON_GZ) : DT_ERR_IO;
            dt__out_lane_limit = 0;
            REQUIRE_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
            signal(SIGXFSZ, prev);

            CHECK(js == DT_ERR_IO, "lanes %d, limit %llu: status %d", lanes, (unsigned long long)limits[k], (int)js);
            REQUIRE_EQ(gz, DT_ERR_IO);
            REQUIRE(strstr(js_err, "cannot write trace") != NULL);
            REQUIRE(strstr(js_err, strerror(EFBIG)) != NULL);
            REQUIRE_EQ(access(tmp, F_OK), -1);
            size_t len;
            char *text = read_file(path, &len);
            REQUIRE_STR(text, "old");
            free(text);
        }
    }
    dt_session_destroy(s);
}

void test_export_loss_and_attribution(void)
{
    dt_session *s = new_session();
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        atomic_store(&s->sink.loss[r], (uint64_t)(r + 1) * 10);
    external(kernel(s, "k5", T0 + 100, T0 + 200, 0, 1, 0), 5);
    dt_rec *m = push(s, DT_EVENT_MEMCPY, T0 + 300, T0 + 350);
    m->lane = 1;
    m->u.memcpy.bytes = 1000;
    external(m, 5);
    dt_rec *z = push(s, DT_EVENT_MEMSET, T0 + 400, T0 + 410);
    z->lane = 2;
    z->u.memset.bytes = 64;
    external(z, 6);
    /* outside the window: dropped and counted */
    external(kernel(s, "late", T0 + 10 * SEC - 5, T0 + 10 * SEC + 5, 0, 1, 0), 5);
    kernel(s, "early", T0 - 10, T0 + 10, 0, 1, 0);
    dt_rec *odd = push(s, 99, T0 + 1, T0 + 2);
    (void)odd;
    trace t;
    export_and_parse(s, "loss.json", &t);
    yajl_val loss = get(get(t.root, "devtrace"), "loss");
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        long long want = (r + 1) * 10;
        if (r == DT_LOSS_OUTSIDE_WINDOW)
            want += 2;
        if (r == DT_LOSS_UNKNOWN_KIND)
            want += 1;
        REQUIRE_EQ(get_int(loss, dt_loss_reason_name((dt_loss_reason)r)), want);
    }
    REQUIRE_EQ(get_int(loss, "total"), 10 * DT_LOSS_COUNT * (DT_LOSS_COUNT + 1) / 2 + 3);
    yajl_val attr = get(get(t.root, "devtrace"), "attribution");
    REQUIRE_EQ(attr->u.object.len, 2);
    REQUIRE_EQ(get_int(attr, "5"), 150);
    REQUIRE_EQ(get_int(attr, "6"), 10);
    REQUIRE_EQ(find_events(&t, NULL, "late", NULL, 0), 0);
    REQUIRE_EQ(find_events(&t, NULL, "early", NULL, 0), 0);
    const char *kc[] = {"devtrace", "counts", "kernel", NULL};
    REQUIRE_EQ(YAJL_GET_INTEGER(yajl_tree_get(t.root, kc, yajl_t_number)), 1);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_copy_names_and_args(void)
{
    dt_session *s = new_session();
    dt_rec *m = push(s, DT_EVENT_MEMCPY, T0 + 1000, T0 + 1400);
    m->device = 1;
    m->lane = 2;
    m->context = 3;
    m->correlation = 44;
    m->u.memcpy.bytes = 1000;
    m->u.memcpy.copy_kind = DT_COPY_HTOD;
    m->u.memcpy.src_kind = DT_MEM_PAGEABLE;
    m->u.memcpy.dst_kind = DT_MEM_DEVICE;
    dt_rec *z = push(s, DT_EVENT_MEMSET, T0 + 2000, T0 + 2000);
    z->device = 1;
    z->lane = 2;
    z->u.memset.bytes = 64;
    z->u.memset.value = 255;
    z->u.memset.memory_kind = DT_MEM_DEVICE;
    trace t;
    export_and_parse(s, "copies.json", &t);
    char *l = event_line(&t, "\"name\":\"Memcpy HtoD (Pageable -> Device)\"", 0);
    REQUIRE(l != NULL);
    REQUIRE(strstr(l, "\"cat\":\"gpu_memcpy\"") != NULL);
    REQUIRE(strstr(l, "\"args\":{\"device\":1,\"context\":3,\"stream\":2,\"correlation\":44,"
                              "\"bytes\":1000,\"memory bandwidth (GB/s)\":2.5,\"copy kind\":\"HtoD\"}}") != NULL);
    free(l);
    l = event_line(&t, "\"name\":\"Memset (Device)\"", 0);
    REQUIRE(l != NULL);
    /* zero duration: no bandwidth rather than an infinity */
    REQUIRE(strstr(l, "\"bytes\":64,\"value\":255}}") != NULL);
    free(l);
    free_trace(&t);
    dt_session_destroy(s);
}

static dt_rec *memory_op(dt_session *s, uint64_t t, uint16_t dev, uint64_t addr, uint64_t bytes, int is_free,
                         uint8_t kind)
{
    dt_rec *r = push(s, DT_EVENT_MEMORY, t, t);
    r->name = dt__intern_str(&s->names, "[memory]");
    r->device = dev;
    r->context = kind;
    r->u.memory.address = addr;
    r->u.memory.bytes = bytes;
    if (is_free)
        r->flags |= DT_REC_FREE;
    return r;
}

/* torch's [memory] instants: totals per device in time order (whatever the
   store order), a free without a size freeing what its address was
   allocated with, host memory as torch's CPU (type 0, device -1). */
void test_export_memory_instants(void)
{
    dt_session *s = new_session();
    memory_op(s, T0 + 3000, 0, 0x2000, 0, 1, DT_MEM_DEVICE);       /* frees the 4096 below */
    memory_op(s, T0 + 1000, 0, 0x1000, 1000, 0, DT_MEM_DEVICE);
    memory_op(s, T0 + 2000, 0, 0x2000, 4096, 0, DT_MEM_DEVICE);
    memory_op(s, T0 + 1500, 1, 0x9000, 512, 0, DT_MEM_DEVICE);     /* another device: its own total */
    memory_op(s, T0 + 4000, 0, 0x7000, 256, 0, DT_MEM_PINNED);
    memory_op(s, T0 + 5000, 0, 0x8000, 0, 1, DT_MEM_DEVICE);       /* allocated before the trace */
    trace t;
    export_and_parse(s, "memory.json", &t);
    CHECK_EQ(count_text(&t, "\"name\":\"[memory]\""), 6);
    static const char *const expected[] = {
        "\"args\":{\"Total Allocated\":1000,\"Bytes\":1000,\"Device Id\":0,\"Device Type\":20,\"Addr\":4096,",
        "\"args\":{\"Total Allocated\":5096,\"Bytes\":4096,\"Device Id\":0,\"Device Type\":20,\"Addr\":8192,",
        "\"args\":{\"Total Allocated\":1000,\"Bytes\":-4096,\"Device Id\":0,\"Device Type\":20,\"Addr\":8192,",
        "\"args\":{\"Total Allocated\":1000,\"Bytes\":0,\"Device Id\":0,\"Device Type\":20,\"Addr\":32768,",
        "\"args\":{\"Total Allocated\":512,\"Bytes\":512,\"Device Id\":1,\"Device Type\":20,\"Addr\":36864,",
        /* host memory: the kind of memory follows its address */
        ("\"args\":{\"Total Allocated\":256,\"Bytes\":256,\"Device Id\":-1,\"Device Type\":0,\"Addr\":28672,"
         "\"memory kind\":\"Pinned\""),
    };
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        CHECK(count_text(&t, expected[i]) == 1, "%s", expected[i]);
    char *l = event_line(&t, "\"Bytes\":1000,", 0);
    REQUIRE(l != NULL);
    CHECK(strstr(l, "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",") == l, "%s", l);
    free(l);
    CHECK_EQ(count_text(&t, "\"memory\": 6"), 1); /* devtrace.counts */
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_occupancy(void)
{
    dt_session *s = new_session();
    dt_device_props *d = &s->devices[0];
    d->valid = 1;
    d->id = 0;
    snprintf(d->name, sizeof d->name, "Emulated \"GPU\"");
    d->num_sms = 4;
    d->warp_size = 32;
    d->max_threads_per_sm = 2048;
    d->max_threads_per_block = 1024;
    d->max_blocks_per_sm = 32;
    d->regs_per_sm = 65536;
    d->regs_per_block = 65536;
    d->shared_mem_per_sm = 100 * 1024;
    /* grid 4x2x1 = 8 blocks of 128 threads on 4 SMs: 2 blocks, 8 warps per SM;
       2 * 128 / 2048 = 12.5% -> 13 (rounded) */
    kernel(s, "k_dev0", T0 + 10, T0 + 20, 0, 1, 0);
    kernel(s, "k_dev1", T0 + 10, T0 + 20, 1, 1, 0);
    trace t;
    export_and_parse(s, "occ.json", &t);
    char *l = event_line(&t, "\"name\":\"k_dev0\"", 0);
    REQUIRE(strstr(l, "\"registers per thread\":32,\"shared memory\":1024,\"blocks per SM\":2,"
                              "\"warps per SM\":8,\"est. achieved occupancy %\":13,"
                              "\"grid\":[4,2,1],\"block\":[128,1,1]}}") != NULL);
    REQUIRE(strstr(l, "\"queued\":0,\"device\":0,\"context\":1,\"stream\":1,\"correlation\":0,") != NULL);
    free(l);
    l = event_line(&t, "\"name\":\"k_dev1\"", 0);
    REQUIRE(strstr(l, "occupancy") == NULL);
    REQUIRE(strstr(l, "per SM") == NULL);
    free(l);
    yajl_val props = get(t.root, "deviceProperties");
    REQUIRE_EQ(props->u.array.len, 1);
    REQUIRE_STR(get_str(props->u.array.values[0], "name"), "Emulated \"GPU\"");
    REQUIRE_EQ(get_int(props->u.array.values[0], "numSms"), 4);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_gpu_annotations(void)
{
    dt_session *s = new_session();
    uint64_t outer = DT_RANGE_ID_BASE + 1, inner = DT_RANGE_ID_BASE + 2, other = DT_RANGE_ID_BASE + 3;
    /* ranges are stored when they end, after the work inside them */
    external(kernel(s, "k1", T0 + 1000, T0 + 1100, 0, 7, 0), inner);
    external(kernel(s, "k2", T0 + 1200, T0 + 1300, 0, 7, 0), outer);
    external(kernel(s, "k3", T0 + 1500, T0 + 1600, 0, 8, 0), inner);
    external(kernel(s, "k4", T0 + 1250, T0 + 1700, 0, 7, 0), other);  /* overlaps outer's span */
    range(s, "inner", T0 + 10, T0 + 20, 5, inner, 1, outer);
    range(s, "outer", T0 + 5, T0 + 30, 5, outer, 0, 0);
    range(s, "other", T0 + 40, T0 + 50, 5, other, 0, 0);
    trace t;
    export_and_parse(s, "annot.json", &t);
    yajl_val ev[4];
    REQUIRE_EQ(find_events(&t, "gpu_user_annotation", "inner", ev, 4), 2);
    REQUIRE_EQ(find_events(&t, "gpu_user_annotation", "outer", ev, 4), 2);
    for (int k = 0; k < 2; k++) {
        long long tid = get_int(ev[k], "tid");
        REQUIRE(tid == 2000007 || tid == 2000008);
        REQUIRE_EQ(get_int(get(ev[k], "args"), "External id"), (long long)outer);
        if (tid == 2000007) {
            REQUIRE_EQ(get_ns(ev[k], "ts"), 2000);   /* k1 start .. k2 end */
            REQUIRE_EQ(get_ns(ev[k], "dur"), 300);
        } else {
            REQUIRE_EQ(get_ns(ev[k], "ts"), 2500);
            REQUIRE_EQ(get_ns(ev[k], "dur"), 100);
        }
    }
    /* a sibling whose span partially overlaps moves to an overflow annotation row */
    REQUIRE_EQ(find_events(&t, "gpu_user_annotation", "other", ev, 4), 1);
    REQUIRE_EQ(get_int(ev[0], "tid"), 4000007);
    REQUIRE(strstr(t.text, "\"name\":\"stream 7 annotations\"") != NULL);
    REQUIRE(strstr(t.text, "\"name\":\"stream 7 annotations (overlap 1)\"") != NULL);
    /* the host range carries its id and its parent */
    REQUIRE_EQ(find_events(&t, "user_annotation", "inner", ev, 4), 1);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "External id"), (long long)inner);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "parent"), (long long)outer);
    REQUIRE_EQ(find_events(&t, "user_annotation", "outer", ev, 4), 1);
    REQUIRE(get(get(ev[0], "args"), "parent") == NULL);
    free_trace(&t);
    dt_session_destroy(s);
}

static const dt_backend fake_cuda = {
    .name = "fakecuda", .vendor = "NVIDIA (fake)", .api_category = "cuda",
};

void test_export_metadata_and_categories(void)
{
    dt_session *s = new_session();
    s->backend = &fake_cuda;
    s->pid = 1; /* as in a container, and also a device id below */
    snprintf(s->notes[0].key, sizeof s->notes[0].key, "cbid names");
    snprintf(s->notes[0].text, sizeof s->notes[0].text, "generic names for 3 callbacks");
    s->note_count = 1;
    api(s, "cudaLaunchKernel", T0 + 10, T0 + 20, 1, 5);
    dt_rec *d = api(s, "cuLaunchKernel", T0 + 12, T0 + 18, 1, 0);
    d->kind = DT_EVENT_DRIVER;
    kernel(s, "k", T0 + 30, T0 + 40, 1, 7, 5);
    kernel(s, "k", T0 + 30, T0 + 40, 3, 7, 0);
    dt_rec *sy = push(s, DT_EVENT_SYNC, T0 + 50, T0 + 60);
    sy->device = 1;
    sy->lane = 7;
    sy->name = dt__intern_str(&s->names, "cudaStreamSynchronize");
    trace t;
    export_and_parse(s, "meta.json", &t);
    yajl_val ev[4];
    REQUIRE_EQ(find_events(&t, "cuda_runtime", "cudaLaunchKernel", ev, 4), 1);
    long long host = get_int(ev[0], "pid");
    REQUIRE_EQ(host, 1 + 4194304);
    REQUIRE_EQ(find_events(&t, "cuda_driver", "cuLaunchKernel", ev, 4), 1);
    REQUIRE_EQ(find_events(&t, "cuda_sync", "cudaStreamSynchronize", ev, 4), 1);
    REQUIRE(strstr(t.text, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":3,\"tid\":0,"
                                   "\"ts\":1.000,\"args\":{\"labels\":\"GPU 3\"}}") != NULL);
    REQUIRE(strstr(t.text, "\"name\":\"process_sort_index\",\"pid\":1,\"tid\":0,"
                                   "\"ts\":1.000,\"args\":{\"sort_index\":5000001}}") != NULL);
    REQUIRE(strstr(t.text, "\"args\":{\"name\":\"stream 7\"}") != NULL);
    REQUIRE(strstr(t.text, "\"args\":{\"name\":\"thread 1\"}") != NULL);
    yajl_val dev = get(t.root, "devtrace");
    REQUIRE_STR(get_str(dev, "backend"), "fakecuda");
    REQUIRE_STR(get_str(dev, "vendor"), "NVIDIA (fake)");
    REQUIRE_STR(get_str(get(dev, "notes"), "cbid names"), "generic names for 3 callbacks");
    REQUIRE(get_str(get(dev, "notes"), "hostPid") != NULL);
    const char *id[] = {"clock", "identity", NULL};
    REQUIRE(YAJL_IS_TRUE(yajl_tree_get(dev, id, yajl_t_any)));
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_empty_session(void)
{
    dt_session *s = new_session();
    trace t;
    export_and_parse(s, "empty.json", &t);
    yajl_val ev[2];
    REQUIRE_EQ(find_events(&t, "Trace", "devtrace capture", ev, 2), 1);
    REQUIRE_EQ(get_int(ev[0], "pid"), 4242);
    REQUIRE_EQ(get_int(ev[0], "tid"), 0);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_host_tid_zero_named_once(void)
{
    /* a backend that cannot tell threads apart reports tid 0, the capture row */
    dt_session *s = new_session();
    api(s, "cudaLaunchKernel", T0 + 10, T0 + 20, 0, 0);
    trace t;
    export_and_parse(s, "tid0.json", &t);
    REQUIRE_EQ(count_text(&t, "\"name\":\"thread_name\",\"pid\":4242,\"tid\":0,"), 1);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_recorded_session(void)
{
    /* the whole pipeline with the null backend: ranges recorded, stopped, written */
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    uint64_t outer, inner;
    REQUIRE_EQ(dt_range_push("outer \"step\"", &outer), DT_OK);
    REQUIRE_EQ(dt_range_push("inner", &inner), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_range_pop(), DT_OK);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    char path[512];
    path_in_dir(path, sizeof path, "recorded.json.gz");
    REQUIRE_EQ(dt_session_write(s, path, DT_FORMAT_JSON_GZ), DT_OK);
    size_t len;
    char *text = read_gzip(path, &len);
    trace t;
    parse_trace(&t, text, len);
    check_invariants(&t);
    yajl_val ev[2];
    REQUIRE_EQ(find_events(&t, "user_annotation", "outer \"step\"", ev, 2), 1);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "External id"), (long long)outer);
    REQUIRE_EQ(find_events(&t, "user_annotation", "inner", ev, 2), 1);
    REQUIRE_EQ(get_int(get(ev[0], "args"), "parent"), (long long)outer);
    REQUIRE_STR(get_str(get(t.root, "devtrace"), "backend"), "null");
    /* written by the traced process itself: host threads carry their names */
    char tname[64];
    snprintf(tname, sizeof tname, "\"thread %u (test_export)\"", dt__thread_id());
    REQUIRE(strstr(t.text, tname) != NULL);
    free_trace(&t);
    dt_session_destroy(s);
}

void test_export_maps_vendor_clock_records(void)
{
    /* a record still on the vendor clock is mapped through the clock fit */
    dt_session *s = new_session();
    s->clock.identity = 0;
    dt_clock_sample cs = {1000, T0 + 5000, 10};
    REQUIRE_EQ(dt__clock_add(&s->clock, cs), 0);
    dt_rec *r = kernel(s, "k_vendor", 2000, 2500, 0, 1, 0);
    r->flags &= (uint8_t)~DT_REC_REALTIME;
    trace t;
    export_and_parse(s, "vendor.json", &t);
    char *l = event_line(&t, "\"name\":\"k_vendor\"", 0);
    REQUIRE(l != NULL);
    REQUIRE(strstr(l, "\"ts\":7.000,\"dur\":0.500,") != NULL);
    free(l);
    free_trace(&t);
    dt_session_destroy(s);
}

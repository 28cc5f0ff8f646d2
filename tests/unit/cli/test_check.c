/* `devtrace check`: the good trace passes; each bad trace fails on exactly
   the invariant it breaks; corrupt input fails on invariant 1. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_capture.h"
#include "base/demangle.h"
#include "cli/commands.h"

static int run_check(capture *c, int argc, const char **argv)
{
    return cap_run(c, dt__check_main, argc, argv);
}

static int check_data(capture *c, const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", DT_SOURCE_DIR, rel);
    const char *argv[] = {"check", path};
    return run_check(c, 2, argv);
}

static int check_text(capture *c, const char *json, size_t len)
{
    cap_open(c);
    dt_rd_source *src = dt__rd_open_memory(json, len);
    REQUIRE((src) != NULL);
    int rc = dt__check_source(src, "memory", c->out, c->err);
    dt__rd_close(src);
    cap_close(c);
    return rc;
}

/* Number of lines of out starting with "invariant <inv>:". */
static int lines_for(const char *out, int inv)
{
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "invariant %d:", inv), count = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, (size_t)n) == 0)
            count++;
    return count;
}

static void good_trace_passes(void)
{
    capture c;
    REQUIRE_EQ(check_data(&c, "good.json"), 0);
    REQUIRE_STR(c.out_text, "check: OK (39 events, 6 flows)\n");
    REQUIRE_STR(c.err_text, "");
    cap_free(&c);
    REQUIRE_EQ(check_data(&c, "good.json.gz"), 0);
    REQUIRE_STR(c.out_text, "check: OK (39 events, 6 flows)\n");
    cap_free(&c);
}

static void each_bad_trace_fails_its_invariant(void)
{
    static const struct {
        const char *file;
        int invariant;
        const char *says;
    } cases[] = {
        {"bad1_no_schema_version.json", 1, "schemaVersion"},
        {"bad2_flow_unpaired.json", 2, "flow id 13 has 1 start(s) and 0 finish(es)"},
        {"bad2_flow_no_bp.json", 2, "flow finish id 12"},
        {"bad3_attribution.json", 3, "devtrace.attribution[\"1\"] = 44999 ns but its device events sum to 45000 ns"},
        {"bad4_mangled.json", 4, "kernel name is mangled: event #15 \"_Z4gemmIfEvPfi\" (pid 0, tid 7, ts 1170.000 us)"},
        {"bad4_generic_names.json", 4, "1 of 6 runtime/driver events"},
        {"bad5_outside_window.json", 5, "outside the capture window [1000.000, 2000.000] us"},
        {"bad9_overlap.json", 9, "\"Memset (Device)\" (pid 0, tid 7, ts 1455.000 us, end 1465.000 us) partially "
                                 "overlaps event #27 \"relu_kernel\""},
        {"bad6_unnamed_tid.json", 6, "row pid 0, tid 7 is not named"},
        {"bad6_sort_index.json", 6, "device pid 0 (sort index 100) does not sort after host pid 4242"},
        {"bad7_loss_missing_key.json", 7, "devtrace.loss has no \"no_buffer\" count"},
        {"bad7_loss_total.json", 7, "devtrace.loss.total is 4 but the reasons sum to 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        capture c;
        int rc = check_data(&c, cases[i].file);
        if (rc != 1)
            FAIL("%s: exit status %d", cases[i].file, rc);
        for (int inv = 1; inv <= 9; inv++) {
            int n = lines_for(c.out_text, inv);
            if (inv == cases[i].invariant ? n != 1 : n != 0)
                FAIL("%s: %d line(s) for invariant %d:\n%s", cases[i].file, n, inv, c.out_text);
        }
        if (!strstr(c.out_text, cases[i].says))
            FAIL("%s: output does not say \"%s\":\n%s", cases[i].file, cases[i].says, c.out_text);
        if (!strstr(c.out_text, "check: FAILED: 1 violation\n"))
            FAIL("%s: summary line missing:\n%s", cases[i].file, c.out_text);
        cap_free(&c);
    }
}

static void corrupt_input_fails_invariant_1(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/good.json", DT_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    REQUIRE((f) != NULL);
    char buf[8192];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    REQUIRE(len > 1000 && len < sizeof buf);
    for (size_t n = 0; n < len - 2; n += 97) {
        capture c;
        REQUIRE_EQ(check_text(&c, buf, n), 1);
        REQUIRE_EQ(lines_for(c.out_text, 1), 1);
        REQUIRE((strstr(c.out_text, "memory: byte ")) != NULL);
        REQUIRE((strstr(c.out_text, "check: FAILED: 1 violation\n")) != NULL);
        cap_free(&c);
    }
    capture c;
    /* what was read before the damage is still checked */
    static const char partial[] =
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"_Z1kv\",\"pid\":0,\"tid\":1,\"ts\":1,"
        "\"dur\":1},{\"ph\":";
    REQUIRE_EQ(check_text(&c, partial, sizeof partial - 1), 1);
    REQUIRE_EQ(lines_for(c.out_text, 4), 1);
    REQUIRE_EQ(lines_for(c.out_text, 1), 1);
    REQUIRE((strstr(c.out_text, "check: FAILED: 2 violations\n")) != NULL);
    cap_free(&c);
    static const char utf8[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"k\xe2\x82\"}]}";
    REQUIRE_EQ(check_text(&c, utf8, sizeof utf8 - 1), 1);
    REQUIRE((strstr(c.out_text, "invariant 1: memory: byte ")) != NULL);
    REQUIRE((strstr(c.out_text, "UTF-8")) != NULL);
    cap_free(&c);
}

/* A minimal valid trace with n kernels, kernel i named by name(i). */
static char *make_trace_named(int n, const char *(*name)(int, void *), void *arg, size_t *len)
{
    size_t cap = 4096;
    for (int i = 0; i < n; i++)
        cap += 256 + strlen(name(i, arg));
    char *b = malloc(cap);
    REQUIRE((b) != NULL);
    size_t o = 0;
    o += (size_t)snprintf(b + o, cap - o,
                          "{\"schemaVersion\":1,\"deviceProperties\":[],\"displayTimeUnit\":\"ms\","
                          "\"baseTimeNanoseconds\":1000000000,\"traceEvents\":["
                          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}},"
                          "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"t\"}}");
    for (int i = 0; i < n; i++) {
        o += (size_t)snprintf(b + o, cap - o,
                              ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":1,\"tid\":1,\"ts\":%d.000,"
                              "\"dur\":1.000}",
                              name(i, arg), 10 + 2 * i);
    }
    o += (size_t)snprintf(b + o, cap - o,
                          "],\"devtrace\":{\"captureWindow\":{\"startNs\":1000000000,\"endNs\":1001000000},"
                          "\"loss\":{\"timestamp_zero\":0,\"timestamp_reversed\":0,\"timestamp_too_long\":0,"
                          "\"malformed\":0,\"unknown_kind\":0,\"no_buffer\":0,\"vendor_dropped\":0,"
                          "\"outside_window\":0,\"store_full\":0,\"unfinished\":0,\"forked_child\":0,\"ring_evicted\":0,\"total\":0},\"attribution\":{}}}");
    *len = o;
    return b;
}

static const char *name_from_affixes(int i, void *affixes)
{
    static char name[64];
    const char *const *a = affixes;
    snprintf(name, sizeof name, "%s%d%s", a[0], i, a[1]);
    return name;
}

/* A minimal valid trace with n kernels named <prefix><i><suffix>. */
static char *make_trace(int n, const char *prefix, const char *suffix, size_t *len)
{
    const char *affixes[] = {prefix, suffix};
    return make_trace_named(n, name_from_affixes, (void *)affixes, len);
}

static int check_text_flags(capture *c, const char *json, size_t len, unsigned flags)
{
    cap_open(c);
    dt_rd_source *src = dt__rd_open_memory(json, len);
    REQUIRE((src) != NULL);
    int rc = dt__check_source_ex(src, "memory", flags, c->out, c->err);
    dt__rd_close(src);
    cap_close(c);
    return rc;
}

/* Findings of one kind: a header with their count, the first five, and how
   many more --verbose would show; with it, every one. */
static void findings_are_grouped_by_kind_with_a_count(void)
{
    size_t len;
    char *t = make_trace(30, "_Z4kernILi", "EEvv", &len);
    capture c;
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE(strncmp(c.out_text, "invariant 4, mangled kernel names: 30\n", 38) == 0);
    REQUIRE_EQ(lines_for(c.out_text, 4), 6);
    REQUIRE((strstr(c.out_text, "invariant 4: kernel name is mangled: event #6 \"_Z4kernILi4EEvv\"")) != NULL);
    REQUIRE((strstr(c.out_text, "_Z4kernILi5EEvv")) == NULL);
    REQUIRE((strstr(c.out_text, "invariant 4: ... 25 more of these not shown (--verbose shows every one)\n")) != NULL);
    REQUIRE((strstr(c.out_text, "check: FAILED: 30 violations\n")) != NULL);
    cap_free(&c);
    REQUIRE_EQ(check_text_flags(&c, t, len, DT_CHECK_VERBOSE), 1);
    REQUIRE_EQ(lines_for(c.out_text, 4), 30);
    REQUIRE((strstr(c.out_text, "\"_Z4kernILi29EEvv\"")) != NULL);
    REQUIRE((strstr(c.out_text, "more of these")) == NULL);
    cap_free(&c);
    free(t);

    t = make_trace(30, "kernel_", "", &len);
    REQUIRE_EQ(check_text(&c, t, len), 0);
    REQUIRE_STR(c.out_text, "check: OK (32 events, 0 flows)\n");
    cap_free(&c);
    free(t);
}

/* torch.profiler's trace: rows "Spans"/"Traces" unnamed as torch writes
   them, one flow cut on each side, then a tail (devtrace key or none). */
static char *torch_trace(const char *extra_flow, const char *tail, size_t *len)
{
    static const char head[] =
        "{\"schemaVersion\":1,\"deviceProperties\":[],\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"python\"}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":5},"
        "{\"ph\":\"s\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":20,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaEventRecord\",\"pid\":1,\"tid\":1,\"ts\":30,\"dur\":5},"
        "{\"ph\":\"f\",\"id\":8,\"pid\":1,\"tid\":1,\"ts\":30,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":40,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"PyTorch Profiler (0)\",\"pid\":\"Spans\",\"tid\":\"PyTorch "
        "Profiler\",\"ts\":5,\"dur\":100},"
        "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"Record Window End\",\"pid\":\"\",\"tid\":\"\",\"ts\":110}";
    size_t cap = sizeof head + strlen(extra_flow) + strlen(tail) + 8;
    char *b = malloc(cap);
    REQUIRE((b) != NULL);
    *len = (size_t)snprintf(b, cap, "%s%s]%s}", head, extra_flow, tail);
    return b;
}

#define LOSS_OK "\"loss\":{\"timestamp_zero\":0,\"timestamp_reversed\":0,\"timestamp_too_long\":0,\"malformed\":0," \
                "\"unknown_kind\":0,\"no_buffer\":0,\"vendor_dropped\":0,\"outside_window\":0,\"store_full\":0," \
                "\"unfinished\":0,\"forked_child\":0,\"ring_evicted\":0,\"total\":0}"

/* A flow cut on one side is a known property of torch.profiler's traces:
   reported, not failed; a flow finished twice is malformed and fails. */
static void cut_flows_of_torch_traces_are_known_malformed_ones_fail(void)
{
    size_t len;
    capture c;
    char *t = torch_trace("", "", &len);
    REQUIRE_EQ(check_text(&c, t, len), 0);
    REQUIRE((strstr(c.out_text, "invariant 2, flows with a finish and no start: 1, a known property of "
                                "torch.profiler's traces, not a defect: ")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 8 has 0 start(s) and 1 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2, flows with a start and no finish: 1, a known property")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 7 has 1 start(s) and 0 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "check: OK (9 events, 2 flows); 2 findings that are known properties of "
                                "torch.profiler's traces, not defects\n")) != NULL);
    cap_free(&c);
    free(t);

    /* a flow finished twice on one event is malformed (Kineto's several
       finishes land on several events) */
    t = torch_trace(",{\"ph\":\"f\",\"id\":8,\"pid\":1,\"tid\":1,\"ts\":30,\"cat\":\"ac2g\",\"name\":\"ac2g\","
                    "\"bp\":\"e\"}", "", &len);
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 8 has 0 start(s) and 2 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "known property")) != NULL); /* flow 7's cut finish */
    REQUIRE((strstr(c.out_text, "several finishes")) == NULL);
    cap_free(&c);
    free(t);

    /* a launch started twice is malformed */
    t = torch_trace(",{\"ph\":\"s\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":30,\"cat\":\"ac2g\",\"name\":\"ac2g\"}",
                    "", &len);
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 7 has 2 start(s) and 0 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "check: FAILED: 1 violation; 1 finding that is one of the known properties of "
                                "torch.profiler's traces, not defects\n")) != NULL);
    cap_free(&c);
    free(t);

    /* devtrace's own trace keeps its strict rules: a cut flow is a violation */
    t = torch_trace("", ",\"devtrace\":{\"captureWindow\":{\"startNs\":0,\"endNs\":200000}," LOSS_OK
                    ",\"attribution\":{}}", &len);
    REQUIRE_EQ(check_text_flags(&c, t, len, DT_CHECK_VERBOSE), 1);
    REQUIRE((strstr(c.out_text, "known property")) == NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 8 has 0 start(s) and 1 finish(es)")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 6: pid \"Spans\" is not named by process_name metadata\n")) != NULL);
    cap_free(&c);
    free(t);
}

/* What Kineto writes and devtrace does not, each as HTA's real traces hold
   it: one launch finishing several flows (its start kept or cut), a Stream
   Sync over the copy on its stream's row, two kernels overlapping on their
   stream, asynchronous host ranges on one thread. In torch.profiler's
   trace each is reported as a known property and passes; in devtrace's own
   trace each is a violation; an overlap of a kernel with a host range on
   one row is a violation in both. */
static void kineto_rows_and_fanned_out_flows_are_known_properties(void)
{
    static const char kineto[] =
        /* flow 7: one start, three finishes (a kernel, two memsets) */
        ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k2\",\"pid\":0,\"tid\":8,\"ts\":60,\"dur\":4}"
        ",{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":8,\"ts\":60,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
        ",{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":8,\"ts\":64,\"dur\":1}"
        ",{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":8,\"ts\":64,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
        ",{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":8,\"ts\":66,\"dur\":1}"
        ",{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":8,\"ts\":66,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
        /* flow 9: its start cut, two finishes */
        ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k3\",\"pid\":0,\"tid\":8,\"ts\":70,\"dur\":2}"
        ",{\"ph\":\"f\",\"id\":9,\"pid\":0,\"tid\":8,\"ts\":70,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
        ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k4\",\"pid\":0,\"tid\":8,\"ts\":72,\"dur\":2}"
        ",{\"ph\":\"f\",\"id\":9,\"pid\":0,\"tid\":8,\"ts\":72,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}"
        /* a copy, and the Stream Sync over its end */
        ",{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoH\",\"pid\":0,\"tid\":9,\"ts\":40,\"dur\":20}"
        ",{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Sync\",\"pid\":0,\"tid\":9,\"ts\":50,\"dur\":30}"
        /* kernels overlapping by 2 us on stream 10 */
        ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a\",\"pid\":0,\"tid\":10,\"ts\":40,\"dur\":10}"
        ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"pid\":0,\"tid\":10,\"ts\":48,\"dur\":10}"
        /* an annotation that outlives its operator on thread 2 */
        ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c10d::allreduce_\",\"pid\":1,\"tid\":2,\"ts\":20,\"dur\":30}"
        ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"nccl:all_reduce\",\"pid\":1,\"tid\":2,\"ts\":40,"
        "\"dur\":25}";
    size_t len;
    capture c;
    char *t = torch_trace(kineto, "", &len);
    REQUIRE_EQ(check_text_flags(&c, t, len, DT_CHECK_VERBOSE), 0);
    REQUIRE((strstr(c.out_text, "invariant 2, flows with several finishes (and one start or none): 2, a known "
                                "property of torch.profiler's traces, not a defect: Kineto links one launch")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 7 has 1 start(s) and 3 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 9 has 0 start(s) and 2 finish(es), not one each\n")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 9, synchronisation records that partially overlap work on their row: 1, "
                                "a known property")) != NULL);
    REQUIRE(strstr(c.out_text, "\"Stream Sync\" (pid 0, tid 9, ts 50.000 us, end 80.000 us) partially overlaps") !=
            NULL);
    REQUIRE((strstr(c.out_text, "invariant 9, device work that partially overlaps work on its stream: 1, a known "
                                "property")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 9, host ranges that partially overlap on their thread: 1, a known "
                                "property")) != NULL);
    REQUIRE_EQ(lines_for(c.out_text, 9), 3);
    REQUIRE((strstr(c.out_text, "check: OK (25 events, 3 flows); 6 findings that are known properties of "
                                "torch.profiler's traces, not defects\n")) != NULL);
    cap_free(&c);
    free(t);

    /* a kernel over a host range on one row: not a way Kineto writes */
    char mixed[sizeof kineto + 256];
    snprintf(mixed, sizeof mixed, "%s,{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"odd\",\"pid\":1,\"tid\":2,"
             "\"ts\":45,\"dur\":30}", kineto);
    t = torch_trace(mixed, "", &len);
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE(strstr(c.out_text, "\"odd\" (pid 1, tid 2, ts 45.000 us, end 75.000 us) partially overlaps") != NULL);
    REQUIRE((strstr(c.out_text, "check: FAILED: 1 violation; 6 findings")) != NULL);
    cap_free(&c);
    free(t);

    /* devtrace's own trace: every one of them is a violation */
    t = torch_trace(kineto, ",\"devtrace\":{\"captureWindow\":{\"startNs\":0,\"endNs\":200000}," LOSS_OK
                    ",\"attribution\":{}}", &len);
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE((strstr(c.out_text, "known property")) == NULL);
    REQUIRE((strstr(c.out_text, "invariant 9, synchronisation records that partially overlap work on their row")) ==
            NULL);
    REQUIRE((strstr(c.out_text, "\"Stream Sync\" (pid 0, tid 9, ts 50.000 us, end 80.000 us) partially overlaps")) !=
            NULL);
    REQUIRE((strstr(c.out_text, "invariant 2, flows with several finishes (and one start or none): 2\n")) != NULL);
    cap_free(&c);
    free(t);
}

/* The plugin's key says who wrote it: torch.profiler's rules apply, and the
   plugin's loss counts are checked. */
static void plugin_traces_get_torch_rules_and_their_loss_checked(void)
{
    size_t len;
    capture c;
    char *t = torch_trace("", ",\"devtrace\":{\"writer\":\"devtrace.torch\",\"version\":\"0.1.0\",\"backend\":"
                          "\"topspti\"," LOSS_OK "}", &len);
    REQUIRE_EQ(check_text(&c, t, len), 0);
    REQUIRE((strstr(c.out_text, "check: a torch.profiler trace with devtrace.torch's device activity "
                                "(devtrace.writer \"devtrace.torch\"): checked 1 (JSON), 2 (flows), 4 (names), "
                                "7 (loss counts), 8 (memory), 9 (rows nest)")) != NULL);
    REQUIRE((strstr(c.out_text, "check: OK (9 events, 2 flows); 2 findings")) != NULL);
    REQUIRE((strstr(c.out_text, "attribution")) == NULL || strstr(c.out_text, "not applicable: 3 (attribution)"));
    REQUIRE(lines_for(c.out_text, 3) + lines_for(c.out_text, 5) + lines_for(c.out_text, 6) + lines_for(c.out_text, 9) == 0);
    cap_free(&c);
    free(t);

    t = torch_trace("", ",\"devtrace\":{\"writer\":\"devtrace.torch\",\"loss\":{\"total\":3}}", &len);
    REQUIRE_EQ(check_text_flags(&c, t, len, DT_CHECK_VERBOSE), 1);
    REQUIRE((strstr(c.out_text, "invariant 7: devtrace.loss has no \"timestamp_zero\" count\n")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 7: devtrace.loss.total is 3 but the reasons sum to 0\n")) != NULL);
    cap_free(&c);
    free(t);
}

static const char *name_from_list(int i, void *list)
{
    return ((const char *const *)list)[i];
}

/* Invariant 4 is about names that demangle: one that only starts with _Z
   is kept as the vendor gave it, and is no violation. */
static void only_names_that_demangle_count_as_mangled(void)
{
    static const char *const kept[] = {"_Z", "_Zfoo", "_ZN5torch", "_ZZ", "_Z!!broken"};
    size_t len;
    char *t = make_trace_named(5, name_from_list, (void *)kept, &len);
    capture c;
    REQUIRE_EQ(check_text(&c, t, len), 0);
    REQUIRE_STR(c.out_text, "check: OK (7 events, 0 flows)\n");
    cap_free(&c);
    free(t);

    /* a valid mangled name far longer than 8 KiB is asked whole: it is a
       violation exactly when the demangler takes names that long (libstdc++
       takes 1024 bytes at most, and the writer keeps longer ones as given) */
    size_t k = 20000;
    char *longname = malloc(k + 16);
    REQUIRE((longname) != NULL);
    int o = sprintf(longname, "_Z%zu", k);
    memset(longname + o, 'a', k);
    strcpy(longname + o + k, "v");
    const char *mangled[] = {"_Z", longname, "_Z4kernILi3EEvv"};
    int expected = dt__demangle_length_limit() >= strlen(longname) ? 2 : 1;
    t = make_trace_named(3, name_from_list, (void *)mangled, &len);
    REQUIRE_EQ(check_text(&c, t, len), 1);
    REQUIRE_EQ(lines_for(c.out_text, 4), expected);
    REQUIRE((strstr(c.out_text, expected == 2 ? "check: FAILED: 2 violations\n" : "check: FAILED: 1 violation\n")) != NULL);
    cap_free(&c);
    free(t);
    free(longname);
}

/* A violation is one line, whatever bytes the names it quotes hold. */
static void violations_escape_control_bytes(void)
{
    static const char json[] =
        "{\"schemaVersion\":1,\"deviceProperties\":[],\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":0,"
        "\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"t\"}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\\ninvariant 1: forged\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":10},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\\u0001\\u001b[2J\\r\\u009b\",\"pid\":1,\"tid\":1,\"ts\":15,"
        "\"dur\":10}],"
        "\"devtrace\":{\"captureWindow\":{\"startNs\":0,\"endNs\":100000},"
        "\"loss\":{\"timestamp_zero\":0,\"timestamp_reversed\":0,\"timestamp_too_long\":0,"
        "\"malformed\":0,\"unknown_kind\":0,\"no_buffer\":0,\"vendor_dropped\":0,"
        "\"outside_window\":0,\"store_full\":0,\"unfinished\":0,\"forked_child\":0,\"ring_evicted\":0,\"total\":0},\"attribution\":{}}}";
    capture c;
    REQUIRE_EQ(check_text(&c, json, sizeof json - 1), 1);
    REQUIRE_EQ(lines_for(c.out_text, 9), 1);
    REQUIRE_EQ(lines_for(c.out_text, 1), 0);
    REQUIRE((strstr(c.out_text, "\"b\\x01\\x1b[2J\\x0d\\xc2\\x9b\"")) != NULL);
    REQUIRE((strstr(c.out_text, "\"a\\x0ainvariant 1: forged\"")) != NULL);
    for (const char *p = c.out_text; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\n')
            FAIL("control byte 0x%02x in the output", (unsigned char)*p);
    REQUIRE_STR(strchr(c.out_text, '\n') + 1, "check: FAILED: 1 violation\n");
    cap_free(&c);
}

static void nesting_is_checked_whatever_the_order(void)
{
    /* outer [10,20], inner [12,15] written before it, sibling [15,20]; then
       a partial overlap [19,21] with outer. */
    static const char head[] =
        "{\"schemaVersion\":1,\"deviceProperties\":[],\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":0,"
        "\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"t\"}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"inner\",\"pid\":1,\"tid\":1,\"ts\":12,\"dur\":3},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"sibling\",\"pid\":1,\"tid\":1,\"ts\":15,\"dur\":5},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"outer\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":10},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"same\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":10},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"zero\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":0}";
    static const char tail[] =
        "],\"devtrace\":{\"captureWindow\":{\"startNs\":0,\"endNs\":100000},"
        "\"loss\":{\"timestamp_zero\":0,\"timestamp_reversed\":0,\"timestamp_too_long\":0,"
        "\"malformed\":0,\"unknown_kind\":0,\"no_buffer\":0,\"vendor_dropped\":0,"
        "\"outside_window\":0,\"store_full\":0,\"unfinished\":0,\"forked_child\":0,\"ring_evicted\":0,\"total\":0},\"attribution\":{}}}";
    static const char overlap[] = ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"late\",\"pid\":1,\"tid\":1,"
                                  "\"ts\":19,\"dur\":2}";
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%s%s", head, tail);
    capture c;
    REQUIRE_EQ(check_text(&c, buf, (size_t)n), 0);
    cap_free(&c);
    n = snprintf(buf, sizeof buf, "%s%s%s", head, overlap, tail);
    REQUIRE_EQ(check_text(&c, buf, (size_t)n), 1);
    REQUIRE_EQ(lines_for(c.out_text, 9), 1);
    /* sorted, "late" [19,21] sits inside "sibling" [15,20] and outlives it */
    REQUIRE((strstr(c.out_text, "event #7 \"late\" (pid 1, tid 1, ts 19.000 us, end 21.000 us) partially "
                                       "overlaps event #3 \"sibling\" (ts 15.000 us, end 20.000 us)")) != NULL);
    cap_free(&c);
}

/* good.json with one same-length substring replaced. */
static int check_patched(capture *c, const char *needle, const char *replacement)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/good.json", DT_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    REQUIRE((f) != NULL);
    static char buf[16384];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    char *at = strstr(buf, needle);
    REQUIRE((at) != NULL);
    REQUIRE_EQ(strlen(needle), strlen(replacement));
    memcpy(at, replacement, strlen(replacement));
    return check_text(c, buf, len);
}

static void flow_ends_sit_on_event_starts(void)
{
    capture c;
    REQUIRE_EQ(check_patched(&c, "{\"ph\":\"s\",\"id\":10,\"pid\":4242,\"tid\":4243,\"ts\":1160.000",
                                   "{\"ph\":\"s\",\"id\":10,\"pid\":4242,\"tid\":4243,\"ts\":1160.001"), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 10 start (event #14, pid 4242, tid 4243, ts 1160.001 "
                                       "us) is not at the start of an event on its row\n")) != NULL);
    REQUIRE_EQ(lines_for(c.out_text, 2), 1);
    cap_free(&c);
    /* a finish moved to another row */
    REQUIRE_EQ(check_patched(&c, "{\"ph\":\"f\",\"id\":11,\"pid\":0,\"tid\":7,",
                                   "{\"ph\":\"f\",\"id\":11,\"pid\":0,\"tid\":8,"), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 11 finish")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 6: row pid 0, tid 8 is not named")) != NULL);
    cap_free(&c);
    /* two starts for one id */
    REQUIRE_EQ(check_patched(&c, "{\"ph\":\"s\",\"id\":12,", "{\"ph\":\"s\",\"id\":11,"), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 11 has 2 start(s) and 1 finish(es)")) != NULL);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 12 has 0 start(s) and 1 finish(es)")) != NULL);
    cap_free(&c);
}

static void flow_ends_found_wherever_they_are_written(void)
{
    /* a flow start written before its event, a finish written long after
       its event (other events between), ids as strings and past 2^55:
       each end is still matched with the event that starts there */
    static const char head[] =
        "{\"schemaVersion\":1,\"deviceProperties\":[],\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":0,"
        "\"traceEvents\":["
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"t\"}},"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"d\"}},"
        "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"tid\":0,\"args\":{\"sort_index\":5000000}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":7,\"args\":{\"name\":\"s\"}},"
        "{\"ph\":\"s\",\"id\":\"a\",\"pid\":1,\"tid\":1,\"ts\":10,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"launch\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":1},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"launch\",\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":1},"
        "{\"ph\":\"s\",\"id\":36028797018963968,\"pid\":1,\"tid\":1,\"ts\":20,\"cat\":\"ac2g\",\"name\":\"ac2g\"},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":30,\"dur\":1},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":40,\"dur\":1},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":50,\"dur\":1},"
        "{\"ph\":\"f\",\"id\":\"a\",\"pid\":0,\"tid\":7,\"ts\":30,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},"
        "{\"ph\":\"f\",\"id\":36028797018963968,\"pid\":0,\"tid\":7,\"ts\":";
    static const char tail[] =
        "],\"devtrace\":{\"captureWindow\":{\"startNs\":0,\"endNs\":100000},"
        "\"loss\":{\"timestamp_zero\":0,\"timestamp_reversed\":0,\"timestamp_too_long\":0,"
        "\"malformed\":0,\"unknown_kind\":0,\"no_buffer\":0,\"vendor_dropped\":0,"
        "\"outside_window\":0,\"store_full\":0,\"unfinished\":0,\"forked_child\":0,\"ring_evicted\":0,\"total\":0},\"attribution\":{}}}";
    static const char finish_tail[] = ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}";
    char buf[4096];
    capture c;
    int n = snprintf(buf, sizeof buf, "%s%s%s%s", head, "40", finish_tail, tail);
    REQUIRE_EQ(check_text(&c, buf, (size_t)n), 0);
    REQUIRE_STR(c.out_text, "check: OK (14 events, 2 flows)\n");
    cap_free(&c);
    /* the finish between two kernels: at no event's start */
    n = snprintf(buf, sizeof buf, "%s%s%s%s", head, "45", finish_tail, tail);
    REQUIRE_EQ(check_text(&c, buf, (size_t)n), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 36028797018963968 finish (event #13, pid 0, tid 7, ts "
                                       "45.000 us) is not at the start of an event on its row\n")) != NULL);
    REQUIRE_EQ(lines_for(c.out_text, 2), 1);
    cap_free(&c);
}

static void crowded_flow_ids_stay_fast_and_exact(void)
{
    /* ids that all share their low 20 bits, as a hostile trace may write
       them: each id still has exactly its own start and finish */
    int n = 3000;
    size_t cap = 4096 + (size_t)n * 512;
    char *b = malloc(cap);
    REQUIRE((b) != NULL);
    size_t o = (size_t)snprintf(b, cap,
                                "{\"traceEvents\":["
                                "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}}");
    for (int i = 0; i < n; i++) {
        unsigned long long id = (unsigned long long)(i + 1) << 20;
        o += (size_t)snprintf(b + o, cap - o,
                              ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"l\",\"pid\":1,\"tid\":1,\"ts\":%d,"
                              "\"dur\":1},{\"ph\":\"s\",\"id\":%llu,\"pid\":1,\"tid\":1,\"ts\":%d,\"cat\":\"ac2g\","
                              "\"name\":\"ac2g\"}",
                              10 * i, id, 10 * i);
    }
    for (int i = 0; i < n; i++) {
        unsigned long long id = (unsigned long long)(i + 1) << 20;
        o += (size_t)snprintf(b + o, cap - o,
                              ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":%d,"
                              "\"dur\":1},{\"ph\":\"f\",\"id\":%llu,\"pid\":0,\"tid\":7,\"ts\":%d,\"cat\":\"ac2g\","
                              "\"name\":\"ac2g\",\"bp\":\"e\"}",
                              10 * i + 5, id, 10 * i + 5);
    }
    /* and one id started twice */
    o += (size_t)snprintf(b + o, cap - o,
                          ",{\"ph\":\"s\",\"id\":%llu,\"pid\":1,\"tid\":1,\"ts\":%d,\"cat\":\"ac2g\",\"name\":\"ac2g\"}]}",
                          5ULL << 20, 10 * 4);
    capture c;
    REQUIRE_EQ(check_text(&c, b, o), 1);
    REQUIRE_EQ(lines_for(c.out_text, 2), 1);
    REQUIRE((strstr(c.out_text, "invariant 2: flow id 5242880 has 2 start(s) and 1 finish(es)")) != NULL);
    cap_free(&c);
    free(b);
}

static void trace_event_is_the_window(void)
{
    capture c;
    REQUIRE_EQ(check_patched(&c, "\"ts\":1000.000,\"dur\":1000.000", "\"ts\":1000.000,\"dur\":999.999 "), 1);
    REQUIRE((strstr(c.out_text, "invariant 5: the \"Trace\" event #10 [1000.000, 1999.999] us is not the "
                                       "capture window [1000.000, 2000.000] us\n")) != NULL);
    REQUIRE((strstr(c.out_text, "check: FAILED: 1 violation\n")) != NULL);
    cap_free(&c);
}

static void unnamed_pid_and_unsorted_rows(void)
{
    capture c;
    /* the device's process_name renamed to something else */
    REQUIRE_EQ(check_patched(&c, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,",
                                   "{\"ph\":\"M\",\"name\":\"process_nome\",\"pid\":0,"), 1);
    REQUIRE((strstr(c.out_text, "invariant 6: pid 0 is not named by process_name metadata\n")) != NULL);
    cap_free(&c);
    /* without its sort index the device row sorts by pid 0, before 4242 */
    REQUIRE_EQ(check_patched(&c, "\"process_sort_index\",\"pid\":0,", "\"process_sort_indey\",\"pid\":0,"), 1);
    REQUIRE((strstr(c.out_text, "invariant 6: device pid 0 (sort index 0, by pid) does not sort after host "
                                       "pid 4242 (sort index 4242)\n")) != NULL);
    cap_free(&c);
}

static void usage_and_missing_files(void)
{
    capture c;
    const char *help[] = {"check", "--help"};
    REQUIRE_EQ(run_check(&c, 2, help), 0);
    REQUIRE((strstr(c.out_text, "usage: devtrace check [--verbose] FILE")) != NULL);
    cap_free(&c);
    const char *none[] = {"check"};
    REQUIRE_EQ(run_check(&c, 1, none), 2);
    REQUIRE((strstr(c.err_text, "usage:")) != NULL);
    cap_free(&c);
    const char *bad_opt[] = {"check", "--frobnicate", "x.json"};
    REQUIRE_EQ(run_check(&c, 3, bad_opt), 2);
    REQUIRE((strstr(c.err_text, "unknown option --frobnicate")) != NULL);
    cap_free(&c);
    const char *two[] = {"check", "a.json", "b.json"};
    REQUIRE_EQ(run_check(&c, 3, two), 2);
    cap_free(&c);
    const char *missing[] = {"check", "/nonexistent/t.json"};
    REQUIRE_EQ(run_check(&c, 2, missing), 1);
    REQUIRE((strstr(c.err_text, "cannot open /nonexistent/t.json")) != NULL);
    cap_free(&c);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(good_trace_passes),
             DT_TEST(each_bad_trace_fails_its_invariant),
             DT_TEST(corrupt_input_fails_invariant_1),
             DT_TEST(findings_are_grouped_by_kind_with_a_count),
             DT_TEST(cut_flows_of_torch_traces_are_known_malformed_ones_fail),
             DT_TEST(plugin_traces_get_torch_rules_and_their_loss_checked),
             DT_TEST(only_names_that_demangle_count_as_mangled),
             DT_TEST(violations_escape_control_bytes),
             DT_TEST(nesting_is_checked_whatever_the_order),
             DT_TEST(kineto_rows_and_fanned_out_flows_are_known_properties),
             DT_TEST(flow_ends_sit_on_event_starts),
             DT_TEST(flow_ends_found_wherever_they_are_written),
             DT_TEST(crowded_flow_ids_stay_fast_and_exact),
             DT_TEST(trace_event_is_the_window),
             DT_TEST(unnamed_pid_and_unsorted_rows),
             DT_TEST(usage_and_missing_files))

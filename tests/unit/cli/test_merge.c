/* `devtrace merge`: what it keeps of each rank (device properties, string
   pids), what it says about clocks, and its output formats. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_capture.h"
#include "cli/commands.h"

static char dir[64];

static int setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/devtrace-test-merge-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A devtrace trace of one rank: a host process pid, a string-pid row
   ("Spans", as Kineto writes), two devices; host may be NULL. */
static const char *write_rank(const char *name, int rank, int pid, const char *host)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    REQUIRE((f) != NULL);
    char host_key[96] = "";
    if (host)
        snprintf(host_key, sizeof host_key, "\"host\": \"%s\", ", host);
    fprintf(f,
            "{\"schemaVersion\": 1,\n\"distributedInfo\": {\"rank\": %d, \"world_size\": 2},\n"
            "\"deviceProperties\": [{\"id\":0,\"name\":\"GPU zero\"}, {\"name\":\"GPU one\",\"id\":1,\"numSms\":132}],\n"
            "\"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1700000000000000000,\n\"traceEvents\": [\n"
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"app\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}},\n"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"main\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\"Spans\",\"tid\":0,\"args\":{\"name\":\"spans\"}},\n"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":\"Spans\",\"tid\":\"PyTorch Profiler\","
            "\"args\":{\"name\":\"profiler\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"app\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":0,\"tid\":0,\"args\":{\"labels\":\"GPU 0\"}},\n"
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"tid\":0,\"args\":{\"sort_index\":5000000}},\n"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":7,\"args\":{\"name\":\"stream 7\"}},\n"
            "{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"PyTorch Profiler (0)\",\"pid\":\"Spans\","
            "\"tid\":\"PyTorch Profiler\",\"ts\":1.000,\"dur\":50.000,\"args\":{}},\n"
            "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":10.500,\"dur\":2.000,\"args\":{\"External id\":1,\"cbid\":211,\"correlation\":1}},\n"
            "{\"ph\":\"s\",\"id\":1,\"pid\":%d,\"tid\":%d,\"ts\":10.500,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":13.000,\"dur\":3.000,"
            "\"args\":{\"External id\":1,\"device\":0,\"stream\":7,\"correlation\":1,\"grid\":[4,2,1],"
            "\"note\":\"q\\\"uote\",\"ok\":true}},\n"
            "{\"ph\":\"f\",\"id\":1,\"pid\":0,\"tid\":7,\"ts\":13.000,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"},\n"
            "{\"ph\":\"i\",\"name\":\"mark\",\"pid\":%d,\"tid\":%d,\"ts\":11.000,\"s\":\"t\"}\n"
            "],\n\"devtrace\": {\"version\": \"0.1.0\", \"backend\": \"cupti\", %s\"pid\": %d,\n"
            "\"captureWindow\": {\"startNs\": 1700000000000000000, \"endNs\": 1700000000000100000},\n"
            "\"loss\": {\"timestamp_zero\": 0, \"timestamp_reversed\": 0, \"timestamp_too_long\": 0, "
            "\"malformed\": 0, \"unknown_kind\": 0, \"no_buffer\": 0, \"vendor_dropped\": 0, "
            "\"outside_window\": 0, \"store_full\": 0, \"total\": 0},\n"
            "\"attribution\": {\"1\": 3000}}}\n",
            rank, pid, pid, pid, pid, pid, pid, pid, pid, pid, pid, pid, host_key, pid);
    REQUIRE_EQ(fclose(f), 0);
    return path;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    REQUIRE((f) != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    REQUIRE((buf) != NULL);
    REQUIRE_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int merge(capture *c, const char *out, const char *format, const char *a, const char *b)
{
    char in_a[256], in_b[256];
    snprintf(in_a, sizeof in_a, "%s", a);
    snprintf(in_b, sizeof in_b, "%s", b);
    const char *argv[8] = {"merge", "-o", out};
    int argc = 3;
    if (format) {
        argv[argc++] = "--format";
        argv[argc++] = format;
    }
    argv[argc++] = in_a;
    argv[argc++] = in_b;
    return cap_run(c, dt__merge_main, argc, argv);
}

static void device_properties_and_string_pids_stay_per_rank(void)
{
    char a[256], b[256], out[256];
    snprintf(a, sizeof a, "%s", write_rank("r0.json", 0, 100, "node1"));
    snprintf(b, sizeof b, "%s", write_rank("r1.json", 1, 100, "node1"));
    snprintf(out, sizeof out, "%s/merged.json", dir);
    capture c;
    REQUIRE_EQ(merge(&c, out, NULL, a, b), 0);
    cap_free(&c);
    char *text = slurp(out);
    /* every device of every rank, its id moved as its pid is (2^23 a rank) */
    REQUIRE((strstr(text, "{\"id\":0,\"name\":\"GPU zero\"}")) != NULL);
    REQUIRE((strstr(text, "{\"name\":\"GPU one\",\"id\":1,\"numSms\":132}")) != NULL);
    REQUIRE((strstr(text, "{\"id\":8388608,\"name\":\"GPU zero\"}")) != NULL);
    REQUIRE((strstr(text, "{\"name\":\"GPU one\",\"id\":8388609,\"numSms\":132}")) != NULL);
    /* rank 1's string pid is its own; rank 0's stays as written */
    REQUIRE((strstr(text, "\"pid\":\"rank 1 Spans\",\"tid\":\"PyTorch Profiler\",\"ts\":1.000")) != NULL);
    REQUIRE((strstr(text, "\"pid\":\"Spans\",\"tid\":\"PyTorch Profiler\",\"ts\":1.000")) != NULL);
    REQUIRE((strstr(text, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\"rank 1 Spans\"")) != NULL);
    free(text);
    /* and the result is a trace check accepts */
    const char *argv[] = {"check", out};
    REQUIRE_EQ(cap_run(&c, dt__check_main, 2, argv), 0);
    cap_free(&c);
}

static void clock_note_names_traces_without_a_host(void)
{
    char a[256], b[256], out[256];
    snprintf(a, sizeof a, "%s", write_rank("h0.json", 0, 100, "node1"));
    snprintf(b, sizeof b, "%s", write_rank("h1.json", 1, 200, NULL));
    snprintf(out, sizeof out, "%s/clock.json", dir);
    capture c;
    REQUIRE_EQ(merge(&c, out, NULL, a, b), 0);
    /* the host-less trace is not said to share node1's clock */
    REQUIRE((strstr(c.err_text, "every trace that names its host comes from host node1")) != NULL);
    REQUIRE((strstr(c.err_text, "1 trace names no host (")) != NULL);
    REQUIRE((strstr(c.err_text, "h1.json): its clock may be offset from the others by an unknown amount")) != NULL);
    cap_free(&c);
    snprintf(b, sizeof b, "%s", write_rank("h1.json", 1, 200, "node1"));
    REQUIRE_EQ(merge(&c, out, NULL, a, b), 0);
    REQUIRE((strstr(c.err_text, "clocks: every trace comes from host node1 and is on its CLOCK_REALTIME")) != NULL);
    cap_free(&c);
    snprintf(a, sizeof a, "%s", write_rank("h0.json", 0, 100, NULL));
    snprintf(b, sizeof b, "%s", write_rank("h1.json", 1, 200, NULL));
    REQUIRE_EQ(merge(&c, out, NULL, a, b), 0);
    REQUIRE((strstr(c.err_text, "clocks: no trace names its host: whether they share a clock is unknown")) != NULL);
    cap_free(&c);
}

static void perfetto_output_by_name_or_format(void)
{
    char a[256], b[256], out[256];
    snprintf(a, sizeof a, "%s", write_rank("p0.json", 0, 100, "node1"));
    snprintf(b, sizeof b, "%s", write_rank("p1.json", 1, 100, "node1"));
    /* by the name: a TracePacket stream (field 1, length-delimited) */
    snprintf(out, sizeof out, "%s/merged.pftrace", dir);
    capture c;
    REQUIRE_EQ(merge(&c, out, NULL, a, b), 0);
    /* three slices a rank and the capture window; the instant events are
       said to be left out */
    if (!strstr(c.err_text, "merge: Perfetto output: 7 slices; left out 2 events"))
        FAIL("%s", c.err_text);
    cap_free(&c);
    char *text = slurp(out);
    REQUIRE_EQ((unsigned char)text[0], 0x0a);
    free(text);
    /* by --format, gzip'd */
    snprintf(out, sizeof out, "%s/merged.bin", dir);
    REQUIRE_EQ(merge(&c, out, "perfetto.gz", a, b), 0);
    cap_free(&c);
    text = slurp(out);
    REQUIRE_EQ((unsigned char)text[0], 0x1f);
    REQUIRE_EQ((unsigned char)text[1], 0x8b);
    free(text);
    REQUIRE_EQ(merge(&c, out, "xml", a, b), 2);
    REQUIRE((strstr(c.err_text, "--format must be json, json.gz, perfetto or perfetto.gz, not xml")) != NULL);
    cap_free(&c);
}

static const char *write_text(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    REQUIRE((f) != NULL);
    REQUIRE(fputs(text, f) >= 0);
    REQUIRE_EQ(fclose(f), 0);
    return path;
}

static int merge_args(capture *c, int argc, const char **argv)
{
    return cap_run(c, dt__merge_main, argc, argv);
}

/* The same file twice, two traces of one rank, a negative rank: merged
   with a warning each, and refused with --strict. */
static void doubtful_inputs_are_named_and_refused_when_strict(void)
{
    char a[256], b[256], neg[256], out[256];
    snprintf(a, sizeof a, "%s", write_rank("d0.json", 0, 100, "node1"));
    snprintf(b, sizeof b, "%s", write_rank("d1.json", 0, 200, "node1"));
    snprintf(neg, sizeof neg, "%s", write_rank("dn.json", -1, 300, "node1"));
    snprintf(out, sizeof out, "%s/doubtful.json", dir);
    capture c;
    const char *twice[] = {"merge", "-o", out, a, a};
    REQUIRE_EQ(merge_args(&c, 5, twice), 0);
    if (!strstr(c.err_text, "merge: warning: ") || !strstr(c.err_text, "d0.json is given twice: its events are "
                                                                        "written twice\n"))
        FAIL("%s", c.err_text);
    /* the same file again is not also two traces claiming its rank */
    REQUIRE((strstr(c.err_text, "claim rank")) == NULL);
    cap_free(&c);
    const char *same_rank[] = {"merge", "-o", out, a, b};
    REQUIRE_EQ(merge_args(&c, 5, same_rank), 0);
    if (!strstr(c.err_text, "d0.json and ") || !strstr(c.err_text, "d1.json both claim rank 0 (distributedInfo)\n"))
        FAIL("%s", c.err_text);
    cap_free(&c);
    const char *negative[] = {"merge", "-o", out, a, neg};
    REQUIRE_EQ(merge_args(&c, 5, negative), 0);
    if (!strstr(c.err_text, "dn.json claims rank -1 (distributedInfo): a rank is 0 or more\n"))
        FAIL("%s", c.err_text);
    cap_free(&c);
    REQUIRE_EQ(unlink(out), 0);
    const char *strict[] = {"merge", "--strict", "-o", out, a, b, neg};
    REQUIRE_EQ(merge_args(&c, 7, strict), 1);
    if (!strstr(c.err_text, "merge: --strict: 2 warnings: nothing written\n"))
        FAIL("%s", c.err_text);
    REQUIRE_EQ(access(out, F_OK), -1);
    cap_free(&c);
    /* inputs that raise nothing pass --strict */
    snprintf(b, sizeof b, "%s", write_rank("d1.json", 1, 200, "node1"));
    const char *fine[] = {"merge", "--strict", "-o", out, a, b};
    REQUIRE_EQ(merge_args(&c, 6, fine), 0);
    REQUIRE((strstr(c.err_text, "warning")) == NULL);
    cap_free(&c);
}

/* Events that break the trace format are carried over as written, and
   merge says how many of each kind; --strict writes nothing. */
static void what_is_carried_over_broken_is_counted(void)
{
    char a[256], bad[256], out[256];
    snprintf(a, sizeof a, "%s", write_rank("c0.json", 0, 100, "node1"));
    snprintf(bad, sizeof bad, "%s",
             write_text("c1.json",
                        "{\"traceEvents\": [\n"
                        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":5.0,\"dur\":-2.0},\n"
                        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":9.0,\"dur\":-1.0},\n"
                        "{\"ph\":\"s\",\"id\":4,\"pid\":1,\"tid\":1,\"ts\":5.0,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
                        "{\"ph\":\"s\",\"id\":4,\"pid\":1,\"tid\":1,\"ts\":6.0,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
                        "{\"ph\":\"s\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":5.0,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
                        "{\"ph\":\"s\",\"id\":6,\"pid\":1,\"tid\":1,\"ts\":5.0,\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n"
                        "{\"ph\":\"f\",\"id\":6,\"pid\":0,\"tid\":7,\"ts\":9.0,\"cat\":\"ac2g\",\"name\":\"ac2g\","
                        "\"bp\":\"e\"}\n"
                        "]}\n"));
    snprintf(out, sizeof out, "%s/carried.json", dir);
    capture c;
    const char *argv[] = {"merge", "-o", out, a, bad};
    REQUIRE_EQ(merge_args(&c, 5, argv), 0);
    if (!strstr(c.err_text, "c1.json: carried over as written: 2 complete events with a negative duration, 1 flow "
                            "id without exactly one start and one finish\n"))
        FAIL("%s", c.err_text);
    /* flow 5, cut on one side, is a known property of a torch.profiler trace: said, not warned of */
    if (!strstr(c.err_text, "c1.json: 1 flow id with one side only, carried over as written (a known property of "
                            "torch.profiler's traces"))
        FAIL("%s", c.err_text);
    /* the well-formed input raises nothing */
    REQUIRE((strstr(c.err_text, "c0.json:")) == NULL);
    cap_free(&c);
    REQUIRE_EQ(unlink(out), 0);
    const char *strict[] = {"merge", "-o", out, "--strict", a, bad};
    REQUIRE_EQ(merge_args(&c, 6, strict), 1);
    REQUIRE((strstr(c.err_text, "merge: --strict: 1 warning: nothing written\n")) != NULL);
    REQUIRE_EQ(access(out, F_OK), -1);
    cap_free(&c);
    /* in devtrace's own trace a flow cut on one side is a defect: warned of */
    char own[256];
    snprintf(own, sizeof own, "%s",
             write_text("c2.json", "{\"devtrace\": {\"version\": \"0.1.0\"}, \"traceEvents\": [\n"
                                   "{\"ph\":\"s\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":5.0,\"cat\":\"ac2g\","
                                   "\"name\":\"ac2g\"}\n]}\n"));
    const char *cut[] = {"merge", "-o", out, a, own};
    REQUIRE_EQ(merge_args(&c, 5, cut), 0);
    if (!strstr(c.err_text, "c2.json: carried over as written: 1 flow id without exactly one start and one finish\n"))
        FAIL("%s", c.err_text);
    REQUIRE((strstr(c.err_text, "known property")) == NULL);
    cap_free(&c);
    REQUIRE_EQ(unlink(out), 0);
}

/* An output that is one of the inputs (by its name or another) would be
   replaced while it is read: refused before anything is read. */
static void an_output_that_is_an_input_is_refused(void)
{
    char a[256], b[256], link_path[256];
    snprintf(a, sizeof a, "%s", write_rank("o0.json", 0, 100, "node1"));
    snprintf(b, sizeof b, "%s", write_rank("o1.json", 1, 100, "node1"));
    char *before = slurp(a);
    capture c;
    const char *same[] = {"merge", "-o", a, a, b};
    REQUIRE_EQ(merge_args(&c, 5, same), 2);
    if (!strstr(c.err_text, "o0.json is also an input: it would be replaced while being read; name another output\n"))
        FAIL("%s", c.err_text);
    cap_free(&c);
    snprintf(link_path, sizeof link_path, "%s/o-link.json", dir);
    REQUIRE_EQ(symlink(b, link_path), 0);
    const char *linked[] = {"merge", "-o", link_path, a, b};
    REQUIRE_EQ(merge_args(&c, 5, linked), 2);
    REQUIRE((strstr(c.err_text, "o-link.json is also an input as ")) != NULL);
    cap_free(&c);
    char *after = slurp(a);
    REQUIRE_EQ(strcmp(before, after), 0);
    free(before);
    free(after);
    /* a directory is no output */
    const char *directory[] = {"merge", "-o", dir, a, b};
    REQUIRE_EQ(merge_args(&c, 5, directory), 1);
    REQUIRE((strstr(c.err_text, ": it is a directory\n")) != NULL);
    cap_free(&c);
}

DT_TEST_MAIN(setup, teardown,
             DT_TEST(doubtful_inputs_are_named_and_refused_when_strict),
             DT_TEST(what_is_carried_over_broken_is_counted),
             DT_TEST(an_output_that_is_an_input_is_refused),
             DT_TEST(device_properties_and_string_pids_stay_per_rank),
             DT_TEST(clock_note_names_traces_without_a_host),
             DT_TEST(perfetto_output_by_name_or_format))

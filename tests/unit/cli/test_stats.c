/* `devtrace stats`: exact figures per name on known traces, CSV shape,
   report selection, range attribution through nesting, and bad input. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_capture.h"
#include "cli/commands.h"

static int run_stats(capture *c, int argc, const char **argv)
{
    return cap_run(c, dt__stats_main, argc, argv);
}

static int stats_text(capture *c, const char *json, const char *reports, bool csv)
{
    cap_open(c);
    dt_rd_source *src = dt__rd_open_memory(json, strlen(json));
    REQUIRE((src) != NULL);
    int rc = dt__stats_source(src, "memory", reports, csv, c->out, c->err);
    dt__rd_close(src);
    cap_close(c);
    return rc;
}

static const char *data_path(const char *rel)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", DT_SOURCE_DIR, rel);
    return path;
}

static void good_trace_csv_is_exact(void)
{
    capture c;
    const char *argv[] = {"stats", data_path("good.json"), "--format", "csv"};
    REQUIRE_EQ(run_stats(&c, 4, argv), 0);
    static const char expected[] =
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "kernels,71.4,50500,3,16833.3,10500.0,9500,30500,11846.2,relu_kernel\n"
        "kernels,28.6,20250,1,20250.0,20250.0,20250,20250,0.0,\"void gemm<float>(float*, int)\"\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Total Bytes,"
        "Avg Bandwidth (GB/s),Name\n"
        "memcpy,100.0,10000,1,10000.0,10000.0,10000,10000,0.0,1000000,100.000,Memcpy HtoD (Pageable -> Device)\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Total Bytes,"
        "Avg Bandwidth (GB/s),Name\n"
        "memset,100.0,4000,1,4000.0,4000.0,4000,4000,0.0,4096,1.024,Memset (Device)\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "api,66.7,13000,3,4333.3,4000.0,4000,5000,577.4,cudaLaunchKernel\n"
        "api,15.4,3000,1,3000.0,3000.0,3000,3000,0.0,cudaMemcpyAsync\n"
        "api,10.3,2000,1,2000.0,2000.0,2000,2000,0.0,cudaMemsetAsync\n"
        "api,7.7,1500,1,1500.0,1500.0,1500,1500,0.0,cuLaunchKernel\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
        "Device Time (ns),Name\n"
        "ranges,71.4,500000,1,500000.0,500000.0,500000,500000,0.0,75250,step\n"
        "ranges,28.6,200000,1,200000.0,200000.0,200000,200000,0.0,30250,fwd\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Total Bytes,"
        "Avg Bandwidth (GB/s),Name\n"
        "Report,Device,Allocations,Frees,Bytes Allocated,Bytes Freed,Peak Allocated (bytes),"
        "Final Allocated (bytes)\n"
        "Report,Reason,Count\n"
        "loss,timestamp_zero,0\n"
        "loss,timestamp_reversed,0\n"
        "loss,timestamp_too_long,0\n"
        "loss,malformed,0\n"
        "loss,unknown_kind,0\n"
        "loss,no_buffer,0\n"
        "loss,vendor_dropped,3\n"
        "loss,outside_window,0\n"
        "loss,store_full,0\n"
        "loss,unfinished,0\n"
        "loss,forked_child,0\n"
        "loss,ring_evicted,0\n"
        "loss,total,3\n";
    REQUIRE_STR(c.out_text, expected);
    REQUIRE_STR(c.err_text, "");
    cap_free(&c);

    /* the gzip copy gives the same figures */
    const char *gz[] = {"stats", "--format=csv", data_path("good.json.gz")};
    REQUIRE_EQ(run_stats(&c, 3, gz), 0);
    REQUIRE_STR(c.out_text, expected);
    cap_free(&c);
}

static void good_trace_table(void)
{
    capture c;
    const char *argv[] = {"stats", data_path("good.json"), "--report", "kernels"};
    REQUIRE_EQ(run_stats(&c, 4, argv), 0);
    REQUIRE((strstr(c.out_text, " Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)"
                                       "  StdDev (ns)  Name\n")) != NULL);
    REQUIRE((strstr(c.out_text, "     71.4            50500          3   16833.3   10500.0      9500     30500"
                                       "      11846.2  relu_kernel\n")) != NULL);
    REQUIRE((strstr(c.out_text, " vendor_dropped      3\n")) != NULL);
    REQUIRE((strstr(c.out_text, "cudaLaunchKernel")) == NULL);
    REQUIRE((strstr(c.out_text, "Memcpy")) == NULL);
    cap_free(&c);
}

static void report_selection(void)
{
    capture c;
    const char *argv[] = {"stats", data_path("good.json"), "--format", "csv", "--report", "api,memset"};
    REQUIRE_EQ(run_stats(&c, 6, argv), 0);
    /* api before memset: reports keep their fixed order */
    const char *memset = strstr(c.out_text, "\nmemset,");
    const char *api = strstr(c.out_text, "\napi,");
    REQUIRE((memset) != NULL);
    REQUIRE((api) != NULL);
    REQUIRE(memset < api);
    REQUIRE((strstr(c.out_text, "kernels,")) == NULL);
    REQUIRE((strstr(c.out_text, "ranges,")) == NULL);
    REQUIRE((strstr(c.out_text, "memcpy,")) == NULL);
    cap_free(&c);
}

static const char trace_head[] =
    "{\"traceEvents\":["
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}}";

static void median_of_even_count(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "%s"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":1,\"dur\":0.010}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":2,\"dur\":0.001}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":3,\"dur\":0.003}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":4,\"dur\":0.002}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"j\",\"pid\":0,\"tid\":1,\"ts\":5,\"dur\":0.016}"
             ",{\"ph\":\"i\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":5}"
             "]}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, "kernels", true), 0);
    REQUIRE_STR(c.out_text, "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),"
                        "Name\n"
                        "kernels,50.0,16,1,16.0,16.0,16,16,0.0,j\n"
                        "kernels,50.0,16,4,4.0,2.5,1,10,4.1,k\n"
                        "Report,Reason,Count\n");
    cap_free(&c);
    REQUIRE_EQ(stats_text(&c, buf, "kernels", false), 0);
    REQUIRE((strstr(c.out_text, "not recorded in this trace")) != NULL);
    cap_free(&c);
}

static void ranges_collect_nested_device_time(void)
{
    /* outer(1) > mid(2) > outer(3, same name as 1) ; kernels on 3, 2 and an
       op id 9 that is no range. A parent cycle 5 <-> 6 must not hang. */
    char buf[8192];
    snprintf(buf, sizeof buf,
             "%s"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"a\",\"pid\":0,\"tid\":1,\"ts\":1,\"dur\":1,"
             "\"args\":{\"External id\":3}}"
             ",{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"m\",\"pid\":0,\"tid\":1,\"ts\":2,\"dur\":2,"
             "\"args\":{\"External id\":2,\"bytes\":8}}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"b\",\"pid\":0,\"tid\":1,\"ts\":5,\"dur\":4,"
             "\"args\":{\"External id\":9}}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"c\",\"pid\":0,\"tid\":1,\"ts\":9,\"dur\":8,"
             "\"args\":{\"External id\":5}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"outer\",\"pid\":1,\"tid\":1,\"ts\":0,"
             "\"dur\":100,\"args\":{\"External id\":1}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"mid\",\"pid\":1,\"tid\":1,\"ts\":1,"
             "\"dur\":50,\"args\":{\"External id\":2,\"parent\":1}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"outer\",\"pid\":1,\"tid\":1,\"ts\":2,"
             "\"dur\":10,\"args\":{\"External id\":3,\"parent\":2}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"loop\",\"pid\":1,\"tid\":1,\"ts\":60,"
             "\"dur\":1,\"args\":{\"External id\":5,\"parent\":6}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"loop2\",\"pid\":1,\"tid\":1,\"ts\":61,"
             "\"dur\":1,\"args\":{\"External id\":6,\"parent\":5}}"
             "]}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, "ranges", true), 0);
    /* outer: 1000 (via 3) + 2000 (via 2), counted once though 1 and 3 share the name */
    REQUIRE((strstr(c.out_text, "ranges,67.9,110000,2,55000.0,55000.0,10000,100000,63639.6,3000,outer\n")) != NULL);
    REQUIRE((strstr(c.out_text, ",50000,50000,0.0,3000,mid\n")) != NULL);
    REQUIRE((strstr(c.out_text, ",1000,1000,0.0,8000,loop\n")) != NULL);
    REQUIRE((strstr(c.out_text, ",1000,1000,0.0,8000,loop2\n")) != NULL);
    cap_free(&c);
}

static void csv_quotes_awkward_names(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "%s,{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"say \\\"hi\\\", then\\nbye\",\"pid\":1,"
             "\"tid\":1,\"ts\":1,\"dur\":1}]}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, "api", true), 0);
    /* a line end in a name is escaped, as in the table: one row, one line */
    REQUIRE((strstr(c.out_text, ",\"say \"\"hi\"\", then\\x0abye\"\n")) != NULL);
    cap_free(&c);
}

/* Only the line ends a report writes: no byte of a name can move the
   cursor, clear the screen or start a line of its own. */
static void assert_terminal_safe(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '\n')
            continue;
        if (*p < 0x20 || *p == 0x7f)
            FAIL("control byte 0x%02x at offset %td in:\n%s", *p, (const char *)p - text, text);
        if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            FAIL("C1 control U+00%02X at offset %td", p[1], (const char *)p - text);
    }
}

static void table_escapes_control_bytes(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "%s,{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u001b[2J\\rgone\\nnext\\u0001\\u007f\\u009b\",\"pid\":0,"
             "\"tid\":1,\"ts\":1,\"dur\":1},"
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"r\\u001b]0;title\\u0007\",\"pid\":1,"
             "\"tid\":1,\"ts\":1,\"dur\":1}],"
             "\"devtrace\":{\"backend\":\"b\\u001b[31m\",\"loss\":{\"x\\u001b[1Ay\":1,\"total\":1}}}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, NULL, false), 0);
    assert_terminal_safe(c.out_text);
    REQUIRE((strstr(c.out_text, " k\\x1b[2J\\x0dgone\\x0anext\\x01\\x7f\\xc2\\x9b\n")) != NULL);
    REQUIRE((strstr(c.out_text, " r\\x1b]0;title\\x07\n")) != NULL);
    REQUIRE((strstr(c.out_text, "backend b\\x1b[31m)")) != NULL);
    /* the loss table stays aligned on the escaped text */
    REQUIRE((strstr(c.out_text, " Reason     Count\n x\\x1b[1Ay  1\n total      1\n")) != NULL);
    cap_free(&c);
}

/* CSV is read in terminals and by line-based tools too: the same escapes. */
static void csv_escapes_control_bytes(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "%s,{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u001b[2J\\rgone\\nnext\\u0001\\u007f\\u009b\",\"pid\":0,"
             "\"tid\":1,\"ts\":1,\"dur\":1},"
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"r,\\u001b]0;title\\u0007\",\"pid\":1,"
             "\"tid\":1,\"ts\":1,\"dur\":1}],"
             "\"devtrace\":{\"backend\":\"b\",\"loss\":{\"x\\u001b[1Ay\":1,\"total\":1}}}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, NULL, true), 0);
    assert_terminal_safe(c.out_text);
    REQUIRE((strstr(c.out_text, ",k\\x1b[2J\\x0dgone\\x0anext\\x01\\x7f\\xc2\\x9b\n")) != NULL);
    REQUIRE((strstr(c.out_text, ",\"r,\\x1b]0;title\\x07\"\n")) != NULL);
    REQUIRE((strstr(c.out_text, "loss,x\\x1b[1Ay,1\n")) != NULL);
    cap_free(&c);
}

static void huge_durations_saturate(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "%s"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":1,"
             "\"dur\":9000000000000000.000,\"args\":{\"External id\":1}}"
             ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":1,\"ts\":2,"
             "\"dur\":9000000000000000.000,\"args\":{\"External id\":1}}"
             ",{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"r\",\"pid\":1,\"tid\":1,\"ts\":0,"
             "\"dur\":1,\"args\":{\"External id\":1}}"
             "]}",
             trace_head);
    capture c;
    REQUIRE_EQ(stats_text(&c, buf, "kernels,ranges", true), 0);
    REQUIRE((strstr(c.out_text, "kernels,100.0,9223372036854775807,2,")) != NULL);
    REQUIRE((strstr(c.out_text, ",9223372036854775807,r\n")) != NULL);
    cap_free(&c);
}

static void bad_input_and_usage(void)
{
    capture c;
    const char *help[] = {"stats", "--help"};
    REQUIRE_EQ(run_stats(&c, 2, help), 0);
    REQUIRE((strstr(c.out_text, "usage: devtrace stats FILE")) != NULL);
    cap_free(&c);
    const char *none[] = {"stats"};
    REQUIRE_EQ(run_stats(&c, 1, none), 2);
    cap_free(&c);
    const char *fmt[] = {"stats", data_path("good.json"), "--format", "xml"};
    REQUIRE_EQ(run_stats(&c, 4, fmt), 2);
    REQUIRE((strstr(c.err_text, "unknown format \"xml\"")) != NULL);
    cap_free(&c);
    const char *rep[] = {"stats", data_path("good.json"), "--report", "kernels,gpus"};
    REQUIRE_EQ(run_stats(&c, 4, rep), 2);
    REQUIRE((strstr(c.err_text, "unknown report \"gpus\"")) != NULL);
    cap_free(&c);
    /* options are judged before the file is opened */
    const char *rep_first[] = {"stats", "/nonexistent/t.json", "--report", "gpus"};
    REQUIRE_EQ(run_stats(&c, 4, rep_first), 2);
    REQUIRE((strstr(c.err_text, "unknown report \"gpus\"")) != NULL);
    cap_free(&c);
    const char *noval[] = {"stats", data_path("good.json"), "--report"};
    REQUIRE_EQ(run_stats(&c, 3, noval), 2);
    cap_free(&c);
    const char *missing[] = {"stats", "/nonexistent/t.json"};
    REQUIRE_EQ(run_stats(&c, 2, missing), 1);
    REQUIRE((strstr(c.err_text, "cannot open")) != NULL);
    cap_free(&c);
    REQUIRE_EQ(stats_text(&c, "{\"traceEvents\":[{\"ts\":1", NULL, false), 1);
    REQUIRE((strstr(c.err_text, "stats: memory: byte ")) != NULL);
    REQUIRE_STR(c.out_text, "");
    cap_free(&c);
}

/* Every device category Kineto writes is device work: MTIA's
   (mtia_ccp_events) and the ones of its releases before PyTorch 1.10
   (Kernel, Memcpy, Memset, their calls Runtime); a category devtrace has no
   kind for is named with its count, not dropped unsaid. */
static void kineto_device_categories_and_unclassified_ones(void)
{
    static const char json[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"mtia_ccp_events\",\"name\":\"fc-dtype_Float\",\"pid\":9,\"tid\":4,\"ts\":10,\"dur\":5,"
        "\"args\":{\"correlation\":1,\"stream\":1}},"
        "{\"ph\":\"X\",\"cat\":\"mtia_ccp_events\",\"name\":\"dma_request\",\"pid\":9,\"tid\":4,\"ts\":20,\"dur\":2},"
        "{\"ph\":\"X\",\"cat\":\"mtia_runtime\",\"name\":\"runFunction\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":3,"
        "\"args\":{\"correlation\":1}},"
        "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"old_kernel\",\"pid\":0,\"tid\":7,\"ts\":30,\"dur\":7},"
        "{\"ph\":\"X\",\"cat\":\"Memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":7,\"ts\":40,\"dur\":4},"
        "{\"ph\":\"X\",\"cat\":\"Memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":7,\"ts\":50,\"dur\":1},"
        "{\"ph\":\"X\",\"cat\":\"Runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":25,\"dur\":2},"
        "{\"ph\":\"X\",\"cat\":\"cuda_profiler_range\",\"name\":\"r\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2},"
        "{\"ph\":\"s\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":1},"
        "{\"ph\":\"f\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":5,\"bp\":\"e\"},"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"p\"}}"
        "]}";
    capture c;
    REQUIRE_EQ(stats_text(&c, json, "kernels,memcpy,memset,api", true), 0);
    static const char expected[] =
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "kernels,50.0,7000,1,7000.0,7000.0,7000,7000,0.0,old_kernel\n"
        "kernels,35.7,5000,1,5000.0,5000.0,5000,5000,0.0,fc-dtype_Float\n"
        "kernels,14.3,2000,1,2000.0,2000.0,2000,2000,0.0,dma_request\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Total Bytes,"
        "Avg Bandwidth (GB/s),Name\n"
        "memcpy,100.0,4000,1,4000.0,4000.0,4000,4000,0.0,0,0.000,Memcpy HtoD\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Total Bytes,"
        "Avg Bandwidth (GB/s),Name\n"
        "memset,100.0,1000,1,1000.0,1000.0,1000,1000,0.0,0,0.000,Memset (Device)\n"
        "Report,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "api,60.0,3000,1,3000.0,3000.0,3000,3000,0.0,runFunction\n"
        "api,40.0,2000,1,2000.0,2000.0,2000,2000,0.0,cudaLaunchKernel\n"
        "Report,Category,Events\n"
        "unclassified,cuda_profiler_range,1\n"
        "unclassified,fwdbwd,2\n"
        "Report,Reason,Count\n";
    REQUIRE_STR(c.out_text, expected);
    cap_free(&c);
    REQUIRE_EQ(stats_text(&c, json, "kernels", false), 0);
    REQUIRE(strstr(c.out_text, "** Categories devtrace does not classify (their events are in no report above):\n\n"
                               " Category             Events\n"
                               " cuda_profiler_range  1\n"
                               " fwdbwd               2\n") != NULL);
    cap_free(&c);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(good_trace_csv_is_exact),
             DT_TEST(good_trace_table),
             DT_TEST(report_selection),
             DT_TEST(median_of_even_count),
             DT_TEST(ranges_collect_nested_device_time),
             DT_TEST(csv_quotes_awkward_names),
             DT_TEST(csv_escapes_control_bytes),
             DT_TEST(table_escapes_control_bytes),
             DT_TEST(huge_durations_saturate),
             DT_TEST(bad_input_and_usage),
             DT_TEST(kineto_device_categories_and_unclassified_ones))

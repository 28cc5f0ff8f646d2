/*
 * Trace reader throughput: writes a devtrace-shaped trace of the given size
 * (that passes `devtrace check`), then reads it back beside baselines taken
 * in the same run on the same bytes:
 *   - read(): the page cache's copy, the ceiling for any reader;
 *   - yajl with no callbacks: the JSON parser the reader used before, at its
 *     fastest (tokenizing only);
 *   - the reader with no visitor, stats, and check (MB/s of JSON text);
 *   - check's memory per event (peak RSS of a child that only checks, less
 *     that of a child that does nothing);
 *   - the same trace gzip'd: gunzip alone, then stats through gzip.
 * Prints figures; asserts nothing.
 *
 *   bench_reader [path] [MB] [repeats]
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "devtrace/devtrace.h"
#include "dt_reader.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A trace in devtrace's shape: per launch a runtime call and its flow start
   on one of 4 host threads, a kernel (or copy) and its flow finish on one of
   8 streams, rows written one after another as the exporter does. */
static uint64_t write_trace(const char *path, uint64_t target_bytes, uint64_t *events)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    const int threads = 4, streams = 8;
    const uint64_t base = 1764000000000000000ull;
    /* launches per row so that the file reaches the target: ~780 bytes each */
    uint64_t launches = target_bytes / 780 + 1;
    uint64_t per_thread = launches / (uint64_t)threads + 1;
    fprintf(f, "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [],\n\"displayTimeUnit\": \"ms\",\n"
               "\"baseTimeNanoseconds\": %" PRIu64 ",\n\"traceEvents\": [\n",
            base);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,\"tid\":0,\"ts\":0.000,\"args\":{\"name\":\"app\"}},\n");
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":4242,\"tid\":0,\"ts\":0.000,\"args\":{\"sort_index\":4242}},\n");
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"ts\":0.000,\"args\":{\"name\":\"app\"}},\n");
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":0,\"tid\":0,\"ts\":0.000,\"args\":{\"labels\":\"GPU 0\"}},\n");
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":0,\"tid\":0,\"ts\":0.000,\"args\":{\"sort_index\":5000000}},\n");
    for (int t = 0; t < threads; t++)
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":4242,\"tid\":%d,\"ts\":0.000,\"args\":{\"name\":\"thread %d\"}},\n",
                100 + t, 100 + t);
    for (int s = 0; s < streams; s++)
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":%d,\"ts\":0.000,\"args\":{\"name\":\"stream %d\"}},\n",
                7 + s, 7 + s);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":4242,\"tid\":0,\"ts\":0.000,\"args\":{\"name\":\"devtrace capture\"}}");
    uint64_t n = 5 + (uint64_t)threads + (uint64_t)streams + 1;
    /* host rows: launch i of thread t at 1000 + 2000*i us */
    uint64_t end_us = 1000 + 2000 * per_thread + 100000;
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"devtrace capture\",\"pid\":4242,\"tid\":0,\"ts\":0.000,"
               "\"dur\":%" PRIu64 ".000,\"args\":{}}",
            end_us);
    n++;
    for (int t = 0; t < threads; t++) {
        for (uint64_t i = 0; i < per_thread; i++) {
            uint64_t corr = (uint64_t)t * per_thread + i + 1, ts = 1000 + 2000 * i + (uint64_t)t;
            fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":4242,\"tid\":%d,"
                       "\"ts\":%" PRIu64 ".125,\"dur\":4.250,\"args\":{\"External id\":%" PRIu64 ",\"cbid\":211,"
                       "\"correlation\":%" PRIu64 ",\"return code\":0}}",
                    100 + t, ts, corr / 4 + 1, corr);
            fprintf(f, ",\n{\"ph\":\"s\",\"id\":%" PRIu64 ",\"pid\":4242,\"tid\":%d,\"ts\":%" PRIu64
                       ".125,\"cat\":\"ac2g\",\"name\":\"ac2g\"}",
                    corr, 100 + t, ts);
            n += 2;
        }
    }
    /* device rows: launch (t, i) on stream (t*per+i) % streams, 1 us each, in order */
    uint64_t attr_ids = (threads * per_thread) / 4 + 2;
    uint64_t *attr = calloc(attr_ids, sizeof *attr);
    for (int s = 0; s < streams; s++) {
        for (int t = 0; t < threads; t++) {
            for (uint64_t i = 0; i < per_thread; i++) {
                uint64_t corr = (uint64_t)t * per_thread + i + 1;
                if (corr % (uint64_t)streams != (uint64_t)s)
                    continue;
                uint64_t ts = 1000 + 2000 * i + (uint64_t)t + 10 + (uint64_t)t * 5;
                fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void gemm_kernel<float, %d>(float const*, "
                           "float*, int)\",\"pid\":0,\"tid\":%d,\"ts\":%" PRIu64 ".500,\"dur\":3.000,\"args\":{"
                           "\"External id\":%" PRIu64 ",\"queued\":0,\"device\":0,\"context\":1,\"stream\":%d,"
                           "\"correlation\":%" PRIu64 ",\"registers per thread\":32,\"shared memory\":4096,"
                           "\"blocks per SM\":0.242424,\"warps per SM\":1.939394,\"est. achieved occupancy %%\":25,"
                           "\"grid\":[8,4,1],\"block\":[128,1,1]}}",
                        (int)(corr % 200), 7 + s, ts, corr / 4 + 1, 7 + s, corr);
                fprintf(f, ",\n{\"ph\":\"f\",\"id\":%" PRIu64 ",\"pid\":0,\"tid\":%d,\"ts\":%" PRIu64
                           ".500,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}",
                        corr, 7 + s, ts);
                attr[corr / 4 + 1] += 3000;
                n += 2;
            }
        }
    }
    fprintf(f, "\n],\n\"devtrace\": {\n  \"version\": \"0.1.0\",\n  \"backend\": \"cupti\",\n"
               "  \"captureWindow\": {\"startNs\": %" PRIu64 ", \"endNs\": %" PRIu64 "},\n  \"loss\": {",
            base, base + end_us * 1000);
    for (int r = 0; r < DT_LOSS_COUNT; r++)
        fprintf(f, "%s\"%s\": 0", r ? ", " : "", dt_loss_reason_name((dt_loss_reason)r));
    fprintf(f, ", \"total\": 0},\n  \"attribution\": {");
    int first = 1;
    for (uint64_t k = 0; k < attr_ids; k++) {
        if (!attr[k])
            continue;
        fprintf(f, "%s\n    \"%" PRIu64 "\": %" PRIu64, first ? "" : ",", k, attr[k]);
        first = 0;
    }
    fprintf(f, "}\n},\n\"traceName\": \"%s\"\n}\n", path);
    free(attr);
    if (fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    *events = n;
    return file_size(path);
}

static double time_read(const char *path)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    double t0 = now_s();
    while (read(fd, buf, sizeof buf) > 0) {
    }
    double t = now_s() - t0;
    close(fd);
    return t;
}

static double time_yajl(const char *path)
{
    static unsigned char buf[1 << 20];
    FILE *f = fopen(path, "rb");
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    double t0 = now_s();
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (yajl_parse(h, buf, n) != yajl_status_ok)
            break;
    yajl_complete_parse(h);
    double t = now_s() - t0;
    yajl_free(h);
    fclose(f);
    return t;
}

static double time_gunzip(const char *path, uint64_t *out_bytes)
{
    static char buf[1 << 20];
    gzFile g = gzopen(path, "rb");
    gzbuffer(g, 1 << 20);
    double t0 = now_s();
    int n;
    *out_bytes = 0;
    while ((n = gzread(g, buf, sizeof buf)) > 0)
        *out_bytes += (uint64_t)n;
    double t = now_s() - t0;
    gzclose(g);
    return t;
}

enum { RUN_NOTHING, RUN_READ, RUN_STATS, RUN_CHECK };

/* One reading in a child of its own, so that its peak RSS is its own. */
static double run_child(const char *path, int what, long *maxrss_kb)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        FILE *sink = fopen("/dev/null", "w");
        char err[512];
        double t0 = now_s();
        dt_rd_source *src = what == RUN_NOTHING ? NULL : dt_rd_open_file(path, err, sizeof err);
        int rc = 0;
        if (what == RUN_READ) {
            dt_rd_summary s;
            rc = dt_rd_read(src, NULL, NULL, &s, err, sizeof err);
            dt_rd_summary_free(&s);
        } else if (what == RUN_STATS) {
            rc = dt_stats_source(src, path, NULL, false, sink, stderr);
        } else if (what == RUN_CHECK) {
            rc = dt_check_source(src, path, sink, stderr);
        }
        double t = now_s() - t0;
        dt_rd_close(src);
        if (rc != 0)
            fprintf(stderr, "bench_reader: reading %s failed (%d)\n", path, rc);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double msg[2] = {rc == 0 ? t : -1, (double)ru.ru_maxrss};
        ssize_t w = write(fds[1], msg, sizeof msg);
        (void)w;
        _exit(0);
    }
    close(fds[1]);
    double msg[2] = {-1, 0};
    ssize_t r = read(fds[0], msg, sizeof msg);
    (void)r;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    *maxrss_kb = (long)msg[1];
    return msg[0];
}

static double best(double a, double b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/devtrace_bench_reader.json";
    uint64_t mb = argc > 2 ? strtoull(argv[2], NULL, 10) : 1024;
    int repeats = argc > 3 ? atoi(argv[3]) : 3;
    if (repeats < 1)
        repeats = 1;
    uint64_t events;
    double g0 = now_s();
    uint64_t bytes = write_trace(path, mb * 1000000, &events);
    printf("trace: %.1f MB, %" PRIu64 " events (written in %.1f s)\n", (double)bytes / 1e6, events, now_s() - g0);
    double mbytes = (double)bytes / 1e6;

    double t_read = 1e30, t_yajl = 1e30, t_rd = -1, t_stats = -1, t_check = -1;
    long rss_none = 0, rss_check = 0, rss;
    for (int r = 0; r < repeats; r++) {
        t_read = best(t_read, time_read(path));
        t_yajl = best(t_yajl, time_yajl(path));
        t_rd = best(t_rd, run_child(path, RUN_READ, &rss));
        t_stats = best(t_stats, run_child(path, RUN_STATS, &rss));
        t_check = best(t_check, run_child(path, RUN_CHECK, &rss_check));
        run_child(path, RUN_NOTHING, &rss_none);
    }
    printf("read() of the file (baseline):     %6.0f MB/s\n", mbytes / t_read);
    printf("yajl, no callbacks (old parser):   %6.0f MB/s\n", mbytes / t_yajl);
    printf("reader, no visitor:                %6.0f MB/s (%.2fx yajl)\n", mbytes / t_rd, t_yajl / t_rd);
    printf("devtrace stats:                    %6.0f MB/s\n", mbytes / t_stats);
    printf("devtrace check:                    %6.0f MB/s (target: 300)\n", mbytes / t_check);
    printf("check memory: %.1f bytes per event (peak RSS %ld KB less %ld KB of a child doing nothing; target: 16)\n",
           (double)(rss_check - rss_none) * 1024.0 / (double)events, rss_check, rss_none);

    /* the same trace through gzip */
    size_t glen = strlen(path) + 4;
    char *gz = malloc(glen);
    snprintf(gz, glen, "%s.gz", path);
    {
        static char buf[1 << 20];
        FILE *in = fopen(path, "rb");
        gzFile out = gzopen(gz, "wb1");
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            gzwrite(out, buf, (unsigned)n);
        fclose(in);
        gzclose(out);
    }
    double t_gunzip = 1e30, t_gz_stats = -1;
    uint64_t raw;
    for (int r = 0; r < repeats; r++) {
        t_gunzip = best(t_gunzip, time_gunzip(gz, &raw));
        t_gz_stats = best(t_gz_stats, run_child(gz, RUN_STATS, &rss));
    }
    printf("gzip (%.1f MB): gunzip alone %6.0f MB/s of JSON; devtrace stats through gzip %6.0f MB/s (%.0f%% of "
           "gunzip)\n",
           (double)file_size(gz) / 1e6, mbytes / t_gunzip, mbytes / t_gz_stats, 100.0 * t_gunzip / t_gz_stats);
    if (argc <= 1) {
        unlink(path);
        unlink(gz);
    }
    free(gz);
    return 0;
}

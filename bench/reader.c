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
#include "cli/commands.h"

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
   on one of 4 host threads, a kernel and its flow finish on one of 8
   streams, rows written one after another, each in start order, as the
   exporter does. */
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
    /* device rows: launch (t, i) on stream (t*per+i) % streams, 3 us each;
       each row in start order, as the exporter writes rows */
    uint64_t attr_ids = (threads * per_thread) / 4 + 2;
    uint64_t *attr = calloc(attr_ids, sizeof *attr);
    for (int s = 0; s < streams; s++) {
        for (uint64_t i = 0; i < per_thread; i++) {
            for (int t = 0; t < threads; t++) {
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

/* CPU time (user + system) of this thread so far. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One measurement: wall-clock and CPU seconds. The machine may be shared:
   wall time then includes waiting for a core, CPU time does not. */
typedef struct sample {
    double wall, cpu;
} sample;

static sample time_read(const char *path)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    double t0 = now_s(), c0 = cpu_s();
    while (read(fd, buf, sizeof buf) > 0) {
    }
    sample s = {now_s() - t0, cpu_s() - c0};
    close(fd);
    return s;
}

static sample time_yajl(const char *path)
{
    static unsigned char buf[1 << 20];
    FILE *f = fopen(path, "rb");
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    double t0 = now_s(), c0 = cpu_s();
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (yajl_parse(h, buf, n) != yajl_status_ok)
            break;
    yajl_complete_parse(h);
    sample s = {now_s() - t0, cpu_s() - c0};
    yajl_free(h);
    fclose(f);
    return s;
}

static sample time_gunzip(const char *path, uint64_t *out_bytes)
{
    static char buf[1 << 20];
    gzFile g = gzopen(path, "rb");
    gzbuffer(g, 1 << 20);
    double t0 = now_s(), c0 = cpu_s();
    int n;
    *out_bytes = 0;
    while ((n = gzread(g, buf, sizeof buf)) > 0)
        *out_bytes += (uint64_t)n;
    sample s = {now_s() - t0, cpu_s() - c0};
    gzclose(g);
    return s;
}

enum { RUN_NOTHING, RUN_READ, RUN_STATS, RUN_CHECK };

/* One reading in a child of its own, so that its peak RSS is its own;
   wall -1 when the reading failed. */
static sample run_child(const char *path, int what, long *maxrss_kb)
{
    int fds[2];
    if (pipe(fds) != 0)
        exit(1);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        FILE *sink = fopen("/dev/null", "w");
        char err[512];
        double t0 = now_s(), c0 = cpu_s();
        dt_rd_source *src = what == RUN_NOTHING ? NULL : dt__rd_open_file(path, err, sizeof err);
        int rc = 0;
        if (what == RUN_READ) {
            dt_rd_summary s;
            rc = dt__rd_read(src, NULL, NULL, &s, err, sizeof err);
            dt__rd_summary_free(&s);
        } else if (what == RUN_STATS) {
            rc = dt__stats_source(src, path, NULL, false, sink, stderr);
        } else if (what == RUN_CHECK) {
            rc = dt__check_source(src, path, sink, stderr);
        }
        double t = now_s() - t0, c = cpu_s() - c0;
        dt__rd_close(src);
        if (rc != 0)
            fprintf(stderr, "bench_reader: reading %s failed (%d)\n", path, rc);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double msg[3] = {rc == 0 ? t : -1, c, (double)ru.ru_maxrss};
        ssize_t w = write(fds[1], msg, sizeof msg);
        (void)w;
        _exit(0);
    }
    close(fds[1]);
    double msg[3] = {-1, 0, 0};
    ssize_t r = read(fds[0], msg, sizeof msg);
    (void)r;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    *maxrss_kb = (long)msg[2];
    return (sample){msg[0], msg[1]};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, min and max of n values (sorted in place). */
static void spread(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    *lo = v[0];
    *hi = v[n - 1];
}

#define MAX_REPEATS 64

/* MB/s of mbytes over each sample: wall median [min-max], CPU median. */
static void print_rate(const char *what, double mbytes, const sample *s, int n, const char *note)
{
    double wall[MAX_REPEATS], cpu[MAX_REPEATS], med, lo, hi, cmed, clo, chi;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].wall <= 0)
            continue;
        wall[k] = mbytes / s[i].wall;
        cpu[k] = mbytes / s[i].cpu;
        k++;
    }
    if (k == 0) {
        printf("%-34s failed\n", what);
        return;
    }
    spread(wall, k, &med, &lo, &hi);
    spread(cpu, k, &cmed, &clo, &chi);
    printf("%-34s %6.0f MB/s [%4.0f-%4.0f]  per CPU-second %6.0f MB/s%s\n", what, med, lo, hi, cmed, note);
}

/* Median over the repeats of a / b, both measured in the same repeat. */
static double median_ratio(const sample *a, const sample *b, int n, int use_cpu)
{
    double r[MAX_REPEATS], med, lo, hi;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (a[i].wall > 0 && b[i].wall > 0)
            r[k++] = use_cpu ? a[i].cpu / b[i].cpu : a[i].wall / b[i].wall;
    if (k == 0)
        return 0;
    spread(r, k, &med, &lo, &hi);
    return med;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/devtrace_bench_reader.json";
    uint64_t mb = argc > 2 ? strtoull(argv[2], NULL, 10) : 1024;
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (repeats < 1)
        repeats = 1;
    if (repeats > MAX_REPEATS)
        repeats = MAX_REPEATS;
    uint64_t events;
    double g0 = now_s();
    uint64_t bytes = write_trace(path, mb * 1000000, &events);
    printf("trace: %.1f MB, %" PRIu64 " events (written in %.1f s); %d repeats, each reading below once per "
           "repeat, interleaved\n",
           (double)bytes / 1e6, events, now_s() - g0, repeats);
    printf("MB/s of JSON: median of the repeats' wall-clock rates [min-max], and per CPU-second (user+system of the "
           "reading thread or child: what one core does when the machine is shared)\n");
    double mbytes = (double)bytes / 1e6;

    sample s_read[MAX_REPEATS], s_yajl[MAX_REPEATS], s_rd[MAX_REPEATS], s_stats[MAX_REPEATS],
        s_check[MAX_REPEATS];
    double check_bpe[MAX_REPEATS];
    long rss_none = 0, rss_check = 0, rss;
    for (int r = 0; r < repeats; r++) {
        s_read[r] = time_read(path);
        s_yajl[r] = time_yajl(path);
        s_rd[r] = run_child(path, RUN_READ, &rss);
        s_stats[r] = run_child(path, RUN_STATS, &rss);
        s_check[r] = run_child(path, RUN_CHECK, &rss_check);
        run_child(path, RUN_NOTHING, &rss_none);
        check_bpe[r] = (double)(rss_check - rss_none) * 1024.0 / (double)events;
    }
    char note[128];
    print_rate("read() of the file (baseline):", mbytes, s_read, repeats, "");
    print_rate("yajl, no callbacks (old parser):", mbytes, s_yajl, repeats, "");
    snprintf(note, sizeof note, "  (%.2fx yajl in the same repeat, %.2fx by CPU)",
             median_ratio(s_yajl, s_rd, repeats, 0), median_ratio(s_yajl, s_rd, repeats, 1));
    print_rate("reader, no visitor:", mbytes, s_rd, repeats, note);
    print_rate("devtrace stats:", mbytes, s_stats, repeats, "  (target: 300)");
    print_rate("devtrace check:", mbytes, s_check, repeats, "  (target: 300)");
    double bpe, bpe_lo, bpe_hi;
    spread(check_bpe, repeats, &bpe, &bpe_lo, &bpe_hi);
    printf("check memory: %.1f bytes per event [%.1f-%.1f] (peak RSS of a child that checks, %ld KB, less that of a "
           "child doing nothing, %ld KB; target: 16)\n",
           bpe, bpe_lo, bpe_hi, rss_check, rss_none);

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
    sample s_gunzip[MAX_REPEATS], s_gz_stats[MAX_REPEATS];
    uint64_t raw;
    for (int r = 0; r < repeats; r++) {
        s_gunzip[r] = time_gunzip(gz, &raw);
        s_gz_stats[r] = run_child(gz, RUN_STATS, &rss);
    }
    printf("gzip (%.1f MB):\n", (double)file_size(gz) / 1e6);
    print_rate("gunzip alone (baseline):", mbytes, s_gunzip, repeats, "");
    snprintf(note, sizeof note, "  (%.0f%% of gunzip's rate in the same repeat)",
             100.0 * median_ratio(s_gunzip, s_gz_stats, repeats, 0));
    print_rate("devtrace stats through gzip:", mbytes, s_gz_stats, repeats, note);
    if (argc <= 1) {
        unlink(path);
        unlink(gz);
    }
    free(gz);
    return 0;
}

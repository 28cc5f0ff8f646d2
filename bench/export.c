/*
 * Export throughput: a session of synthetic mixed events (kernels with a few
 * hundred names, copies, memsets, runtime calls with flows, nested ranges)
 * written as JSON (and gzip), each round beside a plain write() of the same
 * number of bytes to the same file system: the kernel's write path, which
 * bounds the export. Prints medians of the rounds and their spread; asserts
 * nothing.
 *
 *   bench_export [output-path] [events] [json|gzip|all] [rounds]
 *
 * (defaults: /tmp/devtrace_bench_export.json, 10,000,000, all, 5; a path on
 * tmpfs such as /dev/shm measures the exporter's CPU rather than a disk)
 */
#include "bench_median.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dt_internal.h"
#include "export/layout.h"

#define PERIOD_NS (UINT64_C(7889238) * UINT64_C(1000000000))
#define THREADS 4
#define STREAMS 8
#define DEVICES 2

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this process (all threads) in user mode, the exporter's own
   work, and in the kernel, mostly the copy into the page cache. */
typedef struct cpu_times { double user, sys; } cpu_times;
static cpu_times cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (cpu_times){(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6};
}

#define MAX_ROUNDS BENCH_MAX_ROUNDS

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static dt_rec *push(dt_session *s, int kind, uint64_t start, uint64_t end)
{
    dt_rec *r = dt_store_push(&s->store);
    if (!r) {
        fprintf(stderr, "out of memory building the session\n");
        exit(1);
    }
    r->kind = (uint8_t)kind;
    r->start = start;
    r->end = end;
    r->flags = DT_REC_REALTIME;
    return r;
}

/* Perfetto beside JSON: the same session written as .pftrace, its size and
   speed as ratios to the JSON export measured above in this run. */
static void bench_perfetto(dt_session *s, const char *json_path, uint64_t json_bytes, double json_s, int repeats,
                           double gz_s, uint64_t gz_bytes)
{
    size_t len = strlen(json_path) + 16;
    char *path = malloc(len);
    snprintf(path, len, "%s.pftrace", json_path);
    double best = 1e30, best_user = 1e30, best_layout = 1e30;
    for (int rep = 0; rep < repeats; rep++) {
        double l0 = now_s();
        dt_layout *l = dt_layout_build(s);
        double l1 = now_s();
        dt_layout_free(l);
        if (l1 - l0 < best_layout)
            best_layout = l1 - l0;
        double e0 = now_s(), u0 = cpu_now().user;
        if (dt_session_write(s, path, DT_FORMAT_PERFETTO) != DT_OK) {
            fprintf(stderr, "perfetto export: %s\n", dt_last_error());
            exit(1);
        }
        double e1 = now_s(), u1 = cpu_now().user;
        if (e1 - e0 < best)
            best = e1 - e0;
        if (u1 - u0 < best_user)
            best_user = u1 - u0;
    }
    uint64_t bytes = file_size(path);
    printf("Perfetto: %.1f MB in %.2f s: %.2f M events/s; %.1fx fewer bytes and %.1fx the speed of JSON "
           "(targets: 5x, 3x)\n",
           (double)bytes / 1e6, best, (double)s->store.count / 1e6 / best, (double)json_bytes / (double)bytes,
           json_s / best);
    printf("Perfetto, user CPU only: %.2f s: %.2f M events/s\n", best_user,
           (double)s->store.count / 1e6 / best_user);
    /* what bounds both writers: the layout they share, and the kernel's
       write path for their bytes */
    size_t chunk = 1u << 20;
    char *buf = calloc(1, chunk);
    size_t wlen = strlen(path) + 8;
    char *wpath = malloc(wlen);
    snprintf(wpath, wlen, "%s.write", path);
    double best_write = 1e30;
    for (int rep = 0; rep < repeats; rep++) {
        int fd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        double w0 = now_s();
        for (uint64_t done = 0; fd >= 0 && done < bytes; done += chunk)
            if (write(fd, buf, chunk) != (ssize_t)chunk)
                break;
        if (fd >= 0)
            close(fd);
        if (now_s() - w0 < best_write)
            best_write = now_s() - w0;
    }
    unlink(wpath);
    printf("of which the row layout both writers build first: %.2f s (%.0f%% of JSON's time); write() of %.1f MB "
           "alone: %.2f s\n",
           best_layout, 100.0 * best_layout / json_s, (double)bytes / 1e6, best_write);
    if (gz_s > 0) {
        snprintf(path, len, "%s.pftrace.gz", json_path);
        double best_gz = 1e30;
        for (int rep = 0; rep < repeats; rep++) {
            double e0 = now_s();
            if (dt_session_write(s, path, DT_FORMAT_PERFETTO_GZ) != DT_OK) {
                fprintf(stderr, "perfetto export: %s\n", dt_last_error());
                exit(1);
            }
            if (now_s() - e0 < best_gz)
                best_gz = now_s() - e0;
        }
        uint64_t pgz = file_size(path);
        printf("Perfetto gzip: %.1f MB in %.2f s; %.1fx fewer bytes than JSON, %.1fx fewer than JSON gzip, at %.1fx "
               "JSON gzip's speed\n",
               (double)pgz / 1e6, best_gz, (double)json_bytes / (double)pgz, (double)gz_bytes / (double)pgz,
               gz_s / best_gz);
    }
    free(wpath);
    free(buf);
    free(path);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/devtrace_bench_export.json";
    size_t target = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 10000000u;
    const char *mode = argc > 3 ? argv[3] : "all";
    int do_gzip = strcmp(mode, "json") != 0;
    int repeats = argc > 4 ? atoi(argv[4]) : 5;
    if (repeats < 1)
        repeats = 1;
    if (repeats > MAX_ROUNDS)
        repeats = MAX_ROUNDS;

    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s;
    if (dt_session_create(&cfg, &s) != DT_OK) {
        fprintf(stderr, "dt_session_create: %s\n", dt_last_error());
        return 1;
    }
    s->state = DT_STATE_STOPPED;
    uint64_t t0 = (UINT64_C(1764000000000000000) / PERIOD_NS + 1) * PERIOD_NS + 12345;
    s->window_start_ns = t0;
    for (int d = 0; d < DEVICES; d++) {
        dt_device_props *p = &s->devices[d];
        p->valid = 1;
        p->id = (uint32_t)d;
        snprintf(p->name, sizeof p->name, "Bench GPU %d", d);
        p->num_sms = 132;
        p->warp_size = 32;
        p->max_threads_per_sm = 2048;
        p->max_threads_per_block = 1024;
        p->max_blocks_per_sm = 32;
        p->regs_per_sm = 65536;
        p->regs_per_block = 65536;
        p->shared_mem_per_sm = 228 * 1024;
    }

    double g0 = now_s();
    /* ~200 kernel names, a third of them mangled (demangled once, at intern) */
    uint32_t knames[200];
    char buf[256];
    for (int i = 0; i < 200; i++) {
        if (i % 3 == 0)
            snprintf(buf, sizeof buf, "_Z15gemm_kernel_%03dPKfPfi", i);
        else if (i % 3 == 1)
            snprintf(buf, sizeof buf, "_ZN7cutlass6KernelILi%dEEEvPf", 100 + i);
        else
            snprintf(buf, sizeof buf, "elementwise_kernel_%d_vectorized4", i);
        knames[i] = dt_intern_kernel(&s->names, buf);
    }
    static const char *const api_names[] = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"};
    uint32_t anames[3];
    for (int i = 0; i < 3; i++)
        anames[i] = dt_intern_str(&s->names, api_names[i]);
    uint32_t rnames[16];
    for (int i = 0; i < 16; i++) {
        snprintf(buf, sizeof buf, "aten::op_%d", i);
        rnames[i] = dt_intern_str(&s->names, buf);
    }
    uint32_t configs[32];
    for (int i = 0; i < 32; i++) {
        dt_launch_config lc = {{1 + i * 7, 1 + i % 4, 1}, {32 << (i % 6), 1, 1}, (uint32_t)(16 + i * 4),
                               (uint32_t)(i % 5) * 4096, 0};
        configs[i] = dt_launch_intern(&s->launches, &lc);
    }

    uint64_t tcur[THREADS], scur[DEVICES * STREAMS];
    for (int i = 0; i < THREADS; i++)
        tcur[i] = t0 + 1000;
    for (int i = 0; i < DEVICES * STREAMS; i++)
        scur[i] = t0 + 1000;
    uint64_t corr = 1, range_id = DT_RANGE_ID_BASE;
    size_t events = 0;
    while (events + 2 < target) {
        int th = (int)(rnd() % THREADS);
        uint32_t tid = 1000 + (uint32_t)th;
        /* a range of 20 operations on this thread, the device work inside it */
        uint64_t rid = range_id++;
        uint64_t rstart = tcur[th];
        for (int op = 0; op < 20 && events + 3 < target; op++) {
            uint64_t a0 = tcur[th] + 200 + rnd() % 300, a1 = a0 + 1500 + rnd() % 3000;
            tcur[th] = a1;
            int sl = (int)(rnd() % (DEVICES * STREAMS));
            uint32_t pick = rnd() % 100;
            int kind = pick < 75 ? DT_EVENT_KERNEL : pick < 93 ? DT_EVENT_MEMCPY : DT_EVENT_MEMSET;
            dt_rec *a = push(s, DT_EVENT_RUNTIME, a0, a1);
            a->name = anames[kind == DT_EVENT_KERNEL ? 0 : kind == DT_EVENT_MEMCPY ? 1 : 2];
            a->lane = tid;
            a->context = s->pid;
            a->correlation = corr;
            a->u.api.cbid = kind == DT_EVENT_KERNEL ? 211 : kind == DT_EVENT_MEMCPY ? 41 : 49;
            a->flags |= DT_REC_HAS_EXTERNAL;
            a->external_id = rid;
            uint64_t d0 = scur[sl] > a1 ? scur[sl] + 100 : a1 + 2000;
            uint64_t d1 = d0 + 1000 + rnd() % 50000;
            scur[sl] = d1;
            dt_rec *d = push(s, kind, d0, d1);
            d->device = (uint16_t)(sl / STREAMS);
            d->lane = 7 + (uint32_t)(sl % STREAMS);
            d->context = 1;
            d->correlation = corr++;
            d->flags |= DT_REC_HAS_EXTERNAL;
            d->external_id = rid;
            if (kind == DT_EVENT_KERNEL) {
                d->name = knames[rnd() % 200];
                d->u.kernel.config = configs[rnd() % 32];
                d->u.kernel.queued_delta = DT_DELTA_UNKNOWN;
                d->u.kernel.submitted_delta = DT_DELTA_UNKNOWN;
            } else if (kind == DT_EVENT_MEMCPY) {
                d->u.memcpy.bytes = 4096u << (rnd() % 12);
                d->u.memcpy.copy_kind = (uint8_t)(1 + rnd() % 3);
                d->u.memcpy.src_kind = DT_MEM_PINNED;
                d->u.memcpy.dst_kind = DT_MEM_DEVICE;
                d->flags |= DT_REC_ASYNC;
            } else {
                d->u.memset.bytes = 1u << (10 + rnd() % 16);
                d->u.memset.memory_kind = DT_MEM_DEVICE;
            }
            events += 2;
        }
        tcur[th] += 100;
        dt_rec *r = push(s, DT_EVENT_RANGE, rstart, tcur[th]);
        r->name = rnames[rid % 16];
        r->lane = tid;
        r->context = s->pid;
        r->flags |= DT_REC_HAS_EXTERNAL;
        r->external_id = rid;
        tcur[th] += 100;
        events++;
    }
    uint64_t end = t0;
    for (int i = 0; i < THREADS; i++)
        end = tcur[i] > end ? tcur[i] : end;
    for (int i = 0; i < DEVICES * STREAMS; i++)
        end = scur[i] > end ? scur[i] : end;
    s->window_end_ns = end + 1000;
    double g1 = now_s();

    size_t launch_bytes = (size_t)s->launches.cap * sizeof(dt_launch_config) +
                          (s->launches.table_mask ? (size_t)(s->launches.table_mask + 1) * sizeof(uint32_t) : 0);
    size_t held = dt_store_bytes(&s->store) + s->names.bytes + launch_bytes;
    printf("events:                 %zu (built in %.2f s)\n", s->store.count, g1 - g0);
    printf("bytes per stored event: %.1f (store %zu + names %zu + launch configs %zu)\n",
           (double)held / (double)s->store.count, dt_store_bytes(&s->store), s->names.bytes, launch_bytes);

    /* Each round: the export, then a plain write of as many bytes to the
       same file system, then (all) gzip. Ratios are taken within a round. */
    uint64_t json_bytes = 0, gz_bytes = 0;
    double json_s[MAX_ROUNDS], json_user[MAX_ROUNDS], json_sys[MAX_ROUNDS], write_s[MAX_ROUNDS],
        write_sys[MAX_ROUNDS], ratio[MAX_ROUNDS], gz_s[MAX_ROUNDS], gz_user[MAX_ROUNDS];
    size_t gz_len = strlen(path) + 4, wlen = strlen(path) + 8;
    char *gz_path = malloc(gz_len), *wpath = malloc(wlen);
    snprintf(gz_path, gz_len, "%s.gz", path);
    snprintf(wpath, wlen, "%s.write", path);
    size_t chunk = 1u << 20;
    char *src = malloc(chunk);
    memset(src, 'x', chunk);
    /* the number of bytes to write plainly: the trace's, from a first export */
    if (dt_export_chrome(s, path, DT_FORMAT_JSON) != DT_OK) {
        fprintf(stderr, "export: %s\n", dt_last_error());
        return 1;
    }
    json_bytes = file_size(path);
    for (int rep = 0; rep < repeats; rep++) {
        /* the same bytes written plainly, with the trace out of the way */
        unlink(path);
        cpu_times c0 = cpu_now();
        int fd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        double w0 = now_s();
        for (uint64_t done = 0; fd >= 0 && done < json_bytes; done += chunk) {
            size_t n = json_bytes - done < chunk ? (size_t)(json_bytes - done) : chunk;
            if (write(fd, src, n) != (ssize_t)n)
                break;
        }
        if (fd >= 0)
            close(fd);
        write_s[rep] = now_s() - w0;
        cpu_times c1 = cpu_now();
        write_sys[rep] = c1.sys - c0.sys;
        unlink(wpath);

        double e0 = now_s();
        if (dt_export_chrome(s, path, DT_FORMAT_JSON) != DT_OK) {
            fprintf(stderr, "export: %s\n", dt_last_error());
            return 1;
        }
        json_s[rep] = now_s() - e0;
        cpu_times c2 = cpu_now();
        json_user[rep] = c2.user - c1.user;
        json_sys[rep] = c2.sys - c1.sys;
        ratio[rep] = json_s[rep] / write_s[rep];

        if (do_gzip) {
            cpu_times z0 = cpu_now();
            double z_start = now_s();
            if (dt_export_chrome(s, gz_path, DT_FORMAT_JSON_GZ) != DT_OK) {
                fprintf(stderr, "export: %s\n", dt_last_error());
                return 1;
            }
            gz_s[rep] = now_s() - z_start;
            gz_user[rep] = cpu_now().user - z0.user;
            gz_bytes = file_size(gz_path);
        }
    }
    /* the traces of the last round stay for `devtrace check` when a path was
       given */
    if (argc <= 1) {
        unlink(path);
        unlink(gz_path);
    }
    double lo, hi, x;
    double js = bench_median(json_s, repeats, &lo, &hi);
    double ws = bench_median(write_s, repeats, &x, &x);
    double r = bench_median(ratio, repeats, &x, &x);
    double rlo, rhi;
    bench_median(ratio, repeats, &rlo, &rhi);
    double ju = bench_median(json_user, repeats, &x, &x), jsys = bench_median(json_sys, repeats, &x, &x);
    double wsys = bench_median(write_sys, repeats, &x, &x);
    double mb = (double)json_bytes / 1e6, ev = (double)s->store.count;
    printf("rounds: %d (medians; min..max)\n", repeats);
    printf("JSON:  %.1f MB, %.1f bytes per event, in %.3f s (%.3f..%.3f): %.2f M events/s (target >= 2.5), "
           "%.0f MB/s\n", mb, (double)json_bytes / ev, js, lo, hi, ev / js / 1e6, mb / js);
    printf("plain write() of the same bytes: %.3f s (%.0f MB/s, %.3f s of it in the kernel)\n", ws, mb / ws, wsys);
    printf("JSON export / plain write in the same round: %.2fx (%.2f..%.2f; target <= 1.2)\n", r, rlo, rhi);
    printf("JSON, CPU: user %.3f s (%.0f MB of output per s of user CPU; target >= 1000), kernel %.3f s\n", ju,
           mb / ju, jsys);
    double gs = 0;
    if (do_gzip) {
        gs = bench_median(gz_s, repeats, &lo, &hi);
        double gu = bench_median(gz_user, repeats, &x, &x);
        printf("gzip:  %.1f MB -> %.1f MB in %.3f s (%.3f..%.3f): %.0f MB/s uncompressed, %.2f M events/s, "
               "ratio %.1f; user CPU %.3f s\n",
               mb, (double)gz_bytes / 1e6, gs, lo, hi, mb / gs, ev / 1e6 / gs, (double)json_bytes / (double)gz_bytes,
               gu);
    }
    bench_perfetto(s, path, json_bytes, js, repeats, gs, gz_bytes);
    free(wpath);
    free(gz_path);
    free(src);
    dt_session_destroy(s);
    return 0;
}

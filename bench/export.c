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
 * BENCH_EXPORT_LANES=n formats on n lanes (1 to 4) whatever the machine
 * (bench/export_lanes.sh compares them on a machine with the cores).
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
#include <stddef.h>
#include <unistd.h>

#include "dt_internal.h"
#include "base/out.h"
#include "core/recording.h"
#include "export/layout/layout.h"

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
    dt_rec *r = dt__store_push(&s->sink.store);
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

/* Where a .pftrace's bytes go, by walking its wire format: per slice (a
   TYPE_SLICE_BEGIN TrackEvent), the framing Perfetto's format needs (the
   packets, their timestamps and sequence ids, the TrackEvents' type, name
   and category, the END packets), the args by name, the flows, and what
   is written once (descriptors, interned strings). */
#define BUDGET_ARGS 32
typedef struct pf_budget {
    uint64_t slices;
    uint64_t framing, flows, once, args_total;
    struct { char name[48]; uint64_t bytes; } arg[BUDGET_ARGS];
    int nargs;
} pf_budget;

static uint64_t wire_varint(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80)
            break;
    }
    return v;
}

/* The next field of [*p, end): its number, wire type, and for varints the
   value, for length-delimited ones the payload. 0 at the end. */
static int wire_field(const uint8_t **p, const uint8_t *end, unsigned *field, unsigned *wt, uint64_t *v,
                      const uint8_t **payload, size_t *len)
{
    if (*p >= end)
        return 0;
    uint64_t tag = wire_varint(p, end);
    *field = (unsigned)(tag >> 3);
    *wt = (unsigned)(tag & 7);
    *len = 0;
    switch (*wt) {
    case 0: *v = wire_varint(p, end); break;
    case 1: *p += 8; break;
    case 5: *p += 4; break;
    case 2:
        *len = (size_t)wire_varint(p, end);
        *payload = *p;
        *p += *len;
        break;
    default: *p = end; return 0;
    }
    return *p <= end;
}

/* debug annotation names per sequence: enough for the writer's few */
#define BUDGET_SEQS 4096
#define BUDGET_NAMES 64
static void pf_budget_file(const char *path, pf_budget *b)
{
    memset(b, 0, sizeof *b);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(data);
        return;
    }
    fclose(f);
    static char names[BUDGET_SEQS][BUDGET_NAMES][48];
    memset(names, 0, sizeof names);
    const uint8_t *p = data, *end = data + size;
    unsigned field, wt;
    uint64_t v;
    const uint8_t *pl;
    size_t len;
    for (const uint8_t *at = p; wire_field(&p, end, &field, &wt, &v, &pl, &len); at = p) {
        size_t packet = (size_t)(p - at); /* with its tag and length */
        const uint8_t *q = pl, *qe = pl + len;
        uint64_t seq = 0;
        const uint8_t *te = NULL;
        size_t te_len = 0, other = 0;
        for (const uint8_t *r = q; wire_field(&r, qe, &field, &wt, &v, &pl, &len);)
            if (field == 10)
                seq = v;
        if (seq >= BUDGET_SEQS)
            seq = 0;
        const uint8_t *fs = q;
        while (wire_field(&q, qe, &field, &wt, &v, &pl, &len)) {
            size_t fbytes = (size_t)(q - fs);
            if (field == 11) {
                te = pl;
                te_len = len;
            } else if (field == 12) {
                other += fbytes;
                const uint8_t *i = pl, *ie = pl + len;
                unsigned f2, w2;
                uint64_t v2;
                const uint8_t *p2;
                size_t l2;
                while (wire_field(&i, ie, &f2, &w2, &v2, &p2, &l2)) {
                    if (f2 != 3)
                        continue;
                    uint64_t iid = 0;
                    const uint8_t *nm = NULL;
                    size_t nlen = 0;
                    unsigned f3, w3;
                    uint64_t v3;
                    const uint8_t *p3;
                    size_t l3;
                    for (const uint8_t *j = p2; wire_field(&j, p2 + l2, &f3, &w3, &v3, &p3, &l3);) {
                        if (f3 == 1)
                            iid = v3;
                        else if (f3 == 2)
                            nm = p3, nlen = l3;
                    }
                    if (iid < BUDGET_NAMES && nm)
                        snprintf(names[seq][iid], sizeof names[seq][iid], "%.*s", (int)nlen, (const char *)nm);
                }
            } else if (field == 13 && (v & 1)) {
                memset(names[seq], 0, sizeof names[seq]);
                other += fbytes;
            } else if (field != 8 && field != 10) {
                other += fbytes;
            }
            fs = q;
        }
        if (!te) {
            b->once += packet;
            continue;
        }
        /* what is not the TrackEvent's args or flows is framing */
        size_t args = 0, flows = 0;
        int begin = 0;
        const uint8_t *t = te, *te_end = te + te_len;
        fs = t;
        while (wire_field(&t, te_end, &field, &wt, &v, &pl, &len)) {
            size_t fbytes = (size_t)(t - fs);
            if (field == 9 && v == 1)
                begin = 1;
            if (field == 4) {
                uint64_t iid = 0;
                unsigned f2, w2;
                uint64_t v2;
                const uint8_t *p2;
                size_t l2;
                for (const uint8_t *j = pl; wire_field(&j, pl + len, &f2, &w2, &v2, &p2, &l2);)
                    if (f2 == 1)
                        iid = v2;
                const char *nm = iid < BUDGET_NAMES && names[seq][iid][0] ? names[seq][iid] : "?";
                int k = 0;
                while (k < b->nargs && strcmp(b->arg[k].name, nm) != 0)
                    k++;
                if (k == b->nargs && k < BUDGET_ARGS)
                    snprintf(b->arg[b->nargs++].name, sizeof b->arg[0].name, "%s", nm);
                if (k < BUDGET_ARGS)
                    b->arg[k].bytes += fbytes;
                args += fbytes;
            } else if (field == 36 || field == 42 || field == 47 || field == 48) {
                flows += fbytes;
            }
            fs = t;
        }
        b->slices += begin;
        b->args_total += args;
        b->flows += flows;
        b->once += other;
        b->framing += packet - other - args - flows;
    }
    free(data);
}

static void pf_budget_print(const pf_budget *b, uint64_t file_bytes, uint64_t json_bytes)
{
    if (!b->slices)
        return;
    double n = (double)b->slices;
    printf("Perfetto bytes per slice (%llu slices): %.1f in all = framing %.1f (two packets with their timestamps and "
           "sequence ids, the TrackEvents' type, name and category) + args %.1f + flows %.1f + written once %.1f\n",
           (unsigned long long)b->slices, (double)file_bytes / n, (double)b->framing / n, (double)b->args_total / n,
           (double)b->flows / n, (double)b->once / n);
    printf("  args per slice by name:");
    for (int k = 0; k < b->nargs; k++)
        printf("%s %s %.2f", k ? "," : "", b->arg[k].name, (double)b->arg[k].bytes / n);
    printf("\n  5x fewer bytes than JSON would need %.1f bytes per slice: framing and flows alone take %.1f, "
           "leaving %.1f for the args the JSON carries (%.1f now)\n",
           (double)json_bytes / 5.0 / n, (double)(b->framing + b->flows) / n,
           (double)json_bytes / 5.0 / n - (double)(b->framing + b->flows + b->once) / n, (double)b->args_total / n);
}

/* write() of n bytes of `src` (chunk bytes, repeated) to path, timed */
static double plain_write(const char *path, const char *src, size_t chunk, uint64_t n, double *sys)
{
    cpu_times c0 = cpu_now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double w0 = now_s();
    for (uint64_t done = 0; fd >= 0 && done < n; done += chunk) {
        size_t k = n - done < chunk ? (size_t)(n - done) : chunk;
        if (write(fd, src, k) != (ssize_t)k)
            break;
    }
    if (fd >= 0)
        close(fd);
    double w = now_s() - w0;
    *sys = cpu_now().sys - c0.sys;
    unlink(path);
    return w;
}

typedef struct timed {
    double wall, user, sys;
} timed;

static timed export_once(dt_session *s, const char *path, dt_format format)
{
    cpu_times c0 = cpu_now();
    double w0 = now_s();
    dt_status st = dt_session_write(s, path, format);
    timed t = {now_s() - w0, 0, 0};
    cpu_times c1 = cpu_now();
    if (st != DT_OK) {
        fprintf(stderr, "export %s: %s\n", path, dt_last_error());
        exit(1);
    }
    t.user = c1.user - c0.user;
    t.sys = c1.sys - c0.sys;
    return t;
}

#define MED(field) med_of(rounds, repeats, offsetof(round_figures, field), &lo, &hi)
typedef struct round_figures {
    double write_s, write_sys, json_s, json_user, json_sys, json_ratio;
    double pf_s, pf_user, pf_sys, pf_speed, pf_write_s;
    double layout_cpu, layout_s;
    double after_layout_ratio; /* (the export less the layout alone) / the plain write */
    double gz_s, gz_user, pfgz_s;
} round_figures;

static double med_of(const round_figures *r, int n, size_t off, double *lo, double *hi)
{
    double v[MAX_ROUNDS];
    for (int k = 0; k < n; k++)
        v[k] = *(const double *)((const char *)&r[k] + off);
    return bench_median(v, n, lo, hi);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/devtrace_bench_export.json";
    size_t target = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 10000000u;
    const char *mode = argc > 3 ? argv[3] : "all";
    int do_gzip = strcmp(mode, "json") != 0;
    int layout_only = strcmp(mode, "layout") == 0;
    int repeats = argc > 4 ? atoi(argv[4]) : 5;
    if (repeats < 1)
        repeats = 1;
    if (repeats > MAX_ROUNDS)
        repeats = MAX_ROUNDS;
    if (getenv("BENCH_EXPORT_LANES"))
        dt__out_lane_limit = atoi(getenv("BENCH_EXPORT_LANES"));

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
        knames[i] = dt__intern_kernel(&s->names, buf);
    }
    static const char *const api_names[] = {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"};
    uint32_t anames[3];
    for (int i = 0; i < 3; i++)
        anames[i] = dt__intern_str(&s->names, api_names[i]);
    uint32_t rnames[16];
    for (int i = 0; i < 16; i++) {
        snprintf(buf, sizeof buf, "aten::op_%d", i);
        rnames[i] = dt__intern_str(&s->names, buf);
    }
    uint32_t configs[32];
    for (int i = 0; i < 32; i++) {
        dt_launch_config lc = {{1 + i * 7, 1 + i % 4, 1}, {32 << (i % 6), 1, 1}, (uint32_t)(16 + i * 4),
                               (uint32_t)(i % 5) * 4096, 0};
        configs[i] = dt__launch_intern(&s->launches, &lc);
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
                          (s->launches.index.slots ? (s->launches.index.mask + 1) * sizeof(dt_u64slot) : 0);
    size_t held = dt__store_bytes(&s->sink.store) + s->names.bytes + launch_bytes;
    printf("events:                 %zu (built in %.2f s)\n", s->sink.store.count, g1 - g0);
    printf("bytes per stored event: %.1f (store %zu + names %zu + launch configs %zu)\n",
           (double)held / (double)s->sink.store.count, dt__store_bytes(&s->sink.store), s->names.bytes, launch_bytes);

    if (layout_only) {
        /* the layout alone, for counting its instructions or its CPU time */
        double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], lo, hi, x;
        for (int rep = 0; rep < repeats; rep++) {
            cpu_times c0 = cpu_now();
            double w0 = now_s();
            dt_recording rec;
            dt_layout *l = dt__recording_of(s, &rec) == 0 ? dt__wr_layout_build(&rec) : NULL;
            wall[rep] = now_s() - w0;
            cpu_times c1 = cpu_now();
            cpu[rep] = c1.user + c1.sys - c0.user - c0.sys;
            if (!l) {
                fprintf(stderr, "out of memory building the layout\n");
                return 1;
            }
            dt__wr_layout_free(l);
        }
        double w = bench_median(wall, repeats, &lo, &hi);
        printf("layout: %.3f s (%.3f..%.3f), %.0f ns per event; CPU (all its threads) %.3f s\n", w, lo, hi,
               w * 1e9 / (double)s->sink.store.count, bench_median(cpu, repeats, &x, &x));
        dt_session_destroy(s);
        return 0;
    }

    /* Each round, in this order: a plain write() of the JSON's bytes to
       the same file system, the JSON export, a plain write of the
       Perfetto trace's bytes, the Perfetto export, the layout alone (what
       both writers build first), then (all) gzip of both. Ratios are taken
       within a round. */
    size_t plen = strlen(path) + 16;
    char *gz_path = malloc(plen), *wpath = malloc(plen), *pf_path = malloc(plen), *pfgz_path = malloc(plen);
    snprintf(gz_path, plen, "%s.gz", path);
    snprintf(wpath, plen, "%s.write", path);
    snprintf(pf_path, plen, "%s.pftrace", path);
    snprintf(pfgz_path, plen, "%s.pftrace.gz", path);
    size_t chunk = 1u << 20;
    char *src = malloc(chunk);
    memset(src, 'x', chunk);
    /* the numbers of bytes to write plainly: the traces', from a first export */
    export_once(s, path, DT_FORMAT_JSON);
    export_once(s, pf_path, DT_FORMAT_PERFETTO);
    uint64_t json_bytes = file_size(path), pf_bytes = file_size(pf_path), gz_bytes = 0, pfgz_bytes = 0;
    round_figures rounds[MAX_ROUNDS];
    memset(rounds, 0, sizeof rounds);
    for (int rep = 0; rep < repeats; rep++) {
        round_figures *r = &rounds[rep];
        /* the same bytes written plainly, with the trace out of the way */
        unlink(path);
        r->write_s = plain_write(wpath, src, chunk, json_bytes, &r->write_sys);
        timed j = export_once(s, path, DT_FORMAT_JSON);
        r->json_s = j.wall;
        r->json_user = j.user;
        r->json_sys = j.sys;
        r->json_ratio = j.wall / r->write_s;
        unlink(pf_path);
        double x;
        r->pf_write_s = plain_write(wpath, src, chunk, pf_bytes, &x);
        timed pf = export_once(s, pf_path, DT_FORMAT_PERFETTO);
        r->pf_s = pf.wall;
        r->pf_user = pf.user;
        r->pf_sys = pf.sys;
        r->pf_speed = j.wall / pf.wall;
        cpu_times c0 = cpu_now();
        double l0 = now_s();
        dt_recording rec;
        dt_layout *l = dt__recording_of(s, &rec) == 0 ? dt__wr_layout_build(&rec) : NULL;
        r->layout_s = now_s() - l0;
        cpu_times c1 = cpu_now();
        r->layout_cpu = c1.user + c1.sys - c0.user - c0.sys;
        r->after_layout_ratio = (r->json_s - r->layout_s) / r->write_s;
        dt__wr_layout_free(l);
        if (do_gzip) {
            timed z = export_once(s, gz_path, DT_FORMAT_JSON_GZ);
            r->gz_s = z.wall;
            r->gz_user = z.user;
            gz_bytes = file_size(gz_path);
            r->pfgz_s = export_once(s, pfgz_path, DT_FORMAT_PERFETTO_GZ).wall;
            pfgz_bytes = file_size(pfgz_path);
        }
    }
    /* the traces of the last round stay for `devtrace check` when a path was
       given */
    if (argc <= 1) {
        unlink(path);
        unlink(gz_path);
        unlink(pf_path);
        unlink(pfgz_path);
    }
    double lo, hi;
    double ev = (double)s->sink.store.count, mb = (double)json_bytes / 1e6, pmb = (double)pf_bytes / 1e6;
    printf("rounds: %d (medians; min..max); formatting lanes: %d, each writing its own units in turn (gzip: %d "
           "formatting, one compressing)\n",
           repeats, dt__out_lanes(), dt__out_lanes() < 2 ? dt__out_lanes() : 2);

    double js = MED(json_s), jlo = lo, jhi = hi;
    printf("JSON:  %.1f MB, %.1f bytes per event, in %.3f s (%.3f..%.3f): %.2f M events/s (target >= 2.5), %.0f MB/s\n",
           mb, (double)json_bytes / ev, js, jlo, jhi, ev / js / 1e6, mb / js);
    double ws = MED(write_s), wsys = MED(write_sys);
    printf("plain write() of the same bytes: %.3f s (%.0f MB/s, %.3f s of it in the kernel)\n", ws, mb / ws, wsys);
    double ratio = MED(json_ratio);
    printf("JSON export / plain write in the same round: %.2fx (%.2f..%.2f; target <= 1.2)\n", ratio, lo, hi);
    double ju = MED(json_user), jsys = MED(json_sys), lcpu = MED(layout_cpu), lwall = MED(layout_s);
    printf("JSON, CPU: user %.3f s (%.0f MB of output per s of user CPU; target >= 1000), kernel %.3f s\n", ju,
           mb / ju, jsys);
    /* what bounds it: the layout on one thread, then formatting (user
       CPU) and the kernel's copy spread over the machine's cores */
    /* the export's CPU spread over the machine's cores: its wall clock
       with the cores to itself, at best */
    double cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
    double floor_s = (ju + jsys) / cores;
    printf("JSON, what bounds it: %.3f s of CPU in all (the layout %.3f of it, %.0f ns per event, %.3f s of wall "
           "clock), on %.0f cores: at least %.3f s with the cores to itself (%.2f M events/s, %.2fx the plain "
           "write); the plain write's %.3f s is the kernel's copy alone\n",
           ju + jsys, lcpu, lcpu * 1e9 / ev, lwall, cores, floor_s, ev / 1e6 / floor_s, floor_s / ws, ws);
    /* the CPU the target leaves devtrace: the cores over 1.2 plain writes,
       less the kernel's part of the export */
    double budget = cores * 1.2 * ws - jsys;
    printf("JSON within 1.2x the plain write on %.0f cores leaves devtrace %.3f s of its own CPU (layout and "
           "formatting) beside the kernel's %.3f s: it takes %.3f s, %.1fx that\n",
           cores, budget > 0 ? budget : 0.0, jsys, ju, budget > 0 ? ju / budget : 0.0);

    /* the export in two phases: the layout, which sees every record before
       the first row is final, then formatting and writing, whose writes go
       through the kernel one at a time */
    double after = MED(after_layout_ratio), alo = lo, ahi = hi, room = (1.2 - after) * ws;
    printf("JSON, its phases: the layout, %.3f s before the first byte (%.2fx the plain write); then formatting and "
           "writing (the export less the layout alone): %.2fx the plain write (%.2f..%.2f), the kernel's write path "
           "one write at a time while the other lanes format\n",
           lwall, lwall / ws, after, alo, ahi);
    if (room > 0)
        printf("JSON within 1.2x the plain write: beside that writing phase the layout would have to take at most "
               "%.3f s (%.0f ns per event); it takes %.3f s (%.0f ns per event)\n",
               room, room * 1e9 / ev, lwall, lwall * 1e9 / ev);
    else
        printf("JSON within 1.2x the plain write: the writing phase alone exceeds it, nothing is left for the "
               "layout's %.3f s\n",
               lwall);
    double ps = MED(pf_s), plo = lo, phi = hi, speed = MED(pf_speed), slo = lo, shi = hi;
    printf("Perfetto: %.1f MB in %.3f s (%.3f..%.3f): %.2f M events/s; %.1fx fewer bytes and %.2fx the speed of JSON "
           "in the same round (%.2f..%.2f; targets: 5x, 3x)\n",
           pmb, ps, plo, phi, ev / 1e6 / ps, (double)json_bytes / (double)pf_bytes, speed, slo, shi);
    double pu = MED(pf_user), psys = MED(pf_sys), pws = MED(pf_write_s);
    printf("Perfetto, CPU: user %.3f s, kernel %.3f s (JSON: %.3f, %.3f); of it the layout both build first %.3f s; "
           "write() of its bytes alone %.3f s\n",
           pu, psys, ju, jsys, lcpu, pws);
    printf("Perfetto, what bounds its speed beside JSON's: both build the same layout first (%.3f s of CPU, %.3f s "
           "of wall clock); beyond it Perfetto's CPU is %.3f s against JSON's %.3f s (%.1fx); with the cores to "
           "themselves at best %.2fx JSON's speed\n",
           lcpu, lwall, pu + psys - lcpu, ju + jsys - lcpu, (ju + jsys - lcpu) / (pu + psys - lcpu),
           floor_s / ((pu + psys) / cores));
    pf_budget b;
    pf_budget_file(pf_path, &b);
    pf_budget_print(&b, pf_bytes, json_bytes);
    if (do_gzip) {
        double gs = MED(gz_s), glo = lo, ghi = hi, gu = MED(gz_user), pgs = MED(pfgz_s);
        printf("gzip:  %.1f MB -> %.1f MB in %.3f s (%.3f..%.3f): %.0f MB/s uncompressed, %.2f M events/s, "
               "ratio %.1f; user CPU %.3f s\n",
               mb, (double)gz_bytes / 1e6, gs, glo, ghi, mb / gs, ev / 1e6 / gs, (double)json_bytes / (double)gz_bytes,
               gu);
        printf("Perfetto gzip: %.1f MB in %.3f s; %.1fx fewer bytes than JSON, %.1fx fewer than JSON gzip, at %.1fx "
               "JSON gzip's speed\n",
               (double)pfgz_bytes / 1e6, pgs, (double)json_bytes / (double)pfgz_bytes,
               (double)gz_bytes / (double)pfgz_bytes, gs / pgs);
    }
    free(pf_path);
    free(pfgz_path);
    free(wpath);
    free(gz_path);
    free(src);
    dt_session_destroy(s);
    return 0;
}

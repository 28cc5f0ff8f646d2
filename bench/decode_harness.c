/* The decode benchmark's measurements, shared by every vendor (see
   decode_harness.h). */
#include "bench_median.h"
#include "decode_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fills the correlation map from the logged links, as dt_session_stop does. */
DT_HIDDEN void dt__corr_merge_chunks(dt_session *s, int keep);

#define MAX_ROUNDS BENCH_MAX_ROUNDS

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* wall time; CPU time of the decoding thread (what the vendor's completion
   callback waits for) and of the whole process (the preparer included) */
typedef struct run { double wall, thread, cpu; size_t bytes, stored; uint64_t lost; } run;

/* Decode in->records records into s's store, then merge the links. */
static run decode_all(const decode_input *in, dt_session *s)
{
    run r = {0, 0, 0, 0, 0, 0};
    uint64_t lost0 = dt_session_loss_total(s);
    double w0 = bench_now_s(), t0 = clock_s(CLOCK_THREAD_CPUTIME_ID), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    size_t done = 0;
    for (size_t i = 0; done < in->records; i = (i + 1) % in->buffer_count) {
        in->decode(s, in->buffers[i], in->valid[i]);
        done += in->records_in[i];
        r.bytes += in->valid[i];
    }
    dt__core_lock(s);
    dt__corr_merge_chunks(s, 1);
    dt__core_unlock(s);
    r.wall = bench_now_s() - w0;
    r.thread = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    r.cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    r.stored = s->sink.store.count;
    r.lost = dt_session_loss_total(s) - lost0;
    return r;
}

static run copy_all(const decode_input *in, size_t bytes, uint8_t *dst)
{
    run r = {0, 0, 0, 0, 0, 0};
    double w0 = bench_now_s(), t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (size_t i = 0; r.bytes < bytes; i = (i + 1) % in->buffer_count) {
        memcpy(dst, in->buffers[i], in->valid[i]);
        r.bytes += in->valid[i];
        __asm__ __volatile__("" : : "r"(dst) : "memory");
    }
    r.wall = bench_now_s() - w0;
    r.thread = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    return r;
}

static dt_session *new_session(const decode_input *in)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = in->capture;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) != DT_OK) {
        fprintf(stderr, "%s: %s\n", in->vendor, dt_last_error());
        exit(1);
    }
    return s;
}

typedef struct series {
    double wall[MAX_ROUNDS], thread[MAX_ROUNDS], cpu[MAX_ROUNDS];
    double wall_ratio[MAX_ROUNDS], thread_ratio[MAX_ROUNDS];
} series;

static void add(series *se, int k, run r, run copy)
{
    se->wall[k] = r.wall;
    se->thread[k] = r.thread;
    se->cpu[k] = r.cpu;
    se->wall_ratio[k] = r.wall / copy.wall;
    se->thread_ratio[k] = r.thread / copy.thread;
}

static void report(const decode_input *in, const char *what, const series *se, int rounds)
{
    double lo, hi, tlo, thi, x;
    double t = bench_median(se->wall, rounds, &x, &x);
    double r = bench_median(se->wall_ratio, rounds, &lo, &hi);
    double tr = bench_median(se->thread_ratio, rounds, &tlo, &thi);
    double th = bench_median(se->thread, rounds, &x, &x);
    double c = bench_median(se->cpu, rounds, &x, &x);
    printf("%s: %s\n", in->vendor, what);
    printf("%s:   wall %.3f s, %.1f M records/s, %.1f ns/record: %.2fx memcpy (%.2f..%.2f)\n", in->vendor, t,
           (double)in->records / t / 1e6, t / (double)in->records * 1e9, r, lo, hi);
    printf("%s:   decoding thread's CPU %.3f s: %.2fx memcpy's CPU (%.2f..%.2f); process CPU %.3f s\n",
           in->vendor, th, tr, tlo, thi, c);
}

void decode_bench_run(const decode_input *in, int rounds)
{
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    if (rounds < 1) rounds = 1;
    uint8_t *dst = aligned_alloc(64, 4u << 20);
    if (!dst) return;
    double copy[MAX_ROUNDS], copy_cpu[MAX_ROUNDS];
    series fresh, prepared, mapped;
    size_t bytes = 0, stored = 0;
    uint64_t lost = 0;
    for (int k = 0; k < rounds; k++) {
        /* a fresh store: the decoding thread faults every page in */
        dt__store_release_spares();
        dt_session *s = new_session(in);
        run f = decode_all(in, s);
        dt_session_destroy(s);

        /* a fresh store, its chunks faulted in ahead by the preparer (from
           its second chunk on), as while a session records */
        dt__store_release_spares();
        dt__store_prepare(1);
        s = new_session(in);
        run p = decode_all(in, s);
        dt__store_prepare(0);

        /* the same store again, emptied: its memory is mapped already */
        s->sink.store.count = 0;
        run m = decode_all(in, s);
        dt_session_destroy(s);

        bytes = f.bytes;
        stored = m.stored;
        lost += f.lost + p.lost + m.lost;
        run cp = copy_all(in, f.bytes, dst);
        copy[k] = cp.wall;
        copy_cpu[k] = cp.thread;
        add(&fresh, k, f, cp);
        add(&prepared, k, p, cp);
        add(&mapped, k, m, cp);
    }
    free(dst);
    double lo, hi, c = bench_median(copy, rounds, &lo, &hi), cc = bench_median(copy_cpu, rounds, &lo, &hi);
    printf("%s: %zu records (%.1f MB of vendor buffers) per run, %zu events stored, %llu lost; "
           "median of %d rounds (min..max of the ratio)\n",
           in->vendor, in->records, (double)bytes / 1e6, stored, (unsigned long long)lost, rounds);
    printf("%s: memcpy of the same bytes: wall %.3f s (%.2f GB/s), CPU %.3f s\n", in->vendor, c,
           (double)bytes / c / 1e9, cc);
    report(in, "fresh store, pages faulted in by the decoding thread (target <= 4x memcpy)", &fresh, rounds);
    report(in, "fresh store, chunks faulted in ahead by the preparer thread", &prepared, rounds);
    report(in, "mapped store (target <= 3x memcpy)", &mapped, rounds);
}

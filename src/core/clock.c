/* Clock calibration: paired readings of the vendor clock bracketed by two
   CLOCK_REALTIME reads; the tightest pair of several tries is kept. The map
   from vendor time to realtime is piecewise affine through the samples, so a
   clock that drifts (or steps between calibrations) is followed. */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

void dt_clock_init(dt_clock *c, int identity)
{
    memset(c, 0, sizeof *c);
    c->identity = identity;
    c->slope = 1.0;
}

void dt_clock_free(dt_clock *c)
{
    dt_free(c->samples);
    c->samples = NULL;
    c->count = c->cap = 0;
}

int dt_clock_add(dt_clock *c, dt_clock_sample s)
{
    if (c->count >= DT_CLOCK_MAX_SAMPLES) return -1;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        dt_clock_sample *n = dt_realloc(c->samples, cap * sizeof *n);
        if (!n) {
            c->unkept++;
            return -1;
        }
        c->samples = n;
        c->cap = cap;
    }
    c->samples[c->count++] = s;
    return 0;
}

int dt_clock_sample_now(dt_clock *c, dt_clock_fn fn, int tries)
{
    dt_clock_sample best = {0, 0, UINT64_MAX};
    for (int i = 0; i < tries; i++) {
        uint64_t v = 0;
        uint64_t before = dt_realtime_ns();
        int rc = fn ? fn(&v) : (v = dt_realtime_ns(), 0);
        uint64_t after = dt_realtime_ns();
        if (rc != 0 || v == 0 || after < before) continue;
        if (after - before < best.bracket_ns) {
            best.vendor = v;
            best.realtime = before + (after - before) / 2;
            best.bracket_ns = after - before;
        }
    }
    if (best.bracket_ns == UINT64_MAX) return -1;
    return dt_clock_add(c, best);
}

static int cmp_vendor(const void *a, const void *b)
{
    const dt_clock_sample *x = a, *y = b;
    return (x->vendor > y->vendor) - (x->vendor < y->vendor);
}

/* realtime at v on the line through samples a and b (a.vendor != b.vendor). */
static int64_t line_at(const dt_clock_sample *a, const dt_clock_sample *b, uint64_t v)
{
    __int128 dv = (__int128)b->vendor - a->vendor;
    __int128 dr = (__int128)b->realtime - a->realtime;
    __int128 x = (__int128)v - a->vendor;
    /* round to nearest */
    __int128 num = x * dr;
    __int128 q = num / dv;
    __int128 rem = num % dv;
    if (rem * 2 >= dv) q++;
    else if (rem * 2 <= -dv) q--;
    return (int64_t)((__int128)a->realtime + q);
}

void dt_clock_fit(dt_clock *c)
{
    c->segments = 0;
    c->error_bound_ns = 0;
    c->slope = 1.0;
    c->offset_ns = 0.0;
    if (c->identity || c->count == 0) return;
    qsort(c->samples, c->count, sizeof *c->samples, cmp_vendor);
    /* Drop samples with a duplicate vendor time (keep the tighter one). */
    size_t out = 0;
    for (size_t i = 0; i < c->count; i++) {
        if (out && c->samples[out - 1].vendor == c->samples[i].vendor) {
            if (c->samples[i].bracket_ns < c->samples[out - 1].bracket_ns)
                c->samples[out - 1] = c->samples[i];
            continue;
        }
        c->samples[out++] = c->samples[i];
    }
    c->count = out;
    const dt_clock_sample *first = &c->samples[0], *last = &c->samples[c->count - 1];
    c->offset_ns = (double)((int64_t)(first->realtime - first->vendor));
    if (c->count >= 2)
        c->slope = (double)(int64_t)(last->realtime - first->realtime) /
                   (double)(int64_t)(last->vendor - first->vendor);
    c->segments = c->count >= 2 ? c->count - 1 : 0;
    uint64_t bound = 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->samples[i].bracket_ns / 2 > bound) bound = c->samples[i].bracket_ns / 2;
    /* Curvature between samples is unobserved; the deviation of each interior
       sample from the chord of its neighbours estimates it. */
    uint64_t curve = 0;
    for (size_t i = 1; i + 1 < c->count; i++) {
        int64_t pred = line_at(&c->samples[i - 1], &c->samples[i + 1], c->samples[i].vendor);
        int64_t d = pred - (int64_t)c->samples[i].realtime;
        uint64_t ad = (uint64_t)(d < 0 ? -d : d);
        if (ad > curve) curve = ad;
    }
    c->error_bound_ns = bound + curve;
}

uint64_t dt_clock_map(const dt_clock *c, uint64_t v)
{
    if (c->identity || c->count == 0) return v;
    const dt_clock_sample *s = c->samples;
    if (c->count == 1) return (uint64_t)((int64_t)s[0].realtime + ((int64_t)v - (int64_t)s[0].vendor));
    size_t lo = 0, hi = c->count - 1;
    if (v <= s[0].vendor) { lo = 0; hi = 1; }
    else if (v >= s[c->count - 1].vendor) { lo = c->count - 2; hi = c->count - 1; }
    else {
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (s[mid].vendor <= v) lo = mid; else hi = mid;
        }
    }
    int64_t r = line_at(&s[lo], &s[hi], v);
    return r < 0 ? 0 : (uint64_t)r;
}

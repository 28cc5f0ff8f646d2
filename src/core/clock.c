/* Clock calibration: paired readings of the vendor clock bracketed by two
   CLOCK_REALTIME reads; the tightest pair of several tries is kept. The map
   from vendor time to realtime is piecewise affine through the samples, so a
   clock that drifts (or steps between calibrations) is followed. */
#include "base/alloc.h"
#include "base/os.h"
#include "core/clock.h"

#include <stdlib.h>
#include <string.h>

void dt__clock_init(dt_clock *c, int identity)
{
    memset(c, 0, sizeof *c);
    c->identity = identity;
    c->slope = 1.0;
}

void dt__clock_free(dt_clock *c)
{
    dt__free(c->samples);
    dt__free(c->fast);
    c->samples = NULL;
    c->fast = NULL;
    c->count = c->cap = 0;
}

int dt__clock_add(dt_clock *c, dt_clock_sample s)
{
    if (c->count >= DT_CLOCK_MAX_SAMPLES) return -1;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        dt_clock_sample *n = dt__realloc(c->samples, cap * sizeof *n);
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

int dt__clock_read(dt_clock_fn fn, const void *ctx, int tries, dt_clock_sample *out)
{
    dt_clock_sample best = {0, 0, UINT64_MAX};
    for (int i = 0; i < tries; i++) {
        uint64_t v = 0;
        uint64_t before = dt__realtime_ns();
        int rc = fn ? fn(ctx, &v) : (v = dt__realtime_ns(), 0);
        uint64_t after = dt__realtime_ns();
        if (rc != 0 || v == 0 || after < before) continue;
        if (after - before < best.bracket_ns) {
            best.vendor = v;
            best.realtime = before + (after - before) / 2;
            best.bracket_ns = after - before;
        }
    }
    if (best.bracket_ns == UINT64_MAX) return -1;
    *out = best;
    return 0;
}

int dt__clock_sample_now(dt_clock *c, dt_clock_fn fn, const void *ctx, int tries)
{
    dt_clock_sample s;
    if (dt__clock_read(fn, ctx, tries, &s) != 0) return -1;
    return dt__clock_add(c, s);
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

/* Whether a and b (a's vendor time below b's) read one clock: realtime
   moves forward between them, at a rate within a factor of 64 of the
   vendor's (1 ms of slack for readings close together). A vendor clock
   that changed domain in between (CUPTI's after another client registered
   a TSC timestamp callback: cycles, not nanoseconds since the epoch) is
   off by orders of magnitude; a counter at any plausible rate is not. */
static int one_domain(const dt_clock_sample *a, const dt_clock_sample *b)
{
    const int64_t slack = 1000000;
    int64_t dv = (int64_t)(b->vendor - a->vendor), dr = (int64_t)(b->realtime - a->realtime);
    if (dv <= 0 || dr <= 0) return 0;
    __int128 v = dv, r = dr;
    return r <= 64 * v + slack && v <= 64 * r + slack;
}

int dt__clock_same_domain(const dt_clock_sample *a, const dt_clock_sample *b)
{
    if (a->vendor == b->vendor) return a->realtime == b->realtime;
    return a->vendor < b->vendor ? one_domain(a, b) : one_domain(b, a);
}

/* Whether samples i and i+1 (vendor order) read one clock domain. */
static int pair_joined(const dt_clock *c, size_t i)
{
    return i + 1 < c->count && one_domain(&c->samples[i], &c->samples[i + 1]);
}

/* realtime at v on the line of sample i's domain nearest to it: the pair
   i, i+1 where it is one domain's, else i-1, i, else through sample i with
   slope 1 (a domain of one sample: its rate is not known, nanoseconds are
   taken). */
static int64_t domain_line_at(const dt_clock *c, size_t i, uint64_t v)
{
    const dt_clock_sample *s = c->samples;
    if (pair_joined(c, i)) return line_at(&s[i], &s[i + 1], v);
    if (i > 0 && pair_joined(c, i - 1)) return line_at(&s[i - 1], &s[i], v);
    return (int64_t)s[i].realtime + ((int64_t)v - (int64_t)s[i].vendor);
}

/* A domain whose every reading one constant offset explains, within each
   reading's bracket, runs at one nanosecond per nanosecond as far as can be
   observed: its readings are put on that line (the middle of the offsets
   all of them allow), so durations on the vendor's clock are kept exactly
   rather than scaled by a rate that is only the readings' noise (two
   readings 2 ms apart with 100 ns brackets give a rate off by up to 5e-5).
   A clock that drifts more than its readings' uncertainty is followed by
   the piecewise line. */
static int snap_to_offset(dt_clock_sample *s, size_t n)
{
    if (n < 2) return 0;
    __int128 lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        /* the midpoint is rounded down: half a bracket, rounded up, on each side */
        __int128 off = (__int128)s[k].realtime - s[k].vendor, half = (s[k].bracket_ns + 1) / 2;
        if (k == 0 || off - half > lo) lo = off - half;
        if (k == 0 || off + half < hi) hi = off + half;
    }
    if (lo > hi) return 0;
    __int128 off = lo + (hi - lo) / 2;
    if (off < INT64_MIN || off > INT64_MAX) return 0;
    for (size_t k = 0; k < n; k++) {
        __int128 r = (__int128)s[k].vendor + off;
        if (r < 0 || r > (__int128)UINT64_MAX) return 0; /* not representable: leave the readings */
    }
    for (size_t k = 0; k < n; k++) s[k].realtime = (uint64_t)((__int128)s[k].vendor + off);
    return 1;
}

void dt__clock_fit(dt_clock *c)
{
    dt__free(c->fast);
    c->fast = NULL;
    c->segments = 0;
    c->error_bound_ns = 0;
    c->slope = 1.0;
    c->offset_ns = 0.0;
    c->domains = 0;
    c->lone_domains = 0;
    c->unit = 1;
    c->unit_offset = 0;
    if (c->identity || c->count == 0) return;
    c->unit = 0;
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
    /* The vendor's clock domains: runs of samples that read one clock, each
       fitted apart. The summary (slope, offset) is of the one with most
       samples. */
    size_t best = 0, best_len = 0;
    for (size_t i = 0; i < c->count;) {
        size_t j = i;
        while (pair_joined(c, j)) j++;
        int snapped = snap_to_offset(c->samples + i, j - i + 1);
        c->domains++;
        /* one domain, on one offset (or of one sample): every time, inside
           the samples or past them, is that offset away */
        c->unit = c->domains == 1 && (snapped || j == i);
        c->lone_domains += j == i;
        if (j - i + 1 > best_len) {
            best = i;
            best_len = j - i + 1;
        }
        i = j + 1;
    }
    const dt_clock_sample *first = &c->samples[best], *last = &c->samples[best + best_len - 1];
    c->offset_ns = (double)((int64_t)(first->realtime - first->vendor));
    c->unit_offset = (int64_t)(first->realtime - first->vendor);
    if (best_len >= 2)
        c->slope = (double)(int64_t)(last->realtime - first->realtime) /
                   (double)(int64_t)(last->vendor - first->vendor);
    c->segments = c->count >= 2 ? c->count - 1 : 0;
    /* Without them mapping takes the division path: slower, the same. */
    if (c->segments) c->fast = dt__malloc(c->segments * sizeof *c->fast);
    for (size_t i = 0; c->fast && i < c->segments; i++) {
        const dt_clock_sample *a = &c->samples[i], *b = &c->samples[i + 1];
        dt_clock_segment *g = &c->fast[i];
        int64_t dr = (int64_t)(b->realtime - a->realtime);
        g->vendor = a->vendor;
        /* the last segment also maps the times after it */
        g->vendor_end = i + 1 == c->segments ? UINT64_MAX : b->vendor;
        g->realtime = a->realtime;
        g->dv = b->vendor - a->vendor;
        g->adr = dr < 0 ? (uint64_t)0 - (uint64_t)dr : (uint64_t)dr;
        g->recip = g->dv >= 2 ? UINT64_MAX / g->dv + 1 : 0;
        g->sign = dr < 0 ? UINT64_MAX : 0;
        uint64_t inside = g->vendor_end - g->vendor;
        g->span = g->adr > UINT32_MAX || g->dv < 2 ? 0 : inside < (UINT64_C(1) << 32) ? inside : UINT64_C(1) << 32;
        if (!pair_joined(c, i)) {
            /* between two domains: no line joins them (the division path
               maps each time by the domain nearest to it) */
            g->span = 0;
            g->adr = UINT64_MAX;
        }
    }
    uint64_t bound = 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->samples[i].bracket_ns / 2 > bound) bound = c->samples[i].bracket_ns / 2;
    /* Curvature between samples is unobserved; the deviation of each interior
       sample from the chord of its neighbours (in its domain) estimates it. */
    uint64_t curve = 0;
    for (size_t i = 1; i + 1 < c->count; i++) {
        if (!pair_joined(c, i - 1) || !pair_joined(c, i)) continue;
        int64_t pred = line_at(&c->samples[i - 1], &c->samples[i + 1], c->samples[i].vendor);
        int64_t d = pred - (int64_t)c->samples[i].realtime;
        uint64_t ad = (uint64_t)(d < 0 ? -d : d);
        if (ad > curve) curve = ad;
    }
    c->error_bound_ns = bound + curve;
}

uint64_t dt__clock_map_slow(const dt_clock *c, uint64_t v, size_t *segment)
{
    if (c->unit) return dt__clock_unit_map(c->unit_offset, v);
    if (c->identity || c->count == 0) return v;
    const dt_clock_sample *s = c->samples;
    if (c->count == 1) return (uint64_t)((int64_t)s[0].realtime + ((int64_t)v - (int64_t)s[0].vendor));
    size_t lo = 0, hi = c->count - 1;
    if (v <= s[0].vendor) {
        hi = 1;
    } else if (v >= s[c->count - 1].vendor) {
        lo = c->count - 2;
    } else {
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (s[mid].vendor <= v) lo = mid; else hi = mid;
        }
    }
    *segment = lo;
    /* inside its segment a time takes the fast path next time */
    if (c->fast && v >= c->fast[lo].vendor && v < c->fast[lo].vendor_end) {
        uint64_t r;
        if (dt__clock_segment_map(&c->fast[lo], v, &r)) return r;
    }
    int64_t r;
    if (pair_joined(c, lo)) {
        r = line_at(&s[lo], &s[lo + 1], v);
    } else if (v <= s[lo].vendor || (v < s[lo + 1].vendor && v - s[lo].vendor < s[lo + 1].vendor - v)) {
        r = domain_line_at(c, lo, v); /* the domain below (or before the first sample) */
    } else {
        r = domain_line_at(c, lo + 1, v);
    }
    return r < 0 ? 0 : (uint64_t)r;
}

uint64_t dt__clock_map(const dt_clock *c, uint64_t v)
{
    size_t segment = 0;
    return dt__clock_map_near(c, v, &segment);
}

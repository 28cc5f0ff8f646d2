/*
 * Clock calibration: vendor time to realtime (src/core/clock.c).
 * Internal, not installed.
 */
#ifndef DT_CORE_CLOCK_H
#define DT_CORE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"

/* ------------------------------------------------------------------ */
/* Clock calibration                                                   */
/* ------------------------------------------------------------------ */
typedef struct dt_clock_sample {
    uint64_t vendor;         /* backend clock reading */
    uint64_t realtime;       /* midpoint of the two CLOCK_REALTIME reads */
    uint64_t bracket_ns;     /* after - before: the sample's uncertainty */
} dt_clock_sample;

#define DT_CLOCK_MAX_SAMPLES 4096

/* One segment of the fitted map, ready for mapping without a division:
   every stored record is mapped twice at stop, and a 128-bit division per
   time would cost more than the rest of the record's processing. */
typedef struct dt_clock_segment {
    uint64_t vendor, vendor_end;  /* vendor times it maps: [vendor, vendor_end) */
    uint64_t realtime;            /* at vendor */
    uint64_t dv, adr;             /* vendor span, |realtime span| */
    uint64_t recip;               /* floor((2^64 - 1) / dv) + 1: 2^64 / dv rounded up (dv >= 2) */
    /* the offsets x = v - vendor that dt__clock_segment_at maps, [0, span):
       inside the segment, below 2^32 and with |realtime span| below 2^32
       (x * adr fits 64 bits); 0 when none (and for a vendor span of 1 ns,
       whose reciprocal rounded up is 2^64) */
    uint64_t span;
    uint64_t sign;                /* all ones when realtime falls along the segment, else 0 */
} dt_clock_segment;

typedef struct dt_clock {
    dt_clock_sample *samples; /* sorted by vendor time after fit */
    size_t count, cap;
    size_t unkept;            /* samples read but not kept: out of memory */
    int identity;             /* backend has no clock of its own */
    /* fit summary, filled by dt__clock_fit() */
    double slope;             /* realtime ns per vendor ns (overall) */
    double offset_ns;         /* realtime - vendor at the first sample */
    uint64_t error_bound_ns;  /* max half-bracket + max residual of the fit */
    /* the vendor clock's domains, each fitted apart (more than one: it
       changed what it counts while sampled), and those of one sample,
       whose rate is unknown (nanoseconds taken) */
    size_t domains, lone_domains;
    /* 1 when every time maps by one offset, unit_offset (realtime - vendor):
       an identity clock, no samples or one, or one domain whose samples
       that offset explains within their brackets (dt__clock_fit) */
    int unit;
    int64_t unit_offset;
    size_t segments;
    dt_clock_segment *fast;   /* [segments], or NULL: mapping divides */
} dt_clock;

/* A clock read into *ns (0: read), as ctx says which (a backend's, and
   NULL for CLOCK_REALTIME). */
typedef int (*dt_clock_fn)(const void *ctx, uint64_t *ns);

DT_HIDDEN void dt__clock_init(dt_clock *c, int identity);
DT_HIDDEN void dt__clock_free(dt_clock *c);
/* Take `tries` paired readings, keep the most tightly bracketed one. */
DT_HIDDEN int dt__clock_sample_now(dt_clock *c, dt_clock_fn fn, const void *ctx, int tries);
/* The same reading, not kept: a vendor clock is read with no lock held
   that a vendor callback takes, and kept (dt__clock_add) under it. -1 when
   no reading succeeded. */
DT_HIDDEN int dt__clock_read(dt_clock_fn fn, const void *ctx, int tries, dt_clock_sample *out);
DT_HIDDEN int dt__clock_add(dt_clock *c, dt_clock_sample s);
/* Build the piecewise affine map from the samples: one per domain of the
   vendor's clock (runs of samples that read one clock), each time mapped
   by the domain nearest to it. */
DT_HIDDEN void dt__clock_fit(dt_clock *c);
/* Whether two samples read one domain of the vendor's clock. */
DT_HIDDEN int dt__clock_same_domain(const dt_clock_sample *a, const dt_clock_sample *b);
/* Vendor ns -> realtime ns (after dt__clock_fit). */
DT_HIDDEN uint64_t dt__clock_map(const dt_clock *c, uint64_t vendor_ns);
DT_HIDDEN uint64_t dt__clock_map_slow(const dt_clock *c, uint64_t vendor_ns, size_t *segment);

/* The time at v of a segment (v inside it), rounded half away from zero as
   the division would: x * |dr| / dv through the reciprocal rounded up,
   whose quotient is the division's or one above it (x * |dr| < 2^64, so
   the reciprocal's excess, below 1, adds less than 1), and exact where
   x * |dr| is a multiple of dv (a vendor clock that runs at realtime's
   rate: the reciprocal rounded down was one short on every such time).
   0 when x * |dr| could exceed 64 bits (segments of more than 4 s): the
   caller divides. */
static inline uint64_t dt__clock_segment_at(const dt_clock_segment *g, uint64_t x)
{
    uint64_t n = x * g->adr;
    uint64_t q = (uint64_t)(((unsigned __int128)n * g->recip) >> 64);
    int64_t rem = (int64_t)(n - q * g->dv); /* in [-dv, dv) */
    if (rem < 0) {
        q--;
        rem += (int64_t)g->dv;
    }
    uint64_t r = (uint64_t)rem;
    q += r >= g->dv - r;
    /* realtime + q or realtime - q, as the sign says */
    int64_t t = (int64_t)(g->realtime + ((q ^ g->sign) - g->sign));
    return t < 0 ? 0 : (uint64_t)t;
}

static inline int dt__clock_segment_map(const dt_clock_segment *g, uint64_t v, uint64_t *out)
{
    uint64_t x = v - g->vendor;
    if (x > UINT32_MAX || g->adr > UINT32_MAX || g->dv < 2) return 0;
    *out = dt__clock_segment_at(g, x);
    return 1;
}

/* v + offset, as realtime: 0 below it (a time the samples say precedes the
   epoch) */
static inline uint64_t dt__clock_unit_map(int64_t offset, uint64_t v)
{
    if (offset < 0 && v < (uint64_t)0 - (uint64_t)offset) return 0;
    return v + (uint64_t)offset;
}

/* dt__clock_map for times that come mostly in order: *segment (start at 0)
   remembers where the previous one fell. */
static inline uint64_t dt__clock_map_near(const dt_clock *c, uint64_t v, size_t *segment)
{
    size_t i = *segment;
    uint64_t out;
    if (c->unit) return dt__clock_unit_map(c->unit_offset, v);
    if (c->fast && i < c->segments && v >= c->fast[i].vendor && v < c->fast[i].vendor_end &&
        dt__clock_segment_map(&c->fast[i], v, &out))
        return out;
    return dt__clock_map_slow(c, v, segment);
}

#endif /* DT_CORE_CLOCK_H */

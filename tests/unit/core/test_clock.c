/* Clock calibration: a vendor clock with a known offset and drift must map
   back to realtime within the samples' uncertainty. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include "dt_internal_core.h"

/* vendor = realtime * (1 + ppm) + offset, exactly, for a synthetic sample */
static dt_clock_sample synth(uint64_t rt, int64_t offset, double ppm, uint64_t bracket)
{
    dt_clock_sample s;
    s.realtime = rt;
    s.vendor = (uint64_t)((int64_t)rt + offset + (int64_t)((double)(rt - 1700000000000000000ull) * ppm * 1e-6));
    s.bracket_ns = bracket;
    return s;
}

static void offset_and_drift_map_within_1us(void)
{
    const uint64_t t0 = 1700000000000000000ull;
    const int64_t offset = 1000000000; /* 1 s */
    const double ppm = 100.0;
    dt_clock c;
    dt__clock_init(&c, 0);
    /* start, 9 periodic samples, stop: 10 s */
    for (int i = 0; i <= 10; i++)
        REQUIRE_EQ(dt__clock_add(&c, synth(t0 + (uint64_t)i * 1000000000ull, offset, ppm, 200)), 0);
    dt__clock_fit(&c);
    REQUIRE_EQ(c.segments, 10);
    REQUIRE(c.error_bound_ns < 1000);
    REQUIRE(c.slope > 0.9999 && c.slope < 0.99991);
    /* every point of the 10 s: the map is exact to within rounding */
    for (uint64_t t = t0; t <= t0 + 10000000000ull; t += 12345678ull) {
        dt_clock_sample v = synth(t, offset, ppm, 0);
        uint64_t back = dt__clock_map(&c, v.vendor);
        int64_t err = (int64_t)back - (int64_t)t;
        REQUIRE(err >= -2 && err <= 2);
    }
    dt__clock_free(&c);
}

static void two_point_fit_follows_drift(void)
{
    const uint64_t t0 = 1700000000000000000ull;
    dt_clock c;
    dt__clock_init(&c, 0);
    dt__clock_add(&c, synth(t0 + 10000000000ull, -5000, 100.0, 1000)); /* out of order on purpose */
    dt__clock_add(&c, synth(t0, -5000, 100.0, 1000));
    dt__clock_fit(&c);
    REQUIRE_EQ(c.segments, 1);
    REQUIRE_EQ(c.error_bound_ns, 500);
    dt_clock_sample mid = synth(t0 + 5000000000ull, -5000, 100.0, 0);
    int64_t err = (int64_t)dt__clock_map(&c, mid.vendor) - (int64_t)(t0 + 5000000000ull);
    REQUIRE(err >= -2 && err <= 2);
    /* extrapolation past the last sample uses the last segment */
    dt_clock_sample after = synth(t0 + 11000000000ull, -5000, 100.0, 0);
    err = (int64_t)dt__clock_map(&c, after.vendor) - (int64_t)(t0 + 11000000000ull);
    REQUIRE(err >= -2 && err <= 2);
    dt__clock_free(&c);
}

static void single_sample_applies_offset_only(void)
{
    dt_clock c;
    dt__clock_init(&c, 0);
    dt_clock_sample s = {.vendor = 5000, .realtime = 1000000, .bracket_ns = 40};
    dt__clock_add(&c, s);
    dt__clock_fit(&c);
    REQUIRE_EQ(dt__clock_map(&c, 6000), 1001000);
    REQUIRE_EQ(c.error_bound_ns, 20);
    dt__clock_free(&c);
}

static void identity_clock_is_unchanged(void)
{
    dt_clock c;
    dt__clock_init(&c, 1);
    dt__clock_fit(&c);
    REQUIRE_EQ(dt__clock_map(&c, 123456789ull), 123456789ull);
    dt__clock_free(&c);
}

/* Mapping without division (the prepared segments) gives exactly
   what the division gives, rounding included, inside, before and after the
   samples, with the clocks running apart in either direction, in order and
   out of order, and on segments too long for the fast path. */
static void mapping_without_division_is_exact(void)
{
    const uint64_t t0 = 1700000000000000000ull;
    static const double ppms[] = {250.0, -250.0, 0.0, 33.3};
    for (size_t k = 0; k < sizeof ppms / sizeof *ppms; k++) {
        dt_clock c;
        dt__clock_init(&c, 0);
        for (int i = 0; i <= 10; i++)
            dt__clock_add(&c, synth(t0 + (uint64_t)i * 999999937ull, 123456789, ppms[k], 100));
        /* one long segment: x * dr overflows 64 bits there */
        dt__clock_add(&c, synth(t0 + 60ull * 3600 * 1000000000ull, 123456789, ppms[k], 100));
        dt__clock_fit(&c);
        REQUIRE((c.fast) != NULL);
        uint64_t state_rng = 88172645463325252ull;
        size_t segment = 0;
        for (int i = 0; i < 200000; i++) {
            state_rng ^= state_rng << 13;
            state_rng ^= state_rng >> 7;
            state_rng ^= state_rng << 17;
            uint64_t span = i % 3 == 0 ? 62ull * 3600 * 1000000000ull : 12ull * 1000000000ull;
            uint64_t v = t0 - 1000000000ull + state_rng % span;
            if (i % 5 == 0) v = c.samples[(size_t)i % c.count].vendor + (uint64_t)(i % 3) - 1;
            uint64_t fast = dt__clock_map_near(&c, v, &segment);
            dt_clock_segment *saved = c.fast;
            c.fast = NULL;
            uint64_t slow = dt__clock_map(&c, v);
            c.fast = saved;
            REQUIRE_EQ(fast, slow);
        }
        dt__clock_free(&c);
    }
}

/* One segment's map through its reciprocal against the division, rounded
   half away from zero, over spans of every size the fast path takes (the
   quotient through a reciprocal rounded up can start one above: then
   corrected), times at exact multiples (a clock at realtime's rate), and
   segments of 1 and 2 ns (1 ns: the division path). */
static void segment_reciprocal_is_the_division(void)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 400000; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        uint64_t dv = i % 7 == 0 ? 2 + rng % 5 : 1 + (rng >> (i % 40 + 20)), adr = i % 3 ? dv : rng % UINT32_MAX;
        if (adr > UINT32_MAX) adr = UINT32_MAX;
        uint64_t x = (rng >> 13) % (dv < (1ull << 32) ? dv : (1ull << 32));
        if (i % 5 == 0) x = dv < (1ull << 32) ? dv - 1 : UINT32_MAX;
        dt_clock_segment g = {.vendor = 0, .realtime = 1ull << 62, .dv = dv, .adr = adr,
                              .recip = dv >= 2 ? UINT64_MAX / dv + 1 : 0, .span = 1ull << 32, .sign = 0};
        uint64_t mapped;
        int fast = dt__clock_segment_map(&g, x, &mapped);
        CHECK_EQ(fast, dv >= 2);
        if (!fast) continue;
        unsigned __int128 n = (unsigned __int128)x * adr;
        uint64_t q = (uint64_t)(n / dv), r = (uint64_t)(n % dv);
        q += r >= dv - r;
        CHECK(mapped == (1ull << 62) + q, "x %llu * %llu / %llu: %llu, the division %llu", (unsigned long long)x,
              (unsigned long long)adr, (unsigned long long)dv, (unsigned long long)(mapped - (1ull << 62)),
              (unsigned long long)q);
    }
}

static uint64_t fake_base;
static int fake_clock(const void *ctx, uint64_t *ns)
{
    (void)ctx;
    *ns = dt__realtime_ns() + fake_base;
    return 0;
}
static int failing_clock(const void *ctx, uint64_t *ns)
{
    (void)ctx;
    (void)ns;
    return 7;
}

static void sampling_keeps_tightest_bracket(void)
{
    dt_clock c;
    dt__clock_init(&c, 0);
    fake_base = 1000000000ull;
    REQUIRE_EQ(dt__clock_sample_now(&c, fake_clock, NULL, 16), 0);
    REQUIRE_EQ(c.count, 1);
    int64_t off = (int64_t)c.samples[0].vendor - (int64_t)c.samples[0].realtime;
    /* the midpoint estimate is within the bracket of the true offset */
    REQUIRE(off - 1000000000 <= (int64_t)c.samples[0].bracket_ns);
    REQUIRE(1000000000 - off <= (int64_t)c.samples[0].bracket_ns);
    REQUIRE_EQ(dt__clock_sample_now(&c, failing_clock, NULL, 4), -1);
    REQUIRE_EQ(c.count, 1);
    dt__clock_free(&c);
}

/* A vendor clock that changed domain while sampled (CUPTI's, once another
   client registers a TSC timestamp callback: ns since the epoch, then
   cycles since boot at 2 per ns): each domain fitted apart, each time
   mapped by the domain nearest to it, a domain of one sample taken as ns,
   and the error bound that of the domains, not of a line across the two.
   The fast map agrees with the division. */
static dt_clock_sample tsc_sample(uint64_t rt, uint64_t t0, uint64_t bracket)
{
    dt_clock_sample s = {.vendor = 5000000000000ull + (rt - t0) * 2, .realtime = rt, .bracket_ns = bracket};
    return s;
}

static void domains_fitted_apart(void)
{
    const uint64_t t0 = 1700000000000000000ull, sec = 1000000000ull;
    for (int lone = 0; lone < 2; lone++) {
        dt_clock c;
        dt__clock_init(&c, 0);
        /* ns until 3 s (realtime itself), cycles from 3 s on; with `lone`,
           the ns domain has its start sample only */
        for (uint64_t s = 0; s <= (lone ? 0 : 2); s++) dt__clock_add(&c, synth(t0 + s * sec, 0, 0.0, 200));
        for (uint64_t s = 3; s <= 6; s++) dt__clock_add(&c, tsc_sample(t0 + s * sec, t0, 200));
        dt__clock_add(&c, tsc_sample(t0 + 6 * sec + 1000000, t0, 200));
        dt__clock_fit(&c);
        CHECK_EQ(c.domains, 2);
        CHECK_EQ(c.lone_domains, lone ? 1 : 0);
        CHECK(c.error_bound_ns < 1000, "error bound %llu ns", (unsigned long long)c.error_bound_ns);
        CHECK(c.slope > 0.4999 && c.slope < 0.5001, "slope %f (the cycles' domain has most samples)", c.slope);
        /* ns times from the start to 3 s, cycle times from 2.5 s to 6.5 s
           (before the first sample of their domain and after its last) */
        for (uint64_t x = 0; x < 3 * sec; x += 7777777) {
            int64_t err = (int64_t)dt__clock_map(&c, t0 + x) - (int64_t)(t0 + x);
            CHECK(err >= -2 && err <= 2, "ns time +%llu: off by %lld", (unsigned long long)x, (long long)err);
        }
        for (uint64_t x = 2 * sec + sec / 2; x < 6 * sec + sec / 2; x += 7777777) {
            uint64_t v = tsc_sample(t0 + x, t0, 0).vendor;
            int64_t err = (int64_t)dt__clock_map(&c, v) - (int64_t)(t0 + x);
            CHECK(err >= -2 && err <= 2, "cycle time +%llu: off by %lld", (unsigned long long)x, (long long)err);
            size_t segment = 0;
            uint64_t fast = dt__clock_map_near(&c, v, &segment);
            dt_clock_segment *saved = c.fast;
            c.fast = NULL;
            CHECK_EQ(fast, dt__clock_map(&c, v));
            c.fast = saved;
        }
        dt__clock_free(&c);
    }
    /* one domain stays one: a counter at 3 ticks a ns, another at a third */
    dt_clock c;
    dt__clock_init(&c, 0);
    for (uint64_t s = 0; s < 4; s++) {
        dt_clock_sample a = {.vendor = 777 + s * 3 * sec, .realtime = t0 + s * sec, .bracket_ns = 100};
        dt__clock_add(&c, a);
    }
    dt__clock_fit(&c);
    CHECK_EQ(c.domains, 1);
    dt_clock_sample x = {.vendor = 777 + sec, .realtime = t0 + 3 * sec}, y = {.vendor = 777 + 3 * sec, .realtime = t0 + sec};
    CHECK(dt__clock_same_domain(&x, &y) == 0, "a reading 9x off the rate in one domain");
    dt__clock_free(&c);
}

/* Readings of a nanosecond clock 2 ms apart whose offsets differ by less
   than their brackets allow: one offset explains them, so a duration on the
   vendor's clock comes back exactly (a fitted rate of 1 + 4e-5, the
   readings' noise, would turn 50 us into 50.002 us). A clock drifting more
   than its readings' uncertainty keeps its rate. */
static void noise_is_not_a_rate(void)
{
    const uint64_t t0 = 1700000000000000000ull, v0 = 123456789ull;
    dt_clock c;
    dt__clock_init(&c, 0);
    dt_clock_sample a = {.vendor = v0, .realtime = t0, .bracket_ns = 200};
    dt_clock_sample b = {.vendor = v0 + 2000000, .realtime = t0 + 2000000 + 80, .bracket_ns = 200};
    dt__clock_add(&c, a);
    dt__clock_add(&c, b);
    dt__clock_fit(&c);
    CHECK(c.slope == 1.0, "slope %.12f", c.slope);
    CHECK_EQ(c.error_bound_ns, 100);
    /* mapped by an addition, the same as the division path */
    REQUIRE(c.fast && c.segments == 1);
    CHECK_EQ(c.unit, 1);
    for (uint64_t x = 0; x < 3000000; x += 77777) {
        uint64_t start = dt__clock_map(&c, v0 + x), end = dt__clock_map(&c, v0 + x + 50000);
        dt_clock_segment *saved = c.fast;
        c.fast = NULL;
        c.unit = 0;
        CHECK_EQ(start, dt__clock_map(&c, v0 + x));
        c.fast = saved;
        c.unit = 1;
        CHECK_EQ(end - start, 50000);
        /* the offset all readings allow: between 80 - 100 and 0 + 100 ns */
        int64_t off = (int64_t)start - (int64_t)(t0 + x);
        CHECK(off >= -20 && off <= 100, "offset %lld", (long long)off);
    }
    dt__clock_free(&c);
    /* 1 ppm over 2 s (2 us) is beyond 200 ns brackets: the rate is kept */
    dt__clock_init(&c, 0);
    dt__clock_add(&c, (dt_clock_sample){.vendor = v0, .realtime = t0, .bracket_ns = 200});
    dt__clock_add(&c, (dt_clock_sample){.vendor = v0 + 2000000000ull, .realtime = t0 + 2000002000ull, .bracket_ns = 200});
    dt__clock_fit(&c);
    CHECK(c.slope > 1.0000009 && c.slope < 1.0000011, "slope %.12f", c.slope);
    CHECK_EQ(c.unit, 0);
    CHECK_EQ(dt__clock_map(&c, v0 + 1000000000ull), t0 + 1000001000ull);
    dt__clock_free(&c);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(noise_is_not_a_rate),
             DT_TEST(domains_fitted_apart),
             DT_TEST(offset_and_drift_map_within_1us),
             DT_TEST(two_point_fit_follows_drift),
             DT_TEST(single_sample_applies_offset_only),
             DT_TEST(identity_clock_is_unchanged),
             DT_TEST(mapping_without_division_is_exact),
             DT_TEST(segment_reciprocal_is_the_division),
             DT_TEST(sampling_keeps_tightest_bracket))

/* Clock calibration: a vendor clock with a known offset and drift must map
   back to realtime within the samples' uncertainty. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include "dt_internal.h"

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
    dt_clock_init(&c, 0);
    /* start, 9 periodic samples, stop: 10 s */
    for (int i = 0; i <= 10; i++)
        REQUIRE_EQ(dt_clock_add(&c, synth(t0 + (uint64_t)i * 1000000000ull, offset, ppm, 200)), 0);
    dt_clock_fit(&c);
    REQUIRE_EQ(c.segments, 10);
    REQUIRE(c.error_bound_ns < 1000);
    REQUIRE(c.slope > 0.9999 && c.slope < 0.99991);
    /* every point of the 10 s: the map is exact to within rounding */
    for (uint64_t t = t0; t <= t0 + 10000000000ull; t += 12345678ull) {
        dt_clock_sample v = synth(t, offset, ppm, 0);
        uint64_t back = dt_clock_map(&c, v.vendor);
        int64_t err = (int64_t)back - (int64_t)t;
        REQUIRE(err >= -2 && err <= 2);
    }
    dt_clock_free(&c);
}

static void two_point_fit_follows_drift(void)
{
    const uint64_t t0 = 1700000000000000000ull;
    dt_clock c;
    dt_clock_init(&c, 0);
    dt_clock_add(&c, synth(t0 + 10000000000ull, -5000, 100.0, 1000)); /* out of order on purpose */
    dt_clock_add(&c, synth(t0, -5000, 100.0, 1000));
    dt_clock_fit(&c);
    REQUIRE_EQ(c.segments, 1);
    REQUIRE_EQ(c.error_bound_ns, 500);
    dt_clock_sample mid = synth(t0 + 5000000000ull, -5000, 100.0, 0);
    int64_t err = (int64_t)dt_clock_map(&c, mid.vendor) - (int64_t)(t0 + 5000000000ull);
    REQUIRE(err >= -2 && err <= 2);
    /* extrapolation past the last sample uses the last segment */
    dt_clock_sample after = synth(t0 + 11000000000ull, -5000, 100.0, 0);
    err = (int64_t)dt_clock_map(&c, after.vendor) - (int64_t)(t0 + 11000000000ull);
    REQUIRE(err >= -2 && err <= 2);
    dt_clock_free(&c);
}

static void single_sample_applies_offset_only(void)
{
    dt_clock c;
    dt_clock_init(&c, 0);
    dt_clock_sample s = {.vendor = 5000, .realtime = 1000000, .bracket_ns = 40};
    dt_clock_add(&c, s);
    dt_clock_fit(&c);
    REQUIRE_EQ(dt_clock_map(&c, 6000), 1001000);
    REQUIRE_EQ(c.error_bound_ns, 20);
    dt_clock_free(&c);
}

static void identity_clock_is_unchanged(void)
{
    dt_clock c;
    dt_clock_init(&c, 1);
    dt_clock_fit(&c);
    REQUIRE_EQ(dt_clock_map(&c, 123456789ull), 123456789ull);
    dt_clock_free(&c);
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
        dt_clock_init(&c, 0);
        for (int i = 0; i <= 10; i++)
            dt_clock_add(&c, synth(t0 + (uint64_t)i * 999999937ull, 123456789, ppms[k], 100));
        /* one long segment: x * dr overflows 64 bits there */
        dt_clock_add(&c, synth(t0 + 60ull * 3600 * 1000000000ull, 123456789, ppms[k], 100));
        dt_clock_fit(&c);
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
            uint64_t fast = dt_clock_map_near(&c, v, &segment);
            dt_clock_segment *saved = c.fast;
            c.fast = NULL;
            uint64_t slow = dt_clock_map(&c, v);
            c.fast = saved;
            REQUIRE_EQ(fast, slow);
        }
        dt_clock_free(&c);
    }
}

static uint64_t fake_base;
static int fake_clock(uint64_t *ns)
{
    *ns = dt_realtime_ns() + fake_base;
    return 0;
}
static int failing_clock(uint64_t *ns)
{
    (void)ns;
    return 7;
}

static void sampling_keeps_tightest_bracket(void)
{
    dt_clock c;
    dt_clock_init(&c, 0);
    fake_base = 1000000000ull;
    REQUIRE_EQ(dt_clock_sample_now(&c, fake_clock, 16), 0);
    REQUIRE_EQ(c.count, 1);
    int64_t off = (int64_t)c.samples[0].vendor - (int64_t)c.samples[0].realtime;
    /* the midpoint estimate is within the bracket of the true offset */
    REQUIRE(off - 1000000000 <= (int64_t)c.samples[0].bracket_ns);
    REQUIRE(1000000000 - off <= (int64_t)c.samples[0].bracket_ns);
    REQUIRE_EQ(dt_clock_sample_now(&c, failing_clock, 4), -1);
    REQUIRE_EQ(c.count, 1);
    dt_clock_free(&c);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(offset_and_drift_map_within_1us),
             DT_TEST(two_point_fit_follows_drift),
             DT_TEST(single_sample_applies_offset_only),
             DT_TEST(identity_clock_is_unchanged),
             DT_TEST(mapping_without_division_is_exact),
             DT_TEST(sampling_keeps_tightest_bracket))

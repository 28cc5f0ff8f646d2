/* Row sorting and leveling (src/export/leveler.h): the order rows are
   written in, and levels on which no two events partially overlap. */
#include <stdlib.h>
#include <string.h>

#include "dt_check.h"
#include "base/alloc.h"
#include "export/layout/leveler.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int cmp_items(const void *a, const void *b)
{
    const dt_row_item *x = a, *y = b;
    return dt__wr_row_item_before(x, y) ? -1 : dt__wr_row_item_before(y, x) ? 1 : 0;
}

/* Sorts a copy with qsort and with dt_row_items_sort: the same order. */
static void check_sort(dt_row_item *a, size_t n)
{
    dt_row_item *want = malloc(n * sizeof *want), *tmp = malloc(n * sizeof *tmp);
    REQUIRE(want && tmp);
    memcpy(want, a, n * sizeof *a);
    qsort(want, n, sizeof *want, cmp_items);
    dt__wr_row_items_sort(a, tmp, n);
    for (size_t i = 0; i < n; i++)
        if (a[i].idx != want[i].idx)
            FAIL("position %zu: idx %u, expected %u", i, a[i].idx, want[i].idx);
    free(want);
    free(tmp);
}

static void test_order_is_start_then_longer_first_then_index(void)
{
    dt_row_item a[] = {{10, 20, 0}, {10, 30, 1}, {5, 6, 2}, {10, 30, 3}, {10, 10, 4}};
    dt__wr_row_items_sort(a, (dt_row_item[5]){{0}}, 5);
    static const uint32_t want[] = {2, 1, 3, 0, 4};
    for (int i = 0; i < 5; i++)
        CHECK_EQ(a[i].idx, want[i]);
}

static void test_nearly_sorted_rows_sort_like_any_other(void)
{
    /* ranges stored after their operations, as a host thread's row is */
    enum { OPS = 20, RANGES = 500 };
    dt_row_item *a = malloc((OPS + 1) * RANGES * sizeof *a);
    REQUIRE(a);
    size_t n = 0;
    uint64_t t = 1000;
    for (int r = 0; r < RANGES; r++) {
        uint64_t start = t;
        for (int k = 0; k < OPS; k++, t += 100)
            a[n] = (dt_row_item){t + 10, t + 90, (uint32_t)n}, n++;
        a[n] = (dt_row_item){start, t, (uint32_t)n}, n++;
    }
    check_sort(a, n);
    free(a);
}

static void test_random_rows_sort_like_any_other(void)
{
    enum { N = 20000 };
    dt_row_item *a = malloc(N * sizeof *a);
    REQUIRE(a);
    for (int trial = 0; trial < 4; trial++) {
        for (size_t i = 0; i < N; i++) {
            /* few distinct starts and ends: many ties */
            uint64_t st = rnd() % (trial == 0 ? 50 : 100000);
            a[i] = (dt_row_item){st, st + rnd() % 40, (uint32_t)i};
        }
        check_sort(a, N);
    }
    /* reversed: the insertion pass gives up, the merge sort finishes */
    for (size_t i = 0; i < N; i++)
        a[i] = (dt_row_item){(uint64_t)(N - i) * 10, (uint64_t)(N - i) * 10 + 5, (uint32_t)i};
    check_sort(a, N);
    free(a);
}

/* Levels of a sorted row, checked: on every level the events nest (each
   one inside the innermost open one, or after it). */
static uint32_t level_and_check(const dt_row_item *a, size_t n, uint32_t *level)
{
    dt_leveler lv;
    memset(&lv, 0, sizeof lv);
    dt__wr_leveler_reset(&lv);
    for (size_t i = 0; i < n; i++) {
        level[i] = dt__wr_leveler_place(&lv, a[i].start, a[i].end);
        REQUIRE_NE(level[i], DT_LEVELER_NONE);
    }
    uint32_t levels = dt__wr_leveler_levels(&lv);
    dt__wr_leveler_free(&lv);
    for (size_t i = 0; i < n; i++) {
        CHECK(level[i] < levels, "event %zu on level %u of %u", i, level[i], levels);
        for (size_t j = 0; j < i; j++) {
            if (level[j] != level[i])
                continue;
            /* j before i on one level: i starts after j ends or inside it */
            int after = a[i].start >= a[j].end, inside = a[i].end <= a[j].end;
            if (!after && !inside)
                FAIL("events %zu [%llu,%llu] and %zu [%llu,%llu] overlap partially on level %u", j,
                     (unsigned long long)a[j].start, (unsigned long long)a[j].end, i,
                     (unsigned long long)a[i].start, (unsigned long long)a[i].end, level[i]);
        }
    }
    return levels;
}

static void test_nested_and_touching_events_stay_on_the_row(void)
{
    dt_row_item a[] = {{0, 100, 0}, {0, 100, 1}, {10, 20, 2}, {40, 40, 3}, {100, 200, 4}, {150, 160, 5}};
    uint32_t level[6];
    CHECK_EQ(level_and_check(a, 6, level), 1);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(level[i], 0);
}

static void test_partial_overlaps_move_to_the_lowest_level_that_fits(void)
{
    /* A, then B overlapping A, then E overlapping A and B, then D after A,
       then an event inside D (and B and E) */
    dt_row_item a[] = {{0, 100, 0}, {50, 150, 1}, {60, 160, 2}, {100, 200, 3}, {155, 158, 4}};
    uint32_t level[5];
    CHECK_EQ(level_and_check(a, 5, level), 3);
    static const uint32_t want[] = {0, 1, 2, 0, 0};
    for (int i = 0; i < 5; i++)
        CHECK_EQ(level[i], want[i]);
}

static void test_staircases_beyond_the_nesting_levels_stay_valid(void)
{
    /* each event overlaps the next 99 partially: 100 levels, most of them
       past DT_LEVELER_NEST, which reuse levels through the heap */
    enum { N = 3000 };
    dt_row_item *a = malloc(N * sizeof *a);
    uint32_t *level = malloc(N * sizeof *level);
    REQUIRE(a && level);
    for (size_t i = 0; i < N; i++)
        a[i] = (dt_row_item){(uint64_t)i * 10, (uint64_t)i * 10 + 995, (uint32_t)i};
    uint32_t levels = level_and_check(a, N, level);
    CHECK_EQ(levels, 100);
    free(a);
    free(level);
}

static void test_random_rows_level_validly(void)
{
    enum { N = 4000 };
    dt_row_item *a = malloc(N * sizeof *a), *tmp = malloc(N * sizeof *tmp);
    uint32_t *level = malloc(N * sizeof *level);
    REQUIRE(a && tmp && level);
    for (size_t i = 0; i < N; i++) {
        uint64_t st = rnd() % 100000;
        a[i] = (dt_row_item){st, st + rnd() % 300, (uint32_t)i};
    }
    dt__wr_row_items_sort(a, tmp, N);
    level_and_check(a, N, level);
    free(a);
    free(tmp);
    free(level);
}

static void test_reset_starts_a_new_row(void)
{
    dt_leveler lv;
    memset(&lv, 0, sizeof lv);
    CHECK_EQ(dt__wr_leveler_place(&lv, 0, 100), 0);
    CHECK_EQ(dt__wr_leveler_place(&lv, 50, 150), 1);
    CHECK_EQ(dt__wr_leveler_levels(&lv), 2);
    dt__wr_leveler_reset(&lv);
    CHECK_EQ(dt__wr_leveler_levels(&lv), 0);
    CHECK_EQ(dt__wr_leveler_place(&lv, 60, 70), 0);
    CHECK_EQ(dt__wr_leveler_levels(&lv), 1);
    dt__wr_leveler_free(&lv);
}

static void test_out_of_memory_is_reported(void)
{
    dt_leveler lv;
    memset(&lv, 0, sizeof lv);
    dt__alloc_fail_after(1, 1);
    uint32_t level = dt__wr_leveler_place(&lv, 0, 100);
    dt__alloc_fail_after(0, 0);
    CHECK_EQ(level, DT_LEVELER_NONE);
    CHECK_EQ(dt__wr_leveler_place(&lv, 0, 100), 0);
    dt__wr_leveler_free(&lv);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_order_is_start_then_longer_first_then_index),
             DT_TEST(test_nearly_sorted_rows_sort_like_any_other),
             DT_TEST(test_random_rows_sort_like_any_other),
             DT_TEST(test_nested_and_touching_events_stay_on_the_row),
             DT_TEST(test_partial_overlaps_move_to_the_lowest_level_that_fits),
             DT_TEST(test_staircases_beyond_the_nesting_levels_stay_valid),
             DT_TEST(test_random_rows_level_validly),
             DT_TEST(test_reset_starts_a_new_row),
             DT_TEST(test_out_of_memory_is_reported))

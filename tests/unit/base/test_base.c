/* The building blocks every layer uses: the one hash table (with keys that
   repeat, as a string table's hashes may), the string table over it, the
   one UTF-8 validator, and the growable array. */
#include "base/alloc.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "base/vec.h"
#include "dt_check.h"

#include <stdio.h>

static void test_u64map_keeps_every_key_including_zero(void)
{
    dt_u64map m;
    memset(&m, 0, sizeof m);
    for (uint64_t k = 0; k < 100000; k++) {
        bool added = false;
        uint64_t *v = dt__u64map_slot(&m, k * 7919, &added);
        REQUIRE(v != NULL);
        CHECK(added);
        *v = k + 1;
    }
    CHECK_EQ(m.count, 100000u);
    for (uint64_t k = 0; k < 100000; k++) {
        uint64_t v = 0;
        REQUIRE(dt__u64map_get(&m, k * 7919, &v));
        CHECK_EQ(v, k + 1);
    }
    uint64_t v;
    CHECK(!dt__u64map_get(&m, 5, &v));
    size_t cursor = 0, seen = 0;
    uint64_t key, sum = 0;
    while (dt__u64map_next(&m, &cursor, &key, &v)) {
        seen++;
        sum += v;
    }
    CHECK_EQ(seen, 100000u);
    CHECK_EQ(sum, (uint64_t)100000 * 100001 / 2);
    dt__u64map_free(&m);
}

static void test_u64map_repeated_keys_are_all_probed(void)
{
    dt_u64map m;
    memset(&m, 0, sizeof m);
    REQUIRE(dt__u64map_reserve(&m, 10) == 0);
    for (uint64_t i = 0; i < 5; i++)
        *dt__u64map_add(&m, 42) = i;
    *dt__u64map_add(&m, 43) = 99;
    size_t pos = 0, found = 0;
    uint64_t mask = 0;
    for (const uint64_t *v; (v = dt__u64map_probe(&m, 42, &pos));) {
        found++;
        mask |= 1u << *v;
    }
    CHECK_EQ(found, 5u);
    CHECK_EQ(mask, 0x1fu);
    pos = 0;
    CHECK(dt__u64map_probe(&m, 44, &pos) == NULL);
    CHECK(dt__u64map_add(&m, 0) == NULL);
    dt__u64map_free(&m);
}

static void test_u64map_out_of_memory_is_reported(void)
{
    dt_u64map m;
    memset(&m, 0, sizeof m);
    dt__alloc_fail_after(1, 1);
    CHECK(dt__u64map_slot(&m, 7, NULL) == NULL);
    CHECK_EQ(dt__u64map_reserve(&m, 100), -1);
    dt__alloc_fail_after(0, 0);
    CHECK(dt__u64map_slot(&m, 7, NULL) != NULL);
    dt__u64map_free(&m);
}

static void test_hash_slot_spreads_keys_that_differ_high(void)
{
    /* keys that differ only above bit 32 (ids with a tag in their high
       bits) would all share slot 0 of a cache indexed by their low bits */
    uint64_t used = 0;
    int distinct = 0;
    for (uint64_t k = 0; k < 64; k++) {
        size_t slot = dt__hash_slot(k << 32, 6);
        REQUIRE(slot < 64);
        distinct += !(used >> slot & 1);
        used |= UINT64_C(1) << slot;
    }
    CHECK(distinct >= 16, "%d of 64 slots", distinct);
    CHECK(dt__hash_slot(UINT64_MAX, 8) < 256);
}

static void test_strtab_gives_dense_ids_in_order(void)
{
    dt_strtab t;
    dt__strtab_init(&t);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "name-%d", i);
        bool added = false;
        CHECK_EQ(dt__strtab_intern(&t, key, (size_t)n, &added), i);
        CHECK(added);
    }
    for (int i = 4999; i >= 0; i--) {
        int n = snprintf(key, sizeof key, "name-%d", i);
        bool added = true;
        CHECK_EQ(dt__strtab_intern(&t, key, (size_t)n, &added), i);
        CHECK(!added);
        CHECK_EQ(dt__strtab_find(&t, key, (size_t)n), i);
    }
    CHECK_STR(dt__strtab_key(&t, 17), "name-17");
    CHECK_EQ(dt__strtab_find(&t, "name-5000", 9), -1);
    /* the empty string and a string with a NUL inside are keys too */
    CHECK_EQ(dt__strtab_intern(&t, "", 0, NULL), 5000);
    CHECK_EQ(dt__strtab_intern(&t, "a\0b", 3, NULL), 5001);
    CHECK_EQ(dt__strtab_find(&t, "a", 1), -1);
    dt__strtab_free(&t);
}

static void test_hash_key_is_a_nonzero_table_key(void)
{
    /* a hash used as a key must be one dt__u64map_add takes: never 0, and
       dt__hash_bytes itself wherever that is not 0 */
    dt_u64map m = {0};
    char key[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(key, sizeof key, "kernel-%d", i);
        uint64_t h = dt__hash_key(key, (size_t)n);
        CHECK(h != 0);
        uint64_t b = dt__hash_bytes(key, (size_t)n);
        if (b) CHECK_EQ(h, b);
        uint64_t *v = dt__u64map_add(&m, h);
        CHECK(v != NULL);
        *v = (uint64_t)i;
    }
    CHECK_EQ(dt__hash_key("", 0), dt__hash_key("", 0));
    CHECK(dt__hash_key("", 0) != 0);
    size_t pos = 0;
    const uint64_t *v = dt__u64map_probe(&m, dt__hash_key("kernel-7", 8), &pos);
    CHECK(v != NULL);
    CHECK_EQ(*v, 7u);
    dt__u64map_free(&m);
}

static void test_utf8_accepts_exactly_rfc3629(void)
{
    static const struct {
        const char *s;
        size_t len;
    } cases[] = {
        {"\xc3\xa9", 2},         {"\xe2\x82\xac", 3},     {"\xf0\x9f\x98\x80", 4}, {"\xf4\x8f\xbf\xbf", 4},
        {"\xc0\xaf", 0},         {"\xc1\xbf", 0},         {"\xe0\x80\xaf", 0},     {"\xed\xa0\x80", 0},
        {"\xf0\x80\x80\xaf", 0}, {"\xf4\x90\x80\x80", 0}, {"\xf5\x80\x80\x80", 0}, {"\x80", 0},
        {"\xc3", 0},             {"\xe2\x82", 0},         {"\xc2\x85", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const unsigned char *s = (const unsigned char *)cases[i].s;
        CHECK_EQ(dt__utf8_len(s, strlen(cases[i].s)), cases[i].len);
    }
    /* a sequence cut by the length given */
    CHECK_EQ(dt__utf8_len((const unsigned char *)"\xe2\x82\xac", 2), 0u);
    CHECK(dt__utf8_is_c1((const unsigned char *)"\xc2\x85", 2));
    CHECK(!dt__utf8_is_c1((const unsigned char *)"\xc2\xa0", 2));
}

/* Counters kept per element (the reader's per-name and per-row tables)
   start at zero however the array grew; a failed growth leaves it as it
   was. */
static void test_vec_reserve_zeroed_clears_the_new_tail(void)
{
    uint32_t *v = NULL;
    size_t cap = 0;
    REQUIRE_EQ(dt__vec_reserve_zeroed((void **)&v, &cap, 3, sizeof *v), 0);
    CHECK(cap >= 3);
    for (size_t i = 0; i < cap; i++) {
        CHECK_EQ(v[i], 0u);
        v[i] = 0xdeadbeef;
    }
    size_t old = cap;
    REQUIRE_EQ(dt__vec_reserve_zeroed((void **)&v, &cap, old + 1, sizeof *v), 0);
    CHECK(cap > old);
    for (size_t i = 0; i < cap; i++)
        CHECK_EQ(v[i], i < old ? 0xdeadbeefu : 0u);
    uint32_t *before = v;
    size_t before_cap = cap;
    dt__alloc_fail_after(1, 1);
    CHECK_EQ(dt__vec_reserve_zeroed((void **)&v, &cap, cap * 4, sizeof *v), -1);
    dt__alloc_fail_after(0, 0);
    CHECK(v == before);
    CHECK_EQ(cap, before_cap);
    free(v);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_u64map_keeps_every_key_including_zero),
             DT_TEST(test_u64map_repeated_keys_are_all_probed),
             DT_TEST(test_u64map_out_of_memory_is_reported),
             DT_TEST(test_strtab_gives_dense_ids_in_order),
             DT_TEST(test_hash_key_is_a_nonzero_table_key),
             DT_TEST(test_hash_slot_spreads_keys_that_differ_high),
             DT_TEST(test_utf8_accepts_exactly_rfc3629),
             DT_TEST(test_vec_reserve_zeroed_clears_the_new_tail))

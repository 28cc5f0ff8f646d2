/* What the public API says of the backends and formats without starting
   anything: the variable that names each vendor library, the library some
   vendors need preloaded, and the suffix each format's files take. */
#include "devtrace/devtrace.h"
#include "dt_check.h"

#include <stdio.h>

static size_t index_of(const char *name)
{
    for (size_t i = 0; i < dt_backend_count(); i++)
        if (strcmp(dt_backend_name(i), name) == 0) return i;
    FAIL("no backend %s", name);
    return 0;
}

static void test_each_vendor_names_its_library_variable(void)
{
    size_t vendors = 0;
#define DT_VENDOR(name, library_env, emu, subscribe, module, skip)                                       \
    CHECK_STR(dt_backend_library_env(index_of(#name)), library_env);                                     \
    vendors++;
#include "backends/vendors.def"
#undef DT_VENDOR
    /* every backend but the null one is a vendor's */
    CHECK_EQ(vendors + 1, dt_backend_count());
    CHECK(dt_backend_library_env(index_of("null")) == NULL);
    CHECK(dt_backend_library_env(dt_backend_count()) == NULL);
}

static void test_only_mspti_needs_its_library_preloaded(void)
{
    for (size_t i = 0; i < dt_backend_count(); i++) {
        if (strcmp(dt_backend_name(i), "mspti") == 0) CHECK_STR(dt_backend_preload(i), "libmspti.so");
        else CHECK(dt_backend_preload(i) == NULL, "%s", dt_backend_name(i));
    }
    CHECK(dt_backend_preload(dt_backend_count()) == NULL);
}

static void test_a_formats_suffix_names_it_again(void)
{
    static const struct { dt_format format; const char *suffix; } formats[] = {
        {DT_FORMAT_JSON, ".json"},
        {DT_FORMAT_JSON_GZ, ".json.gz"},
        {DT_FORMAT_PERFETTO, ".pftrace"},
        {DT_FORMAT_PERFETTO_GZ, ".pftrace.gz"},
    };
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        CHECK_STR(dt_format_suffix(formats[i].format), formats[i].suffix);
        char path[64];
        snprintf(path, sizeof path, "trace%s", dt_format_suffix(formats[i].format));
        CHECK_EQ(dt_format_of_path(path, (dt_format)-1), formats[i].format);
    }
    /* a number that is no format has no suffix */
    CHECK(dt_format_suffix((dt_format)99) == NULL);
    CHECK(dt_format_name((dt_format)99) == NULL);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_each_vendor_names_its_library_variable),
             DT_TEST(test_only_mspti_needs_its_library_preloaded),
             DT_TEST(test_a_formats_suffix_names_it_again))

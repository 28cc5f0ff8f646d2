/*
 * The backend list as the rest of devtrace asks it: what each backend's
 * vendor is to other tools (dt_backend_flags), the vendor entry points the
 * injection library hands to backends by capability, and the API-name
 * cache every backend's decoder names its API records through.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include <string.h>

#include "dt_internal.h"
#include "dt_test_session.h"
#include "backends/common/api_names.h"
#include "backends/backend.h"

/* torch.profiler records CUPTI itself: that backend alone says so. */
static void kineto_records_cupti_alone(void)
{
    size_t n = dt_backend_count();
    REQUIRE(n > 1);
    for (size_t i = 0; i < n; i++) {
        const char *name = dt_backend_name(i);
        unsigned flags = ~0u;
        REQUIRE_EQ(dt_backend_flags(name, &flags), DT_OK);
        CHECK_EQ(flags, strcmp(name, "cupti") == 0 ? (unsigned)DT_BACKEND_FLAG_KINETO_NATIVE : 0u);
    }
}

static void flags_of_an_unknown_backend_are_an_error(void)
{
    unsigned flags = ~0u;
    CHECK_EQ(dt_backend_flags("no-such-backend", &flags), DT_ERR_UNKNOWN_BACKEND);
    CHECK(strstr(dt_last_error(), "no-such-backend") != NULL, "%s", dt_last_error());
    CHECK_EQ(flags, 0u);
    CHECK_EQ(dt_backend_flags(NULL, &flags), DT_ERR_UNKNOWN_BACKEND);
    CHECK_EQ(dt_backend_flags("cupti", NULL), DT_ERR_INVALID_ARGUMENT);
}

/* A capability the injection library acts on comes with its hook: CUDA's
   injection entry point is CUPTI's, the tool entry point
   rocprofiler-sdk's, and no other backend asks for either. */
static void entry_points_are_hooks_of_the_backends_that_ask(void)
{
    for (size_t i = 0; dt__backends[i]; i++) {
        const dt_backend *b = dt__backends[i];
        int injection = (b->caps & DT_BACKEND_INJECTION_ENTRY) != 0;
        int tool = (b->caps & DT_BACKEND_TOOL_CONFIGURE) != 0;
        CHECK_EQ(injection, strcmp(b->name, "cupti") == 0);
        CHECK_EQ(tool, strcmp(b->name, "rocprofiler_sdk") == 0);
        CHECK_EQ(injection, b->inject_arm != NULL);
        CHECK_EQ(injection, b->inject_env != NULL);
        CHECK_EQ(tool, b->tool_configure != NULL);
        if (injection) CHECK_STR(b->inject_env, "CUDA_INJECTION64_PATH");
    }
}

/* A name is interned once and found again; a call without a name is named
   by the fallback and its number; keys that want the same slot both stay
   found, and a third that wants both slots replaces one, and each still
   gets its own name. */
static void api_names_are_interned_once_and_cached(void)
{
    dt_session *s = dt_test_session(0);
    dt_api_names c;
    dt__api_names_init(&c);
    uint32_t id = UINT32_MAX;
    CHECK(!dt__api_names_find(&c, 7, &id));
    uint32_t launch = dt__api_names_add(&c, s, 7, "hipLaunchKernel", "HIP", 6);
    REQUIRE_NE(launch, UINT32_MAX);
    REQUIRE(dt__api_names_find(&c, 7, &id));
    CHECK_EQ(id, launch);
    CHECK_STR(dt__intern_get(&s->names, launch), "hipLaunchKernel");

    uint32_t unnamed = dt__api_names_add(&c, s, (uint64_t)(uint32_t)-5 + 1, NULL, "HIP", -5);
    CHECK_STR(dt__intern_get(&s->names, unnamed), "HIP#-5");

    /* a key whose first slot is 7's: it takes its other slot */
    uint64_t second = 7 + DT_API_NAME_SLOTS;
    while (dt__api_names_other_slot(second) == dt__api_names_slot(7)) second += DT_API_NAME_SLOTS;
    uint32_t copy = dt__api_names_add(&c, s, second, "hipMemcpy", "HIP", (int64_t)second - 1);
    REQUIRE(dt__api_names_find(&c, 7, &id));
    CHECK_EQ(id, launch);
    REQUIRE(dt__api_names_find(&c, second, &id));
    CHECK_EQ(id, copy);
    /* a third wanting 7's slot and the second's other slot replaces the second */
    uint64_t third = second + DT_API_NAME_SLOTS;
    while (dt__api_names_other_slot(third) != dt__api_names_other_slot(second)) third += DT_API_NAME_SLOTS;
    uint32_t fill = dt__api_names_add(&c, s, third, "hipMemset", "HIP", (int64_t)third - 1);
    CHECK(!dt__api_names_find(&c, second, &id));
    REQUIRE(dt__api_names_find(&c, third, &id));
    CHECK_EQ(id, fill);
    REQUIRE(dt__api_names_find(&c, 7, &id));
    CHECK_EQ(id, launch);
    CHECK_EQ(dt__api_names_add(&c, s, second, "hipMemcpy", "HIP", (int64_t)second - 1), copy);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(kineto_records_cupti_alone),
             DT_TEST(flags_of_an_unknown_backend_are_an_error),
             DT_TEST(entry_points_are_hooks_of_the_backends_that_ask),
             DT_TEST(api_names_are_interned_once_and_cached))

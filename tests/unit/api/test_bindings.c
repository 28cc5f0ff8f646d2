/* What the library tells bindings in other languages: the header's
   declarations as a table (dt_abi_entry), read whole and ended, with the
   compiler's offsets and sizes; and what each kind of event is
   (dt_event_kind_class), one class for every kind and none for a number
   that is no kind. (tests/integration/test_python_layout.py holds the
   table to the header and the Python package to the table.) */
#include "devtrace/devtrace.h"
#include "dt_check.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int find(const char *scope, const char *name, const char **type, uint64_t *value, uint64_t *size)
{
    const char *s, *n;
    for (size_t i = 0; dt_abi_entry(i, &s, &n, type, value, size); i++)
        if (strcmp(s, scope) == 0 && strcmp(n, name) == 0) return 1;
    return 0;
}

static void test_the_table_is_read_whole_and_ends(void)
{
    size_t count = 0, functions = 0, structs = 0;
    const char *scope, *name, *type;
    uint64_t value, size;
    while (dt_abi_entry(count, &scope, &name, &type, &value, &size)) {
        REQUIRE(scope && name && type && name[0], "entry %zu", count);
        if (strchr(type, '(')) functions++;
        if (strcmp(type, "struct") == 0 && !scope[0]) structs++;
        count++;
    }
    CHECK_EQ(functions, (size_t)54);
    CHECK_EQ(structs, (size_t)4);
    /* past the last: 0, and nothing written */
    scope = name = type = "untouched";
    value = size = 7;
    CHECK_EQ(dt_abi_entry(count, &scope, &name, &type, &value, &size), 0);
    CHECK_EQ(dt_abi_entry(SIZE_MAX, &scope, &name, &type, &value, &size), 0);
    CHECK_STR(scope, "untouched");
    CHECK_STR(type, "untouched");
    CHECK_EQ(value, (uint64_t)7);
    /* any output may be NULL */
    CHECK_EQ(dt_abi_entry(0, NULL, NULL, NULL, NULL, NULL), 1);
    CHECK_EQ(dt_abi_entry(count - 1, NULL, &name, NULL, NULL, NULL), 1);
    CHECK_STR(name, "dt_abi_entry");
}

static void test_the_table_gives_the_compiler_s_layout(void)
{
    const char *type;
    uint64_t value, size;
    REQUIRE(find("", "dt_event", &type, &value, &size));
    CHECK_STR(type, "struct");
    CHECK_EQ(size, (uint64_t)sizeof(dt_event));
    REQUIRE(find("dt_event", "u.kernel.grid", &type, &value, &size));
    CHECK_STR(type, "int32_t[3]");
    CHECK_EQ(value, (uint64_t)offsetof(dt_event, u.kernel.grid));
    CHECK_EQ(size, (uint64_t)sizeof(int32_t[3]));
    REQUIRE(find("dt_event", "u.collective", &type, &value, &size));
    CHECK_STR(type, "struct");
    REQUIRE(find("dt_config", "flight_recorder_bytes", &type, &value, &size));
    CHECK_EQ(value, (uint64_t)offsetof(dt_config, flight_recorder_bytes));
    REQUIRE(find("", "DT_TIMESTAMP_UNKNOWN", &type, &value, &size));
    CHECK_STR(type, "constant");
    CHECK_EQ(value, (uint64_t)UINT64_MAX);
    REQUIRE(find("dt_loss_reason", "DT_LOSS_COUNT", &type, &value, &size));
    CHECK_EQ(value, (uint64_t)DT_LOSS_COUNT);
    REQUIRE(find("", "dt_session_events", &type, &value, &size));
    CHECK_STR(type, "size_t (const dt_session *, size_t, size_t, dt_event *)");
    CHECK(!find("", "dt_no_such_function", &type, &value, &size));
}

static void test_each_kind_is_on_a_device_or_a_host_thread(void)
{
    static const struct {
        dt_event_kind kind;
        unsigned cls;
    } kinds[] = {
        {DT_EVENT_KERNEL, DT_EVENT_CLASS_DEVICE | DT_EVENT_CLASS_LAUNCHED},
        {DT_EVENT_MEMCPY, DT_EVENT_CLASS_DEVICE | DT_EVENT_CLASS_LAUNCHED},
        {DT_EVENT_MEMSET, DT_EVENT_CLASS_DEVICE | DT_EVENT_CLASS_LAUNCHED},
        {DT_EVENT_RUNTIME, DT_EVENT_CLASS_HOST | DT_EVENT_CLASS_API},
        {DT_EVENT_DRIVER, DT_EVENT_CLASS_HOST | DT_EVENT_CLASS_API},
        {DT_EVENT_SYNC, DT_EVENT_CLASS_DEVICE},
        {DT_EVENT_OVERHEAD, DT_EVENT_CLASS_DEVICE},
        {DT_EVENT_RANGE, DT_EVENT_CLASS_HOST},
        {DT_EVENT_OP, DT_EVENT_CLASS_HOST},
        {DT_EVENT_COLLECTIVE, DT_EVENT_CLASS_DEVICE | DT_EVENT_CLASS_LAUNCHED},
        {DT_EVENT_MEMORY, DT_EVENT_CLASS_DEVICE},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        CHECK_EQ(dt_event_kind_class(kinds[i].kind), kinds[i].cls);
    /* numbers that are no kind: below, just above, past a shift's width */
    static const unsigned none[] = {0, DT_EVENT_MEMORY + 1, 31, 32, 33, 64, 255, INT_MAX, UINT_MAX};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        CHECK_EQ(dt_event_kind_class((dt_event_kind)none[i]), 0u);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_the_table_is_read_whole_and_ends),
             DT_TEST(test_the_table_gives_the_compiler_s_layout),
             DT_TEST(test_each_kind_is_on_a_device_or_a_host_thread))

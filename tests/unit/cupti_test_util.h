/*
 * The stand-in main of a CUPTI unit test in a build without the CUPTI
 * headers: one skipped test, so that ctest still lists the test and says
 * why it did nothing instead of passing silently or vanishing.
 *
 * Include it in the #else branch of the file's DT_HAVE_CUPTI test, after
 * <cmocka.h>; it defines main, so include it in nothing else.
 */
#ifndef DT_CUPTI_TEST_UTIL_H
#define DT_CUPTI_TEST_UTIL_H

static void test_built_without_cupti(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_built_without_cupti)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif

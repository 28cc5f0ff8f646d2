/*
 * The stand-in main of a CUPTI unit test in a build without the CUPTI
 * headers (or without the CUPTI emulator, for the tests that need it): one
 * skipped test, so that ctest still lists the test and says why it did
 * nothing instead of passing silently or vanishing.
 *
 * Include it in the #else branch of the file's DT_HAVE_CUPTI test, after
 * "dt_check.h"; it defines main, so include it in nothing else.
 */
#ifndef DT_CUPTI_TEST_UTIL_H
#define DT_CUPTI_TEST_UTIL_H

static void test_built_without_cupti(void)
{
    SKIP("built without the CUPTI headers (set CUDA_HOME and rebuild) or, for this test, without the CUPTI "
         "emulator (DEVTRACE_BUILD_EMULATORS)");
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(test_built_without_cupti))

#endif

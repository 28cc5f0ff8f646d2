/*
 * The one assertion vocabulary of devtrace's C tests (unit, backend,
 * conformance, emulator):
 *
 *   CHECK(cond [, fmt, ...])       report a failure and carry on
 *   REQUIRE(cond [, fmt, ...])     report and end the current test case
 *   CHECK_EQ(a, b) / REQUIRE_EQ    integers, both values printed
 *   CHECK_NE(a, b) / REQUIRE_NE
 *   CHECK_STR(a, b) / REQUIRE_STR  strings (NULL never equals)
 *   FAIL(fmt, ...)                 an unconditional REQUIRE failure
 *   SKIP(fmt, ...)                 end the current case as skipped, saying why
 *
 * A program is either a list of cases run by dt_test_main (each case a
 * `static void name(void)`, listed with DT_TEST(name); `prog [case...]` runs
 * some), or one scenario per process (conformance), where REQUIRE ends the
 * process. The exit status is 0 when every case passed or skipped, 1 when
 * any failed; a program whose cases all skipped exits 77, which CTest
 * reports as skipped (SKIP_RETURN_CODE).
 *
 * DT_CHECK_CONTEXT, if defined before the include, is a string expression
 * naming what runs (the scenario), printed with each failure. A program of
 * several files defines DT_TEST_PART before the include in every file but
 * the one with main, so that all count their failures in one place.
 */
#ifndef DT_CHECK_H
#define DT_CHECK_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wformat-zero-length"

#ifndef DT_CHECK_CONTEXT
#define DT_CHECK_CONTEXT dt_check_case
#endif

#define DT_CHECK_UNUSED __attribute__((unused))
/* The program's count of failures, its case and how a failure ends it: one
   for the whole program, defined in the file with main. A test of several
   files defines DT_TEST_PART in each of its other files before the
   include. */
extern int dt_check_failures;
extern const char *dt_check_case;
extern jmp_buf *dt_check_jump; /* set while dt_test_main runs a case */
extern int dt_check_skipped;
#ifndef DT_TEST_PART
int dt_check_failures;
const char *dt_check_case = "";
jmp_buf *dt_check_jump;
int dt_check_skipped;
#endif

#define DT_CHECK_SKIP_STATUS 77

__attribute__((format(printf, 5, 6), unused)) static void dt_check_report(int fatal, const char *file, int line,
                                                                   const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: [%s] %s failed: %s", file, line, DT_CHECK_CONTEXT, fatal ? "REQUIRE" : "CHECK", expr);
    if (fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    dt_check_failures++;
    if (!fatal) return;
    if (dt_check_jump) longjmp(*dt_check_jump, 1);
    exit(1);
}

__attribute__((noreturn, format(printf, 1, 2), unused)) static void dt_check_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("[%s] skipped: ", dt_check_case);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    dt_check_skipped++;
    if (dt_check_jump) longjmp(*dt_check_jump, 2);
    exit(DT_CHECK_SKIP_STATUS);
}

#define DT_CHECK_(fatal, cond, expr, ...)                                                              \
    do {                                                                                               \
        if (!(cond)) dt_check_report(fatal, __FILE__, __LINE__, expr, "" __VA_ARGS__);                 \
    } while (0)

#define CHECK(cond, ...) DT_CHECK_(0, cond, #cond, __VA_ARGS__)
#define REQUIRE(cond, ...) DT_CHECK_(1, cond, #cond, __VA_ARGS__)
#define FAIL(...) dt_check_report(1, __FILE__, __LINE__, "FAIL", "" __VA_ARGS__)
#define SKIP(...) dt_check_skip("" __VA_ARGS__)

#define DT_CHECK_CMP_(fatal, a, op, b)                                                                 \
    do {                                                                                               \
        uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                             \
        if (!(va_ op vb_))                                                                             \
            dt_check_report(fatal, __FILE__, __LINE__, #a " " #op " " #b,                              \
                            "%" PRIu64 " (%" PRId64 ") vs %" PRIu64 " (%" PRId64 ")", va_, (int64_t)va_, vb_, \
                            (int64_t)vb_);                                                             \
    } while (0)
#define CHECK_EQ(a, b) DT_CHECK_CMP_(0, a, ==, b)
#define REQUIRE_EQ(a, b) DT_CHECK_CMP_(1, a, ==, b)
#define CHECK_NE(a, b) DT_CHECK_CMP_(0, a, !=, b)
#define REQUIRE_NE(a, b) DT_CHECK_CMP_(1, a, !=, b)

#define DT_CHECK_STR_(fatal, a, b)                                                                     \
    do {                                                                                               \
        const char *sa_ = (a), *sb_ = (b);                                                             \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0)                                                     \
            dt_check_report(fatal, __FILE__, __LINE__, #a " == " #b, "\"%s\" vs \"%s\"", sa_ ? sa_ : "(null)", \
                            sb_ ? sb_ : "(null)");                                                     \
    } while (0)
#define CHECK_STR(a, b) DT_CHECK_STR_(0, a, b)
#define REQUIRE_STR(a, b) DT_CHECK_STR_(1, a, b)

/* ------------------------------------------------------------------ */
/* Running a list of cases                                              */
/* ------------------------------------------------------------------ */
typedef struct dt_test {
    const char *name;
    void (*run)(void);
} dt_test;

#define DT_TEST(fn) {#fn, fn}

/* Runs one case; a REQUIRE that fails or a SKIP returns here. */
static inline void dt_test_run_case(void (*run)(void))
{
    jmp_buf jump;
    dt_check_jump = &jump;
    if (setjmp(jump) == 0) run();
    dt_check_jump = NULL;
}

/* setup/teardown: once around all cases (NULL: none); either returning
   non-zero fails the program. */
static inline int dt_test_main(int argc, char **argv, const dt_test *tests, size_t count, int (*setup)(void),
                               int (*teardown)(void))
{
    if (setup && setup() != 0) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    size_t ran = 0, failed = 0, skipped = 0;
    for (size_t i = 0; i < count; i++) {
        int selected = argc < 2;
        for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], tests[i].name) == 0;
        if (!selected) continue;
        dt_check_case = tests[i].name;
        int before = dt_check_failures, before_skips = dt_check_skipped;
        dt_test_run_case(tests[i].run);
        ran++;
        if (dt_check_failures != before) {
            failed++;
            printf("[%s] FAILED\n", tests[i].name);
        } else if (dt_check_skipped != before_skips) {
            skipped++;
        } else {
            printf("[%s] passed\n", tests[i].name);
        }
    }
    dt_check_case = "";
    if (teardown && teardown() != 0) {
        fprintf(stderr, "teardown failed\n");
        failed++;
    }
    if (ran == 0) {
        fprintf(stderr, "no case matches\n");
        return 1;
    }
    printf("%zu cases: %zu passed, %zu failed, %zu skipped\n", ran, ran - failed - skipped, failed, skipped);
    if (failed) return 1;
    return skipped == ran ? DT_CHECK_SKIP_STATUS : 0;
}

/* Each case in a process of its own (state that is process-wide, as a
   vendor interface is): without arguments the program runs itself once per
   case (`prog CASE`); with them, those cases. Fails when any run failed. */
static inline int dt_test_main_each_in_own_process(int argc, char **argv, const dt_test *tests, size_t count)
{
    if (argc > 1) return dt_test_main(argc, argv, tests, count, NULL, NULL);
    int failed = 0;
    for (size_t i = 0; i < count; i++) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "'%s' %s", argv[0], tests[i].name);
        failed |= system(cmd) != 0;
    }
    return failed;
}

#define DT_TEST_MAIN(setup, teardown, ...)                                                             \
    int main(int argc, char **argv)                                                                    \
    {                                                                                                  \
        static const dt_test tests_[] = {__VA_ARGS__};                                                 \
        return dt_test_main(argc, argv, tests_, sizeof tests_ / sizeof tests_[0], setup, teardown);    \
    }

#endif /* DT_CHECK_H */

/*
 * Assertions for the conformance programs. They run outside any test
 * framework, one scenario or case per process, so a failed CHECK reports
 * and counts (main turns the count into the exit status) while a failed
 * REQUIRE ends the process at once, where carrying on would only crash or
 * report the same fault again.
 *
 * The includer defines CHECK_CONTEXT, a string expression naming what runs
 * (the scenario or case), before including this header.
 */
#ifndef DT_CONFORMANCE_CHECK_H
#define DT_CONFORMANCE_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifndef CHECK_CONTEXT
#error "define CHECK_CONTEXT before including conformance_check.h"
#endif

static int g_failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: [%s] check failed: %s: ", __FILE__, __LINE__, \
                    CHECK_CONTEXT, #cond);                                        \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            g_failures++;                                                         \
        }                                                                         \
    } while (0)

#define REQUIRE(cond, ...)            \
    do {                              \
        if (!(cond)) {                \
            CHECK(cond, __VA_ARGS__); \
            exit(1);                  \
        }                             \
    } while (0)

#endif

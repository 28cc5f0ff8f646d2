/* The median of a benchmark's rounds and their spread (min..max): what the
   benchmarks report, on a machine other work shares. */
#ifndef BENCH_MEDIAN_H
#define BENCH_MEDIAN_H

#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_ROUNDS 64

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* v is left as it was; n is at most BENCH_MAX_ROUNDS. */
static double bench_median(const double *v, int n, double *lo, double *hi)
{
    double s[BENCH_MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, bench_cmp_double);
    *lo = s[0];
    *hi = s[n - 1];
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

#endif

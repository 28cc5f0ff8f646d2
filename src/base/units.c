/* Sizes, durations, counts, factors and signal names as users type them. */
#include "base/units.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A finite number at the start of text; *end past it. Refuses a leading
   space, sign or hex, which strtod would take. */
static int leading_number(const char *text, double *value, const char **end)
{
    if (!text || !((text[0] >= '0' && text[0] <= '9') || text[0] == '.')) return -1;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return -1;
    char *e;
    errno = 0;
    double v = strtod(text, &e);
    if (e == text || errno == ERANGE || !isfinite(v)) return -1;
    *value = v;
    *end = e;
    return 0;
}

/* value x scale as a uint64_t, or -1 when it does not fit. */
static int scaled(double value, double scale, uint64_t *out)
{
    double v = value * scale;
    if (!(v >= 0) || v >= 18446744073709551615.0) return -1;
    *out = (uint64_t)v;
    return 0;
}

int dt__parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !(text[0] >= '0' && text[0] <= '9')) return -1;
    char *e;
    errno = 0;
    unsigned long long n = strtoull(text, &e, 10);
    if (errno == ERANGE) return -1;
    static const char units[] = "KMGT";
    unsigned shift = 0;
    const char *u = *e ? strchr(units, *e >= 'a' && *e <= 'z' ? *e - 'a' + 'A' : *e) : NULL;
    if (u) {
        shift = 10 * (unsigned)(u - units + 1);
        e++;
        if (*e == 'i' || *e == 'I') e++;
    }
    if (*e == 'b' || *e == 'B') e++;
    if (*e || (shift && n > (UINT64_MAX >> shift))) return -1;
    *bytes = (uint64_t)n << shift;
    return 0;
}

int dt__parse_duration(const char *text, uint64_t *ns)
{
    double v;
    const char *e;
    if (leading_number(text, &v, &e) != 0) return -1;
    static const struct { const char *unit; double ns; } units[] = {
        {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"m", 60e9}, {"h", 3600e9},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(e, units[i].unit) == 0) return scaled(v, units[i].ns, ns);
    return -1;
}

int dt__parse_count(const char *text, uint64_t *count)
{
    if (!text || !(text[0] >= '0' && text[0] <= '9')) return -1;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(text, &e, 10);
    if (*e || errno == ERANGE) return -1;
    *count = v;
    return 0;
}

int dt__parse_number(const char *text, double *value)
{
    const char *e;
    if (leading_number(text, value, &e) != 0 || *e) return -1;
    return 0;
}

int dt__parse_request_signal(const char *text)
{
    if (!text) return -1;
    if (strncasecmp(text, "SIG", 3) == 0) text += 3;
    if (strcasecmp(text, "USR1") == 0) return SIGUSR1;
    if (strcasecmp(text, "USR2") == 0) return SIGUSR2;
    int base, dir;
    if (strncasecmp(text, "RTMIN", 5) == 0) base = SIGRTMIN, dir = 1;
    else if (strncasecmp(text, "RTMAX", 5) == 0) base = SIGRTMAX, dir = -1;
    else return -1;
    text += 5;
    if (!*text) return base;
    uint64_t off;
    if (*text != (dir > 0 ? '+' : '-') || dt__parse_count(text + 1, &off) != 0) return -1;
    if (off > (uint64_t)(SIGRTMAX - SIGRTMIN)) return -1;
    return base + dir * (int)off;
}

void dt__request_signal_name(int sig, char *out, unsigned n)
{
    if (sig == SIGUSR1) snprintf(out, n, "USR1");
    else if (sig == SIGUSR2) snprintf(out, n, "USR2");
    else if (sig == SIGRTMIN) snprintf(out, n, "RTMIN");
    else if (sig > SIGRTMIN && sig <= SIGRTMAX) snprintf(out, n, "RTMIN+%d", sig - SIGRTMIN);
    else snprintf(out, n, "%d", sig);
}

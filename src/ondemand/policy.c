/* The flight recorder's dump triggers as decisions on given times
   (policy.h says what each trigger means). */
#include "ondemand/policy.h"
#include "base/units.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dt__ondemand_policy_init(dt_flight_policy *p, const dt_dump_triggers *cfg)
{
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
}

/* The first index of sorted[0..n) whose value is >= v. */
static unsigned lower_bound(const uint64_t *sorted, unsigned n, uint64_t v)
{
    unsigned lo = 0, hi = n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (sorted[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The window takes a duration; when full, the oldest leaves: both in the
   ring and in the sorted copy, by moving at most DT_FLIGHT_WINDOW values. */
static void window_add(dt_flight_policy *p, uint64_t d)
{
    unsigned n = p->window_count;
    if (n == DT_FLIGHT_WINDOW) {
        uint64_t old = p->window[p->window_next];
        unsigned at = lower_bound(p->sorted, n, old);
        memmove(&p->sorted[at], &p->sorted[at + 1], (n - at - 1) * sizeof *p->sorted);
        n--;
    } else {
        p->window_count++;
    }
    unsigned at = lower_bound(p->sorted, n, d);
    memmove(&p->sorted[at + 1], &p->sorted[at], (n - at) * sizeof *p->sorted);
    p->sorted[at] = d;
    p->window[p->window_next] = d;
    p->window_next = (p->window_next + 1) % DT_FLIGHT_WINDOW;
}

uint64_t dt__ondemand_policy_median(const dt_flight_policy *p)
{
    unsigned n = p->window_count;
    if (n == 0) return 0;
    if (n % 2) return p->sorted[n / 2];
    uint64_t a = p->sorted[n / 2 - 1], b = p->sorted[n / 2];
    return a + (b - a) / 2;
}

void dt__ondemand_policy_step(dt_flight_policy *p, uint64_t number, uint64_t now_ns, uint64_t duration_ns)
{
    if (duration_ns > 0) {
        uint64_t median = dt__ondemand_policy_median(p);
        double k = p->cfg.slow_step_factor;
        if (k > 0 && !p->slow_pending && p->window_count > 0 && p->steps_timed >= p->cfg.warmup_steps &&
            (double)duration_ns > k * (double)median) {
            uint64_t grace = p->cfg.grace_ns;
            if (!grace) grace = 2 * median > DT_FLIGHT_MIN_GRACE_NS ? 2 * median : DT_FLIGHT_MIN_GRACE_NS;
            p->slow_pending = 1;
            p->slow_due_ns = now_ns + grace;
            p->slow_number = p->have_step ? p->last_step_number : 0;
            p->slow_duration_ns = duration_ns;
            p->slow_median_ns = median;
            p->slow_window = p->window_count;
        }
        window_add(p, duration_ns);
        p->steps_timed++;
    }
    p->have_step = 1;
    p->last_step_number = number;
    p->last_step_ns = now_ns;
    p->stall_due_once = 0;
}

void dt__ondemand_policy_signal(dt_flight_policy *p)
{
    p->signal_pending = 1;
}

static void say(dt_flight_policy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(dt_flight_policy *p, const char *fmt, ...)
{
    size_t used = strlen(p->why);
    if (used && used + 2 < sizeof p->why) used += (size_t)snprintf(p->why + used, sizeof p->why - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why + used, sizeof p->why - used, fmt, ap);
    va_end(ap);
}

static void say_slow_step(dt_flight_policy *p)
{
    say(p, "slow step %llu: %.3f ms, %.1f x the median %.3f ms of the last %u steps",
        (unsigned long long)p->slow_number, p->slow_duration_ns / 1e6,
        p->slow_median_ns ? (double)p->slow_duration_ns / (double)p->slow_median_ns : 0.0, p->slow_median_ns / 1e6,
        p->slow_window);
    p->slow_pending = 0;
}

static int stall_armed(const dt_flight_policy *p)
{
    return p->cfg.stall_ns && p->have_step && !p->stall_due_once;
}

/* Whether the causes (count of them) may dump at now_ns; counts them as
   skipped when not. cooldown: whether the cooldown holds them back. */
static int admitted(dt_flight_policy *p, unsigned count, uint64_t now_ns, int cooldown)
{
    if (p->dumps >= p->cfg.max_dumps) {
        p->skipped_cap += count;
        return 0;
    }
    if (cooldown && p->dumps > 0 && now_ns - p->last_dump_ns < p->cfg.cooldown_ns) {
        p->skipped_cooldown += count;
        return 0;
    }
    return 1;
}

unsigned dt__ondemand_policy_due(dt_flight_policy *p, uint64_t now_ns, uint64_t *next_ns)
{
    unsigned causes = 0, count = 0;
    p->why[0] = 0;
    if (p->slow_pending && now_ns >= p->slow_due_ns) {
        say_slow_step(p);
        causes |= DT_FLIGHT_SLOW_STEP;
        count++;
    }
    if (stall_armed(p) && now_ns - p->last_step_ns >= p->cfg.stall_ns) {
        say(p, "stall: no step for %.3f s after step %llu", (now_ns - p->last_step_ns) / 1e9,
            (unsigned long long)p->last_step_number);
        p->stall_due_once = 1;
        causes |= DT_FLIGHT_STALL;
        count++;
    }
    if (p->signal_pending) {
        char name[32];
        dt__request_signal_name(p->cfg.signal, name, sizeof name);
        say(p, "signal SIG%s", name);
        p->signal_pending = 0;
        causes |= DT_FLIGHT_SIGNAL;
        count++;
    }
    if (causes && !admitted(p, count, now_ns, 1)) causes = 0;
    uint64_t next = UINT64_MAX;
    if (p->slow_pending) next = p->slow_due_ns;
    if (stall_armed(p) && p->last_step_ns + p->cfg.stall_ns < next) next = p->last_step_ns + p->cfg.stall_ns;
    *next_ns = next;
    return causes;
}

int dt__ondemand_policy_end(dt_flight_policy *p, const char *how, uint64_t now_ns)
{
    p->why[0] = 0;
    if (!how && !p->slow_pending) return 0;
    if (how) say(p, "the program %s", how);
    if (p->slow_pending) say_slow_step(p);
    return admitted(p, 1, now_ns, !how);
}

void dt__ondemand_policy_dumped(dt_flight_policy *p, uint64_t now_ns)
{
    p->dumps++;
    p->last_dump_ns = now_ns;
}

void dt__ondemand_policy_skipped(const dt_flight_policy *p, char *out, size_t n)
{
    snprintf(out, n, "dumps skipped: %llu (cooldown), %llu (cap)", (unsigned long long)p->skipped_cooldown,
             (unsigned long long)p->skipped_cap);
}

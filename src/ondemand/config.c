/* The flight recorder's dump triggers as a configuration: the defaults,
   `devtrace record`'s options and the environment that carries them
   (config.h). */
#include "ondemand/config.h"

#include "base/env_names.h"
#include "base/log.h"
#include "base/units.h"
#include "protocol/record.h"

#include <stdio.h>
#include <string.h>

void dt__ondemand_dump_triggers_init(dt_dump_triggers *t)
{
    memset(t, 0, sizeof *t);
    t->warmup_steps = 10;
    t->cooldown_ns = UINT64_C(60) * 1000000000u;
    t->max_dumps = 5;
}

const dt_dump_option dt__ondemand_dump_options[] = {
    {"dump-on-slow-step", DT_ENV_DUMP_ON_SLOW_STEP, "K"},
    {"dump-warmup", DT_ENV_DUMP_WARMUP, "STEPS"},
    {"dump-grace", DT_ENV_DUMP_GRACE, "SECONDS"},
    {"dump-on-stall", DT_ENV_DUMP_ON_STALL, "SECONDS"},
    {"dump-on-signal", DT_ENV_DUMP_ON_SIGNAL, "SIGNAL"},
    {"dump-cooldown", DT_ENV_DUMP_COOLDOWN, "SECONDS"},
    {"dump-max", DT_ENV_DUMP_MAX, "N"},
    {NULL, NULL, NULL},
};

int dt__ondemand_dump_option_set(dt_dump_triggers *t, const dt_dump_option *o, const char *text, char *why, size_t n)
{
    const char *name = o->option;
    int ok;
    if (strcmp(name, "dump-on-slow-step") == 0) {
        double k;
        ok = dt__parse_number(text, &k) == 0 && k > 1 && k < 1e6;
        if (ok) t->slow_step_factor = k;
    } else if (strcmp(name, "dump-on-signal") == 0) {
        int sig = dt__parse_request_signal(text);
        ok = sig > 0;
        if (ok) t->signal = sig;
    } else if (strcmp(name, "dump-warmup") == 0 || strcmp(name, "dump-max") == 0) {
        uint64_t v;
        ok = dt__parse_count(text, &v) == 0 && v < UINT32_MAX;
        if (ok) *(strcmp(name, "dump-max") == 0 ? &t->max_dumps : &t->warmup_steps) = v;
    } else {
        int stall = strcmp(name, "dump-on-stall") == 0;
        uint64_t ns = 0, *field = stall ? &t->stall_ns : strcmp(name, "dump-grace") == 0 ? &t->grace_ns
                                                                                       : &t->cooldown_ns;
        ok = dt__parse_duration(text, &ns) == 0 && (ns > 0 || !stall);
        if (ok) *field = ns;
    }
    if (ok) return 0;
    static const struct { const char *option, *takes; } takes[] = {
        {"dump-on-slow-step", "a factor above 1 (3: a step 3 times the median)"},
        {"dump-on-signal", "USR1, USR2, RTMIN, RTMIN+N or RTMAX-N"},
        {"dump-warmup", "a count of steps"},
        {"dump-max", "a count of dumps"},
        {"dump-on-stall", "a duration above 0: seconds, or with a unit (500ms, 2m)"},
    };
    const char *what = "a duration: seconds, or with a unit (500ms, 2m)";
    for (size_t i = 0; i < sizeof takes / sizeof *takes; i++)
        if (strcmp(takes[i].option, name) == 0) what = takes[i].takes;
    snprintf(why, n, "--%s (%s) takes %s, not '%s'", name, o->env, what, text ? text : "");
    return -1;
}

int dt__ondemand_dump_triggers_from_env(dt_dump_triggers *t, char *why, size_t n)
{
    dt__ondemand_dump_triggers_init(t);
    int rc = 0;
    for (const dt_dump_option *o = dt__ondemand_dump_options; o->option; o++) {
        const char *v = dt__env(o->env);
        char later[256];
        if (v && dt__ondemand_dump_option_set(t, o, v, rc == 0 ? why : later, rc == 0 ? n : sizeof later) != 0) rc = -1;
    }
    return rc;
}

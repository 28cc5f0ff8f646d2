/*
 * The on-demand layer's configuration (src/ondemand/config.c): when the
 * flight recorder dumps its window (the dump triggers, which `devtrace
 * record`'s --dump-* options and DEVTRACE_DUMP_* set), and how long a
 * capture waits when its request names no timeout. The limits of what a
 * request may ask for (DT_CTL_MAX_WINDOW_NS, DT_CTL_MAX_STEPS) are the
 * wire's, protocol/control_wire.h: the message parser refuses a request
 * past them, on both sides of the channel. Internal, not installed.
 */
#ifndef DT_ONDEMAND_CONFIG_H
#define DT_ONDEMAND_CONFIG_H

#include "base/common.h"

#include <stddef.h>
#include <stdint.h>

/* The default for a request's timeout_ns (0): how long a steps window
   waits for its steps, and an external capture for the program. */
#define DT_ONDEMAND_DEFAULT_TIMEOUT_NS (60ull * 1000000000ull)

/* When a flight recorder dumps its window to a file (ondemand/triggers.h). */
typedef struct dt_dump_triggers {
    double slow_step_factor; /* a step longer than this x the rolling median (> 1); 0: off */
    uint64_t warmup_steps;   /* steps timed before a slow step counts (default 10) */
    uint64_t grace_ns;       /* wait after the slow step; 0 (default): max(1 s, 2 x the median) */
    uint64_t stall_ns;       /* no step boundary for this long; 0: off */
    int signal;              /* the signal that asks for a dump; 0: none (no handler) */
    uint64_t cooldown_ns;    /* between dumps (default 60 s) */
    uint64_t max_dumps;      /* per run (default 5) */
} dt_dump_triggers;

/* The defaults: no trigger but the end of a program that failed. */
DT_HIDDEN void dt__ondemand_dump_triggers_init(dt_dump_triggers *t);

/* `devtrace record`'s options that set dt_dump_triggers, and the
   environment variable that carries each to the traced program (the
   record protocol's, protocol/record.h). */
typedef struct dt_dump_option {
    const char *option; /* "dump-on-slow-step": --dump-on-slow-step=VALUE */
    const char *env;    /* DEVTRACE_DUMP_ON_SLOW_STEP */
    const char *value;  /* what VALUE is, for messages: "K", "SECONDS" */
} dt_dump_option;
/* The options; the list ends with an entry whose option is NULL. */
DT_HIDDEN extern const dt_dump_option dt__ondemand_dump_options[];
/* VALUE of the option o into t: 0, or -1 with why (a message naming the
   option and what it takes). */
DT_HIDDEN int dt__ondemand_dump_option_set(dt_dump_triggers *t, const dt_dump_option *o, const char *text, char *why,
                                          size_t n);
/* The defaults and every option the environment sets: 0, or -1 with why
   (the first bad value, by its variable's name; t keeps the defaults for
   it). */
DT_HIDDEN int dt__ondemand_dump_triggers_from_env(dt_dump_triggers *t, char *why, size_t n);

#endif /* DT_ONDEMAND_CONFIG_H */

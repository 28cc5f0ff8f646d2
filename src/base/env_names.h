#ifndef DT_BASE_ENV_NAMES_H
#define DT_BASE_ENV_NAMES_H

/* The environment variables devtrace reads or sets, by name: the one place
   their names are written in src/ (tests/layers/check_layers.py fails on a
   "DEVTRACE_..." string anywhere else). A vendor's library variable is its
   row's in src/backends/vendors.def. docs/commands.md ("Environment") says
   what each does for a user. */

/* Read by a session (dt_config_from_env). */
#define DT_ENV_OUTPUT "DEVTRACE_OUTPUT"
#define DT_ENV_BACKEND "DEVTRACE_BACKEND"
#define DT_ENV_KERNEL_QUEUED "DEVTRACE_KERNEL_QUEUED"
/* The flight recorder: the ring's size in bytes, and when its window is
   dumped (dt_dump_triggers, src/ondemand/config.h). */
#define DT_ENV_FLIGHT_RECORDER "DEVTRACE_FLIGHT_RECORDER"
#define DT_ENV_DUMP_ON_SLOW_STEP "DEVTRACE_DUMP_ON_SLOW_STEP"
#define DT_ENV_DUMP_WARMUP "DEVTRACE_DUMP_WARMUP"
#define DT_ENV_DUMP_GRACE "DEVTRACE_DUMP_GRACE"
#define DT_ENV_DUMP_ON_STALL "DEVTRACE_DUMP_ON_STALL"
#define DT_ENV_DUMP_ON_SIGNAL "DEVTRACE_DUMP_ON_SIGNAL"
#define DT_ENV_DUMP_COOLDOWN "DEVTRACE_DUMP_COOLDOWN"
#define DT_ENV_DUMP_MAX "DEVTRACE_DUMP_MAX"

/* Set by `devtrace record` for the traced program (src/protocol/record.h). */
#define DT_ENV_RECORD_LOG "DEVTRACE_RECORD_LOG"           /* the log the lines go to */
#define DT_ENV_RECORD_START_NS "DEVTRACE_RECORD_START_NS" /* when the run began (realtime ns) */
/* Another record holds the output name: its pid, "0" when not known. */
#define DT_ENV_RECORD_NAME_TAKEN "DEVTRACE_RECORD_NAME_TAKEN"
#define DT_ENV_PRIMARY_PID "DEVTRACE_PRIMARY_PID" /* the program record started */

/* Set by the user: the injection library records nothing. */
#define DT_ENV_DISABLE "DEVTRACE_DISABLE"
/* Set by the user or `record --on-demand`: the injection library records
   nothing from start; the process listens for `devtrace trigger` and
   records only the windows asked for. */
#define DT_ENV_ON_DEMAND "DEVTRACE_ON_DEMAND"
/* Set by the user: CUPTI is given to another client that subscribes
   (src/inject/cuda.c). */
#define DT_ENV_CUPTI_HANDOVER "DEVTRACE_CUPTI_HANDOVER"
/* devtrace's own log on standard error (src/base/log.c). */
#define DT_ENV_LOG "DEVTRACE_LOG"
/* The injection library `devtrace record` preloads, in place of its own. */
#define DT_ENV_INJECT_LIBRARY "DEVTRACE_INJECT_LIBRARY"
/* The Python `devtrace convert`, `analyze` and `diff` run. */
#define DT_ENV_PYTHON "DEVTRACE_PYTHON"

#endif

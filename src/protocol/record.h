/*
 * The record protocol: how `devtrace record` (src/cli) and the injection
 * library it preloads into the traced program (src/inject) talk.
 *
 * record -> each traced process: the environment variables below, set for
 * the program it runs (the session's own, DEVTRACE_OUTPUT and the others
 * that dt_config_from_env reads, included).
 *
 * each traced process -> record: one line per event of the process's life,
 * appended in one write to the file DT_ENV_RECORD_LOG names:
 *
 *   <pid> \t <state> [\t backend=<name> \t events=<n> \t loss.<reason>=<n> ...]
 *         [\t path=<path>] [\t message=<text>] \n
 *
 * state: started (recording), wrote (a trace), empty (recorded nothing, no
 * trace), failed (the trace could not be written), off (could not record),
 * note (something the user should know, printed as it is). A flight
 * recorder's session also says: dumped (a dump of its ring was written; the
 * session goes on), dump_failed (a dump could not be written; goes on) and
 * ended (it ended, and writes no trace of its own: the ring is no full
 * trace). A process on demand says: listening (it listens for `devtrace
 * trigger`, path: its socket), not_listening (it could not listen: message
 * says why; it runs on, recording nothing) and captured (a capture
 * `devtrace trigger` asked for was written to the trigger's output: the
 * message says what it held). The counts come with wrote, empty, failed, dumped and ended when
 * the session got that far; loss.<reason>
 * is one per dt_loss_reason, by dt_loss_reason_name. A value's backslash,
 * tab, newline and carriage return are written \\ \t \n \r, so that a path
 * with any of them comes back whole; a message is one line of text, its
 * tabs and line breaks made spaces before it is written.
 */
#ifndef DT_PROTOCOL_RECORD_H
#define DT_PROTOCOL_RECORD_H

#include "base/common.h"
#include "base/env_names.h"
#include "devtrace/devtrace.h"

#include <stddef.h>
#include <stdint.h>

/* The environment variables record sets and the traced program reads:
   base/env_names.h (DT_ENV_*). */

typedef enum dt_record_state {
    DT_RECORD_STARTED,
    DT_RECORD_WROTE,
    DT_RECORD_EMPTY,
    DT_RECORD_FAILED,
    DT_RECORD_OFF,
    DT_RECORD_NOTE,
    DT_RECORD_DUMPED,
    DT_RECORD_DUMP_FAILED,
    DT_RECORD_ENDED,
    DT_RECORD_LISTENING,
    DT_RECORD_NOT_LISTENING,
    DT_RECORD_CAPTURED,
    DT_RECORD_STATE_COUNT
} dt_record_state;

/* The longest path and message a line carries whole (longer ones are cut),
   and a buffer that holds any line. */
#define DT_RECORD_PATH_MAX 4608
#define DT_RECORD_MESSAGE_MAX 1400
#define DT_RECORD_BACKEND_MAX 64
#define DT_RECORD_LINE_MAX 16384

/* started, off: a session began recording, or could not; listening,
   not_listening: a process on demand listens (path: its socket), or
   could not. */
typedef struct dt_record_start {
    char path[DT_RECORD_PATH_MAX];       /* the trace it would write; "" */
    char message[DT_RECORD_MESSAGE_MAX]; /* why not (off), how (a forked child); "" */
} dt_record_start;

/* wrote, empty, failed, ended: a session ended; dumped, dump_failed: a
   flight recorder's dump. */
typedef struct dt_record_end {
    int has_counts; /* 0: the session did not get so far (backend, events, loss unset) */
    char backend[DT_RECORD_BACKEND_MAX];
    uint64_t events;
    uint64_t loss[DT_LOSS_COUNT]; /* by dt_loss_reason */
    char path[DT_RECORD_PATH_MAX];       /* the trace written, or that could not be */
    char message[DT_RECORD_MESSAGE_MAX]; /* why (failed), or what the user should know; "" */
} dt_record_end;

/* note */
typedef struct dt_record_note {
    char message[DT_RECORD_MESSAGE_MAX];
} dt_record_note;

typedef struct dt_record_line {
    int pid;
    dt_record_state state;
    union {
        dt_record_start start; /* DT_RECORD_STARTED, DT_RECORD_OFF, DT_RECORD_LISTENING, DT_RECORD_NOT_LISTENING */
        dt_record_end end;     /* DT_RECORD_WROTE, DT_RECORD_EMPTY, DT_RECORD_FAILED, and the flight
                                  recorder's DT_RECORD_DUMPED, DT_RECORD_DUMP_FAILED, DT_RECORD_ENDED */
        dt_record_note note;   /* DT_RECORD_NOTE, DT_RECORD_CAPTURED */
    } u;
} dt_record_line;

/* "started", "wrote", ...; NULL for another value. */
DT_HIDDEN const char *dt__record_state_name(dt_record_state state);
/* The state a name gives, or -1. */
DT_HIDDEN int dt__record_state_by_name(const char *name);

/* A trace's name for one process: "trace.json" -> "trace.<tag>.json", the
   tag before the format's suffix (.json.gz, .pftrace, ...), else at the
   end. */
DT_HIDDEN void dt__record_tag_path(char *out, size_t n, const char *path, const char *tag);

/* A zeroed line of that state and pid. */
DT_HIDDEN void dt__record_line_init(dt_record_line *line, dt_record_state state, int pid);
/* The line's message and path buffers, whatever its kind (path: NULL for a
   note), so that a writer fills them the same way for every kind. */
DT_HIDDEN char *dt__record_message(dt_record_line *line);
DT_HIDDEN char *dt__record_path(dt_record_line *line);

/* What a trace lost, as `devtrace record` and `devtrace trigger` print it:
   "LOST <total> records (<reason> <n>, ...)" or "nothing lost", into buf
   (n bytes). Returns the total lost. */
DT_HIDDEN uint64_t dt__record_loss_summary(char *buf, size_t n, const uint64_t loss[DT_LOSS_COUNT]);

/* Tabs and line breaks in text made spaces: a message as a line carries
   it (and as it is printed elsewhere). */
DT_HIDDEN void dt__record_one_line(char *text);

/* The line as the log holds it, ending in '\n', NUL-terminated in buf (n
   bytes; DT_RECORD_LINE_MAX holds any line). Returns its length, or 0 when
   it does not fit (buf then holds nothing). */
DT_HIDDEN size_t dt__record_format(char *buf, size_t n, const dt_record_line *line);
/* A line of the log (with or without its '\n') into *line: 0, or -1 when
   the text is no record line (no pid, or no known state). Keys it does not
   know are skipped; values longer than their field are cut. */
DT_HIDDEN int dt__record_parse(const char *text, dt_record_line *line);
/* Append the line to the log at log_path in one write (the lines of
   processes writing at once do not mix). 0, or an errno. */
DT_HIDDEN int dt__record_append(const char *log_path, const dt_record_line *line);

#endif

/*
 * The devtrace command's commands, one file each in src/cli/ (record.c,
 * stats.c, check.c, merge.c, trigger.c, backends.c, analysis.c, version.c),
 * each owning its argv, usage and printing over the public API, the
 * protocols and the reader, which returns results; main.c only dispatches
 * (its table names each command with its line of usage).
 *
 * Each takes argv[0] as its own name and returns the exit status.
 */
#ifndef DT_CLI_COMMANDS_H
#define DT_CLI_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

#include "reader/results.h"

int dt__cli_record(int argc, char **argv);
int dt__cli_backends(int argc, char **argv);
int dt__cli_version(int argc, char **argv);
int dt__cli_stats(int argc, char **argv);
int dt__cli_check(int argc, char **argv);
int dt__cli_merge(int argc, char **argv);
/* trigger.h: dt__cli_trigger; analysis.h: dt__cli_analysis (convert, analyze) */

/* stats, check and merge on streams of the caller's (tests, fuzzers, the
   reader's benchmark). Exit status: 0 ok, 1 violations or errors, 2 usage. */
int dt__check_main(int argc, char **argv, FILE *out, FILE *err);
int dt__stats_main(int argc, char **argv, FILE *out, FILE *err);
int dt__merge_main(int argc, char **argv, FILE *out, FILE *err);

/* check over a source, printed as `devtrace check` prints it: 0 when every
   invariant holds, 1 otherwise. flags: DT_CHECK_*. */
int dt__check_source(dt_rd_source *src, const char *label, FILE *out, FILE *err);
int dt__check_source_ex(dt_rd_source *src, const char *label, unsigned flags, FILE *out, FILE *err);
/* stats over a source, printed as `devtrace stats` prints it: reports is
   a comma-separated subset of the reports' names (NULL or "": all).
   Returns 0, 1 when the trace cannot be read, 2 for an unknown report
   name. */
int dt__stats_source(dt_rd_source *src, const char *label, const char *reports, bool csv, FILE *out, FILE *err);

#endif

/* What record and trigger share about a trace's output (src/cli/output.c):
   its name and format, the check that it can be written, the line that
   says where it went, and the usage of --format. */
#ifndef DT_CLI_OUTPUT_H
#define DT_CLI_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "devtrace/devtrace.h"

/* The trace's name and format from -o (NULL: "devtrace") and --format
   (NULL: the name's suffix, else json): a name whose suffix says another
   format than --format gets the format's suffix. 0 with the name in buf and
   the format in *fmt, or 2 (the usage-error status) after saying why, cmd
   naming the command ("devtrace record"). */
int dt__cli_output_name(const char *cmd, const char *output, const char *format, char *buf, size_t n,
                       dt_format *fmt);
/* Whether a trace can be written where asked (its folder exists and takes
   new files; a device or a FIFO is written in place). 0, or -1 with the
   reason in why. */
int dt__cli_check_output(const char *output, char *why, size_t n);
/* "devtrace: process PID (WHO): wrote PATH: N events; LOST (MESSAGE)" on
   stderr: events NULL when not known; lost as dt__record_loss_summary
   says it ("" is "nothing lost"); message "" when none. */
void dt__cli_print_wrote(int pid, const char *who, const char *path, const uint64_t *events, const char *lost,
                        const char *message);
/* The usage lines of --format: the formats by name, the default first,
   and the file suffixes that choose the others (the format table's). */
void dt__cli_print_format_option(FILE *f);

#endif

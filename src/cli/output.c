/* What record and trigger share about a trace's output (output.h). */
#include "cli/output.h"

#include "base/atomic_file.h"
#include "base/os.h"
#include "format/formats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dt__cli_output_name(const char *cmd, const char *output, const char *format, char *buf, size_t n,
                       dt_format *fmt)
{
    int f = format ? dt_format_by_name(format) : (int)dt_format_of_path(output ? output : "", DT_FORMAT_JSON);
    if (f < 0) {
        char names[128];
        fprintf(stderr, "%s: --format must be %s, not %s\n", cmd,
                dt__fmt_list(names, sizeof names, DT_FMT_NAME, -1, ", ", " or "), format);
        return 2;
    }
    if (!output || dt_format_of_path(output, DT_FORMAT_JSON) != (dt_format)f)
        dt_format_path(output ? output : "devtrace", (dt_format)f, buf, n);
    else
        snprintf(buf, n, "%s", output);
    if (!dt_format_available((dt_format)f)) {
        fprintf(stderr, "%s: %s: %s\n", cmd, buf, DT_NO_GZIP_MESSAGE);
        return 2;
    }
    *fmt = (dt_format)f;
    return 0;
}

/* The trace must be writable where asked before PROGRAM runs for hours.
   0, or -1 with the reason in why. */
int dt__cli_check_output(const char *output, char *why, size_t n)
{
    char dir[4096];
    dt__path_dir(dir, sizeof dir, output);
    if (strchr(dir, '%')) return 0; /* the folder depends on the process: checked by each */
    struct stat st;
    const char *refused;
    if (!strchr(output, '%')) {
        dt_output_kind kind = dt__output_kind_of(output, &refused);
        if (kind == DT_OUTPUT_IN_PLACE) {
            /* written in place: the folder need not take new files */
            if (access(output, W_OK) != 0) {
                snprintf(why, n, "%s", strerror(errno));
                return -1;
            }
            return 0;
        }
        if (kind == DT_OUTPUT_REFUSED && !(stat(output, &st) == 0 && S_ISDIR(st.st_mode))) {
            snprintf(why, n, "%s", refused);
            return -1;
        }
    }
    if (stat(dir, &st) != 0) {
        snprintf(why, n, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%s is not a directory", dir);
        return -1;
    }
    if (!strchr(output, '%') && stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, n, "%s is a directory", output);
        return -1;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.devtrace-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        snprintf(why, n, "cannot create files in %s: %s", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

void dt__cli_print_wrote(int pid, const char *who, const char *path, const uint64_t *events, const char *lost,
                        const char *message)
{
    fprintf(stderr, "devtrace: process %d (%s): wrote %s: ", pid, who, path);
    if (events) fprintf(stderr, "%llu", (unsigned long long)*events);
    fprintf(stderr, " events; ");
    if (lost[0]) fprintf(stderr, "%s", lost);
    else fprintf(stderr, "nothing lost");
    if (message[0]) fprintf(stderr, " (%s)", message);
    fputc('\n', stderr);
}

void dt__cli_print_format_option(FILE *f)
{
    char rest[128], choosers[128];
    fprintf(f,
            "  --format FORMAT     %s (default), %s (also chosen\n"
            "                      by a FILE ending in %s)\n",
            dt_format_name(DT_FORMAT_JSON), dt__fmt_list(rest, sizeof rest, DT_FMT_NAME, DT_FORMAT_JSON, ", ", " or "),
            dt__fmt_list(choosers, sizeof choosers, DT_FMT_CHOOSER, DT_FORMAT_JSON, ", ", " or "));
}

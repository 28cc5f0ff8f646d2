/*
 * Capture of a reader subcommand's stdout and stderr for the unit tests of
 * `devtrace check` and `devtrace stats`. The subcommands take their streams
 * as arguments, so tmpfiles stand in for the terminal and the test reads
 * back exactly what a user would have seen.
 *
 * Include after "dt_check.h"; the helpers REQUIRE on failure.
 */
#ifndef DT_CLI_CAPTURE_H
#define DT_CLI_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>

typedef struct capture {
    FILE *out, *err;
    char *out_text, *err_text;
} capture;

/* Reads back and closes f; the caller frees the text. */
static char *drain(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc((size_t)n + 1, 1);
    REQUIRE(buf != NULL);
    REQUIRE_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

static void cap_open(capture *c)
{
    c->out = tmpfile();
    c->err = tmpfile();
    REQUIRE(c->out != NULL);
    REQUIRE(c->err != NULL);
}

static void cap_close(capture *c)
{
    c->out_text = drain(c->out);
    c->err_text = drain(c->err);
}

static void cap_free(capture *c)
{
    free(c->out_text);
    free(c->err_text);
}

/* Runs a subcommand's main (dt__check_main, dt__stats_main) on captured streams. */
static int cap_run(capture *c, int (*cli_main)(int, char **, FILE *, FILE *), int argc,
                   const char **argv)
{
    cap_open(c);
    int rc = cli_main(argc, (char **)argv, c->out, c->err);
    cap_close(c);
    return rc;
}

#endif

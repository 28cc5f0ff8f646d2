/* The devtrace command: finds the command argv[1] names in the table and
   runs it (each command is a file of src/cli/: commands.h); the table's
   lines are the usage. */
#include "cli/analysis.h"
#include "cli/commands.h"
#include "cli/trigger.h"

#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name, *alias;
    const char *usage; /* its lines in the usage, after the two spaces that indent them */
    int (*run)(int argc, char **argv);
} commands[] = {
    {"record", NULL,
     "record [-o FILE] [--backend NAME] [--format FORMAT] -- PROGRAM [ARGS...]\n"
     "                 run PROGRAM and write a trace of what its accelerators did",
     dt__cli_record},
    {"stats", NULL, "stats FILE     summary tables (kernels, memory, API calls, user ranges)", dt__cli_stats},
    {"check", NULL, "check FILE     verify a trace's invariants; non-zero exit on violations", dt__cli_check},
    {"merge", NULL,
     "merge -o OUT IN...  bring the traces of a job's ranks (or a torch.profiler trace and\n"
     "                 the devtrace trace of the same process) together into one trace",
     dt__cli_merge},
    {"convert", NULL, "convert --to parquet TRACE... -o DIR  traces to a Parquet dataset (Python: devtrace[analysis])",
     dt__cli_analysis},
    {"analyze", NULL, "analyze DIR --report NAME  kernels, temporal, overlap, idle, steps, launch over a dataset",
     dt__cli_analysis},
    {"diff", NULL, "diff BASE TEST [--threshold PCT]  what changed between two datasets; exit 1 past PCT", dt__cli_analysis},
    {"trigger", NULL,
     "trigger PID|--all|--job [--duration S | --steps N] [-o FILE] [--dump]\n"
     "                 capture a window (or the flight recorder's) of a running process\n"
     "                 that listens for requests; --list lists them",
     dt__cli_trigger},
    {"backends", NULL, "backends       list the backends, whether their vendor library is found, and why not",
     dt__cli_backends},
    {"version", "--version", "version        print the version", dt__cli_version},
};
#define COMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: devtrace <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < COMMANDS; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\nRun 'devtrace <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0 || (commands[i].alias && strcmp(cmd, commands[i].alias) == 0))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "devtrace: unknown command %s\n", cmd);
    usage(stderr);
    return 2;
}

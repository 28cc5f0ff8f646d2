#define _GNU_SOURCE 1
#include "callgrind_split.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int part_of(const char *object, const char *emulator)
{
    if (strstr(object, "/libdevtrace.so")) return CG_DEVTRACE;
    char real[PATH_MAX];
    if (realpath(object, real) && strcmp(real, emulator) == 0) return CG_EMULATOR;
    return CG_PROGRAM;
}

int cg_split(const char *path, const char *emulator_path, uint64_t ir[CG_PARTS], char *trigger, size_t trigger_size)
{
    char emulator[PATH_MAX];
    if (!realpath(emulator_path, emulator)) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(ir, 0, CG_PARTS * sizeof *ir);
    if (trigger_size) trigger[0] = '\0';
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    /* ob: the object of the current function; callee: the object of the
       next call's target (cob=, or ob when not given); after_call: the next
       cost line is that call's inclusive cost */
    int ob = CG_PROGRAM, callee = -1, after_call = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[--len] = '\0';
        if (strncmp(line, "ob=", 3) == 0) {
            ob = part_of(line + 3, emulator);
        } else if (strncmp(line, "fn=", 3) == 0) {
            callee = -1;
        } else if (strncmp(line, "cob=", 4) == 0) {
            callee = part_of(line + 4, emulator);
        } else if (strncmp(line, "calls=", 6) == 0) {
            after_call = 1;
        } else if (line[0] >= '0' && line[0] <= '9') {
            unsigned long long position, cost = 0;
            if (sscanf(line, "%llu %llu", &position, &cost) != 2) cost = 0;
            if (after_call) {
                int target = callee < 0 ? ob : callee;
                if (ob != CG_PROGRAM && target == CG_PROGRAM) {
                    ir[ob] += cost;
                    ir[CG_PROGRAM] -= cost;
                }
                after_call = 0;
                callee = -1;
            } else {
                ir[ob] += cost;
            }
        } else if (strncmp(line, "desc: Trigger: ", 15) == 0 && trigger_size) {
            snprintf(trigger, trigger_size, "%s", line + 15);
        }
    }
    free(line);
    int bad = ferror(f);
    fclose(f);
    return bad ? -1 : 0;
}

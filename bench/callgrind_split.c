#define _GNU_SOURCE 1
#include "callgrind_split.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

int cg_total(const char *path, uint64_t *ir, char *trigger, size_t trigger_size)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (trigger_size) trigger[0] = '\0';
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int have = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[--len] = '\0';
        if (strncmp(line, "desc: Trigger: ", 15) == 0 && trigger_size) {
            snprintf(trigger, trigger_size, "%s", line + 15);
        } else if (!have && (strncmp(line, "summary: ", 9) == 0 || strncmp(line, "totals: ", 8) == 0)) {
            *ir = strtoull(strchr(line, ' ') + 1, NULL, 10);
            have = 1;
        }
    }
    free(line);
    fclose(f);
    return have ? 0 : -1;
}

int cg_run_self(const char *tag, char *const args[], const char *const env[], char *dir, size_t dir_size,
                char *command, size_t command_size, char *why, size_t why_size)
{
    char self[PATH_MAX], out[PATH_MAX + 32], log[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(why, why_size, "%s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    snprintf(dir, dir_size, "/tmp/%s.XXXXXX", tag);
    if (!mkdtemp(dir)) {
        snprintf(why, why_size, "%s", strerror(errno));
        return -1;
    }
    snprintf(out, sizeof out, "--callgrind-out-file=%s/cg.%%p", dir);
    snprintf(log, sizeof log, "%s/valgrind.log", dir);
    char *argv[32] = {"valgrind", "--tool=callgrind", out, "--compress-strings=no", "--compress-pos=no", self};
    size_t argc = 6;
    for (size_t i = 0; args && args[i] && argc + 1 < sizeof argv / sizeof *argv; i++) argv[argc++] = args[i];
    argv[argc] = NULL;
    size_t at = 0;
    command[0] = '\0';
    for (size_t i = 0; env && env[i] && env[i + 1]; i += 2)
        at += (size_t)snprintf(command + at, at < command_size ? command_size - at : 0, "%s=%s ", env[i], env[i + 1]);
    for (size_t i = 0; i < argc; i++)
        at += (size_t)snprintf(command + at, at < command_size ? command_size - at : 0, "%s%s", i ? " " : "",
                               i == 2 ? "--callgrind-out-file=..." : argv[i]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        for (size_t i = 0; env && env[i] && env[i + 1]; i += 2) setenv(env[i], env[i + 1], 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(why, why_size, "valgrind %s (is it installed?)",
                 WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "not found" : "failed");
        cg_remove_dir(dir);
        return -1;
    }
    return 0;
}

void cg_each_dump(const char *dir, void (*each)(void *user, const char *path), void *user)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[PATH_MAX];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "cg.", 3) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        each(user, path);
    }
    closedir(d);
}

void cg_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[PATH_MAX];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

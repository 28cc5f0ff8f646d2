/* The devtrace command: record, stats, check, backends. */
#include "dt_internal.h"
#include "reader/dt_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: devtrace <command> [options]\n"
            "\n"
            "commands:\n"
            "  record [-o FILE] [--backend NAME] [--format FORMAT] -- PROGRAM [ARGS...]\n"
            "                 run PROGRAM and write a trace of what its accelerators did\n"
            "  stats FILE     summary tables (kernels, memory, API calls, user ranges)\n"
            "  check FILE     verify a trace's invariants; non-zero exit on violations\n"
            "  merge -o OUT IN...  bring the traces of a job's ranks (or a torch.profiler trace and\n"
            "                 the devtrace trace of the same process) together into one trace\n"
            "  backends       list the backends, whether their vendor library is found, and why not\n"
            "  version        print the version\n"
            "\n"
            "Run 'devtrace <command> --help' for a command's options.\n");
}

static void record_usage(FILE *f)
{
    fprintf(f,
            "usage: devtrace record [-o FILE] [--backend NAME] [--format FORMAT] -- PROGRAM [ARGS...]\n"
            "\n"
            "Runs PROGRAM with the devtrace injection library preloaded and writes one trace\n"
            "per traced process. FILE (default devtrace.json) is used by PROGRAM itself; other\n"
            "processes it starts write FILE with their pid (or, when RANK, OMPI_COMM_WORLD_RANK\n"
            "or SLURM_PROCID is set, with the rank) before the extension. %%p and %%r in FILE are\n"
            "replaced by the pid and rank.\n"
            "\n"
            "  -o, --output FILE   trace file\n"
            "  --backend NAME      auto (default) or a name from 'devtrace backends'\n"
            "  --format FORMAT     json (default), json.gz, perfetto or perfetto.gz (also chosen\n"
            "                      by a FILE ending in .gz, .pftrace or .pftrace.gz)\n"
            "\n"
            "Signals sent to devtrace are forwarded to PROGRAM; a PROGRAM stopped by SIGINT or\n"
            "SIGTERM still writes its trace. The exit status is PROGRAM's.\n"
            "Environment: DEVTRACE_<VENDOR>_LIBRARY overrides where a vendor library is loaded\n"
            "from; DEVTRACE_INJECT_LIBRARY overrides the injection library; DEVTRACE_LOG=1 prints\n"
            "diagnostics.\n");
}

static const char *find_inject_library(const char *argv0)
{
    static char buf[4096];
    const char *env = dt_env("DEVTRACE_INJECT_LIBRARY");
    if (env) return env;
    /* next to the executable: build tree, or <prefix>/bin -> <prefix>/lib */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            static const char *const rel[] = {"/libdevtrace_inject.so", "/../lib/libdevtrace_inject.so",
                                              "/../lib64/libdevtrace_inject.so"};
            for (size_t i = 0; i < 3; i++) {
                snprintf(buf, sizeof buf, "%s%s", self, rel[i]);
                if (access(buf, R_OK) == 0) return buf;
            }
        }
    }
    if (access(DT_INJECT_INSTALL_PATH, R_OK) == 0) return DT_INJECT_INSTALL_PATH;
    if (access(DT_INJECT_BUILD_PATH, R_OK) == 0) return DT_INJECT_BUILD_PATH;
    (void)argv0;
    return NULL;
}

/* A sanitizer build of devtrace preloads a sanitized injection library,
   whose runtime must come first in the traced program: find the runtimes
   this process uses and preload them too. Release builds find none. */
static void sanitizer_runtimes(char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[4096];
    static const char *const libs[] = {"libasan.so", "libtsan.so", "libubsan.so"};
    for (size_t k = 0; k < 3; k++) {
        rewind(f);
        while (fgets(line, sizeof line, f)) {
            char *path = strchr(line, '/');
            if (!path || !strstr(path, libs[k])) continue;
            path[strcspn(path, "\n")] = 0;
            size_t used = strlen(out);
            snprintf(out + used, n - used, "%s%s", used ? ":" : "", path);
            break;
        }
    }
    fclose(f);
}

static volatile sig_atomic_t g_child;

static void forward_signal(int sig)
{
    if (g_child > 0) kill((pid_t)g_child, sig);
}

static void print_report(const char *log_path, int *wrote)
{
    FILE *f = fopen(log_path, "r");
    *wrote = 0;
    if (!f) return;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *fields[32];
        int nf = 0;
        for (char *p = strtok(line, "\t"); p && nf < 32; p = strtok(NULL, "\t")) fields[nf++] = p;
        if (nf < 5) continue;
        const char *pid = fields[0], *backend = fields[1], *path = fields[2], *events = fields[3];
        const char *status = "";
        unsigned long long total = 0;
        char lost[2048] = "";
        for (int i = 4; i < nf; i++) {
            if (strncmp(fields[i], "status=", 7) == 0) { status = fields[i] + 7; continue; }
            char *eq = strchr(fields[i], '=');
            if (!eq) continue;
            unsigned long long v = strtoull(eq + 1, NULL, 10);
            if (v) {
                total += v;
                size_t used = strlen(lost);
                snprintf(lost + used, sizeof lost - used, "%s%.*s %llu", used ? ", " : "",
                         (int)(eq - fields[i]), fields[i], v);
            }
        }
        if (status[0]) {
            fprintf(stderr, "devtrace: process %s: %s\n", pid, status);
            continue;
        }
        (*wrote)++;
        fprintf(stderr, "devtrace: process %s (%s): wrote %s: %s events; ", pid, backend, path, events);
        if (total) fprintf(stderr, "LOST %llu records (%s)\n", total, lost);
        else fprintf(stderr, "nothing lost\n");
    }
    fclose(f);
}

static int cmd_record(int argc, char **argv)
{
    const char *output = NULL, *backend = NULL, *format = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) { i++; break; }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { record_usage(stdout); return 0; }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) output = argv[++i];
        else if (strcmp(a, "--backend") == 0 && i + 1 < argc) backend = argv[++i];
        else if (strcmp(a, "--format") == 0 && i + 1 < argc) format = argv[++i];
        else if (a[0] == '-') {
            fprintf(stderr, "devtrace record: unknown option %s\n", a);
            record_usage(stderr);
            return 2;
        } else break;
    }
    if (i >= argc) {
        fprintf(stderr, "devtrace record: no program given\n");
        record_usage(stderr);
        return 2;
    }
    char outbuf[4096];
    int fmt = format ? dt_format_by_name(format) : DT_FORMAT_JSON;
    if (fmt < 0) {
        fprintf(stderr, "devtrace record: --format must be json, json.gz, perfetto or perfetto.gz, not %s\n", format);
        return 2;
    }
    /* the traced processes choose the format by the file's suffix */
    if (!output) {
        snprintf(outbuf, sizeof outbuf, "devtrace%s", dt_format_suffix((dt_format)fmt));
        output = outbuf;
    } else if (format && dt_format_of_path(output, DT_FORMAT_JSON) != (dt_format)fmt) {
        size_t n = strlen(output);
        bool pftrace = n > 8 && strcmp(output + n - 8, ".pftrace") == 0;
        const char *suffix = fmt == DT_FORMAT_JSON_GZ || (fmt == DT_FORMAT_PERFETTO_GZ && pftrace)
                                 ? ".gz"
                                 : dt_format_suffix((dt_format)fmt);
        snprintf(outbuf, sizeof outbuf, "%s%s", output, suffix);
        output = outbuf;
    }
    if (backend && strcmp(backend, "auto") != 0) {
        int found = 0;
        for (size_t b = 0; b < dt_backend_count(); b++) found |= strcmp(dt_backend_name(b), backend) == 0;
        if (!found) {
            fprintf(stderr, "devtrace record: unknown backend %s (see 'devtrace backends')\n", backend);
            return 2;
        }
    }
    const char *inject = find_inject_library(argv[0]);
    if (!inject) {
        fprintf(stderr, "devtrace record: libdevtrace_inject.so not found next to the devtrace executable, "
                        "in ../lib, or at %s; set DEVTRACE_INJECT_LIBRARY\n", DT_INJECT_INSTALL_PATH);
        return 2;
    }
    char inject_abs[4096];
    if (!realpath(inject, inject_abs)) snprintf(inject_abs, sizeof inject_abs, "%s", inject);

    char log_path[] = "/tmp/devtrace-record-XXXXXX";
    int log_fd = mkstemp(log_path);
    if (log_fd < 0) {
        fprintf(stderr, "devtrace record: cannot create a temporary file in /tmp: %s\n", strerror(errno));
        return 2;
    }
    close(log_fd);

    struct sigaction sa = {0}, old[8];
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &sa, &old[k]);

    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "devtrace record: fork failed: %s\n", strerror(errno));
        unlink(log_path);
        return 2;
    }
    if (child == 0) {
        for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &old[k], NULL);
        const char *pre = getenv("LD_PRELOAD");
        char san[8192];
        sanitizer_runtimes(san, sizeof san);
        if (san[0]) {
            /* the traced program itself is not instrumented: its leaks are not ours */
            const char *ao = getenv("ASAN_OPTIONS");
            char opts[2048];
            snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", ao ? ao : "", ao && *ao ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        char *ld = malloc(strlen(san) + strlen(inject_abs) + (pre ? strlen(pre) : 0) + 3);
        if (!ld) _exit(127);
        sprintf(ld, "%s%s%s%s%s", san, san[0] ? ":" : "", inject_abs, pre && *pre ? ":" : "",
                pre && *pre ? pre : "");
        setenv("LD_PRELOAD", ld, 1);
        free(ld);
        if (!getenv("CUDA_INJECTION64_PATH")) setenv("CUDA_INJECTION64_PATH", inject_abs, 1);
        setenv("DEVTRACE_OUTPUT", output, 1);
        if (backend) setenv("DEVTRACE_BACKEND", backend, 1);
        char pid[32];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv("DEVTRACE_PRIMARY_PID", pid, 1);
        setenv("DEVTRACE_RECORD_LOG", log_path, 1);
        execvp(argv[i], argv + i);
        fprintf(stderr, "devtrace record: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    g_child = child;
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) { status = 127 << 8; break; }
    }
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &old[k], NULL);
    int wrote = 0;
    print_report(log_path, &wrote);
    unlink(log_path);
    if (!wrote) fprintf(stderr, "devtrace: no trace was written (was the program killed by SIGKILL, or is it statically linked?)\n");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "devtrace: %s was terminated by signal %d\n", argv[i], WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return 1;
}

static int cmd_backends(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: devtrace backends\n\nLists every backend, whether its vendor library is found and loads,\n"
                   "its version, and why a backend is unavailable or degraded.\n");
            return 0;
        }
        fprintf(stderr, "devtrace backends: unexpected argument %s\n", argv[i]);
        return 2;
    }
    printf("%-10s %-26s %-11s %-8s %s\n", "BACKEND", "VENDOR", "STATUS", "VERSION", "LIBRARY / REASON");
    for (size_t b = 0; b < dt_backend_count(); b++) {
        dt_backend_status st;
        const char *name = dt_backend_name(b);
        if (dt_backend_probe(name, &st) != DT_OK && !st.reason[0])
            snprintf(st.reason, sizeof st.reason, "%s", dt_last_error());
        printf("%-10s %-26s %-11s %-8s %s\n", name, st.vendor ? st.vendor : "",
               st.available ? "available" : "unavailable", st.version[0] ? st.version : "-",
               st.library[0] ? st.library : "");
        if (st.reason[0]) printf("%-10s   %s\n", "", st.reason);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) { usage(stdout); return 0; }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) { printf("devtrace %s\n", dt_version()); return 0; }
    if (strcmp(cmd, "record") == 0) return cmd_record(argc - 1, argv + 1);
    if (strcmp(cmd, "backends") == 0) return cmd_backends(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0) return dt_cli_stats(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0) return dt_cli_check(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0) return dt_cli_merge(argc - 1, argv + 1);
    fprintf(stderr, "devtrace: unknown command %s\n", cmd);
    usage(stderr);
    return 2;
}

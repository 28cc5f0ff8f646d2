/* `devtrace record`: runs a program with the injection library preloaded,
   reads what its processes report through the record protocol's log
   (src/protocol/record.h), and says where each trace went; its argv, usage
   and printing. */
#include "base/atomic_file.h"
#include "base/env_names.h"
#include "base/log.h"
#include "base/os.h"
#include "base/units.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "devtrace/devtrace.h"
#include "ondemand/config.h"
#include "protocol/record.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void record_usage(FILE *f)
{
    fprintf(f,
            "usage: devtrace record [-o FILE] [--backend NAME] [--format FORMAT] [--kernel-queued]\n"
            "                       [--on-demand]\n"
            "                       [--flight-recorder[=SIZE] [--dump-on-slow-step=K] [--dump-on-stall=SECONDS]\n"
            "                        [--dump-on-signal=SIGNAL] [--dump-cooldown=SECONDS] [--dump-max=N]\n"
            "                        [--dump-warmup=STEPS] [--dump-grace=SECONDS]] -- PROGRAM [ARGS...]\n"
            "\n"
            "Runs PROGRAM with the devtrace injection library preloaded and writes one trace\n"
            "per traced process that recorded something (a user range, an API call, device\n"
            "activity); a process that recorded nothing writes none. FILE (default\n"
            "devtrace.json) is used by PROGRAM itself; other processes it starts write FILE with\n"
            "their pid (or, when RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID is set, with the\n"
            "rank) before the extension. %%p and %%r in FILE are replaced by the pid and rank.\n"
            "A trace written by another process since this run began is never replaced: the\n"
            "process writes FILE with its pid instead, and says so. A record holds FILE for its\n"
            "whole run: the processes of another record started meanwhile with the same FILE\n"
            "replace no file and put their pid in the name, and say so; a trace left by an\n"
            "earlier run is replaced. A character device or a FIFO named as FILE is written in\n"
            "place. FILE's directory must exist and be writable before PROGRAM starts.\n"
            "\n"
            "  -o, --output FILE   trace file\n"
            "  --backend NAME      auto (default) or a name from 'devtrace backends'\n");
    dt__cli_print_format_option(f);
    fprintf(f,
            "  --kernel-queued     record kernels' queued and submitted times (the trace's\n"
            "                      \"queued\"), where the vendor gives them (CUPTI); each launch\n"
            "                      costs more, so they are off by default\n"
            "  --on-demand         record nothing from start: PROGRAM's processes listen for\n"
            "                      'devtrace trigger' and arm the vendor only for the windows it\n"
            "                      asks for (docs/on-demand.md); the traces go where trigger says\n"
            "\n"
            "Flight recorder (docs/on-demand.md): the vendor's records are kept in a ring of SIZE\n"
            "bytes (default 256MiB; K, M, G suffixes) and written only when a dump is asked for,\n"
            "to FILE with .dump1, .dump2, ... before its extension (a file that exists is never\n"
            "replaced). A process whose program exits with a status other than 0, or is ended\n"
            "by SIGINT, SIGTERM, SIGHUP or SIGQUIT, dumps at its end; one that exits with 0\n"
            "writes no trace (the ring is not a full trace). Dumps are also asked by\n"
            "'devtrace trigger PID --dump' and by:\n"
            "  --dump-on-slow-step=K    a step longer than K (> 1) times the median of the last\n"
            "                           64 steps, after --dump-warmup steps (default 10); the dump\n"
            "                           waits --dump-grace (default the larger of 1 s and twice\n"
            "                           the median) for the step's device records\n"
            "  --dump-on-stall=SECONDS  no step for so long (after the first step): once a stall\n"
            "  --dump-on-signal=SIGNAL  USR1, USR2, RTMIN+N: a handler is installed only then\n"
            "  --dump-cooldown=SECONDS  at least so long between dumps (default 60)\n"
            "  --dump-max=N             at most N dumps per process (default 5)\n"
            "Triggers inside the cooldown or past the cap are counted and said. SECONDS also\n"
            "takes units: 500ms, 2m. Steps are dt_step(), devtrace.step() and ProfilerStep#N.\n"
            "\n"
            "Signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) sent to devtrace are forwarded to\n"
            "PROGRAM. A process stopped by one writes its trace first, then ends by the signal;\n"
            "one that handles the signal itself and exits keeps its own exit status. SIGKILL\n"
            "cannot be caught: a process killed by it writes no trace.\n"
            "After PROGRAM ends, devtrace says how many processes were traced and where each\n"
            "trace went.\n"
            "\n"
            "CUDA: CUPTI is attached when a process initialises CUDA (the driver calls the\n"
            "injection library), and never loaded by one that does not. CUPTI takes one\n"
            "client per process: one the program starts itself (torch.profiler with CUDA\n"
            "activity) is refused while devtrace holds it, and devtrace says so; with\n"
            "DEVTRACE_CUPTI_HANDOVER=1 devtrace gives CUPTI to it instead.\n"
            "\n"
            "Exit status:\n"
            "  PROGRAM's own     PROGRAM's exit status, or 128+N when signal N ended it\n"
            "  2                 usage error, FILE cannot be written, or the backend chosen (or a\n"
            "                    vendor library named by DEVTRACE_<VENDOR>_LIBRARY) cannot be\n"
            "                    used (PROGRAM is not run)\n"
            "  125               a trace was lost: it could not be written, recording could not\n"
            "                    start, or PROGRAM never loaded the injection library\n"
            "                    (statically linked or setuid)\n"
            "  126, 127          PROGRAM cannot be executed, or is not found\n"
            "\n"
            "A vendor library that records some activity only when it is in LD_PRELOAD from the\n"
            "start (Ascend's libmspti.so: memory copies, memsets, collectives) is preloaded too, for\n"
            "the backend asked for or, with auto, wherever it is found; devtrace says so.\n"
            "\n"
            "Environment: DEVTRACE_<VENDOR>_LIBRARY overrides where a vendor library is loaded\n"
            "from; DEVTRACE_INJECT_LIBRARY overrides the injection library; DEVTRACE_LOG=1 prints\n"
            "diagnostics.\n");
}

static const char *find_inject_library(const char *argv0)
{
    static char buf[4096];
    const char *env = dt__env(DT_ENV_INJECT_LIBRARY);
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

/* The vendor libraries that must be in LD_PRELOAD from the start of the
   traced program (MSPTI records memory copies, memsets and collectives only
   then): those of the backend asked for, or with "auto" of every backend
   whose library is found, unless LD_PRELOAD has them already. Says so. */
static void vendor_preloads(const char *backend, const char *pre, char *out, size_t n)
{
    out[0] = 0;
    for (size_t i = 0; i < dt_backend_count(); i++) {
        const char *name = dt_backend_name(i), *preload = dt_backend_preload(i);
        if (!preload || (backend && strcmp(backend, "auto") != 0 && strcmp(backend, name) != 0)) continue;
        dt_backend_status st;
        if (dt_backend_probe(name, &st) != DT_OK || !st.available || !st.library[0]) continue;
        if (pre && strstr(pre, preload)) {
            fprintf(stderr, "devtrace: %s is in LD_PRELOAD already\n", preload);
            continue;
        }
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", used ? ":" : "", st.library);
        fprintf(stderr, "devtrace: preloading %s: %s records some kinds only from a library in LD_PRELOAD when "
                        "the program starts\n", st.library, st.vendor);
    }
}

static volatile sig_atomic_t g_child;

static void forward_signal(int sig)
{
    if (g_child > 0) kill((pid_t)g_child, sig);
}

/* The exit status of `record` when PROGRAM ran but a trace it recorded
   could not be written (or recording could not start): devtrace's own,
   like env's and timeout's 125. */
#define DT_EXIT_TRACE_LOST 125

/* What the traced processes reported through the record log (one line per
   event; src/protocol/record.h). A process that execs reports once per
   program it runs (a pyenv shim execs several times): it is counted once. */
typedef struct record_process {
    int pid;
    int open;        /* sessions started and not yet finished */
    int wrote, failed, empty; /* traces written, lost; sessions that recorded nothing */
    int ended;       /* flight-recorder sessions that ended (their dumps are their traces) */
    int dumped;      /* dumps made (or lost) by the program it runs now, since its last end */
    char *quiet_end; /* the last program's end, held back: it dumped nothing (NULL: none) */
} record_process;

typedef struct record_summary {
    int started, wrote, empty, failed, off; /* started, empty: processes; wrote, failed: traces */
    int dumps, dumps_failed;      /* the flight recorder's */
    int dumps_asked;              /* ... of which `devtrace trigger --dump` asked (written to its output) */
    int listening, not_listening; /* processes on demand that listened, or could not */
    int captured;                 /* captures `devtrace trigger` asked, written to its outputs */
    int primary_open;             /* ... and had not finished when it ended */
    record_process *procs;        /* by pid */
    size_t nprocs, capprocs;
    char empty_pids[256];         /* the first few pids that recorded nothing */
    struct { char message[DT_RECORD_MESSAGE_MAX]; int count; } off_messages[8];
    int noff_messages;
} record_summary;

/* The process pid's entry, made when new (NULL when out of memory). */
static record_process *process_of(record_summary *rs, int pid)
{
    for (size_t i = 0; i < rs->nprocs; i++)
        if (rs->procs[i].pid == pid) return &rs->procs[i];
    if (rs->nprocs == rs->capprocs) {
        size_t cap = rs->capprocs ? rs->capprocs * 2 : 16;
        void *p = realloc(rs->procs, cap * sizeof *rs->procs);
        if (!p) return NULL;
        rs->procs = p;
        rs->capprocs = cap;
    }
    record_process *r = &rs->procs[rs->nprocs++];
    memset(r, 0, sizeof *r);
    r->pid = pid;
    return r;
}

static void print_trace_line(const dt_record_line *line)
{
    const dt_record_end *e = &line->u.end;
    char lost[2200];
    dt__record_loss_summary(lost, sizeof lost, e->loss);
    dt__cli_print_wrote(line->pid, e->backend, e->path, e->has_counts ? &e->events : NULL, lost, e->message);
}

static void read_record_log(const char *log_path, int primary, record_summary *rs)
{
    memset(rs, 0, sizeof *rs);
    FILE *f = fopen(log_path, "r");
    if (!f) return;
    dt_record_line *line = malloc(sizeof *line);
    char *text = NULL;
    size_t cap = 0;
    while (line && getline(&text, &cap, f) >= 0) {
        if (dt__record_parse(text, line) != 0) continue;
        record_process *proc = process_of(rs, line->pid);
        if (!proc) continue;
        const char *message = dt__record_message(line);
        switch (line->state) {
        case DT_RECORD_STARTED:
            proc->open++;
            break;
        case DT_RECORD_NOTE:
            fprintf(stderr, "devtrace: process %d: %s\n", line->pid, message);
            break;
        case DT_RECORD_OFF: {
            rs->off++;
            int i;
            for (i = 0; i < rs->noff_messages; i++)
                if (strcmp(rs->off_messages[i].message, message) == 0) break;
            if (i == rs->noff_messages && i < 8) {
                snprintf(rs->off_messages[i].message, sizeof rs->off_messages[i].message, "%s", message);
                rs->noff_messages++;
            }
            if (i < 8) rs->off_messages[i].count++;
            break;
        }
        case DT_RECORD_WROTE:
            proc->open--;
            rs->wrote++;
            proc->wrote++;
            print_trace_line(line);
            break;
        case DT_RECORD_EMPTY:
            proc->open--;
            proc->empty++;
            break;
        case DT_RECORD_FAILED:
            proc->open--;
            rs->failed++;
            proc->failed++;
            fprintf(stderr, "devtrace: process %d: its trace could not be written: %s\n", line->pid, message);
            break;
        case DT_RECORD_DUMPED:
            rs->dumps++;
            proc->dumped++;
            if (line->u.end.path[0]) {
                fprintf(stderr, "devtrace: process %d: dump written: %s (%s)\n", line->pid, line->u.end.path, message);
            } else { /* to the output of the `devtrace trigger --dump` that asked, which said where */
                rs->dumps_asked++;
                fprintf(stderr, "devtrace: process %d: dump written: %s\n", line->pid, message);
            }
            break;
        case DT_RECORD_DUMP_FAILED:
            rs->dumps_failed++;
            proc->dumped++;
            fprintf(stderr, "devtrace: process %d: a dump could not be written: %s\n", line->pid, message);
            break;
        case DT_RECORD_ENDED:
            proc->open--;
            proc->ended++;
            /* A flight recorder ends with each program a process runs: a
               shim that execs (pyenv's python3) ends several in one pid.
               The end of one that dumped is said; one that did not is
               held back, and only the traced program's last is said. */
            free(proc->quiet_end);
            proc->quiet_end = NULL;
            if (proc->dumped) fprintf(stderr, "devtrace: process %d: flight recorder: %s\n", line->pid, message);
            else proc->quiet_end = strdup(message);
            proc->dumped = 0;
            break;
        case DT_RECORD_LISTENING:
            rs->listening++;
            break;
        case DT_RECORD_NOT_LISTENING:
            rs->not_listening++;
            fprintf(stderr, "devtrace: process %d: %s\n", line->pid, message);
            break;
        case DT_RECORD_CAPTURED:
            rs->captured++;
            break;
        case DT_RECORD_STATE_COUNT:
            break;
        }
    }
    free(text);
    free(line);
    fclose(f);
    for (size_t i = 0; i < rs->nprocs; i++) {
        record_process *proc = &rs->procs[i];
        if (proc->quiet_end && proc->pid == primary)
            fprintf(stderr, "devtrace: process %d: flight recorder: %s\n", proc->pid, proc->quiet_end);
        free(proc->quiet_end);
        proc->quiet_end = NULL;
        if (proc->open > 0 && proc->pid == primary) rs->primary_open = 1;
        /* a process that only reported "off" was not traced */
        if (proc->open || proc->wrote || proc->failed || proc->empty || proc->ended) rs->started++;
        if (!proc->empty || proc->wrote || proc->failed) continue;
        if (rs->empty++ < 8) {
            size_t used = strlen(rs->empty_pids);
            snprintf(rs->empty_pids + used, sizeof rs->empty_pids - used, "%s%d", used ? ", " : "", proc->pid);
        }
    }
}

/* Every line the summary prints; returns the exit status of `record`. */
static int summarize(const char *program, int status, const record_summary *rs, int primary, int on_demand)
{
    for (int i = 0; i < rs->noff_messages; i++)
        fprintf(stderr, "devtrace: %d process%s not traced: %s\n", rs->off_messages[i].count,
                rs->off_messages[i].count == 1 ? "" : "es", rs->off_messages[i].message);
    int signaled = WIFSIGNALED(status), sig = signaled ? WTERMSIG(status) : 0;
    int said_signal = 0;
    for (size_t i = 0; i < rs->nprocs; i++) {
        if (rs->procs[i].open <= 0) continue;
        if (rs->procs[i].pid == primary && signaled) {
            if (sig == SIGKILL)
                fprintf(stderr, "devtrace: %s was killed by signal 9 (SIGKILL cannot be caught): what it recorded, "
                                "if anything, is lost\n", program);
            else
                fprintf(stderr, "devtrace: %s was terminated by signal %d (%s) before it could write what it "
                                "recorded, if anything\n", program, sig, strsignal(sig));
            said_signal = 1;
        } else {
            fprintf(stderr, "devtrace: process %d ended without writing what it recorded, if anything (killed by "
                            "SIGKILL, or crashed), or is still running\n", rs->procs[i].pid);
        }
    }
    if (rs->started) {
        fprintf(stderr, "devtrace: traced %d process%s: %d trace%s written", rs->started, rs->started == 1 ? "" : "es",
                rs->wrote, rs->wrote == 1 ? "" : "s");
        if (rs->failed) fprintf(stderr, ", %d lost", rs->failed);
        if (rs->dumps || rs->dumps_failed) fprintf(stderr, "; %d dump%s written", rs->dumps, rs->dumps == 1 ? "" : "s");
        if (rs->dumps_asked) fprintf(stderr, " (%d asked by devtrace trigger)", rs->dumps_asked);
        if (rs->dumps_failed) fprintf(stderr, ", %d lost", rs->dumps_failed);
        if (rs->empty)
            fprintf(stderr, "; %d recorded nothing (no user range, API call or device activity) and wrote no trace "
                            "(pid %s%s)", rs->empty, rs->empty_pids, rs->empty > 8 ? ", ..." : "");
        fputc('\n', stderr);
    }
    int lost = rs->failed || rs->dumps_failed || rs->off || (rs->primary_open && !signaled);
    if (rs->listening || rs->not_listening) {
        /* on demand (--on-demand, or DEVTRACE_ON_DEMAND=1 in the environment) */
        fprintf(stderr, "devtrace: on demand: nothing was recorded from start; %d process%s listened for "
                        "'devtrace trigger'", rs->listening, rs->listening == 1 ? "" : "es");
        if (rs->not_listening)
            fprintf(stderr, ", %d could not (said above)", rs->not_listening);
        fprintf(stderr, "; %d capture%s written to its outputs\n", rs->captured, rs->captured == 1 ? "" : "s");
    } else if (!rs->started && !rs->off && !signaled) {
        if (on_demand) {
            fprintf(stderr, "devtrace: on demand: nothing was recorded from start; the captures that "
                            "'devtrace trigger' asked for went to its outputs\n");
        } else if (dt__env_bool(DT_ENV_DISABLE) == 1) {
            fprintf(stderr, "devtrace: DEVTRACE_DISABLE is set: nothing was recorded\n");
        } else {
            fprintf(stderr, "devtrace: no trace was written: %s did not load the injection library (is it "
                            "statically linked, or setuid?)\n", program);
            lost = 1;
        }
    }
    if (signaled && !said_signal)
        fprintf(stderr, "devtrace: %s was terminated by signal %d (%s)\n", program, sig, strsignal(sig));
    int program_status = WIFEXITED(status) ? WEXITSTATUS(status) : signaled ? 128 + sig : 1;
    if (lost) {
        fprintf(stderr, "devtrace: exit status %d: a trace was lost (%s %s %d)\n", DT_EXIT_TRACE_LOST, program,
                signaled ? "ended with" : "exited with status", signaled ? 128 + sig : program_status);
        return DT_EXIT_TRACE_LOST;
    }
    return program_status;
}

/* A backend the user chose, or a vendor library the user named, that cannot
   be used is an error now, before the program runs, rather than a lost trace
   at its end (or none: CUPTI is loaded only in processes that initialise
   CUDA). 0 when recording can go ahead. */
static int preflight_backend(const char *backend, char *why, size_t len)
{
    for (size_t b = 0; b < dt_backend_count(); b++) {
        const char *name = dt_backend_name(b), *library_env = dt_backend_library_env(b);
        int chosen = backend && strcmp(backend, "auto") != 0 && strcmp(backend, name) == 0;
        int named = (!backend || strcmp(backend, "auto") == 0) && library_env && dt__env(library_env);
        if (!chosen && !named) continue;
        dt_backend_status st;
        memset(&st, 0, sizeof st);
        if (dt_backend_probe(name, &st) == DT_OK && st.available) continue;
        if (named)
            snprintf(why, len, "%s=%s cannot be used: %s", library_env, dt__env(library_env),
                     st.reason[0] ? st.reason : dt_last_error());
        else
            snprintf(why, len, "the %s backend is unavailable: %s", name, st.reason[0] ? st.reason : dt_last_error());
        return -1;
    }
    return 0;
}

/* A record holds its output name for its whole run, so that records
   started together with the same -o never replace each other's traces:
   the first holds it and its program writes FILE; every other one's
   processes replace no file and put their pid in the name
   (DT_ENV_RECORD_NAME_TAKEN, read by src/inject/inject.c). The claim is
   a lock on a hidden file beside FILE, which the kernel releases when its
   record ends however it ends: a claim file left by a record that was
   killed holds nothing. */
typedef struct output_claim {
    int fd;              /* held: >= 0 */
    char path[4200];
    int owner;           /* held by another record: its pid, 0 when not known */
    int taken;           /* held by another record */
} output_claim;

static void claim_output(const char *output, output_claim *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    char dir[4096];
    dt__path_dir(dir, sizeof dir, output);
    if (strchr(dir, '%') || dt__output_kind_of(output, NULL) != DT_OUTPUT_FILE) return;
    const char *base = strrchr(output, '/');
    base = base ? base + 1 : output;
    if (strlen(dir) + strlen(base) + 20 >= sizeof c->path) return;
    snprintf(c->path, sizeof c->path, "%.4095s/.%.*s.devtrace-claim", dir, (int)(sizeof c->path - 4096 - 20), base);
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(c->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) break;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                char buf[32] = "";
                ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
                c->owner = r > 0 ? atoi(buf) : 0;
                c->taken = 1;
            }
            close(fd);
            break; /* no lock at all (unsupported): recorded as before, unclaimed */
        }
        /* the file may have been released and removed by its last holder
           between the open and the lock: then it is no claim */
        struct stat held, now;
        if (fstat(fd, &held) == 0 && stat(c->path, &now) == 0 && held.st_dev == now.st_dev &&
            held.st_ino == now.st_ino) {
            char buf[32];
            int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len)
                dt__log("cannot write the claim %s: %s", c->path, strerror(errno));
            c->fd = fd;
            return;
        }
        close(fd);
    }
    if (!c->taken) c->path[0] = 0;
}

static void release_output(output_claim *c)
{
    if (c->fd < 0) return;
    unlink(c->path); /* while locked: a record that opened it meanwhile sees it gone */
    close(c->fd);
    c->fd = -1;
}

/* --flight-recorder[=SIZE] (arg: what follows the option's name): the
   value the traced program is given (DEVTRACE_FLIGHT_RECORDER; "on": the
   default size), or NULL when SIZE is no size (said). */
static const char *flight_size(const char *arg)
{
    uint64_t bytes;
    if (*arg == '=' && (dt__parse_size(arg + 1, &bytes) != 0 || bytes == 0)) {
        fprintf(stderr, "devtrace record: --flight-recorder takes a size above 0 (256M, 1G, or bytes), not '%s'\n",
                arg + 1);
        return NULL;
    }
    if (*arg == '=' && bytes < DT_FLIGHT_RECORDER_MIN_BYTES) {
        fprintf(stderr, "devtrace record: --flight-recorder takes at least %uK (4 buffers of 4K), not '%s'\n",
                DT_FLIGHT_RECORDER_MIN_BYTES >> 10, arg + 1);
        return NULL;
    }
    return *arg == '=' ? arg + 1 : "on";
}

/* A dump trigger's option at argv[*i] (--NAME=VALUE or --NAME VALUE): its
   value checked, and kept in values[] by the option's index. 1 when it was
   one, 0 when not, -1 when its value is bad (said). */
static int dump_option(int argc, char **argv, int *i, const char **values)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0) return 0;
    for (size_t k = 0; dt__ondemand_dump_options[k].option; k++) {
        const dt_dump_option *o = &dt__ondemand_dump_options[k];
        size_t len = strlen(o->option);
        if (strncmp(a + 2, o->option, len) != 0 || (a[2 + len] != '=' && a[2 + len] != 0)) continue;
        const char *v = a[2 + len] == '=' ? a + 3 + len : *i + 1 < argc ? argv[++*i] : NULL;
        if (!v) {
            fprintf(stderr, "devtrace record: --%s needs a value (%s)\n", o->option, o->value);
            return -1;
        }
        dt_dump_triggers scratch;
        char why[512];
        dt__ondemand_dump_triggers_init(&scratch);
        if (dt__ondemand_dump_option_set(&scratch, o, v, why, sizeof why) != 0) {
            fprintf(stderr, "devtrace record: %s\n", why);
            return -1;
        }
        values[k] = v;
        return 1;
    }
    return 0;
}

int dt__cli_record(int argc, char **argv)
{
    const char *output = NULL, *backend = NULL, *format = NULL;
    int kernel_queued = 0, on_demand = 0;
    const char *flight = NULL; /* --flight-recorder: the ring's size */
    const char *dump_values[16] = {NULL}, *dump_given = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        int dump;
        if (strcmp(a, "--") == 0) { i++; break; }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { record_usage(stdout); return 0; }
        if (strncmp(a, "--flight-recorder", 17) == 0 && (a[17] == 0 || a[17] == '=')) {
            if (!(flight = flight_size(a + 17))) return 2;
        } else if ((dump = dump_option(argc, argv, &i, dump_values)) != 0) {
            if (dump < 0) return 2;
            dump_given = a;
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) output = argv[++i];
        else if (strcmp(a, "--backend") == 0 && i + 1 < argc) backend = argv[++i];
        else if (strcmp(a, "--format") == 0 && i + 1 < argc) format = argv[++i];
        else if (strcmp(a, "--kernel-queued") == 0) kernel_queued = 1;
        else if (strcmp(a, "--on-demand") == 0) on_demand = 1;
        else if (a[0] == '-') {
            fprintf(stderr, "devtrace record: unknown option %s\n", a);
            record_usage(stderr);
            return 2;
        } else break;
    }
    if (on_demand && flight) {
        fprintf(stderr, "devtrace record: --on-demand and --flight-recorder do not combine: a flight recorder records "
                        "from the start and answers `devtrace trigger --dump`; on demand records nothing until "
                        "`devtrace trigger` asks\n");
        return 2;
    }
    if (dump_given && !flight) {
        fprintf(stderr, "devtrace record: %s needs --flight-recorder\n", dump_given);
        return 2;
    }
    if (i >= argc) {
        fprintf(stderr, "devtrace record: no program given\n");
        record_usage(stderr);
        return 2;
    }
    char outbuf[4096];
    dt_format fmt;
    /* the traced processes choose the format by the file's suffix */
    if (dt__cli_output_name("devtrace record", output, format, outbuf, sizeof outbuf, &fmt) != 0) return 2;
    output = outbuf;
    if (backend && strcmp(backend, "auto") != 0) {
        int found = 0;
        for (size_t b = 0; b < dt_backend_count(); b++) found |= strcmp(dt_backend_name(b), backend) == 0;
        if (!found) {
            fprintf(stderr, "devtrace record: unknown backend %s (see 'devtrace backends')\n", backend);
            return 2;
        }
    }
    /* The name is claimed, and the run's start taken, before anything that
       may take time (probing vendor libraries, on a loaded machine): a
       record started while another runs either finds the name held or
       knows that a trace written after its own start is no leftover of an
       earlier run. The start is the process's own (the kernel's, before
       any of its code ran). */
    output_claim claim;
    claim_output(output, &claim);
    uint64_t began_ns = dt__process_start_realtime_ns();
    if (!began_ns) began_ns = dt__realtime_ns();
    char why[4600];
    if (preflight_backend(backend, why, sizeof why) != 0) {
        fprintf(stderr, "devtrace record: %s (the program was not run; see 'devtrace backends')\n", why);
        release_output(&claim);
        return 2;
    }
    if (dt__cli_check_output(output, why, sizeof why) != 0) {
        fprintf(stderr, "devtrace record: cannot write the trace %s: %s\n", output, why);
        release_output(&claim);
        return 2;
    }
    const char *inject = find_inject_library(argv[0]);
    if (!inject) {
        fprintf(stderr, "devtrace record: libdevtrace_inject.so not found next to the devtrace executable, "
                        "in ../lib, or at %s; set DEVTRACE_INJECT_LIBRARY\n", DT_INJECT_INSTALL_PATH);
        release_output(&claim);
        return 2;
    }
    char inject_abs[4096];
    if (!realpath(inject, inject_abs)) snprintf(inject_abs, sizeof inject_abs, "%s", inject);
    char vendor[4096];
    vendor_preloads(backend, getenv("LD_PRELOAD"), vendor, sizeof vendor);

    char log_path[] = "/tmp/devtrace-record-XXXXXX";
    int log_fd = mkstemp(log_path);
    if (log_fd < 0) {
        fprintf(stderr, "devtrace record: cannot create a temporary file in /tmp: %s\n", strerror(errno));
        release_output(&claim);
        return 2;
    }
    close(log_fd);
    /* the child says through this pipe why exec failed; it closes unused on exec */
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        fprintf(stderr, "devtrace record: pipe: %s\n", strerror(errno));
        release_output(&claim);
        unlink(log_path);
        return 2;
    }
    char began[32];
    snprintf(began, sizeof began, "%llu", (unsigned long long)began_ns);

    struct sigaction sa = {0}, old[8];
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &sa, &old[k]);
    /* a signal that comes before the child's pid is known waits, then is forwarded */
    sigset_t forwarded, unblocked;
    sigemptyset(&forwarded);
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaddset(&forwarded, sigs[k]);
    sigprocmask(SIG_BLOCK, &forwarded, &unblocked);

    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "devtrace record: fork failed: %s\n", strerror(errno));
        release_output(&claim);
        unlink(log_path);
        return 2;
    }
    if (child == 0) {
        for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) sigaction(sigs[k], &old[k], NULL);
        sigprocmask(SIG_SETMASK, &unblocked, NULL);
        close(exec_pipe[0]);
        const char *pre = getenv("LD_PRELOAD");
        char san[8192];
        dt__sanitizer_runtimes(san, sizeof san);
        if (san[0]) {
            /* the traced program itself is not instrumented: its leaks are not ours */
            const char *ao = getenv("ASAN_OPTIONS");
            char opts[2048];
            snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", ao ? ao : "", ao && *ao ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        char *ld = malloc(strlen(san) + strlen(inject_abs) + strlen(vendor) + (pre ? strlen(pre) : 0) + 4);
        if (!ld) _exit(127);
        sprintf(ld, "%s%s%s%s%s%s%s", san, san[0] ? ":" : "", inject_abs, vendor[0] ? ":" : "", vendor,
                pre && *pre ? ":" : "", pre && *pre ? pre : "");
        setenv("LD_PRELOAD", ld, 1);
        free(ld);
        if (!getenv("CUDA_INJECTION64_PATH")) setenv("CUDA_INJECTION64_PATH", inject_abs, 1);
        setenv(DT_ENV_OUTPUT, output, 1);
        if (backend) setenv(DT_ENV_BACKEND, backend, 1);
        if (kernel_queued) setenv(DT_ENV_KERNEL_QUEUED, "1", 1);
        if (flight) setenv(DT_ENV_FLIGHT_RECORDER, flight, 1);
        for (size_t k = 0; dt__ondemand_dump_options[k].option; k++)
            if (dump_values[k]) setenv(dt__ondemand_dump_options[k].env, dump_values[k], 1);
        if (on_demand) setenv(DT_ENV_ON_DEMAND, "1", 1);
        char pid[32];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv(DT_ENV_PRIMARY_PID, pid, 1);
        setenv(DT_ENV_RECORD_LOG, log_path, 1);
        setenv(DT_ENV_RECORD_START_NS, began, 1);
        if (claim.taken) {
            char owner[32];
            snprintf(owner, sizeof owner, "%d", claim.owner);
            setenv(DT_ENV_RECORD_NAME_TAKEN, owner, 1);
        } else {
            unsetenv(DT_ENV_RECORD_NAME_TAKEN); /* an enclosing record's */
        }
        execvp(argv[i], argv + i);
        int err = errno;
        ssize_t w = write(exec_pipe[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    close(exec_pipe[1]);
    g_child = child;
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) { status = 127 << 8; break; }
    }
    /* the child is gone (its pid may be reused): signals from now on are
       ignored, so that the summary is printed whole */
    g_child = 0;
    release_output(&claim);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
    close(exec_pipe[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        unlink(log_path);
        fprintf(stderr, "devtrace record: cannot run %s: %s\n", argv[i], strerror(exec_errno));
        return exec_errno == ENOENT ? 127 : 126;
    }
    record_summary rs;
    read_record_log(log_path, (int)child, &rs);
    unlink(log_path);
    int rc = summarize(argv[i], status, &rs, (int)child, on_demand);
    free(rs.procs);
    return rc;
}

/* devtrace trigger --list: the processes of this user that listen for
   devtrace requests, as each answers INFO over the control channel. */
#include "cli/trigger.h"

#include "base/alloc.h"
#include "devtrace/devtrace.h"
#include "protocol/control.h"

#include <stdio.h>
#include <string.h>

#define LIST_TIMEOUT_MS 2000

static void trigger_usage(FILE *f)
{
    fprintf(f, "usage: devtrace trigger --list\n"
               "\n"
               "Lists the processes of this user that listen for devtrace requests (pid,\n"
               "program, rank, backend, state: idle, armed or capturing, and job). A socket\n"
               "left by a process that is gone is removed. Each listener is asked over its\n"
               "socket in the control directory ($XDG_RUNTIME_DIR/devtrace or\n"
               "/tmp/devtrace-<uid>); no signal is sent.\n");
}

static void print_count(int64_t v)
{
    if (v < 0) printf(" %-6s", "-");
    else printf(" %-6lld", (long long)v);
}

static int list_listeners(void)
{
    dt_ctl_msg *list = NULL;
    size_t count = 0;
    if (dt_ctl_list(LIST_TIMEOUT_MS, &list, &count) != DT_OK) {
        fprintf(stderr, "devtrace trigger: %s\n", dt_last_error());
        return 1;
    }
    char dir[DT_CTL_DIR_CAP] = "";
    dt_ctl_dir(dir, sizeof dir);
    if (count == 0) {
        fprintf(stderr, "devtrace trigger: no process of this user listens for requests (in %s)\n", dir);
        dt_free(list);
        return 0;
    }
    printf("%-8s %-16s %-6s %-6s %-10s %-9s %s\n", "PID", "PROGRAM", "RANK", "WORLD", "BACKEND", "STATE", "JOB");
    for (size_t i = 0; i < count; i++) {
        const dt_ctl_msg *m = &list[i];
        printf("%-8lld %-16s", (long long)m->pid, m->program[0] ? m->program : "-");
        print_count(m->rank);
        print_count(m->world_size);
        printf(" %-10s %-9s %s\n", m->backend[0] ? m->backend : "-", dt_ctl_state_name(m->state),
               m->job[0] ? m->job : "-");
    }
    dt_free(list);
    return 0;
}

int dt_cli_trigger(int argc, char **argv)
{
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            trigger_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--list") == 0) {
            list = 1;
            continue;
        }
        fprintf(stderr, "devtrace trigger: unexpected argument %s\n", argv[i]);
        trigger_usage(stderr);
        return 2;
    }
    if (!list) {
        trigger_usage(stderr);
        return 2;
    }
    return list_listeners();
}

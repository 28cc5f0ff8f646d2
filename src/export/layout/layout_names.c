/*
 * The names of the layout's processes and rows (layout.h): the recording
 * process, other host pids and devices; host threads by the names they
 * had, device streams and their annotation and overlap rows.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "export/layout/layout_build.h"

#define HOST_SORT_LIMIT 4999999     /* device rows sort from 5000000 up */

/* "thread <tid> (<name>)": the name the session captured while the thread
   lived, else, when the trace is written by the traced process itself and
   the thread still lives, its name now. */
static int host_thread_name(const dt_recording *rec, char *buf, size_t size, uint32_t pid, uint32_t tid)
{
    char comm[64] = "";
    const char *seen = pid == rec->pid ? dt__recording_thread_name(rec, tid) : NULL;
    if (seen) {
        snprintf(comm, sizeof comm, "%s", seen);
    } else if (pid == (uint32_t)getpid()) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, comm, sizeof comm - 1);
            close(fd);
            comm[n > 0 ? n : 0] = 0;
            comm[strcspn(comm, "\n")] = 0;
        }
    }
    if (comm[0])
        return snprintf(buf, size, "thread %u (%s)", tid, comm);
    return snprintf(buf, size, "thread %u", tid);
}

/* The processes of the trace, in the order they are named: the recording
   process first, other host pids, then devices. */
int dt__wr_layout_next_process(dt_layout *l, size_t *cursor, dt_layout_process *out)
{
    const dt_recording *rec = l->rec;
    const char *pname = rec->process_name[0] ? rec->process_name : "process";
    if (*cursor == 0) {
        uint64_t main_pid = dt__wr_layout_host_pid(l, rec->pid);
        memset(out, 0, sizeof *out);
        out->pid = main_pid;
        out->sort_index = main_pid < HOST_SORT_LIMIT ? main_pid : HOST_SORT_LIMIT;
        snprintf(out->name, sizeof out->name, "%s", pname);
        (*cursor)++;
        return 1;
    }
    for (size_t b = *cursor - 1; b < l->nbrows; b++) {
        const dt_layout_base_row *br = &l->brows[b];
        *cursor = b + 2;
        int seen = 0;
        for (size_t k = 0; k < b && !seen; k++)
            seen = l->brows[k].cls == br->cls && l->brows[k].pid == br->pid;
        if (seen)
            continue;
        if (br->cls == DT_LAYOUT_HOST) {
            if (br->pid == rec->pid)
                continue;
            uint64_t pid = dt__wr_layout_host_pid(l, br->pid);
            memset(out, 0, sizeof *out);
            out->pid = pid;
            out->sort_index = pid < HOST_SORT_LIMIT ? pid : HOST_SORT_LIMIT;
            snprintf(out->name, sizeof out->name, "process %u", br->pid);
            return 1;
        }
        /* a device seen through both device and annotation rows once */
        int dup = 0;
        for (size_t k = 0; k < b && !dup; k++)
            dup = l->brows[k].cls != DT_LAYOUT_HOST && l->brows[k].pid == br->pid;
        if (dup)
            continue;
        memset(out, 0, sizeof *out);
        out->pid = br->pid;
        out->label = out->label_buf;
        out->sort_index = UINT64_C(5000000) + br->pid;
        out->device = 1;
        snprintf(out->name, sizeof out->name, "%s", pname);
        snprintf(out->label_buf, sizeof out->label_buf, "GPU %u", br->pid);
        return 1;
    }
    return 0;
}

void dt__wr_layout_row_get(dt_layout *l, size_t f, dt_layout_row *out)
{
    const dt_layout_final_row *fr = &l->frows[f];
    const dt_layout_base_row *br = &l->brows[fr->base];
    out->cls = br->cls;
    out->id = br->pid;
    out->lane = br->lane;
    out->level = fr->level;
    out->pid = fr->pid;
    out->tid = fr->tid;
    size_t size = sizeof out->name;
    char *buf = out->name;
    int n;
    if (br->cls == DT_LAYOUT_HOST)
        n = host_thread_name(l->rec, buf, size, br->pid, br->lane);
    else if (br->cls == DT_LAYOUT_DEVICE)
        n = snprintf(buf, size, "stream %u", br->lane);
    else
        n = snprintf(buf, size, "stream %u annotations", br->lane);
    if (n < 0 || (size_t)n >= size)
        n = (int)strlen(buf);
    if (fr->level > 0)
        snprintf(buf + n, size - (size_t)n, " (overlap %u)", fr->level);
}

uint64_t dt__wr_layout_main_pid(dt_layout *l)
{
    return dt__wr_layout_host_pid(l, l->rec->pid);
}

/* Whether the capture window's own row (tid 0 of the recording process) is
   free for the "devtrace capture" event's name. */
int dt__wr_layout_capture_row_free(dt_layout *l)
{
    uint64_t main_pid = dt__wr_layout_main_pid(l);
    for (size_t f = 0; f < l->nfrows; f++)
        if (l->frows[f].pid == main_pid && l->frows[f].tid == 0)
            return 0;
    return 1;
}

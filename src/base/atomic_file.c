/* Every trace file is written whole or not at all: into a temporary file
   beside it, renamed into place once complete. Only a regular file is
   replaced so: a character device (/dev/null) or a FIFO named as the
   output is written in place, and anything else is refused, for a rename
   would put a regular file where the device or the pipe was. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/out.h"

#define OUT_BUFFER (1u << 20)

/* The temporary file being written, for dt__atomic_file_abandon. */
static _Atomic(char *) g_writing;

void dt__atomic_file_abandon(void)
{
    char *tmp = atomic_exchange(&g_writing, NULL);
    if (tmp)
        unlink(tmp);
}

dt_output_kind dt__output_kind_of(const char *path, const char **why)
{
    struct stat st;
    if (why)
        *why = NULL;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return DT_OUTPUT_FILE;
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
        return DT_OUTPUT_IN_PLACE;
    if (why)
        *why = S_ISDIR(st.st_mode) ? "it is a directory"
               : S_ISBLK(st.st_mode) ? "it is a block device (a trace is written to a regular file, a "
                                       "character device or a FIFO)"
               : S_ISSOCK(st.st_mode) ? "it is a socket (a trace is written to a regular file, a character "
                                        "device or a FIFO)"
                                      : "it is not a regular file, a character device or a FIFO";
    return DT_OUTPUT_REFUSED;
}

int dt__open_beside(const char *path, char *tmp, size_t n)
{
    for (unsigned k = 0; k < 100; k++) {
        int len = k ? snprintf(tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(), k)
                    : snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
        if (len < 0 || (size_t)len >= n) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int write_fd(int fd, int gzip, int (*write)(void *arg, dt_out *out), void *arg)
{
    dt_out o;
    if (dt__out_init(&o, fd, gzip, 1, OUT_BUFFER) != 0)
        return ENOMEM;
    int err = write(arg, &o);
    int fin = dt__out_finish(&o);
    if (err == 0)
        err = fin;
    dt__out_free(&o);
    return err;
}

int dt__write_output(const char *path, int fd, int gzip, int (*write)(void *arg, dt_out *out), void *arg)
{
    return fd >= 0 ? write_fd(fd, gzip, write, arg) : dt__write_file_atomic(path, gzip, write, arg);
}

int dt__write_file_atomic(const char *path, int gzip, int (*write)(void *arg, dt_out *out), void *arg)
{
    dt_output_kind kind = dt__output_kind_of(path, NULL);
    if (kind == DT_OUTPUT_REFUSED) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    }
    if (kind == DT_OUTPUT_IN_PLACE) {
        /* a FIFO's open waits for its reader, as any writer's does */
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return errno;
        int err = write_fd(fd, gzip, write, arg);
        if (close(fd) != 0 && err == 0)
            err = errno;
        return err;
    }
    size_t tlen = strlen(path) + 48;
    char *tmp = dt__malloc(tlen);
    if (!tmp)
        return ENOMEM;
    /* the file is created and published for dt__atomic_file_abandon with
       the signals that end a command held back: one that comes between the
       two would leave it */
    sigset_t ending, old;
    sigemptyset(&ending);
    sigaddset(&ending, SIGINT);
    sigaddset(&ending, SIGTERM);
    sigaddset(&ending, SIGHUP);
    sigaddset(&ending, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &ending, &old);
    int fd = dt__open_beside(path, tmp, tlen);
    int open_errno = errno;
    char *none = NULL;
    bool tracked = fd >= 0 && atomic_compare_exchange_strong(&g_writing, &none, tmp);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int err = 0;
    if (fd < 0) {
        err = open_errno;
    } else {
        err = write_fd(fd, gzip, write, arg);
        if (close(fd) != 0 && err == 0)
            err = errno;
        /* the path may have become a device or a FIFO meanwhile: never
           renamed over */
        if (err == 0 && dt__output_kind_of(path, NULL) != DT_OUTPUT_FILE)
            err = EEXIST;
        if (err == 0 && rename(tmp, path) != 0)
            err = errno;
        if (err != 0)
            unlink(tmp);
        if (tracked)
            atomic_store(&g_writing, NULL);
    }
    dt__free(tmp);
    return err;
}

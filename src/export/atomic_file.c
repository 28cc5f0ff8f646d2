/* Every trace file is written whole or not at all: into a temporary file
   beside it, renamed into place once complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json_out.h"

#define OUT_BUFFER (1u << 20)

int dt_write_file_atomic(const char *path, int gzip, int (*write)(void *arg, dt_out *out), void *arg)
{
    size_t tlen = strlen(path) + 32;
    char *tmp = dt_malloc(tlen);
    if (!tmp)
        return ENOMEM;
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = 0;
    if (fd < 0) {
        err = errno;
    } else {
        dt_out o;
        if (dt_out_init(&o, fd, gzip, 1, OUT_BUFFER) != 0) {
            err = ENOMEM;
        } else {
            err = write(arg, &o);
            int fin = dt_out_finish(&o);
            if (err == 0)
                err = fin;
            dt_out_free(&o);
        }
        if (close(fd) != 0 && err == 0)
            err = errno;
        if (err == 0 && rename(tmp, path) != 0)
            err = errno;
        if (err != 0)
            unlink(tmp);
    }
    dt_free(tmp);
    return err;
}

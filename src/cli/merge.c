/* `devtrace merge`: the implementation lives in the reader library so that
   tests reach it with their own output streams. A signal that ends merge
   (SIGINT, SIGTERM, SIGHUP, SIGQUIT) leaves no partial output behind: the
   temporary file is removed and merge exits 128+signal. */
#include "base/atomic_file.h"
#include "reader/dt_reader.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void on_signal(int sig)
{
    dt_atomic_file_abandon();
    _exit(128 + sig);
}

int dt_cli_merge(int argc, char **argv)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction old;
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[k], &sa, NULL);
    }
    return dt_merge_main(argc, argv, stdout, stderr);
}

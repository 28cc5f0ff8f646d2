/* `devtrace convert` and `devtrace analyze`: Python programs
   (devtrace.analysis, over pyarrow and DuckDB), run in place of this
   process by the Python that DEVTRACE_PYTHON names, else python3. */
#include "cli/analysis.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int dt_cli_analysis(int argc, char **argv)
{
    const char *python = getenv("DEVTRACE_PYTHON");
    if (!python || !*python)
        python = "python3";
    /* is the package there? A clear word rather than a Python traceback */
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execlp(python, python, "-c", "import devtrace.analysis", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr,
                "devtrace %s: needs the devtrace Python package with its analysis extras, which %s cannot "
                "import: pip install 'devtrace[analysis]' (DEVTRACE_PYTHON names the Python to use)\n",
                argv[0], python);
        return 2;
    }
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args)
        return 2;
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = "devtrace.analysis";
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    execvp(python, args);
    fprintf(stderr, "devtrace %s: cannot run %s: %s\n", argv[0], python, strerror(errno));
    free(args);
    return 2;
}

/* `devtrace convert`, `devtrace analyze` and `devtrace diff`: Python programs
   (devtrace.analysis, over pyarrow and DuckDB), run in place of this
   process by the Python that DEVTRACE_PYTHON names, else python3. One
   Python starts, and imports what the command uses: a Python without the
   package says what to install (the bootstrap below), one that cannot run
   is said here. */
#include "base/env_names.h"
#include "cli/analysis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INSTALL "pip install 'devtrace[analysis]' (DEVTRACE_PYTHON names the Python to use)"

/* sys.argv is ["-c", command, args...]. The commands need devtrace.analysis
   alone, not the recording API the package's __init__ loads (a library
   and its bindings, a tenth of their start-up): its parent is made
   importable without being run. */
static const char bootstrap[] =
    "import sys, importlib.util\n"
    "spec = importlib.util.find_spec('devtrace')\n"
    "if spec is not None and spec.submodule_search_locations:\n"
    "    sys.modules['devtrace'] = importlib.util.module_from_spec(spec)\n"
    "try:\n"
    "    from devtrace.analysis.__main__ import main\n"
    "except ImportError as e:\n"
    "    sys.stderr.write(\"devtrace %s: needs the devtrace Python package with its analysis extras, which %s \"\n"
    "                     \"cannot import (%s): " INSTALL "\\n\" % (sys.argv[1], sys.executable, e))\n"
    "    sys.exit(2)\n"
    "sys.exit(main(sys.argv[1:]))\n";

int dt__cli_analysis(int argc, char **argv)
{
    const char *python = getenv(DT_ENV_PYTHON);
    if (!python || !*python)
        python = "python3";
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) {
        fprintf(stderr, "devtrace %s: out of memory\n", argv[0]);
        return 2;
    }
    args[0] = (char *)python;
    args[1] = "-c";
    args[2] = (char *)bootstrap;
    for (int i = 0; i < argc; i++)
        args[3 + i] = argv[i];
    execvp(python, args);
    fprintf(stderr, "devtrace %s: needs the devtrace Python package with its analysis extras, and %s cannot run "
                    "(%s): " INSTALL "\n",
            argv[0], python, strerror(errno));
    free(args);
    return 2;
}

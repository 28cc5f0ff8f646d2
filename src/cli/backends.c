/* `devtrace backends`: every backend, whether its vendor library is found
   and loads, its version, and why one is unavailable or degraded. */
#include "cli/commands.h"
#include "devtrace/devtrace.h"

#include <stdio.h>
#include <string.h>

int dt__cli_backends(int argc, char **argv)
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

/* What the process started with in LD_PRELOAD, and what to say when a
   vendor needed its library there. */
#include "base/log.h"
#include "core/preload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dt__started_with_preload(const char *file)
{
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) {
        const char *now = getenv("LD_PRELOAD"); /* no /proc: what is left of it */
        return now && strstr(now, file) != NULL;
    }
    static const char key[] = "LD_PRELOAD=";
    char entry[8192];
    size_t n = 0;
    int found = 0;
    for (int c; !found && (c = fgetc(f)) != EOF;) {
        if (c != '\0') {
            if (n + 1 < sizeof entry) entry[n++] = (char)c;
            continue;
        }
        entry[n] = '\0';
        found = strncmp(entry, key, sizeof key - 1) == 0 && strstr(entry + sizeof key - 1, file) != NULL;
        n = 0;
    }
    fclose(f);
    return found;
}

void dt__preload_advice(const char *preload, const char *library, char *out, size_t size)
{
    snprintf(out, size,
             "%s must be in LD_PRELOAD from the start of the program (`devtrace record` puts it there; or run it "
             "with LD_PRELOAD=%s)",
             preload, library && library[0] ? library : preload);
}

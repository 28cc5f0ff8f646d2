/* Loading vendor libraries: try candidates in order, and remember why each
   failed so the error names every place that was looked at. */
#include "dt_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

void *dt_dlopen_first(const char *const *candidates, size_t n, char *found, size_t found_len,
                      char *tried, size_t tried_len)
{
    if (tried_len) tried[0] = 0;
    if (found_len) found[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || !*c) continue;
        void *h = dlopen(c, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            if (found_len) {
                /* report the path the loader actually used */
                struct link_map *lm = NULL;
                if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
                    snprintf(found, found_len, "%s", lm->l_name);
                else
                    snprintf(found, found_len, "%s", c);
            }
            return h;
        }
        if (tried_len) {
            size_t used = strlen(tried);
            const char *err = dlerror();
            snprintf(tried + used, tried_len - used, "%s%s (%s)", used ? "; " : "", c,
                     err ? err : "not loadable");
        }
    }
    return NULL;
}

/* libdevtrace_inject as the library a vendor's runtime calls: the entry
   points vendors look for in such a library, each handed to the backends
   whose descriptor asks for it by capability (backends/backend.h).

   - InitializeInjection (DT_BACKEND_INJECTION_ENTRY, inject_arm): the
     runtime calls the injection library named by the backend's inject_env
     (CUDA: CUDA_INJECTION64_PATH) as the process initialises it, before
     its first context, and only then is the vendor library loaded and
     attached to the session: a process that never initialises the runtime
     (a compiler, a launcher, `true`) never loads it.
   - rocprofiler_configure (DT_BACKEND_TOOL_CONFIGURE, tool_configure): the
     vendor calls every visible one as its runtimes initialize. */
#include "backends/backend.h"
#include "inject.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether b's runtime will call this library's entry point: only then may
   the session wait for it. Another injection library named in b's variable
   (by the user) would be called instead. */
static int runtime_calls_us(const dt_backend *b)
{
    const char *named = b->inject_env ? dt_env(b->inject_env) : NULL;
    Dl_info self;
    if (!named || !dladdr((void *)runtime_calls_us, &self) || !self.dli_fname) return 0;
    char a[4096], c[4096];
    return realpath(named, a) && realpath(self.dli_fname, c) && strcmp(a, c) == 0;
}

const char *dt_inject_deferred_backend(void)
{
    for (size_t i = 0; dt_backends[i]; i++)
        if ((dt_backends[i]->caps & DT_BACKEND_INJECTION_ENTRY) && runtime_calls_us(dt_backends[i]))
            return dt_backends[i]->name;
    return NULL;
}

/* Whether devtrace may use b in this process (the backend asked for). */
static int wanted(const dt_backend *b)
{
    const char *asked = dt_env("DEVTRACE_BACKEND");
    return !asked || strcmp(asked, "auto") == 0 || strcmp(asked, b->name) == 0;
}

/* The runtime's injection entry point: the process initialises it. */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    for (size_t i = 0; dt_backends[i]; i++) {
        const dt_backend *b = dt_backends[i];
        if (!(b->caps & DT_BACKEND_INJECTION_ENTRY) || !b->inject_arm || !wanted(b)) continue;
        dt_session *s = dt_inject_session && getpid() == dt_inject_owner ? dt_inject_session : NULL;
        int attached = 0;
        dt_status st = b->inject_arm(s, &attached);
        if (attached && st != DT_OK) {
            dt_inject_report("note", 0, "", "%s not attached when the process initialised its runtime: %s", b->vendor,
                             dt_last_error());
        } else if (attached) {
            /* The runtime registered its teardown with atexit as it began
               initialising (a statically linked one does so after this
               library's constructor registered its own handler, so that
               handler would run after the teardown): the trace is written
               from a handler registered now, which runs before the
               runtime's, while the vendor can still flush. */
            atexit(dt_inject_finish);
        } else if (st != DT_OK) {
            dt_log("InitializeInjection: %s", dt_last_error());
        }
    }
    return 1;
}

/* The tool entry point: the first backend that takes the call answers it
   (NULL: none does; the session started with this library has usually
   registered devtrace already, and its backend declines). */
__attribute__((visibility("default"))) void *rocprofiler_configure(uint32_t version, const char *runtime_version,
                                                                    uint32_t priority, void *client_id);
void *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, void *client_id)
{
    for (size_t i = 0; dt_backends[i]; i++) {
        const dt_backend *b = dt_backends[i];
        if (!(b->caps & DT_BACKEND_TOOL_CONFIGURE) || !b->tool_configure) continue;
        void *result = b->tool_configure(version, runtime_version, priority, client_id);
        if (result) return result;
    }
    return NULL;
}

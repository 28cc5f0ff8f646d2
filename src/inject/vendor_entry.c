/* libdevtrace_inject as the library a vendor's runtime calls: the entry
   points vendors look for in such a library, each handed to the backends
   whose descriptor asks for it by capability (core/contract.h), through the api layer (api/inject_support.h).

   - InitializeInjection (DT_BACKEND_INJECTION_ENTRY, inject_arm): the
     runtime calls the injection library named by the backend's inject_env
     (CUDA: CUDA_INJECTION64_PATH) as the process initialises it, before
     its first context, and only then is the vendor library loaded and
     attached to the session: a process that never initialises the runtime
     (a compiler, a launcher, `true`) never loads it.
   - rocprofiler_configure (DT_BACKEND_TOOL_CONFIGURE, tool_configure): the
     vendor calls every visible one as its runtimes initialize. */
#include "api/inject_support.h"
#include "inject/inject.h"

#include <stdint.h>
#include <unistd.h>

static void report_note(const char *message)
{
    dt__inject_report("note", 0, "", "%s", message);
}

/* The runtime's injection entry point: the process initialises it. */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    /* on demand, a capture's session subscribes when it starts: nothing is
       armed before */
    if (dt__inject_on_demand) return 1;
    dt_session *s = dt__inject_session && getpid() == dt__inject_owner ? dt__inject_session : NULL;
    dt__inject_support_initialize_injection(s, dt__inject_finish, report_note);
    return 1;
}

/* The tool entry point: the first backend that takes the call answers it
   (NULL: none does; the session started with this library has usually
   registered devtrace already, and its backend declines). */
__attribute__((visibility("default"))) void *rocprofiler_configure(uint32_t version, const char *runtime_version,
                                                                    uint32_t priority, void *client_id);
void *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, void *client_id)
{
    return dt__inject_support_tool_configure(version, runtime_version, priority, client_id);
}

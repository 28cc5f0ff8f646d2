/* libdevtrace_inject and CUDA's other CUPTI clients. The library is CUDA's
   injection library (vendor_entry.c: InitializeInjection, for the backend
   with DT_BACKEND_INJECTION_ENTRY, CUPTI), and stands between the program
   and CUPTI's subscribe.

   CUPTI allows one subscriber per process. When the program starts its own
   CUPTI client while devtrace holds CUPTI (torch.profiler's Kineto
   subscribes when a profile starts), the client is refused and told that
   "CUPTI for devtrace" holds it; the trace notes it and `record` prints
   it. With DEVTRACE_CUPTI_HANDOVER=1 devtrace gives CUPTI to that client
   instead: what it recorded until then stays in its trace, the device
   activity after that goes to the client. */
#include "backends/cupti_family_abi.h" /* result codes, checked against cupti_result.h in cupti.c */
#include "api/inject_support.h"
#include "base/log.h"
#include "inject/inject.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Another CUPTI client subscribing (torch.profiler's Kineto, when a profile
   starts): the preloaded definitions below stand between it and CUPTI.
   devtrace itself calls CUPTI through the library's own symbols, never
   through these. */
typedef int (*subscribe_fn)(void **subscriber, void *callback, void *userdata);
typedef int (*subscribe_named_fn)(void **subscriber, void *callback, void *userdata, void *params);

/* CUPTI's definition of `name` for a caller at `caller`: the next in the
   global scope, or (for a library loaded with RTLD_LOCAL, as Python loads
   torch) the one the caller's own dependencies give. */
static void *cupti_symbol(const char *name, const void *caller, const void *self)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f && f != self) return f;
    Dl_info info;
    if (!caller || !dladdr(caller, &info) || !info.dli_fname) return NULL;
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    f = dlsym(h, name);
    dlclose(h);
    return f != self ? f : NULL;
}

/* The client's library, as the notes name it ("libtorch_cuda.so"). */
static void caller_name(const void *caller, char *out, size_t n)
{
    Dl_info info;
    const char *name = caller && dladdr(caller, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(name, '/');
    snprintf(out, n, "%s", slash ? slash + 1 : name[0] ? name : "the program");
}

/* Before the client's subscribe: with the handover switch, devtrace lets
   CUPTI go. Returns whether devtrace held CUPTI. */
static int before_other_subscriber(const char *who)
{
    if (!dt_inject_session || getpid() != dt_inject_owner) return 0;
    if (!dt_inject_support_holds_injection_backend(dt_inject_session)) return 0;
    if (dt_env_bool("DEVTRACE_CUPTI_HANDOVER") == 1) {
        dt_inject_support_release(dt_inject_session, who);
        dt_inject_report("note", 0, "", "CUPTI given to %s (DEVTRACE_CUPTI_HANDOVER=1): the device activity from then on is "
               "in its trace, not devtrace's", who);
    }
    return 1;
}

static void after_other_subscriber(const char *who, const char *call, int held, int result)
{
    if (!held || result != DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return;
    dt_inject_support_note(dt_inject_session, "cupti_clients", "%s called %s while devtrace held CUPTI and was refused: its own "
                    "trace (torch.profiler's, if it is that) has no device activity, this one has it; "
                    "DEVTRACE_CUPTI_HANDOVER=1 gives CUPTI to it instead", who, call);
    dt_inject_report("note", 0, "", "%s asked for CUPTI (%s) while devtrace held it and was refused: its own trace has no "
           "GPU activity, devtrace's has it (DEVTRACE_CUPTI_HANDOVER=1 gives CUPTI to it instead)", who, call);
}

__attribute__((visibility("default"))) int cuptiSubscribe(void **subscriber, void *callback, void *userdata);
int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    const void *caller = __builtin_return_address(0);
    subscribe_fn real = (subscribe_fn)cupti_symbol("cuptiSubscribe", caller, (const void *)cuptiSubscribe);
    if (!real) return DT_CF_ERROR_NOT_INITIALIZED;
    char who[256];
    caller_name(caller, who, sizeof who);
    int held = before_other_subscriber(who);
    int r = real(subscriber, callback, userdata);
    after_other_subscriber(who, "cuptiSubscribe", held, r);
    return r;
}

__attribute__((visibility("default"))) int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata,
                                                              void *params);
int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, void *params)
{
    const void *caller = __builtin_return_address(0);
    subscribe_named_fn real =
        (subscribe_named_fn)cupti_symbol("cuptiSubscribe_v2", caller, (const void *)cuptiSubscribe_v2);
    if (!real) return DT_CF_ERROR_NOT_INITIALIZED;
    char who[256];
    caller_name(caller, who, sizeof who);
    int held = before_other_subscriber(who);
    int r = real(subscriber, callback, userdata, params);
    after_other_subscriber(who, "cuptiSubscribe_v2", held, r);
    return r;
}

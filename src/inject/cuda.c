/* libdevtrace_inject and CUDA's other CUPTI clients. The library is CUDA's
   injection library (vendor_entry.c: InitializeInjection, for the backend
   with DT_BACKEND_INJECTION_ENTRY, CUPTI), and stands between the program
   and the CUPTI calls with which another client (torch.profiler's Kineto)
   takes CUPTI over: subscribing, registering its buffer callbacks, enabling
   and disabling activity kinds, registering a timestamp callback and
   setting activity attributes. Kineto of torch 2.11 subscribes when a
   profile starts; Kineto since kineto#1250 never subscribes, but registers
   its buffer callbacks (which replace devtrace's: CUPTI has one pair per
   process), switches kinds on and off, and registers a TSC timestamp
   callback (which moves every timestamp to another clock).

   - The client calls before devtrace attached (before the program's first
     CUDA call, which calls InitializeInjection): devtrace attaches first,
     inside the intercepted call, so that it holds CUPTI whichever comes
     first.
   - devtrace holds CUPTI: the client is refused (a subscribe is told that
     "CUPTI for devtrace" holds it; the other calls answer
     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED without reaching
     CUPTI), the trace notes it and `record` prints it.
   - With DEVTRACE_CUPTI_HANDOVER=1 devtrace gives CUPTI to that client
     instead, at its first such call: what devtrace recorded until then
     stays in its trace, the device activity after that goes to the client
     (before devtrace attached: none is devtrace's).
   devtrace itself calls CUPTI through the library's own symbols, never
   through these. */
#include "backends/cupti_family_abi.h" /* result codes, checked against cupti_result.h in cupti.c */
#include "api/inject_support.h"
#include "base/env_names.h"
#include "base/log.h"
#include "inject/inject.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The calls intercepted, for the notes (each said once). */
enum call_id { C_SUBSCRIBE, C_SUBSCRIBE_V2, C_REGISTER, C_ENABLE, C_DISABLE, C_TIMESTAMP, C_ATTRIBUTE, C_COUNT };
static const char *const call_names[C_COUNT] = {
    "cuptiSubscribe", "cuptiSubscribe_v2", "cuptiActivityRegisterCallbacks", "cuptiActivityEnable",
    "cuptiActivityDisable", "cuptiActivityRegisterTimestampCallback", "cuptiActivitySetAttribute",
};
static _Atomic unsigned g_refusals_said;
/* CUPTI was given to another client (DEVTRACE_CUPTI_HANDOVER=1), for good */
static _Atomic int g_given;

/* The process's recording session, when this process owns it. */
static dt_session *own_session(void)
{
    return dt__inject_session && getpid() == dt__inject_owner ? dt__inject_session : NULL;
}

/* With the handover switch, devtrace lets CUPTI go to `who`. */
static void give_cupti(dt_session *s, const char *who, int attached)
{
    if (atomic_exchange(&g_given, 1)) return;
    dt__inject_support_release(s, who);
    if (attached)
        dt__inject_report("note", 0, "", "CUPTI given to %s (" DT_ENV_CUPTI_HANDOVER "=1): the device activity from "
                         "then on is in its trace, not devtrace's", who);
    else
        dt__inject_report("note", 0, "", "CUPTI given to %s (" DT_ENV_CUPTI_HANDOVER "=1) before devtrace attached: "
                         "the device activity is in its trace, none in devtrace's", who);
}

/* Before another client's call: 1 when devtrace holds CUPTI and keeps it
   (the call is to be refused), 0 when the call goes on to CUPTI. A client
   that comes before devtrace attached makes devtrace attach first. */
static int devtrace_keeps_cupti(const char *who, enum call_id call)
{
    dt_session *s = own_session();
    if (!s || atomic_load(&g_given)) return 0;
    int handover = dt__env_bool(DT_ENV_CUPTI_HANDOVER) == 1;
    if (dt__inject_support_awaits_injection(s)) {
        if (handover) {
            give_cupti(s, who, 0);
            return 0;
        }
        if (dt__inject_support_attach_early(s) == DT_OK && dt__inject_support_holds_injection_backend(s)) {
            dt__inject_support_note(s, "cupti_clients", "%s called %s before the program's first CUDA call: "
                                   "devtrace attached to CUPTI first", who, call_names[call]);
            dt__inject_report("note", 0, "", "%s called %s before the program's first CUDA call: devtrace "
                             "attached to CUPTI first", who, call_names[call]);
        }
    }
    if (!dt__inject_support_holds_injection_backend(s)) return 0;
    if (handover) {
        give_cupti(s, who, 1);
        return 0;
    }
    return 1;
}

/* A client's call was refused (result): the trace notes it, `record`
   prints it once per call. */
static void refused(const char *who, enum call_id call, int result)
{
    dt_session *s = own_session();
    if (!s || result != DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return;
    const char *name = call_names[call];
    dt__inject_support_note(s, "cupti_clients", "%s called %s while devtrace held CUPTI and was refused: its own "
                           "trace (torch.profiler's, if it is that) has no device activity, this one has it; "
                           DT_ENV_CUPTI_HANDOVER "=1 gives CUPTI to it instead", who, name);
    if (atomic_fetch_or(&g_refusals_said, 1u << call) & (1u << call)) return;
    dt__inject_report("note", 0, "", "%s asked for CUPTI (%s) while devtrace held it and was refused: its own trace "
                     "has no GPU activity, devtrace's has it (" DT_ENV_CUPTI_HANDOVER "=1 gives CUPTI to it instead)",
                     who, name);
}

/* The preamble of every interposed call: the caller's name, and CUPTI's
   definition of the call (NOT_INITIALIZED when there is none). */
#define CLIENT_CALL(fn_type, name_, self)                                                   \
    const void *caller = __builtin_return_address(0);                                      \
    fn_type real = (fn_type)cupti_symbol(#name_, caller, (const void *)(self));             \
    if (!real) return DT_CF_ERROR_NOT_INITIALIZED;                                          \
    char who[256];                                                                          \
    caller_name(caller, who, sizeof who)

/* A call that would change what devtrace records: refused while devtrace
   keeps CUPTI, otherwise made. */
#define GUARDED(call, ...)                                                                   \
    do {                                                                                     \
        if (devtrace_keeps_cupti(who, call)) {                                               \
            refused(who, call, DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);              \
            return DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;                           \
        }                                                                                    \
        return real(__VA_ARGS__);                                                            \
    } while (0)

typedef int (*subscribe_fn)(void **subscriber, void *callback, void *userdata);
typedef int (*subscribe_named_fn)(void **subscriber, void *callback, void *userdata, void *params);
typedef int (*register_fn)(void *request, void *complete);
typedef int (*kind_fn)(uint32_t kind);
typedef int (*timestamp_fn)(void *callback);
typedef int (*attribute_fn)(uint32_t attribute, size_t *size, void *value);

/* Subscribing is made all the same: CUPTI itself refuses a second
   subscriber, and tells it who holds CUPTI. */
__attribute__((visibility("default"))) int cuptiSubscribe(void **subscriber, void *callback, void *userdata);
int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    CLIENT_CALL(subscribe_fn, cuptiSubscribe, cuptiSubscribe);
    int held = devtrace_keeps_cupti(who, C_SUBSCRIBE);
    int r = real(subscriber, callback, userdata);
    if (held) refused(who, C_SUBSCRIBE, r);
    return r;
}

__attribute__((visibility("default"))) int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata,
                                                              void *params);
int cuptiSubscribe_v2(void **subscriber, void *callback, void *userdata, void *params)
{
    CLIENT_CALL(subscribe_named_fn, cuptiSubscribe_v2, cuptiSubscribe_v2);
    int held = devtrace_keeps_cupti(who, C_SUBSCRIBE_V2);
    int r = real(subscriber, callback, userdata, params);
    if (held) refused(who, C_SUBSCRIBE_V2, r);
    return r;
}

__attribute__((visibility("default"))) int cuptiActivityRegisterCallbacks(void *request, void *complete);
int cuptiActivityRegisterCallbacks(void *request, void *complete)
{
    CLIENT_CALL(register_fn, cuptiActivityRegisterCallbacks, cuptiActivityRegisterCallbacks);
    GUARDED(C_REGISTER, request, complete);
}

__attribute__((visibility("default"))) int cuptiActivityEnable(uint32_t kind);
int cuptiActivityEnable(uint32_t kind)
{
    CLIENT_CALL(kind_fn, cuptiActivityEnable, cuptiActivityEnable);
    GUARDED(C_ENABLE, kind);
}

__attribute__((visibility("default"))) int cuptiActivityDisable(uint32_t kind);
int cuptiActivityDisable(uint32_t kind)
{
    CLIENT_CALL(kind_fn, cuptiActivityDisable, cuptiActivityDisable);
    GUARDED(C_DISABLE, kind);
}

__attribute__((visibility("default"))) int cuptiActivityRegisterTimestampCallback(void *callback);
int cuptiActivityRegisterTimestampCallback(void *callback)
{
    CLIENT_CALL(timestamp_fn, cuptiActivityRegisterTimestampCallback, cuptiActivityRegisterTimestampCallback);
    GUARDED(C_TIMESTAMP, callback);
}

__attribute__((visibility("default"))) int cuptiActivitySetAttribute(uint32_t attribute, size_t *size, void *value);
int cuptiActivitySetAttribute(uint32_t attribute, size_t *size, void *value)
{
    CLIENT_CALL(attribute_fn, cuptiActivitySetAttribute, cuptiActivitySetAttribute);
    GUARDED(C_ATTRIBUTE, attribute, size, value);
}

/* The session internals the injection library uses (inject_support.h). */
#include "api/inject_support.h"
#include "api/backend_select.h"
#include "api/write.h"
#include "backends/backend.h"
#include "base/env_names.h"
#include "base/log.h"
#include "core/jobinfo.h"
#include "core/session.h"

#include <stdatomic.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dt_status dt__inject_support_start(dt_session *s, const char *deferred)
{
    return dt__select_start_deferring(s, deferred);
}

void dt__inject_support_exiting(void)
{
    atomic_store(&dt__g_exiting, 1);
}

void dt__inject_support_fork_prepare(dt_session *s)
{
    dt__core_fork_prepare(s);
}

void dt__inject_support_fork_parent(dt_session *s)
{
    dt__core_fork_parent(s);
}

void dt__inject_support_fork_child(dt_session *s)
{
    dt__core_fork_child(s);
}

void dt__inject_support_forked(dt_session *s)
{
    dt__core_forked(s);
}

int dt__inject_support_fork_unrecorded(const dt_session *s)
{
    return dt__core_fork_vendor_unusable(s);
}

void dt__inject_support_rank(char *out, size_t n)
{
    dt_rank_info info;
    dt__rank_from_env(&info);
    snprintf(out, n, "%s", info.rank_text);
}

/* Whether b's runtime will call this library's entry point: only then may
   the session wait for it. Another injection library named in b's variable
   (by the user) would be called instead. */
static int runtime_calls_us(const dt_backend *b)
{
    const char *named = b->inject_env ? dt__env(b->inject_env) : NULL;
    Dl_info self;
    if (!named || !dladdr((void *)runtime_calls_us, &self) || !self.dli_fname) return 0;
    char a[PATH_MAX], c[PATH_MAX];
    return realpath(named, a) && realpath(self.dli_fname, c) && strcmp(a, c) == 0;
}

const char *dt__inject_support_deferred_backend(void)
{
    for (size_t i = 0; dt__backends[i]; i++)
        if ((dt__backends[i]->caps & DT_BACKEND_INJECTION_ENTRY) && runtime_calls_us(dt__backends[i]))
            return dt__backends[i]->name;
    return NULL;
}

/* Whether devtrace may use b in this process (the backend asked for). */
static int wanted(const dt_backend *b)
{
    const char *asked = dt__env(DT_ENV_BACKEND);
    return !asked || strcmp(asked, "auto") == 0 || strcmp(asked, b->name) == 0;
}

void dt__inject_support_initialize_injection(dt_session *s, void (*on_attach)(void), void (*report)(const char *message))
{
    for (size_t i = 0; dt__backends[i]; i++) {
        const dt_backend *b = dt__backends[i];
        if (!(b->caps & DT_BACKEND_INJECTION_ENTRY) || !b->inject_arm || !wanted(b)) continue;
        int attached = 0;
        dt_status st = b->inject_arm(b, s, &attached);
        if (attached && st != DT_OK) {
            char msg[1536];
            snprintf(msg, sizeof msg, "%s not attached when the process initialised its runtime: %s", b->vendor,
                     dt_last_error());
            report(msg);
        } else if (attached) {
            /* The runtime registered its teardown with atexit as it began
               initialising (a statically linked one does so after this
               library's constructor registered its own handler, so that
               handler would run after the teardown): the trace is written
               from a handler registered now, which runs before the
               runtime's, while the vendor can still flush. */
            atexit(on_attach);
        } else if (st != DT_OK) {
            dt__log("InitializeInjection: %s", dt_last_error());
        }
    }
}

void *dt__inject_support_tool_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                       void *client_id)
{
    for (size_t i = 0; dt__backends[i]; i++) {
        const dt_backend *b = dt__backends[i];
        if (!(b->caps & DT_BACKEND_TOOL_CONFIGURE) || !b->tool_configure) continue;
        void *result = b->tool_configure(b, version, runtime_version, priority, client_id);
        if (result) return result;
    }
    return NULL;
}

int dt__inject_support_holds_injection_backend(const dt_session *s)
{
    const dt_backend *b = dt__select_backend(dt_session_backend(s));
    return b && (b->caps & DT_BACKEND_INJECTION_ENTRY);
}

void dt__inject_support_release(dt_session *s, const char *who)
{
    dt__core_release_backend(s, who);
}

int dt__inject_support_awaits_injection(const dt_session *s)
{
    return s && dt__core_deferred(s) && dt__core_awaits(s, dt__core_deferred(s)->name);
}

dt_status dt__inject_support_attach_early(dt_session *s)
{
    return dt__inject_support_awaits_injection(s) ? dt__core_attach_deferred(s) : DT_OK;
}

void dt__inject_support_note(dt_session *s, const char *key, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    dt__core_note(s, key, "%s", text);
}

dt_status dt__inject_support_write(dt_session *s, int fd, const char *name, dt_format format)
{
    if (fd < 0) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_write: descriptor %d is not open", fd);
    return dt__api_write_trace(s, name, fd, format, "dt_session_write");
}

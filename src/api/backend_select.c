/* A session's backend, chosen by name or "auto" over the backends' list,
   and the public calls that name backends: the core records with the
   backend it is given and names none. */
#include "api/backend_select.h"

#include "base/log.h"
#include "backends/backend.h"
#include "core/preload.h"
#include "core/recording.h"
#include "core/session.h"

#include <stdio.h>
#include <string.h>

dt_status dt_session_create(const dt_config *config, dt_session **out)
{
    dt_status st = dt__core_new(config, out);
    if (st != DT_OK) return st;
    const char *name = dt__core_backend_request(*out);
    if (strcmp(name, "auto") != 0 && !dt__select_backend(name)) {
        char list[512] = "";
        for (size_t i = 0; dt__backends[i]; i++) {
            if (!dt__backends[i]->name) continue;
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, dt__backends[i]->name, sizeof list - strlen(list) - 1);
        }
        st = dt__error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"; known: auto, %s", name, list);
        dt_session_destroy(*out);
        *out = NULL;
    }
    return st;
}

static int library_named(const dt_backend *b)
{
    return b->library_env && dt__env(b->library_env) != NULL;
}

/* "auto": backends whose library the user named come first, and the first
   of them that cannot start ends the choice with its error (the user asked
   for that library); otherwise the first backend that starts, in list
   order, else the null backend, with each backend's reason noted. */
static dt_status start_auto(dt_session *s)
{
    char why[DT_MAX_NOTES][448];
    const char *names[DT_MAX_NOTES];
    int tried = 0;
    dt_status st = DT_ERR_BACKEND_UNAVAILABLE;
    for (int named_pass = 1; named_pass >= 0; named_pass--) {
        for (size_t i = 0; dt__backends[i]; i++) {
            const dt_backend *b = dt__backends[i];
            if (!b->library_env || library_named(b) != named_pass || b == dt__core_deferred(s)) continue;
            st = dt__core_try_backend(s, b);
            if (st == DT_OK) return DT_OK;
            if (named_pass) return st;
            if (tried < DT_MAX_NOTES) {
                names[tried] = b->name;
                snprintf(why[tried], sizeof why[tried], "%s", dt_last_error());
                tried++;
            }
        }
    }
    st = dt__core_try_backend(s, &dt__backend_null);
    for (int i = 0; i < tried; i++) dt__core_note(s, names[i], "unavailable: %s", why[i]);
    dt__log("no vendor backend started; recording host ranges only");
    return st;
}

dt_status dt_session_start(dt_session *s)
{
    dt_status st = dt__core_begin(s);
    if (st != DT_OK) return st;
    const char *request = dt__core_backend_request(s);
    const dt_backend *deferred = dt__core_deferred(s);
    if (strcmp(request, "auto") == 0) st = start_auto(s);
    else if (deferred && strcmp(request, deferred->name) == 0) st = dt__core_try_backend(s, &dt__backend_null);
    else st = dt__core_try_backend(s, dt__select_backend(request));
    /* with "auto", a vendor backend that started needs no other */
    return dt__core_started(s, st, deferred && dt__core_backend(s) == &dt__backend_null);
}

dt_status dt__select_start_deferring(dt_session *s, const char *deferred)
{
    if (!s) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt__select_start_deferring: session is NULL");
    const dt_backend *b = deferred ? dt__select_backend(deferred) : NULL;
    const char *request = dt__core_backend_request(s);
    int applies = b && (strcmp(request, "auto") == 0 || strcmp(request, b->name) == 0);
    dt__core_set_deferred(s, applies ? b : NULL);
    dt_status st = dt_session_start(s);
    if (st != DT_OK) dt__core_set_deferred(s, NULL);
    return st;
}

const dt_backend *dt__select_backend(const char *name)
{
    for (size_t i = 0; dt__backends[i]; i++)
        if (strcmp(dt__backends[i]->name, name) == 0) return dt__backends[i];
    return NULL;
}

size_t dt_backend_count(void)
{
    size_t n = 0;
    while (dt__backends[n]) n++;
    return n;
}

const char *dt_backend_name(size_t index)
{
    return index < dt_backend_count() ? dt__backends[index]->name : NULL;
}

dt_status dt_prepare(const char *name)
{
    if (!name || strcmp(name, "auto") == 0) {
        dt_status st = DT_ERR_BACKEND_UNAVAILABLE;
        int any = 0;
        for (size_t i = 0; dt__backends[i]; i++) {
            if (!dt__backends[i]->prepare) continue;
            any = 1;
            if (dt__backends[i]->prepare(dt__backends[i]) == DT_OK) st = DT_OK;
        }
        return any ? st : DT_OK;
    }
    const dt_backend *b = dt__select_backend(name);
    if (!b) return dt__error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name);
    return b->prepare ? b->prepare(b) : DT_OK;
}

dt_status dt_backend_probe(const char *name, dt_backend_status *st)
{
    if (!name || !st) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_backend_probe: NULL argument");
    const dt_backend *b = dt__select_backend(name);
    if (!b) return dt__error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name);
    memset(st, 0, sizeof *st);
    st->name = b->name;
    st->vendor = b->vendor;
    if (!b->probe) { st->available = 1; return DT_OK; }
    dt_status r = b->probe(b, st);
    if (r == DT_OK && st->available && b->preload && !dt__started_with_preload(b->preload)) {
        size_t used = strlen(st->reason);
        char advice[512];
        dt__preload_advice(b->preload, st->library, advice, sizeof advice);
        snprintf(st->reason + used, sizeof st->reason - used, "%s%s not recorded: %s", used ? "; " : "",
                 b->preload_kinds, advice);
    }
    return r;
}

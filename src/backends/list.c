/* The backends, in "auto" preference order: every vendor of vendors.def,
   then the null backend. */
#include "backends/backend.h"

#define DT_VENDOR(name, ...) extern const dt_backend dt_backend_##name;
#include "backends/vendors.def"
#undef DT_VENDOR
extern const dt_backend dt_backend_null;

const dt_backend *const dt_backends[] = {
#define DT_VENDOR(name, ...) &dt_backend_##name,
#include "backends/vendors.def"
#undef DT_VENDOR
    &dt_backend_null,
    NULL,
};

dt_status dt_backend_flags(const char *name, unsigned *flags)
{
    if (!flags) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_backend_flags: flags is NULL");
    *flags = 0;
    const dt_backend *b = name ? dt_backend_find(name) : NULL;
    if (!b) return dt_error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name ? name : "(null)");
    if (b->caps & DT_BACKEND_KINETO_NATIVE) *flags |= DT_BACKEND_FLAG_KINETO_NATIVE;
    return DT_OK;
}

/* The public API's view of the backend list (src/backends/list.c): what a
   descriptor says that a program outside the library needs, by index as
   dt_backend_name gives names. */
#include "api/backend_select.h"
#include "backends/backend.h"

const char *dt_backend_library_env(size_t index)
{
    return index < dt_backend_count() ? dt__backends[index]->library_env : NULL;
}

const char *dt_backend_preload(size_t index)
{
    return index < dt_backend_count() ? dt__backends[index]->preload : NULL;
}

dt_status dt_backend_flags(const char *name, unsigned *flags)
{
    if (!flags) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_backend_flags: flags is NULL");
    *flags = 0;
    const dt_backend *b = name ? dt__select_backend(name) : NULL;
    if (!b) return dt__error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name ? name : "(null)");
    if (b->caps & DT_BACKEND_KINETO_NATIVE) *flags |= DT_BACKEND_FLAG_KINETO_NATIVE;
    return DT_OK;
}

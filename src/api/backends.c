/* The public API's view of the backend list (src/backends/list.c): what a
   descriptor says that a program outside the library needs, by index as
   dt_backend_name gives names. */
#include "backends/backend.h"

const char *dt_backend_library_env(size_t index)
{
    return index < dt_backend_count() ? dt_backends[index]->library_env : NULL;
}

const char *dt_backend_preload(size_t index)
{
    return index < dt_backend_count() ? dt_backends[index]->preload : NULL;
}

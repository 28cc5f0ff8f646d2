/* The backends, in "auto" preference order. Adding a vendor: one file that
   defines a `const dt_backend`, and one line here. */
#include "dt_internal.h"

extern const dt_backend dt_backend_cupti;
extern const dt_backend dt_backend_topspti;
extern const dt_backend dt_backend_null;

const dt_backend *const dt_backends[] = {
    &dt_backend_cupti,
    &dt_backend_topspti,
    &dt_backend_null,
    NULL,
};

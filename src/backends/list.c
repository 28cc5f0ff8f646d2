/* The backends, in "auto" preference order: every vendor of vendors.def,
   then the null backend. */
#include "backends/backend.h"

#define DT_VENDOR(name, ...) extern const dt_backend dt__backend_##name;
#include "backends/vendors.def"
#undef DT_VENDOR
extern const dt_backend dt__backend_null;

const dt_backend *const dt__backends[] = {
#define DT_VENDOR(name, ...) &dt__backend_##name,
#include "backends/vendors.def"
#undef DT_VENDOR
    &dt__backend_null,
    NULL,
};

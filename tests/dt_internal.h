/*
 * Every internal interface of libdevtrace at once, for the tests and the
 * benchmarks, which reach into every layer: the library's own files each
 * include the headers of their layer and those below (docs/architecture.md).
 */
#ifndef DT_INTERNAL_H
#define DT_INTERNAL_H

#include "dt_internal_core.h"

#include "backends/backend.h"
#include "api/backend_select.h"
#include "core/recording.h"
#include "export/writers.h"

#endif /* DT_INTERNAL_H */

/*
 * Every internal interface of libdevtrace at once, for the tests and the
 * benchmarks, which reach into every layer: the library's own files each
 * include the headers of their layer and those below (docs/architecture.md).
 */
#ifndef DT_INTERNAL_H
#define DT_INTERNAL_H

#include "base/alloc.h"
#include "base/atomic_file.h"
#include "base/common.h"
#include "base/demangle.h"
#include "base/gzip.h"
#include "base/log.h"
#include "base/os.h"

#include "core/clock.h"
#include "core/contract.h"
#include "core/flight.h"
#include "core/corr.h"
#include "core/decode.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/jobinfo.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/preload.h"
#include "core/session.h"
#include "core/session_impl.h"
#include "core/steps.h"
#include "core/threads.h"

#include "backends/backend.h"
#include "api/backend_select.h"
#include "core/recording.h"
#include "export/writers.h"

#endif /* DT_INTERNAL_H */

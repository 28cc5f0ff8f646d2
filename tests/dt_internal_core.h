/*
 * The internal interfaces of base and core, for the tests of the core,
 * which compile as the core's own files do (against the core's include
 * folder: cmake/Layers.cmake); tests/dt_internal.h adds the layers above.
 */
#ifndef DT_INTERNAL_CORE_H
#define DT_INTERNAL_CORE_H

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

#endif /* DT_INTERNAL_CORE_H */

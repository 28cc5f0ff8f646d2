/*
 * Every internal interface of libdevtrace's recording core, for code that
 * has not yet named the headers it uses: each subsystem has its own header
 * under src/core/ (and the writers theirs under src/export/), and a file
 * includes those it needs. The writers', the backends' and the API's
 * headers are here too, for code that has not yet named them. Not installed.
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
#include "core/corr.h"
#include "core/decode.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/jobinfo.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/preload.h"
#include "core/session.h"
#include "core/threads.h"

#include "export/export.h"
#include "backends/backend.h"
#include "api/backend_select.h"

#endif /* DT_INTERNAL_H */

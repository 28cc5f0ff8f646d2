/*
 * The backends: the contract they implement is core/contract.h.
 *
 * A backend is one `const dt_backend`, listed in src/backends/vendors.def
 * (vendors) or list.c (the null backend). Backends for CUPTI-shaped vendor
 * interfaces do not implement the contract by hand: they describe their
 * vendor in a `dt_vendor` and the engine (engine.h) implements it for them.
 */
#ifndef DT_BACKEND_H
#define DT_BACKEND_H

/* what a backend may use of the core: the contract, what the core offers
   every backend, and the sink, all it sees of a session (core/sink.h; the
   session's fields, and the calls that make and start sessions, are not
   for backends) */
#include "base/alloc.h"
#include "base/common.h"
#include "base/log.h"
#include "base/os.h"
#include "core/contract.h"
#include "core/corr.h"
#include "core/decode.h"
#include "core/flight.h"
#include "core/loader.h"
#include "core/pool.h"
#include "core/preload.h"
#include "core/sink.h"
#include "core/threads.h"

/* The list, NULL-terminated, in "auto" preference order. */
DT_HIDDEN extern const dt_backend *const dt__backends[];
/* The backend of every list's end: no vendor, user ranges only. */
DT_HIDDEN extern const dt_backend dt__backend_null;

#endif /* DT_BACKEND_H */

/*
 * Where the session meets the backends: choosing a session's backend by
 * name or "auto" over the list (src/api/backend_select.c). Internal, not
 * installed.
 */
#ifndef DT_API_BACKEND_SELECT_H
#define DT_API_BACKEND_SELECT_H

#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/contract.h"

/* The backend of that name in the list, or NULL. */
DT_HIDDEN const dt_backend *dt__select_backend(const char *name);

/* For the injection library (src/inject): start s, but a backend whose
   vendor calls an injection entry point when the process first uses the
   device (CUDA's InitializeInjection) waits for that call: with it
   requested, the session runs on the null backend meanwhile; with "auto",
   the other backends are tried without it. A process that never uses the
   device never loads that vendor's library. */
DT_HIDDEN dt_status dt__select_start_deferring(dt_session *s, const char *deferred);

#endif /* DT_API_BACKEND_SELECT_H */

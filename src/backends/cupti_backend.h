/*
 * Hidden entry points of the CUPTI backend, for the injection library, the
 * unit tests, the fuzz target and the decode bench.
 */
#ifndef DT_CUPTI_BACKEND_H
#define DT_CUPTI_BACKEND_H

#include "dt_internal.h"

/* Register the activity buffer callbacks and arm only the cheap device kinds
   (kernels, copies, memsets, device descriptions) before the process creates
   its first CUDA context; runtime and driver API tracing wait for a session.
   Safe to call more than once; failures are logged, never fatal. */
DT_HIDDEN void dt_cupti_early_init(void);
/* The same, reporting why it could not arm (for a public dt_prepare()). */
DT_HIDDEN dt_status dt_cupti_prepare(void);

#if defined(DT_HAVE_CUPTI) && DT_HAVE_CUPTI
#include <cupti_activity.h>

typedef CUptiResult (*dt_cupti_next_fn)(uint8_t *buffer, size_t valid_size,
                                        CUpti_Activity **record);

/* CUPTI's GetNextRecord contract, from the record sizes of the toolkit the
   library was built with: *record NULL starts at the buffer, otherwise steps
   past *record; MAX_LIMIT_REACHED at the end or when the next record does
   not fit in valid_size, INVALID_KIND on a kind without a known size.
   Never reads past valid_size. */
DT_HIDDEN CUptiResult dt_cupti_next_record(uint8_t *buffer, size_t valid_size,
                                           CUpti_Activity **record);
/* Size of a record of this kind as CUPTI of this toolkit writes it; 0 if
   unknown. */
DT_HIDDEN size_t dt_cupti_record_size(uint32_t kind);

/* Decode one completed buffer into the session, taking its lock. next: the
   iterator (the loaded libcupti's, or dt_cupti_next_record). Kernel and
   device names are read through the records' pointers, as CUPTI owns them.
   External-id links go to dt_corr_link(), which logs them: they enter the
   session's correlation map when the session stops. */
DT_HIDDEN void dt_cupti_decode_buffer(dt_session *s, uint8_t *buffer, size_t valid_size,
                                      dt_cupti_next_fn next);

/* Name of a runtime (driver 0) or driver (driver 1) callback id from the
   generated tables; NULL when the id is not in the table. */
DT_HIDDEN const char *dt_cupti_api_name(int driver, uint32_t cbid);
#endif

#endif /* DT_CUPTI_BACKEND_H */

/*
 * What the CUPTI-family vendors (CUPTI, the PPU stack's libcupti, MCPTI,
 * MUPTI) share, as engine data: record layouts by generation, the enums in
 * devtrace's terms, result codes and names. Each vendor's descriptor picks
 * from here; what only one vendor has stays in its own file.
 */
#ifndef DT_CUPTI_FAMILY_H
#define DT_CUPTI_FAMILY_H

#include "backends/cupti_family_abi.h"
#include "backends/engine/engine.h"

#define DT_CF_RESULTS                                                                               \
    {                                                                                               \
        .success = DT_CF_SUCCESS, .invalid_parameter = DT_CF_ERROR_INVALID_PARAMETER,               \
        .max_limit_reached = DT_CF_ERROR_MAX_LIMIT_REACHED, .queue_empty = DT_CF_ERROR_QUEUE_EMPTY, \
        .invalid_kind = DT_CF_ERROR_INVALID_KIND, .not_compatible = DT_CF_ERROR_NOT_COMPATIBLE,     \
        .not_initialized = DT_CF_ERROR_NOT_INITIALIZED,                                             \
        .multiple_subscribers = DT_CF_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,                     \
        .unknown = DT_CF_ERROR_UNKNOWN,                                                             \
    }

/* The parts of a family vendor's descriptor that are the family's. */
#define DT_CF_ACTIVITY_FINALIZING(external_kind_, finalize_from_)                                   \
    {.flush_forced = DT_CF_FLAG_FLUSH_FORCED, .thread_id_system = DT_CF_THREAD_ID_SYSTEM,           \
     .external_kind = external_kind_, .finalize_from = finalize_from_}
#define DT_CF_ACTIVITY(external_kind_) DT_CF_ACTIVITY_FINALIZING(external_kind_, 0)
#define DT_CF_CALLBACK_FIELDS(subscribe_named_)                                                     \
    .domain_runtime = DT_CF_DOMAIN_RUNTIME_API, .domain_driver = DT_CF_DOMAIN_DRIVER_API,           \
    .api_enter = DT_CF_API_ENTER, .site_offset = offsetof(dt_cf_callback_data, callbackSite),       \
    .correlation_offset = offsetof(dt_cf_callback_data, correlationId),                             \
    .result_offset = offsetof(dt_cf_callback_data, functionReturnValue), .subscribe_named = subscribe_named_
#define DT_CF_CALLBACKS_NAMED(subscribe_named_) {DT_CF_CALLBACK_FIELDS(subscribe_named_)}
#define DT_CF_CALLBACKS DT_CF_CALLBACKS_NAMED(NULL)
/* The family's named subscribe (<prefix>Subscribe_v2). */
DT_HIDDEN int dt__cf_subscribe_named(void *fn, void **subscriber, void *callback, void *userdata, const char *name,
                                    char *holder, size_t holder_len);
#define DT_CF_ENUMS                                                                                 \
    {.copy_kinds = DT_COUNTED(dt__cf_copy_kinds), .memory_kinds = DT_COUNTED(dt__cf_memory_kinds),    \
     .copy_async_flag = DT_CF_FLAG_ASYNC, .fill_async_flag = DT_CF_FLAG_ASYNC,                       \
     .peer_copy_kind = DT_CF_COPY_PTOP, .sync_names = DT_COUNTED(dt__cf_sync_names),                 \
     .sync_no_stream = DT_CF_SYNC_NO_STREAM, .overhead_names = DT_COUNTED(dt__cf_overhead_names),    \
     .object_process = DT_CF_OBJECT_PROCESS, .object_thread = DT_CF_OBJECT_THREAD}

DT_HIDDEN extern const uint8_t dt__cf_copy_kinds[DT_CF_COPY_COUNT];
DT_HIDDEN extern const uint8_t dt__cf_memory_kinds[DT_CF_MEMORY_COUNT];
/* Memory pool operations are counted (dt_vendor_records.counted), by
   operation type - 1: created, destroyed, trimmed. */
DT_HIDDEN extern const char *const dt__cf_pool_operations[3];
#define DT_CF_POOL_NOTE "memory_pools", "memory pool operations (counted; not events of the trace)"
#define DT_CF_SYNC_NAME_COUNT 5
DT_HIDDEN extern const dt_value_name dt__cf_sync_names[DT_CF_SYNC_NAME_COUNT];
#define DT_CF_OVERHEAD_NAME_COUNT 8
DT_HIDDEN extern const dt_value_name dt__cf_overhead_names[DT_CF_OVERHEAD_NAME_COUNT];

/* The kinds a family vendor records, other than CUPTI (whose list adds
   peer copies, device descriptions and overhead): kernels (concurrent, or
   plain where the library allows one kind only), copies and memsets (cheap:
   armed early where the vendor arms early), runtime API, and optional
   driver API, external correlation and synchronization. */
#define DT_CF_KIND_SPECS 7
DT_HIDDEN extern const dt_kind_spec dt__cf_kinds[DT_CF_KIND_SPECS];

/* Record layouts by generation (the record versions each writes), each
   ending with an entry of size 0. */
DT_HIDDEN extern const dt_record_layout dt__cf_layouts_cuda13[];   /* Kernel10, Memcpy6, Memset4: measured */
DT_HIDDEN extern const dt_record_layout dt__cf_layouts_cuda12[];   /* Kernel9, Memcpy5, Memset4: inferred */
DT_HIDDEN extern const dt_record_layout dt__cf_layouts_cuda11[];   /* Kernel8, Memcpy5, Memset4: MCPTI's sizes */
DT_HIDDEN extern const dt_record_layout dt__cf_layouts_kernel6[];  /* Kernel6, Memcpy4, Memset3: MUPTI, inferred */
/* Their walks (DT_DECODER_WALK), for DT_LAYOUT_SET. */
DT_HIDDEN void dt__cf_layouts_cuda13_walk(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,
                                          dt_vendor_next_fn next);
DT_HIDDEN void dt__cf_layouts_cuda12_walk(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,
                                          dt_vendor_next_fn next);
DT_HIDDEN void dt__cf_layouts_cuda11_walk(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,
                                          dt_vendor_next_fn next);
DT_HIDDEN void dt__cf_layouts_kernel6_walk(const dt_decoder *d, dt_session *s, uint8_t *buffer, size_t valid,
                                           dt_vendor_next_fn next);

/* Stride of a record of a family kind in a generation's layouts; 0 when
   that generation has no such kind (for emulators and benches). */
DT_HIDDEN size_t dt__cf_record_size(const dt_record_layout *set, uint32_t kind);

#endif /* DT_CUPTI_FAMILY_H */

/*
 * The CUPTI-family emulator personalities (CUPTI, PPU, MCPTI, MUPTI) share
 * their entry points: each vendor's library differs only by data (its
 * symbol prefix, record versions, callback ids and names, version, clock
 * domain, quirks) and by the vendor-only entry points it adds.
 *
 * A personality file defines one `emu_cf_personality` and invokes
 * EMU_CF_PERSONALITY(prefix, data, vendor fields...), which defines the
 * core's emu_vendor_impl, the emulator marker devtrace_emulator_<name>, and
 * every <prefix>Activity... entry point with the CUPTI signatures.
 *
 * CUDA 13's CUPTI (EMU_CF_CUDA13_ENTRY_POINTS, the CUPTI personality) adds
 * the named subscribe, EnableAndDump, the per-call runtime and driver
 * filters, activity attributes (kept, with CUPTI's defaults) and a client's
 * timestamp callback (every later timestamp in its terms); its
 * driver initialises at the first API call and then calls the injection
 * library's InitializeInjection (emu_vendor.injection_env). With
 * DEVTRACE_EMU_INIT_ON_ARM=1 the first arming call (subscribe, enable,
 * buffer registration) initialises it instead, as a CUPTI call that needs
 * the driver does: the injection library is then re-entered from inside
 * its own start. With DEVTRACE_EMU_INCOMPLETE=refused the iterator refuses
 * a kernel record a forced flush handed back without an end, as CUPTI's
 * header says it may ("incomplete or invalid"), instead of returning it.
 * A device's context is created at its first API call once the driver is
 * up, and told to a subscriber that enabled the resource domain's
 * context-creation callback (EnableCallback or EnableDomain). With
 * DEVTRACE_EMU_BEFORE_CONTEXT=refused, EnableAndDump and the runtime filter
 * answer ERROR_NOT_INITIALIZED until a context exists (as a driver still
 * initialising may; what CUDA's answers there is not documented).
 *
 * Failure modes, read at every call from DEVTRACE_EMU_FAIL:
 *   no_driver   arming calls answer ERROR_UNKNOWN, as CUPTI does without
 *               libcuda.so.1;
 *   busy        Subscribe answers MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as when
 *               another tool holds the vendor interface (named by the named
 *               subscribe "CUPTI for emulated profiler");
 *   old_driver  arming calls answer ERROR_NOT_COMPATIBLE, as with a driver
 *               older than the library.
 */
#ifndef EMU_CF_PERSONALITY_H
#define EMU_CF_PERSONALITY_H

#include "cf_records.h"

enum {
    /* one of KERNEL and CONCURRENT_KERNEL at a time: enabling the second
       answers ERROR_NOT_COMPATIBLE (the PPU stack) */
    EMU_CF_SINGLE_KERNEL_KIND = 1u << 0,
    /* after an external-correlation record the iterator does not advance:
       it returns the same record again (MCPTI 3.8) */
    EMU_CF_STALE_AFTER_EXTERNAL = 1u << 1,
    /* describes its devices in DEVICE records (CUPTI) */
    EMU_CF_DEVICE_RECORDS = 1u << 2,
    /* writes peer copies as MEMCPY2 records when that kind is on (CUPTI) */
    EMU_CF_PEER_RECORDS = 1u << 3,
};

typedef struct emu_cf_personality {
    const char *result_prefix;     /* "CUPTI": "CUPTI_ERROR_UNKNOWN" */
    uint32_t version;              /* what <prefix>GetVersion reports */
    uint32_t kernel_size, memcpy_size, memset_size; /* record versions written */
    unsigned quirks;               /* EMU_CF_* */
    /* The vendor's callback ids for each operation (0: no such call in that
       domain); driver copies by direction ([async][emu_copy_kind]; 0: the
       operation's id). */
    uint32_t runtime_cbid[EMU_OP_COUNT];
    uint32_t driver_cbid[EMU_OP_COUNT];
    uint32_t driver_copy_cbid[2][EMU_COPY_PTOP + 1];
    /* names by callback id */
    const char *const *runtime_names;
    uint32_t runtime_name_count;
    const char *const *driver_names;
    uint32_t driver_name_count;
} emu_cf_personality;

/* The callback ids of the emulator's operations, in emu_op order. */
#define EMU_CF_OPS(launch, memcpy, memcpy_async, memset, memset_async, stream_sync, device_sync)              \
    {[EMU_OP_LAUNCH_KERNEL] = launch, [EMU_OP_MEMCPY] = memcpy, [EMU_OP_MEMCPY_ASYNC] = memcpy_async,           \
     [EMU_OP_MEMSET] = memset, [EMU_OP_MEMSET_ASYNC] = memset_async, [EMU_OP_STREAM_SYNCHRONIZE] = stream_sync,  \
     [EMU_OP_DEVICE_SYNCHRONIZE] = device_sync}

/* CUPTI's numbering of them (cupti_family_abi.h), runtime and driver calls;
   the runtime's launch as CUDA 12 and earlier make it (cudaLaunchKernel). */
#define EMU_CF_CUPTI_NUMBERING                                                                                \
    .runtime_cbid = EMU_CF_OPS(DT_CF_RT_LAUNCH_KERNEL, DT_CF_RT_MEMCPY, DT_CF_RT_MEMCPY_ASYNC, DT_CF_RT_MEMSET,  \
                               DT_CF_RT_MEMSET_ASYNC, DT_CF_RT_STREAM_SYNCHRONIZE, DT_CF_RT_DEVICE_SYNCHRONIZE),  \
    EMU_CF_CUPTI_DRIVER_NUMBERING
/* As CUDA 13 makes a <<<>>> launch: __cudaPushCallConfiguration,
   __cudaPopCallConfiguration, __cudaLaunchKernel. */
#define EMU_CF_CUDA13_NUMBERING                                                                               \
    .runtime_cbid = {[EMU_OP_LAUNCH_KERNEL] = DT_CF_RT_LAUNCH_KERNEL_CUDA13, [EMU_OP_MEMCPY] = DT_CF_RT_MEMCPY,  \
                     [EMU_OP_MEMCPY_ASYNC] = DT_CF_RT_MEMCPY_ASYNC, [EMU_OP_MEMSET] = DT_CF_RT_MEMSET,          \
                     [EMU_OP_MEMSET_ASYNC] = DT_CF_RT_MEMSET_ASYNC,                                             \
                     [EMU_OP_STREAM_SYNCHRONIZE] = DT_CF_RT_STREAM_SYNCHRONIZE,                                 \
                     [EMU_OP_DEVICE_SYNCHRONIZE] = DT_CF_RT_DEVICE_SYNCHRONIZE,                                 \
                     [EMU_OP_MALLOC] = DT_CF_RT_MALLOC, [EMU_OP_FREE] = DT_CF_RT_FREE,                          \
                     [EMU_OP_PUSH_CALL_CONFIGURATION] = DT_CF_RT_PUSH_CALL_CONFIGURATION,                       \
                     [EMU_OP_POP_CALL_CONFIGURATION] = DT_CF_RT_POP_CALL_CONFIGURATION,                         \
                     [EMU_OP_GRAPH_LAUNCH] = DT_CF_RT_GRAPH_LAUNCH,                                             \
                     [EMU_OP_MEM_POOL_CREATE] = DT_CF_RT_MEM_POOL_CREATE,                                       \
                     [EMU_OP_MEM_POOL_DESTROY] = DT_CF_RT_MEM_POOL_DESTROY,                                     \
                     [EMU_OP_MEM_POOL_TRIM] = DT_CF_RT_MEM_POOL_TRIM_TO},                                       \
    EMU_CF_CUPTI_DRIVER_NUMBERING
#define EMU_CF_CUPTI_DRIVER_NUMBERING                                                                         \
    .driver_cbid = EMU_CF_OPS(DT_CF_DRV_LAUNCH_KERNEL, DT_CF_DRV_MEMCPY, DT_CF_DRV_MEMCPY_ASYNC, DT_CF_DRV_MEMSET, \
                              DT_CF_DRV_MEMSET_ASYNC, DT_CF_DRV_STREAM_SYNCHRONIZE, DT_CF_DRV_CTX_SYNCHRONIZE),  \
    .driver_copy_cbid = {                                                                                     \
        {[EMU_COPY_HTOD] = DT_CF_DRV_MEMCPY_HTOD, [EMU_COPY_DTOH] = DT_CF_DRV_MEMCPY_DTOH,                      \
         [EMU_COPY_DTOD] = DT_CF_DRV_MEMCPY_DTOD, [EMU_COPY_PTOP] = DT_CF_DRV_MEMCPY_PEER},                     \
        {[EMU_COPY_HTOD] = DT_CF_DRV_MEMCPY_HTOD_ASYNC, [EMU_COPY_DTOH] = DT_CF_DRV_MEMCPY_DTOH_ASYNC,          \
         [EMU_COPY_DTOD] = DT_CF_DRV_MEMCPY_DTOD_ASYNC, [EMU_COPY_PTOP] = DT_CF_DRV_MEMCPY_PEER_ASYNC}}

/* Defined by EMU_CF_PERSONALITY in the personality's file. */
EMU_HIDDEN extern const emu_cf_personality *const emu_cf_impl;

/* The shared entry points, with CUPTI's types as plain integers. */
EMU_HIDDEN int emu_cf_register_callbacks(emu_request_fn request, emu_generic_fn complete);
EMU_HIDDEN int emu_cf_set_kind(uint32_t kind, int on);
EMU_HIDDEN int emu_cf_latency_timestamps(uint8_t enable);
EMU_HIDDEN int emu_cf_flush_all(uint32_t flag);
EMU_HIDDEN int emu_cf_flush_period(uint32_t ms);
EMU_HIDDEN int emu_cf_dropped(size_t *dropped);
EMU_HIDDEN int emu_cf_next_record(uint8_t *buffer, size_t valid, void **record);
EMU_HIDDEN int emu_cf_push_external(uint32_t kind, uint64_t id);
EMU_HIDDEN int emu_cf_pop_external(uint32_t kind, uint64_t *id);
EMU_HIDDEN int emu_cf_subscribe(void **subscriber, emu_generic_fn callback, void *userdata);
EMU_HIDDEN int emu_cf_subscribe_named(void **subscriber, emu_generic_fn callback, void *userdata,
                                      dt_cf_subscriber_params *params);
EMU_HIDDEN int emu_cf_enable_and_dump(uint32_t kind);
EMU_HIDDEN int emu_cf_enable_runtime_api(uint32_t cbid, uint8_t enable);
EMU_HIDDEN int emu_cf_enable_driver_api(uint32_t cbid, uint8_t enable);
EMU_HIDDEN int emu_cf_set_attribute(uint32_t attribute, size_t *size, void *value);
EMU_HIDDEN int emu_cf_get_attribute(uint32_t attribute, size_t *size, void *value);
EMU_HIDDEN int emu_cf_finalize(void);
EMU_HIDDEN int emu_cf_unsubscribe(void *subscriber);
EMU_HIDDEN int emu_cf_enable_domain(uint32_t enable, void *subscriber, uint32_t domain);
EMU_HIDDEN int emu_cf_enable_all_domains(uint32_t enable, void *subscriber);
EMU_HIDDEN int emu_cf_callback_name(uint32_t domain, uint32_t cbid, const char **name);
EMU_HIDDEN int emu_cf_set_thread_id_type(uint32_t type);
EMU_HIDDEN int emu_cf_get_thread_id_type(uint32_t *type);
EMU_HIDDEN int emu_cf_version(uint32_t *version);
EMU_HIDDEN int emu_cf_result_string(int result, const char **text);
EMU_HIDDEN int emu_cf_timestamp(uint64_t *timestamp);
EMU_HIDDEN int emu_cf_register_timestamp_callback(uint64_t (*fn)(void));

/* The core's hooks, for EMU_CF_PERSONALITY. */
EMU_HIDDEN uint32_t emu_cf_cbid(emu_domain domain, emu_op op, emu_copy_kind copy_kind);
EMU_HIDDEN const char *emu_cf_name(emu_domain domain, uint32_t cbid);
/* Set on the thread that runs the client's completion callback, while it
   runs (for vendors whose calls may not be made from there). */
EMU_HIDDEN int emu_cf_in_completion(void);
EMU_HIDDEN void emu_cf_context_created(int device);
EMU_HIDDEN size_t emu_cf_vendor_record_size(emu_rec_kind kind);
EMU_HIDDEN void emu_cf_vendor_write_record(uint8_t *dst, const emu_activity *a);
EMU_HIDDEN void emu_cf_vendor_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size,
                                              size_t valid_size);

#define EMU_CF_EXPORT __attribute__((visibility("default")))

/* prefix: the vendor's symbol prefix (cupti, mcpti, mupti); name: the
   vendor's name in vendors.def; data: the emu_cf_personality; the rest:
   fields of the core's struct emu_vendor: the clock domain, external
   records with no id pushed, ... */
#define EMU_CF_PERSONALITY(prefix, name_, data, ...)                                                        \
    const emu_cf_personality *const emu_cf_impl = &(data);                                                 \
    const struct emu_vendor emu_vendor_impl = {                                                            \
        .name = #name_, .record_size = emu_cf_vendor_record_size, .write_record = emu_cf_vendor_write_record, \
        .record_kind = emu_cf_record_kind, .complete_buffer = emu_cf_vendor_complete_buffer,              \
        .invoke_callback = emu_cf_invoke_callback, .default_thread_id_type = EMU_TID_PTHREAD,      \
        .cbid = emu_cf_cbid, .callback_name = emu_cf_name, .context_created = emu_cf_context_created,      \
        __VA_ARGS__};                                                                                       \
    EMU_CF_EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_emulator_##name_[] = \
        "devtrace " #name_ " emulator, CUPTI-family ABI of cupti_family_abi.h";                            \
    EMU_CF_EXPORT int prefix##ActivityRegisterCallbacks(emu_request_fn request, emu_generic_fn complete);    \
    int prefix##ActivityRegisterCallbacks(emu_request_fn request, emu_generic_fn complete)                 \
    {                                                                                                      \
        return emu_cf_register_callbacks(request, complete);                                               \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityEnable(uint32_t kind);                                               \
    int prefix##ActivityEnable(uint32_t kind) { return emu_cf_set_kind(kind, 1); }                         \
    EMU_CF_EXPORT int prefix##ActivityDisable(uint32_t kind);                                              \
    int prefix##ActivityDisable(uint32_t kind) { return emu_cf_set_kind(kind, 0); }                        \
    EMU_CF_EXPORT int prefix##ActivityEnableLatencyTimestamps(uint8_t enable);                             \
    int prefix##ActivityEnableLatencyTimestamps(uint8_t enable) { return emu_cf_latency_timestamps(enable); } \
    EMU_CF_EXPORT int prefix##ActivityFlushAll(uint32_t flag);                                             \
    int prefix##ActivityFlushAll(uint32_t flag) { return emu_cf_flush_all(flag); }                         \
    EMU_CF_EXPORT int prefix##ActivityFlush(void *context, uint32_t stream, uint32_t flag);                \
    int prefix##ActivityFlush(void *context, uint32_t stream, uint32_t flag)                               \
    {                                                                                                      \
        (void)context;                                                                                     \
        (void)stream;                                                                                      \
        return emu_cf_flush_all(flag);                                                                     \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityFlushPeriod(uint32_t ms);                                            \
    int prefix##ActivityFlushPeriod(uint32_t ms) { return emu_cf_flush_period(ms); }                       \
    EMU_CF_EXPORT int prefix##ActivityGetNumDroppedRecords(void *context, uint32_t stream, size_t *dropped); \
    int prefix##ActivityGetNumDroppedRecords(void *context, uint32_t stream, size_t *dropped)              \
    {                                                                                                      \
        (void)context;                                                                                     \
        (void)stream;                                                                                      \
        return emu_cf_dropped(dropped);                                                                    \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record);         \
    int prefix##ActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record)                        \
    {                                                                                                      \
        return emu_cf_next_record(buffer, valid, record);                                                  \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityPushExternalCorrelationId(uint32_t kind, uint64_t id);               \
    int prefix##ActivityPushExternalCorrelationId(uint32_t kind, uint64_t id)                              \
    {                                                                                                      \
        return emu_cf_push_external(kind, id);                                                             \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityPopExternalCorrelationId(uint32_t kind, uint64_t *id);               \
    int prefix##ActivityPopExternalCorrelationId(uint32_t kind, uint64_t *id)                              \
    {                                                                                                      \
        return emu_cf_pop_external(kind, id);                                                              \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##Subscribe(void **subscriber, emu_generic_fn callback, void *userdata);       \
    int prefix##Subscribe(void **subscriber, emu_generic_fn callback, void *userdata)                      \
    {                                                                                                      \
        return emu_cf_subscribe(subscriber, callback, userdata);                                           \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##Unsubscribe(void *subscriber);                                               \
    int prefix##Unsubscribe(void *subscriber) { return emu_cf_unsubscribe(subscriber); }                   \
    EMU_CF_EXPORT int prefix##EnableDomain(uint32_t enable, void *subscriber, uint32_t domain);            \
    int prefix##EnableDomain(uint32_t enable, void *subscriber, uint32_t domain)                           \
    {                                                                                                      \
        return emu_cf_enable_domain(enable, subscriber, domain);                                           \
    }                                                                                                      \
    /* the emulator switches whole domains: one callback id switches its domain */                         \
    EMU_CF_EXPORT int prefix##EnableCallback(uint32_t enable, void *subscriber, uint32_t domain, uint32_t cbid); \
    int prefix##EnableCallback(uint32_t enable, void *subscriber, uint32_t domain, uint32_t cbid)          \
    {                                                                                                      \
        (void)cbid;                                                                                        \
        return emu_cf_enable_domain(enable, subscriber, domain);                                           \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##EnableAllDomains(uint32_t enable, void *subscriber);                         \
    int prefix##EnableAllDomains(uint32_t enable, void *subscriber)                                        \
    {                                                                                                      \
        return emu_cf_enable_all_domains(enable, subscriber);                                              \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##GetCallbackName(uint32_t domain, uint32_t cbid, const char **name);          \
    int prefix##GetCallbackName(uint32_t domain, uint32_t cbid, const char **name)                         \
    {                                                                                                      \
        return emu_cf_callback_name(domain, cbid, name);                                                   \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##SetThreadIdType(uint32_t type);                                              \
    int prefix##SetThreadIdType(uint32_t type) { return emu_cf_set_thread_id_type(type); }                 \
    EMU_CF_EXPORT int prefix##GetThreadIdType(uint32_t *type);                                             \
    int prefix##GetThreadIdType(uint32_t *type) { return emu_cf_get_thread_id_type(type); }                \
    EMU_CF_EXPORT int prefix##GetVersion(uint32_t *version);                                               \
    int prefix##GetVersion(uint32_t *version) { return emu_cf_version(version); }                          \
    EMU_CF_EXPORT int prefix##GetResultString(int result, const char **text);                              \
    int prefix##GetResultString(int result, const char **text) { return emu_cf_result_string(result, text); } \
    EMU_CF_EXPORT int prefix##GetErrorMessage(int result, const char **text);                              \
    int prefix##GetErrorMessage(int result, const char **text) { return emu_cf_result_string(result, text); } \
    EMU_CF_EXPORT int prefix##GetLastError(void);                                                          \
    int prefix##GetLastError(void) { return DT_CF_SUCCESS; }                                               \
    EMU_CF_EXPORT int prefix##Finalize(void);                                                              \
    int prefix##Finalize(void) { return emu_cf_finalize(); }                                               \
    EMU_CF_EXPORT int prefix##GetTimestamp(uint64_t *timestamp);                                           \
    int prefix##GetTimestamp(uint64_t *timestamp) { return emu_cf_timestamp(timestamp); }

/* The entry points CUDA 13's CUPTI adds to the family's. */
#define EMU_CF_CUDA13_ENTRY_POINTS(prefix)                                                                  \
    EMU_CF_EXPORT int prefix##Subscribe_v2(void **subscriber, emu_generic_fn callback, void *userdata,      \
                                           dt_cf_subscriber_params *params);                              \
    int prefix##Subscribe_v2(void **subscriber, emu_generic_fn callback, void *userdata,                   \
                             dt_cf_subscriber_params *params)                                              \
    {                                                                                                      \
        return emu_cf_subscribe_named(subscriber, callback, userdata, params);                             \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityEnableAndDump(uint32_t kind);                                        \
    int prefix##ActivityEnableAndDump(uint32_t kind) { return emu_cf_enable_and_dump(kind); }              \
    EMU_CF_EXPORT int prefix##ActivityEnableRuntimeApi(uint32_t cbid, uint8_t enable);                     \
    int prefix##ActivityEnableRuntimeApi(uint32_t cbid, uint8_t enable)                                    \
    {                                                                                                      \
        return emu_cf_enable_runtime_api(cbid, enable);                                                    \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityEnableDriverApi(uint32_t cbid, uint8_t enable);                      \
    int prefix##ActivityEnableDriverApi(uint32_t cbid, uint8_t enable)                                     \
    {                                                                                                      \
        return emu_cf_enable_driver_api(cbid, enable);                                                     \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivitySetAttribute(uint32_t attribute, size_t *size, void *value);         \
    int prefix##ActivitySetAttribute(uint32_t attribute, size_t *size, void *value)                        \
    {                                                                                                      \
        return emu_cf_set_attribute(attribute, size, value);                                               \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityGetAttribute(uint32_t attribute, size_t *size, void *value);         \
    int prefix##ActivityGetAttribute(uint32_t attribute, size_t *size, void *value)                        \
    {                                                                                                      \
        return emu_cf_get_attribute(attribute, size, value);                                               \
    }                                                                                                      \
    EMU_CF_EXPORT int prefix##ActivityRegisterTimestampCallback(uint64_t (*fn)(void));                      \
    int prefix##ActivityRegisterTimestampCallback(uint64_t (*fn)(void))                                    \
    {                                                                                                      \
        return emu_cf_register_timestamp_callback(fn);                                                     \
    }

#endif /* EMU_CF_PERSONALITY_H */

/*
 * PTI personality of the emulator: libpti_view.so with the view API's entry
 * points and record layouts of src/backends/pti_abi.h (PTI 0.17.0).
 *
 * As PTI: buffers are requested with (buffer, size) and handed back with
 * (buffer, size, used bytes); records are packed one after another, each
 * the size of its kind's struct (peer-to-peer copies are larger than other
 * copies); device work names its device by UUID and PCI address and its
 * stream by SYCL queue id; API records carry their API group and id;
 * external-correlation records come before the API record of each call
 * made with ids pushed; there is no subscriber, no callback and no dropped
 * count. ptiViewGetTimestamp returns the emulated clock, which is
 * CLOCK_REALTIME unless DEVTRACE_EMU_CLOCK_* or emu_set_clock move it (as a
 * program that set its own clock with ptiViewSetTimestampCallback would).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/pti_abi.h"
#include "emu_vendor.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT uint32_t ptiViewSetCallbacks(dt_pti_fptr_buffer_requested, dt_pti_fptr_buffer_completed);
EXPORT uint32_t ptiViewEnable(uint32_t);
EXPORT uint32_t ptiViewDisable(uint32_t);
EXPORT uint32_t ptiFlushAllViews(void);
EXPORT uint32_t ptiViewGetNextRecord(uint8_t *, size_t, dt_pti_view_record_base **);
EXPORT uint64_t ptiViewGetTimestamp(void);
EXPORT uint32_t ptiViewSetTimestampCallback(dt_pti_fptr_get_timestamp);
EXPORT uint32_t ptiViewGPULocalAvailable(void);
EXPORT const char *ptiResultTypeToString(uint32_t);
EXPORT const char *ptiVersionString(void);
EXPORT uint32_t ptiViewPushExternalCorrelationId(uint32_t, uint64_t);
EXPORT uint32_t ptiViewPopExternalCorrelationId(uint32_t, uint64_t *);
EXPORT uint32_t ptiViewGetApiIdName(uint32_t, uint32_t, const char **);
EXPORT int zeDriverGet(uint32_t *, void **);
EXPORT int zeDeviceGet(void *, uint32_t *, void **);
EXPORT int zeDeviceGetProperties(void *, dt_ze_device_properties *);

/* The marker lives in its own section so that AddressSanitizer leaves it
   alone. */
EXPORT __attribute__((section(".rodata.devtrace_emu"))) const char devtrace_pti_emulator[] =
    "devtrace PTI emulator, ABI of pti_abi.h (PTI 0.17.0)";

/* A kind no PTI release defines, and the size of its records. */
#define UNKNOWN_KIND 0x7ffffff0u
#define UNKNOWN_SIZE 16

/* ------------------------------------------------------------------ */
/* API ids and names                                                   */
/* ------------------------------------------------------------------ */
typedef struct api_name {
    uint32_t id;
    const char *name;
} api_name;

/* pti_runtime_sycl_api_ids.h: the unified runtime's calls SYCL makes */
static const api_name runtime_names[] = {
    {DT_PTI_urEnqueueKernelLaunch_id, "urEnqueueKernelLaunch"},
    {DT_PTI_urEnqueueMemBufferRead_id, "urEnqueueMemBufferRead"},
    {DT_PTI_urEnqueueMemBufferWrite_id, "urEnqueueMemBufferWrite"},
    {DT_PTI_urEnqueueMemBufferCopy_id, "urEnqueueMemBufferCopy"},
    {DT_PTI_urEnqueueUSMFill_id, "urEnqueueUSMFill"},
    {DT_PTI_urEnqueueUSMMemcpy_id, "urEnqueueUSMMemcpy"},
    {DT_PTI_urQueueFinish_id, "urQueueFinish"},
};

/* pti_driver_levelzero_api_ids.h */
static const api_name driver_names[] = {
    {DT_PTI_zeCommandQueueExecuteCommandLists_id, "zeCommandQueueExecuteCommandLists"},
    {DT_PTI_zeCommandQueueSynchronize_id, "zeCommandQueueSynchronize"},
    {DT_PTI_zeCommandListAppendMemoryCopy_id, "zeCommandListAppendMemoryCopy"},
    {DT_PTI_zeCommandListAppendMemoryFill_id, "zeCommandListAppendMemoryFill"},
    {DT_PTI_zeCommandListAppendLaunchKernel_id, "zeCommandListAppendLaunchKernel"},
};

static const char *find_name(const api_name *t, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].id == id) return t[i].name;
    return NULL;
}

static const char *pti_callback_name(emu_domain domain, uint32_t cbid)
{
    return domain == EMU_DOMAIN_RUNTIME ? find_name(runtime_names, sizeof runtime_names / sizeof *runtime_names, cbid)
                                        : find_name(driver_names, sizeof driver_names / sizeof *driver_names, cbid);
}

/* SYCL calls the unified runtime, which calls Level Zero: a SYCL copy is
   urEnqueueUSMMemcpy over zeCommandListAppendMemoryCopy. */
static uint32_t pti_cbid(emu_domain domain, emu_op op, emu_copy_kind ck)
{
    (void)ck;
    int rt = domain == EMU_DOMAIN_RUNTIME;
    switch (op) {
    case EMU_OP_LAUNCH_KERNEL:
        return rt ? DT_PTI_urEnqueueKernelLaunch_id : DT_PTI_zeCommandListAppendLaunchKernel_id;
    case EMU_OP_MEMCPY:
    case EMU_OP_MEMCPY_ASYNC: return rt ? DT_PTI_urEnqueueUSMMemcpy_id : DT_PTI_zeCommandListAppendMemoryCopy_id;
    case EMU_OP_MEMSET:
    case EMU_OP_MEMSET_ASYNC: return rt ? DT_PTI_urEnqueueUSMFill_id : DT_PTI_zeCommandListAppendMemoryFill_id;
    case EMU_OP_STREAM_SYNCHRONIZE:
    case EMU_OP_DEVICE_SYNCHRONIZE: return rt ? DT_PTI_urQueueFinish_id : DT_PTI_zeCommandQueueSynchronize_id;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */
static uint32_t kind_at(const uint8_t *rec)
{
    uint32_t k;
    memcpy(&k, rec, sizeof k);
    return k;
}

static size_t kind_size(uint32_t kind)
{
    switch (kind) {
    case DT_PTI_VIEW_DEVICE_GPU_KERNEL: return sizeof(dt_pti_view_record_kernel);
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY: return sizeof(dt_pti_view_record_memory_copy);
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P: return sizeof(dt_pti_view_record_memory_copy_p2p);
    case DT_PTI_VIEW_DEVICE_GPU_MEM_FILL: return sizeof(dt_pti_view_record_memory_fill);
    case DT_PTI_VIEW_RUNTIME_API:
    case DT_PTI_VIEW_DRIVER_API: return sizeof(dt_pti_view_record_api);
    case DT_PTI_VIEW_EXTERNAL_CORRELATION: return sizeof(dt_pti_view_record_external_correlation);
    case UNKNOWN_KIND: return UNKNOWN_SIZE;
    default: return 0;
    }
}

static size_t pti_record_size(emu_rec_kind kind)
{
    switch (kind) {
    case EMU_REC_KERNEL: return sizeof(dt_pti_view_record_kernel);
    case EMU_REC_MEMCPY: return sizeof(dt_pti_view_record_memory_copy);
    case EMU_REC_MEMSET: return sizeof(dt_pti_view_record_memory_fill);
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: return sizeof(dt_pti_view_record_api);
    case EMU_REC_EXTERNAL: return sizeof(dt_pti_view_record_external_correlation);
    case EMU_REC_UNKNOWN: return UNKNOWN_SIZE;
    default: return 0;
    }
}

static size_t pti_activity_size(const emu_activity *a)
{
    if (a->kind == EMU_REC_MEMCPY && a->u.memcpy.copy_kind == EMU_COPY_PTOP)
        return sizeof(dt_pti_view_record_memory_copy_p2p);
    return pti_record_size(a->kind);
}

static size_t pti_size_at(const uint8_t *rec, size_t avail)
{
    (void)avail;
    return kind_size(kind_at(rec));
}

static emu_rec_kind pti_record_kind(const uint8_t *rec, size_t avail)
{
    if (avail < 4) return EMU_REC_UNKNOWN;
    switch (kind_at(rec)) {
    case DT_PTI_VIEW_DEVICE_GPU_KERNEL: return EMU_REC_KERNEL;
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY:
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P: return EMU_REC_MEMCPY;
    case DT_PTI_VIEW_DEVICE_GPU_MEM_FILL: return EMU_REC_MEMSET;
    case DT_PTI_VIEW_RUNTIME_API: return EMU_REC_RUNTIME;
    case DT_PTI_VIEW_DRIVER_API: return EMU_REC_DRIVER;
    case DT_PTI_VIEW_EXTERNAL_CORRELATION: return EMU_REC_EXTERNAL;
    default: return EMU_REC_UNKNOWN;
    }
}

/* An emulated device's UUID and PCI address: Intel's vendor id, a Data
   Center GPU Max's device id, and the device number; bus 0x3a onwards. */
static void device_ids(uint32_t device, uint8_t uuid[DT_PTI_MAX_DEVICE_UUID_SIZE],
                       char pci[DT_PTI_MAX_PCI_ADDRESS_SIZE])
{
    static const uint8_t base[DT_PTI_MAX_DEVICE_UUID_SIZE] = {0x86, 0x80, 0xd5, 0x0b, 0, 0, 0, 0,
                                                              0,    0,    0,    0,    0, 0, 0, 0};
    memcpy(uuid, base, DT_PTI_MAX_DEVICE_UUID_SIZE);
    uuid[12] = (uint8_t)(device >> 24);
    uuid[13] = (uint8_t)(device >> 16);
    uuid[14] = (uint8_t)(device >> 8);
    uuid[15] = (uint8_t)device;
    snprintf(pci, DT_PTI_MAX_PCI_ADDRESS_SIZE, "0:%x:0.0", 0x3au + (device & 0xff));
}

/* The emulator's SYCL queues are its streams. */
static uint64_t queue_of(const emu_activity *a)
{
    return a->stream;
}

static void *handle_of(uint32_t what, uint32_t n)
{
    return (void *)(uintptr_t)(((uint64_t)what << 32) | (n + 1u));
}

static uint32_t memory_type(int m)
{
    switch (m) {
    case EMU_MEM_PAGEABLE: return DT_PTI_VIEW_MEMORY_TYPE_MEMORY;
    case EMU_MEM_PINNED: return DT_PTI_VIEW_MEMORY_TYPE_HOST;
    case EMU_MEM_DEVICE: return DT_PTI_VIEW_MEMORY_TYPE_DEVICE;
    default: return DT_PTI_VIEW_MEMORY_TYPE_MEMORY;
    }
}

static uint32_t memcpy_type(const emu_activity *a)
{
    uint32_t src = memory_type(a->u.memcpy.src_memory), dst = memory_type(a->u.memcpy.dst_memory);
    switch (a->u.memcpy.copy_kind) {
    case EMU_COPY_HTOD: dst = DT_PTI_VIEW_MEMORY_TYPE_DEVICE; if (src == DT_PTI_VIEW_MEMORY_TYPE_DEVICE) src = 0; break;
    case EMU_COPY_DTOH: src = DT_PTI_VIEW_MEMORY_TYPE_DEVICE; if (dst == DT_PTI_VIEW_MEMORY_TYPE_DEVICE) dst = 0; break;
    case EMU_COPY_DTOD:
    case EMU_COPY_PTOP: src = dst = DT_PTI_VIEW_MEMORY_TYPE_DEVICE; break;
    case EMU_COPY_HTOH:
        if (src == DT_PTI_VIEW_MEMORY_TYPE_DEVICE) src = 0;
        if (dst == DT_PTI_VIEW_MEMORY_TYPE_DEVICE) dst = 0;
        break;
    default: break;
    }
    return src * 4 + dst;
}

static void write_kernel(uint8_t *dst, const emu_activity *a)
{
    dt_pti_view_record_kernel k;
    memset(&k, 0, sizeof k);
    k._view_kind._view_kind = DT_PTI_VIEW_DEVICE_GPU_KERNEL;
    k._queue_handle = handle_of(1, a->stream);
    k._context_handle = handle_of(2, a->context);
    k._name = a->u.kernel.name;
    k._kernel_id = a->correlation;
    k._correlation_id = a->correlation;
    device_ids(a->device, k._device_uuid, k._pci_address);
    k._append_timestamp = a->u.kernel.queued;
    k._submit_timestamp = a->u.kernel.submitted;
    k._start_timestamp = a->start;
    k._end_timestamp = a->end;
    k._sycl_queue_id = queue_of(a);
    memcpy(dst, &k, sizeof k);
}

static void write_copy(uint8_t *dst, const emu_activity *a)
{
    if (a->u.memcpy.copy_kind == EMU_COPY_PTOP) {
        dt_pti_view_record_memory_copy_p2p c;
        memset(&c, 0, sizeof c);
        c._view_kind._view_kind = DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P;
        c._memcpy_type = DT_PTI_VIEW_MEMCPY_TYPE_D2D;
        c._mem_src = c._mem_dst = DT_PTI_VIEW_MEMORY_TYPE_DEVICE;
        c._queue_handle = handle_of(1, a->stream);
        c._context_handle = handle_of(2, a->context);
        c._name = "zeCommandListAppendMemoryCopy";
        device_ids(a->u.memcpy.src_device, c._src_uuid, c._src_pci_address);
        device_ids(a->u.memcpy.dst_device, c._dst_uuid, c._dst_pci_address);
        c._mem_op_id = a->correlation;
        c._correlation_id = a->correlation;
        c._start_timestamp = a->start;
        c._end_timestamp = a->end;
        c._bytes = a->u.memcpy.bytes;
        c._sycl_queue_id = queue_of(a);
        memcpy(dst, &c, sizeof c);
        return;
    }
    dt_pti_view_record_memory_copy c;
    memset(&c, 0, sizeof c);
    c._view_kind._view_kind = DT_PTI_VIEW_DEVICE_GPU_MEM_COPY;
    c._memcpy_type = memcpy_type(a);
    c._mem_src = c._memcpy_type / 4;
    c._mem_dst = c._memcpy_type % 4;
    c._queue_handle = handle_of(1, a->stream);
    c._context_handle = handle_of(2, a->context);
    c._name = "zeCommandListAppendMemoryCopy";
    device_ids(a->device, c._device_uuid, c._pci_address);
    c._mem_op_id = a->correlation;
    c._correlation_id = a->correlation;
    c._start_timestamp = a->start;
    c._end_timestamp = a->end;
    c._bytes = a->u.memcpy.bytes;
    c._sycl_queue_id = queue_of(a);
    memcpy(dst, &c, sizeof c);
}

static void write_fill(uint8_t *dst, const emu_activity *a)
{
    dt_pti_view_record_memory_fill f;
    memset(&f, 0, sizeof f);
    f._view_kind._view_kind = DT_PTI_VIEW_DEVICE_GPU_MEM_FILL;
    f._mem_type = memory_type(a->u.memset.memory);
    f._queue_handle = handle_of(1, a->stream);
    f._context_handle = handle_of(2, a->context);
    f._name = "zeCommandListAppendMemoryFill";
    device_ids(a->device, f._device_uuid, f._pci_address);
    f._mem_op_id = a->correlation;
    f._correlation_id = a->correlation;
    f._start_timestamp = a->start;
    f._end_timestamp = a->end;
    f._bytes = a->u.memset.bytes;
    f._value_for_set = a->u.memset.value;
    f._sycl_queue_id = queue_of(a);
    memcpy(dst, &f, sizeof f);
}

static void write_api(uint8_t *dst, const emu_activity *a)
{
    dt_pti_view_record_api r;
    memset(&r, 0, sizeof r);
    int rt = a->kind == EMU_REC_RUNTIME;
    r._view_kind._view_kind = rt ? DT_PTI_VIEW_RUNTIME_API : DT_PTI_VIEW_DRIVER_API;
    r._api_group = rt ? DT_PTI_API_GROUP_SYCL : DT_PTI_API_GROUP_LEVELZERO;
    r._api_id = a->u.api.cbid;
    r._start_timestamp = a->start;
    r._end_timestamp = a->end;
    r._process_id = a->u.api.process;
    r._thread_id = a->u.api.thread;
    r._correlation_id = a->correlation;
    /* the driver's ze_result_t; runtime records carry none */
    r._return_code = rt ? 0 : (uint32_t)a->u.api.return_value;
    memcpy(dst, &r, sizeof r);
}

static void write_external(uint8_t *dst, const emu_activity *a)
{
    dt_pti_view_record_external_correlation x;
    memset(&x, 0, sizeof x);
    x._view_kind._view_kind = DT_PTI_VIEW_EXTERNAL_CORRELATION;
    x._correlation_id = a->correlation;
    x._external_id = a->u.external.external_id;
    x._external_kind = a->u.external.external_kind;
    memcpy(dst, &x, sizeof x);
}

static void pti_write_record(uint8_t *dst, const emu_activity *a)
{
    switch (a->kind) {
    case EMU_REC_KERNEL: write_kernel(dst, a); return;
    case EMU_REC_MEMCPY: write_copy(dst, a); return;
    case EMU_REC_MEMSET: write_fill(dst, a); return;
    case EMU_REC_RUNTIME:
    case EMU_REC_DRIVER: write_api(dst, a); return;
    case EMU_REC_EXTERNAL: write_external(dst, a); return;
    case EMU_REC_UNKNOWN: {
        uint32_t kind = UNKNOWN_KIND;
        memcpy(dst, &kind, sizeof kind);
        memcpy(dst + 8, &a->correlation, sizeof a->correlation);
        return;
    }
    default: return;
    }
}

static void pti_complete_buffer(void (*client_fn)(void), uint8_t *buffer, size_t size, size_t valid_size)
{
    ((dt_pti_fptr_buffer_completed)(void *)client_fn)(buffer, size, valid_size);
}

/* PTI has no subscriber: nothing is ever called back. */
static void pti_invoke_callback(void (*client_fn)(void), void *userdata, const emu_api_call *call)
{
    (void)client_fn;
    (void)userdata;
    (void)call;
}

const struct emu_vendor emu_vendor_impl = {
    .name = "pti",
    .record_size = pti_record_size,
    .write_record = pti_write_record,
    .record_kind = pti_record_kind,
    .complete_buffer = pti_complete_buffer,
    .invoke_callback = pti_invoke_callback,
    .cbid = pti_cbid,
    .callback_name = pti_callback_name,
    /* PTI's records carry Linux thread ids */
    .default_thread_id_type = EMU_TID_SYSTEM,
    /* PTI keeps no dropped-record count */
    .unsupported_faults = 1u << EMU_FAULT_VENDOR_DROPPED,
    .activity_size = pti_activity_size,
    .size_at = pti_size_at,
};

/* ------------------------------------------------------------------ */
/* Exported entry points                                               */
/* ------------------------------------------------------------------ */
static int kind_map(uint32_t kind, emu_rec_kind *out)
{
    switch (kind) {
    case DT_PTI_VIEW_DEVICE_GPU_KERNEL: *out = EMU_REC_KERNEL; return 1;
    /* copies and peer copies are one kind of the emulator core's */
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY:
    case DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P: *out = EMU_REC_MEMCPY; return 1;
    case DT_PTI_VIEW_DEVICE_GPU_MEM_FILL: *out = EMU_REC_MEMSET; return 1;
    case DT_PTI_VIEW_RUNTIME_API: *out = EMU_REC_RUNTIME; return 1;
    case DT_PTI_VIEW_DRIVER_API: *out = EMU_REC_DRIVER; return 1;
    case DT_PTI_VIEW_EXTERNAL_CORRELATION: *out = EMU_REC_EXTERNAL; return 1;
    default: return 0;
    }
}

static uint32_t result_of(emu_status st)
{
    switch (st) {
    case EMU_ST_OK: return DT_PTI_SUCCESS;
    case EMU_ST_END: return DT_PTI_STATUS_END_OF_BUFFER;
    case EMU_ST_INVALID:
    case EMU_ST_BUSY:
    case EMU_ST_NOT_SUBSCRIBED:
    case EMU_ST_UNKNOWN_KIND:
    case EMU_ST_TRUNCATED: return DT_PTI_ERROR_BAD_ARGUMENT;
    }
    return DT_PTI_ERROR_INTERNAL;
}

/* The client's request takes (buffer, size); the emulator core asks with a
   record count too, which PTI has not. */
static dt_pti_fptr_buffer_requested client_request;

static void request_trampoline(uint8_t **buffer, size_t *size, size_t *max_records)
{
    dt_pti_fptr_buffer_requested fn = __atomic_load_n(&client_request, __ATOMIC_ACQUIRE);
    *max_records = 0;
    if (!fn) {
        *buffer = NULL;
        *size = 0;
        return;
    }
    fn((unsigned char **)buffer, size);
}

EXPORT uint32_t ptiViewSetCallbacks(dt_pti_fptr_buffer_requested request, dt_pti_fptr_buffer_completed complete)
{
    if (!request || !complete) return DT_PTI_ERROR_BAD_ARGUMENT;
    __atomic_store_n(&client_request, request, __ATOMIC_RELEASE);
    return result_of(emu_core_register_buffers(request_trampoline, (emu_generic_fn)(void *)complete));
}

static uint32_t set_kind(uint32_t kind, int on)
{
    emu_rec_kind k;
    if (!kind_map(kind, &k)) return DT_PTI_ERROR_BAD_ARGUMENT;
    return result_of(emu_core_enable(k, on));
}

EXPORT uint32_t ptiViewEnable(uint32_t kind)
{
    return set_kind(kind, 1);
}

EXPORT uint32_t ptiViewDisable(uint32_t kind)
{
    return set_kind(kind, 0);
}

/* Every buffer back, with whatever it holds (PTI's flush takes no flag). */
EXPORT uint32_t ptiFlushAllViews(void)
{
    return result_of(emu_core_flush_all(1));
}

EXPORT uint32_t ptiViewGetNextRecord(uint8_t *buffer, size_t valid_bytes, dt_pti_view_record_base **record)
{
    if (!record) return DT_PTI_ERROR_BAD_ARGUMENT;
    uint8_t *rec = (uint8_t *)*record;
    emu_status st = emu_core_next_record(buffer, valid_bytes, &rec);
    if (st == EMU_ST_OK || st == EMU_ST_UNKNOWN_KIND || st == EMU_ST_TRUNCATED)
        *record = (dt_pti_view_record_base *)(void *)rec;
    return result_of(st);
}

EXPORT uint64_t ptiViewGetTimestamp(void)
{
    return emu_core_timestamp();
}

/* The emulated clock is moved with DEVTRACE_EMU_CLOCK_* or emu_set_clock
   instead. */
EXPORT uint32_t ptiViewSetTimestampCallback(dt_pti_fptr_get_timestamp fn)
{
    (void)fn;
    return DT_PTI_ERROR_NOT_IMPLEMENTED;
}

/* The emulator has no Level Zero driver to ask. */
EXPORT uint32_t ptiViewGPULocalAvailable(void)
{
    return DT_PTI_SUCCESS;
}

EXPORT const char *ptiResultTypeToString(uint32_t result)
{
    switch (result) {
    case DT_PTI_SUCCESS: return "PTI_SUCCESS";
    case DT_PTI_STATUS_END_OF_BUFFER: return "PTI_STATUS_END_OF_BUFFER";
    case DT_PTI_ERROR_NOT_IMPLEMENTED: return "PTI_ERROR_NOT_IMPLEMENTED";
    case DT_PTI_ERROR_BAD_ARGUMENT: return "PTI_ERROR_BAD_ARGUMENT";
    case DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY: return "PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY";
    default: return "PTI_ERROR_INTERNAL";
    }
}

EXPORT const char *ptiVersionString(void)
{
    return "0.17.0";
}

EXPORT uint32_t ptiViewPushExternalCorrelationId(uint32_t kind, uint64_t id)
{
    if (kind < DT_PTI_VIEW_EXTERNAL_KIND_UNKNOWN || kind > DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_3)
        return DT_PTI_ERROR_BAD_ARGUMENT;
    return result_of(emu_core_push_external(kind, id));
}

EXPORT uint32_t ptiViewPopExternalCorrelationId(uint32_t kind, uint64_t *id)
{
    if (kind < DT_PTI_VIEW_EXTERNAL_KIND_UNKNOWN || kind > DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_3)
        return DT_PTI_ERROR_BAD_ARGUMENT;
    uint64_t popped = 0;
    emu_status st = emu_core_pop_external(kind, &popped);
    if (st != EMU_ST_OK) return DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY;
    if (id) *id = popped;
    return DT_PTI_SUCCESS;
}

EXPORT uint32_t ptiViewGetApiIdName(uint32_t group, uint32_t id, const char **name)
{
    if (!name) return DT_PTI_ERROR_BAD_ARGUMENT;
    const char *n = NULL;
    if (group == DT_PTI_API_GROUP_SYCL) n = pti_callback_name(EMU_DOMAIN_RUNTIME, id);
    else if (group == DT_PTI_API_GROUP_LEVELZERO) n = pti_callback_name(EMU_DOMAIN_DRIVER, id);
    if (!n) return DT_PTI_ERROR_BAD_API_ID;
    *name = n;
    return DT_PTI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* The Level Zero driver the program has loaded                        */
/* ------------------------------------------------------------------ */
/* One driver listing the emulated devices in order, as Level Zero's loader
   does (zeDriverGet, zeDeviceGet, zeDeviceGetProperties of ze_api.h). */
#define ZE_RESULT_SUCCESS 0
#define ZE_RESULT_ERROR_INVALID_NULL_POINTER 0x78000007
#define ZE_RESULT_ERROR_INVALID_NULL_HANDLE 0x78000004
#define EMU_ZE_DRIVER ((void *)(uintptr_t)0x7a0)

EXPORT int zeDriverGet(uint32_t *count, void **drivers)
{
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (drivers && *count >= 1) drivers[0] = EMU_ZE_DRIVER;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

EXPORT int zeDeviceGet(void *driver, uint32_t *count, void **devices)
{
    if (driver != EMU_ZE_DRIVER) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint32_t n = (uint32_t)emu_device_count();
    if (devices) {
        if (*count < n) n = *count;
        for (uint32_t i = 0; i < n; i++) devices[i] = (void *)(uintptr_t)(0x7b0000u + i);
    }
    *count = n;
    return ZE_RESULT_SUCCESS;
}

EXPORT int zeDeviceGetProperties(void *device, dt_ze_device_properties *p)
{
    uintptr_t h = (uintptr_t)device;
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (h < 0x7b0000u || h >= 0x7b0000u + (uintptr_t)emu_device_count()) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    uint32_t index = (uint32_t)(h - 0x7b0000u);
    char pci[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    p->type = 1; /* ZE_DEVICE_TYPE_GPU */
    p->vendorId = 0x8086;
    p->deviceId = 0x0bd5;
    device_ids(index, p->uuid, pci);
    snprintf(p->name, sizeof p->name, "Intel(R) Data Center GPU Max 1550");
    return ZE_RESULT_SUCCESS;
}

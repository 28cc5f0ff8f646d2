/*
 * Intel PTI-SDK's view API (libpti_view.so), as devtrace declares it.
 *
 * Every layout, enum value and entry point here is read from the public
 * headers of intel/pti-gpu at tag pti-0.17.0 (sdk/include/pti/pti_view.h,
 * pti.h, pti_version.h.in; VERSION 0.17.0), and from its sources at that tag
 * where the headers say nothing (sdk/src/view_handler.h, pti_view.cc):
 *  - the records' kind is their first 32-bit field, and ptiViewGetNextRecord
 *    steps by the size of the record kind's struct (GetViewSize), answers
 *    PTI_STATUS_END_OF_BUFFER at the end and PTI_ERROR_BAD_ARGUMENT on a kind
 *    it does not know;
 *  - ptiViewGetTimestamp returns CLOCK_REALTIME ns unless a callback set by
 *    ptiViewSetTimestampCallback says otherwise, and every record's
 *    timestamps are on that clock;
 *  - _pci_address is written "%x:%x:%x.%x" (domain, bus, device, function).
 * The record layouts are those of PTI 0.11 to 0.17 and of the development
 * head after 0.17 (which adds pti_view_record_kernel_v2 as an extension of
 * the kernel record, not used here). Nothing here is inferred; where the SDK
 * is installed (DT_HAVE_PTI_SDK, cmake/Pti.cmake) the block at the end
 * checks every offset, size and value devtrace reads against its headers.
 * The SDK is not installed where devtrace is built and tested: the block
 * has been compiled (gcc and clang, -Werror) only against the headers of
 * the pti-0.17.0 tag with the two files its build generates
 * (pti_version.h, pti_export.h) written by hand, where it passed, and
 * failed when a field was moved.
 *
 * Names keep PTI's, prefixed dt_, so that each can be checked against the
 * SDK's own.
 */
#ifndef DT_BACKENDS_PTI_ABI_H
#define DT_BACKENDS_PTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* pti.h */
typedef enum dt_pti_result {
    DT_PTI_SUCCESS = 0,
    DT_PTI_STATUS_END_OF_BUFFER = 1,
    DT_PTI_ERROR_NOT_IMPLEMENTED = 2,
    DT_PTI_ERROR_BAD_ARGUMENT = 3,
    DT_PTI_ERROR_NO_CALLBACKS_SET = 4,
    DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY = 5,
    DT_PTI_ERROR_BAD_TIMESTAMP = 6,
    DT_PTI_ERROR_BAD_API_ID = 7,
    DT_PTI_ERROR_NO_GPU_VIEWS_ENABLED = 8,
    DT_PTI_ERROR_DRIVER = 50,
    DT_PTI_ERROR_TRACING_NOT_INITIALIZED = 51,
    DT_PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED = 52,
    DT_PTI_ERROR_INTERNAL = 200,
} dt_pti_result;

#define DT_PTI_MAX_DEVICE_UUID_SIZE 16
#define DT_PTI_MAX_PCI_ADDRESS_SIZE 16
/* a record with no SYCL queue (pti_view.h: UINT64_MAX-1) */
#define DT_PTI_INVALID_QUEUE_ID (UINT64_MAX - 1)

/* pti_view.h: pti_view_kind */
enum {
    DT_PTI_VIEW_INVALID = 0,
    DT_PTI_VIEW_DEVICE_GPU_KERNEL = 1,
    DT_PTI_VIEW_DEVICE_CPU_KERNEL = 2,
    DT_PTI_VIEW_DRIVER_API = 3,       /* Level Zero calls (PTI_VIEW_LEVEL_ZERO_CALLS before 0.11) */
    DT_PTI_VIEW_RESERVED = 4,
    DT_PTI_VIEW_COLLECTION_OVERHEAD = 5,
    DT_PTI_VIEW_RUNTIME_API = 6,      /* SYCL runtime calls (PTI_VIEW_SYCL_RUNTIME_CALLS before 0.11) */
    DT_PTI_VIEW_EXTERNAL_CORRELATION = 7,
    DT_PTI_VIEW_DEVICE_GPU_MEM_COPY = 8,
    DT_PTI_VIEW_DEVICE_GPU_MEM_FILL = 9,
    DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P = 10,
    DT_PTI_VIEW_DEVICE_SYNCHRONIZATION = 11,
    DT_PTI_VIEW_COMMUNICATION = 12,
};

/* pti_view_memory_type */
enum {
    DT_PTI_VIEW_MEMORY_TYPE_MEMORY = 0, /* unknown, or host memory the user allocated */
    DT_PTI_VIEW_MEMORY_TYPE_HOST = 1,
    DT_PTI_VIEW_MEMORY_TYPE_DEVICE = 2,
    DT_PTI_VIEW_MEMORY_TYPE_SHARED = 3,
};

/* pti_view_memcpy_type: source * 4 + destination, each M(emory), H(ost),
   D(evice), S(hared) in that order */
enum {
    DT_PTI_VIEW_MEMCPY_TYPE_M2M = 0, DT_PTI_VIEW_MEMCPY_TYPE_M2H = 1, DT_PTI_VIEW_MEMCPY_TYPE_M2D = 2,
    DT_PTI_VIEW_MEMCPY_TYPE_M2S = 3, DT_PTI_VIEW_MEMCPY_TYPE_H2M = 4, DT_PTI_VIEW_MEMCPY_TYPE_H2H = 5,
    DT_PTI_VIEW_MEMCPY_TYPE_H2D = 6, DT_PTI_VIEW_MEMCPY_TYPE_H2S = 7, DT_PTI_VIEW_MEMCPY_TYPE_D2M = 8,
    DT_PTI_VIEW_MEMCPY_TYPE_D2H = 9, DT_PTI_VIEW_MEMCPY_TYPE_D2D = 10, DT_PTI_VIEW_MEMCPY_TYPE_D2S = 11,
    DT_PTI_VIEW_MEMCPY_TYPE_S2M = 12, DT_PTI_VIEW_MEMCPY_TYPE_S2H = 13, DT_PTI_VIEW_MEMCPY_TYPE_S2D = 14,
    DT_PTI_VIEW_MEMCPY_TYPE_S2S = 15,
};

/* pti_view_external_kind. Kineto's XPU plugin pushes CUSTOM_0 (its own ids)
   and CUSTOM_1 (user ranges); devtrace pushes CUSTOM_3. */
enum {
    DT_PTI_VIEW_EXTERNAL_KIND_INVALID = 0,
    DT_PTI_VIEW_EXTERNAL_KIND_UNKNOWN = 1,
    DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_0 = 2,
    DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_1 = 3,
    DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_2 = 4,
    DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_3 = 5,
};

/* pti_api_group_id: the first argument of ptiViewGetApiIdName */
enum {
    DT_PTI_API_GROUP_RESERVED = 0,
    DT_PTI_API_GROUP_LEVELZERO = 1,
    DT_PTI_API_GROUP_OPENCL = 2,
    DT_PTI_API_GROUP_SYCL = 3,
};

/* pti_runtime_sycl_api_ids.h (unified runtime v0.12) and
   pti_driver_levelzero_api_ids.h, the ids devtrace names itself */
enum {
    DT_PTI_urEnqueueKernelLaunch_id = 17,
    DT_PTI_urEnqueueMemBufferRead_id = 20,
    DT_PTI_urEnqueueMemBufferWrite_id = 21,
    DT_PTI_urEnqueueMemBufferCopy_id = 24,
    DT_PTI_urEnqueueUSMFill_id = 32,
    DT_PTI_urEnqueueUSMMemcpy_id = 33,
    DT_PTI_urQueueFinish_id = 97,
    DT_PTI_zeCommandQueueExecuteCommandLists_id = 31,
    DT_PTI_zeCommandQueueSynchronize_id = 32,
    DT_PTI_zeCommandListAppendMemoryCopy_id = 41,
    DT_PTI_zeCommandListAppendMemoryFill_id = 42,
    DT_PTI_zeCommandListAppendLaunchKernel_id = 55,
};

typedef struct dt_pti_view_record_base {
    uint32_t _view_kind;
} dt_pti_view_record_base;

typedef struct dt_pti_view_record_kernel {
    dt_pti_view_record_base _view_kind;
    void *_queue_handle;                     /* pti_backend_queue_t */
    void *_context_handle;                   /* pti_backend_ctx_t */
    const char *_name;
    const char *_source_file_name;
    uint64_t _source_line_number;
    uint64_t _kernel_id;
    uint32_t _correlation_id;
    uint32_t _thread_id;
    char _pci_address[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    uint8_t _device_uuid[DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint64_t _append_timestamp;
    uint64_t _start_timestamp;
    uint64_t _end_timestamp;
    uint64_t _submit_timestamp;
    uint64_t _sycl_task_begin_timestamp;
    uint64_t _sycl_enqk_begin_timestamp;
    uint64_t _sycl_node_id;
    uint64_t _sycl_queue_id;
    uint32_t _sycl_invocation_id;
} dt_pti_view_record_kernel;

typedef struct dt_pti_view_record_memory_copy {
    dt_pti_view_record_base _view_kind;
    uint32_t _memcpy_type;
    uint32_t _mem_src;
    uint32_t _mem_dst;
    void *_queue_handle;
    void *_context_handle;
    const char *_name;
    char _pci_address[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    uint8_t _device_uuid[DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint64_t _mem_op_id;
    uint32_t _correlation_id;
    uint32_t _thread_id;
    uint64_t _append_timestamp;
    uint64_t _start_timestamp;
    uint64_t _end_timestamp;
    uint64_t _submit_timestamp;
    uint64_t _bytes;
    uint64_t _sycl_queue_id;
} dt_pti_view_record_memory_copy;

typedef struct dt_pti_view_record_memory_copy_p2p {
    dt_pti_view_record_base _view_kind;
    uint32_t _memcpy_type;
    uint32_t _mem_src;
    uint32_t _mem_dst;
    void *_queue_handle;
    void *_context_handle;
    const char *_name;
    char _src_pci_address[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    char _dst_pci_address[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    uint8_t _src_uuid[DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint8_t _dst_uuid[DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint64_t _mem_op_id;
    uint32_t _correlation_id;
    uint32_t _thread_id;
    uint64_t _append_timestamp;
    uint64_t _start_timestamp;
    uint64_t _end_timestamp;
    uint64_t _submit_timestamp;
    uint64_t _bytes;
    uint64_t _sycl_queue_id;
} dt_pti_view_record_memory_copy_p2p;

typedef struct dt_pti_view_record_memory_fill {
    dt_pti_view_record_base _view_kind;
    uint32_t _mem_type;
    void *_queue_handle;
    void *_context_handle;
    const char *_name;
    char _pci_address[DT_PTI_MAX_PCI_ADDRESS_SIZE];
    uint8_t _device_uuid[DT_PTI_MAX_DEVICE_UUID_SIZE];
    uint64_t _mem_op_id;
    uint32_t _correlation_id;
    uint32_t _thread_id;
    uint64_t _append_timestamp;
    uint64_t _start_timestamp;
    uint64_t _end_timestamp;
    uint64_t _submit_timestamp;
    uint64_t _bytes;
    uint64_t _value_for_set;
    uint64_t _sycl_queue_id;
} dt_pti_view_record_memory_fill;

typedef struct dt_pti_view_record_external_correlation {
    dt_pti_view_record_base _view_kind;
    uint32_t _correlation_id;
    uint64_t _external_id;
    uint32_t _external_kind;
} dt_pti_view_record_external_correlation;

/* SYCL runtime (DT_PTI_VIEW_RUNTIME_API) and Level Zero driver
   (DT_PTI_VIEW_DRIVER_API) calls */
typedef struct dt_pti_view_record_api {
    dt_pti_view_record_base _view_kind;
    uint64_t _start_timestamp;
    uint64_t _end_timestamp;
    uint32_t _api_group;                     /* pti_api_group_id */
    uint32_t _api_id;
    uint32_t _process_id;
    uint32_t _thread_id;
    uint32_t _correlation_id;
    uint32_t _return_code;                   /* driver calls only */
} dt_pti_view_record_api;

typedef struct dt_pti_view_record_overhead {
    dt_pti_view_record_base _view_kind;
    uint64_t _overhead_start_timestamp_ns;
    uint64_t _overhead_end_timestamp_ns;
    uint32_t _overhead_thread_id;
    uint32_t _api_id;
    uint64_t _overhead_count;
    uint64_t _overhead_duration_ns;
    uint32_t _overhead_kind;
} dt_pti_view_record_overhead;

typedef void (*dt_pti_fptr_buffer_completed)(unsigned char *buffer, size_t buffer_size_in_bytes,
                                             size_t used_bytes);
typedef void (*dt_pti_fptr_buffer_requested)(unsigned char **buffer_ptr, size_t *buffer_size_in_bytes);
typedef uint64_t (*dt_pti_fptr_get_timestamp)(void);

/* Level Zero (oneapi-src/level-zero include/ze_api.h, the same since 1.0):
   what devtrace asks of the driver a program has loaded to number devices
   as the driver does (SYCL's, and torch.xpu's, order with the Level Zero
   backend): zeDriverGet, zeDeviceGet, zeDeviceGetProperties. */
#define DT_ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES 0x3
#define DT_ZE_MAX_DEVICE_NAME 256
typedef struct dt_ze_device_properties {
    uint32_t stype;                          /* ze_structure_type_t */
    void *pNext;
    uint32_t type;                           /* ze_device_type_t */
    uint32_t vendorId;
    uint32_t deviceId;
    uint32_t flags;
    uint32_t subdeviceId;
    uint32_t coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts;
    uint32_t maxCommandQueuePriority;
    uint32_t numThreadsPerEU;
    uint32_t physicalEUSimdWidth;
    uint32_t numEUsPerSubslice;
    uint32_t numSubslicesPerSlice;
    uint32_t numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits;
    uint32_t kernelTimestampValidBits;
    uint8_t uuid[DT_PTI_MAX_DEVICE_UUID_SIZE]; /* ze_device_uuid_t */
    char name[DT_ZE_MAX_DEVICE_NAME];
} dt_ze_device_properties;
typedef int (*dt_zeDriverGet_fn)(uint32_t *count, void **drivers);
typedef int (*dt_zeDeviceGet_fn)(void *driver, uint32_t *count, void **devices);
typedef int (*dt_zeDeviceGetProperties_fn)(void *device, dt_ze_device_properties *properties);

#ifdef DT_HAVE_PTI_SDK
/* The SDK's headers, where installed: every layout devtrace reads is theirs. */
#include <pti/pti_view.h>

#define DT_PTI_SAME(ours, theirs, field)                                                              \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, field) &&                                \
                       sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->field),                    \
                   #theirs "." #field " is not where devtrace reads it")
#define DT_PTI_SIZE(ours, theirs) _Static_assert(sizeof(ours) == sizeof(theirs), #theirs " has another size")

DT_PTI_SIZE(dt_pti_view_record_kernel, pti_view_record_kernel);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _name);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _thread_id);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _pci_address);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _device_uuid);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _append_timestamp);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _start_timestamp);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _end_timestamp);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _submit_timestamp);
DT_PTI_SAME(dt_pti_view_record_kernel, pti_view_record_kernel, _sycl_queue_id);
DT_PTI_SIZE(dt_pti_view_record_memory_copy, pti_view_record_memory_copy);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _memcpy_type);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _mem_src);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _mem_dst);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _pci_address);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _device_uuid);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _start_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _end_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _bytes);
DT_PTI_SAME(dt_pti_view_record_memory_copy, pti_view_record_memory_copy, _sycl_queue_id);
DT_PTI_SIZE(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _src_pci_address);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _dst_pci_address);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _src_uuid);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _dst_uuid);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _start_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _end_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _bytes);
DT_PTI_SAME(dt_pti_view_record_memory_copy_p2p, pti_view_record_memory_copy_p2p, _sycl_queue_id);
DT_PTI_SIZE(dt_pti_view_record_memory_fill, pti_view_record_memory_fill);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _mem_type);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _pci_address);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _device_uuid);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _start_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _end_timestamp);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _bytes);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _value_for_set);
DT_PTI_SAME(dt_pti_view_record_memory_fill, pti_view_record_memory_fill, _sycl_queue_id);
DT_PTI_SIZE(dt_pti_view_record_external_correlation, pti_view_record_external_correlation);
DT_PTI_SAME(dt_pti_view_record_external_correlation, pti_view_record_external_correlation, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_external_correlation, pti_view_record_external_correlation, _external_id);
DT_PTI_SAME(dt_pti_view_record_external_correlation, pti_view_record_external_correlation, _external_kind);
DT_PTI_SIZE(dt_pti_view_record_api, pti_view_record_api);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _start_timestamp);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _end_timestamp);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _api_group);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _api_id);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _process_id);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _thread_id);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _correlation_id);
DT_PTI_SAME(dt_pti_view_record_api, pti_view_record_api, _return_code);
DT_PTI_SIZE(dt_pti_view_record_overhead, pti_view_record_overhead);
/* values compared as integers: the SDK's enums and devtrace's are different types */
#define DT_PTI_EQ(theirs, ours) ((long long)(theirs) == (long long)(ours))
_Static_assert(DT_PTI_EQ(PTI_VIEW_DEVICE_GPU_KERNEL, DT_PTI_VIEW_DEVICE_GPU_KERNEL) &&
                   DT_PTI_EQ(PTI_VIEW_DRIVER_API, DT_PTI_VIEW_DRIVER_API) &&
                   DT_PTI_EQ(PTI_VIEW_RUNTIME_API, DT_PTI_VIEW_RUNTIME_API) &&
                   DT_PTI_EQ(PTI_VIEW_EXTERNAL_CORRELATION, DT_PTI_VIEW_EXTERNAL_CORRELATION) &&
                   DT_PTI_EQ(PTI_VIEW_DEVICE_GPU_MEM_COPY, DT_PTI_VIEW_DEVICE_GPU_MEM_COPY) &&
                   DT_PTI_EQ(PTI_VIEW_DEVICE_GPU_MEM_FILL, DT_PTI_VIEW_DEVICE_GPU_MEM_FILL) &&
                   DT_PTI_EQ(PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P, DT_PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P),
               "pti_view_kind differs from devtrace's declaration");
_Static_assert(DT_PTI_EQ(PTI_STATUS_END_OF_BUFFER, DT_PTI_STATUS_END_OF_BUFFER) &&
                   DT_PTI_EQ(PTI_ERROR_BAD_ARGUMENT, DT_PTI_ERROR_BAD_ARGUMENT) &&
                   DT_PTI_EQ(PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY, DT_PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY) &&
                   DT_PTI_EQ(PTI_ERROR_NOT_IMPLEMENTED, DT_PTI_ERROR_NOT_IMPLEMENTED),
               "pti_result differs from devtrace's declaration");
_Static_assert(DT_PTI_EQ(PTI_VIEW_EXTERNAL_KIND_CUSTOM_3, DT_PTI_VIEW_EXTERNAL_KIND_CUSTOM_3) &&
                   DT_PTI_EQ(PTI_API_GROUP_SYCL, DT_PTI_API_GROUP_SYCL) &&
                   DT_PTI_EQ(PTI_API_GROUP_LEVELZERO, DT_PTI_API_GROUP_LEVELZERO),
               "pti_view_external_kind or pti_api_group_id differs from devtrace's declaration");
_Static_assert(DT_PTI_EQ(urEnqueueKernelLaunch_id, DT_PTI_urEnqueueKernelLaunch_id) &&
                   DT_PTI_EQ(urEnqueueUSMMemcpy_id, DT_PTI_urEnqueueUSMMemcpy_id) &&
                   DT_PTI_EQ(urEnqueueUSMFill_id, DT_PTI_urEnqueueUSMFill_id) &&
                   DT_PTI_EQ(zeCommandListAppendLaunchKernel_id, DT_PTI_zeCommandListAppendLaunchKernel_id),
               "PTI's API ids differ from devtrace's declaration");
#undef DT_PTI_SAME
#undef DT_PTI_SIZE
#undef DT_PTI_EQ
#endif

#endif /* DT_BACKENDS_PTI_ABI_H */

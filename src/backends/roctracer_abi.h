/*
 * roctracer's ABI as devtrace uses it.
 *
 * roctracer's interface is public (ROCm/roctracer, MIT: inc/roctracer.h,
 * inc/roctracer_ext.h, inc/roctracer_hip.h, inc/ext/prof_protocol.h). The
 * declarations below are read from the interface of API version 4.1
 * (ROCTRACER_VERSION_4_1; ROCm/roctracer d5bbc8a, 2024-10-11), with the names
 * the headers use, so that devtrace builds without ROCm and its emulator
 * implements exactly this. Where a ROCm or DTK installation is found
 * (cmake/Roctracer.cmake: DT_HAVE_ROCTRACER_HEADERS), the real headers are
 * included instead and every fact the decoder relies on is checked against
 * them below.
 *
 * Not part of roctracer's headers, and declared here from other public
 * sources:
 *  - the argument records of HIP API callbacks (hip_api_data_t, generated per
 *    HIP release into hip/amd_detail/hip_prof_str.h): only the fields whose
 *    place is the same whatever the release, read from HIP 5.2.3's header
 *    (Debian's libamdhip64-dev 5.2.3-8);
 *  - the ROCTX callback record (roctracer_roctx.h);
 *  - ROCclr's command kinds in HIP_OPS records, which are OpenCL's command
 *    types (Khronos cl.h), as the HIP runtime reports them (the table of the
 *    reference tracer, inferred: no roctracer header lists them);
 *  - HIP's device attribute numbers (hip_runtime_api.h of HIP 5.2.3: the
 *    numbering HIP uses since 5.0; earlier releases number them otherwise).
 */
#ifndef DT_ROCTRACER_ABI_H
#define DT_ROCTRACER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef DT_HAVE_ROCTRACER_HEADERS
#include <roctracer.h>
#include <roctracer_ext.h>
#else

/* ---- ext/prof_protocol.h ---- */
typedef enum {
    ACTIVITY_DOMAIN_HSA_API = 0,
    ACTIVITY_DOMAIN_HSA_OPS = 1,
    ACTIVITY_DOMAIN_HIP_OPS = 2,
    ACTIVITY_DOMAIN_HCC_OPS = ACTIVITY_DOMAIN_HIP_OPS,
    ACTIVITY_DOMAIN_HIP_VDI = ACTIVITY_DOMAIN_HIP_OPS,
    ACTIVITY_DOMAIN_HIP_API = 3,
    ACTIVITY_DOMAIN_KFD_API = 4,
    ACTIVITY_DOMAIN_EXT_API = 5,
    ACTIVITY_DOMAIN_ROCTX = 6,
    ACTIVITY_DOMAIN_HSA_EVT = 7,
    ACTIVITY_DOMAIN_NUMBER
} activity_domain_t;

typedef void (*activity_rtapi_callback_t)(uint32_t domain, uint32_t cid, const void *data, void *arg);
typedef uint32_t activity_kind_t;
typedef uint32_t activity_op_t;

typedef enum { ACTIVITY_API_PHASE_ENTER = 0, ACTIVITY_API_PHASE_EXIT = 1 } activity_api_phase_t;

typedef uint64_t activity_correlation_id_t;
typedef uint64_t roctracer_timestamp_t;

/* Natural alignment, 64 bytes on LP64: a fixed stride in the pool. */
typedef struct activity_record_s {
    uint32_t domain;
    activity_kind_t kind;
    activity_op_t op;
    union {
        struct {
            activity_correlation_id_t correlation_id;
            roctracer_timestamp_t begin_ns;
            roctracer_timestamp_t end_ns;
        };
        struct {
            uint32_t se;
            uint64_t cycle;
            uint64_t pc;
        } pc_sample;
    };
    union {
        struct {
            int device_id;
            uint64_t queue_id;
        };
        struct {
            uint32_t process_id;
            uint32_t thread_id;
        };
        struct {
            activity_correlation_id_t external_id;
        };
    };
    union {
        size_t bytes;
        const char *kernel_name;
        const char *mark_message;
    };
} activity_record_t;

/* ---- roctracer.h ---- */
typedef enum {
    ROCTRACER_STATUS_SUCCESS = 0,
    ROCTRACER_STATUS_ERROR = -1,
    ROCTRACER_STATUS_ERROR_INVALID_DOMAIN_ID = -2,
    ROCTRACER_STATUS_ERROR_INVALID_ARGUMENT = -3,
    ROCTRACER_STATUS_ERROR_DEFAULT_POOL_UNDEFINED = -4,
    ROCTRACER_STATUS_ERROR_DEFAULT_POOL_ALREADY_DEFINED = -5,
    ROCTRACER_STATUS_ERROR_MEMORY_ALLOCATION = -6,
    ROCTRACER_STATUS_ERROR_MISMATCHED_EXTERNAL_CORRELATION_ID = -7,
    ROCTRACER_STATUS_ERROR_NOT_IMPLEMENTED = -8,
} roctracer_status_t;

typedef activity_domain_t roctracer_domain_t;
typedef activity_rtapi_callback_t roctracer_rtapi_callback_t;
typedef activity_record_t roctracer_record_t;

/* *ptr NULL: allocate size bytes; size 0: free *ptr; otherwise reallocate. */
typedef void (*roctracer_allocator_t)(char **ptr, size_t size, void *arg);
/* [begin, end): the records of one buffer of the pool. */
typedef void (*roctracer_buffer_callback_t)(const char *begin, const char *end, void *arg);

typedef struct {
    uint32_t mode;
    size_t buffer_size;
    roctracer_allocator_t alloc_fun;
    void *alloc_arg;
    roctracer_buffer_callback_t buffer_callback_fun;
    void *buffer_callback_arg;
} roctracer_properties_t;

typedef void roctracer_pool_t;

/* ---- roctracer_ext.h ---- */
typedef enum { ACTIVITY_EXT_OP_MARK = 0, ACTIVITY_EXT_OP_EXTERN_ID = 1 } activity_ext_op_t;

#endif /* DT_HAVE_ROCTRACER_HEADERS */

/* ---- roctracer_hip.h: the operations of the HIP_OPS domain ---- */
enum { DT_RT_HIP_OP_DISPATCH = 0, DT_RT_HIP_OP_COPY = 1, DT_RT_HIP_OP_BARRIER = 2 };

/* ---- ROCTX (roctracer_roctx.h) ---- */
enum {
    DT_RT_ROCTX_MARK = 0,        /* roctxMarkA */
    DT_RT_ROCTX_RANGE_PUSH = 1,  /* roctxRangePushA */
    DT_RT_ROCTX_RANGE_POP = 2,   /* roctxRangePop */
    DT_RT_ROCTX_RANGE_START = 3, /* roctxRangeStartA */
    DT_RT_ROCTX_RANGE_STOP = 4   /* roctxRangeStop */
};
/* roctx_api_data_t: args.message, then args.id (roctxRangeStartA/Stop). */
#define DT_RT_ROCTX_MESSAGE_OFFSET 0
#define DT_RT_ROCTX_ID_OFFSET 8

/* ---- hip_api_data_t (hip_prof_str.h) ----
   { uint64_t correlation_id; uint32_t phase; union { ... } args; ... }: the
   union starts at 16 (it holds pointers). Argument offsets are from there,
   for the fields that precede every pointer-typed argument (hip_prof_str.h
   adds a "__val" copy after pointer arguments in some releases, which moves
   the fields after them). */
#define DT_RT_HIP_CORRELATION_OFFSET 0
#define DT_RT_HIP_PHASE_OFFSET 8
#define DT_RT_HIP_ARGS_OFFSET 16
/* hipLaunchKernel, hipExtLaunchKernel (function_address, dim3 numBlocks,
   dim3 dimBlocks, ...) and hipModuleLaunchKernel (f, gridDimX..Z,
   blockDimX..Z, unsigned sharedMemBytes, ...): grid at 8, block at 20, as
   three uint32_t each. */
#define DT_RT_HIP_LAUNCH_GRID 8
#define DT_RT_HIP_LAUNCH_BLOCK 20
/* hipModuleLaunchKernel's unsigned sharedMemBytes, and the size_t
   sharedMemBytes of hipExtModuleLaunchKernel and hipHccModuleLaunchKernel,
   whose first uint32_t triple is the global work size (grid * block). */
#define DT_RT_HIP_MODULE_LAUNCH_SHARED 32
/* hipMemset*(dst, value, size...): value at 8 (int, unsigned short or
   unsigned char, by function). */
#define DT_RT_HIP_MEMSET_VALUE 8

/* ---- ROCclr command kinds of HIP_OPS records (OpenCL's cl.h numbering) ---- */
enum {
    DT_RT_CMD_KERNEL = 0x11F0,      /* CL_COMMAND_NDRANGE_KERNEL */
    DT_RT_CMD_TASK = 0x11F1,        /* CL_COMMAND_TASK */
    DT_RT_CMD_READ = 0x11F3,        /* CL_COMMAND_READ_BUFFER: device to host */
    DT_RT_CMD_WRITE = 0x11F4,       /* CL_COMMAND_WRITE_BUFFER: host to device */
    DT_RT_CMD_COPY = 0x11F5,        /* CL_COMMAND_COPY_BUFFER: device to device */
    DT_RT_CMD_MARKER = 0x11FE,      /* CL_COMMAND_MARKER */
    DT_RT_CMD_READ_RECT = 0x1201,   /* 2D device to host */
    DT_RT_CMD_WRITE_RECT = 0x1202,  /* 2D host to device */
    DT_RT_CMD_COPY_RECT = 0x1203,   /* 2D device to device */
    DT_RT_CMD_BARRIER = 0x1205,     /* CL_COMMAND_BARRIER */
    DT_RT_CMD_FILL = 0x1207,        /* CL_COMMAND_FILL_BUFFER */
    DT_RT_CMD_SVM_MEMCPY = 0x120A,  /* CL_COMMAND_SVM_MEMCPY: direction not said */
};

/* ---- HIP device attributes (hipDeviceAttribute_t, HIP >= 5.0) ---- */
enum {
    DT_HIP_ATTR_COMPUTE_MAJOR = 23,
    DT_HIP_ATTR_MAX_BLOCKS_PER_SM = 25,
    DT_HIP_ATTR_MAX_THREADS_PER_BLOCK = 56,
    DT_HIP_ATTR_MAX_THREADS_PER_SM = 57,
    DT_HIP_ATTR_COMPUTE_MINOR = 61,
    DT_HIP_ATTR_SM_COUNT = 63,
    DT_HIP_ATTR_REGS_PER_BLOCK = 71,
    DT_HIP_ATTR_REGS_PER_SM = 72,
    DT_HIP_ATTR_SHARED_PER_BLOCK = 74,
    DT_HIP_ATTR_SHARED_PER_BLOCK_OPTIN = 75,
    DT_HIP_ATTR_WARP_SIZE = 87,
    DT_HIP_ATTR_AMD_SHARED_PER_SM = 10002,  /* hipDeviceAttributeMaxSharedMemoryPerMultiprocessor */
};
/* hipRuntimeGetVersion's value from which the numbering above holds:
   HIP_VERSION = major * 10000000 + minor * 100000 + patch. */
#define DT_HIP_ATTR_NUMBERING_SINCE 50000000

/* ---- Entry points, as devtrace calls them ---- */
typedef roctracer_status_t (*dt_rt_open_pool_fn)(const roctracer_properties_t *, roctracer_pool_t **);
typedef roctracer_status_t (*dt_rt_pool_fn)(roctracer_pool_t *);
typedef roctracer_status_t (*dt_rt_domain_activity_fn)(activity_domain_t, roctracer_pool_t *);
typedef roctracer_status_t (*dt_rt_domain_fn)(activity_domain_t);
typedef roctracer_status_t (*dt_rt_domain_callback_fn)(activity_domain_t, activity_rtapi_callback_t, void *);
typedef roctracer_status_t (*dt_rt_op_callback_fn)(activity_domain_t, uint32_t, activity_rtapi_callback_t,
                                                   void *);
typedef roctracer_status_t (*dt_rt_op_fn)(activity_domain_t, uint32_t);
typedef roctracer_status_t (*dt_rt_timestamp_fn)(roctracer_timestamp_t *);
typedef const char *(*dt_rt_op_string_fn)(uint32_t domain, uint32_t op, uint32_t kind);
typedef roctracer_status_t (*dt_rt_op_code_fn)(uint32_t domain, const char *name, uint32_t *op, uint32_t *kind);
typedef roctracer_status_t (*dt_rt_push_fn)(activity_correlation_id_t);
typedef roctracer_status_t (*dt_rt_pop_fn)(activity_correlation_id_t *);
typedef uint32_t (*dt_rt_version_fn)(void);
typedef const char *(*dt_rt_error_string_fn)(void);
typedef void (*dt_rt_void_fn)(void);
/* HIP (hipError_t is an int enum; hipSuccess is 0) */
typedef int (*dt_hip_int_fn)(int *);
typedef int (*dt_hip_attribute_fn)(int *value, int attribute, int device);
typedef int (*dt_hip_name_fn)(char *name, int length, int device);
typedef int (*dt_hip_total_mem_fn)(size_t *bytes, int device);

/* ---- What devtrace relies on, checked ---- */
#define DT_RT_RECORD_SIZE 64
_Static_assert(sizeof(activity_record_t) == DT_RT_RECORD_SIZE, "roctracer records are 64 bytes");
_Static_assert(offsetof(activity_record_t, domain) == 0 && offsetof(activity_record_t, kind) == 4 &&
                   offsetof(activity_record_t, op) == 8,
               "domain, kind, op");
_Static_assert(offsetof(activity_record_t, correlation_id) == 16 && offsetof(activity_record_t, begin_ns) == 24 &&
                   offsetof(activity_record_t, end_ns) == 32,
               "correlation id and times");
_Static_assert(offsetof(activity_record_t, device_id) == 40 && offsetof(activity_record_t, queue_id) == 48,
               "device and queue");
_Static_assert(offsetof(activity_record_t, process_id) == 40 && offsetof(activity_record_t, thread_id) == 44,
               "process and thread");
_Static_assert(offsetof(activity_record_t, external_id) == 40, "external id");
_Static_assert(offsetof(activity_record_t, bytes) == 56 && offsetof(activity_record_t, kernel_name) == 56,
               "bytes and kernel name");
_Static_assert(ACTIVITY_DOMAIN_HIP_OPS == 2 && ACTIVITY_DOMAIN_HIP_API == 3 && ACTIVITY_DOMAIN_EXT_API == 5 &&
                   ACTIVITY_DOMAIN_ROCTX == 6,
               "domains");
_Static_assert(ACTIVITY_API_PHASE_ENTER == 0 && ACTIVITY_EXT_OP_EXTERN_ID == 1, "phase and external op");
_Static_assert(ROCTRACER_STATUS_SUCCESS == 0, "success is 0");
_Static_assert(sizeof(roctracer_properties_t) == 48 && offsetof(roctracer_properties_t, buffer_size) == 8 &&
                   offsetof(roctracer_properties_t, alloc_fun) == 16 &&
                   offsetof(roctracer_properties_t, buffer_callback_fun) == 32,
               "pool properties");

#ifdef DT_HAVE_ROCTRACER_HEADERS
/* The entry points devtrace binds have the types it calls them with. */
#define DT_RT_SAME_TYPE(fn, type) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn " has the type devtrace calls")
DT_RT_SAME_TYPE(roctracer_open_pool_expl, dt_rt_open_pool_fn);
DT_RT_SAME_TYPE(roctracer_close_pool_expl, dt_rt_pool_fn);
DT_RT_SAME_TYPE(roctracer_flush_activity_expl, dt_rt_pool_fn);
DT_RT_SAME_TYPE(roctracer_enable_domain_activity_expl, dt_rt_domain_activity_fn);
DT_RT_SAME_TYPE(roctracer_disable_domain_activity, dt_rt_domain_fn);
DT_RT_SAME_TYPE(roctracer_enable_domain_callback, dt_rt_domain_callback_fn);
DT_RT_SAME_TYPE(roctracer_enable_op_callback, dt_rt_op_callback_fn);
DT_RT_SAME_TYPE(roctracer_disable_op_callback, dt_rt_op_fn);
DT_RT_SAME_TYPE(roctracer_disable_domain_callback, dt_rt_domain_fn);
DT_RT_SAME_TYPE(roctracer_get_timestamp, dt_rt_timestamp_fn);
DT_RT_SAME_TYPE(roctracer_op_string, dt_rt_op_string_fn);
DT_RT_SAME_TYPE(roctracer_op_code, dt_rt_op_code_fn);
DT_RT_SAME_TYPE(roctracer_activity_push_external_correlation_id, dt_rt_push_fn);
DT_RT_SAME_TYPE(roctracer_activity_pop_external_correlation_id, dt_rt_pop_fn);
#undef DT_RT_SAME_TYPE
#endif

#endif /* DT_ROCTRACER_ABI_H */

/*
 * What bindings in other languages ask of the library: the public header
 * as this library was built from it (dt_abi_entry), which the Python
 * package's ctypes are checked against when it loads, and what each kind of
 * event is (dt_event_kind_class), which the Kineto plugin and the Python
 * package go by.
 *
 * The table is the header's declarations in the header's order. Offsets and
 * sizes are the compiler's; each member's and each function's type, written
 * here as the header writes it, is held to the header's by the compiler (a
 * type that differs does not build); that no declaration of the header is
 * missing here is the test's (tests/integration/test_python_layout.py reads
 * the header through clang).
 */
#include <stddef.h>

#include "core/event.h"
#include "devtrace/devtrace.h"

typedef struct abi_decl {
    const char *scope, *name, *type;
    uint64_t value, size;
} abi_decl;

/* 0 when expr has type T; a build error otherwise */
#define SAME_TYPE(expr, T) (0 * sizeof(char[_Generic((expr), T: 1, default: -1)]))
#define MEMBER_OF(T, path) (((T *)0)->path)

#define STRUCT(T) {"", #T, "struct", 0, sizeof(T)}
#define ENUM(T) {"", #T, "enum", 0, sizeof(T)}
#define MEMBER(T, path, type)                                                                                      \
    {#T, #path, #type, offsetof(T, path) + SAME_TYPE(&MEMBER_OF(T, path), type *), sizeof(MEMBER_OF(T, path))}
#define ARRAY(T, path, type, n)                                                                                    \
    {#T, #path, #type "[" #n "]", offsetof(T, path) + SAME_TYPE(&MEMBER_OF(T, path), type(*)[n]),                  \
     sizeof(MEMBER_OF(T, path))}
/* a member struct or union of a type without a name */
#define NESTED(T, path, what) {#T, #path, what, offsetof(T, path), sizeof(MEMBER_OF(T, path))}
#define ENUMERATOR(E, name) {#E, #name, "constant", (uint64_t)(name), 0}
#define CONSTANT(name) {"", #name, "constant", (uint64_t)(name), 0}
#define FUNCTION(name, ret, params) {"", #name, #ret " " #params, SAME_TYPE(&name, ret(*) params), 0}

static const abi_decl decls[] = {
    CONSTANT(DT_VERSION_MAJOR),
    CONSTANT(DT_VERSION_MINOR),
    CONSTANT(DT_VERSION_PATCH),
    CONSTANT(DT_VERSION_NUMBER),
    FUNCTION(dt_version, const char *, (void)),

    ENUM(dt_status),
    ENUMERATOR(dt_status, DT_OK),
    ENUMERATOR(dt_status, DT_ERR_INVALID_ARGUMENT),
    ENUMERATOR(dt_status, DT_ERR_NO_MEMORY),
    ENUMERATOR(dt_status, DT_ERR_UNKNOWN_BACKEND),
    ENUMERATOR(dt_status, DT_ERR_BACKEND_UNAVAILABLE),
    ENUMERATOR(dt_status, DT_ERR_BUSY),
    ENUMERATOR(dt_status, DT_ERR_STATE),
    ENUMERATOR(dt_status, DT_ERR_IO),
    ENUMERATOR(dt_status, DT_ERR_VENDOR),
    ENUMERATOR(dt_status, DT_ERR_EMPTY_STACK),
    ENUMERATOR(dt_status, DT_ERR_FORMAT),
    ENUMERATOR(dt_status, DT_ERR_TIMEOUT),
    FUNCTION(dt_status_name, const char *, (dt_status)),
    FUNCTION(dt_last_error, const char *, (void)),

    ENUM(dt_format),
    ENUMERATOR(dt_format, DT_FORMAT_JSON),
    ENUMERATOR(dt_format, DT_FORMAT_JSON_GZ),
    ENUMERATOR(dt_format, DT_FORMAT_PERFETTO),
    ENUMERATOR(dt_format, DT_FORMAT_PERFETTO_GZ),
    CONSTANT(DT_CAPTURE_KERNEL),
    CONSTANT(DT_CAPTURE_MEMCPY),
    CONSTANT(DT_CAPTURE_MEMSET),
    CONSTANT(DT_CAPTURE_RUNTIME),
    CONSTANT(DT_CAPTURE_DRIVER),
    CONSTANT(DT_CAPTURE_SYNC),
    CONSTANT(DT_CAPTURE_OVERHEAD),
    CONSTANT(DT_CAPTURE_MEMORY),
    CONSTANT(DT_CAPTURE_DEFAULT),
    CONSTANT(DT_CAPTURE_ALL),
    CONSTANT(DT_CAPTURE_KERNEL_QUEUED),

    STRUCT(dt_config),
    MEMBER(dt_config, backend, const char *),
    MEMBER(dt_config, output_path, const char *),
    MEMBER(dt_config, format, dt_format),
    MEMBER(dt_config, capture, uint32_t),
    MEMBER(dt_config, max_duration_ns, uint64_t),
    MEMBER(dt_config, max_events, uint64_t),
    MEMBER(dt_config, buffer_size, size_t),
    MEMBER(dt_config, buffer_count, uint32_t),
    MEMBER(dt_config, calibration_period_ms, uint32_t),
    MEMBER(dt_config, flight_recorder_bytes, uint64_t),
    CONSTANT(DT_FLIGHT_RECORDER_MIN_BYTES),
    FUNCTION(dt_config_init, void, (dt_config *)),
    FUNCTION(dt_config_from_env, void, (dt_config *)),
    FUNCTION(dt_format_of_path, dt_format, (const char *, dt_format)),
    FUNCTION(dt_format_by_name, int, (const char *)),
    FUNCTION(dt_format_name, const char *, (dt_format)),
    FUNCTION(dt_format_suffix, const char *, (dt_format)),
    FUNCTION(dt_format_available, int, (dt_format)),
    FUNCTION(dt_format_suffix_length, size_t, (const char *)),
    FUNCTION(dt_format_path, size_t, (const char *, dt_format, char *, size_t)),
    FUNCTION(dt_session_create, dt_status, (const dt_config *, dt_session **)),
    FUNCTION(dt_session_start, dt_status, (dt_session *)),
    FUNCTION(dt_session_stop, dt_status, (dt_session *)),
    FUNCTION(dt_session_write, dt_status, (dt_session *, const char *, dt_format)),
    FUNCTION(dt_session_write_fd, dt_status, (dt_session *, int, dt_format)),
    FUNCTION(dt_session_dump, dt_status, (dt_session *, int, dt_format)),
    FUNCTION(dt_session_destroy, void, (dt_session *)),
    FUNCTION(dt_prepare, dt_status, (const char *)),
    FUNCTION(dt_session_backend, const char *, (const dt_session *)),

    FUNCTION(dt_external_push, dt_status, (uint64_t)),
    FUNCTION(dt_external_pop, dt_status, (uint64_t *)),
    FUNCTION(dt_external_top, dt_status, (uint64_t *)),
    CONSTANT(DT_RANGE_ID_BASE),
    FUNCTION(dt_range_push, dt_status, (const char *, uint64_t *)),
    FUNCTION(dt_range_pop, dt_status, (void)),
    FUNCTION(dt_op_push, dt_status, (const char *, uint64_t)),
    FUNCTION(dt_op_pop, dt_status, (uint64_t *)),
    FUNCTION(dt_step, dt_status, (void)),
    FUNCTION(dt_step_count, uint64_t, (void)),

    ENUM(dt_event_kind),
    ENUMERATOR(dt_event_kind, DT_EVENT_KERNEL),
    ENUMERATOR(dt_event_kind, DT_EVENT_MEMCPY),
    ENUMERATOR(dt_event_kind, DT_EVENT_MEMSET),
    ENUMERATOR(dt_event_kind, DT_EVENT_RUNTIME),
    ENUMERATOR(dt_event_kind, DT_EVENT_DRIVER),
    ENUMERATOR(dt_event_kind, DT_EVENT_SYNC),
    ENUMERATOR(dt_event_kind, DT_EVENT_OVERHEAD),
    ENUMERATOR(dt_event_kind, DT_EVENT_RANGE),
    ENUMERATOR(dt_event_kind, DT_EVENT_OP),
    ENUMERATOR(dt_event_kind, DT_EVENT_COLLECTIVE),
    ENUMERATOR(dt_event_kind, DT_EVENT_MEMORY),
    ENUM(dt_copy_kind),
    ENUMERATOR(dt_copy_kind, DT_COPY_UNKNOWN),
    ENUMERATOR(dt_copy_kind, DT_COPY_HTOD),
    ENUMERATOR(dt_copy_kind, DT_COPY_DTOH),
    ENUMERATOR(dt_copy_kind, DT_COPY_DTOD),
    ENUMERATOR(dt_copy_kind, DT_COPY_HTOH),
    ENUMERATOR(dt_copy_kind, DT_COPY_PTOP),
    ENUM(dt_memory_kind),
    ENUMERATOR(dt_memory_kind, DT_MEM_UNKNOWN),
    ENUMERATOR(dt_memory_kind, DT_MEM_PAGEABLE),
    ENUMERATOR(dt_memory_kind, DT_MEM_PINNED),
    ENUMERATOR(dt_memory_kind, DT_MEM_DEVICE),
    ENUMERATOR(dt_memory_kind, DT_MEM_ARRAY),
    ENUMERATOR(dt_memory_kind, DT_MEM_MANAGED),
    CONSTANT(DT_TIMESTAMP_UNKNOWN),

    STRUCT(dt_event),
    MEMBER(dt_event, kind, dt_event_kind),
    MEMBER(dt_event, start_ns, uint64_t),
    MEMBER(dt_event, end_ns, uint64_t),
    MEMBER(dt_event, correlation, uint64_t),
    MEMBER(dt_event, has_external, int),
    MEMBER(dt_event, external_id, uint64_t),
    MEMBER(dt_event, device, uint32_t),
    MEMBER(dt_event, stream, uint32_t),
    MEMBER(dt_event, context, uint32_t),
    MEMBER(dt_event, process, uint32_t),
    MEMBER(dt_event, thread, uint32_t),
    MEMBER(dt_event, name, const char *),
    NESTED(dt_event, u, "union"),
    NESTED(dt_event, u.kernel, "struct"),
    ARRAY(dt_event, u.kernel.grid, int32_t, 3),
    ARRAY(dt_event, u.kernel.block, int32_t, 3),
    MEMBER(dt_event, u.kernel.registers_per_thread, uint32_t),
    MEMBER(dt_event, u.kernel.static_shared_memory, uint32_t),
    MEMBER(dt_event, u.kernel.dynamic_shared_memory, uint32_t),
    MEMBER(dt_event, u.kernel.queued_ns, uint64_t),
    MEMBER(dt_event, u.kernel.submitted_ns, uint64_t),
    NESTED(dt_event, u.memcpy, "struct"),
    MEMBER(dt_event, u.memcpy.bytes, uint64_t),
    MEMBER(dt_event, u.memcpy.copy_kind, dt_copy_kind),
    MEMBER(dt_event, u.memcpy.src_kind, dt_memory_kind),
    MEMBER(dt_event, u.memcpy.dst_kind, dt_memory_kind),
    MEMBER(dt_event, u.memcpy.src_device, uint32_t),
    MEMBER(dt_event, u.memcpy.dst_device, uint32_t),
    NESTED(dt_event, u.memset, "struct"),
    MEMBER(dt_event, u.memset.bytes, uint64_t),
    MEMBER(dt_event, u.memset.value, uint32_t),
    MEMBER(dt_event, u.memset.memory_kind, dt_memory_kind),
    NESTED(dt_event, u.api, "struct"),
    MEMBER(dt_event, u.api.cbid, uint32_t),
    MEMBER(dt_event, u.api.return_code, int32_t),
    MEMBER(dt_event, u.api.launch, int),
    NESTED(dt_event, u.range, "struct"),
    MEMBER(dt_event, u.range.range_id, uint64_t),
    MEMBER(dt_event, u.range.has_parent, int),
    MEMBER(dt_event, u.range.parent_id, uint64_t),
    NESTED(dt_event, u.op, "struct"),
    MEMBER(dt_event, u.op.has_parent, int),
    MEMBER(dt_event, u.op.parent_id, uint64_t),
    NESTED(dt_event, u.collective, "struct"),
    MEMBER(dt_event, u.collective.count, uint64_t),
    MEMBER(dt_event, u.collective.bytes, uint64_t),
    MEMBER(dt_event, u.collective.data_type, const char *),
    MEMBER(dt_event, u.collective.group, const char *),
    MEMBER(dt_event, u.collective.algorithm, const char *),
    MEMBER(dt_event, u.collective.bandwidth_gbps, double),
    NESTED(dt_event, u.memory, "struct"),
    MEMBER(dt_event, u.memory.address, uint64_t),
    MEMBER(dt_event, u.memory.bytes, uint64_t),
    MEMBER(dt_event, u.memory.is_free, int),
    MEMBER(dt_event, u.memory.memory_kind, dt_memory_kind),
    CONSTANT(DT_EVENT_CLASS_DEVICE),
    CONSTANT(DT_EVENT_CLASS_HOST),
    CONSTANT(DT_EVENT_CLASS_LAUNCHED),
    CONSTANT(DT_EVENT_CLASS_API),
    FUNCTION(dt_event_kind_class, unsigned, (dt_event_kind)),
    FUNCTION(dt_session_event_count, size_t, (const dt_session *)),
    FUNCTION(dt_session_event, dt_status, (const dt_session *, size_t, dt_event *)),
    FUNCTION(dt_session_events, size_t, (const dt_session *, size_t, size_t, dt_event *)),
    FUNCTION(dt_session_external_range, int, (const dt_session *, uint64_t, uint64_t *)),
    FUNCTION(dt_session_thread_name, const char *, (const dt_session *, uint32_t)),
    FUNCTION(dt_session_device_properties, size_t, (const dt_session *, char *, size_t)),
    FUNCTION(dt_session_note_at, int, (const dt_session *, size_t, const char **, const char **)),

    ENUM(dt_loss_reason),
    ENUMERATOR(dt_loss_reason, DT_LOSS_TIMESTAMP_ZERO),
    ENUMERATOR(dt_loss_reason, DT_LOSS_TIMESTAMP_REVERSED),
    ENUMERATOR(dt_loss_reason, DT_LOSS_TIMESTAMP_TOO_LONG),
    ENUMERATOR(dt_loss_reason, DT_LOSS_MALFORMED),
    ENUMERATOR(dt_loss_reason, DT_LOSS_UNKNOWN_KIND),
    ENUMERATOR(dt_loss_reason, DT_LOSS_NO_BUFFER),
    ENUMERATOR(dt_loss_reason, DT_LOSS_VENDOR_DROPPED),
    ENUMERATOR(dt_loss_reason, DT_LOSS_OUTSIDE_WINDOW),
    ENUMERATOR(dt_loss_reason, DT_LOSS_STORE_FULL),
    ENUMERATOR(dt_loss_reason, DT_LOSS_UNFINISHED),
    ENUMERATOR(dt_loss_reason, DT_LOSS_FORKED_CHILD),
    ENUMERATOR(dt_loss_reason, DT_LOSS_RING_EVICTED),
    ENUMERATOR(dt_loss_reason, DT_LOSS_COUNT),
    FUNCTION(dt_loss_reason_name, const char *, (dt_loss_reason)),
    FUNCTION(dt_session_loss, uint64_t, (const dt_session *, dt_loss_reason)),
    FUNCTION(dt_session_loss_total, uint64_t, (const dt_session *)),

    FUNCTION(dt_backend_count, size_t, (void)),
    FUNCTION(dt_backend_name, const char *, (size_t)),
    STRUCT(dt_backend_status),
    MEMBER(dt_backend_status, name, const char *),
    MEMBER(dt_backend_status, vendor, const char *),
    MEMBER(dt_backend_status, available, int),
    ARRAY(dt_backend_status, library, char, 512),
    ARRAY(dt_backend_status, version, char, 64),
    ARRAY(dt_backend_status, reason, char, 1024),
    FUNCTION(dt_backend_probe, dt_status, (const char *, dt_backend_status *)),
    CONSTANT(DT_BACKEND_FLAG_KINETO_NATIVE),
    FUNCTION(dt_backend_flags, dt_status, (const char *, unsigned *)),
    FUNCTION(dt_backend_library_env, const char *, (size_t)),
    FUNCTION(dt_backend_preload, const char *, (size_t)),

    FUNCTION(dt_control_listen, dt_status, (const dt_config *)),
    FUNCTION(dt_control_stop, void, (void)),
    FUNCTION(dt_control_listening, int, (void)),
    STRUCT(dt_capture_request),
    MEMBER(dt_capture_request, duration_ns, uint64_t),
    MEMBER(dt_capture_request, steps, uint64_t),
    MEMBER(dt_capture_request, step_multiple, uint64_t),
    MEMBER(dt_capture_request, timeout_ns, uint64_t),
    MEMBER(dt_capture_request, fd, int),
    ARRAY(dt_capture_request, format, char, 16),
    FUNCTION(dt_control_listen_external, dt_status, (void)),
    FUNCTION(dt_control_take, int, (dt_capture_request *)),
    FUNCTION(dt_control_done, dt_status, (dt_status, int, uint64_t, const char *)),

    FUNCTION(dt_abi_entry, int, (size_t, const char **, const char **, const char **, uint64_t *, uint64_t *)),
};

int dt_abi_entry(size_t index, const char **scope, const char **name, const char **type, uint64_t *value,
                 uint64_t *size)
{
    if (index >= sizeof decls / sizeof decls[0])
        return 0;
    const abi_decl *d = &decls[index];
    if (scope)
        *scope = d->scope;
    if (name)
        *name = d->name;
    if (type)
        *type = d->type;
    if (value)
        *value = d->value;
    if (size)
        *size = d->size;
    return 1;
}

unsigned dt_event_kind_class(dt_event_kind kind)
{
    unsigned k = (unsigned)kind;
    return (dt__rec_kind_in(DT_KINDS_DEVICE, k) ? DT_EVENT_CLASS_DEVICE : 0u) |
           (dt__rec_kind_in(DT_KINDS_HOST, k) ? DT_EVENT_CLASS_HOST : 0u) |
           (dt__rec_kind_in(DT_KINDS_LAUNCHED, k) ? DT_EVENT_CLASS_LAUNCHED : 0u) |
           (dt__rec_kind_in(DT_KINDS_API, k) ? DT_EVENT_CLASS_API : 0u);
}

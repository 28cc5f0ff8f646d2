/*
 * What every trace writer shares with the Chrome JSON exporter
 * (src/export/chrome.c): which events are kept, the row each goes on
 * (overflow rows for partial overlaps), the flow pairs, the
 * gpu_user_annotation spans, the device-time attribution, and the names of
 * processes and rows. A second writer (Perfetto) asks for them here rather
 * than deciding them again, so both formats show the same rows and events.
 */
#ifndef DT_LAYOUT_H
#define DT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "dt_internal.h"

typedef struct dt_layout dt_layout;

enum { DT_LAYOUT_HOST, DT_LAYOUT_DEVICE, DT_LAYOUT_ANNOT };
enum { DT_LAYOUT_FLOW_START = 1, DT_LAYOUT_FLOW_FINISH = 2 };

typedef struct dt_layout_process {
    uint64_t pid;              /* as written */
    char name[256];
    const char *label;         /* "GPU <n>" for devices, else NULL */
    uint64_t sort_index;
    int device;
    char label_buf[32];
} dt_layout_process;

typedef struct dt_layout_row {
    int cls;                   /* DT_LAYOUT_* */
    uint32_t id;               /* host pid or device id, as recorded */
    uint32_t lane;             /* host tid or stream */
    uint32_t level;            /* 0, or k for "(overlap k)" */
    uint64_t pid, tid;         /* as written */
    char name[384];
} dt_layout_row;

/* One event in the order the writers write them: row by row, by start
   (longer first on equal starts). */
typedef struct dt_layout_item {
    const dt_rec *rec;         /* NULL for a gpu_user_annotation span */
    uint32_t row;
    uint64_t start, end;       /* realtime ns */
    unsigned flow;             /* DT_LAYOUT_FLOW_* */
    uint32_t name;             /* spans: the range's interned name */
    uint64_t external_id;      /* spans: the range's id */
} dt_layout_item;

typedef struct dt_layout_kernel {
    dt_launch_config config;
    int occupancy_valid;
    uint64_t blocks_per_sm_e6, warps_per_sm_e6; /* six decimals */
    long occupancy_pct;
} dt_layout_kernel;

/* A memory event's args as torch writes them (chrome.c). */
typedef struct dt_layout_memory {
    int64_t bytes;             /* negative for a free */
    int64_t total;             /* "Total Allocated" after it, per device */
    int64_t device_id;         /* -1: host memory */
    int device_type;           /* torch's c10::DeviceType */
} dt_layout_memory;

/* NULL when out of memory. The session must be stopped. */
DT_HIDDEN dt_layout *dt_layout_build(const dt_session *s);
DT_HIDDEN void dt_layout_free(dt_layout *l);

DT_HIDDEN size_t dt_layout_row_count(const dt_layout *l);
DT_HIDDEN void dt_layout_row_get(dt_layout *l, size_t row, dt_layout_row *out);
/* Processes in naming order; *cursor starts at 0. 0 when done. */
DT_HIDDEN int dt_layout_next_process(dt_layout *l, size_t *cursor, dt_layout_process *out);
/* The recording process as written, and whether its tid 0 row is free for
   the capture window's event. */
DT_HIDDEN uint64_t dt_layout_main_pid(dt_layout *l);
DT_HIDDEN int dt_layout_capture_row_free(dt_layout *l);

DT_HIDDEN size_t dt_layout_item_count(const dt_layout *l);
DT_HIDDEN void dt_layout_item_get(const dt_layout *l, size_t k, dt_layout_item *out);
/* Start fetching item k + ahead from memory (rows gather from all over). */
DT_HIDDEN void dt_layout_prefetch(const dt_layout *l, size_t k);

DT_HIDDEN void dt_layout_window(const dt_layout *l, uint64_t *start, uint64_t *end);
/* Events kept per dt_event_kind (1..DT_EVENT_KIND_MAX) and flow pairs. */
DT_HIDDEN uint64_t dt_layout_kind_count(const dt_layout *l, int kind);
DT_HIDDEN uint64_t dt_layout_flow_count(const dt_layout *l);
/* The session's loss plus what the writer could not place. */
DT_HIDDEN uint64_t dt_layout_loss(const dt_layout *l, dt_loss_reason reason);
DT_HIDDEN size_t dt_layout_attribution_count(const dt_layout *l);
DT_HIDDEN void dt_layout_attribution_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *ns);
DT_HIDDEN size_t dt_layout_parent_count(const dt_layout *l);
DT_HIDDEN void dt_layout_parent_get(const dt_layout *l, size_t k, uint64_t *external_id, uint64_t *range_id);
/* 1 when a host pid equal to a device id was moved (the hostPid note). */
DT_HIDDEN int dt_layout_host_pid_shifted(const dt_layout *l);
/* "cuda" or "privateuse1": the prefix of runtime/driver categories. */
DT_HIDDEN const char *dt_layout_api_prefix(const dt_layout *l);
/* Launch configuration and occupancy of a kernel, as the JSON args give them. */
DT_HIDDEN void dt_layout_kernel_get(dt_layout *l, unsigned device, uint32_t config, dt_layout_kernel *out);
/* Item k's memory args (item k a DT_EVENT_MEMORY record). */
DT_HIDDEN const dt_layout_memory *dt_layout_memory_get(const dt_layout *l, size_t k);
/* "HtoD" ..., "Pageable" ...: the words of copy and memset names. */
DT_HIDDEN const char *dt_layout_copy_kind_name(unsigned kind);
DT_HIDDEN const char *dt_layout_memory_kind_name(unsigned kind);

#endif /* DT_LAYOUT_H */

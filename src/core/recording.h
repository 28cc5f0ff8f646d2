/*
 * The recording as the writers read it (src/export): a read-only view of a
 * stopped session, built by dt__recording_of (src/core/recording.c). It holds
 * what a trace is written from: the records, their interned names, launch
 * configurations and collectives, the clock fit, the devices, the losses,
 * the capture window, the notes, the job and the process. The writers read
 * this and nothing of the session itself; the view is valid while the
 * session lives and is not started again.
 */
#ifndef DT_CORE_RECORDING_H
#define DT_CORE_RECORDING_H

#include <stddef.h>
#include <stdint.h>

/* The record, name, clock, launch and device types (core's headers). */
#include "devtrace/devtrace.h"
#include "base/common.h"
#include "core/clock.h"
#include "core/contract.h"
#include "core/event.h"
#include "core/intern.h"
#include "core/jobinfo.h"

/* The notes a session keeps (a degraded feature, a vendor's fact). */
#define DT_MAX_NOTES 32

typedef struct dt_recording_note {
    const char *key, *text;    /* not NUL-terminated where they fill their field */
    size_t key_len, text_len;
} dt_recording_note;

typedef struct dt_recording {
    /* the records (store order), their names, launch configurations and
       collectives (by u.kernel.config and u.collective.info) */
    const dt_store *store;
    const dt_intern *names;
    const dt_launch_table *launches;
    const dt_collective *collectives;
    uint32_t collective_count;
    /* device timestamps -> realtime (dt__clock_map), and the fit's figures */
    const dt_clock *clock;
    /* the capture window (realtime ns); no window when end < start or start is 0 */
    uint64_t window_start_ns, window_end_ns;
    /* records lost, by reason (read at dt__recording_of) */
    uint64_t loss[DT_LOSS_COUNT];
    /* DT_MAX_DEVICES entries, by device id; those not described are not valid */
    const dt_device_props *devices;
    /* the backend: its name (NULL: none), vendor, API category ("cuda", ...;
       NULL: none), and whether its kernel records carry registers and
       shared memory */
    const char *backend_name, *vendor, *api_category;
    int kernel_resources;
    const char *library, *library_version;
    size_t library_len, library_version_len;
    /* what the recording could not record, or in part, and why */
    dt_recording_note notes[DT_MAX_NOTES];
    int note_count;
    /* the recording process, its host and job */
    uint32_t pid;
    const char *process_name;  /* "" when unknown */
    const char *host_name;
    size_t host_name_len;
    const dt_rank_info *rank;
    const dt_host_clock *host_clock;
    /* the session viewed, for the lookups below only */
    const struct dt_session *session;
} dt_recording;

/* The view of s; -1 (and *out untouched) when s is not stopped. */
DT_HIDDEN int dt__recording_of(const struct dt_session *s, dt_recording *out);
/* The name host thread tid of the recording process had, or NULL. */
DT_HIDDEN const char *dt__recording_thread_name(const dt_recording *r, uint32_t tid);
/* The user range enclosing External id id (dt_session_external_range):
   1 and *range, else 0. */
DT_HIDDEN int dt__recording_external_range(const dt_recording *r, uint64_t id, uint64_t *range);

#endif /* DT_CORE_RECORDING_H */

/* Session lifecycle: choose and arm a backend, calibrate the clock, and at
   stop map every record to realtime, resolve External ids and apply the
   capture window. */
#include "dt_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic(dt_session *) g_active;
static _Atomic uint64_t g_generation;

DT_HIDDEN void dt_corr_merge_chunks(dt_session *s, int keep);

dt_session *dt_active_session(void)
{
    return atomic_load_explicit(&g_active, memory_order_acquire);
}

void dt_session_lock(dt_session *s) { pthread_mutex_lock(&s->lock); }
void dt_session_unlock(dt_session *s) { pthread_mutex_unlock(&s->lock); }

static const char *const loss_names[DT_LOSS_COUNT] = {
    "timestamp_zero", "timestamp_reversed", "timestamp_too_long", "malformed",
    "unknown_kind", "no_buffer", "vendor_dropped", "outside_window", "store_full",
};

const char *dt_loss_reason_name(dt_loss_reason reason)
{
    return (unsigned)reason < DT_LOSS_COUNT ? loss_names[reason] : "unknown";
}

void dt_config_init(dt_config *c)
{
    memset(c, 0, sizeof *c);
    c->backend = "auto";
    c->output_path = "devtrace.json";
    c->format = DT_FORMAT_JSON;
    c->capture = DT_CAPTURE_DEFAULT;
    c->max_duration_ns = UINT64_C(3600) * 1000000000u;
    c->max_events = 0;
    c->buffer_size = 4u << 20;
    c->buffer_count = 32;
    c->calibration_period_ms = 1000;
}

void dt_config_from_env(dt_config *c)
{
    const char *b = dt_env("DEVTRACE_BACKEND");
    if (b) c->backend = b;
    const char *o = dt_env("DEVTRACE_OUTPUT");
    if (o) {
        c->output_path = o;
        c->format = dt_format_of_path(o, c->format);
    }
}

static const struct {
    const char *name, *suffix;
    dt_format format;
} format_names[] = {
    /* longest suffixes first: .pftrace.gz before .gz; the first entry of a
       format gives its suffix */
    {"perfetto.gz", ".pftrace.gz", DT_FORMAT_PERFETTO_GZ},
    {"perfetto", ".pftrace", DT_FORMAT_PERFETTO},
    {"json.gz", ".json.gz", DT_FORMAT_JSON_GZ},
    {NULL, ".gz", DT_FORMAT_JSON_GZ},
    {"json", ".json", DT_FORMAT_JSON},
};
#define FORMAT_NAMES (sizeof format_names / sizeof *format_names)

dt_format dt_format_of_path(const char *path, dt_format fallback)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < FORMAT_NAMES; i++) {
        size_t k = strlen(format_names[i].suffix);
        if (n > k && strcmp(path + n - k, format_names[i].suffix) == 0)
            return format_names[i].format;
    }
    return fallback;
}

int dt_format_by_name(const char *name)
{
    for (size_t i = 0; i < FORMAT_NAMES; i++)
        if (format_names[i].name && strcmp(name, format_names[i].name) == 0)
            return (int)format_names[i].format;
    return -1;
}

const char *dt_format_suffix(dt_format format)
{
    for (size_t i = 0; i < FORMAT_NAMES; i++)
        if (format_names[i].format == format)
            return format_names[i].suffix;
    return ".json";
}

static void read_process_name(char *out, size_t n)
{
    FILE *f = fopen("/proc/self/comm", "r");
    out[0] = 0;
    if (f) {
        if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = 0;
        fclose(f);
    }
    if (!out[0]) snprintf(out, n, "%s", program_invocation_short_name);
}

dt_status dt_session_create(const dt_config *config, dt_session **out)
{
    if (!out) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_create: out is NULL");
    *out = NULL;
    dt_config def;
    if (!config) { dt_config_init(&def); config = &def; }
    if (config->format < DT_FORMAT_JSON || config->format > DT_FORMAT_PERFETTO_GZ)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_config.format %d is not DT_FORMAT_JSON, DT_FORMAT_JSON_GZ, DT_FORMAT_PERFETTO or DT_FORMAT_PERFETTO_GZ", (int)config->format);
    const char *bname = config->backend ? config->backend : "auto";
    if (strcmp(bname, "auto") != 0 && !dt_backend_find(bname)) {
        char list[512] = "";
        for (size_t i = 0; dt_backends[i]; i++) {
            if (!dt_backends[i]->name) continue;
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, dt_backends[i]->name, sizeof list - strlen(list) - 1);
        }
        return dt_error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"; known: auto, %s", bname, list);
    }
    dt_session *s = calloc(1, sizeof *s);
    if (!s) return dt_error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    s->config = *config;
    if (!s->config.max_duration_ns) s->config.max_duration_ns = UINT64_C(3600) * 1000000000u;
    if (!s->config.buffer_size) s->config.buffer_size = 4u << 20;
    if (!s->config.buffer_count) s->config.buffer_count = 32;
    s->output_path = strdup(config->output_path ? config->output_path : "devtrace.json");
    s->backend_request = strdup(bname);
    s->config.output_path = s->output_path;
    s->config.backend = s->backend_request;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->calib_lock, NULL);
    pthread_cond_init(&s->calib_cond, NULL);
    dt_store_init(&s->store, s->config.max_events);
    if (!s->output_path || !s->backend_request || dt_intern_init(&s->names) != 0 ||
        dt_launch_init(&s->launches) != 0 || dt_corr_map_init(&s->corr, 1024) != 0 ||
        dt_corr_map_init(&s->ext_parents, 64) != 0) {
        dt_session_destroy(s);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    }
    dt_clock_init(&s->clock, 1);
    s->pid = (uint32_t)getpid();
    read_process_name(s->process_name, sizeof s->process_name);
    if (gethostname(s->host_name, sizeof s->host_name - 1) != 0) s->host_name[0] = 0;
    dt_rank_from_env(&s->rank);
    s->state = DT_STATE_CREATED;
    *out = s;
    return DT_OK;
}

const char *dt_session_backend(const dt_session *s)
{
    return s && s->backend ? s->backend->name : "";
}

/* Forget what an earlier start recorded (start, stop, start again). */
static void session_reset(dt_session *s)
{
    dt_store_free(&s->store);
    dt_store_init(&s->store, s->config.max_events);
    dt_corr_map_free(&s->corr);
    dt_corr_map_init(&s->corr, 1024);
    dt_corr_map_free(&s->ext_parents);
    dt_corr_map_init(&s->ext_parents, 64);
    for (int i = 0; i < DT_LOSS_COUNT; i++) atomic_store(&s->loss[i], 0);
    dt_clock_free(&s->clock);
    s->note_count = 0;
    s->backend_library[0] = s->backend_version[0] = 0;
    memset(s->devices, 0, sizeof s->devices);
}

static void *calibrator_main(void *arg)
{
    dt_session *s = arg;
    struct timespec next;
    pthread_mutex_lock(&s->calib_lock);
    while (!s->calib_stop) {
        clock_gettime(CLOCK_REALTIME, &next);
        uint64_t ns = (uint64_t)next.tv_nsec + (uint64_t)s->config.calibration_period_ms * 1000000u;
        next.tv_sec += (time_t)(ns / 1000000000u);
        next.tv_nsec = (long)(ns % 1000000000u);
        int rc = 0;
        while (!s->calib_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->calib_cond, &s->calib_lock, &next);
        if (s->calib_stop) break;
        pthread_mutex_unlock(&s->calib_lock);
        dt_session_lock(s);
        dt_clock_sample_now(&s->clock, s->backend->clock, 8);
        dt_session_unlock(s);
        pthread_mutex_lock(&s->calib_lock);
    }
    pthread_mutex_unlock(&s->calib_lock);
    return NULL;
}

static dt_status start_backend(dt_session *s, const dt_backend *b)
{
    s->backend = b;
    dt_clock_free(&s->clock);
    dt_clock_init(&s->clock, b->clock == NULL);
    dt_status st = b->start(s);
    if (st != DT_OK) { s->backend = NULL; return st; }
    if (b->clock && dt_clock_sample_now(&s->clock, b->clock, 16) != 0)
        dt_session_note(s, "clock", "the %s clock could not be read at start", b->name);
    return DT_OK;
}

dt_status dt_session_start(dt_session *s)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_start: session is NULL");
    if (s->state == DT_STATE_RUNNING) return dt_error(DT_ERR_STATE, "dt_session_start: the session is already running");
    dt_session *expected = NULL;
    if (!atomic_compare_exchange_strong(&g_active, &expected, s))
        return dt_error(DT_ERR_BUSY, "another devtrace session is running in this process; vendor interfaces are process-wide, so stop it first");
    if (s->state == DT_STATE_STOPPED) session_reset(s);
    s->generation = atomic_fetch_add(&g_generation, 1) + 1;
    s->window_start_ns = dt_realtime_ns();

    dt_status st;
    if (strcmp(s->backend_request, "auto") == 0) {
        char why[DT_MAX_NOTES][448];
        const char *names[DT_MAX_NOTES];
        int tried = 0;
        st = DT_ERR_BACKEND_UNAVAILABLE;
        for (size_t i = 0; dt_backends[i]; i++) {
            const dt_backend *b = dt_backends[i];
            if (strcmp(b->name, "null") == 0) continue;
            st = start_backend(s, b);
            if (st == DT_OK) break;
            if (tried < DT_MAX_NOTES) {
                names[tried] = b->name;
                snprintf(why[tried], sizeof why[tried], "%s", dt_last_error());
                tried++;
            }
        }
        if (st != DT_OK) {
            st = start_backend(s, dt_backend_find("null"));
            for (int i = 0; i < tried; i++) dt_session_note(s, names[i], "unavailable: %s", why[i]);
            dt_log("no vendor backend started; recording host ranges only");
        }
    } else {
        st = start_backend(s, dt_backend_find(s->backend_request));
    }
    if (st != DT_OK) {
        atomic_store(&g_active, NULL);
        s->state = DT_STATE_CREATED;
        return st;
    }
    s->calib_stop = 0;
    s->calibrator_running = 0;
    if (s->backend->clock && s->config.calibration_period_ms &&
        pthread_create(&s->calibrator, NULL, calibrator_main, s) == 0)
        s->calibrator_running = 1;
    s->state = DT_STATE_RUNNING;
    dt_log("session started with backend %s", s->backend->name);
    return DT_OK;
}

struct window_arg { dt_session *s; };

static int keep_in_window(dt_rec *r, void *arg)
{
    dt_session *s = ((struct window_arg *)arg)->s;
    if (r->start < s->window_start_ns || r->end > s->window_end_ns) {
        dt_loss_add(s, DT_LOSS_OUTSIDE_WINDOW, 1);
        return 0;
    }
    return 1;
}

dt_status dt_session_stop(dt_session *s)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_stop: session is NULL");
    if (s->state != DT_STATE_RUNNING) return dt_error(DT_ERR_STATE, "dt_session_stop: the session is not running");
    /* The window closes now: activity still executing is outside it. */
    s->window_end_ns = dt_realtime_ns();
    dt_host_clock_read(&s->host_clock);
    dt_status flush_st = s->backend->flush ? s->backend->flush(s) : DT_OK;
    if (flush_st != DT_OK) dt_session_note(s, "flush", "%s", dt_last_error());
    if (s->calibrator_running) {
        pthread_mutex_lock(&s->calib_lock);
        s->calib_stop = 1;
        pthread_cond_signal(&s->calib_cond);
        pthread_mutex_unlock(&s->calib_lock);
        pthread_join(s->calibrator, NULL);
        s->calibrator_running = 0;
    }
    if (s->backend->clock && dt_clock_sample_now(&s->clock, s->backend->clock, 16) != 0)
        dt_session_note(s, "clock", "the %s clock could not be read at stop", s->backend->name);
    dt_status stop_st = s->backend->stop ? s->backend->stop(s) : DT_OK;
    if (stop_st != DT_OK) dt_session_note(s, "stop", "%s", dt_last_error());
    atomic_store_explicit(&g_active, NULL, memory_order_release);

    dt_session_lock(s);
    dt_corr_merge_chunks(s, 1);
    dt_clock_fit(&s->clock);
    for (size_t i = 0; i < s->store.count; i++) {
        dt_rec *r = dt_store_at(&s->store, i);
        if (!(r->flags & DT_REC_REALTIME)) {
            r->start = dt_clock_map(&s->clock, r->start);
            r->end = dt_clock_map(&s->clock, r->end);
            r->flags |= DT_REC_REALTIME;
        }
        uint64_t ext;
        if (!(r->flags & DT_REC_HAS_EXTERNAL) && r->correlation &&
            dt_corr_map_get(&s->corr, r->correlation, &ext)) {
            r->external_id = ext;
            r->flags |= DT_REC_HAS_EXTERNAL;
        }
    }
    struct window_arg wa = {s};
    dt_store_filter(&s->store, keep_in_window, &wa);
    s->state = DT_STATE_STOPPED;
    dt_session_unlock(s);
    dt_log("session stopped: %zu events kept, %llu lost", s->store.count,
           (unsigned long long)dt_session_loss_total(s));
    return DT_OK;
}

dt_status dt_session_write(dt_session *s, const char *path, dt_format format)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_write: session is NULL");
    if (s->state != DT_STATE_STOPPED)
        return dt_error(DT_ERR_STATE, "dt_session_write: stop the session before writing its trace");
    if (format == DT_FORMAT_PERFETTO || format == DT_FORMAT_PERFETTO_GZ)
        return dt_export_perfetto(s, path ? path : s->output_path, format);
    if (format != DT_FORMAT_JSON && format != DT_FORMAT_JSON_GZ)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_write: unknown format %d", (int)format);
    return dt_export_chrome(s, path ? path : s->output_path, format);
}

void dt_session_destroy(dt_session *s)
{
    if (!s) return;
    if (s->state == DT_STATE_RUNNING) dt_session_stop(s);
    dt_corr_merge_chunks(s, 0);
    dt_store_free(&s->store);
    dt_intern_free(&s->names);
    dt_launch_free(&s->launches);
    dt_corr_map_free(&s->corr);
    dt_corr_map_free(&s->ext_parents);
    dt_clock_free(&s->clock);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->calib_lock);
    pthread_cond_destroy(&s->calib_cond);
    free(s->output_path);
    free(s->backend_request);
    free(s);
}

dt_rec *dt_session_add(dt_session *s)
{
    dt_rec *r = dt_store_push(&s->store);
    if (!r) dt_loss_add(s, DT_LOSS_STORE_FULL, 1);
    return r;
}

void dt_session_set_library(dt_session *s, const char *path, const char *version)
{
    snprintf(s->backend_library, sizeof s->backend_library, "%s", path ? path : "");
    snprintf(s->backend_version, sizeof s->backend_version, "%s", version ? version : "");
}

void dt_session_note(dt_session *s, const char *key, const char *fmt, ...)
{
    pthread_mutex_t *l = &s->calib_lock; /* notes may be added with s->lock held */
    pthread_mutex_lock(l);
    int i;
    for (i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) break;
    if (i == s->note_count) {
        if (s->note_count == DT_MAX_NOTES) { pthread_mutex_unlock(l); return; }
        s->note_count++;
        snprintf(s->notes[i].key, sizeof s->notes[i].key, "%s", key);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes[i].text, sizeof s->notes[i].text, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(l);
    dt_log("note: %s: %s", key, s->notes[i].text);
}

void dt_session_set_device(dt_session *s, const dt_device_props *p)
{
    if (p->id < DT_MAX_DEVICES) {
        s->devices[p->id] = *p;
        s->devices[p->id].valid = 1;
    }
}

size_t dt_session_event_count(const dt_session *s)
{
    return s && s->state == DT_STATE_STOPPED ? s->store.count : 0;
}

void dt_rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = (dt_event_kind)r->kind;
    ev->start_ns = r->start;
    ev->end_ns = r->end;
    ev->correlation = r->correlation;
    ev->has_external = (r->flags & DT_REC_HAS_EXTERNAL) != 0;
    ev->external_id = r->external_id;
    ev->name = dt_intern_get(&s->names, r->name);
    int host = r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || r->kind == DT_EVENT_RANGE;
    if (host) {
        ev->thread = r->lane;
        ev->process = r->context;
    } else {
        ev->device = r->device;
        ev->stream = r->lane;
        ev->context = r->context;
    }
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        const dt_launch_config *c = r->u.kernel.config < s->launches.count
                                        ? &s->launches.configs[r->u.kernel.config] : NULL;
        if (c) {
            memcpy(ev->u.kernel.grid, c->grid, sizeof c->grid);
            memcpy(ev->u.kernel.block, c->block, sizeof c->block);
            ev->u.kernel.registers_per_thread = c->registers_per_thread;
            ev->u.kernel.static_shared_memory = c->static_shared_memory;
            ev->u.kernel.dynamic_shared_memory = c->dynamic_shared_memory;
        }
        ev->u.kernel.queued_ns = r->u.kernel.queued_delta == DT_DELTA_UNKNOWN
                                     ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.queued_delta;
        ev->u.kernel.submitted_ns = r->u.kernel.submitted_delta == DT_DELTA_UNKNOWN
                                        ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.submitted_delta;
        break;
    }
    case DT_EVENT_MEMCPY:
        ev->u.memcpy.bytes = r->u.memcpy.bytes;
        ev->u.memcpy.copy_kind = (dt_copy_kind)r->u.memcpy.copy_kind;
        ev->u.memcpy.src_kind = (dt_memory_kind)r->u.memcpy.src_kind;
        ev->u.memcpy.dst_kind = (dt_memory_kind)r->u.memcpy.dst_kind;
        ev->u.memcpy.src_device = r->u.memcpy.src_device;
        ev->u.memcpy.dst_device = r->u.memcpy.dst_device;
        break;
    case DT_EVENT_MEMSET:
        ev->u.memset.bytes = r->u.memset.bytes;
        ev->u.memset.value = r->u.memset.value;
        ev->u.memset.memory_kind = (dt_memory_kind)r->u.memset.memory_kind;
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        ev->u.api.cbid = r->u.api.cbid;
        ev->u.api.return_code = r->u.api.return_code;
        break;
    case DT_EVENT_RANGE:
        ev->u.range.range_id = r->external_id;
        ev->u.range.has_parent = (r->flags & DT_REC_HAS_PARENT) != 0;
        ev->u.range.parent_id = r->u.range.parent;
        break;
    default:
        break;
    }
}

dt_status dt_session_event(const dt_session *s, size_t index, dt_event *ev)
{
    if (!s || !ev) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: NULL argument");
    if (s->state != DT_STATE_STOPPED) return dt_error(DT_ERR_STATE, "dt_session_event: stop the session first");
    if (index >= s->store.count)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: index %zu out of range (%zu events)", index, s->store.count);
    dt_rec_to_event(s, dt_store_at(&s->store, index), ev);
    return DT_OK;
}

uint64_t dt_session_loss(const dt_session *s, dt_loss_reason reason)
{
    if (!s || (unsigned)reason >= DT_LOSS_COUNT) return 0;
    return atomic_load(&((dt_session *)s)->loss[reason]);
}

uint64_t dt_session_loss_total(const dt_session *s)
{
    uint64_t t = 0;
    for (int i = 0; i < DT_LOSS_COUNT; i++) t += dt_session_loss(s, (dt_loss_reason)i);
    return t;
}

/* ---- backends ---- */

const dt_backend *dt_backend_find(const char *name)
{
    for (size_t i = 0; dt_backends[i]; i++)
        if (strcmp(dt_backends[i]->name, name) == 0) return dt_backends[i];
    return NULL;
}

size_t dt_backend_count(void)
{
    size_t n = 0;
    while (dt_backends[n]) n++;
    return n;
}

const char *dt_backend_name(size_t index)
{
    return index < dt_backend_count() ? dt_backends[index]->name : NULL;
}

dt_status dt_prepare(const char *name)
{
    if (!name || strcmp(name, "auto") == 0) {
        dt_status st = DT_ERR_BACKEND_UNAVAILABLE;
        int any = 0;
        for (size_t i = 0; dt_backends[i]; i++) {
            if (!dt_backends[i]->prepare) continue;
            any = 1;
            if (dt_backends[i]->prepare() == DT_OK) st = DT_OK;
        }
        return any ? st : DT_OK;
    }
    const dt_backend *b = dt_backend_find(name);
    if (!b) return dt_error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name);
    return b->prepare ? b->prepare() : DT_OK;
}

dt_status dt_backend_probe(const char *name, dt_backend_status *st)
{
    if (!name || !st) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_backend_probe: NULL argument");
    const dt_backend *b = dt_backend_find(name);
    if (!b) return dt_error(DT_ERR_UNKNOWN_BACKEND, "unknown backend \"%s\"", name);
    memset(st, 0, sizeof *st);
    st->name = b->name;
    st->vendor = b->vendor;
    if (!b->probe) { st->available = 1; return DT_OK; }
    return b->probe(st);
}

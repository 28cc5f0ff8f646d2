/* The metadata of a reading as JSON (meta.h). */
#include "columns/meta.h"

#include "format/json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct col_text {
    char *p;
    size_t len, cap;
    bool failed;
    bool fresh; /* just after a '{': the next key takes no comma */
} col_text;

static void col_reserve(col_text *t, size_t more)
{
    if (t->failed || t->len + more + 1 <= t->cap)
        return;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *n = realloc(t->p, cap);
    if (!n) {
        t->failed = true;
        return;
    }
    t->p = n;
    t->cap = cap;
}

static void col_printf(col_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void col_printf(col_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    col_reserve(t, (size_t)n);
    if (t->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void col_jstring(col_text *t, const char *s)
{
    size_t n = strlen(s);
    col_reserve(t, dt__json_escaped_max(n));
    if (t->failed)
        return;
    t->len = (size_t)(dt__json_escape(t->p + t->len, s, n) - t->p);
    t->p[t->len] = '\0';
}

static void col_open(col_text *t)
{
    col_printf(t, "{");
    t->fresh = true;
}

static void col_key(col_text *t, const char *key)
{
    col_printf(t, "%s", t->fresh ? "" : ", ");
    t->fresh = false;
    col_jstring(t, key);
    col_printf(t, ": ");
}

static void col_key_string(col_text *t, const char *key, const char *value)
{
    if (!value)
        return;
    col_key(t, key);
    col_jstring(t, value);
}

static void col_kvlist(col_text *t, const char *key, const dt_rd_kvlist *l)
{
    if (!l->present)
        return;
    col_key(t, key);
    col_printf(t, "{");
    for (size_t i = 0; i < l->count; i++) {
        col_printf(t, "%s", i ? ", " : "");
        col_jstring(t, l->items[i].key);
        col_printf(t, ": %" PRId64, l->items[i].value);
    }
    col_printf(t, "}");
}

char *dt__col_meta(const dt_rd_summary *m, const col_counts *s, const char *error)
{
    col_text t = {0};
    col_open(&t);
    col_key(&t, "events");
    col_printf(&t, "%" PRIu64, m->event_count);
    col_key(&t, "bytes");
    col_printf(&t, "%" PRIu64, m->bytes);
    col_key(&t, "compressed");
    col_printf(&t, m->compressed ? "true" : "false");
    col_key_string(&t, "format", m->format == DT_RD_FORMAT_PERFETTO ? "perfetto" : "json");
    col_key(&t, "stringFlowIds");
    col_printf(&t, "%" PRIu64, s->string_flow_ids);
    col_key(&t, "negativeDurations");
    col_printf(&t, "%" PRIu64, s->negative_durations);
    if (s->negative_durations) {
        col_key(&t, "firstNegativeDuration");
        col_printf(&t, "%" PRIu64, s->first_negative);
    }
    col_kvlist(&t, "unclassifiedCategories", &m->unclassified);
    if (m->unclassified_more) {
        col_key(&t, "unclassifiedMore");
        col_printf(&t, "%" PRIu64, m->unclassified_more);
    }
    if (s->steps_on) {
        col_key(&t, "steps");
        col_printf(&t, "%zu", s->nsteps);
        col_key(&t, "deviceWorkWithoutLaunch");
        col_printf(&t, "%" PRIu64, s->device_unlaunched);
    }
    if (error)
        col_key_string(&t, "error", error);
    if (m->has_schema_version) {
        col_key(&t, "schemaVersion");
        col_printf(&t, "%" PRId64, m->schema_version);
    }
    if (m->has_base_time) {
        col_key(&t, "baseTimeNanoseconds");
        col_printf(&t, "%" PRId64, m->base_time_ns);
    }
    col_key(&t, "devices");
    col_printf(&t, "%zu", m->device_count);
    col_key_string(&t, "traceName", m->trace_name);
    col_key(&t, "devtrace");
    col_printf(&t, m->has_devtrace ? "true" : "false");
    col_key_string(&t, "version", m->version);
    col_key_string(&t, "backend", m->backend);
    col_key_string(&t, "vendor", m->vendor);
    col_key_string(&t, "library", m->library);
    col_key_string(&t, "libraryVersion", m->library_version);
    col_key_string(&t, "host", m->host);
    if (m->has_pid) {
        col_key(&t, "pid");
        col_printf(&t, "%" PRId64, m->pid);
    }
    if (m->has_window_start) {
        col_key(&t, "windowStartNs");
        col_printf(&t, "%" PRId64, m->window_start_ns);
    }
    if (m->has_window_end) {
        col_key(&t, "windowEndNs");
        col_printf(&t, "%" PRId64, m->window_end_ns);
    }
    if (m->has_clock) {
        col_key(&t, "clock");
        col_printf(&t, "{\"slope\": %.17g, \"offsetNs\": %.17g, \"errorBoundNs\": %.17g, \"samples\": %" PRId64
                   ", \"segments\": %" PRId64 ", \"identity\": %s}",
                   m->clock_slope, m->clock_offset_ns, m->clock_error_bound_ns, m->clock_samples,
                   m->clock_segments, m->clock_identity ? "true" : "false");
    }
    col_kvlist(&t, "loss", &m->loss);
    col_kvlist(&t, "counts", &m->counts);
    if (m->has_realtime_clock) {
        col_key(&t, "realtimeClock");
        col_open(&t);
        col_key_string(&t, "clocksource", m->clocksource ? m->clocksource : "");
        if (m->has_host_sync)
            col_printf(&t, ", \"synchronized\": %s", m->host_synchronized ? "true" : "false");
        if (m->has_host_max_error)
            col_printf(&t, ", \"maxErrorUs\": %" PRId64 ", \"estErrorUs\": %" PRId64, m->host_max_error_us,
                       m->host_est_error_us);
        col_printf(&t, "}");
    }
    if (m->has_distributed_info) {
        col_key(&t, "distributedInfo");
        col_open(&t);
        if (m->has_rank) {
            col_key(&t, "rank");
            col_printf(&t, "%" PRId64, m->rank);
        }
        col_key(&t, "local_rank");
        col_printf(&t, "%" PRId64, m->local_rank);
        col_key(&t, "world_size");
        col_printf(&t, "%" PRId64, m->world_size);
        col_key_string(&t, "host", m->rank_host);
        col_key_string(&t, "launcher", m->launcher);
        col_printf(&t, "}");
    }
    if (m->notes.count) {
        col_key(&t, "notes");
        col_printf(&t, "{");
        for (size_t i = 0; i < m->notes.count; i++) {
            col_printf(&t, "%s", i ? ", " : "");
            col_jstring(&t, m->notes.items[i].key);
            col_printf(&t, ": ");
            col_jstring(&t, m->notes.items[i].text);
        }
        col_printf(&t, "}");
    }
    col_printf(&t, "}");
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

/* One pass of the reader over path; the summary is the caller's to free. */

/* The sink's calls (core/sink.h): what a backend tells the session it
   records into, and asks of it. */
#include "base/log.h"
#include "core/contract.h"
#include "core/flight.h"
#include "core/intern.h"
#include "core/session_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dt__core_lock(dt_session *s) { pthread_mutex_lock(&s->lock); }
void dt__core_unlock(dt_session *s) { pthread_mutex_unlock(&s->lock); }

void dt__core_set_library(dt_session *s, const char *path, const char *version)
{
    snprintf(s->backend_library, sizeof s->backend_library, "%s", path ? path : "");
    snprintf(s->backend_version, sizeof s->backend_version, "%s", version ? version : "");
}

/* Whether `fact` is one of the "; "-separated facts of `text`. */
static int says(const char *text, const char *fact)
{
    size_t n = strlen(fact);
    for (const char *at = strstr(text, fact); at; at = strstr(at + 1, fact)) {
        int starts = at == text || (at >= text + 2 && at[-2] == ';' && at[-1] == ' ');
        if (starts && (at[n] == '\0' || at[n] == ';')) return 1;
    }
    return 0;
}

void dt__core_note(dt_session *s, const char *key, const char *fmt, ...)
{
    char text[sizeof s->notes[0].text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_t *l = &s->calib_lock; /* notes may be added with s->lock held */
    pthread_mutex_lock(l);
    int i;
    for (i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) break;
    int added = 1;
    if (i == s->note_count) {
        if (s->note_count == DT_MAX_NOTES) {
            pthread_mutex_unlock(l);
            dt__log("note dropped (%d notes already): %s: %s", DT_MAX_NOTES, key, text);
            return;
        }
        s->note_count++;
        snprintf(s->notes[i].key, sizeof s->notes[i].key, "%s", key);
        snprintf(s->notes[i].text, sizeof s->notes[i].text, "%s", text);
    } else if (says(s->notes[i].text, text)) {
        added = 0; /* already said */
    } else {
        size_t used = strlen(s->notes[i].text);
        snprintf(s->notes[i].text + used, sizeof s->notes[i].text - used, "; %s", text);
    }
    pthread_mutex_unlock(l);
    if (added) dt__log("note: %s: %s", key, text);
}

void dt__core_set_device(dt_session *s, const dt_device_props *p)
{
    if (p->id < DT_MAX_DEVICES) {
        s->devices[p->id] = *p;
        s->devices[p->id].valid = 1;
    }
}

int dt__sink_has_device(const dt_session *s, uint32_t id)
{
    return id < DT_MAX_DEVICES && s->devices[id].valid;
}

uint32_t dt__sink_intern(dt_session *s, const char *name)
{
    return dt__intern_str(&s->names, name);
}

uint32_t dt__sink_intern_n(dt_session *s, const char *name, size_t len)
{
    return dt__intern_n(&s->names, name, len);
}

const dt_config *dt__sink_config(const dt_session *s)
{
    return &s->config;
}

int dt__sink_has_ring(const dt_session *s)
{
    return s->ring != NULL;
}

int dt__sink_ring_push(dt_session *s, uint8_t *buf, size_t valid)
{
    if (!s->ring) return 0;
    dt__ring_push(s->ring, buf, valid);
    return 1;
}

/*
 * What the engine tells a session of its vendor beyond the records: kinds
 * the vendor would not enable, the attributes set, graph launches whose
 * correlation ids a release gets wrong, records counted rather than stored.
 */
#include "backends/engine/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The attributes as set, or the library's answer, into s's note. */
void dt__engine_note_attributes(const dt_engine *e, dt_session *s)
{
    const dt_vendor *v = e->v;
    if (!v->attribute_count || !v->attributes_key) return;
    char text[600] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < v->attribute_count && i < DT_ENGINE_MAX_ATTRIBUTES; i++) {
        const dt_vendor_attribute *a = &v->attributes[i];
        int r = e->attribute_result[i];
        int w = !e->attributes_set
                    ? snprintf(text + used, sizeof text - used, "%s%s: left to the library (no %s)", used ? "; " : "",
                               a->what, e->specs[DT_SYM_SET_ATTRIBUTE].name)
                : r == v->results.success
                    ? snprintf(text + used, sizeof text - used, "%s%s %" PRIu64, used ? "; " : "", a->what, a->value)
                    : snprintf(text + used, sizeof text - used, "%s%s: %s(%" PRIu32 ") returned %s (%d), the "
                               "library's default holds", used ? "; " : "", a->what,
                               e->specs[DT_SYM_SET_ATTRIBUTE].name, a->id, dt__engine_result_text(e, r), r);
        if (w > 0 && (size_t)w < sizeof text - used) used += (size_t)w;
    }
    dt__core_note(s, v->attributes_key, "%s", text);
}

/* One note for the kinds the vendor would not enable, grouped by its
   answer: "memory copies, memsets not recorded: msptiActivityEnable
   returned ... (6)", with the vendor's explanation where it has one. */
void dt__engine_note_refused_kinds(const dt_engine *e, dt_session *s, const int *result, uint8_t *refused)
{
    const dt_vendor *v = e->v;
    for (size_t i = 0; i < v->records.kind_count; i++) {
        if (!refused[i]) continue;
        char what[256] = "";
        for (size_t j = i; j < v->records.kind_count; j++) {
            if (!refused[j] || result[j] != result[i]) continue;
            size_t used = strlen(what);
            snprintf(what + used, sizeof what - used, "%s%s", used ? ", " : "", v->records.kinds[j].what);
            if (j != i) refused[j] = 0;
        }
        int r = result[i];
        dt_failure why = {DT_OK, ""};
        if (v->explain_failure && v->explain_failure(e->specs[DT_SYM_ENABLE].name, r, dt__engine_result_text(e, r), e->lib.path,
                                                     e->version, e->emulated, &why))
            dt__core_note(s, "kinds", "%s not recorded: %s returned %s (%d): %s", what,
                            e->specs[DT_SYM_ENABLE].name, dt__engine_result_text(e, r), r, why.message);
        else
            dt__core_note(s, "kinds", "%s not recorded: %s returned %s (%d)", what, e->specs[DT_SYM_ENABLE].name,
                            dt__engine_result_text(e, r), r);
    }
}

/* In a session after the process's first, a library that gives graph
   launches wrong correlation ids: how many the session has, noted (their
   flows and External ids cannot be trusted). */
void dt__engine_note_graph_launches(const dt_engine *e, dt_session *s)
{
    const dt_vendor_api_ids *ids = &e->v->api_ids;
    /* counted as decoded (dt_decoder.graph_counted) */
    if (!e->decoder.graph_counted || e->sessions < 2) return;
    const uint64_t *n = e->graph_launches;
    if (n[0] || n[1])
        dt__core_note(s, "graph_launches", "%" PRIu64 " runtime and %" PRIu64 " driver graph launch calls in the "
                        "process's session %" PRIu32 ": %s API version %" PRIu32 " (older than %" PRIu32 ") gives "
                        "graph launches wrong correlation ids in sessions after the first, so their flows and "
                        "External ids cannot be trusted", n[0], n[1], e->sessions, e->v->backend->vendor,
                        e->api_version, ids->graph_ids_from);
}

/* What the vendor's decoders counted in the session, where anything. */
void dt__engine_note_counted(const dt_engine *e, dt_session *s)
{
    const dt_vendor_records *rec = &e->v->records;
    char text[320] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < rec->counted_count && i < DT_ENGINE_MAX_COUNTED; i++) {
        if (!e->counted[i]) continue;
        int w = snprintf(text + used, sizeof text - used, "%s%" PRIu64 " %s", used ? ", " : "", e->counted[i],
                         rec->counted[i]);
        if (w > 0 && (size_t)w < sizeof text - used) used += (size_t)w;
    }
    if (used) dt__core_note(s, rec->counted_key, "%s: %s", rec->counted_what, text);
}

void dt__engine_note_interface(const dt_engine *e, dt_session *s)
{
    const dt_vendor *v = e->v;
    if (!e->specs[DT_SYM_DROPPED].name[0])
        dt__core_note(s, "dropped_records", "records the vendor drops are not counted: the %s interface has no "
                        "dropped-record count", v->backend->vendor);
    for (uint32_t i = 0; i < v->records.kind_count; i++) {
        const dt_record_layout *l = dt__decoder_layout(&e->decoder, v->records.kinds[i].kind);
        if (l && l->cls == DT_RC_KERNEL && !l->f[DT_F_GRID_X].size) {
            dt__core_note(s, "launch_configuration", "kernel records carry no launch configuration (grid, block, "
                            "registers, shared memory): written as 0");
            return;
        }
    }
}

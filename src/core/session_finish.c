/* A session's end, once the vendor has delivered everything: what was cut
   or lost noted, the links merged, the clock fitted, and every record
   mapped to realtime, given its External id and held to the capture
   window. */
#include "base/demangle.h"
#include "core/clock.h"
#include "core/corr.h"
#include "core/decode.h"
#include "core/event.h"
#include "core/flight.h"
#include "core/intern.h"
#include "core/session_impl.h"

#include <stdio.h>

/* A vendor time to realtime: by the clock's one offset where it has one
   (unit, passed as a constant where the loop is specialised for it), else
   through a local copy of the clock segment of the previous time: the
   records written in between could alias the clock's own (so the compiler
   would reload it for every time). */
static inline uint64_t map_time(const dt_clock *clock, int unit, int64_t offset, dt_clock_segment *seg,
                                size_t *segment, uint64_t v)
{
    if (unit) return dt__clock_unit_map(offset, v);
    uint64_t x = v - seg->vendor; /* before the segment: wraps past its span */
    if (x < seg->span) return dt__clock_segment_at(seg, x);
    uint64_t out = dt__clock_map_slow(clock, v, segment);
    if (clock->fast && *segment < clock->segments) *seg = clock->fast[*segment];
    return out;
}

static inline int host_record(const dt_rec *r)
{
    return r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || r->kind == DT_EVENT_RANGE ||
           r->kind == DT_EVENT_OP || r->kind == DT_EVENT_MEMORY;
}

/* In a forked child, the parent's records: those stored before the fork,
   host records that began before it (API calls, and ranges the child
   closed in its copy), device activity that began before it, and device
   activity of the parent's API calls that the parent's vendor delivered to
   the child's copy of its buffers. Vendors count correlation ids up,
   process-wide, so the child's calls come after every call of the parent's:
   activity whose correlation id is at most the last of the parent's calls
   is the parent's. The parent's trace holds all of them: they are left out
   here, and not counted as lost. Times are mapped to realtime on the way. */
static void drop_parent_records(dt_session *s)
{
    dt_store *st = &s->sink.store;
    dt_clock_segment seg = {.span = 0}; /* none yet */
    size_t segment = 0, out = 0;
    uint64_t last_parent_call = 0;
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt__store_at(st, i);
        if (!(r->flags & DT_REC_REALTIME)) {
            r->start = map_time(&s->clock, s->clock.unit, s->clock.unit_offset, &seg, &segment, r->start);
            r->end = map_time(&s->clock, s->clock.unit, s->clock.unit_offset, &seg, &segment, r->end);
            r->flags |= DT_REC_REALTIME;
        }
        int api = r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER;
        if (api && (i < s->fork_store_count || r->start < s->fork_ns) && r->correlation > last_parent_call)
            last_parent_call = r->correlation;
    }
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt__store_at(st, i);
        int parent = i < s->fork_store_count || r->start < s->fork_ns ||
                     (!host_record(r) && r->correlation && r->correlation <= last_parent_call);
        if (parent) continue;
        if (out != i) *dt__store_at(st, out) = *r;
        out++;
    }
    dt__store_truncate(st, out);
}

/* At stop, each record once, in one pass over the store: its times to
   realtime, its External id from the links, and out when it lies outside
   the capture window: unfinished when it began inside the window and was
   still running when the session stopped, outside_window otherwise.
   Specialised twice: for a clock of one offset (an addition per time) and
   for the rest. */
__attribute__((always_inline)) static inline void finish_records_as(dt_session *s, const int unit,
                                                                    const int64_t unit_offset)
{
    dt_store *st = &s->sink.store;
    const dt_clock *clock = &s->clock;
    const uint64_t window_start = s->window_start_ns, window_end = s->window_end_ns;
    dt_clock_segment seg = {.span = 0}; /* none yet */
    size_t segment = 0, out = 0;
    uint64_t outside = 0, unfinished = 0;
    /* a session without links (no External ids) looks none up */
    const int links = s->corr_dense_count || s->corr.count;
    if (s->fork_parent) drop_parent_records(s);
    /* r walks the store chunk by chunk; kept, where records that stay move
       to once one has left */
    dt_rec *r = NULL, *chunk_end = NULL, *kept = NULL, *kept_end = NULL;
    for (size_t i = 0; i < st->count; i++, r++) {
        if (r == chunk_end) {
            r = dt__store_at(st, i);
            chunk_end = r + DT_STORE_CHUNK;
        }
        if (!(r->flags & DT_REC_REALTIME)) {
            r->start = map_time(clock, unit, unit_offset, &seg, &segment, r->start);
            r->end = map_time(clock, unit, unit_offset, &seg, &segment, r->end);
            r->flags |= DT_REC_REALTIME;
        }
        uint64_t ext;
        if (links && !(r->flags & DT_REC_HAS_EXTERNAL) && r->correlation && dt__corr_get(s, r->correlation, &ext)) {
            r->external_id = ext;
            r->flags |= DT_REC_HAS_EXTERNAL;
        }
        if (r->start < window_start || r->end > window_end) {
            if (r->start >= window_start && r->start <= window_end) unfinished++;
            else outside++;
            continue;
        }
        if (out != i) {
            if (kept == kept_end) {
                kept = dt__store_at(st, out);
                kept_end = kept + (DT_STORE_CHUNK - (out & (DT_STORE_CHUNK - 1)));
            }
            *kept++ = *r; /* once one record left, every later one moves */
        }
        out++;
    }
    dt__store_truncate(st, out);
    if (outside) dt__loss_add(s, DT_LOSS_OUTSIDE_WINDOW, outside);
    if (unfinished) dt__loss_add(s, DT_LOSS_UNFINISHED, unfinished);
}

static void finish_records(dt_session *s)
{
    if (s->clock.unit) finish_records_as(s, 1, s->clock.unit_offset);
    else finish_records_as(s, 0, 0);
}

void dt__core_finish(dt_session *s)
{
    dt__core_lock(s);
    dt__corr_merge_chunks(s, 1);
    uint64_t cut = atomic_load(&s->kernel_names_cut), unlinked = atomic_load(&s->links_lost),
             orphans = atomic_load(&s->parents_lost);
    if (cut || s->names.demangle_too_long) {
        char cut_text[160] = "", long_text[256] = "";
        if (cut)
            snprintf(cut_text, sizeof cut_text, "%llu kernel names longer than %zu bytes were cut there and not demangled",
                     (unsigned long long)cut, DT_MAX_KERNEL_NAME - 1);
        if (s->names.demangle_too_long)
            snprintf(long_text, sizeof long_text,
                     "%u kernel names longer than %zu bytes were kept mangled: the C++ demangler found at run time "
                     "(__cxa_demangle) takes no longer names",
                     s->names.demangle_too_long, dt__demangle_length_limit());
        dt__core_note(s, "kernel_names", "%s%s%s", cut_text, cut && long_text[0] ? "; " : "", long_text);
    }
    if (unlinked)
        dt__core_note(s, "correlation", "out of memory: %llu API calls lost their External id link; "
                        "the device activity they launched carries no External id",
                        (unsigned long long)unlinked);
    if (orphans)
        dt__core_note(s, "range_parents", "out of memory: %llu operations inside user ranges were not linked "
                        "to their range; the ranges' device time misses theirs", (unsigned long long)orphans);
    dt__clock_fit(&s->clock);
    if (s->clock.domains > 1)
        dt__core_note(s, "clock_domains", "the %s clock changed what it counts while the session recorded (another "
                        "client of the vendor's interface registered a timestamp callback of its own): its %zu "
                        "domains were each fitted to realtime apart, every time mapped by the domain nearest to "
                        "it%s", s->backend ? s->backend->name : "vendor", s->clock.domains,
                        s->clock.lone_domains ? "; a domain read once has no rate of its own: its times are taken "
                                                "as nanoseconds" : "");
    dt__core_flight_window(s);
    finish_records(s);
    s->state = DT_STATE_STOPPED;
    dt__core_unlock(s);
}

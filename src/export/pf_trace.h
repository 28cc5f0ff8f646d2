/*
 * A Perfetto trace (protobuf TracePacket stream) written straight in the
 * wire format from the public field numbers (docs/trace-format.md says why
 * not protobuf-c): track descriptors for processes and rows, TrackEvent
 * slices as BEGIN/END pairs with interned names, categories and argument
 * names, debug annotations for the args, flows, and one clock snapshot that
 * makes CLOCK_REALTIME the trace's clock. Packets are gathered in chunks
 * and, by default, written as DEFLATE-compressed packet bundles
 * (TracePacket.compressed_packets), which the Perfetto UI and
 * trace_processor inflate themselves.
 *
 * Used by the session exporter (perfetto.c) and by `devtrace merge`.
 */
#ifndef DT_PF_TRACE_H
#define DT_PF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "json_out.h"

typedef struct pf_trace pf_trace;

enum pf_table { PF_NAME, PF_CATEGORY, PF_ARG, PF_TABLES };

/* Writes to out (which it does not own). NULL when out of memory. */
DT_HIDDEN pf_trace *pf_trace_open(dt_out *out, int compress);
/* Writes what is pending and frees the writer. 0, or ENOMEM / an errno of
   the output. */
DT_HIDDEN int pf_trace_close(pf_trace *t);

/* Track descriptors; each returns the track's uuid (0 when out of memory). */
DT_HIDDEN uint64_t pf_process(pf_trace *t, int64_t pid, const char *name, const char *labels, int64_t sort_index);
DT_HIDDEN uint64_t pf_thread(pf_trace *t, int64_t pid, int64_t tid, const char *name);

/* The interning id of a string (emitted with the next event that uses it);
   0 when out of memory. pf_intern_key is for callers that already number
   their strings densely (an interned name id): no hashing. */
DT_HIDDEN uint64_t pf_intern(pf_trace *t, int table, const char *s, size_t len);
DT_HIDDEN uint64_t pf_intern_key(pf_trace *t, int table, uint32_t key, const char *s, size_t len);

/* A slice: pf_begin, then its args and flows, then pf_begin_done; later
   pf_end on the same track. Slices on a track must nest and come in the
   order of their timestamps (BEGIN/END interleaved as they happen). */
DT_HIDDEN void pf_begin(pf_trace *t, uint64_t track, uint64_t ts_ns, uint64_t name_iid, uint64_t category_iid);
DT_HIDDEN void pf_arg_uint(pf_trace *t, uint64_t name_iid, uint64_t v);
DT_HIDDEN void pf_arg_int(pf_trace *t, uint64_t name_iid, int64_t v);
DT_HIDDEN void pf_arg_double(pf_trace *t, uint64_t name_iid, double v);
DT_HIDDEN void pf_arg_bool(pf_trace *t, uint64_t name_iid, int v);
DT_HIDDEN void pf_arg_string(pf_trace *t, uint64_t name_iid, const char *s, size_t len);
/* An array of integers ("grid": [x, y, z]). */
DT_HIDDEN void pf_arg_ints(pf_trace *t, uint64_t name_iid, const int64_t *v, size_t n);
/* A flow leaving this slice (terminating 0) or ending in it (1). */
DT_HIDDEN void pf_flow(pf_trace *t, uint64_t id, int terminating);
DT_HIDDEN void pf_begin_done(pf_trace *t);
DT_HIDDEN void pf_end(pf_trace *t, uint64_t track, uint64_t ts_ns);

/* The error that stopped the writer (ENOMEM, an errno), 0 while all is well. */
DT_HIDDEN int pf_trace_error(const pf_trace *t);

#endif /* DT_PF_TRACE_H */

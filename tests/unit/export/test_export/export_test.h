/*
 * Chrome trace export: sessions built by hand, written, parsed back with
 * yajl, and checked against docs/trace-format.md (exact text where the
 * format fixes it, and the invariants that `devtrace check` verifies).
 * What the files of the test share: sessions made by hand, and the trace
 * read back and checked (trace.c).
 */
#ifndef DT_EXPORT_TEST_H
#define DT_EXPORT_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include <zlib.h>

#include "dt_internal.h"
#include "base/out.h"
#include "cli/commands.h"

#define PERIOD_NS (UINT64_C(7889238) * UINT64_C(1000000000))
/* A base time boundary in 2025, and a window that starts 1 us after it. */
#define BASE (UINT64_C(1764000000000000000) / PERIOD_NS * PERIOD_NS)
#define T0 (BASE + 1000)
#define SEC UINT64_C(1000000000)

typedef struct trace {
    char *text;
    size_t len;
    yajl_val root;
    yajl_val events;
} trace;

/* trace.c */
int setup_dir(void);
int remove_dir(void);
dt_session *new_session(void);
dt_rec *push(dt_session *s, int kind, uint64_t start, uint64_t end);
dt_rec *kernel(dt_session *s, const char *name, uint64_t start, uint64_t end,
               uint16_t dev, uint32_t stream, uint64_t corr);
dt_rec *api(dt_session *s, const char *name, uint64_t start, uint64_t end,
            uint32_t tid, uint64_t corr);
dt_rec *range(dt_session *s, const char *name, uint64_t start, uint64_t end,
              uint32_t tid, uint64_t id, int has_parent, uint64_t parent);
void external(dt_rec *r, uint64_t id);
char *read_file(const char *path, size_t *len);
char *read_gzip(const char *path, size_t *len);
void path_in_dir(char *out, size_t n, const char *name);
yajl_val get(yajl_val v, const char *key);
const char *get_str(yajl_val v, const char *key);
long long get_int(yajl_val v, const char *key);
uint64_t get_ns(yajl_val v, const char *key);
void parse_trace(trace *t, char *text, size_t len);
void free_trace(trace *t);
void export_and_parse(dt_session *s, const char *name, trace *t);
char *event_line(const trace *t, const char *needle, int occurrence);
int count_text(const trace *t, const char *needle);
size_t find_events(const trace *t, const char *cat, const char *name, yajl_val *out, size_t max);
void check_invariants(const trace *t);

/* chrome.c */
void test_export_top_level(void);
void test_export_exact_times(void);
void test_export_flows(void);
void test_export_external_id(void);
void test_export_hostile_names(void);
void test_export_overlaps_move_to_overflow_rows(void);
void test_export_many_overlaps_stay_valid(void);
void test_export_gzip_matches_plain(void);
void test_export_unwritable_path(void);
void test_export_write_failure_keeps_old_file(void);
void test_export_loss_and_attribution(void);
void test_export_copy_names_and_args(void);
void test_export_memory_instants(void);
void test_export_occupancy(void);
void test_export_gpu_annotations(void);
void test_export_metadata_and_categories(void);
void test_export_empty_session(void);
void test_export_host_tid_zero_named_once(void);
void test_export_recorded_session(void);
void test_export_maps_vendor_clock_records(void);

#endif /* DT_EXPORT_TEST_H */

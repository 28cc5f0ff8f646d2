/*
 * What the operating system tells: clocks, thread ids, paths, the sanitizer
 * runtimes loaded (src/base/os.c).
 */
#ifndef DT_BASE_OS_H
#define DT_BASE_OS_H

#include <stddef.h>
#include <stdint.h>
#include "base/common.h"

/* Monotonic-free wall clock: CLOCK_REALTIME in ns. */
DT_HIDDEN uint64_t dt__realtime_ns(void);
/* CLOCK_MONOTONIC in ns: for durations. */
DT_HIDDEN uint64_t dt__monotonic_ns(void);
/* When this process started, in CLOCK_REALTIME ns: its start in
   /proc/self/stat (before any of its code ran; the fork, for a program
   started by exec), at the kernel's clock-tick resolution and rounded
   down. 0 when /proc cannot tell. */
DT_HIDDEN uint64_t dt__process_start_realtime_ns(void);
/* Linux thread id of the caller, cached. */
DT_HIDDEN uint32_t dt__thread_id(void);


/* The folder of a file path ("." for a bare name, "/" for one at the root). */
DT_HIDDEN void dt__path_dir(char *out, size_t n, const char *path);

/* The sanitizer runtimes this process runs with (":"-separated paths, ""
   in a release build): what must precede a sanitized library in LD_PRELOAD. */
DT_HIDDEN void dt__sanitizer_runtimes(char *out, size_t n);

#endif

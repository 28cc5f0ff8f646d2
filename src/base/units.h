/*
 * Values users type, parsed one way everywhere (command-line options and
 * the environment alike): sizes, durations, counts, factors and signal
 * names (src/base/units.c). Each returns 0 with the value, or -1 when the
 * whole text is not one (empty, trailing characters, out of range).
 */
#ifndef DT_BASE_UNITS_H
#define DT_BASE_UNITS_H

#include "base/common.h"

#include <stdint.h>

/* "268435456", "256M", "256MiB", "2GB": bytes, a whole number; K, M, G and
   T are powers of 1024, with or without "iB" or "B" after them, any case. */
DT_HIDDEN int dt__parse_size(const char *text, uint64_t *bytes);
/* "30", "1.5", "500ms", "20us", "2m", "1h": ns; a bare number is seconds
   (s, ms, us, ns, m and h are understood). Not negative. */
DT_HIDDEN int dt__parse_duration(const char *text, uint64_t *ns);
/* A decimal count ("5"); no sign, no suffix. */
DT_HIDDEN int dt__parse_count(const char *text, uint64_t *count);
/* A finite decimal number ("3", "2.5"). */
DT_HIDDEN int dt__parse_number(const char *text, double *value);
/* A signal that may be asked to carry a request: USR1, USR2 and the
   real-time ones (RTMIN, RTMIN+n, RTMAX-n), with or without "SIG", any
   case; the number, or -1 for every other name (the signals that stop,
   crash or are the program's ordinary business are refused). */
DT_HIDDEN int dt__parse_request_signal(const char *text);
/* The name dt__parse_request_signal reads back ("USR2", "RTMIN+3") into
   out (n bytes). */
DT_HIDDEN void dt__request_signal_name(int sig, char *out, unsigned n);

#endif

/*
 * The JSON encoder of the trace formats: string literals escaped so that a
 * trace stays valid UTF-8 JSON whatever bytes a vendor put in a name, into
 * place or through base's output stream, and the room the JSON writer
 * reserves per event. Numbers are base's (base/out.h: dt__put_u64,
 * dt__put_us3, ...).
 *
 * Naming: the format layer's JSON functions are dt_json_<name>.
 */
#ifndef DT_FORMAT_JSON_H
#define DT_FORMAT_JSON_H

#include <stddef.h>
#include <string.h>

#include "base/common.h"
#include "base/out.h"

/* Bytes an event needs beyond its name (and a few fixed-size fields): the
   writer reserves this much before formatting an event so that the per-event
   path never checks for room field by field. */
#define DT_JSON_EVENT_ROOM 4096

/* Largest escaped size of an n-byte string, quotes included. */
static inline size_t dt__json_escaped_max(size_t n)
{
    return 6 * n + 2;
}
/* Write s (n bytes, any content) as a JSON string literal with quotes into
   dst (room for dt__json_escaped_max(n)): ", \ and control characters escaped,
   invalid UTF-8 replaced by U+FFFD. Returns the end. */
DT_HIDDEN char *dt__json_escape(char *dst, const char *s, size_t n);
/* The same through the output stream, for strings of any size. */
DT_HIDDEN void dt__json_string(dt_out *o, const char *s, size_t n);

static inline void dt__json_cstr(dt_out *o, const char *s)
{
    dt__json_string(o, s, strlen(s));
}

#endif /* DT_FORMAT_JSON_H */

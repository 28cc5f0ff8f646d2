/* The API-name cache every backend's decoder uses (api_names.h). */
#include "backends/common/api_names.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/intern.h"
#include "core/sink.h"

uint32_t dt__api_names_add(dt_api_names *c, dt_session *s, uint64_t key, const char *name, const char *fallback,
                          int64_t number)
{
    uint32_t id;
    if (name) {
        id = dt__sink_intern(s, name);
    } else {
        char buf[96];
        int n = snprintf(buf, sizeof buf, "%s#%" PRId64, fallback, number);
        id = dt__sink_intern_n(s, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    }
    if (id != UINT32_MAX) {
        size_t i = dt__api_names_slot(key);
        if (c->slot[i].key != 0 && c->slot[i].key != key) i = dt__api_names_other_slot(key);
        c->slot[i].key = key;
        c->slot[i].id = id;
    }
    return id;
}

/*
 * The names of API calls, cached while one buffer is decoded: every
 * backend's decoder names each API record through one of these, so that a
 * call's name is looked up and interned once a buffer rather than once a
 * record.
 *
 * API ids are small numbers, and a buffer's API records name few of them:
 * a key takes the slot of its low bits, found with one comparison, and a
 * key whose slot another holds takes the slot its hash (dt__mix64) gives,
 * replacing what is there. A miss costs one lookup and one interning.
 */
#ifndef DT_BACKENDS_API_NAMES_H
#define DT_BACKENDS_API_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/common.h"
#include "base/hash.h"
#include "devtrace/devtrace.h"

#define DT_API_NAME_SLOTS 64

/* A key is the backend's number for the call, made unique over its
   numberings (runtime, driver...), + 1: 0 marks an empty slot. */
typedef struct dt_api_names {
    struct {
        uint64_t key;
        uint32_t id;
    } slot[DT_API_NAME_SLOTS];
} dt_api_names;

static inline void dt__api_names_init(dt_api_names *c)
{
    memset(c, 0, sizeof *c);
}

/* The slot a key takes first, and the one it takes when that is held. */
static inline size_t dt__api_names_slot(uint64_t key)
{
    return (size_t)(key & (DT_API_NAME_SLOTS - 1));
}
static inline size_t dt__api_names_other_slot(uint64_t key)
{
    return (size_t)(dt__mix64(key) >> 58);
}
_Static_assert(DT_API_NAME_SLOTS == 64, "dt__api_names_other_slot() yields 6 bits");

/* Whether key's interned name is cached (*id). */
static inline int dt__api_names_find(const dt_api_names *c, uint64_t key, uint32_t *id)
{
    size_t i = dt__api_names_slot(key);
    if (__builtin_expect(c->slot[i].key != key, 0)) {
        i = dt__api_names_other_slot(key);
        if (c->slot[i].key != key) return 0;
    }
    *id = c->slot[i].id;
    return 1;
}

/* After a miss: intern name in s (NULL: the call has no name, and
   "<fallback>#<number>" names it) and cache it under key. UINT32_MAX when
   it could not be interned (nothing cached). */
DT_HIDDEN uint32_t dt__api_names_add(dt_api_names *c, dt_session *s, uint64_t key, const char *name,
                                    const char *fallback, int64_t number);

#endif /* DT_BACKENDS_API_NAMES_H */

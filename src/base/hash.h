/*
 * Hashing, once for the whole code base: the 64-bit mixer, a hash of byte
 * strings, the one hash table (u64 keys to u64 values, open addressing)
 * and a string table (dense ids in insertion order) indexed by it
 * (src/base/hash.c).
 */
#ifndef DT_BASE_HASH_H
#define DT_BASE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/common.h"

/* MurmurHash3's finalizer: every bit of x moves every bit of the result. */
static inline uint64_t dt__mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* The slot of key in a direct-mapped cache of 2^bits entries (Fibonacci
   hashing: one multiply; the high bits move with every bit of key). */
static inline size_t dt__hash_slot(uint64_t key, unsigned bits)
{
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits));
}

/* A hash of n bytes, eight a step, finished by dt__mix64. */
static inline uint64_t dt__hash_bytes(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ len;
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 32;
    }
    if (len > 0) {
        uint64_t w = 0;
        memcpy(&w, p, len);
        h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
    }
    return dt__mix64(h);
}

/* dt__hash_bytes made nonzero: a key for a dt_u64map indexed by hashes of
   something longer (with dt__u64map_add and dt__u64map_probe, which take no
   key 0). */
static inline uint64_t dt__hash_key(const void *key, size_t len)
{
    uint64_t h = dt__hash_bytes(key, len);
    return h ? h : 1;
}

/* u64 -> u64: open addressing with linear probing, keys and values side by
   side (16 bytes a slot); key 0, the empty slot's mark, is kept beside the
   table. Zeroed memory is an empty map. Keys that are hashes of something
   longer (dt_strtab) may repeat: dt__u64map_add and dt__u64map_probe. */
typedef struct dt_u64slot {
    uint64_t key, value;
} dt_u64slot;

typedef struct dt_u64map {
    dt_u64slot *slots;
    size_t mask, count;
    bool has_zero;
    uint64_t zero_value;
} dt_u64map;

DT_HIDDEN void dt__u64map_free(dt_u64map *m);
/* Room for `entries` without growing on the way; -1 when out of memory. */
DT_HIDDEN int dt__u64map_reserve(dt_u64map *m, size_t entries);
/* The value of key, inserted as 0 when new (*added says which; may be NULL);
   NULL when out of memory. Valid until the next insertion. */
DT_HIDDEN uint64_t *dt__u64map_slot(dt_u64map *m, uint64_t key, bool *added);
/* Another entry for key (not 0) even when key is there already; NULL when
   out of memory. */
DT_HIDDEN uint64_t *dt__u64map_add(dt_u64map *m, uint64_t key);
/* Every entry, in no particular order: *cursor starts at 0; false when
   done. */
DT_HIDDEN bool dt__u64map_next(const dt_u64map *m, size_t *cursor, uint64_t *key, uint64_t *value);

static inline bool dt__u64map_get(const dt_u64map *m, uint64_t key, uint64_t *value)
{
    if (key == 0) {
        if (m->has_zero)
            *value = m->zero_value;
        return m->has_zero;
    }
    if (!m->slots)
        return false;
    for (size_t i = (size_t)dt__mix64(key) & m->mask; m->slots[i].key; i = (i + 1) & m->mask) {
        if (m->slots[i].key == key) {
            *value = m->slots[i].value;
            return true;
        }
    }
    return false;
}

/* The entries of key (not 0) one by one: *pos starts at 0; NULL when
   there are no more. */
static inline const uint64_t *dt__u64map_probe(const dt_u64map *m, uint64_t key, size_t *pos)
{
    if (!m->slots)
        return NULL;
    size_t i = *pos ? *pos : ((size_t)dt__mix64(key) & m->mask) + 1;
    for (; m->slots[i - 1].key; i = ((i & m->mask) + 1)) {
        if (m->slots[i - 1].key == key) {
            *pos = (i & m->mask) + 1;
            return &m->slots[i - 1].value;
        }
    }
    *pos = i;
    return NULL;
}

/* A growable set of byte strings, each given a dense id in insertion
   order; to group by name, row or id with memory bounded by the distinct
   keys. Zeroed memory is an empty table. */
typedef struct dt_strtab {
    dt_u64map index; /* nonzero hash -> id */
    char **keys;     /* NUL-terminated copies */
    size_t *lens;
    size_t count, cap;
} dt_strtab;

DT_HIDDEN void dt__strtab_init(dt_strtab *t);
DT_HIDDEN void dt__strtab_free(dt_strtab *t);
/* Id of key, inserting it if absent (*added tells which; may be NULL).
   Returns -1 when out of memory. */
DT_HIDDEN int64_t dt__strtab_intern(dt_strtab *t, const void *key, size_t len, bool *added);
/* Id of key or -1. */
DT_HIDDEN int64_t dt__strtab_find(const dt_strtab *t, const void *key, size_t len);
static inline const char *dt__strtab_key(const dt_strtab *t, size_t id)
{
    return t->keys[id];
}

#endif

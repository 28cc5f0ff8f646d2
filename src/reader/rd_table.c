/* Interning table for the reader's consumers: open addressing, FNV-1a. */
#include "dt_reader.h"

#include <stdlib.h>
#include <string.h>

/* Eight bytes a step: names and ids are hashed once per event. */
static uint64_t rd_hash(const void *key, size_t len)
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
    h ^= h >> 29;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return h ^ (h >> 32);
}

int dt_rd_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
    *p = q;
    *cap = n;
    return 0;
}

void dt_rd_strtab_init(dt_rd_strtab *t)
{
    memset(t, 0, sizeof *t);
}

void dt_rd_strtab_free(dt_rd_strtab *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->keys[i]);
    free(t->keys);
    free(t->lens);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int64_t rd_lookup(const dt_rd_strtab *t, const void *key, size_t len, uint64_t h, size_t *slot)
{
    size_t mask = t->nslots - 1;
    size_t i = (size_t)h & mask;
    for (;;) {
        uint32_t v = t->slots[i];
        if (v == 0) {
            *slot = i;
            return -1;
        }
        size_t id = v - 1;
        if (t->lens[id] == len && memcmp(t->keys[id], key, len) == 0) {
            *slot = i;
            return (int64_t)id;
        }
        i = (i + 1) & mask;
    }
}

static int rd_grow(dt_rd_strtab *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 64;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t id = 0; id < t->count; id++) {
        size_t i = (size_t)rd_hash(t->keys[id], t->lens[id]) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)(id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

int64_t dt_rd_strtab_find(const dt_rd_strtab *t, const void *key, size_t len)
{
    if (t->nslots == 0)
        return -1;
    size_t slot;
    return rd_lookup(t, key, len, rd_hash(key, len), &slot);
}

int64_t dt_rd_strtab_intern(dt_rd_strtab *t, const void *key, size_t len, bool *added)
{
    if (added)
        *added = false;
    if (t->count >= UINT32_MAX - 1)
        return -1;
    /* Keep the load factor under one half so probes stay short. */
    if ((t->count + 1) * 2 > t->nslots && rd_grow(t) != 0)
        return -1;
    uint64_t h = rd_hash(key, len);
    size_t slot;
    int64_t id = rd_lookup(t, key, len, h, &slot);
    if (id >= 0)
        return id;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **keys = realloc(t->keys, cap * sizeof *keys);
        if (!keys)
            return -1;
        t->keys = keys;
        size_t *lens = realloc(t->lens, cap * sizeof *lens);
        if (!lens)
            return -1;
        t->lens = lens;
        t->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, key, len);
    copy[len] = '\0';
    t->keys[t->count] = copy;
    t->lens[t->count] = len;
    t->slots[slot] = (uint32_t)(t->count + 1);
    if (added)
        *added = true;
    return (int64_t)t->count++;
}

/* u64 -> u64 map: open addressing, keys and values side by side; key 0
   marks an empty slot and lives outside the table. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

void dt_rd_u64map_free(dt_rd_u64map *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int u64map_grow(dt_rd_u64map *m)
{
    size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
    dt_rd_u64slot *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; m->slots && i <= m->mask; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = mix64(m->slots[i].key) & (cap - 1);
        while (n[j].key)
            j = (j + 1) & (cap - 1);
        n[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = n;
    m->mask = cap - 1;
    return 0;
}

uint64_t *dt_rd_u64map_slot(dt_rd_u64map *m, uint64_t key, bool *added)
{
    if (key == 0) {
        if (added)
            *added = !m->has_zero;
        if (!m->has_zero) {
            m->has_zero = true;
            m->zero_value = 0;
            m->count++;
        }
        return &m->zero_value;
    }
    /* fuller than a string table: the slots are small and many */
    if ((m->count + 1) * 4 > (m->slots ? m->mask + 1 : 0) * 3 && u64map_grow(m) != 0)
        return NULL;
    size_t i = mix64(key) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) {
            if (added)
                *added = false;
            return &m->slots[i].value;
        }
        i = (i + 1) & m->mask;
    }
    m->slots[i].key = key;
    m->slots[i].value = 0;
    m->count++;
    if (added)
        *added = true;
    return &m->slots[i].value;
}

bool dt_rd_u64map_get(const dt_rd_u64map *m, uint64_t key, uint64_t *value)
{
    if (key == 0) {
        if (m->has_zero)
            *value = m->zero_value;
        return m->has_zero;
    }
    if (!m->slots)
        return false;
    size_t i = mix64(key) & m->mask;
    while (m->slots[i].key) {
        if (m->slots[i].key == key) {
            *value = m->slots[i].value;
            return true;
        }
        i = (i + 1) & m->mask;
    }
    return false;
}

bool dt_rd_u64map_next(const dt_rd_u64map *m, size_t *cursor, uint64_t *key, uint64_t *value)
{
    /* cursor 0: the zero key; k + 1: slot k */
    if (*cursor == 0) {
        *cursor = 1;
        if (m->has_zero) {
            *key = 0;
            *value = m->zero_value;
            return true;
        }
    }
    for (; m->slots && *cursor - 1 <= m->mask; (*cursor)++) {
        const dt_rd_u64slot *s = &m->slots[*cursor - 1];
        if (s->key) {
            *key = s->key;
            *value = s->value;
            (*cursor)++;
            return true;
        }
    }
    return false;
}

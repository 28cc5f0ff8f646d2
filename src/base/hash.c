/* The one hash table, and the string table over it. */
#include "base/hash.h"

#include "base/alloc.h"

void dt__u64map_free(dt_u64map *m)
{
    dt__free(m->slots);
    memset(m, 0, sizeof *m);
}

static void place(dt_u64slot *slots, size_t mask, uint64_t key, uint64_t value)
{
    size_t j = (size_t)dt__mix64(key) & mask;
    while (slots[j].key)
        j = (j + 1) & mask;
    slots[j].key = key;
    slots[j].value = value;
}

static int grow_to(dt_u64map *m, size_t cap)
{
    dt_u64slot *n = dt__calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; m->slots && i <= m->mask; i++)
        if (m->slots[i].key)
            place(n, cap - 1, m->slots[i].key, m->slots[i].value);
    dt__free(m->slots);
    m->slots = n;
    m->mask = cap - 1;
    return 0;
}

/* At most three quarters full: probes stay short. */
static size_t capacity(const dt_u64map *m) { return m->slots ? m->mask + 1 : 0; }

int dt__u64map_reserve(dt_u64map *m, size_t entries)
{
    if ((entries + 1) * 4 <= capacity(m) * 3)
        return 0;
    size_t cap = capacity(m) ? capacity(m) : 64;
    while ((entries + 1) * 4 > cap * 3)
        cap *= 2;
    return grow_to(m, cap);
}

static int make_room(dt_u64map *m)
{
    if ((m->count + 1) * 4 <= capacity(m) * 3)
        return 0;
    return grow_to(m, capacity(m) ? capacity(m) * 2 : 1024);
}

uint64_t *dt__u64map_slot(dt_u64map *m, uint64_t key, bool *added)
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
    if (make_room(m) != 0)
        return NULL;
    size_t i = (size_t)dt__mix64(key) & m->mask;
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

uint64_t *dt__u64map_add(dt_u64map *m, uint64_t key)
{
    if (key == 0 || make_room(m) != 0)
        return NULL;
    size_t i = (size_t)dt__mix64(key) & m->mask;
    while (m->slots[i].key)
        i = (i + 1) & m->mask;
    m->slots[i].key = key;
    m->slots[i].value = 0;
    m->count++;
    return &m->slots[i].value;
}

bool dt__u64map_next(const dt_u64map *m, size_t *cursor, uint64_t *key, uint64_t *value)
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
        const dt_u64slot *s = &m->slots[*cursor - 1];
        if (s->key) {
            *key = s->key;
            *value = s->value;
            (*cursor)++;
            return true;
        }
    }
    return false;
}

void dt__strtab_init(dt_strtab *t) { memset(t, 0, sizeof *t); }

void dt__strtab_free(dt_strtab *t)
{
    for (size_t i = 0; i < t->count; i++)
        dt__free(t->keys[i]);
    dt__free(t->keys);
    dt__free(t->lens);
    dt__u64map_free(&t->index);
    memset(t, 0, sizeof *t);
}

static int64_t lookup(const dt_strtab *t, const void *key, size_t len, uint64_t h)
{
    size_t pos = 0;
    for (const uint64_t *id; (id = dt__u64map_probe(&t->index, h, &pos));)
        if (t->lens[*id] == len && memcmp(t->keys[*id], key, len) == 0)
            return (int64_t)*id;
    return -1;
}

int64_t dt__strtab_find(const dt_strtab *t, const void *key, size_t len)
{
    return lookup(t, key, len, dt__hash_key(key, len));
}

int64_t dt__strtab_intern(dt_strtab *t, const void *key, size_t len, bool *added)
{
    if (added)
        *added = false;
    if (t->count >= UINT32_MAX - 1)
        return -1;
    uint64_t h = dt__hash_key(key, len);
    int64_t id = lookup(t, key, len, h);
    if (id >= 0)
        return id;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **keys = dt__realloc(t->keys, cap * sizeof *keys);
        if (!keys)
            return -1;
        t->keys = keys;
        size_t *lens = dt__realloc(t->lens, cap * sizeof *lens);
        if (!lens)
            return -1;
        t->lens = lens;
        t->cap = cap;
    }
    char *copy = dt__malloc(len + 1);
    if (!copy)
        return -1;
    uint64_t *slot = dt__u64map_add(&t->index, h);
    if (!slot) {
        dt__free(copy);
        return -1;
    }
    if (len)
        memcpy(copy, key, len);
    copy[len] = '\0';
    *slot = t->count;
    t->keys[t->count] = copy;
    t->lens[t->count] = len;
    if (added)
        *added = true;
    return (int64_t)t->count++;
}

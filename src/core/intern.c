/* Interned strings (names repeat: store each once, refer by a dense id),
   C++ demangling once per distinct kernel name, and interned kernel launch
   configurations. */
#include "base/alloc.h"
#include "base/demangle.h"
#include "base/hash.h"
#include "core/intern.h"

#include <stdlib.h>
#include <string.h>

#define DT_INTERN_PAGE (256u * 1024u)

static int intern_grow_table(dt_intern *in)
{
    uint32_t cap = in->table_mask ? (in->table_mask + 1) * 2 : 1024;
    uint32_t *t = dt_calloc(cap, sizeof *t);
    if (!t) return -1;
    for (uint32_t id = 0; id < in->count; id++) {
        uint64_t h = dt_hash_bytes(in->strings[id], in->lengths[id]);
        uint32_t i = (uint32_t)h & (cap - 1);
        while (t[i]) i = (i + 1) & (cap - 1);
        t[i] = id + 1;
    }
    dt_free(in->table);
    in->table = t;
    in->table_mask = cap - 1;
    return 0;
}

static char *intern_copy(dt_intern *in, const char *s, size_t len)
{
    size_t need = len + 1;
    if (need > DT_INTERN_PAGE / 4) {
        /* A huge name gets a page of its own. */
        char *big = dt_malloc(need);
        if (!big) return NULL;
        if (in->page_count == in->page_cap) {
            size_t cap = in->page_cap ? in->page_cap * 2 : 16;
            char **p = dt_realloc(in->pages, cap * sizeof *p);
            if (!p) { dt_free(big); return NULL; }
            in->pages = p; in->page_cap = cap;
        }
        /* keep the current page last so that it stays the fill page */
        if (in->page_count) {
            in->pages[in->page_count] = in->pages[in->page_count - 1];
            in->pages[in->page_count - 1] = big;
        } else {
            in->pages[0] = big;
            in->page_used = DT_INTERN_PAGE; /* force a new fill page next time */
        }
        in->page_count++;
        memcpy(big, s, len);
        big[len] = 0;
        in->bytes += need;
        return big;
    }
    if (in->page_count == 0 || in->page_used + need > DT_INTERN_PAGE) {
        if (in->page_count == in->page_cap) {
            size_t cap = in->page_cap ? in->page_cap * 2 : 16;
            char **p = dt_realloc(in->pages, cap * sizeof *p);
            if (!p) return NULL;
            in->pages = p; in->page_cap = cap;
        }
        char *page = dt_malloc(DT_INTERN_PAGE);
        if (!page) return NULL;
        in->pages[in->page_count++] = page;
        in->page_used = 0;
        in->bytes += DT_INTERN_PAGE;
    }
    char *dst = in->pages[in->page_count - 1] + in->page_used;
    memcpy(dst, s, len);
    dst[len] = 0;
    in->page_used += need;
    return dst;
}

int dt_intern_init(dt_intern *in)
{
    memset(in, 0, sizeof *in);
    return dt_intern_n(in, "", 0) == 0 ? 0 : -1;
}

void dt_intern_free(dt_intern *in)
{
    for (size_t i = 0; i < in->page_count; i++) dt_free(in->pages[i]);
    dt_free(in->pages);
    dt_free(in->strings);
    dt_free(in->lengths);
    dt_free(in->table);
    dt_free(in->demangled);
    memset(in, 0, sizeof *in);
}

/* The slot of s in the table: its id + 1, or the empty slot to fill. */
static uint32_t *intern_probe(const dt_intern *in, const char *s, size_t len, uint64_t h)
{
    uint32_t i = (uint32_t)h & in->table_mask;
    while (in->table[i]) {
        uint32_t id = in->table[i] - 1;
        if (in->lengths[id] == len && memcmp(in->strings[id], s, len) == 0) break;
        i = (i + 1) & in->table_mask;
    }
    return &in->table[i];
}

uint32_t dt_intern_n(dt_intern *in, const char *s, size_t len)
{
    if (!s) { s = ""; len = 0; }
    if (len >= UINT32_MAX) return UINT32_MAX;
    uint64_t h = dt_hash_bytes(s, len);
    /* a name already known costs no allocation, even when the table is due to grow */
    uint32_t known = in->table ? *intern_probe(in, s, len, h) : 0;
    if (known) return known - 1;
    if ((uint64_t)(in->count + 1) * 2 > (uint64_t)in->table_mask + 1 && intern_grow_table(in))
        return UINT32_MAX;
    if (in->count == in->cap) {
        uint32_t cap = in->cap ? in->cap * 2 : 256;
        const char **ns = dt_realloc(in->strings, cap * sizeof *ns);
        if (!ns) return UINT32_MAX;
        in->strings = ns;
        uint32_t *nl = dt_realloc(in->lengths, cap * sizeof *nl);
        if (!nl) return UINT32_MAX;
        in->lengths = nl;
        in->cap = cap;
    }
    char *copy = intern_copy(in, s, len);
    if (!copy) return UINT32_MAX;
    uint32_t id = in->count++;
    in->strings[id] = copy;
    in->lengths[id] = (uint32_t)len;
    *intern_probe(in, s, len, h) = id + 1;
    return id;
}

uint32_t dt_intern_str(dt_intern *in, const char *s)
{
    return dt_intern_n(in, s, s ? strlen(s) : 0);
}

static uint32_t demangle_slot(uint32_t raw_id, uint32_t mask) { return (raw_id * 2654435761u) & mask; }

/* Remember raw -> demangled; a cache that cannot grow only costs speed. */
static void demangle_cache_put(dt_intern *in, uint32_t raw_id, uint32_t id)
{
    if ((in->demangled_count + 1) * 2 > in->demangled_mask + 1) {
        uint32_t cap = in->demangled_mask ? (in->demangled_mask + 1) * 2 : 256;
        struct dt_demangle_entry *t = dt_calloc(cap, sizeof *t);
        if (!t) return;
        for (uint32_t i = 0; in->demangled && i <= in->demangled_mask; i++) {
            if (!in->demangled[i].raw) continue;
            uint32_t j = demangle_slot(in->demangled[i].raw, cap - 1);
            while (t[j].raw) j = (j + 1) & (cap - 1);
            t[j] = in->demangled[i];
        }
        dt_free(in->demangled);
        in->demangled = t;
        in->demangled_mask = cap - 1;
    }
    uint32_t j = demangle_slot(raw_id, in->demangled_mask);
    while (in->demangled[j].raw) j = (j + 1) & in->demangled_mask;
    in->demangled[j].raw = raw_id;
    in->demangled[j].demangled = id;
    in->demangled_count++;
}

uint32_t dt_intern_kernel(dt_intern *in, const char *raw)
{
    if (!raw) raw = "";
    uint32_t raw_id = dt_intern_str(in, raw);
    if (raw_id == UINT32_MAX || raw[0] != '_' || raw[1] != 'Z') return raw_id;
    /* raw id 0 is "", never mangled: 0 marks an empty slot */
    for (uint32_t j = in->demangled ? demangle_slot(raw_id, in->demangled_mask) : 0;
         in->demangled && in->demangled[j].raw; j = (j + 1) & in->demangled_mask)
        if (in->demangled[j].raw == raw_id) return in->demangled[j].demangled;
    dt_demangle_result result;
    char *d = dt_demangle(raw, &result);
    /* a name that demangles but could not be is not kept mangled */
    if (result == DT_DEMANGLE_NO_MEMORY) return UINT32_MAX;
    if (result == DT_DEMANGLE_TOO_LONG) in->demangle_too_long++;
    uint32_t id = d ? dt_intern_str(in, d) : raw_id;
    dt_free(d);
    if (id == UINT32_MAX) return UINT32_MAX;
    demangle_cache_put(in, raw_id, id);
    return id;
}

/* ---- launch configurations ---- */

int dt_launch_init(dt_launch_table *t)
{
    memset(t, 0, sizeof *t);
    return 0;
}

void dt_launch_free(dt_launch_table *t)
{
    dt_free(t->configs);
    dt_free(t->table);
    memset(t, 0, sizeof *t);
}

uint32_t dt_launch_intern(dt_launch_table *t, const dt_launch_config *c)
{
    if ((t->count + 1) * 2 > t->table_mask + 1) {
        uint32_t cap = t->table_mask ? (t->table_mask + 1) * 2 : 256;
        uint32_t *nt = dt_calloc(cap, sizeof *nt);
        if (!nt) return UINT32_MAX;
        for (uint32_t id = 0; id < t->count; id++) {
            uint32_t i = (uint32_t)dt_hash_bytes(&t->configs[id], sizeof *c) & (cap - 1);
            while (nt[i]) i = (i + 1) & (cap - 1);
            nt[i] = id + 1;
        }
        dt_free(t->table);
        t->table = nt;
        t->table_mask = cap - 1;
    }
    uint32_t i = (uint32_t)dt_hash_bytes(c, sizeof *c) & t->table_mask;
    while (t->table[i]) {
        uint32_t id = t->table[i] - 1;
        if (memcmp(&t->configs[id], c, sizeof *c) == 0) return id;
        i = (i + 1) & t->table_mask;
    }
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        dt_launch_config *nc = dt_realloc(t->configs, cap * sizeof *nc);
        if (!nc) return UINT32_MAX;
        t->configs = nc;
        t->cap = cap;
    }
    t->configs[t->count] = *c;
    t->table[i] = t->count + 1;
    return t->count++;
}

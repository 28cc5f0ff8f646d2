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
/* The room a table of kernel configurations or demangled names is first
   made with: a session has a few of them, and zeroing the hash table's
   default first size would cost it more than they do. */
#define DT_INTERN_FIRST_ENTRIES 64

static char *intern_copy(dt_intern *in, const char *s, size_t len)
{
    size_t need = len + 1;
    if (need > DT_INTERN_PAGE / 4) {
        /* A huge name gets a page of its own. */
        char *big = dt__malloc(need);
        if (!big) return NULL;
        if (in->page_count == in->page_cap) {
            size_t cap = in->page_cap ? in->page_cap * 2 : 16;
            char **p = dt__realloc(in->pages, cap * sizeof *p);
            if (!p) { dt__free(big); return NULL; }
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
            char **p = dt__realloc(in->pages, cap * sizeof *p);
            if (!p) return NULL;
            in->pages = p; in->page_cap = cap;
        }
        char *page = dt__malloc(DT_INTERN_PAGE);
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

int dt__intern_init(dt_intern *in)
{
    memset(in, 0, sizeof *in);
    return dt__intern_n(in, "", 0) == 0 ? 0 : -1;
}

void dt__intern_free(dt_intern *in)
{
    for (size_t i = 0; i < in->page_count; i++) dt__free(in->pages[i]);
    dt__free(in->pages);
    dt__free(in->strings);
    dt__free(in->lengths);
    dt__u64map_free(&in->index);
    dt__u64map_free(&in->demangled);
    memset(in, 0, sizeof *in);
}

/* The id of s, or UINT32_MAX when it is not interned. */
static uint32_t intern_find(const dt_intern *in, const char *s, size_t len, uint64_t h)
{
    size_t pos = 0;
    for (const uint64_t *v; (v = dt__u64map_probe(&in->index, h, &pos));) {
        uint32_t id = (uint32_t)*v;
        if (in->lengths[id] == len && memcmp(in->strings[id], s, len) == 0) return id;
    }
    return UINT32_MAX;
}

uint32_t dt__intern_n(dt_intern *in, const char *s, size_t len)
{
    if (!s) { s = ""; len = 0; }
    if (len >= UINT32_MAX) return UINT32_MAX;
    uint64_t h = dt__hash_key(s, len);
    /* a name already known costs no allocation, even when the table is due to grow */
    uint32_t known = intern_find(in, s, len, h);
    if (known != UINT32_MAX) return known;
    /* room first: once the name is copied, its entry cannot fail */
    if (dt__u64map_reserve(&in->index, (size_t)in->count + 1) != 0) return UINT32_MAX;
    if (in->count == in->cap) {
        uint32_t cap = in->cap ? in->cap * 2 : 256;
        const char **ns = dt__realloc(in->strings, cap * sizeof *ns);
        if (!ns) return UINT32_MAX;
        in->strings = ns;
        uint32_t *nl = dt__realloc(in->lengths, cap * sizeof *nl);
        if (!nl) return UINT32_MAX;
        in->lengths = nl;
        in->cap = cap;
    }
    char *copy = intern_copy(in, s, len);
    if (!copy) return UINT32_MAX;
    uint32_t id = in->count++;
    in->strings[id] = copy;
    in->lengths[id] = (uint32_t)len;
    *dt__u64map_add(&in->index, h) = id;
    return id;
}

uint32_t dt__intern_str(dt_intern *in, const char *s)
{
    return dt__intern_n(in, s, s ? strlen(s) : 0);
}

uint32_t dt__intern_kernel(dt_intern *in, const char *raw)
{
    if (!raw) raw = "";
    uint32_t raw_id = dt__intern_str(in, raw);
    if (raw_id == UINT32_MAX || raw[0] != '_' || raw[1] != 'Z') return raw_id;
    uint64_t known;
    if (dt__u64map_get(&in->demangled, raw_id, &known)) return (uint32_t)known;
    dt_demangle_result result;
    char *d = dt__demangle(raw, &result);
    /* a name that demangles but could not be is not kept mangled */
    if (result == DT_DEMANGLE_NO_MEMORY) return UINT32_MAX;
    if (result == DT_DEMANGLE_TOO_LONG) in->demangle_too_long++;
    uint32_t id = d ? dt__intern_str(in, d) : raw_id;
    dt__free(d);
    if (id == UINT32_MAX) return UINT32_MAX;
    /* remember raw -> demangled; a cache that cannot grow only costs speed
       (first made for the few kernels of a session, not the map's default) */
    if (!in->demangled.slots) dt__u64map_reserve(&in->demangled, DT_INTERN_FIRST_ENTRIES);
    uint64_t *slot = dt__u64map_slot(&in->demangled, raw_id, NULL);
    if (slot) *slot = id;
    return id;
}

/* ---- launch configurations ---- */

int dt__launch_init(dt_launch_table *t)
{
    memset(t, 0, sizeof *t);
    return 0;
}

void dt__launch_free(dt_launch_table *t)
{
    dt__free(t->configs);
    dt__u64map_free(&t->index);
    memset(t, 0, sizeof *t);
}

uint32_t dt__launch_intern(dt_launch_table *t, const dt_launch_config *c)
{
    uint64_t h = dt__hash_key(c, sizeof *c);
    size_t pos = 0;
    for (const uint64_t *v; (v = dt__u64map_probe(&t->index, h, &pos));)
        if (dt__launch_config_equal(&t->configs[*v], c)) return (uint32_t)*v;
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        dt_launch_config *nc = dt__realloc(t->configs, cap * sizeof *nc);
        if (!nc) return UINT32_MAX;
        t->configs = nc;
        t->cap = cap;
    }
    if (!t->index.slots && dt__u64map_reserve(&t->index, DT_INTERN_FIRST_ENTRIES) != 0) return UINT32_MAX;
    uint64_t *slot = dt__u64map_add(&t->index, h);
    if (!slot) return UINT32_MAX;
    *slot = t->count;
    t->configs[t->count] = *c;
    return t->count++;
}

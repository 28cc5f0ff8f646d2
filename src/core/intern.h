/*
 * Interned names and kernel launch configurations (src/core/intern.c).
 * Internal, not installed.
 */
#ifndef DT_CORE_INTERN_H
#define DT_CORE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/hash.h"

/* ------------------------------------------------------------------ */
/* Interned strings                                                    */
/* ------------------------------------------------------------------ */
/* id 0 is the empty string. Ids are dense. Not thread-safe by itself:
   the session wraps it in its lock. */
typedef struct dt_intern {
    char **pages;            /* string bytes, NUL-terminated */
    size_t page_count, page_cap, page_used;
    const char **strings;    /* id -> string */
    uint32_t *lengths;       /* id -> length (strings may contain NUL? no: length excludes it) */
    uint32_t count, cap;
    dt_u64map index;         /* dt__hash_key of the bytes -> id (hashes may repeat) */
    dt_u64map demangled;     /* mangled kernel name's id -> demangled id */
    uint32_t demangle_too_long; /* distinct kernel names the demangler refused */
    size_t bytes;
} dt_intern;

DT_HIDDEN int dt__intern_init(dt_intern *in);
DT_HIDDEN void dt__intern_free(dt_intern *in);
/* Returns the id, or UINT32_MAX when memory ran out. */
DT_HIDDEN uint32_t dt__intern_n(dt_intern *in, const char *s, size_t len);
DT_HIDDEN uint32_t dt__intern_str(dt_intern *in, const char *s);
/* Intern a kernel name, demangling C++ (Itanium) names once per name.
   UINT32_MAX when memory ran out, also for a name that demangles but whose
   demangling ran out of memory (a mangled name is never kept in its place). */
DT_HIDDEN uint32_t dt__intern_kernel(dt_intern *in, const char *raw);
static inline const char *dt__intern_get(const dt_intern *in, uint32_t id)
{
    return id < in->count ? in->strings[id] : "";
}
static inline uint32_t dt__intern_len(const dt_intern *in, uint32_t id)
{
    return id < in->count ? in->lengths[id] : 0;
}


/* ------------------------------------------------------------------ */
/* Kernel launch configurations, interned (they repeat)                */
/* ------------------------------------------------------------------ */
typedef struct dt_launch_config {
    int32_t grid[3], block[3];
    uint32_t registers_per_thread;
    uint32_t static_shared_memory, dynamic_shared_memory;
} dt_launch_config;

typedef struct dt_launch_table {
    dt_launch_config *configs;
    uint32_t count, cap;
    dt_u64map index;         /* dt__hash_key of the configuration -> id */
} dt_launch_table;

DT_HIDDEN int dt__launch_init(dt_launch_table *t);
DT_HIDDEN void dt__launch_free(dt_launch_table *t);
DT_HIDDEN uint32_t dt__launch_intern(dt_launch_table *t, const dt_launch_config *c);

/* A launch configuration's hash, and its equality without a call to
   memcmp per record. Decoders have just written the fields one by one: read
   as wider words they would stall on store forwarding (a load spanning two
   recent stores waits for both to retire), so each field is read as itself. */
_Static_assert(sizeof(dt_launch_config) == 36, "dt_launch_config is 9 words");
static inline uint64_t dt__launch_config_key(const dt_launch_config *cfg)
{
#define DT_PAIR(lo, hi) ((uint64_t)(uint32_t)(lo) | (uint64_t)(uint32_t)(hi) << 32)
    uint64_t w0 = DT_PAIR(cfg->grid[0], cfg->grid[1]), w1 = DT_PAIR(cfg->grid[2], cfg->block[0]),
             w2 = DT_PAIR(cfg->block[1], cfg->block[2]),
             w3 = DT_PAIR(cfg->registers_per_thread, cfg->static_shared_memory);
#undef DT_PAIR
    /* linear in the first word: configurations that differ only in their
       grid's x (the commonest) spread evenly over the slots */
    return w0 ^ (w1 * 0x9e3779b97f4a7c15ull) ^ (w2 << 7 | w2 >> 57) ^ (w3 * 0xc2b2ae3d27d4eb4full) ^
           cfg->dynamic_shared_memory;
}

static inline int dt__launch_config_equal(const dt_launch_config *x, const dt_launch_config *y)
{
    return ((uint32_t)(x->grid[0] ^ y->grid[0]) | (uint32_t)(x->grid[1] ^ y->grid[1]) |
            (uint32_t)(x->grid[2] ^ y->grid[2]) | (uint32_t)(x->block[0] ^ y->block[0]) |
            (uint32_t)(x->block[1] ^ y->block[1]) | (uint32_t)(x->block[2] ^ y->block[2]) |
            (x->registers_per_thread ^ y->registers_per_thread) |
            (x->static_shared_memory ^ y->static_shared_memory) |
            (x->dynamic_shared_memory ^ y->dynamic_shared_memory)) == 0;
}

#endif /* DT_CORE_INTERN_H */

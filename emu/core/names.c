/*
 * Interned names: an open-addressing set of strings, hashed with FNV-1a.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "names.h"

/* The copies are made in one region mapped at an address that is the same
   in every run wherever the process leaves it free. Records point at the
   copies, and devtrace's kernel-name cache finds a name's set by its
   address: copies on the heap would land where everything the process
   allocated before them put them, and the bench's instructions per launch
   (bench/launch.c) would move with any change to devtrace's allocations or
   its size, as two of its names came to share a set. A name the region
   cannot hold, or a process where it cannot be mapped, gets a heap copy. */
#define NAME_REGION_BYTES ((size_t)1 << 20)
#define NAME_REGION_HINT ((uintptr_t)0x6e0000000000ull)

static char *copy_name(name_set *ns, const char *s)
{
    size_t n = strlen(s) + 1;
    if (!ns->region_tried) {
        ns->region_tried = 1;
        void *m = mmap((void *)NAME_REGION_HINT, NAME_REGION_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ns->region = m == MAP_FAILED ? NULL : m;
    }
    size_t at = (ns->region_used + 15) & ~(size_t)15;
    if (!ns->region || at > NAME_REGION_BYTES || n > NAME_REGION_BYTES - at)
        return strdup(s);
    memcpy(ns->region + at, s, n);
    ns->region_used = at + n;
    return ns->region + at;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Kernel names must outlive the call: the record points at them until the
   client has read the buffer, so they are kept for the library's lifetime. */
const char *core_intern_name(const char *s)
{
    if (!s)
        s = "";
    name_set *ns = &core_state.names;
    if (!ns->slots || (ns->count + 1) * 2 > ns->mask + 1) {
        size_t cap = ns->slots ? (ns->mask + 1) * 2 : 64;
        char **slots = calloc(cap, sizeof(*slots));
        if (!slots)
            return NULL;
        for (size_t i = 0; ns->slots && i <= ns->mask; i++) {
            if (!ns->slots[i])
                continue;
            size_t j = hash_str(ns->slots[i]) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = ns->slots[i];
        }
        free(ns->slots);
        ns->slots = slots;
        ns->mask = cap - 1;
    }
    size_t j = hash_str(s) & ns->mask;
    while (ns->slots[j]) {
        if (strcmp(ns->slots[j], s) == 0)
            return ns->slots[j];
        j = (j + 1) & ns->mask;
    }
    char *copy = copy_name(ns, s);
    if (!copy)
        return NULL;
    ns->slots[j] = copy;
    ns->count++;
    return copy;
}

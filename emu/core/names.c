/*
 * Interned names: an open-addressing set of strings, hashed with FNV-1a.
 */
#include <string.h>

#include "names.h"

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
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    ns->slots[j] = copy;
    ns->count++;
    return copy;
}

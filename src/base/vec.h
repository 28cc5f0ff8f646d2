/*
 * Growable arrays of the export units: *p holds *cap elements of elem
 * bytes; reserve makes room for need, doubling.
 */
#ifndef DT_EXPORT_VEC_H
#define DT_EXPORT_VEC_H

#include <stddef.h>
#include <string.h>

#include "base/alloc.h"

/* 0, or -1 (and *p unchanged) when out of memory. */
static inline int dt__vec_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = dt__realloc(*p, c * elem);
    if (!n)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

/* dt__vec_reserve, with the new tail zeroed, so that counters and flags
   kept per element start cleared. */
static inline int dt__vec_reserve_zeroed(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (dt__vec_reserve(p, cap, need, elem) != 0)
        return -1;
    if (*cap > old)
        memset((char *)*p + old * elem, 0, (*cap - old) * elem);
    return 0;
}

#endif /* DT_EXPORT_VEC_H */

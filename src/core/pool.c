/* A fixed pool of vendor activity buffers, allocated when a session starts. */
#include "dt_internal.h"

#include <stdlib.h>
#include <string.h>

struct dt_buffer_pool {
    pthread_mutex_t lock;
    uint8_t *memory;
    size_t size;           /* bytes per buffer, a multiple of 64 */
    uint32_t count;
    uint32_t free_count;
    uint32_t *free_list;   /* indices of free buffers */
    _Atomic uint64_t refused;
};

dt_buffer_pool *dt_pool_create(uint32_t count, size_t size)
{
    if (!count || !size) return NULL;
    size = (size + 63) & ~(size_t)63;
    if (size > SIZE_MAX / count) return NULL;
    dt_buffer_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->memory = aligned_alloc(64, size * count);
    p->free_list = malloc(count * sizeof *p->free_list);
    if (!p->memory || !p->free_list) {
        free(p->memory);
        free(p->free_list);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->size = size;
    p->count = count;
    p->free_count = count;
    for (uint32_t i = 0; i < count; i++) p->free_list[i] = count - 1 - i;
    return p;
}

void dt_pool_destroy(dt_buffer_pool *p)
{
    if (!p) return;
    pthread_mutex_destroy(&p->lock);
    free(p->memory);
    free(p->free_list);
    free(p);
}

uint8_t *dt_pool_get(dt_buffer_pool *p)
{
    if (!p) return NULL;
    pthread_mutex_lock(&p->lock);
    uint8_t *b = NULL;
    if (p->free_count) b = p->memory + (size_t)p->free_list[--p->free_count] * p->size;
    pthread_mutex_unlock(&p->lock);
    if (!b) atomic_fetch_add_explicit(&p->refused, 1, memory_order_relaxed);
    return b;
}

int dt_pool_put(dt_buffer_pool *p, uint8_t *buf)
{
    if (!p || buf < p->memory || buf >= p->memory + p->size * p->count) return -1;
    size_t off = (size_t)(buf - p->memory);
    if (off % p->size) return -1;
    pthread_mutex_lock(&p->lock);
    int rc = -1;
    if (p->free_count < p->count) {
        p->free_list[p->free_count++] = (uint32_t)(off / p->size);
        rc = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

size_t dt_pool_buffer_size(const dt_buffer_pool *p) { return p ? p->size : 0; }

uint64_t dt_pool_refused(const dt_buffer_pool *p)
{
    return p ? atomic_load_explicit(&((dt_buffer_pool *)p)->refused, memory_order_relaxed) : 0;
}

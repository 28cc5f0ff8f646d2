/*
 * Memory events (layout_build.h): the args torch writes for each, with
 * "Total Allocated" per device in time order.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "export/layout/layout_build.h"

/* torch's c10::DeviceType of a device's memory: CUDA is 1, a backend
   registered as PrivateUse1 (Ascend's torch_npu, ...) 20; host memory CPU 0,
   device id -1, as torch writes a host allocation. */
static void memory_owner(const dt_layout *l, const dt_rec *r, int *type, int64_t *device)
{
    unsigned kind = r->context;
    if (kind == DT_MEM_PAGEABLE || kind == DT_MEM_PINNED) {
        *type = 0;
        *device = -1;
        return;
    }
    *type = strcmp(l->api_prefix, "cuda") == 0 ? 1 : 20;
    *device = r->device;
}

typedef struct mem_order {
    uint64_t start;
    uint32_t idx;
    uint32_t owner; /* device, or DT_MAX_DEVICES for host memory */
} mem_order;

static int mem_before(const void *pa, const void *pb)
{
    const mem_order *a = pa, *b = pb;
    if (a->owner != b->owner) return a->owner < b->owner ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Bytes and "Total Allocated" of every memory event kept: a free the vendor
   gives no size of frees what the allocation of its address in this trace
   allocated (0 when that was before the trace). Totals run per device (and
   one for host memory) in time order, from 0 at the trace's start. */
int dt__wr_layout_memory_totals(dt_layout *l)
{
    build *b = l->build;
    size_t m = b->kinds[DT_EVENT_MEMORY], k = 0;
    mem_order *ord = dt__malloc((m + 1) * sizeof *ord);
    b->mem = dt__calloc(m + 1, sizeof *b->mem);
    dt_u64map live = {0};
    if (!ord || !b->mem || dt__u64map_reserve(&b->memmap, m) != 0) {
        dt__free(ord);
        return -1;
    }
    for (size_t pos = 0; pos < l->items && k < m; pos++) {
        uint32_t i = l->perm[pos];
        if (i >= l->n) continue;
        const dt_rec *r = dt__store_at(l->store, i);
        if (r->kind != DT_EVENT_MEMORY) continue;
        int type;
        int64_t device;
        memory_owner(l, r, &type, &device);
        ord[k++] = (mem_order){rec_start(l, r), i, device < 0 ? DT_MAX_DEVICES : (uint32_t)device};
    }
    qsort(ord, k, sizeof *ord, mem_before);
    int64_t total = 0;
    int rc = 0;
    for (size_t j = 0; j < k; j++) {
        if (j == 0 || ord[j].owner != ord[j - 1].owner) total = 0;
        const dt_rec *r = dt__store_at(l->store, ord[j].idx);
        dt_layout_memory *mi = &b->mem[j];
        memory_owner(l, r, &mi->device_type, &mi->device_id);
        uint64_t key = r->u.memory.address ^ ((uint64_t)ord[j].owner << 48);
        bool added;
        uint64_t *alloc = dt__u64map_slot(&live, key, &added);
        if (alloc && added)
            *alloc = NONE;
        uint64_t *pos = alloc ? dt__u64map_slot(&b->memmap, (uint64_t)(uintptr_t)r, NULL) : NULL;
        if (!alloc || !pos) {
            rc = -1;
            break;
        }
        *pos = j;
        uint64_t bytes = r->u.memory.bytes;
        if (r->flags & DT_REC_FREE) {
            if (!bytes && *alloc != NONE) bytes = (uint64_t)b->mem[*alloc].bytes;
            *alloc = NONE;
            mi->bytes = -(int64_t)(bytes & INT64_MAX);
        } else {
            *alloc = j;
            mi->bytes = (int64_t)(bytes & INT64_MAX);
        }
        total = (int64_t)((uint64_t)total + (uint64_t)mi->bytes);
        mi->total = total;
    }
    dt__u64map_free(&live);
    dt__free(ord);
    return rc;
}

const dt_layout_memory *dt__wr_layout_memory_of(const dt_layout *l, const dt_rec *r)
{
    static const dt_layout_memory none = {0};
    const build *b = l->build;
    uint64_t v;
    return dt__u64map_get(&b->memmap, (uint64_t)(uintptr_t)r, &v) ? &b->mem[v] : &none;
}

/* What every backend's decoder needs: the checks each vendor record passes,
   names as Kineto writes them, and per-buffer caches of repeated values. */
#include "base/alloc.h"
#include "base/log.h"
#include "core/decode.h"
#include "core/session_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

void dt__decode_cache_init(dt_decode_cache *c)
{
    memset(c, 0, offsetof(dt_decode_cache, copied)); /* copied: on first use */
}

/* The vendor owns the string; one longer than any kernel name is a sign of
   a corrupt pointer or record, so it is cut rather than trusted. n: its
   length, at most DT_MAX_KERNEL_NAME. */
static uint32_t intern_vendor_kernel_name(dt_session *s, const char *raw, size_t n)
{
    if (n >= DT_MAX_KERNEL_NAME) {
        atomic_fetch_add_explicit(&s->kernel_names_cut, 1, memory_order_relaxed);
        return dt__intern_n(&s->names, raw, DT_MAX_KERNEL_NAME - 1);
    }
    return dt__intern_kernel(&s->names, raw);
}

uint32_t dt__decode_kernel_name_miss(dt_session *s, dt_decode_cache *c, const char *raw)
{
    if (!raw || !raw[0]) return dt__intern_str(&s->names, "<unnamed kernel>");
    __typeof__(c->kernel[0]) *set = &c->kernel[dt__decode_slot((uintptr_t)raw)];
    uint32_t id = intern_vendor_kernel_name(s, raw, strnlen(raw, DT_MAX_KERNEL_NAME));
    if (id != UINT32_MAX) {
        memmove(&set->raw[1], &set->raw[0], (DT_DECODE_KERNEL_WAYS - 1) * sizeof set->raw[0]);
        memmove(&set->id[1], &set->id[0], (DT_DECODE_KERNEL_WAYS - 1) * sizeof set->id[0]);
        set->raw[0] = raw;
        set->id[0] = id;
    }
    return id;
}

uint32_t dt__decode_kernel_name_copied_miss(dt_session *s, dt_decode_cache *c, const char *raw, size_t len,
                                          size_t set)
{
    if (len == 0) return dt__intern_str(&s->names, "<unnamed kernel>");
    __typeof__(c->copied[0]) *e = &c->copied[set];
    uint32_t id;
    if (e->raw[1] && e->len[1] == len && memcmp(e->raw[1], raw, len) == 0) {
        id = e->id[1];
    } else {
        id = intern_vendor_kernel_name(s, raw, len);
        if (id == UINT32_MAX) return id;
    }
    /* way 0 holds the one used last */
    e->raw[1] = e->raw[0];
    e->len[1] = e->len[0];
    e->id[1] = e->id[0];
    e->raw[0] = raw;
    e->len[0] = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
    e->id[0] = id;
    return id;
}

uint32_t dt__decode_launch_config_other(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg)
{
    size_t slot = dt__decode_slot(dt__launch_config_key(cfg));
    uint32_t id;
    if (c->config[slot].used && dt__launch_config_equal(cfg, &c->config[slot].config)) {
        id = c->config[slot].id;
    } else {
        id = dt__launch_intern(&s->launches, cfg);
        if (id == UINT32_MAX) return id;
        c->config[slot].config = *cfg;
        c->config[slot].id = id;
        c->config[slot].used = 1;
    }
    c->last_config = *cfg;
    c->last_config_id = id + 1;
    return id;
}

static const char *memory_label(uint8_t k)
{
    static const char *const labels[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed"};
    return k < sizeof labels / sizeof labels[0] ? labels[k] : "Unknown";
}

uint32_t dt__decode_copy_name(dt_session *s, dt_decode_cache *c, uint8_t ck, uint8_t src, uint8_t dst)
{
    static const char *const copies[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
    ck = ck < 6 ? ck : 0;
    src = src < 6 ? src : 0;
    dst = dst < 6 ? dst : 0;
    uint32_t *slot = &c->copy[ck][src][dst];
    if (*slot) return *slot - 1;
    char buf[96];
    snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", copies[ck], memory_label(src), memory_label(dst));
    uint32_t id = dt__intern_str(&s->names, buf);
    if (id != UINT32_MAX) *slot = id + 1;
    return id;
}

uint32_t dt__decode_fill_name(dt_session *s, dt_decode_cache *c, uint8_t mk)
{
    mk = mk < 6 ? mk : 0;
    if (c->fill[mk]) return c->fill[mk] - 1;
    char buf[64];
    snprintf(buf, sizeof buf, "Memset (%s)", memory_label(mk));
    uint32_t id = dt__intern_str(&s->names, buf);
    if (id != UINT32_MAX) c->fill[mk] = id + 1;
    return id;
}

dt_rec *dt__add_copy(dt_session *s, dt_decode_cache *c, const dt_copy *m)
{
    if (m->src_device > UINT16_MAX || m->dst_device > UINT16_MAX) {
        dt__loss_add(s, DT_LOSS_MALFORMED, 1);
        return NULL;
    }
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_MEMCPY, m->start, m->end, m->correlation, m->device,
                                       m->stream, m->context,
                                       dt__decode_copy_name(s, c, m->copy_kind, m->src_kind, m->dst_kind));
    if (!r) return NULL;
    if (m->async) r->flags |= DT_REC_ASYNC;
    r->u.memcpy.bytes = m->bytes;
    r->u.memcpy.copy_kind = m->copy_kind;
    r->u.memcpy.src_kind = m->src_kind;
    r->u.memcpy.dst_kind = m->dst_kind;
    r->u.memcpy.src_device = (uint16_t)m->src_device;
    r->u.memcpy.dst_device = (uint16_t)m->dst_device;
    return r;
}

dt_rec *dt__add_fill(dt_session *s, dt_decode_cache *c, const dt_fill *m)
{
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_MEMSET, m->start, m->end, m->correlation, m->device,
                                       m->stream, m->context, dt__decode_fill_name(s, c, m->memory_kind));
    if (!r) return NULL;
    if (m->async) r->flags |= DT_REC_ASYNC;
    r->u.memset.bytes = m->bytes;
    r->u.memset.value = m->value;
    r->u.memset.memory_kind = m->memory_kind;
    return r;
}

uint32_t dt__intern_vendor_str(dt_session *s, const char *raw, size_t max)
{
    return raw ? dt__intern_n(&s->names, raw, strnlen(raw, max)) : 0;
}

/* Vendor names of groups and algorithms are short; longer is corruption. */
#define COLLECTIVE_TEXT_MAX 4096

dt_rec *dt__add_memory(dt_session *s, const dt_memory_op *m)
{
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_MEMORY, m->time, m->time, m->correlation, m->device, m->stream,
                                       m->memory_kind, dt__intern_str(&s->names, "[memory]"));
    if (!r) return NULL;
    r->u.memory.address = m->address;
    r->u.memory.bytes = m->bytes;
    if (m->is_free) r->flags |= DT_REC_FREE;
    return r;
}

dt_rec *dt__add_collective(dt_session *s, const dt_collective_desc *c)
{
    if (s->collective_count == s->collective_cap) {
        uint32_t cap = s->collective_cap ? s->collective_cap * 2 : 64;
        dt_collective *grown = cap > s->collective_cap ? dt__realloc(s->collectives, cap * sizeof *grown) : NULL;
        if (!grown) {
            dt__loss_add(s, DT_LOSS_STORE_FULL, 1);
            return NULL;
        }
        s->collectives = grown;
        s->collective_cap = cap;
    }
    dt_collective info = {
        .count = c->count, .bytes = c->bytes, .bandwidth_gbps = c->bandwidth_gbps,
        .data_type = dt__intern_vendor_str(s, c->data_type, COLLECTIVE_TEXT_MAX),
        .group = dt__intern_vendor_str(s, c->group, COLLECTIVE_TEXT_MAX),
        .algorithm = dt__intern_vendor_str(s, c->algorithm, COLLECTIVE_TEXT_MAX),
    };
    uint32_t name = c->name && c->name[0] ? dt__intern_vendor_str(s, c->name, COLLECTIVE_TEXT_MAX)
                                          : dt__intern_str(&s->names, "<unnamed collective>");
    if (info.data_type == UINT32_MAX || info.group == UINT32_MAX || info.algorithm == UINT32_MAX)
        name = UINT32_MAX; /* out of memory: dropped as store_full */
    dt_rec *r = dt__add_device_activity(s, DT_EVENT_COLLECTIVE, c->start, c->end, c->correlation, c->device,
                                       c->stream, 0, name);
    if (!r) return NULL;
    r->u.collective.info = s->collective_count;
    s->collectives[s->collective_count++] = info;
    return r;
}

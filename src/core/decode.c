/* What every backend's decoder needs: the checks each vendor record passes,
   names as Kineto writes them, and per-buffer caches of repeated values. */
#include "dt_internal.h"

#include <stdio.h>
#include <string.h>

void dt_decode_cache_init(dt_decode_cache *c) { memset(c, 0, sizeof *c); }

static size_t slot_of(uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 58); /* 64 slots */
}

_Static_assert(DT_DECODE_SLOTS == 64, "slot_of() yields 6 bits");

#define DT_MAX_KERNEL_NAME 8192

uint32_t dt_decode_kernel_name(dt_session *s, dt_decode_cache *c, const char *raw)
{
    if (!raw || !raw[0]) return dt_intern_str(&s->names, "<unnamed kernel>");
    __typeof__(c->kernel[0]) *set = &c->kernel[slot_of((uintptr_t)raw)];
    if (set->raw[0] == raw) return set->id[0];
    if (set->raw[1] == raw) {
        uint32_t id = set->id[1];
        set->raw[1] = set->raw[0];
        set->id[1] = set->id[0];
        set->raw[0] = raw;
        set->id[0] = id;
        return id;
    }
    /* The vendor owns the string; one longer than any kernel name is a sign
       of a corrupt pointer or record, so it is cut rather than trusted. */
    size_t n = strnlen(raw, DT_MAX_KERNEL_NAME);
    uint32_t id = n == DT_MAX_KERNEL_NAME ? dt_intern_n(&s->names, raw, n - 1)
                                          : dt_intern_kernel(&s->names, raw);
    if (id != UINT32_MAX) {
        set->raw[1] = set->raw[0];
        set->id[1] = set->id[0];
        set->raw[0] = raw;
        set->id[0] = id;
    }
    return id;
}

/* A launch configuration as words: 36 bytes compared and hashed in four
   loads and a fifth, without a call to memcmp per record. */
_Static_assert(sizeof(dt_launch_config) == 36, "dt_launch_config is 9 words");
static inline void config_words(const dt_launch_config *cfg, uint64_t w[4], uint32_t *last)
{
    memcpy(w, cfg, 32);
    memcpy(last, (const char *)cfg + 32, 4);
}

uint32_t dt_decode_launch_config(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg)
{
    uint64_t w[4], v[4];
    uint32_t last, vlast;
    config_words(cfg, w, &last);
    uint64_t key = w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull) ^ (w[2] << 7 | w[2] >> 57) ^
                   (w[3] * 0xc2b2ae3d27d4eb4full) ^ last;
    size_t slot = slot_of(key);
    if (c->config[slot].used) {
        config_words(&c->config[slot].config, v, &vlast);
        if (((w[0] ^ v[0]) | (w[1] ^ v[1]) | (w[2] ^ v[2]) | (w[3] ^ v[3]) | (last ^ vlast)) == 0)
            return c->config[slot].id;
    }
    uint32_t id = dt_launch_intern(&s->launches, cfg);
    if (id != UINT32_MAX) {
        c->config[slot].config = *cfg;
        c->config[slot].id = id;
        c->config[slot].used = 1;
    }
    return id;
}

static const char *memory_label(uint8_t k)
{
    static const char *const labels[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed"};
    return k < sizeof labels / sizeof labels[0] ? labels[k] : "Unknown";
}

uint32_t dt_decode_copy_name(dt_session *s, dt_decode_cache *c, uint8_t ck, uint8_t src, uint8_t dst)
{
    static const char *const copies[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
    ck = ck < 6 ? ck : 0;
    src = src < 6 ? src : 0;
    dst = dst < 6 ? dst : 0;
    uint32_t *slot = &c->copy[ck][src][dst];
    if (*slot) return *slot - 1;
    char buf[96];
    snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", copies[ck], memory_label(src), memory_label(dst));
    uint32_t id = dt_intern_str(&s->names, buf);
    if (id != UINT32_MAX) *slot = id + 1;
    return id;
}

uint32_t dt_decode_fill_name(dt_session *s, dt_decode_cache *c, uint8_t mk)
{
    mk = mk < 6 ? mk : 0;
    if (c->fill[mk]) return c->fill[mk] - 1;
    char buf[64];
    snprintf(buf, sizeof buf, "Memset (%s)", memory_label(mk));
    uint32_t id = dt_intern_str(&s->names, buf);
    if (id != UINT32_MAX) c->fill[mk] = id + 1;
    return id;
}

uint32_t dt_latency_delta(uint64_t start, uint64_t earlier)
{
    if (earlier == 0 || earlier == UINT64_MAX || earlier > start) return DT_DELTA_UNKNOWN;
    uint64_t d = start - earlier;
    return d >= DT_DELTA_UNKNOWN ? DT_DELTA_UNKNOWN : (uint32_t)d;
}

static dt_rec *add_checked(dt_session *s, uint8_t kind, uint64_t start, uint64_t end, uint32_t name)
{
    if (!dt_times_ok(s, start, end)) return NULL;
    if (name == UINT32_MAX) { /* interning ran out of memory */
        dt_loss_add(s, DT_LOSS_STORE_FULL, 1);
        return NULL;
    }
    dt_rec *r = dt_session_add(s);
    if (!r) return NULL;
    r->kind = kind;
    r->start = start;
    r->end = end;
    r->name = name;
    return r;
}

dt_rec *dt_add_device_activity(dt_session *s, uint8_t kind, uint64_t start, uint64_t end,
                               uint64_t correlation, uint32_t device, uint32_t stream, uint32_t context,
                               uint32_t name)
{
    /* device ids are 16-bit in the store; a larger one is a corrupt record */
    if (device > UINT16_MAX) {
        dt_loss_add(s, DT_LOSS_MALFORMED, 1);
        return NULL;
    }
    dt_rec *r = add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->device = (uint16_t)device;
    r->lane = stream;
    r->context = context;
    return r;
}

dt_rec *dt_add_api_call(dt_session *s, uint8_t kind, uint64_t start, uint64_t end, uint64_t correlation,
                        uint32_t pid, uint32_t tid, uint32_t name, uint32_t cbid, int32_t return_code)
{
    dt_rec *r = add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->lane = tid;
    r->context = pid;
    r->u.api.cbid = cbid;
    r->u.api.return_code = return_code;
    return r;
}

dt_rec *dt_add_copy(dt_session *s, dt_decode_cache *c, const dt_copy *m)
{
    if (m->src_device > UINT16_MAX || m->dst_device > UINT16_MAX) {
        dt_loss_add(s, DT_LOSS_MALFORMED, 1);
        return NULL;
    }
    dt_rec *r = dt_add_device_activity(s, DT_EVENT_MEMCPY, m->start, m->end, m->correlation, m->device,
                                       m->stream, m->context,
                                       dt_decode_copy_name(s, c, m->copy_kind, m->src_kind, m->dst_kind));
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

dt_rec *dt_add_fill(dt_session *s, dt_decode_cache *c, const dt_fill *m)
{
    dt_rec *r = dt_add_device_activity(s, DT_EVENT_MEMSET, m->start, m->end, m->correlation, m->device,
                                       m->stream, m->context, dt_decode_fill_name(s, c, m->memory_kind));
    if (!r) return NULL;
    if (m->async) r->flags |= DT_REC_ASYNC;
    r->u.memset.bytes = m->bytes;
    r->u.memset.value = m->value;
    r->u.memset.memory_kind = m->memory_kind;
    return r;
}

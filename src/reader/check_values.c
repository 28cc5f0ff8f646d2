/* `devtrace check`: what events carry against what the trace says of them:
   names (invariant 4), attribution (3), loss counts (7), torch's memory
   events (8). */
#include "reader/check.h"

#include <inttypes.h>
#include <stdlib.h>

#include "base/demangle.h"
#include "devtrace/devtrace.h"

/* Invariant 4 asks for a name that demangles to be demangled; a name that
   merely starts with _Z, or that the demangler refuses for its length, is
   kept as the vendor gave it (the writer's demangler is the same). Asked
   once per name. */
bool dt__rd_check_demangles(ck *c, size_t name_id, const char *name)
{
    if (dt__vec_reserve_zeroed((void **)&c->demangles, &c->demangles_cap, name_id + 1, 1) != 0) {
        c->oom = true;
        return false;
    }
    if (!c->demangles[name_id]) {
        dt_demangle_result result;
        char *d = dt__demangle(name, &result);
        free(d);
        if (result == DT_DEMANGLE_NO_MEMORY)
            c->oom = true;
        c->demangles[name_id] = d ? 2 : 1;
    }
    return c->demangles[name_id] == 2;
}

/* The fallback name a backend gives an API it cannot name: <word>#<digits>. */
bool dt__rd_check_is_generic_name(const char *s)
{
    const char *hash = strchr(s, '#');
    if (!hash || hash == s || hash[1] == '\0')
        return false;
    for (const char *p = s; p < hash; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    for (const char *p = hash + 1; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

/* Invariant 8, per event: torch's memory args, integers. */
int dt__rd_check_memory(ck *c, const dt_rd_event *e)
{
    static const struct { uint32_t bit; const char *name; } args[] = {
        {DT_RD_HAS_MEM_BYTES, "Bytes"}, {DT_RD_HAS_MEM_TOTAL, "Total Allocated"},
        {DT_RD_HAS_MEM_DEVICE, "Device Id"}, {DT_RD_HAS_MEM_TYPE, "Device Type"}, {DT_RD_HAS_ADDR, "Addr"}};
    char w[800];
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
        if (!(e->has & args[i].bit)) {
            dt__rd_check_where(w, sizeof w, e);
            dt__rd_check_finding(c, KD_MEMORY, "[memory] %s has no integer \"%s\"", w, args[i].name);
            return 0;
        }
    if (!(e->has & DT_RD_HAS_TS)) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_MEMORY, "[memory] %s has no ts", w);
        return 0;
    }
    if (e->mem_device < -1 || (e->mem_device == -1) != (e->mem_type == 0)) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_MEMORY, "[memory] %s has \"Device Id\" %" PRId64 " with \"Device Type\" %" PRId64
                     " (-1 is the host's, type 0, only)", w, e->mem_device, e->mem_type);
        return 0;
    }
    if (dt__vec_reserve_zeroed((void **)&c->mem, &c->mem_cap, c->nmem + 1, sizeof *c->mem) != 0)
        return -1;
    c->mem[c->nmem++] = (ck_mem){e->ts_ns, e->mem_type, e->mem_device, e->mem_bytes, e->mem_total, e->index};
    return 0;
}

static int cmp_mem(const void *a, const void *b)
{
    const ck_mem *x = a, *y = b;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Invariant 8, across events: per device, in time order, each "Total
   Allocated" is the one before plus its "Bytes". Allocations at one
   instant may come in any order: the chain restarts after them. */
void dt__rd_check_memory_totals(ck *c)
{
    if (c->nmem < 2)
        return;
    qsort(c->mem, c->nmem, sizeof *c->mem, cmp_mem);
    const ck_mem *prev = NULL;
    for (size_t i = 0; i < c->nmem;) {
        size_t j = i + 1;
        while (j < c->nmem && c->mem[j].type == c->mem[i].type &&
               c->mem[j].device == c->mem[i].device && c->mem[j].ts == c->mem[i].ts)
            j++;
        const ck_mem *m = &c->mem[i];
        if (prev && (prev->type != m->type || prev->device != m->device)) prev = NULL;
        if (j == i + 1 && prev && (int64_t)((uint64_t)prev->total + (uint64_t)m->bytes) != m->total)
            dt__rd_check_finding(c, KD_MEMORY, "[memory] traceEvents[%" PRIu64 "]: \"Total Allocated\" %" PRId64 " is not %" PRId64
                         " (the one before, traceEvents[%" PRIu64 "]) plus \"Bytes\" %" PRId64, m->index, m->total,
                         prev->total, prev->index, m->bytes);
        prev = j == i + 1 ? m : NULL;
        i = j;
    }
}


/* An entry of devtrace.attribution, as the reader meets it: compared with
   the device events' sum at once, nothing kept. */
int dt__rd_check_attribution_entry(void *user, int which, const char *key, size_t len, int64_t value)
{
    ck *c = user;
    if (which != DT_RD_ATTRIBUTION)
        return 0;
    uint64_t ext, sum = 0;
    char text[40];
    snprintf(text, sizeof text, "%.*s", (int)(len < 30 ? len : 30), key);
    if (len == 0 || len > 20 || strspn(key, "0123456789") != len || sscanf(text, "%" SCNu64, &ext) != 1) {
        dt__rd_check_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] is not an External id", key);
        return 0;
    }
    uint64_t *slot = NULL;
    if (!dt__u64map_get(&c->ext, ext, &sum)) {
        dt__rd_check_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but no device event carries "
                     "that External id",
                     key, value);
        return 0;
    }
    slot = dt__u64map_slot(&c->ext, ext, NULL);
    if (sum >> 63) {
        dt__rd_check_finding(c, KD_ATTRIBUTION, "devtrace.attribution lists External id %.100s twice", key);
        return 0;
    }
    *slot = sum | UINT64_C(1) << 63;
    if ((int64_t)sum != value)
        dt__rd_check_finding(c, KD_ATTRIBUTION, "devtrace.attribution[\"%.100s\"] = %" PRId64 " ns but its device events sum to %" PRId64
                     " ns",
                     key, value, (int64_t)sum);
    return 0;
}

void dt__rd_check_attribution(ck *c, const dt_rd_summary *s)
{
    if (!s->attribution.present) {
        dt__rd_check_finding(c, KD_ATTRIBUTION, "devtrace.attribution is missing");
        return;
    }
    size_t cursor = 0;
    uint64_t key, value;
    while (dt__u64map_next(&c->ext, &cursor, &key, &value))
        if (!(value >> 63))
            dt__rd_check_finding(c, KD_ATTRIBUTION, "External id %" PRIu64 " carries %" PRId64 " ns of device time but is missing from "
                         "devtrace.attribution",
                         key, (int64_t)value);
}

/* Invariant 4 on names, for any writer. */
void dt__rd_check_generic_names(ck *c)
{
    if (c->generic_api * 100 > c->api_events * 5)
        dt__rd_check_finding(c, KD_GENERIC, "%" PRIu64 " of %" PRIu64 " runtime/driver events (%.1f%%, more than 5%%) have a "
                     "generic fallback name, e.g. \"%s\" (event #%" PRIu64 ")",
                     c->generic_api, c->api_events, 100.0 * (double)c->generic_api / (double)c->api_events,
                     c->first_generic, c->first_generic_index);
}

void dt__rd_check_loss(ck *c, const dt_rd_summary *s)
{
    if (!s->loss.present) {
        dt__rd_check_finding(c, KD_LOSS, "devtrace.loss is missing");
        return;
    }
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *reason = dt_loss_reason_name((dt_loss_reason)r);
        bool found = false;
        for (size_t i = 0; i < s->loss.count && !found; i++)
            found = strcmp(s->loss.items[i].key, reason) == 0;
        if (!found)
            dt__rd_check_finding(c, KD_LOSS, "devtrace.loss has no \"%s\" count", reason);
    }
    bool has_total = false;
    int64_t total = 0;
    uint64_t sum = 0;
    bool overflow = false;
    for (size_t i = 0; i < s->loss.count; i++) {
        const dt_rd_kv *kv = &s->loss.items[i];
        if (kv->value < 0)
            dt__rd_check_finding(c, KD_LOSS, "devtrace.loss[\"%.100s\"] is negative (%" PRId64 ")", kv->key, kv->value);
        if (strcmp(kv->key, "total") == 0) {
            has_total = true;
            total = kv->value;
        } else if (kv->value > 0) {
            if (sum + (uint64_t)kv->value < sum)
                overflow = true;
            sum += (uint64_t)kv->value;
        }
    }
    if (!has_total)
        dt__rd_check_finding(c, KD_LOSS, "devtrace.loss has no \"total\"");
    else if (overflow || total < 0 || (uint64_t)total != sum)
        dt__rd_check_finding(c, KD_LOSS, "devtrace.loss.total is %" PRId64 " but the reasons sum to %" PRIu64, total, sum);
}

/* `devtrace check`: flows (invariant 2), their starts and finishes counted
   per id, their ends matched with the events of their rows. */
#include "reader/check.h"

#include <inttypes.h>
#include <stdlib.h>

/* A flow id written as a decimal integer below CK_FLOW_NUMERIC; other ids
   (strings, numbers that are not plain integers or are larger) are keyed
   by their text. */
static bool parse_flow_id(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s || (s[0] == '0' && s[1]))
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v >= CK_FLOW_NUMERIC / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v >= CK_FLOW_NUMERIC)
        return false;
    *out = v;
    return true;
}

/* Where a key's probe starts. Flow ids are mostly consecutive numbers
   (correlation ids), met in order: the key itself keeps their slots
   together in memory, a cache line holding eight, where a mixing hash
   would send each lookup to another line (a third of check's time on a
   1 GB trace). Keys that crowd together, as hostile ones may, make a
   probe long; the table then mixes. */
static inline size_t flow_home(const ck_flowtab *t, uint64_t key)
{
    return (size_t)(t->mixed ? dt__mix64(key) : key) & t->mask;
}

#define CK_FLOW_PROBE_MAX 64

static int flow_rehash(ck_flowtab *t, size_t cap)
{
    uint64_t *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    size_t old_mask = t->mask;
    uint64_t *old = t->slots;
    t->slots = n;
    t->mask = cap - 1;
    for (size_t i = 0; old && i <= old_mask; i++) {
        if (!old[i])
            continue;
        size_t j = flow_home(t, (old[i] >> 6) - 1);
        while (n[j])
            j = (j + 1) & t->mask;
        n[j] = old[i];
    }
    free(old);
    return 0;
}

/* The slot of a flow key, inserted with no start or finish when new; NULL
   when out of memory. */
static uint64_t *flow_slot(ck_flowtab *t, uint64_t key)
{
    if ((t->count + 1) * 4 > (t->slots ? t->mask + 1 : 0) * 3 &&
        flow_rehash(t, t->slots ? (t->mask + 1) * 2 : 1024) != 0)
        return NULL;
    for (;;) {
        size_t i = flow_home(t, key);
        for (size_t probe = 0; probe < CK_FLOW_PROBE_MAX || t->mixed; probe++, i = (i + 1) & t->mask) {
            uint64_t v = t->slots[i];
            if (!v) {
                t->slots[i] = (key + 1) << 6;
                t->count++;
                return &t->slots[i];
            }
            if ((v >> 6) - 1 == key)
                return &t->slots[i];
        }
        t->mixed = true;
        if (flow_rehash(t, t->mask + 1) != 0)
            return NULL;
    }
}

int dt__rd_check_flow(ck *c, const dt_rd_event *e, uint32_t row)
{
    char w[800];
    if (!(e->has & DT_RD_HAS_ID) || !(e->has & DT_RD_HAS_TS)) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_FLOW_FIELDS, "flow %s has no %s", w, (e->has & DT_RD_HAS_ID) ? "ts" : "id");
        return 0;
    }
    uint64_t key;
    if (e->id_is_str || !parse_flow_id(e->id, &key)) {
        int64_t sid = dt__strtab_intern(&c->flows, e->id, strlen(e->id), NULL);
        if (sid < 0)
            return -1;
        key = CK_FLOW_NUMERIC + (uint64_t)sid;
    }
    uint64_t *slot = flow_slot(&c->flowtab, key);
    if (!slot)
        return -1;
    bool finish = e->ph[0] == 'f';
    unsigned shift = finish ? 3 : 0;
    if ((*slot >> shift & 7) < 7)
        *slot += UINT64_C(1) << shift;
    if (finish && strcmp(e->bp, "e") != 0) {
        dt__rd_check_where(w, sizeof w, e);
        dt__rd_check_finding(c, KD_FLOW_BP, "flow finish id %s at %s has no \"bp\":\"e\"", e->id, w);
    }
    ck_row *r = &c->rowv[row];
    if (r->n > 0 && r->prev_start == e->ts_ns) {
        if (finish) {
            if (r->finished && r->finish_key == key && r->finish_index == r->prev_index &&
                !dt__u64map_slot(&c->twice, key, NULL))
                return -1;
            r->finished = true;
            r->finish_key = key;
            r->finish_index = r->prev_index;
        }
        return 0;
    }
    if (dt__vec_reserve_zeroed((void **)&c->pending, &c->pending_cap, c->npending + 1, sizeof *c->pending) != 0)
        return -1;
    c->pending[c->npending++] = (ck_flow_end){key, e->index, e->ts_ns, row, finish};
    return 0;
}

static int cmp_flow_end(const void *a, const void *b)
{
    const ck_flow_end *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The text of a flow key: the number, or the string id as written. */
static const char *flow_id_text(const ck *c, uint64_t key, char *buf, size_t len)
{
    if (key >= CK_FLOW_NUMERIC)
        return dt__strtab_key(&c->flows, (size_t)(key - CK_FLOW_NUMERIC));
    snprintf(buf, len, "%" PRIu64, key);
    return buf;
}

static uint64_t flow_counts(const ck *c, uint64_t key)
{
    size_t i = flow_home(&c->flowtab, key);
    for (;; i = (i + 1) & c->flowtab.mask)
        if ((c->flowtab.slots[i] >> 6) - 1 == key)
            return c->flowtab.slots[i];
}

/* Flow ends that no event on their row starts at. Only flows with one
   start and one finish are looked at: the others are wrong already. */
void dt__rd_check_flow_end_missing(ck *c, const ck_flow_end *fe)
{
    uint64_t v = flow_counts(c, fe->key);
    if (FLOW_STARTS(v) != 1 || FLOW_FINISHES(v) != 1)
        return;
    char a[32], idbuf[32];
    dt__rd_check_finding(c, KD_FLOW_UNBOUND, "flow id %s %s (event #%" PRIu64 ", %s, ts %s us) is not at the start of an event on its row",
                 flow_id_text(c, fe->key, idbuf, sizeof idbuf), fe->finish ? "finish" : "start", fe->index,
                 dt__strtab_key(&c->rows, fe->row), dt__rd_check_fmt_us(a, sizeof a, fe->ts));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every flow id with one start and one finish, in id order. */
void dt__rd_check_flows(ck *c)
{
    uint64_t *bad = NULL;
    size_t nbad = 0, cap = 0;
    for (size_t i = 0; c->flowtab.slots && i <= c->flowtab.mask; i++) {
        uint64_t v = c->flowtab.slots[i];
        if (!v || (FLOW_STARTS(v) == 1 && FLOW_FINISHES(v) == 1))
            continue;
        if (dt__vec_reserve_zeroed((void **)&bad, &cap, nbad + 1, sizeof *bad) != 0) {
            c->oom = true;
            break;
        }
        bad[nbad++] = v;
    }
    /* the packed word orders by key first */
    if (nbad > 1)
        qsort(bad, nbad, sizeof *bad, cmp_u64);
    char idbuf[32];
    for (size_t i = 0; i < nbad; i++) {
        uint64_t v = bad[i];
        unsigned starts = FLOW_STARTS(v), finishes = FLOW_FINISHES(v);
        uint64_t unused;
        bool twice = dt__u64map_get(&c->twice, (v >> 6) - 1, &unused);
        int kind = starts == 0 && finishes == 1          ? KD_FLOW_NO_START
                   : starts == 1 && finishes == 0        ? KD_FLOW_NO_FINISH
                   : starts <= 1 && !twice               ? KD_FLOW_FANOUT
                                                         : KD_FLOW_COUNT;
        dt__rd_check_finding(c, kind, "flow id %s has %u%s start(s) and %u%s finish(es), not one each",
                     flow_id_text(c, (v >> 6) - 1, idbuf, sizeof idbuf), FLOW_STARTS(v),
                     FLOW_STARTS(v) == 7 ? " or more" : "", FLOW_FINISHES(v), FLOW_FINISHES(v) == 7 ? " or more" : "");
    }
    free(bad);
}

void dt__rd_check_sort_flow_ends(ck *c)
{
    if (c->npending > 1)
        qsort(c->pending, c->npending, sizeof *c->pending, cmp_flow_end);
}

/* merge: a devtrace call given the External id of the torch.profiler
   cpu_op that launched it (the innermost op on its thread whose span
   contains the call's start), as Kineto's own linking gives. */
#include "reader/merge.h"

#include <stdint.h>
#include <stdlib.h>

static int ops_visit(void *user, const dt_rd_event *e)
{
    merger *m = user;
    if (e->ph[0] != 'X' || e->cat_kind != DT_RD_CAT_CPU_OP || !(e->has & DT_RD_HAS_EXTERNAL_ID) ||
        !e->tid.present || e->tid.is_str)
        return 0;
    if (dt__vec_reserve_zeroed((void **)&m->ops, &m->ops_cap, m->nops + 1, sizeof *m->ops) != 0) {
        m->oom = true;
        return 1;
    }
    m->ops[m->nops++] = (cpu_op){e->tid.num, e->ts_ns, dt__rd_add_sat(e->ts_ns, e->dur_ns), e->external_id, SIZE_MAX};
    return 0;
}

static int cmp_op(const void *x, const void *y)
{
    const cpu_op *a = x, *b = y;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end; /* enclosing first */
}

/* Each op's enclosing op on its thread (ops on a thread nest), so that the
   innermost op containing a time is found by walking up from the last op
   that starts by then: O(depth) per lookup. */
static void link_parents(merger *m)
{
    size_t *stack = NULL, depth = 0, cap = 0;
    for (size_t k = 0; k < m->nops; k++) {
        cpu_op *o = &m->ops[k];
        if (k > 0 && m->ops[k - 1].tid != o->tid)
            depth = 0;
        while (depth > 0 && m->ops[stack[depth - 1]].end < o->start)
            depth--;
        o->parent = depth > 0 ? stack[depth - 1] : SIZE_MAX;
        if (dt__vec_reserve_zeroed((void **)&stack, &cap, depth + 1, sizeof *stack) != 0) {
            m->oom = true;
            break;
        }
        stack[depth++] = k;
    }
    free(stack);
}

/* The innermost cpu_op of thread tid whose span contains t (torch-trace
   time), or NULL. */
static const cpu_op *innermost_op(const merger *m, int64_t tid, int64_t t)
{
    size_t lo = 0, hi = m->nops;
    while (lo < hi) { /* the first op after (tid, t) */
        size_t mid = lo + (hi - lo) / 2;
        const cpu_op *o = &m->ops[mid];
        if (o->tid < tid || (o->tid == tid && o->start <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || m->ops[lo - 1].tid != tid)
        return NULL;
    for (size_t k = lo - 1; k != SIZE_MAX; k = m->ops[k].parent)
        if (m->ops[k].end >= t)
            return &m->ops[k];
    return NULL;
}

typedef struct link_ctx {
    merger *m;
    input *in;
    int64_t to_torch_ns; /* devtrace ts -> torch trace ts */
} link_ctx;

static int link_visit(void *user, const dt_rd_event *e)
{
    link_ctx *l = user;
    if (e->ph[0] != 'X' || !dt__rd_cat_is_api(e->cat_kind) || !(e->has & DT_RD_HAS_CORRELATION) || !e->tid.present ||
        e->tid.is_str)
        return 0;
    const cpu_op *op = innermost_op(l->m, e->tid.num, e->ts_ns + l->to_torch_ns);
    if (!op)
        return 0;
    uint64_t *slot = dt__u64map_slot(&l->m->corr_ext, e->correlation, NULL);
    if (!slot) {
        l->m->oom = true;
        return 1;
    }
    *slot = op->ext + 1; /* 0: none */
    return 0;
}


int dt__rd_merge_link_group(merger *m, int gi, input *torch)
{
    /* the torch trace's cpu_ops, then each devtrace call's op */
    m->nops = 0;
    dt_rd_summary s;
    if (dt__rd_merge_read_input(m, torch, ops_visit, m, 0, &s) != 0) {
        dt__rd_summary_free(&s);
        return -1;
    }
    dt__rd_summary_free(&s);
    if (m->nops > 1)
        qsort(m->ops, m->nops, sizeof *m->ops, cmp_op);
    link_parents(m);
    if (m->oom)
        return -1;
    for (int i = 0; i < m->nin; i++) {
        input *in = &m->in[i];
        if (in->group != gi || !in->devtrace)
            continue;
        link_ctx l = {m, in, in->ts_delta_ns - torch->ts_delta_ns};
        if (dt__rd_merge_read_input(m, in, link_visit, &l, 0, &s) != 0) {
            dt__rd_summary_free(&s);
            return -1;
        }
        dt__rd_summary_free(&s);
    }
    return 0;
}

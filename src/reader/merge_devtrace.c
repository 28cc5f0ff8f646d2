/* merge: the merged trace's devtrace key (loss, notes, clocks, ranks) and
   deviceProperties. */
#include "reader/merge.h"

#include <inttypes.h>
#include <stdlib.h>

static void copy_spill(dt_out *o, FILE *f)
{
    rewind(f);
    uint64_t a, b;
    bool first = true;
    while (fscanf(f, "%" SCNu64 " %" SCNu64, &a, &b) == 2) {
        out_text(o, first ? "\n    \"" : ",\n    \"");
        first = false;
        out_u64(o, a);
        out_text(o, "\": ");
        out_u64(o, b);
    }
}


/* The host of input i, or of the trace of the same process merged with it
   (a torch.profiler trace names none). */
static const char *group_host(const merger *m, int i)
{
    const char *h = dt__rd_merge_input_host(&m->in[i]);
    for (int j = 0; !h && j < m->nin; j++)
        if (j != i && m->in[j].group == m->in[i].group)
            h = dt__rd_merge_input_host(&m->in[j]);
    return h;
}

/* What the inputs allow us to say about how their clocks agree. A trace
   that names no host (a foreign one, or one written before devtrace named
   hosts) may come from any host: its clock's offset from the others is
   unknown, and the note says which traces those are. */
void dt__rd_merge_clock_agreement(merger *m, char *buf, size_t n)
{
    const char *first_host = NULL;
    bool several = false;
    int unnamed = 0;
    char unnamed_list[256] = "";
    double max_bound_ns = 0;
    for (int i = 0; i < m->nin; i++) {
        const char *h = group_host(m, i);
        if (!h) {
            size_t used = strlen(unnamed_list);
            if (used + 8 < sizeof unnamed_list)
                snprintf(unnamed_list + used, sizeof unnamed_list - used, "%s%.*s", unnamed++ ? ", " : "",
                         (int)(sizeof unnamed_list - used - 8), m->in[i].path);
            else
                unnamed++;
        } else if (!first_host) {
            first_host = h;
        } else if (strcmp(h, first_host) != 0) {
            several = true;
        }
        if (m->in[i].sum.has_clock && m->in[i].sum.clock_error_bound_ns > max_bound_ns)
            max_bound_ns = m->in[i].sum.clock_error_bound_ns;
    }
    char named[768];
    if (!first_host) {
        snprintf(named, sizeof named, "no trace names its host: whether they share a clock is unknown, so they may "
                                      "be offset by an unknown amount");
    } else if (!several) {
        snprintf(named, sizeof named,
                 "every trace %scomes from host %s and is on its CLOCK_REALTIME: no offset between them; device times "
                 "were mapped to it within %.0f ns (the largest clock errorBoundNs)",
                 unnamed ? "that names its host " : "", first_host, max_bound_ns);
    } else {
        /* each host's clock is within maxErrorUs of true time when its
           NTP/PTP daemon keeps it synchronized: two hosts agree within the
           sum */
        double worst = 0;
        bool bounded = true;
        for (int i = 0; i < m->nin; i++) {
            const input *a = &m->in[i];
            for (int j = i + 1; j < m->nin; j++) {
                const input *b = &m->in[j];
                const char *ha = group_host(m, i), *hb = group_host(m, j);
                if (!ha || !hb || strcmp(ha, hb) == 0)
                    continue;
                if (!a->sum.has_host_max_error || !b->sum.has_host_max_error || !a->sum.host_synchronized ||
                    !b->sum.host_synchronized) {
                    bounded = false;
                    continue;
                }
                double us = (double)(a->sum.host_max_error_us + b->sum.host_max_error_us);
                if (us > worst)
                    worst = us;
            }
        }
        if (bounded)
            snprintf(named, sizeof named,
                     "traces come from several hosts, each on its own CLOCK_REALTIME, not aligned by merge: ranks on "
                     "different hosts may be offset by up to %.0f us (the sum of the hosts' NTP maxerror), plus %.0f "
                     "ns of device clock mapping",
                     worst, max_bound_ns);
        else
            snprintf(named, sizeof named,
                     "traces come from several hosts, each on its own CLOCK_REALTIME, not aligned by merge: at least "
                     "one host's clock was not synchronized (or its bound is unknown), so ranks on different hosts "
                     "may be offset by an unknown amount");
    }
    if (unnamed && first_host)
        snprintf(buf, n, "%s; %d trace%s name%s no host (%s): %s clock may be offset from the others by an unknown "
                         "amount",
                 named, unnamed, unnamed == 1 ? "" : "s", unnamed == 1 ? "s" : "", unnamed_list,
                 unnamed == 1 ? "its" : "their");
    else
        snprintf(buf, n, "%s", named);
}

void dt__rd_merge_write_devtrace_key(merger *m, dt_out *o, const char *agreement)
{
    out_text(o, "\"devtrace\": {\n  \"version\": ");
    out_str(o, DT_VERSION_STRING);
    out_text(o, ",\n  \"backend\": \"merged\",\n  \"captureWindow\": {\"startNs\": ");
    out_i64(o, m->window_start);
    out_text(o, ", \"endNs\": ");
    out_i64(o, m->window_end);
    out_text(o, "},\n  \"loss\": {");
    int64_t total = 0;
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        const char *reason = dt_loss_reason_name((dt_loss_reason)r);
        int64_t sum = 0;
        for (int i = 0; i < m->nin; i++)
            for (size_t k = 0; k < m->in[i].sum.loss.count; k++)
                if (strcmp(m->in[i].sum.loss.items[k].key, reason) == 0)
                    sum = dt__rd_add_sat(sum, m->in[i].sum.loss.items[k].value);
        total = dt__rd_add_sat(total, sum);
        out_text(o, r ? ", \"" : "\"");
        out_text(o, reason);
        out_text(o, "\": ");
        out_i64(o, sum);
    }
    out_text(o, ", \"total\": ");
    out_i64(o, total);
    out_text(o, "},\n  \"notes\": {\"clockAgreement\": ");
    out_str(o, agreement);
    out_text(o, "},\n  \"ranks\": [");
    for (int gi = 0; gi < m->ngroups; gi++) {
        for (int i = 0; i < m->nin; i++) {
            const input *in = &m->in[i];
            if (in->group != gi)
                continue;
            const dt_rd_summary *s = &in->sum;
            out_text(o, gi || i != m->groups[0].first_input ? ",\n    {\"label\": " : "\n    {\"label\": ");
            out_str(o, m->groups[gi].label);
            if (s->has_rank) {
                /* no space after the colon: HTA takes the first "rank": N of a file as its rank */
                out_text(o, ", \"rank\":");
                out_i64(o, s->rank);
            }
            out_text(o, ", \"file\": ");
            out_str(o, in->path);
            out_text(o, ", \"format\": ");
            out_str(o, in->devtrace ? "devtrace" : "foreign");
            if (dt__rd_merge_input_host(in)) {
                out_text(o, ", \"host\": ");
                out_str(o, dt__rd_merge_input_host(in));
            }
            if (in->has_main_pid) {
                out_text(o, ", \"pid\": ");
                out_i64(o, in->main_pid);
                out_text(o, ", \"pidInMerged\": ");
                out_i64(o, in->main_pid + (int64_t)m->groups[gi].rank_pos * PID_STRIDE);
            }
            if (s->has_clock) {
                out_text(o, ", \"clockErrorBoundNs\": ");
                out_i64(o, (int64_t)s->clock_error_bound_ns);
            }
            if (s->has_host_max_error) {
                out_text(o, ", \"hostClockSynchronized\": ");
                out_text(o, s->host_synchronized ? "true" : "false");
                out_text(o, ", \"hostClockMaxErrorUs\": ");
                out_i64(o, s->host_max_error_us);
            }
            out_text(o, ", \"loss\": {");
            for (size_t k = 0; k < s->loss.count; k++) {
                out_text(o, k ? ", " : "");
                out_str(o, s->loss.items[k].key);
                out_text(o, ": ");
                out_i64(o, s->loss.items[k].value);
            }
            out_text(o, "}, \"notes\": {");
            for (size_t k = 0; k < s->notes.count; k++) {
                out_text(o, k ? ", " : "");
                out_str(o, s->notes.items[k].key);
                out_text(o, ": ");
                out_str(o, s->notes.items[k].text);
            }
            out_text(o, "}}");
        }
    }
    out_text(o, "\n  ],\n  \"attribution\": {");
    copy_spill(o, m->spill_attr);
    out_text(o, "},\n  \"externalParents\": {");
    copy_spill(o, m->spill_parents);
    out_text(o, "}\n}");
}

/* Every input's deviceProperties, rank by rank, each "id" moved as its
   device's pid is (a device listed by both traces of a process once). */
void dt__rd_merge_write_devices(merger *m, dt_out *o)
{
    int64_t *seen = NULL;
    size_t nseen = 0, cap = 0, written = 0;
    for (int gi = 0; gi < m->ngroups; gi++) {
        for (int i = 0; i < m->nin; i++) {
            const input *in = &m->in[i];
            if (in->group != gi)
                continue;
            for (size_t k = 0; k < in->ndevices; k++) {
                const char *raw = in->devices[k];
                dt_rd_span id = in->device_ids[k];
                int64_t moved = 0;
                bool has_id = id.len > 0 && id.len < 24;
                if (has_id) {
                    char text[24];
                    memcpy(text, raw + id.off, id.len);
                    text[id.len] = '\0';
                    char *end;
                    long long v = strtoll(text, &end, 10);
                    has_id = *end == '\0';
                    moved = (int64_t)v + (int64_t)m->groups[gi].rank_pos * PID_STRIDE;
                }
                bool dup = false;
                for (size_t j = 0; has_id && j < nseen && !dup; j++)
                    dup = seen[j] == moved;
                if (dup)
                    continue;
                if (has_id && dt__vec_reserve_zeroed((void **)&seen, &cap, nseen + 1, sizeof *seen) == 0)
                    seen[nseen++] = moved;
                out_text(o, written++ ? ",\n  " : "\n  ");
                if (has_id) {
                    dt__out_write(o, raw, id.off);
                    out_i64(o, moved);
                    out_text(o, raw + id.off + id.len);
                } else {
                    out_text(o, raw);
                }
            }
        }
    }
    if (written)
        out_text(o, "\n");
    free(seen);
}


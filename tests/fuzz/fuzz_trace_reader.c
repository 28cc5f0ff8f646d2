/*
 * Fuzzes the trace reader and the check and stats engines on arbitrary
 * bytes (plain or gzip JSON, or Perfetto protobuf, devtrace's or damaged):
 * no input may crash, hang or leak, and the
 * reader's result may not depend on its window: read again through a
 * window of a few bytes (so that every token and event crosses the
 * window's end), with DT_RD_RAW and with DT_RD_RAW_IF_JSON, it must see the
 * same events and end with the same error at the same byte.
 */
#include "cli/commands.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= UINT64_C(0x100000001b3);
    return h ^ (h >> 29);
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = mix(h, (unsigned char)*s);
    return mix(h, 0x100);
}

static uint64_t mix_bytes(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = mix(h, (unsigned char)s[i]);
    return mix(h, 0x100 + n);
}

/* Everything an event carries, folded into one number; every string is
   read to its end, so that a dangling pointer would be caught. */
static int fold_event(void *user, const dt_rd_event *e)
{
    uint64_t *h = user;
    *h = mix(*h, e->index);
    *h = mix(*h, e->offset);
    *h = mix(*h, e->has);
    *h = mix_str(*h, e->ph);
    *h = mix_str(*h, e->cat);
    *h = mix_str(*h, e->name);
    *h = mix_str(*h, e->bp);
    *h = mix_str(*h, e->id);
    *h = mix(*h, (uint64_t)e->cat_kind);
    *h = mix(*h, e->cat_len == strlen(e->cat) && e->name_len == strlen(e->name));
    *h = mix(*h, e->pid.present | e->pid.is_str << 1 | e->tid.present << 2 | e->tid.is_str << 3);
    *h = mix(*h, (uint64_t)e->pid.num);
    *h = mix(*h, (uint64_t)e->tid.num);
    if (e->pid.is_str)
        *h = mix_str(*h, e->pid.str);
    if (e->tid.is_str)
        *h = mix_str(*h, e->tid.str);
    *h = mix(*h, (uint64_t)e->ts_ns);
    *h = mix(*h, (uint64_t)e->dur_ns);
    *h = mix(*h, e->id_is_str);
    *h = mix(*h, e->external_id);
    *h = mix(*h, e->correlation);
    *h = mix(*h, e->bytes);
    *h = mix(*h, e->parent);
    *h = mix(*h, (uint64_t)e->device);
    *h = mix(*h, (uint64_t)e->stream);
    *h = mix(*h, (uint64_t)e->cbid);
    *h = mix_str(*h, e->arg_name);
    *h = mix_str(*h, e->arg_labels);
    *h = mix(*h, (uint64_t)e->sort_index);
    *h = mix(*h, e->odd_args);
    *h = mix(*h, e->string_args);
    for (int i = 0; i < 3; i++) {
        if (e->has & DT_RD_HAS_GRID)
            *h = mix(*h, (uint32_t)e->grid[i]);
        if (e->has & DT_RD_HAS_BLOCK)
            *h = mix(*h, (uint32_t)e->block[i]);
    }
    if (e->has & DT_RD_HAS_COLLECTIVE_NAME)
        *h = mix_bytes(*h, e->collective, e->collective_len);
    if (e->has & DT_RD_HAS_GROUP)
        *h = mix_bytes(*h, e->group, e->group_len);
    if (e->raw) {
        /* the event's text, and each located value inside it */
        if (e->raw_len < 2 || e->raw[0] != '{' || e->raw[e->raw_len - 1] != '}')
            abort();
        for (int k = 0; k < DT_RD_AT_COUNT; k++)
            if (e->at[k].len && (uint64_t)e->at[k].off + e->at[k].len > e->raw_len)
                abort();
    }
    return 0;
}

typedef struct reading {
    int rc;
    int format;
    uint64_t events, hash, bytes;
    char err[512];
} reading;

static void read_once(const uint8_t *data, size_t size, size_t window, unsigned flags, reading *r)
{
    memset(r, 0, sizeof *r);
    dt_rd_source *src = dt__rd_open_memory(data, size);
    if (!src)
        abort();
    dt_rd_summary sum;
    dt_rd_options o = {.visit = fold_event, .user = &r->hash, .flags = flags, .window = window};
    r->rc = dt__rd_read_opts(src, &o, &sum, r->err, sizeof r->err);
    r->events = sum.event_count;
    r->bytes = sum.bytes;
    r->format = sum.format;
    dt__rd_summary_free(&sum);
    dt__rd_close(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    if (!sink)
        return 0;

    reading whole, small, raw, text_if_json;
    read_once(data, size, 0, 0, &whole);
    read_once(data, size, 1 + (size % 13), 0, &small);
    read_once(data, size, 1 + (size % 7), DT_RD_RAW, &raw);
    read_once(data, size, 1 + (size % 5), DT_RD_RAW_IF_JSON, &text_if_json);
    /* a Perfetto trace has no JSON text to hand out: the raw reading
       refuses it, and the other three must agree */
    if (whole.format == DT_RD_FORMAT_PERFETTO) {
        if (raw.rc != -1 || !strstr(raw.err, "Perfetto protobuf trace: only JSON traces"))
            abort();
        raw = whole;
    }
    /* the text readings fold nothing the others lack but their
       checks; all four must agree */
    if (whole.rc != small.rc || whole.events != small.events || whole.hash != small.hash ||
        strcmp(whole.err, small.err) != 0 || whole.rc != raw.rc || whole.events != raw.events ||
        whole.hash != raw.hash || strcmp(whole.err, raw.err) != 0 || whole.rc != text_if_json.rc ||
        whole.events != text_if_json.events || whole.hash != text_if_json.hash ||
        strcmp(whole.err, text_if_json.err) != 0) {
        fprintf(stderr, "window changes the result: rc %d/%d/%d/%d, events %llu/%llu/%llu/%llu, err \"%s\" / "
                        "\"%s\" / \"%s\" / \"%s\"\n",
                whole.rc, small.rc, raw.rc, text_if_json.rc, (unsigned long long)whole.events,
                (unsigned long long)small.events, (unsigned long long)raw.events,
                (unsigned long long)text_if_json.events, whole.err, small.err, raw.err, text_if_json.err);
        abort();
    }

    dt_rd_source *src = dt__rd_open_memory(data, size);
    if (src) {
        dt__check_source(src, "fuzz", sink, sink);
        dt__rd_close(src);
    }
    src = dt__rd_open_memory(data, size);
    if (src) {
        dt__stats_source(src, "fuzz", NULL, size % 2 == 0, sink, sink);
        dt__rd_close(src);
    }
    return 0;
}

/* The record protocol's line: its writer and its parser (record.h). */
#include "protocol/record.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const state_names[DT_RECORD_STATE_COUNT] = {
    [DT_RECORD_STARTED] = "started", [DT_RECORD_WROTE] = "wrote", [DT_RECORD_EMPTY] = "empty",
    [DT_RECORD_FAILED] = "failed",   [DT_RECORD_OFF] = "off",     [DT_RECORD_NOTE] = "note",
    [DT_RECORD_DUMPED] = "dumped",   [DT_RECORD_DUMP_FAILED] = "dump_failed", [DT_RECORD_ENDED] = "ended",
    [DT_RECORD_LISTENING] = "listening", [DT_RECORD_NOT_LISTENING] = "not_listening",
    [DT_RECORD_CAPTURED] = "captured",
};

const char *dt__record_state_name(dt_record_state state)
{
    return (unsigned)state < DT_RECORD_STATE_COUNT ? state_names[state] : NULL;
}

int dt__record_state_by_name(const char *name)
{
    for (int s = 0; s < DT_RECORD_STATE_COUNT; s++)
        if (strcmp(name, state_names[s]) == 0) return s;
    return -1;
}

uint64_t dt__record_loss_summary(char *buf, size_t n, const uint64_t loss[DT_LOSS_COUNT])
{
    unsigned long long total = 0;
    char lost[2048] = "";
    for (int r = 0; r < DT_LOSS_COUNT; r++) {
        if (!loss[r]) continue;
        total += loss[r];
        size_t used = strlen(lost);
        snprintf(lost + used, sizeof lost - used, "%s%s %llu", used ? ", " : "",
                 dt_loss_reason_name((dt_loss_reason)r), (unsigned long long)loss[r]);
    }
    if (total) snprintf(buf, n, "LOST %llu records (%s)", total, lost);
    else snprintf(buf, n, "nothing lost");
    return total;
}

static int is_start(dt_record_state s)
{
    return s == DT_RECORD_STARTED || s == DT_RECORD_OFF || s == DT_RECORD_LISTENING || s == DT_RECORD_NOT_LISTENING;
}

/* the states whose line is a dt_record_end */
static int is_end(dt_record_state s)
{
    return s == DT_RECORD_WROTE || s == DT_RECORD_EMPTY || s == DT_RECORD_FAILED || s == DT_RECORD_DUMPED ||
           s == DT_RECORD_DUMP_FAILED || s == DT_RECORD_ENDED;
}

void dt__record_tag_path(char *out, size_t n, const char *path, const char *tag)
{
    const char *ext = path + strlen(path) - dt_format_suffix_length(path);
    snprintf(out, n, "%.*s.%s%s", (int)(ext - path), path, tag, ext);
}

void dt__record_line_init(dt_record_line *line, dt_record_state state, int pid)
{
    memset(line, 0, sizeof *line);
    line->pid = pid;
    line->state = state;
}

char *dt__record_message(dt_record_line *line)
{
    if (is_start(line->state)) return line->u.start.message;
    if (is_end(line->state)) return line->u.end.message;
    return line->u.note.message;
}

char *dt__record_path(dt_record_line *line)
{
    if (is_start(line->state)) return line->u.start.path;
    if (is_end(line->state)) return line->u.end.path;
    return NULL;
}

/* ---- writer ---- */

typedef struct out {
    char *buf;
    size_t n, len;
    int full;
} out;

static void put(out *o, const char *s, size_t k)
{
    if (o->full || o->len + k >= o->n) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, s, k);
    o->len += k;
}

static void put_str(out *o, const char *s)
{
    put(o, s, strlen(s));
}

static int breaks_line(char c)
{
    return c == '\t' || c == '\n' || c == '\r';
}

void dt__record_one_line(char *text)
{
    for (; *text; text++)
        if (breaks_line(*text)) *text = ' ';
}

/* A value: backslash, tab, newline and carriage return escaped; with
   one_line, tabs and line breaks are spaces instead (a message). */
static void put_value(out *o, const char *s, int one_line)
{
    for (; *s; s++) {
        char c = *s;
        const char *esc = NULL;
        if (breaks_line(c)) {
            if (one_line) c = ' ';
            else esc = c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r";
        } else if (c == '\\') {
            esc = "\\\\";
        }
        if (esc) put(o, esc, 2);
        else put(o, &c, 1);
    }
}

static void put_u64(out *o, const char *key, uint64_t v)
{
    char num[64];
    int k = snprintf(num, sizeof num, "\t%s=%llu", key, (unsigned long long)v);
    put(o, num, (size_t)k);
}

size_t dt__record_format(char *buf, size_t n, const dt_record_line *line)
{
    const char *state = dt__record_state_name(line->state);
    if (!buf || n == 0 || !state) return 0;
    out o = {buf, n, 0, 0};
    char head[64];
    int k = snprintf(head, sizeof head, "%d\t%s", line->pid, state);
    put(&o, head, (size_t)k);
    const char *path = "", *message = "";
    if (is_end(line->state)) {
        const dt_record_end *e = &line->u.end;
        if (e->has_counts) {
            put_str(&o, "\tbackend=");
            put_value(&o, e->backend, 0);
            put_u64(&o, "events", e->events);
            for (int r = 0; r < DT_LOSS_COUNT; r++) {
                char key[64];
                snprintf(key, sizeof key, "loss.%s", dt_loss_reason_name((dt_loss_reason)r));
                put_u64(&o, key, e->loss[r]);
            }
        }
        path = e->path;
        message = e->message;
    } else if (is_start(line->state)) {
        path = line->u.start.path;
        message = line->u.start.message;
    } else {
        message = line->u.note.message;
    }
    if (path[0]) {
        put_str(&o, "\tpath=");
        put_value(&o, path, 0);
    }
    if (message[0]) {
        put_str(&o, "\tmessage=");
        put_value(&o, message, 1);
    }
    put(&o, "\n", 1);
    if (o.full) {
        buf[0] = 0;
        return 0;
    }
    buf[o.len] = 0;
    return o.len;
}

int dt__record_append(const char *log_path, const dt_record_line *line)
{
    char *text = malloc(DT_RECORD_LINE_MAX);
    if (!text) return ENOMEM;
    size_t len = dt__record_format(text, DT_RECORD_LINE_MAX, line);
    int err = 0;
    if (len == 0) {
        err = EINVAL;
    } else {
        int fd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) {
            err = errno;
        } else {
            ssize_t w = write(fd, text, len); /* one write: lines of processes do not mix */
            if (w < 0) err = errno;
            else if ((size_t)w != len) err = EIO;
            close(fd);
        }
    }
    free(text);
    return err;
}

/* ---- parser ---- */

/* Copy the value s[0..k) into out (n bytes), undoing the escapes; cut to fit. */
static void get_value(char *dst, size_t n, const char *s, size_t k)
{
    size_t o = 0;
    for (size_t i = 0; i < k && o + 1 < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < k) {
            char e = s[++i];
            c = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e;
        }
        dst[o++] = c;
    }
    dst[o] = 0;
}

static int get_u64(const char *s, size_t k, uint64_t *v)
{
    char num[32];
    if (k == 0 || k >= sizeof num) return -1;
    memcpy(num, s, k);
    num[k] = 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(num, &end, 10);
    if (*end || errno || num[0] == '-') return -1;
    *v = x;
    return 0;
}

static int key_is(const char *key, size_t klen, const char *want)
{
    return strlen(want) == klen && memcmp(key, want, klen) == 0;
}

static void parse_field(dt_record_line *line, const char *key, size_t klen, const char *val, size_t vlen)
{
    char *path = dt__record_path(line);
    if (key_is(key, klen, "message")) {
        get_value(dt__record_message(line), DT_RECORD_MESSAGE_MAX, val, vlen);
        return;
    }
    if (key_is(key, klen, "path")) {
        if (path) get_value(path, DT_RECORD_PATH_MAX, val, vlen);
        return;
    }
    if (!is_end(line->state)) return;
    dt_record_end *e = &line->u.end;
    if (key_is(key, klen, "backend")) {
        get_value(e->backend, sizeof e->backend, val, vlen);
        e->has_counts = 1;
    } else if (key_is(key, klen, "events")) {
        if (get_u64(val, vlen, &e->events) == 0) e->has_counts = 1;
    } else if (klen > 5 && memcmp(key, "loss.", 5) == 0) {
        for (int r = 0; r < DT_LOSS_COUNT; r++)
            if (key_is(key + 5, klen - 5, dt_loss_reason_name((dt_loss_reason)r))) {
                if (get_u64(val, vlen, &e->loss[r]) == 0) e->has_counts = 1;
                break;
            }
    }
}

int dt__record_parse(const char *text, dt_record_line *line)
{
    size_t len = strcspn(text, "\n");
    const char *end = text + len;
    const char *tab = memchr(text, '\t', len);
    if (!tab || tab == text) return -1;
    char pid[16];
    size_t plen = (size_t)(tab - text);
    if (plen >= sizeof pid) return -1;
    memcpy(pid, text, plen);
    pid[plen] = 0;
    char *pend;
    long p = strtol(pid, &pend, 10);
    if (*pend || p <= 0 || p > INT32_MAX) return -1;

    const char *s = tab + 1;
    const char *next = memchr(s, '\t', (size_t)(end - s));
    if (!next) next = end;
    char state[16];
    size_t slen = (size_t)(next - s);
    if (slen >= sizeof state) return -1;
    memcpy(state, s, slen);
    state[slen] = 0;
    int st = dt__record_state_by_name(state);
    if (st < 0) return -1;
    dt__record_line_init(line, (dt_record_state)st, (int)p);

    for (s = next; s < end; s = next) {
        s++; /* the tab */
        next = memchr(s, '\t', (size_t)(end - s));
        if (!next) next = end;
        const char *eq = memchr(s, '=', (size_t)(next - s));
        if (!eq) continue;
        parse_field(line, s, (size_t)(eq - s), eq + 1, (size_t)(next - eq - 1));
    }
    return 0;
}

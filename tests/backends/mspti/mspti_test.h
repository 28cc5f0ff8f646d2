/*
 * What the MSPTI tests share: the emulator (DT_EMULATOR, or the late-2024
 * release), its emu_* API, sessions on the mspti backend, and one process
 * per case (the vendor interface is process-wide; a case that needs
 * libmspti.so preloaded starts its process with it).
 */
#ifndef MSPTI_TEST_H
#define MSPTI_TEST_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "devtrace_emu.h"
#include "dt_check.h"
#include "dt_internal.h"
#include "cli/commands.h"

#define EMULATOR_2024 DT_BINARY_DIR "/emu/mspti_2024/libmspti.so"

static void *g_lib;

static DT_CHECK_UNUSED void *sym(const char *name)
{
    void *p = dlsym(g_lib, name);
    REQUIRE(p != NULL, "the emulator lacks %s", name);
    return p;
}

#define EMU(fn) ((__typeof__(&fn))sym(#fn))

static DT_CHECK_UNUSED void open_emulator(const char *path)
{
    REQUIRE(setenv("DEVTRACE_MSPTI_LIBRARY", path, 1) == 0, "setenv");
    g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(g_lib, "cannot load %s: %s", path, dlerror());
    REQUIRE(EMU(emu_init)() == 0, "emu_init");
}

static DT_CHECK_UNUSED dt_session *start_session_with(uint32_t capture, uint32_t buffer_count, size_t buffer_size)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "mspti";
    if (capture) c.capture = capture;
    if (buffer_count) c.buffer_count = buffer_count;
    if (buffer_size) c.buffer_size = buffer_size;
    dt_session *s = NULL;
    REQUIRE(dt_session_create(&c, &s) == DT_OK, "create: %s", dt_last_error());
    REQUIRE(dt_session_start(s) == DT_OK, "start: %s", dt_last_error());
    return s;
}

static DT_CHECK_UNUSED dt_session *start_session(void) { return start_session_with(0, 0, 0); }

static DT_CHECK_UNUSED void stop_session(dt_session *s)
{
    REQUIRE(dt_session_stop(s) == DT_OK, "stop: %s", dt_last_error());
}

static DT_CHECK_UNUSED size_t count_kind(const dt_session *s, dt_event_kind kind)
{
    size_t n = 0, all = dt_session_event_count(s);
    for (size_t i = 0; i < all; i++) {
        dt_event ev;
        dt_session_event(s, i, &ev);
        n += ev.kind == kind;
    }
    return n;
}

static DT_CHECK_UNUSED const char *note_text(const dt_session *s, const char *key)
{
    const char *k, *text;
    for (size_t i = 0; dt_session_note_at(s, i, &k, &text); i++)
        if (strcmp(k, key) == 0) return text;
    return NULL;
}

/* Is libmspti.so in this process's LD_PRELOAD? */
static DT_CHECK_UNUSED int preloaded_now(void)
{
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "libmspti.so");
}

/* Start this process again with `library` preloaded (sanitizer runtimes
   first), running only `test`. */
static DT_CHECK_UNUSED void rerun_preloaded(char **argv, const char *library, const char *test)
{
    char san[8192], ld[16384];
    dt__sanitizer_runtimes(san, sizeof san);
    snprintf(ld, sizeof ld, "%s%s%s", san, san[0] ? ":" : "", library);
    REQUIRE(setenv("LD_PRELOAD", ld, 1) == 0, "setenv");
    char *args[] = {argv[0], (char *)test, NULL};
    execv("/proc/self/exe", args);
    FAIL("cannot run %s again with LD_PRELOAD=%s", argv[0], ld);
}

/* Each case in its own process: `prog CASE` runs one. */
static int run_each_in_own_process(int argc, char **argv, const dt_test *tests, size_t count)
{
    if (!DT_EMULATOR[0]) SKIP("the MSPTI emulator was not built");
    return dt_test_main_each_in_own_process(argc, argv, tests, count);
}

/* Events of a written trace by category ("kernel" counts collectives
   apart, as "collective"). */
typedef struct trace_counts {
    size_t kernel, collective, memcpy, memset, runtime, user_annotation;
} trace_counts;

static int count_trace_event(void *user, const dt_rd_event *e)
{
    trace_counts *t = user;
    if (strcmp(e->ph, "X") != 0) return 0;
    if (strcmp(e->cat, "kernel") == 0) {
        if (e->has & DT_RD_HAS_COLLECTIVE) t->collective++;
        else t->kernel++;
    }
    t->memcpy += strcmp(e->cat, "gpu_memcpy") == 0;
    t->memset += strcmp(e->cat, "gpu_memset") == 0;
    t->runtime += strcmp(e->cat, "privateuse1_runtime") == 0;
    t->user_annotation += strcmp(e->cat, "user_annotation") == 0;
    return 0;
}

static DT_CHECK_UNUSED trace_counts read_trace_counts(const char *path)
{
    trace_counts t = {0};
    char err[512];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src, "%s", err);
    dt_rd_summary sum;
    REQUIRE(dt__rd_read(src, count_trace_event, &t, &sum, err, sizeof err) == 0, "%s: %s", path, err);
    dt__rd_summary_free(&sum);
    dt__rd_close(src);
    return t;
}

/* `devtrace check` of a written trace passes. */
static DT_CHECK_UNUSED void check_trace_file(const char *path)
{
    char err[512];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src, "%s", err);
    int rc = dt__check_source(src, path, stdout, stderr);
    dt__rd_close(src);
    CHECK_EQ(rc, 0);
}

/* `devtrace stats --format csv --report <reports>` of a written trace
   (to free). */
static DT_CHECK_UNUSED char *stats_csv(const char *path, const char *reports)
{
    char err[512];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src, "%s", err);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    REQUIRE(out);
    CHECK_EQ(dt__stats_source(src, path, reports, true, out, stderr), 0);
    fclose(out);
    dt__rd_close(src);
    return text;
}

/* A written file holds `text`. */
static DT_CHECK_UNUSED void file_contains(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f, "%s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    int found = 0;
    for (size_t i = 0; !found && i + strlen(text) <= n; i++) found = memcmp(buf + i, text, strlen(text)) == 0;
    CHECK(found, "%s does not contain \"%s\"", path, text);
}

/* The bytes of a .pftrace with its packet bundles inflated: enough to find
   the strings Perfetto interns (arg names, names). */
static DT_CHECK_UNUSED size_t read_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *at < n && shift < 64; shift += 7) {
        uint8_t b = p[(*at)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

static DT_CHECK_UNUSED void pftrace_contains(const char *path, const char *text)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f, "%s", path);
    static uint8_t raw[1 << 20], flat[4 << 20];
    size_t n = fread(raw, 1, sizeof raw, f), used = 0;
    fclose(f);
    /* Trace: field 1, TracePacket; in it field 50, compressed_packets */
    for (size_t at = 0; at < n;) {
        uint64_t tag = 0, len = 0;
        REQUIRE(read_varint(raw, n, &at, &tag) && (tag & 7) == 2 && read_varint(raw, n, &at, &len) &&
                    len <= n - at, "%s: not a trace of packets", path);
        size_t end = at + len;
        for (size_t q = at; q < end;) {
            uint64_t ftag, flen = 0, skip;
            REQUIRE(read_varint(raw, end, &q, &ftag), "packet");
            if ((ftag & 7) == 0) { REQUIRE(read_varint(raw, end, &q, &skip), "varint"); continue; }
            if ((ftag & 7) == 1) { q += 8; continue; }
            if ((ftag & 7) == 5) { q += 4; continue; }
            REQUIRE((ftag & 7) == 2 && read_varint(raw, end, &q, &flen) && flen <= end - q, "field");
            if (ftag >> 3 == 50) {
                uLongf out = (uLongf)(sizeof flat - used);
                REQUIRE(uncompress(flat + used, &out, raw + q, (uLong)flen) == Z_OK, "inflate");
                used += out;
            } else if (used + flen <= sizeof flat) {
                memcpy(flat + used, raw + q, flen);
                used += flen;
            }
            q += flen;
        }
        at = end;
    }
    int found = 0;
    for (size_t i = 0; !found && i + strlen(text) <= used; i++) found = memcmp(flat + i, text, strlen(text)) == 0;
    CHECK(found, "%s does not hold \"%s\"", path, text);
}

#define MSPTI_TEST_MAIN(...)                                                                           \
    int main(int argc, char **argv)                                                                    \
    {                                                                                                  \
        g_argv = argv;                                                                                 \
        static const dt_test tests_[] = {__VA_ARGS__};                                                 \
        return run_each_in_own_process(argc, argv, tests_, sizeof tests_ / sizeof tests_[0]);         \
    }

static DT_CHECK_UNUSED char **g_argv;

#endif

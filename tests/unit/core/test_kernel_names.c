/*
 * Kernel names as the decoders keep them: demangled whole, or kept whole as
 * the vendor gave them when they do not demangle; the demangler's own length
 * limit and devtrace's cap on corrupt names are counted and noted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "dt_check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_internal_core.h"

/* "_Z<k>aaa...av": a valid mangled name of exactly len bytes (len >= 6). */
static char *ident_name(size_t len)
{
    char *n = malloc(len + 1);
    REQUIRE((n) != NULL);
    for (size_t digits = 1; digits <= 8; digits++) {
        size_t k = len - 3 - digits;
        char num[32];
        if ((size_t)snprintf(num, sizeof num, "%zu", k) != digits)
            continue;
        memcpy(n, "_Z", 2);
        memcpy(n + 2, num, digits);
        memset(n + 2 + digits, 'a', k);
        memcpy(n + 2 + digits + k, "v", 2);
        REQUIRE_EQ(strlen(n), len);
        return n;
    }
    FAIL("no name of %zu bytes", len);
    return NULL;
}

static dt_session *started_session(void)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&cfg, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    return s;
}

static const char *note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0)
            return s->notes[i].text;
    return NULL;
}

static uint32_t decode_name(dt_session *s, const char *raw)
{
    dt_decode_cache cache;
    dt__decode_cache_init(&cache);
    dt__core_lock(s);
    uint32_t id = dt__decode_kernel_name(s, &cache, raw);
    dt__core_unlock(s);
    return id;
}

/* A name longer than the 8 KiB devtrace once cut at reaches the demangler
   whole: it is demangled, or kept whole and counted when the demangler
   refuses names that long (libstdc++'s takes at most 1024 bytes). */
static void long_names_are_kept_whole(void)
{
    dt_session *s = started_session();
    char *raw = ident_name(9000);
    uint32_t id = decode_name(s, raw);
    REQUIRE_NE(id, UINT32_MAX);
    const char *kept = dt__intern_get(&s->names, id);
    size_t limit = dt__demangle_length_limit();
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    const char *text = note(s, "kernel_names");
    if (limit >= 9000) {
        REQUIRE_EQ(strlen(kept), 8993 + 2); /* aaa...a() */
        REQUIRE((text) == NULL);
    } else {
        REQUIRE_EQ(limit, 1024); /* libstdc++ */
        REQUIRE_STR(kept, raw);
        REQUIRE((text) != NULL);
        REQUIRE((strstr(text, "1 kernel names longer than 1024 bytes were kept mangled")) != NULL);
    }
    /* within the demangler's limit, a name is demangled */
    REQUIRE(limit >= 1000);
    char *mid = ident_name(1000);
    char *d = dt__demangle(mid, NULL);
    REQUIRE((d) != NULL);
    REQUIRE_EQ(strlen(d), 1000 - 3 - 3 + 2);
    dt__free(d);
    free(mid);
    free(raw);
    dt_session_destroy(s);
}

static void names_beyond_the_cap_are_cut_counted_and_noted(void)
{
    dt_session *s = started_session();
    size_t len = DT_MAX_KERNEL_NAME + 100;
    char *raw = malloc(len + 1);
    REQUIRE((raw) != NULL);
    memset(raw, 'k', len);
    raw[len] = 0;
    uint32_t id = decode_name(s, raw);
    REQUIRE_NE(id, UINT32_MAX);
    REQUIRE_EQ(dt__intern_len(&s->names, id), DT_MAX_KERNEL_NAME - 1);
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    const char *text = note(s, "kernel_names");
    REQUIRE((text) != NULL);
    REQUIRE((strstr(text, "1 kernel names longer than 1048575 bytes were cut there")) != NULL);
    free(raw);
    dt_session_destroy(s);
}

/* The names without a meaning as C++ are kept as given. */
static void names_that_do_not_demangle_are_kept(void)
{
    static const char *const raw[] = {"_Z", "_Zfoo", "_ZN5torch", "_Z!!broken", "relu"};
    dt_intern in;
    REQUIRE_EQ(dt__intern_init(&in), 0);
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++) {
        dt_demangle_result r;
        REQUIRE((dt__demangle(raw[i], &r)) == NULL);
        REQUIRE_EQ(r, DT_DEMANGLE_NOT_MANGLED);
        REQUIRE_STR(dt__intern_get(&in, dt__intern_kernel(&in, raw[i])), raw[i]);
    }
    REQUIRE_EQ(in.demangle_too_long, 0);
    dt__intern_free(&in);
}

static void *demangle_deep_name(void *arg)
{
    return dt__demangle(arg, NULL);
}

/* The demangler's tables live on the stack and grow with the name; the
   thread asking (a vendor's) may have a small stack. */
static void long_names_demangle_on_a_small_stack(void)
{
    /* a::a::...::a(), 500 levels: 1005 bytes */
    char raw[1100] = "_ZN";
    for (int i = 0; i < 500; i++)
        strcat(raw, "1a");
    strcat(raw, "Ev");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    REQUIRE_EQ(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
    pthread_t t;
    REQUIRE_EQ(pthread_create(&t, &attr, demangle_deep_name, raw), 0);
    pthread_attr_destroy(&attr);
    void *out = NULL;
    pthread_join(t, &out);
    REQUIRE((out) != NULL);
    REQUIRE_EQ(strlen(out), 500 * 3 - 2 + 2);
    dt__free(out);
}

DT_TEST_MAIN(NULL, NULL,
             DT_TEST(long_names_are_kept_whole),
             DT_TEST(names_beyond_the_cap_are_cut_counted_and_noted),
             DT_TEST(names_that_do_not_demangle_are_kept),
             DT_TEST(long_names_demangle_on_a_small_stack))

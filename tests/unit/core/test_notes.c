/*
 * Notes in a trace: a key is never silently overwritten. A second, different
 * fact under a key already used is appended to it; the same fact again is
 * said once.
 */
#include <string.h>

#include "dt_check.h"
#include "dt_internal_core.h"
#include "dt_test_session.h"

static const char *note(const dt_session *s, const char *key)
{
    for (int i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) return s->notes[i].text;
    return NULL;
}

static void facts_under_one_key_are_all_kept(void)
{
    dt_session *s = dt_test_session(0);
    dt__core_note(s, "vendor", "kernels not recorded: %s", "refused");
    dt__core_note(s, "vendor", "lacks %s: no External ids", "PushExternalCorrelationId");
    dt__core_note(s, "vendor", "drops are not counted");
    REQUIRE_EQ(s->note_count, 1);
    REQUIRE_STR(note(s, "vendor"),
                "kernels not recorded: refused; lacks PushExternalCorrelationId: no External ids; drops are not counted");
    dt_session_destroy(s);
}

static void the_same_fact_is_said_once(void)
{
    dt_session *s = dt_test_session(0);
    for (int i = 0; i < 1000; i++) dt__core_note(s, "unknown_kind", "marker records (kind %d)", 12);
    dt__core_note(s, "other", "x");
    REQUIRE_EQ(s->note_count, 2);
    REQUIRE_STR(note(s, "unknown_kind"), "marker records (kind 12)");
    /* a fact that is only a prefix of one said is a fact of its own */
    dt__core_note(s, "unknown_kind", "marker records (kind 1)");
    REQUIRE_STR(note(s, "unknown_kind"), "marker records (kind 12); marker records (kind 1)");
    dt_session_destroy(s);
}

/* A key whose text is full keeps what it said first, whole. */
static void a_full_note_keeps_its_beginning(void)
{
    dt_session *s = dt_test_session(0);
    char long_fact[300];
    memset(long_fact, 'a', sizeof long_fact - 1);
    long_fact[sizeof long_fact - 1] = 0;
    dt__core_note(s, "k", "first");
    for (int i = 0; i < 10; i++) {
        long_fact[0] = (char)('0' + i);
        dt__core_note(s, "k", "%s", long_fact);
    }
    const char *t = note(s, "k");
    REQUIRE(t != NULL && strncmp(t, "first; 0", 8) == 0, "%s", t ? t : "(none)");
    REQUIRE(strlen(t) < sizeof s->notes[0].text);
    dt_session_destroy(s);
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(facts_under_one_key_are_all_kept), DT_TEST(the_same_fact_is_said_once),
             DT_TEST(a_full_note_keeps_its_beginning))

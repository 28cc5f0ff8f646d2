/*
 * The scenario parser: the shipped examples parse, statements carry exactly
 * what was written, and every malformed line is refused with its line number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devtrace_emu.h"
#include "scenario.h"

#include "dt_check.h"

static void test_example_train_step(void)
{
    scenario s;
    char err[512];
    int rc = scn_parse_file(DT_SOURCE_DIR "/examples/train_step.scn", &s, err, sizeof(err));
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(strcmp(s.vendor, "topspti") == 0);
    CHECK(s.devices == 1);
    CHECK(scn_count(&s.top, SCN_KERNEL) == 31);
    CHECK(scn_count(&s.top, SCN_MEMCPY) == 3);
    CHECK(scn_count(&s.top, SCN_MEMSET) == 1);
    CHECK(scn_count(&s.top, SCN_THREAD) == 2);
    scn_free(&s);
}

static void test_example_allreduce_step(void)
{
    scenario s;
    char err[512];
    int rc = scn_parse_file(DT_SOURCE_DIR "/examples/allreduce_step.scn", &s, err, sizeof(err));
    REQUIRE(rc == 0, "%s", err);
    CHECK(strcmp(s.vendor, "mspti") == 0);
    CHECK(scn_count(&s.top, SCN_MARKER) == 3);
    CHECK(scn_count(&s.top, SCN_COLLECTIVE) == 2);
    CHECK(scn_count(&s.top, SCN_KERNEL) == 11);
    const scn_stmt *c = &s.top.items[0].body.items[0].body.items[1].body.items[0].body.items[1].body.items[0];
    REQUIRE(c->type == SCN_COLLECTIVE);
    CHECK(strcmp(c->name, "hcom_allReduce_") == 0 && strcmp(c->group, "hccl_world_group") == 0 &&
          strcmp(c->algorithm, "RING") == 0);
    CHECK(c->count == 4194304 && c->data_type == 11 && c->device == 0 && c->stream == 3 &&
          c->duration_ns == 400000);
    scn_free(&s);
}

static void test_statements(void)
{
    const char *text =
        "# comment\n"
        "vendor cupti\n"
        "clock offset_ns=-1000000000 drift_ppm=12.5\n"
        "fault reversed_timestamps count=3\n"
        "thread \"T1\" {   # trailing comment\n"
        "  range \"a \\\"quoted\\\" name\" {\n"
        "    op 42 {\n"
        "      kernel device=1 stream=3 name=\"_ZN5torch3addEv\" grid=8,2 block=256 dur_us=50 regs=40 smem=1024 dsmem=16\n"
        "      memcpy device=0 stream=1 kind=dtoh bytes=1048576 dur_ns=20 async\n"
        "      memset device=0 stream=1 bytes=64 value=255 dur_ms=1\n"
        "    }\n"
        "  }\n"
        "  repeat 1000 {\n"
        "    sync device=0 stream=1\n"
        "    sleep_us 100\n"
        "    step\n"
        "  }\n"
        "}\n"
        "join\n"
        "sync\n";
    scenario s;
    char err[512];
    int rc = scn_parse_string(text, "t", &s, err, sizeof(err));
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(strcmp(s.vendor, "cupti") == 0);
    CHECK(s.has_clock && s.clock_offset_ns == -1000000000 && s.clock_drift_ppm == 12.5);
    CHECK(s.top.n == 4);
    CHECK(s.top.items[0].type == SCN_FAULT && strcmp(s.top.items[0].fault_spec, "reversed_timestamps=3") == 0);
    const scn_stmt *t = &s.top.items[1];
    CHECK(t->type == SCN_THREAD && strcmp(t->name, "T1") == 0 && t->body.n == 2);
    const scn_stmt *r = &t->body.items[0];
    CHECK(r->type == SCN_RANGE && strcmp(r->name, "a \"quoted\" name") == 0);
    const scn_stmt *op = &r->body.items[0];
    CHECK(op->type == SCN_OP && op->number == 42 && op->body.n == 3);
    const scn_stmt *k = &op->body.items[0];
    CHECK(k->type == SCN_KERNEL && k->device == 1 && k->stream == 3);
    CHECK(strcmp(k->name, "_ZN5torch3addEv") == 0);
    CHECK(k->grid[0] == 8 && k->grid[1] == 2 && k->grid[2] == 1);
    CHECK(k->block[0] == 256 && k->block[1] == 1 && k->block[2] == 1);
    CHECK(k->duration_ns == 50000 && k->registers == 40 && k->static_smem == 1024 && k->dynamic_smem == 16);
    const scn_stmt *m = &op->body.items[1];
    CHECK(m->type == SCN_MEMCPY && m->copy_kind == EMU_COPY_DTOH && m->bytes == 1048576 &&
          m->duration_ns == 20 && m->async == 1);
    const scn_stmt *ms = &op->body.items[2];
    CHECK(ms->type == SCN_MEMSET && ms->value == 255 && ms->duration_ns == 1000000 && ms->async == 0);
    const scn_stmt *rep = &t->body.items[1];
    CHECK(rep->type == SCN_REPEAT && rep->number == 1000 && rep->body.n == 3);
    CHECK(rep->body.items[0].type == SCN_SYNC && rep->body.items[0].device == 0 &&
          rep->body.items[0].stream == 1);
    CHECK(rep->body.items[1].type == SCN_SLEEP && rep->body.items[1].number == 100);
    CHECK(rep->body.items[2].type == SCN_STEP);
    CHECK(scn_count(&s.top, SCN_STEP) == 1000);
    CHECK(s.top.items[2].type == SCN_JOIN);
    CHECK(s.top.items[3].type == SCN_SYNC && s.top.items[3].device == -1 && s.top.items[3].stream == -1);
    CHECK(scn_count(&s.top, SCN_SYNC) == 1001);
    scn_free(&s);
}

static void expect_error(const char *text, const char *where_and_what)
{
    scenario s;
    char err[512];
    int rc = scn_parse_string(text, "bad", &s, err, sizeof(err));
    CHECK(rc != 0);
    if (rc == 0) {
        fprintf(stderr, "accepted: %s\n", text);
        scn_free(&s);
        return;
    }
    if (!strstr(err, where_and_what)) {
        FAIL("for %s: got '%s', expected '%s'", text, err, where_and_what);
    }
}

static void test_errors(void)
{
    expect_error("kernel device=0 stream=0 dur_us=1\n", "bad:1: name= is required");
    expect_error("kernel device=0 name=\"k\" dur_us=1\n", "bad:1: stream= is required");
    expect_error("kernel device=0 stream=0 name=k\n", "bad:1: a duration");
    expect_error("\nkernel device=99 stream=0 name=k dur_us=1\n", "bad:2: device: 99 is outside");
    expect_error("kernel device=0 stream=64 name=k dur_us=1\n", "stream: 64 is outside");
    expect_error("kernel device=0 stream=0 name=k dur_us=-5\n", "dur_us: '-5' is not");
    expect_error("kernel device=0 stream=0 name=k dur_us=1 grid=0\n", "grid: 0 is outside");
    expect_error("kernel device=0 stream=0 name=k dur_us=1 grid=1,2,3,4\n", "at most three");
    expect_error("kernel device=0 stream=0 name=\"k dur_us=1\n", "unterminated string");
    expect_error("kernel device=0 stream=0 name=k dur_us=1 color=red\n", "unknown argument 'color'");
    expect_error("memcpy device=0 stream=0 kind=sideways bytes=1 dur_us=1\n", "kind: 'sideways'");
    expect_error("memcpy device=0 stream=0 bytes=1 dur_us=1\n", "kind= is required");
    expect_error("memset device=0 stream=0 dur_us=1\n", "bytes= is required");
    expect_error("memset device=0 stream=0 bytes=1 value=4294967296 dur_us=1\n", "value: too large");
    expect_error("sync device=0 dur_us=5\n", "sync takes no duration");
    expect_error("range \"r\"\n", "needs a block");
    expect_error("range \"r\" {\n", "bad:1: block opened here is not closed");
    expect_error("}\n", "without an open block");
    expect_error("sleep_us 1 {\n}\n", "does not open a block");
    expect_error("thread \"a\" {\n thread \"b\" {\n }\n}\n", "bad:2: threads are started from the top level");
    expect_error("range \"r\" {\n vendor topspti\n}\n", "bad:2: 'vendor' is allowed at the top level only");
    expect_error("vendor nvidia\n", "usage: vendor");
    expect_error("clock offset_ns=abc\n", "offset_ns: 'abc'");
    expect_error("clock drift_ppm=2e6\n", "drift_ppm");
    expect_error("fault sparks count=1\n", "unknown fault 'sparks'");
    expect_error("fault late\n", "usage: fault");
    expect_error("devices 0\n", "devices: 0 is outside");
    expect_error("step 3\n", "usage: step");
    expect_error("step {\n}\n", "does not open a block");
    expect_error("frobnicate\n", "unknown statement 'frobnicate'");
    expect_error("repeat many {\n}\n", "repeat: 'many'");
    expect_error("range \"r\" { sleep_us 1\n}\n", "nothing may follow");
    expect_error("range \"r\"x {\n}\n", "a space must follow");
    expect_error("marker \"m\"\n", "needs a block");
    expect_error("collective device=0 stream=0 name=c dur_us=1\n", "name= and count= are required");
    expect_error("collective device=0 stream=0 name=c count=8 dtype=fp33 dur_us=1\n", "dtype: 'fp33'");
}

DT_TEST_MAIN(NULL, NULL, DT_TEST(test_example_train_step), DT_TEST(test_example_allreduce_step),
             DT_TEST(test_statements), DT_TEST(test_errors))

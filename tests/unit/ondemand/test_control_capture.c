/* On demand, capture mode: a DUMP request writes the flight recorder of
   the session running in the process to the client's descriptor, and is
   refused (cannot_arm) when no session runs or it keeps no flight
   recorder; a CAPTURE while the program's own session runs is busy. The
   captures themselves are tested on every emulated backend by the
   conformance suite (on_demand). */
#include "protocol/control_client.h"
#include "dt_check.h"
#include "runtime_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/dt_reader.h"


static dt_ctl_code request(dt_ctl_type type, const char *path, dt_ctl_msg *reply)
{
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(out >= 0, "%s", path);
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, type);
    req.duration_ns = 1000000;
    dt_ctl_code rc = dt__ctl_send(getpid(), &req, out, 10000, reply);
    close(out);
    return rc;
}

static dt_session *own_session(uint64_t flight_bytes)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.flight_recorder_bytes = flight_bytes;
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    return s;
}

static int count_ranges(void *user, const dt_rd_event *e)
{
    if (!strcmp(e->ph, "X") && !strcmp(e->name, "kept")) ++*(int *)user;
    return 0;
}

static void test_dump_writes_the_running_flight_recorder(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    REQUIRE_EQ(dt_control_listen(&c), DT_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/dump.json", base_dir);
    dt_ctl_msg reply;
    /* no session runs */
    CHECK_EQ(request(DT_CTL_DUMP, path, &reply), DT_CTL_CANNOT_ARM);
    CHECK(strstr(reply.text, "no flight recorder") != NULL, "%s", reply.text);
    /* a session without a flight recorder */
    dt_session *s = own_session(0);
    CHECK_EQ(request(DT_CTL_DUMP, path, &reply), DT_CTL_CANNOT_ARM);
    CHECK_EQ(request(DT_CTL_CAPTURE, path, &reply), DT_CTL_BUSY);
    dt_session_destroy(s);
    /* with one: the ranges so far, while the session goes on */
    s = own_session(1u << 20);
    for (int i = 0; i < 10; i++) {
        REQUIRE_EQ(dt_range_push("kept", NULL), DT_OK);
        REQUIRE_EQ(dt_range_pop(), DT_OK);
    }
    CHECK_EQ(request(DT_CTL_DUMP, path, &reply), DT_CTL_SUCCESS);
    CHECK_EQ(reply.written, 1);
    CHECK_EQ(reply.records, 10u); /* the reply says what the dump wrote */
    CHECK_STR(reply.text, "nothing lost");
    char err[256];
    dt_rd_source *src = dt__rd_open_file(path, err, sizeof err);
    REQUIRE(src != NULL, "%s", err);
    int ranges = 0;
    dt_rd_summary sum;
    CHECK_EQ(dt__rd_read(src, count_ranges, &ranges, &sum, err, sizeof err), 0);
    dt__rd_summary_free(&sum);
    dt__rd_close(src);
    CHECK_EQ(ranges, 10);
    CHECK_EQ(dt_range_push("after", NULL), DT_OK); /* still recording */
    CHECK_EQ(dt_range_pop(), DT_OK);
    CHECK_EQ(dt_session_stop(s), DT_OK);
    dt_session_destroy(s);
    dt_control_stop();
}

static int setup(void)
{
    return runtime_dir_make("capture");
}

static int teardown(void)
{
    dt_control_stop();
    return runtime_dir_remove();
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_dump_writes_the_running_flight_recorder))

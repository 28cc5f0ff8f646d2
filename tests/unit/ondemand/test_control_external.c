/* On demand, external mode: a CAPTURE is posted to the program, which
   takes it at a step boundary (dt_control_take), writes the trace to the
   descriptor it got and reports (dt_control_done); the client gets that
   report. A capture not taken in time times out; dt_control_stop
   withdraws one that waits and removes the socket. */
#include "base/log.h"
#include "protocol/control_client.h"
#include "protocol/control_server.h"
#include "dt_check.h"
#include "runtime_dir.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>


typedef struct client {
    pthread_t thread;
    dt_ctl_msg request, reply;
    int out;
    dt_ctl_code rc;
} client;

static void *client_main(void *arg)
{
    client *c = arg;
    c->rc = dt__ctl_send(getpid(), &c->request, c->out, 20000, &c->reply);
    return NULL;
}

static void client_start(client *c, uint64_t steps, uint64_t timeout_ns, int out)
{
    memset(c, 0, sizeof *c);
    dt__ctl_msg_init(&c->request, DT_CTL_CAPTURE);
    c->request.steps = steps;
    c->request.step_multiple = 4;
    c->request.timeout_ns = timeout_ns;
    snprintf(c->request.format, sizeof c->request.format, "json.gz");
    c->out = out;
    REQUIRE_EQ(pthread_create(&c->thread, NULL, client_main, c), 0);
}

/* Polls dt_control_take as a training loop would, up to ms. */
static int take_within(dt_capture_request *r, int ms)
{
    for (int i = 0; i < ms; i++) {
        if (dt_control_take(r)) return 1;
        usleep(1000);
    }
    return 0;
}

static void test_the_program_takes_writes_and_reports(void)
{
    REQUIRE_EQ(dt_control_listen_external(), DT_OK);
    CHECK_EQ(dt_control_listening(), 1);
    dt_capture_request r;
    CHECK_EQ(dt_control_take(&r), 0); /* nothing waits */
    CHECK_EQ(dt_control_done(DT_OK, 1, 1, "x"), DT_ERR_STATE);
    int p[2];
    REQUIRE_EQ(pipe(p), 0);
    client c;
    client_start(&c, 3, 5000000000ull, p[1]);
    if (!take_within(&r, 5000)) { pthread_join(c.thread, NULL); FAIL("the capture was never posted: %s %s", dt__ctl_code_name(c.rc), c.reply.text); dt_control_stop(); return; }
    close(p[1]); /* the program's descriptor is its own duplicate */
    CHECK_EQ(r.steps, 3u);
    CHECK_EQ(r.step_multiple, 4u);
    CHECK_EQ(r.duration_ns, 0u);
    CHECK_EQ(r.timeout_ns, 5000000000ull);
    CHECK_STR(r.format, "json.gz");
    CHECK_EQ(dt_control_take(NULL), 0); /* taken once */
    /* INFO meanwhile says capturing */
    dt_ctl_msg info, reply;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    CHECK_EQ(dt__ctl_send(getpid(), &info, -1, 3000, &reply), DT_CTL_SUCCESS);
    CHECK_EQ(reply.state, DT_CTL_CAPTURING);
    CHECK_EQ(write(r.fd, "trace", 5), 5);
    CHECK_EQ(dt_control_done(DT_OK, 1, 42, "LOST 1 records (vendor_dropped 1)"), DT_OK);
    pthread_join(c.thread, NULL);
    CHECK_EQ(c.rc, DT_CTL_SUCCESS);
    CHECK_EQ(c.reply.type, DT_CTL_OK);
    CHECK_EQ(c.reply.written, 1);
    CHECK_EQ(c.reply.records, 42u);
    CHECK_STR(c.reply.text, "LOST 1 records (vendor_dropped 1)");
    char buf[16] = {0};
    CHECK_EQ(read(p[0], buf, sizeof buf), 5); /* then EOF: every copy is closed */
    CHECK_EQ(read(p[0], buf, sizeof buf), 0);
    CHECK_STR(buf, "trace");
    close(p[0]);
    /* an error the program reports is the client's */
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    client_start(&c, 1, 5000000000ull, out);
    REQUIRE(take_within(&r, 5000), "the second capture was never posted");
    CHECK_EQ(dt_control_done(DT_ERR_BUSY, 0, 0, "torch.profiler is already running"), DT_OK);
    pthread_join(c.thread, NULL);
    CHECK_EQ(c.rc, DT_CTL_BUSY);
    CHECK_STR(c.reply.text, "torch.profiler is already running");
    /* steps that did not come in time are the client's timeout */
    client_start(&c, 1, 5000000000ull, out);
    REQUIRE(take_within(&r, 5000), "the third capture was never posted");
    CHECK_EQ(dt_control_done(DT_ERR_TIMEOUT, 0, 0, "timed out waiting for a step"), DT_OK);
    pthread_join(c.thread, NULL);
    CHECK_EQ(c.rc, DT_CTL_TIMEOUT);
    CHECK_STR(c.reply.text, "timed out waiting for a step");
    close(out);
    dt_control_stop();
}

static void test_a_capture_not_taken_times_out(void)
{
    REQUIRE_EQ(dt_control_listen_external(), DT_OK);
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    client c;
    client_start(&c, 2, 200000000ull, out); /* 0.2 s */
    pthread_join(c.thread, NULL);
    CHECK_EQ(c.rc, DT_CTL_TIMEOUT);
    CHECK(strstr(c.reply.text, "did not take") != NULL, "%s", c.reply.text);
    dt_capture_request r;
    CHECK_EQ(dt_control_take(&r), 0); /* withdrawn */
    close(out);
    dt_control_stop();
}

static void test_stop_withdraws_a_waiting_capture_and_removes_the_socket(void)
{
    REQUIRE_EQ(dt_control_listen_external(), DT_OK);
    char path[128];
    snprintf(path, sizeof path, "%s", dt__ctl_socket_path());
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    client c;
    client_start(&c, 2, 60000000000ull, out);
    dt_ctl_msg info, reply;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    for (int i = 0; i < 5000; i++) { /* until the request is posted */
        if (dt__ctl_send(getpid(), &info, -1, 3000, &reply) == DT_CTL_SUCCESS && reply.state == DT_CTL_ARMED) break;
        usleep(1000);
    }
    dt_control_stop();
    pthread_join(c.thread, NULL);
    CHECK_EQ(c.rc, DT_CTL_CANNOT_ARM);
    CHECK_EQ(dt_control_listening(), 0);
    CHECK_EQ(stat(path, &st), -1);
    dt_capture_request r;
    CHECK_EQ(dt_control_take(&r), 0);
    close(out);
    /* and it listens again */
    CHECK_EQ(dt_control_listen_external(), DT_OK);
    CHECK_EQ(dt_control_listen_external(), DT_ERR_STATE);
    dt_control_stop();
}

static int setup(void)
{
    return runtime_dir_make("external");
}

static int teardown(void)
{
    dt_control_stop();
    return runtime_dir_remove();
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_the_program_takes_writes_and_reports),
             DT_TEST(test_a_capture_not_taken_times_out),
             DT_TEST(test_stop_withdraws_a_waiting_capture_and_removes_the_socket))

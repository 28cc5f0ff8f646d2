/* The messages and the server: round trips, what a process says of itself,
   descriptor passing, malformed and vanishing peers, error codes, busy; the
   table of the cases. */
#include "control_test.h"

char ctl_dir[128]; /* base_dir/devtrace */

/* ------------------------------------------------------------------ */
/* A handler that records what it was asked, may block, and writes into
   the descriptor it is given. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int block, entered, calls;
    dt_ctl_request last;
    dt_ctl_code answer; /* what the handler reports */
} handler_state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, {0}, DT_CTL_SUCCESS};

static const char handler_output[] = "written by the handler\n";

void test_handler(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *res)
{
    pthread_mutex_lock(&handler_state.mu);
    handler_state.calls++;
    handler_state.last = *req;
    handler_state.entered = 1;
    pthread_cond_broadcast(&handler_state.cv);
    dt__ctl_set_state(DT_CTL_CAPTURING);
    while (handler_state.block) pthread_cond_wait(&handler_state.cv, &handler_state.mu);
    pthread_mutex_unlock(&handler_state.mu);
    ssize_t w = write(fd, handler_output, strlen(handler_output));
    res->code = w == (ssize_t)strlen(handler_output) ? DT_CTL_SUCCESS : DT_CTL_CANNOT_ARM;
    if (handler_state.answer != DT_CTL_SUCCESS) {
        res->code = handler_state.answer;
        snprintf(res->text, sizeof res->text, "the handler says %s", dt__ctl_code_name(handler_state.answer));
        return;
    }
    res->written = 1;
    res->records = 7;
    snprintf(res->text, sizeof res->text, "lost 2 records\nvendor_dropped 2");
}

static void handler_block(int on)
{
    pthread_mutex_lock(&handler_state.mu);
    handler_state.block = on;
    if (on) handler_state.entered = 0;
    pthread_cond_broadcast(&handler_state.cv);
    pthread_mutex_unlock(&handler_state.mu);
}

static int handler_wait_entered(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&handler_state.mu);
    int rc = 0;
    while (!handler_state.entered && rc == 0) rc = pthread_cond_timedwait(&handler_state.cv, &handler_state.mu, &until);
    int entered = handler_state.entered;
    pthread_mutex_unlock(&handler_state.mu);
    return entered;
}

static int handler_calls(void)
{
    pthread_mutex_lock(&handler_state.mu);
    int n = handler_state.calls;
    pthread_mutex_unlock(&handler_state.mu);
    return n;
}

/* Listens afresh (a case that failed may have left a listener). */
void listen_fresh(int read_timeout_ms)
{
    handler_block(0);
    dt__ctl_stop();
    dt_ctl_options o = {3, 1, 8, "emulated", test_handler, NULL, read_timeout_ms, NULL};
    dt_status st = dt__ctl_listen(&o);
    REQUIRE_EQ(st, DT_OK);
}

/* ------------------------------------------------------------------ */
/* Raw bytes to the listener, and its reply read to the end. */
int raw_connect(void)
{
    int fd = -1;
    dt_ctl_code rc = dt__ctl_connect_path(dt__ctl_socket_path(), 2000, &fd);
    REQUIRE_EQ(rc, DT_CTL_SUCCESS);
    return fd;
}

static void raw_send(int fd, const void *p, size_t n, int pass_fd)
{
    struct iovec iov = {(void *)p, n};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    if (pass_fd >= 0) {
        memset(&control, 0, sizeof control);
        mh.msg_control = control.space;
        mh.msg_controllen = sizeof control.space;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
    }
    REQUIRE_EQ(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until the listener closes (3 s at most); the bytes read. */
static size_t raw_read_all(int fd, uint8_t *buf, size_t cap)
{
    size_t have = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0) {
            FAIL("no end of the reply within 3 s");
        }
        ssize_t r = recv(fd, buf + have, cap - have, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) return have;
        have += (size_t)r;
        if (have == cap) return have;
    }
}

/* Sends raw bytes (with a descriptor when >= 0), optionally closing the
   write side, and expects ERR with `code`. */
static void expect_error(const void *bytes, size_t n, int pass_fd, int shut, dt_ctl_code code, const char *what)
{
    int fd = raw_connect();
    if (n) raw_send(fd, bytes, n, pass_fd);
    if (shut) shutdown(fd, SHUT_WR);
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    size_t got = raw_read_all(fd, buf, sizeof buf);
    close(fd);
    dt_ctl_msg reply;
    char why[256] = "";
    dt_ctl_code rc = dt__ctl_parse(buf, got, &reply, why, sizeof why);
    CHECK_EQ(rc, DT_CTL_SUCCESS);
    CHECK(rc == DT_CTL_SUCCESS && reply.type == DT_CTL_ERR && reply.code == code, "%s: type %d code %s (%s)", what,
          reply.type, dt__ctl_code_name(reply.code), reply.text);
    CHECK(reply.text[0] != 0, "%s: an error without a message", what);
}

static size_t header(uint8_t *h, uint8_t version, uint8_t type, uint32_t len)
{
    uint8_t v[8] = {'D', 'T', version, type, (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 24)};
    memcpy(h, v, 8);
    return 8;
}

static int scratch_file(const char *name, int flags)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", base_dir, name);
    return open(path, flags | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

dt_ctl_code info_of_self(dt_ctl_msg *reply)
{
    dt_ctl_msg info;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    return dt__ctl_send(getpid(), &info, -1, 3000, reply);
}

/* ------------------------------------------------------------------ */
static void test_messages_round_trip(void)
{
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    char why[256];
    dt_ctl_msg m, back;
    dt__ctl_msg_init(&m, DT_CTL_CAPTURE);
    m.steps = 5;
    m.step_multiple = 100;
    m.timeout_ns = 30000000000ull;
    snprintf(m.format, sizeof m.format, "perfetto");
    size_t n = dt__ctl_encode(&m, buf, sizeof buf);
    REQUIRE(n > DT_CTL_HEADER);
    REQUIRE_EQ(dt__ctl_parse(buf, n, &back, why, sizeof why), DT_CTL_SUCCESS);
    CHECK_EQ(back.type, DT_CTL_CAPTURE);
    CHECK_EQ(back.steps, 5u);
    CHECK_EQ(back.step_multiple, 100u);
    CHECK_EQ(back.timeout_ns, 30000000000ull);
    CHECK_EQ(back.duration_ns, 0u);
    CHECK_STR(back.format, "perfetto");

    dt__ctl_msg_init(&m, DT_CTL_INFO);
    m.pid = 4242;
    m.rank = 0;
    m.world_size = 2;
    snprintf(m.program, sizeof m.program, "tr\nain");
    snprintf(m.job, sizeof m.job, "slurm:77=x");
    m.state = DT_CTL_CAPTURING;
    n = dt__ctl_encode(&m, buf, sizeof buf);
    REQUIRE_EQ(dt__ctl_parse(buf, n, &back, why, sizeof why), DT_CTL_SUCCESS);
    CHECK_EQ(back.pid, 4242);
    CHECK_EQ(back.rank, 0);
    CHECK_EQ(back.local_rank, -1);
    CHECK_EQ(back.world_size, 2);
    CHECK_STR(back.program, "tr?ain"); /* a newline cannot break a line */
    CHECK_STR(back.job, "slurm:77=x");
    CHECK_EQ(back.state, DT_CTL_CAPTURING);

    dt__ctl_msg_init(&m, DT_CTL_ERR);
    m.code = DT_CTL_BUSY;
    snprintf(m.text, sizeof m.text, "first\nsecond=line");
    n = dt__ctl_encode(&m, buf, sizeof buf);
    REQUIRE_EQ(dt__ctl_parse(buf, n, &back, why, sizeof why), DT_CTL_SUCCESS);
    CHECK_EQ(back.code, DT_CTL_BUSY);
    CHECK_STR(back.text, "first\nsecond=line");

    /* numbers out of range, unknown values and keys */
    static const struct { const char *payload; dt_ctl_code rc; } cases[] = {
        {"duration_ns=18446744073709551616\n", DT_CTL_BAD_REQUEST},
        /* what no window can honour: refused, the limit named (below) */
        {"duration_ns=18446744073709551615\n", DT_CTL_BAD_REQUEST},
        {"duration_ns=10000000000000000\n", DT_CTL_SUCCESS},
        {"duration_ns=10000000000000001\n", DT_CTL_BAD_REQUEST},
        {"steps=1\ntimeout_ns=10000000000000000\n", DT_CTL_SUCCESS},
        {"steps=1\ntimeout_ns=10000000000000001\n", DT_CTL_BAD_REQUEST},
        {"steps=1000000000\nstep_multiple=1000000000\n", DT_CTL_SUCCESS},
        {"steps=1000000001\n", DT_CTL_BAD_REQUEST},
        {"steps=18446744073709551615\n", DT_CTL_BAD_REQUEST},
        {"steps=1\nstep_multiple=1000000001\n", DT_CTL_BAD_REQUEST},
        {"duration_ns=-1\n", DT_CTL_BAD_REQUEST},
        {"duration_ns=\n", DT_CTL_BAD_REQUEST},
        {"duration_ns=5", DT_CTL_BAD_REQUEST}, /* no newline */
        {"duration_ns=5\nsteps=2\n", DT_CTL_BAD_REQUEST},
        {"steps=0\n", DT_CTL_BAD_REQUEST},
        {"steps=3\nfuture_key=anything\n", DT_CTL_SUCCESS},
        {"Steps=3\n", DT_CTL_BAD_REQUEST},
        {"=3\n", DT_CTL_BAD_REQUEST},
        {"steps\n", DT_CTL_BAD_REQUEST},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t plen = strlen(cases[i].payload);
        n = header(buf, DT_CTL_VERSION, DT_CTL_CAPTURE, (uint32_t)plen);
        memcpy(buf + n, cases[i].payload, plen);
        CHECK(dt__ctl_parse(buf, n + plen, &back, why, sizeof why) == cases[i].rc, "payload \"%s\": %s",
              cases[i].payload, why);
    }
    static const char over[] = "steps=18446744073709551615\n";
    n = header(buf, DT_CTL_VERSION, DT_CTL_CAPTURE, sizeof over - 1);
    memcpy(buf + n, over, sizeof over - 1);
    CHECK_EQ(dt__ctl_parse(buf, n + sizeof over - 1, &back, why, sizeof why), DT_CTL_BAD_REQUEST);
    CHECK_STR(why, "steps=18446744073709551615 is over the limit of 1000000000");

    /* an OK reply: a partial window, and the backend that recorded */
    dt__ctl_msg_init(&m, DT_CTL_OK);
    m.written = 1;
    m.partial = 1;
    m.records = 12;
    snprintf(m.backend, sizeof m.backend, "topspti");
    snprintf(m.text, sizeof m.text, "cut short; nothing lost");
    n = dt__ctl_encode(&m, buf, sizeof buf);
    REQUIRE_EQ(dt__ctl_parse(buf, n, &back, why, sizeof why), DT_CTL_SUCCESS);
    CHECK(back.written == 1 && back.partial == 1 && back.records == 12, "written %d partial %d records %llu",
          back.written, back.partial, (unsigned long long)back.records);
    CHECK_STR(back.backend, "topspti");
    CHECK_STR(back.text, "cut short; nothing lost");
    m.partial = 0;
    n = dt__ctl_encode(&m, buf, sizeof buf);
    REQUIRE_EQ(dt__ctl_parse(buf, n, &back, why, sizeof why), DT_CTL_SUCCESS);
    CHECK_EQ(back.partial, 0);

    n = header(buf, DT_CTL_VERSION, DT_CTL_ERR, 10);
    memcpy(buf + n, "code=fine\n", 10);
    CHECK_EQ(dt__ctl_parse(buf, n + 10, &back, why, sizeof why), DT_CTL_BAD_REQUEST);
    n = header(buf, DT_CTL_VERSION, DT_CTL_INFO, 4);
    memcpy(buf + n, "a=\0\n", 4);
    CHECK_EQ(dt__ctl_parse(buf, n + 4, &back, why, sizeof why), DT_CTL_BAD_REQUEST);
}

static void test_info_names_the_process_and_its_job(void)
{
    setenv("SLURM_JOB_ID", "4242", 1);
    listen_fresh(0);
    unsetenv("SLURM_JOB_ID");
    char expect[256];
    snprintf(expect, sizeof expect, "%s/%ld.sock", ctl_dir, (long)getpid());
    CHECK_STR(dt__ctl_socket_path(), expect);
    struct stat st;
    REQUIRE_EQ(lstat(expect, &st), 0);
    CHECK(S_ISSOCK(st.st_mode));
    REQUIRE_EQ(lstat(ctl_dir, &st), 0);
    CHECK_EQ(st.st_mode & 07777, 0700u);

    dt_ctl_msg *list = NULL;
    size_t count = 0;
    REQUIRE_EQ(dt__ctl_list(2000, &list, &count), DT_OK);
    REQUIRE_EQ(count, 1u);
    CHECK_EQ(list[0].pid, getpid());
    CHECK_EQ(list[0].rank, 3);
    CHECK_EQ(list[0].local_rank, 1);
    CHECK_EQ(list[0].world_size, 8);
    CHECK_STR(list[0].program, "test_control");
    CHECK_STR(list[0].job, "slurm:4242");
    CHECK_STR(list[0].backend, "emulated");
    CHECK_EQ(list[0].state, DT_CTL_IDLE);
    free(list);

    CHECK_EQ(dt__ctl_listen(&(dt_ctl_options){0}), DT_ERR_STATE); /* one listener per process */
    dt__ctl_stop();
    CHECK_EQ(lstat(expect, &st), -1); /* removed when it stops */
    dt_ctl_msg reply;
    CHECK_EQ(info_of_self(&reply), DT_CTL_NO_SUCH_LISTENER);
    CHECK(reply.text[0] != 0);
}

static void test_job_id_sources(void)
{
    static const char *const vars[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR",
                                       "MASTER_PORT"};
    char job[128];
    for (size_t i = 0; i < 5; i++) unsetenv(vars[i]);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "");
    setenv("MASTER_ADDR", "node7", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, ""); /* an address without a port names no job */
    setenv("MASTER_PORT", "29500", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "master:node7:29500");
    /* plain torchrun's run id is "none" for every job: the master tells them apart */
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "master:node7:29500");
    setenv("TORCHELASTIC_RUN_ID", "abc", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "torchelastic:abc@node7:29500");
    unsetenv("MASTER_PORT");
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "torchelastic:abc");
    setenv("SLURM_JOB_ID", "12", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "slurm:12");
    setenv("SLURM_STEP_ID", "3", 1);
    dt__ctl_job_id(job, sizeof job);
    CHECK_STR(job, "slurm:12.3");
    for (size_t i = 0; i < 5; i++) unsetenv(vars[i]);

    /* what --job JOB names */
    static const struct { const char *job, *want; int match; } names[] = {
        {"slurm:12.3", "slurm:12.3", 1}, {"slurm:12.3", "12.3", 1}, {"slurm:12.3", "slurm:12", 1},
        {"slurm:12.3", "12", 1},         {"slurm:12.3", "1", 0},    {"slurm:12.3", "slurm:12.4", 0},
        {"slurm:123", "12", 0},          {"torchelastic:abc@n:1", "abc", 1},
        {"torchelastic:abc@n:1", "torchelastic:abc", 1}, {"torchelastic:abc@n:1", "ab", 0},
        {"master:n:1", "n:1", 1},        {"master:n:1", "n", 0},    {"", "", 0}, {"master:n:1", "", 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        CHECK(dt__ctl_job_matches(names[i].job, names[i].want) == names[i].match, "%s named by %s: %d", names[i].job,
              names[i].want, !names[i].match);
}

static void test_capture_writes_into_the_passed_descriptor(void)
{
    listen_fresh(0);
    int before = handler_calls();
    int out = scratch_file("capture.out", O_WRONLY);
    REQUIRE(out >= 0);
    dt_ctl_msg req, reply;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    req.duration_ns = 250000000;
    req.timeout_ns = 9000000000ull;
    CHECK_EQ(dt__ctl_send(getpid(), &req, out, 5000, &reply), DT_CTL_SUCCESS);
    close(out);
    CHECK_EQ(reply.type, DT_CTL_OK);
    CHECK_EQ(reply.written, 1);
    CHECK_EQ(reply.records, 7u);
    CHECK_STR(reply.text, "lost 2 records\nvendor_dropped 2");
    CHECK_EQ(handler_calls(), before + 1);
    CHECK_EQ(handler_state.last.type, DT_CTL_CAPTURE);
    CHECK_EQ(handler_state.last.duration_ns, 250000000u);
    CHECK_EQ(handler_state.last.timeout_ns, 9000000000ull);

    char path[256], got[128] = "";
    snprintf(path, sizeof path, "%s/capture.out", base_dir);
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL);
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = 0;
    CHECK_STR(got, handler_output);

    out = scratch_file("dump.out", O_RDWR);
    dt__ctl_msg_init(&req, DT_CTL_DUMP);
    CHECK_EQ(dt__ctl_send(getpid(), &req, out, 5000, &reply), DT_CTL_SUCCESS);
    CHECK_EQ(handler_state.last.type, DT_CTL_DUMP);
    CHECK_EQ(lseek(out, 0, SEEK_END), (off_t)strlen(handler_output));
    close(out);
    CHECK_EQ(handler_calls(), before + 2);
    dt__ctl_stop();
}

static void test_malformed_requests_get_bad_request(void)
{
    listen_fresh(0);
    int before = handler_calls();
    uint8_t m[DT_CTL_MAX_MESSAGE + 64];
    int out = scratch_file("bad.out", O_WRONLY);
    int ro = scratch_file("ro.out", O_RDONLY);
    REQUIRE(out >= 0 && ro >= 0);

    expect_error("GET / HTTP/1.1\r\n\r\n", 18, -1, 0, DT_CTL_BAD_REQUEST, "garbage");
    size_t n = header(m, 2, DT_CTL_INFO, 0);
    expect_error(m, n, -1, 0, DT_CTL_VERSION_MISMATCH, "version 2");
    n = header(m, 0, DT_CTL_INFO, 0);
    expect_error(m, n, -1, 0, DT_CTL_VERSION_MISMATCH, "version 0");
    n = header(m, DT_CTL_VERSION, DT_CTL_CAPTURE, DT_CTL_MAX_PAYLOAD + 1);
    expect_error(m, n, -1, 0, DT_CTL_BAD_REQUEST, "oversized, header only");
    n = header(m, DT_CTL_VERSION, DT_CTL_CAPTURE, 0xffffffffu);
    expect_error(m, n, -1, 0, DT_CTL_BAD_REQUEST, "length 2^32-1");
    n = header(m, DT_CTL_VERSION, DT_CTL_CAPTURE, 100);
    memcpy(m + n, "steps=3\n", 8);
    expect_error(m, n + 8, out, 1, DT_CTL_BAD_REQUEST, "truncated payload");
    expect_error(m, 3, -1, 1, DT_CTL_BAD_REQUEST, "truncated header");
    n = header(m, DT_CTL_VERSION, 9, 0);
    expect_error(m, n, -1, 0, DT_CTL_BAD_REQUEST, "unknown type");
    n = header(m, DT_CTL_VERSION, DT_CTL_CAPTURE, 15);
    memcpy(m + n, "duration_ns=x\n\n", 15);
    expect_error(m, n + 15, out, 0, DT_CTL_BAD_REQUEST, "bad number");
    n = header(m, DT_CTL_VERSION, DT_CTL_CAPTURE, 8);
    memcpy(m + n, "steps=3\n", 8);
    expect_error(m, n + 8, -1, 0, DT_CTL_BAD_REQUEST, "capture without a descriptor");
    expect_error(m, n + 8, ro, 0, DT_CTL_BAD_REQUEST, "capture with a read-only descriptor");
    n = header(m, DT_CTL_VERSION, DT_CTL_DUMP, 0);
    expect_error(m, n, -1, 0, DT_CTL_BAD_REQUEST, "dump without a descriptor");
    n = header(m, DT_CTL_VERSION, DT_CTL_OK, 0);
    expect_error(m, n, -1, 0, DT_CTL_BAD_REQUEST, "a reply as a request");
    /* oversized with its payload sent: the listener stops reading at the
       header and answers */
    n = header(m, DT_CTL_VERSION, DT_CTL_INFO, DT_CTL_MAX_PAYLOAD + 40);
    memset(m + n, 'a', DT_CTL_MAX_PAYLOAD + 40);
    expect_error(m, n + DT_CTL_MAX_PAYLOAD + 40, -1, 0, DT_CTL_BAD_REQUEST, "oversized with payload");
    close(out);
    close(ro);

    CHECK_EQ(handler_calls(), before); /* nothing malformed reaches the handler */
    dt_ctl_msg reply;
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK_EQ(reply.type, DT_CTL_INFO);
    /* the client side maps the codes */
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, DT_CTL_DUMP);
    CHECK_EQ(dt__ctl_send(getpid(), &req, -1, 3000, &reply), DT_CTL_BAD_REQUEST);
    CHECK(strstr(reply.text, "descriptor") != NULL, "%s", reply.text);
    dt__ctl_stop();
}

static void test_silent_and_vanishing_peers(void)
{
    listen_fresh(200);
    /* sends nothing: dropped after the read timeout, with an answer */
    int silent = raw_connect();
    dt_ctl_msg reply;
    uint64_t t0 = (uint64_t)time(NULL);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK((uint64_t)time(NULL) - t0 < 3);
    uint8_t buf[DT_CTL_MAX_MESSAGE];
    size_t got = raw_read_all(silent, buf, sizeof buf);
    close(silent);
    char why[256];
    dt_ctl_msg err;
    CHECK_EQ(dt__ctl_parse(buf, got, &err, why, sizeof why), DT_CTL_SUCCESS);
    CHECK_EQ(err.code, DT_CTL_BAD_REQUEST);

    /* goes away mid-header, mid-payload, and before reading its reply */
    int fd = raw_connect();
    raw_send(fd, "DT\x01", 3, -1);
    close(fd);
    fd = raw_connect();
    size_t n = header(buf, DT_CTL_VERSION, DT_CTL_CAPTURE, 30);
    raw_send(fd, buf, n + 5, -1);
    close(fd);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);

    int before = handler_calls();
    handler_block(1);
    int out = scratch_file("vanish.out", O_WRONLY);
    fd = raw_connect();
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    req.steps = 2;
    n = dt__ctl_encode(&req, buf, sizeof buf);
    raw_send(fd, buf, n, out);
    close(out);
    REQUIRE(handler_wait_entered());
    close(fd); /* the client is gone before the capture ends */
    handler_block(0);
    for (int i = 0; i < 200 && info_of_self(&reply) == DT_CTL_SUCCESS && reply.state != DT_CTL_IDLE; i++)
        usleep(10000);
    CHECK_EQ(handler_calls(), before + 1);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS); /* the write to the vanished client did not kill it */
    CHECK_EQ(reply.state, DT_CTL_IDLE);
    dt__ctl_stop();
}

static dt_ctl_code capture_of_self(int timeout_ms, dt_ctl_msg *reply)
{
    int out = scratch_file("codes.out", O_WRONLY);
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    req.steps = 3;
    dt_ctl_code rc = dt__ctl_send(getpid(), &req, out, timeout_ms, reply);
    close(out);
    return rc;
}

/* What the client tells apart: no listener, cannot arm, a capture that
   timed out, no answer in time (and busy, below). */
static void test_error_codes_are_distinct(void)
{
    dt__ctl_stop();
    dt_ctl_msg reply;
    CHECK_EQ(capture_of_self(1000, &reply), DT_CTL_NO_SUCH_LISTENER);
    CHECK(strstr(reply.text, "no process") != NULL, "%s", reply.text);

    listen_fresh(0);
    handler_state.answer = DT_CTL_CANNOT_ARM;
    CHECK_EQ(capture_of_self(3000, &reply), DT_CTL_CANNOT_ARM);
    CHECK_STR(reply.text, "the handler says cannot_arm");
    handler_state.answer = DT_CTL_TIMEOUT;
    CHECK_EQ(capture_of_self(3000, &reply), DT_CTL_TIMEOUT);
    CHECK_STR(reply.text, "the handler says timeout");
    handler_state.answer = DT_CTL_SUCCESS;

    /* the listener does not answer in time: the client's own timeout */
    handler_block(1);
    CHECK_EQ(capture_of_self(300, &reply), DT_CTL_TIMEOUT);
    CHECK(strstr(reply.text, "in time") != NULL, "%s", reply.text);
    handler_block(0);

    /* a listener without a handler cannot capture, but answers INFO */
    dt__ctl_stop();
    dt_ctl_options o = {0, 0, 1, "", NULL, NULL, 0, NULL};
    REQUIRE_EQ(dt__ctl_listen(&o), DT_OK);
    CHECK_EQ(capture_of_self(3000, &reply), DT_CTL_CANNOT_ARM);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    dt__ctl_stop();
}

typedef struct capture_call {
    pthread_t thread;
    dt_ctl_code rc;
    dt_ctl_msg reply;
    int out;
} capture_call;

static void *capture_thread(void *arg)
{
    capture_call *c = arg;
    dt_ctl_msg req;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    req.duration_ns = 1000000;
    c->rc = dt__ctl_send(getpid(), &req, c->out, 10000, &c->reply);
    return NULL;
}

static void test_second_capture_is_busy(void)
{
    listen_fresh(0);
    int before = handler_calls();
    handler_block(1);
    capture_call first = {.out = scratch_file("first.out", O_WRONLY)};
    REQUIRE_EQ(pthread_create(&first.thread, NULL, capture_thread, &first), 0);
    if (!handler_wait_entered()) {
        handler_block(0);
        pthread_join(first.thread, NULL);
        FAIL("the first capture never reached the handler");
    }
    dt_ctl_msg req, reply;
    dt__ctl_msg_init(&req, DT_CTL_CAPTURE);
    req.steps = 1;
    int out = scratch_file("second.out", O_WRONLY);
    CHECK_EQ(dt__ctl_send(getpid(), &req, out, 2000, &reply), DT_CTL_BUSY);
    CHECK(strstr(reply.text, "in progress") != NULL, "%s", reply.text);
    dt__ctl_msg_init(&req, DT_CTL_DUMP);
    CHECK_EQ(dt__ctl_send(getpid(), &req, out, 2000, &reply), DT_CTL_BUSY);
    close(out);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS); /* INFO is answered meanwhile */
    CHECK_EQ(reply.state, DT_CTL_CAPTURING);
    handler_block(0);
    pthread_join(first.thread, NULL);
    close(first.out);
    CHECK_EQ(first.rc, DT_CTL_SUCCESS);
    CHECK_EQ(first.reply.records, 7u);
    CHECK_EQ(handler_calls(), before + 1);
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK_EQ(reply.state, DT_CTL_IDLE);
    dt__ctl_stop();
}

static int setup(void)
{
    if (runtime_dir_make("control") != 0) return 1;
    snprintf(ctl_dir, sizeof ctl_dir, "%s/devtrace", base_dir);
    return 0;
}

static int teardown(void)
{
    dt__ctl_stop();
    return runtime_dir_remove();
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_messages_round_trip), DT_TEST(test_job_id_sources),
             DT_TEST(test_info_names_the_process_and_its_job),
             DT_TEST(test_capture_writes_into_the_passed_descriptor),
             DT_TEST(test_malformed_requests_get_bad_request), DT_TEST(test_silent_and_vanishing_peers),
             DT_TEST(test_second_capture_is_busy), DT_TEST(test_error_codes_are_distinct), DT_TEST(test_another_uid_is_refused),
             DT_TEST(test_stale_sockets_are_removed_and_not_listed),
             DT_TEST(test_directory_of_wrong_kind_is_refused),
             DT_TEST(test_forked_child_does_not_serve_the_parent_socket), DT_TEST(test_socket_removed_at_exit),
             DT_TEST(test_cli_lists_the_listener), DT_TEST(test_idle_connections_hold_no_other_up),
             DT_TEST(test_the_login_runtime_directory_comes_before_tmp))

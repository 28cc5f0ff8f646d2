/* dt_session_write_fd: every format streams to an open descriptor (a file
   from where it stands, a pipe) byte for byte as dt_session_write writes
   it to a path, and the descriptor stays open. */
#include "dt_check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devtrace/devtrace.h"

static char dir[64];

static dt_session *stopped_session(void)
{
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    dt_session *s = NULL;
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    for (int i = 0; i < 100; i++) {
        REQUIRE_EQ(dt_range_push("step", NULL), DT_OK);
        REQUIRE_EQ(dt_range_pop(), DT_OK);
    }
    REQUIRE_EQ(dt_session_stop(s), DT_OK);
    return s;
}

/* The whole content of a file from offset `from`; *n its length. */
static char *slurp(const char *path, long from, size_t *n)
{
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, from, SEEK_SET);
    char *buf = malloc((size_t)(len - from) + 1);
    *n = fread(buf, 1, (size_t)(len - from), f);
    fclose(f);
    return buf;
}

static void test_each_format_to_a_descriptor_equals_the_file(void)
{
    dt_session *s = stopped_session();
    for (int f = 0; dt_format_name((dt_format)f); f++) {
        if (!dt_format_available((dt_format)f)) continue;
        /* the same file by path, then through a descriptor (the trace
           names the file the descriptor is open on) */
        char file[128], stream[128];
        snprintf(file, sizeof file, "%s/file%s", dir, dt_format_suffix((dt_format)f));
        snprintf(stream, sizeof stream, "%s/stream%s", dir, dt_format_suffix((dt_format)f));
        REQUIRE_EQ(dt_session_write(s, stream, (dt_format)f), DT_OK);
        REQUIRE_EQ(rename(stream, file), 0);
        int fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        REQUIRE_EQ(write(fd, "HEAD", 4), 4); /* written from where it stands */
        CHECK_EQ(dt_session_write_fd(s, fd, (dt_format)f), DT_OK);
        CHECK_EQ(write(fd, "TAIL", 4), 4); /* still open */
        CHECK_EQ(close(fd), 0);
        size_t a, b;
        char *want = slurp(file, 0, &a);
        char *got = slurp(stream, 4, &b);
        CHECK(a > 100, "%s: %zu bytes", dt_format_name((dt_format)f), a);
        CHECK_EQ(b, a + 4);
        CHECK(b == a + 4 && memcmp(got, want, a) == 0 && memcmp(got + a, "TAIL", 4) == 0, "%s differs",
              dt_format_name((dt_format)f));
        free(want);
        free(got);
    }
    dt_session_destroy(s);
}

typedef struct drain {
    int fd;
    size_t bytes;
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    char buf[65536];
    ssize_t n;
    while ((n = read(d->fd, buf, sizeof buf)) > 0) d->bytes += (size_t)n;
    return NULL;
}

static void test_a_pipe_gets_the_whole_trace(void)
{
    dt_session *s = stopped_session();
    char file[128];
    
    int p[2];
    REQUIRE_EQ(pipe(p), 0);
    /* as long as the trace written to a path named after the pipe */
    char name[64], link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", p[1]);
    ssize_t n = readlink(link, name, sizeof name - 1);
    REQUIRE(n > 0);
    name[n] = 0;
    snprintf(file, sizeof file, "%s/%s", dir, name);
    REQUIRE_EQ(dt_session_write(s, file, DT_FORMAT_JSON), DT_OK);
    struct stat st;
    REQUIRE_EQ(stat(file, &st), 0);
    drain d = {p[0], 0};
    pthread_t t;
    REQUIRE_EQ(pthread_create(&t, NULL, drain_main, &d), 0);
    CHECK_EQ(dt_session_write_fd(s, p[1], DT_FORMAT_JSON), DT_OK);
    CHECK_EQ(close(p[1]), 0); /* dt_session_write_fd left it open */
    pthread_join(t, NULL);
    close(p[0]);
    CHECK_EQ(d.bytes, (size_t)st.st_size - strlen(dir) - 1); /* named without dir/ */
    dt_session_destroy(s);
}

static void test_bad_descriptors_and_states_are_refused(void)
{
    dt_session *s = stopped_session();
    CHECK_EQ(dt_session_write_fd(s, -1, DT_FORMAT_JSON), DT_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dt_session_write_fd(s, 1, (dt_format)9), DT_ERR_INVALID_ARGUMENT);
    CHECK_EQ(dt_session_write_fd(NULL, 1, DT_FORMAT_JSON), DT_ERR_INVALID_ARGUMENT);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* not open for writing */
    CHECK_EQ(dt_session_write_fd(s, fd, DT_FORMAT_JSON), DT_ERR_IO);
    CHECK(strstr(dt_last_error(), "descriptor") != NULL, "%s", dt_last_error());
    close(fd);
    dt_session_destroy(s);
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    REQUIRE_EQ(dt_session_create(&c, &s), DT_OK);
    REQUIRE_EQ(dt_session_start(s), DT_OK);
    CHECK_EQ(dt_session_write_fd(s, 1, DT_FORMAT_JSON), DT_ERR_STATE); /* still running */
    dt_session_destroy(s);
}

static int setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dt-write-fd-XXXXXX");
    return mkdtemp(dir) ? 0 : 1;
}

static int teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, getenv("KEEP") ? "true %s" : "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

DT_TEST_MAIN(setup, teardown, DT_TEST(test_each_format_to_a_descriptor_equals_the_file),
             DT_TEST(test_a_pipe_gets_the_whole_trace), DT_TEST(test_bad_descriptors_and_states_are_refused))

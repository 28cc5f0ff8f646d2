/* The control directory and its sockets: another uid refused, stale sockets,
   a directory of the wrong kind, a forked or spawned child, the socket removed
   at exit, the command's listing, idle connections, where the directory is. */
#define DT_TEST_PART /* messages.c has main */
#include "control_test.h"

/* A child as uid/gid 65534 that connects to path and sends INFO: exits 0
   when the listener closed without an answer, 1 when it answered, 2 when
   the connect itself failed. */
static int connect_as_nobody(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) _exit(2);
        uint8_t h[8] = {'D', 'T', DT_CTL_VERSION, DT_CTL_INFO, 0, 0, 0, 0}, r[64];
        if (send(fd, h, sizeof h, MSG_NOSIGNAL) < 0) _exit(0);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 3000) <= 0) _exit(4);
        _exit(recv(fd, r, sizeof r, 0) > 0 ? 1 : 0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

void test_another_uid_is_refused(void)
{
    if (geteuid() != 0) SKIP("needs root, to run a peer as another uid");
    listen_fresh(0);
    char path[256];
    snprintf(path, sizeof path, "%s", dt__ctl_socket_path());
    /* the directory keeps the other user out */
    CHECK_EQ(connect_as_nobody(path), 2);
    /* past the directory, the listener checks the peer itself */
    uint64_t refused = dt__ctl_refused();
    chmod(base_dir, 0711);
    chmod(ctl_dir, 0711);
    chmod(path, 0777);
    CHECK_EQ(connect_as_nobody(path), 0);
    chmod(ctl_dir, 0700);
    CHECK_EQ(dt__ctl_refused(), refused + 1);
    dt_ctl_msg reply;
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    dt__ctl_stop();

    /* and the client checks the listener: one run by uid 65534 */
    char other[128];
    snprintf(other, sizeof other, "%s/nobody", base_dir);
    REQUIRE_EQ(mkdir(other, 0700), 0);
    REQUIRE_EQ(chown(other, 65534, 65534), 0);
    int up[2], down[2];
    REQUIRE_EQ(pipe(up), 0);
    REQUIRE_EQ(pipe(down), 0);
    pid_t pid = fork();
    if (pid == 0) {
        char sock[256] = "";
        setenv("XDG_RUNTIME_DIR", other, 1);
        if (setgid(65534) == 0 && setuid(65534) == 0) {
            dt_ctl_options o = {0, 0, 1, "", test_handler, NULL, 0, NULL};
            if (dt__ctl_listen(&o) == DT_OK) snprintf(sock, sizeof sock, "%s", dt__ctl_socket_path());
        }
        if (write(up[1], sock, sizeof sock) != (ssize_t)sizeof sock) _exit(1);
        char c;
        if (read(down[0], &c, 1) < 0) _exit(1);
        dt__ctl_stop();
        _exit(0);
    }
    char sock[256] = "";
    CHECK_EQ(read(up[0], sock, sizeof sock), (ssize_t)sizeof sock);
    int fd = -1;
    CHECK(sock[0] != 0, "the child could not listen");
    if (sock[0]) CHECK_EQ(dt__ctl_connect_path(sock, 2000, &fd), DT_CTL_UNTRUSTED);
    CHECK_EQ(write(down[1], "x", 1), 1);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
    chmod(base_dir, 0700);
}

/* A socket file nobody listens on, as a killed process leaves it. */
static void leave_dead_socket(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    REQUIRE_EQ(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    REQUIRE_EQ(listen(fd, 1), 0);
    close(fd);
}

void test_stale_sockets_are_removed_and_not_listed(void)
{
    dt__ctl_stop();
    mkdir(ctl_dir, 0700);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, NULL, 0);
    char dead_path[256], live_path[256], plain[256];
    snprintf(dead_path, sizeof dead_path, "%s/%ld.sock", ctl_dir, (long)dead); /* its pid is gone */
    snprintf(live_path, sizeof live_path, "%s/%ld.sock", ctl_dir, (long)getppid()); /* alive, not listening */
    snprintf(plain, sizeof plain, "%s/%ld.sock", ctl_dir, (long)dead + 1000000); /* not a socket */
    leave_dead_socket(dead_path);
    leave_dead_socket(live_path);
    FILE *f = fopen(plain, "w");
    REQUIRE(f != NULL);
    fclose(f);

    dt_ctl_msg *list = NULL;
    size_t count = 99;
    REQUIRE_EQ(dt__ctl_list(1000, &list, &count), DT_OK);
    CHECK_EQ(count, 0u);
    free(list);
    struct stat st;
    CHECK_EQ(lstat(dead_path, &st), -1);
    CHECK_EQ(lstat(live_path, &st), -1);
    CHECK_EQ(lstat(plain, &st), 0); /* only sockets are removed */
    unlink(plain);

    leave_dead_socket(live_path);
    dt_ctl_msg info, reply;
    dt__ctl_msg_init(&info, DT_CTL_INFO);
    CHECK_EQ(dt__ctl_send(getppid(), &info, -1, 1000, &reply), DT_CTL_NO_SUCH_LISTENER);
    CHECK_EQ(lstat(live_path, &st), -1);

    /* a stale socket under our own pid is replaced when we listen */
    char own[256];
    snprintf(own, sizeof own, "%s/%ld.sock", ctl_dir, (long)getpid());
    leave_dead_socket(own);
    listen_fresh(0);
    REQUIRE_EQ(dt__ctl_list(1000, &list, &count), DT_OK);
    CHECK_EQ(count, 1u);
    if (count == 1) CHECK_EQ(list[0].pid, getpid());
    free(list);
    dt__ctl_stop();
}

static void expect_refused_dir(const char *what, const char *message_part)
{
    dt_ctl_options o = {0, 0, 1, "", test_handler, NULL, 0, NULL};
    dt_status st = dt__ctl_listen(&o);
    CHECK(st == DT_ERR_STATE, "%s: %s (%s)", what, dt_status_name(st), dt_last_error());
    if (st == DT_OK) dt__ctl_stop();
    CHECK(strstr(dt_last_error(), message_part) != NULL, "%s: \"%s\"", what, dt_last_error());
    dt_ctl_msg *list = NULL;
    size_t count = 0;
    CHECK(dt__ctl_list(500, &list, &count) == DT_ERR_STATE, "%s: a client trusts it", what);
    free(list);
}

void test_directory_of_wrong_kind_is_refused(void)
{
    dt__ctl_stop();
    char other[128], target[256];
    snprintf(other, sizeof other, "%s/other", base_dir);
    setenv("XDG_RUNTIME_DIR", other, 1);
    REQUIRE_EQ(mkdir(other, 0700), 0);
    char dir[256];
    REQUIRE_EQ(dt__ctl_dir(dir, sizeof dir), DT_OK);
    snprintf(target, sizeof target, "%s/devtrace", other);
    CHECK_STR(dir, target);

    REQUIRE_EQ(mkdir(target, 0755), 0);
    chmod(target, 0755);
    expect_refused_dir("mode 0755", "mode 0755");
    rmdir(target);

    char elsewhere[256];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", base_dir);
    mkdir(elsewhere, 0700);
    REQUIRE_EQ(symlink(elsewhere, target), 0);
    expect_refused_dir("symbolic link", "symbolic link");
    unlink(target);

    FILE *f = fopen(target, "w");
    REQUIRE(f != NULL);
    fclose(f);
    expect_refused_dir("regular file", "not a directory");
    unlink(target);

    if (geteuid() == 0) {
        REQUIRE_EQ(mkdir(target, 0700), 0);
        REQUIRE_EQ(chown(target, 65534, 65534), 0);
        expect_refused_dir("another owner", "belongs to uid 65534");
        rmdir(target);
    } else {
        printf("[%s] another owner: not checked (needs root)\n", dt_check_case);
    }

    /* missing: created 0700 whatever the umask */
    mode_t old = umask(0);
    dt_ctl_options o = {0, 0, 1, "", test_handler, NULL, 0, NULL};
    CHECK_EQ(dt__ctl_listen(&o), DT_OK);
    umask(old);
    struct stat st;
    CHECK_EQ(lstat(target, &st), 0);
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700, "mode %o", (unsigned)st.st_mode);
    dt__ctl_stop();

    /* an XDG_RUNTIME_DIR that is not ours, not absolute or missing: /tmp */
    char fallback[64];
    snprintf(fallback, sizeof fallback, "/tmp/devtrace-%u", (unsigned)geteuid());
    static const char *const unusable[] = {"relative/dir", "/nonexistent/xdg", "/proc/self/nonexistent"};
    for (size_t i = 0; i < 3; i++) {
        setenv("XDG_RUNTIME_DIR", unusable[i], 1);
        REQUIRE_EQ(dt__ctl_dir(dir, sizeof dir), DT_OK);
        CHECK_STR(dir, fallback);
    }
    unsetenv("XDG_RUNTIME_DIR");
    REQUIRE_EQ(dt__ctl_dir(dir, sizeof dir), DT_OK);
    CHECK_STR(dir, fallback);
    setenv("XDG_RUNTIME_DIR", base_dir, 1);
}

/* The inode of the listening socket bound at path, from /proc/net/unix
   (which names it as bound: under its temporary name). */
static unsigned long socket_inode(const char *path)
{
    FILE *f = fopen("/proc/net/unix", "r");
    if (!f) return 0;
    char line[512];
    unsigned long inode = 0;
    while (fgets(line, sizeof line, f)) {
        char p[256] = "";
        unsigned long ino;
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &ino, p) == 2 && strcmp(p, path) == 0) inode = ino;
    }
    fclose(f);
    return inode;
}

/* Whether any descriptor of process `pid` is the socket `inode`. */
static int holds_socket(long pid, unsigned long inode)
{
    char want[64], fdpath[64], link[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    for (int fd = 0; fd < 1024; fd++) {
        snprintf(fdpath, sizeof fdpath, "/proc/%ld/fd/%d", pid, fd);
        ssize_t n = readlink(fdpath, link, sizeof link - 1);
        if (n <= 0) continue;
        link[n] = 0;
        if (strcmp(link, want) == 0) return 1;
    }
    return 0;
}

void test_forked_child_does_not_serve_the_parent_socket(void)
{
    listen_fresh(0);
    char path[256];
    snprintf(path, sizeof path, "%s", dt__ctl_socket_path());
    char bound[300];
    snprintf(bound, sizeof bound, "%s.tmp", path);
    unsigned long inode = socket_inode(bound);
    REQUIRE(inode != 0, "the listening socket is not in /proc/net/unix");
    REQUIRE(holds_socket(getpid(), inode));
    pid_t parent = getpid();

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        if (holds_socket(getpid(), inode)) bad |= 1;    /* kept the parent's socket */
        if (dt__ctl_socket_path()[0]) bad |= 2;          /* believes it listens */
        dt_ctl_msg *list = NULL;
        size_t count = 0;
        if (dt__ctl_list(2000, &list, &count) != DT_OK || count != 1 || list[0].pid != parent) bad |= 4;
        free(list);
        dt_ctl_options o = {0, 0, 1, "", test_handler, NULL, 0, NULL};
        if (dt__ctl_listen(&o) != DT_OK) bad |= 8; /* may listen on its own */
        char own[256];
        snprintf(own, sizeof own, "%s/%ld.sock", ctl_dir, (long)getpid());
        if (strcmp(dt__ctl_socket_path(), own) != 0) bad |= 16;
        dt__ctl_stop();
        exit(bad); /* exit handlers run: the parent's socket stays */
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child reported %d", WEXITSTATUS(status));
    struct stat st;
    CHECK_EQ(lstat(path, &st), 0);
    dt_ctl_msg reply;
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK_EQ(reply.pid, getpid());

    /* a spawned program (no fork handlers run) inherits nothing either */
    int p[2];
    REQUIRE_EQ(pipe(p), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    char script[128];
    snprintf(script, sizeof script, "ls -l /proc/$$/fd | grep -c 'socket:\\[%lu\\]'", inode);
    char *argv[] = {"sh", "-c", script, NULL};
    pid_t sh;
    REQUIRE_EQ(posix_spawn(&sh, "/bin/sh", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    char out[32] = "";
    ssize_t n = read(p[0], out, sizeof out - 1);
    close(p[0]);
    waitpid(sh, NULL, 0);
    CHECK(n > 0 && atoi(out) == 0, "the spawned shell holds the socket: \"%s\"", out);
    dt__ctl_stop();
}

/* A process that exits while it listens leaves no socket behind. */
void test_socket_removed_at_exit(void)
{
    dt__ctl_stop();
    int p[2];
    REQUIRE_EQ(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dt_ctl_options o = {0, 0, 1, "", test_handler, NULL, 0, NULL};
        char path[256] = "";
        if (dt__ctl_listen(&o) == DT_OK) snprintf(path, sizeof path, "%s", dt__ctl_socket_path());
        if (write(p[1], path, sizeof path) != (ssize_t)sizeof path) _exit(1);
        exit(0); /* no dt__ctl_stop */
    }
    char path[256] = "";
    CHECK_EQ(read(p[0], path, sizeof path), (ssize_t)sizeof path);
    close(p[0]);
    close(p[1]);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    REQUIRE(path[0] != 0, "the child could not listen");
    struct stat st;
    CHECK_EQ(lstat(path, &st), -1);
}

/* `devtrace trigger --list` prints this listener as it answers INFO. */
void test_cli_lists_the_listener(void)
{
    char cli[512];
    snprintf(cli, sizeof cli, "%s/devtrace", DT_BINARY_DIR);
    if (access(cli, X_OK) != 0) SKIP("%s is not built", cli);
    setenv("TORCHELASTIC_RUN_ID", "run7", 1);
    listen_fresh(0);
    unsetenv("TORCHELASTIC_RUN_ID");
    char cmd[600], out[4096] = "";
    snprintf(cmd, sizeof cmd, "'%s' trigger --list 2>&1", cli);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    CHECK_EQ(pclose(p), 0);
    char row[256];
    snprintf(row, sizeof row, "\n%-8ld %-16s %-6d %-6d %-10s %-9s %s\n", (long)getpid(), "test_control", 3, 8,
             "emulated", "idle", "torchelastic:run7");
    CHECK(strncmp(out, "PID ", 4) == 0 && strstr(out, row) != NULL, "output:\n%s\nwanted the row:%s", out, row);
    dt__ctl_stop();

    /* nobody listens: said so, and no row */
    p = popen(cmd, "r");
    REQUIRE(p != NULL);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    CHECK_EQ(pclose(p), 0);
    CHECK(strstr(out, "no process of this user listens") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' trigger 2>/dev/null", cli);
    CHECK_EQ(WEXITSTATUS(system(cmd)), 2);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Connections that send nothing hold no other up: each is read with its own
   deadline (one control thread used to serve them one at a time, 2 s each,
   so that 18 of them kept every client out for 36 s). */
void test_idle_connections_hold_no_other_up(void)
{
    listen_fresh(0); /* the default read timeout: 2 s */
    int idle[DT_CTL_MAX_PENDING + 8];
    for (int i = 0; i < 18; i++) idle[i] = raw_connect();
    dt_ctl_msg reply;
    uint64_t t0 = mono_ms();
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK(mono_ms() - t0 < 1000, "INFO took %llu ms behind 18 idle connections", (unsigned long long)(mono_ms() - t0));
    /* more than the listener reads at once: the oldest are dropped for the new */
    for (int i = 18; i < DT_CTL_MAX_PENDING + 8; i++) idle[i] = raw_connect();
    t0 = mono_ms();
    CHECK_EQ(info_of_self(&reply), DT_CTL_SUCCESS);
    CHECK(mono_ms() - t0 < 1000, "INFO took %llu ms behind %d idle connections", (unsigned long long)(mono_ms() - t0),
          DT_CTL_MAX_PENDING + 8);
    struct pollfd p = {idle[0], POLLIN, 0};
    CHECK(poll(&p, 1, 1000) == 1, "the oldest idle connection was not dropped");
    uint8_t b;
    CHECK_EQ(recv(idle[0], &b, 1, MSG_DONTWAIT), 0); /* closed, unanswered */
    for (int i = 0; i < DT_CTL_MAX_PENDING + 8; i++) close(idle[i]);
    dt__ctl_stop();
}

/* Without XDG_RUNTIME_DIR: /run/user/<uid> (which only the login manager
   makes) before /tmp/devtrace-<uid> (which any user can make first: then
   refused, saying what to do). Run as uid 65534 in a child. */
void test_the_login_runtime_directory_comes_before_tmp(void)
{
    if (geteuid() != 0) SKIP("needs root, to make /run/user/65534 and a /tmp/devtrace-65534 of another owner");
    struct stat st;
    if (stat("/run/user", &st) != 0 || stat("/run/user/65534", &st) == 0 || stat("/tmp/devtrace-65534", &st) == 0)
        SKIP("/run/user is missing, or /run/user/65534 or /tmp/devtrace-65534 exists already");
    REQUIRE_EQ(mkdir("/run/user/65534", 0700), 0);
    REQUIRE_EQ(chown("/run/user/65534", 65534, 65534), 0);
    REQUIRE_EQ(mkdir("/tmp/devtrace-65534", 0700), 0); /* planted by another user (root) */
    int fds[2];
    REQUIRE_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        unsetenv("XDG_RUNTIME_DIR");
        char dir[256], msg[1024] = "";
        int n = 0;
        if (dt__ctl_dir(dir, sizeof dir) == DT_OK) n += snprintf(msg + n, sizeof msg - (size_t)n, "%s\n", dir);
        if (rmdir("/run/user/65534/devtrace") != 0 && errno != ENOENT) _exit(4);
        dt_status rc = dt__ctl_dir_prepare(dir);
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%d\n", (int)rc);
        rmdir("/run/user/65534/devtrace");
        _exit(n > 0 && write(fds[1], msg, (size_t)n) == n ? 0 : 5);
    }
    close(fds[1]);
    char got[1024] = "";
    ssize_t r = read(fds[0], got, sizeof got - 1);
    close(fds[0]);
    if (r > 0) got[r] = 0;
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    CHECK_STR(got, "/run/user/65534/devtrace\n0\n");
    rmdir("/run/user/65534");
    pid = fork();
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        unsetenv("XDG_RUNTIME_DIR");
        char dir[256];
        if (dt__ctl_dir(dir, sizeof dir) != DT_OK || strcmp(dir, "/tmp/devtrace-65534") != 0) _exit(4);
        if (dt__ctl_dir_prepare(dir) != DT_ERR_STATE) _exit(5);
        const char *why = dt_last_error();
        _exit(strstr(why, "belongs to uid 0, not to uid 65534: refused") && strstr(why, "XDG_RUNTIME_DIR") ? 0 : 6);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a planted /tmp/devtrace-65534: child status %d", status);
    rmdir("/tmp/devtrace-65534");
}

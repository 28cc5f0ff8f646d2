/* The local control channel between `devtrace trigger` and a listening
   process: the message format, the directory's checks, peer credentials,
   malformed and vanishing peers, busy, stale sockets, descriptor passing,
   and a forked or spawned child of a listening process. What the files of
   the test share: the test's runtime directory (runtime_dir.h's base_dir,
   defined in messages.c) and the control directory in it. */
#ifndef DT_CONTROL_TEST_H
#define DT_CONTROL_TEST_H

#include "base/log.h"
#include "protocol/control_client.h"
#include "protocol/control_server.h"
#include "dt_check.h"
#include "runtime_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

extern char ctl_dir[128]; /* base_dir/devtrace */

/* messages.c */
/* The handler that records what it was asked, may block, and writes into
   the descriptor it is given. */
void test_handler(void *ctx, const dt_ctl_request *req, int fd, dt_ctl_result *res);
void listen_fresh(int read_timeout_ms);
int raw_connect(void);
dt_ctl_code info_of_self(dt_ctl_msg *reply);

/* directory.c */
void test_another_uid_is_refused(void);
void test_stale_sockets_are_removed_and_not_listed(void);
void test_directory_of_wrong_kind_is_refused(void);
void test_forked_child_does_not_serve_the_parent_socket(void);
void test_socket_removed_at_exit(void);
void test_cli_lists_the_listener(void);
void test_idle_connections_hold_no_other_up(void);
void test_the_login_runtime_directory_comes_before_tmp(void);

#endif /* DT_CONTROL_TEST_H */

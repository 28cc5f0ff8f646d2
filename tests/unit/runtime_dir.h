/*
 * A private XDG_RUNTIME_DIR for the tests of the control channel, so that
 * their sockets never meet the user's: made in the test program's setup,
 * removed with what it holds in its teardown.
 */
#ifndef DT_TEST_RUNTIME_DIR_H
#define DT_TEST_RUNTIME_DIR_H

#include <stdio.h>
#include <stdlib.h>

/* XDG_RUNTIME_DIR of the tests, defined in the file with main (a test of
   several files defines DT_TEST_PART in the others, as for dt_check.h). */
extern char base_dir[64];
#ifndef DT_TEST_PART
char base_dir[64];
#endif

/* 0 when made and set; tag names it under /tmp. */
static inline int runtime_dir_make(const char *tag)
{
    snprintf(base_dir, sizeof base_dir, "/tmp/dt-%s-XXXXXX", tag);
    if (!mkdtemp(base_dir)) return 1;
    return setenv("XDG_RUNTIME_DIR", base_dir, 1) == 0 ? 0 : 1;
}

static inline int runtime_dir_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base_dir);
    return system(cmd) == 0 ? 0 : 1;
}

#endif

/* The session internals the injection library uses (inject_support.h). */
#include "api/inject_support.h"
#include "dt_internal.h"

#include <stdio.h>

dt_status dt_inject_support_start(dt_session *s, const char *deferred)
{
    return dt_session_start_deferring(s, deferred);
}

void dt_inject_support_exiting(void)
{
    atomic_store(&dt_g_exiting, 1);
}

void dt_inject_support_fork_prepare(dt_session *s)
{
    dt_session_fork_prepare(s);
}

void dt_inject_support_fork_parent(dt_session *s)
{
    dt_session_fork_parent(s);
}

void dt_inject_support_fork_child(dt_session *s)
{
    dt_session_fork_child(s);
}

void dt_inject_support_forked(dt_session *s)
{
    dt_session_forked(s);
}

int dt_inject_support_fork_unrecorded(const dt_session *s)
{
    return s->fork_vendor_unusable;
}

void dt_inject_support_rank(char *out, size_t n)
{
    dt_rank_info info;
    dt_rank_from_env(&info);
    snprintf(out, n, "%s", info.rank_text);
}

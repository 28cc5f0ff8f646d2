/* The session internals the on-demand layer uses (ondemand_support.h; the
   dumps' are in dump.c). */
#include "api/ondemand_support.h"

#include "core/flight.h"
#include "core/jobinfo.h"
#include "core/session.h"

int dt__api_flight_running(void)
{
    return dt__core_flight_running();
}

void dt__api_flight_discard_at_stop(dt_session *s)
{
    dt__core_flight_discard_at_stop(s);
}

dt_session *dt__api_active_session(void)
{
    return dt__active_session();
}

void dt__api_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns)
{
    dt__core_set_window(s, start_ns, end_ns);
}

const char *dt__api_last_backend(void)
{
    return dt__core_last_backend();
}

void dt__api_launcher_rank(int64_t *rank, int64_t *local_rank, int64_t *world_size)
{
    dt_rank_info info;
    dt__rank_from_env(&info);
    *rank = info.known ? info.rank : -1;
    *local_rank = info.local_rank;
    *world_size = info.world_size;
}

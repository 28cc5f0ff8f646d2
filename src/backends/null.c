/* The null backend: no vendor, no device activity. A session with it records
   user ranges on CLOCK_REALTIME, so the whole pipeline (ranges, export,
   check) works on any machine. */
#include "backends/backend.h"

#include <stdio.h>

static dt_status null_probe(const dt_backend *self, dt_backend_status *st)
{
    st->available = 1;
    snprintf(st->reason, sizeof st->reason, "records user ranges only (no device activity)");
    return DT_OK;
}

static dt_status null_start(const dt_backend *self, dt_session *s)
{
    dt__core_set_library(s, "", "");
    return DT_OK;
}

const dt_backend dt__backend_null = {
    .name = "null",
    .vendor = "none",
    .api_category = "privateuse1",
    /* no buffers: a dump holds the host ranges */
    .caps = DT_BACKEND_FLIGHT_RECORDER,
    .probe = null_probe,
    .start = null_start,
};

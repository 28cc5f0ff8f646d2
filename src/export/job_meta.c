/* The facts a reader needs to bring traces of one job together: the rank
   (Kineto's distributedInfo, where HTA looks for it) and, in the devtrace
   key, the host, the process and how far its realtime clock may be off. */
#include <stdio.h>
#include <string.h>

#include "export/job_meta.h"

#include "format/json.h"

#define put_text dt__out_text
#define put_int dt__out_i64

void dt__wr_json_distributed_info(dt_out *o, const dt_recording *rec)
{
    const dt_rank_info *r = rec->rank;
    if (!r->known)
        return;
    /* One line, with a space after each colon: HTA finds the rank with the
       line-based pattern "rank":\s+(\d+) and takes the first match in the file. */
    put_text(o, "\"distributedInfo\": {\"rank\": ");
    put_int(o, r->rank);
    if (r->local_rank >= 0) {
        put_text(o, ", \"local_rank\": ");
        put_int(o, r->local_rank);
    }
    if (r->world_size >= 0) {
        put_text(o, ", \"world_size\": ");
        put_int(o, r->world_size);
    }
    put_text(o, ", \"host\": ");
    dt__json_string(o, rec->host_name, rec->host_name_len);
    put_text(o, ", \"launcher\": ");
    dt__json_string(o, r->launcher, strnlen(r->launcher, sizeof r->launcher));
    put_text(o, "},\n");
}

void dt__wr_json_origin(dt_out *o, const dt_recording *rec)
{
    const dt_host_clock *c = rec->host_clock;
    put_text(o, ",\n  \"host\": ");
    dt__json_string(o, rec->host_name, rec->host_name_len);
    put_text(o, ",\n  \"pid\": ");
    put_int(o, rec->pid);
    put_text(o, ",\n  \"realtimeClock\": {\"clock\": \"CLOCK_REALTIME\", \"clocksource\": ");
    dt__json_string(o, c->clocksource, strnlen(c->clocksource, sizeof c->clocksource));
    if (c->known) {
        put_text(o, c->synchronized ? ", \"synchronized\": true" : ", \"synchronized\": false");
        put_text(o, ", \"maxErrorUs\": ");
        put_int(o, c->max_error_us);
        put_text(o, ", \"estErrorUs\": ");
        put_int(o, c->est_error_us);
    }
    put_text(o, "}");
}

/* A DUMP request, in every mode: the flight recorder of the session running
   in this process, written through the facade (api/ondemand_support.h) to
   the client's descriptor, and the reply it makes (ondemand.h). */
#include "ondemand/ondemand.h"

#include "api/ondemand_support.h"
#include "protocol/record.h"

#include <stdio.h>

void dt__ondemand_dump_running(int fd, dt_format format, const char *note, dt_ctl_result *res)
{
    dt_session *s = NULL;
    dt_status st = dt__api_dump_hold_running(fd, format, &s);
    if (st == DT_ERR_BUSY) {
        res->code = DT_CTL_BUSY;
        snprintf(res->text, sizeof res->text, "another dump of the flight recorder is being written (a dump "
                                              "trigger's, or another devtrace trigger --dump): it holds the window");
        return;
    }
    if (st == DT_ERR_STATE) {
        res->code = DT_CTL_CANNOT_ARM;
        snprintf(res->text, sizeof res->text, "this process has no flight recorder");
        return;
    }
    size_t events = 0;
    uint64_t loss[DT_LOSS_COUNT] = {0};
    if (st == DT_OK) {
        snprintf(res->backend, sizeof res->backend, "%s", dt_session_backend(s));
        st = dt__api_dump_held(s, fd, format, note ? "flight_recorder.dump" : NULL, note, &events, loss);
        dt__api_dump_release(s);
    }
    if (st != DT_OK) {
        res->code = DT_CTL_CANNOT_ARM;
        snprintf(res->text, sizeof res->text, "the flight recorder could not be written: %s", dt_last_error());
        return;
    }
    res->code = DT_CTL_SUCCESS;
    res->written = 1;
    res->records = events;
    dt__record_loss_summary(res->text, sizeof res->text, loss);
}

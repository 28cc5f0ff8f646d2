/* A program that uses an installed devtrace the way a user would. */
#include <devtrace/devtrace.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    dt_config cfg;
    dt_config_init(&cfg);
    cfg.backend = "null";
    cfg.output_path = argc > 1 ? argv[1] : "consumer.json";
    dt_session *s;
    if (dt_session_create(&cfg, &s) != DT_OK || dt_session_start(s) != DT_OK) {
        fprintf(stderr, "devtrace: %s\n", dt_last_error());
        return 1;
    }
    uint64_t range;
    dt_range_push("installed", &range);
    dt_range_pop();
    if (dt_session_stop(s) != DT_OK || dt_session_write(s, NULL, cfg.format) != DT_OK) {
        fprintf(stderr, "devtrace: %s\n", dt_last_error());
        return 1;
    }
    printf("%s %zu\n", dt_version(), dt_session_event_count(s));
    dt_session_destroy(s);
    return DT_VERSION_NUMBER >= DT_MAKE_VERSION(0, 1, 0) ? 0 : 1;
}

/* A session's configuration and its making: the defaults, what the
   environment sets; a session created, and destroyed. */
#include "base/alloc.h"
#include "base/env_names.h"
#include "base/demangle.h"
#include "base/log.h"
#include "base/os.h"
#include "core/clock.h"
#include "core/contract.h"
#include "core/corr.h"
#include "core/decode.h"
#include "core/event.h"
#include "core/flight.h"
#include "core/intern.h"
#include "core/jobinfo.h"
#include "core/session_impl.h"
#include "core/threads.h"
#include "format/formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void dt_config_init(dt_config *c)
{
    memset(c, 0, sizeof *c);
    c->backend = "auto";
    c->output_path = "devtrace.json";
    c->format = DT_FORMAT_JSON;
    c->capture = DT_CAPTURE_DEFAULT;
    c->max_duration_ns = UINT64_C(3600) * 1000000000u;
    c->max_events = 0;
    c->buffer_size = 4u << 20;
    c->buffer_count = 32;
    c->calibration_period_ms = 1000;
}

void dt_config_from_env(dt_config *c)
{
    const char *b = dt__env(DT_ENV_BACKEND);
    if (b) c->backend = b;
    const char *o = dt__env(DT_ENV_OUTPUT);
    if (o) {
        c->output_path = o;
        c->format = dt_format_of_path(o, c->format);
    }
    if (dt__env_bool(DT_ENV_KERNEL_QUEUED) == 1) c->capture |= DT_CAPTURE_KERNEL_QUEUED;
    const char *fr = dt__env(DT_ENV_FLIGHT_RECORDER);
    if (fr && dt__flight_parse_size(fr, &c->flight_recorder_bytes) != 0) {
        dt__log(DT_ENV_FLIGHT_RECORDER "=%s is no size", fr);
        c->flight_recorder_bytes = DT_FLIGHT_RECORDER_INVALID;
    }
}

/* The command line ("python3 train.py --lr 0.1"), the program by its base
   name: the kernel's 15-byte comm says "python3" or "pt_main_thread" for
   every training script. Control characters (the NULs between arguments
   among them) become one space, so that the name stays one line. */
static void read_process_name(char *out, size_t n)
{
    char cmd[4096];
    size_t len = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (len < sizeof cmd - 1 && (r = read(fd, cmd + len, sizeof cmd - 1 - len)) > 0) len += (size_t)r;
        close(fd);
    }
    cmd[len] = 0;
    out[0] = 0;
    if (len > 0) {
        const char *argv0 = cmd, *slash = strrchr(argv0, '/');
        size_t at = (size_t)((slash ? slash + 1 : argv0) - cmd);
        size_t o = 0;
        for (size_t i = at; i < len && o + 1 < n; i++) {
            unsigned char c = (unsigned char)cmd[i];
            char ch = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
            if (ch != ' ' || (o > 0 && out[o - 1] != ' ')) out[o++] = ch;
        }
        while (o > 0 && out[o - 1] == ' ') o--;
        out[o] = 0;
    }
    if (!out[0]) snprintf(out, n, "%s", program_invocation_short_name);
}

dt_status dt__core_new(const dt_config *config, dt_session **out)
{
    if (!out) return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_session_create: out is NULL");
    *out = NULL;
    /* the defaults, also for the fields a caller's config leaves 0 */
    dt_config def;
    dt_config_init(&def);
    if (!config) config = &def;
    if (!dt_format_name(config->format)) {
        char formats[256];
        return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_config.format %d is not %s", (int)config->format,
                        dt__fmt_list(formats, sizeof formats, DT_FMT_CONSTANT, -1, ", ", " or "));
    }
    if (!dt_format_available(config->format))
        return dt__error(DT_ERR_INVALID_ARGUMENT, "dt_config.format is a gzip format, but %s", DT_NO_GZIP_MESSAGE);
    if (config->flight_recorder_bytes == DT_FLIGHT_RECORDER_INVALID)
        return dt__error(DT_ERR_INVALID_ARGUMENT, DT_ENV_FLIGHT_RECORDER "=%s is no size: give bytes with an optional "
                        "K, M or G suffix (256M), 1 or on for the default (256M), 0 or off for none",
                        dt__env(DT_ENV_FLIGHT_RECORDER) ? dt__env(DT_ENV_FLIGHT_RECORDER) : "?");
    const char *bname = config->backend ? config->backend : def.backend;
    dt_session *s = dt__calloc(1, sizeof *s);
    if (!s) return dt__error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    s->config = *config;
    if (!s->config.max_duration_ns) s->config.max_duration_ns = def.max_duration_ns;
    if (!s->config.buffer_size) s->config.buffer_size = def.buffer_size;
    if (!s->config.buffer_count) s->config.buffer_count = def.buffer_count;
    dt_status fit = dt__flight_fit_config(&s->config);
    if (fit != DT_OK) {
        dt__free(s);
        return fit;
    }
    s->output_path = dt__strdup(config->output_path ? config->output_path : def.output_path);
    s->backend_request = dt__strdup(bname);
    s->config.output_path = s->output_path;
    s->config.backend = s->backend_request;
    /* what the per-record checks read of it: in the sink */
    s->sink.max_duration_ns = s->config.max_duration_ns;
    s->sink.capture = s->config.capture;
    pthread_mutex_init(&s->lock, NULL);
    dt__thread_names_init(&s->threads);
    pthread_mutex_init(&s->calib_lock, NULL);
    pthread_cond_init(&s->calib_cond, NULL);
    dt__store_init(&s->sink.store, s->config.max_events);
    if (!s->output_path || !s->backend_request || dt__intern_init(&s->names) != 0 ||
        dt__launch_init(&s->launches) != 0 || dt__u64map_reserve(&s->corr, 1024) != 0 ||
        dt__u64map_reserve(&s->ext_parents, 64) != 0) {
        dt_session_destroy(s);
        return dt__error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    }
    dt__clock_init(&s->clock, 1);
    s->pid = (uint32_t)getpid();
    read_process_name(s->process_name, sizeof s->process_name);
    if (gethostname(s->host_name, sizeof s->host_name - 1) != 0) s->host_name[0] = 0;
    dt__rank_from_env(&s->rank);
    s->state = DT_STATE_CREATED;
    *out = s;
    return DT_OK;
}

const char *dt_session_backend(const dt_session *s)
{
    return s && s->backend ? s->backend->name : "";
}

const char *dt__core_backend_request(const dt_session *s) { return s->backend_request; }
const dt_backend *dt__core_backend(const dt_session *s) { return s->backend; }
const dt_backend *dt__core_deferred(const dt_session *s) { return s->deferred; }
void dt__core_set_deferred(dt_session *s, const dt_backend *b) { s->deferred = b; }
const char *dt__core_output_path(const dt_session *s) { return s->output_path; }
const dt_device_props *dt__core_devices(const dt_session *s) { return s->devices; }

void dt_session_destroy(dt_session *s)
{
    if (!s) return;
    if (s->state == DT_STATE_RUNNING) dt_session_stop(s);
    dt__core_flight_free(s);
    dt__corr_merge_chunks(s, 0);
    dt__corr_forget(s);
    dt__store_free(&s->sink.store);
    dt__intern_free(&s->names);
    dt__launch_free(&s->launches);
    dt__free(s->collectives);
    dt__u64map_free(&s->corr);
    dt__u64map_free(&s->ext_parents);
    dt__clock_free(&s->clock);
    pthread_mutex_destroy(&s->lock);
    dt__thread_names_free(&s->threads);
    pthread_mutex_destroy(&s->calib_lock);
    pthread_cond_destroy(&s->calib_cond);
    dt__free(s->output_path);
    dt__free(s->backend_request);
    dt__free(s);
}

/* Session lifecycle: choose and arm a backend, calibrate the clock, and at
   stop map every record to realtime, resolve External ids and apply the
   capture window. */
#include "base/alloc.h"
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
#include "core/session.h"
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

_Atomic(dt_session *) dt_g_active;
static _Atomic(const char *) g_last_backend;

const char *dt_core_last_backend(void) { return atomic_load(&g_last_backend); }
_Atomic int dt_g_exiting;
int dt_g_fork_unusable;
static _Atomic uint64_t g_generation;


void dt_core_lock(dt_session *s) { pthread_mutex_lock(&s->lock); }
void dt_core_unlock(dt_session *s) { pthread_mutex_unlock(&s->lock); }

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
    const char *b = dt_env("DEVTRACE_BACKEND");
    if (b) c->backend = b;
    const char *o = dt_env("DEVTRACE_OUTPUT");
    if (o) {
        c->output_path = o;
        c->format = dt_format_of_path(o, c->format);
    }
    if (dt_env_bool("DEVTRACE_KERNEL_QUEUED") == 1) c->capture |= DT_CAPTURE_KERNEL_QUEUED;
    const char *fr = dt_env("DEVTRACE_FLIGHT_RECORDER");
    if (fr && dt_flight_parse_size(fr, &c->flight_recorder_bytes) != 0) {
        dt_log("DEVTRACE_FLIGHT_RECORDER=%s is no size", fr);
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

dt_status dt_core_new(const dt_config *config, dt_session **out)
{
    if (!out) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_create: out is NULL");
    *out = NULL;
    /* the defaults, also for the fields a caller's config leaves 0 */
    dt_config def;
    dt_config_init(&def);
    if (!config) config = &def;
    if (!dt_format_name(config->format)) {
        char formats[256];
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_config.format %d is not %s", (int)config->format,
                        dt_fmt_list(formats, sizeof formats, DT_FMT_CONSTANT, -1, ", ", " or "));
    }
    if (!dt_format_available(config->format))
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_config.format is a gzip format, but %s", DT_NO_GZIP_MESSAGE);
    if (config->flight_recorder_bytes == DT_FLIGHT_RECORDER_INVALID)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "DEVTRACE_FLIGHT_RECORDER=%s is no size: give bytes with an optional "
                        "K, M or G suffix (256M), 1 or on for the default (256M), 0 or off for none",
                        dt_env("DEVTRACE_FLIGHT_RECORDER") ? dt_env("DEVTRACE_FLIGHT_RECORDER") : "?");
    const char *bname = config->backend ? config->backend : def.backend;
    dt_session *s = dt_calloc(1, sizeof *s);
    if (!s) return dt_error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    s->config = *config;
    if (!s->config.max_duration_ns) s->config.max_duration_ns = def.max_duration_ns;
    if (!s->config.buffer_size) s->config.buffer_size = def.buffer_size;
    if (!s->config.buffer_count) s->config.buffer_count = def.buffer_count;
    dt_status fit = dt_flight_fit_config(&s->config);
    if (fit != DT_OK) {
        dt_free(s);
        return fit;
    }
    s->output_path = dt_strdup(config->output_path ? config->output_path : def.output_path);
    s->backend_request = dt_strdup(bname);
    s->config.output_path = s->output_path;
    s->config.backend = s->backend_request;
    pthread_mutex_init(&s->lock, NULL);
    dt_thread_names_init(&s->threads);
    pthread_mutex_init(&s->calib_lock, NULL);
    pthread_cond_init(&s->calib_cond, NULL);
    dt_store_init(&s->store, s->config.max_events);
    if (!s->output_path || !s->backend_request || dt_intern_init(&s->names) != 0 ||
        dt_launch_init(&s->launches) != 0 || dt_u64map_reserve(&s->corr, 1024) != 0 ||
        dt_u64map_reserve(&s->ext_parents, 64) != 0) {
        dt_session_destroy(s);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory creating a session");
    }
    dt_clock_init(&s->clock, 1);
    s->pid = (uint32_t)getpid();
    read_process_name(s->process_name, sizeof s->process_name);
    if (gethostname(s->host_name, sizeof s->host_name - 1) != 0) s->host_name[0] = 0;
    dt_rank_from_env(&s->rank);
    s->state = DT_STATE_CREATED;
    *out = s;
    return DT_OK;
}

const char *dt_session_backend(const dt_session *s)
{
    return s && s->backend ? s->backend->name : "";
}

/* Forget what an earlier start recorded (start, stop, start again).
   -1 when out of memory. */
static int session_reset(dt_session *s)
{
    dt_store_free(&s->store);
    dt_store_init(&s->store, s->config.max_events);
    s->collective_count = 0;
    dt_u64map_free(&s->corr);
    dt_corr_forget(s);
    dt_u64map_free(&s->ext_parents);
    int rc = dt_u64map_reserve(&s->corr, 1024) | dt_u64map_reserve(&s->ext_parents, 64);
    for (int i = 0; i < DT_LOSS_COUNT; i++) atomic_store(&s->loss[i], 0);
    atomic_store(&s->kernel_names_cut, 0);
    atomic_store(&s->links_lost, 0);
    atomic_store(&s->parents_lost, 0);
    atomic_store(&s->external_unreliable, 0);
    dt_clock_free(&s->clock);
    s->note_count = 0;
    dt_thread_names_clear(&s->threads);
    s->backend_library[0] = s->backend_version[0] = 0;
    memset(s->devices, 0, sizeof s->devices);
    s->evicted_until_vendor = s->evicted_until_real = 0;
    atomic_store(&s->dumping, 0);
    return rc;
}

/* A reading of the vendor's clock, kept: made with no lock held (its
   buffer callbacks take the session's), kept under it. When the clock no
   longer reads the domain of the reading before (another client of the
   vendor made it count otherwise), a second one, 1 ms later, gives the new
   domain a rate of its own. 0, or -1 when the clock could not be read. */
static int sample_clock(dt_session *s, dt_clock_fn fn, int tries)
{
    dt_clock_sample sample;
    if (dt_clock_read(fn, tries, &sample) != 0) return -1;
    dt_core_lock(s);
    int moved = s->clock.count && !dt_clock_same_domain(&s->clock.samples[s->clock.count - 1], &sample);
    int rc = dt_clock_add(&s->clock, sample);
    dt_core_unlock(s);
    if (!moved || rc != 0) return rc;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    if (dt_clock_read(fn, tries, &sample) != 0) return 0;
    dt_core_lock(s);
    dt_clock_add(&s->clock, sample);
    dt_core_unlock(s);
    return 0;
}

static void *calibrator_main(void *arg)
{
    dt_session *s = arg;
    struct timespec next;
    pthread_mutex_lock(&s->calib_lock);
    while (!s->calib_stop) {
        clock_gettime(CLOCK_REALTIME, &next);
        uint64_t ns = (uint64_t)next.tv_nsec + (uint64_t)s->config.calibration_period_ms * 1000000u;
        next.tv_sec += (time_t)(ns / 1000000000u);
        next.tv_nsec = (long)(ns % 1000000000u);
        int rc = 0;
        while (!s->calib_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->calib_cond, &s->calib_lock, &next);
        if (s->calib_stop) break;
        pthread_mutex_unlock(&s->calib_lock);
        sample_clock(s, s->backend->clock, 8);
        pthread_mutex_lock(&s->calib_lock);
    }
    pthread_mutex_unlock(&s->calib_lock);
    return NULL;
}

static void start_calibrator(dt_session *s)
{
    if (s->backend->clock && s->config.calibration_period_ms &&
        pthread_create(&s->calibrator, NULL, calibrator_main, s) == 0)
        s->calibrator_running = 1;
}

dt_status dt_core_try_backend(dt_session *s, const dt_backend *b)
{
    if (s->config.flight_recorder_bytes && !(b->caps & DT_BACKEND_FLIGHT_RECORDER))
        return dt_error(DT_ERR_BACKEND_UNAVAILABLE, "the %s backend has no flight recorder "
                        "(dt_config.flight_recorder_bytes, DEVTRACE_FLIGHT_RECORDER): record without one, or "
                        "with a backend that has it (docs/on-demand.md)", b->name);
    const dt_backend *before = s->backend;
    s->backend = b;
    dt_clock_free(&s->clock);
    dt_clock_init(&s->clock, b->clock == NULL);
    dt_status st = b->start(s);
    if (st != DT_OK) { s->backend = before; return st; }
    atomic_store(&g_last_backend, b->name);
    /* (a sample read but not kept for lack of memory is noted at stop) */
    if (b->clock && dt_clock_sample_now(&s->clock, b->clock, 16) != 0 && !s->clock.unkept)
        dt_core_note(s, "clock", "the %s clock could not be read at start", b->name);
    return DT_OK;
}

dt_status dt_core_begin(dt_session *s)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_start: session is NULL");
    if (s->state == DT_STATE_RUNNING) return dt_error(DT_ERR_STATE, "dt_session_start: the session is already running");
    dt_session *expected = NULL;
    if (!atomic_compare_exchange_strong(&dt_g_active, &expected, s))
        return dt_error(DT_ERR_BUSY, "another devtrace session is running in this process; vendor interfaces are process-wide, so stop it first");
    atomic_store(&s->attaching, 0);
    /* Under the session's lock: a thread of the program may still be about
       to record into it what began in its previous start (a range it
       pops); the generation it checks there changes with the reset. */
    dt_core_lock(s);
    if (s->state == DT_STATE_STOPPED && session_reset(s) != 0) {
        dt_core_unlock(s);
        atomic_store(&dt_g_active, NULL);
        return dt_error(DT_ERR_NO_MEMORY, "out of memory restarting the session");
    }
    s->generation = atomic_fetch_add(&g_generation, 1) + 1;
    dt_core_unlock(s);
    s->window_start_ns = dt_realtime_ns();
    s->window_end_set = 0;

    s->backend = NULL;
    return DT_OK;
}

dt_status dt_core_started(dt_session *s, dt_status st, int awaiting)
{
    if (st != DT_OK) {
        atomic_store(&dt_g_active, NULL);
        s->state = DT_STATE_CREATED;
        return st;
    }
    atomic_store(&s->awaiting_vendor, awaiting);
    atomic_store(&s->unheld_entries, 0);
    dt_store_prepare(1);
    s->calib_stop = 0;
    s->calibrator_running = 0;
    start_calibrator(s);
    s->state = DT_STATE_RUNNING;
    dt_log("session started with backend %s", s->backend->name);
    return DT_OK;
}

/* A process that forks without exec has one thread in the child, and a
   copy of everything else: this session (its store holding what the parent
   recorded), the vendor's arming, and the vendor's buffers holding records
   of the parent's work still to be delivered. The session goes on as the
   child's, from the fork on: at stop it leaves out what is the parent's
   (drop_parent_records), and the trace is the child's own. Heavy work
   waits for stop; here, in an atfork child handler, only stores and
   async-signal-safe calls. Locks are made afresh: their holders may be
   threads the child does not have (the calibrator, a vendor's thread in a
   callback). The calibrator itself is not in the child: the clock is fitted
   on the parent's samples and the child's at stop. */
void dt_core_forked(dt_session *s)
{
    if (!s || s->state != DT_STATE_RUNNING) return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->fork_parent = s->pid;
    s->pid = (uint32_t)getpid();
    s->fork_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    s->fork_store_count = s->store.count;
    s->window_start_ns = s->fork_ns;
    s->fork_vendor_unusable = s->backend && (s->backend->caps & DT_BACKEND_NO_FORK_CHILD);
    s->calibrator_running = 0;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->calib_lock, NULL);
    pthread_cond_init(&s->calib_cond, NULL);
    pthread_mutex_init(&s->threads.lock, NULL);
    for (int i = 0; i < DT_LOSS_COUNT; i++) atomic_store(&s->loss[i], 0);
    if (s->fork_vendor_unusable) dt_g_fork_unusable = 1;
}

void dt_core_fork_child(dt_session *s)
{
    /* a grandchild: what its parent did holds */
    if (!s || !s->fork_vendor_unusable || s->fork_vendor_quiet) return;
    s->fork_vendor_quiet = 1;
    if (s->backend->fork_child) s->backend->fork_child();
}

static int fork_hooks(const dt_session *s)
{
    return s && s->state == DT_STATE_RUNNING && !s->fork_vendor_unusable && s->backend &&
           (s->backend->caps & DT_BACKEND_NO_FORK_CHILD);
}

void dt_core_fork_prepare(dt_session *s)
{
    if (fork_hooks(s) && s->backend->fork_prepare) s->backend->fork_prepare();
}

void dt_core_fork_parent(dt_session *s)
{
    if (fork_hooks(s) && s->backend->fork_parent) s->backend->fork_parent();
}

void dt_core_fork_launch_lost(void)
{
    dt_session *s = dt_active_session();
    if (s) dt_loss_add(s, DT_LOSS_FORKED_CHILD, 1);
}

/* A vendor time to realtime through a local copy of the clock segment of
   the previous time: the records written in between could alias the
   clock's own (so the compiler would reload it for every time). */
static inline uint64_t map_time(const dt_clock *clock, dt_clock_segment *seg, size_t *segment, uint64_t v)
{
    uint64_t x = v - seg->vendor; /* before the segment: wraps past its span */
    if (x < seg->span) return dt_clock_segment_at(seg, x);
    uint64_t out = dt_clock_map_slow(clock, v, segment);
    if (clock->fast && *segment < clock->segments) *seg = clock->fast[*segment];
    return out;
}

static inline int host_record(const dt_rec *r)
{
    return r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || r->kind == DT_EVENT_RANGE ||
           r->kind == DT_EVENT_OP || r->kind == DT_EVENT_MEMORY;
}

/* In a forked child, the parent's records: those stored before the fork,
   host records that began before it (API calls, and ranges the child
   closed in its copy), device activity that began before it, and device
   activity of the parent's API calls that the parent's vendor delivered to
   the child's copy of its buffers. Vendors count correlation ids up,
   process-wide, so the child's calls come after every call of the parent's:
   activity whose correlation id is at most the last of the parent's calls
   is the parent's. The parent's trace holds all of them: they are left out
   here, and not counted as lost. Times are mapped to realtime on the way. */
static void drop_parent_records(dt_session *s)
{
    dt_store *st = &s->store;
    dt_clock_segment seg = {.span = 0}; /* none yet */
    size_t segment = 0, out = 0;
    uint64_t last_parent_call = 0;
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt_store_at(st, i);
        if (!(r->flags & DT_REC_REALTIME)) {
            r->start = map_time(&s->clock, &seg, &segment, r->start);
            r->end = map_time(&s->clock, &seg, &segment, r->end);
            r->flags |= DT_REC_REALTIME;
        }
        int api = r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER;
        if (api && (i < s->fork_store_count || r->start < s->fork_ns) && r->correlation > last_parent_call)
            last_parent_call = r->correlation;
    }
    for (size_t i = 0; i < st->count; i++) {
        dt_rec *r = dt_store_at(st, i);
        int parent = i < s->fork_store_count || r->start < s->fork_ns ||
                     (!host_record(r) && r->correlation && r->correlation <= last_parent_call);
        if (parent) continue;
        if (out != i) *dt_store_at(st, out) = *r;
        out++;
    }
    dt_store_truncate(st, out);
}

/* At stop, each record once, in one pass over the store: its times to
   realtime, its External id from the links, and out when it lies outside
   the capture window: unfinished when it began inside the window and was
   still running when the session stopped, outside_window otherwise. */
static void finish_records(dt_session *s)
{
    dt_store *st = &s->store;
    const dt_clock *clock = &s->clock;
    const uint64_t window_start = s->window_start_ns, window_end = s->window_end_ns;
    dt_clock_segment seg = {.span = 0}; /* none yet */
    size_t segment = 0, out = 0;
    uint64_t outside = 0, unfinished = 0;
    /* a session without links (no External ids) looks none up */
    const int links = s->corr_dense_count || s->corr.count;
    if (s->fork_parent) drop_parent_records(s);
    /* r walks the store chunk by chunk; kept, where records that stay move
       to once one has left */
    dt_rec *r = NULL, *chunk_end = NULL, *kept = NULL, *kept_end = NULL;
    for (size_t i = 0; i < st->count; i++, r++) {
        if (r == chunk_end) {
            r = dt_store_at(st, i);
            chunk_end = r + DT_STORE_CHUNK;
        }
        if (!(r->flags & DT_REC_REALTIME)) {
            r->start = map_time(clock, &seg, &segment, r->start);
            r->end = map_time(clock, &seg, &segment, r->end);
            r->flags |= DT_REC_REALTIME;
        }
        uint64_t ext;
        if (links && !(r->flags & DT_REC_HAS_EXTERNAL) && r->correlation && dt_corr_get(s, r->correlation, &ext)) {
            r->external_id = ext;
            r->flags |= DT_REC_HAS_EXTERNAL;
        }
        if (r->start < window_start || r->end > window_end) {
            if (r->start >= window_start && r->start <= window_end) unfinished++;
            else outside++;
            continue;
        }
        if (out != i) {
            if (kept == kept_end) {
                kept = dt_store_at(st, out);
                kept_end = kept + (DT_STORE_CHUNK - (out & (DT_STORE_CHUNK - 1)));
            }
            *kept++ = *r; /* once one record left, every later one moves */
        }
        out++;
    }
    dt_store_truncate(st, out);
    if (outside) dt_loss_add(s, DT_LOSS_OUTSIDE_WINDOW, outside);
    if (unfinished) dt_loss_add(s, DT_LOSS_UNFINISHED, unfinished);
}

int dt_core_awaits(const dt_session *s, const char *backend)
{
    return s && atomic_load(&((dt_session *)s)->awaiting_vendor) && s->deferred &&
           strcmp(s->deferred->name, backend) == 0;
}

dt_status dt_core_attach_deferred(dt_session *s)
{
    if (!s || s->state != DT_STATE_RUNNING || !atomic_load(&s->awaiting_vendor)) return DT_OK;
    /* once, even when the vendor's runtime calls back into here while the
       backend starts */
    int idle = 0;
    if (!atomic_compare_exchange_strong(&s->attaching, &idle, 1)) return DT_OK;
    const dt_backend *b = s->deferred;
    dt_status st = dt_core_try_backend(s, b);
    if (st != DT_OK) {
        char why[448];
        snprintf(why, sizeof why, "%s", dt_last_error());
        atomic_store(&s->awaiting_vendor, 0);
        dt_core_note(s, b->name, "could not attach when the process initialised the device: %s", why);
        return dt_error(st, "%s", why);
    }
    atomic_store(&s->awaiting_vendor, 0);
    /* what was pushed meanwhile is on devtrace's stacks only */
    if (atomic_load(&s->unheld_entries) > 0 && b->attribute_by_api_enter && b->attribute_by_api_enter() != DT_OK)
        dt_core_note(s, "external_ids", "External ids pushed before %s attached could not be attributed "
                        "through API callbacks: device work launched directly inside them carries none", b->name);
    pthread_mutex_lock(&s->calib_lock);
    s->calib_stop = 0;
    pthread_mutex_unlock(&s->calib_lock);
    start_calibrator(s);
    dt_log("session attached to backend %s", b->name);
    return DT_OK;
}

void dt_core_set_window(dt_session *s, uint64_t start_ns, uint64_t end_ns)
{
    if (!s || s->state != DT_STATE_RUNNING || end_ns < start_ns) return;
    s->window_start_ns = start_ns;
    s->window_end_set = end_ns ? end_ns : 1;
}

dt_status dt_core_release_backend(dt_session *s, const char *to)
{
    if (!s || s->state != DT_STATE_RUNNING) return DT_OK;
    /* before it attached: the backend waited for is given away */
    const dt_backend *b = atomic_load(&s->awaiting_vendor) && s->deferred ? s->deferred : s->backend;
    return b && b->release ? b->release(s, to) : DT_OK;
}

dt_status dt_session_stop(dt_session *s)
{
    if (!s) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_stop: session is NULL");
    if (s->state != DT_STATE_RUNNING) return dt_error(DT_ERR_STATE, "dt_session_stop: the session is not running");
    /* The window closes now: activity still executing is outside it. */
    s->window_end_ns = s->window_end_set ? s->window_end_set : dt_realtime_ns();
    dt_host_clock_read(&s->host_clock);
    /* a forked child whose vendor cannot be used there calls it no more */
    const dt_backend *vendor = s->fork_vendor_unusable ? NULL : s->backend;
    if (s->fork_vendor_unusable)
        dt_core_note(s, "fork", "process %u was forked without exec from process %u, whose %s was armed: %s "
                        "cannot record in such a child, so its device activity is not recorded; its launch calls "
                        "are counted as lost (forked_child), and host ranges and operations are recorded",
                        s->pid, s->fork_parent, s->backend->name, s->backend->name);
    else if (s->fork_parent)
        dt_core_note(s, "fork", "process %u was forked without exec from process %u; this trace holds what it "
                        "did after the fork, and the trace of process %u what came before", s->pid,
                        s->fork_parent, s->fork_parent);
    dt_status flush_st = vendor && vendor->flush ? vendor->flush(s) : DT_OK;
    if (flush_st != DT_OK) dt_core_note(s, "flush", "%s", dt_last_error());
    if (s->calibrator_running) {
        pthread_mutex_lock(&s->calib_lock);
        s->calib_stop = 1;
        pthread_cond_signal(&s->calib_cond);
        pthread_mutex_unlock(&s->calib_lock);
        pthread_join(s->calibrator, NULL);
        s->calibrator_running = 0;
    }
    size_t unkept = s->clock.unkept;
    if (vendor && vendor->clock && sample_clock(s, vendor->clock, 16) != 0 &&
        s->clock.unkept == unkept)
        dt_core_note(s, "clock", "the %s clock could not be read at stop", s->backend->name);
    if (s->clock.unkept)
        dt_core_note(s, "clock_samples", "out of memory: %zu clock samples were not kept; the clock map "
                        "and its error bound rest on the %zu others", s->clock.unkept, s->clock.count);
    if (atomic_exchange(&s->awaiting_vendor, 0) && strcmp(s->backend_request, s->deferred->name) == 0)
        dt_core_note(s, s->deferred->name, "not attached: the process never initialised the device (its runtime "
                        "never called the injection entry point)");
    dt_status stop_st = vendor && vendor->stop ? vendor->stop(s) : DT_OK;
    if (stop_st != DT_OK) dt_core_note(s, "stop", "%s", dt_last_error());
    atomic_store_explicit(&dt_g_active, NULL, memory_order_release);
    dt_store_prepare(0);
    dt_thread_names_sweep(s);
    dt_core_finish(s);
    dt_core_flight_free(s);
    dt_log("session stopped: %zu events kept, %llu lost", s->store.count,
           (unsigned long long)dt_session_loss_total(s));
    return DT_OK;
}

void dt_core_finish(dt_session *s)
{
    dt_core_lock(s);
    dt_corr_merge_chunks(s, 1);
    uint64_t cut = atomic_load(&s->kernel_names_cut), unlinked = atomic_load(&s->links_lost),
             orphans = atomic_load(&s->parents_lost);
    if (cut || s->names.demangle_too_long) {
        char cut_text[160] = "", long_text[256] = "";
        if (cut)
            snprintf(cut_text, sizeof cut_text, "%llu kernel names longer than %zu bytes were cut there and not demangled",
                     (unsigned long long)cut, DT_MAX_KERNEL_NAME - 1);
        if (s->names.demangle_too_long)
            snprintf(long_text, sizeof long_text,
                     "%u kernel names longer than %zu bytes were kept mangled: the C++ demangler found at run time "
                     "(__cxa_demangle) takes no longer names",
                     s->names.demangle_too_long, dt_demangle_length_limit());
        dt_core_note(s, "kernel_names", "%s%s%s", cut_text, cut && long_text[0] ? "; " : "", long_text);
    }
    if (unlinked)
        dt_core_note(s, "correlation", "out of memory: %llu API calls lost their External id link; "
                        "the device activity they launched carries no External id",
                        (unsigned long long)unlinked);
    if (orphans)
        dt_core_note(s, "range_parents", "out of memory: %llu operations inside user ranges were not linked "
                        "to their range; the ranges' device time misses theirs", (unsigned long long)orphans);
    dt_clock_fit(&s->clock);
    if (s->clock.domains > 1)
        dt_core_note(s, "clock_domains", "the %s clock changed what it counts while the session recorded (another "
                        "client of the vendor's interface registered a timestamp callback of its own): its %zu "
                        "domains were each fitted to realtime apart, every time mapped by the domain nearest to "
                        "it%s", s->backend ? s->backend->name : "vendor", s->clock.domains,
                        s->clock.lone_domains ? "; a domain read once has no rate of its own: its times are taken "
                                                "as nanoseconds" : "");
    dt_core_flight_window(s);
    finish_records(s);
    s->state = DT_STATE_STOPPED;
    dt_core_unlock(s);
}

void dt_session_destroy(dt_session *s)
{
    if (!s) return;
    if (s->state == DT_STATE_RUNNING) dt_session_stop(s);
    dt_core_flight_free(s);
    dt_corr_merge_chunks(s, 0);
    dt_corr_forget(s);
    dt_store_free(&s->store);
    dt_intern_free(&s->names);
    dt_launch_free(&s->launches);
    dt_free(s->collectives);
    dt_u64map_free(&s->corr);
    dt_u64map_free(&s->ext_parents);
    dt_clock_free(&s->clock);
    pthread_mutex_destroy(&s->lock);
    dt_thread_names_free(&s->threads);
    pthread_mutex_destroy(&s->calib_lock);
    pthread_cond_destroy(&s->calib_cond);
    dt_free(s->output_path);
    dt_free(s->backend_request);
    dt_free(s);
}

void dt_core_set_library(dt_session *s, const char *path, const char *version)
{
    snprintf(s->backend_library, sizeof s->backend_library, "%s", path ? path : "");
    snprintf(s->backend_version, sizeof s->backend_version, "%s", version ? version : "");
}

/* Whether `fact` is one of the "; "-separated facts of `text`. */
static int says(const char *text, const char *fact)
{
    size_t n = strlen(fact);
    for (const char *at = strstr(text, fact); at; at = strstr(at + 1, fact)) {
        int starts = at == text || (at >= text + 2 && at[-2] == ';' && at[-1] == ' ');
        if (starts && (at[n] == '\0' || at[n] == ';')) return 1;
    }
    return 0;
}

void dt_core_note(dt_session *s, const char *key, const char *fmt, ...)
{
    char text[sizeof s->notes[0].text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_t *l = &s->calib_lock; /* notes may be added with s->lock held */
    pthread_mutex_lock(l);
    int i;
    for (i = 0; i < s->note_count; i++)
        if (strcmp(s->notes[i].key, key) == 0) break;
    int added = 1;
    if (i == s->note_count) {
        if (s->note_count == DT_MAX_NOTES) {
            pthread_mutex_unlock(l);
            dt_log("note dropped (%d notes already): %s: %s", DT_MAX_NOTES, key, text);
            return;
        }
        s->note_count++;
        snprintf(s->notes[i].key, sizeof s->notes[i].key, "%s", key);
        snprintf(s->notes[i].text, sizeof s->notes[i].text, "%s", text);
    } else if (says(s->notes[i].text, text)) {
        added = 0; /* already said */
    } else {
        size_t used = strlen(s->notes[i].text);
        snprintf(s->notes[i].text + used, sizeof s->notes[i].text - used, "; %s", text);
    }
    pthread_mutex_unlock(l);
    if (added) dt_log("note: %s: %s", key, text);
}

int dt_session_note_at(const dt_session *s, size_t index, const char **key, const char **text)
{
    if (!s) return 0;
    pthread_mutex_t *l = (pthread_mutex_t *)&s->calib_lock; /* a note is added under it */
    pthread_mutex_lock(l);
    int have = index < (size_t)s->note_count;
    pthread_mutex_unlock(l);
    if (!have) return 0;
    if (key) *key = s->notes[index].key;
    if (text) *text = s->notes[index].text;
    return 1;
}

void dt_core_set_device(dt_session *s, const dt_device_props *p)
{
    if (p->id < DT_MAX_DEVICES) {
        s->devices[p->id] = *p;
        s->devices[p->id].valid = 1;
    }
}

size_t dt_session_event_count(const dt_session *s)
{
    return s && s->state == DT_STATE_STOPPED ? s->store.count : 0;
}

void dt_rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = (dt_event_kind)r->kind;
    ev->start_ns = r->start;
    ev->end_ns = r->end;
    ev->correlation = r->correlation;
    ev->has_external = (r->flags & DT_REC_HAS_EXTERNAL) != 0;
    ev->external_id = r->external_id;
    ev->name = dt_intern_get(&s->names, r->name);
    int host = r->kind == DT_EVENT_RUNTIME || r->kind == DT_EVENT_DRIVER || r->kind == DT_EVENT_RANGE ||
               r->kind == DT_EVENT_OP;
    if (host) {
        ev->thread = r->lane;
        ev->process = r->context;
    } else {
        ev->device = r->device;
        ev->stream = r->lane;
        ev->context = r->context;
    }
    switch (r->kind) {
    case DT_EVENT_KERNEL: {
        const dt_launch_config *c = r->u.kernel.config < s->launches.count
                                        ? &s->launches.configs[r->u.kernel.config] : NULL;
        if (c) {
            memcpy(ev->u.kernel.grid, c->grid, sizeof c->grid);
            memcpy(ev->u.kernel.block, c->block, sizeof c->block);
            ev->u.kernel.registers_per_thread = c->registers_per_thread;
            ev->u.kernel.static_shared_memory = c->static_shared_memory;
            ev->u.kernel.dynamic_shared_memory = c->dynamic_shared_memory;
        }
        ev->u.kernel.queued_ns = r->u.kernel.queued_delta == DT_DELTA_UNKNOWN
                                     ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.queued_delta;
        ev->u.kernel.submitted_ns = r->u.kernel.submitted_delta == DT_DELTA_UNKNOWN
                                        ? DT_TIMESTAMP_UNKNOWN : r->start - r->u.kernel.submitted_delta;
        break;
    }
    case DT_EVENT_MEMCPY:
        ev->u.memcpy.bytes = r->u.memcpy.bytes;
        ev->u.memcpy.copy_kind = (dt_copy_kind)r->u.memcpy.copy_kind;
        ev->u.memcpy.src_kind = (dt_memory_kind)r->u.memcpy.src_kind;
        ev->u.memcpy.dst_kind = (dt_memory_kind)r->u.memcpy.dst_kind;
        ev->u.memcpy.src_device = r->u.memcpy.src_device;
        ev->u.memcpy.dst_device = r->u.memcpy.dst_device;
        break;
    case DT_EVENT_MEMSET:
        ev->u.memset.bytes = r->u.memset.bytes;
        ev->u.memset.value = r->u.memset.value;
        ev->u.memset.memory_kind = (dt_memory_kind)r->u.memset.memory_kind;
        break;
    case DT_EVENT_RUNTIME:
    case DT_EVENT_DRIVER:
        ev->u.api.cbid = r->u.api.cbid;
        ev->u.api.return_code = r->u.api.return_code;
        ev->u.api.launch = (r->flags & DT_REC_LAUNCH) != 0;
        break;
    case DT_EVENT_RANGE:
        ev->u.range.range_id = r->external_id;
        ev->u.range.has_parent = (r->flags & DT_REC_HAS_PARENT) != 0;
        ev->u.range.parent_id = r->u.range.parent;
        break;
    case DT_EVENT_OP:
        ev->u.op.has_parent = (r->flags & DT_REC_HAS_PARENT) != 0;
        ev->u.op.parent_id = r->u.range.parent;
        break;
    case DT_EVENT_MEMORY:
        ev->u.memory.address = r->u.memory.address;
        ev->u.memory.bytes = r->u.memory.bytes;
        ev->u.memory.is_free = (r->flags & DT_REC_FREE) != 0;
        ev->u.memory.memory_kind = (dt_memory_kind)r->context;
        break;
    case DT_EVENT_COLLECTIVE:
        if (r->u.collective.info < s->collective_count) {
            const dt_collective *c = &s->collectives[r->u.collective.info];
            ev->u.collective.count = c->count;
            ev->u.collective.bytes = c->bytes;
            ev->u.collective.bandwidth_gbps = c->bandwidth_gbps;
            ev->u.collective.data_type = dt_intern_get(&s->names, c->data_type);
            ev->u.collective.group = dt_intern_get(&s->names, c->group);
            ev->u.collective.algorithm = dt_intern_get(&s->names, c->algorithm);
        } else {
            ev->u.collective.data_type = ev->u.collective.group = ev->u.collective.algorithm = "";
        }
        break;
    default:
        break;
    }
}

dt_status dt_session_event(const dt_session *s, size_t index, dt_event *ev)
{
    if (!s || !ev) return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: NULL argument");
    if (s->state != DT_STATE_STOPPED) return dt_error(DT_ERR_STATE, "dt_session_event: stop the session first");
    if (index >= s->store.count)
        return dt_error(DT_ERR_INVALID_ARGUMENT, "dt_session_event: index %zu out of range (%zu events)", index, s->store.count);
    dt_rec_to_event(s, dt_store_at(&s->store, index), ev);
    return DT_OK;
}

size_t dt_session_events(const dt_session *s, size_t first, size_t count, dt_event *out)
{
    if (!s || !out || s->state != DT_STATE_STOPPED || first >= s->store.count) return 0;
    size_t n = s->store.count - first < count ? s->store.count - first : count;
    for (size_t i = 0; i < n; i++) dt_rec_to_event(s, dt_store_at(&s->store, first + i), &out[i]);
    return n;
}

uint64_t dt_session_loss(const dt_session *s, dt_loss_reason reason)
{
    if (!s || (unsigned)reason >= DT_LOSS_COUNT) return 0;
    return atomic_load(&((dt_session *)s)->loss[reason]);
}

uint64_t dt_session_loss_total(const dt_session *s)
{
    uint64_t t = 0;
    for (int i = 0; i < DT_LOSS_COUNT; i++) t += dt_session_loss(s, (dt_loss_reason)i);
    return t;
}

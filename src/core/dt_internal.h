/*
 * Internal interfaces of libdevtrace: the event store, name interning,
 * launch configurations, loss accounting, clock calibration, correlation,
 * the backend contract and the session itself. Not installed.
 */
#ifndef DT_INTERNAL_H
#define DT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devtrace/devtrace.h"
#include "base/demangle.h"

#include "base/alloc.h"
#include "base/common.h"
#include "base/log.h"
#include "base/os.h"
#include "base/atomic_file.h"
#include "base/gzip.h"

/* Whether LD_PRELOAD named file (a library's file name) when the process
   started: the environment it started with, which setenv cannot change,
   and what a vendor that must interpose from the start reads. */
DT_HIDDEN int dt_started_with_preload(const char *file);
/* What to do when a vendor records some kinds only with its library
   `preload` in LD_PRELOAD from the start, and it was not there (library:
   the path found, or NULL): the words of every note and error that says so. */
DT_HIDDEN void dt_preload_advice(const char *preload, const char *library, char *out, size_t size);


/* ------------------------------------------------------------------ */
/* Stored events: 64 bytes each, no allocation per event               */
/* ------------------------------------------------------------------ */
enum {
    DT_REC_HAS_EXTERNAL = 1u << 0, /* external_id is valid */
    DT_REC_REALTIME = 1u << 1,     /* times are already CLOCK_REALTIME ns
                                      (otherwise: vendor clock until stop) */
    DT_REC_HAS_PARENT = 1u << 2,   /* range: u.range.parent is valid */
    DT_REC_ASYNC = 1u << 3,        /* memcpy/memset: asynchronous */
    DT_REC_LAUNCH = 1u << 4,       /* API call: launches device work */
    DT_REC_FREE = 1u << 5          /* memory: a free (else an allocation) */
};

#define DT_DELTA_UNKNOWN UINT32_MAX

typedef struct dt_rec {
    uint64_t start;          /* ns; vendor clock until stop, then realtime */
    uint64_t end;
    uint64_t external_id;    /* valid iff flags & DT_REC_HAS_EXTERNAL */
    uint64_t correlation;    /* vendor correlation id (0: none) */
    uint32_t name;           /* interned name id */
    uint32_t lane;           /* device events: stream; API/range: host tid */
    uint32_t context;        /* device events: context; API/range: host pid */
    uint16_t device;
    uint8_t kind;            /* dt_event_kind */
    uint8_t flags;           /* DT_REC_* */
    union {
        struct {
            uint32_t config;          /* dt_launch_config id */
            uint32_t queued_delta;    /* start - queued, or DT_DELTA_UNKNOWN */
            uint32_t submitted_delta; /* start - submitted, or DT_DELTA_UNKNOWN */
            uint32_t reserved;
        } kernel;
        struct {
            uint64_t bytes;
            uint8_t copy_kind, src_kind, dst_kind, reserved;
            uint16_t src_device, dst_device;
        } memcpy;
        struct {
            uint64_t bytes;
            uint32_t value;
            uint8_t memory_kind, reserved[3];
        } memset;
        struct {
            uint32_t cbid;
            int32_t return_code;
            uint64_t reserved;
        } api;
        struct {
            uint64_t parent;          /* valid iff DT_REC_HAS_PARENT */
            uint64_t reserved;
        } range;
        struct {
            uint32_t info;            /* index in the session's collectives */
            uint32_t reserved[3];
        } collective;
        struct {                      /* context holds the dt_memory_kind */
            uint64_t address;
            uint64_t bytes;
        } memory;
    } u;
} dt_rec;

/* The highest dt_event_kind: arrays indexed by kind have this + 1 entries. */
#define DT_EVENT_KIND_MAX DT_EVENT_MEMORY

/* A collective's details: more than a record holds, and collectives are
   few, so they live beside the store (dt_session.collectives). Strings are
   interned names. */
typedef struct dt_collective {
    uint64_t count, bytes;
    double bandwidth_gbps;
    uint32_t data_type, group, algorithm;
} dt_collective;

_Static_assert(sizeof(dt_rec) == 64, "dt_rec must stay 64 bytes");

#define DT_STORE_CHUNK_SHIFT 16
#define DT_STORE_CHUNK (1u << DT_STORE_CHUNK_SHIFT)
/* Chunks the process keeps for its next store (64 MiB), and how many the
   preparer keeps faulted in ahead of a recording session's need. */
#define DT_STORE_SPARE_MAX 16
#define DT_STORE_AHEAD 4
/* Records ahead of the one pushed whose line is fetched. */
#define DT_STORE_PREFETCH 6

typedef struct dt_store {
    dt_rec **chunks;
    size_t chunk_count, chunk_cap;
    size_t count;            /* records in use */
    size_t room;             /* records that fit before the slow path */
    uint64_t limit;          /* 0: unlimited */
} dt_store;

DT_HIDDEN void dt_store_init(dt_store *st, uint64_t limit);
/* Its chunks go to the process's spares (up to DT_STORE_SPARE_MAX). */
DT_HIDDEN void dt_store_free(dt_store *st);
DT_HIDDEN dt_rec *dt_store_push_slow(dt_store *st);
static inline dt_rec *dt_store_at(const dt_store *st, size_t i)
{
    return &st->chunks[i >> DT_STORE_CHUNK_SHIFT][i & (DT_STORE_CHUNK - 1)];
}
/* A zeroed record, or NULL when the limit is reached or memory ran out. */
static inline dt_rec *dt_store_push(dt_store *st)
{
    if (st->count < st->room) {
        dt_rec *r = dt_store_at(st, st->count++);
        /* each record is a line of its own: fetched for writing a few
           records ahead, its miss overlaps the decoding of those before
           (past a chunk's end the hint is harmless: a prefetch never
           faults) */
        __builtin_prefetch(r + DT_STORE_PREFETCH, 1, 3);
        *r = (dt_rec){0};
        return r;
    }
    return dt_store_push_slow(st);
}
/* Remove records for which keep() returns 0, preserving order. */
DT_HIDDEN void dt_store_filter(dt_store *st, int (*keep)(dt_rec *, void *), void *arg);
/* Keep the first count records (fewer than now), giving back the chunks
   no longer needed. */
DT_HIDDEN void dt_store_truncate(dt_store *st, size_t count);
/* on 1: a session starts recording, and while any does the preparer thread
   keeps chunks faulted in ahead of need, from the time a store grows past
   its first chunk; 0: it stopped. */
DT_HIDDEN void dt_store_prepare(int on);
/* Unmap the spare chunks (tests, and benchmarks that need fresh memory). */
DT_HIDDEN void dt_store_release_spares(void);
DT_HIDDEN size_t dt_store_spare_count(void);
/* Bytes held by the store (for the benchmark). */
DT_HIDDEN size_t dt_store_bytes(const dt_store *st);

/* ------------------------------------------------------------------ */
/* Interned strings                                                    */
/* ------------------------------------------------------------------ */
/* id 0 is the empty string. Ids are dense. Not thread-safe by itself:
   the session wraps it in its lock. */
typedef struct dt_intern {
    char **pages;            /* string bytes, NUL-terminated */
    size_t page_count, page_cap, page_used;
    const char **strings;    /* id -> string */
    uint32_t *lengths;       /* id -> length (strings may contain NUL? no: length excludes it) */
    uint32_t count, cap;
    uint32_t *table;         /* open addressing: id+1, 0 empty */
    uint32_t table_mask;
    /* mangled name -> demangled id cache for kernel names */
    struct dt_demangle_entry { uint32_t raw, demangled; } *demangled;
    uint32_t demangled_mask, demangled_count;
    uint32_t demangle_too_long; /* distinct kernel names the demangler refused */
    size_t bytes;
} dt_intern;

DT_HIDDEN int dt_intern_init(dt_intern *in);
DT_HIDDEN void dt_intern_free(dt_intern *in);
/* Returns the id, or UINT32_MAX when memory ran out. */
DT_HIDDEN uint32_t dt_intern_n(dt_intern *in, const char *s, size_t len);
DT_HIDDEN uint32_t dt_intern_str(dt_intern *in, const char *s);
/* Intern a kernel name, demangling C++ (Itanium) names once per name.
   UINT32_MAX when memory ran out, also for a name that demangles but whose
   demangling ran out of memory (a mangled name is never kept in its place). */
DT_HIDDEN uint32_t dt_intern_kernel(dt_intern *in, const char *raw);
static inline const char *dt_intern_get(const dt_intern *in, uint32_t id)
{
    return id < in->count ? in->strings[id] : "";
}
static inline uint32_t dt_intern_len(const dt_intern *in, uint32_t id)
{
    return id < in->count ? in->lengths[id] : 0;
}


/* ------------------------------------------------------------------ */
/* Kernel launch configurations, interned (they repeat)                */
/* ------------------------------------------------------------------ */
typedef struct dt_launch_config {
    int32_t grid[3], block[3];
    uint32_t registers_per_thread;
    uint32_t static_shared_memory, dynamic_shared_memory;
} dt_launch_config;

typedef struct dt_launch_table {
    dt_launch_config *configs;
    uint32_t count, cap;
    uint32_t *table;
    uint32_t table_mask;
} dt_launch_table;

DT_HIDDEN int dt_launch_init(dt_launch_table *t);
DT_HIDDEN void dt_launch_free(dt_launch_table *t);
DT_HIDDEN uint32_t dt_launch_intern(dt_launch_table *t, const dt_launch_config *c);

/* ------------------------------------------------------------------ */
/* Clock calibration                                                   */
/* ------------------------------------------------------------------ */
typedef struct dt_clock_sample {
    uint64_t vendor;         /* backend clock reading */
    uint64_t realtime;       /* midpoint of the two CLOCK_REALTIME reads */
    uint64_t bracket_ns;     /* after - before: the sample's uncertainty */
} dt_clock_sample;

#define DT_CLOCK_MAX_SAMPLES 4096

/* One segment of the fitted map, ready for mapping without a division:
   every stored record is mapped twice at stop, and a 128-bit division per
   time would cost more than the rest of the record's processing. */
typedef struct dt_clock_segment {
    uint64_t vendor, vendor_end;  /* vendor times it maps: [vendor, vendor_end) */
    uint64_t realtime;            /* at vendor */
    uint64_t dv, adr;             /* vendor span, |realtime span| */
    uint64_t recip;               /* floor((2^64 - 1) / dv) */
    /* the offsets x = v - vendor that dt_clock_segment_at maps, [0, span):
       inside the segment, below 2^32 and with |realtime span| below 2^32
       (x * adr fits 64 bits); 0 when none */
    uint64_t span;
    uint64_t sign;                /* all ones when realtime falls along the segment, else 0 */
} dt_clock_segment;

typedef struct dt_clock {
    dt_clock_sample *samples; /* sorted by vendor time after fit */
    size_t count, cap;
    size_t unkept;            /* samples read but not kept: out of memory */
    int identity;             /* backend has no clock of its own */
    /* fit summary, filled by dt_clock_fit() */
    double slope;             /* realtime ns per vendor ns (overall) */
    double offset_ns;         /* realtime - vendor at the first sample */
    uint64_t error_bound_ns;  /* max half-bracket + max residual of the fit */
    size_t segments;
    dt_clock_segment *fast;   /* [segments], or NULL: mapping divides */
} dt_clock;

typedef int (*dt_clock_fn)(uint64_t *ns);

DT_HIDDEN void dt_clock_init(dt_clock *c, int identity);
DT_HIDDEN void dt_clock_free(dt_clock *c);
/* Take `tries` paired readings, keep the most tightly bracketed one. */
DT_HIDDEN int dt_clock_sample_now(dt_clock *c, dt_clock_fn fn, int tries);
DT_HIDDEN int dt_clock_add(dt_clock *c, dt_clock_sample s);
/* Build the piecewise affine map from the samples. */
DT_HIDDEN void dt_clock_fit(dt_clock *c);
/* Vendor ns -> realtime ns (after dt_clock_fit). */
DT_HIDDEN uint64_t dt_clock_map(const dt_clock *c, uint64_t vendor_ns);
DT_HIDDEN uint64_t dt_clock_map_slow(const dt_clock *c, uint64_t vendor_ns, size_t *segment);

/* The time at v of a segment (v inside it), rounded half away from zero as
   the division would: x * |dr| / dv through the reciprocal, which starts
   at most 2 below the quotient. 0 when x * |dr| could exceed 64 bits
   (segments of more than 4 s): the caller divides. */
static inline uint64_t dt_clock_segment_at(const dt_clock_segment *g, uint64_t x)
{
    uint64_t n = x * g->adr;
    uint64_t q = (uint64_t)(((unsigned __int128)n * g->recip) >> 64);
    uint64_t r = n - q * g->dv;
    while (r >= g->dv) {
        q++;
        r -= g->dv;
    }
    q += r >= g->dv - r;
    /* realtime + q or realtime - q, as the sign says */
    int64_t t = (int64_t)(g->realtime + ((q ^ g->sign) - g->sign));
    return t < 0 ? 0 : (uint64_t)t;
}

static inline int dt_clock_segment_map(const dt_clock_segment *g, uint64_t v, uint64_t *out)
{
    uint64_t x = v - g->vendor;
    if (x > UINT32_MAX || g->adr > UINT32_MAX) return 0;
    *out = dt_clock_segment_at(g, x);
    return 1;
}

/* dt_clock_map for times that come mostly in order: *segment (start at 0)
   remembers where the previous one fell. */
static inline uint64_t dt_clock_map_near(const dt_clock *c, uint64_t v, size_t *segment)
{
    size_t i = *segment;
    uint64_t out;
    if (c->fast && i < c->segments && v >= c->fast[i].vendor && v < c->fast[i].vendor_end &&
        dt_clock_segment_map(&c->fast[i], v, &out))
        return out;
    return dt_clock_map_slow(c, v, segment);
}

/* ------------------------------------------------------------------ */
/* Correlation                                                         */
/* ------------------------------------------------------------------ */
/* u64 -> u64 open-addressing map: vendor correlation -> external id.
   Key 0 means "no correlation" and is never stored. One entry per slot, so a
   lookup in a map of millions is one cache miss. */
typedef struct dt_corr_entry { uint64_t key, value; } dt_corr_entry;
typedef struct dt_corr_map {
    dt_corr_entry *slots;
    size_t mask, count;
} dt_corr_map;

DT_HIDDEN int dt_corr_map_init(dt_corr_map *m, size_t capacity_hint);
DT_HIDDEN void dt_corr_map_free(dt_corr_map *m);
/* Make room for `entries` in all without rehashing on the way. */
DT_HIDDEN int dt_corr_map_reserve(dt_corr_map *m, size_t entries);
DT_HIDDEN int dt_corr_map_put(dt_corr_map *m, uint64_t key, uint64_t value);
DT_HIDDEN int dt_corr_map_get(const dt_corr_map *m, uint64_t key, uint64_t *value);

/* Called from the vendor's API-enter callback on the calling thread: links
   the vendor correlation id to the innermost entry of the thread's external
   stack, unless the vendor's own stack holds that entry (then the vendor's
   records carry it). devtrace's stack is the truth: a vendor without
   external correlation (TOPSPTI), or whose stack refused an id (too
   shallow), is attributed through here. These links win over the vendor's
   records at stop. Lock-free: appends to a per-thread log merged at stop. */
DT_HIDDEN void dt_corr_link_current(uint64_t correlation);
/* A new user range id (DT_RANGE_ID_BASE and up), for ranges a vendor
   reports (markers) as for dt_range_push's. */
DT_HIDDEN uint64_t dt_range_id_next(void);
/* A user range the vendor reported rather than the program pushed (ROCTX
   start/stop ranges and marks): recorded with an id of its own, on host
   thread tid, times in realtime ns. Session lock not held. */
DT_HIDDEN void dt_range_add(dt_session *s, const char *name, uint64_t start_ns, uint64_t end_ns, uint32_t tid);
/* The user range that encloses external id `id` (pushed inside it), after
   stop. Returns 1 and sets *range when there is one. */
DT_HIDDEN int dt_external_parent_range(const dt_session *s, uint64_t id, uint64_t *range);

/* The External id linked to a vendor correlation id, after stop
   (dt_corr_get, defined with the session below). */
/* How many correlation ids have a link, after stop. */
DT_HIDDEN size_t dt_corr_count(const dt_session *s);

/* For backends whose vendor reports the mapping in records (CUPTI):
   call with the session lock held (inside dt_session_lock/unlock). It only
   appends to a log (a sequential write, cheap on the vendor's thread); the
   map is filled once, sized for every link, at stop. */
static inline void dt_corr_link(dt_session *s, uint64_t correlation, uint64_t external_id);
/* dt_corr_link when the log is full: grows it. */
DT_HIDDEN void dt_corr_link_grow(dt_session *s, uint64_t correlation, uint64_t external_id);

/* ------------------------------------------------------------------ */
/* Backend contract                                                    */
/* ------------------------------------------------------------------ */
/* Device properties a backend could not read (dt_device_props.absent):
   left out of the trace, never written as 0. */
enum {
    DT_PROP_NAME = 1u << 0,
    DT_PROP_TOTAL_MEM = 1u << 1,
    DT_PROP_COMPUTE_MAJOR = 1u << 2,
    DT_PROP_COMPUTE_MINOR = 1u << 3,
    DT_PROP_THREADS_PER_BLOCK = 1u << 4,
    DT_PROP_THREADS_PER_SM = 1u << 5,
    DT_PROP_REGS_PER_BLOCK = 1u << 6,
    DT_PROP_WARP_SIZE = 1u << 7,
    DT_PROP_SHARED_PER_BLOCK = 1u << 8,
    DT_PROP_SMS = 1u << 9,
    DT_PROP_REGS_PER_SM = 1u << 10,
    DT_PROP_SHARED_PER_BLOCK_OPTIN = 1u << 11,
    DT_PROP_SHARED_PER_SM = 1u << 12,
    DT_PROP_BLOCKS_PER_SM = 1u << 13,
};

typedef struct dt_device_props {
    int valid;
    unsigned absent;          /* DT_PROP_* the backend could not read */
    uint32_t id;
    char name[128];
    uint64_t total_global_mem;
    int compute_major, compute_minor;
    int max_threads_per_block, max_threads_per_sm;
    int max_blocks_per_sm;
    int regs_per_block, regs_per_sm;
    int warp_size;
    uint64_t shared_mem_per_block, shared_mem_per_block_optin, shared_mem_per_sm;
    int num_sms;
} dt_device_props;

#define DT_MAX_DEVICES 64

/* What a backend implements: src/backends/backend.h. */
typedef struct dt_backend dt_backend;

/* The list, NULL-terminated, in "auto" preference order. */
DT_HIDDEN extern const dt_backend *const dt_backends[];
DT_HIDDEN const dt_backend *dt_backend_find(const char *name);

/* ------------------------------------------------------------------ */
/* Job and host facts for merging traces (src/core/jobinfo.c)          */
/* ------------------------------------------------------------------ */
typedef struct dt_rank_info {
    int known;                /* a launcher announced a numeric rank */
    int64_t rank, local_rank, world_size; /* -1 where not announced */
    char launcher[32];        /* "torchrun", "mpirun (Open MPI)", "srun (Slurm)", ... */
    char rank_text[32];       /* the rank variable as set ("" when none) */
} dt_rank_info;

/* From RANK/LOCAL_RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_PROCID/LOCALID/
   NTASKS or PMI_RANK/PMI_SIZE, the first set found. */
DT_HIDDEN void dt_rank_from_env(dt_rank_info *info);

typedef struct dt_host_clock {
    int known;                /* adjtimex answered */
    int synchronized;         /* an NTP/PTP daemon disciplines CLOCK_REALTIME */
    int64_t max_error_us;     /* the kernel's bound on |CLOCK_REALTIME - UTC| */
    int64_t est_error_us;
    char clocksource[32];     /* the kernel clocksource ("tsc", "kvm-clock") */
} dt_host_clock;

DT_HIDDEN void dt_host_clock_read(dt_host_clock *c);
/* Host thread names (src/core/threads.c)                              */
/* ------------------------------------------------------------------ */
typedef struct dt_thread_name {
    uint32_t tid;
    char name[20];           /* the kernel's name: at most 15 bytes */
} dt_thread_name;

typedef struct dt_thread_names {
    pthread_mutex_t lock;
    dt_thread_name *v;
    size_t count, cap;
} dt_thread_names;

DT_HIDDEN void dt_thread_names_init(dt_thread_names *t);
DT_HIDDEN void dt_thread_names_clear(dt_thread_names *t);
DT_HIDDEN void dt_thread_names_free(dt_thread_names *t);
/* Remember the calling thread's name, once per session: cheap after the
   first call (a thread-local compare). */
DT_HIDDEN void dt_thread_note(dt_session *s);
/* Read the names of every thread still alive (at stop). */
DT_HIDDEN void dt_thread_names_sweep(dt_session *s);

/* ------------------------------------------------------------------ */
/* The session                                                         */
/* ------------------------------------------------------------------ */
enum dt_session_state { DT_STATE_CREATED, DT_STATE_RUNNING, DT_STATE_STOPPED };

#define DT_MAX_NOTES 32

typedef struct dt_corr_chunk dt_corr_chunk;

struct dt_session {
    dt_config config;
    char *output_path;
    char *backend_request;        /* as configured: "auto" or a name */
    /* chosen at start; replaced once, by dt_session_attach_deferred, while
       the program's threads read it */
    _Atomic(const dt_backend *) backend;
    /* dt_session_start_deferring: the backend that waits for the vendor's
       runtime to call the injection entry point, until attached or never */
    const dt_backend *deferred;
    _Atomic int awaiting_vendor;      /* running without it, waiting */
    _Atomic int attaching;
    /* entries of the external-correlation stacks pushed while waiting: the
       vendor's own stacks do not hold them */
    _Atomic int64_t unheld_entries;
    int state;
    uint64_t generation;          /* distinguishes sessions for per-thread logs */

    pthread_mutex_t lock;         /* store, names, launches, corr, notes */
    dt_store store;
    dt_intern names;
    dt_launch_table launches;
    dt_collective *collectives;   /* DT_EVENT_COLLECTIVE details, by u.collective.info */
    uint32_t collective_count, collective_cap;
    /* Links resolved at stop: vendors count correlation ids up, so they
       usually fill a table indexed by id - corr_dense_base (external id + 1;
       0: no link); ids outside it go to the map. */
    dt_corr_map corr;
    uint64_t *corr_dense;
    uint64_t corr_dense_base;
    size_t corr_dense_len, corr_dense_count;
    dt_corr_chunk *corr_chunks;   /* per-thread link logs, merged at stop */
    uint64_t *corr_log;           /* dt_corr_link pairs (correlation, external), merged at stop */
    size_t corr_log_count, corr_log_cap;
    /* An external id pushed inside a user range -> that range's id (key: id + 1,
       since 0 is a valid external id). Device activity is attributed to the
       innermost entry; this lets a range's device time include the operations
       run inside it. Filled at stop from per-thread logs. */
    dt_corr_chunk *parent_chunks;
    dt_corr_map ext_parents;
    /* The vendor's stack refused an id that could not be attributed
       otherwise: its External-correlation records may name an enclosing id,
       so they are not used (see corr.c). */
    _Atomic int external_unreliable;

    _Atomic uint64_t loss[DT_LOSS_COUNT];
    /* Damage short of losing a record, noted in the trace at stop. */
    _Atomic uint64_t kernel_names_cut;  /* longer than DT_MAX_KERNEL_NAME */
    _Atomic uint64_t links_lost;        /* External id links: out of memory */
    _Atomic uint64_t parents_lost;      /* operation -> enclosing range: out of memory */

    dt_clock clock;
    pthread_t calibrator;
    int calibrator_running;
    pthread_mutex_t calib_lock;
    pthread_cond_t calib_cond;
    int calib_stop;

    uint64_t window_start_ns, window_end_ns; /* realtime capture window */
    uint32_t pid;
    /* In a child forked without exec (dt_session_forked): the parent's pid
       (0: not forked), when, the records stored before, and whether the
       vendor cannot be used here (the backend's DT_BACKEND_NO_FORK_CHILD). */
    uint32_t fork_parent;
    uint64_t fork_ns;
    size_t fork_store_count;
    int fork_vendor_unusable;
    int fork_vendor_quiet; /* the backend's fork_child has run (dt_session_fork_child) */
    char process_name[256];       /* the command line, program's base name first */
    dt_thread_names threads;
    char host_name[256];
    dt_rank_info rank;
    dt_host_clock host_clock;     /* read at stop */
    char backend_library[512];
    char backend_version[64];
    struct { char key[64]; char text[448]; } notes[DT_MAX_NOTES];
    int note_count;

    dt_device_props devices[DT_MAX_DEVICES];
};

/* The External id linked to a vendor correlation id, after stop. */
static inline int dt_corr_get(const dt_session *s, uint64_t correlation, uint64_t *external_id)
{
    uint64_t at = correlation - s->corr_dense_base;
    if (correlation != 0 && at < s->corr_dense_len && s->corr_dense[at]) {
        *external_id = s->corr_dense[at] - 1;
        return 1;
    }
    return s->corr.count && dt_corr_map_get(&s->corr, correlation, external_id);
}

static inline void dt_corr_link(dt_session *s, uint64_t correlation, uint64_t external_id)
{
    if (__builtin_expect(s->corr_log_count == s->corr_log_cap, 0)) {
        dt_corr_link_grow(s, correlation, external_id);
        return;
    }
    s->corr_log[2 * s->corr_log_count] = correlation;
    s->corr_log[2 * s->corr_log_count + 1] = external_id;
    s->corr_log_count++;
}

/* Lock around a batch of store/intern/corr updates (one vendor buffer). */
DT_HIDDEN void dt_session_lock(dt_session *s);
DT_HIDDEN void dt_session_unlock(dt_session *s);
/* For the injection library (src/inject): start s, but a backend whose
   vendor calls an injection entry point when the process first uses the
   device (CUDA's InitializeInjection) waits for that call: with it
   requested, the session runs on the null backend meanwhile; with "auto",
   the other backends are tried without it. A process that never uses the
   device never loads that vendor's library. */
DT_HIDDEN dt_status dt_session_start_deferring(dt_session *s, const char *deferred);
/* The waiting backend takes over the running session (on the null
   backend): DT_OK also when none waits. The host ranges and operations
   recorded so far are kept; entries pushed while waiting are attributed
   through API callbacks where the vendor's stack did not see them. */
DT_HIDDEN dt_status dt_session_attach_deferred(dt_session *s);
/* Whether s runs on the null backend waiting for `backend` (a name). */
DT_HIDDEN int dt_session_awaits(const dt_session *s, const char *backend);
/* Give s's vendor interface to another client (backend.h: release). */
DT_HIDDEN dt_status dt_session_release_backend(dt_session *s, const char *to);

/* Set by the injection library before it stops its session at process
   exit: vendor calls that only spare a running program cost (detaching the
   vendor library) are not made then. */
DT_HIDDEN extern _Atomic int dt_g_exiting;

/* Set in a child forked without exec whose vendor cannot record there
   (dt_session_forked, DT_BACKEND_NO_FORK_CHILD), never cleared: the
   backends' API callbacks, which test it first (one predictable branch),
   then count the child's launches instead (dt_session_fork_launch_lost). */
DT_HIDDEN extern int dt_g_fork_unusable;
/* One launch call made in such a child: counted as lost (forked_child). */
DT_HIDDEN void dt_session_fork_launch_lost(void);

/* The running session, or NULL (acquire load). For vendor callbacks, on
   every API call: inline. */
DT_HIDDEN extern _Atomic(dt_session *) dt_g_active;
static inline dt_session *dt_active_session(void)
{
    return atomic_load_explicit(&dt_g_active, memory_order_acquire);
}

/* Count a dropped record. Lock-free. */
static inline void dt_loss_add(dt_session *s, dt_loss_reason r, uint64_t n)
{
    atomic_fetch_add_explicit(&s->loss[r], n, memory_order_relaxed);
}
/* Check a record's vendor timestamps; counts and returns 0 if implausible.
   A start without an end is work a forced flush handed back while it still
   ran (CUPTI does so at stop), not a record without timing. */
static inline int dt_times_ok(dt_session *s, uint64_t start, uint64_t end)
{
    if (start == 0 || end == 0) {
        dt_loss_add(s, start && !end ? DT_LOSS_UNFINISHED : DT_LOSS_TIMESTAMP_ZERO, 1);
        return 0;
    }
    if (end < start) { dt_loss_add(s, DT_LOSS_TIMESTAMP_REVERSED, 1); return 0; }
    if (end - start > s->config.max_duration_ns) { dt_loss_add(s, DT_LOSS_TIMESTAMP_TOO_LONG, 1); return 0; }
    return 1;
}
/* A zeroed record in the store (lock held), or NULL: counted as store_full. */
static inline dt_rec *dt_session_add(dt_session *s)
{
    dt_rec *r = dt_store_push(&s->store);
    if (!r) dt_loss_add(s, DT_LOSS_STORE_FULL, 1);
    return r;
}

/* ---- What every backend's decoder needs (src/core/decode.c) ---- */

/* Names and launch configurations repeat from record to record. A cache
   lives for one vendor buffer (on the decoder's stack), so it never outlives
   the session whose ids it holds. Kernel names are cached by pointer: vendors
   (CUPTI, TOPSPTI) share one name string among all records of a kernel;
   vendors that copy the name into every record (roctracer) are cached by
   the name's bytes. */
#define DT_DECODE_SLOTS 64
#define DT_DECODE_KERNEL_WAYS 4
#define DT_DECODE_COPIED_SETS 256
typedef struct dt_decode_cache {
    /* four ways per set, each checked inline: hot names that hash alike
       (where the allocator put their strings decides) do not evict each
       other; a miss enters way 0 and moves the others down (the oldest goes) */
    struct { const char *raw[DT_DECODE_KERNEL_WAYS]; uint32_t id[DT_DECODE_KERNEL_WAYS]; } kernel[DT_DECODE_SLOTS];
    struct { dt_launch_config config; uint32_t id; int used; } config[DT_DECODE_SLOTS];
    /* the configuration of the previous kernel: compared before hashing
       (kernels of a loop repeat theirs); its id + 1, 0 when none */
    dt_launch_config last_config;
    uint32_t last_config_id;
    uint32_t copy[6][6][6];   /* name id + 1, by copy kind, source, destination */
    uint32_t fill[6];         /* name id + 1, by memory kind */
    /* names copied into each record, by content: two ways per set; made
       ready on first use (the vendors that share names never pay for it) */
    int copied_ready;
    struct { const char *raw[2]; uint32_t len[2], id[2]; } copied[DT_DECODE_COPIED_SETS];
} dt_decode_cache;

DT_HIDDEN void dt_decode_cache_init(dt_decode_cache *c);
/* A vendor name longer than any real kernel name (CUTLASS's run to tens of
   KiB) is taken as a corrupt pointer or record: it is cut, counted in
   kernel_names_cut and noted. */
#define DT_MAX_KERNEL_NAME ((size_t)1 << 20)

/* The decode helpers below run for every vendor record: their common paths
   are inline (in the backend's decode loop), the rest in decode.c. */
static inline size_t dt_decode_slot(uint64_t key)
{
    return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 58); /* 64 slots */
}
_Static_assert(DT_DECODE_SLOTS == 64, "dt_decode_slot() yields 6 bits");

DT_HIDDEN uint32_t dt_decode_kernel_name_miss(dt_session *s, dt_decode_cache *c, const char *raw);
/* Interned, demangled kernel name ("<unnamed kernel>" for NULL or ""); a
   name without a NUL in its first DT_MAX_KERNEL_NAME bytes is cut there.
   UINT32_MAX: no memory. */
static inline uint32_t dt_decode_kernel_name(dt_session *s, dt_decode_cache *c, const char *raw)
{
    if (raw) {
        __typeof__(c->kernel[0]) *set = &c->kernel[dt_decode_slot((uintptr_t)raw)];
        for (int w = 0; w < DT_DECODE_KERNEL_WAYS; w++)
            if (set->raw[w] == raw) return set->id[w];
    }
    return dt_decode_kernel_name_miss(s, c, raw);
}

DT_HIDDEN uint32_t dt_decode_kernel_name_copied_miss(dt_session *s, dt_decode_cache *c, const char *raw,
                                                     size_t len, size_t set);
/* Whether n bytes at a and b are the same: word by word inline for names
   of a word or more (the last word overlaps the one before), memcmp below. */
static inline int dt_name_bytes_equal(const char *a, const char *b, size_t n)
{
    if (a == b) return 1;
    if (n < 8) return memcmp(a, b, n) == 0;
    uint64_t x, y;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* dt_decode_kernel_name for a name of len bytes (NUL-terminated there) that
   the vendor copied into this record: records of one kernel each hold their
   own copy, so the cache compares bytes. The buffer must hold the names of
   the cached entries as long as the cache lives (one vendor buffer). */
static inline uint32_t dt_decode_kernel_name_copied(dt_session *s, dt_decode_cache *c, const char *raw, size_t len)
{
    /* every byte counts: kernel names share long heads and tails
       (templates, mangling) and differ anywhere */
    uint64_t key = len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, raw + i, 8);
        key = (key ^ w) * UINT64_C(0x9e3779b97f4a7c15);
        key ^= key >> 29;
    }
    /* the tail: the last 8 bytes in one load (they overlap the last word
       read), or the bytes of a name shorter than a word */
    if (len >= 8) memcpy(&w, raw + len - 8, 8);
    else for (w = 0; i < len; i++) w = w << 8 | (unsigned char)raw[i];
    key = (key ^ w) * UINT64_C(0xc2b2ae3d27d4eb4f);
    size_t set = (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 56);
    if (!c->copied_ready) {
        memset(c->copied, 0, sizeof c->copied);
        c->copied_ready = 1;
    }
    __typeof__(c->copied[0]) *e = &c->copied[set];
    if (e->raw[0] && e->len[0] == len && dt_name_bytes_equal(e->raw[0], raw, len)) return e->id[0];
    return dt_decode_kernel_name_copied_miss(s, c, raw, len, set);
}
_Static_assert(DT_DECODE_COPIED_SETS == 256, "dt_decode_kernel_name_copied() takes 8 bits of the hash");

/* A launch configuration's hash, and its equality without a call to
   memcmp per record. Decoders have just written the fields one by one: read
   as wider words they would stall on store forwarding (a load spanning two
   recent stores waits for both to retire), so each field is read as itself. */
_Static_assert(sizeof(dt_launch_config) == 36, "dt_launch_config is 9 words");
static inline uint64_t dt_launch_config_key(const dt_launch_config *cfg)
{
#define DT_PAIR(lo, hi) ((uint64_t)(uint32_t)(lo) | (uint64_t)(uint32_t)(hi) << 32)
    uint64_t w0 = DT_PAIR(cfg->grid[0], cfg->grid[1]), w1 = DT_PAIR(cfg->grid[2], cfg->block[0]),
             w2 = DT_PAIR(cfg->block[1], cfg->block[2]),
             w3 = DT_PAIR(cfg->registers_per_thread, cfg->static_shared_memory);
#undef DT_PAIR
    /* linear in the first word: configurations that differ only in their
       grid's x (the commonest) spread evenly over the slots */
    return w0 ^ (w1 * 0x9e3779b97f4a7c15ull) ^ (w2 << 7 | w2 >> 57) ^ (w3 * 0xc2b2ae3d27d4eb4full) ^
           cfg->dynamic_shared_memory;
}

static inline int dt_launch_config_equal(const dt_launch_config *x, const dt_launch_config *y)
{
    return ((uint32_t)(x->grid[0] ^ y->grid[0]) | (uint32_t)(x->grid[1] ^ y->grid[1]) |
            (uint32_t)(x->grid[2] ^ y->grid[2]) | (uint32_t)(x->block[0] ^ y->block[0]) |
            (uint32_t)(x->block[1] ^ y->block[1]) | (uint32_t)(x->block[2] ^ y->block[2]) |
            (x->registers_per_thread ^ y->registers_per_thread) |
            (x->static_shared_memory ^ y->static_shared_memory) |
            (x->dynamic_shared_memory ^ y->dynamic_shared_memory)) == 0;
}

/* A configuration other than the previous kernel's: through the slots. */
DT_HIDDEN uint32_t dt_decode_launch_config_other(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg);
static inline uint32_t dt_decode_launch_config(dt_session *s, dt_decode_cache *c, const dt_launch_config *cfg)
{
    if (c->last_config_id && dt_launch_config_equal(cfg, &c->last_config)) return c->last_config_id - 1;
    return dt_decode_launch_config_other(s, c, cfg);
}
/* "Memcpy HtoD (Pageable -> Device)" and "Memset (Device)", as Kineto names them. */
DT_HIDDEN uint32_t dt_decode_copy_name(dt_session *s, dt_decode_cache *c, uint8_t copy_kind,
                                       uint8_t src_kind, uint8_t dst_kind);
DT_HIDDEN uint32_t dt_decode_fill_name(dt_session *s, dt_decode_cache *c, uint8_t memory_kind);
/* start - earlier as a kernel latency delta; DT_DELTA_UNKNOWN when earlier
   is 0 or all ones (vendors' "unknown"), after start, or too far before. */
static inline uint32_t dt_latency_delta(uint64_t start, uint64_t earlier)
{
    if (earlier == 0 || earlier == UINT64_MAX || earlier > start) return DT_DELTA_UNKNOWN;
    uint64_t d = start - earlier;
    return d >= DT_DELTA_UNKNOWN ? DT_DELTA_UNKNOWN : (uint32_t)d;
}

/* A record with the checks every vendor's needs: plausible timestamps and a
   name (UINT32_MAX: interning ran out of memory). NULL: dropped, counted. */
static inline dt_rec *dt_add_checked(dt_session *s, uint8_t kind, uint64_t start, uint64_t end, uint32_t name)
{
    if (!dt_times_ok(s, start, end)) return NULL;
    if (name == UINT32_MAX) {
        dt_loss_add(s, DT_LOSS_STORE_FULL, 1);
        return NULL;
    }
    dt_rec *r = dt_session_add(s);
    if (!r) return NULL;
    r->kind = kind;
    r->start = start;
    r->end = end;
    r->name = name;
    return r;
}

/* Append a device activity (kernel, memcpy, memset, sync, overhead) after
   the checks every vendor needs: plausible timestamps, a device id that fits,
   a name. Session lock held. NULL: the record was dropped and counted. */
static inline dt_rec *dt_add_device_activity(dt_session *s, uint8_t kind, uint64_t start, uint64_t end,
                                             uint64_t correlation, uint32_t device, uint32_t stream,
                                             uint32_t context, uint32_t name)
{
    /* device ids are 16-bit in the store; a larger one is a corrupt record */
    if (device > UINT16_MAX) {
        dt_loss_add(s, DT_LOSS_MALFORMED, 1);
        return NULL;
    }
    dt_rec *r = dt_add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->device = (uint16_t)device;
    r->lane = stream;
    r->context = context;
    return r;
}
/* A memory copy or fill as every vendor describes it, in devtrace's terms
   (the backend translates its enums). Session lock held; NULL: dropped and
   counted (peer device ids must fit 16 bits like the device's). */
typedef struct dt_copy {
    uint64_t start, end, correlation, bytes;
    uint32_t device, stream, context;
    uint32_t src_device, dst_device;   /* peer copies; otherwise the device */
    uint8_t copy_kind, src_kind, dst_kind; /* dt_copy_kind, dt_memory_kind */
    int async;
} dt_copy;
DT_HIDDEN dt_rec *dt_add_copy(dt_session *s, dt_decode_cache *c, const dt_copy *m);

typedef struct dt_fill {
    uint64_t start, end, correlation, bytes;
    uint32_t device, stream, context, value;
    uint8_t memory_kind;                /* dt_memory_kind */
    int async;
} dt_fill;
DT_HIDDEN dt_rec *dt_add_fill(dt_session *s, dt_decode_cache *c, const dt_fill *m);

/* A collective as every vendor describes it (the backend maps its data
   types to torch's names and computes bytes where it can). Strings are the
   vendor's; NULL or "" where it gives none. Session lock held; NULL: dropped
   and counted. */
typedef struct dt_collective_desc {
    uint64_t start, end, correlation;
    uint32_t device, stream;
    const char *name, *group, *algorithm, *data_type;
    uint64_t count, bytes;
    double bandwidth_gbps;
} dt_collective_desc;
DT_HIDDEN dt_rec *dt_add_collective(dt_session *s, const dt_collective_desc *c);
/* A device memory allocation or free as every vendor describes it (the
   backend translates its memory kinds; bytes 0 where it does not say).
   Session lock held; NULL: dropped and counted. */
typedef struct dt_memory_op {
    uint64_t time, correlation, address, bytes;
    uint32_t device, stream;
    uint8_t memory_kind;               /* dt_memory_kind */
    int is_free;
} dt_memory_op;
DT_HIDDEN dt_rec *dt_add_memory(dt_session *s, const dt_memory_op *m);
/* A string the vendor owns, interned, read no further than max bytes (a
   longer one is cut there); "" for NULL. UINT32_MAX: no memory. */
DT_HIDDEN uint32_t dt_intern_vendor_str(dt_session *s, const char *raw, size_t max);

/* Append a runtime or driver API call made by host thread tid of process pid.
   A backend that knows the call launches device work sets DT_REC_LAUNCH on
   the record returned. */
static inline dt_rec *dt_add_api_call(dt_session *s, uint8_t kind, uint64_t start, uint64_t end,
                                      uint64_t correlation, uint32_t pid, uint32_t tid, uint32_t name,
                                      uint32_t cbid, int32_t return_code)
{
    dt_rec *r = dt_add_checked(s, kind, start, end, name);
    if (!r) return NULL;
    r->correlation = correlation;
    r->lane = tid;
    r->context = pid;
    r->u.api.cbid = cbid;
    r->u.api.return_code = return_code;
    return r;
}

/* Backend-reported facts that go into the trace. */
DT_HIDDEN void dt_session_set_library(dt_session *s, const char *path, const char *version);
/* A degraded feature or other note ("topsptiGetCallbackName", "missing: ...").
   A key is never overwritten: a different text under a key already used is
   appended to it ("; "), the same text again is ignored. Thread-safe. */
/* In the child of a fork without exec, from a pthread_atfork child handler
   (plain stores and async-signal-safe calls only): the running session goes
   on as the child's; see session.c. */
DT_HIDDEN void dt_session_forked(dt_session *s);
/* Before and after a fork without exec, in the parent, from pthread_atfork
   handlers: the backend's fork_prepare and fork_parent where its vendor
   cannot record in the child. */
DT_HIDDEN void dt_session_fork_prepare(dt_session *s);
DT_HIDDEN void dt_session_fork_parent(dt_session *s);
/* In such a child once fork has returned there (every atfork handler has
   run, so that the vendor's locks are usable): the backend's fork_child. */
DT_HIDDEN void dt_session_fork_child(dt_session *s);
DT_HIDDEN void dt_session_note(dt_session *s, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
DT_HIDDEN void dt_session_set_device(dt_session *s, const dt_device_props *p);

/* Convert a stored record to the public view. */
DT_HIDDEN void dt_rec_to_event(const dt_session *s, const dt_rec *r, dt_event *ev);

/* ------------------------------------------------------------------ */
/* Vendor activity buffers: a bounded pool (src/core/pool.c)           */
/* ------------------------------------------------------------------ */
/* The vendor asks for buffers from the traced program's threads; handing
   out pooled ones keeps malloc out of that path and bounds memory. When the
   pool is empty the vendor gets no buffer (and drops, counting). Every
   backend's buffers come from here. Thread-safe, except that destroy must
   not race with get or put on the same pool. */
typedef struct dt_buffer_pool dt_buffer_pool;
/* Make buffers on demand, up to the count, instead of all at create: for
   arming before a session exists, when nobody has asked for the memory. */
#define DT_POOL_LAZY 1u
/* When all count buffers are out, make more on demand, up to the larger of
   DT_POOL_GROW_FACTOR x count and count + DT_POOL_PER_THREAD for each thread
   that has asked for a buffer (at most DT_POOL_MAX_BUFFERS). A vendor with
   per-thread buffers (CUDA 13's CUPTI) keeps one partly filled buffer per
   thread that uses the device, and a consumer that falls behind (its thread
   starved on a loaded machine) leaves completed buffers waiting: a pool
   sized for neither would run dry and the vendor drop records. The memory
   is made only when asked for, and kept until the pool is destroyed. */
#define DT_POOL_GROW 2u
#define DT_POOL_GROW_FACTOR 4u
#define DT_POOL_PER_THREAD 2u
#define DT_POOL_MAX_BUFFERS 4096u
/* count buffers of size bytes rounded up to 64; NULL when either is 0, on
   overflow or out of memory. Without DT_POOL_LAZY all are made now. */
DT_HIDDEN dt_buffer_pool *dt_pool_create(uint32_t count, size_t size, unsigned flags);
/* Frees the pool and returns how many buffers were still out. Those are not
   freed (the vendor may still write into them): they are kept, logged, until
   dt_pool_reclaim() frees them. The caller must drop its pointer either way.
   A pool with none out leaves its buffers to the next pool of the same
   buffer size (the next session's), already faulted in. */
DT_HIDDEN uint32_t dt_pool_destroy(dt_buffer_pool *p);
/* Free the buffers kept for the next pool. */
DT_HIDDEN void dt_pool_release_spares(void);
/* Free a buffer that a destroyed pool left out, now that the vendor has
   handed it back; -1 (and nothing freed) for any other pointer. A backend
   that reconfigures its pool while the vendor holds buffers uses this. */
DT_HIDDEN int dt_pool_reclaim(uint8_t *buf);
/* A buffer of dt_pool_buffer_size() bytes, 64-byte aligned (vendors need 8),
   or NULL, counted as refused, when all count buffers are out (or a lazy
   pool cannot make one). */
DT_HIDDEN uint8_t *dt_pool_get(dt_buffer_pool *p);
/* Return a buffer; -1 for a pointer the pool did not hand out (another
   pool's, an offset into one, or a buffer already returned). */
DT_HIDDEN int dt_pool_put(dt_buffer_pool *p, uint8_t *buf);
DT_HIDDEN size_t dt_pool_buffer_size(const dt_buffer_pool *p);
/* Buffers handed out and not yet returned: held by the vendor. */
DT_HIDDEN uint32_t dt_pool_outstanding(dt_buffer_pool *p);
/* How many requests found the pool empty. */
DT_HIDDEN uint64_t dt_pool_refused(const dt_buffer_pool *p);
/* What a pool has become: buffers made, the most it may make now, and the
   threads that asked (for notes and tests). */
typedef struct dt_pool_stats {
    uint32_t made, bound, threads;
} dt_pool_stats;
DT_HIDDEN void dt_pool_shape(dt_buffer_pool *p, dt_pool_stats *out);

/* The policy every backend follows, around its one process-wide pool:
   preallocated when a session starts, so that a busy device never waits for
   malloc and memory stays bounded; made on demand (DT_POOL_LAZY) when armed
   before any session; when it runs dry the vendor gets no buffer and drops
   (counted as no_buffer); a new configuration replaces the pool, and buffers
   the vendor still holds of the old one are freed as they come back. The
   slot's lock guards the pointer against the vendor's threads. */
typedef struct dt_pool_slot {
    pthread_mutex_t lock;
    dt_buffer_pool *pool;
} dt_pool_slot;
#define DT_POOL_SLOT_INIT {PTHREAD_MUTEX_INITIALIZER, NULL}
/* Replace the pool; -1 when it cannot be made. */
DT_HIDDEN int dt_pool_slot_configure(dt_pool_slot *slot, uint32_t count, size_t size, unsigned flags);
DT_HIDDEN int dt_pool_slot_exists(dt_pool_slot *slot);
/* A buffer and its size, or NULL (size 0) when the pool is empty or absent. */
DT_HIDDEN uint8_t *dt_pool_slot_get(dt_pool_slot *slot, size_t *size);
DT_HIDDEN void dt_pool_slot_put(dt_pool_slot *slot, uint8_t *buf);
DT_HIDDEN uint64_t dt_pool_slot_refused(dt_pool_slot *slot);
DT_HIDDEN void dt_pool_slot_shape(dt_pool_slot *slot, dt_pool_stats *out);
/* Free the pool; returns the buffers the vendor still holds (kept until they
   come back). */
DT_HIDDEN uint32_t dt_pool_slot_release(dt_pool_slot *slot);

/* ------------------------------------------------------------------ */
/* Vendor libraries: the one loading rule (src/core/loader.c)          */
/* ------------------------------------------------------------------ */
/* Where a backend's vendor library is looked for. Lists are NULL-terminated. */
typedef struct dt_library_spec {
    const char *what;                 /* "libcupti", for messages */
    const char *override_env;         /* DEVTRACE_<VENDOR>_LIBRARY */
    const char *const *sonames;       /* tried through the loader path */
    const char *loaded_symbol;        /* marks a copy already in the process */
    const char *const *root_envs;     /* SDK roots as users know them (CUDA_HOME) */
    const char *default_root;         /* when none of them is set; NULL: none */
    const char *const *subdirs;       /* library folders under a root */
    /* Folders (glob patterns) under Python's site-packages where wheels put
       the library ("nvidia/cu13/lib"): those of the virtual or conda
       environment, of the python3 on PATH, PYTHONPATH, the user's and the
       system's. NULL: none. */
    const char *const *python_dirs;
    const char *const *paths;         /* absolute fallbacks */
    const char *hint;                 /* what to install or set */
    /* Look only under the SDK roots: the sonames are another vendor's too
       (the PPU SDK's libcupti is not NVIDIA's), so a copy in the process or
       on the loader path may not be this vendor's. */
    int roots_only;
} dt_library_spec;

typedef struct dt_library {
    void *handle;
    char path[512];
    int named;                        /* came from the override variable */
} dt_library;

/* Find and load a vendor library. The rule, the same for every backend:
   1. the override variable: the user named this library, so it is used or
      the backend cannot start (a clear error naming the variable), never a
      silent fallback to another copy;
   2. a copy the process already has (loaded_symbol, or a soname already
      loaded): two copies would fight over one driver interface;
   3. the sonames through the loader path, then under each SDK root set (or
      the default root) in each subdir, then in Python's wheel folders,
      then the absolute paths.
   With roots_only, only the override and step 3's roots and paths.
   Never unloads. DT_ERR_BACKEND_UNAVAILABLE lists every place tried. */
DT_HIDDEN dt_status dt_library_open(const dt_library_spec *spec, dt_library *out);
/* Step 3's candidates, in order, at most max (paths holds the strings it
   builds, max of them). */
DT_HIDDEN size_t dt_library_candidates(const dt_library_spec *spec, char (*paths)[512], const char **cands,
                                       size_t max);

/* A symbol a backend binds: required ones make a library unusable when
   missing; a missing optional one costs what `cost` says (NULL: nothing,
   given the other symbols). */
typedef struct dt_symbol_spec {
    const char *name;                 /* NULL or "": the vendor has none */
    int required;
    const char *cost;
} dt_symbol_spec;

/* Resolve n symbols into resolved[] (NULL when missing). A missing required
   symbol is an error naming the library and what to do. */
DT_HIDDEN dt_status dt_library_bind(const dt_library *lib, const dt_library_spec *spec,
                                    const dt_symbol_spec *syms, size_t n, void **resolved);
/* Append "missing X: cost" for each missing optional symbol with a cost. */
DT_HIDDEN void dt_symbols_describe_missing(const dt_symbol_spec *syms, size_t n, void *const *resolved,
                                           char *out, size_t len);
/* One note per missing optional symbol with a cost, keyed by its name. */
DT_HIDDEN void dt_symbols_note_missing(dt_session *s, const dt_symbol_spec *syms, size_t n,
                                       void *const *resolved);

/* Try each candidate with dlopen(RTLD_NOW|RTLD_LOCAL); the first that loads
   wins. `tried` receives a "; "-separated account of what was tried and why
   it failed (for error messages). Returns the handle or NULL. */
DT_HIDDEN void *dt_dlopen_first(const char *const *candidates, size_t n,
                                char *found, size_t found_len,
                                char *tried, size_t tried_len);

/* The backend contract, which the session and the exporter read. */
#include "../backends/backend.h"

#endif /* DT_INTERNAL_H */

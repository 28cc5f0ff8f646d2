/*
 * AMD ROCm and Hygon DCU (DTK) through roctracer (libroctracer64.so; on DTK
 * the same entry points in libgalaxyhip.so.5).
 *
 * roctracer is not CUPTI-shaped, so this backend implements the contract
 * itself, over what the core gives every backend:
 *  - the library by the core's loading rule, its entry points bound as
 *    required or optional with what each missing one costs;
 *  - one pool of two buffers that roctracer allocates through its client's
 *    allocator: the allocator hands out the core's buffer pool (one buffer
 *    of both halves, preallocated when the session starts), so the memory is
 *    bounded and the decoder knows where kernel names may lie;
 *  - HIP_OPS activity (kernels, copies, fills, barriers) and HIP_API activity
 *    (API spans, and the EXT_API records that carry External ids: roctracer
 *    writes those only with HIP_API activity), decoded by roctracer_decode.c;
 *  - HIP API callbacks, only for the calls whose arguments say what the
 *    records do not (launch configurations, fill values), and, where the
 *    EXT_API records cannot serve, for devtrace's API-enter attribution;
 *  - ROCTX callbacks as user ranges;
 *  - roctracer's timestamps (boot-relative ns) calibrated to realtime;
 *  - device properties through HIP's attribute queries, one by one, from the
 *    HIP runtime the process has (never loaded here), at stop.
 *
 * roctracer never drops a record: a producer that finds both buffers full
 * waits for the consumer. There is no dropped-record count to read.
 */
#include "backends/roctracer.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RT_LIBRARY_ENV "DEVTRACE_ROCTRACER_LIBRARY"
/* exported by devtrace's emulator only */
#define RT_EMULATOR_MARKER "devtrace_roctracer_emulator"
/* HIP API ids asked for names (HIP 6 has some 450) */
#define RT_API_NAME_LIMIT 1024

/* ------------------------------------------------------------------ */
/* The library                                                         */
/* ------------------------------------------------------------------ */
enum {
    RT_OPEN_POOL, RT_CLOSE_POOL, RT_ENABLE_ACTIVITY, RT_DISABLE_ACTIVITY, RT_FLUSH, RT_TIMESTAMP,
    /* optional */
    RT_ENABLE_OP_CALLBACK, RT_DISABLE_OP_CALLBACK, RT_ENABLE_DOMAIN_CALLBACK, RT_DISABLE_DOMAIN_CALLBACK,
    RT_OP_STRING, RT_OP_CODE, RT_PUSH, RT_POP, RT_START, RT_VERSION_MAJOR, RT_VERSION_MINOR, RT_ERROR_STRING,
    /* HIP, from the same library (DTK) or the process's HIP runtime */
    HIP_GET_DEVICE_COUNT, HIP_DEVICE_GET_ATTRIBUTE, HIP_DEVICE_GET_NAME, HIP_DEVICE_TOTAL_MEM,
    HIP_RUNTIME_GET_VERSION,
    RT_SYM_COUNT
};
#define RT_REQUIRED_COUNT RT_ENABLE_OP_CALLBACK
#define RT_HIP_FIRST HIP_GET_DEVICE_COUNT

static const dt_symbol_spec symbol_specs[RT_SYM_COUNT] = {
    [RT_OPEN_POOL] = {"roctracer_open_pool_expl", 1, NULL},
    [RT_CLOSE_POOL] = {"roctracer_close_pool_expl", 1, NULL},
    [RT_ENABLE_ACTIVITY] = {"roctracer_enable_domain_activity_expl", 1, NULL},
    [RT_DISABLE_ACTIVITY] = {"roctracer_disable_domain_activity", 1, NULL},
    [RT_FLUSH] = {"roctracer_flush_activity_expl", 1, NULL},
    [RT_TIMESTAMP] = {"roctracer_get_timestamp", 1, NULL},
    [RT_ENABLE_OP_CALLBACK] = {"roctracer_enable_op_callback", 0, NULL},
    [RT_DISABLE_OP_CALLBACK] = {"roctracer_disable_op_callback", 0, NULL},
    [RT_ENABLE_DOMAIN_CALLBACK] = {"roctracer_enable_domain_callback", 0, NULL},
    [RT_DISABLE_DOMAIN_CALLBACK] = {"roctracer_disable_domain_callback", 0, NULL},
    [RT_OP_STRING] = {"roctracer_op_string", 0, NULL},
    [RT_OP_CODE] = {"roctracer_op_code", 0, NULL},
    [RT_PUSH] = {"roctracer_activity_push_external_correlation_id", 0, NULL},
    [RT_POP] = {"roctracer_activity_pop_external_correlation_id", 0, NULL},
    [RT_START] = {"roctracer_start", 0, NULL},
    [RT_VERSION_MAJOR] = {"roctracer_version_major", 0, NULL},
    [RT_VERSION_MINOR] = {"roctracer_version_minor", 0, NULL},
    [RT_ERROR_STRING] = {"roctracer_error_string", 0, NULL},
    [HIP_GET_DEVICE_COUNT] = {"hipGetDeviceCount", 0, NULL},
    [HIP_DEVICE_GET_ATTRIBUTE] = {"hipDeviceGetAttribute", 0, NULL},
    [HIP_DEVICE_GET_NAME] = {"hipDeviceGetName", 0, NULL},
    [HIP_DEVICE_TOTAL_MEM] = {"hipDeviceTotalMem", 0, NULL},
    [HIP_RUNTIME_GET_VERSION] = {"hipRuntimeGetVersion", 0, NULL},
};

static const char *const sonames[] = {"libroctracer64.so", "libroctracer64.so.4", "libroctracer64.so.1",
                                      "libgalaxyhip.so.5", NULL};
static const char *const root_envs[] = {"ROCM_PATH", "DTK_ROOT", NULL};
static const char *const subdirs[] = {"lib", "lib64", "roctracer/lib", NULL};
static const char *const fallback_paths[] = {"/opt/dtk/lib/libgalaxyhip.so.5",
                                             "/opt/dtk/roctracer/lib/libroctracer64.so", NULL};
/* The HIP runtime the process may have loaded (never loaded here: that
   would start a runtime the program does not use). */
static const char *const hip_sonames[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                          "libgalaxyhip.so.5", NULL};

static const dt_library_spec library_spec = {
    .what = "libroctracer64 (or DTK's libgalaxyhip.so.5)",
    .override_env = RT_LIBRARY_ENV,
    .sonames = sonames,
    .loaded_symbol = "roctracer_open_pool_expl",
    .root_envs = root_envs,
    .default_root = "/opt/rocm",
    .subdirs = subdirs,
    .paths = fallback_paths,
    .hint = "install ROCm's roctracer (set ROCM_PATH) or Hygon's DTK (set DTK_ROOT)",
};

/* What the arguments of a HIP API call give, by operation. */
enum {
    ARGS_NONE = 0,
    ARGS_LAUNCH_DIM3,      /* grid and block, dim3 each */
    ARGS_LAUNCH_MODULE,    /* grid and block, unsigned each, then unsigned sharedMemBytes */
    ARGS_LAUNCH_GLOBAL,    /* global work size and block, then size_t sharedMemBytes */
    ARGS_FILL_INT, ARGS_FILL_U16, ARGS_FILL_U8,
};
static const struct { const char *name; uint8_t how; } captured_calls[] = {
    {"hipLaunchKernel", ARGS_LAUNCH_DIM3},
    {"hipExtLaunchKernel", ARGS_LAUNCH_DIM3},
    {"hipLaunchCooperativeKernel", ARGS_LAUNCH_DIM3},
    {"hipModuleLaunchKernel", ARGS_LAUNCH_MODULE},
    {"hipExtModuleLaunchKernel", ARGS_LAUNCH_GLOBAL},
    {"hipHccModuleLaunchKernel", ARGS_LAUNCH_GLOBAL},
    {"hipMemset", ARGS_FILL_INT},
    {"hipMemsetAsync", ARGS_FILL_INT},
    {"hipMemsetD32", ARGS_FILL_INT},
    {"hipMemsetD32Async", ARGS_FILL_INT},
    {"hipMemsetD16", ARGS_FILL_U16},
    {"hipMemsetD16Async", ARGS_FILL_U16},
    {"hipMemsetD8", ARGS_FILL_U8},
    {"hipMemsetD8Async", ARGS_FILL_U8},
};
#define CAPTURED_CALLS (sizeof captured_calls / sizeof captured_calls[0])

typedef struct args_chunk args_chunk;

/* The backend's state: the library, its names and operations, the pool,
   what is armed, the session its buffers decode into. */
static struct {
    pthread_mutex_t lock;            /* load, start, stop */
    pthread_mutex_t decode_lock;     /* the session against buffer callbacks */
    dt_library lib;
    void *sym[RT_SYM_COUNT];
    dt_symbol_spec specs[RT_SYM_COUNT];
    char version[64];
    int loaded, emulated;
    /* per library: HIP API names, and the operation ids whose arguments
       are taken (resolved once: a loaded library's ids do not change) */
    const char **api_names;
    uint32_t api_name_count;
    uint32_t captured_op[CAPTURED_CALLS];   /* UINT32_MAX: the library has none */
    uint8_t *how;                           /* by operation id: ARGS_* */
    uint32_t how_count;
    int ops_resolved;
    /* the pool */
    dt_pool_slot pool;
    roctracer_pool_t *rt_pool;
    size_t rt_buffer_size;
    uint8_t *pool_mem;                      /* what the allocator handed out */
    size_t pool_half;
    /* the flight recorder's copies of delivered buffers (its ring's) */
    dt_pool_slot flight;
    /* armed in this session */
    int ops_on, api_on, op_callbacks, domain_callback, roctx_on;
    /* read on the program's threads */
    _Atomic int link_mode;                  /* API-enter links */
    _Atomic int ext_records;                /* External ids reach roctracer's EXT_API records */
    _Atomic unsigned taking;                /* arguments taken: 1 << DT_RT_ARGS_* */
    /* decoding */
    dt_session *session;                    /* under decode_lock */
    dt_rt_decoder decoder;
    dt_rt_args_table args;
    uint64_t unkept[3];
    _Atomic uint64_t orphaned;
} rt_state = {
    .lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .decode_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    .pool = DT_POOL_SLOT_INIT,
    .flight = DT_POOL_SLOT_INIT,
};

#define SYM(T, id) ((T)rt_state.sym[id])

/* What each missing optional entry point costs, given the others; each
   cost said once. A feature that needs a pair loses both halves. */
static void set_costs(dt_symbol_spec *specs, void **sym)
{
    const char *callbacks = "no HIP API callbacks: kernels carry no grid or block and fills no value";
    if (!sym[RT_PUSH] || !sym[RT_POP]) {
        specs[sym[RT_PUSH] ? RT_POP : RT_PUSH].cost =
            "no external-correlation records: External ids come from API callbacks only";
        sym[RT_PUSH] = sym[RT_POP] = NULL; /* a push without its pop would leave ids behind */
        callbacks = "no HIP API callbacks: device activity carries no External id, kernels no grid or block "
                    "and fills no value";
    }
    if (!sym[RT_ENABLE_OP_CALLBACK] || !sym[RT_DISABLE_OP_CALLBACK])
        sym[RT_ENABLE_OP_CALLBACK] = sym[RT_DISABLE_OP_CALLBACK] = NULL;
    if (!sym[RT_ENABLE_DOMAIN_CALLBACK] || !sym[RT_DISABLE_DOMAIN_CALLBACK]) {
        /* either way of enabling callbacks will do, but only this one can
           enable ROCTX's and every HIP call's */
        specs[sym[RT_ENABLE_DOMAIN_CALLBACK] ? RT_DISABLE_DOMAIN_CALLBACK : RT_ENABLE_DOMAIN_CALLBACK].cost =
            sym[RT_ENABLE_OP_CALLBACK] ? "no ROCTX ranges, and External ids only where EXT_API records carry them"
                                       : callbacks;
        sym[RT_ENABLE_DOMAIN_CALLBACK] = sym[RT_DISABLE_DOMAIN_CALLBACK] = NULL;
    }
    if (!sym[RT_OP_CODE] && (sym[RT_ENABLE_OP_CALLBACK] || sym[RT_ENABLE_DOMAIN_CALLBACK]))
        specs[RT_OP_CODE].cost = "HIP API ids are version-specific and cannot be looked up: kernels carry no "
                                 "grid or block and fills no value";
    specs[RT_OP_STRING].cost = "HIP API names are generic (HIP_API#<id>)";
    specs[RT_VERSION_MAJOR].cost = "library version unknown";
    specs[RT_ERROR_STRING].cost = "roctracer errors are reported by number only";
    int hip = sym[HIP_GET_DEVICE_COUNT] && sym[HIP_DEVICE_GET_ATTRIBUTE] && sym[HIP_RUNTIME_GET_VERSION];
    for (int i = RT_HIP_FIRST; i < RT_SYM_COUNT; i++)
        if (!hip && !sym[i]) {
            specs[i].cost = "device properties absent (no HIP runtime entry points in the library or the process)";
            break;
        }
    if (hip) {
        specs[HIP_DEVICE_GET_NAME].cost = "device names absent";
        specs[HIP_DEVICE_TOTAL_MEM].cost = "device memory sizes absent";
    } else {
        for (int i = RT_HIP_FIRST; i < RT_SYM_COUNT; i++) sym[i] = NULL;
    }
}

/* HIP's entry points: the roctracer library's (DTK's libgalaxyhip is both),
   else a HIP runtime the process has loaded. */
static void bind_hip(void *handle, void **sym)
{
    void *hip = NULL;
    for (size_t i = 0; hip_sonames[i] && !hip; i++) hip = dlopen(hip_sonames[i], RTLD_LAZY | RTLD_NOLOAD);
    for (int i = RT_HIP_FIRST; i < RT_SYM_COUNT; i++) {
        sym[i] = dlsym(handle, symbol_specs[i].name);
        if (!sym[i] && hip) sym[i] = dlsym(hip, symbol_specs[i].name);
        if (!sym[i]) sym[i] = dlsym(RTLD_DEFAULT, symbol_specs[i].name);
    }
    if (hip) dlclose(hip); /* the extra reference only */
}

typedef struct loaded {
    dt_library lib;
    void *sym[RT_SYM_COUNT];
    dt_symbol_spec specs[RT_SYM_COUNT];
    char version[64];
    int emulated;
} loaded;

static dt_status open_library(loaded *l)
{
    memset(l, 0, sizeof *l);
    dt_status st = dt__library_open(&library_spec, &l->lib);
    if (st != DT_OK) return st;
    memcpy(l->specs, symbol_specs, sizeof l->specs);
    st = dt__library_bind(&l->lib, &library_spec, l->specs, RT_HIP_FIRST, l->sym);
    if (st != DT_OK) return st;
    bind_hip(l->lib.handle, l->sym);
    set_costs(l->specs, l->sym);
    l->emulated = dlsym(l->lib.handle, RT_EMULATOR_MARKER) != NULL;
    dt_rt_version_fn major = (dt_rt_version_fn)l->sym[RT_VERSION_MAJOR];
    dt_rt_version_fn minor = (dt_rt_version_fn)l->sym[RT_VERSION_MINOR];
    if (major) snprintf(l->version, sizeof l->version, "%" PRIu32 ".%" PRIu32, major(), minor ? minor() : 0);
    return DT_OK;
}

static void close_pool(void);

/* rt_state.lock held. */
static dt_status load(void)
{
    loaded l;
    dt_status st = open_library(&l);
    if (st != DT_OK) return st;
    if (rt_state.loaded && l.lib.handle == rt_state.lib.handle) {
        dlclose(l.lib.handle); /* the extra reference only: never unloaded */
        return DT_OK;
    }
    /* Another library than last time (tests switch variants): the pool
       belongs to the one in use, which stays loaded, no longer used. */
    close_pool();
    rt_state.lib = l.lib;
    memcpy(rt_state.sym, l.sym, sizeof rt_state.sym);
    memcpy(rt_state.specs, l.specs, sizeof rt_state.specs);
    snprintf(rt_state.version, sizeof rt_state.version, "%s", l.version);
    rt_state.emulated = l.emulated;
    /* another library: its names and ids are its own */
    dt__free(rt_state.api_names);
    rt_state.api_names = NULL;
    rt_state.api_name_count = 0;
    dt__free(rt_state.how);
    rt_state.how = NULL;
    rt_state.how_count = 0;
    rt_state.ops_resolved = 0;
    rt_state.loaded = 1;
    dt__log("roctracer: using %s (version %s)%s", rt_state.lib.path, rt_state.version[0] ? rt_state.version : "unknown",
           rt_state.emulated ? ", devtrace's emulator" : "");
    return DT_OK;
}

static dt_status failure(const char *call, int r)
{
    const char *text = NULL;
    dt_rt_error_string_fn error_string = SYM(dt_rt_error_string_fn, RT_ERROR_STRING);
    if (error_string) text = error_string();
    return dt__error(DT_ERR_VENDOR, "%s failed: %s (%d) from %s", call, text && text[0] ? text : "error", r,
                    rt_state.lib.path);
}

/* ------------------------------------------------------------------ */
/* Probe                                                               */
/* ------------------------------------------------------------------ */
static dt_status rt_probe(const dt_backend *self, dt_backend_status *st)
{
    loaded l;
    st->available = 0;
    st->library[0] = st->version[0] = st->reason[0] = '\0';
    dt_status rc = open_library(&l);
    snprintf(st->library, sizeof st->library, "%s", l.lib.path);
    if (rc != DT_OK) {
        snprintf(st->reason, sizeof st->reason, "%s", dt_last_error());
        return DT_OK;
    }
    st->available = 1;
    snprintf(st->version, sizeof st->version, "%s", l.version);
    dt__symbols_describe_missing(l.specs, RT_SYM_COUNT, l.sym, st->reason, sizeof st->reason);
    pthread_mutex_lock(&rt_state.lock);
    if (rt_state.loaded && l.lib.handle == rt_state.lib.handle) dlclose(l.lib.handle); /* the extra reference only */
    pthread_mutex_unlock(&rt_state.lock);
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* Names and the operations whose arguments are taken                  */
/* ------------------------------------------------------------------ */
/* rt_state.lock held. -1 when out of memory. */
static int resolve_ops(void)
{
    if (rt_state.ops_resolved) return 0;
    dt_rt_op_string_fn op_string = SYM(dt_rt_op_string_fn, RT_OP_STRING);
    if (op_string && !rt_state.api_names) {
        const char **names = dt__calloc(RT_API_NAME_LIMIT, sizeof *names);
        if (!names) return -1;
        for (uint32_t op = 0; op < RT_API_NAME_LIMIT; op++) names[op] = op_string(ACTIVITY_DOMAIN_HIP_API, op, 0);
        rt_state.api_names = names;
        rt_state.api_name_count = RT_API_NAME_LIMIT;
    }
    dt_rt_op_code_fn op_code = SYM(dt_rt_op_code_fn, RT_OP_CODE);
    uint32_t top = 0;
    for (size_t i = 0; i < CAPTURED_CALLS; i++) {
        uint32_t op = UINT32_MAX;
        if (!op_code || op_code(ACTIVITY_DOMAIN_HIP_API, captured_calls[i].name, &op, NULL) != ROCTRACER_STATUS_SUCCESS ||
            op >= RT_API_NAME_LIMIT)
            op = UINT32_MAX;
        rt_state.captured_op[i] = op;
        if (op != UINT32_MAX && op + 1 > top) top = op + 1;
    }
    if (top) {
        uint8_t *how = dt__calloc(top, 1);
        if (!how) return -1;
        for (size_t i = 0; i < CAPTURED_CALLS; i++)
            if (rt_state.captured_op[i] != UINT32_MAX) how[rt_state.captured_op[i]] = captured_calls[i].how;
        rt_state.how = how;
        rt_state.how_count = top;
    }
    rt_state.decoder.api_names = rt_state.api_names;
    rt_state.decoder.api_name_count = rt_state.api_name_count;
    rt_state.ops_resolved = 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Call arguments, taken on the program's threads                      */
/* ------------------------------------------------------------------ */
/* Each thread appends to chunks of its own; the decoder, under
   decode_lock, moves new entries into its table before each buffer. A
   thread counts its chunk's entries itself, so that a full chunk is never
   read again by its writer and the decoder may free it. */
#define ARGS_CHUNK 1024
struct args_chunk {
    args_chunk *next;
    _Atomic uint32_t n;
    uint32_t taken;                  /* the decoder's cursor */
    dt_rt_args e[ARGS_CHUNK];
};
static _Atomic(args_chunk *) g_chunks;       /* this session's, newest first */
static args_chunk *g_retired;                /* the last session's, freed at the next start */
static _Atomic uint64_t g_args_generation;
static _Atomic uint64_t g_unkept[3];         /* taken but not kept, by DT_RT_ARGS_* */

typedef struct args_writer {
    args_chunk *chunk;
    uint32_t used;
    uint64_t generation;
} args_writer;
static _Thread_local args_writer t_args;

__attribute__((noinline)) static args_writer *args_writer_get(void)
{
    return &t_args;
}

static void keep_args(const dt_rt_args *a)
{
    args_writer *w = args_writer_get();
    uint64_t generation = atomic_load_explicit(&g_args_generation, memory_order_acquire);
    if (!w->chunk || w->generation != generation || w->used == ARGS_CHUNK) {
        args_chunk *c = dt__malloc(sizeof *c);
        if (!c) {
            atomic_fetch_add_explicit(&g_unkept[a->what], 1, memory_order_relaxed);
            return;
        }
        atomic_init(&c->n, 0);
        c->taken = 0;
        args_chunk *old = atomic_load(&g_chunks);
        do { c->next = old; } while (!atomic_compare_exchange_weak(&g_chunks, &old, c));
        w->chunk = c;
        w->used = 0;
        w->generation = generation;
    }
    w->chunk->e[w->used++] = *a;
    atomic_store_explicit(&w->chunk->n, w->used, memory_order_release);
}

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void take_args(uint8_t how, uint64_t correlation, const uint8_t *args)
{
    dt_rt_args a;
    memset(&a, 0, sizeof a);
    a.correlation = correlation;
    if (how <= ARGS_LAUNCH_GLOBAL) {
        a.what = DT_RT_ARGS_LAUNCH;
        for (int i = 0; i < 3; i++) {
            uint32_t block = u32_at(args + DT_RT_HIP_LAUNCH_BLOCK + 4 * i);
            a.grid[i] = u32_at(args + DT_RT_HIP_LAUNCH_GRID + 4 * i);
            /* the global work size: the grid in work items */
            if (how == ARGS_LAUNCH_GLOBAL) a.grid[i] = block ? a.grid[i] / block : 0;
            if (block > UINT16_MAX) return; /* no launch HIP accepts: not a configuration */
            a.block[i] = (uint16_t)block;
        }
        if (how != ARGS_LAUNCH_DIM3) a.dynamic_shared = u32_at(args + DT_RT_HIP_MODULE_LAUNCH_SHARED);
    } else {
        a.what = DT_RT_ARGS_FILL;
        const uint8_t *v = args + DT_RT_HIP_MEMSET_VALUE;
        a.value = how == ARGS_FILL_U8 ? v[0] : how == ARGS_FILL_U16 ? (uint32_t)(v[0] | v[1] << 8) : u32_at(v);
    }
    keep_args(&a);
}

/* decode_lock held: the entries taken since the last buffer into the
   decoder's table; full chunks it has read are freed. */
static void drain_args(void)
{
    args_chunk *head = atomic_load_explicit(&g_chunks, memory_order_acquire);
    for (args_chunk *prev = NULL, *c = head, *next; c; c = next) {
        next = c->next;
        uint32_t n = atomic_load_explicit(&c->n, memory_order_acquire);
        for (; c->taken < n; c->taken++)
            if (dt__rt_args_put(&rt_state.args, &c->e[c->taken]) != 0) rt_state.unkept[c->e[c->taken].what]++;
        /* only the writers change the head: a chunk behind it may go */
        if (prev && n == ARGS_CHUNK) {
            prev->next = next;
            dt__free(c);
            continue;
        }
        prev = c;
    }
    for (int i = 1; i < 3; i++) rt_state.unkept[i] += atomic_exchange_explicit(&g_unkept[i], 0, memory_order_relaxed);
}

static void free_chunks(args_chunk *c)
{
    while (c) {
        args_chunk *next = c->next;
        dt__free(c);
        c = next;
    }
}

/* ------------------------------------------------------------------ */
/* Callbacks, on the program's threads                                 */
/* ------------------------------------------------------------------ */
static void hip_api_callback(uint32_t domain, uint32_t cid, const void *data, void *arg)
{
    (void)arg;
    if (domain != ACTIVITY_DOMAIN_HIP_API || !data) return;
    const uint8_t *d = data;
    if (u32_at(d + DT_RT_HIP_PHASE_OFFSET) != ACTIVITY_API_PHASE_ENTER) return;
    uint8_t how = cid < rt_state.how_count ? rt_state.how[cid] : ARGS_NONE;
    if (__builtin_expect(dt__g_fork_unusable, 0)) {
        if (how != ARGS_NONE && how <= ARGS_LAUNCH_GLOBAL) dt__core_fork_launch_lost();
        return;
    }
    uint64_t correlation;
    memcpy(&correlation, d + DT_RT_HIP_CORRELATION_OFFSET, sizeof correlation);
    if (atomic_load_explicit(&rt_state.link_mode, memory_order_relaxed)) dt__corr_link_current(correlation);
    unsigned what = how <= ARGS_LAUNCH_GLOBAL ? DT_RT_ARGS_LAUNCH : DT_RT_ARGS_FILL;
    if (how && (atomic_load_explicit(&rt_state.taking, memory_order_relaxed) & (1u << what)))
        take_args(how, correlation, d + DT_RT_HIP_ARGS_OFFSET);
}

/* ------------------------------------------------------------------ */
/* The pool                                                            */
/* ------------------------------------------------------------------ */
/* roctracer's allocator: the core's pool holds one buffer the size of
   roctracer's two. roctracer asks once when the pool opens and frees when
   it closes; it never resizes. */
static void pool_allocate(char **ptr, size_t size, void *arg)
{
    (void)arg;
    if (!ptr) return;
    if (*ptr == NULL) {
        size_t have = 0;
        uint8_t *b = dt__pool_slot_get(&rt_state.pool, &have);
        if (b && have < size) {
            dt__pool_slot_put(&rt_state.pool, b);
            b = NULL;
        }
        if (b) {
            rt_state.pool_mem = b;
            rt_state.pool_half = size / 2;
        }
        *ptr = (char *)b;
    } else if (size == 0) {
        dt__pool_slot_put(&rt_state.pool, (uint8_t *)*ptr);
        if ((uint8_t *)*ptr == rt_state.pool_mem) rt_state.pool_mem = NULL;
        *ptr = NULL;
    } else {
        dt__log("roctracer asked to resize its pool to %zu bytes, which devtrace does not do", size);
    }
}

/* The flight recorder's ring holds copies (dt__rt_copy: the records and
   their kernel names): roctracer reuses a half of its pool, kernel names
   included, once the buffer callback returns. A buffer the ring recycles
   for the delivering thread is decoded there, decode_lock held already
   (it is recursive). */
static void ring_decode(void *ctx, dt_session *into, uint8_t *buf, size_t valid)
{
    (void)ctx;
    pthread_mutex_lock(&rt_state.decode_lock);
    dt__rt_decode_copy(&rt_state.decoder, into, buf, valid);
    pthread_mutex_unlock(&rt_state.decode_lock);
}

/* decode_lock held: a delivered buffer copied into the ring, undecoded
   (one roctracer cannot have written is decoded now, which counts it). */
static void keep_copy(dt_session *s, const uint8_t *begin, const uint8_t *end)
{
    if (!dt__rt_half_end(&rt_state.decoder, begin) || end < begin) {
        dt__rt_decode(&rt_state.decoder, s, begin, end);
        return;
    }
    size_t have = 0, size = 0;
    uint8_t *buf = dt__pool_slot_get(&rt_state.flight, &have);
    if (buf) size = dt__rt_copy(buf, have, &rt_state.decoder, begin, end);
    if (size && dt__sink_ring_push(s, buf, size)) return;
    if (buf) dt__pool_slot_put(&rt_state.flight, buf);
    dt__loss_add(s, DT_LOSS_NO_BUFFER, (uint64_t)(end - begin) / DT_RT_RECORD_SIZE);
}

/* rt_state.lock held, the pool open: the flight recorder's pool of
   copies, each of a half of roctracer's pool, lent through s's ring. */
static dt_status flight_begin(dt_session *s)
{
    if (!dt__sink_config(s)->flight_recorder_bytes) return DT_OK;
    if (!rt_state.decoder.pool)
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "roctracer allocated its pool without devtrace's allocator: "
                        "the kernel names of its buffers cannot be copied, so it has no flight recorder here; "
                        "record without one");
    if (dt__pool_slot_configure(&rt_state.flight, dt__flight_pool_buffers(s), DT_RT_COPY_HEADER + rt_state.decoder.half,
                               0) != 0)
        return dt__error(DT_ERR_NO_MEMORY, "roctracer: out of memory for the flight recorder's %u buffers",
                        dt__flight_pool_buffers(s));
    dt_status st = dt__core_flight_begin(s, &rt_state.flight, ring_decode, NULL);
    if (st != DT_OK) dt__pool_slot_release(&rt_state.flight);
    return st;
}

/* The ring lends no more (s's stop, or a start that failed). */
static void flight_free(dt_session *s)
{
    dt__core_flight_free(s);
    dt__pool_slot_release(&rt_state.flight);
}

static void buffer_callback(const char *begin, const char *end, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rt_state.decode_lock);
    dt_session *s = rt_state.session;
    if (s) {
        drain_args();
        if (dt__sink_has_ring(s)) keep_copy(s, (const uint8_t *)begin, (const uint8_t *)end);
        else dt__rt_decode(&rt_state.decoder, s, (const uint8_t *)begin, (const uint8_t *)end);
    } else if (begin != end) {
        atomic_fetch_add_explicit(&rt_state.orphaned, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&rt_state.decode_lock);
}

static void attach(dt_session *s)
{
    pthread_mutex_lock(&rt_state.decode_lock);
    rt_state.session = s;
    pthread_mutex_unlock(&rt_state.decode_lock);
}

/* rt_state.lock held. */
static void close_pool(void)
{
    if (!rt_state.rt_pool) return;
    SYM(dt_rt_pool_fn, RT_CLOSE_POOL)(rt_state.rt_pool);
    rt_state.rt_pool = NULL;
    rt_state.decoder.pool = NULL;
    rt_state.decoder.half = 0;
    uint32_t held = dt__pool_slot_release(&rt_state.pool);
    if (held) dt__log("roctracer kept its pool's memory after closing it");
}

/* rt_state.lock held. A pool of two buffers of buffer_size bytes, kept from one
   session to the next of the same size. */
static dt_status open_pool(size_t buffer_size)
{
    if (rt_state.rt_pool && rt_state.rt_buffer_size == buffer_size) return DT_OK;
    close_pool();
    /* roctracer asks for its two buffers at once; some releases make each
       at least two records */
    size_t half = buffer_size > 2 * DT_RT_RECORD_SIZE ? buffer_size : 2 * DT_RT_RECORD_SIZE;
    if (dt__pool_slot_configure(&rt_state.pool, 1, 2 * half, 0) != 0)
        return dt__error(DT_ERR_NO_MEMORY, "roctracer: cannot preallocate the pool of 2 buffers of %zu bytes",
                        buffer_size);
    roctracer_properties_t props;
    memset(&props, 0, sizeof props);
    props.buffer_size = buffer_size;
    props.alloc_fun = pool_allocate;
    props.buffer_callback_fun = buffer_callback;
    roctracer_pool_t *pool = NULL;
    rt_state.pool_mem = NULL;
    int r = SYM(dt_rt_open_pool_fn, RT_OPEN_POOL)(&props, &pool);
    if (r != ROCTRACER_STATUS_SUCCESS || !pool) {
        dt_status st = failure("roctracer_open_pool_expl", r);
        dt__pool_slot_release(&rt_state.pool);
        return st;
    }
    rt_state.rt_pool = pool;
    rt_state.rt_buffer_size = buffer_size;
    /* a library that allocated otherwise: names cannot be bounds-checked */
    rt_state.decoder.pool = rt_state.pool_mem;
    rt_state.decoder.half = rt_state.pool_mem ? rt_state.pool_half : 0;
    return DT_OK;
}

/* ------------------------------------------------------------------ */
/* Arming                                                              */
/* ------------------------------------------------------------------ */
/* rt_state.lock held: turn off what this session turned on. */
static void disarm(void)
{
    if (rt_state.ops_on) SYM(dt_rt_domain_fn, RT_DISABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_OPS);
    if (rt_state.api_on) SYM(dt_rt_domain_fn, RT_DISABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_API);
    if (rt_state.op_callbacks)
        for (size_t i = 0; i < CAPTURED_CALLS; i++)
            if (rt_state.captured_op[i] != UINT32_MAX)
                SYM(dt_rt_op_fn, RT_DISABLE_OP_CALLBACK)(ACTIVITY_DOMAIN_HIP_API, rt_state.captured_op[i]);
    if (rt_state.domain_callback) SYM(dt_rt_domain_fn, RT_DISABLE_DOMAIN_CALLBACK)(ACTIVITY_DOMAIN_HIP_API);
    if (rt_state.roctx_on) SYM(dt_rt_domain_fn, RT_DISABLE_DOMAIN_CALLBACK)(ACTIVITY_DOMAIN_ROCTX);
    rt_state.ops_on = rt_state.api_on = rt_state.op_callbacks = rt_state.domain_callback = rt_state.roctx_on = 0;
    atomic_store(&rt_state.link_mode, 0);
    atomic_store(&rt_state.ext_records, 0);
    atomic_store(&rt_state.taking, 0);
}

/* rt_state.lock held: the HIP API callback on every call, so that API-enter links
   attribute device work. */
static int enable_domain_callback(void)
{
    if (rt_state.domain_callback) return 1;
    dt_rt_domain_callback_fn enable = SYM(dt_rt_domain_callback_fn, RT_ENABLE_DOMAIN_CALLBACK);
    if (!enable || enable(ACTIVITY_DOMAIN_HIP_API, hip_api_callback, NULL) != ROCTRACER_STATUS_SUCCESS) return 0;
    rt_state.domain_callback = 1;
    return 1;
}

/* rt_state.lock held: callbacks for the calls whose arguments are taken. */
static void enable_op_callbacks(dt_session *s, uint32_t capture)
{
    int want = 0;
    for (size_t i = 0; i < CAPTURED_CALLS; i++) {
        int launch = captured_calls[i].how <= ARGS_LAUNCH_GLOBAL;
        if (rt_state.captured_op[i] != UINT32_MAX && (capture & (launch ? DT_CAPTURE_KERNEL : DT_CAPTURE_MEMSET))) want = 1;
    }
    if (!want) {
        if ((capture & (DT_CAPTURE_KERNEL | DT_CAPTURE_MEMSET)) && rt_state.loaded && SYM(void *, RT_ENABLE_DOMAIN_CALLBACK))
            dt__core_note(s, "launch_arguments", "the HIP API ids of launches and fills could not be looked up: "
                            "kernels carry no grid or block, fills no value");
        return;
    }
    if (rt_state.domain_callback) return; /* every call reaches the callback already */
    dt_rt_op_callback_fn enable = SYM(dt_rt_op_callback_fn, RT_ENABLE_OP_CALLBACK);
    if (enable) {
        for (size_t i = 0; i < CAPTURED_CALLS; i++)
            if (rt_state.captured_op[i] != UINT32_MAX)
                enable(ACTIVITY_DOMAIN_HIP_API, rt_state.captured_op[i], hip_api_callback, NULL);
        rt_state.op_callbacks = 1;
    } else if (!enable_domain_callback()) {
        dt__core_note(s, "launch_arguments", "no HIP API callback could be enabled: kernels carry no grid or "
                        "block, fills no value");
    }
}

static dt_status rt_start(const dt_backend *self, dt_session *s)
{
    pthread_mutex_lock(&rt_state.lock);
    dt_status st = load();
    if (st != DT_OK) goto out;
    size_t buffer_size = dt__sink_config(s)->buffer_size;
    if (buffer_size < 1024) {
        st = dt__error(DT_ERR_INVALID_ARGUMENT, "roctracer needs activity buffers of at least 1024 bytes "
                      "(buffer_size %zu)", buffer_size);
        goto out;
    }
    if (resolve_ops() != 0) {
        st = dt__error(DT_ERR_NO_MEMORY, "roctracer: out of memory for the table of HIP API names");
        goto out;
    }
    st = open_pool(buffer_size);
    if (st != DT_OK) goto out;
    /* Records a previous session left in the pool are not this one's. */
    SYM(dt_rt_pool_fn, RT_FLUSH)(rt_state.rt_pool);
    st = flight_begin(s);
    if (st != DT_OK) goto out;
    atomic_store(&rt_state.orphaned, 0);
    free_chunks(g_retired);
    g_retired = NULL;
    dt__rt_roctx_reset();
    atomic_fetch_add(&g_args_generation, 1);
    for (int i = 0; i < 3; i++) {
        rt_state.unkept[i] = 0;
        atomic_store(&g_unkept[i], 0);
    }
    rt_state.decoder.args = &rt_state.args;
    rt_state.decoder.args_unkept = rt_state.unkept;
    /* Every buffer from here belongs to this session, before anything is
       enabled, so that no record falls between the two. */
    attach(s);
    uint32_t capture = dt__sink_capture(s);
    int r;
    if (capture & (DT_CAPTURE_KERNEL | DT_CAPTURE_MEMCPY | DT_CAPTURE_MEMSET | DT_CAPTURE_SYNC)) {
        r = SYM(dt_rt_domain_activity_fn, RT_ENABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_OPS, rt_state.rt_pool);
        if (r != ROCTRACER_STATUS_SUCCESS) {
            st = failure("roctracer_enable_domain_activity_expl(HIP_OPS)", r);
            goto fail;
        }
        rt_state.ops_on = 1;
    }
    int have_push = rt_state.sym[RT_PUSH] != NULL;
    if (capture & DT_CAPTURE_RUNTIME) {
        r = SYM(dt_rt_domain_activity_fn, RT_ENABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_API, rt_state.rt_pool);
        if (r == ROCTRACER_STATUS_SUCCESS) rt_state.api_on = 1;
        else dt__core_note(s, "kinds", "HIP API calls not recorded: roctracer_enable_domain_activity_expl(HIP_API) "
                             "returned %d", r);
    }
    /* External ids come in EXT_API records, which roctracer writes only with
       HIP API activity; without them, through API-enter links. */
    if (!rt_state.api_on || !have_push) {
        if (enable_domain_callback()) atomic_store(&rt_state.link_mode, 1);
        else dt__core_note(s, "callbacks", "no HIP API callback could be enabled: device activity carries no "
                             "External id");
    }
    atomic_store(&rt_state.ext_records, rt_state.api_on && have_push);
    atomic_store(&rt_state.taking, (capture & DT_CAPTURE_KERNEL ? 1u << DT_RT_ARGS_LAUNCH : 0) |
                                (capture & DT_CAPTURE_MEMSET ? 1u << DT_RT_ARGS_FILL : 0));
    enable_op_callbacks(s, capture);
    dt_rt_domain_callback_fn enable = SYM(dt_rt_domain_callback_fn, RT_ENABLE_DOMAIN_CALLBACK);
    if (enable && enable(ACTIVITY_DOMAIN_ROCTX, dt__rt_roctx_callback, NULL) == ROCTRACER_STATUS_SUCCESS) rt_state.roctx_on = 1;
    else if (enable) dt__core_note(s, "roctx", "ROCTX callbacks could not be enabled: ROCTX ranges are not recorded");
    /* a tracer paused by roctracer_stop (Kineto stops it between its own
       sessions) would deliver nothing */
    if (rt_state.sym[RT_START]) SYM(dt_rt_void_fn, RT_START)();
    dt__core_note(s, "vendor_clock", "roctracer_get_timestamp: boot-relative ns (HSA system clock)");
    dt__core_note(s, "kernel_resources", "roctracer reports no registers or shared memory per kernel; grid and "
                    "block come from the HIP launch call's arguments");
    dt__symbols_note_missing(s, rt_state.specs, RT_SYM_COUNT, rt_state.sym);
    dt__core_set_library(s, rt_state.lib.path, rt_state.version);
    st = DT_OK;
    goto out;
fail:
    disarm();
    attach(NULL);
    flight_free(s);
out:
    pthread_mutex_unlock(&rt_state.lock);
    return st;
}

/* In a child forked without exec: the pool's consumer thread is not there,
   so no buffer would come back. Records are turned off before the child
   fills the pool (the callbacks stay on: they count the child's launches);
   nothing here waits for the pool. */
static void rt_fork_child(const dt_backend *self)
{
    /* their holders may be threads the child does not have (the consumer) */
    rt_state.lock = (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    rt_state.decode_lock = (pthread_mutex_t)PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    if (rt_state.ops_on) SYM(dt_rt_domain_fn, RT_DISABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_OPS);
    if (rt_state.api_on) SYM(dt_rt_domain_fn, RT_DISABLE_ACTIVITY)(ACTIVITY_DOMAIN_HIP_API);
    rt_state.ops_on = rt_state.api_on = 0;
    atomic_store(&rt_state.ext_records, 0);
    atomic_store(&rt_state.taking, 0);
}

/* rt_state.lock held: the devices' properties, from HIP. */
static void read_devices(dt_session *s)
{
    dt_rt_hip hip = {
        .runtime_get_version = SYM(dt_hip_int_fn, HIP_RUNTIME_GET_VERSION),
        .get_device_count = SYM(dt_hip_int_fn, HIP_GET_DEVICE_COUNT),
        .device_get_name = SYM(dt_hip_name_fn, HIP_DEVICE_GET_NAME),
        .device_total_mem = SYM(dt_hip_total_mem_fn, HIP_DEVICE_TOTAL_MEM),
        .device_get_attribute = SYM(dt_hip_attribute_fn, HIP_DEVICE_GET_ATTRIBUTE),
    };
    dt__rt_read_devices(s, &hip);
}

static dt_status rt_flush(const dt_backend *self, dt_session *s)
{
    if (!rt_state.rt_pool) return DT_OK;
    /* a flight recorder's dump describes the devices as the stop does
       (once: HIP's answers do not change) */
    if (s && dt__sink_has_ring(s) && !dt__sink_has_device(s, 0)) {
        pthread_mutex_lock(&rt_state.lock);
        read_devices(s);
        pthread_mutex_unlock(&rt_state.lock);
    }
    /* the buffer callback may run on this thread: no lock is held */
    int r = SYM(dt_rt_pool_fn, RT_FLUSH)(rt_state.rt_pool);
    return r == ROCTRACER_STATUS_SUCCESS ? DT_OK : failure("roctracer_flush_activity_expl", r);
}

static dt_status rt_stop(const dt_backend *self, dt_session *s)
{
    pthread_mutex_lock(&rt_state.lock);
    disarm();
    pthread_mutex_unlock(&rt_state.lock);
    /* Records made before the domains were disabled are still in the pool:
       deliver them to this session (the callback may run here). */
    int r = rt_state.rt_pool ? SYM(dt_rt_pool_fn, RT_FLUSH)(rt_state.rt_pool) : ROCTRACER_STATUS_SUCCESS;
    attach(NULL);
    /* the flight recorder's ring, now that roctracer has delivered all
       (decoded with the arguments still waiting for their records; a dump
       whose flush waits for rt_state.lock ends first) */
    dt__core_flight_end(s);
    dt__pool_slot_release(&rt_state.flight);
    pthread_mutex_lock(&rt_state.lock);
    pthread_mutex_lock(&rt_state.decode_lock);
    /* roctracer writes a HIP_OPS record when the work completes, into a
       pool that never drops: a launch or fill whose arguments still wait
       for their record had work running at stop (or, inferred: a call HIP
       refused, which launched nothing) */
    drain_args();
    uint64_t running = rt_state.args.count;
    if (running) dt__loss_add(s, DT_LOSS_UNFINISHED, running);
    uint64_t evicted = rt_state.args.evicted;
    dt__rt_args_clear(&rt_state.args);
    uint64_t unkept = rt_state.unkept[DT_RT_ARGS_LAUNCH] + rt_state.unkept[DT_RT_ARGS_FILL];
    rt_state.decoder.args = NULL;
    rt_state.decoder.args_unkept = NULL;
    pthread_mutex_unlock(&rt_state.decode_lock);
    /* callbacks may still be appending: the chunks are freed at the next start */
    g_retired = atomic_exchange(&g_chunks, NULL);
    if (unkept)
        dt__core_note(s, "launch_arguments", "out of memory: the arguments of %" PRIu64 " launches or fills were "
                        "not kept, and as many kernels or fills were not recorded", unkept);
    if (evicted)
        dt__core_note(s, "launch_arguments", "%" PRIu64 " launches or fills waited for their record longer than "
                        "%zu later calls: their arguments were dropped, and their records carry no grid, block "
                        "or value", evicted, DT_RT_ARGS_MAX);
    uint64_t orphaned = atomic_load(&rt_state.orphaned);
    if (orphaned)
        dt__core_note(s, "orphaned_buffers", "%" PRIu64 " buffers completed while no session took them", orphaned);
    /* HIP calls made now, with the callbacks off, produce no records */
    read_devices(s);
    pthread_mutex_unlock(&rt_state.lock);
    return r == ROCTRACER_STATUS_SUCCESS ? DT_OK : failure("roctracer_flush_activity_expl", r);
}

static int rt_clock(const dt_backend *self, uint64_t *ns)
{
    dt_rt_timestamp_fn get = SYM(dt_rt_timestamp_fn, RT_TIMESTAMP);
    roctracer_timestamp_t t = 0;
    if (!get || get(&t) != ROCTRACER_STATUS_SUCCESS) return -1;
    *ns = t;
    return 0;
}

/* ------------------------------------------------------------------ */
/* External correlation, on the program's threads                      */
/* ------------------------------------------------------------------ */
static dt_status rt_push(const dt_backend *self, uint64_t id)
{
    dt_rt_push_fn push = SYM(dt_rt_push_fn, RT_PUSH);
    /* without EXT_API records roctracer's stack reaches nothing: the
       API-enter links attribute instead */
    if (!push || !atomic_load_explicit(&rt_state.ext_records, memory_order_relaxed)) return DT_ERR_BACKEND_UNAVAILABLE;
    return push(id) == ROCTRACER_STATUS_SUCCESS ? DT_OK : DT_ERR_VENDOR;
}

static dt_status rt_pop(const dt_backend *self)
{
    dt_rt_pop_fn pop = SYM(dt_rt_pop_fn, RT_POP);
    if (!pop) return DT_ERR_BACKEND_UNAVAILABLE;
    activity_correlation_id_t last = 0;
    return pop(&last) == ROCTRACER_STATUS_SUCCESS ? DT_OK : DT_ERR_VENDOR;
}

static dt_status rt_attribute_by_api_enter(const dt_backend *self)
{
    if (atomic_load_explicit(&rt_state.link_mode, memory_order_relaxed)) return DT_OK;
    pthread_mutex_lock(&rt_state.lock);
    int ok = rt_state.loaded && enable_domain_callback();
    if (ok) atomic_store(&rt_state.link_mode, 1);
    pthread_mutex_unlock(&rt_state.lock);
    return ok ? DT_OK : DT_ERR_BACKEND_UNAVAILABLE;
}

const dt_backend dt__backend_roctracer = {
    .name = "roctracer",
    .vendor = "AMD ROCm / Hygon DCU (roctracer)",
    .api_category = "privateuse1",
    .library_env = RT_LIBRARY_ENV,
    /* roctracer's producers wait for the pool's consumer rather than drop;
       the consumer is a thread of roctracer's, absent in a forked child */
    .caps = DT_BACKEND_LOSSLESS_BUFFERS | DT_BACKEND_NO_FORK_CHILD | DT_BACKEND_FLIGHT_RECORDER,
    .probe = rt_probe,
    .start = rt_start,
    .flush = rt_flush,
    .stop = rt_stop,
    .clock = rt_clock,
    .push_external = rt_push,
    .pop_external = rt_pop,
    .attribute_by_api_enter = rt_attribute_by_api_enter,
    .fork_child = rt_fork_child,
    .lacks = DT_BACKEND_LACKS_KERNEL_RESOURCES | DT_BACKEND_LACKS_SEPARATE_COPY_FILL,
};

/*
 * The library's life: the core's state, loading (emu_init and the
 * environment it reads), fork, the emulated driver's initialisation (which
 * loads the injection library) and the vendor runtime's teardown at exit.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "faults.h"
#include "lifecycle.h"

struct core_state core_state = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .deliver_lock = PTHREAD_MUTEX_INITIALIZER,
    .worker_cond = PTHREAD_COND_INITIALIZER,
    .clock_scale = 1.0,
    .device_count = EMU_DEFAULT_DEVICES,
};

/* The emulated driver: initialised once, by the first API call (or, with
   DEVTRACE_EMU_INIT_ON_ARM=1, the first arming call), on that thread; it
   loads the injection library named by the vendor's variable and calls
   its InitializeInjection, as CUDA does, while initialising. */
_Atomic int core_driver_state;
static pthread_mutex_t g_driver_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_driver_cond = PTHREAD_COND_INITIALIZER;
CORE_TLS int core_initialising_driver;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* lifecycle.h */
int core_forked_unusable;
_Atomic int core_torn_down;

/* fork(): the child must not inherit a lock held by another thread, nor
   believe it has a worker thread (joining it at exit would never return). */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&core_state.deliver_lock);
    pthread_mutex_lock(&core_state.lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&core_state.lock);
    pthread_mutex_unlock(&core_state.deliver_lock);
}

static void atfork_child(void)
{
    core_ids_forked(); /* the forking thread is a new thread in the child */
    if (emu_vendor_impl.fork_child_unusable && atomic_load(&core_driver_state) == CORE_DRIVER_UP)
        core_forked_unusable = 1;
    core_state.worker_started = 0;
    core_state.worker_stop = 0;
    pthread_mutex_unlock(&core_state.lock);
    pthread_mutex_unlock(&core_state.deliver_lock);
    /* The parent's worker was waiting on the condition variable when the
       process forked; the child's copy still counts that waiter, and a
       broadcast would wait for it forever. Start the child with a new one. */
    pthread_cond_init(&core_state.worker_cond, NULL);
}

static void init_once(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    core_clock_init();
    pthread_mutex_lock(&core_state.lock);
    const char *v = getenv("DEVTRACE_EMU_DEVICES");
    if (v && *v) {
        long n = strtol(v, NULL, 10);
        if (n >= 1 && n <= EMU_MAX_DEVICES)
            core_state.device_count = (int)n;
    }
    v = getenv("DEVTRACE_EMU_FLUSH_PERIOD_MS");
    if (v && *v) {
        long n = strtol(v, NULL, 10);
        if (n > 0 && n < 3600000)
            core_state.flush_period_ms = (uint32_t)n;
    }
    v = getenv("DEVTRACE_EMU_FLUSH_PERIOD_FIXED");
    core_state.flush_period_fixed = v && strcmp(v, "1") == 0;
    core_state.tid_type = emu_vendor_impl.default_thread_id_type;
    v = getenv("DEVTRACE_EMU_FAULTS");
    if (v && *v)
        (void)core_parse_faults_locked(v);
    pthread_mutex_unlock(&core_state.lock);
}

EMU_API int emu_init(void)
{
    pthread_once(&g_once, init_once);
    return EMU_OK;
}

EMU_API const char *emu_personality(void)
{
    return emu_vendor_impl.name;
}

EMU_API const char *emu_preload(void)
{
    return emu_vendor_impl.preload;
}

/* The vendor runtime's teardown at exit (emu_vendor.runtime_teardown). */
static void runtime_teardown(void)
{
    pthread_mutex_lock(&core_state.lock);
    uint64_t lost = core_state.pending.n + core_state.held.n;
    for (int ln = 0; ln < EMU_LANES; ln++) lost += core_state.lanes[ln].records;
    core_state.stats.records_lost_at_teardown += lost;
    atomic_store(&core_torn_down, 1);
    pthread_mutex_unlock(&core_state.lock);
}

int emu_core_driver_initialised(void)
{
    return atomic_load(&core_driver_state) == CORE_DRIVER_UP;
}

void emu_core_driver_init(void)
{
    if (atomic_load_explicit(&core_driver_state, memory_order_acquire) == CORE_DRIVER_UP || core_initialising_driver)
        return;
    pthread_mutex_lock(&g_driver_lock);
    while (atomic_load(&core_driver_state) == CORE_DRIVER_INITIALISING)
        pthread_cond_wait(&g_driver_cond, &g_driver_lock);
    if (atomic_load(&core_driver_state) == CORE_DRIVER_UP) {
        pthread_mutex_unlock(&g_driver_lock);
        return;
    }
    atomic_store(&core_driver_state, CORE_DRIVER_INITIALISING);
    pthread_mutex_unlock(&g_driver_lock);
    /* This thread initialises; a call it makes meanwhile (the injection
       library arming the vendor interface) does not wait for itself. */
    core_initialising_driver = 1;
    if (emu_vendor_impl.runtime_teardown)
        atexit(runtime_teardown);
    const char *path = emu_vendor_impl.injection_env ? getenv(emu_vendor_impl.injection_env) : NULL;
    if (path && *path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
        if (init) {
            pthread_mutex_lock(&core_state.lock);
            core_state.stats.injection_calls++;
            pthread_mutex_unlock(&core_state.lock);
            init();
        }
    }
    core_initialising_driver = 0;
    pthread_mutex_lock(&g_driver_lock);
    atomic_store(&core_driver_state, CORE_DRIVER_UP);
    pthread_cond_broadcast(&g_driver_cond);
    pthread_mutex_unlock(&g_driver_lock);
}

/*
 * rocprofiler-sdk registration: tools found when the emulated runtime
 * initializes (or a tool forces it), each configured then initialized; the
 * SDK's finalization at exit.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "sdk.h"

static void client_finalize(rsdk_client_id id)
{
    pthread_mutex_lock(&sdk_state.lock);
    client *c = id.handle < (uint32_t)sdk_state.client_count ? &sdk_state.clients[id.handle] : NULL;
    int run = c && c->configured && !c->finalized;
    if (run) c->finalized = 1;
    pthread_mutex_unlock(&sdk_state.lock);
    if (run && c->result.finalize) c->result.finalize(c->result.tool_data);
}

static void sdk_finalize(void)
{
    pthread_mutex_lock(&sdk_state.lock);
    if (sdk_state.fini_status) {
        pthread_mutex_unlock(&sdk_state.lock);
        return;
    }
    sdk_state.fini_status = -1;
    pthread_mutex_unlock(&sdk_state.lock);
    /* every buffer is flushed before the tools hear of it */
    emu_core_flush_all(0);
    for (int i = 0; i < sdk_state.client_count; i++) client_finalize(sdk_state.clients[i].id);
    pthread_mutex_lock(&sdk_state.lock);
    for (int c = 0; c < MAX_CONTEXTS; c++) sdk_state.contexts[c].active = 0;
    sdk_apply_services();
    sdk_state.fini_status = 1;
    pthread_mutex_unlock(&sdk_state.lock);
}

/* sdk_state.lock held. */
static int add_client(rsdk_configure_fn fn)
{
    if (!fn || sdk_state.client_count == MAX_CLIENTS) return -1;
    for (int i = 0; i < sdk_state.client_count; i++)
        if (sdk_state.clients[i].configure == fn) return -1;
    client *c = &sdk_state.clients[sdk_state.client_count];
    memset(c, 0, sizeof *c);
    c->configure = fn;
    c->id.handle = (uint32_t)sdk_state.client_count;
    return sdk_state.client_count++;
}

typedef struct scan {
    const char *self;
    rsdk_configure_fn found[MAX_CLIENTS];
    int n;
} scan;

static int scan_library(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    scan *s = data;
    if (!info->dlpi_name || !info->dlpi_name[0] || s->n == MAX_CLIENTS) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    void *sym = dlsym(h, "rocprofiler_configure");
    if (sym) *(void **)&s->found[s->n++] = sym;
    dlclose(h);
    return 0;
}

/* Configure, then initialize, every client from `first` on: without the
   lock (tools call back in, and may start recording in their library's
   constructor). */
static void run_clients(int first, int late)
{
    pthread_mutex_lock(&sdk_state.lock);
    int last = sdk_state.client_count;
    sdk_state.late_configuring = late;
    pthread_mutex_unlock(&sdk_state.lock);
    for (int i = first; i < last; i++) {
        client *c = &sdk_state.clients[i];
        rsdk_tool_configure_result *r = c->configure(sdk_version(), sdk_state.version_text, (uint32_t)i, &c->id);
        if (r) {
            c->result = *r;
            c->configured = 1;
        }
    }
    for (int i = first; i < last; i++) {
        client *c = &sdk_state.clients[i];
        if (!c->configured || !c->result.initialize) continue;
        pthread_mutex_lock(&sdk_state.lock);
        sdk_state.current_client = i;
        pthread_mutex_unlock(&sdk_state.lock);
        if (c->result.initialize(client_finalize, c->result.tool_data) == 0) continue;
        /* a tool whose initialize fails loses its contexts */
        pthread_mutex_lock(&sdk_state.lock);
        for (int k = 0; k < MAX_CONTEXTS; k++)
            if (sdk_state.contexts[k].valid && sdk_state.contexts[k].owner == i)
                sdk_state.contexts[k].valid = sdk_state.contexts[k].active = 0;
        c->configured = 0;
        sdk_apply_services();
        pthread_mutex_unlock(&sdk_state.lock);
    }
    pthread_mutex_lock(&sdk_state.lock);
    sdk_state.late_configuring = 0;
    pthread_mutex_unlock(&sdk_state.lock);
}

/* Find the tools and run them; init_status goes 0 -> -1 -> 1. */
static void sdk_initialize(void)
{
    pthread_mutex_lock(&sdk_state.lock);
    if (sdk_state.init_status != 0) {
        pthread_mutex_unlock(&sdk_state.lock);
        return;
    }
    sdk_state.init_status = -1;
    atexit(sdk_finalize);
    if (sdk_state.forced) add_client(sdk_state.forced);
    void *visible = dlsym(RTLD_DEFAULT, "rocprofiler_configure");
    if (visible) add_client((rsdk_configure_fn)visible);
    scan s = {0};
    dl_iterate_phdr(scan_library, &s);
    for (int i = 0; i < s.n; i++) add_client(s.found[i]);
    pthread_mutex_unlock(&sdk_state.lock);
    /* ROCP_TOOL_LIBRARIES: loaded now (their constructors run inside) */
    const char *libs = getenv("ROCP_TOOL_LIBRARIES");
    if (libs && *libs) {
        char *copy = strdup(libs), *save = NULL;
        for (char *lib = copy ? strtok_r(copy, ":", &save) : NULL; lib; lib = strtok_r(NULL, ":", &save)) {
            void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
            void *sym = h ? dlsym(h, "rocprofiler_configure") : NULL;
            pthread_mutex_lock(&sdk_state.lock);
            if (sym) add_client((rsdk_configure_fn)sym);
            pthread_mutex_unlock(&sdk_state.lock);
        }
        free(copy);
    }
    run_clients(0, 0);
    pthread_mutex_lock(&sdk_state.lock);
    sdk_state.init_status = 1;
    pthread_mutex_unlock(&sdk_state.lock);
}

/* Whether a tool is present, as rocprofiler-register asks before loading
   the SDK when a runtime registers. */
static int tool_present(void)
{
    if (sdk_state.forced || dlsym(RTLD_DEFAULT, "rocprofiler_configure")) return 1;
    const char *libs = getenv("ROCP_TOOL_LIBRARIES");
    if (libs && *libs) return 1;
    scan s = {0};
    dl_iterate_phdr(scan_library, &s);
    return s.n > 0;
}

static pthread_once_t g_runtime_once = PTHREAD_ONCE_INIT;

/* The runtime's first call: it registers its API tables with the SDK,
   which initializes if a tool is present; with none, the SDK never sees
   this runtime. */
static void runtime_initialize(void)
{
    pthread_mutex_lock(&sdk_state.lock);
    sdk_state.runtime_initialized = 1;
    int status = sdk_state.init_status;
    int present = status != 0 || tool_present();
    pthread_mutex_unlock(&sdk_state.lock);
    sdk_kernel_id(FILL_KERNEL, 0, 16); /* the runtime's own code object */
    if (status == 0 && present) sdk_initialize();
    pthread_mutex_lock(&sdk_state.lock);
    sdk_state.tables_seen = present;
    sdk_apply_services();
    pthread_mutex_unlock(&sdk_state.lock);
}

void sdk_runtime_call(void)
{
    pthread_once(&g_runtime_once, runtime_initialize);
}

RSDK_API int rocprofiler_is_initialized(int *status)
{
    if (!status) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sdk_state.lock);
    *status = sdk_state.init_status;
    pthread_mutex_unlock(&sdk_state.lock);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_is_finalized(int *status)
{
    if (!status) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sdk_state.lock);
    *status = sdk_state.fini_status;
    pthread_mutex_unlock(&sdk_state.lock);
    return RSDK_STATUS_SUCCESS;
}

RSDK_API int rocprofiler_force_configure(rsdk_configure_fn configure)
{
    emu_init();
    if (!configure) return RSDK_STATUS_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&sdk_state.lock);
    if (sdk_state.init_status != 0 || sdk_state.forced) {
        /* anytime initialization (1.3.2): a tool after the others */
        int late = sdk_state.init_status == 1 && sdk_version() >= RSDK_VERSION(1, 3, 2);
        int index = late ? add_client(configure) : -1;
        int seen = sdk_state.runtime_initialized;
        pthread_mutex_unlock(&sdk_state.lock);
        if (index < 0) return RSDK_STATUS_ERROR_CONFIGURATION_LOCKED;
        run_clients(index, 1);
        pthread_mutex_lock(&sdk_state.lock);
        sdk_state.tables_seen |= seen;
        sdk_apply_services();
        pthread_mutex_unlock(&sdk_state.lock);
        return RSDK_STATUS_SUCCESS;
    }
    sdk_state.forced = configure;
    pthread_mutex_unlock(&sdk_state.lock);
    sdk_initialize();
    pthread_mutex_lock(&sdk_state.lock);
    /* a runtime initialized before the SDK loaded: its tables reach the SDK
       only from the release that repropagates them (late start) */
    if (sdk_state.runtime_initialized && sdk_version() >= RSDK_LATE_START_VERSION) sdk_state.tables_seen = 1;
    else if (!sdk_state.runtime_initialized) sdk_state.tables_seen = 1; /* it will register with the SDK */
    sdk_apply_services();
    pthread_mutex_unlock(&sdk_state.lock);
    return RSDK_STATUS_SUCCESS;
}

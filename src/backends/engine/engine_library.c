/*
 * The engine's vendor library: finding, loading and binding it (with what
 * each missing optional entry point costs), the failures of its calls in
 * words that say what to do, and the probe.
 */
#include "backends/engine/engine.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYM DT_ENGINE_SYM

typedef int (*fn_u32p)(uint32_t *value);
typedef int (*fn_result_string)(int result, const char **text);

static const char *const symbol_suffix[DT_SYM_COUNT] = {
    [DT_SYM_ENABLE] = "ActivityEnable",
    [DT_SYM_DISABLE] = "ActivityDisable",
    [DT_SYM_REGISTER_CALLBACKS] = "ActivityRegisterCallbacks",
    [DT_SYM_FLUSH_ALL] = "ActivityFlushAll",
    [DT_SYM_NEXT_RECORD] = "ActivityGetNextRecord",
    [DT_SYM_TIMESTAMP] = "GetTimestamp",
    [DT_SYM_DROPPED] = "ActivityGetNumDroppedRecords",
    [DT_SYM_PUSH_EXTERNAL] = "ActivityPushExternalCorrelationId",
    [DT_SYM_POP_EXTERNAL] = "ActivityPopExternalCorrelationId",
    [DT_SYM_VERSION] = "GetVersion",
    [DT_SYM_RESULT_STRING] = "GetResultString",
    [DT_SYM_SUBSCRIBE] = "Subscribe",
    [DT_SYM_UNSUBSCRIBE] = "Unsubscribe",
    [DT_SYM_ENABLE_DOMAIN] = "EnableDomain",
    [DT_SYM_ENABLE_ALL_DOMAINS] = "EnableAllDomains",
    [DT_SYM_CALLBACK_NAME] = "GetCallbackName",
    [DT_SYM_SET_THREAD_ID_TYPE] = "SetThreadIdType",
    [DT_SYM_FLUSH_PERIOD] = "ActivityFlushPeriod",
    [DT_SYM_SUBSCRIBE_NAMED] = "Subscribe_v2",
    [DT_SYM_ENABLE_AND_DUMP] = "ActivityEnableAndDump",
    [DT_SYM_ENABLE_RUNTIME_API] = "ActivityEnableRuntimeApi",
    [DT_SYM_FINALIZE] = "Finalize",
    [DT_SYM_LATENCY_TIMESTAMPS] = "ActivityEnableLatencyTimestamps",
    [DT_SYM_ENABLE_CALLBACK] = "EnableCallback",
    [DT_SYM_ENABLE_DRIVER_API] = "ActivityEnableDriverApi",
    [DT_SYM_SET_ATTRIBUTE] = "ActivitySetAttribute",
    [DT_SYM_INIT] = "Init",
};

/* The library as one load found it; adopted by the engine when used. */
typedef struct loaded {
    dt_library lib;
    void *sym[DT_SYM_COUNT];
    dt_symbol_spec specs[DT_SYM_COUNT];
    char names[DT_SYM_COUNT][80];
    char version[64];
    uint32_t api_version;
    int emulated;
} loaded;

/* What each missing optional entry point costs, given the others. */
static void set_costs(const dt_vendor *v, loaded *l)
{
    static const char *const cost[DT_SYM_COUNT] = {
        [DT_SYM_DROPPED] = "records the vendor drops are not counted",
        [DT_SYM_VERSION] = "library version unknown: the newest record layouts are assumed",
        [DT_SYM_RESULT_STRING] = "vendor errors are reported by number only",
        [DT_SYM_ENABLE_DOMAIN] = "callback domains enabled all at once instead",
        [DT_SYM_ENABLE_ALL_DOMAINS] = "no API callback domain can be enabled: API calls are not attributed",
        [DT_SYM_SET_THREAD_ID_TYPE] = "API rows use the vendor's default thread ids, which may not match host threads",
        [DT_SYM_FLUSH_PERIOD] = "no periodic flush: buffers return only when full or at stop",
        [DT_SYM_SUBSCRIBE_NAMED] = "subscribed without a name: a profiler refused the vendor is not told that "
                                   "devtrace holds it, nor devtrace who holds it",
        [DT_SYM_ENABLE_AND_DUMP] = "devices described before devtrace armed are not described again",
        [DT_SYM_FINALIZE] = "the library stays attached after a session",
        [DT_SYM_ENABLE_CALLBACK] = "calls refused while the driver initialises are not made again when its "
                                   "first context is created",
        [DT_SYM_ENABLE_DRIVER_API] = "driver calls that launch no device work are recorded too",
        [DT_SYM_SET_ATTRIBUTE] = "the library's activity attributes keep its defaults",
    };
    void **sym = l->sym;
    for (int i = DT_SYM_REQUIRED_COUNT; i < DT_SYM_COUNT; i++) l->specs[i].cost = cost[i];
    int push_expected = l->specs[DT_SYM_PUSH_EXTERNAL].name[0] != '\0';
    if (!dt__engine_has_push((void *const *)sym)) {
        /* one feature: a push without its pop would leave ids behind */
        sym[DT_SYM_PUSH_EXTERNAL] = sym[DT_SYM_POP_EXTERNAL] = NULL;
        l->specs[DT_SYM_PUSH_EXTERNAL].cost = l->specs[DT_SYM_POP_EXTERNAL].cost =
            "no external-correlation records: External ids come from API callbacks only";
    }
    if (!sym[DT_SYM_UNSUBSCRIBE]) sym[DT_SYM_SUBSCRIBE] = NULL; /* could never be released */
    const char *no_callbacks = push_expected && dt__engine_has_push((void *const *)sym)
                                   ? "no API callbacks: External ids deeper than the vendor's own stack are lost"
                                   : "no API callbacks: device activity carries no External id";
    l->specs[DT_SYM_SUBSCRIBE].cost = no_callbacks;
    l->specs[DT_SYM_UNSUBSCRIBE].cost = no_callbacks;
    if (!sym[DT_SYM_SUBSCRIBE]) {
        l->specs[DT_SYM_ENABLE_DOMAIN].cost = NULL;
        l->specs[DT_SYM_ENABLE_ALL_DOMAINS].cost = NULL;
    } else if (sym[DT_SYM_ENABLE_DOMAIN]) {
        l->specs[DT_SYM_ENABLE_ALL_DOMAINS].cost = NULL;
    } else if (!sym[DT_SYM_ENABLE_ALL_DOMAINS]) {
        l->specs[DT_SYM_ENABLE_DOMAIN].cost = NULL; /* said once, under EnableAllDomains */
    }
    /* said only where the descriptor asks for what they do */
    if (!v->callbacks.subscribe_named || !sym[DT_SYM_SUBSCRIBE]) l->specs[DT_SYM_SUBSCRIBE_NAMED].cost = NULL;
    if (!v->dump_kind) l->specs[DT_SYM_ENABLE_AND_DUMP].cost = NULL;
    if (!v->callbacks.context_created || !sym[DT_SYM_SUBSCRIBE]) l->specs[DT_SYM_ENABLE_CALLBACK].cost = NULL;
    if (!v->api_ids.quiet_driver_count) l->specs[DT_SYM_ENABLE_DRIVER_API].cost = NULL;
    if (!v->attribute_count) l->specs[DT_SYM_SET_ATTRIBUTE].cost = NULL;
    if (!v->activity.finalize_from || l->api_version < v->activity.finalize_from) l->specs[DT_SYM_FINALIZE].cost = NULL;
    l->specs[DT_SYM_CALLBACK_NAME].cost =
        v->names.runtime ? NULL : "runtime and driver API names are generic (<api>#<callback id>)";
    if (!v->activity.flush_period_ms) l->specs[DT_SYM_FLUSH_PERIOD].cost = NULL;
    /* with one set of layouts the version chooses nothing */
    if (v->records.layout_set_count == 1) l->specs[DT_SYM_VERSION].cost = NULL;
    if (v->results.names) l->specs[DT_SYM_RESULT_STRING].cost = NULL;
    if (v->caps & DT_VCAP_NO_API_ENTER_LINKS) {
        /* subscribing only tells that another profiler holds the vendor */
        l->specs[DT_SYM_SUBSCRIBE].cost = l->specs[DT_SYM_UNSUBSCRIBE].cost =
            "another profiler holding the vendor's interface is not detected";
        l->specs[DT_SYM_ENABLE_DOMAIN].cost = l->specs[DT_SYM_ENABLE_ALL_DOMAINS].cost = NULL;
        if (!dt__engine_has_push((void *const *)sym))
            l->specs[DT_SYM_PUSH_EXTERNAL].cost = l->specs[DT_SYM_POP_EXTERNAL].cost =
                "no external-correlation stack, and the API callbacks carry no correlation id: device activity "
                "carries no External id";
    }
}

/* Find, load and bind the vendor library into *l; check that this build
   can decode what it writes. */
static dt_status open_library(const dt_vendor *v, loaded *l)
{
    memset(l, 0, sizeof *l);
    dt_library_spec spec = v->library.spec;
    spec.override_env = v->backend->library_env;
    dt_status st = dt__library_open(&spec, &l->lib);
    if (st != DT_OK) return st;
    for (int i = 0; i < DT_SYM_COUNT; i++) {
        const char *name = v->library.symbols[i];
        if (!name) {
            snprintf(l->names[i], sizeof l->names[i], "%s%s", v->library.symbol_prefix, symbol_suffix[i]);
            name = l->names[i];
        }
        l->specs[i].name = name;
        l->specs[i].required = (i < DT_SYM_REQUIRED_COUNT &&
                                !(i == DT_SYM_TIMESTAMP && (v->caps & DT_VCAP_CLOCK_REALTIME))) ||
                               (i == DT_SYM_INIT && v->library.init_on_load);
    }
    st = dt__library_bind(&l->lib, &spec, l->specs, DT_SYM_COUNT, l->sym);
    if (st != DT_OK) return st;
    uint32_t version = 0;
    fn_u32p get_version = SYM(l, fn_u32p, DT_SYM_VERSION);
    if (get_version && get_version(&version) == v->results.success) {
        l->api_version = version;
        snprintf(l->version, sizeof l->version, "%" PRIu32, version);
    }
    set_costs(v, l);
    l->emulated = v->library.emulator_marker && dlsym(l->lib.handle, v->library.emulator_marker) != NULL;
    if ((v->caps & DT_VCAP_LAYOUT_DECLARED) && !l->emulated)
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s is a real %s, but this devtrace was built without %s and cannot know its "
                        "record layout; %s",
                        l->lib.path, spec.what, v->library.sdk_headers, v->library.sdk_rebuild_hint);
    if ((v->caps & DT_VCAP_LAYOUT_FROM_SDK) && l->emulated)
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s is devtrace's %s emulator, whose record layout is devtrace's own declaration; "
                        "this devtrace was built with %s and decodes only the vendor's library",
                        l->lib.path, v->backend->name, v->library.sdk_headers);
    return DT_OK;
}

/* e->lock held. Load the library for a session or early arming; keep the
   one already in use while anything is armed with it. */
dt_status dt__engine_load(dt_engine *e)
{
    loaded l;
    dt_status st = open_library(e->v, &l);
    if (st != DT_OK) return st;
    if (e->loaded && l.lib.handle == e->lib.handle) {
        dlclose(l.lib.handle); /* the extra reference only: never unloaded */
        return DT_OK;
    }
    if (e->loaded && (e->early || e->subscribed)) {
        dt__log("%s: keeping %s, armed already, rather than %s", e->v->backend->name, e->lib.path, l.lib.path);
        return DT_OK;
    }
    if (e->v->library.init_on_load) {
        int r = SYM(&l, int (*)(void), DT_SYM_INIT)();
        if (r != e->v->results.success) {
            fn_result_string text_of = SYM(&l, fn_result_string, DT_SYM_RESULT_STRING);
            const char *text = NULL;
            if (!text_of || text_of(r, &text) != e->v->results.success || !text) text = "an error";
            dt_status st2 = dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s: %s returned %s (%d): %s cannot record here",
                                     e->v->backend->name, l.specs[DT_SYM_INIT].name, text, r, l.lib.path);
            dlclose(l.lib.handle);
            return st2;
        }
    }
    /* A different library than last time (tests switch variants): the
       previous one stays loaded, it is simply no longer used. */
    e->lib = l.lib;
    e->attributes_set = 0;
    memcpy(e->sym, l.sym, sizeof e->sym);
    memcpy(e->specs, l.specs, sizeof e->specs);
    for (int i = 0; i < DT_SYM_COUNT; i++) {
        snprintf(e->symbol_names[i], sizeof e->symbol_names[i], "%s", l.specs[i].name);
        e->specs[i].name = e->symbol_names[i];
    }
    snprintf(e->version, sizeof e->version, "%s", l.version);
    e->api_version = l.api_version;
    e->emulated = l.emulated;
    dt__decoder_init(&e->decoder, e->v, l.api_version);
    /* devtrace's emulator writes exactly these layouts */
    e->decoder.sizes_known |= l.emulated;
    e->decoder.device_cache = e->devices;
    e->decoder.device_lock = &e->devices_lock;
    e->decoder.counted = e->counted;
    /* graph launches are counted where this library's ids for them are wrong */
    const dt_vendor_api_ids *ids = &e->v->api_ids;
    if (ids->graph_ids_from && l.api_version && l.api_version < ids->graph_ids_from)
        e->decoder.graph_counted = e->graph_launches;
    e->loaded = 1;
    dt__log("%s: using %s (version %s)%s", e->v->backend->name, e->lib.path, e->version[0] ? e->version : "unknown",
           e->emulated ? ", devtrace's emulator" : "");
    return DT_OK;
}

/* Another copy of the vendor's library mapped in the process beside the
   one devtrace uses (a program's own, a wheel's): the two would not share
   one interface, and the other's client would record apart. Files named as
   the library's first soname up to ".so" names ("libcupti.so*"), told
   apart by their real paths. */
void dt__engine_note_other_copies(const dt_engine *e, dt_session *s)
{
    const char *soname = e->v->library.spec.sonames ? e->v->library.spec.sonames[0] : NULL;
    const char *so = soname ? strstr(soname, ".so") : NULL;
    char ours[4096];
    if (!so || !e->loaded || !realpath(e->lib.path, ours)) return;
    size_t prefix = (size_t)(so - soname) + 3;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return;
    char line[4096 + 256], seen[4096] = "";
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        char real[4096];
        if (strncmp(base, soname, prefix) != 0 || strcmp(path, seen) == 0) continue;
        snprintf(seen, sizeof seen, "%s", path);
        if (!realpath(path, real) || strcmp(real, ours) == 0) continue;
        dt__core_note(s, "libraries", "two copies of %s in this process: devtrace records through %s, and %s is "
                        "loaded too (another client's, such as torch's own): the two do not share one interface",
                        e->v->library.spec.what, ours, real);
    }
    fclose(maps);
}

/* ------------------------------------------------------------------ */
/* Failures                                                            */
/* ------------------------------------------------------------------ */
const char *dt__engine_result_text(const dt_engine *e, int r)
{
    const char *s = NULL;
    fn_result_string text = SYM(e, fn_result_string, DT_SYM_RESULT_STRING);
    if (text && text(r, &s) == e->v->results.success && s) return s;
    for (uint32_t i = 0; i < e->v->results.name_count; i++)
        if ((int)e->v->results.names[i].value == r) return e->v->results.names[i].name;
    return "error";
}

/* "" when the vendor's driver library is present (or none is checked). */
static void driver_presence(const dt_vendor *v, int emulated, char *why, size_t len)
{
    why[0] = '\0';
    if (!v->library.driver_library || emulated) return;
    void *h = dlopen(v->library.driver_library, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) h = dlopen(v->library.driver_library, RTLD_LAZY | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        return;
    }
    const char *e = dlerror();
    snprintf(why, len, "no %s driver: %s not found (%s)", v->library.driver_name, v->library.driver_library,
             e ? e : "not in the loader path");
}

/* Turn a failed vendor call into a status whose message says what to do. */
dt_status dt__engine_failure(const dt_engine *e, const char *call, int r)
{
    const dt_vendor *v = e->v;
    if (r == v->results.multiple_subscribers)
        return dt__error(DT_ERR_BUSY,
                        "%s: another profiler holds %s in this process, which allows one subscriber; stop it "
                        "or disable its device tracing",
                        call, v->backend->vendor);
    /* A vendor without its driver answers "unknown" (CUPTI does, and so does
       an emulator standing in for it): where the driver is missing, that
       is the reason, emulated or not. */
    char why[400];
    driver_presence(v, r == v->results.unknown ? 0 : e->emulated, why, sizeof why);
    if (why[0] && (r == v->results.unknown || r == v->results.not_initialized || r == v->results.not_compatible))
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s: %s", call, why);
    dt_failure f = {DT_OK, ""};
    if (v->explain_failure && v->explain_failure(call, r, dt__engine_result_text(e, r), e->lib.path, e->version, e->emulated, &f))
        return dt__error(f.status, "%s", f.message);
    return dt__error(DT_ERR_VENDOR, "%s failed: %s (%d) from %s", call, dt__engine_result_text(e, r), r, e->lib.path);
}

/* ------------------------------------------------------------------ */
/* Probe                                                               */
/* ------------------------------------------------------------------ */
dt_status dt__engine_probe(const dt_backend *self, dt_backend_status *st)
{
    dt_engine *e = self->impl;
    const dt_vendor *v = e->v;
    loaded l;
    st->available = 0;
    st->library[0] = st->version[0] = st->reason[0] = '\0';
    if (open_library(v, &l) != DT_OK) {
        snprintf(st->library, sizeof st->library, "%s", l.lib.path);
        snprintf(st->reason, sizeof st->reason, "%s", dt_last_error());
        return DT_OK;
    }
    snprintf(st->library, sizeof st->library, "%s", l.lib.path);
    snprintf(st->version, sizeof st->version, "%s", l.version);
    char why[400];
    driver_presence(v, l.emulated, why, sizeof why);
    if (why[0]) {
        snprintf(st->reason, sizeof st->reason, "%s", why);
    } else {
        st->available = 1;
        if (v->library.layout_note && !l.emulated) snprintf(st->reason, sizeof st->reason, "%s", v->library.layout_note);
        dt__symbols_describe_missing(l.specs, DT_SYM_COUNT, l.sym, st->reason, sizeof st->reason);
    }
    pthread_mutex_lock(&e->lock);
    if (e->loaded && l.lib.handle == e->lib.handle) dlclose(l.lib.handle); /* the extra reference only */
    pthread_mutex_unlock(&e->lock);
    return DT_OK;
}

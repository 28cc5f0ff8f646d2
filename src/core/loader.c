/* Loading vendor libraries: one rule for every backend (where to look, what
   a library the user named means), binding their symbols (required or
   optional, and what each missing one costs). */
#include "base/alloc.h"
#include "base/log.h"
#include "core/loader.h"
#include "core/session.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The path the loader actually used for handle h (requested: what was asked). */
static void loaded_path(void *h, const char *requested, char *out, size_t len)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        snprintf(out, len, "%s", lm->l_name);
    else
        snprintf(out, len, "%s", requested);
}

void *dt__dlopen_first(const char *const *candidates, size_t n, char *found, size_t found_len,
                      char *tried, size_t tried_len)
{
    if (tried_len) tried[0] = 0;
    if (found_len) found[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || !*c) continue;
        void *h = dlopen(c, RTLD_NOW | RTLD_LOCAL);
        if (h) {
            if (found_len) loaded_path(h, c, found, found_len);
            return h;
        }
        if (tried_len) {
            size_t used = strlen(tried);
            const char *err = dlerror();
            snprintf(tried + used, tried_len - used, "%s%s (%s)", used ? "; " : "", c,
                     err ? err : "not loadable");
        }
    }
    return NULL;
}

/* A copy the process already has: two copies of one vendor library would
   fight over one driver interface, so the program's own copy wins. */
static void *already_loaded(const dt_library_spec *spec, char *path, size_t len)
{
    if (spec->loaded_symbol) {
        void *self = dlopen(NULL, RTLD_NOW);
        void *sym = self ? dlsym(self, spec->loaded_symbol) : NULL;
        Dl_info info;
        if (sym && dladdr(sym, &info) && info.dli_fname) {
            void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
            if (h) {
                snprintf(path, len, "%s", info.dli_fname);
                return h;
            }
        }
    }
    for (size_t i = 0; spec->sonames && spec->sonames[i]; i++) {
        void *h = dlopen(spec->sonames[i], RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            loaded_path(h, spec->sonames[i], path, len);
            return h;
        }
    }
    return NULL;
}

#define DT_MAX_CANDIDATES 64

/* Where Python environments keep their packages: the prefixes of the
   virtual and conda environments, of the python3 the shell finds first on
   PATH (a venv's bin/ precedes the system's), of the user and the system. */
static size_t python_prefixes(char (*out)[512], size_t max)
{
    size_t n = 0;
    const char *envs[] = {"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONUSERBASE"};
    for (size_t i = 0; i < sizeof envs / sizeof *envs && n < max; i++) {
        const char *v = dt__env(envs[i]);
        if (v) snprintf(out[n++], sizeof out[0], "%s", v);
    }
    const char *path = dt__env("PATH");
    for (const char *p = path; p && *p && n < max;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char exe[600];
        snprintf(exe, sizeof exe, "%.*s/python3", (int)len, p);
        if (len && access(exe, X_OK) == 0) {
            /* <prefix>/bin/python3 */
            snprintf(out[n], sizeof out[0], "%.*s", (int)len, p);
            char *slash = strrchr(out[n], '/');
            if (slash && slash != out[n]) {
                *slash = '\0';
                n++;
            }
            break;
        }
        p = end ? end + 1 : NULL;
    }
    const char *home = dt__env("HOME");
    if (home && n < max) snprintf(out[n++], sizeof out[0], "%s/.local", home);
    if (n < max) snprintf(out[n++], sizeof out[0], "/usr/local");
    if (n < max) snprintf(out[n++], sizeof out[0], "/usr");
    return n;
}

/* The library in Python wheels: each soname in each of spec->python_dirs
   under every site-packages found. Appends to cands (paths holds the
   strings); returns the new count. */
static size_t python_candidates(const dt_library_spec *spec, char (*paths)[512], const char **cands, size_t n,
                                size_t max)
{
    if (!spec->python_dirs || !spec->sonames) return n;
    char (*sites)[512] = dt__malloc(24 * sizeof *sites);
    char (*prefixes)[512] = dt__malloc(8 * sizeof *prefixes);
    if (!sites || !prefixes) {
        dt__free(sites);
        dt__free(prefixes);
        return n;
    }
    size_t nsites = 0, nprefixes = python_prefixes(prefixes, 8);
    static const char *const layouts[] = {"lib/python3*/site-packages", "lib/python3*/dist-packages",
                                          "lib64/python3*/site-packages", "lib/python3/dist-packages"};
    for (size_t p = 0; p < nprefixes && nsites < 24; p++)
        for (size_t l = 0; l < sizeof layouts / sizeof *layouts && nsites < 24; l++)
            snprintf(sites[nsites++], sizeof sites[0], "%s/%s", prefixes[p], layouts[l]);
    const char *pythonpath = dt__env("PYTHONPATH");
    for (const char *p = pythonpath; p && *p && nsites < 24;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) snprintf(sites[nsites++], sizeof sites[0], "%.*s", (int)len, p);
        p = end ? end + 1 : NULL;
    }
    for (size_t k = 0; k < nsites && n < max; k++)
        for (size_t d = 0; spec->python_dirs[d] && n < max; d++)
            for (size_t i = 0; spec->sonames[i] && n < max; i++) {
                char pattern[1200];
                snprintf(pattern, sizeof pattern, "%s/%s/%s", sites[k], spec->python_dirs[d], spec->sonames[i]);
                glob_t g;
                if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0) continue;
                for (size_t m = 0; m < g.gl_pathc && n < max; m++) {
                    int seen = 0;
                    for (size_t j = 0; j < n && !seen; j++) seen = strcmp(cands[j], g.gl_pathv[m]) == 0;
                    if (seen) continue;
                    snprintf(paths[n], sizeof paths[n], "%s", g.gl_pathv[m]);
                    cands[n] = paths[n];
                    n++;
                }
                globfree(&g);
            }
    dt__free(sites);
    dt__free(prefixes);
    return n;
}

size_t dt__library_candidates(const dt_library_spec *spec, char (*paths)[512], const char **cands, size_t max)
{
    size_t n = 0;
    int any_root = 0;
    if (max > DT_MAX_CANDIDATES) max = DT_MAX_CANDIDATES;
    for (size_t i = 0; !spec->roots_only && spec->sonames && spec->sonames[i] && n < max; i++)
        cands[n++] = spec->sonames[i];
    for (size_t r = 0; spec->root_envs && spec->root_envs[r]; r++) {
        const char *root = dt__env(spec->root_envs[r]);
        if (!root) continue;
        any_root = 1;
        for (size_t d = 0; spec->subdirs && spec->subdirs[d]; d++)
            for (size_t i = 0; spec->sonames && spec->sonames[i] && n < max; i++) {
                snprintf(paths[n], sizeof paths[n], "%s/%s/%s", root, spec->subdirs[d], spec->sonames[i]);
                cands[n] = paths[n];
                n++;
            }
    }
    if (!any_root && spec->default_root) {
        for (size_t d = 0; spec->subdirs && spec->subdirs[d]; d++)
            for (size_t i = 0; spec->sonames && spec->sonames[i] && n < max; i++) {
                snprintf(paths[n], sizeof paths[n], "%s/%s/%s", spec->default_root, spec->subdirs[d],
                         spec->sonames[i]);
                cands[n] = paths[n];
                n++;
            }
    }
    if (!spec->roots_only) n = python_candidates(spec, paths, cands, n, max);
    for (size_t i = 0; spec->paths && spec->paths[i] && n < max; i++) cands[n++] = spec->paths[i];
    return n;
}

dt_status dt__library_open(const dt_library_spec *spec, dt_library *out)
{
    memset(out, 0, sizeof *out);
    const char *named = spec->override_env ? dt__env(spec->override_env) : NULL;
    if (named) {
        /* The user named this library: it is used, or it is an error. Falling
           back to another copy would record something they did not ask for. */
        out->handle = dlopen(named, RTLD_NOW | RTLD_LOCAL);
        if (!out->handle) {
            const char *e = dlerror();
            return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s=%s does not load: %s", spec->override_env, named,
                            e ? e : "unknown error");
        }
        loaded_path(out->handle, named, out->path, sizeof out->path);
        out->named = 1;
        return DT_OK;
    }
    if (!spec->roots_only) {
        out->handle = already_loaded(spec, out->path, sizeof out->path);
        if (out->handle) return DT_OK;
    }

    char (*paths)[512] = dt__malloc(DT_MAX_CANDIDATES * sizeof *paths);
    if (!paths) return dt__error(DT_ERR_NO_MEMORY, "out of memory looking for %s", spec->what);
    const char *cands[DT_MAX_CANDIDATES];
    size_t n = dt__library_candidates(spec, paths, cands, DT_MAX_CANDIDATES);

    char tried[2048];
    out->handle = dt__dlopen_first(cands, n, out->path, sizeof out->path, tried, sizeof tried);
    dt__free(paths);
    if (out->handle) return DT_OK;
    if (n == 0) {
        char roots[200] = "";
        for (size_t r = 0; spec->root_envs && spec->root_envs[r]; r++) {
            size_t used = strlen(roots);
            snprintf(roots + used, sizeof roots - used, "%s%s", r ? " or " : "", spec->root_envs[r]);
        }
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s is looked for only under %s, and none is set; %s, or set %s "
                        "to its path", spec->what, roots, spec->hint ? spec->hint : "install the vendor's SDK",
                        spec->override_env);
    }
    return dt__error(DT_ERR_BACKEND_UNAVAILABLE, "%s not found (tried: %s); %s, or set %s to its path", spec->what,
                    tried, spec->hint ? spec->hint : "install the vendor's SDK", spec->override_env);
}

dt_status dt__library_bind(const dt_library *lib, const dt_library_spec *spec, const dt_symbol_spec *syms,
                          size_t n, void **resolved)
{
    for (size_t i = 0; i < n; i++) {
        resolved[i] = syms[i].name && syms[i].name[0] ? dlsym(lib->handle, syms[i].name) : NULL;
        if (resolved[i] || !syms[i].required) continue;
        if (lib->named)
            return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                            "%s=%s: the library does not export %s, which devtrace needs: it is not a "
                            "usable %s; point %s at the vendor's library",
                            spec->override_env, lib->path, syms[i].name, spec->what, spec->override_env);
        return dt__error(DT_ERR_BACKEND_UNAVAILABLE,
                        "%s does not export %s, which devtrace needs: it is not a usable %s; set %s to the "
                        "vendor's library",
                        lib->path, syms[i].name, spec->what, spec->override_env);
    }
    return DT_OK;
}

void dt__symbols_describe_missing(const dt_symbol_spec *syms, size_t n, void *const *resolved, char *out,
                                 size_t len)
{
    size_t used = strlen(out);
    for (size_t i = 0; i < n && used < len; i++) {
        if (resolved[i] || !syms[i].cost || !syms[i].name || !syms[i].name[0]) continue;
        int w = snprintf(out + used, len - used, "%smissing %s: %s", used ? "; " : "", syms[i].name,
                         syms[i].cost);
        if (w < 0) break;
        used += (size_t)w;
    }
}

void dt__symbols_note_missing(dt_session *s, const dt_symbol_spec *syms, size_t n, void *const *resolved)
{
    for (size_t i = 0; i < n; i++)
        if (!resolved[i] && syms[i].cost && syms[i].name && syms[i].name[0])
            dt__core_note(s, syms[i].name, "missing: %s", syms[i].cost);
}

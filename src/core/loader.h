/*
 * Vendor libraries: the one loading rule (src/core/loader.c). Internal, not installed.
 */
#ifndef DT_CORE_LOADER_H
#define DT_CORE_LOADER_H

#include <stddef.h>

#include "devtrace/devtrace.h"
#include "base/common.h"

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
DT_HIDDEN dt_status dt__library_open(const dt_library_spec *spec, dt_library *out);
/* Step 3's candidates, in order, at most max (paths holds the strings it
   builds, max of them). */
DT_HIDDEN size_t dt__library_candidates(const dt_library_spec *spec, char (*paths)[512], const char **cands,
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
DT_HIDDEN dt_status dt__library_bind(const dt_library *lib, const dt_library_spec *spec,
                                    const dt_symbol_spec *syms, size_t n, void **resolved);
/* Append "missing X: cost" for each missing optional symbol with a cost. */
DT_HIDDEN void dt__symbols_describe_missing(const dt_symbol_spec *syms, size_t n, void *const *resolved,
                                           char *out, size_t len);
/* One note per missing optional symbol with a cost, keyed by its name. */
DT_HIDDEN void dt__symbols_note_missing(dt_session *s, const dt_symbol_spec *syms, size_t n,
                                       void *const *resolved);

/* Try each candidate with dlopen(RTLD_NOW|RTLD_LOCAL); the first that loads
   wins. `tried` receives a "; "-separated account of what was tried and why
   it failed (for error messages). Returns the handle or NULL. */
DT_HIDDEN void *dt__dlopen_first(const char *const *candidates, size_t n,
                                char *found, size_t found_len,
                                char *tried, size_t tried_len);

#endif /* DT_CORE_LOADER_H */

/*
 * The C++ (Itanium ABI) demangler: one for the library, which demangles
 * kernel names as it records them, and for `devtrace check`, which must
 * agree with it about which names demangle.
 */
#ifndef DT_DEMANGLE_H
#define DT_DEMANGLE_H

#include <stddef.h>

typedef enum dt_demangle_result {
    DT_DEMANGLED = 0,
    DT_DEMANGLE_NOT_MANGLED, /* not a valid mangled name, or no demangler found */
    DT_DEMANGLE_TOO_LONG,    /* longer than the demangler takes: kept as given */
    DT_DEMANGLE_NO_MEMORY    /* out of memory, or no thread for a long name */
} dt_demangle_result;

/* The demangled form of raw, to release with dt__free (or free), or NULL
   with the reason in *result (which may be NULL). The demangler is the C++
   runtime's __cxa_demangle, found at run time. Thread-safe. */
__attribute__((visibility("hidden"))) char *dt__demangle(const char *raw, dt_demangle_result *result);

/* The longest name the demangler takes: libstdc++'s refuses names longer
   than 1024 bytes (a guard of its own against stack exhaustion); SIZE_MAX
   when no limit up to 64 KiB was found; 0 when there is no demangler. */
__attribute__((visibility("hidden"))) size_t dt__demangle_length_limit(void);

#endif

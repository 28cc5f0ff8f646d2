/* The demangler lives in libstdc++ (or libc++abi); a C library must not
   require it at link time, so it is looked up at run time, once. */
#include "base/demangle.h"
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdint.h>

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn find_demangler(void)
{
    static _Atomic(cxa_demangle_fn) fn;
    static _Atomic int looked;
    if (atomic_load(&looked)) return atomic_load(&fn);
    cxa_demangle_fn f = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (!h) h = dlopen("libc++abi.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (h) f = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
        /* the handle is kept: the function must stay mapped */
    }
    atomic_store(&fn, f);
    atomic_store(&looked, 1);
    return f;
}

/* __cxa_demangle (libiberty's cp-demangle in libstdc++) keeps its parse
   tables on the stack, sized by the name: two components and one
   substitution slot per byte, about 72 bytes of stack per byte of name, and
   recursion as deep as the name nests. Short names are demangled on the
   caller's thread; a longer one (which a demangler without libstdc++'s
   length limit takes) on a thread whose stack fits it, because the caller
   may be a vendor thread with a small stack. */
#define DEMANGLE_INLINE_MAX 256
#define DEMANGLE_STACK_PER_BYTE 512
#define DEMANGLE_STACK_BASE ((size_t)512 * 1024)
#define DEMANGLE_PROBE_MAX 65536

typedef struct demangle_job {
    cxa_demangle_fn fn;
    const char *raw;
    char *out;
    int status; /* __cxa_demangle's: -1 memory, -2 not a valid name */
} demangle_job;

static void *demangle_run(void *arg)
{
    demangle_job *j = arg;
    j->out = j->fn(j->raw, NULL, NULL, &j->status);
    return NULL;
}

static int demangle_on_big_stack(demangle_job *j, size_t len)
{
    if (len > (SIZE_MAX - DEMANGLE_STACK_BASE) / DEMANGLE_STACK_PER_BYTE / 2) return -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t stack = (len * DEMANGLE_STACK_PER_BYTE + DEMANGLE_STACK_BASE + page - 1) / page * page;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return -1;
    int rc = pthread_attr_setstacksize(&attr, stack);
    pthread_t t;
    /* the helper takes none of the program's signals */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (rc == 0) rc = pthread_create(&t, &attr, demangle_run, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) return -1;
    pthread_join(t, NULL);
    return 0;
}

/* __cxa_demangle's status for raw (len bytes); *out receives the result. */
static int demangle_with(cxa_demangle_fn f, const char *raw, size_t len, char **out)
{
    demangle_job j = {f, raw, NULL, -2};
    if (len <= DEMANGLE_INLINE_MAX) demangle_run(&j);
    else if (demangle_on_big_stack(&j, len) != 0) j.status = -1;
    if (j.status != 0 || !j.out) {
        free(j.out);
        j.out = NULL;
        if (j.status == 0) j.status = -1;
    }
    *out = j.out;
    return j.status;
}

/* Whether f demangles a valid name of exactly len bytes: "_Z<k><k x a>v",
   a function named aaa...a. */
static int takes_length(cxa_demangle_fn f, char *buf, size_t len)
{
    for (size_t digits = 1; digits <= 5; digits++) {
        if (len < 3 + digits + 1) return 1;
        size_t k = len - 3 - digits;
        char num[16];
        if ((size_t)snprintf(num, sizeof num, "%zu", k) != digits) continue;
        memcpy(buf, "_Z", 2);
        memcpy(buf + 2, num, digits);
        memset(buf + 2 + digits, 'a', k);
        memcpy(buf + 2 + digits + k, "v", 2);
        char *out = NULL;
        int status = demangle_with(f, buf, len, &out);
        free(out);
        return status == 0;
    }
    return 1; /* no such name: the neighbouring lengths decide */
}

/* Measured once, by bisection over names that are valid at every length. */
size_t dt__demangle_length_limit(void)
{
    static _Atomic size_t limit; /* 0: not measured */
    size_t known = atomic_load(&limit);
    if (known) return known;
    cxa_demangle_fn f = find_demangler();
    if (!f) return 0;
    char *buf = malloc(DEMANGLE_PROBE_MAX + 1);
    if (!buf) return DEMANGLE_INLINE_MAX; /* not measured: ask again next time */
    size_t lo = 16, hi = DEMANGLE_PROBE_MAX;
    if (takes_length(f, buf, hi)) {
        lo = SIZE_MAX;
    } else {
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (takes_length(f, buf, mid)) lo = mid;
            else hi = mid;
        }
    }
    free(buf);
    atomic_store(&limit, lo);
    return lo;
}

char *dt__demangle(const char *raw, dt_demangle_result *result)
{
    dt_demangle_result dummy;
    if (!result) result = &dummy;
    *result = DT_DEMANGLE_NOT_MANGLED;
    if (!raw || raw[0] != '_' || raw[1] != 'Z') return NULL;
    cxa_demangle_fn f = find_demangler();
    if (!f) return NULL;
    /* the demangler allocates (through libc's malloc): one allocation for
       the test hook */
    if (dt__alloc_injected_failure()) {
        *result = DT_DEMANGLE_NO_MEMORY;
        return NULL;
    }
    size_t len = strlen(raw);
    if (len > DEMANGLE_INLINE_MAX && len > dt__demangle_length_limit()) {
        *result = DT_DEMANGLE_TOO_LONG;
        return NULL;
    }
    char *out = NULL;
    int status = demangle_with(f, raw, len, &out);
    if (status == 0) *result = DT_DEMANGLED;
    else if (status == -1) *result = DT_DEMANGLE_NO_MEMORY;
    return out;
}

/*
 * rocprofiler-sdk kernel symbols: registered by name the first time a kernel
 * runs, as a code object loads, and announced to the code-object services.
 */
#include <stdlib.h>
#include <string.h>

#include "sdk.h"

/* Kernel symbols, by name: kept for the library's life. A leaf lock: it is
   taken with the core's lock held (records are written under it). */
#define KERNEL_CACHE 64
static struct {
    pthread_mutex_t lock;
    char **names;
    size_t count, cap;
    uint32_t *static_lds, *registers;
    struct { const char *name; uint64_t id; } cache[KERNEL_CACHE];
} symbols = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void announce_symbol(size_t index, uint64_t only_context)
{
    rsdk_kernel_symbol sym = {
        .size = sizeof sym, .kernel_id = index + 1, .code_object_id = 1, .kernel_name = symbols.names[index],
        .kernel_object = 0x7f0000200000ull + index * 64, .kernarg_segment_size = 64, .kernarg_segment_alignment = 16,
        .group_segment_size = symbols.static_lds[index], .arch_vgpr_count = symbols.registers[index]};
    call_target t[MAX_CONTEXTS];
    size_t n = sdk_callback_targets(RSDK_CALLBACK_CODE_OBJECT, RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, t);
    for (size_t i = 0; i < n; i++) {
        if (only_context && t[i].context != only_context) continue;
        rsdk_user_data user = {0};
        t[i].callback(sdk_callback_record(t[i].context, 0, RSDK_CALLBACK_CODE_OBJECT,
                                      RSDK_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, RSDK_PHASE_LOAD, &sym),
                      &user, t[i].data);
    }
}

/* HSA's executable symbol of a kernel (code objects v3 on) is its
   descriptor, <name>.kd: rocprofiler-sdk passes that name on */
#define SYMBOL_SUFFIX ".kd"

/* The kernel id of a name, registering the symbol (and telling the
   code-object services) the first time: as a code object loads before its
   kernels first run. */
uint64_t sdk_kernel_id(const char *name, uint32_t static_lds, uint32_t registers)
{
    if (!name) name = "";
    pthread_mutex_lock(&symbols.lock);
    /* the core interns names: the same kernel comes with the same pointer */
    size_t slot = ((uintptr_t)name >> 4) & (KERNEL_CACHE - 1);
    if (symbols.cache[slot].name == name) {
        uint64_t id = symbols.cache[slot].id;
        pthread_mutex_unlock(&symbols.lock);
        return id;
    }
    size_t len = strlen(name);
    for (size_t i = symbols.count; i-- > 0;)
        if (strncmp(symbols.names[i], name, len) == 0 && strcmp(symbols.names[i] + len, SYMBOL_SUFFIX) == 0) {
            symbols.cache[slot].name = name;
            symbols.cache[slot].id = i + 1;
            pthread_mutex_unlock(&symbols.lock);
            return i + 1;
        }
    if (symbols.count == symbols.cap) {
        size_t cap = symbols.cap ? symbols.cap * 2 : 64;
        char **n = realloc(symbols.names, cap * sizeof *n);
        uint32_t *l = n ? realloc(symbols.static_lds, cap * sizeof *l) : NULL;
        uint32_t *r = l ? realloc(symbols.registers, cap * sizeof *r) : NULL;
        if (n) symbols.names = n;
        if (l) symbols.static_lds = l;
        if (!r) {
            pthread_mutex_unlock(&symbols.lock);
            return 0;
        }
        symbols.registers = r;
        symbols.cap = cap;
    }
    /* named as HSA names the kernel's descriptor symbol */
    char *copy = malloc(len + sizeof SYMBOL_SUFFIX);
    if (!copy) {
        pthread_mutex_unlock(&symbols.lock);
        return 0;
    }
    memcpy(copy, name, len);
    memcpy(copy + len, SYMBOL_SUFFIX, sizeof SYMBOL_SUFFIX);
    size_t i = symbols.count++;
    symbols.names[i] = copy;
    symbols.static_lds[i] = static_lds;
    symbols.registers[i] = registers;
    announce_symbol(i, 0);
    pthread_mutex_unlock(&symbols.lock);
    return i + 1;
}

void sdk_replay_symbols(uint64_t context)
{
    pthread_mutex_lock(&symbols.lock);
    for (size_t i = 0; i < symbols.count; i++) announce_symbol(i, context);
    pthread_mutex_unlock(&symbols.lock);
}

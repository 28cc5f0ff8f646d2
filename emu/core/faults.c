/*
 * Fault injection: the faults' names, arming them and parsing a spec.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"

static const char *const fault_names[EMU_FAULT_COUNT] = {
    "zero_timestamps", "reversed_timestamps", "long_timestamps", "malformed",
    "unknown_kind",    "late",                "out_of_order",    "no_callbacks",
    "vendor_dropped",  "no_buffer",
};

static int arm_locked(emu_fault f, uint64_t count)
{
    if ((unsigned)f >= EMU_FAULT_COUNT)
        return EMU_EINVAL;
    if (emu_vendor_impl.unsupported_faults & (1u << f))
        return EMU_ENOTSUP;
    core_state.fault_left[f] += count;
    return EMU_OK;
}

int core_parse_faults_locked(const char *spec)
{
    const char *p = spec;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return EMU_OK;
        const char *name = p;
        while (*p && *p != '=' && *p != ',' && *p != ' ')
            p++;
        size_t len = (size_t)(p - name);
        if (*p != '=')
            return EMU_EINVAL;
        p++;
        char *end = NULL;
        errno = 0;
        unsigned long long count = strtoull(p, &end, 10);
        if (end == p || errno != 0 || *p == '-')
            return EMU_EINVAL;
        p = end;
        int f = -1;
        for (int i = 0; i < EMU_FAULT_COUNT; i++)
            if (strlen(fault_names[i]) == len && strncmp(fault_names[i], name, len) == 0)
                f = i;
        if (f < 0)
            return EMU_EINVAL;
        (void)arm_locked((emu_fault)f, count); /* a fault the vendor cannot exhibit is ignored */
    }
}

EMU_API int emu_set_faults(const char *spec)
{
    emu_init();
    if (!spec)
        return EMU_EINVAL;
    /* a spec with an error arms nothing, not even its valid items */
    pthread_mutex_lock(&core_state.lock);
    uint64_t saved_left[EMU_FAULT_COUNT];
    memcpy(saved_left, core_state.fault_left, sizeof(saved_left));
    int rc = core_parse_faults_locked(spec);
    if (rc != EMU_OK)
        memcpy(core_state.fault_left, saved_left, sizeof(saved_left));
    pthread_mutex_unlock(&core_state.lock);
    return rc;
}

EMU_API int emu_fault_arm(emu_fault fault, uint64_t count)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    int rc = arm_locked(fault, count);
    pthread_mutex_unlock(&core_state.lock);
    return rc;
}

EMU_API const char *emu_fault_name(emu_fault fault)
{
    return (unsigned)fault < EMU_FAULT_COUNT ? fault_names[fault] : NULL;
}

EMU_API void emu_faults_clear(void)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    memset(core_state.fault_left, 0, sizeof(core_state.fault_left));
    pthread_mutex_unlock(&core_state.lock);
}

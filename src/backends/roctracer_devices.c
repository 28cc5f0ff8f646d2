/*
 * Device properties for the roctracer backend: each HIP attribute asked on
 * its own, from the HIP runtime the process has (never loaded here).
 */
#include "backends/roctracer.h"

#include <stdio.h>
#include <string.h>

static const struct { int attribute; unsigned bit; const char *what; } attributes[] = {
    {DT_HIP_ATTR_COMPUTE_MAJOR, DT_PROP_COMPUTE_MAJOR, "ComputeCapabilityMajor"},
    {DT_HIP_ATTR_COMPUTE_MINOR, DT_PROP_COMPUTE_MINOR, "ComputeCapabilityMinor"},
    {DT_HIP_ATTR_MAX_THREADS_PER_BLOCK, DT_PROP_THREADS_PER_BLOCK, "MaxThreadsPerBlock"},
    {DT_HIP_ATTR_MAX_THREADS_PER_SM, DT_PROP_THREADS_PER_SM, "MaxThreadsPerMultiProcessor"},
    {DT_HIP_ATTR_MAX_BLOCKS_PER_SM, DT_PROP_BLOCKS_PER_SM, "MaxBlocksPerMultiProcessor"},
    {DT_HIP_ATTR_REGS_PER_BLOCK, DT_PROP_REGS_PER_BLOCK, "MaxRegistersPerBlock"},
    {DT_HIP_ATTR_REGS_PER_SM, DT_PROP_REGS_PER_SM, "MaxRegistersPerMultiprocessor"},
    {DT_HIP_ATTR_WARP_SIZE, DT_PROP_WARP_SIZE, "WarpSize"},
    {DT_HIP_ATTR_SHARED_PER_BLOCK, DT_PROP_SHARED_PER_BLOCK, "MaxSharedMemoryPerBlock"},
    {DT_HIP_ATTR_SHARED_PER_BLOCK_OPTIN, DT_PROP_SHARED_PER_BLOCK_OPTIN, "SharedMemPerBlockOptin"},
    {DT_HIP_ATTR_AMD_SHARED_PER_SM, DT_PROP_SHARED_PER_SM, "MaxSharedMemoryPerMultiprocessor"},
    {DT_HIP_ATTR_SM_COUNT, DT_PROP_SMS, "MultiprocessorCount"},
};
#define ATTRIBUTES (sizeof attributes / sizeof attributes[0])

static void set_property(dt_device_props *p, unsigned bit, int v)
{
    switch (bit) {
    case DT_PROP_COMPUTE_MAJOR: p->compute_major = v; break;
    case DT_PROP_COMPUTE_MINOR: p->compute_minor = v; break;
    case DT_PROP_THREADS_PER_BLOCK: p->max_threads_per_block = v; break;
    case DT_PROP_THREADS_PER_SM: p->max_threads_per_sm = v; break;
    case DT_PROP_BLOCKS_PER_SM: p->max_blocks_per_sm = v; break;
    case DT_PROP_REGS_PER_BLOCK: p->regs_per_block = v; break;
    case DT_PROP_REGS_PER_SM: p->regs_per_sm = v; break;
    case DT_PROP_WARP_SIZE: p->warp_size = v; break;
    case DT_PROP_SHARED_PER_BLOCK: p->shared_mem_per_block = (uint64_t)v; break;
    case DT_PROP_SHARED_PER_BLOCK_OPTIN: p->shared_mem_per_block_optin = (uint64_t)v; break;
    case DT_PROP_SHARED_PER_SM: p->shared_mem_per_sm = (uint64_t)v; break;
    case DT_PROP_SMS: p->num_sms = v; break;
    default: break;
    }
}

/* Each attribute on its own: hipDeviceProp_t changes across DTK releases,
   the attribute numbers do not (since HIP 5.0). What cannot be read is
   absent, and the trace says which and why. */
void dt__rt_read_devices(dt_session *s, const dt_rt_hip *hip)
{
    if (!hip->get_device_count) return; /* the missing symbols are noted */
    int version = 0;
    if (hip->runtime_get_version(&version) != 0 || version < DT_HIP_ATTR_NUMBERING_SINCE) {
        dt__core_note(s, "device_properties", "the HIP runtime reports version %d, older than 5.0 or unknown: its "
                        "device attribute numbers are not the ones devtrace knows, so device properties are absent",
                        version);
        return;
    }
    int count = 0;
    int rc = hip->get_device_count(&count);
    if (rc != 0) {
        dt__core_note(s, "device_properties", "hipGetDeviceCount failed (%d): device properties absent", rc);
        return;
    }
    char missing[400] = "";
    for (int dev = 0; dev < count && dev < DT_MAX_DEVICES; dev++) {
        dt_device_props p;
        memset(&p, 0, sizeof p);
        p.valid = 1;
        p.id = (uint32_t)dev;
        dt_hip_name_fn name = hip->device_get_name;
        if (!name || name(p.name, (int)sizeof p.name, dev) != 0) p.absent |= DT_PROP_NAME;
        p.name[sizeof p.name - 1] = '\0';
        size_t bytes = 0;
        dt_hip_total_mem_fn total = hip->device_total_mem;
        if (total && total(&bytes, dev) == 0) p.total_global_mem = bytes;
        else p.absent |= DT_PROP_TOTAL_MEM;
        for (size_t i = 0; i < ATTRIBUTES; i++) {
            int v = 0;
            if (hip->device_get_attribute(&v, attributes[i].attribute, dev) == 0 && v >= 0)
                set_property(&p, attributes[i].bit, v);
            else
                p.absent |= attributes[i].bit;
        }
        /* the largest per-block amount is the opt-in limit where HIP gives none */
        if ((p.absent & DT_PROP_SHARED_PER_BLOCK_OPTIN) && !(p.absent & DT_PROP_SHARED_PER_BLOCK)) {
            p.shared_mem_per_block_optin = p.shared_mem_per_block;
            p.absent &= ~(unsigned)DT_PROP_SHARED_PER_BLOCK_OPTIN;
        }
        for (size_t i = 0; i < ATTRIBUTES; i++) {
            if (!(p.absent & attributes[i].bit) || strstr(missing, attributes[i].what)) continue;
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s%s", used ? ", " : "", attributes[i].what);
        }
        dt__core_set_device(s, &p);
    }
    if (missing[0])
        dt__core_note(s, "device_properties", "hipDeviceGetAttribute gave no value for %s: absent from the trace",
                        missing);
}

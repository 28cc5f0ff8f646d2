/*
 * A kernel's args (layout.h): its launch configuration and, as Kineto
 * estimates it, its occupancy; the words of copy and memset names.
 */
#include <math.h>
#include <string.h>

#include "export/layout/layout.h"

/* As Kineto's torch-cuda path: blocks/warps per SM from the grid over all
   SMs; the occupancy is the resident fraction of the SM's threads, with the
   resident block count limited by threads, blocks, registers and shared
   memory per SM. */
static void compute_occupancy(const dt_device_props *d, const dt_launch_config *lc, dt_layout_kernel *o)
{
    o->occupancy_valid = 0;
    if (!d || !d->valid || d->num_sms <= 0 || d->warp_size <= 0 || d->max_threads_per_sm <= 0)
        return;
    if (lc->block[0] <= 0 || lc->block[1] <= 0 || lc->block[2] <= 0 ||
        lc->grid[0] <= 0 || lc->grid[1] <= 0 || lc->grid[2] <= 0)
        return;
    double threads = (double)lc->block[0] * lc->block[1] * lc->block[2];
    double blocks = (double)lc->grid[0] * lc->grid[1] * lc->grid[2];
    double blocks_per_sm = blocks / d->num_sms;
    double warps_per_sm = blocks_per_sm * threads / d->warp_size;

    double warps_per_block = ceil(threads / d->warp_size);
    double limit = floor((double)d->max_threads_per_sm / d->warp_size / warps_per_block);
    if (d->max_threads_per_block > 0 && threads > d->max_threads_per_block)
        limit = 0;
    if (d->max_blocks_per_sm > 0 && d->max_blocks_per_sm < limit)
        limit = d->max_blocks_per_sm;
    if (lc->registers_per_thread > 0 && d->regs_per_sm > 0) {
        /* registers are allocated per warp in units of 256 */
        double per_warp = ceil((double)lc->registers_per_thread * d->warp_size / 256.0) * 256.0;
        double by_regs = floor(floor(d->regs_per_sm / per_warp) / warps_per_block);
        if (d->regs_per_block > 0 && per_warp * warps_per_block > d->regs_per_block)
            by_regs = 0;
        if (by_regs < limit)
            limit = by_regs;
    }
    uint64_t smem = (uint64_t)lc->static_shared_memory + lc->dynamic_shared_memory;
    if (smem > 0 && d->shared_mem_per_sm > 0) {
        double by_smem = floor((double)d->shared_mem_per_sm / (double)smem);
        if (by_smem < limit)
            limit = by_smem;
    }
    double resident = blocks_per_sm < limit ? blocks_per_sm : limit;
    double pct = resident * threads / d->max_threads_per_sm * 100.0;
    if (!(blocks_per_sm < 1e12) || !(warps_per_sm < 1e12) || !(pct >= 0 && pct < 1e9))
        return;
    o->occupancy_valid = 1;
    o->blocks_per_sm_e6 = (uint64_t)llround(blocks_per_sm * 1e6);
    o->warps_per_sm_e6 = (uint64_t)llround(warps_per_sm * 1e6);
    o->occupancy_pct = lround(pct);
}

void dt__wr_layout_kernel_get(const dt_layout *l, unsigned device, uint32_t config, dt_layout_kernel *out)
{
    const dt_recording *rec = l->rec;
    memset(out, 0, sizeof *out);
    out->has_config = config < rec->launches->count;
    if (out->has_config)
        out->config = rec->launches->configs[config];
    out->has_resources = out->has_config && rec->kernel_resources;
    if (!out->has_resources)
        return;
    const dt_device_props *d = device < DT_MAX_DEVICES ? &rec->devices[device] : NULL;
    compute_occupancy(d, &out->config, out);
}

static const char *const copy_kind_names[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
static const char *const memory_kind_names[] = {"Unknown", "Pageable", "Pinned", "Device", "Array", "Managed"};

const char *dt__wr_layout_copy_kind_name(unsigned k)
{
    return k < sizeof copy_kind_names / sizeof *copy_kind_names ? copy_kind_names[k] : "Unknown";
}

const char *dt__wr_layout_memory_kind_name(unsigned k)
{
    return k < sizeof memory_kind_names / sizeof *memory_kind_names ? memory_kind_names[k] : "Unknown";
}

/*
 * The runtime work a workload asks of the emulated devices: kernel
 * launches (and graphs of them), copies and fills, synchronization,
 * collectives, allocations and memory pools; each an API call (api.c) whose
 * work queues the device record.
 */
#include <pthread.h>

#include "api.h"
#include "names.h"
#include "records.h"
#include "work.h"

EMU_API int emu_device_count(void)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    int n = core_state.device_count;
    pthread_mutex_unlock(&core_state.lock);
    return n;
}

EMU_API int emu_set_device_count(int count)
{
    emu_init();
    if (count < 1 || count > EMU_MAX_DEVICES)
        return EMU_EINVAL;
    pthread_mutex_lock(&core_state.lock);
    core_state.device_count = count;
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

int emu_core_work_running(void)
{
    emu_init();
    int running = 0;
    pthread_mutex_lock(&core_state.lock);
    uint64_t now = core_device_now();
    for (int d = 0; d < core_state.device_count && !running; d++)
        for (int st = 0; st < EMU_MAX_STREAMS && !running; st++)
            running = core_state.ready[d][st] > now;
    pthread_mutex_unlock(&core_state.lock);
    return running;
}

typedef struct kernel_work {
    const emu_kernel_desc *d;
} kernel_work;

static uint64_t kernel_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const emu_kernel_desc *d = ((kernel_work *)arg)->d;
    pthread_mutex_lock(&core_state.lock);
    emu_activity a = { .kind = EMU_REC_KERNEL, .correlation = corr };
    a.device = (uint32_t)d->device;
    a.context = (uint32_t)d->device + 1;
    a.stream = (uint32_t)d->stream;
    core_schedule_locked(d->device, d->stream, d->duration_ns, &a.start, &a.end);
    a.u.kernel.name = core_intern_name(d->name);
    if (!a.u.kernel.name)
        a.u.kernel.name = "";
    for (int i = 0; i < 3; i++) {
        a.u.kernel.grid[i] = d->grid[i];
        a.u.kernel.block[i] = d->block[i];
    }
    a.u.kernel.registers_per_thread = d->registers_per_thread ? d->registers_per_thread : 32;
    a.u.kernel.static_shared_memory = d->static_shared_memory;
    a.u.kernel.dynamic_shared_memory = d->dynamic_shared_memory;
    a.u.kernel.queued = api_start;
    uint64_t sub = core_device_now();
    a.u.kernel.submitted = sub < a.start ? sub : a.start;
    a.u.kernel.completed = 0;
    a.u.kernel.grid_id = ++core_state.grid_id[d->device];
    core_produce_device_locked(&a);
    pthread_mutex_unlock(&core_state.lock);
    return 0;
}

EMU_API int emu_launch_kernel_desc(const emu_kernel_desc *desc)
{
    emu_init();
    if (!desc || !core_device_ok(desc->device) || desc->stream < 0 || desc->stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    kernel_work w = { desc };
    /* CUDA 13: the call site pushes the launch configuration, the launch
       stub pops it, then launches (vendors without these make no call) */
    emu_call_args push = { .op = EMU_OP_PUSH_CALL_CONFIGURATION, .device = desc->device, .stream = desc->stream };
    emu_call_args pop = push;
    pop.op = EMU_OP_POP_CALL_CONFIGURATION;
    (void)core_api_call(&push, NULL, NULL, NULL); /* a failure is the launch's too */
    (void)core_api_call(&pop, NULL, NULL, NULL);
    emu_call_args args = { .op = EMU_OP_LAUNCH_KERNEL, .kernel = desc, .device = desc->device, .stream = desc->stream };
    return core_api_call(&args, desc->name ? desc->name : "", kernel_work_fn, &w);
}

EMU_API int emu_launch_kernel(int device, int stream, const char *name, const int grid[3],
                              const int block[3], uint64_t duration_ns)
{
    emu_kernel_desc d = { .device = device, .stream = stream, .name = name,
                          .duration_ns = duration_ns };
    for (int i = 0; i < 3; i++) {
        d.grid[i] = grid ? grid[i] : 1;
        d.block[i] = block ? block[i] : 1;
    }
    return emu_launch_kernel_desc(&d);
}

typedef struct copy_work {
    int device, stream, copy_kind, async;
    uint64_t bytes, duration;
    uint32_t value;
    int is_memset;
} copy_work;

static uint64_t copy_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    copy_work *w = arg;
    (void)api_start;
    pthread_mutex_lock(&core_state.lock);
    emu_activity a = { .kind = w->is_memset ? EMU_REC_MEMSET : EMU_REC_MEMCPY, .correlation = corr };
    a.device = (uint32_t)w->device;
    a.context = (uint32_t)w->device + 1;
    a.stream = (uint32_t)w->stream;
    core_schedule_locked(w->device, w->stream, w->duration, &a.start, &a.end);
    if (w->is_memset) {
        a.u.memset.bytes = w->bytes;
        a.u.memset.value = w->value;
        a.u.memset.memory = EMU_MEM_DEVICE;
        a.u.memset.async = w->async;
    } else {
        a.u.memcpy.copy_kind = (emu_copy_kind)w->copy_kind;
        a.u.memcpy.bytes = w->bytes;
        a.u.memcpy.async = w->async;
        int host_mem = w->async ? EMU_MEM_PINNED : EMU_MEM_PAGEABLE;
        switch (w->copy_kind) {
        case EMU_COPY_HTOD: a.u.memcpy.src_memory = host_mem; a.u.memcpy.dst_memory = EMU_MEM_DEVICE; break;
        case EMU_COPY_DTOH: a.u.memcpy.src_memory = EMU_MEM_DEVICE; a.u.memcpy.dst_memory = host_mem; break;
        case EMU_COPY_HTOH: a.u.memcpy.src_memory = host_mem; a.u.memcpy.dst_memory = host_mem; break;
        default: a.u.memcpy.src_memory = EMU_MEM_DEVICE; a.u.memcpy.dst_memory = EMU_MEM_DEVICE; break;
        }
        a.u.memcpy.src_device = (uint32_t)w->device;
        a.u.memcpy.dst_device = (uint32_t)w->device;
    }
    uint64_t end = a.end;
    core_produce_device_locked(&a);
    pthread_mutex_unlock(&core_state.lock);
    return w->async ? 0 : end;
}

EMU_API int emu_memcpy(int device, int stream, int copy_kind, uint64_t bytes,
                       uint64_t duration_ns, int async)
{
    emu_init();
    if (!core_device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS ||
        copy_kind < EMU_COPY_HTOD || copy_kind > EMU_COPY_PTOP)
        return EMU_EINVAL;
    copy_work w = { device, stream, copy_kind, async != 0, bytes, duration_ns, 0, 0 };
    emu_call_args args = { .op = async ? EMU_OP_MEMCPY_ASYNC : EMU_OP_MEMCPY, .bytes = bytes,
                           .copy_kind = copy_kind, .device = device, .stream = stream };
    return core_api_call(&args, NULL, copy_work_fn, &w);
}

EMU_API int emu_memset(int device, int stream, uint64_t bytes, uint32_t value,
                       uint64_t duration_ns, int async)
{
    emu_init();
    if (!core_device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    copy_work w = { device, stream, 0, async != 0, bytes, duration_ns, value, 1 };
    emu_call_args args = { .op = async ? EMU_OP_MEMSET_ASYNC : EMU_OP_MEMSET, .bytes = bytes, .value = value,
                           .device = device, .stream = stream };
    return core_api_call(&args, NULL, copy_work_fn, &w);
}

typedef struct sync_work {
    int device, stream;
} sync_work;

static uint64_t sync_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    sync_work *w = arg;
    (void)corr;
    (void)api_start;
    uint64_t target = 0;
    pthread_mutex_lock(&core_state.lock);
    if (w->stream >= 0) {
        target = core_state.ready[w->device][w->stream];
    } else {
        for (int s = 0; s < EMU_MAX_STREAMS; s++)
            if (core_state.ready[w->device][s] > target)
                target = core_state.ready[w->device][s];
    }
    pthread_mutex_unlock(&core_state.lock);
    return target;
}

EMU_API int emu_synchronize(int device, int stream)
{
    emu_init();
    if (stream < -1 || stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    if (device == -1) {
        int n = emu_device_count();
        for (int d = 0; d < n; d++) {
            sync_work w = { d, stream };
            emu_call_args args = { .op = stream >= 0 ? EMU_OP_STREAM_SYNCHRONIZE : EMU_OP_DEVICE_SYNCHRONIZE,
                                   .device = d, .stream = stream };
            int rc = core_api_call(&args, NULL, sync_work_fn, &w);
            if (rc != EMU_OK)
                return rc;
        }
        return EMU_OK;
    }
    if (!core_device_ok(device))
        return EMU_EINVAL;
    sync_work w = { device, stream };
    emu_call_args args = { .op = stream >= 0 ? EMU_OP_STREAM_SYNCHRONIZE : EMU_OP_DEVICE_SYNCHRONIZE,
                           .device = device, .stream = stream };
    return core_api_call(&args, NULL, sync_work_fn, &w);
}

static uint64_t collective_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const emu_collective_desc *c = arg;
    (void)api_start;
    pthread_mutex_lock(&core_state.lock);
    emu_activity a = { .kind = EMU_REC_COLLECTIVE, .correlation = corr };
    a.device = (uint32_t)c->device;
    a.context = (uint32_t)c->device + 1;
    a.stream = (uint32_t)c->stream;
    core_schedule_locked(c->device, c->stream, c->duration_ns, &a.start, &a.end);
    const char *name = core_intern_name(c->name), *group = core_intern_name(c->group),
               *alg = core_intern_name(c->algorithm);
    a.u.collective.name = name ? name : "";
    a.u.collective.group = group ? group : "";
    a.u.collective.algorithm = alg ? alg : "";
    a.u.collective.data_type = c->data_type;
    a.u.collective.count = c->count;
    core_produce_device_locked(&a);
    pthread_mutex_unlock(&core_state.lock);
    return 0;
}

typedef struct memory_work {
    struct live_block block;
    int is_free;
} memory_work;

/* The record of an allocation or free: the host-side record of the call,
   written at once. */
static uint64_t memory_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const memory_work *w = arg;
    pthread_mutex_lock(&core_state.lock);
    emu_activity a = { .kind = EMU_REC_MEMORY, .correlation = corr, .start = api_start, .end = core_device_now() };
    a.device = (uint32_t)w->block.device;
    a.context = (uint32_t)w->block.device + 1;
    a.u.memory.address = w->block.address;
    a.u.memory.bytes = w->block.bytes;
    a.u.memory.memory = w->block.memory;
    a.u.memory.is_free = w->is_free;
    a.u.memory.process = core_process_id();
    core_produce_now_locked(&a);
    pthread_mutex_unlock(&core_state.lock);
    return 0;
}

EMU_API int emu_malloc(int device, int memory, uint64_t bytes, uint64_t *address)
{
    emu_init();
    if (!address || !core_device_ok(device) || (memory != EMU_MEM_DEVICE && memory != EMU_MEM_PINNED) || bytes == 0 ||
        bytes > (UINT64_C(1) << 40))
        return EMU_EINVAL;
    pthread_mutex_lock(&core_state.lock);
    if (emu_core_grow_for_one((void **)&core_state.blocks, &core_state.block_cap, core_state.block_n,
                          sizeof *core_state.blocks, 16) != 0) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_EINVAL;
    }
    /* 2 MB-aligned, as the device allocator hands out large blocks */
    if (!core_state.next_address) core_state.next_address = UINT64_C(0x124000000000);
    memory_work w = { { core_state.next_address, bytes, device, memory }, 0 };
    core_state.next_address += (bytes + (UINT64_C(1) << 21) - 1) & ~((UINT64_C(1) << 21) - 1);
    core_state.blocks[core_state.block_n++] = w.block;
    pthread_mutex_unlock(&core_state.lock);
    *address = w.block.address;
    emu_call_args args = { .op = EMU_OP_MALLOC, .bytes = bytes, .device = device };
    return core_api_call(&args, NULL, memory_work_fn, &w);
}

EMU_API int emu_free(uint64_t address)
{
    emu_init();
    pthread_mutex_lock(&core_state.lock);
    size_t i = 0;
    while (i < core_state.block_n && core_state.blocks[i].address != address)
        i++;
    if (i == core_state.block_n) {
        pthread_mutex_unlock(&core_state.lock);
        return EMU_EINVAL;
    }
    memory_work w = { core_state.blocks[i], 1 };
    core_state.blocks[i] = core_state.blocks[--core_state.block_n];
    pthread_mutex_unlock(&core_state.lock);
    emu_call_args args = { .op = EMU_OP_FREE, .bytes = w.block.bytes, .device = w.block.device };
    return core_api_call(&args, NULL, memory_work_fn, &w);
}

typedef struct pool_work {
    int device, op;
    uint64_t address, bytes;
} pool_work;

/* A pool's record: the host-side record of the call, written at once. */
static uint64_t pool_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    const pool_work *w = arg;
    pthread_mutex_lock(&core_state.lock);
    emu_activity a = { .kind = EMU_REC_MEMORY_POOL, .correlation = corr, .start = api_start, .end = core_device_now() };
    a.device = (uint32_t)w->device;
    a.context = (uint32_t)w->device + 1;
    a.u.memory.address = w->address;
    a.u.memory.bytes = w->bytes;
    a.u.memory.memory = EMU_MEM_DEVICE;
    a.u.memory.pool_op = w->op;
    a.u.memory.process = core_process_id();
    core_produce_now_locked(&a);
    pthread_mutex_unlock(&core_state.lock);
    return 0;
}

EMU_API int emu_memory_pool(int device, int op, uint64_t address, uint64_t bytes)
{
    emu_init();
    static const emu_op ops[] = {[EMU_POOL_CREATED] = EMU_OP_MEM_POOL_CREATE,
                                 [EMU_POOL_DESTROYED] = EMU_OP_MEM_POOL_DESTROY,
                                 [EMU_POOL_TRIMMED] = EMU_OP_MEM_POOL_TRIM};
    if (!core_device_ok(device) || op < EMU_POOL_CREATED || op > EMU_POOL_TRIMMED || !address)
        return EMU_EINVAL;
    pool_work w = { device, op, address, bytes };
    emu_call_args args = { .op = ops[op], .bytes = bytes, .device = device };
    /* a vendor with no such call makes no record either */
    if (emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, ops[op], 0) || emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, ops[op], 0))
        core_api_call(&args, NULL, pool_work_fn, &w);
    return EMU_OK;
}

typedef struct graph_work {
    const emu_kernel_desc *d;
    int kernels;
} graph_work;

static uint64_t graph_work_fn(void *arg, uint32_t corr, uint64_t api_start)
{
    graph_work *g = arg;
    kernel_work one = { g->d };
    for (int i = 0; i < g->kernels; i++)
        kernel_work_fn(&one, corr, api_start);
    return 0;
}

EMU_API int emu_graph_launch(int device, int stream, int kernels, uint64_t duration_ns)
{
    emu_init();
    if (!core_device_ok(device) || stream < 0 || stream >= EMU_MAX_STREAMS || kernels < 1 || kernels > 64)
        return EMU_EINVAL;
    emu_kernel_desc d = { .device = device, .stream = stream, .name = "graph_kernel", .grid = {1, 1, 1},
                          .block = {1, 1, 1}, .duration_ns = duration_ns };
    graph_work w = { &d, kernels };
    emu_call_args args = { .op = EMU_OP_GRAPH_LAUNCH, .device = device, .stream = stream };
    /* a vendor with no such call launches nothing */
    if (emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, EMU_OP_GRAPH_LAUNCH, 0) ||
        emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, EMU_OP_GRAPH_LAUNCH, 0))
        core_api_call(&args, NULL, graph_work_fn, &w);
    return EMU_OK;
}

EMU_API int emu_collective(const emu_collective_desc *desc)
{
    emu_init();
    if (!desc || !core_device_ok(desc->device) || desc->stream < 0 || desc->stream >= EMU_MAX_STREAMS)
        return EMU_EINVAL;
    emu_call_args args = { .op = EMU_OP_COLLECTIVE, .device = desc->device, .stream = desc->stream };
    return core_api_call(&args, NULL, collective_work_fn, (void *)desc);
}

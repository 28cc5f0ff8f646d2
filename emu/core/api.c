/*
 * One emulated API call: the runtime call (if the vendor has one for this
 * operation) wrapping the driver call (likewise), the subscriber's
 * callbacks at ENTER and EXIT, the work queued in between, the
 * external-correlation and API records written at EXIT; and the ids
 * records carry.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "buffers.h"
#include "clock.h"
#include "faults.h"
#include "lifecycle.h"
#include "null_client.h"
#include "records.h"
#include "subscriber.h"

static _Atomic uint32_t g_next_correlation = 1;
/* A vendor library asks the kernel for ids once, not once per record. */
_Thread_local __attribute__((tls_model("local-dynamic"))) uint32_t emu_core_thread_tid;
static _Atomic uint32_t g_pid;
/* the client's callback runs for an API call's exit on this thread */
static _Thread_local int t_in_api_exit;

uint32_t core_process_id(void)
{
    uint32_t pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
    if (!pid) {
        pid = (uint32_t)getpid();
        atomic_store_explicit(&g_pid, pid, memory_order_relaxed);
    }
    return pid;
}

void core_ids_forked(void)
{
    emu_core_thread_tid = 0;
    atomic_store(&g_pid, 0);
}

static uint32_t thread_id_locked(void)
{
    if (core_state.tid_type == EMU_TID_SYSTEM)
        return emu_core_system_tid();
    return (uint32_t)(uintptr_t)pthread_self();
}

static uint32_t next_correlation(void)
{
    uint32_t c;
    do
        c = atomic_fetch_add_explicit(&g_next_correlation, 1, memory_order_relaxed);
    while (c == 0);
    return c;
}

uint32_t emu_core_next_correlation(void)
{
    return next_correlation();
}

typedef struct api_frame {
    uint32_t correlation;
    uint64_t start;
    uint64_t cdata;
    int32_t retval;
    int callbacks;        /* deliver callbacks for this call */
    emu_generic_fn cb;
    void *userdata;
} api_frame;

/* The subscriber's callback for one site of a call, if it wants it. */
static void invoke(api_frame *f, emu_domain domain, uint32_t cbid, emu_site site,
                   const char *symbol, uint32_t context_uid, const emu_call_args *args)
{
    if (!f->callbacks || !f->cb)
        return;
    pthread_mutex_lock(&core_state.lock);
    int on = core_state.subscribed && core_state.domain_on[domain] && core_state.cb == f->cb;
    if (on)
        core_state.stats.callbacks_delivered++;
    pthread_mutex_unlock(&core_state.lock);
    if (!on || f->cb == core_null_client_callback)
        return;
    emu_api_call call = {
        .domain = domain,
        .cbid = cbid,
        .site = site,
        .function_name = emu_vendor_impl.callback_name(domain, cbid),
        .symbol_name = symbol,
        .correlation = f->correlation,
        .context_uid = context_uid,
        .correlation_data = &f->cdata,
        .function_params = NULL,
        .return_value = &f->retval,
        .args = args,
    };
    t_in_api_exit = site == EMU_SITE_EXIT;
    emu_vendor_impl.invoke_callback(f->cb, f->userdata, &call);
    t_in_api_exit = 0;
}

/* The device's context, created at its first API call after the driver
   initialised (a call on no device in particular: device 0's), as the CUDA
   runtime creates its primary context. */
static _Atomic uint32_t g_contexts; /* bit per device */

static void create_context(int device)
{
    if (!emu_vendor_impl.context_created)
        return;
    uint32_t bit = 1u << (device >= 0 && device < EMU_MAX_DEVICES ? device : 0);
    if ((atomic_load_explicit(&g_contexts, memory_order_relaxed) & bit) || (atomic_fetch_or(&g_contexts, bit) & bit))
        return;
    emu_vendor_impl.context_created(device >= 0 ? device : 0);
}

int emu_core_in_api_exit(void)
{
    return t_in_api_exit;
}

static void api_begin(api_frame *f)
{
    memset(f, 0, sizeof(*f));
    f->correlation = next_correlation();
    pthread_mutex_lock(&core_state.lock);
    core_state.stats.api_calls++;
    f->callbacks = !core_take_fault_locked(EMU_FAULT_NO_CALLBACKS);
    f->cb = core_state.subscribed ? core_state.cb : NULL;
    f->userdata = core_state.cb_userdata;
    pthread_mutex_unlock(&core_state.lock);
    f->start = core_device_now();
}

static int api_filtered_locked(emu_domain domain, uint32_t cbid)
{
    return cbid < EMU_API_FILTER_IDS && (core_state.api_off[domain][cbid / 8] >> (cbid % 8)) & 1u;
}

static void api_record_locked(const api_frame *f, emu_domain domain, uint32_t cbid, uint64_t end)
{
    emu_rec_kind kind = domain == EMU_DOMAIN_RUNTIME ? EMU_REC_RUNTIME : EMU_REC_DRIVER;
    /* filtered before it reaches a buffer: neither produced nor counted */
    if (api_filtered_locked(domain, cbid))
        return;
    if (core_state.enabled[EMU_REC_EXTERNAL]) {
        /* once: each use of a thread-local costs a lookup in a library */
        core_ext_stacks *stacks = &core_thread_ext;
        int any = 0;
        for (uint32_t k = 0; emu_vendor_impl.external_top && k < EMU_EXT_KINDS; k++) {
            uint64_t id;
            if (!emu_vendor_impl.external_top(k, &id))
                continue;
            any = 1;
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = k;
            ext.u.external.external_id = id;
            core_produce_now_locked(&ext);
        }
        for (uint32_t k = 0; !emu_vendor_impl.external_top && k < EMU_EXT_KINDS; k++) {
            /* the null client stands for a tracer that keeps an id pushed */
            int null_client = k == 0 && core_state.request == core_null_client_request && core_state.null_client_keeps_id;
            if (stacks->depth[k] == 0 && !null_client)
                continue;
            any = 1;
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = k;
            ext.u.external.external_id = stacks->depth[k] ? *core_ext_entry(stacks, k, stacks->depth[k] - 1) : 1;
            core_produce_now_locked(&ext);
        }
        if (!any && emu_vendor_impl.external_kind_when_empty) {
            emu_activity ext = { .kind = EMU_REC_EXTERNAL, .correlation = f->correlation };
            ext.u.external.external_kind = emu_vendor_impl.external_kind_when_empty;
            core_produce_now_locked(&ext);
        }
    }
    emu_activity a = { .kind = kind, .start = f->start, .end = end, .correlation = f->correlation };
    a.u.api.cbid = cbid;
    a.u.api.process = core_process_id();
    a.u.api.thread = thread_id_locked();
    a.u.api.return_value = 0;
    core_produce_now_locked(&a);
}

/* A call that fails before it reaches the driver (in a child whose runtime
   cannot be used, or a synchronisation during a graph capture): the
   vendor's API callbacks still see it enter and leave, with the vendor's
   error `result`; it does no work and writes no record. Returns status. */
static int failed_call(emu_domain domain, uint32_t cbid, const char *symbol, uint32_t context_uid,
                       const emu_call_args *args, int32_t result, int status)
{
    if (!cbid)
        return status;
    api_frame f;
    api_begin(&f);
    f.retval = result;
    invoke(&f, domain, cbid, EMU_SITE_ENTER, symbol, context_uid, args);
    invoke(&f, domain, cbid, EMU_SITE_EXIT, symbol, context_uid, args);
    return status;
}

/* One emulated API call: the runtime call (if the vendor has one for this
   operation) wrapping the driver call (likewise); `work` queues the device
   activity between ENTER and EXIT and returns the device time the call must
   wait for before returning (0: none). */
int core_api_call(const emu_call_args *args, const char *symbol, core_work_fn work, void *arg)
{
    emu_op op = args->op;
    emu_copy_kind ck = (emu_copy_kind)args->copy_kind;
    /* the emulator's contexts: one per device, uid device + 1 */
    uint32_t context_uid = (uint32_t)args->device + 1;
    core_driver_init();
    create_context(args->device);
    if (emu_vendor_impl.runtime_call)
        emu_vendor_impl.runtime_call();
    uint32_t rt_cbid = emu_vendor_impl.cbid(EMU_DOMAIN_RUNTIME, op, ck);
    uint32_t drv_cbid = emu_vendor_impl.cbid(EMU_DOMAIN_DRIVER, op, ck);
    if (!rt_cbid && !drv_cbid && !work)
        return EMU_OK; /* a call this vendor does not make */
    if (core_forked_unusable) /* the runtime fails before it reaches the driver */
        return rt_cbid ? failed_call(EMU_DOMAIN_RUNTIME, rt_cbid, symbol, context_uid, args, EMU_EUNUSABLE, EMU_EUNUSABLE)
                       : failed_call(EMU_DOMAIN_DRIVER, drv_cbid, symbol, context_uid, args, EMU_EUNUSABLE, EMU_EUNUSABLE);
    if (core_capturing && (op == EMU_OP_STREAM_SYNCHRONIZE || op == EMU_OP_DEVICE_SYNCHRONIZE)) {
        int32_t e = emu_vendor_impl.capture_error;
        return rt_cbid ? failed_call(EMU_DOMAIN_RUNTIME, rt_cbid, symbol, context_uid, args, e, EMU_ECAPTURE)
                       : failed_call(EMU_DOMAIN_DRIVER, drv_cbid, symbol, context_uid, args, e, EMU_ECAPTURE);
    }
    api_frame rt, drv;
    uint32_t device_corr = 0;
    uint64_t api_start = 0;
    if (rt_cbid) {
        api_begin(&rt);
        invoke(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, EMU_SITE_ENTER, symbol, context_uid, args);
        device_corr = rt.correlation;
        api_start = rt.start;
    }
    if (drv_cbid) {
        api_begin(&drv);
        invoke(&drv, EMU_DOMAIN_DRIVER, drv_cbid, EMU_SITE_ENTER, symbol, context_uid, args);
        if (!device_corr) {
            device_corr = drv.correlation;
            api_start = drv.start;
        }
    }
    if (!device_corr) {
        device_corr = next_correlation();
        api_start = core_device_now();
    }
    uint64_t wait_until = work ? work(arg, device_corr, api_start) : 0;
    if (wait_until)
        core_wait_device_time(wait_until);
    if (drv_cbid) {
        invoke(&drv, EMU_DOMAIN_DRIVER, drv_cbid, EMU_SITE_EXIT, symbol, context_uid, args);
        uint64_t end = core_device_now();
        pthread_mutex_lock(&core_state.lock);
        api_record_locked(&drv, EMU_DOMAIN_DRIVER, drv_cbid, end);
        core_update_pending_stat_locked();
        pthread_mutex_unlock(&core_state.lock);
    }
    if (rt_cbid) {
        invoke(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, EMU_SITE_EXIT, symbol, context_uid, args);
        uint64_t end = core_device_now();
        pthread_mutex_lock(&core_state.lock);
        api_record_locked(&rt, EMU_DOMAIN_RUNTIME, rt_cbid, end);
        core_update_pending_stat_locked();
        pthread_mutex_unlock(&core_state.lock);
    }
    /* Device work that has already finished is written now, on this
       thread, as a vendor library does when the call returns; waking the
       worker for each call would cost a context switch per launch. */
    pthread_mutex_lock(&core_state.lock);
    if (core_state.pending.n && core_state.pending.v[0].ready_at <= core_device_now()) {
        core_write_ready_locked(0, core_device_now());
        core_update_pending_stat_locked();
    }
    pthread_mutex_unlock(&core_state.lock);
    return EMU_OK;
}

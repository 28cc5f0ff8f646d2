/*
 * Fuzz the rocprofiler-sdk decoder: arbitrary bytes as the record-header
 * array of one buffer callback and the records it points to.
 *
 * Input: byte 0 chooses the session's limits, the library's release (both
 * correlation layouts) and whether some hipMemset* sizes are known; byte 1
 * the number of headers; then 4 bytes per header (category, kind, the
 * record's offset in the rest, which may be unaligned); the rest is the
 * records' bytes. What the SDK guarantees is kept: a payload is readable
 * for the size its first word gives (a larger size is cut to the bytes
 * there are), and a header may be NULL or point nowhere only as the SDK
 * never does, which the decoder must survive anyway. The decoder knows two
 * GPUs and a CPU, and kernels with awkward names (NULL, mangled, invalid
 * UTF-8, very long, a fill kernel); an agent built from the input's first
 * bytes is added too, its name pointers replaced by those strings.
 * hipLaunchKernel's records await their dispatch (the smallest table of
 * launches): no more calls are awaited at the end than the input's API
 * records and the calls noted by hand.
 */
#include "backends/rocprofiler_sdk.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char long_name[9000];
static const char *const names[] = {
    NULL,
    "",
    "plain_kernel",
    "_Z5saxpyifPKfPf",
    "__amd_rocclr_fillBufferAligned",
    "__amd_rocclr_fillBufferAligned.kd",
    "_Z5saxpyifPKfPf.kd",
    ".kd",
    "_Z",
    "_Z999999999999999999x",
    "\xff\xfe\xc3\x28 invalid utf-8 \xe2\x82",
    "name with \"quotes\" and \\ and \n newline",
    long_name,
};
enum { NAME_COUNT = sizeof names / sizeof names[0] };
static const char *api_names[] = {"hipApiName", "hipLaunchKernel", NULL, "hipMemsetAsync"};

/* the decoder reads no record longer than this (its RSDK_MAX_RECORD_SIZE) */
#define MAX_READ 4096u
#define SLOT (MAX_READ + 16u)

static dt_rsdk_decoder g_d;
static uint32_t g_base_agents;

static void setup(void)
{
    memset(long_name, 'k', sizeof long_name - 1);
    memcpy(long_name, "_Z", 2);
    dt__rsdk_decoder_init(&g_d, 0);
    char missing[256] = "";
    dt_device_props p;
    for (uint64_t h = 0; h < 3; h++) {
        rsdk_agent a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.id.handle = 0x1000 + h;
        a.type = h ? RSDK_AGENT_TYPE_GPU : RSDK_AGENT_TYPE_CPU;
        a.wave_front_size = 64;
        dt__rsdk_decoder_add_agent(&g_d, &a, sizeof a, &p, missing, sizeof missing);
    }
    for (uint64_t id = 0; id < NAME_COUNT; id++) {
        rsdk_kernel_symbol k;
        memset(&k, 0, sizeof k);
        k.size = id % 2 ? sizeof k : offsetof(rsdk_kernel_symbol, sgpr_count);
        k.kernel_id = id;
        k.kernel_name = names[id];
        k.arch_vgpr_count = (uint32_t)id * 8;
        k.group_segment_size = (uint32_t)id * 1024;
        dt__rsdk_decoder_add_kernel(&g_d, &k);
    }
    g_d.api_names = dt__malloc(sizeof api_names);
    if (g_d.api_names) {
        memcpy(g_d.api_names, api_names, sizeof api_names);
        g_d.api_name_count = sizeof api_names / sizeof api_names[0];
    }
    static const int32_t launch_ops[] = {1}; /* hipLaunchKernel */
    dt__rsdk_decoder_match_launches(&g_d, launch_ops, 1, 1024);
    g_base_agents = g_d.agent_count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    if (!long_name[0]) setup();
    uint8_t cfg = size ? data[0] : 0;
    size_t n = size > 1 ? data[1] % 65 : 0;
    size_t skip = size < 2 ? size : 2 + 4 * n;
    if (skip > size) {
        n = (size - 2) / 4;
        skip = 2 + 4 * n;
    }
    const uint8_t *desc = data + 2;
    size_t len = size - skip;
    /* the records: an 8-aligned copy (offsets may still be unaligned) */
    uint8_t *buf = aligned_alloc(8, (len + 8) & ~(size_t)7);
    if (!buf) return 0;
    if (len) memcpy(buf, data + skip, len);
    /* what earlier inputs added to the decoder's tables is forgotten */
    g_d.agent_count = g_base_agents;
    g_d.gpu_count = 2;
    g_d.queue_count = 0;
    g_d.version = cfg & 4 ? RSDK_ANCESTOR_VERSION : RSDK_VERSION(0, 6, 0);
    uint64_t noted = cfg & 8 ? 16 : 0;
    if (cfg & 8)
        for (uint64_t corr = 1; corr <= 16; corr++) {
            if (corr <= 8) dt__rsdk_decoder_note_fill(&g_d, corr, corr * 100, 7, 1);
            else dt__rsdk_decoder_note_launch(&g_d, corr);
        }
    if ((cfg & 16) && len >= sizeof(rsdk_agent)) {
        rsdk_agent a;
        memcpy(&a, buf, sizeof a);
        a.name = names[a.cu_count % NAME_COUNT];
        a.product_name = names[a.simd_count % NAME_COUNT];
        a.vendor_name = a.model_name = NULL;
        a.mem_banks = a.caches = a.io_links = a.pc_sampling_configs = NULL;
        char missing[256] = "";
        dt_device_props p;
        dt__rsdk_decoder_add_agent(&g_d, &a, sizeof a, &p, missing, sizeof missing);
    }
    /* each record is copied to a slot of its own, at its offset's
       alignment, so that one record's size cut cannot change another's */
    rsdk_record_header headers[64];
    rsdk_record_header *list[64];
    uint8_t *slots = n ? aligned_alloc(8, n * SLOT) : NULL;
    if (n && !slots) {
        free(buf);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *h = desc + 4 * i;
        headers[i].category = h[0] % 4;
        headers[i].kind = h[1] < 32 ? h[1] : RSDK_BUFFER_KERNEL_DISPATCH;
        size_t off = len ? ((size_t)h[2] | (size_t)h[3] << 8) % len : 0;
        size_t avail = len - off;
        headers[i].payload = NULL;
        if (avail >= sizeof(uint64_t)) {
            uint8_t *p = slots + i * SLOT + (off & 7);
            size_t copy = avail < SLOT - 8 ? avail : SLOT - 8;
            memcpy(p, buf + off, copy);
            uint64_t sz;
            memcpy(&sz, p, sizeof sz);
            /* the SDK's payloads hold their size; a size beyond any record's
               is refused unread, so it stays */
            if (sz > copy && sz <= MAX_READ) {
                sz = copy;
                memcpy(p, &sz, sizeof sz);
            }
            headers[i].payload = p;
        }
        list[i] = (h[0] & 0x80) ? NULL : &headers[i];
    }
    dt_config c;
    dt_config_init(&c);
    c.backend = "null";
    c.capture = cfg & 32 ? DT_CAPTURE_MEMSET | DT_CAPTURE_RUNTIME : DT_CAPTURE_ALL;
    if (cfg & 1) c.max_events = 3;
    if (cfg & 2) c.max_duration_ns = 1000;
    dt_session *s = NULL;
    if (dt_session_create(&c, &s) == DT_OK) {
        dt__rsdk_decode(&g_d, s, list, n);
        dt_session_destroy(s);
    }
    /* calls left behind would be taken by the next input's records */
    if (dt__rsdk_decoder_take_awaiting(&g_d) > n + noted) abort();
    free(slots);
    free(buf);
    return 0;
}

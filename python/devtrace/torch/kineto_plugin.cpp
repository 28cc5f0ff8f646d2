/*
 * devtrace as a Kineto child profiler: torch.profiler starts and stops a
 * devtrace session, torch's op and user-scope correlation ids go onto
 * devtrace's external-correlation stack, and at the end every device
 * activity devtrace kept becomes a Kineto activity linked to the op that
 * launched it.
 *
 * Built by devtrace.torch with torch.utils.cpp_extension against the
 * installed torch's own headers (so the C++ ABI matches), and loaded after
 * libdevtrace: the dt_* symbols resolve to the libdevtrace the Python
 * package loaded (or the one `devtrace record` preloaded), so the plugin and
 * the Python API share one correlation stack and one session slot.
 *
 * Kineto's limits and how they are met:
 *  - the linked-activity callback takes an int32 id: an External id that
 *    does not fit is not passed (it would resolve to another op); such
 *    activities stay unlinked and are counted;
 *  - user scopes are devtrace ranges (ids from 2^48) mapped back to torch's
 *    own user-scope ids, never truncated;
 *  - GenericTraceActivity::id is int32: the vendor correlation id goes into
 *    the "correlation" arg in full, and into id only when it fits;
 *  - flow ids are 32-bit and torch asserts flow starts are unique: each pair
 *    gets a fresh id from a process-wide counter above 2^31;
 *  - Kineto's JSON writer turns every backslash of an arg into '/', so
 *    quoted values and names are cleaned of quotes, backslashes and control
 *    characters here rather than escaped.
 */
#include <libkineto.h>
#include <output_base.h>

#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#define DEVTRACE_HAVE_PU1_REGISTRY 1
#endif

#include <devtrace/devtrace.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {

using libkineto::ActivityLogger;
using libkineto::ActivityType;
using libkineto::CpuTraceBuffer;
using libkineto::DeviceInfo;
using libkineto::GenericTraceActivity;
using libkineto::IActivityProfiler;
using libkineto::IActivityProfilerSession;
using libkineto::ITraceActivity;
using libkineto::ResourceInfo;
using libkineto::TraceStatus;

constexpr int64_t kDeviceSortBase = 5000000; /* device rows after every host pid */
constexpr uint32_t kFlowIdBase = 1u << 31;  /* above CUPTI's correlation ids */
constexpr int kMaxScopeDepth = 64;

struct Settings {
    std::mutex mu;
    std::string backend;
    bool enabled = false;
};
Settings g_settings;
std::once_flag g_registered;
std::atomic<int> g_profilers{0};
std::atomic<uint32_t> g_next_flow{kFlowIdBase};
std::mutex g_report_mu;
std::string g_report = "{}";

/* Entries this plugin pushed on the calling thread: a pop that Kineto
   forwards for a push made before the session existed is not ours. */
thread_local int t_op_depth = 0;
thread_local int t_scope_depth = 0;

std::string json_string(const std::string &s)
{
    std::string out = "\"";
    for (unsigned char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += static_cast<char>(ch);
        } else if (ch < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            out += buf;
        } else {
            out += static_cast<char>(ch);
        }
    }
    return out + "\"";
}

/* What survives Kineto's writer unchanged (see the note at the top). */
std::string clean_text(const char *s)
{
    std::string out = s ? s : "";
    for (char &ch : out) {
        unsigned char u = static_cast<unsigned char>(ch);
        if (ch == '"') ch = '\'';
        else if (ch == '\\') ch = '/';
        else if (u < 0x20 || u == 0x7f) ch = ' ';
    }
    return out;
}

/* What torch.profiler is handed: device work an op launched (kernels,
   copies, fills, collectives) and the API calls that launched it, as the
   library classes each kind (dt_event_kind_class); synchronisations,
   overhead and memory records stay devtrace's. */
bool is_device_kind(int k)
{
    return dt_event_kind_class(static_cast<dt_event_kind>(k)) & DT_EVENT_CLASS_LAUNCHED;
}

bool is_api_kind(int k)
{
    return dt_event_kind_class(static_cast<dt_event_kind>(k)) & DT_EVENT_CLASS_API;
}

/* Kineto's type of each kind handed to it: a collective is a kernel, as
   Kineto has NCCL's (and as devtrace's own trace writes it). */
ActivityType activity_type(int kind)
{
    if (is_api_kind(kind))
        return kind == DT_EVENT_DRIVER ? ActivityType::PRIVATEUSE1_DRIVER : ActivityType::PRIVATEUSE1_RUNTIME;
    if (kind == DT_EVENT_MEMCPY) return ActivityType::GPU_MEMCPY;
    if (kind == DT_EVENT_MEMSET) return ActivityType::GPU_MEMSET;
    return ActivityType::CONCURRENT_KERNEL;
}

constexpr unsigned kKindSlots = 32; /* kinds are small numbers: every one counts */

struct Counts {
    uint64_t kept[kKindSlots] = {};
    uint64_t outside_window = 0;     /* outside torch.profiler's capture window */
    uint64_t linked = 0;             /* device and API activities linked to an op */
    uint64_t unlinked_too_large = 0; /* distinct External ids beyond the callback's int32 */
    uint64_t unresolved = 0;         /* distinct External ids torch did not know */
    uint64_t flows = 0;
    uint64_t user_spans = 0;         /* gpu_user_annotation spans */
    uint64_t pop_mismatch = 0;       /* pops Kineto forwarded that were not ours */
};

/* A device activity or API call as torch.profiler gets it. Its args are
   kept as the typed fields they are written from, and written as JSON text
   when Kineto or torch asks for them (torch's collation at stop, the
   trace's write), rather than held per event as a map of strings. A
   collective's text args (few per run) go into the base class's map. */
class Activity final : public GenericTraceActivity {
public:
    Activity(const libkineto::TraceSpan &span, ActivityType type, const std::string &name, const dt_event &e)
        : GenericTraceActivity(span, type, name), kind_(e.kind), device_(e.device), stream_(e.stream),
          context_(e.context), correlation_(e.correlation)
    {
        startTime = static_cast<int64_t>(e.start_ns);
        endTime = static_cast<int64_t>(e.end_ns);
        id = e.correlation <= static_cast<uint64_t>(INT32_MAX) ? static_cast<int32_t>(e.correlation) : 0;
        if (is_api_kind(e.kind)) {
            device = static_cast<int32_t>(e.process);
            resource = static_cast<int32_t>(e.thread);
            threadId = static_cast<int32_t>(e.thread);
            u_.api.cbid = e.u.api.cbid;
            u_.api.return_code = e.u.api.return_code;
            return;
        }
        device = static_cast<int32_t>(e.device);
        resource = static_cast<int32_t>(e.stream);
        if (e.kind == DT_EVENT_KERNEL) {
            const auto &k = e.u.kernel;
            std::memcpy(u_.kernel.grid, k.grid, sizeof k.grid);
            std::memcpy(u_.kernel.block, k.block, sizeof k.block);
            u_.kernel.registers = k.registers_per_thread;
            u_.kernel.shared = static_cast<uint64_t>(k.static_shared_memory) + k.dynamic_shared_memory;
            u_.kernel.queued = k.queued_ns == DT_TIMESTAMP_UNKNOWN ? 0 : k.queued_ns;
        } else if (e.kind != DT_EVENT_COLLECTIVE) {
            u_.bytes = e.kind == DT_EVENT_MEMCPY ? e.u.memcpy.bytes : e.u.memset.bytes;
        }
    }

    /* args kept in the base class's map besides the typed ones */
    void has_text_args() { text_args_ = true; }

    const std::string metadataJson() const override
    {
        std::string out;
        out.reserve(192);
        each_arg([&](const char *key, std::string_view value) {
            if (!out.empty()) out += ", ";
            out += '"';
            out += key;
            out += "\": ";
            out.append(value.data(), value.size());
        });
        if (text_args_) {
            std::string more = GenericTraceActivity::metadataJson();
            if (!more.empty()) out += (out.empty() ? "" : ", ") + more;
        }
        return out;
    }

    const std::string getMetadataValue(const std::string &key) const override
    {
        std::string found;
        bool hit = false;
        each_arg([&](const char *k, std::string_view value) {
            if (!hit && key == k) {
                found.assign(value.data(), value.size());
                hit = true;
            }
        });
        if (!hit && text_args_) return GenericTraceActivity::getMetadataValue(key);
        return found;
    }

private:
    /* f(key, value's JSON text) for each typed arg */
    template <class F>
    void each_arg(F &&f) const
    {
        char buf[96];
        auto num = [&](const char *key, auto v) {
            auto r = std::to_chars(buf, buf + sizeof buf, v);
            f(key, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
        };
        auto triple = [&](const char *key, const int32_t (&v)[3]) {
            char *p = buf, *end = buf + sizeof buf;
            *p++ = '[';
            for (int i = 0; i < 3; i++) {
                if (i) *p++ = ',', *p++ = ' ';
                p = std::to_chars(p, end, v[i]).ptr;
            }
            *p++ = ']';
            f(key, std::string_view(buf, static_cast<size_t>(p - buf)));
        };
        if (is_api_kind(kind_)) {
            num("cbid", u_.api.cbid);
            num("correlation", correlation_);
            num("return code", u_.api.return_code);
            return;
        }
        num("device", device_);
        num("stream", stream_);
        num("context", context_);
        num("correlation", correlation_);
        if (kind_ == DT_EVENT_KERNEL) {
            triple("grid", u_.kernel.grid);
            triple("block", u_.kernel.block);
            num("registers per thread", u_.kernel.registers);
            num("shared memory", u_.kernel.shared);
            num("queued", u_.kernel.queued);
        } else if (kind_ != DT_EVENT_COLLECTIVE) {
            uint64_t dur = static_cast<uint64_t>(endTime - startTime);
            num("bytes", u_.bytes);
            /* as Kineto's own addMetadata writes a double */
            auto r = fmt::format_to_n(buf, sizeof buf, "{}", dur ? static_cast<double>(u_.bytes) / dur : 0.0);
            f("memory bandwidth (GB/s)", std::string_view(buf, std::min(r.size, sizeof buf)));
        }
    }

    int kind_;
    uint32_t device_, stream_, context_;
    uint64_t correlation_;
    bool text_args_ = false;
    union {
        struct {
            int32_t grid[3], block[3];
            uint32_t registers;
            uint64_t shared, queued;
        } kernel;
        uint64_t bytes;
        struct {
            uint32_t cbid;
            int32_t return_code;
        } api;
    } u_{};
};

class Session final : public IActivityProfilerSession {
public:
    explicit Session(std::string backend) : backend_(std::move(backend))
    {
        dt_config cfg;
        dt_config_init(&cfg);
        cfg.backend = backend_.c_str();
        if (dt_session_create(&cfg, &s_) != DT_OK) fail(dt_last_error());
    }

    ~Session() override { dt_session_destroy(s_); }

    void start() override
    {
        if (!s_) return;
        if (dt_session_start(s_) != DT_OK) {
            fail(dt_last_error());
            return;
        }
        running_ = true;
        status_ = TraceStatus::RECORDING;
    }

    void stop() override
    {
        if (!running_) return;
        running_ = false;
        if (dt_session_stop(s_) != DT_OK) fail(dt_last_error());
        else status_ = TraceStatus::PROCESSING;
    }

    /* what went wrong, and every record devtrace could not keep */
    std::vector<std::string> errors() override
    {
        std::vector<std::string> out = errors_;
        uint64_t total = s_ ? dt_session_loss_total(s_) : 0;
        if (total) {
            std::string why;
            for (int r = 0; r < DT_LOSS_COUNT; r++) {
                uint64_t n = dt_session_loss(s_, static_cast<dt_loss_reason>(r));
                if (n) why += std::string(why.empty() ? "" : ", ") + dt_loss_reason_name(static_cast<dt_loss_reason>(r)) +
                              " " + std::to_string(n);
            }
            out.push_back("devtrace (" + backend_ + "): " + std::to_string(total) + " records lost: " + why);
        }
        return out;
    }

    void processTrace(ActivityLogger &logger) override { processTrace(logger, nullptr, INT64_MIN, INT64_MAX); }

    void processTrace(ActivityLogger &logger, libkineto::getLinkedActivityCallback linked, int64_t window_start,
                      int64_t window_end) override;

    std::unique_ptr<DeviceInfo> getDeviceInfo() override
    {
        if (devices_.empty()) return nullptr;
        return std::make_unique<DeviceInfo>(device_info(*devices_.begin()));
    }

    std::vector<ResourceInfo> getResourceInfos() override
    {
        std::vector<ResourceInfo> rows;
        for (const auto &ds : streams_)
            rows.push_back(ResourceInfo{ds.second, ds.second, ds.first, "stream " + std::to_string(ds.second)});
        return rows;
    }

    /* The last call Kineto makes: the activities move to the trace, and the
       devtrace session's memory is freed now rather than at the next run. */
    std::unique_ptr<CpuTraceBuffer> getTraceBuffer() override
    {
        publish_report();
        dt_session_destroy(s_);
        s_ = nullptr;
        return std::move(buffer_);
    }

    void pushCorrelationId(uint64_t id) override
    {
        if (dt_external_push(id) == DT_OK) t_op_depth++;
    }

    void popCorrelationId() override
    {
        if (t_op_depth == 0 || dt_external_pop(nullptr) != DT_OK) {
            std::lock_guard<std::mutex> g(mu_);
            counts_.pop_mismatch++;
            return;
        }
        t_op_depth--;
    }

    void pushUserCorrelationId(uint64_t id) override
    {
        uint64_t range = 0;
        if (dt_range_push(nullptr, &range) != DT_OK) return;
        t_scope_depth++;
        std::lock_guard<std::mutex> g(mu_);
        range_to_scope_[range] = id;
    }

    void popUserCorrelationId() override
    {
        if (t_scope_depth == 0 || dt_range_pop() != DT_OK) {
            std::lock_guard<std::mutex> g(mu_);
            counts_.pop_mismatch++;
            return;
        }
        t_scope_depth--;
    }

    std::string getDeviceProperties() override
    {
        if (!s_) return "";
        std::string text(dt_session_device_properties(s_, nullptr, 0) + 1, '\0');
        text.resize(dt_session_device_properties(s_, &text[0], text.size()));
        return text;
    }

    /* Called after stop and before processTrace: the session's own losses. */
    std::unordered_map<std::string, std::string> getMetadata() override
    {
        /* "writer" tells `devtrace check` that this key sits in torch's trace */
        std::string v = "{\"writer\": \"devtrace.torch\", \"version\": " + json_string(dt_version()) + ", \"backend\": " +
                        json_string(s_ ? dt_session_backend(s_) : backend_.c_str());
        if (!errors_.empty()) v += ", \"error\": " + json_string(errors_.front());
        v += ", \"loss\": " + loss_json() + ", \"notes\": " + notes_json() + "}";
        return {{"devtrace", v}};
    }

private:
    void fail(const std::string &why)
    {
        errors_.push_back("devtrace (" + backend_ + "): " + why);
        status_ = TraceStatus::ERROR;
        /* torch.profiler has no channel for a child profiler's errors: say it once */
        std::fprintf(stderr, "devtrace.torch: device activity is not recorded: %s\n", why.c_str());
    }

    std::string loss_json() const
    {
        std::string v = "{";
        uint64_t total = 0;
        for (int r = 0; r < DT_LOSS_COUNT; r++) {
            uint64_t n = s_ ? dt_session_loss(s_, static_cast<dt_loss_reason>(r)) : 0;
            total += n;
            v += json_string(dt_loss_reason_name(static_cast<dt_loss_reason>(r))) + ": " + std::to_string(n) + ", ";
        }
        return v + "\"total\": " + std::to_string(total) + "}";
    }

    /* What the session could not record and why ("kinds": MSPTI's copies
       and memsets without libmspti.so in LD_PRELOAD), as devtrace's own
       trace writes it. Kineto's writer takes metadata values as they are,
       so these are escaped (its backslash rule is for args). */
    std::string notes_json() const
    {
        std::string v = "{";
        const char *key, *text;
        for (size_t i = 0; s_ && dt_session_note_at(s_, i, &key, &text); i++)
            v += std::string(i ? ", " : "") + json_string(key) + ": " + json_string(text);
        return v + "}";
    }

    DeviceInfo device_info(int64_t device) const
    {
        return DeviceInfo{device, kDeviceSortBase + device, device_name_, device_name_ + " " + std::to_string(device)};
    }

    const ITraceActivity *resolve(uint64_t ext, libkineto::getLinkedActivityCallback &linked);
    void scopes_of(uint64_t ext, std::vector<uint64_t> &scopes) const;
    void publish_report();

    dt_session *s_ = nullptr;
    std::string backend_;
    std::string device_name_ = "device";
    bool running_ = false;
    std::vector<std::string> errors_;
    std::mutex mu_;
    std::unordered_map<uint64_t, uint64_t> range_to_scope_; /* devtrace range id -> torch user-scope id */
    std::unordered_map<uint64_t, uint64_t> range_parent_;   /* devtrace range id -> enclosing entry */
    std::unordered_map<uint64_t, const ITraceActivity *> resolved_;
    std::unique_ptr<CpuTraceBuffer> buffer_;
    std::set<int64_t> devices_;
    std::set<std::pair<int64_t, int64_t>> streams_;
    Counts counts_;
};

/* The op (or user scope) an External id names, through Kineto's callback;
   each id that cannot be resolved is counted once. */
const ITraceActivity *Session::resolve(uint64_t ext, libkineto::getLinkedActivityCallback &linked)
{
    auto hit = resolved_.find(ext);
    if (hit != resolved_.end()) return hit->second;
    const ITraceActivity *act = nullptr;
    uint64_t id = ext;
    bool known = true;
    if (ext >= DT_RANGE_ID_BASE) {
        /* launched directly inside a user scope: the scope is the host event
           (a devtrace.range of the Python API is none of torch's) */
        std::lock_guard<std::mutex> g(mu_);
        auto it = range_to_scope_.find(ext);
        known = it != range_to_scope_.end();
        if (known) id = it->second;
    }
    if (!known) counts_.unresolved++;
    else if (id > static_cast<uint64_t>(INT32_MAX)) counts_.unlinked_too_large++;
    else if (!linked || !(act = linked(static_cast<int32_t>(id)))) counts_.unresolved++;
    resolved_[ext] = act;
    return act;
}

/* The torch user scopes enclosing External id ext, innermost first. */
void Session::scopes_of(uint64_t ext, std::vector<uint64_t> &scopes) const
{
    scopes.clear();
    uint64_t cur = ext;
    for (int depth = 0; depth < kMaxScopeDepth; depth++) {
        if (cur < DT_RANGE_ID_BASE) {
            uint64_t range;
            if (!dt_session_external_range(s_, cur, &range)) return;
            cur = range;
        }
        auto scope = range_to_scope_.find(cur);
        if (scope != range_to_scope_.end()) scopes.push_back(scope->second);
        auto parent = range_parent_.find(cur);
        if (parent == range_parent_.end()) return;
        cur = parent->second;
    }
}

void Session::processTrace(ActivityLogger &logger, libkineto::getLinkedActivityCallback linked,
                           int64_t window_start, int64_t window_end)
{
    buffer_ = std::make_unique<CpuTraceBuffer>();
    if (!s_) return;
    std::vector<dt_event> ev(dt_session_event_count(s_));
    ev.resize(dt_session_events(s_, 0, ev.size(), ev.data()));
    auto in_window = [&](const dt_event &e) {
        return static_cast<int64_t>(e.start_ns) >= window_start && static_cast<int64_t>(e.end_ns) <= window_end;
    };

    /* one arrow per correlation that kept both sides: from its API call to
       its earliest device activity, as devtrace's own exporter draws it */
    constexpr size_t kNone = SIZE_MAX;
    std::unordered_map<uint64_t, std::pair<size_t, size_t>> sides; /* correlation -> (api, device) */
    for (size_t i = 0; i < ev.size(); i++) {
        const dt_event &e = ev[i];
        if (e.kind == DT_EVENT_RANGE && e.u.range.has_parent) range_parent_[e.u.range.range_id] = e.u.range.parent_id;
        bool api = is_api_kind(e.kind);
        if (!e.correlation || !in_window(e) || (!api && !is_device_kind(e.kind))) continue;
        auto &pair = sides.emplace(e.correlation, std::make_pair(kNone, kNone)).first->second;
        size_t &side = api ? pair.first : pair.second;
        if (side == kNone || e.start_ns < ev[side].start_ns) side = i;
    }
    std::vector<uint64_t> flow_at(ev.size()); /* event -> flow id << 1 | is start; 0: none */
    for (const auto &kv : sides) {
        if (kv.second.first == kNone || kv.second.second == kNone) continue;
        uint32_t id = g_next_flow.fetch_add(1);
        if (id < kFlowIdBase) { /* wrapped past 2^32: start over above 2^31 */
            g_next_flow.store(kFlowIdBase + 1);
            id = kFlowIdBase;
        }
        flow_at[kv.second.first] = static_cast<uint64_t>(id) << 1 | 1;
        flow_at[kv.second.second] = static_cast<uint64_t>(id) << 1;
        counts_.flows++;
    }

    {
        char props[1024];
        dt_session_device_properties(s_, props, sizeof props);
        const char *name = std::strstr(props, "\"name\":\"");
        if (name) {
            name += 8;
            const char *end = std::strchr(name, '"');
            if (end && end > name) device_name_ = clean_text(std::string(name, end).c_str());
        }
    }

    std::map<std::tuple<uint64_t, int64_t, int64_t>, std::pair<int64_t, int64_t>> spans; /* (scope, dev, stream) */
    std::vector<uint64_t> scopes;
    std::unordered_map<const char *, std::string> names; /* the session's interned name -> as Kineto gets it */
    for (size_t i = 0; i < ev.size(); i++) {
        const dt_event &e = ev[i];
        bool device = is_device_kind(e.kind), api = is_api_kind(e.kind);
        if (!device && !api) continue; /* ranges and ops are torch's own host events */
        if (!in_window(e)) {
            counts_.outside_window++;
            continue;
        }
        if (static_cast<unsigned>(e.kind) < kKindSlots) counts_.kept[e.kind]++;
        auto name = names.find(e.name);
        if (name == names.end()) name = names.emplace(e.name, clean_text(e.name)).first;
        buffer_->activities.push_back(std::make_unique<Activity>(buffer_->span, activity_type(e.kind), name->second, e));
        Activity &a = static_cast<Activity &>(*buffer_->activities.back());
        if (device) {
            devices_.insert(e.device);
            streams_.insert({e.device, e.stream});
            if (e.kind == DT_EVENT_COLLECTIVE) {
                const auto &c = e.u.collective;
                a.has_text_args();
                a.addMetadataQuoted("Collective name", name->second);
                if (c.count) a.addMetadata("In msg nelems", c.count);
                if (c.data_type[0]) a.addMetadataQuoted("dtype", clean_text(c.data_type));
                if (c.group[0]) a.addMetadataQuoted("Process Group Name", clean_text(c.group));
                if (c.algorithm[0]) a.addMetadataQuoted("algorithm", clean_text(c.algorithm));
                if (c.bytes) a.addMetadata("bytes", c.bytes);
            }
        }
        if (e.has_external) {
            a.linked = resolve(e.external_id, linked);
            if (a.linked) counts_.linked++;
        }
        if (flow_at[i]) {
            a.flow.id = flow_at[i] >> 1;
            a.flow.type = libkineto::kLinkAsyncCpuGpu;
            a.flow.start = flow_at[i] & 1;
        }
        /* the activity stays where it is (the buffer goes to Kineto with
           getTraceBuffer): the logger keeps a pointer, not a copy */
        logger.handleActivity(a);
        if (device && e.has_external) {
            scopes_of(e.external_id, scopes);
            for (uint64_t scope : scopes) {
                auto key = std::make_tuple(scope, static_cast<int64_t>(e.device), static_cast<int64_t>(e.stream));
                auto it = spans.find(key);
                if (it == spans.end()) spans.emplace(key, std::make_pair(a.startTime, a.endTime));
                else {
                    it->second.first = std::min(it->second.first, a.startTime);
                    it->second.second = std::max(it->second.second, a.endTime);
                }
            }
        }
    }

    /* record_function scopes on the device rows, as Kineto draws them for CUDA */
    for (const auto &sp : spans) {
        uint64_t scope = std::get<0>(sp.first);
        if (scope > static_cast<uint64_t>(INT32_MAX) || !linked) continue;
        const ITraceActivity *host = linked(static_cast<int32_t>(scope));
        if (!host) continue;
        buffer_->emplace_activity(buffer_->span, ActivityType::GPU_USER_ANNOTATION, clean_text(host->name().c_str()));
        GenericTraceActivity &a = *buffer_->activities.back();
        a.device = static_cast<int32_t>(std::get<1>(sp.first));
        a.resource = static_cast<int32_t>(std::get<2>(sp.first));
        a.startTime = sp.second.first;
        a.endTime = sp.second.second;
        a.id = static_cast<int32_t>(scope);
        counts_.user_spans++;
        logger.handleActivity(a);
    }
    /* Kineto names one device row through getDeviceInfo(); the others here */
    for (int64_t d : devices_)
        if (d != *devices_.begin()) logger.handleDeviceInfo(device_info(d), window_start);
}

void Session::publish_report()
{
    static const char *const kinds[DT_EVENT_DRIVER + 1] = {nullptr,  "kernel", "memcpy",
                                                           "memset", "runtime", "driver"};
    std::string r = "{\"backend\": " + json_string(s_ ? dt_session_backend(s_) : backend_.c_str());
    r += ", \"errors\": [";
    std::vector<std::string> errs = errors();
    for (size_t i = 0; i < errs.size(); i++) r += (i ? ", " : "") + json_string(errs[i]);
    r += "], \"kept\": {";
    for (int k = DT_EVENT_KERNEL; k <= DT_EVENT_DRIVER; k++)
        r += std::string(k > DT_EVENT_KERNEL ? ", " : "") + json_string(kinds[k]) + ": " + std::to_string(counts_.kept[k]);
    r += "}, \"outside_window\": " + std::to_string(counts_.outside_window);
    r += ", \"linked\": " + std::to_string(counts_.linked);
    r += ", \"unlinked_too_large\": " + std::to_string(counts_.unlinked_too_large);
    r += ", \"unresolved\": " + std::to_string(counts_.unresolved);
    r += ", \"flows\": " + std::to_string(counts_.flows);
    r += ", \"user_spans\": " + std::to_string(counts_.user_spans);
    r += ", \"pop_mismatch\": " + std::to_string(counts_.pop_mismatch);
    r += ", \"loss\": " + loss_json() + ", \"notes\": " + notes_json() + "}";
    std::lock_guard<std::mutex> g(g_report_mu);
    g_report = r;
}

class Profiler final : public IActivityProfiler {
public:
    const std::string &name() const override { return name_; }
    const std::set<ActivityType> &availableActivities() const override { return types_; }

    std::unique_ptr<IActivityProfilerSession> configure(const std::set<ActivityType> &,
                                                        const libkineto::Config &) override
    {
        /* registered with Kineto and with torch's PrivateUse1 registry: the
           first instance records, a second one stays out */
        if (index_ != 0) return nullptr;
        std::lock_guard<std::mutex> g(g_settings.mu);
        if (!g_settings.enabled) return nullptr;
        return std::make_unique<Session>(g_settings.backend);
    }

    std::unique_ptr<IActivityProfilerSession> configure(int64_t, int64_t, const std::set<ActivityType> &types,
                                                        const libkineto::Config &config) override
    {
        return configure(types, config);
    }

private:
    const int index_ = g_profilers.fetch_add(1);
    const std::string name_ = "devtrace";
    const std::set<ActivityType> types_ = {ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                           ActivityType::GPU_MEMSET, ActivityType::GPU_USER_ANNOTATION,
                                           ActivityType::PRIVATEUSE1_RUNTIME, ActivityType::PRIVATEUSE1_DRIVER};
};

std::unique_ptr<IActivityProfiler> make_profiler()
{
    return std::make_unique<Profiler>();
}

} // namespace

extern "C" {

/* Record with this backend in every later torch.profiler run. Registers
   with Kineto once per process (a factory cannot be unregistered). */
__attribute__((visibility("default"))) int devtrace_torch_enable(const char *backend)
{
    {
        std::lock_guard<std::mutex> g(g_settings.mu);
        g_settings.backend = backend ? backend : "auto";
        g_settings.enabled = true;
    }
    std::call_once(g_registered, [] {
        libkineto::api().registerProfilerFactory(make_profiler);
#ifdef DEVTRACE_HAVE_PU1_REGISTRY
        auto &registry = torch::profiler::impl::PrivateUse1ProfilerRegistry::instance();
        if (!registry.hasFactory()) registry.registerFactory(make_profiler);
#endif
    });
    return 0;
}

__attribute__((visibility("default"))) void devtrace_torch_disable(void)
{
    std::lock_guard<std::mutex> g(g_settings.mu);
    g_settings.enabled = false;
}

/* 1 while Kineto has a trace under way (from the warm-up of a scheduled
   torch.profiler run, when it configures its child profilers, to its end):
   a plugin registered or enabled then is not asked for that run. */
__attribute__((visibility("default"))) int devtrace_torch_profiler_active(void)
{
    auto &api = libkineto::api();
    return api.isProfilerInitialized() && api.activityProfiler().isActive() ? 1 : 0;
}

/* 1 when torch's PrivateUse1 profiler registry was available at build time. */
__attribute__((visibility("default"))) int devtrace_torch_has_privateuse1_registry(void)
{
#ifdef DEVTRACE_HAVE_PU1_REGISTRY
    return 1;
#else
    return 0;
#endif
}

/* The last session's account, as JSON, snprintf-style. */
__attribute__((visibility("default"))) size_t devtrace_torch_report(char *buf, size_t size)
{
    std::lock_guard<std::mutex> g(g_report_mu);
    if (buf && size) {
        std::size_t n = g_report.size() < size - 1 ? g_report.size() : size - 1;
        std::memcpy(buf, g_report.data(), n);
        buf[n] = 0;
    }
    return g_report.size();
}

} /* extern "C" */

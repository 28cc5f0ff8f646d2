"""The reports, each written once as SQL over one relation, `events` (the
dataset's events table with its `rank` column).

Every report is two queries: `per_rank`, which groups by rank (and finer)
and so gives the same rows whether it runs over the whole dataset (DuckDB)
or over one rank's files at a time (a Dask worker), and `combine`, which
runs over the union of per_rank's rows (`r`) and orders them, or computes
what needs every rank (the stragglers). Times are integer nanoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Dict, Optional, Tuple

# Collective libraries, by the prefix of their device work's names:
# NVIDIA NCCL and AMD RCCL (whose kernels keep NCCL's names), Huawei HCCL
# (Ascend's kernels hcom_<op>_, Hccl<Op>), Moore Threads / MetaX MCCL,
# Enflame ECCL, Cambricon CNCL, Kunlunxin BKCL, Iluvatar IXCCL.
COMM_NAME_RE = r"^(nccl|rccl|mccl|eccl|cncl|bkcl|ixccl|hccl|hcom_)"
# HTA's memory kernels (names of copies and sets as Kineto writes them)
MEMORY_NAME_RE = r"^(Memcpy|Memset|dma)"
# HTA's default for telling a kernel wait from other idleness (its 30 "ns"
# are microseconds on its time axis)
KERNEL_WAIT_NS = 30_000
# A step of a rank is a straggler when its excess over the other ranks'
# median for that step (excess = t / others' median - 1) is an outlier among
# every rank's and step's excess in the job: its modified z-score (Iglewicz
# and Hoaglin's, 0.6745 (x - median) / MAD, pooled over the job; where MAD
# is 0, (x - median) / (1.253314 MeanAD)) exceeds this. Against the other
# ranks rather than all of them, and pooled over the steps, it works from 2
# ranks: a z-score over the ranks of one step alone is at most 0.6745 with
# two, and MAD is 0 with up to four equal ranks.
STRAGGLER_Z = 3.5

# The device work of each rank, classified. `hta` gives HTA 0.5's view of
# the same events: its time axis (microseconds, start rounded up and end
# down), its device events (those with a stream, below) and its filter (only
# work launched before the last ProfilerStep starts, when there are two steps
# or more).
GPU = """
gpu_all AS (
  SELECT rank, index, pid, device, stream, name, kind, correlation, external_id, collective, bytes, step,
         {start} AS s, {end} AS e
  FROM events
  WHERE {work} AND ts IS NOT NULL AND dur IS NOT NULL
),
steps_cpu AS (
  SELECT rank, ts AS s, ts + dur AS e,
         CAST(regexp_extract(name, 'ProfilerStep\\s*#\\s*(\\d+)', 1) AS BIGINT) AS step
  FROM events
  WHERE regexp_matches(name, '^ProfilerStep\\s*#\\s*\\d+')
    AND kind NOT IN ('kernel', 'memcpy', 'memset', 'gpu_user_annotation') AND dur IS NOT NULL
),
last_step AS (
  SELECT rank, max({start_of_s}) AS last_start, count(*) AS n FROM steps_cpu GROUP BY rank
),
-- each distinct (name, kind, collective or not) classified once: the
-- names' patterns run over a few hundred rows, not every kernel
classes AS (
  SELECT name, kind, coll,
         CASE WHEN coll OR regexp_matches(n.name, '{comm}', 'i') THEN 'communication' {classes} END AS class
  FROM (SELECT DISTINCT name, kind, collective IS NOT NULL AS coll FROM gpu_all) n
),
-- inlined where a report reads it more than once: a scan of the Parquet
-- files again costs less than holding every device row's columns
gpu AS NOT MATERIALIZED (
  SELECT g.*, e - s AS dur, c.class
  FROM gpu_all g JOIN classes c ON c.name = g.name AND c.kind = g.kind AND c.coll = (g.collective IS NOT NULL)
  {hta_filter}
),
-- every device work, classified: HTA's view included, but without its rule
-- of the last step (the breakdowns' alone)
work AS NOT MATERIALIZED (
  SELECT g.*, e - s AS dur, c.class
  FROM gpu_all g JOIN classes c ON c.name = g.name AND c.kind = g.kind AND c.coll = (g.collective IS NOT NULL)
)"""

HTA_FILTER = """
  LEFT JOIN last_step l USING (rank)
  WHERE l.n IS NULL OR l.n < 2 OR g.correlation IN (
    SELECT c.correlation FROM events c
    WHERE c.rank = g.rank AND c.kind NOT IN ('kernel', 'memcpy', 'memset', 'gpu_user_annotation')
      AND c.correlation IS NOT NULL AND {start_of_c} < l.last_start)"""


# whole microseconds, in integers (a double cannot hold epoch nanoseconds)
def hta_start(ts: str = "ts") -> str:
    return "(%s + (((1000 - %s %% 1000) %% 1000) + 1000) %% 1000)" % (ts, ts)


HTA_START = hta_start()
HTA_END = "((ts + dur) - ((((ts + dur) % 1000) + 1000) % 1000))"

# Device work: the kinds of every category Kineto writes for it (the
# reader's: kernel, gpu_memcpy, gpu_memset, MTIA's mtia_ccp_events, old
# Kineto's Kernel, Memcpy, Memset).
WORK_KINDS = "('kernel', 'memcpy', 'memset')"
DEVICE_WORK = "kind IN %s" % WORK_KINDS
CLASSES = ("WHEN n.kind IN ('memcpy', 'memset') OR regexp_matches(n.name, '%s') THEN 'memory' "
           "ELSE 'computation'" % MEMORY_NAME_RE)
# HTA's device events are those whose stream it reads as an integer other
# than -1 (Kineto's stream of Event Sync and Context Sync; a stream it cannot
# read, ROCm's "0x0" on its runtime calls, is -1 too): synchronisations and
# events of categories devtrace does not classify included. Events devtrace
# knows run on the host (API calls, operators, ranges) are not device events
# here, whatever stream they carry. What is neither memory nor computation by
# its name is HTA's "other".
HTA_WORK = "stream IS NOT NULL AND stream <> -1 AND kind IN ('kernel', 'memcpy', 'memset', 'sync', 'other')"
HTA_CLASSES = ("WHEN regexp_matches(n.name, '%s') THEN 'memory' "
               "WHEN regexp_matches(n.name, '^(.*Memcpy|Memset|.*Sync)') THEN 'other' "
               "ELSE 'computation'" % MEMORY_NAME_RE)


def gpu_cte(hta: bool) -> str:
    if hta:
        return GPU.format(start=HTA_START, end=HTA_END, work=HTA_WORK, classes=HTA_CLASSES, comm=COMM_NAME_RE,
                          start_of_s=hta_start("s"),
                          hta_filter=HTA_FILTER.format(start_of_c=hta_start("c.ts")))
    return GPU.format(start="ts", end="ts + dur", work=DEVICE_WORK, classes=CLASSES, comm=COMM_NAME_RE,
                      start_of_s="s", hta_filter="")


# The time covered by the intervals (rank, key, s, e) of relation SRC, per
# (rank, key), in one window: sorted by start, interval i adds what it
# reaches past every earlier one, max(0, e_i - max(s_i, max(e_1..e_i-1))).
def covered(src: str, key: str) -> str:
    return f"""(
  SELECT rank, {key}, sum(greatest(e - greatest(s, coalesce(prev_e, s)), 0)) AS busy FROM (
    SELECT rank, {key}, s, e,
           max(e) OVER (PARTITION BY rank, {key} ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e
    FROM {src})
  GROUP BY rank, {key})"""


@dataclass(frozen=True)
class Report:
    """A report: its per-rank query (SQL over `events`), or a per-rank
    Python function (`py`, "module:function", called with a DuckDB
    connection whose `events` are the ranks to do, the view and the
    parameters, returning (columns, rows) of the types `columns` gives);
    and the query combining its per-rank rows (`r`). Reports whose `py` is
    the same share one run of it. `listed`: a report of --report all;
    the others feed the charts and the traces written back."""
    name: str
    doc: str
    per_rank: Optional[str]
    combine: str
    py: Optional[str] = None
    columns: Tuple[Tuple[str, str], ...] = ()
    listed: bool = True


def sample_std(x: str) -> str:
    """The sample standard deviation of integers x from exact integer sums:
    the same value whatever order the rows come in (stddev_samp's floating
    sums are not)."""
    return ("CASE WHEN count(%s) > 1 THEN sqrt(CAST(count(%s) * sum(CAST(%s AS HUGEINT) * %s) - sum(%s) * sum(%s) "
            "AS DOUBLE) / (count(%s) * (count(%s) - 1))) END" % ((x,) * 8))


def _kernels() -> Report:
    # HTA's kernel breakdown has its computation, communication and memory
    # classes; its "other" (synchronisations) is in its temporal breakdown only
    per_rank = """
SELECT rank, class, name, count(*) AS count, sum(dur) AS total_ns,
       avg(dur) AS mean_ns, min(dur) AS min_ns, max(dur) AS max_ns,
       coalesce(%s, 0) AS std_ns,
       sum(dur) / sum(sum(dur)) OVER (PARTITION BY rank) AS share
FROM gpu WHERE class <> 'other' GROUP BY rank, class, name""" % sample_std("dur")
    combine = "SELECT * FROM r ORDER BY rank, total_ns DESC, class, name"
    return Report("kernels", "device work per rank, class and name: count, total, mean, share of the rank's",
                  per_rank, combine)


def _temporal() -> Report:
    # device work without a device arg (MTIA's) is a device of its own, null:
    # the joins match it (IS NOT DISTINCT FROM) rather than drop it
    per_rank = f"""
, spans AS (SELECT rank, device, min(s) AS first, max(e) AS last FROM gpu GROUP BY rank, device)
, busy AS {covered('gpu', 'device')}
, byclass AS (
  SELECT rank, device, sum(busy) FILTER (WHERE class = 'computation') AS compute,
         sum(busy) FILTER (WHERE class = 'communication') AS communication,
         sum(busy) FILTER (WHERE class = 'memory') AS memory
  FROM {covered('gpu', 'device, class')} GROUP BY rank, device)
SELECT p.rank, p.device, last - first AS span_ns,
       coalesce(compute, 0) AS compute_ns, coalesce(communication, 0) AS communication_ns,
       coalesce(memory, 0) AS memory_ns, (last - first) - busy AS idle_ns,
       (last - first) - coalesce(compute, 0) - ((last - first) - busy) AS non_compute_ns
FROM spans p JOIN busy b ON b.rank = p.rank AND b.device IS NOT DISTINCT FROM p.device
LEFT JOIN byclass c ON c.rank = p.rank AND c.device IS NOT DISTINCT FROM p.device"""
    combine = """
SELECT *, round(100.0 * compute_ns / span_ns, 2) AS compute_pct,
       round(100.0 * communication_ns / span_ns, 2) AS communication_pct,
       round(100.0 * memory_ns / span_ns, 2) AS memory_pct,
       round(100.0 * idle_ns / span_ns, 2) AS idle_pct
FROM r ORDER BY rank, device"""
    return Report("temporal", "per rank and device: compute, communication, memory and idle time over the "
                  "span from the first device work's start to the last one's end", per_rank, combine)


def _overlap() -> Report:
    # the overlap of communication A and computation B is |A| + |B| - |A u B|,
    # each a covered time, so no interval is matched against another
    both = ("(SELECT rank, class AS k, s, e FROM gpu WHERE class IN ('communication', 'computation') "
            "UNION ALL SELECT rank, 'either' AS k, s, e FROM gpu WHERE class IN ('communication', 'computation'))")
    per_rank = f"""
, cov AS {covered(both, 'k')}
, ranks AS (SELECT DISTINCT rank FROM gpu)
SELECT rank, coalesce(sum(busy) FILTER (WHERE k = 'communication'), 0) AS communication_ns,
       coalesce(sum(busy) FILTER (WHERE k = 'communication') + sum(busy) FILTER (WHERE k = 'computation')
                - sum(busy) FILTER (WHERE k = 'either'), 0) AS overlapped_ns
FROM ranks LEFT JOIN cov USING (rank) GROUP BY rank"""
    combine = """
SELECT rank, communication_ns, overlapped_ns,
       CASE WHEN communication_ns > 0 THEN overlapped_ns / communication_ns END AS overlap_ratio
FROM r ORDER BY rank"""
    return Report("overlap", "per rank: communication time, and the part of it that computation overlapped",
                  per_rank, combine)


def _idle() -> Report:
    per_rank = """
, launches AS (
  SELECT rank, correlation, min({start}) AS launch_ts FROM events
  WHERE kind IN ('runtime', 'driver') AND correlation IS NOT NULL GROUP BY rank, correlation)
, seq AS (
  SELECT g.rank, g.device, g.stream, g.s, g.e, l.launch_ts,
         lag(g.e) OVER (PARTITION BY g.rank, g.device, g.stream ORDER BY g.s, g.e) AS prev_e
  FROM gpu g LEFT JOIN launches l ON l.rank = g.rank AND l.correlation = g.correlation
  WHERE g.stream IS NOT NULL AND g.kind IN %s)
SELECT rank, device, stream,
       CASE WHEN launch_ts > prev_e THEN 'host_wait'
            WHEN s - prev_e < %d THEN 'kernel_wait' ELSE 'other' END AS idle_category,
       sum(s - prev_e) AS idle_ns, count(*) AS gaps
FROM seq WHERE prev_e IS NOT NULL GROUP BY ALL""" % (WORK_KINDS, KERNEL_WAIT_NS)
    combine = """
SELECT *, idle_ns / sum(idle_ns) OVER (PARTITION BY rank, device, stream) AS idle_ratio
FROM r ORDER BY rank, device, stream, idle_category"""
    return Report("idle", "per rank, device and stream: the gaps between device work, by cause: host wait "
                  "(launched after the previous work ended), kernel wait (shorter than 30 us), other",
                  per_rank, combine)


def _steps() -> Report:
    per_rank = """
, launches AS (
  SELECT rank, correlation, min({start}) AS launch_ts FROM events
  WHERE kind IN ('runtime', 'driver') AND correlation IS NOT NULL GROUP BY rank, correlation)
, comm_in_step AS (
  SELECT st.rank, st.step, g.name, sum(g.e - g.s) AS comm_ns
  FROM gpu g JOIN launches l ON l.rank = g.rank AND l.correlation = g.correlation
  JOIN steps_cpu st ON st.rank = g.rank AND l.launch_ts >= st.s AND l.launch_ts < st.e
  WHERE g.class = 'communication' GROUP BY ALL)
, top_comm AS (
  SELECT rank, step, first(name ORDER BY comm_ns DESC, name) AS collective, max(comm_ns) AS collective_ns
  FROM comm_in_step GROUP BY rank, step)
SELECT st.rank, st.step, st.s AS start_ns, st.e - st.s AS step_ns, t.collective, t.collective_ns
FROM steps_cpu st LEFT JOIN top_comm t USING (rank, step)"""
    # the median of the other ranks' times for the step: the step's sorted
    # times v without this rank's (its k-th), n of them
    def other(j: str) -> str:
        return "(CASE WHEN %s < k THEN v[%s] ELSE v[%s + 1] END)" % (j, j, j)
    combine = f"""
, ranked AS (
  SELECT r.*, row_number() OVER (PARTITION BY step ORDER BY step_ns, rank) AS k,
         count(*) OVER (PARTITION BY step) AS n FROM r)
, sorted AS (SELECT step, list(step_ns ORDER BY step_ns, rank) AS v FROM r GROUP BY step)
, others AS (
  SELECT x.*, CASE WHEN n < 2 THEN NULL
                   WHEN n % 2 = 0 THEN CAST({other('n // 2')} AS DOUBLE)
                   ELSE ({other('(n - 1) // 2')} + {other('(n + 1) // 2')}) / 2.0 END AS others_median_ns
  FROM ranked x JOIN sorted USING (step))
, excess AS (
  SELECT *, CASE WHEN others_median_ns > 0 THEN step_ns / others_median_ns - 1 END AS excess FROM others)
, pooled AS (SELECT median(excess) AS med FROM excess)
, spread AS (
  SELECT median(abs(excess - med)) AS mad, avg(abs(excess - med) ORDER BY abs(excess - med)) AS meanad
  FROM excess, pooled WHERE excess IS NOT NULL)
, scored AS (
  SELECT x.*, CASE WHEN mad > 0 THEN 0.6745 * (excess - med) / mad
                   WHEN meanad > 0 THEN (excess - med) / (1.253314 * meanad) END AS robust_z
  FROM excess x, pooled, spread)
SELECT s.rank, s.step, s.start_ns, s.step_ns, s.others_median_ns, s.excess, s.robust_z,
       coalesce(s.robust_z > {STRAGGLER_Z}, false) AS straggler,
       CASE WHEN coalesce(s.robust_z > {STRAGGLER_Z}, false) THEN
         (SELECT first(o.collective ORDER BY o.collective_ns DESC, o.collective) FROM scored o
          WHERE o.step = s.step AND o.rank <> s.rank) END AS others_waited_in,
       CASE WHEN coalesce(s.robust_z > {STRAGGLER_Z}, false) THEN
         (SELECT median(o.collective_ns) FROM scored o
          WHERE o.step = s.step AND o.rank <> s.rank) END AS others_wait_ns
FROM scored s ORDER BY s.step, s.rank"""
    return Report("steps", "step time per rank and step (ProfilerStep#N), and the stragglers: steps whose excess "
                  "over the other ranks' median for the step is an outlier in the job (modified z-score over "
                  "every rank's and step's excess above 3.5), with the collective the other ranks spent "
                  "longest in during that step", per_rank, combine)


def _launch() -> Report:
    per_rank = """
SELECT rank, count(*) AS kernels,
       avg(launch_delay) AS launch_delay_mean_ns, median(launch_delay) AS launch_delay_median_ns,
       quantile_disc(launch_delay, 0.95) AS launch_delay_p95_ns, max(launch_delay) AS launch_delay_max_ns,
       avg(cpu_duration) AS cpu_duration_mean_ns, avg(gpu_duration) AS gpu_duration_mean_ns,
       count(*) FILTER (WHERE cpu_duration > gpu_duration) AS shorter_than_launch
FROM launch_events GROUP BY rank"""
    combine = "SELECT * FROM r ORDER BY rank"
    return Report("launch", "per rank: time from the end of the CPU launch call to its device work's start "
                  "(launch delay, as HTA), the call's and the work's durations", per_rank, combine)


# Each launch call and its device work, on one rank (HTA's launch statistics' rows).
LAUNCH_EVENTS = """
, launch_events AS (
  SELECT g.rank, g.correlation, c.name AS launch, g.name AS kernel, c.dur AS cpu_duration,
         g.e - g.s AS gpu_duration, greatest(g.s - (c.s + c.dur), 0) AS launch_delay
  FROM gpu g JOIN (SELECT rank, correlation, name, {start} AS s, {end} - {start} AS dur FROM events
                   WHERE kind IN ('runtime', 'driver') AND correlation IS NOT NULL AND dur IS NOT NULL) c
       ON c.rank = g.rank AND c.correlation = g.correlation
  WHERE g.kind IN %s)""" % WORK_KINDS


def launch_cte(hta: bool) -> str:
    if hta:
        return LAUNCH_EVENTS.format(start=HTA_START, end=HTA_END)
    return LAUNCH_EVENTS.format(start="ts", end="ts + dur")


# ---- the queue of launched work, memory, copies' bandwidth -----------------

# HTA's launch calls (its symbol table's kernel and copy launches, CUDA's,
# MTIA's and HIP's); devtrace's view takes every runtime or driver call
# whose device work the trace holds.
HTA_LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
                    "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream")
STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)")

# The work outstanding on each stream: a launch call adds one when it
# starts, its work's start takes it off (HTA's queue length); work whose
# launch the trace does not hold is not counted (it would take off what was
# never added: HTA's negative-queue case). At one time, a call adds before
# a start takes off (as HTA lists them).
QUEUE = """
q_calls AS (
  SELECT rank, index, correlation, {start} AS s FROM events
  WHERE kind IN ('runtime', 'driver') AND correlation IS NOT NULL AND ts IS NOT NULL AND dur IS NOT NULL{names}
  QUALIFY row_number() OVER (PARTITION BY rank, correlation ORDER BY ts, index) = 1
),
q_pairs AS (
  SELECT w.rank, coalesce(w.device, w.pid) AS device, w.stream, c.index AS call_index, c.s AS call_s,
         w.index AS work_index, w.s AS work_s
  FROM gpu_all w JOIN q_calls c ON c.rank = w.rank AND c.correlation = w.correlation
),
queue AS (
  SELECT rank, device, stream, index, ts, delta,
         sum(delta) OVER (PARTITION BY rank, device, stream ORDER BY ts, delta DESC, index
                          ROWS UNBOUNDED PRECEDING) AS queue_length
  FROM (SELECT rank, device, stream, call_index AS index, call_s AS ts, 1 AS delta FROM q_pairs
        UNION ALL SELECT rank, device, stream, work_index, work_s, -1 FROM q_pairs)
)"""


def queue_cte(hta: bool) -> str:
    names = " AND name IN (%s)" % ", ".join("'%s'" % n for n in HTA_LAUNCH_NAMES) if hta else ""
    return gpu_cte(hta).strip() + ",\n" + QUEUE.strip().replace("{start}", HTA_START if hta else "ts") \
        .replace("{names}", names)


def _queue() -> Report:
    per_rank = """
, qs AS (SELECT *, lead(ts) OVER (PARTITION BY rank, device, stream ORDER BY ts, delta DESC, index) AS next_ts
        FROM queue)
SELECT rank, device, stream, count(*) AS points, avg(queue_length) AS mean, {std(queue_length)} AS std,
       min(queue_length) AS min, quantile_cont(queue_length, 0.25) AS p25,
       quantile_cont(queue_length, 0.5) AS median, quantile_cont(queue_length, 0.75) AS p75,
       max(queue_length) AS max,
       CAST(sum(queue_length * (next_ts - ts)) AS DOUBLE) / nullif(max(ts) - min(ts), 0) AS time_mean,
       coalesce(sum(next_ts - ts) FILTER (WHERE queue_length >= {queue_limit}), 0) AS full_ns
FROM qs GROUP BY rank, device, stream""".replace("{std(queue_length)}", sample_std("queue_length"))
    combine = "SELECT * FROM r ORDER BY rank, device, stream"
    return Report("queue", "per rank, device and stream: the work launched and not yet started (HTA's queue "
                  "length) over its changes: count, mean, std, min, quartiles, max, the mean over time, and "
                  "the time at or above --queue-limit", per_rank, combine)


def _queue_series() -> Report:
    per_rank = "\nSELECT rank, device, stream, ts, queue_length FROM queue"
    combine = "SELECT * FROM r ORDER BY rank, device, stream, ts, queue_length"
    return Report("queue_series", "the queue length of each stream at each change", per_rank, combine,
                  listed=False)


MEMORY = """
, mem AS (
  SELECT rank, coalesce(device, -1) AS device, {start} AS ts, index, bytes, allocated,
         sum(bytes) OVER (PARTITION BY rank, coalesce(device, -1) ORDER BY ts, index
                          ROWS UNBOUNDED PRECEDING) AS running
  FROM events
  WHERE kind = 'cpu_instant' AND name = '[memory]' AND ts IS NOT NULL AND (bytes IS NOT NULL OR allocated IS NOT NULL))
, used AS (SELECT *, coalesce(allocated, running) AS in_use FROM mem)"""


def _memory() -> Report:
    per_rank = MEMORY + """
, peaks AS (SELECT rank, device, max(in_use) AS peak FROM used GROUP BY rank, device)
SELECT u.rank, u.device, count(*) FILTER (WHERE bytes > 0) AS allocations, count(*) FILTER (WHERE bytes < 0) AS frees,
       coalesce(sum(bytes) FILTER (WHERE bytes > 0), 0) AS allocated_bytes,
       coalesce(-sum(bytes) FILTER (WHERE bytes < 0), 0) AS freed_bytes,
       max(p.peak) AS peak_bytes, min(ts) FILTER (WHERE in_use = p.peak) AS peak_ts,
       first(in_use ORDER BY ts, index) AS first_bytes, last(in_use ORDER BY ts, index) AS last_bytes
FROM used u JOIN peaks p ON p.rank = u.rank AND p.device = u.device GROUP BY u.rank, u.device"""
    combine = "SELECT * FROM r ORDER BY rank, device"
    return Report("memory", "per rank and device (-1: the host's pinned memory): memory allocated and freed "
                  "([memory] events), and in use: its peak, when it was first reached, at the first and the last "
                  "event", per_rank, combine)


def _memory_series() -> Report:
    per_rank = MEMORY + "\nSELECT rank, device, ts, in_use FROM used"
    combine = "SELECT * FROM r ORDER BY rank, device, ts, in_use"
    return Report("memory_series", "memory in use per device at each allocation and free", per_rank, combine,
                  listed=False)


# Copies and sets, with their bandwidth (bytes per ns are GB/s), kept in
# whole MB/s so that sums over time are exact. HTA lets a copy of no time
# take one microsecond.
BANDWIDTH = """
, copies AS (
  SELECT rank, CASE WHEN kind = 'memset' OR regexp_matches(name, '^Memset') THEN 'Memset'
                    ELSE coalesce(nullif(regexp_extract(name, '^(Memcpy \\w+)', 1), ''), 'Memcpy') END AS type,
         s, greatest(e - s, {min_dur}) AS dur, bytes,
         CAST(round(bytes * 1000.0 / greatest(e - s, {min_dur})) AS BIGINT) AS mbps
  FROM work WHERE class = 'memory' AND bytes IS NOT NULL AND bytes >= 0)
, bw_points AS (
  SELECT rank, type, s AS ts, mbps AS delta FROM copies
  UNION ALL SELECT rank, type, s + dur, -mbps FROM copies)
, bw AS (
  SELECT rank, type, ts, delta, sum(delta) OVER (PARTITION BY rank, type ORDER BY ts, delta
                                                 ROWS UNBOUNDED PRECEDING) AS mbps
  FROM bw_points)"""


def _bandwidth() -> Report:
    per_rank = BANDWIDTH + """
, c AS (SELECT rank, type, count(*) AS copies, sum(bytes) AS bytes, sum(dur) AS busy_ns FROM copies GROUP BY ALL)
, p AS (
  SELECT rank, type, count(*) AS points, avg(mbps) / 1000 AS mean_gbps, {std(mbps)} / 1000 AS std_gbps,
         min(mbps) / 1000 AS min_gbps, quantile_cont(mbps, 0.25) / 1000 AS p25_gbps,
         quantile_cont(mbps, 0.5) / 1000 AS median_gbps, quantile_cont(mbps, 0.75) / 1000 AS p75_gbps,
         max(mbps) / 1000 AS max_gbps
  FROM bw WHERE mbps > 0 GROUP BY ALL)
SELECT c.*, p.points, p.mean_gbps, p.std_gbps, p.min_gbps, p.p25_gbps, p.median_gbps, p.p75_gbps, p.max_gbps
FROM c LEFT JOIN p USING (rank, type)""".replace("{std(mbps)}", sample_std("mbps"))
    combine = "SELECT * FROM r ORDER BY rank, type"
    return Report("bandwidth", "per rank and kind of copy or set: count, bytes, time, and the bandwidth of "
                  "those under way at once over its changes (HTA's memory bandwidth: count, mean, std, min, "
                  "quartiles, max, in GB/s)", per_rank, combine)


def _bandwidth_series() -> Report:
    per_rank = BANDWIDTH + "\nSELECT rank, type, ts, mbps / 1000.0 AS gbps FROM bw"
    combine = "SELECT * FROM r ORDER BY rank, type, ts, gbps"
    return Report("bandwidth_series", "the bandwidth of each kind of copy at each change", per_rank, combine,
                  listed=False)


# ---- where device time goes: operators, annotations, kernel sequences -----

# The first launch call of each correlation, with its thread
CALLS = """
, calls AS (
  SELECT rank, correlation, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid, coalesce(thread, '') AS thread,
         {start} AS s FROM events
  WHERE kind IN ('runtime', 'driver') AND correlation IS NOT NULL AND ts IS NOT NULL
  QUALIFY row_number() OVER (PARTITION BY rank, correlation ORDER BY ts, index) = 1)"""


# Host events (operators, calls, ranges), with their depth on their thread:
# how many enclose them, as HTA's call stack counts: in the order of their
# starts and ends (at one time an end first, the longer starting first and
# the shorter ending first), the events started and not yet ended. {which}
# selects the events counted.
DEPTH = """
, host AS (
  SELECT rank, index, name, kind, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid,
         coalesce(thread, '') AS thread, {start} AS s, greatest({end}, {start}) AS e FROM events
  WHERE {which} AND ph = 'X' AND ts IS NOT NULL AND dur IS NOT NULL)
, marks AS (
  SELECT *, sum(delta) OVER (PARTITION BY rank, pid, tid, thread ORDER BY t, delta, k1, k2
                             ROWS UNBOUNDED PRECEDING) - delta AS depth
  FROM (SELECT rank, index, name, kind, pid, tid, thread, s, e, s AS t, 1 AS delta, s - e AS k1, index AS k2 FROM host
        UNION ALL SELECT rank, index, name, kind, pid, tid, thread, s, e, e, -1, e - s, -index FROM host))
, nested AS (SELECT rank, index, name, kind, pid, tid, thread, s, e, depth FROM marks WHERE delta = 1)"""

HOST_KINDS = "kind IN ('cpu_op', 'runtime', 'driver', 'user_annotation', 'python_function')"


def _ops() -> Report:
    per_rank = CALLS + DEPTH.replace("{which}", "kind = 'cpu_op'") + """
-- the operator that launched each work: the one of its External id, else
-- the operator that encloses its launch call on the call's thread
, by_ext AS (SELECT rank, external_id, first(name ORDER BY ts, index) AS op FROM events
             WHERE kind = 'cpu_op' AND external_id IS NOT NULL GROUP BY rank, external_id)
, by_call AS (
  SELECT c.rank, c.correlation, CASE WHEN o.e >= c.s THEN o.name END AS op
  FROM calls c ASOF LEFT JOIN nested o ON o.rank = c.rank AND o.pid = c.pid AND o.tid = c.tid
                                       AND o.thread = c.thread AND c.s >= o.s)
, dev AS (
  SELECT w.rank, coalesce(x.op, b.op) AS op, count(*) AS work, sum(w.dur) AS device_ns,
         coalesce(sum(w.dur) FILTER (WHERE w.class = 'computation'), 0) AS compute_ns,
         coalesce(sum(w.dur) FILTER (WHERE w.class = 'communication'), 0) AS communication_ns,
         coalesce(sum(w.dur) FILTER (WHERE w.class = 'memory'), 0) AS memory_ns
  FROM work w LEFT JOIN by_ext x ON x.rank = w.rank AND x.external_id = w.external_id
  LEFT JOIN by_call b ON b.rank = w.rank AND b.correlation = w.correlation
  WHERE w.class <> 'other' GROUP BY ALL)
, ophost AS (SELECT rank, name AS op, count(*) AS calls, sum(e - s) AS host_ns FROM host GROUP BY rank, name)
SELECT coalesce(d.rank, h.rank) AS rank, coalesce(d.op, h.op) AS op, coalesce(h.calls, 0) AS calls,
       coalesce(h.host_ns, 0) AS host_ns, coalesce(d.work, 0) AS work, coalesce(d.device_ns, 0) AS device_ns,
       coalesce(d.compute_ns, 0) AS compute_ns, coalesce(d.communication_ns, 0) AS communication_ns,
       coalesce(d.memory_ns, 0) AS memory_ns
FROM dev d FULL JOIN ophost h ON h.rank = d.rank AND h.op = d.op"""
    combine = """
SELECT *, CASE WHEN sum(device_ns) OVER (PARTITION BY rank) > 0
               THEN device_ns / sum(device_ns) OVER (PARTITION BY rank) END AS device_share
FROM r ORDER BY rank, device_ns DESC, host_ns DESC, op NULLS FIRST"""
    return Report("ops", "per rank and operator name (cpu_op): its calls and host time, and the device work it "
                  "launched (by External id, else the operator around the launch call) with its time by class; "
                  "work of no operator has none", per_rank, combine)


def _annotations() -> Report:
    per_rank = CALLS + """
, ann AS (
  SELECT rank, index, name, coalesce(pid, -1) AS pid, coalesce(tid, -1) AS tid, coalesce(thread, '') AS thread,
         {start} AS s, {end} AS e FROM events
  WHERE kind = 'user_annotation' AND ph = 'X' AND ts IS NOT NULL AND dur IS NOT NULL AND dur > 0
    AND NOT regexp_matches(name, '^ProfilerStep\\s*#\\s*\\d+'))
, launched AS (SELECT w.rank, w.dur, w.class, c.pid, c.tid, c.thread, c.s
               FROM work w JOIN calls c ON c.rank = w.rank AND c.correlation = w.correlation WHERE w.class <> 'other')
, ahost AS (SELECT rank, name, count(*) AS instances, sum(e - s) AS host_ns FROM ann GROUP BY rank, name)
, dev AS (
  SELECT a.rank, a.name, count(*) AS work, sum(l.dur) AS device_ns,
         coalesce(sum(l.dur) FILTER (WHERE l.class = 'computation'), 0) AS compute_ns,
         coalesce(sum(l.dur) FILTER (WHERE l.class = 'communication'), 0) AS communication_ns,
         coalesce(sum(l.dur) FILTER (WHERE l.class = 'memory'), 0) AS memory_ns
  FROM ann a JOIN launched l ON l.rank = a.rank AND l.pid = a.pid AND l.tid = a.tid AND l.thread = a.thread
                            AND l.s >= a.s AND l.s < a.e
  GROUP BY a.rank, a.name)
SELECT h.rank, h.name AS annotation, h.instances, h.host_ns, coalesce(d.work, 0) AS work,
       coalesce(d.device_ns, 0) AS device_ns, coalesce(d.compute_ns, 0) AS compute_ns,
       coalesce(d.communication_ns, 0) AS communication_ns, coalesce(d.memory_ns, 0) AS memory_ns
FROM ahost h LEFT JOIN dev d ON d.rank = h.rank AND d.name = h.name"""
    combine = "SELECT * FROM r ORDER BY rank, device_ns DESC, host_ns DESC, annotation"
    return Report("annotations", "per rank and user annotation (record_function ranges but ProfilerStep): its "
                  "instances and host time, and the device work launched inside them (their launch call within "
                  "the range, on its thread: a range counts the work of the ranges it holds) with its time by "
                  "class", per_rank, combine)


def _sequences() -> Report:
    per_rank = CALLS + DEPTH + """
-- the roots: the top-level operators (no operator encloses them), or the
-- shallowest operators whose name holds --op (HTA's depth: every host
-- event counts); they do not overlap, so each launch call is in the root
-- that started last before it, if it has not ended
, cand AS (SELECT * FROM nested WHERE kind = 'cpu_op' AND {op_match})
, roots AS (
  SELECT * FROM cand c
  WHERE depth = (SELECT min(d.depth) FROM cand d WHERE d.rank = c.rank) {top_level})
, kern AS (
  SELECT r.rank, r.index AS root, w.name, w.s, w.index AS windex, w.dur
  FROM calls c ASOF JOIN roots r ON r.rank = c.rank AND r.pid = c.pid AND r.tid = c.tid AND r.thread = c.thread
                                 AND c.s >= r.s
  JOIN work w ON w.rank = c.rank AND w.correlation = c.correlation
  WHERE c.s <= r.e)
, pats AS (
  SELECT r.rank, r.index, r.name AS op, r.e - r.s AS op_ns, list(k.name ORDER BY k.s, k.windex) AS kernels,
         count(k.name) AS n, coalesce(sum(k.dur), 0) AS kernel_ns
  FROM roots r LEFT JOIN kern k ON k.rank = r.rank AND k.root = r.index GROUP BY r.rank, r.index, r.name, r.e, r.s)
SELECT rank, op, n AS length, op || '|' || array_to_string(kernels, '|') AS pattern, count(*) AS count,
       sum(kernel_ns) AS kernel_ns, sum(op_ns) AS op_ns
FROM pats WHERE n >= {min_len} GROUP BY rank, op, n, kernels"""
    combine = "SELECT * FROM r ORDER BY rank, count DESC, kernel_ns DESC, pattern"
    return Report("sequences", "per rank: the sequences of device work launched under one operator (the "
                  "top-level operators, or with --op NAME the shallowest whose name holds NAME, as HTA's "
                  "frequent kernel sequences), with how often each ran and its device and host time",
                  per_rank, combine)


# ---- the critical path (_critical.py) ---------------------------------------

# The critical path's per-rank rows (_critical.rank_rows): per rank, window
# (step), name and bound, the time on the path, the events, those on it and
# the least slack of the others; one row for a window whose graph failed.
CRITICAL_COLUMNS = (("rank", "INTEGER"), ("step", "BIGINT"), ("window_start", "BIGINT"), ("window_end", "BIGINT"),
                    ("name", "VARCHAR"), ("bound_by", "VARCHAR"), ("path_ns", "BIGINT"), ("events", "BIGINT"),
                    ("on_path", "BIGINT"), ("min_slack_ns", "BIGINT"), ("failed", "VARCHAR"))
# ... and each segment of a path and each event (_critical.rank_events)
CRITICAL_EVENT_COLUMNS = (("rank", "INTEGER"), ("step", "BIGINT"), ("row", "VARCHAR"), ("window_start", "BIGINT"),
                          ("window_end", "BIGINT"), ("index", "BIGINT"), ("name", "VARCHAR"), ("bound_by", "VARCHAR"),
                          ("on_path", "BOOLEAN"), ("start_ns", "BIGINT"), ("end_ns", "BIGINT"), ("path_ns", "BIGINT"),
                          ("slack_ns", "BIGINT"), ("failed", "VARCHAR"))
CRITICAL_PY = "devtrace.analysis._critical:per_rank"
CRITICAL_EVENTS_PY = "devtrace.analysis._critical:per_rank_events"
_BOUND_SUMS = ", ".join(
    "coalesce(sum(path_ns) FILTER (WHERE bound_by = '%s'), 0) AS %s"
    % (b, c) for b, c in (("cpu_bound", "cpu_ns"), ("gpu_compute_bound", "compute_ns"),
                          ("gpu_communication_bound", "communication_ns"),
                          ("gpu_kernel_launch_overhead", "launch_ns"), ("gpu_kernel_kernel_overhead", "kernel_gap_ns")))


def _critical_path() -> Report:
    combine = """
SELECT rank, step, name, bound_by, path_ns,
       CASE WHEN sum(path_ns) OVER w > 0 THEN path_ns / sum(path_ns) OVER w ELSE 0 END AS share,
       events, on_path, min_slack_ns
FROM r WHERE failed IS NULL
WINDOW w AS (PARTITION BY rank, step)
ORDER BY rank, step NULLS FIRST, path_ns DESC, min_slack_ns NULLS FIRST, name, bound_by"""
    return Report("critical_path", "per rank and step (ProfilerStep#N, or --window NAME): the critical path's "
                  "elements by name and what bounds them (host, device compute or communication, launch delay, "
                  "gap between kernels): their time on the path and share of it, and of the others the least "
                  "slack (how much later one could end without lengthening the path)",
                  None, combine, py=CRITICAL_PY, columns=CRITICAL_COLUMNS)


def _critical_steps() -> Report:
    combine = """
WITH w AS (
  SELECT rank, step, min(window_start) AS window_start, min(window_end) AS window_end,
         coalesce(sum(path_ns), 0) AS path_ns, %s, max(failed) AS failed
  FROM r GROUP BY rank, step)
, o AS (SELECT *, path_ns - communication_ns AS own_ns,
               first_value(rank) OVER (PARTITION BY step ORDER BY failed IS NULL DESC, path_ns - communication_ns DESC,
                                       rank) AS setter
        FROM w)
SELECT rank, step, window_end - window_start AS window_ns, path_ns, cpu_ns, compute_ns, communication_ns, launch_ns,
       kernel_gap_ns, own_ns, failed IS NULL AND rank = setter AS sets_step, failed
FROM o ORDER BY step NULLS FIRST, rank""" % _BOUND_SUMS
    return Report("critical_steps", "per rank and step: the critical path's length, its time by what bounds it, "
                  "and the rank whose path set the step's time (the most of its path not in communication: "
                  "the others' paths wait for it in their collectives)",
                  None, combine, py=CRITICAL_PY, columns=CRITICAL_COLUMNS)


def _critical_events() -> Report:
    combine = "SELECT * FROM r ORDER BY rank, step NULLS FIRST, row, start_ns, index"
    return Report("critical_events", "each critical path's segments, and each event on it or not with its slack",
                  None, combine, py=CRITICAL_EVENTS_PY, columns=CRITICAL_EVENT_COLUMNS, listed=False)


# ---- two datasets, or two step ranges: what changed ---------------------------

def _diff_items() -> Report:
    # device work by class; host events by kind; the steps' time as one name
    per_rank = """
, items AS (
  SELECT rank, CASE class WHEN 'communication' THEN 'collective' WHEN 'memory' THEN 'memory'
                          WHEN 'other' THEN 'other' ELSE 'kernel' END AS what, name, dur, step FROM work
  UNION ALL
  SELECT rank, CASE kind WHEN 'cpu_op' THEN 'op' WHEN 'user_annotation' THEN 'annotation'
                         WHEN 'python_function' THEN 'python' WHEN 'sync' THEN 'sync' ELSE 'call' END,
         name, {end} - {start}, step
  FROM events
  WHERE kind IN ('cpu_op', 'user_annotation', 'python_function', 'runtime', 'driver', 'sync') AND ph = 'X'
    AND ts IS NOT NULL AND dur IS NOT NULL AND NOT regexp_matches(name, '^ProfilerStep\\s*#\\s*\\d+')
    AND NOT (kind = 'sync' AND stream IS NOT NULL AND stream <> -1 AND {hta})
  UNION ALL
  SELECT rank, 'step', 'ProfilerStep', e - s, step FROM steps_cpu)
, nsteps AS (SELECT rank, count(DISTINCT step) AS steps FROM steps_cpu WHERE {in_steps} GROUP BY rank)
SELECT i.rank, what, name, count(*) AS count, sum(dur) AS total_ns, max(n.steps) AS steps
FROM items i LEFT JOIN nsteps n USING (rank) WHERE {in_steps} GROUP BY i.rank, what, name"""
    return Report("diff_items", "per rank: the count and time of each kernel, collective, copy, operator, call "
                  "and range, and of the steps", per_rank, "SELECT * FROM r", listed=False)


# Two datasets' diff_items (rb: the base's, rt: the test's): each name's
# count and time in both (per step when steps are given), their change, and
# whether it is past the threshold: a change of more than that share of its
# kind's time in the base (a name's, or the kind's own total). Per rank, and
# over the job (rank null); per name, and per kind (name null).
DIFF = """
WITH b AS (SELECT rank, what, name, count / {per_b} AS count, total_ns / {per_b} AS total_ns FROM rb)
, t AS (SELECT rank, what, name, count / {per_t} AS count, total_ns / {per_t} AS total_ns FROM rt)
, j AS (
  SELECT coalesce(b.rank, t.rank) AS rank, coalesce(b.what, t.what) AS what, coalesce(b.name, t.name) AS name,
         coalesce(b.count, 0) AS base_count, coalesce(t.count, 0) AS test_count,
         coalesce(b.total_ns, 0) AS base_ns, coalesce(t.total_ns, 0) AS test_ns
  FROM b FULL JOIN t ON b.rank = t.rank AND b.what = t.what AND b.name = t.name)
, lv AS (
  SELECT rank, what, name, base_count, test_count, base_ns, test_ns FROM j
  UNION ALL SELECT rank, what, NULL, sum(base_count), sum(test_count), sum(base_ns), sum(test_ns) FROM j
            GROUP BY rank, what
  UNION ALL SELECT NULL, what, name, sum(base_count), sum(test_count), sum(base_ns), sum(test_ns) FROM j
            GROUP BY what, name
  UNION ALL SELECT NULL, what, NULL, sum(base_count), sum(test_count), sum(base_ns), sum(test_ns) FROM j
            GROUP BY what)
, d AS (
  SELECT l.*, l.test_count - l.base_count AS diff_count, l.test_ns - l.base_ns AS diff_ns,
         CASE WHEN l.base_count = 0 AND l.test_count > 0 THEN 'added'
              WHEN l.test_count = 0 AND l.base_count > 0 THEN 'removed'
              WHEN l.test_ns > l.base_ns THEN 'slower' WHEN l.test_ns < l.base_ns THEN 'faster'
              ELSE 'same' END AS change,
         c.base_ns AS kind_base_ns
  FROM lv l JOIN lv c ON c.rank IS NOT DISTINCT FROM l.rank AND c.what = l.what AND c.name IS NULL)
SELECT rank, what, name, base_count, test_count, diff_count, base_ns, test_ns, diff_ns,
       CASE WHEN base_ns > 0 THEN diff_ns / base_ns END AS diff_ratio, change,
       (abs(diff_ns) > {threshold} * kind_base_ns) OR (kind_base_ns = 0 AND test_ns > 0) AS past_threshold
FROM d
ORDER BY rank NULLS FIRST, what, name IS NOT NULL, past_threshold DESC, abs(diff_ns) DESC, name"""


def diff_sql(threshold: float, base_steps: Optional[Tuple[int, int]], test_steps: Optional[Tuple[int, int]]) -> str:
    """The combining query of two datasets' diff_items: per step when a
    dataset's steps are given."""
    return DIFF.replace("{per_b}", "greatest(steps, 1)" if base_steps else "1.0") \
        .replace("{per_t}", "greatest(steps, 1)" if test_steps else "1.0") \
        .replace("{threshold}", repr(float(threshold)))


# ---- what the HTML report draws ------------------------------------------------

# A series' points in CHART_BUCKETS buckets of the job's time, the largest
# value of each (a chart of a few hundred points per line, whatever the
# trace's length).
CHART_BUCKETS = 400


def _bucketed(name: str, series: Report, keys: str, value: str) -> Report:
    combine = """
WITH b AS (SELECT *, min(ts) OVER () AS t0, max(ts) OVER () AS t1 FROM r)
SELECT %s, min(ts) AS ts, max(%s) AS %s FROM b
GROUP BY %s, CAST(floor((ts - t0) * %d.0 / greatest(t1 - t0, 1)) AS BIGINT)
ORDER BY %s, ts""" % (keys, value, value, keys, CHART_BUCKETS, keys)
    return Report(name, series.doc + ", at most %d points each" % CHART_BUCKETS, series.per_rank, combine,
                  listed=False)


def _launch_quantiles() -> Report:
    per_rank = """
SELECT rank, count(*) AS launches,
       quantile_disc(launch_delay, [%s]) AS delay_ns
FROM launch_events GROUP BY rank""" % ", ".join("%.2f" % (i / 20) for i in range(21))
    return Report("launch_quantiles", "per rank: the launch delay's 0th, 5th, ..., 100th percentiles", per_rank,
                  "SELECT * FROM r ORDER BY rank", listed=False)


def _critical_segments() -> Report:
    return Report("critical_segments", "the critical paths' segments", None,
                  "SELECT * FROM r WHERE row = 'segment' ORDER BY rank, step NULLS FIRST, start_ns, end_ns",
                  py=CRITICAL_EVENTS_PY, columns=CRITICAL_EVENT_COLUMNS, listed=False)


REPORTS: Dict[str, Report] = {r.name: r for r in
                              (_kernels(), _temporal(), _overlap(), _idle(), _steps(), _launch(),
                               _critical_path(), _critical_steps(), _queue(), _memory(), _bandwidth(), _ops(),
                               _annotations(), _sequences(),
                               _critical_events(), _queue_series(), _memory_series(), _bandwidth_series(),
                               _diff_items(), _launch_quantiles(), _critical_segments(),
                               _bucketed("queue_chart", _queue_series(), "rank, device, stream", "queue_length"),
                               _bucketed("memory_chart", _memory_series(), "rank, device", "in_use"),
                               _bucketed("bandwidth_chart", _bandwidth_series(), "rank, type", "gbps"))}

# What the parameters of the reports are when not given
DEFAULTS = {"window": None, "op": None, "min_len": 3, "queue_limit": 1024, "steps": None, "only": None}


def params_of(params: Optional[dict]) -> dict:
    p = dict(DEFAULTS)
    p.update({k: v for k, v in (params or {}).items() if v is not None})
    return p


def _sql_text(v: str) -> str:
    return "'%s'" % v.replace("'", "''")


def per_rank_sql(name: str, hta: bool = False, params: Optional[dict] = None) -> str:
    """The report's per-rank query, whole: WITH gpu ... SELECT ..."""
    rep = REPORTS[name]
    p = params_of(params)
    start, end = (HTA_START, HTA_END) if hta else ("ts", "ts + dur")
    body = rep.per_rank.lstrip()
    if p["op"]:  # HTA's depth: every host event counts
        which, op_match, top_level = HOST_KINDS, "contains(name, %s)" % _sql_text(p["op"]), ""
    else:  # the top-level operators: no operator encloses them
        which, op_match, top_level = "kind = 'cpu_op'", "true", "AND depth = 0"
    for k, v in (("{which}", which), ("{start}", start), ("{end}", end), ("{op_match}", op_match),
                 ("{top_level}", top_level), ("{min_len}", str(int(p["min_len"]))),
                 ("{queue_limit}", str(int(p["queue_limit"]))), ("{min_dur}", "1000" if hta else "1"),
                 ("{hta}", "true" if hta else "false"),
                 ("{in_steps}", "step BETWEEN %d AND %d" % tuple(p["steps"]) if p["steps"] else "true")):
        body = body.replace(k, v)
    head = "WITH " + queue_cte(hta) + launch_cte(hta)
    if body.startswith(","):
        return head + body
    return head + "\n" + body


def combine_sql(name: str) -> str:
    body = REPORTS[name].combine.lstrip()
    if body.startswith(","):
        return "WITH " + body[1:].lstrip()
    return body


def launch_events_sql(hta: bool = False) -> str:
    return "WITH " + gpu_cte(hta).strip() + launch_cte(hta) + "\nSELECT * FROM launch_events"


def names() -> list:
    """The reports of --report all."""
    return [n for n, r in REPORTS.items() if r.listed]


def describe(name: str) -> Optional[str]:
    rep = REPORTS.get(name)
    return rep.doc if rep else None

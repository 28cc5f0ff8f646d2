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
from typing import Dict, Optional

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
  SELECT rank, device, stream, name, kind, correlation, collective,
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
    name: str
    doc: str
    per_rank: str
    combine: str


def _kernels() -> Report:
    # HTA's kernel breakdown has its computation, communication and memory
    # classes; its "other" (synchronisations) is in its temporal breakdown only
    per_rank = """
SELECT rank, class, name, count(*) AS count, sum(dur) AS total_ns,
       avg(dur) AS mean_ns, min(dur) AS min_ns, max(dur) AS max_ns,
       -- from exact integer sums: the same value whatever order the rows come in
       CASE WHEN count(*) > 1 THEN sqrt(CAST(count(*) * sum(CAST(dur AS HUGEINT) * dur) - sum(dur) * sum(dur) AS DOUBLE)
                                        / (count(*) * (count(*) - 1))) ELSE 0 END AS std_ns,
       sum(dur) / sum(sum(dur)) OVER (PARTITION BY rank) AS share
FROM gpu WHERE class <> 'other' GROUP BY rank, class, name"""
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


REPORTS: Dict[str, Report] = {r.name: r for r in
                              (_kernels(), _temporal(), _overlap(), _idle(), _steps(), _launch())}


def per_rank_sql(name: str, hta: bool = False) -> str:
    """The report's per-rank query, whole: WITH gpu ... SELECT ..."""
    rep = REPORTS[name]
    body = rep.per_rank.lstrip().replace("{start}", HTA_START if hta else "ts")
    head = "WITH " + gpu_cte(hta).strip() + launch_cte(hta)
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
    return list(REPORTS)


def describe(name: str) -> Optional[str]:
    rep = REPORTS.get(name)
    return rep.doc if rep else None

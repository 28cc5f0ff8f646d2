"""The report people look at: one HTML file with an interactive chart per
report, Plotly's library inside it (it opens without a network). The charts
are Plotly figures written as JSON here; plotly.min.js is read from the
plotly package's files, which are not imported.

A chart that fails to draw says so on the page (a banner with the error),
and the page records which charts it drew (data-drawn on each chart's
element, data-errors on the body)."""

from __future__ import annotations

import html
import importlib.util
import json
import os
from typing import Dict, List, Optional

from . import _critical, _engine, _output

REPORTS = ["steps", "kernels", "temporal", "overlap", "idle", "launch", "launch_quantiles", "queue",
           "queue_chart", "memory", "memory_chart", "bandwidth_chart", "critical_steps"]
# at most this many lines in a chart of series (the largest first; the page
# says how many it left out)
MAX_LINES = 12
TOP_KERNELS = 25
CLASS_COLORS = {"computation": "#4C78A8", "communication": "#F58518", "memory": "#54A24B", "other": "#B279A2"}
BOUND_COLORS = {_critical.CPU: "#4C78A8", _critical.COMPUTE: "#54A24B", _critical.COMMUNICATION: "#F58518",
                _critical.LAUNCH: "#E45756", _critical.KERNEL_GAP: "#B279A2"}


def library_path() -> str:
    """plotly.min.js of the plotly package, found without importing it."""
    spec = importlib.util.find_spec("plotly")
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(where, "package_data", "plotly.min.js")
        if os.path.isfile(path):
            return path
    raise ImportError("the plotly package's plotly.min.js is not found: pip install plotly")


def check_library() -> None:
    library_path()


def _text(s) -> str:
    """A name as Plotly shows it: its tags are text (Plotly reads <b>, <br>, ...)."""
    return html.escape("" if s is None else str(s), quote=False)


def _rows(t) -> List[dict]:
    cols, rows = _output.columns_rows(t)
    return [dict(zip(cols, r)) for r in rows]


def _ms(ns) -> Optional[float]:
    return None if ns is None else ns / 1e6


class _Page:
    def __init__(self, title: str):
        self.title = title
        self.parts: List[str] = []
        self.figures: Dict[str, dict] = {}

    def section(self, title: str, text: str) -> None:
        self.parts.append("<h2>%s</h2><p>%s</p>" % (html.escape(title), text))

    def note(self, text: str) -> None:
        self.parts.append("<p class=note>%s</p>" % text)

    def chart(self, key: str, data: list, layout: dict, height: int = 420) -> None:
        layout = dict(layout)
        layout.setdefault("height", height)
        layout.setdefault("margin", {"l": 70, "r": 30, "t": 40, "b": 60})
        self.figures[key] = {"data": data, "layout": layout}
        self.parts.append('<div class=chart id="%s" data-drawn="no"></div>' % key)

    def table(self, columns: List[str], rows: List[list]) -> None:
        head = "".join("<th>%s</th>" % html.escape(c) for c in columns)
        body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(_cell(v)) for v in r) for r in rows)
        self.parts.append("<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>" % (head, body))

    def render(self, library: str) -> str:
        figures = json.dumps(self.figures, separators=(",", ":"), allow_nan=False, default=_json_default)
        figures = figures.replace("</", "<\\/")  # nothing in the data ends the script
        return PAGE % {"title": html.escape(self.title), "body": "\n".join(self.parts), "library": library,
                       "figures": figures}


def _json_default(o):
    try:
        return float(o)
    except (TypeError, ValueError):
        return str(o)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.4g" % v if abs(v) < 1e6 else "%.0f" % v
    return str(v)


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>%(title)s</title>
<script>
// before anything else: an error anywhere is shown on the page and counted
window.devtraceErrors = [];
function devtraceError(text) {
  window.devtraceErrors.push(String(text));
  document.addEventListener("DOMContentLoaded", function () { devtraceShow(); });
  if (document.body) devtraceShow();
}
function devtraceShow() {
  document.body.dataset.errors = String(window.devtraceErrors.length);
  var b = document.getElementById("errors");
  if (b) {
    b.style.display = "block";
    b.textContent = "Some charts could not be drawn: " + window.devtraceErrors.join("; ");
  }
}
window.addEventListener("error", function (e) { devtraceError(e.message); });
window.addEventListener("unhandledrejection", function (e) { devtraceError(e.reason); });
</script>
<script>%(library)s</script>
<style>
body { font-family: sans-serif; margin: 1.5em 3em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
p { max-width: 70em; } .note { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
#errors { display: none; background: #fdd; border: 1px solid #c00; padding: 0.5em; }
.chart { width: 100%%; }
</style></head>
<body data-errors="0">
<div id="errors"></div>
%(body)s
<script>
(function () {
  var figures = %(figures)s;
  var drawn = 0;
  var done = Object.keys(figures).map(function (key) {
    var el = document.getElementById(key);
    function failed(e) {
      el.dataset.drawn = "failed";
      devtraceError(key + ": " + (e && e.message ? e.message : e));
    }
    try {
      return Promise.resolve(Plotly.newPlot(el, figures[key].data, figures[key].layout,
                                            {responsive: true, displaylogo: false}))
        .then(function () { el.dataset.drawn = "yes"; drawn++; }, failed);
    } catch (e) {
      failed(e);
      return Promise.resolve();
    }
  });
  // once every chart is drawn or has failed: how many were drawn
  Promise.all(done).then(function () { document.body.dataset.charts = String(drawn); });
})();
</script>
</body></html>
"""


# ---- the charts --------------------------------------------------------------

def _steps(page: _Page, steps: List[dict]) -> None:
    page.section("Step time per rank", "Each rank's time for each step (ProfilerStep#N, in ms); a cross marks a "
                 "straggler: a step that took a rank longer than the other ranks by more than the job's steps "
                 "usually differ (docs/analysis.md).")
    if not steps:
        page.note("No ProfilerStep ranges in this dataset.")
        return
    ranks = sorted({r["rank"] for r in steps})
    nums = sorted({r["step"] for r in steps})
    grid = {(r["rank"], r["step"]): r["step_ns"] for r in steps}
    z = [[_ms(grid.get((rk, st))) for st in nums] for rk in ranks]
    slow = [r for r in steps if r["straggler"]]
    data = [{"type": "heatmap", "x": [str(s) for s in nums], "y": [str(r) for r in ranks], "z": z,
             "colorscale": "Viridis", "colorbar": {"title": {"text": "ms"}},
             "hovertemplate": "rank %{y}, step %{x}: %{z:.3f} ms<extra></extra>"}]
    if slow:
        data.append({"type": "scatter", "mode": "markers", "name": "straggler",
                     "x": [str(r["step"]) for r in slow], "y": [str(r["rank"]) for r in slow],
                     "marker": {"symbol": "x", "size": 14, "color": "#E45756", "line": {"width": 2}},
                     "text": [_text("%.3f ms, %.0f%% over the others' median; the others waited in %s"
                                    % (_ms(r["step_ns"]), 100 * (r["excess"] or 0), r["others_waited_in"] or "-"))
                              for r in slow],
                     "hovertemplate": "rank %{y}, step %{x}: %{text}<extra>straggler</extra>"})
    page.chart("steps", data, {"xaxis": {"title": {"text": "step"}, "type": "category"},
                               "yaxis": {"title": {"text": "rank"}, "type": "category"}},
               height=max(300, min(900, 60 + 22 * len(ranks))))
    if slow:
        page.table(["rank", "step", "step ms", "others' median ms", "excess", "others waited in"],
                   [[r["rank"], r["step"], _ms(r["step_ns"]), _ms(r["others_median_ns"]), r["excess"],
                     r["others_waited_in"]] for r in slow])


def _kernels(page: _Page, kernels: List[dict]) -> None:
    page.section("Kernels", "Device time by class on each rank, and the %d kernels with the most time over all "
                 "ranks (one bar each: names cut to fit stay distinct; the whole name is in the hover)."
                 % TOP_KERNELS)
    if not kernels:
        page.note("No device work in this dataset.")
        return
    by_class: Dict[str, Dict[int, int]] = {}
    for k in kernels:
        by_class.setdefault(k["class"], {}).setdefault(k["rank"], 0)
        by_class[k["class"]][k["rank"]] += k["total_ns"]
    ranks = sorted({k["rank"] for k in kernels})
    page.chart("kernel_classes", [
        {"type": "bar", "name": c, "x": [str(r) for r in ranks], "y": [_ms(by_class[c].get(r, 0)) for r in ranks],
         "marker": {"color": CLASS_COLORS.get(c)}} for c in sorted(by_class)],
        {"barmode": "stack", "xaxis": {"title": {"text": "rank"}, "type": "category"},
         "yaxis": {"title": {"text": "device time (ms)"}}}, height=360)
    totals: Dict[str, list] = {}
    for k in kernels:
        t = totals.setdefault(k["name"], [0, k["class"], 0])
        t[0] += k["total_ns"]
        t[2] += k["count"]
    top = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_KERNELS]
    labels = _output.kernel_labels([n for n, _ in top])
    page.chart("kernels", [
        {"type": "bar", "orientation": "h", "name": c,
         "y": [_text(lab) for lab, (n, t) in zip(labels, top) if t[1] == c],
         "x": [_ms(t[0]) for n, t in top if t[1] == c],
         "customdata": [[_text(n), t[2]] for n, t in top if t[1] == c],
         "marker": {"color": CLASS_COLORS.get(c)},
         "hovertemplate": "%{customdata[0]}<br>%{x:.3f} ms in %{customdata[1]} runs<extra>" + c + "</extra>"}
        for c in sorted({t[1] for _, t in top})],
        {"yaxis": {"type": "category", "categoryorder": "array", "categoryarray": [_text(x) for x in labels[::-1]],
                   "automargin": True},
         "xaxis": {"title": {"text": "total time over all ranks (ms)"}}, "barmode": "stack"},
        height=max(300, 60 + 24 * len(top)))


def _temporal(page: _Page, temporal: List[dict], idle: List[dict]) -> None:
    page.section("Temporal breakdown and idle time", "Per rank and device: the share of the span (first device "
                 "work's start to the last one's end) spent computing, in other device work, and idle; and the "
                 "idle time between work on each stream by cause.")
    if not temporal:
        page.note("No device work in this dataset.")
        return
    labels = ["%s:%s" % (t["rank"], "-" if t["device"] is None else t["device"]) for t in temporal]
    page.chart("temporal", [
        {"type": "bar", "name": name, "x": labels, "marker": {"color": color},
         "y": [100.0 * t[col] / t["span_ns"] if t["span_ns"] else 0 for t in temporal]}
        for name, col, color in (("compute", "compute_ns", "#4C78A8"), ("non-compute", "non_compute_ns", "#F58518"),
                                 ("idle", "idle_ns", "#BAB0AC"))],
        {"barmode": "stack", "xaxis": {"title": {"text": "rank:device"}, "type": "category"},
         "yaxis": {"title": {"text": "% of the span"}, "range": [0, 100]}}, height=380)
    if idle:
        cats = sorted({i["idle_category"] for i in idle})
        keys = sorted({(i["rank"], i["device"], i["stream"]) for i in idle},
                      key=lambda k: tuple((v is None, v or 0) for v in k))
        val = {(i["rank"], i["device"], i["stream"], i["idle_category"]): i["idle_ns"] for i in idle}
        page.chart("idle", [
            {"type": "bar", "name": c, "x": ["%s:%s:%s" % k for k in keys],
             "y": [_ms(val.get(k + (c,), 0)) for k in keys]} for c in cats],
            {"barmode": "stack", "xaxis": {"title": {"text": "rank:device:stream"}, "type": "category"},
             "yaxis": {"title": {"text": "idle time (ms)"}}}, height=380)


def _overlap(page: _Page, overlap: List[dict]) -> None:
    page.section("Communication and computation overlap", "Per rank: the time of communication, and the part of "
                 "it that computation overlapped.")
    if not overlap or not any(o["communication_ns"] for o in overlap):
        page.note("No communication in this dataset.")
        return
    ranks = [str(o["rank"]) for o in overlap]
    page.chart("overlap", [
        {"type": "bar", "name": "overlapped", "x": ranks, "y": [_ms(o["overlapped_ns"]) for o in overlap],
         "marker": {"color": "#54A24B"}},
        {"type": "bar", "name": "not overlapped", "x": ranks,
         "y": [_ms(o["communication_ns"] - o["overlapped_ns"]) for o in overlap], "marker": {"color": "#F58518"}}],
        {"barmode": "stack", "xaxis": {"title": {"text": "rank"}, "type": "category"},
         "yaxis": {"title": {"text": "communication time (ms)"}}}, height=360)


def _launch(page: _Page, launch: List[dict], quantiles: List[dict]) -> None:
    page.section("Launch delay", "Per rank: how long device work waited after its launch call ended (the "
                 "distribution: the share of launches waiting at most so long).")
    if not quantiles:
        page.note("No device work with its launch call in this dataset.")
        return
    shown = sorted(quantiles, key=lambda q: -(q["delay_ns"][-1] or 0))[:MAX_LINES]
    page.chart("launch", [
        {"type": "scatter", "mode": "lines+markers", "name": "rank %s" % q["rank"],
         "x": [max(d, 0) / 1e3 for d in q["delay_ns"]], "y": [5 * i for i in range(len(q["delay_ns"]))]}
        for q in sorted(shown, key=lambda q: q["rank"])],
        {"xaxis": {"title": {"text": "launch delay (us)"}}, "yaxis": {"title": {"text": "% of launches"}}},
        height=380)
    if len(quantiles) > len(shown):
        page.note("The %d ranks with the longest delays of %d." % (len(shown), len(quantiles)))
    page.table(["rank", "launches", "mean us", "median us", "p95 us", "max us"],
               [[r["rank"], r["kernels"], r["launch_delay_mean_ns"] / 1e3, r["launch_delay_median_ns"] / 1e3,
                 r["launch_delay_p95_ns"] / 1e3, r["launch_delay_max_ns"] / 1e3] for r in launch])


def _lines(page: _Page, key: str, points: List[dict], keys: List[str], value: str, scale: float, name, ytitle: str,
           t0) -> None:
    series: Dict[tuple, list] = {}
    for p in points:
        series.setdefault(tuple(p[k] for k in keys), []).append(p)
    top = sorted(series.items(), key=lambda kv: (-max(p[value] for p in kv[1]), kv[0]))[:MAX_LINES]
    page.chart(key, [
        {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": _text(name(k)),
         "x": [(p["ts"] - t0) / 1e6 for p in pts], "y": [p[value] * scale for p in pts]}
        for k, pts in sorted(top, key=lambda kv: tuple((v is None, v or 0) for v in kv[0]))],
        {"xaxis": {"title": {"text": "time since the first (ms)"}}, "yaxis": {"title": {"text": ytitle}}},
        height=380)
    if len(series) > len(top):
        page.note("The %d lines with the highest values of %d." % (len(top), len(series)))


def _queue_memory(page: _Page, queue: List[dict], chart: List[dict], memory: List[dict], mchart: List[dict],
                  bchart: List[dict]) -> None:
    t0 = min([p["ts"] for p in chart + mchart + bchart] or [0])
    page.section("Queue length", "Per stream: the work launched and not yet started, over time (the largest "
                 "value in each of a few hundred slices of the job's time).")
    if chart:
        _lines(page, "queue", chart, ["rank", "device", "stream"], "queue_length", 1,
               lambda k: "rank %s device %s stream %s" % k, "launched, not started", t0)
    else:
        page.note("No device work with its launch call in this dataset.")
    page.section("Memory", "Per device: memory in use over time, from the trace's allocations and frees "
                 "([memory] events; -1 is the host's pinned memory), and its peak; and the copies' bandwidth.")
    if mchart:
        _lines(page, "memory", mchart, ["rank", "device"], "in_use", 1 / 2 ** 20,
               lambda k: "rank %s device %s" % k, "in use (MiB)", t0)
        page.table(["rank", "device", "allocations", "frees", "peak MiB", "at the end MiB"],
                   [[m["rank"], m["device"], m["allocations"], m["frees"], m["peak_bytes"] / 2 ** 20,
                     m["last_bytes"] / 2 ** 20] for m in memory])
    else:
        page.note("No [memory] events in this dataset (record with profile_memory=True, or devtrace's memory "
                  "records).")
    if bchart:
        _lines(page, "bandwidth", bchart, ["rank", "type"], "gbps", 1, lambda k: "rank %s %s" % k, "GB/s", t0)


def slowest_window(steps: List[dict]):
    """The (rank, step) whose path the page draws: of the slowest step (the
    longest window of any rank), the rank whose path set its time."""
    ok = [s for s in steps if s["failed"] is None and s["path_ns"]]
    if not ok:
        return None
    slowest = max(ok, key=lambda s: (s["window_ns"], -s["rank"]))["step"]
    of_step = sorted([s for s in ok if s["step"] == slowest], key=lambda s: s["rank"])
    setter = next((s for s in of_step if s["sets_step"]), of_step[0])
    return setter["rank"], slowest


def _critical_path(page: _Page, steps: List[dict], segments: List[dict]) -> None:
    page.section("Critical path", "The chain of host operators, launches, device work and synchronisations that "
                 "decided a step's time. Per rank, the slowest step's path by what bounds it (the rank whose path "
                 "set the step's time is marked), and that rank's path over time.")
    chosen = slowest_window(steps)
    if chosen is None:
        page.note("No critical path: no operators or device work in this dataset's steps.")
        return
    slowest = chosen[1]
    of_step = sorted([s for s in steps if s["failed"] is None and s["path_ns"] and s["step"] == slowest],
                     key=lambda s: s["rank"])
    setter = next(s for s in of_step if s["rank"] == chosen[0])
    what = "step %s" % slowest if slowest is not None else "the whole trace"
    cols = [("cpu_ns", _critical.CPU), ("compute_ns", _critical.COMPUTE), ("communication_ns", _critical.COMMUNICATION),
            ("launch_ns", _critical.LAUNCH), ("kernel_gap_ns", _critical.KERNEL_GAP)]
    labels = ["%s%s" % (s["rank"], " (set the step)" if s["sets_step"] else "") for s in of_step]
    page.chart("critical_ranks", [
        {"type": "bar", "name": b, "x": labels, "y": [_ms(s[c]) for s in of_step], "marker": {"color": BOUND_COLORS[b]}}
        for c, b in cols],
        {"barmode": "stack", "title": {"text": "the critical path of %s per rank" % what},
         "xaxis": {"title": {"text": "rank"}, "type": "category"}, "yaxis": {"title": {"text": "ms"}}}, height=380)
    segs = [s for s in segments if s["rank"] == setter["rank"] and s["step"] == slowest]
    ws = segs[0]["window_start"] if segs else 0
    page.chart("critical_path", [
        {"type": "bar", "orientation": "h", "name": b,
         "y": [b for s in segs if s["bound_by"] == b],
         "base": [(s["start_ns"] - ws) / 1e6 for s in segs if s["bound_by"] == b],
         "x": [(s["end_ns"] - s["start_ns"]) / 1e6 for s in segs if s["bound_by"] == b],
         "customdata": [_text(s["name"]) for s in segs if s["bound_by"] == b],
         "marker": {"color": BOUND_COLORS[b]},
         "hovertemplate": "%{customdata}<br>%{base:.3f} ms + %{x:.3f} ms<extra></extra>"}
        for b in _critical.BOUNDS if any(s["bound_by"] == b for s in segs)],
        {"title": {"text": "rank %s, %s: the path over time" % (setter["rank"], what)}, "barmode": "overlay",
         "xaxis": {"title": {"text": "ms since the window's start"}}, "yaxis": {"automargin": True},
         "showlegend": False}, height=320)
    page.table(["rank", "step", "path ms", "host ms", "compute ms", "communication ms", "launch ms", "gaps ms",
                "sets the step"],
               [[s["rank"], s["step"], _ms(s["path_ns"]), _ms(s["cpu_ns"]), _ms(s["compute_ns"]),
                 _ms(s["communication_ns"]), _ms(s["launch_ns"]), _ms(s["kernel_gap_ns"]), s["sets_step"]]
                for s in of_step])


def _diff(page: _Page, rows: List[dict], threshold: float) -> None:
    page.section("What changed", "Over the job, each name whose time changed the most (positive: slower in the "
                 "test), by kind; those past the threshold (%g%% of their kind's time) in full colour." % threshold)
    named = [r for r in rows if r["rank"] is None and r["name"] is not None and r["diff_ns"]]
    top = sorted(named, key=lambda r: (-abs(r["diff_ns"]), r["what"], r["name"]))[:TOP_KERNELS]
    if not top:
        page.note("Nothing changed.")
        return
    labels = _output.kernel_labels(["%s: %s" % (r["what"], r["name"]) for r in top])
    page.chart("diff", [{
        "type": "bar", "orientation": "h", "y": [_text(x) for x in labels], "x": [_ms(r["diff_ns"]) for r in top],
        "customdata": [[_text(r["name"]), r["change"], _ms(r["base_ns"]), _ms(r["test_ns"])] for r in top],
        "marker": {"color": ["#E45756" if r["diff_ns"] > 0 else "#54A24B" for r in top],
                   "opacity": [1.0 if r["past_threshold"] else 0.45 for r in top]},
        "hovertemplate": "%{customdata[0]}<br>%{customdata[1]}: %{customdata[2]:.3f} ms to %{customdata[3]:.3f} ms"
                         "<extra></extra>"}],
        {"yaxis": {"type": "category", "categoryorder": "array", "categoryarray": [_text(x) for x in labels[::-1]],
                   "automargin": True},
         "xaxis": {"title": {"text": "change of time (ms)"}}, "showlegend": False},
        height=max(300, 60 + 24 * len(top)))
    kinds = [r for r in rows if r["rank"] is None and r["name"] is None]
    page.table(["kind", "base ms", "test ms", "change", "past the threshold"],
               [[r["what"], _ms(r["base_ns"]), _ms(r["test_ns"]), r["change"], r["past_threshold"]] for r in kinds])


def _library() -> str:
    with open(library_path(), encoding="utf-8") as f:
        return f.read().replace("</script", "<\\/script")


def _write(page: _Page, path: str) -> None:
    text = page.render(_library())
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_html(dataset: str, path: str, engine: str = "duckdb", hta: bool = False, dask=None, con=None,
               params: Optional[dict] = None, baseline: Optional[str] = None, memory_limit: Optional[str] = None,
               threshold: float = 5.0) -> str:
    """Writes the HTML report of the dataset to path; with baseline, what
    changed from that dataset to this one too."""
    library_path()
    res = _engine.run_reports(dataset, REPORTS, engine=engine, hta=hta, dask=dask, con=con, params=params,
                              memory_limit=memory_limit)
    r = {n: _rows(t) for n, t in res.items()}
    chosen = slowest_window(r["critical_steps"])
    r["critical_segments"] = []
    if chosen is not None:  # that one window's path, segment by segment
        seg = _engine.run_reports(dataset, ["critical_segments"], engine=engine, hta=hta, dask=dask, con=con,
                                  params=dict(params or {}, only=chosen), memory_limit=memory_limit)
        r["critical_segments"] = _rows(seg["critical_segments"])
    page = _Page("devtrace: %s" % os.path.abspath(dataset))
    ranks = sorted({x["rank"] for x in r["temporal"]} | {x["rank"] for x in r["steps"]})
    page.parts.append("<h1>devtrace analyze: %s</h1><p>%d rank%s, %d step%s%s.</p>" % (
        html.escape(os.path.abspath(dataset)), len(ranks), "" if len(ranks) == 1 else "s",
        len({x["step"] for x in r["steps"]}), "" if len({x["step"] for x in r["steps"]}) == 1 else "s",
        " (HTA's view)" if hta else ""))
    _steps(page, r["steps"])
    _critical_path(page, r["critical_steps"], r["critical_segments"])
    _kernels(page, r["kernels"])
    _temporal(page, r["temporal"], r["idle"])
    _overlap(page, r["overlap"])
    _launch(page, r["launch"], r["launch_quantiles"])
    _queue_memory(page, r["queue"], r["queue_chart"], r["memory"], r["memory_chart"], r["bandwidth_chart"])
    if baseline:
        rows = _engine.run_diff(baseline, dataset, engine=engine, hta=hta, dask=dask, con=con,
                                memory_limit=memory_limit, threshold=threshold / 100.0)
        _diff(page, _rows(rows), threshold)
    _write(page, path)
    return path


def write_diff_html(rows, path: str, base: str, test: str, threshold: float) -> str:
    """Writes devtrace diff's rows as an HTML chart to path."""
    page = _Page("devtrace diff: %s -> %s" % (base, test))
    page.parts.append("<h1>devtrace diff</h1><p>from %s to %s</p>" % (html.escape(os.path.abspath(base)),
                                                                      html.escape(os.path.abspath(test))))
    _diff(page, _rows(rows), threshold)
    _write(page, path)
    return path

"""devtrace analyze --html: one self-contained HTML file, opened in a
headless Chromium (Debian's chromium, driven over the DevTools protocol):
every chart draws, with no console error, no exception and no request
leaving the machine; a screenshot shows them. And what each command
imports: the charts' library is read, never imported."""

import json
import re


from conftest import BUILD, DEVTRACE, convert, kineto_trace, run

# two kernels whose names agree far past the 50 characters a label keeps
LONG = "void at::native::vectorized_elementwise_kernel<4, at::native::%s, at::detail::Array<char*, 3> >"
# a name that would end the page's script or be read as markup
HOSTILE = "</script><b>bold</b> & <br>"


def job_trace(rank, slow):
    """kineto_trace's steps (4 ranks; rank 2's step 3 slow), with two
    long-named kernels, a copy and [memory] events per step."""
    t = kineto_trace(rank, 5, slow=3 if slow else None)
    ev = t["traceEvents"]
    steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
    corr = 10_000
    allocated = 0
    for s in steps:
        for i, name in enumerate((LONG % "CUDAFunctor_add<float>", LONG % "CUDAFunctor_add<int>",
                                  "Memcpy HtoD (Pinned -> Device)", HOSTILE)):
            corr += 1
            ts = s["ts"] + 6000.0 + 200.0 * i
            copy = name.startswith("Memcpy")
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync" if copy else "cudaLaunchKernel",
                       "pid": 10, "tid": 10, "ts": ts, "dur": 5.0, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "gpu_memcpy" if copy else "kernel", "name": name, "pid": 0, "tid": 7,
                       "ts": ts + 20.0, "dur": 50.0 + 10 * i,
                       "args": {"device": 0, "stream": 7, "correlation": corr, "bytes": 1 << 20}})
        for nbytes in (64 << 20, -(64 << 20)):
            allocated += nbytes
            ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 10,
                       "ts": s["ts"] + (100.0 if nbytes > 0 else 9000.0),
                       "args": {"Total Allocated": allocated, "Bytes": nbytes, "Device Id": 0, "Device Type": 1,
                                "Addr": 1 << 30}})
    return t


def job(tmp_path, name, slow):
    paths = []
    for r in range(4):
        p = tmp_path / name / ("rank%d.json" % r)
        p.parent.mkdir(exist_ok=True)
        p.write_text(json.dumps(job_trace(r, slow and r == 2)))
        paths.append(p)
    return convert(paths, tmp_path / (name + ".ds"))


CHARTS = ["steps", "critical_ranks", "critical_path", "kernel_classes", "kernels", "temporal", "idle", "overlap",
          "launch", "queue", "memory", "bandwidth", "diff"]


def test_the_report_draws_in_a_browser(tmp_path):
    """The page of four ranks (one straggler) against a baseline run: one
    file, nothing fetched; in Chromium every chart draws (Plotly's SVG in
    each), the console has no error, the straggler is marked and the
    kernels whose names agree past what a label keeps have a bar each."""
    import browser
    assert browser.binary(), "chromium is not installed: bash scripts/deps.sh installs it"
    ds, base = job(tmp_path, "job", slow=True), job(tmp_path, "base", slow=False)
    page = tmp_path / "report.html"
    res = run([DEVTRACE, "analyze", ds, "--report", "steps", "--html", page, "--baseline", base])
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert not re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:)?//""", text)
    assert "Plotly" in text and len(text) < 8 << 20
    b = browser.Browser()
    try:
        b.open(page.as_uri())
        assert b.wait_for("document.body && document.body.dataset.charts") == str(len(CHARTS))
        drawn = b.evaluate("Array.from(document.querySelectorAll('.chart')).map(function (c) {"
                           " return [c.id, c.dataset.drawn, c.querySelectorAll('svg.main-svg').length]; })")
        assert [d[0] for d in drawn] == CHARTS
        assert all(d[1] == "yes" and d[2] > 0 for d in drawn), drawn
        assert b.evaluate("document.body.dataset.errors") == "0"
        straggler = b.evaluate("document.getElementById('steps').data.filter(function (t) {"
                               " return t.name === 'straggler'; }).map(function (t) { return [t.x, t.y]; })")
        assert straggler == [[["3"], ["2"]]]
        labels = b.evaluate("[].concat.apply([], document.getElementById('kernels').data.map(function (t) {"
                            " return t.y; }))")
        assert len(labels) == len(set(labels)) == 7
        assert sum(1 for x in labels if x.startswith("void at::native::vectorized_elementwise")) == 2
        # the hostile name is text: escaped for Plotly, shown as written
        assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt; &amp; &lt;br&gt;" in labels
        shown = b.evaluate("Array.from(document.querySelectorAll('#kernels .ytick text')).map(function (t) {"
                           " return t.textContent; })")
        assert HOSTILE in shown, shown
        shot = BUILD / "analysis-report.png"
        height = b.screenshot(str(shot))
        problems = browser.problems(b.drain())
    finally:
        b.close()
    assert problems == []
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and height > 3000 and len(png) > 100_000


def test_a_chart_that_fails_is_said_on_the_page(tmp_path):
    """Where the charts cannot be drawn (here: no library to draw them), the
    page says so: its banner, each chart marked failed."""
    import browser
    assert browser.binary(), "chromium is not installed: bash scripts/deps.sh installs it"
    from devtrace.analysis import _html
    page = _html._Page("no library")
    page.chart("one", [{"type": "bar", "x": [1, 2], "y": [3, 4]}], {})
    path = tmp_path / "broken.html"
    path.write_text(page.render(""))
    b = browser.Browser()
    try:
        b.open(path.as_uri())
        assert b.wait_for("document.body && document.body.dataset.charts") == "0"
        assert b.evaluate("document.getElementById('one').dataset.drawn") == "failed"
        assert b.evaluate("document.body.dataset.errors") == "1"
        assert "Plotly is not defined" in b.evaluate("document.getElementById('errors').textContent")
    finally:
        b.close()


def imports(res):
    return {m.group(1).split(".")[0] for m in re.finditer(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", res.stderr)}


def test_each_new_command_imports_what_it_uses(tmp_path):
    """analyze with every report, --html and --overlay, and diff, on DuckDB:
    DuckDB, and neither pyarrow, pandas, numpy nor plotly (the page's
    library is read from plotly's files)."""
    ds = job(tmp_path, "job", slow=True)
    env = {"PYTHONPROFILEIMPORTTIME": "1"}
    for args in (["analyze", ds, "--report", "all"],
                 ["analyze", ds, "--report", "critical_steps", "--html", tmp_path / "r.html", "--overlay",
                  tmp_path / "o"],
                 ["diff", ds, ds]):
        res = run([DEVTRACE, *args], env=env)
        assert res.returncode == 0, res.stderr[-2000:]
        mods = imports(res)
        assert "duckdb" in mods and not mods & {"pyarrow", "pandas", "numpy", "plotly", "matplotlib"}, \
            (args, sorted(mods))


def test_without_plotly_html_says_what_to_install(tmp_path, monkeypatch, capsys):
    """--html without the plotly package (whose plotly.min.js the page
    holds): one line saying what to install, exit status 2, before any
    report runs."""
    import importlib.util
    from devtrace.analysis import __main__ as cli
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "plotly" else real(name, *a))
    assert cli.main(["analyze", str(tmp_path / "none"), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "pip install plotly" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()

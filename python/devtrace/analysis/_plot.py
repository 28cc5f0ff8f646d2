"""PNG charts of the reports: step time by rank and step (a heatmap), the
kernel breakdown, the temporal breakdown."""

from __future__ import annotations

import os
from typing import Dict, List, Optional

import pyarrow as pa

from ._output import kernel_labels


def plot(dataset: str, outdir: str, engine: str = "duckdb", results: Optional[Dict[str, pa.Table]] = None,
         hta: bool = False, scheduler: Optional[str] = None) -> List[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import _engine
    results = dict(results or {})
    needed = [n for n in ("steps", "kernels", "temporal") if n not in results]
    if needed:
        dask = _engine.Dask(scheduler) if engine == "dask" else None
        try:
            for n in needed:
                results[n] = _engine.report(dataset, n, engine=engine, hta=hta, dask=dask)
        finally:
            if dask is not None:
                dask.close()
    os.makedirs(outdir, exist_ok=True)
    written = []

    steps = results["steps"].to_pandas()
    if len(steps):
        grid = steps.pivot_table(index="rank", columns="step", values="step_ns", aggfunc="sum") / 1e6
        fig, ax = plt.subplots(figsize=(max(4, 0.5 * grid.shape[1] + 2), max(3, 0.3 * grid.shape[0] + 1.5)))
        im = ax.imshow(grid.values, aspect="auto", cmap="viridis")
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=90)
        ax.set_yticks(range(grid.shape[0]), [str(r) for r in grid.index])
        ax.set_xlabel("step")
        ax.set_ylabel("rank")
        ax.set_title("step time (ms)")
        fig.colorbar(im, ax=ax)
        written.append(_save(fig, outdir, "steps.png"))

    kernels = results["kernels"].to_pandas()
    if len(kernels):
        fig = kernels_figure(kernels)
        written.append(_save(fig, outdir, "kernels.png"))

    temporal = results["temporal"].to_pandas()
    if len(temporal):
        fig, ax = plt.subplots(figsize=(max(4, 0.4 * len(temporal) + 2), 4))
        labels = ["%d:%d" % (r, d) for r, d in zip(temporal["rank"], temporal["device"].fillna(-1))]
        bottom = None
        for col in ("compute_ns", "non_compute_ns", "idle_ns"):
            vals = temporal[col].astype(float) / temporal["span_ns"].astype(float) * 100
            ax.bar(labels, vals, bottom=bottom, label=col[:-3].replace("_", " "))
            bottom = vals if bottom is None else bottom + vals
        ax.set_ylabel("% of the span")
        ax.set_xlabel("rank:device")
        ax.set_title("temporal breakdown")
        ax.legend()
        written.append(_save(fig, outdir, "temporal.png"))
    return written


TOP_KERNELS = 15


def kernels_figure(kernels):
    """The TOP_KERNELS kernels with the most time over all ranks, one bar
    each, the largest at the top."""
    import matplotlib.pyplot as plt
    top = kernels.groupby("name")["total_ns"].sum()
    top = top.reset_index().sort_values(["total_ns", "name"], ascending=[False, True]).head(TOP_KERNELS)
    labels = kernel_labels(list(top["name"]))
    values = [v / 1e6 for v in top["total_ns"]]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(values) + 1.5))
    # bars at positions, not by label: labels that matched would share a bar
    pos = list(range(len(values)))[::-1]
    ax.barh(pos, values)
    ax.set_yticks(pos, labels)
    ax.set_xlabel("total time over all ranks (ms)")
    ax.set_title("kernel breakdown")
    return fig


def _save(fig, outdir: str, name: str) -> str:
    import matplotlib.pyplot as plt
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

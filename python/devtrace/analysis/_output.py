"""A report's rows on a terminal, or as CSV, JSON or Parquet. The rows are
DuckDB's (_engine.Rows), or Arrow tables for Parquet."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
from typing import Dict, List, Optional


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
            return "%d" % v
        return "%.4g" % v if abs(v) < 1e6 else "%.0f" % v
    s = str(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _rows(t):
    """(columns, rows) of Rows or an Arrow table."""
    if hasattr(t, "rows"):
        return t.columns, t.rows
    return t.column_names, [tuple(r.values()) for r in t.to_pylist()]


columns_rows = _rows


def select(t, keep):
    """The rows of t (Rows or an Arrow table) for which keep(row) holds, of
    t's kind."""
    cols, rows = _rows(t)
    mask = [bool(keep(r)) for r in rows]
    if hasattr(t, "rows"):
        return type(t)(cols, [r for r, k in zip(rows, mask) if k])
    import pyarrow as pa
    return t.filter(pa.array(mask, pa.bool_()))


def table(t) -> str:
    cols, rows = _rows(t)
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    out = io.StringIO()
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.rjust(w) if v[:1].isdigit() or v[:1] == "-" else v.ljust(w)
                            for v, w in zip(row, widths)).rstrip() + "\n")
    return out.getvalue()


def _json_value(v):
    return None if v != v else str(v)


def write(results: Dict[str, object], fmt: str, output: Optional[str]) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq
        os.makedirs(output, exist_ok=True)
        for name, t in results.items():
            pq.write_table(t, os.path.join(output, name + ".parquet"))
        return
    text = io.StringIO()
    for name, t in results.items():
        cols, rows = _rows(t)
        if fmt == "table":
            if len(results) > 1:
                text.write("== %s ==\n" % name)
            text.write(table(t))
        elif fmt == "csv":
            if len(results) > 1:
                text.write("# %s\n" % name)
            w = csv.writer(text, lineterminator="\n")
            w.writerow(cols)
            w.writerows(rows)
    if fmt == "json":
        doc = {}
        for n, t in results.items():
            cols, rows = _rows(t)
            doc[n] = [dict(zip(cols, r)) for r in rows]
        json.dump(doc if len(doc) > 1 else next(iter(doc.values())), text, indent=1, default=_json_value)
        text.write("\n")
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text.getvalue())
    else:
        sys.stdout.write(text.getvalue())


LABEL_CHARS = 50


def kernel_labels(names: List[str], width: int = LABEL_CHARS) -> List[str]:
    """Each name cut to width characters, kept distinct: names that share
    their first characters (templated kernels do) are told apart by a
    number, so that no two names share a bar of a chart."""
    labels = []
    seen: Dict[str, int] = {}
    for n in names:
        label = n if len(n) <= width else n[:width - 1] + "\u2026"
        k = seen.get(label, 0) + 1
        seen[label] = k
        labels.append(label if k == 1 else "%s (%d)" % (label, k))
    return labels

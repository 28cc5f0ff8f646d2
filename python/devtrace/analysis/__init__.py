"""Analysis of traces at scale: conversion to a Parquet dataset
(`convert`), and reports over it run by DuckDB or a Dask cluster
(docs/analysis.md).

The names are imported when first used: `devtrace analyze` imports DuckDB
alone, `devtrace convert` pyarrow alone."""

__all__ = ["convert", "report", "diff", "launch_events", "check_dataset", "Dask", "write_overlay", "write_html"]

_WHERE = {"convert": "_columns", "report": "_engine", "diff": "_engine", "launch_events": "_engine",
          "check_dataset": "_engine", "Dask": "_engine", "write_overlay": "_overlay", "write_html": "_html"}


def __getattr__(name):
    if name in _WHERE:
        import importlib
        value = getattr(importlib.import_module("." + _WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(list(globals()) + __all__)

"""Analysis of traces at scale: conversion to a Parquet dataset
(`convert`), and reports over it run by DuckDB or a Dask cluster
(docs/analysis.md)."""

from ._columns import convert
from ._engine import Dask, check_dataset, launch_events, report

__all__ = ["convert", "report", "launch_events", "check_dataset", "Dask"]

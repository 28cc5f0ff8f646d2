"""Analysis of traces at scale: conversion to a Parquet dataset
(`convert`), and reports over it run by DuckDB or a Dask cluster
(docs/analysis.md)."""

from ._columns import convert

__all__ = ["convert"]

"""Benchmarks for the targets of docs/benchmarks.md; run as ``python -m bench.<name>``."""

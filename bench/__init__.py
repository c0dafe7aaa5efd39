"""Benchmarks for the non-functional targets of PRODUCT.md; run as ``python -m bench.<name>``."""

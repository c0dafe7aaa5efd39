"""Concord's pure core: statistics, metrics, the results builder and the file formats.

Nothing in this package imports Django (tests/unit/test_purity.py checks it in a fresh
interpreter): arrays, rows and bytes in, frozen dataclasses, dicts and bytes out. The apps
(`studies`, `annotation`, `analysis`, `exports`) load data from the database and call in here.
"""

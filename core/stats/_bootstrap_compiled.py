"""The bootstrap of a metric–human correlation over many items, compiled with numba.

Pure numpy + numba, no Django.  Same numbers as the numpy path of
``core.stats.correlation_uncertainty`` (which stays the reference, and the engine for small
inputs and where numba is not installed): for each resample, given as counts per item, Pearson's r
of the values repeated that many times and Spearman's r of the resample's own average ranks (a
repeated item is a tie), nan where a side is constant in the resample.

Layout: the counts of a block of ``WIDTH`` resamples are stored item by item, ``counts[i, r]``,
so that one item's counts in all of them share a cache line.  A resample's ranks need the items
in the metric's order, a random walk over the items; walking them once for ``WIDTH`` resamples at
a time, with the inner loop over the resamples (contiguous, vectorised), is what makes a million
items affordable: at 10⁶ items a count row no longer fits in the processor's cache, and one walk
per resample cost 191 s for a run's 14 intervals.  A value group's average rank is known once its
counts are summed, so the weighted sums of Pearson and Spearman take it at once; the sums of a
resample run in the metric's order, whatever the blocking.  The first call in a process compiles
the kernels (a few seconds; numba caches the machine code beside this file when it can write
there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # numba is optional: without it the numpy path computes the same correlations
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None
WIDTH = 32  # resamples per block: 32 counts of 2 bytes, one cache line per item


def _count(idx: Any, out: Any, column: int) -> None:
    """Add the draws of each row of ``idx`` to its own column of ``out`` (items × resamples),
    from ``column`` on; a count saturates at 65 535 (an item drawn that often in one resample is
    beyond any probability) rather than wrapping."""
    b, n = idx.shape
    for r in range(b):
        c = column + r
        for j in range(n):
            i = idx[r, j]
            if out[i, c] < 65535:
                out[i, c] += 1


def _group_ranks(counts: Any, order: Any, starts: Any, width: int, out: Any) -> Any:
    """Fill ``out[g, r]`` with the average rank of value group ``g`` in resample ``r`` (of the
    first ``width``); return whether each resample holds a single value (its correlation is
    undefined)."""
    n_groups = starts.size - 1
    before = np.zeros(width)
    present = np.zeros(width, dtype=np.int64)
    total = np.empty(width)
    for g in range(n_groups):
        total[:] = 0.0
        for j in range(starts[g], starts[g + 1]):
            row = counts[order[j]]
            for r in range(width):
                total[r] += row[r]
        for r in range(width):
            out[g, r] = before[r] + (total[r] + 1.0) / 2.0
            before[r] += total[r]
            present[r] += total[r] > 0.0
    return present <= 1


def _correlations(counts: Any, order: Any, starts: Any, xs: Any, ys: Any, y_group: Any,
                  y_ranks: Any, y_constant: Any, centre: float, width: int, pearson: Any,
                  spearman: Any) -> None:
    """Pearson's r of the values and of the average ranks (less ``centre``), each item
    weighted by its count, of the first ``width`` resamples of ``counts`` (items × resamples),
    into ``pearson`` and ``spearman`` (nan where a side is constant).

    One walk over the items in the order of x (``order``; ``starts`` bounds the groups of equal
    x) for every resample of the block.  ``xs``, ``ys`` and ``y_group`` are the centred values
    and the y groups in that order; ``y_ranks[g, r]`` the average rank of y's group ``g`` in
    resample ``r`` (`_group_ranks`).
    """
    n_groups = starts.size - 1
    s = np.zeros((11, width))  # total, Σx, Σy, Σxx, Σyy, Σxy, Σa, Σc, Σaa, Σcc, Σac
    before = np.zeros(width)
    present = np.zeros(width, dtype=np.int64)
    in_group = np.empty(width)
    a = np.empty(width)
    for g in range(n_groups):
        lo = starts[g]
        hi = starts[g + 1]
        in_group[:] = 0.0
        for j in range(lo, hi):
            row = counts[order[j]]
            for r in range(width):
                in_group[r] += row[r]
        for r in range(width):
            a[r] = before[r] + (in_group[r] + 1.0) / 2.0 - centre
            before[r] += in_group[r]
            present[r] += in_group[r] > 0.0
        for j in range(lo, hi):
            row = counts[order[j]]
            ranks = y_ranks[y_group[j]]
            x = xs[j]
            y = ys[j]
            # Branch-free: an item drawn 0 times (a third of them) adds zeros.
            for r in range(width):
                w = float(row[r])
                c = ranks[r] - centre
                wa = w * a[r]
                wc = w * c
                s[0, r] += w
                s[1, r] += w * x
                s[2, r] += w * y
                s[3, r] += w * x * x
                s[4, r] += w * y * y
                s[5, r] += w * x * y
                s[6, r] += wa
                s[7, r] += wc
                s[8, r] += wa * a[r]
                s[9, r] += wc * c
                s[10, r] += wa * c
    for r in range(width):
        if y_constant[r] or present[r] <= 1:
            pearson[r] = np.nan
            spearman[r] = np.nan
            continue
        t = s[0, r]
        pearson[r] = _clipped((s[5, r] - s[1, r] * s[2, r] / t)
                              / np.sqrt((s[3, r] - s[1, r] * s[1, r] / t)
                                        * (s[4, r] - s[2, r] * s[2, r] / t)))
        spearman[r] = _clipped((s[10, r] - s[6, r] * s[7, r] / t)
                               / np.sqrt((s[8, r] - s[6, r] * s[6, r] / t)
                                         * (s[9, r] - s[7, r] * s[7, r] / t)))


def _clipped(r: float) -> float:
    if r > 1.0:
        return 1.0
    if r < -1.0:
        return -1.0
    return r


count: Any = _count
group_ranks: Any = _group_ranks
correlations: Any = _correlations
if AVAILABLE:
    # error_model="numpy": 0/0 is nan as in numpy, never a ZeroDivisionError.
    _jit = numba.njit(cache=True, nogil=True, error_model="numpy")
    _clipped = _jit(_clipped)  # the kernels call the compiled one
    count = _jit(_count)
    group_ranks = _jit(_group_ranks)
    correlations = _jit(_correlations)

"""How sure a metric–human correlation is: bootstrap intervals and Williams' test.

- `bootstrap_correlation`: the percentile bootstrap interval (Efron and Tibshirani 1993) of
  Pearson's and Spearman's correlation between a metric and the human score of each item,
  resampling items with replacement from an injected ``rng``.
- `williams_test`: Williams' (1959) t-test of the difference between two dependent correlations
  that share one variable, r12 (human–metric A) against r13 (human–metric B) given r23 (A–B), in
  the form of Steiger 1980, eq. 7, as WMT's metrics tasks use it (Graham and Baldwin 2014).
- `compare_metrics`: every pair of metrics against the same human scores, with a verdict "a
  agrees with the humans better", "b does", or "the data cannot tell".

Pure numpy/scipy, no Django. docs/statistics/correlation-intervals.md and
docs/statistics/williams.md give the definitions, the worked examples and the choices.

>>> res = williams_test(r12=0.80, r13=0.72, r23=0.89, n=26)
>>> round(res.t, 3), res.df, round(res.p_two_sided, 3)
(1.361, 23, 0.187)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from core.stats import _bootstrap_compiled
from core.stats._threads import available_threads
from core.stats._types import FloatArray
from core.stats.correlations import correlate
from core.stats.williams import (
    MetricComparison,
    WilliamsResult,
    compare_metrics,
    williams_test,
)

__all__ = [
    "CorrelationInterval",
    "MetricComparison",
    "WilliamsResult",
    "bootstrap_correlation",
    "bootstrap_correlations",
    "compare_metrics",
    "williams_test",
]

# Cells (resamples × items) per vectorised block: bounds memory at large n.
_BLOCK_CELLS = 2_000_000


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class CorrelationInterval:
    """Hold a correlation with its percentile bootstrap interval (``None`` + reason if undefined).

    ``n_undefined`` counts resamples in which the correlation is undefined (a side constant in
    the resample); they are left out of the percentiles.
    """

    pearson: float | None
    pearson_low: float | None
    pearson_high: float | None
    spearman: float | None
    spearman_low: float | None
    spearman_high: float | None
    n_items: int
    n_resamples: int
    n_undefined: int
    confidence: float
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {pearson, pearson_ci, spearman, spearman_ci, n_items, …[, reason]}."""
        def ci(low: float | None, high: float | None) -> list[float] | None:
            return None if low is None or high is None else [low, high]

        rec: dict[str, object] = {
            "pearson": self.pearson,
            "pearson_ci": ci(self.pearson_low, self.pearson_high),
            "spearman": self.spearman,
            "spearman_ci": ci(self.spearman_low, self.spearman_high),
            "n_items": self.n_items,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "confidence": self.confidence,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


class _Groups:
    """The items grouped by equal value, in ascending order, for a resample's average ranks."""

    def __init__(self, values: FloatArray) -> None:
        self.order = np.argsort(values, kind="stable")
        ordered = values[self.order]
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        group_sorted = np.cumsum(np.r_[True, ordered[1:] != ordered[:-1]]) - 1
        self.group = np.empty(values.size, dtype=np.int64)
        self.group[self.order] = group_sorted

    def ranks(self, counts: FloatArray) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
        """Return each item's average rank in each resample (rows of ``counts``), and whether
        the resample holds a single value (its correlation is undefined)."""
        per_group = np.add.reduceat(counts[:, self.order], self.starts, axis=1)
        before = np.cumsum(per_group, axis=1) - per_group
        rank = before + (per_group + 1.0) / 2.0
        constant = (per_group > 0).sum(axis=1) <= 1
        return rank[:, self.group], constant


def _weighted_pearson_fixed(w: FloatArray, x: FloatArray, y: FloatArray,
                            constant: npt.NDArray[np.bool_]) -> FloatArray:
    """`_weighted_pearson` with the same values in every row (matrix–vector products)."""
    total = w.sum(axis=1)
    sx, sy = w @ x, w @ y
    sxx = w @ (x * x) - sx * sx / total
    syy = w @ (y * y) - sy * sy / total
    sxy = w @ (x * y) - sx * sy / total
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    r[constant] = np.nan
    return np.asarray(np.clip(r, -1.0, 1.0), dtype=np.float64)


def _weighted_pearson(w: FloatArray, x: FloatArray, y: FloatArray,
                      constant: npt.NDArray[np.bool_]) -> FloatArray:
    """Return Pearson's r of each row's values repeated ``w`` times (nan where ``constant``)."""
    total = w.sum(axis=1)
    wx, wy = w * x, w * y
    sx, sy = wx.sum(axis=1), wy.sum(axis=1)
    sxx = (wx * x).sum(axis=1) - sx * sx / total
    syy = (wy * y).sum(axis=1) - sy * sy / total
    sxy = (wx * y).sum(axis=1) - sx * sy / total
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    r[constant] = np.nan
    return np.asarray(np.clip(r, -1.0, 1.0), dtype=np.float64)


def bootstrap_correlation(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    engine: Engine = "auto",
) -> CorrelationInterval:
    """Return Pearson and Spearman of ``x`` and ``y`` with percentile bootstrap intervals.

    ``x`` (e.g. a metric) and ``y`` (e.g. the items' mean human label) hold one value per item;
    pairs with a ``np.nan`` on either side are dropped first, as in ``correlations.correlate``.
    The n remaining items are resampled with replacement ``n_resamples`` (1000) times from
    ``rng``; in each resample Pearson is computed on the values and Spearman on the resample's own
    average ranks (a repeated item is a tie). The interval is the ``(1 − confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles (linear interpolation, as the alpha intervals) of the
    resamples in which the correlation is defined (Efron and Tibshirani 1993, §13.3). It reflects
    the sampling of items only: the human score of an item is taken as given. Undefined point
    estimate (fewer than 3 items, a constant side) → every number ``None`` + reason; fewer than
    half the resamples defined → the intervals ``None`` + reason.

    ``engine``: ``"numpy"`` (the reference), ``"compiled"`` (numba, ``_bootstrap_compiled``: the
    same numbers to rounding, about ten times faster on many items) or ``"auto"`` (compiled from
    ``COMPILED_MIN_ITEMS`` items when numba is installed).

    Example: 60 items whose human mean is the metric plus noise of equal spread give r ≈ 0.7 and
    an interval of width ≈ 0.25 (see the tests).
    """
    _check(n_resamples, confidence, engine)
    pair = _Pair.of(x, y)
    if pair.point.pearson is not None and pair.point.spearman is not None:
        _resample([pair], rng=rng, n_resamples=n_resamples, engine=engine)
    return pair.interval(n_resamples, confidence)


def bootstrap_correlations(
    pairs: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    *,
    seed: int,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    engine: Engine = "auto",
) -> list[CorrelationInterval]:
    """Return the interval of every (x, y) pair, each resampled from a fresh generator of ``seed``.

    Equals ``[bootstrap_correlation(x, y, rng=np.random.default_rng(seed), ...) for x, y in
    pairs]`` (the results document's intervals: each record's own, reproducible alone), at a
    fraction of the cost: pairs with the same number of items draw the same resamples from such a
    generator, so each block of resamples is drawn and counted once for all of them, and pairs
    sharing their human side share its ranks.  Example: the seven metrics of a similarity study
    against one column of human means draw one set of resamples.
    """
    _check(n_resamples, confidence, engine)
    found: list[CorrelationInterval | None] = [None] * len(pairs)
    for batch in _batches(pairs):
        prepared = {k: _Pair.of(*pairs[k]) for k in batch}
        groups: dict[int, list[_Pair]] = {}
        for pair in prepared.values():
            if pair.point.pearson is not None and pair.point.spearman is not None:
                groups.setdefault(pair.n, []).append(pair)
        for group in groups.values():
            _resample(group, rng=np.random.default_rng(seed), n_resamples=n_resamples,
                      engine=engine)
        for k, pair in prepared.items():
            found[k] = pair.interval(n_resamples, confidence)
    assert all(interval is not None for interval in found)  # every index is in one batch
    return cast(list[CorrelationInterval], found)


# What one batch of pairs may hold while it is resampled: about _PAIR_BYTES per item and pair
# (its values, their order, its human side's ranks).  A crowd study's filtered correlations are
# hundreds of pairs over a million items, tens of gigabytes at once; in batches its peak stays
# near this bound, and a batch costs one more draw of the resamples.
_BATCH_BYTES = 1 << 30
_PAIR_BYTES = 64


def batch_pairs(n_items: int) -> int:
    """How many pairs of ``n_items`` items one batch of `bootstrap_correlations` holds."""
    return max(1, _BATCH_BYTES // (max(1, n_items) * _PAIR_BYTES))


def _batches(pairs: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]]) -> list[list[int]]:
    """Split the pairs' indices into batches within `_BATCH_BYTES`, pairs of one human side
    (the same ``y`` object) kept together where a batch can hold them, so they share its ranks.
    """
    by_side: dict[int, list[int]] = {}
    for k, (_, y) in enumerate(pairs):
        by_side.setdefault(id(y), []).append(k)
    batches: list[list[int]] = []
    held = 0
    for side in by_side.values():
        for k in side:
            cost = max(1, np.size(pairs[k][1])) * _PAIR_BYTES
            if batches and held + cost <= _BATCH_BYTES:
                batches[-1].append(k)
                held += cost
            else:
                batches.append([k])
                held = cost
    return batches


Engine = Literal["auto", "numpy", "compiled"]
# From this many items "auto" takes the compiled engine: below, numpy is fast enough and a
# process saves numba's compilation.
COMPILED_MIN_ITEMS = 2_000


def _check(n_resamples: int, confidence: float, engine: str) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if engine not in ("auto", "numpy", "compiled"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'compiled', got {engine!r}")
    if engine == "compiled" and not _bootstrap_compiled.AVAILABLE:
        raise ValueError("engine 'compiled' needs numba, which is not installed")


class _Pair:
    """One correlation to bootstrap: its items (nan pairs dropped), point estimate and, once
    resampled, the resamples' correlations."""

    def __init__(self, x: FloatArray, y: FloatArray) -> None:
        self.x, self.y = x, y
        self.n = int(x.size)
        self.point = correlate(x, y)
        self.pearson: FloatArray | None = None
        self.spearman: FloatArray | None = None

    @classmethod
    def of(cls, x: npt.ArrayLike, y: npt.ArrayLike) -> _Pair:
        xa = np.asarray(x, dtype=float)
        ya = np.asarray(y, dtype=float)
        if xa.ndim != 1 or xa.shape != ya.shape:
            raise ValueError(f"x and y must be 1-D of equal length, got {xa.shape} and "
                             f"{ya.shape}")
        ok = np.isfinite(xa) & np.isfinite(ya)
        return cls(xa[ok], ya[ok])

    def interval(self, n_resamples: int, confidence: float) -> CorrelationInterval:
        point, n = self.point, self.n
        if point.pearson is None or point.spearman is None or self.pearson is None \
                or self.spearman is None:
            return CorrelationInterval(None, None, None, None, None, None, n, n_resamples, 0,
                                       confidence, point.reason)
        pearson, spearman = self.pearson, self.spearman
        undefined = int(np.isnan(pearson).sum())
        tail = (1.0 - confidence) / 2.0
        if undefined * 2 > n_resamples:
            return CorrelationInterval(
                point.pearson, None, None, point.spearman, None, None, n, n_resamples,
                undefined, confidence,
                "the correlation is undefined in more than half the resamples")
        p_lo, p_hi = np.quantile(pearson[~np.isnan(pearson)], [tail, 1.0 - tail])
        s_lo, s_hi = np.quantile(spearman[~np.isnan(spearman)], [tail, 1.0 - tail])
        return CorrelationInterval(point.pearson, float(p_lo), float(p_hi), point.spearman,
                                   float(s_lo), float(s_hi), n, n_resamples, undefined,
                                   confidence)


def _resample(pairs: Sequence[_Pair], *, rng: np.random.Generator, n_resamples: int,
              engine: Engine) -> None:
    """Fill each pair's resampled correlations; the pairs share n and the draws of ``rng``."""
    n = pairs[0].n
    compiled = engine == "compiled" or (
        engine == "auto" and _bootstrap_compiled.AVAILABLE and n >= COMPILED_MIN_ITEMS)
    pearson = [np.empty(n_resamples) for _ in pairs]
    spearman = [np.empty(n_resamples) for _ in pairs]
    y_groups: dict[bytes, _Groups] = {}  # the human side, shared by the metrics of one row
    y_of = []
    for pair in pairs:
        key = pair.y.tobytes()
        if key not in y_groups:
            y_groups[key] = _Groups(pair.y)
        y_of.append(key)
    block = max(1, _BLOCK_CELLS // n)
    centre = (n + 1) / 2.0
    draws = [(lo, min(n_resamples, lo + block)) for lo in range(0, n_resamples, block)]
    if not compiled:
        x_groups = [_Groups(pair.x) for pair in pairs]
        centred = [(pair.x - pair.x.mean(), pair.y - pair.y.mean()) for pair in pairs]
        for lo, hi in draws:
            _numpy_block(rng.integers(0, n, size=(hi - lo, n)), n, lo, hi, y_groups, x_groups,
                         y_of, centred, centre, pearson, spearman)
    else:
        _compiled_resample(rng, n, draws, pairs, y_groups, y_of, centre, pearson, spearman)
    for pair, p, r in zip(pairs, pearson, spearman, strict=True):
        pair.pearson, pair.spearman = p, r


def _compiled_resample(rng: np.random.Generator, n: int, draws: Sequence[tuple[int, int]],
                       pairs: Sequence[_Pair], y_groups: Mapping[bytes, _Groups],
                       y_of: Sequence[bytes], centre: float, pearson: Sequence[FloatArray],
                       spearman: Sequence[FloatArray]) -> None:
    """Fill every pair's resamples with the compiled engine (`_bootstrap_compiled`).

    The draws are those of the numpy engine, call by call (``draws``); their counts go, item by
    item, into blocks of WIDTH resamples.  While one block's pairs run side by side in threads
    (the kernels release the GIL), the next block is drawn and counted into a second buffer.
    """
    width = _bootstrap_compiled.WIDTH
    # Each pair's values in the order of its metric, built one pair at a time (its groups and
    # centred copies are dropped at once); narrow integers, less memory to walk.
    in_x_order = []
    for pair, key in zip(pairs, y_of, strict=True):
        gx = _Groups(pair.x)
        order = gx.order
        in_x_order.append((order.astype(np.int32), np.append(gx.starts, n).astype(np.int64),
                           pair.x[order] - pair.x.mean(), pair.y[order] - pair.y.mean(),
                           y_groups[key].group[order].astype(np.int32)))
        del gx, order
    y_order = {key: (g.order.astype(np.int32), np.append(g.starts, n).astype(np.int64))
               for key, g in y_groups.items()}
    buffers = [np.zeros((n, width), dtype=np.uint16) for _ in range(2)]
    pending: list[list[Any]] = [[], []]
    with ThreadPoolExecutor(max_workers=max(1, min(available_threads(), len(pairs)))) as pool:
        current, filled, first = 0, 0, 0

        def flush() -> None:
            nonlocal current, filled, first
            counts = buffers[current]
            y_ranks = {}
            for key, (order, bounds) in y_order.items():
                out = np.empty((bounds.size - 1, width))
                constant = _bootstrap_compiled.group_ranks(counts, order, bounds, width, out)
                y_ranks[key] = (out, constant)
            pending[current] = [
                pool.submit(_compiled_pair, counts, arrays, y_ranks[key], centre, filled,
                            pearson[k][first:first + filled],
                            spearman[k][first:first + filled])
                for k, (key, arrays) in enumerate(zip(y_of, in_x_order, strict=True))]
            first += filled
            current, filled = 1 - current, 0
            for done in pending[current]:  # the other buffer's pairs are done before reuse
                done.result()
            pending[current] = []
            buffers[current][:] = 0

        for lo, hi in draws:
            idx = rng.integers(0, n, size=(hi - lo, n))
            k = 0
            while k < hi - lo:
                m = min(width - filled, hi - lo - k)
                _bootstrap_compiled.count(idx[k:k + m], buffers[current], filled)
                filled, k = filled + m, k + m
                if filled == width:
                    flush()
        if filled:
            flush()
        for waiting in pending:
            for done in waiting:
                done.result()


def _compiled_pair(counts: Any, arrays: tuple[Any, ...], y_ranks: tuple[Any, Any],
                   centre: float, width: int, pearson: FloatArray, spearman: FloatArray) -> None:
    """One pair's resampled correlations of one block (`_bootstrap_compiled.correlations`)."""
    _bootstrap_compiled.correlations(counts, *arrays, *y_ranks, centre, width, pearson,
                                     spearman)


def _numpy_block(idx: npt.NDArray[np.int64], n: int, lo: int, hi: int,
                 y_groups: Mapping[bytes, _Groups], x_groups: Sequence[_Groups],
                 y_of: Sequence[bytes], centred: Sequence[tuple[FloatArray, FloatArray]],
                 centre: float, pearson: Sequence[FloatArray],
                 spearman: Sequence[FloatArray]) -> None:
    """Fill resamples ``lo:hi`` of every pair with numpy (the reference engine)."""
    # Each resample as counts per item (the same resample, without sorting it): Pearson from
    # weighted sums, Spearman from the resample's average ranks computed per group of equal
    # values (a repeated item is a tie).
    weights = np.bincount((np.arange(hi - lo)[:, None] * n + idx).ravel(),
                          minlength=(hi - lo) * n).reshape(hi - lo, n).astype(float)
    ranks = {key: g.ranks(weights) for key, g in y_groups.items()}
    for k, (gx, key, (xc, yc)) in enumerate(zip(x_groups, y_of, centred, strict=True)):
        ranks_x, constant_x = gx.ranks(weights)
        ranks_y, constant_y = ranks[key]
        constant = constant_x | constant_y
        pearson[k][lo:hi] = _weighted_pearson_fixed(weights, xc, yc, constant)
        spearman[k][lo:hi] = _weighted_pearson(weights, ranks_x - centre, ranks_y - centre,
                                               constant)

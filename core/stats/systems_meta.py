"""How well a metric ranks systems: system-level correlations with bootstrap intervals,
pairwise accuracy and soft pairwise accuracy with permutation p-values, and item-level
correlations without grouping, grouped by item and grouped by system (no Django).

Soft pairwise accuracy (SPA; Thompson et al. 2024) compares, for every two systems i and j,
the p-value of "i is better than j" from the humans' ratings with the same p-value from the
metric's item scores: SPA = mean over pairs of 1 − |p_human(i, j) − p_metric(i, j)|, the p-values
being one-sided paired permutation tests on the sources both systems answered
(`core.stats.systems.sign_flip_test`).  Pairwise accuracy (Kocmi et al. 2021) is the share of
pairs the metric orders as the humans do.  docs/statistics/systems.md gives every definition.

>>> round(pairwise_accuracy([3.0, 2.0, 1.0], [0.9, 0.3, 0.5]), 3)
0.667
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import permutations

import numpy as np
import numpy.typing as npt
from scipy import stats

from core.stats._types import FloatArray, IntArray
from core.stats.williams import williams_test

STATISTICS = ("pearson", "spearman", "kendall")
_RTOL = 1e-12


@dataclass(frozen=True)
class MetaValue:
    """Hold one meta-evaluation number: value, interval, p-value, n (None + reason if missing)."""

    statistic: str
    value: float | None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    n: int = 0
    reason: str | None = None


def _f(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# --------------------------------------------------------------------------- row statistics


def _row_pearson(x: FloatArray, y: FloatArray) -> FloatArray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)


def _row_kendall(x: FloatArray, y: FloatArray) -> FloatArray:
    """Kendall's τ-b of each row pair (as `scipy.stats.kendalltau`), over all pairs of columns."""
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    concordance = (sx * sy).sum(axis=1)
    den = np.sqrt(np.count_nonzero(sx, axis=1) * np.count_nonzero(sy, axis=1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, concordance / np.where(den > 0, den, 1.0), np.nan)


def row_correlations(x: FloatArray, y: FloatArray, statistic: str) -> FloatArray:
    """Return the correlation of each row of ``x`` with the same row of ``y`` (2-D, no nan)."""
    if statistic == "pearson":
        return _row_pearson(x, y)
    if statistic == "spearman":
        return _row_pearson(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1))
    if statistic == "kendall":
        return _row_kendall(x, y)
    raise ValueError(f"statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")


def _point(x: FloatArray, y: FloatArray, statistic: str) -> tuple[float, float]:
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
          "kendall": stats.kendalltau}[statistic]
    res = fn(x, y)
    return float(res.statistic), float(res.pvalue)


# --------------------------------------------------------------------------- system level


def system_correlations(human: npt.ArrayLike, metric: npt.ArrayLike, *,
                        boot_human: FloatArray | None = None,
                        boot_metric: FloatArray | None = None,
                        confidence: float = 0.95) -> list[MetaValue]:
    """Return Pearson, Spearman and Kendall τ between the humans' and a metric's system scores.

    ``human``, ``metric``: one score per system (nan: missing; such systems are left out).
    ``boot_human`` / ``boot_metric``: the (resamples × systems) scores of the same source
    resamples (``None`` for the metric: its system scores are fixed, imported per system); the
    interval holds the ``(1 ± confidence)/2`` quantiles of the resampled correlations (resamples
    where a system is missing or a side is constant are left out).  ``p_value`` is scipy's
    (`pearsonr`, `spearmanr`, `kendalltau`).  Fewer than 3 systems: no value (reason).
    """
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    keep = ~np.isnan(h) & ~np.isnan(m)
    n = int(keep.sum())
    if n < 3:
        return [MetaValue(s, None, n=n, reason=f"fewer than 3 systems with both scores ({n})")
                for s in STATISTICS]
    if np.ptp(h[keep]) == 0 or np.ptp(m[keep]) == 0:
        side = "humans" if np.ptp(h[keep]) == 0 else "metric"
        return [MetaValue(s, None, n=n, reason=f"the {side} give every system the same score")
                for s in STATISTICS]
    out = []
    tail = (1.0 - confidence) / 2.0
    for s in STATISTICS:
        value, p = _point(h[keep], m[keep], s)
        low = high = None
        reason = None
        if boot_human is not None:
            bh = boot_human[:, keep]
            bm = np.broadcast_to(m[keep], bh.shape) if boot_metric is None \
                else boot_metric[:, keep]
            rows = ~np.isnan(bh).any(axis=1) & ~np.isnan(bm).any(axis=1)
            r = row_correlations(bh[rows], np.ascontiguousarray(bm[rows]), s) if rows.any() \
                else np.zeros(0)
            r = r[~np.isnan(r)]
            if r.size:
                low, high = (float(v) for v in np.quantile(r, [tail, 1.0 - tail]))
            else:
                reason = "no resample with a defined correlation: no interval"
        out.append(MetaValue(s, _f(value), low, high, _f(p), n, reason))
    return out


def pairwise_accuracy(human: npt.ArrayLike, metric: npt.ArrayLike) -> float:
    """Return the share of system pairs the metric orders as the humans do (Kocmi et al. 2021).

    Over every pair i < j of systems with both scores, a pair agrees when sign(h_i − h_j) =
    sign(m_i − m_j) (a tie agrees only with a tie).  Example (module docstring): humans
    3 > 2 > 1, metric 0.9, 0.3, 0.5 → pairs (0,1) and (0,2) agree, (1,2) does not: 2/3.
    """
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    keep = ~np.isnan(h) & ~np.isnan(m)
    h, m = h[keep], m[keep]
    i, j = np.triu_indices(h.size, 1)
    if not i.size:
        return float("nan")
    return float(np.mean(np.sign(h[i] - h[j]) == np.sign(m[i] - m[j])))


def one_sided_matrix(n_systems: int, pairs: list[tuple[int, int]], p_greater: FloatArray,
                     p_less: FloatArray) -> FloatArray:
    """Return G with G[i, j] = the one-sided p of "system i is better than system j" (nan: not
    tested), from the tests of the pairs (a, b), a < b: G[a, b] = p_greater, G[b, a] = p_less."""
    g = np.full((n_systems, n_systems), np.nan)
    for k, (a, b) in enumerate(pairs):
        g[a, b], g[b, a] = p_greater[k], p_less[k]
    return g


def soft_pairwise_accuracy(p_human: FloatArray, p_metric: FloatArray,
                           systems: IntArray | None = None) -> float:
    """Return SPA = mean over pairs i < j of 1 − |p_human[i, j] − p_metric[i, j]| (Thompson et
    al. 2024), over the pairs of ``systems`` (default: all) where both p-values are defined.

    Example: two pairs with p_human (0.01, 0.5) and p_metric (0.03, 0.2) → 1 − (0.02 + 0.3)/2 =
    0.84.
    """
    idx = np.arange(p_human.shape[0]) if systems is None else np.asarray(systems)
    i, j = np.triu_indices(idx.size, 1)
    diff = np.abs(p_human[idx[i], idx[j]] - p_metric[idx[i], idx[j]])
    diff = diff[~np.isnan(diff)]
    return float(1.0 - diff.mean()) if diff.size else float("nan")


def _orderings(n: int, count: int, rng: np.random.Generator) -> tuple[IntArray, bool]:
    """All n! orderings when n! ≤ count, else ``count`` random ones; and whether exact."""
    if math.factorial(n) <= count:
        return np.array(list(permutations(range(n))), dtype=np.int64), True
    return np.argsort(rng.random((count, n)), axis=1), False


def _permutation_p(observed: float, null: FloatArray, exact: bool) -> float:
    hits = int(np.count_nonzero(null >= observed - abs(observed) * _RTOL))
    return hits / null.size if exact else (hits + 1.0) / (null.size + 1.0)


def pairwise_permutation_p(human: FloatArray, metric: FloatArray, *,
                           p_human: FloatArray | None = None,
                           p_metric: FloatArray | None = None, permutations: int = 10_000,
                           rng: np.random.Generator) -> tuple[float, float | None]:
    """Return the permutation p-values of pairwise accuracy and of SPA (None without p-values).

    H0: the metric's scores carry no information on which system is better, so its system labels
    are exchangeable.  Each permutation π relabels the metric's systems (m'_i = m_π(i) and
    p'_metric(i, j) = p_metric(π i, π j)); the p-value is the share of permutations whose
    accuracy is at least the observed one: exact over all n! relabellings when n! ≤
    ``permutations`` (the identity among them), else (1 + hits)/(1 + permutations).
    ``human``, ``metric``: system scores of the same systems (no nan).
    """
    n = human.size
    order, exact = _orderings(n, permutations, rng)
    i, j = np.triu_indices(n, 1)
    sh = np.sign(human[i] - human[j])
    mp = metric[order]  # permutations × systems
    null_pa = (np.sign(mp[:, i] - mp[:, j]) == sh).mean(axis=1)
    p_pa = _permutation_p(float((np.sign(metric[i] - metric[j]) == sh).mean()), null_pa, exact)
    if p_human is None or p_metric is None:
        return p_pa, None
    ph = p_human[i, j]
    pm = p_metric[order[:, i], order[:, j]]
    with np.errstate(invalid="ignore"):
        null_spa = 1.0 - np.nanmean(np.abs(pm - ph), axis=1)
    observed = soft_pairwise_accuracy(p_human, p_metric)
    return p_pa, _permutation_p(observed, null_spa[~np.isnan(null_spa)], exact)


def williams_system(human: FloatArray, metric_a: FloatArray, metric_b: FloatArray
                    ) -> tuple[float | None, float | None, int, str | None]:
    """Return Williams' t and its one-sided p (H1: metric A correlates better with the humans
    than B, Pearson, at the system level; Graham and Baldwin 2014), n systems, reason."""
    keep = ~np.isnan(human) & ~np.isnan(metric_a) & ~np.isnan(metric_b)
    n = int(keep.sum())
    if n < 4:
        return None, None, n, f"fewer than 4 systems with both metrics ({n})"
    h, a, b = human[keep], metric_a[keep], metric_b[keep]
    if min(np.ptp(h), np.ptp(a), np.ptp(b)) == 0:
        return None, None, n, "a constant score: no correlation"
    r: FloatArray = np.clip(np.asarray(np.corrcoef(np.vstack([h, a, b])), dtype=float), -1, 1)
    w = williams_test(r12=float(r[0, 1]), r13=float(r[0, 2]), r23=float(r[1, 2]), n=n)
    return w.t, w.p_one_sided, n, w.reason


# --------------------------------------------------------------------------- item level


def item_correlations(human: npt.ArrayLike, metric: npt.ArrayLike,
                      groups: npt.ArrayLike | None = None) -> list[MetaValue]:
    """Return Pearson, Spearman and Kendall τ between item aggregates and a metric's item values.

    Without ``groups``: one correlation over every item with both values (scipy's p-value).
    With ``groups`` (an index per item, ``-1`` = none): the correlation within each group of at
    least 2 items where both sides vary, averaged over those groups (``n`` = groups averaged):
    grouped by item (groups = sources: the outputs of the systems for one source) or by
    system, as WMT's metrics task reports its segment-level correlations.
    """
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    keep = ~np.isnan(h) & ~np.isnan(m)
    if groups is None:
        n = int(keep.sum())
        if n < 3:
            return [MetaValue(s, None, n=n, reason=f"fewer than 3 items with both values ({n})")
                    for s in STATISTICS]
        if np.ptp(h[keep]) == 0 or np.ptp(m[keep]) == 0:
            return [MetaValue(s, None, n=n, reason="one side is constant") for s in STATISTICS]
        out = []
        for s in STATISTICS:
            value, p = _point(h[keep], m[keep], s)
            out.append(MetaValue(s, _f(value), p_value=_f(p), n=n))
        return out
    g = np.asarray(groups, dtype=np.int64)
    keep &= g >= 0
    idx = np.flatnonzero(keep)
    order = idx[np.argsort(g[idx], kind="stable")]
    gs = g[order]
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]]) if gs.size else np.zeros(0, int)
    ends = np.r_[starts[1:], gs.size]
    values: dict[str, list[float]] = {s: [] for s in STATISTICS}
    for lo, hi in zip(starts, ends, strict=True):
        if hi - lo < 2:
            continue
        x, y = h[order[lo:hi]], m[order[lo:hi]]
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        for s in STATISTICS:
            r = float(row_correlations(x[None, :], y[None, :], s)[0])
            if math.isfinite(r):
                values[s].append(r)
    out = []
    for s in STATISTICS:
        vs = values[s]
        out.append(MetaValue(s, float(np.mean(vs)), n=len(vs)) if vs else MetaValue(
            s, None, n=0, reason="no group with 2 or more items where both sides vary"))
    return out


__all__ = ["STATISTICS", "MetaValue", "item_correlations", "one_sided_matrix",
           "pairwise_accuracy", "pairwise_permutation_p", "row_correlations",
           "soft_pairwise_accuracy", "system_correlations", "williams_system"]

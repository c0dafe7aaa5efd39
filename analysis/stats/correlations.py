"""Correlations of automatic metrics with the humans, before and after filtering annotators.

Source: seed 003 (Solomon et al., *Rethinking Crowd Sourcing for Semantic Similarity*) §5.2,
tables 1, 3 and 4 (baseline and each of the 31 combinations of the five heuristics, with the
relative change) and table 2 (radical and centrist annotators), as PRODUCT.md fixes them: each
metric against the per-item *mean raw label* over the items that keep at least
``min_ratings`` (2) ratings once the flagged annotators are removed; Pearson and Spearman
(average ranks for ties, as ``scipy.stats.spearmanr``).

Built for size (PRODUCT.md: 105 000 ratings, all combinations well under a second): per-item
sums with ``np.bincount`` on long-format arrays, each metric sorted once, each distinct set of
removed annotators evaluated once, ranks taken from the presorted order without re-sorting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from analysis.stats.heuristics import (
    RULES,
    HeuristicResult,
    Ratings,
    StylesResult,
    as_long_ratings,
    rated_rows,
)


@dataclass(frozen=True)
class Correlation:
    """Hold Pearson and Spearman of one metric with the human means (``None`` + reason if undefined)."""

    pearson: float | None
    spearman: float | None
    n_items: int
    reason: str | None = None


@dataclass(frozen=True)
class CorrelationRecord:
    """Hold one metric's correlations under one combination of rules (PRODUCT.md contract ``correlations``)."""

    rules: tuple[str, ...]
    removed: tuple[int, ...]
    metric: str
    pearson: float | None
    spearman: float | None
    pearson_change: float | None
    spearman_change: float | None
    n_items: int
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the results-document record (``rules`` and ``removed`` as lists)."""
        rec: dict[str, object] = {
            "rules": list(self.rules),
            "removed": list(self.removed),
            "metric": self.metric,
            "pearson": self.pearson,
            "spearman": self.spearman,
            "pearson_change": self.pearson_change,
            "spearman_change": self.spearman_change,
            "n_items": self.n_items,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class CorrelationsResult:
    """Hold every record of a filtering study, with the parameters used."""

    params: Mapping[str, object]
    records: tuple[CorrelationRecord, ...]


@dataclass(frozen=True)
class StyleCorrelationRecord:
    """Hold one metric against the labels of one style's annotators only (seed 003 table 2)."""

    style: str
    filtered: bool
    annotators: tuple[int, ...]
    metric: str
    pearson: float | None
    spearman: float | None
    n_items: int
    reason: str | None = None


# --------------------------------------------------------------------------- primitives


def _ranks_of_sorted(sorted_values: np.ndarray) -> np.ndarray:
    """Return 1-based average ranks of an ascending array, in its own order."""
    n = sorted_values.size
    if n == 0:
        return np.empty(0)
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], n]
    return np.repeat((starts + ends + 1) / 2.0, ends - starts)


def _pearson_raw(x: np.ndarray, y: np.ndarray) -> float:
    xm = x - x.mean()
    ym = y - y.mean()
    r = float(np.dot(xm, ym) / np.sqrt(np.dot(xm, xm) * np.dot(ym, ym)))
    return min(1.0, max(-1.0, r))


def correlate(x: object, y: object) -> Correlation:
    """Return Pearson and Spearman correlations of two equal-length arrays.

    Pairs where either value is ``np.nan`` are skipped. Undefined (fewer than 3 pairs, or a
    constant side) → ``None`` + reason, never NaN. Spearman is Pearson on average ranks
    (``scipy.stats.spearmanr``'s definition).

    Example: ``correlate([1, 2, 3, 4], [1, 3, 2, 4])`` → pearson 0.8, spearman 0.8, n 4.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.ndim != 1 or xa.shape != ya.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got {xa.shape} and {ya.shape}")
    ok = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    return _correlate_clean(xa, ya)


def _correlate_clean(
    x: np.ndarray, y: np.ndarray, rx: np.ndarray | None = None, ry: np.ndarray | None = None
) -> Correlation:
    n = int(x.size)
    if n < 3:
        return Correlation(None, None, n, f"fewer than 3 items ({n})")
    if x.max() == x.min() or y.max() == y.min():
        side = "metric" if x.max() == x.min() else "human mean"
        return Correlation(None, None, n, f"constant {side} over the items")
    if rx is None:
        o = np.argsort(x, kind="stable")
        rx = np.empty(n)
        rx[o] = _ranks_of_sorted(x[o])
    if ry is None:
        o = np.argsort(y, kind="stable")
        ry = np.empty(n)
        ry[o] = _ranks_of_sorted(y[o])
    return Correlation(_pearson_raw(x, y), _pearson_raw(rx, ry), n)


class _Engine:
    """Compute per-item human means for a set of kept annotators and correlate every metric."""

    def __init__(
        self,
        it: np.ndarray,
        an: np.ndarray,
        val: np.ndarray,
        n_items: int,
        n_annotators: int,
        metrics: Mapping[str, np.ndarray],
        min_ratings: int,
    ) -> None:
        self.it, self.an, self.val = it, an, val
        self.n_items, self.n_annotators = n_items, n_annotators
        self.min_ratings = min_ratings
        self.metrics = metrics
        self.finite = {m: np.isfinite(v) for m, v in metrics.items()}
        # Each metric is sorted once; a subset's order is the sorted order filtered by a mask.
        self.order = {m: np.argsort(v, kind="stable") for m, v in metrics.items()}
        self.cache: dict[tuple[int, ...], dict[str, Correlation]] = {}

    def run(self, removed: tuple[int, ...]) -> dict[str, Correlation]:
        hit = self.cache.get(removed)
        if hit is not None:
            return hit
        if removed:
            drop = np.zeros(self.n_annotators, dtype=bool)
            drop[list(removed)] = True
            keep = ~drop[self.an]
            it, val = self.it[keep], self.val[keep]
        else:
            it, val = self.it, self.val
        counts = np.bincount(it, minlength=self.n_items)
        sums = np.bincount(it, weights=val, minlength=self.n_items)
        valid = counts >= self.min_ratings
        mean = np.full(self.n_items, np.nan)
        mean[valid] = sums[valid] / counts[valid]
        vidx = np.flatnonzero(valid)
        y_order = vidx[np.argsort(mean[vidx], kind="stable")]
        out: dict[str, Correlation] = {}
        n_total = self.n_items
        for name, metric in self.metrics.items():
            sel = valid & self.finite[name]
            n = int(sel.sum())
            if n < 3:
                out[name] = _correlate_clean(metric[sel], mean[sel])
                continue
            ox = self.order[name]
            ox = ox[sel[ox]]
            oy = y_order[sel[y_order]]
            rank_x = np.empty(n_total)
            rank_x[ox] = _ranks_of_sorted(metric[ox])
            rank_y = np.empty(n_total)
            rank_y[oy] = _ranks_of_sorted(mean[oy])
            out[name] = _correlate_clean(metric[sel], mean[sel], rank_x[sel], rank_y[sel])
        self.cache[removed] = out
        return out


def _rows(ratings: Ratings) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    data = as_long_ratings(ratings)
    ok = rated_rows(data)
    return data.item[ok], data.annotator[ok], data.value[ok], data.n_items, data.n_annotators


def _check_metrics(metrics: Mapping[str, object], n_items: int) -> dict[str, np.ndarray]:
    if not metrics:
        raise ValueError("metrics must name at least one metric")
    out = {}
    for name, values in metrics.items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != (n_items,):
            raise ValueError(f"metric {name!r} must have one value per item ({n_items}), got {arr.shape}")
        if np.any(np.isinf(arr)):
            raise ValueError(f"metric {name!r} holds an infinite value")
        out[name] = arr
    return out


def _flag_sets(
    flagged: Mapping[str, HeuristicResult | Sequence[int]], n_annotators: int
) -> dict[str, frozenset[int]]:
    out = {}
    for rule, flags in flagged.items():
        ids = flags.flagged if isinstance(flags, HeuristicResult) else tuple(int(a) for a in flags)
        bad = [a for a in ids if not 0 <= a < n_annotators]
        if bad:
            raise ValueError(f"rule {rule!r} flags annotator {bad[0]} outside 0..{n_annotators - 1}")
        out[rule] = frozenset(ids)
    return out


def _rule_key(rule: str) -> tuple[int, str]:
    return (RULES.index(rule) if rule in RULES else len(RULES), rule)


def _change(after: float | None, before: float | None, what: str) -> tuple[float | None, str | None]:
    if after is None:
        return None, None
    if before is None:
        return None, f"{what} change: baseline undefined"
    if before == 0:
        return None, f"{what} change: baseline is 0"
    return after / before - 1.0, None


# --------------------------------------------------------------------------- public API


def filtering_correlations(
    ratings: Ratings,
    *,
    metrics: Mapping[str, object],
    flagged: Mapping[str, HeuristicResult | Sequence[int]],
    min_ratings: int = 2,
) -> CorrelationsResult:
    """Correlate every metric with the human means for the baseline and every rule combination.

    Seed 003 tables 1, 3, 4: ``flagged`` maps rule names (those of `RULES`, or any other name)
    to a `HeuristicResult` or the annotator indices it flags; for the baseline (``rules=()``)
    and each of the 2^r − 1 non-empty combinations (31 for the five rules), the union of the
    flagged annotators is removed, the per-item mean of the *raw* ``value`` taken over items
    with at least ``min_ratings`` (2) remaining ratings, and each metric (one value per item,
    ``np.nan`` = missing) correlated with it. ``pearson_change`` / ``spearman_change`` =
    after / baseline − 1 (``None`` + reason when undefined). Records come baseline first, then
    by combination size in the order of `RULES`; each record's ``rules`` is sorted by name.

    Example: annotators 0 and 1 rate items 0–3 as (1, 2), (2, 3), (3, 4), (5, 5); annotator 2,
    flagged by "slow", rates item 3 with 1. Against the metric [0.1, 0.2, 0.3, 0.9] the
    baseline means 1.5, 2.5, 3.5, 3.67 give Pearson 0.751; without annotator 2 the means
    1.5, 2.5, 3.5, 5.0 give 0.940, so ``pearson_change`` = 0.940 / 0.751 − 1 = +0.251
    (Spearman 1.0 both times, change 0.0).
    """
    it, an, val, n_items, n_annotators = _rows(ratings)
    if min_ratings < 1:
        raise ValueError(f"min_ratings must be >= 1, got {min_ratings}")
    mets = _check_metrics(metrics, n_items)
    flags = _flag_sets(flagged, n_annotators)
    rules = sorted(flags, key=_rule_key)
    engine = _Engine(it, an, val, n_items, n_annotators, mets, min_ratings)
    base = engine.run(())
    combos: list[tuple[str, ...]] = [()]
    for size in range(1, len(rules) + 1):
        combos.extend(combinations(rules, size))
    records = []
    for combo in combos:
        removed_set: set[int] = set()
        for rule in combo:
            removed_set |= flags[rule]
        removed = tuple(sorted(removed_set))
        res = engine.run(removed)
        for name in mets:
            c, b = res[name], base[name]
            pc, pr = _change(c.pearson, b.pearson, "pearson")
            sc, sr = _change(c.spearman, b.spearman, "spearman")
            # The baseline's own change is c / c − 1 = 0 (None when its correlation is 0).
            reasons = [r for r in (c.reason, pr, sr) if r]
            records.append(
                CorrelationRecord(
                    rules=tuple(sorted(combo)),
                    removed=removed,
                    metric=name,
                    pearson=c.pearson,
                    spearman=c.spearman,
                    pearson_change=pc,
                    spearman_change=sc,
                    n_items=c.n_items,
                    reason="; ".join(reasons) if reasons else None,
                )
            )
    params = {"min_ratings": min_ratings, "aggregate": "mean", "rules": rules}
    return CorrelationsResult(params=params, records=tuple(records))


def style_correlations(
    ratings: Ratings,
    *,
    metrics: Mapping[str, object],
    styles: StylesResult,
    flagged: Mapping[str, HeuristicResult | Sequence[int]] | None = None,
    min_ratings: int = 2,
) -> tuple[StyleCorrelationRecord, ...]:
    """Correlate every metric with the means of radical-only and centrist-only annotators.

    Seed 003 table 2 ("Baseline Radicals", "Radicals after filter", likewise for centrists):
    for each of the styles "radical" and "centrist", keep only that style's annotators (from
    `annotator_styles`), and correlate as in `filtering_correlations` (items with at least
    ``min_ratings`` remaining ratings); with ``flagged``, a second record per style and metric
    (``filtered=True``) also removes every annotator flagged by any of the rules.

    Example: with annotators 0, 1 radical and 2, 3 centrist, the radical rows use only the
    ratings of annotators 0 and 1.
    """
    it, an, val, n_items, n_annotators = _rows(ratings)
    if len(styles.records) != n_annotators:
        raise ValueError(
            f"styles covers {len(styles.records)} annotators, the ratings {n_annotators}"
        )
    mets = _check_metrics(metrics, n_items)
    flags = _flag_sets(flagged or {}, n_annotators)
    any_flag: set[int] = set().union(*flags.values()) if flags else set()
    engine = _Engine(it, an, val, n_items, n_annotators, mets, min_ratings)
    out = []
    for style in ("radical", "centrist"):
        members = set(styles.annotators(style))
        variants = [(False, members)]
        if flagged is not None:
            variants.append((True, members - any_flag))
        for filtered, keep in variants:
            removed = tuple(sorted(set(range(n_annotators)) - keep))
            res = engine.run(removed)
            for name in mets:
                c = res[name]
                reason = c.reason
                if not keep:
                    reason = f"no {style} annotators" + ("" if not filtered else " after filtering")
                out.append(
                    StyleCorrelationRecord(
                        style=style,
                        filtered=filtered,
                        annotators=tuple(sorted(keep)),
                        metric=name,
                        pearson=c.pearson,
                        spearman=c.spearman,
                        n_items=c.n_items,
                        reason=reason,
                    )
                )
    return tuple(out)

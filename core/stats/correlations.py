"""Correlations of automatic metrics with the humans, before and after filtering annotators.

Source: Solomon et al. 2021 (*Rethinking Crowd Sourcing for Semantic Similarity*), §5.2, tables 1, 3
and 4 (baseline and each of the 31 combinations of the five heuristics, with the relative change)
and table 2 (radical and centrist annotators), as Concord defines them
(docs/statistics/heuristics.md): each metric against the per-item *mean raw label* over the items
that keep at least ``min_ratings`` (2) ratings once the flagged annotators are removed; Pearson and
Spearman (average ranks for ties, as ``scipy.stats.spearmanr``).

Built for size (the target in docs/benchmarks.md: 105 000 ratings, all combinations well under a
second): per-item sums with ``np.bincount`` on long-format arrays, each metric sorted once, each
distinct set of removed annotators evaluated once, ranks taken from the presorted order without
re-sorting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from core.stats._types import FloatArray, IntArray
from core.stats.heuristics import (
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
    """Hold one metric's correlations under one combination of rules.

    The ``correlations`` record of the results document (docs/results.md).
    """

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
    """Hold one metric against the labels of one style's annotators only.

    Solomon et al. 2021, table 2.
    """

    style: str
    filtered: bool
    annotators: tuple[int, ...]
    metric: str
    pearson: float | None
    spearman: float | None
    n_items: int
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return {style, filtered, annotators, metric, pearson, spearman, n_items[, reason]}."""
        rec: dict[str, object] = {
            "style": self.style,
            "filtered": self.filtered,
            "annotators": list(self.annotators),
            "metric": self.metric,
            "pearson": self.pearson,
            "spearman": self.spearman,
            "n_items": self.n_items,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


# --------------------------------------------------------------------------- primitives


def _ranks_of_sorted(sorted_values: FloatArray) -> FloatArray:
    """Return 1-based average ranks of an ascending array, in its own order."""
    n = sorted_values.size
    if n == 0:
        return np.empty(0)
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], n]
    return np.repeat((starts + ends + 1) / 2.0, ends - starts)


def _pearson_raw(x: FloatArray, y: FloatArray) -> float:
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


def average_ranks(x: FloatArray) -> FloatArray:
    """Return the 1-based average ranks of ``x`` (ties share their mean rank), in its order."""
    o = np.argsort(x, kind="stable")
    ranks = np.empty(x.size)
    ranks[o] = _ranks_of_sorted(x[o])
    return ranks


def _correlate_clean(
    x: FloatArray, y: FloatArray, rx: FloatArray | None = None, ry: FloatArray | None = None,
    *, spearman: bool = True,
) -> Correlation:
    """Pearson and Spearman of finite x and y (``rx``, ``ry``: their average ranks when known;
    ``spearman`` False: Pearson only, Spearman ``None``)."""
    n = int(x.size)
    if n < 3:
        return Correlation(None, None, n, f"fewer than 3 items ({n})")
    if x.max() == x.min() or y.max() == y.min():
        side = "metric" if x.max() == x.min() else "human mean"
        return Correlation(None, None, n, f"constant {side} over the items")
    if not spearman:
        return Correlation(_pearson_raw(x, y), None, n)
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
        it: IntArray,
        an: IntArray,
        val: FloatArray,
        n_items: int,
        n_annotators: int,
        metrics: Mapping[str, FloatArray],
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


def _rows(ratings: Ratings) -> tuple[IntArray, IntArray, FloatArray, int, int]:
    data = as_long_ratings(ratings)
    ok = rated_rows(data)
    return data.item[ok], data.annotator[ok], data.value[ok], data.n_items, data.n_annotators


def _check_metrics(metrics: Mapping[str, object], n_items: int) -> dict[str, FloatArray]:
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

    Solomon et al. 2021, tables 1, 3, 4: ``flagged`` maps rule names (those of `RULES`, or any other
    name) to a `HeuristicResult` or the annotator indices it flags; for the baseline (``rules=()``)
    and each of the 2^r − 1 non-empty combinations (31 for the five rules), the union of the flagged
    annotators is removed, the per-item mean of the *raw* ``value`` taken over items with at least
    ``min_ratings`` (2) remaining ratings, and each metric (one value per item, ``np.nan`` =
    missing) correlated with it. ``pearson_change`` / ``spearman_change`` = after / baseline − 1
    (``None`` + reason when undefined). Records come baseline first, then by combination size in the
    order of `RULES`; each record's ``rules`` is sorted by name.

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
    exclude: HeuristicResult | Sequence[int] = (),
    min_ratings: int = 2,
) -> tuple[StyleCorrelationRecord, ...]:
    """Correlate every metric with the means of radical-only and centrist-only annotators.

    Solomon et al. 2021, table 2 ("Baseline Radicals", "Radicals after filter", likewise for
    centrists): for each of the styles "radical" and "centrist", keep only that style's annotators
    (from `annotator_styles`), and correlate as in `filtering_correlations` (items with at least
    ``min_ratings`` remaining ratings); with ``flagged``, a second record per style and metric
    (``filtered=True``) also removes every annotator flagged by any of the rules. ``exclude``
    (annotator indices, or a `HeuristicResult` whose flagged annotators are meant) leaves
    annotators out of both styles before anything else: the paper included "only annotators with
    variance above 1", i.e. ``exclude=low_variance_annotators(ratings)`` (which drops std < 1; the
    paper's cut drops variance ≤ 1, the same but for a variance of exactly 1).

    Records come radical then centrist, unfiltered then filtered, then in the order of
    ``metrics``; ``StyleCorrelationRecord.to_record()`` is the results-document shape
    {style, filtered, annotators, metric, pearson, spearman, n_items[, reason]}.

    Example: with annotators 0, 1 radical and 2, 3 centrist, the radical rows use only the
    ratings of annotators 0 and 1.
    """
    it, an, val, n_items, n_annotators = _rows(ratings)
    if len(styles.records) != n_annotators:
        raise ValueError(
            f"styles covers {len(styles.records)} annotators, the ratings {n_annotators}"
        )
    if min_ratings < 1:
        raise ValueError(f"min_ratings must be >= 1, got {min_ratings}")
    mets = _check_metrics(metrics, n_items)
    flags = _flag_sets(flagged or {}, n_annotators)
    any_flag: set[int] = set().union(*flags.values()) if flags else set()
    excluded = _flag_sets({"exclude": exclude}, n_annotators)["exclude"]
    engine = _Engine(it, an, val, n_items, n_annotators, mets, min_ratings)
    out = []
    for style in ("radical", "centrist"):
        members = set(styles.annotators(style)) - excluded
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


# The ``sets`` entry of `rule_set_correlations` that stands for every rule of ``flagged`` at once.
ALL = "all"


def rule_set_correlations(
    ratings: Ratings,
    *,
    metrics: Mapping[str, object],
    flagged: Mapping[str, HeuristicResult | Sequence[int]],
    sets: Sequence[Sequence[str] | str] | None = None,
    min_ratings: int = 2,
) -> CorrelationsResult:
    """Correlate every metric with the human means for the baseline and chosen sets of rules.

    The complement of `filtering_correlations` for rules beyond Solomon et al. 2021's five: where
    that function enumerates every combination (31 for five rules, and it stays the paper's table
    when given only those five), this one evaluates the listed ``sets`` only. Each set is a
    sequence of rule names of ``flagged``, or `ALL` (every rule of ``flagged`` together);
    ``sets=None`` means each rule of ``flagged`` alone, in its order, then `ALL`. Per set, the
    union of the annotators its rules flag is removed and every metric correlated with the
    per-item mean raw label exactly as in `filtering_correlations` (items with at least
    ``min_ratings`` (2) remaining ratings; changes relative to the baseline). Records: the
    baseline (``rules=()``) first, then the sets in the given order (a set listed twice is
    reported twice), each record's ``rules`` sorted by name; the record type is
    `CorrelationRecord`, so the results builder stores them like the 31 combinations.
    ``params``: ``min_ratings``, ``aggregate`` ("mean") and ``sets`` (each as its sorted rule list).

    Example: ``flagged={"too_fast": [12], "attention": [12, 3]}`` with ``sets=None`` gives the
    baseline, ``["too_fast"]`` (removes 12), ``["attention"]`` (removes 3, 12) and
    ``["attention", "too_fast"]`` (removes 3, 12).
    """
    it, an, val, n_items, n_annotators = _rows(ratings)
    if min_ratings < 1:
        raise ValueError(f"min_ratings must be >= 1, got {min_ratings}")
    mets = _check_metrics(metrics, n_items)
    flags = _flag_sets(flagged, n_annotators)
    if sets is None:
        sets = [(rule,) for rule in flags] + [ALL]
    resolved: list[tuple[str, ...]] = []
    for entry in sets:
        if isinstance(entry, str):
            if entry != ALL:
                raise ValueError(
                    f"a set is a sequence of rule names or {ALL!r}, got the string {entry!r}"
                )
            names = tuple(flags)
        else:
            names = tuple(entry)
        unknown = sorted(set(names) - set(flags))
        if unknown:
            raise ValueError(f"set {list(names)} names rule(s) {unknown} absent from flagged")
        if not names:
            raise ValueError("a set must name at least one rule (the baseline is always included)")
        resolved.append(tuple(sorted(set(names))))
    engine = _Engine(it, an, val, n_items, n_annotators, mets, min_ratings)
    base = engine.run(())
    records = []
    for combo in [(), *resolved]:
        removed_set: set[int] = set()
        for rule in combo:
            removed_set |= flags[rule]
        removed = tuple(sorted(removed_set))
        res = engine.run(removed)
        for name in mets:
            c, b = res[name], base[name]
            pc, pr = _change(c.pearson, b.pearson, "pearson")
            sc, sr = _change(c.spearman, b.spearman, "spearman")
            reasons = [r for r in (c.reason, pr, sr) if r]
            records.append(
                CorrelationRecord(
                    rules=combo,
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
    params = {"min_ratings": min_ratings, "aggregate": "mean",
              "sets": [list(combo) for combo in resolved]}
    return CorrelationsResult(params=params, records=tuple(records))


def item_means(
    ratings: Ratings,
    *,
    removed: Sequence[int] = (),
    min_ratings: int = 2,
) -> FloatArray:
    """Return the per-item mean raw label that the correlations of this module use.

    The mean over the ratings of the annotators not in ``removed``, ``np.nan`` for items with
    fewer than ``min_ratings`` (2) of them: exactly the human side of a `CorrelationRecord` with
    that ``removed`` (so ``bootstrap_correlation(metric, item_means(ratings,
    removed=record.removed))`` gives that record's interval).

    Example: annotators 0 and 1 rate item 0 with 1 and 2, annotator 0 alone rates item 1 →
    ``[1.5, nan]``.
    """
    it, an, val, n_items, n_annotators = _rows(ratings)
    if min_ratings < 1:
        raise ValueError(f"min_ratings must be >= 1, got {min_ratings}")
    drop = np.zeros(n_annotators, dtype=bool)
    gone = [int(a) for a in removed]
    if any(not 0 <= a < n_annotators for a in gone):
        raise ValueError(f"removed names an annotator outside 0..{n_annotators - 1}")
    drop[gone] = True
    keep = ~drop[an]
    counts = np.bincount(it[keep], minlength=n_items)
    sums = np.bincount(it[keep], weights=val[keep], minlength=n_items)
    mean = np.full(n_items, np.nan)
    valid = counts >= min_ratings
    mean[valid] = sums[valid] / counts[valid]
    return mean

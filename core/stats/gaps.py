"""How far automatic metrics are from the humans, on a common [0, 1] scale.

Source: Borovikova et al. 2022, §4 ("we calculated an average and a mode of human evaluations having
previously transformed to a scale from 0 to 1") and table 2 (differences between human evaluations
and metrics), as Concord defines them (docs/statistics/gaps-and-weights.md): per item the human
aggregate — mean, or mode with ties averaged — is rescaled by the scale's (or reduction's) full
domain, (v − min) / (max − min) (`core.stats.scales.rescale01`); for each metric whose values lie in
[0, 1] the mean signed and mean absolute difference metric − human, over all items and over the
simple items. Per-item gaps are returned too, so the largest disagreements can be listed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.stats._types import BoolArray, FloatArray, IntArray
from core.stats.heuristics import Ratings, as_long_ratings, rated_rows
from core.stats.scales import rescale01

AGGREGATES: tuple[str, ...] = ("mean", "mode")

# Metric values may overshoot [0, 1] by float rounding (e.g. a BLEU of 100.00000000000001 / 100).
RANGE_TOLERANCE = 1e-9


def human_aggregate(ratings: Ratings, *, aggregate: str = "mean") -> FloatArray:
    """Return the per-item human aggregate, ``np.nan`` for items nobody rated.

    ``aggregate`` is ``"mean"`` or ``"mode"`` (Borovikova et al. 2022, §4); a mode tie is the mean
    of the tied values (docs/statistics/gaps-and-weights.md).

    Example: item ratings (2, 2, 5) → mean 3.0, mode 2.0; (1, 3) → mean 2.0, mode 2.0 (tie
    between 1 and 3 averaged).
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    data = as_long_ratings(ratings)
    ok = rated_rows(data)
    it, val, n_items = data.item[ok], data.value[ok], data.n_items
    counts = np.bincount(it, minlength=n_items)
    out = np.full(n_items, np.nan)
    rated = counts > 0
    if aggregate == "mean":
        sums = np.bincount(it, weights=val, minlength=n_items)
        out[rated] = sums[rated] / counts[rated]
        return out
    codes, cat = np.unique(val, return_inverse=True)
    m = max(codes.size, 1)
    pair_count = np.bincount(it * m + cat, minlength=n_items * m)
    pairs = np.flatnonzero(pair_count)
    p_item, p_code, p_count = pairs // m, codes[pairs % m] if codes.size else pairs, pair_count[pairs]
    best = np.zeros(n_items, dtype=np.int64)
    np.maximum.at(best, p_item, p_count)
    top = p_count == best[p_item]
    n_top = np.bincount(p_item[top], minlength=n_items)
    s_top = np.bincount(p_item[top], weights=p_code[top], minlength=n_items)
    out[rated] = s_top[rated] / n_top[rated]
    return out


@dataclass(frozen=True)
class MetricGap:
    """Hold the mean gaps of one metric (the ``metric_gaps`` record of docs/results.md)."""

    scale: str
    aggregate: str
    items: str
    metric: str
    mean_abs_gap: float | None
    mean_signed_gap: float | None
    n_items: int
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {scale, aggregate, items, metric, mean_abs_gap, mean_signed_gap,
        n_items[, reason]}."""
        rec: dict[str, object] = {
            "scale": self.scale,
            "aggregate": self.aggregate,
            "items": self.items,
            "metric": self.metric,
            "mean_abs_gap": self.mean_abs_gap,
            "mean_signed_gap": self.mean_signed_gap,
            "n_items": self.n_items,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class ItemGap:
    """Hold one item's gap metric − human (the ``item_gaps`` record of docs/results.md)."""

    item: int
    scale: str
    aggregate: str
    metric: str
    human: float
    metric_value: float
    gap: float

    def to_record(self) -> dict[str, object]:
        """Return the record {item, scale, aggregate, metric, human, metric_value, gap}."""
        return {
            "item": self.item,
            "scale": self.scale,
            "aggregate": self.aggregate,
            "metric": self.metric,
            "human": self.human,
            "metric_value": self.metric_value,
            "gap": self.gap,
        }


@dataclass(frozen=True, eq=False)
class ItemGapBlock:
    """Hold the per-item gaps of one metric × aggregate as columns (items in their order).

    ``item`` are item indices, ``human``, ``metric_value`` and ``gap`` the matching values: one
    entry per item with both a human answer and a metric value.  A block of a million items is
    four arrays, not a million objects (`GapsResult.item_gaps` makes the objects when asked).
    """

    scale: str
    aggregate: str
    metric: str
    item: IntArray
    human: FloatArray
    metric_value: FloatArray
    gap: FloatArray

    def __len__(self) -> int:
        return int(self.item.size)

    def gaps(self) -> Iterator[ItemGap]:
        """Yield the block's `ItemGap` records in item order."""
        for i, h, m, g in zip(self.item.tolist(), self.human.tolist(),
                              self.metric_value.tolist(), self.gap.tolist(), strict=True):
            yield ItemGap(i, self.scale, self.aggregate, self.metric, h, m, g)


@dataclass(frozen=True)
class GapsResult:
    """Hold the mean and per-item gaps of every metric, with the parameters used."""

    params: Mapping[str, object]
    metric_gaps: tuple[MetricGap, ...]
    item_gap_blocks: tuple[ItemGapBlock, ...]

    @property
    def item_gaps(self) -> tuple[ItemGap, ...]:
        """Every per-item gap as a record, block after block (aggregate, then metric, order)."""
        return tuple(g for block in self.item_gap_blocks for g in block.gaps())


def metric_gaps(
    ratings: Ratings,
    *,
    metrics: Mapping[str, object],
    domain: Sequence[float],
    scale: str = "raw",
    aggregates: Sequence[str] = AGGREGATES,
    simple: object | None = None,
) -> GapsResult:
    """Compare every metric with the rescaled human aggregate, overall and on simple items.

    Borovikova et al. 2022, table 2. ``ratings`` are on the scale named ``scale`` (raw or a
    reduction, already reduced), ``domain`` its full value domain (the rescaling uses its min and
    max, not the observed values). ``metrics`` maps names to one value per item (``np.nan`` =
    missing); ``simple`` is an optional boolean mask per item (the simple items of
    Borovikova et al. 2022, §4), adding ``items="simple"`` records. gap = metric − human;
    mean_signed_gap and mean_abs_gap are taken over items with both values. A metric with a value
    outside [0, 1] gets ``None`` + reason and no per-item gaps; no common item → ``None`` + reason.

    Example: 0–7 scale, item ratings (7, 7) and (0, 7) → human means 1.0 and 0.5; metric
    [0.8, 0.9] → gaps −0.2 and 0.4, mean signed 0.1, mean absolute 0.3.
    """
    data = as_long_ratings(ratings)
    n_items = data.n_items
    for agg in aggregates:
        if agg not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {agg!r}")
    subsets: list[tuple[str, BoolArray]] = [("all", np.ones(n_items, dtype=bool))]
    if simple is not None:
        mask = np.asarray(simple)
        if mask.shape != (n_items,):
            raise ValueError(f"simple must hold one flag per item ({n_items}), got {mask.shape}")
        subsets.append(("simple", mask.astype(bool)))
    mets = {}
    for name, values in metrics.items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != (n_items,):
            raise ValueError(f"metric {name!r} must have one value per item ({n_items}), got {arr.shape}")
        if np.any(np.isinf(arr)):
            raise ValueError(f"metric {name!r} holds an infinite value")
        mets[name] = arr
    summaries: list[MetricGap] = []
    per_item: list[ItemGapBlock] = []
    for agg in aggregates:
        human = rescale01(human_aggregate(data, aggregate=agg), domain)
        for name, metric in mets.items():
            finite = metric[np.isfinite(metric)]
            if finite.size and (
                finite.min() < -RANGE_TOLERANCE or finite.max() > 1 + RANGE_TOLERANCE
            ):
                for label, _ in subsets:
                    summaries.append(
                        MetricGap(scale, agg, label, name, None, None, 0,
                                  f"metric values outside [0, 1] (from {finite.min():g} to {finite.max():g})")
                    )  # fmt: skip
                continue
            both = np.isfinite(metric) & np.isfinite(human)
            gap = metric - human
            for label, mask in subsets:
                sel = both & mask
                n = int(sel.sum())
                if n == 0:
                    summaries.append(
                        MetricGap(scale, agg, label, name, None, None, 0,
                                  "no item with both a human answer and a metric value")
                    )  # fmt: skip
                    continue
                g = gap[sel]
                summaries.append(
                    MetricGap(scale, agg, label, name, float(np.abs(g).mean()), float(g.mean()), n)
                )
            rows = np.flatnonzero(both)
            if rows.size:
                per_item.append(ItemGapBlock(scale, agg, name, rows.astype(np.int64),
                                             human[rows].astype(float), metric[rows].astype(float),
                                             gap[rows].astype(float)))
    params = {
        "scale": scale,
        "domain": [float(v) for v in domain],
        "aggregates": list(aggregates),
        "range_tolerance": RANGE_TOLERANCE,
    }
    return GapsResult(params=params, metric_gaps=tuple(summaries), item_gap_blocks=tuple(per_item))

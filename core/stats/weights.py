"""Error-type weights: how much each kind of error moves a score, by least squares.

Source: Borovikova et al. 2022, §3 ("regressors have been trained to imitate the annotators' and
metrics' behaviours … the number of occurrences of each error type as input features"), §4 ("All the
input features were centered and reduced") and tables 3–4, as Concord defines them
(docs/statistics/gaps-and-weights.md): ordinary least squares instead of the published SGD fit (not
reproducible); the target is a human score rescaled to [0, 1] as for the gaps and *not* reversed
(the paper reversed them, footnote 3), so an error that lowers the score gets a negative weight —
the sign the paper's tables 3–4 report and expect — or a metric as is; features are z-scored with
ddof 0 over the items of that model; constant features are dropped (coefficient ``None``); an
intercept is always fitted (the features are centred, so it equals the target's mean and the slopes
do not depend on it). One model per annotator (the items they answered), per human aggregate and per
metric, each with R² and n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.stats._types import FloatArray
from core.stats.gaps import AGGREGATES, human_aggregate
from core.stats.heuristics import Ratings, as_long_ratings, rated_rows
from core.stats.scales import rescale01


@dataclass(frozen=True)
class ErrorWeights:
    """Hold one OLS model and its diagnostics (``error_weights`` in docs/results.md)."""

    target: str
    scale: str
    coefficients: Mapping[str, float | None]
    intercept: float | None
    r2: float | None
    n_items: int
    dropped: tuple[str, ...]
    rank_deficient: bool
    reason: str | None = None

    def to_record(self) -> dict[str, object]:
        """Return the record {target, scale, coefficients {feature: value}, r2, n_items[, reason]}."""
        rec: dict[str, object] = {
            "target": self.target,
            "scale": self.scale,
            "coefficients": dict(self.coefficients),
            "r2": self.r2,
            "n_items": self.n_items,
        }
        if self.reason is not None:
            rec["reason"] = self.reason
        return rec


def _features(features: object, feature_names: Sequence[str], n_items: int | None) -> FloatArray:
    x = np.asarray(features, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"features must be 2-D (items × features), got shape {x.shape}")
    if n_items is not None and x.shape[0] != n_items:
        raise ValueError(f"features must have one row per item ({n_items}), got {x.shape[0]}")
    if len(feature_names) != x.shape[1]:
        raise ValueError(f"{len(feature_names)} feature names for {x.shape[1]} feature columns")
    if len(set(feature_names)) != len(feature_names):
        raise ValueError("feature names must be distinct")
    if np.any(np.isinf(x)):
        raise ValueError("features hold an infinite value")
    return x


def fit_weights(
    y: object,
    features: object,
    *,
    feature_names: Sequence[str],
    target: str,
    scale: str = "raw",
) -> ErrorWeights:
    """Fit y = b0 + Σ_f b_f z_f by ordinary least squares on z-scored features.

    Borovikova et al. 2022, §4 and tables 3–4 (OLS instead of their SGD fit). Rows where y or a
    feature is ``np.nan`` are left out; each feature is z-scored (mean 0, std with ddof 0) over the
    remaining rows; a constant feature is dropped (coefficient ``None``, listed in ``dropped``).
    With n rows and p kept features, n ≤ p + 1 leaves no residual degree of freedom → every number
    ``None`` + reason. R² = 1 − SS_res / SS_tot (``None`` + reason for a constant target, whose
    slopes are exactly 0 and intercept the constant). Collinear
    features get the minimum-norm least-squares solution (as ``statsmodels`` OLS with its default
    pinv), flagged by ``rank_deficient`` and a reason.

    Example: errors [0, 1, 2, 3] and scores [1.0, 0.8, 0.6, 0.4]: z = [−1.34, −0.45, 0.45,
    1.34], slope −0.2236 (= −0.2 × std 1.118), intercept 0.7, R² 1.
    """
    x = _features(features, feature_names, None)
    yy = np.asarray(y, dtype=float)
    if yy.shape != (x.shape[0],):
        raise ValueError(f"y must have one value per feature row ({x.shape[0]}), got {yy.shape}")
    if np.any(np.isinf(yy)):
        raise ValueError("y holds an infinite value")
    rows = np.isfinite(yy) & np.all(np.isfinite(x), axis=1)
    xs, ys = x[rows], yy[rows]
    n = int(rows.sum())
    std = xs.std(axis=0) if n else np.zeros(x.shape[1])
    kept = std > 0
    dropped = tuple(name for name, k in zip(feature_names, kept, strict=True) if not k)
    p = int(kept.sum())
    coef: dict[str, float | None] = dict.fromkeys(feature_names)
    if n <= p + 1:
        return ErrorWeights(
            target, scale, coef, None, None, n, dropped, False,
            f"too few items ({n}) for {p} non-constant features and an intercept",
        )  # fmt: skip
    z = (xs[:, kept] - xs[:, kept].mean(axis=0)) / std[kept]
    design = np.column_stack([np.ones(n), z])
    beta, _, rank, _ = np.linalg.lstsq(design, ys, rcond=None)
    ss_tot = float(np.sum((ys - ys.mean()) ** 2))
    if ss_tot == 0:
        # A constant target c: the z-scored features are orthogonal to the intercept, so the
        # (minimum-norm) least-squares solution is exactly b0 = c and every slope 0. lstsq
        # returns rounding noise around 0 (1e-17) that differs with the CPU's BLAS kernels.
        beta = np.zeros_like(beta)
        beta[0] = ys[0]
    for name, b in zip((nm for nm, k in zip(feature_names, kept, strict=True) if k), beta[1:], strict=True):
        coef[name] = float(b)
    resid = ys - design @ beta
    reasons = []
    rank_deficient = int(rank) < p + 1
    if rank_deficient:
        reasons.append("collinear features: minimum-norm least-squares coefficients")
    if ss_tot == 0:
        r2 = None
        reasons.append("constant target: R² undefined")
    else:
        r2 = 1.0 - float(resid @ resid) / ss_tot
    return ErrorWeights(
        target, scale, coef, float(beta[0]), r2, n, dropped, rank_deficient,
        "; ".join(reasons) if reasons else None,
    )  # fmt: skip


def error_weights(
    ratings: Ratings,
    *,
    features: object,
    feature_names: Sequence[str],
    domain: Sequence[float],
    scale: str = "raw",
    metrics: Mapping[str, object] | None = None,
    aggregates: Sequence[str] = AGGREGATES,
    per_annotator: bool = True,
    annotator_names: Sequence[str] | None = None,
) -> tuple[ErrorWeights, ...]:
    """Fit one error-weight model per annotator, per human aggregate and per metric.

    Borovikova et al. 2022, tables 3–4. ``ratings`` are on the scale ``scale`` (raw or reduced) with
    full ``domain``; ``features`` is ``(n_items, n_features)`` (e.g. error counts per type).
    Targets, in this order: ``annotator:<name>`` (their own answers rescaled to [0, 1], on the items
    they answered; names default to ``A1, A2, …`` by annotator index), ``human:mean`` and
    ``human:mode`` (the rescaled aggregates, `core.stats.gaps.human_aggregate`), then
    ``metric:<name>`` (values as they are). Each model is `fit_weights`.

    Example: with 3 annotators and metrics {"MUC_F1"}: targets annotator:A1, annotator:A2,
    annotator:A3, human:mean, human:mode, metric:MUC_F1.
    """
    data = as_long_ratings(ratings)
    n_items, na = data.n_items, data.n_annotators
    x = _features(features, feature_names, n_items)
    if annotator_names is None:
        annotator_names = [f"A{j + 1}" for j in range(na)]
    elif len(annotator_names) != na:
        raise ValueError(f"{len(annotator_names)} annotator names for {na} annotators")
    out: list[ErrorWeights] = []
    if per_annotator:
        ok = rated_rows(data)
        it, an, val = data.item[ok], data.annotator[ok], rescale01(data.value[ok], domain)
        order = np.argsort(an, kind="stable")
        bounds = np.searchsorted(an[order], np.arange(na + 1))
        for j in range(na):
            rows = order[bounds[j] : bounds[j + 1]]
            out.append(
                fit_weights(val[rows], x[it[rows]], feature_names=feature_names,
                            target=f"annotator:{annotator_names[j]}", scale=scale)
            )  # fmt: skip
    for agg in aggregates:
        human = rescale01(human_aggregate(data, aggregate=agg), domain)
        out.append(fit_weights(human, x, feature_names=feature_names, target=f"human:{agg}", scale=scale))
    for name, values in (metrics or {}).items():
        arr = np.asarray(values, dtype=float)
        if arr.shape != (n_items,):
            raise ValueError(f"metric {name!r} must have one value per item ({n_items}), got {arr.shape}")
        out.append(fit_weights(arr, x, feature_names=feature_names, target=f"metric:{name}", scale=scale))
    return tuple(out)

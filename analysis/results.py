"""Build the results document `concord.results/1` from a study's arrays (no ORM here).

Every analysis of PRODUCT.md runs on the raw scale and on each reduction; every setting used is
recorded in `settings`; numbers that cannot be computed are null with a `reason`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.selectors import StudyData
from analysis.stats._types import LongRatings
from analysis.stats.alpha import alpha_with_ci
from analysis.stats.correlations import filtering_correlations
from analysis.stats.duplicates import duplicate_consistency
from analysis.stats.gaps import metric_gaps
from analysis.stats.heuristics import annotator_styles, run_heuristics
from analysis.stats.noise import noise_model
from analysis.stats.scales import LEVELS, reduce_values
from analysis.stats.simple import simple_items_long
from analysis.stats.trust import TrustResult, trust_coefficients
from analysis.stats.weights import error_weights

SCHEMA = "concord.results/1"
DEFAULTS: dict[str, Any] = {
    "level": "ordinal",
    "trust_variant": "paper",
    "simple_threshold": 3,
    "bootstrap_samples": 1000,
    "bootstrap_confidence": 0.95,
    "seed": 0,
    "trust_max_exact": 20,
    "trust_samples": 20000,
    "trust_max_annotators": 60,
    "outlier_threshold": 0.5,
    "noise_confidence": 0.95,
    "noise_max_gamma": 0.05,
}
Progress = Callable[[int, str], None]
TrustKey = tuple[str, str]  # (scale, items): ("raw", "all"), ("gravity", "simple"), …


@dataclass(frozen=True)
class ScaleView:
    name: str
    domain: tuple[float, ...]
    values: np.ndarray  # aligned with StudyData.value (first presentations)
    dup_first: np.ndarray
    dup_repeat: np.ndarray


def scale_views(data: StudyData, values: Sequence[float], reductions: Mapping[str, Mapping]) -> list[ScaleView]:
    """Return the raw scale and each reduction, with the answers mapped onto it."""
    views = [ScaleView("raw", tuple(float(v) for v in values), data.value, data.dup_first,
                       data.dup_repeat)]
    for name, mapping in reductions.items():
        numeric = {float(k): float(v) for k, v in mapping.items()}
        views.append(ScaleView(
            name, tuple(sorted(set(numeric.values()))),
            reduce_values(data.value, numeric), reduce_values(data.dup_first, numeric),
            reduce_values(data.dup_repeat, numeric),
        ))
    return views


def _clean(value: Any) -> Any:
    """Make a value JSON-safe: numpy scalars to Python, tuples to lists; NaN is a bug here."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a non-finite number reached the results document")
    return value


def _long(data: StudyData, values: np.ndarray, rows: np.ndarray | None = None) -> LongRatings:
    if rows is None:
        return LongRatings(item=data.item, annotator=data.annotator, value=values,
                           n_items=data.n_items, n_annotators=data.n_annotators)
    return LongRatings(item=data.item[rows], annotator=data.annotator[rows], value=values[rows],
                       n_items=data.n_items, n_annotators=data.n_annotators)


def build_results(
    data: StudyData,
    *,
    scale_values: Sequence[float],
    reductions: Mapping[str, Mapping],
    settings: Mapping[str, Any],
    study: Mapping[str, Any],
    progress: Progress = lambda pct, msg: None,
    trust_results: Mapping[TrustKey, TrustResult] | None = None,
) -> dict[str, Any]:
    """Run every analysis and return the results document (a JSON-safe dict).

    ``trust_results`` supplies already computed trust coefficients per ``(scale, items)`` (the
    merged chunks of a fanned-out run, see ``trust_inputs``); any key not given is computed here.
    """
    s = {**DEFAULTS, **settings}
    names = data.annotators
    views, simple, simple_rows = _views_and_simple(data, scale_values, reductions, s)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "study": dict(study),
        "settings": s,
        "annotators": names,
        "scales": [{"name": v.name, "domain": list(v.domain)} for v in views],
        "items": data.item_ids,
        "simple_items": [data.item_ids[i] for i in np.flatnonzero(simple)],
        "counts": {
            "annotators": data.n_annotators,
            "items": data.n_items,
            "answers": int(np.count_nonzero(~np.isnan(data.value))),
            "blank_answers": int(np.count_nonzero(np.isnan(data.value))),
            "duplicate_pairs": int(data.dup_item.size),
            "control_items": int(data.control.sum()),
        },
        "alpha": [], "trust": [], "duplicates": [], "metric_gaps": [], "item_gaps": [],
        "error_weights": [], "heuristics": [], "styles": [], "correlations": [], "noise": [],
        "timing": _timing(data, names),
    }
    n_steps = len(views) + 2
    for step, view in enumerate(views):
        progress(5 + int(80 * step / n_steps), f"agreement on the {view.name} scale")
        for items, rows in (("all", None), ("simple", simple_rows)):
            given = (trust_results or {}).get((view.name, items))
            doc["trust"].append(_trust(data, view, rows, items, s, names, given))
            outliers = [names.index(a) for a in doc["trust"][-1]["outliers"]]
            for level in LEVELS:
                doc["alpha"].append(_alpha(data, view, rows, items, level, [], s, names))
                if outliers:
                    doc["alpha"].append(_alpha(data, view, rows, items, level, outliers, s, names))
        doc["duplicates"] += _duplicates(data, view, names)
        ratings = _long(data, view.values)
        noise = noise_model(ratings, scale=view.name, confidence=float(s["noise_confidence"]),
                            max_gamma=float(s["noise_max_gamma"]))
        doc["noise"].append(noise.to_record())
        if data.metrics:
            gaps = metric_gaps(ratings, metrics=data.metrics, domain=view.domain,
                               scale=view.name, simple=simple)
            doc["metric_gaps"] += [g.to_record() for g in gaps.metric_gaps]
            for g in gaps.item_gaps:
                record = g.to_record()
                record["item"] = data.item_ids[record["item"]]
                doc["item_gaps"].append(record)
        if data.features:
            feature_names = sorted(data.features)
            matrix = np.column_stack([data.features[f] for f in feature_names])
            fits = error_weights(ratings, features=matrix, feature_names=feature_names,
                                 domain=view.domain, scale=view.name,
                                 metrics=data.metrics or None, annotator_names=names)
            doc["error_weights"] += [f.to_record() for f in fits]
    progress(5 + int(80 * len(views) / n_steps), "filtering heuristics and correlations")
    _filtering(doc, data, views, s, names)
    progress(95, "writing the results")
    return _clean(doc)


def _alpha(data, view, rows, items, level, without, s, names) -> dict[str, Any]:
    keep = np.ones(data.item.size, bool) if rows is None else rows.copy()
    if without:
        keep &= ~np.isin(data.annotator, without)
    ratings = _long(data, view.values, keep)
    record: dict[str, Any] = {"scale": view.name, "items": items, "level": level,
                              "without": [names[a] for a in without]}
    if level == "ratio" and min(view.domain) < 0:
        record.update(value=None, n_items=0, ci95=None,
                      reason="ratio alpha is undefined for a scale with negative codes")
        return record
    # Every interval resamples with the study's seed, so a rerun reproduces it exactly.
    rng = np.random.default_rng(int(s["seed"]))
    result = alpha_with_ci(ratings, level=level, domain=view.domain, rng=rng,
                           n_boot=int(s["bootstrap_samples"]),
                           confidence=float(s["bootstrap_confidence"]))
    record.update(value=result.value, n_items=result.n_items,
                  ci95=list(result.ci95) if result.ci95 else None)
    if result.value is None:
        record["reason"] = result.reason
    elif result.ci95 is None:
        record["reason"] = "confidence interval undefined: too few resamples with a defined alpha"
    return record


def _views_and_simple(data, scale_values, reductions, s):
    views = scale_views(data, scale_values, reductions)
    simple = simple_items_long(_long(data, views[0].values), threshold=int(s["simple_threshold"]))
    simple_rows = simple[data.item] if data.item.size else np.zeros(0, bool)
    return views, simple, simple_rows


@dataclass(frozen=True)
class TrustInput:
    """What one trust computation of the document takes: the ratings of the annotators present.

    ``ratings`` is ``(k present annotators × items)`` (nan = not rated), ``None`` when trust is
    not computed at all (more than ``trust_max_annotators``); ``present`` maps its rows to
    annotator indices of ``StudyData``.
    """

    scale: str
    items: str
    level: str
    domain: tuple[float, ...]
    present: np.ndarray
    ratings: np.ndarray | None

    @property
    def key(self) -> str:
        return f"{self.scale}:{self.items}"

    @property
    def k(self) -> int:
        return 0 if self.ratings is None else int(self.ratings.shape[0])


def _trust_input(data, view, rows, items, s) -> TrustInput:
    keep = np.ones(data.item.size, bool) if rows is None else rows
    present = np.unique(data.annotator[keep & ~np.isnan(view.values)])
    if data.n_annotators > int(s["trust_max_annotators"]):
        return TrustInput(view.name, items, s["level"], view.domain, present, None)
    dense = np.full((data.n_annotators, data.n_items), np.nan)
    dense[data.annotator[keep], data.item[keep]] = view.values[keep]
    # Annotators without any answer here cannot be scored; they are left out of the subsets.
    return TrustInput(view.name, items, s["level"], view.domain, present, dense[present])


def trust_inputs(
    data: StudyData,
    *,
    scale_values: Sequence[float],
    reductions: Mapping[str, Mapping],
    settings: Mapping[str, Any],
) -> list[TrustInput]:
    """Return the inputs of every trust computation ``build_results`` makes, in document order.

    A fanned-out run computes some of them in chunks on other workers (``trust_chunk``) and hands
    the merged results back to ``build_results(trust_results=…)``; both sides call this, so they
    agree on the ratings (and their fingerprint) exactly.
    """
    s = {**DEFAULTS, **settings}
    views, _, simple_rows = _views_and_simple(data, scale_values, reductions, s)
    return [_trust_input(data, view, rows, items, s)
            for view in views for items, rows in (("all", None), ("simple", simple_rows))]


def _trust(data, view, rows, items, s, names, given: TrustResult | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"scale": view.name, "items": items, "level": s["level"],
                              "variant": s["trust_variant"]}
    inp = _trust_input(data, view, rows, items, s)
    if inp.ratings is None:
        record.update(method=None, n_subsets=0, coefficients={a: None for a in names}, outliers=[],
                      reason=f"more than {s['trust_max_annotators']} annotators "
                             "(setting trust_max_annotators)")
        return record
    present = inp.present
    if given is not None and len(given.coefficients) == inp.k:
        result = given
    else:
        result = trust_coefficients(inp.ratings, level=s["level"], domain=view.domain,
                                    variant=s["trust_variant"],
                                    max_exact=int(s["trust_max_exact"]),
                                    n_samples=int(s["trust_samples"]),
                                    rng=np.random.default_rng(int(s["seed"])))
    coefficients = {a: None for a in names}
    for j, value in zip(present, result.coefficients, strict=True):
        coefficients[names[j]] = value
    threshold = float(s["outlier_threshold"])
    record.update(method=result.method, n_subsets=result.n_subsets, coefficients=coefficients,
                  outliers=[names[present[j]] for j, v in enumerate(result.coefficients)
                            if v is not None and v <= threshold])
    if result.reason:
        record["reason"] = result.reason
    return record


TIMING_QUANTILES = (("min_s", 0.0), ("p05_s", 0.05), ("q1_s", 0.25), ("median_s", 0.5),
                    ("q3_s", 0.75), ("p95_s", 0.95), ("max_s", 1.0))


def _timing(data, names) -> list[dict[str, Any]]:
    """Active time per answer (first presentations), in seconds: quantiles per annotator and pooled."""
    seconds = data.duration_ms / 1000.0
    known = ~np.isnan(seconds)
    out = []
    for label, mask in [("all", known)] + [(names[a], known & (data.annotator == a))
                                           for a in range(data.n_annotators)]:
        values = seconds[mask]
        record: dict[str, Any] = {"annotator": label, "n": int(values.size)}
        if values.size:
            qs = np.quantile(values, [q for _, q in TIMING_QUANTILES])  # linear interpolation
            record.update({name: float(v) for (name, _), v in zip(TIMING_QUANTILES, qs, strict=True)})
        else:
            record.update({name: None for name, _ in TIMING_QUANTILES},
                          reason="no answer with a recorded active time")
        out.append(record)
    return out


def _duplicates(data, view, names) -> list[dict[str, Any]]:
    out = []
    for a in np.unique(data.dup_annotator):
        mask = data.dup_annotator == a
        result = duplicate_consistency(view.dup_first[mask], view.dup_repeat[mask])
        record = {"annotator": names[a], "scale": view.name, "pairs": result.pairs,
                  "exact_agreement": result.exact_agreement, "mean_abs_diff": result.mean_abs_diff}
        if result.reason:
            record["reason"] = result.reason
        out.append(record)
    return out


def _filtering(doc, data, views, s, names) -> None:
    raw = views[0]
    reduced = next((v for v in views if v.name == "reduced"), raw)
    ratings = _long(data, raw.values)
    has_sentiment = data.sentiment_a is not None and "bleu1" in data.metrics
    results = run_heuristics(
        ratings,
        reduced=_long(data, reduced.values),
        duration_ms=data.duration_ms,
        control=data.control if data.control.any() else None,
        bleu1=data.metrics.get("bleu1") if has_sentiment else None,
        sentiment_a=data.sentiment_a if has_sentiment else None,
        sentiment_b=data.sentiment_b if has_sentiment else None,
        sentiment_source=data.sentiment_source,
    )
    s["heuristics"] = {rule: result.params for rule, result in results.items()}
    s["heuristics_reduced_scale"] = reduced.name
    for result in results.values():
        for record in result.records:
            row = record.to_record()
            row["annotator"] = names[row["annotator"]]
            doc["heuristics"].append(row)
    domain = raw.domain
    if len(domain) >= 4:
        extreme, moderate = (domain[0], domain[-1]), (domain[1], domain[-2])
        styles = annotator_styles(ratings, extreme=extreme, moderate=moderate)
        s["styles"] = {"extreme": list(extreme), "moderate": list(moderate), "share_threshold": 0.5}
        for record in styles.records:
            row = record.to_record()
            row["annotator"] = names[row["annotator"]]
            doc["styles"].append(row)
    if data.metrics:
        correlations = filtering_correlations(ratings, metrics=data.metrics, flagged=results)
        s["correlations"] = correlations.params
        for record in correlations.records:
            row = record.to_record()
            row["removed"] = [names[a] for a in row["removed"]]
            doc["correlations"].append(row)

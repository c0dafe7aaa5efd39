"""The systems sections of one question's scale: `systems`, `system_tests`, `system_clusters`,
`mixed_model` and `metric_meta_evaluation` (docs/results.md; the statistics in
`core.stats.systems`, `core.stats.systems_mixed`, `core.stats.systems_meta`).

A study whose items name no system gets none of these records; its sections stay empty lists.
Control items never enter (they belong to no system's output).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.data import StudyData
from core.settings import AnalysisSettings
from core.stats._types import FloatArray, IntArray
from core.stats.systems import (
    PairTest,
    SystemScores,
    blocks,
    cell_means,
    item_means,
    pair_differences,
    paired_tests,
    sign_flip_test,
    significance_clusters,
    source_cells,
    system_scores,
)
from core.stats.systems_meta import (
    MetaValue,
    item_correlations,
    one_sided_matrix,
    pairwise_accuracy,
    pairwise_permutation_p,
    soft_pairwise_accuracy,
    system_correlations,
    williams_system,
)
from core.stats.systems_mixed import mixed_model

SYSTEM_SECTIONS = ("systems", "system_tests", "system_clusters", "mixed_model",
                   "metric_meta_evaluation")


def _num(value: Any) -> float | None:
    """A finite float, or None (the document holds no nan)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class _Systems:
    """One question's scale as the systems analysis sees it: items with a system, no controls."""

    def __init__(self, data: StudyData, values: FloatArray) -> None:
        assert data.item_system is not None
        self.names = list(data.system_names)
        self.k = len(self.names)
        self.system: IntArray = np.where(data.control, -1, data.item_system)
        source = data.item_source if data.item_source is not None \
            else np.full(data.n_items, -1, dtype=np.int64)
        self.source: IntArray = np.where(self.system >= 0, source, -1)
        self.n_sources = len(data.source_names)
        self.block, self.n_blocks = blocks(self.source)
        self.agg = item_means(data.item, values, data.n_items)
        self.agg[self.system < 0] = np.nan
        self.data, self.values = data, values


def systems_records(doc: dict[str, Any], question: str, scale: str, data: StudyData,
                    values: FloatArray, s: AnalysisSettings) -> None:
    """Append the systems records of one question's scale (``values`` aligned with the data's
    answers); nothing when the study's items name no system."""
    if data.item_system is None or not data.system_names:
        return
    sy = _Systems(data, values)
    tag = {"question": question, "scale": scale}
    answers = (data.item, data.annotator, values)
    scores = system_scores(sy.system, sy.source, sy.agg, n_systems=sy.k,
                           n_boot=s.systems_bootstrap, confidence=s.bootstrap_confidence,
                           rng=np.random.default_rng(s.seed),
                           resampling=s.systems_resampling,  # type: ignore[arg-type]
                           answers=answers)
    cells = source_cells(sy.system, sy.source, sy.agg, sy.k, sy.n_sources)
    tests = paired_tests(cells, test=s.systems_test,  # type: ignore[arg-type]
                         correction=s.systems_correction,  # type: ignore[arg-type]
                         alpha=s.systems_alpha, permutations=s.systems_permutations,
                         rng=np.random.default_rng(s.seed))
    better = np.zeros((sy.k, sy.k), bool)
    for t in tests:
        if t.significant and t.mean_difference is not None and t.mean_difference != 0:
            winner, loser = (t.a, t.b) if t.mean_difference > 0 else (t.b, t.a)
            better[winner, loser] = True
    clusters = significance_clusters(scores.mean, better)
    _score_records(doc, tag, sy, scores, clusters)
    _test_records(doc, tag, sy, tests, s)
    _mixed_records(doc, tag, sy, s)
    _meta_records(doc, tag, sy, scores, tests, s)


def _score_records(doc: dict[str, Any], tag: dict[str, str], sy: _Systems,
                   scores: SystemScores, clusters: list[int]) -> None:
    order = sorted(range(sy.k), key=lambda k: (
        math.inf if np.isnan(scores.rank[k]) else scores.rank[k], sy.names[k]))
    for k in order:
        doc["systems"].append({
            **tag, "system": sy.names[k], "sources": int(scores.sources[k]),
            "items": int(scores.items[k]),
            "answers": int(np.count_nonzero(
                (sy.system[sy.data.item] == k) & ~np.isnan(sy.values))),
            "mean": _num(scores.mean[k]), "mean_low": _num(scores.mean_low[k]),
            "mean_high": _num(scores.mean_high[k]), "median": _num(scores.median[k]),
            "rank": _num(scores.rank[k]), "rank_low": _num(scores.rank_low[k]),
            "rank_high": _num(scores.rank_high[k]),
            "cluster": clusters[k] or None, "reason": scores.reason[k]})
    for k in sorted((k for k in range(sy.k) if clusters[k]),
                    key=lambda k: (clusters[k], scores.rank[k], sy.names[k])):
        doc["system_clusters"].append({**tag, "cluster": clusters[k], "system": sy.names[k],
                                       "mean": _num(scores.mean[k]),
                                       "rank": _num(scores.rank[k])})


def _test_records(doc: dict[str, Any], tag: dict[str, str], sy: _Systems,
                  tests: list[PairTest], s: AnalysisSettings) -> None:
    for t in tests:
        doc["system_tests"].append({
            **tag, "system_a": sy.names[t.a], "system_b": sy.names[t.b], "sources": t.sources,
            "mean_difference": _num(t.mean_difference), "effect_size": _num(t.effect_size),
            "test": s.systems_test, "statistic": _num(t.statistic),
            "p_value": _num(t.p_value), "p_adjusted": _num(t.p_adjusted),
            "correction": s.systems_correction, "significant": t.significant,
            "reason": t.reason})


def _mixed_records(doc: dict[str, Any], tag: dict[str, str], sy: _Systems,
                   s: AnalysisSettings) -> None:
    data = sy.data
    rows = sy.system[data.item] >= 0
    fit = mixed_model(sy.values[rows], sy.system[data.item[rows]],
                      sy.block[data.item[rows]], data.annotator[rows], n_systems=sy.k,
                      confidence=s.bootstrap_confidence)
    for k, name in enumerate(sy.names):
        missing = fit.reason or (None if not np.isnan(fit.effects[k]) else "no answer")
        doc["mixed_model"].append({
            **tag, "kind": "fixed", "name": name, "estimate": _num(fit.effects[k]),
            "std_error": _num(fit.std_errors[k]), "low": _num(fit.low[k]),
            "high": _num(fit.high[k]), "share": None, "converged": fit.converged,
            "reason": missing})
    for name in ("source", "annotator", "residual"):
        doc["mixed_model"].append({
            **tag, "kind": "variance", "name": name, "estimate": _num(fit.variances[name]),
            "std_error": None, "low": None, "high": None, "share": _num(fit.shares[name]),
            "converged": fit.converged, "reason": fit.reason or fit.reasons.get(name)})


def _meta_row(tag: dict[str, str], metric: str, level: str, grouping: str | None,
              v: MetaValue, other: str | None = None) -> dict[str, Any]:
    return {**tag, "metric": metric, "level": level, "grouping": grouping,
            "statistic": v.statistic, "value": _num(v.value), "low": _num(v.low),
            "high": _num(v.high), "p_value": _num(v.p_value), "n": v.n,
            "other_metric": other, "reason": v.reason}


def _meta_records(doc: dict[str, Any], tag: dict[str, str], sy: _Systems,
                  scores: SystemScores, tests: list[PairTest], s: AnalysisSettings) -> None:
    """Every metric against the humans: system level (correlations, pairwise accuracies,
    Williams' test between metrics) and, for item metrics, item level."""
    data = sy.data
    item_metrics = {m: v for m, v in sorted(data.metrics.items())}
    imported = {m: v for m, v in sorted(data.system_scores.items()) if m not in item_metrics}
    if not item_metrics and not imported:
        return
    pairs = [(t.a, t.b) for t in tests]
    nan = np.full(len(pairs), np.nan)
    p_human = one_sided_matrix(
        sy.k, pairs, np.array([np.nan if t.p_greater is None else t.p_greater for t in tests])
        if tests else nan, np.array([np.nan if t.p_less is None else t.p_less for t in tests])
        if tests else nan)
    system_level: dict[str, FloatArray] = {}
    rows: list[dict[str, Any]] = []
    for metric, values in item_metrics.items():
        m = np.where(~np.isnan(sy.agg), values, np.nan)  # the items both sides score
        sums, counts = cell_means(sy.system, sy.block, m, sy.k, sy.n_blocks)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = sums.sum(axis=0) / counts.sum(axis=0)
            boot = (scores.counts @ sums) / (scores.counts @ counts)
        system_level[metric] = point
        cells = source_cells(sy.system, sy.source, m, sy.k, sy.n_sources)
        _, d = pair_differences(cells)
        shared = (~np.isnan(d)).sum(axis=0) >= 2
        flip = sign_flip_test(np.where(shared, d, np.nan), permutations=s.systems_permutations,
                              rng=np.random.default_rng(s.seed))
        p_metric = one_sided_matrix(sy.k, pairs, flip.p_greater, flip.p_less)
        rows += _system_rows(tag, metric, scores, point, boot, p_human, p_metric, s)
        for grouping, groups in (("none", None), ("item", sy.source), ("system", sy.system)):
            for v in item_correlations(sy.agg, m, groups):
                rows.append(_meta_row(tag, metric, "item", grouping, v))
    for metric, by_system in imported.items():
        point = np.array([by_system.get(name, np.nan) for name in sy.names], dtype=float)
        system_level[metric] = point
        rows += _system_rows(tag, metric, scores, point, None, p_human, None, s)
    names = list(system_level)
    for a in names:
        for b in names:
            if a == b:
                continue
            t, p, n, reason = williams_system(scores.mean, system_level[a], system_level[b])
            rows.append(_meta_row(tag, a, "system", None, MetaValue(
                "williams", t, p_value=p, n=n, reason=reason), other=b))
    doc["metric_meta_evaluation"] += rows


def _system_rows(tag: dict[str, str], metric: str, scores: SystemScores, point: FloatArray,
                 boot: FloatArray | None, p_human: FloatArray, p_metric: FloatArray | None,
                 s: AnalysisSettings) -> list[dict[str, Any]]:
    rows = [_meta_row(tag, metric, "system", None, v) for v in system_correlations(
        scores.mean, point, boot_human=scores.boot, boot_metric=boot,
        confidence=s.bootstrap_confidence)]
    keep = np.flatnonzero(~np.isnan(scores.mean) & ~np.isnan(point))
    n = int(keep.size)
    if n < 3:
        reason = f"fewer than 3 systems with both scores ({n})"
        rows += [_meta_row(tag, metric, "system", None, MetaValue(name, None, n=n, reason=reason))
                 for name in ("pairwise_accuracy", "soft_pairwise_accuracy")]
        return rows
    h, m = scores.mean[keep], point[keep]
    sub_h = p_human[np.ix_(keep, keep)]
    sub_m = None if p_metric is None else p_metric[np.ix_(keep, keep)]
    p_pa, p_spa = pairwise_permutation_p(h, m, p_human=sub_h, p_metric=sub_m,
                                         permutations=s.systems_permutations,
                                         rng=np.random.default_rng(s.seed))
    rows.append(_meta_row(tag, metric, "system", None, MetaValue(
        "pairwise_accuracy", pairwise_accuracy(h, m), p_value=p_pa, n=n)))
    if sub_m is None:
        spa = MetaValue("soft_pairwise_accuracy", None, n=n,
                        reason="system-level scores only: SPA needs the metric's item scores "
                               "to test each pair")
    else:
        value = soft_pairwise_accuracy(sub_h, sub_m)
        spa = MetaValue("soft_pairwise_accuracy", value, p_value=p_spa, n=n,
                        reason=None if math.isfinite(value)
                        else "no pair of systems tested on 2 or more shared sources")
    rows.append(_meta_row(tag, metric, "system", None, spa))
    return rows

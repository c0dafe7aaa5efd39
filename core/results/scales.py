"""The sections of one question's scale in a results document (alpha, trust, duplicates,
competence, noise, gaps, error weights) and the study-wide timing (`core.results.build`
assembles them; docs/results.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from core import results_quality as rq
from core.data import StudyData
from core.results.records import ItemRecords, SectionClock
from core.settings import LEVELS, AnalysisSettings
from core.stats._types import BoolArray, LongRatings
from core.stats.alpha import alpha_levels_with_ci
from core.stats.duplicates import duplicate_consistency
from core.stats.gaps import AGGREGATES, ItemGapBlock, metric_gaps
from core.stats.noise import noise_model
from core.stats.scales import reduce_values
from core.stats.simple import simple_items_long
from core.stats.trust import (
    MIN_SAMPLES,
    TrustResult,
    Variant,
    sampled_seconds,
    samples_within,
    trust_coefficients,
)
from core.stats.weights import error_weights

# (question, scale, items): ("rating", "raw", "all"), ("coherence", "raw", "simple"), …
TrustKey = tuple[str, str, str]
# Per question × scale × aggregate × metric, the document keeps the LARGEST_GAPS largest
# |gap| (ties: by item id), and per question × scale × metric of the scatter's aggregate (the
# mean) an evenly spaced sample of at most GAP_SAMPLE items: a scatter of 210 px a side shows
# no more, and the dashboard reads the whole document on every view.
LARGEST_GAPS = 10
GAP_SAMPLE = 1000
SAMPLED_AGGREGATE = AGGREGATES[0]


@dataclass(frozen=True)
class ScaleView:
    name: str
    domain: tuple[float, ...]
    values: np.ndarray  # aligned with StudyData.value (first presentations)
    dup_first: np.ndarray
    dup_repeat: np.ndarray


def scale_views(data: StudyData, values: Sequence[float],
                reductions: Mapping[str, Mapping[str, float]]) -> list[ScaleView]:
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


def _long(data: StudyData, values: np.ndarray, rows: np.ndarray | None = None) -> LongRatings:
    if rows is None:
        return LongRatings(item=data.item, annotator=data.annotator, value=values,
                           n_items=data.n_items, n_annotators=data.n_annotators)
    return LongRatings(item=data.item[rows], annotator=data.annotator[rows], value=values[rows],
                       n_items=data.n_items, n_annotators=data.n_annotators)


@dataclass(frozen=True)
class _Question:
    """One question as the analyses see it: without the excluded annotators, with its scales."""

    key: str
    prompt: str
    data: StudyData
    everyone: StudyData
    views: list[ScaleView]
    simple: BoolArray
    simple_rows: BoolArray



# The families of one question's scale, in the order their records enter the document: each
# is one section group of a fanned-out run (`core.results.groups`).
SCALE_FAMILIES = ("agreement", "competence", "spread")


def _scale_sections(doc: dict[str, Any], q: _Question, view: ScaleView, s: AnalysisSettings,
                    names: list[str], trust_results: Mapping[TrustKey, TrustResult],
                    clock: SectionClock, records: ItemRecords, *,
                    families: Sequence[str] = SCALE_FAMILIES,
                    methods: Sequence[str] = rq.COMPETENCE_METHODS) -> None:
    """Append the records of one question's scale: alpha, trust, duplicates (*agreement*),
    the competence models of ``methods`` (*competence*), noise, gaps, weights (*spread*); only
    the ``families`` named (the whole scale by default)."""
    if "agreement" in families:
        _agreement(doc, q, view, s, names, trust_results, clock)
    ratings = _long(q.data, view.values)
    if "competence" in families:
        with clock("competence"):
            rq.competence_records(doc, q.key, view.name, ratings, view.domain, names, s,
                                  labels=records.labels, methods=methods)
    if "spread" in families:
        with clock("noise"):
            noise = noise_model(ratings, scale=view.name, confidence=s.noise_confidence,
                                max_gamma=s.noise_max_gamma)
            doc["noise"].append({"question": q.key, **noise.to_record()})
        with clock("gaps"):
            _gaps(doc, q, view, ratings, records)
        if q.data.features:
            with clock("error_weights"):
                _weights(doc, q, view, ratings, names)


def _agreement(doc: dict[str, Any], q: _Question, view: ScaleView, s: AnalysisSettings,
               names: list[str], trust_results: Mapping[TrustKey, TrustResult],
               clock: SectionClock) -> None:
    """Append one scale's trust and alpha (every item, then the simple ones; alpha again
    without trust's outliers) and its duplicates."""
    data = q.data
    for items, rows in (("all", None), ("simple", q.simple_rows)):
        given = trust_results.get((q.key, view.name, items))
        with clock("trust"):
            doc["trust"].append(_trust(q.key, data, view, rows, items, s, names, given))
        outliers = [names.index(a) for a in doc["trust"][-1]["outliers"]]
        with clock("alpha"):
            every = _alphas(q.key, data, view, rows, items, [], s, names)
            without = _alphas(q.key, data, view, rows, items, outliers, s, names) \
                if outliers else {}
            for level in LEVELS:
                doc["alpha"].append(every[level])
                if outliers:
                    doc["alpha"].append(without[level])
    with clock("duplicates"):
        doc["duplicates"] += [{"question": q.key, **r} for r in _duplicates(data, view, names)]


def _gaps(doc: dict[str, Any], q: _Question, view: ScaleView, ratings: LongRatings,
          records: ItemRecords) -> None:
    """Append the mean gaps of one scale; its per-item gaps go to ``records``, the document
    keeping the largest of each metric and an evenly spaced sample (`gap_summaries`)."""
    data = q.data
    tagged = {"question": q.key}
    if data.metrics:
        gaps = metric_gaps(ratings, metrics=data.metrics, domain=view.domain,
                           scale=view.name, simple=q.simple)
        doc["metric_gaps"] += [{**tagged, **g.to_record()} for g in gaps.metric_gaps]
        ids = np.asarray(data.item_ids, dtype=object)
        for block in gaps.item_gap_blocks:
            records.gaps.append((q.key, block))
            largest, sample = gap_summaries(block, ids)
            doc["largest_gaps"] += [_gap_record(q.key, block, ids, i) for i in largest]
            if block.aggregate == SAMPLED_AGGREGATE:
                doc["item_gap_sample"] += [_gap_record(q.key, block, ids, i) for i in sample]


def gap_summaries(block: ItemGapBlock, item_ids: np.ndarray, *, largest: int = LARGEST_GAPS,
                  sample: int = GAP_SAMPLE) -> tuple[list[int], list[int]]:
    """Return the rows of ``block`` the document keeps: its ``largest`` largest |gap| (ties in
    item id order), and every ⌈n / sample⌉-th row from the first (all rows when n ≤ ``sample``).

    Example: gaps (0.1, −0.5, 0.5, 0.2) of items (d, c, b, a), largest=2, sample=2 → rows
    ([2, 1], [0, 2]): |−0.5| and |0.5| tie, b before c; every second row from the first.
    """
    n = len(block)
    if n == 0:
        return [], []
    names = item_ids[block.item].astype(str)
    order = np.lexsort((names, -np.abs(block.gap)))
    step = -(-n // sample)
    return [int(i) for i in order[:largest]], list(range(0, n, step))


def _gap_record(question: str, block: ItemGapBlock, item_ids: np.ndarray, row: int
                ) -> dict[str, Any]:
    return {"question": question, "item": str(item_ids[block.item[row]]), "scale": block.scale,
            "aggregate": block.aggregate, "metric": block.metric,
            "human": float(block.human[row]), "metric_value": float(block.metric_value[row]),
            "gap": float(block.gap[row])}


def _weights(doc: dict[str, Any], q: _Question, view: ScaleView, ratings: LongRatings,
             names: list[str]) -> None:
    data = q.data
    tagged = {"question": q.key}
    if data.features:
        feature_names = sorted(data.features)
        matrix = np.column_stack([data.features[f] for f in feature_names])
        fits = error_weights(ratings, features=matrix, feature_names=feature_names,
                             domain=view.domain, scale=view.name,
                             metrics=data.metrics or None, annotator_names=names)
        doc["error_weights"] += [{**tagged, **f.to_record()} for f in fits]


def _alphas(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None,
            items: str, without: list[int], s: AnalysisSettings, names: list[str]
            ) -> dict[str, dict[str, Any]]:
    """Return the alpha record of every level (`LEVELS`) on one scale, items and annotators."""
    keep = np.ones(data.item.size, bool) if rows is None else rows.copy()
    records: dict[str, dict[str, Any]] = {
        level: {"question": question, "scale": view.name, "items": items, "level": level,
                "without": [names[a] for a in without]} for level in LEVELS}
    if without:
        left = int(np.unique(data.annotator[keep & ~np.isin(data.annotator, without)]).size)
        if left < 2:
            # Alpha needs two annotators: the outliers are not removed, and the record says why.
            reason = (f"outliers not removed: without {', '.join(names[a] for a in without)} "
                      f"{'one annotator would be' if left == 1 else 'no annotator would be'} "
                      "left, and alpha needs two")
            for record in records.values():
                record.update(value=None, n_items=0, ci95=None, reason=reason)
            return records
        keep &= ~np.isin(data.annotator, without)
    ratings = _long(data, view.values, keep)
    levels = list(LEVELS)
    if min(view.domain) < 0:
        records["ratio"].update(value=None, n_items=0, ci95=None,
                                reason="ratio alpha is undefined for a scale with negative codes")
        levels.remove("ratio")
    # Every interval resamples with the study's seed, so a rerun reproduces it exactly; the
    # levels share those resamples (`alpha_levels_with_ci`).
    results = alpha_levels_with_ci(ratings, levels=levels, domain=view.domain, seed=s.seed,
                                   n_boot=s.bootstrap_samples,
                                   confidence=s.bootstrap_confidence)
    for level, result in results.items():
        record = records[level]
        record.update(value=result.value, n_items=result.n_items,
                      ci95=list(result.ci95) if result.ci95 else None)
        if result.value is None:
            record["reason"] = result.reason
        elif result.ci95 is None:
            record["reason"] = ("confidence interval undefined: too few resamples with a "
                                "defined alpha")
    return records


def _views_and_simple(
    data: StudyData, scale_values: Sequence[float],
    reductions: Mapping[str, Mapping[str, float]], s: AnalysisSettings,
) -> tuple[list[ScaleView], BoolArray, BoolArray]:
    views = scale_views(data, scale_values, reductions)
    simple = simple_items_long(_long(data, views[0].values), threshold=s.simple_threshold)
    simple_rows = simple[data.item] if data.item.size else np.zeros(0, bool)
    return views, simple, simple_rows


@dataclass(frozen=True)
class TrustInput:
    """What one trust computation of the document takes: the ratings of the annotators present.

    ``ratings`` is ``(k present annotators × items)`` (nan = not rated), ``None`` when trust is
    not computed at all (more than ``trust_max_annotators``, when that is set); ``present`` maps its rows to
    annotator indices of ``StudyData``.  Its ``key`` names it in a run's timings and trust
    plans: ``"<question>:<scale>:<items>"``.
    """

    question: str
    scale: str
    items: str
    level: str
    domain: tuple[float, ...]
    present: np.ndarray
    ratings: np.ndarray | None

    @property
    def key(self) -> str:
        return f"{self.question}:{self.scale}:{self.items}"

    @property
    def k(self) -> int:
        return 0 if self.ratings is None else int(self.ratings.shape[0])


def _answered_rows(data: StudyData, view: ScaleView, rows: BoolArray | None) -> BoolArray:
    """The rows of ``rows`` (None: every row) with an answer on ``view``'s scale."""
    answered: BoolArray = ~np.isnan(view.values)
    return answered if rows is None else rows & answered


def _trust_skipped(data: StudyData, s: AnalysisSettings) -> bool:
    """Whether trust is not computed at all (more than ``trust_max_annotators``)."""
    return s.trust_max_annotators is not None and data.n_annotators > s.trust_max_annotators


def _trust_input(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None,
                 items: str, s: AnalysisSettings) -> TrustInput:
    answered = _answered_rows(data, view, rows)
    present = np.unique(data.annotator[answered])
    if _trust_skipped(data, s):
        return TrustInput(question, view.name, items, s.level, view.domain, present, None)
    # Annotators without any answer here cannot be scored; they are left out of the subsets:
    # one row per present annotator (their rank in ``present``), nan where not rated.  Built
    # only when trust is computed: at 2 000 annotators × 100 000 items it is 1.6 GB.
    dense = np.full((present.size, data.n_items), np.nan)
    dense[np.searchsorted(present, data.annotator[answered]), data.item[answered]] = \
        view.values[answered]
    return TrustInput(question, view.name, items, s.level, view.domain, present, dense)



def _trust_samples(k: int, n_items: int, domain: Sequence[float], s: AnalysisSettings
                   ) -> tuple[int, float, str | None]:
    """Return the subsets the sampled estimate of ``k`` annotators on ``n_items`` items draws
    within ``trust_budget_s``, the estimated seconds, and the reason it is not computed at all
    (``None``: it is)."""
    n_values = len(domain)
    n = samples_within(s.trust_budget_s, k=k, n_items=n_items, n_values=n_values,
                       wanted=s.trust_samples)
    least = min(MIN_SAMPLES, s.trust_samples)
    if n >= least:
        return n, sampled_seconds(k=k, n_items=n_items, n_values=n_values, n_samples=n), None
    needed = sampled_seconds(k=k, n_items=n_items, n_values=n_values, n_samples=least)
    return 0, needed, (f"the sampled estimate would take about {needed:.0f} s even with "
                       f"{least} subsets, more than the {s.trust_budget_s:g} s allowed "
                       "(setting trust_budget_s)")


def _trust(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None, items: str,
           s: AnalysisSettings, names: list[str],
           given: TrustResult | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"question": question, "scale": view.name, "items": items,
                              "level": s.level, "variant": s.trust_variant, "mc_error": None}
    if _trust_skipped(data, s):
        record.update(method=None, n_subsets=0, coefficients={a: None for a in names},
                      ranks={a: None for a in names}, outliers=[],
                      reason=f"more than {s.trust_max_annotators} annotators "
                             "(setting trust_max_annotators)")
        return record
    # Whether (and how) trust is computed depends on the present annotators only: the ratings
    # (`_trust_input`) are built once it is, never for a reason alone.
    present = np.unique(data.annotator[_answered_rows(data, view, rows)])
    k = int(present.size)
    n_samples = s.trust_samples
    if given is not None and len(given.coefficients) == k:
        result = given
    else:
        if k > s.trust_max_exact:
            n_samples, estimate, reason = _trust_samples(k, data.n_items, view.domain, s)
            record.update(samples_wanted=s.trust_samples, estimated_s=round(estimate, 3))
            if reason is not None:
                record.update(method=None, n_subsets=0, coefficients={a: None for a in names},
                              ranks={a: None for a in names}, outliers=[], reason=reason)
                return record
        inp = _trust_input(question, data, view, rows, items, s)
        assert inp.ratings is not None  # not skipped (above)
        result = trust_coefficients(inp.ratings, level=s.level, domain=view.domain,
                                    variant=cast(Variant, s.trust_variant), max_exact=s.trust_max_exact,
                                    n_samples=n_samples,
                                    rng=np.random.default_rng(s.seed))
    coefficients: dict[str, float | None] = {a: None for a in names}
    for j, value in zip(present, result.coefficients, strict=True):
        coefficients[names[j]] = value
    if result.method == "sampled":
        errors: dict[str, float | None] = {a: None for a in names}
        for j, err in zip(present, result.mc_error or (None,) * k, strict=True):
            errors[names[j]] = err
        record["mc_error"] = errors
    threshold = s.outlier_threshold
    record.update(method=result.method, n_subsets=result.n_subsets, coefficients=coefficients,
                  ranks=rq.trust_ranks(coefficients),
                  outliers=[names[present[j]] for j, v in enumerate(result.coefficients)
                            if v is not None and v <= threshold])
    if result.reason:
        record["reason"] = result.reason
    return record


TIMING_QUANTILES = (("min_s", 0.0), ("p05_s", 0.05), ("q1_s", 0.25), ("median_s", 0.5),
                    ("q3_s", 0.75), ("p95_s", 0.95), ("max_s", 1.0))


def _timing(data: StudyData, names: list[str]) -> list[dict[str, Any]]:
    """Active time per response (first presentations), in seconds: per annotator and pooled.

    Time is measured per item, whatever the number of its questions: one record per annotator
    (and the pooled one), with ``question`` null.
    """
    seconds = data.duration_ms / 1000.0
    known = ~np.isnan(seconds)
    # One sort by annotator, then each annotator's times are a slice: time and memory linear in
    # the rows (a mask per annotator would be annotators × rows).
    timed = np.flatnonzero(known)
    order = timed[np.argsort(data.annotator[timed], kind="stable")]
    bounds = np.searchsorted(data.annotator[order], np.arange(data.n_annotators + 1))
    groups = [("all", seconds[known])] + [
        (names[a], seconds[order[bounds[a]:bounds[a + 1]]]) for a in range(data.n_annotators)]
    out = []
    for label, values in groups:
        record: dict[str, Any] = {"question": None, "annotator": label, "n": int(values.size)}
        if values.size:
            qs = np.quantile(values, [q for _, q in TIMING_QUANTILES])  # linear interpolation
            record.update({name: float(v) for (name, _), v in zip(TIMING_QUANTILES, qs, strict=True)})
        else:
            record.update({name: None for name, _ in TIMING_QUANTILES},
                          reason="no answer with a recorded active time")
        out.append(record)
    return out


def _duplicates(data: StudyData, view: ScaleView, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for a in np.unique(data.dup_annotator):
        mask = data.dup_annotator == a
        result = duplicate_consistency(view.dup_first[mask], view.dup_repeat[mask])
        record: dict[str, Any] = {"annotator": names[a], "scale": view.name, "pairs": result.pairs,
                  "exact_agreement": result.exact_agreement, "mean_abs_diff": result.mean_abs_diff}
        if result.reason:
            record["reason"] = result.reason
        out.append(record)
    return out

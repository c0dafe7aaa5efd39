"""The quality sections of the results document (no ORM): rules beyond the paper's five,
competence models, and how sure the metric–human correlations are.

`core.results.build_results` calls these; each appends records to the document's sections
(docs/results.md describes every field):

- ``quality``: the rules of ``core.stats.quality`` per annotator — *too fast*, *attention* and
  *straight-lining* once for the study (``question`` null: time is measured per item, a check is
  scored over all its questions, and a straight line runs across items and across an item's
  questions), *duplicate inconsistency* per question (on its raw scale);
- ``quality_correlations``: the metric–human correlations with each new rule alone and with every
  rule together (the paper's five and the new ones), beside the paper's 31 combinations
  (``correlations``), which stay as they are;
- ``competence`` / ``competence_models`` / ``item_labels``: Dawid–Skene and MACE per question ×
  scale: a competence and rank per annotator, the fit, an aggregated label per item with its
  probability and entropy;
- ``correlation_intervals``: a percentile bootstrap interval on every metric–human correlation
  (of ``correlations``, ``quality_correlations`` and ``style_correlations``);
- ``metric_comparisons``: Williams' test of every pair of metrics on the unfiltered human means;
- ``style_correlations``: the radical-only and centrist-only correlations (Solomon et al. 2021,
  table 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from core.data import StudyData
from core.settings import AnalysisSettings
from core.stats._types import FloatArray, LongRatings
from core.stats.competence import CompetenceResult, ItemLabels, dawid_skene, mace
from core.stats.correlation_uncertainty import (
    batch_pairs,
    bootstrap_correlations,
    compare_metrics,
)
from core.stats.correlations import (
    ALL,
    CorrelationRecord,
    CorrelationsResult,
    StyleCorrelationRecord,
    item_means,
    rule_set_correlations,
    style_correlations,
)
from core.stats.heuristics import HeuristicResult, StylesResult
from core.stats.quality import (
    attention_count_annotators,
    duplicate_inconsistency_annotators,
    straight_lining_annotators,
    too_fast_annotators,
)

# The rules of core.stats.quality, in the order of QUALITY_RULES.
STUDY_RULES = ("too_fast", "attention", "straight_lining")  # once for the study, question null
QUESTION_RULES = ("duplicate_inconsistency",)  # per question
COMPETENCE_METHODS = ("dawid_skene", "mace")


def _named(record: Mapping[str, Any], names: Sequence[str], question: str | None
           ) -> dict[str, Any]:
    row: dict[str, Any] = {"question": question, **record}
    row["annotator"] = names[int(row["annotator"])]
    return row


def study_rules(data: StudyData, answered: np.ndarray, positions: np.ndarray,
                s: AnalysisSettings, checks: Sequence[Mapping[str, Any]] = ()
                ) -> dict[str, HeuristicResult]:
    """Run the study-wide rules: *too fast*, *attention* and *straight-lining*.

    ``answered``: rows where any question was answered; ``positions``: ``(rows, questions)``,
    each answer's position on its question's scale (nan = blank), the common coding that lets
    a straight line run across an item's questions; ``checks``: the attention checks each
    annotator answered and failed (`attention_counts`).
    """
    ratings = LongRatings(item=data.item, annotator=data.annotator,
                          value=np.where(answered, 1.0, np.nan),
                          n_items=data.n_items, n_annotators=data.n_annotators)
    fast = s.quality.params("too_fast")
    speed = fast.pop("reading_speed")
    if speed is not None and data.item_words is not None:
        fast.update(item_length=data.item_words, reading_speed=speed)
    too_fast = too_fast_annotators(ratings, data.duration_ms, **fast)
    # Rows are in the order they were answered (the first responses' order), so each
    # annotator's rows, questions in order within a row, are the sequence they gave.
    # One stable sort, then a slice each (not one mask per annotator over every row).
    order = np.argsort(data.annotator, kind="stable")
    bounds = np.cumsum(np.bincount(data.annotator, minlength=data.n_annotators))[:-1]
    sequences = [rows.ravel() for rows in np.split(positions[order], bounds)] \
        if data.n_annotators else []
    straight = straight_lining_annotators(sequences, **s.quality.params("straight_lining"))
    n_checks, failures = attention_counts(checks, data.annotators)
    attention = attention_count_annotators(n_checks=n_checks, failures=failures,
                                           **s.quality.params("attention"))
    return {"too_fast": too_fast, "attention": attention, "straight_lining": straight}


def attention_counts(checks: Sequence[Mapping[str, Any]], names: Sequence[str]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Return checks answered and failed per analysed annotator, aligned with ``names``.

    ``checks``: ``{"annotator", "answered", "failed"}`` per annotator (by pseudonym); an
    annotator not among ``names`` (left out, or with no main answer) is not counted, one
    without a row answered no check.
    """
    index = {name: j for j, name in enumerate(names)}
    n_checks = np.zeros(len(names), dtype=np.int64)
    failures = np.zeros(len(names), dtype=np.int64)
    for row in checks:
        j = index.get(str(row["annotator"]))
        if j is not None:
            n_checks[j], failures[j] = int(row["answered"]), int(row["failed"])
    return n_checks, failures


def positions_on_scale(value: FloatArray, scale: Sequence[float]) -> FloatArray:
    """Return each answer's position (0, 1, …) in ``scale``; nan for a blank or a value off it."""
    out = np.full(value.shape, np.nan)
    for n, v in enumerate(scale):
        out[value == float(v)] = n
    return out


def question_rules(data: StudyData, s: AnalysisSettings) -> dict[str, HeuristicResult]:
    """Run the per-question rules on the raw scale: *duplicate inconsistency*."""
    return {"duplicate_inconsistency": duplicate_inconsistency_annotators(
        annotator=data.dup_annotator, first=data.dup_first, repeat=data.dup_repeat,
        n_annotators=data.n_annotators, **s.quality.params("duplicate_inconsistency"))}


def quality_records(doc: dict[str, Any], results: Mapping[str, HeuristicResult],
                    names: Sequence[str], question: str | None, *, record_settings: bool) -> None:
    """Append the records of some quality rules; with ``record_settings``, record in the
    document's ``settings.quality`` the parameters they applied (the floor used, …)."""
    for rule, result in results.items():
        if record_settings:
            doc["settings"]["quality"][rule].update(result.params)
        for record in result.records:
            doc["quality"].append(_named({**record.to_record(), "n": record.n}, names,
                                         question))


class Intervals:
    """Bootstrap intervals of one question's correlations, each (removed, metric) computed once.

    `prefetch` computes many at once (`bootstrap_correlations`: the intervals of one human
    side share their resamples); `of` returns one, computing it if it was not prefetched. Each
    interval resamples from a fresh generator of the study's seed, so a record's interval does
    not depend on which others were computed with it.
    """

    def __init__(self, ratings: LongRatings, metrics: Mapping[str, FloatArray],
                 s: AnalysisSettings) -> None:
        self.ratings, self.metrics, self.s = ratings, metrics, s
        self.cache: dict[tuple[tuple[int, ...], str], dict[str, Any]] = {}

    def _wanted(self, baseline: bool) -> bool:
        wanted = self.s.correlation_intervals
        return not (wanted == "none" or (wanted == "baseline" and not baseline))

    def prefetch(self, requests: Sequence[tuple[Sequence[int], str, bool]]) -> None:
        """Compute the intervals of ``requests`` — (removed, metric, baseline) — in one batch."""
        keys = list(dict.fromkeys(
            (tuple(sorted(int(a) for a in removed)), metric)
            for removed, metric, baseline in requests if self._wanted(baseline)))
        keys = [key for key in keys if key not in self.cache]
        by_removed: dict[tuple[int, ...], list[str]] = {}
        for removed, metric in keys:
            by_removed.setdefault(removed, []).append(metric)
        # A human side per removed set, a few at a time: a crowd study has hundreds of
        # combinations over a million items, each side as large as the items.
        metrics = {m: np.asarray(v, dtype=float) for m, v in self.metrics.items()}
        sides = list(by_removed.items())
        n_items = max((v.size for v in metrics.values()), default=1)
        per_batch = max(1, batch_pairs(n_items) // max(1, len(metrics)))
        for first in range(0, len(sides), per_batch):
            batch = [(removed, metric, human) for removed, names, human in (
                (removed, names, item_means(self.ratings, removed=removed))
                for removed, names in sides[first:first + per_batch]) for metric in names]
            found = bootstrap_correlations(
                [(metrics[metric], human) for _, metric, human in batch],
                seed=self.s.seed, n_resamples=self.s.bootstrap_samples,
                confidence=self.s.bootstrap_confidence)
            for (removed, metric, _), interval in zip(batch, found, strict=True):
                ci = interval.to_record()
                self.cache[(removed, metric)] = {
                    k: ci[k] for k in ("pearson_ci", "spearman_ci", "n_resamples",
                                       "n_undefined", "confidence", "reason") if k in ci}

    def of(self, removed: Sequence[int], metric: str, *, baseline: bool = False
           ) -> dict[str, Any]:
        """Return the interval of ``metric`` without ``removed``; per ``correlation_intervals``
        only the baseline's (``baseline``: the unfiltered and the style rows), or none."""
        if not self._wanted(baseline):
            wanted = self.s.correlation_intervals
            return {"pearson_ci": None, "spearman_ci": None,
                    "reason": f"not computed (setting correlation_intervals = {wanted})"}
        key = (tuple(sorted(int(a) for a in removed)), metric)
        if key not in self.cache:
            self.prefetch([(removed, metric, baseline)])
        return self.cache[key]


def interval_record(table: str, question: str, rules: Sequence[str], removed: Sequence[int],
                    metric: str, names: Sequence[str], intervals: Intervals,
                    **extra: Any) -> dict[str, Any]:
    """Return one ``correlation_intervals`` record: which correlation, and its interval."""
    baseline = not rules
    return {"question": question, "table": table, **extra, "rules": list(rules),
            "removed": [names[int(a)] for a in removed], "metric": metric,
            **intervals.of(removed, metric, baseline=baseline)}


def rule_sets(ratings: LongRatings, metrics: Mapping[str, FloatArray],
              flagged: Mapping[str, HeuristicResult], new_rules: Sequence[str]
              ) -> CorrelationsResult:
    """Return the correlations with each new rule alone and every rule together."""
    return rule_set_correlations(ratings, metrics=metrics, flagged=flagged,
                                 sets=[(rule,) for rule in new_rules] + [ALL])


def rule_set_records(doc: dict[str, Any], question: str, result: CorrelationsResult,
                     metrics: Mapping[str, FloatArray], new_rules: Sequence[str],
                     names: Sequence[str], intervals: Intervals) -> dict[str, Any]:
    """Append the correlations of `rule_sets` and their intervals; return their params."""
    for n, record in enumerate(result.records):
        if not record.rules:  # the baseline is the 31-combination table's
            continue
        every = n >= (1 + len(new_rules)) * len(metrics)
        row = {"question": question, "set": "all" if every else record.rules[0],
               **_correlation_row(record, names)}
        doc["quality_correlations"].append(row)
        doc["correlation_intervals"].append(interval_record(
            "quality_correlations", question, record.rules, record.removed, record.metric,
            names, intervals, set=row["set"]))
    return dict(result.params)


def _correlation_row(record: CorrelationRecord, names: Sequence[str]) -> dict[str, Any]:
    row = record.to_record()
    row["removed"] = [names[int(a)] for a in record.removed]
    return row


def correlation_interval_records(doc: dict[str, Any], question: str,
                                 records: Sequence[CorrelationRecord], names: Sequence[str],
                                 intervals: Intervals) -> None:
    """Append the interval of every record of the paper's table (``correlations``)."""
    for record in records:
        doc["correlation_intervals"].append(interval_record(
            "correlations", question, record.rules, record.removed, record.metric, names,
            intervals))


def style_rows(ratings: LongRatings, metrics: Mapping[str, FloatArray], styles: StylesResult,
               flagged: Mapping[str, HeuristicResult], low_variance: HeuristicResult
               ) -> list[StyleCorrelationRecord]:
    """Return the radical/centrist correlations (Solomon et al. 2021, table 2).

    As in the paper, annotators whose labels vary too little (the *low variance* rule) are left
    out of both styles; the filtered rows also remove everyone any of the paper's rules flags.
    """
    return list(style_correlations(ratings, metrics=metrics, styles=styles, flagged=flagged,
                                   exclude=low_variance))


def style_removed(record: StyleCorrelationRecord, n_annotators: int) -> list[int]:
    """The annotators a style row leaves out (its interval's ``removed``)."""
    return sorted(set(range(n_annotators)) - set(record.annotators))


def style_records(doc: dict[str, Any], question: str, rows: Sequence[StyleCorrelationRecord],
                  names: Sequence[str], intervals: Intervals) -> None:
    """Append the radical/centrist correlations of `style_rows` and their intervals."""
    for record in rows:
        row = record.to_record()
        row["annotators"] = [names[int(a)] for a in record.annotators]
        doc["style_correlations"].append({"question": question, **row})
        removed = style_removed(record, len(names))
        if record.annotators:
            doc["correlation_intervals"].append(interval_record(
                "style_correlations", question, [], removed, record.metric, names, intervals,
                style=record.style, filtered=record.filtered))


def comparison_records(doc: dict[str, Any], question: str, ratings: LongRatings,
                       metrics: Mapping[str, FloatArray], s: AnalysisSettings) -> None:
    """Append Williams' test of every pair of metrics on the unfiltered per-item human means."""
    if len(metrics) < 2:
        return
    human = item_means(ratings)
    methods: tuple[Literal["pearson", "spearman"], ...] = ("pearson", "spearman")
    for method in methods:
        for comparison in compare_metrics(human, metrics, method=method,
                                          alpha=s.comparison_alpha):
            doc["metric_comparisons"].append({"question": question, "rules": [],
                                              **comparison.to_record()})


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """Return 1-based ranks, highest value first (ties in annotator order), None for None."""
    order = sorted((i for i, v in enumerate(values) if v is not None),
                   key=lambda i: (-(values[i] or 0.0), i))
    ranks: list[int | None] = [None] * len(values)
    for rank, i in enumerate(order, start=1):
        ranks[i] = rank
    return ranks


def trust_ranks(coefficients: Mapping[str, float | None]) -> dict[str, int | None]:
    """Return each annotator's rank by trust coefficient (1 = most trusted; None = not scored)."""
    names = list(coefficients)
    return dict(zip(names, _ranks([coefficients[n] for n in names]), strict=True))


@dataclass(frozen=True, eq=False)
class LabelBlock:
    """The aggregated labels of one question × scale × competence model, one per item (in the
    study's item order; the ``item`` of each is its index)."""

    question: str
    scale: str
    method: str
    labels: ItemLabels


def competence_records(doc: dict[str, Any], question: str, scale: str, ratings: LongRatings,
                       domain: Sequence[float], names: Sequence[str], s: AnalysisSettings,
                       labels: list[LabelBlock],
                       methods: Sequence[str] = COMPETENCE_METHODS) -> None:
    """Append Dawid–Skene's and MACE's competences and fits of one scale to the document, and
    their aggregated labels (one per item) to ``labels``, one `LabelBlock` per model (a run
    stores them in their own table; the full document's ``item_labels``).  ``methods``: the
    models fitted (both by default; a fanned-out run fits each in a task of its own), each
    independent of the other."""
    for method in methods:
        head = {"question": question, "scale": scale, "method": method}
        try:
            fit: CompetenceResult = (
                dawid_skene(ratings, domain=domain) if method == "dawid_skene"
                else mace(ratings, domain=domain, rng=np.random.default_rng(s.seed)))
        except ValueError as exc:  # an answer off the scale: say so, never fail the run
            doc["competence_models"].append({**head, "params": None, "log_likelihood": None,
                                             "iterations": 0, "converged": False,
                                             "reason": str(exc)})
            continue
        doc["competence_models"].append({
            **head, "params": dict(fit.params), "domain": list(fit.domain),
            "class_prior": [float(p) for p in fit.class_prior],
            "log_likelihood": float(fit.log_likelihood), "iterations": fit.iterations,
            "converged": fit.converged})
        ranks = _ranks([a.competence for a in fit.annotators])
        for a, rank in zip(fit.annotators, ranks, strict=True):
            row = {**head, **a.to_record(), "rank": rank}
            row["annotator"] = names[a.annotator]
            doc["competence"].append(row)
        labels.append(LabelBlock(question, scale, method, fit.labels))

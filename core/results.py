"""Build the results document `concord.results/2` from a study's arrays (no ORM here).

Every analysis (docs/results.md) runs per question of the study, on its raw scale and on each of
its reductions, with the run's `AnalysisSettings`; each record names its ``question`` (null for
the two study-wide ones: active time per annotator, and the *slow* rule, since time is measured
per item, not per question).  The whole settings object, and what each heuristic applied, is
recorded in `settings`; numbers that cannot be computed are null with a `reason`.  The first
question (the *primary* one) also fills the top-level fields a one-question document had
(``simple_items``, ``counts.answers``, the derived settings), so a one-question study's document
is the `concord.results/1` one with ``question`` added to its records (docs/results.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np

from core import results_quality as rq
from core.data import QuestionData, StudyData
from core.settings import LEVELS, RULES, AnalysisSettings
from core.stats._types import BoolArray, LongRatings
from core.stats.alpha import alpha_with_ci
from core.stats.correlations import filtering_correlations
from core.stats.duplicates import duplicate_consistency
from core.stats.gaps import metric_gaps
from core.stats.heuristics import (
    HeuristicResult,
    annotator_styles,
    run_heuristics,
    slow_annotators,
)
from core.stats.noise import noise_model
from core.stats.scales import reduce_values
from core.stats.simple import simple_items_long
from core.stats.trust import TrustResult, Variant, trust_coefficients
from core.stats.weights import error_weights

SCHEMA = "concord.results/2"
Settings = AnalysisSettings | Mapping[str, Any]  # the object, or its dict (a run's stored settings)
Progress = Callable[[int, str], None]
# (question, scale, items): ("rating", "raw", "all"), ("coherence", "raw", "simple"), …
TrustKey = tuple[str, str, str]
# The sections whose records name their question (timing and the slow rule with null).
SECTIONS = ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
            "heuristics", "styles", "correlations", "noise", "timing", "quality",
            "quality_correlations", "correlation_intervals", "metric_comparisons",
            "style_correlations", "competence", "competence_models", "item_labels")
# The sections core.results_quality fills (docs/results.md), empty lists to start with.
QUALITY_SECTIONS = SECTIONS[11:]


@dataclass
class SectionClock:
    """Seconds spent in each section of a build, summed over questions and scales.

    ``with clock("alpha"): ...`` adds the block's wall time to ``seconds["alpha"]``; a run
    records them in its timings (docs/results.md, "Timings").  Sections nest only where the
    inner one is named apart (``competence`` inside a scale's loop, not inside ``alpha``).
    """

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, section: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            self.seconds[section] = self.seconds.get(section, 0.0) + elapsed

    def rounded(self, digits: int = 4) -> dict[str, float]:
        """The seconds per section, rounded (largest first here; stored as a jsonb object, the
        order is not kept: ``AnalysisRun.sections_by_time`` sorts them again)."""
        ordered = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        return {name: round(value, digits) for name, value in ordered}


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


def analysed_data(data: StudyData, settings: AnalysisSettings) -> StudyData:
    """Return the data the analyses see: without the answers of the excluded annotators."""
    return data.without_annotators(settings.excluded_annotators)


def _checked(questions: Sequence[QuestionData]) -> list[QuestionData]:
    """Return the questions as a list, after checking that they share the study's rows."""
    questions = list(questions)
    if not questions:
        raise ValueError("a results document needs at least one question")
    keys = [q.key for q in questions]
    if len(set(keys)) != len(keys):
        raise ValueError(f"question keys must be unique, got {keys}")
    first = questions[0].data
    for q in questions[1:]:
        d = q.data
        if (d.annotators != first.annotators or d.item_ids != first.item_ids
                or not np.array_equal(d.item, first.item)
                or not np.array_equal(d.annotator, first.annotator)
                or not np.array_equal(d.duration_ms, first.duration_ms, equal_nan=True)
                or not np.array_equal(d.dup_item, first.dup_item)
                or not np.array_equal(d.dup_annotator, first.dup_annotator)):
            raise ValueError(f"question {q.key!r} does not share the rows of question "
                             f"{questions[0].key!r} (build them with question_data_from_answers)")
    return questions


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


def _prepared(questions: Sequence[QuestionData], s: AnalysisSettings) -> list[_Question]:
    out = []
    for q in _checked(questions):
        data = analysed_data(q.data, s)
        views, simple, simple_rows = _views_and_simple(data, q.values, q.reductions, s)
        out.append(_Question(q.key, q.prompt, data, q.data, views, simple, simple_rows))
    return out


def _answers(data: StudyData) -> int:
    return int(np.count_nonzero(~np.isnan(data.value)))


def _question_counts(q: _Question) -> dict[str, int]:
    blank = np.isnan(q.data.value)
    cant = q.data.cant_judge
    return {"answers": _answers(q.data), "blank_answers": int(np.count_nonzero(blank)),
            "cant_judge": 0 if cant is None else int(np.count_nonzero(cant & blank)),
            "excluded_answers": _answers(q.everyone) - _answers(q.data)}


def build_results(
    questions: Sequence[QuestionData],
    *,
    settings: Settings,
    study: Mapping[str, Any],
    progress: Progress = lambda pct, msg: None,
    trust_results: Mapping[TrustKey, TrustResult] | None = None,
    checks: Sequence[Mapping[str, Any]] = (),
    clock: SectionClock | None = None,
) -> dict[str, Any]:
    """Run every analysis of every question and return the results document (a JSON-safe dict).

    ``questions``: the study's questions in order, the first being the primary one (see
    `QuestionData`; they share the study's rows).  ``settings``: an `AnalysisSettings` or its
    dict (validated here).  The answers of its ``excluded_annotators`` are left out of every
    analysis; the document counts them.  ``trust_results`` supplies already computed trust
    coefficients per ``(question, scale, items)`` (the merged chunks of a fanned-out run, see
    ``trust_inputs``); any key not given is computed here. ``checks``: one
    ``{"annotator", "answered", "failed", "stopped"}`` per annotator who answered an attention
    check; their accuracy is the ``attention_checks`` section and the *attention* rule of
    ``quality`` flags them (check answers never enter the other sections).  ``clock``
    (optional) receives the seconds spent in each section.

    Example: ``build_results([QuestionData("rating", data, (0, 1, 2))], settings={},
    study={"slug": "s", "title": "S"})["alpha"][0]["question"] == "rating"``.
    """
    s = AnalysisSettings.coerce(settings)
    clock = SectionClock() if clock is None else clock
    with clock("prepare"):
        prepared = _prepared(questions, s)
    primary = prepared[0]
    data, everyone = primary.data, primary.everyone  # the rows every question shares
    names = data.annotators
    question_entries = [
        {"key": q.key, "prompt": q.prompt,
         "scales": [{"name": v.name, "domain": list(v.domain)} for v in q.views],
         "simple_items": [q.data.item_ids[i] for i in np.flatnonzero(q.simple)],
         "counts": _question_counts(q)}
        for q in prepared]
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "study": dict(study),
        "settings": s.to_dict(),
        "annotators": names,
        "questions": question_entries,
        "scales": [{"question": q.key, "name": v.name, "domain": list(v.domain)}
                   for q in prepared for v in q.views],
        "items": data.item_ids,
        "simple_items": question_entries[0]["simple_items"],
        "counts": {
            "annotators": data.n_annotators,
            "items": data.n_items,
            "questions": len(prepared),
            "responses": int(data.item.size),
            "answers": _answers(data),
            "blank_answers": int(np.count_nonzero(np.isnan(data.value))),
            "duplicate_pairs": int(data.dup_item.size),
            "control_items": int(data.control.sum()),
            "excluded_annotators": everyone.n_annotators - data.n_annotators,
            "excluded_answers": _answers(everyone) - _answers(data),
        },
        "alpha": [], "trust": [], "duplicates": [], "metric_gaps": [], "item_gaps": [],
        "error_weights": [], "heuristics": [], "styles": [], "correlations": [], "noise": [],
        "timing": [],
        "attention_checks": _attention_checks(checks),
        **{section: [] for section in QUALITY_SECTIONS},
    }
    with clock("timing"):
        doc["timing"] = _timing(data, names)
    n_steps = sum(len(q.views) for q in prepared) + 2
    step = 0
    for q in prepared:
        for view in q.views:
            label = view.name if len(prepared) == 1 else f"{q.key} {view.name}"
            progress(5 + int(80 * step / n_steps), f"agreement on the {label} scale")
            step += 1
            _scale_sections(doc, q, view, s, names, trust_results or {}, clock)
    progress(5 + int(80 * step / n_steps), "filtering heuristics and correlations")
    with clock("quality"):
        slow = _slow(prepared, s)
        _slow_records(doc, slow, names)
        study_rules = _study_rules(prepared, s, checks)
        rq.quality_records(doc, study_rules, names, None, record_settings=True)
    for n, (q, entry) in enumerate(zip(prepared, question_entries, strict=True)):
        entry.update(_filtering(doc, q, slow, study_rules, s, names, record_settings=n == 0,
                                clock=clock))
    progress(95, "writing the results")
    with clock("write"):
        cleaned: dict[str, Any] = _clean(doc)
    return cleaned


def _attention_checks(checks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per annotator: attention checks answered, failed, the share right, whether stopped."""
    out = []
    for row in checks:
        answered, failed = int(row["answered"]), int(row["failed"])
        out.append({"annotator": str(row["annotator"]), "answered": answered,
                    "failed": failed,
                    "accuracy": (answered - failed) / answered if answered else None,
                    "stopped": bool(row.get("stopped", False))})
    return out


def _scale_sections(doc: dict[str, Any], q: _Question, view: ScaleView, s: AnalysisSettings,
                    names: list[str], trust_results: Mapping[TrustKey, TrustResult],
                    clock: SectionClock) -> None:
    """Append the records of one question's scale: alpha, trust, duplicates, noise, gaps, weights."""
    data = q.data
    tagged = {"question": q.key}
    for items, rows in (("all", None), ("simple", q.simple_rows)):
        given = trust_results.get((q.key, view.name, items))
        with clock("trust"):
            doc["trust"].append(_trust(q.key, data, view, rows, items, s, names, given))
        outliers = [names.index(a) for a in doc["trust"][-1]["outliers"]]
        with clock("alpha"):
            for level in LEVELS:
                doc["alpha"].append(_alpha(q.key, data, view, rows, items, level, [], s, names))
                if outliers:
                    doc["alpha"].append(_alpha(q.key, data, view, rows, items, level, outliers,
                                               s, names))
    with clock("duplicates"):
        doc["duplicates"] += [{**tagged, **r} for r in _duplicates(data, view, names)]
    ratings = _long(data, view.values)
    with clock("competence"):
        rq.competence_records(doc, q.key, view.name, ratings, view.domain, data.item_ids, names,
                              s)
    with clock("noise"):
        noise = noise_model(ratings, scale=view.name, confidence=s.noise_confidence,
                            max_gamma=s.noise_max_gamma)
        doc["noise"].append({**tagged, **noise.to_record()})
    with clock("gaps"):
        _gaps(doc, q, view, ratings)
    if data.features:
        with clock("error_weights"):
            _weights(doc, q, view, ratings, names)


def _gaps(doc: dict[str, Any], q: _Question, view: ScaleView, ratings: LongRatings) -> None:
    data = q.data
    tagged = {"question": q.key}
    if data.metrics:
        gaps = metric_gaps(ratings, metrics=data.metrics, domain=view.domain,
                           scale=view.name, simple=q.simple)
        doc["metric_gaps"] += [{**tagged, **g.to_record()} for g in gaps.metric_gaps]
        for g in gaps.item_gaps:
            record: dict[str, Any] = {**tagged, **g.to_record()}
            record["item"] = data.item_ids[int(record["item"])]
            doc["item_gaps"].append(record)


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


def _alpha(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None, items: str,
           level: str, without: list[int], s: AnalysisSettings, names: list[str]
           ) -> dict[str, Any]:
    keep = np.ones(data.item.size, bool) if rows is None else rows.copy()
    record: dict[str, Any] = {"question": question, "scale": view.name, "items": items,
                              "level": level, "without": [names[a] for a in without]}
    if without:
        left = int(np.unique(data.annotator[keep & ~np.isin(data.annotator, without)]).size)
        if left < 2:
            # Alpha needs two annotators: the outliers are not removed, and the record says why.
            record.update(value=None, n_items=0, ci95=None, reason=(
                f"outliers not removed: without {', '.join(record['without'])} "
                f"{'one annotator would be' if left == 1 else 'no annotator would be'} left, "
                "and alpha needs two"))
            return record
        keep &= ~np.isin(data.annotator, without)
    ratings = _long(data, view.values, keep)
    if level == "ratio" and min(view.domain) < 0:
        record.update(value=None, n_items=0, ci95=None,
                      reason="ratio alpha is undefined for a scale with negative codes")
        return record
    # Every interval resamples with the study's seed, so a rerun reproduces it exactly.
    rng = np.random.default_rng(s.seed)
    result = alpha_with_ci(ratings, level=level, domain=view.domain, rng=rng,
                           n_boot=s.bootstrap_samples, confidence=s.bootstrap_confidence)
    record.update(value=result.value, n_items=result.n_items,
                  ci95=list(result.ci95) if result.ci95 else None)
    if result.value is None:
        record["reason"] = result.reason
    elif result.ci95 is None:
        record["reason"] = "confidence interval undefined: too few resamples with a defined alpha"
    return record


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
    not computed at all (more than ``trust_max_annotators``); ``present`` maps its rows to
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


def _trust_input(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None,
                 items: str, s: AnalysisSettings) -> TrustInput:
    keep = np.ones(data.item.size, bool) if rows is None else rows
    present = np.unique(data.annotator[keep & ~np.isnan(view.values)])
    if data.n_annotators > s.trust_max_annotators:
        return TrustInput(question, view.name, items, s.level, view.domain, present, None)
    dense = np.full((data.n_annotators, data.n_items), np.nan)
    dense[data.annotator[keep], data.item[keep]] = view.values[keep]
    # Annotators without any answer here cannot be scored; they are left out of the subsets.
    return TrustInput(question, view.name, items, s.level, view.domain, present, dense[present])


def trust_inputs(questions: Sequence[QuestionData], *, settings: Settings) -> list[TrustInput]:
    """Return the inputs of every trust computation ``build_results`` makes, in document order.

    A fanned-out run computes some of them in chunks on other workers (``trust_chunk``) and hands
    the merged results back to ``build_results(trust_results=…)``; both sides call this, so they
    agree on the ratings (and their fingerprint) exactly.  ``present`` indexes the annotators
    of ``analysed_data`` (the excluded ones left out).
    """
    s = AnalysisSettings.coerce(settings)
    return [_trust_input(q.key, q.data, view, rows, items, s)
            for q in _prepared(questions, s) for view in q.views
            for items, rows in (("all", None), ("simple", q.simple_rows))]


def _trust(question: str, data: StudyData, view: ScaleView, rows: BoolArray | None, items: str,
           s: AnalysisSettings, names: list[str],
           given: TrustResult | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"question": question, "scale": view.name, "items": items,
                              "level": s.level, "variant": s.trust_variant}
    inp = _trust_input(question, data, view, rows, items, s)
    if inp.ratings is None:
        record.update(method=None, n_subsets=0, coefficients={a: None for a in names},
                      ranks={a: None for a in names}, outliers=[],
                      reason=f"more than {s.trust_max_annotators} annotators "
                             "(setting trust_max_annotators)")
        return record
    present = inp.present
    if given is not None and len(given.coefficients) == inp.k:
        result = given
    else:
        result = trust_coefficients(inp.ratings, level=s.level, domain=view.domain,
                                    variant=cast(Variant, s.trust_variant), max_exact=s.trust_max_exact,
                                    n_samples=s.trust_samples,
                                    rng=np.random.default_rng(s.seed))
    coefficients: dict[str, float | None] = {a: None for a in names}
    for j, value in zip(present, result.coefficients, strict=True):
        coefficients[names[j]] = value
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


def _slow(questions: Sequence[_Question], s: AnalysisSettings) -> HeuristicResult:
    """Run the *slow* rule once for the study: the mean active time per answered item.

    Time is measured per item (one response answers all its questions), so the rule is the
    annotator's, not a question's: an item counts when any of its questions was answered
    (for one question: exactly the items with an answer, as the rule always counted).
    """
    data = questions[0].data
    answered = np.zeros(data.item.size, bool)
    for q in questions:
        answered |= ~np.isnan(q.data.value)
    rows = _long(data, np.where(answered, 1.0, np.nan))
    return slow_annotators(rows, data.duration_ms, **s.heuristics.params("slow"))


def _study_rules(questions: Sequence[_Question], s: AnalysisSettings,
                 checks: Sequence[Mapping[str, Any]]) -> dict[str, HeuristicResult]:
    """Run the study-wide quality rules (too fast, attention, straight-lining) on every
    question's rows and the annotators' attention checks."""
    data = questions[0].data
    answered = np.zeros(data.item.size, bool)
    for q in questions:
        answered |= ~np.isnan(q.data.value)
    positions = np.column_stack([rq.positions_on_scale(q.data.value, q.views[0].domain)
                                 for q in questions])
    return rq.study_rules(data, answered, positions, s, checks)


def _slow_records(doc: dict[str, Any], slow: HeuristicResult, names: list[str]) -> None:
    doc["settings"]["heuristics"]["slow"].update(slow.params)
    for record in slow.records:
        row: dict[str, Any] = {"question": None, **record.to_record()}
        row["annotator"] = names[int(row["annotator"])]
        doc["heuristics"].append(row)


def _filtering(doc: dict[str, Any], q: _Question, slow: HeuristicResult,
               study_rules: Mapping[str, HeuristicResult], s: AnalysisSettings,
               names: list[str], *, record_settings: bool,
               clock: SectionClock) -> dict[str, Any]:
    """Append one question's heuristics, styles and correlations; return its derived settings.

    The top-level ``settings`` record what the primary question's rules applied
    (``record_settings``): the parameters are the same for every question, only the reduced
    scale of *disagreeable* and the styles' extreme values depend on the question's scale,
    and each question's entry of ``questions`` records those.
    """
    recorded = doc["settings"]
    data, views = q.data, q.views
    tagged = {"question": q.key}
    derived: dict[str, Any] = {}
    raw = views[0]
    reduced = next((v for v in views if v.name == "reduced"), raw)
    ratings = _long(data, raw.values)
    has_sentiment = data.sentiment_a is not None and "bleu1" in data.metrics
    params = {rule: s.heuristics.params(rule) for rule in RULES}
    with clock("heuristics"):
        results = run_heuristics(
            ratings,
            reduced=_long(data, reduced.values),
            control=data.control if data.control.any() else None,
            bleu1=data.metrics.get("bleu1") if has_sentiment else None,
            sentiment_a=data.sentiment_a if has_sentiment else None,
            sentiment_b=data.sentiment_b if has_sentiment else None,
            sentiment_source=cast(Literal["imported", "vader"], data.sentiment_source),
            params=params,
        )
        # Every rule's parameters as set, and for each rule that ran what it applied (its ddof, the
        # sentiment source and the threshold chosen for it, the number of qualifying pairs).
        if record_settings:
            for rule, result in results.items():
                recorded["heuristics"][rule].update(result.params)
            recorded["heuristics_reduced_scale"] = reduced.name
        derived["heuristics_reduced_scale"] = reduced.name
        for result in results.values():
            for record in result.records:
                row: dict[str, Any] = {**tagged, **record.to_record()}
                row["annotator"] = names[int(row["annotator"])]
                doc["heuristics"].append(row)
        question_rules = rq.question_rules(data, s)
        rq.quality_records(doc, question_rules, names, q.key, record_settings=record_settings)
    with clock("styles"):
        domain = raw.domain
        styles = None
        if len(domain) >= 4:
            extreme, moderate = (domain[0], domain[-1]), (domain[1], domain[-2])
            styles = annotator_styles(ratings, extreme=extreme, moderate=moderate)
            derived["styles"] = {"extreme": list(extreme), "moderate": list(moderate),
                                 "share_threshold": 0.5}
            if record_settings:
                recorded["styles"] = dict(derived["styles"])
            for style in styles.records:
                row = {**tagged, **style.to_record()}
                row["annotator"] = names[int(row["annotator"])]
                doc["styles"].append(row)
    with clock("correlations"):
        if data.metrics:
            # The study's slow annotators are removed from every question's correlations.
            flagged = {"slow": slow, **results}
            correlations = filtering_correlations(ratings, metrics=data.metrics, flagged=flagged)
            if record_settings:
                recorded["correlations"] = correlations.params
            for correlation in correlations.records:
                row = {**tagged, **correlation.to_record()}
                row["removed"] = [names[int(a)] for a in row["removed"]]
                doc["correlations"].append(row)
            intervals = rq.Intervals(ratings, data.metrics, s)
            rq.correlation_interval_records(doc, q.key, correlations.records, names, intervals)
            new_rules = {**study_rules, **question_rules}
            params = rq.rule_set_records(doc, q.key, ratings, data.metrics, {**flagged, **new_rules},
                                         list(new_rules), names, intervals)
            if record_settings:
                recorded["quality_correlations"] = params
            if styles is not None:
                rq.style_records(doc, q.key, ratings, data.metrics, styles, flagged,
                                 results["low_variance"], names, intervals)
            rq.comparison_records(doc, q.key, ratings, data.metrics, s)
    return derived


# --------------------------------------------------------------------------- reading a document


def question_keys(document: Mapping[str, Any]) -> list[str]:
    """Return the keys of a document's questions in order (``[]`` for a `concord.results/1` one)."""
    entries = document.get("questions")
    if not isinstance(entries, list):
        return []
    return [e["key"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("key"), str)]


def question_view(document: Mapping[str, Any], question: str | None = None) -> dict[str, Any]:
    """Return the document as it reads for one question (the primary one by default).

    Every section keeps the records of ``question`` and the study-wide ones (``question``
    null: timing, the slow rule); ``scales``, ``simple_items``, the answer counts and the
    derived settings become the question's.  An unknown key reads as the primary question; a
    document without ``questions`` (`concord.results/1`) is returned as it is.  Never raises on a
    malformed document (the charts read any).

    Example: ``question_view(doc, "fluency")["alpha"]`` holds fluency's alpha records only.
    """
    view = dict(document)
    entries = [e for e in (document.get("questions") or []) if isinstance(e, Mapping)] \
        if isinstance(document.get("questions"), list) else []
    entry = next((e for e in entries if e.get("key") == question), entries[0] if entries else None)
    if entry is None:
        return view
    key = entry.get("key")
    for section in SECTIONS:
        records = document.get(section)
        if isinstance(records, list):
            view[section] = [r for r in records if not isinstance(r, Mapping)
                             or r.get("question", key) in (key, None)]
    scales = document.get("scales")
    if isinstance(scales, list):
        view["scales"] = [r for r in scales if isinstance(r, Mapping)
                          and r.get("question", key) == key]
    if "simple_items" in entry:
        view["simple_items"] = entry["simple_items"]
    counts, own = document.get("counts"), entry.get("counts")
    if isinstance(counts, Mapping) and isinstance(own, Mapping):
        view["counts"] = {**counts, **own}
    settings = document.get("settings")
    if isinstance(settings, Mapping):
        settings = dict(settings)
        for name in ("heuristics_reduced_scale", "styles"):
            if name in entry:
                settings[name] = entry[name]
            else:
                settings.pop(name, None)
        view["settings"] = settings
    view["question"] = key
    return view

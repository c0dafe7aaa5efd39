"""Build the results document `concord.results/3` from a study's arrays (no ORM here).

`build_results_split` returns the document a run stores, whose size does not grow with the
number of items, and the run's `ItemRecords` (items, simple items, per-item gaps and labels),
which a run stores in tables of its own; `build_results` returns the two put together, the full
document (docs/results.md, "Items stored apart").

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
from core.stats._types import BoolArray, FloatArray, IntArray, LongRatings
from core.stats.alpha import alpha_levels_with_ci
from core.stats.correlations import filtering_correlations
from core.stats.duplicates import duplicate_consistency
from core.stats.gaps import AGGREGATES, ItemGapBlock, metric_gaps
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

SCHEMA = "concord.results/3"
Settings = AnalysisSettings | Mapping[str, Any]  # the object, or its dict (a run's stored settings)
Progress = Callable[[int, str], None]
# (question, scale, items): ("rating", "raw", "all"), ("coherence", "raw", "simple"), …
TrustKey = tuple[str, str, str]
# The sections whose records name their question (timing and the slow rule with null).
SECTIONS = ("alpha", "trust", "duplicates", "metric_gaps", "item_gaps", "error_weights",
            "heuristics", "styles", "correlations", "noise", "timing", "quality",
            "quality_correlations", "correlation_intervals", "metric_comparisons",
            "style_correlations", "competence", "competence_models", "item_labels",
            "largest_gaps", "item_gap_sample")
# The sections core.results_quality fills (docs/results.md), empty lists to start with.
QUALITY_SECTIONS = ("quality", "quality_correlations", "correlation_intervals",
                    "metric_comparisons", "style_correlations", "competence",
                    "competence_models", "item_labels")
# The parts of a full document that grow with the number of items: a run stores them apart
# (`ItemRecords`, the analysis app's item tables), the stored document keeps their summaries.
ITEM_SECTIONS = ("items", "simple_items", "item_gaps", "item_labels")
# Per question × scale × aggregate × metric, the document keeps the LARGEST_GAPS largest
# |gap| (ties: by item id), and per question × scale × metric of the scatter's aggregate (the
# mean) an evenly spaced sample of at most GAP_SAMPLE items: a scatter of 210 px a side shows
# no more, and the dashboard reads the whole document on every view.
LARGEST_GAPS = 10
GAP_SAMPLE = 1000
SAMPLED_AGGREGATE = AGGREGATES[0]


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


@dataclass(eq=False)
class ItemRecords:
    """The records of a run that grow with its number of items, kept out of its document.

    Columns, not dicts: ``item_ids`` in the study's order, ``simple`` one mask over them per
    question key, ``gaps`` the per-item gaps (`ItemGapBlock`, with their question), ``labels``
    the aggregated labels (`LabelBlock`).  A run writes them to its own tables
    (``analysis.models``), normalised: each item once with its metric values (`item_rows`), each
    item's human aggregate once per question × scale × aggregate (`human_rows`), the gap being
    their difference; `merged_into` gives the full document, whose ``items``,
    ``simple_items``, ``item_gaps`` and ``item_labels`` are these records (docs/results.md).
    """

    item_ids: list[str]
    questions: list[str] = field(default_factory=list)
    simple: dict[str, BoolArray] = field(default_factory=dict)
    gaps: list[tuple[str, ItemGapBlock]] = field(default_factory=list)
    labels: list[rq.LabelBlock] = field(default_factory=list)

    @property
    def gap_metrics(self) -> list[str]:
        """The metrics with per-item gaps, in the order of their first block (the order of
        ``item_gap_metrics`` and of each item's ``metrics``)."""
        return list(dict.fromkeys(b.metric for _, b in self.gaps))

    def metric_values(self) -> FloatArray:
        """Each item's value of each of `gap_metrics`, ``(items, metrics)``; nan where it has
        no gap (no value, or no human answer anywhere)."""
        metrics = {m: n for n, m in enumerate(self.gap_metrics)}
        out = np.full((len(self.item_ids), len(metrics)), np.nan)
        for _, b in self.gaps:
            out[b.item, metrics[b.metric]] = b.metric_value
        return out

    def human_blocks(self) -> list[tuple[str, str, str, IntArray, FloatArray]]:
        """(question, scale, aggregate, items, human) per question × scale × aggregate, in
        block order: the items with a gap for any metric, ascending, and their human
        aggregate (rescaled to [0, 1])."""
        grouped: dict[tuple[str, str, str], list[ItemGapBlock]] = {}
        for question, b in self.gaps:
            grouped.setdefault((question, b.scale, b.aggregate), []).append(b)
        out = []
        for (question, scale, aggregate), blocks in grouped.items():
            items, first = np.unique(np.concatenate([b.item for b in blocks]), return_index=True)
            human = np.concatenate([b.human for b in blocks])[first]
            out.append((question, scale, aggregate, items, human))
        return out

    def item_rows(self) -> Iterator[tuple[int, str, list[str], list[float | None]]]:
        """(position, item, keys of the questions on which it is simple, its value of each of
        `gap_metrics` or None), in item order."""
        masks = [(q, self.simple[q]) for q in self.questions if q in self.simple]
        values = self.metric_values()
        for n, item in enumerate(self.item_ids):
            yield (n, item, [q for q, mask in masks if mask[n]],
                   [None if np.isnan(v) else float(v) for v in values[n]])

    def human_rows(self) -> Iterator[tuple[str, str, str, int, float]]:
        """(question, scale, aggregate, position, human) of `human_blocks`, in order (their
        ``seq``)."""
        for question, scale, aggregate, items, human in self.human_blocks():
            for position, value in zip(items.tolist(), human.tolist(), strict=True):
                yield question, scale, aggregate, position, value

    def simple_items(self, question: str) -> list[str]:
        mask = self.simple.get(question)
        return [] if mask is None else [self.item_ids[i] for i in np.flatnonzero(mask)]

    def gap_rows(self) -> Iterator[tuple[str, str, str, str, str, float, float, float]]:
        """(question, scale, aggregate, metric, item, human, metric_value, gap), in document
        order: question × scale × aggregate blocks, items ascending, metrics in `gap_metrics`
        order; what the run's tables give back (`expand_gaps`)."""
        ids, metrics, values = self.item_ids, self.gap_metrics, self.metric_values()
        for question, scale, aggregate, items, human in self.human_blocks():
            for position, h in zip(items.tolist(), human.tolist(), strict=True):
                row = values[position].tolist()
                for metric, value, gap in expand_gaps(metrics, row, h):
                    yield question, scale, aggregate, metric, ids[position], h, value, gap

    def label_rows(self) -> Iterator[tuple[str, str, str, str, float | None, float | None,
                                           float | None, int, str | None]]:
        """(question, scale, method, item, label, probability, entropy, n, reason), in document
        order."""
        ids = self.item_ids
        for b in self.labels:
            for i in range(len(b.labels)):
                r = b.labels.item(i)
                yield (b.question, b.scale, b.method, ids[r.item], _float(r.label),
                       _float(r.probability), _float(r.entropy), int(r.n), r.reason)

    @property
    def n_gaps(self) -> int:
        return sum(len(b) for _, b in self.gaps)

    @property
    def n_labels(self) -> int:
        return sum(len(b.labels) for b in self.labels)

    def gap_records(self) -> Iterator[dict[str, Any]]:
        """The ``item_gaps`` records of the full document."""
        for question, scale, aggregate, metric, item, human, value, gap in self.gap_rows():
            yield {"question": question, "item": item, "scale": scale, "aggregate": aggregate,
                   "metric": metric, "human": human, "metric_value": value, "gap": gap}

    def label_records(self) -> Iterator[dict[str, Any]]:
        """The ``item_labels`` records of the full document."""
        for question, scale, method, item, label, probability, entropy, n, reason in \
                self.label_rows():
            record: dict[str, Any] = {"question": question, "scale": scale, "method": method,
                                      "item": item, "label": label,
                                      "probability": probability, "entropy": entropy, "n": n}
            if reason is not None:
                record["reason"] = reason
            yield record

    def merged_into(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """Return the full document: ``document`` with the item sections put back."""
        full = dict(document)
        entries = []
        for entry in document.get("questions") or []:
            entry = dict(entry)
            entry["simple_items"] = self.simple_items(entry["key"])
            entries.append(entry)
        full["questions"] = entries
        full["items"] = list(self.item_ids)
        full["simple_items"] = entries[0]["simple_items"] if entries else []
        full["item_gaps"] = list(self.gap_records())
        full["item_labels"] = list(self.label_records())
        return full


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def expand_gaps(metrics: Sequence[str], values: Sequence[float | None], human: float
                ) -> Iterator[tuple[str, float, float]]:
    """Yield (metric, metric_value, gap) of one item's human aggregate against its metric
    values (None or nan: no gap); gap = metric_value − human, the same double numpy gives."""
    for metric, value in zip(metrics, values, strict=True):
        if value is not None and value == value:  # not nan
            yield metric, value, value - human


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
    """Return the full results document: `build_results_split`'s document with its item records
    put back (``items``, ``simple_items``, ``item_gaps``, ``item_labels``; docs/results.md).

    For tests, files and small studies: a run stores the two parts apart, and a study of a
    million answers has a full document too large for one value.
    """
    document, records = build_results_split(
        questions, settings=settings, study=study, progress=progress,
        trust_results=trust_results, checks=checks, clock=clock)
    return records.merged_into(document)


def build_results_split(
    questions: Sequence[QuestionData],
    *,
    settings: Settings,
    study: Mapping[str, Any],
    progress: Progress = lambda pct, msg: None,
    trust_results: Mapping[TrustKey, TrustResult] | None = None,
    checks: Sequence[Mapping[str, Any]] = (),
    clock: SectionClock | None = None,
) -> tuple[dict[str, Any], ItemRecords]:
    """Run every analysis of every question; return the results document (a JSON-safe dict
    whose size does not grow with the number of items) and the run's `ItemRecords`.

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
    records = ItemRecords(list(data.item_ids), [q.key for q in prepared],
                          {q.key: q.simple for q in prepared})
    question_entries: list[dict[str, Any]] = [
        {"key": q.key, "prompt": q.prompt,
         "scales": [{"name": v.name, "domain": list(v.domain)} for v in q.views],
         "counts": {**_question_counts(q), "simple_items": int(np.count_nonzero(q.simple))}}
        for q in prepared]
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "study": dict(study),
        "settings": s.to_dict(),
        "annotators": names,
        "questions": question_entries,
        "scales": [{"question": q.key, "name": v.name, "domain": list(v.domain)}
                   for q in prepared for v in q.views],
        "counts": {
            "annotators": data.n_annotators,
            "items": data.n_items,
            "questions": len(prepared),
            "responses": int(data.item.size),
            "answers": _answers(data),
            "simple_items": int(np.count_nonzero(primary.simple)),
            "blank_answers": int(np.count_nonzero(np.isnan(data.value))),
            "duplicate_pairs": int(data.dup_item.size),
            # Responses to a third or later showing of an item (imported files only): stored
            # and exported, in no statistic; counted so that leaving them out is said.
            "later_presentations": int(data.later_annotator.size),
            "control_items": int(data.control.sum()),
            "excluded_annotators": everyone.n_annotators - data.n_annotators,
            "excluded_answers": _answers(everyone) - _answers(data),
        },
        "alpha": [], "trust": [], "duplicates": [], "metric_gaps": [], "largest_gaps": [],
        "item_gap_sample": [], "error_weights": [], "heuristics": [], "styles": [],
        "correlations": [], "noise": [], "timing": [],
        "attention_checks": _attention_checks(checks),
        **{section: [] for section in QUALITY_SECTIONS if section not in ITEM_SECTIONS},
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
            _scale_sections(doc, q, view, s, names, trust_results or {}, clock, records)
    progress(5 + int(80 * step / n_steps), "filtering heuristics and correlations")
    with clock("quality"):
        slow = _slow(prepared, s)
        _slow_records(doc, slow, names)
        study_rules = _study_rules(prepared, s, checks)
        rq.quality_records(doc, study_rules, names, None, record_settings=True)
    for n, (q, entry) in enumerate(zip(prepared, question_entries, strict=True)):
        entry.update(_filtering(doc, q, slow, study_rules, s, names, record_settings=n == 0,
                                clock=clock))
    # What the item records hold (stored apart): their counts, and the metrics of each item's
    # values (the order of ``metrics`` in the run's items, docs/results.md).
    doc["item_gap_metrics"] = records.gap_metrics
    doc["counts"]["item_gaps"] = records.n_gaps
    doc["counts"]["item_labels"] = records.n_labels
    progress(95, "writing the results")
    with clock("write"):
        cleaned: dict[str, Any] = _clean(doc)
    return cleaned, records


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
                    clock: SectionClock, records: ItemRecords) -> None:
    """Append the records of one question's scale: alpha, trust, duplicates, noise, gaps, weights."""
    data = q.data
    tagged = {"question": q.key}
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
        doc["duplicates"] += [{**tagged, **r} for r in _duplicates(data, view, names)]
    ratings = _long(data, view.values)
    with clock("competence"):
        rq.competence_records(doc, q.key, view.name, ratings, view.domain, names, s,
                              labels=records.labels)
    with clock("noise"):
        noise = noise_model(ratings, scale=view.name, confidence=s.noise_confidence,
                            max_gamma=s.noise_max_gamma)
        doc["noise"].append({**tagged, **noise.to_record()})
    with clock("gaps"):
        _gaps(doc, q, view, ratings, records)
    if data.features:
        with clock("error_weights"):
            _weights(doc, q, view, ratings, names)


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
            new_rules = {**study_rules, **question_rules}
            rule_sets = rq.rule_sets(ratings, data.metrics, {**flagged, **new_rules},
                                     list(new_rules))
            style_rows = [] if styles is None else rq.style_rows(
                ratings, data.metrics, styles, flagged, results["low_variance"])
            # Every interval of the question in one batch: those of one human side share
            # their resamples (docs/statistics/correlation-intervals.md).
            intervals = rq.Intervals(ratings, data.metrics, s)
            intervals.prefetch(
                [(r.removed, r.metric, not r.rules) for r in correlations.records]
                + [(r.removed, r.metric, False) for r in rule_sets.records if r.rules]
                + [(rq.style_removed(r, len(names)), r.metric, True) for r in style_rows
                   if r.annotators])
            rq.correlation_interval_records(doc, q.key, correlations.records, names, intervals)
            params = rq.rule_set_records(doc, q.key, rule_sets, data.metrics, list(new_rules),
                                         names, intervals)
            if record_settings:
                recorded["quality_correlations"] = params
            rq.style_records(doc, q.key, style_rows, names, intervals)
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

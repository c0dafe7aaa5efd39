"""Run every analysis of a study's questions into the results document `concord.results/3`
(`build_results_split`, `build_results`) and the inputs of its trust computations
(`trust_inputs`); the package's docstring says what the document holds.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

import numpy as np

from core import results_quality as rq
from core.data import QuestionData, StudyData
from core.judges import JudgeAnswers, JudgeInfo
from core.results.comparisons import COMPARISON_SECTIONS, Judgments, comparison_records
from core.results.judges import judges_records
from core.results.records import ITEM_SECTIONS, Group, ItemRecords, Part, SectionClock
from core.results.scales import (
    TrustInput,
    TrustKey,
    _long,
    _Question,
    _scale_sections,
    _timing,
    _trust_input,
    _views_and_simple,
)
from core.results.systems import SYSTEM_SECTIONS, systems_records
from core.results.with_judges import judgments_with_judges, questions_with_judges
from core.settings import RULES, AnalysisSettings
from core.stats._subsets import single_threaded_blas
from core.stats.correlations import filtering_correlations
from core.stats.heuristics import (
    HeuristicResult,
    annotator_styles,
    run_heuristics,
    slow_annotators,
)
from core.stats.trust import TrustResult

SCHEMA = "concord.results/3"
Settings = AnalysisSettings | Mapping[str, Any]  # the object, or its dict (a run's stored settings)
Progress = Callable[[int, str], None]
# The sections core.results_quality fills (docs/results.md), empty lists to start with.
QUALITY_SECTIONS = ("quality", "quality_correlations", "correlation_intervals",
                    "metric_comparisons", "style_correlations", "competence",
                    "competence_models", "item_labels")
# The judges analysis' sections (docs/results.md, "Judges"), empty lists to start with.
JUDGE_SECTIONS = ("judges", "judges_info")


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


def _prepared(questions: Sequence[QuestionData], s: AnalysisSettings) -> list[_Question]:
    out = []
    for q in _checked(questions):
        data = analysed_data(q.data, s)
        views, simple, simple_rows = _views_and_simple(data, q.values, q.reductions, s)
        out.append(_Question(q.key, q.prompt, data, q.data, views, simple, simple_rows))
    return out


def prepare_questions(questions: Sequence[QuestionData], *, settings: Settings) -> list[_Question]:
    """Return the questions as their analyses see them (the excluded annotators left out, the
    scales, the simple items): what `document_head` and `group_part` take."""
    return _prepared(questions, AnalysisSettings.coerce(settings))


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
    comparisons: Sequence[Judgments] = (),
    judges: Sequence[JudgeInfo] = (),
    judge_answers: Sequence[JudgeAnswers] = (),
) -> dict[str, Any]:
    """Return the full results document: `build_results_split`'s document with its item records
    put back (``items``, ``simple_items``, ``item_gaps``, ``item_labels``; docs/results.md).

    For tests, files and small studies: a run stores the two parts apart, and a study of a
    million answers has a full document too large for one value.
    """
    document, records = build_results_split(
        questions, settings=settings, study=study, progress=progress,
        trust_results=trust_results, checks=checks, clock=clock, comparisons=comparisons,
        judges=judges, judge_answers=judge_answers)
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
    comparisons: Sequence[Judgments] = (),
    judges: Sequence[JudgeInfo] = (),
    judge_answers: Sequence[JudgeAnswers] = (),
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
    (optional) receives the seconds spent in each section.  ``comparisons``: the judgments of
    the study's comparative questions (`Judgments`, one per question), analysed into the
    ``comparison_*`` sections (docs/results.md, "Comparisons"); ``questions`` may then be empty
    (a study of comparative questions only: every scale section is an empty list).
    ``judges`` and ``judge_answers``: the study's LLM judges and their runs' answers
    (`core.judges`), analysed against the people's analysed answers into the ``judges``
    section (``judges_info`` lists the judges); they enter no other section unless the
    settings ask for the view with judges (``judges_as_annotators``: each judge's first run
    becomes an annotator "judge: <name>" of every section, listed in ``judge_annotators``).

    Example: ``build_results([QuestionData("rating", data, (0, 1, 2))], settings={},
    study={"slug": "s", "title": "S"})["alpha"][0]["question"] == "rating"``.
    """
    s = AnalysisSettings.coerce(settings)
    clock = SectionClock() if clock is None else clock
    # One BLAS thread: the analyses' products are vectors and small matrices, which OpenBLAS
    # threads slow down (its idle threads spin; on a busy machine one dot product of 20 000
    # items took 9 ms instead of 4 µs, and the correlations section 5× its time), and a dot
    # product summed by one thread is the same on every machine.
    with single_threaded_blas():
        document, records = _build(questions, s, study, progress, trust_results, checks, clock,
                                   comparisons, _Judges(judges, judge_answers))
    return document, records


class _Judges:
    """The study's judges and their answers, and the people's data the judges section reads."""

    def __init__(self, judges: Sequence[JudgeInfo], answers: Sequence[JudgeAnswers]) -> None:
        self.judges, self.answers = list(judges), list(answers)
        self.people: list[QuestionData] = []
        self.people_judged: list[Judgments] = []

    def view(self, questions: Sequence[QuestionData], comparisons: Sequence[Judgments],
             s: AnalysisSettings) -> tuple[list[QuestionData], list[Judgments], list[str]]:
        """Keep the people's data for the judges section; return the data every other section
        reads: the people's, or with the judges as annotators when the settings say so."""
        if self.judges or self.answers:
            self.people = [replace(q, data=analysed_data(q.data, s)) for q in questions]
            self.people_judged = [j.without_annotators(s.excluded_annotators)
                                  for j in comparisons]
        return with_judges(questions, comparisons, self.judges, self.answers, s)

    def records(self, doc: dict[str, Any], s: AnalysisSettings, clock: SectionClock,
                progress: Progress) -> None:
        if not (self.judges or self.answers):
            return  # no judge: the sections stay empty, as in a run before judges existed
        progress(93, "the judges")
        with clock("judges"):
            judges_records(doc, self.people, self.people_judged, self.judges, self.answers, s)


def with_judges(questions: Sequence[QuestionData], comparisons: Sequence[Judgments],
                judges: Sequence[JudgeInfo], answers: Sequence[JudgeAnswers],
                s: AnalysisSettings) -> tuple[list[QuestionData], list[Judgments], list[str]]:
    """Return the questions and judgments the analyses read and the judges added to them as
    annotators: the people's alone unless ``s.judges_as_annotators`` (`core.results.with_judges`)."""
    if not s.judges_as_annotators or not answers:
        return list(questions), list(comparisons), []
    questions, scale_judges = questions_with_judges(questions, judges, answers)
    comparisons, choice_judges = judgments_with_judges(comparisons, judges, answers)
    return questions, comparisons, list(dict.fromkeys(scale_judges + choice_judges))


def _build(questions: Sequence[QuestionData], s: AnalysisSettings, study: Mapping[str, Any],
           progress: Progress, trust_results: Mapping[TrustKey, TrustResult] | None,
           checks: Sequence[Mapping[str, Any]], clock: SectionClock,
           comparisons: Sequence[Judgments], judges: _Judges,
           ) -> tuple[dict[str, Any], ItemRecords]:
    with clock("prepare"):
        questions, comparisons, judge_names = judges.view(questions, comparisons, s)
    judged = [j.without_annotators(s.excluded_annotators) for j in comparisons]
    if not questions and comparisons:
        document = _comparisons_only(judged, s, study, clock,
                                     excluded=_judged_by(comparisons) - _judged_by(judged))
        document["judge_annotators"] = judge_names
        judges.records(document, s, clock, progress)
        progress(95, "writing the results")
        with clock("write"):
            return _clean(document), ItemRecords([], [], {})
    with clock("prepare"):
        prepared = _prepared(questions, s)
    head, records = document_head(prepared, s, study, checks, judge_names)
    # The document is its groups' parts put together (`assemble`), in the order of
    # `section_groups`: the same computation a fanned-out run spreads over workers.
    by_key = {q.key: q for q in prepared}
    with clock("quality"):
        shared = study_quality(prepared[0], study_rows(prepared), s, checks)
    groups = section_groups(questions, comparisons=bool(judged))
    n_steps = sum(len(q.views) for q in prepared) + 2
    step = 0
    parts = []
    for group in groups:
        q = by_key[group.question] if group.question is not None else prepared[0]
        if group.family == "agreement":
            label = group.scale if len(prepared) == 1 else f"{q.key} {group.scale}"
            progress(5 + int(80 * step / n_steps), f"agreement on the {label} scale")
            step += 1
        elif group.family == "filtering" and q is prepared[0]:
            progress(5 + int(80 * step / n_steps), "filtering heuristics and correlations")
        elif group.family == "comparisons":
            progress(90, "comparative questions")
        parts.append(group_part(group, q, s, head["settings"], trust_results=trust_results or {},
                                shared=shared, checks=checks, primary=q is prepared[0],
                                clock=clock, judged=judged,
                                mean_ratings=(mean_ratings(prepared)
                                              if group.family == "comparisons" else None)))
    with clock("write"):
        document, records = assemble(head, parts, records)
    judges.records(document, s, clock, progress)  # JSON-safe as it is built
    progress(95, "writing the results")
    return document, records


# ------------------------------------------------------------------ the build in section groups


def document_head(prepared: Sequence[_Question], s: AnalysisSettings, study: Mapping[str, Any],
                  checks: Sequence[Mapping[str, Any]], judge_names: Sequence[str] = ()
                  ) -> tuple[dict[str, Any], ItemRecords]:
    """Return the document before any group's records (every section an empty list, the
    counts, the questions' entries, the attention checks, the judges counted as annotators in
    the view with judges) and the run's `ItemRecords` without gaps or labels (its items and
    simple items)."""
    primary = prepared[0]
    data, everyone = primary.data, primary.everyone  # the rows every question shares
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
        "annotators": data.annotators,
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
        **{section: [] for section in RECORD_SECTIONS},
        "attention_checks": _attention_checks(checks),
        **{section: [] for section in JUDGE_SECTIONS},
        "judge_annotators": list(judge_names),
    }
    return doc, records


# The sections the groups append records to (every one an empty list in `document_head`).
RECORD_SECTIONS = (
    "alpha", "trust", "duplicates", "metric_gaps", "largest_gaps", "item_gap_sample",
    "error_weights", "heuristics", "styles", "correlations", "noise", "timing",
    *SYSTEM_SECTIONS, *COMPARISON_SECTIONS, "comparison_questions",
    *(section for section in QUALITY_SECTIONS if section not in ITEM_SECTIONS))


def section_groups(questions: Sequence[QuestionData], *, comparisons: bool = False
                   ) -> list[Group]:
    """Return the section groups of a study's build, in the order their records enter the
    document: the study's, each question × scale's families, each question's filtering, the
    comparisons (when the study has comparative judgments)."""
    groups = [Group("study")]
    for q in questions:
        for scale in ("raw", *q.reductions):
            groups.append(Group("agreement", q.key, scale))
            groups += [Group("competence", q.key, scale, m) for m in rq.COMPETENCE_METHODS]
            groups += [Group("spread", q.key, scale), Group("systems", q.key, scale)]
    groups += [Group("filtering", q.key) for q in questions]
    if comparisons:
        groups.append(Group("comparisons"))
    return groups


@dataclass(frozen=True)
class StudyRows:
    """What the study-wide quality rules read beyond one question's rows: ``answered``, the
    rows where any question was answered, and ``positions`` ``(rows, questions)``, each answer's
    position on its question's raw scale (nan = blank)."""

    answered: np.ndarray
    positions: np.ndarray


def study_rows(prepared: Sequence[_Question]) -> StudyRows:
    """Return the `StudyRows` of the analysed questions (they share their rows)."""
    data = prepared[0].data
    answered = np.zeros(data.item.size, bool)
    for q in prepared:
        answered |= ~np.isnan(q.data.value)
    positions = np.column_stack([rq.positions_on_scale(q.data.value, q.views[0].domain)
                                 for q in prepared])
    return StudyRows(answered, positions)


StudyQuality = tuple[HeuristicResult, dict[str, HeuristicResult]]


def study_quality(q: _Question, rows: StudyRows, s: AnalysisSettings,
                  checks: Sequence[Mapping[str, Any]]) -> StudyQuality:
    """Run the study-wide rules: *slow* (the mean active time per answered item: time is
    measured per item, so the rule is the annotator's, not a question's) and the rules of
    `core.results_quality.study_rules` (too fast, attention, straight-lining), on the rows
    every question shares (``q``'s) and ``rows``."""
    data = q.data
    slow = slow_annotators(_long(data, np.where(rows.answered, 1.0, np.nan)), data.duration_ms,
                           **s.heuristics.params("slow"))
    return slow, rq.study_rules(data, rows.answered, rows.positions, s, checks)


def group_part(group: Group, q: _Question, s: AnalysisSettings, settings: Mapping[str, Any], *,
               trust_results: Mapping[TrustKey, TrustResult] | None = None,
               shared: StudyQuality | None = None, rows: StudyRows | None = None,
               checks: Sequence[Mapping[str, Any]] = (), primary: bool = False,
               clock: SectionClock | None = None, judged: Sequence[Judgments] = (),
               mean_ratings: Mapping[str, Mapping[str, float]] | None = None) -> Part:
    """Compute one section group on its own and return its `Part`.

    ``q``: the group's question as the analyses see it (for ``study`` and ``comparisons``,
    any question: the rows are shared); ``settings``: the document's settings before any
    group (`document_head`), which the part's ``settings`` change; ``shared``: the study-wide
    rules already run (else run here from ``rows`` and ``checks``: the ``study`` group and each
    ``filtering`` need them); ``primary``: ``q`` is the study's first question (its filtering
    records the derived settings); ``judged`` and ``mean_ratings``: the ``comparisons``.
    """
    clock = SectionClock() if clock is None else clock
    before = dict(clock.seconds)
    doc: dict[str, Any] = {"settings": copy.deepcopy(dict(settings)),
                           **{section: [] for section in RECORD_SECTIONS}}
    records = ItemRecords([], [], {})
    entry: dict[str, Any] = {}
    names = q.data.annotators
    family = group.family
    with single_threaded_blas():
        if family in ("study", "filtering") and shared is None:
            if rows is None:
                raise ValueError(f"the {family} group needs the study's rows or its rules")
            with clock("quality"):
                shared = study_quality(q, rows, s, checks)
        if family == "study":
            assert shared is not None
            with clock("timing"):
                doc["timing"] = _timing(q.data, names)
            with clock("quality"):
                _slow_records(doc, shared[0], names)
                rq.quality_records(doc, shared[1], names, None, record_settings=True)
        elif family in ("agreement", "competence", "spread"):
            view = next(v for v in q.views if v.name == group.scale)
            methods = (group.method,) if group.method else rq.COMPETENCE_METHODS
            _scale_sections(doc, q, view, s, names, trust_results or {}, clock, records,
                            families=(family,), methods=methods)
        elif family == "systems":
            view = next(v for v in q.views if v.name == group.scale)
            with clock("systems"):
                systems_records(doc, q.key, view.name, q.data, view.values, s)
        elif family == "filtering":
            assert shared is not None
            entry = _filtering(doc, q, shared[0], shared[1], s, names, record_settings=primary,
                               clock=clock)
        elif family == "comparisons":
            with clock("comparisons"):
                comparison_records(doc, judged, s, mean_ratings)
        else:
            raise ValueError(f"no section group {family!r}")
    seconds = {k: v - before.get(k, 0.0) for k, v in clock.seconds.items()
               if v != before.get(k, 0.0)}
    return Part(group, {k: v for k, v in doc.items() if k != "settings" and v},
                _changes(settings, doc["settings"]), entry, records.gaps, records.labels,
                seconds)


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """What ``after`` set that ``before`` had not: nested dicts compared key by key."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(old, dict):
            inner = _changes(old, value)
            if inner:
                out[key] = inner
        elif old is _MISSING or old != value or type(old) is not type(value):
            out[key] = copy.deepcopy(value)
    return out


_MISSING = object()


def _apply(target: dict[str, Any], changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _apply(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def assemble(head: Mapping[str, Any], parts: Sequence[Part], records: ItemRecords
             ) -> tuple[dict[str, Any], ItemRecords]:
    """Put a build's parts together, in `section_groups` order: the document (JSON-safe) and
    the run's item records, the same as building them in one process (`build_results_split`).

    ``head`` and ``records``: `document_head`'s (``records`` receives the parts' gaps and
    labels).
    """
    doc = copy.deepcopy(dict(head))
    entries = {entry["key"]: entry for entry in doc["questions"]}
    for part in parts:
        for section, rows in part.sections.items():
            doc[section] += rows
        _apply(doc["settings"], part.settings)
        if part.entry:
            entries[str(part.group.question)].update(part.entry)
        records.gaps += part.gaps
        records.labels += part.labels
    # What the item records hold (stored apart): their counts, and the metrics of each item's
    # values (the order of ``metrics`` in the run's items, docs/results.md).
    doc["item_gap_metrics"] = records.gap_metrics
    doc["counts"]["item_gaps"] = records.n_gaps
    doc["counts"]["item_labels"] = records.n_labels
    cleaned: dict[str, Any] = _clean(doc)
    return cleaned, records


def mean_ratings(prepared: Sequence[_Question]) -> dict[str, dict[str, float]]:
    """Per scale question, the mean raw answer of each answered item (by its id), over the
    analysed answers: what the comparisons' correlations read for the outputs' ratings."""
    out: dict[str, dict[str, float]] = {}
    for q in prepared:
        data = q.data
        ok = ~np.isnan(data.value)
        total = np.bincount(data.item[ok], data.value[ok], minlength=data.n_items)
        n = np.bincount(data.item[ok], minlength=data.n_items)
        out[q.key] = {data.item_ids[i]: float(total[i] / n[i]) for i in np.flatnonzero(n)}
    return out


def _judged_by(judgments: Sequence[Judgments]) -> set[str]:
    return {j.annotators[a] for j in judgments for a in np.unique(j.annotator)}


def _comparisons_only(judged: Sequence[Judgments], s: AnalysisSettings,
                      study: Mapping[str, Any], clock: SectionClock, *,
                      excluded: set[str]) -> dict[str, Any]:
    """The document of a study whose questions are all comparative: every scale section an
    empty list, its counts 0 but the annotators who judged and those left out."""
    names = list(dict.fromkeys(name for j in judged for a, name in enumerate(j.annotators)
                               if np.any(j.annotator == a)))
    doc: dict[str, Any] = {
        "schema": SCHEMA, "study": dict(study), "settings": s.to_dict(),
        "annotators": names, "questions": [], "scales": [],
        "counts": {"annotators": len(names), "items": 0, "questions": 0, "responses": 0,
                   "answers": 0, "simple_items": 0, "blank_answers": 0, "duplicate_pairs": 0,
                   "later_presentations": 0, "control_items": 0,
                   "excluded_annotators": len(excluded),
                   "excluded_answers": 0, "item_gaps": 0, "item_labels": 0},
        "alpha": [], "trust": [], "duplicates": [], "metric_gaps": [], "largest_gaps": [],
        "item_gap_sample": [], "error_weights": [], "heuristics": [], "styles": [],
        "correlations": [], "noise": [], "timing": [], "item_gap_metrics": [],
        **{section: [] for section in SYSTEM_SECTIONS},
        **{section: [] for section in (*COMPARISON_SECTIONS, "comparison_questions")},
        "attention_checks": [],
        **{section: [] for section in QUALITY_SECTIONS if section not in ITEM_SECTIONS},
        **{section: [] for section in JUDGE_SECTIONS}, "judge_annotators": [],
    }
    with clock("comparisons"):
        comparison_records(doc, judged, s)
    return doc


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



def trust_inputs(questions: Sequence[QuestionData], *, settings: Settings,
                 judges: Sequence[JudgeInfo] = (),
                 judge_answers: Sequence[JudgeAnswers] = ()) -> list[TrustInput]:
    """Return the inputs of every trust computation ``build_results`` makes, in document order.

    A fanned-out run computes some of them in chunks on other workers (``trust_chunk``) and hands
    the merged results back to ``build_results(trust_results=…)``; both sides call this, so they
    agree on the ratings (and their fingerprint) exactly (``judges``, ``judge_answers``: as
    ``build_results`` takes them, for the view with judges).  ``present`` indexes the annotators
    of ``analysed_data`` (the excluded ones left out).
    """
    s = AnalysisSettings.coerce(settings)
    # The view with judges computes trust with the judges among the annotators (`with_judges`).
    questions, _, _ = with_judges(questions, (), judges, judge_answers, s)
    if not questions:  # comparative questions only: no scale, no trust
        return []
    return [_trust_input(q.key, q.data, view, rows, items, s)
            for q in _prepared(questions, s) for view in q.views
            for items, rows in (("all", None), ("simple", q.simple_rows))]



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

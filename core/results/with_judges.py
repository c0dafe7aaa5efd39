"""The "with judges" view: each judge's first run added to the people's data as one more annotator
(setting ``judges_as_annotators``; docs/results.md, "Judges").

By default a judge's answers enter no statistic about the people: the results builder hands them
to the judges analysis only (`core.results.judges`). When the researcher asks for the view with
judges, `questions_with_judges` and `judgments_with_judges` return the study's arrays with each
judge's first run appended as an annotator named ``"judge: <name>"`` — never a pseudonym, so
neither ``excluded_annotators`` nor any page can take a judge for a person — and every analysis
then reads them as it reads a person's answers (α, trust, heuristics, the aggregates, the
comparisons). The document lists them in ``judge_annotators`` and every page of the run says
"with judges".

A judge has no active time (``duration_ms`` nan), no duplicate pair and no "can't judge"; an
item the judge answered in no question of the study is not one of its rows, and a judge who
answered none of the study's items is not added.

>>> import numpy as np
>>> from core.judges import JudgeAnswers
>>> run = JudgeAnswers(judge="gpt", run="1", question="q", item_ids=("b", "zz"),
...                    value=np.array([3.0, 1.0]))
>>> judge_annotator("gpt"), first_runs([run, JudgeAnswers("gpt", "2", "q", ("b",),
...                                                          np.array([2.0]))]) == [run]
('judge: gpt', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from core.data import QuestionData
from core.judges import JudgeAnswers, JudgeInfo
from core.results.comparisons import Judgments, _levels
from core.results.judges import JUDGE_ANNOTATOR_PREFIX as JUDGE_PREFIX


def judge_annotator(name: str) -> str:
    """Return the annotator's name a judge takes in the view with judges."""
    return f"{JUDGE_PREFIX}{name}"


def first_runs(answers: Sequence[JudgeAnswers],
               judges: Sequence[JudgeInfo] = ()) -> list[JudgeAnswers]:
    """Return the answers of each judge's first run (the first run label met for that judge),
    judges in the order of ``judges`` and then as met."""
    first: dict[str, str] = {}
    for a in answers:
        first.setdefault(a.judge, a.run)
    order = list(dict.fromkeys([j.name for j in judges] + list(first)))
    rank = {name: n for n, name in enumerate(order)}
    kept = [a for a in answers if first.get(a.judge) == a.run]
    return sorted(kept, key=lambda a: rank[a.judge])


def _judge_order(runs: Sequence[JudgeAnswers]) -> list[str]:
    return list(dict.fromkeys(a.judge for a in runs))


def questions_with_judges(questions: Sequence[QuestionData], judges: Sequence[JudgeInfo],
                          answers: Sequence[JudgeAnswers]) -> tuple[list[QuestionData], list[str]]:
    """Return the scale questions with each judge's first run appended as an annotator, and the
    names of the judges added (in order).

    The questions share their rows (one response answers all of an item's questions), so a
    judge's rows are the items it answered in any of them, its value nan in a question it did
    not answer on that item."""
    questions = list(questions)
    if not questions:
        return questions, []
    data = questions[0].data
    position = {item_id: n for n, item_id in enumerate(data.item_ids)}
    keys = {q.key for q in questions}
    runs = [a for a in first_runs(answers, judges) if a.question in keys]
    added: list[str] = []
    rows_item: list[np.ndarray] = []
    rows_value: dict[str, list[np.ndarray]] = {q.key: [] for q in questions}
    for name in _judge_order(runs):
        values: dict[str, dict[int, float]] = {}
        for a in runs:
            if a.judge != name:
                continue
            given = values.setdefault(a.question, {})
            for item_id, value in zip(a.item_ids, np.asarray(a.value, dtype=float), strict=True):
                row = position.get(item_id)
                if row is not None and not np.isnan(value):
                    given.setdefault(row, float(value))  # an item given twice: its first answer
        items = np.array(sorted({i for given in values.values() for i in given}), dtype=np.int64)
        if not items.size:
            continue
        added.append(judge_annotator(name))
        rows_item.append(items)
        for key in rows_value:
            given = values.get(key, {})
            rows_value[key].append(np.array([given.get(int(i), np.nan) for i in items]))
    if not added:
        return questions, []
    item = np.concatenate(rows_item)
    first_new = data.n_annotators
    annotator = np.concatenate([np.full(r.size, first_new + n, dtype=np.int64)
                                for n, r in enumerate(rows_item)])
    out = []
    for q in questions:
        d = q.data
        out.append(replace(q, data=replace(
            d, annotators=[*d.annotators, *added],
            item=np.concatenate([d.item, item]),
            annotator=np.concatenate([d.annotator, annotator]),
            value=np.concatenate([d.value, *rows_value[q.key]]),
            duration_ms=np.concatenate([d.duration_ms, np.full(item.size, np.nan)]),
            cant_judge=None if d.cant_judge is None
            else np.concatenate([d.cant_judge, np.zeros(item.size, dtype=np.bool_)]))))
    return out, added


def judgments_with_judges(judgments: Sequence[Judgments], judges: Sequence[JudgeInfo],
                          answers: Sequence[JudgeAnswers]) -> tuple[list[Judgments], list[str]]:
    """Return the comparative questions' judgments with each judge's first run appended as an
    annotator, and the names of the judges added (in order, over every question).

    A judge's choice is read as a person's stored choice is (`judgments_from_choices`); one
    that names an output the comparison does not have, or that the judge left blank, is not a
    judgment. A comparison only the judge judged joins the question's comparisons."""
    runs = first_runs(answers, judges)
    out: list[Judgments] = []
    added: list[str] = []
    for j in judgments:
        own = [a for a in runs if a.question == j.question and a.choices]
        index = {name: n for n, name in enumerate(j.outputs)}
        annotators = list(j.annotators)
        comparisons = list(j.comparisons)
        where = {c: n for n, c in enumerate(comparisons)}
        ann: list[int] = []
        cmp: list[int] = []
        vals: list[float] = []
        shown: list[list[int]] = []
        level: list[list[int]] = []
        for name in _judge_order(own):
            seen: set[str] = set()
            start = len(ann)
            for a in own:
                if a.judge != name:
                    continue
                for comparison, value, choice in zip(a.item_ids, np.asarray(a.value, float),
                                                     a.choices, strict=True):
                    parsed = _levels(j.kind, choice, index) if comparison not in seen else None
                    if parsed is None:
                        continue
                    seen.add(comparison)
                    if comparison not in where:
                        where[comparison] = len(comparisons)
                        comparisons.append(comparison)
                    ann.append(len(annotators))
                    cmp.append(where[comparison])
                    vals.append(float(value))
                    shown.append(parsed[0])
                    level.append(parsed[1])
            if len(ann) > start:
                annotators.append(judge_annotator(name))
                added.append(judge_annotator(name))
        if not ann:
            out.append(j)
            continue
        width = max(j.shown.shape[1] if j.shown.ndim == 2 else 0,
                    max(len(s) for s in shown))
        out.append(replace(
            j, annotators=tuple(annotators), comparisons=tuple(comparisons),
            annotator=np.concatenate([j.annotator, np.array(ann, dtype=np.int64)]),
            comparison=np.concatenate([j.comparison, np.array(cmp, dtype=np.int64)]),
            shown=np.concatenate([_padded(j.shown, width), _padded(_square(shown), width)]),
            level=np.concatenate([_padded(j.level, width), _padded(_square(level), width)]),
            value=np.concatenate([j.value, np.array(vals, dtype=float)])))
    return out, list(dict.fromkeys(added))


def _square(rows: list[list[int]]) -> np.ndarray:
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), -1, dtype=np.int64)
    for n, r in enumerate(rows):
        out[n, :len(r)] = r
    return out


def _padded(array: np.ndarray, width: int) -> np.ndarray:
    array = array.reshape(array.shape[0], -1) if array.ndim != 2 else array
    if array.shape[1] >= width:
        return array
    pad = np.full((array.shape[0], width - array.shape[1]), -1, dtype=array.dtype)
    return np.concatenate([array, pad], axis=1)

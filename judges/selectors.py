"""Reads of the judges: the page's list, the analysis' arrays and the export's rows."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.comparative import SEPARATOR, judgment_text
from core.judges import JudgeAnswers, JudgeInfo
from studies.models import Question, Study

from .models import Judge, JudgeAnswer, JudgeRun

# The judges export (judges.csv, and the bundle's): one row per answer, then the judge's
# metadata; `core.judges` reads it back (a comparative row by its items and choice).
JUDGE_COLUMNS = ("judge", "run", "question", "item", "items", "value", "choice", "strength",
                 "rationale", "model", "prompt", "version", "date", "temperature", "notes")
ROWS_CHUNK = 5000


@dataclass(frozen=True)
class RunRow:
    pk: int
    label: str
    n_answers: int
    source: str
    created: Any


@dataclass(frozen=True)
class JudgeRow:
    judge: Judge
    runs: list[RunRow]

    @property
    def n_answers(self) -> int:
        return sum(r.n_answers for r in self.runs)


def judge_list(*, study: Study) -> list[JudgeRow]:
    """The study's judges by name, each with its runs (oldest first): two queries."""
    judges = list(Judge.objects.filter(study=study).order_by("name"))
    runs: dict[int, list[RunRow]] = {j.pk: [] for j in judges}
    for pk, judge_id, label, n, source, created in JudgeRun.objects.filter(
            judge__study=study).order_by("created", "pk").values_list(
            "pk", "judge_id", "label", "n_answers", "source", "created"):
        runs[judge_id].append(RunRow(pk, label, n, source, created))
    return [JudgeRow(j, runs[j.pk]) for j in judges]


def judge_count(*, study: Study) -> int:
    return Judge.objects.filter(study=study).count()


def study_has_judges(*, study: Study) -> bool:
    return Judge.objects.filter(study=study).exists()


def judge_info(judge: Mapping[str, Any]) -> JudgeInfo:
    """A judge's row (`values()`) as the analysis reads it."""
    return JudgeInfo(name=judge["name"], model=judge["model"], prompt=judge["prompt"],
                     version=judge["version"], date=judge["date"],
                     temperature=judge["temperature"], notes=judge["notes"])


def judges_info(*, study: Study) -> list[dict[str, Any]]:
    """Every judge's metadata and its runs' labels, as the bundle's judges.json holds them."""
    judges = list(Judge.objects.filter(study=study).order_by("name").values(
        "pk", "name", "model", "prompt", "version", "date", "temperature", "notes"))
    runs: dict[int, list[str]] = {j["pk"]: [] for j in judges}
    for judge_id, label in JudgeRun.objects.filter(judge__study=study).order_by(
            "created", "pk").values_list("judge_id", "label"):
        runs[judge_id].append(label)
    return [{**{k: v for k, v in j.items() if k != "pk"}, "runs": runs[j["pk"]]}
            for j in judges]


def judges_for_analysis(*, study: Study) -> tuple[list[JudgeInfo], list[JudgeAnswers]]:
    """The study's judges and their answers as the analysis reads them: one `JudgeAnswers` per
    judge × run × question, its items in the study's item order.

    One query per table (judges, runs, questions, and the answers with their item ids), and no
    ORM object per answer: the rows are tuples grouped into numpy arrays as they arrive.
    """
    judges = list(Judge.objects.filter(study=study).order_by("name").values(
        "pk", "name", "model", "prompt", "version", "date", "temperature", "notes"))
    infos = [judge_info(j) for j in judges]
    names = {j["pk"]: j["name"] for j in judges}
    runs = {pk: (names[judge_id], label) for pk, judge_id, label in JudgeRun.objects.filter(
        judge__study=study).values_list("pk", "judge_id", "label")}
    if not runs:
        return infos, []
    questions = dict(Question.objects.filter(study=study).values_list("pk", "key"))
    rows = (JudgeAnswer.objects.filter(run__judge__study=study)
            .order_by("run__judge__name", "run__created", "run_id", "question__position",
                      "question_id", "item__position", "item_id")
            .values_list("run_id", "question_id", "item__external_id", "value", "choice",
                         "rationale"))
    out: list[JudgeAnswers] = []
    group: tuple[int, int] | None = None
    items: list[str] = []
    values: list[float] = []
    choices: list[Mapping[str, Any]] = []
    rationales: list[str] = []

    def close() -> None:
        if group is None:
            return
        judge, label = runs[group[0]]
        out.append(JudgeAnswers(
            judge=judge, run=label, question=questions[group[1]], item_ids=tuple(items),
            value=np.array(values, dtype=np.float64),
            choices=tuple(choices) if any(choices) else (),
            rationale=tuple(rationales) if any(rationales) else ()))

    for run_id, question_id, item, value, choice, rationale in rows.iterator(
            chunk_size=ROWS_CHUNK):
        if (run_id, question_id) != group:
            close()
            group = (run_id, question_id)
            items, values, choices, rationales = [], [], [], []
        items.append(item)
        values.append(np.nan if value is None else value)
        choices.append(_choice(choice) or {})
        rationales.append(rationale)
    close()
    return infos, out


def _choice(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, str):  # a backend that hands JSON back as text
        raw = json.loads(raw)
    return raw if isinstance(raw, dict) else None


def judge_answer_rows(*, study: Study) -> Iterator[tuple[Any, ...]]:
    """The judges export's rows (`JUDGE_COLUMNS`): by judge, run, question and item."""
    meta = {j["pk"]: j for j in Judge.objects.filter(study=study).values(
        "pk", "name", "model", "prompt", "version", "date", "temperature", "notes")}
    rows = (JudgeAnswer.objects.filter(run__judge__study=study)
            .order_by("run__judge__name", "run__created", "run_id", "question__position",
                      "question_id", "item__position", "item_id")
            .values_list("run__judge_id", "run__label", "question__key", "item__external_id",
                         "value", "choice", "rationale"))
    for judge_id, run, question, item, value, raw, rationale in rows.iterator(
            chunk_size=ROWS_CHUNK):
        j = meta[judge_id]
        choice = _choice(raw)
        shown = SEPARATOR.join(choice["shown"]) if choice else ""
        yield (j["name"], run, question, item, shown, value,
               judgment_text(choice) if choice else "",
               (choice or {}).get("strength", ""), rationale, j["model"], j["prompt"],
               j["version"], j["date"], j["temperature"], j["notes"])

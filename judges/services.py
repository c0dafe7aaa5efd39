"""Writes of the judges: a judge made or changed, a file of its answers imported into one or
more runs, a run or a judge deleted (docs/judges.md).

A judge's answers are stored in this app's tables only, never as `annotation` responses: no
statistic about the people reads them (issue 27). Every write is one transaction, recorded in
the study's history; an archived study refuses them all.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date as Date
from typing import Any, BinaryIO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connections, router, transaction

from core.judges import (
    DEFAULT_RUN,
    Comparison,
    JudgeRow,
    JudgeStream,
    duplicate_message,
    judge_answers_parse,
    judge_answers_stream,
    label_problem,
)
from core.problems import Collector, InputError, Problem
from core.responses.comparisons import ComparativeQuestion
from studies.models import Study
from studies.services import study_event, study_writable

from .models import Judge, JudgeAnswer, JudgeRun

STAGE = "concord_judge_rows"
MAX_TEXT = 20_000  # characters of a judge's prompt or notes
MAX_SHORT = 200    # characters of its model and version
JUDGE_FIELDS = ("model", "prompt", "version", "date", "temperature", "notes")


@dataclass(frozen=True)
class JudgeImported:
    """What an import stored: the runs it wrote (in the file's order), the answers, the runs it
    replaced, and what is worth saying about the file."""

    judge: Judge
    runs: list[str]
    answers: int
    replaced: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _refuse(message: str, column: str | None = None, where: str = "judge") -> InputError:
    return InputError([Problem(where, None, column, message)])


def judge_fields_clean(**fields: Any) -> dict[str, Any]:
    """Return a judge's metadata checked and trimmed; raise `InputError` naming each bad field.

    ``date`` is an ISO date (``2025-06-01``) or empty; ``temperature`` a number from 0 to 10 or
    None.
    """
    errors = Collector("judge")
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if name not in JUDGE_FIELDS:
            raise TypeError(f"a judge has no field {name!r}")
        if name == "temperature":
            if value in (None, ""):
                out[name] = None
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = math.nan
            if not 0 <= number <= 10:  # nan fails too
                errors.add(f"{str(value)[:20]!r} is not a temperature (a number from 0 to 10)",
                           column=name)
            out[name] = number
            continue
        text = str(value or "").replace("\0", "").strip()
        limit = MAX_TEXT if name in ("prompt", "notes") else MAX_SHORT
        if len(text) > limit:
            errors.add(f"longer than {limit} characters", column=name)
        if name == "date" and text:
            try:
                text = Date.fromisoformat(text).isoformat()
            except ValueError:
                errors.add(f"{text[:20]!r} is not an ISO date (YYYY-MM-DD)", column=name)
        out[name] = text
    errors.raise_if_any()
    return out


def _name_clean(name: str) -> str:
    name = " ".join(str(name).replace("\0", "").split())
    problem = label_problem(name)
    if problem:
        raise _refuse(f"the judge's name {problem}", column="name")
    return name


@transaction.atomic
def judge_create(*, study: Study, name: str, user: User | None = None, **fields: Any) -> Judge:
    """Add a judge to the study (its name unique in it); its metadata as `judge_fields_clean`."""
    study_writable(study)
    name = _name_clean(name)
    clean = judge_fields_clean(**fields)
    if Judge.objects.filter(study=study, name=name).exists():
        raise _refuse(f"this study already has a judge named {name!r}", column="name")
    try:
        with transaction.atomic():
            return Judge.objects.create(study=study, name=name, **clean)
    except IntegrityError:  # a concurrent create of the same name
        raise _refuse(f"this study already has a judge named {name!r}", column="name") from None


@transaction.atomic
def judge_update(*, judge: Judge, user: User | None = None, name: str | None = None,
                 **fields: Any) -> Judge:
    """Change a judge's name or metadata (the fields given)."""
    study_writable(judge.study)
    if name is not None:
        name = _name_clean(name)
        if Judge.objects.filter(study=judge.study_id, name=name).exclude(pk=judge.pk).exists():
            raise _refuse(f"this study already has a judge named {name!r}", column="name")
        judge.name = name
    for key, value in judge_fields_clean(**fields).items():
        setattr(judge, key, value)
    judge.save()
    return judge


@dataclass
class _Study:
    """What a judge's file is checked against: the study's questions, items and comparisons."""

    scales: dict[str, list[float]]
    comparative: dict[str, ComparativeQuestion]
    question_ids: dict[str, int]
    item_ids: dict[str, int]
    plain: set[str]  # the items a scale question asks about: those that are not comparisons
    comparisons: dict[frozenset[str], Comparison]

    @classmethod
    def read(cls, study: Study) -> _Study:
        questions = study.question_list
        items: dict[str, int] = {}
        plain: set[str] = set()
        comparisons: dict[frozenset[str], Comparison] = {}
        for external, outputs, pk in study.items.order_by("position", "pk").values_list(
                "external_id", "outputs", "pk"):
            items[external] = pk
            if not outputs:
                plain.add(external)
            else:  # the first comparison of a set, as the judgments file takes it
                comparisons.setdefault(frozenset(outputs), Comparison(external, tuple(outputs)))
        return cls(scales={q.key: list(q.values) for q in questions if not q.is_comparative},
                   comparative={q.key: ComparativeQuestion(q.kind, q.comparison or {})
                                for q in questions if q.is_comparative},
                   question_ids={q.key: q.pk for q in questions}, item_ids=items,
                   plain=plain, comparisons=comparisons)

    def options(self, run: str, max_bytes: int) -> dict[str, Any]:
        return {"run": run, "scales": self.scales, "comparative": self.comparative,
                "comparisons": self.comparisons, "max_bytes": max_bytes, "items": self.plain}


def _loads_with_copy() -> bool:
    return connections[router.db_for_write(JudgeAnswer)].vendor == "postgresql"


def judge_answers_import(*, study: Study, judge: Judge, data: bytes | BinaryIO, filename: str,
                         run: str = DEFAULT_RUN, replace: bool = False,
                         user: User | None = None,
                         max_bytes: int | None = None) -> JudgeImported:
    """Validate a judge's answers file completely, then store its runs, in one transaction.

    ``run`` labels the rows without a run. A run the judge already has is refused (nothing is
    written), unless ``replace``: then its answers are those of the file instead. Every problem
    is raised as one `InputError` with lines and columns; what is accepted but worth saying
    (columns not read, rows skipped) is in the result's ``warnings``. On PostgreSQL the rows are
    streamed into a staging table with COPY and inserted set-based (as `annotation.bulk` imports
    responses); elsewhere they are read in memory and stored with ``bulk_create``.
    """
    if judge.study_id != study.pk:
        raise ValueError("the judge is not this study's")
    study_writable(study)
    limit = settings.CONCORD_MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    label = " ".join(str(run).split())
    known = _Study.read(study)
    options = known.options(label, limit)
    with transaction.atomic():
        # One import into a study at a time: two uploads of one run cannot both pass.
        Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
        if _loads_with_copy():
            runs, answers, warnings, replaced = _import_copy(
                judge=judge, data=data, filename=filename, known=known, options=options,
                replace=replace)
        else:
            parsed = judge_answers_parse(data, filename=filename, judge=judge.name, **options)
            replaced = _runs_make(judge, parsed.runs, filename, replace)
            ids = dict(JudgeRun.objects.filter(judge=judge, label__in=parsed.runs)
                       .values_list("label", "pk"))
            JudgeAnswer.objects.bulk_create(
                (JudgeAnswer(run_id=ids[r.run], question_id=known.question_ids[r.question],
                             item_id=known.item_ids[r.item], value=r.value, choice=r.choice,
                             rationale=r.rationale) for r in parsed.rows), batch_size=2000)
            runs, answers, warnings = parsed.runs, len(parsed.rows), parsed.warnings
        _count(judge, runs)
        study_event(study=study, user=user, action="judge_answers", judge=judge.name[:200],
                    runs=[r[:200] for r in runs[:20]], answers=answers,
                    replaced=[r[:200] for r in replaced[:20]])
    return JudgeImported(judge=judge, runs=runs, answers=answers, replaced=replaced,
                         warnings=warnings)


def _runs_make(judge: Judge, runs: list[str], filename: str, replace: bool) -> list[str]:
    """Create the file's runs; refuse (or, with ``replace``, empty) those the judge has."""
    existing = list(JudgeRun.objects.filter(judge=judge, label__in=runs)
                    .values_list("label", flat=True))
    if existing and not replace:
        named = ", ".join(repr(r[:40]) for r in existing[:10])
        raise InputError([Problem(filename, None, "run", (
            f"the judge {judge.name!r} already has run{'s' if len(existing) > 1 else ''} "
            f"{named}: delete {'them' if len(existing) > 1 else 'it'} first, give this file "
            "another run label, or replace the run's answers"))])
    if existing:
        JudgeAnswer.objects.filter(run__judge=judge, run__label__in=existing).delete()
        JudgeRun.objects.filter(judge=judge, label__in=existing).update(source=filename[:200])
    JudgeRun.objects.bulk_create(JudgeRun(judge=judge, label=r, source=filename[:200])
                                 for r in runs if r not in existing)
    return existing


def _count(judge: Judge, runs: list[str]) -> None:
    """Store each run's number of answers (the page lists it without counting)."""
    for pk in JudgeRun.objects.filter(judge=judge, label__in=runs).values_list("pk", flat=True):
        JudgeRun.objects.filter(pk=pk).update(
            n_answers=JudgeAnswer.objects.filter(run_id=pk).count())


def _import_copy(*, judge: Judge, data: bytes | BinaryIO, filename: str, known: _Study,
                 options: dict[str, Any], replace: bool
                 ) -> tuple[list[str], int, list[str], list[str]]:
    """The PostgreSQL path: each row checked as it is read (`judge_answers_stream`) and copied
    into a staging table; a row given twice found by a window function; the answers inserted
    from it in one statement. Python holds the runs' labels, never the rows."""
    stream: JudgeStream = judge_answers_stream(data, filename=filename, judge=judge.name,
                                               **options)
    answer, run_table = JudgeAnswer._meta.db_table, JudgeRun._meta.db_table
    with connections[router.db_for_write(JudgeAnswer)].cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {STAGE}")
        cursor.execute(f"CREATE TEMP TABLE {STAGE} (line integer, run text, question integer, "
                       "item integer, value double precision, choice jsonb, rationale text) "
                       "ON COMMIT DROP")
        runs: dict[str, None] = {}
        rows = 0
        with cursor.cursor.copy(f"COPY {STAGE} (line, run, question, item, value, choice, "
                                "rationale) FROM STDIN") as copy:
            for row in stream.rows:
                rows += 1
                runs.setdefault(row.run, None)
                copy.write_row(_staged(row, known))
        errors = stream.errors
        cursor.execute(
            "SELECT line, first, run, question, item FROM (SELECT line, run, question, item, "  # noqa: S608 - table names only
            f"min(line) OVER (PARTITION BY run, question, item) AS first FROM {STAGE}) s "
            "WHERE line <> first ORDER BY line LIMIT 201")
        keys = {pk: key for key, pk in known.question_ids.items()}
        ids = {pk: external for external, pk in known.item_ids.items()}
        for line, first, run, question, item in cursor.fetchall():
            errors.add(duplicate_message(run, keys[question], ids[item], first), line=line)
        if rows == 0 and not errors:
            errors.add("the file holds no answer of this judge" + (
                f" ({stream.skipped} row{'s' if stream.skipped != 1 else ''} skipped)"
                if stream.skipped else ""))
        errors.raise_if_any()
        stream.finish()
        labels = list(runs)
        replaced = _runs_make(judge, labels, filename, replace)
        cursor.execute(
            f"INSERT INTO {answer} (run_id, question_id, item_id, value, choice, rationale) "  # noqa: S608 - table names only
            f"SELECT r.id, s.question, s.item, s.value, s.choice, s.rationale FROM {STAGE} s "
            f"JOIN {run_table} r ON r.judge_id = %s AND r.label = s.run ORDER BY s.line",
            [judge.pk])
        cursor.execute(f"DROP TABLE {STAGE}")
    return labels, rows, stream.warnings, replaced


def _staged(row: JudgeRow, known: _Study) -> tuple[Any, ...]:
    choice = None if row.choice is None else json.dumps(row.choice, ensure_ascii=False)
    return (row.line, row.run, known.question_ids[row.question], known.item_ids[row.item],
            row.value, choice, row.rationale.replace("\0", ""))


@transaction.atomic
def judge_run_delete(*, run: JudgeRun, user: User | None = None) -> int:
    """Delete one run of a judge and its answers; return how many answers there were."""
    judge = run.judge
    study_writable(judge.study)
    answers = JudgeAnswer.objects.filter(run=run).count()
    label = run.label
    run.delete()
    study_event(study=judge.study, user=user, action="judge_run_delete",
                judge=judge.name[:200], run=label[:200], answers=answers)
    return answers


@transaction.atomic
def judge_delete(*, judge: Judge, user: User | None = None) -> Mapping[str, int]:
    """Delete a judge with its runs and their answers; return how many of each there were."""
    study = judge.study
    study_writable(study)
    counts = {"runs": judge.runs.count(),
              "answers": JudgeAnswer.objects.filter(run__judge=judge).count()}
    name = judge.name
    judge.delete()
    study_event(study=study, user=user, action="judge_delete", judge=name[:200], **counts)
    return counts


def judge_answers_upload(*, study: Study, name: str, data: bytes | BinaryIO, filename: str,
                         run: str = DEFAULT_RUN, replace: bool = False,
                         user: User | None = None, max_bytes: int | None = None,
                         **fields: Any) -> JudgeImported:
    """The page's and the API's upload: the judge named (created with ``fields`` when the
    study has none of that name, else its non-blank ``fields`` updated) and its file imported,
    in one transaction: a refused file leaves no new judge behind."""
    with transaction.atomic():
        judge = Judge.objects.filter(study=study, name=" ".join(str(name).split())).first()
        if judge is None:
            judge = judge_create(study=study, name=name, user=user, **fields)
        else:
            given = {k: v for k, v in fields.items() if v not in (None, "")}
            if given:
                judge = judge_update(judge=judge, user=user, **given)
        return judge_answers_import(study=study, judge=judge, data=data, filename=filename,
                                    run=run, replace=replace, user=user, max_bytes=max_bytes)

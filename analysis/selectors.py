"""ORM rows to arrays: the only place that knows both the database and numpy."""

from __future__ import annotations

import numpy as np
from django.db import connections, router

from annotation.models import Answer, Response
from core.data import QuestionData, StudyData, item_columns, question_data_from_answers
from studies.models import Item, Participant, Question, Study
from studies.selectors import pseudonyms

# One row per answer of an answered presentation, in the order of the presentation's first
# response (the order the analysis lists annotators in; they are named by their stored pseudonyms), with the first
# response's active time (time is measured on the first answer) and the current revision's
# answers to every question.  A presentation without any stored answer is not a row, nor is an
# answer to a screening or attention-check item (those never enter the main statistics).
_ANSWERS_SQL = """
SELECT first.id, first.participant_id, first.item_id, first.presentation, first.active_ms,
       answer.question_id, answer.value, answer.missing
FROM {response} first
JOIN {participant} p ON p.id = first.participant_id
JOIN {item} i ON i.id = first.item_id AND i.role = 'main'
JOIN {response} current ON current.participant_id = first.participant_id
     AND current.item_id = first.item_id AND current.presentation = first.presentation
     AND current.is_current
JOIN {answer} answer ON answer.response_id = current.id
WHERE p.study_id = %s AND first.revision = 1
ORDER BY first.id
"""


def study_questions(*, study: Study) -> list[QuestionData]:
    """Load a study's items and every question's answers as arrays, questions in order.

    Four queries at most: the items, the questions (cached on ``study``), the answers, the
    pseudonyms.  Every
    question shares the study's rows (one per answered presentation); a question a response
    did not answer is a blank there.  Only the last revision of an answer counts; its time is
    the first revision's.
    """
    questions = study.question_list
    items = list(Item.objects.filter(study=study, role=Item.Role.MAIN).order_by("position")
                 .values_list("id", "external_id", "is_control", "metrics", "features", "meta",
                              "text", "text_a", "text_b"))
    index = {pk: n for n, (pk, *_) in enumerate(items)}
    column = {q.pk: n for n, q in enumerate(questions)}
    sql = _ANSWERS_SQL.format(response=Response._meta.db_table, answer=Answer._meta.db_table,
                              participant=Participant._meta.db_table,
                              item=Item._meta.db_table)
    rows: list[list] = [[], [], [], []]
    values: list[list[float]] = [[] for _ in questions]
    cant_judge: list[list[bool]] = [[] for _ in questions]
    last = None
    with connections[router.db_for_read(Response)].cursor() as cursor:
        cursor.execute(sql, [study.pk])
        while batch := cursor.fetchmany(5000):
            for first, participant, item_pk, presentation, active_ms, question, value, \
                    missing in batch:
                if first != last:  # a new presentation: every question blank until answered
                    last = first
                    rows[0].append(participant)
                    rows[1].append(index[item_pk])
                    rows[2].append(presentation)
                    rows[3].append(np.nan if active_ms is None else active_ms)
                    for n in range(len(questions)):
                        values[n].append(np.nan)
                        cant_judge[n].append(False)
                n = column[question]
                values[n][-1] = np.nan if value is None else value
                cant_judge[n][-1] = missing == Answer.Missing.CANT_JUDGE
    data = question_data_from_answers(
        item_columns([external for _, external, *_ in items],
                     [control for _, _, control, *_ in items],
                     [row[3] for row in items], [row[4] for row in items],
                     [row[5] for row in items],
                     texts=[" ".join(row[6:9]) for row in items]),
        participant=np.array(rows[0], dtype=np.int64),
        item=np.array(rows[1], dtype=np.int64),
        presentation=np.array(rows[2], dtype=np.int64),
        active_ms=np.array(rows[3], dtype=float),
        values={q.key: np.array(v, dtype=float) for q, v in zip(questions, values, strict=True)},
        cant_judge={q.key: np.array(c, dtype=bool)
                    for q, c in zip(questions, cant_judge, strict=True)},
        names=pseudonyms(study=study),
    )
    return [QuestionData(key=q.key, data=data[q.key], values=tuple(q.domain),
                         reductions=q.reduction_maps(), prompt=q.prompt) for q in questions]


def study_data(*, study: Study, question: Question | None = None) -> StudyData:
    """Load a study's items and one question's answers (the first question's by default).

    The rows are the study's, as `study_questions` loads them (three queries at most).
    """
    key = (question or study.primary_question).key
    return next(q.data for q in study_questions(study=study) if q.key == key)


def latest_results(*, study: Study) -> dict | None:
    """Return the results document of the newest finished run, or None. One query."""
    from .models import AnalysisRun

    return (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
            .order_by("-finished_at", "-id").values_list("results", flat=True).first())


# One annotator's answers, as the analysis reads them (the first response's time, the current
# revision's answers), with the item's id and the question's key: the per-annotator page's one
# read of answers.  Bounded by LIMIT: an annotator answers each item at most twice.
_ANNOTATOR_SQL = """
SELECT item.external_id, first.presentation, first.active_ms, question.key, answer.value,
       answer.missing
FROM {response} first
JOIN {item} item ON item.id = first.item_id
JOIN {response} current ON current.participant_id = first.participant_id
     AND current.item_id = first.item_id AND current.presentation = first.presentation
     AND current.is_current
JOIN {answer} answer ON answer.response_id = current.id
JOIN {question} question ON question.id = answer.question_id
WHERE first.participant_id = %s AND first.revision = 1
ORDER BY first.id, question.position, question.id
LIMIT %s
"""
ANNOTATOR_ROWS = 20_000  # answers shown at most on the per-annotator page


def annotator_answers(*, participant_id: int, limit: int = ANNOTATOR_ROWS) -> list[dict]:
    """Return one participant's answers in the order they were given, one query.

    Each row: ``item`` (its id in files), ``presentation`` (2 = the repeat of a duplicate),
    ``active_ms`` (the first revision's active time), ``question`` (key), ``value`` (None =
    blank), ``cant_judge``.
    """
    from studies.models import Question

    sql = _ANNOTATOR_SQL.format(response=Response._meta.db_table, answer=Answer._meta.db_table,
                                item=Item._meta.db_table, question=Question._meta.db_table)
    with connections[router.db_for_read(Response)].cursor() as cursor:
        cursor.execute(sql, [participant_id, limit])
        return [{"item": item, "presentation": presentation, "active_ms": active_ms,
                 "question": question, "value": value,
                 "cant_judge": missing == Answer.Missing.CANT_JUDGE}
                for item, presentation, active_ms, question, value, missing in cursor.fetchall()]


def run_settings(*, study: Study, run_id: int) -> dict | None:
    """Return the analysis settings a run of the study was made with, or None. One query."""
    from .models import AnalysisRun

    return (AnalysisRun.objects.filter(study=study, pk=run_id)
            .values_list("settings", flat=True).first())


def latest_run(*, study: Study):
    """Return the newest finished run (id, finish time, results), or None. One query."""
    from .models import AnalysisRun

    return (AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE)
            .order_by("-finished_at", "-id").only("pk", "finished_at", "results", "study_id")
            .first())


def study_checks(*, study: Study) -> list[dict]:
    """Per annotator who answered an attention check: the counts the results' ``attention_checks``
    section reports (named by pseudonym). One query."""
    rows = (Participant.objects.filter(study_id=study.pk, pseudonym_number__isnull=False,
                                       checks_answered__gt=0)
            .order_by("pseudonym_number")
            .values_list("pseudonym_number", "checks_answered", "checks_failed", "stopped_at"))
    return [{"annotator": f"A{n}", "answered": answered, "failed": failed,
             "stopped": stopped is not None} for n, answered, failed, stopped in rows]

"""Writes of the annotation app: answers stored exactly once, durably, with their timing; and
responses collected elsewhere, imported whole or not at all (parsed by `core.responses`).

The browser's upload, its preview and its confirmation are the imports app's (`imports`): it
keeps the file as an `ImportJob` whatever its size and calls `responses_import`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from core.comparative import JudgmentError, asks, judgment_clean
from core.responses import (
    MAX_ACTIVE_MS,
)
from core.screening import item_correct
from studies.models import Assignment, Item, Participant, Question, Study
from studies.services import pseudonyms_assign, screening_decide

from .models import Answer, Response
from .reclaim import participant_return as participant_return  # callers find them here
from .reclaim import participants_reclaim as participants_reclaim
from .responses_import import responses_import as responses_import
from .selectors import hot_cursor, outputs_at, revisable

MAX_EVENTS = 500


class AnswerRejected(ValueError):
    """The answer cannot be stored (bad value, unknown position, closed study).

    ``study_status`` is set when the study's status refused it (paused, closed, draft).
    """

    def __init__(self, message: str, *, status: int = 400, study_status: str = ""):
        super().__init__(message)
        self.status = status
        self.study_status = study_status


def answer_grace(*, study: Study, shown_at: datetime | None,
                 now: datetime | None = None) -> bool:
    """Whether an answer to a presentation shown at ``shown_at`` is still accepted although the
    study is not open: it was on screen before the study was paused or closed, and the grace
    period (``CONCORD_ANSWER_GRACE_SECONDS``) since that change has not run out."""
    changed = study.status_changed_at
    if study.status not in (Study.Status.PAUSED, Study.Status.CLOSED) or changed is None:
        return False
    if shown_at is None or shown_at > changed:
        return False
    grace = timedelta(seconds=settings.CONCORD_ANSWER_GRACE_SECONDS)
    return (now or timezone.now()) - changed <= grace


@dataclass(frozen=True)
class SubmitResult:
    response_id: int
    created: bool
    answered: int
    assigned: int
    revision: int = 1

    @property
    def complete(self) -> bool:
        return self.answered >= self.assigned


def clean_events(events: Any) -> list[list[str | int]]:
    """Return the raw timing events as small ``[type, ms]`` pairs, or refuse them (400).

    The page sends at most a few dozen ``["shown", 0]``-like pairs; anything else (not a list,
    more than `MAX_EVENTS`, a type that is not a short text, a time that is not a finite number
    of milliseconds within a day) is refused with a message, never stored or crashed on.
    """
    if events is None:
        return []
    if not isinstance(events, list) or len(events) > MAX_EVENTS:
        raise AnswerRejected(f"events must be a list of at most {MAX_EVENTS} [type, ms] pairs")
    out: list[list[str | int]] = []
    for event in events:
        if not (isinstance(event, (list, tuple)) and len(event) == 2
                and isinstance(event[0], str) and len(event[0]) <= 20 and event[0].isprintable()
                and isinstance(event[1], (int, float)) and not isinstance(event[1], bool)
                and math.isfinite(event[1]) and 0 <= event[1] <= MAX_ACTIVE_MS):
            raise AnswerRejected("each event is a [type, ms] pair: a short text and a finite "
                                 "number of milliseconds")
        out.append([event[0], int(event[1])])
    return out


def assignment_shown(*, assignment: Assignment) -> None:
    """Record when the item page first showed this presentation (one UPDATE, only the first)."""
    if assignment.shown_at is None:
        now = timezone.now()
        Assignment.objects.filter(pk=assignment.pk, shown_at__isnull=True).update(shown_at=now)
        assignment.shown_at = now


@dataclass(frozen=True)
class AnswerInput:
    """One question's answer as stored: a value, or a missing value with its reason."""

    question_id: int
    value: float | None
    missing: str = ""
    comment: str = ""
    # A comparative question's judgment as given (core/comparative.py); None for a scale.
    choice: dict[str, Any] | None = None


MAX_COMMENT = 5000


def _encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode (JSON's ``"\\ud800"`` decodes to a lone surrogate,
    which neither UTF-8 nor PostgreSQL can hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def answers_validate(*, questions: Sequence[Question], submitted: Mapping[str, Any],
                     outputs: Sequence[str] = ()) -> list[AnswerInput]:
    """Check one item's answers against the study's questions; return them in question order.

    ``submitted`` maps a question key to ``{"value": …, "cant_judge": bool, "comment": …}``
    (``"missing": "cant_judge"`` is accepted for ``cant_judge``). A value must be one of its
    scale's values; "can't judge" only where the question offers it, and it stores a missing
    value with its reason, never a category; an optional question left out is stored as missing
    ("skipped"); a required one must be answered. Raises `AnswerRejected` (400) naming the
    question.

    ``questions`` are the questions asked about this item (`Question.applies_to`), and
    ``outputs`` the item's outputs when it is a comparison: a comparative question's answer is
    ``{"choice": {...}, "cant_judge", "comment"}``, the judgment checked by
    `core.comparative.judgment_clean` against them (stored as given, with its canonical value).
    """
    if not isinstance(submitted, Mapping):
        raise AnswerRejected("answers must map each question's key to its answer")
    keys = {q.key for q in questions}
    unknown = sorted(str(k) for k in submitted if k not in keys)
    if unknown:
        raise AnswerRejected(f"unknown question {unknown[0][:50]!r} (or one not asked about "
                             "this item)")
    out = []
    for question in questions:
        raw = submitted.get(question.key)
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raw = {"value": raw}
        cant_judge = raw.get("cant_judge") in (True, "true", "1", "on") or \
            raw.get("missing") == Question.Missing.CANT_JUDGE
        choice = None
        if question.is_comparative:
            if raw.get("value") not in (None, ""):
                raise AnswerRejected(f"{question.key}: a comparative question is answered by a "
                                     "choice, not a value")
            value, choice = _answer_choice(raw.get("choice"), question, outputs)
        else:
            if raw.get("choice") is not None:
                raise AnswerRejected(f"{question.key}: a scale question takes a value, not a "
                                     "choice")
            value = _answer_value(raw.get("value"), question)
        comment = raw.get("comment") or ""
        if not isinstance(comment, str):
            raise AnswerRejected(f"{question.key}: the comment must be text")
        if comment and not question.allow_comment:
            raise AnswerRejected(f"{question.key}: this question takes no comment")
        if len(comment) > MAX_COMMENT or "\x00" in comment or not _encodable(comment):
            raise AnswerRejected(f"{question.key}: a comment has at most {MAX_COMMENT} "
                                 "characters, no NUL character and no lone surrogate")
        if cant_judge:
            if not question.allow_cant_judge:
                raise AnswerRejected(f"{question.key}: this question has no \"can't judge\"")
            if value is not None:
                raise AnswerRejected(f"{question.key}: a value and \"can't judge\" together")
            out.append(AnswerInput(question.pk, None, Question.Missing.CANT_JUDGE, comment))
        elif value is None:
            if question.required:
                raise AnswerRejected(f"{question.key}: this question needs an answer")
            out.append(AnswerInput(question.pk, None, Question.Missing.SKIPPED, comment))
        else:
            out.append(AnswerInput(question.pk, value, "", comment, choice))
    return out


def _answer_choice(raw: Any, question: Question,
                   outputs: Sequence[str]) -> tuple[float | None, dict[str, Any] | None]:
    """A comparative question's judgment: (value, stored choice), or (None, None) for none."""
    if raw is None or raw == {}:
        return None, None
    if not outputs:
        raise AnswerRejected(f"{question.key}: this item is not a comparison")
    try:
        return judgment_clean(question.kind, question.comparison, outputs, raw)
    except JudgmentError as exc:
        raise AnswerRejected(f"{question.key}: {exc}") from None


def _answer_value(raw: Any, question: Question) -> float | None:
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):  # JSON true is not the value 1
        raise AnswerRejected(f"{question.key}: {raw!r} is not a value of this scale")
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise AnswerRejected(f"{question.key}: {str(raw)[:20]!r} is not a number") from None
    if value not in {float(v) for v in question.values}:
        raise AnswerRejected(f"{question.key}: {str(raw)[:20]} is not a value of this scale")
    return value


# The hot path of every first answer, as SQL: the ORM has no INSERT … SELECT … ON CONFLICT DO
# NOTHING RETURNING. The insert takes the presentation from the assignment and stores the response
# unless a unique constraint (client id; participant + item + presentation + revision 1) already
# holds a row: no savepoint, no separate look-up of the assignment, and a concurrent duplicate
# waits for the first insert's commit, then inserts nothing. Its answers (one per question) and the
# participant's counters are written in the same transaction. They run on PostgreSQL and SQLite
# (>= 3.35); a changed answer (a revision) is one more statement on PostgreSQL (`_REVISE_PG_SQL`)
# and the locked transaction of `_revise` on SQLite.
_INSERT_SQL = """
INSERT INTO annotation_response (participant_id, item_id, presentation, assignment_id, position,
                                 revision, is_current, client_id, active_ms, events, source,
                                 received_at)
SELECT a.participant_id, a.item_id, a.presentation, a.id, a.position, 1, %s, %s, %s, %s, %s, %s
FROM studies_assignment a
WHERE a.participant_id = %s AND a.position = %s
ON CONFLICT DO NOTHING
RETURNING id
"""
_ANSWER_SQL = """
INSERT INTO annotation_answer (response_id, question_id, value, missing, comment, choice)
VALUES (%s, %s, %s, %s, %s, %s)
"""
_COUNT_SQL = """
UPDATE studies_participant
SET n_answered = n_answered + 1,
    completed_at = CASE WHEN completed_at IS NULL AND n_answered + 1 >= n_assigned
                        THEN %s ELSE completed_at END
WHERE id = %s
RETURNING n_answered, n_assigned, pseudonym_number
"""
# PostgreSQL runs all three as ONE statement (a data-modifying WITH), committed on its own: one
# round trip instead of five (BEGIN, INSERT, INSERT, UPDATE, COMMIT) for every answer. A single
# statement is atomic; the answers and the counter are written only when the response was
# inserted. No row back: nothing inserted. It is prepared once per connection
# (selectors.hot_cursor); the casts type its parameters. The answers travel as one JSON text (a
# record per question), the events and the answer id as text: psycopg turns a string into a
# parameter at no cost, while its array and JSON adapters took a fifth of the worker's time under
# load (a profile of bench.load, docs/benchmarks.md). A float's shortest repr read back as a
# double is the same double, so values are stored exactly.
_SUBMIT_PG_SQL = """
WITH inserted AS (
    INSERT INTO annotation_response (participant_id, item_id, presentation, assignment_id,
                                     position, revision, is_current, client_id, active_ms, events,
                                     source, received_at)
    SELECT a.participant_id, a.item_id, a.presentation, a.id, a.position, 1, %s::boolean,
           %s::uuid, %s::integer, %s::jsonb, %s::varchar, %s::timestamptz
    FROM studies_assignment a
    WHERE a.participant_id = %s AND a.position = %s
    ON CONFLICT DO NOTHING
    RETURNING id
), answered AS (
    INSERT INTO annotation_answer (response_id, question_id, value, missing, comment, choice)
    SELECT inserted.id, q.question_id, q.value, q.missing, q.comment, q.choice
    FROM inserted, jsonb_to_recordset(%s::jsonb)
         AS q(question_id bigint, value double precision, missing varchar, comment text,
              choice jsonb)
), counted AS (
    UPDATE studies_participant
    SET n_answered = n_answered + 1,
        completed_at = CASE WHEN completed_at IS NULL AND n_answered + 1 >= n_assigned
                            THEN %s::timestamptz ELSE completed_at END
    WHERE id = %s AND EXISTS (SELECT 1 FROM inserted)
    RETURNING n_answered, n_assigned, pseudonym_number
)
SELECT inserted.id, counted.n_answered, counted.n_assigned, counted.pseudonym_number
FROM inserted, counted
"""
# Nothing inserted: the response this client id stored, if any, and the progress.
_RETRY_SQL = """
SELECT r.id, r.revision, r.participant_id, r.position, p.n_answered, p.n_assigned
FROM annotation_response r
JOIN studies_participant p ON p.id = r.participant_id
WHERE r.client_id = %s
"""


# A changed answer (a new answer id for a position already answered), on PostgreSQL, after the
# first answer's insert stored nothing: ONE statement looks the answer id up (a retry stores
# nothing and gets what the id stored) and otherwise stores the next revision — the current one
# demoted, the new one inserted from the demoted one's number, its answers — unless the position
# is not revisable (the rule of `selectors.revisable`, in SQL: a first presentation whose repeat
# was shown is final). The counters are read, not changed: a revision answers no new item; and
# attention checks and the screening read revision 1, so nothing is scored again.
# It replaced a look-up and an ORM transaction of nine round trips (`_revise`, still SQLite's).
# A single statement sees one snapshot and takes no lock first: when two revisions of one position
# race, the later one's UPDATE waits for the earlier one's commit, then finds nothing current
# left to demote and inserts nothing (or its insert hits a unique constraint, which undoes the
# whole statement); `_revise_pg` then runs it again on a fresh snapshot. So revisions are
# numbered without a gap or a duplicate, and exactly one stays current.
_REVISE_PG_SQL = """
WITH prior AS (
    SELECT r.id, r.revision, r.participant_id, r.position
    FROM annotation_response r
    WHERE r.client_id = %(client_id)s::uuid
), assignment AS (
    SELECT a.id, a.participant_id, a.item_id, a.presentation, a.position
    FROM studies_assignment a
    WHERE a.participant_id = %(participant)s AND a.position = %(position)s
), target AS (
    SELECT a.* FROM assignment a
    WHERE NOT EXISTS (SELECT 1 FROM prior)
      AND NOT (a.presentation = 1 AND EXISTS (
          SELECT 1 FROM studies_assignment b
          WHERE b.participant_id = a.participant_id AND b.item_id = a.item_id
            AND b.presentation > 1 AND b.shown_at IS NOT NULL))
), demoted AS (
    UPDATE annotation_response r SET is_current = false
    FROM target t
    WHERE r.participant_id = t.participant_id AND r.item_id = t.item_id
      AND r.presentation = t.presentation AND r.is_current
    RETURNING r.revision
), inserted AS (
    INSERT INTO annotation_response (participant_id, item_id, presentation, assignment_id,
                                     position, revision, is_current, client_id, active_ms, events,
                                     source, received_at)
    SELECT t.participant_id, t.item_id, t.presentation, t.id, t.position, d.revision + 1, true,
           %(client_id)s::uuid, %(active_ms)s::integer, %(events)s::jsonb, %(source)s::varchar,
           %(now)s::timestamptz
    FROM target t, demoted d
    RETURNING id, revision
), answered AS (
    INSERT INTO annotation_answer (response_id, question_id, value, missing, comment, choice)
    SELECT inserted.id, q.question_id, q.value, q.missing, q.comment, q.choice
    FROM inserted, jsonb_to_recordset(%(answers)s::jsonb)
         AS q(question_id bigint, value double precision, missing varchar, comment text,
              choice jsonb)
)
SELECT (SELECT id FROM prior), (SELECT revision FROM prior), (SELECT participant_id FROM prior),
       (SELECT position FROM prior), (SELECT id FROM inserted), (SELECT revision FROM inserted),
       EXISTS (SELECT 1 FROM assignment), EXISTS (SELECT 1 FROM target),
       p.n_answered, p.n_assigned
FROM studies_participant p
WHERE p.id = %(participant)s
"""
# A revision raced by another revision of the same position is run again: each lost attempt means
# a competitor stored its own, so this many only runs out with more than ten at once (one
# annotator sending revisions of one item faster than they commit).
REVISE_ATTEMPTS = 10


def _answer_records(answers: Sequence[AnswerInput]) -> str:
    """The answers as one JSON text, for `jsonb_to_recordset` (see _SUBMIT_PG_SQL)."""
    return json.dumps([{"question_id": a.question_id, "value": a.value, "missing": a.missing,
                        "comment": a.comment, "choice": a.choice} for a in answers],
                      ensure_ascii=False, allow_nan=False)


def _store(connection: BaseDatabaseWrapper, response: list[Any], answers: Sequence[AnswerInput],
           count: list[Any]) -> tuple[int, int, int, int | None] | None:
    """Insert a first answer and count it atomically; return (id, answered, assigned, pseudonym
    number) or None."""
    if connection.vendor == "postgresql":
        with hot_cursor(connection.alias) as cursor:
            cursor.execute(_SUBMIT_PG_SQL, response + [_answer_records(answers)] + count)
            # The statement's one row: (id, answered, assigned, pseudonym number), or none.
            return cast("tuple[int, int, int, int | None] | None", cursor.fetchone())
    with connection.cursor() as cursor:
        with transaction.atomic(using=connection.alias):
            cursor.execute(_INSERT_SQL, response)
            inserted = cursor.fetchone()
            if inserted is None:
                return None
            cursor.executemany(_ANSWER_SQL, [
                (inserted[0], a.question_id, a.value, a.missing, a.comment,
                 None if a.choice is None else json.dumps(a.choice, ensure_ascii=False))
                for a in answers])
            cursor.execute(_COUNT_SQL, count)
            return (inserted[0], *cursor.fetchone())


def response_submit(
    *,
    participant: Participant,
    position: int,
    answers: Mapping[str, Any],
    client_id: uuid.UUID,
    active_ms: int | None,
    events: list[Any] | None = None,
) -> SubmitResult:
    """Store one item's answers (every question) at `position` of the assignment, exactly once.

    ``answers`` maps each question's key to its answer (see `answers_validate`). A retry (same
    `client_id`) stores nothing new and returns what that id stored. A new id for a position
    already answered is a *revision*: it is stored as the next revision and becomes the current
    answer (the earlier one is kept), unless the item's repeat has already been shown. The rows
    and the participant's counters are committed together before this returns, so an
    acknowledged answer is durable. On PostgreSQL a first answer costs one statement, a retry or
    a revision three (docs/benchmarks.md; the third counts the last minute's revisions).
    """
    study = participant.study
    if participant.revoked_at is not None:
        raise AnswerRejected("this link has been revoked", status=403)
    if participant.stopped_at is not None or \
            participant.screening == Participant.Screening.FAILED:
        raise AnswerRejected("this study has ended for this link", status=409)
    if study.status != study.Status.OPEN:
        # An item already on screen when the study was paused or closed is still answered.
        shown_at = (Assignment.objects.filter(participant=participant, position=position)
                    .values_list("shown_at", flat=True).first())
        if not answer_grace(study=study, shown_at=shown_at):
            raise AnswerRejected(f"the study is {study.get_status_display().lower()}",
                                 status=409, study_status=study.status)
    questions = study.question_list
    outputs: list[str] = []
    if any(q.is_comparative for q in questions):
        # Only a study with a comparative question looks its item up (one query): the questions
        # asked depend on whether it is a comparison, and a judgment is checked against its
        # outputs. A scale-only study's answer path costs nothing more.
        outputs = outputs_at(participant=participant, position=position)
        questions = [q for q in questions if asks(q.kind, len(outputs))]
    validated = answers_validate(questions=questions, submitted=answers, outputs=outputs)
    if active_ms is not None and not 0 <= active_ms <= MAX_ACTIVE_MS:
        active_ms = None
    connection = connections[router.db_for_write(Response)]
    fields = Response._meta
    now = timezone.now()
    db_client_id = fields.get_field("client_id").get_db_prep_value(client_id, connection)
    if connection.vendor == "postgresql":  # as text, cast in the statement (see _SUBMIT_PG_SQL)
        response = [True, str(client_id), active_ms, json.dumps(clean_events(events))]
    else:
        response = [True, db_client_id, active_ms,
                    fields.get_field("events").get_db_prep_value(clean_events(events), connection)]
    response += [Response.Source.APP.value,
                fields.get_field("received_at").get_db_prep_value(now, connection),
                participant.pk, position]
    stored = _store(connection, response, validated, [
        Participant._meta.get_field("completed_at").get_db_prep_value(now, connection),
        participant.pk,
    ])
    if stored is not None:
        if stored[3] is None:
            # The participant's first stored answer: they get their pseudonym now (once).
            pseudonyms_assign(study_id=study.pk, participant_ids=[participant.pk])
        answered, assigned = stored[1], stored[2]
        if position in (participant.check_positions or ()):
            check_score(participant=participant, position=position, answers=validated)
        if participant.screening == Participant.Screening.PENDING and answered >= assigned:
            # The last screening item: pass (the main items are assigned) or screened out.
            screening_decide(participant=participant)
            assigned = participant.n_assigned
        return SubmitResult(response_id=stored[0], created=True, answered=answered,
                            assigned=assigned)
    # Not a first answer: a retry or a revision. One annotator stored 300 revisions of an item
    # in 5 s; over CONCORD_REVISIONS_PER_MINUTE a new revision waits (429: the page keeps it and
    # sends it again), while a retry of a stored one is still acknowledged.
    limit = settings.CONCORD_REVISIONS_PER_MINUTE
    if limit and Response.objects.filter(
            participant_id=participant.pk, position=position,
            received_at__gte=now - timedelta(seconds=60)).count() >= limit:
        retry = _retried(connection, db_client_id, participant=participant, position=position)
        if retry is not None:
            return retry
        raise AnswerRejected(f"more than {limit} changes to this answer in a minute; it is "
                             "sent again in a moment", status=429)
    if connection.vendor == "postgresql":
        return _revise_pg(connection, participant=participant, position=position, params={
            "client_id": response[1], "active_ms": active_ms, "events": response[3],
            "source": response[4], "now": response[5], "answers": _answer_records(validated),
        })
    retry = _retried(connection, db_client_id, participant=participant, position=position)
    if retry is not None:
        return retry
    return _revise(participant=participant, position=position, answers=validated,
                   client_id=client_id, active_ms=active_ms, events=clean_events(events))


def check_score(*, participant: Participant, position: int,
                answers: Sequence[AnswerInput]) -> bool:
    """Score a first answer to an attention check; return whether it was right.

    Counts the check (and a failure) on the participant; the failure that reaches the study's
    ``check_stop_after`` stops the participant (their answers stay; they see a polite end
    page). Locked, so two checks answered at once count twice.
    """
    study = participant.study
    gold, tolerance = (Item.objects.filter(assignments__participant=participant,
                                           assignments__position=position)
                       .values_list("gold", "tolerance").get())
    keys = {q.pk: q.key for q in study.question_list}
    right = item_correct(gold, tolerance, {keys[a.question_id]: a.value for a in answers})
    with transaction.atomic():
        row = Participant.objects.select_for_update().get(pk=participant.pk)
        row.checks_answered += 1
        if not right:
            row.checks_failed += 1
            if (study.check_stop_after and row.checks_failed >= study.check_stop_after
                    and row.stopped_at is None):
                row.stopped_at = timezone.now()
                row.completed_at = None
        row.save(update_fields=["checks_answered", "checks_failed", "stopped_at",
                                "completed_at"])
    for name in ("checks_answered", "checks_failed", "stopped_at", "completed_at"):
        setattr(participant, name, getattr(row, name))
    return right


def check_warning(*, participant: Participant) -> bool:
    """Whether the page about to show should warn of a failed attention check (once per
    failure that reached the study's ``check_warn_after``); marks the warning as given."""
    warn_after = participant.study.check_warn_after
    if not warn_after or participant.checks_failed < warn_after \
            or participant.checks_warned >= participant.checks_failed:
        return False
    Participant.objects.filter(pk=participant.pk).update(checks_warned=participant.checks_failed)
    participant.checks_warned = participant.checks_failed
    return True


def _retried(connection: BaseDatabaseWrapper, db_client_id: Any, *, participant: Participant,
             position: int) -> SubmitResult | None:
    """Return what this client id stored already (a retry), or None if it stored nothing."""
    with hot_cursor(connection.alias) as cursor:
        cursor.execute(_RETRY_SQL, [db_client_id])
        row = cursor.fetchone()
    if row is None:
        return None
    response_id, revision, participant_id, stored_position, answered, assigned = row
    if (participant_id, stored_position) != (participant.pk, position):
        # The client id belongs to another answer: a client bug or a forged id.
        raise AnswerRejected("this answer id was already used for another item", status=409)
    return SubmitResult(response_id=response_id, created=False, answered=answered,
                        assigned=assigned, revision=revision)


def _revise_pg(connection: BaseDatabaseWrapper, *, participant: Participant, position: int,
               params: dict[str, Any]) -> SubmitResult:
    """Return what this answer id stored already, or store it as the next revision of an
    answered position (one statement, `_REVISE_PG_SQL`; again when a concurrent revision won)."""
    params = params | {"participant": participant.pk, "position": position}
    for _attempt in range(REVISE_ATTEMPTS):
        # Inside a transaction (a caller's, a test's), a statement that fails must not abort it.
        atomic = transaction.atomic(using=connection.alias) if connection.in_atomic_block \
            else nullcontext()
        try:
            with atomic, hot_cursor(connection.alias) as cursor:
                cursor.execute(_REVISE_PG_SQL, params)
                row = cursor.fetchone()
        except IntegrityError:
            # A concurrent revision took the next number, or the same id: look again.
            continue
        (prior_id, prior_revision, prior_participant, prior_position, new_id, new_revision,
         assigned_here, revisable_here, answered, assigned) = row
        if prior_id is not None:
            if (prior_participant, prior_position) != (participant.pk, position):
                raise AnswerRejected("this answer id was already used for another item",
                                     status=409)
            return SubmitResult(response_id=prior_id, created=False, answered=answered,
                                assigned=assigned, revision=prior_revision)
        if new_id is not None:
            return SubmitResult(response_id=new_id, created=True, answered=answered,
                                assigned=assigned, revision=new_revision)
        if not assigned_here:
            raise AnswerRejected("no such item in this assignment", status=404)
        if not revisable_here:
            raise AnswerRejected("this answer can no longer be changed", status=409)
        # Nothing current to demote in this statement's snapshot: a concurrent revision won.
    raise AnswerRejected("this answer is being changed by another request; try again",
                         status=409)


def _revise(*, participant: Participant, position: int, answers: Sequence[AnswerInput],
            client_id: uuid.UUID, active_ms: int | None, events: list[list[str | int]]) -> SubmitResult:
    """Store a changed answer as the next revision of an answered position (locked, atomic)."""
    try:
        with transaction.atomic():
            assignment = (Assignment.objects.select_for_update(of=("self",))
                          .select_related("item")
                          .filter(participant=participant, position=position).first())
            if assignment is None:
                raise AnswerRejected("no such item in this assignment", status=404)
            if not revisable(assignment=assignment):
                raise AnswerRejected("this answer can no longer be changed", status=409)
            current = (Response.objects.filter(
                participant=participant, item_id=assignment.item_id,
                presentation=assignment.presentation, is_current=True)
                .values_list("pk", "revision").first())
            if current is not None:
                Response.objects.filter(pk=current[0]).update(is_current=False)
            response = Response.objects.create(
                participant=participant, item_id=assignment.item_id,
                presentation=assignment.presentation, assignment=assignment,
                position=assignment.position, revision=(current[1] + 1) if current else 1,
                is_current=True, client_id=client_id, active_ms=active_ms, events=events)
            Answer.objects.bulk_create(
                Answer(response=response, question_id=a.question_id, value=a.value,
                       missing=a.missing, comment=a.comment, choice=a.choice) for a in answers)
            counts = Participant.objects.filter(pk=participant.pk).values_list(
                "n_answered", "n_assigned").get()
    except IntegrityError:
        # The same revision sent twice at once: the other request stored it.
        connection = connections[router.db_for_write(Response)]
        retry = _retried(connection, Response._meta.get_field("client_id").get_db_prep_value(
            client_id, connection), participant=participant, position=position)
        if retry is None:
            raise
        return retry
    return SubmitResult(response_id=response.pk, created=True, answered=counts[0],
                        assigned=counts[1], revision=response.revision)

"""Store annotators' answers exactly once, durably, with their timing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connections, router, transaction
from django.utils import timezone

from studies.models import Participant

from .models import Response
from .selectors import hot_cursor

MAX_ACTIVE_MS = 24 * 3600 * 1000
MAX_EVENTS = 500


class AnswerRejected(ValueError):
    """The answer cannot be stored (bad value, unknown position, closed study)."""

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class SubmitResult:
    response_id: int
    created: bool
    answered: int
    assigned: int

    @property
    def complete(self) -> bool:
        return self.answered >= self.assigned


def clean_events(events: Any) -> list[list]:
    """Keep the raw timing events as small [type, ms] pairs; drop anything else."""
    out: list[list] = []
    if not isinstance(events, list):
        return out
    for event in events[:MAX_EVENTS]:
        if (isinstance(event, (list, tuple)) and len(event) == 2 and isinstance(event[0], str)
                and isinstance(event[1], (int, float)) and len(event[0]) <= 20):
            out.append([event[0], int(event[1])])
    return out


# The hot path of every answer, as SQL: the ORM has no INSERT … SELECT … ON CONFLICT DO NOTHING
# RETURNING. The insert takes the presentation from the assignment and stores the answer unless a
# unique constraint (client id; participant + item + presentation; assignment) already holds a
# row: no savepoint, no separate look-up of the assignment, and a concurrent duplicate waits for
# the first insert's commit, then inserts nothing. The participant's counters are updated in the
# same transaction. Both statements run on PostgreSQL and SQLite (>= 3.35).
_INSERT_SQL = """
INSERT INTO annotation_response (participant_id, item_id, presentation, assignment_id, position,
                                 value, client_id, active_ms, events, source, received_at)
SELECT a.participant_id, a.item_id, a.presentation, a.id, a.position, %s, %s, %s, %s, %s, %s
FROM studies_assignment a
WHERE a.participant_id = %s AND a.position = %s
ON CONFLICT DO NOTHING
RETURNING id
"""
_COUNT_SQL = """
UPDATE studies_participant
SET n_answered = n_answered + 1,
    completed_at = CASE WHEN completed_at IS NULL AND n_answered + 1 >= n_assigned
                        THEN %s ELSE completed_at END
WHERE id = %s
RETURNING n_answered, n_assigned
"""
# PostgreSQL runs both as ONE statement (a data-modifying WITH), committed on its own: one round
# trip instead of four (BEGIN, INSERT, UPDATE, COMMIT) for every answer. A single statement is
# atomic; the counter is updated only when the answer was inserted. No row back: nothing inserted.
# It is prepared once per connection (selectors.hot_cursor); the casts type its parameters.
_SUBMIT_PG_SQL = """
WITH inserted AS (
    INSERT INTO annotation_response (participant_id, item_id, presentation, assignment_id,
                                     position, value, client_id, active_ms, events, source,
                                     received_at)
    SELECT a.participant_id, a.item_id, a.presentation, a.id, a.position,
           %s::double precision, %s::uuid, %s::integer, %s::jsonb, %s::varchar, %s::timestamptz
    FROM studies_assignment a
    WHERE a.participant_id = %s AND a.position = %s
    ON CONFLICT DO NOTHING
    RETURNING id
), counted AS (
    UPDATE studies_participant
    SET n_answered = n_answered + 1,
        completed_at = CASE WHEN completed_at IS NULL AND n_answered + 1 >= n_assigned
                            THEN %s::timestamptz ELSE completed_at END
    WHERE id = %s AND EXISTS (SELECT 1 FROM inserted)
    RETURNING n_answered, n_assigned
)
SELECT inserted.id, counted.n_answered, counted.n_assigned FROM inserted, counted
"""
# Nothing inserted: the stored answer of that presentation, if any, and the progress.
_EXISTING_SQL = """
SELECT r.id, p.n_answered, p.n_assigned
FROM studies_assignment a
JOIN studies_participant p ON p.id = a.participant_id
LEFT JOIN annotation_response r ON r.participant_id = a.participant_id
    AND r.item_id = a.item_id AND r.presentation = a.presentation
WHERE a.participant_id = %s AND a.position = %s
"""


def _store(connection, insert_params: list, count_params: list) -> tuple[int, int, int] | None:
    """Insert the answer and count it atomically; return (id, answered, assigned) or None."""
    if connection.vendor == "postgresql":
        with hot_cursor(connection.alias) as cursor:
            cursor.execute(_SUBMIT_PG_SQL, insert_params + count_params)
            return cursor.fetchone()
    with connection.cursor() as cursor:
        with transaction.atomic(using=connection.alias):
            cursor.execute(_INSERT_SQL, insert_params)
            inserted = cursor.fetchone()
            if inserted is None:
                return None
            cursor.execute(_COUNT_SQL, count_params)
            return (inserted[0], *cursor.fetchone())


def response_submit(
    *,
    participant: Participant,
    position: int,
    value: float | None,
    client_id: uuid.UUID,
    active_ms: int | None,
    events: list | None = None,
) -> SubmitResult:
    """Store one answer at `position` of the participant's assignment, exactly once.

    A retry (same `client_id`) or a second answer to the same presentation stores nothing new
    and returns the stored row: the first acknowledged answer wins. The row and the
    participant's counters are committed together before this returns, so an acknowledged
    answer is durable. On PostgreSQL a new answer costs one statement (docs/benchmarks.md).
    """
    study = participant.study
    if participant.revoked_at is not None:
        raise AnswerRejected("this link has been revoked", status=403)
    if study.status != study.Status.OPEN:
        raise AnswerRejected("the study is not open", status=409)
    if value is not None and value not in {float(v) for v in study.scale.values}:
        raise AnswerRejected(f"{value:g} is not a value of this scale")
    if active_ms is not None and not 0 <= active_ms <= MAX_ACTIVE_MS:
        active_ms = None
    connection = connections[router.db_for_write(Response)]
    fields = Response._meta
    now = timezone.now()
    params = [
        value,
        fields.get_field("client_id").get_db_prep_value(client_id, connection),
        active_ms,
        fields.get_field("events").get_db_prep_value(clean_events(events), connection),
        Response.Source.APP.value,
        fields.get_field("received_at").get_db_prep_value(now, connection),
        participant.pk,
        position,
    ]
    stored = _store(connection, params, [
        Participant._meta.get_field("completed_at").get_db_prep_value(now, connection),
        participant.pk,
    ])
    if stored is not None:
        return SubmitResult(response_id=stored[0], created=True, answered=stored[1],
                            assigned=stored[2])
    with connection.cursor() as cursor:
        cursor.execute(_EXISTING_SQL, [participant.pk, position])
        existing = cursor.fetchone()
    if existing is None:
        raise AnswerRejected("no such item in this assignment", status=404)
    response_id, answered, assigned = existing
    if response_id is None:
        # The client id belongs to another answer: a client bug or a forged id.
        raise AnswerRejected("this answer id was already used for another item", status=409)
    return SubmitResult(response_id=response_id, created=False, answered=answered,
                        assigned=assigned)

"""Store annotators' answers exactly once, durably, with their timing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, F, When
from django.utils import timezone

from studies.models import Assignment, Participant

from .models import Response

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
    and returns the stored row: the first acknowledged answer wins. The row is committed
    before this returns, so an acknowledged answer is durable.
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
    try:
        assignment = Assignment.objects.only("id", "item_id", "presentation").get(
            participant=participant, position=position
        )
    except Assignment.DoesNotExist:
        raise AnswerRejected("no such item in this assignment", status=404) from None

    with transaction.atomic():
        try:
            with transaction.atomic():
                response = Response.objects.create(
                    participant=participant,
                    item_id=assignment.item_id,
                    presentation=assignment.presentation,
                    assignment=assignment,
                    position=position,
                    value=value,
                    client_id=client_id,
                    active_ms=active_ms,
                    events=clean_events(events),
                )
            created = True
        except IntegrityError:
            created = False
        if created:
            now = timezone.now()
            Participant.objects.filter(pk=participant.pk).update(
                n_answered=F("n_answered") + 1,
                completed_at=Case(
                    When(n_answered__gte=F("n_assigned") - 1, completed_at__isnull=True, then=now),
                    default=F("completed_at"),
                ),
            )
            response_id = response.pk
        else:
            existing = Response.objects.filter(
                participant=participant, item_id=assignment.item_id,
                presentation=assignment.presentation,
            ).values_list("id", flat=True).first()
            if existing is None:
                # The client id belongs to another answer: a client bug or a forged id.
                raise AnswerRejected("this answer id was already used for another item", status=409)
            response_id = existing
        counts = Participant.objects.filter(pk=participant.pk).values_list(
            "n_answered", "n_assigned").get()
    return SubmitResult(response_id=response_id, created=created, answered=counts[0],
                        assigned=counts[1])

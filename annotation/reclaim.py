"""Abandoned assignments given to new participants, and given back when their owner returns.

Re-exported by `annotation.services`, where callers find them; sent every few minutes by Celery
beat (`annotation.tasks.reclaim_assignments`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from studies.models import Assignment, Participant, Study

from .models import Response


def participants_reclaim(*, now: datetime | None = None) -> int:
    """Reclaim the unanswered assignments of every participant who left them (one UPDATE).

    A participant of an open study who has items left and has done nothing for
    CONCORD_RECLAIM_AFTER_SECONDS (no consent, no item shown, no answer stored since) is marked
    ``reclaimed_at``: their unanswered assignments stop counting towards their items' overlap
    (`studies.services.participant_assign`), so the next participants get those items, and the
    overlap counts answers. Nothing is deleted: their answers stay and count, and an answer they
    send later is stored as any other (`response_submit` does not look at this mark); when they
    come back, `participant_return` clears it. Returns how many participants were reclaimed.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=float(settings.CONCORD_RECLAIM_AFTER_SECONDS))
    recent_show = Assignment.objects.filter(participant=OuterRef("pk"), shown_at__gte=cutoff)
    recent_answer = Response.objects.filter(participant=OuterRef("pk"), received_at__gte=cutoff)
    idle = (Participant.objects
            .filter(study__status=Study.Status.OPEN, reclaimed_at__isnull=True,
                    completed_at__isnull=True, created_at__lt=cutoff,
                    n_assigned__gt=F("n_answered"))
            .exclude(consented_at__gte=cutoff)
            .exclude(Exists(recent_show))
            .exclude(Exists(recent_answer)))
    return idle.update(reclaimed_at=now)


def participant_return(*, participant: Participant) -> None:
    """A reclaimed participant is back: their unanswered items are theirs again (one UPDATE).

    They carry on with their own list where they left it; an item someone else was given in the
    meantime may then end with more than its k answers (kept: no answer is ever dropped)."""
    if participant.reclaimed_at is not None:
        Participant.objects.filter(pk=participant.pk).update(reclaimed_at=None)
        participant.reclaimed_at = None

"""Reads for the questionnaire: the participant behind a link and the next presentation."""

from __future__ import annotations

from django.http import Http404

from studies.models import Assignment, Participant


def participant_by_token(*, token: str) -> Participant:
    try:
        return Participant.objects.select_related("study", "study__scale").get(token=token)
    except Participant.DoesNotExist:
        raise Http404("No such link") from None


def next_assignment(*, participant: Participant) -> Assignment | None:
    """Return the first presentation without a stored answer (resume point), or None."""
    return (
        Assignment.objects.filter(participant=participant, response__isnull=True)
        .select_related("item")
        .order_by("position")
        .first()
    )

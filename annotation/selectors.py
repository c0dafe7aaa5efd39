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


def participant_pseudonyms(*, study_id: int) -> dict[int, str]:
    """Return {participant id: "A1", "A2", …} in the order of each participant's first response.

    "First" is the lowest response id: answers collected in the app are numbered as they are
    committed, and an import stores its rows in the order annotators first appear in the file.
    Participants without any response get no pseudonym. One query.
    """
    from django.db.models import Min

    from .models import Response

    firsts = (
        Response.objects.filter(participant__study_id=study_id)
        .values("participant_id")
        .annotate(first=Min("id"))
        .order_by("first")
        .values_list("participant_id", flat=True)
    )
    return {pid: f"A{n}" for n, pid in enumerate(firsts, start=1)}

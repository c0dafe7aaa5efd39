"""Test helpers that store answers the way the app does: a response and its answers."""

from __future__ import annotations

import uuid

from annotation.models import Answer, Response
from annotation.services import response_submit
from studies.services import pseudonyms_assign


def store(participant, item, value, *, question=None, **fields) -> Response:
    """Store one response with its answer to the study's first question (or ``question``)."""
    response = Response.objects.create(participant=participant, item=item, **fields)
    Answer.objects.create(response=response, value=value,
                          question=question or participant.study.primary_question,
                          missing="" if value is not None else Answer.Missing.SKIPPED)
    # As a first answer through the app does: the participant gets their pseudonym (once).
    pseudonyms_assign(study_id=participant.study_id, participant_ids=[participant.pk])
    return response


def submit(participant, position=0, value=3, *, client_id=None, active_ms=1200, events=None,
           question=None):
    """Answer the study's first question (or ``question``) at ``position`` through the service."""
    key = question or participant.study.primary_question.key
    answer = {"value": value} if value is not None else {}
    return response_submit(participant=participant, position=position, answers={key: answer},
                           client_id=client_id or uuid.uuid4(), active_ms=active_ms,
                           events=events)


def values(queryset, *fields):
    """``values_list`` of responses with their first question's value last."""
    return queryset.values_list(*fields, "answers__value")

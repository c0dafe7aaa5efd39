"""Reads of the studies app; every study read is scoped to its owner."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404

from .models import Participant, Study


def study_list(*, user: AbstractBaseUser) -> QuerySet[Study]:
    return Study.objects.filter(owner=user).select_related("scale")


def study_get(*, user: AbstractBaseUser, slug: str) -> Study:
    """Return the user's study, or 404 whether it exists for someone else or not at all."""
    try:
        return Study.objects.select_related("scale").get(owner=user, slug=slug)
    except Study.DoesNotExist:
        raise Http404("No such study") from None


def participant_progress(*, study: Study) -> QuerySet[Participant]:
    return study.participants.order_by("id")

"""Reads of the studies app; every study read is scoped by the reader's role in it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import Http404

from .models import Membership, Participant, Study

Role = Membership.Role


def _with_role(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    if not user.is_authenticated:
        return Study.objects.none()
    role = Membership.objects.filter(study=OuterRef("pk"), user=user).values("role")[:1]
    return Study.objects.filter(memberships__user=user).annotate(role=Subquery(role))


def study_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    """The studies the user has a role in, each with ``role`` (the user's) and its questions."""
    return _with_role(user).prefetch_related("questions")


def study_get(*, user: AbstractBaseUser | AnonymousUser, slug: str,
              need: str = Role.VIEWER) -> Study:
    """Return the study if the user's role in it is at least ``need``.

    No role at all is a 404, whether the study exists for someone else or not (other studies
    behave as if they did not exist); a role below ``need`` is a 403 (they can see the study,
    just not do this). The study carries ``role``, the user's. One query.
    """
    study = _with_role(user).filter(slug=slug).first()
    if study is None:
        raise Http404("No such study")
    if not Membership.allows(study.role, need):
        raise PermissionDenied(f"Your role in this study ({study.role}) does not allow this.")
    return study


def study_members(*, study: Study) -> QuerySet[Membership]:
    return study.memberships.select_related("user").order_by("user__username")


def participant_progress(*, study: Study) -> QuerySet[Participant]:
    return study.participants.order_by("id")


class StudyScopedMixin:
    """For API views under ``studies/<study_slug>/``: the URL's study, by the caller's role.

    Shared by every app's API (the scoping rule of `study_get`, in one place): reads need a
    viewer, writes an editor (a view may set ``write_role``); anyone without a role gets 404.
    """

    kwargs: dict
    request: Any
    write_role: str = Role.EDITOR

    def schema_only(self) -> bool:
        return getattr(self, "swagger_fake_view", False)

    def study(self) -> Study:
        if not hasattr(self, "_study"):
            need = Role.VIEWER if self.request.method in ("GET", "HEAD", "OPTIONS") \
                else self.write_role
            self._study = study_get(user=self.request.user, slug=self.kwargs["study_slug"],
                                    need=need)
        return self._study


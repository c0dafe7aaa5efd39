"""What a token may do: a read-only token reads, whatever its owner's role; a token limited to
one study reaches that study only."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.filters import BaseFilterBackend
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from studies.models import Study

from .models import AccessToken


def _limited(request: Request) -> AccessToken | None:
    """The request's token when it is limited to one study, else None."""
    token = request.auth
    if isinstance(token, AccessToken) and token.study_id is not None:
        return token
    return None


class TokenScope(BasePermission):
    """Refuse a write (anything but GET, HEAD and OPTIONS) made with a read-only token (403).

    Requests with a session, or a token that may write, are left to the view's own rules (the
    caller's role in the study). In the API's defaults (config/settings.py, REST_FRAMEWORK)."""

    message = "This token is read-only: make a token that can read and write to change things."

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if isinstance(token, AccessToken) and token.scope == AccessToken.Scope.READ:
            return request.method in SAFE_METHODS
        return True


class TokenStudy(BasePermission):
    """Hold a token limited to one study to that study.

    Every study's API route names the study in the URL (``study_slug``, or ``slug`` under
    /api/studies/): another study is a 404, as a study without a role is, so the token learns
    nothing about it. A route without a study (POST /api/studies/ makes one) only reads, and a
    clone, which makes a study the token could not reach, is refused (403). The list of studies
    holds the token's one (`TokenStudyFilter`). In the API's defaults (config/settings.py)."""

    message = ("This token is limited to one study: it cannot create studies; make a token for "
               "all your studies to do that.")

    def has_permission(self, request: Request, view: Any) -> bool:
        token = _limited(request)
        if token is None:
            return True
        kwargs = getattr(view, "kwargs", None) or {}
        slug = kwargs.get("study_slug", kwargs.get("slug"))
        if slug is None:
            return request.method in SAFE_METHODS
        if token.study is None or slug != token.study.slug:
            raise NotFound("No such study")
        if getattr(view, "action", None) == "clone":
            raise PermissionDenied(self.message)
        return True


class TokenStudyFilter(BaseFilterBackend):
    """List only the token's study when the token is limited to one (GET /api/studies/)."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any
                        ) -> QuerySet[Any]:
        token = _limited(request)
        if token is not None and queryset.model is Study:
            return queryset.filter(pk=token.study_id)
        return queryset

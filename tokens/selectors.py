"""Reads of personal access tokens."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from .models import AccessToken
from .services import KEY_PREFIX, token_digest


def token_list(*, user: User) -> QuerySet[AccessToken]:
    """The user's tokens, newest first, revoked and expired ones included."""
    return AccessToken.objects.filter(user=user).select_related("study").order_by("-created_at")


def token_for_key(*, key: str) -> AccessToken | None:
    """The token a key belongs to (with its user), whatever its state; None for an unknown key."""
    if not key.startswith(KEY_PREFIX) or len(key) > 100:
        return None
    return (AccessToken.objects.select_related("user", "study")
            .filter(digest=token_digest(key)).first())

"""Writes of personal access tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from studies.models import Membership, Study

from .models import AccessToken

# "cc_" marks a Concord key in a log or a secret scanner's rules; 32 random bytes follow.
KEY_PREFIX = "cc_"
EXPIRY_DAYS = (7, 30, 90, 365)
# How stale `last_used_at` may get: one write a minute per token, not one per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(key: str) -> str:
    """Return the stored form of a key."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@transaction.atomic
def token_create(*, user: User, name: str, days: int, scope: str = AccessToken.Scope.WRITE,
                 study: Study | None = None) -> tuple[AccessToken, str]:
    """Create a token; return it and its key, which is never available again. ``scope``:
    ``read`` (the API's reads only) or ``write`` (everything its owner's roles allow);
    ``study``: the one study it reaches (one the user has a role in), or None for all."""
    if days not in EXPIRY_DAYS:
        raise ValueError(f"expiry must be one of {EXPIRY_DAYS} days, not {days}")
    if scope not in AccessToken.Scope.values:
        raise ValueError(f"scope must be one of {AccessToken.Scope.values}, not {scope!r}")
    if study is not None and not Membership.objects.filter(study=study, user=user).exists():
        raise ValueError(f"{user} has no role in the study {study.slug!r}")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = AccessToken.objects.create(
        user=user, name=name.strip()[:100] or "token", scope=scope, study=study,
        prefix=key[:10],
        digest=token_digest(key),
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, key


def token_revoke(*, user: User, token_id: int) -> bool:
    """Revoke one of the user's tokens; False when there is no such active token."""
    return bool(AccessToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True)
                .update(revoked_at=timezone.now()))


def token_touch(*, token: AccessToken) -> None:
    """Record a use, at most once per `LAST_USED_RESOLUTION` (a conditional update)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)

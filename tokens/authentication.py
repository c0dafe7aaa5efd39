"""`Authorization: Bearer cc_…` (or `Token cc_…`) for the API."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from .selectors import token_for_key
from .services import token_touch

SCHEMES = (b"bearer", b"token")


class AccessTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a request by a personal access token.

    A request with a token is not subject to CSRF (no cookie is involved); one without an
    Authorization header falls through to the session. Every refusal is a 401 that says why.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].lower() not in SCHEMES:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization: give the scheme and one token.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token is not a Concord token.") from None
        token = token_for_key(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token was revoked.")
        if token.expires_at <= timezone.now():
            raise exceptions.AuthenticationFailed("This token has expired.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This account is disabled.")
        token_touch(token=token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'

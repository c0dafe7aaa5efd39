"""What a token may do: a read-only token reads, whatever its owner's role."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from .models import AccessToken


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

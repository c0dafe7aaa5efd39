"""Fixed one-window counters in the shared cache, and the client's address they are counted by.

Used by the limits on enrolment through an open link (`annotation.limits`) and on password-reset
mails (`studies.accounts`). The cache is Redis when REDIS_URL is set, so every gunicorn worker
counts the same window (config/settings.py, CACHES).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """Return the client's address as the log-in lock-out sees it (config/settings.py).

    Behind TRUSTED_PROXY_COUNT proxies the client is the N-th entry from the right of
    X-Forwarded-For (each proxy appends the address it was connected from; anything further left
    the client wrote itself); without proxies the header is the client's to invent and ignored.
    """
    remote = str(request.META.get("REMOTE_ADDR", ""))
    proxies = int(settings.TRUSTED_PROXY_COUNT)
    if not proxies:
        return remote
    forwarded = [part.strip() for part in
                 str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",") if part.strip()]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote


def window_count(key: str, *, seconds: int) -> int:
    """Add one to `key`'s count in the current window of `seconds` and return the count.

    Atomic in Redis and in the local-memory cache: of concurrent requests exactly one sees each
    count. A cache that fails raises (each caller decides whether its limit fails open).
    """
    full = f"rate:{key}:{int(time.time() // seconds)}"
    cache.add(full, 0, timeout=seconds + 5)
    try:
        return int(cache.incr(full))
    except ValueError:  # the window's key expired between add and incr
        cache.add(full, 1, timeout=seconds + 5)
        return 1

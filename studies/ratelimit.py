"""Fixed one-window counters in the shared cache, and the client's address they are counted by.

Used by the limits on enrolment through an open link (`annotation.limits`) and on password-reset
mails (`studies.accounts`). The cache is Redis when REDIS_URL is set, so every gunicorn worker
counts the same window (config/settings.py, CACHES).
"""

from __future__ import annotations

import time

from axes.helpers import get_client_ip_address
from django.core.cache import cache
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """Return the client's address exactly as the log-in lock-out reads it (django-axes with
    django-ipware, configured from TRUSTED_PROXY_COUNT in config/settings.py): behind N proxies
    the N-th entry from the right of X-Forwarded-For, else the connection's address."""
    return get_client_ip_address(request) or str(request.META.get("REMOTE_ADDR", ""))


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

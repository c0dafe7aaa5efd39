"""How fast an open link enrols new participants: per client address and per study, a minute.

Without a limit one client with fresh cookies and invented Prolific ids took 90 of a study's 100
places in 23 seconds, and real newcomers then found the study full. Each new participant costs
one count in two fixed one-minute windows of the shared cache (Redis in production): one for the
client's address on this study, one for the study. Over either limit the open link answers 429
and enrols nobody. Someone already enrolled is never counted or refused.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from studies.models import Study

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


def client_address(request: HttpRequest) -> str:
    """Return the client's address as the lock-out sees it (config/settings.py).

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


def _count(key: str) -> int:
    """Add one to this minute's count under `key` and return it (atomic in Redis and locmem)."""
    cache.add(key, 0, timeout=WINDOW_SECONDS + 5)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=WINDOW_SECONDS + 5)
        return 1


def enrolment_allowed(*, study: Study, request: HttpRequest) -> bool:
    """Count one new participant for the study's open link; False when over a limit.

    A cache that fails (Redis down) lets the enrolment through and logs it: the limit guards
    places, and refusing every newcomer during an outage would do the attacker's work.
    """
    per_address = int(settings.CONCORD_JOIN_RATE_PER_ADDRESS)
    per_study = int(settings.CONCORD_JOIN_RATE_PER_STUDY)
    if not per_address and not per_study:
        return True
    window = int(time.time() // WINDOW_SECONDS)
    # The open token, not the primary key: unique across databases sharing one Redis.
    base = f"join:{study.open_token}:{window}"
    try:
        if per_address and _count(f"{base}:{client_address(request)}") > per_address:
            logger.warning("open link of %s: over %d new participants a minute from %s",
                           study.slug, per_address, client_address(request))
            return False
        if per_study and _count(base) > per_study:
            logger.warning("open link of %s: over %d new participants a minute",
                           study.slug, per_study)
            return False
    except Exception:  # noqa: BLE001 - any cache failure: fail open, said in the log
        logger.exception("enrolment limit not checked for %s: the cache failed", study.slug)
    return True

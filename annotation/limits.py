"""How fast an open link enrols new participants: per client address and per study, a minute.

Without a limit one client with fresh cookies and invented Prolific ids took 90 of a study's 100
places in 23 seconds, and real newcomers then found the study full. Each new participant costs
one count in two fixed one-minute windows of the shared cache (Redis in production): one for the
client's address on this study, one for the study. Over either limit the open link answers 429
and enrols nobody. Someone already enrolled is never counted or refused.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest

from studies.models import Study
from studies.ratelimit import client_address, window_count

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60


def _count(key: str) -> int:
    """Count one more enrolment in this minute's window of `key`."""
    return window_count(key, seconds=WINDOW_SECONDS)


def enrolment_allowed(*, study: Study, request: HttpRequest) -> bool:
    """Count one new participant for the study's open link; False when over a limit.

    A cache that fails (Redis down) lets the enrolment through and logs it: the limit guards
    places, and refusing every newcomer during an outage would do the attacker's work.
    """
    per_address = int(settings.CONCORD_JOIN_RATE_PER_ADDRESS)
    per_study = int(settings.CONCORD_JOIN_RATE_PER_STUDY)
    if not per_address and not per_study:
        return True
    # The open token, not the primary key: unique across databases sharing one Redis.
    base = f"join:{study.open_token}"
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

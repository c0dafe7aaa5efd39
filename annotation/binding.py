"""Binding a crowd-platform participant to the browser that first opened the open link.

A Prolific or MTurk participant is found by the platform id in the open link
(``PROLIFIC_PID``, ``workerId``), which is no secret: anyone who learns it could open the link
and land on that participant's pages. So the first browser is bound: the participant gets a
random ``binding`` secret and the browser a token signed with the site's key
(`django.core.signing`), carried in every link and form of the annotator pages as ``?b=…``
(MTurk shows the pages in a frame, where a SameSite=Lax cookie is not sent), with a cookie as a
fallback outside frames.  A platform participant's pages refuse a request without the token.

Another browser opening the open link with the same id is let in only when it also brings what
the platform gave that participant's session and nobody else sees: Prolific's ``SESSION_ID``,
MTurk's ``assignmentId`` (the same as at the first visit).  Otherwise it gets a clear refusal.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from django.core import signing
from django.http import HttpRequest

from studies.models import Participant

SALT = "concord.participant-binding"
PARAM = "b"  # the query parameter the annotator pages carry
HEADER = "HTTP_X_CONCORD_BINDING"
BOUND_SOURCES = (Participant.Source.PROLIFIC, Participant.Source.MTURK)
COOKIE_MAX_AGE = 60 * 60 * 24 * 30
# What only the platform gives a participant's session, per source (compared with the first visit).
PROOF: dict[str, str] = {Participant.Source.PROLIFIC: "SESSION_ID", Participant.Source.MTURK: "assignmentId"}


def cookie_name(participant: Participant) -> str:
    return f"concord-b-{participant.pk}"


def binding_token(participant: Participant) -> str:
    """The signed token of a bound participant (its pages carry it). Always the same for one
    binding, so what the page keys on its URL (the unsent answers' outbox) stays put."""
    return signing.Signer(salt=SALT).sign(f"{participant.pk}.{participant.binding}")


def binding_valid(participant: Participant, token: str | None) -> bool:
    if not token or not participant.binding:
        return False
    try:
        value = signing.Signer(salt=SALT).unsign(token)
    except signing.BadSignature:
        return False
    pk, _, secret = value.partition(".")
    return pk == str(participant.pk) and secrets.compare_digest(secret, participant.binding)


def binding_from(request: HttpRequest, participant: Participant) -> str | None:
    """The valid token this request carries (query, form, header, then cookie), or None."""
    for candidate in (request.GET.get(PARAM), request.POST.get(PARAM) if request.method == "POST"
                      and request.content_type != "application/json" else None,
                      request.META.get(HEADER), request.COOKIES.get(cookie_name(participant))):
        if binding_valid(participant, candidate):
            return candidate
    return None


def needs_binding(participant: Participant) -> bool:
    return participant.source in BOUND_SOURCES and bool(participant.binding)


def participant_bind(participant: Participant) -> bool:
    """Bind an unbound participant now (one conditional UPDATE: of two browsers at once, one
    wins); return True when this call bound it."""
    secret = secrets.token_urlsafe(32)
    won = Participant.objects.filter(pk=participant.pk, binding="").update(binding=secret)
    participant.refresh_from_db(fields=["binding"])
    return bool(won)


def platform_proof_matches(participant: Participant, params: Mapping[str, str]) -> bool:
    """Whether the link brings the same platform session as the participant's first visit."""
    key = PROOF.get(participant.source)
    expected = participant.meta.get(key, "") if key else ""
    given = params.get(key, "") if key else ""
    return bool(expected) and secrets.compare_digest(str(given), str(expected))


def with_binding(url: str, token: str | None) -> str:
    """``url`` with the binding token in its query (unchanged without a token)."""
    if not token:
        return url
    return f"{url}{'&' if '?' in url else '?'}{PARAM}={token}"

"""The open link (`/join/<open token>/`): a crowd platform's worker, or an anonymous browser,
enters a study. Its consent page, the enrolment under the study's limits (`annotation.limits`),
and a platform participant's binding to the browser that first came (`annotation.binding`)."""

from __future__ import annotations

import logging
import secrets

from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods

from studies.models import Participant, Study
from studies.services import StudyFull, participant_enrol, study_has_room

from .binding import (
    COOKIE_MAX_AGE,
    binding_token,
    binding_valid,
    cookie_name,
    participant_bind,
    platform_proof_matches,
    with_binding,
)
from .limits import WINDOW_SECONDS, enrolment_allowed
from .views import _go, _mturk_submit_to, _taken

logger = logging.getLogger(__name__)


ENTRY_SALT = "concord.open-link-entry"
ENTRY_MAX_AGE = 60 * 60 * 24  # a consent page left open for a day still works


def _join_consent(request: HttpRequest, study: Study, *, entry: str = "") -> HttpResponse:
    """The consent page shown by the open link itself: nobody is enrolled until it is posted.
    ``entry``: the signed one-time id of an anonymous browser's would-be participant, so that a
    double POST of the form enrols one participant."""
    return render(request, "annotation/consent.html", {"study": study, "entry": entry})


def _full_page(request: HttpRequest, study: Study) -> HttpResponse:
    """Every item has its k answers: the open link enrols nobody more (a polite page)."""
    return render(request, "annotation/closed.html", {"study": study, "full": True}, status=409)


def _too_many(request: HttpRequest, study: Study) -> HttpResponse:
    """Over the open link's enrolment limit (annotation.limits): nobody enrolled, try later."""
    response = render(request, "annotation/closed.html", {
        "study": study, "retry_url": request.get_full_path(),
        "message": _("Many people are joining this study from your network right now. Nothing "
                     "was recorded about you; please try again in a minute.")}, status=429)
    response["Retry-After"] = str(WINDOW_SECONDS)
    return response


def _entry_id(raw: str) -> str | None:
    """The anonymous participant's external id from the consent form's signed entry, or None."""
    try:
        value = signing.TimestampSigner(salt=ENTRY_SALT).unsign(raw, max_age=ENTRY_MAX_AGE)
    except signing.BadSignature:
        return None
    return f"open-{value}"


@xframe_options_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def join(request: HttpRequest, open_token: str) -> HttpResponse:
    """Enter a study through its open link, capturing a crowd platform's worker id.

    GET (and HEAD) only show the consent page (or send someone already enrolled on to their
    pages): a participant is created, assigned its items and, for Prolific and MTurk, bound to
    the browser by the consent form's POST, to the same URL.
    """
    study = get_object_or_404(Study, open_token=open_token)
    with translation.override(study.language):
        if not study.is_open:
            return render(request, "annotation/closed.html", {"study": study}, status=409)
        platform = _platform(request, study)
        if isinstance(platform, HttpResponse):  # an MTurk HIT's preview
            return platform
        if platform is None:  # no platform id: one anonymous participant per browser session
            return _join_anonymous(request, study)
        return _join_platform(request, study, *platform)


def _platform(request: HttpRequest,
              study: Study) -> tuple[str, str, dict[str, str]] | HttpResponse | None:
    """The crowd platform's (source, worker id, meta) the link brings, None without one, or the
    page of an MTurk HIT's preview."""
    params = request.GET
    if params.get("PROLIFIC_PID"):
        return (Participant.Source.PROLIFIC, params["PROLIFIC_PID"],
                {k: params[k] for k in ("STUDY_ID", "SESSION_ID") if k in params})
    if not params.get("workerId"):
        return None
    if params.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":
        # The HIT's preview: a worker should not accept a task that has no place left.
        if not study_has_room(study=study):
            return _full_page(request, study)
        return render(request, "annotation/mturk_preview.html", {"study": study})
    meta = {k: params[k] for k in ("assignmentId", "hitId") if k in params}
    if submit_to := _mturk_submit_to(params.get("turkSubmitTo", ""), study=study):
        meta["turkSubmitTo"] = submit_to
    return Participant.Source.MTURK, params["workerId"], meta


def _join_anonymous(request: HttpRequest, study: Study) -> HttpResponse:
    """The open link without a platform id: the consent page, then one participant per browser
    session (a double POST of the consent form enrols one)."""
    session_key = f"concord-participant-{study.pk}"
    token = request.session.get(session_key)
    if token and Participant.objects.filter(token=token, study=study).exists():
        return redirect("annotation:consent", token=token)
    if not study_has_room(study=study):
        return _full_page(request, study)
    if request.method != "POST":
        entry = signing.TimestampSigner(salt=ENTRY_SALT).sign(secrets.token_hex(8))
        return _join_consent(request, study, entry=entry)
    external = _entry_id(request.POST.get("entry", ""))
    if external is None:
        return render(request, "annotation/closed.html", {
            "study": study, "retry_url": request.path,
            "message": _("This page is out of date. Please open the study's link "
                         "again.")}, status=400)
    if not (Participant.objects.filter(study=study, source=Participant.Source.OPEN,
                                       external_id=external).exists()
            or enrolment_allowed(study=study, request=request)):
        return _too_many(request, study)
    try:
        participant = participant_enrol(study=study, source=Participant.Source.OPEN,
                                        external_id=external, meta={}, consented=True)
    except StudyFull:  # the last place went to someone consenting at the same time
        return _full_page(request, study)
    request.session[session_key] = participant.token
    return _go(request, "instructions", participant)


def _join_platform(request: HttpRequest, study: Study, source: str, external_id: str,
                   meta: dict[str, str]) -> HttpResponse:
    """The open link with a Prolific or MTurk id: the consent page, then the participant of that
    id, bound to the first browser (`_bound`)."""
    consenting = request.method == "POST"
    if len(external_id) > 200:
        raise Http404("invalid platform id")
    existed = Participant.objects.filter(study=study, source=source,
                                         external_id=external_id).exists()
    if not existed and not study_has_room(study=study):
        return _full_page(request, study)
    if not existed and not consenting:
        return _join_consent(request, study)
    if not existed and not enrolment_allowed(study=study, request=request):
        return _too_many(request, study)
    try:
        participant = participant_enrol(study=study, source=source, external_id=external_id,
                                        meta=meta, consented=consenting)
    except StudyFull:
        return _full_page(request, study)
    return _bound(request, study, participant, existed=existed)


def _bound(request: HttpRequest, study: Study, participant: Participant, *,
           existed: bool) -> HttpResponse:
    """Send a platform participant on to their pages with the browser's binding, or refuse a
    browser that is not theirs.

    The platform id is no secret: only the first browser, or one that brings the same platform
    session (Prolific SESSION_ID, MTurk assignmentId), gets the participant. A participant who
    started before bindings existed is bound by the first browser that brings its platform
    session.
    """
    params = request.GET
    if existed and not participant.binding and not platform_proof_matches(participant, params):
        logger.warning("refused an unproven browser for unbound %s participant %s of study %s",
                       participant.source, participant.pk, study.slug)
        return _taken(request, study, participant)
    if not participant_bind(participant):
        same_browser = binding_valid(participant, request.COOKIES.get(cookie_name(participant)))
        if not (same_browser or platform_proof_matches(participant, params)):
            logger.warning("refused a second browser for %s participant %s of study %s",
                           participant.source, participant.pk, study.slug)
            return _taken(request, study, participant)
    token = binding_token(participant)
    view = "annotation:consent" if existed else "annotation:instructions"
    response = redirect(with_binding(reverse(view, kwargs={"token": participant.token}),
                                     token))
    response.set_cookie(cookie_name(participant), token, max_age=COOKIE_MAX_AGE,
                        path="/", httponly=True, samesite="Lax",
                        secure=request.is_secure())
    return response

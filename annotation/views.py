"""The annotator's pages: consent, instructions, one item per page, completion."""

from __future__ import annotations

import json
import secrets
import uuid
from functools import wraps

from csp.constants import SELF
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import translation
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studies.models import Participant, Study
from studies.services import participant_consent, participant_enrol

from .selectors import next_assignment, participant_by_token
from .services import AnswerRejected, response_submit

# MTurk shows external questions in a frame; every other page refuses to be framed.
MTURK_FRAME_ANCESTORS = [SELF, "https://www.mturk.com", "https://workersandbox.mturk.com"]


def annotator_page(view):
    """Resolve the link's participant, speak the study's language, allow MTurk framing."""

    @xframe_options_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, token: str, *args, **kwargs) -> HttpResponse:
        participant = participant_by_token(token=token)
        if participant.revoked_at is not None:
            with translation.override(participant.study.language):
                return render(request, "annotation/closed.html",
                              {"study": participant.study, "revoked": True}, status=410)
        with translation.override(participant.study.language):
            request.LANGUAGE_CODE = participant.study.language
            response = view(request, participant, *args, **kwargs)
        response._csp_replace = {"frame-ancestors": MTURK_FRAME_ANCESTORS}
        return response

    return wrapper


@require_http_methods(["GET", "POST"])
@annotator_page
def consent(request: HttpRequest, participant: Participant) -> HttpResponse:
    study = participant.study
    if request.method == "POST":
        participant_consent(participant=participant)
        return redirect("annotation:instructions", token=participant.token)
    if participant.consented_at:
        return redirect("annotation:next", token=participant.token)
    if not study.is_open:
        return render(request, "annotation/closed.html", {"study": study}, status=409)
    return render(request, "annotation/consent.html", {"study": study, "participant": participant})


@require_GET
@annotator_page
def instructions(request: HttpRequest, participant: Participant) -> HttpResponse:
    if participant.consented_at is None:
        return redirect("annotation:consent", token=participant.token)
    return render(request, "annotation/instructions.html",
                  {"study": participant.study, "participant": participant})


@require_GET
@annotator_page
def next_item(request: HttpRequest, participant: Participant) -> HttpResponse:
    if participant.consented_at is None:
        return redirect("annotation:consent", token=participant.token)
    assignment = next_assignment(participant=participant)
    if assignment is None:
        return redirect("annotation:done", token=participant.token)
    study = participant.study
    return render(request, "annotation/item.html", {
        "study": study,
        "scale": study.scale,
        "participant": participant,
        "assignment": assignment,
        "item": assignment.item,
        "client_id": uuid.uuid4(),
        "answered": participant.n_answered,
        "assigned": participant.n_assigned,
        "preview": False,
    })


@require_POST
@annotator_page
def answer(request: HttpRequest, participant: Participant) -> HttpResponse:
    """Store an answer (JSON from the page's script, or a plain form post without script)."""
    wants_json = request.content_type == "application/json"
    try:
        payload = json.loads(request.body) if wants_json else request.POST
        position = int(payload["position"])
        client_id = uuid.UUID(str(payload["client_id"]))
        raw_value = payload.get("value")
        value = None if raw_value in (None, "") else float(raw_value)
        raw_ms = payload.get("active_ms")
        active_ms = None if raw_ms in (None, "") else int(float(raw_ms))
        events = payload.get("events") if wants_json else _json_list(payload.get("events"))
    except (KeyError, ValueError, TypeError):
        return _reject(request, wants_json, participant, "malformed answer", 400)
    try:
        result = response_submit(participant=participant, position=position, value=value,
                                 client_id=client_id, active_ms=active_ms, events=events)
    except AnswerRejected as exc:
        return _reject(request, wants_json, participant, str(exc), exc.status)
    target = "annotation:done" if result.complete else "annotation:next"
    next_url = reverse(target, kwargs={"token": participant.token})
    if not wants_json:
        return redirect(next_url)
    return JsonResponse({"stored": True, "created": result.created, "answered": result.answered,
                         "assigned": result.assigned, "next": next_url})


def _json_list(raw: str | None) -> list:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _reject(request, wants_json: bool, participant: Participant, message: str, status: int):
    if wants_json:
        return JsonResponse({"stored": False, "error": message}, status=status)
    return render(request, "annotation/closed.html",
                  {"study": participant.study, "message": message}, status=status)


@require_GET
@annotator_page
def done(request: HttpRequest, participant: Participant) -> HttpResponse:
    if next_assignment(participant=participant) is not None:
        return redirect("annotation:next", token=participant.token)
    study = participant.study
    completion_link = ""
    if study.completion_url:
        sep = "&" if "?" in study.completion_url else "?"
        completion_link = f"{study.completion_url}{sep}cc={study.completion_code}"
    return render(request, "annotation/done.html", {
        "study": study,
        "participant": participant,
        "completion_link": completion_link,
        "mturk_submit": participant.meta.get("turkSubmitTo", ""),
        "mturk_assignment": participant.meta.get("assignmentId", ""),
    })


@xframe_options_exempt
@require_GET
def join(request: HttpRequest, open_token: str) -> HttpResponse:
    """Enter a study through its open link, capturing a crowd platform's worker id."""
    study = get_object_or_404(Study, open_token=open_token)
    with translation.override(study.language):
        if not study.is_open:
            return render(request, "annotation/closed.html", {"study": study}, status=409)
        params = request.GET
        if params.get("PROLIFIC_PID"):
            source, external_id = Participant.Source.PROLIFIC, params["PROLIFIC_PID"]
            meta = {k: params[k] for k in ("STUDY_ID", "SESSION_ID") if k in params}
        elif params.get("workerId"):
            if params.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":
                return render(request, "annotation/mturk_preview.html", {"study": study})
            source, external_id = Participant.Source.MTURK, params["workerId"]
            meta = {k: params[k] for k in ("assignmentId", "hitId", "turkSubmitTo") if k in params}
        else:
            # No platform id: one anonymous participant per browser session.
            session_key = f"concord-participant-{study.pk}"
            token = request.session.get(session_key)
            if token and Participant.objects.filter(token=token, study=study).exists():
                return redirect("annotation:consent", token=token)
            participant = participant_enrol(study=study, source=Participant.Source.OPEN,
                                            external_id=f"open-{secrets.token_hex(8)}", meta={})
            request.session[session_key] = participant.token
            return redirect("annotation:consent", token=participant.token)
        if len(external_id) > 200:
            raise Http404("invalid platform id")
        participant = participant_enrol(study=study, source=source, external_id=external_id, meta=meta)
        return redirect("annotation:consent", token=participant.token)

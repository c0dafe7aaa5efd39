"""The annotator's pages (consent, instructions, one item per page, completion). The
researcher's import of responses collected elsewhere is the imports app's (`imports.views`).
"""

from __future__ import annotations

import json
import logging
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import wraps
from typing import Any, Concatenate, ParamSpec, Protocol, cast

from csp.constants import SELF
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import translation
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.responses import MAX_ACTIVE_MS
from core.tabular import json_too_deep
from studies.models import Assignment, Participant, Question, Study
from studies.services import (
    participant_consent,
    screening_decide,
)

from .binding import PARAM as BINDING_PARAM
from .binding import (
    binding_from,
    needs_binding,
    with_binding,
)
from .selectors import (
    assignment_at,
    current_answers,
    next_assignment,
    participant_by_token,
    participant_minutes_left,
    revisable,
)
from .services import (
    AnswerRejected,
    answer_grace,
    assignment_shown,
    check_warning,
    participant_return,
    response_submit,
)

logger = logging.getLogger(__name__)

# MTurk shows external questions in a frame; every other page refuses to be framed.
MTURK_FRAME_ANCESTORS = [SELF, "https://www.mturk.com", "https://workersandbox.mturk.com"]


# Every answer's reply names the next page: reversing a URL is ~5 % of an answer's CPU (a profile
# of bench.answer_cost), so each annotator page's URL is reversed once per URLconf and script
# prefix, with a placeholder for the token; a token that reverse() would quote is reversed as usual.
_URL_TOKEN = "TOKEN-PLACEHOLDER"  # noqa: S105 - stands for a link's token in a URL
_url_templates: dict[tuple[str, str, str], str] = {}
_PLAIN_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def annotator_url(view: str, token: str) -> str:
    """``reverse(view, kwargs={"token": token})`` for an annotator page (``annotation:next``)."""
    if not _PLAIN_TOKEN.fullmatch(token):
        return reverse(view, kwargs={"token": token})
    key = (view, get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)
    template = _url_templates.get(key)
    if template is None:
        template = _url_templates[key] = reverse(view, kwargs={"token": _URL_TOKEN})
    return template.replace(_URL_TOKEN, token)


def _go(request: HttpRequest, view: str, participant: Participant) -> HttpResponse:
    """Redirect to another annotator page of the participant, carrying its binding token."""
    url = annotator_url(f"annotation:{view}", participant.token)
    return redirect(with_binding(url, getattr(request, "binding", None)))


class AnnotatorRequest(HttpRequest):
    """A request to an annotator page as `annotator_page` hands it on: with the link's binding
    token (None for a participant that needs none) and the query that carries it ("" then)."""

    binding: str | None
    binding_query: str


class _Framable(Protocol):
    """A response whose content security policy a view changes (django-csp reads the attribute)."""

    _csp_replace: dict[str, list[str]]


P = ParamSpec("P")


class AnnotatorPage(Protocol[P]):
    """An annotator page as the URLconf calls it: the link's token (as a keyword, too), then
    the view's own arguments."""

    def __call__(self, request: HttpRequest, token: str, *args: P.args,
                 **kwargs: P.kwargs) -> HttpResponse: ...


def _taken(request: HttpRequest, study: Study, participant: Participant | None) -> HttpResponse:
    """Refuse a browser that cannot show it is the platform participant's own."""
    platform = participant.get_source_display() if participant else ""
    with translation.override(study.language):
        response = render(request, "annotation/taken.html",
                          {"study": study, "platform": platform}, status=403)
    cast(_Framable, response)._csp_replace = {"frame-ancestors": MTURK_FRAME_ANCESTORS}
    return response


def annotator_page(
    view: Callable[Concatenate[AnnotatorRequest, Participant, P], HttpResponse],
) -> AnnotatorPage[P]:
    """Resolve the link's participant, speak the study's language, allow MTurk framing."""
    answering = view.__name__ == "answer"  # its link query leaves the pages' texts out

    @xframe_options_exempt
    @wraps(view)
    def wrapper(request: HttpRequest, token: str, *args: P.args,
                **kwargs: P.kwargs) -> HttpResponse:
        participant = participant_by_token(token=token, answer=answering)
        if participant.revoked_at is not None:
            with translation.override(participant.study.language):
                return render(request, "annotation/closed.html",
                              {"study": participant.study, "revoked": True}, status=410)
        participant_return(participant=participant)  # back after a reclaim: carry on
        request = cast(AnnotatorRequest, request)  # it gets its binding just below
        request.binding = None
        request.binding_query = ""
        if needs_binding(participant):
            request.binding = binding_from(request, participant)
            if request.binding is None:
                return _taken(request, participant.study, participant)
            request.binding_query = f"?{BINDING_PARAM}={request.binding}"
        with translation.override(participant.study.language):
            request.LANGUAGE_CODE = participant.study.language
            response = view(request, participant, *args, **kwargs)
        cast(_Framable, response)._csp_replace = {"frame-ancestors": MTURK_FRAME_ANCESTORS}
        return response

    return wrapper


@require_http_methods(["GET", "POST"])
@annotator_page
def consent(request: AnnotatorRequest, participant: Participant) -> HttpResponse:
    study = participant.study
    if request.method == "POST":
        participant_consent(participant=participant)
        return _go(request, "instructions", participant)
    if participant.consented_at:
        return _go(request, "next", participant)
    if not study.is_open:
        return render(request, "annotation/closed.html", {"study": study}, status=409)
    return render(request, "annotation/consent.html", {"study": study, "participant": participant})


@require_GET
@annotator_page
def instructions(request: AnnotatorRequest, participant: Participant) -> HttpResponse:
    if participant.consented_at is None:
        return _go(request, "consent", participant)
    if not participant.study.is_open:
        return _saved_page(request, participant)
    return render(request, "annotation/instructions.html",
                  {"study": participant.study, "participant": participant,
                   "minutes": participant_minutes_left(participant=participant)})


@require_GET
@annotator_page
def next_item(request: AnnotatorRequest, participant: Participant) -> HttpResponse:
    if participant.consented_at is None:
        return _go(request, "consent", participant)
    if participant.screening == Participant.Screening.FAILED:
        return _screened_out(request, participant)
    if participant.stopped_at is not None:
        return _stopped(request, participant)
    assignment = next_assignment(participant=participant)
    if assignment is None and participant.screening == Participant.Screening.PENDING:
        # Every screening item answered but not decided yet (the deciding request failed).
        screening_decide(participant=participant)
        assignment = next_assignment(participant=participant)
    if assignment is None:
        return _go(request, "done", participant)
    if not participant.study.is_open:
        # The item on screen when the study was paused or closed can still be answered (a
        # reload shows it again); anything else: the answers so far are saved.
        if not answer_grace(study=participant.study, shown_at=assignment.shown_at):
            return _saved_page(request, participant)
    assignment_shown(assignment=assignment)
    return _item_page(request, participant, assignment, current=None,
                      warn=check_warning(participant=participant))


@require_GET
@annotator_page
def item_at(request: AnnotatorRequest, participant: Participant, position: int) -> HttpResponse:
    """Show an item already answered again, with the current answers, to change them."""
    if participant.consented_at is None:
        return _go(request, "consent", participant)
    if participant.stopped_at is not None or \
            participant.screening == Participant.Screening.FAILED:
        return _go(request, "next", participant)
    if not participant.study.is_open:
        return _saved_page(request, participant)
    assignment = assignment_at(participant=participant, position=position)
    if assignment is None:
        return _go(request, "next", participant)
    current = current_answers(participant=participant, assignment=assignment)
    if current is None:  # not answered yet: that is the resume point's page
        return _go(request, "next", participant)
    return _item_page(request, participant, assignment, current=current)


def _item_page(request: HttpRequest, participant: Participant, assignment: Assignment,
               current: dict[str, dict[str, Any]] | None, warn: bool = False) -> HttpResponse:
    study = participant.study
    return render(request, "annotation/item.html", {
        "study": study,
        "questions": study.question_list,
        "participant": participant,
        "assignment": assignment,
        "item": assignment.item,
        "client_id": uuid.uuid4(),
        "answered": participant.n_answered,
        "assigned": participant.n_assigned,
        # The resume point is the next item to answer; an item gone back to keeps its own number.
        "number": assignment.position + 1 if current is not None else participant.n_answered + 1,
        "current": current,
        "locked": current is not None and not revisable(assignment=assignment),
        "previous": assignment.position - 1 if assignment.position > 0 else None,
        "preview": False,
        "check_warning": warn,
    })


MAX_ANSWER_BYTES = 64 * 1024


@require_POST
@annotator_page
def answer(request: AnnotatorRequest, participant: Participant) -> HttpResponse:
    """Store one item's answers (JSON from the page's script, or a form post without script).

    JSON: ``{"position", "client_id", "answers": {key: {"value", "cant_judge", "comment"}},
    "active_ms", "events"}`` (a comparative question's answer has a ``"choice"``, its judgment,
    instead of a ``"value"``: core/comparative.py); ``"value"`` alone answers a one-question study (what pages before
    several questions sent, still in some browsers' outboxes). A form post sends ``value:<key>``,
    ``cant_judge:<key>`` and ``comment:<key>`` fields (or ``value``). Anything malformed is one
    clear 400, never a server error.
    """
    wants_json = request.content_type == "application/json"
    try:
        payload = _payload(request, wants_json)
        position = _whole(payload.get("position"), "position", low=0, high=10**9, exact=True)
        client_id = uuid.UUID(str(payload["client_id"]))
        raw_ms = payload.get("active_ms")
        active_ms = None if raw_ms in (None, "") else _whole(raw_ms, "active_ms", low=0,
                                                             high=MAX_ACTIVE_MS, clamp=True)
        events = payload.get("events") if wants_json else _json_list(payload.get("events"))
        answers = _answers(payload, participant.study.question_list, wants_json)
    except (KeyError, ValueError, TypeError) as exc:
        message = str(exc) if isinstance(exc, _Malformed) else "malformed answer"
        return _reject(request, wants_json, participant, message, 400)
    try:
        result = response_submit(participant=participant, position=position, answers=answers,
                                 client_id=client_id, active_ms=active_ms, events=events)
    except AnswerRejected as exc:
        return _reject(request, wants_json, participant, str(exc), exc.status, exc.study_status)
    target = "annotation:done" if result.complete else "annotation:next"
    next_url = with_binding(annotator_url(target, participant.token), request.binding)
    if not wants_json:
        return redirect(next_url)
    return JsonResponse({"stored": True, "created": result.created, "revision": result.revision,
                         "answered": result.answered, "assigned": result.assigned,
                         "next": next_url})


class _Malformed(ValueError):
    """A field of an answer that cannot be read; the message names it."""


def _payload(request: HttpRequest, wants_json: bool) -> Mapping[str, Any]:
    if not wants_json:
        return request.POST
    if len(request.body) > MAX_ANSWER_BYTES:
        raise _Malformed(f"the answer is larger than {MAX_ANSWER_BYTES // 1024} KB")
    text = request.body.decode("utf-8", errors="replace")
    if json_too_deep(text, 8):
        raise _Malformed("the answer is nested too deeply")
    payload = json.loads(text, parse_constant=_no_constant)
    if not isinstance(payload, dict):
        raise _Malformed("the answer must be a JSON object")
    return payload


def _no_constant(name: str) -> float:
    raise _Malformed(f"{name} is not a number")


def _whole(raw: Any, name: str, *, low: int, high: int, clamp: bool = False,
           exact: bool = False) -> int:
    """Read a whole number field; out of range is an error (or, with ``clamp``, unknown).

    With ``exact``, a fraction is an error too: a position of 1.5 names no item (it was stored
    as 1); a duration (active_ms) may be fractional and is rounded down."""
    if isinstance(raw, bool) or raw is None:
        raise _Malformed(f"{name} must be a whole number")
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise _Malformed(f"{name} must be a whole number") from None
    if not math.isfinite(number) or not low <= number <= high:
        if clamp and math.isfinite(number) and number > high:
            return high
        raise _Malformed(f"{name} must be a whole number from {low} to {high}")
    if exact and not number.is_integer():
        raise _Malformed(f"{name} must be a whole number, not {number:g}")
    return int(number)


def _answers(payload: Mapping[str, Any], questions: Sequence[Question],
             wants_json: bool) -> dict[str, Any]:
    """Return {question key: answer} from a JSON payload or a form post."""
    if wants_json:
        answers = payload.get("answers")
        if answers is None and "value" in payload and len(questions) == 1:
            answers = {questions[0].key: {"value": payload["value"]}}
        if not isinstance(answers, dict):
            raise _Malformed("answers must map each question's key to its answer")
        return answers
    out: dict[str, dict[str, Any]] = {}
    for question in questions:
        key = question.key
        if question.is_comparative:
            if f"shown:{key}" not in payload:
                continue  # not asked about this item (its page had no such field)
            out[key] = {"choice": _form_choice(payload, question),
                        "cant_judge": payload.get(f"cant_judge:{key}") == "on",
                        "comment": payload.get(f"comment:{key}", "")}
            continue
        value = payload.get(f"value:{key}", payload.get("value") if len(questions) == 1 else None)
        if value is None and f"cant_judge:{key}" not in payload \
                and f"comment:{key}" not in payload and any(q.is_comparative for q in questions):
            continue  # a comparison's page: this scale question was not asked
        out[key] = {"value": value, "cant_judge": payload.get(f"cant_judge:{key}") == "on",
                    "comment": payload.get(f"comment:{key}", "")}
    return out


def _form_choice(payload: Mapping[str, Any], question: Question) -> dict[str, Any] | None:
    """A comparative question's judgment from a form post without script: the outputs shown
    (``shown:<key>``, JSON) and ``pick:``/``strength:`` (pairwise), ``order:`` (ranking, JSON,
    which the script fills; without it the places of `_places`) or ``best:``/``worst:``
    (best–worst). None: not answered."""
    key = question.key
    shown = _json_list(payload.get(f"shown:{key}"))
    if question.kind == "pairwise":
        pick = payload.get(f"pick:{key}")
        return {"shown": shown, "pick": pick,
                "strength": payload.get(f"strength:{key}", "")} if pick else None
    if question.kind == "ranking":
        order = _json_list(payload.get(f"order:{key}"))
        if not order:  # without script: a place per output (``place:<key>:<output>``, 1 = best)
            order = _places(payload, key, shown)
        return {"shown": shown, "order": order} if order else None
    best, worst = payload.get(f"best:{key}"), payload.get(f"worst:{key}")
    return {"shown": shown, "best": best, "worst": worst} if best or worst else None


def _places(payload: Mapping[str, Any], key: str, shown: list[Any]) -> list[list[str]]:
    """A ranking from the no-script form's places: the outputs grouped by place, best first
    (outputs given one place are tied; `judgment_clean` refuses a tie the question does not
    allow). Empty when any output has no whole-number place."""
    places: dict[int, list[str]] = {}
    for name in shown:
        raw = payload.get(f"place:{key}:{name}") if isinstance(name, str) else None
        if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 2:
            return []
        places.setdefault(int(raw), []).append(name)
    return [places[place] for place in sorted(places)]


def _json_list(raw: str | None) -> list[Any]:
    if raw and json_too_deep(raw, 8):  # as the JSON answer's guard: json.loads recurses
        return []
    try:
        value = json.loads(raw or "[]", parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return []
    return value if isinstance(value, list) else []


def _reject(request: HttpRequest, wants_json: bool, participant: Participant, message: str,
            status: int, study_status: str = "") -> HttpResponse:
    if wants_json:
        body = {"stored": False, "error": message}
        if study_status:
            # The page tells the annotator and offers the "your answers are saved" page.
            body |= {"study_status": study_status,
                     "next": with_binding(reverse("annotation:next",
                                                  kwargs={"token": participant.token}),
                                          getattr(request, "binding", None))}
        return JsonResponse(body, status=status)
    if study_status:
        return _saved_page(request, participant, lost=True, status=status)
    return render(request, "annotation/closed.html",
                  {"study": participant.study, "message": message}, status=status)


def _saved_page(request: HttpRequest, participant: Participant, *, lost: bool = False,
                status: int = 200) -> HttpResponse:
    """The page of a study that is paused or closed: the annotator's answers so far are saved
    (with the completion code when they finished); ``lost``: the answer just sent came too late."""
    study = participant.study
    return render(request, "annotation/saved.html", {
        "study": study, "participant": participant, "lost": lost,
        "completion_link": _completion_link(study) if participant.is_complete else "",
    }, status=status)


def _completion_link(study: Study) -> str:
    if not study.completion_url:
        return ""
    sep = "&" if "?" in study.completion_url else "?"
    return f"{study.completion_url}{sep}cc={study.completion_code}"


def _stopped(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The polite end page of an annotator stopped after too many failed attention checks."""
    return render(request, "annotation/stopped.html",
                  {"study": participant.study, "participant": participant})


def _screened_out(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The polite end page of an annotator who did not pass the screening, with the study's
    distinct screened-out code (and link back to the platform)."""
    study = participant.study
    link = ""
    if study.screened_out_url:
        sep = "&" if "?" in study.screened_out_url else "?"
        link = f"{study.screened_out_url}{sep}cc={study.screened_out_code}"
    crowd = participant.source in (Participant.Source.PROLIFIC, Participant.Source.MTURK,
                                   Participant.Source.OPEN)
    return render(request, "annotation/screened_out.html", {
        "study": study, "participant": participant, "link": link, "show_code": crowd,
    })


@require_GET
@annotator_page
def done(request: AnnotatorRequest, participant: Participant) -> HttpResponse:
    if participant.screening == Participant.Screening.FAILED:
        return _screened_out(request, participant)
    if participant.stopped_at is not None:
        return _stopped(request, participant)
    if next_assignment(participant=participant) is not None:
        return _go(request, "next", participant)
    study = participant.study
    completion_link = _completion_link(study)
    # Checked again here: rows stored before `join` checked the target still hold it unchecked.
    submit_to = _mturk_submit_to(participant.meta.get("turkSubmitTo", ""), study=study)
    return render(request, "annotation/done.html", {
        "study": study,
        "participant": participant,
        "completion_link": completion_link,
        "mturk_submit_url": f"{submit_to}/mturk/externalSubmit" if submit_to else "",
        "mturk_assignment": participant.meta.get("assignmentId", ""),
    })


# The done page posts the HIT (with the completion code) to the host MTurk names in the link's
# `turkSubmitTo`. Anyone can craft that link, so only MTurk's own two hosts are ever used, spelled
# exactly: no other scheme, user info, port, path or look-alike host (`javascript:` in a form
# action, or a completion code sent to an attacker, otherwise).
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def _mturk_submit_to(raw: str, *, study: Study) -> str:
    """Return the MTurk host that `raw` names exactly, or "" (logged) for anything else."""
    if not raw:
        return ""
    candidate = raw[:-1] if raw.endswith("/") else raw
    for host in MTURK_SUBMIT_HOSTS:
        if candidate == host:
            return host
    # The worker is not told: the page just offers no submit button, and the researcher's logs
    # show who tried what.
    logger.warning("dropped turkSubmitTo %r of study %s: not an MTurk host", raw[:200], study.slug)
    return ""

"""The page script's answer takes a lean path (issue 26): only the middleware it needs
(settings.ANSWER_MIDDLEWARE), its link read with the study's page texts deferred. It keeps every
protection of the route: the CSRF check, the security headers, the NUL refusal, no-store."""

import json
import uuid

import pytest
from django.test import Client

from annotation.selectors import ANSWER_DEFERS, participant_by_token
from studies.models import Participant, Study
from studies.services import participant_consent

pytestmark = pytest.mark.django_db


def _browser(participant) -> tuple[Client, str]:
    """A browser with the link's cookies after the consent page, and its CSRF secret."""
    client = Client(enforce_csrf_checks=True)
    assert client.get(f"/a/{participant.token}/").status_code == 200
    participant_consent(participant=participant)
    return client, client.cookies["csrftoken"].value


def _key(participant) -> str:
    return participant.study.questions.order_by("position").first().key


def _answer(client: Client, token: str, position: int = 0, **headers):
    key = _key(Participant.objects.get(token=token.replace("%00", "")))
    body = {"position": position, "client_id": str(uuid.uuid4()), "active_ms": 1200,
            "answers": {key: {"value": "3", "cant_judge": False, "comment": ""}},
            "events": [["shown", 0], ["answer", 1200]]}
    return client.post(f"/a/{token}/answer/", json.dumps(body),
                       content_type="application/json", **headers)


def test_an_answer_without_the_csrf_token_is_refused_on_the_lean_path(participant):
    client, _ = _browser(participant)
    refused = _answer(client, participant.token)
    assert refused.status_code == 403
    assert not participant.responses.exists()
    assert refused["Cache-Control"] == "no-store"


def test_an_answer_keeps_the_routes_headers_and_skips_what_it_does_not_use(participant):
    client, csrf = _browser(participant)
    reply = _answer(client, participant.token, HTTP_X_CSRFTOKEN=csrf,
                    HTTP_ACCEPT_LANGUAGE="fr")
    assert reply.status_code == 200 and reply.json()["stored"] is True
    assert reply["Cache-Control"] == "no-store"
    assert reply["X-Content-Type-Options"] == "nosniff"
    assert reply["Referrer-Policy"] == "same-origin"
    assert "frame-ancestors 'self' https://www.mturk.com" in reply["Content-Security-Policy"]
    assert "X-Frame-Options" not in reply  # the annotator pages may be framed by MTurk, as before
    # Neither the session, the user nor the browser's language was looked at.
    assert "Accept-Language" not in reply.get("Vary", "")
    assert "Cookie" not in reply.get("Vary", "")
    assert "sessionid" not in reply.cookies
    assert participant.responses.get().answers.get().value == 3


def test_a_form_post_of_an_answer_still_takes_the_whole_list(participant):
    client, csrf = _browser(participant)
    reply = client.post(f"/a/{participant.token}/answer/",
                        {"csrfmiddlewaretoken": csrf, "position": "0",
                         "client_id": str(uuid.uuid4()), f"value:{_key(participant)}": "4"},
                        HTTP_ACCEPT_LANGUAGE="fr")
    assert reply.status_code == 302
    assert "Accept-Language" in reply.get("Vary", "")  # LocaleMiddleware saw it
    assert participant.responses.get().answers.get().value == 4


def test_a_nul_in_the_answers_link_is_refused_before_any_lookup(participant):
    client, csrf = _browser(participant)
    reply = _answer(client, participant.token + "%00", HTTP_X_CSRFTOKEN=csrf)
    assert reply.status_code == 404 and reply.json() == {"detail": "Not found."}


def test_the_answers_link_query_builds_the_same_rows_with_the_pages_texts_deferred(
        participant, django_assert_num_queries):
    mine = participant_by_token(token=participant.token, answer=True)
    orm = Participant.objects.select_related("study").get(pk=participant.pk)
    assert {k: v for k, v in vars(mine).items() if not k.startswith("_")} == \
        {k: v for k, v in vars(orm).items() if not k.startswith("_")}
    assert (mine._state.adding, mine._state.db) == (False, "default")
    assert mine.study.get_deferred_fields() == {name.split(".")[1] for name in ANSWER_DEFERS}
    kept = {k: v for k, v in vars(mine.study).items()
            if not k.startswith("_") and k != "question_list"}
    assert kept == {k: v for k, v in vars(orm.study).items()
                    if not k.startswith("_") and k not in {n.split(".")[1] for n in ANSWER_DEFERS}}
    with django_assert_num_queries(1):  # a deferred text is read when used, as Django does
        assert mine.study.instructions == orm.study.instructions
    assert isinstance(mine.study, Study) and mine.study.pk == participant.study_id

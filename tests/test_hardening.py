"""Attacks that once got a 500 or slipped through, replayed over HTTP: each is one clear 4xx now.

Every test here failed before the hardening (a 500, a value stored wrongly, an id that could
never be matched again); the fuzz test at the end throws arbitrary JSON at the answer endpoint.
"""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Response
from studies.services import participants_invite

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotator(make_study, alice, client):
    study = make_study(alice, slug="hard")
    participant = participants_invite(study=study, count=1)[0]
    client.post(f"/a/{participant.token}/")  # consent
    return participant


def post(client, participant, body, *, raw: str | None = None):
    return client.post(f"/a/{participant.token}/answer/", raw if raw is not None else body,
                       content_type="application/json")


def base(**changes):
    return {"position": 0, "client_id": str(uuid.uuid4()), "answers": {"rating": {"value": 3}},
            "active_ms": 1500, "events": [["shown", 0], ["answer", 1500]], **changes}


@pytest.mark.parametrize(("raw", "says"), [
    ('{"position": 0, "client_id": "%s", "value": 3, "active_ms": 1e999}', "active_ms"),
    ('{"position": 0, "client_id": "%s", "value": 3, "active_ms": "inf"}', "active_ms"),
    ('{"position": 1e999, "client_id": "%s", "value": 3}', "position"),
    ('{"position": 0, "client_id": "%s", "value": 3, "active_ms": NaN}', "NaN"),
    ('{"position": 0, "client_id": "%s", "value": 3, "events": [["x", 1e999]]}', "event"),
    ('{"position": 0, "client_id": "%s", "value": 3, "events": [["x", NaN]]}', "NaN"),
    ('{"position": 0, "client_id": "%s", "value": 3, "events": ' + "[" * 20_000 + "]" * 20_000
     + "}", "nested"),
    ('{"position": 0, "client_id": "%s", "value": true}', "not a value"),
    ('{"position": 0, "client_id": "%s", "answers": {"rating": {"value": 1e999}}}', "not a value"),
    ('{"position": 0, "client_id": "%s", "answers": {"nope": {"value": 1}}}', "unknown question"),
    ('[1, 2, 3]', "JSON object"),
])
def test_a_malformed_answer_gets_one_clear_400_and_stores_nothing(client, annotator, raw, says):
    body = raw % uuid.uuid4() if "%s" in raw else raw
    response = post(client, annotator, None, raw=body)
    assert response.status_code == 400, response.content[:200]
    assert says in response.json()["error"]
    assert not Response.objects.exists()


def test_a_value_true_is_not_stored_as_1(client, annotator):
    response = post(client, annotator, base(answers={"rating": {"value": True}}))
    assert response.status_code == 400 and not Response.objects.exists()


def test_an_oversized_answer_is_refused(client, annotator):
    response = post(client, annotator, base(events=[["shown", 0]] * 20_000))
    assert response.status_code == 400 and "larger than" in response.json()["error"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["position", "client_id", "answers", "rating", "value", "active_ms",
                         "events", "cant_judge", "comment", "x"]), children, max_size=5),
    max_leaves=20)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(payload=st.dictionaries(st.sampled_from(["position", "client_id", "answers", "value",
                                                "active_ms", "events"]), JSON_VALUES))
def test_the_answer_endpoint_answers_anything_with_a_clear_status(client, annotator, payload):
    """Fuzz: arbitrary JSON gets success or a clear 4xx with an error message, never a crash."""
    response = post(client, annotator, None, raw=json.dumps(payload, allow_nan=True))
    assert response.status_code in {200, 400, 404, 409}, response.content[:300]
    if response.status_code != 200:
        assert response.json()["error"]


def test_an_item_id_with_a_line_separator_is_refused_naming_it(alice_client, make_study, alice):
    study = make_study(alice, slug="ls", items=None, open=False)
    data = "id,text\nok,fine\nbad\u2028id,text\n".encode()
    response = alice_client.post(f"/studies/{study.slug}/items/",
                                 {"file": _upload("items.csv", data)})
    assert response.status_code == 400
    assert "U+2028" in response.content.decode()
    assert not study.items.exists()


def test_rucoco_document_names_must_be_strings(tmp_path):
    from core.metrics.formats import read_rucoco_json
    from core.problems import InputError

    doc = {"text": "Ann met Bob.", "entities": [[[0, 3]]]}
    named = json.dumps([{**doc, "name": 5}, {**doc, "name": None}])
    docs = read_rucoco_json(named, "x.json")
    assert [d.name for d in docs] == ["5", "#2"]
    with pytest.raises(InputError, match="'name' must be a non-empty string"):
        read_rucoco_json(json.dumps([{**doc, "name": ["a"]}]), "x.json")


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="text/csv")

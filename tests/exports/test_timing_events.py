"""The raw timing events behind each active time: a JSONL export (one line per event) and an
API page (issue 23, point 6). Pseudonyms only, never a token or a platform id."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from exports.services import export_open
from studies.models import Participant
from studies.services import member_add, participants_invite
from tests.answers import store, submit
from tokens.services import token_create

pytestmark = pytest.mark.django_db

SHOWN = [["shown", 0], ["hidden", 100], ["visible", 900], ["select:4", 1500], ["answer", 2600]]


@pytest.fixture
def timed(alice, make_study):
    """Two annotators through the app (one changes an answer), one imported without events."""
    study = make_study(alice, slug="timed")
    first, second = participants_invite(study=study, count=2)
    submit(second, 0, 3, active_ms=2500, events=SHOWN)
    submit(first, 0, 5, active_ms=900, events=[["shown", 0], ["answer", 900]])
    submit(first, 0, 6, active_ms=400, events=[["shown", 0], ["answer", 400]])  # a revision
    imported = Participant.objects.create(study=study, source=Participant.Source.IMPORT,
                                          external_id="zoe@example.org")
    store(imported, study.items.get(external_id="i2"), 4, active_ms=3000, events=[])
    return study


def lines(study) -> list[dict]:
    data = b"".join(export_open(study=study, what="events").chunks)
    return [json.loads(line) for line in data.decode().splitlines()]


def test_it_writes_one_line_per_event_with_pseudonyms(timed):
    got = lines(timed)
    assert len(got) == 5 + 2 + 2  # the imported answer has no events: no line
    assert list(got[0]) == ["annotator", "item", "presentation", "position", "revision",
                            "current", "seq", "event", "ms", "active_ms", "submitted_at"]
    second = [r for r in got if r["active_ms"] == 2500]
    assert [(r["seq"], r["event"], r["ms"]) for r in second] == [
        (n, kind, ms) for n, (kind, ms) in enumerate(SHOWN, start=1)]
    assert {r["annotator"] for r in got} == {"A1", "A2"}  # pseudonyms in order of answering
    assert all(r["annotator"] == "A1" for r in got[:5])
    first = [(r["revision"], r["current"], r["event"], r["ms"]) for r in got[5:]]
    assert first == [(1, False, "shown", 0), (1, False, "answer", 900),
                     (2, True, "shown", 0), (2, True, "answer", 400)]


def test_it_never_writes_a_token_or_a_real_id(timed):
    data = b"".join(export_open(study=timed, what="events").chunks).decode()
    for participant in Participant.objects.filter(study=timed):
        assert participant.token not in data
    assert "zoe@example.org" not in data


def test_it_streams_in_a_fixed_number_of_queries(timed, django_assert_num_queries):
    export = export_open(study=timed, what="events")
    with django_assert_num_queries(2):  # the pseudonyms, then the responses
        assert sum(len(chunk) for chunk in export.chunks) > 0
    assert export.counts == {"events": 9}


def test_a_viewer_downloads_it_from_the_page(timed, bob):
    member_add(study=timed, username="bob", role="viewer")
    client = Client()
    client.force_login(bob)
    page = client.get("/studies/timed/exports/events.jsonl")
    assert page.status_code == 200 and page["Content-Type"].startswith("application/")
    assert b"".join(page.streaming_content).count(b"\n") == 9
    assert client.get("/studies/timed/exports/events.csv").status_code == 404


def api_for(user, scope="read") -> APIClient:
    _, key = token_create(user=user, name="script", days=7, scope=scope)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_the_api_pages_the_events_of_each_response(timed, alice):
    api = api_for(alice)
    page = api.get("/api/studies/timed/timing/", {"limit": 2})
    assert page.status_code == 200
    body = page.json()
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    entry = body["results"][0]
    assert (entry["annotator"], entry["active_ms"]) == ("A1", 2500)
    assert entry["item"] == lines(timed)[0]["item"]
    assert entry["events"] == [{"event": k, "ms": ms} for k, ms in SHOWN]
    rest = api.get(body["next"]).json()["results"]
    assert [(r["annotator"], r["revision"], r["current"]) for r in rest] == [("A2", 2, True)]
    current = api.get("/api/studies/timed/timing/", {"is_current": "true"}).json()
    assert current["count"] == 2


def test_the_api_is_for_the_studys_researchers_only(timed, bob):
    assert api_for(bob).get("/api/studies/timed/timing/").status_code == 404
    member_add(study=timed, username="bob", role="viewer")
    assert api_for(bob).get("/api/studies/timed/timing/").status_code == 200
    assert APIClient().get("/api/studies/timed/timing/").status_code in (401, 403)
    assert api_for(bob).post("/api/studies/timed/timing/", {}).status_code in (403, 405)
    assert api_for(bob).get("/api/studies/timed/timing/",
                            {"limit": "x"}).status_code == 200  # the default page size
    assert api_for(bob).get("/api/studies/timed/timing/",
                            {"offset": "-1"}).status_code == 400


def test_the_api_page_takes_the_same_queries_whatever_the_responses(timed, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api = api_for(alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert api.get("/api/studies/timed/timing/").status_code == 200
        return len(captured)

    queries()  # the token's first use is recorded once
    before = queries()
    for participant in participants_invite(study=timed, count=3):
        for position in range(2):
            submit(participant, position, 4, events=SHOWN)
    assert queries() == before

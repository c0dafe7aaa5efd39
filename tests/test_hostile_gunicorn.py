"""The hostile inputs of tests/test_hostile_input.py once more, through gunicorn with DEBUG off on
PostgreSQL, as in production (issue 23: each was a 500 there): one clear 4xx each, and no
traceback in the server's log."""

from __future__ import annotations

import uuid

import requests
from django.db import connection

from studies.services import participant_consent, participants_invite
from tests.conftest import require
from tests.test_outage import Server, postgres_url
from tokens.services import token_create

DEEP = "[" * 2_000 + "]" * 2_000


def test_hostile_requests_get_a_4xx_through_gunicorn(transactional_db, alice, make_study):
    require(connection.vendor == "postgresql", "needs PostgreSQL (DATABASE_URL=postgres://…)")
    study = make_study(alice, slug="host")
    participant = participants_invite(study=study, count=1)[0]
    participant_consent(participant=participant)
    _, key = token_create(user=alice, name="script", days=7)
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    server = Server(postgres_url(int(connection.settings_dict["PORT"] or 5432)))
    url = server.url
    try:
        for path in ("/a/%00/", "/a/%00/next/", "/join/%00/", f"/a/{participant.token}%00/"):
            assert requests.get(url + path, timeout=30).status_code == 404, path
            assert requests.post(url + path, timeout=30).status_code in (403, 404), path  # CSRF
        api = requests.get(f"{url}/api/studies/%00/", headers=auth, timeout=30)
        assert api.status_code == 404 and api.headers["Cache-Control"] == "no-store"
        joined = requests.get(f"{url}/join/{study.open_token}/?PROLIFIC_PID=p%001&STUDY_ID=s"
                              "&SESSION_ID=x", timeout=30)
        assert joined.status_code == 200  # the NUL taken out of the query string

        deep = requests.post(f"{url}/api/studies/", data='{"title": ' + DEEP + "}",
                             headers=auth, timeout=30)
        assert deep.status_code == 400 and "nested deeper" in deep.json()["detail"]
        for bad in ("a\\u0000b", "a\\ud800b"):
            patched = requests.patch(f"{url}/api/studies/host/", headers=auth, timeout=30,
                                     data='{"title": "BAD"}'.replace("BAD", bad))
            assert patched.status_code == 400 and list(patched.json()) == ["title"], bad

        # As the annotator's page does: its CSRF cookie, the token in a header.
        browser = requests.Session()
        page = browser.get(f"{url}/a/{participant.token}/next/", timeout=30)
        assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
        csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
        answer = f"{url}/a/{participant.token}/answer/"
        fractional = browser.post(answer, timeout=30, headers=csrf, json={
            "position": 1.5, "client_id": str(uuid.uuid4()), "answers": {"rating": {"value": 3}}})
        assert fractional.status_code == 400 and "position" in fractional.json()["error"]
        fine = browser.post(answer, timeout=30, headers=csrf, json={
            "position": 0, "client_id": str(uuid.uuid4()), "answers": {"rating": {"value": 3}}})
        assert fine.status_code == 200 and fine.headers["Cache-Control"] == "no-store"
    finally:
        log = server.stop()
    assert "Traceback" not in log, log[-3000:]

"""Hostile input that once ended in a 500, replayed through the whole middleware stack: each is
one clear 4xx now (issue 23: a NUL in a link, JSON nested thousands deep, NUL and lone
surrogates in text, the reserved slug `new`, a fractional position) and no page is cached.

Several of these only failed on PostgreSQL, which refuses a NUL in text where SQLite stores it:
run this file with DATABASE_URL pointing to PostgreSQL too.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

from studies.services import participants_invite
from tests.test_security import concrete, walk
from tokens.services import token_create

pytestmark = pytest.mark.django_db

NUL = "%00"


@pytest.fixture
def world(alice, make_study):
    """A study of alice's, one consented annotator, and alice's token."""
    study = make_study(alice, slug="host")
    participant = participants_invite(study=study, count=1)[0]
    Client().post(f"/a/{participant.token}/")  # consent
    _, key = token_create(user=alice, name="script", days=7)
    return study, participant, key


def clients(alice, key):
    anonymous = Client(raise_request_exception=False)
    session = Client(raise_request_exception=False)
    session.force_login(alice)
    token = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {key}")
    return {"anonymous": anonymous, "session": session, "token": token}


def nul_urls(study, participant):
    """Every route of the project, once per parameter with a NUL in that parameter (the others
    real, so that the lookup of the NUL one is reached) and once with a NUL in every one."""
    real = {"slug": study.slug, "study_slug": study.slug, "token": participant.token,
            "open_token": "x", "pk": participant.pk, "item_pk": study.items.first().pk,
            "position": 0, "job_id": 1, "run_id": 1, "key": "k", "name": "alpha"}
    for route, _, _ in walk():
        if route.startswith("admin/"):
            continue
        params = (set(re.findall(r"<(?:\w+:)?(\w+)>", route))
                  | set(re.findall(r"\(\?P<(\w+)>", route))) - {"format"}
        for param in sorted(params):
            yield concrete(route, **{**real, param: f"{real.get(param, 'x')}{NUL}"})
        if params:
            yield concrete(route, **dict.fromkeys(params, NUL))


def test_it_answers_404_for_a_nul_in_any_link_for_anyone(alice, world):
    study, participant, key = world
    urls = sorted(set(nul_urls(study, participant)))
    assert {"/a/%00/", "/a/%00/next/", "/join/%00/", "/api/studies/%00/"} <= set(urls)
    assert len(urls) > 60, len(urls)
    for who, client in clients(alice, key).items():
        for url in urls:
            for method in ("get", "post"):
                response = getattr(client, method)(url)
                assert response.status_code == 404, f"{who} {method} {url}: {response.status_code}"


def test_it_answers_the_api_in_json_and_a_person_with_the_404_page(alice, world):
    _, _, key = world
    api = clients(alice, key)["token"].get("/api/studies/%00/")
    assert api.status_code == 404 and api.json() == {"detail": "Not found."}
    page = Client().get("/a/%00/next/")
    assert page.status_code == 404 and b"<html" in page.content.lower()


def test_it_answers_400_for_a_nul_in_a_query_parameter(alice, world):
    study, participant, key = world
    for who, client in clients(alice, key).items():
        for url in (f"/studies/?q={NUL}", f"/studies/{study.slug}/items/?q=a{NUL}b",
                    f"/api/studies/{study.slug}/responses/?participant={NUL}",
                    f"/a/{participant.token}/next/?b={NUL}"):
            response = client.get(url)
            assert response.status_code == 400, f"{who} {url}: {response.status_code}"
            assert b"NUL" in response.content


def test_it_sends_no_store_on_every_page_but_static_files(alice, world):
    study, participant, key = world
    every = clients(alice, key)
    for client, url in ((every["session"], "/studies/"),
                        (every["session"], f"/studies/{study.slug}/"),
                        (every["token"], f"/api/studies/{study.slug}/"),
                        (every["anonymous"], f"/a/{participant.token}/next/"),
                        (every["anonymous"], "/accounts/login/")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"], url
    answer = every["anonymous"].post(
        f"/a/{participant.token}/answer/", {"position": 0, "client_id": str(uuid.uuid4()),
                                            "answers": {"rating": {"value": 3}}},
        content_type="application/json")
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    # A view's own choice stays (the tokens page: Django's never_cache).
    assert "max-age=0" in every["session"].get("/account/tokens/")["Cache-Control"]
    from django.templatetags.static import static

    asset = every["session"].get(static("favicon.ico"))
    assert asset.status_code == 200 and "no-store" not in asset.get("Cache-Control", "")

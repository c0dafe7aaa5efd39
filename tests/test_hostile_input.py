"""Hostile input that once ended in a 500, replayed through the whole middleware stack: each is
one clear 4xx now (issue 23: a NUL in a link, JSON nested thousands deep, NUL and lone
surrogates in text, the reserved slug `new`, a fractional position) and no page is cached.

Several of these only failed on PostgreSQL, which refuses a NUL in text where SQLite stores it:
run this file with DATABASE_URL pointing to PostgreSQL too.
"""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile

import pytest
from django.test import Client

from annotation.models import Response
from exports.services import export_open
from studies.models import Study
from studies.services import participants_invite
from tests.test_security import concrete, finished_run, walk
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


def test_a_nul_in_a_query_parameter_is_taken_out(alice, world):
    study, participant, key = world
    for who, client in clients(alice, key).items():
        for url in (f"/studies/?q=a{NUL}b", f"/studies/{study.slug}/items/?q=Fi%%0000rst",
                    f"/api/studies/{study.slug}/responses/?participant={NUL}",
                    f"/a/{participant.token}/next/?b={NUL}"):
            response = client.get(url)
            clean = client.get(url.replace("%%0000", "").replace(NUL, ""))
            assert response.status_code == clean.status_code < 500, f"{who} {url}"
    # An open link's platform id went to the database as it came: a 500 for anyone.
    join = f"/join/{study.open_token}/?PROLIFIC_PID=p{NUL}1&STUDY_ID=s&SESSION_ID=x{NUL}"
    for method in ("get", "post"):
        assert getattr(Client(raise_request_exception=False), method)(join).status_code < 500


def test_a_cookie_with_a_nul_is_ignored_not_a_500(alice, world):
    _, participant, _ = world
    for cookie in ('sessionid="abcdefghij\\000"', 'csrftoken="a\\000b"; sessionid=x'):
        client = Client(raise_request_exception=False, HTTP_COOKIE=cookie)
        for url in ("/accounts/login/", f"/a/{participant.token}/next/"):
            assert client.get(url).status_code == 200, (cookie, url)


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



# --- JSON nested thousands deep --------------------------------------------------------------

DEEP = "[" * 2_000 + "]" * 2_000


def test_it_refuses_deep_json_on_every_api_write_with_a_400(alice, world):
    study, participant, key = world
    api = clients(alice, key)["token"]
    real = {"slug": study.slug, "study_slug": study.slug, "pk": participant.pk,
            "id": study.items.first().external_id, "action": "open", "name": "alpha"}
    refused = set()
    for route, _, _ in walk():
        if not route.startswith("api/"):
            continue
        url = concrete(route, **real)
        for method in ("post", "put", "patch"):
            for body in (DEEP, '{"title": ' + DEEP + "}"):
                response = getattr(api, method)(url, body, content_type="application/json")
                assert response.status_code < 500, f"{method} {url}: {response.status_code}"
                # A route that reads no body (open, close) answers for itself.
                if "nested deeper than" in response.content.decode():
                    assert response.status_code == 400, url
                    refused.add((method, url))
    assert ("post", "/api/studies/") in refused and ("patch", f"/api/studies/{study.slug}/") in refused
    assert len(refused) >= 8, refused


def test_it_refuses_a_deep_definition_upload(alice_client):
    for name, text in (("deep.json", '{"slug": "d", "title": "D", "questions": ' + DEEP + "}"),
                       ("deep.toml", 'slug = "d"\ntitle = "D"\nquestions = ' + DEEP + "\n")):
        upload = io.BytesIO(text.encode())
        upload.name = name
        response = alice_client.post("/studies/new/definition/", {"file": upload})
        assert response.status_code == 400, name
        assert b"nested deeper" in response.content, name
    assert not Study.objects.filter(slug="d").exists()


@pytest.fixture
def bundle(alice, make_study):
    """A real bundle of an analysed study, and a way to change its definition.json."""
    study = make_study(alice, slug="orig")
    finished_run(study)
    data = b"".join(export_open(study=study, what="bundle").chunks)

    def with_definition(text: str | None = None, **changes) -> io.BytesIO:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
            for info in source.infolist():
                member = source.read(info)
                if info.filename == "definition.json":
                    member = (text if text is not None else
                              json.dumps({**json.loads(member), **changes})).encode()
                target.writestr(info.filename, member)
        out.seek(0)
        out.name = "orig-bundle.zip"
        return out

    return with_definition


def test_it_refuses_a_bundle_whose_definition_nests_deep(alice_client, bundle):
    response = alice_client.post("/studies/new/bundle/", {
        "file": bundle('{"slug": "deep", "title": "D", "questions": ' + DEEP + "}")})
    assert response.status_code == 400 and b"nested deeper" in response.content
    assert not Study.objects.filter(slug="deep").exists()


def test_the_answer_form_post_survives_deep_events(participant, client):
    client.post(f"/a/{participant.token}/")  # consent
    response = client.post(f"/a/{participant.token}/answer/", {
        "position": 0, "client_id": str(uuid.uuid4()), "value": 3, "events": DEEP})
    assert response.status_code == 302
    assert Response.objects.filter(participant=participant).count() == 1


# --- NUL and lone surrogates in a study's texts ------------------------------------------------

@pytest.mark.parametrize("bad", ["a\\u0000b", "a\\ud800b", "\\udfff"])
def test_the_api_refuses_a_title_with_nul_or_a_lone_surrogate(alice, world, bad):
    study, _, key = world
    api = clients(alice, key)["token"]
    created = api.post("/api/studies/", '{"slug": "t2", "title": "BAD", "preset": "likert-0-7-coref"}'
                       .replace("BAD", bad), content_type="application/json")
    assert created.status_code == 400, created.content[:300]
    assert "title" in created.json() and not Study.objects.filter(slug="t2").exists()
    changed = api.patch(f"/api/studies/{study.slug}/", '{"title": "BAD"}'.replace("BAD", bad),
                        content_type="application/json")
    assert changed.status_code == 400 and list(changed.json()) == ["title"]
    nested = api.patch(f"/api/studies/{study.slug}/",
                       '{"design": {"seed": 1}, "questions": [{"key": "q", "prompt": "BAD"}]}'
                       .replace("BAD", bad),
                       content_type="application/json")
    assert nested.status_code == 400 and list(nested.json()) == ["questions[0].prompt"]
    study.refresh_from_db()
    assert study.title == "HOST"


def test_the_pages_refuse_a_title_with_nul_naming_the_field(alice_client, world):
    study, _, _ = world
    # A form cannot carry a lone surrogate (the browser's and Django's decoding replace it).
    created = alice_client.post("/studies/new/", {
        "slug": "t3", "title": "a\x00b", "preset": "likert-0-7-coref", "language": "en",
        "items_per_participant": 0, "annotators_per_item": 3, "duplicates": 0,
        "duplicate_min_gap": 5, "seed": 0})
    assert created.status_code in (200, 400) and not Study.objects.filter(slug="t3").exists()
    assert "title" in created.context["form"].errors
    page = alice_client.get(f"/studies/{study.slug}/settings/")
    form = page.context["form"]
    data = {name: ("" if value is None else value) for name, value in form.initial.items()
            if not isinstance(value, (list, dict))}
    data["title"] = "a\x00b"
    changed = alice_client.post(f"/studies/{study.slug}/settings/", data)
    assert changed.status_code in (200, 400)
    assert "title" in changed.context["form"].errors
    study.refresh_from_db()
    assert study.title == "HOST"


@pytest.mark.parametrize("bad", ["a\u0000b", "a\ud800b"])
def test_a_definition_upload_refuses_nul_or_a_lone_surrogate_naming_the_field(alice_client, bad):
    text = json.dumps({"slug": "t4", "title": bad, "preset": "likert-0-7-coref"})
    upload = io.BytesIO(text.encode())
    upload.name = "t4.json"
    response = alice_client.post("/studies/new/definition/", {"file": upload})
    assert response.status_code == 400
    assert "column title: title may not contain" in response.content.decode()
    assert not Study.objects.filter(slug="t4").exists()


@pytest.mark.parametrize("line", [b'{"id": "i1", "text": "a\\ud800b"}',
                                  b'{"id": "i1", "te\\udc00xt": "ab"}'])
def test_an_item_file_with_a_lone_surrogate_is_refused_with_its_line(alice, alice_client,
                                                                    make_study, line):
    study = make_study(alice, slug="draft", open=False, items=None)
    for url in (f"/studies/{study.slug}/items/", f"/api/studies/{study.slug}/items/"):
        upload = io.BytesIO(line + b"\n")
        upload.name = "items.jsonl"
        response = alice_client.post(url, {"file": upload})
        assert response.status_code == 400, url
        assert "lone surrogate" in response.content.decode(), url
    assert not study.items.exists()


def test_the_settings_page_refuses_nul_in_the_questions_json(alice, alice_client, make_study):
    study = make_study(alice, slug="draft", open=False)
    page = alice_client.get(f"/studies/{study.slug}/settings/")
    form = page.context["form"]
    data = {name: ("" if value is None else value) for name, value in form.initial.items()
            if not isinstance(value, (list, dict))}
    questions = json.loads(form.initial["questions"])
    questions[0]["prompt"] = "a\x00b"
    data.update(questions=json.dumps(questions), questions_json="on")
    changed = alice_client.post(f"/studies/{study.slug}/settings/", data)
    assert changed.status_code in (200, 400)
    assert "questions[0].prompt may not contain a NUL" in changed.context["form"].errors["questions"][0]


# --- The reserved slug `new`, a fractional position ---------------------------------------------

def test_a_bundle_import_refuses_the_reserved_slug_new(alice_client, bundle):
    own = alice_client.post("/studies/new/bundle/", {"file": bundle(slug="new")})
    assert own.status_code == 400 and b"is reserved" in own.content
    given = alice_client.post("/studies/new/bundle/", {"file": bundle(), "slug": "new"})
    assert given.status_code == 400 and b"is reserved" in given.content
    assert not Study.objects.filter(slug="new").exists()
    fine = alice_client.post("/studies/new/bundle/", {"file": bundle(), "slug": "newer"})
    assert fine.status_code == 302 and Study.objects.filter(slug="newer").exists()


def test_the_api_and_the_pages_refuse_the_reserved_slug_new(alice_client, world):
    study, _, _ = world
    created = alice_client.post("/api/studies/", {"slug": "new", "title": "N",
                                                  "preset": "likert-0-7-coref"},
                                content_type="application/json")
    assert created.status_code == 400 and "is reserved" in created.json()["detail"]
    cloned = alice_client.post(f"/api/studies/{study.slug}/clone/", {"slug": "new"},
                               content_type="application/json")
    assert cloned.status_code == 400 and "is reserved" in cloned.json()["slug"][0]
    page = alice_client.post("/studies/new/", {
        "slug": "new", "title": "N", "preset": "likert-0-7-coref", "language": "en",
        "items_per_participant": 0, "annotators_per_item": 3, "duplicates": 0,
        "duplicate_min_gap": 5, "seed": 0})
    assert "is reserved" in page.context["form"].errors["slug"][0]
    copy = alice_client.post(f"/studies/{study.slug}/clone/", {"slug": "new"})
    assert "is reserved" in copy.context["form"].errors["slug"][0]
    assert not Study.objects.filter(slug="new").exists()


@pytest.mark.parametrize("position", [1.5, "1.5", 0.5, 1e-9])
def test_a_fractional_position_is_refused_not_rounded(alice, world, client, position):
    _, participant, _ = world
    response = client.post(f"/a/{participant.token}/answer/", {
        "position": position, "client_id": str(uuid.uuid4()),
        "answers": {"rating": {"value": 3}}}, content_type="application/json")
    assert response.status_code == 400, response.content[:200]
    assert "position must be a whole number" in response.json()["error"]
    assert not Response.objects.filter(participant=participant).exists()

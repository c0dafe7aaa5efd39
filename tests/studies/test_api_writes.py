"""The writable API, driven as a script would: a personal access token, JSON and multipart."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from studies.models import Membership, Participant, Study
from tokens.services import token_create

pytestmark = pytest.mark.django_db

ITEMS = b"id,text\ni1,First passage\ni2,Second passage\ni3,Third passage\n"
DEFINITION = {"slug": "api-study", "title": "API study", "display": "text",
              "questions": [{"key": "fluency", "prompt": "How fluent is it?",
                             "scale": {"values": [1, 2, 3, 4, 5]}}],
              "design": {"annotators_per_item": 2}}


def api_for(user) -> APIClient:
    _, key = token_create(user=user, name="script", days=7)
    api = APIClient(enforce_csrf_checks=True)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def upload(api: APIClient, slug: str, data: bytes = ITEMS, name: str = "items.csv"):
    return api.post(f"/api/studies/{slug}/items/",
                    {"file": SimpleUploadedFile(name, data)}, format="multipart")


def test_it_runs_a_study_from_definition_to_links(alice):
    api = api_for(alice)
    created = api.post("/api/studies/", DEFINITION, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["status"] == "draft"
    assert [q["key"] for q in created.json()["questions"]] == ["fluency"]
    assert Membership.objects.get(study__slug="api-study").user == alice
    assert upload(api, "api-study").json() == {"imported": 3}
    assert api.post("/api/studies/api-study/open/").json()["status"] == "open"
    links = api.post("/api/studies/api-study/participants/", {"count": 2, "label": "lab"},
                     format="json")
    assert links.status_code == 201
    assert [p["label"] for p in links.json()] == ["lab", "lab"]
    assert Client().get(links.json()[0]["link"]).status_code == 200
    assert api.post("/api/studies/api-study/close/").json()["status"] == "closed"


def test_it_names_every_problem_of_a_definition_and_writes_nothing(alice):
    reply = api_for(alice).post("/api/studies/", {"slug": "x", "preset": "nope", "colour": 1},
                                format="json")
    assert reply.status_code == 400
    columns = {p["column"] for p in reply.json()["problems"]}
    assert {"title", "preset", "colour"} <= columns
    assert not Study.objects.exists()


def test_it_says_a_slug_is_taken_without_revealing_whose(alice, bob, make_study):
    make_study(alice, slug="api-study")
    reply = api_for(bob).post("/api/studies/", DEFINITION, format="json")
    assert reply.status_code == 400
    assert reply.json()["problems"] == [{"file": "study", "line": None, "column": "slug",
                                         "message": "this slug is taken; choose another"}]


def test_it_stores_no_item_of_a_file_with_a_bad_row(alice, make_study):
    make_study(alice, slug="draft", items="", open=False)
    reply = upload(api_for(alice), "draft", b"id,text\ni1,ok\ni1,again\n")
    assert reply.status_code == 400
    assert reply.json()["problems"][0]["line"] == 3
    assert not Study.objects.get(slug="draft").items.exists()
    assert upload(api_for(alice), "draft", b"").status_code == 400


def test_it_refuses_to_open_a_study_whose_design_cannot_be_built(alice, make_study):
    make_study(alice, slug="empty", items="", open=False)
    reply = api_for(alice).post("/api/studies/empty/open/")
    assert reply.status_code == 400 and reply.json()["problems"][0]["column"] == "design"
    assert Study.objects.get(slug="empty").status == "draft"


def test_it_revokes_a_link(alice, make_study):
    make_study(alice, slug="s")
    api = api_for(alice)
    (invited,) = api.post("/api/studies/s/participants/", {"count": 1}, format="json").json()
    reply = api.post(f"/api/studies/s/participants/{invited['id']}/revoke/")
    assert reply.status_code == 200 and reply.json()["revoked_at"]
    assert Participant.objects.get(pk=invited["id"]).revoked_at is not None
    assert Client().get(invited["link"]).status_code == 410


def test_each_write_checks_the_role(alice, bob, django_user_model, make_study):
    study = make_study(alice, slug="shared", items="", open=False)
    charlie = django_user_model.objects.create_user("charlie", "c@example.org", "charlie-pw-1")
    Membership.objects.create(study=study, user=bob, role="editor")
    Membership.objects.create(study=study, user=charlie, role="viewer")
    dave = django_user_model.objects.create_user("dave", "d@example.org", "dave-pw-1")
    writes = [
        lambda api: upload(api, "shared"),
        lambda api: api.post("/api/studies/shared/participants/", {"count": 1}, format="json"),
        lambda api: api.post("/api/studies/shared/open/"),
        lambda api: api.post("/api/studies/shared/close/"),
    ]
    for write in writes:
        assert write(api_for(dave)).status_code == 404
        assert write(api_for(charlie)).status_code == 403
    assert [write(api_for(bob)).status_code for write in writes] == [201, 201, 200, 200]


def test_it_refuses_links_to_a_study_without_items_and_creates_none(alice, make_study):
    make_study(alice, slug="empty", items="", open=False)
    reply = api_for(alice).post("/api/studies/empty/participants/", {"count": 3}, format="json")
    assert reply.status_code == 400 and "no items" in reply.json()["detail"]
    assert not Participant.objects.exists()


def test_it_walks_the_lifecycle_and_deletes_only_for_the_owner_with_the_slug(alice, bob,
                                                                            make_study):
    study = make_study(alice, slug="life")
    Membership.objects.create(study=study, user=bob, role="editor")
    api = api_for(alice)
    assert api.post("/api/studies/life/pause/").json()["status"] == "paused"
    refused = api.post("/api/studies/life/pause/")
    assert refused.status_code == 400 and "paused study cannot be paused" in refused.json()["detail"]
    assert api.post("/api/studies/life/close/").json()["status"] == "closed"
    assert api.post("/api/studies/life/archive/", {}, format="json").status_code == 200
    assert api.post("/api/studies/life/open/").status_code == 400  # archived: read-only
    assert api.post("/api/studies/life/archive/", {"archived": False},
                    format="json").status_code == 200
    assert api_for(bob).post("/api/studies/life/delete/", {"confirm_slug": "life"},
                             format="json").status_code == 403
    wrong = api.post("/api/studies/life/delete/", {"confirm_slug": "lif"}, format="json")
    assert wrong.status_code == 400 and Study.objects.filter(slug="life").exists()
    gone = api.post("/api/studies/life/delete/", {"confirm_slug": "life"}, format="json")
    assert gone.status_code == 200 and gone.json()["items"] == 5
    assert not Study.objects.filter(slug="life").exists()


def test_it_excludes_an_annotator_from_the_analysis_and_back(alice, make_study):
    from tests.answers import submit

    study = make_study(alice, slug="ex")
    api = api_for(alice)
    (invited,) = api.post("/api/studies/ex/participants/", {"count": 1}, format="json").json()
    assert api.post(f"/api/studies/ex/participants/{invited['id']}/exclude/").status_code == 400
    submit(Participant.objects.get(pk=invited["id"]))
    excluded = api.post(f"/api/studies/ex/participants/{invited['id']}/exclude/")
    assert excluded.status_code == 200
    (pseudonym,) = excluded.json()["excluded_annotators"]
    study.refresh_from_db()
    assert study.analysis_settings["excluded_annotators"] == [pseudonym]
    back = api.post(f"/api/studies/ex/participants/{invited['id']}/exclude/", {"excluded": False},
                    format="json")
    assert back.json() == {"excluded_annotators": []}


def test_it_edits_and_deletes_an_item_of_a_draft_only(alice, make_study):
    from studies.models import Item, StudyEvent

    make_study(alice, slug="d", items="id,text\ni 1,First\ni2,Second\n", open=False)
    api = api_for(alice)
    edited = api.patch("/api/studies/d/items/i%201/", {"text": "First, edited", "is_control": True},
                       format="json")
    assert edited.status_code == 200, edited.content
    assert edited.json()["text"] == "First, edited" and edited.json()["is_control"] is True
    assert api.patch("/api/studies/d/items/i2/", {"is_control": "maybe"},
                     format="json").status_code == 400
    assert api.post("/api/studies/d/items/i2/delete/").json() == {"deleted": "i2"}
    assert list(Item.objects.values_list("external_id", flat=True)) == ["i 1"]
    assert {"item_edit", "item_delete"} <= set(StudyEvent.objects.values_list("action", flat=True))
    make_study(alice, slug="o")
    refused = api.patch("/api/studies/o/items/i1/", {"text": "x"}, format="json")
    assert refused.status_code == 400 and "draft" in refused.json()["detail"]
    assert api.get("/api/studies/o/items/nope/").status_code == 404

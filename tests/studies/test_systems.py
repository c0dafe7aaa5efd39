"""Systems and sources of items: the item file's `system` and `source` columns, the items API's
fields and filters, the items page's filters and columns, a clone (docs/systems.md)."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from core.problems import InputError
from studies.models import Item
from studies.services import items_import, study_clone, study_create
from tokens.services import token_create

pytestmark = pytest.mark.django_db

SYSTEMS_CSV = (
    "id,text,system,source\n"
    "d1-a,Summary one by A,sys-A,doc-1\n"
    "d1-b,Summary one by B,sys-B,doc-1\n"
    "d2-a,Summary two by A,sys-A,doc-2\n"
    "d2-b,Summary two by B,sys-B,doc-2\n"
    "plain,No system here,,\n"
)


@pytest.fixture
def draft(alice):
    return study_create(owner=alice, slug="systems", title="Systems", preset="likert-0-7-coref")


def api_for(user) -> APIClient:
    _, key = token_create(user=user, name="script", days=7)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def labels(study) -> list[tuple[str, str, str]]:
    return list(study.items.order_by("position").values_list("external_id", "system", "source"))


def test_it_imports_system_and_source_from_csv(draft):
    assert items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv") == 5
    assert labels(draft) == [("d1-a", "sys-A", "doc-1"), ("d1-b", "sys-B", "doc-1"),
                             ("d2-a", "sys-A", "doc-2"), ("d2-b", "sys-B", "doc-2"),
                             ("plain", "", "")]


def test_it_imports_system_and_source_from_jsonl(draft):
    lines = [{"id": "x", "text": "One", "system": " gpt ", "source": "p1"},
             {"id": "y", "text": "Two", "source": 7}]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    items_import(study=draft, data=data, filename="items.jsonl")
    assert labels(draft) == [("x", "gpt", "p1"), ("y", "", "7")]


def test_it_undoes_the_neutralisation_of_an_exported_cell(draft):
    items_import(study=draft, data=b"id,text,system\na,Text,'=sys\n", filename="items.csv")
    assert labels(draft) == [("a", "=sys", "")]


@pytest.mark.parametrize(("cell", "message"), [
    ("s" * 201, "the system has 201 characters; at most 200 are allowed"),
    ("sys\u200bA", "the system contains the invisible character U+200B"),
])
def test_it_refuses_a_bad_system_naming_line_and_column(draft, cell, message):
    data = f"id,text,system\na,Fine,ok\nb,Text,{cell}\n".encode()
    with pytest.raises(InputError) as caught:
        items_import(study=draft, data=data, filename="items.csv")
    [problem] = caught.value.problems
    assert (problem.file, problem.line, problem.column, problem.message) == (
        "items.csv", 3, "system", message)
    assert not Item.objects.filter(study=draft).exists()


def test_it_refuses_a_long_source_in_jsonl(draft):
    data = json.dumps({"id": "a", "text": "T", "source": "d" * 300}).encode()
    with pytest.raises(InputError) as caught:
        items_import(study=draft, data=data, filename="items.jsonl")
    assert [(p.line, p.column) for p in caught.value.problems] == [(1, "source")]


def test_the_unknown_column_message_lists_system_and_source(draft):
    with pytest.raises(InputError) as caught:
        items_import(study=draft, data=b"id,text,model\na,T,x\n", filename="items.csv")
    assert "system, source" in caught.value.problems[0].message


def test_a_clone_keeps_systems_and_sources(draft, alice):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    clone = study_clone(study=draft, slug="systems-copy", user=alice)
    assert labels(clone) == labels(draft)


def test_the_api_gives_and_filters_systems_and_sources(draft, alice):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    api = api_for(alice)
    every = api.get("/api/studies/systems/items/").json()["results"]
    assert [(i["id"], i["system"], i["source"]) for i in every] == labels(draft)
    by_system = api.get("/api/studies/systems/items/", {"system": "sys-B"}).json()["results"]
    assert [i["id"] for i in by_system] == ["d1-b", "d2-b"]
    both = api.get("/api/studies/systems/items/",
                   {"system": "sys-A", "source": "doc-2"}).json()["results"]
    assert [i["id"] for i in both] == ["d2-a"]
    none = api.get("/api/studies/systems/items/", {"system": ""}).json()["results"]
    assert [i["id"] for i in none] == ["plain"]


def test_the_api_filter_takes_a_hostile_value_without_error(draft, alice):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    reply = api_for(alice).get("/api/studies/systems/items/", {"system": "a\x00b" * 500})
    assert reply.status_code == 200 and reply.json()["results"] == []


def test_the_schema_describes_the_fields_and_the_filters(alice):
    import yaml

    schema = yaml.safe_load(api_for(alice).get("/api/schema/").content)
    item = schema["components"]["schemas"]["Item"]["properties"]
    assert {"system", "source"} <= set(item)
    listing = schema["paths"]["/api/studies/{study_slug}/items/"]["get"]
    assert {"system", "source"} <= {p["name"] for p in listing["parameters"]}


def test_the_items_page_filters_by_system_and_source(draft, alice_client):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    page = alice_client.get("/studies/systems/items/").content.decode()
    assert '<th scope="col">System</th>' in page and '<th scope="col">Source</th>' in page
    assert '<option value="sys-A">' in page and '<option value="doc-2">' in page
    filtered = alice_client.get("/studies/systems/items/",
                                {"system": "sys-A", "source": "doc-1"}).content.decode()
    assert "d1-a" in filtered and "d2-a" not in filtered and "d1-b" not in filtered
    assert "1 item matches · system sys-A · source doc-1." in filtered


def test_the_pages_keep_the_filter(draft, alice_client):
    rows = "".join(f"i{n},Text {n},sys-{n % 2},doc-{n}\n" for n in range(120))
    items_import(study=draft, data=f"id,text,system,source\n{rows}".encode(),
                 filename="items.csv")
    page = alice_client.get("/studies/systems/items/", {"system": "sys-1"}).content.decode()
    assert "?page=2&amp;system=sys-1" in page


def test_a_study_without_systems_shows_no_system_column(make_study, alice, alice_client):
    make_study(alice, slug="plain")
    page = alice_client.get("/studies/plain/items/").content.decode()
    assert '<th scope="col">System</th>' not in page and 'id="system"' not in page


def test_the_upload_says_how_many_systems_and_sources_it_brought(draft, alice_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    reply = alice_client.post("/studies/systems/items/", {"file": SimpleUploadedFile(
        "items.csv", SYSTEMS_CSV.encode())}, follow=True)
    assert "Imported 5 items from items.csv (2 systems over 2 sources)." in reply.content.decode()


def test_the_item_page_names_its_system_and_source(draft, alice_client):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    item = draft.items.get(external_id="d2-b")
    page = alice_client.get(f"/studies/systems/items/{item.pk}/").content.decode()
    assert "<dt>System</dt>" in page and "?system=sys-B" in page and "?source=doc-2" in page


def test_the_study_page_counts_systems_and_sources_and_names_the_order(draft, alice_client):
    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    page = alice_client.get("/studies/systems/").content.decode()
    assert "5 · 2 systems over 2 sources" in page
    assert "outputs of one source spread apart" in page


def test_a_study_of_many_systems_gets_a_box_instead_of_a_list(draft, alice_client, monkeypatch):
    import studies.selectors

    items_import(study=draft, data=SYSTEMS_CSV.encode(), filename="items.csv")
    defaults = list(studies.selectors.item_labels.__kwdefaults__.items())
    monkeypatch.setattr(studies.selectors.item_labels, "__kwdefaults__", {**dict(defaults),
                                                                           "limit": 1})
    page = alice_client.get("/studies/systems/items/", {"system": "sys-B"}).content.decode()
    assert '<input type="search" id="system" name="system" value="sys-B"' in page
    assert "2 systems over 2 sources" in page and "d1-b" in page and "d1-a" not in page

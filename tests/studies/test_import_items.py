"""Item files: every column of the contract, and every bad file rejected whole with its reasons."""

import hashlib
import json

import pytest
from django.core.management import CommandError, call_command

from core.problems import InputError
from studies.models import Item
from studies.services import items_import, study_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(alice):
    return study_create(owner=alice, slug="draft", title="Draft", preset="likert-0-7-coref")


@pytest.fixture
def pair_draft(alice):
    return study_create(owner=alice, slug="pairs", title="Pairs", preset="similarity-1-5")


def snapshot():
    rows = list(Item.objects.order_by("id").values_list("study_id", "external_id", "text", "metrics"))
    return len(rows), hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def rejected(study, data: bytes, filename="items.csv") -> InputError:
    before = snapshot()
    with pytest.raises(InputError) as caught:
        items_import(study=study, data=data, filename=filename)
    assert snapshot() == before
    return caught.value


def test_it_imports_every_column_of_the_contract(draft):
    data = (b"id,text,control,metric:MUC_F1,feature:border,meta:source\n"
            b"a,Hello <b>world</b>,0,0.5,2,wiki\n"
            b"b,'=1+1,1,,0,\n")
    assert items_import(study=draft, data=data, filename="items.csv") == 2
    a, b = draft.items.order_by("position")
    assert (a.external_id, a.text, a.is_control) == ("a", "Hello <b>world</b>", False)
    assert a.metrics == {"MUC_F1": 0.5} and a.features == {"border": 2.0}
    assert a.meta == {"source": "wiki"}
    assert b.is_control and b.metrics == {} and b.text == "=1+1"  # neutralisation undone


def test_it_imports_jsonl(pair_draft):
    lines = [{"id": "p1", "text_a": "A cat.", "text_b": "A dog.", "control": 0, "metric:bleu": 0.1},
             {"id": "p2", "text_a": "Rain.", "text_b": "Sun.", "control": True}]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    assert items_import(study=pair_draft, data=data, filename="items.jsonl") == 2
    assert pair_draft.items.get(external_id="p2").is_control


def test_it_accepts_a_byte_order_mark_and_semicolons(draft):
    data = "\ufeffid;text\nx;Un texte accentué\n".encode()
    assert items_import(study=draft, data=data, filename="items.csv") == 1
    assert draft.items.get().text == "Un texte accentué"


def test_it_names_a_wrong_encoding(draft):
    error = rejected(draft, "id,text\nx,caf\u00e9\n".encode("cp1252"))
    assert "Windows-1252" in str(error) and "items.csv:2" in str(error)


def test_it_requires_the_id_column(draft):
    error = rejected(draft, b"text\nhello\n")
    assert "'id' is missing" in str(error)


def test_it_reports_every_duplicate_id_with_lines(draft):
    error = rejected(draft, b"id,text\na,x\nb,y\na,z\nb,w\n")
    messages = [str(p) for p in error.problems]
    assert "items.csv:4: column id: id 'a' already used on line 2" in messages
    assert "items.csv:5: column id: id 'b' already used on line 3" in messages


def test_it_rejects_an_empty_file(draft):
    assert "empty" in str(rejected(draft, b""))
    assert "no items" in str(rejected(draft, b"id,text\n"))


def test_it_rejects_a_file_over_the_size_limit(draft, settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = 10 * 1024 * 1024
    big = b"id,text\n" + b"x" * (20 * 1024 * 1024)
    assert ("the file is 20\u202f971\u202f528 bytes; the limit is 10\u202f485\u202f760 bytes (10.0 MiB)"
            in str(rejected(draft, big)))


def test_it_lists_all_problems_at_once(pair_draft):
    data = b"id,text_a,text_b,control,metric:bleu,colour\n,a,b,2,high,red\nq,,b,0,0.1,blue\n"
    error = rejected(pair_draft, data)
    text = str(error)
    assert "unknown column 'colour'" in text
    assert "items.csv:2: column id: empty id" in text
    assert "control must be 0 or 1" in text
    assert "'high' is not a number" in text
    assert "items.csv:3: column text_a: empty text_a" in text


def test_it_rejects_ids_already_in_the_study(draft):
    items_import(study=draft, data=b"id,text\na,x\n", filename="one.csv")
    assert "already an item of this study" in str(rejected(draft, b"id,text\na,y\n"))


def test_it_refuses_items_once_the_study_is_open(make_study, alice):
    study = make_study(alice)
    assert "draft" in str(rejected(study, b"id,text\nnew,x\n"))


def test_the_command_exits_non_zero_with_every_problem(draft, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,text\na,x\na,y\n")
    before = snapshot()
    with pytest.raises(CommandError, match=r"bad.csv:3: column id: id 'a' already used on line 2"):
        call_command("import_items", "draft", str(bad))
    assert snapshot() == before


def test_the_upload_page_shows_problems_and_imports_nothing(alice_client, draft):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("items.csv", b"text\nhello\n", content_type="text/csv")
    response = alice_client.post("/studies/draft/items/", {"file": upload})
    assert response.status_code == 400
    assert b"the required column &#x27;id&#x27; is missing" in response.content
    assert not draft.items.exists()


def test_the_upload_page_names_an_empty_file(alice_client, draft):
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = alice_client.post("/studies/draft/items/",
                             {"file": SimpleUploadedFile("items.csv", b"")}, follow=True)
    assert "items.csv: the file is empty. Nothing was imported." in page.content.decode()
    assert b"Choose a file" not in page.content
    assert not draft.items.exists()


def test_the_upload_page_asks_for_a_file_when_none_was_chosen(alice_client, draft):
    page = alice_client.post("/studies/draft/items/", {}, follow=True)
    assert b"Choose a file to upload." in page.content


def test_the_upload_page_never_reports_an_oversized_file_as_the_size_of_the_limit(
        alice_client, draft, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.CONCORD_MAX_UPLOAD_BYTES = 10 * 1024 * 1024
    upload = SimpleUploadedFile("items.csv", b"x" * (10 * 1024 * 1024 + 1))
    page = alice_client.post("/studies/draft/items/", {"file": upload}, follow=True)
    assert ("items.csv: the file is 10\u202f485\u202f761 bytes; the limit is 10\u202f485\u202f760 bytes "
            "(10.0 MiB). Nothing was imported.") in page.content.decode()
    assert not draft.items.exists()


def test_the_upload_page_lists_the_first_200_problems_and_counts_the_rest(alice_client, draft):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("items.csv", b"id,text\n" + b"a,b,c\n" * 1000)
    response = alice_client.post("/studies/draft/items/", {"file": upload})
    assert response.status_code == 400
    assert b"Fix 1000 problems" in response.content
    assert response.content.count(b"3 fields where the header has 2") == 200
    assert "… and 800 more".encode() in response.content
    assert not draft.items.exists()


def test_it_refuses_a_nul_character_naming_its_line_and_column(draft):
    # PostgreSQL text cannot hold NUL: refused at validation, never a server error on insert.
    error = rejected(draft, b"id,text,meta:note\na,fine,ok\nb,bad\x00text,ok\n")
    assert [str(p) for p in error.problems] == [
        "items.csv:3: column 2: a NUL character (0x00) in the cell; remove it"]


def test_it_refuses_more_columns_than_the_limit(draft):
    header = "id,text," + ",".join(f"meta:m{n}" for n in range(300_000))
    error = rejected(draft, (header + "\na,b" + ",x" * 300_000 + "\n").encode())
    assert [str(p) for p in error.problems] == [
        "items.csv:1: 300002 columns in the header; the limit is 2000 columns"]

"""The on-screen column mapper of a wide file (a Google Forms export): upload, the guessed
choices, the problems named by column with the file kept, then the usual preview and import
(issue 23, point 5)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Answer
from imports.models import ImportJob
from studies.models import Participant
from studies.services import member_add

pytestmark = pytest.mark.django_db

ITEMS = "id,text\n" + "".join(f"q{n},Passage {n}: Marie met her brother.\n" for n in range(1, 4))


def as_csv(rows) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


HEADER = ["Timestamp", "Email address", "Your name", "Rate passage q1", "Rate passage q2",
          "Rate passage q3", "Rate passage q1 (again)"]
EXPORT = as_csv([HEADER,
                 ["2024/03/05 09:00", "zoe@example.org", "Zoe", "1", "2", "3", "2"],
                 ["2024/03/05 09:02", "mia@example.org", "Mia", "7", "6", "", "5"]])


@pytest.fixture
def study(alice, make_study, settings, tmp_path):
    settings.IMPORTS_DIR = tmp_path / "imports"
    return make_study(alice, slug="forms", items=ITEMS)


def upload(client, study, data=EXPORT, fmt="wide", **extra):
    return client.post(f"/studies/{study.slug}/responses/import/", {
        "file": SimpleUploadedFile("Form responses 1.csv", data), "format": fmt,
        "action": "map", **extra})


def mapper_url(response) -> str:
    assert response.status_code == 302, response.content[:2000]
    assert re.fullmatch(r"/studies/forms/imports/\d+/columns/", response.url), response.url
    return response.url


def selected(page: str, name: str) -> str:
    select = re.search(rf'<select name="{name}".*?</select>', page, re.S)
    assert select, name
    found = re.search(r'<option value="([^"]*)" selected>', select.group(0))
    return found.group(1) if found else ""


def choices(**changes: str) -> dict[str, str]:
    """What the page posts when the guesses are kept, with `changes` ("use-7": "repeat", …)."""
    posted = {"use-1": "meta", "use-2": "annotator", "use-3": "ignore",
              "use-4": "item", "item-4": "q1", "use-5": "item", "item-5": "q2",
              "use-6": "item", "item-6": "q3", "use-7": "repeat", "item-7": "q1"}
    for n in range(1, 8):
        posted.setdefault(f"item-{n}", "")
        posted.setdefault(f"question-{n}", "rating")
    return {**posted, **changes}


def test_it_lists_each_column_with_its_first_values_and_guesses(alice_client, study):
    url = mapper_url(upload(alice_client, study))
    page = alice_client.get(url).content.decode()
    assert [selected(page, f"use-{n}") for n in range(1, 8)] == [
        "meta", "annotator", "ignore", "item", "item", "item", "repeat"]
    assert 'name="item-4" id="item-4" value="q1"' in page
    assert "zoe@example.org</span>, <span class=\"sample\">mia@example.org" in page
    assert '<datalist id="item-ids"><option value="q1">' in page
    assert 'role="region" aria-label="Columns of Form responses 1.csv" tabindex="0"' in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_the_mapping_previews_then_imports_as_a_hand_made_map(alice_client, study):
    url = mapper_url(upload(alice_client, study))
    response = alice_client.post(url, choices())
    assert response.status_code == 302 and "/columns/" not in response.url
    check = ImportJob.objects.get(pk=int(response.url.rstrip("/").split("/")[-1]))
    assert check.status == "done" and check.dry_run
    assert check.options["item_map"] == {"Rate passage q1": "q1", "Rate passage q2": "q2",
                                         "Rate passage q3": "q3", "Rate passage q1 (again)": "q1"}
    assert check.options["ignore_columns"] == ["Your name"]
    preview = alice_client.get(response.url).content.decode()
    assert "Preview: Form responses 1.csv" in preview and "Confirm import" in preview
    done = alice_client.post(f"/studies/forms/imports/{check.pk}/confirm/")
    assert done.status_code == 302 and done.url == "/studies/forms/"
    people = {p.external_id: p.meta for p in Participant.objects.filter(study=study)}
    assert people == {"zoe@example.org": {"Timestamp": "2024/03/05 09:00"},
                      "mia@example.org": {"Timestamp": "2024/03/05 09:02"}}  # no name kept
    got = sorted(Answer.objects.filter(response__participant__external_id="mia@example.org")
                 .values_list("response__item__external_id", "response__presentation", "value"))
    assert got == [("q1", 1, 7.0), ("q1", 2, 5.0), ("q2", 1, 6.0)]


def test_problems_name_their_column_and_keep_the_file(alice_client, study):
    url = mapper_url(upload(alice_client, study))
    response = alice_client.post(url, choices(**{"use-2": "meta", "use-7": "item",
                                                 "item-5": "nope"}))
    assert response.status_code == 400
    page = response.content.decode()
    assert "column 5 &#x27;Rate passage q2&#x27;: &#x27;nope&#x27; is not an item" in page
    assert ("column 7 &#x27;Rate passage q1 (again)&#x27; and column 4 both map to item q1"
            in page)
    assert "no column is the annotator id" in page
    assert selected(page, "use-7") == "item"  # what was posted stays chosen
    assert alice_client.post(url, choices()).status_code == 302  # the file is still there


def test_a_value_outside_the_scale_is_shown_on_the_mapper(alice_client, study):
    bad = as_csv([["Email address", "Rate passage q1"], ["zoe@example.org", "9"]])
    url = mapper_url(upload(alice_client, study, data=bad))
    response = alice_client.post(url, {"use-1": "annotator", "use-2": "item", "item-2": "q1",
                                       "question-2": "rating"})
    assert response.status_code == 400
    assert "&#x27;9&#x27; is not a value of the scale" in response.content.decode()
    assert not Participant.objects.filter(study=study).exists()


def test_a_long_file_is_not_mapped(alice_client, study):
    response = upload(alice_client, study, fmt="long")
    assert response.status_code == 400
    assert "The column mapper reads wide files" in response.content.decode()


def test_an_unreadable_header_is_refused_and_nothing_kept(alice_client, study, settings):
    response = upload(alice_client, study, data=b"just one column\nx\n")
    assert response.status_code == 400
    assert not ImportJob.objects.filter(study=study).exclude(folder="").exists()


def test_the_kept_file_cannot_be_confirmed_before_it_is_mapped(alice_client, study):
    url = mapper_url(upload(alice_client, study))
    job_id = url.split("/")[-3]
    assert alice_client.post(f"/studies/forms/imports/{job_id}/confirm/").status_code == 404
    # its job page leads to the mapper
    assert alice_client.get(f"/studies/forms/imports/{job_id}/").url == url


def test_hostile_posts_get_a_4xx(alice_client, study):
    url = mapper_url(upload(alice_client, study))
    weird = choices(**{"use-1": "<script>", "item-4": "x" * 5000, "question-4": "nope\x00"})
    response = alice_client.post(url, weird)
    assert response.status_code == 400
    assert "<script>" not in response.content.decode().split("<main", 1)[-1].split(
        'name="use-1"')[0]
    assert alice_client.post(url, {}).status_code == 400  # nothing chosen: every column said
    assert alice_client.get("/studies/forms/imports/999999/columns/").status_code == 404


def test_only_editors_map_and_csrf_is_checked(client, alice, bob, study):
    from django.test import Client

    alice_client = Client()
    alice_client.force_login(alice)
    url = mapper_url(upload(alice_client, study))
    member_add(study=study, username="bob", role="viewer", user=alice)
    client.force_login(bob)
    assert client.get(url).status_code == 403
    assert client.post(url, choices()).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(url, choices()).status_code == 403


def test_a_study_of_several_questions_maps_item_and_question(alice, make_study, settings,
                                                             tmp_path, client):
    settings.IMPORTS_DIR = tmp_path / "imports"
    study = make_study(alice, slug="forms", preset="summeval-4x5", items=ITEMS)
    client.force_login(alice)
    header = ["Email address", "Summary q1 [Coherence]", "Summary q1 [Fluency]"]
    url = mapper_url(upload(client, study, data=as_csv([header, ["a@x.org", "3", "4"]])))
    page = client.get(url).content.decode()
    assert (selected(page, "question-2"), selected(page, "question-3")) == ("coherence",
                                                                           "fluency")
    response = client.post(url, {"use-1": "annotator", "use-2": "item", "item-2": "q1",
                                 "question-2": "coherence", "use-3": "item", "item-3": "q1",
                                 "question-3": ""})
    assert response.status_code == 400
    assert "column 3 &#x27;Summary q1 [Fluency]&#x27;: choose the question it answers" in \
        response.content.decode()
    ok = client.post(url, {"use-1": "annotator", "use-2": "item", "item-2": "q1",
                           "question-2": "coherence", "use-3": "item", "item-3": "q1",
                           "question-3": "fluency"})
    check = ImportJob.objects.get(pk=int(ok.url.rstrip("/").split("/")[-1]))
    assert check.options["item_map"] == {"Summary q1 [Coherence]": "q1:coherence",
                                         "Summary q1 [Fluency]": "q1:fluency"}
    assert check.summary["answers"] == 1

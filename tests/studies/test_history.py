"""The history records item uploads, new links and control pairs, and speaks in words (issue
23, point 6)."""

from __future__ import annotations

import re

import pytest

from studies.models import StudyEvent
from studies.services import study_update

pytestmark = pytest.mark.django_db

PAIRS = "id,text_a,text_b\n" + "".join(f"p{n},Sentence {n} a,Sentence {n} b\n" for n in range(8))


def rows(client, study) -> list[str]:
    page = re.sub(r' data-label="[^"]*"', "",
                  client.get(f"/studies/{study.slug}/history/").content.decode())
    return [re.sub(r">\s+<", "><", r) for r in re.findall(r"<tr><td>.*?</tr>", page, re.S)]


def test_it_records_new_links_and_control_pairs_with_who(alice_client, alice, make_study):
    study = make_study(alice, preset="similarity-1-5", items=PAIRS, open=False)
    alice_client.post(f"/studies/{study.slug}/controls/", {"n": 2, "seed": 5})
    alice_client.post(f"/studies/{study.slug}/invite/", {"count": 3, "label": "lab"})
    events = list(StudyEvent.objects.filter(study=study).order_by("id")
                  .values_list("action", "user__username", "detail"))
    assert events[-2:] == [("controls", "alice", {"count": 2, "seed": 5}),
                           ("invite", "alice", {"count": 3, "label": "lab"})]
    shown = rows(alice_client, study)
    # (PostgreSQL's jsonb keeps keys in its own order: each part is checked on its own)
    assert "Invitation links created</td><td>" in shown[0]
    assert "3 new links" in shown[0] and "label: lab" in shown[0]
    assert "Random control pairs added</td><td>" in shown[1]
    assert "2 pairs" in shown[1] and "seed: 5" in shown[1]


def test_a_list_in_an_entry_reads_as_words(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    study_update(study=study, changes={"title": "New", "instructions": "Read."}, user=alice)
    shown = rows(alice_client, study)
    assert any("changed: " in r and "[" not in r and "'" not in r for r in shown), shown


def test_it_records_an_item_upload_with_its_count_and_file(alice_client, alice, make_study):
    study = make_study(alice, preset="similarity-1-5", items=PAIRS, open=False)
    extra = "id,text_a,text_b\nx1,One a,One b\nx2,Two a,Two b\n"
    from django.core.files.uploadedfile import SimpleUploadedFile

    alice_client.post(f"/studies/{study.slug}/items/",
                      {"file": SimpleUploadedFile("more items.csv", extra.encode())})
    event = StudyEvent.objects.filter(study=study, action="items").latest("id")
    assert (event.user.username, event.detail) == ("alice", {"count": 2,
                                                              "files": ["more items.csv"]})
    shown = rows(alice_client, study)
    assert "Items uploaded</td><td>2 items from more items.csv</td>" in shown[0]


def test_a_refused_item_upload_records_nothing(alice_client, alice, make_study):
    study = make_study(alice, preset="similarity-1-5", items=PAIRS, open=False)
    before = StudyEvent.objects.filter(study=study, action="items").count()
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = alice_client.post(f"/studies/{study.slug}/items/", {
        "file": SimpleUploadedFile("bad.csv", b"id,text_a,text_b\nx1,,\n")})
    assert response.status_code == 400
    assert StudyEvent.objects.filter(study=study, action="items").count() == before


def test_it_says_what_changed_in_words(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    study_update(study=study, changes={"title": "New", "instructions": "Read."}, user=alice)
    shown = rows(alice_client, study)
    assert re.search(r"Settings changed</td><td>changed: (instructions, title|title, "
                     r"instructions)</td>", shown[0]), shown[0]


def test_new_links_and_pairs_read_as_counts(alice_client, alice, make_study):
    study = make_study(alice, preset="similarity-1-5", items=PAIRS, open=False)
    alice_client.post(f"/studies/{study.slug}/controls/", {"n": 2, "seed": 5})
    alice_client.post(f"/studies/{study.slug}/invite/", {"count": 1})
    shown = rows(alice_client, study)
    assert "Invitation links created</td><td>1 new link</td>" in shown[0]
    assert "Random control pairs added</td><td>2 pairs; seed: 5</td>" in shown[1]


def test_a_status_change_reads_as_an_arrow(alice_client, alice, make_study):
    from studies.services import study_transition

    study = make_study(alice, open=False)
    study_transition(study=study, action="open", user=alice)
    shown = rows(alice_client, study)
    assert "Opened</td><td>draft → open</td>" in shown[0], shown[0]

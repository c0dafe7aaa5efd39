"""The history records new links and control pairs, and speaks in words (issue 23, point 6)."""

from __future__ import annotations

import re

import pytest

from studies.models import StudyEvent
from studies.services import study_update

pytestmark = pytest.mark.django_db

PAIRS = "id,text_a,text_b\n" + "".join(f"p{n},Sentence {n} a,Sentence {n} b\n" for n in range(8))


def rows(client, study) -> list[str]:
    page = client.get(f"/studies/{study.slug}/history/").content.decode()
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
    assert "Invitation links created</td><td>count: 3; label: lab" in shown[0]
    assert "Random control pairs added</td><td>count: 2; seed: 5" in shown[1]


def test_a_list_in_an_entry_reads_as_words(alice_client, alice, make_study):
    study = make_study(alice, open=False)
    study_update(study=study, changes={"title": "New", "instructions": "Read."}, user=alice)
    shown = rows(alice_client, study)
    assert any("fields: " in r and "[" not in r and "'" not in r for r in shown), shown

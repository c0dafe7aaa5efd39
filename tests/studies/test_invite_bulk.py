"""Invitation links are created set-based (issue 23, point 17: 1 000 links by the API took
114 s): the same presentations as one participant at a time, all or none, in a fixed number of
queries whatever the count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from studies.models import Assignment, Participant
from studies.services import participant_assign, participants_invite

pytestmark = pytest.mark.django_db

ITEMS = "id,text\n" + "".join(f"i{n},Passage {n}\n" for n in range(12))


def presentations(study) -> list[list[tuple[str, int, int]]]:
    return [list(Assignment.objects.filter(participant=p).order_by("position").values_list(
                "item__external_id", "position", "presentation"))
            for p in study.participants.order_by("pk")]


def test_it_plans_what_one_at_a_time_would(alice, make_study):
    study = make_study(alice, items=ITEMS, items_per_participant=5, annotators_per_item=3,
                       duplicates=1, duplicate_min_gap=2)
    participants_invite(study=study, count=7)
    batch = presentations(study)
    assert len(batch) == 7 and all(len(rows) == 6 for rows in batch)

    # The same participants (same ids, so the same seeds) assigned one by one, as before.
    Assignment.objects.filter(participant__study=study).delete()
    for participant in study.participants.order_by("pk"):
        participant.n_assigned = 0
        participant_assign(participant=participant)
    assert presentations(study) == batch
    stored = Participant.objects.filter(study=study).order_by("pk")
    assert [p.n_assigned for p in stored] == [6] * 7


def test_it_runs_a_fixed_number_of_queries(alice, make_study):
    study = make_study(alice, items=ITEMS, items_per_participant=4)
    with CaptureQueriesContext(connection) as few:
        participants_invite(study=study, count=3)
    with CaptureQueriesContext(connection) as many:
        participants_invite(study=study, count=60)
    assert len(many.captured_queries) <= len(few.captured_queries) + 2  # batches of 500 rows


def test_it_leaves_nobody_when_the_design_cannot_be_built(alice, make_study):
    study = make_study(alice, items="", open=False)
    with pytest.raises(ValueError):
        participants_invite(study=study, count=5)
    assert not study.participants.exists()

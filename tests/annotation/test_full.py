"""A full study (issue 13, point 3): the open link and the MTurk preview say so once every place is
taken (an answer, or a participant at work), and the check is race-free: concurrent consents for
the last place enrol exactly as many people as there are places."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotation.services import participants_reclaim
from studies.models import Assignment, Participant
from studies.services import StudyFull, participant_enrol, study_has_room
from tests.annotation.test_reclaim import answer, enter
from tests.conftest import require

ITEMS = "id,text\ni1,One\ni2,Two\ni3,Three\n"


@pytest.mark.django_db
def test_the_open_link_is_full_once_every_place_is_taken_before_any_answer(alice, make_study):
    study = make_study(alice, items=ITEMS, items_per_participant=1, annotators_per_item=1)
    first = [enter(study) for _ in range(3)]
    assert not study_has_room(study=study)
    page = Client().get(f"/join/{study.open_token}/")
    assert page.status_code == 409 and b"all the answers it needs" in page.content
    assert Participant.objects.filter(study=study).count() == 3
    # A participant who left is reclaimed: their place is free again, for one newcomer.
    Participant.objects.filter(pk=first[0][1].pk).update(
        consented_at=timezone.now() - timedelta(hours=5), created_at=timezone.now()
        - timedelta(hours=5))
    later = timezone.now() + timedelta(seconds=settings.CONCORD_RECLAIM_AFTER_SECONDS + 60)
    for client, participant in first[1:]:
        assert answer(client, participant).json()["stored"]
    assert participants_reclaim(now=later) == 1
    assert study_has_room(study=study)
    enter(study)
    assert not study_has_room(study=study)


@pytest.mark.django_db
def test_the_mturk_preview_says_the_study_is_full(alice, make_study):
    study = make_study(alice, items=ITEMS, items_per_participant=0, annotators_per_item=1)
    url = f"/join/{study.open_token}/?workerId=W1&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"
    preview = Client().get(url)
    assert preview.status_code == 200 and b"all the answers it needs" not in preview.content
    enter(study)
    full = Client().get(url)
    assert full.status_code == 409 and b"all the answers it needs" in full.content


@pytest.mark.django_db
def test_a_consent_that_comes_too_late_stores_nothing(alice, make_study):
    study = make_study(alice, items=ITEMS, items_per_participant=0, annotators_per_item=1)
    participant_enrol(study=study, source="prolific", external_id="P1", meta={}, consented=True)
    with pytest.raises(StudyFull):
        participant_enrol(study=study, source="prolific", external_id="P2", meta={},
                          consented=True)
    assert list(Participant.objects.filter(study=study).values_list("external_id", flat=True)) \
        == ["P1"]
    # Someone already enrolled still gets their participant back.
    again = participant_enrol(study=study, source="prolific", external_id="P1", meta={})
    assert again.external_id == "P1" and again.n_assigned == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_consents_for_the_last_places_enrol_exactly_k_per_item(alice, make_study):
    require(connection.vendor == "postgresql", "concurrency is only tested on PostgreSQL "
                                               "(set DATABASE_URL)")
    study = make_study(alice, slug="race", items=ITEMS, items_per_participant=1,
                       annotators_per_item=2)  # 3 items × 2 = 6 places
    barrier = threading.Barrier(16)
    outcomes: list[str] = []

    def consent(n: int) -> None:
        from django.db import connections

        try:
            barrier.wait(timeout=30)
            participant_enrol(study=study, source="prolific", external_id=f"P{n}", meta={},
                              consented=True)
            outcomes.append("enrolled")
        except StudyFull:
            outcomes.append("full")
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcomes.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=consent, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert Counter(outcomes) == {"enrolled": 6, "full": 10}, outcomes
    per_item = Counter(Assignment.objects.filter(participant__study=study)
                       .values_list("item__external_id", flat=True))
    assert per_item == {"i1": 2, "i2": 2, "i3": 2}
    assert Participant.objects.filter(study=study).count() == 6


@pytest.mark.django_db
def test_invitation_links_nobody_opened_take_no_place_from_the_open_link(alice, make_study):
    from studies.services import participants_invite

    study = make_study(alice, items=ITEMS, items_per_participant=0, annotators_per_item=1)
    (invited,) = participants_invite(study=study, count=1)
    assert study_has_room(study=study)
    enter(study)
    assert not study_has_room(study=study)
    assert invited.assignments.count() == 3  # the invitee keeps their items

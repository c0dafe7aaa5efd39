"""Answers are stored exactly once, with their timing, and only where they belong."""

import uuid

import pytest

from annotation.models import Response
from annotation.services import AnswerRejected, response_submit
from studies.models import Participant
from studies.services import participants_invite, study_close

pytestmark = pytest.mark.django_db


def submit(participant, position=0, value=3, client_id=None, active_ms=1200):
    return response_submit(participant=participant, position=position, value=value,
                           client_id=client_id or uuid.uuid4(), active_ms=active_ms,
                           events=[["shown", 0], ["answer", 1200]])


def test_it_stores_an_answer_with_its_timing(participant):
    result = submit(participant)
    row = Response.objects.get()
    assert result.created and row.value == 3 and row.active_ms == 1200
    assert row.events == [["shown", 0], ["answer", 1200]] and row.received_at is not None
    assert row.item_id == participant.assignments.get(position=0).item_id


def test_it_stores_a_retry_once(participant):
    client_id = uuid.uuid4()
    first = submit(participant, client_id=client_id)
    again = submit(participant, client_id=client_id)
    assert first.created and not again.created and first.response_id == again.response_id
    assert Response.objects.count() == 1
    assert Participant.objects.get(pk=participant.pk).n_answered == 1


def test_it_keeps_the_first_answer_when_a_presentation_is_answered_twice(participant):
    submit(participant, value=3)
    second = submit(participant, value=5)
    assert not second.created and Response.objects.get().value == 3


def test_it_rejects_a_value_outside_the_scale(participant):
    with pytest.raises(AnswerRejected, match="not a value"):
        submit(participant, value=9)
    assert not Response.objects.exists()


def test_it_rejects_a_position_outside_the_assignment(participant):
    with pytest.raises(AnswerRejected) as caught:
        submit(participant, position=999)
    assert caught.value.status == 404


def test_it_rejects_a_client_id_reused_for_another_item(participant):
    client_id = uuid.uuid4()
    submit(participant, position=0, client_id=client_id)
    with pytest.raises(AnswerRejected, match="already used"):
        submit(participant, position=1, client_id=client_id)


def test_it_rejects_answers_once_the_study_is_closed(participant):
    study_close(study=participant.study)
    participant.refresh_from_db()
    with pytest.raises(AnswerRejected) as caught:
        submit(participant)
    assert caught.value.status == 409


def test_it_marks_the_participant_complete_after_the_last_answer(participant):
    for position in range(participant.n_assigned):
        result = submit(participant, position=position)
    participant.refresh_from_db()
    assert result.complete and participant.completed_at is not None
    assert participant.n_answered == participant.n_assigned == 5


def test_it_stores_a_blank_as_a_missing_value(participant):
    submit(participant, value=None)
    assert Response.objects.get().value is None


def test_it_keeps_repeats_as_second_presentations(make_study, alice):
    items = "id,text\n" + "".join(f"i{n},text {n}\n" for n in range(12))
    study = make_study(alice, slug="dups", items=items, duplicates=2, duplicate_min_gap=3)
    p = participants_invite(study=study, count=1)[0]
    for position in range(p.n_assigned):
        submit(p, position=position)
    assert Response.objects.filter(participant=p, presentation=2).count() == 2
    assert Response.objects.filter(participant=p).count() == 14


def test_it_names_annotators_by_the_order_of_their_first_response(make_study, alice):
    from annotation.selectors import participant_pseudonyms

    study = make_study(alice, slug="pseudo")
    a, b, c = participants_invite(study=study, count=3)
    submit(b, position=0)
    submit(a, position=0)
    submit(b, position=1)
    assert participant_pseudonyms(study_id=study.pk) == {b.pk: "A1", a.pk: "A2"}

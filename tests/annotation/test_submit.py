"""Answers are stored exactly once, with their timing, and only where they belong."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Response
from annotation.services import AnswerRejected
from studies.models import Participant
from studies.services import participants_invite, study_close
from tests.answers import submit as submit_answer

pytestmark = pytest.mark.django_db


def submit(participant, position=0, value=3, client_id=None, active_ms=1200):
    return submit_answer(participant, position, value, client_id=client_id, active_ms=active_ms,
                         events=[["shown", 0], ["answer", 1200]])


def test_it_stores_an_answer_with_its_timing(participant):
    result = submit(participant)
    row = Response.objects.get()
    assert result.created and row.answers.get().value == 3 and row.active_ms == 1200
    assert (row.revision, row.is_current, result.revision) == (1, True, 1)
    assert row.events == [["shown", 0], ["answer", 1200]] and row.received_at is not None
    assert row.item_id == participant.assignments.get(position=0).item_id


def test_it_stores_a_retry_once(participant):
    client_id = uuid.uuid4()
    first = submit(participant, client_id=client_id)
    again = submit(participant, client_id=client_id)
    assert first.created and not again.created and first.response_id == again.response_id
    assert Response.objects.count() == 1
    assert Participant.objects.get(pk=participant.pk).n_answered == 1


def test_a_changed_answer_is_stored_as_a_revision_and_the_first_is_kept(participant):
    first = submit(participant, value=3)
    second = submit(participant, value=5)
    assert second.created and second.revision == 2 and second.response_id != first.response_id
    rows = list(Response.objects.order_by("revision").values_list(
        "revision", "is_current", "answers__value"))
    assert rows == [(1, False, 3.0), (2, True, 5.0)]
    participant.refresh_from_db()
    assert participant.n_answered == 1  # a revision answers no new item


def test_a_retried_revision_is_stored_once(participant):
    submit(participant, value=3)
    client_id = uuid.uuid4()
    submit(participant, value=6, client_id=client_id)
    again = submit(participant, value=6, client_id=client_id)
    assert not again.created and again.revision == 2
    assert Response.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_revision_costs_one_statement_after_the_first_answers_insert_on_postgresql(
        participant, django_assert_num_queries):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the one-statement revision is PostgreSQL's (SQLite runs a transaction)")
    submit(participant, value=3)
    client_id = uuid.uuid4()
    with django_assert_num_queries(2):  # the first answer's insert (nothing), the revision
        second = submit(participant, value=5, client_id=client_id)
    with django_assert_num_queries(2):  # the same, and a retry stores nothing
        again = submit(participant, value=5, client_id=client_id)
    assert (second.created, second.revision, again.created, again.revision) == (True, 2, False, 2)
    assert second.response_id == again.response_id


def test_the_first_showing_of_a_repeated_item_is_final_once_the_repeat_was_shown(
        make_study, alice):
    from annotation.services import assignment_shown

    items = "id,text\n" + "".join(f"i{n},text {n}\n" for n in range(8))
    study = make_study(alice, slug="dups", items=items, duplicates=1, duplicate_min_gap=3)
    p = participants_invite(study=study, count=1)[0]
    repeat = p.assignments.get(presentation=2)
    first = p.assignments.get(item=repeat.item, presentation=1)
    submit(p, position=first.position, value=2)
    submit(p, position=first.position, value=3)  # not shown yet: may change
    assignment_shown(assignment=repeat)
    with pytest.raises(AnswerRejected, match="can no longer be changed") as caught:
        submit(p, position=first.position, value=4)
    assert caught.value.status == 409
    assert Response.objects.get(participant=p, is_current=True).answers.get().value == 3


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


def test_it_refuses_a_blank_answer_to_a_required_question(participant):
    with pytest.raises(AnswerRejected, match="needs an answer"):
        submit(participant, value=None)
    assert not Response.objects.exists()


def test_it_stores_a_blank_optional_answer_as_a_missing_value(participant):
    participant.study.questions.update(required=False)
    participant.refresh_from_db()
    submit(participant, value=None)
    answer = Response.objects.get().answers.get()
    assert answer.value is None and answer.missing == "skipped"


def test_it_keeps_repeats_as_second_presentations(make_study, alice):
    items = "id,text\n" + "".join(f"i{n},text {n}\n" for n in range(12))
    study = make_study(alice, slug="dups", items=items, duplicates=2, duplicate_min_gap=3)
    p = participants_invite(study=study, count=1)[0]
    for position in range(p.n_assigned):
        submit(p, position=position)
    assert Response.objects.filter(participant=p, presentation=2).count() == 2
    assert Response.objects.filter(participant=p).count() == 14


def test_it_names_annotators_by_the_order_of_their_first_response(make_study, alice):
    from studies.selectors import pseudonyms as stored_pseudonyms

    study = make_study(alice, slug="pseudo")
    a, b, c = participants_invite(study=study, count=3)
    submit(b, position=0)
    submit(a, position=0)
    submit(b, position=1)
    assert stored_pseudonyms(study=study) == {b.pk: "A1", a.pk: "A2"}


def test_it_makes_new_revisions_wait_past_the_limit_and_still_acknowledges_retries(participant,
                                                                                    settings):
    # issue 23, point 18: one annotator stored 300 revisions of one item in 5 s.
    settings.CONCORD_REVISIONS_PER_MINUTE = 3
    ids = [uuid.uuid4() for _ in range(4)]
    results = [submit(participant, 0, value, client_id=ids[value - 1]) for value in (1, 2, 3)]
    assert [r.revision for r in results] == [1, 2, 3]
    with pytest.raises(AnswerRejected) as refused:
        submit(participant, 0, 4, client_id=ids[3])
    assert refused.value.status == 429 and "in a minute" in str(refused.value)
    retry = submit(participant, 0, 3, client_id=ids[2])  # a lost acknowledgement, sent again
    assert not retry.created and retry.revision == 3
    assert Response.objects.filter(participant=participant).count() == 3
    # A minute later the waiting revision is taken.
    Response.objects.filter(participant=participant).update(
        received_at=timezone.now() - timedelta(seconds=61))
    assert submit(participant, 0, 4, client_id=ids[3]).revision == 4


def test_the_answer_endpoint_answers_429_for_a_revision_over_the_limit(participant, client,
                                                                      settings):
    settings.CONCORD_REVISIONS_PER_MINUTE = 1
    submit(participant, 0, 1)
    client.get(f"/a/{participant.token}/")
    reply = client.post(f"/a/{participant.token}/answer/", data={
        "position": 0, "client_id": str(uuid.uuid4()),
        "answers": {participant.study.primary_question.key: {"value": 2}}},
        content_type="application/json")
    assert reply.status_code == 429

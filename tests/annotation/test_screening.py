"""Screening: known-answer items first, a pass mark, the main items only for those who pass."""

import pytest

from analysis.selectors import study_questions
from core.problems import InputError
from studies.models import Item, Participant
from studies.services import participants_invite
from tests.answers import submit

pytestmark = pytest.mark.django_db

# Scale 0–7 (likert-0-7-coref); question key "score".
SCREENED_CSV = (
    "id,text,role,gold:{q},tolerance:{q}\n"
    "s1,Screen one,screening,6,1\n"
    "s2,Screen two,screening,1,1\n"
    "m1,Main one,,,\n"
    "m2,Main two,main,,\n"
    "m3,Main three,main,,\n"
)


@pytest.fixture
def screened(make_study, alice):
    from studies.models import Study

    probe = make_study(alice, slug="probe", items="", open=False)
    key = probe.primary_question.key
    study = make_study(alice, slug="screened", items=SCREENED_CSV.format(q=key))
    Study.objects.filter(pk=study.pk).update(screening_pass_share=1.0)
    study.refresh_from_db()
    return study


def _invite(study):
    participant = participants_invite(study=study, count=1)[0]
    participant.refresh_from_db()
    return participant


def test_the_item_file_stores_roles_known_answers_and_tolerances(screened):
    key = screened.primary_question.key
    rows = {i.external_id: (i.role, i.gold, i.tolerance) for i in screened.items.all()}
    assert rows["s1"] == ("screening", {key: 6.0}, {key: 1.0})
    assert rows["m1"] == ("main", {}, {})


def test_a_participant_gets_only_the_screening_items_first(screened):
    participant = _invite(screened)
    assert participant.screening == "pending" and participant.n_assigned == 2
    roles = list(participant.assignments.order_by("position").values_list("item__role", flat=True))
    assert roles == ["screening", "screening"]


def test_passing_within_the_tolerance_assigns_the_main_items(screened):
    participant = _invite(screened)
    submit(participant, 0, 7)  # 6 ± 1
    result = submit(participant, 1, 0)  # 1 ± 1
    participant.refresh_from_db()
    assert participant.screening == "passed" and participant.screening_correct == 2
    assert result.assigned == 5 and not result.complete and participant.completed_at is None
    mains = participant.assignments.filter(position__gte=2).values_list("item__role", flat=True)
    assert sorted(mains) == ["main"] * 3


def test_failing_assigns_nothing_more_and_shows_the_screened_out_page(screened, client):
    participant = _invite(screened)
    submit(participant, 0, 6)
    submit(participant, 1, 3)  # 2 away from 1: wrong
    participant.refresh_from_db()
    assert (participant.screening, participant.screening_correct) == ("failed", 1)
    assert participant.n_assigned == 2 and participant.completed_at is None
    page = client.get(f"/a/{participant.token}/done/", follow=True)
    text = page.content.decode()
    assert screened.completion_code not in text
    assert "ends here for you" in text


def test_a_count_pass_mark_admits_one_wrong_answer(screened):
    type(screened).objects.filter(pk=screened.pk).update(screening_pass_count=1)
    participant = _invite(screened)
    submit(participant, 0, 6)
    submit(participant, 1, 5)
    participant.refresh_from_db()
    assert participant.screening == "passed" and participant.n_assigned == 5


def test_a_screening_answer_changed_later_is_stored_but_the_first_one_decides(screened):
    participant = _invite(screened)
    submit(participant, 0, 2)  # wrong (6 ± 1)
    changed = submit(participant, 0, 6)  # going back and putting it right
    assert changed.revision == 2  # stored as the annotator gave it, like any revision
    submit(participant, 1, 1)
    participant.refresh_from_db()
    assert participant.screening == "failed" and participant.screening_correct == 1


def test_a_screening_answer_put_wrong_later_does_not_fail_the_annotator(screened):
    participant = _invite(screened)
    submit(participant, 0, 6)
    submit(participant, 0, 2)
    submit(participant, 1, 1)
    participant.refresh_from_db()
    assert participant.screening == "passed" and participant.screening_correct == 2


def test_screening_answers_never_enter_the_main_statistics(screened):
    passed = _invite(screened)
    submit(passed, 0, 6)
    submit(passed, 1, 1)
    for position in range(2, 5):
        submit(passed, position, 4)
    before = study_questions(study=screened)[0].data
    failed = _invite(screened)  # a screened-out annotator adds screening answers only
    submit(failed, 0, 0)
    submit(failed, 1, 7)
    after = study_questions(study=screened)[0].data
    assert before.item_ids == after.item_ids == ["m1", "m2", "m3"]
    assert len(after.annotators) == 1 and after.value.tolist() == [4.0, 4.0, 4.0]
    assert after.item.tolist() == before.item.tolist()


@pytest.mark.parametrize(("header", "row", "column", "message"), [
    ("id,text,role", "x1,T,bogus", "role", "role must be main, screening or check"),
    ("id,text,role", "x1,T,screening", "role", "needs a known answer"),
    ("id,text,role,gold:{q}", "x1,T,,3", "role", "a main item has no known answer"),
    ("id,text,role,gold:{q}", "x1,T,check,9", "gold:{q}", "not a value of the scale"),
    ("id,text,role,gold:{q},tolerance:{q}", "x1,T,check,3,-1", "tolerance:{q}", "0 or more"),
    ("id,text,role,gold:nope", "x1,T,check,3", "gold:nope", "names no question"),
])
def test_item_file_errors_name_line_and_column(make_study, alice, header, row, column, message):
    from studies.services import items_import

    study = make_study(alice, slug="bad", items="", open=False)
    key = study.primary_question.key
    with pytest.raises(InputError) as caught:
        items_import(study=study, data=f"{header}\n{row}\n".format(q=key).encode(),
                     filename="items.csv")
    problem = caught.value.problems[0]
    assert message in problem.message and problem.column == column.format(q=key)
    assert problem.line == (1 if "names no" in message else 2)
    assert not Item.objects.filter(study=study).exists()


def test_participant_state_choices_exist():
    assert Participant.Screening.FAILED == "failed"


def test_the_definition_sets_the_pass_mark_and_the_check_policy(alice):
    import json

    from core.problems import Collector
    from studies.definitions import load_definition, validate_definition
    from studies.selectors import study_definition
    from studies.services import study_create_from_definition

    definition = {"slug": "q1", "title": "Q", "preset": "likert-0-7-coref",
                  "quality": {"screening_pass_count": 3, "check_stop_after": 4,
                              "screened_out_url": "https://example.org/out"}}
    study = study_create_from_definition(
        owner=alice, definition=load_definition(json.dumps(definition).encode(), "q.json"))
    assert (study.screening_pass_count, study.check_stop_after, study.screened_out_url) == (
        3, 4, "https://example.org/out")
    again = study_definition(study=study)
    assert again["quality"]["screening_pass_count"] == 3
    bad = {"slug": "q2", "title": "Q", "preset": "likert-0-7-coref",
           "quality": {"screening_pass_share": 1.5, "check_stop_after": -1, "nope": 1}}
    with pytest.raises(InputError) as caught:
        validate_definition(bad, Collector("q.json"))
    columns = {p.column for p in caught.value.problems}
    assert columns == {"quality.screening_pass_share", "quality.check_stop_after",
                       "quality.nope"}


def test_the_participants_page_summarises_the_screening(screened, alice_client):
    passed, failed = _invite(screened), _invite(screened)
    submit(passed, 0, 6)
    submit(passed, 1, 1)
    submit(failed, 0, 0)
    submit(failed, 1, 0)
    page = alice_client.get(f"/studies/{screened.slug}/participants/").content.decode()
    assert "screening passed 2/2" in page and "screened out 1/2" in page


def test_the_responses_export_names_each_answers_role(screened):
    from exports.selectors import RESPONSE_COLUMNS, response_rows

    passed = _invite(screened)
    submit(passed, 0, 6)
    submit(passed, 1, 1)
    submit(passed, 2, 3)
    role = RESPONSE_COLUMNS.index("role")
    rows = {(row[1], row[role]) for row in response_rows(study=screened)}
    main = passed.assignments.get(position=2).item.external_id
    assert rows == {("s1", "screening"), ("s2", "screening"), (main, "main")}

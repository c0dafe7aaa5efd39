"""Quality control in a real browser: a screened-out crowd annotator and a stopped one."""

import pytest
from playwright.sync_api import expect

from studies.models import Participant
from studies.services import participants_invite

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENED = ("id,text,role,gold:{q},tolerance:{q}\n"
            "s1,Screening passage one.,screening,6,1\n"
            "s2,Screening passage two.,screening,1,1\n"
            "m1,Main passage one.,,,\nm2,Main passage two.,,,\n")
CHECKED = ("id,text,role,gold:{q},tolerance:{q},check_at\n"
           "m1,Main passage one.,,,,\nm2,Main passage two.,,,,\nm3,Main passage three.,,,,\n"
           "c1,For this passage choose 2.,check,2,0,1\n"
           "c2,Main-looking passage.,check,6,1,2\n")


def _answer(page, value: int) -> None:
    expect(page.locator("#answer-form")).to_have_attribute("data-ready", "true")
    page.keyboard.press(str(value))
    expect(page.locator(f"input[name=value][value='{value}']")).to_be_checked()
    page.keyboard.press("Enter")


def test_a_crowd_annotator_who_fails_the_screening_gets_the_screened_out_code(
        live_server, page, alice, make_study):
    probe = make_study(alice, slug="probe", items="", open=False)
    study = make_study(alice, slug="screen", items=SCREENED.format(q=probe.primary_question.key))
    page.goto(f"{live_server.url}/join/{study.open_token}/?PROLIFIC_PID=p-e2e&STUDY_ID=s1"
              "&SESSION_ID=x1")
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()
    expect(page.get_by_text("Item 1 of 2")).to_be_visible()
    _answer(page, 0)  # 6 ± 1 expected: wrong
    expect(page.get_by_text("Item 2 of 2")).to_be_visible()
    _answer(page, 1)
    expect(page.get_by_role("heading", name="Thank you for your time")).to_be_visible()
    expect(page.locator("#screened-out-code")).to_have_text(study.screened_out_code)
    assert study.completion_code not in page.content()
    assert page.csp_violations == []
    participant = Participant.objects.get(study=study)
    assert (participant.screening, participant.screening_correct, participant.n_assigned) == (
        "failed", 1, 2)


def test_an_annotator_failing_two_attention_checks_is_warned_then_stopped(
        live_server, page, alice, make_study):
    probe = make_study(alice, slug="probe2", items="", open=False)
    study = make_study(alice, slug="checks", items=CHECKED.format(q=probe.primary_question.key))
    participant = participants_invite(study=study, count=1)[0]
    participant.refresh_from_db()
    assert participant.n_assigned == 5 and len(participant.check_positions) == 2
    first, second = sorted(participant.check_positions)
    page.goto(f"{live_server.url}/a/{participant.token}/")
    page.get_by_role("button", name="I agree, continue").click()
    page.get_by_role("link", name="Start").click()
    warning = page.locator(".attention-warning")
    for position in range(second + 1):
        expect(page.get_by_text(f"Item {position + 1} of 5")).to_be_visible()
        if position == first + 1:
            expect(warning).to_be_visible()  # the page after the first failure warns
        else:
            expect(warning).to_have_count(0)
        _answer(page, 0)  # 0 fails both checks (2 exactly; 6 ± 1)
    expect(page.get_by_role("heading", name="Thank you for your time")).to_be_visible()
    expect(page.get_by_text("the study ends here for you")).to_be_visible()
    assert study.completion_code not in page.content()
    assert page.csp_violations == []
    participant.refresh_from_db()
    assert participant.checks_failed == 2 and participant.stopped_at is not None
    assert participant.n_answered == second + 1
